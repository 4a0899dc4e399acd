#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The NVMe client: p2pnvme takes over the NVMe controllers and moves data
# between their namespaces and p2pmem of the ivshmem BAR (or host memory).
# The host checks the BAR backing file, the image files and QEMU's own
# trace of the controller's DMA addresses at each step.
. /tests/lib.sh

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)
NVME1=$(find_pci 1b36 0010 2)
N=/dev/p2pnvme0
NCPU=$(grep -c ^processor /proc/cpuinfo)
STATS=/sys/class/p2pnvme/p2pnvme0/stats
js() { echo "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

# QEMU's trace shows the controller's DMA addresses: bus addresses inside
# the BAR, unless an IOMMU turns them into IOVAs (the bytes in the BAR's
# backing file are checked either way). dma_in_bar io: of I/O commands only.
dma_in_bar() {
	[ $want_path = p2p ] || return 0
	if [ -n "$(ls /sys/class/iommu 2>/dev/null)" ]; then
		skip "controller DMA addresses inside the BAR" "IOMMU on: they are IOVAs"
	else
		hostcheck dma-in 0x4000000 "$BUS" "$@"
	fi
}

# On a refused topology the default policy bounces through host memory.
want_path=p2p
[ "$p2pexpect" = refused ] && want_path=bounce

# Every suite this test prints: its own, its test programs' (between the
# markers below) and the KUnit suite it loads where the provider test does
# not run; those of the P2P data paths only where the topology allows P2P.
suites="guest.client_setup guest.client_io guest.client_batch guest.client_stress"
suites="$suites guest.client_pci_reset guest.client_cpu_hotplug guest.client_policy"
suites="$suites guest.client_health guest.client_counters guest.client_admin guest.client_trace"
suites="$suites guest.client_badinput guest.client_reuse guest.client_uring_std"
suites="$suites guest.client_std_p2pmem guest.client_dmabuf guest.client_tools guest.client_fio"
suites="$suites guest.client_teardown guest.client_stuck_unbind guest.client_stuck_unbind_admin"
suites="$suites guest.client_polled guest.client_coalesce"
case "$p2pprofile" in iommu | swiotlb) suites="$suites kunit.p2pbar_dmabuf" ;; esac
if [ "$p2pexpect" != refused ]; then
	suites="$suites guest.client_uring guest.client_reg guest.client_reg_bounce_cap"
	suites="$suites guest.client_dmabuf_api guest.client_dmabuf_after guest.client_reg_revoke"
	suites="$suites guest.client_reg_revoke_after guest.client_uring_unbind"
	suites="$suites guest.client_reg_unbind guest.client_uring_iopoll guest.client_polled_iopoll"
fi
[ -n "$NVME1" ] && suites="$suites guest.client_copy"
expect_suites $suites

suite_begin client_setup
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
# the exporter's importer matrix where the provider test does not run:
# through an IOMMU, and with swiotlb=force
case "$p2pprofile" in iommu|swiotlb)
	check "p2pbar_dmabuf_kunit runs ($p2pprofile)" load p2pbar_dmabuf_kunit "expect=$p2pexpect"
	check "kunit.p2pbar_dmabuf: its results in debugfs" kunit_ran p2pbar_dmabuf
	check "p2pbar still bound after it" test -c /dev/p2pbar0 ;;
esac
check "p2pnvme refuses max_io_queues=0 (EINVAL, said in the log)" param_refused p2pnvme max_io_queues=0
check "p2pnvme refuses io_queue_depth=8 (EINVAL, said in the log)" param_refused p2pnvme io_queue_depth=8
check "p2pnvme loads" load p2pnvme
P=/sys/module/p2pnvme/parameters
check "io_timeout_ms refuses 0 (EINVAL)" fails_with "Invalid argument" sh -c "echo 0 > $P/io_timeout_ms"
check_eq "and keeps its value" "$(cat $P/io_timeout_ms)" 5000
check "p2pnvme takes over $NVME from nvme" bind p2pnvme "$NVME"
check "/dev/p2pnvme0 exists" test -c $N
info=$(p2pctl --json nvme-info)
diag "$info"
# the defaults: a queue per CPU, 1024 entries (QEMU's MQES allows 2048)
check_eq "one I/O queue per CPU, 1023 commands each" \
	"$(js io_queues "$info") $(js queue_depth "$info")" "$NCPU 1023"
if [ "$(js polled "$info")" = false ]; then
	# each queue's interrupt is managed and spread: a CPU of its own each
	aff=$(for i in $(awk -v d="p2pnvme:$NVME:" 'index($0, d) { sub(":", "", $1); print $1 }' \
		/proc/interrupts); do cat /proc/irq/$i/effective_affinity_list; done | sort -u | wc -l)
	check_eq "the queues' MSI-X vectors are spread over the $NCPU CPUs" "$aff" "$NCPU"
fi
# the rest of the test runs at 64 entries, to fill and wrap the rings
check "unbind and rmmod" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind && rmmod p2pnvme"
check "p2pnvme loads with io_queue_depth=64" load p2pnvme io_queue_depth=64
check "p2pnvme takes $NVME again" bind p2pnvme "$NVME"
info=$(p2pctl --json nvme-info)
check_eq "$NCPU I/O queues of 63 commands" "$(js io_queues "$info") $(js queue_depth "$info")" \
	"$NCPU 63"
check_eq "namespace is 64 MiB of 512-byte LBAs" "$(js nlb "$info") $(js lba_size "$info")" "131072 512"
BUS=$(p2pctl --json info | sed -n 's/.*"bus_addr":\([0-9]*\).*/\1/p')
suite_end

suite_begin client_io
hostcheck dma-mark
held p2pctl --json nvme-read $N 2048 262144; out=$held_out
hostcheck equal 262144 "bar0@$(js bar_offset "$out")" nvme0@0x100000
released; check_eq "read 256 KiB at 1 MiB into p2pmem" "$?" 0
check_eq "read path is $want_path" "$(js path "$out")" "$want_path"
dma_in_bar

hostcheck dma-mark
out=$(p2pctl --json nvme-write $N 16384 131072 0x77)
check_eq "write 128 KiB at 8 MiB from p2pmem" "$?" 0
check_eq "write path is $want_path" "$(js path "$out")" "$want_path"
hostcheck fill 131072 nvme0@0x800000 0x77
dma_in_bar

# PRPs and SGLs, an odd size at an odd buffer offset, an MDTS split.
for mode in --prp --sgl; do
	held p2pctl --json nvme-read $N 4097 4608 --offset 512 $mode; out=$held_out
	hostcheck equal 4608 "bar0@$(js bar_offset "$out")" nvme0@$((4097 * 512))
	released; check_eq "read 4608 B (9 LBAs) into p2pmem+512 with ${mode#--}" "$?" 0
	held p2pctl --json nvme-read $N 8192 1052672 $mode; out=$held_out
	hostcheck equal 1052672 "bar0@$(js bar_offset "$out")" nvme0@$((8192 * 512))
	released; check_eq "read 1 MiB + 4 KiB (3 commands by MDTS) with ${mode#--}" "$?" 0
done

# Host memory gets the same bytes as p2pmem did.
h=$(p2pctl --json nvme-read $N 8192 1052672 --host)
check_eq "read into host memory uses the host path" "$(js path "$h")" host
check_same "host memory and p2pmem got the same bytes" "$(js fnv1a "$h")" "$(js fnv1a "$out")"

# Forced bounce moves the right bytes too and is counted.
b0=$(cat $STATS/reads_bounce)
held p2pctl --json nvme-read $N 20480 65536 --bounce; out=$held_out
hostcheck equal 65536 "bar0@$(js bar_offset "$out")" nvme0@$((20480 * 512))
released
check_eq "forced bounce read takes the bounce path" "$(js path "$out")" bounce
check_eq "reads_bounce counted it" "$(cat $STATS/reads_bounce)" $((b0 + 1))
out=$(p2pctl --json nvme-write $N 22528 65536 0x3c --bounce)
check_eq "forced bounce write takes the bounce path" "$(js path "$out")" bounce
hostcheck fill 65536 nvme0@$((22528 * 512)) 0x3c

# Write zeroes and flush.
hostcheck dma-mark
check "Write Zeroes over 64 KiB at 12 MiB" p2pctl nvme-zeroes $N 24576 65536
hostcheck fill 65536 nvme0@0xc00000 0
check "Flush" p2pctl nvme-flush $N
hostcheck dma-none
suite_end

# on_cpu K: this shell and what it starts run on CPU K only; on_cpu: any
on_cpu() {
	if [ -n "$1" ]; then _m=$((1 << $1)); else _m=$(((1 << NCPU) - 1)); fi
	taskset -p "$(printf %x $_m)" $$ >/dev/null
}
# irqs_on K: interrupts of this controller's I/O queues CPU K took so far
irqs_on() {
	awk -v d="p2pnvme:$NVME:" -v k=$(($1 + 2)) 'index($0, d) { n += $k } END { print n + 0 }' \
		/proc/interrupts
}

# Many commands in flight: on each CPU in turn, one P2PNVME_IOC_SUBMIT of
# 64 requests, each split by nothing, all on that CPU's I/O queue, and
# completed by interrupts on that CPU (with MSI-X).
suite_begin client_batch
Q=/sys/kernel/debug/p2pnvme/$NVME/queues
hostcheck dma-mark
cpu=0
while [ $cpu -lt $NCPU ]; do
	on_cpu $cpu
	before=$(for k in $(seq 0 $((NCPU - 1))); do irqs_on $k; done | tr '\n' ' ')
	held p2pctl --json nvme-read $N 32768 4194304 --batch 64; out=$held_out
	hostcheck equal 4194304 "bar0@$(js bar_offset "$out")" nvme0@0x1000000
	released; check_eq "CPU $cpu: one batch of 64 reads of 64 KiB at 16 MiB" "$?" 0
	check_eq "path is $want_path" "$(js path "$out")" "$want_path"
	after=$(for k in $(seq 0 $((NCPU - 1))); do irqs_on $k; done | tr '\n' ' ')
	diag "CPU $cpu: queue interrupts per CPU before: $before after: $after"
	if [ "$(js polled "$info")" = false ]; then
		other=$(echo "$before|$after" | awk -F'|' -v c=$cpu '{ split($1, b, " ");
			split($2, a, " "); for (k in a) if (k - 1 != c && a[k] != b[k]) n++;
			print n + 0 }')
		check "CPU $cpu: its completions interrupted CPU $cpu" \
			[ "$(irqs_on $cpu)" -gt "$(echo $before | cut -d' ' -f$((cpu + 1)))" ]
		check_eq "CPU $cpu: no other CPU took an interrupt for them" "$other" 0
	fi
	cpu=$((cpu + 1))
done
on_cpu
dma_in_bar
# the device's view: QEMU's trace of commands fetched and completed
hostcheck dma-inflight 8 "$(js io_queues "$info")"
diag "queues: $(tr '\n' ';' < $Q)"
busy=$(awk '$1 ~ /^[0-9]+$/ && $1 > 0 && $8 > 1' $Q | wc -l)
check_eq "every I/O queue had more than one command in flight" "$busy" "$(js io_queues "$info")"
out=$(p2pctl --json nvme-write $N 40960 2097152 0x5a --batch 32 --prp)
check_eq "one batch of 32 PRP writes of 64 KiB at 20 MiB" "$?" 0
hostcheck fill 2097152 nvme0@0x1400000 0x5a
held p2pctl --json nvme-read $N 4100 1105920 --batch 3 --offset 2048; out=$held_out
hostcheck equal 1105920 "bar0@$(js bar_offset "$out")" nvme0@$((4100 * 512))
released; check_eq "3 reads of 360 KiB at a 2 KiB offset (odd PRP/SGL boundaries)" "$?" 0
suite_end

# More than a queue holds. On each CPU in turn, one batch of 256 reads on
# that CPU's queue of 63 slots: the submitter rings, waits for slots and
# reuses them (new command ids) while the ring wraps; every byte must still
# land. Then 4 threads keep batches of 64 reads going at once: nothing fails.
suite_begin client_stress
cpu=0
while [ $cpu -lt $NCPU ]; do
	on_cpu $cpu
	held p2pctl --json nvme-read $N 0 16777216 --batch 256; out=$held_out
	hostcheck equal 16777216 "bar0@$(js bar_offset "$out")" nvme0@0
	released
	check_eq "CPU $cpu: one batch of 256 reads of 64 KiB, four times what its queue holds" "$?" 0
	cpu=$((cpu + 1))
done
on_cpu
full=$(awk '$1 ~ /^[0-9]+$/ && $1 > 0 && $8 == $2 - 1' $Q | wc -l)
check_eq "every I/O queue was full ($(js queue_depth "$info") in flight)" "$full" "$(js io_queues "$info")"
out=$(p2pbench engine $N 65536 2 --threads 4 --qd 64)
check_eq "4 threads x batches of 64 reads of 64 KiB for 2 s" "$?" 0
diag "$out"
suite_end

# A reset of the PCI function behind the driver's back (an FLR through
# sysfs; a sibling's bus reset does the same) while batches of reads run:
# p2pnvme stops the controller first (.reset_prepare: the I/O queues
# deleted, CC.EN = 0, bus mastering off, what is in flight fails with
# ECANCELED) and enables it
# again after (.reset_done), new transfers waiting meanwhile. Without the
# callbacks the commands the reset swallowed time out (ETIMEDOUT after two
# io_timeout_ms, 5 s here, for each reset), and a reset of the driver's
# own that overlaps the function's finds the registers off and leaves the
# controller dead.
suite_begin client_pci_reset
R=/sys/bus/pci/devices/$NVME/reset
K=5
pcireset_back() { dmesg | grep -c "p2pnvme $NVME: controller back in service after a PCI reset"; }
pcireset_failed() { dmesg | grep -c "p2pnvme $NVME: .*\(reset failed\|did not come back\)"; }
if [ ! -e $R ]; then
	skip "PCI resets of $NVME with reads in flight" "the kernel knows no reset method for it"
else
	diag "reset method: $(cat /sys/bus/pci/devices/$NVME/reset_method 2>/dev/null)"
	t0=$(cat $STATS/timeouts); r0=$(cat $STATS/resets); c0=$(cat $STATS/cancelled)
	b0=$(pcireset_back); f0=$(pcireset_failed)
	hostcheck dma-mark
	rm -f /tmp/pcireset.stop /tmp/pcireset.rc /tmp/pcireset.err
	(
		while [ ! -e /tmp/pcireset.stop ]; do
			p2pctl nvme-read $N 0 4194304 --batch 64 >/dev/null 2>>/tmp/pcireset.err
			echo $? >> /tmp/pcireset.rc
		done
	) &
	bg=$!
	sleep 1
	k=0; s0=$(date +%s)
	for i in $(seq $K); do
		echo 1 > $R && k=$((k + 1))
		sleep 0.5
	done
	took=$(($(date +%s) - s0))
	touch /tmp/pcireset.stop
	i=0
	while kill -0 $bg 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	check "the reads stop when asked ($((i / 10)) s)" sh -c "! kill -0 $bg"
	wait $bg
	check_eq "$K PCI resets of $NVME through sysfs, with reads in flight ($took s)" "$k" $K
	nb=$(wc -l < /tmp/pcireset.rc)
	diag "$nb batches of 64 reads, by exit status:" \
		"$(sort /tmp/pcireset.rc | uniq -c | tr -s ' \n' ' ')"
	diag "$(sort -u /tmp/pcireset.err | head -n 4 | tr '\n' ';')"
	diag "commands cancelled: $(($(cat $STATS/cancelled) - c0))"
	check_eq "every batch succeeded or failed with ECANCELED ($nb batches)" \
		"$(grep -cvx '0\|125' /tmp/pcireset.rc)" 0
	check "the reads went on between the resets" [ "$(grep -cx 0 /tmp/pcireset.rc)" -gt 0 ]
	check_eq "nothing timed out" "$(($(cat $STATS/timeouts) - t0))" 0
	check_eq "each PCI reset restarted the controller once (stats/resets)" \
		"$(($(cat $STATS/resets) - r0))" $K
	check_eq "the log says it came back after each" "$(($(pcireset_back) - b0))" $K
	check_eq "no reset failed, nothing went out of service" "$(($(pcireset_failed) - f0))" 0
	check "the controller is live" grep -q '^# live' $Q
	# QEMU's view: every reset deleted the I/O queues before CC.EN = 0
	# (without, QEMU 7.2's nvme segfaulted within 50 to 200 such resets)
	hostcheck queues-deleted $K
	held p2pctl --json nvme-read $N 2048 262144; out=$held_out
	hostcheck equal 262144 "bar0@$(js bar_offset "$out")" nvme0@0x100000
	released; check_eq "a read after the resets moves the image's bytes" "$?" 0
fi
suite_end

# CPU hotplug: CPU 1 goes offline and comes back, five times, while
# batches of reads run on its queue (pinned there when they start). The
# queue's managed interrupt goes down with the CPU: the batches' waiters
# reap what it would have delivered (they poll every 50 ms). Every batch
# that ran completes; nothing times out, nothing is reset.
suite_begin client_cpu_hotplug
C1=/sys/devices/system/cpu/cpu1/online
if [ "$NCPU" -lt 2 ] || [ ! -w $C1 ]; then
	skip "CPU 1 offline and back with reads on its queue" "no second CPU that can go offline"
else
	t0=$(cat $STATS/timeouts); r0=$(cat $STATS/resets)
	rm -f /tmp/hp.stop /tmp/hp.rc /tmp/hp.err
	(
		while [ ! -e /tmp/hp.stop ]; do
			# no status recorded when CPU 1 was offline at the start
			taskset -c 1 sh -c "p2pctl nvme-read $N 0 4194304 --batch 64 >/dev/null 2>>/tmp/hp.err; echo \$? >> /tmp/hp.rc" 2>/dev/null
		done
	) &
	bg=$!
	sleep 1
	k=0
	for i in 1 2 3 4 5; do
		echo 0 > $C1 && sleep 0.5 && echo 1 > $C1 && k=$((k + 1))
		sleep 0.5
	done
	touch /tmp/hp.stop
	i=0
	while kill -0 $bg 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	check "the reads stop when asked ($((i / 10)) s)" sh -c "! kill -0 $bg"
	wait $bg
	check_eq "CPU 1 offline and back 5 times" "$k" 5
	nb=$(wc -l < /tmp/hp.rc)
	diag "$nb batches of 64 reads on CPU 1's queue, by exit status:" \
		"$(sort /tmp/hp.rc | uniq -c | tr -s ' \n' ' ') $(sort -u /tmp/hp.err | head -n 2 | tr '\n' ';')"
	check "batches ran meanwhile" [ "$nb" -gt 2 ]
	check_eq "every batch completed" "$(grep -cvx 0 /tmp/hp.rc)" 0
	check_eq "nothing timed out" "$(($(cat $STATS/timeouts) - t0))" 0
	check_eq "nothing was reset" "$(($(cat $STATS/resets) - r0))" 0
	check_eq "CPU 1 is online again" "$(cat $C1)" 1
	# io_uring commands have no waiter to poll for them. Five times: a fio
	# io_uring_cmd job pinned to each CPU writes 128 KiB commands at QD32
	# (a full queue in flight) while CPU 1 goes offline and back, then
	# the host reads the pattern of that round from the image. CPU 1's
	# queue must be drained while its interrupt still works (as blk-mq
	# drains a hardware context): once CPU 1 is offline nothing may be
	# left in flight on it (debugfs), or it is stranded behind the lost
	# managed interrupt until the watchdog looks (every 500 ms at the
	# default io_timeout_ms).
	q1=$(cpu1_queue "$NVME")
	# p2pnvme took the controller with interrupts (no poll=1), on 2 CPUs:
	# the managed spreading gives CPU 1 a queue's vector of its own
	if ! command -v fio >/dev/null; then
		skip "CPU 1 offline and back under fio's io_uring_cmd jobs" \
			"no fio (it could not be built on the machine that built the guest)"
	elif [ -z "$q1" ]; then
		fail "CPU 1 offline and back under fio's io_uring_cmd jobs: a queue's vector on CPU 1 alone"
		diag "p2pnvme's vectors (irq:CPUs): $(p2pnvme_vectors "$NVME" | tr '\n' ' ')"
	else
		t0=$(cat $STATS/timeouts); r0=$(cat $STATS/resets)
		rm -f /tmp/hp.fio*
		k=0 left=
		for i in 1 2 3 4 5; do
			pat=$(printf '0x%02x' $((0xa0 + i)))
			for cpu in 0 1; do
				# terse v3: field 5 error, 56 write clat max (µs)
				taskset -c $cpu timeout 60 fio --minimal --ioengine=io_uring_cmd --cmd_type=nvme \
					--filename=$N --name=hp$cpu --rw=randwrite --bs=128k --iodepth=32 \
					--offset=$((56 + 2 * cpu))M --size=2M --time_based --runtime=2 \
					--buffer_pattern=$pat --scramble_buffers=0 2>>/tmp/hp.fio.err |
					awk -F';' '{ print $5, $56 }' >>/tmp/hp.fio$cpu &
			done
			sleep 0.7
			if echo 0 > $C1; then
				left="$left $(awk -v q=$q1 '$1 == q { print $7 }' $Q)"
				sleep 0.5 && echo 1 > $C1 && k=$((k + 1))
			fi
			wait
			hostcheck fill 2097152 nvme0@$((56 << 20)) $pat
			hostcheck fill 2097152 nvme0@$((58 << 20)) $pat
		done
		check_eq "CPU 1 offline and back 5 times under fio" "$k" 5
		check_eq "nothing left in flight on CPU 1's queue (q$q1) once CPU 1 was offline" \
			"$left" " 0 0 0 0 0"
		for cpu in 0 1; do
			# TCG under load: latency is for the log, not a check
			diag "CPU $cpu's fio: worst completion $(awk '$2 > m { m = $2 } END { print m + 0 }' /tmp/hp.fio$cpu) µs"
			check_eq "fio on CPU $cpu ran 5 times without an error" \
				"$(awk '$1 == 0' /tmp/hp.fio$cpu | wc -l)" 5
		done
		[ -s /tmp/hp.fio.err ] && diag "$(sort -u /tmp/hp.fio.err | head -n 3)"
		check_eq "nothing timed out under fio" "$(($(cat $STATS/timeouts) - t0))" 0
		check_eq "nothing was reset under fio" "$(($(cat $STATS/resets) - r0))" 0
	fi
	held p2pctl --json nvme-read $N 2048 262144; out=$held_out
	hostcheck equal 262144 "bar0@$(js bar_offset "$out")" nvme0@0x100000
	released; check_eq "a read afterwards moves the image's bytes" "$?" 0
fi
suite_end

suite_begin client_policy
r0=$(cat $STATS/refused)
out=$(p2pctl --json nvme-read $N 30000 65536 --no-bounce)
rc=$?
if [ "$p2pexpect" = refused ]; then
	check_eq "no-bounce read on a refused topology fails with EREMOTEIO" "$rc" 121
	check_eq "refused counted" "$(cat $STATS/refused)" $((r0 + 1))
	hostcheck absent 65536 nvme0@$((30000 * 512)) bar0
	echo 0 > /sys/module/p2pnvme/parameters/bounce
	p2pctl nvme-read $N 30000 65536 >/dev/null 2>&1
	check_eq "bounce=0 policy refuses too" "$?" 121
	echo 1 > /sys/module/p2pnvme/parameters/bounce
else
	check_eq "no-bounce read on a P2P topology works" "$rc" 0
	check_eq "path p2p" "$(js path "$out")" p2p
fi
suite_end

# A drive taken from nvme-pci keeps its health view: Identify and the logs
# through the same passthrough ioctl nvme-cli uses.
suite_begin client_health
id=$(p2pctl nvme-id-ctrl $N -o json)
diag "$id"
# sn, mn, fr padded with spaces, as the controller and nvme-cli's JSON have them
check_eq "nvme-id-ctrl: the serial QEMU was given" "$(js sn "$id" | sed 's/ *$//')" nvme0
check_eq "nvme-id-ctrl: QEMU's model" "$(js mn "$id" | sed 's/ *$//')" "QEMU NVMe Ctrl"
s0=$(p2pctl nvme-smart $N -o json)
p2pctl nvme-read $N 0 4096 >/dev/null && p2pctl nvme-read $N 8 4096 >/dev/null
s1=$(p2pctl nvme-smart $N -o json)
diag "$s1"
check_eq "nvme-smart: host_read_commands counted the two reads" \
	"$(( $(js host_read_commands "$s1") - $(js host_read_commands "$s0") ))" 2
check "nvme-smart: a temperature in kelvin" [ "$(js temperature "$s1")" -gt 200 ]
e=$(p2pctl nvme-error-log $N -o json)
diag "$e"
check "nvme-error-log: the log's entries (elpe + 1)" \
	[ "$(js entries "$e")" = "$(( $(js elpe "$id") + 1 ))" ]
# every command's -o json is one object python parses (on the host),
# errors included
jsoncheck nvme-info device,nsid,lba_size,nlb,max_xfer nvme-info $N
jsoncheck nvme-id-ctrl vid,sn,mn,fr,elpe nvme-id-ctrl $N
jsoncheck nvme-smart critical_warning,temperature,num_err_log_entries nvme-smart $N
jsoncheck nvme-error-log entries,errors nvme-error-log $N
jsoncheck nvme-stats device,reads_p2p,inflight,latency nvme-stats $N
jsoncheck nvme-read bytes,entries,path,bar_offset,sha256 nvme-read $N 2048 65536 --host
jsoncheck nvme-zeroes device,command,result nvme-zeroes $N 24576 65536
jsoncheck nvme-flush device,command,result nvme-flush $N
jsoncheck nvme-info:missing error,errno,step,hint nvme-info /dev/p2pnvme99
suite_end
# Checksums coreutils reproduce: p2pctl's sha256 of the moved bytes is what
# the host computes over the same range of the image.
o=$(p2pctl -o json nvme-read $N 2048 262144 --host)
hostcheck sha256 262144 nvme0@$((2048 * 512)) "$(js sha256 "$o")"
o=$(p2pctl -o json nvme-read $N 4096 131072)
hostcheck sha256 131072 nvme0@$((4096 * 512)) "$(js sha256 "$o")"

# Counters people ask for: latency by direction and path, bytes/s over an
# interval, per-queue depth, and a reset.
suite_begin client_counters
check "stats reset refuses 0 (EINVAL)" fails_with "Invalid argument" sh -c "echo 0 > $STATS/reset"
check "p2pctl nvme-stats --reset" p2pctl nvme-stats $N --reset
z=$(p2pctl nvme-stats $N -o json)
check_eq "after the reset: no reads, no latency samples" \
	"$(js reads_p2p "$z") $(js reads_bounce "$z") $(cat $STATS/latency_read_p2p | cut -d' ' -f1)" "0 0 0"
for i in 1 2 3; do p2pctl nvme-read $N 2048 65536 >/dev/null; done
l=$(cat $STATS/latency_read_$want_path)
diag "latency_read_$want_path: $l"
set -- $l
hsum=0; shift 3; for b in "$@"; do hsum=$((hsum + b)); done
set -- $l
check_eq "three reads: three latency samples on the $want_path path, three in the histogram" "$1 $hsum" "3 3"
check "... mean and maximum make sense" [ "$2" -gt 0 -a "$3" -ge $(($2 / 3)) ]
j=$(p2pctl nvme-stats $N -o json)
check "nvme-stats -o json: latency count 3, per-queue depth for every I/O queue" \
	sh -c "echo '$j' | grep -q '\"$want_path\":{\"count\":3,' && \
	       [ \$(echo '$j' | sed -n 's/.*\"inflight\":\[\([0-9,]*\)\].*/\1/p' | tr ',' '\n' | wc -l) = $(js io_queues "$info") ]"
( t=$(($(date +%s) + 3)); while [ $(date +%s) -lt $t ]; do p2pctl nvme-read $N 0 1048576 --batch 4 >/dev/null; done ) &
bg=$!
sleep 1
r=$(p2pctl nvme-stats $N --interval 1 -o json)
wait $bg
diag "bytes/s $want_path: $(js bytes_per_s_$want_path "$r")"
check "nvme-stats --interval 1: bytes/s while reads run" [ "$(js bytes_per_s_$want_path "$r")" -gt 0 ]
suite_end

echo "<<<KTAP-BEGIN guest.client_admin>>>"
p2pnvme-test --admin $N || _any_failed=1
echo "<<<KTAP-END>>>"

# The drivers explain themselves: each transfer's path and why (p2pnvme
# tracepoints), the p2pmem behind it (p2pbar's), and on kernels with dynamic
# debug the same in the log.
suite_begin client_trace
# tracefs: its own mount on 7.x, also under debugfs before
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T 2>/dev/null
[ -e $T/trace ] || T=/sys/kernel/debug/tracing
check "tracefs is there ($T)" test -e $T/trace
ev() { [ -e "$T/events/$1/enable" ] && echo "$2" > "$T/events/$1/enable"; }
ev p2pnvme/p2pnvme_path 1; ev p2pnvme/p2pnvme_bounce_copy 1; ev p2pbar 1
DD=/proc/dynamic_debug/control
[ -e $DD ] && echo 'module p2pnvme +p; module p2pbar +p' > $DD
[ -e $T/trace ] && : > $T/trace
p2pctl nvme-read $N 2048 65536 >/dev/null
p2pctl nvme-read $N 2048 65536 --bounce >/dev/null
p2pctl nvme-read $N 2048 65536 --no-bounce >/dev/null 2>&1
tr=$(cat $T/trace 2>/dev/null)
ev p2pnvme/p2pnvme_path 0; ev p2pnvme/p2pnvme_bounce_copy 0; ev p2pbar 0
if [ "$p2pexpect" = refused ]; then
	first="path bounce (topology refuses P2P)"; last="path refused (P2P refused, bouncing not allowed)"
else
	first="path p2p (controller reaches the provider)"; last="path p2p (controller reaches the provider)"
fi
tp() {	# tp DESCRIPTION PATTERN: the trace has a line with PATTERN
	if printf '%s\n' "$tr" | grep -qF -- "$2"; then pass "$1"
	else fail "$1"; diag "no '$2' in: $(printf '%s\n' "$tr" | grep -v '^#' | head -n 8 | tr '\n' '|')"; fi
}
tp "p2pnvme_path: the read's path and why" "p2pnvme_path: $NVME read slba 2048 len 65536 $first"
tp "p2pnvme_path: a forced bounce says so" "read slba 2048 len 65536 path bounce (bounce asked for)"
tp "p2pnvme_path: --no-bounce" "read slba 2048 len 65536 $last"
tp "p2pnvme_bounce_copy: the bounced read copied into p2pmem" "p2pnvme_bounce_copy: $NVME 65536 bytes host -> p2pmem"
tp "p2pbar_alloc: the p2pmem of a transfer" "p2pbar_alloc: $IVSHMEM bus"
tp "p2pbar_return: given back zeroed" "size 65536 returned"
if [ -e $DD ]; then
	echo 'module p2pnvme -p; module p2pbar -p' > $DD
	log=$(dmesg | tail -n 200)
	case "$log" in *"read of 65536 bytes at LBA 2048: "*) pass "dynamic debug: p2pnvme says each transfer's path" ;;
	*) fail "dynamic debug: p2pnvme says each transfer's path" ;; esac
	case "$log" in *"allocated 65536 bytes at bus address"*) pass "dynamic debug: p2pbar says what it hands out" ;;
	*) fail "dynamic debug: p2pbar says what it hands out" ;; esac
fi
suite_end

hostcheck dma-mark
echo "<<<KTAP-BEGIN guest.client_badinput>>>"
p2pnvme-test $N || _any_failed=1
echo "<<<KTAP-END>>>"
hostcheck dma-none
echo "<<<KTAP-BEGIN guest.client_reuse>>>"
p2pnvme-test --reuse $N || _any_failed=1
echo "<<<KTAP-END>>>"
# the standard I/O passthrough into a mapping of p2pmem, as fio's
# --iomem=mmapshared:/dev/p2pbar0 gives it
# the kernel's NVMe io_uring passthrough (fio's io_uring_cmd engine sends it)
echo "<<<KTAP-BEGIN guest.client_uring_std>>>"
p2puring-test --std $N || _any_failed=1
echo "<<<KTAP-END>>>"
echo "<<<KTAP-BEGIN guest.client_std_p2pmem>>>"
p2pnvme-test --std-p2pmem $N /dev/p2pbar0 "$p2pexpect" || _any_failed=1
echo "<<<KTAP-END>>>"

# io_uring passthrough: many commands in flight from one thread into
# p2pmem and host memory, writes, the bad-SQE table, a ring torn down with
# commands in flight (the host checks bytes and QEMU's queue depth)
if [ "$p2pexpect" != refused ]; then
	echo "<<<KTAP-BEGIN guest.client_uring>>>"
	p2puring-test $N /dev/p2pbar0 || _any_failed=1
	echo "<<<KTAP-END>>>"
	hostcheck dma-mark	# it read into host memory too
fi

# Registered buffers: host memory and p2pmem exported as a dma-buf, pinned
# and mapped once, named by id in P2PNVME_IOC_IO, P2PNVME_IOC_SUBMIT and
# io_uring commands; the bad-input tables, P2PNVME_BUF_MAX, unregistering
# and closing with commands in flight (it writes LBA 49152..58495)
if [ "$p2pexpect" != refused ]; then
	echo "<<<KTAP-BEGIN guest.client_reg>>>"
	p2preg-test $N /dev/p2pbar0 || _any_failed=1
	echo "<<<KTAP-END>>>"
	# registered host buffers in swiotlb's bounce slots are capped
	echo 4 > /sys/module/p2pnvme/parameters/max_bounced_reg_mb
	echo "<<<KTAP-BEGIN guest.client_reg_bounce_cap>>>"
	P2P_SWIOTLB=$([ "$p2pprofile" = swiotlb ] && echo 1) \
		p2preg-test --bounce-cap $N /dev/p2pbar0 4 || _any_failed=1
	echo 32 > /sys/module/p2pnvme/parameters/max_bounced_reg_mb
	echo "<<<KTAP-END>>>"
	hostcheck dma-mark	# it read into host memory too
fi

# The dma-buf bridge: p2pmem exported by p2pbar, imported by p2pnvme.
suite_begin client_dmabuf
held p2pctl --json nvme-read $N 2048 262144 --dmabuf --offset 65536; out=$held_out
[ "$p2pexpect" = refused ] || hostcheck equal 262144 "bar0@$(js bar_offset "$out")" nvme0@0x100000
released
rc=$?
if [ "$p2pexpect" = refused ]; then
	check_eq "a dma-buf the controller cannot reach: EREMOTEIO, no bounce" "$rc" 121
else
	check_eq "read 256 KiB into p2pmem exported as a dma-buf" "$rc" 0
	check_eq "path dmabuf" "$(js path "$out")" dmabuf
	dma_in_bar
fi
h=$(p2pctl --json nvme-read $N 2048 262144 --host)
u=$(p2pctl --json nvme-read $N 2048 262144 --udmabuf)
rc=$?
if [ "$p2pprofile" = swiotlb ]; then
	# udmabuf maps with DMA_ATTR_SKIP_CPU_SYNC: the bytes would stay in a bounce slot
	check_eq "host memory as a dma-buf under swiotlb: refused (EOPNOTSUPP)" "$rc" 95
else
	check_eq "host memory as a dma-buf (udmabuf): path dmabuf-host" "$(js path "$u")" dmabuf-host
	check_same "it got the bytes a host read gets" "$(js fnv1a "$u")" "$(js fnv1a "$h")"
fi
suite_end

if [ "$p2pexpect" != refused ]; then
	echo "<<<KTAP-BEGIN guest.client_dmabuf_api>>>"
	P2P_SWIOTLB=$([ "$p2pprofile" = swiotlb ] && echo 1) \
		p2pdmabuf-test /dev/p2pbar0 $N "$IVSHMEM" || _any_failed=1
	echo "<<<KTAP-END>>>"
	suite_begin client_dmabuf_after
	hostcheck equal 262144 nvme0@$((61440 * 512)) nvme0@0x100000
	check "p2pbar binds to ivshmem again after the revoke" bind p2pbar "$IVSHMEM"
	check "/dev/p2pbar0 is back" test -c /dev/p2pbar0
	suite_end
	# a registered dma-buf whose exporter goes: p2pbar unbound while reads
	# into it are in flight; it leaves p2pbar unbound
	echo "<<<KTAP-BEGIN guest.client_reg_revoke>>>"
	P2P_SWIOTLB=$([ "$p2pprofile" = swiotlb ] && echo 1) \
		p2preg-test --revoke $N /dev/p2pbar0 "$IVSHMEM" || _any_failed=1
	echo "<<<KTAP-END>>>"
	suite_begin client_reg_revoke_after
	check "p2pbar binds to ivshmem again after the registered revoke" bind p2pbar "$IVSHMEM"
	check "/dev/p2pbar0 is back" test -c /dev/p2pbar0
	suite_end
fi

# Tools the suite does not own (Debian's nvme-cli and smartmontools, as an
# operator runs them): against /dev/p2pnvme0 and, for the same answers,
# against nvme-pci's device of the identical second controller.
suite_begin client_tools
has() { printf '%s\n' "$1" | grep -q -- "$2"; }
# nvme-cli's JSON as key=value lines, objects' names (a device's) left out
norm() { sed -n 's/^ *"\([A-Za-z_0-9]*\)" *: *\(.*[^,]\),\{0,1\}$/\1=\2/p' | grep -v '=[{[]$'; }
pci_ctrl=$(ls /sys/bus/pci/devices/"$NVME1"/nvme 2>/dev/null | head -n 1)
pci_ns=$(ls /dev/ng"${pci_ctrl#nvme}"n1 2>/dev/null)
if ! command -v nvme >/dev/null || ! command -v smartctl >/dev/null; then
	skip "nvme-cli and smartctl against $N" "they were not on the machine that built the guest"
elif [ -z "$pci_ctrl" ] || [ -z "$pci_ns" ]; then
	skip "nvme-cli and smartctl against $N" "no second controller under nvme-pci to compare with"
else
	diag "$(nvme version 2>&1 | head -n 1); nvme-pci: /dev/$pci_ctrl, $pci_ns"
	# the serial number and what QEMU derives from it differ, nothing else
	ours=$(nvme id-ctrl $N -o json | norm | grep -v '^\(sn\|subnqn\)=')
	theirs=$(nvme id-ctrl /dev/$pci_ctrl -o json | norm | grep -v '^\(sn\|subnqn\)=')
	diag "id-ctrl: $(echo "$ours" | wc -l) fields; differing: $(echo "$ours" > /tmp/a; echo "$theirs" > /tmp/b; diff /tmp/a /tmp/b | grep '^[<>]' | tr '\n' ' ')"
	check "nvme id-ctrl $N -o json" [ "$(echo "$ours" | wc -l)" -gt 20 ]
	check_same "... field by field the answer of nvme-pci's /dev/$pci_ctrl (but the serial)" "$ours" "$theirs"
	check_eq "nvme id-ctrl: the serial is the one sysfs shows" \
		"$(nvme id-ctrl $N -o json | norm | sed -n 's/^sn="\(.*\)"$/\1/p' | sed 's/ *$//')" \
		"$(cat /sys/class/p2pnvme/p2pnvme0/serial)"
	# without -n: NVME_IOCTL_ID names the namespace
	ours=$(nvme id-ns $N -o json | norm | grep -v '^\(nguid\|eui64\)=')
	theirs=$(nvme id-ns $pci_ns -o json | norm | grep -v '^\(nguid\|eui64\)=')
	check "nvme id-ns $N without -n (NVME_IOCTL_ID)" [ "$(echo "$ours" | wc -l)" -gt 10 ]
	check_same "... field by field nvme-pci's $pci_ns (but the unique ids)" "$ours" "$theirs"
	for f in critical_warning avail_spare spare_thresh percent_used; do
		check_same "nvme smart-log: $f as nvme-pci's" \
			"$(nvme smart-log $N -o json | norm | grep "^$f=")" \
			"$(nvme smart-log /dev/$pci_ctrl -o json | norm | grep "^$f=")"
	done
	check "nvme error-log $N" sh -c "nvme error-log $N -o json >/dev/null"
	# where p2pctl uses nvme-cli's field names, it has nvme-cli's values
	# (error-log's entries cannot be compared: QEMU logs none)
	p2pnorm() { sed 's/^{//; s/}$//; s/,"/\n"/g' | sed -n 's/^"\([a-z_0-9]*\)":\(.*\)$/\1=\2/p'; }
	notin() { echo "$1" | while read -r l; do echo "$2" | grep -qxF -- "$l" || echo "$l"; done | tr '\n' ' '; }
	# (no field from p2pctl is not "no field missing")
	mine=$(p2pctl nvme-id-ctrl $N -o json | p2pnorm)
	missing=$(notin "$mine" "$(nvme id-ctrl $N -o json | norm)")
	[ -n "$mine" ] || missing="(p2pctl printed no field)"
	check_eq "p2pctl nvme-id-ctrl -o json: its $(echo "$mine" | wc -l) fields as nvme id-ctrl -o json has them" \
		"$missing" ""
	mine=$(p2pctl nvme-smart $N -o json | p2pnorm | grep -E '^(critical_warning|temperature|avail_spare|spare_thresh|percent_used)=')
	missing=$(notin "$mine" "$(nvme smart-log $N -o json | norm)")
	[ -n "$mine" ] || missing="(p2pctl printed no field)"
	check_eq "p2pctl nvme-smart -o json: the 1- and 2-byte fields as nvme smart-log -o json has them" \
		"$missing" ""
	# fw-log's keys are phrases ("Active Firmware Slot (afi)", "Firmware Rev
	# Slot 1") under the device's name, which differs: those, not norm's
	fwnorm() { sed -n 's/^ *"\([^"]*\)" *: *\(.*[^,]\),\{0,1\}$/\1=\2/p' | grep -v '=[{[]$'; }
	check_same "nvme fw-log $N as nvme-pci's" "$(nvme fw-log $N -o json | fwnorm)" \
		"$(nvme fw-log /dev/$pci_ctrl -o json | fwnorm)"
	check "nvme get-feature -f 7 (number of queues) $N" sh -c "nvme get-feature $N -f 7 >/dev/null"
	out=$(smartctl -a -d nvme $N 2>&1); rc=$?
	diag "smartctl exit $rc: $(echo "$out" | grep -m1 'overall-health')"
	check_eq "smartctl -a -d nvme $N: no command line or device open error" "$((rc & 3))" 0
	check "... SMART overall-health PASSED" has "$out" 'overall-health self-assessment test result: PASSED'
	check_same "... the model and firmware smartctl sees on nvme-pci's controller" \
		"$(echo "$out" | grep -E '^(Model Number|Firmware Version):')" \
		"$(smartctl -i -d nvme /dev/$pci_ctrl | grep -E '^(Model Number|Firmware Version):')"
	# I/O through the standard passthrough (NVME_IOCTL_IO_CMD), host memory
	nvme io-passthru $N -o 2 -n 1 -4 2048 -6 7 -l 4096 -r -b > /tmp/pt.bin 2>/tmp/pt.err
	check_eq "nvme io-passthru: a Read of 8 LBAs at 2048" "$?:$(wc -c < /tmp/pt.bin)" "0:4096"
	hostcheck sha256 4096 nvme0@$((2048 * 512)) "$(sha256sum /tmp/pt.bin | cut -d' ' -f1)"
	# nvme-cli opens read-only: root writes through it, as on nvme-pci
	dd if=/dev/urandom of=/tmp/pt.in bs=4096 count=1 2>/dev/null
	nvme io-passthru $N -o 1 -n 1 -4 50000 -6 7 -l 4096 -w -i /tmp/pt.in >/dev/null 2>>/tmp/pt.err
	check_eq "nvme io-passthru: a Write of 8 random LBAs at 50000" "$?" 0
	hostcheck sha256 4096 nvme0@$((50000 * 512)) "$(sha256sum /tmp/pt.in | cut -d' ' -f1)"
	check "nvme write-zeroes over them" sh -c "nvme write-zeroes $N -n 1 -s 50000 -c 7 >/dev/null"
	hostcheck fill 4096 nvme0@$((50000 * 512)) 0x00
	check "nvme flush" sh -c "nvme flush $N -n 1 >/dev/null"
	nvme io-passthru $N -o 9 -n 1 -l 0 >/dev/null 2>&1
	check "nvme io-passthru: Dataset Management is not sent" [ $? -ne 0 ]
	nvme io-passthru $N -o 2 -n 2 -4 0 -6 0 -l 512 -r -b >/dev/null 2>&1
	check "nvme io-passthru: another namespace is refused" [ $? -ne 0 ]
	diag "$(sort -u /tmp/pt.err | head -n 3 | tr '\n' ';')"
fi
suite_end

# fio (built from Debian's source package without SysV IPC, which the bench
# kernels lack: its jobs run as threads) and liburing's passthrough test, as
# a storage engineer runs them: fio's io_uring_cmd engine on /dev/p2pnvme0,
# with buffers in host memory and in p2pmem (--iomem=mmapshared:/dev/p2pbar0,
# an mmap that allocates); the bytes checked on the host, the same jobs on
# nvme-pci's /dev/ngXnY, and p2pbar as the memory of nvme-pci's O_DIRECT.
suite_begin client_fio
cnt() { cat "$STATS/$1"; }
# a hung job fails its test instead of the boot's timeout; 48 MiB .. 54 MiB
# of the 64 MiB namespace are fio's
FIO="timeout 120 fio --minimal --ioengine=io_uring_cmd --cmd_type=nvme --bs=4k --iodepth=16"
VJOB="--name=v --rw=randwrite --size=2M --offset=48M --verify=crc32c --verify_fatal=1 --randseed=7"
if ! command -v fio >/dev/null; then
	skip "fio against $N" "it could not be built on the machine that built the guest"
else
	diag "$(fio --version)"
	before="$(cnt writes_host) $(cnt reads_host)"
	$FIO --filename=$N $VJOB >/tmp/fio.out 2>&1
	check_eq "fio io_uring_cmd: random writes then reads, crc32c verified, host memory" "$?" 0
	set -- $before
	check_eq "... 512 writes and 512 reads counted (host memory)" \
		"$(($(cnt writes_host) - $1)) $(($(cnt reads_host) - $2))" "512 512"
	# an IORING_SETUP_IOPOLL ring (fio's hipri) on the interrupt-driven queues
	before=$(cnt reads_host)
	$FIO --filename=$N $VJOB --verify_only=1 --hipri=1 >/tmp/fio.out 2>&1
	check_eq "fio io_uring_cmd --hipri (IOPOLL ring): the verify pass again" "$?" 0
	check_eq "... 512 reads counted" "$(($(cnt reads_host) - before))" 512
	# io_uring's registered buffers (IORING_URING_CMD_FIXED), and iovecs
	# (NVME_URING_CMD_IO_VEC)
	$FIO --filename=$N $VJOB --verify_only=1 --fixedbufs=1 >/tmp/fio.out 2>&1
	check_eq "fio io_uring_cmd --fixedbufs (registered buffers): the verify pass" "$?" 0
	$FIO --filename=$N $VJOB --verify_only=1 --nonvectored=0 >/tmp/fio.out 2>&1
	check_eq "fio io_uring_cmd --nonvectored=0 (NVME_URING_CMD_IO_VEC): the verify pass" "$?" 0
	$FIO --filename=$N --name=p --rw=write --size=1M --offset=52M --buffer_pattern=0x5a \
		--scramble_buffers=0 >/tmp/fio.out 2>&1
	check_eq "fio io_uring_cmd: 1 MiB of 0x5a written" "$?" 0
	hostcheck fill 1048576 nvme0@$((52 << 20)) 0x5a
	# into p2pmem: the verify pass again, reading into the BAR
	if [ "$want_path" = p2p ]; then
		before=$(cnt reads_p2p)
		hostcheck dma-mark
		$FIO --filename=$N $VJOB --verify_only=1 --iomem=mmapshared:/dev/p2pbar0 >/tmp/fio.out 2>&1
		check_eq "fio io_uring_cmd --iomem=mmapshared:/dev/p2pbar0: the verify pass, read into p2pmem" "$?" 0
		check_eq "... 512 reads counted P2P" "$(($(cnt reads_p2p) - before))" 512
		dma_in_bar io
		before=$(cnt writes_p2p)
		hostcheck dma-mark
		$FIO --filename=$N --name=p --rw=write --size=1M --offset=53M --buffer_pattern=0xc3 \
			--scramble_buffers=0 --iomem=mmapshared:/dev/p2pbar0 >/tmp/fio.out 2>&1
		check_eq "fio io_uring_cmd: 1 MiB of 0xc3 written from p2pmem" "$?" 0
		check_eq "... 256 writes counted P2P" "$(($(cnt writes_p2p) - before))" 256
		dma_in_bar io
		hostcheck fill 1048576 nvme0@$((53 << 20)) 0xc3
	else
		# the topology refuses: no silent bounce for a standard client
		$FIO --filename=$N $VJOB --verify_only=1 --iomem=mmapshared:/dev/p2pbar0 >/tmp/fio.out 2>&1
		check "fio into p2pmem the topology refuses: an error" [ $? -ne 0 ]
		check "... Remote I/O error (EREMOTEIO)" grep -q "Remote I/O error" /tmp/fio.out
		echo 1 > /sys/class/p2pnvme/p2pnvme0/passthru_bounce
		before=$(cnt reads_bounce)
		$FIO --filename=$N $VJOB --verify_only=1 --iomem=mmapshared:/dev/p2pbar0 >/tmp/fio.out 2>&1
		check_eq "... with passthru_bounce 1: verified" "$?" 0
		check_eq "... 512 reads counted bounced" "$(($(cnt reads_bounce) - before))" 512
		echo 0 > /sys/class/p2pnvme/p2pnvme0/passthru_bounce
	fi
	diag "$(tail -n 2 /tmp/fio.out | cut -c1-160)"
	if [ -n "$pci_ns" ]; then
		$FIO --filename=$pci_ns $VJOB >/tmp/fio.out 2>&1
		check_eq "the same fio job on nvme-pci's $pci_ns" "$?" 0
		blk=/dev/${pci_ctrl}n1
		if [ "$want_path" = p2p ]; then
			hostcheck dma-mark
			timeout 120 fio --minimal --name=b --filename=$blk --ioengine=io_uring --direct=1 --bs=64k \
				--iodepth=8 --rw=randwrite --offset=48M --size=4M --verify=crc32c --verify_fatal=1 \
				--iomem=mmapshared:/dev/p2pbar0 >/tmp/fio.out 2>&1
			check_eq "fio io_uring O_DIRECT on nvme-pci's $blk with p2pmem buffers, verified" "$?" 0
			dma_in_bar
		fi
	fi
fi
# The suite's external fio engine (tools/fio/p2pnvme-reg.c): fio's buffers
# are a p2pmem dma-buf, mapped into fio and registered once, and every
# command names it (the registered path fio's own engines cannot reach);
# 60 MiB .. 63 MiB. The bytes are checked by fio's verify through the
# mapping, again by fio's own io_uring_cmd engine into host memory, and on
# the host's image.
ENG=/usr/lib/fio/p2pnvme-reg.so
RJOB="--name=r --rw=randwrite --size=2M --offset=60M --verify=crc32c --verify_fatal=1 --randseed=11"
if ! command -v fio >/dev/null || [ ! -e $ENG ]; then
	skip "fio's external engine p2pnvme_reg against $N" \
		"no fio or its headers (qemu/extools.sh could not build them on the machine that built the guest)"
else
	REG="timeout 120 fio --minimal --ioengine=external:$ENG --filename=$N --bs=4k --iodepth=16"
	if [ "$want_path" = p2p ]; then
		before="$(cnt writes_dmabuf) $(cnt reads_dmabuf)"
		hostcheck dma-mark
		$REG $RJOB >/tmp/fio.out 2>&1
		check_eq "fio p2pnvme_reg: random writes then reads, a registered p2pmem dma-buf, crc32c verified" "$?" 0
		set -- $before
		check_eq "... 512 writes and 512 reads counted dmabuf" \
			"$(($(cnt writes_dmabuf) - $1)) $(($(cnt reads_dmabuf) - $2))" "512 512"
		dma_in_bar io
		$FIO --filename=$N $RJOB --verify_only=1 >/tmp/fio.out 2>&1
		check_eq "... fio's io_uring_cmd engine reads them back into host memory: verified" "$?" 0
		$REG --name=p --rw=write --size=1M --offset=62M --buffer_pattern=0x6b \
			--scramble_buffers=0 --require_p2p=1 >/tmp/fio.out 2>&1
		check_eq "fio p2pnvme_reg --require_p2p=1: 1 MiB of 0x6b written from p2pmem" "$?" 0
		hostcheck fill 1048576 nvme0@$((62 << 20)) 0x6b
		$REG --name=t --rw=randtrim --size=64k --offset=62M >/tmp/fio.out 2>&1
		check "fio p2pnvme_reg: trim is refused" [ $? -ne 0 ]
		check "... Operation not supported" grep -q "Operation not supported" /tmp/fio.out
		$REG $RJOB --verify_only=1 --mem=malloc >/tmp/fio.out 2>&1
		check "fio p2pnvme_reg: --mem= is refused (the engine owns the buffers)" [ $? -ne 0 ]
		$REG $RJOB --verify_only=1 --p2pbar=/dev/p2pbar9 >/tmp/fio.out 2>&1
		check "fio p2pnvme_reg --p2pbar=/dev/p2pbar9: no such provider, an error" [ $? -ne 0 ]
		check "... saying which device" grep -q "/dev/p2pbar9" /tmp/fio.out
	else
		# the topology refuses: the registration says so
		$REG $RJOB --verify_only=1 >/tmp/fio.out 2>&1
		check "fio p2pnvme_reg into p2pmem the topology refuses: an error" [ $? -ne 0 ]
		check "... Remote I/O error (EREMOTEIO)" grep -q "Remote I/O error" /tmp/fio.out
		$FIO --filename=$N $RJOB >/tmp/fio.out 2>&1
		check_eq "fio io_uring_cmd writes the job's blocks (host memory)" "$?" 0
	fi
	# registered host memory: the verify pass
	before=$(cnt reads_host)
	$REG $RJOB --verify_only=1 --p2pbar=host >/tmp/fio.out 2>&1
	check_eq "fio p2pnvme_reg --p2pbar=host: the verify pass into registered host memory" "$?" 0
	check_eq "... 512 reads counted host" "$(($(cnt reads_host) - before))" 512
	diag "$(tail -n 2 /tmp/fio.out | cut -c1-160)"
fi
# xNVMe would open /dev/p2pnvme0 through the same NVME_IOCTL_ID and
# NVME_URING_CMD_IO; Debian packages no xnvme (bookworm, trixie, sid)
skip "xNVMe's info and a read against $N" "xNVMe is not packaged by Debian"
if ! command -v io_uring_passthrough.t >/dev/null; then
	skip "liburing's io_uring_passthrough.t against $N" "it could not be built on the machine that built the guest"
else
	# liburing_pt DEV: the test's exit status. Its SQPOLL cases check
	# io_uring_submit()'s count, which under SQPOLL is not exact
	# (io_uring_submit(3); liburing #88 and #1605): on a slow guest the SQ
	# thread takes the entries first and the count reads 0 ("submit got 0,
	# wanted 32", sqthread=1). That failure alone, seen on p2pnvme and
	# nvme-pci in one boot, is run again once and said; any other counts.
	liburing_pt() {
		timeout 120 io_uring_passthrough.t "$1" >/tmp/lu.out 2>&1 && return 0
		grep -q 'submit got [0-9]*, wanted' /tmp/lu.out &&
			grep -q 'test_io failed [01]/1/' /tmp/lu.out || return 1
		diag "$1: $(tr '\n' ';' < /tmp/lu.out | cut -c1-160): SQPOLL's inexact submit count, run again"
		timeout 120 io_uring_passthrough.t "$1" >/tmp/lu.out 2>&1
	}
	liburing_pt $N
	check_eq "liburing's io_uring_passthrough.t $N" "$?" 0
	diag "$(tail -n 3 /tmp/lu.out | tr '\n' ';')"
	if [ -n "$pci_ns" ]; then
		liburing_pt $pci_ns
		check_eq "... and on nvme-pci's $pci_ns" "$?" 0
	fi
fi
suite_end

if [ -n "$NVME1" ]; then
	suite_begin client_copy
	check "p2pnvme takes over the second controller $NVME1" bind p2pnvme "$NVME1"
	out=$(p2pctl --json nvme-copy $N 2048 524288 /dev/p2pnvme1 4096)
	check_eq "nvme0 -> p2pmem -> nvme1, 512 KiB" "$?" 0
	check_eq "both legs P2P" "$(js read_path "$out") $(js write_path "$out")" "$want_path $want_path"
	hostcheck equal 524288 nvme1@0x200000 nvme0@0x100000
	suite_end
fi

suite_begin client_teardown
diag "stats: $(grep . $STATS/* | sed 's|.*/||' | tr '\n' ' ')"
p2pctl nvme-stats | while read -r l; do diag "$l"; done
st=$(p2pctl --json nvme-stats)
check_eq "nvme-stats reports what sysfs says" \
	"$(js reads_p2p "$st") $(js bytes_dmabuf "$st") $(js irqs "$st")" \
	"$(cat $STATS/reads_p2p) $(cat $STATS/bytes_dmabuf) $(cat $STATS/irqs)"
Q=/sys/kernel/debug/p2pnvme/$NVME/queues
diag "queues: $(tr '\n' ';' < $Q)"
check_eq "debugfs shows the admin queue and every I/O queue" \
	"$(grep -c '^[0-9]' $Q)" "$(($(js io_queues "$info") + 1))"
# QEMU's controller has Doorbell Buffer Config (OACS bit 8): every I/O
# queue rings through shadow doorbells, the admin queue by MMIO (nvme-pci's
# rule); the column is the last one
check_eq "shadow doorbells on every I/O queue, not the admin queue" \
	"$(awk '/^[0-9]/ { print $1 == 0 ? "a" $NF : $NF }' $Q | sort -u | tr '\n' ' ')" "1 a0 "
check_eq "interrupts took the completions (MSI-X)" "$(js polled "$info") $(($(cat $STATS/irqs) > 0))" "false 1"
# the unbind with io_uring commands in flight: each is answered
if [ "$p2pexpect" != refused ]; then
	echo "<<<KTAP-BEGIN guest.client_uring_unbind>>>"
	p2puring-test --unbind $N /dev/p2pbar0 "$NVME" || _any_failed=1
	echo "<<<KTAP-END>>>"
	check "p2pnvme takes nvme0 again" bind p2pnvme "$NVME"
	# ... and with registered host memory and a registered dma-buf
	echo "<<<KTAP-BEGIN guest.client_reg_unbind>>>"
	p2preg-test --unbind $N /dev/p2pbar0 "$NVME" || _any_failed=1
	echo "<<<KTAP-END>>>"
	check "p2pnvme takes nvme0 again after the registered-buffer unbind" bind p2pnvme "$NVME"
	# IORING_SETUP_IOPOLL rings on an interrupt-driven controller: the
	# ring's polling answers (it rebinds the controller at the end)
	echo "<<<KTAP-BEGIN guest.client_uring_iopoll>>>"
	p2puring-test --iopoll $N /dev/p2pbar0 "$NVME" || _any_failed=1
	echo "<<<KTAP-END>>>"
	hostcheck dma-mark	# it read into host memory too
fi
# PRP lists and SGL segments come from a pool per I/O queue while a command
# needs one (the last rebind made new pools): a read with a PRP list takes
# one, and every one is back afterwards
check "a 64 KiB read into p2pmem with a PRP list" sh -c "p2pctl --prp nvme-read $N 0 65536 >/dev/null"
check_eq "the list pools were used and hold no list now (in use, used, pools)" \
	"$(awk '$1 == "p2pnvme-list" { u += $2; b += $3; n++ }
		END { print u + 0, (b > 0), (n > 0) }' "/sys/bus/pci/devices/$NVME/pools")" "0 1 1"
# the unbind: while an ioctl's buffer is stuck in a userfaultfd fault
echo "<<<KTAP-BEGIN guest.client_stuck_unbind>>>"
p2pnvme-test --stuck-unbind $N "$NVME" || _any_failed=1
echo "<<<KTAP-END>>>"
check "p2pnvme is unbound from nvme0 (orderly shutdown)" test ! -e "/sys/bus/pci/devices/$NVME/driver"
# ... and while the admin passthrough's copy-out is stuck in one
check "p2pnvme takes nvme0 for the admin passthrough's stuck copy-out" bind p2pnvme "$NVME"
echo "<<<KTAP-BEGIN guest.client_stuck_unbind_admin>>>"
p2pnvme-test --stuck-unbind-admin $N "$NVME" || _any_failed=1
echo "<<<KTAP-END>>>"
check "p2pnvme is unbound from nvme0 again" test ! -e "/sys/bus/pci/devices/$NVME/driver"
[ -n "$NVME1" ] && bind nvme "$NVME1"
check "nvme-pci takes the controller back" bind nvme "$NVME"
check "rmmod p2pnvme" rmmod p2pnvme
suite_end

# The same engine without interrupts: poll=1 reaps completions by polling.
suite_begin client_polled
check "p2pnvme loads with poll=1" load p2pnvme poll=1
check "p2pnvme takes nvme0 back" bind p2pnvme "$NVME"
info=$(p2pctl --json nvme-info)
check_eq "nvme-info says polled" "$(js polled "$info")" true
held p2pctl --json nvme-read $N 2048 2097152 --batch 16; out=$held_out
hostcheck equal 2097152 "bar0@$(js bar_offset "$out")" nvme0@0x100000
released; check_eq "a batch of 16 reads, polled" "$?" 0
check_eq "no interrupt counted" "$(cat $STATS/irqs)" 0
check "a ring that does not poll is refused by a polled controller (EOPNOTSUPP)" \
	sh -c "p2puring-test --polled $N /dev/p2pbar0 >/dev/null"
# IORING_SETUP_IOPOLL rings on the polled queues: many commands in flight
# reaped by the ring's polling, a ring torn down and the controller
# unbound with commands in flight (it rebinds the controller at the end)
if [ "$p2pexpect" != refused ]; then
	echo "<<<KTAP-BEGIN guest.client_polled_iopoll>>>"
	p2puring-test --iopoll $N /dev/p2pbar0 "$NVME" || _any_failed=1
	echo "<<<KTAP-END>>>"
	hostcheck dma-mark	# it read into host memory too
	check_eq "IOPOLL rings: still no interrupt counted" "$(cat $STATS/irqs)" 0
fi
# A dma-buf p2pnvme read into keeps p2pnvme's fence in its reservation
# object. Before 7.x the fence calls its ops for as long as it lives, so it
# holds the module; 7.x detaches a signalled fence from its ops. The
# dma-buf is counted in debugfs (bufinfo): one more while p2pctl holds it,
# as many as before once it let go.
if [ "$p2pexpect" != refused ]; then
	dmabufs() { sed -n 's/^Total \([0-9]*\) objects.*/\1/p' /sys/kernel/debug/dma_buf/bufinfo; }
	bufs0=$(dmabufs)
	held p2pctl --json nvme-read $N 2048 65536 --dmabuf
	hostcheck equal 65536 "bar0@$(js bar_offset "$held_out")" nvme0@$((2048 * 512))
	check_eq "the held read's dma-buf lives (bufinfo: one more than the $bufs0 before)" \
		"$(dmabufs)" $((bufs0 + 1))
	check "unbind p2pnvme while that dma-buf lives" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind"
	case $(uname -r) in
	[0-6].*) check "rmmod p2pnvme refused while its fence lives (EAGAIN: in use)" \
			fails_with "Resource temporarily unavailable" rmmod p2pnvme
		check "... and p2pnvme is still loaded" grep -q "^p2pnvme " /proc/modules
		released
		check_eq "the held read's p2pctl exits 0 once it drops the dma-buf" "$?" 0
		check "rmmod p2pnvme once the dma-buf is gone" rmmod p2pnvme ;;
	*)	check "rmmod p2pnvme while the dma-buf lives (7.x: fences detach)" rmmod p2pnvme
		released
		check_eq "the held read's p2pctl exits 0 once it drops the dma-buf, after the module" "$?" 0 ;;
	esac
	i=0
	while [ "$(dmabufs)" != "$bufs0" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
	check_eq "the dma-buf is gone (bufinfo: $bufs0, as before the read)" "$(dmabufs)" "$bufs0"
else
	check "unbind and rmmod" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind && rmmod p2pnvme"
fi
check "nvme-pci takes the controller back" bind nvme "$NVME"
suite_end

# Interrupt coalescing (Feature 08h) as the module parameters ask. QEMU's
# trace is the witness of the command; QEMU 7.2's nvme refuses to change the
# feature (Feature Not Changeable, 0x10e), so what is checked beyond is that
# the refusal is said and the controller works on without it.
suite_begin client_coalesce
check "coalesce_entries refuses 257 (EINVAL, said in the log)" param_refused p2pnvme coalesce_entries=257
hostcheck dma-mark
check "p2pnvme loads with coalesce_entries=8 coalesce_time_us=200" \
	load p2pnvme "coalesce_entries=8 coalesce_time_us=200"
check "p2pnvme takes nvme0" bind p2pnvme "$NVME"
hostcheck setfeat 0x8 0x207
if dmesg | grep -q "interrupt coalescing refused (status 0x10e)"; then
	skip "the controller gathers completions" "emulator limitation: QEMU 7.2's nvme refuses Feature 08h (not changeable)"
	pass "the refusal is said in the log, the probe goes on"
else
	check "no refusal in the log" sh -c '! dmesg | grep -q "coalescing refused"'
fi
check "a read completes with coalescing on" sh -c "p2pctl nvme-read $N 2048 262144 --host >/dev/null"
check "unbind and rmmod" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind && rmmod p2pnvme"
check "nvme-pci takes the controller back" bind nvme "$NVME"
suite_end
exit $_any_failed
