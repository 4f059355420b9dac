// Reel's view of xxHash: Debian's libxxhash-dev (pkg-config `libxxhash`). XXH3-64 checksums every
// record Reel stores; see Sources/ReelStorage/RecordChecksum.swift for why this hash.
#ifndef CREEL_XXHASH_SHIM_H
#define CREEL_XXHASH_SHIM_H
#include <xxhash.h>
#endif
