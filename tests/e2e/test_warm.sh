#!/bin/sh
# End-to-end: new desktops cloned from the image's warm state.
#
#   tests/e2e/test_warm.sh BUILDDIR
#
# With the minimal image (cached under $BUREAU_IMAGES; its warm state made
# here when the cache lacks one: one cold boot, reused by later runs),
# under TCG: two desktops created with the defaults are clones (create
# says so) and start from the warm state, ready (a drawn screen); read in
# each guest through the bash tool, their machine-ids, hostnames (= their
# names) and guest tokens (/run/bureau/token) differ, and each guest token
# is its own desktop's; their agent tokens differ and one's is refused by
# the other's endpoint; the warm state's guest token and the other clone's
# are refused by a clone's own daemon (guest.json's port); a file written
# in one clone is not in the other; a clone with a larger --home sees it
# (df in the guest), and one with a larger --disk its root; a desktop of
# another --memory and --cpus makes that size's warm state at its first
# create, and the next one of that size (and a larger --disk) is a clone
# of it whose guest has that memory and those cpus; stop/start of a clone restores it (same pid); kill -9
# of a clone's host agent leaves its VM running and start adopts it (same
# QEMU, same pid in the guest); stop --all saves four running clones at
# once and start --all brings back exactly those it saved (not one stopped
# and started by hand since), each with its process; a clone with
# --idle-save is saved once untouched, and the next request wakes it
# ("woke": true, its process alive); bureau config turns it off; a warm
# state of another QEMU boots instead, saying so, and create on an image
# without one says so; the warm state's files are untouched by its clones. Prints the create+start
# times and what a clone costs on disk. No cold boot when the warm state
# is cached.
set -u

build=${1:?usage: test_warm.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "warm e2e" qemu-system-x86_64 qemu-img mke2fs convert python3

home=$(mktemp -d /var/tmp/bureau-warm.XXXXXX)
export BUREAU_HOME=$home
trap e2e_rm_home EXIT INT TERM

# ---- the image and its warm state ----------------------------------------------
e2e_image
warm=$img/warm
stamp() { stat -c '%s %Y' "$warm/ram" "$warm/state" "$warm/system.qcow2" "$warm/home.qcow2" | tr '\n' ' '; }
warm_before=$(stamp)

guest_url() { json url < "$home/$1/guest.json"; }

# ---- two clones -----------------------------------------------------------------
# create NAME [ARGS]: a clone (create says so) of the minimal image.
create() {
	n=$1; shift
	if "$bureau" create $n --image "$img" "$@" >"$home/create-$n.out" 2>&1 &&
	    grep -q "cloned from the image's warm state" "$home/create-$n.out"; then
		return 0
	fi
	cat "$home/create-$n.out"; fail "create $n: not a clone"; exit 1
}
# start NAME LABEL: start it, print its time (create+start from $t0).
start() {
	if "$bureau" start $1 --accel tcg --timeout 600 >"$home/start-$1.out" 2>&1; then
		took=$(since $t0)
		pass "create+start $1 $2 ($took s: $(head -n1 "$home/start-$1.out"))"
	else
		cat "$home/start-$1.out"; tail -20 "$home/$1/agent.log"
		fail "start $1 $2"; exit 1
	fi
}
t0=$(now); create wa; start wa "(clone)"; ta=$took
t0=$(now); create wb; start wb "(clone)"; tb=$took
grep -q '^restored' "$home/start-wa.out" && grep -q '^restored' "$home/start-wb.out" &&
	pass "both started from the warm state (restored, no boot)" ||
	fail "a clone booted: $(head -n1 "$home/start-wa.out") / $(head -n1 "$home/start-wb.out")"

# A drawn screen at once.
if "$bureau" screenshot wa -o "$home/shot.png" >/dev/null 2>&1; then
	sd=$(convert "$home/shot.png" -colorspace gray -format '%[fx:standard_deviation]' info:)
	python3 -c "import sys; sys.exit(0 if $sd > 0.03 else 1)" &&
		pass "a clone's first screenshot shows the desktop (stddev $sd)" ||
		fail "a clone's first screenshot is blank (stddev $sd)"
else
	fail "screenshot wa"
fi

# ---- their identities, read in the guests -----------------------------------
ida=$(gsh wa 'hostname; cat /etc/machine-id; cat /run/bureau/token')
idb=$(gsh wb 'hostname; cat /etc/machine-id; cat /run/bureau/token')
ha=$(echo "$ida" | sed -n 1p) ma=$(echo "$ida" | sed -n 2p) ga=$(echo "$ida" | sed -n 3p)
hb=$(echo "$idb" | sed -n 1p) mb=$(echo "$idb" | sed -n 2p) gb=$(echo "$idb" | sed -n 3p)
[ "$ha" = wa ] && [ "$hb" = wb ] && pass "hostnames are the names ($ha, $hb)" ||
	fail "hostnames '$ha' '$hb' (want wa, wb)"
# A new X client in a clone (its host name changed after the warm state's
# session started) still opens the display: the X cookie is not tied to
# the name.
xa=$(gsh wa 'xrdb -query >/dev/null 2>&1 && echo x-ok || echo "x-refused: $(xrdb -query 2>&1 | head -n2 | tr "\n" " ")"')
[ "$xa" = x-ok ] && pass "a new X client in a renamed clone opens the display" ||
	fail "a new X client in clone wa: $xa"
[ ${#ma} = 32 ] && [ ${#mb} = 32 ] && [ "$ma" != "$mb" ] &&
	pass "machine-ids differ ($ma, $mb)" || fail "machine-ids '$ma' '$mb'"
[ ${#ga} -ge 32 ] && [ "$ga" != "$gb" ] && [ "$ga" = "$(cat "$home/wa/guest-token")" ] &&
	[ "$gb" = "$(cat "$home/wb/guest-token")" ] &&
	pass "guest tokens differ, each its own desktop's" ||
	fail "guest tokens: wa '$ga' wb '$gb'"
wt=$(cat "$warm/guest-token")
[ "$ga" != "$wt" ] && [ "$gb" != "$wt" ] || fail "a clone kept the warm state's guest token"
ta_tok=$(cat "$home/wa/token") tb_tok=$(cat "$home/wb/token")
[ "$ta_tok" != "$tb_tok" ] && pass "agent tokens differ" || fail "agent tokens are equal"

# One clone's agent token is refused by the other's endpoint.
ea=$(cat "$home/wa/endpoint") eb=$(cat "$home/wb/endpoint")
r1=$(ping "$eb" "$ta_tok") r2=$(ping "$eb" "$tb_tok")
[ "$r1" = unauthorized ] && [ "$r2" = ok ] &&
	pass "wa's agent token is refused by wb's endpoint ($r1; its own: $r2)" ||
	fail "wb's endpoint: wa's token '$r1', its own '$r2'"
# The warm state's guest token and the other clone's are refused by a
# clone's own daemon.
ua=$(guest_url wa)
r1=$(ping "$ua" "$wt") r2=$(ping "$ua" "$gb") r3=$(ping "$ua" "$ga")
[ "$r1" = unauthorized ] && [ "$r2" = unauthorized ] && [ "$r3" = ok ] &&
	pass "wa's daemon refuses the warm state's guest token and wb's ($r1, $r2; its own: $r3)" ||
	fail "wa's daemon: warm token '$r1', wb's '$r2', its own '$r3'"

# ---- their files --------------------------------------------------------------
gsh wa 'echo only-wa > ~/only-wa.txt && sync' >/dev/null
[ "$(gsh wa 'cat ~/only-wa.txt')" = only-wa ] &&
	[ "$(gsh wb 'test -e ~/only-wa.txt && echo there || echo absent')" = absent ] &&
	pass "a file written in one clone is not in the other" ||
	fail "the file written in wa: in wa '$(gsh wa 'cat ~/only-wa.txt')', in wb '$(gsh wb 'ls ~')'"
# ---- the running clones share the warm RAM's pages ---------------------------
# Each maps a hard link to the warm RAM file privately (copy-on-write):
# the kernel's own counts (smaps) show its clean pages mapped by more
# than one process, i.e. one copy in the page cache for both.
wram="$warm/ram"
wino=$(stat -c %i "$(readlink -f "$wram")" 2>/dev/null)
mapped() { # NAME: "PERMS SHARED_CLEAN_KB" of QEMU's mapping of that inode
	q=$(cat "$home/$1/qemu.pid" 2>/dev/null)
	awk -v ino="$wino" '
		/^[0-9a-f]+-[0-9a-f]+ / { on = ($5 == ino); if (on) perm = $2 }
		on && /^Shared_Clean:/ { sc = $2 }
		END { print (perm == "" ? "none" : perm), sc + 0 }' "/proc/${q:-0}/smaps" 2>/dev/null ||
		echo "none 0"
}
ma_=$(mapped wa) mb_=$(mapped wb)
pa=${ma_%% *} sa=${ma_##* } pb=${mb_%% *} sb=${mb_##* }
[ -n "$wino" ] && [ "$pa" = rw-p ] && [ "$pb" = rw-p ] &&
	[ "$(stat -c %i "$home/wa/ram.base")" = "$wino" ] &&
	pass "both clones map the warm RAM (inode $wino, linked as ram.base) privately (rw-p)" ||
	fail "the clones' RAM mappings of inode '$wino': wa '$ma_', wb '$mb_'; wa's ram.base: $(ls -li "$home/wa/ram.base" 2>&1)"
[ "${sa:-0}" -gt 10240 ] && [ "${sb:-0}" -gt 10240 ] &&
	pass "their unchanged RAM pages are shared: $sa kB and $sb kB mapped by both (smaps Shared_Clean)" ||
	fail "the warm RAM's pages are not shared: Shared_Clean wa '$sa' kB, wb '$sb' kB"
# ---- and KSM may merge the rest ------------------------------------------------
# What a desktop runs on the host is marked mergeable (PR_SET_MEMORY_MERGE):
# QEMU, the network keeper and its pasta and passt, as the kernel says in
# /proc/PID/ksm_stat; whether pages merge is the host's KSM switch. QEMU's
# own marking (mem-merge: the guest's RAM only) leaves ksm_merge_any "no".
if grep -q '^ksm_merge_any' /proc/self/ksm_stat 2>/dev/null; then
	q=$(cat "$home/wa/qemu.pid" 2>/dev/null) k=$(cat "$home/wa/net.pid" 2>/dev/null)
	kin=$(ps -e -o pid=,ppid= | awk -v r="${k:-0}" '{ p[$1] = $2 }
		END { for (i in p) { j = i; while ((j in p) && j != r) j = p[j]; if (j == r) print i } }')
	no= n=0
	for p in $q $kin; do
		n=$((n + 1))
		grep -q '^ksm_merge_any: yes' "/proc/$p/ksm_stat" 2>/dev/null ||
			no="$no $p($(cat "/proc/$p/comm" 2>/dev/null))"
	done
	[ -n "$q" ] && [ "$n" -ge 4 ] && [ -z "$no" ] &&
		pass "QEMU and the network keeper's $((n - 1)) processes are mergeable (ksm_merge_any)" ||
		fail "not mergeable:${no:- none} (qemu '$q', keeper '$k', $n processes)"
else
	echo "SKIP: this kernel has no ksm_merge_any in /proc/PID/ksm_stat"
fi
# ---- TCG's translation cache is capped ----------------------------------------
# 256 MB (qemu.c), not QEMU's 1 GiB: the kernel's map of the clone's QEMU
# shows its code buffer (the executable, writable anonymous mappings).
if [ "$(cat "$home/wa/accel" 2>/dev/null)" = tcg ]; then
	q=$(cat "$home/wa/qemu.pid" 2>/dev/null)
	jit=$(/usr/bin/python3 -c 'import sys
s = 0
for l in open(sys.argv[1]):
    f = l.split()
    if f[1] == "rwxp":
        a, b = (int(x, 16) for x in f[0].split("-"))
        s += b - a
print(s >> 20)' "/proc/${q:-0}/maps" 2>/dev/null)
	[ -n "$jit" ] && [ "$jit" -gt 0 ] && [ "$jit" -le 260 ] &&
		pass "TCG's code buffer is capped: $jit MB mapped (QEMU's default: 1024)" ||
		fail "TCG's code buffer: '$jit' MB mapped (want 1-260)"
fi

"$bureau" stop --force wb >/dev/null 2>&1
# A cache size that is not one: the start fails, naming the variable, and
# leaves no QEMU.
BUREAU_TB_SIZE=lots "$bureau" start wb --accel tcg >"$home/start-tb.out" 2>&1
rc=$?
q=$(cat "$home/wb/qemu.pid" 2>/dev/null)
[ $rc != 0 ] && grep -q "invalid BUREAU_TB_SIZE 'lots': expected a whole number from 0 to" "$home/start-tb.out" &&
    ! grep -qa "bureau-wb" "/proc/${q:-0}/cmdline" 2>/dev/null &&
	pass "BUREAU_TB_SIZE=lots: start refused ($(tail -n1 "$home/start-tb.out" | cut -c1-120))" ||
	fail "BUREAU_TB_SIZE=lots: exit $rc, qemu '$q': $(cat "$home/start-tb.out")"

# ---- larger disks: grown online ------------------------------------------------
# grown GIB NAME MOUNT WHAT: pass when MOUNT in NAME is over GIB GiB,
# waiting up to 60 s (the guest's udev rule grows the file system after
# the restore), else fail; WHAT says what was asked.
grown() {
	size=0
	for i in $(seq 1 60); do
		size=$(gsh $2 "df -B1 --output=size $3 | tail -n1" | tr -dc 0-9)
		[ -n "$size" ] && [ "$size" -gt $(($1 * 1024 * 1024 * 1024)) ] && break
		sleep 1
	done
	[ -n "$size" ] && [ "$size" -gt $(($1 * 1024 * 1024 * 1024)) ] &&
		pass "$2 with $4 sees it: $3 is $size bytes (grown online)" ||
		fail "$2 with $4: $3 is '$size' bytes (want over $1 GiB)"
}
t0=$(now); create wc --disk 22G --home 24G; start wc "(clone, --disk 22G --home 24G)"
grown 22 wc /home "--home 24G"
grown 20 wc / "--disk 22G (the warm state's 20G)"
"$bureau" stop --force wc >/dev/null 2>&1

# ---- another memory and cpus: a warm state of that size, made on first use ------
# In a private copy of the image (its files linked), so that the shared
# image cache keeps no warm state of this size and every run makes it.
mkdir -p "$home/img2"
for f in "$img"/*; do [ -f "$f" ] && ln -s "$f" "$home/img2/"; done
ln -s "$warm" "$home/img2/warm"
t0=$(now)
if "$bureau" create wf --image "$home/img2" --memory 1536M --cpus 1 >"$home/create-wf.out" 2>&1 &&
    grep -q "making one for 1536M of memory, 1 cpus" "$home/create-wf.out" &&
    grep -q "cloned from the image's warm state" "$home/create-wf.out"; then
	pass "the first create of 1536M, 1 cpu makes its warm state and clones it ($(since $t0) s, one cold boot)"
else
	cat "$home/create-wf.out"; fail "create wf --memory 1536M --cpus 1"
fi
sized=$(ls -d "$home/img2"/warm-1536M-1-* 2>/dev/null | head -n1)
[ -n "$sized" ] && [ -s "$sized/state.json" ] && [ -s "$sized/ram" ] &&
	pass "its warm state is $(basename "$sized")" || fail "no warm state of 1536M, 1 cpu in $home/img2: $(ls "$home/img2")"
t0=$(now)
if "$bureau" create wg --image "$home/img2" --memory 1536M --cpus 1 --disk 22G >"$home/create-wg.out" 2>&1 &&
    ! grep -q "making one" "$home/create-wg.out" &&
    grep -q "cloned from the image's warm state" "$home/create-wg.out"; then
	:
else
	cat "$home/create-wg.out"; fail "create wg: not a clone of the 1536M warm state"; exit 1
fi
if "$bureau" start wg --accel tcg --timeout 600 >"$home/start-wg.out" 2>&1 &&
    grep -q '^restored' "$home/start-wg.out"; then
	pass "a second desktop of 1536M, 1 cpu, --disk 22G: create+start from its warm state in $(since $t0) s ($(head -n1 "$home/start-wg.out"))"
else
	cat "$home/start-wg.out"; tail -20 "$home/wg/agent.log"; fail "start wg"
fi
# What the guest sees: its memory and cpus, and the disk grown online.
mem_k=$(gsh wg "awk '/^MemTotal/ { print \$2 }' /proc/meminfo" | tr -dc 0-9)
ncpu=$(gsh wg nproc | tr -dc 0-9)
[ -n "$mem_k" ] && [ "$mem_k" -gt $((1200 * 1024)) ] && [ "$mem_k" -le $((1536 * 1024)) ] &&
	[ "$ncpu" = 1 ] &&
	pass "in the guest: MemTotal $mem_k kB (of 1536M), $ncpu cpu" ||
	fail "in the guest: MemTotal '$mem_k' kB, '$ncpu' cpus (want about 1536M, 1)"
grown 20 wg / "--disk 22G (its warm state's 20G)"
[ "$(cat "$home/wf/warm-token")" = "$(cat "$sized/guest-token")" ] &&
	[ "$(gsh wg 'cat /run/bureau/token')" = "$(cat "$home/wg/guest-token")" ] &&
	pass "wg runs its own guest token, not its warm state's" ||
	fail "wg's guest token"
# (the test's 30 ports hold ten desktops: these two are done)
for n in wf wg; do "$bureau" rm --force $n >/dev/null 2>&1 || fail "rm --force $n"; done

# ---- stop/start of a clone restores it ----------------------------------------
pid=$(gsh wa 'setsid sleep 100000 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
# 20 MB the warm RAM cannot hold: the save must write these pages.
sum0=$(gsh wa 'head -c 20000000 /dev/urandom > /dev/shm/rnd && md5sum < /dev/shm/rnd | cut -c1-32')
cost_k=$(du -sk --exclude=ram.base --exclude=state.base "$home/wa" | cut -f1)
t1=$(now)
if "$bureau" stop wa >"$home/stop.out" 2>&1 && grep -q saved "$home/stop.out"; then
	pass "stop saves a clone ($(since $t1) s, its first save: an ordinary one)"
else
	cat "$home/stop.out"; fail "stop wa"
fi
saved_k=$(du -sk --exclude=ram.base --exclude=state.base "$home/wa" | cut -f1)
# What the save wrote: the pages wa changed, not its RAM (the warm RAM
# file holds several hundred MB of data).
st_k=$(du -k "$home/wa/state" 2>/dev/null | cut -f1)
wram_k=$(du -k "$(readlink -f "$wram")" | cut -f1)
chg=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j.get("ram_file"), j.get("ram_changed_pages"))' "$home/wa/state.json" 2>/dev/null)
[ "${chg%% *}" = ram.base ] && [ "${chg#* }" -gt 4882 ] 2>/dev/null &&
	[ -n "$st_k" ] && [ "$st_k" -lt $((wram_k / 2)) ] &&
	pass "the save wrote the pages wa changed: ${chg#* } pages, a $st_k kB state (the warm RAM: $wram_k kB)" ||
	fail "the save: state.json '$chg', state $st_k kB, warm RAM $wram_k kB"
t0=$(now); start wa "(stop/start)"
grep -q '^restored' "$home/start-wa.out" && [ -n "$pid" ] &&
	[ "$(gsh wa "ps -o comm= -p $pid")" = sleep ] &&
	pass "the clone was restored: pid $pid is still 'sleep'" ||
	fail "after stop/start: $(head -n1 "$home/start-wa.out"); pid '$pid': '$(gsh wa "ps -o comm= -p $pid")'"
[ "$(gsh wa 'cat ~/only-wa.txt')" = only-wa ] || fail "the clone's file is gone after stop/start"
sum1=$(gsh wa 'md5sum < /dev/shm/rnd | cut -c1-32')
[ -n "$sum0" ] && [ "$sum1" = "$sum0" ] &&
	pass "the 20 MB it held in RAM (/dev/shm) came back the same (md5 $sum1)" ||
	fail "/dev/shm/rnd after stop/start: md5 '$sum1', before '$sum0'"
t1=$(now)
"$bureau" stop wa >/dev/null 2>&1 && t0=$(now) && start wa "(second stop/start: an ordinary saved desktop)"

# ---- a killed host agent loses nothing: start adopts its running VM -------------
pid=$(gsh wa 'setsid sleep 100001 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
qpid=$(cat "$home/wa/qemu.pid" 2>/dev/null) apid=$(cat "$home/wa/agent.pid" 2>/dev/null)
kill -9 "$apid"
n=0
while kill -0 "$apid" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
t0=$(now)
"$bureau" start wa >"$home/adopt.out" 2>&1
took=$(since "$t0")
if grep -q "^adopted desktop 'wa'" "$home/adopt.out" && [ -n "$qpid" ] &&
    [ "$(cat "$home/wa/qemu.pid")" = "$qpid" ] && [ -n "$pid" ] &&
    [ "$(gsh wa "ps -o comm= -p $pid")" = sleep ] &&
    [ "$(cat "$home/wa/agent.pid")" != "$apid" ]; then
	pass "kill -9 of the host agent $apid: qemu $qpid ran on and start adopted it in $took s; pid $pid is still 'sleep'"
else
	fail "adoption after kill -9 of the agent: $(head -n 3 "$home/adopt.out"); qemu $qpid -> $(cat "$home/wa/qemu.pid" 2>&1); pid '$pid': '$(gsh wa "ps -o comm= -p $pid")'"
fi
echo "adopt: start after kill -9 of the host agent -> ready: $took s"

# ---- stop --all / start --all: four desktops saved and back at once -------------
# wa runs; three more clones with it. Each runs a process of its own.
for n in w1 w2 w3; do t0=$(now); create $n; start $n "(clone, for --all)"; done
pids=
for n in wa w1 w2 w3; do
	pids="$pids $n:$(gsh $n "setsid sleep 100002 >/dev/null 2>&1 < /dev/null & echo \$!" | tr -dc 0-9)"
done
t0=$(now)
"$bureau" stop --all >"$home/stop-all.out" 2>&1
rc=$? t_stop4=$(since "$t0")
marks=$(ls "$home"/*/saved-by-all 2>/dev/null | wc -l)
running=$(for n in wa w1 w2 w3; do "$bureau" status $n | grep -x 'state: saved'; done | wc -l)
if [ $rc = 0 ] && grep -q "^stop --all: saved 4 desktops in" "$home/stop-all.out" &&
    [ "$marks" = 4 ] && [ "$running" = 4 ] && ! pgrep -f "qemu-system.*$home" >/dev/null; then
	pass "stop --all saved 4 desktops at once in $t_stop4 s (no QEMU left, 4 marks)"
else
	cat "$home/stop-all.out"; fail "stop --all: rc $rc, $marks marks, $running saved"
fi
# A desktop started and stopped by hand since is its operator's: not brought back.
"$bureau" start w3 --accel tcg >/dev/null 2>&1 && "$bureau" stop w3 >/dev/null 2>&1
[ ! -e "$home/w3/saved-by-all" ] && pass "a desktop stopped by hand loses its --all mark" ||
	fail "w3 kept its --all mark after a stop by hand"
t0=$(now)
"$bureau" start --all >"$home/start-all.out" 2>&1
rc=$? t_start3=$(since "$t0")
ok=0
for np in $pids; do
	n=${np%%:*} p=${np#*:}
	[ "$n" = w3 ] && continue
	[ "$(gsh $n "ps -o comm= -p $p")" = sleep ] && ok=$((ok + 1))
done
if [ $rc = 0 ] && grep -q "^start --all: started 3 desktops in" "$home/start-all.out" &&
    [ $ok = 3 ] && "$bureau" status w3 | grep -qx 'state: saved' &&
    [ -z "$(ls "$home"/*/saved-by-all 2>/dev/null)" ]; then
	pass "start --all brought back exactly the 3 that stop --all saved, in $t_start3 s, each with its process"
else
	cat "$home/start-all.out"; fail "start --all: rc $rc, $ok of 3 with their process; w3 $("$bureau" status w3 | grep state)"
fi
"$bureau" start --all >"$home/start-all2.out" 2>&1 && grep -q "no desktop was saved by stop --all" "$home/start-all2.out" &&
	pass "start --all again: nothing to do" || fail "start --all again: $(cat "$home/start-all2.out")"
# The same for one desktop, for comparison.
t0=$(now); "$bureau" stop --all >/dev/null 2>&1; t_stopn=$(since "$t0")
t0=$(now); "$bureau" start --all >/dev/null 2>&1; t_startn=$(since "$t0")
"$bureau" stop wa >/dev/null 2>&1 && "$bureau" stop w1 >/dev/null 2>&1
t0=$(now); "$bureau" stop --all >/dev/null 2>&1; t_stop1=$(since "$t0")
t0=$(now); "$bureau" start --all >/dev/null 2>&1; t_start1=$(since "$t0")
"$bureau" status w2 | grep -qx 'state: running' || fail "w2 after stop --all/start --all alone: $("$bureau" status w2 | grep state)"
echo "all: stop --all of 4 desktops $t_stop4 s, of 3 $t_stopn s, of 1 $t_stop1 s; start --all of 3 $t_start3 s (again $t_startn s), of 1 $t_start1 s"
for n in wa w1 w2 w3; do "$bureau" stop --force $n >/dev/null 2>&1; done

# ---- idle save, and wake on the next request ----------------------------------
out=$("$bureau" create wx --image "$img" --idle-save 2s 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -qF -- "--idle-save '2s'" && [ ! -e "$home/wx" ] &&
	pass "create --idle-save 2s refused (below 5 s): $(echo "$out" | head -n1)" ||
	fail "create --idle-save 2s: '$out'"
t0=$(now); create wi --idle-save 8s; start wi "(clone, --idle-save 8s)"
pid=$(gsh wi 'setsid sleep 100003 >/dev/null 2>&1 < /dev/null & echo $!' | tr -dc 0-9)
qpid=$(cat "$home/wi/qemu.pid" 2>/dev/null) apid=$(cat "$home/wi/agent.pid" 2>/dev/null)
t0=$(now)
n=0
while [ $n -lt 240 ] && ! "$bureau" status wi 2>/dev/null | grep -qx 'state: saved (idle)'; do sleep 0.25; n=$((n + 1)); done
t_idle=$(since "$t0")
"$bureau" status wi >"$home/status-wi" 2>&1
"$bureau" ls >"$home/ls-wi" 2>&1
if grep -qx 'state: saved (idle)' "$home/status-wi" && ! kill -0 "$qpid" 2>/dev/null &&
    kill -0 "$apid" 2>/dev/null && grep -q "^wi  *saved (idle)" "$home/ls-wi" &&
    ! pgrep -f "qemu-system.*$home/wi/" >/dev/null; then
	pass "untouched for 8 s, wi was saved while idle ($t_idle s after the last request): no qemu, its agent $apid serves on, ls and status say 'saved (idle)'"
else
	fail "idle save: $(cat "$home/status-wi"); qemu $qpid $(kill -0 "$qpid" 2>/dev/null && echo alive)"
fi
t0=$(now)
r=$(call wi "{\"tool\":\"bash\",\"command\":\"ps -o comm= -p $pid\"}" 60)
t_wake=$(since "$t0")
if [ "$(echo "$r" | json woke)" = true ] && [ "$(echo "$r" | json output | tr -d '\n')" = sleep ] &&
    [ "$(cat "$home/wi/agent.pid")" = "$apid" ]; then
	pass "the next request woke it and was answered in $t_wake s (\"woke\": true), pid $pid still 'sleep'"
else
	fail "the request to the idle desktop ($t_wake s): $(echo "$r" | cut -c1-300)"
fi
r=$(call wi '{"tool":"system","action":"ping"}' 30)
[ "$(echo "$r" | json ok)" = true ] && [ -z "$(echo "$r" | json woke)" ] &&
	pass "the request after: answered, not woken again" || fail "after the wake: $r"
echo "idle: saved $t_idle s after the last request (--idle-save 8s); a request to it answered in $t_wake s"
out=$("$bureau" config wi --idle-save off 2>&1) && echo "$out" | grep -qx "idle-save: off" &&
	grep -q '"idle_save": 0' "$home/wi/desktop.json" &&
	pass "bureau config wi --idle-save off: applied and kept" || fail "config --idle-save off: '$out'"
out=$("$bureau" config wi --idle-save 1x 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -qF -- "--idle-save '1x'" && pass "config --idle-save 1x refused: $(echo "$out" | head -n1)" ||
	fail "config --idle-save 1x: '$out'"
sleep 10
"$bureau" status wi | grep -qx 'state: running' && pass "with idle-save off, 10 s untouched: still running" ||
	fail "idle-save off: $("$bureau" status wi | grep state)"
"$bureau" config wi --idle-save 6s >/dev/null 2>&1
n=0
while [ $n -lt 240 ] && ! "$bureau" status wi 2>/dev/null | grep -qx 'state: saved (idle)'; do sleep 0.25; n=$((n + 1)); done
out=$("$bureau" stop wi 2>&1)
# the agent has exited once stop returns; init may reap it a moment later
n=0
while kill -0 "$apid" 2>/dev/null && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
if echo "$out" | grep -q "saved while idle" && ! kill -0 "$apid" 2>/dev/null &&
    "$bureau" status wi | grep -qx 'state: saved'; then
	pass "stop of a desktop saved while idle ends its agent; it stays saved"
else
	fail "stop of the idle desktop: '$out'; $("$bureau" status wi | grep state)"
fi

# ---- a warm state that does not fit: boots instead, saying so -----------------
# An image beside the real one (its files linked), whose warm state claims
# another QEMU release series.
mkdir -p "$home/img/warm"
for f in "$img"/*; do [ -f "$f" ] && ln -s "$f" "$home/img/"; done
for f in "$warm"/*; do ln -s "$f" "$home/img/warm/"; done
rm "$home/img/warm/state.json"
python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); j["qemu_series"] = "7.1"; j["qemu"] = "7.1.0 (test)"
open(sys.argv[2], "w").write(json.dumps(j))' "$warm/state.json" "$home/img/warm/state.json"
if "$bureau" create wd --image "$home/img" >"$home/create-wd.out" 2>&1 &&
    grep -q "cloned from" "$home/create-wd.out"; then
	"$bureau" start wd --accel tcg --no-wait >"$home/start-wd.out" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q "cannot restore.*warm state.*saved by QEMU 7.1.0.*booted it instead" "$home/start-wd.out" &&
	    grep -q '^started' "$home/start-wd.out"; then
		pass "a warm state QEMU cannot take: booted instead ($(grep 'cannot restore' "$home/start-wd.out" | cut -c1-160))"
	else
		fail "a warm state of another QEMU: exit $rc: $(cat "$home/start-wd.out")"
	fi
	"$bureau" stop --force wd >/dev/null 2>&1
else
	fail "create wd: $(cat "$home/create-wd.out")"
fi
# And an image without one: create says so.
rm -r "$home/img/warm"
"$bureau" create we --image "$home/img" >"$home/create-we.out" 2>&1 &&
	grep -q "no warm state (the image has no warm state" "$home/create-we.out" &&
	pass "an image without a warm state: create says the first start boots" ||
	fail "create on an image without a warm state: $(cat "$home/create-we.out")"

[ "$(stamp)" = "$warm_before" ] && pass "the warm state's files are as they were" ||
	fail "the warm state changed: '$warm_before' -> '$(stamp)'"
echo "# a clone on disk: $cost_k KiB while it runs (its overlays: the warm RAM it maps is linked, not counted), $saved_k KiB once saved (with the pages it changed)"
echo "# create+start of a clone: $ta s, $tb s (load: $(cut -d' ' -f1-3 /proc/loadavg))"

echo "# $passes passed, $fails failed"
[ $fails = 0 ]
