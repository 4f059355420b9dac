// Reel's view of LMDB: Debian's liblmdb-dev (pkg-config `lmdb`).
#ifndef CREEL_LMDB_SHIM_H
#define CREEL_LMDB_SHIM_H
#include <lmdb.h>
#endif
