// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the NVMe client without a device: request validation, the
 * kernel's NVMe passthrough taken as nvme-pci takes it, a registered
 * buffer's placement checked when a request arms it, the list blocks its
 * requests take, the fence a submission batch's reads into a registered
 * dma-buf share, and the PRP and SGL builders against hand-made DMA
 * scatterlists.
 */
#include <kunit/test.h>
#include <linux/dma-resv.h>
#include <linux/module.h>
#include <linux/nvme_ioctl.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <p2p_compat.h>

#include "../drivers/p2pnvme/p2pnvme.h"
#include "../drivers/p2pnvme/io.h"
#include "../drivers/p2pnvme/reg.h"
#include "../drivers/p2pnvme/shadow.h"

#define R P2PNVME_OP_READ
#define W P2PNVME_OP_WRITE
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
	{ "unknown flag", { .op = R, .len = 512, .addr = BUF, .flags = 1 << 7 }, -EINVAL },
	{ "PRP and SGL", { .op = R, .len = 512, .addr = BUF,
			   .flags = P2PNVME_IO_F_PRP | P2PNVME_IO_F_SGL }, -EINVAL },
	{ "bounce both ways", { .op = R, .len = 512, .addr = BUF,
				.flags = P2PNVME_IO_F_BOUNCE | P2PNVME_IO_F_NO_BOUNCE }, -EINVAL },
	{ "P2P required, bounce forced", { .op = R, .len = 512, .addr = BUF,
					   .flags = P2PNVME_IO_F_BOUNCE |
						    P2PNVME_IO_F_REQUIRE_P2P }, -EINVAL },
	{ "P2P required", { .op = R, .len = 512, .addr = BUF,
			    .flags = P2PNVME_IO_F_REQUIRE_P2P }, 0 },
	/* out-fields are cleared by the ioctls, not checked: a struct may be re-used */
	{ "result preset", { .op = R, .len = 512, .addr = BUF, .result = -5 }, 0 },
	{ "output preset", { .op = R, .len = 512, .addr = BUF, .status = 1, .path = 2 }, 0 },
	{ "flush", { .op = P2PNVME_OP_FLUSH }, 0 },
	{ "flush with range", { .op = P2PNVME_OP_FLUSH, .slba = 1 }, -EINVAL },
	{ "write zeroes", { .op = P2PNVME_OP_WRITE_ZEROES, .slba = 10, .len = 4096 }, 0 },
	{ "write zeroes with buffer", { .op = P2PNVME_OP_WRITE_ZEROES, .len = 512, .addr = BUF },
	  -EINVAL },
	{ "write zeroes past the end", { .op = P2PNVME_OP_WRITE_ZEROES, .slba = 999, .len = 1024 },
	  -ERANGE },
	{ "dma-buf at offset 0", { .op = R, .len = 512, .flags = P2PNVME_IO_F_DMABUF,
				   .dmabuf_fd = 3 }, 0 },
	{ "dma-buf offset not dword aligned", { .op = R, .len = 512, .addr = 2,
						.flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = 3 },
	  -EINVAL },
	{ "dma-buf with a negative fd", { .op = R, .len = 512, .flags = P2PNVME_IO_F_DMABUF,
					  .dmabuf_fd = -1 }, -EINVAL },
	{ "dma-buf with bounce forced", { .op = R, .len = 512, .dmabuf_fd = 3,
					  .flags = P2PNVME_IO_F_DMABUF | P2PNVME_IO_F_BOUNCE },
	  -EINVAL },
	{ "dma-buf fd without the flag", { .op = R, .len = 512, .addr = BUF, .dmabuf_fd = 3 },
	  -EINVAL },
	{ "flush with a dma-buf", { .op = P2PNVME_OP_FLUSH, .flags = P2PNVME_IO_F_DMABUF },
	  -EINVAL },
	{ "reserved tail set", { .op = R, .len = 512, .addr = BUF, .reserved = 1 }, -EINVAL },
	{ "registered at offset 0", { .op = R, .len = 512, .flags = P2PNVME_IO_F_REGISTERED },
	  0 },
	{ "registered, any id", { .op = W, .len = 4096, .addr = 4096, .buf_id = 0xffffffff,
				  .flags = P2PNVME_IO_F_REGISTERED }, 0 },
	{ "registered offset not dword aligned", { .op = R, .len = 512, .addr = 2,
						   .flags = P2PNVME_IO_F_REGISTERED }, -EINVAL },
	{ "registered offset wraps", { .op = R, .len = 1024, .addr = ~0ULL - 511,
				       .flags = P2PNVME_IO_F_REGISTERED }, -EINVAL },
	{ "registered and dma-buf", { .op = R, .len = 512,
				      .flags = P2PNVME_IO_F_REGISTERED | P2PNVME_IO_F_DMABUF },
	  -EINVAL },
	{ "registered with bounce forced",
	  { .op = R, .len = 512, .flags = P2PNVME_IO_F_REGISTERED | P2PNVME_IO_F_BOUNCE },
	  -EINVAL },
	{ "registered, no bounce",
	  { .op = R, .len = 512, .flags = P2PNVME_IO_F_REGISTERED | P2PNVME_IO_F_NO_BOUNCE }, 0 },
	{ "flush with a registered buffer", { .op = P2PNVME_OP_FLUSH,
					      .flags = P2PNVME_IO_F_REGISTERED }, -EINVAL },
	{ "write zeroes with a registered buffer", { .op = P2PNVME_OP_WRITE_ZEROES, .len = 512,
						     .flags = P2PNVME_IO_F_REGISTERED }, -EINVAL },
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

/* check_io_table covers a 1000-LBA namespace; the size cap needs a bigger one */
static void check_io_max_len(struct kunit *test)
{
	struct p2pnvme_io io = { .op = R, .len = P2PNVME_IO_MAX_LEN, .addr = BUF };

	KUNIT_EXPECT_EQ(test, p2pnvme_check_io(&io, 9, 1ULL << 32), 0);
	io.len += 512;
	KUNIT_EXPECT_EQ(test, p2pnvme_check_io(&io, 9, 1ULL << 32), -EINVAL);
}

/* ---- the admin passthrough's rules ----------------------------------- */

struct admin_case {
	const char *name;
	u8 opcode;
	u32 cdw10, cdw11;
	u8 cns;			/* Identify */
	int ret;		/* of p2pnvme_admin_xfer_len() */
	u64 len;		/* what it says the controller moves */
	bool unprivileged;	/* allowed without CAP_SYS_ADMIN */
};

#define ID nvme_admin_identify
#define LOG nvme_admin_get_log_page
#define FEAT nvme_admin_get_features
#define NUMD(dw) ((u32)((dw) - 1) << 16)	/* NUMDL of a dword count */

static const struct admin_case admin_cases[] = {
	{ "Identify Namespace", ID, .cns = NVME_ID_CNS_NS, .len = 4096, .unprivileged = true },
	{ "Identify Controller", ID, .cns = NVME_ID_CNS_CTRL, .len = 4096, .unprivileged = true },
	{ "Identify CS Namespace", ID, .cns = NVME_ID_CNS_CS_NS, .len = 4096,
	  .unprivileged = true },
	{ "Identify CS Controller", ID, .cns = NVME_ID_CNS_CS_CTRL, .len = 4096,
	  .unprivileged = true },
	{ "Identify NS CS independent", ID, .cns = NVME_ID_CNS_NS_CS_INDEP, .len = 4096,
	  .unprivileged = true },
	{ "Identify active namespace list", ID, .cns = NVME_ID_CNS_NS_ACTIVE_LIST, .len = 4096 },
	{ "Identify controller list", ID, .cns = NVME_ID_CNS_CTRL_LIST, .len = 4096 },
	{ "Identify, cdw10 beyond CNS", ID, .cdw10 = 0xffff0000 | NVME_ID_CNS_CTRL,
	  .cns = NVME_ID_CNS_CTRL, .len = 4096, .unprivileged = true },
	{ "SMART log, 512 bytes", LOG, NUMD(128) | NVME_LOG_SMART, .len = 512 },
	{ "one dword of a log", LOG, NUMD(1) | NVME_LOG_ERROR, .len = 4 },
	{ "16 KiB of the error log", LOG, NUMD(4096) | NVME_LOG_ERROR, .len = 16384 },
	{ "telemetry, NUMDU too", LOG, NUMD(0x10000) | NVME_LOG_TELEMETRY_HOST, 1,
	  .len = 0x20000 * 4 },
	{ "the largest log", LOG, 0xffff0000 | NVME_LOG_TELEMETRY_HOST, 0xffff,
	  .len = 0x100000000ULL * 4 },
	{ "NUMDU's upper half is not NUMD", LOG, NUMD(128) | NVME_LOG_SMART, 0xffff0000,
	  .len = 512 },
	{ "feature: number of queues", FEAT, NVME_FEAT_NUM_QUEUES, .len = 0 },
	{ "feature: SEL above the FID", FEAT, 3 << 8 | NVME_FEAT_ARBITRATION, .len = 0 },
	{ "feature: timestamp", FEAT, NVME_FEAT_TIMESTAMP, .len = 8 },
	{ "feature: LBA range type", FEAT, NVME_FEAT_LBA_RANGE, .len = 4096 },
	{ "feature: APST", FEAT, NVME_FEAT_AUTO_PST, .len = 256 },
	{ "feature: host behavior", FEAT, NVME_FEAT_HOST_BEHAVIOR, .len = 512 },
	{ "feature: host identifier", FEAT, NVME_FEAT_HOST_ID, .len = 8 },
	{ "feature: extended host identifier", FEAT, NVME_FEAT_HOST_ID, 1, .len = 16 },
	{ "feature: vendor specific", FEAT, 0xc0, .ret = -EINVAL },
	{ "feature: last vendor FID", FEAT, 0xff, .ret = -EINVAL },
	{ "feature: reserved FID", FEAT, 0x50, .ret = -EINVAL },
	{ "feature: FID 0", FEAT, 0, .ret = -EINVAL },
	{ "Set Features", nvme_admin_set_features, NVME_FEAT_NUM_QUEUES, .ret = -EINVAL },
	{ "Format NVM", nvme_admin_format_nvm, .ret = -EINVAL },
	{ "vendor admin command", 0xc1, .ret = -EINVAL },
};

static void admin_case_desc(const struct admin_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(admin, admin_cases, admin_case_desc);

static void admin_table(struct kunit *test)
{
	const struct admin_case *c = test->param_value;
	struct nvme_command cmd = {};
	u64 len = ~0ULL;

	cmd.common.opcode = c->opcode;
	cmd.common.cdw10 = cpu_to_le32(c->cdw10);
	cmd.common.cdw11 = cpu_to_le32(c->cdw11);
	if (c->opcode == ID)
		cmd.identify.cns = c->cns;
	KUNIT_EXPECT_EQ(test, p2pnvme_admin_xfer_len(&cmd, &len), c->ret);
	if (!c->ret)
		KUNIT_EXPECT_EQ(test, len, c->len);
	KUNIT_EXPECT_EQ(test, p2pnvme_admin_unprivileged(&cmd), c->unprivileged);
}

/* ---- Identify Namespace: the LBA format ------------------------------- */

struct fmt_case {
	const char *name;
	u8 flbas, nlbaf;
	u8 idx, ds;		/* lbaf[idx] gets ds ... */
	u16 ms;			/* ... and ms; every other format 512 + 8 */
	int ret;
	u32 shift;
	u32 max_xfer;		/* the controller's, 0: the driver's 512 KiB */
};

static const struct fmt_case fmt_cases[] = {
	{ "format 0, 512 bytes", 0x00, 0, 0, 9, 0, 0, 9 },
	{ "format 1, 4 KiB", 0x01, 1, 1, 12, 0, 0, 12 },
	{ "format 15", 0x0f, 15, 15, 12, 0, 0, 12 },
	/* FLBAS 6:5 are bits 5:4 of the index (NVMe 2.0) */
	{ "format 16 is not format 0", 0x20, 16, 16, 12, 0, 0, 12 },
	{ "format 16 with metadata", 0x20, 16, 16, 12, 8, -EOPNOTSUPP },
	{ "format 63", 0x6f, 63, 63, 9, 0, 0, 9 },
	{ "extended-LBA bit is not the index", 0x10, 0, 0, 9, 0, 0, 9 },
	{ "index past NLBAF", 0x02, 1, 2, 9, 0, -EINVAL },
	{ "index 16 past NLBAF 15", 0x20, 15, 16, 9, 0, -EINVAL },
	{ "metadata, separate buffer", 0x00, 0, 0, 9, 8, -EOPNOTSUPP },
	{ "metadata, extended LBAs", 0x10, 0, 0, 9, 8, -EOPNOTSUPP },
	{ "LBA size 256", 0x00, 0, 0, 8, 0, -EOPNOTSUPP },
	{ "LBA size above a page", 0x00, 0, 0, PAGE_SHIFT + 1, 0, -EOPNOTSUPP },
	/*
	 * An LBA larger than one command moves (16 KiB pages, MDTS 1: 8 KiB)
	 * would make every command's NLB underflow; one LBA per command works
	 */
	{ "LBA larger than the max transfer", 0x00, 0, 0, 12, 0, -EOPNOTSUPP, .max_xfer = SZ_2K },
	{ "LBA as large as the max transfer", 0x00, 0, 0, 12, 0, 0, 12, .max_xfer = SZ_4K },
	{ "512-byte LBA, max transfer 8 KiB", 0x00, 0, 0, 9, 0, 0, 9, .max_xfer = SZ_8K },
#if PAGE_SHIFT >= 14
	{ "16 KiB LBA, MDTS 1 (8 KiB)", 0x00, 0, 0, 14, 0, -EOPNOTSUPP, .max_xfer = SZ_8K },
#endif
};

static void fmt_case_desc(const struct fmt_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(fmt, fmt_cases, fmt_case_desc);

static void ns_format_table(struct kunit *test)
{
	const struct fmt_case *c = test->param_value;
	struct nvme_id_ns *ns = kunit_kzalloc(test, sizeof(*ns), GFP_KERNEL);
	u32 shift = 0;
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, ns);
	/* every format but the one named: metadata, so a wrong pick fails */
	for (i = 0; i < ARRAY_SIZE(ns->lbaf); i++) {
		ns->lbaf[i].ds = 9;
		ns->lbaf[i].ms = cpu_to_le16(8);
	}
	ns->flbas = c->flbas;
	ns->nlbaf = c->nlbaf;
	ns->lbaf[c->idx].ds = c->ds;
	ns->lbaf[c->idx].ms = cpu_to_le16(c->ms);
	KUNIT_EXPECT_EQ(test, p2pnvme_ns_format(ns, c->max_xfer ?: SZ_512K, &shift), c->ret);
	if (!c->ret)
		KUNIT_EXPECT_EQ(test, shift, c->shift);
}

/* ---- the kernel's NVMe I/O passthrough, as nvme-pci takes it ------------ */

/*
 * NVME_IOCTL_IO_CMD and NVME_URING_CMD_IO: a buffer larger than the NLB's
 * bytes is taken (nvme read -z 8192 for one 4 KiB LBA, on nvme-pci), only
 * the NLB's bytes move; a smaller one stays refused.
 */
static void std_io_data_len(struct kunit *test)
{
	struct p2pnvme *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	struct nvme_uring_cmd nc = { .opcode = nvme_cmd_read, .nsid = 1, .addr = BUF,
				     .cdw10 = 8, .cdw12 = 0 };
	struct p2pnvme_io io;

	KUNIT_ASSERT_NOT_NULL(test, c);
	c->nsid = 1;
	c->lba_shift = 12;
	nc.data_len = SZ_4K;
	KUNIT_EXPECT_EQ(test, p2pnvme_io_from_nvme(c, &nc, false, &io), 0);
	KUNIT_EXPECT_EQ(test, io.len, SZ_4K);
	nc.data_len = SZ_8K;
	KUNIT_EXPECT_EQ(test, p2pnvme_io_from_nvme(c, &nc, false, &io), 0);
	KUNIT_EXPECT_EQ(test, io.len, SZ_4K);
	KUNIT_EXPECT_EQ(test, io.addr, BUF);
	KUNIT_EXPECT_EQ(test, io.slba, 8);
	KUNIT_EXPECT_EQ(test, p2pnvme_check_io(&io, c->lba_shift, 1000), 0);
	nc.opcode = nvme_cmd_write;
	nc.data_len = SZ_64K;
	KUNIT_EXPECT_EQ(test, p2pnvme_io_from_nvme(c, &nc, false, &io), 0);
	KUNIT_EXPECT_EQ(test, io.len, SZ_4K);
	/* less than the NLB's bytes: the controller would run past the buffer */
	nc.data_len = SZ_4K - 4;
	KUNIT_EXPECT_EQ(test, p2pnvme_io_from_nvme(c, &nc, false, &io), -EINVAL);
	nc.data_len = 0;
	KUNIT_EXPECT_EQ(test, p2pnvme_io_from_nvme(c, &nc, false, &io), -EINVAL);
}

/* ---- a registered buffer's placement, at arming ----------------------- */

/*
 * A registered dma-buf, as reg_remap() leaves it after an eviction that a
 * request's lookup did not see: mapped again, in host memory.
 */
static struct p2pnvme_req *armed_req(struct kunit *test, bool require, bool buf_require,
				     bool host)
{
	struct p2pnvme_reg *b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
	struct p2pnvme_io *io = kunit_kzalloc(test, sizeof(*io), GFP_KERNEL);
	struct p2pnvme_req *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);

	KUNIT_ASSERT_TRUE(test, b && io && r);
	kref_init(&b->kref);
	init_waitqueue_head(&b->wq);
	b->kind = P2PNVME_REG_DMABUF;
	b->len = SZ_64K;
	b->require_p2p = buf_require;
	b->host = host;
	strscpy(b->owner, host ? "" : "0000:05:00.0", sizeof(b->owner));
	*io = (struct p2pnvme_io){ .op = R, .len = SZ_4K, .flags = P2PNVME_IO_F_REGISTERED |
				   (require ? P2PNVME_IO_F_REQUIRE_P2P : 0) };
	r->io = io;
	r->reg = b;
	r->dir = DMA_FROM_DEVICE;
	return r;
}

/*
 * P2P required (by the transfer or the buffer): the lookup saw the buffer
 * in a BAR, and between the lookup and the arming the exporter evicted it
 * and another transfer's lookup mapped it again in host memory. Nothing
 * may be sent: -EREMOTEIO at arming, nothing left busy. Without the
 * requirement the same buffer arms (path dmabuf-host).
 */
static void reg_arm_placement(struct kunit *test)
{
	struct p2pnvme_req *r;

	r = armed_req(test, true, false, true);
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), -EREMOTEIO);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->reg->busy), 0);
	KUNIT_EXPECT_FALSE(test, r->reg_busy);

	r = armed_req(test, false, true, true);
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), -EREMOTEIO);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->reg->busy), 0);

	r = armed_req(test, false, false, true);
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->reg->busy), 1);
	KUNIT_EXPECT_TRUE(test, r->reg_busy);

	r = armed_req(test, true, true, false);
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), 0);
	KUNIT_EXPECT_STREQ(test, r->dmabuf_owner, "0000:05:00.0");

	/* moved and not mapped again yet: looked up again (-ESTALE), as before */
	r = armed_req(test, true, false, false);
	r->reg->stale = true;
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), -ESTALE);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->reg->busy), 0);
}

/*
 * A registered dma-buf in device memory the CPU reaches coherently (GH200's
 * HBM, a NUMA node without CPUs: p2pnvme_dmabuf_in_host() says host and
 * coherent) has a path of its own, dmabuf-coherent, not host memory's, and
 * P2P required refuses it at arming as it refuses host memory.
 */
static void reg_arm_coherent(struct kunit *test)
{
	struct p2pnvme_req *r;

	r = armed_req(test, false, false, false);
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_path(r->reg), P2PNVME_PATH_DMABUF);
	r = armed_req(test, false, false, true);
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_path(r->reg), P2PNVME_PATH_DMABUF_HOST);

	r = armed_req(test, false, false, true);
	r->reg->coherent = true;
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_path(r->reg), P2PNVME_PATH_DMABUF_COHERENT);
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->reg->busy), 1);
	KUNIT_EXPECT_STREQ(test, r->dmabuf_owner, "");

	r = armed_req(test, true, false, true);
	r->reg->coherent = true;
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), -EREMOTEIO);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->reg->busy), 0);
	KUNIT_EXPECT_FALSE(test, r->reg_busy);

	r = armed_req(test, false, true, true);
	r->reg->coherent = true;
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), -EREMOTEIO);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->reg->busy), 0);
}

/*
 * An invalidation (the exporter's reservation lock held, maybe from a
 * shrinker in direct reclaim) never waits for a request busy on the
 * buffer: it returns at once saying the mapping must stay (the request's
 * fence holds the exporter's move), and the buffer takes no new request
 * (-ESTALE: looked up again, mapped where it went). Once nothing is busy
 * the mapping may go at once.
 */
static void reg_invalidate_busy(struct kunit *test)
{
	struct p2pnvme_req *r = armed_req(test, false, false, false);
	struct p2pnvme_req *r2 = armed_req(test, false, false, false);
	struct p2pnvme_reg *b = r->reg;

	r2->reg = b;
	KUNIT_ASSERT_EQ(test, p2pnvme_reg_arm(r), 0);
	KUNIT_EXPECT_FALSE(test, p2pnvme_reg_invalidated(b));
	KUNIT_EXPECT_TRUE(test, b->stale);
	KUNIT_EXPECT_EQ(test, atomic_read(&b->busy), 1);
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r2), -ESTALE);
	KUNIT_EXPECT_FALSE(test, r2->reg_busy);
	KUNIT_EXPECT_EQ(test, atomic_read(&b->busy), 1);
	p2pnvme_reg_idle(r);
	KUNIT_EXPECT_EQ(test, atomic_read(&b->busy), 0);
	KUNIT_EXPECT_TRUE(test, p2pnvme_reg_invalidated(b));
}

#define LIST_DMA	0xabc000ULL
#define A		0x100000000ULL	/* a bus address in "p2pmem" */
#define B		0x200000000ULL

/* A DMA-mapped scatterlist made by hand: (address, length) pairs. */
static struct scatterlist *mksg(struct kunit *test, const u64 *seg, unsigned int n)
{
	struct scatterlist *sg = kunit_kcalloc(test, n, sizeof(*sg), GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, sg);
	sg_init_table(sg, n);
	for (i = 0; i < n; i++) {
		sg_dma_address(&sg[i]) = seg[2 * i];
		sg_dma_len(&sg[i]) = seg[2 * i + 1];
	}
	return sg;
}

struct prp_env {
	__le64 *list;
	struct nvme_command cmd;
	struct p2pnvme_cursor cur;
};

static int prps(struct kunit *test, struct prp_env *e, const u64 *seg, unsigned int n,
		u64 len)
{
	if (!e->list) {
		e->list = kunit_kzalloc(test, 4096, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, e->list);
		e->cur.sg = mksg(test, seg, n);
	}
	memset(&e->cmd, 0, sizeof(e->cmd));
	return p2pnvme_build_prps(e->list, LIST_DMA, &e->cur, len, &e->cmd);
}

#define PRP1(e) le64_to_cpu((e)->cmd.rw.dptr.prp1)
#define PRP2(e) le64_to_cpu((e)->cmd.rw.dptr.prp2)

static void prp_one_and_two(struct kunit *test)
{
	const u64 one[] = { A, 0x10000 };
	struct prp_env e = {};

	/* one page: PRP1 only */
	KUNIT_ASSERT_EQ(test, prps(test, &e, one, 1, 4096), 0);
	KUNIT_EXPECT_EQ(test, PRP1(&e), A);
	KUNIT_EXPECT_EQ(test, PRP2(&e), 0);
	/* the cursor moved on: two pages, PRP2 is the second page itself */
	KUNIT_ASSERT_EQ(test, prps(test, &e, one, 1, 8192), 0);
	KUNIT_EXPECT_EQ(test, PRP1(&e), A + 0x1000);
	KUNIT_EXPECT_EQ(test, PRP2(&e), A + 0x2000);
	/* three pages: PRP2 points to a list of the last two */
	KUNIT_ASSERT_EQ(test, prps(test, &e, one, 1, 3 * 4096), 0);
	KUNIT_EXPECT_EQ(test, PRP1(&e), A + 0x3000);
	KUNIT_EXPECT_EQ(test, PRP2(&e), LIST_DMA);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(e.list[0]), A + 0x4000);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(e.list[1]), A + 0x5000);
}

static void prp_offsets(struct kunit *test)
{
	const u64 odd[] = { A + 0x200, 0x1200 };	/* 9 LBAs at +512 */
	const u64 two[] = { A + 0x800, 0x800, B, 0x3000 };
	struct prp_env e = {};

	KUNIT_ASSERT_EQ(test, prps(test, &e, odd, 1, 0x1200), 0);
	KUNIT_EXPECT_EQ(test, PRP1(&e), A + 0x200);
	KUNIT_EXPECT_EQ(test, PRP2(&e), A + 0x1000);

	/* a short first segment, then page-aligned pages elsewhere */
	memset(&e, 0, sizeof(e));
	KUNIT_ASSERT_EQ(test, prps(test, &e, two, 2, 0x3800), 0);
	KUNIT_EXPECT_EQ(test, PRP1(&e), A + 0x800);
	KUNIT_EXPECT_EQ(test, PRP2(&e), LIST_DMA);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(e.list[0]), B);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(e.list[1]), B + 0x1000);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(e.list[2]), B + 0x2000);
}

static void prp_refused(struct kunit *test)
{
	const u64 unaligned2[] = { A, 0x1000, B + 0x100, 0x1000 };
	const u64 shortpage[] = { A, 0x1000, B, 0x800, B + 0x1000, 0x1000 };
	const u64 odd_dword[] = { A + 2, 0x1000 };
	const u64 huge[] = { A, 600 * 4096 };
	struct prp_env e = {};

	KUNIT_EXPECT_EQ(test, prps(test, &e, unaligned2, 2, 0x2000), -EINVAL);
	memset(&e, 0, sizeof(e));
	KUNIT_EXPECT_EQ(test, prps(test, &e, shortpage, 3, 0x2800), -EINVAL);
	memset(&e, 0, sizeof(e));
	KUNIT_EXPECT_EQ(test, prps(test, &e, odd_dword, 1, 512), -EINVAL);
	memset(&e, 0, sizeof(e));
	/* nothing to describe, or more than the scatterlist holds */
	KUNIT_EXPECT_EQ(test, prps(test, &e, huge, 1, 0), -EINVAL);
	memset(&e, 0, sizeof(e));
	KUNIT_EXPECT_EQ(test, prps(test, &e, unaligned2, 1, 0x2000), -EINVAL);
	/* PRP1 + a full list page of 512 entries is the most one command takes */
	memset(&e, 0, sizeof(e));
	KUNIT_EXPECT_EQ(test, prps(test, &e, huge, 1, 513 * 4096), 0);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(e.list[511]), A + 512 * 4096);
	memset(&e, 0, sizeof(e));
	KUNIT_EXPECT_EQ(test, prps(test, &e, huge, 1, 514 * 4096), -E2BIG);
}

static void sgl_descriptors(struct kunit *test)
{
	const u64 three[] = { A + 0x200, 0xe00, B, 0x3000, A + 0x10000, 0x400 };
	struct nvme_sgl_desc *list = kunit_kzalloc(test, 4096, GFP_KERNEL);
	struct nvme_command cmd = {};
	struct p2pnvme_cursor cur;

	KUNIT_ASSERT_NOT_NULL(test, list);
	/* one segment: the descriptor sits in the command */
	cur.sg = mksg(test, three, 3);
	cur.off = 0;
	KUNIT_ASSERT_EQ(test, p2pnvme_build_sgl(list, LIST_DMA, &cur, 0x800, &cmd), 0);
	KUNIT_EXPECT_EQ(test, cmd.rw.flags, NVME_CMD_SGL_METABUF);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(cmd.rw.dptr.sgl.addr), A + 0x200);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(cmd.rw.dptr.sgl.length), 0x800);
	KUNIT_EXPECT_EQ(test, cmd.rw.dptr.sgl.type, NVME_SGL_FMT_DATA_DESC << 4);

	/* the rest of all three segments: a last-segment descriptor to a list */
	memset(&cmd, 0, sizeof(cmd));
	KUNIT_ASSERT_EQ(test, p2pnvme_build_sgl(list, LIST_DMA, &cur, 0x600 + 0x3000 + 0x400, &cmd),
			0);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(cmd.rw.dptr.sgl.addr), LIST_DMA);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(cmd.rw.dptr.sgl.length), 3 * sizeof(*list));
	KUNIT_EXPECT_EQ(test, cmd.rw.dptr.sgl.type, NVME_SGL_FMT_LAST_SEG_DESC << 4);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(list[0].addr), A + 0xa00);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(list[0].length), 0x600);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(list[1].addr), B);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(list[1].length), 0x3000);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(list[2].addr), A + 0x10000);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(list[2].length), 0x400);
	KUNIT_EXPECT_EQ(test, list[2].type, NVME_SGL_FMT_DATA_DESC << 4);

	/* the scatterlist is used up */
	memset(&cmd, 0, sizeof(cmd));
	KUNIT_EXPECT_EQ(test, p2pnvme_build_sgl(list, LIST_DMA, &cur, 512, &cmd), -EINVAL);
}

/*
 * p2pnvme_data_needs_list() is what lets a command go without a list: it
 * must say "none" exactly when the builders manage without one. Over
 * starting offsets, lengths and segment layouts: without a list, a build
 * fails with -E2BIG when and only when a list is needed, and otherwise
 * fills the command exactly as a build with a list does.
 */
static void needs_list_exact(struct kunit *test)
{
	static const u64 lens[] = { 4, 512, 0x1000 - 0x200, 0x1000, 0x1200, 0x2000, 0x2004,
				    0x3000, 0x5000 };
	static const u64 offs[] = { 0, 4, 0x200, 0xe00, 0xffc, 0x1000 };
	const u64 one[] = { A, 0x10000 };
	const u64 split[] = { A, 0x2000, B, 0x8000 };
	const u64 *layouts[] = { one, split };
	unsigned int nseg[] = { 1, 2 };
	const unsigned int nl = ARRAY_SIZE(lens), no = ARRAY_SIZE(offs), nk = ARRAY_SIZE(layouts);
	void *list = kunit_kzalloc(test, 4096, GFP_KERNEL);
	unsigned int i, checked = 0;

	KUNIT_ASSERT_NOT_NULL(test, list);
	for (i = 0; i < 2 * nk * no * nl; i++) {
		unsigned int l = i % nl, o = i / nl % no, k = i / nl / no % nk;
		bool sgl = i / nl / no / nk;
		struct scatterlist *sg = mksg(test, layouts[k], nseg[k]);
		struct p2pnvme_cursor c0 = { .sg = sg, .off = offs[o] }, c1 = c0, c2 = c0;
		struct nvme_command with = {}, without = {};
		bool need = p2pnvme_data_needs_list(&c0, lens[l], sgl);
		int r1, r2;

		r1 = sgl ? p2pnvme_build_sgl(list, LIST_DMA, &c1, lens[l], &with) :
			   p2pnvme_build_prps(list, LIST_DMA, &c1, lens[l], &with);
		r2 = sgl ? p2pnvme_build_sgl(NULL, 0, &c2, lens[l], &without) :
			   p2pnvme_build_prps(NULL, 0, &c2, lens[l], &without);
		if (r1)	/* not describable at all: no list helps */
			continue;
		checked++;
		KUNIT_EXPECT_EQ_MSG(test, r2, need ? -E2BIG : 0,
				    "%s, layout %u, offset %#llx, %#llx bytes", sgl ? "SGL" : "PRP",
				    k, offs[o], lens[l]);
		if (!need && !r2)
			KUNIT_EXPECT_EQ(test, memcmp(&with, &without, sizeof(with)), 0);
	}
	KUNIT_EXPECT_GT(test, checked, 100U);
}

/*
 * A command inside its cursor's segment (most: every 4 KiB one) is built
 * without the builders' loop: it must get what the loop writes, one SGL
 * data block descriptor, or PRP1 and a PRP2 only past the first page, and
 * leave the cursor where the loop leaves it: inside the segment, or at the
 * start of the next one when the command ends the segment.
 */
static void one_segment_commands(struct kunit *test)
{
	static const u64 lens[] = { 4, 512, 0xe00, 0x1000, 0x1004, 0x1800, 0x2000 };
	static const u64 offs[] = { 0, 4, 0x200, 0xffc, 0x1000, 0x1800 };
	const u64 seg[] = { A, 0x3000, B, 0x8000 };
	const unsigned int nl = ARRAY_SIZE(lens), no = ARRAY_SIZE(offs);
	unsigned int i, checked = 0, ends = 0;

	for (i = 0; i < 2 * no * nl; i++) {
		u64 len = lens[i % nl], off = offs[i / nl % no], addr = A + off;
		u64 first = min_t(u64, len, 0x1000 - (addr & 0xfff));
		bool sgl = i / nl / no, end = off + len == 0x3000;
		struct scatterlist *sg = mksg(test, seg, 2);
		struct p2pnvme_cursor cur = { .sg = sg, .off = off };
		struct nvme_command cmd = {};
		int ret;

		/* past the segment, or PRPs that need a list: the loop's */
		if (off + len > 0x3000 || (!sgl && len - first > 0x1000))
			continue;
		ret = sgl ? p2pnvme_build_sgl(NULL, 0, &cur, len, &cmd) :
			    p2pnvme_build_prps(NULL, 0, &cur, len, &cmd);
		KUNIT_ASSERT_EQ_MSG(test, ret, 0, "%s, offset %#llx, %#llx bytes",
				    sgl ? "SGL" : "PRP", off, len);
		if (sgl) {
			KUNIT_EXPECT_EQ(test, cmd.rw.flags, NVME_CMD_SGL_METABUF);
			KUNIT_EXPECT_EQ(test, le64_to_cpu(cmd.rw.dptr.sgl.addr), addr);
			KUNIT_EXPECT_EQ(test, le32_to_cpu(cmd.rw.dptr.sgl.length), len);
			KUNIT_EXPECT_EQ(test, cmd.rw.dptr.sgl.type, NVME_SGL_FMT_DATA_DESC << 4);
		} else {
			KUNIT_EXPECT_EQ(test, cmd.rw.flags, 0);
			KUNIT_EXPECT_EQ(test, le64_to_cpu(cmd.rw.dptr.prp1), addr);
			KUNIT_EXPECT_EQ(test, le64_to_cpu(cmd.rw.dptr.prp2),
					len > first ? addr + first : 0);
		}
		KUNIT_EXPECT_PTR_EQ(test, cur.sg, end ? &sg[1] : &sg[0]);
		KUNIT_EXPECT_EQ(test, cur.off, end ? 0 : off + len);
		checked++;
		ends += end;
	}
	KUNIT_EXPECT_EQ(test, checked, 78U);
	KUNIT_EXPECT_EQ(test, ends, 4U);
}

/*
 * The list blocks a registered dma-buf's request takes before its fence is
 * published are counted without walking the mapping (it may be unmapped or
 * replaced until the request is armed). For a registered range in one DMA
 * segment the count must be exactly what p2pnvme_data_needs_list() will
 * say of each command at submission (none for a 4 KiB read); for any other
 * mapping one per command. A request whose buffer was mapped anew since
 * it counted does not arm (-ESTALE: counted again), and arms once it has.
 */
static void reg_lists_counted(struct kunit *test)
{
	static const u64 starts[] = { 0, 4, 0x200, 0xffc, 0x1000 };
	static const u64 addrs[] = { 0, 0x800, 0x1000 };
	static const u64 lens[] = { SZ_4K, SZ_8K, 3 * SZ_4K, SZ_32K };
	static const u32 xfers[] = { SZ_4K, SZ_8K, SZ_128K };
	struct p2pnvme_req *r = armed_req(test, false, false, false);
	struct p2pnvme_reg *b = r->reg;
	unsigned int i, n = ARRAY_SIZE(starts) * ARRAY_SIZE(addrs) * ARRAY_SIZE(lens) *
			    ARRAY_SIZE(xfers) * 2;

	b->gen = 1;
	b->contig = true;
	for (i = 0; i < n; i++) {
		unsigned int k = i;
		u64 seg[2] = { A + starts[k % ARRAY_SIZE(starts)], SZ_1M };
		u32 xfer;
		struct p2pnvme_cursor cur;
		unsigned int want = 0;
		u64 done, len;

		k /= ARRAY_SIZE(starts);
		r->io->addr = addrs[k % ARRAY_SIZE(addrs)];
		k /= ARRAY_SIZE(addrs);
		r->io->len = lens[k % ARRAY_SIZE(lens)];
		k /= ARRAY_SIZE(lens);
		xfer = xfers[k % ARRAY_SIZE(xfers)];
		r->sgl = k / ARRAY_SIZE(xfers);
		b->contig_dma = seg[0];
		cur = (struct p2pnvme_cursor){ .sg = mksg(test, seg, 1), .off = r->io->addr };
		for (done = 0; done < r->io->len; done += len) {
			len = min_t(u64, r->io->len - done, xfer);
			want += p2pnvme_data_needs_list(&cur, len, r->sgl);
			cur.off += len;	/* within the one segment */
		}
		KUNIT_EXPECT_EQ_MSG(test, p2pnvme_reg_lists(r, xfer), want,
				    "%s, range at %#llx, offset %#llx, %#llx bytes, %u per command",
				    r->sgl ? "SGL" : "PRP", seg[0], r->io->addr, r->io->len, xfer);
		KUNIT_EXPECT_EQ(test, r->reg_gen, 1UL);
	}
	/* a 4 KiB read into a BAR's dma-buf takes no list block, SGL or PRP */
	r->io->addr = 0x800;
	r->io->len = SZ_4K;
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_lists(r, SZ_128K), 0U);
	r->sgl = false;
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_lists(r, SZ_128K), 0U);

	/* more than one segment: one per command, the most they may need */
	b->contig = false;
	r->io->len = SZ_32K;
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_lists(r, SZ_8K), 4U);
	r->sgl = true;
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_lists(r, SZ_8K), 4U);

	/* mapped anew after the count: not armed, nothing left busy */
	b->gen = 2;
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), -ESTALE);
	KUNIT_EXPECT_EQ(test, atomic_read(&b->busy), 0);
	KUNIT_EXPECT_FALSE(test, r->reg_busy);
	/* counted again, for the mapping it has now: armed */
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_lists(r, SZ_8K), 4U);
	KUNIT_EXPECT_EQ(test, p2pnvme_reg_arm(r), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&b->busy), 1);
	p2pnvme_reg_idle(r);
	KUNIT_EXPECT_EQ(test, atomic_read(&b->busy), 0);
}

#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
/* ---- one fence per registered dma-buf and submission batch ------------ */

/*
 * A dma-buf's reservation object, and the fence an io_uring submission
 * batch's first read into registration 7 published there, which the
 * batch's later reads of it join (its slot, as the batch's block plug
 * holds it).
 */
struct fence_env {
	struct dma_resv resv;
	struct p2pnvme_fence_slot slot;
	struct p2pnvme_fence *f;
};

static void fence_env_init(struct kunit *test, struct fence_env *e)
{
	dma_resv_init(&e->resv);
	e->slot = (struct p2pnvme_fence_slot){};
	e->f = p2pnvme_fence_alloc();
	KUNIT_ASSERT_NOT_NULL(test, e->f);
	KUNIT_ASSERT_EQ(test, p2pnvme_fence_publish(&e->resv, e->f), 0);
	p2pnvme_fence_slot_set(&e->slot, e->f, 7);
}

/* every fence of the transfers ended: the reservation object's own go */
static void fence_env_fini(struct fence_env *e)
{
	p2pnvme_fence_slot_release(&e->slot);
	dma_resv_fini(&e->resv);
}

/* what an exporter about to move the buffer, or a reader, would wait for */
static bool resv_busy(struct fence_env *e)
{
	return !dma_resv_test_signaled(&e->resv, DMA_RESV_USAGE_BOOKKEEP);
}

static unsigned int resv_fences(struct fence_env *e)
{
	struct dma_resv_iter cursor;
	struct dma_fence *fence;
	unsigned int n = 0;

	dma_resv_lock(&e->resv, NULL);
	dma_resv_for_each_fence(&cursor, &e->resv, DMA_RESV_USAGE_BOOKKEEP, fence)
		n++;
	dma_resv_unlock(&e->resv);
	return n;
}

static bool signalled(struct p2pnvme_fence *f)
{
	return dma_fence_is_signaled(&f->base);
}

/*
 * Four reads of one batch into one registered dma-buf: one fence in the
 * reservation object for them all, which signals only once the last of
 * them ended, whatever the order, carrying the error of the one that
 * failed; the reads hold one reference of it together (the reservation
 * object and the slot theirs), which the last of them puts. Once
 * signalled nothing joins it: the batch's next read publishes a fence of
 * its own, which the reads after it join.
 */
static void batch_fence_every_read(struct kunit *test)
{
	struct p2pnvme_fence *j[3], *g;
	struct fence_env e;
	unsigned int i;

	fence_env_init(test, &e);
	for (i = 0; i < ARRAY_SIZE(j); i++) {
		KUNIT_ASSERT_TRUE(test, p2pnvme_fence_join(&e.slot, 7, &j[i]));
		KUNIT_EXPECT_PTR_EQ(test, j[i], e.f);
	}
	KUNIT_EXPECT_EQ(test, e.slot.joined, 4U);
	KUNIT_EXPECT_EQ(test, resv_fences(&e), 1U);
	KUNIT_EXPECT_TRUE(test, resv_busy(&e));
	/* the reads', the reservation object's, the slot's */
	KUNIT_EXPECT_EQ(test, kref_read(&e.f->base.refcount), 3U);

	p2pnvme_fence_end(j[1], 0);
	p2pnvme_fence_end(e.f, 0);	/* the publisher's read */
	KUNIT_EXPECT_FALSE(test, signalled(e.f));
	p2pnvme_fence_end(j[0], -EIO);
	KUNIT_EXPECT_FALSE(test, signalled(e.f));
	KUNIT_EXPECT_TRUE(test, resv_busy(&e));
	KUNIT_EXPECT_EQ(test, kref_read(&e.f->base.refcount), 3U);
	p2pnvme_fence_end(j[2], 0);
	KUNIT_EXPECT_TRUE(test, signalled(e.f));
	KUNIT_EXPECT_EQ(test, dma_fence_get_status(&e.f->base), -EIO);
	KUNIT_EXPECT_FALSE(test, resv_busy(&e));
	KUNIT_EXPECT_EQ(test, kref_read(&e.f->base.refcount), 2U);

	/* signalled: the batch's next read publishes its own */
	KUNIT_EXPECT_FALSE(test, p2pnvme_fence_join(&e.slot, 7, &g));
	g = p2pnvme_fence_alloc();
	KUNIT_ASSERT_NOT_NULL(test, g);
	KUNIT_ASSERT_EQ(test, p2pnvme_fence_publish(&e.resv, g), 0);
	p2pnvme_fence_slot_set(&e.slot, g, 7);
	KUNIT_EXPECT_TRUE(test, resv_busy(&e));
	KUNIT_ASSERT_TRUE(test, p2pnvme_fence_join(&e.slot, 7, &j[0]));
	KUNIT_EXPECT_PTR_EQ(test, j[0], g);
	p2pnvme_fence_end(g, 0);
	KUNIT_EXPECT_FALSE(test, signalled(g));
	p2pnvme_fence_end(j[0], 0);
	KUNIT_EXPECT_EQ(test, dma_fence_get_status(&g->base), 1);
	KUNIT_EXPECT_FALSE(test, resv_busy(&e));
	fence_env_fini(&e);
}

/*
 * Reads cancelled (a reset, removal, a request abandoned before its
 * commands went out) end their share as failed ones do: the fence waits
 * for every other read all the same, and says the first real error over a
 * cancellation; cancelled alone, it says -ECANCELED.
 */
static void batch_fence_cancelled(struct kunit *test)
{
	struct p2pnvme_fence *j[2];
	struct fence_env e;

	fence_env_init(test, &e);
	KUNIT_ASSERT_TRUE(test, p2pnvme_fence_join(&e.slot, 7, &j[0]));
	KUNIT_ASSERT_TRUE(test, p2pnvme_fence_join(&e.slot, 7, &j[1]));
	p2pnvme_fence_end(j[0], -ECANCELED);
	KUNIT_EXPECT_FALSE(test, signalled(e.f));
	p2pnvme_fence_end(e.f, -EIO);
	KUNIT_EXPECT_FALSE(test, signalled(e.f));
	KUNIT_EXPECT_TRUE(test, resv_busy(&e));
	p2pnvme_fence_end(j[1], -ECANCELED);
	KUNIT_EXPECT_EQ(test, dma_fence_get_status(&e.f->base), -EIO);
	fence_env_fini(&e);

	fence_env_init(test, &e);
	KUNIT_ASSERT_TRUE(test, p2pnvme_fence_join(&e.slot, 7, &j[0]));
	p2pnvme_fence_end(e.f, -ECANCELED);
	KUNIT_EXPECT_FALSE(test, signalled(e.f));
	p2pnvme_fence_end(j[0], -ECANCELED);
	KUNIT_EXPECT_EQ(test, dma_fence_get_status(&e.f->base), -ECANCELED);
	fence_env_fini(&e);
}

/*
 * What may join: a read of the same registration only, at most
 * P2PNVME_FENCE_JOINS reads per fence, and nothing once the batch ended
 * (its slot released). The fence still waits for the reads it covers.
 */
static void batch_fence_joins(struct kunit *test)
{
	struct p2pnvme_fence *j;
	struct fence_env e;
	unsigned int i;

	fence_env_init(test, &e);
	KUNIT_EXPECT_FALSE(test, p2pnvme_fence_join(&e.slot, 8, &j));
	for (i = 1; i < P2PNVME_FENCE_JOINS; i++) {
		KUNIT_ASSERT_TRUE(test, p2pnvme_fence_join(&e.slot, 7, &j));
		p2pnvme_fence_end(j, 0);
	}
	KUNIT_EXPECT_FALSE(test, p2pnvme_fence_join(&e.slot, 7, &j));
	KUNIT_EXPECT_FALSE(test, signalled(e.f));

	p2pnvme_fence_slot_release(&e.slot);
	KUNIT_EXPECT_FALSE(test, p2pnvme_fence_join(&e.slot, 7, &j));
	KUNIT_EXPECT_FALSE(test, signalled(e.f));
	KUNIT_EXPECT_TRUE(test, resv_busy(&e));
	p2pnvme_fence_end(e.f, 0);
	KUNIT_EXPECT_EQ(test, dma_fence_get_status(&e.f->base), 1);
	KUNIT_EXPECT_FALSE(test, resv_busy(&e));
	fence_env_fini(&e);
}
#endif

/* ---- placeholders (shadow.c): slots in runs ----------------------------- */

/* a pool of two chunks of four pages each (slots 0-3, 4-7), as shadow_alloc() lays one out */
struct shadow_env {
	struct p2pnvme *c;
	struct p2pnvme_shadow s;
	struct p2pnvme_shadow_chunk chunks[2];
	struct p2pnvme_reg reg;
	struct p2pnvme_shadow_xfer x[4];
};

static struct shadow_env *shadow_env_init(struct kunit *test)
{
	struct shadow_env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, e);
	e->c = kunit_kzalloc(test, sizeof(*e->c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, e->c);
	spin_lock_init(&e->s.lock);
	INIT_LIST_HEAD(&e->s.xfers);
	e->s.nr_chunks = 2;
	e->s.chunks = e->chunks;
	e->s.lo_pfn = ULONG_MAX;
	for (i = 0; i < 2; i++) {
		struct page *page = alloc_pages(GFP_KERNEL | __GFP_ZERO, 2);

		KUNIT_ASSERT_NOT_NULL(test, page);
		e->chunks[i] = (struct p2pnvme_shadow_chunk){
			.page = page, .pfn = page_to_pfn(page), .nr = 4, .first = 4 * i,
			.order = 2 };
		e->s.lo_pfn = min(e->s.lo_pfn, e->chunks[i].pfn);
		e->s.hi_pfn = max(e->s.hi_pfn, e->chunks[i].pfn + 4);
	}
	e->s.nr_slots = 8;
	e->s.nr_free = 8;
	e->s.used = kunit_kzalloc(test, sizeof(unsigned long), GFP_KERNEL);
	e->s.starts = kunit_kzalloc(test, sizeof(unsigned long), GFP_KERNEL);
	e->s.slots = kunit_kcalloc(test, 8, sizeof(*e->s.slots), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, e->s.used);
	KUNIT_ASSERT_NOT_NULL(test, e->s.starts);
	KUNIT_ASSERT_NOT_NULL(test, e->s.slots);
	e->c->shadow = &e->s;	/* the pool exists: shadow_pool() allocates nothing */
	for (i = 0; i < ARRAY_SIZE(e->x); i++)
		e->x[i].reg = &e->reg;
	return e;
}

static void shadow_env_fini(struct shadow_env *e)
{
	__free_pages(e->chunks[0].page, 2);
	__free_pages(e->chunks[1].page, 2);
}

/* @len bytes at @pos for transfer @i of @e; its p2pnvme_shadow_get() */
static int shadow_take(struct shadow_env *e, unsigned int i, u64 pos, u64 len,
		       unsigned int *held)
{
	e->x[i].pos = pos;
	e->x[i].len = len;
	return p2pnvme_shadow_get(e->c, &e->x[i], held);
}

/*
 * A transfer's slots are one run where a chunk has room for it, and then
 * one bvec entry of physically contiguous pages (the filesystem's, the
 * block layer's, the disk's view: a segment, not a page each); where no
 * chunk has room, as they lie free, an entry per run. The disk finds a
 * slot by page frame, and from any slot its run's owner, the page's index
 * there and the rest of the run (p2pnvme_shadow_owner()): two transfers'
 * runs side by side in one physically contiguous segment are told apart.
 */
static void shadow_runs(struct kunit *test)
{
	struct shadow_env *e = shadow_env_init(test);
	struct p2pnvme_shadow_xfer *a = &e->x[0], *b = &e->x[1], *c = &e->x[2];
	unsigned int held = 0, run, i;

	/* 8 KiB at offset 0: three slots (the most any offset needs), one run, one entry */
	KUNIT_ASSERT_EQ(test, shadow_take(e, 0, 0, SZ_8K, &held), 0);
	KUNIT_EXPECT_EQ(test, a->nr, 3);
	KUNIT_EXPECT_EQ(test, a->nr_runs, 1);
	KUNIT_EXPECT_EQ(test, a->runs[0].slot, 0);
	KUNIT_EXPECT_EQ(test, a->nr_bvec, 1);
	KUNIT_EXPECT_PTR_EQ(test, a->bvec[0].bv_page, e->chunks[0].page);
	KUNIT_EXPECT_EQ(test, a->bvec[0].bv_offset, 0);
	KUNIT_EXPECT_EQ(test, a->bvec[0].bv_len, SZ_8K);
	/* 4 KiB at 512: two slots; chunk 0 has one left, so chunk 1's first two */
	KUNIT_ASSERT_EQ(test, shadow_take(e, 1, 512, SZ_4K, &held), 0);
	KUNIT_EXPECT_EQ(test, b->nr_runs, 1);
	KUNIT_EXPECT_EQ(test, b->runs[0].slot, 4);
	KUNIT_EXPECT_EQ(test, b->nr_bvec, 1);
	KUNIT_EXPECT_EQ(test, b->off0, 512);
	KUNIT_EXPECT_PTR_EQ(test, b->bvec[0].bv_page, e->chunks[1].page);
	KUNIT_EXPECT_EQ(test, b->bvec[0].bv_offset, 512);
	KUNIT_EXPECT_EQ(test, b->bvec[0].bv_len, SZ_4K);
	/* 8 KiB: three slots, no chunk has three free: slot 3, then 6 and 7 */
	KUNIT_ASSERT_EQ(test, shadow_take(e, 2, 0, SZ_8K, &held), 0);
	KUNIT_EXPECT_EQ(test, c->nr_runs, 2);
	KUNIT_EXPECT_EQ(test, c->runs[0].slot, 3);
	KUNIT_EXPECT_EQ(test, c->runs[0].nr, 1);
	KUNIT_EXPECT_EQ(test, c->runs[1].slot, 6);
	KUNIT_EXPECT_EQ(test, c->runs[1].nr, 2);
	KUNIT_EXPECT_EQ(test, c->nr_bvec, 2);
	KUNIT_EXPECT_EQ(test, c->bvec[0].bv_len, SZ_4K);
	KUNIT_EXPECT_PTR_EQ(test, c->bvec[1].bv_page, pfn_to_page(e->chunks[1].pfn + 2));
	KUNIT_EXPECT_EQ(test, c->bvec[1].bv_len, SZ_4K);
	KUNIT_EXPECT_EQ(test, held, 8);
	KUNIT_EXPECT_EQ(test, e->s.nr_free, 0);
	/* the pool is full: refused, nothing taken; larger than the pool: -E2BIG */
	i = 0;
	KUNIT_EXPECT_EQ(test, shadow_take(e, 3, 0, SZ_4K, &i), -EAGAIN);
	p2pnvme_shadow_put(e->c, &e->x[3]);
	i = 0;
	KUNIT_EXPECT_EQ(test, shadow_take(e, 3, 0, 8 * PAGE_SIZE, &i), -E2BIG);
	p2pnvme_shadow_put(e->c, &e->x[3]);

	/* the disk's lookups: a slot by page frame, its owner and the rest of its run */
	KUNIT_EXPECT_EQ(test, p2pnvme_shadow_slot(&e->s, e->chunks[1].pfn + 1), 5);
	KUNIT_EXPECT_EQ(test, p2pnvme_shadow_slot(&e->s, e->chunks[0].pfn), 0);
	KUNIT_EXPECT_EQ(test, p2pnvme_shadow_slot(&e->s, e->s.hi_pfn), -1);
	KUNIT_EXPECT_FALSE(test, p2pnvme_shadow_span(&e->s, e->s.hi_pfn, 4));
	KUNIT_EXPECT_TRUE(test, p2pnvme_shadow_span(&e->s, e->s.lo_pfn - 1, 2));
	/* slots 0-2 are a's run, 3 c's first (c's second run is 6-7), 4-5 b's */
	KUNIT_EXPECT_PTR_EQ(test, p2pnvme_shadow_owner(&e->s, 1, &i, &run), a);
	KUNIT_EXPECT_EQ(test, i, 1);
	KUNIT_EXPECT_EQ(test, run, 2);
	KUNIT_EXPECT_PTR_EQ(test, p2pnvme_shadow_owner(&e->s, 3, &i, &run), c);
	KUNIT_EXPECT_EQ(test, i, 0);
	KUNIT_EXPECT_EQ(test, run, 1);
	KUNIT_EXPECT_PTR_EQ(test, p2pnvme_shadow_owner(&e->s, 5, &i, &run), b);
	KUNIT_EXPECT_EQ(test, i, 1);
	KUNIT_EXPECT_EQ(test, run, 1);
	KUNIT_EXPECT_PTR_EQ(test, p2pnvme_shadow_owner(&e->s, 7, &i, &run), c);
	KUNIT_EXPECT_EQ(test, i, 2);
	KUNIT_EXPECT_EQ(test, run, 1);
	KUNIT_EXPECT_EQ(test, p2pnvme_shadow_t(c, 1, 100), PAGE_SIZE + 100);

	/* coverage a range at a time: a request's bytes, sectors rounded out, clipped at len */
	p2pnvme_shadow_cover(a, 512, 1024);
	KUNIT_EXPECT_EQ(test, bitmap_weight(a->covered, SZ_8K / SECTOR_SIZE), 2);
	KUNIT_EXPECT_TRUE(test, test_bit(1, a->covered) && test_bit(2, a->covered));
	p2pnvme_shadow_cover(a, SZ_4K, SZ_8K);
	KUNIT_EXPECT_EQ(test, bitmap_weight(a->covered, SZ_8K / SECTOR_SIZE), 10);
	KUNIT_EXPECT_FALSE(test, test_bit(SZ_8K / SECTOR_SIZE, a->covered));

	p2pnvme_shadow_put(e->c, a);
	p2pnvme_shadow_put(e->c, b);
	p2pnvme_shadow_put(e->c, c);
	KUNIT_EXPECT_EQ(test, e->s.nr_free, 8);
	KUNIT_EXPECT_TRUE(test, bitmap_empty(e->s.used, 8));
	KUNIT_EXPECT_TRUE(test, bitmap_empty(e->s.starts, 8));
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_NULL(test, e->s.slots[i].x);
	KUNIT_EXPECT_TRUE(test, list_empty(&e->s.xfers));
	/* the same 8 KiB again: one run in chunk 0, as at first */
	held = 0;
	KUNIT_ASSERT_EQ(test, shadow_take(e, 0, 0, SZ_8K, &held), 0);
	KUNIT_EXPECT_EQ(test, a->nr_runs, 1);
	KUNIT_EXPECT_EQ(test, a->runs[0].slot, 0);
	p2pnvme_shadow_put(e->c, a);
	shadow_env_fini(e);
}

static struct kunit_case p2pnvme_cases[] = {
	KUNIT_CASE_PARAM(check_io_table, io_gen_params),
	KUNIT_CASE(check_io_max_len),
	KUNIT_CASE(prp_one_and_two),
	KUNIT_CASE(prp_offsets),
	KUNIT_CASE(prp_refused),
	KUNIT_CASE(sgl_descriptors),
	KUNIT_CASE(needs_list_exact),
	KUNIT_CASE(one_segment_commands),
	KUNIT_CASE_PARAM(admin_table, admin_gen_params),
	KUNIT_CASE_PARAM(ns_format_table, fmt_gen_params),
	KUNIT_CASE(std_io_data_len),
	KUNIT_CASE(shadow_runs),
	KUNIT_CASE(reg_arm_placement),
	KUNIT_CASE(reg_arm_coherent),
	KUNIT_CASE(reg_invalidate_busy),
	KUNIT_CASE(reg_lists_counted),
#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
	KUNIT_CASE(batch_fence_every_read),
	KUNIT_CASE(batch_fence_cancelled),
	KUNIT_CASE(batch_fence_joins),
#endif
	{}
};

static struct kunit_suite p2pnvme_suite = {
	.name = "p2pnvme",
	.test_cases = p2pnvme_cases,
};

kunit_test_suite(p2pnvme_suite);

P2P_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING");
MODULE_DESCRIPTION("KUnit tests of the p2pnvme client's request checks and PRP/SGL builders");
MODULE_LICENSE("GPL");
