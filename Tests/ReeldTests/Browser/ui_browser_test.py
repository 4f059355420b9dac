#!/usr/bin/env python3
"""reel ui in a real browser: Chromium driven by Selenium (chromium-driver), against a real reeld
and offline on its data directory. Every figure the page shows is checked against what the `reel`
command for the same question prints. Writes screenshots (light and dark) to --screenshots.

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
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL:", message, flush=True)
    return condition


def reel(bin_dir, *arguments, json_output=True):
    argv = [os.path.join(bin_dir, "reel"), *arguments] + (["--json"] if json_output else [])
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if result.returncode not in (0, 1):
        raise RuntimeError("%s: %s" % (" ".join(argv), result.stderr))
    return json.loads(result.stdout) if json_output else result.stdout


def start_ui(bin_dir, source):
    process = subprocess.Popen(
        [os.path.join(bin_dir, "reel"), "ui", "--no-browser", *source],
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

    # A dispatch from another client appears in the live log.
    new_seq = reel(bin_dir, "dispatch", "set", '{"path":"/gold","value":7}', *source)["seq"]
    wait(driver, "seq %d in the live log" % new_seq,
         lambda d: d.find_elements(By.CSS_SELECTOR, '#log .log-row[data-seq="%d"]' % new_seq), timeout=15)

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
    errors = console_errors(driver)
    check(not errors, "console errors (offline): %s" % errors)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--screenshots", default="")
    arguments = parser.parse_args()
    bin_dir = os.path.abspath(arguments.bin)
    work = tempfile.mkdtemp(prefix="reel-ui-browser-")
    data, socket = os.path.join(work, "data"), os.path.join(work, "reel.sock")
    daemon = subprocess.Popen([os.path.join(bin_dir, "reeld"), "--data-dir", data, "--socket", socket, "--log-level", "warning"])
    driver = None
    processes = []
    try:
        for _ in range(500):
            if os.path.exists(socket):
                break
            time.sleep(0.02)
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
        # Leave the page before its server stops (it would try to reconnect), and start the
        # offline page's console afresh.
        driver.get("about:blank")
        driver.get_log("browser")
        stop(ui, "the live reel ui")
        offline, offline_url = start_ui(bin_dir, ["--data-dir", data])
        processes.append(offline)
        offline_checks(driver, bin_dir, data, offline_url, arguments.screenshots)
    finally:
        if driver:
            driver.quit()
        for process in processes:
            if process.poll() is None:
                stop(process, "reel ui (%s)" % " ".join(process.args[2:]))
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
