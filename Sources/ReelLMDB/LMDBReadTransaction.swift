/// A read-only snapshot of an environment, lent to the closure of ``LMDBEnvironment/read(_:)``.
///
/// `~Copyable` and passed `borrowing`: it cannot be stored, copied or used after the closure
/// returns. Values come either as copies (`get`) or as `RawSpan`s lent to a closure
/// (`withValue`, `forEach`, cursors); a span points into the memory map and is non-escapable,
/// so its bytes cannot be kept past the transaction either.
///
/// Its operations are those of ``LMDBReadable``, shared with ``LMDBWriteTransaction``.
public struct LMDBReadTransaction: ~Copyable {
    @usableFromInline let core: TransactionCore

    init(_ core: TransactionCore) { self.core = core }
}

extension LMDBReadTransaction: LMDBReadable {
    /// Lends the transaction's internals to ReelLMDB's read operations; see ``LMDBReadable``.
    @inlinable
    public func _withTransactionCore<R, E: Error>(
        _ body: (borrowing _LMDBTransactionCore) throws(E) -> R
    ) throws(E) -> R {
        try body(_LMDBTransactionCore(core))
    }
}
