"""The file tool through the real bureaud: bytes in and out (SHA-256
checked with hashlib), atomic replace under a concurrent reader, chunked
transfer past the request limit, and --root confinement against every
escape, with the kernel's openat2 and with the fallback walk. Effects are
checked with os, never through bureaud."""

import base64
import hashlib
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
import time

import bt

X = bt.Xvfb("640x480")
D = bt.Daemon(X)
T = tempfile.mkdtemp(prefix="bureau-file-")


def fc(d=None, **k):
    return (d or D).call(dict(tool="file", **k))


ok = bt.ok


def h(b):
    return hashlib.sha256(b).hexdigest()


def get(p):
    with open(p, "rb") as f:
        return f.read()


def b64(b):
    return base64.b64encode(b).decode()


def test_roundtrip():
    data = os.urandom(3 << 20)
    p = os.path.join(T, "rand.bin")
    r = ok(fc(action="write", path=p, data=b64(data), mode="0640"))
    assert r["size"] == len(data) and r["written"] == len(data)
    assert h(get(p)) == h(data)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    # a file written by someone else, read back through bureaud
    q = os.path.join(T, "other.bin")
    other = os.urandom((2 << 20) + 123)
    with open(q, "wb") as f:
        f.write(other)
    r = ok(fc(action="read", path=q))
    assert h(base64.b64decode(r["data"])) == h(other)
    assert r["size"] == len(other) and r["eof"] is True
    # a part of it
    r = ok(fc(action="read", path=q, offset=1000, length=5000))
    assert base64.b64decode(r["data"]) == other[1000:6000]
    assert r["eof"] is False and r["length"] == 5000
    # text, parents, an integer mode
    t = os.path.join(T, "deep/er/t.txt")
    ok(fc(action="write", path=t, text="ünïcode\n", parents=True,
          mode=0o600))
    assert get(t) == "ünïcode\n".encode()
    assert stat.S_IMODE(os.stat(t).st_mode) == 0o600
    # a rewrite keeps the mode when none is given
    ok(fc(action="write", path=t, text="again"))
    assert get(t) == b"again" and stat.S_IMODE(os.stat(t).st_mode) == 0o600


def test_large_single_request():
    # tens of MiB in one request: 40 MiB is 53 MiB of base64
    data = os.urandom(40 << 20)
    p = os.path.join(T, "large.bin")
    ok(fc(action="write", path=p, data=b64(data)))
    assert h(get(p)) == h(data)
    r = ok(fc(action="read", path=p))
    assert r["eof"] is True and h(base64.b64decode(r["data"])) == h(data)
    os.unlink(p)


def test_concurrent_reader():
    p = os.path.join(T, "atomic.txt")
    versions = {}
    for i in range(50):
        size = 1000 + i * 37000  # 1 kB .. 1.8 MB
        body = (b"%d:" % i) + bytes([65 + i % 26]) * size
        versions[h(body)] = i
    bodies = sorted(versions, key=versions.get)
    first = (b"0:") + b"A" * 1000
    with open(p, "wb") as f:
        f.write(first)
    stop = threading.Event()
    seen = {"reads": 0, "bad": []}

    def reader():
        while not stop.is_set():
            with open(p, "rb") as f:
                b = f.read()
            seen["reads"] += 1
            if h(b) not in versions:
                seen["bad"].append(len(b))

    th = threading.Thread(target=reader)
    th.start()
    try:
        for i in range(50):
            size = 1000 + i * 37000
            body = (b"%d:" % i) + bytes([65 + i % 26]) * size
            ok(fc(action="write", path=p, data=b64(body)))
    finally:
        stop.set()
        th.join()
    assert not seen["bad"], "reader saw %d partial files (sizes %r)" % (
        len(seen["bad"]), seen["bad"][:5])
    assert seen["reads"] > 50, "reader ran only %d times" % seen["reads"]
    assert h(get(p)) == bodies[-1]
    assert not [n for n in os.listdir(T) if ".bureau-" in n], \
        "temporary files left behind"


def test_chunked():
    # a daemon whose requests are limited to 1 MiB: a 5 MiB file needs
    # chunks both ways
    S = bt.Daemon(X, ["--max-request", "1M"])
    try:
        data = os.urandom((5 << 20) + 777)
        part = os.path.join(T, "chunk.bin.part")
        final = os.path.join(T, "chunk.bin")
        chunk = 600 << 10  # 800 KiB of base64
        for off in range(0, len(data), chunk):
            r = ok(fc(S, action="write", path=part, offset=off,
                      data=b64(data[off:off + chunk]), truncate=off == 0))
            assert r["size"] == min(off + chunk, len(data))
        # resending a chunk is harmless; a gap is refused
        ok(fc(S, action="write", path=part, offset=chunk,
              data=b64(data[chunk:2 * chunk])))
        bt.expect_error(fc(S, action="write", path=part,
                           offset=len(data) + 1, data=b64(b"x")),
                        "out_of_bounds", "offset")
        ok(fc(S, action="move", path=part, to=final))
        assert h(get(final)) == h(data) and not os.path.exists(part)
        # append as well
        ap = os.path.join(T, "append.bin")
        for off in range(0, len(data), chunk):
            ok(fc(S, action="write", path=ap, append=True,
                  data=b64(data[off:off + chunk])))
        assert h(get(ap)) == h(data)
        # and read back in chunks
        got, off = b"", 0
        while True:
            r = ok(fc(S, action="read", path=final, offset=off,
                      length=chunk))
            got += base64.b64decode(r["data"])
            off += r["length"]
            if r["eof"]:
                break
        assert h(got) == h(data)
        # one request with the whole file is too big for this daemon: nng
        # drops it and closes that connection; the daemon keeps serving
        big = bt.Req(S.url, timeout_ms=3000)
        try:
            import json
            big.rpc(json.dumps({"tool": "file", "action": "write",
                                "path": final + ".whole", "token": S.token,
                                "data": b64(data)}))
            raise AssertionError("an oversized request was answered")
        except bt.NngError:
            pass
        finally:
            big.close()
        assert not os.path.exists(final + ".whole")
        assert S.alive()
    finally:
        S.stop()


def test_list_stat_remove_mkdir_move():
    d = os.path.join(T, "ops")
    ok(fc(action="mkdir", path=d + "/a/b", parents=True))
    assert os.path.isdir(d + "/a/b")
    ok(fc(action="mkdir", path=d + "/a/b", parents=True))  # exists: fine
    bt.expect_error(fc(action="mkdir", path=d + "/a/b"), "invalid_argument",
                    "path")
    bt.expect_error(fc(action="mkdir", path=d + "/x/y"), "not_found", "path")
    with open(d + "/f.txt", "wb") as f:
        f.write(b"12345")
    os.chmod(d + "/f.txt", 0o604)
    os.symlink("f.txt", d + "/ln")
    os.mkdir(d + "/.hidden")
    r = ok(fc(action="list", path=d))
    ents = {e["name"]: e for e in r["entries"]}
    assert [e["name"] for e in r["entries"]] == sorted(os.listdir(d))
    assert ents["f.txt"]["type"] == "file" and ents["f.txt"]["size"] == 5
    assert ents["f.txt"]["mode"] == "0604"
    assert abs(ents["f.txt"]["mtime"] - os.stat(d + "/f.txt").st_mtime) \
        < 1e-3
    assert ents["a"]["type"] == "dir"
    assert ents["ln"]["type"] == "symlink" and ents["ln"]["target"] == "f.txt"
    r = ok(fc(action="stat", path=d + "/f.txt"))
    assert r["type"] == "file" and r["size"] == 5 and r["mode"] == "0604"
    assert r["uid"] == os.getuid()
    bt.expect_error(fc(action="stat", path=d + "/nope"), "not_found", "path")
    # a write through a symlink keeps the link
    ok(fc(action="write", path=d + "/ln", text="via link"))
    assert os.path.islink(d + "/ln") and get(d + "/f.txt") == b"via link"
    ok(fc(action="move", path=d + "/f.txt", to=d + "/g.txt"))
    assert not os.path.exists(d + "/f.txt") and get(d + "/g.txt") == \
        b"via link"
    with open(d + "/h.txt", "w") as f:
        f.write("h")
    bt.expect_error(fc(action="move", path=d + "/g.txt", to=d + "/h.txt",
                       overwrite=False), "invalid_argument", "to")
    assert get(d + "/h.txt") == b"h"
    bt.expect_error(fc(action="remove", path=d), "invalid_argument",
                    "recursive")
    assert os.path.isdir(d)
    ok(fc(action="remove", path=d + "/ln"))
    assert not os.path.lexists(d + "/ln") and os.path.exists(d + "/g.txt")
    r = ok(fc(action="remove", path=d, recursive=True))
    assert not os.path.exists(d) and r["removed"] == 6
    bt.expect_error(fc(action="remove", path=d), "not_found", "path")
    bt.expect_error(fc(action="read", path=T), "invalid_argument", "path")
    bt.expect_error(fc(action="write", path=T + "/w", data="!!"),
                    "invalid_argument", "data")
    bt.expect_error(fc(action="write", path=T + "/w", text="a", data="YQ=="),
                    "invalid_argument", "data")
    bt.expect_error(fc(action="write", path=T + "/w", text="a", mode="999"),
                    "invalid_argument", "mode")
    bt.expect_error(fc(action="chmod", path=T), "unknown_action", "chmod")


def escapes(S, root, outside):
    """Every escape is refused with permission_denied naming the field;
    nothing outside changes."""
    name = os.path.basename(outside)
    rel_out = os.path.relpath(outside, root)
    cases = [
        ("dot-dot", rel_out),
        ("dot-dot absolute", root + "/sub/../../" + rel_out),
        ("absolute", outside),
        ("symlink file", "lnfile"),
        ("symlink dir in the middle", "lndir/" + name),
        ("relative symlink climbing out", "sub/up/" + name),
        ("absolute symlink to inside", "abslink"),
    ]
    for what, path in cases:
        for req in ({"action": "read"}, {"action": "stat"},
                    {"action": "list"},
                    {"action": "write", "text": "pwned"},
                    {"action": "remove", "recursive": True},
                    {"action": "mkdir", "parents": True}):
            if req["action"] in ("stat", "remove") and path in (
                    "lnfile", "abslink"):
                continue  # these act on the link itself, which is inside
            r = fc(S, path=path, **req)
            try:
                bt.expect_error(r, "permission_denied", "path")
            except AssertionError as e:
                raise AssertionError("%s %s %r: %s" % (what, req["action"],
                                                       path, e))
    r = fc(S, action="move", path="in.txt", to=outside + ".moved")
    bt.expect_error(r, "permission_denied", "to")
    assert get(outside + "/secret") == b"SECRET"
    assert not os.path.exists(outside + ".moved")
    assert S.alive()


def make_root():
    base = tempfile.mkdtemp(prefix="bureau-root-", dir=T)
    root = os.path.join(base, "root")
    outside = os.path.join(base, "outside")
    os.makedirs(root + "/sub")
    os.makedirs(outside)
    with open(outside + "/secret", "wb") as f:
        f.write(b"SECRET")
    with open(root + "/in.txt", "wb") as f:
        f.write(b"inside")
    os.symlink(outside + "/secret", root + "/lnfile")
    os.symlink(outside, root + "/lndir")
    os.symlink("../..", root + "/sub/up")
    os.symlink(root + "/in.txt", root + "/abslink")
    os.symlink("../in.txt", root + "/sub/rel")  # inside: allowed
    return root, outside


def confinement(env):
    root, outside = make_root()
    S = bt.Daemon(X, ["--root", root], env=env)
    try:
        # inside works, relative and absolute
        r = ok(fc(S, action="read", path="in.txt"))
        assert base64.b64decode(r["data"]) == b"inside"
        r = ok(fc(S, action="read", path=root + "/sub/rel"))
        assert base64.b64decode(r["data"]) == b"inside"
        ok(fc(S, action="write", path="sub/new/n.txt", text="n",
              parents=True))
        assert get(root + "/sub/new/n.txt") == b"n"
        escapes(S, root, outside)
        race(S, root, outside)
        # removing the root itself is refused
        bt.expect_error(fc(S, action="remove", path=root, recursive=True),
                        "permission_denied", "path")
        assert os.path.isdir(root)
    finally:
        S.stop()


def race(S, root, outside):
    """A directory in the path flips between a real directory and a
    symlink out of the root while requests use it: the kernel check (or
    the walk) happens at use, so the secret never comes back."""
    flip = root + "/flip"
    real = root + "/flipdir"
    os.makedirs(real)
    with open(real + "/secret", "wb") as f:
        f.write(b"harmless")
    stop = threading.Event()

    def flipper():
        while not stop.is_set():
            try:
                os.symlink(outside, flip + ".tmp")
                os.replace(flip + ".tmp", flip)
                os.replace(flip, flip + ".old")
                os.symlink("flipdir", flip + ".tmp")
                os.replace(flip + ".tmp", flip)
                os.unlink(flip + ".old")
            except OSError:
                pass

    th = threading.Thread(target=flipper)
    th.start()
    seen = {"ok": 0, "denied": 0, "other": 0}
    try:
        deadline = time.time() + 3
        while time.time() < deadline:
            r = fc(S, action="read", path="flip/secret")
            if r.get("ok"):
                got = base64.b64decode(r["data"])
                assert got == b"harmless", "read %r through the flip" % got
                seen["ok"] += 1
            elif r["error"]["code"] == "permission_denied":
                seen["denied"] += 1
            else:
                seen["other"] += 1
            w = fc(S, action="write", path="flip/secret", text="harmless")
            if not w.get("ok"):
                assert w["error"]["code"] in ("permission_denied",
                                              "not_found"), w
    finally:
        stop.set()
        th.join()
    assert get(outside + "/secret") == b"SECRET"
    assert seen["ok"] > 0 and seen["denied"] > 0, seen


def test_confinement_openat2():
    confinement(None)


def test_confinement_walk():
    confinement(dict(X.env, BUREAU_NO_OPENAT2="1"))


def test_fifo_and_devices_refused():
    """read, in-place write and append on a FIFO are refused at once
    (the old tool opened it and waited for the other end for good); a
    plain write does not swap the FIFO for a regular file; devices are
    refused too. Its own daemon: the old code leaves this one stuck."""
    F = bt.Daemon(X)
    try:
        fifo = os.path.join(T, "fifo")
        os.mkfifo(fifo)
        # a private null device: a broken write replaces it, not /dev/null
        null = os.path.join(T, "null")
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        q = bt.Req(F.url, timeout_ms=8000)  # the old daemon never answers
        for req in ({"action": "read"},
                    {"action": "write", "text": "x", "append": True},
                    {"action": "write", "text": "x", "offset": 0},
                    {"action": "write", "text": "x"},
                    {"action": "read", "path": "/dev/zero"},
                    {"action": "write", "text": "x", "append": True,
                     "path": null},
                    {"action": "write", "text": "x", "path": null}):
            t0 = time.time()
            r = json.loads(q.rpc(json.dumps(dict(
                dict(tool="file", path=fifo, token=F.token), **req))))
            e = bt.expect_error(r, "invalid_argument", "path")
            assert "not a regular file" in e["message"], e
            assert time.time() - t0 < 5, "took %.1fs" % (time.time() - t0)
        assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced"
        assert stat.S_ISCHR(os.stat(null).st_mode), "the device was replaced"
        # a symlink to a FIFO is the FIFO
        link = os.path.join(T, "fifo-link")
        os.symlink(fifo, link)
        bt.expect_error(fc(F, action="read", path=link), "invalid_argument",
                        "path")
        # regular files still work, and the daemon stops on SIGTERM
        p = os.path.join(T, "after-fifo.bin")
        ok(fc(F, action="write", path=p, text="fine"))
        assert get(p) == b"fine"
        ok(fc(F, action="write", path=p, text="+", append=True))
        assert get(p) == b"fine+"
        F.proc.send_signal(signal.SIGTERM)
        F.proc.wait(15)
    finally:
        if F.proc.poll() is None:
            F.proc.kill()


try:
    bt.run([
        ("file write/read round trip", test_roundtrip),
        ("file 40 MiB in one request", test_large_single_request),
        ("file atomic replace under a concurrent reader",
         test_concurrent_reader),
        ("file chunked transfer past the request limit", test_chunked),
        ("file list, stat, remove, mkdir, move",
         test_list_stat_remove_mkdir_move),
        ("file confinement (openat2)", test_confinement_openat2),
        ("file confinement (fallback walk)", test_confinement_walk),
        ("file refuses FIFOs and devices and stays usable",
         test_fifo_and_devices_refused),
    ])
finally:
    shutil.rmtree(T, ignore_errors=True)
