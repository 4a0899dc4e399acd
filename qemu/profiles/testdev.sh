# SPDX-License-Identifier: GPL-2.0
# pci-testdev with a 64 MiB membar next to the NVMe under the switch: a BAR
# that registers as p2pmem but has nothing behind it (reads zeros, drops
# writes). The negative case that proves byte checks catch a fake provider.
P_DESC="switch with nvme0 and pci-testdev,membar=64M (a BAR that is not memory)"
P_CPU=max
P_EXPECT=direct
P_DISTANCE=4
P_DEVICES=(
	$(pcie_switch 2)
	$(nvme_dev nvme0 dn0)
	-device pci-testdev,membar=64M,id=testdev0,bus=dn1
)
