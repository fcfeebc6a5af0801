"""Two desktops hit at once by every client that changes them (issue 39):
the CLI (stop, start, pause, resume, snapshot), Mission Control's
lifecycle API, ephemeral forks and their stops, `bureau config
--idle-save` on and off, and agent calls. Each operation must do what it
says or refuse with a reason of the known kinds; none may hang (a time
limit well above any operation's own) or die of a signal, and no start
may boot where it should restore.

    races.py BUREAU HOME MCPORT MCTOKEN SECONDS NAME...

Prints one line per finding ("FAIL ...") and a summary JSON line last:
{"ops": N, "refused": {reason: n}, "failed": n, "by_kind": {...}}."""
import collections
import json
import random
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

BUREAU, HOME, MCPORT, MCTOKEN, SECONDS = sys.argv[1:6]
NAMES = sys.argv[6:]
SECONDS = float(SECONDS)
OP_LIMIT = 300  # s: any lifecycle step under TCG takes well under this

# What a command may answer when the desktop is not in a state its
# operation applies to, or another holds it: the refusals bureau gives.
REFUSALS = [
    ("busy", r"is busy|holds its lock"),
    ("not running", r"is not running"),
    ("already running", r"is already running"),
    ("saved while idle", r"saved while idle"),
    ("stopping", r"is stopping|was stopped"),
    ("saved", r"is saved"),
    ("no such desktop", r"no desktop '"),
]
ENV = {"BUREAU_HOME": HOME, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}

lock = threading.Lock()
stats = collections.Counter()
refused = collections.Counter()
failures = []
slow = []  # (seconds, what): the slowest operations, for the summary
deadline = time.time() + SECONDS


def fail(what):
    with lock:
        failures.append(what)
    print("FAIL " + what, flush=True)


def timed(what, t0):
    with lock:
        slow.append((round(time.time() - t0, 1), what))
        slow.sort(reverse=True)
        del slow[5:]


def judge(kind, what, rc, out):
    """rc 0, or a refusal of a known kind; never a boot for a restore."""
    with lock:
        stats[kind] += 1
    if "booted it instead" in out:
        fail("%s: a start booted where it should restore: %s" % (what, out))
        return
    if rc == 0:
        return
    for reason, pat in REFUSALS:
        if re.search(pat, out):
            with lock:
                refused[reason] += 1
            return
    fail("%s: exit %s: %s" % (what, rc, out.strip()[-400:]))


def run(kind, args):
    what = "bureau " + " ".join(args)
    t0 = time.time()
    try:
        p = subprocess.run([BUREAU] + args, env=ENV, capture_output=True,
                           text=True, timeout=OP_LIMIT)
    except subprocess.TimeoutExpired:
        fail("%s: no answer within %d s" % (what, OP_LIMIT))
        return None
    timed(what, t0)
    if p.returncode < 0:
        fail("%s: died of signal %d: %s" % (what, -p.returncode, p.stderr))
        return None
    judge(kind, what, p.returncode, p.stdout + p.stderr)
    return p


def cli(name):
    n = 0
    while time.time() < deadline:
        verb = random.choice(["stop", "start", "pause", "resume",
                              "snapshot"])
        args = [verb, name]
        if verb == "snapshot":
            n += 1
            args.append("c%d" % n)
        run("cli " + verb, args)
        time.sleep(random.uniform(0, 1))


def mc(name):
    n = 0
    while time.time() < deadline:
        verb = random.choice(["stop", "start", "pause", "resume",
                              "snapshot"])
        body = {}
        if verb == "snapshot":
            n += 1
            body = {"tag": "m%d" % n}
        what = "POST /api/desktops/%s/%s" % (name, verb)
        req = urllib.request.Request(
            "http://127.0.0.1:%s/api/desktops/%s/%s" % (MCPORT, name, verb),
            data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": "Bearer " + MCTOKEN,
                     "Content-Type": "application/json"})
        t0 = time.time()
        try:
            with urllib.request.urlopen(req, timeout=OP_LIMIT) as r:
                out, st = r.read().decode(), r.status
        except urllib.error.HTTPError as e:
            out, st = e.read().decode(), e.code
        except Exception as e:  # a dead server, a timeout
            fail("%s: %r" % (what, e))
            return
        timed(what, t0)
        msg = out
        try:
            j = json.loads(out)
            msg = j.get("output") or j.get("error", {}).get("message", out)
        except ValueError:
            pass
        # (the API's refusals are 409 with the same reasons)
        judge("mc " + verb, what, 0 if st == 200 else st, msg)
        time.sleep(random.uniform(0, 1))


def forker(name):
    n = 0
    while time.time() < deadline:
        n += 1
        k = "%s-k%d" % (name, n)
        p = run("fork", ["fork", name, k, "--ephemeral"])
        time.sleep(random.uniform(0, 2))
        if p is not None and p.returncode == 0:
            s = run("fork stop", ["stop", k])
            if s is not None and s.returncode == 0 and \
                    "discarded" not in s.stdout:
                fail("stop %s: not discarded: %s" % (k, s.stdout))
        time.sleep(random.uniform(0, 2))


def config(name):
    while time.time() < deadline:
        run("config", ["config", name, "--idle-save",
                       random.choice(["5", "off"])])
        time.sleep(random.uniform(3, 8))


def agent(name):
    req = json.dumps({"tool": "bash", "command": "echo hi"})
    while time.time() < deadline:
        t0 = time.time()
        try:
            p = subprocess.run([BUREAU, "call", "--timeout", "20", name,
                                req], env=ENV, capture_output=True,
                               text=True, timeout=OP_LIMIT)
        except subprocess.TimeoutExpired:
            fail("bureau call %s: no answer within %d s" % (name, OP_LIMIT))
            continue
        timed("bureau call " + name, t0)
        with lock:
            stats["call"] += 1
            if p.returncode != 0:
                # a stopped, paused or stopping desktop does not answer
                # its agent loop: counted, judged by the end's checks
                stats["call unanswered"] += 1
        if p.returncode < 0:
            fail("bureau call %s: died of signal %d" % (name, -p.returncode))
        time.sleep(0.5)


threads = []
for name in NAMES:
    for fn in (cli, mc, forker, config, agent):
        t = threading.Thread(target=fn, args=(name,), daemon=True)
        t.start()
        threads.append(t)
for t in threads:
    t.join(SECONDS + OP_LIMIT + 60)
    if t.is_alive():
        fail("an actor did not end: %s" % t)
print(json.dumps({"ops": sum(v for k, v in stats.items()
                             if k != "call unanswered"),
                  "by_kind": stats, "refused": refused, "slowest": slow,
                  "failed": len(failures)}), flush=True)
