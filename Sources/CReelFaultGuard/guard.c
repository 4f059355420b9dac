// The last line of defence against a damaged LMDB file: see CReelFaultGuard.h. Everything in the
// handler is async-signal-safe (atomics, write, sigaction, _exit).
#include "CReelFaultGuard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define REGIONS 64

static struct {
    _Atomic uint64_t id;
    _Atomic uintptr_t start;
    _Atomic size_t length;
} regions[REGIONS];

static const char *guard_message = "the data file is damaged";
static struct sigaction previous_segv, previous_bus;
// How deep the thread is in LMDB calls that read pages. Initial-exec TLS: safe to read in a handler.
static __thread int inside_lmdb __attribute__((tls_model("initial-exec")));

// Where a guarded read on this thread jumps back to after a fault, or NULL.
static __thread sigjmp_buf *recovery __attribute__((tls_model("initial-exec")));

void reel_fault_guard_enter(void) { inside_lmdb++; }
void reel_fault_guard_leave(void) { inside_lmdb--; }

// Runs `call(arguments)` with this thread's recovery point set: a fault inside jumps back here.
// The jump buffer lives in this frame, which is active for the whole call.
//
// The jump does not save the signal mask (`sigsetjmp(here, 0)`): saving it is a `sigprocmask`
// system call on every guarded read, which cost a replay about a tenth of its time. The only change
// a fault makes to the mask is the handler's own signal, blocked while it runs; it is unblocked
// again below, on the (rare) way back from a fault.
static int run_guarded(int (*call)(void *), void *arguments) {
    sigjmp_buf here;
    if (sigsetjmp(here, 0)) {
        recovery = NULL;
        inside_lmdb--;
        sigset_t faults;
        sigemptyset(&faults);
        sigaddset(&faults, SIGSEGV);
        sigaddset(&faults, SIGBUS);
        pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
        return REEL_LMDB_FAULTED;
    }
    inside_lmdb++;
    recovery = &here;
    int rc = call(arguments);
    recovery = NULL;
    inside_lmdb--;
    return rc;
}

struct get_arguments { MDB_txn *txn; MDB_dbi dbi; MDB_val *key, *data; };
static int call_get(void *raw) {
    struct get_arguments *a = raw;
    return mdb_get(a->txn, a->dbi, a->key, a->data);
}

struct cursor_get_arguments { MDB_cursor *cursor; MDB_val *key, *data; MDB_cursor_op op; };
static int call_cursor_get(void *raw) {
    struct cursor_get_arguments *a = raw;
    return mdb_cursor_get(a->cursor, a->key, a->data, a->op);
}

int reel_guarded_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data) {
    struct get_arguments arguments = { txn, dbi, key, data };
    return run_guarded(call_get, &arguments);
}

int reel_guarded_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op) {
    struct cursor_get_arguments arguments = { cursor, key, data, op };
    return run_guarded(call_cursor_get, &arguments);
}

struct read_byte_arguments { const volatile uint8_t *address; uint8_t *value; };
static int call_read_byte(void *raw) {
    struct read_byte_arguments *a = raw;
    *a->value = *a->address;
    return 0;
}

int reel_guarded_read_byte(const volatile uint8_t *address, uint8_t *value) {
    struct read_byte_arguments arguments = { address, value };
    return run_guarded(call_read_byte, &arguments);
}

void reel_fault_guard_set_region(uint64_t id, const void *start, size_t length) {
    // id 0 marks a free slot, so ids are stored plus one.
    uint64_t key = id + 1;
    int free_slot = -1;
    for (int i = 0; i < REGIONS; i++) {
        uint64_t held = atomic_load(&regions[i].id);
        if (held == key) {
            atomic_store(&regions[i].length, 0);
            atomic_store(&regions[i].start, (uintptr_t)start);
            atomic_store(&regions[i].length, length);
            if (length == 0) atomic_store(&regions[i].id, 0);
            return;
        }
        if (held == 0 && free_slot < 0) free_slot = i;
    }
    if (length == 0 || free_slot < 0) return;  // more than 64 environments: the rest go unguarded
    atomic_store(&regions[free_slot].start, (uintptr_t)start);
    atomic_store(&regions[free_slot].length, length);
    atomic_store(&regions[free_slot].id, key);
}

static int in_region(uintptr_t address) {
    for (int i = 0; i < REGIONS; i++) {
        if (atomic_load(&regions[i].id) == 0) continue;
        uintptr_t start = atomic_load(&regions[i].start);
        size_t length = atomic_load(&regions[i].length);
        if (address >= start && address - start < length) return 1;
    }
    return 0;
}

static void write_text(const char *text) {
    size_t length = strlen(text);
    while (length > 0) {
        ssize_t written = write(2, text, length);
        if (written <= 0) return;
        text += written;
        length -= (size_t)written;
    }
}

static void handle_fault(int signal, siginfo_t *info, void *context) {
    (void)context;
    uintptr_t address = (uintptr_t)info->si_addr;
    if (!in_region(address) && inside_lmdb == 0) {
        // Not ours: restore what was there and let the fault happen again under it.
        sigaction(signal, signal == SIGBUS ? &previous_bus : &previous_segv, NULL);
        return;
    }
    if (recovery != NULL) siglongjmp(*recovery, 1);  // a guarded read: abandon it, not the process
    char hex[2 + 16 + 1] = "0x";
    for (int i = 0; i < 16; i++) {
        hex[2 + i] = "0123456789abcdef"[(address >> (60 - 4 * i)) & 0xf];
    }
    hex[18] = 0;
    write_text(guard_message);
    write_text(signal == SIGBUS ? " (SIGBUS at " : " (SIGSEGV at ");
    write_text(hex);
    write_text(")\n");
    _exit(74);
}

void reel_lmdb_assert(MDB_env *env, const char *message) {
    (void)env;
    if (recovery != NULL) siglongjmp(*recovery, 1);  // a guarded read: abandon it, not the process
    if (inside_lmdb == 0) return;
    write_text(guard_message);
    write_text(" (LMDB: ");
    write_text(message);
    write_text(")\n");
    _exit(74);
}

void reel_fault_guard_install(const char *message) {
    guard_message = message;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = handle_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
    sigaction(SIGBUS, &action, &previous_bus);
}
