import Logging
import ReelCore
import ReelCrashPoints
import ReelJSON
import ReelServer
import ReelStorage
import ReelStore
import ServiceLifecycle

/// The store as a swift-service-lifecycle `Service`: it owns the ``Store`` for the daemon's life
/// and closes it at graceful shutdown.
///
/// Put it first in the `ServiceGroup`, before the socket server: the group shuts services down in
/// reverse order, so the server stops accepting and drains its connections first, and only then
/// does ``run()`` close the store, which finishes the commits in flight, writes a checkpoint and
/// closes LMDB. Cancellation (a second signal, or the group's shutdown timeout) closes it the
/// same way.
///
/// ```swift
/// let group = ServiceGroup(configuration: .init(
///     services: [.init(service: storeService), .init(service: server)],
///     gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
/// try await group.run()
/// ```
public final class StoreService<State: StoreState>: Service, Sendable {
    /// The store, open from `init` until ``run()`` closes it at shutdown.
    public let store: Store<State>
    private let logger: Logger
    /// The daemon's side of a take-over: when one has started, the store closes without its
    /// shutdown checkpoint (the newer daemon waits for the directory meanwhile).
    private let handOver: HandOver?

    /// Takes over an open store.
    public init(store: Store<State>, logger: Logger, handOver: HandOver? = nil) {
        self.store = store
        self.logger = logger
        self.handOver = handOver
    }

    /// Opens the store on the configured data directory with the configured checkpoint interval
    /// and map size limit (``DaemonConfiguration/storeOptions``, unless `options` are given). Take
    /// the ``DataDirectoryLock`` first.
    ///
    /// - Throws: ``StartupError`` `.incompatibleData` (another format or reducer, damaged data, a
    ///   log holding actions the reducers cannot read) or
    ///   `.storage` (unreadable, permission denied), with the store's reason.
    public convenience init(
        configuration: DaemonConfiguration, definition: StoreDefinition<State>, options: StoreOptions? = nil, logger: Logger,
        continuing folded: FoldedState<State>? = nil, handOver: HandOver? = nil
    ) throws(StartupError) {
        let store: Store<State>
        do {
            store = try Store(
                path: configuration.dataDirectory, definition: definition, options: options ?? configuration.storeOptions, logger: logger,
                continuing: folded
            )
        } catch {
            let storage = error.underlying as? StorageError
            let incompatible = storage?.code == .incompatible || storage?.code == .corrupt || error.code == .unreadableHistory
            let code: StartupError.Code = incompatible ? .incompatibleData : .storage
            throw StartupError(code, "cannot open the store in \(configuration.dataDirectory): \(error.message)", underlying: error)
        }
        self.init(store: store, logger: logger, handOver: handOver)
    }

    /// Waits for graceful shutdown (or cancellation), then closes the store.
    public func run() async throws {
        // Throws only on cancellation, which ends the wait just the same.
        try? await gracefulShutdown()
        if handOver?.isHandingOver == true {
            CrashPoint.handOverClosing.reach()
            logger.info("closing the store for the daemon taking over: finishing commits in flight")
            await store.close(writingCheckpoint: false)
        } else {
            logger.info("closing the store: finishing commits in flight, writing a checkpoint")
            await store.close()
        }
        logger.info("store closed", metadata: ["seq": "\(store.snapshot.seq)"])
    }
}

extension StoreService where State == JSONValue {
    /// Opens the stock store (one JSON document changed by mutations), as the stock `reeld` runs it.
    public convenience init(configuration: DaemonConfiguration, logger: Logger) throws(StartupError) {
        try self.init(configuration: configuration, definition: .stock, logger: logger)
    }
}
