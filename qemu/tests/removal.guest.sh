#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# 100 unbinds of the provider with every kind of user alive at once
# (tools/tests/p2premoval.c): a /dev/p2pbar0 mapping, a mapping of the
# kernel's p2pmem/allocate, an exported dma-buf p2pnvme reads into, p2pnvme
# batches into p2pbar memory. Each gets SIGBUS or ENODEV, nothing hangs,
# the slowest unbind stays within 1 s; the log check and kmemleak (debug
# kernel) look for splats and leaks. Then both drivers still move data.
. /tests/lib.sh
expect_suites guest.removal_setup guest.removal_cycles guest.removal_after

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)

suite_begin removal_setup
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
check "p2pnvme loads" load p2pnvme
check "p2pnvme takes over $NVME" bind p2pnvme "$NVME"
suite_end

# The 1 s bound holds on the base kernel (slowest ~0.1 s); KASAN and lockdep
# under TCG, two boots at a time, make the same unbind 5-15x slower, so the
# debug run checks behaviour (SIGBUS, ENODEV, no splat, no leak) with a
# looser bound that still catches a wait for a timeout.
bound=1
[ -e /sys/kernel/debug/kmemleak ] && bound=4
t0=$(date +%s)
echo "<<<KTAP-BEGIN guest.removal_cycles>>>"
p2premoval 100 "$IVSHMEM" /dev/p2pnvme0 $bound || _any_failed=1
echo "<<<KTAP-END>>>"

suite_begin removal_after
diag "100 cycles in $(( $(date +%s) - t0 )) s"
check_eq "no allocation left" "$(cat /sys/class/p2pbar/p2pbar0/alloc_count)" 0
check_eq "the kernel's pool is whole" "$(cat /sys/bus/pci/devices/$IVSHMEM/p2pmem/available)" \
	"$(cat /sys/class/p2pbar/p2pbar0/size)"
held p2pctl --json nvme-read /dev/p2pnvme0 2048 262144
hostcheck equal 262144 "bar0@$(echo "$held_out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')" nvme0@$((2048 * 512))
released
check_eq "both drivers still move data" "$?" 0
check "unbind and rmmod both" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind && echo $IVSHMEM > /sys/bus/pci/drivers/p2pbar/unbind && rmmod p2pnvme && rmmod p2pbar"
suite_end; exit $_any_failed
