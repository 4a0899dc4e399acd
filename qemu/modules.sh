#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the suite's modules against a kernel tree in a private copy of the
# sources (so builds for several kernels never mix objects), print the
# directory holding the .ko files. Always W=1: the build suite's warning
# check and the boots then share one build per kernel.
#
#   qemu/modules.sh KDIR [make args, e.g. W=1 C=1]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kdir=${1:?kdir}; shift
dir=$P2P_TOP/out/modules/${P2P_MODDIR:-$(basename "$kdir")}
mkdir -p "$dir"
# Copy sources only: .gitignore names every build artifact (excluded files
# are also kept at the destination, so builds there stay incremental).
rsync -rl --checksum --delete --exclude /.git --filter ':- .gitignore' "$P2P_TOP/" "$dir/"
make -s -j"$(nproc)" -C "$dir" KDIR="$kdir" W=1 "$@" modules >"$dir/build.log" 2>&1 || { cat "$dir/build.log" >&2; die "module build failed against $kdir"; }
if grep -E 'warning:|error:' "$dir/build.log" >&2; then
	die "module build against $kdir printed warnings"
fi
echo "$dir"
