#!/bin/bash
# End-to-end: what a desktop's guest can reach, and who can reach its
# daemon, in a small world of network namespaces this test makes.
#
#   tests/e2e/test_guest_net.sh BUILDDIR
#
# The world (no packet leaves it; every address is a documentation range,
# or private inside the test's own namespaces):
#   bt-host-PID   plays the host: 192.0.2.2/24 on a veth, default route via
#                 192.0.2.1, a resolver on 127.0.0.53 (dnsmasq, answering
#                 public.test) named in its resolv.conf, services on its
#                 127.0.0.1:8081 and 192.0.2.2:8082; bureau runs here
#   bt-world-PID  the rest: the gateway 192.0.2.1, a "public" 198.51.100.7
#                 and 203.0.113.9, the metadata address 169.254.169.254, a
#                 private 10.77.0.1; each answers on :8080 with its name
# A desktop cloned from the minimal image's warm state, started under
# TCG in bt-host, tries each through its bash tool (bash's /dev/tcp):
# it reaches the public address only, resolves public.test through the
# host's loopback resolver, and reaches 10.77.0.1:8080 once `bureau
# policy --net-allow` opens it, while the rest stays shut. The guest
# token read inside the desktop is refused by every TCP port listening in
# bt-host, and the way to the guest's daemon (guest.sock) is in the
# desktop's 0700 directory. A stop and start (a save and a restore) gives
# the guest a new token, and its daemon refuses the old one.
set -u

build=${1:?usage: test_guest_net.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
images=${BUREAU_IMAGES:-/var/cache/bureau/images}
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
. "$(dirname "$0")/../lib/proc.sh"

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
skip() { echo "SKIP $*"; exit 0; }
fails=0

# ---- inside bt-host (this script again, under ip netns exec) -------------------
if [ "${BT_GUEST_NET_INSIDE:-}" = 1 ]; then
	export BUREAU_HOME=$BT_HOME BUREAU_PORTS=7310-7339
	img=$(cd "$images/minimal" && pwd -P)
	call() { "$bureau" call --timeout "${3:-120}" "$1" "$2"; }
	gsh() { # gsh CMD: its output, through the guest's bash tool
		req=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"tool":"bash","command":sys.argv[1],"timeout":60}))' "$1")
		call g1 "$req" 90 | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("output",""))'
	}
	# reach ADDR PORT: what the guest reads from it within 8 s, or "-"
	reach() {
		gsh "timeout 8 bash -c 'exec 3<>/dev/tcp/$1/$2 && head -c 64 <&3' 2>/dev/null || echo -" | tr -d '\r' | head -n1
	}
	# ping URL TOKEN: "ok" or the error's code or "none" (no answer)
	ping() {
		PYTHONPATH=$top/tests/lib /usr/bin/python3 -c '
import json, sys
import bt
try:
    r = bt.Req(sys.argv[1], timeout_ms=3000)
    try:
        a = json.loads(r.rpc(json.dumps({"tool": "system", "action": "ping", "token": sys.argv[2]})))
    finally:
        r.close()
    print("ok" if a.get("ok") else a.get("error", {}).get("code"))
except Exception as e:
    print("none")' "$1" "$2"
	}

	if ! "$bureau" create g1 --image "$img" >"$BT_HOME/create.out" 2>&1 ||
	    ! "$bureau" start g1 --accel tcg --timeout 600 >"$BT_HOME/start.out" 2>&1; then
		cat "$BT_HOME/create.out" "$BT_HOME/start.out"
		tail -20 "$BT_HOME/g1/agent.log" "$BT_HOME/g1/net.log" 2>/dev/null
		fail "create and start g1 in the test's host namespace"
		exit 1
	fi
	pass "g1 started in bt-host ($(head -n1 "$BT_HOME/start.out"))"

	r=$(reach 198.51.100.7 8080)
	case $r in *198.51.100.7*) pass "the guest reaches a public address ($r)" ;;
	*) fail "the guest does not reach 198.51.100.7:8080: '$r'"; tail -5 "$BT_HOME/g1/net.log" ;; esac
	for t in 169.254.169.254:8080:metadata 10.77.0.1:8080:private \
		192.0.2.1:8080:gateway 192.0.2.2:8082:"host's own address" \
		10.0.2.2:8081:"passt's gateway (the host's loopback once)" \
		192.0.2.2:8081:"host loopback service"; do
		a=${t%%:*} rest=${t#*:} p=${rest%%:*} what=${rest#*:}
		r=$(reach "$a" "$p")
		[ "$r" = - ] && pass "the guest cannot reach the $what ($a:$p)" ||
			fail "the guest reached the $what ($a:$p): '$r'"
	done
	r=$(gsh 'getent hosts public.test | cut -d" " -f1' | head -n1)
	[ "$r" = 198.51.100.7 ] && pass "the guest resolves public.test through the host's resolver on 127.0.0.53" ||
		fail "public.test resolved to '$r' in the guest"

	out=$("$bureau" policy g1 --net-allow 10.77.0.1:8080 2>&1)
	r=$(reach 10.77.0.1 8080)
	case $r in *10.77.0.1*) pass "policy --net-allow 10.77.0.1:8080 opens it at once ($r)" ;;
	*) fail "after --net-allow 10.77.0.1:8080: '$r' ($out)" ;; esac
	r=$(reach 169.254.169.254 8080)
	[ "$r" = - ] && pass "the metadata address stays shut" || fail "metadata reached after --net-allow: '$r'"

	# --net-rate: 4 MiB from the world at 1M/s takes 3 s and more
	# (after a burst of one second's worth); the rules as the namespace's kernel holds
	# them, seen from outside through the keeper's namespace
	fetch4m() {
		gsh 's=$(date +%s%N); n=$(timeout 60 bash -c "exec 3<>/dev/tcp/198.51.100.7/8090 && cat <&3 | wc -c"); e=$(date +%s%N); echo "$n $(( (e - s) / 1000000 ))"' | grep . | tail -n1
	}
	kp=$(cat "$BT_HOME/g1/net.pid")
	if "$bureau" config g1 --net-rate 1M >"$BT_HOME/rate.out" 2>&1; then
		set -- $(fetch4m)
		lim=$(nsenter -t "$kp" -n nft list ruleset | grep -c 'limit rate over 1 mbytes/second')
		if [ "${1:-0}" = 4194304 ] && [ "${2:-0}" -ge 2500 ] && [ "$lim" = 2 ]; then
			pass "config --net-rate 1M: 4 MiB from the world took ${2} ms in the guest; the namespace polices both ways"
		else
			fail "--net-rate 1M: got '${1:-}' bytes in '${2:-}' ms, $lim limit rules"
		fi
		"$bureau" config g1 --net-rate off >/dev/null 2>&1
		set -- $(fetch4m)
		[ "$(nsenter -t "$kp" -n nft list ruleset | grep -c 'limit rate')" = 0 ] && [ "${1:-0}" = 4194304 ] &&
			pass "config --net-rate off: no limit left (4 MiB in ${2:-?} ms)" ||
			fail "after --net-rate off: $(nsenter -t "$kp" -n nft list ruleset | grep 'limit rate'); '${1:-}' bytes"
	else
		cat "$BT_HOME/rate.out"; fail "config g1 --net-rate 1M"
	fi

	# The guest token, as the desktop's user reads it.
	tok=$(gsh 'cat /run/bureau/token' | tr -d '\r\n')
	gtok=$(tr -d '\n' <"$BT_HOME/g1/guest-token")
	[ -n "$tok" ] && [ "$tok" = "$gtok" ] && pass "the desktop's user reads the guest token" ||
		fail "guest token read inside: '${tok:0:8}...', host's '${gtok:0:8}...'"
	ports=$(ss -Hltn | awk '{ n = split($4, a, ":"); print a[n] }' | sort -un)
	took=""
	for p in $ports; do
		[ "$(ping "tcp://127.0.0.1:$p" "$tok")" = ok ] && took="$took $p"
	done
	[ -z "$took" ] && pass "no TCP port on the host takes the guest token (tried: $(echo $ports))" ||
		fail "the guest token opens the daemon on the host's port(s):$took"
	[ "$(stat -c %a "$BT_HOME/g1")" = 700 ] && [ -S "$BT_HOME/g1/guest.sock" ] &&
		pass "the way to the guest's daemon is $BT_HOME/g1/guest.sock, in a 0700 directory" ||
		fail "g1's directory is $(stat -c %a "$BT_HOME/g1"), guest.sock: $(ls -l "$BT_HOME/g1/guest.sock" 2>&1)"

	# A new guest token at every start: a save and a restore.
	"$bureau" stop g1 >"$BT_HOME/stop.out" 2>&1 || { cat "$BT_HOME/stop.out"; fail "stop g1"; }
	if "$bureau" start g1 --accel tcg --timeout 600 >"$BT_HOME/start2.out" 2>&1; then
		tok2=$(gsh 'cat /run/bureau/token' | tr -d '\r\n')
		gurl=ipc://$BT_HOME/g1/guest.sock
		grep -q '^restored' "$BT_HOME/start2.out" && [ -n "$tok2" ] && [ "$tok2" != "$tok" ] &&
			pass "a restore gives the guest a new token ($(head -n1 "$BT_HOME/start2.out"))" ||
			fail "after stop/start: '$(head -n1 "$BT_HOME/start2.out")', token changed: $([ "$tok2" != "$tok" ] && echo yes || echo no)"
		a=$(ping "$gurl" "$tok") b=$(ping "$gurl" "$tok2")
		[ "$a" = unauthorized ] && [ "$b" = ok ] && pass "the guest refuses its old token, takes the new" ||
			fail "old token: $a, new: $b"
	else
		cat "$BT_HOME/start2.out"; fail "start g1 again"
	fi
	"$bureau" stop --force g1 >/dev/null 2>&1
	exit $((fails > 0))
fi

# ---- outside: the world ---------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "guest net: network namespaces need root"
for t in qemu-system-x86_64 ip nft pasta passt dnsmasq ss; do
	command -v $t >/dev/null 2>&1 || skip "guest net: '$t' not installed (make deps)"
done
[ -e "$images/minimal/image.json" ] ||
	skip "guest net: no minimal image in $images (the other e2e tests build it)"

H=bt-host-$$ W=bt-world-$$
home=$(mktemp -d /var/tmp/bureau-net.XXXXXX)
chmod 755 "$home"
pids=()
cleanup() {
	BUREAU_HOME=$home "$bureau" stop --force g1 >/dev/null 2>&1
	for d in "$home"/*/; do
		[ -s "$d/agent.pid" ] && kill -9 "$(cat "$d/agent.pid")" 2>/dev/null
		[ -s "$d/qemu.pid" ] && kill -9 "$(cat "$d/qemu.pid")" 2>/dev/null
	done
	bt_kill_child TERM "${pids[@]}"
	ip netns del "$H" 2>/dev/null
	ip netns del "$W" 2>/dev/null
	rm -rf "/etc/netns/$H" "$home"
}
trap cleanup EXIT INT TERM
# its warm state (another suite may be making it: image warm waits for
# that one, then finds it there)
if [ ! -e "$images/minimal/warm/state.json" ] &&
    ! "$bureau" image warm "$images/minimal" >"$home/warm.log" 2>&1; then
	tail -20 "$home/warm.log"; fail "image warm"; exit 1
fi

ip netns add "$H" && ip netns add "$W" &&
	ip link add bt-h$$ netns "$H" type veth peer name bt-w$$ netns "$W" || {
	fail "make the namespaces and their veth pair"; exit 1; }
ip -n "$H" link set lo up
ip -n "$W" link set lo up
ip -n "$H" addr add 192.0.2.2/24 dev bt-h$$
ip -n "$H" link set bt-h$$ up
ip -n "$H" route add default via 192.0.2.1
ip -n "$W" addr add 192.0.2.1/24 dev bt-w$$
ip -n "$W" link set bt-w$$ up
for a in 198.51.100.7 203.0.113.9 169.254.169.254 10.77.0.1; do
	ip -n "$W" addr add $a/32 dev lo
done
# name: each server answers with the address it was reached on
server='import socket, socketserver, sys
class H(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(b"hello from %s\n" % self.request.getsockname()[0].encode())
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
S((sys.argv[1], int(sys.argv[2])), H).serve_forever()'
ip netns exec "$W" /usr/bin/python3 -c "$server" 0.0.0.0 8080 & pids+=($!)
# bulk: 4 MiB to whoever connects (--net-rate)
bulk='import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(8)
data = b"x" * (4 << 20)
while True:
    c, _ = s.accept()
    try:
        c.sendall(data)
    except OSError:
        pass
    c.close()'
ip netns exec "$W" /usr/bin/python3 -c "$bulk" 0.0.0.0 8090 & pids+=($!)
ip netns exec "$H" /usr/bin/python3 -c "$server" 127.0.0.1 8081 & pids+=($!)
ip netns exec "$H" /usr/bin/python3 -c "$server" 192.0.2.2 8082 & pids+=($!)
ip netns exec "$H" dnsmasq --no-daemon --no-resolv --no-hosts --bind-interfaces \
	--listen-address=127.0.0.53 --address=/public.test/198.51.100.7 \
	--pid-file= --user=root 2>"$home/dnsmasq.log" & pids+=($!)
mkdir -p "/etc/netns/$H"
echo "nameserver 127.0.0.53" >"/etc/netns/$H/resolv.conf"
sleep 1
ip netns exec "$H" /usr/bin/python3 -c 'import socket; s=socket.create_connection(("198.51.100.7", 8080), 3); print(s.recv(64).decode().strip())' |
	grep -q "198.51.100.7" && pass "the world answers bt-host on 198.51.100.7:8080" ||
	{ fail "the test's world does not answer"; exit 1; }

BT_GUEST_NET_INSIDE=1 BT_HOME=$home ip netns exec "$H" bash "$self" "$build"
rc=$?
[ $rc -eq 0 ] || { [ -s "$home/g1/net.log" ] && tail -20 "$home/g1/net.log"; }
exit $rc
