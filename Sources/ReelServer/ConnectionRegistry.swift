import NIOCore
import ReelProtocol
import Synchronization

/// The server's connections from their accept to their close, and the tasks their requests
/// started: what the connection limit counts, what a graceful shutdown stops reading and waits
/// for, and what the shutdown time limit closes.
///
/// A connection is served by its pipeline's handlers (``ConnectionHandler``), with no task of its
/// own, so the server's `run` has no task group to wait for; it waits here instead
/// (``untilStopped()``) until it stopped accepting and every connection and task has ended.
final class ConnectionRegistry: Sendable {
    /// What became of a connection as it was accepted.
    enum Admission: Equatable {
        /// Under the limit: serve it.
        case admitted
        /// Over the limit: tell the peer so and close it (it is registered until then).
        case refused
        /// The server stopped accepting: close it at once (it is not registered).
        case stopped
    }

    private struct Entry {
        let channel: any Channel
        /// Counted against the connection limit (refused connections are not).
        let admitted: Bool
    }

    private struct State {
        var accepting = true
        var channels: [ObjectIdentifier: Entry] = [:]
        var tasks = 0
        var waiter: CheckedContinuation<Void, Never>?

        var isDone: Bool { !accepting && channels.isEmpty && tasks == 0 }

        /// The waiter, once there is nothing left to wait for; it is then forgotten.
        mutating func takeWaiterIfDone() -> CheckedContinuation<Void, Never>? {
            guard isDone, let waiter else { return nil }
            self.waiter = nil
            return waiter
        }
    }

    private let state = Mutex(State())
    /// Connections open now, against the limit (shown by `stats`).
    let open: ConnectionCount

    init(open: ConnectionCount) {
        self.open = open
    }

    /// Thrown from a channel's initializer once the server stopped accepting: the bootstrap then
    /// closes the channel.
    struct Stopped: Error {}

    /// Registers an accepted connection, under `limit` admitted connections, until its channel
    /// closes.
    func admit(_ channel: any Channel, limit: Int) -> Admission {
        let admission = state.withLock { state -> Admission in
            guard state.accepting else { return .stopped }
            let admitted = open.admit(limit: limit)
            state.channels[ObjectIdentifier(channel)] = Entry(channel: channel, admitted: admitted)
            return admitted ? .admitted : .refused
        }
        if admission != .stopped {
            // (Whatever closes it, even a failure of its initializer before it was ever active.)
            channel.closeFuture.whenComplete { _ in self.closed(channel) }
        }
        return admission
    }

    /// The connection closed (again, or for a connection never registered, it does nothing).
    private func closed(_ channel: any Channel) {
        let waiter = state.withLock { state in
            guard let entry = state.channels.removeValue(forKey: ObjectIdentifier(channel)) else { return nil as CheckedContinuation<Void, Never>? }
            if entry.admitted { open.release() }
            return state.takeWaiterIfDone()
        }
        waiter?.resume()
    }

    /// A connection started a task for a request; ``taskEnded()`` when it is over.
    func taskStarted() {
        state.withLock { $0.tasks += 1 }
    }

    func taskEnded() {
        let waiter = state.withLock { state in
            state.tasks -= 1
            return state.takeWaiterIfDone()
        }
        waiter?.resume()
    }

    /// Accepts no more connections; those open go on until they end on their own.
    func stopAccepting() {
        endAccepting().waiter?.resume()
    }

    /// A graceful stop: accepts no more connections, and stops reading every open one (its
    /// ``InputGate`` closes), which then answers what it read and closes.
    func stop() {
        let (channels, waiter) = endAccepting()
        for channel in channels {
            channel.triggerUserOutboundEvent(InputGate.Close(), promise: nil)
        }
        waiter?.resume()
    }

    /// Closes every open connection now, whatever it still owes: the end of the shutdown's time
    /// limit (a peer that never reads would otherwise keep its connection forever).
    func closeAll() {
        let (channels, waiter) = endAccepting()
        for channel in channels {
            channel.close(promise: nil)
        }
        waiter?.resume()
    }

    /// Takes no more connections: the connections open now, and the waiter if nothing is left.
    private func endAccepting() -> (channels: [any Channel], waiter: CheckedContinuation<Void, Never>?) {
        state.withLock { state in
            state.accepting = false
            return (state.channels.values.map(\.channel), state.takeWaiterIfDone())
        }
    }

    /// Returns once the server stopped accepting and every connection and task has ended.
    /// Cancellation closes every connection (``closeAll()``), and still waits for them to end.
    func untilStopped() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state in
                    if state.isDone { return true }
                    state.waiter = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            closeAll()
        }
    }

    /// Connections registered now, admitted or being refused (for tests).
    var registered: Int { state.withLock { $0.channels.count } }
}

/// The only handler of a connection over the limit: tells the peer, then closes.
final class Refusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let limit: Int
    private var done = false

    init(limit: Int) {
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        refuse(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}  // nothing it sends is read

    private func refuse(_ context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        let error = RPCError(
            code: RPCError.Code.overloaded, message: "the daemon already serves \(limit) connections; try again later"
        )
        let channel = context.channel
        // The close waits for the refusal to reach the socket: a close drops what NIO still holds.
        context.writeAndFlush(NIOAny(ByteBuffer(bytes: RPCResponse(id: nil, error: error).encodedLine()))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
