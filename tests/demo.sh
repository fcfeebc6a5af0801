#!/usr/bin/env bash
# make demo: a private Xvfb desktop (openbox, an xterm, xclock, xcalc),
# bureaud on it, and the example agent loop replaying a scripted session
# through the socket: screenshot, click into the terminal, type a command
# with non-ASCII text, Return, screenshot. Screenshots land in demo-out/.
# Everything started here is stopped on exit.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/demo-out
work=$(mktemp -d /tmp/bureau-demo.XXXXXX)
pids=()

cleanup() {
	bt_kill_child TERM "${pids[@]}"
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

. "$(dirname "$0")/lib/xvfb.sh"
. "$(dirname "$0")/lib/proc.sh"
bt_xvfb --log "$work/xvfb.log" -screen 0 1280x800x24 -nolisten tcp ||
	{ echo "demo: Xvfb did not start" >&2; exit 1; }
pids+=("$BT_XVFB_PID")
export DISPLAY=$BT_XVFB_DISPLAY LC_ALL=C.UTF-8
openbox >/dev/null 2>&1 &
pids+=($!)
sleep 0.5
xsetroot -solid '#2e3440' # after openbox, which paints the root at start
# A shell without rc files: it is ready at once, whatever ~/.bashrc does.
(cd "$work" && PS1='agent@bureau:\w\$ ' exec xterm -u8 \
	-fa 'DejaVu Sans Mono' -fs 11 -geometry 90x24+30+40 -T terminal \
	-e bash --norc --noprofile -i) &
pids+=($!)
xclock -geometry 160x160+1080+40 &
pids+=($!)
xcalc -geometry +900+420 >/dev/null 2>&1 &
pids+=($!)
sleep 1

port=$((20000 + RANDOM % 12000)) # below the ephemeral ports (32768 on)
head -c 24 /dev/urandom | base64 >"$work/token"
"$build/bureaud" --listen "tcp://127.0.0.1:$port" --token-file "$work/token" \
	--log-level warn &
pids+=($!)
url=tcp://127.0.0.1:$port
for _ in $(seq 100); do
	"$build/bureau" call --url "$url" --token-file "$work/token" \
		'{"tool":"system","action":"ping"}' >/dev/null 2>&1 && break
	sleep 0.1
done
echo "bureaud on $url, display $DISPLAY"
"$build/bureau" call --url "$url" --token-file "$work/token" \
	'{"tool":"system","action":"info"}' | /usr/bin/python3 -c \
	'import json,sys; r=json.load(sys.stdin); print("screen", r["screen"], "screenshots", r["scaled"])'

rm -rf "$out"
mkdir -p "$out"
PYTHONPATH=$top/host-bridge/python BUREAU_LIB=$build/libbureau.so \
	/usr/bin/python3 "$top/host-bridge/python/examples/agent_loop.py" \
	--url "$url" --token-file "$work/token" \
	--script "$top/host-bridge/python/examples/demo_script.json" --out "$out"

# The typed command ran in the real terminal: its file is the proof.
for _ in $(seq 150); do [ -s "$work/bureau-demo.txt" ] && break; sleep 0.1; done
if [ -s "$work/bureau-demo.txt" ]; then
	echo "the terminal wrote: $(cat "$work/bureau-demo.txt")"
else
	echo "demo: the typed command did not run in the terminal" >&2
	exit 1
fi
"$build/bureau" screenshot --url "$url" --token-file "$work/token" \
	-o "$out/final.png"
echo "screenshots in $out:"
ls -l "$out"
