#define _GNU_SOURCE
#include <stddef.h>
#include <sys/socket.h>
#include "CReelSocket.h"

_Static_assert(sizeof(struct ucred) == sizeof(reel_ucred), "reel_ucred must match struct ucred");
_Static_assert(offsetof(struct ucred, uid) == offsetof(reel_ucred, uid), "reel_ucred.uid must match struct ucred");
_Static_assert(offsetof(struct ucred, gid) == offsetof(reel_ucred, gid), "reel_ucred.gid must match struct ucred");
