import DequeModule
import NIOCore
import ReelCore
import ReelJSON
import ReelProtocol
import Synchronization

/// What every subscriber is sent, encoded once per commit and shared by all of them: the
/// committed actions as `update` objects, and the value at each watched path with the patch from
/// its previous value. A subscriber's own bytes are only the head and tail of its lines
/// (``UpdateLine``); the shared part is one `ByteBuffer` written to every socket without a copy.
///
/// The feed is filled off the write path, by one task that follows the commits
/// (``UpdateFeedProducer``), and read on the event loops: after each commit it schedules one task
/// per event loop with subscribers, which writes to each of them while its socket takes more
/// (``Outbox/deliverUpdates()``). A subscriber whose socket is full is skipped and catches up when
/// it drains: value and patch modes from the newest value (coalesced), actions mode from the
/// recent actions kept here, or from the log when it fell further behind. So a slow subscriber
/// holds no more than one update, and the writer thread only ever wakes the producer.
final class UpdateFeed: Sendable {
    /// Committed actions `firstSeq...`, as their `writeWire` objects separated by commas.
    struct ActionsPage: Sendable {
        let firstSeq: UInt64
        let bytes: ByteBuffer
        /// Where each action's object ends in `bytes`.
        let ends: [Int]

        var lastSeq: UInt64 { firstSeq + UInt64(ends.count) - 1 }

        init(_ envelopes: ArraySlice<ActionEnvelope>) {
            firstSeq = envelopes.first!.seq
            var bytes: [UInt8] = []
            var ends: [Int] = []
            ends.reserveCapacity(envelopes.count)
            for envelope in envelopes {
                if !bytes.isEmpty { bytes.append(UInt8(ascii: ",")) }
                envelope.writeWire(into: &bytes)
                ends.append(bytes.count)
            }
            self.bytes = ByteBuffer(bytes: bytes)
            self.ends = ends
        }

        /// The objects of `from...through` (both in this page), without copying.
        func slice(from: UInt64, through: UInt64) -> ByteBuffer {
            let start = from == firstSeq ? 0 : ends[Int(from - firstSeq) - 1] + 1
            let end = ends[Int(through - firstSeq)]
            return bytes.getSlice(at: bytes.readerIndex + start, length: end - start)!
        }
    }

    /// The value at one watched path, as of the feed's seq.
    struct PathValue: Sendable {
        var seq: UInt64
        var value: JSONValue
        var encoded: ByteBuffer
        /// The feed seq at which `value` was first seen.
        var changedAt: UInt64
        /// The value before that, first seen at `previousChangedAt`; `nil` when the feed has not
        /// seen the path change (it started watching it with `value`).
        var previous: JSONValue?
        var previousChangedAt: UInt64
        /// The patch from `previous` to `value`, made when a subscriber first needs it.
        var patch: ByteBuffer?
    }

    /// What an actions-mode subscriber gets next.
    enum NextActions {
        /// Nothing new.
        case upToDate
        /// The actions after its last delivered seq, up to `last`.
        case actions([ByteBuffer], last: UInt64)
        /// Those actions are no longer kept here: read them from the log, up to `latest`.
        case fromLog(latest: UInt64)
    }

    private struct Watched: Sendable {
        var subscribers = 0
        var value: PathValue?
    }

    private struct Loop: Sendable {
        let eventLoop: any EventLoop
        var outboxes: [ObjectIdentifier: Outbox] = [:]
        var scheduled = false
    }

    private struct State: Sendable {
        /// The seq the pages and values are as of.
        var seq: UInt64
        var pages: Deque<ActionsPage> = []
        var pagedActions = 0
        var pagedBytes = 0
        var actionSubscribers = 0
        var paths: [JSONPointer: Watched] = [:]
        var loops: [ObjectIdentifier: Loop] = [:]
    }

    /// How many recent actions (and bytes of them) stay encoded for subscribers slightly behind.
    static let keptActions = 20_000
    static let keptBytes = 16 << 20

    private let state: Mutex<State>
    /// Reads logged actions for a subscriber the kept pages no longer reach (`from`, `to`, limit).
    let readActions: @Sendable (UInt64, UInt64, Int) async throws(RPCError) -> [ActionEnvelope]
    /// Yields when the producer has work: a commit, or a path newly watched (coalesced).
    let work: AsyncStream<Void>
    private let workContinuation: AsyncStream<Void>.Continuation

    init(seq: UInt64, readActions: @escaping @Sendable (UInt64, UInt64, Int) async throws(RPCError) -> [ActionEnvelope]) {
        state = Mutex(State(seq: seq))
        self.readActions = readActions
        (work, workContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// There is work for the producer (a commit).
    func poke() { workContinuation.yield() }

    /// No more commits will come.
    func finish() { workContinuation.finish() }

    // MARK: subscribers

    /// A connection whose subscriptions the feed serves, on its channel's event loop.
    func register(_ outbox: Outbox, on eventLoop: any EventLoop) {
        let key = ObjectIdentifier(eventLoop)
        state.withLock { state in
            state.loops[key, default: Loop(eventLoop: eventLoop)].outboxes[ObjectIdentifier(outbox)] = outbox
        }
    }

    func unregister(_ outbox: Outbox, on eventLoop: any EventLoop) {
        _ = state.withLock { $0.loops[ObjectIdentifier(eventLoop)]?.outboxes.removeValue(forKey: ObjectIdentifier(outbox)) }
    }

    /// A subscription starts: the feed keeps what it needs from the next commit on.
    func watch(_ subscription: Subscription) {
        let newPath = state.withLock { state in
            switch subscription.mode {
            case .actions:
                state.actionSubscribers += 1
                return false
            case .value, .patch:
                state.paths[subscription.path, default: Watched()].subscribers += 1
                return state.paths[subscription.path]!.value == nil
            }
        }
        // Its value is needed now, not at the next commit, which may be long in coming.
        if newPath { poke() }
    }

    func unwatch(_ subscription: Subscription) {
        state.withLock { state in
            switch subscription.mode {
            case .actions:
                state.actionSubscribers -= 1
                if state.actionSubscribers == 0 {
                    state.pages = []
                    state.pagedActions = 0
                    state.pagedBytes = 0
                }
            case .value, .patch:
                state.paths[subscription.path]?.subscribers -= 1
                if state.paths[subscription.path]?.subscribers == 0 { state.paths[subscription.path] = nil }
            }
        }
    }

    // MARK: the producer's side

    /// What the next step should read: the seq it starts after, whether actions are wanted, the
    /// watched paths, and whether one of them has no value yet.
    func wants() -> (after: UInt64, actions: Bool, paths: [JSONPointer], newPath: Bool) {
        state.withLock { state in
            (state.seq, state.actionSubscribers > 0, Array(state.paths.keys), state.paths.values.contains { $0.value == nil })
        }
    }

    /// The seq the feed is as of.
    var seq: UInt64 { state.withLock { $0.seq } }

    /// Takes in the commits up to `seq`: the pages of their actions (or `nil` when none were read,
    /// which drops the kept pages: they must stay contiguous) and the watched values. Then every
    /// event loop with subscribers is asked to deliver.
    func publish(seq: UInt64, pages newPages: [ActionsPage]?, values: [JSONPointer: JSONValue]) {
        let loops: [Loop] = state.withLock { state in
            if let newPages {
                for page in newPages {
                    state.pages.append(page)
                    state.pagedActions += page.ends.count
                    state.pagedBytes += page.bytes.readableBytes
                }
                while let first = state.pages.first, state.pages.count > 1,
                    state.pagedActions > Self.keptActions || state.pagedBytes > Self.keptBytes
                {
                    state.pages.removeFirst()
                    state.pagedActions -= first.ends.count
                    state.pagedBytes -= first.bytes.readableBytes
                }
            } else {
                state.pages = []
                state.pagedActions = 0
                state.pagedBytes = 0
            }
            for (path, value) in values where state.paths[path] != nil {
                state.paths[path]!.value = Self.advance(state.paths[path]!.value, to: value, at: seq)
            }
            state.seq = seq
            var due: [Loop] = []
            for (key, loop) in state.loops where !loop.scheduled && !loop.outboxes.isEmpty {
                state.loops[key]!.scheduled = true
                due.append(loop)
            }
            return due
        }
        for loop in loops {
            let key = ObjectIdentifier(loop.eventLoop)
            loop.eventLoop.execute { self.deliver(on: key) }
        }
    }

    private static func advance(_ old: PathValue?, to value: JSONValue, at seq: UInt64) -> PathValue {
        guard var entry = old else {
            return PathValue(
                seq: seq, value: value, encoded: ByteBuffer(bytes: value.serialized()), changedAt: seq, previous: nil,
                previousChangedAt: 0, patch: nil
            )
        }
        entry.seq = seq
        guard value != entry.value else { return entry }
        entry.previous = entry.value
        entry.previousChangedAt = entry.changedAt
        entry.value = value
        entry.encoded = ByteBuffer(bytes: value.serialized())
        entry.changedAt = seq
        entry.patch = nil
        return entry
    }

    /// On the event loop `key`: every registered connection there writes what it has not had.
    private func deliver(on key: ObjectIdentifier) {
        let outboxes = state.withLock { state -> [Outbox] in
            state.loops[key]?.scheduled = false
            return state.loops[key].map { Array($0.outboxes.values) } ?? []
        }
        for outbox in outboxes { outbox.deliverUpdates() }
    }

    // MARK: the event loops' side

    /// The actions after `delivered`, at most `limit`, from the kept pages.
    func actions(after delivered: UInt64, limit: Int) -> NextActions {
        state.withLock { state in
            guard delivered < state.seq else { return .upToDate }
            guard let first = state.pages.first, first.firstSeq <= delivered + 1, let last = state.pages.last,
                last.lastSeq >= delivered + 1
            else { return .fromLog(latest: state.seq) }
            let through = min(last.lastSeq, delivered + UInt64(limit))
            var slices: [ByteBuffer] = []
            var next = delivered + 1
            // The page holding `next`, by binary search: a page per commit makes many pages.
            var low = 0, high = state.pages.count - 1
            while low < high {
                let middle = (low + high) / 2
                if state.pages[middle].lastSeq < next { low = middle + 1 } else { high = middle }
            }
            var index = low
            while next <= through {
                let page = state.pages[index]
                let end = min(page.lastSeq, through)
                slices.append(page.slice(from: next, through: end))
                next = end + 1
                index += 1
            }
            return .actions(slices, last: through)
        }
    }

    /// The value at `path` as of the feed's seq, once a commit was seen since it is watched.
    func value(at path: JSONPointer) -> PathValue? {
        state.withLock { $0.paths[path]?.value }
    }

    /// The patch from the previous value at `path` to the one first seen at `changedAt`, made once
    /// and shared; `nil` when the value changed again meanwhile.
    func sharedPatch(at path: JSONPointer, changedAt: UInt64) -> ByteBuffer? {
        state.withLock { state in
            guard let entry = state.paths[path]?.value, entry.changedAt == changedAt, let previous = entry.previous else {
                return nil
            }
            if let patch = entry.patch { return patch }
            let patch = ByteBuffer(bytes: JSONPatch(from: previous, to: entry.value).jsonValue.serialized())
            state.paths[path]!.value!.patch = patch
            return patch
        }
    }
}
