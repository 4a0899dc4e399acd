#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmark ratios in one VM run (absolute numbers under TCG mean little):
# this suite's NVMe engine against the kernel's nvme driver on an identical
# second controller, the engine's P2P path against its bounce path, and
# the engine against p2pnvme's own blk-mq disk.
#
#   scripts/benchmark.sh [SECONDS]        print the tables (default 3 s per point)
#   scripts/benchmark.sh --passes N       interrupt-driven io_uring 4 KiB points in N
#                                         interleaved passes, not 3 (medians of N)
#   scripts/benchmark.sh --strict         the same under a strict vIOMMU (profile
#                                         iommu-strict: each per-I/O mapping unmapped
#                                         at once), with issue 23's target there
#   scripts/benchmark.sh --update-doc     ... and rewrite Documentation/benchmarks.md
#   scripts/benchmark.sh --clocksource CS the guest's clocksource: tsc (default, trusted),
#                                         hpet or acpi_pm (scripts/bench-lib.sh)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
update=
secs=3
passes=3
profile=switch
clock=tsc
. "$top/scripts/bench-lib.sh"
while [ $# -gt 0 ]; do
	case "$1" in
	--strict) profile=iommu-strict ;;
	*)
		bench_opt benchmark.sh "$@"
		# shellcheck disable=SC2154 # bench_shift: bench_opt's
		shift $((bench_shift - 1)) ;;
	esac
	shift
done
bench_counts benchmark.sh "$passes" "$secs" 1 || exit 2
append=$(bench_clock_append "$clock") || exit 2
run=$top/out/runs/$profile.benchmark.base
echo "benchmark: booting the $profile profile, $secs s per point, clocksource $clock (about $((secs * 61 + 110)) s)" >&2
P2P_NVME_TRACE=0 P2P_EXTRA_APPEND="p2pbenchsecs=$secs p2pbenchpasses=$passes $append" \
	"$top/qemu/run.sh" --quiet "$profile" benchmark ||
	{ echo "benchmark run failed, see $run/serial.log" >&2; exit 1; }
clock_ok=1
bench_clock_check "$run/serial.log" "$clock" || clock_ok=
table=$(python3 - "$run/serial.log" "$profile" <<'PY'
import json, statistics, sys
rows = [json.loads(l.split(' ', 1)[1]) for l in open(sys.argv[1], errors='replace')
        if l.startswith('P2P-BENCH {')]
def get(bench, size, qd=1, path='p2p'):
    # a point measured in several passes: the median of each figure
    rs = [r for r in rows if r['bench'] == bench and r['size'] == size and r['qd'] == qd and r['path'] == path]
    if not rs:
        raise SystemExit(f'no result for {bench} {size} QD{qd} {path}')
    return {k: statistics.median(r[k] for r in rs) if isinstance(v, (int, float)) else v
            for k, v in rs[0].items()}
# how many interleaved passes the 4 KiB io_uring points had (--passes)
npass = sum(1 for r in rows if r['bench'] == 'engine-uring-reg' and r['size'] == 4096 and r['qd'] == 32)
words = {1: 'one', 2: 'two', 3: 'three'}
passes = f"medians of {words.get(npass, npass)} interleaved passes"
def one(bench):
    return next(r for r in rows if r['bench'] == bench)
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

# io_uring: (c) the engine against the best of (a) nvme-pci O_DIRECT and
# (b) nvme-pci passthrough, one thread, QD kept full
# (c) reads into a registered p2pmem dma-buf; (c') is the same engine with
# the buffer pinned and mapped per I/O (no registration), for reference
out += ['', f'### io_uring, one thread: engine with a registered buffer (c) vs nvme-pci O_DIRECT (a) and nvme-pci passthrough (b); 4 KiB: {passes}', '',
        "| size | QD | (c) IOPS | (c') IOPS unregistered | (a) IOPS | (b) IOPS | IOPS (c)/best | (c) lat µs mean/p99 | best lat µs mean/p99 | (c) CPU µs/IO | (c') CPU µs/IO | best CPU µs/IO | CPU (c)/best |",
        '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
ratio = {}
for size in (4096, 131072):
    for qd in (1, 32):
        c, a, b = get('engine-uring-reg', size, qd, path='dmabuf'), get('nvme-pci-uring', size, qd), get('nvme-pci-ng', size, qd)
        u = get('engine-uring', size, qd)
        best_iops = max(a['iops'], b['iops'])
        best_lat = min((a, b), key=lambda r: r['lat_us'])
        best_cpu = min((a, b), key=lambda r: r['cpu_us_per_io'])
        ratio[size, qd] = dict(iops=c['iops'] / best_iops, lat=c['lat_us'] / best_lat['lat_us'],
                               cpu=c['cpu_us_per_io'] / best_cpu['cpu_us_per_io'],
                               gib=c['cpu_s_per_gib'] / min(a['cpu_s_per_gib'], b['cpu_s_per_gib']))
        out.append(f"| {kib(size)} | {qd} | {c['iops']:.0f} | {u['iops']:.0f} | {a['iops']:.0f} | {b['iops']:.0f} | {ratio[size, qd]['iops']:.2f} | "
                   f"{c['lat_us']:.0f}/{c['p99_us']:.0f} | {best_lat['lat_us']:.0f}/{best_lat['p99_us']:.0f} | "
                   f"{c['cpu_us_per_io']:.0f} | {u['cpu_us_per_io']:.0f} | {best_cpu['cpu_us_per_io']:.0f} | {ratio[size, qd]['cpu']:.2f} |")

# blk-mq against the engine on one controller: p2pnvme's disk (disk=1;
# O_DIRECT IORING_OP_READ, blk-mq, non-fixed buffers) interleaved with the
# engine's (c) in each 4 KiB pass, the question issue 22's prototype
# answered (Documentation/benchmarks.md, "blk-mq or the engine"); and the
# disk against nvme-pci's O_DIRECT (a), the same kernel path on each driver
out += ['', f"### blk-mq vs the engine: p2pnvme's disk (O_DIRECT) vs the engine (c), and vs nvme-pci O_DIRECT (a), one thread, 4 KiB, {passes}", '',
        '| QD | (c) IOPS | disk IOPS | (a) IOPS | IOPS disk/(c) | (c) lat µs mean/p99 | disk lat µs mean/p99 | (c) CPU µs/IO | disk CPU µs/IO | (a) CPU µs/IO | CPU disk/(c) | CPU disk/(a) |',
        '|---|---|---|---|---|---|---|---|---|---|---|---|']
def pooled(rs, what):
    ops = sum(r['ops'] for r in rs)
    if what == 'iops':
        return ops / sum(r['ops'] / r['iops'] for r in rs)
    return sum(r['cpu_us_per_io'] * r['ops'] for r in rs) / ops
for qd in (1, 32):
    e, d, a = get('engine-uring-reg', 4096, qd, path='dmabuf'), get('disk-uring', 4096, qd), get('nvme-pci-uring', 4096, qd)
    out.append(f"| {qd} | {e['iops']:.0f} | {d['iops']:.0f} | {a['iops']:.0f} | {d['iops'] / e['iops']:.2f} | "
               f"{e['lat_us']:.0f}/{e['p99_us']:.0f} | {d['lat_us']:.0f}/{d['p99_us']:.0f} | "
               f"{e['cpu_us_per_io']:.2f} | {d['cpu_us_per_io']:.2f} | {a['cpu_us_per_io']:.2f} | "
               f"{d['cpu_us_per_io'] / e['cpu_us_per_io']:.2f} | {d['cpu_us_per_io'] / a['cpu_us_per_io']:.2f} |")
for qd in (1, 32):
    es = [r for r in rows if r['bench'] == 'engine-uring-reg' and r['size'] == 4096 and r['qd'] == qd]
    ds = [r for r in rows if r['bench'] == 'disk-uring' and r['size'] == 4096 and r['qd'] == qd]
    out.append('')
    out.append(f"QD{qd} pass by pass ((c), disk): IOPS " +
               ', '.join(f"{e['iops']:.0f}/{d['iops']:.0f} ({d['iops'] / e['iops']:.2f})" for e, d in zip(es, ds)) +
               '; CPU µs/IO ' +
               ', '.join(f"{e['cpu_us_per_io']:.2f}/{d['cpu_us_per_io']:.2f} ({d['cpu_us_per_io'] / e['cpu_us_per_io']:.2f})"
                         for e, d in zip(es, ds)) +
               '; pooled (all reads over all time, all CPU over all reads): IOPS %.2f, CPU %.2f' % (
                   pooled(ds, 'iops') / pooled(es, 'iops'), pooled(ds, 'cpu') / pooled(es, 'cpu')))

pb = {}
for size in (4096, 131072):
    p, b = get('engine-uring', size, 32), get('engine-uring', size, 32, path='bounce')
    pb[size] = (p['mib_s'] / b['mib_s'], p['cpu_s_per_gib'] / b['cpu_s_per_gib'])

# the same with polled completions: IORING_SETUP_IOPOLL rings, p2pnvme with
# poll=1, nvme-pci with poll queues (no targets of their own: the targets
# above are met or missed with interrupts; this shows what polling changes)
out += ['', '### io_uring with polled completions (IORING_SETUP_IOPOLL), one thread: (c) vs (a) and (b), all polled', '',
        '| size | QD | (c) IOPS | (a) IOPS | (b) IOPS | IOPS (c)/best | (c) lat µs mean/p99 | best lat µs mean/p99 | (c) CPU µs/IO | best CPU µs/IO | CPU (c)/best | (c) polled/interrupts IOPS |',
        '|---|---|---|---|---|---|---|---|---|---|---|---|']
for size in (4096, 131072):
    for qd in (1, 32):
        c = get('engine-uring-reg-iopoll', size, qd, path='dmabuf')
        a, b = get('nvme-pci-uring-iopoll', size, qd), get('nvme-pci-ng-iopoll', size, qd)
        ci = get('engine-uring-reg', size, qd, path='dmabuf')
        best_iops = max(a['iops'], b['iops'])
        best_lat = min((a, b), key=lambda r: r['lat_us'])
        best_cpu = min((a, b), key=lambda r: r['cpu_us_per_io'])
        out.append(f"| {kib(size)} | {qd} | {c['iops']:.0f} | {a['iops']:.0f} | {b['iops']:.0f} | {c['iops'] / best_iops:.2f} | "
                   f"{c['lat_us']:.0f}/{c['p99_us']:.0f} | {best_lat['lat_us']:.0f}/{best_lat['p99_us']:.0f} | "
                   f"{c['cpu_us_per_io']:.0f} | {best_cpu['cpu_us_per_io']:.0f} | {c['cpu_us_per_io'] / best_cpu['cpu_us_per_io']:.2f} | "
                   f"{c['iops'] / ci['iops']:.2f} |")

def verdict(ok):
    return 'met' if ok else 'missed'
rc, af = one('regcost'), one('allocflat')
r4, r4q1, r128 = ratio[4096, 32], ratio[4096, 1], ratio[131072, 32]
title = 'Targets (issue 10), this run'
if sys.argv[2] != 'switch':
    title = f"Targets (issue 10; the last row issue 23's), profile {sys.argv[2]}, this run"
out += ['', f'### {title}', '',
        '| target | wanted | got | |', '|---|---|---|---|',
        f"| 4 KiB QD32 IOPS vs best of (a), (b) | >= 1.1x | {r4['iops']:.2f}x | {verdict(r4['iops'] >= 1.1)} |",
        f"| 4 KiB QD32 guest CPU per I/O | <= 0.6x | {r4['cpu']:.2f}x | {verdict(r4['cpu'] <= 0.6)} |",
        f"| 4 KiB QD1 mean latency | <= 0.9x | {r4q1['lat']:.2f}x | {verdict(r4q1['lat'] <= 0.9)} |",
        f"| 128 KiB QD32 throughput | >= 1.0x | {r128['iops']:.2f}x | {verdict(r128['iops'] >= 1.0)} |",
        f"| 128 KiB QD32 CPU per GiB | <= 0.7x | {r128['gib']:.2f}x | {verdict(r128['gib'] <= 0.7)} |",
        f"| engine P2P vs bounce, 4 KiB QD32: throughput | >= 1.0x | {pb[4096][0]:.2f}x | {verdict(pb[4096][0] >= 1.0)} |",
        f"| engine P2P vs bounce, 4 KiB QD32: CPU per GiB | <= 0.9x | {pb[4096][1]:.2f}x | {verdict(pb[4096][1] <= 0.9)} |",
        f"| engine P2P vs bounce, 128 KiB QD32: throughput | >= 3x | {pb[131072][0]:.2f}x | {verdict(pb[131072][0] >= 3)} |",
        f"| engine P2P vs bounce, 128 KiB QD32: CPU per GiB | <= 0.3x | {pb[131072][1]:.2f}x | {verdict(pb[131072][1] <= 0.3)} |",
        f"| map cost: registering p2pmem vs host memory, per page | <= 1.1x | {rc['ratio']:.2f}x ({rc['p2pmem_us_per_page']:.2f} vs {rc['host_us_per_page']:.2f} µs) | {verdict(rc['ratio'] <= 1.1)} |",
        f"| p2pbar alloc+free, 0 -> 10000 live allocations | <= 2x | {af['ratio']:.2f}x ({af['us_per_pair_0']:.0f}/{af['us_per_pair_1000']:.0f}/{af['us_per_pair_10000']:.0f} µs at 0/1000/10000) | {verdict(af['ratio'] <= 2)} |"]
if sys.argv[2] != 'switch':
    # issue 23: where each per-I/O mapping is unmapped at once, the
    # registered (pre-mapped) dma-buf should pay off most
    out.append(f"| 4 KiB QD32 IOPS vs best of (a), (b) under a strict IOMMU | >= 2x | {r4['iops']:.2f}x | {verdict(r4['iops'] >= 2)} |")
print('\n'.join(out))
PY
)
echo "$table"
if bench_updating; then
	doc=$top/Documentation/benchmarks.md
	tag=results; [ "$profile" = switch ] || tag=results-strict
	bench_doc_put "$doc" "$tag" \
		"One run, $(date -u +%Y-%m-%d), 2 vCPUs under TCG on a 2-core host, clocksource $clock:" \
		"$table"
	echo "updated $doc" >&2
fi
