#!/bin/sh
# TCG's translation cache against Chromium: for each cache size, a new
# clone of the full image (its warm state; `make test-full` or `bureau
# image build --full` makes it), Chromium opened on a page whose script
# runs a 3e7-step loop, the time to its window and to the loop's end, and
# QEMU's PSS after, then 30 s later. Not in `make bench` (the full image
# takes an hour to build on a cold cache).
#
#   tests/bench/tcg_cache.sh BUILDDIR [SIZE_MB...]   (default: 0 256 128; 0 is QEMU's 1 GiB)
set -u
build=$(cd "${1:?usage: tcg_cache.sh BUILDDIR [SIZE_MB...]}" && pwd)
shift
bureau=$build/bureau
images=${BUREAU_IMAGES:-/var/cache/bureau/images}
img=$(cd "$images/full" 2>/dev/null && pwd -P) ||
	{ echo "tcg cache bench: SKIP (no full image in $images)"; exit 0; }
[ -s "$img/warm/state.json" ] || { echo "tcg cache bench: SKIP (the full image has no warm state)"; exit 0; }
home=$(mktemp -d /var/tmp/bureau-tcg.XXXXXX)
export BUREAU_HOME=$home BUREAU_PORTS=${BUREAU_PORTS:-7600-7699}
cleanup() {
	for p in "$home"/*/qemu.pid; do
		[ -s "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	done
	rm -rf "$home"
}
trap cleanup EXIT INT TERM
ms() { date +%s%3N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }
pss() { awk '/^Pss:/ { print int($2 / 1024) }' "/proc/$(cat "$home/$1/qemu.pid")/smaps_rollup"; }
page=$(printf '%s' '<html><head><title>start</title><script>function f(){let s=0;for(let i=0;i<3e7;i++){s+=i%7;} document.title="done "+s;} setTimeout(f,100)</script></head><body><h1>tcg</h1></body></html>' | base64 -w0)
[ $# -gt 0 ] || set -- 0 256 128
for tb in "$@"; do
	n=t$tb
	"$bureau" create $n --image "$img" >/dev/null || exit 1
	BUREAU_TB_SIZE=$tb "$bureau" start $n --accel tcg >"$home/start-$n.log" 2>&1 ||
		{ cat "$home/start-$n.log"; exit 1; }
	sleep 20
	idle=$(pss $n)
	"$bureau" call $n "{\"tool\":\"bash\",\"command\":\"mkdir -p ~/t; echo $page | base64 -d > ~/t/p.html\"}" >/dev/null
	t0=$(ms)
	"$bureau" call --timeout 150 $n '{"tool":"window","action":"launch","argv":["chromium","--new-window","file:///home/bureau/t/p.html"],"wait":true,"timeout":120}' >"$home/launch-$n.json"
	t1=$(ms)
	i=0
	until "$bureau" call $n '{"tool":"window","action":"list"}' | grep -q '"done '; do
		sleep 1
		i=$((i + 1))
		[ $i -gt 400 ] && { echo "tcg cache bench: the page's loop did not end in $n"; break; }
	done
	t2=$(ms)
	after=$(pss $n)
	sleep 30
	echo "tcg cache ${tb} MB (0: QEMU's 1 GiB): QEMU's PSS idle $idle MB; Chromium's window $(secs "$t0" "$t1") s, the page's loop done $(secs "$t1" "$t2") s later; PSS after $after MB, 30 s later $(pss $n) MB"
	"$bureau" rm --force $n >/dev/null 2>&1
done
