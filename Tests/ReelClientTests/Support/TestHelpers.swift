import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol

/// Runs `body`, failing with ``TimedOut`` if it takes longer than `limit`: a test that waits for
/// updates that never come fails with a message instead of hanging.
func withDeadline<T: Sendable>(
    _ limit: Duration = .seconds(30), _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard case let value?? = try await group.next() else { throw TimedOut(what: what, limit: limit) }
        return value
    }
}

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var limit: Duration
    var description: String { "timed out after \(limit) waiting for \(what)" }
}

/// The error a call threw, as a `ReelClientError`, or `nil` when it did not throw.
func clientError<T>(_ body: () async throws(ReelClientError) -> T) async -> ReelClientError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

/// Stock-reducer actions the tests dispatch again and again.
enum Stock {
    static func set(_ path: String, _ value: JSONValue) -> Action {
        Action(type: "set", payload: ["path": .string(path), "value": value])
    }

    static func increment(_ path: String = "/n", by: Int64 = 1) -> Action {
        Action(type: "increment", payload: ["path": .string(path), "by": .int(by)])
    }

    static func append(_ path: String, _ value: JSONValue) -> Action {
        Action(type: "append", payload: ["path": .string(path), "value": value])
    }
}

/// A typed stock `set`, as an app's own action type would be.
struct SetValue: ActionPayload, Equatable {
    static let actionType = "set"
    var path: String
    var value: JSONValue
}

/// A typed stock `increment`.
struct Increment: ActionPayload, Equatable {
    static let actionType = "increment"
    var path: String
    var by: Int
}

/// The shape of the state the typed tests build.
struct Counter: Codable, Sendable, Equatable {
    var n: Int
}
