// SPDX-License-Identifier: GPL-2.0
/*
 * The dma-buf exporter against every kind of importer, on the QEMU bench
 * (p2pbar bound to the ivshmem device, an NVMe controller beside it):
 *
 * - a matrix of mock importers: static or dynamic, peer2peer or not,
 *   revocable or not (7.x can tell), pinning or not, and as importing
 *   device the provider itself (bus addresses), the NVMe controller (the
 *   profile's verdict: bus, host-bridge or refused) or a device that is not
 *   PCI at all (refused): each gets its documented result, and every
 *   mapping it gets covers the buffer with the expected DMA addresses;
 * - coalescing: a large export maps to as few entries as the importer's
 *   maximum segment size allows;
 * - the CPU views: vmap gives the I/O memory, CPU access brackets succeed;
 * - a pinned revocable importer is revoked on unbind, in bounded time;
 * - the calls an importer that does not depend on p2pbar makes through
 *   the dma-buf (p2pbar_dmabuf_ops_of()) are found on p2pbar's dma-bufs
 *   alone, and hold the pages;
 * - with the RDMA core in the kernel (the bench's debug kernel), the
 *   kernel's own importer, ib_umem_dmabuf: dynamic, pinned revocable (as
 *   irdma), and plain pinned (refused), with the NVMe controller as DMA
 *   device.
 */
#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/iosys-map.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/p2pbar.h>
#include <linux/sizes.h>
#include <p2p_compat.h>
#ifdef HAVE_KUNIT_DEVICE_REGISTER
#include <kunit/device.h>
#endif
#if IS_ENABLED(CONFIG_INFINIBAND_USER_MEM)
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#endif

static char *expect = "direct";
module_param(expect, charp, 0444);
MODULE_PARM_DESC(expect, "Verdict of the bench profile between nvme and ivshmem");

struct dmabuf_ctx {
	struct pci_dev *pdev;	/* the ivshmem provider */
	struct pci_dev *nvme;	/* an NVMe controller, or NULL */
	struct p2pbar *pb;
};

static int dmabuf_init(struct kunit *test)
{
	struct dmabuf_ctx *ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;
	ctx->pdev = pci_get_device(0x1af4, 0x1110, NULL);
	if (!ctx->pdev)
		kunit_skip(test, "no ivshmem device");
	ctx->pb = p2pbar_get(ctx->pdev);
	if (!ctx->pb)
		kunit_skip(test, "p2pbar is not bound to %s", pci_name(ctx->pdev));
	ctx->nvme = pci_get_class(PCI_CLASS_STORAGE_EXPRESS, NULL);
	return 0;
}

static void dmabuf_exit(struct kunit *test)
{
	struct dmabuf_ctx *ctx = test->priv;

	p2pbar_put(ctx->pb);
	/* cases that unbind leave the provider bound again */
	if (ctx->pdev && !ctx->pdev->dev.driver)
		KUNIT_EXPECT_GE(test, device_attach(&ctx->pdev->dev), 1);
	pci_dev_put(ctx->nvme);
	pci_dev_put(ctx->pdev);
}

/* ---- mock importers ---------------------------------------------------- */

struct mock {
	atomic_t invalidated;
	bool pinned;
	struct sg_table *sgt;	/* under the dma-buf's resv lock */
};

/* A compliant importer: unmaps (and unpins) from its invalidation. */
static void mock_invalidate(struct dma_buf_attachment *attach)
{
	struct mock *m = attach->importer_priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	atomic_inc(&m->invalidated);
	if (m->sgt) {
		dma_buf_unmap_attachment(attach, m->sgt, DMA_BIDIRECTIONAL);
		m->sgt = NULL;
	}
	if (m->pinned) {
		dma_buf_unpin(attach);
		m->pinned = false;
	}
}

static const struct dma_buf_attach_ops mock_p2p_ops = {
	.allow_peer2peer = true,
	.P2P_DMA_BUF_INVALIDATE_OP = mock_invalidate,
};

static const struct dma_buf_attach_ops mock_host_ops = {
	.allow_peer2peer = false,
	.P2P_DMA_BUF_INVALIDATE_OP = mock_invalidate,
};

#ifdef HAVE_DMA_BUF_INVALIDATE_MAPPINGS
/* 7.x: a dynamic importer that cannot be told to stop */
static const struct dma_buf_attach_ops mock_deaf_ops = {
	.allow_peer2peer = true,
};
#endif

enum importer_dev { DEV_SELF, DEV_NVME, DEV_NOT_PCI };

struct importer_case {
	const char *name;
	const struct dma_buf_attach_ops *ops;	/* NULL: static dma_buf_attach() */
	enum importer_dev dev;
	bool pin;
	int attach_err;
	int pin_err;
};

/* before 7.x no pin is taken: revocable importers cannot be told apart */
#define PIN_ERR	(P2P_DMA_BUF_PIN_REVOCABLE ? 0 : -EOPNOTSUPP)

static const struct importer_case importer_cases[] = {
	{ "static importer", NULL, DEV_SELF, false, -EOPNOTSUPP },
	{ "dynamic, not peer2peer", &mock_host_ops, DEV_SELF, false, -EOPNOTSUPP },
#ifdef HAVE_DMA_BUF_INVALIDATE_MAPPINGS
	{ "dynamic peer2peer without invalidation", &mock_deaf_ops, DEV_SELF, false, -EOPNOTSUPP },
#endif
	{ "dynamic peer2peer revocable, the provider itself", &mock_p2p_ops, DEV_SELF, false, 0 },
	{ "dynamic peer2peer revocable and pinned, the provider itself", &mock_p2p_ops,
	  DEV_SELF, true, 0, PIN_ERR },
	{ "dynamic peer2peer revocable, the NVMe controller", &mock_p2p_ops, DEV_NVME, false, 0 },
	{ "dynamic peer2peer revocable and pinned, the NVMe controller", &mock_p2p_ops,
	  DEV_NVME, true, 0, PIN_ERR },
	{ "dynamic peer2peer revocable, not a PCI device", &mock_p2p_ops, DEV_NOT_PCI, false, 0 },
};

static void importer_case_desc(const struct importer_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(importer, importer_cases, importer_case_desc);

/*
 * What the mapping for @dev must hold: -EREMOTEIO if it cannot reach the
 * BAR, else 0 and whether the DMA addresses are the BAR's bus addresses
 * (@bus_addrs), as opposed to CPU physical or IOMMU addresses through the
 * host bridge.
 */
static int expected_map(struct dmabuf_ctx *ctx, enum importer_dev d, bool *bus_addrs)
{
	*bus_addrs = d == DEV_SELF || !strcmp(expect, "direct");
	if (d == DEV_NOT_PCI || (d == DEV_NVME && !strcmp(expect, "refused")))
		return -EREMOTEIO;
	return 0;
}

static struct device *mock_device(struct kunit *test)
{
	struct device *dev = ERR_PTR(-EOPNOTSUPP);

#ifdef HAVE_KUNIT_DEVICE_REGISTER
	dev = kunit_device_register(test, "p2pbar-mock-importer");
#endif
	if (IS_ERR(dev))
		kunit_skip(test, "no KUnit test device (kunit_device_register(), 6.8+)");
	dev->coherent_dma_mask = DMA_BIT_MASK(64);
	dev->dma_mask = &dev->coherent_dma_mask;
	return dev;
}

/* Every byte of the buffer once, at @bus on (bus addresses) or anywhere. */
static void check_mapping(struct kunit *test, struct sg_table *sgt, u64 bus, size_t size,
			  bool bus_addrs)
{
	struct scatterlist *sg;
	u64 total = 0;
	unsigned int i;

	for_each_sgtable_dma_sg(sgt, sg, i) {
		if (bus_addrs)
			KUNIT_EXPECT_EQ(test, (u64)sg_dma_address(sg), bus + total);
		KUNIT_EXPECT_NE(test, (u64)sg_dma_address(sg), 0);
		total += sg_dma_len(sg);
	}
	KUNIT_EXPECT_EQ(test, total, (u64)size);
}

/* what an export takes: a non-zero multiple of the page size */
static void export_args(struct kunit *test)
{
	struct dmabuf_ctx *ctx = test->priv;

	KUNIT_EXPECT_EQ(test, PTR_ERR(p2pbar_dmabuf_export(ctx->pb, 0, NULL)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(p2pbar_dmabuf_export(ctx->pb, 100, NULL)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(p2pbar_dmabuf_export(ctx->pb, PAGE_SIZE + 1, NULL)),
			-EINVAL);
}

static void importer_matrix(struct kunit *test)
{
	const struct importer_case *c = test->param_value;
	struct dmabuf_ctx *ctx = test->priv;
	struct dma_buf_attachment *attach;
	struct device *dev = NULL;
	struct mock m = {};
	struct dma_buf *dmabuf;
	struct sg_table *sgt;
	pci_bus_addr_t bus;
	bool bus_addrs;
	int want;

	switch (c->dev) {
	case DEV_SELF:
		dev = &ctx->pdev->dev;
		break;
	case DEV_NVME:
		if (!ctx->nvme)
			kunit_skip(test, "no NVMe controller in this profile");
		dev = &ctx->nvme->dev;
		break;
	case DEV_NOT_PCI:
		dev = mock_device(test);
		break;
	}
	want = expected_map(ctx, c->dev, &bus_addrs);

	dmabuf = p2pbar_dmabuf_export(ctx->pb, SZ_1M, &bus);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	attach = c->ops ? dma_buf_dynamic_attach(dmabuf, dev, c->ops, &m) :
			  dma_buf_attach(dmabuf, dev);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(attach), c->attach_err);
	if (IS_ERR(attach))
		goto out;

	dma_resv_lock(dmabuf->resv, NULL);
	if (c->pin) {
		KUNIT_EXPECT_EQ(test, dma_buf_pin(attach), c->pin_err);
		m.pinned = !c->pin_err;
	}
	sgt = dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(sgt), want);
	if (!IS_ERR(sgt)) {
		check_mapping(test, sgt, bus, SZ_1M, bus_addrs);
		dma_buf_unmap_attachment(attach, sgt, DMA_BIDIRECTIONAL);
	}
	if (m.pinned)
		dma_buf_unpin(attach);
	dma_resv_unlock(dmabuf->resv);
	dma_buf_detach(dmabuf, attach);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.invalidated), 0);
out:
	dma_buf_put(dmabuf);
}

/*
 * The largest export the bench's BAR allows (all of its 64 MiB) is one
 * entry per maximum segment of the importer: size / 64 KiB of them at the
 * PCI default, size / 1 MiB at 1 MiB, one when the importer takes any
 * length (as RDMA and NVMe drivers set it). 7.x's page-less mapping splits
 * only at 32-bit lengths: one entry each time.
 */
static void coalesced_mapping(struct kunit *test)
{
	static const unsigned int segs[] = { SZ_64K, SZ_1M, UINT_MAX };
	struct dmabuf_ctx *ctx = test->priv;
	struct device *dev = &ctx->pdev->dev;
	unsigned int seg = dma_get_max_seg_size(dev), i;
	struct dma_buf_attachment *attach;
	struct dma_buf *dmabuf = NULL;
	struct mock m = {};
	struct sg_table *sgt;
	pci_bus_addr_t bus;
	size_t size;

	/* dma-bufs of the cases before go back by delayed fput: let them */
	flush_delayed_fput();
	for (size = SZ_64M; size >= SZ_16M; size -= SZ_2M) {
		dmabuf = p2pbar_dmabuf_export(ctx->pb, size, &bus);
		if (!IS_ERR(dmabuf))
			break;
	}
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(dmabuf), "no 16 MiB left in the BAR");
	kunit_info(test, "a %zu MiB export", size >> 20);
	attach = dma_buf_dynamic_attach(dmabuf, dev, &mock_p2p_ops, &m);
	KUNIT_ASSERT_FALSE(test, IS_ERR(attach));
	for (i = 0; i < ARRAY_SIZE(segs); i++) {
		/* 7.x: page-less, split at 4 GiB only; before: at the max segment */
#ifdef HAVE_DMA_BUF_PHYS_VEC_TO_SGT
		unsigned int want = 1;
#else
		unsigned int want = DIV_ROUND_UP(size, ALIGN_DOWN(segs[i], PAGE_SIZE));
#endif

		dma_set_max_seg_size(dev, segs[i]);
		dma_resv_lock(dmabuf->resv, NULL);
		sgt = dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL);
		if (!IS_ERR(sgt)) {
			KUNIT_EXPECT_EQ_MSG(test, sgt->nents, want, "max segment %#x", segs[i]);
			check_mapping(test, sgt, bus, size, true);
			dma_buf_unmap_attachment(attach, sgt, DMA_BIDIRECTIONAL);
		}
		dma_resv_unlock(dmabuf->resv);
		KUNIT_EXPECT_FALSE(test, IS_ERR(sgt));
	}
	dma_set_max_seg_size(dev, seg);
	dma_buf_detach(dmabuf, attach);
	dma_buf_put(dmabuf);
	flush_delayed_fput();	/* the BAR back for the cases after */
}

/* vmap is the allocation's I/O memory; CPU access brackets succeed. */
static void cpu_views(struct kunit *test)
{
#ifdef HAVE_DMA_BUF_VMAP_UNLOCKED
	struct dmabuf_ctx *ctx = test->priv;
	struct iosys_map map = {};
	struct dma_buf *dmabuf;
	u32 word;

	dmabuf = p2pbar_dmabuf_export(ctx->pb, SZ_64K, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	KUNIT_EXPECT_EQ(test, dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL), 0);
	KUNIT_ASSERT_EQ(test, dma_buf_vmap_unlocked(dmabuf, &map), 0);
	KUNIT_EXPECT_TRUE(test, map.is_iomem);
	/* zeroed at export; what is written through the map reads back */
	KUNIT_EXPECT_EQ(test, ioread32(map.vaddr_iomem + SZ_32K), 0);
	iowrite32(0xfeedf00d, map.vaddr_iomem + SZ_32K);
	word = ioread32(map.vaddr_iomem + SZ_32K);
	KUNIT_EXPECT_EQ(test, word, 0xfeedf00d);
	dma_buf_vunmap_unlocked(dmabuf, &map);
	KUNIT_EXPECT_EQ(test, dma_buf_end_cpu_access(dmabuf, DMA_BIDIRECTIONAL), 0);
	dma_buf_put(dmabuf);
#else
	kunit_skip(test, "the exporter has no vmap before 6.2");
#endif
}

/*
 * A pinned revocable importer (what the RDMA core's revocable import does)
 * holding a mapping: unbind revokes it at once, its callback unmaps and
 * unpins, and the dma-buf refuses everything afterwards.
 */
static void pinned_revocable_unbind(struct kunit *test)
{
	struct dmabuf_ctx *ctx = test->priv;
	struct device *dev = ctx->nvme && strcmp(expect, "refused") ? &ctx->nvme->dev :
								       &ctx->pdev->dev;
	struct dma_buf_attachment *attach;
	struct mock m = {};
	struct dma_buf *dmabuf;
	unsigned long t0;

	dmabuf = p2pbar_dmabuf_export(ctx->pb, SZ_1M, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	attach = dma_buf_dynamic_attach(dmabuf, dev, &mock_p2p_ops, &m);
	KUNIT_ASSERT_FALSE(test, IS_ERR(attach));
	dma_resv_lock(dmabuf->resv, NULL);
	KUNIT_EXPECT_EQ(test, dma_buf_pin(attach), PIN_ERR);
	if (PIN_ERR) {		/* before 7.x: refused, nothing else to see */
		dma_resv_unlock(dmabuf->resv);
		dma_buf_detach(dmabuf, attach);
		dma_buf_put(dmabuf);
		return;
	}
	m.pinned = true;
	m.sgt = dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL);
	dma_resv_unlock(dmabuf->resv);
	KUNIT_ASSERT_FALSE(test, IS_ERR(m.sgt));

	t0 = jiffies;
	device_release_driver(&ctx->pdev->dev);
	KUNIT_EXPECT_LT(test, jiffies - t0, 2 * HZ);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.invalidated), 1);
	KUNIT_EXPECT_NULL(test, m.sgt);
	KUNIT_EXPECT_FALSE(test, m.pinned);

	dma_resv_lock(dmabuf->resv, NULL);
	KUNIT_EXPECT_EQ(test, dma_buf_pin(attach), -ENODEV);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL)),
			-ENODEV);
	dma_resv_unlock(dmabuf->resv);
	/* (a vmap would fail with -ENODEV too, but the core WARNs on any failed vmap) */
	KUNIT_EXPECT_EQ(test, dma_buf_begin_cpu_access(dmabuf, DMA_FROM_DEVICE), -ENODEV);
	dma_buf_detach(dmabuf, attach);
	dma_buf_put(dmabuf);
}

/*
 * What an importer that must not depend on p2pbar (p2pnvme's file command)
 * calls p2pbar through: p2pbar_dmabuf_ops_of() finds p2pbar's calls on a
 * dma-buf p2pbar exported, and they hold its pages; it finds nothing on
 * one owned by another module, even if that one had p2pbar's operations,
 * nor on one without an owner.
 */
static void importer_calls(struct kunit *test)
{
	struct dmabuf_ctx *ctx = test->priv;
	const struct p2pbar_dmabuf_ops *ops;
	struct dma_buf *dmabuf, *fake;
	struct pci_dev *provider = NULL;
	struct page *page;

	dmabuf = p2pbar_dmabuf_export(ctx->pb, SZ_64K, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	KUNIT_EXPECT_STREQ(test, module_name(dmabuf->owner), P2PBAR_MODNAME);
	ops = p2pbar_dmabuf_ops_of(dmabuf);
	KUNIT_ASSERT_PTR_EQ(test, ops, &p2pbar_dmabuf_ops);
	KUNIT_EXPECT_PTR_EQ(test, ops->pages, &p2pbar_dmabuf_pages);
	KUNIT_EXPECT_PTR_EQ(test, ops->pages_put, &p2pbar_dmabuf_pages_put);
	page = ops->pages(dmabuf, SZ_8K, SZ_4K, &provider);
	KUNIT_ASSERT_FALSE(test, IS_ERR(page));
	KUNIT_EXPECT_TRUE(test, is_pci_p2pdma_page(page));
	KUNIT_EXPECT_PTR_EQ(test, provider, ctx->pdev);
	ops->pages_put(dmabuf);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ops->pages(dmabuf, SZ_64K - SZ_4K, SZ_8K, &provider)),
			-EINVAL);
	dma_buf_put(dmabuf);

	/* only looked at, never exported: its owner and operations */
	fake = kunit_kzalloc(test, sizeof(*fake), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, fake);
	fake->ops = &p2pbar_dmabuf_ops.ops;
	fake->owner = THIS_MODULE;
#if !IS_BUILTIN(CONFIG_P2PBAR)
	/*
	 * a modular p2pbar is known by its module, not by its operations;
	 * this module's name, p2pbar_dmabuf_kunit, begins with p2pbar's
	 */
	KUNIT_EXPECT_NULL(test, p2pbar_dmabuf_ops_of(fake));
	fake->owner = NULL;
	KUNIT_EXPECT_NULL(test, p2pbar_dmabuf_ops_of(fake));
#endif
}

/* ---- the kernel's RDMA importer ---------------------------------------- */

#if IS_ENABLED(CONFIG_INFINIBAND_USER_MEM)
struct rdma_ctx {
	struct ib_device *ibdev;
	struct dma_buf *dmabuf;
	pci_bus_addr_t bus;
	int fd;
	atomic_t revoked;
	struct ib_umem_dmabuf *umem;	/* for the dynamic importer's callback */
};

/*
 * An ib_device that is never registered, with the NVMe controller as its
 * DMA device: ib_umem_dmabuf uses nothing else of it. (Soft-RoCE would not
 * do: rxe has no DMA device, it copies with the CPU.)
 */
static struct rdma_ctx *rdma_setup(struct kunit *test, size_t size)
{
	struct dmabuf_ctx *ctx = test->priv;
	struct rdma_ctx *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, r);
	if (!ctx->nvme || strcmp(expect, "direct"))
		kunit_skip(test, "needs an NVMe controller under the provider's switch");
	r->ibdev = _ib_alloc_device(sizeof(*r->ibdev));
	KUNIT_ASSERT_NOT_NULL(test, r->ibdev);
	r->ibdev->dma_device = &ctx->nvme->dev;
	r->dmabuf = p2pbar_dmabuf_export(ctx->pb, size, &r->bus);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r->dmabuf));
	/* ib_umem_dmabuf takes an fd, as from ibv_reg_dmabuf_mr() */
	get_dma_buf(r->dmabuf);
	r->fd = dma_buf_fd(r->dmabuf, O_CLOEXEC);
	KUNIT_ASSERT_GE(test, r->fd, 0);
	return r;
}

static void rdma_teardown(struct rdma_ctx *r)
{
	close_fd(r->fd);
	dma_buf_put(r->dmabuf);
	ib_dealloc_device(r->ibdev);
}

/* The umem's DMA list: the BAR's bus addresses, in a few entries. */
static void check_umem(struct kunit *test, struct rdma_ctx *r, size_t size)
{
	struct sg_table *sgt = &r->umem->umem.sgt_append.sgt;
	struct scatterlist *sg;
	u64 total = 0;
	unsigned int i;

	KUNIT_EXPECT_LE(test, sgt->nents, 4);
	for_each_sgtable_dma_sg(sgt, sg, i) {
		KUNIT_EXPECT_EQ(test, (u64)sg_dma_address(sg), r->bus + total);
		total += sg_dma_len(sg);
	}
	KUNIT_EXPECT_EQ(test, total, (u64)size);
}

/* mlx5's invalidate: unmap, the next access faults and maps again */
static void rdma_move_notify(struct dma_buf_attachment *attach)
{
	struct ib_umem_dmabuf *umem = attach->importer_priv;
	struct rdma_ctx *r = umem->private;

	atomic_inc(&r->revoked);
	ib_umem_dmabuf_unmap_pages(umem);
}

static const struct dma_buf_attach_ops rdma_dynamic_ops = {
	.allow_peer2peer = true,
	.P2P_DMA_BUF_INVALIDATE_OP = rdma_move_notify,
};

static void rdma_dynamic_import(struct kunit *test)
{
	struct dmabuf_ctx *ctx = test->priv;
	struct rdma_ctx *r = rdma_setup(test, SZ_16M);

	r->umem = ib_umem_dmabuf_get(r->ibdev, 0, SZ_16M, r->fd, IB_ACCESS_LOCAL_WRITE,
				     &rdma_dynamic_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r->umem));
	r->umem->private = r;
	dma_resv_lock(r->dmabuf->resv, NULL);
	KUNIT_EXPECT_EQ(test, ib_umem_dmabuf_map_pages(r->umem), 0);
	dma_resv_unlock(r->dmabuf->resv);
	check_umem(test, r, SZ_16M);

	device_release_driver(&ctx->pdev->dev);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->revoked), 1);
	KUNIT_EXPECT_NULL(test, r->umem->sgt);
	dma_resv_lock(r->dmabuf->resv, NULL);
	KUNIT_EXPECT_EQ(test, ib_umem_dmabuf_map_pages(r->umem), -ENODEV);
	dma_resv_unlock(r->dmabuf->resv);
	ib_umem_release(&r->umem->umem);
	rdma_teardown(r);
}

static void rdma_revoke(void *priv)
{
	struct rdma_ctx *r = priv;

	atomic_inc(&r->revoked);
}

/* irdma's import: pinned, revocable; unbind revokes it (callback, unpin) */
static void rdma_pinned_revocable_import(struct kunit *test)
{
	struct dmabuf_ctx *ctx = test->priv;
	struct rdma_ctx *r = rdma_setup(test, SZ_16M);
	unsigned long t0;

	r->umem = ib_umem_dmabuf_get_pinned_revocable_and_lock(r->ibdev, 0, SZ_16M, r->fd,
							       IB_ACCESS_LOCAL_WRITE);
	if (PIN_ERR) {		/* before 7.x the pin is refused */
		KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(r->umem), PIN_ERR);
		if (!IS_ERR(r->umem)) {
			dma_resv_unlock(r->dmabuf->resv);
			ib_umem_release(&r->umem->umem);
		}
		rdma_teardown(r);
		return;
	}
	KUNIT_ASSERT_FALSE(test, IS_ERR(r->umem));
	ib_umem_dmabuf_set_revoke_locked(r->umem, rdma_revoke, r);
	dma_resv_unlock(r->dmabuf->resv);
	KUNIT_EXPECT_TRUE(test, r->umem->pinned);
	check_umem(test, r, SZ_16M);

	t0 = jiffies;
	device_release_driver(&ctx->pdev->dev);
	KUNIT_EXPECT_LT(test, jiffies - t0, 2 * HZ);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->revoked), 1);
	KUNIT_EXPECT_TRUE(test, r->umem->revoked);
	KUNIT_EXPECT_FALSE(test, r->umem->pinned);
	ib_umem_release(&r->umem->umem);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->revoked), 1);
	rdma_teardown(r);
}

/* mlx5 devx / efa / bnxt_re: pinned and deaf to revocation: refused */
static void rdma_pinned_import_refused(struct kunit *test)
{
	struct rdma_ctx *r = rdma_setup(test, SZ_1M);

	r->umem = ib_umem_dmabuf_get_pinned(r->ibdev, 0, SZ_1M, r->fd, IB_ACCESS_LOCAL_WRITE);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(r->umem), -EOPNOTSUPP);
	if (!IS_ERR(r->umem))
		ib_umem_release(&r->umem->umem);
	rdma_teardown(r);
}
#else
static void rdma_skip(struct kunit *test)
{
	kunit_skip(test, "this kernel has no RDMA core (CONFIG_INFINIBAND_USER_MEM)");
}

#define rdma_dynamic_import		rdma_skip
#define rdma_pinned_revocable_import	rdma_skip
#define rdma_pinned_import_refused	rdma_skip
#endif

static struct kunit_case dmabuf_cases[] = {
	KUNIT_CASE(export_args),
	KUNIT_CASE_PARAM(importer_matrix, importer_gen_params),
	KUNIT_CASE(coalesced_mapping),
	KUNIT_CASE(cpu_views),
	KUNIT_CASE(pinned_revocable_unbind),
	KUNIT_CASE(importer_calls),
	KUNIT_CASE(rdma_dynamic_import),
	KUNIT_CASE(rdma_pinned_revocable_import),
	KUNIT_CASE(rdma_pinned_import_refused),
	{}
};

static struct kunit_suite dmabuf_suite = {
	.name = "p2pbar_dmabuf",
	.init = dmabuf_init,
	.exit = dmabuf_exit,
	.test_cases = dmabuf_cases,
};

kunit_test_suite(dmabuf_suite);

MODULE_DESCRIPTION("The p2pbar dma-buf exporter against mock and RDMA importers");
P2P_IMPORT_NS("DMA_BUF");
MODULE_LICENSE("GPL");
