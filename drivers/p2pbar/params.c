// SPDX-License-Identifier: GPL-2.0
/*
 * Pure checks of administrator and user input: which part of which BAR
 * becomes p2pmem, and whether an allocation request is well formed. No
 * device access here, so KUnit can drive every branch.
 */
#include <linux/ctype.h>
#include <linux/ioport.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/string.h>
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

/* hex digits only, at most @max of them */
static int p2pbar_hex(const char *s, size_t len, size_t max, unsigned int *v)
{
	size_t i;

	if (!len || len > max)
		return -EINVAL;
	*v = 0;
	for (i = 0; i < len; i++) {
		if (!isxdigit(s[i]))
			return -EINVAL;
		*v = *v << 4 | (isdigit(s[i]) ? s[i] - '0' : tolower(s[i]) - 'a' + 10);
	}
	return 0;
}

/* the last @c in [@s, @end), or NULL */
static const char *p2pbar_last(const char *s, const char *end, char c)
{
	while (end > s)
		if (*--end == c)
			return end;
	return NULL;
}

/* "[DOMAIN:]BUS:DEV.FN" (hex, as lspci prints it), exactly */
static int p2pbar_parse_bdf(const char *s, size_t len, struct p2pbar_dev_region *r)
{
	const char *end = s + len, *dot = memchr(s, '.', len), *c2, *c1;
	unsigned int dom = 0, bus, dev, fn;

	if (!dot)
		return -EINVAL;
	c2 = p2pbar_last(s, dot, ':');	/* before DEV */
	if (!c2)
		return -EINVAL;
	c1 = p2pbar_last(s, c2, ':');	/* before BUS, if there is a domain */
	if (p2pbar_hex(dot + 1, end - dot - 1, 1, &fn) || fn > 7 ||
	    p2pbar_hex(c2 + 1, dot - c2 - 1, 2, &dev) || dev > 0x1f ||
	    p2pbar_hex(c1 ? c1 + 1 : s, c2 - (c1 ? c1 + 1 : s), 2, &bus) ||
	    (c1 && p2pbar_hex(s, c1 - s, 8, &dom)))
		return -EINVAL;
	r->domain = dom;
	r->bus = bus;
	r->devfn = PCI_DEVFN(dev, fn);
	return 0;
}

/* a size or offset: a number with an optional K/M/G suffix (memparse) */
static int p2pbar_parse_size(const char *s, const char *end, u64 *v)
{
	char *stop;

	if (s == end || !isdigit(*s))
		return -EINVAL;
	*v = memparse(s, &stop);
	return stop == end ? 0 : -EINVAL;
}

/**
 * p2pbar_parse_regions - parse the per-device region= module parameter
 * @s: comma-separated entries BDF@BAR[:OFFSET[:SIZE]], e.g.
 *     "0000:04:00.0@2" or "0000:04:00.0@2:32M:16M,0000:05:00.0@4";
 *     surrounding white space ignored, "" for no entry
 * @out: @max entries
 * @max: room in @out
 * @nr: entries parsed
 * @why: on failure, what is wrong
 *
 * Only the syntax and what can be checked without the device: BAR 0-5,
 * offset and size multiples of 2 MiB, each device once. Whether the BAR
 * can hold the region is p2pbar_pick_region()'s business.
 *
 * Return: 0, -EINVAL (bad entry), -E2BIG (more than @max entries).
 */
int p2pbar_parse_regions(const char *s, struct p2pbar_dev_region *out, unsigned int max,
			 unsigned int *nr, const char **why)
{
	const char *end = s + strlen(s), *e, *at, *c1, *c2;
	unsigned int n = 0, i;

	while (s < end && isspace(*s))
		s++;
	while (end > s && isspace(end[-1]))
		end--;
	for (; s < end; s = e + 1) {
		struct p2pbar_dev_region r = { .size = 0 };
		u64 bar;

		e = memchr(s, ',', end - s) ?: end;
		at = memchr(s, '@', e - s);
		if (!at || p2pbar_parse_bdf(s, at - s, &r)) {
			*why = "each entry is BDF@BAR[:OFFSET[:SIZE]], BDF as lspci prints it";
			return -EINVAL;
		}
		c1 = memchr(at + 1, ':', e - at - 1);
		c2 = c1 ? memchr(c1 + 1, ':', e - c1 - 1) : NULL;
		if (p2pbar_parse_size(at + 1, c1 ?: e, &bar) || bar >= P2PBAR_NR_BARS) {
			*why = "the BAR after @ must be 0-5";
			return -EINVAL;
		}
		r.bar = bar;
		if ((c1 && p2pbar_parse_size(c1 + 1, c2 ?: e, &r.offset)) ||
		    (c2 && p2pbar_parse_size(c2 + 1, e, &r.size))) {
			*why = "OFFSET and SIZE are numbers, with an optional K, M or G";
			return -EINVAL;
		}
		if (!IS_ALIGNED(r.offset, SZ_2M) || !IS_ALIGNED(r.size, SZ_2M)) {
			*why = "OFFSET and SIZE must be multiples of 2 MiB (ZONE_DEVICE sections)";
			return -EINVAL;
		}
		for (i = 0; i < n; i++) {
			if (out[i].domain == r.domain && out[i].bus == r.bus &&
			    out[i].devfn == r.devfn) {
				*why = "a device appears twice";
				return -EINVAL;
			}
		}
		if (n == max) {
			*why = "too many entries";
			return -E2BIG;
		}
		out[n++] = r;
		if (e == end)
			break;
	}
	*nr = n;
	*why = NULL;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pbar_parse_regions);
