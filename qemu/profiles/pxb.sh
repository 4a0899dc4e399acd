# SPDX-License-Identifier: GPL-2.0
# Two host bridges (pxb-pcie): the BAR device behind the second one. No
# common upstream bridge and no allow-listed host bridge: refused.
P_DESC="ivshmem behind a second host bridge (pxb-pcie), nvme0 on the first"
P_CPU=max
P_EXPECT=refused
P_DISTANCE=-1
P_DEVICES=(
	-device pxb-pcie,id=pxb1,bus_nr=0x80,bus=pcie.0,addr=0x6
	-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,slot=1,addr=0x4
	-device pcie-root-port,id=rpx,bus=pxb1,chassis=10,slot=0
	$(nvme_dev nvme0 rp0)
	$(bar_dev bar0 rpx)
)
