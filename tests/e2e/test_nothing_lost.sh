#!/bin/sh
# End-to-end: no sequence of ordinary lifecycle commands loses work
# (DESIGN.md, "Nothing lost, one owner per desktop"; issue 39's rounds).
#
#   tests/e2e/test_nothing_lost.sh BUILDDIR
#
# With the minimal image under TCG, one 1536M desktop d with a background
# process, three rounds of: write and sync 5 MB to the home disk and 5 MB
# to the system disk (/var/tmp); fork d into two ephemeral twins, one
# after the other; write and sync 5 MB more in d; stop the twins
# (discarded); stop d (saved); take a snapshot of the saved d; start d. After each step that touches the VM:
#   - d answers, and the files written so far read back from its disks
#     (O_DIRECT, past the guest's page cache) with their checksums;
#   - d's QEMU holds open exactly the qcow2 files of each disk's backing
#     chain as qemu-img reads it from the files (by inode, from
#     /proc/PID/fd): never another file in place of a layer;
#   - every start restores (the process is alive, same pid), never boots.
# Round 1 runs on a clone of the warm state (its RAM mapped privately, a
# fork saved without a migration). Then a saved state whose disk was
# changed by hand afterwards is not restored: start boots and says why,
# and `status` says so too; after that boot d runs on a RAM file of its
# own, so the forks of rounds 2 and 3 go through a migration, which
# deactivates and reactivates its disks. Then a fork of a paused d leaves
# it paused with its disks usable (resume, then a stop that saves).
# Finally d is powered off (forced) and boots: every file is there with
# its checksum, the guest's kernel logged no ext4 error on its console,
# and `qemu-img
# check` finds no error in any of d's disk files. No QEMU is left.
set -u

build=${1:?usage: test_nothing_lost.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "nothing lost e2e" qemu-system-x86_64 qemu-img qemu-io mke2fs python3

home=$(mktemp -d /var/tmp/bureau-lost.XXXXXX)
export BUREAU_HOME=$home
cleanup() { e2e_rm_home; }
trap cleanup EXIT INT TERM
e2e_image

sums=$home/sums
: >"$sums"

# wr TAG: 5 MB of random bytes to ~/TAG.bin (home disk) and
# /var/tmp/TAG.bin (system disk) in d, synced; their checksums noted.
wr() {
	out=$(gsh d "for f in ~/$1.bin /var/tmp/$1.bin; do head -c 5242880 /dev/urandom > \$f || exit 1; done; sync; sha256sum ~/$1.bin /var/tmp/$1.bin")
	n=$(echo "$out" | grep -c '\.bin$')
	if [ "$n" = 2 ]; then
		echo "$out" >>"$sums"
	else
		fail "writing $1 in d: '$out'"
	fi
}

# verify WHAT: every noted file read back from d's disks (O_DIRECT, not
# from the guest's page cache) with its checksum.
verify() {
	want=$(sort -k2 "$sums")
	files=$(awk '{ printf "%s ", $2 }' "$sums")
	got=$(gsh d "for f in $files; do echo \"\$(dd if=\$f iflag=direct bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1)  \$f\"; done" | grep . | sort -k2)
	if [ -n "$want" ] && [ "$got" = "$want" ]; then
		pass "$1: all $(wc -l <"$sums") files read back from the disks with their checksums"
	else
		echo "$got" >"$home/got"
		fail "$1: files differ: $(echo "$want" | diff - "$home/got" | head -6 | tr '\n' ' ')"
	fi
}

# chain: the inodes of a disk's backing chain, as qemu-img reads it.
chain() {
	qemu-img info -U --backing-chain --output=json "$1" | python3 -c '
import json, os, sys
for i in json.load(sys.stdin):
    print(os.stat(i["filename"]).st_ino)'
}

# fds WHAT: d's QEMU holds open exactly the qcow2 files of its disks'
# chains (by inode).
fds() {
	qp=$(cat "$home/d/qemu.pid")
	want=$( (chain "$home/d/system.qcow2"; chain "$home/d/home.qcow2") | sort -u | tr '\n' ' ')
	have=$(for f in /proc/$qp/fd/*; do
		case $(readlink "$f") in *.qcow2 | *.qcow2\ \(deleted\)) stat -L -c %i "$f" ;; esac
	done | sort -u | tr '\n' ' ')
	if [ -n "$want" ] && [ "$want" = "$have" ]; then
		pass "$1: d's QEMU has open exactly its disks' chains (inodes $want)"
	else
		fail "$1: d's QEMU has open inodes '$have', the chains are '$want': $(ls -li "$home/d" | grep qcow2 | awk '{ print $1, $NF }' | tr '\n' ' ')"
	fi
}

answers() {
	ans=$(call d '{"tool":"system","action":"ping"}' 30 | json output)
	[ "$ans" = pong ] && pass "$1: d answers" || fail "$1: d does not answer ('$ans')"
}

# startd WHAT: start d; it must restore with the process alive.
startd() {
	if "$bureau" start d --accel tcg >"$home/start.out" 2>&1 &&
	    grep -q '^restored' "$home/start.out" && ! grep -q 'booted it instead' "$home/start.out" &&
	    [ "$(gsh d "ps -o comm= -p $pid")" = sleep ]; then
		pass "$1: start restored d, process $pid alive ($(head -n1 "$home/start.out"))"
	else
		fail "$1: start d: $(cat "$home/start.out" | tr '\n' ' ')"
		"$bureau" start d --accel tcg >/dev/null 2>&1
	fi
}

proc() {
	pid=$(gsh d 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
	[ -n "$pid" ] || fail "starting a process in d"
}

round() {
	r=$1
	wr "r${r}a"
	# two forks of the running d: the second puts a layer over the
	# first's overlay, which QEMU was given by a descriptor
	for k in "k${r}a" "k${r}b"; do
		if "$bureau" fork d "$k" --ephemeral >"$home/fork.out" 2>&1; then
			pass "round $r: fork d $k --ephemeral ($(grep -h forked "$home/fork.out" | head -n1))"
		else
			fail "round $r: fork d $k: $(cat "$home/fork.out" | tr '\n' ' ')"
		fi
		answers "round $r, after the fork $k"
		fds "round $r, after the fork $k"
	done
	verify "round $r, after the forks"
	wr "r${r}b"
	for k in "k${r}a" "k${r}b"; do
		"$bureau" stop "$k" >"$home/stopk.out" 2>&1 && [ ! -e "$home/$k" ] ||
			fail "round $r: stop $k: $(cat "$home/stopk.out")"
	done
	verify "round $r, after the twins' stops"
	if "$bureau" stop d >"$home/stop.out" 2>&1 && grep -q saved "$home/stop.out"; then
		pass "round $r: stop d saved it ($(cat "$home/stop.out"))"
	else
		fail "round $r: stop d: $(cat "$home/stop.out" | tr '\n' ' ')"
	fi
	if "$bureau" snapshot d "s$r" >"$home/snap.out" 2>&1 &&
	    qemu-img snapshot -U -l "$home/d/system.qcow2" | grep -q "s$r"; then
		pass "round $r: a snapshot s$r of the saved d"
	else
		fail "round $r: snapshot d s$r: $(cat "$home/snap.out" | tr '\n' ' ')"
	fi
	startd "round $r"
	fds "round $r, after the start"
	verify "round $r, after the start"
}

# ---- d: a clone of the warm state, with a process ------------------------------
if "$bureau" create d --image "$img" --memory 1536M >"$home/create.out" 2>&1 &&
    "$bureau" start d --accel tcg >"$home/start.out" 2>&1; then
	pass "create+start d ($(head -n1 "$home/start.out"))"
else
	cat "$home/create.out" "$home/start.out"; fail "create+start d"; exit 1
fi
proc
fds "d as it started"
round 1

# ---- a saved state whose disk changed afterwards is not restored ---------------
# (16 MB before the end of the home disk: blocks its file system never
# used; the state's own record is untouched). The boot it takes puts d on
# a RAM file of its own for rounds 2 and 3.
"$bureau" stop d >"$home/stop.out" 2>&1 && grep -q saved "$home/stop.out" ||
	fail "stop d before its disk is changed: $(cat "$home/stop.out")"
hsize=$(qemu-img info --output=json "$home/d/home.qcow2" | json virtual-size)
qemu-io -f qcow2 -c "write -P 0x5a $((hsize - 16777216)) 4096" "$home/d/home.qcow2" >/dev/null 2>&1 ||
	fail "qemu-io write to d's home disk"
if "$bureau" start d --accel tcg >"$home/start.out" 2>&1 &&
    grep -q "cannot restore the saved state.*home.qcow2.*booted it instead" "$home/start.out" &&
    grep -q '^started' "$home/start.out"; then
	pass "a saved state whose home disk changed afterwards: start boots and says why ($(grep -h 'cannot restore' "$home/start.out"))"
else
	fail "start after the home disk changed: $(cat "$home/start.out" | tr '\n' ' ')"
fi
"$bureau" status d >"$home/status.out" 2>&1
grep -q "booted instead of restoring" "$home/status.out" &&
	pass "status says the last start booted instead of restoring ($(grep -h 'booted instead' "$home/status.out"))" ||
	fail "status after a boot instead of a restore: $(cat "$home/status.out" | tr '\n' ' ')"
verify "after the boot instead of a restore"
proc

# ---- rounds 2 and 3 on a RAM file of d's own (that boot) ----------------------
boot() {
	"$bureau" stop --force d >/dev/null 2>&1
	if "$bureau" start d --accel tcg >"$home/boot.out" 2>&1 && grep -q '^started' "$home/boot.out"; then
		pass "$1: d powered off and booted ($(head -n1 "$home/boot.out"))"
	else
		fail "$1: boot d: $(cat "$home/boot.out" | tr '\n' ' ')"
	fi
	proc
}
round 2
round 3

# ---- a fork of a paused d -------------------------------------------------------
"$bureau" pause d >/dev/null 2>&1 || fail "pause d"
if "$bureau" fork d kp --ephemeral >"$home/fork.out" 2>&1; then
	pass "a fork of the paused d ($(grep -h forked "$home/fork.out" | head -n1))"
else
	fail "fork of the paused d: $(cat "$home/fork.out" | tr '\n' ' ')"
fi
st=$("$bureau" status d | awk -F': ' '$1 == "state" { print $2 }')
[ "$st" = paused ] && pass "d is still paused after its fork" || fail "d after a fork while paused: '$st'"
"$bureau" stop kp >/dev/null 2>&1
"$bureau" resume d >"$home/resume.out" 2>&1 || fail "resume d: $(cat "$home/resume.out")"
answers "after the paused fork and a resume"
fds "after the paused fork"
if "$bureau" stop d >"$home/stop.out" 2>&1 && grep -q saved "$home/stop.out"; then
	pass "d saves after a fork while paused"
else
	fail "stop d after a paused fork: $(cat "$home/stop.out" | tr '\n' ' ')"
fi

# ---- power off, boot: everything is there, the file systems clean -------------
boot "the end"
verify "after the final power-off and boot"
# (the guest's kernel logs to its serial console: console.log, and the
# boot before in console.log.1)
errs=$(cat "$home"/d/console.log* | grep -aE 'EXT4-fs (error|warning)|EXT4-fs \([a-z0-9]+\): .*corrupt|I/O error|cannot mount' | head -3)
[ -z "$errs" ] && [ -s "$home/d/console.log" ] &&
	pass "the guest's kernel logged no file system error on its console" ||
	fail "the guest's console: $errs"
"$bureau" stop --shutdown d >/dev/null 2>&1 || "$bureau" stop --force d >/dev/null 2>&1
bad=
for f in "$home"/d/*.qcow2; do
	qemu-img check -q "$f" >/dev/null 2>&1 || bad="$bad $(basename "$f")"
done
[ -z "$bad" ] && pass "qemu-img check finds no error in d's disk files ($(cd "$home/d" && ls *.qcow2 | tr '\n' ' '))" ||
	fail "qemu-img check:$bad"
left=$(pgrep -f "qemu-system.*$home" | tr '\n' ' ')
[ -z "$left" ] && pass "no QEMU of this test is left" || fail "QEMUs left: $left"

echo "nothing lost e2e: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
