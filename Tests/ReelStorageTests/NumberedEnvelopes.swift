import ReelCore
import ReelJSON

/// Action `seq` of the storage tests' logs: a `set` of /n to the seq, by a fixed peer at a fixed
/// time, so that a record read back can be compared with the one written.
func numberedEnvelope(_ seq: UInt64, key: String? = nil) -> ActionEnvelope {
    ActionEnvelope(
        seq: seq, action: Action(type: "set", payload: ["path": "/n", "value": .int(Int64(seq))]),
        time: Timestamp(nanosecondsSince1970: 1_700_000_000_000_000_000 + Int64(seq)),
        peer: Peer(uid: 1000, gid: 100, pid: 4242), idempotencyKey: key
    )
}
