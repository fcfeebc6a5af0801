#!/usr/bin/env bash
# tests/run.sh [--unit-only | --daemon | --no-unit] BUILD_DIR [SUITE...]
# Runs the cmocka unit tests, then every tests/integration/test_* and
# tests/e2e/test_* script, and ends with the line "N passed, N failed".
#   --unit-only  the unit tests only
#   --daemon     the unit tests and the integration suites that need only
#                bureaud on Xvfb (no QEMU, Node or client library): what CI
#                runs under the sanitizers
#   --no-unit    the scripts only
#   SUITE...     these scripts (paths, or names under tests/integration or
#                tests/e2e) instead of all
# Every test runs under a time limit (BUREAU_TEST_TIMEOUT seconds overrides
# them all): one that hangs is killed, with what it started, and counted
# as a failure under its name. The logs of the failures are printed again
# after the summary of each, the full ones kept in a directory it names.
set -u
mode=all
case "${1:-}" in
--unit-only) mode=unit; shift ;;
--daemon) mode=daemon; shift ;;
--no-unit) mode=scripts; shift ;;
esac
build=$(cd "${1:-build}" && pwd) || exit 2
[ $# -gt 0 ] && shift
top=$(cd "$(dirname "$0")/.." && pwd)
export BUREAU_BUILD=$build
# nngcat, from the nng that bureau links (third_party/nng)
export PATH=$build/bin:$PATH
export PYTHONPATH=$top/tests/lib:$top/host-bridge/python${PYTHONPATH:+:$PYTHONPATH}
# Debian's python3: the tests use only its standard library.
PY=/usr/bin/python3
passed=0
failed=0
failures=()
log=$(mktemp -d /tmp/bureau-tests.XXXXXX)

count() { # name, output file, exit status
	local p f
	p=$(grep -cE '^(PASS |\[       OK \])' "$2")
	f=$(grep -cE '^(FAIL |\[  FAILED  \] [a-z_])' "$2")
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -eq 0 ] && [ "$3" -ne 0 ]; then
		# died without saying which test: count the script itself
		failed=$((failed + 1))
		echo "FAIL $1 (exit status $3, no test named)"
		failures+=("$1")
	elif [ "$f" -gt 0 ]; then
		failures+=("$1")
	fi
}

# run LIMIT NAME CMD...: CMD's output into $log/NAME.out, its status in rc.
# timeout signals its whole process group (CMD and what CMD started, unless
# that left the group), TERM first so traps clean up, KILL 20 s later.
# Just before the limit a watchdog writes where every process of the test
# stands into its log, so that a hang seen once in CI names its cause:
# Python's own stacks (bt registers faulthandler on SIGUSR1), then each
# process's threads as gdb sees them.
run() {
	local limit=${BUREAU_TEST_TIMEOUT:-$1} name=$2 tp wd t0=$SECONDS
	shift 2
	timeout -k 20 "$limit" "$@" >"$log/$name.out" 2>&1 </dev/null &
	tp=$!
	stacks_at "$tp" $((limit > 30 ? limit - 10 : limit * 2 / 3)) \
		"$log/$name.out" &
	wd=$!
	wait "$tp"
	rc=$?
	kill "$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		echo "FAIL $name: timed out after $limit s (killed)" >>"$log/$name.out"
	fi
	# (where CI's time goes, suite by suite)
	echo "# $name took $((SECONDS - t0)) s" >>"$log/$name.out"
}

# stacks_at PID SECONDS FILE: after SECONDS, the stacks of PID's process
# group (timeout leads its own) into FILE. TERM before then ends it quietly.
stacks_at() {
	local s p
	trap '[ -z "${s:-}" ] || kill "$s" 2>/dev/null; exit 0' TERM
	sleep "$2" &
	s=$!
	wait "$s"
	s=
	trap - TERM
	{
		echo "==== run.sh: still running after $2 s; where it stands:"
		for p in $(pgrep -g "$1"); do
			[ "$p" = "$1" ] && continue
			echo "== pid $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null | cut -c1-200)"
			case "$(cat /proc/"$p"/comm 2>/dev/null)" in
			python*) kill -USR1 "$p" 2>/dev/null; sleep 1 ;;
			esac
			command -v gdb >/dev/null &&
				timeout 30 gdb -p "$p" -batch -nx \
					-ex 'thread apply all bt 30' 2>&1 |
				grep -E '^(Thread|#)' | head -n 300
		done
	} >>"$3" 2>&1
}

# The unit tests that need an X server (keyboard) get a private Xvfb.
xdisp=
xpid=
declare -A running=()
# On the way out: the private Xvfb, and any suite still running (timeout
# leads a process group of its own: TERM to that group, so traps clean up)
bye() {
	local p c
	[ -z "$xpid" ] || kill $xpid 2>/dev/null
	for p in "${!running[@]}"; do
		for c in $(pgrep -P "$p"); do
			kill -TERM -- "-$c" 2>/dev/null || kill "$c" 2>/dev/null
		done
	done
}
trap bye EXIT
trap 'exit 130' INT TERM
if [ $mode != scripts ] && command -v Xvfb >/dev/null; then
	. "$(dirname "$0")/lib/xvfb.sh"
	bt_xvfb -screen 0 1280x800x24 -nolisten tcp
	xpid=$BT_XVFB_PID
	xdisp=$BT_XVFB_DISPLAY
fi

if [ $mode != scripts ]; then
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		echo "== unit $name"
		DISPLAY=$xdisp run 300 "$name" "$t"
		grep -E '^\[  (FAILED|ERROR)|^\[  PASSED' "$log/$name.out"
		count "$name" "$log/$name.out" "$rc"
	done
fi

if [ $# -gt 0 ]; then
	suites=("$@")
elif [ $mode = daemon ]; then
	# The Python suites drive bureaud alone; test_client.py is the Python
	# client's, which test_client.sh starts (alone it skips).
	suites=()
	for t in "$top"/tests/integration/test_*.py; do
		[ "${t##*/}" = test_client.py ] || suites+=("$t")
	done
elif [ $mode = unit ]; then
	suites=()
else
	suites=("$top"/tests/integration/test_* "$top"/tests/e2e/test_*)
fi
# The scripts run BUREAU_TEST_JOBS at a time (2 where there are two
# cores; 1 runs them one after another), the longest first so that the
# last to end is a short one: CI's 45 minutes (issue 39). Every suite
# already runs in a BUREAU_HOME, port window (tests/lib/ports.sh, bt.py),
# Xvfb and network namespace of its own, as two CI runs at once need; a
# suite's output is printed whole when it ends.
ncpu=$(nproc 2>/dev/null || echo 1)
jobs=${BUREAU_TEST_JOBS:-$((ncpu >= 2 ? 2 : 1))}
# weight NAME: about how many seconds the suite takes (CI, stop 44): the
# order only, nothing depends on it being right.
weight() {
	case $1 in
	test_races.sh | test_desktop.sh) echo 300 ;;
	test_lifecycle.sh | test_nothing_lost.sh) echo 180 ;;
	test_libvirt.sh | test_warm.sh | test_limits.sh) echo 155 ;;
	test_rootless.sh) echo 100 ;;
	test_fork.sh | test_mission_control.py) echo 105 ;;
	test_guest_net.sh | test_remote.sh | test_host_package.sh) echo 80 ;;
	test_boot_stall.sh) echo 65 ;;
	test_agent.py | test_client.sh | test_openclaw.sh) echo 55 ;;
	test_desktop_cli.sh) echo 40 ;;
	*) echo 10 ;;
	esac
}
queue=()
for t in "${suites[@]}"; do
	case "$t" in
	*/*) ;;
	*) [ -e "$top/tests/integration/$t" ] && t=$top/tests/integration/$t ||
		t=$top/tests/e2e/$t ;;
	esac
	case "$t" in *.py | *.sh) ;; *) continue ;; esac
	queue+=("$(weight "${t##*/}") $t")
done
# (sort -s: among equals, the order given)
mapfile -t queue < <(printf '%s\n' "${queue[@]}" | sort -s -k1,1nr | cut -d' ' -f2-)

# suite PATH: runs one script (in the background, its status in
# $log/NAME.rc)
suite() {
	local t=$1 name=${1##*/}
	case "$t" in
	*.py) run 900 "$name" "$PY" "$t" "$build" ;;
	# The end-to-end test builds an image the first time: minutes more.
	*/e2e/*.sh) run 3600 "$name" bash "$t" "$build" ;;
	# tests/slow (make test-full): the full image's build and first starts
	*/slow/*.sh) run 7200 "$name" bash "$t" "$build" ;;
	*) run 900 "$name" bash "$t" "$build" ;;
	esac
	echo "$rc" >"$log/$name.rc"
}
# reap: prints and counts the suites that have ended
reap() {
	local p name
	for p in "${!running[@]}"; do
		kill -0 "$p" 2>/dev/null && continue
		wait "$p" 2>/dev/null
		name=${running[$p]}
		unset "running[$p]"
		echo "== $name"
		cat "$log/$name.out"
		count "$name" "$log/$name.out" "$(cat "$log/$name.rc" 2>/dev/null || echo 1)"
	done
}
for t in ${queue[@]+"${queue[@]}"}; do
	while [ "${#running[@]}" -ge "$jobs" ]; do
		wait -n 2>/dev/null
		reap
	done
	suite "$t" &
	running[$!]=${t##*/}
done
while [ "${#running[@]}" -gt 0 ]; do
	wait -n 2>/dev/null
	reap
done

if [ "${#failures[@]}" -gt 0 ]; then
	# Again at the end, where a CI log is read: the unit tests' output was
	# only summed up above.
	for f in "${failures[@]}"; do
		echo "==== $f: the last 60 lines of $log/$f.out"
		tail -n 60 "$log/$f.out"
	done
	echo "failed: ${failures[*]} (logs in $log)"
else
	rm -rf "$log"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
