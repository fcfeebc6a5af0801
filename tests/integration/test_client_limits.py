#!/usr/bin/env python3
"""The clients' size limits, against peers that break the rules.

A hostile "daemon" (a raw TCP peer speaking nng's SP handshake, so it can
announce any length without holding the bytes) answers every request with
a reply far over the client's limit. The clients (the `bureau` CLI over
libbureau.a, the Python module over libbureau.so) must fail at once with a
typed error naming the limit, and their peak RSS, read by the kernel
(wait4's ru_maxrss), must stay far below the reply's size.

Then a real bureaud with a small --max-request: `system info` reports it,
and the clients refuse a larger request themselves (too_large, naming the
limit) instead of sending it for nng to drop.

    tests/integration/test_client_limits.py [BUILD_DIR]
"""

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if len(sys.argv) > 1:
    os.environ["BUREAU_BUILD"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import bt  # noqa: E402

BUREAU = os.path.join(bt.BUILD, "bureau")
LIBBUREAU = os.path.join(bt.BUILD, "libbureau.so")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else \
    sys.executable
HUGE = 256 << 20        # what the hostile peer announces: 2x the default
DEFAULT_MAX = 128 << 20  # BUREAU_DEFAULT_MAX_REPLY
RSS_BOUND_KB = 64 << 10  # far below HUGE; a client that takes it is over


def _sanitizer_env():
    """Python can load a sanitized libbureau.so only with the runtimes
    preloaded (as test_client.sh does)."""
    env = dict(os.environ, BUREAU_LIB=LIBBUREAU,
               PYTHONPATH=os.path.join(ROOT, "host-bridge", "python"))
    pre = []
    for name in os.listdir(bt.BUILD):
        if name.startswith(".variant-san-"):
            for s in name[len(".variant-san-"):].split("-"):
                lib = {"address": "libasan.so", "undefined": "libubsan.so"
                       }.get(s)
                if lib:
                    pre.append(subprocess.run(
                        ["cc", "-print-file-name=" + lib], text=True,
                        capture_output=True).stdout.strip())
    if pre:
        env["LD_PRELOAD"] = " ".join(pre)
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


PYENV = _sanitizer_env()


class Hostile:
    """A REP peer on a raw TCP socket: completes nng's SP handshake (REP is
    protocol 0x31, REQ 0x30), reads each request, and answers it with a
    header announcing `size` bytes, then streams zeros until the client
    hangs up. Counts the requests it saw and the bytes it got out."""

    def __init__(self, size):
        self.size = size
        self.requests = 0
        self.sent = 0
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.url = "tcp://127.0.0.1:%d" % self.lsock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,),
                             daemon=True).start()

    @staticmethod
    def _read(conn, n):
        buf = b""
        while len(buf) < n:
            b = conn.recv(n - len(buf))
            if not b:
                raise EOFError
            buf += b
        return buf

    def _serve(self, conn):
        try:
            conn.sendall(b"\0SP\0" + struct.pack(">HH", 0x31, 0))
            hello = self._read(conn, 8)
            assert hello[:4] == b"\0SP\0"
            while True:
                n = struct.unpack(">Q", self._read(conn, 8))[0]
                req = self._read(conn, n)
                self.requests += 1
                # the reply carries the request's 4-byte id back first
                conn.sendall(struct.pack(">Q", self.size) + req[:4])
                zeros = bytes(1 << 20)
                left = self.size - 4
                while left > 0:
                    k = conn.send(zeros[:min(left, len(zeros))])
                    self.sent += k
                    left -= k
        except (OSError, EOFError, AssertionError):
            pass
        finally:
            conn.close()

    def close(self):
        self.lsock.close()


def run_measured(argv, env=None, timeout=60):
    """Run argv; (exit status, stdout, stderr, peak RSS in KiB, seconds),
    the peak as the kernel accounted it for that child alone (wait4)."""
    t0 = time.time()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    got = {}

    def drain(name, f):
        got[name] = f.read()
    readers = [threading.Thread(target=drain, args=(n, f)) for n, f in
               (("out", p.stdout), ("err", p.stderr))]
    for r in readers:
        r.start()
    deadline = t0 + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.time() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.02)
    for r in readers:
        r.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, got["out"], got["err"], ru.ru_maxrss, \
        time.time() - t0


PING = '{"tool":"system","action":"ping"}'

PY_CALL = r"""
import json, sys, bureau
url, max_reply = sys.argv[1], sys.argv[2]
kw = {} if max_reply == "-" else {"max_reply": int(max_reply)}
try:
    with bureau.Desktop(url, token="t", timeout=20, **kw) as d:
        d.ping()
    print(json.dumps({"raised": None}))
except bureau.Error as e:
    print(json.dumps({"raised": type(e).__name__, "code": e.code,
                      "message": e.message}))
"""


def test_cli_hostile_reply():
    h = Hostile(HUGE)
    try:
        rc, out, err, rss, dt = run_measured(
            [BUREAU, "call", "--url", h.url, "--timeout", "20", PING])
    finally:
        h.close()
    print("# cli: exit %d in %.2f s, peak RSS %d KiB, peer sent %d MiB"
          % (rc, dt, rss, h.sent >> 20))
    assert h.requests >= 1, "the request never reached the peer"
    assert rc == 3, "exit %d, stderr %r" % (rc, err)
    assert "io_error" in err and str(DEFAULT_MAX) in err, err
    assert not out, out
    assert rss < RSS_BOUND_KB, "peak RSS %d KiB" % rss
    # failed at once, not after the 20 s timeout
    assert dt < 10, "took %.1f s" % dt


def test_python_hostile_reply():
    h = Hostile(HUGE)
    try:
        rc, out, err, rss, dt = run_measured(
            [PY, "-c", PY_CALL, h.url, "-"], env=PYENV)
    finally:
        h.close()
    print("# python: exit %d in %.2f s, peak RSS %d KiB" % (rc, dt, rss))
    assert rc == 0, err
    r = json.loads(out)
    assert r["raised"] == "IoError" and r["code"] == "io_error", r
    assert str(DEFAULT_MAX) in r["message"], r
    assert rss < RSS_BOUND_KB, "peak RSS %d KiB" % rss
    assert dt < 10, "took %.1f s" % dt


def test_python_max_reply_option():
    # 2 MiB announced against a 1 MiB limit chosen by the caller
    h = Hostile(2 << 20)
    try:
        rc, out, err, rss, dt = run_measured(
            [PY, "-c", PY_CALL, h.url, str(1 << 20)], env=PYENV)
    finally:
        h.close()
    assert rc == 0, err
    r = json.loads(out)
    assert r["raised"] == "IoError" and str(1 << 20) in r["message"], r
    assert dt < 10, "took %.1f s" % dt


def test_max_reply_argument_checked():
    code = ("import bureau\ntry:\n    bureau.Desktop('tcp://127.0.0.1:9', "
            "max_reply=10)\nexcept bureau.Error as e:\n    print(e.code, "
            "e.message)\n")
    r = subprocess.run([PY, "-c", code], env=PYENV, capture_output=True,
                       text=True, timeout=30)
    assert r.stdout.startswith("bad_argument") and "max reply" in \
        r.stdout, (r.stdout, r.stderr)


def test_max_request(D):
    limit = 65536
    info = bt.ok(D.call(tool="system", action="info"))
    assert info.get("max_request") == limit, info.get("max_request")

    # Just under the limit (nng counts REQ's 4-byte id): sent and answered.
    # The daemon sees the request: it answers invalid_argument for the
    # unknown action naming it, which proves it arrived whole.
    def req_of(n):
        base = {"tool": "system", "action": "", "token": D.token, "id": 1}
        pad = n - len(json.dumps(base, separators=(",", ":")))
        base["action"] = "x" * pad
        s = json.dumps(base, separators=(",", ":"))
        assert len(s) == n
        return s
    # the CLI adds nothing to a request that has its token and id
    rc, out, err, _, dt = run_measured(
        [BUREAU, "call", "--url", D.url, "--timeout", "10",
         req_of(limit - 4)])
    assert rc == 1 and '"unknown_action"' in out, (rc, out[:200], err)

    # One byte more: refused locally, at once, naming the limit.
    rc, out, err, _, dt = run_measured(
        [BUREAU, "call", "--url", D.url, "--timeout", "10",
         req_of(limit - 3)])
    assert rc == 1 and "too_large" in err and str(limit) in err, (rc, err)
    assert dt < 5, "took %.1f s" % dt

    code = ("import bureau, sys\nd = bureau.Desktop(sys.argv[1], "
            "token=sys.argv[2], timeout=10)\ntry:\n    d.file_write("
            "'/tmp/never-written-%d', b'x' * 100000)\nexcept "
            "bureau.TooLarge as e:\n    print('TooLarge', e.message)\n"
            "print(d.ping()['output'])\n" % os.getpid())
    r = subprocess.run([PY, "-c", code, D.url, D.token], env=PYENV,
                       capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("TooLarge") and \
        str(limit) in lines[0] and lines[1] == "pong", (r.stdout, r.stderr)
    assert not os.path.exists("/tmp/never-written-%d" % os.getpid())
    assert D.alive()


def _proc_counts(pid="self"):
    """(open fds, threads) of a process, as the kernel lists them."""
    return (len(os.listdir("/proc/%s/fd" % pid)),
            len(os.listdir("/proc/%s/task" % pid)))


def _fd_targets(pid="self"):
    """{fd: what it is}: the link, and for a socket where the kernel lists
    it (/proc/net: tcp and tcp6 with state and ends, udp, unix, netlink),
    so that a leak says what leaked: a connection nng was still making
    (SYN_SENT, or established and never handed to a pipe), the netlink
    socket of a getaddrinfo still running on nng's resolver thread, or
    something else."""
    states = {"01": "ESTABLISHED", "02": "SYN_SENT", "06": "TIME_WAIT",
              "07": "CLOSE", "08": "CLOSE_WAIT", "0A": "LISTEN"}
    socks = {}
    for table in ("tcp", "tcp6", "udp", "udp6", "unix", "netlink"):
        try:
            with open("/proc/net/" + table) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            w = line.split()
            if table.startswith("tcp"):
                socks[w[9]] = "%s %s %s->%s" % (
                    table, states.get(w[3], w[3]), w[1], w[2])
            elif table.startswith("udp"):
                socks[w[9]] = table
            elif table == "unix" and len(w) >= 7:
                socks[w[6]] = "unix " + (w[7] if len(w) > 7 else "")
            elif table == "netlink" and len(w) >= 10:
                socks[w[9]] = "netlink protocol %s" % w[1]
    out = {}
    d = "/proc/%s/fd" % pid
    for fd in os.listdir(d):
        try:
            t = os.readlink(os.path.join(d, fd))
        except OSError:
            continue
        if t.startswith("socket:["):
            t += " " + socks.get(t[8:-1], "(not in /proc/net)")
            if pid == "self":  # its family and type, from the socket
                try:
                    so = socket.socket(fileno=int(fd))
                    t += " %s %s" % (so.family.name, so.type.name)
                    so.detach()
                except (OSError, ValueError):
                    pass
        out[fd] = t
    return out


def _fd_links(pid="self"):
    """{fd: its link}. A socket's link (socket:[inode]) names that one
    socket for as long as it lives, so a descriptor with the same number
    and link at two moments is the same descriptor, and a number closed
    and reused for something else is not."""
    out = {}
    d = "/proc/%s/fd" % pid
    for fd in os.listdir(d):
        try:
            out[fd] = os.readlink(os.path.join(d, fd))
        except OSError:
            pass  # closed meanwhile (listdir's own descriptor among them)
    return out


def _settled_new(start, threads, pid="self", wait_s=30.0):
    """({fd: link} of the descriptors open now that were not open at
    `start`, threads now), once there are none and no more threads than
    `threads`, or after wait_s. nng closes a socket's pipes on its reaper
    thread after nng_close has returned, and a redial's address lookup
    (getaddrinfo with AI_ADDRCONFIG, which opens a netlink socket) may
    still be running on its resolver thread: on a loaded machine their
    descriptors outlive the close for a moment (CI saw 8 -> 9 right after
    it); a leak is a descriptor that stays.

    Judged by identity, not by count: counted, a descriptor that was
    still closing when the count at the start was taken (the last warm-up
    connection, nng's reaper not done with it: one run in ten here) made
    room for one that leaked. The socket not in /proc/net that CI saw stay
    (10 -> 11, about one run in nine) was nng's: a close while the
    dialer's redial exchanged its SP headers kept that connection for
    good (third_party/nng/BUREAU.md, fix 4; test_nng_close's dial/close
    cases). Measured again with the client's nng built without fix 4:
    this test failed so once in 80 runs here, and closes timed into the
    redial (reconnect-time-min 1 ms, a close 0-3 ms after each dropped
    request) kept 1 to 4 such sockets in 1000. With fix 4 it passed 296
    runs (plain and sanitized daemon, up to three busy loops beside), and
    3300 such closes kept none."""
    deadline = time.monotonic() + wait_s
    while True:
        new = {fd: t for fd, t in _fd_links(pid).items()
               if start.get(fd) != t}
        now = _proc_counts(pid)[1]
        if (not new and now <= threads) or time.monotonic() > deadline:
            return new, now
        time.sleep(0.05)


def test_fd_judgement():
    """The close cycles' judgement, on descriptors of our own: one still
    open at the start that closes (as nng's reaper closes the last
    warm-up connection) leaves no room for one that stays; one that
    closes late is waited for."""
    transient = socket.socket()
    start = _fd_links()
    threads = _proc_counts()[1]
    transient.close()
    stays = socket.socket()
    try:
        new, _ = _settled_new(start, threads, wait_s=0.3)
        assert new == {str(stays.fileno()): _fd_links()[
            str(stays.fileno())]}, new
        threading.Timer(0.2, stays.close).start()
        new, _ = _settled_new(start, threads, wait_s=5)
        assert not new, new
    finally:
        stays.close()


def test_daemon_req_connected(D):
    """bt.Daemon returns with its own socket (D.req) connected by a dial
    that bureaud answered, not by nng's redial timer, which could fire
    after Daemon() had returned and add a descriptor in the middle of a
    test that judges them (client_bt_req_close_cycles). nng's own
    statistics of D.req's dialer say both."""
    st = D.req.dialer_stats()
    assert st.get("pipes") == 1 and st.get("refused") == 0, st


def test_bt_req_close_cycles(D):
    """bt.Req closes its socket now (it used to leave it open for fear of
    nng_close hanging): 1000 open/request/close cycles, one in ten a
    request over the daemon's --max-request, which nng drops together with
    the connection. Every descriptor open at the end was open at the
    start."""
    big = json.dumps({"tool": "system", "action": "ping", "token": D.token,
                      "pad": "x" * 100000})
    ping = json.dumps({"tool": "system", "action": "ping",
                       "token": D.token})
    for _ in range(5):  # nng starts its threads on the first sockets
        r = bt.Req(D.url, timeout_ms=10000)
        r.rpc(ping)
        r.close()
    start = _fd_links()
    before = _proc_counts()
    t0 = time.time()
    worst, drops = 0.0, 0
    for i in range(1000):
        t = time.time()
        r = bt.Req(D.url, timeout_ms=10000)
        if i % 10 == 9:
            try:
                r.rpc(big)
                raise AssertionError("an oversized request was answered")
            except bt.NngError as e:
                assert e.rv != bt.NNG_ETIMEDOUT, "timed out, not dropped"
                drops += 1
        else:
            assert json.loads(r.rpc(ping))["output"] == "pong"
        r.close()
        worst = max(worst, time.time() - t)
    new, threads = _settled_new(start, before[1])
    after = _proc_counts()
    print("# bt.Req: 1000 cycles in %.1f s (slowest %.2f s), %d drops; "
          "fds, threads %r -> %r" % (time.time() - t0, worst, drops,
                                     before, after))
    assert drops == 100
    # a cycle is a loopback round trip: 10 s means a hang or a timeout
    assert worst < 10, "slowest cycle %.1f s" % worst
    what = _fd_targets()
    assert not new, {fd: what.get(fd, t) for fd, t in new.items()}
    assert threads <= before[1], (before, after)
    assert D.alive()


PY_CYCLES = r"""
import json, os, sys, time, bureau
url, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def counts():
    return (len(os.listdir("/proc/self/fd")),
            len(os.listdir("/proc/self/task")))
def settled(before):
    # nng's reaper closes the last pipes just after close() returns
    deadline = time.time() + 5
    while True:
        now = counts()
        if (now[0] <= before[0] and now[1] <= before[1]) or \
                time.time() > deadline:
            return now
        time.sleep(0.05)
for _ in range(5):
    with bureau.Desktop(url, token=token, timeout=10) as d:
        d.ping()
before, worst, drops, t0 = counts(), 0.0, 0, time.time()
for i in range(n):
    t = time.time()
    if i % 10 == 9:
        # a wrong token: the client cannot ask the daemon's limit, assumes
        # 64 MiB, sends, and the daemon's nng drops it with the connection
        d = bureau.Desktop(url, token="wrong", timeout=10)
        try:
            d.call({"tool": "system", "action": "ping", "pad": "x" * 100000})
        except bureau.IoError:
            drops += 1
    else:
        d = bureau.Desktop(url, token=token, timeout=10)
        assert d.ping().output == "pong"
    d.close()
    worst = max(worst, time.time() - t)
print(json.dumps({"before": before, "after": settled(before), "worst": worst,
                  "drops": drops, "secs": time.time() - t0}))
"""


def test_python_close_cycles(D):
    r = subprocess.run([PY, "-c", PY_CYCLES, D.url, D.token, "500"],
                       env=PYENV, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    print("# bureau.Desktop: 500 cycles: %r" % (res,))
    assert res["drops"] == 50, res
    assert res["worst"] < 10, res
    assert res["after"][0] <= res["before"][0], res
    assert res["after"][1] <= res["before"][1], res


def main():
    tests = [
        ("client_fd_judgement", test_fd_judgement),
        ("client_hostile_reply_cli", test_cli_hostile_reply),
        ("client_hostile_reply_python", test_python_hostile_reply),
        ("client_max_reply_option", test_python_max_reply_option),
        ("client_max_reply_argument", test_max_reply_argument_checked),
    ]
    X = bt.Xvfb()
    D = bt.Daemon(X, args=["--max-request", "65536"])
    # first, before anything else has used D.req
    tests.append(("client_daemon_req_connected",
                  lambda: test_daemon_req_connected(D)))
    tests.append(("client_max_request", lambda: test_max_request(D)))
    tests.append(("client_bt_req_close_cycles",
                  lambda: test_bt_req_close_cycles(D)))
    tests.append(("client_python_close_cycles",
                  lambda: test_python_close_cycles(D)))
    bt.run(tests)


if __name__ == "__main__":
    main()
