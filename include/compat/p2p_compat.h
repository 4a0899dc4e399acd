/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One place for kernel API differences, written to the newest API (7.2).
 * The HAVE_* macros come from scripts/conftest.sh compile probes; no
 * LINUX_VERSION_CODE tests anywhere in the suite.
 */
#ifndef P2P_COMPAT_H
#define P2P_COMPAT_H

#include <compat_autoconf.h>
#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/memremap.h>

/* kzalloc_obj() arrived in 7.x; before it, the same is kzalloc(sizeof(*ptr), gfp). */
#include <linux/slab.h>
#ifndef kzalloc_obj
#define kzalloc_obj(P, GFP)	kzalloc(sizeof(P), GFP)
#endif

/* class_create() lost its owner argument in 6.4. */
#ifdef HAVE_CLASS_CREATE_NAME_ONLY
#define p2p_class_create(name)	class_create(name)
#else
#define p2p_class_create(name)	class_create(THIS_MODULE, name)
#endif

/* vma->vm_flags became read-only in 6.3. */
#ifndef HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, unsigned long flags)
{
	vma->vm_flags |= flags;
}
#endif

/* page->pgmap is read through page_pgmap() since 6.14. */
#ifndef HAVE_PAGE_PGMAP
static inline struct dev_pagemap *page_pgmap(const struct page *page)
{
	return page->pgmap;
}
#endif

/* get_dev_pagemap() took a pgmap to reuse as its second argument before 7.x. */
#ifdef HAVE_GET_DEV_PAGEMAP_PFN
#define p2p_get_dev_pagemap(pfn)	get_dev_pagemap(pfn)
#else
#define p2p_get_dev_pagemap(pfn)	get_dev_pagemap(pfn, NULL)
#endif

/*
 * P2P pages carry a page_free()/folio_free() callback and may be mapped to
 * userspace (and pinned by GUP with FOLL_PCI_P2PDMA) since 6.2. Before that
 * the provider can hand out memory to in-kernel users only.
 */
#ifdef HAVE_FOLL_PCI_P2PDMA
#define P2P_HAVE_USER_PAGES	1
#else
#define P2P_HAVE_USER_PAGES	0
#endif

/* pcim_iomap_region() replaced pcim_iomap_regions() + pcim_iomap_table() in 6.11. */
#ifndef HAVE_PCIM_IOMAP_REGION
#include <linux/pci.h>
static inline void __iomem *pcim_iomap_region(struct pci_dev *pdev, int bar, const char *name)
{
	int ret = pcim_iomap_regions(pdev, BIT(bar), name);

	return ret ? IOMEM_ERR_PTR(ret) : pcim_iomap_table(pdev)[bar];
}
#endif

/*
 * pcim_request_region() is 6.11+. Before, pci_request_region() of a device
 * enabled with pcim_enable_device() is released by the managed enable.
 */
#ifndef HAVE_PCIM_REQUEST_REGION
#include <linux/pci.h>
#define pcim_request_region(pdev, bar, name)	pci_request_region(pdev, bar, name)
#endif

/**
 * p2p_dma_map_sgtable - map host or P2PDMA pages for DMA by @dev
 * @dev: the DMA master (a client's PCI function)
 * @sgt: pages; on success its DMA addresses are filled in
 * @dir: direction
 * @attrs: DMA_ATTR_*; DMA_ATTR_SKIP_CPU_SYNC for memory that is only ever
 *	   p2pmem (MMIO: there is no CPU cache to sync)
 *
 * The one mapping call of the suite. Since 6.0, dma_map_sgtable() knows
 * P2PDMA pages (pci_p2pdma_map_sg() was the call before; the suite builds
 * for 6.1 and later): PCI bus addresses when both ends sit under one
 * switch, IOMMU or CPU physical addresses through an allowed host bridge.
 * 7.x keeps that path for memory with struct pages (its provider/state API
 * serves exporters of memory without them, such as VFIO's dma-buf).
 *
 * Return: 0, -EREMOTEIO when @dev cannot reach the pages peer to peer,
 * -EINVAL or -ENOMEM.
 */
static inline int p2p_dma_map_sgtable(struct device *dev, struct sg_table *sgt,
				      enum dma_data_direction dir, unsigned long attrs)
{
	return dma_map_sgtable(dev, sgt, dir, attrs);
}

/*
 * dma-buf: the importer callback that says "stop using your mapping" was
 * move_notify, and dma_buf_move_notify() its trigger; 7.x renamed both to
 * invalidate_mappings and added dma_buf_attach_revocable().
 * P2P_DMA_BUF_PIN_REVOCABLE: can the exporter tell that an importer which
 * pins will give its mapping up when told? 7.x: every importer that
 * attaches is revocable. Before, move_notify was mandatory for every
 * dynamic importer and meant "revoke" only to those written for it (the
 * RDMA core's plain pinned import fills it with a stub that only warns):
 * nothing tells the two apart.
 */
#ifdef HAVE_DMA_BUF_INVALIDATE_MAPPINGS
#define P2P_DMA_BUF_PIN_REVOCABLE		1
#define P2P_DMA_BUF_CAN_REVOKE			1
#define P2P_DMA_BUF_INVALIDATE_OP		invalidate_mappings
#define p2p_dma_buf_invalidate(dmabuf)		dma_buf_invalidate_mappings(dmabuf)
#define p2p_dma_buf_attach_revocable(attach)	dma_buf_attach_revocable(attach)
#else
#define P2P_DMA_BUF_PIN_REVOCABLE		0
/* without CONFIG_DMABUF_MOVE_NOTIFY the core pins every dynamic mapping */
#define P2P_DMA_BUF_CAN_REVOKE			IS_ENABLED(CONFIG_DMABUF_MOVE_NOTIFY)
#define P2P_DMA_BUF_INVALIDATE_OP		move_notify
#define p2p_dma_buf_invalidate(dmabuf)		dma_buf_move_notify(dmabuf)
static inline bool p2p_dma_buf_attach_revocable(struct dma_buf_attachment *attach)
{
	return attach->importer_ops && attach->importer_ops->move_notify;
}
#endif

/*
 * MODULE_IMPORT_NS() takes a bare token before 6.13 and a string after; the
 * module info it emits is the same string on every kernel.
 */
#define P2P_IMPORT_NS(ns)	MODULE_INFO(import_ns, ns)

/*
 * A shrinker, registered: allocated by the core from 6.7 (shrinker_alloc(),
 * its private_data for the owner), embedded and registered before
 * (register_shrinker(), which takes a name from 6.0). NULL on failure.
 */
#include <linux/shrinker.h>
#ifdef HAVE_SHRINKER_ALLOC
static inline struct shrinker *
p2p_shrinker_create(const char *name, void *priv,
		    unsigned long (*count)(struct shrinker *, struct shrink_control *),
		    unsigned long (*scan)(struct shrinker *, struct shrink_control *))
{
	struct shrinker *s = shrinker_alloc(0, "%s", name);

	if (!s)
		return NULL;
	s->count_objects = count;
	s->scan_objects = scan;
	s->private_data = priv;
	shrinker_register(s);
	return s;
}

#define p2p_shrinker_priv(s)		((s)->private_data)
#define p2p_shrinker_destroy(s)		shrinker_free(s)
#else
struct p2p_shrinker {
	struct shrinker base;
	void *priv;
};

static inline struct shrinker *
p2p_shrinker_create(const char *name, void *priv,
		    unsigned long (*count)(struct shrinker *, struct shrink_control *),
		    unsigned long (*scan)(struct shrinker *, struct shrink_control *))
{
	struct p2p_shrinker *p = kzalloc(sizeof(*p), GFP_KERNEL);

	if (!p)
		return NULL;
	p->base.count_objects = count;
	p->base.scan_objects = scan;
	p->base.seeks = DEFAULT_SEEKS;
	p->priv = priv;
	if (register_shrinker(&p->base, "%s", name)) {
		kfree(p);
		return NULL;
	}
	return &p->base;
}

static inline void *p2p_shrinker_priv(struct shrinker *sh)
{
	return container_of(sh, struct p2p_shrinker, base)->priv;
}

static inline void p2p_shrinker_destroy(struct shrinker *sh)
{
	unregister_shrinker(sh);
	kfree(container_of(sh, struct p2p_shrinker, base));
}
#endif

/*
 * A reference on a file whose struct is known to stay allocated (its
 * release waits for the caller) but whose last fput() may be under way:
 * the file, or NULL.
 */
#ifdef HAVE_GET_FILE_ACTIVE
#define p2p_get_file_active(f)	get_file_active(f)
#else
static inline struct file *p2p_get_file_active(struct file **f)
{
	return atomic_long_inc_not_zero(&(*f)->f_count) ? *f : NULL;
}
#endif

/*
 * io_uring passthrough: compiled in where the kernel has io_uring and the
 * command interface of 6.6+; the reply is a 32-byte CQE's res and res2.
 */
#if IS_ENABLED(CONFIG_IO_URING) && \
	(defined(HAVE_IO_URING_CMD_DONE4) || defined(HAVE_IO_URING_CMD_DONE32))
#define P2P_HAVE_URING_CMD	1
#include <linux/io_uring/cmd.h>
static inline void p2p_uring_cmd_done(struct io_uring_cmd *ioucmd, s32 ret, u64 res2,
				      unsigned int issue_flags)
{
#ifdef HAVE_IO_URING_CMD_DONE32
	io_uring_cmd_done32(ioucmd, ret, res2, issue_flags);
#else
	io_uring_cmd_done(ioucmd, ret, res2, issue_flags);
#endif
}

/*
 * A task-work callback (io_uring_cmd_do_in_task_lazy()): P2P_URING_TW(name)
 * defines it, P2P_URING_TW_CMD its command, P2P_URING_TW_FLAGS the issue
 * flags to answer with; 7.x passes a struct io_tw_req.
 */
#ifdef HAVE_IO_URING_CMD_FROM_TW
#define P2P_URING_TW(name)	void name(struct io_tw_req tw_req, io_tw_token_t tw)
#define P2P_URING_TW_CMD	io_uring_cmd_from_tw(tw_req)
#define P2P_URING_TW_FLAGS	IO_URING_CMD_TASK_WORK_ISSUE_FLAGS
#else
#define P2P_URING_TW(name)	void name(struct io_uring_cmd *tw_cmd, unsigned int tw_flags)
#define P2P_URING_TW_CMD	tw_cmd
#define P2P_URING_TW_FLAGS	tw_flags
#endif

/* The ring (its context) a command came from, only ever compared. */
#ifdef HAVE_IO_URING_CMD_CTX_HANDLE
#define p2p_uring_cmd_ring(ioucmd)	io_uring_cmd_ctx_handle(ioucmd)
#else
#define p2p_uring_cmd_ring(ioucmd)	((void *)cmd_to_io_kiocb(ioucmd)->ctx)
#endif

/*
 * Whether a command answered -EAGAIN is issued again from a copy of its
 * SQE. 7.x copies it when the request goes async (and marks the re-issue
 * IORING_URING_CMD_REISSUE); 6.6 .. 6.14 (6.12.117 too) copy it aside but
 * leave the command pointing into the SQ ring, whose slot userspace may
 * have reused by the time io_uring's worker issues it again.
 */
#ifdef IORING_URING_CMD_REISSUE
#define P2P_URING_REISSUE_SAFE	1
#define p2p_uring_cmd_reissued(ioucmd)	(!!((ioucmd)->flags & IORING_URING_CMD_REISSUE))
#else
#define P2P_URING_REISSUE_SAFE	0
#define p2p_uring_cmd_reissued(ioucmd)	((void)(ioucmd), false)
#endif

/*
 * The pages of io_uring's registered buffer a command names
 * (IORING_URING_CMD_FIXED); 7.x also takes the issue flags.
 */
#ifdef HAVE_IO_URING_CMD_IMPORT_FIXED_FLAGS
#define p2p_uring_cmd_import_fixed(ubuf, len, rw, iter, ioucmd, issue_flags) \
	io_uring_cmd_import_fixed(ubuf, len, rw, iter, ioucmd, issue_flags)
#else
static inline int p2p_uring_cmd_import_fixed(u64 ubuf, unsigned long len, int rw,
					     struct iov_iter *iter, struct io_uring_cmd *ioucmd,
					     unsigned int issue_flags)
{
	return io_uring_cmd_import_fixed(ubuf, len, rw, iter, ioucmd);
}
#endif

#ifdef HAVE_IO_URING_SQE128_CMD
#define p2p_uring_cmd_payload(ioucmd, type)	io_uring_sqe128_cmd((ioucmd)->sqe, type)
#else
#define p2p_uring_cmd_payload(ioucmd, type)	((const type *)io_uring_sqe_cmd((ioucmd)->sqe))
#endif
#else
#define P2P_HAVE_URING_CMD	0
#endif

#endif /* P2P_COMPAT_H */
