// swift-tools-version: 6.1
import PackageDescription

// Layers, each depending only on the ones above it:
//   CReelLMDB (C shim) → ReelLMDB (safe LMDB) ─┐
//   ReelJSON (JSON value, pointer, patch, diff) → ReelCore (actions, reducers) ─┤
//                                                  → ReelStorage (log, checkpoints on LMDB)
//                                                  → ReelStore (writer, recovery, timeline)
//   ReelProtocol (JSON-RPC messages of protocol version 1) depends on ReelJSON and ReelCore only.
//   ReelQuery (read methods answered from a Timeline) joins ReelStore and ReelProtocol; the server
//   and the tool answer through it and never reach into ReelStorage themselves.
// ReelJSON and ReelCore import neither LMDB nor any I/O, so they are usable and testable anywhere.
let package = Package(
    name: "Reel",
    products: [
        .library(name: "ReelCore", targets: ["ReelCore"]),
        .library(name: "ReelJSON", targets: ["ReelJSON"]),
        .library(name: "ReelStore", targets: ["ReelStore"]),
        .library(name: "ReelExamples", targets: ["ReelExamples"]),
        .library(name: "ReelProtocol", targets: ["ReelProtocol"]),
        .library(name: "ReelServer", targets: ["ReelServer"]),
        .library(name: "ReelDaemon", targets: ["ReelDaemon"]),
        .library(name: "ReelClient", targets: ["ReelClient"]),
        .library(name: "ReelTool", targets: ["ReelTool"]),
        .library(name: "ReelApp", targets: ["ReelApp"]),
        // For the tests `reel testgen` writes: a recorded slice of history replayed and checked.
        .library(name: "ReelTesting", targets: ["ReelTesting"]),
        // For the fuzzers of Tools/Fuzz (a package of their own, built with libFuzzer); not for apps.
        .library(name: "ReelFuzzTargets", targets: ["ReelFuzzTargets"]),
        .executable(name: "reeld", targets: ["reeld"]),
        .executable(name: "reel", targets: ["reel"]),
        .executable(name: "reel-rpg", targets: ["reel-rpg"]),
        .executable(name: "reel-todos", targets: ["reel-todos"]),
        .executable(name: "reel-paged-list", targets: ["reel-paged-list"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.1.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: [.defaults, "YAML"]),
        // 5.x does not satisfy swift-configuration's YAML trait; used directly to check config keys.
        .package(url: "https://github.com/jpsim/Yams.git", "5.4.0"..<"7.0.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0"),
        // ReelClient: a dispatch made inside a traced operation carries its W3C traceparent.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // `reeld --otlp-endpoint`: the daemon's spans to an OpenTelemetry collector (OTLP/HTTP only:
        // the gRPC exporter's dependencies would double the daemon's build).
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CReelLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // Named places in the write path where crash tests kill the process (armed by REEL_CRASH_POINT).
        .target(name: "ReelCrashPoints"),
        // Turns a fault inside an LMDB map (a damaged file LMDB could not tell) into a clear exit.
        .target(name: "CReelFaultGuard", dependencies: ["CReelLMDB"]),
        .target(name: "ReelLMDB", dependencies: ["CReelLMDB", "CReelFaultGuard", "ReelCrashPoints"]),
        // XXH3-64, the checksum on every stored record (Debian's libxxhash-dev).
        .systemLibrary(
            name: "CReelXXHash",
            pkgConfig: "libxxhash",
            providers: [.apt(["libxxhash-dev"])]
        ),
        // `Int64(exactly: Double)` needs libm's `trunc`, which nothing else links without Foundation.
        .target(name: "ReelJSON", linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        .target(name: "ReelCore", dependencies: ["ReelJSON"]),
        .target(
            name: "ReelStorage",
            dependencies: [
                "ReelLMDB", "ReelCore", "ReelJSON", "CReelXXHash", "ReelCrashPoints",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "ReelStore",
            dependencies: [
                "ReelStorage", "ReelCore", "ReelJSON", "ReelCrashPoints",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        .target(name: "ReelExamples", dependencies: ["ReelCore", "ReelJSON"]),
        // What a test written by `reel testgen` runs: a slice of history folded and checked step by
        // step. Depends on the reducers' modules only, so that an app's test target builds fast.
        .target(name: "ReelTesting", dependencies: ["ReelCore", "ReelJSON"]),
        .target(name: "ReelProtocol", dependencies: ["ReelJSON", "ReelCore"]),
        // Every read method answered from a Timeline, as protocol results: for the daemon and for
        // `reel --data-dir` alike. Engine errors get their wire codes here.
        .target(
            name: "ReelQuery",
            dependencies: [
                "ReelProtocol", "ReelStore", "ReelStorage", "ReelCore", "ReelJSON",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(name: "CReelSocket"),
        // Newline-delimited framing with a line limit, for both ends of the socket.
        .target(name: "ReelFraming", dependencies: [.product(name: "NIOCore", package: "swift-nio")]),
        .target(
            name: "ReelServer",
            dependencies: [
                "CReelSocket", "ReelFraming", "ReelProtocol", "ReelQuery", "ReelStore", "ReelCore", "ReelJSON", "ReelCrashPoints",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),

        // `reel ui`: the time-travel page (HTML, CSS, JavaScript resources) and its JSON API, served
        // by Hummingbird; only `reel` links it.
        .target(
            name: "ReelUI",
            dependencies: [
                "ReelProtocol", "ReelCore", "ReelJSON",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Resources")]
        ),
        // The daemon's metrics endpoint: a Prometheus registry served over HTTP (SwiftNIO's HTTP/1.1).
        .target(
            name: "ReelMetrics",
            dependencies: [
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `reeld --otlp-endpoint URL`: the tracer whose dispatch and commit spans swift-otel exports
        // over OTLP/HTTP; only the daemon's assembly links it.
        .target(
            name: "ReelTelemetry",
            dependencies: [
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `reeld --shared-log postgres://…`: the log's order kept in PostgreSQL (a SharedLog over
        // postgres-nio); only the daemon's assembly links it.
        .target(
            name: "ReelPostgresLog",
            dependencies: [
                "ReelStore", "ReelCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "ReelDaemon",
            dependencies: [
                "ReelStore", "ReelStorage", "ReelCore", "ReelJSON", "ReelProtocol", "ReelMetrics", "ReelServer", "ReelPostgresLog", "ReelClient", "ReelTelemetry",
                "CReelSocket", "ReelCrashPoints",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The client library for apps: async/await, pipelined, reconnecting with resumed subscriptions.
        .target(
            name: "ReelClient",
            dependencies: [
                "ReelFraming", "ReelProtocol", "ReelJSON", "ReelCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
        // Output for people: styles, tables, pretty JSON, diffs, progress bars.
        .target(name: "ReelConsole", dependencies: ["ReelJSON"]),
        // `reel`'s commands, live (ReelClient) or offline (ReelStore on a read-only data directory).
        .target(
            name: "ReelTool",
            dependencies: [
                "ReelClient", "ReelConsole", "ReelQuery", "ReelStore", "ReelStorage", "ReelProtocol", "ReelCore", "ReelJSON", "ReelUI", "ReelTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                // `reel bundle`'s files are gzip (zlib, through NIO's ByteBuffer).
                .product(name: "CompressNIO", package: "compress-nio"),
            ]
        ),
        // One call in an app's main: `serve` (the daemon) plus every `reel` command, for its reducers.
        .target(
            name: "ReelApp",
            dependencies: [
                "ReelTool", "ReelDaemon", "ReelStore", "ReelStorage", "ReelCore",
            ]
        ),
        // jemalloc (Debian's libjemalloc-dev, as Redis uses it) replaces glibc's malloc in the
        // daemon: 7% less CPU per dispatch at 50 clients, 4-6% more dispatches; and in the tool,
        // whose replays and imports decode on one thread and free on another: `reel import` of a
        // million actions 12% faster, `verify` and `replay` no slower (BENCHMARKS.md).
        .executableTarget(name: "reeld", dependencies: ["ReelDaemon", "ReelStore", "ReelStorage"], linkerSettings: [.linkedLibrary("jemalloc")]),
        .executableTarget(name: "reel", dependencies: ["ReelTool", "ReelStore", "ReelStorage"], linkerSettings: [.linkedLibrary("jemalloc")]),
        // The seeds of ReelExamples as runnable stores: `swift run reel-rpg serve`, `swift run reel-rpg get`.
        .executableTarget(name: "reel-rpg", dependencies: ["ReelApp", "ReelExamples"], linkerSettings: [.linkedLibrary("jemalloc")]),
        .executableTarget(name: "reel-todos", dependencies: ["ReelApp", "ReelExamples"], linkerSettings: [.linkedLibrary("jemalloc")]),
        .executableTarget(name: "reel-paged-list", dependencies: ["ReelApp", "ReelExamples"], linkerSettings: [.linkedLibrary("jemalloc")]),

        // Benchmarks print figures; they pass or fail nothing. Not a product: users never build it.
        // Run: swift run -c release reel-bench
        .executableTarget(
            name: "reel-bench",
            dependencies: [
                "ReelStore", "ReelStorage", "ReelCore", "ReelJSON", "ReelServer", "ReelFraming", "ReelProtocol", "ReelTool", "ReelConsole", "ReelClient",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tools/ReelBench"
        ),
        // Load on a running reeld, as redis-benchmark puts on Redis: Tools/vs-redis compares the two.
        .executableTarget(
            name: "reel-load",
            dependencies: [
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/ReelLoad"
        ),
        // Every parser of untrusted bytes as a function of one input; see Tools/Fuzz.
        .target(
            name: "ReelFuzzTargets",
            dependencies: [
                "ReelServer", "ReelFraming", "ReelProtocol", "ReelStorage", "ReelJSON", "ReelCore",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tools/FuzzTargets"
        ),
        .target(
            name: "ReelTestSupport",
            dependencies: [
                "ReelServer", "ReelFraming", "ReelProtocol", "ReelStore", "ReelLMDB", "ReelCore", "ReelJSON",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/ReelTestSupport"
        ),

        .testTarget(name: "ReelLMDBTests", dependencies: ["ReelLMDB", "CReelFaultGuard", "ReelTestSupport"]),
        .testTarget(
            name: "ReelPostgresLogTests",
            dependencies: ["ReelPostgresLog", "ReelStore", "ReelCore", "ReelTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "ReelJSONTests",
            dependencies: ["ReelJSON", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(name: "ReelCoreTests", dependencies: ["ReelCore", "ReelJSON"]),
        .testTarget(name: "ReelTestingTests", dependencies: ["ReelTesting", "ReelCore", "ReelJSON"]),
        .testTarget(
            name: "ReelDaemonTests",
            dependencies: [
                "ReelDaemon", "ReelStore", "ReelCore", "ReelJSON", "ReelProtocol", "ReelMetrics", "ReelTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ReeldTests",
            dependencies: ["reeld", "reel", "reel-rpg", "ReelProtocol", "ReelStorage", "ReelStore", "ReelCore", "ReelJSON", "ReelTestSupport"],
            // Run by path by ReelUIBrowserTests (python3, chromium), not built; it uses reel-rpg for namespaced types.
            exclude: ["Browser/ui_browser_test.py"]
        ),
        .testTarget(
            name: "ReelClientTests",
            dependencies: [
                "ReelClient", "reeld", "reel-rpg", "ReelExamples", "ReelServer", "ReelStore", "ReelProtocol", "ReelCore", "ReelJSON",
                "ReelTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(name: "ReelConsoleTests", dependencies: ["ReelConsole", "ReelJSON"]),
        .testTarget(
            name: "ReelToolTests",
            dependencies: [
                "ReelTool", "ReelApp", "reel", "reeld", "reel-rpg", "ReelDaemon", "ReelExamples", "ReelStore", "ReelStorage",
                "ReelProtocol", "ReelCore", "ReelJSON", "ReelConsole", "ReelTestSupport",
            ]
        ),
        // Replays every fuzz seed and every input that ever crashed (Tools/Fuzz/corpus).
        .testTarget(name: "ReelFuzzTargetsTests", dependencies: ["ReelFuzzTargets"]),
        .testTarget(
            name: "ReelFramingTests",
            dependencies: [
                "ReelFraming", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "ReelProtocolTests", dependencies: ["ReelProtocol", "ReelJSON", "ReelCore"]),
        .testTarget(
            name: "ReelQueryTests",
            dependencies: ["ReelQuery", "ReelProtocol", "ReelStore", "ReelCore", "ReelJSON", "ReelTestSupport"]
        ),
        .testTarget(
            name: "ReelServerTests",
            dependencies: [
                "ReelServer", "ReelFraming", "ReelProtocol", "ReelStore", "ReelStorage", "ReelCore", "ReelJSON", "ReelTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "ReelStorageTests",
            dependencies: ["ReelStorage", "ReelLMDB", "ReelCore", "ReelJSON", "ReelTestSupport"],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "ReelStoreTests",
            dependencies: [
                "ReelStore", "ReelStorage", "ReelCore", "ReelJSON", "ReelTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "ReelExamplesTests",
            dependencies: ["ReelExamples", "ReelStore", "ReelCore", "ReelJSON", "ReelTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
