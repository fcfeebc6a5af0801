"""Wire protocol robustness: bad input of every kind gets a typed error that
names the field, auth refuses before anything runs, and the daemon keeps
serving throughout."""

import json
import os
import random
import re
import subprocess
import tempfile
import time

import bt

X = bt.Xvfb("800x600")
D = bt.Daemon(X, ["--scale", "none"])


def pointer(xv=None):
    out = (xv or X).run(["xdotool", "getmouselocation"]).stdout
    m = re.search(r"x:(\d+) y:(\d+)", out)
    return int(m.group(1)), int(m.group(2))


def test_not_json():
    for data in (b"", b"hello", b"{", b'{"tool": "system",}', b"[1,2",
                 b"\x00\x01\x02", b'{"a":1}{"b":2}'):
        bt.expect_error(D.raw(data), "bad_request", "JSON")
    assert D.alive()


def test_not_object():
    for data in (b"[]", b"42", b'"str"', b"null", b"true"):
        bt.expect_error(D.raw(data), "bad_request", "object")


def test_invalid_utf8():
    data = b'{"tool":"computer","action":"type","text":"\xff\xfe bad"}'
    bt.expect_error(D.raw(data), "bad_request")
    data = b'{"tool":"computer","action":"type","text":"\xc3"}'
    bt.expect_error(D.raw(data), "bad_request")
    assert D.alive()


def test_deep_nesting():
    for depth in (100, 5000, 100000):
        data = b'{"tool":"system","action":"ping","token":"' + \
            D.token.encode() + b'","x":' + b"[" * depth + b"]" * depth + b"}"
        r = D.raw(data)
        if depth <= 100:
            assert r["ok"] is True, r
        else:
            bt.expect_error(r, "bad_request")
    # without the token, how deep it went is none of the client's business
    data = b"[" * 1000000
    r = D.raw(data)
    bt.expect_error(r, "unauthorized", "token")
    assert D.alive()


def test_random_bytes():
    rnd = random.Random(7)
    for n in (1, 100, 4096, 1 << 20):
        data = bytes(rnd.getrandbits(8) for _ in range(n))
        bt.expect_error(D.raw(data), "bad_request")
    assert D.alive()


def test_wrong_types():
    for req, code, field in (
            ({"tool": 5}, "bad_request", "tool"),
            ({}, "bad_request", "tool"),
            ({"tool": "computer", "action": 5}, "bad_request", "action"),
            ({"tool": "computer"}, "invalid_argument", "type"),
            ({"tool": "computer", "action": "left_click",
              "coordinate": [1.5, 2]}, "bad_request", "coordinate"),
            ({"tool": "computer", "action": "left_click",
              "coordinate": [1, 2, 3]}, "bad_request", "coordinate"),
            ({"tool": "computer", "action": "screenshot", "format": "gif"},
             "invalid_argument", "format"),
            ({"tool": "computer", "action": "mouse_move",
              "coordinate": [1, 1], "screenshot": "yes"}, "bad_request",
             "screenshot"),
            ({"tool": "computer", "action": "wait", "duration": "1"},
             "bad_request", "duration"),
            ({"tool": "system", "action": "reboot"}, "unknown_action",
             "reboot"),
            ({"tool": "hammer"}, "unknown_tool", "hammer")):
        bt.expect_error(D.call(req), code, field)
    assert D.alive()


def test_id_echo():
    for ident in ("abc", 17, None, {"nested": [1, 2]}, 1.5):
        r = D.call(tool="system", action="ping", id=ident)
        assert r["ok"] is True and r["id"] == ident, r
    r = D.call(tool="nope", id="e1")
    assert r["id"] == "e1" and r["ok"] is False


def test_auth():
    before = pointer()
    for tok in (None, "", "wrong", D.token[:-1], D.token + "x",
                D.token.upper(), 12345):
        req = {"tool": "computer", "action": "mouse_move",
               "coordinate": [7, 7]}
        if tok is not None:
            req["token"] = tok
        r = json.loads(D.req.rpc(json.dumps(req)))
        bt.expect_error(r, "unauthorized", "token")
        assert "image" not in r
    assert pointer() == before, "an unauthorized request moved the pointer"
    r = D.call(tool="computer", action="mouse_move", coordinate=[7, 7],
               screenshot=False)
    assert r["ok"] is True and pointer() == (7, 7)


def test_oversized_request():
    # nng drops a message over --max-request and closes that connection;
    # the daemon answers the next client as before.
    X2 = bt.Xvfb("640x480")
    D2 = bt.Daemon(X2, ["--max-request", "65536"])
    big = bt.Req(D2.url, timeout_ms=2000)
    try:
        big.rpc(json.dumps({"tool": "system", "action": "ping",
                            "pad": "x" * 100000, "token": D2.token}))
        raise AssertionError("an oversized request was answered")
    except bt.NngError:
        pass
    big.close()
    assert D2.alive()
    r = D2.call(tool="system", action="ping", pad="y" * 60000)
    assert r["ok"] is True
    D2.stop()


def test_nngcat_peer():
    out = subprocess.run(
        ["nngcat", "--req", "--dial", D.url, "--raw", "--recv-timeout", "5",
         "--data", json.dumps({"tool": "system", "action": "info",
                               "token": D.token})],
        capture_output=True, timeout=20).stdout
    r = json.loads(out)
    assert r["ok"] is True and r["protocol"] == 1
    assert r["screen"] == {"width": 800, "height": 600}
    assert "computer" in r["capabilities"]


def test_refuses_open_listen_without_token():
    port = bt.free_port()
    p = subprocess.run([os.path.join(bt.BUILD, "bureaud"), "--display",
                        X.name, "--listen", "tcp://0.0.0.0:%d" % port],
                       capture_output=True, text=True, timeout=20,
                       env=dict(X.env, BUREAU_TOKEN=""))
    assert p.returncode != 0 and "token" in p.stderr, p.stderr
    p = bt.spawn([os.path.join(bt.BUILD, "bureaud"), "--display", X.name,
                  "--listen", "tcp://0.0.0.0:%d" % port, "--insecure"],
                 env=dict(X.env, BUREAU_TOKEN=""))
    time.sleep(1.0)
    assert p.poll() is None, "--insecure did not start"
    p.terminate()
    assert p.wait(10) == 0


def test_bad_command_line():
    for args, word in ((["--scale", "huge"], "scale"),
                       (["--bogus"], "bogus"),
                       (["--token-file", "/nonexistent/t"], "token"),
                       (["--listen", "nonsense"], "listen"),
                       (["--root", "/nonexistent/dir"], "root"),
                       (["--root", "/etc/hostname"], "root")):
        p = subprocess.run([os.path.join(bt.BUILD, "bureaud")] + args,
                           capture_output=True, text=True, timeout=20,
                           env=X.env)
        assert p.returncode == 2 and word in p.stderr, (args, p.stderr)


def test_policy():
    X3 = bt.Xvfb("640x480")
    D3 = bt.Daemon(X3, ["--allow", "system,computer.screenshot"])
    assert D3.call(tool="system", action="ping")["ok"] is True
    assert D3.call(tool="computer", action="screenshot")["ok"] is True
    bt.expect_error(D3.call(tool="computer", action="left_click",
                            coordinate=[1, 1]), "permission_denied",
                    "left_click")
    D3.stop()



def vmhwm(pid):
    """The peak resident set of pid, in bytes, from /proc (independent of
    bureaud)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) << 10
    raise AssertionError("no VmHWM for %d" % pid)


def test_unauthenticated_memory():
    # jansson builds the whole tree before anything else: 8 MB of "{}," cost
    # it over 600 MB. The token is now checked on the raw bytes first.
    X5 = bt.Xvfb("640x480")
    # Under AddressSanitizer each freed buffer waits in its quarantine
    # (256 MB by default) before it can be reused: the seven 8 MB requests
    # below then raise the peak by about 64 MB with no tree built at all
    # (CI run 27). A small quarantine measures the daemon's own peak, as
    # the plain build (which ignores ASAN_OPTIONS) does.
    D5 = bt.Daemon(X5, ["--scale", "none"],
                   env=dict(X5.env, ASAN_OPTIONS="quarantine_size_mb=4"))
    assert D5.call(tool="system", action="ping")["ok"] is True
    base = vmhwm(D5.proc.pid)
    n = (8 << 20) // 3
    empties = b"{}," * n + b"{}"
    deep = b"[" * (4 << 20) + b"]" * (4 << 20)
    for data in (b"[" + empties + b"]",
                 b'{"id":"e1","tool":"system","action":"ping","x":[' +
                 empties + b"]}",
                 b'{"id":"e2","tool":"system","action":"ping","x":[' +
                 empties + b'],"token":"wrong"}',
                 b'{"id":"e3","x":' + deep + b"}"):
        r = D5.raw(data)
        bt.expect_error(r, "unauthorized", "token")
        assert "id" not in r, r
    rise = vmhwm(D5.proc.pid) - base
    assert rise < 64 << 20, "peak RSS rose by %d MB" % (rise >> 20)

    # the token's holder learns which limit it hit, and the daemon goes on
    r = D5.raw(b'{"id":"a1","tool":"system","action":"ping","x":[' + empties +
               b'],"token":"' + D5.token.encode() + b'"}')
    bt.expect_error(r, "too_large", "JSON values")
    r = D5.call(tool="system", action="ping", x=[[[[[[[[0]]]]]]]] * 1000)
    assert r["ok"] is True, r
    r = D5.raw(b'{"tool":"system","action":"ping","token":"' +
               D5.token.encode() + b'","x":' + deep + b"}")
    bt.expect_error(r, "bad_request", "128 levels")
    rise = vmhwm(D5.proc.pid) - base
    assert rise < 64 << 20, "peak RSS rose by %d MB" % (rise >> 20)
    # a 60 MiB string is one value: real requests still pass
    r = D5.call(tool="system", action="ping", data="QUJD" * (15 << 20))
    assert r["ok"] is True, r
    assert D5.alive()
    D5.stop()


def test_audit_trail_unauthenticated():
    # The audit trail lists requests served; one without the token is
    # not, and must not show up there with its tool or arguments.
    X6 = bt.Xvfb("640x480")
    D6 = bt.Daemon(X6, ["--scale", "none"])
    sub = bt.Sub(D6.events, b"action ", timeout_ms=1000, token=D6.token)
    # the subscription connects in the background: ping until it hears
    for i in range(50):
        D6.call(tool="system", action="ping", id="warm-%d" % i)
        try:
            sub.recv()
            break
        except bt.NngError:
            continue
    else:
        raise AssertionError("no action event after 50 pings")
    for tok in (None, "wrong", 7):
        req = {"tool": "system", "action": "ping", "id": "unauth",
               "marker": "unauthenticated-marker"}
        if tok is not None:
            req["token"] = tok
        bt.expect_error(D6.raw(json.dumps(req)), "unauthorized", "token")
    bt.expect_error(D6.raw(b"not json"), "bad_request", "JSON")
    r = D6.call(tool="system", action="ping", id="served", marker="served")
    assert r["ok"] is True
    seen = []
    for _ in range(200):
        msg = sub.recv().decode()
        ev = json.loads(msg[msg.index(" ") + 1:])
        if ev.get("id") == "served":
            break
        seen.append(msg)
    assert ev["tool"] == "system" and "served" in ev["summary"], ev
    leaked = [m for m in seen if not json.loads(
        m[m.index(" ") + 1:]).get("id", "").startswith("warm-")]
    assert not leaked, "unauthenticated requests in the audit trail: %r" % (
        leaked,)
    sub.close()
    D6.stop()


def test_one_action_per_request():
    # Policy, the tool and the audit trail must judge the same action: a
    # second key naming another action used to slip past --allow.
    X4 = bt.Xvfb("640x480")
    D4 = bt.Daemon(X4, ["--scale", "none", "--allow",
                        "system,str_replace_based_edit_tool.view,"
                        "computer.screenshot"])
    d = tempfile.mkdtemp(prefix="bureau-proto-")
    victim = os.path.join(d, "created.txt")
    for tool in ("str_replace_based_edit_tool", "text_editor"):
        r = D4.call(tool=tool, action="view", command="create", path=victim,
                    file_text="written past --allow\n")
        bt.expect_error(r, "bad_request", "'command'")
        assert "'action'" in r["error"]["message"], r
        assert not os.path.exists(victim), "the editor created the file"
    bt.expect_error(D4.call(tool="text_editor", command="create",
                            path=victim, file_text="x"),
                    "permission_denied", "str_replace_based_edit_tool.create")
    assert not os.path.exists(victim)
    assert D4.call(tool="text_editor", command="view", path=d)["ok"] is True

    X4.run(["xdotool", "mousemove", "10", "10"])
    assert pointer(X4) == (10, 10)
    bt.expect_error(D4.call(tool="computer", command="screenshot",
                            type="click", x=300, y=200, button="left"),
                    "permission_denied", "computer.click")
    bt.expect_error(D4.call(tool="computer", action="screenshot",
                            type="click", x=300, y=200, button="left"),
                    "bad_request", "'type'")
    assert pointer(X4) == (10, 10), "a refused click moved the pointer"
    r = D4.call(tool="computer", type="screenshot")
    assert r["ok"] is True and r["image"]["width"] == 640, r
    os.rmdir(d)
    D4.stop()


if __name__ == "__main__":
    bt.run([(n, f) for n, f in list(globals().items())
            if n.startswith("test_") and callable(f)])
