#!/bin/sh
# End-to-end: a user without root runs a desktop (DESIGN.md, "Least
# privilege"; issue 38, item 6).
#
#   tests/e2e/test_rootless.sh BUILDDIR
#
# As root it sets up what a stock Debian 12 has and this machine lacks
# (/dev/net/tun 0666; it puts the mode back after) and makes a user of
# its own (removed after). As that user, with the minimal image from the
# shared image directory and bureau copied where the user may run it:
# create, start (a cold boot: the image's warm state is root's), use,
# save and restore with a process kept (same pid), the files kept. From
# outside: QEMU and the network keeper run as that user's uid, not root;
# the guest reaches no service of the host (its loopback, through
# 10.0.2.2, the guest's gateway or the host's address); status says
# which limits this host does not enforce for the user.
set -u

build=${1:?usage: test_rootless.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "rootless e2e" qemu-system-x86_64 qemu-img mke2fs python3 pasta passt nft useradd
[ "$(id -u)" = 0 ] || skip "rootless e2e: making its user and /dev/net/tun's mode need root"

home=$(mktemp -d /var/tmp/bureau-rootless.XXXXXX)
chmod 755 "$home"
user=brl$$
tun_mode=$(stat -c %a /dev/net/tun)
cleanup() {
	[ -n "${srv_pids:-}" ] && kill $srv_pids 2>/dev/null
	if id "$user" >/dev/null 2>&1; then
		as "$bin stop --force r1" >/dev/null 2>&1
		pkill -9 -u "$user" 2>/dev/null
		sleep 1
		userdel "$user" 2>/dev/null
	fi
	chmod "$tun_mode" /dev/net/tun
	rm -rf "$home"
}
trap cleanup EXIT INT TERM
e2e_image
chmod 666 /dev/net/tun

useradd -M -d "$home/u" -s /bin/sh "$user" || { fail "useradd $user"; exit 1; }
mkdir -p "$home/u" && chown "$user:" "$home/u"
uid=$(id -u "$user")
# bureau where the user may run it (the build directory may be in root's
# home); it finds its own agent and network keeper through /proc/self/exe
bin=$home/bureau
cp "$bureau" "$bin" && chmod 755 "$bin"
# as CMD: CMD as the user, with the desktop's store in its home
as() {
	su -s /bin/sh "$user" -c "cd; export BUREAU_HOME=$home/u/desks BUREAU_PORTS=$BUREAU_PORTS; $1"
}
ugsh() { # the guest's bash, as gsh
	as "$bin call --timeout 120 r1 '$(python3 -c 'import json,sys; print(json.dumps({"tool": "bash", "command": sys.argv[1]}))' "$1" | sed "s/'/'\\\\''/g")'" |
		python3 -c 'import json,sys; r=json.load(sys.stdin); print(r.get("output", r), end="")'
}

if as "$bin create r1 --image $img --memory 1536M" >"$home/out" 2>&1; then
	pass "create as $user ($(head -n1 "$home/out"))"
else
	cat "$home/out"; fail "create as $user"; exit 1
fi
[ "$(stat -c %u "$home/u/desks/r1/system.qcow2")" = "$uid" ] && pass "its disks are the user's" ||
	fail "system.qcow2 owned by uid $(stat -c %u "$home/u/desks/r1/system.qcow2")"
if as "$bin start r1 --accel tcg --timeout 600" >"$home/out" 2>&1; then
	pass "start as $user ($(head -n1 "$home/out"))"
else
	cat "$home/out"; tail -20 "$home/u/desks/r1/agent.log" "$home/u/desks/r1/net.log" 2>/dev/null
	fail "start as $user"; exit 1
fi

q=$(cat "$home/u/desks/r1/qemu.pid")
n=$(cat "$home/u/desks/r1/net.pid")
qu=$(awk '/^Uid:/ { print $2 }' /proc/$q/status) nu=$(awk '/^Uid:/ { print $2 }' /proc/$n/status)
[ "$qu" = "$uid" ] && [ "$nu" = "$uid" ] && pass "QEMU and the network keeper run as uid $uid, not root" ||
	fail "QEMU runs as uid $qu, the keeper as $nu (the user is $uid)"
as "$bin status r1" >"$home/status" 2>&1
grep -q '^cgroup: none bureau could make here.*not enforced: cpu, memory, pids' "$home/status" &&
	pass "status says what is not enforced: $(grep '^cgroup:' "$home/status")" ||
	{ cat "$home/status"; fail "status: no word on the limits"; }

# ---- used --------------------------------------------------------------------------
p=$(ugsh 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
ugsh 'echo rootless-mark > /home/bureau/mark && sync && cat /home/bureau/mark' | grep -q rootless-mark &&
	pass "a command in the guest wrote a file (process $p started)" || fail "the guest's bash"

# ---- the host stays out of the guest's reach -----------------------------------------
mark=$$-$(date +%s)
mkdir -p "$home/www" && echo "mark-$mark" >"$home/www/page.txt"
lport=$((${BUREAU_PORTS%-*} + 27))
(cd "$home/www" && exec python3 -m http.server "$lport" --bind 127.0.0.1) >/dev/null 2>&1 &
srv_pids=$!
hostip=$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
sleep 1
gw=$(ugsh "ip -4 route show default | sed -n 's/.*via \\([0-9.]*\\).*/\\1/p'" | head -n1)
leak=
for h in 10.0.2.2 $gw $hostip; do
	ugsh "timeout 10 bash -c 'exec 3<>/dev/tcp/$h/$lport && printf \"GET /page.txt HTTP/1.0\\r\\n\\r\\n\" >&3 && cat <&3' 2>&1; true" |
		grep -q "mark-$mark" && leak="$leak $h"
done
[ -z "$leak" ] && pass "the host's 127.0.0.1:$lport is out of the guest's reach (10.0.2.2, gateway ${gw:-?}, ${hostip:-no host address})" ||
	fail "the guest reached the host's loopback service through$leak"

# ---- saved and restored ------------------------------------------------------------------
if as "$bin stop r1" >"$home/out" 2>&1 && grep -q saved "$home/out"; then
	pass "stop as $user: $(cat "$home/out")"
else
	cat "$home/out"; fail "stop as $user"
fi
if as "$bin start r1 --accel tcg" >"$home/out" 2>&1 && grep -q '^restored' "$home/out"; then
	got=$(ugsh "ps -o comm= -p $p; cat /home/bureau/mark")
	case $got in
	*sleep*rootless-mark*) pass "restored as $user: process $p and the file kept ($(head -n1 "$home/out"))" ;;
	*) fail "after the restore: '$got'" ;;
	esac
else
	cat "$home/out"; fail "start (restore) as $user"
fi
as "$bin stop r1" >/dev/null 2>&1
# (a process that ended and waits for its parent to reap it is gone too)
alive() { ps -u "$user" -o pid=,stat=,args= 2>/dev/null | awk '$2 !~ /^Z/'; }
if as "$bin rm r1" >"$home/out" 2>&1 && [ ! -e "$home/u/desks/r1" ] &&
    [ -z "$(alive)" ]; then
	pass "rm as $user: its directory and processes gone"
else
	cat "$home/out"; fail "rm as $user (left: $(alive | head -n3))"
fi

echo "rootless e2e: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
