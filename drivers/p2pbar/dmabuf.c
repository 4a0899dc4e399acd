// SPDX-License-Identifier: GPL-2.0
/*
 * p2pbar dma-buf exporter: P2PBAR_IOC_EXPORT allocates zeroed p2pmem and
 * hands it out as a dma-buf, for importers that can DMA to a peer's BAR
 * (RDMA ibv_reg_dmabuf_mr(), GPU drivers, p2pnvme's P2PNVME_IO_F_DMABUF).
 *
 * Every mapping is made for the importing device by the kernel's P2PDMA
 * verdict: bus addresses under a shared switch, IOMMU or CPU physical
 * addresses through an allowed host bridge, -EREMOTEIO when the importer
 * cannot reach the BAR at all. On 7.x it is page-less
 * (dma_buf_phys_vec_to_sgt(), as vfio does), before that dma_map_sgtable()
 * of the allocation's P2PDMA pages.
 *
 * The memory belongs to a device that can go away, so only importers that
 * can be revoked are taken: peer2peer capable, dynamic, with an
 * invalidation callback (move_notify, 7.x: invalidate_mappings). Such an
 * importer may also pin (the RDMA core's revocable pinned import); a pin
 * from an importer whose callback cannot revoke is refused (see
 * p2pbar_dmabuf_pin()). A mapping has one entry per contiguous run, split
 * only where the importer's DMA limits say so.
 *
 * The CPU reaches the memory through mmap() of the dma-buf (faulted in like
 * /dev/p2pbarN, SIGBUS after a revocation) and dma_buf_vmap() (an iosys_map
 * of I/O memory). When the provider is removed, the exporter marks the
 * dma-buf revoked, zaps its CPU mappings, tells the importers to stop
 * (invalidation), waits for their fences (DMA they queued) and for their
 * mappings and vmaps to go, bounded, and gives the memory back. An importer
 * that keeps a mapping past the bound is named in the log and the memory is
 * not given back: the provider quarantines it until the importer unmaps.
 * Later maps fail with -ENODEV; the dma-buf file itself lives on until it
 * is closed.
 *
 * An in-kernel importer may instead hold the pages themselves for block
 * I/O (p2pbar_dmabuf_pages()): a hold is counted and waited for as a
 * mapping. It reaches those calls through the dma-buf's operations
 * (struct p2pbar_dmabuf_ops, p2pbar_dmabuf_ops_of()), so that it needs
 * neither a dependency on this module nor a symbol lookup.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/fcntl.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/p2pbar.h>
#include <linux/pci-p2pdma.h>
#include <linux/p2p_ioctl.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <p2p_compat.h>
#ifdef HAVE_DMA_BUF_PHYS_VEC_TO_SGT
#include <linux/dma-buf-mapping.h>
#endif

#include "internal.h"
#include "trace.h"

/* how long a revoke waits for importers' fences and unmaps, in all */
#define P2PBAR_DMABUF_REVOKE_TIMEOUT	(P2PBAR_REVOKE_TIMEOUT / 2)

/**
 * struct p2pbar_dmabuf - an exported allocation
 * @dmabuf: the dma-buf
 * @pdev: the provider's PCI function, with a reference (for messages)
 * @mem: the p2pmem; NULL once it went back (@lock)
 * @lock: protects @mem, and @dmabuf while the export is being set up
 * @size: bytes
 * @revoked: the provider is gone: no new mappings (dmabuf->resv)
 * @abandoned: the revocation gave up waiting for the importers (a mapping
 *	       left, or fences not signalled); @free_work frees the memory
 *	       once both are gone (dmabuf->resv)
 * @maps: mappings, vmaps and page holds (p2pbar_dmabuf_pages()) handed out
 *	 and not undone yet (dmabuf->resv)
 * @pins: pins taken by revocable importers (dmabuf->resv)
 * @unmapped: completed when @maps drops to 0 after @revoked
 * @free_work: frees abandoned memory once nothing maps it and every fence
 *	       signalled, polling (not under resv)
 * @released: completed by p2pbar_user_ops.release: the memory was freed
 *	      and the revoke callback, which uses @dmabuf, is not running
 */
struct p2pbar_dmabuf {
	struct dma_buf *dmabuf;
	struct pci_dev *pdev;
	struct p2pbar_mem *mem;
	struct mutex lock;	/* see above */
	size_t size;
	bool revoked;
	bool abandoned;
	unsigned int maps;
	unsigned int pins;
	struct completion unmapped;
	struct delayed_work free_work;
	struct completion released;
};

static int p2pbar_dmabuf_attach(struct dma_buf *dmabuf, struct dma_buf_attachment *attach)
{
	struct p2pbar_dmabuf *d = dmabuf->priv;

	/*
	 * Said in the log: the importer's driver reports only its errno
	 * (a GPU driver's import of a static importer, NVIDIA's
	 * dma_buf_attach(), fails here).
	 */
	if (!attach->importer_ops) {
		pci_info_ratelimited(d->pdev, "dma-buf import by %s refused: a static importer (dma_buf_attach()) cannot be revoked when the provider goes\n",
				     dev_name(attach->dev));
		return -EOPNOTSUPP;
	}
	if (!attach->peer2peer) {
		pci_info_ratelimited(d->pdev, "dma-buf import by %s refused: the importer does not take peer-to-peer memory (allow_peer2peer)\n",
				     dev_name(attach->dev));
		return -EOPNOTSUPP;
	}
	if (!p2p_dma_buf_attach_revocable(attach)) {
		pci_info_ratelimited(d->pdev, "dma-buf import by %s refused: no invalidation callback, it cannot be revoked\n",
				     dev_name(attach->dev));
		return -EOPNOTSUPP;
	}
	/*
	 * Before 7.x, a kernel without CONFIG_DMABUF_MOVE_NOTIFY pins every
	 * dynamic mapping, which cannot be revoked: say so at attach, not as
	 * a failed map later.
	 */
	if (!P2P_DMA_BUF_CAN_REVOKE) {
		pci_info_ratelimited(d->pdev, "dma-buf import refused: this kernel pins importers' mappings (no CONFIG_DMABUF_MOVE_NOTIFY)\n");
		return -EOPNOTSUPP;
	}
	if (READ_ONCE(d->revoked))
		return -ENODEV;
	return 0;
}

/*
 * The memory never moves, so a pin only promises the importer that its
 * mapping stays until a revocation: fine for an importer that can be
 * revoked, refused for one whose callback cannot (it would DMA on after
 * the provider is gone, and only quarantine would stand in its way).
 * Before 7.x the exporter cannot tell the two apart
 * (P2P_DMA_BUF_PIN_REVOCABLE): no pin at all. That costs the importers
 * that pin, the RDMA core's pinned imports (irdma's revocable one too);
 * the dynamic importers that do not pin (p2pnvme, GPU drivers) import as
 * before.
 */
static int p2pbar_dmabuf_pin(struct dma_buf_attachment *attach)
{
	struct p2pbar_dmabuf *d = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (d->revoked)
		return -ENODEV;
	if (!P2P_DMA_BUF_PIN_REVOCABLE) {
		pci_info_ratelimited(d->pdev, "dma-buf pin by %s refused: before 7.x an exporter cannot tell whether a pinned importer can be revoked\n",
				     dev_name(attach->dev));
		return -EOPNOTSUPP;
	}
	d->pins++;
	return 0;
}

static void p2pbar_dmabuf_unpin(struct dma_buf_attachment *attach)
{
	struct p2pbar_dmabuf *d = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	d->pins--;
}

#ifdef HAVE_DMA_BUF_PHYS_VEC_TO_SGT
/*
 * 7.x: the page-less mapping vfio's exporter uses. The allocation is one
 * physical range of the BAR; the core maps it for the importer by the
 * kernel's P2PDMA verdict (bus addresses, DMA_ATTR_MMIO through the host
 * bridge, one IOVA range under an IOMMU) and splits it only where a 32-bit
 * length demands. No struct page reaches the importer.
 */
static struct sg_table *p2pbar_dmabuf_map_phys(struct dma_buf_attachment *attach,
					       struct p2pbar_dmabuf *d,
					       enum dma_data_direction dir)
{
	struct p2pbar_mem *mem = d->mem;
	struct phys_vec range = {
		.paddr = page_to_phys(virt_to_page(p2pbar_mem_vaddr(mem))),
		.len = d->size,
	};
	struct p2pdma_provider *provider = pcim_p2pdma_provider(d->pdev, mem->pb->region.bar);
	struct sg_table *sgt;

	if (!provider)
		return ERR_PTR(-ENODEV);
	/* the core says -EINVAL for an importer it cannot map: say why */
	if (pci_p2pdma_distance(d->pdev, attach->dev, false) < 0)
		return ERR_PTR(-EREMOTEIO);
	sgt = dma_buf_phys_vec_to_sgt(attach, provider, &range, 1, d->size, dir);
	if (!IS_ERR(sgt))
		d->maps++;
	return sgt;
}

#else
/*
 * The length of the mapping entry at bus address @bus with @left bytes to
 * go: as long as @dev takes (its maximum segment size and segment boundary,
 * which DMA-API debugging checks too) and a scatterlist entry holds.
 */
static size_t p2pbar_dmabuf_seg_len(struct device *dev, u64 bus, size_t left)
{
	u64 boundary = dma_get_seg_boundary(dev);
	u64 room = boundary - (bus & boundary) + 1;	/* 0: no boundary */
	size_t len = ALIGN_DOWN(dma_get_max_seg_size(dev), PAGE_SIZE);

	len = clamp_t(size_t, len, PAGE_SIZE, ALIGN_DOWN(UINT_MAX, PAGE_SIZE));
	len = min(len, left);
	if (room && room < len)
		len = room;
	return len;
}

/*
 * Before 7.x: the allocation's P2PDMA pages through dma_map_sgtable(), one
 * entry per run the importer's DMA limits allow.
 */
static struct sg_table *p2pbar_dmabuf_map_pages(struct dma_buf_attachment *attach,
						struct p2pbar_dmabuf *d,
						enum dma_data_direction dir)
{
	void *vaddr = p2pbar_mem_vaddr(d->mem);
	u64 bus = p2pbar_mem_bus_addr(d->mem);
	unsigned int n = 0, i;
	struct sg_table *sgt;
	struct scatterlist *sg;
	size_t off, len;
	int ret;

	for (off = 0; off < d->size; off += len, n++)
		len = p2pbar_dmabuf_seg_len(attach->dev, bus + off, d->size - off);
	sgt = kzalloc_obj(*sgt, GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (ret)
		goto err_free;
	/* ZONE_DEVICE needs SPARSEMEM_VMEMMAP: the struct pages are contiguous */
	off = 0;
	for_each_sgtable_sg(sgt, sg, i) {
		len = p2pbar_dmabuf_seg_len(attach->dev, bus + off, d->size - off);
		sg_set_page(sg, virt_to_page(vaddr + off), len, 0);
		off += len;
	}
	ret = p2p_dma_map_sgtable(attach->dev, sgt, dir, DMA_ATTR_SKIP_CPU_SYNC);
	if (ret)
		goto err_table;
	d->maps++;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}
#endif

static struct sg_table *p2pbar_dmabuf_map(struct dma_buf_attachment *attach,
					  enum dma_data_direction dir)
{
	struct p2pbar_dmabuf *d = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (d->revoked)
		return ERR_PTR(-ENODEV);
	/* d->mem stays until a revoke, which needs the resv lock we hold */
#ifdef HAVE_DMA_BUF_PHYS_VEC_TO_SGT
	return p2pbar_dmabuf_map_phys(attach, d, dir);
#else
	return p2pbar_dmabuf_map_pages(attach, d, dir);
#endif
}

/* a mapping or vmap went: the last one after a revocation lets it finish */
static void p2pbar_dmabuf_put_map(struct p2pbar_dmabuf *d)
{
	dma_resv_assert_held(d->dmabuf->resv);
	if (!--d->maps && d->revoked) {
		complete(&d->unmapped);
		if (d->abandoned)
			mod_delayed_work(p2pbar_wq, &d->free_work, 0);
	}
}

static void p2pbar_dmabuf_unmap(struct dma_buf_attachment *attach, struct sg_table *sgt,
				enum dma_data_direction dir)
{
	struct p2pbar_dmabuf *d = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
#ifdef HAVE_DMA_BUF_PHYS_VEC_TO_SGT
	dma_buf_free_sgt(attach, sgt, dir);
#else
	dma_unmap_sgtable(attach->dev, sgt, dir, DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
	kfree(sgt);
#endif
	p2pbar_dmabuf_put_map(d);
}

/*
 * mmap() of the dma-buf fd (or dma_buf_mmap() for another file): the same
 * rules as /dev/p2pbarN. The core checked that the range fits the buffer.
 */
static int p2pbar_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct p2pbar_dmabuf *d = dmabuf->priv;
	struct p2pbar_mem *mem;

	if (!P2P_HAVE_USER_PAGES)
		return -EOPNOTSUPP;
	/* MAP_SHARED of a read-only fd has VM_MAYSHARE but not VM_SHARED */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	mutex_lock(&d->lock);
	mem = d->mem;
	if (mem && !READ_ONCE(d->revoked))
		kref_get(&mem->kref);
	else
		mem = NULL;
	mutex_unlock(&d->lock);
	if (!mem)
		return -ENODEV;
	/* a revocation from here on finds the VMA and zaps it */
	p2pbar_mem_vma_init(mem, vma);
	return 0;
}

/*
 * The kernel's CPU view: p2pmem is I/O memory (memset_io(), memcpy_fromio()
 * through the iosys_map). A vmap counts as a mapping: a revocation waits for
 * its vunmap like for an unmap. Before 6.2 dma_buf_vmap() did not hold the
 * reservation lock that guards the count; no vmap there. (The core counts
 * vmaps itself: this runs for the first, vunmap for the last; and it WARNs
 * when a vmap fails, as one of a revoked dma-buf does.)
 */
static int p2pbar_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
#ifdef HAVE_DMA_BUF_VMAP_UNLOCKED
	struct p2pbar_dmabuf *d = dmabuf->priv;

	dma_resv_assert_held(dmabuf->resv);
	if (d->revoked)
		return -ENODEV;
	iosys_map_set_vaddr_iomem(map, (void __iomem __force *)p2pbar_mem_vaddr(d->mem));
	d->maps++;
	return 0;
#else
	return -EOPNOTSUPP;
#endif
}

static void p2pbar_dmabuf_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	dma_resv_assert_held(dmabuf->resv);
	p2pbar_dmabuf_put_map(dmabuf->priv);
}

/*
 * DMA_BUF_IOCTL_SYNC and dma_buf_begin/end_cpu_access(): p2pmem is mapped
 * uncached and devices write it directly, so there is no cache to flush or
 * invalidate; a revoked buffer says so.
 */
static int p2pbar_dmabuf_cpu_access(struct dma_buf *dmabuf, enum dma_data_direction dir)
{
	struct p2pbar_dmabuf *d = dmabuf->priv;

	return READ_ONCE(d->revoked) ? -ENODEV : 0;
}

static struct p2pbar_mem *p2pbar_dmabuf_take_mem(struct p2pbar_dmabuf *d)
{
	struct p2pbar_mem *mem;

	mutex_lock(&d->lock);
	mem = d->mem;
	d->mem = NULL;
	mutex_unlock(&d->lock);
	return mem;
}

/*
 * The importers let go after the revocation gave up: lift the quarantine,
 * but only once nothing maps the memory and every fence (their DMA) has
 * signalled: an unmap alone does not mean the device stopped.
 */
static void p2pbar_dmabuf_free_work(struct work_struct *work)
{
	struct p2pbar_dmabuf *d = container_of(to_delayed_work(work), struct p2pbar_dmabuf,
					       free_work);
	struct dma_buf *dmabuf = d->dmabuf;
	struct p2pbar_mem *mem;
	bool idle;

	dma_resv_lock(dmabuf->resv, NULL);
	idle = !d->maps && dma_resv_test_signaled(dmabuf->resv, DMA_RESV_USAGE_BOOKKEEP);
	dma_resv_unlock(dmabuf->resv);
	if (!idle) {
		/* an unmap re-queues it at once; fences are looked at again */
		queue_delayed_work(p2pbar_wq, &d->free_work, HZ / 10);
		return;
	}
	mem = p2pbar_dmabuf_take_mem(d);
	if (mem) {
		pci_info(d->pdev, "dma-buf importers unmapped after the revocation; memory freed\n");
		p2pbar_free(mem);
	}
}

/*
 * Free the memory if nobody else did, then wait until the revoke callback,
 * which uses d and the dma-buf, cannot be running. Only the dma-buf's
 * release and the export's error path wait: the callback waits for neither.
 */
static void p2pbar_dmabuf_free_mem(struct p2pbar_dmabuf *d)
{
	struct p2pbar_mem *mem = p2pbar_dmabuf_take_mem(d);

	/* whoever took it before frees it at once: release follows */
	if (mem)
		p2pbar_free(mem);
	wait_for_completion(&d->released);
}

static void p2pbar_dmabuf_release(struct dma_buf *dmabuf)
{
	struct p2pbar_dmabuf *d = dmabuf->priv;

	/* the last reference: no importer is attached any more */
	p2pbar_dmabuf_free_mem(d);
	/* the callback may have queued it before it returned */
	cancel_delayed_work_sync(&d->free_work);
	pci_dev_put(d->pdev);
	kfree(d);
}

/*
 * The operations of every dma-buf p2pbar exports (all come from
 * dmabuf_export()), with p2pbar's in-kernel calls on them (struct
 * p2pbar_dmabuf_ops in <linux/p2pbar.h>). An importer finds them through
 * the dma-buf (p2pbar_dmabuf_ops_of()), not by symbol; the symbol is
 * exported for the comparison a built-in p2pbar is known by.
 */
const struct p2pbar_dmabuf_ops p2pbar_dmabuf_ops = {
	.ops = {
		.attach = p2pbar_dmabuf_attach,
		.pin = p2pbar_dmabuf_pin,
		.unpin = p2pbar_dmabuf_unpin,
		.map_dma_buf = p2pbar_dmabuf_map,
		.unmap_dma_buf = p2pbar_dmabuf_unmap,
		.mmap = p2pbar_dmabuf_mmap,
		.vmap = p2pbar_dmabuf_vmap,
		.vunmap = p2pbar_dmabuf_vunmap,
		.begin_cpu_access = p2pbar_dmabuf_cpu_access,
		.end_cpu_access = p2pbar_dmabuf_cpu_access,
		.release = p2pbar_dmabuf_release,
	},
	.pages = p2pbar_dmabuf_pages,
	.pages_put = p2pbar_dmabuf_pages_put,
};
EXPORT_SYMBOL_GPL(p2pbar_dmabuf_ops);

/*
 * The provider is going away (p2pbar_user_ops.revoke, from a work item of
 * its own): stop new mappings, tell the importers, wait for the DMA they
 * queued (their fences, as vfio does) and for their unmaps, then free. An
 * importer that does not comply within P2PBAR_DMABUF_REVOKE_TIMEOUT keeps
 * the memory: it is not freed here, so the provider quarantines it, and the
 * last unmap frees it later (p2pbar_dmabuf_free_work()).
 */
static void p2pbar_dmabuf_revoke(struct p2pbar_mem *mem, void *priv)
{
	unsigned long deadline = jiffies + P2PBAR_DMABUF_REVOKE_TIMEOUT;
	struct p2pbar_dmabuf *d = priv;
	struct dma_buf_attachment *attach;
	struct dma_buf *dmabuf;
	bool busy, abandoned = false;
	long left;

	/*
	 * A reference on the dma-buf's file: its last fput() may be under
	 * way, which puts the inode (the mapping zapped below) before the
	 * dma-buf's release waits for this callback. Then nothing maps or
	 * imports it any more, and the release frees the memory.
	 */
	mutex_lock(&d->lock);
	dmabuf = d->dmabuf;
	if (dmabuf && !p2p_get_file_active(&dmabuf->file))
		dmabuf = NULL;
	mutex_unlock(&d->lock);
	/* the export failed (its error path frees mem), or the release runs */
	if (!dmabuf)
		return;

	dma_resv_lock(dmabuf->resv, NULL);
	WRITE_ONCE(d->revoked, true);
	busy = d->maps;
	p2p_dma_buf_invalidate(dmabuf);
	dma_resv_unlock(dmabuf->resv);
	/*
	 * CPU mappings: faults insert only while the instance is LIVE, and it
	 * left LIVE before any revocation: after this zap no PTE comes back.
	 */
	unmap_mapping_range(dmabuf->file->f_mapping, 0, 0, 1);

	left = dma_resv_wait_timeout(dmabuf->resv, DMA_RESV_USAGE_BOOKKEEP, false,
				     P2PBAR_DMABUF_REVOKE_TIMEOUT);
	if (left <= 0)
		pci_err(d->pdev, "dma-buf importers' fences not signalled within %u ms of the revocation\n",
			jiffies_to_msecs(P2PBAR_DMABUF_REVOKE_TIMEOUT));
	/* importers unmap from their invalidation or once their DMA is done */
	if (busy)
		wait_for_completion_timeout(&d->unmapped,
					    max_t(long, (long)(deadline - jiffies), 1));

	dma_resv_lock(dmabuf->resv, NULL);
	/* a mapping left, or DMA still queued (fences), is not compliance */
	if (d->maps || !dma_resv_test_signaled(dmabuf->resv, DMA_RESV_USAGE_BOOKKEEP)) {
		d->abandoned = true;
		abandoned = true;
		list_for_each_entry(attach, &dmabuf->attachments, node)
			pci_err(d->pdev, "dma-buf importer %s ignored the revocation (%u mappings, %u pins, fences %s): quarantined\n",
				dev_name(attach->dev), d->maps, d->pins,
				left <= 0 ? "pending" : "done");
	}
	dma_resv_unlock(dmabuf->resv);
	if (abandoned) {
		/* an unmap, or the poll, frees it once it is idle */
		queue_delayed_work(p2pbar_wq, &d->free_work, HZ / 10);
	} else {
		mem = p2pbar_dmabuf_take_mem(d);
		if (mem)
			p2pbar_free(mem);
	}
	/* from a kthread a last reference is released later, by another worker */
	fput(dmabuf->file);
}

static void p2pbar_dmabuf_user_release(void *priv)
{
	struct p2pbar_dmabuf *d = priv;

	complete(&d->released);
}

static const struct p2pbar_user_ops p2pbar_dmabuf_user_ops = {
	.revoke = p2pbar_dmabuf_revoke,
	.release = p2pbar_dmabuf_user_release,
};

/* p2pbar_dmabuf_export(), the dma-buf's file opened with @mode (O_RDWR, O_RDONLY) */
static struct dma_buf *dmabuf_export(struct p2pbar *pb, size_t size, pci_bus_addr_t *bus_addr,
				     int mode)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp);
	struct p2pbar_dmabuf *d;
	struct p2pbar_mem *mem;
	struct dma_buf *dmabuf;

	/* importers know this module's dma-bufs by its name (p2pbar_dmabuf_ops_of()) */
	BUILD_BUG_ON(__builtin_strcmp(KBUILD_MODNAME, P2PBAR_MODNAME));
	if (!size || !PAGE_ALIGNED(size))
		return ERR_PTR(-EINVAL);
	d = kzalloc_obj(*d, GFP_KERNEL);
	if (!d)
		return ERR_PTR(-ENOMEM);
	mutex_init(&d->lock);
	init_completion(&d->unmapped);
	init_completion(&d->released);
	INIT_DELAYED_WORK(&d->free_work, p2pbar_dmabuf_free_work);
	d->size = size;
	d->pdev = pci_dev_get(p2pbar_pci_dev(pb));

	/* a revoke from here on waits for d->lock, then sees d->dmabuf */
	mutex_lock(&d->lock);
	mem = p2pbar_alloc(pb, size, &p2pbar_dmabuf_user_ops, d);
	if (IS_ERR(mem)) {
		mutex_unlock(&d->lock);
		dmabuf = ERR_CAST(mem);
		goto err_free;
	}
	d->mem = mem;
	exp.ops = &p2pbar_dmabuf_ops.ops;
	exp.size = size;
	exp.flags = mode;
	exp.priv = d;
	dmabuf = dma_buf_export(&exp);
	if (IS_ERR(dmabuf)) {
		mutex_unlock(&d->lock);
		/* waits out a revoke callback that found no dma-buf */
		p2pbar_dmabuf_free_mem(d);
		goto err_free;
	}
	d->dmabuf = dmabuf;
	mutex_unlock(&d->lock);
	trace_p2pbar_export(d->pdev, p2pbar_mem_bus_addr(mem), size, P2PBAR_TRACE_DMABUF);
	/* from here dma_buf_put() frees d and the memory */
	if (bus_addr)
		*bus_addr = p2pbar_mem_bus_addr(mem);
	return dmabuf;

err_free:
	pci_dev_put(d->pdev);
	kfree(d);
	return dmabuf;
}

/**
 * p2pbar_dmabuf_pages - the p2pmem pages behind a range of a p2pbar
 *	dma-buf, held for an in-kernel importer's I/O
 * @dmabuf: a dma-buf the caller holds a reference to, of any exporter
 * @offset: the range's first byte
 * @len: its bytes, not 0
 * @provider: out: the provider's PCI function (for the P2PDMA verdict),
 *	      valid while the pages are held
 *
 * For an importer that hands the memory to the block layer as a bvec of
 * P2PDMA pages (p2pnvme's file command, Documentation/files.rst), which a
 * dma-buf mapping cannot give: the allocation is one physically contiguous
 * run of ZONE_DEVICE pages, whose struct pages are contiguous too. The
 * hold counts as a mapping: a revocation (the provider's removal) waits
 * for p2pbar_dmabuf_pages_put() as for an unmap, bounded, and quarantines
 * the memory past the bound, so the pages are never given back while the
 * I/O may still reach them. Process context; takes the reservation lock.
 * An importer that must not depend on this module calls it as
 * p2pbar_dmabuf_ops_of(@dmabuf)->pages.
 *
 * Return: the page that holds byte @offset (at offset_in_page(@offset)),
 * or ERR_PTR(): -EOPNOTSUPP (not a p2pbar dma-buf), -EINVAL (the range
 * is not inside it), -ENODEV (revoked).
 */
struct page *p2pbar_dmabuf_pages(struct dma_buf *dmabuf, u64 offset, u64 len,
				 struct pci_dev **provider)
{
	struct p2pbar_dmabuf *d = dmabuf->priv;
	struct page *page;

	if (dmabuf->ops != &p2pbar_dmabuf_ops.ops)
		return ERR_PTR(-EOPNOTSUPP);
	if (!len || offset >= d->size || len > d->size - offset)
		return ERR_PTR(-EINVAL);
	dma_resv_lock(dmabuf->resv, NULL);
	if (d->revoked) {
		dma_resv_unlock(dmabuf->resv);
		return ERR_PTR(-ENODEV);
	}
	/* d->mem stays until a revoke, which needs the resv lock we hold */
	page = virt_to_page(p2pbar_mem_vaddr(d->mem) + offset);
	d->maps++;
	dma_resv_unlock(dmabuf->resv);
	*provider = d->pdev;
	return page;
}
EXPORT_SYMBOL_GPL(p2pbar_dmabuf_pages);

/**
 * p2pbar_dmabuf_pages_put - the I/O on the pages p2pbar_dmabuf_pages()
 *	gave is over
 * @dmabuf: the same dma-buf, still referenced by the caller
 *
 * Process context. A revocation waiting for the hold goes on.
 */
void p2pbar_dmabuf_pages_put(struct dma_buf *dmabuf)
{
	dma_resv_lock(dmabuf->resv, NULL);
	p2pbar_dmabuf_put_map(dmabuf->priv);
	dma_resv_unlock(dmabuf->resv);
}
EXPORT_SYMBOL_GPL(p2pbar_dmabuf_pages_put);

/**
 * p2pbar_dmabuf_export - allocate zeroed p2pmem and export it as a dma-buf
 * @pb: provider the caller holds a reference to
 * @size: bytes, a non-zero multiple of the page size
 * @bus_addr: out (may be NULL): PCI bus address of the memory
 *
 * The dma-buf owns the memory: it is freed with the last reference. Only
 * peer2peer, revocable importers may attach (see Documentation/dmabuf.rst);
 * when the provider goes away the dma-buf is revoked.
 *
 * Return: the dma-buf, or ERR_PTR(): -EINVAL (bad size), -ENODEV (provider
 * removed), -ENOSPC (no room), -ENOMEM.
 */
struct dma_buf *p2pbar_dmabuf_export(struct p2pbar *pb, size_t size, pci_bus_addr_t *bus_addr)
{
	return dmabuf_export(pb, size, bus_addr, O_RDWR);
}
EXPORT_SYMBOL_GPL(p2pbar_dmabuf_export);

/**
 * p2pbar_ioc_export - P2PBAR_IOC_EXPORT
 * @pb: the provider of the open file
 * @uarg: struct p2pbar_export
 *
 * Return: 0 with the dma-buf's fd in the argument, or -EINVAL (bad
 * argument), -ENODEV (provider removed), -ENOSPC (no room), -ENOMEM,
 * -EMFILE, -EFAULT; on error no fd was installed and nothing allocated.
 */
long p2pbar_ioc_export(struct p2pbar *pb, unsigned long uarg)
{
	struct p2pbar_export arg;
	struct dma_buf *dmabuf;
	pci_bus_addr_t bus;
	int fd, ret = p2p_ioctl_copy_in(&arg, sizeof(arg),
					offsetofend(struct p2pbar_export, bus_addr), uarg);

	if (ret)
		return ret;
	if ((arg.flags & ~(P2PBAR_EXPORT_F_CLOEXEC | P2PBAR_EXPORT_F_RDONLY)) || arg.reserved ||
	    arg.fd)
		return -EINVAL;
	fd = get_unused_fd_flags(arg.flags & P2PBAR_EXPORT_F_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0)
		return fd;
	dmabuf = dmabuf_export(pb, arg.size, &bus,
			       arg.flags & P2PBAR_EXPORT_F_RDONLY ? O_RDONLY : O_RDWR);
	if (IS_ERR(dmabuf)) {
		put_unused_fd(fd);
		return PTR_ERR(dmabuf);
	}
	arg.fd = fd;
	arg.bus_addr = bus;
	if (p2p_ioctl_copy_out(uarg, &arg, sizeof(arg))) {
		put_unused_fd(fd);
		dma_buf_put(dmabuf);
		return -EFAULT;
	}
	fd_install(fd, dmabuf->file);
	return 0;
}
