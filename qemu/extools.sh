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

case "${1:-}" in
build) build ;;
*) sed -n '3,18p' "$0" | sed 's/^# \?//'; exit 2 ;;
esac
