#ifndef CREEL_FAULT_GUARD_H
#define CREEL_FAULT_GUARD_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

/// What the guarded reads below return when LMDB, reading a damaged page, faulted: the read was
/// abandoned and the transaction must be ended (not an LMDB code; LMDB's are -30799…-30780).
#define REEL_LMDB_FAULTED (-30700)

/// Records (or, with length 0, forgets) the memory region of LMDB map `id`. Async-signal-safe
/// readers see each region's start and length through atomics.
void reel_fault_guard_set_region(uint64_t id, const void *start, size_t length);

/// Installs handlers for SIGSEGV and SIGBUS that turn a fault *inside a recorded LMDB map*, or a
/// fault while the faulting thread is inside an LMDB call that walks pages (between
/// `reel_fault_guard_enter` and `_leave`), into a one-line message on stderr (`message`, then the
/// address) and exit status 74 (EX_IOERR): the data file is damaged in a way LMDB could not tell
/// (LMDB follows page numbers and offsets it reads from the file without checking them, so a
/// damaged one can send it anywhere in memory). A fault anywhere else is a bug: the handler puts
/// back the previous disposition and returns, so the fault repeats and ends the process as before
/// (with Swift's backtrace). Call once, early, from the executable.
void reel_fault_guard_install(const char *message);

/// `mdb_get` and `mdb_cursor_get` for *read* transactions, recoverable: a memory fault inside them
/// (a damaged page LMDB followed) jumps back here and they return `REEL_LMDB_FAULTED` instead of
/// ending the process. Safe because a read does not allocate or take locks inside LMDB; the caller
/// ends the transaction at once. Write transactions are not guarded this way (their dirty state
/// cannot be abandoned midway): a fault there ends the process (exit 74).
int reel_guarded_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int reel_guarded_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op);

/// Reads the byte at `address` under the same guard, for the guard's own tests: returns 0 and the
/// byte in `value`, or `REEL_LMDB_FAULTED` when the read faulted inside a recorded region.
int reel_guarded_read_byte(const volatile uint8_t *address, uint8_t *value);

/// LMDB's assertion callback (`mdb_env_set_assert`): LMDB asserts on page invariants a damaged
/// file breaks (`IS_LEAF(mp)` in `mdb_cursor_next`, found by the bit-flip test) and then aborts.
/// Inside a guarded read the assertion abandons the read, as a fault does (`REEL_LMDB_FAULTED`);
/// inside another LMDB call it ends the process with the guard's message and exit status 74;
/// elsewhere it returns, and LMDB prints the assertion and aborts as before.
void reel_lmdb_assert(MDB_env *env, const char *message);

/// Marks the calling thread as inside an LMDB call that reads pages, until the matching leave.
void reel_fault_guard_enter(void);
void reel_fault_guard_leave(void);

#endif
