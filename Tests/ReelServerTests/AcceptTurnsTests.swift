import NIOCore
import NIOPosix
import ReelJSON
import ReelTestSupport
import Testing

@testable import ReelServer

/// Each event loop accepts and serves its own connections, taking turns at listening
/// (`AcceptTurns`): long-lived connections spread over the loops, every one is served, and one
/// loop listens at a time.
@Suite(.timeLimit(.minutes(1)), .heavy) struct AcceptTurnsTests {
    @Test func connectionsOpenTogetherSpreadOverTheLoopsAndAreAllServed() async throws {
        try await withEventLoops(2) { group in
            let connections = 24
            try await ServerHarness.run(eventLoopGroup: group) { server throws in
                let allOpen = Rendezvous(count: connections)
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    for n in 1...connections {
                        tasks.addTask {
                            try await server.connect { connection throws in
                                let answer = try await connection.request(
                                    1, "dispatch", Params.set("/c\(n)", .int(Int64(n))))
                                #expect(answer["result"]?["seq"] != nil, "\(answer)")
                                await allOpen.arriveAndWait()  // every connection open at once
                            }
                        }
                    }
                    try await tasks.waitForAll()
                }
                let turns = try #require(server.figures.acceptTurns)
                let accepted = turns.acceptedByLoop
                #expect(accepted.count == 2)
                #expect(accepted.reduce(0, +) == connections)
                // A loop hands the turn on once it has `slack` more open than the other, checked
                // after each read of at most four accepts.
                #expect(accepted.max()! - accepted.min()! <= AcceptTurns.slack + 4, "\(accepted)")
                #expect(try await turns.listening().filter { $0 }.count == 1)
                #expect(server.store.snapshot.seq == UInt64(connections))
            }
        }
    }

    @Test func shortConnectionsOneAfterAnotherAreAllServed() async throws {
        try await withEventLoops(2) { group in
            try await ServerHarness.run(eventLoopGroup: group) { server throws in
                for n in 1...40 {
                    try await server.connect { connection throws in
                        #expect(try await connection.request(n, "get", ["path": ""])["id"] == .int(Int64(n)))
                    }
                }
                let turns = try #require(server.figures.acceptTurns)
                #expect(turns.acceptedByLoop.reduce(0, +) == 40)
                #expect(try await turns.listening().filter { $0 }.count == 1)
            }
        }
    }

    @Test func aSingleLoopListensAlone() async throws {
        try await withEventLoops(1) { group in
            try await ServerHarness.run(eventLoopGroup: group) { server throws in
                for n in 1...6 {
                    try await server.connect { connection throws in
                        #expect(
                            try await connection.request(1, "dispatch", Params.set("/n", .int(Int64(n))))[
                                "result"] == ["seq": .int(Int64(n))])
                    }
                }
                let turns = try #require(server.figures.acceptTurns)
                #expect(turns.acceptedByLoop == [6])
                #expect(try await turns.listening() == [true])
            }
        }
    }
}

/// Runs `body` with an event loop group of `threads` loops, shut down afterwards.
private func withEventLoops(_ threads: Int, _ body: (any EventLoopGroup) async throws -> Void)
    async throws
{
    let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
    do {
        try await body(group)
    } catch {
        try? await group.shutdownGracefully()
        throw error
    }
    try await group.shutdownGracefully()
}

/// Lets `count` tasks wait until all of them have arrived.
private actor Rendezvous {
    private let count: Int
    private var arrived = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { self.count = count }

    func arriveAndWait() async {
        arrived += 1
        if arrived == count {
            for continuation in waiting { continuation.resume() }
            waiting = []
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }
}
