"""`bureau receive` (the far end of `bureau move`) trusts nothing it is
sent (DESIGN.md, v4, "Received desktops"; issue 38): tar streams crafted
here with Python's tarfile, piped into the real build/bureau with
BUREAU_HOME a private directory, no VM. Each bad stream (symlinks to
files outside, a device node, a FIFO, a hard link, a disk backed by a
host file, a name no desktop directory holds, a member outside the
desktop's directory, a desktop.json field out of place) is refused with a
message naming the entry, changes no file outside, and leaves nothing
behind (no desktop, no temporary directory). What is taken is plain
files (0600) in a 0700 directory, owned by us whatever owners and modes
came, every disk's backing a layer of its own directory or the image's
base disk. A good stream, crafted and from a real `bureau send`, is
taken.

    PYTHONPATH=tests/lib python3 tests/integration/test_receive.py [BUILD]
"""

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
    os.environ.setdefault("BUREAU_BUILD", os.path.abspath(sys.argv[1]))

import bt  # noqa: E402

BUREAU = os.path.join(bt.BUILD, "bureau")
TOP = os.path.realpath(tempfile.mkdtemp(prefix="bureau-receive-"))
HOME = os.path.join(TOP, "home")
OUT = os.path.join(TOP, "outside")  # what no receive may touch
IMAGE = os.path.join(TOP, "image")
BASE = os.path.join(IMAGE, "base.qcow2")
WORK = os.path.join(TOP, "work")
NAME = "recv"
ENV = dict(os.environ, BUREAU_HOME=HOME, BUREAU_PORTS="17310-17399")
for d in (HOME, OUT, IMAGE, WORK):
    os.makedirs(d)


def qemu_img(*args):
    subprocess.run(["qemu-img"] + list(args), check=True,
                   stdout=subprocess.DEVNULL)


def setup():
    # A minimal image: image.json and a base disk (receive checks both,
    # QEMU never runs here).
    with open(os.path.join(IMAGE, "image.json"), "w") as f:
        json.dump({"disk": "base.qcow2", "kernel": "vmlinuz",
                   "initrd": "initrd.img", "cmdline": "console=ttyS0",
                   "user": "bureau", "uid": 1000, "gid": 1000}, f)
    qemu_img("create", "-q", "-f", "qcow2", BASE, "64M")
    qemu_img("create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", BASE,
             os.path.join(WORK, "system.qcow2"), "64M")
    qemu_img("create", "-q", "-f", "qcow2", os.path.join(WORK, "home.qcow2"),
             "16M")
    # a fork's layer under the system disk, by its relative name
    qemu_img("create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", BASE,
             os.path.join(WORK, "system.L0a1b.qcow2"), "64M")
    qemu_img("create", "-q", "-f", "qcow2", "-F", "qcow2", "-b",
             "system.L0a1b.qcow2", os.path.join(WORK, "system-on-layer"),
             "64M")
    # a home disk whose backing file is a file of the host
    qemu_img("create", "-q", "-f", "qcow2", "-F", "raw", "-b",
             "/etc/hostname", os.path.join(WORK, "home-on-host"), "16M")
    # a system disk backed by a layer name that loops back to itself
    qemu_img("create", "-q", "-f", "qcow2", "-F", "qcow2", "-u", "-b",
             "system.L0c.qcow2", os.path.join(WORK, "loop"), "64M")
    for n in ("victim", "victim2", "victim3"):
        with open(os.path.join(OUT, n), "w") as f:
            f.write("untouched " + n + "\n")
        os.chmod(os.path.join(OUT, n), 0o644)


def disk(name):
    with open(os.path.join(WORK, name), "rb") as f:
        return f.read()


def config(**over):
    c = {"name": NAME, "image": IMAGE, "memory": 1024, "cpus": 1,
         "disk": 64 << 20, "home": 16 << 20, "port": 7310,
         "net": "internet", "allow": "", "approve": "",
         "approve_timeout": 300, "created": 1796669644, "idle_save": 0}
    c.update(over)
    return json.dumps(c, indent=2).encode()


def good(name=NAME, **over):
    """The members of a well-formed desktop directory: (path, kind,
    data-or-link, mode, uid)."""
    return [
        (name, "dir", None, 0o700, 0),
        (name + "/desktop.json", "file", config(name=name, **over), 0o600,
         0),
        (name + "/system.qcow2", "file", disk("system.qcow2"), 0o644, 0),
        (name + "/home.qcow2", "file", disk("home.qcow2"), 0o644, 0),
        (name + "/token", "file", b"a" * 64, 0o600, 0),
        (name + "/guest-token", "file", b"b" * 64, 0o600, 0),
        (name + "/machine-id", "file", b"c" * 32, 0o644, 0),
        (name + "/endpoint", "file", b"tcp://127.0.0.1:7310\n", 0o644, 0),
    ]


def replace(members, path, new):
    return [new if m[0] == path else m for m in members]


def stream(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for path, kind, data, mode, uid in members:
            i = tarfile.TarInfo(path)
            i.mode, i.uid, i.gid, i.mtime = mode, uid, uid, 1796669644
            if kind == "dir":
                i.type = tarfile.DIRTYPE
            elif kind == "symlink":
                i.type, i.linkname = tarfile.SYMTYPE, data
            elif kind == "hardlink":
                i.type, i.linkname = tarfile.LNKTYPE, data
            elif kind == "chr":
                i.type, i.devmajor, i.devminor = tarfile.CHRTYPE, 1, 3
            elif kind == "fifo":
                i.type = tarfile.FIFOTYPE
            if kind == "file":
                i.size = len(data)
                t.addfile(i, io.BytesIO(data))
            else:
                t.addfile(i)
    return buf.getvalue()


def receive(data, name=NAME, bureau=BUREAU):
    return subprocess.run([bureau, "receive", name, "--host", "local"],
                          input=data, env=ENV, capture_output=True,
                          timeout=60)


def snapshot(top):
    """Every file under top: its kind, mode, owner and content."""
    seen = {}
    for root, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            data = None
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    data = f.read()
            elif stat.S_ISLNK(st.st_mode):
                data = os.readlink(p)
            seen[p] = (st.st_mode, st.st_uid, st.st_mtime_ns, data)
    return seen


OUTSIDE0 = None


def rm(name=NAME):
    shutil.rmtree(os.path.join(HOME, name), ignore_errors=True)


def refused(members, entry, why=None, name=NAME):
    """The stream is refused naming entry; nothing outside changed,
    nothing left in the store."""
    rm(name)  # (what an earlier case left, on a bureau that took it)
    before = sorted(os.listdir(HOME))
    p = receive(stream(members), name)
    err = p.stderr.decode(errors="replace")
    assert p.returncode != 0, "taken: %s %s" % (p.stdout, err)
    assert entry in err, (entry, err)
    if why is not None:
        assert why in err, (why, err)
    assert not os.path.lexists(os.path.join(HOME, name)), \
        os.listdir(os.path.join(HOME, name))
    after = sorted(os.listdir(HOME))
    assert [n for n in after if n not in before and n != ".lock"] == [], \
        after
    assert snapshot(OUT) == OUTSIDE0, "a file outside changed"
    assert os.path.exists("/etc/hostname")
    return err


def taken(members, name=NAME):
    rm(name)
    p = receive(stream(members), name)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    assert snapshot(OUT) == OUTSIDE0, "a file outside changed"
    d = os.path.join(HOME, name)
    st = os.lstat(d)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    assert st.st_uid == os.geteuid()
    for root, dirs, files in os.walk(d):
        for n in dirs:
            st = os.lstat(os.path.join(root, n))
            assert stat.S_ISDIR(st.st_mode), n
            assert stat.S_IMODE(st.st_mode) == 0o700, (n, oct(st.st_mode))
        for n in files:
            st = os.lstat(os.path.join(root, n))
            assert stat.S_ISREG(st.st_mode), n
            assert st.st_nlink == 1, n
            assert st.st_uid == os.geteuid() and \
                st.st_gid == os.getegid(), (n, st.st_uid, st.st_gid)
            # endpoint: receive's own (0644), the rest 0600
            want = 0o644 if n == "endpoint" and root == d else 0o600
            assert stat.S_IMODE(st.st_mode) == want, (n, oct(st.st_mode))
    assert [x for x in os.listdir(HOME) if x.startswith(".receive")] == []
    return d


def test_good_stream_taken():
    d = taken(good() + [
        (NAME + "/audit", "dir", None, 0o755, 0),
        (NAME + "/audit/12.png", "file", b"\x89PNG", 0o644, 0),
        (NAME + "/audit.log", "file", b"{}\n", 0o644, 0),
        (NAME + "/console.log", "file", b"boot\n", 0o644, 0)])
    with open(os.path.join(d, "desktop.json")) as f:
        c = json.load(f)
    assert c["name"] == NAME and c["image"] == IMAGE, c
    assert 17310 <= c["port"] <= 17399, c  # given here
    with open(os.path.join(d, "endpoint")) as f:
        assert f.read() == "tcp://127.0.0.1:%d\n" % c["port"]
    p = subprocess.run([BUREAU, "ls"], env=ENV, capture_output=True,
                       text=True)
    assert p.returncode == 0 and NAME in p.stdout, p.stdout + p.stderr
    rm()


def test_layer_taken():
    """A system disk on a fork's layer (by its relative name), the layer
    on the image's base disk: taken."""
    m = replace(good(), NAME + "/system.qcow2",
                (NAME + "/system.qcow2", "file", disk("system-on-layer"),
                 0o644, 0))
    taken(m + [(NAME + "/system.L0a1b.qcow2", "file",
                disk("system.L0a1b.qcow2"), 0o644, 0)])
    rm()


def test_warm_clone_taken():
    """A clone not started yet: its warm-from names its image's warm
    state, taken; one naming another directory is refused (below)."""
    os.makedirs(os.path.join(IMAGE, "warm"), exist_ok=True)
    mark = {"warm": os.path.join(IMAGE, "warm"), "home": 16 << 20,
            "warm_home": 16 << 20, "disk": 64 << 20, "warm_disk": 64 << 20,
            "state_blake2b": "ab" * 32}
    taken(good() + [(NAME + "/warm-from", "file",
                     json.dumps(mark).encode(), 0o600, 0),
                    (NAME + "/warm-token", "file", b"w" * 64, 0o600, 0)])
    rm()
    mark["warm"] = IMAGE + "/warm/../../outside"
    refused(good() + [(NAME + "/warm-from", "file",
                       json.dumps(mark).encode(), 0o600, 0)], "warm-from")


def test_modes_and_owners_not_taken():
    """Modes 0777 (and setuid) and a foreign owner came: taken as plain
    files of ours, 0600, in a 0700 directory."""
    m = [(p, k, d, 0o4777 if k == "file" else 0o777, 12345)
         for p, k, d, mode, uid in good()]
    m.append((NAME + "/audit", "dir", None, 0o777, 12345))
    m.append((NAME + "/audit/1.png", "file", b"x", 0o6777, 12345))
    taken(m)
    rm()


def test_symlink_tmp_refused():
    """(a) desktop.json.tmp a symlink to a file outside: receive wrote
    desktop.json through it (hb_write_file's old temporary)."""
    refused(good() + [(NAME + "/desktop.json.tmp", "symlink",
                       os.path.join(OUT, "victim"), 0o777, 0)],
            NAME + "/desktop.json.tmp", "symbolic link")
    # and endpoint's
    refused(good() + [(NAME + "/endpoint.tmp", "symlink",
                       os.path.join(OUT, "victim"), 0o777, 0)],
            NAME + "/endpoint.tmp")


def test_symlinks_to_host_files_refused():
    """(b) system.qcow2, ram, console.log, desktop.json as symlinks to
    files of the host."""
    for entry, target in (("system.qcow2", os.path.join(OUT, "victim2")),
                          ("ram", "/etc/hostname"),
                          ("console.log", os.path.join(OUT, "victim3")),
                          ("endpoint", os.path.join(OUT, "victim"))):
        m = [x for x in good() if x[0] != NAME + "/" + entry]
        m.append((NAME + "/" + entry, "symlink", target, 0o777, 0))
        refused(m, NAME + "/" + entry, "symbolic link")


def test_devices_refused():
    """(c) a device node, a FIFO, a hard link."""
    refused(good() + [(NAME + "/ram", "chr", None, 0o666, 0)],
            NAME + "/ram", "character device")
    refused(good() + [(NAME + "/console.log", "fifo", None, 0o666, 0)],
            NAME + "/console.log", "FIFO")
    refused(good() + [(NAME + "/guest-token.old", "hardlink",
                       NAME + "/token", 0o600, 0)],
            NAME + "/guest-token.old", "hard link")


def test_backing_file_refused():
    """(d) a home disk backed by a file of the host; a system disk backed
    by an absolute path that is not the image's; a layer chain that
    loops; a layer named but not sent."""
    m = replace(good(), NAME + "/home.qcow2",
                (NAME + "/home.qcow2", "file", disk("home-on-host"), 0o644,
                 0))
    refused(m, "home.qcow2", "/etc/hostname")
    m = replace(good(), NAME + "/system.qcow2",
                (NAME + "/system.qcow2", "file", disk("home-on-host"),
                 0o644, 0))
    refused(m, "system.qcow2", "/etc/hostname")
    m = replace(good(), NAME + "/system.qcow2",
                (NAME + "/system.qcow2", "file", disk("system-on-layer"),
                 0o644, 0))
    refused(m, "system.qcow2", "system.L0a1b.qcow2")
    refused(good() + [(NAME + "/system.L0c.qcow2", "file", disk("loop"),
                       0o644, 0)], "system.L0c.qcow2", "loops")
    # not a qcow2 at all
    m = replace(good(), NAME + "/home.qcow2",
                (NAME + "/home.qcow2", "file", b"raw bytes", 0o644, 0))
    refused(m, "home.qcow2", "not a qcow2")


def test_unknown_names_refused():
    """(f) a name no desktop directory holds, one it holds only while it
    runs, one outside the desktop's directory, and '..'."""
    refused(good() + [(NAME + "/evil.sh", "file", b"#!/bin/sh\n", 0o755,
                       0)], NAME + "/evil.sh", "no such file")
    refused(good() + [(NAME + "/qemu.pid", "file", b"1\n", 0o644, 0)],
            NAME + "/qemu.pid", "never sent")
    refused(good() + [(NAME + "/audit/x.sh", "file", b"x", 0o644, 0)],
            NAME + "/audit/x.sh")
    refused(good() + [("other/desktop.json", "file", b"{}", 0o644, 0)],
            "other/desktop.json", "not in desktop")
    refused(good() + [(NAME + "/../escape", "file", b"x", 0o644, 0)],
            NAME + "/../escape", "'..'")
    refused(good() + [(NAME + "/audit", "file", b"x", 0o644, 0)],
            NAME + "/audit", "a file where a directory belongs")
    assert not os.path.exists(os.path.join(HOME, "escape"))
    assert not os.path.exists(os.path.join(HOME, "other"))


def test_config_refused():
    """desktop.json field by field: an image not on this machine, an
    unknown field, a field of another type, another name, an attached
    desktop's; warm-from naming a directory outside the image."""
    refused(good(image="/etc"), "desktop.json", "image")
    refused(good(image=IMAGE + "/../image"), "desktop.json", "image")
    refused(good(hook="/bin/sh"), "desktop.json", "'hook'")
    refused(good(memory="1024"), "desktop.json", "'memory'")
    refused(good(allow="bash; rm"), "desktop.json", "'allow'")
    refused(good(kind="attached"), "desktop.json", "'kind'")
    m = replace(good(), NAME + "/desktop.json",
                (NAME + "/desktop.json", "file", config(name="other"),
                 0o600, 0))
    refused(m, "desktop.json", "'name'")
    refused(good() + [(NAME + "/warm-from", "file",
                       json.dumps({"warm": "/etc"}).encode(), 0o600, 0)],
            "warm-from", "warm state")
    refused(good() + [(NAME + "/state.json", "file",
                       json.dumps({"ram_file": "../../etc/shadow"}).encode(),
                       0o600, 0)], "state.json", "ram_file")


def test_net_allow_not_taken():
    """The sender's --net-allow (here 0.0.0.0/0: every private network of
    this machine's) is checked but not taken: the desktop arrives with
    none, and receive says what it was and how to give it. Its limits,
    which only take from what it may use, come along."""
    rm()
    p = receive(stream(good(net_allow="0.0.0.0/0", cpu_limit=0.5,
                            disk_bps=1 << 20)))
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 0, err
    with open(os.path.join(HOME, NAME, "desktop.json")) as f:
        c = json.load(f)
    assert "net_allow" not in c, c
    assert c["cpu_limit"] == 0.5 and c["disk_bps"] == 1 << 20, c
    assert "--net-allow '0.0.0.0/0', not taken" in err, err
    assert "bureau config %s --net-allow" % NAME in err, err
    rm()
    refused(good(net_allow="10.0.0.0/8; rm -rf /"), "desktop.json",
            "'net_allow'")
    refused(good(cpu_limit="all"), "desktop.json", "'cpu_limit'")


def test_stream_format_refused():
    """What tar would read otherwise than the scan before it: a header
    whose checksum is wrong (tar skips to the next that adds up), GNU
    long names (not POSIX), a global pax header (applies to all after)."""
    data = bytearray(stream(good()))
    i = data.index(b"recv/token")  # its ustar name, in its header
    data[i + 5:i + 10] = b"tokeX"
    p = receive(bytes(data))
    assert p.returncode != 0 and b"checksum" in p.stderr, p.stderr
    assert not os.path.lexists(os.path.join(HOME, NAME))
    for fmt, pax, why in ((tarfile.GNU_FORMAT, None, b"not POSIX"),
                          (tarfile.PAX_FORMAT, {"comment": "x"},
                           b"global pax header")):
        buf = io.BytesIO()
        kw = {"pax_headers": pax} if pax else {}
        with tarfile.open(fileobj=buf, mode="w", format=fmt, **kw) as t:
            i = tarfile.TarInfo(NAME)
            i.type = tarfile.DIRTYPE
            t.addfile(i)
        p = receive(buf.getvalue())
        assert p.returncode != 0 and why in p.stderr, p.stderr
        assert not os.path.lexists(os.path.join(HOME, NAME))
    assert [x for x in os.listdir(HOME) if x.startswith(".receive")] == []


def test_cut_short_refused():
    data = stream(good())
    p = receive(data[:len(data) // 2])
    assert p.returncode != 0
    assert not os.path.lexists(os.path.join(HOME, NAME))
    assert [x for x in os.listdir(HOME) if x.startswith(".receive")] == []


def test_exists_refused():
    rm()
    assert receive(stream(good())).returncode == 0
    p = receive(stream(good()))
    assert p.returncode != 0 and b"exists" in p.stderr, p.stderr
    rm()


def test_real_send_taken():
    """What `bureau send` of a desktop `bureau create` made writes is
    taken (a second store on this machine, the image the same)."""
    src = os.path.join(TOP, "src")
    env = dict(ENV, BUREAU_HOME=src, BUREAU_WARM="0")
    p = subprocess.run([BUREAU, "create", "sent", "--image", IMAGE,
                        "--disk", "1G", "--home", "64M", "--memory", "512M"],
                       env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 and "mke2fs" in p.stderr + p.stdout:
        print("    skipped: no mke2fs here")
        return
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([BUREAU, "send", "sent"], env=env,
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = receive(p.stdout, "sent")
    assert r.returncode == 0, r.stderr
    d = os.path.join(HOME, "sent")
    # all of it but the lock send took (never sent)
    want = sorted(n for n in os.listdir(os.path.join(src, "sent"))
                  if n != "lock")
    assert sorted(os.listdir(d)) == want, (os.listdir(d), want)
    p = subprocess.run([BUREAU, "status", "sent"], env=ENV,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    rm("sent")


if __name__ == "__main__":
    if shutil.which("qemu-img") is None:
        print("PASS receive (skipped: no qemu-img)")
        sys.exit(0)
    try:
        setup()
        OUTSIDE0 = snapshot(OUT)
        bt.run([(n, f) for n, f in list(globals().items())
                if n.startswith("test_") and callable(f)])
    finally:
        shutil.rmtree(TOP, ignore_errors=True)
