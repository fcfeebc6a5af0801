#!/bin/sh
# End-to-end: a desktop's QEMU confined and limited (DESIGN.md, "Least
# privilege"; issue 38, items 3 and 4).
#
#   tests/e2e/test_limits.sh BUILDDIR
#
# With the minimal image under TCG, a 2-vCPU 1536M clone created with
# --cpu-limit 0.5 --disk-bps 2M. Checked from outside bureau: QEMU's
# /proc status (seccomp filter mode 2, no_new_privs, no capability
# left, none in its bounding set), its cgroup as the kernel holds it
# (CPU quota, memory = RAM + 512M, pids), its CPU time while the guest
# burns both vCPUs (at most 0.6 of a core over 10 s), a direct write in
# the guest throttled by QEMU (query-block over QMP shows the rate), and
# `bureau config` changing both on the running desktop. Save, restore
# and a fork still work so confined; the fork's QEMU has a cgroup of its
# own, and a stopped desktop's cgroup is gone. Out-of-range values are
# refused naming the option, changing nothing.
set -u

build=${1:?usage: test_limits.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "limits e2e" qemu-system-x86_64 qemu-img mke2fs python3
[ "$(id -u)" = 0 ] || skip "limits e2e: cgroups are root's here (a user without root: issue 38)"

home=$(mktemp -d /var/tmp/bureau-limits.XXXXXX)
export BUREAU_HOME=$home
trap 'e2e_rm_home' EXIT INT TERM
e2e_image

# qmp NAME COMMAND: the return of one QMP command on NAME's socket (QMP
# serves one client at a time: tried again while another holds it)
qmp() {
	python3 - "$home/$1/qmp.sock" "$2" <<'EOF'
import json, socket, sys, time
for _ in range(50):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(sys.argv[1])
        f = s.makefile("rw")
        if f.readline():
            break
    except OSError:
        pass
    time.sleep(0.2)
f.write('{"execute":"qmp_capabilities"}\n'); f.flush(); f.readline()
f.write(json.dumps({"execute": sys.argv[2]}) + "\n"); f.flush()
while True:
    r = json.loads(f.readline())
    if "return" in r or "error" in r:
        print(json.dumps(r.get("return", r)))
        break
EOF
}
# cg PID CONTROLLER FILE: that file of PID's cgroup in the controller's
# (v1) hierarchy
cg() {
	p=$(awk -F: -v c="$2" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' /proc/$1/cgroup)
	cat "/sys/fs/cgroup/$2$p/$3" 2>/dev/null || echo "(none: cgroup '$p')"
}
# cpu_ticks PID: user + system time of the process, in clock ticks
cpu_ticks() { awk '{ print $14 + $15 }' /proc/$1/stat; }

refuse "create --cpu-limit 3 (2 vCPUs)" "cpu-limit" "$bureau" create x --cpus 2 --cpu-limit 3
refuse "create --cpu-limit abc" "cpu-limit" "$bureau" create x --cpu-limit abc
refuse "create --disk-iops -1" "disk-iops" "$bureau" create x --disk-iops -1
[ ! -e "$home/x" ] && pass "the refused creates made nothing" || fail "a refused create left $home/x"

if "$bureau" create lim --image "$img" --memory 1536M --cpus 2 --cpu-limit 0.5 \
    --disk-bps 2M >"$home/out" 2>&1 && "$bureau" start lim --accel tcg >>"$home/out" 2>&1; then
	pass "create --cpu-limit 0.5 --disk-bps 2M, start ($(tail -n +3 "$home/out" | head -n1))"
else
	cat "$home/out"; fail "create+start lim"; exit 1
fi
q=$(cat "$home/lim/qemu.pid")

# ---- confined ----------------------------------------------------------------
st=$(grep -E '^(Seccomp|NoNewPrivs|CapEff|CapPrm|CapBnd):' /proc/$q/status | tr -s '\t ' ' ' | tr '\n' ' ')
case $st in
*"NoNewPrivs: 1 "*"Seccomp: 2 "*) ok=1 ;;
*) ok= ;;
esac
if [ -n "$ok" ] && echo "$st" | grep -q 'CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000'; then
	pass "QEMU runs under its seccomp filter, no_new_privs, no capability ($st)"
else
	fail "QEMU's status: $st"
fi
tr '\0' '\n' </proc/$q/cmdline | grep -q '^on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny$' &&
	pass "QEMU's -sandbox denies spawning, privileges, resource control, obsolete calls" ||
	fail "QEMU's command line has no -sandbox"

# ---- its cgroup, as the kernel holds it ---------------------------------------
quota=$(cg $q cpu cpu.cfs_quota_us) period=$(cg $q cpu cpu.cfs_period_us)
mem=$(cg $q memory memory.limit_in_bytes) pids=$(cg $q pids pids.max)
if [ "$quota" = 50000 ] && [ "$period" = 100000 ] && [ "$mem" = $(((1536 + 512) * 1048576)) ] && [ "$pids" = 512 ]; then
	pass "QEMU's cgroup: cpu $quota/$period us, memory $mem bytes (RAM + 512M), pids $pids"
else
	fail "QEMU's cgroup: cpu $quota/$period, memory $mem, pids $pids"
fi
"$bureau" status lim >"$home/status" 2>&1
grep -q '^limits: cpu 0.5 cores, memory 2048M, 512 processes, disk 2.0M/s' "$home/status" &&
	grep -q '^cgroup: /bureau/lim-[0-9a-f]* (v1): cpu 0.5 cores memory 2048M pids 512$' "$home/status" &&
	pass "status: $(grep -E '^(limits|cgroup):' "$home/status" | tr '\n' ';')" ||
	{ cat "$home/status"; fail "status shows no limits"; }

# ---- the CPU limit holds ------------------------------------------------------
gsh lim 'for i in 1 2; do setsid sh -c "while :; do :; done" >/dev/null 2>&1 </dev/null & done; echo burning' >/dev/null
sleep 3
t0=$(cpu_ticks $q) w0=$(now)
sleep 10
t1=$(cpu_ticks $q) w1=$(now)
used=$(echo "$t0 $t1 $w0 $w1 $(getconf CLK_TCK)" | awk '{ printf "%.2f", ($2 - $1) / $5 / ($4 - $3) }')
if awk -v u="$used" 'BEGIN { exit !(u <= 0.6 && u > 0.2) }'; then
	pass "both vCPUs burning: QEMU used $used of a core over 10 s (--cpu-limit 0.5; at most 0.6)"
else
	fail "both vCPUs burning: QEMU used $used of a core (--cpu-limit 0.5)"
fi
gsh lim 'pkill -f "while :" ; echo stopped' >/dev/null

# ---- the disks' limit holds ---------------------------------------------------
bps=$(qmp lim query-block | python3 -c 'import json,sys; print(",".join("%s=%s" % (d["device"], d["inserted"].get("bps")) for d in json.load(sys.stdin)))')
[ "$bps" = "drive-sys=2097152,drive-home=2097152" ] && pass "QEMU throttles both disks (query-block: $bps)" ||
	fail "query-block: $bps"
t0=$(now)
gsh lim 'dd if=/dev/zero of=/home/bureau/z bs=1M count=8 oflag=direct 2>&1 | tail -n1' >"$home/dd"
took=$(since $t0)
# 8 MB at 2 MB/s: 4 s less QEMU's one-second burst; without the limit
# it takes well under a second here
if awk -v t="$took" 'BEGIN { exit !(t >= 2.5) }'; then
	pass "8 MB written direct in the guest took $took s at --disk-bps 2M ($(cat "$home/dd"))"
else
	fail "8 MB written direct took $took s: not throttled ($(cat "$home/dd"))"
fi

# ---- changed while it runs ----------------------------------------------------
if "$bureau" config lim --cpu-limit 1.5 --disk-bps off >"$home/out" 2>&1; then
	quota=$(cg $q cpu cpu.cfs_quota_us)
	bps=$(qmp lim query-block | python3 -c 'import json,sys; print(",".join(str(d["inserted"].get("bps")) for d in json.load(sys.stdin)))')
	[ "$quota" = 150000 ] && [ "$bps" = "0,0" ] &&
		pass "config --cpu-limit 1.5 --disk-bps off on the running desktop: quota $quota us, bps $bps" ||
		fail "config on the running desktop: quota $quota, bps $bps"
	grep -q '"cpu_limit": 1.5' "$home/lim/desktop.json" && ! grep -q disk_bps "$home/lim/desktop.json" &&
		pass "desktop.json keeps them" || fail "desktop.json: $(cat "$home/lim/desktop.json")"
else
	cat "$home/out"; fail "config --cpu-limit 1.5"
fi
refuse "config --cpu-limit 2.5 (2 vCPUs)" "cpu-limit" "$bureau" config lim --cpu-limit 2.5
[ "$(cg $q cpu cpu.cfs_quota_us)" = 150000 ] && pass "the refused change changed nothing" ||
	fail "after a refused change: quota $(cg $q cpu cpu.cfs_quota_us)"

# ---- save, restore and fork, confined -----------------------------------------
gsh lim 'echo kept >/home/bureau/mark; sync; echo ok' >/dev/null
if "$bureau" stop lim >"$home/out" 2>&1 && grep -q saved "$home/out" &&
    "$bureau" start lim --accel tcg >"$home/out" 2>&1 && grep -q '^restored' "$home/out" &&
    [ "$(gsh lim 'cat /home/bureau/mark')" = kept ]; then
	q=$(cat "$home/lim/qemu.pid")
	pass "saved and restored, confined ($(head -n1 "$home/out")); cgroup quota $(cg $q cpu cpu.cfs_quota_us)"
else
	cat "$home/out"; fail "save and restore"
fi
if "$bureau" fork lim k1 --ephemeral >"$home/out" 2>&1; then
	k=$(cat "$home/k1/qemu.pid")
	kc=$(awk -F: '$2 == "cpu" { print $3 }' /proc/$k/cgroup)
	case $kc in
	/bureau/k1-*) [ "$(cg $k cpu cpu.cfs_quota_us)" = 150000 ] &&
		grep -q '^Seccomp:.2' /proc/$k/status &&
		pass "the fork's QEMU: cgroup $kc of its own, quota 150000 us, seccomp" ||
		fail "the fork's QEMU: quota $(cg $k cpu cpu.cfs_quota_us), $(grep Seccomp: /proc/$k/status)" ;;
	*) fail "the fork's QEMU is in cgroup '$kc'" ;;
	esac
	"$bureau" stop k1 >/dev/null 2>&1
	ls -d /sys/fs/cgroup/cpu/bureau/k1-* >/dev/null 2>&1 && fail "the fork's cgroup is left after its stop" ||
		pass "the fork's cgroup is gone with it"
else
	cat "$home/out"; fail "fork"
fi
"$bureau" stop lim >/dev/null 2>&1
if ls -d /sys/fs/cgroup/cpu/bureau/lim-* /sys/fs/cgroup/pids/bureau/lim-* >/dev/null 2>&1; then
	fail "a saved desktop's cgroups are left: $(ls -d /sys/fs/cgroup/*/bureau/lim-* 2>/dev/null)"
else
	pass "a saved desktop leaves no cgroup"
fi

echo "limits e2e: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
