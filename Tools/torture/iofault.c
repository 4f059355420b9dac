/*
 * iofault.c — an LD_PRELOAD shim that records and breaks the I/O of a process on the files of one
 * directory. Test-only; built by Tools/torture with
 *
 *     cc -shared -fPIC -O2 -o .build/torture/libiofault.so Tools/torture/iofault.c -ldl -lpthread
 *
 * and used as `LD_PRELOAD=.../libiofault.so TORTURE_DIR=<data dir> … reeld --data-dir <data dir>`.
 *
 * It only concerns regular files whose real path (read from /proc/self/fd/N right after the real
 * open succeeded) lies inside the directory named by TORTURE_DIR. Everything else passes through
 * untouched. Intercepted: open, open64, openat, openat64, creat, creat64, __open_2, __open64_2,
 * __openat_2, __openat64_2, close, write, pwrite, pwrite64, writev, pwritev, pwritev2,
 * ftruncate, ftruncate64, fsync, fdatasync, sync_file_range, msync, sync, syncfs.
 * (liblmdb 0.9 without MDB_WRITEMAP uses open, pwrite, writev, write, fdatasync, fsync, ftruncate
 * and, for meta pages, pwrite on a second descriptor of data.mdb opened with O_DSYNC; see
 * `strace -f` in Tools/torture/README.md.)
 *
 * ---------------------------------------------------------------------------------------------
 * Journal mode: TORTURE_JOURNAL=<path>
 * ---------------------------------------------------------------------------------------------
 * Every write to a tracked file and every durability barrier is appended to the journal, in the
 * order the calls returned. The journal *is* the disk: a power cut at journal position C is
 * simulated by Tools/torture/journal.py from the records before C. Records are framed
 *
 *     struct { u32 magic 'TJRN' (0x4E524A54); u32 type; u32 file; u32 flags;
 *              u64 offset; u64 length; } header (32 bytes, little endian), then `length` bytes
 *
 * and each record is appended with one write() on an O_APPEND descriptor, under a mutex, so that
 * records of all threads (and of other processes appending to the same journal, such as the
 * workload's ACK records) never interleave. Types:
 *
 *     1 OPEN   file id, payload = name relative to TORTURE_DIR; flags: 1 = opened O_DSYNC/O_SYNC.
 *              The first OPEN of a name assigns its id; later opens of the same name reuse it.
 *     2 WRITE  bytes written at offset (write() on an O_APPEND fd or at the file position is
 *              recorded at the offset it landed on); flags: 1 = durable on return (O_DSYNC fd).
 *     3 SYNC   fsync/fdatasync returned 0 on the file: every earlier write to it is durable.
 *     4 ACK    appended by the workload client (not by this shim): payload = text identity.
 *     5 INIT   initial contents of a file that existed when first opened (durable), in chunks.
 *     6 TRUNC  ftruncate to `offset` bytes.
 *     7 SYNCALL sync()/syncfs(): every earlier write to every tracked file is durable.
 *     8 NOTE   something the image builder cannot model (msync on a tracked mapping); payload text.
 *
 * Real syncs are skipped in journal mode unless TORTURE_REAL_SYNC=1 (the journal is the disk,
 * and skipping them makes runs fast); O_DSYNC/O_SYNC is stripped from the real open for the same
 * reason (the record keeps the flag).
 *
 * ---------------------------------------------------------------------------------------------
 * Fault mode: TORTURE_FAULT=<rule>[;<rule>…]
 * ---------------------------------------------------------------------------------------------
 *     rule   := CALL ':' ERR [ ':' COND ]
 *     CALL   := write      any write-family call: write, pwrite, pwrite64, writev, pwritev
 *             | datawrite  a write-family call on a descriptor opened without O_DSYNC/O_SYNC
 *             | metawrite  a write-family call on a descriptor opened with O_DSYNC/O_SYNC
 *                          (LMDB's meta page writes)
 *             | pwrite | writev | pwritev        (pwrite covers pwrite64)
 *             | fsync | fdatasync | sync (= fsync or fdatasync) | sync_file_range | msync
 *             | ftruncate | open
 *     ERR    := EIO | ENOSPC | EDQUOT | EROFS | EFBIG | EINTR | EAGAIN | ENOMEM | <number>
 *             | LIE        succeed without doing it: a write is dropped, a sync is not done
 *                          (and, in journal mode, no barrier is recorded) — a broken disk or
 *                          kernel that pretends; used to prove the power-cut checker can fail.
 *     COND   := always                 (default) every matching call
 *             | nth=N                  only the Nth matching call (1-based)
 *             | after=N                the (N+1)th matching call only (N succeed, then one fails)
 *             | from=N                 the Nth matching call and every later one
 *             | while=PATH             every matching call while PATH exists ("disk full until
 *                                      space is back": remove PATH to end the fault)
 * Only calls on tracked files match and count. A faulted call returns -1 with errno = ERR and
 * does nothing (a faulted write writes nothing). Each firing is logged, one line, to
 * TORTURE_LOG if set ("fault <call> #<n> <ERR>"), so trials can tell whether the fault fired.
 * Journal mode and fault mode can be combined.
 *
 * Other environment: TORTURE_STATS=<path> — at exit, append a line of counters.
 * TORTURE_NO_DSYNC=1 — in journal mode, record writes through O_DSYNC/O_SYNC descriptors as
 * ordinary (not durable) writes: with fdatasync:LIE, a disk that ignores every flush.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

#define MAGIC 0x4E524A54u
enum { R_OPEN = 1, R_WRITE = 2, R_SYNC = 3, R_ACK = 4, R_INIT = 5, R_TRUNC = 6, R_SYNCALL = 7, R_NOTE = 8 };

struct rec_header {
    uint32_t magic, type, file, flags;
    uint64_t offset, length;
};

#define MAX_FD 65536
#define MAX_FILES 256
struct fdinfo {
    int tracked;   /* 1 if this fd is a tracked file */
    int file;      /* file id */
    int dsync;     /* opened with O_DSYNC or O_SYNC */
    int append;    /* opened with O_APPEND */
};

static struct fdinfo fds[MAX_FD];
static char *file_names[MAX_FILES];
static int file_count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int initialized;
static char dir_real[PATH_MAX + 2];
static size_t dir_real_len;
static int journal_fd = -1;
static int log_fd = -1;
static int do_real_sync = 0;
static int no_dsync = 0;

/* fault rules */
enum {
    C_WRITE = 1 << 0, C_DATAWRITE = 1 << 1, C_METAWRITE = 1 << 2, C_PWRITE = 1 << 3,
    C_WRITEV = 1 << 4, C_PWRITEV = 1 << 5, C_FSYNC = 1 << 6, C_FDATASYNC = 1 << 7,
    C_SFR = 1 << 8, C_MSYNC = 1 << 9, C_FTRUNCATE = 1 << 10, C_OPEN = 1 << 11, C_PLAINWRITE = 1 << 12,
};
enum { K_ALWAYS, K_NTH, K_FROM, K_WHILE };
#define ERR_LIE (-1)
struct rule {
    unsigned mask;
    char name[32];
    int err;
    int kind;
    long n;
    char path[PATH_MAX];
    long count;
};
#define MAX_RULES 8
static struct rule rules[MAX_RULES];
static int rule_count;
static long stat_writes, stat_syncs, stat_faults, stat_lies;

/* real functions */
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real___open_2)(const char *, int);
static int (*real___open64_2)(const char *, int);
static int (*real___openat_2)(int, const char *, int);
static int (*real___openat64_2)(int, const char *, int);
static int (*real_creat)(const char *, mode_t);
static int (*real_creat64)(const char *, mode_t);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off64_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off64_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_sync_file_range)(int, off64_t, off64_t, unsigned int);
static int (*real_msync)(void *, size_t, int);
static void (*real_sync)(void);
static int (*real_syncfs)(int);

#define RESOLVE(name) real_##name = dlsym(RTLD_NEXT, #name)

static void raw_write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t n = syscall(SYS_write, fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

static void logf_line(const char *fmt, ...) {
    if (log_fd < 0) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) raw_write_all(log_fd, buf, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf - 1));
}

static int parse_errno(const char *s) {
    static const struct { const char *name; int value; } table[] = {
        {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EROFS", EROFS}, {"EFBIG", EFBIG},
        {"EINTR", EINTR}, {"EAGAIN", EAGAIN}, {"ENOMEM", ENOMEM}, {"EBADF", EBADF}, {"EPERM", EPERM},
    };
    if (strcmp(s, "LIE") == 0) return ERR_LIE;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(s, table[i].name) == 0) return table[i].value;
    char *end;
    long v = strtol(s, &end, 10);
    if (*s && !*end && v > 0) return (int)v;
    return 0;
}

static unsigned parse_call(const char *s) {
    static const struct { const char *name; unsigned mask; } table[] = {
        {"write", C_WRITE}, {"datawrite", C_DATAWRITE}, {"metawrite", C_METAWRITE},
        {"pwrite", C_PWRITE}, {"pwrite64", C_PWRITE}, {"writev", C_WRITEV}, {"pwritev", C_PWRITEV},
        {"fsync", C_FSYNC}, {"fdatasync", C_FDATASYNC}, {"sync", C_FSYNC | C_FDATASYNC},
        {"sync_file_range", C_SFR}, {"msync", C_MSYNC}, {"ftruncate", C_FTRUNCATE}, {"open", C_OPEN},
        {"plainwrite", C_PLAINWRITE},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(s, table[i].name) == 0) return table[i].mask;
    return 0;
}

static void die_spec(const char *spec, const char *why) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "iofault: bad TORTURE_FAULT '%s': %s\n", spec, why);
    raw_write_all(2, buf, (size_t)n);
    _exit(97);
}

static void parse_faults(const char *spec) {
    char *copy = strdup(spec), *save = NULL;
    for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        if (rule_count == MAX_RULES) die_spec(spec, "too many rules");
        struct rule *r = &rules[rule_count++];
        memset(r, 0, sizeof *r);
        char *call = tok, *err = strchr(tok, ':');
        if (!err) die_spec(spec, "expected CALL:ERR[:COND]");
        *err++ = 0;
        char *cond = strchr(err, ':');
        if (cond) *cond++ = 0;
        r->mask = parse_call(call);
        if (!r->mask) die_spec(spec, "unknown call");
        snprintf(r->name, sizeof r->name, "%s", call);
        r->err = parse_errno(err);
        if (!r->err) die_spec(spec, "unknown errno");
        r->kind = K_ALWAYS;
        if (cond && *cond && strcmp(cond, "always") != 0) {
            if (strncmp(cond, "nth=", 4) == 0) { r->kind = K_NTH; r->n = atol(cond + 4); }
            else if (strncmp(cond, "after=", 6) == 0) { r->kind = K_NTH; r->n = atol(cond + 6) + 1; }
            else if (strncmp(cond, "from=", 5) == 0) { r->kind = K_FROM; r->n = atol(cond + 5); }
            else if (strncmp(cond, "while=", 6) == 0) { r->kind = K_WHILE; snprintf(r->path, sizeof r->path, "%s", cond + 6); }
            else die_spec(spec, "unknown condition");
            if ((r->kind == K_NTH || r->kind == K_FROM) && r->n < 1) die_spec(spec, "count must be >= 1");
        }
    }
    free(copy);
}

static void write_stats(void) {
    const char *p = getenv("TORTURE_STATS");
    if (!p) return;
    int fd = (int)syscall(SYS_open, p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char buf[256];
    int n = snprintf(buf, sizeof buf, "pid=%d writes=%ld syncs=%ld faults=%ld lies=%ld\n",
                     (int)getpid(), stat_writes, stat_syncs, stat_faults, stat_lies);
    raw_write_all(fd, buf, (size_t)n);
    syscall(SYS_close, fd);
}

static void init(void) {
    if (initialized) return;
    RESOLVE(open); RESOLVE(open64); RESOLVE(openat); RESOLVE(openat64);
    RESOLVE(__open_2); RESOLVE(__open64_2); RESOLVE(__openat_2); RESOLVE(__openat64_2);
    RESOLVE(creat); RESOLVE(creat64); RESOLVE(close); RESOLVE(write); RESOLVE(pwrite); RESOLVE(pwrite64);
    RESOLVE(writev); RESOLVE(pwritev); RESOLVE(pwritev2); RESOLVE(ftruncate); RESOLVE(ftruncate64);
    RESOLVE(fsync); RESOLVE(fdatasync); RESOLVE(sync_file_range); RESOLVE(msync); RESOLVE(sync);
    RESOLVE(syncfs);
    const char *j = getenv("TORTURE_JOURNAL");
    if (j && *j) {
        journal_fd = (int)syscall(SYS_open, j, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (journal_fd < 0) {
            const char msg[] = "iofault: cannot open TORTURE_JOURNAL\n";
            raw_write_all(2, msg, sizeof msg - 1);
            _exit(97);
        }
    }
    const char *l = getenv("TORTURE_LOG");
    if (l && *l) log_fd = (int)syscall(SYS_open, l, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const char *f = getenv("TORTURE_FAULT");
    if (f && *f) parse_faults(f);
    const char *nd = getenv("TORTURE_NO_DSYNC");
    no_dsync = nd && strcmp(nd, "1") == 0;
    const char *rs = getenv("TORTURE_REAL_SYNC");
    do_real_sync = (journal_fd < 0) || (rs && strcmp(rs, "1") == 0);
    initialized = 1;
    atexit(write_stats);
}

__attribute__((constructor)) static void ctor(void) { init(); }

/* The directory's real path; resolved lazily since it may be created by the process itself. */
static int dir_ready(void) {
    if (dir_real_len) return 1;
    const char *d = getenv("TORTURE_DIR");
    if (!d || !*d) return 0;
    char tmp[PATH_MAX];
    if (!realpath(d, tmp)) return 0;
    snprintf(dir_real, sizeof dir_real, "%s/", tmp);
    dir_real_len = strlen(dir_real);
    return 1;
}

static void journal_record(uint32_t type, uint32_t file, uint32_t flags, uint64_t offset,
                           const struct iovec *iov, int iovcnt, uint64_t length) {
    /* caller holds `lock` */
    if (journal_fd < 0) return;
    size_t total = sizeof(struct rec_header) + length;
    char *buf = malloc(total);
    if (!buf) { const char m[] = "iofault: out of memory\n"; raw_write_all(2, m, sizeof m - 1); _exit(97); }
    struct rec_header h = { MAGIC, type, file, flags, offset, length };
    memcpy(buf, &h, sizeof h);
    size_t pos = sizeof h;
    for (int i = 0; i < iovcnt && pos < total; i++) {
        size_t take = iov[i].iov_len;
        if (take > total - pos) take = total - pos;
        memcpy(buf + pos, iov[i].iov_base, take);
        pos += take;
    }
    raw_write_all(journal_fd, buf, total);
    free(buf);
}

static void journal_simple(uint32_t type, uint32_t file, uint32_t flags, uint64_t offset, const void *p, size_t len) {
    struct iovec v = { (void *)p, len };
    journal_record(type, file, flags, offset, &v, 1, len);
}

/* Called after a real open succeeded. */
static void track_open(int fd, int flags) {
    if (fd < 0 || fd >= MAX_FD) return;
    fds[fd].tracked = 0;
    if (!dir_ready()) return;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return;
    path[n] = 0;
    if ((size_t)n <= dir_real_len || strncmp(path, dir_real, dir_real_len) != 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    const char *rel = path + dir_real_len;
    pthread_mutex_lock(&lock);
    int id = -1;
    for (int i = 0; i < file_count; i++)
        if (strcmp(file_names[i], rel) == 0) { id = i; break; }
    int is_new = 0;
    if (id < 0 && file_count < MAX_FILES) {
        id = file_count++;
        file_names[id] = strdup(rel);
        is_new = 1;
    }
    if (id >= 0) {
        fds[fd].tracked = 1;
        fds[fd].file = id;
        fds[fd].dsync = (flags & O_DSYNC) || (flags & O_SYNC);
        fds[fd].append = (flags & O_APPEND) != 0;
        journal_simple(R_OPEN, (uint32_t)id, fds[fd].dsync ? 1 : 0, 0, rel, strlen(rel));
        if (is_new && journal_fd >= 0 && st.st_size > 0 && !(flags & O_TRUNC)) {
            /* record the initial contents, as durable */
            char *buf = malloc(1 << 20);
            off_t off = 0;
            while (buf && off < st.st_size) {
                ssize_t r = pread(fd, buf, 1 << 20, off);
                if (r <= 0) break;
                journal_simple(R_INIT, (uint32_t)id, 0, (uint64_t)off, buf, (size_t)r);
                off += r;
            }
            free(buf);
        }
    }
    pthread_mutex_unlock(&lock);
}

static int tracked(int fd) { return fd >= 0 && fd < MAX_FD && fds[fd].tracked; }

/* Returns 0 to proceed, ERR_LIE to pretend, or an errno to fail with. */
static int check_fault(unsigned mask, const char *call) {
    if (!rule_count) return 0;
    int result = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < rule_count; i++) {
        struct rule *r = &rules[i];
        if (!(r->mask & mask)) continue;
        long nth = ++r->count;
        int fire = 0;
        switch (r->kind) {
        case K_ALWAYS: fire = 1; break;
        case K_NTH: fire = nth == r->n; break;
        case K_FROM: fire = nth >= r->n; break;
        case K_WHILE: fire = syscall(SYS_access, r->path, F_OK) == 0; break;
        }
        if (fire && !result) {
            result = r->err;
            if (r->err == ERR_LIE) stat_lies++; else stat_faults++;
            logf_line("fault %s(%s) #%ld %s\n", r->name, call, nth, r->err == ERR_LIE ? "LIE" : strerror(r->err));
        }
    }
    pthread_mutex_unlock(&lock);
    return result;
}

static unsigned write_mask(int fd, unsigned specific) {
    return C_WRITE | specific | (fds[fd].dsync ? C_METAWRITE : C_DATAWRITE);
}

/* ---------------------------------------------------------------------------------- opens */

static int open_flags_for_real(int flags) {
    if (journal_fd >= 0 && !do_real_sync) flags &= ~(O_DSYNC | O_SYNC);
    return flags;
}

#define OPEN_BODY(callexpr)                                                                 \
    init();                                                                                 \
    int real_flags = open_flags_for_real(flags);                                            \
    int fd = (callexpr);                                                                    \
    if (fd >= 0) {                                                                          \
        int saved = errno;                                                                  \
        track_open(fd, flags);                                                              \
        if (tracked(fd)) {                                                                  \
            int e = check_fault(C_OPEN, "open");                                            \
            if (e > 0) { real_close(fd); fds[fd].tracked = 0; errno = e; return -1; }       \
        }                                                                                   \
        errno = saved;                                                                      \
    }                                                                                       \
    return fd;

static mode_t va_mode(int flags, va_list ap) {
    if ((flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE) return (mode_t)va_arg(ap, int);
    return 0;
}

int open(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = va_mode(flags, ap); va_end(ap);
    OPEN_BODY(real_open(path, real_flags, mode))
}
int open64(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = va_mode(flags, ap); va_end(ap);
    OPEN_BODY((real_open64 ? real_open64 : real_open)(path, real_flags, mode))
}
int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = va_mode(flags, ap); va_end(ap);
    OPEN_BODY(real_openat(dirfd, path, real_flags, mode))
}
int openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = va_mode(flags, ap); va_end(ap);
    OPEN_BODY((real_openat64 ? real_openat64 : real_openat)(dirfd, path, real_flags, mode))
}
int __open_2(const char *path, int flags) { OPEN_BODY(real_open(path, real_flags, 0)) }
int __open64_2(const char *path, int flags) { OPEN_BODY(real_open(path, real_flags, 0)) }
int __openat_2(int dirfd, const char *path, int flags) { OPEN_BODY(real_openat(dirfd, path, real_flags, 0)) }
int __openat64_2(int dirfd, const char *path, int flags) { OPEN_BODY(real_openat(dirfd, path, real_flags, 0)) }
int creat(const char *path, mode_t mode) {
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    OPEN_BODY(real_open(path, real_flags, mode))
}
int creat64(const char *path, mode_t mode) {
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    OPEN_BODY(real_open(path, real_flags, mode))
}

int close(int fd) {
    init();
    if (fd >= 0 && fd < MAX_FD) {
        pthread_mutex_lock(&lock);
        fds[fd].tracked = 0;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}

/* --------------------------------------------------------------------------------- writes */

/* Record a completed write of `done` bytes from iov at offset. */
static void record_write(int fd, off_t offset, const struct iovec *iov, int iovcnt, ssize_t done) {
    if (done <= 0) return;
    pthread_mutex_lock(&lock);
    stat_writes++;
    journal_record(R_WRITE, (uint32_t)fds[fd].file, fds[fd].dsync && !no_dsync ? 1 : 0, (uint64_t)offset, iov, iovcnt, (uint64_t)done);
    pthread_mutex_unlock(&lock);
}

/* For write()/writev() at the file position: the offset the bytes landed on. */
static off_t position_before(int fd, size_t len, ssize_t done) {
    if (fds[fd].append) {
        struct stat st;
        if (fstat(fd, &st) == 0) return st.st_size - done;
    }
    off_t now = lseek(fd, 0, SEEK_CUR);
    (void)len;
    return now - done;
}

ssize_t write(int fd, const void *buf, size_t len) {
    init();
    if (!tracked(fd)) return real_write(fd, buf, len);
    int e = check_fault(write_mask(fd, C_PLAINWRITE), "write");
    if (e == ERR_LIE) return (ssize_t)len;
    if (e) { errno = e; return -1; }
    ssize_t n = real_write(fd, buf, len);
    if (n > 0) {
        int saved = errno;
        struct iovec v = { (void *)buf, (size_t)n };
        record_write(fd, position_before(fd, len, n), &v, 1, n);
        errno = saved;
    }
    return n;
}

static ssize_t do_pwrite(int fd, const void *buf, size_t len, off_t off, int is64) {
    init();
    if (!tracked(fd)) return is64 && real_pwrite64 ? real_pwrite64(fd, buf, len, off) : real_pwrite(fd, buf, len, off);
    int e = check_fault(write_mask(fd, C_PWRITE), "pwrite");
    if (e == ERR_LIE) return (ssize_t)len;
    if (e) { errno = e; return -1; }
    ssize_t n = is64 && real_pwrite64 ? real_pwrite64(fd, buf, len, off) : real_pwrite(fd, buf, len, off);
    if (n > 0) {
        int saved = errno;
        struct iovec v = { (void *)buf, (size_t)n };
        record_write(fd, off, &v, 1, n);
        errno = saved;
    }
    return n;
}
ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) { return do_pwrite(fd, buf, len, off, 0); }
ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off) { return do_pwrite(fd, buf, len, off, 1); }

static size_t iov_total(const struct iovec *iov, int n) {
    size_t t = 0;
    for (int i = 0; i < n; i++) t += iov[i].iov_len;
    return t;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    init();
    if (!tracked(fd)) return real_writev(fd, iov, iovcnt);
    int e = check_fault(write_mask(fd, C_WRITEV), "writev");
    if (e == ERR_LIE) return (ssize_t)iov_total(iov, iovcnt);
    if (e) { errno = e; return -1; }
    ssize_t n = real_writev(fd, iov, iovcnt);
    if (n > 0) {
        int saved = errno;
        record_write(fd, position_before(fd, iov_total(iov, iovcnt), n), iov, iovcnt, n);
        errno = saved;
    }
    return n;
}

ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t off) {
    init();
    if (!tracked(fd)) return real_pwritev(fd, iov, iovcnt, off);
    int e = check_fault(write_mask(fd, C_PWRITEV), "pwritev");
    if (e == ERR_LIE) return (ssize_t)iov_total(iov, iovcnt);
    if (e) { errno = e; return -1; }
    ssize_t n = real_pwritev(fd, iov, iovcnt, off);
    if (n > 0) { int saved = errno; record_write(fd, off, iov, iovcnt, n); errno = saved; }
    return n;
}

ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags) {
    init();
    if (!tracked(fd)) return real_pwritev2(fd, iov, iovcnt, off, flags);
    int e = check_fault(write_mask(fd, C_PWRITEV), "pwritev2");
    if (e == ERR_LIE) return (ssize_t)iov_total(iov, iovcnt);
    if (e) { errno = e; return -1; }
    off_t at = off;
    ssize_t n = real_pwritev2(fd, iov, iovcnt, off, flags);
    if (n > 0) {
        int saved = errno;
        if (off == -1) at = position_before(fd, iov_total(iov, iovcnt), n);
        record_write(fd, at, iov, iovcnt, n);
        errno = saved;
    }
    return n;
}

/* ------------------------------------------------------------------------ truncate & sync */

static int do_ftruncate(int fd, off_t len, int is64) {
    init();
    int (*f)(int, off_t) = is64 && real_ftruncate64 ? (int (*)(int, off_t))real_ftruncate64 : real_ftruncate;
    if (!tracked(fd)) return f(fd, len);
    int e = check_fault(C_FTRUNCATE, "ftruncate");
    if (e == ERR_LIE) return 0;
    if (e) { errno = e; return -1; }
    int r = f(fd, len);
    if (r == 0) {
        pthread_mutex_lock(&lock);
        journal_simple(R_TRUNC, (uint32_t)fds[fd].file, 0, (uint64_t)len, NULL, 0);
        pthread_mutex_unlock(&lock);
    }
    return r;
}
int ftruncate(int fd, off_t len) { return do_ftruncate(fd, len, 0); }
int ftruncate64(int fd, off64_t len) { return do_ftruncate(fd, (off_t)len, 1); }

static int do_sync(int fd, int data_only) {
    init();
    int (*f)(int) = data_only ? real_fdatasync : real_fsync;
    if (!tracked(fd)) return f(fd);
    int e = check_fault(data_only ? C_FDATASYNC : C_FSYNC, data_only ? "fdatasync" : "fsync");
    if (e == ERR_LIE) return 0;
    if (e) { errno = e; return -1; }
    int r = do_real_sync ? f(fd) : 0;
    if (r == 0) {
        pthread_mutex_lock(&lock);
        stat_syncs++;
        journal_simple(R_SYNC, (uint32_t)fds[fd].file, 0, 0, NULL, 0);
        pthread_mutex_unlock(&lock);
    }
    return r;
}
int fsync(int fd) { return do_sync(fd, 0); }
int fdatasync(int fd) { return do_sync(fd, 1); }

int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags) {
    init();
    if (!tracked(fd)) return real_sync_file_range(fd, off, n, flags);
    int e = check_fault(C_SFR, "sync_file_range");
    if (e == ERR_LIE) return 0;
    if (e) { errno = e; return -1; }
    /* Not a durability barrier (no metadata, no disk cache flush): nothing recorded. */
    return do_real_sync ? real_sync_file_range(fd, off, n, flags) : 0;
}

int msync(void *addr, size_t len, int flags) {
    init();
    /* A mapping cannot be tied to a file cheaply; LMDB calls msync only with MDB_WRITEMAP, which
       Reel does not use. Faults apply to every msync while a rule names it. */
    if (rule_count) {
        int e = check_fault(C_MSYNC, "msync");
        if (e == ERR_LIE) return 0;
        if (e) { errno = e; return -1; }
    }
    if (journal_fd >= 0) {
        pthread_mutex_lock(&lock);
        const char note[] = "msync called: writes through a shared mapping are not journaled";
        journal_simple(R_NOTE, 0, 0, 0, note, sizeof note - 1);
        pthread_mutex_unlock(&lock);
    }
    return real_msync(addr, len, flags);
}

void sync(void) {
    init();
    if (do_real_sync) real_sync();
    pthread_mutex_lock(&lock);
    journal_simple(R_SYNCALL, 0, 0, 0, NULL, 0);
    pthread_mutex_unlock(&lock);
}

int syncfs(int fd) {
    init();
    int r = do_real_sync ? real_syncfs(fd) : 0;
    if (r == 0) {
        pthread_mutex_lock(&lock);
        journal_simple(R_SYNCALL, 0, 0, 0, NULL, 0);
        pthread_mutex_unlock(&lock);
    }
    return r;
}
