/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: registered buffers and dma-buf import (layer 4) */
#ifndef P2PNVME_REG_H
#define P2PNVME_REG_H

#include <linux/dma-buf.h>

#include "internal.h"

/* what a registered buffer is (struct p2pnvme_reg.kind) */
enum p2pnvme_reg_kind {
	P2PNVME_REG_HOST,	/* pinned host pages, mapped by us */
	P2PNVME_REG_DMABUF,	/* an imported dma-buf, mapped by its exporter */
};

/**
 * struct p2pnvme_reg - a registered buffer (P2PNVME_IOC_BUF_REGISTER)
 * @kref: held by the file's table while registered and by each request
 *	  that names it; the last put tears it down (process context)
 * @c: the controller (alive: the file that owns the buffer holds it)
 * @node: on @c->reg_list (@c->reg_lock)
 * @kind: enum p2pnvme_reg_kind
 * @writable: the controller may write into it (reads of the namespace)
 * @len: bytes a transfer may address, from offset 0
 * @start: where byte 0 is in the mapping (the dma-buf offset; 0 for host)
 * @busy: requests whose commands may be at the controller now (armed)
 * @disk_busy: dma-buf: requests of the disk whose data pointers hold this
 *	       mapping's bus addresses for placeholder pages (shadow.c), from
 *	       their .queue_rq to their completion (p2pnvme_reg_disk_arm());
 *	       an invalidation waits for none to be left, bounded
 *	       (reg_disk_drain()): the file command publishes no fence
 * @revoked: no new commands (the exporter's invalidation, or removal):
 *	     later transfers fail with -ENODEV
 * @stale: dma-buf: the exporter moved it (invalidation): no new commands
 *	   until p2pnvme_reg_get() maps it again (set under the dma-buf's
 *	   reservation lock, cleared under @c->reg_lock and it)
 * @wq: woken when @busy drops to 0 after @revoked or @stale, and when a
 *	remap clears @stale
 * @settle: dma-buf: unmaps the mapping an invalidation left to the
 *	    requests busy on it then, once the last of them is idle
 *	    (reg_settle())
 * @pages: host: the pinned pages
 * @nr_pages: host: how many
 * @mm: host: the mm charged for them (RLIMIT_MEMLOCK), with mmgrab()
 * @sgt: host: their table, DMA-mapped while @mapped
 * @mapped: host: @sgt is mapped (@c->reg_lock once listed)
 * @need_sync: host: the DMA layer syncs this mapping (swiotlb, a
 *	       non-coherent device): each transfer syncs its range
 * @bounced: host: bytes of the mapping held in swiotlb's bounce slots,
 *	     counted in @c->reg_bounced while mapped
 * @dmabuf: dma-buf: the buffer, with a reference, until the buffer is
 *	    freed (unregistered or its file closed) or revoked for good (the
 *	    unbind of the function whose BAR it is in, the controller's
 *	    removal: reg_drop_dmabuf()); NULL from then on. Written under
 *	    @c->reg_lock and @dmabuf_lock; read under either, or with the
 *	    attachment there (@c->reg_lock), or through
 *	    p2pnvme_reg_dmabuf_get() by a request that may race the revoke
 * @dmabuf_lock: protects @dmabuf for p2pnvme_reg_dmabuf_get()
 * @dropped: dma-buf: the reference a revoke took from @dmabuf, put by
 *	     @drop (a work item: the unbinding task's own fput would wait for
 *	     its return to userspace, after a remove that waits for it)
 * @drop: puts @dropped
 * @attach: dma-buf: our dynamic attachment (@c->reg_lock once listed)
 * @dsgt: dma-buf: the exporter's mapping for the controller; NULL once
 *	  unmapped: at the invalidation when nothing is busy on it, else
 *	  when the last busy request is idle (@settle), or at the remap (the
 *	  dma-buf's reservation lock)
 * @host: dma-buf: @dsgt is host memory, not a PCI device's BAR
 *	  (p2pnvme_dmabuf_in_host(), at each mapping; never a BAR the kernel's
 *	  P2PDMA verdict refuses: such a mapping is refused and undone)
 * @coherent: dma-buf: with @host, @dsgt is device memory the CPU reaches
 *	      coherently (p2pnvme_dmabuf_in_host(); written with @host)
 * @owner: dma-buf: the PCI name of the function whose BAR @dsgt is in, or
 *	   "" (written with @host; read by armed requests, debugfs under
 *	   @c->reg_lock)
 * @require_p2p: P2PNVME_BUF_F_REQUIRE_P2P: every transfer refuses host memory
 * @nseg: DMA segments of the mapping, indexed in @seg and @seg_pos
 * @seg: each segment's scatterlist entry
 * @seg_pos: each segment's byte position in the mapping, ascending
 * @rcu: the table's lookups are RCU: the memory goes after a grace period
 * @serial: this registration's number, never reused (its id is): an io_uring
 *	    request issued again names the registration it was bound to
 * @contig: the registered range is one DMA segment of the mapping (a
 *	    BAR's, as most exporters of device memory map it): a command's
 *	    list blocks can be counted without the segments
 *	    (p2pnvme_reg_lists()); written by reg_index()
 * @contig_dma: then, the bus address of byte 0 of the range
 * @gen: the mapping's generation, from 1: bumped (a release, after
 *	 @contig and @contig_dma) by each remap that indexed a new mapping,
 *	 before it clears @stale
 * @file_reach: a p2pbar dma-buf: the kernel's P2PDMA verdict between its
 *	 provider and the controller, taken by the file command's first
 *	 transfer through its pages and kept (0: not taken yet; 1: reachable;
 *	 else -EREMOTEIO): a p2pbar dma-buf stays in one BAR for life, and
 *	 the verdict costs a walk of the topology (written once or more with
 *	 the same value, without a lock)
 * @file_p2pbar: a dma-buf: whether p2pbar exported it (p2pbar_dmabuf_ops_of(),
 *	 a look at its exporter's name), taken by the file command's first
 *	 transfer and kept as @file_reach is (0: not taken yet; 1: p2pbar's;
 *	 -1: another exporter's): a dma-buf's operations never change
 *
 * A request takes @kref when it names the buffer (p2pnvme_reg_get()) and
 * @busy right before its commands are queued (p2pnvme_reg_arm()), after a
 * dma-buf's fence covering it is in the reservation object; it drops @busy
 * once none of its commands can reach the controller any more (and ends
 * its share of the fence), and @kref when it is released. An invalidation
 * never waits: the exporter waits for the fences of the requests busy on
 * the mapping, which stays until the last of them is idle; a remap waits
 * for them (no lock held) before it replaces the mapping.
 */
struct p2pnvme_reg {
	struct kref kref;
	struct p2pnvme *c;
	struct list_head node;
	u8 kind;
	bool writable;
	u64 len;
	u64 start;
	atomic_t busy;
	atomic_t disk_busy;
	bool revoked;
	bool stale;
	wait_queue_head_t wq;
	struct work_struct settle;
	struct page **pages;
	unsigned int nr_pages;
	struct mm_struct *mm;
	struct sg_table sgt;
	bool mapped;
	bool need_sync;
	u64 bounced;
	struct dma_buf *dmabuf;
	spinlock_t dmabuf_lock;	/* see above */
	struct dma_buf *dropped;
	struct work_struct drop;
	struct dma_buf_attachment *attach;
	struct sg_table *dsgt;
	bool host;
	bool coherent;
	char owner[P2PNVME_OWNER_LEN];
	bool require_p2p;
	unsigned int nseg;
	struct scatterlist **seg;
	u64 *seg_pos;
	struct rcu_head rcu;
	u64 serial;
	bool contig;
	dma_addr_t contig_dma;
	unsigned long gen;
	int file_reach;
	int file_p2pbar;
};

/**
 * struct p2pnvme_fence - p2pnvme's fence in a dma-buf's reservation
 *	object, for the transfers into or out of it that it covers: a batch
 *	entry's, or registered dma-buf transfers of one io_uring submission
 *	batch (struct p2pnvme_fence_slot); it may outlive them and the
 *	controller (and before 7.x holds the module: see fence_release())
 * @base: the fence
 * @lock: its lock
 * @dmabuf: a registered dma-buf's fence in a batch: that dma-buf, with a
 *	    reference, while p2pnvme_dmabuf_fence() publishes the fence in it
 *	    (a revoke may drop the registration's own reference meanwhile);
 *	    else NULL
 * @pending: transfers it covers that have not ended; it signals when the
 *	     last one ends (p2pnvme_fence_end()), and is joined by no other
 *	     from then on. Holds one reference of @base for them all, which
 *	     the last one puts
 * @error: the first error of those transfers (a real one over a
 *	   cancellation), set on the fence when it signals; 0 if none
 */
struct p2pnvme_fence {
	struct dma_fence base;
	spinlock_t lock;	/* of @base */
	struct dma_buf *dmabuf;
	atomic_t pending;
	int error;
};

/* transfers one published fence covers at most (p2pnvme_fence_join()) */
#define P2PNVME_FENCE_JOINS	64

/**
 * struct p2pnvme_fence_slot - the last fence an io_uring submission batch
 *	published for a registered dma-buf, which the batch's later
 *	transfers of the same registration join while it is pending
 *	(p2pnvme_fence_join()); the submitter's alone (its block plug's)
 * @fence: that fence, with a reference, or NULL
 * @serial: the registration it was published for (struct p2pnvme_reg)
 * @joined: transfers it covers, its publisher's included
 */
struct p2pnvme_fence_slot {
	struct p2pnvme_fence *fence;
	u64 serial;
	unsigned int joined;
};

/**
 * p2pnvme_reg_dmabuf_get - a registered buffer's dma-buf, with a reference
 * @b: the buffer
 *
 * Return: the dma-buf (dma_buf_put() it), or NULL when the registration
 * was revoked for good and let it go (its requests fail with -ENODEV).
 */
static inline struct dma_buf *p2pnvme_reg_dmabuf_get(struct p2pnvme_reg *b)
{
	struct dma_buf *dmabuf;

	spin_lock(&b->dmabuf_lock);
	dmabuf = b->dmabuf;
	if (dmabuf)
		get_dma_buf(dmabuf);
	spin_unlock(&b->dmabuf_lock);
	return dmabuf;
}

/* reg.c: registered buffers */
void p2pnvme_reg_init(struct p2pnvme *c);
void p2pnvme_reg_exit(struct p2pnvme *c);
long p2pnvme_ioc_buf_register(struct p2pnvme_file *f, unsigned long uarg);
long p2pnvme_ioc_buf_unregister(struct p2pnvme_file *f, unsigned long uarg);
void p2pnvme_reg_file_release(struct p2pnvme_file *f);
void p2pnvme_reg_remove(struct p2pnvme *c);
void p2pnvme_reg_watch(struct p2pnvme *c);
void p2pnvme_reg_unwatch(struct p2pnvme *c);
bool p2pnvme_reg_refuses(struct p2pnvme_req *r);
u32 p2pnvme_reg_path(const struct p2pnvme_reg *b);
struct seq_file;
int p2pnvme_reg_show(struct seq_file *s, void *unused);
int p2pnvme_reg_get(struct p2pnvme_file *f, struct p2pnvme_req *r);
int p2pnvme_reg_arm(struct p2pnvme_req *r);
void p2pnvme_reg_idle(struct p2pnvme_req *r);
bool p2pnvme_reg_invalidated(struct p2pnvme_reg *b);
void p2pnvme_reg_put(struct p2pnvme_req *r);
struct p2pnvme_reg *p2pnvme_reg_find(struct p2pnvme_file *f, u32 id);
void p2pnvme_reg_release(struct p2pnvme_reg *b);
void p2pnvme_reg_cursor(const struct p2pnvme_req *r, struct p2pnvme_cursor *cur);
int p2pnvme_reg_ready(struct p2pnvme_reg *b);
int p2pnvme_reg_disk_arm(struct p2pnvme_reg *b);
void p2pnvme_reg_disk_idle(struct p2pnvme_reg *b);
dma_addr_t p2pnvme_reg_bus(const struct p2pnvme_reg *b, u64 pos, u64 *room);
unsigned int p2pnvme_reg_lists(struct p2pnvme_req *r, u32 max_xfer);
void p2pnvme_reg_sync_range(struct p2pnvme *c, struct p2pnvme_req *r, bool for_device);

/**
 * p2pnvme_reg_sync - hand a registered host buffer's range to the
 *	controller (before the commands) or back to the CPU (after a read)
 * @c: the controller
 * @r: the request
 * @for_device: which way
 *
 * The buffer is mapped without CPU syncs once; each transfer syncs just
 * its bytes when the mapping needs it at all (a copy under swiotlb; each
 * DMA segment is then one physical run, see reg_host()). A dma-buf needs
 * none (registration refuses one that would). Inline: most transfers
 * have nothing to sync, and test only that, twice each.
 */
static inline void p2pnvme_reg_sync(struct p2pnvme *c, struct p2pnvme_req *r, bool for_device)
{
	if (r->reg->kind == P2PNVME_REG_HOST && r->reg->need_sync)
		p2pnvme_reg_sync_range(c, r, for_device);
}

/*
 * An exporter's errno, for userspace: NVIDIA's attach refuses with the
 * kernel's own -ENOTSUPP (524), which no program can name; it is said as
 * -EOPNOTSUPP, the errno of an exporter that does not take this importer.
 */
static inline int p2pnvme_dmabuf_errno(int ret)
{
	return ret == -ENOTSUPP ? -EOPNOTSUPP : ret;
}

/* dmabuf.c: the importer; without dma-buf support such requests are refused */
#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
void p2pnvme_dmabuf_note(void);
int p2pnvme_dmabuf_attach(struct p2pnvme *c, struct p2pnvme_req *reqs, unsigned int i);
int p2pnvme_dmabuf_map(struct p2pnvme *c, struct p2pnvme_req *r);
int p2pnvme_dmabuf_map_error(struct p2pnvme *c, int ret, bool registered);
bool p2pnvme_dmabuf_in_host(struct p2pnvme *c, struct sg_table *sgt, char *owner,
			    bool *coherent, bool *orphan, bool *unreachable);
void p2pnvme_dmabuf_unreachable(struct p2pnvme *c, const char *owner);
void p2pnvme_dmabuf_coherent_refused(struct p2pnvme *c);
void p2pnvme_dmabuf_forget(struct p2pnvme *c);
int p2pnvme_dmabuf_fence(struct p2pnvme *c, struct p2pnvme_req *reqs, unsigned int nr);
struct dma_resv;
int p2pnvme_dmabuf_fence_reg(struct p2pnvme_req *r,
			     struct p2pnvme_fence_slot *(*batch)(struct p2pnvme_queue *q));
struct p2pnvme_fence *p2pnvme_fence_alloc(void);
int p2pnvme_fence_publish(struct dma_resv *resv, struct p2pnvme_fence *f);
bool p2pnvme_fence_join(struct p2pnvme_fence_slot *slot, u64 serial, struct p2pnvme_fence **out);
void p2pnvme_fence_slot_set(struct p2pnvme_fence_slot *slot, struct p2pnvme_fence *f,
			    u64 serial);
void p2pnvme_fence_slot_release(struct p2pnvme_fence_slot *slot);
void p2pnvme_fence_end(struct p2pnvme_fence *f, int err);
bool p2pnvme_dmabuf_signalling(void);
void p2pnvme_dmabuf_signalled(bool cookie);
void p2pnvme_dmabuf_signal_req(struct p2pnvme_req *r, int unrun);
void p2pnvme_dmabuf_signal(struct p2pnvme_req *reqs, unsigned int nr, bool cookie, int unrun);
void p2pnvme_dmabuf_fence_free(struct p2pnvme_req *r);
void p2pnvme_dmabuf_unmap(struct p2pnvme_req *r);
void p2pnvme_dmabuf_release(struct p2pnvme_req *r);
#else
static inline void p2pnvme_dmabuf_note(void) {}
static inline void p2pnvme_dmabuf_coherent_refused(struct p2pnvme *c) {}

static inline int p2pnvme_dmabuf_attach(struct p2pnvme *c, struct p2pnvme_req *reqs,
					unsigned int i)
{
	return -EOPNOTSUPP;
}

static inline int p2pnvme_dmabuf_map(struct p2pnvme *c, struct p2pnvme_req *r)
{
	return -EOPNOTSUPP;
}

static inline int p2pnvme_dmabuf_fence(struct p2pnvme *c, struct p2pnvme_req *reqs,
				       unsigned int nr)
{
	return 0;
}

static inline int
p2pnvme_dmabuf_fence_reg(struct p2pnvme_req *r,
			 struct p2pnvme_fence_slot *(*batch)(struct p2pnvme_queue *q))
{
	return 0;
}

static inline void p2pnvme_fence_slot_release(struct p2pnvme_fence_slot *slot) {}

static inline bool p2pnvme_dmabuf_signalling(void)
{
	return false;
}

static inline void p2pnvme_dmabuf_signalled(bool cookie) {}
static inline void p2pnvme_dmabuf_signal_req(struct p2pnvme_req *r, int unrun) {}
static inline void p2pnvme_dmabuf_signal(struct p2pnvme_req *reqs, unsigned int nr,
					 bool cookie, int unrun) {}
static inline void p2pnvme_dmabuf_fence_free(struct p2pnvme_req *r) {}
static inline void p2pnvme_dmabuf_unmap(struct p2pnvme_req *r) {}
static inline void p2pnvme_dmabuf_release(struct p2pnvme_req *r) {}
#endif

#endif /* P2PNVME_REG_H */
