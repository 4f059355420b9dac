import Foundation

/// Waits until `condition` holds, checking it every few milliseconds, and throws ``WaitTimedOut``
/// naming `what` if it still does not hold after `timeout`: the synchronisation a test needs
/// instead of a sleep, which either waits too long or, on a loaded machine, not long enough.
public func waitUntil(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(20), _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what(), limit: timeout) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// A condition a test waited for did not come in time.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public var what: String
    public var limit: Duration
    public var description: String { "waited \(limit) for \(what)" }
}

/// ``waitUntil(_:timeout:_:)`` for code that runs on a thread of its own and may block it (a
/// test's own thread, an exit test's child): checks `condition` every millisecond.
public func blockUntil(_ what: @autoclosure () -> String, timeout: Duration = .seconds(20), _ condition: () throws -> Bool) throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what(), limit: timeout) }
        usleep(1_000)
    }
}
