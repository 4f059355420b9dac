import ReelJSON

/// The `params` of protocol requests that tests send again and again.
public enum Params {
    /// `dispatch` of one action.
    public static func dispatch(_ type: String, _ payload: JSONValue) -> JSONValue {
        ["action": ["type": .string(type), "payload": payload]]
    }

    /// `dispatch` of one stock `set` action.
    public static func set(_ path: String, _ value: JSONValue) -> JSONValue {
        dispatch("set", ["path": .string(path), "value": value])
    }
}
