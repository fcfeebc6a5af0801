#!/bin/bash
# The OpenClaw plugin (host-bridge/openclaw) for real:
#   1. its node --test unit tests (a fake api, the real bureaud on Xvfb);
#   2. the published openclaw CLI: install the plugin (--link) into a
#      scratch OpenClaw home, `plugins inspect --runtime --json`, then
#      `gateway run` on loopback with token auth and no model, and the tools
#      called through POST /tools/invoke, effects seen by xevlog.
#
#   tests/integration/test_openclaw.sh [BUILD_DIR]
#
# Prints PASS/FAIL lines (SKIP only when `make openclaw-deps` has not been
# run) and exits non-zero on any failure. KEEP=1 keeps the scratch dir.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd) || exit 2
PLUGIN=$ROOT/host-bridge/openclaw
NODE=$ROOT/.deps/node/node_modules/.bin/node
OPENCLAW=$ROOT/.deps/openclaw/node_modules/openclaw/openclaw.mjs

if [ ! -x "$NODE" ] || [ ! -f "$OPENCLAW" ] || [ ! -d "$PLUGIN/node_modules/koffi" ] || [ ! -e "$PLUGIN/node_modules/openclaw/package.json" ]; then
	echo "SKIP openclaw: Node 24 and openclaw are not installed (run make openclaw-deps)"
	exit 0
fi
for f in "$BUILD/bureaud" "$BUILD/bureau" "$BUILD/libbureau.so" "$BUILD/tests/xevlog"; do
	if [ ! -e "$f" ]; then
		echo "FAIL openclaw_setup: $f is missing (run make)"
		exit 1
	fi
done
export PATH=$ROOT/.deps/node/node_modules/.bin:$PATH
export BUREAU_BUILD=$BUILD BUREAU_LIB=$BUILD/libbureau.so BUREAU_CLI=$BUILD/bureau

TMP=$(mktemp -d /tmp/bureau-openclaw-test.XXXXXX)
PIDS=()
GW_PID=

cleanup() {
	local p
	if [ -n "$GW_PID" ] && kill -0 "$GW_PID" 2>/dev/null; then
		kill "$GW_PID" 2>/dev/null
		sleep 1
		kill -9 "$GW_PID" 2>/dev/null
	fi
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
free_port() { # like tests/lib/bt.py: random, P and P+1 free
	/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import bt; print(bt.free_port())' \
		"$ROOT/tests/lib"
}

# --- 1. unit tests (node --test) ---------------------------------------------

# TAP: the tests sit one level down (in describe blocks); a skipped one says
# "# SKIP reason".
(cd "$PLUGIN" && timeout 600 "$NODE" --test --test-reporter=tap test/*.test.js) >"$TMP/unit.tap" 2>&1
rc=$?
awk '
/^    ok [0-9]+ - / {
	line = $0; sub(/^    ok [0-9]+ - /, "", line)
	if (line ~ / # SKIP/) { r = line; sub(/.* # SKIP */, "", r); sub(/ # SKIP.*/, "", line); print "SKIP node: " line " (" r ")" }
	else print "PASS node: " line
}
/^    not ok [0-9]+ - / { line = $0; sub(/^    not ok [0-9]+ - /, "", line); print "FAIL node: " line }
' "$TMP/unit.tap" | tee "$TMP/unit.lines"
nfail=$(grep -c '^FAIL' "$TMP/unit.lines")
npass=$(grep -c '^PASS' "$TMP/unit.lines")
FAILED=$((FAILED + nfail))
if [ "$nfail" -gt 0 ] || [ $rc != 0 ] || [ "$npass" = 0 ]; then
	[ "$nfail" -gt 0 ] || fail node_unit_tests "node --test exit $rc, $npass passed"
	sed 's/^/# /' "$TMP/unit.tap" | grep -v '^# *ok ' | head -150
fi

# --- 2. the real OpenClaw: a display, a daemon, xevlog --------------------------

bt_xvfb --setsid --log "$TMP/xvfb.log" -screen 0 1280x800x24 -nolisten tcp \
    -noreset || { fail openclaw_setup "Xvfb did not start"; exit 1; }
PIDS+=("$BT_XVFB_PID")
export DISPLAY=$BT_XVFB_DISPLAY

PORT=$(free_port)
URL=tcp://127.0.0.1:$PORT
head -c 24 /dev/urandom | base64 | tr -d '\n/+' >"$TMP/token"
chmod 600 "$TMP/token"
setsid "$BUILD/bureaud" --display "$DISPLAY" --listen "$URL" --token-file "$TMP/token" \
	--scale none --no-cursor >"$TMP/bureaud.log" 2>&1 &
PIDS+=($!)
setsid "$BUILD/tests/xevlog" -geometry 400x300+100+100 -title evlog >"$TMP/xevlog.log" 2>&1 &
PIDS+=($!)
ready=0
for _ in $(seq 100); do
	if "$BUILD/bureau" call --url "$URL" --token-file "$TMP/token" --timeout 1 \
	    '{"tool":"system","action":"ping"}' >/dev/null 2>&1 && grep -q '^ready' "$TMP/xevlog.log"; then
		ready=1
		break
	fi
	sleep 0.1
done
if [ $ready = 0 ]; then
	fail openclaw_setup "bureaud or xevlog did not come up"
	sed 's/^/# /' "$TMP/bureaud.log"
	exit 1
fi
HAS_BASH=0
"$BUILD/bureau" call --url "$URL" --token-file "$TMP/token" '{"tool":"system","action":"info"}' |
	grep -q '"bash":\[' && HAS_BASH=1

# A scratch OpenClaw home: nothing of the machine's own is read or written.
OCH=$TMP/oc
mkdir -p "$OCH/tmp"
export HOME=$OCH OPENCLAW_HOME=$OCH OPENCLAW_STATE_DIR=$OCH/.openclaw \
	OPENCLAW_CONFIG_PATH=$OCH/.openclaw/openclaw.json TMPDIR=$OCH/tmp
unset OPENCLAW_GATEWAY_TOKEN OPENCLAW_GATEWAY_PASSWORD OPENCLAW_PROFILE
oc() { timeout 300 "$NODE" "$OPENCLAW" "$@"; }

# --link keeps the tree's copy; --force answers the local-source warning
# (noninteractive); --accept-capabilities records capability consent.
oc plugins install --link "$PLUGIN" --force --accept-capabilities >"$TMP/install.log" 2>&1
rc=$?
check openclaw_plugins_install [ $rc = 0 ]
[ $rc = 0 ] || sed 's/^/# /' "$TMP/install.log"

# The plugin's config, and a local Gateway.
/usr/bin/python3 - "$OPENCLAW_CONFIG_PATH" "$URL" "$TMP/token" <<'EOF'
import json, sys
path, url, token_file = sys.argv[1:]
try:
    c = json.load(open(path))
except FileNotFoundError:
    c = {}
c.setdefault("gateway", {})["mode"] = "local"
e = c.setdefault("plugins", {}).setdefault("entries", {}).setdefault("bureau", {})
e["enabled"] = True
e["config"] = {"url": url, "tokenFile": token_file, "timeout": 20}
json.dump(c, open(path, "w"), indent=2)
EOF

oc plugins inspect bureau --runtime --json >"$TMP/inspect.json" 2>"$TMP/inspect.err"
rc=$?
/usr/bin/python3 - "$TMP/inspect.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["plugin"]
want = ["bureau_accessibility", "bureau_bash", "bureau_computer", "bureau_desktop", "bureau_edit", "bureau_files"]
assert p["id"] == "bureau", p["id"]
assert p["status"] == "loaded" and p["enabled"] is True and p.get("imported") is True, p["status"]
assert sorted(p["toolNames"]) == want, p["toolNames"]
assert sorted(n for t in d["tools"] for n in t["names"]) == want, d["tools"]
assert not d["diagnostics"], d["diagnostics"]
EOF
check openclaw_inspect_runtime [ $? = 0 -a $rc = 0 ]

# --- the Gateway, no model, token auth, loopback ----------------------------

GPORT=$(free_port)
GTOKEN=$(head -c 24 /dev/urandom | base64 | tr -d '\n/+')
setsid "$NODE" "$OPENCLAW" gateway run --port "$GPORT" --bind loopback --auth token \
	--token "$GTOKEN" >"$TMP/gateway.log" 2>&1 &
GW_WRAPPER=$!
PIDS+=($GW_WRAPPER)

invoke() { # JSON body -> $TMP/resp.json; prints the HTTP status
	curl -sS -m 60 -o "$TMP/resp.json" -w '%{http_code}' \
		-H "Authorization: Bearer $GTOKEN" -H 'Content-Type: application/json' \
		-X POST "http://127.0.0.1:$GPORT/tools/invoke" -d "$1" 2>>"$TMP/curl.log"
}

up=0
for _ in $(seq 120); do
	# The process that listens on the port is the Gateway itself (its
	# title is openclaw-gateway); the wrapper's pid may not be it.
	GW_PID=$(ss -ltnpH "sport = :$GPORT" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
	if [ -n "$GW_PID" ] && [ "$(invoke '{"tool":"bureau_computer","args":{"action":"cursor_position"}}')" = 200 ]; then
		up=1
		break
	fi
	kill -0 "$GW_WRAPPER" 2>/dev/null || break
	sleep 1
done
if [ $up = 0 ]; then
	fail openclaw_gateway_run "no answer on 127.0.0.1:$GPORT"
	tail -30 "$TMP/gateway.log" | sed 's/^/# /'
	exit 1
fi
pass openclaw_gateway_run
echo "# gateway pid $GW_PID ($(cat /proc/"$GW_PID"/comm 2>/dev/null)), wrapper $GW_WRAPPER"

# No token: refused.
code=$(curl -sS -m 20 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
	-X POST "http://127.0.0.1:$GPORT/tools/invoke" \
	-d '{"tool":"bureau_computer","args":{"action":"screenshot"}}')
check openclaw_invoke_needs_token [ "$code" = 401 ]

code=$(invoke '{"tool":"bureau_computer","args":{"action":"screenshot"}}')
/usr/bin/python3 - "$TMP/resp.json" "$TMP/shot.png" <<'EOF'
import base64, json, re, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True, d
c = d["result"]["content"]
assert [b["type"] for b in c] == ["text", "image"], c
assert re.fullmatch(r"1280x800 image/png, frame \d+", c[0]["text"]), c[0]
assert c[1]["mimeType"] == "image/png"
open(sys.argv[2], "wb").write(base64.b64decode(c[1]["data"]))
EOF
ok=$?
[ $ok = 0 ] && [ "$code" = 200 ] &&
	[ "$(identify -format '%m %w %h' "$TMP/shot.png" 2>/dev/null)" = "PNG 1280 800" ]
check openclaw_invoke_screenshot [ $? = 0 ]

before=$(wc -l <"$TMP/xevlog.log")
code=$(invoke '{"tool":"bureau_computer","args":{"action":"left_click","coordinate":[173,219]}}')
for _ in $(seq 50); do
	tail -n +$((before + 1)) "$TMP/xevlog.log" | grep -q '^button_release button=1' && break
	sleep 0.1
done
presses=$(tail -n +$((before + 1)) "$TMP/xevlog.log" | grep '^button_press')
[ "$code" = 200 ] && [ "$(grep -c . <<<"$presses")" = 1 ] &&
	grep -q '^button_press button=1 .*root_x=173 root_y=219 ' <<<"$presses" &&
	grep -q '"type":"image"' "$TMP/resp.json"
check openclaw_invoke_click_lands [ $? = 0 ]
[ "$code" = 200 ] || head -c 400 "$TMP/resp.json" | sed 's/^/# /'
echo "# xevlog saw: $presses"

# A daemon error comes back as a failed call, not a success.
code=$(invoke '{"tool":"bureau_computer","args":{"action":"left_click","coordinate":[5000,10]}}')
[ "$code" != 200 ] && grep -q '"ok":false' "$TMP/resp.json"
check openclaw_invoke_error [ $? = 0 ]
echo "# out-of-bounds click: HTTP $code $(head -c 300 "$TMP/resp.json")"

# The editor through the Gateway: the file is on disk.
F=$TMP/edited.txt
code=$(invoke "{\"tool\":\"bureau_edit\",\"args\":{\"command\":\"create\",\"path\":\"$F\",\"file_text\":\"made through openclaw\\n\"}}")
check openclaw_invoke_edit [ "$code" = 200 -a "$(cat "$F" 2>/dev/null)" = "made through openclaw" ]

if [ $HAS_BASH = 1 ]; then
	code=$(invoke "{\"tool\":\"bureau_bash\",\"args\":{\"command\":\"echo oc-\$((6*7)) > $TMP/bash.out; cat $TMP/bash.out\"}}")
	[ "$code" = 200 ] && grep -q 'oc-42' "$TMP/resp.json" && [ "$(cat "$TMP/bash.out" 2>/dev/null)" = oc-42 ]
	check openclaw_invoke_bash [ $? = 0 ]
else
	echo "SKIP openclaw_invoke_bash: this bureaud has no bash tool (system info lists no 'bash' capability)"
fi

# --- stop the Gateway process itself ------------------------------------------

# Its children (spawn broker, workers) are re-parented once it dies: note them now.
KIDS=$(ps -eo pid=,ppid= | awk -v p="$GW_PID" '$2 == p {print $1}')
kill "$GW_PID" 2>/dev/null
gone=0
for _ in $(seq 300); do
	if ! kill -0 "$GW_PID" 2>/dev/null || [ "$(cat /proc/"$GW_PID"/stat 2>/dev/null | awk '{print $3}')" = Z ]; then
		gone=1
		break
	fi
	sleep 0.1
done
[ $gone = 1 ] || kill -9 "$GW_PID" 2>/dev/null
sleep 0.5
listener=$(ss -ltnpH "sport = :$GPORT" 2>/dev/null)
check openclaw_gateway_stopped [ $gone = 1 -a -z "$listener" ]
# Nothing it started lives on.
left=
for _ in $(seq 50); do
	left=
	for k in $KIDS; do
		[ -d /proc/"$k" ] && [ "$(awk '{print $3}' /proc/"$k"/stat 2>/dev/null)" != Z ] &&
			left+=" $k:$(cat /proc/"$k"/comm 2>/dev/null)"
	done
	[ -z "$left" ] && break
	sleep 0.1
done
check openclaw_gateway_children_gone [ -z "$left" ]
[ -z "$left" ] || echo "# left: $left"
GW_PID=

if [ $FAILED -gt 0 ]; then
	echo "# $FAILED failed; gateway log tail:"
	tail -20 "$TMP/gateway.log" | sed 's/^/# /'
	exit 1
fi
exit 0
