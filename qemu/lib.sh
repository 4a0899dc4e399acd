# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the QEMU bench scripts. Sourced, never executed.

P2P_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
P2P_CACHE=${P2P_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/p2pdma-suite}
# Kernel versions the bench knows: <series> -> Debian package linux-source-<series>.
P2P_RUNTIME_SERIES=${P2P_RUNTIME_SERIES:-6.12}
P2P_COMPILE_SERIES=${P2P_COMPILE_SERIES:-"6.1 6.12 7.2"}
# Suites searched for linux-source packages on the machine's own Debian mirror.
P2P_DEBIAN_SUITES=${P2P_DEBIAN_SUITES:-"bookworm trixie sid"}

_t0=$(date +%s)
say()  { printf '[%4ds] %s\n' $(( $(date +%s) - _t0 )) "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }

# The Debian mirror this machine's apt already uses (deb822 .sources or
# one-line .list files). Never hard-code a registry host in the repo.
debian_mirror() {
	local f uri
	[ -n "${P2P_DEBIAN_MIRROR:-}" ] && { echo "$P2P_DEBIAN_MIRROR"; return; }
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		uri=$(sed -n -e 's/^URIs:[[:space:]]*//p' \
			-e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' "$f" |
			tr ' ' '\n' | grep -E '^(https?|file)://.*/debian/?$' | head -n 1)
		[ -n "$uri" ] && { echo "${uri%/}"; return; }
	done
	die "cannot find a Debian mirror in /etc/apt sources (set P2P_DEBIAN_MIRROR)"
}

# apt with a private lists/cache directory: the system's apt state is untouched.
papt_dir() { echo "$P2P_CACHE/apt"; }
papt() {
	local d; d=$(papt_dir)
	local cmd=$1; shift
	"$cmd" -o Dir::State::Lists="$d/lists" -o Dir::Etc::SourceList="$d/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null -o Dir::Cache::archives="$d/archives" \
		-o Dir::State::status=/dev/null -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
		-o APT::Sandbox::User=root "$@"
}
papt_update() {
	local d m s; d=$(papt_dir); m=$(debian_mirror)
	mkdir -p "$d/lists/partial" "$d/archives/partial"
	: > "$d/sources.list.tmp"
	for s in $P2P_DEBIAN_SUITES; do
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $m $s main" >> "$d/sources.list.tmp"
	done
	mv "$d/sources.list.tmp" "$d/sources.list"
	# refresh at most once a day
	if [ -z "$(find "$d/lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -n 1)" ]; then
		say "apt: updating private package lists ($P2P_DEBIAN_SUITES)"
		papt apt-get -qq update || die "apt-get update (private lists) failed"
	fi
}

# Install host packages the bench needs when they are missing.
need_pkgs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "apt: installing ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]}"
	apt-get -qq update >/dev/null 2>&1 || true
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install ${missing[*]} failed"
}

# libjson-c-dev: p2pctl's JSON, zlib1g-dev: its /proc/config.gz, liburing-dev: the io_uring tools (shared
# libraries both); run.sh builds the tools too
host_build_deps() {
	need_pkgs build-essential flex bison bc libelf-dev libssl-dev cpio xz-utils kmod \
		rsync python3 debian-archive-keyring libjson-c-dev zlib1g-dev liburing-dev
}
# e2fsprogs, xfsprogs: the files tests' mkfs, xfs_io, filefrag in the guest,
# debugfs and xfs_db reading the NVMe image's extents on the host;
# nvme-cli, smartmontools: tools the suite does not own, run against it in
# the guest (qemu/initramfs.sh copies them in with their libraries); udev:
# systemd-udevd and udevadm, under which the udev test runs the suite's rules
# fio and liburing's passthrough test are built from Debian's sources
# (qemu/extools.sh); without them their tests say so and skip. FIO_SRC (fio's
# headers) makes the tools' build build the suite's fio engine too. QEMU's
# instruction-counting plugin (qemu/extools.sh plugin, cached) is the insn
# test's instrument, the CPU-per-I/O regression check: without it that
# test's run fails (qemu/run.sh).
bench_run_deps() {
	local ext
	need_pkgs qemu-system-x86 busybox-static cpio python3 libjson-c-dev liburing-dev \
		nvme-cli smartmontools udev e2fsprogs xfsprogs
	if ext=$("$P2P_TOP/qemu/extools.sh" build); then
		[ ! -d "$ext/fio-src" ] || export FIO_SRC="$ext/fio-src"
	else
		say "warning: fio and liburing's test could not be built; their guest tests skip"
	fi
	"$P2P_TOP/qemu/extools.sh" plugin >/dev/null ||
		say "warning: QEMU's insn plugin could not be built; the insn test's run fails"
}
