#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The file benchmark (Documentation/files.rst, step 7; scripts/file-benchmark.sh
# reads the P2P-BENCH lines, scripts/cpu-insn.sh --file counts their
# instructions): one file, the same 32 MiB of random bytes on a filesystem
# (ext4, or p2pbenchfs=xfs) made on p2pnvme's disk (/dev/p2pnvme0n1, disk=1,
# the host's nvme0) and on one made on nvme-pci's namespace of the twin
# controller (nvme1), read at random offsets into p2pmem of the same BAR, 4
# KiB at QD32 and 1 MiB at QD8, one thread, the same offsets for every row
# of p2pnvme's file (p2pbench file):
#  (1) file-cmd        p2pnvme's file command through io_uring into a
#                      registered p2pbar dma-buf; file-cmd-ioctl, the same
#                      through P2PNVME_IOC_FILE_SUBMIT batches of QD
#  (7) file-cmd-placeholders  (1) with p2pnvme's bench-only
#                      file_placeholder_force at 1: the same dma-buf
#                      through placeholder pages, as GPU memory goes
#                      (files.rst, "What decides (b)"); 0 again after
#                      each run, failed or not
#  (2) file-disk       O_DIRECT io_uring reads of the file on p2pnvme's disk
#                      into a /dev/p2pbar0 mapping
#  (3) file-nvme-pci   the same of the file on nvme-pci's namespace: the
#                      baseline
#  (4) file-bounce-nvme-pci  that file by O_DIRECT into host memory, each
#                      read then copied into a /dev/p2pbar0 mapping
#  (5) extent-disk     p2pnvme's disk read by O_DIRECT at the file's extents
#                      (no filesystem: (2) minus (5) is the filesystem's
#                      mapping per I/O)
#  (6) extent-engine   the engine's registered reads of the file's LBAs (no
#                      filesystem, no disk: (1) minus (6) is what the file
#                      path costs over the LBA engine)
# PASSES interleaved passes of SECS seconds a run. Each run fails unless
# every read moved its bytes on the path meant, p2pnvme's disk counted them
# (bytes_p2p) or nvme-pci's device read them, and each buffer slot holds the
# source's bytes at the offset it last read (--verify); (7) unless every
# read went through placeholders (stats/file_placeholder_reads), (1) and
# (1') unless none did.
. /tests/lib.sh
expect_suites guest.filebench

SECS=${p2pbenchsecs:-3}
PASSES=${p2pbenchpasses:-3}
FS=${p2pbenchfs:-ext4}
B=/dev/p2pnvme0n1
M0=/mnt/filebench-p2pnvme
M1=/mnt/filebench-nvme
SRC=/tmp/filebench.src
FORCE=/sys/module/p2pnvme/parameters/file_placeholder_force

# placeholders COMMAND...: COMMAND (a run of row (7)) with
# file_placeholder_force 1, set back to 0 after whether it failed or not;
# COMMAND's status
placeholders() {
	if ! echo 1 > $FORCE; then
		fail "file_placeholder_force set to 1 for: $*"
		return 1
	fi
	"$@"
	_ph_rc=$?
	echo 0 > $FORCE || fail "file_placeholder_force set back to 0 after: $*"
	return $_ph_rc
}

# mkfs_on DEV MNT: a fresh $FS of 4 KiB blocks on DEV (lib.sh: mkfs_4k),
# ext4's inode tables and journal written now (no lazy init writing beside
# the runs)
mkfs_on() {
	if [ "$FS" = ext4 ]; then
		mkfs_4k ext4 "$1" "$2" -E lazy_itable_init=0,lazy_journal_init=0
	else
		mkfs_4k "$FS" "$1" "$2"
	fi
}

bench_pair filebench disk
check "the kernel has $FS" grep -qw "$FS" /proc/filesystems
mkdir -p $M0 $M1
check "mkfs $FS on $B" mkfs_on $B $M0
check "mkfs $FS on $BLK1" mkfs_on "$BLK1" $M1
check "mount $FS from $B (noatime)" mount -t "$FS" -o noatime $B $M0
check "mount $FS from $BLK1 (noatime)" mount -t "$FS" -o noatime "$BLK1" $M1
check "32 MiB of random bytes in $SRC" sh -c "head -c $((32 << 20)) /dev/urandom > $SRC"
want=$(sha256sum < $SRC | cut -d' ' -f1)
for m in $M0 $M1; do
	check "the file on $m written by O_DIRECT, synced" \
		dd if=$SRC of=$m/f bs=1M oflag=direct conv=fsync status=none
	check_same "$m/f read back by O_DIRECT: the source's bytes (sha256)" "$(read_sha $m/f)" "$want"
	diag "$m/f: $(filefrag $m/f 2>&1)"
done
F0=$M0/f
F1=$M1/f

clock_mark start
# Instruction counts (a boot with P2P_INSN=1, scripts/cpu-insn.sh --file):
# each measured run a window of its own, window 1 and the last the
# counting's calibration (lib.sh: insn_cal, bench_run)
insn_cal
# warm up (TCG translates code on first use), results discarded
for shape in "4096 32" "1048576 8"; do
	set -- $shape
	p2pbench file cmd $F0 $1 0.3 $2 >/dev/null
	placeholders p2pbench file cmd-placeholders $F0 $1 0.3 $2 >/dev/null
	p2pbench file cmd-ioctl $F0 $1 0.3 $2 >/dev/null
	p2pbench file odirect $F0 $1 0.3 $2 >/dev/null
	p2pbench file odirect $F1 $1 0.3 $2 >/dev/null
	p2pbench file bounce $F1 $1 0.3 $2 >/dev/null
	p2pbench file extent-disk $F0 $1 0.3 $2 --dev $B >/dev/null
	p2pbench file extent-engine $F0 $1 0.3 $2 >/dev/null
done
# PASSES interleaved passes (scripts/file-benchmark.sh takes each figure's
# median, cpu-insn.sh pools them); p2pbenchpasses= on the command line
for pass in $(seq "$PASSES"); do
	for shape in "4096 32" "1048576 8"; do
		set -- $shape
		bench_run file cmd $F0 $1 "$SECS" $2 --verify $SRC
		placeholders bench_run file cmd-placeholders $F0 $1 "$SECS" $2 --verify $SRC
		bench_run file cmd-ioctl $F0 $1 "$SECS" $2 --verify $SRC
		bench_run file odirect $F0 $1 "$SECS" $2 --verify $SRC
		bench_run file odirect $F1 $1 "$SECS" $2 --verify $SRC
		bench_run file bounce $F1 $1 "$SECS" $2 --verify $SRC
		bench_run file extent-disk $F0 $1 "$SECS" $2 --dev $B --verify $SRC
		bench_run file extent-engine $F0 $1 "$SECS" $2 --verify $SRC
	done
done
insn_cal
clock_mark end
check_eq "file_placeholder_force is off again" "$(cat $FORCE)" N
PH=/sys/kernel/debug/p2pnvme/$NVME0/placeholders
check "debugfs placeholders: the pool exists (row (7) took slots)" sh -c "grep -q '^pool [1-9]' $PH"
check_eq "debugfs placeholders: every slot free again, no transfer active" \
	"$(sed -n 's/^pool \([0-9]*\) .*/\1/p' $PH) $(sed -n 's/^active //p' $PH)" \
	"$(sed -n 's/^free //p' $PH) 0"
while read -r l; do diag "$l"; done < $PH
check "umount $M0" umount $M0
check "umount $M1" umount $M1
bench_unload "$NVME0"
suite_end; exit $_any_failed
