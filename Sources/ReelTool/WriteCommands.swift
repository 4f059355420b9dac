import ArgumentParser
import ReelCore
import ReelJSON
import ReelProtocol

/// `reel dispatch TYPE [PAYLOAD]`: dispatch one action and print its seq; `reel dispatch -`
/// dispatches NDJSON actions read from stdin.
struct DispatchCommand: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "dispatch", abstract: "Dispatch an action and print its seq.",
            discussion: """
                PAYLOAD is JSON, such as '{"path": "/n", "value": 1}'; '-' reads it from stdin. \
                With TYPE '-', each line of stdin is an action {"type", "payload", "version"?}: they are dispatched \
                in order, one by one, or as one atomic batch with --batch. The seq is printed once the \
                action is durable. With --json: {"seq"} per action, or {"seqs"} for a batch; \
                "duplicate": true when the idempotency key had been used.

                Idempotency keys: a dispatch with a KEY used before applies nothing and prints the \
                seq(s) it got the first time. With TYPE '-' (one by one), each line has a key of \
                its own: KEY/0 for the first line, KEY/1 for the second, and so on; so the same \
                input sent again with the same KEY (a retry after a failure) applies only the lines \
                not applied before. Those keys are not KEY itself: a later `dispatch TYPE \
                --idempotency-key KEY` is a new dispatch. With --batch, the whole batch has KEY.

                Provenance: --correlation-id, --causation-id, --source and --traceparent are logged \
                with every action dispatched (`log` and `show` print them, `log --correlation ID` \
                finds them); each at most 256 bytes, --traceparent in W3C Trace Context form \
                (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>).

                Action types (`\(ToolContext.current.programName) describe` asks the daemon):
                \(ActionShape.helpText(ToolContext.current.actions))
                """
        )
    }

    @Argument(help: ArgumentHelp("The action type, or - to read NDJSON actions from stdin.", valueName: "type")) var type: String
    @Argument(help: ArgumentHelp("The payload as JSON, or - to read it from stdin (default: none).", valueName: "payload")) var payload: String?
    @Option(
        name: .customLong("expected-seq"), parsing: .unconditional, help: ArgumentHelp("Accept only if the latest seq is this one.", valueName: "seq"),
        transform: SeqArgument.parse
    )
    var expectedSeq: SeqArgument?
    @Option(
        name: .customLong("idempotency-key"),
        help: ArgumentHelp("A retry with the same key is not applied twice (with TYPE -, line N has the key KEY/N: see below).", valueName: "key")
    )
    var idempotencyKey: String?
    @Flag(name: .customLong("batch"), help: "With TYPE -: dispatch all the lines as one atomic batch.") var batch = false
    @Option(
        name: .customLong("action-version"), parsing: .unconditional,
        help: ArgumentHelp("The version of the payload's shape, when older than the latest (the store upcasts it).", valueName: "n"),
        transform: NumberArgument.version
    )
    var actionVersion: Int?
    @Option(name: .customLong("correlation-id"), help: ArgumentHelp("Log this correlation id with the action(s).", valueName: "id"))
    var correlationId: String?
    @Option(name: .customLong("causation-id"), help: ArgumentHelp("Log what caused the action(s): a seq or an id.", valueName: "id"))
    var causationId: String?
    @Option(name: .customLong("source"), help: ArgumentHelp("Log who sends the action(s), in your words.", valueName: "name"))
    var origin: String?
    @Option(name: .customLong("traceparent"), help: ArgumentHelp("Log the W3C traceparent of the trace the action(s) belong to.", valueName: "traceparent"))
    var traceparent: String?
    @Option(name: .customLong("branch"), help: ArgumentHelp("Dispatch to this branch of the history instead of the main one.", valueName: "name"))
    var branch: String?
    @OptionGroup var source: DaemonSourceOptions

    func validate() throws {
        if branch != nil && idempotencyKey != nil { throw ValidationError("--idempotency-key is not taken with --branch: a branch's dispatches are not deduplicated") }
        if type == "-" && payload != nil { throw ValidationError("with TYPE '-' the actions come from stdin: give no PAYLOAD") }
        if batch && type != "-" { throw ValidationError("--batch goes with TYPE '-' (actions from stdin)") }
        if type.isEmpty { throw ValidationError("the action type is empty") }
        if actionVersion != nil && type == "-" { throw ValidationError("with TYPE '-' each line gives its own \"version\": give no --action-version") }
        for (member, value) in meta?.members ?? [] {
            if let problem = ActionMeta.problem(with: value, as: member) { throw ValidationError("--\(Self.optionName(member)) \(problem)") }
        }
    }

    /// The provenance the options give, `nil` without any.
    var meta: ActionMeta? {
        let meta = ActionMeta(traceparent: traceparent, correlationId: correlationId, causationId: causationId, source: origin)
        return meta.isEmpty ? nil : meta
    }

    /// The option that sets a member of the meta.
    static func optionName(_ member: ActionMeta.Member) -> String {
        switch member {
        case .causationId: "causation-id"
        case .correlationId: "correlation-id"
        case .source: "source"
        case .traceparent: "traceparent"
        }
    }

    func run() async throws {
        let printer = source.output.printer
        let actions = try readActions()
        if type == "-", !batch, let idempotencyKey {
            let longest = Self.lineKey(idempotencyKey, line: actions.count - 1)
            if longest.utf8.count > DispatchParams.maxIdempotencyKeyLength {
                throw ToolError(
                    "--idempotency-key: with \(actions.count) lines the last line's key, \(longest.utf8.count) bytes, is over the limit of \(DispatchParams.maxIdempotencyKeyLength)",
                    exitStatus: ExitStatus.usage
                )
            }
        }
        let store = try await source.open()
        if type != "-" || batch {
            let result = try await store.dispatch(actions, expectedSeq: expectedSeq?.value, idempotencyKey: idempotencyKey, meta: meta, branch: branch)
            report(result.seqs, duplicate: result.duplicate, batch: batch, printer: printer)
            return
        }
        // One by one, in order; the expected seq and key apply to the first, each next one expects
        // the seq after the previous one only when the first had an expected seq.
        var expected = expectedSeq?.value
        for (index, action) in actions.enumerated() {
            let key = idempotencyKey.map { Self.lineKey($0, line: index) }
            let result = try await store.dispatch([action], expectedSeq: expected, idempotencyKey: key, meta: meta, branch: branch)
            report(result.seqs, duplicate: result.duplicate, batch: false, printer: printer)
            if expected != nil { expected = result.seqs.upperBound }
        }
    }

    /// The idempotency key of line `line` (from 0) of NDJSON dispatched one by one with `key`:
    /// `key/0`, `key/1`… (documented in `dispatch --help` and docs/REFERENCE.md).
    static func lineKey(_ key: String, line: Int) -> String {
        "\(key)/\(line)"
    }

    private func readActions() throws(ToolError) -> [Action] {
        guard type == "-" else {
            let payloadValue: JSONValue
            switch payload {
            case nil: payloadValue = .null
            case "-"?: payloadValue = try InputReader.json(InputReader.readAll(path: "-"), what: "the payload on stdin")
            case let text?: payloadValue = try InputReader.json(Array(text.utf8), what: "the payload")
            }
            return [Action(type: type, payload: payloadValue, version: actionVersion)]
        }
        var actions: [Action] = []
        try InputReader.forEachLine(path: "-") { (line, number) throws(ToolError) in
            let json = try InputReader.json(line, what: "line \(number) of stdin")
            guard case .string(let type)? = json["type"], !type.isEmpty else {
                throw ToolError("line \(number) of stdin is not an action {\"type\": …, \"payload\": …}", exitStatus: ExitStatus.dataError)
            }
            var version: Int?
            if let stated = json["version"] {
                guard let value = stated.intValue, value >= 1, let exact = Int(exactly: value) else {
                    throw ToolError("line \(number) of stdin has a \"version\" that is not an integer from 1", exitStatus: ExitStatus.dataError)
                }
                version = exact
            }
            actions.append(Action(type: type, payload: json["payload"] ?? .null, version: version))
        }
        guard !actions.isEmpty else { throw ToolError("no actions on stdin", exitStatus: ExitStatus.dataError) }
        return actions
    }

    private func report(_ seqs: ClosedRange<UInt64>, duplicate: Bool, batch: Bool, printer: Printer) {
        if printer.isJSON {
            printer.json(DispatchOutcome(seqs: seqs, duplicate: duplicate, batch: batch).asJSON)
            return
        }
        let what = seqs.count == 1 ? "seq \(seqs.lowerBound)" : "seqs \(seqs.lowerBound)–\(seqs.upperBound)"
        printer.line(duplicate ? "\(what) (already dispatched with this idempotency key; nothing new applied)" : what)
    }
}

/// `reel revert SEQ`: dispatch `@revert` to that seq.
struct RevertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revert", abstract: "Make the state what it was at SEQ, by dispatching @revert.",
        discussion: """
            History is not rewritten: a new action restores the state of SEQ, so the log stays \
            immutable and every earlier state can still be inspected. Prints the new action's seq.
            """
    )

    @Argument(help: ArgumentHelp("The seq whose state to restore.", valueName: "seq"), transform: SeqArgument.parse) var seq: SeqArgument
    @Option(
        name: .customLong("expected-seq"), parsing: .unconditional, help: ArgumentHelp("Accept only if the latest seq is this one.", valueName: "seq"),
        transform: SeqArgument.parse
    )
    var expectedSeq: SeqArgument?
    @OptionGroup var source: DaemonSourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let action = StoreAction.revert(to: seq.value).action
        let result = try await store.dispatch([action], expectedSeq: expectedSeq?.value, idempotencyKey: nil)
        if printer.isJSON {
            printer.json(DispatchOutcome(seqs: result.seqs.lowerBound...result.seqs.lowerBound, batch: false).asJSON)
        } else {
            printer.line("seq \(result.seqs.lowerBound): the state is now what it was at seq \(seq.value)")
        }
    }
}
