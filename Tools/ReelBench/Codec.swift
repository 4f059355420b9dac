import Foundation
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStorage

extension ReelBench {
    /// What one action costs on the paths every tool's fold and `reel import` share, each in a
    /// loop over `codecActions` `patch` actions (medians of `codecRuns`, the fastest beside):
    /// reading a dispatch request (`DispatchLine`, a `set` of 200 bytes), reading an exported line (`LoggedActionLine`), reading its time, encoding its log record,
    /// decoding the record, and decoding it and folding it with the stock reducer.
    func codec() throws {
        let count = codecActions
        let envelopes = (1...count).map { i in
            ActionEnvelope(
                seq: UInt64(i), action: Self.patchAction(i), time: Timestamp(nanosecondsSince1970: 1_700_000_000_000_000_000 + Int64(i)),
                peer: Peer(uid: 1, gid: 1, pid: 1)
            )
        }
        let lines = envelopes.map { envelope -> [UInt8] in
            var bytes: [UInt8] = []
            envelope.writeWire(into: &bytes)
            return bytes
        }
        let times = envelopes.map { Array($0.time.rfc3339.utf8) }
        // A dispatch request as clients send them: a `set` of 200 bytes, as `reel-load` sends.
        let requests = (1...count).map { i in
            Array(#"{"jsonrpc":"2.0","id":\#(i),"method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/c\#(i % 50)","value":"\#(String(repeating: "x", count: 200))"}}}}"#.utf8)
        }
        let records = envelopes.map(EnvelopeCodec.encode)
        let reducer = JSONDocumentReducer()
        var timings: [String: [Double]] = [:]
        var sink = 0
        func time(_ name: String, _ body: () throws -> Void) rethrows {
            let start = ContinuousClock.now
            try body()
            let elapsed = (ContinuousClock.now - start).components
            let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
            timings[name, default: []].append(seconds * 1e9 / Double(count))
        }
        for _ in 0..<codecRuns {
            try time("a dispatch request read") {
                try requests.withUnsafeBufferPointer { requests in
                    for index in requests.indices {
                        guard let read = requests[index].withUnsafeBytes({ DispatchLine.read($0) }) else { throw CodecBenchError() }
                        sink &+= read.params.actions.count
                    }
                }
            }
            try time("an exported line read") {
                try lines.withUnsafeBufferPointer { lines in
                    for index in lines.indices {
                        guard let envelope = lines[index].withUnsafeBytes({ LoggedActionLine.read($0) }) else { throw CodecBenchError() }
                        sink &+= envelope.action.type.utf8.count
                    }
                }
            }
            try time("an exported line read, its payload encoded") {
                // As `reel import` reads a line: the payload written into the log's encoding.
                var payload: [UInt8] = []
                try lines.withUnsafeBufferPointer { lines in
                    for index in lines.indices {
                        guard let envelope = lines[index].withUnsafeBytes({ LoggedActionLine.read($0, encodingPayloadInto: &payload) }) else {
                            throw CodecBenchError()
                        }
                        sink &+= envelope.action.type.utf8.count &+ payload.count
                    }
                }
            }
            try time("its time read") {
                try times.withUnsafeBufferPointer { times in
                    for index in times.indices {
                        guard let time = times[index].withUnsafeBytes({ Timestamp(rfc3339: $0) }) else { throw CodecBenchError() }
                        sink &+= Int(truncatingIfNeeded: time.nanosecondsSince1970)
                    }
                }
            }
            time("its record encoded") {
                envelopes.withUnsafeBufferPointer { envelopes in
                    for index in envelopes.indices { sink &+= EnvelopeCodec.encode(envelopes[index]).count }
                }
            }
            try time("its record decoded") {
                try records.withUnsafeBufferPointer { records in
                    for index in records.indices {
                        let envelope = try records[index].withUnsafeBytes { try EnvelopeCodec.decode(seq: UInt64(index + 1), from: $0) }
                        sink &+= envelope.action.type.utf8.count
                    }
                }
            }
            var state: JSONValue = [:]
            try time("decoded and folded") {
                try records.withUnsafeBufferPointer { records in
                    for index in records.indices {
                        let envelope = try records[index].withUnsafeBytes { try EnvelopeCodec.decode(seq: UInt64(index + 1), from: $0) }
                        try reducer.reduce(into: &state, action: envelope)
                    }
                }
            }
            sink &+= state.objectValue?.count ?? 0
            // As replays read the stock actions: the payload straight into the patch.
            var preparedState: JSONValue = [:]
            try time("read prepared and folded") {
                try records.withUnsafeBufferPointer { records in
                    for index in records.indices {
                        var prepared: PreparedStockAction?
                        let envelope = try records[index].withUnsafeBytes {
                            try EnvelopeCodec.decode(seq: UInt64(index + 1), from: $0, acceptingLegacy: false, preparing: true, into: &prepared)
                        }
                        guard let prepared, JSONDocumentReducer.apply(prepared, to: &preparedState) else {
                            try reducer.reduce(into: &preparedState, action: prepared?.filling(envelope) ?? envelope)
                            continue
                        }
                    }
                }
            }
            sink &+= preparedState.objectValue?.count ?? 0
        }
        for name in [
            "a dispatch request read", "an exported line read", "an exported line read, its payload encoded", "its time read", "its record encoded", "its record decoded", "decoded and folded", "read prepared and folded",
        ] {
            let sorted = timings[name, default: []].sorted()
            let median = String(format: "%.0f", sorted[sorted.count / 2]), fastest = String(format: "%.0f", sorted[0])
            print("codec: \(name): median \(median) ns per action (fastest \(fastest); \(sorted.count) runs of \(count))")
        }
        if sink == 42 { print("") }  // (keeps the loops' results alive)
    }
}

private struct CodecBenchError: Error {}
