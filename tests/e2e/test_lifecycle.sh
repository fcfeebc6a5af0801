#!/bin/sh
# End-to-end: a desktop's lifecycle like a laptop's lid.
#
#   tests/e2e/test_lifecycle.sh BUILDDIR
#
# With the minimal image (built as tests/e2e/test_desktop.sh does, cached
# under $BUREAU_IMAGES), under TCG: the first screenshot after a cold
# start shows the drawn desktop; `stop` saves and `start` restores: a
# process started in the guest before is alive after with the same pid, a
# window opened before is listed after (same id, title and pid), a file in
# /dev/shm survives, `ls` shows saved; the guest's clock is within
# 1 s of the host's after a restore from a state saved 20 s earlier and
# after a resume from a 20 s pause; a damaged saved state falls back to a
# boot with a message, the data disk intact; `stop --shutdown` powers off
# (`ls`: stopped, the state gone) and the next start boots (the process
# and /dev/shm gone). Prints the measured save, restore and ready times
# and the disk a saved state costs. Three cold boots in all.
# Prints PASS/FAIL/SKIP lines; exits non-zero on any failure.
set -u

build=${1:?usage: test_lifecycle.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
images=${BUREAU_IMAGES:-/var/cache/bureau/images}
# A window of 30 ports claimed against other test runs on the machine.
. "$(dirname "$0")/../lib/ports.sh"
. "$(dirname "$0")/../lib/deb.sh"
name=life
fails=0 passes=0

pass() { echo "PASS $*"; passes=$((passes + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
skip() { echo "SKIP $*"; exit 0; }
now() { date +%s.%N; }
since() { echo "$1 $(now)" | awk '{ printf "%.2f", $2 - $1 }'; }

for t in qemu-system-x86_64 qemu-img mke2fs convert python3; do
	command -v $t >/dev/null 2>&1 || skip "lifecycle e2e: '$t' not installed (make deps)"
done
[ -x "$bureau" ] || { fail "no $bureau (make)"; exit 1; }
if [ ! -e "$images/minimal/image.json" ]; then
	[ "$(id -u)" = 0 ] || skip "lifecycle e2e: building the image needs root and none is cached in $images"
	command -v mmdebstrap >/dev/null 2>&1 || skip "lifecycle e2e: 'mmdebstrap' not installed (make deps)"
fi

home=$(mktemp -d /var/tmp/bureau-life.XXXXXX)
export BUREAU_HOME=$home
# Cold boots, whatever sizes: no warm state made or cloned (create would
# make one for a size the image has none of).
export BUREAU_WARM=0
dir=$home/$name
cleanup() {
	for p in "$dir/qemu.pid" "$home/raw/qemu.pid"; do
		[ -s "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	done
	rm -rf "$home"
}
trap cleanup EXIT INT TERM

# ---- the image (as test_desktop.sh: cached when the package is the same) ----
e2e_deb
if ! "$bureau" image build --minimal --out "$images" --deb "$deb" >"$home/image.log" 2>&1; then
	tail -30 "$home/image.log"
	fail "image build --minimal"
	exit 1
fi

"$bureau" create $name --image "$images/minimal" --disk 6G --home 2G \
    --memory 1536M --cpus 2 >"$home/create.log" 2>&1 ||
	{ cat "$home/create.log"; fail "create"; exit 1; }

call() { "$bureau" call --timeout "${2:-120}" $name "$1"; }
json() {
	python3 -c 'import json,sys
r=json.load(sys.stdin); v=r
for k in sys.argv[1].split("."):
    v=v.get(k) if isinstance(v,dict) else None
print("" if v is None else (json.dumps(v) if isinstance(v,(dict,list,bool)) else v))' "$1"
}
# gsh CMD: its output, through the daemon's bash tool.
gsh() {
	req=$(python3 -c 'import json,sys; print(json.dumps({"tool":"bash","command":sys.argv[1],"timeout":120}))' "$1")
	call "$req" 150 | json output
}
state() { "$bureau" ls | awk -v n=$name '$1 == n { print $2 }'; }

# start LABEL: start, print its time; the output in $home/start.out.
start() {
	t0=$(now)
	if "$bureau" start $name --accel tcg --timeout 1200 >"$home/start.out" 2>&1; then
		took=$(since $t0)
		pass "start $1 ($took s: $(head -n1 "$home/start.out"))"
	else
		cat "$home/start.out"; fail "start $1"; exit 1
	fi
}

# shot_ok LABEL: a screenshot taken right now is the drawn desktop, not a
# single colour (grey levels vary; the minimal session is a blue root
# window and a terminal).
shot_ok() {
	if "$bureau" screenshot $name -o "$home/shot.png" >/dev/null 2>&1; then
		sd=$(convert "$home/shot.png" -colorspace gray -format '%[fx:standard_deviation]' info:)
		if python3 -c "import sys; sys.exit(0 if $sd > 0.03 else 1)"; then
			pass "first screenshot $1 shows the desktop (stddev $sd)"
		else
			fail "first screenshot $1 is blank (stddev $sd)"
		fi
	else
		fail "screenshot $1"
	fi
}

# clock_ok LABEL: the guest's clock, read through the daemon between two
# readings of the host's, lies within 1 s of them.
clock_ok() {
	h0=$(now)
	g=$(gsh 'date +%s.%N' | grep -v '^[[:space:]]*$' | tail -n1)
	h1=$(now)
	verdict=$(python3 -c '
import sys
try:
    h0, g, h1 = map(float, sys.argv[1:])
except ValueError:
    print("no no reading of the guest clock: " + " ".join(sys.argv[1:])); sys.exit()
off = 0 if h0 <= g <= h1 else (g - h1 if g > h1 else g - h0)
print("yes" if abs(off) <= 1 else "no", "off by %+.2f s (read in %.2f s)" % (off, h1 - h0))
' "$h0" "$g" "$h1")
	case $verdict in
	yes*) pass "guest clock $1: ${verdict#yes }" ;;
	*) fail "guest clock $1: ${verdict#no }" ;;
	esac
}

# ---- states that must not be restored (no guest needed) ------------------------
# A second desktop, saved a moment after QEMU started: its state.json
# claiming another QEMU release series, then a truncated state whose
# checksum was made to match (QEMU itself refuses it and exits: start once
# died of SIGPIPE there). Each time start says why and boots instead.
"$bureau" create raw --image "$images/minimal" --disk 6G --home 2G \
    --memory 1536M --cpus 2 >/dev/null 2>&1 || fail "create raw"
refused() {
	"$bureau" start raw --accel tcg --no-wait >/dev/null 2>&1 &&
		"$bureau" stop raw >/dev/null 2>&1 && [ -s "$home/raw/state" ] ||
		{ fail "$1: no saved state to damage"; return; }
	python3 -c "$2" "$home/raw" || { fail "$1: could not damage it"; return; }
	"$bureau" start raw --accel tcg --no-wait >"$home/raw.out" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q "cannot restore.*$3" "$home/raw.out" &&
	    grep -q '^started' "$home/raw.out"; then
		pass "$1: booted instead ($(grep 'cannot restore' "$home/raw.out" | cut -c1-150))"
	else
		fail "$1: exit $rc: $(cat "$home/raw.out")"
	fi
	"$bureau" stop --force raw >/dev/null 2>&1
}
refused "a state from another QEMU series" '
import json, sys
p = sys.argv[1] + "/state.json"
j = json.load(open(p)); j["qemu_series"] = "7.1"; j["qemu"] = "7.1.0 (test)"
open(p, "w").write(json.dumps(j))' "saved by QEMU 7.1.0"
refused "a truncated state with a matching checksum" '
import hashlib, json, sys
d = sys.argv[1]
s = open(d + "/state", "rb").read()[:-100000]
open(d + "/state", "wb").write(s)
p = d + "/state.json"
j = json.load(open(p)); j["state_blake2b"] = hashlib.blake2b(s, digest_size=32).hexdigest()
open(p, "w").write(json.dumps(j))' "qemu exited while it loaded"
"$bureau" rm --force raw >/dev/null 2>&1

# ---- cold start: ready means drawn ---------------------------------------------
start "(cold boot)"
cold=$took
shot_ok "after a cold start"
# ...and the whole session: a window manager runs, and each window it
# lists is drawn in that same screenshot (a window between its map and
# its first paint shows black). Read with ImageMagick, not start's code.
wins=$(call '{"tool":"window","action":"list"}' 30 | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(j.get("window_manager") or "-")
for w in j.get("windows", []):
    if w.get("visible"):
        print("%dx%d+%d+%d" % (w["width"], w["height"], w["x"], w["y"]), w.get("class"))')
wm=$(echo "$wins" | head -n1) black= nwin=0
while read -r geom class; do
	[ -n "$geom" ] || continue
	nwin=$((nwin + 1))
	st=$(convert "$home/shot.png" -crop "$geom" +repage -colorspace gray \
	    -format '%[fx:mean*255] %[fx:standard_deviation*255]' info: 2>/dev/null)
	python3 -c "import sys; m, s = map(float, sys.argv[1:3]); sys.exit(0 if m < 4 and s < 2 else 1)" $st &&
		black="$black $class($geom: $st)"
done <<EOF
$(echo "$wins" | tail -n +2)
EOF
[ "$wm" != - ] && [ $nwin -ge 1 ] && [ -z "$black" ] &&
	pass "after a cold start the session is whole: window manager $wm, $nwin window(s), none black" ||
	fail "after a cold start: window manager '$wm', $nwin window(s), black:$black"
# The session is logind's, led by the session unit's own process (an
# ExecStartPre= once opened one of its own whose end stopped the user's
# manager, bureaud with it): x11, on seat0, active.
sess=$(gsh 'm=$(systemctl show -p MainPID --value bureau-session.service); s=$(cat /proc/$m/sessionid); loginctl show-session "$s" -p Leader -p Type -p Seat -p Active | sort | paste -sd" "; echo "main $m"')
main=$(echo "$sess" | sed -n 's/^main //p')
[ -n "$main" ] && [ "$(echo "$sess" | head -n1)" = "Active=yes Leader=$main Seat=seat0 Type=x11" ] &&
	pass "the X session is a logind session of its own: $(echo "$sess" | head -n1)" ||
	fail "the X session's logind session: '$sess'"

# A process, a file in /dev/shm, a file in the home directory.
pid=$(gsh 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
mark=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
gsh "echo $mark > /dev/shm/life && echo $mark > ~/life.txt" >/dev/null
[ -n "$pid" ] && [ "$(gsh 'cat /dev/shm/life')" = "$mark" ] ||
	fail "setting up: pid '$pid', /dev/shm/life"

# A window opened before the stop, with a title of its own (no shell in
# it: Debian's bashrc retitles an xterm).
wtitle=life-$mark
winfo=$(call "{\"tool\":\"window\",\"action\":\"launch\",\"argv\":[\"xterm\",\"-T\",\"$wtitle\",\"-e\",\"sleep\",\"100000\"],\"wait\":true,\"timeout\":60}" 90)
wid=$(echo "$winfo" | json window)
[ -n "$wid" ] || fail "setting up: xterm -T $wtitle gave no window: $winfo"
# listed WINDOW TITLE: the window's pid when `window list` has it so titled
listed() {
	call '{"tool":"window","action":"list"}' 30 | python3 -c '
import json, sys
for w in json.load(sys.stdin).get("windows", []):
    if str(w.get("window")) == sys.argv[1] and w.get("title") == sys.argv[2]:
        print(w.get("pid"))' "$1" "$2"
}
wpid=$(listed "$wid" "$wtitle")

# ---- stop saves, start restores ----------------------------------------------
t0=$(now)
if "$bureau" stop $name >"$home/stop.out" 2>&1 && grep -q saved "$home/stop.out"; then
	save=$(since $t0)
	pass "stop saves ($save s: $(cat "$home/stop.out"))"
else
	cat "$home/stop.out"; fail "stop (save)"
fi
[ "$(state)" = saved ] && pass "ls shows 'saved'" || fail "ls shows '$(state)' after stop"
ram_k=$(du -k "$dir/ram" | cut -f1)
ram_l=$(stat -c %s "$dir/ram")
state_k=$(du -k "$dir/state" | cut -f1)
echo "# saved state on disk: RAM file $ram_k KiB used of $((ram_l / 1024)) KiB (sparse), device state $state_k KiB"

# A state saved 20 s ago: the clock must not come back 20 s late.
sleep 20
start "(restore)"
restore=$took
grep -q '^restored' "$home/start.out" || fail "start did not restore: $(cat "$home/start.out")"
shot_ok "after a restore"
clock_ok "after a restore from a state saved 20 s earlier"
got=$(gsh "ps -o comm= -p $pid; cat /dev/shm/life")
if [ "$got" = "sleep
$mark" ]; then
	pass "process $pid alive after stop/start, /dev/shm survived"
else
	fail "after stop/start: process $pid and /dev/shm/life: '$got'"
fi
after=$(listed "$wid" "$wtitle")
# the pid read back in the guest's process table, apart from bureaud
[ -n "$wpid" ] && [ "$after" = "$wpid" ] &&
	[ "$(gsh "ps -o comm= -p $wpid")" = xterm ] &&
	pass "window $wid ('$wtitle', xterm pid $wpid) opened before stop is listed after start" ||
	fail "window $wid ('$wtitle'): pid before stop '$wpid', after start '$after'"

# ---- pause, resume: the clock is stepped --------------------------------------
"$bureau" pause $name >/dev/null || fail "pause"
sleep 20
"$bureau" resume $name >"$home/resume.out" 2>&1 || fail "resume: $(cat "$home/resume.out")"
clock_ok "after a resume from a 20 s pause"

# ---- a damaged state falls back to a boot ---------------------------------------
"$bureau" stop $name >"$home/stop.out" 2>&1 || fail "stop (save) again: $(cat "$home/stop.out")"
size=$(stat -c %s "$dir/state")
printf 'damaged' | dd of="$dir/state" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
start "(damaged state)"
if grep -q 'cannot restore' "$home/start.out" && grep -q '^started' "$home/start.out"; then
	pass "damaged state: booted instead, saying so ($(grep 'cannot restore' "$home/start.out" | head -c 200))"
else
	fail "damaged state: $(cat "$home/start.out")"
fi
# After a boot the pid may belong to another process (even this ps):
# gone means no 'sleep 100000' under it.
got=$(gsh "cat ~/life.txt; [ \"\$(ps -o args= -p $pid)\" = 'sleep 100000' ] && echo alive || echo gone")
[ "$got" = "$mark
gone" ] && pass "after the fallback boot: the home disk's file intact, the old process gone" ||
	fail "after the fallback boot: '$got'"

# ---- stop --shutdown: off, the next start boots --------------------------------
pid=$(gsh 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
gsh "echo $mark > /dev/shm/life" >/dev/null
"$bureau" stop --shutdown --timeout 400 $name >"$home/stop.out" 2>&1 && grep -q 'shut down' "$home/stop.out" ||
	fail "stop --shutdown: $(cat "$home/stop.out")"
[ "$(state)" = stopped ] && [ ! -e "$dir/state" ] && [ ! -e "$dir/ram" ] &&
	pass "after stop --shutdown: ls shows 'stopped', no saved state" ||
	fail "after stop --shutdown: state '$(state)', $(ls "$dir")"
start "(after --shutdown)"
grep -q '^started' "$home/start.out" || fail "start after --shutdown did not boot"
got=$(gsh "[ \"\$(ps -o args= -p $pid)\" = 'sleep 100000' ] && echo alive || echo gone; cat /dev/shm/life 2>/dev/null || echo none")
[ "$got" = "gone
none" ] && pass "after --shutdown and start: a boot (process and /dev/shm gone)" ||
	fail "after --shutdown and start: '$got'"

# ---- the X server dies: it and the session come back ---------------------------
# (bureaud goes with the server: the kill runs a second after the reply.)
xpid=$(gsh 'systemctl show -p MainPID --value bureau-x.service' | tr -dc 0-9)
gsh 'setsid sh -c "sleep 1; sudo -n systemctl kill -s KILL bureau-x.service" >/dev/null 2>&1 < /dev/null & echo ok' >/dev/null
t1=$(now) back=
sleep 3
# Back: a window listed, and a window manager named ("-" for none).
while awk -v a="$t1" -v b="$(now)" 'BEGIN { exit !(b - a < 120) }'; do
	w=$(call '{"tool":"window","action":"list"}' 10 2>/dev/null |
	    python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j["windows"]), j["window_manager"] or "-")' 2>/dev/null)
	case $w in [1-9]*\ -) ;; [1-9]*\ ?*) back=$w; break ;; esac
	sleep 2
done
nxpid=$(gsh 'systemctl show -p MainPID --value bureau-x.service' | tr -dc 0-9)
[ -n "$back" ] && [ -n "$xpid" ] && [ "$nxpid" != "$xpid" ] &&
	pass "the X server killed (pid $xpid): a new one ($nxpid) and the session back $(since $t1) s after the kill was set off (1 s before it ran) ($back)" ||
	fail "after the X server was killed (pid $xpid, now '$nxpid'): windows '$back'"

"$bureau" stop --force $name >/dev/null
"$bureau" rm $name >/dev/null || fail "rm"

echo "# lifecycle figures (TCG): cold start to a drawn desktop ${cold} s; stop (save) ${save:-?} s; start from the saved state ${restore} s (ready: daemon, drawn, clock)"
echo "lifecycle e2e: $passes passed, $fails failed"
[ $fails = 0 ]
