#ifndef CREEL_SOCKET_H
#define CREEL_SOCKET_H

#include <stdint.h>
#include <sys/types.h>

/// The layout of Linux's `struct ucred`, filled by getsockopt(SO_PEERCRED): the pid, uid and gid of
/// the process at the other end of a Unix domain socket. glibc declares `struct ucred` only under
/// _GNU_SOURCE, which Swift's Glibc module is not built with; shim.c checks that the layouts agree.
typedef struct {
    pid_t pid;
    uid_t uid;
    gid_t gid;
} reel_ucred;

/// Binds a listening Unix domain socket at `path` (SOCK_CLOEXEC) with room for `backlog`
/// connections waiting to be accepted. Returns the descriptor, or -1 with errno set.
int reel_listen_unix(const char *path, int backlog);

/// Connects to the Unix domain socket at `path` and sends `fd` over it (SCM_RIGHTS), with the data
/// `R` and `note` (8 bytes, little-endian) beside it, so that what the receiver needs with the
/// descriptor cannot be lost apart from it. Returns 0, or -1 with errno set. The caller still
/// owns `fd`.
int reel_send_descriptor(const char *path, int fd, uint64_t note);

/// Accepts one connection on `listener` within `timeout_ms` milliseconds and receives the
/// descriptor sent over it (``reel_send_descriptor``), and its note into `note` with `has_note`
/// set to 1 (0 when the sender sent the byte `R` alone, as senders before the note did). Returns
/// the descriptor (SOCK_CLOEXEC set), or -1 with errno set (ETIMEDOUT when nothing came in time,
/// EBADMSG when no descriptor came).
int reel_receive_descriptor(int listener, int timeout_ms, uint64_t *note, int *has_note);

#endif
