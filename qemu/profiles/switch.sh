# SPDX-License-Identifier: GPL-2.0
# One PCIe switch under a root port; NVMe controllers and the BAR device on
# its downstream ports: the shape of a server's NVMe/GPU switch.
P_DESC="root port -> x3130 switch -> {nvme0, ivshmem bar0, nvme1, ivshmem bar1}"
P_CPU=max
P_EXPECT=direct
P_DISTANCE=4
P_DEVICES=(
	$(pcie_switch 4)
	$(nvme_dev nvme0 dn0)
	$(bar_dev bar0 dn1)
	$(nvme_dev nvme1 dn2)
	$(bar_dev bar1 dn3)
)
