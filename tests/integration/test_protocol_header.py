"""The protocol header is the one list of error codes: libbureau (built
from it), the Python module's and the OpenClaw plugin's own lists, and
docs/protocol.md must all agree with common/bureau_protocol.h.
No daemon or display needed: the header is parsed as text, libbureau is
asked through its own bureau_error_name."""

import ctypes
import glob
import os
import re
import subprocess
import sys

import bt

# A sanitized libbureau.so loads into Python only with the sanitizer
# runtimes preloaded (as tests/integration/test_client.sh does): re-run
# this script so.
_preload = []
for _v in glob.glob(os.path.join(bt.BUILD, ".variant-san-*")):
    for _san in _v.rsplit(".variant-san-", 1)[1].split("-"):
        if _san in ("address", "undefined", "thread"):
            _lib = {"address": "asan", "undefined": "ubsan",
                    "thread": "tsan"}[_san]
            _preload.append(subprocess.run(
                ["cc", "-print-file-name=lib%s.so" % _lib],
                capture_output=True, text=True).stdout.strip())
if _preload and "BUREAU_PRELOADED" not in os.environ:
    os.execve(sys.executable, [sys.executable] + sys.argv, dict(
        os.environ, LD_PRELOAD=" ".join(_preload), BUREAU_PRELOADED="1",
        ASAN_OPTIONS="detect_leaks=0"))

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "host-bridge", "python"))

from bureau import errors  # noqa: E402


def read(*path):
    with open(os.path.join(TOP, *path)) as f:
        return f.read()


def header_codes():
    """{number: (suffix, wire name)} from BUREAU_PROTOCOL_ERRORS."""
    text = read("common", "bureau_protocol.h")
    body = text[text.index("#define BUREAU_PROTOCOL_ERRORS(X)"):]
    body = body[:body.index("\n\n")]
    codes = {int(n): (suffix, name) for n, suffix, name in re.findall(
        r'X\((\d+),\s*(\w+),\s*"(\w+)"\)', body)}
    n = int(re.search(r"#define BUREAU_PROTOCOL_NERRORS (\d+)",
                      text).group(1))
    # numbered from 1 up to NERRORS, with gaps where libbureau has its own
    # codes (test_header_is_well_formed checks they never meet)
    assert min(codes) == 1 and max(codes) == n, codes
    assert len({name for _, name in codes.values()}) == len(codes), \
        "a name twice"
    return codes


def lib_local_codes():
    """libbureau's own codes from bureau.h: {number: constant}."""
    text = read("host-bridge", "include", "bureau.h")
    enum = text[text.index("enum bureau_error {"):]
    enum = enum[:enum.index("};")]
    return {int(v): k for k, v in re.findall(r"BUREAU_(\w+) = (-\d+)",
                                              enum)}


def libbureau():
    lib = ctypes.CDLL(os.path.join(bt.BUILD, "libbureau.so"))
    lib.bureau_error_name.restype = ctypes.c_char_p
    lib.bureau_error_name.argtypes = [ctypes.c_int]
    return lambda code: lib.bureau_error_name(code).decode()


def test_header_is_well_formed():
    codes = header_codes()
    local = lib_local_codes()
    # the daemon's codes and libbureau's own never share a number
    assert not set(-n for n in codes) & set(local), local


def test_libbureau():
    name = libbureau()
    for n, (suffix, wire) in header_codes().items():
        assert name(-n) == wire, (n, name(-n), wire)
    for code in lib_local_codes():
        assert name(code) not in {w for _, w in header_codes().values()}


def test_python_module():
    codes = header_codes()
    wire = {w for _, w in codes.values()}
    assert set(errors.DAEMON_ERRORS) == wire, \
        set(errors.DAEMON_ERRORS) ^ wire
    name = libbureau()
    for n, (_, w) in codes.items():
        assert errors.LIB_CODES[-n].code == w, (n, errors.LIB_CODES[-n])
    # its map of libbureau's return codes covers every code bureau.h has,
    # under libbureau's names (the local argument codes raise otherwise)
    for code, cls in errors.LIB_CODES.items():
        assert cls.code == name(code), (code, cls.code, name(code))
    missing = set(-n for n in codes) - set(errors.LIB_CODES)
    assert not missing, missing


def test_openclaw_plugin():
    js = read("host-bridge", "openclaw", "src", "client.js")
    block = js[js.index("const LOCAL_CODES = {"):]
    block = block[:block.index("};")]
    local = {int(k): v for k, v in re.findall(r'"(-\d+)":\s*"(\w+)"', block)}
    assert local, "no LOCAL_CODES in client.js"
    name = libbureau()
    for code, v in local.items():
        assert name(code) == v, (code, v, name(code))
    # every transport and local code of bureau.h that the plugin cannot
    # get from the reply's error.code is named there
    want = {c for c in lib_local_codes() if c <= -20}
    assert set(local) == want, set(local) ^ want


def test_docs():
    doc = read("docs", "protocol.md")
    table = doc[doc.index("### Error codes"):]
    table = table[:table.index("\n\n", table.index("| ---"))]
    listed = re.findall(r"^\| `(\w+)` \|", table, re.M)
    assert listed == [w for _, (_, w) in sorted(header_codes().items())], \
        listed


if __name__ == "__main__":
    bt.run([(n, f) for n, f in list(globals().items())
            if n.startswith("test_") and callable(f)])
