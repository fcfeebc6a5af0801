#!/usr/bin/env python3
"""Write the seed corpora of tests/fuzz/corpus/<target>/ (committed; run
again only to add seeds). Seeds are real requests from docs/protocol.md,
docs/tools-*.md and the integration tests, key combos from the docs and
tests/unit/test_kbd.c, and configuration lines as bureaud(1) documents."""

import hashlib
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "fuzz-token-0123456789"  # as in fuzz_dispatch.c


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def req(**kw):
    r = {"id": "r1", "token": TOKEN}
    r.update(kw)
    return json.dumps(r)


def dispatch():
    reqs = {
        "ping": req(tool="system", action="ping"),
        "info": req(tool="system", action="info"),
        "screenshot": req(tool="computer", action="screenshot"),
        "left_click": req(tool="computer", action="left_click",
                          coordinate=[640, 400]),
        "key": req(tool="computer", action="key", text="ctrl+shift+t"),
        "type": req(tool="computer", action="type", text="héllo\n"),
        "scroll": req(tool="computer", action="scroll",
                      scroll_direction="down", scroll_amount=3,
                      coordinate=[10, 10], text="shift"),
        "drag": req(tool="computer", action="left_click_drag",
                    start_coordinate=[1, 2], coordinate=[3, 4]),
        "zoom": req(tool="computer", action="zoom", region=[0, 0, 10, 10]),
        "oai_click": req(tool="computer", type="click", x=5, y=6,
                         button="left"),
        "oai_keypress": req(tool="computer", type="keypress",
                            keys=["CTRL", "A"]),
        "oai_drag": req(tool="computer", type="drag",
                        path=[{"x": 1, "y": 2}, {"x": 3, "y": 4}]),
        "frame": req(tool="computer", action="mouse_move",
                     coordinate=[1, 1], frame=7, screenshot=False),
        "file_write": req(tool="file", action="write", path="a/b.txt",
                          text="one\ntwo\n", parents=True, mode=420),
        "file_write_b64": req(tool="file", action="write", path="c.bin",
                              data="AAECAw=="),
        "file_read": req(tool="file", action="read", path="a/b.txt",
                         offset=1, length=3),
        "file_list": req(tool="file", action="list", path="."),
        "file_stat": req(tool="file", action="stat", path="a"),
        "file_mkdir": req(tool="file", action="mkdir", path="d/e",
                          parents=True),
        "file_remove": req(tool="file", action="remove", path="c.bin"),
        "file_escape": req(tool="file", action="read", path="../../etc/passwd"),
        "ed_create": req(tool="str_replace_based_edit_tool", command="create",
                         path="e.txt", file_text="alpha\nbeta\n"),
        "ed_view": req(tool="str_replace_based_edit_tool", command="view",
                       path="e.txt", view_range=[1, -1]),
        "ed_replace": req(tool="str_replace_based_edit_tool",
                          command="str_replace", path="e.txt",
                          old_str="beta", new_str="gamma"),
        "ed_insert": req(tool="text_editor", command="insert", path="e.txt",
                         insert_line=1, new_str="x"),
        "ed_undo": req(tool="text_editor", command="undo_edit",
                       path="e.txt"),
        "window_list": req(tool="window", action="list"),
        "window_move": req(tool="window", action="move", window=4194305,
                           x=10, y=20),
        "clip_set": req(tool="clipboard", action="set", text="ñ"),
        "clip_get": req(tool="clipboard", action="get"),
        "bash": req(tool="bash", command="echo hi", session="s1"),
        "process": req(tool="process", action="start",
                       argv=["sleep", "1"], env={"A": "1", "B": None}),
        "launch": req(tool="window", action="launch", command="xterm"),
        "unknown_tool": req(tool="nope"),
        "unknown_action": req(tool="file", action="explode"),
        "wrong_type": req(tool="computer", action="left_click",
                          coordinate="10,20"),
        "bad_token": json.dumps({"token": "nope", "tool": "system",
                                 "action": "ping"}),
        "no_token": json.dumps({"tool": "system", "action": "ping"}),
        "token_type": json.dumps({"token": 7, "tool": "system"}),
        "id_object": req(tool="system", action="ping").replace(
            '"r1"', '{"a": [1, 2.5, null, true]}'),
        "summary_long": req(tool="file", action="write", path="s.txt",
                            text="é" * 200, note="ü" * 300),
    }
    for k, v in reqs.items():
        put("dispatch", k, v)
    put("dispatch", "not_json", "{\"tool\": ")
    put("dispatch", "array", "[1, 2]")
    put("dispatch", "dup_keys", '{"tool": "system", "tool": "file"}')
    put("dispatch", "nul", b'{"tool": "sys\\u0000tem"}')


def keyname():
    combos = ["ctrl+shift+t", "Return", "super", "alt+F4", "KP_Enter", "ñ",
              "+", "ctrl++", "ctrl+A", " space ", "F24", "f0", "PRINT",
              "kp_enter", "scroll_lock", "a+b+c+d+e+f+g+h+i+j+k+l+m+n+o+p+q",
              "ctrl+alt+shift+super+t", "漢", "Page_Up", "arrowleft",
              "ctrl+", "+a", " ", "x" * 300, "\xff"]
    for i, c in enumerate(combos):
        put("keyname", "combo%02d" % i,
            c.encode("latin-1") if c == "\xff" else c.encode())


def config():
    # One input: the config file's text, a NUL, then command-line
    # arguments separated by NULs (see fuzz_config.c).
    files = [
        ("basic", "# bureaud\nlisten = tcp://127.0.0.1:7300\nworkers = 8\n"
                  "scale = 1280x800\nlog-level = debug\n",
         ["--scale", "auto"]),
        ("sizes", "max-request = 64M\nbash-output-max = 1k\n"
                  "settle-ms = 100\nsettle-timeout-ms=2000\n", []),
        ("allow", "allow = bash, file.write computer.*\ninsecure = yes\n"
                  "no-cursor = true\n", ["--allow", "system"]),
        ("bad", "nonsense\n", []),
        ("unknown", "frobnicate = 1\n", []),
        ("listen", "", ["--listen", "ipc:///tmp/x.sock", "--listen",
                        "tcp://127.0.0.1:9"]),
        ("scale_bad", "scale = 99999x1\n", ["--scale=none"]),
        ("events", "events = tcp://127.0.0.1:7400\n", ["--events", ""]),
        ("help", "", ["--help"]),
        ("number", "workers = 9999999999999999999999\nframe-interval-ms = -1\n",
         []),
    ]
    for name, text, args in files:
        put("config", name, text.encode() + b"\0" +
            b"\0".join(a.encode() for a in args))


def scale():
    for i, s in enumerate(["none", "auto", "1280x800", "16x16", "16384x16384",
                           "15x16", "1024X768", "x", "12x", "0x0",
                           "99999999999999999999x1", " 800x600", "800x600 ",
                           "-1x5", "+800x+600", "1e3x1e3"]):
        put("scale", "s%02d" % i, s)


def png():
    # width-1, height-1, level, then pixels (see fuzz_png.c).
    put("png", "tiny", bytes([0, 0, 1]) + b"\x10\x20\x30\x40")
    put("png", "small", bytes([7, 5, 6]) + bytes(range(256)))
    put("png", "tall", bytes([3, 200, 1]) +
        hashlib.sha256(b"x").digest() * 8)
    put("png", "stored", bytes([31, 31, 0]) + b"\xff" * 64)
    # byte 3: padding, then the compressor (bits 2-3): sdeflate on two
    # threads, libdeflate; flat runs with a repeated glyph-like pattern
    glyphs = (b"\x20\x20\x20\x00" * 5 + b"\xff\xff\xff\x00" * 2) * 9
    put("png", "sd2", bytes([63, 200, 4, 4]) + glyphs)
    put("png", "libdeflate", bytes([63, 200, 4, 9]) + glyphs)
    # byte 2 0xf0: raw bytes to sdeflate, rows of byte 0 + 1 bytes
    put("png", "raw", bytes([40, 1, 0xf0, 0]) + glyphs * 3 +
        hashlib.sha256(b"y").digest() * 4)


if __name__ == "__main__":
    dispatch()
    keyname()
    config()
    scale()
    png()
