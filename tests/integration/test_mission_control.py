"""Mission Control (`bureau mission-control`) in front of a real attached
desktop: a real bureaud on a private Xvfb behind `bureau attach`, the real
server on a free loopback port, real HTTP (urllib, raw sockets for the
WebSocket) and a real headless Chromium (python3-selenium, chromium-driver)
for the page. Effects are checked outside the code under test: the X
server's pointer with xdotool, the root window's colour set with xsetroot,
PNGs decoded by ImageMagick, the agent's own replies.

    PYTHONPATH=tests/lib:host-bridge/python /usr/bin/python3 \\
        tests/integration/test_mission_control.py [BUILD_DIR]
"""

import base64
import json
import os
import random
import re
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
    os.environ.setdefault("BUREAU_BUILD", os.path.abspath(sys.argv[1]))

import bt  # noqa: E402

BUREAU = os.path.join(bt.BUILD, "bureau")
X = bt.Xvfb("800x600")
D = bt.Daemon(X, ["--scale", "none"])
HOME = tempfile.mkdtemp(prefix="bureau-mc-")
NAME = "att"
_base = random.randint(340, 1050) * 30
# BUREAU_WARM=0: the VM test's desktop boots (its live view shows the
# boot), and create makes no warm state for its size.
ENV = dict(os.environ, BUREAU_HOME=HOME, BUREAU_WARM="0",
           BUREAU_PORTS="%d-%d" % (_base, _base + 29))
PORT = bt.free_port(pair=False)
BASE = "http://127.0.0.1:%d" % PORT
MC = None
MC_LOG = os.path.join(HOME, "mission-control.log")
TOKEN = None


def bureau(*args, timeout=60):
    return subprocess.run([BUREAU] + list(args), env=ENV, capture_output=True,
                          text=True, timeout=timeout)


def must(*args):
    p = bureau(*args)
    assert p.returncode == 0, "bureau %s: %d %s %s" % (
        " ".join(args), p.returncode, p.stdout, p.stderr)
    return p.stdout


def read(name, desktop=NAME):
    with open(os.path.join(HOME, desktop, name)) as f:
        return f.read().strip()


class Agent:
    """The agent loop's side: the desktop's endpoint, with its token."""

    def call(self, timeout_ms=60000, **req):
        req["token"] = read("token")
        return json.loads(bt.Req1(read("endpoint"),
                                 timeout_ms=timeout_ms).rpc(json.dumps(req)))


A = Agent()


def pointer():
    out = X.run(["xdotool", "getmouselocation"]).stdout
    m = re.search(r"x:(\d+) y:(\d+)", out)
    return int(m.group(1)), int(m.group(2))


def root_colour(hexrgb):
    X.run(["xsetroot", "-solid", "#" + hexrgb])


def near(px, hexrgb, tol=24):
    want = bytes.fromhex(hexrgb)
    return all(abs(a - b) <= tol for a, b in zip(px[:3], want))


# ---- HTTP ------------------------------------------------------------------

class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **kw):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def http(method, path, body=None, headers=None, bearer=True, timeout=60):
    """(status, headers, body bytes)."""
    h = dict(headers or {})
    if bearer is True:
        h["Authorization"] = "Bearer " + TOKEN
    elif bearer:
        h["Authorization"] = "Bearer " + bearer
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(BASE + path, data=data, headers=h,
                                 method=method)
    try:
        with OPENER.open(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()
    except (TimeoutError, urllib.error.URLError) as e:
        if isinstance(e, TimeoutError) or isinstance(
                getattr(e, "reason", None), TimeoutError):
            print("    %s %s: no reply in %d s; where Mission Control and "
                  "the host agents stand:\n%s" % (
                      method, path, timeout, bt.thread_stacks(ours())))
        raise


def ours():
    """The pids of this test's host agents and Mission Control, MC last:
    what CI keeps of a log is its tail."""
    pids = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if ("BUREAU_HOME=" + HOME).encode() in env and b"agent" in argv:
            pids.append(int(d))
    return pids + ([MC.pid] if MC is not None and MC.poll() is None else [])


def api(method, path, body=None, **kw):
    """(status, the JSON body)."""
    st, _, b = http(method, path, body, **kw)
    return st, json.loads(b) if b else None


def ws_handshake(path, headers):
    """A raw WebSocket upgrade: (status line, socket, rest of the bytes)."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = ["GET %s HTTP/1.1" % path, "Host: 127.0.0.1:%d" % PORT,
             "Upgrade: websocket", "Connection: Upgrade",
             "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
    lines += ["%s: %s" % kv for kv in headers.items()]
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(), s, rest


class WsRfb:
    """A minimal RFB viewer over the raw WebSocket, for what a browser
    would never send on its own (input while watch-only)."""

    def __init__(self):
        status, self.s, self.buf = ws_handshake(
            "/vnc/" + NAME, {"Authorization": "Bearer " + TOKEN})
        assert " 101 " in status, status

    def frame(self):
        while True:
            b = self.buf
            if len(b) >= 2:
                n, off = b[1] & 127, 2
                if n == 126 and len(b) >= 4:
                    n, off = struct.unpack(">H", b[2:4])[0], 4
                elif n == 127 and len(b) >= 10:
                    n, off = struct.unpack(">Q", b[2:10])[0], 10
                if (b[1] & 127) < 126 or off > 2:
                    if len(b) >= off + n:
                        self.buf = b[off + n:]
                        return b[0] & 15, b[off:off + n]
            chunk = self.s.recv(1 << 20)
            assert chunk, "the server closed the WebSocket"
            self.buf += chunk

    def send(self, data):
        m = os.urandom(4)
        body = bytes(c ^ m[i % 4] for i, c in enumerate(data))
        hdr = bytes([0x82, 0x80 | len(data)]) if len(data) < 126 else \
            bytes([0x82, 0x80 | 126]) + struct.pack(">H", len(data))
        self.s.sendall(hdr + m + body)

    def handshake(self):
        assert self.frame()[1] == b"RFB 003.008\n"
        self.send(b"RFB 003.008\n")
        assert self.frame()[1] == b"\x01\x01"  # one type: None
        self.send(b"\x01")
        assert self.frame()[1] == b"\x00\x00\x00\x00"
        self.send(b"\x01")  # shared
        init = self.frame()[1]
        return struct.unpack(">HH", init[:4])

    def pointer(self, x, y, mask=0):
        self.send(struct.pack(">BBHH", 5, mask, x, y))

    def close(self):
        self.s.close()


# ---- the tests -------------------------------------------------------------

def test_start():
    global MC, TOKEN
    must("attach", NAME, "--url", D.url, "--token-file", D.token_file,
         "--approve", "bash")
    # Not on another address without --insecure.
    p = bureau("mission-control", "--listen", "0.0.0.0:%d" % PORT)
    assert p.returncode == 2 and "loopback" in p.stderr, p.stderr
    MC = bt.spawn([BUREAU, "mission-control", "--listen",
                   "127.0.0.1:%d" % PORT], env=ENV, stdout=subprocess.PIPE,
                  stderr=open(MC_LOG, "w"), text=True)
    first = MC.stdout.readline()
    second = MC.stdout.readline()
    tokp = os.path.join(HOME, "mission-control.token")
    assert stat.S_IMODE(os.stat(tokp).st_mode) == 0o600
    TOKEN = open(tokp).read().strip()
    assert len(TOKEN) >= 32
    url = "http://127.0.0.1:%d/login?token=%s" % (PORT, TOKEN)
    assert url in first, first
    assert "ssh -L %d:127.0.0.1:%d" % (PORT, PORT) in second, second
    assert must("mission-control", "--listen", "127.0.0.1:%d" % PORT,
                "--print-url").strip() == url
    # --insecure lets it listen on every address (and says where).
    port2 = bt.free_port(pair=False)
    p2 = bt.spawn([BUREAU, "mission-control", "--insecure", "--listen",
                   "0.0.0.0:%d" % port2], env=ENV, stdout=subprocess.PIPE,
                  stderr=subprocess.DEVNULL, text=True)
    try:
        assert "http://127.0.0.1:%d/login?token=" % port2 in \
            p2.stdout.readline()
        with socket.create_connection(("127.0.0.1", port2), timeout=10):
            pass
    finally:
        p2.terminate()
        p2.wait(10)
    # --token-file: that token, not the home's.
    tf = os.path.join(HOME, "other.token")
    with open(tf, "w") as f:
        f.write("another-token-0123456789\n")
    # Only its owner may read it (issue 19: the mode was not checked).
    os.chmod(tf, 0o644)
    p = bureau("mission-control", "--token-file", tf, "--print-url")
    assert p.returncode == 1 and "mode 0644" in p.stderr and \
        "chmod 600" in p.stderr and "another-token" not in p.stdout, \
        (p.stdout, p.stderr)
    os.chmod(tf, 0o600)
    os.chown(tf, 1, 1)
    try:
        p = bureau("mission-control", "--token-file", tf, "--print-url")
        assert p.returncode == 1 and "belongs to uid 1" in p.stderr, \
            p.stderr
    finally:
        os.chown(tf, os.getuid(), os.getgid())
    assert must("mission-control", "--token-file", tf, "--print-url") \
        .strip().endswith("token=another-token-0123456789")


def test_unauthenticated_401():
    paths = [("GET", "/"), ("GET", "/desktop/" + NAME),
             ("GET", "/static/mc.js"), ("GET", "/novnc/core/rfb.js"),
             ("GET", "/api/desktops"), ("GET", "/api/desktops/" + NAME),
             ("GET", "/api/desktops/%s/screenshot" % NAME),
             ("GET", "/api/desktops/%s/thumbnail" % NAME),
             ("GET", "/api/desktops/%s/log?since=0" % NAME),
             ("GET", "/api/approvals"), ("GET", "/api/events"),
             ("POST", "/api/desktops/%s/takeover" % NAME),
             ("POST", "/api/desktops/%s/pause" % NAME),
             ("POST", "/api/approvals/%s/abc" % NAME),
             ("GET", "/api/nosuch")]
    for method, path in paths:
        for bearer in (False, "wrong-token-000000000000000000"):
            st, _, body = http(method, path, {} if method == "POST" else
                               None, bearer=bearer)
            assert st == 401, (method, path, bearer, st)
            assert json.loads(body)["error"]["code"] == "unauthorized"
    st, _, _ = http("GET", "/login?token=wrong", bearer=False)
    assert st == 401
    st, _, _ = http("GET", "/login", bearer=False)
    assert st == 401
    # A bogus cookie is no session.
    st, _, _ = http("GET", "/api/desktops", bearer=False,
                    headers={"Cookie": "bureau_mc=" + "0" * 64})
    assert st == 401
    # The WebSocket too, before any upgrade.
    status, s, _ = ws_handshake("/vnc/" + NAME, {})
    s.close()
    assert " 401 " in status, status
    # The takeover above never reached the agent.
    assert "takeover: off" in must("status", NAME)


def login_cookie():
    st, h, _ = http("GET", "/login?token=" + TOKEN, bearer=False)
    assert st == 302 and h["Location"] == "/", (st, dict(h))
    c = h["Set-Cookie"]
    assert "HttpOnly" in c and "SameSite=Strict" in c and "Path=/" in c, c
    return c.split(";")[0]


def test_login_cookie_and_csrf():
    ck = login_cookie()
    st, body = api("GET", "/api/desktops", bearer=False,
                   headers={"Cookie": ck})
    assert st == 200 and body[0]["name"] == NAME
    path = "/api/desktops/%s/takeover" % NAME
    # A POST with the cookie but from another site (or no Origin) is
    # refused and changes nothing.
    for origin in (None, "http://evil.example", "http://127.0.0.1:1"):
        h = {"Cookie": ck}
        if origin:
            h["Origin"] = origin
        st, body = api("POST", path, {"on": True}, bearer=False, headers=h)
        assert st == 403, (origin, st, body)
        assert "takeover: off" in must("status", NAME)
    # From our own page it goes through.
    st, body = api("POST", path, {"on": True}, bearer=False,
                   headers={"Cookie": ck,
                            "Origin": "http://127.0.0.1:%d" % PORT})
    assert st == 200 and body["takeover"] is True, body
    assert "takeover: on" in must("status", NAME)
    st, body = api("POST", path, {"on": False})  # the bearer needs none
    assert st == 200 and "takeover: off" in must("status", NAME)
    # A WebSocket with the cookie from another origin is refused.
    status, s, _ = ws_handshake("/vnc/" + NAME,
                                {"Cookie": ck, "Origin": "http://evil.example"})
    s.close()
    assert " 403 " in status, status


def mc_threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def test_host_header_and_logout():
    """Another site's name for 127.0.0.1 (DNS rebinding) is refused; a
    session ends at logout (issue 19)."""
    for host in ("evil.example", "evil.example:%d" % PORT, "127.0.0.1.nip.io",
                 "[::2]:%d" % PORT):
        st, _, body = http("GET", "/api/desktops", headers={"Host": host})
        assert st == 421 and b"Host" in body, (host, st, body)
        st, _, _ = http("GET", "/login?token=" + TOKEN, bearer=False,
                        headers={"Host": host})
        assert st == 421, (host, st)
    for host in ("localhost:%d" % PORT, "127.0.0.1:%d" % PORT,
                 "[::1]:%d" % PORT, "127.9.9.9"):
        st, _, _ = http("GET", "/api/desktops", headers={"Host": host})
        assert st == 200, (host, st)
    # Logout ends the session for good and clears the cookie.
    ck = login_cookie()
    own = {"Cookie": ck, "Origin": "http://127.0.0.1:%d" % PORT}
    assert api("GET", "/api/desktops", bearer=False,
               headers={"Cookie": ck})[0] == 200
    st, h, _ = http("POST", "/logout", bearer=False, headers=own)
    assert st == 200 and "Max-Age=0" in h["Set-Cookie"], (st, dict(h))
    assert api("GET", "/api/desktops", bearer=False,
               headers={"Cookie": ck})[0] == 401


def test_unknown_desktop_runs_nothing():
    """Names that are no desktop: 404 before anything runs for them (a
    thumbnail started a live view's thread and socket for any name)."""
    n0 = mc_threads(MC.pid)
    for i in range(6):
        for path in ("/api/desktops/ghost%d/thumbnail" % i,
                     "/api/desktops/ghost%d/log" % i,
                     "/api/desktops/ghost%d/screenshot" % i):
            st, _, body = http("GET", path)
            assert st == 404 and b"ghost" in body, (path, st, body)
        st, _, _ = http("POST", "/api/approvals/ghost%d/abc" % i, {})
        assert st == 404, st
    time.sleep(0.5)
    assert mc_threads(MC.pid) <= n0, (n0, mc_threads(MC.pid))


def test_open_pages_leave_the_api_answering():
    """Each open page holds an event stream (and a live view): 100 of
    them still leave the API answering (it was a worker each, of 48);
    past MC_STREAMS_MAX (256) a stream is refused with busy, never a
    hang (issue 19)."""
    streams = []

    def open_stream():
        s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
        s.sendall(("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "Authorization: Bearer %s\r\n\r\n" % (PORT, TOKEN))
                  .encode())
        head = b""
        while b"\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        return s, head.split(b"\r\n")[0].decode()
    try:
        for i in range(100):
            s, status = open_stream()
            streams.append(s)
            assert " 200 " in status, (i, status)
        t0 = time.time()
        st, body = api("GET", "/api/desktops", timeout=30)
        assert st == 200 and body[0]["name"] == NAME, (st, body)
        st, _ = api("GET", "/api/desktops/" + NAME, timeout=30)
        assert st == 200 and time.time() - t0 < 20
        for i in range(156):
            s, status = open_stream()
            streams.append(s)
            assert " 200 " in status, (100 + i, status)
        s, status = open_stream()
        streams.append(s)
        assert " 503 " in status, status
        assert api("GET", "/api/desktops", timeout=30)[0] == 200
    finally:
        for s in streams:
            s.close()
    # Closed pages give their workers back.
    def reopened():
        s, status = open_stream()
        s.close()
        return " 200 " in status
    bt.wait_for(reopened, 20, "a stream once the others closed")


def test_session_expires_when_idle():
    """A session unused for the idle limit ends (12 h by default; 2 s
    here): a stolen or forgotten cookie does not open the page for
    good."""
    port = bt.free_port(pair=False)
    env = dict(ENV, BUREAU_MC_SESSION_IDLE="2")
    p = bt.spawn([BUREAU, "mission-control", "--listen",
                  "127.0.0.1:%d" % port], env=env, stdout=subprocess.PIPE,
                 stderr=subprocess.DEVNULL, text=True)
    try:
        p.stdout.readline()
        base = "http://127.0.0.1:%d" % port

        def get(path, ck=None):
            h = {"Cookie": ck} if ck else {}
            req = urllib.request.Request(base + path, headers=h)
            try:
                with OPENER.open(req, timeout=30) as r:
                    return r.status, r.headers
            except urllib.error.HTTPError as e:
                return e.code, e.headers
        st, h = get("/login?token=" + TOKEN)
        assert st == 302, st
        ck = h["Set-Cookie"].split(";")[0]
        # Used within the limit, it lives on past it.
        for _ in range(3):
            time.sleep(1)
            assert get("/api/desktops", ck)[0] == 200
        time.sleep(3.5)
        assert get("/api/desktops", ck)[0] == 401
    finally:
        p.terminate()
        p.wait(10)


def test_api():
    # The page is never framed by another site, and runs only our scripts.
    for path in ("/", "/static/mc.js", "/api/desktops"):
        st, h, _ = http("GET", path)
        assert st == 200 and h["X-Frame-Options"] == "DENY", (path, dict(h))
        assert "frame-ancestors 'none'" in h["Content-Security-Policy"]
    root_colour("3366cc")
    st, ds = api("GET", "/api/desktops")
    assert st == 200 and [d["name"] for d in ds] == [NAME]
    d = ds[0]
    for k in ("name", "state", "uptime_s", "cpu_percent", "memory_bytes",
              "disk_bytes", "accel", "endpoint", "last_action"):
        assert k in d, (k, d)
    assert d["state"] == "attached" and d["endpoint"] == read("endpoint")
    st, one = api("GET", "/api/desktops/" + NAME)
    assert st == 200 and one["taken_over"] is False
    assert one["approvals"] == [] and one["guest"]["screen"] == {
        "width": 800, "height": 600}
    # the guest's own figures: here this machine's, where the daemon runs
    with open("/proc/meminfo") as f:
        total = int(f.read().split("MemTotal:")[1].split()[0]) * 1024
    assert one["guest"]["memory"]["total_bytes"] == total, one["guest"]
    assert len(one["guest"]["load"]) == 3, one["guest"]
    # The screenshot is the screen now, decoded by ImageMagick.
    bt.wait_for(lambda: near(png_centre(), "3366cc"), 10, "the new colour")
    # The log: what the agent did, after a sequence number.
    bt.ok(A.call(tool="computer", action="mouse_move", coordinate=[10, 20]))
    st, log = api("GET", "/api/desktops/%s/log?since=0" % NAME)
    assert st == 200 and log, log
    last = log[-1]
    assert last["tool"] == "computer" and last["action"] == "mouse_move"
    assert set(("seq", "time", "tool", "action", "summary", "ok",
                "elapsed_ms")) <= set(last)
    # Each row's last action is the trail's last line.
    la = api("GET", "/api/desktops")[1][0]["last_action"]
    assert (la["seq"], la["action"]) == (last["seq"], "mouse_move"), la
    st, later = api("GET", "/api/desktops/%s/log?since=%d" %
                    (NAME, last["seq"]))
    assert st == 200 and later == []
    # The settled screenshot of that input action is served.
    st, h, png = http("GET", last["screenshot_url"])
    assert st == 200 and h["Content-Type"] == "image/png"
    bt.decode_png(png)
    # Bad input gets a typed error naming the field.
    st, e = api("GET", "/api/desktops/%s/log?since=x" % NAME)
    assert st == 400 and "since" in e["error"]["message"]
    st, e = api("POST", "/api/desktops/%s/takeover" % NAME, {"on": "yes"})
    assert st == 400 and "'on'" in e["error"]["message"]
    st, e = api("POST", "/api/approvals/%s/nosuch" % NAME, {"allow": True})
    assert st == 404 and e["error"]["code"] == "not_found"
    st, e = api("POST", "/api/approvals/%s/x" % NAME, {"allow": 1})
    assert st == 400 and "'allow'" in e["error"]["message"]
    st, e = api("GET", "/api/desktops/nosuch")
    assert st == 404
    st, e = api("GET", "/api/desktops/..%2f..%2fetc")
    assert st == 404
    st, _, _ = http("GET", "/api/desktops/%s/audit/..%%2f..%%2ftoken" % NAME)
    assert st == 404
    st, _, _ = http("GET", "/static/../../" + NAME + "/token")
    assert st == 404
    # Lifecycle commands run as the CLI: an attached desktop has none.
    st, e = api("POST", "/api/desktops/%s/pause" % NAME, {})
    assert st == 409 and "attached" in e["error"]["message"], e
    st, e = api("POST", "/api/desktops/%s/snapshot" % NAME, {})
    assert st == 400 and "'tag'" in e["error"]["message"]
    st, e = api("POST", "/api/desktops/%s/takeover" % NAME,
                {"on": True, "pad": "x" * 70000})
    assert st == 413 and e["error"]["code"] == "too_large", e
    st, _, b = http("POST", "/api/desktops/%s/takeover" % NAME,
                    headers={"Content-Type": "application/json"})
    assert st == 400 and b"'on'" in b  # an empty body is {}
    assert "takeover: off" in must("status", NAME)


def png_centre():
    st, h, png = http("GET", "/api/desktops/%s/screenshot" % NAME)
    assert st == 200 and h["Content-Type"] == "image/png", st
    w, hh, rgb = bt.decode_png(png)
    assert (w, hh) == (800, 600)
    i = (450 * w + 600) * 3  # clear of the pointer
    return rgb[i:i + 3]


def thumbnail_turns(hexrgb, timeout, http_timeout=10):
    """Wait until the thumbnail's pixel (600, 450) is HEXRGB."""
    px = [None]

    def shows():
        st, h, img = http("GET", "/api/desktops/%s/thumbnail" % NAME,
                          timeout=http_timeout)
        if st != 200:  # 404 until the live view has its first frame
            px[0] = "HTTP %d" % st
            return False
        # The live view's first frame is a screenshot (PNG), the ones
        # after it come from the daemon's frame events (JPEG).
        fmt = {"image/jpeg": "jpeg", "image/png": "png"}[h["Content-Type"]]
        w, hh, rgb = bt.to_rgb(img, fmt)
        i = (450 * w + 600) * 3
        px[0] = rgb[i:i + 3]
        return near(px[0], hexrgb)
    try:
        bt.wait_for(shows, timeout, "the thumbnail to turn " + hexrgb)
    except TimeoutError:
        raise AssertionError("thumbnail pixel %r, not %s" % (px[0], hexrgb))


def test_thumbnail_follows_the_screen():
    st, d = api("GET", "/api/desktops/" + NAME)
    f0 = d["frame"]
    root_colour("cc3333")
    t0 = time.time()

    # Not "the first new frame": an earlier test's colour may still be
    # on its way (CI once saw test_api's 3366cc published after f0 was
    # read), so wait for the thumbnail that shows this test's colour.
    thumbnail_turns("cc3333", 10)
    # The daemon publishes at most every 500 ms: well within a second
    # on an idle machine; a loaded one gets a generous margin.
    assert time.time() - t0 < 5
    assert api("GET", "/api/desktops/" + NAME)[1]["frame"] > f0
    # An idle screen brings no new frame.
    f1 = api("GET", "/api/desktops/" + NAME)[1]["frame"]
    time.sleep(2)
    assert api("GET", "/api/desktops/" + NAME)[1]["frame"] == f1


def op(**req):
    """One request on the desktop's operator socket (ops_mc.c's ops)."""
    url = "ipc://" + os.path.join(HOME, NAME, "operator.sock")
    return json.loads(bt.Req1(url, timeout_ms=30000).rpc(json.dumps(req)))


def test_operator_ops():
    n = len(api("GET", "/api/desktops/%s/log?since=0" % NAME)[1])
    r = bt.ok(op(op="screenshot"))
    assert r["image"]["mime_type"] == "image/png"
    frame = r["image"]["frame"]
    # The same frame again: no image crosses the socket.
    r = bt.ok(op(op="screenshot", frame=frame))
    assert r.get("unchanged") is True and "image" not in r, r
    bt.expect_error(op(op="screenshot", frame="x"), "invalid_argument",
                    "frame")
    # Watching is not an agent action: the audit trail did not grow.
    assert len(api("GET", "/api/desktops/%s/log?since=0" % NAME)[1]) == n
    # Input is the operator's only once they have taken over.
    X.run(["xdotool", "mousemove", "5", "5"])
    bt.wait_for(lambda: pointer() == (5, 5), 5, "the pointer to park")
    mv = {"tool": "computer", "action": "mouse_move", "coordinate": [77, 66]}
    bt.expect_error(op(op="input", request=mv), "permission_denied")
    assert pointer() == (5, 5)
    bt.expect_error(op(op="input", request={"tool": "bash", "command": "id"}),
                    "invalid_argument", "computer")
    bt.expect_error(op(op="input", request="x"), "invalid_argument",
                    "request")
    must("takeover", NAME, "on")
    try:
        bt.ok(op(op="input", request=mv))
        bt.wait_for(lambda: pointer() == (77, 66), 5, "the operator's move")
    finally:
        must("takeover", NAME, "off")
    info = bt.ok(op(op="info"))
    assert info["screen"] == {"width": 800, "height": 600}


XEVLOG = os.path.join(bt.BUILD, "tests", "xevlog")


class EvLog:
    """xevlog (tests/tools) in a window at 100,100: the X server's own
    account of the input that reached it."""

    def __init__(self):
        self.proc = X.spawn([XEVLOG, "-geometry", "400x300+100+100", "-f"],
                            stdout=subprocess.PIPE, text=True)
        self.lines = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        bt.wait_for(lambda: self.seen("ready"), 10, "xevlog ready")

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def seen(self, prefix):
        with self.lock:
            return [x for x in self.lines if x.startswith(prefix)]

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)


def test_viewer_input_dropped_until_takeover():
    X.run(["xdotool", "mousemove", "5", "5"])
    bt.wait_for(lambda: pointer() == (5, 5), 5, "the pointer to park")
    ev = EvLog()
    v = WsRfb()
    assert v.handshake() == (800, 600)

    def send_input():
        v.pointer(300, 200)
        v.pointer(300, 200, 1)  # left button down, then up
        v.pointer(300, 200, 0)
        for k in (0x68, 0x69):  # "h", "i"
            v.send(struct.pack(">BBxxI", 4, 1, k))
            v.send(struct.pack(">BBxxI", 4, 0, k))
        v.send(struct.pack(">BBxxI", 4, 1, 0xff0d))  # Return
        v.send(struct.pack(">BBxxI", 4, 0, 0xff0d))
        v.send(struct.pack(">BxxxI", 6, 5) + b"paste")
    try:
        send_input()
        time.sleep(2)
        assert pointer() == (5, 5), "a watch-only viewer moved the pointer"
        assert not ev.seen("button_") and not ev.seen("key_"), ev.lines
        must("takeover", NAME, "on")
        time.sleep(0.6)  # the server asks the agent at most twice a second
        send_input()
        try:
            bt.wait_for(lambda: len(ev.seen("key_press")) >= 3, 15,
                        "the operator's keys")
        except TimeoutError:
            raise AssertionError("xevlog saw %r; mission-control said %s" % (
                ev.lines, open(MC_LOG).read()[-2000:]))
        assert pointer() == (300, 200)
        press = ev.seen("button_press")
        assert len(press) == 1 and "button=1 x=200 y=100" in press[0], press
        keys = ev.seen("key_press")
        assert keys[0].endswith("text=h") and keys[1].endswith("text=i"), keys
        assert "keysym=Return" in keys[2], keys
        # The agent meanwhile is refused.
        r = A.call(tool="computer", action="left_click", coordinate=[1, 1])
        bt.expect_error(r, "taken_over")
        # The viewer's clipboard never reaches the desktop.
        clip = X.run(["xclip", "-o", "-selection", "clipboard"],
                     timeout=5).stdout
        assert "paste" not in clip
    finally:
        must("takeover", NAME, "off")
        v.close()
        ev.close()


def test_viewer_that_does_not_read():
    """A viewer that asks for frames and never reads them (a stalled
    browser, a dead network path) holds up nobody else: its writes block,
    the desktop's frames, the API and the thumbnail go on. Before, the
    RFB session wrote with the frame's lock held, and civetweb's write
    waited up to request_timeout_ms (an hour) on the full socket."""
    v = WsRfb()
    w, h = v.handshake()
    v.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # Full (non-incremental) updates of 800x600x4 bytes: a few fill the
    # socket buffers on both sides, the rest wait on a viewer that reads
    # nothing.
    for _ in range(40):
        v.send(struct.pack(">BBHHHH", 3, 0, 0, 0, w, h))
        time.sleep(0.05)
    try:
        t0 = time.time()
        st, d = api("GET", "/api/desktops/" + NAME, timeout=15)
        assert st == 200, (st, d)
        f0 = d["frame"]
        root_colour("33cc66")
        thumbnail_turns("33cc66", 15, http_timeout=15)
        assert api("GET", "/api/desktops/" + NAME,
                   timeout=15)[1]["frame"] > f0
        # Another viewer is served meanwhile.
        v2 = WsRfb()
        try:
            assert v2.handshake() == (800, 600)
        finally:
            v2.close()
        print("    the API and the frames went on (%.1f s)" % (
            time.time() - t0))
    finally:
        v.close()


# ---- the page, in a real browser -------------------------------------------

B = None


def browser():
    global B
    if B is None:
        B = bt.chromium()
        B.get(must("mission-control", "--listen", "127.0.0.1:%d" % PORT,
                   "--print-url").strip())
    return B


def css(sel, timeout=15):
    from selenium.webdriver.common.by import By
    return bt.wait_for(lambda: B.find_elements(By.CSS_SELECTOR, sel), timeout,
                       sel)[0]


def test_page_lists_desktops():
    b = browser()
    assert b.current_url.rstrip("/") == BASE, b.current_url  # logged in
    row = css('[data-desktop="%s"]' % NAME)
    st = css('[data-desktop="%s"] [data-field="state"]' % NAME)
    bt.wait_for(lambda: st.text == "attached", 10, "the state")
    for a in ("start", "stop", "pause", "resume"):
        btn = row.find_element("css selector", '[data-action="%s"]' % a)
        # Lifecycle does not apply to an attached desktop.
        assert not btn.is_enabled(), a
    # The takeover shows without a reload.
    must("takeover", NAME, "on")
    badge = css('[data-desktop="%s"] .badge' % NAME)
    try:
        bt.wait_for(lambda: badge.is_displayed(), 10, "the takeover badge")
    finally:
        must("takeover", NAME, "off")
    bt.wait_for(lambda: not badge.is_displayed(), 10, "the badge to go")
    # The latest actions, live.
    bt.ok(A.call(tool="computer", action="cursor_position"))
    bt.wait_for(lambda: "cursor_position" in css(
        '[data-desktop="%s"] [data-field="actions"]' % NAME).text, 10,
        "the action on the page")


def test_page_shows_forks_under_their_parent():
    """A fork's card comes right after its parent's (not in name order),
    says whose fork it is, and an ephemeral fork's stop is "Discard".
    Two stopped VM desktops, the second's desktop.json marked as `bureau
    fork` marks a fork (a fork is made from a running desktop: the fork
    itself is tests/e2e/test_fork.sh's)."""
    if not os.path.exists(os.path.join(IMAGE, "image.json")):
        print("    skipped: no desktop image at %s" % IMAGE)
        return
    for n in ("zz-parent", "aa-fork"):
        must("create", n, "--image", IMAGE, "--memory", "256M", "--cpus",
             "1", "--disk", "1G", "--home", "64M")
    pj = os.path.join(HOME, "aa-fork", "desktop.json")
    with open(pj) as f:
        cfg = json.load(f)
    cfg.update(fork_of="zz-parent", ephemeral=True)
    with open(pj, "w") as f:
        json.dump(cfg, f)
    try:
        st, d = api("GET", "/api/desktops/aa-fork")
        assert st == 200 and d["fork_of"] == "zz-parent" and d["ephemeral"], d
        st, d = api("GET", "/api/desktops/zz-parent")
        assert st == 200 and d["fork_of"] is None and not d["ephemeral"], d
        b = browser()
        b.get(BASE + "/")
        css('[data-desktop="aa-fork"]')

        def order():
            return [e.get_attribute("data-desktop") for e in
                    b.find_elements("css selector", "[data-desktop]")]
        bt.wait_for(lambda: order().index("aa-fork") ==
                    order().index("zz-parent") + 1, 10,
                    "the fork's card after its parent's")
        mark = css('[data-desktop="aa-fork"] [data-field="fork_of"]')
        assert mark.text == "fork of zz-parent \u00b7 ephemeral", mark.text
        btn = css('[data-desktop="aa-fork"] [data-action="discard"]')
        assert btn.text == "Discard", btn.text
        assert not b.find_elements(
            "css selector", '[data-desktop="zz-parent"] [data-field="fork_of"]')
    finally:
        for n in ("aa-fork", "zz-parent"):
            bureau("rm", n)


def test_page_groups_desktops_by_host():
    """Desktops are grouped by the host they run on, local first: the API
    names each one's host, the page puts its card under that host's
    heading. Two stopped VM desktops, the second's desktop.json on a
    libvirt host (hosts.json names it; no libvirtd needs to answer: the
    desktops on libvirt themselves are tests/e2e/test_libvirt.sh's)."""
    if not os.path.exists(os.path.join(IMAGE, "image.json")):
        print("    skipped: no desktop image at %s" % IMAGE)
        return
    for n in ("g-local", "g-lv"):
        must("create", n, "--image", IMAGE, "--memory", "256M", "--cpus",
             "1", "--disk", "1G", "--home", "64M")
    hj = os.path.join(HOME, "hosts.json")
    with open(hj, "w") as f:
        json.dump({"lvx": {"uri": "qemu+unix:///system?socket=%s/none.sock"
                           % HOME, "added": 0}}, f)
    pj = os.path.join(HOME, "g-lv", "desktop.json")
    with open(pj) as f:
        cfg = json.load(f)
    cfg.update(host="lvx")
    with open(pj, "w") as f:
        json.dump(cfg, f)
    try:
        st, d = api("GET", "/api/desktops/g-lv")
        assert st == 200 and d["host"] == "lvx", d
        st, d = api("GET", "/api/desktops/g-local")
        assert st == 200 and d["host"] == "local", d
        b = browser()
        b.get(BASE + "/")
        css('[data-host="lvx"] [data-desktop="g-lv"]')
        css('[data-host="local"] [data-desktop="g-local"]')
        hosts = [e.get_attribute("data-host") for e in
                 b.find_elements("css selector", ".host-group")]
        assert hosts == ["local", "lvx"], hosts
        assert css('[data-host="lvx"] .host-name').text == "host lvx"
    finally:
        for n in ("g-lv", "g-local"):
            bureau("rm", n)
        os.unlink(hj)


def bash_async(command, out):
    def run():
        out["reply"] = A.call(tool="bash", command=command,
                              timeout_ms=120000)
    t = threading.Thread(target=run)
    t.start()
    return t


def test_page_approve_and_deny():
    b = browser()
    b.get(BASE + "/")
    out = {}
    t = bash_async("echo approved-from-the-page", out)
    card = css("[data-approval]", 20)
    aid = card.get_attribute("data-approval")
    assert "approved-from-the-page" in card.text  # the full request shown
    time.sleep(0.5)
    assert t.is_alive()
    card.find_element("css selector", '[data-action="approve"]').click()
    t.join(60)
    r = bt.ok(out["reply"])
    assert "approved-from-the-page" in r["output"], r
    bt.wait_for(lambda: not b.find_elements(
        "css selector", '[data-approval="%s"]' % aid), 10, "the card to go")
    out = {}
    t = bash_async("echo never", out)
    card = css("[data-approval]", 20)
    card.find_element("css selector", "input").send_keys("not today")
    card.find_element("css selector", '[data-action="deny"]').click()
    t.join(60)
    bt.expect_error(out["reply"], "permission_denied", "not today")


def test_large_approval_stays_small():
    """A request too large to list whole (a 2 MiB write waiting for
    approval) reaches the API and the page by its size, SHA-256 and
    ends: the event stream stays small while the operator decides."""
    must("policy", NAME, "--approve", "bash,file.write")
    path = os.path.join(HOME, "never-written")
    data = base64.b64encode(os.urandom(3 << 19)).decode()
    out = {}

    def run():
        out["reply"] = A.call(tool="file", action="write", path=path,
                              data=data, timeout_ms=120000)
    t = threading.Thread(target=run)
    t.start()
    try:
        bt.wait_for(lambda: api("GET", "/api/approvals")[1], 20,
                    "the approval")
        st, body = api("GET", "/api/approvals")
        assert st == 200 and len(json.dumps(body)) < 8192, len(
            json.dumps(body))
        a = body[0] if isinstance(body, list) else body["approvals"][0]
        assert a["request"] is None and a["bytes"] > 2 << 20, a["bytes"]
        b = browser()
        b.get(BASE + "/")
        card = css('[data-approval="%s"]' % a["approval"], 20)
        bt.wait_for(lambda: "too large to show whole" in card.text and
                    a["sha256"] in card.text, 10,
                    "the card's size and hash (it shows %r)" % card.text)
        card.find_element("css selector", '[data-action="deny"]').click()
        t.join(60)
        bt.expect_error(out["reply"], "permission_denied")
        assert not os.path.exists(path)
    finally:
        t.join(60)
        must("policy", NAME, "--approve", "bash")


def canvas_px(x, y):
    return B.execute_script(
        "const c = document.querySelector('#screen canvas');"
        "if (!c || c.width < 2) return null;"
        "return Array.from(c.getContext('2d').getImageData(%d, %d, 1, 1)"
        ".data);" % (x, y))


def test_page_live_view_and_takeover():
    b = browser()
    root_colour("22aa44")
    b.get(BASE + "/desktop/" + NAME)
    bt.wait_for(lambda: near(canvas_px(600, 450) or [0, 0, 0], "22aa44"), 60,
                "the live view to show the screen")
    # Compare with the daemon's own screenshot.
    assert near(png_centre(), "22aa44")
    # It follows the screen without a reload.
    root_colour("aa22aa")
    bt.wait_for(lambda: near(canvas_px(600, 450) or [0, 0, 0], "aa22aa"), 60,
                "the live view to follow")
    tk = css('[data-action="takeover"]')
    assert tk.get_attribute("aria-pressed") == "false"
    tk.click()
    bt.wait_for(lambda: "takeover: on" in must("status", NAME), 30,
                "the agent to be told")
    # The agent holds it before Mission Control's reply to the click has
    # reached the page: the button follows that reply.
    bt.wait_for(lambda: tk.get_attribute("aria-pressed") == "true", 30,
                "the button to show control")
    r = A.call(tool="computer", action="left_click", coordinate=[5, 5])
    bt.expect_error(r, "taken_over")
    bt.ok(A.call(tool="computer", action="screenshot"))  # still works
    # The page still shows control (a live update taken before the
    # takeover must not have flipped it back), and the button is usable.
    bt.wait_for(lambda: tk.is_enabled(), 30, "the button to be usable")
    assert tk.get_attribute("aria-pressed") == "true"
    tk.click()
    bt.wait_for(lambda: "takeover: off" in must("status", NAME), 30,
                "the hand back")
    bt.ok(A.call(tool="computer", action="left_click", coordinate=[5, 5]))
    # The timeline lists that click with its settled screenshot.
    bt.wait_for(lambda: b.find_elements(
        "css selector", "#log li img"), 30, "a screenshot in the timeline")


IMAGE = os.path.join(os.environ.get("BUREAU_IMAGES",
                                    "/var/cache/bureau/images"), "minimal")


def vnc_direct(path):
    """The VM's screen read straight from QEMU's VNC socket (raw
    encoding, the pixel format noVNC asks for), independently of Mission
    Control: (width, height, RGBX bytes)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(path)

    def need(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            assert c, "QEMU closed its VNC socket"
            b += c
        return b
    assert need(12) == b"RFB 003.008\n"
    s.sendall(b"RFB 003.008\n")
    types = need(need(1)[0])
    assert 1 in types, types
    s.sendall(b"\x01")
    assert need(4) == b"\0\0\0\0"
    s.sendall(b"\x01")
    w, h = struct.unpack(">HH", need(4))
    need(16)
    need(struct.unpack(">I", need(4))[0])
    s.sendall(struct.pack(">BxxxBBBBHHHBBBxxx", 0, 32, 24, 0, 1, 255, 255,
                          255, 0, 8, 16))
    s.sendall(struct.pack(">BxHi", 2, 1, 0))
    s.sendall(struct.pack(">BBHHHH", 3, 0, 0, 0, w, h))
    fb = bytearray(w * h * 4)
    assert need(1) == b"\0"
    need(1)
    for _ in range(struct.unpack(">H", need(2))[0]):
        x, y, rw, rh, enc = struct.unpack(">HHHHi", need(12))
        if enc == -223:
            w, h, fb = rw, rh, bytearray(rw * rh * 4)
            continue
        assert enc == 0, enc
        data = need(rw * rh * 4)
        for row in range(rh):
            o = ((y + row) * w + x) * 4
            fb[o:o + rw * 4] = data[row * rw * 4:(row + 1) * rw * 4]
    s.close()
    return w, h, bytes(fb)


def test_vm_live_view():
    """A QEMU desktop's live view is QEMU's own VNC server (it shows the
    boot: no daemon needed), bridged by Mission Control to noVNC."""
    if not os.path.exists(os.path.join(IMAGE, "image.json")):
        print("    skipped: no desktop image at %s" % IMAGE)
        return
    must("create", "vm", "--image", IMAGE, "--memory", "512M", "--cpus",
         "1", "--disk", "4G", "--home", "1G")
    vdir = os.path.join(HOME, "vm")
    start = bt.spawn([BUREAU, "start", "vm"], env=ENV,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sock = os.path.join(vdir, "vnc.sock")
        bt.wait_for(lambda: os.path.exists(sock), 60, "QEMU's VNC socket")
        # Only Mission Control's user reaches it: the directory is 0700.
        assert stat.S_IMODE(os.stat(vdir).st_mode) == 0o700
        st, d = api("GET", "/api/desktops/vm")
        assert st == 200 and d["kind"] == "vm" and d["state"] in (
            "running", "starting"), d
        assert d["memory_bytes"] > 0 and d["disk_bytes"] > 0, d
        assert d["cpu_percent"] is not None and d["accel"] in ("kvm", "tcg")
        # Its limits as set, and as its QEMU's cgroup holds them (root
        # here, with the v1 controllers: docs/desktops.md, "Limits")
        lim = d["limits"]
        assert lim["cpu"] == 1 and lim["memory_mb"] == 1024 and \
            lim["pids"] == 512, lim
        en = lim["enforced"]
        assert en["cgroup"].startswith("/bureau/vm-") and en["cpu"] == 1 \
            and en["memory_mb"] == 1024 and "not_enforced" not in en, en
        # Unauthenticated: 401, as for every desktop.
        status, s, _ = ws_handshake("/vnc/vm", {})
        s.close()
        assert " 401 " in status, status
        b = browser()
        b.get(BASE + "/desktop/vm")
        facts = css("#facts")
        bt.wait_for(lambda: "1 core, 1.0G, 512 processes; cgroup v1" in
                    facts.text, 30, "the page to show the limits")

        def same():
            # The boot moves on: compare a sample of the canvas with a
            # direct read taken right after it, until the two agree.
            got = B.execute_script(
                "const c = document.querySelector('#screen canvas');"
                "if (!c || c.width < 2) return null;"
                "const d = c.getContext('2d').getImageData(0, 0, c.width,"
                " c.height).data; const o = [c.width, c.height];"
                "for (let y = 4; y < c.height; y += 16)"
                " for (let x = 4; x < c.width; x += 16) {"
                "  const i = (y * c.width + x) * 4;"
                "  o.push(d[i], d[i + 1], d[i + 2]); } return o;")
            if not got:
                return False
            w, h, fb = vnc_direct(sock)
            if got[:2] != [w, h]:
                return False
            want = [fb[(y * w + x) * 4 + k] for y in range(4, h, 16)
                    for x in range(4, w, 16) for k in range(3)]
            diff = sum(abs(a - b) for a, b in zip(got[2:], want))
            return diff / max(1, len(want)) < 8 and any(want)
        bt.wait_for(same, 120, "the live view to match QEMU's screen")
        # The page's pause and resume are the CLI's: `bureau start` (which
        # waits for the guest's daemon, holding the desktop's lock) is
        # ended first; QEMU runs on, daemonized.
        start.terminate()
        start.wait(30)
        bt.wait_for(lambda: "state: running" in must("status", "vm"), 30,
                    "QEMU to run on")
        b.get(BASE + "/")
        state = css('[data-desktop="vm"] [data-field="state"]')
        bt.wait_for(lambda: state.text == "running", 20, "running shown")
        css('[data-desktop="vm"] [data-action="pause"]').click()
        bt.wait_for(lambda: "state: paused" in must("status", "vm"), 60,
                    "the VM to pause")
        bt.wait_for(lambda: state.text == "paused", 20,
                    "the page to show it without a reload")
        css('[data-desktop="vm"] [data-action="resume"]').click()
        bt.wait_for(lambda: "state: running" in must("status", "vm"), 60,
                    "the VM to resume")
        bt.wait_for(lambda: state.text == "running", 20, "running again")
    finally:
        start.terminate()
        start.wait(30)
        # The page's resume runs `bureau resume`, which steps the clock
        # once the guest's daemon answers, holding the desktop's lock
        # until then: rm waits its turn, else QEMU would outlive the test.
        bt.wait_for(lambda: bureau("rm", "--force", "vm").returncode == 0,
                    300, "rm --force of the VM")


def doc_page_screenshots():
    """Screenshots of both pages for docs/ (MC_SHOTS=DIR), looked at by a
    person: not an assertion of looks."""
    out = os.environ.get("MC_SHOTS")
    if not out:
        return
    b = browser()
    b.set_window_size(1400, 1000)
    root_colour("3a5a80")
    X.spawn(["xterm", "-geometry", "80x24+40+40", "-e",
             "sh -c 'echo agent at work; ls /; sleep 60'"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    bt.ok(A.call(tool="computer", action="left_click", coordinate=[200, 150]))
    outp = {}
    bash_async("rm -rf ~/build && make -j2", outp)
    css("[data-approval]", 20)
    b.get(BASE + "/")
    css("[data-approval]", 20)
    time.sleep(2)
    b.save_screenshot(os.path.join(out, "mission-control.png"))
    b.get(BASE + "/desktop/" + NAME)
    time.sleep(4)
    b.save_screenshot(os.path.join(out, "mission-control-desktop.png"))
    card = css("[data-approval]", 20)
    card.find_element("css selector", '[data-action="deny"]').click()


FLOOD = r"""
import ctypes, os, sys, time
nng = ctypes.CDLL(sys.argv[3])
url, count = sys.argv[1], sys.argv[2]
sock, n = ctypes.c_uint32(0), [0]
assert nng.nng_pub0_open(ctypes.byref(sock)) == 0
def event(pipe, ev, arg):
    n[0] += 1 if ev == 1 else -1  # NNG_PIPE_EV_ADD_POST, _REM_POST
    with open(count + ".new", "w") as f:
        f.write(str(n[0]))
    os.replace(count + ".new", count)
cb = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_int,
                      ctypes.c_void_p)(event)
for ev in (1, 2):
    assert nng.nng_pipe_notify(sock, ev, cb, None) == 0
assert nng.nng_listen(sock, url.encode(), None, 0) == 0
# "frame " passes the live view's subscription; the rest opens with no
# key, as a replaced source's frames do not.
msg = b"frame " + os.urandom(2 << 20)
while True:
    nng.nng_send(sock, msg, ctypes.c_size_t(len(msg)), 0)
    time.sleep(0.003)
"""


class Flood:
    """A PUB socket (real nng, bt.NNG_LIB) in a process of its own that
    sends 2 MiB messages without a pause to whoever subscribes, and counts
    its subscribers. It never stops by itself: stop() kills it."""

    def __init__(self, url):
        self.url = url
        self.count = tempfile.mktemp(prefix="bureau-flood-")
        self.proc = bt.spawn(["/usr/bin/python3", "-c", FLOOD, url,
                              self.count, bt.NNG_LIB])

    def pipes(self):
        try:
            with open(self.count) as f:
                return int(f.read())
        except (OSError, ValueError):
            return 0

    def stop(self):
        self.proc.kill()
        self.proc.wait(10)
        if os.path.exists(self.count):
            os.unlink(self.count)


def test_reattached_while_frames_flow():
    """A live view whose source is replaced while the old one sends
    without a pause follows the new one, and Mission Control goes on
    answering (closing a connection while a message arrives on it once
    hung Debian's libnng 1.5.2 for good: nanomsg/nng#1636). Once the old
    source is gone, MC lets go of it."""
    name, floods, daemons = "flood", [], []
    for colour in ("0000ee", "00ee00"):
        x = bt.Xvfb("640x480")
        x.run(["xsetroot", "-solid", "#" + colour])
        # The daemon's own events elsewhere: its port + 1, where the
        # live view subscribes, is the flood's.
        d = bt.Daemon(x, ["--scale", "none", "--events",
                          "tcp://127.0.0.1:%d" % bt.free_port(pair=False)])
        floods.append(Flood("tcp://127.0.0.1:%d" % (d.port + 1)))
        daemons.append((d, colour))

    def shows(colour):
        st, d = api("GET", "/api/desktops/" + name, timeout=20)
        if st != 200 or d["frame"] < 0:
            return False
        st, h, img = http("GET", "/api/desktops/%s/thumbnail" % name,
                          timeout=20)
        if st != 200:
            return False
        w, hh, rgb = bt.to_rgb(img, "jpeg" if "jpeg" in h["Content-Type"]
                               else "png")
        i = (400 * w + 600) * 3
        return (w, hh) == (640, 480) and near(rgb[i:i + 3], colour)

    try:
        for turn in range(5):
            d, colour = daemons[turn % 2]
            if turn:
                must("rm", name)
            must("attach", name, "--url", d.url, "--token-file",
                 d.token_file)
            bt.wait_for(lambda: shows(colour), 40,
                        "the live view of the flood's daemon %d" % turn)
            bt.wait_for(lambda: floods[turn % 2].pipes() > 0, 20,
                        "the live view to subscribe to the flood")
        # Back to a quiet source; the floods end, and MC lets go of them:
        # a new listener on a flood's port gets no subscriber (a dialer
        # kept would redial within its 5 s backoff).
        xq = bt.Xvfb("640x480")
        xq.run(["xsetroot", "-solid", "#ee00ee"])
        dq = bt.Daemon(xq, ["--scale", "none"])
        must("rm", name)
        must("attach", name, "--url", dq.url, "--token-file", dq.token_file)
        bt.wait_for(lambda: shows("ee00ee"), 40,
                    "the live view of the quiet daemon")
        for f in floods:
            f.stop()
        time.sleep(12)  # two of MC's checks, each every 5 s
        again = Flood(floods[0].url)
        time.sleep(8)
        assert again.pipes() == 0, "MC still dials the replaced source"
        again.stop()
        st, _ = api("GET", "/api/desktops/" + name, timeout=20)
        assert st == 200
    finally:
        for f in floods:
            f.stop()
        bureau("rm", name)


def test_reattached_desktop():
    """A desktop removed and attached again under its name, to another
    daemon: the live view follows the new one."""
    x2 = bt.Xvfb("640x480")
    d2 = bt.Daemon(x2, ["--scale", "none"])
    must("rm", NAME)
    must("attach", NAME, "--url", d2.url, "--token-file", d2.token_file)
    x2.run(["xsetroot", "-solid", "#ee7700"])

    def thumb():
        st, d = api("GET", "/api/desktops/" + NAME)
        if st != 200 or d["frame"] < 0:
            return False
        st, h, img = http("GET", "/api/desktops/%s/thumbnail" % NAME)
        w, hh, rgb = bt.to_rgb(img, "jpeg" if "jpeg" in
                               h["Content-Type"] else "png")
        i = (400 * w + 600) * 3
        return (w, hh) == (640, 480) and near(rgb[i:i + 3], "ee7700")
    bt.wait_for(thumb, 30, "the thumbnail of the new daemon")


def test_server_still_serving():
    """After all of the above (bad input included) the server runs, and a
    sanitized build (make SANITIZE=address,undefined) found nothing."""
    assert MC.poll() is None, open(MC_LOG).read()[-3000:]
    st, _ = api("GET", "/api/desktops")
    assert st == 200
    log = open(MC_LOG).read()
    assert "AddressSanitizer" not in log and "runtime error" not in log, \
        log[-3000:]


def test_page_logout():
    """The page's Log out ends its session: the page is gone, the cookie
    opens nothing after. Logged in again for what follows."""
    b = browser()
    b.get(BASE + "/")
    css('[data-action="logout"]').click()
    bt.wait_for(lambda: "log in first" in b.page_source, 10,
                "the logged-out page")
    b.get(BASE + "/api/desktops")
    assert "unauthorized" in b.page_source, b.page_source[:300]
    b.get(must("mission-control", "--listen", "127.0.0.1:%d" % PORT,
               "--print-url").strip())


if __name__ == "__main__":
    try:
        # doc_page_screenshots only makes the docs' pictures (MC_SHOTS=DIR)
        bt.run([(n, f) for n, f in list(globals().items())
                if callable(f) and (n.startswith("test_") or (
                    n.startswith("doc_") and os.environ.get("MC_SHOTS")))])
    finally:
        if B is not None:
            B.quit()
        for n in os.listdir(HOME) if os.path.isdir(HOME) else []:
            if os.path.exists(os.path.join(HOME, n, "desktop.json")):
                bureau("rm", n)
        if os.environ.get("MC_KEEP_HOME"):
            print("kept " + HOME)
        else:
            shutil.rmtree(HOME, ignore_errors=True)
