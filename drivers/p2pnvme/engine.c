// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme queue engine: controller registers, queue pairs, command slots,
 * submission and completion, timeouts, abort and reset.
 *
 * Every queue has depth - 1 command slots; the low bits of a command
 * identifier are the slot index, a 4-bit generation above them catches a
 * completion for a slot that was reused. A submitter waits for a free slot
 * when the queue is full; commands of one batch may be on several queues at
 * once. Completions of I/O queues arrive by MSI-X (one vector per queue) or,
 * in polled mode, are reaped by whoever is waiting; the admin queue is
 * always polled (its commands are few and synchronous).
 *
 * The waiter of a batch also watches its commands' deadlines: an expired
 * command is aborted (Abort command, at most the controller's Abort Command
 * Limit at once). "Not aborted" is the normal answer for a command that
 * completed just after its deadline: it gets another timeout. Only when it
 * is still not back then, or the Abort itself fails, does the reset worker
 * disable the controller, which stops all DMA (and, when the controller
 * does not acknowledge, bus mastering is turned off first), fail everything
 * in flight (-ETIMEDOUT for the expired commands, -ECANCELED for the
 * others, -ENODEV when the device is gone), wait for the I/O ioctls to
 * return, and bring the controller back up with the same queue memory.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "internal.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

void p2pnvme_free(struct kref *kref)
{
	struct p2pnvme *c = container_of(kref, struct p2pnvme, kref);

	pci_dev_put(c->pdev);
	percpu_ref_exit(&c->io_ref);
	p2pnvme_async_exit(c);
	free_percpu(c->pcpu);
	kfree(c);
}

/* SCT << 8 | SC of a completion's status field (no CRD, More, DNR) */
#define P2PNVME_STATUS_MASK	0x7ff

/* ---- registers ------------------------------------------------------- */

bool p2pnvme_ctrl_gone(struct p2pnvme *c)
{
	/* surprise removal: config and MMIO reads return all ones */
	return readl(c->bar + NVME_REG_CSTS) == ~0U;
}

int p2pnvme_wait_ready(struct p2pnvme *c, bool ready)
{
	unsigned long deadline = jiffies + c->ready_timeout;
	u32 csts;

	for (;;) {
		csts = readl(c->bar + NVME_REG_CSTS);
		if (csts == ~0U)
			return -ENODEV;
		if (!!(csts & NVME_CSTS_RDY) == ready)
			return 0;
		if (ready && (csts & NVME_CSTS_CFS))
			return -EIO;
		if (time_after(jiffies, deadline)) {
			pci_err(c->pdev, "CSTS.RDY did not become %d within CAP.TO\n", ready);
			return -ETIMEDOUT;
		}
		usleep_range(1000, 2000);
	}
}

int p2pnvme_ctrl_disable(struct p2pnvme *c)
{
	u32 cc = readl(c->bar + NVME_REG_CC);

	if (cc == ~0U)
		return -ENODEV;
	writel(cc & ~NVME_CC_ENABLE, c->bar + NVME_REG_CC);
	return p2pnvme_wait_ready(c, false);
}

/* ---- data pointers ----------------------------------------------------- */

static dma_addr_t cursor_addr(struct p2pnvme_cursor *cur)
{
	return sg_dma_address(cur->sg) + cur->off;
}

void p2pnvme_cursor_advance(struct p2pnvme_cursor *cur, u64 n)
{
	while (n && cur->sg) {
		u64 step = min_t(u64, n, sg_dma_len(cur->sg) - cur->off);

		cur->off += step;
		n -= step;
		if (cur->off == sg_dma_len(cur->sg)) {
			cur->sg = sg_next(cur->sg);
			cur->off = 0;
		}
	}
}

/**
 * p2pnvme_data_needs_list - does a command's data need a PRP list or an SGL
 *	segment, or fit into the command itself
 * @cur: where the data starts in a DMA-mapped scatterlist
 * @len: bytes
 * @sgl: described with SGLs (else PRPs)
 *
 * Exactly what p2pnvme_build_prps() and p2pnvme_build_sgl() need: PRP1 and
 * PRP2 cover the data up to the end of its second controller page, one SGL
 * data block descriptor what is left of the current segment.
 *
 * Return: true if a list is needed.
 */
bool p2pnvme_data_needs_list(const struct p2pnvme_cursor *cur, u64 len, bool sgl)
{
	dma_addr_t addr;

	if (!cur->sg)
		return false;	/* the build fails without a list just as well */
	if (sgl)
		return len > sg_dma_len(cur->sg) - cur->off;
	addr = sg_dma_address(cur->sg) + cur->off;
	return len > 2 * P2PNVME_CTRL_PAGE - (addr & (P2PNVME_CTRL_PAGE - 1));
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_data_needs_list);

/**
 * p2pnvme_build_prps - describe data with PRP1/PRP2 or a PRP list
 * @list: the command's list page (P2PNVME_LIST_SIZE bytes), or NULL when
 *	  p2pnvme_data_needs_list() said none is needed
 * @list_dma: its bus address
 * @cur: where the data starts in a DMA-mapped scatterlist; advanced by @len
 * @len: bytes
 * @cmd: the command whose data pointer is filled in
 *
 * Return: 0, -EINVAL when the mapped segments cannot be PRPs (every entry
 * after the first must start on a controller page, every one before the
 * last end on one) or the list runs short, -E2BIG when the list is full
 * (or needed and missing).
 */
int p2pnvme_build_prps(__le64 *list, dma_addr_t list_dma, struct p2pnvme_cursor *cur,
		       u64 len, struct nvme_command *cmd)
{
	dma_addr_t addr, second = 0;
	u64 first;
	int n = 0;

	if (!cur->sg || !len)
		return -EINVAL;
	addr = cursor_addr(cur);
	if (addr & 3)
		return -EINVAL;		/* PRPs are dword aligned */
	first = min_t(u64, len, P2PNVME_CTRL_PAGE - (addr & (P2PNVME_CTRL_PAGE - 1)));
	/* the first PRP may not cross the end of its segment into another */
	if (first > sg_dma_len(cur->sg) - cur->off)
		return -EINVAL;
	cmd->rw.dptr.prp1 = cpu_to_le64(addr);
	p2pnvme_cursor_advance(cur, first);
	len -= first;
	while (len) {
		u64 step = min_t(u64, len, P2PNVME_CTRL_PAGE);

		if (!cur->sg)
			return -EINVAL;
		addr = cursor_addr(cur);
		if (addr & (P2PNVME_CTRL_PAGE - 1))
			return -EINVAL;
		if (step > sg_dma_len(cur->sg) - cur->off)
			return -EINVAL;	/* a page split over two segments */
		if (n == P2PNVME_LIST_SIZE / sizeof(__le64) || (n && !list))
			return -E2BIG;
		if (list)
			list[n] = cpu_to_le64(addr);
		if (!n)
			second = addr;
		n++;
		p2pnvme_cursor_advance(cur, step);
		len -= step;
	}
	if (n == 1)
		cmd->rw.dptr.prp2 = cpu_to_le64(second);
	else if (n > 1)
		cmd->rw.dptr.prp2 = cpu_to_le64(list_dma);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_build_prps);

/**
 * p2pnvme_build_sgl - describe data with SGL data block descriptors
 * @list: the command's list page, room for P2PNVME_LIST_SIZE / 16
 *	  descriptors, or NULL when p2pnvme_data_needs_list() said none is
 *	  needed
 * @list_dma: its bus address
 * @cur: where the data starts in a DMA-mapped scatterlist; advanced by @len
 * @len: bytes
 * @cmd: the command whose data pointer is filled in
 *
 * One segment of the scatterlist is one descriptor; a single descriptor goes
 * into the command itself, several into @list behind a last-segment
 * descriptor.
 *
 * Return: 0, -EINVAL when the scatterlist runs short, -E2BIG when the list
 * is full (or needed and missing).
 */
int p2pnvme_build_sgl(struct nvme_sgl_desc *list, dma_addr_t list_dma,
		      struct p2pnvme_cursor *cur, u64 len, struct nvme_command *cmd)
{
	struct nvme_sgl_desc d = {};
	int n = 0;

	if (!len)
		return -EINVAL;
	cmd->rw.flags = NVME_CMD_SGL_METABUF;
	while (len) {
		u64 step;

		if (!cur->sg)
			return -EINVAL;
		step = min_t(u64, len, sg_dma_len(cur->sg) - cur->off);
		if (n == P2PNVME_LIST_SIZE / sizeof(*list) || (n && !list))
			return -E2BIG;
		d.addr = cpu_to_le64(cursor_addr(cur));
		d.length = cpu_to_le32(step);
		d.type = NVME_SGL_FMT_DATA_DESC << 4;
		if (list)
			list[n] = d;
		n++;
		p2pnvme_cursor_advance(cur, step);
		len -= step;
	}
	if (n == 1) {
		cmd->rw.dptr.sgl = d;
	} else {
		cmd->rw.dptr.sgl.addr = cpu_to_le64(list_dma);
		cmd->rw.dptr.sgl.length = cpu_to_le32(n * sizeof(*list));
		cmd->rw.dptr.sgl.type = NVME_SGL_FMT_LAST_SEG_DESC << 4;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_build_sgl);

/* ---- queues ---------------------------------------------------------- */

int p2pnvme_queue_alloc(struct p2pnvme *c, struct p2pnvme_queue *q, u16 qid, u16 depth)
{
	struct device *dev = &c->pdev->dev;

	q->c = c;
	q->qid = qid;
	q->depth = depth;
	q->vector = -1;
	q->stopped = true;
	spin_lock_init(&q->sq_lock);
	spin_lock_init(&q->cq_lock);
	q->sq = dmam_alloc_coherent(dev, depth * sizeof(*q->sq), &q->sq_dma, GFP_KERNEL);
	q->cq = dmam_alloc_coherent(dev, depth * sizeof(*q->cq), &q->cq_dma, GFP_KERNEL);
	q->cmds = devm_kcalloc(dev, depth - 1, sizeof(*q->cmds), GFP_KERNEL);
	q->slot_map = devm_bitmap_zalloc(dev, depth - 1, GFP_KERNEL);
	atomic_set(&q->room, depth - 1);
	if (!q->sq || !q->cq || !q->cmds || !q->slot_map)
		return -ENOMEM;
	/*
	 * PRP lists and SGL segments come from a pool, per command that needs
	 * one (more than two controller pages, or than one segment): the
	 * small transfers need none, and the memory follows what is in
	 * flight, not the depth. Admin commands carry at most PRP1: no pool.
	 */
	if (qid) {
		q->list_pool = dmam_pool_create("p2pnvme-list", dev, P2PNVME_LIST_SIZE,
						P2PNVME_LIST_SIZE, 0);
		if (!q->list_pool)
			return -ENOMEM;
	}
	q->sq_db = c->bar + NVME_REG_DBS + (2 * qid) * c->db_stride * 4;
	q->cq_db = c->bar + NVME_REG_DBS + (2 * qid + 1) * c->db_stride * 4;
	return 0;
}

/*
 * Reap @q's CQ or look at its busy slots: the interrupt handler takes
 * cq_lock too, so from process context it is taken with interrupts off.
 * Submitters never take it. (Holding the handler off with disable_irq()
 * instead, as nvme_poll_irqdisable() does, is not safe here: a managed
 * vector's CPU coming online starts the vector afresh, disabled or not.)
 */
static unsigned long cq_lock(struct p2pnvme_queue *q)
	__acquires(&q->cq_lock)
{
	unsigned long flags;

	spin_lock_irqsave(&q->cq_lock, flags);
	return flags;
}

static void cq_unlock(struct p2pnvme_queue *q, unsigned long flags)
	__releases(&q->cq_lock)
{
	spin_unlock_irqrestore(&q->cq_lock, flags);
}

/* Is the command in @cmd published? Then its fields are seen too. */
static bool cmd_busy(struct p2pnvme_cmd *cmd)
{
	/* pairs with the release that publishes it in p2pnvme_submit() */
	return smp_load_acquire(&cmd->busy);
}

/* Fresh rings for a (re)created queue, open for submissions. */
static void queue_start(struct p2pnvme_queue *q)
{
	unsigned long flags;

	flags = cq_lock(q);
	/* a submitter may hold a slot it has not published yet: it may go on */
	WARN_ON_ONCE(p2pnvme_queue_inflight(q));
	q->cq_head = 0;
	q->cq_phase = 1;
	memset(q->cq, 0, q->depth * sizeof(*q->cq));
	cq_unlock(q, flags);
	/* not inside cq_lock: sq_lock is taken with interrupts on */
	spin_lock(&q->sq_lock);
	q->sq_tail = 0;
	q->sq_db_tail = 0;
	WRITE_ONCE(q->stopped, false);
	spin_unlock(&q->sq_lock);
}

/*
 * No more submissions. Commands past their deadline are marked expired: a
 * reset is under way because of them, and they fail with -ETIMEDOUT even if
 * the controller completes them while it is being disabled.
 */
static void queue_stop(struct p2pnvme_queue *q)
{
	unsigned long flags;
	unsigned int i;

	spin_lock(&q->sq_lock);
	WRITE_ONCE(q->stopped, true);
	spin_unlock(&q->sq_lock);
	/* every command published before the stop is busy for the scan */
	flags = cq_lock(q);
	for (i = 0; i < q->depth - 1; i++) {
		struct p2pnvme_cmd *cmd = &q->cmds[i];

		if (cmd_busy(cmd) &&
		    (cmd->aborted || time_after(jiffies, cmd->deadline)))
			cmd->expired = true;
	}
	cq_unlock(q, flags);
}

/* Let the controller see every entry queued so far. Caller holds sq_lock. */
static void queue_ring_locked(struct p2pnvme_queue *q)
{
	lockdep_assert_held(&q->sq_lock);
	if (q->sq_tail == q->sq_db_tail)
		return;
	/*
	 * writel() orders the SQ entries (coherent host memory) before the
	 * doorbell MMIO write, so the controller never fetches a stale slot.
	 */
	writel(q->sq_tail, q->sq_db);
	q->sq_db_tail = q->sq_tail;
}

void p2pnvme_ring(struct p2pnvme_queue *q)
{
	spin_lock(&q->sq_lock);
	queue_ring_locked(q);
	spin_unlock(&q->sq_lock);
}

/* The doorbell, unless a reset or removal stopped the queue meanwhile. */
void p2pnvme_ring_live(struct p2pnvme_queue *q)
{
	spin_lock(&q->sq_lock);
	if (!q->stopped)
		queue_ring_locked(q);
	spin_unlock(&q->sq_lock);
}

/*
 * One command of @b is over; the last one wakes the batch's waiter, or
 * ends an asynchronous batch.
 */
static void batch_put(struct p2pnvme_batch *b)
{
	if (!atomic_dec_and_test(&b->pending))
		return;
	if (b->end)
		b->end(b);
	else
		complete(&b->done);	/* b may be gone right after this */
}

/* Is @cmd one of @b's (or, for the watchdog's batch, of any async one's)? */
static bool batch_has(const struct p2pnvme_batch *b, const struct p2pnvme_cmd *cmd)
{
	return b->any_async ? cmd->batch && cmd->batch->end : cmd->batch == b;
}

/**
 * p2pnvme_batch_launch - an asynchronous batch is submitted: let it end
 * @b: the batch, every command submitted (or failed to be)
 *
 * Drops the submitter's count; when every command is over already, @b->end
 * runs here.
 */
void p2pnvme_batch_launch(struct p2pnvme_batch *b)
{
	batch_put(b);
}

/*
 * Slots were freed: wake submitters waiting for one (and removal waiting
 * for the queues to drain). Batch waiters are woken by their completion.
 */
static void progress(struct p2pnvme *c, unsigned int n)
{
	if (!n)
		return;
	atomic_add_return(n, &c->progress);	/* ordered after the slots went free */
	/* the waiter adds itself before it looks at @progress: no lost wake-up */
	if (wq_has_sleeper(&c->wq))
		wake_up_all(&c->wq);
}

/**
 * p2pnvme_room_take - reserve room for commands on a queue
 * @q: the queue
 * @n: how many commands
 *
 * Return: true when @n slots are the caller's to take, one per command.
 */
bool p2pnvme_room_take(struct p2pnvme_queue *q, unsigned int n)
{
	int room = atomic_read(&q->room);

	do {
		if (room < (int)n)
			return false;
	} while (!atomic_try_cmpxchg(&q->room, &room, room - n));
	return true;
}

/**
 * p2pnvme_room_give - give back reserved room not used for a command
 * @q: the queue
 * @n: how many slots' worth
 */
void p2pnvme_room_give(struct p2pnvme_queue *q, unsigned int n)
{
	if (!n)
		return;
	atomic_add(n, &q->room);
	progress(q->c, n);
}

/*
 * Take a free command slot of @q with room reserved for it: one is free,
 * though other holders of room may take the one we look at first.
 */
static unsigned int slot_get(struct p2pnvme_queue *q)
{
	unsigned int n = q->depth - 1, i = READ_ONCE(q->next_slot);

	for (;;) {
		i = find_next_zero_bit(q->slot_map, n, i);
		/* acquire: what the slot's last user wrote is seen */
		if (i < n && !test_and_set_bit_lock(i, q->slot_map))
			break;
		if (i >= n) {
			i = 0;
			cpu_relax();
		}
	}
	WRITE_ONCE(q->next_slot, i + 1 < n ? i + 1 : 0);
	return i;
}

/* Give back the slot's list, if it has one (any context). */
static void list_free(struct p2pnvme_queue *q, struct p2pnvme_cmd *cmd)
{
	if (!cmd->list)
		return;
	dma_pool_free(q->list_pool, cmd->list, cmd->list_dma);
	cmd->list = NULL;
}

/*
 * A list block for @slot: from what @b took before publishing dma-buf
 * fences, else from the pool (which may reclaim).
 */
static int list_alloc(struct p2pnvme_queue *q, struct p2pnvme_batch *b,
		      struct p2pnvme_cmd *slot)
{
	struct p2pnvme_lists *l = b->lists;

	if (!l) {
		slot->list = dma_pool_alloc(q->list_pool, GFP_KERNEL, &slot->list_dma);
		return slot->list ? 0 : -ENOMEM;
	}
	if (l->nr) {
		l->nr--;
		slot->list = l->list[l->nr];
		slot->list_dma = l->dma[l->nr];
		return 0;
	}
	/*
	 * More commands than a queue holds: the batch's earlier lists went
	 * back to the pool as their commands completed; no reclaim now.
	 */
	slot->list = dma_pool_alloc(q->list_pool, GFP_NOWAIT | __GFP_NOWARN, &slot->list_dma);
	return slot->list ? 0 : -ENOMEM;
}

/*
 * Give a slot and its room back; release: everything written to it before
 * is seen by its next user.
 */
static void slot_put(struct p2pnvme_queue *q, struct p2pnvme_cmd *cmd)
{
	clear_bit_unlock(cmd - q->cmds, q->slot_map);
	atomic_inc(&q->room);
}

/*
 * A command is done: record its outcome in its request and let the slot go.
 * Caller holds cq_lock. The batch's waiter may free the request and the
 * batch once batch_put() completes it, so they are not touched after.
 */
static void cmd_finish(struct p2pnvme_queue *q, struct p2pnvme_cmd *cmd, u16 status,
		       u32 result, int err)
{
	struct p2pnvme_batch *b = cmd->batch;
	struct p2pnvme_req *r = cmd->req;

	lockdep_assert_held(&q->cq_lock);
	if (b) {
		/* given up on: what the reset's drain brings back is not trusted */
		if (cmd->expired)
			err = -ETIMEDOUT;
		else if (!err && status)
			err = cmd->aborted ? -ETIMEDOUT : -EIO;
		/* the first real error wins over a cancellation */
		if (err && (!r->error || r->error == -ECANCELED)) {
			r->error = err;
			r->status = status & P2PNVME_STATUS_MASK;
		}
		r->result = result;
	}
	cmd->batch = NULL;
	cmd->req = NULL;
	list_free(q, cmd);	/* the controller is done reading it */
	WRITE_ONCE(cmd->busy, false);
	WRITE_ONCE(q->completed, q->completed + 1);
	slot_put(q, cmd);
	/* last: the batch (and with it @r) may be freed once this puts it */
	if (b)
		batch_put(b);
}

/* Is there a new completion entry? Anyone may look (a hint). */
static bool cqe_pending(struct p2pnvme_queue *q)
{
	u16 head = READ_ONCE(q->cq_head);

	return (le16_to_cpu(READ_ONCE(q->cq[head].status)) & 1) == READ_ONCE(q->cq_phase);
}

/* Reap new completion entries. Caller holds cq_lock. Return: how many. */
static unsigned int queue_process_cq(struct p2pnvme_queue *q)
{
	struct p2pnvme *c = q->c;
	unsigned int n = 0;
	bool moved = false;

	lockdep_assert_held(&q->cq_lock);
	for (;;) {
		struct nvme_completion *cqe = &q->cq[q->cq_head];
		u16 st = le16_to_cpu(READ_ONCE(cqe->status)), cid, slot;
		struct p2pnvme_cmd *cmd;

		/* the phase bit flips when the controller has written the entry */
		if ((st & 1) != q->cq_phase)
			break;
		/* read the rest of the entry only after seeing the phase bit */
		dma_rmb();
		cid = READ_ONCE(cqe->command_id);
		if (q->cq_head + 1 == q->depth) {
			WRITE_ONCE(q->cq_head, 0);
			WRITE_ONCE(q->cq_phase, q->cq_phase ^ 1);
		} else {
			WRITE_ONCE(q->cq_head, q->cq_head + 1);
		}
		moved = true;
		trace_p2pnvme_complete(c->pdev, q->qid, cid, st >> 1);
		slot = cid & P2PNVME_CID_SLOT_MASK;
		cmd = slot < q->depth - 1 ? &q->cmds[slot] : NULL;
		/*
		 * A bogus identifier may name a slot being filled right now:
		 * only a published command (busy, of this generation) ends.
		 */
		if (!cmd || !cmd_busy(cmd) ||
		    (cid >> P2PNVME_CID_SLOT_BITS) != (READ_ONCE(cmd->gen) & 0xf)) {
			dev_warn_ratelimited(&c->pdev->dev, "q%u: completion for unknown cid %#x\n",
					     q->qid, cid);
			continue;
		}
		cmd_finish(q, cmd, st >> 1, le32_to_cpu(cqe->result.u32), 0);
		n++;
	}
	/* tell the controller the entries are consumed */
	if (moved)
		writel(q->cq_head, q->cq_db);
	return n;
}

/* Reap @q from process context. Return: completions found. */
static unsigned int queue_poll(struct p2pnvme_queue *q)
{
	unsigned long flags;
	unsigned int n;

	if (!cqe_pending(q))
		return 0;
	flags = cq_lock(q);
	n = queue_process_cq(q);
	cq_unlock(q, flags);
	progress(q->c, n);
	return n;
}

/**
 * p2pnvme_queue_reap - reap a queue's completions for io_uring
 * @q: an I/O queue of a LIVE controller, inside the I/O guard (a
 *     reference on @q->c->io_ref)
 *
 * For IOPOLL rings, polled controller or not. A queue that its interrupt
 * handler or another poller is reaping right now is left to that one.
 *
 * Return: completions found.
 */
unsigned int p2pnvme_queue_reap(struct p2pnvme_queue *q)
{
	unsigned long flags;
	unsigned int n;

	if (!cqe_pending(q))
		return 0;
	local_irq_save(flags);
	if (!spin_trylock(&q->cq_lock)) {
		local_irq_restore(flags);
		return 0;
	}
	n = queue_process_cq(q);
	spin_unlock_irqrestore(&q->cq_lock, flags);
	progress(q->c, n);
	return n;
}

irqreturn_t p2pnvme_irq(int irq, void *data)
{
	struct p2pnvme_queue *q = data;
	unsigned int n;

	spin_lock(&q->cq_lock);
	n = queue_process_cq(q);
	spin_unlock(&q->cq_lock);
	if (!n)
		return IRQ_NONE;
	p2pnvme_stat_add(q->c, ST_IRQS, 1);
	progress(q->c, n);
	return IRQ_HANDLED;
}

/* ---- submission ------------------------------------------------------- */

static void check_timeouts(struct p2pnvme *c, struct p2pnvme_batch *b);

/* No interrupt tells this batch's waiter about its completions. */
static bool batch_polled(struct p2pnvme *c, struct p2pnvme_batch *b)
{
	return b->admin || c->polled;
}

/* Reap the queues a polled batch may have commands on. */
static void batch_poll(struct p2pnvme *c, struct p2pnvme_batch *b)
{
	unsigned int i;

	if (b->admin) {
		queue_poll(&c->adminq);
		return;
	}
	for (i = 0; i < c->nr_ioq; i++)
		queue_poll(&c->ioq[i]);
}

/*
 * Wait a little for any completion after @seen (c->progress), reaping
 * polled queues ourselves, then look at the batch's deadlines.
 */
static void wait_progress(struct p2pnvme *c, struct p2pnvme_batch *b, int seen)
{
	if (batch_polled(c, b)) {
		batch_poll(c, b);
		if (atomic_read(&c->progress) == seen)
			usleep_range(5, 20);
	} else {
		wait_event_timeout(c->wq, atomic_read(&c->progress) != seen, HZ / 20);
	}
	check_timeouts(c, b);
}

void p2pnvme_batch_init(struct p2pnvme_batch *b, bool admin)
{
	atomic_set(&b->pending, 1);	/* the submitter's, see the struct */
	init_completion(&b->done);
	b->admin = admin;
	b->any_async = false;
	b->next_check = jiffies + max(HZ / 20, 1);
	b->end = NULL;
	b->lists = NULL;
}

/**
 * p2pnvme_submit - queue one command of a request
 * @c: the controller
 * @b: the batch that will wait for it
 * @r: its request (the admin queue for an admin batch, else @r->q)
 * @cmd: the command; its identifier and data pointer are filled in here
 * @cur: its data in a DMA-mapped scatterlist (advanced by @len), or NULL
 * @len: bytes of data
 * @ring: write the doorbell now; else a later p2pnvme_ring() must
 *
 * Waits for a free slot when the queue is full, unless room was reserved
 * for @r (p2pnvme_req_reserve()).
 *
 * Return: 0, -ECANCELED (queue stopped for a reset), -ENODEV (controller
 * going away), or the error of building the data pointer.
 */
int p2pnvme_submit(struct p2pnvme *c, struct p2pnvme_batch *b, struct p2pnvme_req *r,
		   struct nvme_command *cmd, struct p2pnvme_cursor *cur, u64 len, bool ring)
{
	struct p2pnvme_queue *q = b->admin ? &c->adminq : r->q;
	struct p2pnvme_cmd *slot;
	unsigned int i;
	int ret, seen;

	if (r->reserved) {
		r->reserved--;	/* p2pnvme_req_reserve() took it */
	} else if (!p2pnvme_room_take(q, 1)) {
		p2pnvme_stat_add(c, ST_QUEUE_FULL_WAITS, 1);
		for (;;) {
			seen = atomic_read_acquire(&c->progress);
			if (READ_ONCE(q->stopped))
				goto stopped;
			if (p2pnvme_room_take(q, 1))
				break;
			/* full: what we queued must reach the controller to come back */
			p2pnvme_ring(q);
			wait_progress(c, b, seen);
		}
	}

	/* the slot is ours until it is published: no lock to fill it */
	i = slot_get(q);
	slot = &q->cmds[i];
	WRITE_ONCE(slot->gen, slot->gen + 1);
	cmd->common.command_id = i | (slot->gen & 0xf) << P2PNVME_CID_SLOT_BITS;
	if (cur) {
		if (p2pnvme_data_needs_list(cur, len, r->sgl)) {
			ret = list_alloc(q, b, slot);
			if (ret)
				goto free_slot;
		}
		ret = r->sgl ? p2pnvme_build_sgl((struct nvme_sgl_desc *)slot->list,
						 slot->list_dma, cur, len, cmd) :
			       p2pnvme_build_prps(slot->list, slot->list_dma, cur, len, cmd);
		if (ret)
			goto free_slot;
	}
	slot->batch = b;
	slot->req = r;
	slot->aborted = false;
	slot->expired = false;
	slot->deadline = jiffies + p2pnvme_io_timeout();
	atomic_inc(&b->pending);	/* before the command can complete */

	spin_lock(&q->sq_lock);
	if (q->stopped) {
		spin_unlock(&q->sq_lock);
		slot->batch = NULL;
		slot->req = NULL;
		list_free(q, slot);
		slot_put(q, slot);
		progress(c, 1);
		atomic_dec(&b->pending);	/* never the last: ours is held */
		goto stopped;
	}
	/* publish: the slot's fields before @busy, for the scans under cq_lock */
	smp_store_release(&slot->busy, true);
	WRITE_ONCE(q->submitted, q->submitted + 1);
	q->inflight_max = max_t(u16, q->inflight_max, p2pnvme_queue_inflight(q));
	memcpy(&q->sq[q->sq_tail], cmd, sizeof(*cmd));
	if (++q->sq_tail == q->depth)
		q->sq_tail = 0;
	if (ring)
		queue_ring_locked(q);
	spin_unlock(&q->sq_lock);
	trace_p2pnvme_submit(c->pdev, q->qid, cmd->common.command_id, cmd->common.opcode,
			     le64_to_cpu(cmd->common.dptr.prp1));
	return 0;

stopped:
	return p2pnvme_state(c) >= P2PNVME_DELETING ? -ENODEV : -ECANCELED;

free_slot:
	list_free(q, slot);
	slot_put(q, slot);
	progress(c, 1);
	return ret;
}

/**
 * p2pnvme_wait_batch - wait until every command of a batch is done
 * @c: the controller
 * @b: the batch
 *
 * Never waits forever: expired commands are aborted, then the controller
 * reset, which fails whatever is left; admin commands are given up on at
 * their deadline (their slots stay busy until the controller returns them
 * or a reset or removal cancels them).
 */
void p2pnvme_wait_batch(struct p2pnvme *c, struct p2pnvme_batch *b)
{
	/* everything is submitted: drop the submitter's count */
	if (atomic_dec_and_test(&b->pending))
		return;		/* all done already, nobody completes b */
	for (;;) {
		bool polled = batch_polled(c, b);

		if (!polled && wait_for_completion_timeout(&b->done, max(HZ / 20, 1)))
			return;
		/* interrupts too: a lost one (its CPUs went offline) costs 50 ms */
		batch_poll(c, b);
		if (try_wait_for_completion(&b->done))
			return;
		if (polled)
			usleep_range(5, 20);
		check_timeouts(c, b);
	}
}

/**
 * p2pnvme_admin_exec_status - run one admin command and wait for it
 * @c: the controller
 * @cmd: the command, data pointers filled in
 * @result: out (may be NULL): completion dword 0
 * @status: out: the NVMe status (SCT << 8 | SC) when it failed with one
 *
 * Return: 0, -EIO (NVMe status in @status), -ETIMEDOUT, -ECANCELED,
 * -ENODEV.
 */
int p2pnvme_admin_exec_status(struct p2pnvme *c, struct nvme_command *cmd, u32 *result,
			      u16 *status)
{
	struct p2pnvme_batch b;
	struct p2pnvme_req r = {};
	int ret;

	p2pnvme_batch_init(&b, true);
	ret = p2pnvme_submit(c, &b, &r, cmd, NULL, 0, true);
	if (ret)
		return ret;
	p2pnvme_wait_batch(c, &b);
	if (result)
		*result = r.result;
	*status = r.status;
	return r.error;
}

int p2pnvme_admin_exec(struct p2pnvme *c, struct nvme_command *cmd, u32 *result)
{
	u16 status;
	int ret = p2pnvme_admin_exec_status(c, cmd, result, &status);

	if (ret == -EIO)
		pci_err(c->pdev, "admin opcode %#x failed, status %#x\n", cmd->common.opcode,
			status);
	return ret;
}

/* ---- timeouts, abort, reset ------------------------------------------- */

/*
 * Give up on the batch's admin commands (they stay busy, owned by the
 * controller). Caller holds cq_lock.
 */
static unsigned int admin_give_up(struct p2pnvme_queue *q, struct p2pnvme_batch *b, int err,
				  bool expired_only)
{
	unsigned int i, n = 0;

	lockdep_assert_held(&q->cq_lock);
	for (i = 0; i < q->depth - 1; i++) {
		struct p2pnvme_cmd *cmd = &q->cmds[i];

		if (!cmd_busy(cmd) || !batch_has(b, cmd))
			continue;
		if (expired_only && !time_after(jiffies, cmd->deadline))
			continue;
		cmd->req->error = err;
		cmd->batch = NULL;
		cmd->req = NULL;
		batch_put(b);
		n++;
	}
	return n;
}

/*
 * Find the batch's commands on @q that are past their deadline. One that
 * was aborted already sets *@reset. With @abort, the first one not aborted
 * yet is marked aborted (and given another timeout) and @abort filled in
 * for it; without, nothing changes. Return: such a command was found.
 */
static bool queue_expired(struct p2pnvme_queue *q, struct p2pnvme_batch *b,
			  struct nvme_command *abort, bool *reset)
{
	unsigned long flags;
	bool found = false;
	unsigned int j;

	if (!p2pnvme_queue_inflight(q))
		return false;
	flags = cq_lock(q);
	for (j = 0; j < q->depth - 1 && !found; j++) {
		struct p2pnvme_cmd *cmd = &q->cmds[j];

		if (!cmd_busy(cmd) || !batch_has(b, cmd) ||
		    !time_after(jiffies, cmd->deadline))
			continue;
		if (cmd->aborted) {
			*reset = true;	/* aborted and still not back */
			continue;
		}
		found = true;
		if (!abort)
			break;
		cmd->aborted = true;
		cmd->deadline = jiffies + p2pnvme_io_timeout();
		p2pnvme_stat_add(q->c, ST_TIMEOUTS, 1);
		abort->abort.opcode = nvme_admin_abort_cmd;
		abort->abort.sqid = cpu_to_le16(q->qid);
		abort->abort.cid = j | (cmd->gen & 0xf) << P2PNVME_CID_SLOT_BITS;
	}
	cq_unlock(q, flags);
	return found;
}

static void check_timeouts(struct p2pnvme *c, struct p2pnvme_batch *b)
{
	struct nvme_command abort = {};
	struct p2pnvme_queue *q;
	unsigned long flags;
	bool reset = false, do_abort = false, can_abort;
	unsigned int i, n;
	u32 csts, res;
	int ret;

	if (time_before(jiffies, b->next_check))
		return;
	b->next_check = jiffies + max(HZ / 20, 1);

	csts = readl(c->bar + NVME_REG_CSTS);
	if (csts == ~0U || (csts & NVME_CSTS_CFS)) {
		if (b->admin) {
			/* nobody will answer: fail the admin commands right away */
			flags = cq_lock(&c->adminq);
			n = admin_give_up(&c->adminq, b, csts == ~0U ? -ENODEV : -EIO, false);
			cq_unlock(&c->adminq, flags);
			progress(c, n);
		}
		if (p2pnvme_state(c) == P2PNVME_LIVE)
			pci_err(c->pdev, "controller %s\n",
				csts == ~0U ? "gone (reads all ones)" : "fatal status (CSTS.CFS)");
		p2pnvme_schedule_reset(c);
		return;
	}

	if (b->admin) {
		flags = cq_lock(&c->adminq);
		n = admin_give_up(&c->adminq, b, -ETIMEDOUT, true);
		cq_unlock(&c->adminq, flags);
		if (n) {
			p2pnvme_stat_add(c, ST_TIMEOUTS, n);
			pci_warn(c->pdev, "admin command timed out after %u ms\n",
				 READ_ONCE(p2pnvme_io_timeout_ms));
			progress(c, n);
			p2pnvme_schedule_reset(c);
		}
		return;
	}

	/* room for one more Abort within the controller's limit? */
	can_abort = atomic_inc_return(&c->aborts) <= c->acl;
	for (i = 0; i < c->nr_ioq && !do_abort; i++) {
		q = &c->ioq[i];
		/* a completion whose interrupt got lost is no timeout */
		if (!c->polled && queue_expired(q, b, NULL, &reset)) {
			n = queue_poll(q);
			if (n)
				dev_warn_ratelimited(&c->pdev->dev,
						     "q%u: %u completions found without an interrupt\n",
						     q->qid, n);
		}
		if (can_abort)
			do_abort = queue_expired(q, b, &abort, &reset);
		else if (queue_expired(q, b, NULL, &reset))
			dev_warn_ratelimited(&c->pdev->dev,
					     "q%u: expired command waits for the Abort Command Limit (%u)\n",
					     q->qid, c->acl);
	}

	/* a reset is on its way or the device is being removed: it cancels all */
	if (p2pnvme_state(c) != P2PNVME_LIVE)
		do_abort = false;
	if (do_abort) {
		pci_warn(c->pdev, "q%u cid %#x timed out after %u ms, aborting\n",
			 le16_to_cpu(abort.abort.sqid), abort.abort.cid,
			 READ_ONCE(p2pnvme_io_timeout_ms));
		res = 1;
		ret = p2pnvme_admin_exec(c, &abort, &res);
		if (ret) {
			reset = true;		/* the Abort itself went unanswered */
		} else if (!(res & 1)) {
			/* dw0 bit 0 clear: aborted, the command completes so */
			p2pnvme_stat_add(c, ST_ABORTS, 1);
		} else {
			/* completing, or stuck: another timeout decides */
			pci_info(c->pdev, "q%u cid %#x not aborted; %u ms more before a reset\n",
				 le16_to_cpu(abort.abort.sqid), abort.abort.cid,
				 READ_ONCE(p2pnvme_io_timeout_ms));
		}
	}
	atomic_dec(&c->aborts);
	if (p2pnvme_state(c) != P2PNVME_LIVE)
		return;
	if (reset)
		p2pnvme_schedule_reset(c);
}

/**
 * p2pnvme_check_async_timeouts - abort or reset for expired io_uring commands
 * @c: the controller, inside the I/O guard (p2pnvme_io_tryenter()): the
 *     queues are not being started again under it
 *
 * The asynchronous batches have no waiter: the watchdog reaps what a lost
 * interrupt or an idle IOPOLL ring left and looks for expired commands
 * (every tenth of io_timeout_ms, 50 to 500 ms), as a waiter does for its
 * batch. Sleeps (Abort).
 */
void p2pnvme_check_async_timeouts(struct p2pnvme *c)
{
	unsigned int i;

	/*
	 * Completions whose interrupt was lost (its CPUs went offline), or
	 * that a polled queue's IOPOLL ring has not come back for: a command
	 * the controller completed is never a timeout.
	 */
	for (i = 0; i < c->nr_ioq; i++)
		queue_poll(&c->ioq[i]);
	check_timeouts(c, &c->async_any);
}

/* Which states each state may follow (enum p2pnvme_state has the why). */
static const u8 state_from[P2PNVME_NR_STATES] = {
	[P2PNVME_LIVE]		= BIT(P2PNVME_RESETTING) | BIT(P2PNVME_RECOVERING),
	[P2PNVME_RESETTING]	= BIT(P2PNVME_LIVE),
	[P2PNVME_RECOVERING]	= BIT(P2PNVME_LIVE) | BIT(P2PNVME_RESETTING),
	[P2PNVME_DELETING]	= BIT(P2PNVME_LIVE) | BIT(P2PNVME_RESETTING) |
				  BIT(P2PNVME_RECOVERING),
	[P2PNVME_DEAD]		= BIT(P2PNVME_LIVE) | BIT(P2PNVME_RESETTING) |
				  BIT(P2PNVME_RECOVERING) | BIT(P2PNVME_DELETING),
};

/* p2pnvme_change_state() with state_lock held; the caller wakes @c->wq. */
static bool __change_state(struct p2pnvme *c, enum p2pnvme_state new)
{
	enum p2pnvme_state old = c->state;

	lockdep_assert_held(&c->state_lock);
	if (!(state_from[new] & BIT(old)))
		return false;
	WRITE_ONCE(c->state, new);
	if (new != P2PNVME_RECOVERING)
		c->recovery = P2PNVME_RECOVERY_NONE;
	return true;
}

/**
 * p2pnvme_change_state - move the controller to another state
 * @c: the controller
 * @new: where it goes
 *
 * The only writer of @c->state, as nvme_change_ctrl_state() is nvme
 * core's: the table above says which transitions exist (enum
 * p2pnvme_state, why). Whoever waits on @c->wq for a state is woken.
 *
 * Return: true if it moved; false if @new cannot follow the state it is in
 * (someone else took the controller over: a removal, a recovery, a
 * failure).
 */
bool p2pnvme_change_state(struct p2pnvme *c, enum p2pnvme_state new)
{
	bool moved;

	spin_lock(&c->state_lock);
	moved = __change_state(c, new);
	spin_unlock(&c->state_lock);
	if (moved)
		wake_up_all(&c->wq);
	return moved;
}

/**
 * p2pnvme_schedule_reset - have the reset worker reset a live controller
 * @c: the controller
 *
 * Nothing happens unless it is LIVE: a reset already queued or running, a
 * recovery or a removal takes care of everything in flight.
 */
void p2pnvme_schedule_reset(struct p2pnvme *c)
{
	bool queue = false;

	spin_lock(&c->state_lock);
	/* the link is down: PCI error recovery is coming, registers read ~0 */
	if (!pci_channel_offline(c->pdev) && __change_state(c, P2PNVME_RESETTING)) {
		kref_get(&c->kref);	/* the worker's, put when it is done */
		queue = true;
	}
	spin_unlock(&c->state_lock);
	if (!queue)
		return;
	queue_work(system_unbound_wq, &c->reset_work);
	wake_up_all(&c->wq);
}

static void queues_stop(struct p2pnvme *c)
{
	unsigned int i;

	queue_stop(&c->adminq);
	for (i = 0; i < c->nr_ioq; i++)
		queue_stop(&c->ioq[i]);
}

/*
 * Fail every command still owned by a disabled controller: @err, or
 * -ETIMEDOUT for an expired command when @err is -ECANCELED.
 */
static void queue_cancel(struct p2pnvme_queue *q, int err)
{
	struct p2pnvme *c = q->c;
	unsigned long flags;
	unsigned int i, n = 0;

	flags = cq_lock(q);
	for (i = 0; i < q->depth - 1; i++) {
		struct p2pnvme_cmd *cmd = &q->cmds[i];
		int e = err;

		if (!cmd_busy(cmd))
			continue;
		if (e == -ECANCELED && cmd->expired)
			e = -ETIMEDOUT;
		cmd_finish(q, cmd, NVME_SC_HOST_ABORTED_CMD, 0, e);
		n++;
	}
	cq_unlock(q, flags);
	p2pnvme_stat_add(c, ST_CANCELLED, n);
	progress(c, n);
}

static void queues_cancel(struct p2pnvme *c, int err)
{
	unsigned int i;

	queue_cancel(&c->adminq, err);
	for (i = 0; i < c->nr_ioq; i++)
		queue_cancel(&c->ioq[i], err);
}

/*
 * The end of a reset or a recovery that left the controller in @from: LIVE
 * again when @ret is 0, else out of service for good (DEAD), and then the
 * controller does not DMA any more either. Caller holds reset_lock for
 * write. Whoever took over meanwhile (a removal: DELETING; a recovery:
 * RECOVERING, from the reset worker) keeps the controller.
 */
static void reset_finish(struct p2pnvme *c, enum p2pnvme_state from, int ret)
{
	bool moved = false;

	lockdep_assert_held_write(&c->reset_lock);
	spin_lock(&c->state_lock);
	if (c->state == from)
		moved = __change_state(c, ret ? P2PNVME_DEAD : P2PNVME_LIVE);
	spin_unlock(&c->state_lock);
	if (!moved)
		return;
	wake_up_all(&c->wq);
	if (ret) {
		p2pnvme_ctrl_disable(c);
		pci_clear_master(c->pdev);
	}
}

/*
 * Take the controller out of service for a reset, while its registers
 * still answer: no more submissions, CC.EN = 0, bus mastering off, then
 * every command in flight fails. Nothing may be cancelled (buffers
 * unpinned, freed) while the controller can still DMA. CC.EN = 0 asks it to
 * stop, but a hung controller may not acknowledge within CAP.TO, or seem to
 * while its registers do not answer: bus mastering goes off in any case, as
 * nvme-pci disables the PCI device, and comes back with the enable.
 *
 * Return: what disabling said; -ENODEV: the device is gone, and so the
 * commands failed with -ENODEV rather than -ECANCELED.
 */
static int ctrl_halt(struct p2pnvme *c)
{
	int ret;

	queues_stop(c);
	ret = p2pnvme_ctrl_disable(c);
	pci_clear_master(c->pdev);
	queues_cancel(c, ret == -ENODEV ? -ENODEV : -ECANCELED);
	return ret;
}

void p2pnvme_reset_work(struct work_struct *work)
{
	struct p2pnvme *c = container_of(work, struct p2pnvme, reset_work);
	bool deleting;
	int ret;

	p2pnvme_stat_add(c, ST_RESETS, 1);
	trace_p2pnvme_reset(c->pdev, false, 0);
	pci_dbg(c->pdev, "reset: stopping the queues\n");
	ret = ctrl_halt(c);

	p2pnvme_io_freeze(c);		/* every I/O ioctl has returned */
	down_write(&c->reset_lock);	/* and every reader of the queues */
	/* remove() or a recovery took over: it does the rest */
	deleting = p2pnvme_state(c) != P2PNVME_RESETTING;
	if (!ret && !deleting)
		ret = p2pnvme_ctrl_enable(c);
	/* before the state leaves RESETTING; remove() freezes it for good */
	p2pnvme_io_thaw(c);
	reset_finish(c, P2PNVME_RESETTING, ret);
	trace_p2pnvme_reset(c->pdev, true, ret);
	if (ret)
		pci_err(c->pdev, "reset failed (%d); the controller is out of service\n", ret);
	else if (!deleting)
		pci_warn(c->pdev, "controller reset\n");
	up_write(&c->reset_lock);
	wake_up_all(&c->wq);
	kref_put(&c->kref, p2pnvme_free);
}

/*
 * PCI error recovery or a PCI reset of the function (@owner) takes the
 * controller: LIVE or RESETTING -> RECOVERING (or DEAD, with @err -ENODEV),
 * so that no timeout schedules a reset from now on; then a reset queued is
 * dropped and one running is waited for (it sees RECOVERING and enables
 * nothing, and it never needs the device lock, which the caller holds:
 * nothing else can take the controller meanwhile, remove() included). The
 * I/O path waits in p2pnvme_io_enter() meanwhile, or fails (DEAD).
 * ctrl_give_back() ends it.
 *
 * Return: true if it was in service and is now the caller's; false: it
 * was out of service already, or another recovery owns it.
 */
static bool ctrl_take(struct p2pnvme *c, enum p2pnvme_recovery owner, int err)
{
	bool taken;

	device_lock_assert(&c->pdev->dev);
	spin_lock(&c->state_lock);
	taken = __change_state(c, err == -ENODEV ? P2PNVME_DEAD : P2PNVME_RECOVERING);
	if (taken && err != -ENODEV)
		c->recovery = owner;
	spin_unlock(&c->state_lock);
	if (!taken)
		return false;
	wake_up_all(&c->wq);
	if (cancel_work_sync(&c->reset_work))
		kref_put(&c->kref, p2pnvme_free);	/* the queued reset's */
	return true;
}

/* Does @owner's recovery hold the controller? (the device lock keeps it so) */
static bool ctrl_owned(struct p2pnvme *c, enum p2pnvme_recovery owner)
{
	device_lock_assert(&c->pdev->dev);
	return p2pnvme_state(c) == P2PNVME_RECOVERING && READ_ONCE(c->recovery) == owner;
}

/*
 * The end of what ctrl_take() began: a controller @owner still holds is
 * enabled again as the reset worker does it (every I/O ioctl has returned
 * first; the guard comes back before the state leaves RECOVERING), its
 * config space saved again for the next PCI reset or error (restoring it
 * used it up). Caller holds the device lock, as for ctrl_take().
 *
 * Return: 0 when it is LIVE again; otherwise it is out of service (DEAD,
 * or @owner did not hold it: -ENODEV).
 */
static int ctrl_give_back(struct p2pnvme *c, enum p2pnvme_recovery owner)
{
	bool owned;
	int ret = -ENODEV;

	p2pnvme_io_freeze(c);		/* every I/O ioctl has returned */
	down_write(&c->reset_lock);	/* and every reader of the queues */
	owned = ctrl_owned(c, owner);
	if (owned)
		ret = p2pnvme_ctrl_enable(c);
	p2pnvme_io_thaw(c);		/* before the state leaves RECOVERING */
	if (owned)
		reset_finish(c, P2PNVME_RECOVERING, ret);
	up_write(&c->reset_lock);
	if (owned)
		p2pnvme_stat_add(c, ST_RESETS, 1);
	if (!ret)
		pci_save_state(c->pdev);
	return ret;
}

/**
 * p2pnvme_error_stop - a PCI error froze the link: take everything back
 * @c: the controller; the PCI core holds the device lock (no remove())
 * @err: what the commands in flight fail with
 *
 * The controller's registers cannot be trusted now: no CC.EN = 0, just
 * bus mastering off, then every command in flight fails. The state goes to
 * RECOVERING (the I/O ioctls wait) or, with @err -ENODEV, to DEAD;
 * p2pnvme_error_resume() brings the controller back after the slot reset.
 */
void p2pnvme_error_stop(struct p2pnvme *c, int err)
{
	ctrl_take(c, P2PNVME_RECOVERY_PCI_ERROR, err);
	queues_stop(c);
	pci_clear_master(c->pdev);
	queues_cancel(c, err);
}

/**
 * p2pnvme_error_resume - bring a controller back after a PCI error's reset
 * @c: the controller; the PCI core holds the device lock
 *
 * Nothing happens unless p2pnvme_error_stop() took it (a recoverable error
 * of another device below the same bridge also ends in resume).
 *
 * Return: 0 when it is LIVE again; 1 when the error was not its own;
 * otherwise it is DEAD.
 */
int p2pnvme_error_resume(struct p2pnvme *c)
{
	if (!ctrl_owned(c, P2PNVME_RECOVERY_PCI_ERROR))
		return 1;
	return ctrl_give_back(c, P2PNVME_RECOVERY_PCI_ERROR);
}

/**
 * p2pnvme_reset_prepare - a reset of the PCI function is coming: stop first
 * @c: the controller; the PCI core holds the device lock from here until
 *     after p2pnvme_reset_done() (no remove(), no PCI error callback)
 *
 * An FLR through sysfs, or a bus or slot reset that takes this function
 * along: the PCI core turns memory decoding and bus mastering off next,
 * then resets the function. As the reset worker does while the registers
 * still answer: queues stopped, CC.EN = 0, bus mastering off, every
 * command in flight fails (-ECANCELED, -ETIMEDOUT if it had expired,
 * -ENODEV if the device is gone). Until p2pnvme_reset_done() no timeout
 * schedules a reset (its registers read all ones or zeroes meanwhile) and
 * the I/O path waits (RECOVERING). A controller that PCI error recovery
 * owns is left to it (it resumes it), one out of service stays so.
 */
void p2pnvme_reset_prepare(struct p2pnvme *c)
{
	if (!ctrl_take(c, P2PNVME_RECOVERY_FUNC_RESET, -ECANCELED))
		return;
	trace_p2pnvme_reset(c->pdev, false, 0);
	pci_dbg(c->pdev, "PCI reset: stopping the controller\n");
	ctrl_halt(c);
}

/**
 * p2pnvme_reset_done - the PCI function's reset is over: enable it again
 * @c: the controller; the PCI core restored its config space and holds the
 *     device lock
 *
 * As after a PCI error's slot reset: LIVE again, or out of service (DEAD)
 * if it does not come back. Nothing happens unless
 * p2pnvme_reset_prepare() took it.
 */
void p2pnvme_reset_done(struct p2pnvme *c)
{
	int ret;

	if (!ctrl_owned(c, P2PNVME_RECOVERY_FUNC_RESET))
		return;
	ret = ctrl_give_back(c, P2PNVME_RECOVERY_FUNC_RESET);
	trace_p2pnvme_reset(c->pdev, true, ret);
	if (ret)
		pci_err(c->pdev, "controller did not come back after a PCI reset (%d); out of service\n",
			ret);
	else
		pci_info(c->pdev, "controller back in service after a PCI reset\n");
}

static unsigned int inflight(struct p2pnvme *c)
{
	unsigned int i, n = p2pnvme_queue_inflight(&c->adminq);

	for (i = 0; i < c->nr_ioq; i++)
		n += p2pnvme_queue_inflight(&c->ioq[i]);
	return n;
}

/* Return: 0 once the controller is disabled, else what disabling said. */
static int ctrl_shutdown(struct p2pnvme *c)
{
	unsigned long deadline = jiffies + c->ready_timeout;
	u32 cc = readl(c->bar + NVME_REG_CC);

	if (cc == ~0U)
		return -ENODEV;
	if (!(cc & NVME_CC_ENABLE))
		return 0;	/* disabled by a reset that stopped here */
	/* orderly shutdown: CC.SHN normal, wait for CSTS.SHST complete */
	writel((cc & ~NVME_CC_SHN_MASK) | NVME_CC_SHN_NORMAL, c->bar + NVME_REG_CC);
	while ((readl(c->bar + NVME_REG_CSTS) & NVME_CSTS_SHST_MASK) != NVME_CSTS_SHST_CMPLT) {
		if (time_after(jiffies, deadline) || p2pnvme_ctrl_gone(c)) {
			pci_warn(c->pdev, "shutdown did not complete\n");
			break;
		}
		usleep_range(1000, 2000);
	}
	return p2pnvme_ctrl_disable(c);
}

/**
 * p2pnvme_quiesce - take a controller out of service for removal
 * @c: the controller, state DELETING
 *
 * No new commands; the ones in flight get up to io_timeout_ms to complete
 * (unless the device is gone), then an orderly shutdown (CC.SHN) and
 * whatever is left fails with -ENODEV.
 */
void p2pnvme_quiesce(struct p2pnvme *c)
{
	unsigned long deadline = jiffies + p2pnvme_io_timeout();
	unsigned int i;

	queues_stop(c);
	while (inflight(c) && !p2pnvme_ctrl_gone(c) && time_before(jiffies, deadline)) {
		/* waiters reap their own completions; help the polled ones */
		queue_poll(&c->adminq);
		for (i = 0; i < c->nr_ioq; i++)
			queue_poll(&c->ioq[i]);
		wait_event_timeout(c->wq, !inflight(c), max(HZ / 100, 1));
	}
	/* as in a reset: no cancellation while the controller may DMA */
	ctrl_shutdown(c);
	pci_clear_master(c->pdev);
	queues_cancel(c, -ENODEV);
}

/* ---- bring-up ----------------------------------------------------------- */

int p2pnvme_create_io_queue(struct p2pnvme *c, struct p2pnvme_queue *q)
{
	struct nvme_command cmd = {};
	u16 flags = NVME_QUEUE_PHYS_CONTIG;
	int ret;

	queue_start(q);
	if (q->vector >= 0)
		flags |= NVME_CQ_IRQ_ENABLED;
	cmd.create_cq.opcode = nvme_admin_create_cq;
	cmd.create_cq.prp1 = cpu_to_le64(q->cq_dma);
	cmd.create_cq.cqid = cpu_to_le16(q->qid);
	cmd.create_cq.qsize = cpu_to_le16(q->depth - 1);
	cmd.create_cq.cq_flags = cpu_to_le16(flags);
	cmd.create_cq.irq_vector = cpu_to_le16(q->vector >= 0 ? q->vector : 0);
	ret = p2pnvme_admin_exec(c, &cmd, NULL);
	if (ret)
		return ret;

	memset(&cmd, 0, sizeof(cmd));
	cmd.create_sq.opcode = nvme_admin_create_sq;
	cmd.create_sq.prp1 = cpu_to_le64(q->sq_dma);
	cmd.create_sq.sqid = cpu_to_le16(q->qid);
	cmd.create_sq.qsize = cpu_to_le16(q->depth - 1);
	cmd.create_sq.sq_flags = cpu_to_le16(NVME_QUEUE_PHYS_CONTIG);
	cmd.create_sq.cqid = cpu_to_le16(q->qid);
	return p2pnvme_admin_exec(c, &cmd, NULL);
}

/*
 * Interrupt Coalescing (Feature 08h) as the module parameters ask, after
 * every enable (a reset forgets it). A controller that refuses it keeps
 * interrupting per completion: said, not fatal.
 */
static int set_coalescing(struct p2pnvme *c)
{
	unsigned int entries = READ_ONCE(p2pnvme_coalesce_entries);
	unsigned int time = READ_ONCE(p2pnvme_coalesce_time_us) / 100;
	struct nvme_command cmd = {};
	u16 status;
	int ret;

	if (c->polled || (!entries && !time))
		return 0;
	cmd.features.opcode = nvme_admin_set_features;
	cmd.features.fid = cpu_to_le32(NVME_FEAT_IRQ_COALESCE);
	/* THR is 0's based; TIME in 100 us units */
	cmd.features.dword11 = cpu_to_le32((entries ? entries - 1 : 0) | time << 8);
	ret = p2pnvme_admin_exec_status(c, &cmd, NULL, &status);
	if (ret == -EIO) {
		pci_warn(c->pdev, "interrupt coalescing refused (status %#x): an interrupt per completion\n",
			 status);
		return 0;
	}
	return ret;
}

/**
 * p2pnvme_ctrl_enable - enable the controller and create its I/O queues
 * @c: the controller, with no command in flight
 *
 * A fresh admin queue, CC, CSTS.RDY, then the I/O queues (memory is kept
 * across resets). Caller holds reset_lock for write, or is probe.
 *
 * Return: 0 or the first failure.
 */
int p2pnvme_ctrl_enable(struct p2pnvme *c)
{
	u32 aqa = (P2PNVME_AQ_DEPTH - 1) | (P2PNVME_AQ_DEPTH - 1) << 16;
	unsigned int i;
	int ret;

	ret = p2pnvme_ctrl_disable(c);
	if (ret)
		return ret;
	pci_set_master(c->pdev);	/* a reset turned it off */
	queue_start(&c->adminq);
	writel(aqa, c->bar + NVME_REG_AQA);
	lo_hi_writeq(c->adminq.sq_dma, c->bar + NVME_REG_ASQ);
	lo_hi_writeq(c->adminq.cq_dma, c->bar + NVME_REG_ACQ);
	writel(NVME_CC_ENABLE | NVME_CC_CSS_NVM |
	       (ilog2(P2PNVME_CTRL_PAGE) - 12) << NVME_CC_MPS_SHIFT |
	       NVME_CC_AMS_RR | NVME_CC_SHN_NONE | NVME_CC_IOSQES | NVME_CC_IOCQES,
	       c->bar + NVME_REG_CC);
	ret = p2pnvme_wait_ready(c, true);
	if (ret)
		return ret;
	/* a reset: the namespace must still be the one served (not at probe) */
	if (c->nsid) {
		ret = p2pnvme_ns_recheck(c);
		if (ret)
			return ret;
	}
	for (i = 0; i < c->nr_ioq; i++) {
		ret = p2pnvme_create_io_queue(c, &c->ioq[i]);
		if (ret)
			return ret;
	}
	return set_coalescing(c);
}
