import Foundation
import Logging
import ReelCore
import ReelDaemon
import ReelJSON
import ReelStore
import ReelTestSupport
import ServiceLifecycle
import Testing

@Suite(.timeLimit(.minutes(1)), .heavy) struct StoreServiceTests {
    @Test func gracefulShutdownClosesTheStoreWithACheckpoint() async throws {
        let dir = try TemporaryDirectory()
        let configuration = try await DaemonConfiguration.load(
            arguments: ["reeld", "--data-dir", dir.sub("data"), "--checkpoint-every", "0"], environment: [:]
        )
        let lock = try DataDirectoryLock.acquire(for: configuration)
        try await runAndShutDown(configuration)
        lock.release()

        var quiet = Logger(label: "test")
        quiet.logLevel = .warning
        let reopened = try await reopen(dir.sub("data"), logger: quiet)
        #expect(reopened.statistics.restoredFromCheckpoint == 5)
        #expect(reopened.statistics.replayedAtOpen == 0)
        #expect(reopened.snapshot.state == ["n": 5])
        await reopened.close()
    }

    /// Opens the store again. The closed store's LMDB environment is released when its last
    /// reference (the writer thread's, just after `close()` returns) goes away, so this retries
    /// a "busy" answer until then.
    func reopen(_ path: String, logger: Logger) async throws -> Store<JSONValue> {
        var reopened: Store<JSONValue>?
        try await waitUntil("the closed store's environment to be released (an open not refused as busy)") {
            let opened = Result { () throws(StoreError) in try Store(path: path, definition: .stock, logger: logger) }
            if case .failure(let error) = opened, error.message.hasSuffix("Device or resource busy") { return false }
            reopened = try opened.get()
            return true
        }
        return try #require(reopened)
    }

    /// Runs the service in a group, dispatches, shuts down; the store is released on return.
    func runAndShutDown(_ configuration: DaemonConfiguration) async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let service = try StoreService(configuration: configuration, logger: logger)
        let group = ServiceGroup(services: [service], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for i in 1...5 {
                let result = try await service.store.dispatch(Action(type: "set", payload: ["path": "/n", "value": .int(Int64(i))]))
                #expect(result.seq == UInt64(i))
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await #expect(throws: StoreError.self) { try await service.store.dispatch(Action(type: "set", payload: ["path": "/n", "value": 0])) }
        #expect(service.store.statistics.checkpointsWritten == 1)
        #expect(service.store.statistics.lastCheckpointSeq == 5)
    }

    @Test func anUnusableDataDirectoryIsAStartupError() async throws {
        let dir = try TemporaryDirectory()
        try "not lmdb".write(toFile: dir.sub("data.mdb"), atomically: true, encoding: .utf8)
        let configuration = try await DaemonConfiguration.load(arguments: ["reeld", "--data-dir", dir.path], environment: [:])
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let error = #expect(throws: StartupError.self) { try StoreService(configuration: configuration, logger: logger) }
        #expect(error?.description.hasPrefix("cannot open the store in \(dir.path): ") == true)
        #expect(error?.description.contains("\n") == false)
        #expect(error.map { $0.code == .incompatibleData || $0.code == .storage } == true)
    }
}
