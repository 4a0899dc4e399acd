// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme queue engine: queue pairs, command slots, submission and
 * completion, batches, timeouts and abort. A leaf: it calls nothing above
 * it; a timeout that needs a reset asks through c->escalate.
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

#include "queue.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

/* ---- queues ---------------------------------------------------------- */

/**
 * p2pnvme_queue_setup - the state of a queue pair, before its memory
 * @c: its controller
 * @q: the queue
 * @qid: 0 for the admin queue
 * @depth: entries of each ring
 *
 * Stopped, every slot free. p2pnvme_queue_alloc() gives it its rings, slots
 * and doorbells; KUnit gives it memory of its own and doorbells it reads
 * (the queue layer's seam: a fake controller fills the CQ).
 */
void p2pnvme_queue_setup(struct p2pnvme *c, struct p2pnvme_queue *q, u16 qid, u16 depth)
{
	q->c = c;
	q->qid = qid;
	q->depth = depth;
	q->vector = -1;
	q->stopped = true;
	spin_lock_init(&q->sq_lock);
	spin_lock_init(&q->cq_lock);
	atomic_set(&q->room, depth - 1);
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_queue_setup);

int p2pnvme_queue_alloc(struct p2pnvme *c, struct p2pnvme_queue *q, u16 qid, u16 depth)
{
	struct device *dev = &c->pdev->dev;

	p2pnvme_queue_setup(c, q, qid, depth);
	q->sq = dmam_alloc_coherent(dev, depth * sizeof(*q->sq), &q->sq_dma, GFP_KERNEL);
	q->cq = dmam_alloc_coherent(dev, depth * sizeof(*q->cq), &q->cq_dma, GFP_KERNEL);
	q->cmds = devm_kcalloc(dev, depth - 1, sizeof(*q->cmds), GFP_KERNEL);
	q->slot_map = devm_bitmap_zalloc(dev, depth - 1, GFP_KERNEL);
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
void p2pnvme_queue_start(struct p2pnvme_queue *q)
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
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_queue_start);

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

/**
 * p2pnvme_queue_shadow - give @q its words in the shadow doorbell buffers
 * @q: an I/O queue, created
 * @dbs: the shadow doorbell buffer, or NULL: doorbells by MMIO only
 * @eis: the event index buffer
 * @stride: the doorbell stride in 32-bit words
 *
 * The words sit where the doorbells sit in BAR0 (NVMe, Doorbell Buffer
 * Config). The admin queue keeps MMIO only, as nvme-pci's does. Taken under
 * both of @q's locks: a submitter or a reaper sees both words or neither.
 */
void p2pnvme_queue_shadow(struct p2pnvme_queue *q, __le32 *dbs, __le32 *eis, u32 stride)
{
	unsigned int sqi = 2 * q->qid * stride, cqi = (2 * q->qid + 1) * stride;
	unsigned long flags;
	bool on = dbs && q->qid;

	spin_lock(&q->sq_lock);
	q->sq_shadow = on ? &dbs[sqi] : NULL;
	q->sq_ei = on ? &eis[sqi] : NULL;
	spin_unlock(&q->sq_lock);
	flags = cq_lock(q);
	q->cq_shadow = on ? &dbs[cqi] : NULL;
	q->cq_ei = on ? &eis[cqi] : NULL;
	cq_unlock(q, flags);
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_queue_shadow);

/*
 * A doorbell's new @value goes to its @shadow word, which the controller
 * reads from host memory; the MMIO write (a trap to the hypervisor on an
 * emulated controller) is needed only if the controller stopped looking:
 * its event index lies in [old, value). Without a shadow word, always. As
 * nvme-pci's nvme_dbbuf_update_and_check_event().
 */
static bool doorbell_needs_mmio(u16 value, __le32 *shadow, __le32 *ei)
{
	u16 old, event;

	if (!shadow)
		return true;
	/* the queue's entries before the shadow value that names them */
	wmb();
	old = le32_to_cpu(READ_ONCE(*shadow));
	WRITE_ONCE(*shadow, cpu_to_le32(value));
	/* the shadow value before the event index: the controller does the reverse */
	mb();
	event = le32_to_cpu(READ_ONCE(*ei));
	return (u16)(value - event - 1) < (u16)(value - old);
}

/*
 * Let the controller see every entry queued so far. Caller holds sq_lock.
 * The most commands in flight are counted here, once per doorbell, when
 * all of a batch's are (not per command: that reads the completion
 * side's counter, another CPU's cache line, every time).
 */
static void queue_ring_locked(struct p2pnvme_queue *q)
{
	lockdep_assert_held(&q->sq_lock);
	if (q->sq_tail == q->sq_db_tail)
		return;
	q->inflight_max = max_t(u16, q->inflight_max, p2pnvme_queue_inflight(q));
	/*
	 * writel() orders the SQ entries (coherent host memory) before the
	 * doorbell MMIO write, so the controller never fetches a stale slot.
	 */
	if (doorbell_needs_mmio(q->sq_tail, q->sq_shadow, q->sq_ei))
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
 * ends an asynchronous batch. @now: the caller's completion pass's time,
 * 0 until one of the batches it ends reads the clock.
 */
static void batch_put(struct p2pnvme_batch *b, u64 *now)
{
	if (!atomic_dec_and_test(&b->pending))
		return;
	if (b->end) {
		/* one clock read for every batch a completion pass ends */
		if (!*now)
			*now = p2pnvme_now();
		b->end_ns = *now;
		b->end(b);
	} else {
		complete(&b->done);	/* b may be gone right after this */
	}
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
	u64 now = 0;

	batch_put(b, &now);
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_batch_launch);

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
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_room_take);

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
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_room_give);

/*
 * Take a free command slot of @q with room reserved for it: one is free,
 * though other holders of room may take the one we look at first.
 */
static unsigned int slot_get(struct p2pnvme_queue *q)
{
	unsigned int n = q->depth - 1, i = READ_ONCE(q->next_slot);

	/*
	 * the hint itself first, in line: slots go round the queue, so with
	 * fewer commands in flight than it holds the next one is free
	 */
	if (i < n && !test_bit(i, q->slot_map) && !test_and_set_bit_lock(i, q->slot_map))
		goto found;
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
found:
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
		       u32 result, int err, u64 *now)
{
	struct p2pnvme_batch *b = cmd->batch;
	struct p2pnvme_req *r = cmd->req;

	lockdep_assert_held(&q->cq_lock);
	if (b) {
		/* given up on: what the reset's drain brings back is not trusted */
		if (cmd->expired)
			err = -ETIMEDOUT;
		else if (!err && status && cmd->aborted)
			err = -ETIMEDOUT;
		/* its SQ deleted by a reset: cancelled, as if by the reset */
		else if (!err && (status & P2PNVME_STATUS_MASK) == NVME_SC_ABORT_QUEUE)
			err = -ECANCELED;
		else if (!err && status)
			err = -EIO;
		/* the first real error wins over a cancellation */
		if (err && (!r->error || r->error == -ECANCELED)) {
			r->error = err;
			r->status = status;	/* all of it: CRD, More, DNR too */
		}
		r->result = result;
	}
	/* an admin command given up on: the controller is done with its buffer */
	if (!b)
		atomic_dec(&q->c->admin_abandoned);
	cmd->batch = NULL;
	cmd->req = NULL;
	list_free(q, cmd);	/* the controller is done reading it */
	WRITE_ONCE(cmd->busy, false);
	WRITE_ONCE(q->completed, q->completed + 1);
	slot_put(q, cmd);
	/* last: the batch (and with it @r) may be freed once this puts it */
	if (b)
		batch_put(b, now);
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
	u64 now = 0;

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
		cmd_finish(q, cmd, st >> 1, le32_to_cpu(cqe->result.u32), 0, &now);
		n++;
	}
	/* tell the controller the entries are consumed */
	if (moved && doorbell_needs_mmio(q->cq_head, q->cq_shadow, q->cq_ei))
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
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_queue_reap);

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
	b->timeout = 0;
	b->end = NULL;
	b->lists = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_batch_init);

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
	slot->deadline = jiffies + (b->timeout ?: p2pnvme_io_timeout());
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
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_submit);

/**
 * p2pnvme_wait_batch - wait until every command of a batch is done
 * @c: the controller
 * @b: the batch
 *
 * Never waits forever: expired commands are aborted, then the controller
 * reset, which fails whatever is left; admin commands are given up on at
 * their deadline (their slots stay busy until the controller returns them
 * or a reset or removal cancels them: p2pnvme_admin_abandoned()).
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
 * p2pnvme_admin_exec_timeout - run one admin command and wait for it, at
 *	most @timeout
 * @c: the controller
 * @cmd: the command, data pointers filled in
 * @timeout: jiffies before it is given up on (-ETIMEDOUT: the controller
 *	     keeps it, see p2pnvme_admin_abandoned()); 0: io_timeout_ms
 * @result: out (may be NULL): completion dword 0
 * @status: out: the NVMe status when it failed with one, else 0: the
 *	    completion's status field but the phase bit (SCT << 8 | SC, CRD,
 *	    More, DNR)
 *
 * Return: 0, -EIO (NVMe status in @status), -ETIMEDOUT, -ECANCELED,
 * -ENODEV.
 */
int p2pnvme_admin_exec_timeout(struct p2pnvme *c, struct nvme_command *cmd,
			       unsigned long timeout, u32 *result, u16 *status)
{
	struct p2pnvme_batch b;
	struct p2pnvme_req r = {};
	int ret;

	*status = 0;
	p2pnvme_batch_init(&b, true);
	b.timeout = timeout;
	ret = p2pnvme_submit(c, &b, &r, cmd, NULL, 0, true);
	if (ret)
		return ret;
	p2pnvme_wait_batch(c, &b);
	if (result)
		*result = r.result;
	*status = r.status;
	return r.error;
}

/**
 * p2pnvme_admin_exec_status - run one admin command and wait for it
 * @c: the controller
 * @cmd: the command, data pointers filled in
 * @result: out (may be NULL): completion dword 0
 * @status: out: the NVMe status (SCT << 8 | SC, without the CRD, More and
 *	    DNR bits) when it failed with one
 *
 * p2pnvme_admin_exec_timeout() with io_timeout_ms, for the driver's own
 * commands.
 *
 * Return: as p2pnvme_admin_exec_timeout().
 */
int p2pnvme_admin_exec_status(struct p2pnvme *c, struct nvme_command *cmd, u32 *result,
			      u16 *status)
{
	int ret = p2pnvme_admin_exec_timeout(c, cmd, 0, result, status);

	*status &= P2PNVME_STATUS_MASK;
	return ret;
}

/**
 * p2pnvme_admin_abandoned - is an admin command given up on still with
 *	the controller?
 * @c: the controller, inside the I/O guard
 *
 * Such a command may still move its data: its buffer is not to be used
 * for another command until it is over. The admin queue is reaped first:
 * one the controller answered late is over.
 *
 * Return: true while any is (until the controller answers it, or the
 * reset its deadline asked for cancels it).
 */
bool p2pnvme_admin_abandoned(struct p2pnvme *c)
{
	if (!atomic_read(&c->admin_abandoned))
		return false;
	queue_poll(&c->adminq);
	return atomic_read(&c->admin_abandoned);
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
	u64 now = 0;

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
		/* still the controller's: cmd_finish() or a cancellation ends it */
		atomic_inc(&q->c->admin_abandoned);
		batch_put(b, &now);
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
		c->escalate(c);
		return;
	}

	if (b->admin) {
		flags = cq_lock(&c->adminq);
		n = admin_give_up(&c->adminq, b, -ETIMEDOUT, true);
		cq_unlock(&c->adminq, flags);
		if (n) {
			p2pnvme_stat_add(c, ST_TIMEOUTS, n);
			pci_warn(c->pdev, "admin command timed out after %u ms\n",
				 jiffies_to_msecs(b->timeout ?: p2pnvme_io_timeout()));
			progress(c, n);
			c->escalate(c);
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
		c->escalate(c);
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

/* No more submissions to the I/O queues; the admin queue goes on. */
void p2pnvme_io_queues_stop(struct p2pnvme *c)
{
	unsigned int i;

	for (i = 0; i < c->nr_ioq; i++)
		queue_stop(&c->ioq[i]);
}

void p2pnvme_queues_stop(struct p2pnvme *c)
{
	queue_stop(&c->adminq);
	p2pnvme_io_queues_stop(c);
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
	u64 now = 0;

	flags = cq_lock(q);
	for (i = 0; i < q->depth - 1; i++) {
		struct p2pnvme_cmd *cmd = &q->cmds[i];
		int e = err;

		if (!cmd_busy(cmd))
			continue;
		if (e == -ECANCELED && cmd->expired)
			e = -ETIMEDOUT;
		cmd_finish(q, cmd, NVME_SC_HOST_ABORTED_CMD, 0, e, &now);
		n++;
	}
	cq_unlock(q, flags);
	p2pnvme_stat_add(c, ST_CANCELLED, n);
	progress(c, n);
}

void p2pnvme_queues_cancel(struct p2pnvme *c, int err)
{
	unsigned int i;

	queue_cancel(&c->adminq, err);
	for (i = 0; i < c->nr_ioq; i++)
		queue_cancel(&c->ioq[i], err);
}

unsigned int p2pnvme_queues_inflight(struct p2pnvme *c)
{
	unsigned int i, n = p2pnvme_queue_inflight(&c->adminq);

	for (i = 0; i < c->nr_ioq; i++)
		n += p2pnvme_queue_inflight(&c->ioq[i]);
	return n;
}

/**
 * p2pnvme_queues_poll - reap every queue's completions, admin and I/O
 * @c: the controller (process context)
 */
void p2pnvme_queues_poll(struct p2pnvme *c)
{
	unsigned int i;

	queue_poll(&c->adminq);
	for (i = 0; i < c->nr_ioq; i++)
		queue_poll(&c->ioq[i]);
}
