#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Checks of the suite as a user installs it (run by the build suite):
#
#   qemu/install-check.sh layout KDIR      make install DESTDIR= lays out the
#                                          expected files, uninstall removes them
#   qemu/install-check.sh refuses KDIR OPTION
#                                          make against KDIR fails, naming OPTION
#   qemu/install-check.sh nokdir           a missing KDIR names the headers package
#   qemu/install-check.sh dkms-skips KDIR  dkms build against a kernel without
#                                          CONFIG_PCI_P2PDMA is skipped (BUILD_EXCLUSIVE)
#   qemu/install-check.sh nosyms DIR PATTERN
#                                          no .ko under DIR uses a symbol matching PATTERN
#   qemu/install-check.sh old-kernel       a kernel older than 6.1 (a tree saying 5.14) is
#                                          refused by make, and skipped by dkms
#   qemu/install-check.sh sign KDIR        make install KEY= CERT= signs the modules with a
#                                          throwaway key (KDIR needs scripts/sign-file)
#   qemu/install-check.sh dkms-copy KDIR   make install refuses to add a second copy
#                                          beside DKMS's
set -euo pipefail
. "$(dirname "$0")/lib.sh"

case "${1:-}" in
layout)
	kdir=$2 dir=$P2P_TOP/out/install
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/p2p-install.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$dir"
	rsync -rl --delete --exclude /.git --exclude /out --filter ':- .gitignore' "$P2P_TOP/" "$dir/"
	make -s -C "$dir" KDIR="$kdir" DESTDIR="$tmp" PREFIX=/usr install >"$dir/install.log" 2>&1 ||
		{ cat "$dir/install.log"; exit 1; }
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h")
	want="./lib/modules/$rel/updates/p2pdma/p2pbar.ko
./lib/modules/$rel/updates/p2pdma/p2pnvme.ko
./usr/bin/p2pctl
./usr/share/doc/p2pdma-suite/examples/70-p2pdma.rules
./usr/share/doc/p2pdma-suite/examples/71-p2pbar-bind.rules
./usr/share/doc/p2pdma-suite/examples/p2pdma-modules.conf
./usr/share/doc/p2pdma-suite/examples/p2pdma.conf
./usr/share/man/man8/p2pctl.8"
	got=$(cd "$tmp" && find . -type f ! -name 'modules.*' | LC_ALL=C sort)
	if [ "$got" != "$want" ]; then
		echo "install laid out:"; echo "$got"; echo "expected:"; echo "$want"; exit 1
	fi
	# depmod ran over the DESTDIR: the modules are known to modprobe there
	grep -q "updates/p2pdma/p2pbar.ko:" "$tmp/lib/modules/$rel/modules.dep"
	modinfo -F version "$tmp/lib/modules/$rel/updates/p2pdma/p2pbar.ko" | grep -qx "$(cat "$P2P_TOP/VERSION")"
	man -l "$tmp/usr/share/man/man8/p2pctl.8" >/dev/null 2>&1 || { echo "man cannot render p2pctl.8"; exit 1; }
	make -s -C "$dir" KDIR="$kdir" DESTDIR="$tmp" PREFIX=/usr uninstall >>"$dir/install.log" 2>&1
	left=$(cd "$tmp" && find . -type f ! -name 'modules.*')
	[ -z "$left" ] || { echo "uninstall left: $left"; exit 1; }
	;;
refuses)
	kdir=$2 opt=$3 rc=0
	out=$(make -s -C "$P2P_TOP" KDIR="$kdir" prereq 2>&1) || rc=$?
	echo "$out"
	[ $rc -ne 0 ] && echo "$out" | grep -q "lacks $opt"
	;;
nokdir)
	out=$(make -s -C "$P2P_TOP" KDIR=/nonexistent/kdir prereq 2>&1) && exit 1
	echo "$out"
	echo "$out" | grep -q "no kernel build tree at /nonexistent/kdir" &&
		echo "$out" | grep -q "linux-headers-"
	;;
dkms-skips)
	kdir=$2 top=$P2P_TOP/out/dkms-skip rc=0
	need_pkgs dkms
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h")
	rm -rf "$top"; mkdir -p "$top/tree" "$top/root"
	make -s -C "$P2P_TOP" DESTDIR="$top/root" dkms-source
	d=(dkms --dkmstree "$top/tree" --sourcetree "$top/root/usr/src")
	"${d[@]}" add -m p2pdma-suite -v "$(cat "$P2P_TOP/VERSION")" >/dev/null
	out=$("${d[@]}" build -m p2pdma-suite -v "$(cat "$P2P_TOP/VERSION")" -k "$rel" \
		--kernelsourcedir "$kdir" 2>&1) || rc=$?
	echo "$out"
	# 77: dkms' "skipped"
	[ $rc -eq 77 ] && echo "$out" | grep -q BUILD_EXCLUSIVE
	;;
nosyms)
	dir=$2 pat=$3
	bad=$(for k in "$dir"/drivers/*/*.ko; do nm -u "$k" | sed "s|^|$(basename "$k"): |"; done |
	      grep -E "$pat" || true)
	[ -z "$bad" ] || { echo "$bad"; exit 1; }
	;;
old-kernel)
	# The headers of RHEL 9's kernel, as far as make and dkms look: a
	# prepared tree whose version.h says 5.14 (and with P2PDMA, so that
	# only the version can be what refuses it).
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/p2p-old.XXXXXX") rc=0
	trap 'rm -rf "$tmp"' EXIT
	k=$tmp/kernel rel=5.14.0-503.el9.x86_64
	mkdir -p "$k/include/generated/uapi/linux"
	printf 'all modules:\n\t@echo built >&2\n' > "$k/Makefile"
	printf 'CONFIG_ZONE_DEVICE=y\nCONFIG_PCI_P2PDMA=y\n' > "$k/.config"
	: > "$k/include/generated/autoconf.h"
	echo "#define UTS_RELEASE \"$rel\"" > "$k/include/generated/utsrelease.h"
	echo "#define LINUX_VERSION_CODE $(((5 << 16) + (14 << 8)))" > "$k/include/generated/uapi/linux/version.h"
	out=$(make -s -C "$P2P_TOP" KDIR="$k" modules 2>&1) || rc=$?
	echo "$out"
	[ $rc -ne 0 ] && echo "$out" | grep -q "($rel, 5.14) is older than 6.1" &&
		echo "$out" | grep -q "Use a 6.1 or later kernel" && ! echo "$out" | grep -q built || exit 1
	out=$(make -s -C "$P2P_TOP" KDIR="$k" P2P_COMPILE_ONLY=1 prereq 2>&1) && exit 1
	need_pkgs dkms
	mkdir -p "$tmp/tree" "$tmp/root"
	make -s -C "$P2P_TOP" DESTDIR="$tmp/root" dkms-source
	d=(dkms --dkmstree "$tmp/tree" --sourcetree "$tmp/root/usr/src")
	"${d[@]}" add -m p2pdma-suite -v "$(cat "$P2P_TOP/VERSION")" >/dev/null
	rc=0
	out=$("${d[@]}" build -m p2pdma-suite -v "$(cat "$P2P_TOP/VERSION")" -k "$rel" \
		--kernelsourcedir "$k" 2>&1) || rc=$?
	echo "$out"
	[ $rc -eq 77 ] && echo "$out" | grep -q BUILD_EXCLUSIVE
	;;
sign)
	kdir=$2 dir=$P2P_TOP/out/install-sign
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/p2p-sign.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	[ -x "$kdir/scripts/sign-file" ] || { echo "no $kdir/scripts/sign-file"; exit 1; }
	openssl req -new -x509 -newkey rsa:2048 -nodes -days 1 -outform DER -keyout "$tmp/key.pem" \
		-out "$tmp/cert.der" -subj "/CN=p2pdma-suite throwaway test key/" 2>/dev/null
	mkdir -p "$dir"
	rsync -rl --delete --exclude /.git --exclude /out --filter ':- .gitignore' "$P2P_TOP/" "$dir/"
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h")
	out=$(make -s -C "$dir" KDIR="$kdir" P2P_COMPILE_ONLY=1 DESTDIR="$tmp/root" PREFIX=/usr \
		KEY="$tmp/key.pem" CERT="$tmp/cert.der" install 2>&1) || { echo "$out"; exit 1; }
	echo "$out" | grep SIGN
	for m in p2pbar p2pnvme; do
		f=$tmp/root/lib/modules/$rel/updates/p2pdma/$m.ko
		signer=$(modinfo -F signer "$f")
		echo "$m.ko: signer '$signer'"
		[ "$signer" = "p2pdma-suite throwaway test key" ] || exit 1
		tail -c 28 "$f" | grep '~Module signature appended~' >/dev/null || exit 1
	done
	# a KEY= that cannot be read is an error, not an unsigned install
	out=$(make -s -C "$dir" KDIR="$kdir" P2P_COMPILE_ONLY=1 DESTDIR="$tmp/root2" PREFIX=/usr \
		KEY=/nonexistent CERT=/nonexistent install 2>&1) && { echo "$out"; exit 1; }
	echo "$out" | grep -q "KEY=/nonexistent and CERT=/nonexistent must both name readable files"
	;;
dkms-copy)
	kdir=$2 dir=$P2P_TOP/out/install
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/p2p-install.XXXXXX") rc=0
	trap 'rm -rf "$tmp"' EXIT
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h")
	mkdir -p "$tmp/lib/modules/$rel/updates/dkms" "$dir"
	: > "$tmp/lib/modules/$rel/updates/dkms/p2pbar.ko.xz"
	rsync -rl --delete --exclude /.git --exclude /out --filter ':- .gitignore' "$P2P_TOP/" "$dir/"
	out=$(make -s -C "$dir" KDIR="$kdir" DESTDIR="$tmp" PREFIX=/usr install 2>&1) || rc=$?
	echo "$out"
	[ $rc -ne 0 ] && echo "$out" | grep -q "DKMS has installed the suite for $rel" &&
		echo "$out" | grep -q "dkms remove p2pdma-suite/$(cat "$P2P_TOP/VERSION") --all" &&
		[ ! -e "$tmp/lib/modules/$rel/updates/p2pdma" ]
	;;
*)
	sed -n '3,20p' "$0" | sed 's/^# \?//'; exit 2 ;;
esac
