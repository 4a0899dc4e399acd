/* SPDX-License-Identifier: GPL-2.0 */
/* p2pbar: definitions shared by the driver's files and its KUnit tests. */
#ifndef P2PBAR_PRIV_H
#define P2PBAR_PRIV_H

#include <linux/types.h>
#include <uapi/linux/p2pbar.h>

#define P2PBAR_NR_BARS	6

/**
 * struct p2pbar_bar_desc - what BAR selection needs to know about one BAR
 * @len: length in bytes, 0 if the BAR is not implemented
 * @flags: IORESOURCE_* flags of the resource
 * @start: CPU physical start address
 */
struct p2pbar_bar_desc {
	u64 len;
	unsigned long flags;
	u64 start;
};

/**
 * struct p2pbar_region - the part of a BAR that becomes p2pmem
 * @bar: BAR number
 * @offset: offset into the BAR
 * @size: bytes
 */
struct p2pbar_region {
	int bar;
	u64 offset;
	u64 size;
};

/* entries of the per-device region= module parameter */
#define P2PBAR_MAX_DEV_REGIONS	16

/**
 * struct p2pbar_dev_region - one entry of region=: what to expose of one device
 * @domain: PCI domain (32 bits: VMD domains start at 0x10000)
 * @bus: bus number
 * @devfn: PCI_DEVFN(device, function)
 * @bar: BAR number
 * @offset: offset into the BAR
 * @size: bytes, 0 for "to the end of the BAR"
 */
struct p2pbar_dev_region {
	u32 domain;
	u8 bus;
	u8 devfn;
	int bar;
	u64 offset;
	u64 size;
};

int p2pbar_parse_regions(const char *s, struct p2pbar_dev_region *out, unsigned int max,
			 unsigned int *nr, const char **why);
int p2pbar_pick_region(const struct p2pbar_bar_desc *bars, int bar, u64 offset,
		       u64 size, u64 align, struct p2pbar_region *out,
		       const char **why);
int p2pbar_check_alloc(const struct p2pbar_alloc *a, u64 avail);

struct p2pbar;
#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
long p2pbar_ioc_export(struct p2pbar *pb, unsigned long uarg);
#else
/* a kernel without dma-buf support: nothing to export to */
static inline long p2pbar_ioc_export(struct p2pbar *pb, unsigned long uarg)
{
	return -EOPNOTSUPP;
}
#endif

#endif /* P2PBAR_PRIV_H */
