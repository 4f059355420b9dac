import ReelCore
import ReelJSON

extension ActionEnvelope {
    /// Reads a logged action in the shape ``writeWire(into:)`` writes it — the elements of a
    /// `history` page, of an `update` in `actions` mode, and the lines of `reel export`:
    /// `{seq, type, payload, time, peer: {uid, gid, pid, exe?}, meta?, version?}`.
    ///
    /// Clients read what servers wrote, so unknown members are ignored (a later server may add
    /// some), but every member the protocol names must be there and well formed: a history that cannot
    /// be read exactly is refused rather than guessed at.
    ///
    /// - Parameter json: One logged action.
    /// - Throws: ``RPCError`` -32600 naming the member that is missing or malformed.
    public init(wire json: JSONValue) throws(RPCError) {
        func failure(_ what: String) -> RPCError {
            .invalidRequest("a logged action \(what)")
        }
        guard case .object(let members) = json else {
            throw failure("must be an object, not \(json.described)")
        }
        guard let seqValue = members["seq"], let seq = seqValue.intValue, seq >= 1 else {
            throw failure("needs a seq (an integer from 1)")
        }
        guard case .string(let type)? = members["type"], !type.isEmpty else {
            throw failure("needs a type (a non-empty string)")
        }
        guard case .string(let text)? = members["time"], let time = Timestamp(rfc3339: text) else {
            throw failure("at seq \(seq) needs a time (an RFC 3339 UTC timestamp)")
        }
        guard case .object(let peer)? = members["peer"],
            let uid = peer["uid"]?.intValue.flatMap(UInt32.init(exactly:)),
            let gid = peer["gid"]?.intValue.flatMap(UInt32.init(exactly:)),
            let pid = peer["pid"]?.intValue.flatMap(Int32.init(exactly:))
        else {
            throw failure("at seq \(seq) needs a peer {uid, gid, pid}")
        }
        let exe: String?
        switch peer["exe"] {
        case nil, .null?: exe = nil
        case .string(let path)?: exe = path
        case .some: throw failure("at seq \(seq) has a peer.exe that is not a string")
        }
        var version: Int?
        if let stated = members["version"] {
            guard let number = actionVersion(stated) else { throw failure("at seq \(seq) has a version that is not an integer from 1") }
            version = number == 1 ? nil : number
        }
        self.init(
            seq: UInt64(seq), action: Action(type: type, payload: members["payload"] ?? .null, version: version),
            time: time, peer: Peer(uid: uid, gid: gid, pid: pid, exe: exe), meta: try ActionMeta(wire: members["meta"], seq: seq)
        )
    }
}
