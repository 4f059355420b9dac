import ReelJSON

/// `update` lines put together from a part encoded once per commit and shared by every subscriber
/// (the actions, the value, the patch) and the few bytes that differ per subscriber: the head and
/// tail around the shared part. Head, shared part and tail are exactly the bytes of
/// ``RPCNotification/update(subscription:seq:actions:)`` and its siblings (`UpdateLineTests`).
///
/// ```
/// actions: {"jsonrpc":"2.0","method":"update","params":{"actions":[ … ],"seq":S,"subscription":"ID"}}
/// value:   {"jsonrpc":"2.0","method":"update","params":{"seq":S,"subscription":"ID","value": … }}
/// patch:   {"jsonrpc":"2.0","method":"update","params":{"patch": … ,"seq":S,"subscription":"ID"}}
/// ```
public enum UpdateLine {
    private static let start = Array(#"{"jsonrpc":"2.0","method":"update","params":{"#.utf8)

    /// Before the actions, which follow as `writeWire` objects separated by commas.
    public static let actionsHead = start + Array(#""actions":["#.utf8)

    /// After the actions: the update's seq (its last action's) and the subscription.
    public static func actionsTail(seq: UInt64, subscription: String) -> [UInt8] {
        tail(after: "],", seq: seq, subscription: subscription)
    }

    /// Before the value, which follows as JSON.
    public static func valueHead(seq: UInt64, subscription: String) -> [UInt8] {
        var bytes = start
        appendSeqAndSubscription(seq: seq, subscription: subscription, to: &bytes)
        bytes.append(contentsOf: #","value":"#.utf8)
        return bytes
    }

    /// After the value.
    public static let valueTail = Array("}}\n".utf8)

    /// Before the patch, which follows as a JSON array of operations.
    public static let patchHead = start + Array(#""patch":"#.utf8)

    /// After the patch.
    public static func patchTail(seq: UInt64, subscription: String) -> [UInt8] {
        tail(after: ",", seq: seq, subscription: subscription)
    }

    /// `separator`, the seq and subscription members, and the end of the line.
    private static func tail(after separator: StaticString, seq: UInt64, subscription: String) -> [UInt8] {
        // Reserved at once (the members' names, 20 digits, the id quoted and escaped): one tail
        // per subscriber per update, and growing it allocated three times.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(separator.utf8CodeUnitCount + 48 + 2 * subscription.utf8.count)
        bytes.append(contentsOf: UnsafeBufferPointer(start: separator.utf8Start, count: separator.utf8CodeUnitCount))
        appendSeqAndSubscription(seq: seq, subscription: subscription, to: &bytes)
        bytes.append(contentsOf: "}}\n".utf8)
        return bytes
    }

    // MARK: shared feeds

    // The lines of a shared feed name the feed instead of a subscription, and are the same bytes
    // for every subscriber of it (members in sorted order, as the notification encodes them):
    //
    // actions: {"jsonrpc":"2.0","method":"update","params":{"actions":[ … ],"feed":"F","seq":S}}
    // value:   {"jsonrpc":"2.0","method":"update","params":{"feed":"F","seq":S,"value": … }}
    // patch:   {"jsonrpc":"2.0","method":"update","params":{"feed":"F","patch": … ,"seq":S}}

    /// After the actions of a feed's update.
    public static func actionsTail(seq: UInt64, feed: String) -> [UInt8] {
        var bytes = Array(#"],"feed":"#.utf8)
        feed.writeJSON(into: &bytes)
        bytes.append(contentsOf: #","seq":"#.utf8)
        seq.writeJSON(into: &bytes)
        bytes.append(contentsOf: "}}\n".utf8)
        return bytes
    }

    /// Before the value of a feed's update (``valueTail`` follows it).
    public static func valueHead(seq: UInt64, feed: String) -> [UInt8] {
        var bytes = start + Array(#""feed":"#.utf8)
        feed.writeJSON(into: &bytes)
        bytes.append(contentsOf: #","seq":"#.utf8)
        seq.writeJSON(into: &bytes)
        bytes.append(contentsOf: #","value":"#.utf8)
        return bytes
    }

    /// Before the patch of a feed's update.
    public static func patchHead(feed: String) -> [UInt8] {
        var bytes = start + Array(#""feed":"#.utf8)
        feed.writeJSON(into: &bytes)
        bytes.append(contentsOf: #","patch":"#.utf8)
        return bytes
    }

    /// After the patch of a feed's update.
    public static func patchTail(seq: UInt64) -> [UInt8] {
        var bytes = Array(#","seq":"#.utf8)
        seq.writeJSON(into: &bytes)
        bytes.append(contentsOf: "}}\n".utf8)
        return bytes
    }

    private static func appendSeqAndSubscription(seq: UInt64, subscription: String, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #""seq":"#.utf8)
        seq.writeJSON(into: &bytes)
        bytes.append(contentsOf: #","subscription":"#.utf8)
        subscription.writeJSON(into: &bytes)
    }
}
