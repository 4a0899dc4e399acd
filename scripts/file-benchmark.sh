#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The file benchmark in one VM run (Documentation/files.rst, step 7; absolute
# numbers under TCG mean little, the ratios are the result): one file, the
# same bytes on a filesystem on p2pnvme's disk and on one on nvme-pci's
# namespace of the twin controller, read at random into p2pmem of one BAR,
# 4 KiB at QD32 and 1 MiB at QD8: p2pnvme's file command (io_uring and the
# ioctl) into a registered p2pbar dma-buf, and through io_uring into the
# same dma-buf forced through placeholders (file_placeholder_force: what
# decides whether placeholders ship), O_DIRECT on either driver, the
# bounce (O_DIRECT into host memory and a memcpy into the BAR), and the LBA
# paths under the file (p2pnvme's disk at the file's extents, the engine's
# registered reads of its LBAs), and fio's O_DIRECT of the same files on
# either driver: qemu/tests/filebench.guest.sh, the tables
# scripts/file-bench.py's.
#
#   scripts/file-benchmark.sh [SECONDS]          print the tables (default 3 s per run)
#   scripts/file-benchmark.sh --passes N ...     N interleaved passes (default 3; medians)
#   scripts/file-benchmark.sh --fs xfs ...       the filesystems xfs, not ext4
#   scripts/file-benchmark.sh --update-doc ...   ... and put them in Documentation/benchmarks.md
#   scripts/file-benchmark.sh --clocksource CS   the guest's clocksource: tsc (default, trusted),
#                                                hpet or acpi_pm (scripts/bench-lib.sh)
# Its instructions per I/O: scripts/cpu-insn.sh --file.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
update= secs=3 profile=switch passes=3 clock=tsc fs=ext4
. "$top/scripts/bench-lib.sh"
while [ $# -gt 0 ]; do
	case "$1" in
	--fs) fs=${2:?--fs ext4|xfs}; shift ;;
	*)
		bench_opt file-benchmark.sh "$@"
		# shellcheck disable=SC2154 # bench_shift: bench_opt's
		shift $((bench_shift - 1)) ;;
	esac
	shift
done
case $fs in ext4|xfs) ;; *) echo "file-benchmark.sh: --fs wants ext4 or xfs, not '$fs'" >&2; exit 2 ;; esac
bench_counts file-benchmark.sh "$passes" "$secs" 1 || exit 2
append=$(bench_clock_append "$clock") || exit 2
run=$top/out/runs/$profile.filebench.base
# 20 runs of SECONDS a pass, a second or so of set-up each, the warm-ups
# and fio's verifying runs, the boot and the files (estimated: not booted yet)
est=$(( (secs + 1) * 20 * passes + 150 ))
echo "file benchmark: booting the $profile profile, $fs, $secs s per run, $passes passes, clocksource $clock (about $est s)" >&2
P2P_NVME_TRACE=0 P2P_EXTRA_APPEND="p2pbenchsecs=$secs p2pbenchpasses=$passes p2pbenchfs=$fs $append" \
	"$top/qemu/run.sh" --quiet --timeout $((est * 2 + 300)) "$profile" filebench ||
	{ echo "file benchmark run failed, see $run/serial.log" >&2; exit 1; }
clock_ok=1
bench_clock_check "$run/serial.log" "$clock" || clock_ok=
table=$(python3 "$top/scripts/file-bench.py" "$run/serial.log" "$profile") || exit 1
echo "$table"
if bench_updating; then
	rev=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
	bench_doc_put "$top/Documentation/benchmarks.md" file-results \
		"One run, $(date -u +%Y-%m-%d), at $rev, 2 vCPUs under TCG on a 2-core host, clocksource $clock, the files on $fs:" \
		"$table"
	echo "updated Documentation/benchmarks.md (file-results)" >&2
fi
