#!/bin/sh
# Build the base root filesystem of a bureau desktop as a tarball with
# mmdebstrap: every package of the image except bureaud itself.
#
#   mkbase.sh PACKAGES_CSV SUITE ARCHIVE_CACHE OUT.tar SOURCES...
#
# The apt sources are the host's own files (never a hard-coded mirror).
# Downloaded .debs are synced to and from ARCHIVE_CACHE so a rebuild does
# not fetch them again. This file is part of the base image's cache key:
# changing it rebuilds the base.
set -eu

pkgs=$1 suite=$2 archives=$3 out=$4
shift 4
[ $# -gt 0 ] || { echo "mkbase: no apt sources" >&2; exit 2; }

mkdir -p "$archives"
# Hook commands are shell strings run by mmdebstrap; quote the one path
# they carry.
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
qa=$(q "$archives")

exec mmdebstrap \
	--variant=apt \
	--mode=root \
	--format=tar \
	--aptopt='Apt::Install-Recommends "false"' \
	--include="$pkgs" \
	--skip=essential/unlink \
	--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
	--setup-hook="sync-in $qa /var/cache/apt/archives/" \
	--customize-hook="sync-out /var/cache/apt/archives $qa" \
	--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
	--customize-hook='echo bureau > "$1"/etc/hostname' \
	"$suite" "$out" "$@"
