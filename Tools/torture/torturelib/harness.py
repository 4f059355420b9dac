"""Daemons, the workload client and the checks shared by every torture suite."""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time

from . import journal as J


def canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def identity(action):
    """An action's identity: its type and payload, canonical. Every action the workload
    dispatches has a unique payload, so this names it whatever seq it got."""
    return canon({"type": action["type"], "payload": action.get("payload")})


class Env:
    """Where things are: the binaries, the shim, the scratch directory."""

    def __init__(self, repo, bindir, workdir, verbose=False):
        self.repo = repo
        self.bindir = bindir
        self.reeld = os.path.join(bindir, "reeld")
        self.reel = os.path.join(bindir, "reel")
        self.workdir = workdir
        self.shim = None
        self.verbose = verbose
        self._n = 0

    def fresh(self, prefix):
        self._n += 1
        d = os.path.join(self.workdir, "%s%d" % (prefix, self._n))
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def log(self, *a):
        if self.verbose:
            print(*a, flush=True)


def build_shim(repo, outdir):
    src = os.path.join(repo, "Tools", "torture", "iofault.c")
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, "libiofault.so")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-o", out + ".tmp", src,
                        "-ldl", "-lpthread"], check=True)
        os.replace(out + ".tmp", out)
    return out


class Daemon:
    """One reeld process."""

    def __init__(self, env, datadir, sock, checkpoint_every=50, extra_env=None, args=()):
        self.env, self.datadir, self.sock = env, datadir, sock
        e = dict(os.environ)
        e.pop("REEL_CRASH_POINT", None)
        e.update(extra_env or {})
        self.stderr_path = os.path.join(os.path.dirname(sock), "reeld-%d.err" % int(time.time() * 1e6))
        self.stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [env.reeld, "--data-dir", datadir, "--socket", sock, "--checkpoint-every",
             str(checkpoint_every), "--log-level", "warning", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.stderr, env=e)

    def wait_ready(self, timeout=20):
        """True once the socket accepts connections; False if the daemon exited first."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            if os.path.exists(self.sock):
                try:
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(self.sock)
                    s.close()
                    return True
                except OSError:
                    pass
            time.sleep(0.01)
        return False

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        return self.proc.returncode

    def kill9(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.stderr.close()

    def stderr_text(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""


class Conn:
    """A blocking NDJSON connection."""

    def __init__(self, path, timeout=30):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.buf = b""
        self.next_id = 1

    def send_many(self, params_list, method="dispatch"):
        lines, ids = [], []
        for p in params_list:
            ids.append(self.next_id)
            lines.append(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                     "params": p}, separators=(",", ":")) + "\n")
            self.next_id += 1
        self.s.sendall("".join(lines).encode())
        return ids

    def read_msg(self):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 1:]
                if not line.strip():
                    continue
                msg = json.loads(line)
                if "id" not in msg:
                    continue  # a notification
                return msg
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk

    def call(self, method, params=None):
        self.send_many([params or {}], method)
        return self.read_msg()

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class Workload:
    """Concurrent writers, each on its own connection, pipelining `depth` dispatches at a time.

    Every action has a unique payload (so identity() names it): `set` of /w<W>/<n> to an object
    naming the writer and n with some padding; `increment` of the shared /total by a unique
    amount; batches of two; some with idempotency keys, and some of those resent to check the
    `duplicate` answer. After each `{"seq"}`/`{"seqs"}` answer the writer records the ack (and
    appends an ACK record to the journal when one is given) *after* the answer was received.
    """

    def __init__(self, sock, writers=6, depth=3, seed=1, ack_journal=None, pad=(0, 600),
                 big_value=0, stop_after=None, max_seconds=None, tag=""):
        self.sock, self.writers, self.depth, self.seed = sock, writers, depth, seed
        self.ackw = J.AckWriter(ack_journal) if ack_journal else None
        self.pad, self.big_value, self.tag = pad, big_value, tag
        self.stop_after, self.max_seconds = stop_after, max_seconds
        self.lock = threading.Lock()
        self.acked = {}          # identity -> seq
        self.ack_seqs = []       # every acked seq (to check uniqueness)
        self.errors = []         # (identity, code, message, send_time)
        self.unexpected = []     # strings: protocol surprises
        self.writer_exits = []   # why writers stopped early: the daemon closed, or sent what does not parse
        self.sent = 0
        self.in_flight = 0
        self.stop = threading.Event()
        self.first_error_time = None
        self.sent_after_first_error_acked = []  # identities acked though sent after a 1010
        self.gate = None         # optional callable(writer, n) -> None, may sleep/block
        self.threads = []
        self.done_writers = 0

    # --- actions -----------------------------------------------------------------------------
    def _actions(self, w, n, rng):
        if self.big_value:
            return [{"type": "set", "payload": {"path": "/big", "value": {
                "tag": self.tag, "writer": w, "n": n, "blob": ("%d-%d-" % (w, n)) * (self.big_value // 8)}}}], None
        k = rng.random()
        pad = "x" * rng.randint(*self.pad)
        a = {"type": "set", "payload": {"path": "/%sw%d-%d" % (self.tag, w, n),
                                        "value": {"tag": self.tag, "writer": w, "n": n, "pad": pad}}}
        if k < 0.15:
            return [{"type": "increment", "payload": {"path": "/total" + self.tag, "by": w * 1000000 + n}}], None
        if k < 0.30:
            b = {"type": "increment", "payload": {"path": "/batch" + self.tag, "by": w * 1000000 + n}}
            return [a, b], None
        if k < 0.45:
            return [a], "k-%s-%d-%d-%d" % (self.tag, self.seed, w, n)
        return [a], None

    def _params(self, actions, key):
        p = {"action": actions[0]} if len(actions) == 1 else {"actions": actions}
        if key:
            p["idempotencyKey"] = key
        return p

    # --- running -----------------------------------------------------------------------------
    def _record_answer(self, msg, actions, key, sent_at, resend):
        ids = [identity(a) for a in actions]
        if "result" in msg:
            r = msg["result"]
            seqs = r.get("seqs") or ([r["seq"]] if "seq" in r else None)
            if not seqs or len(seqs) != len(actions):
                self.unexpected.append("odd result %r" % (r,))
                return
            with self.lock:
                if resend and all(i in self.acked for i in ids):
                    for i, s in zip(ids, seqs):
                        if self.acked.get(i) != s or not r.get("duplicate"):
                            self.unexpected.append("resend of key %s answered %r, first %r" %
                                                   (key, r, self.acked.get(i)))
                    return
                # a first send, or the resend of one that was not acknowledged (an error)
                for i, s in zip(ids, seqs):
                    if i in self.acked:
                        self.unexpected.append("acked twice: %s" % i)
                    self.acked[i] = s
                    self.ack_seqs.append(s)
                    if self.first_error_time is not None and sent_at > self.first_error_time:
                        self.sent_after_first_error_acked.append(i)
                if self.ackw:
                    for i, s in zip(ids, seqs):
                        self.ackw.ack(i, s)
        else:
            e = msg.get("error", {})
            with self.lock:
                if self.first_error_time is None:
                    self.first_error_time = time.monotonic()
                for i in ids:
                    self.errors.append((i, e.get("code"), e.get("message"), sent_at))

    def _writer(self, w):
        rng = random.Random(self.seed * 1000 + w)
        n = 0
        conn = None
        resends = []
        start = time.monotonic()
        try:
            conn = Conn(self.sock)
            while not self.stop.is_set():
                if self.max_seconds and time.monotonic() - start > self.max_seconds:
                    break
                batch = resends
                resends = []
                for _ in range(self.depth):
                    n += 1
                    if self.gate:
                        self.gate(w, n)
                    actions, key = self._actions(w, n, rng)
                    batch.append((actions, key, False))
                    if key and rng.random() < 0.3:
                        resends.append((actions, key, True))  # resent in the next window: duplicate
                with self.lock:
                    if self.stop_after is not None and self.sent >= self.stop_after:
                        break
                    self.sent += len(batch)
                    self.in_flight += len(batch)
                sent_at = time.monotonic()
                conn.send_many([self._params(a, k) for a, k, _ in batch])
                for actions, key, resend in batch:
                    msg = conn.read_msg()
                    with self.lock:
                        self.in_flight -= 1
                    self._record_answer(msg, actions, key, sent_at, resend)
        except (OSError, ConnectionError, ValueError) as e:
            # The daemon died or closed: what was acked is recorded.
            with self.lock:
                self.writer_exits.append("writer %d after %d: %r" % (w, n, e))
        finally:
            if conn:
                conn.close()
            with self.lock:
                self.done_writers += 1

    def start(self):
        for w in range(1, self.writers + 1):
            t = threading.Thread(target=self._writer, args=(w,), daemon=True)
            t.start()
            self.threads.append(t)

    def finish(self, timeout=60):
        self.stop.set()
        for t in self.threads:
            t.join(timeout)
        if self.ackw:
            self.ackw.close()
            self.ackw = None

    def wait(self, timeout=None):
        for t in self.threads:
            t.join(timeout)
        if self.ackw:
            self.ackw.close()
            self.ackw = None

    def alive(self):
        return any(t.is_alive() for t in self.threads)


# --- checks -------------------------------------------------------------------------------------

def run(cmd, timeout=120):
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return "signal %d" % -rc


class Outcome:
    PASS, REFUSED, FAIL = "pass", "refused", "fail"

    def __init__(self, kind, detail="", info=None):
        self.kind, self.detail, self.info = kind, detail, info or {}

    def __repr__(self):
        return "%s%s" % (self.kind, (": " + self.detail) if self.detail else "")


def check_directory(env, datadir, required, sockdir, forbidden=(), exact=False, allow_refusal=True):
    """Start reeld on datadir, stop it, and check what it serves offline.

    required: {identity: seq-or-None} that must be present (exactly once each).
    forbidden: identities that must not be present.
    exact: every action present must be in `required`.
    Returns an Outcome."""
    sock = os.path.join(sockdir, "c.sock")
    d = Daemon(env, datadir, sock)
    ready = d.wait_ready()
    if not ready:
        rc = d.proc.wait()
        d.stderr.close()
        err = d.stderr_text().strip()
        if rc < 0:
            return Outcome(Outcome.FAIL, "reeld died by %s on start: %s" % (signal_name(rc), err[-300:]))
        lines = [l for l in err.splitlines() if l.strip()]
        if rc != 0 and len(lines) == 1:
            if allow_refusal:
                return Outcome(Outcome.REFUSED, lines[0][:300])
            return Outcome(Outcome.FAIL, "reeld refused to start: " + lines[0][:300])
        return Outcome(Outcome.FAIL, "reeld exited %d on start without a one-line reason: %r" % (rc, err[-400:]))
    # one live read, so that the daemon really serves
    try:
        c = Conn(sock, timeout=20)
        hello = c.call("hello")
        c.close()
        live_seq = hello["result"]["seq"]
    except Exception as e:  # noqa: BLE001
        d.kill9()
        return Outcome(Outcome.FAIL, "the restarted daemon did not answer hello: %s" % e)
    rc = d.stop()
    if rc != 0:
        return Outcome(Outcome.FAIL, "reeld exited %s at SIGTERM: %s" % (
            signal_name(rc) if rc < 0 else rc, d.stderr_text()[-300:]))
    rc, out, err = run([env.reel, "export", "--data-dir", datadir])
    if rc != 0:
        return Outcome(Outcome.FAIL, "reel export --data-dir exited %s: %s" % (
            signal_name(rc) if rc < 0 else rc, err.strip()[-300:]))
    seqs, present = [], {}
    for line in out.splitlines():
        if not line.strip():
            continue
        a = json.loads(line)
        seqs.append(a["seq"])
        i = identity(a)
        if i in present:
            return Outcome(Outcome.FAIL, "action present twice (seqs %d and %d): %s" % (present[i], a["seq"], i[:120]))
        present[i] = a["seq"]
    if seqs != list(range(1, len(seqs) + 1)):
        gap = next((k + 1 for k, s in enumerate(seqs) if s != k + 1), None)
        return Outcome(Outcome.FAIL, "seqs are not gapless from 1 (first wrong position %s of %d)" % (gap, len(seqs)))
    if live_seq != len(seqs):
        return Outcome(Outcome.FAIL, "the daemon served seq %d but the log holds %d" % (live_seq, len(seqs)))
    missing = [i for i in required if i not in present]
    if missing:
        return Outcome(Outcome.FAIL, "%d acknowledged action(s) lost, e.g. seq %s %s" % (
            len(missing), required[missing[0]], missing[0][:160]), {"lost": len(missing)})
    moved = [(i, required[i], present[i]) for i in required
             if required[i] is not None and required[i] != present[i]]
    if moved:
        i, want, got = moved[0]
        return Outcome(Outcome.FAIL, "%d acknowledged action(s) at another seq, e.g. acked %d found %d" % (
            len(moved), want, got))
    bad = [i for i in forbidden if i in present]
    if bad:
        return Outcome(Outcome.FAIL, "%d action(s) answered with an error are in the log, e.g. %s" % (len(bad), bad[0][:160]))
    if exact:
        extra = [i for i in present if i not in required]
        if extra:
            return Outcome(Outcome.FAIL, "%d action(s) in the log were never acknowledged, e.g. seq %d" % (
                len(extra), present[extra[0]]))
    rc, out, err = run([env.reel, "verify", "--data-dir", datadir])
    if rc != 0:
        return Outcome(Outcome.FAIL, "reel verify --data-dir exited %s: %s" % (
            signal_name(rc) if rc < 0 else rc, (out + err).strip()[-300:]))
    return Outcome(Outcome.PASS, info={"actions": len(seqs), "required": len(required)})
