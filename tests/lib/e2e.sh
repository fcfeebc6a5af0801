# tests/lib/e2e.sh: what the end-to-end desktop tests share. Source it
# with $build (the build directory, absolute), $top (the tree) and
# $bureau set; it sets $images (the image cache, $BUREAU_IMAGES, default
# /var/cache/bureau/images) and claims a window of ports (ports.sh).
#
#   pass/fail/skip MSG    count a check (skip ends the test, passing)
#   now, since T0         wall clock in s, the seconds since T0
#   e2e_need WHAT TOOL... skip unless the tools and an image (or what
#                         builds one) are here
#   e2e_rm_home           every desktop in $home ended (and its QEMU, which
#                         outlives a killed agent), then $home removed
#   e2e_deb               $deb: this build's guest package, made once
#   e2e_image [VARIANT]   the minimal (or full) image built or taken from
#                         the cache ($img: its resolved directory) and its
#                         warm state
#   call NAME REQ [S]     the reply of NAME's endpoint (bureau call)
#   json FIELD            a field (a.b.c) of the JSON on stdin
#   gsh NAME CMD          CMD's output, run by NAME's daemon's bash tool
#   ping URL TOKEN        a daemon's answer to a ping with TOKEN: "ok" or
#                         the error's code
#   listed NAME WIN TITLE the window's pid when NAME's `window list` has
#                         WIN so titled
images=${BUREAU_IMAGES:-/var/cache/bureau/images}
. "$top/tests/lib/ports.sh"
. "$top/tests/lib/deb.sh"
fails=0 passes=0

pass() { echo "PASS $*"; passes=$((passes + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
skip() { echo "SKIP $*"; exit 0; }
now() { date +%s.%N; }
since() { echo "$1 $(now)" | awk '{ printf "%.2f", $2 - $1 }'; }

e2e_need() {
	what=$1 variant=minimal; shift
	[ "${1:-}" = --full ] && { variant=full; shift; }
	for t in "$@"; do
		command -v $t >/dev/null 2>&1 || skip "$what: '$t' not installed (make deps)"
	done
	[ -x "$bureau" ] || { fail "no $bureau (make)"; exit 1; }
	if [ ! -e "$images/$variant/image.json" ]; then
		[ "$(id -u)" = 0 ] || skip "$what: building the image needs root and none is cached in $images"
		command -v mmdebstrap >/dev/null 2>&1 || skip "$what: 'mmdebstrap' not installed (make deps)"
	fi
}

e2e_rm_home() {
	for d in "$home"/*/; do
		[ -e "$d/desktop.json" ] || continue
		"$bureau" stop --force "$(basename "$d")" >/dev/null 2>&1
		[ -s "$d/qemu.pid" ] && kill -9 "$(cat "$d/qemu.pid")" 2>/dev/null
	done
	rm -rf "$home"
}

e2e_image() {
	variant=${1:-minimal}
	e2e_deb
	if ! "$bureau" image build --$variant --out "$images" --deb "$deb" >"$home/image.log" 2>&1; then
		tail -30 "$home/image.log"
		fail "image build --$variant"
		exit 1
	fi
	img=$(cd "$images/$variant" && pwd -P)
	if [ ! -s "$img/warm/state.json" ]; then
		t0=$(now)
		"$bureau" image warm "$img" >"$home/warm.log" 2>&1 ||
			{ tail -30 "$home/warm.log"; fail "image warm"; exit 1; }
		pass "image warm made the warm state ($(since $t0) s, one cold boot)"
	fi
}

# refuse WHAT PATTERN CMD...: CMD fails, saying PATTERN (its output in
# $home/out)
refuse() {
	what=$1 pat=$2; shift 2
	if "$@" >"$home/out" 2>&1; then
		fail "$what: accepted"
	elif grep -q "$pat" "$home/out"; then
		pass "$what: $(head -1 "$home/out")"
	else
		cat "$home/out"; fail "$what: not '$pat'"
	fi
}

call() { "$bureau" call --timeout "${3:-120}" "$1" "$2"; }
json() {
	python3 -c 'import json,sys
r=json.load(sys.stdin); v=r
for k in sys.argv[1].split("."):
    v=v.get(k) if isinstance(v,dict) else None
print("" if v is None else (json.dumps(v) if isinstance(v,(dict,list,bool)) else v))' "$1"
}
gsh() {
	req=$(python3 -c 'import json,sys; print(json.dumps({"tool":"bash","command":sys.argv[1],"timeout":120}))' "$2")
	call "$1" "$req" 150 | json output
}
ping() {
	PYTHONPATH=$top/tests/lib python3 -c '
import json, sys
import bt
r = bt.Req(sys.argv[1], timeout_ms=20000)
try:
    a = json.loads(r.rpc(json.dumps({"tool": "system", "action": "ping", "token": sys.argv[2]})))
finally:
    r.close()
print("ok" if a.get("ok") else a.get("error", {}).get("code"))' "$1" "$2"
}
listed() {
	call "$1" '{"tool":"window","action":"list"}' 30 | python3 -c '
import json, sys
for w in json.load(sys.stdin).get("windows", []):
    if str(w.get("window")) == sys.argv[1] and w.get("title") == sys.argv[2]:
        print(w.get("pid"))' "$2" "$3"
}

# ---- libvirt ----------------------------------------------------------------
# e2e_libvirtd: a libvirtd answering on $uri (qemu:///system): the one that
# runs, or one started here (no service manager runs it on these machines;
# e2e_libvirtd_end stops it again when no test's domain is left on it).
# Sets $uri, $nokvm (the mounts a libvirtd of the test's own needs) and
# $started_lv.
#
# Where root can open /dev/kvm and libvirt's QEMU user cannot (a machine
# without udev: /dev/kvm root's alone), libvirt finds KVM when it probes
# QEMU (as root) and none when it checks (as its user), and probes QEMU
# again at every call: 13-20 s each here, a start 100 s. (bureau host add
# warns of it.) The test's libvirtds see an unreadable file there instead,
# a host without KVM, as this machine is (QEMU runs under TCG here), and
# a qemu.conf with no private /dev for QEMU (libvirt would carry that
# mount into it, and cannot).
e2e_libvirtd() {
	uri=qemu:///system nokvm= started_lv=
	if [ -e /dev/kvm ] && ! setpriv --reuid=libvirt-qemu --regid=kvm --init-groups test -w /dev/kvm 2>/dev/null; then
		: >"$home/nokvm" && chmod 000 "$home/nokvm" &&
			cp /etc/libvirt/qemu.conf "$home/qemu.conf" && echo 'namespaces = []' >>"$home/qemu.conf" &&
			nokvm="mount --bind $home/nokvm /dev/kvm && mount --bind $home/qemu.conf /etc/libvirt/qemu.conf &&"
	fi
	virsh -q -c $uri version >/dev/null 2>&1 && return 0
	pidof virtlogd >/dev/null || { virtlogd -d && started_lv="$(pidof virtlogd)"; }
	unshare -m sh -c "mount --make-rprivate / && $nokvm exec libvirtd -d" || { fail "libvirtd -d"; exit 1; }
	for _ in $(seq 100); do
		virsh -q -c $uri version >/dev/null 2>&1 && break
		sleep 0.1
	done
	started_lv="$started_lv $(pidof libvirtd)"
	virsh -q -c $uri version >/dev/null 2>&1 || { fail "libvirtd did not answer on $uri"; exit 1; }
	pass "libvirtd started by the test ($uri)"
}

# Stop what e2e_libvirtd started, unless a domain (another run's) is on it.
e2e_libvirtd_end() {
	if [ -n "${started_lv:-}" ] && [ -z "$(virsh -q -c $uri list --name 2>/dev/null)" ]; then
		for p in $started_lv; do kill "$p" 2>/dev/null; done
	fi
}
