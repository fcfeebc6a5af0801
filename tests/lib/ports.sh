# tests/lib/ports.sh: a window of 30 TCP ports for this test's desktops,
# claimed against every other bureau test run on the machine. Source it;
# it exports BUREAU_PORTS=LO-HI unless the caller set it.
#
# Windows lie in 20000-31999, below Linux's ephemeral range (32768 on)
# and above tests/lib/bt.py's single ports (10000-19999). Another run (a
# second checkout's CI) creates its desktops in its own BUREAU_HOME, so
# it cannot see ours and could pick the same ports between our create
# and start (seen: "port 7600 is in use" with two CI runs at once): a
# window is claimed with mkdir, which only one process wins, in the
# directory bt.py claims its ports in; a claim older than an hour is
# stale (no test runs that long).
bt_ports_window() {
	local dir=/tmp/bureau-test-ports k lo
	mkdir -p "$dir" && chmod 1777 "$dir" 2>/dev/null
	find "$dir" -maxdepth 1 -name 'w*' -mmin +60 -exec rm -rf {} + 2>/dev/null
	for _ in $(seq 200); do
		k=$(($(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 400))
		lo=$((20000 + k * 30))
		if mkdir "$dir/w$lo" 2>/dev/null; then
			export BUREAU_PORTS=$lo-$((lo + 29))
			return 0
		fi
	done
	echo "ports.sh: no free window of 30 ports in $dir" >&2
	return 1
}
[ -n "${BUREAU_PORTS:-}" ] || bt_ports_window
