#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Fetch Debian's linux-source-<series> and build the suite's test kernels.
#
#   qemu/kernel.sh source  <series>            extract the source, print its path
#   qemu/kernel.sh build   <series> [flavour]  full build (bzImage), print build dir
#   qemu/kernel.sh prepare <series> [flavour]  modules_prepare only, print build dir
#   qemu/kernel.sh key     <series> [flavour]  print the cache key
#   qemu/kernel.sh stock   <series>            Debian's stock config of it, prepared
#
# flavour: base (qemu/configs/base.config), debug (base + debug.config),
# minimal (base with KUnit, dma-buf, debugfs and tracing off: compile only),
# or nomove (base without CONFIG_DMABUF_MOVE_NOTIFY, as stock 6.x kernels:
# built from a copy of base's objects, so that only what the option reaches
# is compiled again; kbuild's per-option dependencies make that exact).
# Results are cached under $P2P_CACHE keyed by Debian version + fragment hash;
# an entry counts only once its .complete/.prepared stamp exists, and the stamp
# is the last thing written, so an interrupted build is resumed, never trusted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Bump when the way a config is produced changes (not the fragments: they are hashed).
RECIPE=1

fragments() {
	echo "$P2P_TOP/qemu/configs/base.config"
	[ "$1" = debug ] && echo "$P2P_TOP/qemu/configs/debug.config"
	[ "$1" = minimal ] && echo "$P2P_TOP/qemu/configs/minimal.config"
	[ "$1" = nomove ] && echo "$P2P_TOP/qemu/configs/nomove.config"
	return 0
}

# The fragments as one: a symbol set by a later fragment replaces the line
# an earlier one had (the minimal flavour turns base options off).
fragment_text() {
	local f later=()
	for f in $(fragments "$1"); do
		if [ ${#later[@]} -gt 0 ]; then
			grep -v -E "^(# )?($(IFS='|'; echo "${later[*]}"))[= ]" "$f" || true
		else
			cat "$f"
		fi
	done | tac | awk -F= '/^CONFIG_/ { if (seen[$1]++) next } { print }' | tac
}

deb_version() {
	papt_update
	papt apt-cache policy "linux-source-$1" | sed -n 's/^  Candidate: //p' | grep -v '(none)' ||
		die "no linux-source-$1 in suites: $P2P_DEBIAN_SUITES"
}

src_tree() {
	local series=$1 ver dir deb
	# reuse an extracted tree without asking apt (offline re-runs)
	dir=$(ls -d "$P2P_CACHE/src/linux-source-$series"_*/ 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -n "$dir" ] && [ -z "${P2P_REFRESH:-}" ]; then echo "${dir%/}"; return; fi
	ver=$(deb_version "$series")
	dir="$P2P_CACHE/src/linux-source-${series}_$ver"
	[ -d "$dir" ] && { echo "$dir"; return; }
	mkdir -p "$P2P_CACHE/debs" "$P2P_CACHE/src"
	# another run may be extracting the same tree: wait for it, then reuse
	exec 8>"$dir.lock"
	flock -n 8 || { say "waiting for another run extracting linux-source-$series"; flock 8; }
	[ -d "$dir" ] && { exec 8>&-; echo "$dir"; return; }
	deb=$(ls "$P2P_CACHE/debs/linux-source-${series}_${ver}_all.deb" 2>/dev/null || true)
	if [ -z "$deb" ]; then
		say "fetch: linux-source-$series $ver"
		(cd "$P2P_CACHE/debs" && papt apt-get -qq download "linux-source-$series=$ver" 2>/dev/null) ||
			die "download of linux-source-$series failed"
		deb="$P2P_CACHE/debs/linux-source-${series}_${ver}_all.deb"
	fi
	say "extract: linux-source-$series $ver"
	rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards './usr/src/linux-source-*.tar.xz' |
		xz -dc -T0 | tar -x -C "$dir.tmp" --strip-components=1
	mv "$dir.tmp" "$dir"
	exec 8>&-
	echo "$dir"
}

cache_key() {
	local series=$1 flavour=$2 src ver h
	src=$(src_tree "$series")
	ver=${src##*_}
	h=$( { echo "recipe=$RECIPE"; fragment_text "$flavour"; } | sha256sum | cut -c1-12)
	echo "${series}_${ver}-$flavour-$h"
}

# Check that every symbol the fragments ask for made it into .config. A symbol
# that this kernel does not define at all is only reported.
check_config() {
	local src=$1 out=$2 flavour=$3 line sym val bad=0
	while IFS= read -r line; do
		case "$line" in CONFIG_*=*) ;; *) continue ;; esac
		sym=${line%%=*}; val=${line#*=}
		if ! grep -rqs --include='Kconfig*' -E "^[[:space:]]*(menu)?config ${sym#CONFIG_}\$" "$src"; then
			say "config: $sym does not exist in this kernel (skipped)"
			continue
		fi
		if [ "$val" = n ]; then
			grep -q "^$sym=" "$out/.config" && { echo "config: $sym should be unset" >&2; bad=1; }
		else
			grep -qxF "$sym=$val" "$out/.config" ||
				{ echo "config: wanted $sym=$val, got: $(grep -E "^(# )?$sym[= ]" "$out/.config" || echo absent)" >&2; bad=1; }
		fi
	done < <(fragment_text "$flavour")
	[ $bad -eq 0 ] || die "config fragment not honoured (missing dependency?)"
}

# Run make with one progress line every 20 s instead of thousands of lines.
make_progress() {
	local log=$1 what=$2; shift 2
	local start; start=$(date +%s)
	( "$@" >"$log" 2>&1 ) &
	local pid=$!
	while kill -0 $pid 2>/dev/null; do
		sleep 20
		kill -0 $pid 2>/dev/null || break
		say "$what: $(grep -cE '^  (CC|AS|LD|AR)' "$log" || true) objects, $(( $(date +%s) - start ))s, last: $(grep -E '^  (CC|LD)' "$log" | tail -n 1 | awk '{print $NF}')"
	done
	if ! wait $pid; then
		grep -E 'error|Error' "$log" | head -n 20 >&2
		die "$what failed, log: $log"
	fi
}

configure() {
	local series=$1 flavour=$2 src=$3 out=$4 frag="$4/.fragment"
	mkdir -p "$out"
	fragment_text "$flavour" > "$frag"
	say "configure: $series $flavour (allnoconfig + fragments)"
	in_tree "$out" make -s -C "$src" O=@O@ allnoconfig KCONFIG_ALLCONFIG="$frag" >"$out/configure.log" 2>&1 ||
		{ cat "$out/configure.log" >&2; die "configure failed"; }
	check_config "$src" "$out" "$flavour"
}

# A flavour one option away from another starts from a copy of that one's
# build (its objects, .cmd files and include/config stamps, timestamps kept):
# the configure step then marks only what the changed options reach, and make
# rebuilds that and links. The copy is made without the seed's stamps. Its
# make runs where the seed's path shows the copy (a bind mount in a private
# mount namespace): objtool's build records absolute paths, and a rebuilt
# objtool would rebuild every object. Without namespaces: a full build.
seed_from() {
	local series=$1 seed=$2 out=$3 sdir
	sdir=$(do_build build "$series" "$seed")
	say "seed: a copy of $(basename "$sdir") for $(basename "$out")"
	rm -rf "$out.tmp"
	cp -a "$sdir" "$out.tmp"
	rm -f "$out.tmp/.complete" "$out.tmp/.prepared" "$out.tmp/.fragment" "$out.tmp/.config"
	echo "$sdir" > "$out.tmp/.seed"
	rm -rf "$out"
	mv "$out.tmp" "$out"
}

# Run "$@" with each argument @O@ standing for the build dir: the seed's path,
# bound to the copy, where there is a seed and a mount namespace to bind it in.
in_tree() {
	local out=$1 sdir path arg args=(); shift
	path=$out
	if [ -e "$out/.seed" ] && sdir=$(cat "$out/.seed") && [ -d "$sdir" ] &&
	   unshare -m true 2>/dev/null; then
		path=$sdir
	else
		sdir=
	fi
	for arg in "$@"; do args+=("${arg//@O@/$path}"); done
	if [ -n "$sdir" ]; then
		unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$out" "$sdir" "${args[@]}"
	else
		"${args[@]}"
	fi
}

do_build() {
	local mode=$1 series=$2 flavour=${3:-base} src key out stamp jobs
	src=$(src_tree "$series")
	key=$(cache_key "$series" "$flavour")
	out="$P2P_CACHE/build/$key"
	if [ "$mode" = build ]; then stamp=.complete; else stamp=.prepared; fi
	if [ -e "$out/.complete" ] || [ -e "$out/$stamp" ]; then echo "$out"; return; fi
	# one builder per cache entry: a second run (another clone) waits, then reuses
	mkdir -p "$P2P_CACHE/build"
	exec 9>"$out.lock"
	flock -n 9 || { say "waiting for another run building $key"; flock 9; }
	if [ -e "$out/.complete" ] || [ -e "$out/$stamp" ]; then exec 9>&-; echo "$out"; return; fi
	host_build_deps
	if [ "$flavour" = nomove ] && [ "$mode" = build ] && [ ! -e "$out/.config" ]; then
		seed_from "$series" base "$out"
	fi
	[ -e "$out/.config" ] && [ -e "$out/.fragment" ] || configure "$series" "$flavour" "$src" "$out"
	jobs=$(( $(nproc) + 1 ))
	if [ "$mode" = build ]; then
		say "build: $key (-j$jobs), a cold build takes several minutes"
		make_progress "$out/build.log" "build $series $flavour" in_tree "$out" make -C "$src" O=@O@ -j"$jobs" all
	else
		say "prepare: $key (modules_prepare)"
		make_progress "$out/build.log" "prepare $series" make -C "$src" O="$out" -j"$jobs" modules_prepare
	fi
	echo "$key" > "$out/$stamp.tmp" && mv "$out/$stamp.tmp" "$out/$stamp"
	exec 9>&-
	say "$mode: done: $out"
	echo "$out"
}

# Debian's own configuration of a series, from the amd64 headers package of
# the suite that carries it (trixie for 6.12): the stock distribution kernel
# (no KUnit, no P2PDMA), applied to the same linux-source tree and prepared
# for module builds. Prints the build dir.
do_stock() {
	local series=$1 src pkg ver out deb
	src=$(src_tree "$series")
	papt_update
	pkg=$(papt apt-cache search --names-only "^linux-headers-${series//./\\.}\.[0-9]+\+deb[0-9]+-amd64\$" |
	      awk '{print $1}' | sort -V | tail -n 1)
	[ -n "$pkg" ] || die "no Debian headers package of $series in suites: $P2P_DEBIAN_SUITES"
	ver=${pkg#linux-headers-}
	out="$P2P_CACHE/build/${series}_$ver-stock"
	[ -e "$out/.prepared" ] && { echo "$out"; return; }
	mkdir -p "$P2P_CACHE/build" "$P2P_CACHE/debs"
	exec 9>"$out.lock"
	flock -n 9 || { say "waiting for another run preparing $pkg"; flock 9; }
	[ -e "$out/.prepared" ] && { exec 9>&-; echo "$out"; return; }
	deb=$(ls "$P2P_CACHE/debs/${pkg}_"*.deb 2>/dev/null | tail -n 1 || true)
	if [ -z "$deb" ]; then
		say "fetch: $pkg (Debian's configuration of $series)"
		(cd "$P2P_CACHE/debs" && papt apt-get -qq download "$pkg" 2>/dev/null) ||
			die "download of $pkg failed"
		deb=$(ls "$P2P_CACHE/debs/${pkg}_"*.deb | tail -n 1)
	fi
	rm -rf "$out"; mkdir -p "$out"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards "./usr/src/linux-headers-$ver/.config" > "$out/.config"
	host_build_deps
	say "prepare: $series with Debian's stock configuration ($ver)"
	make -s -C "$src" O="$out" olddefconfig >"$out/configure.log" 2>&1 ||
		{ cat "$out/configure.log" >&2; die "configure failed"; }
	make_progress "$out/build.log" "prepare $series stock" make -C "$src" O="$out" -j"$(( $(nproc) + 1 ))" modules_prepare
	echo "$pkg" > "$out/.prepared.tmp" && mv "$out/.prepared.tmp" "$out/.prepared"
	exec 9>&-
	prune "$(basename "$out")"
	echo "$out"
}

# prune KEY: the cache keeps the three newest builds of KEY's series and
# flavour (a kernel build tree is 0.3-0.6 GB, and every change of a config
# fragment makes a new one: a machine that runs many commits' checks filled
# its disk); an entry another run is building (its lock held) stays.
prune() {
	local prefix=${1%-*} d
	# shellcheck disable=SC2012
	ls -dt "$P2P_CACHE/build/$prefix"-* 2>/dev/null | grep -v '\.lock$' | tail -n +4 |
	while read -r d; do
		[ "$d" != "$P2P_CACHE/build/$1" ] || continue
		(
			exec 8>"$d.lock"
			flock -n 8 || exit 0
			say "cache: removing $(basename "$d"), an older build of ${prefix##*/}"
			rm -rf "$d"
			rm -f "$d.lock"
		)
	done
}

cmd=${1:-}; shift || true
case "$cmd" in
source)  src_tree "${1:?series}" ;;
key)     cache_key "${1:?series}" "${2:-base}" ;;
build)   do_build build "${1:?series}" "${2:-base}" ;;
prepare) do_build prepare "${1:?series}" "${2:-base}" ;;
stock)   do_stock "${1:?series}" ;;
*)       sed -n '3,15p' "$0" | sed 's/^# \?//'; exit 2 ;;
esac
