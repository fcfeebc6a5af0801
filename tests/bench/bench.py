"""make bench: bureau against what a user would otherwise run, in one run,
as ratios. Screen 1920x1080 scaled to 1280x720.

- screenshot round trip through the socket vs scrot + ImageMagick
  `convert -resize` (the reference computer-use demo's pipeline), on three
  desktops (terminals, a web page in Chromium, a photo), fresh frames (the
  screen changed before each) and cached ones side by side, with every
  stage's share: capture, hash, scale, encode (the daemon's timing), base64
  and JSON (the daemon's serialisation, replayed on the same reply), the
  client's parse and decode, and the transport left over; the C client,
  the Python module, and full size (--scale none); PNG sizes beside
  libpng's at levels 1 and 6;
- the agent's whole step: an input action to the settled screenshot in its
  reply (a right click that opens the window manager's menu, typing into a
  terminal) vs the reference demo's fixed 2 s sleep and its pipeline;
- a click round trip vs one `xdotool mousemove X Y click 1`;
- `type` of 100 mixed Unicode characters, checked exact in an xterm, vs
  `xdotool type` of the same text (time and exactness);
- the idle daemon's CPU and RSS: at start, after 50 fresh screenshots,
  and after the 30 s that give the XShm segment back, with the first
  screenshot after that (timed, and byte for byte the PNG a fresh daemon
  makes of the same screen);
- the compressors side by side on each desktop's frame (capbench -e):
  libdeflate as before, sdeflate on one and two threads, CPU time too.
"""

import base64
import json
import os
import statistics
import subprocess
import sys
import time

import bt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), "host-bridge", "python"))
os.environ.setdefault("BUREAU_LIB", os.path.join(bt.BUILD, "libbureau.so"))
import bureau  # noqa: E402

N_SHOT = int(os.environ.get("BENCH_SHOTS", "30"))
N_REF = int(os.environ.get("BENCH_REF", "8"))
N_CLICK = int(os.environ.get("BENCH_CLICKS", "200"))
N_XDO = int(os.environ.get("BENCH_XDO", "30"))
N_STEP = int(os.environ.get("BENCH_STEPS", "10"))
BENCHCLI = os.path.join(bt.BUILD, "tests", "benchcli")
CAPBENCH = os.path.join(bt.BUILD, "tests", "capbench")

PAGE = """<!doctype html><html><head><title>bench page</title><style>
body{font-family:DejaVu Sans,sans-serif;margin:24px;background:#fafafa}
nav{background:#24292f;color:#fff;padding:12px 18px;font-size:18px}
.card{display:inline-block;width:300px;margin:10px;padding:12px;
border-radius:8px;background:#fff;box-shadow:0 1px 4px #0003}
.card b{color:#0969da} table{border-collapse:collapse;margin-top:12px}
td,th{border:1px solid #d0d7de;padding:4px 10px;font-size:13px}
th{background:#eaeef2}</style></head><body>
<nav>bureau &middot; Docs &middot; Pricing &middot; Blog &middot; Sign in</nav>
<h1>A desktop for every agent</h1>
%s<table><tr><th>desktop</th><th>state</th><th>cpu</th><th>memory</th>
<th>uptime</th></tr>%s</table></body></html>"""


def page_html():
    cards = "".join(
        "<div class=card><b>Card %d</b><p>Lorem ipsum dolor sit amet, "
        "consectetur adipiscing elit, sed do eiusmod tempor incididunt ut "
        "labore et dolore magna aliqua. Ut enim ad minim veniam.</p></div>"
        % i for i in range(9))
    rows = "".join(
        "<tr><td>desk-%02d</td><td>%s</td><td>%d%%</td><td>%d MB</td>"
        "<td>%dh %02dm</td></tr>" % (i, ("running", "paused", "stopped")[i % 3],
                                     i * 7 % 100, 300 + i * 37, i, i * 13 % 60)
        for i in range(14))
    return PAGE % (cards, rows)

TEXT = ("Grüße Ñandú ÀÉÎÕÜ ß ø — 日本語の文章 中文 한국어 😀🎉 ∑√∞≠ ©®™ €£¥ "
        "¿¡ «» ĀĒĪŌŪ αβγδ ЖЗИЙ שלום عربى ✓✗ ½¼")
TEXT = (TEXT * 3)[:100]
assert len(TEXT) == 100


def kv(line):
    return {k: float(v) if k != "size" else v for k, v in
            (f.split("=") for f in line.split())}


def change_cmd(X):
    """A shell command that paints the root a random colour: the next
    screenshot is a fresh frame, never the cache."""
    return "xsetroot -display %s -solid \"#$(head -c3 /dev/urandom | " \
        "od -An -tx1 | tr -d ' \\n')\"" % X.name


def shots(D, n, change=None):
    """benchcli's medians for n screenshots (fresh ones with change)."""
    argv = [BENCHCLI, D.url, D.token_file, "shot", str(n)]
    if change:
        argv.append(change)
    return kv(subprocess.run(argv, capture_output=True, text=True,
                             check=True).stdout)


def png_sizes(X, tmp, size, name="frame"):
    """Our PNG of the screen now vs libpng's at levels 1 and 6 (the frame
    stays in tmp as NAME.png)."""
    xwd = os.path.join(tmp, "frame.xwd")
    png = os.path.join(tmp, name + ".png")
    with open(xwd, "wb") as f:
        subprocess.run(["xwd", "-root", "-silent", "-display", X.name],
                       stdout=f, check=True)
    subprocess.run(["convert", "xwd:" + xwd, png], check=True)
    return kv(subprocess.run([CAPBENCH, "-s", size, png], capture_output=True,
                             text=True, check=True).stdout)


def web_desktop(tmp):
    """A 1920x1080 desktop with a web page in Chromium (app window, so no
    browser chrome), some root left visible for change_cmd."""
    X = bt.Xvfb("1920x1080", wm=True)
    page = os.path.join(tmp, "page.html")
    with open(page, "w") as f:
        f.write(page_html())
    X.spawn(["chromium", "--no-sandbox", "--no-first-run", "--disable-gpu",
             "--password-store=basic", "--user-data-dir=" +
             os.path.join(tmp, "chromium"), "--window-position=40,30",
             "--window-size=1500,960", "--app=file://" + page],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name",
                    "bench page"], env=X.env, capture_output=True,
                   timeout=120)
    time.sleep(3)  # layout and fonts
    return X


def photo_desktop(tmp):
    """A 1920x1080 desktop showing a photo-like image (ImageMagick's
    plasma, smoothed: no photo files ship with Debian's base)."""
    X = bt.Xvfb("1920x1080", wm=True)
    photo = os.path.join(tmp, "photo.png")
    subprocess.run(["convert", "-size", "1400x900", "-seed", "7",
                    "plasma:steelblue-wheat", "-blur", "0x1.5", photo],
                   check=True)
    X.spawn(["display", "-geometry", "+240+80", photo])
    subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--class",
                    "Display"], env=X.env, capture_output=True, timeout=60)
    time.sleep(1)
    return X


def py_shots(D, n, change):
    """The Python module: Desktop.screenshot() on fresh frames, and its
    json.loads + base64 decode alone on one raw reply."""
    with open(D.token_file) as f:
        token = f.read().strip()
    d = bureau.Desktop(D.url, token=token)
    t = []
    for _ in range(n):
        subprocess.run(["sh", "-c", change], check=True)
        t0 = time.perf_counter()
        img = d.screenshot()
        t.append((time.perf_counter() - t0) * 1e3)
    assert bytes(img[:8]) == b"\x89PNG\r\n\x1a\n"
    d.close()
    raw = D.req.rpc(json.dumps({"tool": "computer", "action": "screenshot",
                                "token": D.token}))
    p = []
    for _ in range(n):
        t0 = time.perf_counter()
        base64.b64decode(json.loads(raw)["image"]["data"], validate=True)
        p.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t), statistics.median(p)


def root_children(X):
    out = X.run(["xwininfo", "-root", "-children"]).stdout
    return sum(1 for line in out.splitlines()
               if line.strip().startswith("0x"))


def steps(D, X, tmp):
    """The agent's whole step, action to settled screenshot in the reply:
    a right click on the root that opens openbox's menu (checked by the
    menu's window appearing), and typing into the terminal."""
    menu, typed = [], []
    for _ in range(N_STEP):
        before = root_children(X)
        t0 = time.perf_counter()
        r = D.call(tool="computer", action="right_click",
                   coordinate=[620, 40])
        menu.append((time.perf_counter() - t0) * 1e3)
        assert r["ok"] and r["image"]["data"], r.get("error")
        assert root_children(X) > before, "no menu opened"
        D.call(tool="computer", action="key", text="Escape",
               screenshot=False)
        bt.wait_for(lambda: root_children(X) == before, 5, "menu to close")
    D.call(tool="computer", action="left_click", coordinate=[200, 200],
           screenshot=False)
    for i in range(N_STEP):
        t0 = time.perf_counter()
        r = D.call(tool="computer", action="type", text="step %d " % i)
        typed.append((time.perf_counter() - t0) * 1e3)
        assert r["ok"] and r["image"]["data"], r.get("error")
    # the reference: the action, a fixed 2 s sleep, scrot + convert
    ref = []
    for _ in range(2):
        t0 = time.perf_counter()
        subprocess.run(["xdotool", "mousemove", "1000", "60", "click", "3"],
                       env=X.env, check=True)
        time.sleep(2.0)
        subprocess.run(["scrot", "-o", tmp + "/step.png"], env=X.env,
                       check=True, capture_output=True)
        subprocess.run(["convert", tmp + "/step.png", "-resize",
                        "1280x720!", tmp + "/step-ref.png"], check=True)
        ref.append((time.perf_counter() - t0) * 1e3)
        subprocess.run(["xdotool", "key", "Escape"], env=X.env)
        time.sleep(0.3)
    return (statistics.median(menu), statistics.median(typed),
            statistics.median(ref))


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        st = {l.split(":")[0]: int(l.split()[1]) for l in f
              if l.startswith(("VmRSS", "Rss"))}
    return st


def rss_str(st):
    return "%5.1f MB (anon %.1f, file %.1f, shmem %.1f)" % tuple(
        st.get(k, 0) / 1024 for k in ("VmRSS", "RssAnon", "RssFile",
                                       "RssShmem"))


def main():
    X = bt.Xvfb("1920x1080", wm=True)
    X.spawn(["xterm", "-geometry", "120x40+10+10", "-e", "sh", "-c",
             "ls -la /usr/bin | head -200; sleep 3600"])
    X.spawn(["xlogo", "-geometry", "300x300+1500+100"])
    X.spawn(["xclock", "-geometry", "200x200+1500+500", "-update", "3600"])
    X.spawn(["xcalc", "-geometry", "+1100+600"])
    time.sleep(2)
    D = bt.Daemon(X, ["--scale", "1280x720", "--frame-interval-ms", "0"])
    time.sleep(0.5)
    rss_start = rss_kib(D.proc.pid)
    change = change_cmd(X)
    res = {}
    tmp = D.dir

    # screenshots: three desktops, fresh and cached, C client
    table = []
    for name, XD in (("terminal", X), ("web", None), ("photo", None)):
        if XD is None:
            XD = web_desktop(tmp) if name == "web" else photo_desktop(tmp)
            DD = bt.Daemon(XD, ["--scale", "1280x720",
                                "--frame-interval-ms", "0"])
        else:
            DD = D
        fresh = shots(DD, N_SHOT, change_cmd(XD))
        if DD is D:  # right after the fresh ones: the pool still full
            rss_50 = rss_kib(D.proc.pid)
        cached = shots(DD, N_SHOT)
        sizes = png_sizes(XD, tmp, "1280x720", name)
        table.append((name, fresh, cached, sizes))
        if DD is not D:
            DD.stop()
    shot, cached = table[0][1], table[0][2]
    engines = {}
    for name, _, _, _ in table:
        engines[name] = subprocess.run(
            [CAPBENCH, "-e", "-n", "9", os.path.join(tmp, name + ".png")],
            capture_output=True, text=True, check=True).stdout
    py_ms, py_parse = py_shots(D, N_SHOT, change)
    DF = bt.Daemon(X, ["--scale", "none", "--frame-interval-ms", "0"])
    full = shots(DF, N_SHOT, change)
    full_sizes = png_sizes(X, tmp, "none")
    DF.stop()
    menu_ms, type_ms, step_ref = steps(D, X, tmp)
    # reference: scrot + convert -resize
    ref = []
    for _ in range(N_REF):
        subprocess.run(["sh", "-c", change], env=X.env, check=True)
        t0 = time.perf_counter()
        subprocess.run(["scrot", "-o", tmp + "/scrot.png"], env=X.env,
                       check=True, capture_output=True)
        subprocess.run(["convert", tmp + "/scrot.png", "-resize",
                        "1280x720!", tmp + "/ref.png"], check=True)
        ref.append((time.perf_counter() - t0) * 1e3)
    ref_ms = statistics.median(ref)
    res["shot"] = (shot, cached, ref_ms)

    # click: bureau vs xdotool
    out = subprocess.run([BENCHCLI, D.url, D.token_file, "click",
                          str(N_CLICK), "900", "500"], capture_output=True,
                         text=True, check=True).stdout
    click_ms = kv(out)["total_ms"]
    xdo = []
    for _ in range(N_XDO):
        t0 = time.perf_counter()
        subprocess.run(["xdotool", "mousemove", "1350", "750", "click", "1"],
                       env=X.env, check=True)
        xdo.append((time.perf_counter() - t0) * 1e3)
    xdo_ms = statistics.median(xdo)

    # type: 100 mixed Unicode characters into a UTF-8 xterm's `cat > file`
    def typed_into_xterm(kind, XT):
        path = os.path.join(tmp, "typed-%s.txt" % kind)
        title = "typed-" + kind
        term = XT.spawn(["xterm", "-u8", "-T", title, "-geometry",
                        "100x10+400+700", "-e", "sh", "-c",
                        "exec cat > " + path])
        bt.wait_for(lambda: os.path.exists(path), 10, "xterm")
        # focus by name: a click alone left the new xterm unfocused after
        # xdotool typed into the previous one
        subprocess.run(["xdotool", "search", "--sync", "--name", title,
                        "windowactivate", "--sync"], env=XT.env, check=True)
        time.sleep(0.3)
        textfile = os.path.join(tmp, "text.txt")
        with open(textfile, "w", encoding="utf-8") as f:
            f.write(TEXT + "\n")
        t0 = time.perf_counter()
        if kind == "bureau":
            o = subprocess.run([BENCHCLI, D.url, D.token_file, "type",
                                textfile], capture_output=True, text=True,
                               check=True).stdout
            ms = kv(o)["total_ms"]
            D.call(tool="computer", action="key", text="Return",
                   screenshot=False)
        else:
            subprocess.run(["xdotool", "type", TEXT], env=XT.env, check=True)
            ms = (time.perf_counter() - t0) * 1e3
            subprocess.run(["xdotool", "key", "Return"], env=XT.env)
        time.sleep(1.0)
        got = open(path, encoding="utf-8", errors="replace").read()
        term.terminate()
        want = TEXT + "\n"
        same = sum(1 for a, b in zip(got, want) if a == b)
        return ms, got == want, same, len(want)

    # xdotool on a display of its own: bureaud leaves its bindings on
    # spare keycodes, which xdotool would find there and need no remap;
    # and after xdotool typed, the next xterm on the same server did not
    # get the focus. Each typist gets a fresh server and window manager.
    x_ms, x_ok, x_same, _ = typed_into_xterm("xdotool",
                                             bt.Xvfb("1920x1080", wm=True))
    b_ms, b_ok, b_same, n = typed_into_xterm("bureau", X)

    # idle CPU and RSS
    def ticks():
        with open("/proc/%d/stat" % D.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    time.sleep(1)
    t0, c0 = time.time(), ticks()
    time.sleep(5)
    idle_cpu = (ticks() - c0) / os.sysconf("SC_CLK_TCK") / (time.time() - t0)
    rss_idle6 = rss_kib(D.proc.pid)
    # 30 s after the last grab the segment goes back (x11/display.c)
    time.sleep(26)
    rss_idle = rss_kib(D.proc.pid)
    subprocess.run(["xsetroot", "-display", X.name, "-solid", "#3a5f7d"],
                   check=True)
    t0 = time.perf_counter()
    cold = D.call(tool="computer", action="screenshot")
    cold_ms = (time.perf_counter() - t0) * 1e3
    assert cold["ok"], cold.get("error")
    DC = bt.Daemon(X, ["--scale", "1280x720", "--frame-interval-ms", "0"])
    fresh_png = DC.call(tool="computer", action="screenshot")
    DC.stop()
    cold_same = fresh_png["image"]["data"] == cold["image"]["data"]

    shot, cached, ref_ms = res["shot"]
    print("screenshot 1920x1080 -> 1280x720 PNG through the socket, C client"
          " (bureau_screenshot), medians of %d, ms" % N_SHOT)
    print("  %-8s %-6s %7s %6s %6s %6s %6s %6s %5s %5s %5s %6s %8s %8s %8s" % (
        "desktop", "frame", "total", "daemon", "captur", "hash", "scale",
        "encode", "b64", "json", "parse", "trans", "bytes", "libpng1",
        "libpng6"))
    for name, fresh, cach, sizes in table:
        for kind, r in (("fresh", fresh), ("cached", cach)):
            # what the total spent outside the stages measured apart:
            # nng, the sockets, the scheduler
            trans = r["total_ms"] - r["elapsed_ms"] - r["b64_ms"] - \
                r["json_ms"] - r["parse_ms"]
            print("  %-8s %-6s %7.2f %6.2f %6.2f %6.2f %6.2f %6.2f %5.2f "
                  "%5.2f %5.2f %6.2f %8d %8s %8s" % (
                      name, kind, r["total_ms"], r["elapsed_ms"],
                      r["capture_ms"], r["hash_ms"], r["scale_ms"],
                      r["encode_ms"], r["b64_ms"], r["json_ms"],
                      r["parse_ms"], trans, r["png_bytes"],
                      "%d" % sizes["libpng1"] if kind == "fresh" else "",
                      "%d" % sizes["libpng6"] if kind == "fresh" else ""))
    print("  (daemon = its elapsed_ms: capture..encode and the request; b64"
          " and json: its serialisation after that, replayed; parse: the "
          "client's parse and base64 decode; trans: the rest)")
    print("  bureau, C client       %7.2f ms fresh, %.2f cached (terminal; "
          "target <= 8)" % (shot["total_ms"], cached["total_ms"]))
    print("  bureau, Python module  %7.2f ms fresh (of which json.loads + "
          "b64decode %.2f; target <= 10)" % (py_ms, py_parse))
    print("  full size 1920x1080    %7.2f ms fresh, C client (encode %.2f; "
          "%d bytes, libpng 6 %d = %.2fx; target <= 10 ms, <= 1.2x)" % (
              full["total_ms"], full["encode_ms"], full["png_bytes"],
              full_sizes["libpng6"],
              full_sizes["bytes"] / full_sizes["libpng6"]))
    print("  PNG size vs libpng 6 (1280x720): %s" % ", ".join(
        "%s %.2fx" % (n, s["bytes"] / s["libpng6"]) for n, _, _, s in table))
    print("  scrot+convert %7.2f ms" % ref_ms)
    print("  ratio         %7.1fx faster, C client (target >= 35x); %.1fx "
          "Python" % (ref_ms / shot["total_ms"], ref_ms / py_ms))
    print("agent step: input action to the settled screenshot in its reply "
          "(medians of %d)" % N_STEP)
    print("  right click, openbox menu opens  %7.1f ms" % menu_ms)
    print("  type into the terminal           %7.1f ms" % type_ms)
    print("  demo: action, sleep 2 s, scrot + convert  %7.1f ms (%.0fx; "
          "target <= 200 ms)" % (step_ref, step_ref / max(menu_ms,
                                                            type_ms)))
    print("click round trip")
    print("  bureau        %7.3f ms" % click_ms)
    print("  xdotool       %7.3f ms" % xdo_ms)
    print("  ratio         %7.1fx faster (target >= 20x)" % (
        xdo_ms / click_ms))
    print("type 100 mixed Unicode characters into xterm")
    print("  bureau        %7.1f ms, %s (%d/%d characters right)" % (
        b_ms, "exact" if b_ok else "NOT EXACT", b_same, n))
    print("  xdotool type  %7.1f ms, %s (%d/%d characters right)" % (
        x_ms, "exact" if x_ok else "NOT EXACT", x_same, n))
    print("idle daemon: %.2f%% CPU over 5 s (target 0 %%)" % (idle_cpu * 100))
    print("  RSS at start          %s" % rss_str(rss_start))
    print("  after %d fresh shots  %s" % (N_SHOT, rss_str(rss_50)))
    print("  idle 6 s              %s" % rss_str(rss_idle6))
    print("  idle 32 s             %s (target <= 15 MB)" % rss_str(rss_idle))
    print("  first screenshot after that %.1f ms (capture %.2f), %s" % (
        cold_ms, cold["timing"]["capture_ms"],
        "the same PNG as a fresh daemon's" if cold_same else
        "DIFFERENT from a fresh daemon's PNG"))
    print("compressors on each desktop's frame (capbench -e, medians of 9; "
          "cpu: both threads)")
    for name, out in engines.items():
        for line in out.splitlines():
            print("  %-8s %s" % (name, line[4:]))
    D.stop()
    ok = b_ok and ref_ms / shot["total_ms"] >= 10 and \
        xdo_ms / click_ms >= 20 and cold_same
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
