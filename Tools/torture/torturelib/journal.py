"""The I/O journal written by iofault.c (and by the workload's ACK records), and the image builder
that turns a journal and a cut position into a directory a real power loss could have left.

Record framing (little endian), shared with iofault.c:

    u32 magic 0x4E524A54 ('TJRN'), u32 type, u32 file, u32 flags, u64 offset, u64 length,
    then `length` payload bytes.

Power-loss model (the assumptions, in the manner of SQLite's crash tests):

* The unit of atomicity is a 512-byte sector: a sector on the medium holds either its old bytes
  or the bytes of one complete write that covered it, never a mix within the sector.
* A file's durable contents are what it held at its last barrier: fsync/fdatasync returning 0
  makes every earlier write to that *file* (through any descriptor) durable; a write through a
  descriptor opened with O_DSYNC/O_SYNC is durable for its own range when it returns;
  sync()/syncfs() makes everything durable.
* Every write after a file's last barrier may or may not have reached the medium, sector by
  sector and in any order: each such sector ends up holding its durable bytes or the bytes of
  *any one* of the later writes that covered it (a later write may be lost while an earlier one
  lands, and the sectors of one page may come from different writes: torn pages). The file's size
  is its durable size, or larger where a landed sector lies past it.
* Directory entries are durable (files created by the daemon exist in the image); `lock.mdb` is
  not carried over (it is a shared-memory lock table that LMDB rebuilds), nor is the socket.
* A truncation is treated as metadata: durable at the next barrier on that file, otherwise it
  may or may not have happened (only growth is modelled for unsynced truncations; LMDB does not
  truncate data.mdb).
* Writes through a shared writable mapping (MDB_WRITEMAP + msync) are not seen by the shim; a
  journal holding an msync NOTE is refused by the builder.
"""

import json
import os
import random
import struct

MAGIC = 0x4E524A54
HEADER = struct.Struct("<IIIIQQ")
R_OPEN, R_WRITE, R_SYNC, R_ACK, R_INIT, R_TRUNC, R_SYNCALL, R_NOTE = 1, 2, 3, 4, 5, 6, 7, 8
NAMES = {1: "OPEN", 2: "WRITE", 3: "SYNC", 4: "ACK", 5: "INIT", 6: "TRUNC", 7: "SYNCALL", 8: "NOTE"}
SECTOR = 512
PAGE = 4096
NOT_CARRIED = {"lock.mdb"}


def encode_record(rtype, payload=b"", file=0, flags=0, offset=0):
    return HEADER.pack(MAGIC, rtype, file, flags, offset, len(payload)) + payload


class AckWriter:
    """Appends ACK records to a journal: O_APPEND, one write() per record, from any thread."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def ack(self, identity, seq):
        rec = encode_record(R_ACK, json.dumps({"id": identity, "seq": seq}).encode())
        n = os.write(self.fd, rec)
        assert n == len(rec), "short ACK write"

    def close(self):
        os.close(self.fd)


class Record:
    __slots__ = ("index", "type", "file", "flags", "offset", "length", "data")

    def __init__(self, index, rtype, file, flags, offset, length, data):
        self.index, self.type, self.file, self.flags = index, rtype, file, flags
        self.offset, self.length, self.data = offset, length, data

    def __repr__(self):
        return "<%d %s f%d fl%d off=%d len=%d>" % (self.index, NAMES.get(self.type, "?"), self.file,
                                                   self.flags, self.offset, self.length)


class Journal:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.raw = f.read()
        mv = memoryview(self.raw)
        self.records = []
        pos, n = 0, len(self.raw)
        while pos + HEADER.size <= n:
            magic, rtype, file, flags, offset, length = HEADER.unpack_from(self.raw, pos)
            if magic != MAGIC:
                raise ValueError("journal %s: bad magic at byte %d" % (path, pos))
            start = pos + HEADER.size
            if start + length > n:
                break  # a record cut short by the kill: ignore the tail
            self.records.append(Record(len(self.records), rtype, file, flags, offset, length,
                                       mv[start:start + length]))
            pos = start + length
        self.names = {}
        for r in self.records:
            if r.type == R_OPEN and r.file not in self.names:
                self.names[r.file] = bytes(r.data).decode()
            if r.type == R_NOTE:
                raise ValueError("journal %s: cannot be modelled: %s" % (path, bytes(r.data).decode()))

    def __len__(self):
        return len(self.records)

    def counts(self):
        c = {}
        for r in self.records:
            k = NAMES.get(r.type, "?")
            if r.type == R_WRITE and r.flags & 1:
                k = "WRITE(dsync)"
            c[k] = c.get(k, 0) + 1
        return c

    def acks(self, upto=None):
        """(index, identity, seq) of every ACK record before `upto`."""
        out = []
        for r in self.records[:upto]:
            if r.type == R_ACK:
                d = json.loads(bytes(r.data))
                out.append((r.index, d["id"], d["seq"]))
        return out

    def barrier_positions(self):
        return [r.index for r in self.records if r.type in (R_SYNC, R_SYNCALL) or
                (r.type == R_WRITE and r.flags & 1)]

    def ack_positions(self):
        return [r.index for r in self.records if r.type == R_ACK]


class _File:
    __slots__ = ("name", "durable", "dsize", "cache", "csize", "pending")

    def __init__(self, name):
        self.name = name
        self.durable = bytearray()   # what the medium surely holds
        self.dsize = 0
        self.cache = bytearray()     # what the page cache holds (every write applied)
        self.csize = 0
        self.pending = {}            # sector -> [(sector bytes, file size after that write)]


def _ensure(buf, size):
    if len(buf) < size:
        buf.extend(b"\0" * (size - len(buf)))


class ImageBuilder:
    """Walks a journal once, forwards only, and produces images at increasing cut positions."""

    def __init__(self, journal):
        self.j = journal
        self.pos = 0
        self.files = {}

    def _file(self, fid):
        f = self.files.get(fid)
        if f is None:
            f = self.files[fid] = _File(self.j.names.get(fid, "file%d" % fid))
        return f

    def _sync_file(self, f):
        for s in f.pending:
            a = s * SECTOR
            _ensure(f.durable, a + SECTOR)
            f.durable[a:a + SECTOR] = f.cache[a:a + SECTOR]
        f.pending.clear()
        f.dsize = f.csize

    def _apply(self, r):
        t = r.type
        if t == R_OPEN:
            self._file(r.file)
        elif t == R_INIT:
            f = self._file(r.file)
            end = r.offset + r.length
            for buf in (f.durable, f.cache):
                _ensure(buf, end)
                buf[r.offset:end] = r.data
            f.dsize = max(f.dsize, end)
            f.csize = max(f.csize, end)
        elif t == R_WRITE:
            f = self._file(r.file)
            end = r.offset + r.length
            _ensure(f.cache, end)
            f.cache[r.offset:end] = r.data
            f.csize = max(f.csize, end)
            first, last = r.offset // SECTOR, (end - 1) // SECTOR
            if r.flags & 1:  # O_DSYNC: this range is durable on return
                _ensure(f.durable, (last + 1) * SECTOR)
                a, b = first * SECTOR, (last + 1) * SECTOR
                _ensure(f.cache, b)
                f.durable[a:b] = f.cache[a:b]
                for s in range(first, last + 1):
                    f.pending.pop(s, None)
                f.dsize = max(f.dsize, end)
            else:
                _ensure(f.cache, (last + 1) * SECTOR)
                for s in range(first, last + 1):
                    a = s * SECTOR
                    f.pending.setdefault(s, []).append((bytes(f.cache[a:a + SECTOR]), f.csize))
        elif t == R_SYNC:
            self._sync_file(self._file(r.file))
        elif t == R_SYNCALL:
            for f in self.files.values():
                self._sync_file(f)
        elif t == R_TRUNC:
            f = self._file(r.file)
            f.csize = r.offset
            if len(f.cache) > r.offset:
                del f.cache[r.offset:]
        # R_ACK: no effect on the disk

    def advance(self, cut):
        if cut < self.pos:
            raise ValueError("cuts must be produced in increasing order")
        recs = self.j.records
        while self.pos < cut:
            self._apply(recs[self.pos])
            self.pos += 1

    def image(self, cut, seed, outdir, mode=None):
        """Write the image at `cut` (records [0, cut) happened) into outdir. Returns a short
        description of what was chosen, for reports. `mode` forces how the writes after the last
        barriers land: none, all, sectors (each sector on its own), pages (whole pages, a few
        torn); by default it is drawn from the seed."""
        self.advance(cut)
        rng = random.Random(seed)
        picked = rng.choice(["none", "all", "sectors", "pages", "pages", "sectors"])
        mode = mode or picked
        os.makedirs(outdir, exist_ok=True)
        landed = torn = lost = 0
        for f in self.files.values():
            if f.name in NOT_CARRIED or "/" in f.name:
                continue
            img = bytearray(f.durable)
            size = f.dsize
            _ensure(img, size)
            page_choice = {}
            for s in sorted(f.pending):
                versions = f.pending[s]
                if mode == "none":
                    choice = None
                elif mode == "all":
                    choice = versions[-1]
                elif mode == "sectors":
                    k = rng.random()
                    choice = None if k < 0.35 else (versions[-1] if k < 0.75 else rng.choice(versions))
                else:  # pages: whole pages land or not, a few are torn
                    p = s * SECTOR // PAGE
                    if p not in page_choice:
                        k = rng.random()
                        page_choice[p] = "lost" if k < 0.4 else ("land" if k < 0.85 else "torn")
                        if page_choice[p] == "torn":
                            torn += 1
                    how = page_choice[p]
                    if how == "lost":
                        choice = None
                    elif how == "land":
                        choice = versions[-1]
                    else:
                        choice = None if rng.random() < 0.5 else rng.choice(versions)
                if choice is None:
                    lost += 1
                    continue
                landed += 1
                data, vsize = choice
                a = s * SECTOR
                _ensure(img, a + SECTOR)
                img[a:a + SECTOR] = data
                size = max(size, min(a + SECTOR, vsize))
            del img[size:]
            with open(os.path.join(outdir, f.name), "wb") as out:
                out.write(img)
        return {"mode": mode, "landed": landed, "lost": lost, "torn_pages": torn}

    def pending_sectors(self):
        return sum(len(f.pending) for f in self.files.values())


def choose_cuts(journal, n, rng):
    """n distinct cut positions in [1, len], sorted, drawn three ways: about 40% at or just
    before an fsync/fdatasync (the commit's pages written, not yet synced: the most unsynced
    data to lose or tear), 20% just before or after an O_DSYNC meta-page write or an ACK, and
    40% uniformly."""
    total = len(journal)
    if total == 0:
        return []
    syncs = [r.index for r in journal.records if r.type in (R_SYNC, R_SYNCALL)]
    others = [r.index for r in journal.records if r.type == R_ACK or (r.type == R_WRITE and r.flags & 1)]
    cuts = set()
    attempts = 0
    while len(cuts) < min(n, total) and attempts < n * 50:
        attempts += 1
        k = rng.random()
        if syncs and k < 0.4:
            c = rng.choice(syncs) - rng.choice([0, 0, 0, 1, 2])
        elif others and k < 0.6:
            c = rng.choice(others) + rng.choice([0, 1])
        else:
            c = rng.randint(1, total)
        if 1 <= c <= total:
            cuts.add(c)
    return sorted(cuts)
