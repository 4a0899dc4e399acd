// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme's registered buffers (P2PNVME_IOC_BUF_REGISTER): host memory
 * pinned and DMA-mapped once, or a dma-buf attached and mapped once, so
 * that a transfer naming one pins, maps, allocates and decides nothing: its
 * PRPs or SGLs come from the mapping's segments, found by binary search.
 *
 * Lifetime: the file's table holds a reference, each request naming the
 * buffer another; the last put unmaps, unpins, detaches and frees (process
 * context). Removal of the controller unmaps every buffer of every file
 * (no DMA mapping outlives the binding); later transfers fail with -ENODEV
 * as every I/O on a removed controller does.
 *
 * I/O on a registered dma-buf is fenced as a per-I/O import's is: each
 * request (an entry of a batch, an io_uring request) is covered by a fence
 * in the dma-buf's reservation object, in place after its list blocks are
 * taken and before it goes busy (p2pnvme_reg_arm()), and ends its share of
 * it once none of its commands can reach the controller any more. A
 * batch entry's fence is its own; the io_uring requests of one submission
 * batch share one per registration (p2pnvme_dmabuf_fence_reg()), which
 * signals when the last of them ends. In between a request allocates
 * nothing that may reclaim and takes no reservation lock (the section is
 * annotated, dma_fence_begin_signalling()).
 *
 * Invalidation (a dma-buf's exporter moves or revokes it, under the
 * reservation lock, maybe from direct reclaim: TTM's and xe's shrinkers
 * trylock it there) never waits: the callback marks the buffer stale (no
 * new commands) and unmaps at once when no request is busy on it. A busy
 * one keeps the mapping it was armed on: its fence is what the exporter
 * waits for before the memory moves, as the dma-buf contract has it (the
 * importer may access the memory until its fences retire, and unmaps
 * within bounded time after). The mapping goes when the last busy request
 * is idle (reg_settle(), a work item), or at the remap, whichever comes
 * first. A move is not a revoke: the next request naming the buffer maps
 * it again (p2pnvme_reg_get(): after the requests busy on the old mapping
 * are idle, waited for with no lock held, and after the exporter's kernel
 * fences, as amdgpu and xe move their buffers); a revoked dma-buf fails
 * that map (-ENODEV from p2pbar), and so the request. Lockdep is told at
 * each registration that the callback may run in reclaim
 * (reg_prime_reclaim()).
 *
 * Where a dma-buf's mapping is (a PCI function's BAR, and whose, host
 * memory, or device memory the CPU reaches coherently:
 * p2pnvme_dmabuf_in_host()) is worked out at each mapping; a buffer
 * registered with P2PNVME_BUF_F_REQUIRE_P2P (or a transfer with
 * P2PNVME_IO_F_REQUIRE_P2P) refuses host memory, and CPU-coherent device
 * memory as such (p2pnvme_reg_refuses()).
 * Every buffer, whatever its flags, refuses a mapping in the BAR of a
 * function that the kernel's P2PDMA verdict keeps from the controller
 * (-EREMOTEIO, at registration and at each mapping again): such a mapping
 * is undone at once, so a listed buffer is never mapped there.
 *
 * A static exporter (no pin: NVIDIA's) never invalidates, not even when its
 * device is unbound. So a bus notifier watches the unbinding of the
 * functions whose BARs such registered buffers map: the buffer is revoked
 * as an invalidation would (no new commands, those at the controller end,
 * then it is unmapped and detached, so that the exporter's release can
 * give the memory back), its dma-buf is let go (NVIDIA's remove waits for
 * every dma-buf to be released), and its later transfers fail with -ENODEV.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/pci.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/swiotlb.h>
#include <linux/uaccess.h>
#include <linux/p2p_ioctl.h>
#include <kunit/visibility.h>
#include <p2p_compat.h>

#include "reg.h"
#include "ctrl.h"
#include "dptr.h"

/* numbers every registration of every controller (struct p2pnvme_reg) */
static atomic64_t reg_serial = ATOMIC64_INIT(0);

/**
 * p2pnvme_reg_init - the registered buffers' side of a new controller
 * @c: the controller
 */
void p2pnvme_reg_init(struct p2pnvme *c)
{
	mutex_init(&c->reg_lock);
	INIT_LIST_HEAD(&c->reg_list);
	atomic64_set(&c->reg_bounced, 0);
	xa_init(&c->p2p_verdicts);
	atomic_set(&c->p2p_gen, 0);
}

/**
 * p2pnvme_reg_exit - the controller's last reference is gone
 * @c: the controller (p2pnvme_reg_init() was called)
 */
void p2pnvme_reg_exit(struct p2pnvme *c)
{
	xa_destroy(&c->p2p_verdicts);
}

/**
 * p2pnvme_reg_refuses - does a request's registered buffer break its
 *	P2P requirement?
 * @r: the request, after p2pnvme_reg_get() succeeded
 *
 * Host memory is refused when the transfer (P2PNVME_IO_F_REQUIRE_P2P) or
 * the buffer (P2PNVME_BUF_F_REQUIRE_P2P) asks for P2P. A dma-buf's
 * placement is that of its current mapping: p2pnvme_reg_get() checks it,
 * and p2pnvme_reg_arm() again, since an eviction and another request's
 * lookup, which maps the buffer where it went, may come in between
 * (p2pnvme_reg_arm() sees no move then). Once armed, the placement holds
 * until the request is idle: the next invalidation waits for it.
 *
 * Return: true to refuse (-EREMOTEIO).
 */
bool p2pnvme_reg_refuses(struct p2pnvme_req *r)
{
	const struct p2pnvme_reg *b = r->reg;
	bool require = (r->io->flags & P2PNVME_IO_F_REQUIRE_P2P) || b->require_p2p;

	if (!require)
		return false;
	return b->kind == P2PNVME_REG_HOST || READ_ONCE(b->host);
}

/**
 * p2pnvme_reg_path - where a registered dma-buf's current mapping is, as a
 *	transfer's path says it
 * @b: the registered dma-buf
 *
 * Return: P2PNVME_PATH_DMABUF (a PCI function's BAR),
 * P2PNVME_PATH_DMABUF_HOST or P2PNVME_PATH_DMABUF_COHERENT.
 */
u32 p2pnvme_reg_path(const struct p2pnvme_reg *b)
{
	if (!READ_ONCE(b->host))
		return P2PNVME_PATH_DMABUF;
	return READ_ONCE(b->coherent) ? P2PNVME_PATH_DMABUF_COHERENT : P2PNVME_PATH_DMABUF_HOST;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_reg_path);

/*
 * Index the mapping's DMA segments. Inside the registered range every
 * segment but the first starts on a controller page and every one but the
 * last ends on one, and the range starts dword aligned: then any transfer
 * of it can be described with PRPs as well as SGLs, and a batch never fails
 * halfway through its submission. And whether the range is one segment
 * (@contig, where it starts: @contig_dma), for p2pnvme_reg_lists().
 */
static int reg_index(struct p2pnvme_reg *b, struct sg_table *sgt)
{
	const u64 mask = P2PNVME_CTRL_PAGE - 1, end = b->start + b->len;
	struct scatterlist *sg;
	unsigned int i, in = 0;
	dma_addr_t first = 0;
	u64 pos = 0;

	b->seg = kvmalloc_array(sgt->nents, sizeof(*b->seg), GFP_KERNEL_ACCOUNT);
	b->seg_pos = kvmalloc_array(sgt->nents, sizeof(*b->seg_pos), GFP_KERNEL_ACCOUNT);
	if (!b->seg || !b->seg_pos)
		return -ENOMEM;
	for_each_sgtable_dma_sg(sgt, sg, i) {
		dma_addr_t a = sg_dma_address(sg);
		u64 l = sg_dma_len(sg);

		if (!l && pos >= b->start && pos < end)
			return -EINVAL;		/* a cursor would stop on it */
		if (pos < end && pos + l > b->start) {
			if (pos <= b->start && ((a + (b->start - pos)) & 3))
				return -EINVAL;
			if (pos > b->start && (a & mask))
				return -EINVAL;
			if (pos + l < end && ((a + l) & mask))
				return -EINVAL;
			/* the first one holds byte 0 of the range */
			if (!in++)
				first = a + (b->start - pos);
		}
		b->seg[i] = sg;
		b->seg_pos[i] = pos;
		pos += l;
	}
	b->nseg = sgt->nents;
	WRITE_ONCE(b->contig, in == 1);
	WRITE_ONCE(b->contig_dma, first);
	return pos < end ? -EINVAL : 0;
}

/* The last of @b's DMA segments that starts at or before mapping position @pos. */
static unsigned int reg_seg_at(const struct p2pnvme_reg *b, u64 pos)
{
	unsigned int lo = 0, hi = b->nseg - 1;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo + 1) / 2;

		if (b->seg_pos[mid] <= pos)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/**
 * p2pnvme_reg_cursor - where a registered request's data starts
 * @r: the request, armed (p2pnvme_reg_arm()) or about to sync host memory
 * @cur: out: the segment and the offset into it
 */
void p2pnvme_reg_cursor(const struct p2pnvme_req *r, struct p2pnvme_cursor *cur)
{
	const struct p2pnvme_reg *b = r->reg;
	u64 pos = b->start + r->io->addr;
	unsigned int i = reg_seg_at(b, pos);

	cur->sg = b->seg[i];
	cur->off = pos - b->seg_pos[i];
}

/**
 * p2pnvme_reg_bus - the bus address of a position of a registered dma-buf's
 *	mapping (placeholders, disk.c)
 * @b: the buffer, armed for the disk (p2pnvme_reg_disk_arm() said 0)
 * @pos: a position in the mapping, inside the registered range
 * @room: out: the bytes of its DMA segment from there
 *
 * Return: the bus address.
 */
dma_addr_t p2pnvme_reg_bus(const struct p2pnvme_reg *b, u64 pos, u64 *room)
{
	unsigned int i = reg_seg_at(b, pos);
	u64 off = pos - b->seg_pos[i];

	*room = sg_dma_len(b->seg[i]) - off;
	return sg_dma_address(b->seg[i]) + off;
}

/**
 * p2pnvme_reg_disk_arm - a request of the disk is about to hand the
 *	controller bus addresses of a registered dma-buf (any context, from
 *	.queue_rq: only atomics)
 * @b: the buffer
 *
 * Counted busy first, then the buffer's state read: an invalidation sets
 * @stale before it reads @disk_busy, so either it waits for this request
 * or this request sees it. Until p2pnvme_reg_disk_idle() the mapping, its
 * segments and its placement stay (an invalidation waits; a remap needs
 * @stale).
 *
 * Return: 0 (busy: p2pnvme_reg_disk_idle() once the command is over),
 * -ENODEV (revoked), -ESTALE (moved, not mapped again yet); not busy then.
 */
int p2pnvme_reg_disk_arm(struct p2pnvme_reg *b)
{
	atomic_inc(&b->disk_busy);
	smp_mb__after_atomic();	/* disk_busy before revoked and stale are read */
	/* acquire: the segments reg_remap() indexed before it cleared @stale */
	if (!READ_ONCE(b->revoked) && !smp_load_acquire(&b->stale))
		return 0;
	p2pnvme_reg_disk_idle(b);
	return READ_ONCE(b->revoked) ? -ENODEV : -ESTALE;
}

/**
 * p2pnvme_reg_disk_idle - a disk request's command that held the buffer's
 *	bus addresses is over (any context)
 * @b: the buffer, armed by p2pnvme_reg_disk_arm()
 */
void p2pnvme_reg_disk_idle(struct p2pnvme_reg *b)
{
	/* a full barrier when it drops to 0: pairs with reg_disk_drain() */
	if (atomic_dec_and_test(&b->disk_busy) &&
	    (READ_ONCE(b->revoked) || READ_ONCE(b->stale)))
		wake_up_all(&b->wq);
}

/*
 * @b was marked stale or revoked: wait until no request of the disk holds
 * its bus addresses, so that the exporter may move the memory (the caller
 * holds the reservation lock, maybe in direct reclaim; or reg_lock). The
 * file command publishes no fence: one whose signalling waited on the
 * filesystem (its allocations, i_rwsem, writeback) would break the
 * dma-fence rules, a GPU shrinker in reclaim waiting on it. Instead this
 * waits for the disk's commands, as mlx5's dma-buf invalidation waits for
 * its hardware: each ends within the disk's timeout ladder (a timeout, an
 * Abort, the second timeout's reset cancelling it), so the wait is
 * bounded at three I/O timeouts. Past that the controller is taken out of
 * DMA at once (bus mastering off) and reset: no command can reach the old
 * placement any more, whatever becomes of it; the reset's cancellation
 * ends them, and they are dispatched again on the buffer's new mapping or
 * the placeholders' RAM. The disk's completion path takes neither the
 * reservation lock nor reg_lock.
 */
static void reg_disk_drain(struct p2pnvme_reg *b)
{
	struct p2pnvme *c = b->c;

	smp_mb();	/* stale or revoked before disk_busy is read: pairs with the arm */
	if (!atomic_read(&b->disk_busy))
		return;
	if (wait_event_timeout(b->wq, !atomic_read(&b->disk_busy), 3 * p2pnvme_io_timeout()))
		return;
	WARN(1, "%s: disk commands on a registered dma-buf outlived the invalidation's bound: bus mastering off, controller reset\n",
	     pci_name(c->pdev));
	pci_clear_master(c->pdev);
	p2pnvme_schedule_reset(c);
}

/**
 * p2pnvme_reg_lists - how many PRP lists and SGL segments the commands of
 *	a request naming a registered buffer need, counted before it is armed
 * @r: the request, looked up (p2pnvme_reg_get()), @r->sgl set
 * @max_xfer: bytes per command
 *
 * The segments are not walked: until the request is armed its buffer may
 * be unmapped (a revocation) or mapped anew (a remap frees them). A
 * mapping whose registered range is one DMA segment (@contig) tells
 * exactly, from where the range starts, what p2pnvme_data_needs_list()
 * will say of each command: no SGL segment ever, a PRP list only for a
 * command past its second controller page (none for 4 KiB). Any other
 * mapping: one per command, the most they can need. The count holds for
 * the mapping of @r->reg_gen, which p2pnvme_reg_arm() checks: a request
 * whose buffer was mapped anew in between is sent back (-ESTALE) and
 * counted again.
 *
 * Return: the number of list blocks.
 */
unsigned int p2pnvme_reg_lists(struct p2pnvme_req *r, u32 max_xfer)
{
	const struct p2pnvme_reg *b = r->reg;
	u64 len = r->io->len, done, n;
	unsigned int need = 0;
	dma_addr_t addr;

	/* acquire: @contig and @contig_dma as the remap that bumped it left them */
	r->reg_gen = smp_load_acquire(&b->gen);
	if (!READ_ONCE(b->contig))
		return DIV_ROUND_UP_ULL(len, max_xfer);
	if (r->sgl)
		return 0;	/* one data block descriptor per command */
	addr = READ_ONCE(b->contig_dma) + r->io->addr;
	for (done = 0; done < len; done += n) {
		n = min_t(u64, len - done, max_xfer);
		need += n > 2 * P2PNVME_CTRL_PAGE - ((addr + done) & (P2PNVME_CTRL_PAGE - 1));
	}
	return need;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_reg_lists);

/**
 * p2pnvme_reg_sync_range - p2pnvme_reg_sync() of a registered host buffer
 *	whose mapping needs syncs
 * @c: the controller
 * @r: the request
 * @for_device: which way
 */
void p2pnvme_reg_sync_range(struct p2pnvme *c, struct p2pnvme_req *r, bool for_device)
{
	struct device *dev = &c->pdev->dev;
	struct p2pnvme_cursor cur;
	u64 left = r->io->len;

	p2pnvme_reg_cursor(r, &cur);
	while (left && cur.sg) {
		u64 n = min_t(u64, left, sg_dma_len(cur.sg) - cur.off);

		if (for_device)
			dma_sync_single_range_for_device(dev, sg_dma_address(cur.sg), cur.off, n,
							 r->dir);
		else
			dma_sync_single_range_for_cpu(dev, sg_dma_address(cur.sg), cur.off, n,
						      r->dir);
		left -= n;
		cur.sg = sg_next(cur.sg);
		cur.off = 0;
	}
}

/* Any context: the request's commands can no longer reach the controller. */
static void reg_busy_put(struct p2pnvme_reg *b)
{
	/* a full barrier when it drops to 0: pairs with the waits for it */
	if (!atomic_dec_and_test(&b->busy) || !(READ_ONCE(b->revoked) || READ_ONCE(b->stale)))
		return;
	/* the mapping an invalidation left to the requests busy then */
	if (READ_ONCE(b->stale) && READ_ONCE(b->dsgt))
		queue_work(system_unbound_wq, &b->settle);
	wake_up_all(&b->wq);
}

/**
 * p2pnvme_reg_arm - count a request busy on its buffer, right before its
 *	commands are queued (no reservation lock held)
 * @r: the request, with @r->reg
 *
 * The buffer's placement is checked against the request's P2P requirement
 * here, where it holds until the request is idle: the one
 * p2pnvme_reg_get() checked may have changed since (an eviction, then
 * another request's lookup mapped it again in host memory).
 *
 * Return: 0, -ENODEV when the buffer was revoked, -ESTALE when its
 * dma-buf moved since it was last mapped, or was mapped anew since the
 * request's list blocks were counted for it (p2pnvme_reg_lists()): nothing
 * was sent, and the caller prepares the request again, which maps it anew
 * (never returned to userspace); -EREMOTEIO when it is host memory and the
 * request or the buffer requires P2P (p2pnvme_reg_refuses()): nothing was
 * sent either.
 */
int p2pnvme_reg_arm(struct p2pnvme_req *r)
{
	struct p2pnvme_reg *b = r->reg;

	atomic_inc(&b->busy);
	smp_mb__after_atomic();	/* busy before revoked is read */
	/* acquire: the segments reg_remap() indexed before it cleared @stale */
	if (READ_ONCE(b->revoked) || smp_load_acquire(&b->stale)) {
		reg_busy_put(b);
		return READ_ONCE(b->revoked) ? -ENODEV : -ESTALE;
	}
	/* the mapping its list blocks were counted for, still (no remap while busy) */
	if (r->reg_gen && READ_ONCE(b->gen) != r->reg_gen) {
		reg_busy_put(b);
		return -ESTALE;
	}
	/* the mapping's placement, as the remap that cleared @stale left it */
	if (p2pnvme_reg_refuses(r)) {
		reg_busy_put(b);
		return -EREMOTEIO;
	}
	r->reg_busy = true;
	/* busy: no move re-maps it until the request is idle again */
	if (b->kind == P2PNVME_REG_DMABUF)
		memcpy(r->dmabuf_owner, b->owner, sizeof(r->dmabuf_owner));
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_reg_arm);

/**
 * p2pnvme_reg_invalidated - a registered dma-buf was invalidated: no new
 *	commands from it (the exporter's reservation lock held; never waits)
 * @b: the buffer
 *
 * Return: true when no request is busy on its mapping, which may then go
 * at once; false: the busy ones' fences hold the exporter's move, and the
 * last of them to go idle has the mapping unmapped (reg_settle()).
 */
bool p2pnvme_reg_invalidated(struct p2pnvme_reg *b)
{
	WRITE_ONCE(b->stale, true);
	smp_mb();	/* stale before busy is read: pairs with p2pnvme_reg_arm() */
	return !atomic_read(&b->busy);
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_reg_invalidated);

/**
 * p2pnvme_reg_idle - none of the request's commands can reach the
 *	controller any more (any context)
 * @r: the request; nothing happens unless it was armed
 */
void p2pnvme_reg_idle(struct p2pnvme_req *r)
{
	if (r->reg_busy) {
		r->reg_busy = false;
		reg_busy_put(r->reg);
	}
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_reg_idle);

/*
 * A mapping that needs syncs and whose bus addresses are not its pages'
 * own lives in swiotlb's bounce slots (or, rarely, behind a DMA offset:
 * counted too). One entry per page run: caller checked nents.
 */
static bool reg_bounced(struct sg_table *sgt)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_sg(sgt, sg, i)
		if (sg_dma_address(sg) != (dma_addr_t)sg_phys(sg))
			return true;
	return false;
}

/*
 * Bounce slots are shared by every device of the machine, for the whole
 * registration: a controller keeps at most max_bounced_reg_mb of them.
 */
static int reg_charge_bounce(struct p2pnvme *c, struct p2pnvme_reg *b)
{
	u64 cap = (u64)READ_ONCE(p2pnvme_max_bounced_reg_mb) << 20;

	if (atomic64_add_return(b->len, &c->reg_bounced) > cap) {
		atomic64_sub(b->len, &c->reg_bounced);
		return -ENOBUFS;
	}
	b->bounced = b->len;
	return 0;
}

static void reg_uncharge_bounce(struct p2pnvme *c, struct p2pnvme_reg *b)
{
	atomic64_sub(b->bounced, &c->reg_bounced);
	b->bounced = 0;
}

/* Take the mappings away (removal, a failed registration, teardown). */
static void reg_unmap_locked(struct p2pnvme_reg *b)
{
	struct p2pnvme *c = b->c;

	lockdep_assert_held(&c->reg_lock);
	WRITE_ONCE(b->revoked, true);
	reg_disk_drain(b);	/* the disk's commands on its bus addresses */
	if (b->mapped) {
		dma_unmap_sgtable(&c->pdev->dev, &b->sgt, DMA_BIDIRECTIONAL,
				  DMA_ATTR_SKIP_CPU_SYNC);
		b->mapped = false;
		reg_uncharge_bounce(c, b);
	}
#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
	if (b->attach) {
		dma_resv_lock(b->dmabuf->resv, NULL);
		if (b->dsgt)
			dma_buf_unmap_attachment(b->attach, b->dsgt, DMA_BIDIRECTIONAL);
		b->dsgt = NULL;
		dma_resv_unlock(b->dmabuf->resv);
		dma_buf_detach(b->dmabuf, b->attach);
		b->attach = NULL;
	}
#endif
}

/*
 * The end of a registration, inside the I/O guard: list the buffer for
 * removal, or unmap a failed one before the guard is left (removal cannot
 * see it, and no mapping may outlive the binding). Returns @ret.
 */
static int reg_list_or_unmap(struct p2pnvme_reg *b, int ret)
{
	struct p2pnvme *c = b->c;

	mutex_lock(&c->reg_lock);
	if (!ret)
		list_add(&b->node, &c->reg_list);
	else
		reg_unmap_locked(b);
	mutex_unlock(&c->reg_lock);
	return ret;
}

/* The last reference: nothing can name @b or have commands from it. */
static void reg_free(struct kref *kref)
{
	struct p2pnvme_reg *b = container_of(kref, struct p2pnvme_reg, kref);
	struct p2pnvme *c = b->c;

	/* queued only while a request was busy on it: none is left */
	cancel_work_sync(&b->settle);
	/* a revoke's put, if it did not run yet: here instead */
	cancel_work_sync(&b->drop);
	mutex_lock(&c->reg_lock);
	list_del(&b->node);
	reg_unmap_locked(b);
	mutex_unlock(&c->reg_lock);
#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
	if (b->dropped)
		dma_buf_put(b->dropped);
	if (b->dmabuf)
		dma_buf_put(b->dmabuf);
#endif
	if (b->nr_pages)
		unpin_user_pages_dirty_lock(b->pages, b->nr_pages, b->writable);
	sg_free_table(&b->sgt);
	if (b->mm) {
		/* an mm that exited has nobody left to give the pages back to */
		if (mmget_not_zero(b->mm)) {
			account_locked_vm(b->mm, b->nr_pages, false);
			mmput(b->mm);
		}
		mmdrop(b->mm);
	}
	kvfree(b->pages);
	kvfree(b->seg);
	kvfree(b->seg_pos);
	kfree_rcu(b, rcu);
}

/**
 * p2pnvme_reg_put - drop a request's reference to its buffer
 * @r: the request (process context); nothing happens without @r->reg
 */
void p2pnvme_reg_put(struct p2pnvme_req *r)
{
	if (!r->reg)
		return;
	p2pnvme_reg_idle(r);
	kref_put(&r->reg->kref, reg_free);
	r->reg = NULL;
}

/*
 * The file's buffer @id, with a reference, or NULL: one that is not
 * registered, still being registered, or whose last reference is going.
 * An id below P2PNVME_REG_FAST is read from @f->reg_fast, which holds the
 * same buffers as @f->regs there: one load per transfer, not an xarray
 * walk (the index clamped under speculation: @id is the caller's).
 */
static struct p2pnvme_reg *reg_lookup(struct p2pnvme_file *f, u32 id)
{
	struct p2pnvme_reg *b;

	rcu_read_lock();
	if (id < P2PNVME_REG_FAST)
		b = rcu_dereference(f->reg_fast[array_index_nospec(id, P2PNVME_REG_FAST)]);
	else
		b = xa_load(&f->regs, id);
	if (b && !kref_get_unless_zero(&b->kref))
		b = NULL;
	rcu_read_unlock();
	return b;
}

/* @f->reg_fast's entry of @id, if it has one, to what @f->regs holds now */
static void reg_fast_set(struct p2pnvme_file *f, u32 id, struct p2pnvme_reg *b)
{
	lockdep_assert_held(&f->regs.xa_lock);
	if (id < P2PNVME_REG_FAST)
		rcu_assign_pointer(f->reg_fast[array_index_nospec(id, P2PNVME_REG_FAST)], b);
}

/**
 * p2pnvme_reg_find - a registered buffer of the file, for a user outside
 *	the engine's requests (the file command, file.c)
 * @f: the file
 * @id: the buffer's id
 *
 * Nothing is mapped, armed or checked: the caller reads @kind, @len,
 * @writable, @revoked and the pages or the dma-buf (p2pnvme_reg_dmabuf_get())
 * and holds the buffer, so its pinned host pages stay, until
 * p2pnvme_reg_release().
 *
 * Return: the buffer with a reference, or NULL (no such id).
 */
struct p2pnvme_reg *p2pnvme_reg_find(struct p2pnvme_file *f, u32 id)
{
	return reg_lookup(f, id);
}

/**
 * p2pnvme_reg_release - drop what p2pnvme_reg_find() took
 * @b: the buffer (process context)
 */
void p2pnvme_reg_release(struct p2pnvme_reg *b)
{
	kref_put(&b->kref, reg_free);
}

static int reg_remap(struct p2pnvme_reg *b, struct p2pnvme_req *r);

/**
 * p2pnvme_reg_get - look up the buffer a request names and check it
 * @f: the file the request came through
 * @r: the request, P2PNVME_IO_F_REGISTERED, checked with
 *     p2pnvme_check_io(), @r->dir set
 *
 * Return: 0 (@r->reg holds a reference), -ENOENT (no such buffer), -EINVAL
 * (the range runs past its end), -EBADF (a read into a dma-buf registered
 * without write access), the errors of mapping a moved dma-buf again
 * (-ENODEV: revoked or the controller removed; -EREMOTEIO: the exporter's,
 * or, with @r->dmabuf_unreachable and @r->dmabuf_owner set, the kernel's
 * P2PDMA verdict refuses the BAR it went to; -EOPNOTSUPP, -ETIMEDOUT); on
 * error the caller still releases @r.
 */
int p2pnvme_reg_get(struct p2pnvme_file *f, struct p2pnvme_req *r)
{
	const struct p2pnvme_io *io = r->io;
	struct p2pnvme_reg *b = reg_lookup(f, io->buf_id);

	if (!b)
		return -ENOENT;
	r->reg = b;
	if (r->bound && b->serial != r->bound)
		return -ENOENT;	/* not the registration it was bound to */
	if (io->addr + io->len > b->len)	/* no overflow: p2pnvme_check_io() */
		return -EINVAL;
	if (r->dir == DMA_FROM_DEVICE && !b->writable)
		return -EBADF;
	/* acquire: @host as reg_remap() left it with @stale cleared */
	if (b->kind == P2PNVME_REG_DMABUF && smp_load_acquire(&b->stale))
		return reg_remap(b, r);
	return 0;
}

/**
 * p2pnvme_reg_ready - a registered dma-buf mapped where it is now, for the
 *	file command's placeholders (no lock held: before the filesystem's
 *	call, outside every lock of it)
 * @b: the buffer, held (p2pnvme_reg_find())
 *
 * Return: 0, or the errors of mapping a moved dma-buf again
 * (p2pnvme_reg_get()).
 */
int p2pnvme_reg_ready(struct p2pnvme_reg *b)
{
	if (READ_ONCE(b->revoked))
		return -ENODEV;
	/* acquire: @host as reg_remap() left it with @stale cleared */
	if (smp_load_acquire(&b->stale))
		return reg_remap(b, NULL);
	return 0;
}

/* Pin and map host memory; the mm is charged (RLIMIT_MEMLOCK). */
static int reg_host(struct p2pnvme *c, struct p2pnvme_reg *b, u64 addr)
{
	unsigned int off = offset_in_page(addr);
	unsigned int n = DIV_ROUND_UP(off + b->len, PAGE_SIZE);	/* len <= 1 GiB */
	unsigned int done;
	int got, ret;

	b->kind = P2PNVME_REG_HOST;
	b->writable = true;
	b->pages = kvmalloc_array(n, sizeof(*b->pages), GFP_KERNEL_ACCOUNT);
	if (!b->pages)
		return -ENOMEM;
	ret = account_locked_vm(current->mm, n, true);
	if (ret)
		return ret;
	/*
	 * p2pmem refuses without FOLL_PCI_P2PDMA: -EREMOTEIO, as documented.
	 * A short pin is retried from the page that stopped it, for its errno.
	 */
	for (done = 0; done < n; done += got) {
		got = pin_user_pages_fast((addr & PAGE_MASK) + (u64)done * PAGE_SIZE, n - done,
					  FOLL_WRITE | FOLL_LONGTERM, b->pages + done);
		if (got <= 0) {
			unpin_user_pages(b->pages, done);
			account_locked_vm(current->mm, n, false);
			return got ?: -EFAULT;
		}
	}
	b->nr_pages = n;
	b->mm = current->mm;
	mmgrab(b->mm);
	ret = sg_alloc_table_from_pages_segment(&b->sgt, b->pages, n, off, b->len, c->max_seg,
						GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;

	/* mapped and listed while the controller is LIVE: removal unmaps it */
	ret = p2pnvme_io_enter(c);
	if (ret)
		return ret;
	/*
	 * Where every mapping is bounced (swiotlb=force, a confidential
	 * guest), charged before it takes the slots: one refused never
	 * holds them, and two at the limit cannot both be refused.
	 */
	if (is_swiotlb_force_bounce(&c->pdev->dev)) {
		ret = reg_charge_bounce(c, b);
		if (ret)
			goto out_exit;
	}
	ret = dma_map_sgtable(&c->pdev->dev, &b->sgt, DMA_BIDIRECTIONAL, DMA_ATTR_SKIP_CPU_SYNC);
	if (ret) {
		reg_uncharge_bounce(c, b);
		goto out_exit;
	}
	b->mapped = true;
	b->need_sync = p2pnvme_dma_need_sync(&c->pdev->dev, &b->sgt);
	/*
	 * Range syncs need each DMA segment to be one physical run: an IOMMU
	 * that merged pages into one IOVA segment on a device that wants
	 * syncs (non-coherent) would have them maintain the wrong pages.
	 */
	ret = b->need_sync && b->sgt.nents != b->sgt.orig_nents ? -EOPNOTSUPP :
	      reg_index(b, &b->sgt);
	if (!ret && b->bounced && !(b->need_sync && reg_bounced(&b->sgt)))
		reg_uncharge_bounce(c, b);	/* not bounced after all */
	else if (!ret && !b->bounced && b->need_sync && reg_bounced(&b->sgt))
		ret = reg_charge_bounce(c, b);
	ret = reg_list_or_unmap(b, ret);
out_exit:
	p2pnvme_io_exit(c);
	return ret;
}

#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
/*
 * The exporter moves or revokes the buffer (its reservation lock held; from
 * direct reclaim too: TTM's and xe's shrinkers, the lock trylocked). No
 * allocation here, and no wait for the engine's requests: no new commands,
 * and the mapping goes now if no request is busy on it. The disk's
 * requests through placeholders (file reads into GPU memory) have no
 * fence: they are waited for, bounded (reg_disk_drain()). Else the busy
 * requests' fences, in the
 * reservation object since before they went busy, are what the exporter
 * waits for, and the mapping goes once the last of them is idle
 * (reg_settle()) or at the remap. The buffer stays registered; the next
 * request maps it again (reg_remap()).
 */
static void reg_invalidate(struct dma_buf_attachment *attach)
{
	struct p2pnvme_reg *b = attach->importer_priv;

	bool idle;

	dma_resv_assert_held(attach->dmabuf->resv);
	idle = p2pnvme_reg_invalidated(b);
	/* the disk's placeholder commands hold no fence: waited for here */
	reg_disk_drain(b);
	if (idle && b->dsgt) {
		dma_buf_unmap_attachment(attach, b->dsgt, DMA_BIDIRECTIONAL);
		b->dsgt = NULL;
	}
}

static const struct dma_buf_attach_ops reg_importer_ops = {
	.allow_peer2peer = true,
	.P2P_DMA_BUF_INVALIDATE_OP = reg_invalidate,
};

/*
 * The requests busy on a mapping that was invalidated then are all idle
 * (queued by the last of them, any context): unmap it, unless the remap
 * did, or a request is busy on a newer mapping. In bounded time after the
 * invalidation, as the dma-buf contract wants (p2pbar's revocation waits
 * for the unmap), whenever the requests are released (an io_uring ring's
 * task work may run late).
 */
static void reg_settle(struct work_struct *work)
{
	struct p2pnvme_reg *b = container_of(work, struct p2pnvme_reg, settle);
	struct dma_buf *dmabuf = p2pnvme_reg_dmabuf_get(b);

	if (!dmabuf)
		return;		/* revoked for good: unmapped and let go */
	dma_resv_lock(dmabuf->resv, NULL);
	smp_mb();	/* stale, set under this lock, before busy is read */
	/* @dsgt set: @attach is there (removal clears both, @dsgt under this lock) */
	if (b->stale && b->dsgt && !atomic_read(&b->busy)) {
		dma_buf_unmap_attachment(b->attach, b->dsgt, DMA_BIDIRECTIONAL);
		b->dsgt = NULL;
	}
	dma_resv_unlock(dmabuf->resv);
	dma_buf_put(dmabuf);
}

/* @b->dropped's put (@b->drop): from a worker, see struct p2pnvme_reg */
static void reg_drop_work(struct work_struct *work)
{
	struct p2pnvme_reg *b = container_of(work, struct p2pnvme_reg, drop);

	dma_buf_put(b->dropped);
	b->dropped = NULL;
}

/*
 * A registration revoked for good (unmapped, detached: reg_unmap_locked())
 * lets its dma-buf go: an exporter whose remove waits for every dma-buf to
 * be released (NVIDIA's) is never held by p2pnvme. The put runs from a
 * worker: the notifier runs in the unbinding task, whose own fput would
 * be deferred to its return to userspace, after the remove. The requests
 * that looked the buffer up before hold their own reference while they
 * publish a fence (p2pnvme_reg_dmabuf_get()) and fail to arm (-ENODEV).
 */
static void reg_drop_dmabuf(struct p2pnvme_reg *b)
{
	lockdep_assert_held(&b->c->reg_lock);
	if (b->kind != P2PNVME_REG_DMABUF || !b->dmabuf || WARN_ON_ONCE(b->attach))
		return;
	spin_lock(&b->dmabuf_lock);
	b->dropped = b->dmabuf;
	b->dmabuf = NULL;
	spin_unlock(&b->dmabuf_lock);
	queue_work(system_unbound_wq, &b->drop);
}

/*
 * Tell lockdep that the invalidation callback may run in direct reclaim, as
 * TTM's and xe's shrinkers call it (the reservation lock trylocked), the
 * way dma_resv_lockdep() primes the reservation lock itself: the callback
 * runs once here in that context, on the buffer attached and not mapped
 * yet (nothing busy, nothing to unmap; the first mapping clears @stale).
 * Whatever it takes is then known to be taken in reclaim, and an
 * allocation that may reclaim, or a lock held around one elsewhere, in it
 * is reported at every registration of the debug kernel.
 */
static void reg_prime_reclaim(struct dma_buf_attachment *attach)
{
	if (!IS_ENABLED(CONFIG_LOCKDEP))
		return;
	fs_reclaim_acquire(GFP_KERNEL);
	if (dma_resv_trylock(attach->dmabuf->resv)) {
		reg_invalidate(attach);
		dma_resv_unlock(attach->dmabuf->resv);
	}
	fs_reclaim_release(GFP_KERNEL);
}

/* Attach to and map a dma-buf, after the exporter's kernel fences. */
static int reg_dmabuf(struct p2pnvme *c, struct p2pnvme_reg *b, int fd, u64 off)
{
	struct dma_buf_attachment *attach;
	struct dma_buf *dmabuf;
	struct sg_table *sgt;
	bool orphan, unreachable;
	long left;
	int ret;

	b->kind = P2PNVME_REG_DMABUF;
	b->start = off;
	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf) == -EINVAL ? -EBADF : PTR_ERR(dmabuf);
	b->dmabuf = dmabuf;
	/* the controller writes into it on a read: a writable fd for those */
	b->writable = dmabuf->file->f_mode & FMODE_WRITE;
	if (off > dmabuf->size || b->len > dmabuf->size - off)
		return -EINVAL;

	ret = p2pnvme_io_enter(c);
	if (ret)
		return ret;
	attach = dma_buf_dynamic_attach(dmabuf, &c->pdev->dev, &reg_importer_ops, b);
	if (IS_ERR(attach)) {
		ret = p2pnvme_dmabuf_errno(PTR_ERR(attach));
		goto out_exit;
	}
	b->attach = attach;
	reg_prime_reclaim(attach);
	dma_resv_lock(dmabuf->resv, NULL);
	sgt = dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		ret = p2pnvme_dmabuf_map_error(c, PTR_ERR(sgt), true);
		goto out_unlock;
	}
	b->dsgt = sgt;
	/* an invalidation before this mapping was about none: nothing was busy */
	WRITE_ONCE(b->stale, false);
	/* where it is, first: P2P required refuses host memory before all else */
	b->host = p2pnvme_dmabuf_in_host(c, sgt, b->owner, &b->coherent, &orphan, &unreachable);
	if (orphan) {
		ret = -ENODEV;		/* its device is unbound already */
		goto out_unlock;
	}
	/* a BAR the controller may not reach, P2P required or not */
	if (unreachable) {
		p2pnvme_dmabuf_unreachable(c, b->owner);
		p2pnvme_stat_add(c, ST_REFUSED, 1);
		ret = -EREMOTEIO;
		goto out_unlock;
	}
	if (b->host && b->require_p2p) {
		if (b->coherent)
			p2pnvme_dmabuf_coherent_refused(c);
		else
			pci_dbg(c->pdev, "dma-buf registration refused: host memory, P2P required\n");
		p2pnvme_stat_add(c, ST_REFUSED, 1);
		ret = -EREMOTEIO;
		goto out_unlock;
	}
	left = dma_resv_wait_timeout(dmabuf->resv, DMA_RESV_USAGE_KERNEL, true,
				     p2pnvme_io_timeout());
	ret = left > 0 ? 0 : left ?: -ETIMEDOUT;
	/*
	 * The exporter syncs its own mapping for its own CPU accesses, never
	 * for our transfers: one that needs syncs (host memory under swiotlb,
	 * a non-coherent device) cannot be registered.
	 */
	if (!ret && p2pnvme_dma_need_sync(&c->pdev->dev, sgt))
		ret = -EOPNOTSUPP;
	if (!ret)
		ret = reg_index(b, sgt);
out_unlock:
	dma_resv_unlock(dmabuf->resv);
	ret = reg_list_or_unmap(b, ret);
out_exit:
	p2pnvme_io_exit(c);
	return ret;
}

/*
 * Map a moved dma-buf again (@b->stale), for request @r about to name it
 * (or NULL: the file command, p2pnvme_reg_ready()):
 * where the exporter put it, after its kernel fences (the move's copy).
 * The requests armed on the old mapping build their commands from its
 * segments: they are waited for first, with no lock held (each ends when
 * its commands complete, time out or are cancelled by a reset; an
 * io_uring poller's are reaped by the watchdog), then, under the locks,
 * nothing is busy (p2pnvme_reg_arm() refuses while stale), the old mapping
 * goes if it is still there, and the segments are indexed anew. The
 * exporter refuses a revoked buffer (-ENODEV); removal took the attachment
 * away. A BAR the kernel's P2PDMA verdict keeps from the controller is
 * refused (-EREMOTEIO, @r->dmabuf_unreachable and @r->dmabuf_owner set for
 * the caller to count and trace) and unmapped again: still stale, so the
 * next request tries again, where the exporter may have moved it since.
 *
 * Not interruptible: io_uring's task work looks like a pending signal to
 * its submitter and workers (uring.c); the waits are bounded.
 */
static int reg_remap(struct p2pnvme_reg *b, struct p2pnvme_req *r)
{
	struct p2pnvme *c = b->c;
	struct dma_resv *resv;
	struct sg_table *sgt;
	char owner[P2PNVME_OWNER_LEN];
	bool host, coherent, orphan, unreachable;
	long left;
	int ret = 0;

	for (;;) {
		/* acquire: a remap's new segments, when it cleared @stale */
		wait_event(b->wq, !atomic_read(&b->busy) || !smp_load_acquire(&b->stale));
		mutex_lock(&c->reg_lock);
		if (b->revoked || !b->attach) {
			ret = -ENODEV;
			goto out;
		}
		/* attached: @dmabuf is there (a revoke detaches first) */
		resv = b->dmabuf->resv;
		dma_resv_lock(resv, NULL);
		if (!b->stale)
			goto out_unlock;	/* another request did it */
		smp_mb();	/* stale before busy is read: pairs with p2pnvme_reg_arm() */
		if (!atomic_read(&b->busy))
			break;
		/* armed on a mapping made and invalidated since the wait */
		dma_resv_unlock(resv);
		mutex_unlock(&c->reg_lock);
	}
	/* the mapping the invalidation left to the requests busy then */
	if (b->dsgt) {
		dma_buf_unmap_attachment(b->attach, b->dsgt, DMA_BIDIRECTIONAL);
		b->dsgt = NULL;
	}
	sgt = dma_buf_map_attachment(b->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		ret = p2pnvme_dmabuf_map_error(c, PTR_ERR(sgt), true);
		goto out_unlock;
	}
	left = dma_resv_wait_timeout(resv, DMA_RESV_USAGE_KERNEL, false, p2pnvme_io_timeout());
	ret = left > 0 ? 0 : left ?: -ETIMEDOUT;
	host = p2pnvme_dmabuf_in_host(c, sgt, owner, &coherent, &orphan, &unreachable);
	/* where it went, for p2pnvme_reg_refuses(), even if it cannot be used */
	WRITE_ONCE(b->coherent, coherent);
	WRITE_ONCE(b->host, host);
	if (!ret && orphan)
		ret = -ENODEV;
	if (!ret && unreachable) {
		p2pnvme_dmabuf_unreachable(c, owner);
		if (r) {
			memcpy(r->dmabuf_owner, owner, sizeof(r->dmabuf_owner));
			r->dmabuf_unreachable = true;
		}
		ret = -EREMOTEIO;
	}
	if (!ret && p2pnvme_dma_need_sync(&c->pdev->dev, sgt))
		ret = -EOPNOTSUPP;
	if (!ret) {
		kvfree(b->seg);
		kvfree(b->seg_pos);
		b->seg = NULL;
		b->seg_pos = NULL;
		b->nseg = 0;
		ret = reg_index(b, sgt);
	}
	if (ret) {
		dma_buf_unmap_attachment(b->attach, sgt, DMA_BIDIRECTIONAL);
		goto out_unlock;
	}
	b->dsgt = sgt;
	memcpy(b->owner, owner, sizeof(b->owner));
	/* release: @contig and @contig_dma before the new generation */
	smp_store_release(&b->gen, b->gen + 1);
	/* release: the new segments before the requests that see it clear */
	smp_store_release(&b->stale, false);
	wake_up_all(&b->wq);	/* other remaps waiting for the old mapping's requests */
out_unlock:
	dma_resv_unlock(resv);
out:
	mutex_unlock(&c->reg_lock);
	return ret;
}
#else
static void reg_settle(struct work_struct *work)
{
}

static void reg_drop_work(struct work_struct *work)
{
}

static void reg_drop_dmabuf(struct p2pnvme_reg *b)
{
}

static int reg_dmabuf(struct p2pnvme *c, struct p2pnvme_reg *b, int fd, u64 off)
{
	return -EOPNOTSUPP;
}

static int reg_remap(struct p2pnvme_reg *b, struct p2pnvme_req *r)
{
	return -ENODEV;
}
#endif

/**
 * p2pnvme_ioc_buf_register - P2PNVME_IOC_BUF_REGISTER
 * @f: the file the buffer will belong to
 * @uarg: user address of a struct p2pnvme_buf_reg
 *
 * The id is reserved first (a full table costs no pinning), published
 * only after it reached userspace (a failed copy leaves nothing behind).
 *
 * Return: 0 or -errno, see struct p2pnvme_buf_reg.
 */
long p2pnvme_ioc_buf_register(struct p2pnvme_file *f, unsigned long uarg)
{
	struct p2pnvme *c = f->c;
	struct p2pnvme_buf_reg reg;
	struct p2pnvme_reg *b;
	bool dmabuf;
	u32 id;
	int ret = p2p_ioctl_copy_in(&reg, sizeof(reg), offsetofend(struct p2pnvme_buf_reg, id),
				    uarg);

	if (ret)
		return ret;
	dmabuf = reg.flags & P2PNVME_BUF_F_DMABUF;
	if ((reg.flags & ~(P2PNVME_BUF_F_DMABUF | P2PNVME_BUF_F_REQUIRE_P2P)) || reg.id)
		return -EINVAL;
	/* host memory is never P2P: asking for it is a contradiction */
	if (!dmabuf && (reg.flags & P2PNVME_BUF_F_REQUIRE_P2P))
		return -EINVAL;
	if (!reg.len || reg.len > P2PNVME_BUF_MAX_LEN || (reg.addr & 3))
		return -EINVAL;
	if (!dmabuf && (reg.dmabuf_fd || !reg.addr || reg.addr + reg.len < reg.addr))
		return -EINVAL;

	ret = xa_alloc(&f->regs, &id, NULL, XA_LIMIT(0, P2PNVME_BUF_MAX - 1), GFP_KERNEL);
	if (ret)
		return ret == -EBUSY ? -ENOSPC : ret;
	b = kzalloc_obj(*b, GFP_KERNEL_ACCOUNT);
	if (!b) {
		ret = -ENOMEM;
		goto out_unreserve;
	}
	kref_init(&b->kref);
	b->serial = atomic64_inc_return(&reg_serial);
	b->gen = 1;
	b->c = c;
	INIT_LIST_HEAD(&b->node);
	init_waitqueue_head(&b->wq);
	INIT_WORK(&b->settle, reg_settle);
	spin_lock_init(&b->dmabuf_lock);
	INIT_WORK(&b->drop, reg_drop_work);
	b->len = reg.len;
	b->require_p2p = reg.flags & P2PNVME_BUF_F_REQUIRE_P2P;
	ret = dmabuf ? reg_dmabuf(c, b, reg.dmabuf_fd, reg.addr) : reg_host(c, b, reg.addr);
	if (!ret) {
		/* what an older, shorter structure has room for (argsz) */
		reg.id = id;
		reg.path = !dmabuf ? P2PNVME_PATH_HOST : p2pnvme_reg_path(b);
		memcpy(reg.owner, b->owner, sizeof(reg.owner));
		ret = p2p_ioctl_copy_out(uarg, &reg, sizeof(reg));
	}
	if (ret)
		goto out_put;
	/* a reserved slot: storing allocates nothing; unregister skips it */
	xa_lock(&f->regs);
	__xa_store(&f->regs, id, b, GFP_NOWAIT);
	reg_fast_set(f, id, b);
	xa_unlock(&f->regs);
	return 0;

out_put:
	kref_put(&b->kref, reg_free);
out_unreserve:
	xa_erase(&f->regs, id);
	return ret;
}

/**
 * p2pnvme_ioc_buf_unregister - P2PNVME_IOC_BUF_UNREGISTER
 * @f: the file
 * @uarg: user address of a struct p2pnvme_buf_unreg
 *
 * Requests under way keep the buffer until they end.
 *
 * Return: 0, -EINVAL, -ENOENT.
 */
long p2pnvme_ioc_buf_unregister(struct p2pnvme_file *f, unsigned long uarg)
{
	struct p2pnvme_buf_unreg u;
	struct p2pnvme_reg *b;
	int ret = p2p_ioctl_copy_in(&u, sizeof(u),
				    offsetofend(struct p2pnvme_buf_unreg, reserved), uarg);

	if (ret)
		return ret;
	if (u.flags || u.reserved)
		return -EINVAL;
	/* an id still being registered reads as NULL and stays reserved */
	xa_lock(&f->regs);
	b = xa_load(&f->regs, u.id);
	if (b) {
		__xa_erase(&f->regs, u.id);
		reg_fast_set(f, u.id, NULL);
	}
	xa_unlock(&f->regs);
	if (!b)
		return -ENOENT;
	kref_put(&b->kref, reg_free);
	return 0;
}

/**
 * p2pnvme_reg_file_release - the file is closed: release its buffers
 * @f: the file (no ioctl can run on it any more)
 */
void p2pnvme_reg_file_release(struct p2pnvme_file *f)
{
	struct p2pnvme_reg *b;
	unsigned long id;

	xa_for_each(&f->regs, id, b) {
		xa_lock(&f->regs);
		__xa_erase(&f->regs, id);
		reg_fast_set(f, id, NULL);
		xa_unlock(&f->regs);
		kref_put(&b->kref, reg_free);
	}
	xa_destroy(&f->regs);
}

/**
 * p2pnvme_reg_show - debugfs "buffers": every registered buffer of every file
 * @s: the seq_file, @s->private the controller
 * @unused: -
 *
 * Return: 0.
 */
int p2pnvme_reg_show(struct seq_file *s, void *unused)
{
	struct p2pnvme *c = s->private;
	struct p2pnvme_reg *b;

	seq_puts(s, "kind    bytes       start       segments busy revoked mapped where           owner\n");
	mutex_lock(&c->reg_lock);
	list_for_each_entry(b, &c->reg_list, node) {
		bool dmabuf = b->kind == P2PNVME_REG_DMABUF;

		/* where the last mapping was ("moved": not mapped again yet) */
		seq_printf(s, "%-7s %-11llu %-11llu %-8u %-4d %-7d %-6d %-15s %s%s\n",
			   dmabuf ? "dmabuf" : "host", b->len, b->start, b->nseg,
			   atomic_read(&b->busy), READ_ONCE(b->revoked), b->mapped || b->attach,
			   !dmabuf ? "host" : READ_ONCE(b->stale) ? "moved" :
			   b->coherent ? "dmabuf-coherent" : b->host ? "dmabuf-host" : "dmabuf-p2p",
			   b->owner[0] ? b->owner : "-",
			   b->require_p2p ? " require-p2p" : "");
	}
	mutex_unlock(&c->reg_lock);
	return 0;
}

#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
/*
 * A PCI function loses its driver. A static exporter (NVIDIA's: no pin, no
 * move, no revoke) says nothing to its importers; once its memory is given
 * back, the controller's next DMA would land in memory that is no longer
 * the buffer. So every registered dma-buf of a static exporter whose last
 * mapping is in that function's BAR is revoked when the unbind begins
 * (BUS_NOTIFY_UNBIND_DRIVER, before the driver's remove(), its device lock
 * held): no new commands (p2pnvme_reg_arm() and reg_remap() say -ENODEV),
 * the commands at the controller end (each within io_timeout_ms, or is
 * cancelled by the reset that follows), then it is unmapped and detached,
 * and the dma-buf let go (reg_drop_dmabuf()): NVIDIA's remove waits until
 * every dma-buf of the GPU is released.
 * A dynamic exporter is left to its own invalidation during its remove()
 * (xe moves exported BOs to system memory, p2pbar revokes): the buffer is
 * mapped again where it went. One that is still mapped in that BAR when
 * the unbind is over (BUS_NOTIFY_UNBOUND_DRIVER) did not, and is revoked
 * then.
 *
 * And a PCI function added or removed: the P2PDMA verdicts kept for
 * dma-buf mappings are dropped (p2pnvme_dmabuf_forget()).
 */
static int reg_pci_notify(struct notifier_block *nb, unsigned long action, void *data)
{
	struct p2pnvme *c = container_of(nb, struct p2pnvme, reg_nb);
	struct device *dev = data;
	struct p2pnvme_reg *b;

	/* the topology changed: the P2PDMA verdicts kept may not hold */
	if (action == BUS_NOTIFY_ADD_DEVICE || action == BUS_NOTIFY_DEL_DEVICE) {
		p2pnvme_dmabuf_forget(c);
		return NOTIFY_OK;
	}
	if ((action != BUS_NOTIFY_UNBIND_DRIVER && action != BUS_NOTIFY_UNBOUND_DRIVER) ||
	    dev == &c->pdev->dev)
		return NOTIFY_DONE;
	mutex_lock(&c->reg_lock);
	list_for_each_entry(b, &c->reg_list, node) {
		if (b->kind != P2PNVME_REG_DMABUF || !b->attach || b->revoked ||
		    strcmp(b->owner, dev_name(dev)))
			continue;
		/* static: at the start; dynamic: at the end, if it did not move */
		if (dma_buf_is_dynamic(b->dmabuf) ?
		    action != BUS_NOTIFY_UNBOUND_DRIVER || READ_ONCE(b->stale) :
		    action != BUS_NOTIFY_UNBIND_DRIVER)
			continue;
		WRITE_ONCE(b->revoked, true);
		smp_mb();	/* revoked before busy is read: pairs with p2pnvme_reg_arm() */
		wait_event(b->wq, !atomic_read(&b->busy));
		pci_warn(c->pdev, "registered dma-buf in the BAR of %s: its driver is unbound and the exporter %s; unmapped, its transfers now fail (-ENODEV)\n",
			 dev_name(dev), dma_buf_is_dynamic(b->dmabuf) ?
			 "did not move or revoke it" : "cannot revoke");
		reg_unmap_locked(b);
		reg_drop_dmabuf(b);
	}
	mutex_unlock(&c->reg_lock);
	return NOTIFY_OK;
}

/**
 * p2pnvme_reg_watch - watch the unbinding of the functions registered
 *	dma-bufs live in (static exporters)
 * @c: the controller, probed; p2pnvme_reg_unwatch() before it is removed
 */
void p2pnvme_reg_watch(struct p2pnvme *c)
{
	c->reg_nb.notifier_call = reg_pci_notify;
	if (bus_register_notifier(&pci_bus_type, &c->reg_nb))
		c->reg_nb.notifier_call = NULL;
}

/**
 * p2pnvme_reg_unwatch - undo p2pnvme_reg_watch()
 * @c: the controller
 */
void p2pnvme_reg_unwatch(struct p2pnvme *c)
{
	if (c->reg_nb.notifier_call)
		bus_unregister_notifier(&pci_bus_type, &c->reg_nb);
	c->reg_nb.notifier_call = NULL;
}
#else
void p2pnvme_reg_watch(struct p2pnvme *c)
{
}

void p2pnvme_reg_unwatch(struct p2pnvme *c)
{
}
#endif

/**
 * p2pnvme_reg_remove - the controller goes: unmap every registered buffer
 * @c: the controller, DEAD, every command over, every io_uring request
 *     released (p2pnvme_async_drain())
 *
 * The buffers stay in their files' tables (transfers naming them fail with
 * -ENODEV, as all do now) until unregistered or closed; their dma-bufs are
 * let go now.
 */
void p2pnvme_reg_remove(struct p2pnvme *c)
{
	struct p2pnvme_reg *b;

	mutex_lock(&c->reg_lock);
	list_for_each_entry(b, &c->reg_list, node) {
		reg_unmap_locked(b);
		reg_drop_dmabuf(b);
	}
	mutex_unlock(&c->reg_lock);
}
