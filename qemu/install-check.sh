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
./usr/share/doc/p2pdma-suite/examples/p2pdma.conf
./usr/share/man/man8/p2pctl.8"
	got=$(cd "$tmp" && find . -type f ! -name 'modules.*' | sort)
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
*)
	sed -n '3,14p' "$0" | sed 's/^# \?//'; exit 2 ;;
esac
