#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Surprise-ish removal: QEMU device_del of the provider (pciehp in the
# guest) while userspace maps its memory and holds the fd, and while the
# kernel's own p2pmem/allocate mapping is alive. Nothing may hang or crash.
. /tests/lib.sh
# the test's own suites and p2pbar-test's (provider_unplug)
expect_suites guest.unplug_setup guest.provider_unplug guest.unplug_after

IVSHMEM=$(find_pci 1af4 1110)
suite_begin unplug_setup
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
suite_end
p2pbar-test --unplug /dev/p2pbar0 "$IVSHMEM" || _any_failed=1
suite_begin unplug_after
check "ivshmem is gone from the bus" test ! -e "/sys/bus/pci/devices/$IVSHMEM"
check "no p2pbar instance left" test ! -e /sys/class/p2pbar/p2pbar0
check "rmmod p2pbar" rmmod p2pbar
suite_end; exit $_any_failed
