#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# p2pnvme's disk (disk=1, drivers/p2pnvme/disk.c): the namespace as the
# block device /dev/p2pnvme0n1. ext4 and xfs are made, mounted, written
# and verified on it; the host reads what a file's extent put in the NVMe
# image; a PCI function reset under writes leaves the mount working;
# unbinding while mounted and writing is bounded, the writer gets EIO and
# umount works; the char device's LBA rules hold (CAP_SYS_RAWIO, no
# writes while mounted), as uid 65534 and as root.
. /tests/lib.sh
expect_suites guest.disk_setup guest.disk_zeroes guest.disk_ext4 guest.disk_xfs guest.disk_p2p \
	guest.disk_lba_rules guest.disk_pci_reset guest.disk_unbind

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)
N=/dev/p2pnvme0
B=/dev/p2pnvme0n1
D=/sys/class/p2pnvme/p2pnvme0/disk
M=/mnt/p2pdisk
mkdir -p $M
# the debug kernel under TCG is 5-15x slower: bounds scale with it
scale=1
[ "$(flavour)" = debug ] && scale=8
# fio's random 4 KiB writes per filesystem: 16 MiB, a quarter of that on
# the debug kernel (the same paths under KASAN, a fourth of the I/Os: about
# a minute less per filesystem under TCG)
vmib=16
[ "$(flavour)" = debug ] && vmib=4
ctr() { cat $D/$1 2>/dev/null || echo 0; }
js() { echo "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

# first_extent FILE: "PHYSICAL_BLOCK EXTENTS" of FILE (FIEMAP, 4 KiB blocks)
first_extent() {
	filefrag -v -b4096 "$1" | awk '
		/^ *0:/ { sub(/\.\..*/, "", $4); p = $4 }
		/extents? found/ { n = $2 }
		END { print p, n }'
}

# write_file FILE MIB: MIB MiB of random bytes by O_DIRECT; prints its sha256
write_file() {
	head -c $(($2 << 20)) /dev/urandom > /tmp/disk.src &&
		dd if=/tmp/disk.src of="$1" bs=1M oflag=direct conv=fsync 2>/dev/null &&
		sha256sum < /tmp/disk.src | cut -d' ' -f1
}

suite_begin disk_setup
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
check "p2pnvme loads with disk=1" load p2pnvme disk=1
check "p2pnvme takes over $NVME" bind p2pnvme "$NVME"
wait_blk $B
check "$B is a block device" test -b $B
diag "$(dmesg | grep 'p2pnvme0n1:' | tail -n 1)"
check_eq "its size is the namespace's (64 MiB)" "$(blockdev --getsize64 $B)" $((64 << 20))
check_eq "logical block size 512" "$(cat /sys/block/p2pnvme0n1/queue/logical_block_size)" 512
check_eq "not rotational" "$(cat /sys/block/p2pnvme0n1/queue/rotational)" 0
check "no stable writes (never BLK_FEAT_STABLE_WRITES)" \
	grep -qx 0 /sys/block/p2pnvme0n1/queue/stable_writes
check "the disk's counters in sysfs" test -r $D/reads_host
check "the disk's vectors are its own" grep -q "p2pnvme:$NVME:disk" /proc/interrupts
# the image's pattern (qemu/mkimage.py) read through the block layer, O_DIRECT
r0=$(ctr reads_host)
check_eq "sector 2048 read by O_DIRECT is the image's" \
	"$(dd if=$B bs=512 skip=2048 count=1 iflag=direct 2>/dev/null | head -c 20)" "nvme0 LBA 0000002048"
check "counted as a read from host memory" [ "$(ctr reads_host)" -gt "$r0" ]
# the engine still serves the char device beside the disk
held p2pctl --json nvme-read $N 2048 262144; out=$held_out
hostcheck equal 262144 "bar0@$(echo "$out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')" nvme0@$((2048 * 512))
released; check_eq "the engine reads beside the disk (root)" "$?" 0
suite_end

# Write Zeroes through the block layer (fallocate ZERO_RANGE on the block
# device: blkdev_issue_zeroout()), its range not 4 KiB aligned: the host
# sees zeroes exactly there and the pattern on either side (the sector to
# LBA conversion of the command's SLBA and NLB)
suite_begin disk_zeroes
Q=/sys/block/p2pnvme0n1/queue
off=$((60 << 20))
check "Write Zeroes offered (QEMU's nvme sets ONCS.WZ)" [ "$(cat $Q/write_zeroes_max_bytes)" -gt 0 ]
check "1 MiB of 0x5a written at 60 MiB by O_DIRECT" \
	sh -c "xfs_io -d -c 'pwrite -S 0x5a $off 1m' -c fsync $B >/dev/null"
z0=$(ctr write_zeroes)
check "ZERO_RANGE of 1 MiB - 1 KiB from 60 MiB + 512" \
	xfs_io -c "fzero $((off + 512)) $(((1 << 20) - 1024))" $B
check "counted as Write Zeroes (not zeroes written as data)" [ "$(ctr write_zeroes)" -gt "$z0" ]
hostcheck fill 512 nvme0@$off 0x5a
hostcheck fill $(((1 << 20) - 1024)) nvme0@$((off + 512)) 0x00
hostcheck fill 512 nvme0@$((off + (1 << 20) - 512)) 0x5a
suite_end

# fs_suite NAME MKFS-COMMAND...: make, mount, write and verify (fio's
# verify= where fio is there), read back by O_DIRECT, the host's view of
# a file's extent in the image, unmount, the filesystem's own check
fs_suite() {
	fs=$1; shift
	suite_begin disk_$fs
	if ! has_fs $fs; then
		skip "$fs on $B" "the kernel has no $fs"
		suite_end; return
	fi
	check "mkfs $fs on $B" "$@"
	check "mount $fs" mount -t $fs $B $M
	w0=$(ctr writes_host); f0=$(ctr flushes)
	sum=$(write_file $M/one 1)
	check "a 1 MiB file written by O_DIRECT" [ -n "$sum" ]
	# fsync flushes a volatile write cache, and only that (VWC, BLK_FEAT_WRITE_CACHE)
	if [ "$(cat /sys/block/p2pnvme0n1/queue/write_cache)" = "write back" ]; then
		check "fsync flushed the controller's volatile write cache" [ "$(ctr flushes)" -gt "$f0" ]
	else
		check_eq "no flushes without a volatile write cache" "$(ctr flushes)" "$f0"
	fi
	echo 3 > /proc/sys/vm/drop_caches
	check_eq "read back by O_DIRECT, the same bytes" "$(read_sha $M/one)" "$sum"
	check "counted as writes from host memory" [ "$(ctr writes_host)" -gt "$w0" ]
	if command -v fio >/dev/null; then
		check "fio: $vmib MiB of random 4 KiB direct writes verified (crc32c)" \
			fio --name=v --directory=$M --size=${vmib}m --bs=4k --rw=randwrite --direct=1 \
			--ioengine=psync --verify=crc32c --do_verify=1 --verify_fatal=1 --minimal \
			--output=/tmp/disk.fio
		check "fio: 8 MiB by io_uring, QD16, 64 KiB, verified (sha256)" \
			fio --name=q --directory=$M --size=8m --bs=64k --rw=randwrite --direct=1 \
			--ioengine=io_uring --iodepth=16 --verify=sha256 --do_verify=1 --verify_fatal=1 \
			--minimal --output=/tmp/disk.fio
		# buffers 4 bytes into a page (the disk's dword DMA alignment):
		# five segments a request, the first and last not whole pages.
		# fio's buffers lie back to back, so two in flight share a
		# cacheline: the DMA layer's debugging (any driver's
		# dma_map_sgtable(), kernel/dma/debug.c add_dma_entry()) warns
		known_warning_begin add_dma_entry 1024 "cacheline tracking EEXIST" \
			"O_DIRECT buffers 4 bytes apart (the block layer allows dma_alignment 3, as for nvme-pci): DMA-API debugging's cacheline tracking sees two in-flight mappings share a cacheline; x86 DMA is coherent"
		check "fio: 4 MiB of 16 KiB direct writes from buffers at page + 4, verified" \
			fio --name=a --directory=$M --size=4m --bs=16k --rw=randwrite --direct=1 \
			--mem_align=4 --ioengine=io_uring --iodepth=8 --verify=crc32c --do_verify=1 \
			--verify_fatal=1 --minimal --output=/tmp/disk.fio
		known_warning_end add_dma_entry
	else
		skip "fio verify on $fs" "no fio (it could not be built on the machine that built the guest)"
	fi
	set -- $(first_extent $M/one)
	check_eq "the 1 MiB file is one extent" "$2" 1
	check "umount $fs" umount $M
	# the host reads the image where the filesystem put the file
	hostcheck sha256 1048576 nvme0@$(($1 * 4096)) "$sum"
	if [ $fs = ext4 ]; then
		check "e2fsck -fn finds it clean" e2fsck -fn $B
	else
		check "xfs_repair -n finds it clean" xfs_repair -n $B
	fi
	suite_end
}
fs_suite ext4 mkfs_4k ext4 $B $M
fs_suite xfs mkfs_4k xfs $B $M

# O_DIRECT from p2pmem (a /dev/p2pbar0 mapping fio pins with
# FOLL_PCI_P2PDMA, as BLK_FEAT_PCI_P2PDMA allows), counted by path
suite_begin disk_p2p
if ! has_fs ext4; then
	skip "O_DIRECT from p2pmem into a file" "the kernel has no ext4"
elif ! command -v fio >/dev/null; then
	skip "O_DIRECT from p2pmem into a file" "no fio (it could not be built on the machine that built the guest)"
else
	check "mkfs ext4" mkfs_4k ext4 $B $M
	check "mount ext4" mount -t ext4 $B $M
	p0=$(ctr writes_p2p); r0=$(ctr reads_p2p); b0=$(ctr bytes_p2p)
	check "fio: 4 MiB written from p2pmem by O_DIRECT and verified" \
		fio --name=p --filename=$M/p2p --size=4m --bs=64k --rw=write --direct=1 \
		--ioengine=psync --iomem=mmapshared:/dev/p2pbar0 --verify=crc32c --do_verify=1 \
		--verify_fatal=1 --minimal --output=/tmp/disk.fio
	check "the writes counted on the p2p path" [ "$(ctr writes_p2p)" -gt "$p0" ]
	check "the verifying reads counted on the p2p path" [ "$(ctr reads_p2p)" -gt "$r0" ]
	check "at least 4 MiB counted in bytes_p2p" [ $(($(ctr bytes_p2p) - b0)) -ge $((4 << 20)) ]
	check "umount" umount $M
fi
suite_end

# The char device's LBA paths while the disk exists: CAP_SYS_RAWIO, and
# no writes while the disk is claimed (mounted)
suite_begin disk_lba_rules
mode=$(stat -c %a $N)
chmod 0666 $N	# so that the open is not what refuses uid 65534
check "uid 65534: an LBA read is refused (EPERM, no CAP_SYS_RAWIO)" \
	fails_with "Operation not permitted" su -s /bin/sh nobody -c "p2pctl nvme-read $N 0 4096 --host"
check "uid 65534: an LBA write is refused (EPERM)" \
	fails_with "Operation not permitted" su -s /bin/sh nobody -c "p2pctl nvme-write $N 0 4096 0x11 --host"
chmod "$mode" $N
check "root: an LBA read works, the disk unmounted" p2pctl nvme-read $N 0 4096 --host
if has_fs ext4; then
	check "mkfs ext4" mkfs_4k ext4 $B $M
	check "mount ext4" mount -t ext4 $B $M
	a=$(p2pctl --json nvme-read $N 100000 4096 --host)
	check_eq "root: an LBA read works while mounted" "$?" 0
	check "root: an LBA write is refused while mounted (EBUSY)" \
		fails_with "Device or resource busy" p2pctl nvme-write $N 100000 4096 0x11 --host
	check "root: Write Zeroes too" \
		fails_with "Device or resource busy" p2pctl nvme-zeroes $N 100000 4096
	check_same "and the blocks are unchanged" "$(js fnv1a "$(p2pctl --json nvme-read $N 100000 4096 --host)")" \
		"$(js fnv1a "$a")"
	check "umount" umount $M
fi
check "root: an LBA write works once unmounted" p2pctl nvme-write $N 120000 4096 0x5a --host
hostcheck fill 4096 nvme0@$((120000 * 512)) 0x5a
suite_end

# A reset of the PCI function (FLR through sysfs) while a writer works on
# the mounted filesystem: the disk's requests in flight are cancelled,
# requeued and retried on the queues created again; the mount lives on
suite_begin disk_pci_reset
R=/sys/bus/pci/devices/$NVME/reset
if [ ! -e $R ]; then
	skip "PCI resets under a mounted filesystem" "the kernel knows no reset method for $NVME"
elif ! has_fs ext4; then
	skip "PCI resets under a mounted filesystem" "the kernel has no ext4"
else
	check "mkfs ext4" mkfs_4k ext4 $B $M
	check "mount ext4" mount -t ext4 $B $M
	c0=$(ctr cancelled); t0=$(ctr retries)
	rm -f /tmp/disk.stop /tmp/disk.rc
	(
		n=0
		while [ ! -e /tmp/disk.stop ]; do
			s=$(write_file $M/w$((n % 4)) 2) && [ "$(read_sha $M/w$((n % 4)))" = "$s" ]
			echo $? >> /tmp/disk.rc; n=$((n + 1))
		done
	) &
	bg=$!
	# fio keeps 16 writes in flight throughout (the shell writer above
	# spends most of its time on random bytes and sha256): none may fail.
	# It outlasts the three resets (about 2 s each on the debug kernel
	# under TCG) by seconds, not by a scaled minute
	fio_bg=
	if command -v fio >/dev/null; then
		fio --name=r --filename=$M/r --size=16m --bs=64k --rw=randwrite --direct=1 \
			--ioengine=io_uring --iodepth=16 --time_based --runtime=$((6 + 2 * scale)) \
			--minimal --output=/tmp/disk.rfio >/dev/null 2>&1 &
		fio_bg=$!
	fi
	sleep 1
	k=0
	for i in 1 2 3; do echo 1 > $R && k=$((k + 1)); sleep 1; done
	touch /tmp/disk.stop
	i=0; while kill -0 $bg 2>/dev/null && [ $i -lt $((300 * scale)) ]; do sleep 0.1; i=$((i + 1)); done
	check "the writer stops when asked" sh -c "! kill -0 $bg"
	wait $bg
	check_eq "3 PCI resets of $NVME with writes in flight" $k 3
	diag "$(wc -l < /tmp/disk.rc) files written and read back; cancelled $(($(ctr cancelled) - c0)), retried $(($(ctr retries) - t0))"
	if [ -n "$fio_bg" ]; then
		i=0; while kill -0 $fio_bg 2>/dev/null && [ $i -lt $((300 * scale)) ]; do sleep 0.1; i=$((i + 1)); done
		check "fio's writes end (none hangs across the resets)" sh -c "! kill -0 $fio_bg"
		wait $fio_bg
		check_eq "fio's 16-deep writes across the resets: none failed" "$?" 0
		# not a check: QEMU may complete all 16 before the queues go
		diag "with fio: cancelled $(($(ctr cancelled) - c0)), retried $(($(ctr retries) - t0))"
	else
		skip "16 writes in flight across the resets" "no fio (it could not be built on the machine that built the guest)"
	fi
	check_eq "every file written and read back whole" "$(grep -cvx 0 /tmp/disk.rc)" 0
	check "the writes went on" [ "$(grep -cx 0 /tmp/disk.rc)" -gt 0 ]
	check "the filesystem is still writable" sh -c "echo after > $M/after && sync"
	check "umount" umount $M
	check "e2fsck -fn finds it clean" e2fsck -fn $B
fi
suite_end

# Unbinding p2pnvme while the filesystem is mounted and written: bounded,
# the writer gets an I/O error, umount works, the block device goes; bound again,
# the filesystem mounts (its journal replayed) and checks clean
suite_begin disk_unbind
if ! has_fs ext4; then
	skip "unbind while mounted" "the kernel has no ext4"
else
	check "mkfs ext4" mkfs_4k ext4 $B $M
	check "mount ext4" mount -t ext4 $B $M
	rm -f /tmp/disk.err
	(
		while dd if=/dev/zero of=$M/u bs=64k count=64 oflag=direct conv=fsync 2>>/tmp/disk.err; do :; done
	) &
	bg=$!
	sleep 1
	t0=$(date +%s)
	echo "$NVME" > /sys/bus/pci/drivers/p2pnvme/unbind
	took=$(($(date +%s) - t0))
	check "unbind while mounted and written returns within $((10 * scale)) s ($took s)" \
		[ $took -le $((10 * scale)) ]
	i=0; while kill -0 $bg 2>/dev/null && [ $i -lt $((100 * scale)) ]; do sleep 0.1; i=$((i + 1)); done
	check "the writer ends" sh -c "! kill -0 $bg"
	wait $bg
	diag "writer: $(grep -v ' records \| bytes ' /tmp/disk.err | sort -u | head -n 2 | tr '\n' ';')"
	# EIO, or EROFS: a journal commit failing with the device first makes
	# jbd2 abort the journal, and ext4's next handle is refused with EROFS
	# before its shutdown (fs_bdev_mark_dead()) answers EIO
	check "the writer got EIO or EROFS" grep -Eq "Input/output error|Read-only file system" /tmp/disk.err
	check "$B is gone" test ! -e /sys/block/p2pnvme0n1
	check "umount works" umount $M
	check "p2pnvme takes $NVME again" bind p2pnvme "$NVME"
	wait_blk $B
	check "mount again (the journal replayed)" mount -t ext4 $B $M
	check "umount" umount $M
	check "e2fsck -fn finds it clean" e2fsck -fn $B
fi
check "unbind and rmmod" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind && rmmod p2pnvme"
suite_end; exit $_any_failed
