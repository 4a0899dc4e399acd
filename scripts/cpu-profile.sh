#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Where p2pnvme's CPU per I/O goes against nvme-pci's, in one VM run
# (qemu/tests/cpuprof.guest.sh): fio's t/io_uring with the kernel's
# passthrough command, 4 KiB random reads at QD32, host memory and
# io_uring's registered buffers, 32 commands per io_uring_enter() and 1,
# on /dev/p2pnvme0 and on nvme-pci's /dev/ngXnY of an identical
# controller, in interleaved passes; the guest's busy time per I/O of each
# and their ratio, and the same from the host's side (QEMU's vCPU threads'
# CPU time, qemu/hostd.py cputime). Without QEMU's nvme trace, as the benchmarks.
#
#   scripts/cpu-profile.sh [SECONDS]          the table (default 3 s a run)
#   scripts/cpu-profile.sh --passes N ...     N interleaved passes (default 3; sums over them)
#   scripts/cpu-profile.sh --clocksource CS   the guest's clocksource: tsc (default, trusted),
#                                             hpet or acpi_pm (scripts/bench-lib.sh)
#   scripts/cpu-profile.sh --perf ...         and this machine's perf in the guest: a perf
#                                             record of each driver at 32 per enter, the top
#                                             of each report (self, then with children); and
#                                             of fio's fixed-buffer and registered dma-buf rows
#                                             (fio-benchmark.sh) by program and object, then
#                                             fio's by symbol, self and with children
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=3 passes=3 perf=0 clock=tsc
. "$top/scripts/bench-lib.sh"
while [ $# -gt 0 ]; do
	case "$1" in
	--perf) perf=1 ;;
	--update-doc) echo "cpu-profile.sh: unknown option $1" >&2; exit 2 ;;
	*)
		bench_opt cpu-profile.sh "$@"
		# shellcheck disable=SC2154 # bench_shift: bench_opt's
		shift $((bench_shift - 1)) ;;
	esac
	shift
done
# t/io_uring prints its IOPS once a second: a 1-second run prints none
bench_counts cpu-profile.sh "$passes" "$secs" 2 || exit 2
append=$(bench_clock_append "$clock") || exit 2
bins=
if [ $perf = 1 ]; then
	bins=$(command -v perf || true)
	[ -n "$bins" ] || { echo "cpu-profile.sh: --perf needs perf on this machine (apt install linux-perf)" >&2; exit 2; }
fi
run=$top/out/runs/switch.cpuprof.base
est=$(( secs * (8 * passes + 6 * perf) + 90 ))
echo "cpu profile: booting the switch profile, $secs s a run, $passes passes, clocksource $clock${bins:+, with perf} (about $est s)" >&2
P2P_NVME_TRACE=0 P2P_GUEST_BINS=$bins \
	P2P_EXTRA_APPEND="p2pbenchsecs=$secs p2pbenchpasses=$passes p2pperf=$perf $append" \
	"$top/qemu/run.sh" --quiet --timeout $((est * 2 + 300)) switch cpuprof ||
	{ echo "cpu profile run failed, see $run/serial.log" >&2; exit 1; }
bench_clock_check "$run/serial.log" "$clock" || true
python3 - "$run/serial.log" <<'PY'
import json, statistics, sys
runs = {}
for l in open(sys.argv[1], errors='replace'):
    if l.startswith('P2P-PROF {'):
        r = json.loads(l.split(' ', 1)[1])
        k = (r['fixed'], r['batch'], r['dev'] == '/dev/p2pnvme0')
        runs.setdefault(k, []).append(r)
# the host's view too (qemu/hostd.py cputime): QEMU's vCPU threads
vc = all(r.get('host') for rs in runs.values() for r in rs)
print('| memory | commands per enter | p2pnvme IOPS | nvme-pci (ng) IOPS | p2pnvme CPU µs/IO | nvme-pci CPU µs/IO | CPU ratio |'
      + (' p2pnvme vCPU µs/IO | nvme-pci vCPU µs/IO | vCPU ratio |' if vc else ''))
print('|---|---|---|---|---|---|---|' + ('---|---|---|' if vc else ''))
for fixed in (0, 1):
    for batch in (32, 1):
        row = []
        for ours in (True, False):
            rs = runs.get((fixed, batch, ours), [])
            if not rs or not all(r['iops'] for r in rs):
                raise SystemExit(f'no result for -B{fixed} -s{batch}')
            # t/io_uring prints a line a second; a run's I/Os: its mean
            # IOPS over its seconds. busy: USER_HZ ticks of 10 ms.
            iops = statistics.mean(statistics.mean(r['iops']) for r in rs)
            ios = sum(statistics.mean(r['iops']) * r['secs'] for r in rs)
            row.append((iops, sum(r['busy'] for r in rs) * 10000 / ios,
                        sum(r['host']['vcpu_ns'] for r in rs) / 1000 / ios if vc else 0))
        (pi, pc, pv), (ni, nc, nv) = row
        print(f"| {'registered (-B1)' if fixed else 'host (-B0)'} | {batch} | {pi:.0f} | {ni:.0f} | "
              f"{pc:.1f} | {nc:.1f} | {pc / nc:.2f} |" + (f" {pv:.1f} | {nv:.1f} | {pv / nv:.2f} |" if vc else ''))
PY
if [ $perf = 1 ]; then
	echo
	grep -a '^P2P-PERF ' "$run/serial.log" | sed 's/^P2P-PERF //' || true
fi
