#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Benchmark runs (scripts/benchmark.sh reads the P2P-BENCH lines): this
# suite's engine on nvme0 against the kernel's nvme driver on nvme1, an
# identical controller, both reading into p2pmem of the same BAR; the
# engine's P2P path against its bounce path; and the engine against
# p2pnvme's own blk-mq disk on the same controller.
. /tests/lib.sh
expect_suites guest.benchmark

SECS=${p2pbenchsecs:-3}
PASSES=${p2pbenchpasses:-3}
DISK0=/dev/p2pnvme0n1

# p2pnvme with its disk (disk.c: blk-mq on a second set of queue pairs
# beside the engine's), which the blk-mq rows read
bench_pair benchmark disk
clock_mark start
# Instruction counts (a boot with P2P_INSN=1, scripts/cpu-insn.sh): each
# measured run a window of its own, window 1 and the last the counting's
# calibration (lib.sh: insn_cal, bench_run)
insn_cal
# warm up (TCG translates code on first use), results discarded
p2pbench engine /dev/p2pnvme0 4096 1 >/dev/null
p2pbench engine /dev/p2pnvme0 4096 1 --bounce >/dev/null
p2pbench blk "$BLK1" 4096 1 1 >/dev/null
p2pbench engine /dev/p2pnvme0 4096 1 --qd 32 >/dev/null
for size in 4096 131072; do
	bench_run engine /dev/p2pnvme0 $size "$SECS"
	bench_run blk "$BLK1" $size "$SECS" 1
	bench_run engine /dev/p2pnvme0 $size "$SECS" --qd 32
	bench_run engine /dev/p2pnvme0 $size "$SECS" --threads 32
	bench_run blk "$BLK1" $size "$SECS" 32
done
bench_run engine /dev/p2pnvme0 131072 "$SECS" --bounce
bench_run engine /dev/p2pnvme0 4096 "$SECS" --bounce
bench_run engine /dev/p2pnvme0 131072 "$SECS" --qd 32 --bounce
# io_uring, one submitting thread keeping QD in flight: the engine's
# passthrough against nvme-pci's O_DIRECT reads and its own passthrough
# (/dev/ngXnY), all into p2pmem of the same BAR
NG1=$(echo "$BLK1" | sed 's|/dev/nvme|/dev/ng|')
check "nvme-pci's generic char device $NG1" test -c "$NG1"
p2pbench uring engine /dev/p2pnvme0 4096 1 32 >/dev/null
p2pbench uring engine-reg /dev/p2pnvme0 4096 1 32 >/dev/null
p2pbench uring disk $DISK0 4096 1 32 >/dev/null
p2pbench uring blk "$BLK1" 4096 1 32 >/dev/null
p2pbench uring ng "$NG1" 4096 1 32 >/dev/null
# 4 KiB, where the targets are tightest and a single point moves most from
# run to run: three passes, interleaved (benchmark.sh takes each figure's
# median; p2pbenchpasses= on the kernel command line for more); 128 KiB
# once. At 4 KiB p2pnvme's disk is read too (O_DIRECT, blk-mq), right
# after the engine's registered reads: what blk-mq's path costs against
# the engine's, the question of issue 22's prototype (benchmarks.md)
for size in $(seq "$PASSES" | sed 's/.*/4096/') 131072; do
	for qd in 1 32; do
		bench_run uring engine-reg /dev/p2pnvme0 $size "$SECS" $qd
		[ $size = 4096 ] && bench_run uring disk $DISK0 $size "$SECS" $qd
		bench_run uring engine /dev/p2pnvme0 $size "$SECS" $qd
		bench_run uring blk "$BLK1" $size "$SECS" $qd
		bench_run uring ng "$NG1" $size "$SECS" $qd
	done
	bench_run uring engine /dev/p2pnvme0 $size "$SECS" 32 --bounce
done
# polled completions: every ring IORING_SETUP_IOPOLL
bench_polled "$NVME0" "$NVME1"
check "nvme-pci polls $BLK1" sh -c "[ \$(cat /sys/block/${BLK1#/dev/}/queue/io_poll) = 1 ]"
p2pbench uring engine-reg /dev/p2pnvme0 4096 1 32 --iopoll >/dev/null
p2pbench uring blk "$BLK1" 4096 1 32 --iopoll >/dev/null
p2pbench uring ng "$NG1" 4096 1 32 --iopoll >/dev/null
# 4 KiB, where the targets are tightest and a single point moves most from
# run to run: three passes, interleaved (benchmark.sh takes each figure's
# median); 128 KiB once
for size in 4096 4096 4096 131072; do
	for qd in 1 32; do
		bench_run uring engine-reg /dev/p2pnvme0 $size "$SECS" $qd --iopoll
		bench_run uring blk "$BLK1" $size "$SECS" $qd --iopoll
		bench_run uring ng "$NG1" $size "$SECS" $qd --iopoll
	done
done
check_eq "p2pnvme took no interrupt" "$(cat /sys/class/p2pnvme/p2pnvme0/stats/irqs)" 0
# what registering costs per page (host memory vs a p2pmem dma-buf), and
# p2pbar's allocator with 0 .. 10000 live allocations
bench_run regcost /dev/p2pnvme0 1048576 200
bench_run allocflat /dev/p2pbar0 2000
insn_cal
clock_mark end
bench_unload "$NVME0"
suite_end; exit $_any_failed
