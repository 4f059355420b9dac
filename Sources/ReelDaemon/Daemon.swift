#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import NIOCore
import NIOPosix
import ReelCore
import ReelCrashPoints
import ReelMetrics
import ReelPostgresLog
import ReelProtocol
import ReelServer
import ReelStorage
import ReelStore
import ReelTelemetry
import ServiceLifecycle
import Tracing

/// Runs the daemon for a store definition: the stock `reeld`, and the `serve` command of every
/// app built with `ReelApp`.
///
/// Settings come from flags, `REEL_*` environment variables and a config file (see `reeld --help`
/// and ops/reeld.example.yaml). It runs until SIGTERM or SIGINT, then stops accepting, answers
/// what it has read, finishes in-flight commits, writes a checkpoint and returns 0. When it cannot
/// start it prints one line saying why and returns a sysexits status.
public enum Daemon {
    /// Runs the daemon to its end and returns the process's exit status.
    ///
    /// - Parameters:
    ///   - definition: The store's reducers, middleware and initial state.
    ///   - arguments: The command line, starting with the program's name.
    ///   - environment: The process environment (`REEL_*` settings, systemd's variables).
    public static func run<State: StoreState>(
        _ definition: StoreDefinition<State>, arguments: [String], environment: [String: String]
    ) async -> Int32 {
        let name = URL(fileURLWithPath: arguments.first ?? "reeld").lastPathComponent
        do {
            return try await serve(definition, arguments: arguments, environment: environment)
        } catch let error as StartupError {
            if error.code == .helpRequested {
                print(error.requestedOutput ?? DaemonConfiguration.helpText)
                return 0
            }
            FileHandle.standardError.write(Data("\(name): \(error)\n".utf8))
            return error.code.exitStatus
        } catch {
            FileHandle.standardError.write(Data("\(name): \(error)\n".utf8))
            return 1
        }
    }

    /// The daemon's life, step by step; each step is a function of its own below.
    ///
    /// - Returns: 0 after a graceful shutdown; the status of the detached daemon's start when this
    ///   process only started it (a take-over run as systemd's `ExecReload=`).
    private static func serve<State: StoreState>(
        _ definition: StoreDefinition<State>, arguments: [String], environment: [String: String]
    ) async throws -> Int32 {
        let configuration = try await DaemonConfiguration.load(arguments: arguments, environment: environment)
        if configuration.takeOver, let status = TakeOver.runDetached(arguments: arguments, environment: environment) {
            return status
        }
        let program = URL(fileURLWithPath: arguments.first ?? "reeld").lastPathComponent
        let logger = startLogging(configuration, program: program)
        let notifier = SystemdNotifier(environment: environment)
        // A take-over receives the socket of the daemon it replaces, which systemd may have made.
        let takeOver = configuration.takeOver
            ? try await TakeOver.prepare(definition, configuration: configuration, notifier: notifier, logger: logger) : nil
        let activation = takeOver == nil ? try adoptSystemdSocket(environment: environment, logger: logger) : nil
        // Order matters: the lock proves no other daemon uses this data; only then may a stale
        // socket be judged and removed, and the store be opened.
        let lock = try takeOver?.lock ?? DataDirectoryLock.acquire(for: configuration)
        // A start refused before serving leaves the directory as it found it.
        var serving = false
        defer {
            if !serving { lock.abandon() }
            lock.release()
        }
        let placement = SocketPlacement(configuration: configuration)
        if activation == nil && takeOver == nil { _ = try placement.prepare() }
        let metrics = configuration.metrics.map { _ in
            DaemonMetrics(maxMapSize: configuration.maxMapSize, sharedLog: configuration.sharedLog != nil)
        }
        let traces = try configuration.otlpEndpoint.map { url throws(StartupError) in
            try Self.traceExport(to: url, serviceName: program, configuration: configuration, logger: logger)
        }
        let sharedLog = try configuration.sharedLog.map { url throws(StartupError) in try Self.openSharedLog(url, configuration: configuration, logger: logger) }
        defer { sharedLog?.close() }
        // Taking over from a daemon that fed systemd's watchdog, this one feeds it in its place.
        var environment = environment
        if let micros = takeOver?.watchdogMicroseconds {
            environment["WATCHDOG_USEC"] = String(micros)
            environment["WATCHDOG_PID"] = String(getpid())
        }
        let handOver = HandOver(watchdogMicroseconds: SystemdWatchdog.microseconds(environment: environment))
        let storeService = try await openStore(
            definition, configuration: configuration, metrics: metrics, sharedLog: sharedLog, tracer: traces?.tracer, notifier: notifier,
            logger: logger, continuing: takeOver?.folded, handOver: handOver
        )
        // SwiftNIO's shared group (one loop per core) unless a count is set; a group of our own
        // is shut down once the services have stopped.
        let ownLoops = configuration.eventLoops.map { MultiThreadedEventLoopGroup(numberOfThreads: $0) }
        let socketServer = makeServer(
            configuration, store: storeService.store, listener: activation.map { ($0.path, $0.descriptor) } ?? takeOver.map { (configuration.socketPath, $0.listener) },
            placement: placement, metrics: metrics, tracer: traces?.tracer, notifier: notifier, eventLoops: ownLoops, handOver: handOver,
            takingOver: takeOver != nil ? environment : nil, logger: logger
        )
        var services = try await makeServices(
            configuration, store: storeService, server: socketServer, metrics: metrics, notifier: notifier,
            environment: environment, handOver: handOver, logger: logger
        )
        // First, so that it stops last: the spans of the final dispatches and commits are sent.
        if let traces { services.insert(.init(service: traces.service), at: 0) }
        logger.info("starting", metadata: configuration.loggingMetadata.merging(["reducer": "\(definition.identity)"]) { $1 })
        if takeOver != nil {
            CrashPoint.takeOverServing.reach()
            preallocateJournalLater(storeService.store, to: configuration.storeOptions.storage.journalPreallocation, logger: logger)
        }
        // The socket's file is the daemon's that took over, after a hand-over.
        defer { if activation == nil && !handOver.isHandingOver { placement.removeSocket() } }
        serving = true
        do {
            try await run(services, handOver: handOver, logger: logger)
        } catch {
            _ = notifier.stopping(status: "failed: \(error)")
            try? await ownLoops?.shutdownGracefully()
            throw error
        }
        try? await ownLoops?.shutdownGracefully()
        _ = notifier.stopping()
        logger.info("stopped")
        return 0
    }

    /// Writes the journal's space on a thread of its own, a few MiB at a time beside the writer.
    private static func preallocateJournalLater<State: StoreState>(_ store: Store<State>, to size: Int, logger: Logger) {
        let directory = store.directory
        Thread.startNamed("reel-prealloc") {
            do throws(StorageError) {
                try directory.preallocateJournal(to: size)
            } catch {
                logger.warning("the journal's space is left to grow as it is needed: \(error.message)")
            }
        }
    }

    /// Logs go to standard error at the configured level, labelled with the program's name (`reeld`,
    /// or an app's own, such as `reel-rpg`).
    private static func startLogging(_ configuration: DaemonConfiguration, program: String) -> Logger {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = configuration.logLevel
            return handler
        }
        return Logger(label: program)
    }

    /// A socket passed by systemd (ops/reeld.socket) is served as it is: systemd made it, set its
    /// mode and owns its file.
    private static func adoptSystemdSocket(environment: [String: String], logger: Logger) throws(StartupError) -> SocketActivation? {
        let activation = try SocketActivation.adopt(environment: environment)
        if let activation {
            logger.info("serving the socket systemd passed", metadata: ["socket": "\(activation.path)"])
        }
        return activation
    }

    /// Opens the store (replaying what its checkpoints do not cover) and, with a shared log,
    /// makes first contact with it: a copy that disagrees with the log is refused here.
    private static func openStore<State: StoreState>(
        _ definition: StoreDefinition<State>, configuration: DaemonConfiguration, metrics: DaemonMetrics?,
        sharedLog: PostgresSharedLog?, tracer: (any Tracer)?, notifier: SystemdNotifier, logger: Logger,
        continuing folded: FoldedState<State>?, handOver: HandOver
    ) async throws -> StoreService<State> {
        var storeOptions = configuration.storeOptions
        if let metrics { storeOptions.metrics = metrics.factory }
        storeOptions.tracer = tracer
        // Taking over, clients wait while the store opens: the journal's space is written once
        // it serves (``preallocateJournalLater``), not now.
        if folded != nil {
            storeOptions.storage.journalPreallocation = 1 << 20
            storeOptions.changeIndexMayDelayOpen = false
        }
        // A long replay at open (a new reducer version replays the whole log): say how far it got,
        // and keep systemd's start timeout from running out while it progresses.
        storeOptions.openProgress = { reached, latest in
            notifier.notify(["STATUS=opening: replaying the log, seq \(reached) of \(latest)", "EXTEND_TIMEOUT_USEC=10000000"])
        }
        storeOptions.sharedLog = sharedLog
        let storeService = try StoreService(
            configuration: configuration, definition: definition, options: storeOptions, logger: logger, continuing: folded, handOver: handOver
        )
        guard let status = await storeService.store.sharedLogFirstContact() else { return storeService }
        if let refusal = status.refusal {
            await storeService.store.close()
            throw StartupError(.incompatibleData, refusal)
        }
        if status.reachable != true {
            logger.warning("the shared log is unreachable at start: serving reads from this node's copy, refusing dispatches (1010) until it is back", metadata: ["sharedLog": "\(status.location)", "error": "\(status.lastError ?? "")"])
        } else {
            logger.info("following the shared log", metadata: ["sharedLog": "\(status.location)", "latest": "\(status.latestSeq)", "seq": "\(storeService.store.snapshot.seq)"])
        }
        return storeService
    }

    /// The socket server with the configured limits and access policy; systemd hears it is ready
    /// once the socket is bound.
    ///
    /// - Parameter listener: A listening socket to serve as it is (systemd's, or the one a
    ///   take-over received), with its path; `nil`: bind the configured path.
    private static func makeServer<State: StoreState>(
        _ configuration: DaemonConfiguration, store: Store<State>, listener: (path: String, descriptor: CInt)?, placement: SocketPlacement,
        metrics: DaemonMetrics?, tracer: (any Tracer)?, notifier: SystemdNotifier, eventLoops: MultiThreadedEventLoopGroup?,
        handOver: HandOver, takingOver environment: [String: String]?, logger: Logger
    ) -> ReelServer<State> {
        var server = ServerConfiguration(socketPath: listener?.path ?? configuration.socketPath)
        server.adoptedSocket = listener?.descriptor
        server.handOver = handOver
        server.limits.maxLineLength = configuration.maxLineBytes
        server.limits.maxConnections = configuration.maxConnections
        server.limits.maxSubscriptionsPerConnection = configuration.maxSubscriptionsPerConnection
        server.limits.midLineTimeout = TimeAmount(configuration.idleTimeout)
        if let metrics { server.metrics = metrics.factory }
        server.tracer = tracer
        server.onBound = { path in
            if listener == nil { try placement.applySocketPermissions(path: path) }
            if let environment {
                // Taking over, this process becomes the unit's main one (`NotifyAccess=all`).
                _ = notifier.notify(["MAINPID=\(getpid())", "READY=1", "STATUS=serving \(path)"])
                TakeOver.reportServing(environment: environment)
                return
            }
            _ = notifier.ready(status: "serving \(path)")
        }
        let policy = configuration.accessPolicy
        return ReelServer(
            configuration: server, store: store,
            authorize: { permission, peer in
                let operation: AccessPolicy.Operation = switch permission {
                case .read: .read
                case .dispatch: .dispatch
                case .admin: .admin
                }
                return policy.allows(operation, uid: peer.uid, gid: peer.gid)
            },
            eventLoopGroup: eventLoops ?? MultiThreadedEventLoopGroup.singleton,
            logger: logger
        )
    }

    /// The services, in start order: the store first (services stop in reverse order, so the
    /// server drains its connections before the store closes), the server, systemd's watchdog,
    /// and the metrics endpoint when one is configured.
    private static func makeServices<State: StoreState>(
        _ configuration: DaemonConfiguration, store storeService: StoreService<State>, server: ReelServer<State>,
        metrics: DaemonMetrics?, notifier: SystemdNotifier, environment: [String: String], handOver: HandOver, logger: Logger
    ) async throws -> [ServiceGroupConfiguration.ServiceConfiguration] {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: storeService), .init(service: server)]
        let store = storeService.store
        let figures = server.figures
        services.append(.init(service: SystemdWatchdog(
            notifier: notifier, environment: environment, logger: logger,
            probe: { await store.probeWriter() },
            status: { Self.statusLine(seq: store.snapshot.seq, server: figures.snapshot(), takeOver: handOver.progress) }
        )))
        guard let metrics, let address = configuration.metrics else { return services }
        do {
            let endpoint = try await PrometheusEndpoint.listen(on: address, registry: metrics.registry, logger: logger) {
                metrics.sample(store: store.statistics, usage: store.timeline.directory.mapUsage, server: figures.snapshot(), takeOver: handOver.progress)
            }
            services.append(.init(service: endpoint))
        } catch {
            let source = configuration.sources["metrics"] ?? .builtInDefault
            if let io = error as? IOError, io.errnoCode == EADDRINUSE {
                throw StartupError(.socketInUse, "metrics \(address) from \(source) is in use by another process: choose another address")
            }
            throw StartupError(.invalidSetting, "metrics \(address) from \(source) cannot be served: \(error)")
        }
        return services
    }

    /// Runs the services until SIGTERM or SIGINT, or a hand-over to a daemon taking over, then
    /// stops them in reverse order.
    private static func run(_ services: [ServiceGroupConfiguration.ServiceConfiguration], handOver: HandOver, logger: Logger) async throws {
        var groupConfiguration = ServiceGroupConfiguration(
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // A peer that never reads could hold a connection's last write forever: after this long,
        // the remaining services are cancelled (the store still closes and checkpoints when
        // cancelled, see StoreService).
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(10)
        let group = ServiceGroup(configuration: groupConfiguration)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                for await _ in handOver.requests {
                    logger.info("handing over to the daemon taking over: stopping")
                    await group.triggerGracefulShutdown()
                }
            }
            // The service group ends first; the wait for a hand-over goes with it.
            try await tasks.next()
            tasks.cancelAll()
        }
    }

    private static func openSharedLog(_ url: String, configuration: DaemonConfiguration, logger: Logger) throws(StartupError) -> PostgresSharedLog {
        do {
            return try PostgresSharedLog(url: url, logger: logger)
        } catch {
            let source = configuration.sources["shared-log"] ?? .builtInDefault
            throw StartupError(.invalidSetting, "shared-log from \(source): \(error.message)")
        }
    }

    private static func traceExport(
        to url: String, serviceName: String, configuration: DaemonConfiguration, logger: Logger
    ) throws(StartupError) -> TraceExport {
        do {
            return try TraceExport(endpoint: url, serviceName: serviceName, logger: logger)
        } catch {
            let source = configuration.sources["otlp-endpoint"] ?? .builtInDefault
            throw StartupError(.invalidSetting, "otlp-endpoint from \(source): \(error)")
        }
    }

    /// systemd's status line: `seq 42, 3 connections, 1 subscription`, and while another daemon
    /// prepares to take this one over, how far its fold got.
    static func statusLine(seq: UInt64, server: ServerFigures.Snapshot, takeOver: TakeOverProgressReport? = nil) -> String {
        func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        let subscriptions = server.subscriptions.values.reduce(0, +)
        let line = "seq \(seq), \(count(server.connections, "connection")), \(count(subscriptions, "subscription"))"
        guard let takeOver else { return line }
        return line + "; \(takeOver.reducer) taking over: " + TakeOverProgressReport.describe(takeOver)
    }
}
