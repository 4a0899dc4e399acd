#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the outside tools the guest runs against the suite from Debian's
# source packages, unmodified, and print the directory that holds them:
#
#   fio                     fio (the io_uring_cmd engine), configured with
#                           --disable-shm: the bench kernels have no SysV
#                           IPC, and fio then runs its jobs as threads
#   t-io_uring              fio's t/io_uring, the peak-IOPS tool (-u1: the
#                           NVMe passthrough command)
#   io_uring_passthrough.t  liburing's NVMe passthrough test
#   fio-src/                the configured fio tree's headers, against which
#                           tools/Makefile builds the suite's external fio
#                           engine (FIO_SRC=, tools/fio/p2pnvme-reg.c)
#
#   qemu/extools.sh build   build what is missing (cached), print the dir
#   qemu/extools.sh plugin  build qemu/plugins/insn.c, the instruction-
#                           counting TCG plugin, for this machine's QEMU
#                           (cached), print the .so's path
#
# The sources come from the first suite of P2P_DEBIAN_SUITES (the machine's
# Debian) through a private apt directory with deb-src lines; apt checks
# them against the suite's signed index. The result is cached under
# $P2P_CACHE/extools keyed by the packages' versions.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Bump when the way the tools are built changes.
RECIPE=3
SUITE=${P2P_DEBIAN_SUITES%% *}

sapt() {
	local d="$P2P_CACHE/apt-src"
	"$@" -o Dir::State::Lists="$d/lists" -o Dir::Etc::SourceList="$d/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null -o Dir::State::status=/dev/null \
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root
}

# Every boot of a make check asks (run.sh's bench_run_deps), two at a time:
# one updates the lists, under a lock, and the others wait for it. A failed
# update with lists from before is said and the old lists are used (a
# complete cache entry for their versions needs no network).
sapt_update() {
	local d="$P2P_CACHE/apt-src"
	mkdir -p "$d/lists/partial"
	exec 8>"$d/update.lock"
	flock 8
	echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(debian_mirror) $SUITE main" \
		> "$d/sources.list"
	# updated within a day (apt leaves lists that did not change as they were)
	if [ -z "$(find "$d/updated-$SUITE" -mtime -1 2>/dev/null)" ]; then
		say "apt: updating private source lists ($SUITE)"
		if sapt apt-get -qq update; then
			touch "$d/updated-$SUITE"
		else
			[ -n "$(find "$d/lists" -maxdepth 1 -name '*Sources*' 2>/dev/null | head -n 1)" ] ||
				die "apt-get update (private source lists) failed"
			say "warning: apt-get update (private source lists) failed; using the lists from before"
		fi
	fi
	flock -u 8
}

src_version() {
	sapt apt-cache showsrc "$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -n 1
}

build() {
	local fio_v uring_v key out work
	need_pkgs dpkg-dev build-essential zlib1g-dev
	sapt_update
	fio_v=$(src_version fio)
	uring_v=$(src_version liburing)
	[ -n "$fio_v" ] && [ -n "$uring_v" ] || die "no fio or liburing source in $SUITE"
	key="fio_${fio_v}+liburing_${uring_v}+r$RECIPE"
	out="$P2P_CACHE/extools/$key"
	[ -e "$out/.complete" ] && { echo "$out"; return; }
	mkdir -p "$P2P_CACHE/extools"
	exec 9>"$out.lock"
	flock -n 9 || { say "waiting for another run building $key"; flock 9; }
	[ -e "$out/.complete" ] && { echo "$out"; return; }
	say "extools: building fio $fio_v and liburing $uring_v's passthrough test from Debian's sources"
	work=$(mktemp -d "${TMPDIR:-/tmp}/p2p-extools.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$work'" EXIT
	(cd "$work" && sapt apt-get -qq source "fio=$fio_v" "liburing=$uring_v" >/dev/null 2>&1) ||
		die "apt-get source fio liburing failed"
	(cd "$work"/fio-*/ && ./configure --disable-shm --disable-native >build.log 2>&1 &&
		make -s -j"$(nproc)" >>build.log 2>&1) || die "fio build failed: $(tail -n 5 "$work"/fio-*/build.log)"
	(cd "$work"/liburing-*/ && ./configure >build.log 2>&1 &&
		make -s -C src -j"$(nproc)" >>build.log 2>&1 &&
		make -s -C test io_uring_passthrough.t >>build.log 2>&1) ||
		die "liburing test build failed: $(tail -n 5 "$work"/liburing-*/build.log)"
	rm -rf "$out"
	mkdir -p "$out/bin"
	install -m 0755 "$work"/fio-*/fio "$out/bin/fio"
	install -m 0755 "$work"/fio-*/t/io_uring "$out/bin/t-io_uring"
	install -m 0755 "$work"/liburing-*/test/io_uring_passthrough.t "$out/bin/io_uring_passthrough.t"
	(cd "$work"/fio-*/ && find . -name '*.h' -print0 | cpio -0pdm --quiet "$out/fio-src")
	echo "$key" > "$out/.complete"
	echo "$out"
}

# The TCG plugin qemu/plugins/insn.c against the plugin API of the QEMU
# that boots the bench: include/qemu/qemu-plugin.h from the Debian source
# package of this machine's qemu-system-x86 (the same version; the newest
# of the suite if that one is gone, as long as it is the same QEMU
# release), unpacked with Debian's patches. Cached under
# $P2P_CACHE/plugins keyed by QEMU's package version and the plugin
# source's hash.
PLUGIN_API=1	# QEMU_PLUGIN_VERSION the plugin is written against
plugin() {
	local qemu qver qsrc_v src_v rel srel hash key out work hdr have
	qemu=$(command -v qemu-system-x86_64) || die "no qemu-system-x86_64"
	need_pkgs dpkg-dev build-essential xz-utils
	# QEMU's release as it says it (7.2.22 ...) and the package's versions
	rel=$("$qemu" --version | sed -n '1s/^QEMU emulator version \([0-9]*\.[0-9]*\).*/\1/p')
	qver=$(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null || true)
	qsrc_v=$(dpkg-query -W -f='${source:Version}' qemu-system-x86 2>/dev/null || true)
	[ -n "$rel" ] && [ -n "$qver" ] ||
		die "qemu-system-x86_64 is not Debian's qemu-system-x86 package: build the plugin against its own tree"
	hash=$(sha256sum "$P2P_TOP/qemu/plugins/insn.c" | cut -c1-12)
	key="qemu_${qver#*:}+insn_$hash"
	out="$P2P_CACHE/plugins/$key"
	[ -e "$out/.complete" ] && { echo "$out/insn.so"; return; }
	mkdir -p "$P2P_CACHE/plugins"
	exec 9>"$out.lock"
	flock -n 9 || { say "waiting for another run building $key"; flock 9; }
	[ -e "$out/.complete" ] && { echo "$out/insn.so"; return; }
	sapt_update
	src_v=$qsrc_v
	have=$(sapt apt-cache showsrc qemu 2>/dev/null | sed -n 's/^Version: //p')
	if ! printf '%s\n' "$have" | grep -Fxq "$src_v"; then
		src_v=$(src_version qemu)
		[ -n "$src_v" ] || die "no qemu source in $SUITE"
		srel=${src_v#*:}
		srel=${srel%%+*}
		[ "${srel%-*}" = "$rel" ] ||
			die "$SUITE has qemu $src_v, not QEMU $rel's plugin API (this machine's qemu-system-x86 $qver)"
		say "plugin: qemu $qsrc_v's source is gone from $SUITE, using $src_v (QEMU $rel too)"
	fi
	say "plugin: building insn.so against qemu $src_v's qemu-plugin.h"
	work=$(mktemp -d "${TMPDIR:-/tmp}/p2p-plugin.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$work'" EXIT
	(cd "$work" && sapt apt-get -qq source --download-only "qemu=$src_v" >/dev/null 2>&1) ||
		die "apt-get source qemu=$src_v failed"
	# the whole tree with Debian's patches (its stable updates among them)
	(cd "$work" && dpkg-source -q -x ./*.dsc src >/dev/null 2>&1) || die "dpkg-source -x qemu failed"
	hdr=$work/src/include/qemu/qemu-plugin.h
	[ -f "$hdr" ] || die "qemu $src_v has no include/qemu/qemu-plugin.h"
	grep -q "^#define QEMU_PLUGIN_VERSION $PLUGIN_API\$" "$hdr" ||
		die "qemu $src_v's plugin API is $(sed -n 's/^#define QEMU_PLUGIN_VERSION //p' "$hdr"), insn.c is written for $PLUGIN_API"
	mkdir -p "$work/out"
	cp "$hdr" "$work/out/qemu-plugin.h"
	# every API function undeclared in this header is an error
	gcc -O2 -g -fPIC -shared -Wall -Wextra -Wno-unused-parameter -Werror \
		-Werror=implicit-function-declaration -I"$work/out" \
		-o "$work/out/insn.so" "$P2P_TOP/qemu/plugins/insn.c" -lpthread ||
		die "insn.c does not build against qemu $src_v's qemu-plugin.h"
	rm -rf "$out"
	mv "$work/out" "$out"
	echo "qemu-system-x86 $qver, header from qemu $src_v, insn.c $hash" > "$out/.complete"
	echo "$out/insn.so"
}

case "${1:-}" in
build) build ;;
plugin) plugin ;;
*) sed -n '3,21p' "$0" | sed 's/^# \?//'; exit 2 ;;
esac
