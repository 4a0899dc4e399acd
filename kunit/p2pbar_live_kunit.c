// SPDX-License-Identifier: GPL-2.0
/*
 * Live KUnit tests of the provider's in-kernel API on the QEMU bench:
 * allocation through p2pbar_alloc(), what the accessors return, lookup by
 * client, and removal while in-kernel users hold memory (the revoke
 * callback, the bounded wait, taking pages back from a user that never
 * frees), and the dma-buf exporter's revocation on unbind (which importers
 * may attach and what a mapping holds: p2pbar_dmabuf_kunit.c). The bench binds p2pbar to the
 * ivshmem device before loading this.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/io.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/p2pbar.h>
#include <p2p_compat.h>

static char *expect = "direct";
module_param(expect, charp, 0444);
MODULE_PARM_DESC(expect, "Verdict of the bench profile between nvme and ivshmem");

struct live_ctx {
	struct pci_dev *pdev;	/* the ivshmem provider */
	struct p2pbar *pb;
};

struct holder {
	atomic_t revoked;
	bool free_in_callback;
};

static void holder_revoke(struct p2pbar_mem *mem, void *priv)
{
	struct holder *h = priv;

	atomic_inc(&h->revoked);
	if (h->free_in_callback)
		p2pbar_free(mem);
}

static const struct p2pbar_user_ops holder_ops = { .revoke = holder_revoke };

static int live_init(struct kunit *test)
{
	struct live_ctx *ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;
	ctx->pdev = pci_get_device(0x1af4, 0x1110, NULL);
	if (!ctx->pdev)
		kunit_skip(test, "no ivshmem device");
	ctx->pb = p2pbar_get(ctx->pdev);
	if (!ctx->pb)
		kunit_skip(test, "p2pbar is not bound to %s", pci_name(ctx->pdev));
	return 0;
}

static void live_exit(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;

	p2pbar_put(ctx->pb);
	/* every case leaves the provider bound, as it found it */
	if (ctx->pdev && !ctx->pdev->dev.driver)
		KUNIT_EXPECT_GE(test, device_attach(&ctx->pdev->dev), 1);
	pci_dev_put(ctx->pdev);
}

static void alloc_and_access(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;
	struct holder h = {};
	struct p2pbar_mem *mem;
	u8 *buf, *back;
	void __iomem *io;
	size_t i;
	bool zero = true;

	mem = p2pbar_alloc(ctx->pb, 3 * PAGE_SIZE + 1, &holder_ops, &h);
	KUNIT_ASSERT_FALSE(test, IS_ERR(mem));
	KUNIT_EXPECT_EQ(test, p2pbar_mem_size(mem), 4 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, p2pbar_mem_bus_addr(mem),
			pci_p2pmem_virt_to_bus(ctx->pdev, p2pbar_mem_vaddr(mem)));
	KUNIT_EXPECT_GE(test, p2pbar_mem_bus_addr(mem), pci_bus_address(ctx->pdev, 2));
	KUNIT_EXPECT_LT(test, p2pbar_mem_bus_addr(mem),
			pci_bus_address(ctx->pdev, 2) + pci_resource_len(ctx->pdev, 2));

	io = (void __iomem __force *)p2pbar_mem_vaddr(mem);
	for (i = 0; i < p2pbar_mem_size(mem); i++)
		zero &= !readb(io + i);
	KUNIT_EXPECT_TRUE_MSG(test, zero, "fresh allocation is not zeroed");

	buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	back = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_NOT_NULL(test, back);
	for (i = 0; i < PAGE_SIZE; i++)
		buf[i] = i * 7 + 3;
	memcpy_toio(io + PAGE_SIZE, buf, PAGE_SIZE);
	memcpy_fromio(back, io + PAGE_SIZE, PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, memcmp(buf, back, PAGE_SIZE), 0);
	p2pbar_free(mem);
	KUNIT_EXPECT_EQ(test, atomic_read(&h.revoked), 0);
}

static void alloc_bad_args(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;
	static const struct p2pbar_user_ops no_revoke = {};
	struct holder h = {};

	KUNIT_EXPECT_EQ(test, PTR_ERR(p2pbar_alloc(ctx->pb, 0, &holder_ops, &h)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(p2pbar_alloc(ctx->pb, PAGE_SIZE, NULL, &h)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(p2pbar_alloc(ctx->pb, PAGE_SIZE, &no_revoke, &h)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(p2pbar_alloc(ctx->pb, SZ_1G, &holder_ops, &h)), -ENOSPC);
}

static void find_for_nvme(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;
	struct pci_dev *nvme = pci_get_class(PCI_CLASS_STORAGE_EXPRESS, NULL);
	struct p2pbar *found;

	if (!nvme)
		kunit_skip(test, "no NVMe controller");
	found = p2pbar_find(&nvme->dev);
	if (!strcmp(expect, "refused"))
		KUNIT_EXPECT_NULL(test, found);
	else
		KUNIT_EXPECT_PTR_EQ(test, found, ctx->pb);
	p2pbar_put(found);
	KUNIT_EXPECT_NULL(test, p2pbar_get(nvme));	/* not a provider */
	pci_dev_put(nvme);
}

/* Unbind with two live in-kernel allocations whose owner frees on revoke. */
static void revoke_on_unbind(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;
	struct holder h = { .free_in_callback = true };
	struct p2pbar_mem *a, *b;
	unsigned long t0;

	a = p2pbar_alloc(ctx->pb, PAGE_SIZE, &holder_ops, &h);
	b = p2pbar_alloc(ctx->pb, 2 * PAGE_SIZE, &holder_ops, &h);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a) || IS_ERR(b));

	t0 = jiffies;
	device_release_driver(&ctx->pdev->dev);
	KUNIT_EXPECT_EQ(test, atomic_read(&h.revoked), 2);
	KUNIT_EXPECT_LT(test, jiffies - t0, 2 * HZ);
	KUNIT_EXPECT_NULL(test, p2pbar_get(ctx->pdev));
	KUNIT_EXPECT_EQ(test, PTR_ERR(p2pbar_alloc(ctx->pb, PAGE_SIZE, &holder_ops, &h)), -ENODEV);
	KUNIT_EXPECT_NULL(test, rcu_access_pointer(ctx->pdev->p2pdma));	/* torn down */
}

/*
 * A user whose revoke callback hands the free to a work item and flushes it
 * (a common shape: the free path takes locks the callback's context must
 * not). p2pbar_free() from that work item must not wait for the callback,
 * or neither ever returns. The callback's argument is released only after
 * the callback returned. The case waits in bounded steps, so a deadlock
 * fails it instead of hanging the bench; its state is then leaked on
 * purpose (the stuck threads still use it).
 */
struct flusher {
	struct p2pbar_mem *mem;
	struct work_struct free_work;
	atomic_t in_callback;
	atomic_t revoked;
	atomic_t released;
	atomic_t released_in_callback;
	struct completion callback_done;
	struct completion unbound;
	struct pci_dev *pdev;
};

static void flusher_free_fn(struct work_struct *work)
{
	struct flusher *f = container_of(work, struct flusher, free_work);

	p2pbar_free(f->mem);
}

static void flusher_revoke(struct p2pbar_mem *mem, void *priv)
{
	struct flusher *f = priv;

	atomic_set(&f->in_callback, 1);
	atomic_inc(&f->revoked);
	queue_work(system_unbound_wq, &f->free_work);
	flush_work(&f->free_work);
	msleep(100);	/* a slow callback: its argument must outlive it */
	atomic_set(&f->in_callback, 0);
	complete(&f->callback_done);
}

static void flusher_release(void *priv)
{
	struct flusher *f = priv;

	atomic_add(atomic_read(&f->in_callback), &f->released_in_callback);
	atomic_inc(&f->released);
}

static const struct p2pbar_user_ops flusher_ops = {
	.revoke = flusher_revoke,
	.release = flusher_release,
};

static int unbind_fn(void *arg)
{
	struct flusher *f = arg;

	device_release_driver(&f->pdev->dev);
	complete(&f->unbound);
	return 0;
}

static void revoke_frees_from_flushed_work(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;
	struct task_struct *t;
	struct flusher *f;
	int i;

	f = kzalloc_obj(*f, GFP_KERNEL);	/* not kunit's: may outlive the case */
	KUNIT_ASSERT_NOT_NULL(test, f);
	INIT_WORK(&f->free_work, flusher_free_fn);
	init_completion(&f->callback_done);
	init_completion(&f->unbound);
	f->pdev = ctx->pdev;
	f->mem = p2pbar_alloc(ctx->pb, PAGE_SIZE, &flusher_ops, f);
	if (IS_ERR(f->mem)) {
		kfree(f);
		KUNIT_FAIL(test, "p2pbar_alloc: %ld", PTR_ERR(f->mem));
		return;
	}
	t = kthread_run(unbind_fn, f, "p2pbar-unbind");
	if (IS_ERR(t)) {
		p2pbar_free(f->mem);
		kfree(f);
		KUNIT_FAIL(test, "kthread_run: %ld", PTR_ERR(t));
		return;
	}
	if (!wait_for_completion_timeout(&f->callback_done, 15 * HZ) ||
	    !wait_for_completion_timeout(&f->unbound, 15 * HZ)) {
		KUNIT_FAIL(test, "revoke callback or unbind stuck for 15 s: %s",
			   "p2pbar_free() from the flushed work waits for the callback");
		return;		/* f leaked: the stuck threads use it */
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&f->revoked), 1);
	/* released by the revocation's work item once the callback returned */
	for (i = 0; i < 100 && !atomic_read(&f->released); i++)
		msleep(20);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->released), 1);
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&f->released_in_callback), 0,
			    "release called while the revoke callback still ran");
	KUNIT_EXPECT_NULL(test, rcu_access_pointer(ctx->pdev->p2pdma));	/* torn down */
	kfree(f);
}

/* Bind the provider again; true if p2pbar took it. */
static bool rebind(struct live_ctx *ctx)
{
	return device_attach(&ctx->pdev->dev) >= 1 && ctx->pdev->dev.driver;
}

/*
 * While remove() waits for an in-kernel user (below), the instance is
 * REMOVING and already unpublished: an administrator who opened published
 * before and writes 1 now must get -ENODEV, and the kernel must not have
 * the memory published again (other users could take it without any
 * revocation).
 */
struct republisher {
	struct holder *h;
	struct pci_dev *pdev;
	struct file *f;		/* published, opened before the unbind */
	ssize_t wrote;
	char published[8];
	struct completion done;
};

static int republish_fn(void *arg)
{
	struct republisher *r = arg;
	char path[96], one[] = "1";
	struct file *f;
	loff_t pos = 0;
	int i;

	/* the revoke callback runs once remove() has unpublished and waits */
	for (i = 0; i < 250 && !atomic_read(&r->h->revoked); i++)
		msleep(20);
	r->wrote = kernel_write(r->f, one, 1, &pos);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/p2pmem/published",
		 pci_name(r->pdev));
	f = filp_open(path, O_RDONLY, 0);
	pos = 0;
	if (IS_ERR(f) || kernel_read(f, r->published, sizeof(r->published) - 1, &pos) < 1)
		strscpy(r->published, "?", sizeof(r->published));
	if (!IS_ERR(f))
		filp_close(f, NULL);
	complete(&r->done);
	return 0;
}

/* /sys/class/p2pbar/p2pbarN/published of the instance on @pdev, opened */
static struct file *open_published(struct pci_dev *pdev)
{
	char path[96];
	struct file *f;
	int n;

	for (n = 0; n < 8; n++) {
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/p2pbar/p2pbar%d/published",
			 pci_name(pdev), n);
		f = filp_open(path, O_WRONLY, 0);
		if (!IS_ERR(f))
			return f;
	}
	return ERR_PTR(-ENOENT);
}

/*
 * A user that ignores revoke: unbind must still finish, after the bounded
 * wait, and the memory it may still touch is quarantined: p2pbar refuses
 * to bind the function again until the user's late p2pbar_free(). Meanwhile
 * publishing is refused (see above).
 */
static void revoke_ignored_is_bounded(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;
	struct holder h = { .free_in_callback = false };
	struct republisher r = { .h = &h, .pdev = ctx->pdev };
	struct task_struct *t;
	struct p2pbar_mem *mem;
	unsigned long t0, took;

	mem = p2pbar_alloc(ctx->pb, PAGE_SIZE, &holder_ops, &h);
	KUNIT_ASSERT_FALSE(test, IS_ERR(mem));
	r.f = open_published(ctx->pdev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r.f));
	init_completion(&r.done);
	t = kthread_run(republish_fn, &r, "p2pbar-republish");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	t0 = jiffies;
	device_release_driver(&ctx->pdev->dev);
	took = jiffies - t0;
	wait_for_completion(&r.done);
	filp_close(r.f, NULL);
	KUNIT_EXPECT_EQ_MSG(test, r.wrote, -ENODEV, "published written during removal");
	KUNIT_EXPECT_EQ_MSG(test, r.published[0], '0', "the kernel had it published again");
	KUNIT_EXPECT_EQ(test, atomic_read(&h.revoked), 1);
	KUNIT_EXPECT_GE(test, took, 9 * HZ);
	KUNIT_EXPECT_LT(test, took, 20 * HZ);
	KUNIT_EXPECT_FALSE_MSG(test, rebind(ctx), "re-bound over quarantined memory");
	p2pbar_free(mem);	/* late, after the provider took the pages back */
	KUNIT_EXPECT_TRUE_MSG(test, rebind(ctx), "no re-bind once the memory was freed");
}

/* A BAR another driver holds is not taken: probe fails, nothing left. */
static void bar_taken_probe_fails(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;

	device_release_driver(&ctx->pdev->dev);
	KUNIT_ASSERT_EQ(test, pci_request_region(ctx->pdev, 2, "squatter"), 0);
	KUNIT_EXPECT_FALSE_MSG(test, rebind(ctx), "bound over a BAR held by another driver");
	KUNIT_EXPECT_NULL(test, rcu_access_pointer(ctx->pdev->p2pdma));
	pci_release_region(ctx->pdev, 2);
	KUNIT_EXPECT_TRUE(test, rebind(ctx));
}

/* After a re-bind the same function works as a provider again. */
static void rebind_works(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;
	struct holder h = {};
	struct p2pbar *pb;
	struct p2pbar_mem *mem;

	device_release_driver(&ctx->pdev->dev);
	KUNIT_ASSERT_GE(test, device_attach(&ctx->pdev->dev), 1);
	pb = p2pbar_get(ctx->pdev);
	KUNIT_ASSERT_NOT_NULL(test, pb);
	KUNIT_EXPECT_PTR_NE(test, pb, ctx->pb);
	mem = p2pbar_alloc(pb, PAGE_SIZE, &holder_ops, &h);
	KUNIT_EXPECT_FALSE(test, IS_ERR(mem));
	if (!IS_ERR(mem))
		p2pbar_free(mem);
	p2pbar_put(pb);
}

/* ---- dma-buf exporter -------------------------------------------------- */

struct importer {
	atomic_t invalidated;
	struct sg_table *sgt;	/* under the dma-buf's resv lock */
};

/* Called with the resv lock held: a well-behaved importer unmaps at once. */
static void importer_invalidate(struct dma_buf_attachment *attach)
{
	struct importer *im = attach->importer_priv;

	atomic_inc(&im->invalidated);
	if (im->sgt) {
		dma_buf_unmap_attachment(attach, im->sgt, DMA_BIDIRECTIONAL);
		im->sgt = NULL;
	}
}

static const struct dma_buf_attach_ops p2p_importer = {
	.allow_peer2peer = true,
	.P2P_DMA_BUF_INVALIDATE_OP = importer_invalidate,
};

/*
 * Unbind while an importer holds a mapping: it is told to stop, unbind does
 * not wait once it has unmapped, and the dma-buf is dead for good after.
 */
static void dmabuf_revoke_on_unbind(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;
	struct device *dev = &ctx->pdev->dev;
	struct dma_buf_attachment *attach, *again;
	struct importer im = {};
	struct dma_buf *dmabuf;
	struct sg_table *sgt;
	unsigned long t0;

	dmabuf = p2pbar_dmabuf_export(ctx->pb, PAGE_SIZE, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	attach = dma_buf_dynamic_attach(dmabuf, dev, &p2p_importer, &im);
	KUNIT_ASSERT_FALSE(test, IS_ERR(attach));
	dma_resv_lock(dmabuf->resv, NULL);
	im.sgt = dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL);
	dma_resv_unlock(dmabuf->resv);
	KUNIT_ASSERT_FALSE(test, IS_ERR(im.sgt));

	t0 = jiffies;
	device_release_driver(dev);
	KUNIT_EXPECT_LT(test, jiffies - t0, 2 * HZ);
	KUNIT_EXPECT_EQ(test, atomic_read(&im.invalidated), 1);
	KUNIT_EXPECT_NULL(test, im.sgt);

	dma_resv_lock(dmabuf->resv, NULL);
	sgt = dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL);
	dma_resv_unlock(dmabuf->resv);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(sgt), -ENODEV);
	again = dma_buf_dynamic_attach(dmabuf, dev, &p2p_importer, &im);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(again), -ENODEV);
	dma_buf_detach(dmabuf, attach);
	dma_buf_put(dmabuf);	/* the memory went back at unbind already */
}

/*
 * Importers that ignore the revocation, on three dma-bufs: they are all
 * revoked at once (one bound, not three), unbind finishes, the memory is
 * quarantined until they unmap, then freed.
 */
struct deaf_importer {
	atomic_t invalidated;
};

static void deaf_invalidate(struct dma_buf_attachment *attach)
{
	struct deaf_importer *im = attach->importer_priv;

	atomic_inc(&im->invalidated);	/* and keeps using its mapping */
}

static const struct dma_buf_attach_ops deaf_importer_ops = {
	.allow_peer2peer = true,
	.P2P_DMA_BUF_INVALIDATE_OP = deaf_invalidate,
};

static void dmabuf_deaf_importers(struct kunit *test)
{
	struct live_ctx *ctx = test->priv;
	struct pci_dev *nvme = pci_get_class(PCI_CLASS_STORAGE_EXPRESS, NULL);
	struct device *dev = nvme ? &nvme->dev : NULL;
	struct dma_buf_attachment *attach[3];
	struct sg_table *sgt[3];
	struct dma_buf *dmabuf[3];
	struct deaf_importer im = {};
	unsigned long t0, took;
	int i, tries;

	/*
	 * The importer is another device (the NVMe controller): its mappings
	 * outlive the provider's unbind, which DMA-API debugging would report
	 * for mappings of the provider itself.
	 */
	if (!nvme || !strcmp(expect, "refused")) {
		pci_dev_put(nvme);
		kunit_skip(test, "needs an NVMe controller that reaches the BAR");
	}
	for (i = 0; i < 3; i++) {
		dmabuf[i] = p2pbar_dmabuf_export(ctx->pb, PAGE_SIZE, NULL);
		KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf[i]));
		attach[i] = dma_buf_dynamic_attach(dmabuf[i], dev, &deaf_importer_ops, &im);
		KUNIT_ASSERT_FALSE(test, IS_ERR(attach[i]));
		dma_resv_lock(dmabuf[i]->resv, NULL);
		sgt[i] = dma_buf_map_attachment(attach[i], DMA_BIDIRECTIONAL);
		dma_resv_unlock(dmabuf[i]->resv);
		KUNIT_ASSERT_FALSE(test, IS_ERR(sgt[i]));
	}
	t0 = jiffies;
	device_release_driver(&ctx->pdev->dev);
	took = jiffies - t0;
	KUNIT_EXPECT_EQ(test, atomic_read(&im.invalidated), 3);
	KUNIT_EXPECT_LT_MSG(test, took, 15 * HZ, "revocations ran one after another: %u ms",
			    jiffies_to_msecs(took));
	KUNIT_EXPECT_FALSE_MSG(test, rebind(ctx), "re-bound under importers' mappings");

	for (i = 0; i < 3; i++) {
		dma_resv_lock(dmabuf[i]->resv, NULL);
		dma_buf_unmap_attachment(attach[i], sgt[i], DMA_BIDIRECTIONAL);
		dma_resv_unlock(dmabuf[i]->resv);
		dma_buf_detach(dmabuf[i], attach[i]);
	}
	/* the last unmap frees the memory from a work item */
	for (tries = 0; tries < 100 && !rebind(ctx); tries++)
		msleep(20);
	KUNIT_EXPECT_TRUE_MSG(test, ctx->pdev->dev.driver,
			      "no re-bind once the importers unmapped");
	for (i = 0; i < 3; i++)
		dma_buf_put(dmabuf[i]);
	pci_dev_put(nvme);
}

static struct kunit_case live_cases[] = {
	KUNIT_CASE(alloc_and_access),
	KUNIT_CASE(alloc_bad_args),
	KUNIT_CASE(find_for_nvme),
	KUNIT_CASE(revoke_on_unbind),
	KUNIT_CASE(revoke_frees_from_flushed_work),
	KUNIT_CASE(revoke_ignored_is_bounded),
	KUNIT_CASE(bar_taken_probe_fails),
	KUNIT_CASE(rebind_works),
	KUNIT_CASE(dmabuf_revoke_on_unbind),
	KUNIT_CASE(dmabuf_deaf_importers),
	{}
};

static struct kunit_suite live_suite = {
	.name = "p2pbar_live",
	.init = live_init,
	.exit = live_exit,
	.test_cases = live_cases,
};

kunit_test_suite(live_suite);

MODULE_DESCRIPTION("Live tests of the p2pbar in-kernel API on the QEMU bench");
P2P_IMPORT_NS("DMA_BUF");
MODULE_LICENSE("GPL");
