#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# p2pnvme's dma-buf imports against exporters that behave as the GPU
# drivers do (issue 25): the bench's p2pgpu module exports ranges of the
# last ivshmem BAR (the switch profile's bar1, the iommu profile's bar0) as
# nvidia, amdgpu and xe would, p2pnvme reads into them and writes from
# them; the host checks the BAR's backing file and the image
# (tools/tests/p2pgpu-test.c says what each case asserts).
. /tests/lib.sh

NVME=$(find_pci 1b36 0010)
nbar=0
while find_pci 1af4 1110 $((nbar + 1)) >/dev/null; do nbar=$((nbar + 1)); done
GPU=$(find_pci 1af4 1110 $nbar)
BAR=bar$((nbar - 1))

suite_begin gpuexp_setup
check "p2pgpu loads" load p2pgpu
check "p2pgpu binds to ivshmem $GPU (the host's $BAR)" bind p2pgpu "$GPU"
check "/dev/p2pgpu exists" test -c /dev/p2pgpu
check "p2pbar loads (p2pnvme's symbols)" load p2pbar
check "p2pnvme loads" load p2pnvme
check "p2pnvme takes over $NVME" bind p2pnvme "$NVME"
suite_end

echo "<<<KTAP-BEGIN guest.gpuexp>>>"
p2pgpu-test /dev/p2pgpu /dev/p2pnvme0 "$BAR" || _any_failed=1
echo "<<<KTAP-END>>>"

suite_begin gpuexp_after
dmesg | grep -E 'p2pgpu|nvidia:' | sed 's/^\[[^]]*\] //' | tail -n 60 | while read -r l; do diag "$l"; done
check "p2pnvme lets go of $NVME" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind"
check "p2pgpu unbinds" sh -c "echo $GPU > /sys/bus/pci/drivers/p2pgpu/unbind"
check "p2pgpu unloads: every buffer released" rmmod p2pgpu
check "nvme-pci takes the controller back" bind nvme "$NVME"
suite_end
exit $_any_failed
