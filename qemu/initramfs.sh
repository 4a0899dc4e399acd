#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the guest initramfs: busybox-static, /init, the suite's modules,
# the guest test scripts and userspace tools with their shared libraries,
# Debian's systemd-udevd and udevadm, and the suite's udev rules.
#
#   qemu/initramfs.sh <output.cpio> <module-dir>...
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$1; shift
root=$(mktemp -d "${TMPDIR:-/tmp}/p2p-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,lib/modules,tests,etc,root}
cp /bin/busybox "$root/bin/busybox"
for app in $("$root/bin/busybox" --list); do
	[ -e "$root/bin/$app" ] || ln -s busybox "$root/bin/$app"
done
install -m 0755 "$P2P_TOP/qemu/guest/init" "$root/init"
install -m 0644 "$P2P_TOP/qemu/guest/lib.sh" "$root/tests/lib.sh"
for t in "$P2P_TOP"/qemu/tests/*.guest.sh; do
	install -m 0755 "$t" "$root/tests/$(basename "$t")"
done
for d in "$@"; do
	find "$d" -name '*.ko' -exec cp {} "$root/lib/modules/" \;
done
for b in "$P2P_TOP"/tools/build/*; do
	case $b in
	*.so) install -D -m 0755 "$b" "$root/usr/lib/fio/$(basename "$b")" ;;	# fio's engine
	*) [ -x "$b" ] && install -m 0755 "$b" "$root/bin/" ;;
	esac
done
# Tools the suite does not own, from this machine's Debian packages, with
# their shared libraries and loader (as dracut copies a binary in); the
# suite's tools, linked dynamically as users build them, need theirs too
# fio and liburing's passthrough test, built by qemu/extools.sh
ext=$(ls -d "$P2P_CACHE"/extools/*/.complete 2>/dev/null | sort -V | tail -n 1 || true)
ext=${ext%/.complete}
libs_of() {
	local l
	for l in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*'); do
		[ -e "$root$l" ] || install -D -m 0755 "$l" "$root$l"
	done
}
# P2P_GUEST_BINS: more of this machine's programs a probe asks for
# (scripts/cpu-profile.sh --perf: perf), at their own paths
# e2fsprogs and xfsprogs: the files tests make, check and inspect filesystems
fsbins=""
for b in mke2fs e2fsck debugfs filefrag e4defrag mkfs.xfs xfs_io xfs_db xfs_repair; do
	fsbins="$fsbins /usr/sbin/$b"
done
[ ! -e /etc/mke2fs.conf ] || install -D -m 0644 /etc/mke2fs.conf "$root/etc/mke2fs.conf"
# busybox's own mke2fs (no -t, no ext4) must not shadow the real one
for b in $fsbins; do rm -f "$root/bin/${b##*/}" "$root/sbin/${b##*/}"; done
for b in /usr/sbin/nvme /usr/sbin/smartctl $fsbins ${ext:+"$ext"/bin/*} "$P2P_TOP"/tools/build/* \
	 ${P2P_GUEST_BINS:-}; do
	[ -x "$b" ] || continue
	case $b in
	/usr/*) install -D -m 0755 "$b" "$root$b" ;;
	"$P2P_TOP"/tools/build/*) ;;	# in /bin already
	*) install -m 0755 "$b" "$root/bin/" ;;
	esac
	libs_of "$b"
done
# systemd-udevd and udevadm from Debian's udev (one binary, udevd a link to
# it, as in the package), with what Debian's own initramfs gives them
# (/usr/share/initramfs-tools/hooks/udev): udev.conf and the default rules
# of its list; no hwdb (nothing here looks a PCI ID up in it). The suite's
# rules go where its package puts them: the udev test installs them in
# /etc/udev/rules.d as the examples' headers say.
udevadm=$(readlink -f /bin/udevadm 2>/dev/null || true)
if [ -x "$udevadm" ]; then
	install -m 0755 "$udevadm" "$root/bin/udevadm"
	libs_of "$udevadm"
	mkdir -p "$root/lib/systemd" "$root/lib/udev/rules.d" "$root/etc/udev/rules.d"
	ln -s /bin/udevadm "$root/lib/systemd/systemd-udevd"
	[ -e /etc/udev/udev.conf ] && install -m 0644 /etc/udev/udev.conf "$root/etc/udev/"
	for r in 50-firmware 50-udev-default 60-block 60-persistent-storage 71-seat \
		 73-special-net-names 75-net-description 80-net-setup-link 80-drivers; do
		[ -e "/lib/udev/rules.d/$r.rules" ] && install -m 0644 "/lib/udev/rules.d/$r.rules" "$root/lib/udev/rules.d/"
	done
fi
install -D -m 0644 -t "$root/usr/share/doc/p2pdma-tools/examples" "$P2P_TOP"/packaging/udev/*.rules
# the directories install -D made have the builder's umask
for d in usr lib64 lib/x86_64-linux-gnu lib/systemd lib/udev etc/udev; do
	[ -d "$root/$d" ] && find "$root/$d" -type d -exec chmod 0755 {} +
done
# an unprivileged user for permission tests
printf 'root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/tmp:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
# mktemp -d made the root 0700: the guest's / would refuse every path to an
# unprivileged user, whatever the mode of the file at its end. The guest's
# tree as a normal system has it (the builder's umask does not matter).
chmod 0755 "$root" "$root"/{bin,sbin,dev,proc,sys,tmp,lib,lib/modules,tests,etc}
chmod 0700 "$root/root"
chmod 0644 "$root/etc/passwd" "$root/etc/group"

# Not compressed: the guest kernel inflated the 15 MB of gzip in 1-2 s on
# the base kernel and about 10 s on the debug one (TCG, KASAN); QEMU loads
# the 34 MB of cpio in no time.
(cd "$root" && find . | cpio -o -H newc --quiet) > "$out.tmp"
mv "$out.tmp" "$out"
