import ReelJSON

/// A request's method and its checked, typed params: what a server routes and answers.
///
/// The method is one of ``Method/all``; its params were read by its own `Params` type, so
/// `call.params(as: Method.Get.self)` returns them typed; code generic over the method opens
/// `call.method` (Swift opens an existential metatype passed to a generic parameter).
public struct RPCCall: Sendable {
    /// The method called.
    public let method: any ProtocolMethod.Type
    /// Its params, of type `method.Params`.
    public let params: any MethodParams

    /// A call of `method` with `params`.
    public init<M: ProtocolMethod>(_ method: M.Type, _ params: M.Params) {
        self.method = method
        self.params = params
    }

    /// Reads the method and params of a parsed request.
    ///
    /// - Parameter request: A request whose envelope `RPCRequest.parse` accepted.
    /// - Throws: -32601 for an unknown method (the message lists the known ones); -32602, or 1007
    ///   for an oversized batch, for params that do not fit the method.
    public init(_ request: RPCRequest) throws(RPCError) {
        try self.init(method: request.method, params: request.params)
    }

    /// Reads a method name and its params.
    ///
    /// - Parameters:
    ///   - method: The method name as sent.
    ///   - params: The params, `nil` when absent.
    /// - Throws: As ``init(_:)``.
    public init(method: String, params: JSONValue?) throws(RPCError) {
        guard let type = Method.named(method) else { throw .methodNotFound(method) }
        self = try type.call(params: params)
    }

    /// The method's name.
    public var name: MethodName { method.name }

    /// Whether this is a call of `method`.
    public func `is`(_ method: (some ProtocolMethod).Type) -> Bool {
        ObjectIdentifier(self.method) == ObjectIdentifier(method)
    }

    /// The params, if this is a call of `method`. Code generic over the method gets them with
    /// `call.params(as: M.self)!` after opening `call.method` (`answer(call.method, call)`).
    public func params<M: ProtocolMethod>(as method: M.Type) -> M.Params? {
        `is`(method) ? params as? M.Params : nil
    }

    /// The params as a client sends them.
    public var paramsJSON: JSONValue { params.jsonValue }

    /// The request a client sends for this call.
    ///
    /// - Parameter id: The request id.
    /// - Returns: A request whose params read back, through ``init(_:)``, to this call.
    public func request(id: RPCID) -> RPCRequest {
        RPCRequest(id: id, method: name.rawValue, params: paramsJSON)
    }
}

extension RPCCall: Equatable {
    public static func == (lhs: RPCCall, rhs: RPCCall) -> Bool {
        lhs.is(rhs.method) && equal(lhs.method, lhs, rhs)
    }

    private static func equal<M: ProtocolMethod>(_ method: M.Type, _ lhs: RPCCall, _ rhs: RPCCall) -> Bool {
        lhs.params(as: method) == rhs.params(as: method)
    }
}

extension ProtocolMethod {
    /// A call of this method with `params` read by its `Params`.
    static func call(params: JSONValue?) throws(RPCError) -> RPCCall {
        RPCCall(Self.self, try Params(params: params))
    }
}

extension RPCCall: CustomStringConvertible {
    public var description: String { "\(name.rawValue)(\(paramsJSON.jsonString))" }
}
