import ReelCore
import ReelJSON

/// The common request read the fast way: a `dispatch` of one action, straight from its line into
/// ``DispatchParams``, without the request's envelope, params and action becoming dictionaries
/// first (``RPCRequest/parse(_:maxDepth:)`` then ``RPCCall``, a fifth of the server's time per
/// dispatch when clients pipeline).
///
/// Only the plain form is read: the members `jsonrpc`, `id`, `method` and `params` once each;
/// params with `action` (an object of `type` and `payload`), `expectedSeq`, `idempotencyKey` and
/// `meta`, once each. Anything else — a batch, an unknown or repeated member, a key with escapes, a value
/// the general path would refuse — answers `nil`, and the caller takes the general path, which
/// answers it or explains what is wrong. What this reads, it reads as the general path does (the
/// `request` fuzz target and `DispatchLineTests` hold the two to that).
public enum DispatchLine {
    /// The id and params of a plain one-action `dispatch`, or `nil` for any other line.
    ///
    /// - Parameters:
    ///   - line: One request line (a trailing newline is whitespace).
    ///   - maxDepth: As ``RPCRequest/parse(_:maxDepth:)``'s.
    public static func read(
        _ line: UnsafeRawBufferPointer, maxDepth: Int = WireProtocol.defaultMaxDepth
    ) -> (id: RPCID, params: DispatchParams)? {
        JSONShapeReader.read(line, maxDepth: maxDepth) { reader in
            var version = false
            var method = false
            var id: RPCID?
            var params: DispatchParams?
            let read = reader.readObject { reader, key in
                if JSONShapeReader.key(key, is: "params") {
                    guard params == nil, let value = readParams(&reader) else { return false }
                    params = value
                } else if JSONShapeReader.key(key, is: "id") {
                    guard id == nil, let value = reader.readValue(), let readable = RPCID(json: value) else { return false }
                    id = readable
                } else if JSONShapeReader.key(key, is: "method") {
                    guard !method, reader.readValue() == .string(Method.Dispatch.name.rawValue) else { return false }
                    method = true
                } else if JSONShapeReader.key(key, is: "jsonrpc") {
                    guard !version, reader.readValue() == .string(WireProtocol.jsonRPCVersion) else { return false }
                    version = true
                } else {
                    return false
                }
                return true
            }
            guard read, version, method, let id, let params, reader.isAtEnd() else { return nil }
            return (id, params)
        }
    }

    private static func readParams(_ reader: inout JSONShapeReader) -> DispatchParams? {
        var action: Action?
        var expectedSeq: UInt64?
        var idempotencyKey: String?
        var meta: ActionMeta?
        var seenSeq = false
        var seenKey = false
        var seenMeta = false
        let read = reader.readObject { reader, key in
            if JSONShapeReader.key(key, is: "action") {
                guard action == nil, let value = readAction(&reader) else { return false }
                action = value
            } else if JSONShapeReader.key(key, is: "expectedSeq") {
                guard !seenSeq, let value = reader.readValue() else { return false }
                seenSeq = true
                // `null` counts as absent, as ParamsReader has it.
                if !value.isNull {
                    guard let seq = try? readSeq(value, label: "params.expectedSeq") else { return false }
                    expectedSeq = seq
                }
            } else if JSONShapeReader.key(key, is: "idempotencyKey") {
                guard !seenKey, let value = reader.readValue() else { return false }
                seenKey = true
                switch value {
                case .null: break
                case .string(let key) where !key.isEmpty && key.utf8.count <= DispatchParams.maxIdempotencyKeyLength:
                    idempotencyKey = key
                default: return false
                }
            } else if JSONShapeReader.key(key, is: "meta") {
                guard !seenMeta, let value = reader.readValue() else { return false }
                seenMeta = true
                // Checked as the general path checks it, which words the refusal.
                guard let read = try? ActionMeta.read(params: value, label: "params.meta") else { return false }
                meta = read
            } else {
                return false
            }
            return true
        }
        guard read, let action else { return nil }
        return DispatchParams(action: action, expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: meta)
    }

    private static func readAction(_ reader: inout JSONShapeReader) -> Action? {
        var type: String?
        var payload: JSONValue?
        var version: Int?
        let read = reader.readObject { reader, key in
            if JSONShapeReader.key(key, is: "type") {
                guard type == nil, case .string(let name)? = reader.readValue(), !name.isEmpty else { return false }
                type = name
            } else if JSONShapeReader.key(key, is: "payload") {
                guard payload == nil, let value = reader.readValue() else { return false }
                payload = value
            } else if JSONShapeReader.key(key, is: "version") {
                guard version == nil, let value = reader.readValue(), let number = actionVersion(value) else { return false }
                version = number
            } else {
                return false
            }
            return true
        }
        guard read, let type else { return nil }
        return Action(type: type, payload: payload ?? .null, version: version)
    }
}
