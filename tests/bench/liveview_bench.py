"""make bench: Mission Control's live view of a QEMU desktop, measured,
beside what a user would otherwise run: Debian's noVNC on QEMU's VNC
server directly (websockify --unix-target on the desktop's vnc.sock).

One desktop from the cached minimal image (`bureau create --image`, the
warm state of its size restores in seconds) under TCG, its screen set to
1280x720 (xrandr) and repainted at 30 Hz by a small bash loop in a
full-screen xterm: every frame a new background colour over the whole
screen and 24 lines of moving text, so that every frame damages all of
1280x720. A key (sent to QEMU's own VNC server from here, through a
connection of its own that asks for no updates) shows ('a') or hides
('b') a magenta block in the top left corner: that is the marker of the
delay measurements.

- frames per second: in the page (Mission Control's /desktop/NAME, and
  noVNC's vnc_lite.html through websockify), a requestAnimationFrame loop
  reads a few canvas pixels and counts the frames that changed, over
  LIVEVIEW_SECONDS (10);
- delay: the host's time when the key went out, to the first animation
  frame of the page whose canvas shows the marker (the page's clock is the
  host's: loopback), LIVEVIEW_TRIALS (10) times, median and p90;
- the source, measured the same way with no page open, read straight
  from QEMU's VNC socket by a raw RFB reader here: the rate QEMU's VNC
  server hands out frames, and the key to QEMU-has-it time (the guest's
  input path, its drawing and QEMU's 30 ms refresh tick). The page's delay
  less that is what the viewer's path adds; the guest's own frame rate
  (frames the loop wrote) is read from the guest.

    /usr/bin/python3 tests/bench/liveview_bench.py BUILDDIR

Needs qemu-system-x86_64, the cached image ($BUREAU_IMAGES/minimal,
default /var/cache/bureau/images), chromium + chromium-driver,
python3-selenium, novnc and websockify; it says SKIP without them.
"""

import json
import os
import random
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
    os.environ["BUREAU_BUILD"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "lib"))
import bt  # noqa: E402

BUREAU = os.path.join(bt.BUILD, "bureau")
IMAGE = os.path.join(os.environ.get("BUREAU_IMAGES",
                                    "/var/cache/bureau/images"), "minimal")
NOVNC = os.environ.get("BUREAU_NOVNC", "/usr/share/novnc")
SECONDS = float(os.environ.get("LIVEVIEW_SECONDS", "10"))
TRIALS = int(os.environ.get("LIVEVIEW_TRIALS", "10"))
HZ = int(os.environ.get("LIVEVIEW_HZ", "30"))
LINES = int(os.environ.get("LIVEVIEW_LINES", "24"))
ACCEL = os.environ.get("BUREAU_ACCEL", "tcg")
W, H = 1280, 720
NAME = "lv"

# The guest's animation (bash, in an xterm of the fixed 6x13 font): a new
# background colour for the whole screen each frame (the palette has no
# magenta), LINES lines of text that move, a frame counter; the marker, a
# magenta block on rows 3-6, columns 3-14 (pixels 12-84 x 26-78), shown
# by the key a, hidden by b. It counts its frames in /tmp/lv-anim.count.
ANIM = r'''#!/bin/bash
hz=${1:-30} lines=${2:-24}
shift 2
pal=("$@")
period=$((1000000 / hz))
exec 2>/tmp/lv-anim.err </dev/tty
size() { read -r rows cols < <(stty size); }
size
# The xterm goes full screen after it started this: follow its size.
trap size WINCH
printf '\e[?25l'
base='bureau live view bench: the quick brown fox jumps over the lazy dog 0123456789 ~!@#$%^&*()_+{}|:<>? '
while [ ${#base} -lt 1200 ]; do base+=$base; done
blank=$(printf '%12s' '')
mark=0 n=0 k=
next=${EPOCHREALTIME/./}
while :; do
	c=${pal[n % ${#pal[@]}]}
	# Row by row, never a clear of the whole screen: the marker's cells
	# are never painted in the background colour while it is on (QEMU's
	# refresh would catch that in between).
	f=$'\e[48;5;'$c$'m\e[38;5;231m\e[1;1H'"frame $n"$'\e[K'
	for ((r = 2; r <= rows; r++)); do
		f+=$'\e['$r$';1H'
		if ((r >= 8 && r < 8 + lines)); then
			o=$(((n * 3 + r * 7) % cols))
			f+=${base:o:cols}
		elif ((mark && r >= 3 && r <= 6)); then
			f+=$'  \e[48;5;201m'$blank$'\e[48;5;'$c$'m\e[K'
		else
			f+=$'\e[2K'
		fi
	done
	printf '%s' "$f"
	n=$((n + 1))
	((n % 15 == 0)) && echo "$n $EPOCHREALTIME $mark" >/tmp/lv-anim.count
	((n % 60 == 0)) && size
	next=$((next + period))
	now=${EPOCHREALTIME/./}
	left=$((next - now))
	if ((left < 1000)); then
		((left < -period)) && next=$now
		left=1000
	fi
	printf -v t '%d.%06d' $((left / 1000000)) $((left % 1000000))
	# a: the marker on, b: off (a key the guest's kernel repeats, as
	# it does when TCG delays the key's release, changes nothing more).
	# A key that came as the timeout ran out is in k all the same.
	k=
	read -rsn1 -t "$t" k
	if [ -n "$k" ]; then
		case $k in a) mark=1 ;; b) mark=0 ;; esac
		echo "$k $EPOCHREALTIME $n" >>/tmp/lv-anim.keys
	fi
done
'''


def palette():
    """xterm 256-colour cube indices, none near magenta."""
    out = []
    for i in range(16, 232):
        r, g, b = (i - 16) // 36, (i - 16) // 6 % 6, (i - 16) % 6
        if r >= 3 and b >= 3 and g <= 2:
            continue
        out.append(i)
    random.Random(7).shuffle(out)
    return out


MARK_PTS = [(30, 40), (60, 60), (78, 72)]      # inside the marker block
FRAME_PTS = [(300, 20), (640, 18), (1000, 22),  # row 2: background only
             (1200, 700), (640, 380), (200, 500)]


def is_mark(px):
    r, g, b = px[:3]
    return r > 200 and g < 80 and b > 200


def now_ms():
    return time.time() * 1000.0


def stats(ts):
    ts = sorted(ts)
    if not ts:
        return float("nan"), float("nan")
    return statistics.median(ts), ts[min(len(ts) - 1, int(len(ts) * 0.9))]


class Env:
    def __init__(self):
        self.home = tempfile.mkdtemp(prefix="bureau-lv-bench-",
                                     dir="/var/tmp")
        base = random.randint(340, 1050) * 30
        self.env = dict(os.environ, BUREAU_HOME=self.home,
                        BUREAU_PORTS="%d-%d" % (base, base + 29))
        self.dir = os.path.join(self.home, NAME)

    def run(self, *args, timeout=120, check=True, stdin=None):
        p = subprocess.run([BUREAU] + list(args), env=self.env,
                           capture_output=True, text=True, timeout=timeout,
                           input=stdin)
        if check and p.returncode != 0:
            raise RuntimeError("bureau %s: exit %d: %s %s" % (
                " ".join(args[:2]), p.returncode, p.stdout.strip()[-400:],
                p.stderr.strip()[-400:]))
        return p

    def call(self, req, timeout=150):
        p = self.run("call", "--timeout", str(timeout), NAME, "-",
                     stdin=json.dumps(req), timeout=timeout + 30,
                     check=False)
        try:
            return json.loads(p.stdout)
        except ValueError:
            raise RuntimeError("bureau call: %d %s %s" % (
                p.returncode, p.stdout[-300:], p.stderr[-300:]))

    def bash(self, command, timeout=60):
        r = self.call({"tool": "bash", "command": command,
                       "session": "lvbench", "timeout": timeout},
                      timeout=timeout + 10)
        return r

    def screen(self):
        r = self.call({"tool": "system", "action": "info"})

        def find(o):
            if isinstance(o, dict):
                if isinstance(o.get("screen"), dict):
                    return o["screen"]
                for v in o.values():
                    f = find(v)
                    if f:
                        return f
            return None
        s = find(r) or {}
        return s.get("width"), s.get("height")


def output(r):
    def find(o):
        if isinstance(o, dict):
            if isinstance(o.get("output"), str):
                return o["output"]
            for v in o.values():
                f = find(v)
                if f is not None:
                    return f
        return None
    return find(r) or ""


class RawVNC:
    """A minimal RFB client of QEMU's VNC socket: raw encoding, 32-bit
    RGBX, reads only the pixels asked for."""

    def __init__(self, path):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(path)
        self.s = s
        self.buf = bytearray(1 << 16)
        v = self.need(12)
        assert bytes(v).startswith(b"RFB 003."), bytes(v)
        s.sendall(b"RFB 003.008\n")
        types = bytes(self.need(self.need(1)[0]))
        assert 1 in types, types
        s.sendall(b"\x01")
        assert bytes(self.need(4)) == b"\0\0\0\0"
        s.sendall(b"\x01")  # shared: the page's viewer stays
        self.w, self.h = struct.unpack(">HH", self.need(4))
        self.need(16)
        self.need(struct.unpack(">I", self.need(4))[0])
        s.sendall(struct.pack(">BxxxBBBBHHHBBBxxx", 0, 32, 24, 0, 1, 255,
                              255, 255, 0, 8, 16))
        s.sendall(struct.pack(">BxHii", 2, 2, 0, -223))
        self.px = {}

    def need(self, n):
        if len(self.buf) < n:
            self.buf = bytearray(n)
        mv = memoryview(self.buf)[:n]
        got = 0
        while got < n:
            k = self.s.recv_into(mv[got:], n - got)
            if k == 0:
                raise EOFError("QEMU closed its VNC socket")
            got += k
        return mv

    def request(self, incremental=True):
        self.s.sendall(struct.pack(">BBHHHH", 3, 1 if incremental else 0,
                                   0, 0, self.w, self.h))

    def key(self, keysym=0x6d):
        self.s.sendall(struct.pack(">BBxxI", 4, 1, keysym) +
                       struct.pack(">BBxxI", 4, 0, keysym))

    def update(self, pts):
        """Read messages up to the next framebuffer update; self.px then
        holds the pixels of pts as of it."""
        while True:
            t = self.need(1)[0]
            if t == 0:
                break
            if t == 2:        # bell
                continue
            if t == 3:        # server cut text
                self.need(3)
                self.need(struct.unpack(">I", self.need(4))[0])
                continue
            if t == 1:        # colour map (not with true colour)
                self.need(3)
                self.need(6 * struct.unpack(">H", self.need(2))[0])
                continue
            raise RuntimeError("unexpected RFB message %d" % t)
        self.need(1)
        for _ in range(struct.unpack(">H", self.need(2))[0]):
            x, y, rw, rh, enc = struct.unpack(">HHHHi", self.need(12))
            if enc == -223:
                self.w, self.h = rw, rh
                continue
            if enc != 0:
                raise RuntimeError("unexpected encoding %d" % enc)
            data = self.need(rw * rh * 4)
            for (px, py) in pts:
                if x <= px < x + rw and y <= py < y + rh:
                    o = ((py - y) * rw + (px - x)) * 4
                    self.px[(px, py)] = tuple(data[o:o + 3])

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


# ---- the page's side ------------------------------------------------------

PAGE_JS = r"""
const pts = arguments[0], mpts = arguments[1];
const c = document.querySelector('#screen canvas');
if (!c || c.width < 2) return null;
if (window.__lv) return [c.width, c.height, window.__lv.mark];
const ctx = c.getContext('2d');
const S = window.__lv = {ticks: 0, changes: 0, marks: [], last: null,
                         mark: null};
const px = (x, y) => ctx.getImageData(x, y, 1, 1).data;
function step() {
  const t = performance.timeOrigin + performance.now();
  let h = '';
  for (const [x, y] of pts) { const d = px(x, y); h += d[0] + ',' + d[1] + ',' + d[2] + ';'; }
  S.ticks++;
  if (h !== S.last) { S.changes++; S.last = h; }
  let on = true;
  for (const [x, y] of mpts) {
    const d = px(x, y);
    if (!(d[0] > 200 && d[1] < 80 && d[2] > 200)) on = false;
  }
  if (on !== S.mark) { S.marks.push([on, t]); S.mark = on; }
  requestAnimationFrame(step);
}
requestAnimationFrame(step);
return [c.width, c.height, null];
"""


class Bench:
    def __init__(self):
        self.e = Env()
        self.browser = None
        self.procs = []
        self.keys = None
        self.notes = []

    # -- the desktop --
    def start_desktop(self):
        t0 = time.time()
        self.e.run("create", NAME, "--image", IMAGE, "--memory", "1536M")
        p = self.e.run("start", NAME, "--accel", ACCEL, "--timeout", "900",
                       timeout=960)
        self.start_s = time.time() - t0
        self.restored = p.stdout.startswith("restored") or \
            "restored" in p.stdout.split("\n")[0]
        self.sock = os.path.join(self.e.dir, "vnc.sock")
        bt.wait_for(lambda: os.path.exists(self.sock), 60, "vnc.sock")

    def set_screen(self):
        w, h = self.e.screen()
        self.screen_before = (w, h)
        if (w, h) != (W, H):
            r = self.e.bash(r'''
export DISPLAY=${DISPLAY:-:0}
[ -r /run/bureau-x/Xauthority ] && export XAUTHORITY=/run/bureau-x/Xauthority
out=$(xrandr --current | awk '/ connected/ { print $1; exit }')
if ! xrandr --output "$out" --mode 1280x720 2>/dev/null; then
	xrandr --newmode lv720 74.50 1280 1344 1472 1664 720 723 728 748 -hsync +vsync 2>/dev/null
	xrandr --addmode "$out" lv720 && xrandr --output "$out" --mode lv720
fi
sleep 1
xrandr --current | head -n 3
''')
            self.xrandr = output(r).strip()
            time.sleep(1)
            w, h = bt.wait_for(lambda: (lambda s: s if s[0] else None)(
                self.e.screen()), 20, "system info")
        self.screen_after = (w, h)
        # What the viewers get: QEMU's VNC framebuffer.
        v = RawVNC(self.sock)
        self.size = (v.w, v.h)
        v.close()
        if self.size != (w, h):
            self.notes.append("system info says %dx%d, QEMU's VNC %dx%d" % (
                (w or 0, h or 0) + self.size))
        if self.screen_before != self.size:
            self.notes.append("the guest's screen was %sx%s; xrandr made it "
                              "%dx%d" % (self.screen_before + self.size))

    def start_animation(self):
        pal = " ".join(str(i) for i in palette())
        cmd = ("cat >/tmp/lv-anim.sh <<'LVANIM'\n" + ANIM + "LVANIM\n" +
               "export DISPLAY=${DISPLAY:-:0}\n"
               "[ -r /run/bureau-x/Xauthority ] && "
               "export XAUTHORITY=/run/bureau-x/Xauthority\n"
               "rm -f /tmp/lv-anim.count\n"
               "setsid -f xterm -fullscreen -geometry %dx%d+0+0 "
               "-fn fixed -b 0 -bw 0 " % (self.size[0] // 6,
                                          self.size[1] // 13) +
               "-title lv-anim -e bash /tmp/lv-anim.sh %d %d %s "
               ">/tmp/lv-xterm.log 2>&1 </dev/null\n" % (HZ, LINES, pal) +
               "for i in $(seq 100); do [ -s /tmp/lv-anim.count ] && break;"
               " sleep 0.2; done; cat /tmp/lv-anim.count /tmp/lv-anim.err "
               "/tmp/lv-xterm.log 2>&1; command -v xterm")
        r = self.e.bash(cmd)
        if not self.guest_count():
            raise RuntimeError("the animation did not start: %s" %
                               output(r)[-500:])
        # Its xterm covers the screen; a click in it gives it the
        # keyboard (the window manager does not always focus a new
        # window), checked with a key that hides the marker.
        for i in range(6):
            self.e.call({"tool": "computer", "action": "left_click",
                         "coordinate": [200 + 40 * i, 300]})
            time.sleep(1)
            self.trigger(False)
            time.sleep(1.5)
            if output(self.e.bash("cat /tmp/lv-anim.keys 2>/dev/null")):
                break
        else:
            raise RuntimeError("the animation's xterm never got a key")

    def guest_count(self):
        """(frames, guest time) of the animation loop, or None."""
        r = self.e.bash("cat /tmp/lv-anim.count 2>/dev/null")
        f = output(r).split()
        try:
            return int(f[0]), float(f[1])
        except (IndexError, ValueError):
            return None

    # -- triggers --
    def trigger(self, on):
        """The key that turns the marker on (a) or off (b)."""
        if self.keys is None:
            self.keys = RawVNC(self.sock)
        self.keys.key(0x61 if on else 0x62)

    # -- the source: QEMU's VNC server read here --
    def source(self):
        v = RawVNC(self.sock)
        pts = FRAME_PTS + MARK_PTS
        try:
            if (v.w, v.h) != self.size:
                self.notes.append("QEMU's VNC says %dx%d" % (v.w, v.h))
            v.request(False)
            v.update(pts)
            last, n, changed = None, 0, 0
            t0 = time.time()
            while time.time() - t0 < SECONDS:
                v.request(True)
                v.update(pts)
                n += 1
                h = tuple(v.px.get(p) for p in FRAME_PTS)
                if h != last:
                    changed += 1
                    last = h
            dt = time.time() - t0
            fps = changed / dt
            # The key to QEMU-has-it, with no page open. The reader asks
            # for every frame all along, as a viewer does: QEMU's refresh
            # slows down (+50 ms a tick, up to 3 s) while no one asks.
            ds = []
            for i in range(TRIALS + 1):
                t1 = time.time() + random.uniform(0.3, 0.7)
                while time.time() < t1:
                    v.request(True)
                    v.update(pts)
                was = all(is_mark(v.px[p]) for p in MARK_PTS)
                t0 = now_ms()
                self.trigger(not was)
                while True:
                    v.request(True)
                    v.update(pts)
                    if all(is_mark(v.px[p]) for p in MARK_PTS) != was:
                        break
                    if now_ms() - t0 > 10000:
                        raise RuntimeError(
                            "the marker never showed in QEMU's VNC "
                            "(the key did not reach the animation)")
                if i > 0:  # the first: warms the key path
                    ds.append(now_ms() - t0)
            return fps, n / dt, ds
        finally:
            v.close()

    # -- a page --
    def page(self, url, label):
        if self.browser is None:
            self.browser = bt.chromium()
        b = self.browser
        b.get(url)

        def ready():
            try:
                r = b.execute_script(PAGE_JS, FRAME_PTS, MARK_PTS)
            except Exception:
                return None
            return r if r and r[0] == self.size[0] and \
                r[1] == self.size[1] else None
        bt.wait_for(ready, 90, "%s: a %dx%d canvas" % ((label,) +
                                                       self.size))
        time.sleep(2)  # the first full frame, then the steady state
        g0 = self.guest_count()
        a = b.execute_script("return [window.__lv.ticks, window.__lv.changes,"
                             " performance.timeOrigin + performance.now()]")
        time.sleep(SECONDS)
        z = b.execute_script("return [window.__lv.ticks, window.__lv.changes,"
                             " performance.timeOrigin + performance.now()]")
        g1 = self.guest_count()
        dt = (z[2] - a[2]) / 1000
        fps, raf = (z[1] - a[1]) / dt, (z[0] - a[0]) / dt
        grate = ((g1[0] - g0[0]) / (g1[1] - g0[1])
                 if g0 and g1 and g1[1] > g0[1] else float("nan"))
        ds = []
        for i in range(TRIALS + 1):
            time.sleep(random.uniform(0.3, 0.7))
            # the page's state settled (no change in flight)
            st = b.execute_script("return window.__lv.mark")
            n0 = b.execute_script("return window.__lv.marks.length")
            t0 = now_ms()
            self.trigger(not st)
            seen = None
            while seen is None:
                time.sleep(0.03)
                ms = b.execute_script(
                    "return window.__lv.marks.slice(arguments[0])", n0)
                for on, t in ms:
                    if on != st:
                        seen = t
                        break
                if seen is None and now_ms() - t0 > 10000:
                    raise RuntimeError("%s: the marker never showed: %s" % (
                        label, b.execute_script(
                            "const S = window.__lv; return [S.ticks, "
                            "S.changes, S.mark, S.marks.slice(-4), S.last]")))
            if i > 0:
                ds.append(seen - t0)
        return fps, raf, grate, ds

    def websockify(self):
        port = bt.free_port(pair=False)
        p = bt.spawn(["websockify", "--web", NOVNC, str(port),
                      "--unix-target=" + self.sock],
                     stdout=subprocess.DEVNULL,
                     stderr=open(os.path.join(self.e.home, "websockify.log"),
                                 "w"))
        self.procs.append(p)

        def up():
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                return True
            except OSError:
                return False
        bt.wait_for(up, 30, "websockify")
        return p, ("http://127.0.0.1:%d/vnc_lite.html?host=127.0.0.1&port=%d"
                   "&path=websockify&view_only=1&scale=1" % (port, port))

    def mission_control(self):
        port = bt.free_port(pair=False)
        p = bt.spawn([BUREAU, "mission-control", "--listen",
                      "127.0.0.1:%d" % port], env=self.e.env,
                     stdout=subprocess.PIPE,
                     stderr=open(os.path.join(self.e.home, "mc.log"), "w"),
                     text=True)
        self.procs.append(p)
        first = p.stdout.readline()
        url = [w for w in first.split() if w.startswith("http://")]
        if not url:
            raise RuntimeError("mission-control: %r" % first)
        return p, url[0], "http://127.0.0.1:%d/desktop/%s" % (port, NAME)

    def stop(self, p):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass

    def diagnose(self):
        """What the guest shows and says, for a failed run
        ($LIVEVIEW_SHOT, default /tmp/liveview-failed.png)."""
        try:
            shot = os.environ.get("LIVEVIEW_SHOT", "/tmp/liveview-failed.png")
            self.e.run("screenshot", NAME, "-o", shot, check=False)
            r = self.e.bash("tail -c 600 /tmp/lv-anim.err /tmp/lv-xterm.log;"
                            " tail -n 5 /tmp/lv-anim.keys; grep i8042 "
                            "/proc/interrupts;"
                            " cat /tmp/lv-anim.count; ps -eo pid,args | "
                            "grep -E 'xterm|lv-anim' | grep -v grep | "
                            "cut -c1-80",
                            timeout=20)
            print("liveview: failed; the screen is in %s; the guest: %s" % (
                shot, output(r)[-1500:]), file=sys.stderr)
        except Exception as ex:
            print("liveview: no diagnosis: %s" % ex, file=sys.stderr)

    def cleanup(self):
        if self.keys is not None:
            self.keys.close()
        if self.browser is not None:
            try:
                self.browser.quit()
            except Exception:
                pass
        for p in self.procs:
            self.stop(p)
        self.e.run("stop", "--force", NAME, timeout=120, check=False)
        self.e.run("rm", "--force", NAME, timeout=300, check=False)
        # never a QEMU left behind
        pidf = os.path.join(self.e.dir, "qemu.pid")
        try:
            pid = int(open(pidf).read().strip())
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        shutil.rmtree(self.e.home, ignore_errors=True)

    def run(self):
        t_all = time.time()
        self.start_desktop()
        self.set_screen()
        self.start_animation()
        size = "%dx%d" % self.size
        if self.size != (W, H):
            self.notes.append("the screen stayed %s (xrandr: %s): all of "
                              "it is measured" % (size, getattr(
                                  self, "xrandr", "?").replace("\n", "; ")))
        time.sleep(2)
        g0 = self.guest_count()
        src_fps, src_ups, src_d = self.source()
        g1 = self.guest_count()
        grate = ((g1[0] - g0[0]) / (g1[1] - g0[1])
                 if g0 and g1 and g1[1] > g0[1] else float("nan"))
        sm, sp = stats(src_d)
        print("liveview source (%s, TCG guest, bash+xterm repainting all of "
              "it at %d Hz, %d text lines): the guest drew %.1f frames/s; "
              "QEMU's VNC read raw here: %.1f fps (%.1f updates/s); key to "
              "the marker in QEMU's VNC: median %.0f ms (p90 %.0f), the "
              "guest's input, drawing and QEMU's refresh tick" % (
                  size, HZ, LINES, grate, src_fps, src_ups, sm, sp),
              flush=True)

        ws, url = self.websockify()
        d_fps, d_raf, d_g, d_d = self.page(url, "noVNC direct")
        self.stop(ws)
        dm, dp = stats(d_d)
        print("liveview noVNC direct (websockify --unix-target, vnc_lite): "
              "%.1f fps (rAF %.0f/s, guest drew %.1f/s), key to page median "
              "%.0f ms (p90 %.0f), after QEMU's VNC has it ~%.0f ms" % (
                  d_fps, d_raf, d_g, dm, dp, dm - sm), flush=True)

        mc, login, durl = self.mission_control()
        if self.browser is None:
            self.browser = bt.chromium()
        self.browser.get(login)
        m_fps, m_raf, m_g, m_d = self.page(durl, "Mission Control")
        mm, mp = stats(m_d)
        print("liveview Mission Control (/desktop/%s, %s): %.1f fps (rAF "
              "%.0f/s, guest drew %.1f/s), key to page median %.0f ms (p90 "
              "%.0f), after QEMU's VNC has it ~%.0f ms" % (
                  NAME, size, m_fps, m_raf, m_g, mm, mp, mm - sm),
              flush=True)
        print("liveview %s on loopback: Mission Control %.1f fps, delay "
              "median %.0f ms (p90 %.0f); noVNC direct: %.1f fps, delay "
              "median %.0f ms (p90 %.0f); ratio fps %.2f, delay %.2f "
              "(delay: key to page; the guest and QEMU's tick take %.0f of "
              "it); goal >= 25 fps: %s, <= 100 ms: %s" % (
                  size, m_fps, mm, mp, d_fps, dm, dp,
                  m_fps / d_fps if d_fps else float("nan"),
                  mm / dm if dm else float("nan"), sm,
                  "yes" if m_fps >= 25 else "no",
                  "yes" if mm <= 100 else "no"), flush=True)
        print("liveview trials, ms: source %s; noVNC direct %s; Mission "
              "Control %s" % tuple(" ".join("%.0f" % x for x in sorted(d))
                                   for d in (src_d, d_d, m_d)))
        for n in self.notes:
            print("liveview note: " + n)
        print("liveview run: %.0f s (desktop %s in %.1f s, load %s)" % (
            time.time() - t_all, "restored" if self.restored else "booted",
            self.start_s, " ".join(open("/proc/loadavg").read().split()[:3])))


def main():
    missing = [w for w, ok in (
        ("qemu-system-x86_64", shutil.which("qemu-system-x86_64")),
        ("the image %s" % IMAGE, os.path.exists(os.path.join(
            IMAGE, "image.json"))),
        ("chromium", os.path.exists("/usr/bin/chromium") and
         os.path.exists("/usr/bin/chromedriver")),
        ("websockify", shutil.which("websockify")),
        ("noVNC", os.path.exists(os.path.join(NOVNC, "vnc_lite.html"))),
        (BUREAU, os.access(BUREAU, os.X_OK))) if not ok]
    if missing:
        print("liveview bench: SKIP (no %s)" % ", ".join(missing))
        return 0
    b = Bench()
    signal.signal(signal.SIGINT, lambda *a: sys.exit(1))
    try:
        b.run()
    except Exception:
        b.diagnose()
        raise
    finally:
        b.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
