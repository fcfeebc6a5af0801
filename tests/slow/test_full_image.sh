#!/bin/sh
# Slow end-to-end (make test-full; not in make test, whose CI run must stay
# under 45 minutes): the full image, what agents expect inside it.
#
#   tests/slow/test_full_image.sh BUILDDIR
#
# Builds the full image (or takes it from $BUREAU_IMAGES) with its warm
# state, then under TCG: a new full desktop (a clone) is restored and
# drawn (the time from `bureau start` to a drawn screenshot is printed,
# 2.9-4.1 s here; the bound checked is a hang's, 30 s); chromium,
# firefox-esr, xfce4-terminal, code, openclaw, node 24, npm and
# code-server are there, their versions read in the guest; `window
# launch` of Chromium on a page of our own and of `code` each give a
# window (code's shows VS Code on the folder, served by code-server on the
# guest's loopback); the accessibility tool finds the page's button by
# role and name with bounds that a click at their centre presses (the
# page's title changes: read with xprop in the guest), `do` presses
# another, the page's text entry's text is in the tree, and no match is
# an empty list. Last, Mission Control's two pages with a request waiting
# for approval, for docs/ (tests/slow/mc_shots.py). Screenshots of each
# step are kept in $BUREAU_FULL_SHOTS (default: the test's home, removed).
set -u

build=${1:?usage: test_full_image.sh BUILDDIR}
build=$(cd "$build" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bureau=$build/bureau
. "$top/tests/lib/e2e.sh"
e2e_need "full image" --full qemu-system-x86_64 qemu-img mke2fs python3

home=$(mktemp -d /var/tmp/bureau-full.XXXXXX)
export BUREAU_HOME=$home
shots=${BUREAU_FULL_SHOTS:-$home/shots}
mkdir -p "$shots"
trap e2e_rm_home EXIT INT TERM

t0=$(now)
e2e_image full
pass "the full image ($(du -h "$img/base.qcow2" | cut -f1) base.qcow2, $(since $t0) s to build or find, warm state included)"

# ---- a new full desktop: a clone of the warm state, drawn at once -------------
"$bureau" create f --image "$img" >"$home/create.out" 2>&1 ||
	{ cat "$home/create.out"; fail "create f"; exit 1; }
t0=$(now)
if "$bureau" start f --accel tcg --timeout 600 >"$home/start.out" 2>&1 &&
    "$bureau" screenshot f -o "$shots/1-started.png" >/dev/null 2>&1; then
	took=$(since $t0)
	sd=$(convert "$shots/1-started.png" -colorspace gray -format '%[fx:standard_deviation]' info:)
	grep -q '^restored' "$home/start.out" &&
		python3 -c "import sys; sys.exit(0 if $took <= 30 and $sd > 0.03 else 1)" &&
		pass "a new full desktop: start to a drawn screenshot in $took s (restored; stddev $sd): $(head -n1 "$home/start.out")" ||
		fail "a new full desktop: $took s to a screenshot of stddev $sd (want drawn, within 30 s): $(head -n1 "$home/start.out")"
else
	cat "$home/start.out"; tail -20 "$home/f/agent.log"; fail "start f"; exit 1
fi

# ---- the programs ---------------------------------------------------------------
v=$(gsh f 'for p in chromium firefox-esr xfce4-terminal code openclaw node npm code-server; do command -v $p >/dev/null || echo "missing: $p"; done
chromium --version; firefox-esr --version; xfce4-terminal --version | head -n1
echo "openclaw $(openclaw --version)"; echo "node $(node --version)"; echo "npm $(npm --version)"
echo "code-server $(code-server --version 2>/dev/null | grep -v " info " | head -n1)"; code --help')
echo "$v" | sed 's/^/# /'
case $v in
*missing:*) fail "programs missing: $(echo "$v" | grep missing: | tr '\n' ' ')" ;;
*"Chromium "*"Mozilla Firefox"*"xfce4-terminal"*"OpenClaw "[0-9]*"node v24."*"npm "[0-9]*"code-server "[0-9]*"usage: code"*)
	pass "chromium, firefox-esr, xfce4-terminal, code, openclaw, node 24, npm and code-server run" ;;
*) fail "the programs' versions: $v" ;;
esac

# launch ARGV_JSON CLASS: `window launch` with its own wait (120 s, its
# most: the first starts measured 19-31 s under TCG); the new window's id
# when it is of that WM_CLASS (class or instance, case-insensitive)
launch() {
	call f "{\"tool\":\"window\",\"action\":\"launch\",\"argv\":$1,\"wait\":true,\"timeout\":120}" 150 |
	    python3 -c '
import json, sys
r = json.load(sys.stdin)
i = r.get("info") or {}
if r.get("ok") and sys.argv[1] in (i.get("class", "").lower(), i.get("instance", "").lower()):
    print(r["window"])
else:
    print("launch: %s" % json.dumps(r)[:300], file=sys.stderr)' "$2"
}

# ---- Chromium on a page of ours: a window, its accessibility tree -----------------
page='<title>start</title><button onclick="document.title=&quot;clicked&quot;">Submit</button> <button onclick="document.title=&quot;done&quot;">Other</button> <input value="hello entry">'
gsh f "mkdir -p ~/t && printf '%s' '$page' > ~/t/page.html" >/dev/null
t0=$(now)
cw=$(launch '["chromium","--new-window","file:///home/bureau/t/page.html"]' chromium)
if [ -n "$cw" ]; then
	pass "window launch chromium: window $cw in $(since $t0) s"
else
	fail "window launch chromium: no Chromium window in $(since $t0) s"
fi
"$bureau" screenshot f -o "$shots/2-chromium.png" >/dev/null 2>&1
title() { gsh f "xprop -id $1 _NET_WM_NAME" | sed -n 's/.*= "\(.*\)"$/\1/p'; }
# the page's accessible tree appears once the renderer has loaded it
t0=$(now) found=
while [ "$(since $t0 | cut -d. -f1)" -lt 120 ]; do
	found=$(call f '{"tool":"accessibility","action":"find","role":"push button","name":"Submit"}' 60)
	[ "$(echo "$found" | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("nodes") or []))' 2>/dev/null)" = 1 ] && break
	sleep 2
done
nodes=$(echo "$found" | python3 -c 'import json,sys; n=json.load(sys.stdin)["nodes"]; print(len(n), *n[0]["bounds"])' 2>/dev/null)
set -- $nodes
if [ "${1:-0}" = 1 ]; then
	x=$(($2 + $4 / 2)) y=$(($3 + $5 / 2))
	call f "{\"tool\":\"computer\",\"action\":\"left_click\",\"coordinate\":[$x,$y]}" 60 >/dev/null
	sleep 3
	tt=$(title "$cw")
	case $tt in
	clicked*) pass "accessibility find: one push button Submit; a click at its bounds' centre ($x,$y) pressed it (title '$tt')" ;;
	*) fail "a click at Submit's centre ($x,$y): title '$tt'" ;;
	esac
else
	fail "accessibility find push button Submit: $found"
fi
other=$(call f '{"tool":"accessibility","action":"find","role":"push button","name":"Other"}' 60 |
	python3 -c 'import json,sys; n=json.load(sys.stdin).get("nodes") or []; print(n[0]["id"] if len(n) == 1 else "")' 2>/dev/null)
if [ -n "$other" ]; then
	r=$(call f "{\"tool\":\"accessibility\",\"action\":\"do\",\"id\":$other}" 60)
	sleep 3
	tt=$(title "$cw")
	case $tt in
	done*) pass "accessibility do on Other pressed it (title '$tt')" ;;
	*) fail "accessibility do on Other: $r; title '$tt'" ;;
	esac
else
	fail "accessibility find push button Other"
fi
ent=$(call f '{"tool":"accessibility","action":"find","role":"entry"}' 60)
echo "$ent" | grep -q 'hello entry' &&
	pass "the page's text entry's text is in the tree" ||
	fail "no entry with 'hello entry': $(echo "$ent" | head -c 400)"
none=$(call f '{"tool":"accessibility","action":"find","role":"push button","name":"no such button here"}' 60)
[ "$(echo "$none" | json ok)" = true ] && [ "$(echo "$none" | json nodes)" = "[]" ] &&
	pass "no match is an empty list" || fail "find with no match: $none"
t0=$(now)
r=$(call f '{"tool":"accessibility","action":"tree"}' 60)
pass "the accessibility tree of the full desktop with a Chromium page: $(echo "$r" | json count) nodes in $(since $t0) s (bureau call)"

# ---- VS Code: `code`, its own window on code-server ---------------------------------
t0=$(now)
vw=$(launch '["code","/home/bureau/t"]' bureau-code)
if [ -n "$vw" ]; then
	pass "window launch code: window $vw in $(since $t0) s"
else
	fail "window launch code: no bureau-code window in $(since $t0) s"
fi
hz=$(gsh f 'curl -fsS http://127.0.0.1:13337/healthz')
case $hz in
*status*) pass "code-server answers on the guest's loopback ($hz)" ;;
*) fail "code-server's healthz: $hz" ;;
esac
# VS Code's workbench names the folder in its title once it has loaded
t0=$(now) tt=
while [ "$(since $t0 | cut -d. -f1)" -lt 300 ] && [ -n "$vw" ]; do
	tt=$(title "$vw")
	case $tt in *"t - code-server"*) break ;; esac
	sleep 5
done
"$bureau" screenshot f -o "$shots/3-code.png" >/dev/null 2>&1
case $tt in
*"t - code-server"*) pass "VS Code's window shows the folder: '$tt' ($(since $t0) s more)" ;;
*) fail "VS Code's window title: '$tt'" ;;
esac

# ---- Mission Control's pictures for docs/, with a request waiting ------------------
"$bureau" policy f --approve exec >/dev/null 2>&1 || fail "policy f --approve exec"
"$bureau" call --timeout 300 f '{"tool":"bash","command":"cd ~/t && make -j2"}' >/dev/null 2>&1 &
asker=$!
if /usr/bin/python3 "$top/tests/slow/mc_shots.py" "$bureau" f "$shots" >"$home/mc.out" 2>&1; then
	pass "Mission Control's overview and desktop pages with a request waiting: $(tr '\n' ' ' <"$home/mc.out")"
else
	fail "Mission Control's pictures: $(tail -n 5 "$home/mc.out")"
fi
id=$("$bureau" approvals f --json 2>/dev/null | python3 -c 'import json,sys
a=json.load(sys.stdin); print(a[0]["approval"] if a else "")' 2>/dev/null)
[ -n "$id" ] && "$bureau" deny f "$id" >/dev/null 2>&1
wait $asker 2>/dev/null

"$bureau" stop f >/dev/null 2>&1 && pass "stop f" || fail "stop f"
echo "# screenshots in $shots"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
