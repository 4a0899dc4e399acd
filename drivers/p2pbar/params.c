// SPDX-License-Identifier: GPL-2.0
/*
 * Pure checks of administrator and user input: which part of which BAR
 * becomes p2pmem, and whether an allocation request is well formed. No
 * device access here, so KUnit can drive every branch.
 */
#include <linux/ioport.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <kunit/visibility.h>

#include "p2pbar.h"

/**
 * p2pbar_pick_region - choose and validate the p2pmem region of a device
 * @bars: the device's BARs, P2PBAR_NR_BARS entries
 * @bar: requested BAR, or -1 for the largest 64-bit prefetchable one
 * @offset: requested offset into the BAR
 * @size: requested size, 0 for "up to the end of the BAR"
 * @align: granularity ZONE_DEVICE needs (2 MiB on x86_64)
 * @out: the region on success
 * @why: on failure, what the administrator should change
 *
 * Return: 0, -EINVAL for a request that cannot work, -ENODEV when no BAR
 * qualifies for automatic selection.
 */
int p2pbar_pick_region(const struct p2pbar_bar_desc *bars, int bar, u64 offset,
		       u64 size, u64 align, struct p2pbar_region *out,
		       const char **why)
{
	const unsigned long want = IORESOURCE_MEM | IORESOURCE_MEM_64 |
				   IORESOURCE_PREFETCH;
	const struct p2pbar_bar_desc *b;
	u64 end;
	int i;

	if (bar == -1) {
		for (i = 0; i < P2PBAR_NR_BARS; i++) {
			if (!bars[i].len || (bars[i].flags & want) != want)
				continue;
			if (bar < 0 || bars[i].len > bars[bar].len)
				bar = i;
		}
		if (bar < 0) {
			*why = "no 64-bit prefetchable memory BAR; choose one with bar=N";
			return -ENODEV;
		}
	} else if (bar < 0 || bar >= P2PBAR_NR_BARS) {
		*why = "bar= must be 0-5, or -1 to pick the largest 64-bit prefetchable BAR";
		return -EINVAL;
	}

	b = &bars[bar];
	if (!b->len) {
		*why = "the BAR is not implemented by this device";
		return -EINVAL;
	}
	if (b->flags & IORESOURCE_IO || !(b->flags & IORESOURCE_MEM)) {
		*why = "the BAR is an I/O port BAR; P2PDMA needs a memory BAR";
		return -EINVAL;
	}
	if (!IS_ALIGNED(offset, align) || !IS_ALIGNED(size, align)) {
		*why = "offset= and size= must be multiples of 2 MiB (ZONE_DEVICE granularity)";
		return -EINVAL;
	}
	if (!IS_ALIGNED(b->start + offset, align)) {
		*why = "the BAR's address is not 2 MiB aligned; choose an offset= that makes it so";
		return -EINVAL;
	}
	if (offset >= b->len) {
		*why = "offset= lies beyond the end of the BAR";
		return -EINVAL;
	}
	if (!size) {
		size = round_down(b->len - offset, align);
		if (!size) {
			*why = "the BAR is smaller than 2 MiB, too small for ZONE_DEVICE pages";
			return -EINVAL;
		}
	}
	if (check_add_overflow(offset, size, &end) || end > b->len) {
		*why = "offset= + size= exceed the BAR";
		return -EINVAL;
	}

	out->bar = bar;
	out->offset = offset;
	out->size = size;
	*why = NULL;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pbar_pick_region);

/**
 * p2pbar_check_alloc - validate a P2PBAR_IOC_ALLOC request
 * @a: the request, argsz already checked
 * @avail: total p2pmem of the provider, in bytes
 *
 * Return: 0, -EINVAL for malformed requests, -EOVERFLOW when size and
 * alignment do not fit 64 bits, -ENOSPC when the request can never be
 * satisfied by this provider.
 */
int p2pbar_check_alloc(const struct p2pbar_alloc *a, u64 avail)
{
	u64 worst;

	if (a->flags || a->reserved)
		return -EINVAL;
	if (!a->size || !PAGE_ALIGNED(a->size))
		return -EINVAL;
	if (a->align && (!is_power_of_2(a->align) || a->align < PAGE_SIZE))
		return -EINVAL;
	/* worst case: the pool hands out a page-aligned start */
	if (check_add_overflow(a->size, a->align ? a->align - PAGE_SIZE : 0, &worst))
		return -EOVERFLOW;
	if (worst > avail)
		return -ENOSPC;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pbar_check_alloc);
