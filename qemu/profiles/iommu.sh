# SPDX-License-Identifier: GPL-2.0
# vIOMMU on, devices on separate root ports, Zen CPU: P2P goes through the
# host bridge with IOVA mappings, which QEMU's IOMMU model carries.
P_DESC="intel-iommu on, root ports, -cpu EPYC (through the host bridge)"
P_CPU=EPYC
P_EXPECT=host-bridge
P_DISTANCE=4
P_APPEND="intel_iommu=on"
P_DEVICES=(
	-device intel-iommu,intremap=off
	-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,slot=1,addr=0x4
	-device pcie-root-port,id=rp1,bus=pcie.0,chassis=2,slot=2,addr=0x5
	$(nvme_dev nvme0 rp0)
	$(bar_dev bar0 rp1)
)
