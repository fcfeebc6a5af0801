# tests/lib/deb.sh: e2e_deb, for the end-to-end tests (e2e.sh sources it;
# test_desktop.sh and test_lifecycle.sh too). Needs $build, $top, $home
# and a fail function.
# e2e_deb: $deb, the guest package of this build, made once: suites that
# run at once (tests/run.sh) wait for the one that makes it (two `make
# deb` in one build directory broke each other's files)
e2e_deb() {
	# (under the lock even when it is there: never one half copied)
	if ! flock "$build/.deb.lock" sh -c '
		ls "$2"/bureaud_*.deb >/dev/null 2>&1 ||
			make -s -C "$1" BUILD="$2" deb' sh "$top" "$build" >"$home/deb.log" 2>&1; then
		tail -20 "$home/deb.log"; fail "make deb"; exit 1
	fi
	deb=$(ls "$build"/bureaud_*.deb | tail -n1)
}
