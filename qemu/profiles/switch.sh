# SPDX-License-Identifier: GPL-2.0
# One PCIe switch under a root port; NVMe controllers and the BAR device on
# its downstream ports: the shape of a server's NVMe/GPU switch.
P_DESC="root port -> x3130 switch -> {nvme0, ivshmem bar0, nvme1, ivshmem bar1}"
P_CPU=max
P_EXPECT=direct
P_DISTANCE=4
P_DEVICES=(
	-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,slot=1,addr=0x4
	-device x3130-upstream,id=up0,bus=rp0
	-device xio3130-downstream,id=dn0,bus=up0,chassis=2,slot=0
	-device xio3130-downstream,id=dn1,bus=up0,chassis=3,slot=1
	-device xio3130-downstream,id=dn2,bus=up0,chassis=4,slot=2
	-device xio3130-downstream,id=dn3,bus=up0,chassis=5,slot=3
	$(nvme_dev nvme0 dn0)
	$(bar_dev bar0 dn1)
	$(nvme_dev nvme1 dn2)
	$(bar_dev bar1 dn3)
)
