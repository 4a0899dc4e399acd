#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build installable Debian packages of a kernel with P2PDMA (make kernel-deb):
# Debian's kernel source and configuration, CONFIG_PCI_P2PDMA and what it
# needs turned on, the kernel's own "make bindeb-pkg", a release suffix.
#
#   scripts/kernel-deb.sh [OPTION...]
#     --source DIR        a kernel source tree, clean (no .config in it); default:
#                         Debian's linux-source-<series> of the running kernel's
#                         series, fetched and unpacked as the bench does (qemu/kernel.sh)
#     --series X.Y        that series instead of the running kernel's (6.1 or later)
#     --config FILE       the configuration to start from; default: the running kernel's
#                         (/boot/config-<release>, else /proc/config.gz), else Debian's
#                         for that release (from its linux-headers package; else the
#                         series' newest); --config debian: Debian's, whatever runs
#     --out DIR           the build tree in DIR/build, the packages in DIR
#                         (default: out/kernel-deb in the checkout)
#     --localversion SUF  the release's suffix (default: -p2pdma)
#     --debug-info        keep the configuration's debug info (off by default: it
#                         lengthens the build and adds a large -dbg package; BTF
#                         needs dwarves installed before)
#     --key KEY --cert CERT   with Secure Boot on, sign the image with these (default:
#                         DKMS's MOK key, /var/lib/dkms/mok.key and mok.pub)
#     --unsigned          with Secure Boot on, build an unsigned image all the same
#     --sign DEB          sign the image in DEB, a linux-image package made here, with
#                         --key and --cert (DKMS's by default), and nothing else
#     --seed DIR          start from a copy of DIR, a tree built from the same source
#                         (its objects): only what the changes reach is compiled
#     --config-only       configure and check, build nothing
#     --jobs N            make -jN (default: the number of CPUs)
#
# Each option wanted is checked in the final .config; one that could not be
# set is an error naming the dependency that is missing. Debian's signing-key
# settings, which only Debian's own build can satisfy, are replaced: the
# kernel signs its modules with a key it generates. Secure Boot on (mokutil
# --sb-state), the image in the linux-image package is signed with sbsign.
# Prints the packages and the command that installs them.
set -euo pipefail
. "$(dirname "$0")/../qemu/lib.sh"
# the release is the configuration's: no "+" for a git tree's changes
export LOCALVERSION=

usage() { awk 'NR > 3 && /^#/ { sub(/^# ?/, ""); print; next } NR > 3 { exit }' "$0"; exit "${1:-2}"; }

src='' series='' config='' out=$P2P_TOP/out/kernel-deb localversion=-p2pdma debug_info=''
key='' cert='' unsigned='' sign_only='' seed='' config_only='' jobs=$(nproc)
while [ $# -gt 0 ]; do
	case "$1" in
	--source) src=${2:?--source DIR}; shift ;;
	--series) series=${2:?--series X.Y}; shift ;;
	--config) config=${2:?--config FILE}; shift ;;
	--out) out=${2:?--out DIR}; shift ;;
	--localversion) localversion=${2?--localversion SUFFIX}; shift ;;
	--debug-info) debug_info=1 ;;
	--key) key=${2:?--key FILE}; shift ;;
	--cert) cert=${2:?--cert FILE}; shift ;;
	--unsigned) unsigned=1 ;;
	--sign) sign_only=${2:?--sign DEB}; shift ;;
	--seed) seed=${2:?--seed DIR}; shift ;;
	--config-only) config_only=1 ;;
	--jobs) jobs=${2:?--jobs N}; shift ;;
	-h|--help) usage 0 ;;
	*) echo "kernel-deb: unknown argument: $1" >&2; usage ;;
	esac
	shift
done
case "$localversion" in
''|-*) ;;
*) die "--localversion $localversion: start it with '-' (the release reads <version>$localversion)" ;;
esac
case "$jobs" in ''|*[!0-9]*) die "--jobs $jobs: a number" ;; esac

# The options P2PDMA needs, deepest first (6.1 to 7.x: drivers/pci/Kconfig,
# mm/Kconfig): PCI_P2PDMA depends on ZONE_DEVICE and 64BIT; ZONE_DEVICE on
# MEMORY_HOTPLUG, MEMORY_HOTREMOVE, SPARSEMEM_VMEMMAP (and the arch's
# ARCH_HAS_PTE_DEVMAP before 7.x); MEMORY_HOTREMOVE on MIGRATION.
# DMABUF_MOVE_NOTIFY: p2pbar's dma-bufs to importers before 7.x, where the
# option went away (Documentation/dmabuf.rst). Each is set where the tree
# has it; the REQUIRED ones must be there.
WANT=(SPARSEMEM_VMEMMAP MIGRATION MEMORY_HOTPLUG MEMORY_HOTREMOVE ZONE_DEVICE PCI_P2PDMA DMABUF_MOVE_NOTIFY)
REQUIRED=' MEMORY_HOTPLUG ZONE_DEVICE PCI_P2PDMA '

# Debian packages a step needs (a Debian tool: bindeb-pkg is the kernel's
# Debian packaging); one line naming what to install
need() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] ||
		die "missing packages: ${missing[*]}; install them: apt install ${missing[*]}"
}

release=$(uname -r)
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)

# repack DEB FUNC: the package unpacked, FUNC run in its tree, md5sums
# brought up to date, packed again in place
repack() {
	local deb=$1 fn=$2 tmp
	tmp=$(mktemp -d "$out/.repack.XXXXXX")
	dpkg-deb -R "$deb" "$tmp/pkg"
	(cd "$tmp/pkg" && "$fn")
	(cd "$tmp/pkg" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
		xargs -r -d '\n' md5sum > DEBIAN/md5sums)
	dpkg-deb --root-owner-group -Zgzip -b "$tmp/pkg" "$deb" >/dev/null
	rm -rf "$tmp"
}

# sign_deb DEB REL: boot/vmlinuz-REL in DEB signed with $key and $cert
# (PEM or DER, as DKMS's mok.pub), the signature checked with sbverify
sign_deb() {
	local deb=$1 pem
	rel=$2
	pem=$(mktemp "$out/.mok-cert.XXXXXX")
	openssl x509 -in "$cert" -out "$pem" 2>/dev/null || openssl x509 -inform DER -in "$cert" -out "$pem" ||
		die "$cert: not an X.509 certificate (PEM or DER)"
	sign_image() {
		[ -f "boot/vmlinuz-$rel" ] || { echo "error: no boot/vmlinuz-$rel in the package" >&2; return 1; }
		sbsign --key "$key" --cert "$pem" --output "boot/vmlinuz-$rel.signed" "boot/vmlinuz-$rel" &&
			mv "boot/vmlinuz-$rel.signed" "boot/vmlinuz-$rel" && sbverify --cert "$pem" "boot/vmlinuz-$rel"
	}
	repack "$deb" sign_image || { rm -f "$pem"; die "signing the image in $deb with $key failed"; }
	rm -f "$pem"
	say "Secure Boot: boot/vmlinuz-$rel in $(basename "$deb") signed with $cert"
}

# --- Secure Boot: decided before hours of build ---------------------------
# On when mokutil says so (else, without mokutil, the SecureBoot EFI
# variable: its fifth byte, after 4 bytes of attributes); off otherwise.
sb_state() {
	local out v
	if command -v mokutil >/dev/null 2>&1; then
		out=$(mokutil --sb-state 2>&1 || true)
		case "$out" in
		*"SecureBoot enabled"*) echo "on (mokutil --sb-state: SecureBoot enabled)" ;;
		*) echo "off (mokutil --sb-state: $(head -n 1 <<< "$out"))" ;;
		esac
		return
	fi
	v=$(ls /sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0ba7e6b8c09 2>/dev/null || true)
	if [ -n "$v" ] && [ "$(od -An -t u1 -j 4 -N 1 "$v" 2>/dev/null | tr -d ' ')" = 1 ]; then
		echo "on (the SecureBoot EFI variable; mokutil is not installed)"
	elif [ -d /sys/firmware/efi ]; then
		echo "off (the SecureBoot EFI variable)"
	else
		echo "off (not booted through EFI)"
	fi
}

# DKMS's MOK key pair: framework.conf's mok_signing_key/mok_certificate,
# else its default, the one it signs modules with
dkms_mok() {	# dkms_mok mok_signing_key|mok_certificate DEFAULT
	local v
	v=$(cat /etc/dkms/framework.conf /etc/dkms/framework.conf.d/*.conf 2>/dev/null |
	    sed -n "s/^[[:space:]]*$1=[\"']\{0,1\}\([^\"']*\)[\"']\{0,1\}[[:space:]]*\$/\1/p" | tail -n 1)
	echo "${v:-$2}"
}

if [ -n "$sign_only" ]; then
	[ -f "$sign_only" ] || die "--sign $sign_only: no such package"
	pkgname=$(dpkg-deb -f "$sign_only" Package) || die "--sign $sign_only: not a package"
	case "$pkgname" in
	linux-image-*-dbg|linux-image-) die "--sign $sign_only: $pkgname holds no image" ;;
	linux-image-*) ;;
	*) die "--sign $sign_only: $pkgname is not a linux-image package" ;;
	esac
	[ -n "$key" ] || key=$(dkms_mok mok_signing_key /var/lib/dkms/mok.key)
	[ -n "$cert" ] || cert=$(dkms_mok mok_certificate /var/lib/dkms/mok.pub)
	[ -r "$key" ] && [ -r "$cert" ] || die "--sign: no readable key pair $key, $cert (--key, --cert)"
	need sbsigntool
	out=$(cd "$(dirname "$sign_only")" && pwd)
	sign_deb "$sign_only" "${pkgname#linux-image-}"
	exit 0
fi

sb=$(sb_state)
sign=''
say "Secure Boot: $sb"
if [ "${sb%% *}" = on ]; then
	[ -n "$key" ] || key=$(dkms_mok mok_signing_key /var/lib/dkms/mok.key)
	[ -n "$cert" ] || cert=$(dkms_mok mok_certificate /var/lib/dkms/mok.pub)
	if [ -n "$unsigned" ]; then
		say "warning: --unsigned: shim will refuse to boot this kernel while Secure Boot is on; turn it off in the firmware first"
	else
		problem=''
		if [ ! -r "$key" ] || [ ! -r "$cert" ]; then
			problem="no readable key pair $key, $cert"
		elif ! command -v sbsign >/dev/null 2>&1; then
			problem="sbsign is not installed"
		fi
		if [ -n "$problem" ]; then
			{
			echo "error: Secure Boot is on, and the image must be signed by a key shim trusts: $problem."
			echo "  The kernel built here is signed by no key, and shim refuses to boot it. Sign it with DKMS's MOK"
			echo "  key (the key DKMS signs the suite's modules with), once:"
			echo "    apt install sbsigntool mokutil"
			echo "    # the key: DKMS makes it when it first signs a module; or make it as DKMS does:"
			echo "    openssl req -new -x509 -nodes -days 36500 -subj '/CN=DKMS module signing key' \\"
			echo "        -newkey rsa:2048 -keyout $key -outform DER -out $cert"
			echo "    mokutil --import $cert   # a one-time password, then reboot: MokManager, Enroll MOK"
			echo "  then run this again (or: --key/--cert another enrolled key; --unsigned, and Secure Boot turned off)."
			} >&2
			exit 1
		fi
		sign=1
		enrolled=$(mokutil --test-key "$cert" 2>&1 || true)
		case "$enrolled" in
		*"already enrolled"*) say "Secure Boot: the image will be signed with $cert, which is enrolled" ;;
		*)
			say "Secure Boot: the image will be signed with $cert, which is NOT enrolled ($(head -n 1 <<< "$enrolled"))"
			say "  enroll it before booting the kernel: mokutil --import $cert, reboot, MokManager: Enroll MOK"
			;;
		esac
	fi
fi

# --- the source ----------------------------------------------------------
seed_src=''
if [ -n "$seed" ]; then
	seed=$(cd "$seed" && pwd)
	[ -f "$seed/.config" ] && [ -f "$seed/Makefile" ] || die "--seed $seed: not a kernel build tree (no .config, Makefile)"
	seed_src=$(sed -n 's/^include \(.*\)\/Makefile$/\1/p' "$seed/Makefile")
	[ -n "$seed_src" ] || die "--seed $seed: not a tree built with O= (its Makefile names no source)"
	[ -n "$src" ] || src=$seed_src
fi
if [ -z "$src" ]; then
	[ -n "$series" ] || series=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<< "$release")
	say "source: Debian's linux-source-$series (qemu/kernel.sh source)"
	src=$("$P2P_TOP/qemu/kernel.sh" source "$series") ||
		die "no Debian linux-source-$series to build: give --series (6.1: Debian 12's, 6.12: 13's) or --source DIR"
fi
src=$(cd "$src" && pwd)
[ -z "$seed_src" ] || [ "$src" = "$(cd "$seed_src" && pwd)" ] ||
	die "--seed $seed was built from $seed_src, not --source $src"
[ -f "$src/Makefile" ] && [ -f "$src/Kconfig" ] || die "$src: not a kernel source tree"
kver=$(make -s -C "$src" kernelversion 2>/dev/null) || die "$src: make kernelversion failed"
awk -F. '{ exit !($1 > 6 || ($1 == 6 && $2 >= 1)) }' <<< "$kver" ||
	die "$src is Linux $kver: the suite needs 6.1 or later"
series=${series:-$(cut -d. -f1,2 <<< "$kver")}
say "source: $src (Linux $kver)"

# --- the configuration to start from ---------------------------------------
# Debian's own for the running release (else the newest of the series), from
# the linux-headers package, as qemu/kernel.sh's stock does
debian_config() {	# debian_config OUTFILE
	local pkg deb
	papt_update
	pkg=linux-headers-$release
	if ! papt apt-cache show "$pkg" >/dev/null 2>&1; then
		pkg=$(papt apt-cache search --names-only \
			"^linux-headers-${series//./\\.}\.[0-9]+(-[0-9]+|\+deb[0-9]+)-$arch\$" |
		      awk '{print $1}' | sort -V | tail -n 1)
	fi
	[ -n "$pkg" ] || die "no configuration: no /boot/config-$release, /proc/config.gz, nor a Debian headers package of $series for $arch (give --config)"
	mkdir -p "$P2P_CACHE/debs"
	deb=$(ls "$P2P_CACHE/debs/${pkg}_"*.deb 2>/dev/null | tail -n 1 || true)
	if [ -z "$deb" ]; then
		say "fetch: $pkg (Debian's configuration)"
		(cd "$P2P_CACHE/debs" && papt apt-get -qq download "$pkg" 2>/dev/null) || die "download of $pkg failed"
		deb=$(ls "$P2P_CACHE/debs/${pkg}_"*.deb | tail -n 1)
	fi
	dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards './usr/src/linux-headers-*/.config' > "$1"
	[ -s "$1" ] || die "$deb holds no .config"
	echo "Debian's ($pkg)"
}

build=$out/build
mkdir -p "$out"
out=$(cd "$out" && pwd) build=$out/build
case "$build/" in "$src"/*) die "--out $out is inside the source tree $src: choose another" ;; esac
need make gcc flex bison
if [ -n "$seed" ]; then
	[ "$seed" != "$build" ] || die "--seed and --out's build tree are one directory"
	say "seed: a copy of $seed (its objects: only what changes is compiled again)"
	rm -rf "$build" "$build.tmp"
	cp -a "$seed" "$build.tmp"
	# the bench's stamps (qemu/kernel.sh) are not this build's
	rm -f "$build.tmp/.complete" "$build.tmp/.prepared" "$build.tmp/.fragment"
	mv "$build.tmp" "$build"
	# objtool's build (tools/) records the tree's absolute path in its .cmd
	# files: moved, it would be built again, and every object checked by
	# the new objtool compiled again. The same commands, in the new place;
	# their times kept
	{ grep -rlZ -F --include='.*.cmd' --include='*.d' "$seed/" "$build/tools" 2>/dev/null || true; } |
	while IFS= read -r -d '' f; do
		sed "s|$seed/|$build/|g" "$f" > "$f.new" && touch -r "$f" "$f.new" && mv "$f.new" "$f"
	done
fi
mkdir -p "$build"
base=$build/.config.base
if [ "$config" = debian ]; then
	from=$(debian_config "$base")
elif [ -n "$config" ]; then
	zcat -f "$config" > "$base" || die "cannot read --config $config"
	from=$config
elif [ -r "/boot/config-$release" ]; then
	cp "/boot/config-$release" "$base"; from=/boot/config-$release
elif zcat /proc/config.gz > "$base" 2>/dev/null; then
	from=/proc/config.gz
else
	from=$(debian_config "$base")
fi
grep -q '^CONFIG_' "$base" || die "$from is not a kernel configuration"
say "config: from $from"

# --- the changes -----------------------------------------------------------
cp "$base" "$build/.config"
sc() { "$src/scripts/config" --file "$build/.config" "$@"; }
set_in() { grep -q "^CONFIG_$1=" "$build/.config"; }	# the configuration sets it
# the symbols this tree defines (for its arch: the others' Kconfig aside)
case "$(uname -m)" in
x86_64|i?86) srcarch=x86 ;; aarch64) srcarch=arm64 ;; arm*) srcarch=arm ;;
ppc*) srcarch=powerpc ;; riscv*) srcarch=riscv ;; s390*) srcarch=s390 ;; *) srcarch=$(uname -m) ;;
esac
defined=$(cd "$src" && grep -rhoE --include='Kconfig*' '^[[:space:]]*(menu)?config [A-Za-z0-9_]+' \
	--exclude-dir=arch . "arch/$srcarch" "arch/Kconfig" 2>/dev/null | awk '{print $2}' | sort -u)
has() { grep -qx "$1" <<< "$defined"; }
wanted=()
for s in "${WANT[@]}"; do
	if has "$s"; then
		wanted+=("$s")
		sc -e "$s"
	elif [[ $REQUIRED == *" $s "* ]]; then
		die "Linux $kver has no CONFIG_$s: not a kernel the suite supports"
	else
		say "config: CONFIG_$s does not exist in Linux $kver (not needed there)"
	fi
done
sc --set-str LOCALVERSION "$localversion" -d LOCALVERSION_AUTO
# Debian's signing set-up names files of Debian's build (its certificates,
# its signing key): the kernel's own generated key instead, no extra trusted
# or revoked certificates (the Debian Kernel Handbook, "Building a custom
# kernel from Debian kernel source")
! set_in SYSTEM_TRUSTED_KEYS || sc --set-str SYSTEM_TRUSTED_KEYS ''
! set_in SYSTEM_REVOCATION_KEYS || sc --set-str SYSTEM_REVOCATION_KEYS ''
! set_in MODULE_SIG_KEY || sc --set-str MODULE_SIG_KEY certs/signing_key.pem
if [ -z "$debug_info" ] && grep -q '^CONFIG_DEBUG_INFO=y' "$build/.config"; then
	say "config: debug info off (Debian's configuration has it: --debug-info keeps it)"
	sc -d DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT -d DEBUG_INFO_DWARF4 -d DEBUG_INFO_DWARF5 -e DEBUG_INFO_NONE \
		-d DEBUG_INFO
fi
# syncconfig: include/config/auto.conf, which the release is read from
{ make -s -C "$src" O="$build" olddefconfig && make -s -C "$src" O="$build" syncconfig; } \
	>"$build/configure.log" 2>&1 ||
	{ cat "$build/configure.log" >&2; die "make olddefconfig failed (log: $build/configure.log)"; }

# Why SYM is not set: its "depends on" lines (and the "if" blocks around
# it) evaluated against .config, each unmet one with the symbols in it that
# are not set; a symbol without a prompt, with the "select" lines that set it
why_not() {	# why_not SRC SRCARCH CONFIG SYM...
	python3 - "$@" <<'PY'
import os, re, sys

src, srcarch, cfg, syms = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
val = {}
for line in open(cfg, errors='replace'):
    m = re.match(r'CONFIG_(\w+)=(.*)', line)
    if m:
        val[m.group(1)] = m.group(2).strip('"')
    m = re.match(r'# CONFIG_(\w+) is not set', line)
    if m:
        val[m.group(1)] = 'n'

SYM = re.compile(r'(?=[A-Z0-9_]*[A-Z])[A-Z0-9_]+$')     # 64BIT too
TOK = re.compile(r'\s*(&&|\|\||!=|<=|>=|[!()=<>]|"[^"]*"|\'[^\']*\'|\$\([^)]*\)|[A-Za-z0-9_.+-]+)')


def tri(v):
    return {'y': 2, 'm': 1}.get(v, 0)


def value(tok):
    if tok[0] in '"\'':
        return tok[1:-1]
    if tok.startswith('$('):
        return 'y'          # a macro: the toolchain's say, not the configuration's
    if tok in ('y', 'm', 'n'):
        return tok
    return val.get(tok, 'n' if SYM.match(tok) else tok)


def evaluate(expr):
    toks = TOK.findall(expr)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take():
        pos[0] += 1
        return toks[pos[0] - 1]

    def prim():
        t = take()
        if t == '!':
            return 2 - prim()
        if t == '(':
            v = orx()
            take()
            return v
        if peek() in ('=', '!=', '<', '>', '<=', '>='):
            op, b = take(), value(take())
            a = value(t)
            eq = a == b
            return 2 if {'=': eq, '!=': not eq}.get(op, True) else 0
        return tri(value(t))

    def andx():
        v = prim()
        while peek() == '&&':
            take()
            v = min(v, prim())
        return v

    def orx():
        v = andx()
        while peek() == '||':
            take()
            v = max(v, andx())
        return v
    try:
        return orx()
    except IndexError:
        return 2


def kconfigs():
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        parts = rel.split(os.sep)
        if parts[0] == 'arch' and len(parts) > 1 and parts[1] != srcarch:
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not d.startswith('.')]
        for f in files:
            if f.startswith('Kconfig'):
                yield os.path.join(root, f)


ENDS = re.compile(r'\s*(config|menuconfig|choice|endchoice|menu|endmenu|if|endif|source|comment|mainmenu)\b')
defs, selects = {}, {}
for path in kconfigs():
    rel = os.path.relpath(path, src)
    lines = open(path, errors='replace').read().replace('\\\n', ' ').split('\n')
    ifs, cur, helpind = [], None, None
    for no, line in enumerate(lines, 1):
        ind = len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())
        if helpind is not None:
            if not line.strip() or ind > helpind:
                continue    # help text
            helpind = None
        if re.match(r'\s*(help|---help---)\s*$', line):
            helpind = ind
            continue
        m = re.match(r'\s*(?:menu)?config\s+(\w+)\s*$', line)
        if ENDS.match(line):
            cur = None
        if m:
            cur = {'at': f'{rel}:{no}', 'deps': [f'if {e}' for e in ifs], 'prompt': False}
            defs.setdefault(m.group(1), []).append(cur)
            continue
        m = re.match(r'\s*if\s+(.*)', line)
        if m:
            ifs.append(m.group(1).strip())
            continue
        if re.match(r'\s*endif\b', line) and ifs:
            ifs.pop()
            continue
        m = re.match(r'\s*(?:select|imply)\s+(\w+)(?:\s+if\s+(.*))?', line)
        if m and cur is not None:
            selects.setdefault(m.group(1), []).append((f'{rel}:{no}', line.strip(), m.group(2)))
        if cur is None:
            continue
        m = re.match(r'\s*depends\s+on\s+(.*)', line)
        if m:
            cur['deps'].append('depends on ' + m.group(1).strip())
        if re.match(r'\s*(bool|tristate|string|int|hex|prompt)\s+["\']', line):
            cur['prompt'] = True


def unset_in(expr):
    out = []
    for t in TOK.findall(expr):
        if SYM.match(t) and tri(value(t)) == 0 and f'CONFIG_{t}' not in out:
            out.append(f'CONFIG_{t}')
    return out


for s in syms:
    if tri(val.get(s, 'n')):
        continue
    for d in defs.get(s, []):
        print(f'  CONFIG_{s} ({d["at"]}) is not set:')
        unmet = [e for e in d['deps'] if evaluate(e.split(' ', 2)[-1] if e.startswith('depends') else e[3:]) == 0]
        for e in unmet:
            names = unset_in(e)
            print(f'    "{e}" is not met' + (f': {", ".join(names)} not set' if names else ''))
            for n in names:
                sym = n[7:]
                if sym in defs and not any(x['prompt'] for x in defs[sym]):
                    for at, line, cond in selects.get(sym, [])[:3]:
                        print(f'      {n} has no prompt: only "{line}" ({at}) sets it')
        if not unmet:
            print('    its dependencies are met: the configuration turns it off (a choice, or "=n" kept)')
PY
}

missing=()
for s in "${wanted[@]}"; do
	grep -qx "CONFIG_$s=y" "$build/.config" || missing+=("$s")
done
grep -qxF "CONFIG_LOCALVERSION=\"$localversion\"" "$build/.config" ||
	die "CONFIG_LOCALVERSION is $(grep '^CONFIG_LOCALVERSION=' "$build/.config" || echo absent), not \"$localversion\""
if [ ${#missing[@]} -gt 0 ]; then
	{
	echo "error: the configuration (from $from) cannot have P2PDMA: make olddefconfig left off ${missing[*]/#/CONFIG_}"
	echo "  (each, and what is missing for it):"
	why_not "$src" "$srcarch" "$build/.config" "${missing[@]}" || true
	if ! grep -qx 'CONFIG_64BIT=y' "$build/.config"; then
		echo "  This is a 32-bit kernel (CONFIG_64BIT is not set): P2PDMA needs a 64-bit one (amd64, arm64)."
	fi
	echo "  Fix: start from a configuration where those dependencies can be met (--config), or set them there."
	} >&2
	exit 1
fi
rel=$(make -s -C "$src" O="$build" kernelrelease)
say "config: P2PDMA on (${wanted[*]/#/CONFIG_}), release $rel; $build/.config"
diff <(grep '^CONFIG_' "$base" | sort) <(grep '^CONFIG_' "$build/.config" | sort) |
	sed -n 's/^> /  now:  /p; s/^< /  was:  /p' > "$build/config.changes" || true
say "config: $(grep -c '^  now:' "$build/config.changes") lines changed or added, $(grep -c '^  was:' "$build/config.changes") changed or dropped (list: $build/config.changes)"
if [ -n "$config_only" ]; then
	echo "$build/.config"
	exit 0
fi

# --- the build: the kernel's own Debian packaging ----------------------------
need build-essential bc bison flex cpio kmod libelf-dev libssl-dev rsync dpkg-dev debhelper
! grep -q '^CONFIG_DEBUG_INFO_BTF=y' "$build/.config" || need dwarves
[ -z "$sign" ] || need sbsigntool
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
log=$out/build.log
start=$(date +%s)
say "build: make -j$jobs bindeb-pkg ($rel); the log: $log"
# one progress line every 30 s instead of thousands. A make of its own: a
# "make -s kernel-deb" above would silence the lines counted (MAKEFLAGS)
( env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$src" O="$build" -j"$jobs" bindeb-pkg >"$log" 2>&1 ) &
pid=$!
while kill -0 $pid 2>/dev/null; do
	for _ in 1 2 3 4 5 6; do sleep 5; kill -0 $pid 2>/dev/null || break 2; done
	say "build: $(grep -cE '^  (CC|AS|LD|AR)' "$log" || true) objects, $(( $(date +%s) - start ))s, last: $(grep -E '^  (CC|LD|GEN|INSTALL)' "$log" | tail -n 1 | awk '{print $NF}')"
done
if ! wait $pid; then
	grep -E 'error|Error' "$log" | head -n 20 >&2
	die "make bindeb-pkg failed after $(( $(date +%s) - start ))s; the log: $log"
fi
secs=$(( $(date +%s) - start ))

image=$(ls "$out/linux-image-${rel}_"*.deb 2>/dev/null | head -n 1 || true)	# not -dbg: "${rel}-dbg_"
headers=$(ls "$out/linux-headers-${rel}_"*.deb 2>/dev/null | head -n 1 || true)
[ -n "$image" ] || die "make bindeb-pkg made no linux-image-$rel package in $out"

# The headers package lacks .config (6.12's and 7.2's; 6.1's had it),
# which DKMS reads (its BUILD_EXCLUSIVE_CONFIG; the compiler, from
# CONFIG_CC_VERSION_TEXT): added back. The suite's Makefile does without
# it (include/config/auto.conf)
if [ -n "$headers" ] &&
   ! grep -q " \./usr/src/linux-headers-$rel/\.config\$" <<< "$(dpkg-deb -c "$headers")"; then
	add_config() { install -m 0644 "$build/.config" "usr/src/linux-headers-$rel/.config"; }
	repack "$headers" add_config
	say "headers: .config added to $(basename "$headers") (DKMS reads it)"
fi

[ -z "$sign" ] || sign_deb "$image" "$rel"

say "build: done in ${secs}s"
echo "Packages of Linux $rel (P2PDMA on), in $out:"
for d in "$image" "$headers" "$out"/linux-image-"$rel"-dbg_*.deb; do
	[ -e "$d" ] && echo "  $(basename "$d")"
done
echo "Install them (as root), then reboot into $rel and run p2pctl doctor:"
echo "  apt install $image${headers:+ $headers}"
echo "(linux-libc-dev_*.deb, also made, is not needed: keep Debian's.)"
