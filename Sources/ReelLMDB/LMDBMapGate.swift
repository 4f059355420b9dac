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
/// The lock is glibc's default reader-preferring rwlock, on purpose: a thread may take it shared
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

    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        let rc = pthread_rwlock_init(lock, nil)
        precondition(rc == 0, "pthread_rwlock_init failed with \(rc)")
        var key = pthread_key_t()
        let keyRC = pthread_key_create(&key, nil)
        precondition(keyRC == 0, "pthread_key_create failed with \(keyRC): too many LMDB environments open")
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
        precondition(rc == 0, "pthread_rwlock_rdlock failed with \(rc)")
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
        precondition(sharedHoldsOnCurrentThread == 0, "LMDB map gate: exclusive entry while holding it shared")
        let rc = pthread_rwlock_wrlock(lock)
        precondition(rc == 0, "pthread_rwlock_wrlock failed with \(rc)")
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    private func setHolds(_ count: Int) {
        // The count is stored as the pointer value itself: no allocation, nothing to free at thread exit.
        pthread_setspecific(holdsKey, UnsafeRawPointer(bitPattern: count))
    }
}

/// The calling OS thread, comparable across calls (a `pthread_t` as an integer).
@inline(__always)
func currentThreadID() -> UInt {
    #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
    #else
    return UInt(pthread_self())
    #endif
}
