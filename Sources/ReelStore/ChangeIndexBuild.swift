import Dispatch
import Foundation
import Logging
import ReelCore
import ReelStorage
import Synchronization

/// Brings the change index up to date on a thread of its own while the store serves: the first
/// open of a long log, or one whose index was built by another reducer version, does not wait
/// for it. Queries past the index replay meanwhile (``Timeline/changedSeqs(path:from:through:newestFirst:limit:)``).
///
/// The build folds the log that LMDB holds, in commits of its own that continue the index; the
/// journal's applier writes the writer's entries of each later commit only where they continue
/// it, so until the build catches up they are left out, and the build folds those actions from
/// the log too. Once its last commit reaches the log's end, the applier's next commit continues
/// the index and the build is done. Both write in LMDB transactions, one at a time: the index is
/// never ahead of the log, and a crash at any point leaves a shorter index the next open goes on
/// from.
public final class ChangeIndexBuild: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let running = DispatchGroup()

    private init() {}

    static func start<State: StoreState>(timeline: Timeline<State>, from indexed: UInt64, minimumPart: UInt64, logger: Logger) -> ChangeIndexBuild {
        let build = ChangeIndexBuild()
        build.running.enter()
        // The thread's closure outlives the build by a moment (until the thread ends): it holds
        // the timeline, so the data directory, only until the build returns, or a store closed
        // and opened again at once would find its directory still open.
        let lent = Mutex<Timeline<State>?>(timeline)
        Thread.startNamed("reel-idx-build") {
            if let timeline = lent.withLock({ $0.take() }) {
                build.run(timeline: timeline, from: indexed, minimumPart: minimumPart, logger: logger)
            }
            build.running.leave()
        }
        return build
    }

    /// Asks the build to stop (at the next 4,096 actions) and waits for it: what it committed
    /// stays, and the next open goes on from there.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        running.wait()
    }

    /// Waits until the index has caught up with the log (or the build stopped).
    public func wait() {
        running.wait()
    }

    private func run<State: StoreState>(timeline: Timeline<State>, from start: UInt64, minimumPart: UInt64, logger: Logger) {
        let directory = timeline.directory
        let started = ContinuousClock.now
        var indexed = start
        var lastReport = started
        do throws(StoreError) {
            var state = try timeline.state(at: indexed)
            let target = (try? directory.latestSeqInLMDB()) ?? 0
            let outcome = try timeline.foldChangeIndexCommits(
                after: indexed, state: &state, commitSize: ChangeIndexer<State>.catchUpCommitSize, minimumPart: minimumPart,
                latest: { () throws(StoreError) -> UInt64 in
                    do throws(StorageError) { return try directory.latestSeqInLMDB() } catch { throw StoreError(error) }
                },
                progress: { reached in
                    let now = ContinuousClock.now
                    guard now - lastReport >= .seconds(2) else { return }
                    lastReport = now
                    logger.info("building the change index in the background: seq \(reached) of \(max(target, reached))")
                },
                stop: { self.stopping.load(ordering: .relaxed) }
            )
            // Ended early when an append was refused: the index moved, which only the applier's
            // continuing entries do (the build has caught up).
            indexed = outcome.through
            if !stopping.load(ordering: .relaxed) {
                logger.info("change index brought up to date", metadata: ["through": "\(indexed)", "took": "\(ContinuousClock.now - started)"])
            }
        } catch {
            logger.error("the change index stays behind until the store is opened again: \(error.message)")
        }
    }
}
