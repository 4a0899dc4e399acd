# SPDX-License-Identifier: GPL-2.0
# NVMe and BAR device as two functions of one slot below a root port.
P_DESC="nvme0 (fn 0) and ivshmem (fn 1) in one root-port slot"
P_CPU=max
P_EXPECT=direct
P_DISTANCE=2
P_DEVICES=(
	-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,slot=1,addr=0x4
	$(nvme_dev nvme0 rp0 addr=0.0,multifunction=on)
	$(bar_dev bar0 rp0 addr=0.1)
)
