"""The str_replace_based_edit_tool (text_editor) through the real bureaud:
every command and error case against the reference editor's algorithm
(written out here in Python, tab expansion left out as documented), files
checked with os and hashlib rather than through bureaud."""

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
T = tempfile.mkdtemp(prefix="bureau-editor-")

TRUNC = ("<response clipped><NOTE>To save on context only part of this "
         "file has been shown to you. You should retry this tool after you "
         "have searched inside the file with `grep -n` in order to find the "
         "line numbers of what you are looking for.</NOTE>")


def ed(**k):
    return D.call(dict(tool="str_replace_based_edit_tool", **k))


ok = bt.ok


def err(r, code, message):
    e = bt.expect_error(r, code)
    assert e["message"] == message, "message\n  %r\nexpected\n  %r" % (
        e["message"], message)
    return r


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def put(name, data):
    p = os.path.join(T, name)
    with open(p, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return p


def get(p):
    with open(p, "rb") as f:
        return f.read()


# --- the reference's output, independently -------------------------------

def make_output(content, descriptor, init_line=1):
    if len(content) > 16000:
        content = content[:16000] + TRUNC
    body = "\n".join("%6d\t%s" % (i + init_line, line)
                     for i, line in enumerate(content.split("\n")))
    return "Here's the result of running `cat -n` on %s:\n%s\n" % (
        descriptor, body)


def replace_output(path, before, old, new):
    after = before.replace(old, new)
    rl = before.split(old)[0].count("\n")
    start = max(0, rl - 4)
    end = rl + 4 + new.count("\n")
    snippet = "\n".join(after.split("\n")[start:end + 1])
    return ("The file %s has been edited. " % path +
            make_output(snippet, "a snippet of %s" % path, start + 1) +
            "Review the changes and make sure they are as expected. Edit "
            "the file again if necessary.")


def insert_output(path, before, il, new):
    lines = before.split("\n")
    nl = new.split("\n")
    snippet = "\n".join(lines[max(0, il - 4):il] + nl + lines[il:il + 4])
    return ("The file %s has been edited. " % path +
            make_output(snippet, "a snippet of the edited file",
                        max(1, il - 4 + 1)) +
            "Review the changes and make sure they are as expected (correct "
            "indentation, no duplicate lines, etc). Edit the file again if "
            "necessary.")


def inserted(before, il, new):
    lines = before.split("\n")
    return "\n".join(lines[:il] + new.split("\n") + lines[il:])


# --- tests -----------------------------------------------------------------

TEXT = "".join("line %d\tcol\n" % i for i in range(1, 21))


def test_create():
    p = os.path.join(T, "new.txt")
    r = ok(ed(command="create", path=p, file_text="héllo\n\tworld\n"))
    assert r["output"] == "File created successfully at: %s" % p
    assert get(p) == "héllo\n\tworld\n".encode()
    err(ed(command="create", path=p, file_text="x"), "invalid_argument",
        "File already exists at: %s. Cannot overwrite files using command "
        "`create`." % p)
    assert get(p) == "héllo\n\tworld\n".encode()
    err(ed(command="create", path=os.path.join(T, "other")),
        "invalid_argument",
        "Parameter `file_text` is required for command: create")
    # the alias
    q = os.path.join(T, "alias.txt")
    ok(D.call(tool="text_editor", command="create", path=q, file_text="a"))
    assert get(q) == b"a"


def test_view():
    p = put("view.txt", TEXT)
    r = ok(ed(command="view", path=p))
    assert r["output"] == make_output(TEXT, p), r["output"][:300]
    assert "     1\tline 1\tcol\n" in r["output"]  # tab kept, cat -n style
    r = ok(ed(command="view", path=p, view_range=[3, 5]))
    assert r["output"] == make_output("\n".join(TEXT.split("\n")[2:5]), p,
                                      3)
    r = ok(ed(command="view", path=p, view_range=[19, -1]))
    assert r["output"] == make_output("\n".join(TEXT.split("\n")[18:]), p,
                                      19)
    r = ok(ed(command="view", path=p, view_range=[]))
    assert r["output"] == make_output(TEXT, p)


def test_view_errors():
    p = put("view2.txt", TEXT)
    n = len(TEXT.split("\n"))  # 21: the final newline makes an empty line
    err(ed(command="view", path=p, view_range=[0, 3]), "out_of_bounds",
        "Invalid `view_range`: [0, 3]. Its first element `0` should be "
        "within the range of lines of the file: [1, %d]" % n)
    err(ed(command="view", path=p, view_range=[1, 99]), "out_of_bounds",
        "Invalid `view_range`: [1, 99]. Its second element `99` should be "
        "smaller than the number of lines in the file: `%d`" % n)
    err(ed(command="view", path=p, view_range=[5, 2]), "out_of_bounds",
        "Invalid `view_range`: [5, 2]. Its second element `2` should be "
        "larger or equal than its first `5`")
    for bad in ([1], [1, 2, 3], "1-2", [1.5, 2]):
        err(ed(command="view", path=p, view_range=bad), "invalid_argument",
            "Invalid `view_range`. It should be a list of two integers.")
    err(ed(command="view", path="relative/x.txt"), "invalid_argument",
        "The path relative/x.txt is not an absolute path, it should start "
        "with `/`. Maybe you meant /relative/x.txt?")
    missing = os.path.join(T, "missing.txt")
    err(ed(command="view", path=missing), "not_found",
        "The path %s does not exist. Please provide a valid path." % missing)
    err(ed(command="str_replace", path=T, old_str="a"), "invalid_argument",
        "The path %s is a directory and only the `view` command can be "
        "used on directories" % T)
    err(ed(command="view", path=T, view_range=[1, 2]), "invalid_argument",
        "The `view_range` parameter is not allowed when `path` points to a "
        "directory.")
    err(ed(command="delete", path=p), "unknown_action",
        "Unrecognized command delete. The allowed commands for the "
        "str_replace_based_edit_tool tool are: view, create, str_replace, "
        "insert, undo_edit")
    bt.expect_error(ed(command="view"), "invalid_argument", "path")


def test_view_dir():
    d = os.path.join(T, "tree")
    for sub in ("a/b/c", "a/.hid/x", ".hidden", "z"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    for f in ("top.txt", "a/one.txt", "a/b/two.txt", "a/b/c/three.txt",
              ".dot", "a/.dot2"):
        put(os.path.join("tree", f), "x")
    os.symlink(os.path.join(d, "a"), os.path.join(d, "link"))
    r = ok(ed(command="view", path=d))
    # find -maxdepth 2 -not -path '*/.*', by name (bureaud sorts)
    want = [d]
    for name in sorted(os.listdir(d)):
        if name.startswith("."):
            continue
        want.append(os.path.join(d, name))
        full = os.path.join(d, name)
        if os.path.isdir(full) and not os.path.islink(full):
            want += [os.path.join(full, n) for n in sorted(os.listdir(full))
                     if not n.startswith(".")]
    assert d + "/a/b" in want and d + "/a/b/c" not in want and \
        len(want) == 7, want
    assert r["output"] == ("Here's the files and directories up to 2 levels "
                           "deep in %s, excluding hidden items:\n%s\n\n" % (
                               d, "\n".join(want))), r["output"]


def test_str_replace():
    p = put("rep.txt", TEXT)
    r = ok(ed(command="str_replace", path=p, old_str="line 10\tcol\n",
              new_str="ten\n10\n"))
    want = TEXT.replace("line 10\tcol\n", "ten\n10\n")
    assert get(p) == want.encode()
    assert r["output"] == replace_output(p, TEXT, "line 10\tcol\n",
                                         "ten\n10\n"), r["output"]
    assert r["occurrences"] == 1
    # new_str left out deletes
    ok(ed(command="str_replace", path=p, old_str="ten\n"))
    assert get(p) == want.replace("ten\n", "").encode()


def test_str_replace_errors():
    body = "alpha\nbeta alpha\ngamma\nalpha\n"
    p = put("rep2.txt", body)
    before = sha(p)
    r = err(ed(command="str_replace", path=p, old_str="delta"),
            "invalid_argument",
            "No replacement was performed, old_str `delta` did not appear "
            "verbatim in %s." % p)
    assert r["occurrences"] == 0
    r = err(ed(command="str_replace", path=p, old_str="alpha", new_str="x"),
            "invalid_argument",
            "No replacement was performed. Multiple occurrences of old_str "
            "`alpha` in lines [1, 2, 4]. Please ensure it is unique")
    assert r["occurrences"] == 3
    # several occurrences of a multi-line string: numbered by first line
    r = err(ed(command="str_replace", path=put("rep3.txt", "a\nb\na\nb\n"),
               old_str="a\nb"), "invalid_argument",
            "No replacement was performed. Multiple occurrences of old_str "
            "`a\nb` in lines [1, 3]. Please ensure it is unique")
    assert r["occurrences"] == 2
    err(ed(command="str_replace", path=p), "invalid_argument",
        "Parameter `old_str` is required for command: str_replace")
    assert sha(p) == before, "a failed replace changed the file"


def test_insert():
    p = put("ins.txt", TEXT)
    for il in (0, 7, 21):
        before = get(p).decode()
        r = ok(ed(command="insert", path=p, insert_line=il,
                  new_str="NEW %d\nsecond" % il))
        assert get(p).decode() == inserted(before, il, "NEW %d\nsecond" % il)
        assert r["output"] == insert_output(p, before, il,
                                            "NEW %d\nsecond" % il), \
            r["output"]
    n = len(get(p).decode().split("\n"))
    err(ed(command="insert", path=p, insert_line=n + 1, new_str="x"),
        "out_of_bounds", "Invalid `insert_line` parameter: %d. It should be "
        "within the range of lines of the file: [0, %d]" % (n + 1, n))
    err(ed(command="insert", path=p, insert_line=-1, new_str="x"),
        "out_of_bounds", "Invalid `insert_line` parameter: -1. It should be "
        "within the range of lines of the file: [0, %d]" % n)
    err(ed(command="insert", path=p, new_str="x"), "invalid_argument",
        "Parameter `insert_line` is required for command: insert")
    err(ed(command="insert", path=p, insert_line=1), "invalid_argument",
        "Parameter `new_str` is required for command: insert")


def test_undo():
    raw = b"caf\xc3\xa9\r\n\tindent\n\xff\xfe not utf-8\nend"
    p = put("undo.bin", raw)
    os.chmod(p, 0o640)
    states = [hashlib.sha256(raw).hexdigest()]
    ok(ed(command="str_replace", path=p, old_str="indent", new_str="X"))
    states.append(sha(p))
    ok(ed(command="insert", path=p, insert_line=1, new_str="ins"))
    states.append(sha(p))
    ok(ed(command="str_replace", path=p, old_str="end", new_str="fin\n"))
    # bytes the edit did not touch are kept: \r\n, the tab, invalid UTF-8
    assert get(p) == (b"caf\xc3\xa9\r\nins\n\tX\n\xff\xfe not utf-8\n"
                      b"fin\n"), get(p)
    for want in reversed(states):
        r = ok(ed(command="undo_edit", path=p))
        assert r["output"].startswith("Last edit to %s undone successfully. "
                                      "Here's the result of running `cat -n` "
                                      "on %s:\n" % (p, p)), r["output"]
        assert sha(p) == want
    assert get(p) == raw and os.stat(p).st_mode & 0o777 == 0o640
    err(ed(command="undo_edit", path=p), "invalid_argument",
        "No edit history found for %s." % p)
    # undo of a create removes what it created
    q = os.path.join(T, "created.txt")
    ok(ed(command="create", path=q, file_text="x"))
    ok(ed(command="undo_edit", path=q))
    assert not os.path.exists(q)


def test_limits():
    body = "".join("%d é\n" % i for i in range(100000))
    p = put("big.txt", body)
    r = ok(ed(command="view", path=p))
    assert r["output"].endswith(TRUNC + "\n"), r["output"][-300:]
    assert r["output"] == make_output(body, p)  # clipped at 16000 chars
    huge = put("huge.txt", b"y" * ((16 << 20) + 1))
    bt.expect_error(ed(command="view", path=huge), "too_large", "path")
    bt.expect_error(ed(command="str_replace", path=huge, old_str="y"),
                    "too_large", "path")


def test_root():
    root = tempfile.mkdtemp(prefix="bureau-edroot-")
    outside = put("outside.txt", "secret")
    os.symlink(outside, os.path.join(root, "link"))
    os.symlink(os.path.dirname(outside), os.path.join(root, "dirlink"))
    R = bt.Daemon(X, ["--root", root])
    try:
        inside = os.path.join(root, "in.txt")
        ok(R.call(tool="text_editor", command="create", path=inside,
                  file_text="ok\n"))
        assert get(inside) == b"ok\n"
        for path in (outside, root + "/../" + os.path.basename(T) +
                     "/outside.txt", root + "/link",
                     root + "/dirlink/outside.txt"):
            for cmd in ({"command": "view"},
                        {"command": "str_replace", "old_str": "secret",
                         "new_str": "pwned"}):
                bt.expect_error(R.call(dict(tool="text_editor", path=path,
                                            **cmd)),
                                "permission_denied", "path")
        assert get(outside) == b"secret"
        assert R.alive()
    finally:
        R.stop()
        shutil.rmtree(root)


def test_fifo_refused():
    """A FIFO (or a device) is refused before any open: opening a FIFO
    waits for a writer, and the old editor did that holding the lock every
    edit takes, so one request hung the editor and the shutdown for
    good. Its own daemon: the old code leaves this one stuck."""
    F = bt.Daemon(X)
    try:
        fifo = os.path.join(T, "fifo")
        os.mkfifo(fifo)
        # a short receive timeout: the old daemon never answers
        q = bt.Req(F.url, timeout_ms=8000)
        for cmd in ({"command": "str_replace", "old_str": "a",
                     "new_str": "b"},
                    {"command": "view"},
                    {"command": "insert", "insert_line": 0, "new_str": "x"},
                    {"command": "undo_edit"}):
            t0 = time.time()
            r = json.loads(q.rpc(json.dumps(dict(
                tool="str_replace_based_edit_tool", path=fifo,
                token=F.token, **cmd))))
            e = bt.expect_error(r, "invalid_argument", "path")
            assert "FIFO" in e["message"], e
            assert time.time() - t0 < 5, "took %.1fs" % (time.time() - t0)
        assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced"
        for dev in ("/dev/zero", "/dev/null"):
            bt.expect_error(F.call(tool="text_editor", command="view",
                                   path=dev), "invalid_argument", "path")
        # other edits still go through, and the daemon stops on SIGTERM
        p = put("after-fifo.txt", "one\n")
        ok(F.call(tool="text_editor", command="str_replace", path=p,
                  old_str="one", new_str="two"))
        assert get(p) == b"two\n"
        F.proc.send_signal(signal.SIGTERM)
        F.proc.wait(15)
    finally:
        if F.proc.poll() is None:
            F.proc.kill()


def test_same_file_edits_take_turns():
    """Edits of one file are serialized (each a read-modify-write): many
    concurrent inserts into one file all land, none lost. (Once the lock
    became per file this caught edits keyed "PATH (deleted)": the path of
    a descriptor whose file a concurrent edit had just replaced.)"""
    p = put("turns.txt", "")
    errs = []

    def worker(i):
        q = bt.Req(D.url)
        for k in range(25):
            r = json.loads(q.rpc(json.dumps(dict(
                tool="text_editor", command="insert", path=p,
                insert_line=0, new_str="w%d-%d" % (i, k), token=D.token))))
            if not r.get("ok"):
                errs.append(r)

    th = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in th:
        t.start()
    for t in th:
        t.join(120)
    assert errs == [], errs[:2]
    lines = [x for x in get(p).decode().split("\n") if x]
    assert sorted(lines) == sorted("w%d-%d" % (i, k) for i in range(4)
                                   for k in range(25)), lines


try:
    bt.run([
        ("editor create", test_create),
        ("editor view", test_view),
        ("editor view errors", test_view_errors),
        ("editor view directory", test_view_dir),
        ("editor str_replace", test_str_replace),
        ("editor str_replace errors", test_str_replace_errors),
        ("editor insert", test_insert),
        ("editor undo restores exact bytes", test_undo),
        ("editor limits", test_limits),
        ("editor confined by --root", test_root),
        ("editor refuses a FIFO and stays usable", test_fifo_refused),
        ("editor edits of one file take turns",
         test_same_file_edits_take_turns),
    ])
finally:
    shutil.rmtree(T, ignore_errors=True)
