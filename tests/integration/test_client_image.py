#!/usr/bin/env python3
"""bureau.Image.save against a planted symlink: the temporary file is
made with O_EXCL under an unpredictable name, so a symlink at the name the
module used to use (PATH.tmpPID) is never followed, the target is replaced
atomically, and the file gets the mode a plain open() would.

    tests/integration/test_client_image.py [BUILD_DIR]
"""

import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "host-bridge", "python"))
import bt  # noqa: E402
from bureau.desktop import Image  # noqa: E402 (no libbureau needed)

DATA = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def test_symlink_not_followed():
    d = tempfile.mkdtemp(prefix="bureau-img-")
    victim = os.path.join(d, "victim")
    with open(victim, "wb") as f:
        f.write(b"precious")
    path = os.path.join(d, "shot.png")
    planted = "%s.tmp%d" % (path, os.getpid())
    os.symlink(victim, planted)
    Image(DATA, width=1, height=1).save(path)
    with open(victim, "rb") as f:
        assert f.read() == b"precious", "the symlink was followed"
    assert os.path.islink(planted) and os.readlink(planted) == victim
    assert not os.path.islink(path)
    with open(path, "rb") as f:
        assert f.read() == DATA
    # nothing else left behind
    assert sorted(os.listdir(d)) == sorted(
        ["victim", "shot.png", os.path.basename(planted)]), os.listdir(d)


def test_mode_and_replace():
    d = tempfile.mkdtemp(prefix="bureau-img-")
    path = os.path.join(d, "shot.png")
    old = os.umask(0o027)
    try:
        Image(b"one").save(path)
        ino = os.stat(path).st_ino
        Image(DATA).save(path)
    finally:
        os.umask(old)
    st = os.stat(path)
    assert st.st_mode & 0o777 == 0o640, oct(st.st_mode)
    assert st.st_ino != ino, "rewritten in place, not replaced"
    with open(path, "rb") as f:
        assert f.read() == DATA
    assert os.listdir(d) == ["shot.png"], os.listdir(d)


def test_unwritable_dir_leaves_nothing():
    d = tempfile.mkdtemp(prefix="bureau-img-")
    try:
        Image(DATA).save(os.path.join(d, "no", "such", "shot.png"))
        raise AssertionError("saved into a missing directory")
    except FileNotFoundError:
        pass
    assert os.listdir(d) == []


if __name__ == "__main__":
    bt.run([
        ("client_image_save_symlink", test_symlink_not_followed),
        ("client_image_save_mode", test_mode_and_replace),
        ("client_image_save_missing_dir", test_unwritable_dir_leaves_nothing),
    ])
