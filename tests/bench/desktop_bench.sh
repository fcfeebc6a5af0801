#!/bin/sh
# Desktop bench: the time from `bureau start` to the first screenshot
# (cold boot, TCG unless BUREAU_ACCEL says otherwise), `stop` (save),
# `start` from the saved state, `create`+`start` of a clone of the image's
# warm state, and the disk space each costs, on the minimal image (cached
# in $BUREAU_IMAGES, default /var/cache/bureau/images), as ratios against
# the cold boot of the same run.
#
#   tests/bench/desktop_bench.sh BUILDDIR
set -u

build=$(cd "${1:?usage: desktop_bench.sh BUILDDIR}" && pwd)
bureau=$build/bureau
top=$(cd "$(dirname "$0")/../.." && pwd)
images=${BUREAU_IMAGES:-/var/cache/bureau/images}
export BUREAU_PORTS=${BUREAU_PORTS:-7500-7599}
accel=${BUREAU_ACCEL:-tcg}

command -v qemu-system-x86_64 >/dev/null || { echo "desktop bench: SKIP (no qemu)"; exit 0; }
home=$(mktemp -d /var/tmp/bureau-bench.XXXXXX)
export BUREAU_HOME=$home
cleanup() {
	# every desktop's QEMU (they outlive their agents), the clones' too
	for p in "$home"/*/qemu.pid; do
		[ -s "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	done
	rm -rf "$home"
	# the host's KSM as it was, when the bench turned it on
	if [ -n "${ksm_was:-}" ]; then echo "$ksm_was" >"$ksm/run" 2>/dev/null; fi
}
ksm=/sys/kernel/mm/ksm ksm_was=
ksmd_ticks() { awk '{ print $14 + $15 }' "/proc/$(pgrep -x ksmd | head -n1)/stat" 2>/dev/null || echo 0; }
trap cleanup EXIT INT TERM

ms() { date +%s%3N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# (a clone's links to the warm RAM and state are its image's, not its own)
kib() { du -sk --exclude=ram.base --exclude=state.base "$@" | awk '{ s += $1 } END { print s }'; }

deb=$(ls "$build"/bureaud_*.deb 2>/dev/null | tail -n1)
t0=$(ms)
"$bureau" image build --minimal --out "$images" ${deb:+--deb "$deb"} >"$home/image.log" 2>&1 ||
	{ tail -20 "$home/image.log"; echo "desktop bench: image build failed"; exit 1; }
echo "desktop image build --minimal (cache warm unless first run): $(secs "$t0" "$(ms)") s, base image $(du -h "$images/minimal/base.qcow2" | cut -f1)"

t0=$(ms)
# a cold boot (BUREAU_WARM=0: no warm state made for its 2G of memory)
BUREAU_WARM=0 "$bureau" create b --image "$images/minimal" --disk 20G --home 20G --memory 2G >/dev/null || exit 1
echo "desktop create (20G system + 20G home, sparse): $(secs "$t0" "$(ms)") s, costs $(du -sh "$home/b" | cut -f1) on disk"

t0=$(ms)
"$bureau" start b --accel "$accel" --timeout 900 >"$home/start.log" 2>&1 ||
	{ cat "$home/start.log"; exit 1; }
t1=$(ms)
while ! "$bureau" screenshot b -o "$home/shot.png" >/dev/null 2>&1; do
	sleep 0.2
done
t2=$(ms)
# The session draws its desktop shortly after the daemon is up.
while :; do
	"$bureau" screenshot b -o "$home/shot.png" >/dev/null 2>&1
	m=$(convert "$home/shot.png" -colorspace gray -format '%[fx:mean]' info: 2>/dev/null || echo 0)
	awk -v m="$m" 'BEGIN { exit !(m > 0.05) }' && break
	[ $(( $(ms) - t0 )) -gt 300000 ] && break
	sleep 0.5
done
t3=$(ms)
echo "desktop start -> daemon answers ($accel, cold): $(secs "$t0" "$t1") s"
echo "desktop start -> first screenshot ($accel, cold): $(secs "$t0" "$t2") s"
echo "desktop start -> screenshot of the drawn desktop ($accel, cold): $(secs "$t0" "$t3") s"
cold=$((t3 - t0))
cold_k=$(kib "$home/b")
# What a running desktop costs the host: the PSS of QEMU, the network
# keeper and its children (as bureau ls counts it), and the CPU its QEMU
# uses over S seconds, read here from /proc.
cost() { # DIR... -> "PSS_MB CPU_PERCENT" summed over the desktops, over 20 s
	/usr/bin/python3 - "$@" <<'PY'
import os, re, sys, time
def pss(p):
    try:
        kb = int(re.search(r"\nPss:\s+(\d+)", open("/proc/%s/smaps_rollup" % p).read()).group(1))
        kids = open("/proc/%s/task/%s/children" % (p, p)).read().split()
    except (OSError, AttributeError):
        return 0
    return kb * 1024 + sum(pss(k) for k in kids)
def cpu(p):
    f = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
qemus = [open(d + "/qemu.pid").read().strip() for d in sys.argv[1:]]
nets = [open(d + "/net.pid").read().strip() for d in sys.argv[1:]]
c0, t0 = sum(cpu(q) for q in qemus), time.time()
time.sleep(20)
c1, t1 = sum(cpu(q) for q in qemus), time.time()
# the whole, then QEMU's part and the network's (pasta, passt)
print("%.0f %.1f %.0f %.0f" % (sum(pss(q) + pss(n) for q, n in zip(qemus, nets)) / 2**20,
                     (c1 - c0) / (t1 - t0) * 100,
                     sum(pss(q) for q in qemus) / 2**20,
                     sum(pss(n) for n in nets) / 2**20))
PY
}
set -- $(cost "$home/b")
echo "desktop cost, the cold-booted desktop (2G) idle: host memory (PSS) $1 MB, CPU $2% of a core over 20 s"
t0=$(ms)
"$bureau" stop b >/dev/null
save=$(( $(ms) - t0 ))
echo "desktop stop (save): $(secs 0 "$save") s"
echo "desktop saved state on disk: RAM file $(du -h "$home/b/ram" | cut -f1) used of $(ls -lh "$home/b/ram" | awk '{ print $5 }') (sparse), device state $(du -h "$home/b/state" | cut -f1)"
saved_k=$(kib "$home/b/ram" "$home/b/state")
t0=$(ms)
"$bureau" start b --accel "$accel" >/dev/null || exit 1
restore=$(( $(ms) - t0 ))
echo "desktop start from the saved state -> ready (daemon, drawn, clock): $(secs 0 "$restore") s"

# A new desktop from the image's warm state (made here when missing: one
# more cold boot, not timed as the clone's).
img=$(cd "$images/minimal" && pwd -P)
if [ ! -s "$img/warm/state.json" ]; then
	"$bureau" image warm "$img" >"$home/warm.log" 2>&1 ||
		{ tail -20 "$home/warm.log"; echo "desktop bench: image warm failed"; }
fi
clone=
if [ -s "$img/warm/state.json" ]; then
	t0=$(ms)
	"$bureau" create c --image "$img" >"$home/create-c.log" || exit 1
	t1=$(ms)
	"$bureau" start c --accel "$accel" --timeout 900 >"$home/start-c.log" 2>&1 ||
		{ cat "$home/start-c.log"; exit 1; }
	clone=$(( $(ms) - t0 ))
	grep -q '^restored' "$home/start-c.log" || echo "desktop bench: the clone booted: $(head -n1 "$home/start-c.log")"
	clone_k=$(kib "$home/c")
	sed -n 's/^bureau: desktop .c. restored from the image.s warm state in \(.*\) s, took its own identity \(.*\) s later$/desktop clone: the warm state restored in \1 s, its own identity taken \2 s later (host agent)/p' "$home/c/agent.log"
	echo "desktop create+start of a clone of the warm state -> ready: $(secs 0 "$clone") s (create $(secs "$t0" "$t1") s)"
	echo "desktop clone on disk: $clone_k KiB (copies of the warm overlays; the warm RAM it maps, $(kib "$img/warm/ram") KiB, is linked, not copied)"
	# The way into the guest: the network keeper's relay
	# (ipc://DIR/guest.sock) against the forward it relays to (passt's,
	# on the namespace's own 127.0.0.1:7300), both from inside the
	# namespace, interleaved request by request.
	kp=$(cat "$home/c/net.pid" 2>/dev/null)
	pp=$(ps --ppid "$kp" -o pid=,args= 2>/dev/null | awk '/pasta/ { print $1; exit }')
	hp=$(ps --ppid "$pp" -o pid= 2>/dev/null | head -n1 | tr -d ' ')
	if [ -n "$hp" ]; then
		nsenter --net=/proc/"$hp"/ns/net env PYTHONPATH="$top/tests/lib" \
		    BUREAU_BUILD="$build" /usr/bin/python3 - "$home/c" <<'EOF'
import json, statistics, sys, time
import bt
d = sys.argv[1]
tok = open(d + "/guest-token").read().strip()
direct = bt.Req("tcp://127.0.0.1:7300", timeout_ms=60000)
relay = bt.Req("ipc://%s/guest.sock" % d, timeout_ms=60000)
def rt(s, req):
    t0 = time.perf_counter()
    r = json.loads(s.rpc(json.dumps(dict(req, token=tok))))
    assert r.get("ok"), r
    return (time.perf_counter() - t0) * 1e3
# The guest (TCG) is the noise: medians and minimums of many, both ways.
for name, req, n in (("ping", {"tool": "system", "action": "ping"}, 200),
                     ("screenshot", {"tool": "computer", "action": "screenshot"}, 60)):
    a, b = [], []
    for i in range(n):
        order = ((direct, a), (relay, b)) if i % 2 == 0 else ((relay, b), (direct, a))
        for s, o in order:
            o.append(rt(s, req))
    ma, mb = statistics.median(a), statistics.median(b)
    print("desktop relay hop, %s round trip (%d each): direct to passt's forward "
          "median %.2f ms (min %.2f), through the relay median %.2f ms (min %.2f): "
          "%+.2f ms, ratio %.2f"
          % (name, n, ma, min(a), mb, min(b), mb - ma, mb / ma))
direct.close()
relay.close()
EOF
	else
		echo "desktop relay hop: no namespace found under the keeper ${kp:-?}"
	fi
	# N running idle clones of a 1.5 GB desktop: what each costs the
	# host, and what each more adds (the first against four). The first
	# create of that size makes its warm state (one cold boot, untimed).
	"$bureau" stop c >/dev/null 2>&1
	for n in m1 m2 m3 m4; do
		"$bureau" create $n --image "$img" --memory 1536M >/dev/null 2>&1 &&
			"$bureau" start $n --accel "$accel" --timeout 900 >"$home/start-$n.log" 2>&1 ||
			echo "desktop bench: clone $n did not start: $(cat "$home/start-$n.log")"
		if [ $n = m1 ]; then
			sleep 10
			set -- $(cost "$home/m1")
			one_mb=$1 one_cpu=$2 one_q=$3 one_n=$4
		fi
	done
	sleep 10
	set -- $(cost "$home/m1" "$home/m2" "$home/m3" "$home/m4")
	m4_mb=$1
	echo "desktop cost, running idle clones (1536M, 2 cpus, minimal image): one $one_mb MB PSS (QEMU $one_q, network $one_n), CPU $one_cpu% of a core;" \
	    "four $1 MB (QEMU $3, network $4), CPU $2% in all: each more $(( ($1 - one_mb) / 3 )) MB (QEMU $(( ($3 - one_q) / 3 )), network $(( ($4 - one_n) / 3 )))"
	t0=$(ms)
	"$bureau" stop --all >"$home/stop-all.log" 2>&1 || cat "$home/stop-all.log"
	t1=$(ms)
	"$bureau" start --all >"$home/start-all.log" 2>&1 || cat "$home/start-all.log"
	echo "desktop stop --all of 4 running clones: $(secs "$t0" "$t1") s (one stop: $(secs 0 "$save") s); start --all of the 4: $(secs "$t1" "$(ms)") s (one start from saved: $(secs 0 "$restore") s)"
	# A fork of a running idle clone (m1, the three others running): the
	# time until the fork is ready and how long m1 stood still, against
	# a new clone's create+start (a twin from nothing, the state lost),
	# and what the fork costs the host beside a new clone.
	t0=$(ms)
	if "$bureau" fork m1 fk --ephemeral >"$home/fork.log" 2>&1; then
		fork=$(( $(ms) - t0 ))
		sleep 10
		set -- $(cost "$home/fk")
		echo "desktop fork of a running idle 1536M clone -> ready: $(secs 0 "$fork") s" \
		    "($(grep -o "stood still [0-9.]* s" "$home/fork.log")), ratio $(ratio "$fork" "$clone") against create+start of a new clone;" \
		    "the fork costs $1 MB PSS (QEMU $3, network $4; a new clone: $one_mb), CPU $2%, $(du -sk --exclude=ram.base --exclude=state.base --exclude='*.L*.qcow2' "$home/fk" | cut -f1) KiB on disk of its own (the layers it shares with m1 left out)"
		"$bureau" stop fk >/dev/null 2>&1
	else
		echo "desktop bench: fork m1 failed: $(tail -n3 "$home/fork.log")"
	fi
	# The four again with the host's KSM on: bureau marks all a desktop
	# runs mergeable, the host decides (/sys/kernel/mm/ksm/run, off by
	# default; docs/desktops.md). Turned on here for the measurement, at
	# the kernel's scan rate, and set back after; "one" is m1 once the
	# three others are saved.
	ksm_was=$(cat "$ksm/run" 2>/dev/null)
	f0=$(cat "$ksm/full_scans" 2>/dev/null)
	t0=$(ms)
	if [ -z "$ksm_was" ] || [ ! -s "$home/m4/qemu.pid" ]; then
		echo "desktop bench: no KSM in this kernel, or the clones did not run: the KSM part skipped"
	elif ! { echo 1 >"$ksm/run"; } 2>/dev/null || [ "$(cat "$ksm/run")" != 1 ]; then
		echo "desktop bench: KSM cannot be turned on here ($ksm/run): the KSM part skipped"
	else
		while [ "$(cat "$ksm/full_scans")" -lt $((f0 + 3)) ] && [ $(( $(ms) - t0 )) -lt 300000 ]; do
			sleep 2
		done
		scans=$(secs "$t0" "$(ms)")
		k0=$(ksmd_ticks)
		set -- $(cost "$home/m1" "$home/m2" "$home/m3" "$home/m4")
		k1=$(ksmd_ticks)
		four_mb=$1 four_cpu=$2 four_q=$3 four_n=$4
		for n in m2 m3 m4; do "$bureau" stop $n >/dev/null 2>&1; done
		sleep 10
		set -- $(cost "$home/m1")
		echo "desktop cost with the host's KSM on (3 full scans after it was turned on: $scans s; $(cat "$ksm/pages_sharing") pages sharing $(cat "$ksm/pages_shared"), $(cat "$ksm/ksm_zero_pages" 2>/dev/null || echo ?) zero pages): four idle clones $four_mb MB (QEMU $four_q, network $four_n), CPU $four_cpu% in all," \
		    "ksmd $(awk -v a="$k0" -v b="$k1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) / hz / 20 * 100 }')% of a core;" \
		    "one alone $1 MB (QEMU $3, network $4): each more $(( (four_mb - $1) / 3 )) MB (QEMU $(( (four_q - $3) / 3 )), network $(( (four_n - $4) / 3 )))," \
		    "ratio $(ratio "$(( (four_mb - $1) / 3 ))" "$(( (m4_mb - one_mb) / 3 ))") against KSM off"
	fi
	if [ -n "$ksm_was" ]; then
		echo "$ksm_was" >"$ksm/run" 2>/dev/null
		ksm_was=
	fi
	for n in c m1 m2 m3 m4; do
		"$bureau" stop --force $n >/dev/null 2>&1
		"$bureau" rm $n >/dev/null 2>&1
	done
	# A desktop that worked: TCG keeps the code it translated. Two new
	# 1536M clones, one with QEMU's own cache (1 GiB), one with bureau's
	# cap (256 MB), each runs the same guest work, one after the other:
	# its time and QEMU's PSS after it.
	if [ "$accel" = tcg ]; then
		for n in w0 w256; do
			"$bureau" create $n --image "$img" --memory 1536M >/dev/null 2>&1 &&
				env BUREAU_TB_SIZE=${n#w} "$bureau" start $n --accel tcg --timeout 900 >"$home/start-$n.log" 2>&1 ||
				echo "desktop bench: clone $n did not start: $(cat "$home/start-$n.log")"
		done
		sleep 10
		for n in w0 w256; do
			t0=$(ms)
			"$bureau" call --timeout 600 $n '{"tool":"bash","command":"for i in $(seq 100); do ls /usr/bin >/dev/null; python3 -c 1; done; echo ok","timeout":580}' >"$home/work-$n.out" 2>&1 ||
				echo "desktop bench: the work in $n failed: $(head -c 300 "$home/work-$n.out")"
			eval "work_$n=$(( $(ms) - t0 ))"
			set -- $(cost "$home/$n")
			eval "pss_$n=$3"
		done
		echo "desktop that worked (100 times ls /usr/bin and python3 -c 1 in a 1536M clone): TCG cache 256 MB (bureau's) $(secs 0 "$work_w256") s, QEMU's PSS after $pss_w256 MB;" \
		    "QEMU's 1 GiB $(secs 0 "$work_w0") s, $pss_w0 MB: ratio time $(ratio "$work_w256" "$work_w0"), memory $(ratio "$pss_w256" "$pss_w0")"
		for n in w0 w256; do
			"$bureau" stop --force $n >/dev/null 2>&1
			"$bureau" rm $n >/dev/null 2>&1
		done
	fi
fi
echo "desktop ratios against the cold boot to a drawn desktop ($(secs 0 "$cold") s, ${cold_k} KiB on disk):" \
    "save $(ratio "$save" "$cold"), start from saved $(ratio "$restore" "$cold")${clone:+, create+start of a clone $(ratio "$clone" "$cold")};" \
    "disk: saved state $(ratio "$saved_k" "$cold_k")${clone:+, clone $(ratio "$clone_k" "$cold_k")}" \
    "(load: $(cut -d' ' -f1-3 /proc/loadavg))"
t0=$(ms)
"$bureau" stop --shutdown b >/dev/null
echo "desktop stop --shutdown (ACPI): $(secs "$t0" "$(ms)") s"
echo "desktop disk use after one boot: $(du -sh "$home/b" | cut -f1) (system $(du -h "$home/b/system.qcow2" | cut -f1), home $(du -h "$home/b/home.qcow2" | cut -f1))"
"$bureau" rm b >/dev/null
