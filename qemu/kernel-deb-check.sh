#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Checks of scripts/kernel-deb.sh (make kernel-deb), run by the build suite
# of make check. Output under out/kernel-deb-check/.
#
#   qemu/kernel-deb-check.sh seeded KDIR      the packages of KDIR's configuration, built
#                                             from a copy of KDIR's objects (the bench's
#                                             base kernel: minutes, not a kernel build:
#                                             objtool kept, fewer than 50 objects compiled);
#                                             unpacked in a scratch root: image, System.map,
#                                             config, modules, headers; the suite's modules
#                                             build against those headers (verify)
#   qemu/kernel-deb-check.sh verify DIR       those checks alone, of kernel-deb.sh --out DIR
#   qemu/kernel-deb-check.sh stock SRC CONFIG Debian's configuration CONFIG of SRC's series,
#                                             configured only: P2PDMA and what it needs on,
#                                             nothing else of Debian's lost
#   qemu/kernel-deb-check.sh no-p2pdma SRC CONFIG   CONFIG made 32-bit: refused before any
#                                             build, naming CONFIG_MEMORY_HOTPLUG and
#                                             CONFIG_64BIT; CONFIG itself passes
#   qemu/kernel-deb-check.sh secure-boot SRC CONFIG  Secure Boot as a stand-in mokutil says
#                                             it: off, on without a key (refused before the
#                                             build, saying what to do), on with a key
#                                             (signing announced, enrolment checked), on with
#                                             --unsigned
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=$P2P_TOP/out/kernel-deb-check
kdeb=$P2P_TOP/scripts/kernel-deb.sh
mkdir -p "$dir"
fails=0
ok()   { echo "ok: $*"; }
bad()  { echo "FAILED: $*"; fails=$((fails + 1)); }
expect() {	# expect DESCRIPTION COMMAND...: COMMAND succeeds
	if "${@:2}"; then ok "$1"; else bad "$1"; fi
}
has_line() { grep -qE -- "$2" "$1"; }	# has_line FILE ERE

# a stand-in mokutil saying $SB_STATE (mokutil --sb-state's first line)
# and $SB_ENROLLED (--test-key's), first in PATH
fake_mokutil() {
	mkdir -p "$dir/bin"
	cat > "$dir/bin/mokutil" <<'EOF'
#!/bin/sh
case "$1" in
--sb-state) echo "$SB_STATE" ;;
--test-key) echo "$2 $SB_ENROLLED" ;;
*) exit 1 ;;
esac
EOF
	chmod +x "$dir/bin/mokutil"
}

case "${1:-}" in
seeded)
	k=$(cd "${2:?kdir}" && pwd)
	rm -rf "$dir/seeded"; mkdir -p "$dir/seeded"
	# The packages depend only on kernel-deb.sh and the seed: kept in the
	# cache under both (the seed's cache key, the script's hash), so that a
	# warm check repackages nothing; what they hold is verified every time.
	key=$(cat "$k/.complete" 2>/dev/null || basename "$k")-$(sha256sum "$kdeb" | cut -c1-12)
	cache=$P2P_CACHE/kernel-deb/$key
	if [ -e "$cache/.complete" ]; then
		echo "kernel-deb.sh --seed: the packages of $key, made before (cached)"
	else
		fake_mokutil
		# one packaging per seed is kept: an older script's (400 MB) goes
		rm -rf "$cache" "${cache%-*}"-*; mkdir -p "$cache"
		start=$(date +%s)
		if ! PATH=$dir/bin:$PATH SB_STATE='SecureBoot disabled' nice -n 19 "$kdeb" --config "$k/.config" \
			--seed "$k" --out "$cache/pkg" > "$cache/out.log" 2>&1; then
			cat "$cache/out.log"; echo "FAILED: kernel-deb.sh --seed $k"; exit 1
		fi
		echo "kernel-deb.sh --seed: $(( $(date +%s) - start ))s"
		touch "$cache/.complete"
	fi
	cat "$cache/out.log"
	cp "$cache/out.log" "$dir/seeded/out.log"
	ln -s "$cache/pkg" "$dir/seeded/pkg"
	# A copy of the seed's objects, not a kernel build: objtool kept (a
	# new one would be newer than every object it checked, which would all
	# be compiled again), and only what the release string reaches compiled
	# (init/version.o, kernel/sys.o and a few more include utsrelease.h)
	b=$dir/seeded/pkg/build
	if [ -e "$k/tools/objtool/objtool" ]; then
		expect "objtool is the seed's, not built again (its time kept)" \
			test "$(stat -c %Y "$b/tools/objtool/objtool")" = "$(stat -c %Y "$k/tools/objtool/objtool")"
	fi
	expect "the build log shows its commands (the link of vmlinux): its count below means something" \
		grep -qE '^  LD +vmlinux$|scripts/link-vmlinux\.sh' "$dir/seeded/pkg/build.log"
	cc=$(grep -cE '^  CC +[^ ]+\.o$|-Wp,-MMD,[^ ]+\.o\.d ' "$dir/seeded/pkg/build.log" || true)
	objs=$(find "$k" -name '*.o' ! -path "$k/tools/*" ! -path "$k/scripts/*" | wc -l)
	expect "$cc objects compiled again, fewer than 50 of the seed's $objs: no kernel build" test "$cc" -lt 50
	"$0" verify "$cache/pkg" || fails=$((fails + 1))
	;;
verify)
	pkg=$(cd "${2:?the --out directory of kernel-deb.sh}" && pwd)
	rel=$(cat "$pkg/build/include/config/kernel.release")
	expect "the release ends in -p2pdma ($rel)" test "${rel%-p2pdma}" != "$rel"
	image=$(ls "$pkg/linux-image-${rel}_"*.deb)
	headers=$(ls "$pkg/linux-headers-${rel}_"*.deb)
	[ ! -e "$pkg/../out.log" ] || expect "it names the install command with both packages" \
		has_line "$pkg/../out.log" "^  apt install $image $headers\$"
	r=$dir/root
	rm -rf "$r"
	dpkg -x "$image" "$r"
	dpkg -x "$headers" "$r"
	# bzImage: "HdrS" at 0x202, the boot protocol's magic
	expect "boot/vmlinuz-$rel is a bzImage" test "$(dd if="$r/boot/vmlinuz-$rel" bs=1 skip=514 count=4 2>/dev/null)" = HdrS
	expect "boot/System.map-$rel holds pci_p2pdma_add_resource" \
		has_line "$r/boot/System.map-$rel" ' [Tt] pci_p2pdma_add_resource$'
	expect "boot/config-$rel: CONFIG_PCI_P2PDMA=y" has_line "$r/boot/config-$rel" '^CONFIG_PCI_P2PDMA=y$'
	expect "boot/config-$rel: CONFIG_LOCALVERSION=\"-p2pdma\"" has_line "$r/boot/config-$rel" '^CONFIG_LOCALVERSION="-p2pdma"$'
	expect "lib/modules/$rel holds modules.builtin and modules.order" \
		test -s "$r/lib/modules/$rel/modules.builtin" -a -e "$r/lib/modules/$rel/modules.order"
	h=$r/usr/src/linux-headers-$rel
	expect "the headers' .config has CONFIG_PCI_P2PDMA=y" has_line "$h/.config" '^CONFIG_PCI_P2PDMA=y$'
	expect "the headers' kernel.release is $rel" test "$(cat "$h/include/config/kernel.release")" = "$rel"
	expect "lib/modules/$rel/build points at them" test "$(readlink "$r/lib/modules/$rel/build")" = "/usr/src/linux-headers-$rel"
	rm -rf "$P2P_TOP/out/modules/kernel-deb"
	if m=$(P2P_MODDIR=kernel-deb "$P2P_TOP/qemu/modules.sh" "$h" W=1); then
		v=$(modinfo -F vermagic "$m/drivers/p2pbar/p2pbar.ko" | awk '{print $1}')
		expect "the suite's modules build against the installed headers (W=1), vermagic $v" test "$v" = "$rel"
	else
		bad "the suite's modules build against the installed headers (W=1)"
	fi
	;;
stock)
	src=${2:?src} cfg=${3:?config}
	rm -rf "$dir/stock"
	if ! "$kdeb" --source "$src" --config "$cfg" --out "$dir/stock" --config-only > "$dir/stock.log" 2>&1; then
		cat "$dir/stock.log"; echo "FAILED: kernel-deb.sh --config-only on $cfg"; exit 1
	fi
	cat "$dir/stock.log"
	c=$dir/stock/build/.config
	for o in PCI_P2PDMA ZONE_DEVICE MEMORY_HOTPLUG MEMORY_HOTREMOVE SPARSEMEM_VMEMMAP; do
		expect "CONFIG_$o=y" has_line "$c" "^CONFIG_$o=y\$"
	done
	if grep -rqs --include='Kconfig*' -E '^config DMABUF_MOVE_NOTIFY$' "$src/drivers/dma-buf"; then
		expect "CONFIG_DMABUF_MOVE_NOTIFY=y" has_line "$c" '^CONFIG_DMABUF_MOVE_NOTIFY=y$'
	fi
	expect 'CONFIG_LOCALVERSION="-p2pdma"' has_line "$c" '^CONFIG_LOCALVERSION="-p2pdma"$'
	expect "no certificate file of Debian's build named (SYSTEM_TRUSTED_KEYS, SYSTEM_REVOCATION_KEYS empty)" \
		test -z "$(grep -E '^CONFIG_SYSTEM_(TRUSTED|REVOCATION)_KEYS="[^"]' "$c")"
	if grep -q '^CONFIG_MODULE_SIG=y' "$c"; then
		expect "modules signed by a key the build generates (MODULE_SIG_KEY certs/signing_key.pem)" \
			has_line "$c" '^CONFIG_MODULE_SIG_KEY="certs/signing_key.pem"$'
	fi
	expect "debug info off" has_line "$c" '^CONFIG_DEBUG_INFO_NONE=y$'
	# Debian's options all kept, but what the script changes on purpose
	# (debug info, the release, the signing files)
	lost=$(comm -23 <(grep -E '^CONFIG_[A-Z0-9_]+=[ym]$' "$cfg" | sort) <(grep '^CONFIG_' "$c" | sort) |
	       grep -vE '^CONFIG_(DEBUG_INFO|PAHOLE|GDB_SCRIPTS|DEBUG_INFO_[A-Z0-9_]+|LOCALVERSION_AUTO)=' || true)
	[ -z "$lost" ] || { echo "lost:"; echo "$lost"; }
	expect "every other option Debian's configuration sets is kept" test -z "$lost"
	;;
no-p2pdma)
	src=${2:?src} cfg=${3:?config}
	mkdir -p "$dir"
	zcat -f "$cfg" > "$dir/32bit.config"
	"$src/scripts/config" --file "$dir/32bit.config" -d 64BIT
	rm -rf "$dir/no-p2pdma" "$dir/control"
	rc=0
	"$kdeb" --source "$src" --config "$dir/32bit.config" --out "$dir/no-p2pdma" > "$dir/no-p2pdma.log" 2>&1 || rc=$?
	cat "$dir/no-p2pdma.log"
	expect "a 32-bit configuration is refused (exit $rc)" test $rc -ne 0
	expect "... naming CONFIG_PCI_P2PDMA" has_line "$dir/no-p2pdma.log" '^error: .*cannot have P2PDMA: .*CONFIG_PCI_P2PDMA'
	expect "... and CONFIG_MEMORY_HOTPLUG's unmet dependency, CONFIG_64BIT" \
		sh -c "sed -n '/^  CONFIG_MEMORY_HOTPLUG /,/^  CONFIG_/p' '$dir/no-p2pdma.log' | grep -q '\"depends on 64BIT\" is not met: CONFIG_64BIT not set'"
	expect "... before any build (no package, no object)" \
		sh -c "! ls '$dir/no-p2pdma/'*.deb 2>/dev/null && ! ls '$dir/no-p2pdma/build/init/'*.o 2>/dev/null"
	# the control: the same configuration, 64-bit, passes
	expect "the same configuration, 64-bit, is accepted (--config-only)" \
		"$kdeb" --source "$src" --config "$cfg" --out "$dir/control" --config-only
	;;
secure-boot)
	src=${2:?src} cfg=${3:?config}
	fake_mokutil
	mkdir -p "$dir/sb"
	sb() {	# sb NAME STATE ENROLLED ARGS...: kernel-deb.sh --config-only, its exit status in $rc
		rc=0
		PATH=$dir/bin:$PATH SB_STATE=$2 SB_ENROLLED=$3 "$kdeb" --source "$src" --config "$cfg" \
			--out "$dir/sb/$1" --config-only "${@:4}" > "$dir/sb/$1.log" 2>&1 || rc=$?
		sed "s/^/  $1: /" "$dir/sb/$1.log"
	}
	sb off 'SecureBoot disabled' 'is not enrolled'
	expect "Secure Boot off: said, and accepted" \
		sh -c "[ $rc -eq 0 ] && grep -q 'Secure Boot: off (mokutil --sb-state: SecureBoot disabled)' '$dir/sb/off.log'"
	sb noefi 'EFI variables are not supported on this system' 'is not enrolled'
	expect "no EFI variables: off, and accepted" \
		sh -c "[ $rc -eq 0 ] && grep -q 'Secure Boot: off (mokutil --sb-state: EFI variables' '$dir/sb/noefi.log'"
	sb nokey 'SecureBoot enabled' 'is not enrolled' --key "$dir/sb/none.key" --cert "$dir/sb/none.pub"
	expect "Secure Boot on, no key: refused before configuring" \
		sh -c "[ $rc -ne 0 ] && [ ! -e '$dir/sb/nokey/build/.config' ]"
	expect "... naming the key, how to make it and how to enroll it" \
		sh -c "grep -q '^error: Secure Boot is on.*no readable key pair $dir/sb/none.key' '$dir/sb/nokey.log' &&
		       grep -q -- '-keyout $dir/sb/none.key -outform DER -out $dir/sb/none.pub' '$dir/sb/nokey.log' &&
		       grep -q 'mokutil --import $dir/sb/none.pub' '$dir/sb/nokey.log'"
	need_pkgs sbsigntool openssl
	rm -f "$dir/sb/mok.key" "$dir/sb/mok.pub"
	openssl req -new -x509 -nodes -days 1 -subj '/CN=kernel-deb-check throwaway' -newkey rsa:2048 \
		-keyout "$dir/sb/mok.key" -outform DER -out "$dir/sb/mok.pub" >/dev/null 2>&1
	sb key 'SecureBoot enabled' 'is not enrolled' --key "$dir/sb/mok.key" --cert "$dir/sb/mok.pub"
	expect "Secure Boot on, a key: accepted, the signing announced, its enrolment missing said with the command" \
		sh -c "[ $rc -eq 0 ] && grep -q 'image will be signed with $dir/sb/mok.pub, which is NOT enrolled' '$dir/sb/key.log' &&
		       grep -q 'mokutil --import $dir/sb/mok.pub' '$dir/sb/key.log'"
	sb enrolled 'SecureBoot enabled' 'is already enrolled' --key "$dir/sb/mok.key" --cert "$dir/sb/mok.pub"
	expect "... an enrolled one: said so" \
		sh -c "[ $rc -eq 0 ] && grep -q 'signed with $dir/sb/mok.pub, which is enrolled' '$dir/sb/enrolled.log'"
	sb unsigned 'SecureBoot enabled' 'is not enrolled' --key "$dir/sb/none.key" --cert "$dir/sb/none.pub" --unsigned
	expect "Secure Boot on, --unsigned: accepted with a warning" \
		sh -c "[ $rc -eq 0 ] && grep -q 'warning: --unsigned: shim will refuse' '$dir/sb/unsigned.log'"
	# The signing itself, on a PE image (the bench's kernels have no EFI
	# stub): a made-up linux-image package holding a tiny EFI application
	p=$dir/sb/pkg r=9.9.9-p2pdma
	rm -rf "$p"; mkdir -p "$p/tree/DEBIAN" "$p/tree/boot" "$p/x"
	printf 'void _start(void) { for (;;); }\n' > "$p/a.c"
	gcc -O2 -fpic -shared -nostdlib -o "$p/a.so" "$p/a.c"
	objcopy --target=efi-app-x86_64 "$p/a.so" "$p/tree/boot/vmlinuz-$r"
	printf 'Package: linux-image-%s\nVersion: 1\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n' "$r" \
		> "$p/tree/DEBIAN/control"
	(cd "$p/tree" && md5sum "boot/vmlinuz-$r" > DEBIAN/md5sums)
	dpkg-deb --root-owner-group -b "$p/tree" "$p/linux-image-${r}_1_amd64.deb" >/dev/null
	openssl x509 -inform DER -in "$dir/sb/mok.pub" -out "$p/mok.pem"
	expect "the image is not signed before (sbverify fails)" \
		sh -c "! sbverify --cert '$p/mok.pem' '$p/tree/boot/vmlinuz-$r' >/dev/null 2>&1"
	expect "--sign DEB: exit 0" "$kdeb" --sign "$p/linux-image-${r}_1_amd64.deb" \
		--key "$dir/sb/mok.key" --cert "$dir/sb/mok.pub"
	dpkg-deb -R "$p/linux-image-${r}_1_amd64.deb" "$p/x"
	expect "... its boot/vmlinuz-$r verifies with the key's certificate (sbverify)" \
		sbverify --cert "$p/mok.pem" "$p/x/boot/vmlinuz-$r"
	expect "... and the package's md5sums match it" sh -c "cd '$p/x' && md5sum --quiet -c DEBIAN/md5sums"
	expect "--sign a package that is not a linux-image: refused" \
		sh -c "! '$kdeb' --sign '$dir/sb/key.log' --key '$dir/sb/mok.key' --cert '$dir/sb/mok.pub' 2>/dev/null"
	;;
*)
	sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
echo "$fails failed"
[ "$fails" -eq 0 ]
