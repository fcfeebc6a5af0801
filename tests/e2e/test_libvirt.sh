#!/bin/sh
# End-to-end: a desktop on a libvirt host (DESIGN.md, "Hosts: desktops on
# libvirt"), qemu:///system on this machine, under TCG.
#
#   tests/e2e/test_libvirt.sh BUILDDIR
#
# Starts libvirtd (and virtlogd) where none runs (no service manager here;
# stopped again at the end), never libvirt's `default` network. Checks:
# `host add` refuses a bad name, a URI that is none, an unreachable one
# and `local`; `host ls` lists local and the new host, reachable; `create
# --host` refuses an unknown host, naming how to add one, and one on
# another machine that cannot be reached, and puts the
# desktop there (desktop.json, `ls` HOST column, `status`); `start` boots
# it to a drawn screen (ImageMagick counts its colours) as libvirt's
# domain bureau-NAME (virsh domstate: running), its QEMU the process
# libvirt started (its pid file), as user libvirt-qemu, the guest reachable only through the host agent (its
# name and network as on local: 10.0.2.15, and the host's loopback out of
# its reach); pause and resume show in virsh; a live snapshot restored
# brings back both disks as they were; a fork (a domain of its own,
# the parent's process and files as they were, its own name, the parent
# running on, the layers shared); `stop` saves it (the domain gone from
# libvirt, QEMU gone from the process table, lv.state written with the
# devices alone: under 64 MB, the RAM in the RAM file, its pages on disk)
# and `ls` says saved; `start` restores it (a process started before runs
# on with the same pid, the clock is stepped, the old guest token is
# refused, the saved state is spent); a new desktop is a clone of the
# image's warm state for libvirt hosts (made on the size's first use),
# restored under its own name, drawn, a second clone of the same warm
# state with its home grown online (lsblk in the guest), saved by
# --idle-save while idle and woken, its processes kept, by a request;
# a second libvirtd (its own directories in a mount namespace of its
# own, its own socket's URI) is host lv2: `move` refuses a running
# desktop and its own host, carries the saved desktop to lv2, whose
# libvirtd then restores it (virsh: running there, not on lv; the same
# guest process), and refuses to carry a libvirt state to local; a stop
# --force ends the domain; `host rm` refuses while a desktop is on the
# host, `rm` removes the desktop, then `host rm` works. Prints the cold boot, save and restore
# times and their ratio (docs/desktops.md has the figures).
set -u

build=${1:?usage: test_libvirt.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "libvirt e2e" qemu-system-x86_64 qemu-img mke2fs python3 identify virsh libvirtd virtlogd
[ "$(id -u)" = 0 ] || skip "libvirt e2e: qemu:///system needs root"

home=$(mktemp -d /var/tmp/bureau-lv.XXXXXX)
export BUREAU_HOME=$home
# the desktop's name, and so its domain's, this run's own: another run on
# this machine (a second checkout's CI) may use the same libvirtd
a=lva$(($$ % 100000))
uri=qemu:///system uri2=
started_l2=""
cleanup() {
	for d in "$home"/*/; do
		[ -e "$d/desktop.json" ] && "$bureau" stop --force "$(basename "$d")" >/dev/null 2>&1
	done
	for u in $uri "${uri2:-}"; do
		[ -n "$u" ] && virsh -q -c "$u" destroy bureau-$a >/dev/null 2>&1
	done
	# the second libvirtd is this run's alone; the first only if this run
	# started it and no other run has a domain on it now
	for p in $started_l2; do kill "$p" 2>/dev/null; done
	e2e_libvirtd_end
	e2e_rm_home
}
trap cleanup EXIT INT TERM

# ---- libvirtd -------------------------------------------------------------------
e2e_libvirtd

e2e_image
img=$(cd "$images/minimal" && pwd -P)

# ---- hosts ----------------------------------------------------------------------
refuse "host add: a bad name" "invalid host name" "$bureau" host add "a/b" $uri
refuse "host add: not a URI" "invalid URI" "$bureau" host add h2 qemusystem
refuse "host add: unreachable" "cannot reach" "$bureau" host add h2 "qemu+unix:///system?socket=$home/no.sock"
refuse "host add: local" "always there" "$bureau" host add local $uri
"$bureau" host add lv $uri >"$home/out" 2>&1 && pass "host add lv $uri" || { cat "$home/out"; fail "host add"; }
# the same again is no error (a bureau on another machine adds its libvirt
# at each create there); the name again for another URI is
"$bureau" host add lv $uri >"$home/out" 2>&1 && grep -q "there already" "$home/out" &&
	pass "host add: the same again: $(cat "$home/out")" || { cat "$home/out"; fail "host add: the same again"; }
refuse "host add: the name again, another URI" "exists" "$bureau" host add lv "qemu+unix:///system"
"$bureau" host ls >"$home/hosts" 2>&1
if grep -q "^local .* yes " "$home/hosts" && grep -q "^lv  *$uri  *yes  *0 " "$home/hosts"; then
	pass "host ls: local and lv, reachable, no desktops"
else
	cat "$home/hosts"; fail "host ls"
fi

# ---- create and a cold boot -----------------------------------------------------
refuse "create --host: unknown" "host add NAME URI" "$bureau" create x --host nosuch --image "$img"
# a host on another machine that does not answer (written into
# hosts.json: host add would reach for it; test_remote.sh has one that
# does): refused, naming it
python3 - "$home/hosts.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
h["far"] = {"uri": "qemu+ssh://nobody@far.invalid/system", "added": 0}
json.dump(h, open(sys.argv[1], "w"))
PY
refuse "create --host: another machine, unreachable" "cannot be reached" "$bureau" create x --host far --image "$img"
"$bureau" host rm far >/dev/null 2>&1 || fail "host rm far"
# (a cold boot, whatever warm state the image has: its figure is measured)
BUREAU_WARM=0 "$bureau" create $a --host lv --image "$img" --memory 1536M --disk 4G --home 1G \
    --cpu-limit 1.5 --disk-bps 50M >"$home/create" 2>&1 ||
	{ cat "$home/create"; fail "create --host lv"; exit 1; }
grep -q "host lv" "$home/create" && grep -q '"host": "lv"' "$home/$a/desktop.json" &&
	pass "create --host lv: $(head -1 "$home/create")" || { cat "$home/create"; fail "create: host"; }

t0=$(now)
"$bureau" start $a --timeout 300 >"$home/start1" 2>&1 || { cat "$home/start1"; tail -20 "$home/$a/agent.log"; fail "start (boot)"; exit 1; }
tboot=$(since $t0)
grep -q "^started desktop '$a'" "$home/start1" && pass "start: booted and drawn ($tboot s): $(head -1 "$home/start1")" ||
	{ cat "$home/start1"; fail "start: not a boot"; }
st=$(virsh -q -c $uri domstate bureau-$a 2>&1)
[ "$st" = running ] && pass "virsh: domain bureau-$a running" || fail "virsh domstate: $st"
qpid=$(cat "$home/$a/qemu.pid")
quid=$(ps -o uid= -p "$qpid" | tr -d ' ')
if [ "$quid" = "$(id -u libvirt-qemu)" ] && [ "$(cat /run/libvirt/qemu/bureau-$a.pid 2>/dev/null)" = "$qpid" ]; then
	pass "QEMU (pid $qpid) runs as libvirt-qemu, the process libvirt started"
else
	fail "QEMU's uid $quid, libvirt's pid $(cat /run/libvirt/qemu/bureau-$a.pid 2>/dev/null)"
fi
# its limits, as libvirt holds them and QEMU reports them (blkdeviotune
# asks QEMU's query-block)
q=$(virsh -q -c $uri schedinfo bureau-$a 2>&1 | awk '$1 == "global_quota" { print $3 }')
io=$(virsh -q -c $uri blkdeviotune bureau-$a vda 2>&1 | awk '$1 == "total_bytes_sec:" { print $2 }')
[ "$q" = 150000 ] && [ "$io" = 52428800 ] &&
	pass "--cpu-limit 1.5 --disk-bps 50M: libvirt's global_quota $q, QEMU's vda throttled at $io bytes/s" ||
	fail "limits on libvirt: global_quota '$q', vda total_bytes_sec '$io'"
"$bureau" ls >"$home/ls" 2>&1
awk -v n="$a" '$1 == n { print $2, $3 }' "$home/ls" | grep -qx "running lv" && pass "ls: $a running on host lv" || { cat "$home/ls"; fail "ls HOST"; }
"$bureau" status $a | grep -qx "host: lv" && pass "status: host lv" || fail "status host"

# the guest as on local: its name, its address, the screen, and the host's
# loopback out of reach (a listener here on 127.0.0.1)
port=$((${BUREAU_PORTS%-*} + 27)) # the window's last ports: no desktop's
python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(120)' "$port" &
lpid=$!
out=$(gsh $a "hostname; ip -4 -o addr show eth0 | awk '{print \$4}'; timeout 5 bash -c 'echo > /dev/tcp/10.0.2.2/$port' 2>/dev/null && echo reached || echo unreached")
kill $lpid 2>/dev/null
[ "$(echo "$out" | tr '\n' ' ')" = "$a 10.0.2.15/24 unreached " ] &&
	pass "guest: named $a, 10.0.2.15/24, the host's loopback out of reach" || fail "guest network: $out"
# drawn, read back by ImageMagick: more than a few colours (a black or
# blank screen has one or two)
"$bureau" screenshot $a -o "$home/shot.png" >/dev/null 2>&1
colours=$(identify -format %k "$home/shot.png" 2>/dev/null || echo 0)
[ "${colours:-0}" -gt 8 ] && pass "screenshot: a drawn desktop ($colours colours)" || fail "screenshot: $colours colours"

"$bureau" pause $a >/dev/null && [ "$(virsh -q -c $uri domstate bureau-$a)" = paused ] &&
	"$bureau" resume $a >/dev/null && [ "$(virsh -q -c $uri domstate bureau-$a)" = running ] &&
	pass "pause, resume: as virsh sees them" || fail "pause/resume"
# a live snapshot (QEMU's, through bureau's monitor: memory and both
# disks), a file changed after it, the snapshot restored: the file as it
# was, the guest's process from before it running, the domain running
gsh $a 'echo one > ~/snap.txt; echo sys-one > /var/tmp/snap.txt; sync' >/dev/null
"$bureau" snapshot $a t1 >"$home/snap" 2>&1 && grep -q "live" "$home/snap" && "$bureau" snapshot $a | grep -q t1 &&
	pass "snapshot: $(cat "$home/snap")" || { cat "$home/snap"; fail "snapshot $a t1"; }
gsh $a 'echo two > ~/snap.txt; echo sys-two > /var/tmp/snap.txt; sync' >/dev/null
"$bureau" restore $a t1 >"$home/snap" 2>&1 || { cat "$home/snap"; fail "restore $a t1"; }
out=$(gsh $a 'cat ~/snap.txt /var/tmp/snap.txt')
# (and no warning: the guest's clock step after it reached the guest)
[ "$(echo "$out" | tr '\n' ' ')" = "one sys-one " ] && [ "$(virsh -q -c $uri domstate bureau-$a)" = running ] &&
	! grep -q warning "$home/snap" &&
	pass "restore: $(cat "$home/snap"), the home and system disks as they were" ||
	fail "snapshot restored: '$(echo "$out" | tr '\n' ' ')', domain $(virsh -q -c $uri domstate bureau-$a 2>&1), restore said: $(cat "$home/snap")"
# a fork on a libvirt host, as on local: the parent stands still while
# its disks get new top layers and its devices and RAM are copied, and
# runs on; the fork, a domain of its own, has the parent's process and
# files as they were, its own name, and not the parent's later writes
fpid=$(gsh $a 'echo before > ~/fork.txt; sync; setsid sleep 100001 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
f=${a}f
t0=$(now)
"$bureau" fork $a $f >"$home/fork" 2>&1 || { cat "$home/fork"; tail -5 "$home/$f/agent.log" 2>/dev/null; fail "fork $a $f"; }
tfork=$(since $t0)
gsh $a 'echo after > ~/fork.txt; sync' >/dev/null
got=$(gsh $f "hostname; ps -o comm= -p $fpid; cat ~/fork.txt")
[ "$(echo "$got" | tr '\n' ' ')" = "$f sleep before " ] && [ "$(gsh $a 'cat ~/fork.txt')" = after ] &&
	[ "$(virsh -q -c $uri domstate bureau-$f 2>&1)" = running ] && [ "$(virsh -q -c $uri domstate bureau-$a 2>&1)" = running ] &&
	pass "fork ($tfork s): $f runs as a domain of its own with $a's process and its file as it was; $a runs on: $(grep -h forked "$home/fork" | cut -c1-160)" ||
	{ cat "$home/fork"; fail "fork: in $f '$got'"; }
ls "$home/$a"/system.L*.qcow2 >/dev/null 2>&1 && ls "$home/$f"/system.L*.qcow2 >/dev/null 2>&1 &&
	pass "fork: the disks' layers shared ($(ls "$home/$a" | grep -c '\.L'))" || fail "fork: no layers"
"$bureau" stop --force $f >/dev/null 2>&1; "$bureau" rm $f >/dev/null 2>&1

# ---- stop saves, start restores -------------------------------------------------
sleeper=$(gsh $a 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!')
oldtok=$(cat "$home/$a/guest-token")
gurl=$(json url < "$home/$a/guest.json")
t0=$(now)
"$bureau" stop $a >"$home/stop" 2>&1 || { cat "$home/stop"; fail "stop"; }
tsave=$(since $t0)
grep -q "saved in" "$home/stop" && [ -s "$home/$a/lv.state" ] && pass "stop: saved ($tsave s): $(cat "$home/stop")" || { cat "$home/stop"; fail "stop: not saved"; }
# the devices alone in the state; the RAM in its file, on disk (du: blocks
# allocated, not the sparse length)
smb=$(( $(stat -c %s "$home/$a/lv.state" 2>/dev/null || echo 0) >> 20 ))
rmb=$(du -m "$home/$a/ram" 2>/dev/null | cut -f1)
[ -s "$home/$a/lv.state" ] && [ $smb -lt 64 ] && [ "${rmb:-0}" -gt 64 ] &&
	pass "stop: the state holds the devices ($smb MB), the RAM file the memory ($rmb MB on disk)" ||
	fail "stop: state $smb MB, RAM file ${rmb:-none} MB"
if virsh -q -c $uri list --all --name | grep -qx bureau-$a; then
	fail "the domain is still defined after stop"
else
	pass "stop: no domain bureau-$a left in libvirt"
fi
kill -0 "$qpid" 2>/dev/null && fail "QEMU $qpid still runs" || pass "stop: QEMU $qpid gone from the process table"
"$bureau" ls >"$home/ls" 2>&1
awk -v n="$a" '$1 == n { print $2 }' "$home/ls" | grep -qx saved && pass "ls: saved" || { cat "$home/ls"; fail "ls: saved"; }

t0=$(now)
"$bureau" start $a --timeout 300 >"$home/start2" 2>&1 || { cat "$home/start2"; tail -20 "$home/$a/agent.log"; fail "start (restore)"; }
trestore=$(since $t0)
grep -q "^restored desktop '$a'" "$home/start2" && pass "start: restored ($trestore s): $(head -1 "$home/start2")" || { cat "$home/start2"; tail -5 "$home/$a/agent.log"; fail "start: not restored"; }
again=$(gsh $a "ps -o pid= -p $sleeper | tr -d ' '; date +%s")
set -- $again
if [ "${1:-}" = "$sleeper" ]; then pass "restore: the guest's process $sleeper runs on"; else fail "restore: process $sleeper gone ($again)"; fi
skew=$(( ${2:-0} - $(date +%s) ))
[ ${skew#-} -le 3 ] && pass "restore: the guest's clock stepped (${skew} s off)" || fail "restore: guest clock ${skew} s off"
[ "$(ping "$gurl" "$oldtok")" = unauthorized ] && pass "restore: the guest refuses its old token" || fail "the old guest token still works"
[ ! -e "$home/$a/lv.state" ] && [ ! -e "$home/$a/lv.state.json" ] && pass "restore: the saved state is spent (removed once the guest runs)" || fail "lv.state left after the restore"
grep "restored desktop" "$home/$a/agent.log" | tail -1 | sed 's/^/# /'

echo "# libvirt, TCG, 1536M: cold boot $tboot s, stop (save) $tsave s, start from saved $trestore s; ratio $(echo "$tboot $trestore" | awk '{ printf "%.1f", $1 / $2 }')x (load: $(cut -d' ' -f1-3 /proc/loadavg))"

# ---- warm clones ----------------------------------------------------------------
# A new desktop on a libvirt host is a clone of the image's warm state for
# libvirt hosts (IMAGE/warm-libvirt1-SIZE: made by create on its size's
# first use, one cold boot; kept in the image for later runs). Its first
# start restores that state under its own name and token, on a copy of
# the warm RAM. A second clone asks a larger home than the warm state's:
# from the same warm state, its home grown online.
c=${a}c c2=${a}d
t0=$(now)
"$bureau" create $c --host lv --image "$img" --memory 1536M --disk 4G --home 1G >"$home/createc" 2>&1 ||
	{ cat "$home/createc"; fail "create $c"; }
tcreate=$(since $t0)
grep -q "cloned from the image's warm state" "$home/createc" &&
	pass "create: a clone of the warm state for libvirt hosts ($tcreate s): $(grep -E 'made in|cloned' "$home/createc" | tr '\n' ' ')" ||
	{ cat "$home/createc"; fail "create: not a clone"; }
[ -e "$img/warm-libvirt1-1536M-2-4294967296-1073741824/lv.state" ] && pass "the warm state: $img/warm-libvirt1-1536M-2-4294967296-1073741824" || fail "no warm-libvirt state in $img"
t0=$(now)
"$bureau" start $c --timeout 300 >"$home/startc" 2>&1 || { cat "$home/startc"; tail -20 "$home/$c/agent.log"; fail "start $c"; }
tclone=$(since $t0)
grep -q "^restored desktop '$c'" "$home/startc" && pass "start: the clone restored ($tclone s): $(head -1 "$home/startc")" ||
	{ cat "$home/startc"; tail -5 "$home/$c/agent.log"; fail "start: the clone not restored"; }
[ "$(gsh $c hostname)" = "$c" ] && pass "clone: named $c" || fail "clone: hostname $(gsh $c hostname)"
"$bureau" screenshot $c -o "$home/shotc.png" >/dev/null 2>&1
colours=$(identify -format %k "$home/shotc.png" 2>/dev/null || echo 0)
[ "${colours:-0}" -gt 8 ] && pass "clone: a drawn desktop ($colours colours)" || fail "clone screenshot: $colours colours"
[ "$(virsh -q -c $uri domstate bureau-$c 2>&1)" = running ] && pass "virsh: bureau-$c running" || fail "virsh: bureau-$c"
"$bureau" create $c2 --host lv --image "$img" --memory 1536M --disk 4G --home 1536M --idle-save 8s >"$home/created" 2>&1 &&
	grep -q "cloned from" "$home/created" && ! grep -q "made in" "$home/created" &&
	"$bureau" start $c2 --timeout 300 >"$home/startd" 2>&1 && grep -q "^restored desktop '$c2'" "$home/startd" &&
	pass "a second clone of the same warm state: $(head -1 "$home/startd")" || { cat "$home/created" "$home/startd"; fail "second clone"; }
out=$(gsh $c2 "hostname; lsblk -bno SIZE /dev/vdb | head -1")
[ "$(echo "$out" | tr '\n' ' ')" = "$c2 1610612736 " ] && pass "clone: named $c2, its home grown online to 1536M" || fail "second clone: $out"
# --idle-save on a libvirt host: untouched for 8 s, the clone is saved
# (its domain gone from libvirt, its agent serving on); the next request
# restores it (its process from before runs on) and says "woke"
pid=$(gsh $c2 'setsid sleep 100007 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
apid=$(cat "$home/$c2/agent.pid" 2>/dev/null)
t0=$(now)
n=0
while [ $n -lt 240 ] && ! "$bureau" status $c2 2>/dev/null | grep -qx 'state: saved (idle)'; do sleep 0.25; n=$((n + 1)); done
t_idle=$(since "$t0")
if "$bureau" status $c2 2>/dev/null | grep -qx 'state: saved (idle)' && kill -0 "$apid" 2>/dev/null &&
    ! virsh -q -c $uri list --all --name | grep -qx bureau-$c2 && [ -s "$home/$c2/lv.state" ]; then
	pass "idle save: $c2 saved $t_idle s after its last request (no domain in libvirt, lv.state written, its agent $apid serves on)"
else
	fail "idle save of $c2: $("$bureau" status $c2 2>&1 | head -3 | tr '\n' ' ')"
fi
t0=$(now)
r=$(call $c2 "{\"tool\":\"bash\",\"command\":\"ps -o comm= -p $pid\"}" 120)
t_wake=$(since "$t0")
[ "$(echo "$r" | json woke)" = true ] && [ "$(echo "$r" | json output | tr -d '\n')" = sleep ] &&
	[ "$(virsh -q -c $uri domstate bureau-$c2 2>&1)" = running ] &&
	pass "idle wake: the next request restored it and was answered in $t_wake s (\"woke\": true), pid $pid still 'sleep'" ||
	fail "idle wake ($t_wake s): $(echo "$r" | cut -c1-300)"
for x in $c $c2; do "$bureau" stop --force $x >/dev/null 2>&1; "$bureau" rm $x >/dev/null 2>&1; done
echo "# libvirt: new desktop from the warm state $tclone s (create $tcreate s)"

# ---- a second libvirt host, and move ----------------------------------------------
# Another libvirtd on this machine: its own runtime, state, cache, log and
# config directories bound over libvirt's in a mount namespace of its own
# (its QEMUs inherit it and see the desktops' directories as they are),
# reached by its own socket's URI.
l2=$home/.lv2
mkdir -p "$l2/run" "$l2/lib/qemu" "$l2/cache" "$l2/log" "$l2/etc"
chown libvirt-qemu:libvirt-qemu "$l2/lib/qemu" 2>/dev/null
cp -a /etc/libvirt/. "$l2/etc/"
cat >"$l2/start.sh" <<EOF
mount --make-rprivate / &&
mount --bind $l2/run /run/libvirt && mount --bind $l2/lib /var/lib/libvirt &&
mount --bind $l2/cache /var/cache/libvirt && mount --bind $l2/log /var/log/libvirt &&
mount --bind $l2/etc /etc/libvirt && $nokvm
virtlogd -d -p $l2/virtlogd.pid && exec libvirtd -d -p $l2/libvirtd.pid
EOF
uri2="qemu+unix:///system?socket=$l2/run/libvirt-sock"
if unshare -m sh "$l2/start.sh" 2>"$l2/err"; then
	for _ in $(seq 100); do virsh -q -c "$uri2" version >/dev/null 2>&1 && break; sleep 0.1; done
	started_l2="$(cat "$l2/libvirtd.pid" 2>/dev/null) $(cat "$l2/virtlogd.pid" 2>/dev/null)"
fi
virsh -q -c "$uri2" version >/dev/null 2>&1 || { cat "$l2/err"; fail "a second libvirtd on $uri2"; exit 1; }
"$bureau" host add lv2 "$uri2" >/dev/null 2>&1 && pass "host add lv2: a second libvirtd ($uri2)" || fail "host add lv2"

refuse "move: while it runs" "stop $a" "$bureau" move $a --to lv2
refuse "move: to the host it is on" "already" "$bureau" move $a --to lv
"$bureau" stop $a >/dev/null 2>&1
"$bureau" move $a --to lv2 >"$home/move" 2>&1 && grep -q '"host": "lv2"' "$home/$a/desktop.json" &&
	pass "move: $(cat "$home/move")" || { cat "$home/move"; fail "move --to lv2"; }
t0=$(now)
"$bureau" start $a --timeout 300 >"$home/start3" 2>&1 || { cat "$home/start3"; tail -20 "$home/$a/agent.log"; fail "start on lv2"; }
tmove=$(since $t0)
grep -q "^restored desktop '$a'" "$home/start3" && pass "start on lv2: restored ($tmove s)" || { cat "$home/start3"; fail "start on lv2: not restored"; }
[ "$(virsh -q -c "$uri2" domstate bureau-$a 2>&1)" = running ] &&
	! virsh -q -c $uri list --all --name | grep -qx bureau-$a &&
	pass "virsh: bureau-$a runs on lv2's libvirtd, not on lv's" || fail "where bureau-$a runs"
again=$(gsh $a "ps -o pid= -p $sleeper | tr -d ' '")
[ "$again" = "$sleeper" ] && pass "move: the guest's process $sleeper runs on, on lv2" || fail "move: process $sleeper gone ($again)"
"$bureau" ls >"$home/ls" 2>&1
awk -v n="$a" '$1 == n { print $2, $3 }' "$home/ls" | grep -qx "running lv2" && pass "ls: $a running on host lv2" || { cat "$home/ls"; fail "ls after move"; }
"$bureau" stop $a >/dev/null 2>&1
refuse "move: a libvirt state to local" "cannot restore" "$bureau" move $a --to local
"$bureau" start $a --timeout 300 >/dev/null 2>&1

# ---- the end --------------------------------------------------------------------
"$bureau" stop --force $a >/dev/null 2>&1
[ -z "$(virsh -q -c "$uri2" list --all --name | grep -x bureau-$a)" ] && pass "stop --force: the domain ended" || fail "stop --force"
refuse "host rm: a desktop on it" "$a" "$bureau" host rm lv2
"$bureau" rm $a >/dev/null 2>&1 && [ ! -e "$home/$a" ] && pass "rm: the desktop is gone" || fail "rm $a"
"$bureau" host rm lv2 >/dev/null 2>&1 && "$bureau" host rm lv >/dev/null 2>&1 &&
	! grep -q '"lv' "$home/hosts.json" && pass "host rm lv2, lv" || fail "host rm"

echo "# $passes passed, $fails failed"
[ $fails = 0 ]
