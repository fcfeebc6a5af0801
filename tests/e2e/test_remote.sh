#!/bin/sh
# End-to-end: a desktop on a host on another machine (DESIGN.md, "Hosts:
# desktops on libvirt"; host-bridge/cli/remote.c), reached over SSH.
#
#   tests/e2e/test_remote.sh BUILDDIR
#
# The "other machine" is an SSH server this test starts on 127.0.0.1 (its
# own host key, an authorized key of the test's own, no password), whose
# sessions get a BUREAU_HOME of their own: a second bureau, with its own
# desktops, host agents and ports, as bureau installed on another machine
# would be; its libvirt is qemu:///system (e2e_libvirtd). Checks: `host
# add` of qemu+ssh://root@127.0.0.1:PORT/system refuses a key the machine
# does not take and a machine whose key is not the known one, then adds
# it (bureau answers there); `host ls` reachable; `create --host` makes the
# desktop there (its disks in the other BUREAU_HOME, none here; no guest
# token here); its SSH forwards' keeper runs here and the endpoint's port
# here is ssh's (ss); `start` restores it there (virsh: running; its host
# agent a process of the other bureau: BUREAU_HOME in its environment);
# requests through the endpoint here reach its guest (hostname, a drawn
# screenshot), a wrong token is refused through the forward; `ls` and
# `status` here name the host and say running; Mission Control here lists
# it under its host with its agent, shows its live frames and its audit
# trail (read there, screenshots too), and its
# takeover through the forwarded operator socket holds there (the agent
# there refuses the agent's request); the agent's question is listed
# there and answered from stdin here; `log` reads the trail there, `log
# --export` refuses; Mission Control's Stop saves it
# there (no domain in libvirt, the state in the other home), `ls` here
# says saved, `start` brings its process back; the forwards come back
# after their ssh is killed, and after their keeper is (`start --all`, as
# at boot); the operator socket here is 0600; `move` refuses it while it
# runs and its libvirt state to local, carries it here to a libvirt host
# of this machine (its files here, none there, its keeper ended) where
# start restores it (its agent here, its process on), and back there
# (start restores it there, through the forward); a fork there gets a
# record here and forwards of its own, an ephemeral fork's stop here
# discards it there and here; `rm` removes it there and
# here, the keeper and its ssh gone from the process table.
# Prints the hop: a request's round trip through the forward here against
# the agent's own endpoint there (docs/desktops.md has the figures).
#
# What only a second machine would show: a real network's latency and
# bandwidth under the forward (here the SSH hop is loopback), and a
# machine whose bureau, image and libvirt are not this one's.
set -u

build=${1:?usage: test_remote.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "remote e2e" qemu-system-x86_64 qemu-img python3 identify virsh libvirtd virtlogd ssh ssh-keygen /usr/sbin/sshd ss
[ "$(id -u)" = 0 ] || skip "remote e2e: qemu:///system needs root"

home=$(mktemp -d /var/tmp/bureau-rm.XXXXXX)
export BUREAU_HOME=$home
rhome=$home/.far
sd=$home/.sshd
r=rma$(($$ % 100000))
uri=qemu:///system
lo=${BUREAU_PORTS%-*}
cleanup() {
	for d in "$home"/*/; do
		[ -e "$d/desktop.json" ] && "$bureau" rm --force "$(basename "$d")" >/dev/null 2>&1
	done
	for d in "$rhome"/*/; do
		[ -e "$d/desktop.json" ] && BUREAU_HOME=$rhome "$bureau" stop --force "$(basename "$d")" >/dev/null 2>&1
	done
	virsh -q -c $uri destroy bureau-$r >/dev/null 2>&1
	[ -n "${mcpid:-}" ] && kill "$mcpid" 2>/dev/null
	[ -s "$sd/sshd.pid" ] && kill "$(cat "$sd/sshd.pid")" 2>/dev/null
	e2e_libvirtd_end
	BUREAU_HOME=$rhome e2e_rm_home_of "$rhome"
	e2e_rm_home
}
e2e_rm_home_of() { rm -rf "$1"; }
trap cleanup EXIT INT TERM

e2e_libvirtd
e2e_image
img=$(cd "$images/minimal" && pwd -P)


# ---- the other machine: an SSH server of the test's own -------------------------
# Its sessions: the other bureau's home, this build's bureau on PATH, and
# ports of their own (both bureaus share this loopback; on two machines
# each would have all of them).
mkdir -p "$sd" "$rhome" /run/sshd
chmod 700 "$sd" "$rhome"
ssh-keygen -q -t ed25519 -N '' -f "$sd/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$sd/id" &&
	ssh-keygen -q -t ed25519 -N '' -f "$sd/other" && ssh-keygen -q -t ed25519 -N '' -f "$sd/other_host" ||
	{ fail "ssh-keygen"; exit 1; }
cp "$sd/id.pub" "$sd/authorized_keys"
sport=$((lo + 29))
cat >"$sd/sshd_config" <<EOF
Port $sport
ListenAddress 127.0.0.1
HostKey $sd/host_key
AuthorizedKeysFile $sd/authorized_keys
PidFile $sd/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
SetEnv BUREAU_HOME=$rhome BUREAU_PORTS=$((lo + 15))-$((lo + 26)) PATH=$build:/usr/sbin:/usr/bin:/sbin:/bin HOME=$sd/home
EOF
# (HOME: the shell there reads no rc file of this machine's root: one
# here waits a minute on a stale lock)
mkdir -p "$sd/home"
/usr/sbin/sshd -f "$sd/sshd_config" -E "$sd/sshd.log" || { cat "$sd/sshd.log"; fail "sshd"; exit 1; }
echo "[127.0.0.1]:$sport $(cut -d' ' -f1-2 "$sd/host_key.pub")" >"$sd/known_hosts"
echo "[127.0.0.1]:$sport $(cut -d' ' -f1-2 "$sd/other_host.pub")" >"$sd/wrong_hosts"
for _ in $(seq 50); do ss -Hltn "sport = :$sport" | grep -q . && break; sleep 0.1; done
pass "sshd on 127.0.0.1:$sport, the other machine's bureau in $rhome"

# (the machine's key checked against known_hosts: never written to
# root's own)
far="qemu+ssh://root@127.0.0.1:$sport/system?keyfile=$sd/id&known_hosts=$sd/known_hosts"
refuse "host add: a key the machine does not take" "ssh to 127.0.0.1 failed" \
	"$bureau" host add far "qemu+ssh://root@127.0.0.1:$sport/system?keyfile=$sd/other&known_hosts=$sd/known_hosts"
refuse "host add: the machine's key is not the known one" "ssh to 127.0.0.1 failed" \
	"$bureau" host add far "qemu+ssh://root@127.0.0.1:$sport/system?keyfile=$sd/id&known_hosts=$sd/wrong_hosts"
"$bureau" host add far "$far" >"$home/out" 2>&1 && grep -q "answers there over SSH" "$home/out" &&
	pass "host add far: $(tr '\n' ' ' <"$home/out")" || { cat "$home/out"; fail "host add far"; exit 1; }
"$bureau" host ls >"$home/out" 2>&1
grep -q "^far  *qemu+ssh://.*  *yes  *0 " "$home/out" && pass "host ls: far reachable, no desktops" || { cat "$home/out"; fail "host ls"; }

# ---- create and start there -------------------------------------------------------
"$bureau" create $r --host far --image "$img" --memory 1536M --disk 4G --home 1G >"$home/create" 2>&1 ||
	{ cat "$home/create"; fail "create --host far"; exit 1; }
grep -q "is on host 'far'" "$home/create" && pass "create --host far: $(tail -1 "$home/create")" || { cat "$home/create"; fail "create: output"; }
[ -s "$rhome/$r/system.qcow2" ] && [ -s "$rhome/$r/home.qcow2" ] && [ ! -e "$home/$r/system.qcow2" ] &&
	[ -s "$rhome/$r/guest-token" ] && [ ! -e "$home/$r/guest-token" ] && grep -q '"host": "far"' "$rhome/$r/desktop.json" &&
	pass "its disks and guest token are in the other bureau's home, none here" || fail "where its files are: $(ls "$home/$r" "$rhome/$r" | tr '\n' ' ')"
[ "$(cat "$home/$r/token")" = "$(cat "$rhome/$r/token")" ] && pass "its agent token here is the one there" || fail "token"
lp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$home/$r/desktop.json")
rp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$rhome/$r/desktop.json")
kpid=$(cat "$home/$r/forward.pid" 2>/dev/null | tr -dc 0-9)
if [ -n "$kpid" ] && tr '\0' ' ' <"/proc/$kpid/cmdline" | grep -q "remote-forward $r" &&
    ss -Hltnp "sport = :$lp" | grep -q '"ssh"'; then
	pass "its forwards: keeper $kpid, 127.0.0.1:$lp here is ssh's (the agent's port there: $rp)"
else
	ss -Hltnp "sport = :$lp"; fail "forwards: keeper '$kpid'"
fi

t0=$(now)
"$bureau" start $r --timeout 300 >"$home/start1" 2>&1 || { cat "$home/start1"; fail "start $r"; exit 1; }
tstart=$(since $t0)
grep -Eq "^(restored|started) desktop '$r'" "$home/start1" && pass "start there ($tstart s): $(head -1 "$home/start1")" || { cat "$home/start1"; fail "start: output"; }
grep -q "tcp://127.0.0.1:$rp\b" "$home/start1" && fail "start printed the port there ($rp), not this side's" || true
[ "$(virsh -q -c $uri domstate bureau-$r 2>&1)" = running ] && pass "virsh: bureau-$r running" || fail "virsh: bureau-$r"
apid=$(cat "$rhome/$r/agent.pid" 2>/dev/null | tr -dc 0-9)
if [ -n "$apid" ] && tr '\0' '\n' <"/proc/$apid/environ" | grep -qx "BUREAU_HOME=$rhome"; then
	pass "its host agent ($apid) is the other bureau's (BUREAU_HOME=$rhome)"
else
	fail "host agent there: '$apid'"
fi
[ ! -e "$home/$r/agent.pid" ] && pass "no host agent for it here" || fail "an agent.pid here"

# through the endpoint here, the forward, the agent there, its guest
[ "$(gsh $r hostname)" = "$r" ] && pass "a request through the endpoint here: the guest is $r" || fail "guest hostname: $(gsh $r hostname)"
"$bureau" screenshot $r -o "$home/shot.png" >/dev/null 2>&1
colours=$(identify -format %k "$home/shot.png" 2>/dev/null || echo 0)
[ "${colours:-0}" -gt 8 ] && pass "screenshot through the forward: a drawn desktop ($colours colours)" || fail "screenshot: $colours colours"
[ "$(ping "tcp://127.0.0.1:$lp" 0000000000000000000000000000000000000000000000000000000000000000)" = unauthorized ] &&
	pass "a wrong token through the forward: unauthorized" || fail "wrong token through the forward"
"$bureau" ls >"$home/ls" 2>&1
awk -v n="$r" '$1 == n { print $2, $3, $NF }' "$home/ls" | grep -qx "running far tcp://127.0.0.1:$lp" &&
	pass "ls: $r running on far, its endpoint here" || { cat "$home/ls"; fail "ls"; }
"$bureau" status $r >"$home/status" 2>&1
grep -qx "host: far" "$home/status" && grep -qx "state: running" "$home/status" &&
	grep -qx "endpoint: tcp://127.0.0.1:$lp" "$home/status" && grep -q "^remote: $rhome/$r on 127.0.0.1" "$home/status" &&
	pass "status (sent there): running on far, the endpoint here" || { cat "$home/status"; fail "status"; }
# the agent asks its operator (through the endpoint here); the question,
# listed there (`approvals` sent over SSH), answered: once with an
# argument that the shell there must leave as it is, once from this
# side's stdin
ask_answer() { # ask_answer HOW TEXT: prints the answer the agent got
	call $r '{"tool":"operator","action":"ask","message":"which way?","timeout":120}' 150 >"$home/ask" 2>&1 &
	askpid=$!
	n=0 qid=
	while [ $n -lt 100 ]; do
		"$bureau" approvals $r --json >"$home/apr" 2>/dev/null
		qid=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(a[0]["approval"] if a else "")' "$home/apr" 2>/dev/null)
		[ -n "$qid" ] && break
		sleep 0.2; n=$((n + 1))
	done
	if [ "$1" = stdin ]; then
		printf '%s\n' "$2" | "$bureau" answer $r "$qid" - >"$home/out" 2>&1
	else
		"$bureau" answer $r "$qid" "$2" >"$home/out" 2>&1
	fi
	wait $askpid
	json answer <"$home/ask"
}
tricky="it's \"left\"; \$HOME \\ \`id\` & up"
[ "$(ask_answer arg "$tricky")" = "$tricky" ] &&
	pass "ask: answered with an argument sent there as it is: $tricky" || { cat "$home/apr" "$home/out" "$home/ask"; fail "ask/answer (argument)"; }
[ "$(ask_answer stdin "left, then up")" = "left, then up" ] &&
	pass "ask: listed there, answered from this side's stdin, the agent got the answer" || { cat "$home/apr" "$home/out" "$home/ask"; fail "ask/answer (stdin)"; }
"$bureau" log $r >"$home/log" 2>&1 && grep -q "operator" "$home/log" && pass "log (read there): $(grep -c . "$home/log") lines, the question among them" || { head "$home/log"; fail "log"; }
refuse "log --export: the trail is there" "writes F there" "$bureau" log $r --export "$home/x.html"

# ---- the hop ------------------------------------------------------------------------
# A request's round trip (system ping, 400 of each, medians) through the
# endpoint here (this side's ssh, the SSH server there, the agent there)
# against the agent's endpoint there itself, the two in turn, request by
# request: the guest's own time (most of a request's) drifts alike under
# both.
hop() { # hop WHAT: prints "THROUGH DIRECT HOP" in ms
	PYTHONPATH=$top/tests/lib python3 - "tcp://127.0.0.1:$lp" "tcp://127.0.0.1:$rp" "$(cat "$home/$r/token")" <<'PY'
import json, statistics, sys, time
import bt
socks = [bt.Req(u, timeout_ms=20000) for u in sys.argv[1:3]]
req = json.dumps({"tool": "system", "action": "ping", "token": sys.argv[3]})
ts = [[], []]
try:
    for i in range(420):
        for k in (0, 1):
            t0 = time.perf_counter()
            a = json.loads(socks[k].rpc(req))
            if not a.get("ok"):
                raise SystemExit("not ok: %r" % a)
            if i >= 20:
                ts[k].append(time.perf_counter() - t0)
finally:
    for s in socks:
        s.close()
f, d = (statistics.median(t) * 1000 for t in ts)
print("%.2f %.2f %.2f" % (f, d, f - d))
PY
}
set -- $(hop)
[ $# = 3 ] && pass "the hop: a request through the SSH forward ${1} ms, at the agent there ${2} ms (medians of 400 system pings, in turn)" || fail "the hop: $*"
echo "# remote: the hop of the SSH forward ${3:-?} ms per request (${1:-?} ms through it, ${2:-?} ms at the agent there; load: $(cut -d' ' -f1-3 /proc/loadavg))"

# ---- Mission Control here ---------------------------------------------------------
mcport=$((lo + 28))
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$home/mc.token" && chmod 600 "$home/mc.token"
"$bureau" mission-control --listen 127.0.0.1:$mcport --token-file "$home/mc.token" >"$home/mc.log" 2>&1 &
mcpid=$!
mc() { # mc METHOD PATH [BODY]
	python3 - "$mcport" "$(cat "$home/mc.token")" "$@" <<'PY'
import sys, urllib.request
port, tok, method, path = sys.argv[1:5]
body = sys.argv[5].encode() if len(sys.argv) > 5 else None
req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), data=body, method=method,
                             headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
try:
    print(urllib.request.urlopen(req, timeout=30).read().decode())
except urllib.error.HTTPError as e:
    print(e.read().decode())
PY
}
for _ in $(seq 100); do ss -Hltn "sport = :$mcport" | grep -q . && break; kill -0 $mcpid 2>/dev/null || break; sleep 0.1; done
kill -0 $mcpid 2>/dev/null || { cat "$home/mc.log"; fail "mission-control did not start"; }
mc GET /api/desktops >"$home/mcl" 2>&1
python3 - "$home/mcl" "$r" <<'PY' && pass "Mission Control: $r listed on host far, running" || { cat "$home/mcl"; fail "Mission Control list"; }
import json, sys
j = json.load(open(sys.argv[1]))
ds = j["desktops"] if isinstance(j, dict) else j
d = [x for x in ds if x["name"] == sys.argv[2]]
sys.exit(0 if d and d[0]["host"] == "far" and d[0]["state"] == "running" and d[0]["agent"] else 1)
PY
mcget() { # mcget PATH FILE: GET into FILE, fails on an HTTP error
	python3 - "$mcport" "$(cat "$home/mc.token")" "$1" "$2" <<'PY'
import sys, urllib.request
port, tok, path, out = sys.argv[1:5]
req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), headers={"Authorization": "Bearer " + tok})
try:
    open(out, "wb").write(urllib.request.urlopen(req, timeout=30).read())
except urllib.error.HTTPError:
    sys.exit(1)
PY
}
# its live view: frames from the agent there's events, through the forward
n=0
while [ $n -lt 60 ] && ! mcget "/api/desktops/$r/thumbnail" "$home/thumb"; do sleep 0.5; n=$((n + 1)); done
colours=$(identify -format %k "$home/thumb" 2>/dev/null || echo 0)
[ "${colours:-0}" -gt 8 ] && pass "Mission Control's live view of $r: a drawn frame ($colours colours) through the forward" || fail "Mission Control thumbnail: $colours colours"
# its audit trail, kept there, read through the forwarded socket: the
# lines, and the settled screenshot of an input action (a mouse move now)
call $r '{"tool":"computer","action":"mouse_move","coordinate":[20,20]}' 60 >/dev/null 2>&1
mc GET "/api/desktops/$r/log" >"$home/mclog" 2>&1
url=$(python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
ls = j if isinstance(j, list) else j.get("lines", j.get("log", []))
u = [l["screenshot_url"] for l in ls if l.get("screenshot_url")]
print(len(ls), u[-1] if u else "")' "$home/mclog" 2>/dev/null)
set -- $url
if [ "${1:-0}" -ge 3 ] && [ -n "${2:-}" ] && mcget "$2" "$home/ashot.png"; then
	colours=$(identify -format %k "$home/ashot.png" 2>/dev/null || echo 0)
	[ "${colours:-0}" -gt 8 ] && pass "Mission Control's log of $r: $1 lines from the trail there, a screenshot of it drawn ($colours colours)" ||
		fail "audit screenshot $2: $colours colours"
else
	head -c 600 "$home/mclog"; fail "Mission Control's log of $r: '$url'"
fi
# the hop again while Mission Control takes its live frames through the
# events forward
set -- $(hop)
# (the frames on the endpoint's own ssh connection made it 40 ms: Nagle
# against delayed ACKs; a bound far above the hop, far below that)
[ $# = 3 ] && [ "$(echo "$3" | awk '{ print ($1 < 20) }')" = 1 ] &&
	pass "the hop while Mission Control watches: ${1} ms through the forward, ${2} ms at the agent there" || fail "the hop (watched): $*"
echo "# remote: the hop while Mission Control watches ${3:-?} ms per request (${1:-?} ms through it, ${2:-?} ms at the agent there)"
mc POST /api/desktops/$r/takeover '{"on": true}' >"$home/mct" 2>&1
out=$(call $r '{"tool":"bash","command":"true"}' 30)
# (asked of the agent there on its own socket there, not through the forward)
tk=$(PYTHONPATH=$top/tests/lib python3 -c '
import json, sys
import bt
r = bt.Req("ipc://" + sys.argv[1], timeout_ms=10000)
try:
    print(json.loads(r.rpc(json.dumps({"op": "state"}))).get("takeover"))
finally:
    r.close()' "$rhome/$r/operator.sock")
[ "$tk" = True ] && [ "$(echo "$out" | json error.code)" = taken_over ] &&
	pass "Mission Control's takeover held there: the agent there says takeover, and refuses a request (taken_over)" ||
	{ cat "$home/mct"; echo "$out"; fail "takeover through Mission Control: agent there says '$tk'"; }
mc POST /api/desktops/$r/takeover '{"on": false}' >/dev/null 2>&1

# ---- stop saves there, start restores ---------------------------------------------
sleeper=$(gsh $r 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!')
# (Mission Control's Stop button: bureau stop, sent there)
t0=$(now)
mc POST /api/desktops/$r/stop '{}' >"$home/stop" 2>&1
tsave=$(since $t0)
kill $mcpid 2>/dev/null
grep -q "saved in" "$home/stop" && [ -s "$rhome/$r/lv.state" ] && pass "Mission Control's Stop: saved there ($tsave s): $(json output <"$home/stop" | head -1)" || { cat "$home/stop"; fail "stop: not saved"; }
virsh -q -c $uri list --all --name | grep -qx bureau-$r && fail "the domain is still in libvirt" || pass "stop: no domain bureau-$r left in libvirt"
"$bureau" ls >"$home/ls" 2>&1
awk -v n="$r" '$1 == n { print $2 }' "$home/ls" | grep -qx saved && pass "ls here: saved" || { cat "$home/ls"; fail "ls: saved"; }
t0=$(now)
"$bureau" start $r --timeout 300 >"$home/start2" 2>&1 || { cat "$home/start2"; fail "start (restore)"; }
trestore=$(since $t0)
grep -q "^restored desktop '$r'" "$home/start2" && pass "start: restored there ($trestore s)" || { cat "$home/start2"; fail "start: not restored"; }
[ "$(gsh $r "ps -o pid= -p $sleeper | tr -d ' '")" = "$sleeper" ] && pass "restore: the guest's process $sleeper runs on" || fail "restore: process $sleeper gone"
echo "# remote: start from saved $trestore s (sent over SSH), stop $tsave s, first start $tstart s"

# ---- the forwards come back -------------------------------------------------------
spid=$(pgrep -P "$kpid" -x ssh | head -1)
kill "$spid" 2>/dev/null
n=0
while [ $n -lt 100 ]; do
	s2=$(pgrep -P "$kpid" -x ssh | head -1)
	[ -n "$s2" ] && [ "$s2" != "$spid" ] && [ "$(ping "tcp://127.0.0.1:$lp" "$(cat "$home/$r/token")")" = ok ] && break
	sleep 0.2; n=$((n + 1))
done
[ $n -lt 100 ] && pass "its ssh killed: the keeper dialed again (ssh $spid, then $s2), the endpoint answers" || fail "forwards after ssh $spid was killed"
# this machine rebooted (the keeper and its ssh gone): start --all, as the
# host's service runs it at boot, brings them back
kill "$kpid" 2>/dev/null
n=0; while ! flock -n -s "$home/$r/forward.pid" true && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
"$bureau" start --all >"$home/out" 2>&1
n=0
while [ $n -lt 100 ] && [ "$(ping "tcp://127.0.0.1:$lp" "$(cat "$home/$r/token")")" != ok ]; do sleep 0.2; n=$((n + 1)); done
k2=$(cat "$home/$r/forward.pid" 2>/dev/null | tr -dc 0-9)
[ $n -lt 100 ] && [ -n "$k2" ] && [ "$k2" != "$kpid" ] &&
	pass "its keeper killed: start --all started another ($k2), the endpoint answers" || { cat "$home/out"; fail "start --all: keeper '$k2'"; }
kpid=${k2:-$kpid}
[ "$(stat -c %a "$home/$r/operator.sock" 2>/dev/null)" = 600 ] && pass "the forwarded operator socket here is 0600" ||
	fail "operator.sock here: mode $(stat -c %a "$home/$r/operator.sock" 2>&1)"

# ---- move: from the other machine here, and back ------------------------------------
# (a libvirt host here, lvh: the state saved there is a libvirt domain's)
"$bureau" host add lvh $uri >/dev/null 2>&1 || fail "host add lvh"
refuse "move: while it runs there" "runs" "$bureau" move $r --to lvh
"$bureau" stop $r >/dev/null 2>&1
refuse "move: a libvirt state to local" "cannot restore" "$bureau" move $r --to local
t0=$(now)
"$bureau" move $r --to lvh >"$home/move1" 2>&1 || { cat "$home/move1"; fail "move --to lvh"; }
tmove1=$(since $t0)
if [ ! -e "$rhome/$r" ] && [ -s "$home/$r/lv.state" ] && [ -s "$home/$r/system.qcow2" ] &&
    grep -q '"host": "lvh"' "$home/$r/desktop.json" && ! grep -q '"remote"' "$home/$r/desktop.json"; then
	pass "move --to lvh ($tmove1 s): its disks and saved state here, none left there: $(tail -1 "$home/move1")"
else
	cat "$home/move1"; ls "$home/$r" "$rhome/$r" 2>&1 | head; fail "move --to lvh: where its files are"
fi
st=$(ps -o stat= -p "$kpid" 2>/dev/null)
[ -n "$st" ] && [ "${st#Z}" = "$st" ] && fail "its forwards' keeper $kpid runs on" || pass "move: its forwards' keeper ended"
"$bureau" start $r --timeout 300 >"$home/start3" 2>&1
grep -q "^restored desktop '$r'" "$home/start3" && [ -n "$(cat "$home/$r/agent.pid" 2>/dev/null)" ] &&
	[ "$(gsh $r "ps -o pid= -p $sleeper | tr -d ' '")" = "$sleeper" ] &&
	pass "start here: restored, its host agent here, the guest's process $sleeper runs on" ||
	{ cat "$home/start3"; fail "start after move here"; }
"$bureau" stop $r >/dev/null 2>&1
t0=$(now)
"$bureau" move $r --to far >"$home/move2" 2>&1 || { cat "$home/move2"; fail "move --to far"; }
tmove2=$(since $t0)
if [ -s "$rhome/$r/lv.state" ] && [ ! -e "$home/$r/system.qcow2" ] && grep -q '"remote"' "$home/$r/desktop.json" &&
    grep -q '"host": "far"' "$rhome/$r/desktop.json"; then
	pass "move --to far ($tmove2 s): there again, a record here: $(tail -1 "$home/move2")"
else
	cat "$home/move2"; fail "move --to far: where its files are"
fi
kpid=$(cat "$home/$r/forward.pid" 2>/dev/null | tr -dc 0-9)
"$bureau" start $r --timeout 300 >"$home/start4" 2>&1
grep -q "^restored desktop '$r'" "$home/start4" && [ "$(gsh $r "ps -o pid= -p $sleeper | tr -d ' '")" = "$sleeper" ] &&
	pass "start there again: restored, the guest's process $sleeper runs on (through the forward)" ||
	{ cat "$home/start4"; fail "start after move back"; }
echo "# remote: move of a saved 1536M desktop: there to here $tmove1 s, here to there $tmove2 s"

# ---- fork there -----------------------------------------------------------------------
# forked by the bureau there (its libvirt fork), a record here with
# forwards of its own; an ephemeral one's stop here discards it there and
# its record here
"$bureau" fork $r ${r}g >"$home/fork" 2>&1 || { cat "$home/fork"; fail "fork $r ${r}g"; }
got=$(gsh ${r}g "hostname; ps -o comm= -p $sleeper")
got=$(echo "$got" | tr '\n' ' ')
[ -s "$rhome/${r}g/desktop.json" ] && grep -q '"remote"' "$home/${r}g/desktop.json" &&
	[ "$got" = "${r}g sleep " ] && [ "$(virsh -q -c $uri domstate bureau-${r}g 2>&1)" = running ] &&
	pass "fork there: ${r}g, a domain there, reached through its own forward here, runs $r's process $sleeper" ||
	{ cat "$home/fork"; ls "$rhome/${r}g" "$home/${r}g"; virsh -q -c $uri domstate bureau-${r}g; fail "fork there: in it '$got'"; }
"$bureau" fork $r ${r}e --ephemeral >"$home/fork2" 2>&1 && [ "$(gsh ${r}e hostname)" = "${r}e" ] &&
	"$bureau" stop ${r}e >"$home/out" 2>&1 && [ ! -e "$rhome/${r}e" ] && [ ! -e "$home/${r}e" ] &&
	pass "an ephemeral fork there: stopped here, gone there and here" ||
	{ cat "$home/fork2" "$home/out"; fail "ephemeral fork there"; }
"$bureau" stop --force ${r}g >/dev/null 2>&1; "$bureau" rm ${r}g >/dev/null 2>&1
[ ! -e "$rhome/${r}g" ] && [ ! -e "$home/${r}g" ] || fail "rm ${r}g"

# ---- rm -----------------------------------------------------------------------------
"$bureau" stop --force $r >/dev/null 2>&1
"$bureau" rm $r >"$home/out" 2>&1 || { cat "$home/out"; fail "rm"; }
[ ! -e "$home/$r" ] && [ ! -e "$rhome/$r" ] && pass "rm: gone here and there" || fail "rm: left $(ls -d "$home/$r" "$rhome/$r" 2>/dev/null)"
# (a zombie is gone too: PID 1 here reaps no orphans; waited for up to
# 10 s, not a fixed half second)
for _ in $(seq 100); do
	st=$(ps -o stat= -p "$kpid" 2>/dev/null)
	[ -z "$st" ] || [ "${st#Z}" != "$st" ] && break
	sleep 0.1
done
st=$(ps -o stat= -p "$kpid" 2>/dev/null)
[ -n "$st" ] && [ "${st#Z}" = "$st" ] && fail "the keeper $kpid runs on ($st)" || pass "rm: the keeper $kpid is gone from the process table"
pgrep -f "127.0.0.1:$lp:127.0.0.1:$rp" >/dev/null && fail "an ssh forward to $rp is left" || pass "rm: no ssh forward left"
virsh -q -c $uri list --all --name | grep -qx bureau-$r && fail "domain bureau-$r left" || pass "rm: no domain left"
"$bureau" host rm far >/dev/null 2>&1 && "$bureau" host rm lvh >/dev/null 2>&1 && pass "host rm far, lvh" || fail "host rm far, lvh"

echo "# $passes passed, $fails failed"
[ $fails = 0 ]
