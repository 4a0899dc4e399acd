# SPDX-License-Identifier: GPL-2.0
# NVMe and BAR device on separate root ports; the q35 host bridge is not
# allow-listed and the CPU is Intel (not a Zen): P2P must be refused.
P_DESC="nvme0 and ivshmem on separate root ports, -cpu Skylake-Client (Intel)"
P_CPU=Skylake-Client
P_EXPECT=refused
P_DISTANCE=-1
P_DEVICES=(
	-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,slot=1,addr=0x4
	-device pcie-root-port,id=rp1,bus=pcie.0,chassis=2,slot=2,addr=0x5
	$(nvme_dev nvme0 rp0)
	$(bar_dev bar0 rp1)
)
