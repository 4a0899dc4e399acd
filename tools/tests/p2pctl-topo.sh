#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# p2pctl list, topo, check and doctor against a made-up machine: a sysfs
# tree, a /proc (cpuinfo, and what tells the kernel's configuration:
# config.gz, kallsyms), a /boot, and for doctor a /sys/module, /dev,
# /var/lib (DKMS) and /lib/modules, bound over the real ones in a mount
# namespace of its own (root and unshare(1) needed, else it says SKIP),
# one set of them per kernel the machine runs. Host bridge pci0000:00
# (Intel Skylake-E, in the kernel's allowlist) has a switch with an NVMe,
# a provider, an NVMe behind an ACS-redirecting port and an NVMe behind a
# second switch, and a root port with an NVMe; pci0000:40 (also listed, the
# same NUMA node) an NVMe; pci0000:80 (not listed, NUMA node 1) a provider
# and an NVMe. The matrix must give nvidia-smi's legend, the kernel's
# verdict and '*' where they differ; list the NUMA node, link and IOMMU
# group; every -o json one object.
# The running kernel, judged from /proc/config.gz, then /boot/config-$(uname
# -r), then /proc/kallsyms: with CONFIG_PCI_P2PDMA, today's verdicts; without
# it, check says "no: this kernel has no P2PDMA" with the fix (and JSON no
# "yes"), topo refuses every pair; when nothing tells, "unknown", never a
# yes. Each source in turn decides (the first that can), a corrupt
# config.gz tells nothing. Providers: a function without a BAR p2pbar can
# use (too small, not prefetchable, 32-bit) and the host bridge itself are
# refused as providers, with the reason. p2pctl doctor on the made-up
# machines (with P2PDMA and the suite installed by DKMS and loaded, without
# P2PDMA, with another version of p2pbar, nothing telling), text and JSON,
# and first on this machine's own kernel (any user): its answer, the source
# that decided and the exit status must be what the files say (on the
# build suite's Debian host: no, 95).
#
#   tools/tests/p2pctl-topo.sh [P2PCTL]
P=$(realpath "${1:-$(dirname "$0")/../build/p2pctl}") && [ -x "$P" ] ||
	{ echo "FAIL: no p2pctl at ${1:-$(dirname "$0")/../build/p2pctl}"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# p2pctl doctor on this machine's kernel: what the files say, in their order
"$P" doctor > "$T/host.doctor"; echo $? > "$T/host.doctor.rc"
"$P" doctor -o json > "$T/host.doctor.json"
python3 - "$T" <<'PY'
import gzip
import json
import os
import sys

T = sys.argv[1]
rel = os.uname().release
want, src = 'unknown', None


def says(text):
    return 'yes' if 'CONFIG_PCI_P2PDMA=y' in text.splitlines() else 'no'


for path in ('/proc/config.gz', f'/boot/config-{rel}'):
    try:
        with (gzip.open(path, 'rt') if path.endswith('.gz') else open(path)) as f:
            want, src = says(f.read()), path
        break
    except Exception:
        pass
else:
    try:
        with open('/proc/kallsyms') as f:
            syms = {fields[2] for fields in map(str.split, f) if len(fields) > 2}
        if syms:
            want, src = 'yes' if 'pci_p2pdma_add_resource' in syms else 'no', '/proc/kallsyms'
    except OSError:
        pass
if want != 'yes' and os.path.isdir('/sys/module/p2pbar'):
    want, src = 'yes', '/sys/module/p2pbar'
with open(f'{T}/host.doctor.rc') as f:
    rc = int(f.read())
with open(f'{T}/host.doctor') as f:
    first = f.readline()
try:
    with open(f'{T}/host.doctor.json') as f:
        d = json.load(f)
except ValueError:
    d = {}
bad = []
if rc != {'yes': 0, 'no': 95, 'unknown': 61}[want]:
    bad.append(f'exits {rc} for {want}')
if not first.startswith(f'P2PDMA: {want}: '):
    bad.append(f'says {first.strip()!r} for {want}')
k = d.get('running_kernel', {})
if (d.get('p2p'), k.get('p2pdma'), k.get('source')) != (want, want, src) or \
        d['checks'][0]['status'] != {'yes': 'ok', 'no': 'missing', 'unknown': 'unknown'}[want] or \
        (want != 'yes' and not d['checks'][0]['fix']):
    bad.append(f'-o json: {d.get("p2p")}, {k}, {d.get("checks", [None])[0]} for {want} ({src})')
for b in bad:
    print(f'FAIL: p2pctl doctor on this machine\'s kernel {rel}: {b}')
if not bad:
    print(f'p2pctl doctor on this machine\'s kernel {rel}: {want} ({src}), exit {rc}, as the files say')
sys.exit(1 if bad else 0)
PY
hostbad=$?

if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
	echo "p2pctl topo on a made-up machine: SKIP (needs root and unshare -m)"
	exit $hostbad
fi
VERSION=$("$P" --version | cut -d' ' -f2)
python3 - "$T" "$(uname -r)" "$VERSION" <<'PY'
import gzip, os, struct, sys, zlib
T, RELEASE, VERSION = sys.argv[1], sys.argv[2], sys.argv[3]
R = T + '/sys'
# sysfs resource flags (IORESOURCE_*)
IO, MEM, PREF, MEM64 = 0x100, 0x200, 0x2000, 0x100000
def fn(path, vendor, device, cls, driver=None, p2pmem=0, acs=False, numa=-1,
       speed='8.0 GT/s PCIe', width=4, iommu=None, pcie_type=None, bars=None):
    d = os.path.join(R, 'devices', path)
    bdf = os.path.basename(path)
    os.makedirs(d, exist_ok=True)
    for name, v in (('vendor', '0x%04x' % vendor), ('device', '0x%04x' % device),
                    ('class', '0x%06x' % cls), ('numa_node', numa),
                    ('current_link_speed', speed), ('current_link_width', width)):
        with open(os.path.join(d, name), 'w') as f:
            f.write(f'{v}\n')
    cfg = bytearray(4096)
    struct.pack_into('<HH', cfg, 0, vendor, device)
    if pcie_type is not None:       # a PCIe capability: the port type
        cfg[0x34] = 0x40
        cfg[0x40] = 0x10
        struct.pack_into('<H', cfg, 0x42, pcie_type << 4)
    if acs:                         # ACS, P2P Request Redirect on
        struct.pack_into('<I', cfg, 0x100, 0x000d | 1 << 16)
        struct.pack_into('<H', cfg, 0x106, 0x04)
    with open(os.path.join(d, 'config'), 'wb') as f:
        f.write(cfg)
    if bars is not None:            # {BAR: (size, flags)}: the resource file
        with open(os.path.join(d, 'resource'), 'w') as f:
            for i in range(13):
                size, flags = bars.get(i, (0, 0))
                start = (0x38000000000 if flags & MEM64 else 0xe0000000) + i * (1 << 30)
                f.write('0x%016x 0x%016x 0x%016x\n' % ((start, start + size - 1, flags) if size
                                                       else (0, 0, 0)))
    if p2pmem:
        os.makedirs(os.path.join(d, 'p2pmem'))
        for name, v in (('size', p2pmem), ('available', p2pmem), ('published', 1)):
            with open(os.path.join(d, 'p2pmem', name), 'w') as f:
                f.write(f'{v}\n')
    for link, target in (('iommu_group', iommu is not None and f'kernel/iommu_groups/{iommu}'),
                         ('driver', driver and f'bus/pci/drivers/{driver}')):
        if target:
            os.makedirs(os.path.join(R, target), exist_ok=True)
            os.symlink(os.path.relpath(os.path.join(R, target), d), os.path.join(d, link))
    bd = os.path.join(R, 'bus/pci/devices')
    os.makedirs(bd, exist_ok=True)
    os.symlink(os.path.relpath(d, bd), os.path.join(bd, bdf))
BR, NVME, BAR = 0x060400, 0x010802, 0x050000
RP, USP, DSP = 4, 5, 6
fn('pci0000:00/0000:00:00.0', 0x8086, 0x2030, 0x060000)
fn('pci0000:00/0000:00:04.0', 0x1b36, 0x000c, BR, 'pcieport', pcie_type=RP)
s = 'pci0000:00/0000:00:04.0/0000:01:00.0'
fn(s, 0x104c, 0x8232, BR, 'pcieport', pcie_type=USP)
fn(s + '/0000:02:00.0', 0x104c, 0x8233, BR, 'pcieport', pcie_type=DSP)
fn(s + '/0000:02:00.0/0000:03:00.0', 0x1b36, 0x0010, NVME, 'nvme', numa=0, iommu=3)
fn(s + '/0000:02:01.0', 0x104c, 0x8233, BR, 'pcieport', pcie_type=DSP)
fn(s + '/0000:02:01.0/0000:04:00.0', 0x1af4, 0x1110, BAR, 'p2pbar', p2pmem=64 << 20, numa=0, iommu=4)
fn(s + '/0000:02:02.0', 0x104c, 0x8233, BR, 'pcieport', pcie_type=DSP, acs=True)
fn(s + '/0000:02:02.0/0000:05:00.0', 0x1b36, 0x0010, NVME, 'nvme', numa=0)
n = s + '/0000:02:03.0'
fn(n, 0x104c, 0x8233, BR, 'pcieport', pcie_type=DSP)
fn(n + '/0000:08:00.0', 0x104c, 0x8232, BR, 'pcieport', pcie_type=USP)
fn(n + '/0000:08:00.0/0000:09:00.0', 0x104c, 0x8233, BR, 'pcieport', pcie_type=DSP)
fn(n + '/0000:08:00.0/0000:09:00.0/0000:0a:00.0', 0x1b36, 0x0010, NVME, 'nvme', numa=0)
fn('pci0000:00/0000:00:05.0', 0x1b36, 0x000c, BR, 'pcieport', pcie_type=RP)
fn('pci0000:00/0000:00:05.0/0000:06:00.0', 0x1b36, 0x0010, NVME, 'nvme', numa=0)
fn('pci0000:40/0000:40:00.0', 0x8086, 0x2030, 0x060000)
fn('pci0000:40/0000:40:01.0', 0x1b36, 0x000c, BR, 'pcieport', pcie_type=RP)
fn('pci0000:40/0000:40:01.0/0000:41:00.0', 0x1b36, 0x0010, NVME, 'nvme', numa=0)
fn('pci0000:80/0000:80:00.0', 0x1b36, 0x000c, BR, 'pcieport', pcie_type=RP, numa=1)
fn('pci0000:80/0000:80:00.0/0000:81:00.0', 0x1af4, 0x1110, BAR, None, p2pmem=32 << 20, numa=1)
fn('pci0000:80/0000:80:00.0/0000:82:00.0', 0x1b36, 0x0010, NVME, 'nvme', numa=1,
   speed='Unknown', width=0)
# provider candidates on the root bus of pci0000:00: what p2pbar needs is a
# 64-bit prefetchable memory BAR of 2 MiB or more; the NVMe's BAR 0 is small
GPU = 0x030000
fn('pci0000:00/0000:00:06.0', 0x1234, 0x0006, GPU, bars={0: (512 << 10, MEM), 4: (256, IO)})
fn('pci0000:00/0000:00:07.0', 0x1234, 0x0007, GPU, bars={2: (64 << 20, MEM | PREF)})
fn('pci0000:00/0000:00:08.0', 0x1234, 0x0008, GPU, bars={0: (64 << 20, MEM | MEM64)})
fn('pci0000:00/0000:00:09.0', 0x1234, 0x0009, GPU, bars={2: (1 << 20, MEM | MEM64 | PREF)})
with open(R + '/devices/pci0000:00/0000:00:09.0/resource2_resize', 'w') as f:
    f.write('00000000000001ff\n')        # Resizable BAR: 1 MiB to 256 MiB
fn('pci0000:00/0000:00:0a.0', 0x1234, 0x000a, GPU,
   bars={0: (16 << 20, MEM), 2: (256 << 20, MEM | MEM64 | PREF)})

for g in (3, 4):                    # translated: doctor's IOMMU is strict
    with open(f'{R}/kernel/iommu_groups/{g}/type', 'w') as f:
        f.write('DMA\n')
os.makedirs(R + '/module')          # each machine's modules are bound over it

# the machines' /proc and /boot: what tells the running kernel's options;
# for doctor, their /sys/module, /dev, /var/lib (DKMS) and /lib/modules
def machine(name, config_gz=None, boot=None, kallsyms=None, modules=None, nodes=(),
            installed=(), dkms=False):
    m = f'{T}/m/{name}'
    proc, bootdir = m + '/proc', m + '/boot'
    for d in (proc, bootdir, m + '/module', m + '/dev', m + '/varlib', m + '/libmodules'):
        os.makedirs(d)
    for mod, version in (modules or {}).items():
        os.makedirs(f'{m}/module/{mod}')
        with open(f'{m}/module/{mod}/version', 'w') as f:
            f.write(version + '\n')
    for node, mode in nodes:
        with open(f'{m}/dev/{node}', 'w'):
            pass
        os.chmod(f'{m}/dev/{node}', mode)
    if installed:
        lm = f'{m}/libmodules/{RELEASE}'
        os.makedirs(lm + '/updates/dkms')
        os.makedirs(lm + '/build')
        with open(lm + '/modules.dep', 'w') as f:
            for mod in installed:
                f.write(f'updates/dkms/{mod}.ko.xz:\n')
                open(f'{lm}/updates/dkms/{mod}.ko.xz', 'w').close()
    if dkms:
        d = f'{m}/varlib/dkms/p2pdma-suite/{VERSION}/{RELEASE}/x86_64/module'
        os.makedirs(d)
        open(d + '/p2pbar.ko.xz', 'w').close()
        os.symlink(f'{VERSION}/{RELEASE}/x86_64', f'{m}/varlib/dkms/p2pdma-suite/kernel-{RELEASE}-x86_64')
    with open(proc + '/cpuinfo', 'w') as f:
        f.write('processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\n')
    if config_gz is not None:
        with open(proc + '/config.gz', 'wb') as f:
            f.write(config_gz)
    for rel, text in (boot or {}).items():
        with open(f'{bootdir}/config-{rel}', 'w') as f:
            f.write(text)
    if kallsyms is not None:
        with open(proc + '/kallsyms', 'w') as f:
            f.write(''.join('0000000000000000 T %s\n' % s for s in kallsyms))
def config(p2pdma, move=None):
    # a configuration as long as a real one (some 200 KiB): many blocks
    lines = ['#', '# Automatically generated file; DO NOT EDIT.', '#']
    lines += ['CONFIG_OPTION_%d=%s' % (i, 'ym'[i % 2]) if i % 3 else
              '# CONFIG_OPTION_%d is not set' % i for i in range(6000)]
    lines.insert(3000, {'y': 'CONFIG_PCI_P2PDMA=y', 'n': '# CONFIG_PCI_P2PDMA is not set',
                        None: 'CONFIG_PCI=y'}[p2pdma])
    lines.insert(3001, 'CONFIG_ZONE_DEVICE=y')
    if move:
        lines.insert(3002, 'CONFIG_DMABUF_MOVE_NOTIFY=y')
    return '\n'.join(lines) + '\n'
def gz(text, level=9, strategy=zlib.Z_DEFAULT_STRATEGY):
    c = zlib.compressobj(level, zlib.DEFLATED, 31, 9, strategy)
    return c.compress(text.encode()) + c.flush()
SYMS = ['_text', 'dma_pci_p2pdma_supported', '__pfx_dma_pci_p2pdma_supported', 'pci_bus_read_config_byte']
# config.gz decides before /boot and kallsyms, in each of deflate's block kinds
with open(f'{T}/yes.config.gz', 'wb') as f:
    with gzip.GzipFile('config', 'wb', 9, f, 0) as g:     # with a file name in the header
        g.write(config('y', move=True).encode())
with open(f'{T}/yes.config.gz', 'rb') as f:
    # doctor: p2pbar loaded (p2pnvme installed, not loaded) by DKMS, a node
    machine('yes', f.read(), {RELEASE: config('n')}, modules={'p2pbar': VERSION},
            nodes=[('p2pbar0', 0o600)], installed=('p2pbar', 'p2pnvme'), dkms=True)
machine('no', gz(config('n'), 0), kallsyms=SYMS + ['pci_p2pdma_add_resource'])
# doctor: a p2pbar of another version, no DMABUF_MOVE_NOTIFY, nothing installed
machine('fixed', gz(config('y'), 6, zlib.Z_FIXED), {RELEASE: config('n')},
        modules={'p2pbar': '0.0.1'})
# then /boot/config-$(uname -r) (an option it does not list is not set), then kallsyms
machine('boot', None, {RELEASE: config(None), RELEASE + '.old': config('y')},
        SYMS + ['pci_p2pdma_add_resource'])
machine('ksyms-yes', None, {'0.0.0-other': config('y')}, SYMS + ['pci_p2pdma_add_resource'])
machine('ksyms-no', None, {'0.0.0-other': config('y')}, SYMS)
# nothing tells: unknown; a corrupt config.gz tells nothing either
machine('none', None, {'0.0.0-other': config('y')})
machine('corrupt', gz(config('n'))[:4000] + b'\0' * 64, {RELEASE: config('y')}, [])
PY
cat > "$T/run.sh" <<RUN
mount --bind "$T/sys" /sys || exit 77
# machine NAME: its /proc, /boot, /sys/module, /dev and /var/lib over the
# real ones (or over the last machine's), its /lib/modules if there is one
machine() {
	for d in proc boot; do mount --bind "$T/m/\$1/\$d" /\$d || exit 77; done
	mount --bind "$T/m/\$1/module" /sys/module && mount --bind "$T/m/\$1/dev" /dev &&
		mount --bind "$T/m/\$1/varlib" /var/lib || exit 77
	if [ -d /lib/modules ]; then
		mount --bind "$T/m/\$1/libmodules" /lib/modules || exit 77
		echo > "$T/libmodules"
	fi
}
machine yes
"$P" topo > "$T/topo"; echo \$? > "$T/topo.rc"
"$P" list > "$T/list"
"$P" check 04:00.0 05:00.0 > "$T/check"
for c in topo list "check 04:00.0 0a:00.0" "check 81:00.0 03:00.0"; do
	"$P" \$c -o json > "$T/json.\${c%% *}.\${c##* }"
done
for p in 00:00.0 00:04.0 00:06.0 00:07.0 00:08.0 00:09.0 00:0a.0; do
	"$P" check \$p 03:00.0 > "$T/prov.\$p"; echo \$? > "$T/prov.\$p.rc"
	"$P" check \$p 03:00.0 -o json > "$T/prov.\$p.json"
done
for m in no fixed boot ksyms-yes ksyms-no none corrupt; do
	machine \$m
	"$P" check 04:00.0 03:00.0 > "$T/\$m.check"; echo \$? > "$T/\$m.check.rc"
	"$P" check 04:00.0 03:00.0 -o json > "$T/\$m.check.json"
	"$P" topo > "$T/\$m.topo"; echo \$? > "$T/\$m.topo.rc"
	"$P" topo -o json > "$T/\$m.topo.json"
done
for m in yes no fixed ksyms-yes none; do
	machine \$m
	"$P" doctor > "$T/\$m.doctor"; echo \$? > "$T/\$m.doctor.rc"
	"$P" doctor -o json > "$T/\$m.doctor.json"
done
exit 0
RUN
unshare -m sh "$T/run.sh"
case $? in
0) ;;
77) echo "p2pctl topo on a made-up machine: SKIP (cannot bind-mount)"; exit 0 ;;
*) echo "FAIL: p2pctl topo on a made-up machine: the namespace's script failed"; exit 1 ;;
esac
bad=0
# has FILE LINE: FILE has the line LINE, exactly
has() {
	grep -qxF -- "$2" "$T/$1" || { echo "FAIL: p2pctl $1: no line '$2'"; bad=1; }
}
# starts FILE PREFIX: FILE has a line that starts with PREFIX
starts() {
	awk -v p="$2" 'index($0, p) == 1 { f = 1 } END { exit !f }' "$T/$1" ||
		{ echo "FAIL: p2pctl $1: no line starting '$2'"; bad=1; }
}
# lacks FILE TEXT: no line of FILE has TEXT
lacks() {
	! grep -qF -- "$2" "$T/$1" || { echo "FAIL: p2pctl $1: a line has '$2'"; bad=1; }
}
# rc FILE WANT: the exit status in FILE.rc
rc() {
	[ "$(cat "$T/$1.rc")" = "$2" ] || { echo "FAIL: p2pctl $1 exits $(cat "$T/$1.rc"), want $2"; bad=1; }
}
# cellf FILE ROW COL WANT: the matrix cell of provider ROW, client COL in FILE
cellf() {
	got=$(awk -v p="$2" -v c="$3" '
		/^verdicts/ { getline; pos = index($0, c); next }
		pos && $1 == p { v = substr($0, pos, 13); sub(/ +$/, "", v); print v; exit }' "$T/$1")
	[ "$got" = "$4" ] || { echo "FAIL: p2pctl $1: $2 -> $3 is '$got', want '$4'"; bad=1; }
}
cell() { cellf topo "$@"; }
R=$(uname -r)
[ "$(cat "$T/topo.rc")" = 0 ] || { echo "FAIL: p2pctl topo exits $(cat "$T/topo.rc")"; bad=1; }
has topo "pci0000:00 host bridge 0000:00:00.0: P2P through it (in the kernel's allowlist)"
has topo "pci0000:80 host bridge 0000:80:00.0: no P2P through it (not in the kernel's allowlist)"
has topo "|     +- 0000:02:02.0 104c:8233 pcieport [ACS redirect] (8.0GT/s x4)"
has topo "|     |  \`- 0000:04:00.0 1af4:1110 p2pbar [p2pmem 64 MiB] (numa 0, 8.0GT/s x4, iommu 4)"
has topo "|     \`- 0000:02:03.0 104c:8233 pcieport (8.0GT/s x4)"
has topo "|        \`- 0000:08:00.0 104c:8232 pcieport (8.0GT/s x4)"
has topo "   \`- 0000:82:00.0 1b36:0010 nvme (numa 1)"
cell 0000:04:00.0 0000:03:00.0 "PIX D 4"
cell 0000:04:00.0 0000:04:00.0 "X"
cell 0000:04:00.0 0000:05:00.0 "PIX H 4 *"
cell 0000:04:00.0 0000:06:00.0 "PHB H 6"
cell 0000:04:00.0 0000:0a:00.0 "PXB D 6"
cell 0000:04:00.0 0000:41:00.0 "NODE H 6"
cell 0000:04:00.0 0000:82:00.0 "SYS - *"
cell 0000:81:00.0 0000:82:00.0 "PIX D 2"
cell 0000:81:00.0 0000:06:00.0 "SYS - *"
has topo "  PIX  = Connection traversing at most a single PCIe bridge"
has topo "  0000:04:00.0 -> 0000:05:00.0: PIX, but host-bridge: ACS on 0000:02:02.0 redirects P2P requests up to the host bridge (the common bridge is 0000:01:00.0); the host bridge routes it (in this kernel's allowlist)"
grep -q "^  0000:04:00.0 -> 0000:82:00.0: SYS, but refused: " "$T/topo" ||
	{ echo "FAIL: p2pctl topo: no line on why 0000:04:00.0 -> 0000:82:00.0 differs"; bad=1; }
grep -q "^  0000:04:00.0 -> 0000:0[36a]:00.0" "$T/topo" &&
	{ echo "FAIL: p2pctl topo: a pair that agrees is listed as differing"; bad=1; }
has list "0000:03:00.0  nvme      nvme       -                    -          - -            0 8.0GT/s     x4     3"
has list "0000:81:00.0  provider  -          -             33554432   33554432 yes          1 8.0GT/s     x4     -"
has list "0000:82:00.0  nvme      nvme       -                    -          - -            1 -            -     -"
has check "0000:04:00.0 -> 0000:05:00.0: host-bridge (distance 4)"
has check "  fix: for a direct path, boot with pci=disable_acs_redir=0000:02:02.0"

# the running kernel: with P2PDMA (config.gz says so, before a /boot that does not)
has topo "kernel $R: has P2PDMA (CONFIG_PCI_P2PDMA=y in /proc/config.gz)"
has check "  running kernel $R: has P2PDMA (CONFIG_PCI_P2PDMA=y in /proc/config.gz)"
# ... without: no, the fix, and what the topology would give; topo refuses every pair
for m in no boot ksyms-no; do
	has $m.check "0000:04:00.0 -> 0000:03:00.0: no: this kernel has no P2PDMA"
	starts $m.check "  fix: boot a kernel built with CONFIG_PCI_P2PDMA=y"
	has $m.check "  topology: direct (distance 4): 0000:01:00.0 is the common upstream bridge and no port below it redirects"
	rc $m.check 0
	starts $m.topo "kernel $R: no P2PDMA ("
	starts $m.topo "  fix: boot a kernel built with CONFIG_PCI_P2PDMA=y"
	has $m.topo "pci0000:00 host bridge 0000:00:00.0: no P2P through it: this kernel has no P2PDMA"
	lacks $m.topo "P2P through it ("
	cellf $m.topo 0000:04:00.0 0000:03:00.0 "PIX - *"
	cellf $m.topo 0000:04:00.0 0000:82:00.0 "SYS - *"
	has $m.topo "  every pair: this kernel has no P2PDMA (the fix is above)"
	rc $m.topo 0
done
# ... which source said so: config.gz before kallsyms, /boot before kallsyms
has no.check "  why: CONFIG_PCI_P2PDMA is not set in /proc/config.gz (kernel $R)"
has no.topo "kernel $R: no P2PDMA (CONFIG_PCI_P2PDMA is not set in /proc/config.gz)"
has boot.check "  why: CONFIG_PCI_P2PDMA is not in /boot/config-$R (kernel $R)"
has ksyms-no.check "  why: /proc/kallsyms has no pci_p2pdma_add_resource (kernel $R)"
# with it, from each source: today's verdicts
for m in fixed ksyms-yes corrupt; do
	has $m.check "0000:04:00.0 -> 0000:03:00.0: direct (distance 4)"
	cellf $m.topo 0000:04:00.0 0000:03:00.0 "PIX D 4"
	cellf $m.topo 0000:04:00.0 0000:05:00.0 "PIX H 4 *"
done
has fixed.check "  running kernel $R: has P2PDMA (CONFIG_PCI_P2PDMA=y in /proc/config.gz)"
has ksyms-yes.check "  running kernel $R: has P2PDMA (/proc/kallsyms has pci_p2pdma_add_resource)"
has corrupt.check "  running kernel $R: has P2PDMA (CONFIG_PCI_P2PDMA=y in /boot/config-$R)"
# ... and when nothing tells: unknown, never a yes
has none.check "0000:04:00.0 -> 0000:03:00.0: unknown: nothing tells whether this kernel has P2PDMA"
has none.check "  why: no /proc/config.gz, no /boot/config-$R, no /proc/kallsyms (kernel $R)"
starts none.check "  fix: "
has none.check "  topology: direct (distance 4): 0000:01:00.0 is the common upstream bridge and no port below it redirects"
rc none.check 0
has none.topo "kernel $R: P2PDMA unknown (no /proc/config.gz, no /boot/config-$R, no /proc/kallsyms)"
has none.topo "pci0000:00 host bridge 0000:00:00.0: unknown: P2P through it (in the kernel's allowlist) if this kernel has P2PDMA"
cellf none.topo 0000:04:00.0 0000:03:00.0 "PIX ?"
cellf none.topo 0000:81:00.0 0000:82:00.0 "PIX ?"

# providers: the host bridge, a port, and BARs p2pbar cannot use are refused, with the reason
for p in 00:00.0 00:04.0 00:06.0 00:07.0 00:08.0 00:09.0; do
	has prov.$p "0000:$p -> 0000:03:00.0: no: 0000:$p cannot be a provider"
	starts prov.$p "  fix: name as PROVIDER a function with p2pmem or with a 64-bit prefetchable memory BAR of 2 MiB or more"
	starts prov.$p "  topology: "
	rc prov.$p 0
done
has prov.00:00.0 "  why: 0000:00:00.0 is the host bridge itself (PCI class 0600): it routes traffic and has no memory to lend"
has prov.00:04.0 "  why: 0000:00:04.0 is a PCI bridge (class 0604): it forwards traffic and has no memory to lend"
has prov.00:06.0 "  why: 0000:00:06.0 has no BAR p2pbar can use: BAR 0 (512 KiB): too small, not prefetchable, 32-bit; BAR 4: I/O ports; p2pbar needs a 64-bit prefetchable memory BAR of 2 MiB or more"
has prov.00:07.0 "  why: 0000:00:07.0 has no BAR p2pbar can use: BAR 2 (64 MiB): 32-bit; p2pbar needs a 64-bit prefetchable memory BAR of 2 MiB or more"
has prov.00:08.0 "  why: 0000:00:08.0 has no BAR p2pbar can use: BAR 0 (64 MiB): not prefetchable; p2pbar needs a 64-bit prefetchable memory BAR of 2 MiB or more"
has prov.00:09.0 "  why: 0000:00:09.0 has no BAR p2pbar can use: BAR 2 (1 MiB): too small; p2pbar needs a 64-bit prefetchable memory BAR of 2 MiB or more"
grep -q "resource2_resize" "$T/prov.00:09.0" ||
	{ echo "FAIL: p2pctl prov.00:09.0: the fix does not name resource2_resize"; bad=1; }
starts prov.00:0a.0 "0000:00:0a.0 -> 0000:03:00.0: host-bridge (distance "
lacks prov.00:0a.0 "cannot be a provider"
rc prov.00:0a.0 0

# doctor: with P2PDMA, the suite installed by DKMS, p2pbar loaded; one warning (ACS)
rc yes.doctor 0
has yes.doctor "P2PDMA: yes: this kernel has P2PDMA (0 missing, 1 warning)"
has yes.doctor "kernel       ok       kernel $R: has P2PDMA (CONFIG_PCI_P2PDMA=y in /proc/config.gz)"
starts yes.doctor "move-notify  ok       CONFIG_DMABUF_MOVE_NOTIFY=y in /proc/config.gz"
has yes.doctor "p2pbar       ok       p2pbar $VERSION is loaded"
starts yes.doctor "p2pnvme      info     p2pnvme is installed for $R but not loaded"
[ -f "$T/libmodules" ] &&
	has yes.doctor "dkms         ok       p2pdma-suite $VERSION: installed for $R by DKMS (updates/dkms)"
starts yes.doctor "iommu        info     strict: 2 groups"
starts yes.doctor "acs          warn     ACS redirect on 0000:02:02.0: "
starts yes.doctor "                      fix: boot with pci=disable_acs_redir=0000:02:02.0 "
starts yes.doctor "bars         ok       "
has yes.doctor "                      0000:00:0a.0 gpu: BAR 2, 256 MiB 64-bit prefetchable: p2pbar can use it"
has yes.doctor "                      0000:00:07.0 gpu: has no BAR p2pbar can use: BAR 2 (64 MiB): 32-bit; p2pbar needs a 64-bit prefetchable memory BAR of 2 MiB or more"
has yes.doctor "                        (Resizable BAR: BAR 2 can grow from 1 MiB to 256 MiB)"
has yes.doctor "                      0000:04:00.0 provider: 64 MiB p2pmem (numa 0, iommu 4)"
starts yes.doctor "pairs        ok       42 pairs of an NVMe controller and a GPU, accelerator or provider: 4 below one switch or port; 3 direct,"
has yes.doctor "                      0000:03:00.0 nvme and 0000:04:00.0 provider: under one switch or port (0000:01:00.0, PIX): direct, distance 4"
has yes.doctor "                      0000:05:00.0 nvme and 0000:04:00.0 provider: under one switch or port (0000:01:00.0, PIX): host-bridge, distance 4"
has yes.doctor "nodes        ok       /dev/p2pbar0: root:root 0600, usable by you"
# ... without P2PDMA: no, what to do, exit 95 (EOPNOTSUPP)
rc no.doctor 95
starts no.doctor "P2PDMA: no: this kernel has no P2PDMA ("
has no.doctor "kernel       missing  kernel $R: no P2PDMA (CONFIG_PCI_P2PDMA is not set in /proc/config.gz)"
starts no.doctor "                      fix: boot a kernel built with CONFIG_PCI_P2PDMA=y"
has no.doctor "p2pbar       missing  p2pbar is not loaded, and cannot be: this kernel has no P2PDMA"
starts no.doctor "pairs        ok       42 pairs of an NVMe controller and a GPU, accelerator or provider: 4 below one switch or port; with P2PDMA, 3 direct"
has no.doctor "nodes        info     no /dev/p2pbarN or /dev/p2pnvmeN"
# ... another p2pbar than p2pctl's, no DMABUF_MOVE_NOTIFY (before 7.x: p2pbar refuses dma-buf importers)
rc fixed.doctor 0
has fixed.doctor "p2pbar       warn     p2pbar 0.0.1 is loaded; p2pctl is $VERSION"
if [ "${R%%.*}" -lt 7 ]; then
	starts fixed.doctor "move-notify  warn     CONFIG_DMABUF_MOVE_NOTIFY is not set in /proc/config.gz: p2pbar refuses dma-buf importers"
else
	starts fixed.doctor "move-notify  ok       CONFIG_DMABUF_MOVE_NOTIFY is not set in /proc/config.gz, and need not be"
fi
# ... the symbols tell P2PDMA, not the rest; nothing tells: unknown, exit 61 (ENODATA)
rc ksyms-yes.doctor 0
starts ksyms-yes.doctor "move-notify  unknown  CONFIG_DMABUF_MOVE_NOTIFY: unknown: "
rc none.doctor 61
starts none.doctor "P2PDMA: unknown: nothing tells whether this kernel has P2PDMA ("
starts none.doctor "kernel       unknown  kernel $R: P2PDMA unknown (no /proc/config.gz, no /boot/config-$R, no /proc/kallsyms)"
# the same in JSON, one object per command (python's json)
python3 - "$T" "$R" "$VERSION" <<'PY' || bad=1
import json
import os
import sys

T, RELEASE = sys.argv[1], sys.argv[2]
bad = []


def load(name):
    with open(f'{T}/json.{name}') as f:
        return json.load(f)


topo = load('topo.topo')
cells = {(v['provider'], v['client']): v for v in topo['verdicts']}
for (p, c), (level, verdict, differs) in {
        ('0000:04:00.0', '0000:03:00.0'): ('PIX', 'direct', False),
        ('0000:04:00.0', '0000:05:00.0'): ('PIX', 'host-bridge', True),
        ('0000:04:00.0', '0000:0a:00.0'): ('PXB', 'direct', False),
        ('0000:04:00.0', '0000:06:00.0'): ('PHB', 'host-bridge', False),
        ('0000:04:00.0', '0000:41:00.0'): ('NODE', 'host-bridge', False),
        ('0000:04:00.0', '0000:82:00.0'): ('SYS', 'refused', True)}.items():
    v = cells.get((p, c), {})
    got = (v.get('topology'), v.get('verdict'), v.get('differs'))
    if got != (level, verdict, differs) or differs != ('why' in v):
        bad.append(f'topo -o json: {p} -> {c}: {v}')
fns = {f['pci']: f for f in topo['functions']}
if fns['0000:0a:00.0']['parent'] != '0000:09:00.0' or fns['0000:00:04.0']['parent'] is not None:
    bad.append('topo -o json: parents')
devs = {d['pci']: d for d in load('list.list')['devices']}
if (devs['0000:03:00.0'].get('numa_node'), devs['0000:03:00.0'].get('link_speed'),
        devs['0000:03:00.0'].get('link_width'), devs['0000:03:00.0'].get('iommu_group')) != \
        (0, '8.0GT/s', 4, 3) or devs['0000:82:00.0'].get('link_speed') is not None:
    bad.append(f'list -o json: {devs["0000:03:00.0"]}, {devs["0000:82:00.0"]}')
if load('check.0a:00.0').get('verdict') != 'direct' or load('check.03:00.0').get('verdict') != 'refused':
    bad.append('check -o json')


def load2(name):
    with open(f'{T}/{name}') as f:
        return json.load(f)


# the running kernel: its verdict, the source that decided; a summary "p2p"
# that is "yes" only when the kernel has P2PDMA and the path allows it
for m, (p2pdma, source, verdict, p2p) in {
        'yes': ('yes', '/proc/config.gz', 'direct', 'yes'),
        'no': ('no', '/proc/config.gz', 'refused', 'no'),
        'fixed': ('yes', '/proc/config.gz', 'direct', 'yes'),
        'boot': ('no', '/boot/config-' + RELEASE, 'refused', 'no'),
        'ksyms-yes': ('yes', '/proc/kallsyms', 'direct', 'yes'),
        'ksyms-no': ('no', '/proc/kallsyms', 'refused', 'no'),
        'none': ('unknown', None, 'unknown', 'unknown'),
        'corrupt': ('yes', '/boot/config-' + RELEASE, 'direct', 'yes')}.items():
    c = load('check.0a:00.0') if m == 'yes' else load2(f'{m}.check.json')
    k = c.get('running_kernel', {})
    want_top = {'verdict': verdict, 'p2p': p2p}
    if m == 'yes':
        want_top['verdict'] = 'direct'     # 04:00.0 -> 0a:00.0, PXB D 6
    if (k.get('p2pdma'), k.get('source')) != (p2pdma, source) or \
            any(c.get(key) != v for key, v in want_top.items()) or \
            c.get('topology', {}).get('verdict') != 'direct' or \
            (verdict != 'direct' and (c.get('distance') != -1 or not c.get('fix'))):
        bad.append(f'check -o json on the machine "{m}": {c}')
    if m == 'yes':
        continue
    t = load2(f'{m}.topo.json')
    if t.get('running_kernel', {}).get('p2pdma') != p2pdma:
        bad.append(f'topo -o json on the machine "{m}": running_kernel {t.get("running_kernel")}')
    for v in t['verdicts']:
        if p2pdma != 'yes' and (v['verdict'] != verdict or v['distance'] != -1 or
                                'topology_verdict' not in v):
            bad.append(f'topo -o json on the machine "{m}": {v}')
    for h in t['host_bridges']:
        if p2pdma != 'yes' and h['p2p'] != p2pdma:
            bad.append(f'topo -o json on the machine "{m}": host bridge {h}')
# providers: refused (JSON verdict refused, p2p no, provider_ok false), or not
for p, ok in (('00:00.0', False), ('00:04.0', False), ('00:06.0', False), ('00:07.0', False),
              ('00:08.0', False), ('00:09.0', False), ('00:0a.0', True)):
    c = load2(f'prov.{p}.json')
    if c.get('provider_ok') != ok or c.get('p2p') != ('yes' if ok else 'no') or \
            (c.get('verdict') == 'refused') == ok or 'topology' not in c:
        bad.append(f'check {p} 03:00.0 -o json: {c}')
# doctor -o json: one document; the answer, each check's status, the facts behind them
STATUS = {'ok', 'info', 'warn', 'missing', 'unknown'}


def doctor():
    for m, p2p in (('yes', 'yes'), ('no', 'no'), ('fixed', 'yes'), ('ksyms-yes', 'yes'),
                   ('none', 'unknown')):
        d = load2(f'{m}.doctor.json')
        checks = {c['name']: c for c in d['checks']}
        if d['p2p'] != p2p or d['running_kernel']['p2pdma'] != p2p or \
                list(checks) != ['kernel', 'move-notify', 'p2pbar', 'p2pnvme', 'dkms', 'iommu', 'acs',
                                 'bars', 'pairs', 'nodes'] or \
                any(c['status'] not in STATUS or (c['status'] in ('missing', 'warn', 'unknown') and
                                                  not c['fix']) for c in d['checks']) or \
                d['missing'] != sum(c['status'] == 'missing' for c in d['checks']) or \
                d['warnings'] != sum(c['status'] == 'warn' for c in d['checks']):
            bad.append(f'doctor -o json on the machine "{m}": {d["p2p"]}, {d["checks"]}')
    d = load2('yes.doctor.json')
    statuses = {c['name']: c['status'] for c in d['checks']}
    cands = {c['pci']: c for c in d['candidates']}
    pairs = {(p['nvme'], p['other']): p for p in d['pairs']}
    if statuses != {'kernel': 'ok', 'move-notify': 'ok', 'p2pbar': 'ok', 'p2pnvme': 'info',
                    'dkms': statuses['dkms'], 'iommu': 'info', 'acs': 'warn', 'bars': 'ok',
                    'pairs': 'ok', 'nodes': 'ok'} or \
            d['modules'][0] != {'name': 'p2pbar', 'loaded': True, 'version': sys.argv[3],
                                'installed': d['modules'][0]['installed']} or \
            d['iommu'] != {'mode': 'strict', 'groups': 2} or d['acs_redirect'] != ['0000:02:02.0'] or \
            (cands['0000:00:0a.0']['provider'], cands['0000:00:0a.0']['bar'],
             cands['0000:00:0a.0']['bar_size']) != ('yes', 2, 256 << 20) or \
            (cands['0000:00:09.0']['provider'], cands['0000:00:09.0']['rebar_max']) != ('no', 256 << 20) or \
            'too small' not in cands['0000:00:09.0']['why'] or \
            cands['0000:04:00.0']['p2pmem_size'] != 64 << 20 or \
            pairs.get(('0000:03:00.0', '0000:04:00.0')) != {
                'nvme': '0000:03:00.0', 'other': '0000:04:00.0', 'kind': 'provider', 'topology': 'PIX',
                'topology_verdict': 'direct', 'topology_distance': 4, 'common_bridge': '0000:01:00.0'} or \
            d['nodes'] != [{'path': '/dev/p2pbar0', 'mode': '0600', 'owner': 'root', 'group': 'root',
                            'usable': True}]:
        bad.append(f'doctor -o json on the machine "yes": {d}')
    if d['dkms'] != {'versions': [sys.argv[3]], 'built': True, 'installed': True, 'make_install': False,
                     'headers': True} and os.path.exists(f'{T}/libmodules'):
        bad.append(f'doctor -o json on the machine "yes": dkms {d["dkms"]}')
    if load2('no.doctor.json')['checks'][0]['status'] != 'missing':
        bad.append('doctor -o json on the machine "no": the kernel is not missing')


try:
    doctor()
except (KeyError, IndexError, TypeError, ValueError) as e:
    bad.append(f'doctor -o json: not the document it should be: {e!r}')
for b in bad:
    print('FAIL: p2pctl ' + b)
sys.exit(1 if bad else 0)
PY
[ $bad = 0 ] && echo "p2pctl topo on a made-up machine: all cases pass"
exit $((bad | hostbad))
