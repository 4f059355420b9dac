// swift-tools-version: 6.1
// The fuzzers: one libFuzzer binary whose target (ReelFuzzTargets.FuzzTarget) is picked by
// REEL_FUZZ_TARGET. A package of its own because libFuzzer brings its own `main`, which would
// clash with the main package's executables. Build and run with Tools/Fuzz/run.
import PackageDescription

let package = Package(
    name: "ReelFuzz",
    dependencies: [
        .package(name: "Reel", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "reel-fuzz",
            dependencies: [.product(name: "ReelFuzzTargets", package: "Reel")],
            path: "Driver",
            // No top-level code: libFuzzer's main calls the entry points below.
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ]
)
