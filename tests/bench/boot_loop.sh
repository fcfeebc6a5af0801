#!/bin/sh
# Cold boots of one image in a row, each a new desktop (create, start,
# rm): how long `bureau start` takes to a ready desktop (daemon answers,
# screen drawn), whether a boot hung (start's "made no progress" retry,
# or a failure), with the load average before each.
#
#   tests/bench/boot_loop.sh BUREAU IMAGE_DIR [N] [MEMORY]
#
# BUREAU_PORTS as for any desktop test; BOOT_SHOT=FILE.png saves the
# first screenshot after the first boot (and FILE-60s.png a minute later). Prints one line a boot, then a
# summary. Exits 1 if a boot did not come up.
set -u
bureau=$1 image=$2 n=${3:-10} mem=${4:-2048M}
home=$(mktemp -d /tmp/boot-loop.XXXXXX)
export BUREAU_HOME=$home
# Cold boots, whatever sizes: no warm state made or cloned (create would
# make one for a size the image has none of).
export BUREAU_WARM=0
trap '"$bureau" stop --force b >/dev/null 2>&1; rm -rf "$home"' EXIT INT TERM
fails=0 hangs=0 times=
for i in $(seq 1 "$n"); do
	"$bureau" create b --image "$image" --memory "$mem" --cpus 2 >/dev/null || exit 1
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	t0=$(date +%s.%N)
	out=$("$bureau" start b --accel tcg 2>&1)
	rc=$?
	t=$(echo "$(date +%s.%N) - $t0" | bc)
	retry=$(echo "$out" | grep -c "made no progress")
	hangs=$((hangs + retry))
	if [ $rc = 0 ]; then
		times="$times $t"
		printf 'boot %d: %.1f s (%s), load %s%s\n' "$i" "$t" \
		    "$(echo "$out" | grep -o 'drawn [0-9.]* s after' | head -n1)" "$load" \
		    "$([ "$retry" -gt 0 ] && echo ", hung once and retried")"
	else
		fails=$((fails + 1))
		printf 'boot %d: FAILED after %.1f s, load %s: %s\n' "$i" "$t" "$load" \
		    "$(echo "$out" | tail -n1)"
		cp "$home/b/console.log" "/tmp/boot-loop-fail-$i.log" 2>/dev/null
	fi
	if [ $rc = 0 ] && [ "$i" = 1 ] && [ -n "${BOOT_SHOT:-}" ]; then
		"$bureau" screenshot b -o "$BOOT_SHOT" >/dev/null 2>&1 || echo "no screenshot"
		# and what the session looks like once everything has started
		sleep 60
		"$bureau" screenshot b -o "${BOOT_SHOT%.png}-60s.png" >/dev/null 2>&1 || echo "no screenshot"
	fi
	[ "$retry" -gt 0 ] && cp "$home/b/console.log.1" "/tmp/boot-loop-hang-$i.log" 2>/dev/null
	"$bureau" rm --force b >/dev/null 2>&1
done
echo "$times" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk -v n="$n" -v f=$fails -v h=$hangs '
	{ a[NR] = $1; s += $1 }
	END { printf "%d boots: %d up, %d failed, %d hung (retried); ", n, NR, f, h;
	      if (NR) printf "min %.1f s, median %.1f s, max %.1f s\n", a[1], a[int((NR + 1) / 2)], a[NR]; else print "" }'
[ $fails = 0 ]
