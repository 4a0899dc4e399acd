#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmark ratios in one VM run (absolute numbers under TCG mean little):
# this suite's NVMe engine against the kernel's nvme driver on an identical
# second controller, and the engine's P2P path against its bounce path.
#
#   scripts/benchmark.sh [SECONDS]        print the tables (default 3 s per point)
#   scripts/benchmark.sh --update-doc     ... and rewrite Documentation/benchmarks.md
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
update=
secs=3
for a in "$@"; do
	case "$a" in --update-doc) update=1 ;; *) secs=$a ;; esac
done
run=$top/out/runs/switch.benchmark.base
echo "benchmark: booting the switch profile, $secs s per point (about $((secs * 13 + 40)) s)" >&2
P2P_EXTRA_APPEND="p2pbenchsecs=$secs" "$top/qemu/run.sh" --quiet switch benchmark ||
	{ echo "benchmark run failed, see $run/serial.log" >&2; exit 1; }
table=$(python3 - "$run/serial.log" <<'PY'
import json, sys
rows = [json.loads(l.split(' ', 1)[1]) for l in open(sys.argv[1], errors='replace')
        if l.startswith('P2P-BENCH {')]
def get(bench, size, qd=1, path='p2p'):
    return next(r for r in rows if r['bench'] == bench and r['size'] == size and r['qd'] == qd and r['path'] == path)
def kib(s): return f'{s // 1024} KiB'
out = ['### p2pnvme engine vs kernel nvme-pci (both reading into p2pmem of the same BAR)', '',
       '| size | QD | engine IOPS | nvme-pci IOPS | IOPS ratio | engine lat µs | nvme-pci lat µs | engine CPU µs/IO | nvme-pci CPU µs/IO | CPU ratio |',
       '|---|---|---|---|---|---|---|---|---|---|']
for size in (4096, 131072):
    e, k = get('engine', size), get('nvme-pci', size)
    out.append(f"| {kib(size)} | 1 | {e['iops']:.0f} | {k['iops']:.0f} | {e['iops']/k['iops']:.2f} | "
               f"{e['lat_us']:.0f} | {k['lat_us']:.0f} | {e['cpu_us_per_io']:.0f} | {k['cpu_us_per_io']:.0f} | "
               f"{e['cpu_us_per_io']/k['cpu_us_per_io']:.2f} |")
    k32 = get('nvme-pci', size, 32)
    for label, e32 in (('32 (one batch)', get('engine', size, 32)),
                       ('32 (32 threads)', get('engine-threads', size, 32))):
        out.append(f"| {kib(size)} | {label} | {e32['iops']:.0f} | {k32['iops']:.0f} | {e32['iops']/k32['iops']:.2f} | "
                   f"{e32['lat_us']:.0f} | {k32['lat_us']:.0f} | {e32['cpu_us_per_io']:.0f} | {k32['cpu_us_per_io']:.0f} | "
                   f"{e32['cpu_us_per_io']/k32['cpu_us_per_io']:.2f} |")
out += ['', '### engine: P2P path vs bounce path (same engine, same sizes)', '',
        '| size | P2P MiB/s | bounce MiB/s | throughput ratio | P2P CPU s/GiB | bounce CPU s/GiB | CPU ratio |',
        '|---|---|---|---|---|---|---|']
out[-2] = '| size | QD | P2P MiB/s | bounce MiB/s | throughput ratio | P2P CPU s/GiB | bounce CPU s/GiB | CPU ratio |'
out[-1] = '|---|---|---|---|---|---|---|---|'
for size, qd in ((4096, 1), (131072, 1), (131072, 32)):
    p, b = get('engine', size, qd), get('engine', size, qd, path='bounce')
    out.append(f"| {kib(size)} | {qd} | {p['mib_s']:.1f} | {b['mib_s']:.1f} | {p['mib_s']/b['mib_s']:.2f} | "
               f"{p['cpu_s_per_gib']:.2f} | {b['cpu_s_per_gib']:.2f} | {p['cpu_s_per_gib']/b['cpu_s_per_gib']:.2f} |")
print('\n'.join(out))
PY
)
echo "$table"
if [ -n "$update" ]; then
	doc=$top/Documentation/benchmarks.md
	python3 - "$doc" "$table" "$(date -u +%Y-%m-%d)" <<'PY'
import re, sys
doc, table, day = sys.argv[1:]
s = open(doc).read()
s = re.sub(r'<!-- results -->.*<!-- /results -->',
           f'<!-- results -->\nOne run, {day}, 2 vCPUs under TCG on a 2-core host:\n\n{table}\n<!-- /results -->',
           s, flags=re.S)
open(doc, 'w').write(s)
PY
	echo "updated $doc" >&2
fi
