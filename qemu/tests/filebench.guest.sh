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
#  (3f) fio-file-nvme-pci  fio (ioengine io_uring, direct=1) of the file on
#                      nvme-pci's namespace into a /dev/p2pbar0 mapping
#                      (iomem=mmapshared): (3) as a tool this suite does not
#                      own measures it; (2f) fio-file-disk, the same of the
#                      file on p2pnvme's disk
# The file is written by fio in its verify format (crc32c, a header with
# its offset in every 4 KiB block): each fio row is run again with
# verify=crc32c, fio checking every block it read into p2pmem.
# PASSES interleaved passes of SECS seconds a run. Each run fails unless
# every read moved its bytes on the path meant, p2pnvme's disk counted them
# (bytes_p2p) or nvme-pci's device read them, and each buffer slot holds the
# source's bytes at the offset it last read (--verify); (7) unless every
# read went through placeholders (stats/file_placeholder_reads), (1) and
# (1') unless none did; a fio row unless fio reported no error, the disk
# counted every byte or nvme-pci's device read every sector, and its
# verifying run found every block's checksum and offset right.
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

# the fio rows: the file's block device's counter of what it read, in
# bytes: p2pnvme's disk its bytes_p2p, another its sectors read x 512
dev_read() {
	case $1 in
	"$B") cat "/sys/class/block/${B#/dev/}/device/disk/bytes_p2p" ;;
	*) echo $(($(awk '{ print $3 }' "/sys/class/block/${1#/dev/}/stat") * 512)) ;;
	esac
}

# fio_json: the job's error and its reads (total_ios) from /tmp/fio.json,
# fio's JSON output, in _fr_e and _fr_n (empty where it has none)
fio_json() {
	_fr_e=$(sed -n 's/^ *"error" : \([0-9]*\),*$/\1/p' /tmp/fio.json | head -n 1)
	_fr_n=$(sed -n '/"read" : {/,/}/s/^ *"total_ios" : \([0-9]*\),*$/\1/p' /tmp/fio.json | head -n 1)
}

# fio_row NAME FILE DEV BS QD: one timed fio job (one thread, io_uring,
# O_DIRECT random reads of FILE, on block device DEV, into a mapping of
# /dev/p2pbar0), its I/O in a window of its own (insn_win; fio runs its
# prerun right before its first I/O and its postrun after its last) and
# the guest's busy CPU time over the same stretch; a P2P-FIO line with
# fio's JSON for the host (scripts/file-bench.py, cpu-insn.py), then
# checks: fio's error 0, DEV read every byte (p2pnvme's disk: exactly).
# FIO_VERIFY=1: a short untimed run of the same job with verify=crc32c
# instead, fio checking each 4 KiB block it read (the file is fio's
# verify format), no line.
fio_row() {
	_fr_name=$1 _fr_file=$2 _fr_dev=$3 _fr_bs=$4 _fr_qd=$5
	set -- --output-format=json --name=r --filename="$_fr_file" --ioengine=io_uring --direct=1 \
		--rw=randread --bs="$_fr_bs" --iodepth="$_fr_qd" --size=32M --norandommap --randrepeat=0 \
		--iomem=mmapshared:/dev/p2pbar0 --lat_percentiles=1
	if [ "${FIO_VERIFY:-0}" = 1 ]; then
		fio "$@" --time_based --runtime=1 --verify=crc32c --verify_interval=4096 \
			--verify_fatal=1 >/tmp/fio.json 2>/tmp/fio.err
		_fr_rc=$?
		fio_json
		check_eq "fio $_fr_name, $_fr_bs QD$_fr_qd, verify=crc32c: every block read into p2pmem has its checksum and offset" \
			"$_fr_rc ${_fr_e:-none} $([ "${_fr_n:-0}" -gt 0 ] && echo read)" "0 0 read"
		[ "$_fr_rc" = 0 ] || diag "$(head -c 400 /tmp/fio.err)"
		return
	fi
	insn_win
	_fr_w=$insn_w
	# fio hands each to sh -c (system(3)) with an output redirection
	# appended, which takes the last command: a true of its own
	_fr_pre="head -n 1 /proc/stat > /tmp/fio.b0"
	_fr_post="head -n 1 /proc/stat > /tmp/fio.b1"
	if [ "$_fr_w" != null ]; then
		_fr_pre="$_fr_pre; p2pbench mark $_fr_w start"
		_fr_post="p2pbench mark $_fr_w end; $_fr_post"
	fi
	_fr_pre="$_fr_pre; true"
	_fr_post="$_fr_post; true"
	rm -f /tmp/fio.b0 /tmp/fio.b1
	_fr_d0=$(dev_read "$_fr_dev")
	fio "$@" --time_based --runtime="$SECS" "--exec_prerun=$_fr_pre" "--exec_postrun=$_fr_post" \
		>/tmp/fio.json 2>/tmp/fio.err
	_fr_rc=$?
	_fr_d1=$(dev_read "$_fr_dev")
	# the guest's busy time (busy(): user..softirq) from the two snapshots
	_fr_busy=$(cat /tmp/fio.b0 /tmp/fio.b1 2>/dev/null |
		awk '/^cpu / { b[n++] = $2 + $3 + $4 + $7 + $8 + $9 } END { print n == 2 ? b[1] - b[0] : 0 }')
	echo "P2P-FIO {\"row\":\"$_fr_name\",\"bench\":\"$_fr_name\",\"dev\":\"$_fr_file\",\"mem\":\"p2p\",\"bs\":$_fr_bs,\"qd\":$_fr_qd,\"busy\":$_fr_busy,\"mark\":$_fr_w,\"read_bytes\":$((_fr_d1 - _fr_d0)),\"fio\":$( [ $_fr_rc -eq 0 ] && sed -n '/^{/,$p' /tmp/fio.json | tr -d '\n' || echo null)}"
	fio_json
	check_eq "fio $_fr_name, $_fr_bs QD$_fr_qd: exit 0, error 0, its I/O between its prerun and postrun" \
		"$_fr_rc ${_fr_e:-none} $([ -s /tmp/fio.b0 ] && [ -s /tmp/fio.b1 ] && echo marked)" "0 0 marked"
	[ "$_fr_rc" = 0 ] || diag "$(head -c 400 /tmp/fio.err)"
	# what the device read: p2pnvme's disk counts exactly, another in sectors
	if [ "$_fr_dev" = $B ]; then
		check_eq "fio $_fr_name: p2pnvme's disk counted bytes_p2p for every read" \
			"$((_fr_d1 - _fr_d0))" "$((${_fr_n:-0} * _fr_bs))"
	else
		check "fio $_fr_name: $_fr_dev read at least every byte (${_fr_n:-0} x $_fr_bs)" \
			test "$((_fr_d1 - _fr_d0))" -ge "$((${_fr_n:-0} * _fr_bs))" -a "${_fr_n:-0}" -gt 0
	fi
}

bench_pair filebench disk
check "the kernel has $FS" grep -qw "$FS" /proc/filesystems
mkdir -p $M0 $M1
check "mkfs $FS on $B" mkfs_on $B $M0
check "mkfs $FS on $BLK1" mkfs_on "$BLK1" $M1
check "mount $FS from $B (noatime)" mount -t "$FS" -o noatime $B $M0
check "mount $FS from $BLK1 (noatime)" mount -t "$FS" -o noatime "$BLK1" $M1
# random bytes in fio's verify format: a crc32c header in every 4 KiB block
check "32 MiB of random bytes in fio's verify format (crc32c every 4 KiB) in $SRC" \
	fio --name=src --filename=$SRC --rw=write --bs=4k --size=32M --verify=crc32c \
	--do_verify=0 --output=/dev/null
want=$(sha256sum < $SRC | cut -d' ' -f1)
for m in $M0 $M1; do
	check "the file on $m written by O_DIRECT, synced" \
		dd if=$SRC of=$m/f bs=1M oflag=direct conv=fsync status=none
	check_same "$m/f read back by O_DIRECT: the source's bytes (sha256)" "$(read_sha $m/f)" "$want"
	diag "$m/f: $(filefrag $m/f 2>&1)"
done
# the fio rows' verifying run can fail: on bytes not in its format it must,
# saying why (a bad header), not for another reason
check "fio's verify=crc32c refuses 1 MiB of plain random bytes read into p2pmem, a bad header (the check can fail)" \
	sh -c "head -c 1048576 /dev/urandom > $M1/rnd && ! fio --name=r --filename=$M1/rnd \
		--ioengine=io_uring --direct=1 --rw=read --bs=4k --size=1M \
		--iomem=mmapshared:/dev/p2pbar0 --verify=crc32c --verify_fatal=1 \
		>/tmp/fio.neg 2>&1 && grep -q 'bad magic header' /tmp/fio.neg"
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
	FIO_VERIFY=1 fio_row fio-file-disk $F0 $B $1 $2
	FIO_VERIFY=1 fio_row fio-file-nvme-pci $F1 "$BLK1" $1 $2
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
		fio_row fio-file-disk $F0 $B $1 $2
		fio_row fio-file-nvme-pci $F1 "$BLK1" $1 $2
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
