#!/usr/bin/env python3
"""The bureau Python module against a real bureaud, started by
test_client.sh with the environment test_client_c.c describes. Effects
are checked outside the module: X events in an xev window's log, the
pointer through xdotool, screenshots against ImageMagick's own capture of
the screen.

Prints PASS/FAIL/SKIP lines; exits 1 if anything failed.
"""

import faulthandler
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "host-bridge", "python"))
import bureau  # noqa: E402

# tests/run.sh asks for the stacks of a test about to time out.
faulthandler.register(signal.SIGUSR1, all_threads=True)



def _standalone():
    """Run alone (tests/run.sh runs every test_*.py; or by hand, with the
    build directory as the argument): start what test_client.sh would, a
    private Xvfb, bureaud, the xev witness, an nngcat peer that answers
    "not json" and a port where nothing listens, and export the same
    environment. It used to print a note and exit 0 here, so a run on its
    own passed while checking nothing."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
    if len(sys.argv) > 1:
        os.environ["BUREAU_BUILD"] = os.path.abspath(sys.argv[1])
    import bt
    lib = os.path.join(bt.BUILD, "libbureau.so")
    os.environ.setdefault("BUREAU_LIB", lib)
    # A sanitized libbureau.so loads only with its runtimes preloaded,
    # and LD_PRELOAD is read when the process starts.
    pre = []
    for name in os.listdir(bt.BUILD):
        if name.startswith(".variant-san-"):
            for san in name[len(".variant-san-"):].split("-"):
                rt = {"address": "libasan.so",
                      "undefined": "libubsan.so"}.get(san)
                if rt:
                    pre.append(subprocess.run(
                        ["cc", "-print-file-name=" + rt], text=True,
                        capture_output=True).stdout.strip())
    if pre and "BUREAU_TEST_PRELOADED" not in os.environ:
        env = dict(os.environ, LD_PRELOAD=" ".join(pre),
                   ASAN_OPTIONS="detect_leaks=0", BUREAU_TEST_PRELOADED="1")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    X = bt.Xvfb()
    D = bt.Daemon(X)
    out = tempfile.mkdtemp(prefix="bureau-client-py-")
    xev_log = os.path.join(out, "xev.log")
    with open(xev_log, "wb") as f:
        X.spawn(["stdbuf", "-oL", "xev", "-geometry", "640x480+0+0"],
                stdout=f, stderr=subprocess.STDOUT)
    bt.wait_for(lambda: X.run(["xdotool", "search", "--name",
                               "^Event Tester$"]).returncode == 0, 10,
                "the xev window")
    mal = bt.free_port(pair=False)
    bt.spawn(["nngcat", "--rep", "--listen", "tcp://127.0.0.1:%d" % mal,
              "--data", "not json"], stdout=subprocess.DEVNULL,
             stderr=subprocess.DEVNULL)
    w, h = X.run(["xdpyinfo"]).stdout.split("dimensions:")[1].split()[0] \
        .split("x")
    os.environ.update(
        DISPLAY=X.name, BUREAU_URL=D.url, BUREAU_TOKEN=D.token,
        BUREAUD_PID=str(D.proc.pid), XEV_LOG=xev_log, OUT_DIR=out,
        SCREEN_W=w, SCREEN_H=h,
        DEAD_URL="tcp://127.0.0.1:%d" % bt.free_port(pair=False),
        MALFORMED_URL="tcp://127.0.0.1:%d" % mal)
    # the peer answers once it listens
    bt.wait_for(lambda: subprocess.run(
        ["nngcat", "--req", "--dial", os.environ["MALFORMED_URL"],
         "--data", "x", "--recv-timeout", "1"], capture_output=True)
        .returncode == 0, 10, "nngcat")
    return D


if "XEV_LOG" not in os.environ:
    _DAEMON = _standalone()  # its processes end with this one (bt)

URL = os.environ["BUREAU_URL"]
TOKEN = os.environ["BUREAU_TOKEN"]
XEV_LOG = os.environ["XEV_LOG"]
OUT = os.environ["OUT_DIR"]
SW, SH = int(os.environ["SCREEN_W"]), int(os.environ["SCREEN_H"])
failures = 0
passes = 0


def check(name, ok, why=""):
    global failures, passes
    if ok:
        passes += 1
        print("PASS py_%s" % name, flush=True)
    else:
        failures += 1
        print("FAIL py_%s: %s" % (name, why), flush=True)


def skip(name, why):
    print("SKIP py_%s: %s" % (name, why), flush=True)


def expect_error(name, cls, fn, code=None, contains=None):
    """fn() must raise cls (with .code == code, message holding
    contains)."""
    try:
        fn()
    except cls as e:
        ok = isinstance(e, bureau.Error) and e.message and (
            code is None or e.code == code) and (
            contains is None or contains in e.message)
        check(name, ok, "code %r message %r" % (e.code, e.message))
        return e
    except Exception as e:  # the wrong error is a failure, not a crash
        check(name, False, "raised %r" % (e,))
        return None
    check(name, False, "no error raised")
    return None


# --- the xev log ------------------------------------------------------------

def mark():
    return os.path.getsize(XEV_LOG)


def events(since, kind, *needles, want=1):
    """xev events after offset `since` starting with kind and holding all
    needles; waits up to 3 s for `want` of them."""
    deadline = time.time() + 3
    while True:
        with open(XEV_LOG, "rb") as f:
            f.seek(since)
            text = f.read().decode("utf-8", "replace")
        found = [e for e in re.split(r"\n\n+", text)
                 if e.lstrip("\n").startswith(kind)
                 and all(n in e for n in needles)]
        if len(found) >= want or time.time() > deadline:
            return len(found)
        time.sleep(0.05)


def pointer():
    out = subprocess.run(["xdotool", "getmouselocation"], check=True,
                         capture_output=True, text=True).stdout
    m = re.match(r"x:(\d+) y:(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


# --- PNG --------------------------------------------------------------------

def png_decode_check(data):
    """(width, height) after inflating every IDAT and checking the scanline
    filter bytes: a real decode of the structure, not just the header."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        crc = int.from_bytes(data[pos + 8 + n:pos + 12 + n], "big")
        assert zlib.crc32(kind + body) == crc, "bad CRC in %r" % kind
        if kind == b"IHDR":
            w, h = int.from_bytes(body[:4], "big"), int.from_bytes(
                body[4:8], "big")
            depth, ctype = body[8], body[9]
            bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype] * depth // 8
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = 1 + w * bpp
    assert len(raw) == stride * h, "pixel data is %d bytes, not %d" % (
        len(raw), stride * h)
    assert all(raw[i * stride] <= 4 for i in range(h)), "bad filter byte"
    return w, h


def rgb_of(png_path):
    return subprocess.run(["convert", png_path, "-depth", "8", "rgb:-"],
                          check=True, capture_output=True).stdout


def screen_rgb():
    """The screen as ImageMagick sees it, straight from the X server."""
    return subprocess.run(["import", "-window", "root", "-depth", "8",
                           "rgb:-"], check=True, capture_output=True).stdout


# --- tests ------------------------------------------------------------------

def test_basics(d):
    check("ping", d.ping().output == "pong")
    info = d.info()
    check("info", info["protocol"] == bureau.PROTOCOL
          and info["screen"] == {"width": SW, "height": SH},
          "info %r" % info)
    return info


def test_screenshot(d, info):
    img = d.screenshot()
    try:
        w, h = png_decode_check(img)
        ok = (isinstance(img, bytes) and img.mime_type == "image/png"
              and (w, h) == (img.width, img.height)
              == (info["scaled"]["width"], info["scaled"]["height"])
              and img.frame >= 1)
        check("screenshot_decodes", ok, "%r, PNG %dx%d" % (img, w, h))
    except (AssertionError, KeyError, zlib.error) as e:
        check("screenshot_decodes", False, str(e))
    path = os.path.join(OUT, "py-shot.png")
    img.save(path)
    if (img.width, img.height) == (SW, SH):
        # Unscaled: compare every pixel with the X server's own picture,
        # allowing the pointer's area (bureaud draws the cursor in).
        ours, theirs = rgb_of(path), screen_rgb()
        diff = sum(1 for i in range(0, len(ours), 3)
                   if ours[i:i + 3] != theirs[i:i + 3])
        check("screenshot_pixels", len(ours) == len(theirs)
              and diff < 32 * 32, "%d pixels differ" % diff)
    else:
        skip("screenshot_pixels", "the daemon scales screenshots")
    z = d.zoom((0, 0, 320, 200))
    zw, zh = png_decode_check(z)
    check("zoom", (zw, zh) == (z.width, z.height) and zw * 200 == zh * 320,
          repr(z))


def test_input(d):
    r = d.mouse_move(300, 220)
    check("mouse_move", pointer() == (300, 220) and r.image is not None
          and len(r.image) > 100, "pointer %r" % (pointer(),))
    check("cursor_position", d.cursor_position() == (300, 220))
    r = d.mouse_move((310, 230), screenshot=False)
    check("mouse_move_pair_no_shot", pointer() == (310, 230)
          and r.image is None)

    cases = [
        ("left_click", lambda: d.left_click(210, 160), "button 1,", 1,
         "root:(210,160)"),
        ("right_click", lambda: d.right_click(220, 170), "button 3,", 1,
         "root:(220,170)"),
        ("middle_click", lambda: d.middle_click(230, 175), "button 2,", 1,
         "root:(230,175)"),
        ("double_click", lambda: d.double_click(260, 200), "button 1,", 2,
         "root:(260,200)"),
        ("triple_click", lambda: d.triple_click(270, 210), "button 1,", 3,
         "root:(270,210)"),
        ("scroll", lambda: d.scroll(300, 250, "down", 4), "button 5,", 4,
         "root:(300,250)"),
    ]
    for name, fn, button, want, where in cases:
        m = mark()
        fn()
        n = events(m, "ButtonPress", where, button, want=want)
        check(name, n == want, "%d of %d presses" % (n, want))

    m = mark()
    d.left_click(240, 180, modifiers=["ctrl"], screenshot=False)
    check("click_modifiers", events(m, "ButtonPress", "root:(240,180)",
                                    "state 0x4,", "button 1,") == 1)

    m = mark()
    d.left_click_drag((100, 100), (300, 200))
    n = events(m, "ButtonPress", "root:(100,100)", "button 1,") + events(
        m, "ButtonRelease", "root:(300,200)", "button 1,")
    check("left_click_drag", n == 2, "%d of 2 events" % n)

    d.mouse_move(150, 120, screenshot=False)
    m = mark()
    d.left_mouse_down(screenshot=False)
    d.left_mouse_up()
    n = events(m, "ButtonPress", "root:(150,120)") + events(
        m, "ButtonRelease", "root:(150,120)")
    check("left_mouse_down_up", n == 2, "%d of 2 events" % n)

    m = mark()
    d.type("ok", screenshot=False)
    n = events(m, "KeyPress", "(keysym 0x6f, o)") + events(
        m, "KeyPress", "(keysym 0x6b, k)")
    check("type", n == 2, "%d of 2 keys" % n)

    m = mark()
    d.key("shift+Tab", screenshot=False)
    check("key", events(m, "KeyPress", "state 0x1,", "Tab") == 1)

    m = mark()
    t = time.time()
    d.hold_key("ctrl", 0.5, screenshot=False)
    dt = time.time() - t
    n = events(m, "KeyPress", "Control_L") + events(m, "KeyRelease",
                                                    "Control_L")
    check("hold_key", n == 2 and dt >= 0.45, "%d events, %.2f s" % (n, dt))

    t = time.time()
    r = d.wait(0.3)
    check("wait", time.time() - t >= 0.28 and r.image is not None)


def test_raw_and_errors(d):
    reply = d.call({"tool": "system", "action": "ping", "id": "py-1"})
    check("call_raw", reply.get("id") == "py-1" and reply["ok"] is True,
          repr(reply))
    reply = d.call({"tool": "nope"}, check=False)
    check("call_raw_no_check", reply["ok"] is False
          and reply["error"]["code"] == "unknown_tool", repr(reply))

    e = expect_error("error_unknown_tool", bureau.UnknownTool,
                     lambda: d.call({"tool": "no_such_tool"}),
                     code="unknown_tool")
    if e is not None:
        check("error_message_verbatim",
              e.message == e.reply["error"]["message"])
    expect_error("error_unknown_action", bureau.UnknownAction,
                 lambda: d.call({"tool": "computer", "action": "fly"}),
                 code="unknown_action")
    expect_error("error_bad_request", bureau.BadRequest,
                 lambda: d.call({"tool": 5}), code="bad_request")
    expect_error("error_out_of_bounds", bureau.OutOfBounds,
                 lambda: d.left_click(99999, 3, screenshot=False),
                 code="out_of_bounds", contains="99999")
    expect_error("error_invalid_argument", bureau.InvalidArgument,
                 lambda: d.scroll(10, 10, "sideways", 1),
                 code="invalid_argument", contains="sideways")
    expect_error("error_stale_frame", bureau.InvalidArgument,
                 lambda: d.mouse_move(5, 5, frame=987654321),
                 code="invalid_argument")
    expect_error("error_too_large_local", bureau.TooLarge,
                 lambda: d.file_write("/tmp/never-written",
                                      bytes(60 << 20)), code="too_large")
    # The classes also fit Python's own hierarchy.
    expect_error("error_is_valueerror", ValueError,
                 lambda: d.left_click(-5, 3))
    with bureau.Desktop(URL, token="wrong", timeout=5) as bad:
        expect_error("error_unauthorized", bureau.Unauthorized, bad.ping,
                     code="unauthorized")


def test_transport(d):
    t = time.time()
    with bureau.Desktop(os.environ["DEAD_URL"], token="x",
                        timeout=1.0) as dead:
        expect_error("transport_connect_failed", bureau.ConnectionFailed,
                     dead.ping, code="connect_failed")
    dt = time.time() - t
    check("transport_connect_failed_timing", 0.9 < dt < 2.5,
          "%.2f s" % dt)

    pid = int(os.environ["BUREAUD_PID"])
    old = d.timeout
    slow = bureau.Desktop(URL, token=TOKEN, timeout=1.0)
    slow.ping()
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.time() + 3  # SIGSTOP is not synchronous
        while time.time() < deadline and not all(
                open("/proc/%d/task/%s/stat" % (pid, t)).read()
                .rsplit(")", 1)[1].split()[0] == "T"
                for t in os.listdir("/proc/%d/task" % pid)):
            time.sleep(0.01)
        t = time.time()
        expect_error("transport_no_reply", bureau.NoReply, slow.ping,
                     code="no_reply")
        dt = time.time() - t
        check("transport_no_reply_is_timeouterror",
              issubclass(bureau.NoReply, TimeoutError)
              and issubclass(bureau.NoReply, bureau.TransportError)
              and 0.9 < dt < 2.5, "%.2f s" % dt)
    finally:
        os.kill(pid, signal.SIGCONT)
    slow.close()
    check("transport_recovers", d.ping().output == "pong")
    d.timeout = old

    with bureau.Desktop(os.environ["MALFORMED_URL"], timeout=3) as mal:
        expect_error("transport_malformed", bureau.MalformedReply, mal.ping,
                     code="malformed_reply")

    closed = bureau.Desktop(URL, token=TOKEN)
    with closed:
        closed.ping()
    expect_error("closed_desktop", bureau.ConnectionFailed, closed.ping)


def test_threads(d):
    box = {}

    def waiter():
        box["r"] = d.wait(1.5, screenshot=False)
        box["t"] = time.time()

    t0 = time.time()
    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(0.2)
    d.screenshot()
    dt = time.time() - t0
    th.join()
    check("threads", dt < 1.0 and box["t"] - t0 >= 1.45,
          "screenshot after %.2f s, wait after %.2f s" % (dt,
                                                           box["t"] - t0))


def test_later_tools(d, info):
    """bash, editor, file, process, window, clipboard: as the daemon
    offers them."""
    caps = info.get("capabilities", {})
    if "bash" in caps:
        r = d.bash("echo py-bash; echo err >&2; exit 4")
        check("bash", "py-bash" in r.output and "err" in r.output
              and r.exit_code == 4, repr(r))
        d.bash("cd /tmp; export PYT=7", session="py")
        r = d.bash("echo $PWD/$PYT", session="py")
        check("bash_session", "/tmp/7" in r.output, repr(r))
        d.restart(session="py")
        r = d.bash("echo \"[$PYT]\"", session="py")
        check("bash_restart", "[]" in r.output, repr(r))
        expect_error("bash_timeout", bureau.Timeout,
                     lambda: d.bash("sleep 30", timeout=1), code="timeout")
    else:
        skip("bash", "the daemon has no bash tool yet")

    base = os.path.join(OUT, "py-files")
    if "file" in caps:
        blob = bytes(range(256)) * 5
        d.file_write(base + "/a/blob.bin", blob, parents=True)
        with open(base + "/a/blob.bin", "rb") as f:
            check("file_write", f.read() == blob)
        check("file_read", d.file_read(base + "/a/blob.bin") == blob)
        check("file_read_range",
              d.file_read(base + "/a/blob.bin", offset=10, length=5)
              == blob[10:15])
        d.file_write(base + "/a/t.txt", "héllo ✓")
        with open(base + "/a/t.txt", encoding="utf-8") as f:
            check("file_write_text", f.read() == "héllo ✓")
        names = sorted(e.get("name") for e in d.file_list(base + "/a"))
        check("file_list", names == ["blob.bin", "t.txt"], repr(names))
        st = d.file_stat(base + "/a/blob.bin")
        check("file_stat", st.get("size") == len(blob), repr(st))
        d.file_mkdir(base + "/b/c", parents=True)
        check("file_mkdir", os.path.isdir(base + "/b/c"))
        d.file_remove(base + "/a/t.txt")
        check("file_remove", not os.path.exists(base + "/a/t.txt"))
        expect_error("error_not_found", bureau.NotFound,
                     lambda: d.file_read(base + "/nope"), code="not_found")
    else:
        skip("file", "the daemon has no file tool yet")

    if "str_replace_based_edit_tool" in caps:
        p = os.path.join(OUT, "py-edit.txt")
        d.create(p, "one\ntwo\n")
        d.str_replace(p, "two", "deux")
        with open(p) as f:
            check("edit", f.read() == "one\ndeux\n")
        check("edit_view", "deux" in d.view(p).output)
        d.undo_edit(p)
        with open(p) as f:
            check("edit_undo", f.read() == "one\ntwo\n")
    else:
        skip("edit", "the daemon has no editor tool yet")

    if "process" in caps:
        pid = d.process_start("echo out; echo err >&2; exit 5")
        r = d.process_wait(pid, timeout=10)
        o = d.process_output(pid)
        check("process", r.get("exit_code") == 5 and "out" in o["stdout"]
              and "err" in o["stderr"], "%r %r" % (r, o))
        pid = d.process_start(argv=["sleep", "30"])
        check("process_list", any(p.get("pid") == pid
                                  for p in d.process_list()))
        d.process_signal(pid, "TERM")
        r = d.process_wait(pid, timeout=10)
        check("process_signal", r.get("signal") in ("TERM", "SIGTERM", 15),
              repr(r))
    else:
        skip("process", "the daemon has no process tool yet")

    if "clipboard" in caps:
        d.clipboard_set("clip ✓ ñ")
        got = subprocess.run(["xclip", "-o", "-selection", "clipboard"],
                             capture_output=True, timeout=5).stdout
        check("clipboard_set", got.decode() == "clip ✓ ñ", repr(got))
        check("clipboard_get", d.clipboard_get() == "clip ✓ ñ")
    else:
        skip("clipboard", "the daemon has no clipboard tool yet")

    if "window" in caps:
        wins = d.window_list()
        xev = [w for w in wins if w.get("title") == "Event Tester"]
        check("window_list", len(xev) == 1, repr(wins))
        if xev:
            d.window_move(xev[0]["window"], 20, 30)
            d.window_resize(xev[0]["window"], 500, 400)
            geo = subprocess.run(
                ["xdotool", "getwindowgeometry", str(xev[0]["window"])],
                capture_output=True, text=True).stdout
            check("window_resize", "500x400" in geo, geo)
    else:
        skip("window", "the daemon has no window tool yet")


def main():
    with bureau.Desktop(URL, token=TOKEN, timeout=10) as d:
        info = test_basics(d)
        test_screenshot(d, info)
        test_input(d)
        test_raw_and_errors(d)
        test_threads(d)
        test_later_tools(d, info)
        test_transport(d)
    if passes == 0:
        print("FAIL py_checks: no check ran", flush=True)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
