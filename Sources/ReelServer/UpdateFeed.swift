import DequeModule
import NIOCore
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStore
import Synchronization

/// What every subscriber is sent, encoded once per commit and shared by all of them: the
/// committed actions as `update` objects, and the value at each watched path with the patch from
/// its previous value. A subscriber's own bytes are only the head and tail of its lines
/// (``UpdateLine``); the shared part is encoded once and copied into each subscriber's line.
///
/// The store's writer thread only hands each commit's actions over (``committed(_:)``: an append
/// under a lock) and asks each event loop with subscribers to deliver, unless it is already asked.
/// The first delivery task to run encodes what is new (and reads the watched values from the
/// newest state) once; then each task writes, while their sockets take more
/// (``Outbox/deliverUpdates()``), to the connections of its event loop that have something new:
/// those with an actions-mode subscription, and those whose watched path changed (each path knows
/// its connections, ``Watcher``). A commit changes a few paths; a round costs in proportion to
/// them, not to every subscriber of every path. A subscriber whose socket is full is skipped
/// and catches up when it drains: value and patch modes from the newest value (coalesced),
/// actions mode from the recent actions kept here, or from the log once it fell further behind.
/// So a slow subscriber holds no more than one update, and nothing waits on the write path.
///
/// A shared subscription (`subscribe` with `shared`) is sent its feed's lines whole, the same
/// buffer for every subscriber of the feed: each commit's `actions` line (``ActionsPage/line``),
/// and each watched path's value and patch lines, made once per seq.
final class UpdateFeed: Sendable {
    /// Committed actions `firstSeq...` (a commit's), as their `writeWire` objects separated by
    /// commas, inside the whole `update` line of the shared `actions` feed.
    struct ActionsPage: Sendable {
        let firstSeq: UInt64
        /// The objects: a slice of `line`.
        let bytes: ByteBuffer
        /// Where each action's object ends in `bytes`.
        let ends: [Int]
        /// The shared feed's update of exactly these actions, written as it is to every
        /// subscriber of the feed that is up to date.
        let line: ByteBuffer

        var lastSeq: UInt64 { firstSeq + UInt64(ends.count) - 1 }

        init(_ envelopes: ArraySlice<ActionEnvelope>) {
            firstSeq = envelopes.first!.seq
            var bytes = UpdateLine.actionsHead
            let start = bytes.count
            var ends: [Int] = []
            ends.reserveCapacity(envelopes.count)
            for envelope in envelopes {
                if bytes.count > start { bytes.append(UInt8(ascii: ",")) }
                envelope.writeWire(into: &bytes)
                ends.append(bytes.count - start)
            }
            let objects = bytes.count - start
            bytes += UpdateLine.actionsTail(seq: envelopes.last!.seq, feed: UpdateFeed.actionsFeed)
            line = ByteBuffer(bytes: bytes)
            self.bytes = line.getSlice(at: line.readerIndex + start, length: objects)!
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
        /// The shared feeds' lines as of `seq` (value, and patch from `previous`), made when a
        /// subscriber first needs them.
        var valueLine: ByteBuffer?
        var patchLine: ByteBuffer?
    }

    /// What an actions-mode subscriber gets next.
    enum NextActions {
        /// Nothing new.
        case upToDate
        /// The actions after its last delivered seq, up to `last`: slices of objects to put
        /// into a line of its own, or (for a subscriber of the shared feed) whole lines.
        case actions([ByteBuffer], last: UInt64)
        /// Those actions are no longer kept here: read them from the log, up to `latest`.
        case fromLog(latest: UInt64)
    }

    /// The name of the shared feed of every action.
    static let actionsFeed = SubscribeParams.feed(mode: .actions, path: .root)

    struct Watched: Sendable {
        var subscribers = 0
        var value: PathValue?
        /// The connections whose subscriptions watch the path, told when its value changes.
        var watchers: [ObjectIdentifier: Watcher] = [:]

        /// What a subscriber that holds the value as of `delivered` (a seq this feed published,
        /// when `fromFeed`) is to be given. Mutating only to be called in place, through the
        /// dictionary's `_modify`, without copying the value and its buffers.
        mutating func news(after delivered: UInt64, fromFeed: Bool) -> ValueNews {
            guard let value, delivered < value.seq else { return .none }
            if fromFeed, delivered >= value.changedAt { return .sameValue(seq: value.seq) }
            return .newer(value)
        }
    }

    /// What a value or patch subscriber is to be given (``valueNews(at:after:fromFeed:)``).
    enum ValueNews {
        /// Nothing newer than what it has.
        case none
        /// A newer seq, at which the value it holds is still the value: nothing to write.
        case sameValue(seq: UInt64)
        /// The newest value, to compare with what it holds.
        case newer(PathValue)
    }

    /// How the watched values are to be brought up to date, as ``prepare()`` takes it.
    enum ValuesWork {
        /// They are: nothing to read.
        case none
        /// Read every watched path.
        case every
        /// Read the paths these commits changed, through `through`; `watched` paths are watched.
        case changed([CommitChanges], through: UInt64, watched: Int)
    }

    /// A connection with subscriptions of one path (or of actions), and how many.
    struct Watcher: Sendable {
        let outbox: Outbox
        /// Its event loop's key in ``State/loops``.
        let loop: ObjectIdentifier
        var subscriptions = 0
    }

    struct Loop: Sendable {
        let eventLoop: any EventLoop
        var outboxes: [ObjectIdentifier: Outbox] = [:]
        var scheduled = false
        /// The connections with an actions-mode subscription: given every commit.
        var actionsWatchers: [ObjectIdentifier: Watcher] = [:]
        /// The connections with a value or patch subscription whose path changed (or got its
        /// first value) since their event loop's last round.
        var due: [ObjectIdentifier: Outbox] = [:]

        /// The connections a round visits: those due, and those with an actions-mode subscription.
        mutating func takeRound() -> [Outbox] {
            var round: [Outbox] = []
            round.reserveCapacity(due.count + actionsWatchers.count)
            round.append(contentsOf: due.values)
            for (id, watcher) in actionsWatchers where due[id] == nil { round.append(watcher.outbox) }
            due.removeAll(keepingCapacity: true)
            return round
        }
    }

    struct State: Sendable {
        /// The seq of the newest committed action handed over.
        var seq: UInt64
        /// Commits' actions handed over and not yet encoded into `pages`.
        var pending: [[ActionEnvelope]] = []
        var pendingCount = 0
        var pages: Deque<ActionsPage> = []
        var pagedActions = 0
        var pagedBytes = 0
        var actionSubscribers = 0
        var paths: [JSONPointer: Watched] = [:]
        /// How many of `paths` have no value yet (watched since the last values were read).
        var valuelessPaths = 0
        /// Every watched value is its path's value as of this seq (or later).
        var valuesSeq: UInt64 = 0
        /// What the commits after `valuesSeq` (through `changesThrough`) changed, one entry per
        /// commit: the paths whose values to read again. `nil` once a commit's changes are not
        /// known (the writer did not record them, or too many commits wait): every path is read.
        var changesSinceValues: [CommitChanges]? = []
        var changesThrough: UInt64 = 0
        var loops: [ObjectIdentifier: Loop] = [:]
    }

    /// How many recent actions (and bytes of them) stay encoded for subscribers slightly behind.
    static let keptActions = 20_000
    static let keptBytes = 16 << 20

    /// Read and changed under its lock only (here and in UpdateFeed+SharedLines.swift).
    let state: Mutex<State>
    private let preparing = Mutex(())
    /// Reads logged actions for a subscriber the kept pages no longer reach (`from`, `to`, limit).
    let readActions: @Sendable (UInt64, UInt64, Int) async throws(RPCError) -> [ActionEnvelope]
    /// The newest committed state as JSON, with its seq.
    let latestState: @Sendable () throws(RPCError) -> (seq: UInt64, json: JSONValue)

    init(
        seq: UInt64,
        readActions: @escaping @Sendable (UInt64, UInt64, Int) async throws(RPCError) -> [ActionEnvelope],
        latestState: @escaping @Sendable () throws(RPCError) -> (seq: UInt64, json: JSONValue)
    ) {
        state = Mutex(State(seq: seq))
        self.readActions = readActions
        self.latestState = latestState
    }

    // MARK: the writer thread's side

    /// A commit's actions, on the writer thread: kept for encoding if anyone wants actions, what
    /// they changed kept if anyone watches a path, and every event loop with subscribers is asked
    /// to deliver.
    func committed(_ envelopes: [ActionEnvelope], changes: CommitChanges? = nil) {
        guard let last = envelopes.last else { return }
        let loops = state.withLock { state in
            state.seq = last.seq
            state.keepChanges(changes, through: last.seq)
            if state.actionSubscribers > 0 {
                state.pending.append(envelopes)
                state.pendingCount += envelopes.count
                // The event loops are far behind: leave those actions to the log.
                if state.pendingCount > Self.keptActions { state.dropActions() }
            }
            return state.scheduleDeliveries()
        }
        Self.deliver(on: loops, feed: self)
    }

    static func deliver(on eventLoops: [any EventLoop], feed: UpdateFeed) {
        for eventLoop in eventLoops {
            let key = ObjectIdentifier(eventLoop)
            eventLoop.execute { feed.deliver(on: key) }
        }
    }

    /// On the event loop `key`: the connections there with something to write (an actions-mode
    /// subscription, or a watched path that changed) write what they have not had. The others
    /// are not visited: a commit changes a few paths, and asking every subscriber of every path
    /// at every commit cost in proportion to the subscribers, not to the changes (a connection
    /// visited for its own reasons, its subscription starting or its socket draining, catches up
    /// on all of its subscriptions then).
    private func deliver(on key: ObjectIdentifier) {
        state.withLock { $0.loops[key]?.scheduled = false }
        prepare()
        let outboxes = state.withLock { state -> [Outbox] in
            // (In place, through the dictionary's values: a copy of the loop's entry would copy
            // its tables of connections.)
            guard let index = state.loops.index(forKey: key) else { return [] }
            return state.loops.values[index].takeRound()
        }
        for outbox in outboxes { outbox.deliverUpdates() }
    }

    /// Encodes what was handed over and reads the watched values from the newest state, if that
    /// was not done yet: before every delivery, by whichever event loop comes first.
    func prepare() {
        // One preparer at a time, so that pages are added in order; the encoding itself is done
        // outside the state's lock, which the writer thread takes at every commit.
        preparing.withLock { _ in
            let (pending, valuesWork) = state.withLock { state in
                defer {
                    state.pending = []
                    state.pendingCount = 0
                }
                return (state.pending, state.takeValuesWork())
            }
            let pages = pending.map { ActionsPage($0[...]) }
            var values: (seq: UInt64, json: JSONValue)?
            // The pointers the commits changed are made here, outside the lock.
            var changed: (paths: [JSONPointer], through: UInt64)?
            switch valuesWork {
            case .none: break
            case .every: values = try? latestState()
            case .changed(let commits, let through, let watched):
                changed = Self.changedPaths(by: commits, through: through, watched: watched)
                values = try? latestState()
            }
            state.withLock { state in
                state.add(pages)
                if case .none = valuesWork { return }
                guard let values else {
                    // The state could not be read: the changes taken are not applied, so every
                    // path is read the next time.
                    state.changesSinceValues = nil
                    return
                }
                if let changed {
                    state.setValues(at: changed.paths, from: values.json, at: values.seq, through: changed.through)
                } else {
                    state.setValues(from: values.json, at: values.seq)
                }
            }
        }
    }

    /// The paths the commits' changes name, or `nil` (read every watched path) when some commit
    /// left a change unfollowed, or when they name at least as many paths as are watched (reading
    /// each watched path costs about what finding a changed one among them does).
    private static func changedPaths(by commits: [CommitChanges], through: UInt64, watched: Int) -> (paths: [JSONPointer], through: UInt64)? {
        var paths: [JSONPointer] = []
        for commit in commits {
            guard let changed = commit.changedPointers() else { return nil }
            paths += changed
            if paths.count >= watched { return nil }
        }
        return (paths, through)
    }

    /// Brings a path's entry to `value` as of `seq`, in place. Returns whether the value is new
    /// (changed, or the path's first).
    fileprivate static func advance(_ entry: inout PathValue?, to value: JSONValue, at seq: UInt64) -> Bool {
        guard entry != nil else {
            entry = PathValue(
                seq: seq, value: value, encoded: ByteBuffer(bytes: value.serialized()), changedAt: seq, previous: nil,
                previousChangedAt: 0, patch: nil
            )
            return true
        }
        entry!.seq = seq
        entry!.valueLine = nil
        entry!.patchLine = nil
        guard value != entry!.value else { return false }
        entry!.previous = entry!.value
        entry!.previousChangedAt = entry!.changedAt
        entry!.value = value
        entry!.encoded = ByteBuffer(bytes: value.serialized())
        entry!.changedAt = seq
        entry!.patch = nil
        return true
    }

    // MARK: the event loops' side

    /// The actions after `delivered`, at most `limit`, from the kept pages.
    func actions(after delivered: UInt64, limit: Int) -> NextActions {
        state.withLock { state in
            if let answer = state.notFromPages(after: delivered) { return answer }
            let through = min(state.pages.last!.lastSeq, delivered + UInt64(limit))
            var next = delivered + 1
            // The pages holding `next` and `through`, by binary search: a page per commit makes
            // many pages. One slice per page, reserved at once (growing the array allocated a few
            // times per subscriber per update).
            let firstPage = state.pageIndex(holding: next)
            var slices: [ByteBuffer] = []
            slices.reserveCapacity(state.pageIndex(holding: through) - firstPage + 1)
            var index = firstPage
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

    /// What a subscriber of `path` that holds the value as of `delivered` is to be given: most
    /// subscribers, at most commits, nothing or only a newer seq (another path changed), which is
    /// answered without copying the value and its encodings out of the feed.
    func valueNews(at path: JSONPointer, after delivered: UInt64, fromFeed: Bool) -> ValueNews {
        state.withLock { state in
            guard let index = state.paths.index(forKey: path) else { return .none }
            return state.paths.values[index].news(after: delivered, fromFeed: fromFeed)
        }
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

extension UpdateFeed.State {
    /// Marks every event loop with subscribers as asked to deliver; returns those newly asked.
    /// (Their event loops only: a copy of a loop's entry, held by the writer thread while the loop
    /// changed its tables, made the loop copy them.)
    mutating func scheduleDeliveries() -> [any EventLoop] {
        var asked: [any EventLoop] = []
        for (key, loop) in loops where !loop.scheduled && !loop.outboxes.isEmpty {
            loops[key]!.scheduled = true
            asked.append(loop.eventLoop)
        }
        return asked
    }

    /// What an actions subscriber that delivered through `delivered` gets when the kept pages do
    /// not hold the next action; `nil` when they do.
    func notFromPages(after delivered: UInt64) -> UpdateFeed.NextActions? {
        guard delivered < seq else { return .upToDate }
        // Handed over but not encoded yet (a commit since the last `prepare`): the delivery round
        // that commit asked for brings them.
        if pending.first?.first?.seq == delivered + 1 { return .upToDate }
        guard let first = pages.first, first.firstSeq <= delivered + 1, let last = pages.last, last.lastSeq >= delivered + 1 else {
            return .fromLog(latest: seq)
        }
        return nil
    }

    /// The index of the kept page holding `seq` (one of them does).
    func pageIndex(holding seq: UInt64) -> Int {
        var low = 0, high = pages.count - 1
        while low < high {
            let middle = (low + high) / 2
            if pages[middle].lastSeq < seq { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Forgets the kept and pending actions: subscribers read them from the log.
    mutating func dropActions() {
        pending = []
        pendingCount = 0
        pages = []
        pagedActions = 0
        pagedBytes = 0
    }

    /// Adds encoded pages, dropping the oldest past the limits. The pages kept always follow on
    /// from each other: one that does not (actions were dropped meanwhile) starts them again.
    fileprivate mutating func add(_ newPages: [UpdateFeed.ActionsPage]) {
        for page in newPages where actionSubscribers > 0 {
            if let last = pages.last, last.lastSeq + 1 != page.firstSeq {
                pages = []
                pagedActions = 0
                pagedBytes = 0
            }
            pages.append(page)
            pagedActions += page.ends.count
            pagedBytes += page.bytes.readableBytes
        }
        while let first = pages.first, pages.count > 1,
            pagedActions > UpdateFeed.keptActions || pagedBytes > UpdateFeed.keptBytes
        {
            pages.removeFirst()
            pagedActions -= first.ends.count
            pagedBytes -= first.bytes.readableBytes
        }
    }

    /// Keeps what a commit through `seq` changed, for the next reading of the watched values.
    /// Past a few dozen commits not yet read (event loops far behind), or once one commit's
    /// changes are unknown, every watched path is read instead.
    fileprivate mutating func keepChanges(_ changes: CommitChanges?, through seq: UInt64) {
        guard !paths.isEmpty, let changes, changesSinceValues != nil, changesSinceValues!.count < 64 else {
            changesSinceValues = nil
            return
        }
        changesSinceValues!.append(changes)
        changesThrough = seq
    }

    /// What bringing the watched values up to the newest commit takes: nothing, every path (a
    /// path without a value yet, or a commit whose changes are unknown), or the paths the commits
    /// since the last reading changed. What it names is taken: commits after this are kept for
    /// the next reading.
    fileprivate mutating func takeValuesWork() -> UpdateFeed.ValuesWork {
        guard !paths.isEmpty, valuesSeq < seq || valuelessPaths > 0 else { return .none }
        defer { changesSinceValues = [] }
        guard valuelessPaths == 0, let commits = changesSinceValues, !commits.isEmpty else { return .every }
        return .changed(commits, through: changesThrough, watched: paths.count)
    }

    /// The watched values from the state at `stateSeq`, unless they are newer already. Each entry
    /// is changed in place (through the dictionary's values), not copied out and back.
    fileprivate mutating func setValues(from json: JSONValue, at stateSeq: UInt64) {
        guard stateSeq >= valuesSeq else { return }
        var index = paths.startIndex
        while index != paths.endIndex {
            advanceValue(at: index, from: json, at: stateSeq)
            paths.formIndex(after: &index)
        }
        valuelessPaths = 0
        valuesSeq = stateSeq
    }

    /// The values at `changed` (those of them watched) from the state at `stateSeq`, where the
    /// commits through `through` changed nothing else. Every watched value is then its path's as
    /// of `through`: the commits after it (which `stateSeq` may hold already) are read at the next
    /// round, which their own handing over asks for.
    fileprivate mutating func setValues(at changed: [JSONPointer], from json: JSONValue, at stateSeq: UInt64, through: UInt64) {
        guard stateSeq >= through else {
            // (A state older than the changes handed over: not applied, so not to be lost either.)
            changesSinceValues = nil
            return
        }
        for path in changed {
            guard let index = paths.index(forKey: path) else { continue }
            advanceValue(at: index, from: json, at: stateSeq)
        }
        valuesSeq = max(valuesSeq, through)
    }

    /// Brings the watched path at `index` to its value in `json`, and marks its connections due
    /// when the value is new.
    private mutating func advanceValue(at index: Dictionary<JSONPointer, UpdateFeed.Watched>.Index, from json: JSONValue, at stateSeq: UInt64) {
        let path = paths.keys[index]
        if UpdateFeed.advance(&paths.values[index].value, to: json.value(at: path) ?? .null, at: stateSeq) {
            for (id, watcher) in paths.values[index].watchers { loops[watcher.loop]?.due[id] = watcher.outbox }
        }
    }
}
