import Foundation

/// The protocol the load speaks.
enum Wire {
    /// reeld's protocol v1: `dispatch` of a `set`.
    case reel
    /// Redis's RESP: `PUBLISH` on one channel (for the fan-out comparison).
    case redisPublish
}

/// One connection that dispatches (or publishes): the requests it still has to send, the times its
/// requests in flight were sent.
struct Dispatcher {
    var connection: Connection
    private let wire: Wire
    private let index: Int
    private let payloadBytes: Int
    private let keyed: Bool
    private var unsent: Int
    private(set) var unanswered = 0
    private var nextID = 0
    private var sentAt: [UInt64] = []  // a queue: answers come in request order
    private var firstUnanswered = 0
    /// The highest seq an answer carried (reel).
    private(set) var highestSeq: UInt64 = 0
    /// What every request starts with up to its value, and the value's filler after the send
    /// time: made once, so that a request costs copies rather than allocations (a load generator
    /// that spends more per request than the server leaves the server less of the machine).
    private let head: [UInt8]
    private let filler: [UInt8]

    init(socket path: String, wire: Wire, index: Int, payloadBytes: Int, count: Int, keyed: Bool) throws {
        connection = try Connection(socket: path)
        self.wire = wire
        self.index = index
        self.payloadBytes = payloadBytes
        self.keyed = keyed
        unsent = count
        let valueSize = max(payloadBytes, 20)
        switch wire {
        case .reel:
            head = Array(#"{"jsonrpc":"2.0","method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/c\#(index)","value":""#.utf8)
        case .redisPublish:
            head = Array("*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$\(valueSize)\r\n".utf8)
        }
        filler = Array(repeating: UInt8(ascii: "x"), count: valueSize - 20)
    }

    var isDone: Bool { unsent == 0 && unanswered == 0 }

    /// Queues requests up to the pipeline depth.
    mutating func fill(pipeline: Int) {
        guard unsent > 0 && unanswered < pipeline else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        while unsent > 0 && unanswered < pipeline {
            let id = nextID
            connection.queue { out in
                out.append(contentsOf: head)
                // The value starts with the wall-clock send time, for subscribers to measure delivery.
                appendStampedValue(to: &out, filler: filler, at: wallClockNanoseconds())
                switch wire {
                case .reel where keyed:
                    out.append(contentsOf: #""}},"idempotencyKey":"k\#(index)-\#(id)"},"id":\#(id)}"#.utf8)
                case .reel:
                    out.append(contentsOf: #""}}},"id":"#.utf8)
                    appendDecimal(UInt64(id), to: &out)
                    out.append(UInt8(ascii: "}"))
                case .redisPublish:
                    out.append(UInt8(ascii: "\r"))
                }
                out.append(0x0A)
            }
            nextID += 1
            unsent -= 1
            unanswered += 1
            sentAt.append(now)
        }
    }

    /// Reads answers; reports for each when its request was sent and whether it succeeded.
    /// Returns `false` once the server closed the connection.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer, answer: (UInt64, Bool) -> Void) throws -> Bool {
        let wire = self.wire
        var answers: [Bool] = []
        var highest = highestSeq
        let open = try connection.read(into: buffer) { line in
            switch wire {
            case .reel:
                // A success answer of dispatch: {"jsonrpc":"2.0","id":N,"result":{"seq":…}}.
                guard let result = LineScan.end(of: #""result":{"seq":"#, in: line) else {
                    answers.append(false)
                    return
                }
                highest = max(highest, LineScan.number(in: line, at: result) ?? 0)
                answers.append(true)
            case .redisPublish:
                answers.append(line.first == UInt8(ascii: ":"))
            }
        }
        highestSeq = highest
        for succeeded in answers {
            answer(sentAt[firstUnanswered], succeeded)
            firstUnanswered += 1
            unanswered -= 1
        }
        if firstUnanswered > 4096 {
            sentAt.removeFirst(firstUnanswered)
            firstUnanswered = 0
        }
        return open
    }
}
