#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The modules as DKMS built them from the p2pdma-dkms package's source
# (qemu/dkms.sh: dkms add + build against this kernel's tree, in a private
# DKMS tree) load, carry the suite's
# version, and work: a verdict, an O_DIRECT read by the kernel's nvme
# driver into p2pmem and a p2pnvme read, both checked from the host.
. /tests/lib.sh
expect_suites guest.dkms

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)
BLK=$(nvme_blk "$NVME")
js() { echo "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

suite_begin dkms
check "the DKMS-built p2pbar loads" load p2pbar
check_same "it is version $(p2pctl --version | cut -d' ' -f2)" \
	"$(cat /sys/module/p2pbar/version 2>/dev/null)" "$(p2pctl --version | cut -d' ' -f2)"
check "it binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
v=$(p2pctl --json verdict "$NVME")
check_eq "verdict for the NVMe: $p2pexpect" "$(js verdict "$v")" "$p2pexpect"
held p2pctl --json dma-read "$BLK" 0x200000 65536 --dev /dev/p2pbar0
hostcheck equal 65536 "bar0@$(js bar_offset "$held_out")" nvme0@0x200000
released
check_eq "O_DIRECT by nvme-pci into p2pmem of the DKMS-built p2pbar" "$?" 0
check "the DKMS-built p2pnvme loads" load p2pnvme
check "it takes over $NVME" bind p2pnvme "$NVME"
held p2pctl --json nvme-read /dev/p2pnvme0 4096 131072
hostcheck equal 131072 "bar0@$(js bar_offset "$held_out")" nvme0@$((4096 * 512))
released
check_eq "a p2pnvme read into p2pmem" "$?" 0
check "unbind and rmmod both" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind && echo $IVSHMEM > /sys/bus/pci/drivers/p2pbar/unbind && rmmod p2pnvme && rmmod p2pbar"
suite_end; exit $_any_failed
