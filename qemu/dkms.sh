#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# DKMS round trip against a bench kernel, in a private DKMS tree (the
# machine's own /var/lib/dkms and /usr/src are not touched): the sources as
# the p2pdma-dkms package ships them (qemu/package-check.sh build -A), dkms
# add and build for the kernel's release with its tree as kernel source.
# Prints the directory holding the modules DKMS built, which the dkms guest
# test loads.
#
#   qemu/dkms.sh KDIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kdir=${1:?kdir}
need_pkgs dkms
ver=$(cat "$P2P_TOP/VERSION")
rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h")
top=$P2P_TOP/out/dkms
rm -rf "$top"
mkdir -p "$top/tree" "$top/root"
debs=$("$P2P_TOP/qemu/package-check.sh" build -A)
dpkg-deb -x "$debs/p2pdma-dkms_${ver}_all.deb" "$top/root"
: > "$top/log"
d=(dkms --dkmstree "$top/tree" --sourcetree "$top/root/usr/src")
"${d[@]}" add -m p2pdma-suite -v "$ver" >>"$top/log" 2>&1 || { cat "$top/log" >&2; exit 1; }
"${d[@]}" build -m p2pdma-suite -v "$ver" -k "$rel" --kernelsourcedir "$kdir" >>"$top/log" 2>&1 ||
	{ cat "$top/log" >&2; find "$top/tree" -name make.log -exec cat {} + >&2; exit 1; }
mods=$top/tree/p2pdma-suite/$ver/$rel/$(uname -m)/module
ls "$mods"/p2pbar.ko* "$mods"/p2pnvme.ko* >/dev/null
# DKMS may compress the modules; the guest's insmod takes plain ones
for m in "$mods"/*.ko.*; do
	[ -e "$m" ] || continue
	case "$m" in
	*.xz) xz -dk "$m" ;;
	*.zst) zstd -dq "$m" ;;
	*.gz) gzip -dk "$m" ;;
	esac
done
echo "$mods"
