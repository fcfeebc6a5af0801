"""The accessibility tool (AT-SPI) for real: a private Xvfb with its own
D-Bus session (dbus-daemon, at-spi2-core's bus launcher activated through
it, as in a desktop's session), a real GTK 3 window (tests/tools/ax_app.py)
and a real Chromium page, the real bureaud in that session. Effects are
checked outside the code under test: what the GTK program prints when its
button is pressed or its text changes, the page's title as the X server
holds it (xprop), and a click at the centre of a node's bounds, through
a scaled screenshot space, landing on the button.

    PYTHONPATH=tests/lib:host-bridge/python python3 \\
        tests/integration/test_accessibility.py [BUILD_DIR]
"""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
    os.environ.setdefault("BUREAU_BUILD", os.path.abspath(sys.argv[1]))

import bt  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
APP = os.path.join(ROOT, "tests", "tools", "ax_app.py")

# The screen is 1600x1000; screenshots are 800x500: bounds are halved.
X = bt.Xvfb("1600x1000")
BUS = bt.spawn(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
               env=X.env, stdout=subprocess.PIPE, text=True)
ADDR = BUS.stdout.readline().strip()
ENV = dict(X.env, DBUS_SESSION_BUS_ADDRESS=ADDR, NO_AT_BRIDGE="0",
           ACCESSIBILITY_ENABLED="1",
           GTK_A11Y="atspi")
D = bt.Daemon(X, ["--scale", "800x500", "--no-cursor"], env=ENV)
ok = bt.ok


class App:
    """ax_app.py: its stdout lines in a queue."""

    def __init__(self, title, x, y):
        self.p = bt.spawn(["/usr/bin/python3", APP, title, str(x), str(y)],
                          env=ENV, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self.next(30) == "ready"

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line.rstrip("\n"))

    def next(self, timeout=10):
        return self.q.get(timeout=timeout)

    def expect(self, want, timeout=10):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                line = self.next(timeout)
            except queue.Empty:
                break
            if line == want:
                return
        raise AssertionError("the app never printed %r" % want)


A = None


def ax(**req):
    return D.call(tool="accessibility", **req)


def find(**kw):
    return ok(ax(action="find", **kw))["nodes"]


def walk(nodes):
    for n in nodes:
        yield n
        yield from walk(n.get("children", []))


def test_tree_has_the_window():
    global A
    A = App("ax-test", 400, 300)
    r = bt.wait_for(lambda: [n for n in walk(ok(ax(action="tree"))["nodes"])
                             if n["name"] == "Press me"], 20,
                    "the button in the tree")
    t = ok(ax(action="tree"))
    assert t["truncated"] is False and t["count"] >= 5, t
    apps = [n for n in t["nodes"] if n["role"] == "application"]
    assert apps, t["nodes"]
    frames = [n for n in walk(t["nodes"]) if n["role"] == "frame" and
              n["name"] == "ax-test"]
    assert len(frames) == 1, frames
    btn = r[0]
    assert btn["role"] == "push button" and btn["actions"] == ["click"], btn
    assert "showing" in btn["states"] and "enabled" in btn["states"], btn
    assert isinstance(btn["id"], int) and btn["children"] == []
    # In screenshot space (halved): inside the frame, inside 800x500.
    x, y, w, h = btn["bounds"]
    fx, fy, fw, fh = frames[0]["bounds"]
    assert fx <= x and fy <= y and x + w <= fx + fw and y + h <= fy + fh, \
        (btn["bounds"], frames[0]["bounds"])
    assert 0 < x < 800 and 0 < y < 500 and w > 10 and h > 5, btn["bounds"]


def test_find_and_ids():
    b = find(role="push button", name="Press me")
    assert len(b) == 1 and "children" not in b[0], b
    assert find(name_contains="PRESS")[0]["id"] == b[0]["id"]
    entry = find(role="text", state="editable")
    assert len(entry) == 1 and "single-line" in entry[0]["states"], entry
    assert find(role="no such role") == []
    # The same element keeps its id.
    assert find(role="push button", name="Press me")[0]["id"] == b[0]["id"]
    check = find(role="check box")
    assert len(check) == 1 and check[0]["name"] == "Remember", check


def test_do_presses_the_button():
    b = find(role="push button", name="Press me")[0]
    r = ok(ax(action="do", id=b["id"]))
    assert r["done"] == "click" and r["element"] == b["id"], r
    A.expect("pressed")
    c = find(role="check box")[0]
    ok(ax(action="do", id=c["id"], name=c["actions"][0]))
    A.expect("checked=1")
    assert "checked" in find(role="check box")[0]["states"]


def test_click_at_the_centre_of_the_bounds():
    x, y, w, h = find(role="push button", name="Press me")[0]["bounds"]
    ok(D.call(tool="computer", action="left_click",
              coordinate=[x + w // 2, y + h // 2]))
    A.expect("pressed")


def test_set_text():
    e = find(role="text", state="editable")[0]
    ok(ax(action="set_text", id=e["id"], text="hello \u00e9t\u00e9 \u2713"))
    A.expect("entry=hello \u00e9t\u00e9 \u2713")
    assert find(role="text", state="editable")[0]["text"] == \
        "hello \u00e9t\u00e9 \u2713"


def test_window_and_limits():
    wins = ok(D.call(tool="window", action="list"))["windows"]
    w = [x for x in wins if x["title"] == "ax-test"][0]
    t = ok(ax(action="tree", window=w["window"]))
    assert [n["role"] for n in t["nodes"]] == ["frame"], t["nodes"]
    assert t["nodes"][0]["name"] == "ax-test"
    one = ok(ax(action="tree", max_nodes=1))
    assert one["count"] == 1 and one["truncated"] is True, one
    shallow = ok(ax(action="tree", depth=0))
    assert all(n["children"] == [] for n in shallow["nodes"])
    assert shallow["truncated"] is True


def test_python_module_and_c_library():
    import ctypes

    import bureau
    d = bureau.Desktop(D.url, token=D.token)
    b = d.accessibility_find(role="push button", name="Press me")
    assert len(b) == 1, b
    assert d.accessibility_do(b[0]["id"]) == "click"
    A.expect("pressed")
    e = d.accessibility_find(role="text", state="editable")[0]
    d.accessibility_set_text(e["id"], "from python")
    A.expect("entry=from python")
    assert any(n["role"] == "application" for n in d.accessibility_tree())
    d.close()
    # libbureau's functions, called as a C program would. A sanitized
    # build's library needs its runtime first in the process: Python
    # loads the plain build's, as the Python module above does.
    path = os.path.join(bt.BUILD, "libbureau.so")
    with open(path, "rb") as f:
        if b"libasan" in f.read():
            path = os.path.join(ROOT, "build", "libbureau.so")
    lib = ctypes.CDLL(path)
    lib.bureau_connect.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.c_double,
                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.bureau_a11y_find.argtypes = [ctypes.c_void_p] + [ctypes.c_char_p] * 4 \
        + [ctypes.POINTER(ctypes.c_void_p)]
    lib.bureau_a11y_do.argtypes = [ctypes.c_void_p, ctypes.c_long,
                                   ctypes.c_char_p,
                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.bureau_a11y_set_text.argtypes = [ctypes.c_void_p, ctypes.c_long,
                                         ctypes.c_char_p]
    lib.bureau_a11y_tree.argtypes = [ctypes.c_void_p, ctypes.c_ulong,
                                     ctypes.c_int, ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_void_p)]
    lib.bureau_free.argtypes = [ctypes.c_void_p]
    lib.bureau_close.argtypes = [ctypes.c_void_p]
    c = ctypes.c_void_p()
    assert lib.bureau_connect(D.url.encode(), D.token.encode(), 30.0,
                              ctypes.byref(c)) == 0

    def take(p):
        s = ctypes.string_at(p).decode()
        lib.bureau_free(p)
        return s
    out = ctypes.c_void_p()
    assert lib.bureau_a11y_find(c, b"push button", b"Press me", None, None,
                                ctypes.byref(out)) == 0
    nodes = json.loads(take(out))
    assert len(nodes) == 1 and nodes[0]["name"] == "Press me", nodes
    done = ctypes.c_void_p()
    assert lib.bureau_a11y_do(c, nodes[0]["id"], b"click",
                              ctypes.byref(done)) == 0
    assert take(done) == "click"
    A.expect("pressed")
    assert lib.bureau_a11y_set_text(c, e["id"], "from C \u2713".encode()) == 0
    A.expect("entry=from C \u2713")
    assert lib.bureau_a11y_tree(c, 0, 1, 0, ctypes.byref(out)) == 0
    assert all(n["children"] == [] or n["role"] == "application"
               for n in json.loads(take(out)))
    # An error is the protocol's code: not_found is -8.
    assert lib.bureau_a11y_do(c, 999999, None, None) == -8
    lib.bureau_close(c)


def test_bad_requests():
    bt.expect_error(ax(action="do", id=999999), "not_found", "id")
    bt.expect_error(ax(action="do"), "invalid_argument", "id")
    b = find(role="push button", name="Press me")[0]
    bt.expect_error(ax(action="do", id=b["id"], name="fly"),
                    "invalid_argument", "click")
    bt.expect_error(ax(action="set_text", id=b["id"], text="x"),
                    "invalid_argument", "editable")
    bt.expect_error(ax(action="find", state="sleepy"), "invalid_argument",
                    "state")
    bt.expect_error(ax(action="find", name="a", name_contains="b"),
                    "invalid_argument", "name_contains")
    bt.expect_error(ax(action="tree", max_nodes=0), "out_of_bounds",
                    "max_nodes")
    bt.expect_error(ax(action="tree", window=12345), "not_found", "window")
    bt.expect_error(ax(action="fly"), "unknown_action")
    assert D.alive()


def test_element_gone():
    app = App("ax-gone", 100, 100)
    b = bt.wait_for(lambda: [n for n in find(role="push button")
                             if n["id"] != find(
                                 role="push button", name="Press me")[0][
                                 "id"]] or None, 20, "the second button")
    # The second window's button (both are named Press me).
    mine = b[0]
    app.p.terminate()
    app.p.wait(10)
    bt.wait_for(lambda: ax(action="do", id=mine["id"]).get("ok") is False,
                10, "the element to be gone")
    bt.expect_error(ax(action="do", id=mine["id"]), "not_found", "gone")


def test_chromium_page():
    html = ("<title>before</title><button onclick=\"document.title="
            "'clicked'\">Go there</button><input aria-label=\"Search\">")
    prof = tempfile.mkdtemp(prefix="bureau-ax-chromium-")
    with open(os.path.join(prof, "page.html"), "w") as f:
        f.write(html)
    ch = bt.spawn(["chromium", "--no-sandbox", "--disable-gpu",
                   "--no-first-run", "--force-renderer-accessibility",
                   "--user-data-dir=" + prof, "--window-position=0,0",
                   "--window-size=1200,800",
                   "file://" + os.path.join(prof, "page.html")],
                  env=ENV, stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL)
    try:
        btn = bt.wait_for(lambda: find(role="push button",
                                       name="Go there") or None, 60,
                          "Chromium's button in the tree")[0]
        t0 = time.monotonic()
        tree = ok(ax(action="tree"))
        took = time.monotonic() - t0
        print("    # the desktop's tree with a Chromium page: %d nodes in "
              "%.3f s" % (tree["count"], took))
        ok(ax(action="do", id=btn["id"]))

        def titled():
            out = X.run(["xdotool", "search", "--name", "clicked"]).stdout
            return out.strip() or None
        bt.wait_for(titled, 20, "the page's title to change")
        box = find(role="entry", name="Search")
        assert len(box) == 1, find(name="Search")
    finally:
        ch.terminate()
        ch.wait(20)


def test_no_accessibility_bus():
    env = dict(X.env)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    env.pop("XDG_RUNTIME_DIR", None)
    d2 = bt.Daemon(X, ["--scale", "none"], env=env)
    try:
        bt.expect_error(d2.call(tool="accessibility", action="tree"),
                        "not_found", "accessibility bus")
        assert d2.alive()
    finally:
        d2.stop()


if __name__ == "__main__":
    try:
        bt.run([(n, f) for n, f in list(globals().items())
                if n.startswith("test_") and callable(f)])
    finally:
        if A is not None:
            A.p.terminate()
        BUS.terminate()
