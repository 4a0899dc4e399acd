#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Checks of the distribution packages (run by the build suite of make check):
#
#   qemu/package-check.sh build [full|-A] dpkg-buildpackage -us -uc (full: the source and
#                                         both packages, -A: p2pdma-dkms only) in a copy of
#                                         the tree; prints the directory holding the .debs
#   qemu/package-check.sh debs            build both; versions are VERSION's, each package
#                                         holds what it should
#   qemu/package-check.sh lintian         lintian --pedantic -I -E of the source and both
#                                         packages: no tag (but the justified overrides)
#   qemu/package-check.sh rpm             make dist, rpmbuild -ta, rpmlint: no error or
#                                         warning (the rpmlintrc's filters aside); make dist
#                                         from the unpacked tarball makes the same one
#   qemu/package-check.sh dkms-deb KDIR   in a scratch root (an overlay of this machine's),
#                                         dpkg -i both packages: DKMS builds the modules
#                                         for KDIR's kernel, skips kernels without
#                                         CONFIG_PCI_P2PDMA; dpkg --purge leaves nothing
#   qemu/package-check.sh rpm-install KDIR in a scratch root, rpm -i both RPMs (this machine's
#                                         rpm, not an RPM distribution): the %post hands the
#                                         source to DKMS, dkms install builds for KDIR's
#                                         kernel as a kernel's hook would; rpm -e leaves nothing
#   qemu/package-check.sh two-copies KDIR make install, make dkms, make install in a scratch
#                                         root: one copy of the modules at every step
#   qemu/package-check.sh no-uring        the tools without liburing: its four are left
#                                         out in one line naming the package, the rest built
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PKG=$P2P_TOP/out/packages
VER=$(cat "$P2P_TOP/VERSION")

build() {	# build full|-A: into $PKG/deb-all (full) or $PKG/deb-indep (-A)
	local how=$1 dir=$PKG/deb-all args=()
	[ "$how" = -A ] && dir=$PKG/deb-indep args=(-A)
	need_pkgs dpkg-dev debhelper dh-dkms libjson-c-dev pkgconf
	rm -rf "$dir"; mkdir -p "$dir/src"
	rsync -rl --exclude /.git --exclude /out --filter ':- .gitignore' "$P2P_TOP/" "$dir/src/"
	(cd "$dir/src" && dpkg-buildpackage -us -uc "${args[@]}" >"$dir/build.log" 2>&1) ||
		{ cat "$dir/build.log" >&2; die "dpkg-buildpackage $how failed"; }
	echo "$dir"
}

rpm_build() {	# make dist, rpmbuild -ta into $PKG/rpm; prints that directory
	local dir=$PKG/rpm tarball=$P2P_TOP/out/dist/p2pdma-suite-$VER.tar.gz
	need_pkgs rpm rpmlint
	rm -rf "$dir"; mkdir -p "$dir"
	make -s -C "$P2P_TOP" dist >"$dir/build.log" 2>&1
	# --nodeps: the BuildRequires are Fedora's names, this machine's rpm
	# database is empty (the build needs only gcc, make and json-c here)
	rpmbuild -ta --nodeps --define "_topdir $dir" "$tarball" >>"$dir/build.log" 2>&1 ||
		{ cat "$dir/build.log" >&2; die "rpmbuild -ta failed"; }
	tar -xzOf "$tarball" "p2pdma-suite-$VER/p2pdma-suite.spec" > "$dir/p2pdma-suite.spec"
	echo "$dir"
}

# leftovers UPPER REL: what packages installed and removed in a scratch
# root left in its overlay's upper layer UPPER: files, links and new
# directories, but for dpkg's and rpm's own records and logs (root's rpm
# database: dkms asks rpm -qf where rpm is installed), the kernel's
# modules.* indexes, which depmod keeps (the kernel's packages own them),
# and kernel REL made installed there
leftovers() {
	local rel=$2
	(cd "$1" && find . -mindepth 1 ! -type c \
		! -path "./var/lib/dpkg/*" ! -path "./var/log/*" ! -path "./var/cache/*" \
		! -path "./tmp/*" ! -path "./var/tmp/*" ! -path "./root/.rpmdb" ! -path "./root/.rpmdb/*" \
		! -path "./var/lib/rpm" ! -path "./var/lib/rpm/*" \
		! -path "./*lib/modules/*/modules.*" ! -path "./*lib/modules/$rel/build" |
		while read -r p; do
			if [ -d "$p" ] && [ -d "/${p#./}" ]; then continue; fi
			case "$p" in ./lib/modules/$rel | ./usr/lib/modules/$rel) continue ;; esac
			echo "$p"
		done)
}

# scratch_root KDIR: a scratch root for installing packages: this
# machine's / under an overlay whose upper layer ($ovl/upper) catches every
# write, removed at exit; sets kdir, rel (its kernel release) and ovl
scratch_root() {
	kdir=$(cd "${1:?kdir}" && pwd)
	need_pkgs dkms pciutils	# p2pdma-tools depends on pciutils
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h")
	ovl=$(mktemp -d "${TMPDIR:-/tmp}/p2p-pkgroot.XXXXXX")
	trap 'rm -rf "$ovl"' EXIT
	mkdir -p "$ovl/upper" "$ovl/work" "$ovl/root"
}

# in_scratch SCRIPT ARGS...: SCRIPT run by bash -euo pipefail in a mount
# namespace of its own with the scratch root mounted at $r (the machine's
# dpkg and rpm databases, /var/lib/dkms and /lib/modules are not touched),
# KDIR's kernel made an installed one there, and inroot CMD... to run a
# command in it; ARGS are its $1...
# shellcheck disable=SC2016
SCRATCH_PRE='
	ovl=$1 kdir=$2 rel=$3 r=$1/root
	shift 3
	mount -t overlay p2p-pkgroot -o "lowerdir=/,upperdir=$ovl/upper,workdir=$ovl/work" "$r"
	for m in proc sys dev; do mount --rbind "/$m" "$r/$m"; done
	mkdir -p "$r/lib/modules/$rel"
	ln -sfn "$kdir" "$r/lib/modules/$rel/build"
	inroot() {
		chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			DEBIAN_FRONTEND=noninteractive "$@"
	}
'
in_scratch() {
	unshare -m --propagation private bash -euo pipefail -c "$SCRATCH_PRE$1" sh "$ovl" "$kdir" "$rel" "${@:2}"
}

contents() {	# contents DEB: the paths it holds, ./ stripped
	dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./|/|'
}

case "${1:-}" in
build)
	build "${2:-full}"
	;;
debs)
	dir=$(build full)
	v=$(cd "$dir/src" && dpkg-parsechangelog -S Version)
	echo "debian/changelog: $v, VERSION: $VER"
	[ "$v" = "$VER" ]
	dkms=$dir/p2pdma-dkms_${VER}_all.deb tools=$dir/p2pdma-tools_${VER}_$(dpkg --print-architecture).deb
	ls "$dkms" "$tools"
	c=$(contents "$dkms")
	for f in dkms.conf Makefile Kbuild VERSION scripts/conftest.sh drivers/p2pbar/main.c drivers/p2pnvme/pci.c; do
		echo "$c" | grep -qx "/usr/src/p2pdma-suite-$VER/$f" || { echo "p2pdma-dkms lacks $f"; exit 1; }
	done
	dpkg-deb --fsys-tarfile "$dkms" | tar -xOf - "./usr/src/p2pdma-suite-$VER/dkms.conf" > "$dir/dkms.conf"
	grep -qx "PACKAGE_VERSION=\"$VER\"" "$dir/dkms.conf" && grep -qx 'BUILD_EXCLUSIVE_CONFIG="CONFIG_PCI_P2PDMA"' "$dir/dkms.conf"
	dpkg-deb -f "$dkms" Depends | grep dkms >/dev/null
	# the postinst hands the source to DKMS, the prerm takes it back
	dpkg-deb -I "$dkms" postinst | grep 'DKMS_NAME=p2pdma-suite' >/dev/null
	dpkg-deb -I "$dkms" prerm | grep 'dkms remove' >/dev/null
	c=$(contents "$tools")
	for f in /usr/bin/p2pctl /usr/share/man/man8/p2pctl.8.gz \
		 /usr/share/doc/p2pdma-tools/examples/{70-p2pdma.rules,71-p2pbar-bind.rules,p2pdma.conf,p2pdma-modules.conf}; do
		echo "$c" | grep -qx "$f" || { echo "p2pdma-tools lacks $f"; exit 1; }
	done
	# linked dynamically, against json-c: the package depends on its library
	deps=$(dpkg-deb -f "$tools" Depends)
	echo "p2pdma-tools depends on: $deps"
	echo "$deps" | grep -q 'libjson-c'
	;;
lintian)
	need_pkgs lintian
	dir=$PKG/deb-all
	[ -f "$dir/p2pdma-suite_${VER}_$(dpkg --print-architecture).changes" ] || dir=$(build full)
	out=$(lintian --pedantic -I -E --tag-display-limit 0 "$dir"/p2pdma-suite_"${VER}"_*.changes 2>&1 |
	      grep -v 'running with root privileges' || true)
	echo "${out:-lintian: no tag}"
	[ -z "$out" ]
	;;
rpm)
	dir=$(rpm_build)
	rpms=("$dir"/RPMS/noarch/p2pdma-dkms-"$VER"-1*.noarch.rpm "$dir"/RPMS/*/p2pdma-tools-"$VER"-1*.rpm
	      "$dir"/SRPMS/p2pdma-suite-"$VER"-1*.src.rpm)
	ls "${rpms[@]}"
	rpm -qpl "${rpms[0]}" | grep -x "/usr/src/p2pdma-suite-$VER/dkms.conf" >/dev/null
	rpm -qp --scripts "${rpms[0]}" | grep "dkms add -m p2pdma-suite -v $VER" >/dev/null
	rpm -qpl "${rpms[1]}" | grep -x /usr/bin/p2pctl >/dev/null
	# make dist again from the unpacked tarball, where there is no git:
	# the same files, byte for byte
	tarball=$P2P_TOP/out/dist/p2pdma-suite-$VER.tar.gz un=$dir/undist
	mkdir -p "$un/a" "$un/b"
	tar -C "$un/a" -xzf "$tarball"
	make -s -C "$un/a/p2pdma-suite-$VER" dist >"$un/dist.log" 2>&1 || { cat "$un/dist.log"; exit 1; }
	tar -C "$un/b" -xzf "$un/a/p2pdma-suite-$VER/out/dist/p2pdma-suite-$VER.tar.gz"
	rm -rf "$un/a/p2pdma-suite-$VER/out"
	diff -r "$un/a" "$un/b" || { echo "make dist from the release tarball made another tarball"; exit 1; }
	echo "make dist from the release tarball: the same $(tar -tzf "$tarball" | grep -vc '/$') files"
	out=$(rpmlint -r "$P2P_TOP/packaging/rpm/p2pdma-suite.rpmlintrc" "$dir/p2pdma-suite.spec" "${rpms[@]}" 2>&1) ||
		{ echo "$out"; exit 1; }
	echo "$out" | tail -n 1
	echo "$out" | grep -q ' 0 errors, 0 warnings'
	;;
dkms-deb)
	# In a scratch root (scratch_root, in_scratch), with the bench kernel
	# an installed one there (/lib/modules/REL/build).
	scratch_root "${2:-}"
	dir=$PKG/deb-all
	[ -f "$dir/p2pdma-dkms_${VER}_all.deb" ] || dir=$(build full)
	arch=$(dpkg --print-architecture)
	# shellcheck disable=SC2016
	in_scratch '
		dir=$1 ver=$2 arch=$3
		echo "# dpkg -i p2pdma-dkms p2pdma-tools (the postinst runs DKMS)"
		inroot dpkg -i "$dir/p2pdma-dkms_${ver}_all.deb" "$dir/p2pdma-tools_${ver}_${arch}.deb" 2>&1 |
			tee "$ovl/install.log"
		inroot dkms status -m p2pdma-suite | tee "$ovl/status"
		grep -q "p2pdma-suite/$ver, $rel, .*: installed" "$ovl/status" ||
			{ echo "DKMS did not install the modules for $rel"; exit 1; }
		# Debian'"'"'s stock kernel (make check installs its headers): no
		# P2PDMA, so DKMS skipped it, and did not fail
		n=0
		for k in "$r"/lib/modules/*; do
			[ -e "$k/build/.config" ] || continue
			grep -q "^CONFIG_PCI_P2PDMA=y" "$k/build/.config" && continue
			n=$((n + 1))
			if grep -q "p2pdma-suite/$ver, $(basename "$k"), .*: installed" "$ovl/status"; then
				echo "installed for $(basename "$k"), which lacks CONFIG_PCI_P2PDMA"; exit 1
			fi
		done
		[ $n -gt 0 ] || { echo "no kernel without CONFIG_PCI_P2PDMA has headers here"; exit 1; }
		grep -q "^Skipped" "$ovl/install.log"
		# the package names the option (DKMS, skipping, does not)
		grep -q "^p2pdma-dkms: .* it lacks CONFIG_PCI_P2PDMA" "$ovl/install.log"
		for m in p2pbar p2pnvme; do
			f=$(ls "$r/lib/modules/$rel/updates/dkms/$m.ko"*)
			echo "$m: $(inroot modinfo -F version "${f#"$r"}") ($f)"
			[ "$(inroot modinfo -F version "${f#"$r"}")" = "$ver" ]
		done
		# depmod ran: modprobe finds them
		for m in p2pbar p2pnvme; do
			inroot modprobe -S "$rel" --show-depends "$m" | grep "updates/dkms/$m.ko"
		done
		inroot p2pctl --version
		echo "# dpkg --purge p2pdma-tools p2pdma-dkms (the prerm removes them from DKMS)"
		inroot dpkg --purge p2pdma-tools p2pdma-dkms 2>&1 | tee "$ovl/purge.log"
		if inroot dkms status -m p2pdma-suite | grep .; then echo "DKMS still knows the suite"; exit 1; fi
	' "$dir" "$VER" "$arch"
	left=$(leftovers "$ovl/upper" "$rel")
	if [ -n "$left" ]; then echo "purge left:"; echo "$left"; exit 1; fi
	echo "purge left nothing"
	;;
rpm-install)
	# The RPMs installed by rpm in a scratch root as dkms-deb's (this
	# machine's rpm and dkms: the spec's file list and scriptlets run, not
	# an RPM distribution's kernel hooks). The %post builds for the running
	# kernel only, which has no headers here (DKMS fails quietly, the %post
	# goes on); a kernel's own DKMS hook then builds for it, as dkms
	# install -k.
	scratch_root "${2:-}"
	dir=$PKG/rpm
	ls "$dir"/RPMS/noarch/p2pdma-dkms-"$VER"-1*.noarch.rpm >/dev/null 2>&1 || dir=$(rpm_build)
	# shellcheck disable=SC2016
	in_scratch '
		dir=$1 ver=$2
		dkms_rpm=$(ls "$dir"/RPMS/noarch/p2pdma-dkms-"$ver"-1*.noarch.rpm)
		tools_rpm=$(ls "$dir"/RPMS/*/p2pdma-tools-"$ver"-1*.rpm)
		src=/usr/src/p2pdma-suite-$ver
		# --nodeps: Requires: dkms names the RPM distributions'"'"' package,
		# which this rpm database does not hold (dpkg'"'"'s dkms is here)
		echo "# rpm -i --nodeps p2pdma-dkms p2pdma-tools (the %post hands the source to DKMS)"
		inroot rpm -i --nodeps "$dkms_rpm" "$tools_rpm" 2>&1 | tee "$ovl/install.log"
		inroot rpm -q p2pdma-dkms p2pdma-tools
		[ -f "$r$src/dkms.conf" ] && [ -x "$r/usr/bin/p2pctl" ]
		inroot dkms status -m p2pdma-suite | tee "$ovl/status"
		grep -q "^p2pdma-suite/$ver" "$ovl/status" || { echo "the %post did not add the suite to DKMS"; exit 1; }
		echo "# dkms install -k $rel (a kernel'"'"'s DKMS hook)"
		inroot dkms install -m p2pdma-suite -v "$ver" -k "$rel" >"$ovl/dkms.log" 2>&1 ||
			{ cat "$ovl/dkms.log"; exit 1; }
		inroot dkms status -m p2pdma-suite | tee "$ovl/status"
		grep -q "p2pdma-suite/$ver, $rel, .*: installed" "$ovl/status"
		for m in p2pbar p2pnvme; do
			f=$(ls "$r/lib/modules/$rel/updates/dkms/$m.ko"*)
			[ "$(inroot modinfo -F version "${f#"$r"}")" = "$ver" ]
			inroot modprobe -S "$rel" --show-depends "$m" | grep "updates/dkms/$m.ko"
		done
		inroot p2pctl --version
		echo "# rpm -e p2pdma-tools p2pdma-dkms (the %preun removes the suite from DKMS)"
		inroot rpm -e p2pdma-tools p2pdma-dkms 2>&1 | tee "$ovl/erase.log"
		if inroot dkms status -m p2pdma-suite | grep .; then echo "DKMS still knows the suite"; exit 1; fi
		if inroot rpm -q p2pdma-dkms >/dev/null 2>&1; then echo "rpm still has p2pdma-dkms"; exit 1; fi
	' "$dir" "$VER"
	# %license's parent, when empty: an RPM distribution's filesystem
	# package owns /usr/share/licenses, Debian has none
	rmdir "$ovl/upper/usr/share/licenses" 2>/dev/null || true
	left=$(leftovers "$ovl/upper" "$rel")
	if [ -n "$left" ]; then echo "rpm -e left:"; echo "$left"; exit 1; fi
	echo "rpm -e left nothing"
	;;
two-copies)
	# make install, then make dkms, then make install again, against the
	# bench kernel in a scratch root as dkms-deb has one: DKMS's copy
	# replaces make install's, and make install then refuses to add its own.
	scratch_root "${2:-}"
	# shellcheck disable=SC2016
	in_scratch '
		top=$1 ver=$2 rc=0
		m=$r/lib/modules/$rel/updates
		echo "# make install"
		inroot make -s -C "$top" KDIR="$kdir" PREFIX=/usr install >"$ovl/log" 2>&1 || { cat "$ovl/log"; exit 1; }
		ls "$m"/p2pdma/p2pbar.ko "$m"/p2pdma/p2pnvme.ko
		echo "# make dkms"
		inroot make -s -C "$top" KDIR="$kdir" dkms >"$ovl/log" 2>&1 || { cat "$ovl/log"; exit 1; }
		grep "NOTE .*removed make install.s modules for $rel" "$ovl/log"
		ls "$m"/dkms/p2pbar.ko* "$m"/dkms/p2pnvme.ko*
		[ ! -e "$m/p2pdma" ] || { echo "make install'"'"'s copy is still there:"; ls -R "$m/p2pdma"; exit 1; }
		inroot modprobe -S "$rel" --show-depends p2pbar | grep "updates/dkms/p2pbar.ko"
		echo "# make install again"
		inroot make -s -C "$top" KDIR="$kdir" PREFIX=/usr install >"$ovl/log" 2>&1 || rc=$?
		cat "$ovl/log"
		[ $rc -ne 0 ] && grep -q "DKMS has installed the suite for $rel" "$ovl/log" && [ ! -e "$m/p2pdma" ]
	' "$P2P_TOP" "$VER"
	;;
no-uring)
	dir=$P2P_TOP/out/tools-no-uring
	mkdir -p "$dir"
	rsync -rl --delete --exclude /.git --exclude /out --filter ':- .gitignore' "$P2P_TOP/" "$dir/"
	# HAVE_URING=0 as tools/Makefile finds it when <liburing.h> is missing
	out=$(make -s -C "$dir/tools" HAVE_URING=0 2>&1)
	echo "$out"
	[ "$(echo "$out" | grep -c .)" = 1 ] && echo "$out" | grep -q "SKIP .*p2pbench.*liburing-dev"
	[ -x "$dir/tools/build/p2pctl" ] && [ ! -e "$dir/tools/build/p2pbench" ]
	;;
*)
	sed -n '3,27p' "$0" | sed 's/^# \?//'; exit 2 ;;
esac
