#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark on fio, in one VM run (absolute numbers under TCG mean
# little; the ratios are the result): the same fio jobs (io_uring_cmd
# engine, random 4 KiB and 128 KiB reads) on this suite's /dev/p2pnvme0 and
# on nvme-pci's /dev/ngXnY of an identical controller, into host memory,
# io_uring's registered host buffers and p2pmem of the same BAR, p2pmem
# registered once as a dma-buf (p2pnvme through the suite's external fio
# engine, tools/fio/p2pnvme-reg.c) against nvme-pci mapping the same p2pmem
# per I/O, with interrupts and both polled (qemu/tests/fiobench.guest.sh).
#
#   scripts/fio-benchmark.sh [SECONDS]             print the table (default 3 s per row)
#   scripts/fio-benchmark.sh --strict [SECONDS]    the same under a strict vIOMMU
#   scripts/fio-benchmark.sh --passes N ...        4 KiB rows in N interleaved passes (default 3;
#                                                  the table has their medians)
#   scripts/fio-benchmark.sh --update-doc ...      ... and put it in Documentation/benchmarks.md
#   scripts/fio-benchmark.sh --clocksource CS ...  the guest's clocksource: tsc (default, trusted),
#                                                  hpet or acpi_pm (scripts/bench-lib.sh)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
update= secs=3 profile=switch passes=3 clock=tsc
. "$top/scripts/bench-lib.sh"
while [ $# -gt 0 ]; do
	case "$1" in
	--strict) profile=iommu-strict ;;
	*)
		bench_opt fio-benchmark.sh "$@"
		# shellcheck disable=SC2154 # bench_shift: bench_opt's
		shift $((bench_shift - 1)) ;;
	esac
	shift
done
# t/io_uring prints its IOPS once a second: a 1-second run prints none
bench_counts fio-benchmark.sh "$passes" "$secs" 2 || exit 2
append=$(bench_clock_append "$clock") || exit 2
run=$top/out/runs/$profile.fiobench.base
# 28 + 20 x PASSES runs of SECONDS and about a minute of boot and setup:
# the guest's time limit grows with them
est=$(( secs * (28 + 20 * passes) + 60 ))
echo "fio benchmark: booting the $profile profile, $secs s per row, $passes passes, clocksource $clock (about $est s)" >&2
P2P_NVME_TRACE=0 P2P_EXTRA_APPEND="p2pbenchsecs=$secs p2pbenchpasses=$passes $append" \
	"$top/qemu/run.sh" --quiet --timeout $((est * 2 + 300)) "$profile" fiobench ||
	{ echo "fio benchmark run failed, see $run/serial.log" >&2; exit 1; }
clock_ok=1
bench_clock_check "$run/serial.log" "$clock" || clock_ok=
table=$(python3 - "$run/serial.log" "$profile" <<'PY'
import json, statistics, sys
rows = []
for l in open(sys.argv[1], errors='replace'):
    if l.startswith('P2P-FIO {'):
        r = json.loads(l.split(' ', 1)[1])
        if r['fio'] is None:
            raise SystemExit(f"fio failed: {r['row']} on {r['dev']}")
        j = r['fio']['jobs'][0]['read']
        pct = j['clat_ns'].get('percentile', {})
        rows.append(dict(row=r['row'], ours=r['dev'] == '/dev/p2pnvme0', iops=j['iops'],
                         p50=pct.get('50.000000', 0) / 1000, p99=pct.get('99.000000', 0) / 1000,
                         cpu=r['busy'] * 10000 / max(j['total_ios'], 1),
                         # the host's view (qemu/hostd.py cputime): QEMU's vCPU threads
                         vcpu=(r['host']['vcpu_ns'] / 1000 / max(j['total_ios'], 1)
                               if r.get('host') else None),
                         # the rest of QEMU (device models, I/O workers) per I/O, and
                         # its main loop's share of a host core over the job
                         dev=((r['host']['qemu_ns'] - r['host']['vcpu_ns']) / 1000 /
                              max(j['total_ios'], 1) if r.get('host') else None),
                         main=(r['host']['main_ns'] / 1e9 / j['runtime'] * 1000
                               if r.get('host') and 'main_ns' in r['host'] else None)))
def med(name, ours, k):
    v = [r[k] for r in rows if r['row'] == name and r['ours'] == ours]
    if not v:
        raise SystemExit(f'no result for {name}')
    if k in ('vcpu', 'dev', 'main'):     # a host that could not say: no column
        return statistics.median(v) if None not in v else None
    return statistics.median(v)
vc = all(r['vcpu'] is not None for r in rows)
names = list(dict.fromkeys(r['row'] for r in rows))
out = [f"### fio io_uring_cmd: /dev/p2pnvme0 (p2pnvme) vs nvme-pci's /dev/ngXnY, profile {sys.argv[2]}", '',
       '| job | memory | p2pnvme IOPS | nvme-pci IOPS | IOPS ratio | p2pnvme clat µs p50/p99 | nvme-pci clat µs p50/p99 | p2pnvme CPU µs/IO | nvme-pci CPU µs/IO | CPU ratio |'
       + (' p2pnvme vCPU µs/IO | nvme-pci vCPU µs/IO | vCPU ratio |' if vc else ''),
       '|---|---|---|---|---|---|---|---|---|---|' + ('---|---|---|' if vc else '')]
ratio = {}
keys = ('iops', 'p50', 'p99', 'cpu') + (('vcpu',) if vc else ())
for n in names:
    o = {k: med(n, True, k) for k in keys}
    t = {k: med(n, False, k) for k in keys}
    ratio[n] = (o['iops'] / t['iops'], o['cpu'] / t['cpu'], o['vcpu'] / t['vcpu'] if vc else None)
    parts = n.split('-')
    mem = {'host': 'host', 'fixed': 'host, registered', 'p2p': 'p2pmem',
           'reg': 'p2pmem, registered dma-buf (p2pnvme_reg) vs mapped per I/O',
           'hipri': 'polled, ' + parts[1]}[parts[0]]
    size, qd = parts[-2], parts[-1]
    out.append(f"| {int(size) // 1024} KiB QD{qd} | {mem} | {o['iops']:.0f} | {t['iops']:.0f} | {ratio[n][0]:.2f} | "
               f"{o['p50']:.0f}/{o['p99']:.0f} | {t['p50']:.0f}/{t['p99']:.0f} | {o['cpu']:.0f} | {t['cpu']:.0f} | {ratio[n][1]:.2f} |"
               + (f" {o['vcpu']:.1f} | {t['vcpu']:.1f} | {ratio[n][2]:.2f} |" if vc else ''))
if all(r['main'] is not None for r in rows):
    # what the emulated controllers cost the host, per driver
    # (Documentation/benchmarks.md, "The host's view")
    out += ['', "### QEMU's side of the same jobs (the host's view, qemu/hostd.py cputime): the device models", '',
            '| job | memory | p2pnvme: rest of QEMU µs/IO | nvme-pci: rest of QEMU µs/IO | p2pnvme: main loop s/s | nvme-pci: main loop s/s |',
            '|---|---|---|---|---|---|']
    for n in names:
        parts = n.split('-')
        out.append(f"| {int(parts[-2]) // 1024} KiB QD{parts[-1]} | {parts[0] if parts[0] != 'hipri' else 'polled, ' + parts[1]} | "
                   f"{med(n, True, 'dev'):.1f} | {med(n, False, 'dev'):.1f} | {med(n, True, 'main'):.2f} | {med(n, False, 'main'):.2f} |")
bench = [json.loads(l.split(' ', 1)[1]) for l in open(sys.argv[1], errors='replace')
         if l.startswith('P2P-BENCH {')]
if bench:
    def bmed(name, k):
        return statistics.median(r[k] for r in bench if r['bench'] == name)
    out += ['', '### the same engine through p2pbench (unregistered host memory), 4 KiB QD32: its own command and the kernel\'s, the plain ring and fio\'s ring', '',
            '| command | ring | p2pnvme IOPS | nvme-pci (ng) IOPS | IOPS ratio | p2pnvme CPU µs/IO | nvme-pci CPU µs/IO | CPU ratio |',
            '|---|---|---|---|---|---|---|---|']
    for cmd, kind in (('P2PNVME_URING_CMD_IO', 'engine-uring'), ('NVME_URING_CMD_IO', 'engine-uring-std')):
        for tag, label in (('', 'SQE128, CQE32'), ('-defer', '+ SINGLE_ISSUER, DEFER_TASKRUN, COOP_TASKRUN (fio\'s)')):
            e, n = kind + tag, 'nvme-pci-ng' + tag
            if not any(r['bench'] == e for r in bench):
                continue
            out.append(f"| {cmd} | {label} | {bmed(e, 'iops'):.0f} | {bmed(n, 'iops'):.0f} | {bmed(e, 'iops') / bmed(n, 'iops'):.2f} | "
                       f"{bmed(e, 'cpu_us_per_io'):.0f} | {bmed(n, 'cpu_us_per_io'):.0f} | {bmed(e, 'cpu_us_per_io') / bmed(n, 'cpu_us_per_io'):.2f} |")
tiou = [json.loads(l.split(' ', 1)[1]) for l in open(sys.argv[1], errors='replace')
        if l.startswith('P2P-TIOU {')]
if tiou:
    def tmed(ours, b, k):
        v = []
        for r in tiou:
            if (r['dev'] == '/dev/p2pnvme0') != ours or r['batch'] != b or not r['iops']:
                continue
            # the first second warms up; CPU per I/O over the whole run
            iops = statistics.median(r['iops'][1:] or r['iops'])
            v.append(iops if k == 'iops' else r['busy'] * 10000 / max(sum(r['iops']), 1))
        return statistics.median(v) if v else 0
    out += ['', "### fio's t/io_uring -u1 (the kernel's passthrough command), 4 KiB random reads at QD32, host memory", '',
            '| commands per io_uring_enter() | p2pnvme IOPS | nvme-pci (ng) IOPS | IOPS ratio | p2pnvme CPU µs/IO | nvme-pci CPU µs/IO | CPU ratio |',
            '|---|---|---|---|---|---|---|']
    for b in sorted({r['batch'] for r in tiou}):
        o, t = tmed(True, b, 'iops'), tmed(False, b, 'iops')
        oc, tc = tmed(True, b, 'cpu'), tmed(False, b, 'cpu')
        if o and t and oc and tc:
            out.append(f"| {b} | {o:.0f} | {t:.0f} | {o / t:.2f} | {oc:.0f} | {tc:.0f} | {oc / tc:.2f} |")
def verdict(ok):
    return 'met' if ok else 'missed'
h, f = ratio['host-4096-32'], ratio['fixed-4096-32']
out += ['', '| target (issue 23), this run | wanted | got | |', '|---|---|---|---|',
        f"| 4 KiB QD32 host memory: IOPS | >= 1.0x | {h[0]:.2f}x | {verdict(h[0] >= 1.0)} |",
        f"| 4 KiB QD32 host memory: CPU per I/O | <= 0.9x | {h[1]:.2f}x | {verdict(h[1] <= 0.9)} |"]
if vc:
    out.append(f"| ... the same, the vCPU threads' host CPU time per I/O | <= 0.9x | {h[2]:.2f}x | {verdict(h[2] <= 0.9)} |")
out += [
        f"| 4 KiB QD32 registered host buffers: IOPS | >= 1.1x | {f[0]:.2f}x | {verdict(f[0] >= 1.1)} |"]
if 'hipri-host-4096-32' in ratio:
    p = ratio['hipri-host-4096-32']
    out.append(f"| 4 KiB QD32 polled, host memory: IOPS | >= 1.0x | {p[0]:.2f}x | {verdict(p[0] >= 1.0)} |")
if 'reg-4096-32' in ratio:
    # the registered dma-buf's own targets; under a strict IOMMU, where
    # nvme-pci maps and unmaps each I/O, 2x
    g = ratio['reg-4096-32']
    out += [f"| 4 KiB QD32 registered p2pmem dma-buf: IOPS | >= 1.1x | {g[0]:.2f}x | {verdict(g[0] >= 1.1)} |",
            f"| 4 KiB QD32 registered p2pmem dma-buf: CPU per I/O | <= 0.6x | {g[1]:.2f}x | {verdict(g[1] <= 0.6)} |"]
    if vc:
        out.append(f"| ... the same, the vCPU threads' host CPU time per I/O | <= 0.6x | {g[2]:.2f}x | {verdict(g[2] <= 0.6)} |")
    if sys.argv[2] != 'switch':
        out.append(f"| 4 KiB QD32 registered p2pmem dma-buf under a strict IOMMU: IOPS | >= 2x | {g[0]:.2f}x | {verdict(g[0] >= 2)} |")
print('\n'.join(out))
PY
)
echo "$table"
if bench_updating; then
	doc=$top/Documentation/benchmarks.md
	tag=fio-results; [ "$profile" = switch ] || tag=fio-results-strict
	bench_doc_put "$doc" "$tag" \
		"One run, $(date -u +%Y-%m-%d), 2 vCPUs under TCG on a 2-core host, clocksource $clock:" \
		"$table"
	echo "updated $doc" >&2
fi
