#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Named places in the write path and in a take-over where a crash test can have the process
/// killed, as `kill -9` would, to check that whatever was acknowledged survives and nothing else
/// is half there.
///
/// Armed only by the environment: `REEL_CRASH_POINT=commit.inside` kills the process the first
/// time that point is reached, `REEL_CRASH_POINT=commit.inside@5` the fifth time. With `:hang`
/// (`commit.before@3:hang`) the thread that reaches it stops there for good instead, as on a disk
/// that no longer answers: for the watchdog's tests. Unset (always, in production), each point
/// costs one load of a flag that is `false`. `Tools/torture --crash-points` runs a daemon once per
/// point and checks the store after each kill.
public enum CrashPoint: String, CaseIterable, Sendable {
    /// The writer reduced a group of dispatches and is about to commit it.
    case commitBefore = "commit.before"
    /// Inside the LMDB write transaction, every record put, before `mdb_txn_commit`.
    case commitInside = "commit.inside"
    /// The commit is durable; no dispatcher has been answered yet.
    case commitAfter = "commit.after"
    /// Every dispatcher of the group has been answered.
    case ackAfter = "ack.after"
    /// A checkpoint was encoded off the write path and is about to be handed to the writer.
    case checkpointEncoded = "checkpoint.encoded"
    /// Inside a write transaction that stores checkpoints, before its commit.
    case checkpointCommit = "checkpoint.commit"
    /// The map is full and about to be grown (no transaction open).
    case mapGrow = "map.grow"
    /// The map was just grown; the transaction that found it full has not run again yet.
    case mapGrown = "map.grown"
    /// A take-over, the serving daemon's side: its listening socket is sent to the newcomer, its
    /// answer to `handOver` not written yet.
    case handOverSent = "handover.sent"
    /// The serving daemon has answered what it had read and is about to close its store.
    case handOverClosing = "handover.closing"
    /// The newcomer's side: its fold is level with the serving daemon, `handOver` not asked yet.
    case takeOverFolded = "takeover.folded"
    /// The newcomer holds the listening socket; the serving daemon may still be stopping.
    case takeOverReceived = "takeover.received"
    /// The newcomer holds the data directory's lock and is about to open the store.
    case takeOverOpening = "takeover.opening"
    /// The newcomer's store is open; it is about to serve the socket.
    case takeOverServing = "takeover.serving"

    /// The point `REEL_CRASH_POINT` arms, with the reach that kills (the first read of this checks
    /// the variable: a bad value ends the process with status 64 and a message).
    public static var armed: (point: CrashPoint, nth: Int)? {
        CrashPointTrigger.shared.point.map { ($0, CrashPointTrigger.shared.nth) }
    }

    /// Kills the process with SIGKILL if `REEL_CRASH_POINT` names this point and this is the
    /// reach it names.
    @inline(__always)
    public func reach() {
        if CrashPointTrigger.shared.isArmed { CrashPointTrigger.shared.reached(self) }
    }
}

/// The armed point, read from the environment once.
final class CrashPointTrigger: Sendable {
    static let shared = CrashPointTrigger(setting: getenv("REEL_CRASH_POINT").map { String(cString: $0) })

    let isArmed: Bool
    let point: CrashPoint?
    let nth: Int
    /// Stop the thread rather than kill the process.
    let hangs: Bool
    private let reaches = Atomic<Int>(0)

    init(setting: String?) {
        guard let setting, !setting.isEmpty else {
            (isArmed, point, nth, hangs) = (false, nil, 0, false)
            return
        }
        let hangs = setting.hasSuffix(":hang")
        let parts = setting.dropLast(hangs ? ":hang".count : 0).split(separator: "@", maxSplits: 1).map(String.init)
        guard let point = CrashPoint(rawValue: parts[0]), let nth = parts.count == 2 ? Int(parts[1]) : 1, nth >= 1 else {
            let names = CrashPoint.allCases.map(\.rawValue).joined(separator: ", ")
            let message = "REEL_CRASH_POINT=\(setting) names no crash point (NAME, NAME@N or either with :hang; NAME one of \(names))\n"
            _ = message.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
            exit(64)
        }
        (isArmed, self.point, self.nth, self.hangs) = (true, point, nth, hangs)
    }

    func reached(_ reached: CrashPoint) {
        guard reached == point else { return }
        if reaches.add(1, ordering: .relaxed).newValue == nth {
            guard hangs else {
                kill(getpid(), SIGKILL)
                return
            }
            while true { sleep(3600) }
        }
    }
}
