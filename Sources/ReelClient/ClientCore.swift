import Logging
import NIOCore
import ReelJSON
import ReelProtocol
import Synchronization

/// The shared heart of a client: the ``ClientStateMachine`` behind a mutex, with the callers'
/// continuations, the subscriptions' sinks and the current channel.
///
/// Callers (any task), the channel's inbound handler (its event loop) and the connection
/// supervisor all go through ``update(_:)``: it runs one step of the state machine under the lock,
/// collects what must be done, and does it after releasing the lock. Nothing is resumed, yielded,
/// finished or written while the lock is held, so none of that can re-enter the lock (a stream's
/// `onTermination` calls back into the core, a channel write on its event loop may run handlers).
final class ClientCore: Sendable {
    typealias Continuation = CheckedContinuation<Result<JSONValue, ReelClientError>, Never>

    private struct Locked {
        var machine = ClientStateMachine()
        var waiters: [Int64: Continuation] = [:]
        var sinks: [Int: SubscriptionSink] = [:]
        var channel: (generation: UInt64, channel: any Channel)?
    }

    /// Work to do once the lock is released, in the order the state machine asked for it.
    private enum Effect {
        case resume(Continuation, Result<JSONValue, ReelClientError>)
        case deliver(SubscriptionSink, SubscriptionUpdate)
        case finish(SubscriptionSink, ReelClientError?)
        case write(any Channel, [[UInt8]])
    }

    private let locked = Mutex(Locked())
    let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    // MARK: - Requests

    /// Sends a request and waits for its answer, across reconnections when `policy` allows.
    ///
    /// Cancelling the calling task fails the request at once if it has not been written yet;
    /// once written it waits for its answer, so that a dispatch's outcome is never hidden.
    func send(
        method: String, params: JSONValue?, kind: ClientStateMachine.RequestKind, policy: ResendPolicy
    ) async -> Result<JSONValue, ReelClientError> {
        let id = locked.withLock { $0.machine.makeRequestID() }
        let line = RPCRequest(id: .int(id), method: method, params: params).encodedLine()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Continuation) in
                update { state in
                    state.waiters[id] = continuation
                    // Checked under the lock: a cancellation handler that ran before this found
                    // nothing to cancel, but it had set the flag already.
                    return state.machine.submit(
                        id: id, method: method, line: line, kind: kind, policy: policy, isCancelled: Task.isCancelled)
                }
            }
        } onCancel: {
            update { $0.machine.cancelRequest(id: id) }
        }
    }

    // MARK: - Subscriptions

    /// A local subscription and the sink its updates go to.
    func openSubscription(path: JSONPointer, mode: SubscriptionMode, branch: String? = nil, shared: Bool = false) -> (id: Int, sink: SubscriptionSink) {
        let sink = SubscriptionSink(mode: mode)
        let local = locked.withLock { state in
            let local = state.machine.openSubscription(path: path, mode: mode, branch: branch, shared: shared)
            state.sinks[local] = sink
            return local
        }
        // The reading task was cancelled: nobody reads this subscription any more.
        sink.onReaderCancelled { [weak self] in self?.cancelSubscription(local) }
        return (local, sink)
    }

    func cancelSubscription(_ local: Int) {
        update { $0.machine.cancelSubscription(local) }
    }

    // MARK: - Connection events

    func makeGeneration() -> UInt64 {
        locked.withLock { $0.machine.makeGeneration() }
    }

    /// Connection `generation` is open. Returns `false` when the client was closed meanwhile.
    func connectionOpened(generation: UInt64, channel: any Channel) -> Bool {
        locked.withLock { state in
            guard state.machine.connectionOpened(generation: generation) else { return false }
            state.channel = (generation, channel)
            return true
        }
    }

    /// The handshake of `generation` succeeded. Returns `false` when that connection is gone.
    func handshakeSucceeded(generation: UInt64, hello: ServerHello) -> Bool {
        var succeeded = false
        update { state in
            guard let outputs = state.machine.handshakeSucceeded(generation: generation, hello: hello) else { return [] }
            succeeded = true
            return outputs
        }
        return succeeded
    }

    func noteProblem(_ reason: String, generation: UInt64) {
        locked.withLock { $0.machine.noteProblem(reason, generation: generation) }
    }

    func noteLineRefused(_ error: RPCError, generation: UInt64) {
        locked.withLock { $0.machine.noteLineRefused(error, generation: generation) }
    }

    func connectionLost(generation: UInt64) {
        update { state in
            if state.channel?.generation == generation { state.channel = nil }
            return state.machine.connectionLost(generation: generation, reason: "the daemon closed the connection")
        }
    }

    func received(_ response: RPCResponse, generation: UInt64) {
        update { $0.machine.received(response, generation: generation) }
    }

    func receivedUpdate(_ params: JSONValue?, generation: UInt64) {
        update { $0.machine.receivedUpdate(params, generation: generation) }
    }

    /// Closes the client; returns the channel to close, if one is open.
    func close(reason: ReelClientError?) -> (any Channel)? {
        var channel: (any Channel)?
        update { state in
            channel = state.channel?.channel
            state.channel = nil
            return state.machine.close(reason: reason)
        }
        return channel
    }

    var isClosed: Bool { locked.withLock { $0.machine.phase == .closed } }
    var isReady: Bool {
        locked.withLock { if case .ready = $0.machine.phase { true } else { false } }
    }
    var closedError: ReelClientError { locked.withLock { $0.machine.closedError } }
    var hello: ServerHello? { locked.withLock { $0.machine.hello } }

    /// Keeps the answer of an app's own `hello` as the latest: it is as fresh as a handshake's.
    func record(_ hello: ServerHello) {
        locked.withLock { $0.machine.recordHello(hello) }
    }

    // MARK: - Carrying out outputs

    /// Runs one step of the state machine under the lock, then carries out its outputs.
    private func update(_ step: (inout Locked) -> [ClientStateMachine.Output]) {
        let effects = locked.withLock { state in
            let outputs = step(&state)
            return Self.effects(of: outputs, in: &state)
        }
        for effect in effects {
            switch effect {
            case .resume(let continuation, let result):
                continuation.resume(returning: result)
            case .deliver(let sink, let update):
                sink.deliver(update)
            case .finish(let sink, let error):
                sink.finish(error)
            case .write(let channel, let lines):
                for line in lines { channel.write(ByteBuffer(bytes: line), promise: nil) }
                channel.flush()
            }
        }
    }

    private static func effects(of outputs: [ClientStateMachine.Output], in state: inout Locked) -> [Effect] {
        var effects: [Effect] = []
        effects.reserveCapacity(outputs.count)
        for output in outputs {
            switch output {
            case .answer(let id, let result):
                if let continuation = state.waiters.removeValue(forKey: id) { effects.append(.resume(continuation, result)) }
            case .deliver(let local, let update):
                if let sink = state.sinks[local] { effects.append(.deliver(sink, update)) }
            case .finish(let local, let error):
                if let sink = state.sinks.removeValue(forKey: local) { effects.append(.finish(sink, error)) }
            case .write(let generation, let lines):
                // A write to a connection that is already gone is dropped: `connectionLost` has
                // dealt (or will deal) with every request marked as sent on it.
                if let current = state.channel, current.generation == generation { effects.append(.write(current.channel, lines)) }
            }
        }
        return effects
    }
}
