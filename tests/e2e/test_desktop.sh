#!/bin/sh
# End-to-end: a persistent QEMU desktop, driven from the host.
#
#   tests/e2e/test_desktop.sh BUILDDIR
#
# Builds the minimal image (cached under $BUREAU_IMAGES, default
# /var/cache/bureau/images), creates a desktop, starts it under TCG and,
# through the forwarded port only: checks a request without the token is
# refused, takes a screenshot that is not black, runs shell commands,
# writes a file in the home directory and one under /usr/local, enables a
# systemd service, checks pause freezes the guest and resume steps its clock
# to the host's; shuts it down
# cleanly, starts it again and finds all of it intact; then kills QEMU
# with -9 after a sync and checks the disks (qemu-img check) and the synced
# file (read from a copy of the data disk on the host, its journal replayed,
# not through the guest).
# The host agent in front of it: the guest token is refused at the
# endpoint; the guest reaches the host's eth address but not a service on
# the host's loopback; the operator's policy holds after bureaud restarts
# in the guest; takeover, approvals and the audit trail through the CLI;
# the kill -9 of QEMU is seen by the agent and shown by status.
# Prints PASS/FAIL/SKIP lines; exits non-zero on any failure.
set -u

build=${1:?usage: test_desktop.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
images=${BUREAU_IMAGES:-/var/cache/bureau/images}
# A window of 30 ports claimed against other test runs on the machine.
. "$(dirname "$0")/../lib/ports.sh"
. "$(dirname "$0")/../lib/deb.sh"
name=e2e
fails=0 passes=0

pass() { echo "PASS $*"; passes=$((passes + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
skip() { echo "SKIP $*"; exit 0; }
now() { date +%s; }

for t in qemu-system-x86_64 qemu-img mke2fs e2fsck debugfs convert python3 nngcat; do
	command -v $t >/dev/null 2>&1 || skip "desktop e2e: '$t' not installed (make deps)"
done
[ -x "$bureau" ] || { fail "no $bureau (make)"; exit 1; }
if [ ! -e "$images/minimal/image.json" ]; then
	[ "$(id -u)" = 0 ] || skip "desktop e2e: building the image needs root and none is cached in $images"
	command -v mmdebstrap >/dev/null 2>&1 || skip "desktop e2e: 'mmdebstrap' not installed (make deps)"
fi

home=$(mktemp -d /var/tmp/bureau-e2e.XXXXXX)
export BUREAU_HOME=$home
# Cold boots, whatever sizes: no warm state made or cloned (create would
# make one for a size the image has none of).
export BUREAU_WARM=0
dir=$home/$name
cleanup() {
	# The agent takes its QEMU and its network keeper with it.
	[ -s "$dir/agent.pid" ] && kill -9 "$(cat "$dir/agent.pid")" 2>/dev/null
	if [ -s "$dir/qemu.pid" ]; then
		kill -9 "$(cat "$dir/qemu.pid")" 2>/dev/null
	fi
	[ -n "${srv_pids:-}" ] && kill $srv_pids 2>/dev/null
	rm -rf "$home"
}
trap cleanup EXIT INT TERM

# ---- the image -------------------------------------------------------------
e2e_deb
t0=$(now)
if "$bureau" image build --minimal --out "$images" --deb "$deb" >"$home/image.log" 2>&1; then
	pass "image build --minimal ($(( $(now) - t0 )) s, $(du -sh "$images/minimal/base.qcow2" | cut -f1))"
else
	tail -30 "$home/image.log"
	fail "image build --minimal"
	exit 1
fi

# ---- create and start --------------------------------------------------------
if "$bureau" create $name --image "$images/minimal" --disk 6G --home 2G \
    --memory 1536M --cpus 2 >"$home/create.log" 2>&1; then
	pass "create: system $(du -h "$dir/system.qcow2" | cut -f1), home $(du -h "$dir/home.qcow2" | cut -f1) on disk"
else
	cat "$home/create.log"; fail "create"; exit 1
fi
port=$(sed 's/.*://' "$dir/endpoint")

start() {
	t0=$(now)
	if "$bureau" start $name --accel "${BUREAU_ACCEL:-tcg}" --timeout 600 >"$home/start.log" 2>&1; then
		pass "start $1 ($(( $(now) - t0 )) s, $(cat "$dir/accel"))"
	else
		cat "$home/start.log"; fail "start $1"; exit 1
	fi
}

call() { "$bureau" call --timeout "${2:-120}" $name "$1"; }
# json FIELD: a top-level field of the reply on stdin ('' if absent).
json() {
	python3 -c 'import json,sys
r=json.load(sys.stdin); v=r
for k in sys.argv[1].split("."):
    v=v.get(k) if isinstance(v,dict) else None
print("" if v is None else (json.dumps(v) if isinstance(v,(dict,list,bool)) else v))' "$1"
}

start "(cold)"

# A request without the token, through the forwarded port.
r=$(nngcat --req --connect "tcp://127.0.0.1:$port" --recv-timeout 20 -Q \
    --data '{"id":1,"tool":"system","action":"ping"}' 2>&1)
case $r in
*unauthorized*) pass "request without the token refused (unauthorized)" ;;
*) fail "request without the token: got '$r'" ;;
esac
r=$(nngcat --req --connect "tcp://127.0.0.1:$port" --recv-timeout 20 -Q \
    --data '{"id":1,"token":"wrong","tool":"system","action":"ping"}' 2>&1)
case $r in
*unauthorized*) pass "request with a wrong token refused" ;;
*) fail "request with a wrong token: got '$r'" ;;
esac
# The guest's own token (the one bureaud in the VM checks) is the host
# agent's alone: the endpoint refuses it.
gtok=$(cat "$dir/guest-token")
r=$(nngcat --req --connect "tcp://127.0.0.1:$port" --recv-timeout 20 -Q \
    --data "{\"id\":1,\"token\":\"$gtok\",\"tool\":\"system\",\"action\":\"ping\"}" 2>&1)
case $r in
*unauthorized*) pass "the guest token is refused at the endpoint" ;;
*) fail "the guest token at the endpoint: got '$r'" ;;
esac
r=$(call '{"tool":"system","action":"ping"}' 60)
case $r in
*'"ok":true'*) pass "the agent token works at the endpoint (served by the host agent, pid $(cat "$dir/agent.pid"))" ;;
*) fail "the agent token: '$r'" ;;
esac
case "$(ps -o ppid= -p "$(cat "$dir/qemu.pid")" | tr -d ' ')" in
"$(cat "$dir/agent.pid")") pass "qemu is the host agent's child" ;;
*) fail "qemu's parent: $(ps -o ppid= -p "$(cat "$dir/qemu.pid")")" ;;
esac
"$bureau" status $name >"$home/status" 2>&1
grep -q "$gtok" "$home/status" "$home/start.log" && fail "the guest token was printed"

# `bureau ls`: the VM's CPU, memory (the PSS of QEMU and of the network
# keeper's processes) and files on disk as the host sees them (read again
# here from /proc and the files' blocks), the guest's own load and memory (its
# MemTotal lies a little under --memory 1536M: the kernel keeps some).
"$bureau" ls >"$home/ls" 2>&1
qpid=$(cat "$dir/qemu.pid")
if python3 - "$name" "$home/ls" "$qpid" "$dir" <<'PY'
import os, re, sys
name, ls, pid, d = sys.argv[1:]
def size(s):
    m = re.fullmatch(r"([0-9.]+)([BKMGT])", s)
    return float(m.group(1)) * 1024 ** "BKMGT".index(m.group(2))
row = [l.split() for l in open(ls) if l.split()[:1] == [name]][0]
_, state, host, _, cpu, mem, disk, load, guest, ep = row
# PSS (smaps_rollup) of QEMU, the network keeper and its children
def pss(p):
    try:
        kb = int(re.search(r"\nPss:\s+(\d+)", open("/proc/%s/smaps_rollup" % p).read()).group(1))
    except OSError:
        return 0
    try:
        kids = open("/proc/%s/task/%s/children" % (p, p)).read().split()
    except OSError:
        kids = []
    return kb * 1024 + sum(pss(k) for k in kids)
keeper = open(os.path.join(d, "net.pid")).read().strip()
rss = int(re.search(r"\nPss:\s+(\d+)", open("/proc/%s/smaps_rollup" % pid).read()).group(1)) * 1024 + pss(keeper)
du = sum(os.stat(os.path.join(d, f)).st_blocks * 512
         for f in ("system.qcow2", "home.qcow2", "ram", "state") if os.path.exists(os.path.join(d, f)))
used, total = (size(x) for x in guest.split("/"))
ok = (state == "running" and host == "local" and re.fullmatch(r"\d+%", cpu)
      and 0.7 * rss <= size(mem) <= 1.3 * rss
      and 0.9 * du <= size(disk) <= 1.1 * du + 1024 * 1024
      and re.fullmatch(r"\d+\.\d\d", load)
      and 1.2 * 2**30 <= total <= 1.5 * 2**30 and 0 < used < total)
print(" ".join(row), "| host pss %d du %d" % (rss, du))
sys.exit(0 if ok else 1)
PY
then
	pass "bureau ls: the VM's CPU, memory and disks, the guest's load and memory ($(awk -v n=$name '$1 == n { print $3, $5, $6, $7, $8, $9 }' "$home/ls"))"
else
	cat "$home/ls"; fail "bureau ls figures"
fi

# The desktop, not a black screen: the session draws a few seconds after
# the daemon answers (a minute and more under TCG on a busy machine), so
# look for up to 300 s. With xterm: until the minimal session's terminal
# (black, at 300,300) is up.
shot=$home/shot.png
wait_desktop() {
	t0=$(now)
	while [ $(( $(now) - t0 )) -lt 300 ]; do
		if "$bureau" screenshot $name -o "$shot" >/dev/null 2>&1; then
			set -- $(convert "$shot" -colorspace gray -format '%[fx:mean] %[fx:standard_deviation] %[fx:p{300,300}]' info:)
			if python3 -c "import sys; sys.exit(0 if $1 > 0.05 and $2 > 0.02 and ($need_term == 0 or $3 < 0.1) else 1)"; then
				desk="mean $1, stddev $2"
				return 0
			fi
		fi
		sleep 3
	done
	return 1
}
need_term=0
if wait_desktop; then
	pass "screenshot shows the desktop ($(identify -format '%wx%h' "$shot"), $desk)"
	cp "$shot" "$build/e2e-desktop.png" 2>/dev/null
else
	fail "screenshot: black or none after 300 s"
fi

# ---- the guest's shell ---------------------------------------------------------
# gsh CMD: run CMD in the guest as the desktop user; prints its output,
# returns its status. Through the daemon's bash tool when it has one; else
# by typing into the session's xterm (computer tool) with the output sent
# to the serial console, which the host reads.
caps=$(call '{"tool":"system","action":"info"}' | json capabilities)
case $caps in
*'"bash"'*) via=bash ;;
*) via=xterm ;;
esac
echo "# guest shell through: $via"
[ $via = xterm ] && need_term=1 && { wait_desktop || fail "no terminal on the desktop"; }
gsh() {
	if [ $via = bash ]; then
		req=$(python3 -c 'import json,sys; print(json.dumps({"tool":"bash","command":sys.argv[1],"timeout":300}))' "$1")
		rep=$(call "$req" 320)
		printf '%s\n' "$rep" | json output
		rc=$(printf '%s\n' "$rep" | json exit_code)
		[ "$rc" = 0 ]
		return
	fi
	# gsh often runs in a $(...) subshell: the marker must not be a counter.
	mark="@@$(date +%s%N)@@"
	line="{ $1 ; } 2>&1 | sed 's/^/$mark /' | sudo tee /dev/ttyS0 >/dev/null; echo \"$mark rc=\${PIPESTATUS[0]}\" | sudo tee /dev/ttyS0 >/dev/null"
	req=$(python3 -c 'import json,sys; print(json.dumps({"tool":"computer","action":"type","text":sys.argv[1],"screenshot":False}))' "$line")
	call '{"tool":"computer","action":"left_click","coordinate":[400,300],"screenshot":false}' >/dev/null
	call "$req" 300 >/dev/null
	call '{"tool":"computer","action":"key","text":"Return","screenshot":false}' >/dev/null
	t0=$(now)
	while [ $(( $(now) - t0 )) -lt 120 ]; do
		# Not anchored: a getty prompt may precede the first line.
		if grep -a -q "$mark rc=" "$dir/console.log"; then
			grep -a "$mark " "$dir/console.log" | grep -v "$mark rc=" | sed "s/.*$mark //" | tr -d '\r'
			grep -a -q "$mark rc=0" "$dir/console.log"
			return
		fi
		sleep 1
	done
	echo "(no answer on the serial console)"
	return 1
}

out=$(gsh 'id -un; findmnt -no SOURCE /home')
if [ "$(echo "$out" | tr -d '\r' | paste -sd' ' -)" = "bureau /dev/vdb" ]; then
	pass "shell command in the guest (user bureau, /home on the data disk)"
else
	fail "shell command: got '$out'"
fi

secret=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
gsh "echo $secret > ~/persist.txt && sudo sh -c 'echo $secret > /usr/local/share/bureau-e2e.txt' && cat ~/persist.txt /usr/local/share/bureau-e2e.txt" >"$home/out" 2>&1 &&
	[ "$(grep -c "$secret" "$home/out")" = 2 ] &&
	pass "wrote a file in the home directory and one under /usr/local" ||
	fail "write files: $(cat "$home/out")"

unit='[Unit]\nDescription=bureau e2e\n[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n'
gsh "printf '$unit' | sudo tee /etc/systemd/system/bureau-e2e.service >/dev/null && sudo systemctl enable --now bureau-e2e.service 2>&1 && systemctl is-active bureau-e2e.service" >"$home/out" 2>&1 &&
	grep -q '^active' "$home/out" && pass "enabled and started a systemd service" ||
	fail "systemd service: $(cat "$home/out")"

# ---- the guest's network: no way to the host --------------------------------
# Two web servers on the host serve a page holding a random mark: one on
# 127.0.0.1 (under QEMU's slirp, 10.0.2.2 led there), one on every
# address. From the guest, neither answers at 10.0.2.2, the gateway or
# the host's own address (netrules.c). That the guest reaches public
# addresses and names is test_guest_net.sh's, in a world of its own.
mark=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
if [ $via = bash ]; then
	mkdir -p "$home/www" && echo "mark-$mark" >"$home/www/page.txt"
	free2() { python3 -c 'import socket
for _ in range(2):
    s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
	set -- $(free2)
	lport=$1 aport=$2
	(cd "$home/www" && exec python3 -m http.server "$lport" --bind 127.0.0.1) >/dev/null 2>&1 &
	srv_pids=$!
	(cd "$home/www" && exec python3 -m http.server "$aport" --bind 0.0.0.0) >/dev/null 2>&1 &
	srv_pids="$srv_pids $!"
	hostip=$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
	sleep 1
	fetch() { # HOST PORT, from the guest
		gsh "timeout 10 bash -c 'exec 3<>/dev/tcp/$1/$2 && printf \"GET /page.txt HTTP/1.0\\r\\n\\r\\n\" >&3 && cat <&3' 2>&1; true"
	}
	gw=$(gsh "ip -4 route show default | sed -n 's/.*via \\([0-9.]*\\).*/\\1/p'" | head -n1)
	leak=
	for h in 10.0.2.2 $gw $hostip; do
		fetch "$h" "$lport" | grep -q "mark-$mark" && leak="$leak $h:$lport"
	done
	[ -z "$leak" ] && pass "the host's 127.0.0.1:$lport is out of the guest's reach (10.0.2.2, gateway ${gw:-?}, ${hostip:-no host address})" ||
		fail "the guest reached the host's loopback service at$leak"
	leak=
	for h in 10.0.2.2 $gw $hostip; do
		fetch "$h" "$aport" | grep -q "mark-$mark" && leak="$leak $h:$aport"
	done
	[ -z "$leak" ] && pass "the host's service on all addresses (:$aport) is out of the guest's reach too" ||
		fail "the guest reached the host's service at$leak"
	kill $srv_pids 2>/dev/null
	srv_pids=
fi

# ---- the operator's limits, enforced on the host --------------------------
expect() { # CODE REPLY: the reply failed with CODE
	case $2 in *'"code":"'$1'"'*) return 0 ;; esac
	return 1
}
click='{"tool":"computer","action":"left_click","coordinate":[5,5],"screenshot":false}'
"$bureau" policy $name --allow computer.screenshot,bash,system >/dev/null &&
	expect permission_denied "$(call "$click" 60)" &&
	pass "--allow computer.screenshot,bash,system: a click is refused" ||
	fail "policy: a click was not refused"
# The agent in the desktop restarts bureaud (it may: it is its desktop);
# the limit is not bureaud's, so it holds.
pid0=$(call '{"tool":"system","action":"info"}' | json pid 2>/dev/null)
call '{"tool":"bash","command":"setsid -f sh -c \"sleep 2; systemctl --user restart bureaud\" >/dev/null 2>&1","timeout":30}' 60 >/dev/null
t0=$(now) pid1=$pid0
while [ $(( $(now) - t0 )) -lt 120 ]; do
	pid1=$(call '{"tool":"system","action":"info"}' 30 2>/dev/null | json pid 2>/dev/null)
	[ -n "$pid1" ] && [ "$pid1" != "$pid0" ] && break
	sleep 2
done
if [ -n "$pid1" ] && [ "$pid1" != "$pid0" ]; then
	r=$(call "$click" 60 || :)
	expect permission_denied "$r" &&
		case "$(call '{"tool":"computer","action":"screenshot"}' 60)" in *'"ok":true'*) true ;; *) false ;; esac &&
		pass "after bureaud restarted in the guest (pid $pid0 -> $pid1): the click still refused, screenshots work" ||
		fail "after bureaud restarted: '$r'"
else
	fail "bureaud did not restart in the guest (pid $pid0)"
fi
"$bureau" policy $name --allow '' >/dev/null || fail "policy --allow ''"

"$bureau" takeover $name on >/dev/null && r=$(call "$click" 60 || :) && expect taken_over "$r" &&
	case "$(call '{"tool":"computer","action":"screenshot"}' 60)" in *'"ok":true'*) true ;; *) false ;; esac &&
	pass "takeover: the agent's click gets taken_over, its screenshot works" ||
	fail "takeover: '$r'"
"$bureau" takeover $name off >/dev/null &&
	case "$(call "$click" 60)" in *'"ok":true'*) true ;; *) false ;; esac &&
	pass "takeover off: clicks work again" || fail "takeover off"

# Approvals: a bash command waits for the operator; approved, it runs.
"$bureau" policy $name --approve bash >/dev/null || fail "policy --approve bash"
pending_id() {
	t0=$(now)
	while [ $(( $(now) - t0 )) -lt 60 ]; do
		id=$("$bureau" approvals $name --json | python3 -c 'import json,sys
a=json.load(sys.stdin); print(a[0]["approval"] if a else "")')
		[ -n "$id" ] && { echo "$id"; return 0; }
		sleep 0.5
	done
	return 1
}
call '{"tool":"bash","command":"echo approved-'"$mark"'","timeout":60}' 200 >"$home/approved.out" 2>&1 &
apid=$!
if id=$(pending_id) && "$bureau" approve $name "$id" >/dev/null; then
	wait $apid
	grep -q "approved-$mark" "$home/approved.out" &&
		pass "approval $id: the command waited, was approved and ran" ||
		fail "approved command: $(cat "$home/approved.out")"
else
	kill $apid 2>/dev/null
	fail "no pending approval for the bash command"
fi
call '{"tool":"bash","command":"echo denied-'"$mark"'","timeout":60}' 200 >"$home/denied.out" 2>&1 &
apid=$!
if id=$(pending_id) && "$bureau" deny $name "$id" --reason "not now" >/dev/null; then
	wait $apid
	grep -q 'permission_denied' "$home/denied.out" && grep -q 'not now' "$home/denied.out" &&
		! grep -q '"output"' "$home/denied.out" &&
		pass "approval $id denied: permission_denied with the reason" ||
		fail "denied command: $(cat "$home/denied.out")"
else
	kill $apid 2>/dev/null
	fail "no pending approval for the second bash command"
fi
"$bureau" policy $name --approve '' >/dev/null || fail "policy --approve ''"

# The audit trail, on the host.
"$bureau" log $name >"$home/log" 2>&1
for want in "computer.left_click" "permission_denied" "taken_over" "bash command=echo approved-$mark"; do
	grep -q -- "$want" "$home/log" || { fail "bureau log lacks '$want'"; want=; break; }
done
[ -n "$want" ] && pass "bureau log: $(wc -l <"$home/log") requests, the refusals, takeover and approvals among them"
"$bureau" log -f $name >"$home/logf" 2>&1 &
lpid=$!
sleep 1
call '{"tool":"computer","action":"cursor_position"}' 60 >/dev/null
t0=$(now)
while [ $(( $(now) - t0 )) -lt 20 ] && ! grep -q cursor_position "$home/logf"; do sleep 0.5; done
kill $lpid 2>/dev/null
grep -q cursor_position "$home/logf" && pass "bureau log -f follows the desktop's requests" ||
	fail "bureau log -f: $(cat "$home/logf")"
# The daemon's events, relayed by the agent on the endpoint's port + 1 and
# sealed with the agent token (docs/protocol.md), not the guest's.
ev=$(PYTHONPATH=$top/tests/lib BUREAU_BUILD=$build timeout 90 python3 - "$dir" "$port" "$build/bureau" "$name" <<'PY' 2>&1
import json, subprocess, sys, time
import bt
d, port, bureau, name = sys.argv[1:5]
tok = open(d + "/token").read().strip()
gtok = open(d + "/guest-token").read().strip()
sub = bt.Sub("tcp://127.0.0.1:%d" % (int(port) + 1), b"action ", 3000)
deadline = time.time() + 60
while time.time() < deadline:
    subprocess.run([bureau, "call", name,
                    '{"tool":"computer","action":"cursor_position"}'],
                   capture_output=True)
    try:
        raw = sub.raw()
    except bt.NngError:
        continue
    ev = json.loads(bt.events_open(bt.events_key(tok), raw)[7:])
    try:
        bt.events_open(bt.events_key(gtok), raw)
        print("opened with the guest token")
    except bt.EventTampered:
        print("ok", ev["tool"], ev["action"])
    break
else:
    print("no event in 60 s")
PY
)
case $ev in
"ok computer "*) pass "the daemon's events, relayed on port $((port + 1)), open with the agent token only ($ev)" ;;
*) fail "events relay: $ev" ;;
esac

# ---- pause freezes the guest -----------------------------------------------
# The guest's clock against the host's, before and after 10 s paused: the
# guest does not answer while paused, and resume steps its clock.
# Each reading is bounded by host times taken around it, and the pause by
# host times taken around pause and resume: on a busy machine a request
# can take seconds, which fixed bounds on the loss took for a failure.
hnow() { date +%s.%N; }
# reading: "LO HI", bounds of the host's clock minus the guest's. Through
# the bash tool the bounds are taken around the request alone (a loaded
# machine spends seconds starting the Python that parses the reply).
reading() {
	if [ $via = bash ]; then
		h0=$(hnow)
		rep=$(call '{"tool":"bash","command":"date +%s.%N","timeout":60}' 120)
		h1=$(hnow)
		g=$(printf '%s\n' "$rep" | json output)
	else
		h0=$(hnow)
		g=$(gsh 'date +%s.%N')
		h1=$(hnow)
	fi
	# the output ends with a newline: take the last non-empty line
	g=$(printf '%s\n' "$g" | grep -v '^[[:space:]]*$' | tail -n1)
	echo "$h0 $h1 $g" | awk 'NF == 3 { printf "%.3f %.3f\n", $1 - $3, $2 - $3 }'
}
# offset: the narrowest of three readings
offset() {
	for _ in 1 2 3; do reading; done |
		awk 'NF == 2 && (!n++ || $2 - $1 < hi - lo) { lo = $1; hi = $2 }
		END { if (n) printf "%.3f %.3f\n", lo, hi }'
}
o1=$(offset)
p0=$(hnow)
if "$bureau" pause $name >/dev/null && [ "$("$bureau" status $name | sed -n 's/^state: //p')" = paused ]; then
	p1=$(hnow)
	t0=$(now)
	if "$bureau" call --timeout 3 $name '{"tool":"system","action":"ping"}' >/dev/null 2>&1; then
		fail "a paused desktop answered a request"
	else
		pass "paused desktop does not answer"
	fi
	while [ $(( $(now) - t0 )) -lt 10 ]; do sleep 1; done
	r0=$(hnow)
	"$bureau" resume $name >/dev/null || fail "resume"
	r1=$(hnow)
	o2=$(offset)
	# resume steps the guest's clock to the host's (it stood still
	# while paused): host minus guest in [LO, HI] must meet [-1, 1].
	verdict=$(python3 -c '
import sys
try:
    o1lo, o1hi, o2lo, o2hi, p0, p1, r0, r1 = map(float, sys.argv[1:])
except ValueError:
    print("no 1 no reading of the guest clock: " + " ".join(sys.argv[1:])); sys.exit()
lo, hi = o2lo - o1hi, o2hi - o1lo
pmin, pmax = r0 - p1, r1 - p0
ok = o2lo <= 1 and o2hi >= -1
print("yes" if ok else "no", "%.1f" % ((lo + hi) / 2),
    "after %.1f-%.1f s paused it is off by %.1f-%.1f s" % (pmin, pmax, o2lo, o2hi))
' $o1 $o2 "$p0" "$p1" "$r0" "$r1")
	case $verdict in
	yes*) pass "pause froze the guest and resume stepped its clock to the host's (${verdict#yes * })" ;;
	*) fail "pause: ${verdict#no * }" ;;
	esac
else
	fail "pause"
fi

# ---- stop, start again: everything is still there ----------------------------
t0=$(now)
if "$bureau" stop --shutdown $name --timeout 400 >"$home/stop.log" 2>&1 && grep -q 'shut down' "$home/stop.log"; then
	pass "clean stop through ACPI ($(( $(now) - t0 )) s)"
else
	cat "$home/stop.log"; fail "clean stop"
fi
[ "$("$bureau" status $name | sed -n 's/^state: //p')" = stopped ] || fail "state after stop"
qemu-img check -q "$dir/system.qcow2" && qemu-img check -q "$dir/home.qcow2" &&
	pass "disks clean after stop (qemu-img check)" || fail "qemu-img check after stop"
"$bureau" snapshot $name before-kill >/dev/null && "$bureau" snapshot $name | grep -q before-kill &&
	pass "offline snapshot of both disks" || fail "offline snapshot"

start "(again)"
wait_desktop || fail "desktop not drawn after the restart"
gsh 'cat ~/persist.txt /usr/local/share/bureau-e2e.txt; systemctl is-active bureau-e2e.service' >"$home/out" 2>&1
if [ "$(grep -c "$secret" "$home/out")" = 2 ] && grep -q '^active' "$home/out"; then
	pass "after a restart: both files intact, the service running"
else
	fail "after a restart: $(cat "$home/out")"
fi

# ---- kill -9 after sync --------------------------------------------------------
synced=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
gsh "echo $synced > ~/synced.txt && sync" >/dev/null || fail "write synced.txt"
pid=$(cat "$dir/qemu.pid")
kill -9 "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
# The host agent, QEMU's parent, saw it and says so.
t0=$(now)
while [ $(( $(now) - t0 )) -lt 30 ] && [ -s "$dir/agent.pid" ] &&
    ! "$bureau" status $name | grep -q 'killed by signal 9'; do sleep 0.5; done
"$bureau" status $name >"$home/status" 2>&1
if grep -qx 'state: stopped' "$home/status" && grep -q 'last exit: qemu was killed by signal 9' "$home/status" &&
    ! grep -q 'agent pid' "$home/status"; then
	pass "kill -9 of qemu seen by the host agent: $(grep 'last exit' "$home/status")"
else
	fail "status after kill -9: $(cat "$home/status")"
fi
# qemu-img check: 0 clean, 3 only leaked clusters (space allocated when
# QEMU died, harmless), 2 corruption, 1 unreadable.
leaks=0 bad=
for disk in system home; do
	qemu-img check "$dir/$disk.qcow2" >"$home/check.$disk" 2>&1
	case $? in
	0) ;;
	3) leaks=$((leaks + $(sed -n 's/^\([0-9]*\) leaked clusters.*/\1/p' "$home/check.$disk" | head -n1))) ;;
	*) bad="$bad $disk: $(tail -n3 "$home/check.$disk" | tr '\n' ' ')" ;;
	esac
done
if [ -z "$bad" ]; then
	pass "disks consistent after kill -9 (qemu-img check: no corruption, $leaks leaked clusters)"
else
	fail "qemu-img check after kill -9:$bad"
fi
# Read the file straight from the data disk's ext4, not through the guest.
# The guest's sync commits the new inode and directory entry to ext4's
# journal only; they reach their home blocks at a later checkpoint, which
# kill -9 may well prevent. debugfs does not replay the journal (it read
# '' here), so replay it first, as the next mount would, with e2fsck on a
# raw copy; its -f pass also checks the file system is consistent
# (exit 0: clean, 1: errors fixed, e.g. orphan inodes; more: damage).
got=
if qemu-img convert -f qcow2 -O raw "$dir/home.qcow2" "$home/home.raw" 2>"$home/fsck.out"; then
	e2fsck -fy "$home/home.raw" >>"$home/fsck.out" 2>&1
	rc=$?
	if [ $rc -le 1 ]; then
		pass "data disk's ext4 consistent after kill -9 and journal replay (e2fsck exit $rc)"
	else
		fail "e2fsck after kill -9: exit $rc: $(tail -n5 "$home/fsck.out" | tr '\n' ' ')"
	fi
	got=$(debugfs -R "cat /bureau/synced.txt" "$home/home.raw" 2>/dev/null)
else
	fail "qemu-img convert of home.qcow2: $(cat "$home/fsck.out")"
fi
[ "$got" = "$synced" ] && pass "synced file intact on the data disk after kill -9" ||
	fail "synced file after kill -9: got '$got'"
rm -f "$home/home.raw"

"$bureau" rm $name >/dev/null && [ ! -e "$dir" ] && pass "rm" || fail "rm"

echo "desktop e2e: $passes passed, $fails failed"
[ $fails = 0 ]
