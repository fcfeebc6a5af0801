"""make bench: the host agent's extra hop, as a ratio and a difference.

A real bureaud on a private 1920x1080 Xvfb, scaled to 1280x720, is attached
(`bureau attach`, the same host agent every QEMU desktop gets) and driven
both ways in the same run, the two interleaved request by request so that
both see the same load:

- `system ping` round trips, direct to bureaud and through the agent;
- 1280x720 screenshot round trips (PNG), the screen changed before each
  one (untimed) so that every shot is a real capture, scale and encode;
- the same screenshots with libbureau's C client (benchcli), which is what
  agent loops in C use.

The design's budget: the hop adds at most 1 ms to a screenshot round trip.
"""

import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time

import bt

N_PING = int(os.environ.get("BENCH_AGENT_PINGS", "200"))
N_SHOT = int(os.environ.get("BENCH_AGENT_SHOTS", "40"))
BUREAU = os.path.join(bt.BUILD, "bureau")
BENCHCLI = os.path.join(bt.BUILD, "tests", "benchcli")


def stats(ts):
    ts = sorted(ts)
    return statistics.median(ts), ts[int(len(ts) * 0.9)]


def interleaved(direct, agent, req, n, before=None):
    """Round-trip times (ms) of req, direct and through the agent,
    alternating which goes first."""
    d, a = [], []
    pairs = [(direct, d), (agent, a)]
    for i in range(n):
        for (req_sock, token), out in (pairs if i % 2 == 0 else
                                       pairs[::-1]):
            if before is not None:
                before()
            msg = json.dumps(dict(req, token=token))
            t0 = time.perf_counter()
            r = json.loads(req_sock.rpc(msg))
            out.append((time.perf_counter() - t0) * 1e3)
            assert r.get("ok") is True, r
    return d, a


def main():
    X = bt.Xvfb("1920x1080", wm=True)
    X.spawn(["xterm", "-geometry", "120x40+10+10", "-e", "sh", "-c",
             "ls -la /usr/bin | head -200; sleep 3600"])
    X.spawn(["xlogo", "-geometry", "300x300+1500+100"])
    time.sleep(1)
    D = bt.Daemon(X, ["--scale", "1280x720", "--frame-interval-ms", "0"])
    home = tempfile.mkdtemp(prefix="bureau-agent-bench-")
    base = random.randint(340, 1050) * 30
    env = dict(os.environ, BUREAU_HOME=home,
               BUREAU_PORTS="%d-%d" % (base, base + 29))
    try:
        subprocess.run([BUREAU, "attach", "bench", "--url", D.url,
                        "--token-file", D.token_file], env=env, check=True,
                       capture_output=True, text=True)
        with open(os.path.join(home, "bench", "endpoint")) as f:
            aurl = f.read().strip()
        atoken_file = os.path.join(home, "bench", "token")
        with open(atoken_file) as f:
            atoken = f.read().strip()
        direct = (bt.Req(D.url), D.token)
        agent = (bt.Req(aurl), atoken)
        # warm both paths (connections, the libbureau limit query)
        interleaved(direct, agent, {"tool": "system", "action": "ping"}, 5)

        change = ["xsetroot", "-display", X.name, "-solid", None]

        def new_screen():
            change[4] = "#%06x" % random.getrandbits(24)
            subprocess.run(change, check=True)

        print("# %d pings, %d screenshots each way, interleaved; "
              "load average %s" % (N_PING, N_SHOT,
                                   open("/proc/loadavg").read().split()[0]))
        rows = []
        d, a = interleaved(direct, agent, {"tool": "system",
                                           "action": "ping"}, N_PING)
        rows.append(("system ping", d, a))
        d, a = interleaved(direct, agent, {"tool": "computer",
                                           "action": "screenshot"}, N_SHOT,
                           new_screen)
        rows.append(("screenshot 1280x720", d, a))
        # an unchanged screen: bureaud answers from its cache, so the
        # round trip is mostly transport, the part the hop adds to
        d, a = interleaved(direct, agent, {"tool": "computer",
                                           "action": "screenshot"}, N_PING)
        rows.append(("screenshot, unchanged", d, a))
        for what, d, a in rows:
            (dm, d9), (am, a9) = stats(d), stats(a)
            print("%-22s direct %6.2f ms (p90 %6.2f)  agent %6.2f ms "
                  "(p90 %6.2f)  +%.2f ms  ratio %.2fx" %
                  (what, dm, d9, am, a9, am - dm, am / dm))
        # libbureau's C client, each way, every shot after a screen
        # change: one process per run, so runs of 5 alternate instead of
        # single requests; the medians of the runs' medians are compared
        sh = "xsetroot -display %s -solid \"#$(head -c3 /dev/urandom | " \
            "od -An -tx1 | tr -d ' \\n')\"" % X.name
        res = {"direct": [], "agent": []}
        for i in range(max(2, N_SHOT // 5)):
            sides = (("direct", D.url, D.token_file),
                     ("agent", aurl, atoken_file))
            for what, url, tf in (sides if i % 2 == 0 else sides[::-1]):
                out = subprocess.run([BENCHCLI, url, tf, "shot", "5", sh],
                                     capture_output=True, text=True,
                                     check=True).stdout
                res[what].append(float(dict(
                    f.split("=") for f in out.split())["total_ms"]))
        dm = statistics.median(res["direct"])
        am = statistics.median(res["agent"])
        print("%-22s direct %6.2f ms  agent %6.2f ms  +%.2f ms  ratio %.2fx"
              % ("screenshot (benchcli)", dm, am, am - dm, am / dm))
    finally:
        subprocess.run([BUREAU, "rm", "bench"], env=env,
                       capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
