"""The window tool on a real Xvfb with a real window manager (openbox),
driven through the socket; every effect checked by something other than
bureaud: xdotool and xwininfo for windows, focus and geometry, /proc for
processes."""

import os
import random
import re
import subprocess
import time

import bt

X = bt.Xvfb("1280x800", wm=True)
D = bt.Daemon(X, ["--scale", "none", "--no-cursor"])
XEVLOG = os.path.join(bt.BUILD, "tests", "xevlog")


ok = bt.ok


def win(action, display=None, **fields):
    return (display or D).call(tool="window", action=action, **fields)


def uniq(prefix):
    return "%s-%08x" % (prefix, random.getrandbits(32))


def xdo(*args, x=None):
    return (x or X).run(["xdotool"] + [str(a) for a in args])


def xwininfo(wid, x=None):
    """Client-area geometry in root coordinates, read by xwininfo."""
    out = (x or X).run(["xwininfo", "-id", str(wid)]).stdout
    g = {}
    for key, name in (("Absolute upper-left X", "x"),
                      ("Absolute upper-left Y", "y"),
                      ("Width", "width"), ("Height", "height"),
                      ("Map State", "map")):
        m = re.search(r"^\s*%s:\s+(\S+)" % re.escape(key), out, re.M)
        assert m, "xwininfo says nothing of %s: %r" % (key, out)
        g[name] = m.group(1) if name == "map" else int(m.group(1))
    return g


def search_name(title, x=None):
    r = xdo("search", "--name", "^%s$" % re.escape(title), x=x)
    return [int(l) for l in r.stdout.split()]


def proc_state(pid):
    """'gone', 'Z' (a zombie) or the process state letter."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def proc_exited(pid):
    return proc_state(pid) in ("gone", "Z", "X")


def listed(wid, display=None):
    r = ok(win("list", display=display))
    found = [w for w in r["windows"] if w["window"] == wid]
    return found[0] if found else None


def launch_xterm(title, **extra):
    r = ok(win("launch", command="exec xterm -T %s -geometry 80x24+40+40" %
               title, wait=True, timeout=30, **extra))
    return r


def kill(pid):
    """Kill a launched program and its process group (a shell's child
    included)."""
    try:
        os.killpg(os.getpgid(pid), 9)
    except OSError:
        pass
    try:
        os.kill(pid, 9)
    except OSError:
        pass


def test_launch_list_activate_close():
    t1, t2 = uniq("bt-one"), uniq("bt-two")
    r1 = launch_xterm(t1)
    pid1, wid1 = r1["pid"], r1["window"]
    try:
        # the X server's own record (xdotool) agrees with the reply
        assert search_name(t1) == [wid1], (search_name(t1), wid1)
        with open("/proc/%d/comm" % pid1) as f:
            assert f.read().strip() == "xterm"
        assert r1["info"]["title"] == t1
        # detached: not the daemon's child, in a session of its own
        with open("/proc/%d/stat" % pid1) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/%d/stat" % D.proc.pid) as f:
            dfields = f.read().rsplit(")", 1)[1].split()
        assert int(fields[1]) != D.proc.pid, "launched as a child"
        assert int(fields[3]) != int(dfields[3]), "in the daemon's session"
        assert int(fields[2]) != int(dfields[2]), "in the daemon's group"

        e = listed(wid1)
        assert e is not None, "window not listed"
        assert e["title"] == t1 and e["class"] == "XTerm", e
        assert e["instance"] == "xterm", e
        assert e["pid"] == pid1, e
        g = xwininfo(wid1)
        assert e["screen"] == {k: g[k] for k in ("x", "y", "width",
                                                    "height")}, (e, g)
        # --scale none: screenshot space is the screen
        assert (e["x"], e["y"], e["width"], e["height"]) == (
            g["x"], g["y"], g["width"], g["height"])
        # openbox decorates: the frame holds the client
        f = e["frame"]
        assert f["x"] <= e["x"] and f["y"] < e["y"], e
        assert f["x"] + f["width"] >= e["x"] + e["width"], e
        assert f["y"] + f["height"] >= e["y"] + e["height"], e

        r2 = launch_xterm(t2)
        pid2, wid2 = r2["pid"], r2["window"]
        try:
            assert wid2 != wid1 and pid2 != pid1
            bt.wait_for(lambda: xdo("getactivewindow").stdout.strip() ==
                        str(wid2), 5, "the new xterm to be active")
            a = ok(win("activate", window=wid1))
            assert a["active"] is True and a["window"] == wid1, a
            assert xdo("getactivewindow").stdout.strip() == str(wid1)
            lst = ok(win("list"))["windows"]
            act = [w["window"] for w in lst if w["active"]]
            assert act == [wid1], act
            ok(win("activate", window=wid2))
            assert xdo("getactivewindow").stdout.strip() == str(wid2)
        finally:
            c = ok(win("close", window=wid2))
            assert c["closed"] is True, c
        bt.wait_for(lambda: proc_exited(pid2), 10, "xterm 2 to exit")

        c = ok(win("close", window=wid1))
        assert c["closed"] is True, c
        assert search_name(t1) == []
        assert listed(wid1) is None
        bt.wait_for(lambda: proc_exited(pid1), 10, "xterm 1 to exit")
        bt.expect_error(win("activate", window=wid1), "not_found", "window")
    finally:
        kill(pid1)


def test_launch_argv_nowait():
    title = uniq("bt-argv")
    r = ok(win("launch", argv=[XEVLOG, "-title", title, "-geometry",
                                "200x150+500+300"]))
    pid = r["pid"]
    assert "window" not in r
    try:
        ids = bt.wait_for(lambda: search_name(title), 10, "xevlog window")
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            assert f.read().split(b"\0")[0] == XEVLOG.encode()
        # xevlog sets no _NET_WM_PID: listed with pid null
        e = bt.wait_for(lambda: listed(ids[0]), 5, "listed")
        assert e["pid"] is None and e["title"] == title, e
        # stdin, stdout and stderr are /dev/null; no daemon fd leaks in
        fds = os.listdir("/proc/%d/fd" % pid)
        for fd in ("0", "1", "2"):
            assert os.readlink("/proc/%d/fd/%s" % (pid, fd)) == \
                "/dev/null"
        for fd in fds:
            if fd not in ("0", "1", "2"):
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
                # xevlog's own X connection is its only other descriptor
                assert target.startswith("socket:"), target
        assert len(fds) <= 5, fds
    finally:
        kill(pid)


def test_launch_wait_picks_new_window_without_pid():
    # xevlog names no pid: the first new window is taken
    title = uniq("bt-nopid")
    r = ok(win("launch", argv=[XEVLOG, "-title", title], wait=True,
               timeout=20))
    try:
        assert r["info"]["title"] == title, r
        assert search_name(title) == [r["window"]]
    finally:
        kill(r["pid"])


def test_move_resize_exact():
    title = uniq("bt-geom")
    r = ok(win("launch", argv=[XEVLOG, "-title", title, "-geometry",
                                "300x200+100+100"], wait=True, timeout=20))
    wid, pid = r["window"], r["pid"]
    try:
        m = ok(win("move", window=wid, x=412, y=237))
        g = xwininfo(wid)
        assert (g["x"], g["y"]) == (412, 237), g
        assert (m["info"]["x"], m["info"]["y"]) == (412, 237), m
        s = ok(win("resize", window=wid, width=523, height=311))
        g = xwininfo(wid)
        assert (g["width"], g["height"]) == (523, 311), g
        # resizing keeps the top-left corner
        assert (g["x"], g["y"]) == (412, 237), g
        assert s["info"]["width"] == 523 and s["info"]["height"] == 311
        out = xdo("getwindowgeometry", wid).stdout
        assert "523x311" in out, out
        # partly off the screen is allowed
        ok(win("move", window=wid, x=-50, y=700))
        g = xwininfo(wid)
        assert (g["x"], g["y"]) == (-50, 700), g
    finally:
        kill(pid)


def test_resize_xterm_rounds_to_cells():
    title = uniq("bt-cells")
    r = launch_xterm(title)
    wid, pid = r["window"], r["pid"]
    try:
        before = xwininfo(wid)
        s = ok(win("resize", window=wid, width=before["width"] + 203,
                   height=before["height"] + 101))
        g = xwininfo(wid)
        # the reply reports what the window manager made of it
        assert s["info"]["width"] == g["width"], (s, g)
        assert s["info"]["height"] == g["height"], (s, g)
        assert abs(g["width"] - (before["width"] + 203)) < 20, g
        assert abs(g["height"] - (before["height"] + 101)) < 30, g
    finally:
        ok(win("close", window=wid))
        kill(pid)


def test_close_refused_and_forced():
    # a window that does not take WM_DELETE_WINDOW: xmessage does, xclock
    # does, but an xterm killed with force must go at once
    title = uniq("bt-force")
    r = launch_xterm(title)
    wid, pid = r["window"], r["pid"]
    try:
        c = ok(win("close", window=wid, force=True))
        assert c["closed"] is True, c
        assert search_name(title) == []
        bt.wait_for(lambda: proc_exited(pid), 10, "killed xterm to exit")
    finally:
        kill(pid)


def test_errors():
    bt.expect_error(win("activate", window=12345), "not_found", "window")
    bt.expect_error(win("close", window=12345), "not_found", "window")
    bt.expect_error(win("move", window=12345, x=1, y=1), "not_found",
                    "window")
    bt.expect_error(win("activate"), "invalid_argument", "window")
    bt.expect_error(win("activate", window="0x123"), "bad_request",
                    "window")
    bt.expect_error(win("activate", window=0), "out_of_bounds", "window")
    bt.expect_error(win("move", window=1), "invalid_argument", "'x'")
    bt.expect_error(win("move", window=1, x=1), "invalid_argument", "'y'")
    bt.expect_error(win("move", window=1, x=1, y=99999999),
                    "out_of_bounds", "'y'")
    bt.expect_error(win("resize", window=1, width=0, height=10),
                    "out_of_bounds", "width")
    bt.expect_error(win("resize", window=1, width=10, height="x"),
                    "bad_request", "height")
    bt.expect_error(win("launch"), "invalid_argument", "command")
    bt.expect_error(win("launch", command="true", argv=["true"]),
                    "invalid_argument", "argv")
    bt.expect_error(win("launch", argv=[]), "bad_request", "argv")
    bt.expect_error(win("launch", argv=["true", 3]), "bad_request", "argv")
    bt.expect_error(win("launch", command=""), "invalid_argument",
                    "command")
    bt.expect_error(win("launch", command="true", wait=True, timeout=1e6),
                    "out_of_bounds", "timeout")
    bt.expect_error(win("launch", command="true", wait="yes"),
                    "bad_request", "wait")
    e = bt.expect_error(win("launch", argv=["/nonexistent/prog-bt"]),
                        "not_found", "/nonexistent/prog-bt")
    bt.expect_error(win("close", window=1, force="yes"), "bad_request",
                    "force")
    bt.expect_error(win("fly"), "unknown_action", "fly")
    bt.expect_error(D.call(tool="window"), "invalid_argument", "action")
    assert D.alive()


def test_launch_wait_timeout():
    t0 = time.time()
    r = win("launch", command="sleep 30", wait=True, timeout=1)
    bt.expect_error(r, "timeout", "timeout")
    assert time.time() - t0 < 5
    assert r["pid"] > 0  # the program keeps running; its pid is told
    kill(r["pid"])
    # a program that exits at once without a window: a timeout too
    r = win("launch", argv=["true"], wait=True, timeout=0.5)
    bt.expect_error(r, "timeout", "exited")


def test_vanishing_windows_do_not_hurt():
    # windows appear and vanish while the daemon lists them: no X error
    # may take the daemon down
    procs = []
    for i in range(6):
        procs.append(X.spawn([XEVLOG, "-title", uniq("bt-churn")],
                             stdout=subprocess.DEVNULL))
    deadline = time.time() + 2
    while time.time() < deadline:
        ok(win("list"))
        if procs:
            procs.pop().kill()
    assert D.alive()


def test_scaled_space():
    X2 = bt.Xvfb("1920x1080", wm=True)
    D2 = bt.Daemon(X2, ["--scale", "auto", "--no-cursor"])
    try:
        info = ok(D2.call(tool="system", action="info"))
        sw, sh = info["screen"]["width"], info["screen"]["height"]
        dw, dh = info["scaled"]["width"], info["scaled"]["height"]
        assert (dw, dh) == (1366, 768), info

        def to_shot(v, f, t):
            return (2 * v + 1) * t // (2 * f)

        def to_screen(v, f, t):
            return (2 * v + 1) * t // (2 * f)

        title = uniq("bt-scaled")
        r = ok(win("launch", display=D2, argv=[
            XEVLOG, "-title", title, "-geometry", "600x400+300+200"],
            wait=True, timeout=20))
        wid, pid = r["window"], r["pid"]
        try:
            e = listed(wid, display=D2)
            g = xwininfo(wid, x=X2)
            assert e["screen"] == {k: g[k] for k in ("x", "y", "width",
                                                        "height")}
            assert e["x"] == to_shot(g["x"], sw, dw), (e, g)
            assert e["y"] == to_shot(g["y"], sh, dh), (e, g)
            assert e["width"] == round(g["width"] * dw / sw), (e, g)
            assert e["height"] == round(g["height"] * dh / sh), (e, g)
            # move to a point of the screenshot: it lands where a click
            # at that point would
            ok(win("move", display=D2, window=wid, x=100, y=50))
            g = xwininfo(wid, x=X2)
            assert (g["x"], g["y"]) == (to_screen(100, dw, sw),
                                        to_screen(50, dh, sh)), g
            ok(win("resize", display=D2, window=wid, width=683, height=384))
            g = xwininfo(wid, x=X2)
            assert (g["width"], g["height"]) == (960, 540), g
        finally:
            kill(pid)
    finally:
        D2.stop()


def test_no_window_manager():
    X3 = bt.Xvfb("800x600")
    D3 = bt.Daemon(X3, ["--scale", "none", "--no-cursor"])
    try:
        t1, t2 = uniq("bt-nowm1"), uniq("bt-nowm2")
        r1 = ok(win("launch", display=D3, argv=[
            XEVLOG, "-title", t1, "-geometry", "200x100+10+10"],
            wait=True, timeout=20))
        r2 = ok(win("launch", display=D3, argv=[
            XEVLOG, "-title", t2, "-geometry", "200x100+300+300"],
            wait=True, timeout=20))
        try:
            lst = ok(win("list", display=D3))
            assert lst["window_manager"] is None
            titles = sorted(w["title"] for w in lst["windows"])
            # the daemon's own clipboard window is unmapped: not listed
            assert titles == sorted([t1, t2]), lst["windows"]
            e = [w for w in lst["windows"] if w["title"] == t1][0]
            assert (e["x"], e["y"], e["width"], e["height"]) == (
                10, 10, 200, 100), e
            assert e["frame"] == {"x": 10, "y": 10, "width": 200,
                                  "height": 100}, e
            ok(win("activate", display=D3, window=r1["window"]))
            assert xdo("getwindowfocus", x=X3).stdout.strip() == \
                str(r1["window"])
            a = ok(win("activate", display=D3, window=r2["window"]))
            assert a["active"] is True
            assert xdo("getwindowfocus", x=X3).stdout.strip() == \
                str(r2["window"])
            ok(win("move", display=D3, window=r1["window"], x=50, y=60))
            g = xwininfo(r1["window"], x=X3)
            assert (g["x"], g["y"]) == (50, 60), g
            ok(win("resize", display=D3, window=r1["window"], width=321,
                   height=123))
            g = xwininfo(r1["window"], x=X3)
            assert (g["width"], g["height"]) == (321, 123), g
            c = ok(win("close", display=D3, window=r1["window"]))
            assert c["closed"] is True
            assert search_name(t1, x=X3) == []
            bt.wait_for(lambda: proc_exited(r1["pid"]), 5, "xevlog exit")
        finally:
            kill(r1["pid"])
            kill(r2["pid"])
    finally:
        D3.stop()


if __name__ == "__main__":
    bt.run([(n, f) for n, f in list(globals().items())
            if n.startswith("test_") and callable(f)])
    D.stop()
