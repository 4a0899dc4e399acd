#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# SR-IOV (the sriov profile): the physical function stays with nvme-pci
# and its block device; one virtual function, given queues and vectors
# through the PF's Virtualization Management (p2pvirt test: its cases in
# tools/tests/p2pvirt.c), goes to p2pnvme for P2P reads into p2pmem. PF
# and VF share one namespace (one image on the host): the host checks
# the bytes each of them moved, and the PF's block device keeps reading
# right while the VF does P2P.
# Then the PF formats the namespace to 4 KiB LBAs under the VF's driver:
# after the VF's next reset p2pnvme refuses it, never serves it as 512.
. /tests/lib.sh
expect_suites guest.sriov_setup guest.sriov_virt guest.sriov_bind guest.sriov_io guest.sriov_format \
	guest.sriov_teardown

IVSHMEM=$(find_pci 1af4 1110)
PF=$(find_pci 1b36 0010)
D=/sys/bus/pci/devices/$PF
N=/dev/p2pnvme0
js() { echo "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

suite_begin sriov_setup
check "nvme-pci drives the PF $PF" test -e "$D/driver"
CTRL=$(ls "$D/nvme" 2>/dev/null | head -n 1)
BLK=$(nvme_blk "$PF")
check "the PF's controller /dev/$CTRL and block device $BLK" test -c "/dev/$CTRL" -a -b "$BLK"
check_eq "the PF offers 2 VFs" "$(cat $D/sriov_totalvfs 2>/dev/null)" 2
echo 0 > "$D/sriov_drivers_autoprobe"
check "one VF enabled (sriov_numvfs)" sh -c "echo 1 > $D/sriov_numvfs"
VF=$(basename "$(readlink "$D/virtfn0")")
check "VF $VF appears, no driver takes it" test -n "$VF" -a ! -e "/sys/bus/pci/devices/$VF/driver"
suite_end

# the PF's Virtualization Management: VF 1 gets 3 queues (admin + 2 I/O)
# and 3 vectors of the flexible pools (the profile's 6 and 6), and goes
# online
echo "<<<KTAP-BEGIN guest.sriov_virt>>>"
p2pvirt test "/dev/$CTRL" 1 3 3 || _any_failed=1
echo "<<<KTAP-END>>>"

suite_begin sriov_bind
diag "$(p2pvirt --json list "/dev/$CTRL")"
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
check "p2pnvme loads" load p2pnvme
check "p2pnvme takes the VF $VF" bind p2pnvme "$VF"
check "nvme-pci still drives the PF" test "$(basename "$(readlink "$D/driver")")" = nvme
info=$(p2pctl --json nvme-info $N)
diag "$info"
check_eq "the VF's controller: 2 I/O queues (what was assigned)" "$(js io_queues "$info")" 2
suite_end

suite_begin sriov_io
# P2P on the VF: the namespace's bytes land in the BAR, and QEMU's trace
# shows the controller's DMA at bus addresses inside the BAR
BUS=$(p2pctl --json info | sed -n 's/.*"bus_addr":\([0-9]*\).*/\1/p')
hostcheck dma-mark
held p2pctl --json nvme-read $N 2048 262144; out=$held_out
hostcheck equal 262144 "bar0@$(js bar_offset "$out")" nvme0@$((2048 * 512))
released
check_eq "VF: read 256 KiB into p2pmem" "$?" 0
check_eq "VF: path p2p" "$(js path "$out")" p2p
hostcheck dma-in 0x4000000 "$BUS"
# the PF's block device reads while the VF moves 8 MiB into p2pmem
dd if="$BLK" of=/tmp/pf.bin bs=65536 skip=64 count=64 2>/dev/null &
pf=$!
vf_rc=0
for i in 1 2 3 4; do
	p2pctl nvme-read $N $((8192 + i * 4096)) 2097152 --batch 16 >/dev/null || vf_rc=1
done
wait $pf
check_eq "PF: 4 MiB read through nvme-pci while the VF reads" "$?" 0
check_eq "VF: 4 batches of 16 reads meanwhile" "$vf_rc" 0
hostcheck sha256 4194304 nvme0@$((64 * 65536)) "$(sha256sum /tmp/pf.bin | cut -d' ' -f1)"
# a write through the VF, read back through the PF (not cached there before)
check "VF: write 128 KiB of 0xa5 from p2pmem" \
	sh -c "p2pctl nvme-write $N 40960 131072 0xa5 >/dev/null"
hostcheck fill 131072 nvme0@$((40960 * 512)) 0xa5
dd if="$BLK" of=/tmp/pf.bin bs=4096 skip=5120 count=32 2>/dev/null
check_eq "PF: reads the VF's write" "$(od -An -tx1 -v /tmp/pf.bin | tr -s ' \n' '\n\n' | grep -v '^$' | sort -u)" a5
st=/sys/class/p2pnvme/p2pnvme0/stats
diag "VF: reads_p2p $(cat $st/reads_p2p), writes_p2p $(cat $st/writes_p2p)"
check "VF: the counters saw P2P reads and the write" test "$(cat $st/reads_p2p)" -gt 0 -a "$(cat $st/writes_p2p)" -gt 0
suite_end

# The physical function formats the shared namespace under the VF's
# p2pnvme (4 KiB LBAs: QEMU's LBA format 4). Nothing tells p2pnvme (it
# sends no Asynchronous Event Requests); its next reset identifies the
# namespace again (here the one after an FLR) and takes the controller out of service rather than
# serve the new format with its 512-byte LBA size.
suite_begin sriov_format
check "VF: p2pnvme serves 512-byte LBAs" \
	test "$(js lba_size "$(p2pctl --json nvme-info $N)")" = 512
check "PF: Format NVM of namespace 1 to 4 KiB LBAs (p2pvirt format)" \
	p2pvirt format "/dev/$CTRL" 1 4
i=0
while [ "$(cat /sys/block/"$(basename "$BLK")"/queue/logical_block_size)" != 4096 ] && [ $i -lt 50 ]; do
	sleep 0.1; i=$((i + 1))
done
check_eq "PF: nvme-pci sees 4 KiB LBAs" \
	"$(cat /sys/block/"$(basename "$BLK")"/queue/logical_block_size)" 4096
check "VF: a reset of its PCI function (FLR, sysfs reset)" \
	sh -c "echo 1 > /sys/bus/pci/devices/$VF/reset"
i=0
while ! grep -q '^# dead' "/sys/kernel/debug/p2pnvme/$VF/queues" && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
check "VF: the controller is out of service after it" grep -q '^# dead' "/sys/kernel/debug/p2pnvme/$VF/queues"
check "VF: and the log says why" sh -c "dmesg | grep -q '$VF: namespace 1 changed underneath (.* of 2^12 bytes, was .* of 2^9): out of service'"
p2pctl nvme-read $N 0 4096 >/dev/null 2>&1
check_eq "VF: a read is refused (ENODEV), never sent with the old LBA size" "$?" 19
check "PF: Format NVM back to 512-byte LBAs" p2pvirt format "/dev/$CTRL" 1 0
suite_end

suite_begin sriov_teardown
check "p2pnvme lets the VF go" sh -c "echo $VF > /sys/bus/pci/drivers/p2pnvme/unbind"
check "the VF disabled (sriov_numvfs 0)" sh -c "echo 0 > $D/sriov_numvfs"
check "the VF is gone" test ! -e "/sys/bus/pci/devices/$VF"
dd if="$BLK" of=/tmp/pf.bin bs=65536 skip=128 count=16 2>/dev/null
check_eq "PF: still reads" "$?" 0
hostcheck sha256 1048576 nvme0@$((128 * 65536)) "$(sha256sum /tmp/pf.bin | cut -d' ' -f1)"
check "rmmod p2pnvme p2pbar" sh -c "rmmod p2pnvme && rmmod p2pbar"
suite_end; exit $_any_failed
