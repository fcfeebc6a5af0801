"""`bureau log NAME --export FILE.html`, the replay page, for real: a real
bureaud on a private Xvfb behind its host agent (`bureau attach`), a session
of real requests through the agent's endpoint (input actions with their
screenshots, a failed click, approvals given and refused with the real CLI,
a takeover, text an agent chose to look like markup), then the page
written by the real CLI and opened in a real headless Chromium
(python3-selenium, chromium-driver). Checked outside the code under test:
the page's bytes (no outside URL, the audit trail's PNG files inline byte
for byte), and what Chromium shows (the image of each step, the controls,
the keyboard, no script but the page's own).

    PYTHONPATH=tests/lib:host-bridge/python python3 \\
        tests/integration/test_replay.py [BUILD_DIR]
"""

import base64
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import time

if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
    os.environ.setdefault("BUREAU_BUILD", os.path.abspath(sys.argv[1]))

import bt  # noqa: E402

BUREAU = os.path.join(bt.BUILD, "bureau")
X = bt.Xvfb("800x600")
D = bt.Daemon(X, ["--scale", "none", "--no-cursor"])
H = bt.Home("bureau-replay-")
OUT = tempfile.mkdtemp(prefix="bureau-replay-out-")
NAME = "rp1"
DIR = H.path(NAME)
bureau, must = H.run, H.must
MARKUP = "</script><script>alert('x')</script><img src=x onerror=alert(1)>"
PAGE = os.path.join(OUT, "replay.html")
A = None
MID = None  # a time between the first half of the session and the second


def trail():
    with open(os.path.join(DIR, "audit.log")) as f:
        return [json.loads(line) for line in f]


def pending():
    return json.loads(must("approvals", NAME, "--json"))


def decide(verb, command):
    out = {}

    def run():
        out["reply"] = A.call(timeout_ms=120000, tool="bash",
                              command=command)
    t = threading.Thread(target=run)
    t.start()
    ap = bt.wait_for(pending, 20, "the approval to be listed")
    must(verb, NAME, ap[0]["approval"])
    t.join(60)
    return out["reply"]


def test_session():
    global A, MID
    must("attach", NAME, "--url", D.url, "--token-file", D.token_file,
         "--approve", "bash", "--approve-timeout", "30")
    A = bt.AgentClient(H, NAME)
    X.spawn(["xterm", "-geometry", "60x10+40+40"])
    bt.wait_for(lambda: any(w["class"].lower().startswith("xterm") for w in
                            bt.ok(A.call(tool="window", action="list"))[
                                "windows"]), 15, "xterm's window")
    bt.ok(A.call(tool="computer", action="screenshot"))
    bt.ok(A.call(tool="computer", action="mouse_move", coordinate=[200, 90]))
    bt.ok(A.call(tool="computer", action="left_click", coordinate=[200, 90]))
    bt.ok(A.call(tool="computer", action="type", text="echo replay-one"))
    bt.expect_error(A.call(tool="computer", action="left_click",
                           coordinate=[5000, 5000]), "out_of_bounds")
    time.sleep(1.1)
    MID = time.time()
    time.sleep(1.1)
    bt.ok(decide("approve", "echo approved"))
    bt.expect_error(decide("deny", "echo denied"), "permission_denied")
    must("takeover", NAME, "on")
    bt.expect_error(A.call(tool="computer", action="mouse_move",
                           coordinate=[10, 10]), "taken_over")
    must("takeover", NAME, "off")
    # Text the agent chose, made to look like markup.
    bt.ok(A.call(tool="computer", action="type", text=MARKUP))
    bt.ok(A.call(tool="computer", action="key", text="ctrl+u"))
    lines = trail()
    assert [x.get("approval") for x in lines if x.get("approval")] == \
        ["approved", "denied"], lines
    assert [x["on"] for x in lines if x.get("event") == "takeover"] == \
        [True, False], lines
    # bureau log shows the same marks.
    log = must("log", NAME)
    assert "[approved]" in log and "[denied]" in log, log
    assert "takeover on (operator)" in log and "takeover off" in log, log


def test_export_is_self_contained():
    out = must("log", NAME, "--export", PAGE)
    lines = trail()
    shots = [x for x in lines if x.get("screenshot")]
    assert re.search(r"%d steps, \d+ screenshots" % len(lines), out), out
    assert stat.S_IMODE(os.stat(PAGE).st_mode) == 0o600
    with open(PAGE, encoding="utf-8") as f:
        html = f.read()
    # Nothing from outside: no URL scheme but data:, no src or href at
    # all in the markup (images get data: URLs from the script).
    assert not re.search(r"(?i)\b(?:https?|ftp|wss?|file):", html), \
        re.search(r"(?i)\b(?:https?|ftp|wss?|file):.{0,60}", html).group(0)
    assert not re.search(r"(?i)\s(?:src|href|srcset)\s*=", html.split(
        'id="replay-data"')[0])
    assert "url(" not in html and "@import" not in html
    assert "default-src 'none'" in html
    # The agent's text never ends the data element.
    assert html.count("</script>") == 2, html.count("</script>")
    data = json.loads(re.search(
        r'<script type="application/json" id="replay-data">(.*?)</script>',
        html, re.S).group(1))
    assert data["desktop"] == NAME
    assert [s["seq"] for s in data["steps"]] == [x["seq"] for x in lines]
    # One inline screenshot per input action that took one, byte for
    # byte the trail's PNG.
    with_shot = [s for s in data["steps"] if s["shot"] >= 0]
    assert len(with_shot) == len(shots) >= 4, (len(with_shot), len(shots))
    for s, x in zip(with_shot, shots):
        assert s["seq"] == x["seq"]
        with open(os.path.join(DIR, x["screenshot"]), "rb") as f:
            assert base64.b64decode(data["shots"][s["shot"]]) == f.read()


B = None


def browser():
    global B
    if B is None:
        B = bt.chromium(log=True)
    return B


def js(expr):
    return B.execute_script("return " + expr)


def test_chromium_renders_and_steps():
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    b = browser()
    b.get("file://" + PAGE)
    steps = json.loads(js("document.getElementById('replay-data')"
                          ".textContent"))["steps"]
    n = len(steps)
    assert js("document.getElementById('pos').textContent") == \
        "step 1 / %d" % n
    assert js("document.querySelectorAll('#steps li').length") == n
    # Each step shows its own settled screenshot, or the last one before
    # it; the keyboard steps.
    body = b.find_element(By.TAG_NAME, "body")
    last = None
    for i, s in enumerate(steps):
        if i > 0:
            body.send_keys(Keys.ARROW_RIGHT)
        bt.wait_for(lambda: js("document.getElementById('pos').textContent")
                    == "step %d / %d" % (i + 1, n), 5, "step %d" % (i + 1))
        if s["shot"] >= 0:
            last = s
        if last is None:
            assert js("document.getElementById('shot').hidden") is True
            continue
        src = js("document.getElementById('shot').src")
        with open(os.path.join(DIR, "audit", "%d.png" % last["seq"]),
                  "rb") as f:
            want = base64.b64encode(f.read()).decode()
        assert src == "data:image/png;base64," + want, (i, last["seq"])
        bt.wait_for(lambda: js("document.getElementById('shot').complete")
                    and js("document.getElementById('shot').naturalWidth")
                    == 800, 5, "the image to decode")
    # The marks: approvals, the takeover, the failed click.
    badges = js("[...document.querySelectorAll('#steps .badge')]"
                ".map(e => e.textContent)")
    for want in ("approved", "denied", "takeover", "handed back",
                 "out_of_bounds", "taken_over"):
        assert want in badges, (want, badges)
    assert js("document.querySelectorAll('#steps li.operator').length") >= 3
    # The agent's markup is text on the page, and ran nothing.
    rows = js("[...document.querySelectorAll('#steps .txt')]"
              ".map(e => e.textContent)")
    # (the trail's summary cuts long text)
    assert any(MARKUP[:40] in r for r in rows), rows
    assert js("document.querySelectorAll('#steps img, #steps script')"
              ".length") == 0
    # Home, then play: it advances on its own.
    body.send_keys(Keys.HOME)
    bt.wait_for(lambda: js("document.getElementById('pos').textContent") ==
                "step 1 / %d" % n, 5, "Home")
    b.find_element(By.ID, "speed").send_keys("4")
    b.find_element(By.ID, "play").click()
    bt.wait_for(lambda: js("document.getElementById('pos').textContent") !=
                "step 1 / %d" % n, 5, "play to advance")
    b.find_element(By.ID, "play").click()
    # A clicked row is shown.
    b.find_elements(By.CSS_SELECTOR, "#steps li")[2].click()
    assert js("document.getElementById('pos').textContent") == \
        "step 3 / %d" % n
    errors = [e for e in b.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
    b.save_screenshot(os.path.join(OUT, "page.png"))


def test_since_and_a_pruned_screenshot():
    part = os.path.join(OUT, "part.html")
    must("log", NAME, "--export", part, "--since", "@%.3f" % MID)
    with open(part, encoding="utf-8") as f:
        data = json.loads(re.search(
            r'id="replay-data">(.*?)</script>', f.read(), re.S).group(1))
    want = [x["seq"] for x in trail() if x["time"] >= MID]
    assert [s["seq"] for s in data["steps"]] == want, data["steps"]
    assert data["steps"][0].get("approval") == "approved"
    # The trail keeps only the newest screenshots: one gone is marked,
    # not an error.
    gone = [x for x in trail() if x.get("screenshot")][0]
    os.unlink(os.path.join(DIR, gone["screenshot"]))
    must("log", NAME, "--export", part)
    with open(part, encoding="utf-8") as f:
        data = json.loads(re.search(
            r'id="replay-data">(.*?)</script>', f.read(), re.S).group(1))
    step = [s for s in data["steps"] if s["seq"] == gone["seq"]][0]
    assert step["shot"] == -2, step
    browser().get("file://" + part)
    i = [s["seq"] for s in data["steps"]].index(gone["seq"])
    B.find_elements("css selector", "#steps li")[i].click()
    assert "no longer kept" in js("document.getElementById('cap')"
                                  ".textContent")
    # A duration ago and a local time are times too; nonsense is refused
    # with the option named.
    must("log", NAME, "--export", part, "--since", "1h")
    must("log", NAME, "--since", time.strftime("%Y-%m-%d %H:%M",
                                               time.localtime(MID - 60)))
    for bad in ("yesterday", "12", "2026-13-45", "@x"):
        p = bureau("log", NAME, "--export", part, "--since", bad)
        assert p.returncode == 2 and "--since" in p.stderr, (bad, p.stderr)
    p = bureau("log", NAME, "--export", part, "-f")
    assert p.returncode == 2, p.stderr
    p = bureau("log", NAME, "--export", os.path.join(OUT, "no", "dir.html"))
    assert p.returncode == 1 and "no/dir.html" in p.stderr, p.stderr


if __name__ == "__main__":
    try:
        bt.run([(n, f) for n, f in list(globals().items())
                if n.startswith("test_") and callable(f)])
    finally:
        if B is not None:
            B.quit()
        H.cleanup(NAME)
        if not os.environ.get("KEEP"):
            shutil.rmtree(OUT, ignore_errors=True)
