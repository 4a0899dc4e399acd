#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The insn plugin's profile mode and scripts/insn-prof.py, on the host,
# without booting: insn.c linked with insn-mock.c (a stand-in for QEMU's
# plugin API running a fixed script of blocks on two threads, one per
# vCPU), then the profile named against a made-up System.map and the
# guest's symbol lines. Each check says what it expected; the exit status
# is 1 if any failed.
#
#   qemu/plugins/insn-selftest.sh DIR    DIR holds qemu-plugin.h (the
#                                        cache entry of qemu/extools.sh plugin)
set -uo pipefail
hdr=${1:?the directory of qemu-plugin.h}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
bad=0
ok() { echo "ok: $1"; }
no() { echo "FAILED: $1"; bad=1; }
# expect DESCRIPTION FILE TEXT: FILE holds the line TEXT
expect() { if grep -qxF -- "$3" "$2"; then ok "$1"; else no "$1: no line '$3' in $(basename "$2")"; sed 's/^/  | /' "$2"; fi; }

[ -f "$hdr/qemu-plugin.h" ] || { echo "no $hdr/qemu-plugin.h"; exit 1; }
gcc -O2 -Wall -Wextra -Wno-unused-parameter -Werror -D_GNU_SOURCE -I"$hdr" -o "$T/mock" \
	"$here/insn.c" "$here/insn-mock.c" -lpthread || { echo "FAILED: insn.c and insn-mock.c do not build"; exit 1; }

# the default mode: the counts and nothing else
mkdir "$T/off" "$T/on"
(cd "$T/off" && "$T/mock" insn.log) || no "the mock runs the plugin in its default mode"
if ls "$T/off"/insn-prof.* >/dev/null 2>&1; then no "the default mode writes no profile"; else ok "the default mode writes no profile"; fi
sed 's/host_ns [0-9]*/host_ns T/' "$T/off/insn.log" > "$T/off.log"
expect "the default mode: window 1 opens after vCPU 0's 35 kernel and 32 user instructions" "$T/off.log" \
	"mark 2 vcpu 0 host_ns T vclock_ns -1 kernel 35,0 user 32,0"
expect "the default mode: and closes after 7,502 more, 3,000 of them vCPU 1's" "$T/off.log" \
	"mark 3 vcpu 0 host_ns T vclock_ns -1 kernel 1535,3000 user 3034,0"
# the profile mode: the same counts, and a profile per window
(cd "$T/on" && "$T/mock" insn.log prof=on) || no "the mock runs the plugin with prof=on"
if diff <(sed 's/host_ns [0-9]*//' "$T/off/insn.log") <(sed 's/host_ns [0-9]*//' "$T/on/insn.log") >/dev/null; then
	ok "prof=on counts as the default mode does (insn.log the same but for the host's times)"
else
	no "prof=on counts as the default mode does"; diff "$T/off/insn.log" "$T/on/insn.log" | sed 's/^/  | /'
fi
p1=$T/on/insn-prof.1 p2=$T/on/insn-prof.2 p3=$T/on/insn-prof.3
for f in "$p1" "$p2" "$p3"; do [ -s "$f" ] || no "prof=on writes $(basename "$f")"; done
expect "window 1: closed, nothing left out" "$p1" "insn-prof format 1 window 1 vcpus 2 dropped 0"
expect "window 1: the kernel block of both vCPUs, translated twice, one entry: 300 + 200 runs" "$p1" "ffffffff81000100 5 15 500"
expect "window 1: vCPU 1's block, not its 50 runs after the window" "$p1" "ffffffff81000200 4 12 500"
expect "window 1: the user block, not its 15 runs outside windows" "$p1" "555555555000 3 9 1000"
expect "window 1: the end marker's block inside, the start marker's outside" "$p1" "7f0000001010 2 8 1"
expect "window 1: its total is the window's count in insn.log (7,502)" "$p1" "end blocks 4 insns 7502"
expect "window 2: the kernel block counted from 0 again" "$p2" "ffffffff81000100 5 15 11"
expect "window 2: both vCPUs' runs of a block" "$p2" "ffffffffa0001010 6 18 42"
expect "window 2: its total" "$p2" "end blocks 3 insns 309"
expect "window 3, open at exit: written then, saying so" "$p3" "insn-prof format 1 window 3 open vcpus 2 dropped 0"
expect "window 3: its total" "$p3" "end blocks 1 insns 12"
if (cd "$T/off" && "$T/mock" insn.log prof=maybe) >/dev/null 2>&1; then no "prof=maybe is refused"; else ok "prof=maybe is refused"; fi

# names: System.map with the kernel 16 MiB lower than the guest runs it
# (a KASLR offset, from the guest's _text), a module from the guest's lines
d=$T/on
cat > "$d/System.map" <<'EOF'
0000000000000000 D __per_cpu_start
ffffffff80000000 T _text
ffffffff80000000 T _stext
ffffffff800000f0 t __pfx_foo_read
ffffffff80000100 T foo_read
ffffffff80000100 T foo_read_alias
ffffffff800001f0 t __pfx_bar_irq
ffffffff80000200 t bar_irq
ffffffff80800000 T _etext
ffffffff80900000 D some_data
EOF
{
	echo "P2P-BOOTED 6.12.117"
	echo "P2P-KSYMS-BEGIN 1"
	echo "M nvme 65536 0 - Live 0xffffffffa0000000"
	printf 'S ffffffffa0000ff0 t __pfx_nvme_queue_rq\t[nvme]\n'
	printf 'S ffffffffa0001000 t nvme_queue_rq\t[nvme]\n'
	echo "S ffffffff81000000 T _text"
	echo "P2P-KSYMS-END"
	echo 'P2P-BENCH {"bench":"engine-uring-reg","size":4096,"qd":32,"path":"dmabuf","ops":100,"mark":1}'
	echo 'P2P-BENCH {"bench":"nvme-pci-uring","size":4096,"qd":32,"path":"p2p","ops":10,"mark":2}'
} > "$d/serial.log"
prof() { python3 "$top/scripts/insn-prof.py" "$@"; }
if prof "$d" > "$T/out" 2> "$T/err"; then ok "insn-prof.py names the boot's profile"; else no "insn-prof.py names the boot's profile: $(cat "$T/err")"; fi
o=$T/out
expect "the comparison of (c) with nvme-pci's rows" "$o" "### io_uring, 4 KiB QD32: (c) registered dma-buf vs best of (a), (b)"
expect "the KASLR offset taken from the guest's _text" "$o" "Note ($d): the guest's kernel runs +0x1000000 from its System.map (KASLR)."
expect "p2pnvme's row: 75.0 per I/O, the whole window profiled" "$o" \
	"- p2pnvme: engine-uring-reg:4096:32:dmabuf, 75.0 insns per I/O profiled over 1 window(s), 100 I/Os; the plugin counted 75.0, the profile holds 100.00% of it"
expect "nvme-pci's row: 30.9 per I/O" "$o" \
	"- nvme-pci: nvme-pci-uring:4096:32:p2p, 30.9 insns per I/O profiled over 1 window(s), 10 I/Os; the plugin counted 30.9, the profile holds 100.00% of it"
expect "by module: vmlinux" "$o" "| vmlinux | 45.0 | 5.5 | +39.5 |"
expect "by module: the module from the guest's kallsyms lines" "$o" "| nvme | 0.0 | 25.2 | -25.2 |"
expect "by module: user space" "$o" "| user | 30.0 | 0.2 | +29.8 |"
expect "a function: user space as one" "$o" "| [user] | user | 30.0 | 0.2 | +29.8 |"
expect "a function: the map's static function, moved by the offset" "$o" "| bar_irq | vmlinux | 20.0 | 0.0 | +20.0 |"
expect "a function: of two names at one address, not the padding's, the first" "$o" \
	"| foo_read | vmlinux | 25.0 | 5.5 | +19.5 |"
expect "a function: a module's, named from the guest's lines" "$o" "| nvme_queue_rq | nvme | 0.0 | 25.2 | -25.2 |"
expect "p2pnvme's own top: its user space first" "$o" "| [user] | user | 30.0 | 40.0% |"
if prof --window 3 "$d" > "$T/w3" 2>&1; then ok "insn-prof.py --window 3"; else no "insn-prof.py --window 3: $(cat "$T/w3")"; fi
expect "--window 3: no row's, its instructions" "$T/w3" "| bar_irq | vmlinux | 12 | 100.0% |"
if prof --window 1 --window 2 "$d" > "$T/w12" 2>&1; then ok "insn-prof.py --window 1 --window 2"; else no "insn-prof.py --window 1 --window 2: $(cat "$T/w12")"; fi
expect "--window 1 --window 2: side by side, per I/O" "$T/w12" "| nvme_queue_rq | nvme | 0.0 | 25.2 | -25.2 |"
if prof --pair engine-uring-reg:4096:32:dmabuf nvme-pci-uring:4096:32:p2p "$d" > "$T/pair" 2>&1; then
	ok "insn-prof.py --pair"; else no "insn-prof.py --pair: $(cat "$T/pair")"; fi
expect "--pair: the two rows side by side" "$T/pair" "| bar_irq | vmlinux | 20.0 | 0.0 | +20.0 |"

# what it must refuse: refused DESCRIPTION WHY DIR: insn-prof.py on DIR
# fails, saying WHY
refused() {
	if prof "$3" > "$T/err" 2>&1; then
		no "$1"
	elif grep -q -- "$2" "$T/err"; then
		ok "$1"
	else
		no "$1, saying '$2': $(cat "$T/err")"
	fi
}
cp -r "$d" "$T/torn"
sed -i '$d' "$T/torn/insn-prof.1"
refused "a profile without its end line is refused" 'not a whole profile' "$T/torn"
cp -r "$d" "$T/sum"
sed -i 's/^555555555000 3 9 1000$/555555555000 3 9 999/' "$T/sum/insn-prof.1"
refused "a profile whose blocks do not add up to its end line is refused" 'do not add up' "$T/sum"
cp -r "$d" "$T/noprof"
rm "$T/noprof/insn-prof.2"
refused "a row's window without a profile is refused, naming prof=on" 'prof=on' "$T/noprof"
cp -r "$d" "$T/nomap"
rm "$T/nomap/System.map"
refused "a boot without System.map is refused" 'no System.map' "$T/nomap"
if prof --map "$d/System.map" "$T/nomap" > /dev/null 2>&1; then ok "... and named with --map"; else no "... and named with --map"; fi
# kernel code outside vmlinux's text and the modules: a [bpf] symbol's
# within 4 KiB, else "[kernel ?]"
cp -r "$d" "$T/bpf"
sed -i 's/^ffffffff80800000 T _etext$/ffffffff80000180 T _etext/' "$T/bpf/System.map"
if prof --window 3 "$T/bpf" > "$T/out" 2>&1 && grep -qxF '| [kernel ?] | ? | 12 | 100.0% |' "$T/out"; then
	ok "code outside vmlinux's text and the modules is [kernel ?]"
else
	no "code outside vmlinux's text and the modules is [kernel ?]: $(cat "$T/out")"
fi
sed -i "s/^P2P-KSYMS-END$/S ffffffff81000180 t bpf_prog_1\t[bpf]\nP2P-KSYMS-END/" "$T/bpf/serial.log"
if prof --window 3 "$T/bpf" > "$T/out" 2>&1 && grep -qxF '| bpf_prog_1 | bpf | 12 | 100.0% |' "$T/out"; then
	ok "... or the [bpf] symbol of the guest's lines before it"
else
	no "... or the [bpf] symbol of the guest's lines before it: $(cat "$T/out")"
fi
# a profile that holds less than the window's count is said to
cp -r "$d" "$T/short"
sed -i -e 's/^555555555000 3 9 1000$/555555555000 3 9 900/' -e 's/^end blocks 4 insns 7502$/end blocks 4 insns 7202/' \
	"$T/short/insn-prof.1"
if prof "$T/short" > "$T/out" 2>&1 && grep -q 'the profile holds 96.00% of it (\*\*more than 1% off' "$T/out"; then
	ok "a profile 4% short of the window's count is said to be"
else
	no "a profile 4% short of the window's count is said to be: $(grep 'p2pnvme:' "$T/out")"
fi
exit $bad
