"""`bureau mcp NAME`, the MCP server of one desktop, for real: a real
bureaud on a private Xvfb, attached (`bureau attach`) so that its host
agent stands in front of it as it does for a VM desktop, and the official
MCP TypeScript SDK client (@modelcontextprotocol/sdk, `make
openclaw-deps` installs it into .deps/mcp) spawning `build/bureau mcp` over
stdio. Effects are checked outside the code under test: the pointer with
xdotool, the clipboard with xclip, files on disk, the screenshot decoded by
ImageMagick against the X server's own pixels (xwd), the audit trail with
`bureau log`. The protocol's edges (versions, malformed messages,
notifications, the end of stdin) are checked with raw JSON-RPC lines.

    PYTHONPATH=tests/lib:host-bridge/python python3 \\
        tests/integration/test_mcp.py [BUILD_DIR]
"""

import base64
import json
import os
import queue
import random
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time

if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
    os.environ.setdefault("BUREAU_BUILD", os.path.abspath(sys.argv[1]))

import bt  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUREAU = os.path.join(bt.BUILD, "bureau")
NODE = os.path.join(ROOT, ".deps", "node", "node_modules", ".bin", "node")
SDK = os.path.join(ROOT, ".deps", "mcp", "node_modules", "@modelcontextprotocol",
                   "sdk")
DRIVER = os.path.join(ROOT, "tests", "mcp", "client.mjs")
X = bt.Xvfb("800x600")
D = bt.Daemon(X, ["--scale", "none", "--no-cursor"])
H = bt.Home("bureau-mcp-")
SCRATCH = tempfile.mkdtemp(prefix="bureau-mcp-files-")
NAME = "mcp1"
ENV = H.env
bureau, must = H.run, H.must


def pointer():
    out = X.run(["xdotool", "getmouselocation"]).stdout
    m = re.search(r"x:(\d+) y:(\d+)", out)
    return int(m.group(1)), int(m.group(2))


class Sdk:
    """The SDK client (tests/mcp/client.mjs) with `bureau mcp NAME` as its
    server; requests go out tagged, answers come back in any order."""

    def __init__(self, *server_args):
        self.p = subprocess.Popen(
            [NODE, DRIVER, BUREAU, "mcp"] + list(server_args or [NAME]),
            env=dict(ENV, BUREAU_MCP_SDK=SDK), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.q = queue.Queue()
        self.err = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        self.hello = self.q.get(timeout=30)
        self.n = 0

    def _read(self):
        for line in self.p.stdout:
            self.q.put(json.loads(line))
        self.q.put(None)

    def _read_err(self):
        for line in self.p.stderr:
            self.err.append(line)

    def send(self, **req):
        self.n += 1
        req["tag"] = self.n
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return self.n

    def get(self, timeout=60):
        a = self.q.get(timeout=timeout)
        assert a is not None, "the SDK client ended: %s" % "".join(self.err)
        return a

    def ask(self, timeout=60, **req):
        tag = self.send(**req)
        a = self.get(timeout)
        assert a["tag"] == tag, a
        return a

    def call(self, name, **arguments):
        a = self.ask(op="call", name=name, arguments=arguments)
        assert a["ok"], a
        return a["result"]

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(30)
        assert rc == 0, (rc, "".join(self.err))


def texts(result):
    return "\n".join(c["text"] for c in result["content"]
                     if c["type"] == "text")


def ok(result):
    assert result.get("isError") is not True, texts(result)
    return result


S = None


def need_sdk():
    if not os.access(NODE, os.X_OK) or not os.path.isdir(SDK):
        raise RuntimeError("Node 24 or the MCP SDK is missing: run "
                           "make openclaw-deps")


def test_attach():
    must("attach", NAME, "--url", D.url, "--token-file", D.token_file)


def test_sdk_connects():
    global S
    need_sdk()
    S = Sdk()
    h = S.hello
    assert h["connected"] is True
    assert h["server"]["name"] == "bureau", h
    assert h["capabilities"].get("tools") is not None, h
    assert "screenshot" in h["instructions"], h
    # The SDK accepted the version the server answered with: the newest
    # the SDK knows, since it asks for that one.
    assert S.ask(op="ping")["ok"]


def test_sdk_lists_tools():
    a = S.ask(op="list")
    assert a["ok"], a
    tools = {t["name"]: t for t in a["result"]["tools"]}
    for name in ("computer", "bash", "editor", "file", "window", "clipboard",
                 "process", "accessibility", "operator"):
        assert name in tools, sorted(tools)
    for t in tools.values():
        s = t["inputSchema"]
        assert s["type"] == "object" and isinstance(s["properties"], dict), t
        assert t["description"], t
    assert "screenshot" in tools["computer"]["inputSchema"]["properties"][
        "action"]["enum"]


def test_sdk_screenshot_is_a_png_image_block():
    X.spawn(["xlogo", "-geometry", "200x200+500+300"])
    bt.wait_for(lambda: "xlogo" in X.run(["xwininfo", "-root", "-tree"]
                                         ).stdout, 10, "xlogo's window")
    time.sleep(0.5)
    r = ok(S.call("computer", action="screenshot"))
    imgs = [c for c in r["content"] if c["type"] == "image"]
    assert len(imgs) == 1, r["content"]
    assert imgs[0]["mimeType"] == "image/png"
    w, h, rows = bt.decode_png(base64.b64decode(imgs[0]["data"]))
    assert (w, h) == (800, 600), (w, h)
    # The pixels are the X server's own (read back with xwd).
    xw, xh, xrows = X.xwd_pixels()
    assert (xw, xh) == (w, h)
    diff = sum(1 for i in range(0, len(rows), 3)
               if rows[i:i + 3] != xrows[i:i + 3])
    assert diff == 0, "%d pixels differ from the X server's" % diff
    assert len(set(rows[i:i + 3] for i in range(0, len(rows), 3 * 97))) > 1


def test_sdk_bash_runs():
    mark = os.path.join(SCRATCH, "bash-%d" % random.getrandbits(32))
    r = ok(S.call("bash", command="printf mcp-ran > %s; echo listed; "
                  "exit 3" % mark))
    t = texts(r)
    assert "listed" in t and '"exit_code":3' in t, t
    with open(mark) as f:
        assert f.read() == "mcp-ran"


def test_sdk_click_outside_the_screen_is_an_error_result():
    X.run(["xdotool", "mousemove", "5", "5"])
    r = S.call("computer", action="left_click", coordinate=[5000, 5000])
    assert r["isError"] is True, r
    t = texts(r)
    assert t.startswith("out_of_bounds: ") and "coordinate" in t, t
    assert pointer() == (5, 5), pointer()
    # The session goes on.
    ok(S.call("computer", action="cursor_position"))


def test_sdk_input_lands():
    r = ok(S.call("computer", action="mouse_move", coordinate=[123, 45]))
    assert pointer() == (123, 45), pointer()
    # An input action brings the settled screenshot back.
    assert any(c["type"] == "image" for c in r["content"]), r["content"]
    ok(S.call("clipboard", action="set", text="from mcp \u00e9"))
    out = X.run(["xclip", "-selection", "clipboard", "-o"]).stdout
    assert out == "from mcp \u00e9", out


def test_sdk_editor_and_file():
    path = os.path.join(SCRATCH, "ed.txt")
    ok(S.call("editor", command="create", path=path, file_text="one\ntwo\n"))
    with open(path) as f:
        assert f.read() == "one\ntwo\n"
    ok(S.call("editor", command="str_replace", path=path, old_str="two",
              new_str="deux"))
    with open(path) as f:
        assert f.read() == "one\ndeux\n"
    r = ok(S.call("file", action="read", path=path))
    assert "one\ndeux\n" in [c.get("text") for c in r["content"]], r
    binary = os.path.join(SCRATCH, "bin")
    with open(binary, "wb") as f:
        f.write(b"\x00\xff\x01")
    r = ok(S.call("file", action="read", path=binary))
    assert base64.b64encode(b"\x00\xff\x01").decode() in texts(r), r
    r = S.call("editor", command="str_replace", path=path, old_str="absent",
               new_str="x")
    assert r["isError"] is True and "old_str" in texts(r), r


def test_sdk_unknown_tool_is_a_protocol_error():
    a = S.ask(op="call", name="no_such_tool", arguments={})
    assert a["ok"] is False and a["code"] == -32602, a
    assert "no_such_tool" in a["error"], a


def test_sdk_calls_run_concurrently():
    # A long bash command does not hold back a screenshot.
    slow = S.send(op="call", name="bash", arguments={"command": "sleep 4"})
    t0 = time.monotonic()
    fast = S.send(op="call", name="computer",
                  arguments={"action": "screenshot"})
    first = S.get()
    took = time.monotonic() - t0
    assert first["tag"] == fast, first
    assert first["ok"] and not first["result"].get("isError"), first
    assert took < 3.5, took
    second = S.get()
    assert second["tag"] == slow and second["ok"], second


def test_sdk_goes_through_the_host_agent():
    # The operator's policy and takeover apply: they live in the host
    # agent, not in bureaud.
    must("policy", NAME, "--allow", "computer.screenshot,system")
    try:
        mark = os.path.join(SCRATCH, "denied")
        r = S.call("bash", command="touch %s" % mark)
        assert r["isError"] is True, r
        assert texts(r).startswith("permission_denied: "), texts(r)
        assert not os.path.exists(mark)
        ok(S.call("computer", action="screenshot"))
    finally:
        must("policy", NAME, "--allow", "")
    X.run(["xdotool", "mousemove", "5", "5"])
    must("takeover", NAME, "on")
    try:
        r = S.call("computer", action="mouse_move", coordinate=[300, 300])
        assert r["isError"] is True, r
        assert texts(r).startswith("taken_over: "), texts(r)
        ok(S.call("computer", action="screenshot"))
    finally:
        must("takeover", NAME, "off")
    time.sleep(0.3)
    assert pointer() == (5, 5), pointer()
    ok(S.call("computer", action="mouse_move", coordinate=[301, 302]))
    assert pointer() == (301, 302), pointer()
    # The audit trail has what the MCP client did.
    log = must("log", NAME)
    assert "mouse_move" in log and "bash" in log, log[-2000:]


def test_sdk_operator_ask():
    # The agent's question goes to the operator (the host agent holds it)
    # and their answer comes back as the tool's text.
    tag = S.send(op="call", name="operator", arguments={
        "action": "ask", "message": "which account?", "timeout": 60})
    q = bt.wait_for(lambda: json.loads(must("approvals", NAME, "--json")),
                    20, "the question")[0]
    assert q["kind"] == "ask" and q["message"] == "which account?", q
    must("answer", NAME, q["approval"], "the team one")
    a = S.get()
    assert a["tag"] == tag and a["ok"], a
    assert texts(ok(a["result"])) == "the team one", a


def test_sdk_close_ends_the_server():
    pid = S.hello["pid"]
    S.close()
    bt.wait_for(lambda: bt.proc_stat(pid) is None or
                bt.proc_stat(pid)[0] == "Z", 10, "bureau mcp to end")


# --- the protocol's edges, with raw lines ----------------------------------

class Raw:
    def __init__(self, *args):
        self.p = subprocess.Popen([BUREAU, "mcp"] + list(args or [NAME]),
                                  env=ENV, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)

    def line(self, data):
        self.p.stdin.write(data.encode() + b"\n")
        self.p.stdin.flush()

    def read(self, timeout=30):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        assert r, "no answer in %s s" % timeout
        return json.loads(self.p.stdout.readline())

    def rpc(self, method, id=1, params=None, timeout=30):
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.line(json.dumps(msg))
        return self.read(timeout)

    def end(self):
        self.p.stdin.close()
        rc = self.p.wait(10)
        return rc, self.p.stderr.read().decode()


def init(version):
    return {"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}


def test_raw_versions():
    r = Raw()
    for want, got in (("2025-11-25", "2025-11-25"),
                      ("2025-06-18", "2025-06-18"),
                      ("2025-03-26", "2025-03-26"),
                      ("2024-11-05", "2024-11-05"),
                      ("2099-01-01", "2025-11-25")):
        a = r.rpc("initialize", params=init(want))
        assert a["result"]["protocolVersion"] == got, (want, a)
    rc, err = r.end()
    assert rc == 0, err


def test_raw_malformed_messages():
    r = Raw()
    r.line("{not json")
    a = r.read()
    assert a["error"]["code"] == -32700 and a["id"] is None, a
    r.line("[]")
    assert r.read()["error"]["code"] == -32600
    r.line('{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}')
    assert r.read()["error"]["code"] == -32600
    a = r.rpc("no/such/method", id="s1")
    assert a["id"] == "s1" and a["error"]["code"] == -32601, a
    assert "no/such/method" in a["error"]["message"]
    a = r.rpc("tools/call", id=2, params={"arguments": {}})
    assert a["error"]["code"] == -32602 and "name" in a["error"]["message"]
    a = r.rpc("tools/call", id=3, params={"name": "bash", "arguments": 5})
    assert a["error"]["code"] == -32602 and "arguments" in \
        a["error"]["message"]
    # Notifications get no answer: the next line is the ping's.
    r.line('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    r.line('{"jsonrpc":"2.0","method":"notifications/cancelled",'
           '"params":{"requestId":77}}')
    a = r.rpc("ping", id=4)
    assert a == {"jsonrpc": "2.0", "id": 4, "result": {}}, a
    # A bad argument is the tool's error, with the field named.
    a = r.rpc("tools/call", id=5, params={"name": "computer", "arguments": {
        "action": "left_click", "coordinate": "here"}})
    assert a["result"]["isError"] is True, a
    assert "coordinate" in a["result"]["content"][0]["text"], a
    rc, err = r.end()
    assert rc == 0, err


def test_raw_cancelled_call_gets_no_answer():
    r = Raw()
    r.line(json.dumps({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                       "params": {"name": "bash",
                                  "arguments": {"command": "sleep 2"}}}))
    r.line(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 10}}))
    r.line(json.dumps({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
                       "params": {"name": "bash",
                                  "arguments": {"command": "sleep 3"}}}))
    a = r.read(20)
    assert a["id"] == 11, a
    rc, err = r.end()
    assert rc == 0, err


def test_raw_end_of_stdin_ends_it():
    r = Raw()
    assert r.rpc("ping")["result"] == {}
    t0 = time.monotonic()
    rc, err = r.end()
    assert rc == 0, err
    assert time.monotonic() - t0 < 5


def test_no_desktop_answers():
    # Nobody listens there: the call fails as a tool result in about the
    # --timeout, not the approval wait.
    port = bt.free_port(pair=False)
    r = Raw("--url", "tcp://127.0.0.1:%d" % port, "--timeout", "2")
    t0 = time.monotonic()
    a = r.rpc("tools/call", params={"name": "computer",
                                    "arguments": {"action": "screenshot"}},
              timeout=20)
    assert time.monotonic() - t0 < 15
    assert a["result"]["isError"] is True, a
    assert a["result"]["content"][0]["text"].startswith("connect_failed: "), a
    r.end()


def test_usage_errors():
    p = bureau("mcp")
    assert p.returncode == 2 and "NAME" in p.stderr, p.stderr
    p = bureau("mcp", "nosuch")
    assert p.returncode == 2 and "no desktop 'nosuch'" in p.stderr, p.stderr
    p = bureau("mcp", NAME, "extra")
    assert p.returncode == 2 and "extra" in p.stderr, p.stderr


if __name__ == "__main__":
    try:
        bt.run([(n, f) for n, f in list(globals().items())
                if n.startswith("test_") and callable(f)])
    finally:
        H.cleanup(NAME)
        shutil.rmtree(SCRATCH, ignore_errors=True)
