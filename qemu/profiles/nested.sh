# SPDX-License-Identifier: GPL-2.0
# A switch behind a switch (a GPU/NVMe tray under a server's root switch):
# the NVMe controllers sit two switch levels down, the BAR device one level
# down on a sibling port of the outer switch. Their common upstream bridge
# is the outer switch: direct P2P, six hops.
P_DESC="root port -> x3130 -> {x3130 -> {nvme0, nvme1}, ivshmem bar0}"
P_CPU=max
P_EXPECT=direct
P_DISTANCE=6
P_DEVICES=(
	$(pcie_switch 2)
	-device x3130-upstream,id=up1,bus=dn0
	-device xio3130-downstream,id=dn10,bus=up1,chassis=10,slot=0
	-device xio3130-downstream,id=dn11,bus=up1,chassis=11,slot=1
	$(nvme_dev nvme0 dn10)
	$(nvme_dev nvme1 dn11)
	$(bar_dev bar0 dn1)
)
