# SPDX-License-Identifier: GPL-2.0
# vIOMMU on, devices under one switch: the kernel uses bus addresses
# (direct), but QEMU routes every DMA through the vIOMMU, which faults,
# while the nvme model still reports success. An emulator limitation:
# the host check reports it as SKIP, never as a pass.
P_DESC="intel-iommu on, switch (emulator limitation for the data path)"
P_CPU=max
P_EXPECT=direct
P_DISTANCE=4
P_APPEND="intel_iommu=on"
P_LIMIT=qemu-switch-p2p-through-viommu
P_DEVICES=(
	-device intel-iommu,intremap=off
	$(pcie_switch 2)
	$(nvme_dev nvme0 dn0)
	$(bar_dev bar0 dn1)
)
