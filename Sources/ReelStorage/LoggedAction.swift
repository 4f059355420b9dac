import ReelCore
import ReelJSON

/// A logged action as a replay reads it: its envelope, or, for a stock action of a plain shape
/// when the replay's reducer is the stock one, its envelope without the payload and the action
/// read straight from the record (``PreparedStockAction``), which spares decoding the payload
/// into JSON and the reducer reading it again (``DataDirectory/forEachLoggedAction(from:through:preparing:_:)``).
public enum LoggedAction: Sendable {
    case envelope(ActionEnvelope)
    /// The envelope, its payload `null`, and the action.
    case prepared(ActionEnvelope, PreparedStockAction)

    /// The action's seq.
    public var seq: UInt64 {
        switch self {
        case .envelope(let envelope), .prepared(let envelope, _): envelope.seq
        }
    }

    /// The action's envelope, with its payload made from the prepared action when it was
    /// prepared (the record's payload, its members in their canonical order).
    public var envelope: ActionEnvelope {
        switch self {
        case .envelope(let envelope):
            return envelope
        case .prepared(var envelope, let prepared):
            envelope.action.payload = prepared.payload
            return envelope
        }
    }
}
