import Logging
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStore

/// Fills the ``UpdateFeed`` as commits come: one task for the whole server, off the write path
/// (the writer thread only wakes it; commits that come while it works are taken together).
/// Each step reads the new actions once, if an actions-mode subscriber wants them, and the state
/// at the newest seq once, if a value or patch subscriber does.
struct UpdateFeedProducer<State: StoreState>: Sendable {
    let feed: UpdateFeed
    let handler: MethodHandler<State>
    let logger: Logger

    /// Runs until the store closes or the task is cancelled.
    func run() async {
        let feed = self.feed, store = handler.store
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await _ in store.commits() { feed.poke() }
                feed.finish()
            }
            for await _ in feed.work {
                await step()
            }
        }
    }

    private func step() async {
        let snapshot = handler.store.snapshot
        let (after, wantsActions, paths, newPath) = feed.wants()
        guard snapshot.seq > after || newPath else { return }
        var pages: [UpdateFeed.ActionsPage]? = nil
        if wantsActions {
            do throws(RPCError) {
                pages = try await readPages(after: after, through: snapshot.seq)
            } catch {
                // Subscribers read from the log themselves then, and meet the error there.
                logger.warning("the update feed could not read seqs \(after + 1)...\(snapshot.seq): \(error.message)")
            }
        }
        var values: [JSONPointer: JSONValue] = [:]
        if !paths.isEmpty {
            do {
                let json = try snapshot.state.jsonValueOrThrow(seq: snapshot.seq)
                for path in paths { values[path] = json.value(at: path) ?? .null }
            } catch {
                logger.error("the update feed could not convert the state at \(snapshot.seq) to JSON: \(error.message)")
            }
        }
        feed.publish(seq: snapshot.seq, pages: pages, values: values)
    }

    private func readPages(after: UInt64, through last: UInt64) async throws(RPCError) -> [UpdateFeed.ActionsPage] {
        var pages: [UpdateFeed.ActionsPage] = []
        var next = after + 1
        while next <= last {
            let actions = try await handler.history(from: next, to: last, limit: 10_000).actions
            guard let final = actions.last, actions.first?.seq == next else {
                throw RPCError(code: RPCError.Code.internalError, message: "the log has no seq \(next) yet its latest is \(last)")
            }
            pages.append(UpdateFeed.ActionsPage(actions[...]))
            next = final.seq + 1
        }
        return pages
    }
}
