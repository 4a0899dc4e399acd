#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Systematic fault injection (tools/tests/p2pfailnth.c): the N-th
# allocation of every ioctl of both drivers, and of both probes, fails,
# for N = 1, 2, ... until the operation no longer reaches N. Each injected
# failure returns an error (or is absorbed) and leaves the state as before;
# kmemleak (scanned after the run) finds no leak, the log no splat. Needs
# the debug kernel (failslab, fail_page_alloc).
. /tests/lib.sh
expect_suites guest.failnth_setup guest.failnth guest.failnth_after

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)
F=/sys/kernel/debug

suite_begin failnth_setup
check "the kernel injects faults (failslab, fail_page_alloc)" test -d $F/failslab -a -d $F/fail_page_alloc
for a in failslab fail_page_alloc; do
	# sleeping allocations too (the default skips them), quietly
	echo N > $F/$a/ignore-gfp-wait
	echo 0 > $F/$a/verbose
done
echo N > $F/fail_page_alloc/ignore-gfp-highmem
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
# 64-entry queues: the list pages come 16 slots per allocation, so the
# default 1024 entries would add the same loop's sites 60 more times
check "p2pnvme loads" load p2pnvme io_queue_depth=64
check "p2pnvme takes over $NVME" bind p2pnvme "$NVME"
check "the kernel filters faults by stack" test -e $F/failslab/require-start
suite_end

t0=$(date +%s)
step=${p2pfailnth_step:-10}
[ "$step" -ge 1 ] 2>/dev/null || step=1
# Two kernel warnings the sweep provokes on purpose, and only while it runs:
# x86's add_pages() WARNs once (WARN_ON_ONCE(ret), no message) when memory
# hotplug fails: an injected ENOMEM inside pci_p2pdma_add_resource() during
# the probe sweep does that. The kernel ignores a /proc/irq/N entry it
# failed to create (an injected ENOMEM in p2pnvme's probe) and
# remove_proc_entry() WARNs "name '%s'" when the vectors go: at most one per
# injected site among the 7 entries of each of the 2 I/O queues' vectors
# (about 16 sites, every STEP-th of them injected; twice that, to be safe).
known_warning_begin add_pages 1 - \
	"the kernel warns once when memory hotplug (memremap_pages) fails, here by an injected ENOMEM in probe"
known_warning_begin remove_proc_entry $((32 / step + 2)) "name '" \
	"the kernel ignores a /proc/irq entry it failed to create (an injected ENOMEM under pci_alloc_irq_vectors()) and warns when it removes it"
echo "<<<KTAP-BEGIN guest.failnth>>>"
# p2pnvme's probe too: p2pfailnth keeps those faults inside p2pnvme's
# stacks and out of pci_enable_device_flags(), whose ACPI IRQ routing has a
# use-after-free on allocation failure (a kernel bug, not the suite's).
# Each bind brings the controller up (about 2 s here): make check injects
# every 10th of its ~380 fault sites; P2P_FAILNTH_STEP=1 on the host (run.sh
# passes it on) sweeps them all, about 15 minutes.
P2P_FAILNTH_STEP=$step \
	p2pfailnth /dev/p2pbar0 "$IVSHMEM" /dev/p2pnvme0 "$NVME" || _any_failed=1
echo "<<<KTAP-END>>>"
known_warning_end remove_proc_entry
known_warning_end add_pages

suite_begin failnth_after
diag "sweeps took $(( $(date +%s) - t0 )) s"
check "p2pbar binds again" bind p2pbar "$IVSHMEM"
check "p2pnvme binds again" bind p2pnvme "$NVME"
held p2pctl --json nvme-read /dev/p2pnvme0 2048 65536
hostcheck equal 65536 "bar0@$(echo "$held_out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')" nvme0@$((2048 * 512))
released
check_eq "both drivers still move data" "$?" 0
check "unbind and rmmod both" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind && echo $IVSHMEM > /sys/bus/pci/drivers/p2pbar/unbind && rmmod p2pnvme && rmmod p2pbar"
suite_end; exit $_any_failed
