import ReelFraming
import ReelJSON
import ReelProtocol
import ReelStore

/// Something that ends once: a dispatch whose outcome is known or not yet.
protocol Settling: Sendable {
    var isSettled: Bool { get }
}

extension DispatchTicket: Settling {}

/// Decides what a connection does with each line it reads: the one place requests are routed.
/// A plain value, without I/O: the connection's reader owns one, feeds it lines and carries out
/// what it returns.
///
/// It also keeps the connection's read-your-writes barrier: dispatches go to the store in the
/// order they are read (so they get seqs in request order, yet share commits), and every other
/// request waits for all the dispatches read before it to settle, so a connection always reads its
/// own writes. (All of them, not only the last: a refusal is answered at once while an earlier
/// accepted dispatch may still be syncing.)
struct RequestRouter<Ticket: Settling> {
    /// What to do with one line.
    enum Route {
        /// Answer at once with this line: a request that could not be read or is refused.
        case answer([UInt8])
        /// Hand the dispatch to the store now, then ``noteDispatched(_:)`` its ticket.
        case dispatch(RPCID, DispatchParams)
        /// Start a subscription once `after` are settled.
        case subscribe(RPCID, SubscribeParams, after: [Ticket])
        /// End a subscription of this connection.
        case unsubscribe(RPCID, UnsubscribeParams)
        /// Let the method handler answer once `after` are settled.
        case call(RPCID, RPCCall, after: [Ticket])
    }

    /// The permissions the peer has, whose methods are routed without asking `denial`.
    let permitted: [Permission]
    /// The error for a method the peer may not call, `nil` when it may.
    let denial: @Sendable (any ProtocolMethod.Type) -> RPCError?
    private var unsettled: [Ticket] = []

    /// - Parameters:
    ///   - permitted: what the peer may do, known in advance (a connection asks the access policy
    ///     once): checked here, where calling the closure for it cost a generic-metadata lookup
    ///     per request (the intake's closure captures its generic handler).
    ///   - denial: asked for the methods of any other permission.
    init(permitted: [Permission] = [], denial: @escaping @Sendable (any ProtocolMethod.Type) -> RPCError?) {
        self.permitted = permitted
        self.denial = denial
    }

    private func denial(of method: any ProtocolMethod.Type) -> RPCError? {
        permitted.contains(method.permission) ? nil : denial(method)
    }

    /// Routes one line (without its newline).
    mutating func route(_ line: UnsafeRawBufferPointer) -> Route {
        if let (id, params) = DispatchLine.read(line) {
            if let denial = denial(of: Method.Dispatch.self) {
                return .answer(RPCResponse(id: id, error: denial).encodedLine())
            }
            return .dispatch(id, params)
        }
        let request: RPCRequest
        switch RPCRequest.parse(line) {
        case .failure(let errorResponse): return .answer(errorResponse.encodedLine())
        case .success(let parsed): request = parsed
        }
        guard let id = request.id else {
            // JSON-RPC: a notification gets no answer, so nothing could tell the peer what became
            // of it; refuse to act on one rather than act silently.
            return .answer(RPCResponse(id: nil, error: .invalidRequest(
                "requests need an id: without one the answer could not be matched"
            )).encodedLine())
        }
        let call: RPCCall
        do {
            call = try RPCCall(request)
        } catch {
            return .answer(RPCResponse(id: id, error: error).encodedLine())
        }
        if let denial = denial(of: call.method) {
            return .answer(RPCResponse(id: id, error: denial).encodedLine())
        }
        if let params = call.params(as: Method.Dispatch.self), params.branch == nil { return .dispatch(id, params) }
        if let params = call.params(as: Method.Unsubscribe.self) { return .unsubscribe(id, params) }
        pruneSettled()
        // (A dispatch to a branch goes on as a call: the method handler hands it to the store's
        // branch writer.)
        if let params = call.params(as: Method.Subscribe.self) { return .subscribe(id, params, after: unsettled) }
        return .call(id, call, after: unsettled)
    }

    /// The dispatch routed last went to the store with this ticket: later reads wait for it.
    mutating func noteDispatched(_ ticket: Ticket) {
        // Pruned only now and then: asking a ticket whether it settled takes its lock, and a
        // pipelining client would otherwise ask every unsettled one at every dispatch.
        if unsettled.count >= 64 { pruneSettled() }
        unsettled.append(ticket)
    }

    private mutating func pruneSettled() {
        unsettled.removeAll { $0.isSettled }
    }

    /// The last answer to a peer whose framing failed: the error, with a `null` id (the line could
    /// not be read), after which the connection closes.
    static func answer(to error: FramingError) -> [UInt8] {
        let rpcError = switch error {
        case .lineTooLong(let limit): RPCError.lineTooLong(limit: limit)
        case .stalledMidLine(let after):
            RPCError(
                code: RPCError.Code.tooLarge,
                message: "no newline after \(after.nanoseconds / 1_000_000_000) s in the middle of a message; the connection is closed"
            )
        }
        return RPCResponse(id: nil, error: rpcError).encodedLine()
    }
}
