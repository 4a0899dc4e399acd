#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Randomized ioctl/mmap/sysfs operations against /dev/p2pbar0 and
# /dev/p2pnvme0 (tools/tests/p2pfuzz.c, seeded): 1e5 of them on the base
# kernel, 2e4 on the debug kernel (KASAN, lockdep, kmemleak). Afterwards
# nothing is left allocated, the whole BAR can be allocated again, and both
# drivers still move data, checked from the host.
. /tests/lib.sh
expect_suites guest.fuzz_setup guest.fuzz guest.fuzz_after

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)
ops=100000
[ -e /sys/kernel/debug/kmemleak ] && ops=20000
seed=${p2pseed:-20261201}	# p2pseed=N on the kernel command line for another

suite_begin fuzz_setup
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
check "/dev/p2pbar0 exists" test -c /dev/p2pbar0
check "p2pnvme loads" load p2pnvme
check "p2pnvme takes over $NVME" bind p2pnvme "$NVME"
suite_end

t0=$(date +%s)
echo "<<<KTAP-BEGIN guest.fuzz>>>"
p2pfuzz --seed "$seed" --ops $ops --threads 2 /dev/p2pbar0 "$IVSHMEM" /dev/p2pnvme0 || _any_failed=1
echo "<<<KTAP-END>>>"

suite_begin fuzz_after
diag "seed $seed, $ops operations in $(( $(date +%s) - t0 )) s"
held p2pctl --json nvme-read /dev/p2pnvme0 4096 262144
hostcheck equal 262144 "bar0@$(echo "$held_out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')" nvme0@$((4096 * 512))
released
check_eq "p2pnvme still reads into p2pmem of p2pbar" "$?" 0
out=$(p2pctl --json nvme-write /dev/p2pnvme0 8192 65536 0x6b)
check_eq "and writes from it" "$?" 0
hostcheck fill 65536 nvme0@$((8192 * 512)) 0x6b
check "unbind both drivers" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind && echo $IVSHMEM > /sys/bus/pci/drivers/p2pbar/unbind"
check "rmmod both" sh -c "rmmod p2pnvme && rmmod p2pbar"
suite_end; exit $_any_failed
