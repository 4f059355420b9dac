import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The readers-writer gate that makes remapping safe.
///
/// `mdb_env_set_mapsize` unmaps and remaps the file, so any value or page pointer an open
/// transaction holds would dangle; LMDB leaves it to the caller to ensure no transaction of this
/// process is open. Every transaction (and every call that reads the map, such as `mdb_env_info`
/// and `mdb_env_copy2`) holds the gate shared; a resize holds it exclusive.
///
/// The lock is a reader-preferring rwlock (glibc's default), on purpose: a thread may take it shared
/// again while it already holds it (a read inside a read, a write inside a read) without
/// deadlocking against a queued resize. The price is that a steady stream of overlapping readers
/// can delay a resize; readers in Reel are short, and a resize only waits for them, never fails.
///
/// A thread that holds the gate shared must never wait for it exclusively (that is a self-deadlock),
/// so the gate counts its shared holds per thread and per environment in a pthread key.
final class LMDBMapGate: Sendable {
    // Both are only touched through the pthread calls, which are thread-safe by contract.
    private nonisolated(unsafe) let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private let holdsKey: pthread_key_t
    /// Threads waiting to enter exclusively (a growth queued behind open transactions).
    let exclusiveWaiters = Atomic<Int>(0)

    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        defer { pthread_rwlockattr_destroy(&attributes) }
        #if canImport(Glibc)
        // glibc's default, stated explicitly because the deadlock freedom described above relies on it.
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_READER_NP))
        #endif
        let rc = pthread_rwlock_init(lock, &attributes)
        lmdbPrecondition(rc == 0, "pthread_rwlock_init failed with \(rc)")
        var key = pthread_key_t()
        let keyRC = pthread_key_create(&key, nil)
        lmdbPrecondition(keyRC == 0, "pthread_key_create failed with \(keyRC): too many LMDB environments open")
        holdsKey = key
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
        pthread_key_delete(holdsKey)
    }

    /// How many shared holds the calling thread has on this gate (open transactions, mostly).
    var sharedHoldsOnCurrentThread: Int {
        Int(bitPattern: pthread_getspecific(holdsKey))
    }

    /// Takes the gate shared; pair with ``leaveShared()`` on the same thread.
    @inline(__always)
    func enterShared() {
        let rc = pthread_rwlock_rdlock(lock)
        lmdbPrecondition(rc == 0, "pthread_rwlock_rdlock failed with \(rc)")
        setHolds(sharedHoldsOnCurrentThread + 1)
    }

    /// Releases a shared hold taken by ``enterShared()`` on this thread.
    @inline(__always)
    func leaveShared() {
        setHolds(sharedHoldsOnCurrentThread - 1)
        pthread_rwlock_unlock(lock)
    }

    /// Runs `body` while no other transaction of this process can be open.
    /// The caller must hold no shared hold on this thread (checked: it would deadlock).
    func withExclusive<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lmdbPrecondition(sharedHoldsOnCurrentThread == 0, "LMDB map gate: exclusive entry while holding it shared")
        exclusiveWaiters.add(1, ordering: .relaxed)
        let rc = pthread_rwlock_wrlock(lock)
        exclusiveWaiters.subtract(1, ordering: .relaxed)
        lmdbPrecondition(rc == 0, "pthread_rwlock_wrlock failed with \(rc)")
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    private func setHolds(_ count: Int) {
        // The count is stored as the pointer value itself: no allocation, nothing to free at thread exit.
        pthread_setspecific(holdsKey, UnsafeRawPointer(bitPattern: count))
    }
}
