import Foundation
import ReelLMDB
import Synchronization

/// Runs `body` with a fresh, empty directory that is removed afterwards, whatever happens.
func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("reel-lmdb-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url.path)
}

/// The async flavour, for tests that await an exit test.
func withTemporaryDirectory<R>(_ body: (String) async throws -> R) async throws -> R {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("reel-lmdb-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url.path)
}

/// Options for tests that do not measure durability: small and fast.
func testOptions(mapSize: Int = 1 << 20, maxMapSize: Int = 1 << 30, readOnly: Bool = false)
    -> LMDBEnvironment.Options
{
    LMDBEnvironment.Options(mapSize: mapSize, maxMapSize: maxMapSize, readOnly: readOnly, durability: .noSync)
}

/// UTF-8 bytes of a string, as keys and values.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A copy of lent bytes, to compare them after the closure.
func copy(_ span: RawSpan) -> [UInt8] {
    span.withUnsafeBytes { Array($0) }
}

/// A value whose every byte depends on `seed`, so a value read back can be checked completely.
func patternValue(_ seed: Int, count: Int) -> [UInt8] {
    // Filled through a buffer: debug builds make `map` over thousands of bytes slow.
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        let start = seed &* 31
        for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: start &+ index) }
        initialized = count
    }
}

/// Runs `count` bodies on their own OS threads (not a pool) and waits for all of them.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        let thread = Thread {
            body(index)
            done.leave()
        }
        thread.start()
    }
    done.wait()
}

/// For exit-test children: a failed check ends the child with a message the parent can show.
func childRequire(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        FileHandle.standardError.write(Data("child check failed: \(message())\n".utf8))
        exit(1)
    }
}

/// For exit-test children expected to trap: if they are still alive after `seconds` (for example
/// deadlocked instead of trapping), end them with success so the parent's expectation fails. The
/// sleep is a deadline for a hang (the thing under test: a trap, not a deadlock), not a wait for
/// anything; a child reaches its trap well within it even on a busy machine.
func exitSuccessfullyAfter(seconds: UInt32) {
    Thread.detachNewThread {
        sleep(seconds)
        FileHandle.standardError.write(Data("watchdog: no trap within \(seconds) s\n".utf8))
        exit(0)
    }
}

/// Thread-safe list of problems seen by background threads, checked by the test afterwards.
final class Problems: Sendable {
    private let list = Mutex<[String]>([])
    func record(_ problem: String) { list.withLock { $0.append(problem) } }
    var all: [String] { list.withLock { $0 } }
}
