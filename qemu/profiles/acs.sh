# SPDX-License-Identifier: GPL-2.0
# multifunction with the vIOMMU on: the IOMMU driver enables ACS on the
# root port, so the path has ACS redirect and the q35 host bridge refuses.
P_DESC="nvme0 + ivshmem in one slot, intel-iommu on (ACS redirect)"
P_CPU=max
P_EXPECT=refused
P_DISTANCE=-1
P_APPEND="intel_iommu=on"
P_DEVICES=(
	-device intel-iommu,intremap=off
	-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,slot=1,addr=0x4
	$(nvme_dev nvme0 rp0 addr=0.0,multifunction=on)
	$(bar_dev bar0 rp0 addr=0.1)
)
