import ReelClient
import ReelTestSupport

extension ServerHarness {
    /// Connects a client for `body` and closes it afterwards.
    func withClient<R: Sendable>(
        configuration: ReelClientConfiguration = .forTests, _ body: (ReelClient) async throws -> R
    ) async throws -> R {
        try await withReelClient(socketPath: socketPath, configuration: configuration, body)
    }
}

extension ReelClientConfiguration {
    /// Quick reconnection, so tests that drop connections do not wait for the default backoff.
    static var forTests: ReelClientConfiguration {
        ReelClientConfiguration(
            clientName: "reel-client-tests",
            reconnect: ReconnectPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), giveUpAfter: .seconds(30))
        )
    }
}
