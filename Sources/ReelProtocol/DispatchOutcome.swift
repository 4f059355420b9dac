import ReelJSON

/// The `dispatch` result, in the form the client used: `{seq}` for `action`, `{seqs: [first, …,
/// last]}` listing every seq for `actions` (docs/REFERENCE.md), so a client pairs each of its actions with its
/// seq by position. A duplicate adds `duplicate: true` in both forms.
public struct DispatchOutcome: MethodResult, Equatable {
    /// The consecutive seqs the actions got (or, for a duplicate, had got).
    public var seqs: ClosedRange<UInt64>
    /// Whether this answers a retry from its idempotency key: nothing was applied now.
    public var duplicate: Bool
    /// Whether the client sent `actions` (``DispatchParams/isBatch``): then `seqs` is written.
    public var batch: Bool

    public init(seqs: ClosedRange<UInt64>, duplicate: Bool = false, batch: Bool) {
        self.seqs = seqs
        self.duplicate = duplicate
        self.batch = batch
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            if duplicate { members.add("duplicate", true) }
            if batch {
                members.add("seqs") { bytes in
                    bytes.append(UInt8(ascii: "["))
                    for seq in seqs {
                        if seq != seqs.lowerBound { bytes.append(UInt8(ascii: ",")) }
                        seq.writeJSON(into: &bytes)
                    }
                    bytes.append(UInt8(ascii: "]"))
                }
            } else {
                members.add("seq", seqs.lowerBound)
            }
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a dispatch result")
        let duplicate = members.flag("duplicate")
        guard members.members["seqs"] != nil else {
            let seq = try members.seq("seq")
            self.init(seqs: seq...seq, duplicate: duplicate, batch: false)
            return
        }
        var seqs: [UInt64] = []
        for element in try members.array("seqs") {
            guard let number = element.intValue, let seq = UInt64(exactly: number) else {
                throw .invalidRequest("a dispatch result's seqs must be seqs, not \(element.described)")
            }
            seqs.append(seq)
        }
        guard let first = seqs.first, let last = seqs.last, last >= first, seqs.elementsEqual(first...last) else {
            throw .invalidRequest("a dispatch result's seqs must be consecutive, not \(members.members["seqs"] ?? .null)")
        }
        self.init(seqs: first...last, duplicate: duplicate, batch: true)
    }
}

/// The answer to a `dispatch` of one action: its seq, durable on the daemon's disk.
public struct DispatchReceipt: Sendable, Equatable {
    /// The action's seq.
    public var seq: UInt64
    /// Whether the idempotency key had been used before: then nothing was applied now and `seq`
    /// is the seq the first dispatch with that key got.
    public var duplicate: Bool

    /// - Parameters:
    ///   - seq: The action's seq.
    ///   - duplicate: Whether this answers a retry.
    public init(seq: UInt64, duplicate: Bool = false) {
        self.seq = seq
        self.duplicate = duplicate
    }

    /// The receipt of a single-action dispatch's outcome.
    public init(_ outcome: DispatchOutcome) {
        self.init(seq: outcome.seqs.lowerBound, duplicate: outcome.duplicate)
    }
}

/// The answer to a `dispatch` of a batch: the consecutive seqs its actions got, in order.
public struct BatchReceipt: Sendable, Equatable {
    /// The seqs, first to last; the n-th belongs to the n-th action.
    public var seqs: ClosedRange<UInt64>
    /// Whether the idempotency key had been used before (nothing was applied now).
    public var duplicate: Bool

    /// - Parameters:
    ///   - seqs: The seqs of the batch.
    ///   - duplicate: Whether this answers a retry.
    public init(seqs: ClosedRange<UInt64>, duplicate: Bool = false) {
        self.seqs = seqs
        self.duplicate = duplicate
    }

    /// The receipt of a batch's outcome.
    public init(_ outcome: DispatchOutcome) {
        self.init(seqs: outcome.seqs, duplicate: outcome.duplicate)
    }
}
