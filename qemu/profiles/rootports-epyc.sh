# SPDX-License-Identifier: GPL-2.0
# Same as rootports, on an AMD Zen CPU model: the kernel lets P2P go
# through the host bridge.
P_DESC="nvme0 and ivshmem on separate root ports, -cpu EPYC"
P_CPU=EPYC
P_EXPECT=host-bridge
P_DISTANCE=4
P_DEVICES=(
	-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,slot=1,addr=0x4
	-device pcie-root-port,id=rp1,bus=pcie.0,chassis=2,slot=2,addr=0x5
	$(nvme_dev nvme0 rp0)
	$(bar_dev bar0 rp1)
)
