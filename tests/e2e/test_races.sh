#!/bin/sh
# End-to-end: two desktops hit at once by every client that changes them
# (DESIGN.md, "Nothing lost, one owner per desktop"; issue 39).
#
#   tests/e2e/test_races.sh BUILDDIR      (BUREAU_RACE_S: how long, 60)
#
# With the minimal image under TCG: two 1536M clones a and b, each with a
# background process, and Mission Control. For BUREAU_RACE_S seconds, per
# desktop at once: the CLI (stop, start, pause, resume, snapshot),
# Mission Control's lifecycle API (the same), ephemeral forks and their
# stops, `bureau config --idle-save` on and off, and agent calls
# (tests/lib/races.py). Every operation does what it says or refuses with
# a reason bureau gives (busy, not running, already running, saved while
# idle, stopping); none hangs or dies, no start boots where it should
# restore. Afterwards both desktops come back with their processes (same
# pid), answer, save; every disk file of theirs checks clean (`qemu-img
# check`), no QEMU runs without its desktop, and no ephemeral fork is
# left.
set -u

build=${1:?usage: test_races.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "races e2e" qemu-system-x86_64 qemu-img mke2fs python3
secs=${BUREAU_RACE_S:-60}

home=$(mktemp -d /var/tmp/bureau-races.XXXXXX)
export BUREAU_HOME=$home
cleanup() {
	[ -n "${mcpid:-}" ] && kill "$mcpid" 2>/dev/null
	e2e_rm_home
}
trap cleanup EXIT INT TERM
e2e_image

pids=
for n in a b; do
	if "$bureau" create $n --image "$img" --memory 1536M >"$home/create-$n.out" 2>&1 &&
	    "$bureau" start $n --accel tcg >"$home/start-$n.out" 2>&1; then
		pass "create+start $n ($(head -n1 "$home/start-$n.out"))"
	else
		cat "$home/create-$n.out" "$home/start-$n.out"; fail "create+start $n"; exit 1
	fi
	p=$(gsh $n 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
	[ -n "$p" ] || fail "a process in $n"
	pids="$pids $n:$p"
done

mcport=$((${BUREAU_PORTS%-*} + 28))
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$home/mc.token" && chmod 600 "$home/mc.token"
"$bureau" mission-control --listen 127.0.0.1:$mcport --token-file "$home/mc.token" >"$home/mc.log" 2>&1 &
mcpid=$!
sleep 1

# ---- the race -----------------------------------------------------------------
t0=$(now)
python3 "$top/tests/lib/races.py" "$bureau" "$home" "$mcport" "$(cat "$home/mc.token")" \
	"$secs" a b >"$home/races.out" 2>&1
# (a finding's whole text, its command's output beneath it)
awk '/^FAIL /{ n = 12 } n > 0 { print; n-- }' "$home/races.out" | head -120
sum=$(tail -n1 "$home/races.out")
nf=$(echo "$sum" | json failed)
echo "# races: $sum"
if [ "$nf" = 0 ]; then
	pass "$secs s of racing clients ($(since $t0) s): every operation did what it said or refused with a known reason: $(echo "$sum" | json ops) operations, refusals $(echo "$sum" | json refused)"
else
	fail "the race: $nf operations failed, hung, died or booted (above)"
fi
kill -0 $mcpid 2>/dev/null && pass "Mission Control served throughout" || fail "Mission Control died"

# ---- afterwards: both back, with their processes ------------------------------
for np in $pids; do
	n=${np%%:*} p=${np#*:}
	st=$("$bureau" status $n | awk -F': ' '$1 == "state" { print $2 }')
	case $st in
	paused) "$bureau" resume $n >/dev/null 2>&1 ;;
	saved | stopped) "$bureau" start $n --accel tcg >"$home/back-$n.out" 2>&1 ;;
	esac
	got=$(gsh $n "ps -o comm= -p $p")
	if [ "$got" = sleep ] && ! grep -q 'booted it instead' "$home/back-$n.out" 2>/dev/null; then
		pass "$n is back (it was $st), its process $p alive"
	else
		fail "$n after the race (it was $st): process $p '$got'; $(cat "$home/back-$n.out" 2>/dev/null)"
	fi
	if "$bureau" stop $n >"$home/stop-$n.out" 2>&1 && grep -q saved "$home/stop-$n.out"; then
		pass "$n saves: $(cat "$home/stop-$n.out")"
	else
		fail "stop $n: $(cat "$home/stop-$n.out")"
	fi
done
bad=
for f in "$home"/a/*.qcow2 "$home"/b/*.qcow2; do
	qemu-img check -q "$f" >/dev/null 2>&1 || bad="$bad $f"
done
[ -z "$bad" ] && pass "qemu-img check: the disk files of a and b are clean ($(ls "$home"/a/*.qcow2 "$home"/b/*.qcow2 | wc -l) files)" ||
	fail "qemu-img check:$bad"
left=$(cd "$home" && ls -d *-k* 2>/dev/null | tr '\n' ' ')
[ -z "$left" ] && pass "no ephemeral fork is left" || fail "forks left: $left"
orphans=
for q in $(pgrep -f "qemu-system.*$home"); do
	dir=$(tr '\0' '\n' </proc/$q/cmdline | sed -n "s|.*\($home/[^/,]*\)/.*|\1|p" | head -n1)
	orphans="$orphans $q($dir)"
done
[ -z "$orphans" ] && pass "no QEMU runs: none without its desktop" || fail "QEMUs left:$orphans"

echo "races e2e: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
