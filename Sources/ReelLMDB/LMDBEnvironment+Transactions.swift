import CReelLMDB
import ReelCrashPoints

extension LMDBEnvironment {
    /// Runs `body` in a read transaction: a consistent snapshot of every database as of the last
    /// commit before it began, unaffected by writes that commit while it runs.
    ///
    /// Works on any thread and may be nested (each level is its own snapshot); inside a ``write(_:)``
    /// body it sees the last commit, not that body's changes. Keep it short: an
    /// open read transaction pins the pages of its snapshot, which writers then cannot reuse, and a
    /// map resize in this process waits for it to end.
    /// - Parameter body: uses the transaction, which cannot escape it.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws, unchanged, or an ``LMDBError`` from beginning the transaction
    ///   (for example `readersFull`).
    @discardableResult
    public func read<R>(_ body: (borrowing LMDBReadTransaction) throws -> R) throws -> R {
        let txn = try beginTransaction(readOnly: true)
        defer {
            // Aborting a read transaction frees its reader slot (MDB_NOTLS: the slot is the txn's).
            mdb_txn_abort(txn)
            gate.leaveShared()
        }
        return try body(LMDBReadTransaction(TransactionCore(txn: txn, environmentID: id, write: nil, map: mapBounds)))
    }

    /// Runs `body` in the write transaction, committing when it returns and aborting when it throws.
    ///
    /// Calls from several threads (and processes) take turns: LMDB admits one writer at a time.
    /// Everything happens on the calling thread; a transaction operation from any other thread
    /// traps, and so does a nested `write` on the same environment from inside `body` (LMDB would
    /// deadlock on its own lock). The body is synchronous, so the transaction never crosses an
    /// `await`; called from a Swift concurrency task, waiting for another writer blocks that thread,
    /// so give the write path a thread of its own.
    ///
    /// **`body` must be re-runnable.** When the map is full (a put, or the commit, fails with
    /// `MDB_MAP_FULL`), the transaction is aborted, the map doubled (up to ``Options/maxMapSize``)
    /// and `body` run again from the start. So it should have no effects besides the transaction:
    /// compute outside, write inside. A body that catches the `mapFull` error is re-run all the same.
    /// Reading inside (a `read` within `body`) is fine, but a write
    /// that needs to grow the map while an outer `read` of this thread is open fails with `mapFull`.
    /// - Parameter body: writes through the transaction, which cannot escape it.
    /// - Returns: what `body` returns, after the commit succeeded (with ``Durability/full``, on disk).
    /// - Throws: what `body` throws, unchanged (nothing is written), or an ``LMDBError``: `mapFull`
    ///   when the map cannot grow further, `accessDenied` for a read-only environment, an I/O error
    ///   from the commit (see ``fatalWriteError``).
    @discardableResult
    public func write<R>(_ body: (borrowing LMDBWriteTransaction) throws -> R) throws -> R {
        do {
            return try performWrite(body)
        } catch {
            switch error {
            case .lmdb(let failure): throw failure
            case .body(let failure): throw failure
            }
        }
    }

    /// Why ``performWrite(_:)`` failed: LMDB, or the body's own error (kept apart so it comes out unchanged).
    enum WriteFailure<BodyError: Error>: Error {
        case lmdb(LMDBError)
        case body(BodyError)
    }

    /// The write loop behind ``write(_:)``, generic over the body's error so typed callers stay typed.
    func performWrite<R, E: Error>(_ body: (borrowing LMDBWriteTransaction) throws(E) -> R)
        throws(WriteFailure<E>) -> R
    {
        let thread = currentThreadID()
        lmdbPrecondition(
            writerThread.load(ordering: .relaxed) != thread,
            "LMDBEnvironment.write called inside a write transaction of the same environment on the same thread; "
                + "LMDB allows one write transaction at a time and this would deadlock. Do all the writing in one body.")
        if let failure = failedCommit.withLock({ $0 }) {
            throw .lmdb(LMDBError(
                code: failure.code, operation: "mdb_txn_begin",
                detail: "an earlier commit failed in the operating system (\(failure)); "
                    + "this instance accepts no more writes: close it and reopen the environment"))
        }
        while true {
            let txn: OpaquePointer
            do { txn = try beginTransaction(readOnly: false) } catch { throw .lmdb(error) }
            writerThread.store(thread, ordering: .relaxed)
            var state = WriteState(thread: thread, mapSizeAtBegin: mapSize)
            let outcome = withUnsafeMutablePointer(to: &state) { state in
                let transaction = LMDBWriteTransaction(TransactionCore(txn: txn, environmentID: id, write: state, map: nil))
                return Result { () throws(E) -> R in try body(transaction) }
            }
            // Cleared while LMDB's writer lock is still held, so no other thread's id is overwritten.
            writerThread.store(0, ordering: .relaxed)

            if state.mapFull {
                // Whatever body did with the error, the transaction is unusable: grow and run body again.
                mdb_txn_abort(txn)
                gate.leaveShared()
                do { try growMap(after: state.mapSizeAtBegin) } catch { throw .lmdb(error) }
                continue
            }
            switch outcome {
            case .failure(let error):
                mdb_txn_abort(txn)
                gate.leaveShared()
                throw .body(error)
            case .success(let value):
                // mdb_txn_commit frees the transaction whether or not it succeeds.
                let rc = insideLMDB { mdb_txn_commit(txn) }
                gate.leaveShared()
                if rc == MDB_SUCCESS { return value }
                if rc == MDB_MAP_FULL {
                    do { try growMap(after: state.mapSizeAtBegin) } catch { throw .lmdb(error) }
                    continue
                }
                let failure = LMDBError.make(rc, "mdb_txn_commit", nil)
                if rc > 0 && rc != LMDBError.Code.noSpace.rawValue && rc != LMDBError.Code.quotaExceeded.rawValue {
                    // errno from write/fsync: never retry as if nothing happened (see fatalWriteError,
                    // also for why a full disk is the exception).
                    failedCommit.withLock { $0 = $0 ?? failure }
                }
                throw .lmdb(failure)
            }
        }
    }

    /// Begins a transaction and returns with the gate held shared; the caller ends the transaction
    /// and then calls `gate.leaveShared()`. Adopts a map grown by another process on the way.
    func beginTransaction(readOnly: Bool) throws(LMDBError) -> OpaquePointer {
        var fruitlessAdoptions = 0
        while true {
            gate.enterShared()
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
            if rc == MDB_SUCCESS, let txn { return txn }
            gate.leaveShared()
            guard rc == MDB_MAP_RESIZED else {
                try LMDBError.check(rc, "mdb_txn_begin")
                throw LMDBError(code: .invalidArgument, operation: "mdb_txn_begin", detail: "no transaction returned")
            }
            try adoptRecordedMapSize(fruitlessSoFar: &fruitlessAdoptions)
        }
    }

    /// Another process grew the map beyond this mapping (`MDB_MAP_RESIZED`): remap at the size the
    /// file records. Needs every transaction of this process closed, like any remap.
    ///
    /// A genuine growth is recorded in the meta page before any transaction can see pages beyond
    /// the old map, so adopting it changes the mapping. A meta page whose last page lies beyond
    /// every size it records (a damaged page number, which LMDB's own rounding can overflow) would
    /// make the caller's retry go round forever: `fruitlessSoFar` counts adoptions that changed
    /// nothing, and a few of them (allowing for a growth landing between two tries) mean damage.
    func adoptRecordedMapSize(fruitlessSoFar: inout Int) throws(LMDBError) {
        try requireNoOpenTransactionOnThisThread(.mapResized, doing: "adopt the map size another process set")
        let changed = try gate.withExclusive { () throws(LMDBError) -> Bool in
            let before = Self.mapSize(of: handle)
            try LMDBError.check(mdb_env_set_mapsize(handle, 0), "mdb_env_set_mapsize")
            mapChanged()
            return Self.mapSize(of: handle) != before
        }
        if changed { return }
        fruitlessSoFar += 1
        if fruitlessSoFar >= 3 {
            throw LMDBError(
                code: .corrupted, operation: "mdb_txn_begin",
                detail: "the meta page names pages beyond the map size it records")
        }
    }

    /// Doubles the map after a write found it full, unless another thread already grew it since
    /// the failed transaction began (`observed`). Throws `mapFull` at ``Options/maxMapSize``.
    func growMap(after observed: Int) throws(LMDBError) {
        try requireNoOpenTransactionOnThisThread(.mapFull, doing: "grow the full map")
        CrashPoint.mapGrow.reach()
        defer { CrashPoint.mapGrown.reach() }
        try gate.withExclusive { () throws(LMDBError) in
            let current = Self.mapSize(of: handle)
            if current > observed { return }
            guard current < maximumMapSize else {
                throw LMDBError(
                    code: .mapFull, operation: "mdb_env_set_mapsize",
                    detail: "the map is full at its limit of \(maximumMapSize) bytes (Options.maxMapSize)")
            }
            let target = current > maximumMapSize / 2 ? maximumMapSize : current * 2
            try LMDBError.check(mdb_env_set_mapsize(handle, target), "mdb_env_set_mapsize",
                                detail: "growing the map from \(current) to \(target) bytes")
            mapChanged()
        }
    }

    /// Remapping waits for every transaction of the process; if this thread has one open it would
    /// wait for itself forever, so fail with `code` instead.
    private func requireNoOpenTransactionOnThisThread(_ code: LMDBError.Code, doing what: String)
        throws(LMDBError)
    {
        guard gate.sharedHoldsOnCurrentThread == 0 else {
            throw LMDBError(
                code: code, operation: "mdb_env_set_mapsize",
                detail: "cannot \(what) while this thread has another transaction of this environment open "
                    + "(a write inside a read?); end it and retry")
        }
    }
}

/// What ``LMDBEnvironment/performWrite(_:)`` learns from the operations of one write transaction.
/// Lives on that call's stack; the transaction reaches it through a pointer.
struct WriteState {
    /// The OS thread that began the transaction; every operation must run on it.
    let thread: UInt
    /// The map size when the transaction began, to tell whether someone else already grew it.
    let mapSizeAtBegin: Int
    /// Set by any operation that failed with `MDB_MAP_FULL`: the transaction must be re-run.
    var mapFull = false
    /// How many value-borrowing scopes (`withValue`, `forEach`, `withCursor`) are open; writes
    /// while one is open could move the pages their bytes point into.
    var borrowDepth = 0
}
