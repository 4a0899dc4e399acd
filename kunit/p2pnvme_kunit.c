// SPDX-License-Identifier: GPL-2.0
/* KUnit tests of the NVMe client's request validation (no device needed). */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/string.h>
#include <p2p_compat.h>

#include "../drivers/p2pnvme/p2pnvme.h"

#define R P2PNVME_OP_READ
#define BUF 0x10000ULL

struct io_case {
	const char *name;
	struct p2pnvme_io io;
	int ret;
};

/* a namespace of 1000 LBAs of 512 bytes */
static const struct io_case io_cases[] = {
	{ "one LBA", { .op = R, .slba = 0, .len = 512, .addr = BUF }, 0 },
	{ "last LBA", { .op = R, .slba = 999, .len = 512, .addr = BUF }, 0 },
	{ "whole namespace", { .op = R, .len = 1000 * 512, .addr = BUF }, 0 },
	{ "dword-aligned buffer", { .op = R, .len = 512, .addr = BUF + 4 }, 0 },
	{ "one past the end", { .op = R, .slba = 999, .len = 1024, .addr = BUF }, -ERANGE },
	{ "start past the end", { .op = R, .slba = 1000, .len = 512, .addr = BUF }, -ERANGE },
	{ "LBA overflow", { .op = R, .slba = ~0ULL, .len = 512, .addr = BUF }, -ERANGE },
	{ "zero length", { .op = R, .len = 0, .addr = BUF }, -EINVAL },
	{ "partial LBA", { .op = R, .len = 513, .addr = BUF }, -EINVAL },
	{ "unaligned buffer", { .op = R, .len = 512, .addr = BUF + 2 }, -EINVAL },
	{ "no buffer", { .op = R, .len = 512 }, -EINVAL },
	{ "buffer wraps", { .op = R, .len = 1024, .addr = ~0ULL - 511 }, -EINVAL },
	{ "unknown op", { .op = 4, .len = 512, .addr = BUF }, -EOPNOTSUPP },
	{ "unknown flag", { .op = R, .len = 512, .addr = BUF, .flags = 1 << 4 }, -EINVAL },
	{ "PRP and SGL", { .op = R, .len = 512, .addr = BUF,
			   .flags = P2PNVME_IO_F_PRP | P2PNVME_IO_F_SGL }, -EINVAL },
	{ "bounce both ways", { .op = R, .len = 512, .addr = BUF,
				.flags = P2PNVME_IO_F_BOUNCE | P2PNVME_IO_F_NO_BOUNCE }, -EINVAL },
	{ "reserved", { .op = R, .len = 512, .addr = BUF, .reserved = 1 }, -EINVAL },
	{ "output preset", { .op = R, .len = 512, .addr = BUF, .status = 1 }, -EINVAL },
	{ "flush", { .op = P2PNVME_OP_FLUSH }, 0 },
	{ "flush with range", { .op = P2PNVME_OP_FLUSH, .slba = 1 }, -EINVAL },
	{ "write zeroes", { .op = P2PNVME_OP_WRITE_ZEROES, .slba = 10, .len = 4096 }, 0 },
	{ "write zeroes with buffer", { .op = P2PNVME_OP_WRITE_ZEROES, .len = 512, .addr = BUF },
	  -EINVAL },
	{ "write zeroes past the end", { .op = P2PNVME_OP_WRITE_ZEROES, .slba = 999, .len = 1024 },
	  -ERANGE },
};

static void io_case_desc(const struct io_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(io, io_cases, io_case_desc);

static void check_io_table(struct kunit *test)
{
	const struct io_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, p2pnvme_check_io(&c->io, 9, 1000), c->ret);
}

static struct kunit_case p2pnvme_cases[] = {
	KUNIT_CASE_PARAM(check_io_table, io_gen_params),
	{}
};

static struct kunit_suite p2pnvme_suite = {
	.name = "p2pnvme",
	.test_cases = p2pnvme_cases,
};

kunit_test_suite(p2pnvme_suite);

P2P_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING");
MODULE_DESCRIPTION("KUnit tests of the p2pnvme client's request checks");
MODULE_LICENSE("GPL");
