#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Files into p2pmem (Documentation/files.rst, steps 1 and 3): byte ranges of
# files on ext4 and on xfs (reflink=1) read with O_DIRECT, pread and
# io_uring, into a /dev/p2pbar0 mapping and into host memory
# (tools/tests/p2pfile-test.c says what each case asserts), on a namespace
# the filesystem is made on:
#  - design 0, the reference: nvme-pci's namespace of the second
#    controller (the host's nvme1.img), the kernel's own O_DIRECT path;
#  - design 1: p2pnvme's block device (/dev/p2pnvme0n1, module parameter
#    disk=1) on the first controller (nvme0.img). Its parameter decides:
#    without it this run FAILS the files_design1 suite, saying so, since
#    design 1 is what files.rst builds next; it never passes silently.
# After each unmount the host reads the image: each kept file's extents by
# debugfs or xfs_db against the guest's FIEMAP, the bytes there against the
# pattern, and the filesystem by e2fsck -fn or xfs_repair -n.
# While the files are mounted the host checks p2pmem's copies in the BAR's
# backing file (bar0.mem), and that no race's canary ever reached it.
. /tests/lib.sh

NVME0=$(find_pci 1b36 0010)
NVME1=$(find_pci 1b36 0010 2)
IVSHMEM=$(find_pci 1af4 1110)
MNT=/mnt/files
FSES="ext4 xfs"
# Design 0 on the debug kernel: not run. Its path is the kernel's own
# (nvme-pci's O_DIRECT); what the suite owns on it, p2pbar's pages under
# that DMA, the debug kernel runs in the provider suite (p2pctl dma-read
# through /dev/p2pbar0 mappings) and the bench suite (the sysfs allocator's
# pages); design 0 itself runs on 7.2's base kernel.
DESIGN0=1
[ "$(flavour)" = debug ] && DESIGN0=
# What modinfo -p would list: busybox's modinfo needs a modules.dep the
# initramfs does not have, so the parm=/parmtype= entries of the module's
# .modinfo section are read as modinfo reads them.
DESIGN1=
if strings /lib/modules/p2pnvme.ko | grep -Eq '^parm(type)?=disk:'; then DESIGN1=1; fi

fs_suites() {
	for _fs in $FSES; do echo "guest.files_$1_${_fs}_mount guest.files_$1_$_fs guest.files_$1_${_fs}_host"; done
}
expect_suites guest.files_setup ${DESIGN0:+$(fs_suites nvme)} guest.files_design1 \
	${DESIGN1:+$(fs_suites p2pnvme) guest.files_design1_after}

# mkfs_on FS DEV: a fresh filesystem of 4 KiB blocks on the whole namespace
# (lib.sh: mkfs_4k), xfs's with reflinks (the races)
mkfs_on() {
	if [ "$1" = xfs ]; then mkfs_4k xfs "$2" "$MNT" -m reflink=1; else mkfs_4k "$1" "$2" "$MNT"; fi
}

# files_on DESIGN DEV IMG BASE: the suite on each filesystem made on DEV,
# the host reading IMG after each unmount. BASE: the file ids' first byte.
files_on() {
	_fo_base=$4
	for _fo_fs in $FSES; do
		_fo_base=$((_fo_base + 0x100))
		_fo_man=/tmp/files.$1.$_fo_fs.manifest
		rm -f "$_fo_man"
		suite_begin "files_$1_${_fo_fs}_mount"
		check "mkfs $_fo_fs on $2" mkfs_on "$_fo_fs" "$2"
		mkdir -p $MNT
		_fo_mounted=
		if mount -t "$_fo_fs" "$2" $MNT; then
			_fo_mounted=1
			pass "mount $_fo_fs from $2 on $MNT"
		else
			fail "mount $_fo_fs from $2 on $MNT"
		fi
		diag "$(grep " $MNT " /proc/mounts)"
		suite_end
		[ -n "$_fo_mounted" ] || continue
		echo "<<<KTAP-BEGIN guest.files_$1_$_fo_fs>>>"
		p2pfile-test "files_$1_$_fo_fs" $MNT /dev/p2pbar0 bar0 "$(printf '%#x' $_fo_base)" "$_fo_man" ||
			_any_failed=1
		echo "<<<KTAP-END>>>"

		suite_begin "files_$1_${_fo_fs}_host"
		check "umount $MNT ($_fo_fs on $2)" umount $MNT
		check "the block device's caches written and dropped" blockdev --flushbufs "$2"
		check_eq "the manifest lists the 7 files the suite keeps" "$(wc -l < "$_fo_man" 2>/dev/null)" 7
		while read -r _fo_name _fo_ino _fo_id _fo_size _fo_n _fo_fnv _fo_zeros; do
			diag "$_fo_name: inode $_fo_ino, file id $_fo_id, $_fo_size bytes, $_fo_n extents"
			hostcheck fsmap "$3" "$_fo_fs" "$_fo_ino" "$_fo_id" "$_fo_size" "$_fo_n" "$_fo_fnv"
			hostcheck fsdata "$3" "$_fo_fs" "$_fo_ino" "$_fo_id" "$_fo_size" "$_fo_zeros"
		done < "$_fo_man"
		hostcheck fsck "$3" "$_fo_fs"
		suite_end
	done
}

suite_begin files_setup
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM (the host's bar0)" bind p2pbar "$IVSHMEM"
check "/dev/p2pbar0 exists" test -c /dev/p2pbar0
BLK1=$(nvme_blk "$NVME1")
check "nvme-pci has $NVME1's namespace ($BLK1, the host's nvme1.img)" test -b "$BLK1"
if [ -z "$DESIGN0" ]; then
	diag "designs: 1 (p2pnvme's disk on $NVME0) only: design 0, nvme-pci's own path, is not repeated on the debug kernel"
elif [ -n "$DESIGN1" ]; then
	diag "designs: 0 (nvme-pci, $BLK1) and 1 (p2pnvme's disk on $NVME0)"
else
	diag "designs: 0 (nvme-pci, $BLK1) only: p2pnvme.ko has no disk parameter (files_design1 fails)"
fi
suite_end

[ -z "$DESIGN0" ] || files_on nvme "$BLK1" nvme1 0x1000

suite_begin files_design1
if [ -z "$DESIGN1" ]; then
	fail "design 1 NOT RUN: p2pnvme.ko has no 'disk' module parameter (modinfo -p), so there is no /dev/p2pnvme0n1 to make ext4 and xfs on; p2pnvme's block device (Documentation/files.rst, step 2) is not delivered yet"
	suite_end
else
	check "p2pnvme loads with disk=1" load p2pnvme disk=1
	check "p2pnvme takes $NVME0" bind p2pnvme "$NVME0"
	DISK=
	for _i in $(seq 100); do
		for _d in /dev/p2pnvme*n1; do [ -b "$_d" ] && DISK=$_d; done
		[ -n "$DISK" ] && break
		sleep 0.1
	done
	check "p2pnvme's disk is a block device (${DISK:-none})" test -b "$DISK"
	suite_end
	files_on p2pnvme "$DISK" nvme0 0x2000
	suite_begin files_design1_after
	check "p2pnvme lets go of $NVME0" sh -c "echo $NVME0 > /sys/bus/pci/drivers/p2pnvme/unbind"
	check "p2pnvme's disk is gone with it" test ! -e "$DISK"
	check "nvme-pci takes $NVME0 back" bind nvme "$NVME0"
	suite_end
fi
exit $_any_failed
