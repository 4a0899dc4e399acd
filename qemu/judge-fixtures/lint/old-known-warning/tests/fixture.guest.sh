#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lint fixture (qemu/lint-tests.sh --selftest): a known warning excused by
# file, for the whole boot
. /tests/lib.sh
expect_suites guest.gpuexp
echo "P2P-KNOWN-WARNING kernel/dma/debug.c DMA-API debugging's cacheline tracking warns"
echo "<<<KTAP-BEGIN guest.gpuexp>>>"
p2pgpu-test /dev/p2pgpu /dev/p2pnvme0 bar1 || _any_failed=1
echo "<<<KTAP-END>>>"
exit $_any_failed
