#!/bin/sh
# End-to-end: desktops of two homes (two users' stores, one port range)
# started and forked side by side never fail on a port (DESIGN.md,
# "Least privilege"; issue 38, item 5).
#
#   tests/e2e/test_ports.sh BUILDDIR
#
# Home A's desktop a1 runs; home B, which cannot see A's desktop.json,
# creates b1 in the same range: it takes ports no program listens on. A
# saves a1 (its ports free now), B forks b1 (the fork may take a1's),
# A starts a1 again: it restores, taking other ports when its own are
# held, and says so. Every running desktop answers on its own endpoint.
set -u

build=${1:?usage: test_ports.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "ports e2e" qemu-system-x86_64 qemu-img mke2fs python3

home=$(mktemp -d /var/tmp/bureau-ports.XXXXXX)
mkdir -p "$home/A" "$home/B"
cleanup() {
	for h in A B; do
		for d in "$home/$h"/*/; do
			[ -e "$d/desktop.json" ] || continue
			BUREAU_HOME=$home/$h "$bureau" stop --force "$(basename "$d")" >/dev/null 2>&1
			[ -s "$d/qemu.pid" ] && kill -9 "$(cat "$d/qemu.pid")" 2>/dev/null
		done
	done
	rm -rf "$home"
}
trap cleanup EXIT INT TERM
e2e_image
A() { BUREAU_HOME=$home/A "$bureau" "$@"; }
B() { BUREAU_HOME=$home/B "$bureau" "$@"; }
port_of() { sed -n 's|.*:\([0-9]*\)$|\1|p' "$home/$1/endpoint"; }
answers() { # HOME NAME: the desktop answers a bash call
	BUREAU_HOME=$home/$1 "$bureau" call --timeout 60 "$2" '{"tool":"bash","command":"echo up"}' 2>/dev/null | grep -q '"up\\n"'
}

if A create a1 --image "$img" --memory 1536M >"$home/out" 2>&1 && A start a1 --accel tcg >>"$home/out" 2>&1 &&
    B create b1 --image "$img" --memory 1536M >>"$home/out" 2>&1 && B start b1 --accel tcg >>"$home/out" 2>&1; then
	pa=$(port_of A/a1) pb=$(port_of B/b1)
	[ "$pa" != "$pb" ] && answers A a1 && answers B b1 &&
		pass "two homes, one range: a1 on $pa, b1 on $pb, both answer" ||
		fail "a1 on $pa, b1 on $pb"
else
	cat "$home/out"; fail "create and start a1 and b1"; exit 1
fi
p=$(BUREAU_HOME=$home/A gsh a1 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)

A stop a1 >"$home/out" 2>&1 && grep -q saved "$home/out" || { cat "$home/out"; fail "stop a1"; }
if B fork b1 k1 --ephemeral >"$home/out" 2>&1; then
	pk=$(port_of B/k1)
	answers B k1 && pass "b1 forked into k1 on port $pk (a1's is $pa, saved)" || fail "k1 on $pk does not answer"
else
	cat "$home/out"; fail "fork b1 k1"
fi
if A start a1 --accel tcg >"$home/out" 2>&1 && grep -q '^restored' "$home/out"; then
	pa2=$(port_of A/a1)
	got=$(BUREAU_HOME=$home/A gsh a1 "ps -o comm= -p $p")
	note=$(grep 'in use' "$home/out" | head -n1)
	if [ "$got" = sleep ] && answers A a1 && { [ "$pa2" = "$pa" ] || [ -n "$note" ]; }; then
		pass "a1 restored on $pa2 with its process${note:+ ($note)}"
	else
		fail "a1 after the fork: port $pa2 (was $pa), process '$got', note '$note'"
	fi
else
	cat "$home/out"; fail "start a1 again"
fi
ports=$(for d in A/a1 B/b1 B/k1; do port_of $d; done | sort -u | wc -l)
[ "$ports" = 3 ] && pass "a1, b1 and k1 on three endpoints" || fail "endpoints: $(for d in A/a1 B/b1 B/k1; do port_of $d; done | tr '\n' ' ')"

echo "ports e2e: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
