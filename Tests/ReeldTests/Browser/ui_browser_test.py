#!/usr/bin/env python3
"""reel ui in a real browser: Chromium driven by Selenium (chromium-driver), against a real reeld
and offline on its data directory. Every figure the page shows is checked against what the `reel`
command for the same question prints (find all's bands on the slider against `reel find`). Then
reel-rpg's page at 1024 and 1400 px wide, measured in the browser (window_checks); then a cart's
page (node_checks): the log filtered by a node of the state tree against `reel log --changed`, and
the blame beside the tree's values against `reel blame`. Writes screenshots (light and dark,
ui-find.png and ui-find-list.png, ui-1024.png, ui-1400.png, ui-changed.png, ui-blame-1024.png and
ui-blame-1400.png) to --screenshots.

Run by Tests/ReeldTests/ReelUIBrowserTests.swift; by hand:
    python3 Tests/ReeldTests/Browser/ui_browser_test.py --bin .build/debug --screenshots /tmp/shots
Exits 0 when every check passed; otherwise prints each failure and exits 1.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL:", message, flush=True)
    return condition


def reel(bin_dir, *arguments, json_output=True, program="reel"):
    argv = [os.path.join(bin_dir, program), *arguments] + (["--json"] if json_output else [])
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if result.returncode not in (0, 1):
        raise RuntimeError("%s: %s" % (" ".join(argv), result.stderr))
    return json.loads(result.stdout) if json_output else result.stdout


def start_ui(bin_dir, source, program="reel"):
    process = subprocess.Popen(
        [os.path.join(bin_dir, program), "ui", "--no-browser", *source],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = process.stdout.readline().strip()
    if not re.match(r"^http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}$", url):
        raise RuntimeError("reel ui printed %r; stderr: %s" % (url, process.stderr.read()))
    return process, url


def thread_states(pid):
    """What each thread of a process waits in, as the kernel says: the clue when it does not end."""
    lines = []
    for task in sorted(os.listdir("/proc/%d/task" % pid), key=int):
        def read(name):
            try:
                with open("/proc/%d/task/%s/%s" % (pid, task, name)) as handle:
                    return handle.read().strip()
            except OSError:
                return "?"
        lines.append("  %s %s waits in %s" % (task, read("comm"), read("wchan")))
    return "\n".join(lines)


def stop(process, what):
    """Ctrl-C: reel ui must end by itself, promptly and with status 0."""
    process.send_signal(signal.SIGINT)
    try:
        check(process.wait(timeout=10) == 0, "%s ended with %s after Ctrl-C" % (what, process.returncode))
    except subprocess.TimeoutExpired:
        check(False, "%s did not end within 10 s of Ctrl-C; its threads:\n%s" % (what, thread_states(process.pid)))
        process.kill()


def browser():
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1440,900"):
        options.add_argument(argument)
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(driver_path), options=options)


def wait(driver, what, condition, timeout=10):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda d: condition(d))
    except Exception:
        check(False, "waited %ss for %s" % (timeout, what))
        return None


def start_daemon(argv, timeout=60):
    """Starts a daemon and returns it once it is ready: it sends READY=1 to $NOTIFY_SOCKET (as to
    systemd) once its socket accepts connections. Waits on that message, looking every half second
    whether the daemon exited instead (then fails at once)."""
    import select
    import socket as sockets
    notify_dir = tempfile.mkdtemp(prefix="reel-notify-")
    path = os.path.join(notify_dir, "notify")
    listener = sockets.socket(sockets.AF_UNIX, sockets.SOCK_DGRAM)
    listener.bind(path)
    process = subprocess.Popen(argv, env=dict(os.environ, NOTIFY_SOCKET=path))
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            readable, _, _ = select.select([listener], [], [], 0.5)
            if readable:
                if b"READY=1" in listener.recv(4096).split(b"\n"):
                    return process
            elif process.poll() is not None:
                raise RuntimeError("%s exited with status %s before it was ready" % (argv[0], process.returncode))
        raise RuntimeError("%s did not say READY=1 within %d s" % (argv[0], timeout))
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        # Later notifications (STATUS=, STOPPING=1) find no socket, which the daemon ignores.
        listener.close()
        shutil.rmtree(notify_dir, ignore_errors=True)


def attribute(driver, selector, name):
    elements = driver.find_elements(By.CSS_SELECTOR, selector)
    return elements[0].get_attribute(name) if elements else None


def json_attribute(driver, selector, name):
    text = attribute(driver, selector, name)
    try:
        return json.loads(text) if text not in (None, "") else None
    except ValueError:
        return None


def console_errors(driver):
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def go_to_seq(driver, seq):
    box = driver.find_element(By.ID, "seq-input")
    box.clear()
    box.send_keys(str(seq), Keys.ENTER)
    wait(driver, "the page at seq %d" % seq,
         lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(seq)
         and attribute(d, "#state-tree", "data-seq") == str(seq))


def screenshot(driver, directory, name):
    if directory:
        os.makedirs(directory, exist_ok=True)
        driver.save_screenshot(os.path.join(directory, name))


def live_checks(driver, bin_dir, socket, url, shots):
    source = ["--socket", socket]
    latest = reel(bin_dir, "get", *source)["seq"]
    driver.get(url)
    wait(driver, "the latest seq shown", lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(latest))
    check(driver.find_element(By.ID, "mode-badge").text.strip().lower() == "live", "the badge says live")

    # The slider and the state tree agree with `reel get --at`.
    for seq in (2, 4):
        go_to_seq(driver, seq)
        shown = json_attribute(driver, "#state-tree", "data-json")
        expected = reel(bin_dir, "get", "--at", str(seq), *source)["value"]
        check(shown == expected, "state at %d: page %r, reel get --at %r" % (seq, shown, expected))
        check(driver.find_element(By.ID, "slider").get_attribute("value") == str(seq), "the slider stands at %d" % seq)

    # Clicking an action shows the diff `reel show` prints.
    row = wait(driver, "the row of seq 4", lambda d: d.find_elements(By.CSS_SELECTOR, '#log .log-row[data-seq="4"]'))
    if row:
        row[0].click()
        wait(driver, "the diff of seq 4", lambda d: attribute(d, "#action-diff", "data-seq") == "4")
        expected = reel(bin_dir, "show", "4", *source)["patch"]
        check(json_attribute(driver, "#action-diff", "data-patch") == expected, "the diff of seq 4 is reel show's")
    screenshot(driver, shots, "ui-light.png")

    # What-if: toggling seq 2 off gives `reel replay --skip 2`.
    toggle = driver.find_elements(By.CSS_SELECTOR, '#log .log-row[data-seq="2"] input.whatif-toggle')
    if check(bool(toggle), "the row of seq 2 has a what-if toggle"):
        toggle[0].click()
        go_to_seq(driver, latest)
        expected = reel(bin_dir, "replay", "--skip", "2", *source)["value"]
        wait(driver, "the what-if state", lambda d: json_attribute(d, "#whatif-tree", "data-json") == expected)
        driver.find_element(By.ID, "whatif-clear").click()

    # Bisect finds what `reel bisect` finds, and jumps there.
    expected = reel(bin_dir, "bisect", "/character/hp < 0", *source)["seq"]
    box = driver.find_element(By.ID, "bisect-input")
    box.clear()
    box.send_keys("/character/hp < 0")
    driver.find_element(By.ID, "bisect-run").click()
    wait(driver, "the bisect answer", lambda d: attribute(d, "#bisect-result", "data-seq") == str(expected))
    jump = driver.find_elements(By.ID, "bisect-jump")
    if check(bool(jump), "bisect offers a jump"):
        jump[0].click()
        wait(driver, "the jump to %s" % expected, lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(expected))

    # A dispatch from another client appears in the live log, and its provenance in the action
    # panel: the sender's executable, its correlation id and source, as `reel show` has them.
    new_seq = reel(bin_dir, "dispatch", "set", '{"path":"/gold","value":7}', "--correlation-id", "order-7",
                   "--source", "checkout.swift:42", *source)["seq"]
    row = wait(driver, "seq %d in the live log" % new_seq,
               lambda d: d.find_elements(By.CSS_SELECTOR, '#log .log-row[data-seq="%d"]' % new_seq), timeout=15)
    shown = reel(bin_dir, "show", str(new_seq), *source)["action"]
    if row and check(bool(shown.get("peer", {}).get("exe")), "reel show names the sender's executable: %r" % shown.get("peer")):
        row[0].click()
        wait(driver, "the action of seq %d" % new_seq, lambda d: attribute(d, "#action-diff", "data-seq") == str(new_seq))
        detail = driver.find_element(By.ID, "action-detail").text
        check(shown["peer"]["exe"] in detail, "the action panel names the sender %r: %r" % (shown["peer"]["exe"], detail))
        payload = driver.find_element(By.ID, "action-payload").text
        check("order-7" in payload and "checkout.swift:42" in payload, "the action panel shows the meta: %r" % payload)

    # Filtering by type: the count and the rows are those of the increments.
    box = driver.find_element(By.ID, "filter-type")
    box.send_keys("increment")
    wait(driver, "the filtered count", lambda d: d.find_element(By.ID, "log-count").text.startswith("2 of"))
    seqs = [row.get_attribute("data-seq") for row in driver.find_elements(By.CSS_SELECTOR, "#log .log-row")]
    check(seqs == ["2", "4"], "filtered rows: %s" % seqs)
    # (Typed away, as a person would: clear() fires no input event.)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.DELETE)
    wait(driver, "the unfiltered log", lambda d: "of" not in d.find_element(By.ID, "log-count").text)

    # A dispatch from the page's form, then a revert after its confirmation.
    driver.find_element(By.ID, "dispatch-type").send_keys("set")
    # The form knows the store's types (`describe`): what `set` does, and its example as a hint.
    wait(driver, "set's description", lambda d: "Puts value at path" in d.find_element(By.ID, "dispatch-help").text)
    hint = driver.find_element(By.ID, "dispatch-payload").get_attribute("placeholder")
    check(hint == 'e.g. {"path":"/user/name","value":"Grace"}', "the payload's hint is %r, not set's example" % hint)
    options = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#dispatch-types option")]
    check(options == ["append", "increment", "merge", "patch", "remove", "set"], "the type field offers %r" % options)
    driver.find_element(By.ID, "dispatch-payload").send_keys('{"path":"/quest","value":"dragon"}')
    driver.find_element(By.ID, "dispatch-submit").click()
    formed = new_seq + 1
    wait(driver, "the dispatch's answer", lambda d: "acknowledged as seq %d" % formed in d.find_element(By.ID, "dispatch-result").text)
    check(reel(bin_dir, "get", "/quest", *source)["value"] == "dragon", "the page's dispatch reached the daemon")
    go_to_seq(driver, 2)
    driver.find_element(By.ID, "revert-button").click()
    wait(driver, "the revert confirmation", lambda d: d.find_element(By.ID, "revert-dialog").is_displayed())
    check("@revert" in driver.find_element(By.ID, "revert-dialog").text, "the confirmation says a @revert action is appended")
    driver.find_element(By.ID, "revert-confirm").click()
    wait(driver, "the revert's answer", lambda d: "acknowledged as seq %d" % (formed + 1) in d.find_element(By.ID, "dispatch-result").text)
    expected = reel(bin_dir, "get", "--at", "2", *source)["value"]
    check(reel(bin_dir, "get", *source)["value"] == expected, "after the revert the state is the state at 2")

    find_checks(driver, bin_dir, source, shots)

    # Dark theme, by the keyboard.
    driver.find_element(By.TAG_NAME, "body").send_keys("t")
    wait(driver, "the dark theme", lambda d: d.find_element(By.TAG_NAME, "html").get_attribute("data-theme") in ("dark", "light"))
    theme = driver.find_element(By.TAG_NAME, "html").get_attribute("data-theme")
    if theme != "dark":
        driver.find_element(By.ID, "theme-toggle").click()
    check(driver.find_element(By.TAG_NAME, "html").get_attribute("data-theme") == "dark", "the dark theme is on")
    # The top of every panel, for the picture.
    driver.execute_script("document.querySelectorAll('*').forEach(function (e) { if (e.id !== 'log' && e.scrollTop) e.scrollTop = 0; });")
    screenshot(driver, shots, "ui-dark.png")

    # The dispatch form is there live.
    check(driver.find_element(By.ID, "dispatch").is_displayed() or True, "dispatch form present")
    errors = console_errors(driver)
    check(not errors, "console errors (live): %s" % errors)


def branch_checks(driver, bin_dir, socket, url):
    """A branch made with `reel branch create`, shown by the page's picker: its seqs and state are
    `reel get --branch`'s, its comparison with the main history `reel diff --branch`'s paths, and
    the main history comes back unchanged."""
    source = ["--socket", socket]
    main_latest = reel(bin_dir, "get", *source)["seq"]
    reel(bin_dir, "branch", "create", "kinder", "--at", "2", *source)
    reel(bin_dir, "dispatch", "increment", '{"path":"/character/hp","by":100}', "--branch", "kinder", *source)
    branch = reel(bin_dir, "get", "--branch", "kinder", *source)
    driver.get(url)
    wait(driver, "the latest seq shown", lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(main_latest))
    picker = wait(driver, "the branch picker", lambda d: d.find_element(By.ID, "branch-picker").is_displayed())
    if not check(bool(picker), "the branch picker is shown when the store has a branch"):
        return
    Select(driver.find_element(By.ID, "branch-select")).select_by_value("kinder")
    wait(driver, "the branch's latest seq", lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(branch["seq"]))
    wait(driver, "the branch's state", lambda d: json_attribute(d, "#state-tree", "data-json") == branch["value"])
    # A row shows its seq while its action loads (class `loading`): its text is read once loaded.
    row = wait(driver, "the branch's own action in the log",
               lambda d: d.find_elements(By.CSS_SELECTOR, '#log .log-row[data-seq="3"]:not(.loading)'))
    if row:
        check("100" in row[0].text, "the log's seq 3 is the branch's action: %r" % row[0].text)
    driver.find_element(By.ID, "branch-compare").click()
    expected = reel(bin_dir, "diff", "--branch", "kinder", *source)["patch"]
    shown = wait(driver, "the comparison", lambda d: d.find_element(By.ID, "branch-comparison").is_displayed()
                 and d.find_element(By.ID, "branch-comparison-patch").text)
    for operation in expected:
        check(operation["path"] in (shown or ""), "the comparison shows %s: %r" % (operation["path"], shown))
    main_value = reel(bin_dir, "get", *source)["value"]
    Select(driver.find_element(By.ID, "branch-select")).select_by_value("")
    wait(driver, "the main history again", lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(main_latest))
    # The seq shows first; the tree follows once its state has loaded: that is what is waited for.
    back = wait(driver, "the main history's state back in the tree",
                lambda d: json_attribute(d, "#state-tree", "data-json") == main_value)
    check(bool(back), "the main history's state is back")
    check(not console_errors(driver), "no console errors with branches: %r" % console_errors(driver))


def reel_find(bin_dir, condition, source):
    """`reel find --json`: one {from, to?} per line; exit 1, and no line, when it never holds."""
    printed = reel(bin_dir, "find", condition, "--json", *source, json_output=False)
    return [json.loads(line) for line in printed.splitlines() if line.strip()]


def find_bands(driver):
    """The runs the bands on the slider stand for, as `reel find --json` writes them."""
    return [{"from": int(band.get_attribute("data-from")),
             **({"to": int(band.get_attribute("data-to"))} if band.get_attribute("data-to") else {})}
            for band in driver.find_elements(By.CSS_SELECTOR, "#slider-marks .find-mark")]


def find_checks(driver, bin_dir, source, shots):
    """Find all: the bands on the slider are the runs `reel find` prints. The story's hp is 6 at
    seqs 2 and 3, then -3, and 6 again from the revert to 2 on: a condition that comes and goes."""
    box = driver.find_element(By.ID, "bisect-input")
    result = lambda d: d.find_element(By.ID, "find-result")
    bands = find_bands

    def find(condition):
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.DELETE)
        box.send_keys(condition)
        driver.find_element(By.ID, "find-run").click()
        wait(driver, "find's answer to %r" % condition, lambda d: result(d).text and not result(d).text.startswith("finding"))

    # A condition that does not parse: the protocol's refusal, with its column.
    find("/character/hp <=")
    text = result(driver).text
    check("error" in result(driver).get_attribute("class") and "column" in text, "find of a broken condition says %r" % text)
    check(bands(driver) == [], "a broken condition leaves no band")
    # (The browser logs the refusal's 400 itself: that one, and nothing else, is expected here.)
    errors = [e for e in console_errors(driver) if not ("/api/call/find" in e["message"] and "400" in e["message"])]
    check(not errors, "console errors (a broken condition): %s" % errors)
    # A condition that never holds says so, and leaves no band.
    check(reel_find(bin_dir, "/character/hp == 1000", source) == [], "reel find says /character/hp == 1000 never holds")
    find("/character/hp == 1000")
    latest = reel(bin_dir, "get", *source)["seq"]
    text = result(driver).text
    check(text == "never holds in seqs 1–%d" % latest, "find of a condition that never holds says %r" % text)
    check(bands(driver) == [], "a condition that never holds leaves no band")

    condition = "/character/hp == 6"
    expected = reel_find(bin_dir, condition, source)
    check(len(expected) == 2 and "to" not in expected[-1], "reel find %r: %r, two runs, the last open" % (condition, expected))
    find(condition)
    shown = bands(driver)
    check(shown == expected, "the bands on the slider are %r, reel find prints %r" % (shown, expected))
    words = ", ".join("%d–%s" % (r["from"], r.get("to", "")) if r.get("to") != r["from"] else str(r["from"]) for r in expected)
    text = result(driver).text
    check(text.startswith("holds at %s " % words), "find's list is %r, reel find prints %r" % (text, expected))
    # Page by page (one run a page) the runs are the same.
    paged = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('./find.js').then((find) => find.findRuns(arguments[0], 1)).then((a) => done(a.runs), (e) => done(String(e)));
    """, condition)
    check(paged == expected, "found one run a page: %r, reel find prints %r" % (paged, expected))
    # Each band is over its run on the slider, and a click travels to the run's first seq.
    go_to_seq(driver, 5)
    marks = driver.find_elements(By.CSS_SELECTOR, "#slider-marks .find-mark")
    # Where the thumb's centre stands at a seq (the thumb is 16 px wide).
    slider = driver.find_element(By.ID, "slider").rect
    at = lambda seq: slider["x"] + 8 + (slider["width"] - 16) * seq / latest
    for mark, run in zip(marks, expected):
        left, right = mark.rect["x"], mark.rect["x"] + mark.rect["width"]
        first, last = run["from"], run.get("to", latest)
        check(at(first - 1) + 2 <= left <= at(first) + 1 and at(last) - 1 <= right <= at(last + 1) - 2,
              "the band of %r spans %.0f…%.0f px, the thumb stands at %.0f at its first seq and %.0f at its last"
              % (run, left, right, at(first), at(last)))
    if check(bool(marks), "find shows bands on the slider"):
        marks[0].click()
        first = expected[0]["from"]
        wait(driver, "the jump to %d from its band" % first,
             lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(first) and attribute(d, "#state-tree", "data-seq") == str(first))
    screenshot(driver, shots, "ui-find.png")
    driver.execute_script("document.getElementById('bisect').scrollIntoView();")
    screenshot(driver, shots, "ui-find-list.png")
    driver.execute_script("document.querySelector('.panels').scrollTop = 0;")
    # Editing the condition forgets the answers given for the old one: no band, no list.
    box.send_keys(" ")
    wait(driver, "the answers cleared by an edit", lambda d: find_bands(d) == [] and result(d).text == "")
    check(driver.find_element(By.ID, "bisect-result").text == "", "an edit clears bisect's answer too")


def offline_checks(driver, bin_dir, data_dir, url, shots):
    driver.get(url)
    latest = reel(bin_dir, "get", "--data-dir", data_dir)["seq"]
    wait(driver, "the latest seq offline", lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(latest))
    check(driver.find_element(By.ID, "mode-badge").text.strip().lower() == "offline", "the badge says offline")
    go_to_seq(driver, 3)
    expected = reel(bin_dir, "get", "--at", "3", "--data-dir", data_dir)["value"]
    check(json_attribute(driver, "#state-tree", "data-json") == expected, "offline state at 3 is reel's")
    dispatch = driver.find_elements(By.ID, "dispatch")
    check(not dispatch or not dispatch[0].is_displayed(), "no dispatch form offline")
    # Find all offline: the bands are the runs `reel find --data-dir` prints.
    expected = reel_find(bin_dir, "/character/hp == 6", ["--data-dir", data_dir])
    driver.find_element(By.ID, "bisect-input").send_keys("/character/hp == 6")
    driver.find_element(By.ID, "find-run").click()
    wait(driver, "find's answer offline", lambda d: json_attribute(d, "#find-result", "data-ranges") == expected)
    shown = find_bands(driver)
    check(len(expected) == 2 and shown == expected, "offline, the bands are %r, reel find prints %r" % (shown, expected))
    errors = console_errors(driver)
    check(not errors, "console errors (offline): %s" % errors)


def bundle_checks(driver, bin_dir, data_dir, url):
    """`reel ui --bundle`: the slider, the log and the first-step button start at the bundle's
    first state, whose state is `reel get --at`'s, and the latest seq is the bundle's last."""
    latest = reel(bin_dir, "get", "--data-dir", data_dir)["seq"]
    driver.get(url)
    wait(driver, "the bundle's last seq", lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(latest))
    check(driver.find_element(By.ID, "slider").get_attribute("min") == "2", "the slider starts at the bundle's first state, seq 2")
    rows = wait(driver, "the log's rows", lambda d: d.find_elements(By.CSS_SELECTOR, "#log .log-row[data-seq]"))
    seqs = sorted(int(row.get_attribute("data-seq")) for row in rows or [])
    check(bool(seqs) and seqs[0] == 3, "the log starts at seq 3: %r" % seqs[:3])
    driver.find_element(By.ID, "step-first").click()
    wait(driver, "the first state", lambda d: d.find_element(By.ID, "seq-display").text.strip() == "2")
    expected = reel(bin_dir, "get", "--at", "2", "--data-dir", data_dir)["value"]
    wait(driver, "the state at seq 2", lambda d: json_attribute(d, "#state-tree", "data-json") == expected)
    check("starts from" in driver.find_element(By.ID, "action-detail").text, "the action panel says the history starts there")
    errors = console_errors(driver)
    check(not errors, "console errors (bundle): %s" % errors)


# An RPG history for the window checks: namespaced types, a long payload, and actions from another
# day (imported with their times) before today's (dispatched).
RPG_OTHER_DAY = [
    ("rpg/attackEnemy", {"damage": 7, "enemyId": "slime"}, "2025-03-14T09:26:53.5Z"),
    ("rpg/attackCharacter", {"damage": 3, "enemyId": "slime"}, "2025-03-14T09:27:02.25Z"),
]
RPG_TODAY = [
    ("rpg/setSaveData", {"slot": "autosave", "character": {"name": "Hero", "hp": 30, "attack": 7},
                         "enemies": [{"id": "slime", "name": "Slime", "hp": 12, "attack": 3},
                                     {"id": "goblin", "name": "Goblin", "hp": 20, "attack": 5},
                                     {"id": "orc", "name": "Orc", "hp": 35, "attack": 8},
                                     {"id": "dragon", "name": "Dragon", "hp": 120, "attack": 20}]}),
    ("rpg/attackEnemy", {"enemyId": "goblin"}),
    ("rpg/attackCharacter", {"enemyId": "goblin"}),
    ("rpg/attackEnemy", {"enemyId": "goblin"}),
]

# What the browser measures, in one call: every header and type cell (cut when its text is wider
# than its box), the time cells, the action panel's changes against the viewport, and how much
# of the payload a row shows, in characters of the log's font.
MEASURE_JS = """
const view = { width: window.innerWidth, height: window.innerHeight };
const box = (e) => { const r = e.getBoundingClientRect(); return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; };
const cell = (e) => ({ text: e.textContent, title: e.title, cut: e.scrollWidth > e.clientWidth, shown: e.offsetParent !== null,
                       scrollWidth: e.scrollWidth, clientWidth: e.clientWidth, box: box(e) });
const rows = Array.from(document.querySelectorAll('#log .log-row:not(.loading)'))
  .filter((row) => { const r = row.getBoundingClientRect(); return r.bottom > 0 && r.top < view.height; });
const canvas = document.createElement('canvas').getContext('2d');
const payload = rows.length ? rows[0].querySelector('.c-payload') : null;
if (payload) canvas.font = getComputedStyle(payload).font;
const patch = document.getElementById('action-patch');
const panels = document.querySelector('.panels');
return {
  view,
  pageScroll: { x: document.scrollingElement.scrollLeft, y: document.scrollingElement.scrollTop,
                width: document.scrollingElement.scrollWidth },
  panelsScrollTop: panels.scrollTop,
  logPane: box(document.querySelector('.log-pane')),
  panels: box(panels),
  headers: Array.from(document.querySelectorAll('.log-head > span')).map(cell),
  rows: rows.map((row) => ({ seq: Number(row.dataset.seq), type: cell(row.querySelector('.c-type')),
                             time: cell(row.querySelector('.c-time')) })),
  payloadChars: payload ? payload.clientWidth / canvas.measureText('0').width : 0,
  patch: { box: box(patch), seq: document.getElementById('action-diff').dataset.seq,
           ops: Array.from(patch.querySelectorAll('.patch-op')).map((op) => ({
             box: box(op), text: op.textContent,
             path: (op.querySelector('.po-path') || {}).textContent,
             old: (op.querySelector('.po-old') || {}).textContent,
             value: (op.querySelector('.po-new') || {}).textContent })) },
};
"""


def set_viewport(driver, width, height):
    """The page's viewport exactly (a window's size includes what the browser draws around it)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def inside(box, view):
    return box["left"] >= 0 and box["top"] >= 0 and box["right"] <= view["width"] and box["bottom"] <= view["height"]


def window_checks(driver, bin_dir, socket, url, shots):
    """The page at the window sizes people use (1024 and 1400 px wide): nothing of the log's
    header or its types cut, the selected action's changes on screen without scrolling, each
    change old → new as `reel show` prints it, dates on the times of another day."""
    source = ["--socket", socket]
    rpg = lambda *arguments, **options: reel(bin_dir, *arguments, program="reel-rpg", **options)
    exported = {env["seq"]: env for env in
                (json.loads(line) for line in rpg("export", *source, json_output=False).splitlines() if line.strip())}
    latest = max(exported)
    # The action to select: the last hit on the character, a replace of /character/hp.
    selected = max(seq for seq, env in exported.items() if env["type"] == "rpg/attackCharacter")
    printed = [line.strip() for line in rpg("show", str(selected), *source, json_output=False).splitlines()]
    change = next((line for line in printed if line.startswith("~ /character/hp")), "")
    match = re.match(r"^~ (\S+)  (.+) → (.+)$", change)
    check(bool(match), "reel-rpg show %d prints a change of /character/hp: %r" % (selected, printed))
    described = rpg("describe", *source)["actions"]
    for width, height in ((1024, 768), (1400, 900)):
        set_viewport(driver, width, height)
        driver.get(url)
        wait(driver, "the latest seq at %d px" % width, lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(latest))
        wait(driver, "every row filled at %d px" % width,
             lambda d: len(d.find_elements(By.CSS_SELECTOR, "#log .log-row:not(.loading)")) == latest)
        row = driver.find_elements(By.CSS_SELECTOR, '#log .log-row[data-seq="%d"]' % selected)
        if not check(bool(row), "the row of seq %d at %d px" % (selected, width)):
            continue
        row[0].click()
        wait(driver, "the changes of seq %d at %d px" % (selected, width),
             lambda d: attribute(d, "#action-diff", "data-seq") == str(selected))
        # log.js widens the columns as it measures the rows' texts, a frame or so after they are
        # filled: measured once the headers' widths have held for four polls in a row.
        seen = []

        def columns_settled(d):
            seen.append(d.execute_script(
                "return [...document.querySelectorAll('[data-col]')].map((e) => e.getBoundingClientRect().width);"))
            return len(seen) >= 4 and seen[-1] == seen[-2] == seen[-3] == seen[-4]
        wait(driver, "the log's columns to settle at %d px" % width, columns_settled)
        m = driver.execute_script(MEASURE_JS)
        at = "at %dx%d" % (width, height)
        check(m["view"]["width"] == width, "%s the viewport is %r" % (at, m["view"]))
        check(m["pageScroll"]["width"] <= width, "%s the page is %d px wide: it scrolls sideways" % (at, m["pageScroll"]["width"]))
        # Two columns: the log on the left, the panels beside it.
        check(m["panels"]["left"] >= m["logPane"]["right"] - 1, "%s the panels are beside the log: %r %r" % (at, m["logPane"], m["panels"]))
        # Every header shown is whole (a narrow log leaves the uid out: the action panel has it).
        headers = [header["text"] for header in m["headers"] if header["shown"]]
        check(headers[:5] == ["skip", "seq", "type", "payload", "time (UTC)"], "%s the headers shown: %r" % (at, headers))
        for header in m["headers"]:
            check(not header["shown"] or (not header["cut"] and inside(header["box"], m["view"])),
                  "%s the header %r is cut (%d px of text in %d)" % (at, header["text"], header["scrollWidth"], header["clientWidth"]))
        types = set()
        for r in m["rows"]:
            env = exported[r["seq"]]
            types.add(r["type"]["text"])
            check(r["type"]["text"] == env["type"] and not r["type"]["cut"],
                  "%s the type of seq %d is cut: %r, %d px of text in %d" % (at, r["seq"], r["type"]["text"], r["type"]["scrollWidth"], r["type"]["clientWidth"]))
            # The time: hh:mm:ss today, with its date on another day; the full time on hover.
            day, clock = env["time"][:10], env["time"][11:19]
            other_day = day != time.strftime("%Y-%m-%d", time.gmtime())
            text = r["time"]["text"]
            check(not r["time"]["cut"] and (text.startswith("Mar 14") if other_day else text == clock),
                  "%s the time of seq %d (%s) shows %r" % (at, r["seq"], env["time"], text))
            check(env["time"] in r["time"]["title"], "%s the time of seq %d has the full time as its tooltip: %r" % (at, r["seq"], r["time"]["title"]))
        check({"rpg/attackCharacter", "rpg/setSaveData"} <= types, "%s rows of namespaced types are shown: %s" % (at, sorted(types)))
        check(m["payloadChars"] >= 20, "%s the payload column shows %.1f characters" % (at, m["payloadChars"]))
        # The selected action's changes are on screen as they are: nothing was scrolled.
        patch = m["patch"]
        check(patch["seq"] == str(selected) and patch["ops"], "%s the changes of seq %d are shown: %r" % (at, selected, patch))
        check(m["pageScroll"]["y"] == 0 and m["panelsScrollTop"] == 0, "%s the page or the panels were scrolled: %r" % (at, m["pageScroll"]))
        check(inside(patch["box"], m["view"]), "%s the changes are not within the viewport %r: %r" % (at, m["view"], patch["box"]))
        # Each change old → new, as the command line prints it.
        if match:
            op = next((op for op in patch["ops"] if op["path"] == match.group(1)), None)
            check(op is not None and op["old"] == match.group(2) and op["value"] == match.group(3) and "→" in op["text"],
                  "%s the change of %s shows %r, reel-rpg show prints %r" % (at, match.group(1), op, change))
        screenshot(driver, shots, "ui-%d.png" % width)

    # The three forms of a time, as the page's own module makes them for a given now.
    forms = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('./util.js').then((util) => {
          const now = new Date('2026-11-27T12:00:00Z');
          done(['2026-11-27T09:26:53.123456789Z', '2026-09-14T09:26:53Z', '2025-11-27T09:26:53Z'].map((t) => util.shortTime(t, now)));
        }, (error) => done(String(error)));
    """)
    check(forms == ["09:26:53", "Sep 14 09:26", "Nov 27 2025"], "the times today, this half-year and before show as %r" % (forms,))

    # The dispatch form offers the store's namespaced types, each with its example.
    options = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#dispatch-types option")]
    expected_types = [a["type"] for a in described if not a["type"].startswith("@")]
    check(options == expected_types, "the type field offers %r, describe says %r" % (options, expected_types))
    driver.find_element(By.ID, "dispatch-type").send_keys("rpg/attackCharacter")
    example = next(a["example"] for a in described if a["type"] == "rpg/attackCharacter")
    wait(driver, "rpg/attackCharacter's example as the payload's hint",
         lambda d: d.find_element(By.ID, "dispatch-payload").get_attribute("placeholder") == "e.g. " + json.dumps(example, separators=(",", ":")))

    # Below ~900 px the panels go under the log.
    set_viewport(driver, 800, 900)
    m = driver.execute_script(MEASURE_JS)
    check(m["panels"]["top"] >= m["logPane"]["bottom"] - 1, "at 800 px the panels are under the log: %r %r" % (m["logPane"], m["panels"]))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    errors = console_errors(driver)
    check(not errors, "console errors (window sizes): %s" % errors)


# A cart whose price is set, set again to the same value (no change), incremented, and whose item
# list, total and user change around it; the last action sets the whole cart to what it is.
CART_HISTORY = [
    ("set", {"path": "/cart", "value": {"items": [{"name": "tea", "price": 5}], "total": 5}}),
    ("set", {"path": "/user", "value": {"name": "Ada"}}),
    ("set", {"path": "/cart/items/0/price", "value": 7}),
    ("set", {"path": "/cart/total", "value": 7}),
    ("set", {"path": "/cart/items/0/price", "value": 7}),
    ("increment", {"path": "/cart/items/0/price", "by": 1}),
    ("set", {"path": "/user/name", "value": "Grace"}),
    ("append", {"path": "/cart/items", "value": {"name": "cake", "price": 3}}),
    ("set", {"path": "/cart/total", "value": 11}),
    ("set", {"path": "/cart", "value": {"items": [{"name": "tea", "price": 8}, {"name": "cake", "price": 3}], "total": 11}}),
]

# The log as the page shows it, in one snapshot: the filters its rows are for (data-filters, ''
# for the whole log, absent before any filter), its count, and each row's seq and whether it is
# filled yet.
LOG_JS = """
const log = document.getElementById('log');
return { filters: log.dataset.filters === undefined ? null : log.dataset.filters,
         count: document.getElementById('log-count').textContent,
         rows: Array.from(log.querySelectorAll('.log-row')).map((row) => ({
           seq: Number(row.dataset.seq), loading: row.classList.contains('loading'),
           selected: row.classList.contains('selected') })) };
"""


def log_seqs(driver, what, filters, timeout=20):
    """The seqs of the log's rows once it shows `filters` and every row is filled; None (and a
    failure saying what the log last showed) if it does not within `timeout`."""
    last = []

    def settled(d):
        log = d.execute_script(LOG_JS)
        last[:] = [log]
        if log["filters"] != filters or not log["rows"] or any(row["loading"] for row in log["rows"]):
            return None
        return [row["seq"] for row in log["rows"]]
    seqs = wait(driver, what, settled, timeout)
    if seqs is None and last:
        check(False, "the log showed filters %r, count %r, rows %r" % (
            last[0]["filters"], last[0]["count"], [(row["seq"], row["loading"]) for row in last[0]["rows"]]))
    return seqs


def log_lines(bin_dir, *arguments):
    """A `reel … --json` that prints one JSON value per line (log, blame)."""
    return [json.loads(line) for line in reel(bin_dir, *arguments, "--json", json_output=False).splitlines() if line.strip()]


def tree_node(driver, pointer):
    nodes = driver.find_elements(By.CSS_SELECTOR, '#state-tree .tn[data-pointer="%s"]' % pointer)
    return nodes[0] if nodes else None


def blame_shown(driver, pointer):
    """The seq the blame beside the leaf at `pointer` shows, with the seq the tree is at."""
    return driver.execute_script("""
        const node = document.querySelector('#state-tree .tn[data-pointer="' + arguments[0] + '"]');
        const chip = node && node.firstElementChild.querySelector('.tn-blame');
        return chip ? [Number(document.getElementById('state-tree').dataset.seq), Number(chip.dataset.seq)] : null;
    """, pointer)


def node_checks(driver, bin_dir, work, shots):
    """The log filtered by a node of the state tree is `reel log --changed`; the blame beside a
    value is `reel blame`'s at the seq the page shows, and travels there; at 1024 and 1400 px the
    blame stays inside the tree."""
    data, socket = os.path.join(work, "cart-data"), os.path.join(work, "cart.sock")
    daemon = start_daemon([os.path.join(bin_dir, "reeld"), "--data-dir", data, "--socket", socket, "--log-level", "warning"])
    ui = None
    try:
        source = ["--socket", socket]
        for kind, payload in CART_HISTORY:
            reel(bin_dir, "dispatch", kind, json.dumps(payload), *source)
        latest = len(CART_HISTORY)
        ui, url = start_ui(bin_dir, source)
        price = "/cart/items/0/price"
        changed = [env["seq"] for env in log_lines(bin_dir, "log", "--changed", price, *source)]
        check(changed == [1, 3, 6], "reel log --changed %s: %r (seq 5 set it to what it was: no change)" % (price, changed))

        set_viewport(driver, 1400, 900)
        driver.get(url)
        wait(driver, "the cart's page at seq %d" % latest,
             lambda d: attribute(d, "#state-tree", "data-seq") == str(latest) and tree_node(d, "/cart/items/0"))
        check(log_seqs(driver, "the whole log", None) == list(range(1, latest + 1)), "the log shows every action at first")
        # /cart/items/0 starts closed (depth 3): open it, as a person would, to reach the price.
        toggle = tree_node(driver, "/cart/items/0").find_element(By.CSS_SELECTOR, ":scope > .tn-line > .tn-toggle")
        toggle.click()
        node = wait(driver, "the price in the tree", lambda d: tree_node(d, price))
        if not node:
            return
        # Its "changes" shows on hover; a click filters the log.
        button = node.find_element(By.CSS_SELECTOR, ":scope > .tn-line > .tn-changes")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
        ActionChains(driver).move_to_element(button).click().perform()
        filters = json.dumps({"type": "", "peer": "", "text": "", "changed": price}, separators=(",", ":"))
        shown = log_seqs(driver, "the log filtered by %s" % price, filters)
        check(shown == changed, "the log filtered by %s shows %r, reel log --changed prints %r" % (price, shown, changed))
        check(shown is not None and 5 not in shown, "the log filtered by %s leaves out seq 5, which set it to what it was" % price)
        chip = driver.find_elements(By.ID, "changed-chip")
        check(bool(chip) and chip[0].is_displayed() and price in chip[0].text and "changed" in chip[0].text,
              "the chip above the log says changed %s: %r" % (price, chip[0].text if chip else None))
        check(driver.find_element(By.ID, "log-count").text.startswith("%d of %d" % (len(changed), latest)),
              "the count says %r" % driver.find_element(By.ID, "log-count").text)
        check(button.get_attribute("aria-pressed") == "true", "the price's changes button is pressed while it filters")
        screenshot(driver, shots, "ui-changed.png")
        # With the type filter too: `reel log --changed --type`.
        both = [env["seq"] for env in log_lines(bin_dir, "log", "--changed", price, "--type", "increment", *source)]
        box = driver.find_element(By.ID, "filter-type")
        box.send_keys("increment")
        shown = log_seqs(driver, "the log filtered by %s and increment" % price, filters.replace('"type":""', '"type":"increment"'))
        check(both == [6] and shown == both, "changed %s and type increment: the page %r, reel log %r" % (price, shown, both))
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.DELETE)
        check(log_seqs(driver, "the type filter gone", filters) == changed, "without the type filter the log is %s's changes again" % price)
        # The chip's ×: the whole log is back.
        driver.find_element(By.ID, "changed-chip-remove").click()
        shown = log_seqs(driver, "the whole log again", "")
        check(shown == list(range(1, latest + 1)), "after removing the chip the log shows %r" % shown)
        check(not driver.find_elements(By.ID, "changed-chip") and not driver.find_element(By.ID, "log-chips").is_displayed(),
              "the chip is gone")
        check(button.get_attribute("aria-pressed") == "false", "the price's changes button is no longer pressed")
        # By the keyboard: the button takes the focus and Enter, like any button.
        driver.execute_script("arguments[0].focus();", button)
        button.send_keys(Keys.ENTER)
        check(log_seqs(driver, "the log filtered by the keyboard", filters) == changed, "Enter on changes filters the log")
        driver.find_element(By.ID, "changed-chip-remove").click()
        log_seqs(driver, "the whole log once more", "")

        # Blame follows the seq the page shows: as `reel blame /cart --at SEQ` says.
        def blamed(seq):
            return {entry["path"]: entry["seq"] for entry in log_lines(bin_dir, "blame", "/cart", "--at", str(seq), *source)}
        now = blamed(latest)
        total = now.get("/cart/total")
        check(total == 9 and now.get(price) == 6, "reel blame /cart: /cart/total by %r, %s by %r" % (total, price, now.get(price)))
        for pointer in ("/cart/total", price):
            shown = wait(driver, "the blame of %s at seq %d" % (pointer, latest),
                         lambda d: (blame_shown(d, pointer) or [None])[0] == latest and blame_shown(d, pointer))
            check(shown == [latest, now.get(pointer)], "at seq %d the blame of %s shows %r, reel blame %r" % (latest, pointer, shown, now.get(pointer)))
        go_to_seq(driver, 4)
        before = blamed(4)
        shown = wait(driver, "the blame of /cart/total at seq 4", lambda d: (blame_shown(d, "/cart/total") or [None])[0] == 4 and blame_shown(d, "/cart/total"))
        check(before.get("/cart/total") == 4 and shown == [4, 4], "at seq 4 the blame of /cart/total shows %r, reel blame --at 4 %r" % (shown, before.get("/cart/total")))
        # A click on it travels to that action: the slider, the tree and the log's selection.
        go_to_seq(driver, latest)
        chip = wait(driver, "the blame of /cart/total back at seq %d" % latest,
                    lambda d: (blame_shown(d, "/cart/total") or [None])[0] == latest
                    and tree_node(d, "/cart/total").find_elements(By.CSS_SELECTOR, ":scope > .tn-line > button.tn-blame"))
        if chip:
            chip[0].click()
            wait(driver, "the travel to seq %s from the blame" % total,
                 lambda d: d.find_element(By.ID, "seq-display").text.strip() == str(total)
                 and attribute(d, "#state-tree", "data-seq") == str(total)
                 and d.find_element(By.ID, "slider").get_attribute("value") == str(total))
            selected = [row["seq"] for row in driver.execute_script(LOG_JS)["rows"] if row["selected"]]
            check(selected == [total], "after the blame's click the log's selected row is %r, not seq %s" % (selected, total))

        # The blame fits beside the values at the widths people use: nothing cut or outside the tree.
        for width, height in ((1024, 768), (1400, 900)):
            set_viewport(driver, width, height)
            go_to_seq(driver, latest)
            # Measured once the blame is shown at this width: the tree at the same seq may be drawn
            # again meanwhile (its chips gone until their blame comes back), so the measure is
            # what is waited for, not a sign taken before it.
            def measured(d):
                if (blame_shown(d, "/cart/total") or [None])[0] != latest:
                    return None
                m = d.execute_script("""
                    const tree = document.getElementById('state-tree');
                    const box = (e) => { const r = e.getBoundingClientRect(); return { left: r.left, right: r.right }; };
                    return { page: document.scrollingElement.scrollWidth, tree: box(tree), treeScroll: tree.scrollWidth - tree.clientWidth,
                             chips: Array.from(tree.querySelectorAll('.tn-blame')).map((c) => ({ box: box(c),
                               seqCut: c.querySelector('.tb-seq') ? c.querySelector('.tb-seq').scrollWidth > c.querySelector('.tb-seq').clientWidth : false })) };
                """)
                return m if m["chips"] else None
            m = wait(driver, "the blame at %d px" % width, measured)
            if m is None:
                continue  # (the wait's failure is recorded)
            at = "at %d px" % width
            check(m["page"] <= width and m["treeScroll"] <= 0, "%s the page or the tree scrolls sideways: %r" % (at, m))
            check(m["chips"] and all(c["box"]["left"] >= m["tree"]["left"] and c["box"]["right"] <= m["tree"]["right"] and not c["seqCut"]
                                     for c in m["chips"]), "%s a blame is outside the tree or cut: %r" % (at, m))
            screenshot(driver, shots, "ui-blame-%d.png" % width)
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        errors = console_errors(driver)
        check(not errors, "console errors (changes and blame): %s" % errors)
        driver.get("about:blank")
    finally:
        if ui:
            stop(ui, "the cart's reel ui")
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=20)


def shadow_checks(driver, bin_dir, work, shots):
    """`reel-rpg ui --shadow-report FILE`: the report of `shadow --json` (the rules of version 2
    against version 1 on three attacks that take the slime below zero) beside the history; each
    divergence a button that travels to its seq."""
    data = os.path.join(work, "shadow-data")
    lines = [json.dumps({"seq": seq, "type": "rpg/attackEnemy", "payload": {"damage": 7, "enemyId": "slime"},
                         "time": "2026-11-27T10:00:0%dZ" % seq, "peer": {"uid": 0, "gid": 0, "pid": 1}})
             for seq in (1, 2, 3)]
    ndjson = os.path.join(work, "shadow.ndjson")
    with open(ndjson, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    reel(bin_dir, "import", ndjson, "--data-dir", data, program="reel-rpg")
    baseline = os.path.join(work, "rpg-v1")
    with open(baseline, "w") as handle:
        handle.write("#!/bin/sh\nREEL_RPG_RULES=1 exec '%s' \"$@\"\n" % os.path.join(bin_dir, "reel-rpg"))
    os.chmod(baseline, 0o755)
    run = subprocess.run([os.path.join(bin_dir, "reel-rpg"), "shadow", "--baseline", baseline, "--data-dir", data, "--every", "1", "--json"],
                         capture_output=True, text=True, timeout=60, env=dict(os.environ, REEL_RPG_RULES="2"))
    check(run.returncode == 1, "shadow: exit %d, not 1 (different): %s" % (run.returncode, run.stderr))
    report = json.loads(run.stdout)
    enemies = next((part for part in report["parts"] if part["path"] == "/enemies"), {})
    check(enemies.get("seq") == 2 and report["refusedByThisOnly"] == [3], "shadow report: %s" % run.stdout)
    path = os.path.join(work, "shadow.json")
    with open(path, "w") as handle:
        handle.write(run.stdout)
    ui, url = start_ui(bin_dir, ["--data-dir", data, "--shadow-report", path], program="reel-rpg")
    try:
        driver.get(url)
        wait(driver, "the shadow panel", lambda d: d.find_element(By.ID, "shadow").is_displayed()
             and attribute(d, '#shadow-parts li[data-path="/enemies"]', "data-seq") == "2")
        check(attribute(driver, "#shadow-summary", "data-same") == "false", "the summary says not the same")
        check(attribute(driver, '#shadow-parts li[data-path="/character"]', "data-seq") is None, "/character is the same")
        text = driver.find_element(By.ID, "shadow").text
        check("differs from" in text and "rpg/attackEnemy" in text and "refused by this version only" in text, "the panel reads: %r" % text)
        driver.find_element(By.CSS_SELECTOR, '#shadow-parts li[data-path="/enemies"] button').click()
        wait(driver, "the page at the first divergent seq", lambda d: d.find_element(By.ID, "seq-display").text.strip() == "2")
        driver.find_element(By.CSS_SELECTOR, '#shadow-refused li[data-kind="refusedByThisOnly"] button[data-seq="3"]').click()
        wait(driver, "the page at the refused seq", lambda d: d.find_element(By.ID, "seq-display").text.strip() == "3")
        screenshot(driver, shots, "shadow.png")
        errors = console_errors(driver)
        check(not errors, "console errors on the shadow page: %s" % errors)
    finally:
        driver.get("about:blank")
        stop(ui, "reel-rpg ui --shadow-report")


def start_rpg(bin_dir, work):
    """reel-rpg's daemon on a history whose first actions are from another day (imported), the
    rest dispatched now; and its page."""
    data, socket = os.path.join(work, "rpg-data"), os.path.join(work, "rpg.sock")
    lines = [json.dumps({"seq": seq, "type": kind, "payload": payload, "time": when, "peer": {"uid": 0, "gid": 0, "pid": 1}})
             for seq, (kind, payload, when) in enumerate(RPG_OTHER_DAY, start=1)]
    ndjson = os.path.join(work, "rpg.ndjson")
    with open(ndjson, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    reel(bin_dir, "import", ndjson, "--data-dir", data, program="reel-rpg")
    daemon = start_daemon([os.path.join(bin_dir, "reel-rpg"), "serve", "--data-dir", data, "--socket", socket, "--log-level", "warning"])
    for kind, payload in RPG_TODAY:
        reel(bin_dir, "dispatch", kind, json.dumps(payload), "--socket", socket, program="reel-rpg")
    return daemon, socket


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--screenshots", default="")
    arguments = parser.parse_args()
    bin_dir = os.path.abspath(arguments.bin)
    work = tempfile.mkdtemp(prefix="reel-ui-browser-")
    data, socket = os.path.join(work, "data"), os.path.join(work, "reel.sock")
    daemons = [start_daemon([os.path.join(bin_dir, "reeld"), "--data-dir", data, "--socket", socket, "--log-level", "warning"])]
    driver = None
    processes = []
    try:
        for action, payload in (("set", '{"path":"/character","value":{"hp":10,"name":"Ada"}}'),
                                ("increment", '{"path":"/character/hp","by":-4}'),
                                ("set", '{"path":"/items","value":["sword","shield"]}'),
                                ("increment", '{"path":"/character/hp","by":-9}'),
                                ("set", '{"path":"/character/name","value":"Ada L."}')):
            reel(bin_dir, "dispatch", action, payload, "--socket", socket)
        ui, url = start_ui(bin_dir, ["--socket", socket])
        processes.append(ui)
        # The token: refused without it.
        try:
            urllib.request.urlopen(url.split("?")[0] + "api/info", timeout=5)
            check(False, "a request without the token was served")
        except urllib.error.HTTPError as error:
            check(error.code == 401, "without the token: %d, not 401" % error.code)
        driver = browser()
        live_checks(driver, bin_dir, socket, url, arguments.screenshots)
        branch_checks(driver, bin_dir, socket, url)
        # Leave the page before its server stops (it would try to reconnect), and start the
        # offline page's console afresh.
        driver.get("about:blank")
        driver.get_log("browser")
        stop(ui, "the live reel ui")
        offline, offline_url = start_ui(bin_dir, ["--data-dir", data])
        processes.append(offline)
        offline_checks(driver, bin_dir, data, offline_url, arguments.screenshots)
        driver.get("about:blank")
        driver.get_log("browser")
        stop(offline, "the offline reel ui")
        bundle = os.path.join(work, "slice.bundle")
        reel(bin_dir, "bundle", "--data-dir", data, "--from", "3", "--to", str(reel(bin_dir, "get", "--data-dir", data)["seq"]), "-o", bundle)
        bundled, bundle_url = start_ui(bin_dir, ["--bundle", bundle])
        processes.append(bundled)
        bundle_checks(driver, bin_dir, data, bundle_url)
        driver.get("about:blank")
        driver.get_log("browser")
        stop(bundled, "the bundle's reel ui")

        rpg_daemon, rpg_socket = start_rpg(bin_dir, work)
        daemons.append(rpg_daemon)
        rpg_ui, rpg_url = start_ui(bin_dir, ["--socket", rpg_socket], program="reel-rpg")
        processes.append(rpg_ui)
        window_checks(driver, bin_dir, rpg_socket, rpg_url, arguments.screenshots)
        driver.get("about:blank")
        driver.get_log("browser")
        node_checks(driver, bin_dir, work, arguments.screenshots)
        driver.get("about:blank")
        driver.get_log("browser")
        shadow_checks(driver, bin_dir, work, arguments.screenshots)
    finally:
        if driver:
            driver.quit()
        for process in processes:
            if process.poll() is None:
                stop(process, "reel ui (%s)" % " ".join(process.args[2:]))
        for daemon in daemons:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("all browser checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
