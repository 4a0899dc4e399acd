#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# p2pctl list, topo and check against a made-up machine: a sysfs tree and a
# /proc/cpuinfo bound over the real ones in a mount namespace of its own
# (root and unshare(1) needed, else it says SKIP). Host bridge pci0000:00
# (Intel Skylake-E, in the kernel's allowlist) has a switch with an NVMe,
# a provider, an NVMe behind an ACS-redirecting port and an NVMe behind a
# second switch, and a root port with an NVMe; pci0000:40 (also listed, the
# same NUMA node) an NVMe; pci0000:80 (not listed, NUMA node 1) a provider
# and an NVMe. The matrix must give nvidia-smi's legend, the kernel's
# verdict and '*' where they differ; list the NUMA node, link and IOMMU
# group; every -o json one object.
#
#   tools/tests/p2pctl-topo.sh [P2PCTL]
P=$(realpath "${1:-$(dirname "$0")/../build/p2pctl}") && [ -x "$P" ] ||
	{ echo "FAIL: no p2pctl at ${1:-$(dirname "$0")/../build/p2pctl}"; exit 1; }
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
	echo "p2pctl topo on a made-up machine: SKIP (needs root and unshare -m)"
	exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 - "$T/sys" <<'PY'
import os, struct, sys
R = sys.argv[1]
def fn(path, vendor, device, cls, driver=None, p2pmem=0, acs=False, numa=-1,
       speed='8.0 GT/s PCIe', width=4, iommu=None, pcie_type=None):
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
PY
printf 'processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\n' > "$T/cpuinfo"
cat > "$T/run.sh" <<RUN
mount --bind "$T/sys" /sys && mount --bind "$T/cpuinfo" /proc/cpuinfo || exit 77
"$P" topo > "$T/topo"; echo \$? > "$T/topo.rc"
"$P" list > "$T/list"
"$P" check 04:00.0 05:00.0 > "$T/check"
for c in topo list "check 04:00.0 0a:00.0" "check 81:00.0 03:00.0"; do
	"$P" \$c -o json > "$T/json.\${c%% *}.\${c##* }"
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
# cell ROW COL WANT: the matrix cell of provider ROW, client COL
cell() {
	got=$(awk -v p="$1" -v c="$2" '
		/^verdicts/ { getline; pos = index($0, c); next }
		pos && $1 == p { v = substr($0, pos, 13); sub(/ +$/, "", v); print v; exit }' "$T/topo")
	[ "$got" = "$3" ] || { echo "FAIL: p2pctl topo: $1 -> $2 is '$got', want '$3'"; bad=1; }
}
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
# the same in JSON, one object per command (python's json)
python3 - "$T" <<'PY' || bad=1
import json
import sys

T = sys.argv[1]
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
for b in bad:
    print('FAIL: p2pctl ' + b)
sys.exit(1 if bad else 0)
PY
[ $bad = 0 ] && echo "p2pctl topo on a made-up machine: all cases pass"
exit $bad
