"""The torture suites: power cuts, kill -9, I/O faults, crash points, the shim's self-test, and the
place where fuzzing plugs in. Each trial ends as pass, fail (with a reason) or, for power cuts
only, refused (the daemon declined to start on the image with a one-line message)."""

import os
import random
import shutil
import subprocess
import sys
import time

from . import harness as H
from . import journal as J

MAP_START = 64 << 20  # reeld's initial map size


class Tally:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.refused = self.skipped = 0
        self.failures = []
        self.notes = []
        self.started = time.time()
        self.elapsed = None

    def add(self, label, outcome, show=False):
        if show and outcome.kind != H.Outcome.FAIL:
            print("  %s %s%s" % (outcome.kind, label, (": " + outcome.detail) if outcome.detail else ""), flush=True)
        if outcome.kind == H.Outcome.PASS:
            self.passed += 1
        elif outcome.kind == H.Outcome.REFUSED:
            self.passed += 1
            self.refused += 1
            self.notes.append("%s: refused: %s" % (label, outcome.detail))
            print("  refused %s: %s" % (label, outcome.detail), flush=True)
        else:
            self.failed += 1
            self.failures.append("%s: %s" % (label, outcome.detail))
            print("  FAIL %s: %s" % (label, outcome.detail), flush=True)

    def skip(self, label, why):
        self.skipped += 1
        self.notes.append("%s: skipped: %s" % (label, why))

    def summary(self):
        s = "%s: %d passed, %d failed" % (self.name, self.passed, self.failed)
        if self.refused:
            s += " (%d of the passes were refusals to start)" % self.refused
        if self.skipped:
            s += ", %d skipped" % self.skipped
        if self.elapsed is None:
            self.elapsed = time.time() - self.started
        return s + " in %.0f s" % self.elapsed


def _shim_env(env, datadir, **extra):
    e = {"LD_PRELOAD": env.shim, "TORTURE_DIR": datadir}
    e.update({k: v for k, v in extra.items() if v is not None})
    return e


# ------------------------------------------------------------------------------------ power cuts

def record_journal(env, seed, acks_target, checkpoint_every=50, writers=6, pad=(0, 600),
                   fault=None, graceful=False, tag="", until_bytes=None, no_dsync=False):
    """Run reeld under the shim in journal mode with concurrent writers until `acks_target`
    actions were acknowledged, then kill -9 it (or stop it gracefully). Returns (dir, journal
    path, workload)."""
    d = env.fresh("journal")
    data = os.path.join(d, "data")
    jpath = os.path.join(d, "journal")
    daemon = H.Daemon(env, data, os.path.join(d, "s.sock"), checkpoint_every,
                      _shim_env(env, data, TORTURE_JOURNAL=jpath, TORTURE_FAULT=fault,
                                TORTURE_NO_DSYNC="1" if no_dsync else None))
    if not daemon.wait_ready():
        raise RuntimeError("reeld under the shim did not start: " + daemon.stderr_text()[-500:])
    wl = H.Workload(daemon.sock, writers=writers, depth=3, seed=seed, ack_journal=jpath, pad=pad,
                    tag=tag)
    wl.start()
    deadline = time.time() + 300
    mdb = os.path.join(data, "data.mdb")
    while len(wl.acked) < acks_target and wl.alive() and time.time() < deadline:
        if until_bytes and os.path.exists(mdb) and os.path.getsize(mdb) > until_bytes:
            # The file's size moves with the map; LMDB's writes past it come with the journal
            # applier's next commits (every 20 ms): record those too.
            time.sleep(0.5)
            break
        time.sleep(0.02)
    if graceful:
        wl.finish()
        daemon.stop()
    else:
        daemon.kill9()
        wl.finish()
    return d, jpath, wl


def power_cuts(env, n_cuts, seed, short=False, tally=None, grow=False):
    t = tally or Tally("power cuts")
    rng = random.Random(seed)
    if n_cuts <= 0:
        return t
    plans = []  # (journal seed, cuts, acks target, pad)
    per = 30 if short else 125
    k = 0
    remaining = n_cuts
    if grow and not short:
        g = min(40, remaining)
        plans.append(("grow", g))
        remaining -= g
    while remaining > 0:
        c = min(per, remaining)
        plans.append(("normal", c))
        remaining -= c
    for kind, cuts_wanted in plans:
        k += 1
        jseed = seed * 100 + k
        if kind == "grow":
            d, jpath, wl = record_journal(env, jseed, 100000, pad=(1500, 3500), tag="g",
                                          until_bytes=MAP_START + (4 << 20))
        else:
            d, jpath, wl = record_journal(env, jseed, 400 if short else 1500)
        j = J.Journal(jpath)
        jrng = random.Random(jseed)
        cuts = J.choose_cuts(j, cuts_wanted, jrng)
        if kind == "grow":
            first_big = next((r.index for r in j.records if r.type == J.R_WRITE and
                              r.offset + r.length > MAP_START), None)
            if first_big is not None:
                extra = {first_big + dlt for dlt in (-2, 0, 1, 2, 5, 20) if 1 <= first_big + dlt <= len(j)}
                cuts = sorted(set(cuts[:max(0, cuts_wanted - len(extra))]) | extra)
                t.notes.append("grow journal: data.mdb passed 64 MiB at record %d" % first_big)
            else:
                t.notes.append("grow journal: data.mdb never passed 64 MiB")
        print("  journal %d (%s, seed %d): %d records %s, %d acks; %d cuts" % (
            k, kind, jseed, len(j), j.counts(), len(j.ack_positions()), len(cuts)), flush=True)
        builder = J.ImageBuilder(j)
        keep_journal = False
        acks = j.acks()
        ai = 0
        required = {}
        for c in cuts:
            while ai < len(acks) and acks[ai][0] < c:
                required[acks[ai][1]] = acks[ai][2]
                ai += 1
            img = env.fresh("cut")
            choice = builder.image(c, jseed * 100003 + c, img)
            out = H.check_directory(env, img, required, img)
            label = "journal %d cut %d/%d (%s, %d acked)" % (k, c, len(j), choice["mode"], len(required))
            t.add(label, out)
            env.log("    %s: %r %s %s" % (label, out, out.info, choice))
            if out.kind == H.Outcome.FAIL:
                t.failures[-1] += " [image kept in %s]" % img
                keep_journal = True
            elif out.kind == H.Outcome.REFUSED:
                t.notes[-1] += " [image kept in %s]" % img
                keep_journal = True
            else:
                shutil.rmtree(img, ignore_errors=True)
        del builder
        if keep_journal:
            t.notes.append("journal %d kept in %s (rebuild any cut with torturelib.journal)" % (k, jpath))
        else:
            shutil.rmtree(d, ignore_errors=True)
    return t


# ------------------------------------------------------------------------------------ kill -9

def kills(env, n, seed, tally=None):
    t = tally or Tally("kill -9")
    rng = random.Random(seed)
    d = None
    required = {}
    chain = 0
    for i in range(1, n + 1):
        if d is None or chain >= 5:
            if d:
                shutil.rmtree(d, ignore_errors=True)
            d = env.fresh("kill")
            required = {}
            chain = 0
        chain += 1
        data = os.path.join(d, "data")
        daemon = H.Daemon(env, data, os.path.join(d, "s.sock"), checkpoint_every=rng.choice([50, 200, 1000]))
        if not daemon.wait_ready():
            t.add("kill %d" % i, H.Outcome(H.Outcome.FAIL, "reeld did not start: " + daemon.stderr_text()[-300:]))
            d = None
            continue
        wl = H.Workload(daemon.sock, writers=8, depth=rng.choice([1, 2, 4]), seed=seed * 1000 + i,
                        tag="k%d-" % i)
        wl.start()
        time.sleep(rng.uniform(0.05, 0.8))
        deadline = time.time() + 5
        while wl.in_flight == 0 and time.time() < deadline:
            time.sleep(0.001)
        in_flight = wl.in_flight
        daemon.kill9()
        wl.finish()
        label = "kill %d (%d acked, %d in flight)" % (i, len(wl.acked), in_flight)
        if in_flight == 0:
            t.add(label, H.Outcome(H.Outcome.FAIL, "no dispatch was in flight at the kill"))
            continue
        if wl.unexpected:
            t.add(label, H.Outcome(H.Outcome.FAIL, "protocol surprise: " + wl.unexpected[0]))
            continue
        if len(set(wl.ack_seqs)) != len(wl.ack_seqs):
            t.add(label, H.Outcome(H.Outcome.FAIL, "the same seq was acknowledged twice"))
            continue
        required.update(wl.acked)
        out = H.check_directory(env, data, required, d, allow_refusal=False)
        t.add(label, out)
        env.log("    %s: %r" % (label, out))
        if i % 20 == 0:
            print("  %d kills: %d passed, %d failed" % (i, t.passed, t.failed), flush=True)
        if out.kind == H.Outcome.FAIL:
            t.failures[-1] += " [directory kept in %s]" % d
            d = None  # keep the failing directory
    if d:
        shutil.rmtree(d, ignore_errors=True)
    return t


# ------------------------------------------------------------------------------------ I/O faults

class FaultCase:
    """kind: 'sync'  — a failed sync (or meta write): nothing acknowledged after the first 1010
                       until a restart.
             'write' — a failed page write: the commit is answered 1010; nothing more demanded
                       of later dispatches.
             'full'  — the disk is full while a flag file exists: every dispatch answers 1010
                       while it does, and once it is removed dispatches succeed again, without
                       a restart.
             'start' — the fault hits while the store opens: reeld refuses to start with a
                       one-line reason."""

    def __init__(self, call, err, cond, kind):
        self.call, self.err, self.cond, self.kind = call, err, cond, kind

    def spec(self, flag):
        c = self.cond.replace("FLAG", flag) if self.cond else ""
        return "%s:%s%s" % (self.call, self.err, (":" + c) if c else "")

    def name(self):
        return "%s:%s:%s" % (self.call, self.err, self.cond or "always")


def fault_cases(short):
    cases = []
    points = [3, 40] if short else [3, 40, 160]
    for err in ("EIO", "ENOSPC"):
        for n in (points if err == "EIO" else points[1:2]):
            # ENOSPC from the data sync is a full disk, not a lost write: LMDB writes the meta page
            # only after the sync succeeded, so nothing refers to the pages whose writeback failed,
            # and the store keeps going (LMDBEnvironment.fatalWriteError). EIO stops it.
            cases.append(FaultCase("fdatasync", err, "nth=%d" % n, "sync" if err == "EIO" else "write"))
            cases.append(FaultCase("metawrite", err, "nth=%d" % n, "sync"))
        cases.append(FaultCase("fsync", err, "nth=1", "sync"))
        for n in (points if err == "EIO" else points[1:2]):
            cases.append(FaultCase("datawrite", err, "nth=%d" % (n + 2), "write"))
            cases.append(FaultCase("pwrite", err, "nth=%d" % (n + 3), "write"))
            cases.append(FaultCase("writev", err, "nth=%d" % n, "write"))
        cases.append(FaultCase("write", err, "nth=1", "start"))       # reeld.lock's pid
        cases.append(FaultCase("datawrite", err, "nth=2", "start"))   # LMDB's first meta pages
        cases.append(FaultCase("sync_file_range", err, "nth=1", "sync"))
        cases.append(FaultCase("msync", err, "nth=1", "sync"))
        cases.append(FaultCase("ftruncate", err, "nth=1", "start"))
    cases.append(FaultCase("datawrite", "ENOSPC", "while=FLAG", "full"))
    cases.append(FaultCase("fdatasync", "ENOSPC", "while=FLAG", "full"))
    cases.append(FaultCase("pwrite", "ENOSPC", "while=FLAG", "full"))
    cases.append(FaultCase("write", "EDQUOT", "while=FLAG", "full"))
    return cases


def _fired(logpath):
    try:
        with open(logpath) as f:
            return [l for l in f.read().splitlines() if l.startswith("fault ")]
    except OSError:
        return []


def fault_trial(env, case, seed):
    d = env.fresh("fault")
    data = os.path.join(d, "data")
    flag = os.path.join(d, "disk-full")
    logp = os.path.join(d, "fault.log")
    daemon = H.Daemon(env, data, os.path.join(d, "s.sock"), checkpoint_every=25,
                      extra_env=_shim_env(env, data, TORTURE_FAULT=case.spec(flag), TORTURE_LOG=logp))
    notes = []
    if not daemon.wait_ready():
        rc = daemon.proc.wait()
        daemon.stderr.close()
        err = [l for l in daemon.stderr_text().splitlines() if l.strip()]
        if rc < 0:
            return H.Outcome(H.Outcome.FAIL, "reeld died by %s while opening under the fault" % H.signal_name(rc)), d
        if rc == 0 or len(err) != 1:
            return H.Outcome(H.Outcome.FAIL, "reeld exited %d at start without a one-line reason: %r" % (rc, err[-3:])), d
        if case.kind != "start":
            notes.append("refused to start: " + err[0][:160])
        out = H.check_directory(env, data, {}, d, allow_refusal=False)
        if out.kind != H.Outcome.PASS:
            return H.Outcome(H.Outcome.FAIL, "after a refused start, a start without the fault: " + out.detail), d
        return H.Outcome(H.Outcome.PASS, "refused at start (%s); clean start without the fault" % err[0][:120]), d
    started_despite = False
    if case.kind == "start":
        fired = _fired(logp)
        if not fired:
            daemon.stop()
            return H.Outcome("skip", "the store never made this call while opening"), d
        # The fault fired while opening and the daemon started anyway: the failed call was not
        # essential (such as the pid written into reeld.lock for people). It must then work
        # normally and keep what it acknowledges.
        started_despite = True
        notes.append("started although %s" % fired[0])
    wls = []

    def phase(n, tag):
        wl = H.Workload(daemon.sock, writers=3, depth=2, seed=seed, stop_after=n, tag=tag)
        wl.start()
        wl.wait(120)
        wls.append(wl)
        return wl

    problems = []
    if case.kind == "full":
        p1 = phase(60, "a")
        open(flag, "w").close()
        p2 = phase(30, "b")
        os.unlink(flag)
        p3 = phase(30, "c")
        if p1.errors:
            problems.append("%d error(s) before the disk was full" % len(p1.errors))
        if p2.acked:
            problems.append("%d dispatch(es) acknowledged while every write failed" % len(p2.acked))
        if not p2.errors:
            problems.append("no error while the disk was full")
        if "MDB_PANIC" in daemon.stderr_text():
            # The fault failed LMDB's meta-page write (a `pwrite` on its O_DSYNC descriptor, which a
            # real file system does not fail with ENOSPC, the page being written in place): LMDB
            # then refuses every later commit by design, as after any failed meta write ('sync'
            # faults). What was acknowledged is in the journal; the restart check below holds it.
            notes.append("LMDB's meta-page write failed (MDB_PANIC): writes refused until a restart")
            if p3.acked:
                problems.append("%d dispatch(es) acknowledged after LMDB panicked" % len(p3.acked))
        elif p3.errors or not p3.acked:
            codes = sorted({str(c) for _, c, _, _ in p3.errors})
            problems.append("after space came back: %d acked, %d answered %s (no recovery without a restart)" % (
                len(p3.acked), len(p3.errors), "/".join(codes) or "-"))
    else:
        # LMDB commits come every 20 ms or so (the journal takes the acknowledgements), so a
        # late LMDB call (the 40th meta-page write) needs more dispatches than a journal call:
        # go on in waves until the fault fires.
        sent = 0
        waves = 1 if case.call in ("sync_file_range", "msync", "fsync") else 40  # calls made rarely or never
        for wave in range(waves):
            wl = phase(360, "a%d" % wave)
            sent += wl.sent
            if _fired(logp):
                break
        if not _fired(logp):
            daemon.stop()
            return H.Outcome("skip", "the fault was not reached: too few such calls in %d dispatches" % sent), d
        # A few dispatches right after the wave where it fired: a failed LMDB commit (which the
        # applier makes after the acknowledgements) is answered on the next dispatches.
        after = phase(30, "t")
        if not wl.errors and not after.errors and not started_despite:
            if "commit failed; 0 dispatches not acknowledged" in daemon.stderr_text():
                # The fault hit a commit that carried only a checkpoint: no dispatch to answer.
                notes.append("the fault hit a checkpoint-only commit")
            elif case.kind == "write" and "moving acknowledged actions into LMDB failed" in daemon.stderr_text():
                # The fault hit the journal applier's LMDB commit of actions already durable in the
                # journal; its retry succeeded before any dispatch had to be refused.
                notes.append("the fault hit LMDB's commit of journaled actions, retried")
            else:
                problems.append("the fault fired but no dispatch was answered with an error")
        if case.kind == "sync":
            late = len(wl.sent_after_first_error_acked) + len(after.sent_after_first_error_acked)
            if wl.errors:
                late += len(after.acked)
            if late:
                problems.append("%d dispatch(es) sent after a failed sync were acknowledged (no restart)" % late)
            # a second wave, well after the failure: all must fail
            p2 = phase(20, "z")
            if p2.acked:
                problems.append("%d later dispatch(es) acknowledged after a failed sync" % len(p2.acked))
    acked, errored = {}, set()
    for wl in wls:
        acked.update(wl.acked)
        for i, code, msg, _ in wl.errors:
            errored.add(i)
            if code != 1010:
                problems.append("an error other than 1010: %s %s" % (code, msg))
        problems += ["protocol surprise: " + u for u in wl.unexpected]
    rc = daemon.stop()
    if rc is not None and rc < 0:
        problems.append("reeld died by %s at SIGTERM after the fault" % H.signal_name(rc))
    fired = _fired(logp)
    forbidden = errored - set(acked)
    out = H.check_directory(env, data, acked, d, forbidden=forbidden, exact=True, allow_refusal=False)
    if out.kind != H.Outcome.PASS:
        problems.append("restart without the fault: " + out.detail)
    summary = "fired %d time(s), %d acked, %d answered 1010" % (len(fired), len(acked), len(errored))
    if notes:
        summary += "; " + "; ".join(notes)
    if problems:
        return H.Outcome(H.Outcome.FAIL, "; ".join(dict.fromkeys(problems)) + " [" + summary + "]"), d
    return H.Outcome(H.Outcome.PASS, summary), d


def faults(env, seed, short=False, tally=None):
    t = tally or Tally("I/O faults")
    for i, case in enumerate(fault_cases(short)):
        out, d = fault_trial(env, case, seed * 1000 + i)
        label = "%s (%s)" % (case.name(), case.kind)
        if out.kind == "skip":
            t.skip(label, out.detail)
            print("  skip %s: %s" % (label, out.detail), flush=True)
        else:
            t.add(label, out)
            if out.kind == H.Outcome.PASS:
                print("  pass %s: %s" % (label, out.detail), flush=True)
        if out.kind != H.Outcome.FAIL:
            shutil.rmtree(d, ignore_errors=True)
    return t


# ------------------------------------------------------------------------------------ crash points

CRASH_POINTS = ["commit.before", "commit.inside", "commit.after", "ack.after",
                "checkpoint.encoded", "checkpoint.commit", "map.grow", "map.grown"]


def crash_point_trial(env, point, seed):
    name = point.split("@")[0]
    d = env.fresh("crash")
    data = os.path.join(d, "data")
    big = name.startswith("map.")
    daemon = H.Daemon(env, data, os.path.join(d, "s.sock"), checkpoint_every=50,
                      extra_env={"REEL_CRASH_POINT": point})
    if not daemon.wait_ready():
        rc = daemon.proc.wait()
        daemon.stderr.close()
        if rc == -9:
            return H.Outcome(H.Outcome.FAIL, "died (SIGKILL) before serving: the point fired while opening"), d
        return H.Outcome(H.Outcome.FAIL, "reeld did not start with REEL_CRASH_POINT=%s (exit %s): %s" % (
            point, rc, daemon.stderr_text()[-200:])), d
    wl = H.Workload(daemon.sock, writers=6, depth=3, seed=seed, pad=(1500, 3500) if big else (0, 600),
                    max_seconds=120 if big else 30, stop_after=30000 if big else 3000, tag="p")
    wl.start()
    while daemon.proc.poll() is None and wl.alive():
        time.sleep(0.02)
    # A killed process's sockets close before it can be reaped (the kernel closes its files
    # first), so the writers can see their connections end a moment before the daemon's exit
    # shows: give it that moment before calling the point not reached (seed 59897, on a busy
    # machine).
    deadline = time.time() + 2
    while daemon.proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    if daemon.proc.poll() is None:
        daemon.stop()
        wl.finish()
        why = "; ".join(wl.writer_exits[:2] + ["error %s: %s" % (c, m) for _, c, m, _ in wl.errors[:2]])
        return H.Outcome(H.Outcome.FAIL, "not reached: the daemon did not die within %d dispatches "
                         "(is the REEL_CRASH_POINT hook in this build?) %s" % (wl.sent, why)), d
    rc = daemon.proc.wait()
    daemon.stderr.close()
    wl.finish()
    if rc != -9:
        return H.Outcome(H.Outcome.FAIL, "the daemon ended with %s, not SIGKILL: %s" % (
            H.signal_name(rc) if rc < 0 else "exit %d" % rc, daemon.stderr_text()[-200:])), d
    if wl.unexpected:
        return H.Outcome(H.Outcome.FAIL, "protocol surprise: " + wl.unexpected[0]), d
    out = H.check_directory(env, data, wl.acked, d, allow_refusal=False)
    if out.kind == H.Outcome.PASS:
        out.detail = "died after %d acked, restart serves them" % len(wl.acked)
    return out, d


# Where a take-over (`reeld --take-over` beside a serving reeld) can be cut: on the serving side
# (handover.*) or on the newcomer's (takeover.*). None: a take-over that runs to its end.
TAKE_OVER_POINTS = [None, "handover.sent", "handover.closing", "takeover.folded", "takeover.received",
                    "takeover.opening", "takeover.serving"]


def take_over_trial(env, point, seed):
    """A newcomer takes over from a serving reeld while writers dispatch, with one of the two
    killed at `point`; then more writers dispatch to whoever serves the socket. Every
    acknowledged action must be in the directory exactly once when a daemon opens it again."""
    d = env.fresh("takeover")
    data, sock = os.path.join(d, "data"), os.path.join(d, "s.sock")
    old_env = {"REEL_CRASH_POINT": point} if point and point.startswith("handover.") else None
    new_env = {"REEL_CRASH_POINT": point} if point and point.startswith("takeover.") else None
    old = H.Daemon(env, data, sock, checkpoint_every=50, extra_env=old_env)
    if not old.wait_ready():
        rc = old.proc.wait()
        old.stderr.close()
        return H.Outcome(H.Outcome.FAIL, "the serving reeld did not start (exit %s): %s" % (rc, old.stderr_text()[-200:])), d
    before = H.Workload(sock, writers=6, depth=3, seed=seed, pad=(0, 600), max_seconds=30, stop_after=1500, tag="b")
    before.start()
    deadline = time.time() + 20
    while len(before.acked) < 300 and before.alive() and time.time() < deadline:
        time.sleep(0.01)
    new = H.Daemon(env, data, sock, checkpoint_every=50, extra_env=new_env, args=("--take-over",))
    armed = old if old_env else new if new_env else None
    deadline = time.time() + 30
    # Without a point: done when the serving reeld has handed over and exited by itself.
    waited = armed or old
    while waited.proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    if waited.proc.poll() is None:
        before.finish()
        old.stop()
        new.stop()
        what = "the point was not reached" if armed else "the serving reeld did not hand over and stop"
        return H.Outcome(H.Outcome.FAIL, "%s within 30 s: %s" % (what, (old.stderr_text() + new.stderr_text())[-300:])), d
    rc = waited.proc.wait()
    if rc != (-9 if armed else 0):
        before.finish()
        old.stop()
        new.stop()
        return H.Outcome(H.Outcome.FAIL, "the %s reeld ended with %s: %s" % (
            "serving" if waited is old else "new", H.signal_name(rc) if rc < 0 else "exit %d" % rc,
            waited.stderr_text()[-300:])), d
    before.finish()
    # Whoever serves now (the newcomer, or the serving reeld when the newcomer died before its
    # hand-over) takes more dispatches; the serving reeld may still be stopping.
    after = None
    survivor = None
    for daemon in (new, old):
        if daemon is not waited and daemon.wait_ready(timeout=10):
            survivor = daemon
            break
    if survivor is not None and survivor.proc.poll() is None:
        after = H.Workload(sock, writers=4, depth=3, seed=seed + 1, pad=(0, 600), max_seconds=20, stop_after=400, tag="a")
        after.start()
        after.wait(60)
    stopped = [daemon.stop() for daemon in (new, old)]
    if any(rc not in (0, -9) for rc in stopped):
        return H.Outcome(H.Outcome.FAIL, "a reeld ended with %s after the trial" % stopped), d
    if before.unexpected or (after and after.unexpected):
        return H.Outcome(H.Outcome.FAIL, "protocol surprise: " + (before.unexpected + (after.unexpected if after else []))[0]), d
    required = dict(before.acked)
    required.update(after.acked if after else {})
    out = H.check_directory(env, data, required, d, allow_refusal=False)
    if out.kind == H.Outcome.PASS:
        out.detail = "%d acked before, %d after%s; a restart serves them" % (
            len(before.acked), len(after.acked) if after else 0, "" if after else " (nothing served after)")
    return out, d


def take_overs(env, seed, tally=None):
    t = tally or Tally("take-overs")
    for i, p in enumerate(TAKE_OVER_POINTS):
        name = p or "take-over, no kill"
        out, d = take_over_trial(env, p, seed * 1000 + 500 + i)
        t.add(name, out)
        if out.kind == H.Outcome.PASS:
            print("  pass %s: %s" % (name, out.detail), flush=True)
            shutil.rmtree(d, ignore_errors=True)
    return t


def _has_hook(env):
    with open(env.reeld, "rb") as f:
        return b"REEL_CRASH_POINT" in f.read()


def crash_points(env, seed, short=False, tally=None):
    t = tally or Tally("crash points")
    if not _has_hook(env):
        for p in CRASH_POINTS:
            t.add(p, H.Outcome(H.Outcome.FAIL, "not reached: %s has no REEL_CRASH_POINT hook "
                               "(the string is not in the binary)" % env.reeld))
        return t
    rng = random.Random(seed)
    points = list(CRASH_POINTS)
    if not short:
        points += ["%s@%d" % (p, rng.randint(2, 2 if p.startswith("map.") else 5)) for p in CRASH_POINTS]
    for i, p in enumerate(points):
        out, d = crash_point_trial(env, p, seed * 1000 + i)
        t.add(p, out)
        if out.kind == H.Outcome.PASS:
            print("  pass %s: %s" % (p, out.detail), flush=True)
            shutil.rmtree(d, ignore_errors=True)
    return t


# ------------------------------------------------------------------------------------ self-test

def selftest(env, seed, tally=None):
    """Proves the shim and the checker: (1) an image at the end of a journal of a gracefully
    stopped daemon is byte-identical to the real data.mdb; (2) a cut at the fdatasync of a late
    group's record in reeld's journal, with no unsynced write landing, loses that group and keeps
    every earlier ack, while a cut right after the sync keeps it; (3) a disk that ignores flushes (fdatasync returns 0
    without syncing, O_DSYNC ignored) is caught: some cuts fail the check (lost acks or a
    crash), which shows the checker can fail."""
    t = tally or Tally("self-test")
    # (1)
    d, jpath, wl = record_journal(env, seed, 300, graceful=True)
    j = J.Journal(jpath)
    img = env.fresh("self")
    J.ImageBuilder(j).image(len(j), 1, img)
    data = os.path.join(d, "data")
    same = open(os.path.join(img, "data.mdb"), "rb").read() == open(os.path.join(data, "data.mdb"), "rb").read()
    t.add("image at the journal's end == data.mdb (%d records, %s)" % (len(j), j.counts()),
          H.Outcome(H.Outcome.PASS if same else H.Outcome.FAIL, "" if same else "images differ"), show=True)
    # (2) the commit point of a group is the fdatasync of its record in reeld's journal
    # (journal.reel): LMDB receives groups later. Candidates are tried from the latest sync before
    # the last ACK back until one whose cut changes the count (a sync may carry no new action).
    journal_id = next(k for k, v in j.names.items() if v == "journal.reel")
    last_ack = j.ack_positions()[-1]
    syncs = sorted((r.index for r in j.records[:last_ack]
                    if r.type == J.R_SYNC and r.file == journal_id), reverse=True)
    for sync in syncs[:8]:
        counts = []
        for cut in (sync, sync + 1):
            required = {i: s for _, i, s in j.acks(cut)}
            img2 = env.fresh("self")
            b = J.ImageBuilder(j)
            b.advance(cut)
            pending = b.pending_sectors()
            b.image(cut, 0, img2, mode="none")
            out = H.check_directory(env, img2, required, img2, allow_refusal=False)
            rc, text, _ = H.run([env.reel, "export", "--data-dir", img2])
            counts.append((len([l for l in text.splitlines() if l.strip()]), len(required), pending, out))
            shutil.rmtree(img2, ignore_errors=True)
        if counts[1][0] > counts[0][0]:
            break
    meta = sync + 1
    (n_before, req_before, pend, out_before), (n_after, req_after, _, out_after) = counts
    acked_between = [s for _, _, s in j.acks() if n_before < s <= n_after]
    ok = (out_before.kind == H.Outcome.PASS and out_after.kind == H.Outcome.PASS and
          n_after > n_before and acked_between)
    t.add("cut at the journal's fdatasync of a group (record %d, %d unsynced sectors dropped) loses "
          "that group (%d actions, not %d as right after the sync, record %d), keeps all %d acks "
          "before it; seqs %s acked later" % (
              sync, pend, n_before, n_after, meta, req_before, acked_between[:4]),
          H.Outcome(H.Outcome.PASS if ok else H.Outcome.FAIL,
                    "" if ok else "before: %r, after: %r" % (out_before, out_after)), show=True)
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(img, ignore_errors=True)
    # (3)
    d, jpath, wl = record_journal(env, seed + 7, 300, fault="fdatasync:LIE", no_dsync=True)
    j = J.Journal(jpath)
    acks = j.acks()
    # Cuts after the first acknowledgement only: one before it has nothing to lose, and the
    # daemon's start (its journal written with zeros) can hold most of the records, so that
    # cuts drawn over the whole journal were mostly refusals to start.
    first_ack = min((idx for idx, _, _ in acks), default=0)
    candidates = [c for c in J.choose_cuts(j, 200, random.Random(seed)) if c > first_ack]
    cuts = sorted(random.Random(seed + 1).sample(candidates, min(25, len(candidates))))
    b = J.ImageBuilder(j)
    caught = failed = 0
    outcomes = []
    for c in cuts:
        required = {i: s for idx, i, s in acks if idx < c}
        img = env.fresh("lie")
        b.image(c, c, img)
        o = H.check_directory(env, img, required, img)
        outcomes.append(o)
        if o.kind != H.Outcome.PASS:
            caught += 1
        if o.kind == H.Outcome.FAIL:
            failed += 1
            env.log("    lie cut %d: %r" % (c, o))
        shutil.rmtree(img, ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)
    kinds = {}
    for o in outcomes:
        key = o.kind if o.kind != H.Outcome.FAIL else ("lost acks" if "lost" in o.detail else "other failure")
        kinds[key] = kinds.get(key, 0) + 1
    t.add("a disk that ignores every flush (fdatasync:LIE, O_DSYNC ignored) is caught: %d of %d "
          "cuts fail the check, %d more refused (%s)" % (failed, len(cuts), caught - failed, kinds),
          H.Outcome(H.Outcome.PASS if failed else H.Outcome.FAIL,
                    "" if failed else "no cut failed the check although no flush was done"), show=True)
    return t


# ------------------------------------------------------------------------------------ fuzzing

def fuzz(env, seconds=None, runs=None, tally=None):
    """Fuzzing is Tools/Fuzz/run (a libFuzzer build of its own); this calls it and counts."""
    t = tally or Tally("fuzzing")
    runner = os.path.join(env.repo, "Tools", "Fuzz", "run")
    budget = ["--runs", str(runs)] if runs else ["--seconds", str(seconds)]
    p = subprocess.run([runner] + budget, cwd=env.repo)
    t.add("Tools/Fuzz/run " + " ".join(budget),
          H.Outcome(H.Outcome.PASS if p.returncode == 0 else H.Outcome.FAIL,
                    "" if p.returncode == 0 else "exit %d" % p.returncode))
    return t


def bitflips(env, trials, seed, tally=None):
    """Random bit flips in a data file read back offline: Tools/torture/bitflip.py, counted here."""
    t = tally or Tally("bit flips")
    script = os.path.join(env.repo, "Tools", "torture", "bitflip.py")
    p = subprocess.run([sys.executable, script, "--bin", env.bindir, "--trials", str(trials), "--seed", str(seed)],
                       cwd=env.repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("trial ") or line.startswith("  ") or line.startswith("bitflip:"):
            print("  " + line, flush=True)
    t.add("bitflip.py --trials %d" % trials,
          H.Outcome(H.Outcome.PASS if p.returncode == 0 else H.Outcome.FAIL,
                    "" if p.returncode == 0 else "silent corruption or a signal: see the lines above"))
    return t
