import Foundation
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// `reeld --otlp-endpoint`: the spans of dispatches and commits reach an OpenTelemetry collector
/// over OTLP/HTTP (JSON here, to read them back), each dispatch a child of the span its meta's
/// `traceparent` names, so that a trace crosses from the app into the store.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct TraceExportTests {
    static let sampledTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let sampledParent = "00f067aa0ba902b7"
    static let unsampledTrace = "5bf92f3577b34da6a3ce929d0e0e4737"
    static let refusedTrace = "6bf92f3577b34da6a3ce929d0e0e4738"

    /// A span as the exporter posted it, its ids as hex.
    struct ExportedSpan {
        var name: String
        var kind: Int64?
        var traceID: String
        var spanID: String
        var parentSpanID: String?
        var attributes: JSONObject
        var statusCode: Int64?
        var links: [(traceID: String, spanID: String)]
        var service: String?
    }

    /// OTLP/JSON writes ids as hex; protobuf's JSON mapping (which swift-otel's encoder follows)
    /// as base64: either becomes hex.
    static func hex(_ id: String?) -> String? {
        guard let id, !id.isEmpty else { return nil }
        if id.count == 32 || id.count == 16, id.allSatisfy(\.isHexDigit) { return id.lowercased() }
        guard let bytes = Data(base64Encoded: id) else { return id }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    static func spans(in posts: [OTLPCollector.Post]) throws -> [ExportedSpan] {
        var spans: [ExportedSpan] = []
        for post in posts where post.path == "/v1/traces" {
            let document = try JSONValue(parsing: [UInt8](post.body))
            for resource in document["resourceSpans"]?.arrayValue ?? [] {
                let service = (resource["resource"]?["attributes"]?.arrayValue ?? [])
                    .first { $0["key"] == "service.name" }?["value"]?["stringValue"]?.stringValue
                for scope in resource["scopeSpans"]?.arrayValue ?? [] {
                    for span in scope["spans"]?.arrayValue ?? [] {
                        var attributes: JSONObject = [:]
                        for attribute in span["attributes"]?.arrayValue ?? [] {
                            guard let key = attribute["key"]?.stringValue, let value = attribute["value"] else { continue }
                            // {"intValue": "1"} (int64 as a string), {"stringValue": "x"}, {"boolValue": true}
                            if let text = value["intValue"]?.stringValue, let number = Int64(text) {
                                attributes[key] = .int(number)
                            } else if let number = value["intValue"]?.intValue {
                                attributes[key] = .int(number)
                            } else {
                                attributes[key] = value["stringValue"] ?? value["boolValue"] ?? value
                            }
                        }
                        spans.append(ExportedSpan(
                            name: span["name"]?.stringValue ?? "",
                            kind: span["kind"]?.intValue,
                            traceID: hex(span["traceId"]?.stringValue) ?? "",
                            spanID: hex(span["spanId"]?.stringValue) ?? "",
                            parentSpanID: hex(span["parentSpanId"]?.stringValue),
                            attributes: attributes,
                            statusCode: span["status"]?["code"]?.intValue,
                            links: (span["links"]?.arrayValue ?? []).map {
                                (hex($0["traceId"]?.stringValue) ?? "", hex($0["spanId"]?.stringValue) ?? "")
                            },
                            service: service
                        ))
                    }
                }
            }
        }
        return spans
    }

    static func dispatch(_ type: String, _ payload: JSONValue, trace: String, flags: String = "01") -> JSONValue {
        ["action": ["type": .string(type), "payload": payload], "meta": ["traceparent": .string("00-\(trace)-\(sampledParent)-\(flags)")]]
    }

    @Test func dispatchAndCommitSpansReachTheCollector() async throws {
        let collector = try await OTLPCollector.start()
        defer { Task { await collector.stop() } }
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"),
            extraArguments: ["--otlp-endpoint", "http://127.0.0.1:\(collector.port)"],
            environment: ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json", "OTEL_BSP_SCHEDULE_DELAY": "100"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            let sampled = try await connection.request(1, "dispatch", Self.dispatch("set", ["path": "/a", "value": 1], trace: Self.sampledTrace))
            #expect(sampled["result"]?["seq"] == 1, "\(sampled)")
            // The caller did not sample its trace: neither does the daemon (parent-based sampling).
            let unsampled = try await connection.request(
                2, "dispatch", Self.dispatch("set", ["path": "/b", "value": 2], trace: Self.unsampledTrace, flags: "00")
            )
            #expect(unsampled["result"]?["seq"] == 2, "\(unsampled)")
            let refused = try await connection.request(3, "dispatch", Self.dispatch("no-such-type", nil, trace: Self.refusedTrace))
            #expect(refused["error"]?["code"] == .int(Int64(RPCError.Code.unknownActionType)), "\(refused)")
            // No traceparent: a trace of the daemon's own.
            let untraced = try await connection.request(4, "dispatch", Params.dispatch("increment", ["path": "/a"]))
            #expect(untraced["result"]?["seq"] == 3, "\(untraced)")
        }
        // The exporter flushes what it holds when the daemon stops.
        #expect(try await daemon.stop() == 0)
        try await waitUntil("the spans of the traced dispatch and its commit") {
            let spans = try Self.spans(in: collector.received)
            return spans.contains { $0.name == "commit" && $0.traceID == Self.sampledTrace }
                && spans.contains { $0.name == "dispatch" && $0.traceID == Self.refusedTrace }
                && spans.filter { $0.name == "dispatch" }.count >= 3
        }
        let spans = try Self.spans(in: collector.received)

        let dispatch = try #require(spans.first { $0.name == "dispatch" && $0.traceID == Self.sampledTrace })
        #expect(dispatch.parentSpanID == Self.sampledParent)
        #expect(dispatch.kind == 2, "SPAN_KIND_SERVER")
        #expect(dispatch.service == "reeld")
        #expect(dispatch.attributes["rpc.system"] == "jsonrpc")
        #expect(dispatch.attributes["rpc.method"] == "dispatch")
        #expect(dispatch.attributes["reel.action.type"] == "set")
        #expect(dispatch.attributes["reel.seq.first"] == 1)
        #expect(dispatch.attributes["reel.seq.last"] == 1)
        #expect(dispatch.attributes["reel.peer.pid"] == .int(Int64(getpid())))
        #expect(dispatch.statusCode == nil || dispatch.statusCode == 0)

        let commit = try #require(spans.first { $0.name == "commit" && $0.traceID == Self.sampledTrace })
        #expect(commit.parentSpanID == dispatch.spanID, "a lone dispatch's commit is its child")
        #expect(commit.links.contains { $0.traceID == Self.sampledTrace && $0.spanID == dispatch.spanID })
        #expect(commit.attributes["reel.seq.first"] == 1)
        #expect(commit.attributes["reel.commit.actions"] == 1)

        #expect(!spans.contains { $0.traceID == Self.unsampledTrace }, "an unsampled trace is not exported")

        let refused = try #require(spans.first { $0.name == "dispatch" && $0.traceID == Self.refusedTrace })
        #expect(refused.statusCode == 2, "STATUS_CODE_ERROR")
        #expect(refused.attributes["rpc.jsonrpc.error_code"] == .int(Int64(RPCError.Code.unknownActionType)))
        #expect(refused.attributes["reel.seq.first"] == nil)

        let own = spans.filter { $0.name == "dispatch" && $0.parentSpanID == nil }
        #expect(own.contains { $0.attributes["reel.seq.first"] == 3 && $0.attributes["reel.action.type"] == "increment" })
    }

    @Test func withoutTheSettingNothingIsSent() async throws {
        let collector = try await OTLPCollector.start()
        defer { Task { await collector.stop() } }
        let dir = try TemporaryDirectory()
        // The standard variables alone do not turn export on.
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"),
            environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(collector.port)", "OTEL_BSP_SCHEDULE_DELAY": "10"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            let sent = try await connection.request(1, "dispatch", Self.dispatch("set", ["path": "/a", "value": 1], trace: Self.sampledTrace))
            #expect(sent["result"]?["seq"] == 1)
        }
        #expect(try await daemon.stop() == 0)
        #expect(collector.received.isEmpty)
    }
}
