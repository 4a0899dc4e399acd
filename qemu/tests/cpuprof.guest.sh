#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Where p2pnvme's CPU per I/O goes against nvme-pci's (scripts/cpu-profile.sh
# reads the P2P-PROF lines): fio's t/io_uring with the kernel's passthrough
# command (-u1), 4 KiB random reads at QD32, into host memory (-B0) and
# io_uring's registered buffers (-B1), 32 commands per io_uring_enter()
# (the drivers' own work shows: the doorbell trap is shared by the batch)
# and 1 (fio's default), on /dev/p2pnvme0 and on nvme-pci's /dev/ngXnY of
# an identical controller, in interleaved passes. Each line: the guest's
# busy time over the run (all CPUs, /proc/stat), QEMU's CPU time on the
# host (qemu/hostd.py cputime) and t/io_uring's IOPS per second. With
# p2pperf=1 and a perf binary in the guest, one more run of each driver
# at 32 per enter under `perf record -a -g` and the top of its
# report, self and with children (under TCG a sample lands at the start
# of the next translated block: self times are approximate); and fio's
# fixed-buffer and registered dma-buf rows of the benchmark
# (scripts/fio-benchmark.sh) on each, their samples by program and object
# and fio's by symbol.
. /tests/lib.sh
expect_suites guest.cpuprof

SECS=${p2pbenchsecs:-3}
PASSES=${p2pbenchpasses:-3}
ENG=/usr/lib/fio/p2pnvme-reg.so

bench_pair cpuprof
if ! command -v t-io_uring >/dev/null; then
	skip "t/io_uring" "not built (qemu/extools.sh)"
	suite_end
	exit $_any_failed
fi
clock_mark start

tiou() {	# tiou DEV B BATCH SECS
	t-io_uring -u1 -n1 -b4096 -d32 -s"$3" -c"$3" -p0 -F0 -B"$2" -R1 -X1 -O0 -r"$4" "$1"
}
# warm up (TCG translates code on first use), results discarded
for d in /dev/p2pnvme0 "$NG1"; do
	tiou "$d" 1 32 1 >/dev/null 2>&1
done
for pass in $(seq "$PASSES"); do
	for b in 0 1; do
		for s in 32 1; do
			for d in /dev/p2pnvme0 "$NG1"; do
				_h0=$(host_cpu)
				_b0=$(busy)
				tiou "$d" $b $s "$SECS" >/tmp/tiou.out 2>&1
				_rc=$?
				_b1=$(busy)
				_h1=$(host_cpu)
				_iops=$(sed -n 's/^IOPS=\([0-9]*\),.*/\1/p' /tmp/tiou.out | tr '\n' ',' | sed 's/,$//')
				echo "P2P-PROF {\"dev\":\"$d\",\"fixed\":$b,\"batch\":$s,\"busy\":$((_b1 - _b0)),\"host\":$(host_delta "$_h0" "$_h1"),\"secs\":$SECS,\"iops\":[$_iops]}"
				check_eq "t/io_uring -B$b -s$s on $d" "$_rc $([ -n "$_iops" ] && echo ran)" "0 ran"
			done
		done
	done
done
if [ "${p2pperf:-0}" = 1 ]; then
	if command -v perf >/dev/null; then
		echo 0 > /proc/sys/kernel/kptr_restrict
		echo -1 > /proc/sys/kernel/perf_event_paranoid
		for d in /dev/p2pnvme0 "$NG1"; do
			perf record -q -a -g -e cpu-clock -o /tmp/perf.data -- \
				t-io_uring -u1 -n1 -b4096 -d32 -s32 -c32 -p0 -F0 -B1 -R1 -X1 -O0 \
				-r"$SECS" "$d" >/tmp/tiou.out 2>&1
			check_eq "perf record of t/io_uring -B1 -s32 on $d" "$?" 0
			for mode in --no-children --children; do
				perf report -i /tmp/perf.data $mode --sort sym --stdio -g none 2>/dev/null |
					grep -v '^#' | grep -v '^$' | head -n 40 |
					sed "s|^|P2P-PERF $d ${mode#--} |"
			done
		done
		# fio's rows of the benchmark (fiobench's 4 KiB QD32), one command
		# per io_uring_enter() as fio sends them: io_uring's registered
		# host buffers (fixed) on both; and the registered dma-buf row
		# (reg): p2pnvme through the suite's external engine, nvme-pci
		# mapping the same p2pmem per I/O. The busy samples by program
		# and object, then by symbol, self and with children, so that the
		# drivers' own share of fio's CPU per I/O shows beside the trap's
		if command -v fio >/dev/null; then
			for row in fixed reg; do
				if [ $row = reg ] && [ ! -e "$ENG" ]; then
					skip "perf of fio's registered dma-buf row" "no external engine $ENG in the guest"
					continue
				fi
				for d in /dev/p2pnvme0 "$NG1"; do
					set -- --ioengine=io_uring_cmd --cmd_type=nvme --fixedbufs=1
					if [ $row = reg ]; then
						set -- --ioengine=io_uring_cmd --cmd_type=nvme \
							--iomem=mmapshared:/dev/p2pbar0
						[ "$d" = /dev/p2pnvme0 ] && set -- --ioengine=external:"$ENG"
					fi
					perf record -q -a -g -e cpu-clock -o /tmp/perf.data -- \
						fio --name=r --filename="$d" "$@" --rw=randread --bs=4k \
						--iodepth=32 --size=48M --norandommap --randrepeat=0 \
						--time_based --runtime="$SECS" >/tmp/fio.out 2>&1
					check_eq "perf record of fio's $row row on $d" "$?" 0
					echo "P2P-PERF fio-$row $d iops $(grep -o 'IOPS=[^,]*' /tmp/fio.out | head -n 1)"
					perf report -i /tmp/perf.data --no-children --sort comm,dso --stdio \
						-g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 12 |
						sed "s|^|P2P-PERF fio-$row $d dso |"
					for mode in --no-children --children; do
						perf report -i /tmp/perf.data $mode --comm fio --sort sym \
							--stdio -g none 2>/dev/null | grep -v '^#' |
							grep -v '^$' | head -n 40 |
							sed "s|^|P2P-PERF fio-$row $d ${mode#--} |"
					done
				done
			done
		else
			skip "perf of fio's rows" "no fio in the guest"
		fi
	else
		skip "perf" "no perf binary in the guest (scripts/cpu-profile.sh --perf copies the host's)"
	fi
fi
clock_mark end
suite_end; exit $_any_failed
