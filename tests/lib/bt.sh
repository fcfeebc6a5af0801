# tests/lib/bt.sh: what the bash test scripts share. Source it; then
# pass NAME, fail NAME [WHY] and check NAME COMMAND... print the lines
# tests/run.sh counts, and $FAILED counts the failures.
FAILED=0

pass() { echo "PASS $1"; }
fail() {
	echo "FAIL $1${2:+: $2}"
	FAILED=$((FAILED + 1))
}
# check NAME COMMAND...: PASS when the command succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}
# bt_xvfb: a private Xvfb (tests/lib/xvfb.sh).
. "$(dirname "${BASH_SOURCE[0]}")/xvfb.sh"
# bt_kill_child: kill only what is still ours (tests/lib/proc.sh).
. "$(dirname "${BASH_SOURCE[0]}")/proc.sh"
