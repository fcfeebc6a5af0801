#!/usr/bin/env bash
# tests/run.sh [--unit-only] BUILD_DIR
# Runs the cmocka unit tests, then every tests/integration/test_* and
# tests/e2e/test_* script, and ends with the line "N passed, N failed".
set -u
unit_only=0
if [ "${1:-}" = "--unit-only" ]; then unit_only=1; shift; fi
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
export BUREAU_BUILD=$build
export PYTHONPATH=$top/tests/lib:$top/host-bridge/python${PYTHONPATH:+:$PYTHONPATH}
# Debian's python3: the tests use only its standard library.
PY=/usr/bin/python3
passed=0
failed=0
failures=()
log=$(mktemp -d /tmp/bureau-tests.XXXXXX)

count() { # name, output file
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

# The unit tests that need an X server (keyboard) get a private Xvfb.
xdisp=
if command -v Xvfb >/dev/null; then
	n=200
	while [ -e /tmp/.X$n-lock ] || [ -e /tmp/.X11-unix/X$n ]; do n=$((n + 1)); done
	Xvfb ":$n" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
	xpid=$!
	trap 'kill $xpid 2>/dev/null' EXIT
	for _ in $(seq 50); do [ -e /tmp/.X11-unix/X$n ] && break; sleep 0.1; done
	xdisp=:$n
fi

for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	echo "== unit $name"
	DISPLAY=$xdisp "$t" >"$log/$name.out" 2>&1
	rc=$?
	grep -E '^\[  (FAILED|ERROR)|^\[  PASSED' "$log/$name.out"
	grep -B2 -A8 -E '^\[  FAILED  \] [a-z_]|ERROR' "$log/$name.out" | head -40
	count "$name" "$log/$name.out" "$rc"
done

if [ "$unit_only" = 0 ]; then
	for t in "$top"/tests/integration/test_* "$top"/tests/e2e/test_*; do
		case "$t" in *.py | *.sh) ;; *) continue ;; esac
		name=$(basename "$t")
		echo "== $name"
		case "$t" in
		*.py) timeout 1800 "$PY" "$t" "$build" >"$log/$name.out" 2>&1 ;;
		*.sh) timeout 3600 bash "$t" "$build" >"$log/$name.out" 2>&1 ;;
		*) continue ;;
		esac
		rc=$?
		cat "$log/$name.out"
		count "$name" "$log/$name.out" "$rc"
	done
fi

if [ "${#failures[@]}" -gt 0 ]; then
	echo "failed: ${failures[*]} (logs in $log)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
