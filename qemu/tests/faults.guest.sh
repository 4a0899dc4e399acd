#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Error paths of the NVMe client: namespaces with metadata are refused; a
# media error from the backend reaches the caller; a command that outlives io_timeout_ms is aborted, the
# controller reset, the I/O fails with ETIMEDOUT (a dma-buf's fence with it)
# and the next one works;
# resets of the PCI function racing with io_uring timeouts leave the
# controller live; a CPU going offline waits for the commands on its
# queue; hot-unplug during a batch of I/O returns it without a hang; a
# controller that stops answering is reset, then taken out of service
# (ENODEV);
# hot-unplug of a controller with its char device open.
. /tests/lib.sh

IVSHMEM=$(find_pci 1af4 1110)
NVME0=$(find_pci 1b36 0010)
NVME1=$(find_pci 1b36 0010 2)
S0=/sys/class/p2pnvme/p2pnvme0/stats
S1=/sys/class/p2pnvme/p2pnvme1/stats

# the suites: the test's own and its test programs'; the PCI reset race
# where the kernel can reset nvme1's function (a reset method: sysfs reset)
suites="guest.client_faults guest.client_faults_dmabuf_fence guest.client_restart"
[ -e "/sys/bus/pci/devices/$NVME1/reset" ] && suites="$suites guest.client_faults_uring_reset"
expect_suites $suites

# cfg_w16 BDF OFFSET VALUE: write a 16-bit config register
cfg_w16() {
	printf "$(printf '\\%03o\\%03o' $(($3 & 255)) $(($3 >> 8)))" |
		dd of="/sys/bus/pci/devices/$1/config" bs=1 seek="$2" count=2 conv=notrunc 2>/dev/null
}

suite_begin client_faults
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
check "p2pnvme loads" load p2pnvme
check "p2pnvme takes over nvme0 ($NVME0)" bind p2pnvme "$NVME0"
check "p2pnvme takes over nvme1 ($NVME1)" bind p2pnvme "$NVME1"

# 8 bytes of metadata per LBA: refused at probe, no I/O command sent
hostcheck dma-mark
for n in "3 separate buffer" "4 extended LBAs"; do
	bdf=$(find_pci 1b36 0010 "${n%% *}")
	bind p2pnvme "$bdf"
	check "p2pnvme refuses $bdf, a namespace with metadata (${n#* })" \
		test ! -e "/sys/bus/pci/devices/$bdf/driver"
	check "and says why" sh -c "dmesg | grep -q '$bdf: namespace 1 has 8 bytes of metadata per LBA (${n#* })'"
done
hostcheck io-none

# MDTS 60: 4096 << 60 does not fit; no limit beyond the driver's 512 KiB
M=$(find_pci 1b36 0010 5)
check "p2pnvme takes $M, whose MDTS is 60" bind p2pnvme "$M"
check_eq "its transfers are capped at 512 KiB, not 0" \
	"$(p2pctl --json nvme-info /dev/p2pnvme2 | sed -n 's/.*"max_xfer":\([0-9]*\).*/\1/p')" 524288
timeout 30 p2pctl nvme-zeroes /dev/p2pnvme2 0 1048576
check_eq "Write Zeroes over 1 MiB ends (two commands)" "$?" 0
check "unbind it" sh -c "echo $M > /sys/bus/pci/drivers/p2pnvme/unbind"

# blkdebug: EIO for LBA 65536
p2pctl nvme-read /dev/p2pnvme0 65536 4096 2>/tmp/err
rc=$?
diag "$(cat /tmp/err)"
check_eq "media error reaches the caller as EIO" "$rc" 5
# SCT 2 (media errors), SC 0x81 (unrecovered read error); no DNR/More/CRD bits
check "with the NVMe status 0x281" grep -q "NVMe status 0x281)" /tmp/err
check_eq "errors counted" "$(cat $S0/errors)" 1
check "a read elsewhere still works" p2pctl nvme-read /dev/p2pnvme0 0 4096

# throttled backend: the first command of a 1 MiB read passes, the second
# waits 8 s for the bucket (64 KiB/s). With a 6 s timeout it is late, is
# aborted, and QEMU answers "not aborted" (its answer to every Abort, the
# normal one for a command about to complete): no reset, it completes.
echo 6000 > /sys/module/p2pnvme/parameters/io_timeout_ms
t0=$(date +%s)
p2pctl nvme-read /dev/p2pnvme1 0 1048576 2>/tmp/err
rc=$?
diag "$(cat /tmp/err) after $(( $(date +%s) - t0 )) s"
check_eq "a command late by less than a second timeout completes" "$rc" 0
check_eq "its timeout was counted" "$(cat $S1/timeouts)" 1
check_eq "and nothing was reset for it" "$(cat $S1/resets)" 0

# Now 1 s: the next 1 MiB, read into a dma-buf of p2pbar's, waits for the
# bucket (8 s), is aborted, not aborted, still not back after a second
# timeout: reset. The reset deletes QEMU's queues, so what the timed-out
# command brings back then is discarded. It fails with ETIMEDOUT, and the
# dma-buf's write fence, seen through a sync_file another process took
# from the dma-buf meanwhile, signals with that error.
echo 1000 > /sys/module/p2pnvme/parameters/io_timeout_ms
t0=$(date +%s)
echo "<<<KTAP-BEGIN guest.client_faults_dmabuf_fence>>>"
p2pdmabuf-test --fence-error /dev/p2pbar0 /dev/p2pnvme1 0 1048576 110 || _any_failed=1
echo "<<<KTAP-END>>>"
diag "the read into the dma-buf ended after $(( $(date +%s) - t0 )) s"
check "timeouts counted" test "$(cat $S1/timeouts)" -ge 2
check_eq "the controller was reset" "$(cat $S1/resets)" 1
# the bucket still holds the drained 1 MiB: the next read waits ~15 s
echo 30000 > /sys/module/p2pnvme/parameters/io_timeout_ms
held p2pctl --json nvme-read /dev/p2pnvme1 8 4096
hostcheck equal 4096 "bar0@$(echo "$held_out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')" nvme1@4096
released; check_eq "I/O works after the reset" "$?" 0

# io_uring reads timing out on the throttled nvme1 (io_timeout_ms 200: the
# watchdog aborts them, then has the controller reset) while the PCI core
# resets the function 4 times: the watchdog looks at the queues only
# inside the I/O guard, never while a reset starts them again, and each
# PCI reset stops and restarts the controller itself. Every read is
# answered (done, ECANCELED, ETIMEDOUT), the controller is live
# afterwards, nothing failed, and I/O works (once the throttle has
# served what the resets drained).
if [ -e "/sys/bus/pci/devices/$NVME1/reset" ]; then
	gave_up() { dmesg | grep -c "p2pnvme $NVME1: .*\(reset failed\|did not come back\)"; }
	f0=$(gave_up)
	echo 200 > /sys/module/p2pnvme/parameters/io_timeout_ms
	echo "<<<KTAP-BEGIN guest.client_faults_uring_reset>>>"
	p2puring-test --reset-race /dev/p2pnvme1 "$NVME1" 4 || _any_failed=1
	echo "<<<KTAP-END>>>"
	check_eq "no reset failed in the race, nothing went out of service" \
		"$(($(gave_up) - f0))" 0
	# what each reset drained still counts against the bucket: time for it
	echo 60000 > /sys/module/p2pnvme/parameters/io_timeout_ms
	held p2pctl --json nvme-read /dev/p2pnvme1 16 4096
	off=$(echo "$held_out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')
	hostcheck equal 4096 "bar0@$off" nvme1@8192
	released; check_eq "I/O works after the race" "$?" 0
	echo 30000 > /sys/module/p2pnvme/parameters/io_timeout_ms
else
	skip "PCI resets racing io_uring timeouts" "the kernel knows no reset method for $NVME1"
fi

# CPU hotplug with commands the controller is slow to answer: io_uring
# reads pinned to CPU 1 on the throttled nvme1 (64 KiB/s: 16 reads of
# 4 KiB a second), four in flight on CPU 1's queue when CPU 1 goes
# offline. The managed vector goes down with the CPU, so the queue must be
# drained before that, as blk-mq drains a hardware context: once the CPU
# is offline nothing may be left in flight on that queue, or it waits for
# the watchdog with no interrupt to tell of it.
Q1=/sys/kernel/debug/p2pnvme/$NVME1/queues
C1=/sys/devices/system/cpu/cpu1/online
q1=$(cpu1_queue "$NVME1")
# p2pnvme took nvme1 with interrupts (no poll=1), on the profile's 2 CPUs:
# the managed spreading gives CPU 1 a queue's vector of its own
if ! command -v fio >/dev/null || [ ! -w $C1 ]; then
	skip "CPU 1 offline with slow commands on its queue" \
		"no fio or no CPU 1 that can go offline"
elif [ -z "$q1" ]; then
	fail "CPU 1 offline with slow commands on its queue: a queue's vector on CPU 1 alone"
	diag "p2pnvme's vectors of nvme1 (irq:CPUs): $(p2pnvme_vectors "$NVME1" | tr '\n' ' ')"
else
	t0=$(cat $S1/timeouts); r0=$(cat $S1/resets)
	taskset -c 1 timeout 60 fio --minimal --ioengine=io_uring_cmd --cmd_type=nvme \
		--filename=/dev/p2pnvme1 --name=hp --rw=randread --bs=4k --iodepth=4 --size=1M \
		--time_based --runtime=5 >/tmp/hp.out 2>/tmp/hp.err &
	bg=$!
	# fio's start takes seconds on the debug kernel of a busy host: wait
	# for its reads to reach the queue (up to 20 s), not a fixed time
	busy=0 n=0
	while [ "${busy:-0}" -eq 0 ] && [ $n -lt 200 ] && kill -0 $bg 2>/dev/null; do
		sleep 0.1
		n=$((n + 1))
		busy=$(awk -v q=$q1 '$1 == q { print $7 }' $Q1)
	done
	read -r a _ </proc/uptime
	echo 0 > $C1
	left=$(awk -v q=$q1 '$1 == q { print $7 }' $Q1)
	read -r b _ </proc/uptime
	diag "CPU 1's queue q$q1: $busy in flight before, $left once CPU 1 was offline" \
		"(the offline took $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b - a }') s)"
	check "CPU 1's queue had commands in flight" [ "${busy:-0}" -gt 0 ]
	check_eq "nothing left in flight on it once CPU 1 was offline" "$left" 0
	sleep 0.5
	echo 1 > $C1
	wait $bg
	check_eq "fio's reads all completed" "$? $(cut -d';' -f5 /tmp/hp.out)" "0 0"
	check_eq "CPU 1 is online again" "$(cat $C1)" 1
	check_eq "nothing timed out, nothing was reset" \
		"$(($(cat $S1/timeouts) - t0)) $(($(cat $S1/resets) - r0))" "0 0"
fi

# removal with a batch in flight (throttled: 16 reads of 64 KiB take ~16 s,
# submitted with a 30 s deadline): device_del, pciehp unbinds p2pnvme,
# which drains for io_timeout_ms (now 1 s), shuts the controller down and
# fails what is left with ENODEV; QEMU may complete some while it shuts
# down. Either way the batch returns and nothing hangs.
p2pctl nvme-read /dev/p2pnvme1 0 1048576 --batch 16 2>/tmp/err &
bg=$!
sleep 1
echo 1000 > /sys/module/p2pnvme/parameters/io_timeout_ms
diag "device_del nvme1: $(hostd qmp device_del '{"id": "nvme1"}')"
i=0
while kill -0 $bg 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
check "the batch in flight returned ($((i / 10)) s after device_del)" sh -c "! kill -0 $bg"
wait $bg
rc=$?
diag "$(cat /tmp/err)"
case $rc in 0|19) ok=0 ;; *) ok=1 ;; esac
check_eq "it completed or failed with ENODEV (rc $rc)" "$ok" 0
i=0
while [ -e "/sys/bus/pci/devices/$NVME1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
check "nvme1 is gone from the bus" test ! -e "/sys/bus/pci/devices/$NVME1"

# a controller that stops answering: with memory decoding off, QEMU reads
# nvme0's registers as 0 and drops writes (real hardware that vanished
# reads all ones instead; QEMU's hot-unplug is orderly and cannot show it).
# The I/O times out and is cancelled by a reset; the reset cannot bring
# the controller back within CAP.TO, so it goes out of service for good:
# later I/O fails with ENODEV, even once the registers answer again.
Q0=/sys/kernel/debug/p2pnvme/$NVME0/queues
cmd=$(od -An -tu2 -j4 -N2 "/sys/bus/pci/devices/$NVME0/config" | tr -d ' ')
cfg_w16 "$NVME0" 4 $((cmd & ~2))
t0=$(date +%s)
p2pctl nvme-read /dev/p2pnvme0 0 4096 2>/tmp/err
rc=$?
diag "$(cat /tmp/err) after $(( $(date +%s) - t0 )) s"
check_eq "an unanswered command fails with ETIMEDOUT" "$rc" 110
# a restarted ioctl (SIGSTOP/SIGCONT while it waits out the reset)
echo "<<<KTAP-BEGIN guest.client_restart>>>"
p2pnvme-test --restart /dev/p2pnvme0 || _any_failed=1
echo "<<<KTAP-END>>>"
i=0
while ! grep -q '^# dead' $Q0 && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
check "the reset gives up and the controller is dead ($((i / 10)) s later)" grep -q '^# dead' $Q0
now=$(od -An -tu2 -j4 -N2 "/sys/bus/pci/devices/$NVME0/config" | tr -d ' ')
check_eq "bus mastering is off: it cannot DMA into the cancelled buffers" "$((now & 4))" 0
cfg_w16 "$NVME0" 4 "$cmd"
p2pctl nvme-read /dev/p2pnvme0 0 4096 >/dev/null 2>&1
check_eq "I/O on a dead controller: ENODEV" "$?" 19
p2pctl nvme-info /dev/p2pnvme0 >/dev/null 2>&1
check_eq "so does INFO" "$?" 19

# surprise-ish removal of nvme0 (QEMU device_del, pciehp) with the fd open
exec 5<>/dev/p2pnvme0
diag "device_del: $(hostd qmp device_del '{"id": "nvme0"}')"
i=0
while [ -e "/sys/bus/pci/devices/$NVME0" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
check "nvme0 is gone from the bus" test ! -e "/sys/bus/pci/devices/$NVME0"
check "its char device is gone" test ! -e /dev/p2pnvme0
exec 5>&-
check "rmmod p2pnvme with both controllers unplugged" rmmod p2pnvme
suite_end; exit $_any_failed
