#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The NVMe client: p2pnvme takes over nvme0 and moves data between its
# namespace and p2pmem of the ivshmem BAR (and host memory); the host
# checks the BAR backing file and the image file at each step.
. /tests/lib.sh

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)
N=/dev/p2pnvme0
STATS=/sys/class/p2pnvme/p2pnvme0/stats
stat() { cat "$STATS/$1"; }
js() { echo "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

want_path=p2p
want_rc=0
[ "$p2pexpect" = refused ] && want_path=bounce

suite_begin client_setup
check "p2pbar loads and binds to ivshmem" sh -c "insmod /lib/modules/p2pbar.ko && true" 
bind p2pbar "$IVSHMEM" || fail "bind p2pbar"
check "p2pnvme loads" load p2pnvme
check "p2pnvme takes over $NVME from nvme" bind p2pnvme "$NVME"
check "/dev/p2pnvme0 exists" test -c $N
info=$(p2pctl --json nvme-info)
diag "$info"
check_eq "namespace is 64 MiB of 512-byte LBAs" "$(js nlb "$info") $(js lba_size "$info")" "131072 512"
suite_end

suite_begin client_io
# read 256 KiB at 1 MiB into p2pmem
out=$(p2pctl --json nvme-read $N 2048 262144)
check_eq "read 256 KiB into p2pmem" "$?" 0
check_eq "path is $want_path" "$(js path "$out")" "$want_path"
hostcheck equal 262144 "bar0@$(js bar_offset "$out")" nvme0@0x100000
# write 128 KiB of 0x77 from p2pmem at 8 MiB
out=$(p2pctl --json nvme-write $N 16384 131072 0x77)
check_eq "write 128 KiB from p2pmem" "$?" 0
check_eq "write path is $want_path" "$(js path "$out")" "$want_path"
hostcheck fill 131072 nvme0@0x800000 0x77
suite_end
echo "stats: $(grep . $STATS/* | sed 's|.*/||' | tr '\n' ' ')"
exit $_any_failed
