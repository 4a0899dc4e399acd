// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme as a dma-buf importer (P2PNVME_IO_F_DMABUF): attach as a dynamic
 * peer2peer importer of the controller's PCI function, map, keep the
 * importer's side of the contract (the exporter's fences, our own fence,
 * invalidation), unmap. Built only with CONFIG_DMA_SHARED_BUFFER; without
 * it such requests fail with -EOPNOTSUPP (internal.h).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/dma-resv.h>
#include <linux/slab.h>
#include <p2p_compat.h>

#include "internal.h"

/*
 * The exporter wants its memory back or moves it (called with the
 * dma-buf's resv lock held). Commands already at the controller are
 * covered by our fence in the reservation object, which the exporter
 * waits for before it moves or frees anything; commands not submitted yet
 * are not sent (-EAGAIN: a new request maps the buffer afresh, or learns
 * that it was revoked).
 */
static void dmabuf_invalidate(struct dma_buf_attachment *attach)
{
	struct p2pnvme_req *r = attach->importer_priv;

	WRITE_ONCE(r->invalidated, true);
}

static const struct dma_buf_attach_ops dmabuf_importer_ops = {
	.allow_peer2peer = true,
	.P2P_DMA_BUF_INVALIDATE_OP = dmabuf_invalidate,
};

/*
 * Look up @r's dma-buf and attach to it, or share the attachment an earlier
 * entry of the batch made for the same dma-buf: one attachment and mapping
 * per dma-buf and batch (both directions), however many entries use it.
 */
int p2pnvme_dmabuf_attach(struct p2pnvme *c, struct p2pnvme_req *reqs, unsigned int i)
{
	struct p2pnvme_req *r = &reqs[i];
	struct p2pnvme_io *io = r->io;
	struct dma_buf *dmabuf;
	unsigned int j;

	dmabuf = dma_buf_get(io->dmabuf_fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	r->dmabuf = dmabuf;
	if (io->addr + io->len > dmabuf->size)
		return -EINVAL;
	/* the controller writes into the buffer on a read: a writable fd only */
	if (r->dir == DMA_FROM_DEVICE && !(dmabuf->file->f_mode & FMODE_WRITE))
		return -EBADF;
	for (j = 0; j < i; j++) {
		if (reqs[j].dmabuf == dmabuf && reqs[j].attach) {
			r->owner = &reqs[j];	/* released by entry j, after us */
			return 0;
		}
	}
	r->owner = r;
	r->attach = dma_buf_dynamic_attach(dmabuf, &c->pdev->dev, &dmabuf_importer_ops, r);
	if (IS_ERR(r->attach)) {
		int ret = PTR_ERR(r->attach);

		r->attach = NULL;
		return ret;
	}
	return 0;
}

static const char *fence_driver_name(struct dma_fence *f)
{
	return KBUILD_MODNAME;
}

static const char *fence_timeline_name(struct dma_fence *f)
{
	return "io";
}

static const struct dma_fence_ops p2pnvme_fence_ops = {
	.get_driver_name = fence_driver_name,
	.get_timeline_name = fence_timeline_name,
};

/*
 * Map @r's dma-buf for the controller (the entry that owns the attachment
 * does, the others share it). The exporter decides whether the controller
 * can reach the memory: -EREMOTEIO when it cannot (no bounce for dma-bufs),
 * -ENODEV once revoked. Then, as the importer contract wants: wait for the
 * exporter's own fences (a move in progress) and put our fence in the
 * reservation object for the I/O to come.
 */
int p2pnvme_dmabuf_map(struct p2pnvme *c, struct p2pnvme_req *r)
{
	struct dma_resv *resv = r->dmabuf->resv;
	struct sg_table *sgt;
	long left;
	int ret;

	dma_resv_lock(resv, NULL);
	sgt = dma_buf_map_attachment(r->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		if (ret == -EREMOTEIO)
			p2pnvme_stat_add(c, ST_REFUSED, 1);
		goto out_unlock;
	}
	r->dsgt = sgt;
	left = dma_resv_wait_timeout(resv, DMA_RESV_USAGE_KERNEL, true, p2pnvme_io_timeout());
	if (left <= 0) {
		ret = left ?: -ETIMEDOUT;
		goto out_unlock;
	}
	ret = dma_resv_reserve_fences(resv, 1);
	if (ret)
		goto out_unlock;
	r->fence = kzalloc_obj(*r->fence, GFP_KERNEL);
	if (!r->fence) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	spin_lock_init(&r->fence->lock);
	dma_fence_init(&r->fence->base, &p2pnvme_fence_ops, &r->fence->lock, c->fence_ctx,
		       atomic64_inc_return(&c->fence_seq));
	/* the batch's commands may write as well as read the buffer */
	dma_resv_add_fence(resv, &r->fence->base, DMA_RESV_USAGE_WRITE);
	ret = 0;
out_unlock:
	dma_resv_unlock(resv);
	return ret;
}

/* Signal our fence and unmap: every command of the batch is over. */
void p2pnvme_dmabuf_unmap(struct p2pnvme_req *r)
{
	if (r->fence) {
		dma_fence_signal(&r->fence->base);
		dma_fence_put(&r->fence->base);	/* the resv keeps its own */
		r->fence = NULL;
	}
	if (r->attach && r->dsgt) {
		dma_resv_lock(r->dmabuf->resv, NULL);
		dma_buf_unmap_attachment(r->attach, r->dsgt, DMA_BIDIRECTIONAL);
		dma_resv_unlock(r->dmabuf->resv);
		r->dsgt = NULL;
	}
}

/* Detach (the entry that attached) and drop the dma-buf reference. */
void p2pnvme_dmabuf_release(struct p2pnvme_req *r)
{
	if (r->attach)
		dma_buf_detach(r->dmabuf, r->attach);
	dma_buf_put(r->dmabuf);
}
