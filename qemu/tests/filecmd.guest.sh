#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# p2pnvme's file command (P2PNVME_IOC_FILE_SUBMIT, Documentation/files.rst
# step 4) on ext4 and xfs made on p2pnvme's disk (/dev/p2pnvme0n1,
# disk=1): tools/tests/p2pfilecmd-test.c says what its cases assert (bad
# input and each errno, reads into a registered p2pbar dma-buf and a
# /dev/p2pbar0 mapping checked by the host in the BAR's backing file, a
# write from a p2pbar dma-buf checked by the host in the image, batches,
# uid 65534, a closed fd); then the same command through io_uring
# (P2PNVME_URING_CMD_FILE_IO, files.rst step 5: tools/tests/p2pfileuring-test.c,
# each errno in the CQE, reads checked on the host, a write in the image,
# 256 in flight on plain, DEFER_TASKRUN and SQPOLL rings, an IOPOLL ring
# refused, the ring closed and its task gone with 256 in flight). Both run
# step 3's races, through the ioctl and through io_uring (truncate, punch,
# collapse, insert, reallocating writes, reflink, exchange range, move
# extents, each against a stream of file commands, 32 in flight on the
# ring, a canary that never reaches the BAR). p2pfilecmd-test also runs a
# swap file (writes ETXTBSY), max_inflight_mb (E2BIG; EAGAIN in
# p2pfileuring-test) and the counters (stats/file_*, disk/bytes_p2p)
# moved by exactly what known operations did. Then p2pctl read-file and write-file (bytes on the host,
# JSON, EREMOTEIO, EXDEV, the counters in nvme-stats); a stream of file commands on an open fd while the filesystem is
# lazily unmounted (it goes on, then the mount is gone). Once: the page
# cache after the command's check (p2pfilecmd-test --fallback, ext4 mounted
# nodelalloc, where chattr +j takes a file's direct I/O away: streams of
# 4 KiB reads and writes, REQUIRE_P2P or not, into and from a
# /dev/p2pbar0 mapping and a registered dma-buf while a child toggles the
# flag; each moved by the controller, as the disk's bytes_p2p says to the
# byte, or EREMOTEIO/EOPNOTSUPP, or path bounce without REQUIRE_P2P); an xfs
# realtime file (its data on nvme-pci's namespace of the second
# controller: EXDEV; SKIP on a kernel without CONFIG_XFS_RT); p2pbar
# unbound while file commands read into its dma-buf and a mapping
# (p2pfilecmd-test --bar-unbind: bounded, ENODEV or EFAULT, no DMA into the
# BAR once the unbind returned, by QEMU's trace); p2pbar unloaded and
# loaded again while p2pnvme stays (p2pfilecmd-test --bar-reload: rmmod
# p2pbar EAGAIN while a dma-buf of its own a file command read into lives,
# and it unloads once that is closed, p2pnvme holding nothing of p2pbar's;
# the ioctl and io_uring read into a new p2pbar dma-buf after, checked on
# the host); a stream while p2pnvme is unbound (bounded, it fails, no
# splat, umount works). An encrypted file (p2pfilecmd-test --crypt, ext4
# -O encrypt mounted inlinecrypt: blk-crypto's fallback, the CPU, en/decrypts
# its contents): REQUIRE_P2P into or from p2pmem EREMOTEIO at the check,
# nothing issued; without it path bounce, the plaintext read. Verity files
# (p2pfilecmd-test --verity, ext4 -O verity): no direct I/O, so every read
# EOPNOTSUPP at the check; fs-verity turned on under streams of reads,
# each moved whole or refused. Reads into the bench's GPU personalities
# through placeholder pages (p2pfilecmd-test --gpu), on ext4 and on xfs.
. /tests/lib.sh

IVSHMEM=$(find_pci 1af4 1110)
NVME0=$(find_pci 1b36 0010)
NVME1=$(find_pci 1b36 0010 2)	# nvme-pci's: the xfs realtime device
N=/dev/p2pnvme0
S=/sys/class/p2pnvme/p2pnvme0	# its counters: stats/file_*, disk/
B=/dev/p2pnvme0n1
MNT=/mnt/filecmd
OTHER=/tmp/filecmd-other	# the initramfs: another device
FSES="ext4 xfs"
scale=1
[ "$(flavour)" = debug ] && scale=8
js() { echo "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
# jdiff KEY: KEY of $st1 minus KEY of $st0 (p2pctl nvme-stats -o json), "?" without both
jdiff() {
	_jd0=$(js "$1" "$st0") _jd1=$(js "$1" "$st1")
	case "$_jd0,$_jd1" in
	*[!0-9,]* | ,* | *,) echo "?" ;;
	*) echo $((_jd1 - _jd0)) ;;
	esac
}

fs_suites() {
	for _fs in $FSES; do
		echo "guest.filecmd_${_fs}_mount guest.filecmd_$_fs guest.fileuring_$_fs"
		echo "guest.filecmd_${_fs}_p2pctl guest.filecmd_${_fs}_lazy"
	done
}
expect_suites guest.filecmd_setup $(fs_suites) guest.filecmd_fallback_mount \
	guest.filecmd_gpu_mount guest.filecmd_gpu guest.filecmd_gpu_after \
	guest.filecmd_gpu_xfs_mount guest.filecmd_gpu_xfs guest.filecmd_gpu_xfs_after \
	guest.filecmd_fallback guest.filecmd_fallback_after guest.filecmd_crypt_mount \
	guest.filecmd_verity_mount guest.filecmd_verity guest.filecmd_verity_after \
	guest.filecmd_crypt guest.filecmd_crypt_after guest.filecmd_xfs_rt \
	guest.filecmd_bar_setup guest.filecmd_bar_unbind guest.filecmd_bar_after \
	guest.filecmd_bar_reload guest.filecmd_unbind

# mkfs_on FS: a fresh FS on $B (lib.sh: mkfs_4k), xfs's with reflinks
mkfs_on() {
	if [ "$1" = xfs ]; then mkfs_4k xfs $B $MNT -m reflink=1; else mkfs_4k "$1" $B $MNT; fi
}

suite_begin filecmd_setup
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM (the host's bar0)" bind p2pbar "$IVSHMEM"
check "p2pnvme loads with disk=1" load p2pnvme disk=1
check "p2pnvme takes $NVME0 (the host's nvme0)" bind p2pnvme "$NVME0"
wait_blk $B 100
check "p2pnvme's disk $B is there" test -b $B
# so that the open is not what refuses uid 65534: the command's rules are
check "$N and /dev/p2pbar0 open to others" chmod 0666 $N /dev/p2pbar0
mkdir -p $MNT $OTHER
suite_end

base=0x1000
for fs in $FSES; do
	base=$((base + 0x100))
	suite_begin "filecmd_${fs}_mount"
	mounted=
	if ! has_fs "$fs"; then
		fail "the kernel has no $fs (qemu/configs/base.config has it since files.rst step 1)"
	elif mkfs_on "$fs" && mount -t "$fs" $B $MNT; then
		mounted=1
		pass "mkfs and mount $fs on $B"
		check "the mount point is open to uid 65534" chmod 0777 $MNT
	else
		fail "mkfs and mount $fs on $B"
	fi
	suite_end
	if [ -z "$mounted" ]; then
		for s in filecmd_$fs fileuring_$fs filecmd_${fs}_p2pctl filecmd_${fs}_lazy; do
			suite_begin "$s"
			fail "not run: $fs is not mounted"
			suite_end
		done
		continue
	fi
	echo "<<<KTAP-BEGIN guest.filecmd_$fs>>>"
	p2pfilecmd-test "filecmd_$fs" $MNT $N /dev/p2pbar0 bar0 nvme0 "$(printf '%#x' $base)" $OTHER ||
		_any_failed=1
	echo "<<<KTAP-END>>>"
	echo "<<<KTAP-BEGIN guest.fileuring_$fs>>>"
	p2pfileuring-test "fileuring_$fs" $MNT $N /dev/p2pbar0 bar0 nvme0 "$(printf '%#x' $base)" \
		$OTHER || _any_failed=1
	echo "<<<KTAP-END>>>"

	# p2pctl's commands; data: p2pfilecmd-test's 4 MiB file (id base + 1)
	suite_begin "filecmd_${fs}_p2pctl"
	st0=$(p2pctl -o json nvme-stats $N)
	held p2pctl -o json read-file $MNT/data --offset 1M --length 2M --batch 8 --require-p2p
	boff=$(js bar_offset "$held_out")
	check_eq "read-file into a registered p2pbar dma-buf: path" "$(js path "$held_out")" dmabuf
	check_eq "read-file: 2 MiB moved" "$(js bytes "$held_out")" 2097152
	if [ -n "$boff" ]; then
		hostcheck pattern 2097152 "bar0@$boff" "$(printf '%#x' $((base + 1)))" 1048576
	else
		fail "read-file said no bar_offset: '$held_out'"
	fi
	check "read-file ends well" released
	st1=$(p2pctl -o json nvme-stats $N)
	check_eq "nvme-stats: 8 transfers, 2 MiB more on the file command's dmabuf path, the disk's P2P bytes by as much" \
		"$(jdiff file_reads_dmabuf) $(jdiff file_bytes_dmabuf) $(jdiff disk_bytes_p2p)" \
		"8 2097152 2097152"
	want=$(head -c 1048576 /dev/zero | tr '\0' '\167' | sha256sum | cut -d' ' -f1)
	: > $MNT/tool
	out=$(p2pctl -o json write-file $MNT/tool 0x77 --length 1M --batch 4 --from p2pbar)
	check_eq "write-file from p2pmem: path" "$(js path "$out")" dmabuf
	out=$(p2pctl -o json read-file $MNT/tool --length 1M --to host)
	check_eq "read back into host memory: path" "$(js path "$out")" host
	check_eq "read back: the bytes written (sha256)" "$(js sha256 "$out")" "$want"
	check_eq "read back by an ordinary read, not the file command (sha256sum)" \
		"$(sha256sum < $MNT/tool | cut -d' ' -f1)" "$want"
	jsoncheck read-file command,file,device,offset,length,bytes,entries,memory,path,bar_offset,fnv1a,sha256 \
		read-file $MNT/data --length 64k
	r0=$(cat $S/stats/file_refused_p2p)
	p2pctl read-file $MNT/data --length 4k --to host --require-p2p 2>/dev/null
	check_eq "read-file --to host --require-p2p: exit 121 (EREMOTEIO)" $? 121
	check_eq "... counted: stats/file_refused_p2p +1" "$(cat $S/stats/file_refused_p2p)" $((${r0:-0} + 1))
	st=$(p2pctl -o json nvme-stats $N)
	check_eq "nvme-stats -o json: the file command's and the disk's counters as sysfs has them" \
		"$(js file_bytes_dmabuf "$st") $(js file_refused_p2p "$st") $(js disk_bytes_p2p "$st")" \
		"$(cat $S/stats/file_bytes_dmabuf) $(cat $S/stats/file_refused_p2p) $(cat $S/disk/bytes_p2p)"
	jsoncheck nvme-stats device,reads_p2p,file_reads_p2p,file_bytes_dmabuf,file_errors,file_refused_inflight,disk_reads_p2p,disk_bytes_p2p,disk_cancelled \
		nvme-stats $N
	p2pctl nvme-stats $N > /tmp/filecmd.stats
	check "nvme-stats shows the file command's counters and the disk's" \
		sh -c "grep -q '^file command' /tmp/filecmd.stats && grep -q '^disk ' /tmp/filecmd.stats"
	while read -r l; do diag "$l"; done < /tmp/filecmd.stats
	head -c 65536 /dev/zero > $OTHER/x
	p2pctl read-file $OTHER/x --length 4k --to host 2>/dev/null
	check_eq "read-file of a file on another device: exit 18 (EXDEV)" $? 18
	suite_end

	# a stream on an open fd (/proc/self/fd/9) while the filesystem is lazily
	# unmounted: 8 reads of 4 MiB, the unmount after the first
	suite_begin "filecmd_${fs}_lazy"
	rm -f /tmp/filecmd.lazy
	(
		exec 9< $MNT/data
		i=0
		while [ $i -lt 8 ]; do
			p2pctl read-file /proc/self/fd/9 --length 4M --batch 16 --to host >/dev/null ||
				exit 1
			i=$((i + 1))
			echo $i > /tmp/filecmd.lazy
		done
	) &
	bg=$!
	for _i in $(seq 100); do [ -s /tmp/filecmd.lazy ] && break; sleep 0.05; done
	check "umount -l $MNT while the stream reads" umount -l $MNT
	check "the mount point is detached at once" sh -c "! grep -q ' $MNT ' /proc/mounts"
	wait $bg
	check_eq "every read of the stream succeeds, before and after (8 of 8)" \
		"$? $(cat /tmp/filecmd.lazy 2>/dev/null)" "0 8"
	check "the disk is let go once the stream closed its fd (mkfs may claim it)" \
		sh -c "for i in \$(seq 50); do /usr/sbin/mke2fs -q -F -t ext4 $B 2>/dev/null && exit 0; sleep 0.1; done; exit 1"
	suite_end
done

# ext4_suites NAME FLAG ID_BASE MOUNT_OPTION WHAT [MKFS_OPTION...]: three
# suites: NAME_mount (ext4 made on $B with the MKFS_OPTIONs and mounted -o
# MOUNT_OPTION, its case "WHAT on $B"), NAME (p2pfilecmd-test FLAG on it, file
# ids from ID_BASE) and NAME_after (the umount)
ext4_suites() {
	es_name=$1 es_flag=$2 es_id=$3 es_mo=$4 es_what=$5
	shift 5
	suite_begin "${es_name}_mount"
	es_mounted=
	if ! has_fs ext4; then
		fail "the kernel has no ext4"
	elif mkfs_4k ext4 $B $MNT "$@" && mount -t ext4 -o "$es_mo" $B $MNT; then
		es_mounted=1
		pass "$es_what on $B"
	else
		fail "$es_what on $B"
	fi
	suite_end
	if [ -n "$es_mounted" ]; then
		echo "<<<KTAP-BEGIN guest.$es_name>>>"
		p2pfilecmd-test "$es_flag" "$es_name" $MNT $N /dev/p2pbar0 bar0 nvme0 "$es_id" $OTHER ||
			_any_failed=1
		echo "<<<KTAP-END>>>"
	else
		suite_begin "$es_name"
		fail "not run: ext4 is not mounted"
		suite_end
	fi
	suite_begin "${es_name}_after"
	if [ -n "$es_mounted" ]; then
		check "umount" umount $MNT
	else
		skip "umount" "ext4 was not mounted"
	fi
	suite_end
}

# Reads into GPU memory through placeholder pages (files.rst step 6): the
# bench's personalities (p2pgpu) on the profile's last ivshmem function,
# p2pbar's dma-bufs forced through placeholders (file_placeholder_force),
# on ext4 (suites filecmd_gpu*) and on xfs (filecmd_gpu_xfs*); the pool's
# slots all free again afterwards (debugfs).
nbar=0
while find_pci 1af4 1110 $((nbar + 1)) >/dev/null; do nbar=$((nbar + 1)); done
GPU=$(find_pci 1af4 1110 $nbar)
GPU_BAR=bar$((nbar - 1))
# gpu_suites FS NAME: NAME_mount, NAME (p2pfilecmd-test --gpu), NAME_after
gpu_suites() {
	gs_fs=$1 gs_name=$2
	suite_begin "${gs_name}_mount"
	gp_mounted=
	if [ "$nbar" -lt 2 ]; then
		fail "a second ivshmem function for p2pgpu (the profile has $nbar)"
	elif ! { grep -q '^p2pgpu ' /proc/modules || load p2pgpu; } || ! bind p2pgpu "$GPU"; then
		fail "p2pgpu loads and binds to ivshmem $GPU (the host's $GPU_BAR)"
	elif ! has_fs $gs_fs; then
		fail "the kernel has no $gs_fs"
	elif mkfs_on $gs_fs && mount -t $gs_fs $B $MNT; then
		gp_mounted=1
		pass "p2pgpu bound to ivshmem $GPU (the host's $GPU_BAR); mkfs and mount $gs_fs on $B"
	else
		fail "mkfs and mount $gs_fs on $B"
	fi
	suite_end
	if [ -n "$gp_mounted" ]; then
		echo "<<<KTAP-BEGIN guest.$gs_name>>>"
		p2pfilecmd-test --gpu "$GPU_BAR" "$GPU" $gs_name $MNT $N /dev/p2pbar0 bar0 nvme0 0x1c00 \
			$OTHER || _any_failed=1
		echo "<<<KTAP-END>>>"
	else
		suite_begin $gs_name
		fail "not run: p2pgpu or $gs_fs is not there"
		suite_end
	fi
	suite_begin "${gs_name}_after"
	if [ -n "$gp_mounted" ]; then
		PH=/sys/kernel/debug/p2pnvme/$NVME0/placeholders
		check "debugfs placeholders: the pool exists (the reads took slots)" \
			sh -c "grep -q '^pool [1-9]' $PH"
		check_eq "debugfs placeholders: every slot free again, no transfer active" \
			"$(sed -n 's/^pool \([0-9]*\) .*/\1/p' $PH) $(sed -n 's/^active //p' $PH)" \
			"$(sed -n 's/^free //p' $PH) 0"
		while read -r l; do diag "$l"; done < $PH
		st=$(p2pctl -o json nvme-stats $N)
		check "stats/file_placeholder_reads counted the reads" \
			[ "$(cat $S/stats/file_placeholder_reads)" -gt 0 ]
		check_eq "nvme-stats -o json: file_placeholder_reads as sysfs has it" \
			"$(js file_placeholder_reads "$st")" "$(cat $S/stats/file_placeholder_reads)"
		check "nvme-stats names it" \
			sh -c "p2pctl nvme-stats $N | grep -q 'placeholder_reads [1-9]'"
		check_eq "file_placeholder_force is off again" \
			"$(cat /sys/module/p2pnvme/parameters/file_placeholder_force)" N
		check "umount" umount $MNT
		check "p2pgpu unbinds" sh -c "echo $GPU > /sys/bus/pci/drivers/p2pgpu/unbind"
	else
		skip "umount" "$gs_fs was not mounted"
	fi
	suite_end
}
gpu_suites ext4 filecmd_gpu
gpu_suites xfs filecmd_gpu_xfs

# The page cache after the command's check (Documentation/files.rst, step
# 8): ext4 mounted nodelalloc, the one mode where chattr +j (data
# journalling) takes a file's direct I/O away (with delalloc ext4 ignores
# the flag); p2pfilecmd-test --fallback races the flag against streams of
# file commands
ext4_suites filecmd_fallback --fallback 0x1e00 nodelalloc "mkfs and mount ext4 -o nodelalloc"

# Verity files (fs-verity, ext4 made with -O verity), which have no direct
# I/O: p2pfilecmd-test --verity refuses their reads EOPNOTSUPP at the
# check, and turns fs-verity on for fresh files under streams of
# REQUIRE_P2P reads (each moved whole, or refused); SKIP on a kernel
# without fs-verity
ext4_suites filecmd_verity --verity 0x1b00 defaults "mkfs -O verity and mount ext4" -O verity

# An encrypted file (Documentation/files.rst, step 4): ext4 made with
# -O encrypt and mounted inlinecrypt, where a file of an fscrypt directory
# has direct I/O through blk-crypto's fallback, the CPU en/decrypting its
# contents (the disk has no inline encryption); p2pfilecmd-test --crypt:
# REQUIRE_P2P into or from p2pmem EREMOTEIO at the check, bounce without
# it (the plaintext read); SKIP on a kernel without inline encryption
ext4_suites filecmd_crypt --crypt 0x1d00 inlinecrypt \
	"mkfs -O encrypt and mount ext4 -o inlinecrypt" -O encrypt

# An xfs realtime file: its data is on the realtime device, nvme-pci's
# namespace of the second controller, where the command's checks on the
# data device would say nothing: EXDEV before anything moves
# (FS_XFLAG_REALTIME, drivers/p2pnvme/file.c). A file of the same
# filesystem on the data device reads.
suite_begin filecmd_xfs_rt
RT=$(nvme_blk "$NVME1")
if ! has_fs xfs; then
	fail "the kernel has no xfs"
elif [ ! -b "$RT" ]; then
	fail "no realtime device: nvme-pci has no namespace of $NVME1 ('$RT')"
elif ! mkfs_4k xfs $B $MNT -m reflink=0 -r rtdev="$RT"; then
	fail "mkfs.xfs with the realtime device $RT on $B"
else
	rt_n0=$(dmesg | grep -c "Not built with CONFIG_XFS_RT")
	if mount -t xfs -o rtdev="$RT" $B $MNT; then
		pass "mount xfs from $B with the realtime device $RT"
		: > $MNT/rt
		check "an empty file made realtime (xfs_io chattr +r)" xfs_io -c "chattr +r" $MNT/rt
		check "its flags say so (xfs_io lsattr -v: realtime)" \
			sh -c "xfs_io -c 'lsattr -v' $MNT/rt | grep -q realtime"
		check "64 KiB written to it (xfs_io pwrite, fsync)" \
			sh -c "xfs_io -c 'pwrite -S 0x5a 0 64k' -c fsync $MNT/rt >/dev/null"
		check "64 KiB written to a file on the data device" \
			dd if=/dev/urandom of=$MNT/plain bs=64k count=1 conv=fsync status=none
		rt_sum=$(sha256sum < $MNT/rt | cut -d' ' -f1)
		p2pctl read-file $MNT/plain --length 64k --to host >/dev/null 2>&1
		check_eq "the file on the data device: read-file reads it (exit 0)" $? 0
		p2pctl read-file $MNT/rt --length 64k --to host >/dev/null 2>&1
		check_eq "the realtime file: read-file refused, exit 18 (EXDEV)" $? 18
		p2pctl write-file $MNT/rt 0x77 --length 64k --from host >/dev/null 2>&1
		check_eq "the realtime file: write-file refused, exit 18 (EXDEV)" $? 18
		check_same "the realtime file's bytes are as before (sha256sum)" \
			"$(sha256sum < $MNT/rt | cut -d' ' -f1)" "$rt_sum"
		check "umount" umount $MNT
	elif [ "$(dmesg | grep -c "Not built with CONFIG_XFS_RT")" -gt "$rt_n0" ]; then
		skip "an xfs realtime file refused by the command (EXDEV)" \
			"the kernel lacks CONFIG_XFS_RT (xfs: 'Not built with CONFIG_XFS_RT'; qemu/configs/base.config does not set it)"
	else
		fail "mount -t xfs -o rtdev=$RT $B $MNT"
	fi
fi
suite_end

# p2pbar unbound while file commands read into its dma-buf and a mapping
# (p2pfilecmd-test --bar-unbind); bound again after
suite_begin filecmd_bar_setup
bar_mounted=
if has_fs ext4 && mkfs_4k ext4 $B $MNT && mount -t ext4 $B $MNT; then
	bar_mounted=1
	pass "mkfs and mount ext4 on $B"
else
	fail "mkfs and mount ext4 on $B"
fi
suite_end
if [ -n "$bar_mounted" ]; then
	echo "<<<KTAP-BEGIN guest.filecmd_bar_unbind>>>"
	p2pfilecmd-test --bar-unbind "$IVSHMEM" filecmd_bar_unbind $MNT $N /dev/p2pbar0 bar0 nvme0 \
		0x1f00 $OTHER || _any_failed=1
	echo "<<<KTAP-END>>>"
else
	suite_begin filecmd_bar_unbind
	fail "not run: ext4 is not mounted"
	suite_end
fi
suite_begin filecmd_bar_after
check "p2pbar binds to $IVSHMEM again" bind p2pbar "$IVSHMEM"
check "/dev/p2pbar0 is back" test -c /dev/p2pbar0
suite_end

# p2pbar unloaded and loaded again under p2pnvme, around file commands into
# its dma-bufs (p2pfilecmd-test --bar-reload); it leaves p2pbar loaded and bound
if [ -n "$bar_mounted" ]; then
	echo "<<<KTAP-BEGIN guest.filecmd_bar_reload>>>"
	p2pfilecmd-test --bar-reload "$IVSHMEM" /lib/modules/p2pbar.ko filecmd_bar_reload $MNT $N \
		/dev/p2pbar0 bar0 nvme0 0x1e00 $OTHER || _any_failed=1
	echo "<<<KTAP-END>>>"
else
	suite_begin filecmd_bar_reload
	fail "not run: ext4 is not mounted"
	suite_end
fi

# p2pnvme unbound under a stream of file commands: bounded, errors, umount works
suite_begin filecmd_unbind
[ -z "$bar_mounted" ] || check "umount the p2pbar suites' ext4" umount $MNT
if ! has_fs ext4; then
	fail "the kernel has no ext4"
else
	check "mkfs and mount ext4" sh -c "/usr/sbin/mke2fs -q -F -t ext4 -b 4096 $B && mount -t ext4 $B $MNT"
	check "a 4 MiB file" dd if=/dev/urandom of=$MNT/s bs=1M count=4 conv=fsync status=none
	rm -f /tmp/filecmd.err
	(
		i=0
		while [ $i -lt $((400 * scale)) ] &&
		      p2pctl read-file $MNT/s --length 4M --batch 32 >/dev/null 2>>/tmp/filecmd.err; do
			i=$((i + 1))
		done
		[ $i -lt $((400 * scale)) ]	# ended by a failure
	) &
	bg=$!
	sleep 1
	t0=$(date +%s)
	echo "$NVME0" > /sys/bus/pci/drivers/p2pnvme/unbind
	took=$(($(date +%s) - t0))
	check "unbind under the stream returns within $((10 * scale)) s ($took s)" \
		[ $took -le $((10 * scale)) ]
	i=0; while kill -0 $bg 2>/dev/null && [ $i -lt $((100 * scale)) ]; do sleep 0.1; i=$((i + 1)); done
	check "the stream ends" sh -c "! kill -0 $bg"
	wait $bg
	check_eq "the stream ended by a failed transfer" $? 0
	diag "stream: $(sort -u /tmp/filecmd.err | head -n 3 | tr '\n' ';')"
	check "$B is gone" test ! -e /sys/block/p2pnvme0n1
	check "umount works" umount $MNT
fi
check "rmmod p2pnvme" rmmod p2pnvme
suite_end; exit $_any_failed
