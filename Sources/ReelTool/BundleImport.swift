import Foundation
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStorage
import ReelStore
import ReelTesting

/// A bundle folded into a new data directory with this program's reducers (`reel import
/// --bundle`, and every read command's `--bundle`), each action's outcome compared with the one
/// the bundle recorded.
///
/// The directory's history starts after the bundle's first state (its ``Metadata/origin``): the
/// actions keep their seqs, times, peers and meta, and nothing before the bundle can be read.
struct BundleImport {
    struct Outcome: Sendable {
        var seq: UInt64
        var checkpoints: Int
        /// The digest of the state the fold ended in.
        var digest: String
        /// The first action whose outcome differs from the recorded one (its state, or these
        /// reducers refuse it), in words; `nil` when none does.
        var divergence: String?
    }

    let bundle: BundleFile
    let settings: ImportSettings

    init(_ bundle: BundleFile, checkpointEvery: UInt64 = 10_000, sync: ImportSync = .everyCommit) {
        self.bundle = bundle
        var settings = ImportSettings(checkpointEvery: checkpointEvery, sync: sync)
        if bundle.startSeq > 0 {
            settings.origin = Checkpoint(seq: bundle.startSeq, reducer: bundle.reducer, time: bundle.created, state: bundle.startState)
        }
        self.settings = settings
    }

    /// Folds the bundle into a new directory at `path`. A divergence ends the comparison (every
    /// later state would differ too) but not the fold; `progress` is told of each seq.
    func run(into path: String, progress: (UInt64) -> Void = { _ in }) throws(ToolError) -> Outcome {
        let target = try ToolContext.current.openImport(path, settings)
        defer { target.close() }
        // The state before each step, as the reducers made it: equal to the recorded one while no
        // divergence was found, so the recorded change applies to it. Applied there, unchanged
        // parts stay the same storage as in the reducers' next state, and the comparison costs in
        // proportion to what the step changed, not to the whole state.
        var before = try target.state()
        var divergence: String?
        if bundle.startSeq == 0 {
            // From seq 1: the reducers' initial state is the bundle's first.
            divergence = HistoryDivergence(seq: 0, type: "the initial state", expected: bundle.startState, actual: before)?.description
        }
        for step in bundle.steps {
            let envelope = step.envelope
            let refusal: String?
            do throws(ToolError) {
                refusal = try target.append(envelope, keepingRefused: true)
            } catch {
                throw ToolError("seq \(envelope.seq) (\(envelope.type)) of the bundle does not replay here: \(error.message)", exitStatus: error.exitStatus)
            }
            progress(envelope.seq)
            guard divergence == nil else { continue }
            if let refusal {
                divergence = "seq \(envelope.seq) (\(envelope.type)), recorded as accepted, is refused: \(refusal)"
                continue
            }
            var expected = before
            do {
                try step.change.apply(to: &expected)
            } catch {
                throw ToolError(
                    "the bundle's change of seq \(envelope.seq) does not apply to the state before it (\(error.message)): the bundle is damaged",
                    exitStatus: ExitStatus.dataError
                )
            }
            before = try target.state()
            divergence = HistoryDivergence(seq: envelope.seq, type: envelope.type, expected: expected, actual: before)?.description
        }
        let digest = BundleFile.digest(of: try target.state())
        let done = try target.finish()
        return Outcome(seq: done.seq, checkpoints: done.checkpoints, digest: digest, divergence: divergence)
    }

    /// What a divergence or another digest means, for a message.
    func explain(_ outcome: Outcome) -> String? {
        let identity = ToolContext.current.reducer
        let recorded = bundle.reducer == identity ? "by these reducers (\(identity)) too" : "by \(bundle.reducer); this program folds with \(identity)"
        if let divergence = outcome.divergence {
            return "the bundle's history replays differently here (it was recorded \(recorded)): \(divergence)"
        }
        guard outcome.digest == bundle.digest else {
            return "the state at seq \(bundle.endSeq) has digest \(outcome.digest), the bundle's is \(bundle.digest) (it was recorded \(recorded))"
        }
        return nil
    }
}

/// A bundle read as a store (`--bundle FILE`): folded into a scratch data directory and read
/// offline like any other. The directory's files are removed as soon as LMDB holds them open (it
/// never opens them again), so that nothing is left behind, even by a command killed midway.
struct BundleSource: StoreSource {
    let inner: any StoreSource
    let label: String
    var historyPageSize: Int { inner.historyPageSize }

    /// Reads `path`, folds it, and says on standard error when this program's reducers make
    /// something else of it than the recorded history (the states then shown are theirs).
    static func open(_ path: String) throws(ToolError) -> BundleSource {
        let bundle = try BundleFile.read(from: path)
        let scratch = try OfflineDirectory(for: path)
        do {
            let importer = BundleImport(bundle, checkpointEvery: 10_000, sync: .never)
            let outcome = try importer.run(into: scratch.path)
            if let explanation = importer.explain(outcome) {
                Printer(context: .current, json: false, color: .auto).note("note: \(explanation); the states shown are this program's")
            }
            let inner = try ToolContext.current.openOffline(scratch.path)
            scratch.remove()
            return BundleSource(inner: inner, label: "the bundle \(path) (seqs \(bundle.startSeq + 1)…\(bundle.endSeq))")
        } catch {
            scratch.remove()
            throw error
        }
    }

    func call<M: ProtocolMethod>(
        _ method: M.Type, _ params: M.Params, progress: (@Sendable (Int, Int) -> Void)?
    ) async throws(ToolError) -> M.Result {
        if method.permission == .dispatch {
            throw ToolError("dispatching needs a running daemon: \(label) is only read. Drop --bundle to use the daemon's socket", exitStatus: ExitStatus.usage)
        }
        return try await inner.call(method, params, progress: progress)
    }

    func watch(path: JSONPointer, since: UInt64?, mode: SubscriptionMode, branch: String?) async throws(ToolError) -> WatchFeed {
        try await inner.watch(path: path, since: since, mode: mode, branch: branch)
    }

    func close() async {
        await inner.close()
    }
}

/// A data directory made for one run of a command, under the temporary directory.
struct OfflineDirectory: Sendable {
    let path: String

    init(for bundle: String) throws(ToolError) {
        var template = Array((NSTemporaryDirectory() + "/reel-bundle.XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw ToolError("cannot make a directory to read \(bundle) in: \(String(cString: strerror(errno)))", exitStatus: ExitStatus.unavailable)
        }
        path = String(cString: made)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
