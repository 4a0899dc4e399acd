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
#include <linux/dma-direct.h>
#include <linux/dma-fence.h>
#include <linux/dma-resv.h>
#include <linux/iommu.h>
#include <linux/memory_hotplug.h>
#include <linux/memremap.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <kunit/visibility.h>
#include <p2p_compat.h>

#include "reg.h"
#include "dptr.h"

/**
 * p2pnvme_dmabuf_note - say once, at load, what a kernel without
 *	CONFIG_DMABUF_MOVE_NOTIFY does to p2pnvme's dma-buf imports
 *
 * Before 7.x such a kernel's dma-buf core pins a dynamic exporter's buffer
 * for as long as an importer has it mapped (dma_buf_map_attachment() calls
 * its pin): the exporter picks where it stays, and 6.12's amdgpu and xe pin
 * in host memory. A registered dma-buf is mapped for its whole life, so
 * it stays pinned there until it is unregistered; P2P required refuses
 * it. Exporters that must be able to take their memory back (p2pbar)
 * refuse such importers. Nothing is said where the option is on, or on
 * 7.x, which has no such option.
 */
void p2pnvme_dmabuf_note(void)
{
	if (!P2P_DMA_BUF_CAN_REVOKE)
		pr_notice("this kernel has no CONFIG_DMABUF_MOVE_NOTIFY: the dma-buf core pins a dynamic exporter's buffer while p2pnvme maps it, so a registered dma-buf stays pinned where its exporter put it until unregistered (amdgpu, xe: host memory, dmabuf-host, refused where P2P is required), and p2pbar refuses p2pnvme's imports\n");
}

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
		int ret = p2pnvme_dmabuf_errno(PTR_ERR(r->attach));

		r->attach = NULL;
		/* not the refusal of a mapping: p2pnvme_dmabuf_map() */
		if (ret == -EOPNOTSUPP)
			dev_warn_ratelimited(&c->pdev->dev,
					     "dma-buf attach refused by its exporter (-EOPNOTSUPP): it takes no dynamic peer2peer importer, or not this controller (its own topology check)\n");
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

#ifndef HAVE_DMA_FENCE_DRIVER_NAME
/*
 * Before 7.x a fence calls its ops (names, release) for as long as it
 * lives, and a dma-buf's reservation object decides how long that is: each
 * fence holds the module. (7.x detaches a signalled fence from its ops.)
 * The memory goes RCU-safe, as dma_fence_free() does by default.
 */
static void fence_release(struct dma_fence *f)
{
	dma_fence_free(f);
	module_put(THIS_MODULE);
}
#endif

static const struct dma_fence_ops p2pnvme_fence_ops = {
	.get_driver_name = fence_driver_name,
	.get_timeline_name = fence_timeline_name,
#ifndef HAVE_DMA_FENCE_DRIVER_NAME
	.release = fence_release,
#endif
};

/* Is @addr in a memory BAR of @pdev: a CPU physical address, or a bus address? */
static bool in_bar(struct pci_dev *pdev, u64 addr, bool bus)
{
	int bar;

	for (bar = 0; bar < PCI_STD_NUM_BARS; bar++) {
		u64 len = pci_resource_len(pdev, bar);
		u64 start = bus ? pci_bus_address(pdev, bar) : pci_resource_start(pdev, bar);

		if (len && (pci_resource_flags(pdev, bar) & IORESOURCE_MEM) && addr >= start &&
		    addr - start < len)
			return true;
	}
	return false;
}

/* the function whose memory BAR holds @addr (a reference), or NULL */
static struct pci_dev *bar_owner(u64 addr, bool bus)
{
	struct pci_dev *pdev = NULL;

	for_each_pci_dev(pdev)
		if (in_bar(pdev, addr, bus))
			return pdev;
	return NULL;
}

/*
 * The kernel's P2PDMA verdict between @owner (whose BAR a dma-buf mapping
 * is in) and the controller: pci_p2pdma_distance(), the same call with the
 * same meaning on 6.1, 6.12 and 7.2 (the rules the DMA layer applies to
 * P2PDMA pages: a common upstream bridge without ACS redirect, or an
 * allowed host bridge). Exporters of page-less device memory (NVIDIA's)
 * map for any importer, and the DMA layer never sees their memory: the
 * importer has to ask. Kept per owner in @c->p2p_verdicts (the kernel
 * says why, once, on the controller's log when it refuses); a verdict
 * computed while a PCI function came or went is not kept.
 */
static bool dmabuf_reachable(struct p2pnvme *c, struct pci_dev *owner)
{
	unsigned long key = (unsigned long)pci_domain_nr(owner->bus) << 16 | pci_dev_id(owner);
	void *v = xa_load(&c->p2p_verdicts, key);
	int gen = atomic_read(&c->p2p_gen);
	bool ok;

	if (v)
		return xa_to_value(v);
	ok = pci_p2pdma_distance(owner, &c->pdev->dev, true) >= 0;
	/* no room to keep it: asked again next time */
	if (xa_err(xa_store(&c->p2p_verdicts, key, xa_mk_value(ok), GFP_KERNEL)))
		return ok;
	smp_mb();	/* stored before the generation is read again */
	if (atomic_read(&c->p2p_gen) != gen)
		xa_erase(&c->p2p_verdicts, key);
	return ok;
}

/**
 * p2pnvme_dmabuf_forget - a PCI function was added or removed: the P2PDMA
 *	verdicts kept for dma-buf mappings may not hold any more
 * @c: the controller
 */
void p2pnvme_dmabuf_forget(struct p2pnvme *c)
{
	atomic_inc(&c->p2p_gen);
	smp_mb__after_atomic();	/* pairs with dmabuf_reachable() */
	xa_destroy(&c->p2p_verdicts);
}

/**
 * p2pnvme_dmabuf_unreachable - say why a dma-buf mapping is refused: its
 *	memory is in the BAR of a function the kernel's P2PDMA verdict keeps
 *	from the controller
 * @c: the controller
 * @owner: that function's PCI name
 *
 * A warning, rate limited: the application sees -EREMOTEIO for each
 * transfer, the refused counter counts them.
 */
void p2pnvme_dmabuf_unreachable(struct p2pnvme *c, const char *owner)
{
	dev_warn_ratelimited(&c->pdev->dev,
			     "dma-buf in the BAR of %s refused (-EREMOTEIO): the kernel's P2PDMA verdict refuses peer-to-peer DMA between %s and %s (pci_p2pdma_distance() < 0)\n",
			     owner, owner, pci_name(c->pdev));
}

/*
 * Is the memory at CPU physical address @phys device memory the CPU reaches
 * coherently: system RAM on a NUMA node without CPUs (GH200's and GB200's
 * HBM, which NVIDIA's driver onlines as such nodes; CXL memory expanders and
 * persistent memory onlined as RAM are such nodes too), or a
 * MEMORY_DEVICE_COHERENT page (amdgpu's VRAM where the CPU's link to it is
 * coherent)? Looked up by page frame: an importer may not read sg_page()
 * (the dma-buf core hides it from importers under CONFIG_DMABUF_DEBUG), and
 * exporters such as NVIDIA's (nv_dma_buf_map_pages()) map these pages with
 * dma_map_sg_attrs(), so that only the DMA address says where they are.
 * Other ZONE_DEVICE pages (P2PDMA's) are not coherent device memory.
 */
static bool coherent_mem(phys_addr_t phys)
{
	unsigned long pfn = PHYS_PFN(phys);
	struct dev_pagemap *pgmap;
	struct page *page;
	bool coherent;

	page = pfn_to_online_page(pfn);
	if (page)
		return !node_state(page_to_nid(page), N_CPU);
	/* ZONE_DEVICE memory is never online: its pgmap keeps the page while we look */
	pgmap = p2p_get_dev_pagemap(pfn);
	if (!pgmap)
		return false;
	coherent = is_device_coherent_page(pfn_to_page(pfn));
	put_dev_pagemap(pgmap);
	return coherent;
}

/**
 * p2pnvme_dmabuf_in_host - is a dma-buf mapping for the controller host
 *	memory rather than a PCI device's memory?
 * @c: the controller
 * @sgt: the exporter's mapping
 * @owner: out: P2PNVME_OWNER_LEN bytes, the owning function's PCI name
 * @coherent: out: of what is not in that function's BAR, some is device
 *	      memory the CPU reaches coherently (false for a BAR)
 * @orphan: out: that function has no driver bound
 * @unreachable: out: the kernel's P2PDMA verdict refuses P2P between that
 *		 function and the controller (false for host memory)
 *
 * An exporter says nothing about where its memory is, and every layer
 * reports success either way (amdgpu pins a buffer in GTT for an importer
 * that is not peer2peer, and the controller then writes host memory). So
 * each DMA segment's first address is looked up: an IOVA through the
 * controller's IOMMU domain to the CPU physical address it translates to,
 * else (no translation, or a bus address that bypasses it, as P2PDMA's
 * under a switch) as a PCI bus address and as a CPU physical address,
 * against the memory BARs of every PCI function. All in one function's
 * BARs is device memory; anything else counts as host memory.
 *
 * Of host memory, a segment whose first page is device memory the CPU
 * reaches coherently (coherent_mem(): a NUMA node without CPUs, or
 * MEMORY_DEVICE_COHERENT) makes @coherent: the controller's DMA goes
 * through the CPU's memory system to it (GH200's C2C link), not peer to
 * peer, which is what P2P required refuses, as it refuses host memory.
 *
 * The function is named in @owner ("" for host memory). @orphan says
 * whether it has no driver bound: memory of a device whose driver let go
 * of it (unbound), which no transfer may use any more. @unreachable is
 * the kernel's P2PDMA verdict for that function and the controller
 * (dmabuf_reachable()): the exporter may have mapped its memory without
 * asking (NVIDIA's does, by default), and a BAR the kernel refuses is one
 * the fabric may not carry (completion errors, lost posted writes) however
 * the mapping was made. Host memory is never checked.
 *
 * Return: true for host memory (CPU-coherent device memory included).
 */
bool p2pnvme_dmabuf_in_host(struct p2pnvme *c, struct sg_table *sgt, char *owner,
			    bool *coherent, bool *orphan, bool *unreachable)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(&c->pdev->dev);
	struct pci_dev *pdev = NULL;
	struct scatterlist *sg;
	unsigned int i;
	bool host = false;

	*coherent = false;
	for_each_sgtable_dma_sg(sgt, sg, i) {
		dma_addr_t a = sg_dma_address(sg);
		phys_addr_t phys = dom ? iommu_iova_to_phys(dom, a) : 0;

		if (!i)
			pdev = phys ? bar_owner(phys, false) :
				      bar_owner(a, true) ?: bar_owner(a, false);
		if (pdev && (phys ? in_bar(pdev, phys, false) :
				    in_bar(pdev, a, true) || in_bar(pdev, a, false)))
			continue;
		host = true;
		/* no IOMMU translation: the DMA layer's own (dma-direct) undone */
		if (!dom)
			phys = dma_to_phys(&c->pdev->dev, a);
		*coherent = phys && coherent_mem(phys);
		if (*coherent)
			break;
	}
	host = host || !pdev;
	strscpy(owner, host ? "" : pci_name(pdev), P2PNVME_OWNER_LEN);
	/* a racy look: the unbind's bus notifier is the reliable one (reg.c) */
	*orphan = !host && !READ_ONCE(pdev->dev.driver);
	*unreachable = !host && !dmabuf_reachable(c, pdev);
	dev_dbg(&c->pdev->dev, "dma-buf mapping of %u segments: %s%s%s%s\n", sgt->nents,
		*coherent ? "CPU-coherent device memory" : host ? "host memory" : "memory of ",
		owner, *orphan ? ", no driver bound" : "",
		*unreachable ? ", P2PDMA refuses it" : "");
	pci_dev_put(pdev);
	return host;
}

/**
 * p2pnvme_dmabuf_coherent_refused - say why P2P required refuses a dma-buf
 *	in CPU-coherent device memory
 * @c: the controller
 *
 * GPU memory all the same, which a user may not expect to be refused: the
 * log says which path it is and why. Rate limited: the application sees
 * -EREMOTEIO for each transfer, the refused counter counts them.
 */
void p2pnvme_dmabuf_coherent_refused(struct p2pnvme *c)
{
	dev_notice_ratelimited(&c->pdev->dev,
			       "dma-buf in CPU-coherent device memory (path dmabuf-coherent: a NUMA node without CPUs, as GH200's HBM, or MEMORY_DEVICE_COHERENT) refused (-EREMOTEIO): P2P required, and the controller reaches this memory through the CPU's memory system, not peer to peer\n");
}

/**
 * p2pnvme_dmabuf_map_error - the exporter's map failed: count it, say it
 * @c: the controller
 * @ret: what dma_buf_map_attachment() returned
 * @registered: the mapping of a registered dma-buf (registration, or the
 *		remap after a move), not a transfer's own
 *
 * Every map site goes through here, per-I/O and registered alike.
 * -EREMOTEIO is counted as refused. -EOPNOTSUPP (NVIDIA's -ENOTSUPP said
 * as such) from a map is not the refusal attach makes of an importer: the
 * exporter took the controller and cannot map the buffer for a peer where
 * it is now (xe: VRAM the CPU cannot see, a small BAR,
 * xe_ttm_vram_mgr_alloc_sgt()), which the log says, rate limited, naming
 * which mapping it was. -ERESTARTSYS and -EINTR (xe's interruptible
 * validate) are passed on.
 *
 * Return: the errno for userspace.
 */
int p2pnvme_dmabuf_map_error(struct p2pnvme *c, int ret, bool registered)
{
	ret = p2pnvme_dmabuf_errno(ret);
	if (ret == -EREMOTEIO)
		p2pnvme_stat_add(c, ST_REFUSED, 1);
	else if (ret == -EOPNOTSUPP)
		dev_warn_ratelimited(&c->pdev->dev,
				     "%s refused by its exporter (-EOPNOTSUPP) after it took the controller at attach: the buffer cannot be mapped for a peer where it is (xe: VRAM the CPU cannot see, a small BAR)\n",
				     registered ? "registered dma-buf's mapping" :
						  "dma-buf mapping");
	return ret;
}

/*
 * Map @r's dma-buf for the controller (the entry that owns the attachment
 * does, the others share it). The exporter maps: -EREMOTEIO when it finds
 * that the controller cannot reach the memory (no bounce for dma-bufs),
 * -ENODEV once revoked, -EOPNOTSUPP when it cannot map it for a peer
 * (p2pnvme_dmabuf_map_error()), -ERESTARTSYS when its map was interrupted
 * (nothing submitted: the system call starts over). Then the mapping is looked at:
 * -ENODEV when the memory is in the BAR of a function no driver is bound
 * to (a static exporter, as NVIDIA's, never revokes when its device is
 * unbound; amdgpu leaves VRAM where it is), -EREMOTEIO
 * (@r->dmabuf_unreachable, said in the log) when the kernel's P2PDMA
 * verdict refuses that function and the controller, which an exporter of
 * page-less memory may not have asked (NVIDIA's does not). Then, as the
 * importer contract wants: wait for the exporter's own fences (a move in
 * progress) and put our fence in the reservation object for the I/O to
 * come.
 */
int p2pnvme_dmabuf_map(struct p2pnvme *c, struct p2pnvme_req *r)
{
	struct dma_resv *resv = r->dmabuf->resv;
	struct sg_table *sgt;
	bool orphan;
	long left;
	int ret;

	r->dmabuf_unreachable = false;	/* of an earlier mapping, if any */
	/* allocated now: nothing allocates once our fence is published */
	r->fence = kzalloc_obj(*r->fence, GFP_KERNEL);
	if (!r->fence)
		return -ENOMEM;
	dma_resv_lock(resv, NULL);
	sgt = dma_buf_map_attachment(r->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		ret = p2pnvme_dmabuf_map_error(c, PTR_ERR(sgt), false);
		goto out_unlock;
	}
	r->dsgt = sgt;
	/* where it is, first: P2P required refuses host memory before all else */
	r->dmabuf_host = p2pnvme_dmabuf_in_host(c, sgt, r->dmabuf_owner, &r->dmabuf_coherent,
						&orphan, &r->dmabuf_unreachable);
	/* the exporter's device is unbound: its memory is not its to give */
	if (orphan) {
		ret = -ENODEV;
		goto out_unlock;
	}
	/* a BAR the controller may not reach: counted by the caller (req_map()) */
	if (r->dmabuf_unreachable) {
		p2pnvme_dmabuf_unreachable(c, r->dmabuf_owner);
		ret = -EREMOTEIO;
		goto out_unlock;
	}
	/*
	 * The exporter syncs its mapping for its own CPU accesses, never for
	 * our transfers (udmabuf maps with DMA_ATTR_SKIP_CPU_SYNC): one that
	 * needs syncs (host memory under swiotlb, as in every confidential
	 * guest; a non-coherent device) would leave the bytes in a bounce
	 * slot nobody copies. Refused, as registration refuses it.
	 */
	if (p2pnvme_dma_need_sync(&c->pdev->dev, sgt)) {
		ret = -EOPNOTSUPP;
		goto out_unlock;
	}
	/* an invalidation before this mapping is about an older one */
	WRITE_ONCE(r->invalidated, false);
	/* a signal: -ERESTARTSYS, nothing submitted yet (the call starts over) */
	left = dma_resv_wait_timeout(resv, DMA_RESV_USAGE_KERNEL, true, p2pnvme_io_timeout());
	ret = left > 0 ? 0 : left ?: -ETIMEDOUT;
out_unlock:
	dma_resv_unlock(resv);
	return ret;
}

/*
 * The reservation object a request's fence goes into: that of the dma-buf
 * it imports, or of the registered dma-buf it names (held by its fence
 * while it is published). NULL without a fence (an entry sharing another's
 * attachment), and for a registration revoked for good, whose request has
 * nothing to fence (it cannot arm: -ENODEV).
 */
static struct dma_resv *req_resv(const struct p2pnvme_req *r)
{
	if (!r->fence)
		return NULL;
	if (r->dmabuf)
		return r->dmabuf->resv;
	return r->fence->dmabuf ? r->fence->dmabuf->resv : NULL;
}

/*
 * Initialise @f, one transfer pending (its publisher's), and put it in
 * @resv (locked, a slot reserved). Its context is its own: fences of one
 * context must signal in order, and transfers end in any order.
 */
static void fence_add(struct dma_resv *resv, struct p2pnvme_fence *f)
{
	dma_resv_assert_held(resv);
	spin_lock_init(&f->lock);
	atomic_set(&f->pending, 1);
	f->error = 0;
#ifndef HAVE_DMA_FENCE_DRIVER_NAME
	__module_get(THIS_MODULE);	/* put by fence_release() */
#endif
	dma_fence_init(&f->base, &p2pnvme_fence_ops, &f->lock, dma_fence_context_alloc(1), 1);
	/* the transfers may write as well as read the buffer */
	dma_resv_add_fence(resv, &f->base, DMA_RESV_USAGE_WRITE);
}

/**
 * p2pnvme_fence_alloc - a fence, not published yet
 *
 * Return: the fence (kfree() it unless p2pnvme_fence_publish() published
 * it), or NULL.
 */
struct p2pnvme_fence *p2pnvme_fence_alloc(void)
{
	struct p2pnvme_fence *f = kzalloc_obj(*f, GFP_KERNEL);

	return f;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_fence_alloc);

/**
 * p2pnvme_fence_publish - put one fence in a dma-buf's reservation object
 * @resv: the reservation object (not locked)
 * @f: the fence, from p2pnvme_fence_alloc()
 *
 * Published, the fence covers one transfer, its publisher's, until
 * p2pnvme_fence_end(); its reference is its pending count's, which the
 * last transfer it covers puts (the reservation object takes its own).
 * Others may join it (p2pnvme_fence_join()). From
 * here on nothing the transfers wait for may allocate with reclaim or
 * take a reservation lock (the caller's signalling section).
 *
 * Return: 0, or -ENOMEM with nothing published.
 */
int p2pnvme_fence_publish(struct dma_resv *resv, struct p2pnvme_fence *f)
{
	int ret;

	dma_resv_lock(resv, NULL);
	ret = dma_resv_reserve_fences(resv, 1);
	if (!ret)
		fence_add(resv, f);
	dma_resv_unlock(resv);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_fence_publish);

/**
 * p2pnvme_fence_join - cover one more transfer with the fence a submission
 *	batch published, rather than publishing one of its own
 * @slot: the batch's (its submitter's alone: no lock)
 * @serial: the registration the transfer names
 * @out: the fence joined, which the transfer ends its share of with
 *	 p2pnvme_fence_end(); it lives until then (see below)
 *
 * The fence must be the one the batch published for the same registration
 * (so in the same reservation object), still cover a transfer that has not
 * ended (one that covers none has signalled, or is signalling, and is left
 * alone), and cover fewer than P2PNVME_FENCE_JOINS. The caller joins it
 * before its transfer is armed (p2pnvme_reg_arm()), as a publisher
 * publishes its own: the fence is in the reservation object before the
 * transfer may reach the buffer, and signals only after it ended. A
 * waiter that found it there before the join waits for the joined transfer
 * too: a batch's worth of transfers at most, each bounded by the
 * controller's timeouts.
 *
 * The transfer takes no reference of its own: the pending count holds one
 * for all the transfers it counts (the publisher's, put by the last of
 * them, p2pnvme_fence_end()), so the fence lives while any of them has
 * not ended. The slot's reference keeps it while the count is looked at;
 * a count that is not 0 means that reference is still held. One atomic
 * per transfer, not three.
 *
 * Return: true if joined (*@out set).
 */
bool p2pnvme_fence_join(struct p2pnvme_fence_slot *slot, u64 serial, struct p2pnvme_fence **out)
{
	struct p2pnvme_fence *f = slot->fence;

	if (!f || slot->serial != serial || slot->joined >= P2PNVME_FENCE_JOINS ||
	    !atomic_inc_not_zero(&f->pending))
		return false;
	slot->joined++;
	*out = f;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_fence_join);

/**
 * p2pnvme_fence_slot_set - a batch published a fence of its own for a
 *	registration: the one its later transfers join
 * @slot: the batch's
 * @f: the fence, published, covering its publisher's transfer
 * @serial: the registration it was published for
 */
void p2pnvme_fence_slot_set(struct p2pnvme_fence_slot *slot, struct p2pnvme_fence *f,
			    u64 serial)
{
	p2pnvme_fence_slot_release(slot);
	dma_fence_get(&f->base);
	slot->fence = f;
	slot->serial = serial;
	slot->joined = 1;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_fence_slot_set);

/**
 * p2pnvme_fence_slot_release - the batch is over (its block plug ended):
 *	no transfer joins its fence any more
 * @slot: the batch's
 *
 * Only the slot's reference goes: the fence signals when the transfers it
 * covers have ended, whenever that is.
 */
void p2pnvme_fence_slot_release(struct p2pnvme_fence_slot *slot)
{
	if (slot->fence)
		dma_fence_put(&slot->fence->base);
	slot->fence = NULL;
	slot->joined = 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_fence_slot_release);

/**
 * p2pnvme_fence_end - one transfer a published fence covers has ended
 *	(any context, hard interrupts too)
 * @f: the fence: the transfer's share of it goes, and @f may be gone
 *     once this returns
 * @err: its error, 0 if none
 *
 * The fence signals when the last transfer it covers ends, carrying the
 * first error of them all (a real one over a cancellation): whoever waited
 * for them learns that some bytes did not move, as from a GPU driver's
 * fence after a failed job. That last transfer then puts the pending
 * count's reference (p2pnvme_fence_join()); the others touch @f no more
 * once their share is counted off.
 */
void p2pnvme_fence_end(struct p2pnvme_fence *f, int err)
{
	int old = 0;

	/* the first error, a real one over a cancellation */
	while (err && !try_cmpxchg(&f->error, &old, err))
		if (old != -ECANCELED || err == -ECANCELED)
			break;
	/* a full barrier: every other transfer's error is seen by the last */
	if (!atomic_dec_and_test(&f->pending))
		return;
	err = READ_ONCE(f->error);
	if (err)
		dma_fence_set_error(&f->base, err);
	dma_fence_signal(&f->base);
	dma_fence_put(&f->base);	/* the reservation object keeps its own */
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_fence_end);

/**
 * p2pnvme_dmabuf_fence_reg - fence a request naming a registered dma-buf,
 *	right before it is armed
 * @r: the request, mapped, its list blocks taken (nothing may allocate
 *     with reclaim once its fence is published)
 * @batch: the fence slot of the io_uring submission batch it is part of,
 *	   or NULL (none; a request of its own); called again after anything
 *	   that may sleep, which ends a block plug (and frees its slot)
 *
 * The request joins the fence its batch published for the same
 * registration while that one still covers a transfer that has not ended
 * (p2pnvme_fence_join()): nothing allocated, locked or published. Else it
 * publishes a fence of its own in the dma-buf's reservation object, which
 * becomes the batch's. Either way the fence is in the reservation object
 * before the request is armed, and signals only once its transfer ended
 * (p2pnvme_dmabuf_signal_req()), as the exporter's moves need.
 *
 * Return: 0 (@r->fence_added; a registration revoked for good has nothing
 * to fence: its request fails to arm), or -ENOMEM with nothing published.
 */
int p2pnvme_dmabuf_fence_reg(struct p2pnvme_req *r,
			     struct p2pnvme_fence_slot *(*batch)(struct p2pnvme_queue *q))
{
	struct p2pnvme_fence_slot *slot = batch ? batch(r->q) : NULL;
	u64 serial = r->reg->serial;
	struct dma_buf *dmabuf;
	int ret;

	if (slot && p2pnvme_fence_join(slot, serial, &r->fence)) {
		r->fence_added = true;
		return 0;
	}
	r->fence = p2pnvme_fence_alloc();
	if (!r->fence)
		return -ENOMEM;
	/* held while published: a revoke may let the registration's go */
	dmabuf = p2pnvme_reg_dmabuf_get(r->reg);
	if (!dmabuf)
		return 0;
	ret = p2pnvme_fence_publish(dmabuf->resv, r->fence);
	dma_buf_put(dmabuf);
	if (ret)
		return ret;
	r->fence_added = true;
	/* the batch's from now on (its slot looked up again: the above may sleep) */
	slot = batch ? batch(r->q) : NULL;
	if (slot)
		p2pnvme_fence_slot_set(slot, r->fence, serial);
	return 0;
}

/**
 * p2pnvme_dmabuf_fence - publish the batch's fences, right before submission
 * @c: the controller
 * @reqs: the batch, every entry mapped
 * @nr: its entries
 *
 * Each dma-buf of the batch gets a fence of its own context (fences of one
 * context must signal in order; batches do not), and so does each request
 * naming a registered dma-buf (an io_uring request's fence:
 * p2pnvme_dmabuf_fence_reg()). All reservation objects are locked at once
 * (ww_mutex, so two batches that share dma-bufs cannot deadlock), slots
 * reserved, then the fences added.
 * The caller enters the signalling section next
 * (p2pnvme_dmabuf_signalling()), having taken what its commands will need.
 *
 * Return: 0, or -ENOMEM with no fence published.
 */
int p2pnvme_dmabuf_fence(struct p2pnvme *c, struct p2pnvme_req *reqs, unsigned int nr)
{
	struct ww_acquire_ctx ctx;
	unsigned int i, j;
	int ret = 0;

	/*
	 * A registered dma-buf's, held while its fence is published: a
	 * revoke may let the registration's own reference go meanwhile
	 */
	for (i = 0; i < nr; i++)
		if (reqs[i].fence && !reqs[i].dmabuf && reqs[i].reg)
			reqs[i].fence->dmabuf = p2pnvme_reg_dmabuf_get(reqs[i].reg);
	ww_acquire_init(&ctx, &reservation_ww_class);
retry:
	for (i = 0; i < nr; i++) {
		struct p2pnvme_req *r = &reqs[i];

		if (!req_resv(r) || r->resv_locked)
			continue;
		ret = dma_resv_lock(req_resv(r), &ctx);
		if (!ret) {
			r->resv_locked = true;
			continue;
		}
		/* another dma-buf of the batch shares it: locked by its entry */
		if (ret == -EALREADY) {
			ret = 0;
			continue;
		}
		for (j = 0; j < nr; j++) {
			if (reqs[j].resv_locked) {
				dma_resv_unlock(req_resv(&reqs[j]));
				reqs[j].resv_locked = false;
			}
		}
		if (ret != -EDEADLK)
			goto out_fini;
		/* an older batch holds it: wait for it, then start over */
		dma_resv_lock_slow(req_resv(r), &ctx);
		r->resv_locked = true;
		goto retry;
	}
	ww_acquire_done(&ctx);
	/* a slot for every fence the reservation object gets */
	for (i = 0; i < nr && !ret; i++) {
		unsigned int n = 0;

		if (!reqs[i].resv_locked)
			continue;
		for (j = 0; j < nr; j++)
			n += req_resv(&reqs[j]) == req_resv(&reqs[i]);
		ret = dma_resv_reserve_fences(req_resv(&reqs[i]), n);
	}
	for (i = 0; i < nr && !ret; i++) {
		struct p2pnvme_req *r = &reqs[i];

		if (!req_resv(r))
			continue;
		fence_add(req_resv(r), r->fence);
		r->fence_added = true;
	}
	for (i = 0; i < nr; i++) {
		if (reqs[i].resv_locked) {
			dma_resv_unlock(req_resv(&reqs[i]));
			reqs[i].resv_locked = false;
		}
	}
out_fini:
	ww_acquire_fini(&ctx);
	for (i = 0; i < nr; i++) {
		if (reqs[i].fence && reqs[i].fence->dmabuf) {
			dma_buf_put(reqs[i].fence->dmabuf);
			reqs[i].fence->dmabuf = NULL;
		}
	}
	return ret;
}

/**
 * p2pnvme_dmabuf_signalling - the batch's fences are published: from now on
 *	until p2pnvme_dmabuf_signal(), nothing may allocate with reclaim or
 *	take a reservation lock
 *
 * Tells lockdep so (dma_fence_begin_signalling()), which then reports the
 * next allocation or dma_resv_lock() in the section.
 *
 * Return: the cookie for p2pnvme_dmabuf_signal().
 */
bool p2pnvme_dmabuf_signalling(void)
{
	return dma_fence_begin_signalling();
}

/**
 * p2pnvme_dmabuf_signalled - leave the signalling section
 * @cookie: what p2pnvme_dmabuf_signalling() returned
 *
 * Where the fences are signalled elsewhere (an io_uring request's, when its
 * last command completes: dma_fence_signal() annotates itself), the
 * submitter's section ends once its commands are queued.
 */
void p2pnvme_dmabuf_signalled(bool cookie)
{
	dma_fence_end_signalling(cookie);
}

/**
 * p2pnvme_dmabuf_signal_req - a request's transfer ended: its share of its
 *	published fence ends, with its error (any context, hard interrupts
 *	too)
 * @r: the request; nothing happens unless its fence was published
 * @unrun: 0, or why it ended before any command was submitted
 *
 * The fence signals now unless it covers other transfers that have not
 * ended (p2pnvme_fence_end()).
 */
void p2pnvme_dmabuf_signal_req(struct p2pnvme_req *r, int unrun)
{
	if (!r->fence_added)
		return;
	p2pnvme_fence_end(r->fence, r->error ?: r->submit_error ?: unrun);
	r->fence = NULL;
	r->fence_added = false;
}

/**
 * p2pnvme_dmabuf_signal - every command of the batch is over: signal all
 *	of its fences, and leave the signalling section
 * @reqs: the batch
 * @nr: its entries
 * @cookie: what p2pnvme_dmabuf_signalling() returned
 * @unrun: 0, or why the batch ended before any command was submitted (a
 *	   negative errno)
 *
 * All of them before any unmap: an unmap takes a reservation lock, which
 * may be held by someone waiting on a fence of another entry. The fence of
 * an entry that failed (its commands' error, its submission's, or
 * @unrun) carries that error (dma_fence_set_error()): whoever waited for
 * the transfer learns that the bytes did not move, as from a GPU driver's
 * fence after a failed job.
 */
void p2pnvme_dmabuf_signal(struct p2pnvme_req *reqs, unsigned int nr, bool cookie, int unrun)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		p2pnvme_dmabuf_signal_req(&reqs[i], unrun);
	dma_fence_end_signalling(cookie);
}

/**
 * p2pnvme_dmabuf_fence_free - free a fence allocated and never published
 * @r: the request, every command over, its fences signalled
 */
void p2pnvme_dmabuf_fence_free(struct p2pnvme_req *r)
{
	WARN_ON_ONCE(r->fence_added);
	kfree(r->fence);		/* never published */
	r->fence = NULL;
}

/* Unmap: every command of the batch is over, its fences signalled. */
void p2pnvme_dmabuf_unmap(struct p2pnvme_req *r)
{
	p2pnvme_dmabuf_fence_free(r);
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
