#ifndef CREEL_SOCKET_H
#define CREEL_SOCKET_H

#include <sys/types.h>

/// The layout of Linux's `struct ucred`, filled by getsockopt(SO_PEERCRED): the pid, uid and gid of
/// the process at the other end of a Unix domain socket. glibc declares `struct ucred` only under
/// _GNU_SOURCE, which Swift's Glibc module is not built with; shim.c checks that the layouts agree.
typedef struct {
    pid_t pid;
    uid_t uid;
    gid_t gid;
} reel_ucred;

#endif
