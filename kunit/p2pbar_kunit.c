// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the provider's pure logic: BAR selection, allocation
 * request checks and the topology verdict, on fake devices and topologies.
 */
#include <kunit/test.h>
#include <linux/ioport.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <linux/mman.h>
#include <linux/p2p_ioctl.h>
#include <linux/p2pbar.h>
#include <p2p_compat.h>

#include "../drivers/p2pbar/p2pbar.h"

#define MEM64PF	(IORESOURCE_MEM | IORESOURCE_MEM_64 | IORESOURCE_PREFETCH)

/* BAR0 32-bit MMIO 4K, BAR1 I/O, BAR2 64-bit pf 64M, BAR4 64-bit pf 16M */
static const struct p2pbar_bar_desc fake_bars[P2PBAR_NR_BARS] = {
	[0] = { .len = SZ_4K, .flags = IORESOURCE_MEM, .start = 0xfe000000 },
	[1] = { .len = 0x100, .flags = IORESOURCE_IO, .start = 0xc000 },
	[2] = { .len = SZ_64M, .flags = MEM64PF, .start = 0x800000000ULL },
	[4] = { .len = SZ_16M, .flags = MEM64PF, .start = 0x804000000ULL },
};

static void pick_auto_takes_largest_64bit_prefetchable(struct kunit *test)
{
	struct p2pbar_region r;
	const char *why;

	KUNIT_ASSERT_EQ(test, p2pbar_pick_region(fake_bars, -1, 0, 0, SZ_2M, &r, &why), 0);
	KUNIT_EXPECT_EQ(test, r.bar, 2);
	KUNIT_EXPECT_EQ(test, r.offset, 0ULL);
	KUNIT_EXPECT_EQ(test, r.size, (u64)SZ_64M);
	KUNIT_EXPECT_NULL(test, why);
}

static void pick_auto_without_candidate(struct kunit *test)
{
	struct p2pbar_bar_desc bars[P2PBAR_NR_BARS] = {
		[0] = { .len = SZ_64M, .flags = IORESOURCE_MEM, .start = 0xe0000000 },
	};
	struct p2pbar_region r = { .bar = 77 };
	const char *why = NULL;

	KUNIT_EXPECT_EQ(test, p2pbar_pick_region(bars, -1, 0, 0, SZ_2M, &r, &why), -ENODEV);
	KUNIT_EXPECT_NOT_NULL(test, why);
	KUNIT_EXPECT_EQ(test, r.bar, 77);	/* untouched on failure */
	/* but an explicit 32-bit BAR is fine */
	KUNIT_EXPECT_EQ(test, p2pbar_pick_region(bars, 0, 0, 0, SZ_2M, &r, &why), 0);
	KUNIT_EXPECT_EQ(test, r.size, (u64)SZ_64M);
}

struct pick_case {
	const char *name;
	int bar;
	u64 offset, size;
	int ret;
	u64 want_size;
};

static const struct pick_case pick_cases[] = {
	{ "explicit BAR 4",		4, 0, 0, 0, SZ_16M },
	{ "offset and size",		2, SZ_4M, SZ_8M, 0, SZ_8M },
	{ "size 0 means to the end",	2, SZ_32M, 0, 0, SZ_32M },
	{ "I/O BAR",			1, 0, 0, -EINVAL },
	{ "unimplemented BAR",		3, 0, 0, -EINVAL },
	{ "BAR 6 does not exist",	6, 0, 0, -EINVAL },
	{ "negative BAR",		-2, 0, 0, -EINVAL },
	{ "BAR smaller than 2 MiB",	0, 0, 0, -EINVAL },
	{ "offset not 2 MiB multiple",	2, SZ_1M, 0, -EINVAL },
	{ "size not 2 MiB multiple",	2, 0, SZ_1M, -EINVAL },
	{ "offset beyond BAR",		2, SZ_64M, 0, -EINVAL },
	{ "offset + size beyond BAR",	2, SZ_32M, SZ_64M, -EINVAL },
	{ "offset + size overflow",	2, SZ_2M, 0xffffffffffe00000ULL, -EINVAL },
};

static void pick_case_desc(const struct pick_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(pick, pick_cases, pick_case_desc);

static void pick_table(struct kunit *test)
{
	const struct pick_case *c = test->param_value;
	struct p2pbar_region r = {};
	const char *why = NULL;
	int ret;

	ret = p2pbar_pick_region(fake_bars, c->bar, c->offset, c->size, SZ_2M, &r, &why);
	KUNIT_EXPECT_EQ(test, ret, c->ret);
	if (ret) {
		KUNIT_EXPECT_NOT_NULL(test, why);
	} else {
		KUNIT_EXPECT_EQ(test, r.size, c->want_size);
		KUNIT_EXPECT_EQ(test, r.bar, c->bar);
	}
}

static void pick_misaligned_bar_start(struct kunit *test)
{
	struct p2pbar_bar_desc bars[P2PBAR_NR_BARS] = {
		[2] = { .len = SZ_8M, .flags = MEM64PF, .start = 0x800100000ULL },
	};
	struct p2pbar_region r;
	const char *why;

	KUNIT_EXPECT_EQ(test, p2pbar_pick_region(bars, 2, 0, 0, SZ_2M, &r, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, strstr(why, "aligned"));
}

struct alloc_case {
	const char *name;
	struct p2pbar_alloc a;
	int ret;
};

static const struct alloc_case alloc_cases[] = {
	{ "one page",		{ .size = PAGE_SIZE }, 0 },
	{ "all of it",		{ .size = SZ_64M }, 0 },
	{ "aligned 2M",		{ .size = SZ_2M, .align = SZ_2M }, 0 },
	{ "size 0",		{ .size = 0 }, -EINVAL },
	{ "size not page multiple", { .size = PAGE_SIZE + 1 }, -EINVAL },
	{ "more than the BAR",	{ .size = SZ_128M }, -ENOSPC },
	{ "huge",		{ .size = ~0ULL & PAGE_MASK }, -ENOSPC },
	{ "align not power of 2", { .size = PAGE_SIZE, .align = 3 * PAGE_SIZE }, -EINVAL },
	{ "align below page",	{ .size = PAGE_SIZE, .align = 512 }, -EINVAL },
	{ "align makes it too big", { .size = SZ_64M, .align = SZ_2M }, -ENOSPC },
	{ "size + align overflow", { .size = ~0ULL & PAGE_MASK, .align = 1ULL << 63 }, -EOVERFLOW },
	{ "flags set",		{ .size = PAGE_SIZE, .flags = 1 }, -EINVAL },
	{ "reserved set",	{ .size = PAGE_SIZE, .reserved = 1 }, -EINVAL },
};

static void alloc_case_desc(const struct alloc_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(alloc, alloc_cases, alloc_case_desc);

static void alloc_table(struct kunit *test)
{
	const struct alloc_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, p2pbar_check_alloc(&c->a, SZ_64M), c->ret);
}

/* ---- region= ---- */

struct region_case {
	const char *val;
	int ret;
	unsigned int nr;
	struct p2pbar_dev_region first;
};

/* one entry more than region= takes */
#define SEVENTEEN "1:0.0@2,2:0.0@2,3:0.0@2,4:0.0@2,5:0.0@2,6:0.0@2,7:0.0@2,8:0.0@2,9:0.0@2,a:0.0@2,b:0.0@2,c:0.0@2,d:0.0@2,e:0.0@2,f:0.0@2,10:0.0@2,11:0.0@2"

static const struct region_case region_cases[] = {
	{ "", 0, 0 },
	{ "\n", 0, 0 },
	{ "0000:04:00.0@2", 0, 1, { 0, 4, PCI_DEVFN(0, 0), 2, 0, 0 } },
	{ "04:1f.7@5\n", 0, 1, { 0, 4, PCI_DEVFN(0x1f, 7), 5, 0, 0 } },
	{ "10000:e1:00.1@2:32M:16M", 0, 1, { 0x10000, 0xe1, PCI_DEVFN(0, 1), 2, SZ_32M, SZ_16M } },
	{ "0000:04:00.0@2:4194304,0000:05:00.0@4", 0, 2, { 0, 4, 0, 2, SZ_4M, 0 } },
	{ "0000:04:00.0@2,", 0, 1, { 0, 4, 0, 2, 0, 0 } },
	{ "garbage", -EINVAL },
	{ "0000:04:00.0", -EINVAL },
	{ "0000:04:00.0@", -EINVAL },
	{ "0000:04:00.0@6", -EINVAL },
	{ "0000:04:00.0@-1", -EINVAL },
	{ "0000:04:20.0@2", -EINVAL },
	{ "0000:04:00.8@2", -EINVAL },
	{ "0000:100:00.0@2", -EINVAL },
	{ "0000:04:00.0x@2", -EINVAL },
	{ "0000:04:00.0@2:1M", -EINVAL },
	{ "0000:04:00.0@2:2M:3M", -EINVAL },
	{ "0000:04:00.0@2:2x", -EINVAL },
	{ "0000:04:00.0@2::2M", -EINVAL },
	{ "0000:04:00.0@2:2M:2M:2M", -EINVAL },
	{ "0000:04:00.0@2,,0000:05:00.0@2", -EINVAL },
	{ "0000:04:00.0@2,04:00.0@3", -EINVAL },
	{ SEVENTEEN, -E2BIG },
};

static void region_case_desc(const struct region_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "'%.40s'", c->val);
}

KUNIT_ARRAY_PARAM(region, region_cases, region_case_desc);

static void region_table(struct kunit *test)
{
	const struct region_case *c = test->param_value;
	struct p2pbar_dev_region out[P2PBAR_MAX_DEV_REGIONS] = {};
	unsigned int nr = 99;
	const char *why = NULL;

	KUNIT_ASSERT_EQ(test, p2pbar_parse_regions(c->val, out, ARRAY_SIZE(out), &nr, &why),
			c->ret);
	if (c->ret) {
		KUNIT_EXPECT_NOT_NULL(test, why);
		KUNIT_EXPECT_EQ(test, nr, 99);	/* nothing reported on failure */
		return;
	}
	KUNIT_EXPECT_NULL(test, why);
	KUNIT_ASSERT_EQ(test, nr, c->nr);
	if (!nr)
		return;
	KUNIT_EXPECT_EQ(test, out[0].domain, c->first.domain);
	KUNIT_EXPECT_EQ(test, out[0].bus, c->first.bus);
	KUNIT_EXPECT_EQ(test, out[0].devfn, c->first.devfn);
	KUNIT_EXPECT_EQ(test, out[0].bar, c->first.bar);
	KUNIT_EXPECT_EQ(test, out[0].offset, c->first.offset);
	KUNIT_EXPECT_EQ(test, out[0].size, c->first.size);
}

/* ---- verdicts on fake topologies ---- */

#define ID(bus, dev, fn)	((bus) << 8 | PCI_DEVFN(dev, fn))
#define Q35V	0x8086	/* q35 host bridge 8086:29c0, not allow-listed */
#define Q35D	0x29c0

/* path from a list of ids, node[0] first; acs: bitmask of nodes with redirect */
static void mkpath(struct p2pbar_topo_path *p, u64 host, u16 hv, u16 hd,
		   unsigned int acs, int n, const u64 *ids)
{
	int i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < n; i++) {
		p->node[i].id = ids[i];
		p->node[i].acs_redirect = acs & BIT(i);
	}
	p->len = n;
	p->host = host;
	p->host_vendor = hv;
	p->host_device = hd;
}

/* root port 00:1c.0 -> upstream 01:00.0 -> downstream 02:00.0 / 02:01.0 */
static const u64 sw_nvme[] = { ID(3, 0, 0), ID(2, 0, 0), ID(1, 0, 0), ID(0, 0x1c, 0) };
static const u64 sw_bar[] = { ID(4, 0, 0), ID(2, 1, 0), ID(1, 0, 0), ID(0, 0x1c, 0) };
static const u64 rp_a[] = { ID(5, 0, 0), ID(0, 0x1d, 0) };
static const u64 rp_b[] = { ID(6, 0, 0), ID(0, 0x1e, 0) };
static const u64 fn0[] = { ID(7, 0, 0), ID(0, 0x1f, 0) };
static const u64 fn1[] = { ID(7, 0, 1), ID(0, 0x1f, 0) };

static void verdict_switch_is_direct(struct kunit *test)
{
	struct p2pbar_topo_path a, b;
	struct p2pbar_verdict v = {};
	char why[160];

	mkpath(&a, 0, Q35V, Q35D, 0, 4, sw_bar);
	mkpath(&b, 0, Q35V, Q35D, 0, 4, sw_nvme);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_DIRECT);
	KUNIT_EXPECT_EQ(test, v.distance, 4);
	KUNIT_EXPECT_EQ(test, v.reason, (u32)P2PBAR_REASON_COMMON_BRIDGE);
	KUNIT_EXPECT_EQ(test, v.host_ok, (u32)P2PBAR_HOST_UNUSED);
	p2pbar_verdict_explain(&v, why, sizeof(why));
	KUNIT_EXPECT_STREQ(test, why, "common upstream bridge, no ACS redirect");
}

static void verdict_same_function_and_sibling(struct kunit *test)
{
	struct p2pbar_topo_path a, b;
	struct p2pbar_verdict v = {};

	mkpath(&a, 0, Q35V, Q35D, 0, 2, fn0);
	p2pbar_verdict_compute(&a, &a, false, &v);
	KUNIT_EXPECT_EQ(test, v.distance, 0);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_DIRECT);

	mkpath(&b, 0, Q35V, Q35D, 0, 2, fn1);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.distance, 2);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_DIRECT);
}

static void verdict_acs_redirect(struct kunit *test)
{
	struct p2pbar_topo_path a, b;
	struct p2pbar_verdict v = {};
	char why[160];

	/* ACS redirect on the client's downstream port 02:00.0 (node 1) */
	mkpath(&a, 0, Q35V, Q35D, 0, 4, sw_bar);
	mkpath(&b, 0, Q35V, Q35D, BIT(1), 4, sw_nvme);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_REFUSED);
	KUNIT_EXPECT_EQ(test, v.distance, -1);
	KUNIT_EXPECT_EQ(test, v.reason, (u32)P2PBAR_REASON_ACS_REDIRECT);
	KUNIT_EXPECT_EQ(test, v.acs_devid, (u32)ID(2, 0, 0));
	KUNIT_EXPECT_EQ(test, v.host_ok, (u32)P2PBAR_HOST_NOT_LISTED);
	p2pbar_verdict_explain(&v, why, sizeof(why));
	KUNIT_EXPECT_STREQ(test, why,
			   "ACS redirect set on 0000:02:00.0; host bridge 8086:29c0 not in allowlist");

	/* the same path on an AMD Zen CPU goes through the host bridge */
	p2pbar_verdict_compute(&a, &b, true, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_HOST_BRIDGE);
	KUNIT_EXPECT_EQ(test, v.distance, 4);
	KUNIT_EXPECT_EQ(test, v.host_ok, (u32)P2PBAR_HOST_CPU);

	/* ACS on the common upstream port counts too (the kernel checks it) */
	mkpath(&a, 0, Q35V, Q35D, BIT(2), 4, sw_bar);
	mkpath(&b, 0, Q35V, Q35D, 0, 4, sw_nvme);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.acs_devid, (u32)ID(1, 0, 0));
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_REFUSED);
}

static void verdict_root_ports(struct kunit *test)
{
	struct p2pbar_topo_path a, b;
	struct p2pbar_verdict v = {};
	char why[160];

	mkpath(&a, 0, Q35V, Q35D, 0, 2, rp_a);
	mkpath(&b, 0, Q35V, Q35D, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_REFUSED);
	KUNIT_EXPECT_EQ(test, v.distance, -1);
	KUNIT_EXPECT_EQ(test, v.reason, (u32)P2PBAR_REASON_NO_COMMON_BRIDGE);
	p2pbar_verdict_explain(&v, why, sizeof(why));
	KUNIT_EXPECT_STREQ(test, why,
			   "no common upstream bridge; host bridge 8086:29c0 not in allowlist");

	p2pbar_verdict_compute(&a, &b, true, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_HOST_BRIDGE);
	KUNIT_EXPECT_EQ(test, v.distance, 4);	/* as the kernel counts: both full paths */

	/* Skylake-E host bridge is allow-listed */
	mkpath(&a, 0, 0x8086, 0x2030, 0, 2, rp_a);
	mkpath(&b, 0, 0x8086, 0x2030, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_HOST_BRIDGE);
	KUNIT_EXPECT_EQ(test, v.host_ok, (u32)P2PBAR_HOST_ALLOWLIST);
}

static void verdict_host_bridges(struct kunit *test)
{
	struct p2pbar_topo_path a, b;
	struct p2pbar_verdict v = {};

	/* Xeon E5 needs both ends under the same host bridge */
	mkpath(&a, 0, 0x8086, 0x3c00, 0, 2, rp_a);
	mkpath(&b, 0, 0x8086, 0x3c00, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_HOST_BRIDGE);
	mkpath(&b, 0x80, 0x8086, 0x3c00, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_REFUSED);
	KUNIT_EXPECT_EQ(test, v.host_ok, (u32)P2PBAR_HOST_NEEDS_SAME);

	/* two different allow-listed host bridges */
	mkpath(&a, 0, 0x8086, 0x2030, 0, 2, rp_a);
	mkpath(&b, 0x80, 0x8086, 0x2031, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_HOST_BRIDGE);

	/* one listed, the other not: the unlisted one is named */
	mkpath(&b, 0x80, Q35V, Q35D, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_REFUSED);
	KUNIT_EXPECT_EQ(test, v.host_id, 0x808629c0U);

	/* equal ids under different host bridges are different functions */
	mkpath(&a, 0, Q35V, Q35D, 0, 2, rp_a);
	mkpath(&b, 0x10000, Q35V, Q35D, 0, 2, rp_a);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.reason, (u32)P2PBAR_REASON_NO_COMMON_BRIDGE);

	/* no representative host bridge function at all */
	mkpath(&a, 0, 0, 0, 0, 2, rp_a);
	mkpath(&b, 0, 0, 0, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_REFUSED);

	/* Google: any device ID */
	mkpath(&a, 0, 0x1ae0, 0x1234, 0, 2, rp_a);
	mkpath(&b, 0, 0x1ae0, 0x1234, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_HOST_BRIDGE);
}

/*
 * VMD domains start at 0x10000: a function there and one in domain 0 with
 * the same bus and devfn are different functions under different host
 * bridges (a 16-bit domain in the identity made them one).
 */
static void verdict_vmd_domains(struct kunit *test)
{
	static const u64 vmd[] = { P2PBAR_TOPO_ID(0x10000, ID(5, 0, 0)),
				   P2PBAR_TOPO_ID(0x10000, ID(0, 0x1d, 0)) };
	struct p2pbar_topo_path a, b;
	struct p2pbar_verdict v = {};

	mkpath(&a, P2PBAR_TOPO_ID(0x10000, 0), Q35V, Q35D, 0, 2, vmd);
	mkpath(&b, P2PBAR_TOPO_ID(0, 0), Q35V, Q35D, 0, 2, rp_a);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.reason, (u32)P2PBAR_REASON_NO_COMMON_BRIDGE);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_REFUSED);
}

/*
 * The running kernel decides: a host bridge only 7.2 lists (DSA SPR0) is
 * refused by a 6.12 kernel, and one this table lacks but the kernel allows
 * is allowed; the walk only explains.
 */
static void verdict_is_the_kernels(struct kunit *test)
{
	struct p2pbar_topo_path a, b;
	struct p2pbar_verdict v = {};
	char why[160];

	mkpath(&a, 0, 0x8086, 0x0b25, 0, 2, rp_a);
	mkpath(&b, 0, 0x8086, 0x0b25, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_HOST_BRIDGE);
	p2pbar_verdict_reconcile(&v, -1);		/* 6.12 says no */
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_REFUSED);
	KUNIT_EXPECT_EQ(test, v.distance, -1);
	KUNIT_EXPECT_EQ(test, v.host_ok, (u32)P2PBAR_HOST_NOT_LISTED);
	p2pbar_verdict_explain(&v, why, sizeof(why));
	KUNIT_EXPECT_STREQ(test, why,
			   "no common upstream bridge; host bridge 8086:0b25 not in allowlist");

	mkpath(&a, 0, Q35V, Q35D, 0, 2, rp_a);
	mkpath(&b, 0, Q35V, Q35D, 0, 2, rp_b);
	p2pbar_verdict_compute(&a, &b, false, &v);
	p2pbar_verdict_reconcile(&v, 4);		/* a kernel that allows it */
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_HOST_BRIDGE);
	KUNIT_EXPECT_EQ(test, v.distance, 4);
	KUNIT_EXPECT_EQ(test, v.host_ok, (u32)P2PBAR_HOST_ALLOWLIST);

	mkpath(&a, 0, Q35V, Q35D, 0, 4, sw_bar);
	mkpath(&b, 0, Q35V, Q35D, 0, 4, sw_nvme);
	p2pbar_verdict_compute(&a, &b, false, &v);
	p2pbar_verdict_reconcile(&v, 4);
	KUNIT_EXPECT_EQ(test, v.map_type, (u32)P2PBAR_MAP_DIRECT);
	KUNIT_EXPECT_EQ(test, v.host_ok, (u32)P2PBAR_HOST_UNUSED);
}

#ifdef HAVE_KUNIT_VM_MMAP
/*
 * The ioctl argument convention (p2p_ioctl_copy_in/out) on a structure that
 * grew: version 1 ended at @a, version 2 added @b.
 */
struct grown {
	u32 argsz;
	u32 flags;
	u64 a;
	u64 b;		/* version 2 */
};

#define GROWN_MINSZ	offsetofend(struct grown, a)

struct copy_case {
	const char *name;
	u32 argsz;
	u8 tail;	/* what the 16 user bytes after the structure hold */
	int ret;
};

static const struct copy_case copy_cases[] = {
	{ "shorter than version 1", GROWN_MINSZ - 4, 0, -EINVAL },
	{ "version 1: b reads as zero", GROWN_MINSZ, 0x5a, 0 },
	{ "this version", sizeof(struct grown), 0x5a, 0 },
	{ "a newer one, tail zero", sizeof(struct grown) + 16, 0, 0 },
	{ "a newer one, tail set", sizeof(struct grown) + 16, 0x5a, -E2BIG },
};

static void copy_case_desc(const struct copy_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(copy, copy_cases, copy_case_desc);

static void ioctl_copy_table(struct kunit *test)
{
	const struct copy_case *c = test->param_value;
	u8 user[sizeof(struct grown) + 16], back[sizeof(user)];
	struct grown in = { .argsz = c->argsz, .a = 0x1111, .b = 0x2222 }, k;
	unsigned long uaddr;
	size_t n;

	uaddr = kunit_vm_mmap(test, NULL, 0, PAGE_SIZE, PROT_READ | PROT_WRITE,
			      MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_NE_MSG(test, uaddr, 0UL, "no user memory");
	/* the caller's bytes: its argsz of the structure, then c->tail */
	memset(user, c->tail, sizeof(user));
	n = min_t(size_t, c->argsz, sizeof(in));
	memcpy(user, &in, n);
	KUNIT_ASSERT_EQ(test, copy_to_user((void __user *)uaddr, user, sizeof(user)), 0UL);

	memset(&k, 0xee, sizeof(k));
	KUNIT_ASSERT_EQ(test, p2p_ioctl_copy_in(&k, sizeof(k), GROWN_MINSZ, uaddr), c->ret);
	if (c->ret)
		return;
	KUNIT_EXPECT_EQ(test, k.argsz, c->argsz);
	KUNIT_EXPECT_EQ(test, k.a, 0x1111ULL);
	/* a member the caller does not have reads as zero, not as its tail */
	KUNIT_EXPECT_EQ(test, k.b, c->argsz >= sizeof(k) ? 0x2222ULL : 0ULL);

	/* the kernel fills everything in; no more than argsz goes back */
	k.a = 0x3333;
	k.b = 0x4444;
	KUNIT_ASSERT_EQ(test, p2p_ioctl_copy_out(uaddr, &k, sizeof(k)), 0);
	KUNIT_ASSERT_EQ(test, copy_from_user(back, (void __user *)uaddr, sizeof(back)), 0UL);
	KUNIT_EXPECT_EQ(test, ((struct grown *)back)->a, 0x3333ULL);
	if (c->argsz >= sizeof(k))
		KUNIT_EXPECT_EQ(test, ((struct grown *)back)->b, 0x4444ULL);
	else	/* version 1's caller: its memory after the structure untouched */
		KUNIT_EXPECT_EQ(test, back[GROWN_MINSZ], c->tail);
	KUNIT_EXPECT_EQ(test, back[sizeof(back) - 1], user[sizeof(back) - 1]);
}
#endif

static struct kunit_case p2pbar_cases[] = {
#ifdef HAVE_KUNIT_VM_MMAP
	KUNIT_CASE_PARAM(ioctl_copy_table, copy_gen_params),
#endif
	KUNIT_CASE(pick_auto_takes_largest_64bit_prefetchable),
	KUNIT_CASE(pick_auto_without_candidate),
	KUNIT_CASE_PARAM(pick_table, pick_gen_params),
	KUNIT_CASE(pick_misaligned_bar_start),
	KUNIT_CASE_PARAM(alloc_table, alloc_gen_params),
	KUNIT_CASE_PARAM(region_table, region_gen_params),
	KUNIT_CASE(verdict_switch_is_direct),
	KUNIT_CASE(verdict_same_function_and_sibling),
	KUNIT_CASE(verdict_acs_redirect),
	KUNIT_CASE(verdict_root_ports),
	KUNIT_CASE(verdict_host_bridges),
	KUNIT_CASE(verdict_vmd_domains),
	KUNIT_CASE(verdict_is_the_kernels),
	{}
};

static struct kunit_suite p2pbar_suite = {
	.name = "p2pbar",
	.test_cases = p2pbar_cases,
};

kunit_test_suite(p2pbar_suite);

P2P_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING");
MODULE_DESCRIPTION("KUnit tests of the p2pbar provider's logic");
MODULE_LICENSE("GPL");
