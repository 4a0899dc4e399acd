#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The provider driver end to end: bind, the char device (tools/tests/
# p2pbar-test.c: ioctls, bad input, mmap, zeroing, O_DIRECT by the kernel's
# nvme driver, permissions), removal while memory is in use, re-bind, and
# probe parameters that must be refused.
. /tests/lib.sh

IVSHMEM=$(find_pci 1af4 1110)
IVSHMEM2=$(find_pci 1af4 1110 2)
NVME=$(find_pci 1b36 0010)
BLK=$(nvme_blk "$NVME")

# the suites: the test's own, p2pbar-test's (provider, provider_removal),
# the live KUnit suites; provider_two where the profile has a second
# ivshmem function
suites="guest.provider_bind guest.provider_live kunit.p2pbar_live guest.provider_dmabuf"
suites="$suites kunit.p2pbar_dmabuf guest.provider guest.provider_p2pctl guest.provider_removal"
suites="$suites guest.provider_rebind guest.provider_params guest.provider_region"
[ -n "$IVSHMEM2" ] && suites="$suites guest.provider_two"
expect_suites $suites

suite_begin provider_bind
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
check "/dev/p2pbar0 exists" test -c /dev/p2pbar0
check_eq "device node mode is 0600 root" "$(stat -c '%a %u' /dev/p2pbar0)" "600 0"
check_eq "sysfs bar" "$(cat /sys/class/p2pbar/p2pbar0/bar)" 2
check_eq "sysfs size" "$(cat /sys/class/p2pbar/p2pbar0/size)" 67108864
check_eq "sysfs bar_size" "$(cat /sys/class/p2pbar/p2pbar0/bar_size)" 67108864
check_eq "sysfs published" "$(cat /sys/class/p2pbar/p2pbar0/published)" 1
check "p2pbar holds the BAR in /proc/iomem" grep -q ' : p2pbar$' /proc/iomem
check_eq "kernel agrees it is published" "$(cat /sys/bus/pci/devices/$IVSHMEM/p2pmem/published)" 1
echo 0 > /sys/class/p2pbar/p2pbar0/published
check_eq "unpublish through sysfs" "$(cat /sys/bus/pci/devices/$IVSHMEM/p2pmem/published)" 0
echo 1 > /sys/class/p2pbar/p2pbar0/published
check_eq "publish again" "$(cat /sys/bus/pci/devices/$IVSHMEM/p2pmem/published)" 1
l=$(p2pctl list)
diag "$(echo "$l" | tr '\n' '|')"
check "p2pctl list: the provider, its driver, instance, size, available, published" \
	sh -c "echo '$l' | grep -Eq '^$IVSHMEM +provider +p2pbar +p2pbar0 +67108864 +67108864 yes '"
check "p2pctl list: the NVMe controller and its driver" \
	sh -c "echo '$l' | grep -Eq '^$NVME +nvme +nvme +- '"
# NUMA node, link speed and width, IOMMU group: as sysfs has them
D=/sys/bus/pci/devices/$NVME
numa=$(cat $D/numa_node); [ "$numa" -ge 0 ] 2>/dev/null || numa=-
grp=$(basename "$(readlink $D/iommu_group 2>/dev/null)" 2>/dev/null); [ -n "$grp" ] || grp=-
check "p2pctl list: the NVMe's NUMA node, link and IOMMU group ($numa $(cat $D/current_link_speed) x$(cat $D/current_link_width) $grp)" \
	sh -c "echo '$l' | grep -Eq '^$NVME .* $numa +$(sed 's/ PCIe//; s/ //g' $D/current_link_speed) +x$(cat $D/current_link_width) +$grp\$'"
check "p2pctl list -o json" sh -c "p2pctl list -o json | grep -q '{\"pci\":\"$IVSHMEM\",\"kind\":\"provider\",\"driver\":\"p2pbar\",\"dev\":\"p2pbar0\",\"p2pmem_size\":67108864,\"p2pmem_available\":67108864,\"published\":true,\"numa_node\":'"
check "p2pctl list -o json: the NVMe's link width" \
	sh -c "p2pctl list -o json | grep -q '{\"pci\":\"$NVME\",[^}]*\"link_width\":$(cat $D/current_link_width),'"
v=$(p2pctl --json verdict "$NVME")
diag "verdict: $v"
case "$v" in *"\"verdict\":\"$p2pexpect\",\"distance\":$p2pdistance,"*)
	pass "p2pctl verdict for the NVMe is $p2pexpect, distance $p2pdistance" ;;
*)	fail "p2pctl verdict for the NVMe is $p2pexpect, distance $p2pdistance" ;; esac
suite_end

# What a transfer between the NVMe and the BAR must end with here.
want_rc=0
[ "$p2pexpect" = refused ] && want_rc=121

# The in-kernel API, removal with in-kernel users (live KUnit, results
# collected from debugfs). It leaves p2pbar bound, as /dev/p2pbar0.
suite_begin provider_live
check "p2pbar_live_kunit runs" load p2pbar_live_kunit "expect=$p2pexpect"
check "kunit.p2pbar_live: its results in debugfs" kunit_ran p2pbar_live
check "still bound after the live tests" test -c /dev/p2pbar0
suite_end

# The dma-buf exporter against mock importers and, where the kernel has the
# RDMA core (the debug kernel), the kernel's own ib_umem_dmabuf importer.
suite_begin provider_dmabuf
check "p2pbar_dmabuf_kunit runs" load p2pbar_dmabuf_kunit "expect=$p2pexpect"
check "kunit.p2pbar_dmabuf: its results in debugfs" kunit_ran p2pbar_dmabuf
check "still bound after the dma-buf tests" test -c /dev/p2pbar0
suite_end

# A second provider (switch profile): its own instance, its own memory.
if [ -n "$IVSHMEM2" ]; then
	suite_begin provider_two
	check "p2pbar binds to a second device $IVSHMEM2" bind p2pbar "$IVSHMEM2"
	check "it is /dev/p2pbar1" test -c /dev/p2pbar1
	v=$(p2pctl --json verdict "$IVSHMEM2" /dev/p2pbar0)
	case "$v" in *'"verdict":"direct","distance":4,'*) pass "the two providers see each other directly" ;;
	*) diag "$v"; fail "the two providers see each other directly" ;; esac
	held p2pctl --json dma-read "$BLK" 0x500000 65536 --dev /dev/p2pbar1
	off=$(echo "$held_out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')
	if [ "$want_rc" = 0 ]; then
		check "dma-read says where in the BAR the bytes went (bar_offset $off)" test -n "$off"
		hostcheck equal 65536 "bar1@$off" nvme0@0x500000
	fi
	released; check_eq "dma-read into the second provider exits $want_rc" "$?" "$want_rc"
	check_eq "first provider's counters untouched" "$(cat /sys/class/p2pbar/p2pbar0/alloc_count)" 0
	check "unbind the second" sh -c "echo $IVSHMEM2 > /sys/bus/pci/drivers/p2pbar/unbind"
	check "the first still works" p2pctl info /dev/p2pbar0
	suite_end
fi

# The char device from userspace.
P2P_EXPECT=$p2pexpect p2pbar-test /dev/p2pbar0 "$IVSHMEM" "$BLK" || _any_failed=1

# p2pctl through the provider's mmap (not the kernel's sysfs allocator)
suite_begin provider_p2pctl
held p2pctl --json dma-read "$BLK" 0x300000 131072 --dev /dev/p2pbar0; out=$held_out
diag "$out"
if [ $want_rc = 0 ]; then
	off=$(echo "$out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')
	check "dma-read says where in the BAR the bytes went (bar_offset $off)" test -n "$off"
	hostcheck equal 131072 "bar0@$off" nvme0@0x300000
else
	hostcheck absent 131072 nvme0@0x300000 bar0
fi
released; check_eq "p2pctl dma-read through /dev/p2pbar0 exits $want_rc" "$?" "$want_rc"
if [ $want_rc = 0 ]; then k=bytes,bar_offset,fnv1a,sha256; else k=error,errno,step; fi
jsoncheck dma-read $k dma-read "$BLK" 0x300000 65536 --dev /dev/p2pbar0
jsoncheck info device,pci,bar,published info /dev/p2pbar0
jsoncheck verdict client,verdict,distance,reason verdict "${NVME#0000:}"
suite_end

# Removal while memory is in use, then re-bind.
p2pbar-test --removal /dev/p2pbar0 "$IVSHMEM" || _any_failed=1

suite_begin provider_rebind
check "re-bind after removal" bind p2pbar "$IVSHMEM"
out=$(p2pctl --json dma-read "$BLK" 0 65536 --dev /dev/p2pbar0)
check_eq "allocation and DMA after re-bind exit $want_rc" "$?" "$want_rc"
check "unbind again" sh -c "echo $IVSHMEM > /sys/bus/pci/drivers/p2pbar/unbind"
dump_kunit
check "rmmod p2pbar_live_kunit" rmmod p2pbar_live_kunit
check "rmmod p2pbar_dmabuf_kunit" rmmod p2pbar_dmabuf_kunit
check "rmmod p2pbar" rmmod p2pbar
suite_end

# Probe parameters that cannot work: refused (the probe says why in the
# log), nothing left behind.
suite_begin provider_params
refusals() { dmesg | grep -c "p2pbar $IVSHMEM: cannot use bar="; }
for p in "bar=0" "bar=1" "bar=6" "bar=2 offset=1048576" "bar=2 size=3145728" \
	 "bar=2 offset=134217728" "bar=2 offset=33554432 size=67108864"; do
	check "p2pbar loads with $p" load p2pbar "$p"
	r0=$(refusals)
	echo "" > "/sys/bus/pci/devices/$IVSHMEM/driver_override"
	echo p2pbar > "/sys/bus/pci/devices/$IVSHMEM/driver_override"
	echo "$IVSHMEM" > /sys/bus/pci/drivers_probe 2>/dev/null
	if [ -e "/sys/bus/pci/devices/$IVSHMEM/driver" ] || [ -e /dev/p2pbar0 ] ||
	   [ -e "/sys/bus/pci/devices/$IVSHMEM/p2pmem" ] || [ "$(refusals)" -le "$r0" ]; then
		fail "probe with $p is refused, says why and leaves nothing behind"
	else
		pass "probe with $p is refused, says why and leaves nothing behind"
	fi
	diag "$(dmesg | grep 'p2pbar.*cannot use' | tail -n 1 | cut -c 16-)"
	check "rmmod p2pbar (loaded with $p)" rmmod p2pbar
done
check "p2pbar loads with bar=2 offset=32M size=16M" load p2pbar "bar=2 offset=33554432 size=16777216"
check "p2pbar binds with it" bind p2pbar "$IVSHMEM"
check_eq "bar=2 offset=32M size=16M gives 16 MiB" "$(cat /sys/class/p2pbar/p2pbar0/size 2>/dev/null)" 16777216
check_eq "... at offset 32M" "$(cat /sys/class/p2pbar/p2pbar0/offset 2>/dev/null)" 33554432
echo "$IVSHMEM" > /sys/bus/pci/drivers/p2pbar/unbind
rmmod p2pbar
suite_end

# region=: per device, set before binding; a bad write changes nothing.
suite_begin provider_region
R=/sys/module/p2pbar/parameters/region
check "p2pbar loads with a region= entry for a device that is not there" \
	load p2pbar "region=0000:7f:1f.7@2"
good="$IVSHMEM@2:32M:16M"
check "region=$good is taken" sh -c "echo $good > $R"
want=$(cat $R)
for bad in "garbage" "$IVSHMEM" "$IVSHMEM@6" "$IVSHMEM@2:1M" "$IVSHMEM@2:32M:3M" \
	   "$IVSHMEM@2:2x" "$IVSHMEM@2,$IVSHMEM@2" "0000:7f:1f.7@2" "$IVSHMEM@0" \
	   "$IVSHMEM@2:64M" "$IVSHMEM@2:48M:32M"; do
	err=$(sh -c "echo '$bad' > $R" 2>&1)
	rc=$?
	case "$bad" in 0000:7f:*) wanterr="No such device" ;; *) wanterr="Invalid argument" ;; esac
	if [ $rc != 0 ] && echo "$err" | grep -q "$wanterr" && [ "$(cat $R)" = "$want" ]; then
		pass "region=$bad refused ($wanterr), unchanged"
	else
		fail "region=$bad refused ($wanterr), unchanged"; diag "rc $rc: $err; now $(cat $R)"
	fi
done
diag "$(dmesg | grep 'region=' | tail -n 1 | cut -c 16-)"
check_eq "the table reads back" "$want" "$IVSHMEM@2:33554432:16777216"
bind p2pbar "$IVSHMEM"
check_eq "the device's entry applies at probe: 16 MiB" "$(cat /sys/class/p2pbar/p2pbar0/size 2>/dev/null)" 16777216
check_eq "... at offset 32M" "$(cat /sys/class/p2pbar/p2pbar0/offset 2>/dev/null)" 33554432
echo "$IVSHMEM" > /sys/bus/pci/drivers/p2pbar/unbind
check "an empty write clears the table" sh -c "echo > $R"
bind p2pbar "$IVSHMEM"
check_eq "the module-wide default applies again: 64 MiB" "$(cat /sys/class/p2pbar/p2pbar0/size 2>/dev/null)" 67108864
echo "$IVSHMEM" > /sys/bus/pci/drivers/p2pbar/unbind
rmmod p2pbar
suite_end; exit $_any_failed
