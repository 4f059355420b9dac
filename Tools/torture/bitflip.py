#!/usr/bin/env python3
"""Bit-flip trials: damage one random bit of a data directory's data.mdb and read it back offline.

Builds a data directory with a real reeld (3,000 actions by default, checkpoints, idempotency
keys), stops it gracefully, records what `reel export`, `reel get` and `reel verify` print, then
for each trial flips one bit of a copy of data.mdb (anywhere in the file; one trial in ten aims at
LMDB's two meta pages, which are a small part of the file but steer every read) and runs the
three commands again. Each command's outcome is one of:

- harmless: exit 0 and the same output as before the flip (the bit was in unused space);
- detected: a non-zero exit with a message on stderr (for `verify`, exit 1 naming the damage);
- SILENT: exit 0 but output that differs from before: damaged data served as data (a failure);
- SIGNAL: the process died by a signal (a failure).

Usage: bitflip.py --bin DIR [--trials N] [--actions N] [--seed S] [--keep DIR]
Prints per-command counts and ends with 'N passed, N failed' (one per trial).
"""
import argparse, json, os, random, shutil, socket, subprocess, sys, tempfile, time

def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, **kw)

def build_store(bindir, work, actions, seed):
    data = os.path.join(work, "base")
    sock = os.path.join(work, "reel.sock")
    daemon = subprocess.Popen([os.path.join(bindir, "reeld"), "--data-dir", data, "--socket", sock,
                               "--checkpoint-every", "500"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while True:
        try:
            conn = socket.socket(socket.AF_UNIX); conn.connect(sock); break
        except OSError:
            if time.time() > deadline: raise SystemExit("reeld did not start: " + daemon.stderr.read().decode())
            time.sleep(0.05)
    rng = random.Random(seed)
    reader = conn.makefile("rb")
    pending = 0
    def send(i, action, key=None):
        params = {"action": action}
        if key: params["idempotencyKey"] = key
        conn.sendall((json.dumps({"jsonrpc": "2.0", "id": i, "method": "dispatch", "params": params}) + "\n").encode())
    send(0, {"type": "set", "payload": {"path": "/items", "value": {}}}); json.loads(reader.readline())
    # Pipelined in windows of 64, so the whole log is written in a few seconds.
    for i in range(1, actions):
        kind = rng.random()
        if kind < 0.6:
            action = {"type": "set", "payload": {"path": f"/items/i{i}", "value": {"n": i, "text": "x" * rng.randrange(0, 120)}}}
        elif kind < 0.8:
            action = {"type": "increment", "payload": {"path": "/counter", "by": rng.randrange(1, 9)}}
        elif kind < 0.9 and i > 10:
            action = {"type": "remove", "payload": {"path": f"/items/i{i - rng.randrange(1, 10)}"}}
        else:
            action = {"type": "merge", "payload": {"meta": {"last": i, "tag": rng.choice(["a", "b", "c"])}}}
        send(i, action, key=f"k{i}" if i % 7 == 0 else None)
        pending += 1
        if pending == 64:
            for _ in range(pending): json.loads(reader.readline())
            pending = 0
    for _ in range(pending): json.loads(reader.readline())
    conn.close()
    daemon.terminate(); daemon.wait(30)
    return data

def observe(bindir, data):
    reel = os.path.join(bindir, "reel")
    env = dict(os.environ, NO_COLOR="1", SWIFT_BACKTRACE="enable=no")
    results = {}
    for name, args in (("export", ["export"]), ("get", ["get", "--json"]), ("verify", ["verify", "--json"])):
        r = run([reel] + args + ["--data-dir", data], env=env)
        results[name] = (r.returncode, r.stdout, r.stderr)
    return results

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("REEL_BIN", ".build/debug"))
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--actions", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="copy each failing data file here")
    a = ap.parse_args()
    bindir = os.path.abspath(a.bin)
    work = tempfile.mkdtemp(prefix="reel-bitflip-")
    try:
        base = build_store(bindir, work, a.actions, a.seed)
        baseline = observe(bindir, base)
        for name, (code, out, err) in baseline.items():
            if code != 0: raise SystemExit(f"baseline {name} failed ({code}): {err.decode()}")
        size = os.path.getsize(os.path.join(base, "data.mdb"))
        print(f"bitflip: {a.actions} actions, data.mdb {size} bytes, {a.trials} trials, seed {a.seed}")
        rng = random.Random(a.seed)
        counts = {name: {"harmless": 0, "detected": 0, "SILENT": 0, "SIGNAL": 0} for name in baseline}
        passed = failed = 0
        trial_dir = os.path.join(work, "trial")
        for trial in range(a.trials):
            shutil.rmtree(trial_dir, ignore_errors=True)
            os.makedirs(trial_dir)
            shutil.copy(os.path.join(base, "data.mdb"), trial_dir)
            offset = rng.randrange(0, 8192) if rng.random() < 0.1 else rng.randrange(0, size)
            bit = rng.randrange(8)
            with open(os.path.join(trial_dir, "data.mdb"), "r+b") as f:
                f.seek(offset); byte = f.read(1)[0]; f.seek(offset); f.write(bytes([byte ^ (1 << bit)]))
            outcome = observe(bindir, trial_dir)
            bad = []
            for name, (code, out, err) in outcome.items():
                if code < 0:
                    verdict = "SIGNAL"
                elif code == 0:
                    verdict = "harmless" if out == baseline[name][1] else "SILENT"
                else:
                    verdict = "detected" if err.strip() or name == "verify" else "SILENT"
                counts[name][verdict] += 1
                if verdict in ("SILENT", "SIGNAL"):
                    bad.append(f"{name}: {verdict} (exit {code}) {err.decode(errors='replace').strip()[:300]}")
            if bad:
                failed += 1
                print(f"trial {trial}: offset {offset} bit {bit}: " + "; ".join(bad))
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    shutil.copy(os.path.join(trial_dir, "data.mdb"), os.path.join(a.keep, f"trial{trial}-{offset}-{bit}.mdb"))
            else:
                passed += 1
        for name, c in counts.items():
            print(f"  {name:7} " + ", ".join(f"{k} {v}" for k, v in c.items()))
        print(f"bitflip: {passed} passed, {failed} failed")
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    sys.exit(main())
