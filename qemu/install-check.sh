#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Checks of the suite as a user installs it (run by the build suite):
#
#   qemu/install-check.sh layout KDIR      make install DESTDIR= lays out the
#                                          expected files, uninstall removes them
#   qemu/install-check.sh refuses KDIR OPTION
#                                          make modules against KDIR fails at once, naming
#                                          OPTION; make builds the tools, then fails naming it;
#                                          the same, KDIR's headers without .config (read from
#                                          include/config/auto.conf)
#   qemu/install-check.sh running          the running kernel (a made-up /proc and /boot:
#                                          P2P_ROOT=, P2P_RELEASE=) lacks CONFIG_PCI_P2PDMA:
#                                          make says so first, builds the tools, fails naming
#                                          it last; make modules fails at once; make tools
#                                          looks at no kernel; each source of the answer
#   qemu/install-check.sh nokdir           no kernel build tree (KDIR= missing, or the made-up
#                                          running kernel's), or one with neither .config nor
#                                          include/config/auto.conf: make builds the tools,
#                                          fails naming what is missing last
#   qemu/install-check.sh builds KDIR      make, KDIR unset, on a made-up machine whose
#                                          running kernel is KDIR's, its headers as 6.12's
#                                          bindeb-pkg packages them (no .config, only
#                                          include/config/auto.conf): the readiness line, the
#                                          modules and the tools built, exit 0
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

fail() { echo "FAIL: $*"; exit 1; }

# copy NAME: the sources (no build product) in out/NAME, without tools/build,
# so that what make builds there is this run's; prints the directory. Files
# unchanged since the last run are left as they are (the modules' build
# there stays incremental).
copy() {
	local dir=$P2P_TOP/out/$1
	mkdir -p "$dir"
	rsync -rl --checksum --delete --exclude /.git --exclude /out --filter ':- .gitignore' "$P2P_TOP/" "$dir/"
	rm -rf "$dir/tools/build"
	echo "$dir"
}

# mk DIR MAKE-ARGS...: make in DIR as a user runs it (not as a sub-make of
# make check: no "Entering directory" line first); its output (in the log
# too) in $out, its status in $rc
mk() {
	local dir=$1; shift
	rc=0
	out=$(cd "$dir" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make "$@" 2>&1) || rc=$?
	echo "\$ make $* (exit $rc)"
	echo "$out" | sed 's/^/  /'
}

# The last thing make said: from its last "the tools are built" line to the
# end, make's own lines ("make: *** [...] Error 1") left out
last() {
	echo "$out" | grep -Ev '^make(\[[0-9]+\])?: ' |
		awk '/^p2pdma-suite: the tools are built/ { b = ""; on = 1 } on { b = b $0 "\n" } END { printf "%s", b }'
}

# tools_then DIR WHAT: make built p2pctl, failed, and said last (after the
# tools) that the modules are not built, and WHAT (an ERE)
tools_then() {
	[ -x "$1/tools/build/p2pctl" ] || fail "make did not build tools/build/p2pctl"
	[ "$rc" -ne 0 ] || fail "make exited 0 without the modules"
	[ -n "$(last)" ] || fail "make did not say last that the tools are built and the modules not"
	grep -Eq "$2" <<<"$(last)" || fail "make's last words do not say /$2/"
}

# first WHAT: make's first line is the running kernel's readiness, WHAT (an ERE)
first() {
	grep -Eq "^p2pdma-suite: the running kernel $1" <<<"${out%%$'\n'*}" ||
		fail "make's first line is not /p2pdma-suite: the running kernel $1/"
}

# nowhere_qemu: no message sends a user to the bench's files
nowhere_qemu() {
	! grep -v '^make' <<<"$out" | grep -E 'qemu/|Ubuntu 24\.04' || fail "make points a user at the bench's files"
}

# no_dot_config KDIR DIR: in DIR, KDIR without its .config, as the headers
# packages of 6.12's and later's bindeb-pkg are (their configuration only in
# include/config/auto.conf, which kbuild reads): a symlink to each of KDIR's
# top-level entries but .config and .config.old (KDIR is not changed)
no_dot_config() {
	local kdir=$1 dir=$2 e
	rm -rf "${dir:?}"; mkdir -p "$dir"
	for e in "$kdir"/* "$kdir"/.[!.]*; do
		[ -e "$e" ] || continue
		case ${e##*/} in .config|.config.old) continue ;; esac
		ln -s "$e" "$dir/${e##*/}"
	done
	[ -f "$dir/include/config/auto.conf" ] || fail "$kdir has no include/config/auto.conf"
}

# machine ROOT P2PDMA SOURCE RELEASE: a made-up /proc and /boot under ROOT
# whose running kernel RELEASE says CONFIG_PCI_P2PDMA=P2PDMA (y or n) in
# SOURCE: config.gz, boot (/boot/config-RELEASE), kallsyms (its
# pci_p2pdma_add_resource), corrupt (a config.gz that is not gzip, then
# boot), none (nothing tells)
machine() {
	local root=$1 p2p=$2 src=$3 rel=$4 cfg='CONFIG_ZONE_DEVICE=y\n# CONFIG_PCI_P2PDMA is not set\n'
	[ "$p2p" = y ] && cfg='CONFIG_ZONE_DEVICE=y\nCONFIG_PCI_P2PDMA=y\n'
	rm -rf "${root:?}/proc" "${root:?}/boot"
	mkdir -p "$root/proc" "$root/boot"
	case $src in
	config.gz) printf %b "$cfg" | gzip > "$root/proc/config.gz" ;;
	boot) printf %b "$cfg" > "$root/boot/config-$rel" ;;
	corrupt) printf %b "$cfg" > "$root/proc/config.gz"; printf %b "$cfg" > "$root/boot/config-$rel" ;;
	kallsyms)
		{ echo "ffffffff81000000 T _text"; [ "$p2p" = n ] ||
			echo "ffffffff81a00000 T pci_p2pdma_add_resource"; } > "$root/proc/kallsyms" ;;
	none) : > "$root/proc/kallsyms" ;;
	esac
}

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
	kdir=$2 opt=$3
	dir=$(copy make)
	# the modules alone: at once, nothing built
	mk "$dir" KDIR="$kdir" modules
	[ $rc -ne 0 ] && grep -q "lacks $opt" <<<"$out" || fail "make modules did not refuse, naming $opt"
	[ ! -e "$dir/tools/build" ] || fail "make modules built the tools"
	grep -q '"A kernel with P2PDMA on Debian"' <<<"$out" || fail "make modules names no fix"
	nowhere_qemu
	# make: the tools, then why not the modules, with the fix
	mk "$dir" KDIR="$kdir"
	tools_then "$dir" "lacks $opt"
	grep -q '"A kernel with P2PDMA on Debian"' <<<"$(last)" || fail "make's last words name no fix"
	grep -q 'make kernel-deb' <<<"$(last)" || fail "make's last words do not name make kernel-deb"
	nowhere_qemu
	! grep -q '^p2pdma-suite: the running kernel' <<<"$out" || fail "KDIR= given, make judged the running kernel"
	# the same headers without .config: include/config/auto.conf read, the
	# same refusal (not one for a missing configuration)
	no_dot_config "$kdir" "$P2P_TOP/out/make-noconfig.kdir"
	mk "$dir" KDIR="$P2P_TOP/out/make-noconfig.kdir" modules
	[ $rc -ne 0 ] && grep -q "lacks $opt" <<<"$out" ||
		fail "without .config, make modules did not refuse, naming $opt (from include/config/auto.conf)"
	rm -rf "$P2P_TOP/out/make-noconfig.kdir"
	;;
running)
	root=$(mktemp -d "${TMPDIR:-/tmp}/p2p-running.XXXXXX") rel=6.12.0-p2ptest
	trap 'rm -rf "$root"' EXIT
	dir=$(copy make)
	m=(P2P_ROOT="$root" P2P_RELEASE="$rel")
	machine "$root" n config.gz "$rel"
	lacks="$rel lacks CONFIG_PCI_P2PDMA \\($root/proc/config.gz\\): the modules cannot load on it"
	# make tools looks at no kernel (this one has no P2PDMA and no headers)
	mk "$dir" "${m[@]}" tools
	[ $rc -eq 0 ] && [ -x "$dir/tools/build/p2pctl" ] || fail "make tools failed"
	! grep -Eq '^p2pdma-suite:|^error|error:' <<<"$out" || fail "make tools looked at the kernel"
	rm -rf "$dir/tools/build"
	# make modules: the readiness line, then the refusal, at once
	mk "$dir" "${m[@]}" modules
	first "$lacks"
	[ $rc -ne 0 ] && grep -q "error: the running kernel $rel lacks CONFIG_PCI_P2PDMA" <<<"$out" ||
		fail "make modules did not refuse the running kernel, naming CONFIG_PCI_P2PDMA"
	[ ! -e "$dir/tools/build" ] || fail "make modules built the tools"
	# make: the readiness line first, the tools, the reason last with its fix
	mk "$dir" "${m[@]}"
	first "$lacks"
	grep -q 'make kernel-deb, .*"A kernel with P2PDMA on Debian"' <<<"${out%%$'\n'*}" || fail "the first line names no fix"
	tools_then "$dir" "the running kernel $rel lacks CONFIG_PCI_P2PDMA"
	grep -q '"A kernel with P2PDMA on Debian"' <<<"$(last)" || fail "make's last words name no fix"
	nowhere_qemu
	rm -rf "$dir/tools/build"
	# each source of the answer, in its order (make modules: nothing built)
	machine "$root" n boot "$rel"
	mk "$dir" "${m[@]}" modules
	first "$rel lacks CONFIG_PCI_P2PDMA \\($root/boot/config-$rel\\)"
	[ $rc -ne 0 ] || fail "make modules built for a kernel without P2PDMA"
	machine "$root" n corrupt "$rel"
	mk "$dir" "${m[@]}" modules
	first "$rel lacks CONFIG_PCI_P2PDMA \\($root/boot/config-$rel\\)"
	machine "$root" n kallsyms "$rel"
	mk "$dir" "${m[@]}" modules
	first "$rel lacks CONFIG_PCI_P2PDMA \\($root/proc/kallsyms\\)"
	[ $rc -ne 0 ] || fail "make modules built for a kernel without P2PDMA"
	# with P2PDMA (kallsyms), or nothing telling: then the headers decide (none here)
	machine "$root" y kallsyms "$rel"
	mk "$dir" "${m[@]}" modules
	first "$rel has CONFIG_PCI_P2PDMA \\($root/proc/kallsyms\\): the modules can load on it"
	[ $rc -ne 0 ] && grep -q "linux-headers-$rel" <<<"$out" || fail "make modules did not ask for linux-headers-$rel"
	machine "$root" n none "$rel"
	mk "$dir" "${m[@]}" modules
	first "$rel does not say whether it has CONFIG_PCI_P2PDMA"
	[ $rc -ne 0 ] && grep -q "linux-headers-$rel" <<<"$out" || fail "make modules did not ask for linux-headers-$rel"
	# P2P_COMPILE_ONLY=1: the running kernel's P2PDMA is not asked for, its headers are
	machine "$root" n config.gz "$rel"
	mk "$dir" "${m[@]}" P2P_COMPILE_ONLY=1 modules
	[ $rc -ne 0 ] && grep -q "linux-headers-$rel" <<<"$out" ||
		fail "P2P_COMPILE_ONLY=1: make modules did not ask for the headers"
	# older than 6.1: said first, and refused for it (not for its headers)
	old=5.14.0-503.el9.x86_64
	machine "$root" y config.gz "$old"
	mk "$dir" P2P_ROOT="$root" P2P_RELEASE="$old" modules
	first "$old is older than 6.1: the modules cannot load on it"
	[ $rc -ne 0 ] && grep -q "error: the running kernel $old is older than 6.1" <<<"$out" &&
		! grep -q linux-headers <<<"$out" || fail "make modules did not refuse $old as older than 6.1"
	[ ! -e "$dir/tools/build" ] || fail "make modules built the tools"
	nowhere_qemu
	;;
nokdir)
	root=$(mktemp -d "${TMPDIR:-/tmp}/p2p-nokdir.XXXXXX") rel=6.12.0-p2ptest
	trap 'rm -rf "$root"' EXIT
	dir=$(copy make)
	mk "$dir" KDIR=/nonexistent/kdir modules
	[ $rc -ne 0 ] && grep -q "no kernel build tree at /nonexistent/kdir" <<<"$out" &&
		grep -q "linux-headers-" <<<"$out" || fail "make modules did not ask for the headers"
	[ ! -e "$dir/tools/build" ] || fail "make modules built the tools"
	mk "$dir" KDIR=/nonexistent/kdir
	tools_then "$dir" "no kernel build tree at /nonexistent/kdir"
	grep -q "linux-headers-" <<<"$(last)" || fail "make's last words name no headers package"
	# the running kernel has P2PDMA but no headers: that first, the headers last
	rm -rf "$dir/tools/build"
	machine "$root" y config.gz "$rel"
	mk "$dir" P2P_ROOT="$root" P2P_RELEASE="$rel"
	first "$rel has CONFIG_PCI_P2PDMA \\($root/proc/config.gz\\): the modules can load on it"
	tools_then "$dir" "no kernel build tree at $root/lib/modules/$rel/build"
	grep -q "apt install linux-headers-$rel" <<<"$(last)" || fail "make's last words do not name linux-headers-$rel"
	nowhere_qemu
	# a tree with neither .config nor include/config/auto.conf (a prepared
	# one's Makefile and generated headers, those alone): refused, naming both
	k=$root/kernel
	mkdir -p "$k/include/generated/uapi/linux"
	printf 'all modules:\n\t@echo built >&2\n' > "$k/Makefile"
	: > "$k/include/generated/autoconf.h"
	echo "#define UTS_RELEASE \"$rel\"" > "$k/include/generated/utsrelease.h"
	echo "#define LINUX_VERSION_CODE $(((6 << 16) + (12 << 8)))" > "$k/include/generated/uapi/linux/version.h"
	rm -rf "$dir/tools/build"
	mk "$dir" KDIR="$k" modules
	[ $rc -ne 0 ] && grep -q "error: $k is not a configured kernel tree: it has neither .config nor include/config/auto.conf" <<<"$out" &&
		! grep -q built <<<"$out" || fail "make modules did not refuse a tree without .config and auto.conf, naming both"
	mk "$dir" KDIR="$k"
	tools_then "$dir" "neither \.config nor include/config/auto\.conf"
	# .config alone (configured, not prepared): refused, naming auto.conf
	printf 'CONFIG_ZONE_DEVICE=y\nCONFIG_PCI_P2PDMA=y\n' > "$k/.config"
	mk "$dir" KDIR="$k" modules
	[ $rc -ne 0 ] && grep -q "error: $k is configured but not prepared: it has no include/config/auto.conf\.$" <<<"$out" &&
		! grep -q built <<<"$out" || fail "make modules did not refuse a tree with .config but no auto.conf"
	# include/config/auto.conf alone: accepted (make prereq: the checks alone)
	rm "$k/.config"; mkdir -p "$k/include/config"
	printf 'CONFIG_ZONE_DEVICE=y\nCONFIG_PCI_P2PDMA=y\n' > "$k/include/config/auto.conf"
	mk "$dir" KDIR="$k" prereq
	[ $rc -eq 0 ] || fail "make prereq refused a tree whose configuration is include/config/auto.conf"
	;;
builds)
	# stable paths: the build there is incremental from one run to the next
	kdir=$(realpath "$2") root=$P2P_TOP/out/make-builds.root
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h")
	dir=$(copy make-builds)
	machine "$root" y boot "$rel"
	rm -rf "${root:?}/lib"
	mkdir -p "$root/lib/modules/$rel"
	no_dot_config "$kdir" "$root/lib/modules/$rel/build"
	rm -f "$dir"/drivers/*/*.ko
	mk "$dir" P2P_ROOT="$root" P2P_RELEASE="$rel"
	first "$rel has CONFIG_PCI_P2PDMA \\($root/boot/config-$rel\\): the modules can load on it"
	[ $rc -eq 0 ] || fail "make failed"
	for f in drivers/p2pbar/p2pbar.ko drivers/p2pnvme/p2pnvme.ko tools/build/p2pctl; do
		[ -e "$dir/$f" ] || fail "make did not build $f"
	done
	! grep -Eq '^error|error:|the modules are not' <<<"$out" || fail "make said something failed"
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
	mkdir -p "$k/include/generated/uapi/linux" "$k/include/config"
	printf 'all modules:\n\t@echo built >&2\n' > "$k/Makefile"
	printf 'CONFIG_ZONE_DEVICE=y\nCONFIG_PCI_P2PDMA=y\n' > "$k/.config"
	cp "$k/.config" "$k/include/config/auto.conf"
	: > "$k/include/generated/autoconf.h"
	echo "#define UTS_RELEASE \"$rel\"" > "$k/include/generated/utsrelease.h"
	echo "#define LINUX_VERSION_CODE $(((5 << 16) + (14 << 8)))" > "$k/include/generated/uapi/linux/version.h"
	out=$(make -s -C "$P2P_TOP" KDIR="$k" modules 2>&1) || rc=$?
	echo "$out"
	[ $rc -ne 0 ] && echo "$out" | grep -q "($rel, 5.14) is older than 6.1" &&
		echo "$out" | grep -q "Fix: use a 6.1 or later kernel" && ! echo "$out" | grep -q built || exit 1
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
	sed -n '3,36p' "$0" | sed 's/^# \?//'; exit 2 ;;
esac
