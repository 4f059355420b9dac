import ReelJSON

/// A stock action read from its logged record straight into what the stock reducer applies:
/// the patch, or the pointer and value, without the payload's JSON form in between.
///
/// Replaying a log (verify, replay, shadow, the change index's build, rebuilding a state) spent
/// more on decoding each payload into `JSONValue`s, which the reducer then read again into a
/// patch or a pointer, and on freeing them, than on applying the action. Records of the commonest
/// shapes are read into this instead (``init(type:binaryPayload:)``); every other record, and
/// every action one of these cannot apply, goes the ordinary way, which reads it or says why not.
public enum PreparedStockAction: Sendable, Equatable {
    /// A `patch`.
    case patch(JSONPatch)
    /// A `set` of `value` at `path`.
    case set(path: JSONPointer, value: JSONValue)
    /// An `increment` at `path`, by `by` (1 when `nil`; the reducer refuses anything but a number).
    case increment(path: JSONPointer, by: JSONValue?)

    /// Whether an action of `type` may be read prepared: a `patch`, `set` or `increment`.
    public static func mayRead(type: String) -> Bool {
        type == "patch" || type == "set" || type == "increment"
    }

    /// The action of `type` whose payload `bytes` hold in Reel's binary encoding, when it is a
    /// `patch`, `set` or `increment` of a plain shape (``JSONPatch/init(binary:)``,
    /// ``BinaryPathPayload``); `nil` for anything else.
    public init?(type: String, binaryPayload bytes: UnsafeRawBufferPointer) {
        switch type {
        case "patch":
            guard let patch = JSONPatch(binary: bytes) else { return nil }
            self = .patch(patch)
        case "set":
            guard let payload = BinaryPathPayload(binary: bytes, member: "value"), let value = payload.member else { return nil }
            self = .set(path: payload.path, value: value)
        case "increment":
            guard let payload = BinaryPathPayload(binary: bytes, member: "by") else { return nil }
            self = .increment(path: payload.path, by: payload.member)
        default:
            return nil
        }
    }

    /// The action of `type` with `payload`, read as the stock reducer reads it, when it is a
    /// well-formed `patch`, `set` or `increment`; `nil` for anything else.
    public init?(type: String, payload: JSONValue) {
        switch type {
        case "patch":
            guard let patch = try? JSONPatch(payload) else { return nil }
            self = .patch(patch)
        case "set":
            guard case .object(let members) = payload, let value = members["value"], let path = Self.pointer(members["path"]) else {
                return nil
            }
            self = .set(path: path, value: value)
        case "increment":
            guard case .object(let members) = payload, let path = Self.pointer(members["path"]) else { return nil }
            self = .increment(path: path, by: members["by"])
        default:
            return nil
        }
    }

    private static func pointer(_ member: JSONValue?) -> JSONPointer? {
        guard case .string(let text)? = member else { return nil }
        return try? JSONPointer(text)
    }

    /// `envelope` (read with this action, its payload left `null`) with this action's payload.
    public func filling(_ envelope: ActionEnvelope) -> ActionEnvelope {
        var filled = envelope
        filled.action.payload = payload
        return filled
    }

    /// The action's payload as the reducer reads it: what its record holds, but for a member an
    /// operation ignores (a `value` on a `remove`, a `from` on an `add`, which the binary reader
    /// takes), left out. Objects in memory have no order; serialized, the members are in
    /// canonical order.
    public var payload: JSONValue {
        switch self {
        case .patch(let patch):
            patch.jsonValue
        case .set(let path, let value):
            .object(["path": .string(path.description), "value": value])
        case .increment(let path, let by?):
            .object(["by": by, "path": .string(path.description)])
        case .increment(let path, nil):
            .object(["path": .string(path.description)])
        }
    }
}

extension JSONDocumentReducer {
    /// Applies `action` as ``reduce(into:action:)`` applies the action it was read from: `true`.
    /// `false`, with `state` unchanged, when the reducer would refuse it: the caller then reduces
    /// the action itself, which says why.
    public static func apply(_ action: PreparedStockAction, to state: inout JSONValue) -> Bool {
        do throws(JSONError) {
            switch action {
            case .patch(let patch):
                try patch.apply(to: &state)
            case .set(let path, let value):
                try set(value, at: path, in: &state)
            case .increment(let path, let by):
                let by = by ?? .int(1)
                guard by.doubleValue != nil else { return false }
                try increment(&state, at: path, by: by)
            }
            return true
        } catch {
            return false
        }
    }
}
