// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme transfers: a user request (struct p2pnvme_io) becomes pinned
 * pages, a topology decision, a DMA-mapped scatterlist and one NVMe command
 * per max_xfer bytes. A batch prepares every request before it submits
 * anything, so a bad buffer or a policy refusal sends no command at all.
 *
 * Two phases, so that a buffer stuck in a page fault (userfaultfd, FUSE)
 * never holds up a reset or a removal:
 *   pin    no lock: pin the user pages, allocate and fill bounce pages
 *          when a bounce is asked for, look up and attach dma-bufs
 *   map    inside the I/O guard with the controller LIVE: DMA-map
 *          (which decides P2P against bounce: the kernel's verdict, cached
 *          per provider and client), check, submit, wait, unmap
 * then, unlocked again, copy bounced reads out and unpin. Bounce writes are
 * filled before they are mapped and bounced reads copied after the unmap,
 * so swiotlb (or any DMA API that copies) sees the right bytes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/nvme_ioctl.h>
#include <linux/overflow.h>
#include <linux/pci-p2pdma.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <kunit/visibility.h>
#include <p2p_compat.h>

#include "io.h"
#include "reg.h"
#include "ctrl.h"
#include "queue.h"
#include "dptr.h"
#include "trace.h"

static const char *p2pnvme_path_name(unsigned int path)
{
	static const char * const names[] = {
		[P2PNVME_PATH_NONE] = "none", [P2PNVME_PATH_P2P] = "p2p",
		[P2PNVME_PATH_BOUNCE] = "bounce", [P2PNVME_PATH_HOST] = "host",
		[P2PNVME_PATH_DMABUF] = "dmabuf", [P2PNVME_PATH_DMABUF_HOST] = "dmabuf-host",
		[P2PNVME_PATH_DMABUF_COHERENT] = "dmabuf-coherent",
	};

	return path < ARRAY_SIZE(names) && names[path] ? names[path] : "?";
}

static const char *p2pnvme_why_name(unsigned int why)
{
	static const char * const names[] = {
		[P2PNVME_WHY_HOST] = "host memory",
		[P2PNVME_WHY_REACHABLE] = "the controller reaches the provider",
		[P2PNVME_WHY_FORCED] = "bounce asked for",
		[P2PNVME_WHY_TOPOLOGY] = "the topology refuses P2P",
		[P2PNVME_WHY_POLICY] = "the topology refuses P2P and bouncing is not allowed",
		[P2PNVME_WHY_DMABUF] = "a dma-buf: its exporter decides",
		[P2PNVME_WHY_REQUIRED] = "host memory, and P2P required",
		[P2PNVME_WHY_UNREACHABLE] =
			"the kernel's P2PDMA verdict refuses the dma-buf's function and the controller",
		[P2PNVME_WHY_COHERENT] = "CPU-coherent device memory, and P2P required",
	};

	return why < ARRAY_SIZE(names) && names[why] ? names[why] : "?";
}

/**
 * p2pnvme_check_io - validate a request before any I/O
 * @io: the request (P2PNVME_IOC_IO, or an entry of P2PNVME_IOC_SUBMIT)
 * @lba_shift: log2 of the namespace's LBA size
 * @nlb: namespace size in LBAs
 *
 * Return: 0 or -EINVAL (malformed, longer than P2PNVME_IO_MAX_LEN, a
 * dma-buf with bounce forced, a registered buffer with a dma-buf, a forced
 * bounce or no data, P2P required with a forced bounce),
 * -ERANGE (LBA range outside the namespace), -EOPNOTSUPP (unknown
 * operation).
 */
int p2pnvme_check_io(const struct p2pnvme_io *io, u32 lba_shift, u64 nlb)
{
	const u32 known = P2PNVME_IO_F_NO_BOUNCE | P2PNVME_IO_F_BOUNCE |
			  P2PNVME_IO_F_PRP | P2PNVME_IO_F_SGL | P2PNVME_IO_F_DMABUF |
			  P2PNVME_IO_F_REGISTERED | P2PNVME_IO_F_REQUIRE_P2P;
	bool reg = io->flags & P2PNVME_IO_F_REGISTERED;
	/* both name their buffer by an offset, not an address */
	bool dmabuf = io->flags & (P2PNVME_IO_F_DMABUF | P2PNVME_IO_F_REGISTERED);
	u64 end;

	if ((io->flags & ~known) || io->reserved)
		return -EINVAL;
	if (reg) {
		/* buf_id takes any value; the buffer is never bounced */
		if (io->flags & (P2PNVME_IO_F_DMABUF | P2PNVME_IO_F_BOUNCE))
			return -EINVAL;
	} else if (dmabuf ? io->dmabuf_fd < 0 || (io->flags & P2PNVME_IO_F_BOUNCE) :
		   io->dmabuf_fd) {
		return -EINVAL;
	}
	if ((io->flags & P2PNVME_IO_F_PRP) && (io->flags & P2PNVME_IO_F_SGL))
		return -EINVAL;
	if ((io->flags & (P2PNVME_IO_F_NO_BOUNCE | P2PNVME_IO_F_REQUIRE_P2P)) &&
	    (io->flags & P2PNVME_IO_F_BOUNCE))
		return -EINVAL;
	if (io->op > P2PNVME_OP_WRITE_ZEROES)
		return -EOPNOTSUPP;
	if (io->op == P2PNVME_OP_FLUSH)
		return io->len || io->slba || io->addr || dmabuf ? -EINVAL : 0;
	if (!io->len || io->len & ((1ULL << lba_shift) - 1) || io->len > P2PNVME_IO_MAX_LEN)
		return -EINVAL;
	if (check_add_overflow(io->slba, io->len >> lba_shift, &end) || end > nlb)
		return -ERANGE;
	if (io->op == P2PNVME_OP_WRITE_ZEROES)
		return io->addr || dmabuf ? -EINVAL : 0;
	/* a dma-buf offset may be 0; its end is checked against the dma-buf */
	if ((!io->addr && !dmabuf) || io->addr & 3)
		return -EINVAL;
	if (io->addr + io->len < io->addr)
		return -EINVAL;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_check_io);

static bool has_data(const struct p2pnvme_io *io)
{
	return io->op == P2PNVME_OP_READ || io->op == P2PNVME_OP_WRITE;
}

/* ---- phase 1: pin (no lock) ------------------------------------------- */

/*
 * An array for @n page pointers. A buffer within one page (every 4 KiB
 * I/O of an aligned buffer) uses the request's own slot: nothing to
 * allocate or free per I/O, as nvme-pci's one-segment path needs none.
 */
static struct page **req_pages_alloc(struct p2pnvme_req *r, unsigned int n)
{
	if (n == 1)
		return &r->page1;
	return kvmalloc_array(n, sizeof(*r->pages), GFP_KERNEL_ACCOUNT);
}

static void req_pages_free(struct p2pnvme_req *r)
{
	if (r->pages != &r->page1)
		kvfree(r->pages);
	r->pages = NULL;
}

static int pin_user(struct p2pnvme_req *r, bool write_to_mem)
{
	u64 addr = r->io->addr, len = r->io->len;
	unsigned int n = DIV_ROUND_UP(offset_in_page(addr) + len, PAGE_SIZE);
	unsigned int gup = (write_to_mem ? FOLL_WRITE : 0);
	int got;

#if P2P_HAVE_USER_PAGES
	gup |= FOLL_PCI_P2PDMA;
#endif
	r->pages = req_pages_alloc(r, n);
	if (!r->pages)
		return -ENOMEM;
	got = pin_user_pages_fast(addr & PAGE_MASK, n, gup, r->pages);
	if (got != n) {
		if (got > 0)
			unpin_user_pages(r->pages, got);
		req_pages_free(r);
		return got < 0 ? got : -EFAULT;
	}
	r->nr = n;
	return 0;
}

#if P2P_HAVE_URING_CMD
/*
 * The pages of @r->iter: user memory pinned (p2pmem too), io_uring's
 * registered buffer borrowed. They must make one buffer as @io->addr's
 * would (what the bounce copy and the PRP and SGL builders walk): the
 * first segment starts at offset_in_page(@io->addr), every later one on a
 * page, and every one but the last ends on one. Else -EINVAL, as a
 * segment of no bytes is.
 */
static int pin_iter(struct p2pnvme_req *r, struct iov_iter *it)
{
	unsigned int n = DIV_ROUND_UP(offset_in_page(r->io->addr) + r->io->len, PAGE_SIZE);
	bool ragged = false;
	int ret = 0;

	if (iov_iter_count(it) != r->io->len)
		return -EINVAL;
	r->borrowed = !iov_iter_extract_will_pin(it);
	r->pages = req_pages_alloc(r, n);
	if (!r->pages)
		return -ENOMEM;
	while (iov_iter_count(it)) {
		struct page **p = r->pages + r->nr;
		size_t off;
		ssize_t got;

		if (r->nr == n || ragged)
			return -EINVAL;	/* more pages than one buffer has */
		got = iov_iter_extract_pages(it, &p, iov_iter_count(it), n - r->nr,
					     ITER_ALLOW_P2PDMA, &off);
		if (got <= 0)
			return got ?: -EINVAL;
		if (r->nr ? off : off != offset_in_page(r->io->addr))
			ret = -EINVAL;
		r->nr += DIV_ROUND_UP(off + got, PAGE_SIZE);
		if (ret)
			return ret;	/* what was extracted is counted: released */
		ragged = (off + got) & ~PAGE_MASK;
	}
	return 0;
}
#else
static int pin_iter(struct p2pnvme_req *r, struct iov_iter *it)
{
	return -EOPNOTSUPP;
}
#endif

/* A transfer that cannot be made: counted, traced, said at debug level. */
static void path_refused(struct p2pnvme *c, struct p2pnvme_req *r, enum p2pnvme_why why)
{
	struct p2pnvme_io *io = r->io;

	r->why = why;
	p2pnvme_stat_add(c, ST_REFUSED, 1);
	trace_p2pnvme_path(c->pdev, io->op == P2PNVME_OP_WRITE, io->slba, io->len,
			   P2PNVME_PATH_NONE, why, r->dmabuf_owner);
	pci_dbg(c->pdev, "%s of %llu bytes at LBA %llu refused: %s\n",
		io->op == P2PNVME_OP_WRITE ? "write" : "read", io->len, io->slba,
		p2pnvme_why_name(why));
}

/*
 * P2P required, and the buffer is host memory, or device memory the CPU
 * reaches coherently (@coherent), which the log names: GPU memory a user
 * may not expect to be refused.
 */
static void required_refused(struct p2pnvme *c, struct p2pnvme_req *r, bool coherent)
{
	path_refused(c, r, coherent ? P2PNVME_WHY_COHERENT : P2PNVME_WHY_REQUIRED);
	if (coherent)
		p2pnvme_dmabuf_coherent_refused(c);
}

/* a registered buffer's: CPU-coherent device memory? */
static bool reg_coherent(const struct p2pnvme_reg *b)
{
	return b->kind == P2PNVME_REG_DMABUF && READ_ONCE(b->coherent);
}

/* CPU copy between the bounce pages and the (p2pmem) user pages. */
static void bounce_copy(struct p2pnvme *c, struct p2pnvme_req *r, bool to_user)
{
	u64 pos = offset_in_page(r->io->addr), done = 0, len = r->io->len;

	trace_p2pnvme_bounce_copy(c->pdev, len, to_user);

	while (done < len) {
		u64 uin = pos & ~PAGE_MASK, bin = done & ~PAGE_MASK;
		u64 n = min3(len - done, PAGE_SIZE - uin, PAGE_SIZE - bin);
		struct page *up = r->pages[pos >> PAGE_SHIFT];
		/* p2pmem is MMIO: only the *io accessors may touch it */
		void __iomem *io = (void __iomem __force *)page_address(up) + uin;
		void *b = kmap_local_page(r->bpages[done >> PAGE_SHIFT]) + bin;

		if (to_user)
			memcpy_toio(io, b, n);
		else
			memcpy_fromio(b, io, n);
		kunmap_local(b);
		pos += n;
		done += n;
	}
}

/*
 * A table of @r's pages whose segments the DMA layer can map in one piece
 * (swiotlb maps at most 256 KiB at once; merged user pages can be more).
 */
static int req_table(struct p2pnvme *c, struct p2pnvme_req *r, struct page **pages,
		     unsigned int n, unsigned int off)
{
	/* within one page: one entry, the request's own */
	if (n == 1) {
		sg_init_table(&r->sg1, 1);
		sg_set_page(&r->sg1, pages[0], r->io->len, off);
		r->sgt.sgl = &r->sg1;
		r->sgt.orig_nents = 1;
		return 0;
	}
	return sg_alloc_table_from_pages_segment(&r->sgt, pages, n, off, r->io->len,
						 c->max_seg, GFP_KERNEL);
}

/* Undo req_table(): the table is unmapped. */
static void req_table_free(struct p2pnvme_req *r)
{
	/* none at all for a registered buffer or a dma-buf */
	if (!r->sgt.sgl)
		return;
	if (r->sgt.sgl != &r->sg1)
		sg_free_table(&r->sgt);
	memset(&r->sgt, 0, sizeof(r->sgt));
}

/* Host pages for a bounce, charged to the caller; filled now for writes. */
static int bounce_alloc(struct p2pnvme *c, struct p2pnvme_req *r)
{
	unsigned int i;

	r->bnr = DIV_ROUND_UP(r->io->len, PAGE_SIZE);
	r->bpages = kvcalloc(r->bnr, sizeof(*r->bpages), GFP_KERNEL_ACCOUNT);
	if (!r->bpages)
		return -ENOMEM;
	for (i = 0; i < r->bnr; i++) {
		r->bpages[i] = alloc_page(GFP_KERNEL_ACCOUNT);
		if (!r->bpages[i])
			return -ENOMEM;
	}
	/* before the mapping: a DMA API that copies (swiotlb) copies this */
	if (r->dir == DMA_TO_DEVICE)
		bounce_copy(c, r, false);
	return req_table(c, r, r->bpages, r->bnr, 0);
}

/*
 * Pin the buffer, prepare bounce pages when asked for, the dma-buf
 * attachment, or look up the registered buffer. No lock is held: this may wait for user
 * memory as long as it likes. On error the caller releases the request.
 */
static int req_pin(struct p2pnvme *c, struct p2pnvme_file *f, struct p2pnvme_req *reqs,
		   unsigned int i)
{
	struct p2pnvme_req *r = &reqs[i];
	struct p2pnvme_io *io = r->io;
	bool write = io->op == P2PNVME_OP_WRITE;
	bool require = io->flags & P2PNVME_IO_F_REQUIRE_P2P;
	bool deny = (io->flags & P2PNVME_IO_F_NO_BOUNCE) || require ||
		    !READ_ONCE(p2pnvme_bounce);
	unsigned int pg;
	int ret;

	if ((io->flags & P2PNVME_IO_F_SGL) && !c->sgl)
		return -EOPNOTSUPP;
	r->sgl = c->sgl && !(io->flags & P2PNVME_IO_F_PRP);
	if (!has_data(io))
		return 0;
	r->dir = write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	if (io->flags & P2PNVME_IO_F_REGISTERED) {
		ret = p2pnvme_reg_get(f, r);
		if (r->reg)
			r->why = r->reg->kind == P2PNVME_REG_DMABUF ? P2PNVME_WHY_DMABUF :
								      P2PNVME_WHY_HOST;
		/* a move to host memory it cannot use either (-EOPNOTSUPP): said as such */
		if ((!ret || ret == -EOPNOTSUPP) && r->reg && p2pnvme_reg_refuses(r)) {
			required_refused(c, r, reg_coherent(r->reg));
			ret = -EREMOTEIO;
		} else if (ret == -EREMOTEIO && r->dmabuf_unreachable) {
			/* a move into a BAR the kernel's P2PDMA verdict refuses */
			path_refused(c, r, P2PNVME_WHY_UNREACHABLE);
		}
		return ret;
	}
	if (io->flags & P2PNVME_IO_F_DMABUF) {
		r->why = P2PNVME_WHY_DMABUF;
		return p2pnvme_dmabuf_attach(c, reqs, i);
	}
	if (r->iter) {
		struct iov_iter *it = r->iter;

		r->iter = NULL;	/* the caller's, on its stack */
		ret = pin_iter(r, it);
	} else {
		ret = pin_user(r, !write);
	}
	if (ret)
		return ret;
	r->p2p = is_pci_p2pdma_page(r->pages[0]);
	for (pg = 1; pg < r->nr; pg++)
		if (is_pci_p2pdma_page(r->pages[pg]) != r->p2p)
			return -EINVAL;	/* host memory and p2pmem in one buffer */

	/*
	 * Whether the controller reaches the provider is the DMA layer's
	 * verdict, taken when the pages are mapped (the kernel computes it
	 * once per provider and client and caches it): nothing to walk here.
	 */
	r->bounce = r->p2p && (io->flags & P2PNVME_IO_F_BOUNCE);
	r->why = !r->p2p ? P2PNVME_WHY_HOST :
		 r->bounce ? P2PNVME_WHY_FORCED : P2PNVME_WHY_REACHABLE;
	r->deny = deny;
	if (!r->p2p && require) {
		path_refused(c, r, P2PNVME_WHY_REQUIRED);
		return -EREMOTEIO;
	}
	if (r->bounce)
		return bounce_alloc(c, r);
	return req_table(c, r, r->pages, r->nr, offset_in_page(io->addr));
}

/* ---- phase 2: map (inside the I/O guard) ------------------------------ */

/*
 * Can the commands of @r be described with PRPs (or SGLs) at all? Each
 * command's share of the mapping is tried on a scratch list before anything
 * is submitted, so a dma-buf segment that PRPs cannot describe, or a
 * mapping of more segments than one SGL list page holds, fails the batch up
 * front instead of after earlier entries were queued.
 */
static int dmabuf_check_list(struct p2pnvme *c, struct p2pnvme_req *r, __le64 *scratch)
{
	struct p2pnvme_cursor cur = { .sg = r->owner->dsgt->sgl };
	u64 done, n;
	int ret;

	p2pnvme_cursor_advance(&cur, r->io->addr);
	for (done = 0; done < r->io->len; done += n) {
		struct nvme_command cmd = {};

		n = min_t(u64, r->io->len - done, c->max_xfer);
		if (r->sgl)
			ret = p2pnvme_build_sgl((struct nvme_sgl_desc *)scratch, 0, &cur, n, &cmd);
		else
			ret = p2pnvme_build_prps(scratch, 0, &cur, n, &cmd);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * User pages (p2pmem or host memory) are mapped without the implied CPU
 * syncs: p2pmem has no CPU cache to sync, and host pages get explicit
 * syncs instead, because userspace may hand the same bytes to several
 * requests at once (its own race, as with O_DIRECT), which DMA-API
 * debugging would otherwise report as overlapping mappings of the driver.
 * Bounce pages are the driver's own: mapped plainly.
 */
static unsigned long req_attrs(const struct p2pnvme_req *r)
{
	return r->bounce ? 0 : DMA_ATTR_SKIP_CPU_SYNC;
}

/*
 * Host memory within one page (every aligned 4 KiB I/O): mapped as one
 * page, as nvme-pci maps a one-segment request, not through the
 * scatterlist machinery; @r->sg1 gets the address for the PRP and SGL
 * builders all the same. P2PDMA pages always go through
 * p2p_dma_map_sgtable(), which gives them their bus addresses.
 */
static int req_map_single(struct p2pnvme *c, struct p2pnvme_req *r)
{
	struct device *dev = &c->pdev->dev;
	dma_addr_t dma;

	dma = dma_map_page_attrs(dev, sg_page(&r->sg1), r->sg1.offset, r->sg1.length, r->dir,
				 req_attrs(r));
	if (dma_mapping_error(dev, dma))
		return -EIO;
	sg_dma_address(&r->sg1) = dma;
	sg_dma_len(&r->sg1) = r->sg1.length;
	r->sgt.nents = 1;
	r->single = true;
	r->mapped = true;
	if (!r->bounce)
		dma_sync_single_for_device(dev, dma, r->sg1.length, r->dir);
	return 0;
}

static int req_map_sgt(struct p2pnvme *c, struct p2pnvme_req *r)
{
	int ret;

	if (r->sgt.sgl == &r->sg1 && !r->p2p)
		return req_map_single(c, r);
	ret = p2p_dma_map_sgtable(&c->pdev->dev, &r->sgt, r->dir, req_attrs(r));
	if (ret)
		return ret;
	r->mapped = true;
	if (!r->bounce && !r->p2p)
		dma_sync_sgtable_for_device(&c->pdev->dev, &r->sgt, r->dir);
	return 0;
}

static int req_map(struct p2pnvme *c, struct p2pnvme_req *r, __le64 **scratch)
{
	int ret;

	if (!has_data(r->io))
		return 0;
	if (r->reg) {
		/* mapped at registration; its bytes to the controller now */
		p2pnvme_reg_sync(c, r, true);
		return 0;
	}
	if (r->dmabuf) {
		ret = r->owner == r ? p2pnvme_dmabuf_map(c, r) : 0;
		/*
		 * At every mapping (an exporter may have moved it to host
		 * memory), and before what else the mapping's errno says
		 */
		if (r->owner->dsgt && r->owner->dmabuf_host &&
		    (r->io->flags & P2PNVME_IO_F_REQUIRE_P2P)) {
			required_refused(c, r, r->owner->dmabuf_coherent);
			return -EREMOTEIO;
		}
		/* device memory the kernel's P2PDMA verdict keeps from the controller */
		if (ret == -EREMOTEIO && r->owner->dmabuf_unreachable) {
			memcpy(r->dmabuf_owner, r->owner->dmabuf_owner, sizeof(r->dmabuf_owner));
			path_refused(c, r, P2PNVME_WHY_UNREACHABLE);
			return ret;
		}
		if (ret)
			return ret;
		memcpy(r->dmabuf_owner, r->owner->dmabuf_owner, sizeof(r->dmabuf_owner));
		if (!*scratch) {
			*scratch = kmalloc(P2PNVME_LIST_SIZE, GFP_KERNEL);
			if (!*scratch)
				return -ENOMEM;
		}
		return dmabuf_check_list(c, r, *scratch);
	}
	/* P2PDMA pages get bus addresses here, or -EREMOTEIO */
	ret = req_map_sgt(c, r);
	if (!ret)
		return 0;
	if (ret != -EREMOTEIO || r->bounce)
		return ret;
	if (r->deny) {
		path_refused(c, r, P2PNVME_WHY_POLICY);
		return ret;
	}
	/* the topology (the DMA layer's verdict) refuses P2P: bounce */
	req_table_free(r);
	r->bounce = true;
	r->why = P2PNVME_WHY_TOPOLOGY;
	ret = bounce_alloc(c, r);
	if (ret)
		return ret;
	return req_map_sgt(c, r);
}

/*
 * A registered buffer's request goes busy on it: its placement checked
 * again, as it now holds until the request is idle.
 */
static int req_arm(struct p2pnvme *c, struct p2pnvme_req *r)
{
	int ret = p2pnvme_reg_arm(r);

	if (ret == -EREMOTEIO)
		required_refused(c, r, reg_coherent(r->reg));
	return ret;
}

static void lists_put(struct p2pnvme_queue *q, struct p2pnvme_lists *l);

/* Undo req_map(): every command of the batch is over, its fences signalled. */
static void req_unmap(struct p2pnvme *c, struct p2pnvme_req *r)
{
	if (r->lists) {
		lists_put(r->q, r->lists);
		r->lists = NULL;
	}
	if (r->dmabuf)
		p2pnvme_dmabuf_unmap(r);
	else if (r->fence)
		p2pnvme_dmabuf_fence_free(r);	/* a registered dma-buf's, not published */
	if (r->mapped && r->single) {
		if (!r->bounce)
			dma_sync_single_for_cpu(&c->pdev->dev, sg_dma_address(&r->sg1),
						r->sg1.length, r->dir);
		dma_unmap_page_attrs(&c->pdev->dev, sg_dma_address(&r->sg1), r->sg1.length,
				     r->dir, req_attrs(r));
	} else if (r->mapped) {
		if (!r->bounce && !r->p2p)
			dma_sync_sgtable_for_cpu(&c->pdev->dev, &r->sgt, r->dir);
		dma_unmap_sgtable(&c->pdev->dev, &r->sgt, r->dir, req_attrs(r));
	}
	r->mapped = false;
	r->single = false;
}

/* Release what req_pin() took; @ok: the data reached the user's pages. */
static void req_release(struct p2pnvme *c, struct p2pnvme_req *r, bool ok)
{
	unsigned int i;

	if (ok && r->bounce && r->dir == DMA_FROM_DEVICE)
		bounce_copy(c, r, true);	/* after the unmap: what the device wrote */
	p2pnvme_reg_put(r);
	if (r->dmabuf)
		p2pnvme_dmabuf_release(r);
	req_table_free(r);
	/* only a bounce has pages of its own: no kvfree(NULL) per transfer */
	if (r->bpages) {
		for (i = 0; i < r->bnr && r->bpages[i]; i++)
			__free_page(r->bpages[i]);
		kvfree(r->bpages);
		r->bpages = NULL;
	}
	if (r->pages) {
		if (!r->borrowed)
			unpin_user_pages_dirty_lock(r->pages, r->nr,
						    ok && r->dir == DMA_FROM_DEVICE);
		req_pages_free(r);
	}
}

/* Where a mapped request's data starts. */
static void req_cursor(struct p2pnvme_req *r, struct p2pnvme_cursor *cur)
{
	struct sg_table *dsgt = r->dmabuf ? r->owner->dsgt : NULL;

	*cur = (struct p2pnvme_cursor){ .sg = dsgt ? dsgt->sgl : r->sgt.sgl };
	if (dsgt)
		p2pnvme_cursor_advance(cur, r->io->addr);	/* the offset into the dma-buf */
	else if (r->reg && has_data(r->io))
		p2pnvme_reg_cursor(r, cur);	/* armed: the mapping stays */
}

/* How many list blocks req_submit() takes for a mapped request. */
static unsigned int req_lists(struct p2pnvme *c, struct p2pnvme_req *r)
{
	struct p2pnvme_cursor cur;
	unsigned int n = 0;
	u64 done, len;

	if (!has_data(r->io))
		return 0;
	/*
	 * A registered buffer is not armed yet, so its mapping may be going
	 * (a revocation unmaps it): not walked here (p2pnvme_reg_lists())
	 */
	if (r->reg)
		return p2pnvme_reg_lists(r, c->max_xfer);
	req_cursor(r, &cur);
	for (done = 0; done < r->io->len; done += len) {
		len = min_t(u64, r->io->len - done, c->max_xfer);
		n += p2pnvme_data_needs_list(&cur, len, r->sgl);
		p2pnvme_cursor_advance(&cur, len);
	}
	return n;
}

/* out of line: its loop would cost lists_put()'s callers register saves */
static noinline void lists_free(struct p2pnvme_queue *q, struct p2pnvme_lists *l)
{
	while (l->nr) {
		l->nr--;
		dma_pool_free(q->list_pool, l->list[l->nr], l->dma[l->nr]);
	}
	if (l->list != l->list1)
		kvfree(l->list);
	if (l->dma != l->dma1)
		kvfree(l->dma);
}

/*
 * Give back what lists_take() took and no command used: in line, nothing
 * for the many that took none, or used them all.
 */
static inline void lists_put(struct p2pnvme_queue *q, struct p2pnvme_lists *l)
{
	if (l->nr || l->list != l->list1 || l->dma != l->dma1)
		lists_free(q, l);
	l->list = NULL;
	l->dma = NULL;
}

/* @l holds none yet, in its own arrays */
static void lists_init(struct p2pnvme_lists *l)
{
	l->nr = 0;
	l->list = l->list1;
	l->dma = l->dma1;
}

/*
 * @want list blocks of @q's pool, at most what the queue holds at once
 * (beyond that, commands wait for their predecessors' slots, whose blocks
 * go back to the pool), into @l: taken while reclaim is still allowed.
 */
static int lists_alloc(struct p2pnvme_queue *q, unsigned int want, struct p2pnvme_lists *l)
{
	want = min(want, q->depth - 1U);
	/* a few (an io_uring request's): no arrays to allocate and free */
	lists_init(l);
	if (want > P2PNVME_LISTS_INLINE) {
		l->list = kvcalloc(want, sizeof(*l->list), GFP_KERNEL);
		l->dma = kvcalloc(want, sizeof(*l->dma), GFP_KERNEL);
		if (!l->list || !l->dma)
			goto out_put;
	}
	for (l->nr = 0; l->nr < want; l->nr++) {
		l->list[l->nr] = dma_pool_alloc(q->list_pool, GFP_KERNEL, &l->dma[l->nr]);
		if (!l->list[l->nr])
			goto out_put;
	}
	return 0;

out_put:
	lists_put(q, l);
	return -ENOMEM;
}

/*
 * The list blocks of a batch whose dma-buf fences are about to be
 * published: as many as its commands need (lists_alloc()).
 */
static int lists_take(struct p2pnvme *c, struct p2pnvme_queue *q, struct p2pnvme_req *reqs,
		      unsigned int nr, struct p2pnvme_lists *l)
{
	unsigned int i, want = 0;

	for (i = 0; i < nr && want < q->depth - 1; i++)
		want += req_lists(c, &reqs[i]);
	return lists_alloc(q, want, l);
}

/* Queue the request's commands, one per max_xfer bytes. */
static int req_submit(struct p2pnvme *c, struct p2pnvme_batch *b, struct p2pnvme_req *r)
{
	struct p2pnvme_io *io = r->io;
	bool dmabuf = r->dmabuf;
	struct p2pnvme_cursor cur;
	u64 done, slba = io->slba;
	u8 opcode;
	int ret;

	if (io->op == P2PNVME_OP_FLUSH) {
		struct nvme_command cmd = {};

		cmd.common.opcode = nvme_cmd_flush;
		cmd.common.nsid = cpu_to_le32(c->nsid);
		return p2pnvme_submit(c, b, r, &cmd, NULL, 0, false);
	}
	opcode = io->op == P2PNVME_OP_READ ? nvme_cmd_read :
		 io->op == P2PNVME_OP_WRITE ? nvme_cmd_write : nvme_cmd_write_zeroes;
	req_cursor(r, &cur);
	for (done = 0; done < io->len; ) {
		u64 n = min_t(u64, io->len - done, c->max_xfer);
		struct nvme_command cmd = {};

		/*
		 * Told to stop using the dma-buf: send nothing more from it.
		 * Nothing of it sent yet: -ESTALE, p2pnvme_run_batch() sends
		 * the request again, mapped where the buffer went.
		 */
		if (dmabuf && READ_ONCE(r->owner->invalidated))
			return done ? -EAGAIN : -ESTALE;
		cmd.rw.opcode = opcode;
		cmd.rw.nsid = cpu_to_le32(c->nsid);
		cmd.rw.slba = cpu_to_le64(slba);
		cmd.rw.length = cpu_to_le16((n >> c->lba_shift) - 1);
		ret = p2pnvme_submit(c, b, r, &cmd, has_data(io) ? &cur : NULL, n, false);
		if (ret)
			return ret;
		slba += n >> c->lba_shift;
		done += n;
	}
	return 0;
}

static void lat_add(struct p2pnvme *c, bool write, unsigned int path, u64 ns)
{
	static const u8 idx[] = {
		[P2PNVME_PATH_P2P] = LAT_P2P, [P2PNVME_PATH_BOUNCE] = LAT_BOUNCE,
		[P2PNVME_PATH_HOST] = LAT_HOST, [P2PNVME_PATH_DMABUF] = LAT_DMABUF,
		[P2PNVME_PATH_DMABUF_HOST] = LAT_DMABUF,
		[P2PNVME_PATH_DMABUF_COHERENT] = LAT_DMABUF,
	};
	u64 us = div_u64(ns, NSEC_PER_USEC), max;
	struct p2pnvme_pcpu *pc;
	unsigned int bucket, p;
	atomic64_t *m;

	if (path == P2PNVME_PATH_NONE || path >= ARRAY_SIZE(idx))
		return;
	p = idx[path];
	bucket = us < 2 ? 0 : min_t(unsigned int, ilog2(us), P2PNVME_LAT_BUCKETS - 1);
	pc = get_cpu_ptr(c->pcpu);
	local64_inc(&pc->lat_count[write][p]);
	local64_add(ns, &pc->lat_sum[write][p]);
	local64_inc(&pc->lat_hist[write][p][bucket]);
	put_cpu_ptr(c->pcpu);
	m = &c->lat_max[write][p];
	max = atomic64_read(m);
	while (ns > max && !atomic64_try_cmpxchg(m, &max, ns))
		;
}

/*
 * The batch is over after @ns: count and report (the data is unmapped
 * after).
 */
static void req_complete(struct p2pnvme *c, struct p2pnvme_req *r, u64 ns)
{
	struct p2pnvme_io *io = r->io;
	bool write = io->op == P2PNVME_OP_WRITE;
	int err;

	p2pnvme_req_error(r);
	err = r->error;

	io->result = err;
	io->status = r->status;
	io->path = P2PNVME_PATH_NONE;
	if (!err && has_data(io)) {
		if (r->reg && r->reg->kind == P2PNVME_REG_HOST) {
			io->path = P2PNVME_PATH_HOST;
			p2pnvme_stat_add(c, write ? ST_WRITES_HOST : ST_READS_HOST, 1);
			p2pnvme_stat_add(c, ST_BYTES_HOST, io->len);
		} else if (r->reg) {
			/* where the mapping's bytes are (p2pnvme_dmabuf_in_host()) */
			io->path = p2pnvme_reg_path(r->reg);
			p2pnvme_stat_add(c, write ? ST_WRITES_DMABUF : ST_READS_DMABUF, 1);
			p2pnvme_stat_add(c, ST_BYTES_DMABUF, io->len);
		} else if (r->dmabuf) {
			io->path = !r->owner->dmabuf_host ? P2PNVME_PATH_DMABUF :
				   r->owner->dmabuf_coherent ? P2PNVME_PATH_DMABUF_COHERENT :
				   P2PNVME_PATH_DMABUF_HOST;
			p2pnvme_stat_add(c, write ? ST_WRITES_DMABUF : ST_READS_DMABUF, 1);
			p2pnvme_stat_add(c, ST_BYTES_DMABUF, io->len);
		} else if (!r->p2p) {
			io->path = P2PNVME_PATH_HOST;
			p2pnvme_stat_add(c, write ? ST_WRITES_HOST : ST_READS_HOST, 1);
			p2pnvme_stat_add(c, ST_BYTES_HOST, io->len);
		} else if (r->bounce) {
			io->path = P2PNVME_PATH_BOUNCE;
			p2pnvme_stat_add(c, write ? ST_WRITES_BOUNCE : ST_READS_BOUNCE, 1);
			p2pnvme_stat_add(c, ST_BYTES_BOUNCE, io->len);
		} else {
			io->path = P2PNVME_PATH_P2P;
			p2pnvme_stat_add(c, write ? ST_WRITES_P2P : ST_READS_P2P, 1);
			p2pnvme_stat_add(c, ST_BYTES_P2P, io->len);
		}
	}
	/*
	 * What the controller wrote into a registered host buffer, to the CPU;
	 * a read that failed or never ran leaves the buffer as it was (its
	 * mapping's bounce slots, if any, hold older bytes).
	 */
	if (!err && r->reg && r->dir == DMA_FROM_DEVICE)
		p2pnvme_reg_sync(c, r, false);
	if (!err && has_data(io)) {
		lat_add(c, write, io->path, ns);
		trace_p2pnvme_path(c->pdev, write, io->slba, io->len, io->path, r->why,
				   r->dmabuf_owner);
		pci_dbg(c->pdev, "%s of %llu bytes at LBA %llu: %s%s%s%s (%s)\n",
			write ? "write" : "read", io->len, io->slba, p2pnvme_path_name(io->path),
			r->dmabuf_owner[0] ? " (" : "", r->dmabuf_owner,
			r->dmabuf_owner[0] ? ")" : "", p2pnvme_why_name(r->why));
	}
	/* device-side failures only; bad buffers and policy refusals are not */
	if (err == -EIO || err == -ETIMEDOUT || err == -ENODEV || err == -ECANCELED)
		p2pnvme_stat_add(c, ST_ERRORS, 1);
}

/* Entries sharing a dma-buf mapping go before the entry that owns it. */
static void reqs_unmap(struct p2pnvme *c, struct p2pnvme_req *reqs, unsigned int nr)
{
	while (nr--)
		req_unmap(c, &reqs[nr]);
}

static void reqs_release(struct p2pnvme *c, struct p2pnvme_req *reqs, unsigned int nr)
{
	while (nr--)
		req_release(c, &reqs[nr], !reqs[nr].error && reqs[nr].io->result == 0);
}

/*
 * One try of p2pnvme_run_batch(). On every return *@failed is the entry
 * whose preparation failed, else @nr, and *@ran says whether commands were
 * submitted (each entry's result is then its own) or nothing reached the
 * controller. -ESTALE with *@failed < @nr: a registered dma-buf moved
 * before its arming.
 */
static int run_batch(struct p2pnvme *c, struct p2pnvme_file *f, struct p2pnvme_io *ios,
		     unsigned int nr, unsigned int *failed, bool *ran)
{
	struct p2pnvme_lists lists = {};
	struct p2pnvme_req *reqs;
	struct p2pnvme_batch b;
	unsigned int i, pinned, mapped = 0;
	bool fenced = false, cookie = false;
	struct p2pnvme_queue *q;
	__le64 *scratch = NULL;
	int ret = 0;
	u64 t0;

	*failed = nr;
	*ran = false;
	reqs = kvcalloc(nr, sizeof(*reqs), GFP_KERNEL);
	if (!reqs)
		return -ENOMEM;
	for (pinned = 0; pinned < nr; pinned++) {
		reqs[pinned].io = &ios[pinned];
		ret = req_pin(c, f, reqs, pinned);
		if (ret) {
			*failed = pinned;
			ios[pinned].result = ret;
			pinned++;	/* release what it took */
			goto out_release;
		}
	}

	ret = p2pnvme_io_enter(c);
	if (ret)
		goto out_release;
	q = p2pnvme_cpu_queue(c);
	for (mapped = 0; mapped < nr; mapped++) {
		struct p2pnvme_req *r = &reqs[mapped];

		r->q = q;
		ret = req_map(c, r, &scratch);
		/* a registered dma-buf's I/O is fenced as a per-I/O import's */
		if (!ret && r->reg && r->reg->kind == P2PNVME_REG_DMABUF) {
			r->fence = kzalloc_obj(*r->fence, GFP_KERNEL);
			ret = r->fence ? 0 : -ENOMEM;
		}
		if (ret) {
			*failed = mapped;
			ios[mapped].result = ret;
			mapped++;	/* unmap what it mapped */
			goto out_unmap;
		}
		fenced |= !!r->fence;
	}

	/*
	 * Once a dma-buf fence is published (an imported dma-buf's, or a
	 * registered one's), nothing may allocate with reclaim or take a
	 * reservation lock until every fence of the batch is signalled: the
	 * list blocks first.
	 */
	if (fenced) {
		ret = lists_take(c, q, reqs, nr, &lists);
		if (ret) {
			*failed = nr;
			goto out_unmap;
		}
	}
	/* last before submission: publish the dma-bufs' fences */
	ret = p2pnvme_dmabuf_fence(c, reqs, nr);
	if (ret) {
		*failed = nr;
		goto out_unmap;
	}
	if (fenced)
		cookie = p2pnvme_dmabuf_signalling();
	/*
	 * No reservation lock held any more, the fences of registered
	 * dma-bufs in place: registered buffers go busy (an invalidation
	 * from now on waits for the fences, never for these)
	 */
	for (i = 0; i < nr; i++) {
		if (!reqs[i].reg)
			continue;
		ret = req_arm(c, &reqs[i]);
		if (ret) {
			*failed = i;
			ios[i].result = ret;
			goto out_signal;
		}
	}
	p2pnvme_batch_init(&b, false);
	if (fenced)
		b.lists = &lists;
	*ran = true;
	t0 = p2pnvme_now();
	for (i = 0; i < nr; i++) {
		/* commands already queued for a failed one still complete */
		reqs[i].submit_error = req_submit(c, &b, &reqs[i]);
	}
	p2pnvme_ring(q);
	p2pnvme_wait_batch(c, &b);
	t0 = p2pnvme_elapsed(t0, p2pnvme_now());
	for (i = 0; i < nr; i++)
		p2pnvme_reg_idle(&reqs[i]);
	/* every fence, before any unmap takes a reservation lock */
	if (fenced)
		p2pnvme_dmabuf_signal(reqs, nr, cookie, 0);
	lists_put(q, &lists);

	for (i = 0; i < nr; i++)
		req_complete(c, &reqs[i], t0);
	reqs_unmap(c, reqs, nr);
	p2pnvme_io_exit(c);
	reqs_release(c, reqs, nr);
	for (i = 0; i < nr && !ret; i++)
		ret = ios[i].result;
	kfree(scratch);
	kvfree(reqs);
	return ret;

out_signal:
	if (fenced)
		p2pnvme_dmabuf_signal(reqs, nr, cookie, ret);
out_unmap:
	/* first: a remap waits for these (nothing was sent) */
	for (i = 0; i < nr; i++)
		p2pnvme_reg_idle(&reqs[i]);
	lists_put(q, &lists);
	reqs_unmap(c, reqs, mapped);
	p2pnvme_io_exit(c);
out_release:
	for (i = 0; i < pinned; i++)
		reqs[i].error = reqs[i].error ?: -ECANCELED;
	reqs_release(c, reqs, pinned);
	kfree(scratch);
	kvfree(reqs);
	return ret;
}

/*
 * How often a batch is prepared again when a registered dma-buf it names
 * moved between its lookup and its arming (an exporter evicting it):
 * each time the lookup maps it where it went.
 */
#define P2PNVME_MOVE_RETRIES	8

/**
 * p2pnvme_run_batch - prepare, submit and wait for a batch of requests
 * @c: the controller (no lock held: this enters the I/O guard itself)
 * @f: the file they came through (its registered buffers)
 * @ios: requests, checked with p2pnvme_check_io(); @result, @path and
 *	 @status of each are written
 * @nr: how many, at most P2PNVME_SUBMIT_MAX
 * @failed: out, on every return: the index of the entry whose preparation
 *	    failed (then nothing was submitted), else @nr
 *
 * Every entry goes to the I/O queue of the submitting CPU, whose interrupt
 * that CPU takes; nothing orders the entries among themselves.
 *
 * Return: 0 when every entry succeeded; -errno of a preparation failure
 * (*@failed says which, and nothing was submitted); -ENODEV when the
 * controller went away, -ERESTARTSYS when a signal came while it waited out
 * a reset or a dma-buf's kernel fences, -ENOMEM (nothing was submitted,
 * *@failed == @nr); -EAGAIN (*@failed says which) when a registered
 * dma-buf it names kept moving while the batch was prepared again and
 * again; else the -errno of the first failed entry (*@failed == @nr).
 */
int p2pnvme_run_batch(struct p2pnvme *c, struct p2pnvme_file *f, struct p2pnvme_io *ios,
		      unsigned int nr, unsigned int *failed)
{
	unsigned int i, n = 0, tries, sub_failed;
	struct p2pnvme_io *sub;
	bool resent = false, ran;
	int ret;

	for (tries = 1; ; tries++) {
		ret = run_batch(c, f, ios, nr, failed, &ran);
		if (ran || ret != -ESTALE || *failed == nr)
			break;
		/* a registered one moved before its arming: nothing was sent */
		for (i = 0; i < nr; i++)
			p2pnvme_io_clear_out(&ios[i]);
		if (tries == P2PNVME_MOVE_RETRIES) {
			ios[*failed].result = -EAGAIN;
			return -EAGAIN;	/* moved again and again: the caller tries again */
		}
	}
	if (!ran)
		return ret;	/* nothing was sent: *failed says which entry, or @nr */
	/*
	 * The batch ran. Its entries whose dma-buf moved before any of their
	 * commands went out (-ESTALE) are sent again on their own, mapped
	 * where it went; the others keep their results.
	 */
	for (tries = 0; tries < P2PNVME_MOVE_RETRIES; tries++) {
		for (i = 0, n = 0; i < nr; i++)
			n += ios[i].result == -ESTALE;
		if (!n)
			break;
		sub = kmalloc_array(n, sizeof(*sub), GFP_KERNEL);
		if (!sub)
			break;
		resent = true;
		for (i = 0, n = 0; i < nr; i++) {
			if (ios[i].result != -ESTALE)
				continue;
			sub[n] = ios[i];
			p2pnvme_io_clear_out(&sub[n++]);
		}
		ret = run_batch(c, f, sub, n, &sub_failed, &ran);
		/*
		 * Nothing of these was sent (a signal, a move at arming, a
		 * preparation failure, the controller gone): each says why,
		 * never 0.
		 */
		for (i = 0; !ran && i < n; i++)
			sub[i].result = ret == -ERESTARTSYS ? -EINTR :
					ret == -ESTALE ? -ESTALE : sub[i].result ?: ret;
		for (i = 0, n = 0; i < nr; i++)
			if (ios[i].result == -ESTALE)
				ios[i] = sub[n++];
		kfree(sub);
	}
	if (!resent && !n)
		return ret;	/* the batch's own answer (-ERESTARTSYS, -ENODEV too) */
	/* moved again and again: those the caller tries again */
	for (i = 0, ret = 0; i < nr; i++) {
		if (ios[i].result == -ESTALE)
			ios[i].result = -EAGAIN;
		if (!ret)
			ret = ios[i].result;
	}
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_run_batch);

/* ---- one request on its own: the io_uring path (uring.c) ------------- */

/**
 * p2pnvme_req_prepare - pin one request's buffer, or look up its registered
 *	one (no lock held)
 * @c: the controller
 * @f: the file it came through
 * @r: the request, @r->io checked with p2pnvme_check_io() and without
 *     P2PNVME_IO_F_DMABUF
 *
 * Return: 0 or the -errno of pinning or the lookup; on error
 * p2pnvme_req_abandon().
 */
int p2pnvme_req_prepare(struct p2pnvme *c, struct p2pnvme_file *f, struct p2pnvme_req *r)
{
	if (WARN_ON_ONCE(r->io->flags & P2PNVME_IO_F_DMABUF))
		return -EOPNOTSUPP;
	return req_pin(c, f, r, 0);
}

/**
 * p2pnvme_req_map - DMA-map a prepared request for @r->q (a registered
 *	buffer: sync it and count the request busy on it)
 * @c: the controller, entered with p2pnvme_io_enter()
 * @r: the request
 * @l: where the list blocks of a request naming a registered dma-buf go
 *     (given back when it is unmapped), or NULL when its commands need none
 * @batch: the fence slot of the submission batch the request is part of,
 *	   or NULL (p2pnvme_dmabuf_fence_reg())
 *
 * A registered dma-buf's request is fenced as a batch's entry is: the list
 * blocks its commands may need are taken (@l), then it joins its
 * submission batch's fence for the same buffer, or publishes its own in the
 * dma-buf's reservation object, and the signalling section is entered
 * (dma_fence_begin_signalling()), then it goes busy. On success the caller
 * queues its commands, then leaves the section (p2pnvme_req_launched());
 * its share of the fence ends when it ends (p2pnvme_req_ended()), and the
 * fence signals once every transfer it covers has. On failure its share,
 * if any, ends with the error, and the section is left.
 *
 * Return: 0, -EREMOTEIO (refused by policy; a registered buffer in host
 * memory and P2P required), -ENODEV (a revoked registered buffer), -ESTALE
 * (a registered dma-buf moved since its lookup: prepare it again), or
 * another -errno.
 */
int p2pnvme_req_map(struct p2pnvme *c, struct p2pnvme_req *r, struct p2pnvme_lists *l,
		    struct p2pnvme_fence_slot *(*batch)(struct p2pnvme_queue *q))
{
	int ret = req_map(c, r, NULL);
	unsigned int want;

	if (ret || !r->reg)
		return ret;
	if (r->reg->kind == P2PNVME_REG_DMABUF) {
		if (l) {
			/*
			 * counted, then taken: a registered range in one DMA
			 * segment counts none for most reads (4 KiB ones),
			 * which then take nothing (never walks, never calls)
			 */
			want = p2pnvme_reg_lists(r, c->max_xfer);
			if (!want) {
				lists_init(l);
			} else {
				ret = lists_alloc(r->q, want, l);
				if (ret)
					return ret;
			}
			r->lists = l;
		}
		ret = p2pnvme_dmabuf_fence_reg(r, batch);
		if (ret)
			return ret;
		r->cookie = p2pnvme_dmabuf_signalling();
		r->signalling = true;
	}
	ret = req_arm(c, r);
	if (ret) {
		p2pnvme_dmabuf_signal_req(r, ret);
		p2pnvme_req_launched(r);
	}
	return ret;
}

/**
 * p2pnvme_req_launched - the request's commands are queued: leave the
 *	signalling section p2pnvme_req_map() entered, if it did
 * @r: the request
 */
void p2pnvme_req_launched(struct p2pnvme_req *r)
{
	if (r->signalling)
		p2pnvme_dmabuf_signalled(r->cookie);
	r->signalling = false;
}

/**
 * p2pnvme_req_ended - none of a mapped request's commands can reach the
 *	controller any more (any context, hard interrupts too)
 * @r: the request, @r->error final
 *
 * It is no longer busy on its registered buffer, and its share of its
 * fence, if any, ends (with its error): once no transfer the fence covers
 * is left, it signals, and an exporter waiting for it may move the memory.
 */
void p2pnvme_req_ended(struct p2pnvme_req *r)
{
	p2pnvme_reg_idle(r);
	p2pnvme_dmabuf_signal_req(r, 0);
}

/**
 * p2pnvme_req_reserve - take room on @r->q for all of a request's commands
 *	now, for a submission that must not wait for a slot
 * @c: the controller, entered with p2pnvme_io_enter()
 * @r: the request, @r->q chosen
 *
 * p2pnvme_req_submit() uses the room and gives back what it did not use;
 * p2pnvme_req_unreserve() gives it back if the request is not submitted.
 *
 * Return: 0, or -EAGAIN: the queue has not the room now, or could never
 * hold all of them at once.
 */
int p2pnvme_req_reserve(struct p2pnvme *c, struct p2pnvme_req *r)
{
	const struct p2pnvme_io *io = r->io;
	u64 n = io->op == P2PNVME_OP_FLUSH ? 1 : DIV_ROUND_UP_ULL(io->len, c->max_xfer);

	if (n >= r->q->depth || !p2pnvme_room_take(r->q, n))
		return -EAGAIN;
	r->reserved = n;
	return 0;
}

/**
 * p2pnvme_req_unreserve - give back what p2pnvme_req_reserve() took
 * @r: the request, inside the I/O guard it was reserved in
 */
void p2pnvme_req_unreserve(struct p2pnvme_req *r)
{
	p2pnvme_room_give(r->q, r->reserved);
	r->reserved = 0;
}

/**
 * p2pnvme_req_submit - queue a mapped request's commands on @r->q
 * @c: the controller, entered with p2pnvme_io_enter()
 * @b: the batch its commands end
 * @r: the request
 *
 * The caller rings the doorbell.
 *
 * Return: 0 or the -errno that stopped the submission (commands queued
 * before it still complete).
 */
int p2pnvme_req_submit(struct p2pnvme *c, struct p2pnvme_batch *b, struct p2pnvme_req *r)
{
	int ret = req_submit(c, b, r);

	p2pnvme_req_unreserve(r);	/* what a failure left unused */
	return ret;
}

/**
 * p2pnvme_req_finish - a request's commands are over: account, unmap, unpin
 * @c: the controller (process context, no lock held)
 * @r: the request; @r->io's result, path and status are set
 * @ns: its time from submission to the end
 */
void p2pnvme_req_finish(struct p2pnvme *c, struct p2pnvme_req *r, u64 ns)
{
	req_complete(c, r, ns);
	req_unmap(c, r);
	req_release(c, r, !r->error && r->io->result == 0);
}

/**
 * p2pnvme_req_abandon - undo p2pnvme_req_prepare() (and _map()) of a
 *	request that never reached the controller
 * @c: the controller
 * @r: the request
 */
void p2pnvme_req_abandon(struct p2pnvme *c, struct p2pnvme_req *r)
{
	r->error = r->error ?: -ECANCELED;
	p2pnvme_req_ended(r);	/* a fence published: nothing was sent */
	p2pnvme_req_launched(r);
	req_unmap(c, r);
	req_release(c, r, false);
}

static bool io_writes(const struct p2pnvme_io *io)
{
	return io->op == P2PNVME_OP_WRITE || io->op == P2PNVME_OP_WRITE_ZEROES;
}

/*
 * While the controller's disk exists (disk=1, disk.c) its blocks are a
 * filesystem's, whose permissions raw LBAs would bypass: the LBA paths
 * need CAP_SYS_RAWIO (-EPERM), as raw block device I/O on most systems
 * does, and writes are refused while the disk or one of its partitions is
 * claimed (mounted, or opened exclusively: -EBUSY). The claim is looked at
 * when the transfer is checked: one that begins after that does not stop
 * the transfer.
 */
static int io_disk_rules(struct p2pnvme *c, const struct p2pnvme_io *io)
{
	if (!READ_ONCE(c->disk_rules))
		return 0;
	if (!capable(CAP_SYS_RAWIO))
		return -EPERM;
	if (io_writes(io) && p2pnvme_disk_claimed(c))
		return -EBUSY;
	return 0;
}

/*
 * May this file do @io? Writes need an fd opened for writing, as
 * nvme_cmd_allowed() has it for nvme-pci's passthrough (-EACCES); then
 * the disk's rules (io_disk_rules()).
 */
int p2pnvme_io_allowed(struct file *filp, const struct p2pnvme_io *io)
{
	struct p2pnvme_file *f = filp->private_data;

	if (io_writes(io) && !(filp->f_mode & FMODE_WRITE))
		return -EACCES;
	return io_disk_rules(f->c, io);
}

/*
 * Account @ios against the file's max_inflight_mb: -E2BIG for a batch that
 * can never fit, -EAGAIN while the file's other batches hold the room.
 */
int p2pnvme_inflight_get(struct p2pnvme_file *f, const struct p2pnvme_io *ios,
			 unsigned int nr, u64 *bytes)
{
	u64 limit = (u64)READ_ONCE(p2pnvme_max_inflight_mb) << 20, sum = 0;
	unsigned int i;

	/* registered buffers pin nothing per transfer: not counted */
	for (i = 0; i < nr; i++)
		if ((ios[i].op == P2PNVME_OP_READ || ios[i].op == P2PNVME_OP_WRITE) &&
		    !(ios[i].flags & P2PNVME_IO_F_REGISTERED))
			sum += ios[i].len;	/* each at most P2PNVME_IO_MAX_LEN */
	if (sum > limit)
		return -E2BIG;
	*bytes = 0;
	if (!sum)	/* no shared cache line for what pins nothing */
		return 0;
	if (atomic64_add_return(sum, &f->inflight) > limit) {
		atomic64_sub(sum, &f->inflight);
		return -EAGAIN;
	}
	*bytes = sum;
	return 0;
}

/**
 * p2pnvme_io_from_nvme - a request from an NVMe I/O command, as the kernel's
 *	passthrough takes it (NVME_IOCTL_IO_CMD, NVME_URING_CMD_IO)
 * @c: the controller
 * @nc: the command (struct nvme_passthru_cmd64 starts the same way)
 * @vec: NVME_URING_CMD_IO_VEC: @nc->addr is an array of @nc->data_len
 *	 iovecs, which the caller imports (@io->addr is left for it to set)
 * @io: out: the request, for p2pnvme_check_io() next
 *
 * Read, Write, Flush and Write Zeroes of the served namespace; NLB in CDW12
 * 15:0, the data at a user address of at least the NLB's bytes (a larger
 * buffer, as nvme-pci takes one: only the NLB's bytes move), or in iovecs
 * of exactly that many bytes together. FUA,
 * PRINFO, DSM, reference tags, metadata and flags are not taken. A standard
 * client cannot say whether it accepts a bounce: p2pmem the topology
 * refuses is -EREMOTEIO unless @c->passthru_bounce allows one.
 *
 * Return: 0, -EPERM (another opcode: the queues are p2pnvme's, nothing else
 * is sent) or -EINVAL.
 */
int p2pnvme_io_from_nvme(struct p2pnvme *c, const struct nvme_uring_cmd *nc, bool vec,
			 struct p2pnvme_io *io)
{
	*io = (struct p2pnvme_io){ .argsz = sizeof(*io) };
	switch (nc->opcode) {
	case nvme_cmd_read:
		io->op = P2PNVME_OP_READ;
		break;
	case nvme_cmd_write:
		io->op = P2PNVME_OP_WRITE;
		break;
	case nvme_cmd_flush:
		io->op = P2PNVME_OP_FLUSH;
		break;
	case nvme_cmd_write_zeroes:
		io->op = P2PNVME_OP_WRITE_ZEROES;
		break;
	default:
		return -EPERM;
	}
	if (nc->flags || nc->rsvd1 || nc->cdw2 || nc->cdw3 || nc->metadata || nc->metadata_len ||
	    (nc->cdw12 >> 16) || nc->cdw13 || nc->cdw14 || nc->cdw15 || nc->nsid != c->nsid)
		return -EINVAL;
	if (io->op != P2PNVME_OP_FLUSH) {
		io->slba = (u64)nc->cdw11 << 32 | nc->cdw10;
		io->len = (u64)((nc->cdw12 & 0xffff) + 1) << c->lba_shift;
	} else if (nc->cdw10 || nc->cdw11 || nc->cdw12) {
		return -EINVAL;
	}
	if (has_data(io)) {
		/* a buffer shorter than the transfer: the controller would run past it */
		if (vec ? !nc->data_len || nc->data_len > UIO_MAXIOV : nc->data_len < io->len)
			return -EINVAL;
		io->addr = vec ? 0 : nc->addr;
		if (!READ_ONCE(c->passthru_bounce))
			io->flags = P2PNVME_IO_F_NO_BOUNCE;
	} else if (nc->data_len || nc->addr) {
		return -EINVAL;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_io_from_nvme);

/* nvme-pci's admin_timeout: an admin passthrough without a timeout_ms of its own */
#define P2PNVME_ADMIN_TIMEOUT_MS	60000

/*
 * Enter the I/O guard holding @c->pt_lock, once no admin command given up
 * on is still with the controller (p2pnvme_admin_abandoned()): until the
 * controller answers it or a reset cancels it, it may write into
 * @c->pt_buf, over another command's data. The reset its deadline asked
 * for is waited out in p2pnvme_io_enter().
 */
static int pt_enter(struct p2pnvme *c)
{
	int ret;

	for (;;) {
		ret = p2pnvme_io_enter(c);
		if (ret)
			return ret;
		mutex_lock(&c->pt_lock);
		if (!p2pnvme_admin_abandoned(c))
			return 0;
		mutex_unlock(&c->pt_lock);
		p2pnvme_io_exit(c);
		if (msleep_interruptible(10))
			return -EINTR;
	}
}

/**
 * p2pnvme_admin_passthru_iter - an admin command from userspace, as nvme-pci's
 *	passthrough takes it (NVME_IOCTL_ADMIN_CMD, NVME_IOCTL_ADMIN64_CMD,
 *	NVME_URING_CMD_ADMIN)
 * @c: the controller
 * @pt: the command, kernel copy (its result member is not read)
 * @to: where the data goes (io_uring's registered buffer), or NULL: to
 *	@pt->addr in user memory
 * @result: out: the completion's dword 0
 *
 * Identify, Get Log Page and Get Features. The data goes through a buffer
 * of the controller's own (P2PNVME_PT_MAX bytes, PRP1 and PRP2 always
 * describe all of it), zeroed before each command, and what the command
 * moves is copied out after, the rest of the caller's buffer left as it
 * was (as the controller leaves it on nvme-pci). The command is given up on
 * after @pt->timeout_ms, or 60 s without one (nvme-pci's), and the buffer
 * is not used again while the controller may still write into it. Sleeps;
 * the copy-out may fault.
 *
 * Return: 0, the NVMe status when the controller fails the command (the
 * whole status field: SCT << 8 | SC, CRD, More and DNR above), as nvme-pci
 * returns it, or -EPERM for a command the driver never sends for
 * userspace, -EACCES for one that needs CAP_SYS_ADMIN, -EINVAL for a
 * transfer longer than data_len or the driver's buffer, -EFAULT, -ENOMEM,
 * -ENODEV, -EINTR, -ERESTARTSYS and the errors of the command.
 */
long p2pnvme_admin_passthru_iter(struct p2pnvme *c, const struct nvme_passthru_cmd64 *pt,
				 struct iov_iter *to, u32 *result)
{
	struct nvme_command cmd = {};
	unsigned long timeout;
	void *data = NULL;
	u16 status = 0;
	u64 xfer;
	long ret;

	/*
	 * Everything else would pull the queues from under p2pnvme or change
	 * the drive (Format, Firmware, queue management, Set Features).
	 */
	if (pt->opcode != nvme_admin_identify && pt->opcode != nvme_admin_get_log_page &&
	    pt->opcode != nvme_admin_get_features)
		return -EPERM;
	if (pt->flags || pt->rsvd1 || pt->metadata || pt->metadata_len || pt->cdw2 || pt->cdw3)
		return -EINVAL;
	if (pt->data_len > P2PNVME_PT_MAX || (pt->data_len && !pt->addr))
		return -EINVAL;

	cmd.common.opcode = pt->opcode;
	cmd.common.nsid = cpu_to_le32(pt->nsid);
	cmd.common.cdw10 = cpu_to_le32(pt->cdw10);
	cmd.common.cdw11 = cpu_to_le32(pt->cdw11);
	cmd.common.cdw12 = cpu_to_le32(pt->cdw12);
	cmd.common.cdw13 = cpu_to_le32(pt->cdw13);
	cmd.common.cdw14 = cpu_to_le32(pt->cdw14);
	cmd.common.cdw15 = cpu_to_le32(pt->cdw15);
	if (!p2pnvme_admin_unprivileged(&cmd) && !capable(CAP_SYS_ADMIN))
		return -EACCES;
	ret = p2pnvme_admin_xfer_len(&cmd, &xfer);
	if (ret)
		return ret;
	if (xfer > pt->data_len)
		return -EINVAL;
	if (!to && pt->data_len && !access_ok(u64_to_user_ptr(pt->addr), pt->data_len))
		return -EFAULT;
	/* the whole buffer: the controller never follows a pointer left 0 */
	cmd.common.dptr.prp1 = cpu_to_le64(c->pt_dma);
	cmd.common.dptr.prp2 = cpu_to_le64(c->pt_dma + P2PNVME_CTRL_PAGE);
	timeout = msecs_to_jiffies(pt->timeout_ms ?: P2PNVME_ADMIN_TIMEOUT_MS) ?: 1;

	/*
	 * The copy-out faults outside the guard: a user buffer stuck in a
	 * fault (userfaultfd, FUSE) must hold up neither a reset nor an unbind.
	 */
	if (xfer) {
		data = kmalloc(xfer, GFP_KERNEL);
		if (!data)
			return -ENOMEM;
	}
	ret = pt_enter(c);
	if (ret)
		goto out_free;
	memset(c->pt_buf, 0, P2PNVME_PT_MAX);
	ret = p2pnvme_admin_exec_timeout(c, &cmd, timeout, result, &status);
	if (!ret && data)
		memcpy(data, c->pt_buf, xfer);
	mutex_unlock(&c->pt_lock);
	p2pnvme_io_exit(c);
	/* what the command moved, no more: the rest is the caller's, untouched */
	if (!ret && data && (to ? copy_to_iter(data, xfer, to) != xfer :
			     copy_to_user(u64_to_user_ptr(pt->addr), data, xfer)))
		ret = -EFAULT;
out_free:
	kfree(data);
	if (ret == -EIO && status)
		ret = status;	/* the controller's answer, not an errno */
	return ret;
}

/**
 * p2pnvme_admin_passthru - p2pnvme_admin_passthru_iter() with the data at
 *	@pt->addr in user memory
 * @c: the controller
 * @pt: the command, kernel copy
 * @result: out: the completion's dword 0
 *
 * Return: as p2pnvme_admin_passthru_iter().
 */
long p2pnvme_admin_passthru(struct p2pnvme *c, const struct nvme_passthru_cmd64 *pt,
			    u32 *result)
{
	return p2pnvme_admin_passthru_iter(c, pt, NULL, result);
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_admin_passthru);

/**
 * p2pnvme_nvme_io_allowed - may this file send @io through the kernel's
 *	NVMe passthrough?
 * @filp: the file
 * @io: from p2pnvme_io_from_nvme()
 *
 * As nvme_cmd_allowed(): writes need a writable fd or CAP_SYS_ADMIN
 * (nvme-cli opens read-only); then the disk's rules, as for every LBA
 * path (io_disk_rules()).
 *
 * Return: 0, -EACCES, or the disk's -EPERM and -EBUSY.
 */
int p2pnvme_nvme_io_allowed(struct file *filp, const struct p2pnvme_io *io)
{
	struct p2pnvme_file *f = filp->private_data;
	int ret = p2pnvme_io_allowed(filp, io);

	if (ret == -EACCES && capable(CAP_SYS_ADMIN))
		ret = io_disk_rules(f->c, io);
	return ret;
}
