# tests/lib/proc.sh: kill only what is still ours. Source it.
#
# bash reaps a background job the moment it exits, so its pid number is
# free at once, and on a machine where other test runs start processes by
# the thousand (two CI runs at once) a cleanup's `kill $pid` of a job that
# ended long ago can hit another run's process: a soak's bash session got
# a SIGTERM from nowhere ("Terminated", exit 143) in one CI run.
#
# bt_kill_child SIG PID...: send SIG to each PID that is still a child of
# this shell, to its whole process group when it leads one.
bt_kill_child() {
	local sig=$1 p st ppid pgid rest
	shift
	for p in "$@"; do
		case $p in '' | *[!0-9]*) continue ;; esac
		st=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		# after "PID (COMM) ": STATE PPID PGRP ...
		read -r _ ppid pgid rest <<EOS
${st##*) }
EOS
		[ "$ppid" = "$$" ] || continue
		# it may have ended since its stat was read (an xterm whose
		# Xvfb was killed just before): under set -e, in an EXIT
		# trap, a failed kill would end the script with status 1
		if [ "$pgid" = "$p" ]; then
			kill "-$sig" -- "-$p" 2>/dev/null || true
		else
			kill "-$sig" "$p" 2>/dev/null || true
		fi
	done
	return 0
}
