// Codable support: JSONValue itself is Codable (so it can sit inside any Codable type and go through
// any coder), and the pieces shared by JSONValueEncoder and JSONValueDecoder live here.

extension JSONValue: Codable {
    /// Decodes a JSON value from any decoder's single-value container. Through `JSONValueDecoder`
    /// the value is passed through unchanged.
    public init(from decoder: any Decoder) throws {
        if let bridge = decoder as? JSONValueDecoder.Impl {
            self = bridge.value
            return
        }
        let container = try decoder.singleValueContainer()
        // Bool before numbers and Int64 before Double, so `true` stays a boolean and `3` an integer.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(JSONObject(value))
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a JSON value")
        }
    }

    /// Encodes this value into any encoder's single-value container. Through `JSONValueEncoder` the
    /// value is passed through unchanged.
    public func encode(to encoder: any Encoder) throws {
        if let bridge = encoder as? JSONValueEncoder.Impl {
            bridge.storeValue(self)
            return
        }
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value.dictionary)
        }
    }
}

/// The coding-path entry for a position in an array (printed as `[n]`).
struct IndexCodingKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

/// The coding-path entry for a named member that has no key type of its own (`super`).
struct NamedCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A coding path as a person reads it: `todos[2].title`.
func describeCodingPath(_ path: [any CodingKey]) -> String {
    var text = ""
    for key in path {
        if key is IndexCodingKey, let index = key.intValue {
            text += "[\(index)]"
        } else {
            if !text.isEmpty { text += "." }
            text += key.stringValue
        }
    }
    return text
}

extension JSONError {
    /// Turns whatever a Codable conversion threw into a `.conversion` error whose message starts with
    /// the coding path, e.g. `"todos[2].title: expected string, found number"`.
    static func conversion(from error: any Error) -> JSONError {
        func located(_ path: [any CodingKey], _ problem: String) -> JSONError {
            let location = describeCodingPath(path)
            return JSONError(.conversion, location.isEmpty ? problem : "\(location): \(problem)")
        }
        switch error {
        case let error as JSONError:
            return error
        case let error as DecodingError:
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context),
                .keyNotFound(_, let context):
                return located(context.codingPath, context.debugDescription)
            @unknown default:
                return JSONError(.conversion, String(describing: error))
            }
        case let error as EncodingError:
            switch error {
            case .invalidValue(_, let context):
                return located(context.codingPath, context.debugDescription)
            @unknown default:
                return JSONError(.conversion, String(describing: error))
            }
        default:
            return JSONError(.conversion, String(describing: error))
        }
    }
}
