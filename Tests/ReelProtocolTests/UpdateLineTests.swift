import ReelCore
import ReelJSON
import ReelProtocol
import Testing

/// Updates put together from shared parts are the bytes the notification encodes.
struct UpdateLineTests {
    let envelopes = [
        ActionEnvelope(seq: 41, action: Action(type: "set", payload: ["path": "/a", "value": "é\n"]),
                       time: Timestamp(nanosecondsSince1970: 1_700_000_000_123_456_789), peer: Peer(uid: 1, gid: 2, pid: 3)),
        ActionEnvelope(seq: 42, action: Action(type: "reset"), time: Timestamp(nanosecondsSince1970: 5), peer: Peer(uid: 0, gid: 0, pid: 1)),
    ]

    @Test func actionsUpdatesAreTheNotificationsBytes() {
        var shared: [UInt8] = []
        for (position, envelope) in envelopes.enumerated() {
            if position > 0 { shared.append(UInt8(ascii: ",")) }
            envelope.writeWire(into: &shared)
        }
        let line = UpdateLine.actionsHead + shared + UpdateLine.actionsTail(seq: 42, subscription: "s7")
        #expect(line == RPCNotification.update(subscription: "s7", seq: 42, actions: envelopes).encodedLine())
    }

    @Test func valueUpdatesAreTheNotificationsBytes() {
        let value: JSONValue = ["b": [1, 2.5, nil], "a": "x\"y"]
        let line = UpdateLine.valueHead(seq: 9, subscription: "s\"1") + value.serialized() + UpdateLine.valueTail
        #expect(line == RPCNotification.update(subscription: "s\"1", seq: 9, value: value).encodedLine())
    }

    @Test func patchUpdatesAreTheNotificationsBytes() {
        let patch = JSONPatch(from: ["a": 1, "b": [1]], to: ["a": 2, "c": true])
        let line = UpdateLine.patchHead + patch.jsonValue.serialized() + UpdateLine.patchTail(seq: 12, subscription: "s3")
        #expect(line == RPCNotification.update(subscription: "s3", seq: 12, patch: patch).encodedLine())
    }

    @Test func sharedFeedUpdatesAreTheNotificationsBytes() {
        var shared: [UInt8] = []
        for (position, envelope) in envelopes.enumerated() {
            if position > 0 { shared.append(UInt8(ascii: ",")) }
            envelope.writeWire(into: &shared)
        }
        let actions = UpdateLine.actionsHead + shared + UpdateLine.actionsTail(seq: 42, feed: "actions")
        #expect(actions == RPCNotification.update(feed: "actions", seq: 42, actions: envelopes).encodedLine())
        let value: JSONValue = ["b": [1, 2.5, nil], "a": "x\"y"]
        let valueLine = UpdateLine.valueHead(seq: 9, feed: "value:/a~1b") + value.serialized() + UpdateLine.valueTail
        #expect(valueLine == RPCNotification.update(feed: "value:/a~1b", seq: 9, value: value).encodedLine())
        let patch = JSONPatch(from: ["a": 1, "b": [1]], to: ["a": 2, "c": true])
        let patchLine = UpdateLine.patchHead(feed: "patch:/\"") + patch.jsonValue.serialized() + UpdateLine.patchTail(seq: 12)
        #expect(patchLine == RPCNotification.update(feed: "patch:/\"", seq: 12, patch: patch).encodedLine())
    }
}
