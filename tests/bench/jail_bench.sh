#!/bin/sh
# Jail bench: what confining QEMU costs (its seccomp sandbox, no
# capabilities, its cgroup: docs/desktops.md, "Security model"), against
# the same QEMU unconfined (BUREAU_JAIL=off), in one run, alternating:
# a start from the saved state to ready, a fork to ready, and a
# screenshot through the host agent (medians of 5, 5 and 20 each way),
# on a 1536M clone of the minimal image (TCG unless BUREAU_ACCEL says).
#
#   tests/bench/jail_bench.sh BUILDDIR
set -u

build=$(cd "${1:?usage: jail_bench.sh BUILDDIR}" && pwd)
bureau=$build/bureau
images=${BUREAU_IMAGES:-/var/cache/bureau/images}
export BUREAU_PORTS=${BUREAU_PORTS:-7600-7699}
accel=${BUREAU_ACCEL:-tcg}

command -v qemu-system-x86_64 >/dev/null || { echo "jail bench: SKIP (no qemu)"; exit 0; }
[ -e "$images/minimal/image.json" ] || { echo "jail bench: SKIP (no minimal image in $images)"; exit 0; }
home=$(mktemp -d /var/tmp/bureau-jailbench.XXXXXX)
export BUREAU_HOME=$home
cleanup() {
	for p in "$home"/*/qemu.pid; do
		[ -s "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	done
	rm -rf "$home"
}
trap cleanup EXIT INT TERM
ms() { date +%s%3N; }
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

"$bureau" create j --image "$images/minimal" --memory 1536M >/dev/null || exit 1
"$bureau" start j --accel "$accel" >/dev/null || exit 1
"$bureau" stop j >/dev/null || exit 1
: >"$home/start.on"
: >"$home/start.off"
: >"$home/fork.on"
: >"$home/fork.off"
: >"$home/shot.on"
: >"$home/shot.off"
for i in 1 2 3 4 5; do
	for mode in on off; do
		t0=$(ms)
		BUREAU_JAIL=$mode "$bureau" start j --accel "$accel" >"$home/out" 2>&1 ||
			{ cat "$home/out"; exit 1; }
		echo $(($(ms) - t0)) >>"$home/start.$mode"
		q=$(cat "$home/j/qemu.pid")
		sc=$(awk '/^Seccomp:/ { print $2 }' /proc/$q/status)
		if { [ $mode = on ] && [ "$sc" != 2 ]; } || { [ $mode = off ] && [ "$sc" != 0 ]; }; then
			echo "jail bench: BUREAU_JAIL=$mode started a QEMU with Seccomp $sc"; exit 1
		fi
		for s in 1 2 3 4; do
			t0=$(ms)
			"$bureau" screenshot j -o "$home/shot.png" >/dev/null 2>&1 || exit 1
			echo $(($(ms) - t0)) >>"$home/shot.$mode"
		done
		# (the fork's QEMU is started by j's host agent, with its
		# environment)
		t0=$(ms)
		"$bureau" fork j f --ephemeral >"$home/out" 2>&1 || { cat "$home/out"; exit 1; }
		echo $(($(ms) - t0)) >>"$home/fork.$mode"
		"$bureau" stop f >/dev/null 2>&1
		"$bureau" stop j >/dev/null 2>&1
	done
done
for k in start fork shot; do
	on=$(median <"$home/$k.on") off=$(median <"$home/$k.off")
	case $k in
	start) what="start from the saved state -> ready" ;;
	fork) what="fork of the running desktop -> ready" ;;
	shot) what="screenshot through the host agent (bureau screenshot)" ;;
	esac
	echo "jail: $what: ${on} ms confined, ${off} ms not (BUREAU_JAIL=off), ratio $(ratio "$on" "$off")"
done
