"""The agent asks its operator (`{"tool":"operator","action":"ask"}`), for
real: a real bureaud on a private Xvfb behind its host agent (`bureau
attach`), the agent's requests through the agent's endpoint with a real nng
client, the operator's side through the real CLI (`bureau approvals`,
`bureau answer`, `bureau deny`), Mission Control's API and its page in a
real headless Chromium. Checked outside the code under test: what the
agent's request got back, the audit trail on disk, the daemon's own log
(the question never reaches the guest).

    PYTHONPATH=tests/lib:host-bridge/python python3 \\
        tests/integration/test_ask.py [BUILD_DIR]
"""

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
    os.environ.setdefault("BUREAU_BUILD", os.path.abspath(sys.argv[1]))

import bt  # noqa: E402

BUREAU = os.path.join(bt.BUILD, "bureau")
X = bt.Xvfb("800x600")
D = bt.Daemon(X, ["--scale", "none", "--log-level", "debug"])
H = bt.Home("bureau-ask-")
NAME = "ask1"
DIR = H.path(NAME)
HOME = H.dir
bureau, must = H.run, H.must
PORT = bt.free_port(pair=False)
MC = None
B = None
A = None


def pending():
    return json.loads(must("approvals", NAME, "--json"))


def ask_async(**req):
    out = {}

    def run():
        out["reply"] = A.call(timeout_ms=120000, tool="operator",
                              action="ask", **req)
    t = threading.Thread(target=run)
    t.start()
    q = bt.wait_for(pending, 20, "the question to be listed")
    return t, out, q[0]


def trail():
    with open(os.path.join(DIR, "audit.log")) as f:
        return [json.loads(line) for line in f]


def test_attach():
    global A
    must("attach", NAME, "--url", D.url, "--token-file", D.token_file,
         "--approve", "bash")
    A = bt.AgentClient(H, NAME)


def test_ask_and_answer():
    msg = "Please solve the CAPTCHA on the login page, then say 'done' \u2713"
    t, out, q = ask_async(message=msg, timeout=60)
    assert q["kind"] == "ask" and q["message"] == msg, q
    assert q["desktop"] == NAME and q["timeout"] == 60, q
    assert "tool" not in q and "request" not in q, q
    listed = must("approvals", NAME)
    assert q["approval"] in listed and " ask " in listed, listed
    assert "CAPTCHA" in listed, listed
    # A question is not approved: it is answered; it still waits.
    p = bureau("approve", NAME, q["approval"])
    assert p.returncode != 0 and "answer" in p.stderr, p.stderr
    assert t.is_alive() and pending()[0]["approval"] == q["approval"]
    out_ = must("answer", NAME, q["approval"], "done, \u00e9t\u00e9 ok")
    assert "answered" in out_ and q["approval"] in out_, out_
    t.join(30)
    r = bt.ok(out["reply"])
    assert r["answer"] == "done, \u00e9t\u00e9 ok", r
    assert pending() == []
    # Once answered it is gone.
    p = bureau("answer", NAME, q["approval"], "again")
    assert p.returncode != 0 and "no pending" in p.stderr, p.stderr
    last = trail()[-1]
    assert (last["tool"], last["action"], last["ok"], last["ask"]) == \
        ("operator", "ask", True, "answered"), last
    assert "CAPTCHA" in last["summary"], last
    assert "[answered]" in must("log", NAME)
    # The question never went to the guest's daemon.
    assert "operator" not in D.logtext()


def test_answer_from_stdin():
    t, out, q = ask_async(message="the 6-digit code from the phone?")
    must("answer", NAME, q["approval"], "-", input="482913\n")
    t.join(30)
    assert bt.ok(out["reply"])["answer"] == "482913"


def test_declined_and_timeout():
    t, out, q = ask_async(message="may I delete the old backups?")
    must("deny", NAME, q["approval"], "--reason", "keep them")
    t.join(30)
    e = bt.expect_error(out["reply"], "permission_denied", "keep them")
    assert "declined" in e["message"], e
    assert trail()[-1]["ask"] == "declined"
    t0 = time.monotonic()
    r = A.call(tool="operator", action="ask", message="anyone?", timeout=1)
    bt.expect_error(r, "timeout", "1 s")
    assert time.monotonic() - t0 < 15
    assert trail()[-1]["ask"] == "timeout"
    assert pending() == []


def test_bad_questions():
    bt.expect_error(A.call(tool="operator", action="ask"),
                    "invalid_argument", "message")
    bt.expect_error(A.call(tool="operator", action="ask", message=""),
                    "invalid_argument", "message")
    bt.expect_error(A.call(tool="operator", action="ask", message="x" * 20000),
                    "invalid_argument", "message")
    for bad in (0, -5, "10", 10 ** 9):
        bt.expect_error(A.call(tool="operator", action="ask", message="m",
                               timeout=bad), "invalid_argument", "timeout")
    bt.expect_error(A.call(tool="operator", action="tell", message="m"),
                    "unknown_action", "ask")
    assert pending() == []
    # The operator's side: an unknown id, an answer to an approval.
    p = bureau("answer", NAME, "nosuchid", "x")
    assert p.returncode != 0 and "nosuchid" in p.stderr, p.stderr
    out = {}

    def run():
        out["reply"] = A.call(timeout_ms=120000, tool="bash",
                              command="echo held")
    t = threading.Thread(target=run)
    t.start()
    ap = bt.wait_for(pending, 20, "the approval")[0]
    assert ap["kind"] == "approval", ap
    p = bureau("answer", NAME, ap["approval"], "yes")
    assert p.returncode != 0 and "approve or deny" in p.stderr, p.stderr
    must("deny", NAME, ap["approval"])
    t.join(30)
    bt.expect_error(out["reply"], "permission_denied")


def test_takeover_and_policy():
    # An operator who has taken over is there: the agent may still ask.
    must("takeover", NAME, "on")
    try:
        t, out, q = ask_async(message="you have the desktop: tell me when")
        must("answer", NAME, q["approval"], "go on")
        t.join(30)
        assert bt.ok(out["reply"])["answer"] == "go on"
    finally:
        must("takeover", NAME, "off")
    # The operator's policy names it like any action.
    must("policy", NAME, "--allow", "computer.screenshot,system")
    try:
        bt.expect_error(A.call(tool="operator", action="ask", message="m"),
                        "permission_denied", "operator")
    finally:
        must("policy", NAME, "--allow", "")
    out_ = must("policy", NAME, "--allow", "operator.ask,system")
    assert "operator.ask" in out_, out_
    must("policy", NAME, "--allow", "")


def test_python_module():
    import bureau
    d = bureau.Desktop(A.url, token=A.token)
    out = {}
    t = threading.Thread(target=lambda: out.update(
        answer=d.ask("red or blue?", timeout=60)))
    t.start()
    q = bt.wait_for(pending, 20, "the question")[0]
    assert q["message"] == "red or blue?", q
    must("answer", NAME, q["approval"], "blue")
    t.join(30)
    assert out["answer"] == "blue", out
    try:
        d.ask("anyone?", timeout=1)
        assert False, "no timeout"
    except bureau.Timeout as e:
        assert "1 s" in e.message, e.message
    d.close()


def test_mission_control():
    global MC
    MC = bt.spawn([BUREAU, "mission-control", "--listen",
                   "127.0.0.1:%d" % PORT], env=H.env, stdout=subprocess.PIPE,
                  stderr=subprocess.DEVNULL, text=True)
    url = MC.stdout.readline().strip().split()[-1]
    with open(os.path.join(HOME, "mission-control.token")) as f:
        token = f.read().strip()

    def api(method, path, body=None):
        req = urllib.request.Request(
            "http://127.0.0.1:%d%s" % (PORT, path), method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": "Bearer " + token,
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
    t, out, q = ask_async(message="which account should I use?")
    st, lst = api("GET", "/api/approvals")
    assert st == 200 and [a for a in lst if a["approval"] == q["approval"]
                          and a["kind"] == "ask"], lst
    st, e = api("POST", "/api/approvals/%s/%s" % (NAME, q["approval"]),
                {"answer": 5})
    assert st == 400 and "answer" in e["error"]["message"], e
    st, e = api("POST", "/api/approvals/%s/%s" % (NAME, q["approval"]),
                {"answer": "x", "allow": True})
    assert st == 400, e
    # The page: the question, a text box and Take over beside it.
    from selenium.webdriver.common.by import By
    global B
    B = bt.chromium()
    B.get(url)
    card = bt.wait_for(lambda: B.find_elements(
        By.CSS_SELECTOR, '[data-kind="ask"][data-approval="%s"]' %
        q["approval"]), 15, "the question's card")[0]
    assert "which account should I use?" in card.text, card.text
    assert card.find_element(By.CSS_SELECTOR, '[data-action="takeover"]')
    card.find_element(By.CSS_SELECTOR, '[data-field="answer"]').send_keys(
        "the team one")
    card.find_element(By.CSS_SELECTOR, '[data-action="answer"]').click()
    t.join(30)
    assert bt.ok(out["reply"])["answer"] == "the team one"
    assert pending() == []


if __name__ == "__main__":
    try:
        bt.run([(n, f) for n, f in list(globals().items())
                if n.startswith("test_") and callable(f)])
    finally:
        if B is not None:
            B.quit()
        if MC is not None:
            MC.terminate()
        H.cleanup(NAME)
