#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# PCI error recovery of the NVMe client: QEMU injects an uncorrectable
# error at the controller's downstream port (pcie_aer_inject_error); the
# guest's AER driver freezes the link below it, calls p2pnvme's
# error_detected (I/O in flight fails, bus mastering off), resets the slot
# and resumes: the controller is back and I/O works, checked from the host.
. /tests/lib.sh
expect_suites guest.aer

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)
js() { echo "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

suite_begin aer
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
check "p2pnvme loads" load p2pnvme
check "p2pnvme takes over $NVME" bind p2pnvme "$NVME"
check "I/O before the error" p2pctl nvme-read /dev/p2pnvme0 0 65536
r0=$(cat /sys/class/p2pnvme/p2pnvme0/stats/resets)
diag "inject: $(hostd qmp human-monitor-command '{"command-line": "pcie_aer_inject_error '"${p2paerport:-dn0}"' '"${p2paererr:-SDN}"'"}')"
i=0
while ! dmesg | grep -q "p2pnvme $NVME: controller \(back in service\|did not come back\)" && [ $i -lt 200 ]; do
	sleep 0.1; i=$((i + 1))
done
dmesg | grep -iE "aer|pcieport|p2pnvme $NVME" | tail -n 12 | while read -r l; do diag "$l"; done
check "p2pnvme was told: frozen state error detected" sh -c "dmesg | grep -q 'p2pnvme $NVME: frozen state error detected'"
check "the slot was reset and the controller is back in service" \
	sh -c "dmesg | grep -q 'p2pnvme $NVME: controller back in service after the error'"
check_eq "the recovery counts as a reset" "$(cat /sys/class/p2pnvme/p2pnvme0/stats/resets)" $((r0 + 1))
held p2pctl --json nvme-read /dev/p2pnvme0 2048 131072
hostcheck equal 131072 "bar0@$(js bar_offset "$held_out")" nvme0@$((2048 * 512))
released
check_eq "I/O works after the recovery" "$?" 0
check "unbind and rmmod" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind && rmmod p2pnvme"
suite_end; exit $_any_failed
