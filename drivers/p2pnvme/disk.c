// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: the namespace as a block device, /dev/p2pnvme<N>n<nsid> (with
 * partitions), so that ext4 and xfs mount on a drive p2pnvme owns and
 * files go through the filesystem's own O_DIRECT (Documentation/files.rst,
 * design 1). Only with the module parameter disk=1 at probe.
 *
 * Its queues are its own, as issue 22's prototype had them: probe asks the
 * controller for a second set of I/O queue pairs, as many as the
 * engine's (qid nr_ioq + 1 ..), each with its own MSI-X vector from a
 * second interrupt set spread over the CPUs; no command identifier is
 * shared with the engine (a CID is the blk-mq tag with a 4-bit generation
 * above it, as nvme-pci's). A blk-mq tag set with one hardware context per
 * queue pair, and a gendisk on it whose limits are nvme core's: logical
 * block size, MDTS (and what the DMA layer maps at once), the controller
 * page as virt boundary, dword DMA alignment, a volatile write cache and
 * FUA when Identify's VWC says so, Write Zeroes when ONCS says so, and
 * BLK_FEAT_PCI_P2PDMA (QUEUE_FLAG_PCI_P2PDMA before 6.11), so that
 * O_DIRECT may pin p2pmem. Never BLK_FEAT_STABLE_WRITES.
 *
 * A request is mapped segment by segment: blk_rq_map_sg(), then
 * dma_map_sgtable(), which decides for each segment whether the
 * controller reaches it (host memory, p2pmem by bus address or through
 * the host bridge); a request may mix P2PDMA and host segments, and each
 * is counted by its path. p2pmem the controller cannot reach fails the
 * request with BLK_STS_TARGET (-EREMOTEIO), as nvme-pci; nothing bounces.
 * Never blk_rq_dma_map_iter_start(), which takes the first segment's type
 * for the whole request. PRPs or SGLs as the engine builds them (dptr.c),
 * a list block from the queue's pool when one is needed.
 *
 * Timeouts, as the engine's ladder: a completion whose interrupt was lost
 * is reaped; else an Abort (within the controller's Abort Command Limit);
 * at the second timeout, or when the Abort fails, the controller is reset.
 * Resets, PCI error recovery and PCI resets of the function are the
 * controller's (ctrl.c); they tell the disk through struct
 * p2pnvme_upper_ops: stop (the tag set quiesced, its queues deleted on
 * the controller while it still answers), cancel (once it is disabled:
 * every request in flight ends with a cancellation, and is requeued, at
 * most five times, as nvme_cancel_request() and nvme core's retry do),
 * restart (the queues created again, the tag set unquiesced; or, when
 * the controller does not come back, every request fails with -EIO and
 * the filesystem is told: blk_mark_disk_dead()).
 *
 * Removal: del_gendisk() first, while the controller still answers (the
 * filesystem syncs and shuts down through its bdev holder; new I/O fails
 * with -EIO), then the engine's removal; the disk's vectors, tag set and
 * gendisk go last. A controller that is gone (surprise removal) or in the
 * middle of a PCI error recovery is killed first: what is in flight fails
 * at once, so that del_gendisk() never waits for it; one that is
 * surprise-removed while del_gendisk() waits is killed by the first
 * timeout (the PCI core marked it disconnected).
 *
 * While the disk exists the char device's LBA paths need CAP_SYS_RAWIO,
 * and writes through them are refused (-EBUSY) while the disk is claimed
 * (io.c, p2pnvme_disk_claimed()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/interrupt.h>
#include <linux/memremap.h>
#include <linux/mempool.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/scatterlist.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <p2p_compat.h>

#include "disk.h"
#include "file.h"
#include "reg.h"
#include "shadow.h"
#include "ctrl.h"
#include "admin.h"
#include "queue.h"

/* the CID: a 4-bit generation above the tag, as nvme_cid() */
#define DISK_TAG_BITS		12
#define DISK_TAG_MASK		((1U << DISK_TAG_BITS) - 1)
static_assert(P2PNVME_MAX_DEPTH <= 1U << DISK_TAG_BITS);
/* a request of up to two segments (8 KiB, page aligned) needs no allocation */
#define DISK_INLINE_SEGS	2
/* a request's DMA view of few pieces needs no allocation (placeholders) */
#define DISK_VIEW_INLINE	4
/* registrations one request's placeholders may name; more go through RAM */
#define DISK_SHADOW_REGS	4
/* as nvme core's max_retries */
#define DISK_RETRIES		5
/* Do Not Retry, in a completion's status without the phase bit */
#define DISK_STATUS_DNR		0x4000

/* 7.x maps a request's segments without its queue */
static int disk_map_sg(struct request *rq, struct scatterlist *sgl)
{
#ifdef HAVE_BLK_RQ_MAP_SG_NO_QUEUE
	return blk_rq_map_sg(rq, sgl);
#else
	return blk_rq_map_sg(rq->q, rq, sgl);
#endif
}

#ifdef HAVE_BLK_MQ_F_SHOULD_MERGE
#define DISK_SET_FLAGS		BLK_MQ_F_SHOULD_MERGE
#else
#define DISK_SET_FLAGS		0	/* 6.14+: merging is the default */
#endif

enum disk_stat {
	DS_READS_P2P, DS_READS_HOST, DS_READS_MIXED,
	DS_WRITES_P2P, DS_WRITES_HOST, DS_WRITES_MIXED,
	DS_BYTES_P2P, DS_BYTES_HOST, DS_FLUSHES, DS_WRITE_ZEROES,
	DS_REFUSED, DS_ERRORS, DS_RETRIES, DS_TIMEOUTS, DS_ABORTS, DS_CANCELLED,
	DS_NR
};

/* One CPU's counters: added to on that CPU (this_cpu_add()), read by sysfs. */
struct disk_stats {
	u64 v[DS_NR];
};

/**
 * struct p2pnvme_disk - the block device of one controller's namespace
 * @c: the controller (its binding outlives the disk's use of it)
 * @set: one hardware context per queue pair of @q
 * @disk: the gendisk; queuedata and private_data are this
 * @sg_pool: scatterlists of @max_segs entries, for requests of more than
 *	     DISK_INLINE_SEGS segments (one element kept: forward progress)
 * @stats: the counters (sysfs: /sys/class/p2pnvme/p2pnvmeN/disk/)
 * @dead_work: tells the block layer, and the filesystem, that the disk
 *	       is dead once the controller went out of service
 * @lock: see internal.h; protects @stopped, @removed and the writers of
 *	  @live and @failed
 * @stopped: quiesced by a stop, until the restart
 * @live: its queue pairs exist on the controller and take commands (read
 *	  by .queue_rq without the lock: it runs only unquiesced, and a
 *	  quiesce waits for it)
 * @failed: the controller went out of service: every request fails, none
 *	    is retried (for good)
 * @added: device_add_disk() succeeded
 * @removed: del_gendisk() is done: nothing is quiesced, kicked or marked
 *	     dead any more
 * @vwc: the controller has a volatile write cache (flushes, FUA)
 * @wz: it takes Write Zeroes
 * @max_segs: segments per request (queue_limits.max_segments)
 * @nr: queue pairs
 * @q: the queue pairs; only their rings, locks, doorbells and list pools
 *     are used (not their command slots): the SQ side under sq_lock, the
 *     CQ side under cq_lock (by the interrupt handler, and with interrupts
 *     off by a poll)
 */
struct p2pnvme_disk {
	struct p2pnvme *c;
	struct blk_mq_tag_set set;
	struct gendisk *disk;
	mempool_t *sg_pool;
	struct disk_stats __percpu *stats;
	struct work_struct dead_work;
	struct mutex lock;	/* see above */
	bool stopped;
	bool live;
	bool failed;
	bool added;
	bool removed;
	bool vwc;
	bool wz;
	unsigned int max_segs;
	unsigned int nr;
	struct p2pnvme_queue q[];	/* @nr of them */
};

/**
 * struct disk_pdu - what each request carries (the tag set's cmd_size)
 * @sgt: the data's scatterlist and its DMA mapping
 * @sg_inline: @sgt's entries for a request of few segments
 * @q: the queue pair it was dispatched to
 * @list: its PRP list or SGL segment, from @q's pool, or NULL
 * @list_dma: its bus address
 * @bytes_p2p: bytes of P2PDMA segments (is_pci_p2pdma_page())
 * @bytes_host: bytes of host memory segments
 * @error: set by a cancellation before it completes (-ECANCELED: a reset,
 *	   retried; -ENODEV: the controller is out of service, not retried)
 * @status: the NVMe status of its completion, without the phase bit
 * @mapped: @sgt is DMA-mapped
 * @aborted: an Abort was sent for it since its dispatch
 * @retries: dispatches after the first (RQF_DONTPREP keeps it)
 * @genctr: bumped at each dispatch of this tag; kept across uses
 * @shadow: its data holds placeholder pages (shadow.c): described by @view
 * @view: then its DMA view, in order: the registrations' bus addresses for
 *	  placeholder bytes (no page), every other piece DMA-mapped on its
 *	  own (a page: unmapped by disk_unmap()); @view_inline or allocated
 * @view_n: entries of @view filled (those with a page are mapped)
 * @view_cap: entries @view has room for
 * @view_inline: @view for a request of few pieces
 * @nreg: registrations in @reg
 * @reg: the registrations its placeholders stand for, each armed for the
 *	 disk (p2pnvme_reg_disk_arm()) unless @reg_err says why not
 * @reg_err: 0, or P2PNVME_SHADOW_*: that registration's bytes go through
 *	     the placeholders' RAM
 * @reg_delta: each armed registration's bus address less position, modulo
 *	       the controller page
 */
struct disk_pdu {
	struct sg_table sgt;
	struct scatterlist sg_inline[DISK_INLINE_SEGS];
	struct p2pnvme_queue *q;
	void *list;
	dma_addr_t list_dma;
	u32 bytes_p2p;
	u32 bytes_host;
	int error;
	u16 status;
	bool mapped;
	bool aborted;
	u8 retries;
	u8 genctr;
	bool shadow;
	struct scatterlist *view;
	unsigned int view_n;
	unsigned int view_cap;
	struct scatterlist view_inline[DISK_VIEW_INLINE];
	unsigned int nreg;
	struct p2pnvme_reg *reg[DISK_SHADOW_REGS];
	u8 reg_err[DISK_SHADOW_REGS];
	u16 reg_delta[DISK_SHADOW_REGS];
};

static void disk_stat_add(struct p2pnvme_disk *d, enum disk_stat s, u64 v)
{
	this_cpu_add(d->stats->v[s], v);
}

/* ---- quiescing -------------------------------------------------------- */

/* The whole tag set; before 6.2 its one queue (one disk per tag set). */
static void disk_quiesce(struct p2pnvme_disk *d)
{
#ifdef HAVE_BLK_MQ_QUIESCE_TAGSET
	blk_mq_quiesce_tagset(&d->set);
#else
	blk_mq_quiesce_queue(d->disk->queue);
#endif
}

static void disk_unquiesce(struct p2pnvme_disk *d)
{
#ifdef HAVE_BLK_MQ_QUIESCE_TAGSET
	blk_mq_unquiesce_tagset(&d->set);
#else
	blk_mq_unquiesce_queue(d->disk->queue);
#endif
}

/* ---- mapping ---------------------------------------------------------- */

/*
 * A request of P2PDMA pages only is mapped without CPU syncs: a BAR has no
 * CPU cache to sync, and the file command's callers may point several
 * transfers at the same p2pmem at once (their own race, as with O_DIRECT),
 * which DMA-API debugging would otherwise report as overlapping mappings
 * (the engine maps user pages the same way, req_attrs() in io.c). Host
 * memory keeps the syncs, and the check: the kernel's own buffers (page
 * cache, metadata) must never overlap.
 */
static unsigned long disk_dma_attrs(const struct disk_pdu *pdu)
{
	return DMA_ATTR_NO_WARN | (pdu->bytes_host ? 0 : DMA_ATTR_SKIP_CPU_SYNC);
}

/*
 * Describe @rq's data, DMA-mapped from @sg on, by PRPs or an SGL in @cmd
 * (a list block from the queue's pool where it needs one). @what and @n
 * name the mapping in the warning of a request it cannot describe: the
 * limits promise segments PRPs can describe, so a bug if it comes.
 */
static blk_status_t disk_describe(struct p2pnvme_disk *d, struct request *rq,
				  struct nvme_command *cmd, struct scatterlist *sg,
				  const char *what, unsigned int n)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	struct p2pnvme_cursor cur = { .sg = sg };
	struct p2pnvme *c = d->c;
	int ret;

	if (p2pnvme_data_needs_list(&cur, blk_rq_payload_bytes(rq), c->sgl)) {
		pdu->list = dma_pool_alloc(pdu->q->list_pool, GFP_ATOMIC, &pdu->list_dma);
		if (!pdu->list)
			return BLK_STS_RESOURCE;
	}
	ret = c->sgl ? p2pnvme_build_sgl(pdu->list, pdu->list_dma, &cur, blk_rq_payload_bytes(rq),
					 cmd) :
		       p2pnvme_build_prps(pdu->list, pdu->list_dma, &cur, blk_rq_payload_bytes(rq),
					  cmd);
	if (ret) {
		dev_warn_ratelimited(&c->pdev->dev, "%s: cannot describe a request of %u %s (%d)\n",
				     d->disk->disk_name, n, what, ret);
		return BLK_STS_IOERR;
	}
	return BLK_STS_OK;
}

/* ---- placeholders (shadow.c) ------------------------------------------ */

/* A piece of a view, mapped alone: as disk_dma_attrs(), by its page */
static unsigned long disk_view_attrs(struct page *page)
{
	return DMA_ATTR_NO_WARN | (is_pci_p2pdma_page(page) ? DMA_ATTR_SKIP_CPU_SYNC : 0);
}

/*
 * A request whose data holds placeholder pages: the pieces its view
 * DMA-mapped, then the registrations it was busy on (any context).
 */
static void disk_unmap_shadow(struct p2pnvme_disk *d, struct request *rq)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	unsigned int i;

	for (i = 0; i < pdu->view_n; i++) {
		struct sg_table one = { .sgl = &pdu->view[i], .nents = 1, .orig_nents = 1 };

		if (sg_page(&pdu->view[i]))
			dma_unmap_sgtable(&d->c->pdev->dev, &one, rq_dma_dir(rq),
					  disk_view_attrs(sg_page(&pdu->view[i])));
	}
	if (pdu->view && pdu->view != pdu->view_inline)
		kfree(pdu->view);
	pdu->view = NULL;
	pdu->view_n = 0;
	for (i = 0; i < pdu->nreg; i++)
		if (!pdu->reg_err[i])
			p2pnvme_reg_disk_idle(pdu->reg[i]);
	pdu->nreg = 0;
	pdu->shadow = false;
}

/*
 * The request's slot in @pdu->reg for @b: armed for the disk when first
 * seen. Return: its P2PNVME_SHADOW_* error (0: its bus addresses may be
 * used), @*ri its index.
 */
static unsigned int disk_shadow_reg(struct disk_pdu *pdu, struct p2pnvme_reg *b,
				    unsigned int *ri)
{
	unsigned int i;
	int ret;

	for (i = 0; i < pdu->nreg; i++)
		if (pdu->reg[i] == b)
			goto found;
	if (pdu->nreg == DISK_SHADOW_REGS)
		return P2PNVME_SHADOW_RETRY;	/* no room: through RAM, and again */
	pdu->reg[i] = b;
	ret = p2pnvme_reg_disk_arm(b);
	pdu->reg_err[i] = !ret ? 0 : ret == -ENODEV ? P2PNVME_SHADOW_REVOKED :
			  P2PNVME_SHADOW_RETRY;
	if (!ret)
		pdu->reg_delta[i] = (READ_ONCE(b->contig_dma) - b->start) &
				    (P2PNVME_CTRL_PAGE - 1);
	pdu->nreg++;
found:
	*ri = i;
	return pdu->reg_err[i];
}

/*
 * The view's next entry, cleared (sg_init_table() of one, without its end
 * mark): only the entries used are written, not the most a request could
 * need. NULL when the view is full: the count it was sized by read a
 * registration's layout before the registration was armed, and it was
 * mapped anew since (the request is dispatched again, counted again).
 */
static struct scatterlist *disk_view_next(struct disk_pdu *pdu)
{
	struct scatterlist *sg;

	if (pdu->view_n >= pdu->view_cap)
		return NULL;
	sg = &pdu->view[pdu->view_n];
	sg_init_table(sg, 1);
	sg_unmark_end(sg);
	return sg;
}

/* A piece of host memory or p2pmem (or a placeholder's own RAM), mapped alone. */
static int disk_view_page(struct p2pnvme_disk *d, struct request *rq, unsigned long pfn,
			  unsigned int off, unsigned int len)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	struct scatterlist *sg = disk_view_next(pdu);
	struct sg_table one = { .sgl = sg, .orig_nents = 1 };
	struct page *page = pfn_to_page(pfn);
	int ret;

	if (!sg)
		return -ENOSPC;
	sg_set_page(sg, page, len, off);
	ret = dma_map_sgtable(&d->c->pdev->dev, &one, rq_dma_dir(rq), disk_view_attrs(page));
	if (ret) {
		sg_assign_page(sg, NULL);	/* nothing to unmap */
		return ret;
	}
	pdu->view_n++;
	if (is_pci_p2pdma_page(page))
		pdu->bytes_p2p += len;
	else
		pdu->bytes_host += len;
	return 0;
}

/* Bus addresses of a registration, merged with the piece before if they follow it. */
static int disk_view_bus(struct disk_pdu *pdu, dma_addr_t dma, unsigned int len)
{
	struct scatterlist *sg;

	if (pdu->view_n) {
		sg = &pdu->view[pdu->view_n - 1];
		if (!sg_page(sg) && sg_dma_address(sg) + sg_dma_len(sg) == dma) {
			len += sg_dma_len(sg);	/* sg_dma_len() may be ->length itself */
			sg_dma_len(sg) = len;
			sg->length = len;
			return 0;
		}
	}
	sg = disk_view_next(pdu);
	if (!sg)
		return -ENOSPC;
	pdu->view_n++;
	sg_dma_address(sg) = dma;
	sg_dma_len(sg) = len;
	sg->length = len;
	return 0;
}

/*
 * Placeholder bytes: [@off, @off + @len) from page @pfn on, pages @idx on
 * of transfer @sx, in one run (disk_shadow_piece()). Into
 * the registration's memory at the bus addresses its bytes stand for; or,
 * when that registration cannot take them now (moved and not mapped again,
 * mapped anew since the transfer was laid out, revoked, in host memory
 * with P2P required, no room in the request), into the placeholder's own
 * RAM, the transfer told why (it is issued again or fails: its bytes are
 * not counted as carried).
 */
static int disk_view_shadow(struct p2pnvme_disk *d, struct request *rq, unsigned long pfn,
			    unsigned int off, unsigned int len, struct p2pnvme_shadow_xfer *sx,
			    unsigned int idx)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	struct p2pnvme_reg *b = sx->reg;
	unsigned int why, ri;
	u64 pos;

	why = disk_shadow_reg(pdu, b, &ri);
	if (!why && pdu->reg_delta[ri] != sx->delta)
		why = P2PNVME_SHADOW_RETRY;	/* mapped anew since its layout */
	if (!why && sx->require && READ_ONCE(b->host))
		why = P2PNVME_SHADOW_HOST;
	if (why) {
		p2pnvme_shadow_lose(sx, why);
		return disk_view_page(d, rq, pfn, off, len);
	}
	pos = sx->pos + p2pnvme_shadow_t(sx, idx, off);
	if (READ_ONCE(b->host))
		pdu->bytes_host += len;
	else
		pdu->bytes_p2p += len;
	while (len) {
		u64 room;
		dma_addr_t dma = p2pnvme_reg_bus(b, pos, &room);
		unsigned int n = min_t(u64, len, room);

		if (disk_view_bus(pdu, dma, n))
			return -ENOSPC;
		pos += n;
		len -= n;
	}
	return 0;
}

/*
 * The piece of a segment at page frame @pfn, offset @off, with @left bytes
 * from there: pages of one run of a transfer's placeholders (@*sx the
 * transfer, @*idx the first page's index in it), or an ordinary page
 * (@*sx NULL). A run lies in one chunk, so its pages are the segment's.
 * Return: its bytes.
 */
static unsigned int disk_shadow_piece(const struct p2pnvme_shadow *s, unsigned long pfn,
				      unsigned int off, unsigned int left,
				      struct p2pnvme_shadow_xfer **sx, unsigned int *idx)
{
	int slot = p2pnvme_shadow_slot(s, pfn);
	unsigned int k;

	if (slot < 0) {
		*sx = NULL;
		return min_t(unsigned int, left, PAGE_SIZE - off);
	}
	*sx = p2pnvme_shadow_owner(s, slot, idx, &k);
	k = min_t(unsigned int, k, DIV_ROUND_UP(off + left, PAGE_SIZE));
	return min_t(unsigned int, left, (k << PAGE_SHIFT) - off);
}

/*
 * Walk the request's segments (blk_rq_map_sg()'s, not DMA-mapped): a
 * segment outside the pool's page frames is one piece; in a segment that
 * may hold placeholders, each run of one transfer's placeholders is a
 * piece (or its registration's DMA segments), the ordinary pages between
 * them runs of their own. With @fill false only count the view's entries
 * (at most: a run of k placeholder pages crosses at most k + 1 of its
 * registration's DMA segments, which are controller pages at least, one
 * where the registration is one segment; two of them may merge); else
 * fill it.
 */
static int disk_view_walk(struct p2pnvme_disk *d, struct request *rq, bool fill)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	const struct p2pnvme_shadow *s = d->c->shadow;
	struct scatterlist *sg;
	unsigned int i, count = 0;
	int ret = 0;

	for_each_sg(pdu->sgt.sgl, sg, pdu->sgt.orig_nents, i) {
		unsigned long pfn = page_to_pfn(sg_page(sg)) + (sg->offset >> PAGE_SHIFT);
		unsigned int off = offset_in_page(sg->offset), left = sg->length;
		unsigned long run_pfn = 0;
		unsigned int run_off = 0, run_len = 0;

		if (!p2pnvme_shadow_span(s, pfn, DIV_ROUND_UP(off + left, PAGE_SIZE))) {
			run_pfn = pfn;
			run_off = off;
			run_len = left;
			left = 0;
		}
		while (left) {
			struct p2pnvme_shadow_xfer *sx;
			unsigned int idx, n = disk_shadow_piece(s, pfn, off, left, &sx, &idx);

			if (!sx) {
				/* ordinary pages of one segment: contiguous, one piece */
				if (!run_len) {
					run_pfn = pfn;
					run_off = off;
				}
				run_len += n;
			} else {
				if (run_len && fill)
					ret = disk_view_page(d, rq, run_pfn, run_off, run_len);
				if (ret)
					return ret;
				count += !!run_len;
				run_len = 0;
				/* its registration's segments, read unarmed (disk_view_next()) */
				count += READ_ONCE(sx->reg->contig) ? 1 :
					 DIV_ROUND_UP(off + n, PAGE_SIZE) + 1;
				if (fill)
					ret = disk_view_shadow(d, rq, pfn, off, n, sx, idx);
				if (ret)
					return ret;
			}
			left -= n;
			pfn += (off + n) >> PAGE_SHIFT;
			off = 0;
		}
		if (run_len) {
			count++;
			if (fill)
				ret = disk_view_page(d, rq, run_pfn, run_off, run_len);
			if (ret)
				return ret;
		}
	}
	return count;
}

/*
 * At most how many pieces the request's view needs, without looking at
 * its pages: one for a segment outside the pool's page frames, else two a
 * page (a run of k placeholder pages takes k + 1 at most, ordinary pages
 * between runs one). Enough for the view of a small request (a 4 KiB
 * read), which then takes one walk, not two.
 */
static unsigned int disk_view_bound(struct p2pnvme_disk *d, struct request *rq)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	const struct p2pnvme_shadow *s = d->c->shadow;
	struct scatterlist *sg;
	unsigned int i, n = 0;

	for_each_sg(pdu->sgt.sgl, sg, pdu->sgt.orig_nents, i) {
		unsigned long pfn = page_to_pfn(sg_page(sg)) + (sg->offset >> PAGE_SHIFT);
		unsigned int pages;

		pages = DIV_ROUND_UP(offset_in_page(sg->offset) + sg->length, PAGE_SIZE);
		n += p2pnvme_shadow_span(s, pfn, pages) ? 2 * pages : 1;
	}
	return n;
}

/*
 * The data of a request with placeholder pages (the file command's reads
 * into a registered dma-buf without pages, shadow.c): a DMA view of it
 * built piece by piece (disk_view_walk()), then described by PRPs or an
 * SGL as any request's. The block layer merges bios of different
 * transfers adjacent on the disk: a request may mix placeholders of
 * several transfers and registrations with ordinary pages, each piece
 * taken as it is. Only atomics: .queue_rq's context. Undone by
 * disk_unmap_shadow().
 */
static blk_status_t disk_map_shadow(struct p2pnvme_disk *d, struct request *rq,
				    struct nvme_command *cmd)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	int n, ret;

	pdu->shadow = true;
	pdu->bytes_p2p = 0;
	pdu->bytes_host = 0;
	n = disk_view_bound(d, rq);
	if (n > DISK_VIEW_INLINE)
		n = disk_view_walk(d, rq, false);
	pdu->view = n <= DISK_VIEW_INLINE ? pdu->view_inline :
		    kmalloc_array(n, sizeof(*pdu->view), GFP_ATOMIC);
	if (!pdu->view)
		return BLK_STS_RESOURCE;
	pdu->view_cap = n;
	ret = disk_view_walk(d, rq, true);
	if (ret < 0) {
		/* mapped anew between the count and the fill: again, counted again */
		if (ret == -ENOSPC)
			return BLK_STS_RESOURCE;
		if (ret == -EREMOTEIO) {
			disk_stat_add(d, DS_REFUSED, 1);
			return BLK_STS_TARGET;
		}
		return ret == -ENOMEM ? BLK_STS_RESOURCE : BLK_STS_IOERR;
	}
	sg_mark_end(&pdu->view[pdu->view_n - 1]);
	return disk_describe(d, rq, cmd, pdu->view, "placeholder pieces", pdu->view_n);
}

/*
 * A read with placeholders completed without error: the sectors of each
 * transfer whose bytes it carried to the registration's memory are
 * covered, before blk_mq_end_request() (the transfer reads its coverage
 * once its last bio ended). A transfer that lost bytes to the RAM is
 * issued again or fails: nothing to mark.
 */
static void disk_cover(struct p2pnvme_disk *d, struct request *rq)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	const struct p2pnvme_shadow *s = d->c->shadow;
	struct scatterlist *sg;
	unsigned int i;

	for_each_sg(pdu->sgt.sgl, sg, pdu->sgt.orig_nents, i) {
		unsigned long pfn = page_to_pfn(sg_page(sg)) + (sg->offset >> PAGE_SHIFT);
		unsigned int off = offset_in_page(sg->offset), left = sg->length;

		if (!p2pnvme_shadow_span(s, pfn, DIV_ROUND_UP(off + left, PAGE_SIZE)))
			continue;
		while (left) {
			struct p2pnvme_shadow_xfer *sx;
			unsigned int idx, n = disk_shadow_piece(s, pfn, off, left, &sx, &idx);

			if (sx && !atomic_read(&sx->lost))
				p2pnvme_shadow_cover(sx, p2pnvme_shadow_t(sx, idx, off), n);
			left -= n;
			pfn += (off + n) >> PAGE_SHIFT;
			off = 0;
		}
	}
}

/* Undo what the dispatch mapped (any context). */
static void disk_unmap(struct p2pnvme_disk *d, struct request *rq)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);

	if (pdu->list) {
		dma_pool_free(pdu->q->list_pool, pdu->list, pdu->list_dma);
		pdu->list = NULL;
	}
	if (pdu->mapped) {
		dma_unmap_sgtable(&d->c->pdev->dev, &pdu->sgt, rq_dma_dir(rq), disk_dma_attrs(pdu));
		pdu->mapped = false;
	}
	if (unlikely(pdu->shadow))
		disk_unmap_shadow(d, rq);
	if (pdu->sgt.sgl && pdu->sgt.sgl != pdu->sg_inline)
		mempool_free(pdu->sgt.sgl, d->sg_pool);
	pdu->sgt.sgl = NULL;
}

/*
 * The data of a read or write: its segments, each classified and mapped
 * for the controller as it is, then described by PRPs or an SGL. Undone
 * by disk_unmap(), whatever this returns.
 */
static blk_status_t disk_map(struct p2pnvme_disk *d, struct request *rq, struct nvme_command *cmd)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	unsigned int nsegs = blk_rq_nr_phys_segments(rq), i;
	struct p2pnvme *c = d->c;
	struct scatterlist *sg;
	struct bio_vec bv;
	int ret;

	if (WARN_ON_ONCE(!nsegs || nsegs > d->max_segs))
		return BLK_STS_IOERR;
	pdu->sgt.sgl = nsegs <= DISK_INLINE_SEGS ? pdu->sg_inline :
		       mempool_alloc(d->sg_pool, GFP_ATOMIC);
	if (!pdu->sgt.sgl)
		return BLK_STS_RESOURCE;
	/* one bvec that holds it all (a 4 KiB read): its entry without the walk */
	bv = req_bvec(rq);
	if (nsegs == 1 && bv.bv_len == blk_rq_payload_bytes(rq)) {
		sg_init_table(pdu->sgt.sgl, 1);
		sg_set_page(pdu->sgt.sgl, bv.bv_page, bv.bv_len, bv.bv_offset);
		pdu->sgt.orig_nents = 1;
	} else {
		sg_init_table(pdu->sgt.sgl, nsegs);
		pdu->sgt.orig_nents = disk_map_sg(rq, pdu->sgt.sgl);
		if (!pdu->sgt.orig_nents)
			return BLK_STS_IOERR;
	}
	for_each_sg(pdu->sgt.sgl, sg, pdu->sgt.orig_nents, i) {
		if (is_pci_p2pdma_page(sg_page(sg)))
			pdu->bytes_p2p += sg->length;
		else
			pdu->bytes_host += sg->length;
	}
	/* placeholder pages (a page frame range per chunk) only while some are held */
	if (unlikely(p2pnvme_shadow_active(c)) && req_op(rq) == REQ_OP_READ) {
		const struct p2pnvme_shadow *s = c->shadow;

		for_each_sg(pdu->sgt.sgl, sg, pdu->sgt.orig_nents, i) {
			unsigned long pfn = page_to_pfn(sg_page(sg)) + (sg->offset >> PAGE_SHIFT);
			unsigned long last = pfn + (offset_in_page(sg->offset) + sg->length - 1) /
						   PAGE_SIZE;

			if (last >= s->lo_pfn && pfn < s->hi_pfn)
				return disk_map_shadow(d, rq, cmd);
		}
	}
	/* per segment: P2PDMA pages by the kernel's verdict, host pages as usual */
	ret = dma_map_sgtable(&c->pdev->dev, &pdu->sgt, rq_dma_dir(rq), disk_dma_attrs(pdu));
	if (ret) {
		if (ret == -EREMOTEIO) {
			disk_stat_add(d, DS_REFUSED, 1);
			return BLK_STS_TARGET;
		}
		return ret == -ENOMEM ? BLK_STS_RESOURCE : BLK_STS_IOERR;
	}
	pdu->mapped = true;
	return disk_describe(d, rq, cmd, pdu->sgt.sgl, "segments", pdu->sgt.nents);
}

/* The command of @rq, its data mapped. */
static blk_status_t disk_setup_cmd(struct p2pnvme_disk *d, struct request *rq,
				   struct nvme_command *cmd)
{
	struct p2pnvme *c = d->c;
	u16 control = 0;
	__le64 slba = cpu_to_le64(blk_rq_pos(rq) >> (c->lba_shift - SECTOR_SHIFT));

	memset(cmd, 0, sizeof(*cmd));
	switch (req_op(rq)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		cmd->rw.opcode = req_op(rq) == REQ_OP_READ ? nvme_cmd_read : nvme_cmd_write;
		cmd->rw.nsid = cpu_to_le32(c->nsid);
		cmd->rw.slba = slba;
		cmd->rw.length = cpu_to_le16((blk_rq_bytes(rq) >> c->lba_shift) - 1);
		if (rq->cmd_flags & REQ_FUA)
			control |= NVME_RW_FUA;
		if (rq->cmd_flags & (REQ_FAILFAST_DEV | REQ_RAHEAD))
			control |= NVME_RW_LR;
		cmd->rw.control = cpu_to_le16(control);
		return disk_map(d, rq, cmd);
	case REQ_OP_FLUSH:
		cmd->common.opcode = nvme_cmd_flush;
		cmd->common.nsid = cpu_to_le32(c->nsid);
		return BLK_STS_OK;
	case REQ_OP_WRITE_ZEROES:
		/* no DEAC: the blocks stay allocated, whatever REQ_NOUNMAP says */
		cmd->write_zeroes.opcode = nvme_cmd_write_zeroes;
		cmd->write_zeroes.nsid = cpu_to_le32(c->nsid);
		cmd->write_zeroes.slba = slba;
		cmd->write_zeroes.length = cpu_to_le16((blk_rq_bytes(rq) >> c->lba_shift) - 1);
		return BLK_STS_OK;
	default:
		return BLK_STS_NOTSUPP;	/* discard is not offered */
	}
}

/* ---- submission ------------------------------------------------------- */

/* Let the controller see the SQ entries so far. Caller holds sq_lock. */
static void disk_ring_locked(struct p2pnvme_queue *q)
{
	lockdep_assert_held(&q->sq_lock);
	if (q->sq_tail == q->sq_db_tail)
		return;
	writel(q->sq_tail, q->sq_db);	/* ordered after the entries */
	q->sq_db_tail = q->sq_tail;
}

static blk_status_t disk_queue_rq(struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	struct p2pnvme_disk *d = hctx->queue->queuedata;
	struct p2pnvme_queue *q = hctx->driver_data;
	struct request *rq = bd->rq;
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	struct nvme_command cmd;
	blk_status_t ret;

	/* unquiesced without queues: the controller is out of service */
	if (unlikely(!READ_ONCE(d->live)))
		return BLK_STS_IOERR;
	if (!(rq->rq_flags & RQF_DONTPREP)) {
		pdu->retries = 0;
		rq->rq_flags |= RQF_DONTPREP;
	}
	pdu->q = q;
	pdu->list = NULL;
	pdu->sgt.sgl = NULL;
	pdu->mapped = false;
	pdu->aborted = false;
	pdu->error = 0;
	pdu->status = 0;
	pdu->bytes_p2p = 0;
	pdu->bytes_host = 0;
	pdu->shadow = false;
	pdu->view = NULL;
	pdu->view_n = 0;
	pdu->nreg = 0;
	ret = disk_setup_cmd(d, rq, &cmd);
	if (ret)
		goto out_unmap;
	pdu->genctr++;
	cmd.common.command_id = rq->tag | (pdu->genctr & 0xf) << DISK_TAG_BITS;
	blk_mq_start_request(rq);
	spin_lock(&q->sq_lock);
	if (unlikely(q->stopped)) {
		spin_unlock(&q->sq_lock);
		ret = BLK_STS_IOERR;
		goto out_unmap;
	}
	memcpy(&q->sq[q->sq_tail], &cmd, sizeof(cmd));
	if (++q->sq_tail == q->depth)
		q->sq_tail = 0;
	if (bd->last)
		disk_ring_locked(q);
	spin_unlock(&q->sq_lock);
	return BLK_STS_OK;

out_unmap:
	disk_unmap(d, rq);
	return ret;
}

/* A dispatch batch ended without a request marked last. */
static void disk_commit_rqs(struct blk_mq_hw_ctx *hctx)
{
	struct p2pnvme_queue *q = hctx->driver_data;

	spin_lock(&q->sq_lock);
	disk_ring_locked(q);
	spin_unlock(&q->sq_lock);
}

/* ---- completion ------------------------------------------------------- */

/* What a failed request returns (nvme core's nvme_error_status(), in short). */
static blk_status_t disk_error_status(const struct disk_pdu *pdu)
{
	if (pdu->error)
		return BLK_STS_IOERR;
	switch (pdu->status & P2PNVME_STATUS_MASK) {
	case NVME_SC_INVALID_OPCODE:
	case NVME_SC_INVALID_FIELD:
		return BLK_STS_NOTSUPP;
	case NVME_SC_LBA_RANGE:
		return BLK_STS_TARGET;
	case NVME_SC_CAP_EXCEEDED:
		return BLK_STS_NOSPC;
	case NVME_SC_WRITE_FAULT:
	case NVME_SC_READ_ERROR:
		return BLK_STS_MEDIUM;
	}
	return BLK_STS_IOERR;
}

/*
 * Is the failed @rq dispatched again? As nvme core: not with Do Not
 * Retry, nor after DISK_RETRIES, nor for a failfast request or a dying
 * queue; and not once the controller is out of service.
 */
static bool disk_retry(struct p2pnvme_disk *d, struct request *rq)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);

	if (pdu->error == -ENODEV || (pdu->status & DISK_STATUS_DNR) || READ_ONCE(d->failed))
		return false;
	if (pdu->retries >= DISK_RETRIES || blk_noretry_request(rq) || blk_queue_dying(rq->q))
		return false;
	pdu->retries++;
	return true;
}

/*
 * A write request from p2pmem succeeded while the file command watches
 * writes (file.c, file_verdict()): each of its bios, merged or split as the
 * block layer made them, credited to the write whose memory it was built
 * on. Before blk_mq_end_request(): the write cannot end, nor stop being
 * watched, before its bios did.
 */
static void disk_credit(struct p2pnvme_disk *d, struct request *rq)
{
	struct bio *bio;

	__rq_for_each_bio(bio, rq)
		p2pnvme_file_credit(d->c, bio->bi_io_vec, bio->bi_iter.bi_size);
}

/* Count a request that succeeded, by its data's path. */
static void disk_count(struct p2pnvme_disk *d, struct request *rq)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	bool write = req_op(rq) == REQ_OP_WRITE;

	switch (req_op(rq)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		if (!pdu->bytes_host)
			disk_stat_add(d, write ? DS_WRITES_P2P : DS_READS_P2P, 1);
		else if (!pdu->bytes_p2p)
			disk_stat_add(d, write ? DS_WRITES_HOST : DS_READS_HOST, 1);
		else
			disk_stat_add(d, write ? DS_WRITES_MIXED : DS_READS_MIXED, 1);
		disk_stat_add(d, DS_BYTES_P2P, pdu->bytes_p2p);
		disk_stat_add(d, DS_BYTES_HOST, pdu->bytes_host);
		if (write && pdu->bytes_p2p && atomic_read(&d->c->file_watched))
			disk_credit(d, rq);
		break;
	case REQ_OP_FLUSH:
		disk_stat_add(d, DS_FLUSHES, 1);
		break;
	case REQ_OP_WRITE_ZEROES:
		disk_stat_add(d, DS_WRITE_ZEROES, 1);
		break;
	default:
		break;
	}
}

/* A request that succeeded, before it ends: its placeholders covered, unmapped, counted. */
static void disk_done_ok(struct p2pnvme_disk *d, struct request *rq)
{
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);

	if (unlikely(pdu->shadow))
		disk_cover(d, rq);
	disk_unmap(d, rq);
	disk_count(d, rq);
}

/*
 * Requests that succeeded, gathered by an interrupt's reap
 * (blk_mq_add_to_batch(), as nvme-pci's): ended together.
 */
static void disk_complete_batch(struct io_comp_batch *iob)
{
	struct request *rq;

	rq_list_for_each(&iob->req_list, rq)
		disk_done_ok(rq->q->queuedata, rq);
	blk_mq_end_request_batch(iob);
}

/* blk-mq's .complete: the command is over (any context). */
static void disk_complete(struct request *rq)
{
	struct p2pnvme_disk *d = rq->q->queuedata;
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);

	if (likely(!pdu->error && !pdu->status)) {
		disk_done_ok(d, rq);
		blk_mq_end_request(rq, BLK_STS_OK);
		return;
	}
	disk_unmap(d, rq);
	if (disk_retry(d, rq)) {
		disk_stat_add(d, DS_RETRIES, 1);
		/* quiesced by a reset: dispatched once it restarts */
		blk_mq_requeue_request(rq, true);
		return;
	}
	disk_stat_add(d, DS_ERRORS, 1);
	if (!(rq->rq_flags & RQF_QUIET))
		dev_err_ratelimited(&d->c->pdev->dev, "%s: op %#x at sector %llu, %u bytes: %s%d, status %#x\n",
				    d->disk->disk_name, req_op(rq), (u64)blk_rq_pos(rq),
				    blk_rq_bytes(rq), pdu->error ? "error " : "",
				    pdu->error, pdu->status);
	blk_mq_end_request(rq, disk_error_status(pdu));
}

/*
 * Reap @q's new completion entries; caller holds its cq_lock. Each request
 * is marked complete here (so that a cancellation skips it); those blk-mq
 * leaves to the caller are gathered in @iob if they succeeded (when there
 * is one), else chained by rq_next, to be completed once the lock is
 * dropped (their completion ends bios, which may submit more).
 */
static struct request *disk_reap_locked(struct p2pnvme_disk *d, struct p2pnvme_queue *q,
					bool *moved, struct io_comp_batch *iob)
{
	struct blk_mq_tags *tags = d->set.tags[q - d->q];
	struct request *done = NULL;

	lockdep_assert_held(&q->cq_lock);
	for (;;) {
		struct nvme_completion *cqe = &q->cq[q->cq_head];
		u16 st = le16_to_cpu(READ_ONCE(cqe->status)), cid;
		struct disk_pdu *pdu;
		struct request *rq;

		if ((st & 1) != q->cq_phase)
			break;
		dma_rmb();	/* the entry after its phase bit */
		cid = READ_ONCE(cqe->command_id);
		if (++q->cq_head == q->depth) {
			q->cq_head = 0;
			q->cq_phase ^= 1;
		}
		*moved = true;
		rq = blk_mq_tag_to_rq(tags, cid & DISK_TAG_MASK);
		pdu = rq ? blk_mq_rq_to_pdu(rq) : NULL;
		if (!pdu || (pdu->genctr & 0xf) != cid >> DISK_TAG_BITS ||
		    blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT) {
			dev_warn_ratelimited(&d->c->pdev->dev, "disk q%u: completion for unknown cid %#x\n",
					     q->qid, cid);
			continue;
		}
		pdu->status = st >> 1;
		if (blk_mq_complete_request_remote(rq))
			continue;
		if (!blk_mq_add_to_batch(rq, iob, pdu->status || pdu->error, disk_complete_batch)) {
			rq->rq_next = done;
			done = rq;
		}
	}
	/* a DEAD controller's registers are not touched again */
	if (*moved && p2pnvme_state(d->c) != P2PNVME_DEAD)
		writel(q->cq_head, q->cq_db);
	return done;
}

static void disk_complete_list(struct request *rq)
{
	while (rq) {
		struct request *next = rq->rq_next;

		disk_complete(rq);
		rq = next;
	}
}

static irqreturn_t disk_irq(int irq, void *data)
{
	struct p2pnvme_queue *q = data;
	DEFINE_IO_COMP_BATCH(iob);
	struct request *done;
	bool moved = false;

	spin_lock(&q->cq_lock);
	done = disk_reap_locked(q->c->disk, q, &moved, &iob);
	spin_unlock(&q->cq_lock);
	/* set by the first request gathered */
	if (iob.complete)
		iob.complete(&iob);
	disk_complete_list(done);
	return moved ? IRQ_HANDLED : IRQ_NONE;
}

/* Reap @q from process context (a timeout, a cancellation). */
static void disk_poll(struct p2pnvme_disk *d, struct p2pnvme_queue *q)
{
	struct request *done;
	unsigned long flags;
	bool moved = false;

	spin_lock_irqsave(&q->cq_lock, flags);
	done = disk_reap_locked(d, q, &moved, NULL);
	spin_unlock_irqrestore(&q->cq_lock, flags);
	disk_complete_list(done);
}

/* ---- the queues' life: stop, cancel, restart -------------------------- */

/*
 * Have the controller end its own commands of the disk's queues, as
 * p2pnvme_delete_io_queues() does for the engine's: every SQ, then every
 * CQ; a controller that is not ready, failed or gone is disabled without.
 */
static void disk_delete_queues(struct p2pnvme_disk *d)
{
	static const u8 ops[] = { nvme_admin_delete_sq, nvme_admin_delete_cq };
	struct p2pnvme *c = d->c;
	u32 csts = readl(c->bar + NVME_REG_CSTS);
	unsigned int i, j;

	if (csts == ~0U || (csts & NVME_CSTS_CFS) || !(csts & NVME_CSTS_RDY))
		return;
	for (j = 0; j < ARRAY_SIZE(ops); j++) {
		for (i = 0; i < d->nr; i++) {
			struct nvme_command cmd = {};
			u16 status = 0;
			int ret;

			cmd.delete_queue.opcode = ops[j];
			cmd.delete_queue.qid = cpu_to_le16(d->q[i].qid);
			ret = p2pnvme_admin_exec_status(c, &cmd, NULL, &status);
			if (ret) {
				pci_dbg(c->pdev, "disk: Delete I/O queue %u (opcode %#x): %d, status %#x\n",
					d->q[i].qid, ops[j], ret, status);
				return;
			}
		}
	}
}

static void disk_stop_locked(struct p2pnvme_disk *d, bool answers)
{
	unsigned int i;

	lockdep_assert_held(&d->lock);
	if (d->removed)
		return;
	if (!d->stopped) {
		disk_quiesce(d);	/* waits for a .queue_rq running */
		d->stopped = true;
	}
	if (!d->live)
		return;
	WRITE_ONCE(d->live, false);
	for (i = 0; i < d->nr; i++) {
		spin_lock(&d->q[i].sq_lock);
		WRITE_ONCE(d->q[i].stopped, true);
		spin_unlock(&d->q[i].sq_lock);
	}
	if (answers)
		disk_delete_queues(d);
}

static bool disk_cancel_rq(struct request *rq, void *data)
{
	struct p2pnvme_disk *d = rq->q->queuedata;
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);

	if (blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT)
		return true;
	pdu->error = *(int *)data;
	pdu->status = NVME_SC_HOST_ABORTED_CMD;
	disk_stat_add(d, DS_CANCELLED, 1);
	blk_mq_complete_request(rq);
	return true;
}

/*
 * The controller cannot complete or DMA any more: what it answered before
 * it stopped completes as answered, the rest with @err.
 */
static void disk_cancel_locked(struct p2pnvme_disk *d, int err)
{
	unsigned int i;

	lockdep_assert_held(&d->lock);
	if (d->removed)
		return;
	for (i = 0; i < d->nr; i++)
		disk_poll(d, &d->q[i]);
	blk_mq_tagset_busy_iter(&d->set, disk_cancel_rq, &err);
	blk_mq_tagset_wait_completed_request(&d->set);
}

/* Create the disk's queue pairs on an enabled controller again. */
static int disk_create_queues(struct p2pnvme_disk *d)
{
	unsigned int i;
	int ret;

	for (i = 0; i < d->nr; i++) {
		ret = p2pnvme_create_io_queue(d->c, &d->q[i]);
		if (ret) {
			pci_err(d->c->pdev, "disk: I/O queue %u not created again (%d)\n",
				d->q[i].qid, ret);
			return ret;
		}
	}
	return 0;
}

/*
 * The end of a stop: @err 0, the queues come back; else every request
 * fails from now on, and with @dead the filesystem is told.
 */
static int disk_restart_locked(struct p2pnvme_disk *d, int err, bool dead)
{
	lockdep_assert_held(&d->lock);
	if (d->removed)
		return err;
	if (!err && !d->failed)
		err = disk_create_queues(d);
	if (err || d->failed) {
		err = err ?: -ENODEV;
		if (!d->failed && dead && d->added)
			schedule_work(&d->dead_work);
		WRITE_ONCE(d->failed, true);
	} else {
		WRITE_ONCE(d->live, true);
	}
	if (d->stopped) {
		d->stopped = false;
		disk_unquiesce(d);
	}
	/* what a reset requeued (a failed disk fails it) */
	blk_mq_kick_requeue_list(d->disk->queue);
	return err;
}

/* Out of service for good, now: the device is gone, or will not be back. */
static void disk_kill_locked(struct p2pnvme_disk *d)
{
	disk_stop_locked(d, false);
	disk_cancel_locked(d, -ENODEV);
	disk_restart_locked(d, -ENODEV, true);
}

static void disk_upper_stop(struct p2pnvme *c, bool answers)
{
	struct p2pnvme_disk *d = c->disk;
	unsigned int noio = memalloc_noio_save();	/* the disk may be what reclaim waits for */

	mutex_lock(&d->lock);
	disk_stop_locked(d, answers);
	mutex_unlock(&d->lock);
	memalloc_noio_restore(noio);
}

static void disk_upper_cancel(struct p2pnvme *c, int err)
{
	struct p2pnvme_disk *d = c->disk;

	mutex_lock(&d->lock);
	disk_cancel_locked(d, err);
	mutex_unlock(&d->lock);
}

static int disk_upper_restart(struct p2pnvme *c, int err)
{
	struct p2pnvme_disk *d = c->disk;
	unsigned int noio = memalloc_noio_save();

	mutex_lock(&d->lock);
	err = disk_restart_locked(d, err, true);
	mutex_unlock(&d->lock);
	memalloc_noio_restore(noio);
	return err;
}

static const struct p2pnvme_upper_ops disk_upper_ops = {
	.stop = disk_upper_stop,
	.cancel = disk_upper_cancel,
	.restart = disk_upper_restart,
};

static void disk_dead_work(struct work_struct *work)
{
	struct p2pnvme_disk *d = container_of(work, struct p2pnvme_disk, dead_work);

	pci_err(d->c->pdev, "%s: the controller is out of service: the disk is dead\n",
		d->disk->disk_name);
	blk_mark_disk_dead(d->disk);
}

/* ---- timeouts --------------------------------------------------------- */

/* Is @rq still the controller's, after whatever just happened? */
static enum blk_eh_timer_return disk_rq_over(struct request *rq)
{
	return blk_mq_rq_state(rq) == MQ_RQ_IN_FLIGHT ? BLK_EH_RESET_TIMER : BLK_EH_DONE;
}

/*
 * No answer in io_timeout_ms; the ladder of the engine's check_timeouts():
 * a controller out of service or surprise-removed fails everything at
 * once; a lost interrupt is no timeout; a controller that failed or went
 * away is reset; the first timeout sends an Abort, the second (or an Abort
 * that fails) resets. A reset, a recovery or a removal cancels what is in
 * flight: until then the timer is started again.
 */
static enum blk_eh_timer_return disk_timeout(struct request *rq)
{
	struct p2pnvme_disk *d = rq->q->queuedata;
	struct disk_pdu *pdu = blk_mq_rq_to_pdu(rq);
	struct p2pnvme_queue *q = pdu->q;
	struct p2pnvme *c = d->c;
	struct nvme_command abort = {};
	u32 csts, res = 1;
	int ret;

	/*
	 * Out of service for good, or surprise-removed (as nvme_timeout()):
	 * nothing can complete or DMA any more, and nobody else may end what
	 * it held: remove() may be waiting in del_gendisk() for it, and no
	 * reset is scheduled for a function whose channel is offline.
	 */
	if (p2pnvme_state(c) == P2PNVME_DEAD || pci_dev_is_disconnected(c->pdev)) {
		mutex_lock(&d->lock);
		disk_kill_locked(d);
		mutex_unlock(&d->lock);
		return disk_rq_over(rq);
	}
	/* the PCI core's error recovery or a removal owns it now */
	if (pci_channel_offline(c->pdev))
		return BLK_EH_RESET_TIMER;
	csts = readl(c->bar + NVME_REG_CSTS);
	if (csts == ~0U || (csts & NVME_CSTS_CFS)) {
		dev_warn_ratelimited(&c->pdev->dev, "%s: timeout, the controller %s: reset\n",
				     d->disk->disk_name,
				     csts == ~0U ? "is gone" : "failed (CSTS.CFS)");
		c->escalate(c);
		return BLK_EH_RESET_TIMER;
	}
	disk_poll(d, q);
	if (blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT) {
		dev_warn_ratelimited(&c->pdev->dev, "%s q%u: a completion found without an interrupt\n",
				     d->disk->disk_name, q->qid);
		return BLK_EH_DONE;
	}
	if (p2pnvme_state(c) != P2PNVME_LIVE)
		return BLK_EH_RESET_TIMER;
	disk_stat_add(d, DS_TIMEOUTS, 1);
	if (pdu->aborted) {
		dev_warn(&c->pdev->dev, "%s q%u tag %#x: no answer after an Abort: reset\n",
			 d->disk->disk_name, q->qid, rq->tag);
		c->escalate(c);
		return BLK_EH_RESET_TIMER;
	}
	if (atomic_inc_return(&c->aborts) > c->acl) {
		atomic_dec(&c->aborts);
		return BLK_EH_RESET_TIMER;	/* the next timeout tries again */
	}
	pdu->aborted = true;
	abort.abort.opcode = nvme_admin_abort_cmd;
	abort.abort.sqid = cpu_to_le16(q->qid);
	abort.abort.cid = rq->tag | (pdu->genctr & 0xf) << DISK_TAG_BITS;
	dev_warn(&c->pdev->dev, "%s q%u cid %#x timed out after %u ms, aborting\n",
		 d->disk->disk_name, q->qid, abort.abort.cid, READ_ONCE(p2pnvme_io_timeout_ms));
	/* the admin queue is in service only inside the I/O guard */
	if (p2pnvme_io_tryenter(c)) {
		ret = p2pnvme_admin_exec(c, &abort, &res);
		p2pnvme_io_exit(c);
		if (ret)
			c->escalate(c);		/* the Abort itself went unanswered */
		else if (!(res & 1))
			disk_stat_add(d, DS_ABORTS, 1);
	}
	atomic_dec(&c->aborts);
	return BLK_EH_RESET_TIMER;
}

static int disk_init_hctx(struct blk_mq_hw_ctx *hctx, void *data, unsigned int i)
{
	struct p2pnvme_disk *d = data;

	hctx->driver_data = &d->q[i];
	return 0;
}

/* Each CPU to the queue whose interrupt it takes, as the engine's map. */
static void disk_map_queues(struct blk_mq_tag_set *set)
{
	struct blk_mq_queue_map *map = &set->map[HCTX_TYPE_DEFAULT];
	struct p2pnvme_disk *d = set->driver_data;
	const struct cpumask *mask;
	unsigned int i, cpu;

	for (i = 0; i < map->nr_queues; i++) {
		mask = pci_irq_get_affinity(d->c->pdev, d->q[i].qid);
		if (!mask) {
			blk_mq_map_queues(map);
			return;
		}
		for_each_cpu(cpu, mask)
			map->mq_map[cpu] = map->queue_offset + i;
	}
}

static const struct blk_mq_ops disk_mq_ops = {
	.queue_rq	= disk_queue_rq,
	.commit_rqs	= disk_commit_rqs,
	.complete	= disk_complete,
	.timeout	= disk_timeout,
	.init_hctx	= disk_init_hctx,
	.map_queues	= disk_map_queues,
};

static const struct block_device_operations disk_fops = {
	.owner		= THIS_MODULE,
};

/* ---- sysfs: /sys/class/p2pnvme/p2pnvmeN/disk/<counter> ---------------- */

static ssize_t disk_stat_show(struct device *dev, struct device_attribute *attr, char *buf);

#define DISK_STAT_ATTR(name)	__ATTR(name, 0444, disk_stat_show, NULL)

/* in enum disk_stat order: the index of an attribute is its counter */
static struct device_attribute disk_stat_attrs[DS_NR] = {
	DISK_STAT_ATTR(reads_p2p), DISK_STAT_ATTR(reads_host), DISK_STAT_ATTR(reads_mixed),
	DISK_STAT_ATTR(writes_p2p), DISK_STAT_ATTR(writes_host), DISK_STAT_ATTR(writes_mixed),
	DISK_STAT_ATTR(bytes_p2p), DISK_STAT_ATTR(bytes_host), DISK_STAT_ATTR(flushes),
	DISK_STAT_ATTR(write_zeroes), DISK_STAT_ATTR(refused), DISK_STAT_ATTR(errors),
	DISK_STAT_ATTR(retries), DISK_STAT_ATTR(timeouts), DISK_STAT_ATTR(aborts),
	DISK_STAT_ATTR(cancelled),
};

/* the group is removed before the disk goes: c->disk is there */
static ssize_t disk_stat_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);
	unsigned int cpu, i = attr - disk_stat_attrs;
	u64 sum = 0;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(c->disk->stats, cpu)->v[i];
	return sysfs_emit(buf, "%llu\n", sum);
}

static struct attribute *disk_attrs[] = {
	&disk_stat_attrs[DS_READS_P2P].attr,
	&disk_stat_attrs[DS_READS_HOST].attr,
	&disk_stat_attrs[DS_READS_MIXED].attr,
	&disk_stat_attrs[DS_WRITES_P2P].attr,
	&disk_stat_attrs[DS_WRITES_HOST].attr,
	&disk_stat_attrs[DS_WRITES_MIXED].attr,
	&disk_stat_attrs[DS_BYTES_P2P].attr,
	&disk_stat_attrs[DS_BYTES_HOST].attr,
	&disk_stat_attrs[DS_FLUSHES].attr,
	&disk_stat_attrs[DS_WRITE_ZEROES].attr,
	&disk_stat_attrs[DS_REFUSED].attr,
	&disk_stat_attrs[DS_ERRORS].attr,
	&disk_stat_attrs[DS_RETRIES].attr,
	&disk_stat_attrs[DS_TIMEOUTS].attr,
	&disk_stat_attrs[DS_ABORTS].attr,
	&disk_stat_attrs[DS_CANCELLED].attr,
	NULL,
};

static_assert(ARRAY_SIZE(disk_attrs) == DS_NR + 1);

static const struct attribute_group disk_group = {
	.name = "disk",
	.attrs = disk_attrs,
};

/* ---- probe and removal ------------------------------------------------ */

/* Queue pair @i (qid and vector after the engine's) on the controller. */
static int disk_queue_create(struct p2pnvme_disk *d, unsigned int i)
{
	struct p2pnvme *c = d->c;
	struct device *dev = &c->pdev->dev;
	struct p2pnvme_queue *q = &d->q[i];
	u16 qid = c->nr_ioq + 1 + i;
	const char *name;
	int ret;

	ret = p2pnvme_queue_alloc(c, q, qid, c->ioq[0].depth);
	if (ret)
		return ret;
	name = devm_kasprintf(dev, GFP_KERNEL, "p2pnvme:%s:disk%u", pci_name(c->pdev), qid);
	if (!name)
		return -ENOMEM;
	ret = devm_request_irq(dev, pci_irq_vector(c->pdev, qid), disk_irq, 0, name, q);
	if (ret)
		return ret;
	q->vector = qid;	/* the vector of the same number, for the CQ */
	ret = p2pnvme_create_io_queue(c, q);
	if (ret) {
		devm_free_irq(dev, pci_irq_vector(c->pdev, qid), q);
		q->vector = -1;
	}
	return ret;
}

static void disk_free_irqs(struct p2pnvme_disk *d)
{
	struct device *dev = &d->c->pdev->dev;
	unsigned int i;

	for (i = 0; i < d->nr; i++) {
		if (d->q[i].vector >= 0)
			devm_free_irq(dev, pci_irq_vector(d->c->pdev, d->q[i].vector), &d->q[i]);
		d->q[i].vector = -1;
	}
}

/* Identify Controller's VWC and ONCS: the write cache, Write Zeroes. */
static int disk_identify(struct p2pnvme_disk *d)
{
	struct p2pnvme *c = d->c;
	struct nvme_id_ctrl *id = c->id_buf;
	struct nvme_command cmd = {};
	int ret;

	memset(c->id_buf, 0, PAGE_SIZE);
	cmd.identify.opcode = nvme_admin_identify;
	cmd.identify.cns = NVME_ID_CNS_CTRL;
	cmd.identify.dptr.prp1 = cpu_to_le64(c->id_dma);
	ret = p2pnvme_admin_exec(c, &cmd, NULL);
	if (ret)
		return ret;
	d->vwc = id->vwc & NVME_CTRL_VWC_PRESENT;
	d->wz = le16_to_cpu(id->oncs) & NVME_CTRL_ONCS_WRITE_ZEROES;
	return 0;
}

/* The gendisk with nvme core's limits (queue_limits, or 6.1's setters). */
static struct gendisk *disk_alloc(struct p2pnvme_disk *d)
{
	struct p2pnvme *c = d->c;
	u32 lbs = 1U << c->lba_shift;
	u32 max_bytes = min_t(u32, c->max_xfer, c->max_seg);
	struct gendisk *disk;
#ifdef HAVE_BLK_MQ_ALLOC_DISK_LIMITS
	struct queue_limits lim = {
		.logical_block_size = lbs,
		.physical_block_size = lbs,
		.io_min = lbs,
		.max_hw_sectors = max_bytes >> SECTOR_SHIFT,
		.max_segments = d->max_segs,
		.virt_boundary_mask = P2PNVME_CTRL_PAGE - 1,
		.dma_alignment = 3,
		.max_write_zeroes_sectors = d->wz ? max_bytes >> SECTOR_SHIFT : 0,
	};

#ifdef HAVE_BLK_FEAT_PCI_P2PDMA
	lim.features = BLK_FEAT_PCI_P2PDMA;
	if (d->vwc)
		lim.features |= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA;
#endif
	disk = blk_mq_alloc_disk(&d->set, &lim, d);
#else
	disk = blk_mq_alloc_disk(&d->set, d);
	if (!IS_ERR(disk)) {
		struct request_queue *q = disk->queue;

		blk_queue_logical_block_size(q, lbs);
		blk_queue_physical_block_size(q, lbs);
		blk_queue_io_min(q, lbs);
		blk_queue_max_hw_sectors(q, max_bytes >> SECTOR_SHIFT);
		blk_queue_max_segments(q, d->max_segs);
		blk_queue_virt_boundary(q, P2PNVME_CTRL_PAGE - 1);
		blk_queue_dma_alignment(q, 3);
		blk_queue_max_write_zeroes_sectors(q, d->wz ? max_bytes >> SECTOR_SHIFT : 0);
	}
#endif
	if (IS_ERR(disk))
		return disk;
#ifndef HAVE_BLK_FEAT_PCI_P2PDMA
	/* before 6.11: queue flags, and the write cache by its own call */
	blk_queue_flag_set(QUEUE_FLAG_NONROT, disk->queue);
	blk_queue_flag_set(QUEUE_FLAG_PCI_P2PDMA, disk->queue);
	blk_queue_write_cache(disk->queue, d->vwc, d->vwc);
#endif
	disk->fops = &disk_fops;
	disk->private_data = d;
	snprintf(disk->disk_name, DISK_NAME_LEN, "p2pnvme%dn%u", c->minor, c->nsid);
	set_capacity(disk, c->nlb << (c->lba_shift - SECTOR_SHIFT));
	return disk;
}

/**
 * p2pnvme_disk_init - build the disk, when probe made room for its queues
 * @c: the controller, enabled, its engine queues created, not LIVE yet
 *     (nothing else uses its admin queue or Identify buffer)
 *
 * The tag set, the gendisk and the queue pairs with their vectors; the
 * disk is added once the controller is LIVE (p2pnvme_disk_add()). A
 * failure is said and leaves the controller without a disk; queue pairs
 * created on the controller before it stay there, empty and unused.
 */
void p2pnvme_disk_init(struct p2pnvme *c)
{
	u32 max_bytes = min_t(u32, c->max_xfer, c->max_seg);
	struct p2pnvme_disk *d;
	unsigned int i;
	int ret = -ENOMEM;

	if (!c->nr_diskq) {
		pci_warn(c->pdev, "no disk: %s\n", c->polled ?
			 "no interrupts for its queues (poll=1 or no MSI-X)" :
			 "the controller or the platform did not grant its queues and vectors");
		return;
	}
	d = kzalloc(struct_size(d, q, c->nr_diskq), GFP_KERNEL);
	if (!d)
		goto fail;
	d->nr = c->nr_diskq;
	d->c = c;
	mutex_init(&d->lock);
	INIT_WORK(&d->dead_work, disk_dead_work);
	for (i = 0; i < d->nr; i++)
		d->q[i].vector = -1;
	/* nvme_max_drv_segments(): the virt boundary makes each a page at most */
	d->max_segs = max_bytes / P2PNVME_CTRL_PAGE + 1;
	ret = disk_identify(d);
	if (ret)
		goto err_free;
	ret = -ENOMEM;
	d->stats = alloc_percpu(struct disk_stats);
	if (!d->stats)
		goto err_free;
	d->sg_pool = mempool_create_kmalloc_pool(1, d->max_segs * sizeof(struct scatterlist));
	if (!d->sg_pool)
		goto err_percpu;
	d->set.ops = &disk_mq_ops;
	d->set.nr_hw_queues = d->nr;
	d->set.nr_maps = 1;
	d->set.queue_depth = c->ioq[0].depth - 1;
	d->set.cmd_size = sizeof(struct disk_pdu);
	d->set.numa_node = dev_to_node(&c->pdev->dev);
	d->set.timeout = p2pnvme_io_timeout();
	d->set.flags = DISK_SET_FLAGS;
	d->set.driver_data = d;
	ret = blk_mq_alloc_tag_set(&d->set);
	if (ret)
		goto err_pool;
	d->disk = disk_alloc(d);
	if (IS_ERR(d->disk)) {
		ret = PTR_ERR(d->disk);
		goto err_tag_set;
	}
	/* before any vector can fire: the handler finds @d through @c */
	c->disk = d;
	for (i = 0; i < d->nr; i++) {
		ret = disk_queue_create(d, i);
		if (ret)
			goto err_irqs;
	}
	d->live = true;
	c->upper = &disk_upper_ops;
	return;

err_irqs:
	disk_free_irqs(d);
	c->disk = NULL;
	put_disk(d->disk);
err_tag_set:
	blk_mq_free_tag_set(&d->set);
err_pool:
	mempool_destroy(d->sg_pool);
err_percpu:
	free_percpu(d->stats);
err_free:
	kfree(d);
fail:
	pci_warn(c->pdev, "no disk (%d)\n", ret);
}

/**
 * p2pnvme_disk_add - make the disk visible, /dev/p2pnvme<N>n<nsid>
 * @c: the controller, LIVE (the partition scan reads it)
 *
 * From here on the LBA paths of the char device need CAP_SYS_RAWIO, and
 * their writes wait for nobody to hold the disk (p2pnvme_disk_claimed()).
 * A failure is said; the controller goes on without a disk.
 */
void p2pnvme_disk_add(struct p2pnvme *c)
{
	struct p2pnvme_disk *d = c->disk;
	int ret;

	if (!d)
		return;
	/* the rules before anyone can open the disk */
	rcu_assign_pointer(c->disk_bdev, d->disk->part0);
	WRITE_ONCE(c->disk_rules, true);
	ret = device_add_disk(c->dev, d->disk, NULL);
	if (ret) {
		RCU_INIT_POINTER(c->disk_bdev, NULL);
		WRITE_ONCE(c->disk_rules, false);
		pci_warn(c->pdev, "no disk: device_add_disk() said %d\n", ret);
		return;
	}
	d->added = true;
	if (sysfs_create_group(&c->dev->kobj, &disk_group))
		pci_warn(c->pdev, "%s: no counters in sysfs\n", d->disk->disk_name);
	pci_info(c->pdev, "%s: %llu sectors of %u B, %u queues of %u, write cache %s, write zeroes %s\n",
		 d->disk->disk_name, (u64)get_capacity(d->disk), 1U << c->lba_shift, d->nr,
		 d->set.queue_depth, d->vwc ? "on" : "off", d->wz ? "on" : "off");
}

/**
 * p2pnvme_disk_remove - take the disk away, before the controller goes
 * @c: the controller, in service or not; remove() holds the device lock
 *     (no PCI error or reset callback meanwhile)
 *
 * del_gendisk() first: with a controller that still answers, the
 * filesystem syncs and shuts down, and what is in flight completes; then
 * every new request fails with -EIO. A controller that is gone, or that a
 * PCI error recovery holds stopped (which will not resume it now), is
 * killed first: everything in flight fails at once, and del_gendisk()
 * waits for nothing.
 */
void p2pnvme_disk_remove(struct p2pnvme *c)
{
	struct p2pnvme_disk *d = c->disk;

	if (!d)
		return;
	if (d->added)
		sysfs_remove_group(&c->dev->kobj, &disk_group);
	mutex_lock(&d->lock);
	if (!pci_device_is_present(c->pdev) || p2pnvme_state(c) == P2PNVME_RECOVERING)
		disk_kill_locked(d);
	mutex_unlock(&d->lock);
	flush_work(&d->dead_work);
	if (d->added)
		del_gendisk(d->disk);
	mutex_lock(&d->lock);
	d->removed = true;
	mutex_unlock(&d->lock);
	RCU_INIT_POINTER(c->disk_bdev, NULL);
}

static bool disk_count_inflight(struct request *rq, void *data)
{
	if (blk_mq_rq_state(rq) == MQ_RQ_IN_FLIGHT)
		(*(unsigned int *)data)++;
	return true;
}

/* Requests the controller holds now (dispatched, not completed). */
static unsigned int disk_inflight(struct p2pnvme_disk *d)
{
	unsigned int n = 0;

	blk_mq_tagset_busy_iter(&d->set, disk_count_inflight, &n);
	return n;
}

/**
 * p2pnvme_disk_quiesce - stop the disk for a shutdown (reboot, kexec)
 * @c: the controller, DELETING, its admin queue still in service
 *
 * Nothing more is dispatched; what the controller holds gets up to
 * io_timeout_ms to complete, as nvme_dev_disable() gives it at a shutdown
 * (deleting a queue aborts its commands: a write in flight would end
 * half done); then the disk's queues are deleted on the controller, which
 * ends what is left. p2pnvme_disk_fail() ends the rest once the
 * controller is shut down.
 */
void p2pnvme_disk_quiesce(struct p2pnvme *c)
{
	unsigned long deadline = jiffies + p2pnvme_io_timeout();
	struct p2pnvme_disk *d = c->disk;
	unsigned int noio;

	if (!d)
		return;
	noio = memalloc_noio_save();
	mutex_lock(&d->lock);
	if (!d->removed && !d->stopped) {
		disk_quiesce(d);	/* waits for a .queue_rq running */
		d->stopped = true;
	}
	mutex_unlock(&d->lock);
	/* their interrupts still come: completions end, errors are requeued */
	while (READ_ONCE(d->live) && disk_inflight(d) && !p2pnvme_ctrl_gone(c) &&
	       time_before(jiffies, deadline))
		msleep(20);
	memalloc_noio_restore(noio);
	disk_upper_stop(c, true);
}

/**
 * p2pnvme_disk_fail - fail everything from now on (shutdown)
 * @c: the controller, shut down
 *
 * What is in flight fails (-EIO), and every later request without
 * reaching the controller; the disk is not marked dead.
 */
void p2pnvme_disk_fail(struct p2pnvme *c)
{
	struct p2pnvme_disk *d = c->disk;

	if (!d)
		return;
	mutex_lock(&d->lock);
	disk_stop_locked(d, false);
	disk_cancel_locked(d, -ENODEV);
	disk_restart_locked(d, -ENODEV, false);
	mutex_unlock(&d->lock);
}

/**
 * p2pnvme_disk_free - free what is left of the disk
 * @c: the controller, DEAD: no reset, recovery or hook runs any more;
 *     p2pnvme_disk_remove() was called
 *
 * The vectors (waiting for a handler running), then the gendisk (an
 * opener of the block device may keep it a while: every request fails),
 * then the tag set.
 */
void p2pnvme_disk_free(struct p2pnvme *c)
{
	struct p2pnvme_disk *d = c->disk;

	if (!d)
		return;
	disk_free_irqs(d);
	cancel_work_sync(&d->dead_work);
	c->upper = NULL;
	c->disk = NULL;
	put_disk(d->disk);
	blk_mq_free_tag_set(&d->set);
	mempool_destroy(d->sg_pool);
	free_percpu(d->stats);
	mutex_destroy(&d->lock);
	kfree(d);
}
