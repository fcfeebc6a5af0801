#!/bin/sh
# The desktop commands without a boot: strict option parsing, and paths
# holding commas handed safely to QEMU (its option syntax splits on ',').
#
#   tests/e2e/test_desktop_cli.sh BUILDDIR
#
# Uses the minimal image test_desktop.sh builds (cached in $BUREAU_IMAGES,
# default /var/cache/bureau/images); QEMU is started and ended without
# waiting for the guest, so this takes seconds. Prints PASS/FAIL/SKIP.
set -u

build=${1:?usage: test_desktop_cli.sh BUILDDIR}
build=$(cd "$build" && pwd)
bureau=$build/bureau
images=${BUREAU_IMAGES:-/var/cache/bureau/images}
export BUREAU_PORTS=${BUREAU_PORTS:-7600-7699}
fails=0 passes=0

pass() { echo "PASS $*"; passes=$((passes + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
skip() { echo "SKIP $*"; exit 0; }

command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "desktop cli: no qemu (make deps)"
[ -e "$images/minimal/image.json" ] || skip "desktop cli: no image in $images (test_desktop.sh builds it)"

# A comma in every path QEMU is given.
home=$(mktemp -d /var/tmp/bureau,cli.XXXXXX)
export BUREAU_HOME=$home
dir=$home/c1
cleanup() {
	[ -s "$dir/qemu.pid" ] && kill -9 "$(cat "$dir/qemu.pid")" 2>/dev/null
	rm -rf "$home"
}
trap cleanup EXIT INT TERM

# Exits 2 with a message naming the option and the value.
refuses() { # what, option, value, command...
	what=$1 opt=$2 val=$3
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -eq 2 ] && echo "$out" | grep -qF -- "$opt" &&
	    echo "$out" | grep -qF -- "'$val'"; then
		pass "$what refused: $(echo "$out" | head -1)"
	else
		fail "$what: exit $rc, '$out'"
	fi
}

if "$bureau" create c1 --image "$images/minimal" --disk 2G --home 64M \
    --memory 512M --cpus 1 >"$home/create.log" 2>&1; then
	pass "create in '$home'"
else
	cat "$home/create.log"; fail "create"; exit 1
fi

refuses "--cpus 2x" --cpus 2x "$bureau" create c2 --cpus 2x
refuses "--cpus ''" --cpus "" "$bureau" create c2 --cpus ""
refuses "start --timeout abc" --timeout abc "$bureau" start c1 --timeout abc
refuses "stop --timeout 1e3" --timeout 1e3 "$bureau" stop c1 --timeout 1e3
refuses "console -n -5" -n -5 "$bureau" console -n -5 c1
[ ! -e "$home/c2" ] && pass "no desktop left by a refused create" || fail "c2 exists"

# Three creates at once: each gets its own ports.
for n in 3 4 5; do
	"$bureau" create c$n --image "$images/minimal" --disk 1G --home 64M \
	    --memory 256M --cpus 1 >"$home/create$n.log" 2>&1 &
done
wait
ports=$(cat "$home"/c[345]/endpoint 2>/dev/null | sort -u | wc -l)
[ "$ports" = 3 ] && pass "concurrent creates: 3 distinct endpoints" ||
	fail "concurrent creates: $ports distinct endpoints ($(cat "$home"/create[345].log))"
for n in 3 4 5; do "$bureau" rm c$n >/dev/null 2>&1; done

# A command holding the desktop's lock turns another away, naming it.
flock -n "$dir/lock" sleep 3 &
sleep 0.5
out=$("$bureau" start c1 --accel tcg --no-wait 2>&1)
rc=$?
wait
if [ $rc -ne 0 ] && echo "$out" | grep -q "busy" && [ ! -s "$dir/qemu.pid" ]; then
	pass "locked desktop: $out"
else
	fail "locked desktop: exit $rc, '$out'"
fi

# Two starts at once leave one QEMU.
"$bureau" start c1 --accel tcg --no-wait >"$home/start.log" 2>&1 &
"$bureau" start c1 --accel tcg --no-wait >"$home/start2.log" 2>&1 &
wait
sleep 1
# QEMU was given the path with its commas doubled.
esc=$(printf '%s' "$dir" | sed 's/,/,,/g')
n=$(pgrep -f -- "path=$esc/qmp.sock" | wc -l)
if [ "$n" = 1 ]; then
	pass "two concurrent starts: one qemu ($(cat "$home/start.log" "$home/start2.log" | grep -i 'busy\|already' | head -1))"
else
	cat "$home/start.log" "$home/start2.log" "$dir/qemu.log" 2>/dev/null
	fail "two concurrent starts: $n qemu processes"
	[ "$n" = 0 ] && exit 1
fi
pid=$(cat "$dir/qemu.pid" 2>/dev/null)
# QEMU itself opened the disks under the comma path.
if [ -n "$pid" ] && ls -l /proc/"$pid"/fd 2>/dev/null | grep -qF "$dir/system.qcow2" &&
    ls -l /proc/"$pid"/fd | grep -qF "$dir/home.qcow2"; then
	pass "qemu (pid $pid) opened both disks in '$dir'"
else
	fail "qemu's open files: $(ls -l /proc/"$pid"/fd 2>&1 | grep -c qcow2) disks"
fi
# pause and the paused state both need QMP on the comma path.
if "$bureau" pause c1 >/dev/null 2>&1 &&
    "$bureau" status c1 | grep -qx "state: paused"; then
	pass "pause through QMP at '$dir/qmp.sock'"
else
	fail "pause: $("$bureau" status c1 2>&1 | head -2 | tr '\n' ' ')"
fi
"$bureau" resume c1 >/dev/null 2>&1 &&
    "$bureau" status c1 | grep -qx "state: running" &&
    pass "resume" || fail "resume"
if "$bureau" stop c1 --force >/dev/null 2>&1 && ! kill -0 "$pid" 2>/dev/null; then
	pass "stop --force: qemu $pid is gone"
else
	fail "stop --force: qemu $pid still there"
fi
"$bureau" status c1 | grep -qx "state: stopped" && pass "status: stopped" || fail "status after stop"
if "$bureau" rm c1 >/dev/null 2>&1 && [ ! -e "$dir" ]; then
	pass "rm"
else
	fail "rm"
fi
echo "desktop cli: $passes checks passed, $fails failed"
[ "$fails" -eq 0 ]
