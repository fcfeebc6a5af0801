#!/bin/sh
# The desktop commands without a boot: strict option parsing, and paths
# holding commas handed safely to QEMU (its option syntax splits on ',').
#
#   tests/e2e/test_desktop_cli.sh BUILDDIR
#
# Uses the minimal image test_desktop.sh builds (cached in $BUREAU_IMAGES,
# default /var/cache/bureau/images); QEMU is started and ended without
# waiting for the guest, so this takes seconds. Also: QEMU runs as its
# host agent's child, and neither outlives the other (kill -9 of either).
# Prints PASS/FAIL/SKIP.
set -u

build=${1:?usage: test_desktop_cli.sh BUILDDIR}
build=$(cd "$build" && pwd)
bureau=$build/bureau
images=${BUREAU_IMAGES:-/var/cache/bureau/images}
# A window of 30 ports claimed against other test runs on the machine.
. "$(dirname "$0")/../lib/ports.sh"
fails=0 passes=0

pass() { echo "PASS $*"; passes=$((passes + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
skip() { echo "SKIP $*"; exit 0; }

command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "desktop cli: no qemu (make deps)"
[ -e "$images/minimal/image.json" ] || skip "desktop cli: no image in $images (test_desktop.sh builds it)"

# A comma in every path QEMU is given.
home=$(mktemp -d /var/tmp/bureau,cli.XXXXXX)
export BUREAU_HOME=$home
# Cold boots, whatever sizes: no warm state made or cloned (create would
# make one for a size the image has none of).
export BUREAU_WARM=0
dir=$home/c1
cleanup() {
	for d in "$home"/*/; do
		[ -s "$d/agent.pid" ] && kill -9 "$(cat "$d/agent.pid")" 2>/dev/null
		[ -s "$d/qemu.pid" ] && kill -9 "$(cat "$d/qemu.pid")" 2>/dev/null
	done
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
refuses "--net wifi" --net wifi "$bureau" create c2 --net wifi
for args in "stop --all c1" "stop --all --force" "start --all c1" "start --all --no-wait"; do
	out=$("$bureau" $args 2>&1)
	[ $? -eq 2 ] && echo "$out" | grep -qF -- "--all" && pass "bureau $args refused: $(echo "$out" | head -1)" ||
		fail "bureau $args: '$out'"
done
out=$("$bureau" start --all 2>&1) && [ "$out" = "start --all: no desktop was saved by stop --all" ] &&
	pass "start --all with nothing saved by stop --all: says so" || fail "start --all on nothing: '$out'"
out=$("$bureau" stop --all 2>&1) && [ "$out" = "stop --all: no desktop is running" ] &&
	pass "stop --all with nothing running: says so" || fail "stop --all on nothing: '$out'"
out=$("$bureau" create c2 --allow 'computer.click!' 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -qF -- "--allow" && pass "--allow with a bad item refused: $out" ||
	fail "--allow computer.click!: '$out'"
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
# (until it holds it: a fixed half second beside another suite was not
# always enough; the holder waits for the probe's own moment with it)
flock "$dir/lock" sleep 3 &
for _ in $(seq 100); do
	flock -n "$dir/lock" true || break
	sleep 0.05
done
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
apid=$(cat "$dir/agent.pid" 2>/dev/null)
ppid=$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ')
[ -n "$apid" ] && [ "$ppid" = "$apid" ] && pass "qemu $pid is the child of its host agent $apid" ||
	fail "qemu's parent is '$ppid', the agent '$apid'"
# The guest token goes to QEMU (fw_cfg); the agent token never does.
tr '\0' ' ' </proc/"$pid"/cmdline | grep -qF "opt/bureau/token,file=$esc/guest-token" &&
	pass "fw_cfg hands the guest its own token file" || fail "fw_cfg: $(tr '\0' ' ' </proc/"$pid"/cmdline)"
# The guest's network: passt in the desktop's own namespace, under its
# network keeper (net.pid), and no port of it on the host.
pp=$(cat "$dir/net.pid" 2>/dev/null)
kids=$(ps --ppid "$pp" -o pid= 2>/dev/null | tr '\n' ' ')
if [ -n "$pp" ] && ps --ppid "$pp" -o args= | grep -q -- 'passt.* --no-map-gw' &&
    ps --ppid "$pp" -o args= | grep -q -- 'pasta' &&
    [ "$(readlink /proc/"$pp"/ns/net)" != "$(readlink /proc/self/ns/net)" ] &&
    ! tr '\0' ' ' </proc/"$pid"/cmdline | grep -q 'hostfwd'; then
	pass "the guest's network: pasta and passt --no-map-gw under keeper $pp, in a namespace of its own"
else
	fail "network keeper '$pp': $(ps --ppid "$pp" -o args= 2>&1)"
fi
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
gone() { # PID...: all end (and are reaped) within 20 s
	t=0
	while [ $t -lt 100 ]; do
		alive=
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ -z "$alive" ] && return 0
		sleep 0.2
		t=$((t + 1))
	done
	return 1
}
# The agent is gone once stop returns; init may reap it a moment later.
if "$bureau" stop c1 --force >/dev/null 2>&1 && ! kill -0 "$pid" 2>/dev/null &&
    gone "$apid" "$pp" $kids; then
	pass "stop --force: qemu $pid, its agent, its network keeper and its pasta and passt are gone"
else
	fail "stop --force: qemu $pid, agent $apid or network $pp $kids still there"
fi
"$bureau" status c1 | grep -qx "state: stopped" && pass "status: stopped" || fail "status after stop"
# A killed host agent loses nothing: its QEMU and network keeper run on
# (sessions of their own), status says so, and start adopts them: the
# same QEMU, served by a new agent. (test_warm.sh checks the guest's
# processes across an adoption.)
"$bureau" start c1 --accel tcg --no-wait >/dev/null 2>&1
pid=$(cat "$dir/qemu.pid" 2>/dev/null) apid=$(cat "$dir/agent.pid" 2>/dev/null)
pp=$(cat "$dir/net.pid" 2>/dev/null)
kids=$(ps --ppid "$pp" -o pid= 2>/dev/null | tr '\n' ' ')
kill -9 "$apid"
gone "$apid"
sleep 1
alive=1
for p in "$pid" "$pp" $kids; do kill -0 "$p" 2>/dev/null || alive=; done
if [ -n "$pid" ] && [ -n "$kids" ] && [ -n "$alive" ] &&
    [ "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid" ]; then
	pass "kill -9 of the agent $apid: qemu $pid (a session of its own), its network keeper $pp and its pasta and passt ($kids) run on"
else
	fail "kill -9 of the agent: qemu $pid or network $pp ($kids) ended with it"
fi
"$bureau" status c1 >"$home/status" 2>&1
grep -qx "state: running" "$home/status" && grep -q "agent: not running (its VM runs on: bureau start adopts it" "$home/status" &&
	pass "status notices the killed agent and the VM running on" ||
	fail "status after the agent was killed: $(cat "$home/status")"
out=$("$bureau" start c1 --no-wait 2>&1)
napid=$(cat "$dir/agent.pid" 2>/dev/null)
if echo "$out" | grep -q "adopted desktop 'c1' (tcg)" && [ "$(cat "$dir/qemu.pid")" = "$pid" ] &&
    [ "$(cat "$dir/net.pid")" = "$pp" ] && [ -n "$napid" ] && [ "$napid" != "$apid" ] &&
    grep -q "adopted its running VM (qemu pid $pid" "$dir/agent.log" &&
    grep -q '"adopted":true' "$dir/run.json"; then
	pass "start adopts the running VM: the same qemu $pid and keeper $pp, a new agent $napid"
else
	fail "start after the agent was killed: $out; qemu $(cat "$dir/qemu.pid"), agent $napid; $(tail -n 2 "$dir/agent.log")"
fi
# The adopting agent watches a QEMU that is not its child: its end is seen.
kill -9 "$pid"
if gone "$napid"; then
	"$bureau" status c1 >"$home/status" 2>&1
	grep -qx "state: stopped" "$home/status" && grep -q "last exit: qemu ended (adopted by this host agent" "$home/status" &&
		pass "kill -9 of an adopted qemu: its agent saw it and exited; $(grep 'last exit' "$home/status")" ||
		fail "status after the adopted qemu was killed: $(cat "$home/status")"
else
	fail "the agent $napid outlived its adopted qemu"
fi
gone "$pp" $kids || fail "the keeper $pp ($kids) outlived its qemu"
# A killed QEMU is seen by its agent, which records it and exits.
"$bureau" start c1 --accel tcg --no-wait >/dev/null 2>&1 || fail "start after the agent was killed"
pid=$(cat "$dir/qemu.pid" 2>/dev/null) apid=$(cat "$dir/agent.pid" 2>/dev/null)
kill -9 "$pid"
if gone "$apid"; then
	"$bureau" status c1 >"$home/status" 2>&1
	grep -qx "state: stopped" "$home/status" && grep -q "last exit: qemu was killed by signal 9" "$home/status" &&
		pass "kill -9 of qemu: its agent saw it and exited; $(grep 'last exit' "$home/status")" ||
		fail "status after qemu was killed: $(cat "$home/status")"
else
	fail "the agent $apid outlived its killed qemu"
fi

# A desktop made before the host agent had one token, which its guest
# knows: start gives the agent a new one, and the guest a new one too
# (as at every start).
old=$(cat "$dir/token")
rm -f "$dir/guest-token"
if "$bureau" start c1 --accel tcg --no-wait >/dev/null 2>&1 &&
    [ "$(cat "$dir/guest-token")" != "$old" ] && [ "$(cat "$dir/token")" != "$old" ] &&
    [ "$(cat "$dir/guest-token")" != "$(cat "$dir/token")" ] &&
    [ "$(stat -c %a "$dir/guest-token")" = 600 ]; then
	pass "an old desktop's single token was replaced: a new one for the agent, another for the guest"
else
	fail "old desktop's tokens: guest '$(cat "$dir/guest-token" 2>&1)', agent '$(cat "$dir/token")', was '$old'"
fi
"$bureau" stop c1 --force >/dev/null 2>&1

# --net-allow: a bad item is named, and nothing is made.
for bad in '10.0.0.0/33' 'a;b' 'host:0'; do
	out=$("$bureau" create bad1 --image "$images/minimal" --net-allow "$bad" 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && echo "$out" | grep -qF -- "--net-allow: '$bad'" && [ ! -e "$home/bad1" ]; then
		pass "create --net-allow '$bad' refused: $(echo "$out" | head -n1)"
	else
		fail "create --net-allow '$bad': rc $rc, $out"
	fi
done
"$bureau" create bad2 --image "$images/minimal" --net none --net-allow 203.0.113.0/24 >/dev/null 2>&1 &&
	fail "--net none with --net-allow was accepted" || pass "--net-allow with --net none refused"
# --net none: the namespace's rules refuse everything but its loopback.
# (its port taken by another program first: start takes others, says so
# and writes them down)
"$bureau" create n1 --image "$images/minimal" --disk 1G --home 64M \
    --memory 256M --cpus 1 --net none >/dev/null 2>&1
oport=$(sed -n 's|.*:\([0-9]*\)$|\1|p' "$home/n1/endpoint")
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]) + 1)); s.listen(1); time.sleep(60)' "$oport" &
squat=$!
# (until it listens: a python that took longer than a fixed half second
# to start, beside another suite, left the port free for the start)
for _ in $(seq 300); do
	ss -Hltn "sport = :$((oport + 1))" 2>/dev/null | grep -q . && break
	sleep 0.1
done
if [ -n "$oport" ] && "$bureau" start n1 --accel tcg --no-wait >"$home/n1.start" 2>&1; then
	nport=$(sed -n 's|.*:\([0-9]*\)$|\1|p' "$home/n1/endpoint")
	grep -q "port $((oport + 1)) is in use by another program" "$home/n1.start" &&
		[ -n "$nport" ] && [ "$nport" != "$oport" ] &&
		[ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["port"])' "$home/n1/desktop.json")" = "$nport" ] &&
		ss -ltn | grep -q "127.0.0.1:$nport " &&
		pass "a start whose port another program took listens on others and says so: $(grep 'in use' "$home/n1.start")" ||
		fail "start with its port taken: $(cat "$home/n1.start"); endpoint port '$nport' (was $oport)"
	npid=$(cat "$home/n1/qemu.pid")
	tr '\0' ' ' </proc/"$npid"/cmdline | grep -q 'stream,id=net0' && [ -s "$home/n1/net.pid" ] &&
		! grep -q dnat "$home/n1/net.nft" && grep -qx '		reject' "$home/n1/net.nft" &&
		pass "--net none: passt in the desktop's namespace, whose rules refuse all but loopback" ||
		fail "--net none: $(tr '\0' ' ' </proc/"$npid"/cmdline) / $(cat "$home/n1/net.nft")"
	"$bureau" stop n1 --force >/dev/null 2>&1
	"$bureau" rm n1 >/dev/null 2>&1
else
	fail "--net none: create or start failed: $(cat "$home/n1.start")"
fi
kill $squat 2>/dev/null
if "$bureau" rm c1 >/dev/null 2>&1 && [ ! -e "$dir" ]; then
	pass "rm"
else
	fail "rm"
fi
echo "desktop cli: $passes checks passed, $fails failed"
[ "$fails" -eq 0 ]
