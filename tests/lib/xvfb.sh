# tests/lib/xvfb.sh: the one way test scripts start an X server (bt.sh
# sources it; scripts that do not use bt.sh may source this alone).
#
# bt_xvfb [--setsid] [--log FILE] XVFB_ARGS...: start a private Xvfb and
# wait until it accepts connections. The server picks its display itself
# (-displayfd: the first number whose lock file it can create, which is
# atomic) and writes the number down a FIFO once it is ready: no guessing
# from /tmp/.X*-lock, which raced when several runs started at once and
# could hand two of them one display (a display ":N" among XVFB_ARGS is
# taken as it is). Sets BT_XVFB_DISPLAY (":N"; DISPLAY is the caller's to
# set) and BT_XVFB_PID (the caller kills it); returns 1 when Xvfb did not
# start within 60 s.
bt_xvfb() {
	local wrap= log=/dev/null dir n=
	while [ $# -gt 0 ]; do
		case $1 in
		--setsid) wrap=setsid ;;
		--log)
			log=$2
			shift
			;;
		*) break ;;
		esac
		shift
	done
	BT_XVFB_PID= BT_XVFB_DISPLAY=
	dir=$(mktemp -d /tmp/bt-xvfb.XXXXXX) || return 1
	mkfifo "$dir/displayfd" || {
		rm -rf "$dir"
		return 1
	}
	# the FIFO opens on both ends at once; EOF if Xvfb exits early
	$wrap Xvfb -displayfd 3 "$@" 3>"$dir/displayfd" </dev/null >"$log" 2>&1 &
	BT_XVFB_PID=$!
	# (timeout and head, not read -t: dash, which runs tests/fuzz/run.sh,
	# has no read -t, and the fuzzer's Xvfb silently never started)
	n=$(timeout 60 head -n 1 <"$dir/displayfd") || true
	rm -rf "$dir"
	case $n in
	'' | *[!0-9]*)
		kill "$BT_XVFB_PID" 2>/dev/null
		BT_XVFB_PID=
		return 1
		;;
	esac
	BT_XVFB_DISPLAY=:$n
}
