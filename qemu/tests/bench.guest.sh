#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The bench's own proof: the kernel's P2PDMA verdict for the booted
# topology (KUnit), and a real transfer by the kernel's nvme driver from
# the namespace into p2pmem of the ivshmem BAR, checked on the host.
. /tests/lib.sh

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)

suite_begin bench
diag "profile=$p2pprofile expect=$p2pexpect distance=$p2pdistance cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
check "ivshmem and nvme present" test -n "$IVSHMEM" -a -n "$NVME"
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
check "kernel registered the BAR as p2pmem" [ -e "/sys/bus/pci/devices/$IVSHMEM/p2pmem/size" ]
check_eq "p2pmem published" "$(cat /sys/bus/pci/devices/$IVSHMEM/p2pmem/published 2>/dev/null)" 1
# the provider against every function of the machine
tail -n +2 /sys/kernel/debug/p2pbar/"$IVSHMEM"/verdicts | while read -r line; do
	diag "verdicts: $line"
done

# Live KUnit: the kernel's and the provider's verdicts for this profile.
check "p2p_topology_kunit runs" load p2p_topology_kunit "expect=$p2pexpect distance=$p2pdistance"

# Data path: the kernel's nvme driver reads 64 KiB at 1 MiB into p2pmem
# from the kernel's own sysfs allocator (O_DIRECT, FOLL_PCI_P2PDMA).
BLK=$(nvme_blk "$NVME")
check "nvme namespace present ($BLK)" [ -b "$BLK" ]
out=$(p2pctl --json dma-read "$BLK" 0x100000 65536 --sysfs "$IVSHMEM" 2>&1)
rc=$?
diag "dma-read: rc=$rc $out"
if [ "$p2pexpect" = refused ]; then
	check_eq "O_DIRECT read into p2pmem is refused with EREMOTEIO" "$rc" 121
	hostcheck absent 65536 nvme0@0x100000 bar0
else
	check_eq "O_DIRECT read into p2pmem succeeds" "$rc" 0
	off=$(echo "$out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')
	hostcheck equal 65536 "bar0@${off:-0}" nvme0@0x100000 "limit=${p2plimit:-none}"
fi
suite_end; exit $_any_failed
