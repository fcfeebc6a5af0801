#!/bin/bash
# The clients against a real bureaud on a private Xvfb: the C library
# (test_client_c.c, test_client_close.c), the bureau CLI (here) and the
# example agent loop's scripted session. The Python module's own test,
# test_client.py, starts what it needs and runs on its own.
#
#   tests/integration/test_client.sh [BUILD_DIR]
#
# Prints PASS/FAIL/SKIP lines and exits non-zero on any failure. Uses an X
# display from :42-:49 and TCP ports from 7420-7499 (override with
# BUREAU_TEST_DISPLAY / BUREAU_TEST_PORT); KEEP=1 keeps the scratch dir.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd) || exit 2
BUREAUD=$BUILD/bureaud
BUREAU=$BUILD/bureau
for f in "$BUREAUD" "$BUREAU" "$BUILD/libbureau.a" "$BUILD/libbureau.so"; do
	if [ ! -e "$f" ]; then
		echo "FAIL client_setup: $f is missing (run make)"
		exit 1
	fi
done

# A `make SANITIZE=...` build: the C test must be built the same way, and
# Python needs the sanitizer runtimes preloaded to load libbureau.so.
SANFLAGS=
PYPRELOAD=
for v in "$BUILD"/.variant-san-*; do
	[ -e "$v" ] || continue
	san=${v##*/.variant-san-}
	san=",${san//-/,},"
	SANFLAGS="-fsanitize=${san:1:-1} -fno-omit-frame-pointer"
	case $san in *,address,*) PYPRELOAD+=" $(cc -print-file-name=libasan.so)" ;; esac
	case $san in *,undefined,*) PYPRELOAD+=" $(cc -print-file-name=libubsan.so)" ;; esac
	case $san in *,thread,*) PYPRELOAD+=" $(cc -print-file-name=libtsan.so)" ;; esac
done

TMP=$(mktemp -d /tmp/bureau-client-test.XXXXXX)
PIDS=()

cleanup() {
	local p
	bt_kill_child CONT "${PIDS[@]}"
	bt_kill_child TERM "${PIDS[@]}"
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	if [ "${KEEP:-0}" = 1 ]; then
		echo "# kept $TMP"
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

. "$(dirname "$0")/../lib/bt.sh"

# SIGSTOP is not synchronous: wait until every thread of $1 is stopped.
wait_stopped() {
	local i t all
	for i in $(seq 100); do
		all=1
		for t in /proc/"$1"/task/*/stat; do
			[ "$(sed 's/.*) \(.\).*/\1/' "$t")" = T ] || all=0
		done
		[ $all = 1 ] && return 0
		sleep 0.02
	done
	return 1
}

port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# --- a display, a daemon, the peers ------------------------------------------

bt_xvfb --log "$TMP/xvfb.log" ${BUREAU_TEST_DISPLAY:+":$BUREAU_TEST_DISPLAY"} \
    -screen 0 1280x800x24 -nolisten tcp ||
	{ fail client_setup "Xvfb did not start"; exit 1; }
PIDS+=("$BT_XVFB_PID")
export DISPLAY=$BT_XVFB_DISPLAY

PORT=${BUREAU_TEST_PORT:-}
if [ -z "$PORT" ]; then
	for p in $(seq 7420 5 7495); do
		if port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)) &&
		    port_free $((p + 3)); then
			PORT=$p
			break
		fi
	done
fi
[ -n "$PORT" ] || { fail client_setup "no free ports in 7420-7499"; exit 1; }
URL=tcp://127.0.0.1:$PORT            # bureaud; PORT+1 is its PUB socket
MALFORMED_URL=tcp://127.0.0.1:$((PORT + 2))
DEAD_URL=tcp://127.0.0.1:$((PORT + 3)) # nothing listens there


head -c 24 /dev/urandom | base64 | tr -d '\n' >"$TMP/token"
chmod 600 "$TMP/token"
TOKEN=$(cat "$TMP/token")

"$BUREAUD" --display "$DISPLAY" --listen "$URL" --token-file "$TMP/token" \
	>"$TMP/bureaud.log" 2>&1 &
BD_PID=$!
PIDS+=($BD_PID)

nngcat --rep --listen "$MALFORMED_URL" --data 'not json' >/dev/null 2>&1 &
PIDS+=($!)

# A second daemon with a small --max-request: nng drops a larger request
# together with its connection (the close test provokes that).
SMALL_PORT=
for p in $(seq $((PORT + 4)) 2 $((PORT + 40))); do
	if port_free "$p" && port_free $((p + 1)); then
		SMALL_PORT=$p
		break
	fi
done
SMALL_URL=tcp://127.0.0.1:$SMALL_PORT
"$BUREAUD" --display "$DISPLAY" --listen "$SMALL_URL" --token-file "$TMP/token" \
	--max-request 65536 >"$TMP/bureaud-small.log" 2>&1 &
PIDS+=($!)

stdbuf -oL xev -geometry 640x480+0+0 >"$TMP/xev.log" 2>&1 &
XEV_PID=$!
PIDS+=($XEV_PID)

ready=0
for _ in $(seq 50); do
	if "$BUREAU" call --url "$URL" --token-file "$TMP/token" --timeout 1 \
	    '{"tool":"system","action":"ping"}' >/dev/null 2>&1 &&
	    "$BUREAU" call --url "$SMALL_URL" --token-file "$TMP/token" \
	    --timeout 1 '{"tool":"system","action":"ping"}' >/dev/null 2>&1 &&
	    xdotool search --name '^Event Tester$' >/dev/null 2>&1; then
		ready=1
		break
	fi
	sleep 0.1
done
if [ $ready = 0 ]; then
	fail client_setup "bureaud or xev did not come up"
	sed 's/^/# /' "$TMP/bureaud.log"
	exit 1
fi
pass client_setup

export BUREAU_URL=$URL BUREAU_TOKEN=$TOKEN BUREAUD_PID=$BD_PID \
	XEV_LOG=$TMP/xev.log SCREEN_W=1280 SCREEN_H=800 DEAD_URL MALFORMED_URL \
	OUT_DIR=$TMP

# Every PASS/FAIL line of a sub-test is ours; count its failures.
run_sub() {
	local name=$1 out rc
	shift
	out=$("$@" 2>"$TMP/$name.stderr")
	rc=$?
	echo "$out"
	if [ $rc != 0 ] && ! grep -q '^FAIL' <<<"$out"; then
		fail "$name" "exit $rc"
		sed 's/^/# /' "$TMP/$name.stderr"
	fi
	FAILED=$((FAILED + $(grep -c '^FAIL' <<<"$out")))
}

# --- C library ----------------------------------------------------------------

# Built in the scratch dir: tests/run.sh runs every $BUILD/tests/test_* as a
# unit test, and this one needs the daemon started here.
# shellcheck disable=SC2086
if cc -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -O1 -g \
    $SANFLAGS -I"$ROOT" -o "$TMP/test_client_c" \
    "$ROOT/tests/integration/test_client_c.c" "$BUILD/libbureau.a" \
    -ljansson -lsodium -lpthread 2>"$TMP/cc.log"; then
	pass c_compile
	run_sub c_tests timeout 180 "$TMP/test_client_c"
	# The PNG the C client got, decoded by ImageMagick.
	if [ "$(identify -format '%m %w %h' "$TMP/c-shot.png" 2>/dev/null)" = \
	    "PNG 1280 800" ] && convert "$TMP/c-shot.png" rgb:- 2>/dev/null |
	    [ "$(wc -c)" = $((1280 * 800 * 3)) ]; then
		pass c_screenshot_decodes
	else
		fail c_screenshot_decodes "$(identify "$TMP/c-shot.png" 2>&1)"
	fi
	# The shared library links, and exports only the bureau_ API.
	# shellcheck disable=SC2086
	cc -std=gnu11 $SANFLAGS -I"$ROOT" -o "$TMP/test_client_c_so" \
		"$ROOT/tests/integration/test_client_c.c" -L"$BUILD" -lbureau \
		-ljansson -lpthread 2>>"$TMP/cc.log"
	check c_shared_links [ $? = 0 ]
	extra=$(nm -D --defined-only "$BUILD/libbureau.so" |
		awk '$3 !~ /^bureau_/ {print $3}')
	check c_shared_exports [ -z "$extra" ]
else
	fail c_compile "$(cat "$TMP/cc.log")"
fi

# 10,000 clients opened, used and closed, one in ten after a request the
# small daemon dropped, then 20 closed while a late reply arrives (the
# daemon is stopped and continued): bureau_close must never hang (timeout
# 600 is the hang detector; the run takes about a minute on 2 busy cores).
# shellcheck disable=SC2086
if cc -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -O1 -g \
    $SANFLAGS -I"$ROOT" -o "$TMP/test_client_close" \
    "$ROOT/tests/integration/test_client_close.c" "$BUILD/libbureau.a" \
    -ljansson -lsodium -lpthread 2>"$TMP/cc-close.log"; then
	SMALL_URL=$SMALL_URL run_sub c_close timeout 600 \
		"$TMP/test_client_close" "${CLOSE_CYCLES:-10000}"
else
	fail c_close_compile "$(cat "$TMP/cc-close.log")"
fi

# --- CLI --------------------------------------------------------------------

PING='{"tool":"system","action":"ping"}'
cli() { "$BUREAU" "$@" >"$TMP/cli.out" 2>"$TMP/cli.err"; echo $?; }

[ "$(cli call --url "$URL" --token-file "$TMP/token" "$PING")" = 0 ] &&
	grep -q '"ok":true' "$TMP/cli.out" && grep -q '"output":"pong"' "$TMP/cli.out"
check cli_call_ok [ $? = 0 ]

[ "$(cli call --url="$URL" "$PING")" = 0 ] # $BUREAU_TOKEN is exported
check cli_call_env_token [ $? = 0 ]

[ "$(cli call --url "$URL" --token-file "$TMP/token" '{"tool":"no_such"}')" = 1 ] &&
	grep -q '"code":"unknown_tool"' "$TMP/cli.out"
check cli_call_daemon_error [ $? = 0 ]

echo wrong >"$TMP/wrong-token"
[ "$(cli call --url "$URL" --token-file "$TMP/wrong-token" "$PING")" = 1 ] &&
	grep -q '"code":"unauthorized"' "$TMP/cli.out"
check cli_call_unauthorized [ $? = 0 ]

echo "$PING" | "$BUREAU" call --url "$URL" - >"$TMP/cli.out" 2>&1 &&
	grep -q '"ok":true' "$TMP/cli.out"
check cli_call_stdin [ $? = 0 ]

ok=1
for args in "" "--url" "--bogus $PING" "{not-json" "a b c" "NAME notjson"; do
	# shellcheck disable=SC2086
	[ "$(cli call $args)" = 2 ] || { ok=0; echo "# call $args: not 2"; }
done
[ "$(cli call --url "$URL" '{"tool":')" = 2 ] || ok=0
[ "$(cli screenshot --url "$URL")" = 2 ] || ok=0 # no -o
check cli_usage_errors [ $ok = 1 ]

t0=$(date +%s%N)
[ "$(cli call --url "$DEAD_URL" --timeout 1 "$PING")" = 3 ] &&
	grep -q "no connection" "$TMP/cli.err" && [ ! -s "$TMP/cli.out" ]
check cli_call_transport [ $? = 0 ]
dt=$((($(date +%s%N) - t0) / 1000000))
check cli_call_transport_timeout [ $dt -ge 900 -a $dt -lt 2500 ]

[ "$(cli call --url "$MALFORMED_URL" --timeout 2 "$PING")" = 3 ] &&
	grep -q "malformed reply" "$TMP/cli.err"
check cli_call_malformed [ $? = 0 ]

# A desktop NAME resolves through $BUREAU_HOME/NAME/{endpoint,token}.
mkdir -p "$TMP/home/demo1"
echo "$URL" >"$TMP/home/demo1/endpoint"
cp "$TMP/token" "$TMP/home/demo1/token"
[ "$(BUREAU_HOME=$TMP/home BUREAU_TOKEN= cli call demo1 "$PING")" = 0 ]
check cli_call_name [ $? = 0 ]
[ "$(BUREAU_HOME=$TMP/home cli call nosuch "$PING")" = 2 ] &&
	grep -q "no desktop 'nosuch'" "$TMP/cli.err"
check cli_call_unknown_name [ $? = 0 ]

# Without --token-file or $BUREAU_TOKEN the token comes from where the
# README keeps it: $XDG_CONFIG_HOME/bureau/token, else ~/.config/bureau.
mkdir -p "$TMP/fakehome/.config/bureau" "$TMP/xdg/bureau"
cp "$TMP/token" "$TMP/fakehome/.config/bureau/token"
cp "$TMP/token" "$TMP/xdg/bureau/token"
[ "$(unset BUREAU_TOKEN XDG_CONFIG_HOME; HOME=$TMP/fakehome cli call --url "$URL" "$PING")" = 0 ] &&
	[ "$(unset BUREAU_TOKEN XDG_CONFIG_HOME; HOME=$TMP/fakehome cli screenshot --url "$URL" -o "$TMP/cfg.png")" = 0 ] &&
	[ "$(identify -format '%m' "$TMP/cfg.png")" = PNG ] &&
	[ "$(unset BUREAU_TOKEN; XDG_CONFIG_HOME=$TMP/xdg HOME=/nonexistent cli call --url "$URL" "$PING")" = 0 ]
check cli_token_from_config [ $? = 0 ]
# None anywhere: the daemon refuses, and the CLI says where it looked.
[ "$(unset BUREAU_TOKEN XDG_CONFIG_HOME; HOME=$TMP/nohome cli call --url "$URL" "$PING")" = 1 ] &&
	grep -q '"code":"unauthorized"' "$TMP/cli.out" &&
	grep -qF "sent no token: no --token-file, no \$BUREAU_TOKEN, no '$TMP/nohome/.config/bureau/token'" "$TMP/cli.err" &&
	[ "$(unset BUREAU_TOKEN XDG_CONFIG_HOME; HOME=$TMP/nohome cli screenshot --url "$URL" -o "$TMP/no.png")" = 1 ] &&
	grep -qF "no '$TMP/nohome/.config/bureau/token'" "$TMP/cli.err" && [ ! -e "$TMP/no.png" ]
check cli_token_missing_says_where [ $? = 0 ]

mkdir -p "$TMP/shots"
[ "$(cli screenshot --url "$URL" --token-file "$TMP/token" -o "$TMP/shots/s.png")" = 0 ] &&
	grep -q "^$TMP/shots/s.png: 1280x800 image/png, [0-9]* bytes, frame [0-9]*$" "$TMP/cli.out" &&
	[ "$(identify -format '%m %w %h' "$TMP/shots/s.png")" = "PNG 1280 800" ] &&
	[ "$(ls "$TMP/shots")" = s.png ] &&
	[ "$(stat -c %s "$TMP/shots/s.png")" = "$(sed 's/.*, \([0-9]*\) bytes.*/\1/' "$TMP/cli.out")" ]
check cli_screenshot [ $? = 0 ]

[ "$(BUREAU_HOME=$TMP/home BUREAU_TOKEN= cli screenshot demo1 -o -)" = 0 ] &&
	[ "$(identify -format '%m %w %h' "$TMP/cli.out")" = "PNG 1280 800" ] &&
	grep -q "^stdout: 1280x800" "$TMP/cli.err"
check cli_screenshot_name_stdout [ $? = 0 ]

[ "$(cli screenshot --url "$URL" --token-file "$TMP/token" -o /nonexistent/dir/s.png)" = 1 ] &&
	grep -q "cannot write '/nonexistent/dir/s.png'" "$TMP/cli.err"
check cli_screenshot_unwritable [ $? = 0 ]

[ "$(cli help)" = 0 ] && grep -q "bureau call" "$TMP/cli.out" &&
	[ "$(cli --help)" = 0 ] && [ "$(cli --version)" = 0 ] &&
	grep -q "^bureau [0-9]" "$TMP/cli.out" && [ "$(cli)" = 2 ] &&
	[ "$(cli frobnicate)" = 2 ] && grep -q "unknown command 'frobnicate'" "$TMP/cli.err"
check cli_help_version_unknown [ $? = 0 ]

# Guest console text reaches the terminal inert: a log that retitles the
# window (OSC 0), rings the bell and clears the screen, a C1 CSI (U+009B),
# a byte that is not UTF-8, a lone CR; kept: UTF-8 text, CRLF, tabs.
mkdir -p "$TMP/home/evil"
echo '{"image": "none", "memory": 1, "cpus": 1, "port": 7300}' \
	>"$TMP/home/evil/desktop.json"
printf 'boot ok\r\n\033]0;pwned\007\033[2J\tGr\303\274\303\237e \302\233X \377 a\rb\n' \
	>"$TMP/home/evil/console.log"
# no ESC, BEL, C1 or invalid byte, no lone CR
raw_free() {
	! LC_ALL=C grep -q $'[\x01-\x08\x0b\x0c\x0e-\x1f\x7f\xff]' "$1" &&
		! LC_ALL=C grep -q $'\xc2[\x80-\x9f]' "$1" &&
		! LC_ALL=C grep -q $'\r[^~]' <(tr '\n' '~' <"$1")
}
# inert, and every one shown
inert() {
	raw_free "$1" && grep -qF '\x1b]0;pwned\x07\x1b[2J' "$1" &&
		grep -qF $'\tGr\u00fc\u00dfe \\u009bX \ufffd a\\x0db' "$1" &&
		grep -qF $'boot ok\r' "$1"
}
[ "$(BUREAU_HOME=$TMP/home cli console evil)" = 0 ] && inert "$TMP/cli.out" &&
	[ "$(wc -l <"$TMP/cli.out")" = 2 ]
check cli_console_inert [ $? = 0 ]
[ "$(BUREAU_HOME=$TMP/home cli console -n 1 evil)" = 0 ] &&
	raw_free "$TMP/cli.out" && [ "$(wc -l <"$TMP/cli.out")" = 1 ] &&
	grep -qF '\x1b]0;pwned\x07\x1b[2J' "$TMP/cli.out"
check cli_console_inert_lines [ $? = 0 ]
# -f follows through a pipe from tail(1); timeout ends it
BUREAU_HOME=$TMP/home timeout 2 "$BUREAU" console -f evil >"$TMP/cli.out" 2>&1
[ $? = 124 ] && inert "$TMP/cli.out"
check cli_console_follow_inert [ $? = 0 ]
# The filter itself, fed in every split (tail's pipe cuts anywhere).
# shellcheck disable=SC2086
if cc -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -O1 -g \
    $SANFLAGS -I"$ROOT" -o "$TMP/test_client_safeprint" \
    "$ROOT/tests/integration/test_client_safeprint.c" \
    "$ROOT/host-bridge/cli/safeprint.c" "$ROOT/common/utf8.c" \
    2>"$TMP/cc-sp.log"; then
	run_sub c_safeprint "$TMP/test_client_safeprint"
else
	fail c_safeprint_compile "$(cat "$TMP/cc-sp.log")"
fi

# The daemon's text in a reply: a C1 control (legal raw in a JSON string)
# goes out as the same JSON escape, so the output is the same JSON value.
"$BUREAU" call --url "$URL" --token-file "$TMP/token" \
	'{"tool":"no_such\u009b\u001b"}' >"$TMP/cli.out" 2>"$TMP/cli.err"
! LC_ALL=C grep -q $'\xc2[\x80-\x9f]\|\x1b' "$TMP/cli.out" &&
	/usr/bin/python3 -c 'import json,sys; r = json.load(open(sys.argv[1]));
assert "no_such\u009b\u001b" in r["error"]["message"], r' "$TMP/cli.out"
check cli_call_reply_inert [ $? = 0 ]

# A stopped daemon: the kernel accepts the TCP connection but nng's
# handshake never completes, so a fresh client reports no connection (a
# client connected before gets "no reply": see the C and Python tests).
kill -STOP "$BD_PID"
wait_stopped "$BD_PID"
[ "$(cli call --url "$URL" --timeout 1 "$PING")" = 3 ] &&
	grep -q "no connection to '$URL' within 1.0 s" "$TMP/cli.err"
rc=$?
kill -CONT "$BD_PID"
check cli_call_no_reply [ $rc = 0 ]

# --- Python -----------------------------------------------------------------

# test_client.py sets up its own daemon and witnesses and tests/run.sh runs
# it on its own; here only the example agent loop runs under Python.
# Debian's python3 when there is one (as tests/run.sh): standard library only.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
# Python itself is not leak-clean: leak checks stay with the C test.
PYENV=(env BUREAU_LIB="$BUILD/libbureau.so")
[ -n "$PYPRELOAD" ] && PYENV+=(LD_PRELOAD="${PYPRELOAD# }" ASAN_OPTIONS=detect_leaks=0)

# --- the example agent loop, scripted --------------------------------------

kill "$XEV_PID" 2>/dev/null
mkdir -p "$TMP/term"
(cd "$TMP/term" && exec env LANG=C.UTF-8 LC_ALL=C.UTF-8 HISTFILE=/dev/null \
	xterm -geometry 100x30+0+0 -e bash --norc --noprofile -i) \
	>/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do
	xdotool search --class xterm >/dev/null 2>&1 && break
	sleep 0.1
done
sleep 0.5 # the shell's prompt
"${PYENV[@]}" timeout 120 "$PY" \
	"$ROOT/host-bridge/python/examples/agent_loop.py" --url "$URL" \
	--token-file "$TMP/token" \
	--script "$ROOT/host-bridge/python/examples/demo_script.json" \
	--out "$TMP/demo" >"$TMP/demo.log" 2>&1
check agent_loop_runs [ $? = 0 ]
sed 's/^/# /' "$TMP/demo.log"
n=0
for f in "$TMP"/demo/*.png; do
	[ "$(identify -format '%m %w %h' "$f" 2>/dev/null)" = "PNG 1280 800" ] &&
		n=$((n + 1))
done
check agent_loop_screenshots [ $n = 5 ]
"$PY" - "$TMP/demo/transcript.json" "$ROOT/host-bridge/python/examples/demo_script.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
script = json.load(open(sys.argv[2]))
results = [b for b in t if b["type"] == "tool_result"]
assert len(results) == len(script), len(results)
for use, res in zip(script, results):
    assert res["tool_use_id"] == use["id"] and not res.get("is_error"), res
    imgs = [c for c in res["content"] if c["type"] == "image"]
    assert len(imgs) == 1 and imgs[0]["source"]["media_type"] == "image/png"
EOF
check agent_loop_transcript [ $? = 0 ]
# The typed command ran in the terminal: its output file holds the exact
# non-ASCII text.
for _ in $(seq 30); do
	[ -s "$TMP/term/bureau-demo.txt" ] && break
	sleep 0.1
done
want='Grüße, señor Ñandú — 日本語 ✓'
got=$(cat "$TMP/term/bureau-demo.txt" 2>/dev/null)
check agent_loop_typed_unicode [ "$got" = "$want" ]
[ "$got" = "$want" ] || echo "# got '$got'"

# The other mappings: the editor tool, bash when the daemon has it, and
# errors coming back as is_error tool_results rather than exceptions.
cat >"$TMP/map.json" <<EOF
[{"type": "tool_use", "id": "t1", "name": "str_replace_based_edit_tool",
  "input": {"command": "create", "path": "$TMP/edited.txt",
            "file_text": "alpha\\nbeta\\n"}},
 {"type": "tool_use", "id": "t2", "name": "str_replace_based_edit_tool",
  "input": {"command": "str_replace", "path": "$TMP/edited.txt",
            "old_str": "beta", "new_str": "gamma ✓"}},
 {"type": "tool_use", "id": "t3", "name": "computer",
  "input": {"action": "left_click", "coordinate": [99999, 1]}},
 {"type": "tool_use", "id": "t4", "name": "no_such_tool", "input": {}},
 {"type": "tool_use", "id": "t5", "name": "bash",
  "input": {"command": "echo mapped; exit 2"}}]
EOF
"${PYENV[@]}" timeout 60 "$PY" "$ROOT/host-bridge/python/examples/agent_loop.py" \
	--url "$URL" --token-file "$TMP/token" --script "$TMP/map.json" \
	--out "$TMP/map" >"$TMP/map.log" 2>&1
rc=$?
"$PY" - "$TMP/map/transcript.json" "$TMP/edited.txt" "$rc" <<'EOF'
import json, sys
t = [b for b in json.load(open(sys.argv[1])) if b["type"] == "tool_result"]
r = {b["tool_use_id"]: b for b in t}
assert open(sys.argv[2], encoding="utf-8").read() == "alpha\ngamma ✓\n"
assert not r["t1"].get("is_error") and not r["t2"].get("is_error"), r
assert r["t3"]["is_error"] and "out_of_bounds" in r["t3"]["content"][0]["text"]
assert r["t4"]["is_error"] and "unknown tool" in r["t4"]["content"][0]["text"]
bash = r["t5"]["content"][0]["text"]
assert (not r["t5"].get("is_error") and "mapped" in bash
        and "[exit code 2]" in bash) or (
        r["t5"].get("is_error") and "unknown_tool" in bash), r["t5"]
assert sys.argv[3] == "1"  # the script had errors
EOF
check agent_loop_mapping [ $? = 0 ]

# The daemon survived all of it.
[ "$(cli call --url "$URL" --token-file "$TMP/token" "$PING")" = 0 ]
check bureaud_still_serving [ $? = 0 ]

if [ $FAILED -gt 0 ]; then
	echo "# $FAILED failed; bureaud log:"
	tail -20 "$TMP/bureaud.log" | sed 's/^/# /'
	exit 1
fi
exit 0
