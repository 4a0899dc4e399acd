# SPDX-License-Identifier: GPL-2.0
# The benchmark's strict-IOMMU profile (scripts/fio-benchmark.sh --strict;
# not in qemu/matrix): as iommu, with a second identical controller for
# nvme-pci and every IOVA unmapped at once (iommu.strict=1), where per-I/O
# mapping costs most.
P_DESC="intel-iommu on (strict), root ports, -cpu EPYC, two controllers"
P_CPU=EPYC
P_EXPECT=host-bridge
P_DISTANCE=4
P_APPEND="intel_iommu=on iommu.strict=1"
P_DEVICES=(
	-device intel-iommu,intremap=off
	-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,slot=1,addr=0x4
	-device pcie-root-port,id=rp1,bus=pcie.0,chassis=2,slot=2,addr=0x5
	-device pcie-root-port,id=rp2,bus=pcie.0,chassis=3,slot=3,addr=0x6
	$(nvme_dev nvme0 rp0)
	$(bar_dev bar0 rp1)
	$(nvme_dev nvme1 rp2)
)
