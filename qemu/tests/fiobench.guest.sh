#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The benchmark on fio (scripts/fio-benchmark.sh reads the P2P-FIO lines):
# the same fio jobs, io_uring_cmd engine, on this suite's /dev/p2pnvme0
# (nvme0) and on nvme-pci's /dev/ngXnY of an identical controller (nvme1),
# into host memory, io_uring's registered host buffers and p2pmem of the
# same BAR (an mmap of /dev/p2pbar0); p2pmem registered once as a dma-buf
# through the suite's external engine (p2pnvme_reg) against nvme-pci's
# per-I/O mapping of the same p2pmem; then both polled (hipri). Each line:
# the job, fio's IOPS and completion latency percentiles, and the guest's
# CPU per I/O (all CPUs' busy time from /proc/stat over the job, so the
# completion side is counted wherever it runs).
. /tests/lib.sh
expect_suites guest.fiobench

SECS=${p2pbenchsecs:-3}
PASSES=${p2pbenchpasses:-3}
ENG=/usr/lib/fio/p2pnvme-reg.so

bench_pair fiobench
check "fio is in the guest" sh -c 'command -v fio >/dev/null'

clock_mark start
# Instruction counts (a boot with P2P_INSN=1, scripts/cpu-insn.sh): each
# fio job's I/O, from fio's prerun to its postrun, and each p2pbench run's
# measured loop a window of its own, window 1 and the last the counting's
# calibration (lib.sh: insn_cal, insn_win, bench_run)
insn_cal
# row NAME DEV MEM BS QD [fio options]: one time-based random-read job
row() {
	_name=$1 _dev=$2 _mem=$3 _bs=$4 _qd=$5
	shift 5
	insn_win
	_w=$insn_w
	# fio runs these in its job thread right before its first I/O and
	# after its last (after its setup, before its teardown)
	[ $_w = null ] ||
		set -- "$@" "--exec_prerun=p2pbench mark $_w start" "--exec_postrun=p2pbench mark $_w end"
	_e="--ioengine=io_uring_cmd --cmd_type=nvme"
	case $_mem in
	host) _m= ;;
	fixed) _m=--fixedbufs=1 ;;
	p2p) _m=--iomem=mmapshared:/dev/p2pbar0 ;;
	reg)	# p2pnvme: registered; nvme-pci: the same p2pmem mapped per I/O
		_m=--iomem=mmapshared:/dev/p2pbar0
		[ "$_dev" = /dev/p2pnvme0 ] && _e=--ioengine=external:$ENG _m= ;;
	esac
	_h0=$(host_cpu)
	_b0=$(busy)
	fio --output-format=json --name=r --filename="$_dev" $_e \
		--rw=randread --bs="$_bs" --iodepth="$_qd" --size=48M --norandommap --randrepeat=0 \
		--time_based --runtime="$SECS" $_m "$@" >/tmp/fio.json 2>/tmp/fio.err
	_rc=$?
	_b1=$(busy)
	_h1=$(host_cpu)
	# fio's whole JSON on one line: the host picks what it needs (what
	# fio says before it, such as where a prerun's output went, is not JSON)
	echo "P2P-FIO {\"row\":\"$_name\",\"dev\":\"$_dev\",\"mem\":\"$_mem\",\"bs\":$_bs,\"qd\":$_qd,\"busy\":$((_b1 - _b0)),\"mark\":$_w,\"host\":$(host_delta "$_h0" "$_h1"),\"fio\":$( [ $_rc -eq 0 ] && sed -n '/^{/,$p' /tmp/fio.json | tr -d '\n' || echo null)}"
	check_eq "fio $_name on $_dev" "$_rc" 0
	[ $_rc -eq 0 ] || diag "$(head -c 300 /tmp/fio.err)"
}
# warm up (TCG translates code on first use), results discarded
for d in /dev/p2pnvme0 "$NG1"; do
	fio --name=w --filename="$d" --ioengine=io_uring_cmd --cmd_type=nvme --rw=randread \
		--bs=4k --iodepth=32 --size=48M --time_based --runtime=1 >/dev/null 2>&1
done
mems="host fixed p2p"
if [ -e $ENG ]; then
	mems="$mems reg"
else
	skip "the registered dma-buf rows (fio's external engine p2pnvme_reg)" "fio's headers were not kept (qemu/extools.sh)"
fi
# 4 KiB in PASSES interleaved passes (the host's speed drifts: the table
# takes each row's median), 128 KiB once
for pass in $(seq "$PASSES"); do
	for shape in "4096 1" "4096 32" "131072 32"; do
		set -- $shape
		[ $pass != 1 ] && [ $1 = 131072 ] && continue
		for mem in $mems; do
			row "$mem-$1-$2" /dev/p2pnvme0 $mem $1 $2
			row "$mem-$1-$2" "$NG1" $mem $1 $2
		done
	done
done
# the same engine through p2pbench's own command, unregistered host memory,
# on p2pbench's plain ring and on the ring fio sets up (DEFER_TASKRUN ...),
# beside nvme-pci's passthrough on both: where the fio rows differ from
# benchmarks.md's p2pbench rows, this says whether the ring is why
for pass in 1 2; do
	for defer in "" --defer; do
		for d in "engine /dev/p2pnvme0" "engine-std /dev/p2pnvme0" "ng $NG1"; do
			# shellcheck disable=SC2086
			bench_run uring $d 4096 "$SECS" 32 --host $defer
		done
	done
done
# fio's t/io_uring (-u1: the kernel's NVMe passthrough command), its
# peak-IOPS tool, 4 KiB random reads at QD32 into host memory: one command
# per io_uring_enter() (-s1 -c1, fio's default way) and 32 (-s32 -c32)
if command -v t-io_uring >/dev/null; then
	for pass in 1 2; do
		for b in 1 32; do
			for d in /dev/p2pnvme0 "$NG1"; do
				_b0=$(busy)
				t-io_uring -u1 -n1 -b4096 -d32 -s$b -c$b -p0 -F0 -B0 -R1 -X1 -O0 \
					-r"$SECS" "$d" >/tmp/tiou.out 2>&1
				_rc=$?
				_b1=$(busy)
				_iops=$(sed -n 's/^IOPS=\([0-9]*\),.*/\1/p' /tmp/tiou.out | tr '\n' ',' | sed 's/,$//')
				echo "P2P-TIOU {\"dev\":\"$d\",\"batch\":$b,\"busy\":$((_b1 - _b0)),\"secs\":$SECS,\"iops\":[$_iops]}"
				check_eq "t/io_uring -s$b on $d" "$_rc $([ -n "$_iops" ] && echo ran)" "0 ran"
				[ $_rc -eq 0 ] || diag "$(tail -n 3 /tmp/tiou.out)"
			done
		done
	done
else
	skip "t/io_uring" "not built (qemu/extools.sh)"
fi
# both polled, IOPOLL rings (fio's hipri)
bench_polled "$NVME0" "$NVME1"
for pass in $(seq "$PASSES"); do
	for mem in host p2p; do
		row "hipri-$mem-4096-32" /dev/p2pnvme0 $mem 4096 32 --hipri=1
		row "hipri-$mem-4096-32" "$NG1" $mem 4096 32 --hipri=1
	done
done
insn_cal
clock_mark end
suite_end; exit $_any_failed
