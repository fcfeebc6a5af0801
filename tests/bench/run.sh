#!/usr/bin/env bash
# make bench: bureau against scrot+convert and xdotool, in one run.
set -eu
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
export BUREAU_BUILD=$build PYTHONPATH=$top/tests/lib
echo "== capture layer (capbench)"
"$build/tests/capbench"
echo "== bureau vs the usual tools"
/usr/bin/python3 "$top/tests/bench/bench.py"
echo "== the host agent's extra hop (direct vs through it)"; /usr/bin/python3 "$top/tests/bench/agent_bench.py"
echo "== the accessibility tree (bureau vs a gi Atspi walk)"; /usr/bin/python3 "$top/tests/bench/a11y_bench.py"
echo "== desktops: bureau start to first screenshot, disk per desktop"
sh "$top/tests/bench/desktop_bench.sh" "$build"
echo "== what confining QEMU costs (sandbox, capabilities, cgroup), against it unconfined"
sh "$top/tests/bench/jail_bench.sh" "$build"
echo "== Mission Control's live view (1280x720, TCG): fps and delay, beside noVNC on QEMU's VNC directly"
/usr/bin/python3 "$top/tests/bench/liveview_bench.py" "$build"
