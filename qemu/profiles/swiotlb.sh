# SPDX-License-Identifier: GPL-2.0
# The switch, with every streaming DMA mapping of host memory bounced
# through swiotlb (as in SEV/TDX guests or behind untrusted ports): a driver
# that fills a buffer after mapping it, or reads it before the unmap, moves
# stale bytes here. P2PDMA pages are not bounced (bus addresses).
. "$P2P_TOP/qemu/profiles/switch.sh"
P_DESC="switch, swiotlb=force: host-memory DMA bounced through swiotlb"
P_APPEND="swiotlb=force"
