#!/bin/sh
# End-to-end: bureau fork, a running desktop forked into a twin.
#
#   tests/e2e/test_fork.sh BUILDDIR
#
# With the minimal image (cached under $BUREAU_IMAGES, warm states made
# when missing), under TCG: a running 1536M clone P with a background
# process, a file in /dev/shm and an xterm is forked into F while a client
# pings P's endpoint every 50 ms: the fork answers (bureau fork returns
# once F is drawn and ready) with the same process (same pid), /dev/shm
# file and window (same id, title and pid) as P, read in F's guest; P
# answered throughout except for one short gap (the longest is printed,
# and must stay under 10 s: the pause is a state write, not a save); F
# has its own identity (hostname F, machine-id, guest token; F's daemon
# refuses P's guest token); files written afterwards in either (home disk
# and system disk) are not in the other; both desktops' overlays sit on
# one shared layer (hard links, link count 2) and F's own disk is what it
# wrote; `bureau ls` marks F as a fork of P; a live snapshot of P after
# the fork saves and loads (its disks' top nodes moved); P stops and
# starts again (its state restored on the new overlays) and rm P leaves F
# whole (F's chain holds through its links: F stops and starts, its file
# there). An ephemeral fork with --net none gets rules that refuse all
# but loopback, is marked
# ephemeral, and `bureau stop` leaves nothing of it: no directory, no
# QEMU, the shared layers back to their parent's links alone, and the
# parent's next stop folds the layer no fork shares back into its disk
# (its snapshots with it), restored as it was. The agent
# loop's `system fork` is refused until the policy names the class fork,
# then gives an ephemeral fork's endpoint and token, which answer; that
# fork cannot fork in turn (it does not inherit the class), and a second
# fork past --max-forks 1 is refused. Bad input:
# a fork of a stopped desktop, onto an existing name or with an invalid
# --net says why and makes nothing.
set -u

build=${1:?usage: test_fork.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "fork e2e" qemu-system-x86_64 qemu-img mke2fs python3

home=$(mktemp -d /var/tmp/bureau-fork.XXXXXX)
export BUREAU_HOME=$home
cleanup() {
	[ -n "${pinger:-}" ] && kill "$pinger" 2>/dev/null
	e2e_rm_home
}
trap cleanup EXIT INT TERM
e2e_image

qemu_of() { cat "$home/$1/qemu.pid" 2>/dev/null; }

# ---- the parent: a running 1536M clone with a process, a file, a window --------
t0=$(now)
if "$bureau" create p --image "$img" --memory 1536M >"$home/create-p.out" 2>&1 &&
    "$bureau" start p --accel tcg --timeout 600 >"$home/start-p.out" 2>&1; then
	pass "create+start p, 1536M ($(since $t0) s: $(head -n1 "$home/start-p.out"))"
else
	cat "$home/create-p.out" "$home/start-p.out"; tail -20 "$home/p/agent.log"
	fail "create+start p"; exit 1
fi
pid=$(gsh p 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
mark=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
gsh p "echo $mark > /dev/shm/fork && echo parent > ~/who.txt && sync" >/dev/null
wtitle=fork-$mark
winfo=$(call p "{\"tool\":\"window\",\"action\":\"launch\",\"argv\":[\"xterm\",\"-T\",\"$wtitle\",\"-e\",\"sleep\",\"100000\"],\"wait\":true,\"timeout\":60}" 90)
wid=$(echo "$winfo" | json window)
wpid=$(listed p "$wid" "$wtitle")
[ -n "$pid" ] && [ -n "$wid" ] && [ -n "$wpid" ] ||
	fail "setting up p: process '$pid', window '$wid' (pid '$wpid'): $winfo"

# ---- bad input: nothing made --------------------------------------------------
"$bureau" create q --image "$img" --memory 1536M >/dev/null 2>&1
out=$("$bureau" fork q q2 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "not running" && [ ! -e "$home/q2" ] &&
	pass "a fork of a stopped desktop is refused ($out)" || fail "fork of stopped q: rc $rc: $out"
out=$("$bureau" fork p q 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "exists" && [ -e "$home/q/desktop.json" ] &&
	pass "a fork onto an existing name is refused, the desktop kept ($out)" ||
	fail "fork p q (exists): rc $rc: $out"
out=$("$bureau" fork p q3 --net moon 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q -- "--net" && [ ! -e "$home/q3" ] &&
	pass "an invalid --net is refused, naming it" || fail "fork --net moon: rc $rc: $out"
"$bureau" rm q >/dev/null 2>&1

# ---- the fork, while a client pings the parent ---------------------------------
ptok=$(cat "$home/p/token") pep=$(cat "$home/p/endpoint")
PYTHONPATH=$top/tests/lib python3 -c '
import json, sys, time
import bt
r = bt.Req(sys.argv[1], timeout_ms=30000)
out = open(sys.argv[3], "w")
req = json.dumps({"tool": "system", "action": "ping", "token": sys.argv[2]})
while True:
    t = time.time()
    ok = json.loads(r.rpc(req)).get("ok")
    out.write("%.3f %.3f %d\n" % (t, time.time(), 1 if ok else 0)); out.flush()
    time.sleep(0.05)' "$pep" "$ptok" "$home/pings" &
pinger=$!
sleep 2
t0=$(now)
if "$bureau" fork p f >"$home/fork.out" 2>&1; then
	tf=$(since $t0)
	pass "fork p f answered in $tf s: $(grep -h 'forked\|restored' "$home/fork.out" | tr '\n' ' ')"
else
	cat "$home/fork.out"; tail -20 "$home/f/agent.log" 2>/dev/null
	fail "fork p f"; exit 1
fi
t1=$(now)
sleep 2
kill $pinger; wait $pinger 2>/dev/null; pinger=
gap=$(awk -v a="$t0" -v b="$t1" '
	$3 == 1 { if (last != "" && $2 > a && $1 < b && $2 - last > g) g = $2 - last; last = $2 }
	END { printf "%.2f %d", g, NR }' "$home/pings")
g=${gap% *} n=${gap#* }
awk -v g="$g" 'BEGIN { exit !(g > 0 && g < 10) }' && [ "$n" -gt 20 ] &&
	pass "p answered throughout the fork: $n pings, the longest wait between answers $g s" ||
	fail "p's answers during the fork: $n pings, longest gap '$g' s"

# ---- the fork is the parent as it was ------------------------------------------
got=$(gsh f "ps -o comm= -p $pid; cat /dev/shm/fork; cat ~/who.txt")
[ "$got" = "sleep
$mark
parent" ] && pass "f runs p's process $pid, has its /dev/shm file and home file" ||
	fail "in f: process $pid, /dev/shm/fork, ~/who.txt: '$got'"
fwp=$(listed f "$wid" "$wtitle")
[ -n "$fwp" ] && [ "$fwp" = "$wpid" ] && [ "$(gsh f "ps -o comm= -p $wpid")" = xterm ] &&
	pass "f shows p's window $wid ('$wtitle', xterm pid $wpid)" ||
	fail "f's window $wid '$wtitle': pid '$fwp' (p's: '$wpid')"
"$bureau" screenshot f -o "$home/f.png" >/dev/null 2>&1 && [ -s "$home/f.png" ] ||
	fail "screenshot f"

# ---- its own identity -----------------------------------------------------------
idp=$(gsh p 'hostname; cat /etc/machine-id; cat /run/bureau/token')
idf=$(gsh f 'hostname; cat /etc/machine-id; cat /run/bureau/token')
hf=$(echo "$idf" | sed -n 1p) mf=$(echo "$idf" | sed -n 2p) gf=$(echo "$idf" | sed -n 3p)
hp=$(echo "$idp" | sed -n 1p) mp=$(echo "$idp" | sed -n 2p) gp=$(echo "$idp" | sed -n 3p)
[ "$hf" = f ] && [ "$hp" = p ] && [ ${#mf} = 32 ] && [ "$mf" != "$mp" ] &&
	[ "$gf" = "$(cat "$home/f/guest-token")" ] && [ "$gf" != "$gp" ] &&
	pass "f has its own hostname, machine-id and guest token" ||
	fail "identities: p '$hp $mp', f '$hf $mf', guest tokens equal? $([ "$gf" = "$gp" ] && echo yes)"
uf=$(json url < "$home/f/guest.json")
r1=$(ping "$uf" "$gp") r2=$(ping "$uf" "$gf")
[ "$r1" = unauthorized ] && [ "$r2" = ok ] &&
	pass "f's daemon refuses p's guest token ($r1; its own: $r2)" ||
	fail "f's daemon: p's token '$r1', its own '$r2'"
[ "$(cat "$home/f/token")" != "$ptok" ] && [ "$(ping "$(cat "$home/f/endpoint")" "$ptok")" = unauthorized ] &&
	pass "f's endpoint refuses p's agent token" || fail "f's endpoint and p's agent token"

# ---- their files part ways --------------------------------------------------------
gsh f 'echo fork > ~/who.txt && echo f-sys > /var/tmp/sysmark; sync' >/dev/null
gsh p 'echo p-only > ~/p-only.txt && sync' >/dev/null
a=$(gsh p 'cat ~/who.txt; test -e /var/tmp/sysmark && echo sys-there || echo sys-absent')
b=$(gsh f 'cat ~/who.txt; test -e ~/p-only.txt && echo there || echo absent; cat /var/tmp/sysmark')
[ "$a" = "parent
sys-absent" ] && [ "$b" = "fork
absent
f-sys" ] && pass "files written after the fork stay in the desktop that wrote them (home and system disks)" ||
	fail "after the fork: in p '$a', in f '$b'"

# ---- the disks: one shared layer under both, links ---------------------------------
layer=$(cd "$home/f" && ls system.L*.qcow2 2>/dev/null | head -n1)
if [ -n "$layer" ] && [ "$(stat -c %h "$home/p/$layer")" = 2 ] &&
    [ "$(stat -c %i "$home/p/$layer")" = "$(stat -c %i "$home/f/$layer")" ] &&
    qemu-img info -U "$home/f/system.qcow2" | grep -q "backing file: $layer" &&
    qemu-img info -U "$home/p/system.qcow2" | grep -q "backing file: $layer"; then
	pass "p and f run on overlays of one layer $layer (one inode, 2 links)"
else
	fail "the layer: '$layer': $(ls -li "$home/p" "$home/f" | grep qcow2)"
fi
row=$("$bureau" ls | awk '$1 == "f"')
echo "# $row"
echo "$row" | grep -q "fork of p" && pass "ls marks f as a fork of p" || fail "ls row of f: '$row'"
echo "# f: $(du -k "$home/f/system.qcow2" "$home/f/home.qcow2" | awk '{ s += $1 } END { print s }') KiB of its own disks (the overlays); p's layer $(du -k "$home/p/$layer" | cut -f1) KiB shared"

# ---- the parent after the fork: snapshots, stop/start ------------------------------
if "$bureau" snapshot p after-fork >"$home/snap.out" 2>&1 &&
    gsh p 'echo changed > ~/who.txt && sync' >/dev/null &&
    "$bureau" restore p after-fork >"$home/restore.out" 2>&1 &&
    [ "$(gsh p 'cat ~/who.txt')" = parent ]; then
	pass "a live snapshot of p after the fork saves and loads"
else
	fail "snapshot/restore of p after the fork: $(cat "$home/snap.out" "$home/restore.out")"
fi
if "$bureau" stop p >"$home/stop-p.out" 2>&1 &&
    "$bureau" start p --accel tcg >"$home/start-p2.out" 2>&1 &&
    grep -q '^restored' "$home/start-p2.out" &&
    [ "$(gsh p "ps -o comm= -p $pid; cat ~/who.txt")" = "sleep
parent" ]; then
	pass "p stops and starts again after the fork (restored, process $pid alive)"
else
	fail "p's stop/start after the fork: $(cat "$home/stop-p.out" "$home/start-p2.out")"
fi

# ---- an ephemeral fork: --net none, gone when it stops -------------------------------
if "$bureau" fork p e --ephemeral --net none >"$home/fork-e.out" 2>&1; then
	pass "fork p e --ephemeral --net none ($(grep -h forked "$home/fork-e.out"))"
else
	cat "$home/fork-e.out"; fail "fork --ephemeral"
fi
"$bureau" ls | awk '$1 == "e"' | grep -q "fork of p, ephemeral" &&
	pass "ls marks e ephemeral" || fail "ls row of e: $("$bureau" ls | awk '$1 == "e"')"
# --net none: its namespace's rules refuse all but loopback (test_guest_net
# checks what such rules let through)
grep -qx '		reject' "$home/e/net.nft" && ! grep -q dnat "$home/e/net.nft" &&
	[ "$(json net < "$home/e/desktop.json")" = none ] &&
	pass "e runs with --net none: its network rules refuse all but loopback" ||
	fail "e's network with --net none: $(cat "$home/e/net.nft" 2>&1 | head -5)"
eq=$(qemu_of e)
layers_before=$(stat -c %h "$home/p"/system.L*.qcow2 | sort | tr '\n' ' ')
if "$bureau" stop e >"$home/stop-e.out" 2>&1 && grep -q discarded "$home/stop-e.out" &&
    [ ! -e "$home/e" ] && [ -n "$eq" ] && ! kill -0 "$eq" 2>/dev/null; then
	pass "stop e discards it: no directory, its QEMU $eq gone ($(cat "$home/stop-e.out"))"
else
	fail "stop e: $(cat "$home/stop-e.out"); dir: $(ls "$home/e" 2>&1 | head -3); qemu $eq"
fi
echo "# layers' link counts with e: $layers_before; after: $(stat -c %h "$home/p"/system.L*.qcow2 | sort | tr '\n' ' ')"
[ "$(gsh p 'cat ~/who.txt')" = parent ] && pass "p is untouched by its discarded fork" ||
	fail "p after e: '$(gsh p 'cat ~/who.txt')'"

# ---- a layer no fork shares any more folds back at the parent's next stop ----------
elayer=$(cd "$home/p" && for l in system.L*.qcow2; do [ "$(stat -c %h "$l")" = 1 ] && echo "$l"; done | head -n1)
if [ -n "$elayer" ] && "$bureau" stop p >"$home/stop-p3.out" 2>&1 &&
    "$bureau" start p --accel tcg >"$home/start-p3.out" 2>&1 &&
    grep -q '^restored' "$home/start-p3.out" && [ ! -e "$home/p/$elayer" ] &&
    qemu-img info -U "$home/p/system.qcow2" | grep -q "backing file: $layer" &&
    qemu-img snapshot -U -l "$home/p/system.qcow2" | grep -q after-fork &&
    [ "$(gsh p "ps -o comm= -p $pid; cat ~/who.txt")" = "sleep
parent" ]; then
	pass "p's stop folded e's layer $elayer back (its snapshot after-fork with it; f's $layer still under it), restored with its process"
else
	fail "folding e's layer '$elayer' back: $(cat "$home/stop-p3.out" "$home/start-p3.out" 2>&1 | tail -3); $(ls "$home/p" | grep qcow2 | tr '\n' ' ')"
fi

# ---- the agent loop forks its own desktop: only where the policy allows ------------
r=$(call p '{"tool":"system","action":"fork"}' 60)
[ "$(echo "$r" | json error.code)" = permission_denied ] && echo "$r" | grep -q "class 'fork'" &&
	pass "system fork without the class fork in p's policy is refused ($(echo "$r" | json error.message))" ||
	fail "system fork with no allow list: $r"
"$bureau" policy p --allow bash,window,system,fork >/dev/null || fail "policy p --allow ...,fork"
# through the Python module (bureau.Desktop.fork: system fork, then a
# Desktop on the fork's endpoint with its token)
r=$(BUREAU_LIB=$build/libbureau.so PYTHONPATH=$top/host-bridge/python python3 -c '
import json, sys
import bureau
d = bureau.Desktop(sys.argv[1], token=sys.argv[2], timeout=60)
t = d.fork(net="none")
print(json.dumps({"name": t.fork_name, "url": t.url, "pong": t.ping().output,
                  "sleep": t.bash("ps -o comm= -p " + sys.argv[3]).output.strip()}))' "$pep" "$ptok" "$pid" 2>&1)
an=$(echo "$r" | json name 2>/dev/null)
if [ -n "$an" ] && [ "$(echo "$r" | json pong)" = pong ] && [ "$(echo "$r" | json sleep)" = sleep ] &&
    [ "$(echo "$r" | json url)" = "$(cat "$home/$an/endpoint")" ] &&
    [ "$(json fork_of < "$home/$an/desktop.json")" = p ] &&
    [ "$(json ephemeral < "$home/$an/desktop.json")" = true ]; then
	pass "system fork from the agent loop (Python's Desktop.fork): '$an' answers at its endpoint with its token, runs p's process, ephemeral"
else
	fail "system fork from the agent loop: $r"
fi
# (issue 38) the agent's fork does not inherit the class fork: its own
# system fork is refused until its operator names it; with --max-forks 1,
# a second fork of p while the first lives is refused
if [ -n "$an" ]; then
	at=$(cat "$home/$an/token")
	r=$(BUREAU_LIB=$build/libbureau.so PYTHONPATH=$top/host-bridge/python python3 -c '
import json, sys
import bureau
d = bureau.Desktop(sys.argv[1], token=sys.argv[2], timeout=60)
try:
    d.fork()
    print("forked")
except bureau.Error as e:
    print(json.dumps({"code": e.code, "message": e.message}))' "$(cat "$home/$an/endpoint")" "$at" 2>&1)
	[ "$(echo "$r" | json code)" = permission_denied ] && echo "$r" | grep -q "names the class 'fork' on it" &&
	[ "$(json allow < "$home/$an/desktop.json")" = "bash,window,system" ] &&
		pass "the agent's fork '$an' cannot fork in turn: $(echo "$r" | json message)" ||
		fail "a fork of the agent's fork: $r (its allow: $(json allow < "$home/$an/desktop.json"))"
	"$bureau" config p --max-forks 1 >/dev/null || fail "config p --max-forks 1"
	r=$(call p '{"tool":"system","action":"fork"}' 60)
	[ "$(echo "$r" | json error.code)" = permission_denied ] && echo "$r" | grep -q "max-forks 1" &&
		[ "$(ls -d "$home"/p-fork-* 2>/dev/null | wc -l)" = 1 ] &&
		pass "a second fork of p with --max-forks 1 is refused: $(echo "$r" | json error.message)" ||
		fail "a fork past --max-forks: $r"
	"$bureau" config p --max-forks 4 >/dev/null
fi
if [ -n "$an" ] && "$bureau" stop "$an" >/dev/null 2>&1 && [ ! -e "$home/$an" ]; then
	pass "stop discards the agent's fork"
else
	fail "stopping the agent's fork '$an': $(ls "$home" | tr '\n' ' ')"
fi
"$bureau" policy p --allow '' >/dev/null || fail "policy p --allow ''"

# ---- rm the parent: the fork's chain holds -----------------------------------------
"$bureau" stop --force p >/dev/null 2>&1
if "$bureau" rm p >/dev/null 2>&1 && [ ! -e "$home/p" ] &&
    "$bureau" stop f >"$home/stop-f.out" 2>&1 &&
    "$bureau" start f --accel tcg >"$home/start-f.out" 2>&1 &&
    [ "$(gsh f "cat ~/who.txt; cat /var/tmp/sysmark; ps -o comm= -p $pid")" = "fork
f-sys
sleep" ]; then
	pass "with p removed, f stops and starts (restored) with its files and process"
else
	fail "f after rm p: $(cat "$home/stop-f.out" "$home/start-f.out" 2>&1 | tail -5)"
fi

echo "fork e2e: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
