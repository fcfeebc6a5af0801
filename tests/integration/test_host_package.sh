#!/usr/bin/env bash
# The host package (packaging/host, `make host-deb`): it builds, lintian
# finds neither error nor warning (make host-deb fails on either), it holds
# the CLI, its man page, libbureau, the Python module, Mission Control's
# page and the two systemd units, and `systemd-analyze verify` passes the
# units (in a root made of the package and this machine's systemd units;
# a unit with a mistake is refused, so the check can fail). The packaged
# bureau runs, and the units' commands do what they say on an empty
# BUREAU_HOME. Prints PASS/FAIL lines, as tests/run.sh counts.
#
#   test_host_package.sh BUILD_DIR
set -u
build=${1:?usage: test_host_package.sh BUILD_DIR}
top=$(cd "$(dirname "$0")/../.." && pwd)
case $build in /*) ;; *) build=$top/$build ;; esac
fails=0 passes=0
pass() { echo "PASS $*"; passes=$((passes + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
skip() { echo "SKIP $*"; exit 0; }

for t in dpkg-buildpackage lintian systemd-analyze; do
	command -v $t >/dev/null 2>&1 || { fail "'$t' not installed (make deps)"; echo "$passes passed, $fails failed"; exit 1; }
done
tmp=$(mktemp -d /tmp/bureau-hostdeb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

if make -C "$top" --no-print-directory BUILD="$build" host-deb >"$tmp/build.log" 2>&1; then
	pass "make host-deb: built, lintian clean ($(grep -c '^[EW]: ' "$tmp/build.log") errors or warnings)"
else
	tail -n 30 "$tmp/build.log"; fail "make host-deb"
	echo "$passes passed, $fails failed"; exit 1
fi
deb=$(ls "$build"/bureau_*_*.deb | head -n1)
dpkg-deb -c "$deb" | awk '{ print $6 }' >"$tmp/files"
missing=
for f in ./usr/bin/bureau ./usr/share/man/man1/bureau.1.gz \
    ./lib/systemd/system/bureau-desktops.service \
    ./lib/systemd/system/bureau-mission-control.service \
    ./usr/share/bureau/mission-control/index.html ./usr/include/bureau/bureau.h \
    ./usr/lib/python3/dist-packages/bureau/__init__.py ./etc/default/bureau \
    ./usr/share/bureau/image/build-image.sh ./usr/share/bureau/image/packages-full \
    ./usr/share/bureau/image/npm/apps/package-lock.json; do
	grep -qxF "$f" "$tmp/files" || missing="$missing $f"
done
grep -q '/bureau/libbureau.so.0$' "$tmp/files" || missing="$missing libbureau.so.0"
[ -z "$missing" ] && pass "the package holds the CLI, its man page, libbureau, the Python module, Mission Control's page and the units" ||
	fail "missing from the package:$missing"

root=$tmp/root
mkdir -p "$root"
dpkg-deb -x "$deb" "$root"
# what the units refer to (sysinit.target, network-online.target, ...)
cp -rn /lib/systemd/system/. "$root/lib/systemd/system/" 2>/dev/null
units="$root/lib/systemd/system/bureau-desktops.service $root/lib/systemd/system/bureau-mission-control.service"
if systemd-analyze verify --man=no --root="$root" $units >"$tmp/verify" 2>&1; then
	pass "systemd-analyze verify: both units pass"
else
	fail "systemd-analyze verify: $(cat "$tmp/verify")"
fi
sed 's|^ExecStart=/usr/bin/bureau|ExecStart=/usr/bin/no-such-bureau|' \
    "$root/lib/systemd/system/bureau-desktops.service" >"$root/lib/systemd/system/bureau-broken.service"
systemd-analyze verify --man=no --root="$root" "$root/lib/systemd/system/bureau-broken.service" >/dev/null 2>&1 &&
	fail "systemd-analyze verify passed a unit that runs a missing program" ||
	pass "systemd-analyze verify refuses a unit that runs a missing program (the check can fail)"

grep -qx 'ExecStart=/usr/bin/bureau start --all' "$root/lib/systemd/system/bureau-desktops.service" &&
    grep -qx 'ExecStop=/usr/bin/bureau stop --all' "$root/lib/systemd/system/bureau-desktops.service" &&
	pass "bureau-desktops.service: start --all at boot, stop --all at shutdown" ||
	fail "bureau-desktops.service's commands"
export BUREAU_HOME=$tmp/home
mkdir -p "$BUREAU_HOME"
v=$("$root/usr/bin/bureau" --version 2>&1)
s=$("$root/usr/bin/bureau" stop --all 2>&1)
a=$("$root/usr/bin/bureau" start --all 2>&1)
[ -n "$v" ] && [ "$s" = "stop --all: no desktop is running" ] &&
    [ "$a" = "start --all: no desktop was saved by stop --all" ] &&
	pass "the packaged bureau runs ($v) and its --all commands answer on an empty home" ||
	fail "the packaged bureau: '$v' / '$s' / '$a'"
# `bureau image build` finds the packaged recipe beside it (usr/share):
# with a package that does not exist, the recipe itself says so, before
# it builds anything
out=$("$root/usr/bin/bureau" image build --minimal --out "$tmp/images" \
    --deb "$tmp/no-such.deb" 2>&1)
case $out in
*"build-image: no such package '$tmp/no-such.deb'"*)
	pass "the packaged bureau image build runs the packaged recipe" ;;
*) fail "the packaged bureau image build: $out" ;;
esac
lib=$(grep '/bureau/libbureau.so.0$' "$tmp/files" | sed 's|^\.||')
out=$(cd / && BUREAU_LIB="$root$lib" PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 -c '
import bureau, bureau._lib as l
print(l.load().bureau_version().decode() if hasattr(l.load(), "bureau_version") else "loaded")' 2>&1)
[ $? = 0 ] && pass "the packaged Python module loads the packaged libbureau ($out)" ||
	fail "the packaged Python module: $out"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
