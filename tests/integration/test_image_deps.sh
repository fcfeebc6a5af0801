#!/usr/bin/env bash
# The full image's build says what it lacks before it starts (issue 38,
# item 7): `bureau image build` (packaging/image/build-image.sh) checks
# the programs and headers its npm programs need before the base's
# minutes of mmdebstrap, and `make image-deps` takes an npm that is on the
# PATH as it is (NodeSource's nodejs carries one, and Debian's npm package
# conflicts with that nodejs). Prints PASS/FAIL; no image is built.
#
#   test_image_deps.sh [BUILD_DIR]   (no build needed)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
[ "$(id -u)" = 0 ] || { echo "SKIP image deps: build-image.sh needs root"; exit 0; }
tmp=$(mktemp -d /tmp/bureau-imgdeps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# a PATH with what the script needs before its npm check, and no npm/g++
mkdir -p "$tmp/bin"
for t in mmdebstrap mke2fs qemu-img sha256sum cat cut dirname id mkdir bash sh; do
	p=$(command -v $t) && ln -s "$p" "$tmp/bin/$t"
done
t0=$(date +%s%N)
out=$(PATH=$tmp/bin bash packaging/image/build-image.sh --cache "$tmp/cache" "$tmp/out" 2>&1)
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ $rc -ne 0 ] && echo "$out" | grep -q "the full image's npm programs need 'npm'.*make image-deps" &&
    [ ! -e "$tmp/cache/debs" ] && [ ! -e "$tmp/out" ] && [ $ms -lt 5000 ]; then
	echo "PASS image_build_checks_first: refused in $ms ms, before mmdebstrap: $out"
else
	echo "FAIL image_build_checks_first: exit $rc after $ms ms: $out"
fi

# make image-deps: no Debian npm asked for when an npm is on the PATH
mkdir -p "$tmp/npmbin"
printf '#!/bin/sh\necho 11.0.0\n' >"$tmp/npmbin/npm" && chmod +x "$tmp/npmbin/npm"
line=$(PATH=$tmp/npmbin:$PATH make -s -n image-deps 2>&1 | grep -o 'DEPS="[^"]*"' | head -n1)
if [ -n "$line" ] && ! echo "$line" | grep -qw npm && echo "$line" | grep -qw g++; then
	echo "PASS image_deps_takes_npm_there: $line"
else
	echo "FAIL image_deps_takes_npm_there: '$line'"
fi
