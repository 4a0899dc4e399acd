# SPDX-License-Identifier: GPL-2.0
# SR-IOV: one NVMe controller in an nvme-subsys with two virtual functions
# and a shared namespace, on a switch port; the ivshmem BAR on a sibling
# port. The physical function stays with nvme-pci, a VF goes to p2pnvme
# (tests/sriov.guest.sh). QEMU's checks want max_ioqpairs - vq_flexible >= 2,
# vq_flexible >= 2 per VF, msix_qsize - vi_flexible >= 1; these numbers give
# each VF up to 3 queues (admin + 2 I/O) and 3 vectors, and VF BARs of the
# size the IOV BAR advertises. Needs a kernel with CONFIG_PCI_IOV (the plus
# flavour).
P_DESC="root port -> x3130 switch -> {nvme0 PF + 2 VFs (nvme-subsys, shared namespace), ivshmem bar0}"
P_CPU=max
P_EXPECT=direct
P_DISTANCE=4
P_DEVICES=(
	$(pcie_switch 2)
	-drive file=$RUN/nvme0.img,if=none,id=drv-nvme0,format=raw,cache=writethrough
	-device nvme-subsys,id=subsys0,nqn=p2psriov
	-device nvme,id=nvme0,serial=nvme0,bus=dn0,subsys=subsys0,max_ioqpairs=10,msix_qsize=9,sriov_max_vfs=2,sriov_vq_flexible=6,sriov_vi_flexible=6
	-device nvme-ns,drive=drv-nvme0,bus=nvme0,nsid=1,shared=on
	$(bar_dev bar0 dn1)
)
