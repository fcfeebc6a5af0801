#!/bin/sh
# tests/fuzz/run.sh FUZZDIR SECONDS [TARGET...]: run each libFuzzer target
# of FUZZDIR (built by `make fuzz-build`) for SECONDS on a fresh copy of its
# seed corpus, one after the other (the machine is shared; FUZZ_JOBS=N
# runs N at once, as CI does with a core each), then print executions and
# the result per target. SECONDS=0 only replays the seed corpus and the
# crash regressions (tests/fuzz/regress/<target>/): quick, for CI. Exits 1
# when any target crashed, leaked, timed out or failed.
set -u
FUZZ=${1:?usage: run.sh FUZZDIR SECONDS [TARGET...]}
SECONDS_EACH=${2:-60}
shift 2 2>/dev/null || shift $#
HERE=$(cd "$(dirname "$0")" && pwd)

targets=${*:-$(for b in "$FUZZ"/fuzz_*; do
	[ -x "$b" ] && [ -f "$b" ] && basename "$b" | sed 's/^fuzz_//'
done)}
[ -n "$targets" ] || { echo "fuzz: no targets in $FUZZ" >&2; exit 1; }

mkdir -p "$FUZZ/logs"
jobs=${FUZZ_JOBS:-1}

# one TARGET: fuzz (or replay) it; its line of the summary goes to
# logs/TARGET.sum
one() {
	t=$1
	bin=$FUZZ/fuzz_$t
	seeds=$HERE/corpus/$t
	regress=$HERE/regress/$t
	log=$FUZZ/logs/$t.log
	dirs=""
	[ -d "$regress" ] && dirs="$regress"
	# -timeout: a request that takes seconds is a bug here (nothing the
	# targets run waits); -rss_limit_mb: far above what any needs.
	common="-timeout=10 -rss_limit_mb=2048 -print_final_stats=1"
	# the protocol's words, so mutations speak it
	[ -f "$HERE/$t.dict" ] && common="$common -dict=$HERE/$t.dict"
	# Exploration runs of dispatch reach the X tools on a private Xvfb
	# (35% more edges: the computer tool's validation); the replay stays
	# without X, deterministic. FUZZ_X=0 turns it off. Their requests may
	# ask to settle for up to 60 s, hence the longer timeout.
	xpid=
	if [ "$t" = dispatch ] && [ "$SECONDS_EACH" != 0 ] &&
	    [ "${FUZZ_X:-1}" != 0 ] && command -v Xvfb >/dev/null; then
		. "$(dirname "$0")/../lib/xvfb.sh"
		bt_xvfb -screen 0 320x240x24 -nolisten tcp
		xpid=$BT_XVFB_PID
		export BUREAU_FUZZ_DISPLAY=$BT_XVFB_DISPLAY
		common="$common -timeout=70"
		echo "fuzz: $t: with the X tools on Xvfb $BT_XVFB_DISPLAY"
	fi
	if [ "$SECONDS_EACH" = 0 ]; then
		echo "fuzz: $t: replaying the corpus and regressions"
		mkdir -p "$FUZZ/artifacts/$t"
		"$bin" $common -runs=0 -artifact_prefix="$FUZZ/artifacts/$t/" \
		    "$seeds" $dirs >"$log" 2>&1
		rc=$?
	else
		work=$FUZZ/corpus/$t
		art=$FUZZ/artifacts/$t
		rm -rf "$work" && mkdir -p "$work" "$art"
		cp "$seeds"/* "$work"/
		echo "fuzz: $t: ${SECONDS_EACH}s"
		nice -n 10 "$bin" $common -max_total_time="$SECONDS_EACH" \
		    -artifact_prefix="$art/" "$work" $dirs >"$log" 2>&1
		rc=$?
	fi
	if [ -n "$xpid" ]; then
		kill "$xpid" 2>/dev/null
		wait "$xpid" 2>/dev/null
		unset BUREAU_FUZZ_DISPLAY
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" |
	    tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | sed 's/cov: //')
	if [ $rc = 0 ]; then
		result=ok
	else
		result="FAILED (exit $rc, see $log)"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)' \
		    "$log" | head -n 5
	fi
	printf '%-10s %12s %8s  %s\n' "$t" "${execs:-?}" "${cov:-?}" \
	    "$result" >"$FUZZ/logs/$t.sum"
}

# FUZZ_JOBS lanes, each running its share of the targets in turn (every
# target takes the same SECONDS, so the lanes end together)
lane=0
while [ $lane -lt "$jobs" ]; do
	mine= i=0
	for t in $targets; do
		[ $((i % jobs)) = $lane ] && mine="$mine $t"
		i=$((i + 1))
	done
	rm -f $(for t in $mine; do echo "$FUZZ/logs/$t.sum"; done)
	(for t in $mine; do one "$t"; done) &
	lane=$((lane + 1))
done
wait

printf '\n%-10s %12s %8s  %s\n' target executions cov result
failed=0
for t in $targets; do
	if [ -s "$FUZZ/logs/$t.sum" ]; then
		cat "$FUZZ/logs/$t.sum"
		grep -q ' FAILED ' "$FUZZ/logs/$t.sum" && failed=1
	else
		printf '%-10s %12s %8s  %s\n' "$t" ? ? "FAILED (no result)"
		failed=1
	fi
done
exit $failed
