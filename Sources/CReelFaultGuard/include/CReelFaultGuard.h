#ifndef CREEL_FAULT_GUARD_H
#define CREEL_FAULT_GUARD_H

#include <stddef.h>
#include <stdint.h>

/// Records (or, with length 0, forgets) the memory region of LMDB map `id`. Async-signal-safe
/// readers see each region's start and length through atomics.
void reel_fault_guard_set_region(uint64_t id, const void *start, size_t length);

/// Installs handlers for SIGSEGV and SIGBUS that turn a fault *inside a recorded LMDB map* into a
/// one-line message on stderr (`message`, then the address) and exit status 74 (EX_IOERR): the
/// data file is damaged in a way LMDB could not tell. A fault anywhere else is a bug: the handler
/// puts back the previous disposition and returns, so the fault repeats and ends the process as
/// before (with Swift's backtrace). Call once, early, from the executable.
void reel_fault_guard_install(const char *message);

#endif
