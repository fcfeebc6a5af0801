"""bt: bureau's integration-test helpers (standard library only).

A private Xvfb per test file, the real build/bureaud on a free port, a REQ
client over libnng (ctypes), and PASS/FAIL reporting that tests/run.sh
counts. Everything started is killed at exit, whatever happens.
"""

import atexit
import base64
import ctypes
import ctypes.util
import faulthandler
import hashlib
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import weakref

BUILD = os.environ.get("BUREAU_BUILD", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build"))
BUILD = os.path.abspath(BUILD)

# tests/run.sh sends SIGUSR1 to a test that is about to time out: its
# threads' Python stacks then land in the log (a hang seen once in CI says
# where it was).
faulthandler.register(signal.SIGUSR1, all_threads=True)

_procs = []
_results = {"passed": 0, "failed": 0}


def _cleanup():
    # Every REQ socket still open first, before the daemons they talk to.
    for r in list(_reqs):
        r.close()
    for p in reversed(_procs):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
    deadline = time.time() + 5
    for p in reversed(_procs):
        try:
            p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass


atexit.register(_cleanup)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))


def spawn(argv, env=None, stdout=None, stderr=None, stdin=subprocess.DEVNULL,
          **kw):
    """Start a process in its own group; killed at exit."""
    p = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr,
                         stdin=stdin, start_new_session=True, **kw)
    _procs.append(p)
    return p


def _ephemeral_low():
    """The first port the kernel hands out as a connection's source port."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Ports in this range that Chromium refuses to load (ERR_UNSAFE_PORT, its
# net/base/port_util.cc): a page test on one fails at once. 10080 did, in
# test_mission_control.
BROWSER_UNSAFE_PORTS = {10080}


PORT_CLAIMS = "/tmp/bureau-test-ports"
PORT_CLAIM_TTL_S = 3600


def _claim_port(p):
    """Claim port P for this run against every other bureau test run on
    the machine: a file made with O_EXCL, stale after an hour (a run's
    tests bind what they pick within seconds). Checking that a port is
    free and binding it later is a race between runs: two CI runs picked
    the same port, and one's test talked to the other's daemon."""
    os.makedirs(PORT_CLAIMS, mode=0o777, exist_ok=True)
    path = os.path.join(PORT_CLAIMS, str(p))
    try:
        if time.time() - os.stat(path).st_mtime > PORT_CLAIM_TTL_S:
            os.unlink(path)
    except OSError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    os.write(fd, b"%d\n" % os.getpid())
    os.close(fd)
    return True


def port_window():
    """The first of 30 ports claimed for this test's desktops, as
    tests/lib/ports.sh claims them (a directory wLO made with mkdir in
    the same place, stale after an hour): a window picked at random
    without a claim met single ports and other suites' windows once
    tests/run.sh ran two suites at once."""
    os.makedirs(PORT_CLAIMS, mode=0o777, exist_ok=True)
    for _ in range(200):
        lo = 20000 + random.randrange(400) * 30
        path = os.path.join(PORT_CLAIMS, "w%d" % lo)
        try:
            if time.time() - os.stat(path).st_mtime > PORT_CLAIM_TTL_S:
                os.rmdir(path)
        except OSError:
            pass
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return lo
    raise RuntimeError("no free window of 30 ports in " + PORT_CLAIMS)


def free_port(pair=True):
    """A free TCP port P on 127.0.0.1 (and P+1 free too when pair), below
    the ephemeral range: a port there can be taken as the source port of
    any outgoing connection (a client dialling before the daemon listens
    included) between this check and the daemon's bind, which failed a CI
    run with 'Address in use'. Never one a browser refuses, never one
    another test run on this machine claimed (see _claim_port)."""
    # 10000-19999: ports.sh gives the e2e tests windows in 20000 on.
    hi = min(19998, max(12000, _ephemeral_low() - 2))
    for _ in range(500):
        p = random.randint(10000, hi)
        ports = [p, p + 1] if pair else [p]
        if BROWSER_UNSAFE_PORTS & set(ports):
            continue
        ok = True
        for q in ports:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", q))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok and all(_claim_port(q) for q in ports):
            return p
    raise RuntimeError("no free port")


def start_xvfb(args, timeout=60):
    """Start Xvfb with args (not the display: it picks one) and wait
    until it is ready. Returns (Popen, display number)."""
    r, w = os.pipe()
    try:
        proc = spawn(["Xvfb", "-displayfd", str(w)] + list(args),
                     stderr=subprocess.DEVNULL, pass_fds=(w,))
    finally:
        os.close(w)
    line = b""
    try:
        deadline = time.time() + timeout
        while not line.endswith(b"\n"):
            left = deadline - time.time()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                raise RuntimeError("Xvfb gave no display in %d s" % timeout)
            chunk = os.read(r, 16)
            if not chunk:  # exited before it was ready
                raise RuntimeError("Xvfb exited: %s" % proc.wait(5))
            line += chunk
    finally:
        os.close(r)
    return proc, int(line)


def wait_for(pred, timeout=10.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise TimeoutError("timed out waiting for " + what)


class Xvfb:
    """A private Xvfb. The server picks a free display number itself
    (-displayfd: it takes the first whose lock it can create, atomically)
    and writes it to a pipe once it accepts connections: no guessing
    from /tmp/.X*-lock, which raced with other test runs and could hand
    two runs the same display."""

    def __init__(self, size="1280x800", wm=False, args=()):
        self.proc, self.num = start_xvfb(["-screen", "0", size + "x24",
                                          "-nolisten", "tcp", "-noreset"] +
                                         list(args))
        self.name = ":%d" % self.num
        self.env = dict(os.environ, DISPLAY=self.name, LC_ALL="C.UTF-8")
        if wm:
            spawn(["openbox"], env=self.env, stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL)
            time.sleep(0.5)

    def run(self, argv, **kw):
        return subprocess.run(argv, env=self.env, capture_output=True,
                              text=True, **kw)

    def spawn(self, argv, **kw):
        return spawn(argv, env=self.env, **kw)

    def xwd_pixels(self):
        """The root window as (width, height, rows of (r,g,b) bytes) read
        by xwd, independently of bureaud."""
        raw = subprocess.run(["xwd", "-root", "-silent", "-display",
                              self.name], capture_output=True,
                             check=True).stdout
        return parse_xwd(raw)


def to_rgb(data, fmt):
    """Decode an image with ImageMagick (independent of bureaud's encoder)
    into (width, height, RGB bytes)."""
    size = subprocess.run(["identify", "-format", "%w %h", fmt + ":-"],
                          input=data, capture_output=True, check=True).stdout
    w, h = map(int, size.split())
    rgb = subprocess.run(["convert", fmt + ":-", "-depth", "8", "rgb:-"],
                         input=data, capture_output=True, check=True).stdout
    assert len(rgb) == w * h * 3
    return w, h, rgb


def parse_xwd(raw):
    return to_rgb(raw, "xwd")


def decode_png(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return to_rgb(data, "png")


# --- nng REQ client over libnng (ctypes) -----------------------------------

# The nng that bureau links (third_party/nng, built by the Makefile as a
# shared library for this), never the system's libnng: Debian 12's 1.5.2
# can hang in nng_close.
NNG_LIB = os.path.join(BUILD, "nng-shared", "libnng.so.1")
_nng = ctypes.CDLL(NNG_LIB)
_nng.nng_strerror.restype = ctypes.c_char_p
# nng's statistics (Req.dialer_stats): pointers, not ints
_nng.nng_stat_find_dialer.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
_nng.nng_stat_find_dialer.restype = ctypes.c_void_p
_nng.nng_stat_child.argtypes = [ctypes.c_void_p]
_nng.nng_stat_child.restype = ctypes.c_void_p
_nng.nng_stat_next.argtypes = [ctypes.c_void_p]
_nng.nng_stat_next.restype = ctypes.c_void_p
_nng.nng_stat_name.argtypes = [ctypes.c_void_p]
_nng.nng_stat_name.restype = ctypes.c_char_p
_nng.nng_stat_value.argtypes = [ctypes.c_void_p]
_nng.nng_stat_value.restype = ctypes.c_uint64
_nng.nng_stats_free.argtypes = [ctypes.c_void_p]
NNG_FLAG_ALLOC = 1
NNG_ETIMEDOUT = 5


class NngError(Exception):
    def __init__(self, rv):
        super().__init__(_nng.nng_strerror(rv).decode())
        self.rv = rv


def _chk(rv):
    if rv != 0:
        raise NngError(rv)


def _recv(sock):
    """One message from sock, as bytes (nng allocates, we copy and free)."""
    buf = ctypes.c_void_p()
    size = ctypes.c_size_t()
    _chk(_nng.nng_recv(sock, ctypes.byref(buf), ctypes.byref(size),
                       NNG_FLAG_ALLOC))
    out = ctypes.string_at(buf, size.value)
    _nng.nng_free(buf, size)
    return out


_reqs = weakref.WeakSet()  # open Req sockets, closed by _cleanup


class Req:
    """One REQ socket: send a message, receive the reply.

    Requests are never resent: a connection that drops (the daemon
    dropped an oversized request, say) fails the rpc at once with
    NngError rather than sending the request again on the next one.
    """

    def __init__(self, url, timeout_ms=30000, recv_max=256 << 20):
        self.sock = ctypes.c_uint32(0)
        _chk(_nng.nng_req0_open(ctypes.byref(self.sock)))
        _nng.nng_socket_set_ms(self.sock, b"recv-timeout",
                               ctypes.c_int32(timeout_ms))
        _nng.nng_socket_set_ms(self.sock, b"send-timeout",
                               ctypes.c_int32(timeout_ms))
        _nng.nng_socket_set_ms(self.sock, b"req:resend-time",
                               ctypes.c_int32(-1))  # infinite: never
        _nng.nng_socket_set_ms(self.sock, b"reconnect-time-min",
                               ctypes.c_int32(100))
        _nng.nng_socket_set_size(self.sock, b"recv-size-max",
                                 ctypes.c_size_t(recv_max))
        self.dialer = ctypes.c_uint32(0)
        _chk(_nng.nng_dial(self.sock, url.encode(), ctypes.byref(
            self.dialer), 2))  # nonblock
        _reqs.add(self)

    def __del__(self):
        self.close()

    def dialer_stats(self):
        """{name: value} of nng's own statistics of this socket's dialer:
        pipes (connections now), connect, refused, disconnect, ..."""
        root = ctypes.c_void_p()
        _chk(_nng.nng_stats_get(ctypes.byref(root)))
        try:
            d = _nng.nng_stat_find_dialer(root, self.dialer)
            out = {}
            c = _nng.nng_stat_child(d) if d else None
            while c:
                out[_nng.nng_stat_name(c).decode()] = _nng.nng_stat_value(c)
                c = _nng.nng_stat_next(c)
            return out
        finally:
            _nng.nng_stats_free(root)

    def rpc(self, data):
        if isinstance(data, str):
            data = data.encode()
        _chk(_nng.nng_send(self.sock, data, ctypes.c_size_t(len(data)), 0))
        return _recv(self.sock)

    def close(self):
        """Close the socket, whatever is in flight: the nng built from
        third_party/nng never waits for the peer here
        (tests/unit/test_nng_close.c)."""
        if getattr(self, "sock", None) is None:
            return
        _nng.nng_close(self.sock)
        self.sock = None


class Req1(Req):
    """A Req for one request, closed by rpc() itself."""

    def rpc(self, data):
        try:
            return super().rpc(data)
        finally:
            self.close()


_sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
EVENTS_CONTEXT = b"bureau-events-v1"
EVENTS_NONCE = 24  # crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
EVENTS_TAG = 16    # crypto_aead_xchacha20poly1305_ietf_ABYTES


class EventTampered(Exception):
    """An event that does not decrypt with the key (forged, altered or
    sealed with another token)."""


def events_key(token):
    """The events key as docs/protocol.md defines it, computed with Python's
    own BLAKE2b (not bureaud's code)."""
    return hashlib.blake2b(token.encode(), key=EVENTS_CONTEXT,
                           digest_size=32).digest()


def events_open(key, msg):
    """Decrypt one sealed event: "<topic> " in clear, nonce, ciphertext of
    the rest with the clear prefix as associated data. Returns the plain
    form "<topic> <rest>"."""
    sp = msg.index(b" ") + 1
    ad, nonce, ct = msg[:sp], msg[sp:sp + EVENTS_NONCE], \
        msg[sp + EVENTS_NONCE:]
    if len(nonce) != EVENTS_NONCE or len(ct) < EVENTS_TAG:
        raise EventTampered("event too short")
    out = ctypes.create_string_buffer(max(1, len(ct) - EVENTS_TAG))
    outlen = ctypes.c_ulonglong()
    if _sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
            out, ctypes.byref(outlen), None, ct, ctypes.c_ulonglong(len(ct)),
            ad, ctypes.c_ulonglong(len(ad)), nonce, key) != 0:
        raise EventTampered("event does not decrypt")
    return ad + out.raw[:outlen.value]


class Sub:
    """A SUB socket on bureaud's events. With the daemon's token, recv()
    decrypts each event and returns its plain form; raw() returns the bytes
    as received."""

    def __init__(self, url, topic=b"", timeout_ms=5000, token=None):
        self.key = events_key(token) if token is not None else None
        self.sock = ctypes.c_uint32(0)
        _chk(_nng.nng_sub0_open(ctypes.byref(self.sock)))
        _chk(_nng.nng_socket_set(self.sock, b"sub:subscribe", topic,
                                 ctypes.c_size_t(len(topic))))
        _nng.nng_socket_set_ms(self.sock, b"recv-timeout",
                               ctypes.c_int32(timeout_ms))
        _chk(_nng.nng_dial(self.sock, url.encode(), None, 2))  # nonblock

    def raw(self):
        return _recv(self.sock)

    def recv(self):
        msg = _recv(self.sock)
        return events_open(self.key, msg) if self.key is not None else msg

    def __del__(self):
        self.close()

    def close(self):
        if getattr(self, "sock", None) is None:
            return
        _nng.nng_close(self.sock)
        self.sock = None


class Daemon:
    """The real build/bureaud on a private display and a free port."""

    def __init__(self, display, args=(), token="t0ken-" + "%08x" %
                 random.getrandbits(32), env=None):
        self.port = free_port()
        self.url = "tcp://127.0.0.1:%d" % self.port
        self.events = "tcp://127.0.0.1:%d" % (self.port + 1)
        self.token = token
        self.dir = tempfile.mkdtemp(prefix="bureau-test-")
        argv = [os.path.join(BUILD, "bureaud"), "--display", display.name,
                "--listen", self.url]
        if token is not None:
            self.token_file = os.path.join(self.dir, "token")
            with open(self.token_file, "w") as f:
                f.write(token + "\n")
            os.chmod(self.token_file, 0o600)
            argv += ["--token-file", self.token_file]
        argv += list(args)
        self.log = open(os.path.join(self.dir, "bureaud.log"), "wb")
        self.proc = spawn(argv, env=env or display.env, stdout=self.log,
                          stderr=self.log)
        wait_for(self._ready, 15, "bureaud to answer")
        # D.req is dialed once bureaud listens, and connected (a ping
        # through it) before we return. Dialed right after the spawn, its
        # connect was refused and nng's redial timer (a random 0-100 ms,
        # reconnect-time-min) made the connection whenever it fired,
        # often after __init__ had returned: a test that counts this
        # process's descriptors then saw one more than it started with
        # (test_client_limits' client_bt_req_close_cycles, when nothing
        # had used D.req before it: 4 false leaks in 32 runs).
        self.req = Req(self.url)
        self.req.rpc(self._ping())

    def _ping(self):
        return json.dumps({"tool": "system", "action": "ping",
                           "token": self.token})

    def _ready(self):
        if self.proc.poll() is not None:
            raise RuntimeError("bureaud exited: " + self.logtext())
        try:
            r = Req(self.url, timeout_ms=1000)
            try:
                r.rpc(self._ping())
            finally:
                r.close()
            return True
        except NngError:
            return False

    def logtext(self):
        with open(os.path.join(self.dir, "bureaud.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def call(self, req=None, **fields):
        msg = dict(req or {}, **fields)
        if self.token is not None and "token" not in msg:
            msg["token"] = self.token
        return json.loads(self.req.rpc(json.dumps(msg)))

    def raw(self, data):
        return json.loads(self.req.rpc(data))

    def shot_pixels(self, reply):
        img = reply["image"]
        assert img["mime_type"] == "image/png"
        return decode_png(base64.b64decode(img["data"]))

    def alive(self):
        return self.proc.poll() is None and self.call(
            tool="system", action="ping").get("ok") is True

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        self.req.close()


# --- the host side: a private desktop store, agents, a browser --------------

class Home:
    """A private $BUREAU_HOME with a port window of its own (below the
    ephemeral ports, see free_port), and the real build/bureau run in it."""

    def __init__(self, prefix="bureau-home-"):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        base = port_window()
        self.env = dict(os.environ, BUREAU_HOME=self.dir,
                        BUREAU_PORTS="%d-%d" % (base, base + 29))
        self.bureau = os.path.join(BUILD, "bureau")

    def run(self, *args, timeout=60, input=None):
        return subprocess.run([self.bureau] + list(args), env=self.env,
                              capture_output=True, text=True,
                              timeout=timeout, input=input)

    def must(self, *args, input=None):
        p = self.run(*args, input=input)
        assert p.returncode == 0, "bureau %s: %d %s %s" % (
            " ".join(args), p.returncode, p.stdout, p.stderr)
        return p.stdout

    def path(self, name, *rest):
        return os.path.join(self.dir, name, *rest)

    def cleanup(self, *names):
        """Remove these desktops (their agents end) and the store."""
        for n in names:
            if os.path.exists(self.path(n, "desktop.json")):
                self.run("rm", n)
        shutil.rmtree(self.dir, ignore_errors=True)


class AgentClient:
    """A client of a desktop's host agent (its endpoint and agent token in
    the store), one REQ socket per call so that calls may run on several
    threads."""

    def __init__(self, home, name):
        with open(home.path(name, "endpoint")) as f:
            self.url = f.read().strip()
        with open(home.path(name, "token")) as f:
            self.token = f.read().strip()

    def call(self, timeout_ms=60000, **req):
        req["token"] = self.token
        return json.loads(Req1(self.url, timeout_ms=timeout_ms).rpc(
            json.dumps(req)))


def chromium(size="1400,900", log=False):
    """A real headless Chromium (python3-selenium, chromium-driver)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    o = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage", "--window-size=" + size):
        o.add_argument(a)
    o.binary_location = "/usr/bin/chromium"
    if log:
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"),
                            options=o)


# --- reporting -------------------------------------------------------------

def check(name, fn):
    """Run one test function; print PASS/FAIL for tests/run.sh."""
    t0 = time.time()
    try:
        fn()
    except Exception:
        _results["failed"] += 1
        print("FAIL %s (%.2fs)" % (name, time.time() - t0), flush=True)
        for line in traceback.format_exc().rstrip().split("\n"):
            print("    " + line, flush=True)
        return False
    _results["passed"] += 1
    print("PASS %s (%.2fs)" % (name, time.time() - t0), flush=True)
    return True


def run(tests):
    """tests: list of (name, fn). Exit status 1 if any failed."""
    for name, fn in tests:
        check(name, fn)
    sys.exit(1 if _results["failed"] else 0)


def ok(reply):
    """The reply, after checking it succeeded (its error in the message,
    long text fields cut)."""
    assert reply.get("ok") is True, "request failed: %r" % (
        {k: (v[:80] + "..." if isinstance(v, str) and len(v) > 80 else v)
         for k, v in reply.items() if k != "image"},)
    return reply


def sanitized(proc):
    """Is this process an ASan build?"""
    with open("/proc/%d/maps" % proc.pid) as f:
        return "libasan" in f.read()


def proc_stat(pid):
    """(state, ppid, pgrp, session) from /proc/PID/stat, or None when gone,
    read independently of bureaud."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    f = s[s.rindex(")") + 2:].split()
    return f[0], int(f[1]), int(f[2]), int(f[3])


def _scan_procs(pred):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_stat(int(d))
            if st is not None and pred(st):
                out.append(int(d))
    return out


def children(pid, state=None):
    """Children of pid (in that state, e.g. "Z", when given)."""
    return _scan_procs(lambda st: st[1] == pid and (state is None or
                                               st[0] == state))


def thread_stacks(pids):
    """Each thread's C stack of pids as gdb sees them (text), for a test
    to print when a call into them hangs: a hang seen once in CI then
    names its cause. Threads with the same stack (idle nng workers) are
    shown once with their count, so that the whole of it fits in the tail
    of a log that CI keeps; put the pid that matters most last. Empty
    when gdb is not installed."""
    if shutil.which("gdb") is None:
        return ""
    out = []
    for p in pids:
        try:
            r = subprocess.run(["gdb", "-p", str(p), "-batch", "-nx", "-ex",
                                "thread apply all bt 30"],
                               capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            out.append("== pid %d: gdb timed out" % p)
            continue
        threads = []  # [(first line, [frames])]
        for ln in r.stdout.splitlines():
            if ln.startswith("Thread"):
                threads.append((ln, []))
            elif ln.startswith("#") and threads:
                threads[-1][1].append(ln)
        groups = {}  # the stack's functions -> [names, frames]
        for head, frames in threads:
            short = []
            for f in frames:  # "#3 fn at file:line", no arguments
                fn = re.sub(r"^#\d+\s+(0x[0-9a-f]+ in )?", "",
                            f).split(" (")[0]
                where = re.search(r"\) (at \S+|from \S+)$", f)
                short.append("  %s%s" % (fn, " " + where.group(1)
                                         if where else ""))
            g = groups.setdefault(tuple(short), [[], short])
            g[0].append(head.split(" (")[0])
        out.append("== pid %d: %d threads" % (p, len(threads)))
        for names, frames in groups.values():
            out.append("%s%s:" % (names[0], " and %d more like it" % (
                len(names) - 1) if len(names) > 1 else ""))
            out += frames
    return "\n".join(out)


def live_in_group(pgid):
    """Processes of group pgid that are not zombies."""
    return _scan_procs(lambda st: st[2] == pgid and st[0] != "Z")


def expect_error(reply, code, field=None):
    assert reply.get("ok") is False, "expected an error, got %r" % (
        {k: v for k, v in reply.items() if k != "image"},)
    err = reply["error"]
    assert err["code"] == code, "expected %s, got %r" % (code, err)
    assert err["message"], "empty message"
    if field is not None:
        assert field in err["message"], "message %r does not name %r" % (
            err["message"], field)
    return err
