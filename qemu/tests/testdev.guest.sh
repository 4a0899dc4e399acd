#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A BAR with nothing behind it (pci-testdev membar): the provider accepts
# it, as the kernel would, but bytes written through p2pmem do not stay and
# a DMA "into" it cannot be seen: what the suite's byte checks must catch.
. /tests/lib.sh
expect_suites guest.testdev

TESTDEV=$(find_pci 1b36 0005)
NVME=$(find_pci 1b36 0010)
BLK=$(nvme_blk "$NVME")
suite_begin testdev
check "pci-testdev present" test -n "$TESTDEV"
check "p2pbar loads" load p2pbar
check "p2pbar binds to the membar of $TESTDEV" bind p2pbar "$TESTDEV"
diag "$(p2pctl info /dev/p2pbar0 | tr '\n' ' ')"
out=$(p2pctl --json dma-read "$BLK" 0 65536 --dev /dev/p2pbar0)
rc=$?
diag "dma-read: rc=$rc $out"
check_eq "the NVMe read reports success" "$rc" 0
# fnv1a of 64 KiB of zeros; the image's first 64 KiB hash to 66632ed74f5e5cce
case "$out" in
*'"fnv1a":"eb05052ea5b62325"'*) pass "reading the memory back gives zeros, not the data: detectable" ;;
*) fail "reading the memory back gives zeros, not the data: detectable" ;;
esac
suite_end; exit $_any_failed
