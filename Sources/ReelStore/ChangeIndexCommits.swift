import Dispatch
import Foundation
import ReelStorage
import Synchronization

extension Timeline {
    /// How bringing the change index up to date ended (``foldChangeIndexCommits(after:state:commitSize:minimumPart:latest:progress:stop:append:)``).
    struct ChangeIndexCommitsOutcome {
        /// The last seq whose lists were appended.
        var through: UInt64
        /// Whether a commit was refused because the index had moved (only the journal's applier
        /// moves it, once the build has caught up with the log).
        var moved: Bool
    }

    /// Folds the actions after `start` into change lists in commits of at most `commitSize`
    /// (``changeListsOnAllCores(from:through:state:minimumPart:progress:stop:)``), until `latest`
    /// (asked before each commit, and again once the last append is in: the log may grow
    /// meanwhile), and hands each commit's lists to `append` (by default the directory's
    /// `appendToChangeIndex`), in order.
    ///
    /// Each append (LMDB's puts, a tenth of a commit's time, on one core) runs on a thread of its
    /// own while the next commit folds on every core: done one after the other, one core idled
    /// through every append. A commit's append starts once the one before it has ended, and
    /// when one reports the index moved or throws, nothing after it is appended. Returns only
    /// when no append is running.
    func foldChangeIndexCommits(
        after start: UInt64, state: inout State, commitSize: UInt64, minimumPart: UInt64,
        latest: () throws(StoreError) -> UInt64, progress: ((UInt64) -> Void)? = nil, stop: (@Sendable () -> Bool)? = nil,
        append: (@Sendable (ChangeLists) throws(StoreError) -> Bool)? = nil
    ) throws(StoreError) -> ChangeIndexCommitsOutcome {
        let append = append ?? Self.appendToIndex(of: directory)
        var outcome = ChangeIndexCommitsOutcome(through: start, moved: false)
        var running: (end: UInt64, append: BackgroundAppend)?
        // Waits for the running append, if any; `false` when it was refused.
        func settle() throws(StoreError) -> Bool {
            guard let (end, append) = running else { return true }
            running = nil
            guard try append.outcome() else {
                outcome.moved = true
                return false
            }
            outcome.through = end
            return true
        }
        var folded = start
        do throws(StoreError) {
            while stop?() != true {
                let last = try latest()
                guard last > folded else {
                    // Caught up with the log as it was asked; but the log may have grown while
                    // the last append ran, and the applier's commits of it then did not continue
                    // an index that had not reached them: once that append is in, look again
                    // (after it, the applier's next commit continues the index, or shows here).
                    guard running != nil else { break }
                    guard try settle() else { return outcome }
                    continue
                }
                let end = min(last, folded + commitSize)
                let lists = try changeListsOnAllCores(
                    from: folded + 1, through: end, state: &state, minimumPart: minimumPart, progress: progress, stop: stop
                )
                if stop?() == true { break }
                guard try settle() else { return outcome }
                running = (end, BackgroundAppend(lists, append))
                folded = end
            }
            _ = try settle()
        } catch {
            _ = try? settle()
            throw error
        }
        return outcome
    }
}

extension Timeline {
    /// Appends lists to `directory`'s change index (``foldChangeIndexCommits``'s default).
    fileprivate static func appendToIndex(of directory: DataDirectory) -> @Sendable (ChangeLists) throws(StoreError) -> Bool {
        { (lists: ChangeLists) throws(StoreError) -> Bool in
            do throws(StorageError) {
                return try directory.appendToChangeIndex(lists)
            } catch {
                throw StoreError(error)
            }
        }
    }
}

/// One commit's lists appended on a thread of its own.
private final class BackgroundAppend: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let result = Mutex<Result<Bool, StoreError>?>(nil)

    init(_ lists: ChangeLists, _ append: @escaping @Sendable (ChangeLists) throws(StoreError) -> Bool) {
        // The thread's closure outlives the append by a moment (until the thread ends): it lets
        // go of the lists and of `append` (which holds the data directory) before it signals, or
        // a store closed and opened again at once would find its directory still open.
        let work = Mutex<(lists: ChangeLists, append: @Sendable (ChangeLists) throws(StoreError) -> Bool)?>((lists, append))
        Thread.startNamed("reel-idx-append") { [self] in
            if let (lists, append) = work.withLock({ $0.take() }) {
                let outcome = Result { () throws(StoreError) -> Bool in try append(lists) }
                result.withLock { $0 = outcome }
            }
            done.signal()
        }
    }

    /// Waits for the append to end: whether it appended, or what it threw.
    func outcome() throws(StoreError) -> Bool {
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
