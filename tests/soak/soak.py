#!/usr/bin/env python3
"""soak: the real build/bureaud under sustained mixed load; its resources
must come back flat.

A private Xvfb with a window manager, bureaud on a free port with a token,
--root on a scratch directory and a small --max-request. CLIENTS concurrent
clients (real nng REQ sockets over libnng, tests/lib/bt.py) send REQUESTS
requests in total: every tool (screenshots, input, typing, keys, bash,
editor, file, process start/output/wait/signal, window list, clipboard,
system) mixed with bad JSON, wrong types, bad tokens; raw TCP peers
speaking the SP wire format send oversized requests (over --max-request)
and drop connections at every stage of a request.

The daemon's open fds (/proc/PID/fd), threads (/proc/PID/task), RSS
(VmRSS) and child processes are sampled at start, after a warm-up (which
fills the caches, the shell sessions, the process table's kept entries and
malloc's arenas), during the run, and after it. Fails when the figures
after the run exceed the warm-up's by more than the allowance, when a
request goes unanswered or gets an unexpected reply, or when the daemon
dies. Environment: SOAK_REQUESTS (10000), SOAK_CLIENTS (8).

Each client keeps its one nng socket for the run and closes it at the end;
the raw peers are plain TCP sockets, closed normally.
"""

import base64
import json
import os
import random
import socket
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import bt  # noqa: E402

REQUESTS = int(os.environ.get("SOAK_REQUESTS", "10000"))
CLIENTS = int(os.environ.get("SOAK_CLIENTS", "8"))
WARMUP = max(300, REQUESTS // 10)
MAX_REQUEST = 65536
SESSIONS = ["soak0", "soak1", "soak2"]  # bash has 16 slots; stay well under
# A session runs one command at a time (another gets `busy`): clients take
# turns on a session, as one agent loop would.
SESSION_LOCKS = {s: threading.Lock() for s in SESSIONS}
# After the run, against the warm-up's figures: fds and threads exactly
# (a leak of one per request would show thousands), RSS by what malloc may
# keep in arenas and fragmentation (measured: under 1 MB after 9000
# requests; 8 MB catches a leak of 1 KB per request), children exactly.
ALLOW = {"fds": 0, "threads": 0, "rss_kb": 8 << 10, "children": 0}


# --- the daemon's figures ---------------------------------------------------

def sample(pid):
    fds = len(os.listdir("/proc/%d/fd" % pid))
    threads = len(os.listdir("/proc/%d/task" % pid))
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    kids = len(bt.children(pid))
    return {"fds": fds, "threads": threads, "rss_kb": rss,
            "children": kids}


class Sampler(threading.Thread):
    """Samples every 0.5 s while the load runs; keeps the maxima."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = None
        self.n = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                s = sample(self.pid)
            except OSError:
                return
            self.n += 1
            self.peak = s if self.peak is None else {
                k: max(v, self.peak[k]) for k, v in s.items()}
            self.stop.wait(0.5)


def settle(d, pid, base=None, timeout=20):
    """Wait until the figures stop moving (children reaped, sessions
    idle), then sample. With base: until they are back within ALLOW."""
    deadline = time.time() + timeout
    prev = sample(pid)
    while time.time() < deadline:
        time.sleep(0.5)
        cur = sample(pid)
        if base is not None:
            if all(cur[k] <= base[k] + ALLOW[k] for k in ALLOW):
                return cur
        elif cur == prev:
            return cur
        prev = cur
    return prev


_diagnosed = []


def diagnose(d):
    """Once: the daemon's threads' stacks and its process tree, to a file
    beside its log, for a request that got no reply."""
    path = os.path.join(d.dir, "hang.txt")
    if _diagnosed:
        return "see " + path
    _diagnosed.append(1)
    os.system("(ps -ef --forest; gdb -p %d -batch -ex 'thread apply all bt'"
              ") >%s 2>&1" % (d.proc.pid, path))
    return "stacks in " + path


# --- raw SP peers: what a broken or hostile client does ---------------------

SP_REQ, SP_REP = 0x30, 0x31


def raw_connect(port, handshake=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if handshake:
        s.sendall(b"\0SP\0" + struct.pack(">H", SP_REQ) + b"\0\0")
        hdr = b""
        while len(hdr) < 8:
            b = s.recv(8 - len(hdr))
            if not b:
                raise ConnectionError("closed during the handshake")
            hdr += b
        assert hdr[:4] == b"\0SP\0" and \
            struct.unpack(">H", hdr[4:6])[0] == SP_REP, hdr
    return s


def raw_frame(body, reqid=0x80000001):
    msg = struct.pack(">I", reqid) + body
    return struct.pack(">Q", len(msg)) + msg


def raw_closed(s, timeout=5):
    """Does the daemon close this connection (EOF) in time?"""
    s.settimeout(timeout)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def raw_misbehave(port, kind, token):
    """One misbehaving connection; returns an error string or None."""
    ping = json.dumps({"tool": "system", "action": "ping",
                       "token": token}).encode()
    try:
        if kind == "oversized":
            # A declared length over --max-request: nng drops the
            # connection before reading the body.
            s = raw_connect(port)
            s.sendall(struct.pack(">Q", MAX_REQUEST * 4) + b"{" * 1024)
            ok = raw_closed(s)
            s.close()
            return None if ok else "oversized request: connection kept"
        if kind == "oversized_body":
            s = raw_connect(port)
            body = json.dumps({"tool": "system", "action": "ping",
                               "token": token,
                               "pad": "x" * (MAX_REQUEST + 100)}).encode()
            try:
                s.sendall(raw_frame(body))
            except OSError:
                pass  # closed while we were still sending: fine
            ok = raw_closed(s)
            s.close()
            return None if ok else "oversized body: connection kept"
        if kind == "no_handshake":
            s = raw_connect(port, handshake=False)
            s.sendall(b"\0SP")
            s.close()
            return None
        if kind == "bad_handshake":
            s = raw_connect(port, handshake=False)
            s.sendall(b"GET / HTTP/1.1\r\n\r\n")
            ok = raw_closed(s)
            s.close()
            return None if ok else "garbage handshake: connection kept"
        if kind == "half_header":
            s = raw_connect(port)
            s.sendall(raw_frame(ping)[:5])
            s.close()
            return None
        if kind == "half_body":
            s = raw_connect(port)
            s.sendall(raw_frame(ping)[:20])
            s.close()
            return None
        if kind == "no_wait":
            # A whole request whose reply finds the peer gone: a slow one,
            # so the connection is closed while a worker serves it.
            s = raw_connect(port)
            s.sendall(raw_frame(json.dumps({
                "tool": "computer", "action": "wait", "duration": 0.2,
                "token": token}).encode()))
            s.close()
            return None
        if kind == "good":
            # The raw path itself works: a request and its reply.
            s = raw_connect(port)
            s.sendall(raw_frame(ping))
            s.settimeout(10)
            data = b""
            while len(data) < 8 or len(data) < 8 + struct.unpack(
                    ">Q", data[:8])[0]:
                b = s.recv(65536)
                if not b:
                    return "raw ping: connection closed"
                data += b
            s.close()
            r = json.loads(data[12:])
            return None if r.get("ok") is True else "raw ping: %r" % r
    except (OSError, ConnectionError) as e:
        return "raw %s: %s" % (kind, e)
    return "unknown raw kind " + kind


RAW_KINDS = ["oversized", "oversized_body", "no_handshake", "bad_handshake",
             "half_header", "half_body", "no_wait", "good"]


# --- the mixed load ---------------------------------------------------------

class Client:
    """One client thread's state: its own REQ socket."""

    def __init__(self, n, d, root):
        self.n = n
        self.d = d
        self.root = root
        self.req = bt.Req(d.url, timeout_ms=60000)
        self.rng = random.Random(1000 + n)
        self.count = {}

    def call(self, fields, expect="ok", raw=None):
        """One request; expect "ok", an error code, or None (any reply).
        Returns the reply, or raises on no reply / unexpected reply."""
        if raw is None:
            msg = dict(fields)
            msg.setdefault("token", self.d.token)
            raw = json.dumps(msg)
        if not fields:
            key = "malformed"
        elif fields.get("tool") == "bash":
            key = "bash"
        else:
            key = "%s.%s" % (fields.get("tool"), fields.get(
                "action", fields.get("command", fields.get("type", ""))))
        self.count[key] = self.count.get(key, 0) + 1
        try:
            reply = json.loads(self.req.rpc(raw))
        except bt.NngError as e:
            raise AssertionError("%s: no reply: %s (%s)" % (
                key, e, diagnose(self.d)))
        if expect is None:
            return reply
        if expect == "ok":
            if reply.get("ok") is not True:
                raise AssertionError("%s: %r" % (key, {
                    k: v for k, v in reply.items() if k != "image"}))
        else:
            code = (reply.get("error") or {}).get("code")
            if reply.get("ok") is not False or code != expect:
                raise AssertionError("%s: expected %s, got %r" % (
                    key, expect, {k: v for k, v in reply.items()
                                  if k != "image"}))
        return reply

    # Each op is a short sequence; returns the number of requests sent.
    def op_screenshot(self):
        r = self.call({"tool": "computer", "action": "screenshot"})
        assert r["image"]["data"]
        return 1

    def op_input(self):
        x, y = self.rng.randrange(1024), self.rng.randrange(768)
        c = self.rng.randrange(5)
        if c == 0:
            self.call({"tool": "computer", "action": "mouse_move",
                       "coordinate": [x, y], "screenshot": False})
        elif c == 1:
            self.call({"tool": "computer", "action": "left_click",
                       "coordinate": [x, y]})
        elif c == 2:
            self.call({"tool": "computer", "action": "scroll",
                       "coordinate": [x, y], "scroll_direction": "down",
                       "scroll_amount": 2, "screenshot": False})
        elif c == 3:
            self.call({"tool": "computer", "type": "click", "x": x, "y": y,
                       "button": "right"})
            # close the root menu the window manager may have opened
            self.call({"tool": "computer", "action": "key",
                       "text": "Escape", "screenshot": False})
            return 2
        else:
            self.call({"tool": "computer", "action": "cursor_position"})
        return 1

    def op_type(self):
        # Typed onto the desktop (no terminal is open), so nothing runs.
        text = self.rng.choice(["hello", "ñandú", "汉字 ok", "a\tb"])
        self.call({"tool": "computer", "action": "type", "text": text,
                   "screenshot": False})
        self.call({"tool": "computer", "action": "key",
                   "text": self.rng.choice(["ctrl+a", "shift+Tab",
                                            "KP_Enter", "F5"]),
                   "screenshot": False})
        self.call({"tool": "computer", "action": "zoom",
                   "region": [0, 0, 200, 100]})
        return 3

    def op_bash(self):
        s = self.rng.choice(SESSIONS)
        with SESSION_LOCKS[s]:
            r = self.call({"tool": "bash", "session": s, "command":
                           "echo $((40 + 2)); seq 1 200 | wc -l"})
            assert r["output"].split() == ["42", "200"], r["output"]
            if self.rng.randrange(20) == 0:
                # a timeout kills the whole group, restarts the session
                self.call({"tool": "bash", "session": s, "timeout": 0.3,
                           "command": "sleep 30 & sleep 30"},
                          expect="timeout")
                return 2
        return 1

    def op_editor(self):
        p = os.path.join(self.root, "ed-%d.txt" % self.n)
        ed = "str_replace_based_edit_tool"
        self.call({"tool": ed, "command": "create", "path": p,
                   "file_text": "one\ntwo %d\nthree\n" % self.n})
        self.call({"tool": ed, "command": "str_replace", "path": p,
                   "old_str": "two", "new_str": "TWO"})
        r = self.call({"tool": ed, "command": "view", "path": p})
        assert "TWO" in r["output"], r["output"]
        self.call({"tool": ed, "command": "undo_edit", "path": p})
        self.call({"tool": ed, "command": "str_replace", "path": p,
                   "old_str": "nothing", "new_str": "x"},
                  expect="invalid_argument")
        # create refuses to overwrite: the next round starts afresh
        self.call({"tool": "file", "action": "remove", "path": p})
        return 6

    def op_file(self):
        d = os.path.join(self.root, "dir-%d" % self.n)
        p = d + "/f.bin"
        blob = os.urandom(self.rng.randrange(1, 20000))
        self.call({"tool": "file", "action": "write", "path": p,
                   "data": base64.b64encode(blob).decode(), "parents": True})
        r = self.call({"tool": "file", "action": "read", "path": p})
        assert base64.b64decode(r["data"]) == blob
        self.call({"tool": "file", "action": "stat", "path": p})
        self.call({"tool": "file", "action": "list", "path": d})
        self.call({"tool": "file", "action": "remove", "path": p})
        self.call({"tool": "file", "action": "read", "path": p},
                  expect="not_found")
        self.call({"tool": "file", "action": "read",
                   "path": "../../etc/passwd"}, expect=None)
        return 7

    def op_process(self):
        r = self.call({"tool": "process", "action": "start",
                       "command": "echo out; echo err >&2; sleep 0.1"})
        pid = r["pid"]
        self.call({"tool": "process", "action": "output", "pid": pid})
        r = self.call({"tool": "process", "action": "wait", "pid": pid,
                       "timeout": 10})
        assert r.get("exit_code") == 0, r
        if self.rng.randrange(4) == 0:
            r = self.call({"tool": "process", "action": "start",
                           "argv": ["sleep", "30"]})
            self.call({"tool": "process", "action": "signal",
                       "pid": r["pid"], "signal": "TERM"})
            self.call({"tool": "process", "action": "wait",
                       "pid": r["pid"], "timeout": 10})
            self.call({"tool": "process", "action": "list"})
            return 7
        return 3

    def op_window(self):
        r = self.call({"tool": "window", "action": "list"})
        assert isinstance(r["windows"], list)
        return 1

    def op_clipboard(self):
        self.call({"tool": "clipboard", "action": "set",
                   "text": "soak %d ✓" % self.n})
        # what one of the clients set (they race), never nothing: the
        # owner thread once owned CLIPBOARD with no value after two
        # concurrent sets
        r = self.call({"tool": "clipboard", "action": "get"})
        assert r["ours"] and r["text"].startswith("soak "), r
        return 2

    def op_system(self):
        self.call({"tool": "system", "action": "ping"})
        r = self.call({"tool": "system", "action": "info"})
        assert r["screen"]["width"] == 1024, r
        return 2

    def op_bad(self):
        c = self.rng.randrange(7)
        if c == 0:
            self.call(None, "bad_request", raw='{"tool": "system", ')
        elif c == 1:
            self.call(None, "bad_request", raw="[1, 2, 3]")
        elif c == 2:
            self.call({"tool": "computer", "action": "left_click",
                       "coordinate": "10,20"}, None)
        elif c == 3:
            self.call({"tool": "system", "action": "ping", "token": "nope"},
                      "unauthorized")
        elif c == 4:
            self.call(None, "unauthorized",
                      raw='{"tool": "system", "action": "ping"}')
        elif c == 5:
            self.call({"tool": "nope"}, "unknown_tool")
        else:
            self.call({"tool": "file", "action": "explode"},
                      "unknown_action")
        return 1

    def op_raw(self):
        kind = self.rng.choice(RAW_KINDS)
        self.count["raw." + kind] = self.count.get("raw." + kind, 0) + 1
        err = raw_misbehave(self.d.port, kind, self.d.token)
        if err:
            raise AssertionError(err)
        return 1

    OPS = [("screenshot", 8), ("input", 14), ("type", 3), ("bash", 8),
           ("editor", 2), ("file", 2), ("process", 4), ("window", 4),
           ("clipboard", 4), ("system", 4), ("bad", 10), ("raw", 6)]

    def run(self, budget, errors):
        names = [n for n, _ in self.OPS]
        weights = [w for _, w in self.OPS]
        sent = 0
        while True:
            with budget["lock"]:
                if budget["left"] <= 0 or len(errors) >= 10:
                    return
            op = self.rng.choices(names, weights)[0]
            try:
                n = getattr(self, "op_" + op)()
            except Exception as e:  # noqa: BLE001 - reported, then counted
                errors.append("client %d %s: %s" % (self.n, op, e))
                n = 1
            sent += n
            with budget["lock"]:
                budget["left"] -= n
                budget["sent"] += n


def load(clients, total, errors):
    budget = {"left": total, "sent": 0, "lock": threading.Lock()}
    threads = [threading.Thread(target=c.run, args=(budget, errors))
               for c in clients]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return budget["sent"], time.time() - t0


# The window manager's root menu, which the soak's right clicks open: one
# inert item. Debian's menu launches a terminal and a browser, restarts or
# exits openbox, and runs a pipe menu script when hovered; the clients'
# concurrent clicks and moves reached all of them (seen: obamenu run a
# dozen times in one soak), and typing then went into whatever opened.
ROOT_MENU = """<?xml version="1.0" encoding="UTF-8"?>
<openbox_menu xmlns="http://openbox.org/3.4/menu">
<menu id="root-menu" label="soak">
  <item label="nothing"><action name="Execute"><execute>true</execute>
  </action></item>
</menu>
</openbox_menu>
"""


def main():
    t_start = time.time()
    root = tempfile.mkdtemp(prefix="bureau-soak-")
    # openbox reads $XDG_CONFIG_HOME/openbox/menu.xml before the system's
    xdg = tempfile.mkdtemp(prefix="bureau-soak-xdg-")
    os.makedirs(os.path.join(xdg, "openbox"))
    with open(os.path.join(xdg, "openbox", "menu.xml"), "w") as f:
        f.write(ROOT_MENU)
    os.environ["XDG_CONFIG_HOME"] = xdg
    x = bt.Xvfb(size="1024x768", wm=True)
    d = bt.Daemon(x, args=["--root", root, "--max-request",
                           str(MAX_REQUEST), "--settle-ms", "20",
                           "--log-level", "warn"])
    pid = d.proc.pid
    print("soak: bureaud pid %d on %s, display %s, %d clients, %d requests"
          % (pid, d.url, x.name, CLIENTS, REQUESTS), flush=True)
    rows = [("start", sample(pid))]
    errors = []
    clients = [Client(i, d, root) for i in range(CLIENTS)]

    # Warm-up: fill the process table's kept entries (64) and open the
    # shell sessions, then a share of the mix.
    for i in range(70):
        clients[i % CLIENTS].op_process()
    for s in SESSIONS:
        clients[0].call({"tool": "bash", "session": s, "command": "true"})
    wsent, wtime = load(clients, WARMUP, errors)
    base = settle(d, pid)
    rows.append(("after warm-up", base))

    sampler = Sampler(pid)
    sampler.start()
    sent, elapsed = load(clients, REQUESTS - WARMUP, errors)
    sampler.stop.set()
    sampler.join()
    rows.append(("peak during (%d samples)" % sampler.n, sampler.peak))
    after = settle(d, pid, base)
    rows.append(("after", after))

    alive = d.proc.poll() is None
    answering = False
    if alive:
        try:
            answering = d.alive()
        except Exception as e:  # noqa: BLE001
            errors.append("final ping: %s" % e)
    for c in clients:
        c.req.close()

    total = wsent + sent
    print("\n%-26s %6s %8s %10s %9s" % ("", "fds", "threads", "rss_kb",
                                         "children"))
    for name, s in rows:
        print("%-26s %6d %8d %10d %9d" % (name, s["fds"], s["threads"],
                                          s["rss_kb"], s["children"]))
    print("%-26s %6d %8d %10s %9d" % (
        "allowed growth", ALLOW["fds"], ALLOW["threads"],
        "(ASan)" if bt.sanitized(d.proc) else ALLOW["rss_kb"],
        ALLOW["children"]))
    print("\n%d requests (%d warm-up) in %.1f s: %.0f requests/s under "
          "load; total %.0f s" % (total, wsent, wtime + elapsed,
                                  sent / elapsed if elapsed else 0,
                                  time.time() - t_start))
    counts = {}
    for c in clients:
        for k, v in c.count.items():
            counts[k] = counts.get(k, 0) + v
    print("by request: " + ", ".join("%s %d" % kv for kv in
                                     sorted(counts.items())))

    failed = []
    # An ASan daemon's RSS grows by its free quarantine (256 MB), not by
    # leaks: there LeakSanitizer, at the shutdown below, judges memory.
    asan = bt.sanitized(d.proc)
    for k in ALLOW:
        if k == "rss_kb" and asan:
            continue
        if after[k] > base[k] + ALLOW[k]:
            failed.append("%s grew from %d to %d (allowed %d)" % (
                k, base[k], after[k], ALLOW[k]))
    if not alive:
        failed.append("bureaud died: exit %s" % d.proc.returncode)
    elif not answering:
        failed.append("bureaud stopped answering")
    failed += errors[:10]
    # A clean shutdown after the load: SIGTERM, exit 0, and for an ASan
    # build no leak or error report.
    if alive:
        try:
            d.stop()
            if d.proc.returncode != 0:
                failed.append("bureaud exited %d on SIGTERM" %
                              d.proc.returncode)
        except Exception as e:  # noqa: BLE001
            failed.append("bureaud did not stop: %s" % e)
    log = d.logtext()
    if " error: " in log or "Sanitizer" in log or "runtime error" in log:
        failed.append("bureaud log: " + log[-3000:])
    if failed:
        print("\nsoak FAILED:\n  " + "\n  ".join(failed))
        sys.exit(1)
    print("\nsoak passed: resources flat, every request answered")


if __name__ == "__main__":
    main()
