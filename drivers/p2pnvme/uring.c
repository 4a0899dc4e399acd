// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme's io_uring passthrough: IORING_OP_URING_CMD with cmd_op
 * P2PNVME_URING_CMD_IO carries one struct p2pnvme_uring_cmd in a 128-byte
 * SQE, NVME_URING_CMD_IO and _IO_VEC (the kernel's NVMe passthrough, as
 * fio's io_uring_cmd engine sends it) one struct nvme_uring_cmd. One
 * io_uring_enter() submits many; none waits for its completion.
 * NVME_URING_CMD_ADMIN is the admin passthrough, answered at its issue.
 * P2PNVME_URING_CMD_FILE_IO is the file command (file.c), one transfer of
 * a file on the controller's disk per SQE (uring_file_io()).
 *
 * Life of a request:
 *   submit  in the submitter's context: check, pin (may fault: no lock
 *           held), then under p2pnvme_io_enter() map, queue its commands on
 *           the submitting CPU's queue, leave; -EIOCBQUEUED. The doorbell
 *           waits for the end of io_uring's submission batch (its block
 *           plug), so the controller sees the batch's commands at once
 *   end     the last command completes (interrupt, a poller, reset,
 *           removal): the batch's end callback, possibly in hard
 *           interrupt context, marks it ended and hands it to the
 *           submitter's task (io_uring task work, as nvme-pci's
 *           passthrough does); on an IORING_SETUP_IOPOLL ring it only
 *           marks it: the ring's poller asks (p2pnvme_uring_cmd_iopoll())
 *   release in that task: unmap, copy bounced reads, unpin, count; then
 *           answer with io_uring_cmd_done(), and keep the request for
 *           the CPU's next one (or free it)
 * A request with no waiter has its commands' deadlines watched by
 * c->async_watch (abort, then reset, as for a batch's waiter). Removal
 * cancels every command, then releases itself every ended request whose
 * task work has not run yet (a ring set up with DEFER_TASKRUN runs it only
 * when its task asks for completions): bounded, whatever userspace does;
 * that task work then only answers.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/nvme_ioctl.h>
#include <linux/percpu.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <p2p_compat.h>

#include "uring.h"
#include "file.h"
#include "io.h"
#include "reg.h"
#include "ctrl.h"
#include "queue.h"

#if P2P_HAVE_URING_CMD
/*
 * How often the watchdog looks at requests that have no waiter: a tenth of
 * io_timeout_ms, from 50 ms to 500 ms (each look reads CSTS and scans every
 * busy slot).
 */
static unsigned long async_watch_period(void)
{
	return clamp_t(unsigned long, p2pnvme_io_timeout() / 10, HZ / 20, HZ / 2);
}

/**
 * struct p2pnvme_async - one io_uring request
 * @b: its batch; @b.end is async_end()
 * @r: its transfer
 * @io: the request, from the SQE's command (kernel copy)
 * @c: the controller
 * @f: the file it came through (io_uring holds it open until the answer)
 * @ioucmd: what is answered
 * @bytes: charged to @f->inflight
 * @t0: its submission time (async_ring()); its latency ends at @b.end_ns
 * @pc: the share of the CPU it was submitted on, whose @async_list it is
 *	on from its submission to its answer and whose @async_live counts it
 *	until its release
 * @link: on @pc->async_list (@pc->async_lock)
 * @ended: every command is over; set once by async_end() with a release
 *	   store, read with acquire (no lock: the completion takes none)
 * @taken: removal releases it, its task work only answers, once @released
 *	   (@pc->async_lock)
 * @released: removal is done with it (@pc->async_lock)
 * @iopoll: from an IORING_SETUP_IOPOLL ring: its poller answers it, no task
 *	    work
 * @nowait: issued with IO_URING_F_NONBLOCK: answered -EAGAIN (io_uring's
 *	    workers issue it again) rather than waiting for room on its queue
 * @inline_issue: issued with IO_URING_F_NONBLOCK, by the submitter itself
 *		  (async_restart())
 * @std: NVME_URING_CMD_IO (the kernel's NVMe passthrough), answered as
 *	 nvme-pci answers it (async_done())
 * @moved: times its registered dma-buf moved between lookup and arming
 * @ring: that ring, only compared (p2p_uring_cmd_ring())
 * @lists: the list blocks of a request naming a registered dma-buf, taken
 *	   before its fence was published (@b.lists)
 *
 * A request from a CPU's cache (async_alloc()) has zero what it reads
 * before it writes it: @r, @ended, @taken, @released and @moved
 * (async_free()). Every other member is written before it is read: at
 * its issue (uring_cmd_queue()), at its submission (async_submit(): @b,
 * @t0, @pc, @link; @lists where @r.lists points to them).
 */
struct p2pnvme_async {
	struct p2pnvme_batch b;
	struct p2pnvme_req r;
	struct p2pnvme_io io;
	struct p2pnvme *c;
	struct p2pnvme_file *f;
	struct io_uring_cmd *ioucmd;
	u64 bytes;
	u64 t0;
	struct p2pnvme_pcpu *pc;
	struct list_head link;
	bool ended;
	bool taken;
	bool released;
	bool iopoll;
	bool nowait;
	bool inline_issue;
	bool std;
	u8 moved;
	void *ring;
	struct p2pnvme_lists lists;
};

/* as P2PNVME_MOVE_RETRIES for a batch (io.c) */
#define P2PNVME_URING_MOVE_RETRIES	8

/**
 * struct p2pnvme_pdu - what p2pnvme keeps in an io_uring command
 * @a: its request, from the issue that queued it until its answer
 * @bound: the serial of the registered buffer it named when it was last
 *	   answered -EAGAIN, for its issue again by io_uring's workers; 0 when
 *	   none (set at its first issue: io_uring leaves the pdu as it was)
 * @fc: a file command's transfer, from its issue until its answer
 */
struct p2pnvme_pdu {
	struct p2pnvme_async *a;
	u64 bound;
	struct p2pnvme_file_cmd *fc;
};

static struct p2pnvme_pdu *pdu_of(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct p2pnvme_pdu) > sizeof(ioucmd->pdu));
	return (struct p2pnvme_pdu *)ioucmd->pdu;
}

static struct p2pnvme_async **async_of(struct io_uring_cmd *ioucmd)
{
	return &pdu_of(ioucmd)->a;
}

/*
 * A request from this CPU's cache of answered ones (what it reads first
 * zeroed when they went in: struct p2pnvme_async), else a new one, all
 * zero. Only process context allocates and frees them.
 */
static struct p2pnvme_async *async_alloc(struct p2pnvme *c)
{
	struct p2pnvme_pcpu *pc = get_cpu_ptr(c->pcpu);
	struct p2pnvme_async *a = pc->nr_free ? pc->free[--pc->nr_free] : NULL;

	put_cpu_ptr(c->pcpu);
	return a ?: kzalloc_obj(*a, GFP_KERNEL);
}

/*
 * Answered: into this CPU's cache, what its next use reads before it
 * writes zeroed (not the rest: a 4 KiB read pays for every byte zeroed),
 * or freed when the cache is full. Not cached under KASAN: a use after the
 * answer is then a use after free.
 */
static void async_free(struct p2pnvme *c, struct p2pnvme_async *a)
{
	struct p2pnvme_pcpu *pc;
	bool cached;

	if (IS_ENABLED(CONFIG_KASAN)) {
		kfree(a);
		return;
	}
	/* the members struct p2pnvme_async's comment names */
	memset(&a->r, 0, sizeof(a->r));
	a->ended = false;
	a->taken = false;
	a->released = false;
	a->moved = 0;
	pc = get_cpu_ptr(c->pcpu);
	cached = pc->nr_free < ARRAY_SIZE(pc->free);
	if (cached)
		pc->free[pc->nr_free++] = a;
	put_cpu_ptr(c->pcpu);
	/* no kfree(NULL) per answer: its call is most of its cost */
	if (!cached)
		kfree(a);
}

/* Unmap, unpin, count: @a's commands are over and nobody else releases it. */
static void async_release(struct p2pnvme_async *a)
{
	struct p2pnvme *c = a->c;

	p2pnvme_req_finish(c, &a->r, p2pnvme_elapsed(a->t0, a->b.end_ns));
	p2pnvme_inflight_put(a->f, a->bytes);
	/*
	 * Only removal waits for none left (p2pnvme_async_drain(), once the
	 * state is DELETING or DEAD): no wait queue lock per drained queue
	 * otherwise. The decrement is a full barrier before the state is read;
	 * removal sets the state before its wait_event() reads the counts.
	 * Once no request can be submitted, no CPU's count goes up again: each
	 * that reaches 0 wakes removal, which finds them all at 0 after the
	 * last one.
	 */
	if (atomic_dec_and_test(&a->pc->async_live) && p2pnvme_state(c) >= P2PNVME_DELETING)
		wake_up_all(&c->wq);
}

static bool async_released(struct p2pnvme_async *a)
{
	bool done;

	spin_lock(&a->pc->async_lock);
	done = a->released;
	spin_unlock(&a->pc->async_lock);
	return done;
}

/*
 * The CQE of an ended request: for P2PNVME_URING_CMD_IO its result and,
 * in a 32-byte CQE, path | status << 16 (SCT and SC); for NVME_URING_CMD_IO
 * as nvme-pci answers it, the NVMe status of a command the controller
 * failed (the whole field, DNR too; else 0 or the -errno) and the result
 * dword, 0 for these commands.
 */
static void async_done(struct p2pnvme_async *a, unsigned int issue_flags)
{
	if (a->std)
		p2p_uring_cmd_done(a->ioucmd, a->io.result == -EIO && a->io.status ?
				   a->io.status : a->io.result, 0, issue_flags);
	else
		p2p_uring_cmd_done(a->ioucmd, a->io.result,
				   P2PNVME_URING_RES2(a->io.path, p2pnvme_io_status(&a->io)),
				   issue_flags);
}

/*
 * In the submitter's task (task work, or the IOPOLL ring's poller with the
 * ring locked): release (unless removal did) and answer.
 */
static void async_answer(struct p2pnvme_async *a, unsigned int issue_flags)
{
	struct p2pnvme *c = a->c;
	bool mine;

	spin_lock(&a->pc->async_lock);
	mine = !a->taken;
	if (mine)
		list_del(&a->link);
	spin_unlock(&a->pc->async_lock);
	if (mine)
		async_release(a);
	else	/* removal is releasing it: the answer needs its result */
		wait_event(c->wq, async_released(a));
	async_done(a, issue_flags);
	async_free(c, a);
}

static P2P_URING_TW(async_tw)
{
	async_answer(*async_of(P2P_URING_TW_CMD), P2P_URING_TW_FLAGS);
}

/*
 * Every command of the request is over (any context, maybe under cq_lock).
 * No lock: whoever sees @ended (acquire) sees the results before it.
 */
static void async_end(struct p2pnvme_batch *b)
{
	struct p2pnvme_async *a = container_of(b, struct p2pnvme_async, b);
	struct io_uring_cmd *ioucmd = a->ioucmd;
	bool iopoll = a->iopoll;

	/* idle, its fence signalled: an exporter's move may go on now */
	p2pnvme_req_ended(&a->r);
	smp_store_release(&a->ended, true);	/* an IOPOLL poller may free @a now */
	if (!iopoll)
		io_uring_cmd_do_in_task_lazy(ioucmd, async_tw);
}

/*
 * Is any request on a CPU's list? Under each list's lock, so that a
 * submission either sees the watchdog no longer pending (and queues it)
 * or is seen here: async_submit() looks at delayed_work_pending() after
 * its list's lock, and the workqueue clears the pending bit (with a full
 * barrier) before this runs. No barrier on the I/O path for it.
 */
static bool async_any_listed(struct p2pnvme *c)
{
	unsigned int cpu;
	bool any = false;

	for_each_possible_cpu(cpu) {
		struct p2pnvme_pcpu *pc = per_cpu_ptr(c->pcpu, cpu);

		spin_lock(&pc->async_lock);
		any = !list_empty(&pc->async_list);
		spin_unlock(&pc->async_lock);
		if (any)
			break;
	}
	return any;
}

/*
 * While requests are out: their deadlines, as a batch's waiter checks its
 * own, and inside the I/O guard as that waiter is. The guard keeps the
 * watchdog off the queues while a reset rebuilds them. A look that saw the
 * controller LIVE may go on to reap the queues, send an Abort, ring the
 * admin doorbell and wait for the answer. Every reset first leaves LIVE,
 * stops the queues and cancels every command, the watchdog's Abort too
 * (the reset worker; p2pnvme_reset_prepare() and p2pnvme_error_stop()),
 * then freezes the guard, which waits until the watchdog has left, and
 * only then starts the queues again and sets CC.EN = 1 in
 * p2pnvme_ctrl_enable() (the worker; p2pnvme_reset_done() and
 * p2pnvme_error_resume()); the guard comes back before the state is LIVE
 * again, and a look that gets in while the state is not LIVE leaves at
 * once. So a look ends before the queues start again or begins once the
 * controller is LIVE again, never in between. The watchdog does not wait
 * for a reset (it would hold up the freeze, and its own Abort may be what
 * the reset cancels): not LIVE, it skips this look and comes back after
 * its period; the reset fails every command in flight anyway.
 */
static void async_watch(struct work_struct *work)
{
	struct p2pnvme *c = container_of(to_delayed_work(work), struct p2pnvme, async_watch);

	/* removal cancels every command itself, then stops the watchdog */
	if (!async_any_listed(c) || p2pnvme_state(c) >= P2PNVME_DELETING)
		return;
	if (p2pnvme_io_tryenter(c)) {
		p2pnvme_check_async_timeouts(c);
		p2pnvme_io_exit(c);
	}
	queue_delayed_work(system_unbound_wq, &c->async_watch, async_watch_period());
}

/**
 * struct p2pnvme_plug - a doorbell left to the submitter's block plug
 * @cb: the plug's callback entry (first: blk_check_plugged() allocates it)
 * @c: the controller
 * @armed: counted in @c->async_plugged
 * @t0: p2pnvme_now() at its first request: the submission time of every
 *	request the plug holds (one clock read per batch, as blk-mq stamps a
 *	plug's requests)
 * @fences: the fence its registered dma-buf reads join (one per
 *	    registration and batch, rather than one per read:
 *	    p2pnvme_dmabuf_fence_reg())
 *
 * The submitter's alone, from its first request on @cb.data's queue until
 * its submission batch ends or its task sleeps (async_unplug() frees it):
 * looked up again after anything that may sleep.
 */
struct p2pnvme_plug {
	struct blk_plug_cb cb;
	struct p2pnvme *c;
	bool armed;
	u64 t0;
	struct p2pnvme_fence_slot fences;
};

/* The submission batch ended (or its task sleeps): ring once for all. */
static void async_unplug(struct blk_plug_cb *cb, bool from_schedule)
{
	struct p2pnvme_plug *p = container_of(cb, struct p2pnvme_plug, cb);
	struct p2pnvme *c = p->c;

	p2pnvme_ring_live(cb->data);
	/* no read of a later batch joins its fence */
	p2pnvme_fence_slot_release(&p->fences);
	kfree(p);
	if (atomic_dec_and_test(&c->async_plugged))
		wake_up_all(&c->wq);
}

/*
 * The submitter's plug for @q, found or allocated by blk_check_plugged(),
 * armed (the queue lives until remove() has seen @c->async_plugged drop
 * to 0), or NULL without a plug. Never sleeps.
 */
static noinline struct p2pnvme_plug *async_plug_get(struct p2pnvme *c, struct p2pnvme_queue *q)
{
	struct blk_plug_cb *cb = blk_check_plugged(async_unplug, q, sizeof(struct p2pnvme_plug));
	struct p2pnvme_plug *p;

	if (!cb)
		return NULL;
	p = container_of(cb, struct p2pnvme_plug, cb);
	if (!p->armed) {
		p->armed = true;
		p->c = c;
		p->t0 = p2pnvme_now();
		atomic_inc(&c->async_plugged);
	}
	return p;
}

/*
 * async_plug_get(), looked up twice per request (its fence, its
 * doorbell): first in line where it almost always is, the head of the
 * task's plug's callbacks (blk_check_plugged() adds it there, armed by
 * async_plug_get() before anything else can run in the task); the call
 * otherwise, which walks them all and allocates it for a batch's first
 * request.
 */
static inline struct p2pnvme_plug *async_plug(struct p2pnvme *c, struct p2pnvme_queue *q)
{
	struct blk_plug *plug = current->plug;
	struct blk_plug_cb *cb;

	if (!plug)
		return NULL;
	cb = list_first_entry_or_null(&plug->cb_list, struct blk_plug_cb, list);
	if (cb && cb->callback == async_unplug && cb->data == q)
		return container_of(cb, struct p2pnvme_plug, cb);
	return async_plug_get(c, q);
}

/* the fence slot of the submitter's plug for @q (p2pnvme_req_map()), or NULL */
static struct p2pnvme_fence_slot *async_fences(struct p2pnvme_queue *q)
{
	struct p2pnvme_plug *p = async_plug(q->c, q);

	return p ? &p->fences : NULL;
}

/*
 * Ring @q now, or when the submitter's plug ends. Return: the request's
 * submission time (the plug's, see struct p2pnvme_plug).
 */
static u64 async_ring(struct p2pnvme *c, struct p2pnvme_queue *q)
{
	struct p2pnvme_plug *p = async_plug(c, q);

	if (!p) {
		p2pnvme_ring(q);
		return p2pnvme_now();
	}
	return p->t0;
}

/* A request that failed before any command: answered at once, by return. */
static int async_fail(struct p2pnvme_async *a, int ret)
{
	p2pnvme_req_abandon(a->c, &a->r);
	p2pnvme_inflight_put(a->f, a->bytes);
	async_free(a->c, a);
	return ret;
}

static bool restart_code(int ret)
{
	return ret == -ERESTARTSYS || ret == -ERESTARTNOINTR || ret == -ERESTARTNOHAND ||
	       ret == -ERESTART_RESTARTBLOCK;
}

/*
 * The preparation was interrupted: the exporter's map of a registered
 * dma-buf that moved saw a signal pending (xe validates with an
 * interruptible TTM context). Issued inline, that is mostly io_uring's
 * own task work for the submitter (TIF_NOTIFY_SIGNAL: a completion due),
 * which runs only once the issue returns, not a signal of the user's. A
 * restart code means nothing in a CQE (-512 there on 6.1 and 7.2; 6.12's
 * io_uring says -EINTR), and nothing was sent: an inline issue is tried
 * again, -EAGAIN (io_uring's workers issue it again, bound to the
 * registration it named; where io_uring would issue it again from the SQ
 * ring, -EBUSY, the caller's retry, as for a full queue); an issue by the
 * workers, or with a fatal signal pending, ends with -EINTR.
 */
static int async_restart(struct p2pnvme_async *a, int ret)
{
	if (!restart_code(ret))
		return ret;
	if (!a->inline_issue || fatal_signal_pending(current))
		return -EINTR;
	if (a->nowait && a->r.reg)
		pdu_of(a->ioucmd)->bound = a->r.reg->serial;
	return -EAGAIN;
}

static int async_submit(struct p2pnvme_async *a)
{
	struct p2pnvme *c = a->c;
	struct p2pnvme_req *r = &a->r;
	struct p2pnvme_pdu *pdu = pdu_of(a->ioucmd);
	struct p2pnvme_queue *q;
	bool signalling, cookie;
	int ret;

	/*
	 * Issued again after an -EAGAIN: its id must still name the
	 * registration it named then, not one registered at that id since
	 * (nothing held the first while the request waited in io_uring).
	 */
	r->bound = pdu->bound;
again:
	ret = p2pnvme_req_prepare(c, a->f, r);
	if (ret)
		return async_fail(a, async_restart(a, ret));
	if (a->nowait) {
		/*
		 * A reset in progress is waited out by io_uring's workers, not
		 * here with the ring's lock held (the -EAGAIN below, as a full
		 * queue's): bound to its registration as there.
		 */
		if (!p2pnvme_io_tryenter(c)) {
			if (p2pnvme_state(c) >= P2PNVME_DELETING)
				return async_fail(a, -ENODEV);
			if (r->reg)
				pdu->bound = r->reg->serial;
			return async_fail(a, -EAGAIN);
		}
	} else {
		/*
		 * Task work makes io_uring's submitter and its workers look as
		 * if a signal were pending: only a fatal one ends the wait for
		 * a reset, as nvme-pci's passthrough waits for a frozen queue.
		 */
		ret = p2pnvme_io_enter_state(c, TASK_KILLABLE);
		if (ret)
			return async_fail(a, ret);
	}
	q = p2pnvme_cpu_queue(c);
	r->q = q;
	/*
	 * An inline issue does not sleep for a slot: without room for all its
	 * commands now, io_uring's workers issue it again, blocking. One that
	 * names a registered buffer stays bound to the registration its id
	 * names now (the workers look the id up again: see above).
	 */
	if (a->nowait) {
		ret = p2pnvme_req_reserve(c, r);
		if (ret) {
			if (r->reg)
				pdu->bound = r->reg->serial;
			p2pnvme_stat_add(c, ST_QUEUE_FULL_REQUEUED, 1);
			p2pnvme_io_exit(c);
			return async_fail(a, ret);
		}
	}
	/*
	 * A registered dma-buf: its list blocks taken, its fence published,
	 * or the one its submission batch published for the buffer joined
	 * (until the launch, the fence signalling section: nothing may
	 * allocate with reclaim or take a reservation lock), then busy.
	 */
	ret = p2pnvme_req_map(c, r, &a->lists, async_fences);
	if (ret) {
		p2pnvme_req_unreserve(r);
		p2pnvme_io_exit(c);
		/*
		 * Its registered dma-buf moved since the lookup: nothing was
		 * sent; prepared again, the lookup maps it where it went.
		 */
		if (ret == -ESTALE && ++a->moved < P2PNVME_URING_MOVE_RETRIES) {
			p2pnvme_req_abandon(c, r);
			*r = (struct p2pnvme_req){ .io = &a->io, .bound = pdu->bound };
			goto again;
		}
		return async_fail(a, ret == -ESTALE ? -EAGAIN : ret);
	}
	p2pnvme_batch_init_async(&a->b, async_end);
	if (r->lists)
		a->b.lists = r->lists;	/* no list block with reclaim once fenced */
	/* a list per CPU: no lock or count shared by every submitter */
	a->pc = raw_cpu_ptr(c->pcpu);
	spin_lock(&a->pc->async_lock);
	atomic_inc(&a->pc->async_live);
	list_add_tail(&a->link, &a->pc->async_list);
	spin_unlock(&a->pc->async_lock);
	/* commands already queued for it still complete */
	r->submit_error = p2pnvme_req_submit(c, &a->b, r);
	/*
	 * before leaving the guard: removal cancels the watchdog after it;
	 * after the list's lock (async_any_listed())
	 */
	if (!delayed_work_pending(&c->async_watch))
		queue_delayed_work(system_unbound_wq, &c->async_watch, async_watch_period());
	/* before the launch: its end, after, is stamped later */
	a->t0 = async_ring(c, q);
	p2pnvme_io_exit(c);
	/* the fence signalling section ends after the launch, when @a may be gone */
	signalling = r->signalling;
	cookie = r->cookie;
	r->signalling = false;
	/* from here on @a belongs to its end: async_end() may run right now */
	p2pnvme_batch_launch(&a->b);
	if (signalling)
		p2pnvme_dmabuf_signalled(cookie);
	return -EIOCBQUEUED;
}

/*
 * The SQE's fields that io_uring hands over with no meaning for
 * P2PNVME_URING_CMD_IO are zero, for the same reason. io_uring checks
 * opcode, flags, fd, __pad1, uring_cmd_flags and personality itself; 6.12
 * and 7.2 also refuse an ioprio for IORING_OP_URING_CMD (io_init_req()),
 * which is checked again here for a kernel that lets one through. buf_index
 * is io_uring's with IORING_URING_CMD_FIXED and buffer selection (7.x, with
 * IORING_URING_CMD_MULTISHOT), both refused for this command. file_index
 * covers the whole 32-bit union at offset 44. The kernel's NVMe commands
 * are taken as nvme-pci takes them, which reads none of these: liburing's
 * own test leaves a prep_readv()'s addr and len there.
 */
static bool uring_sqe_unused_zero(const struct io_uring_sqe *sqe)
{
	return !(READ_ONCE(sqe->ioprio) | READ_ONCE(sqe->addr) | READ_ONCE(sqe->len) |
		 READ_ONCE(sqe->buf_index) | READ_ONCE(sqe->file_index));
}

/*
 * Check, charge and submit a request whose data is at @io->addr or, for
 * the kernel's passthrough, in @iter (read while it is prepared).
 */
static int uring_cmd_queue(struct io_uring_cmd *ioucmd, struct p2pnvme_io *io, bool std,
			   struct iov_iter *iter, unsigned int issue_flags)
{
	struct p2pnvme_file *f = ioucmd->file->private_data;
	struct p2pnvme *c = f->c;
	struct p2pnvme_async *a;
	u64 bytes;
	int ret;

	ret = p2pnvme_check_io(io, c->lba_shift, c->nlb);
	if (ret)
		return ret;
	if (io->flags & P2PNVME_IO_F_DMABUF)
		return -EOPNOTSUPP;
	/* nothing would reap a polled queue for a ring that does not poll */
	if (c->polled && !(issue_flags & IO_URING_F_IOPOLL))
		return -EOPNOTSUPP;
	ret = std ? p2pnvme_nvme_io_allowed(ioucmd->file, io) :
		    p2pnvme_io_allowed(ioucmd->file, io);
	if (ret)
		return ret;
	/*
	 * io_uring's registered buffers (the pages are borrowed, not pinned
	 * per transfer) are charged at their registration, as p2pnvme's own
	 * are: not against max_inflight_mb (p2pnvme_inflight_get() counts
	 * none of p2pnvme's; not even called for them)
	 */
	bytes = 0;
	if ((!iter || iov_iter_extract_will_pin(iter)) && !(io->flags & P2PNVME_IO_F_REGISTERED)) {
		ret = p2pnvme_inflight_get(f, io, 1, &bytes);
		if (ret)
			return ret;
	}
	a = async_alloc(c);
	if (!a) {
		p2pnvme_inflight_put(f, bytes);
		return -ENOMEM;
	}
	a->io = *io;
	a->r.io = &a->io;
	a->r.iter = iter;
	a->c = c;
	a->f = f;
	a->ioucmd = ioucmd;
	a->bytes = bytes;
	a->iopoll = issue_flags & IO_URING_F_IOPOLL;
	a->std = std;
	/* a kernel that re-issues from the SQ ring: wait for room here instead */
	a->nowait = P2P_URING_REISSUE_SAFE && (issue_flags & IO_URING_F_NONBLOCK);
	a->inline_issue = issue_flags & IO_URING_F_NONBLOCK;
	a->ring = p2p_uring_cmd_ring(ioucmd);
	*async_of(ioucmd) = a;
	return async_submit(a);
}

/*
 * NVME_URING_CMD_IO_VEC: @nc->data_len iovecs at @nc->addr, imported, then
 * queued. Its own function: the other commands do not pay for zeroing the
 * fast iovec array on their stack (INIT_STACK_ALL_ZERO).
 */
static noinline int uring_std_vec(struct io_uring_cmd *ioucmd, const struct nvme_uring_cmd *nc,
				  struct p2pnvme_io *io, unsigned int issue_flags)
{
	int dir = io->op == P2PNVME_OP_READ ? ITER_DEST : ITER_SOURCE;
	struct iovec fast[UIO_FASTIOV], *iov = fast;
	struct iov_iter iter;
	ssize_t ret;

	ret = import_iovec(dir, u64_to_user_ptr(nc->addr), nc->data_len, UIO_FASTIOV, &iov, &iter);
	if (ret < 0)
		return ret;
	io->addr = (u64)(uintptr_t)iter_iov_addr(&iter);
	ret = uring_cmd_queue(ioucmd, io, true, &iter, issue_flags);
	kfree(iov);	/* the pages are pinned (or the request failed) */
	return ret;
}

/* IORING_URING_CMD_FIXED: the data is in io_uring's registered buffer */
static int uring_std_fixed(struct io_uring_cmd *ioucmd, struct p2pnvme_io *io,
			   unsigned int issue_flags)
{
	int dir = io->op == P2PNVME_OP_READ ? ITER_DEST : ITER_SOURCE;
	struct iov_iter iter;
	int ret;

	ret = p2p_uring_cmd_import_fixed(io->addr, io->len, dir, &iter, ioucmd, issue_flags);
	if (ret)
		return ret;
	return uring_cmd_queue(ioucmd, io, true, &iter, issue_flags);
}

/*
 * The kernel's NVMe passthrough (NVME_URING_CMD_IO, _IO_VEC), as nvme-pci's
 * ng devices take it. Data at one user address; @vec: in iovecs; @fixed:
 * in io_uring's registered buffer (not both: nvme-pci takes registered
 * buffers only unvectored too).
 */
static int uring_std_issue(struct io_uring_cmd *ioucmd, bool vec, bool fixed,
			   unsigned int issue_flags)
{
	struct p2pnvme_file *f = ioucmd->file->private_data;
	struct nvme_uring_cmd nc;
	struct p2pnvme_io io;
	int ret;

	/* one copy: the SQE may be rewritten by userspace meanwhile */
	memcpy(&nc, p2p_uring_cmd_payload(ioucmd, struct nvme_uring_cmd), sizeof(nc));
	if (nc.rsvd2)
		return -EINVAL;
	ret = p2pnvme_io_from_nvme(f->c, &nc, vec, &io);
	if (ret)
		return ret;
	if ((vec || fixed) && (io.op == P2PNVME_OP_READ || io.op == P2PNVME_OP_WRITE)) {
		if (vec && fixed)
			return -EINVAL;
		if (vec)
			return uring_std_vec(ioucmd, &nc, &io, issue_flags);
		return uring_std_fixed(ioucmd, &io, issue_flags);
	}
	return uring_cmd_queue(ioucmd, &io, true, NULL, issue_flags);
}

/* P2PNVME_URING_CMD_IO: p2pnvme's own command, which may name its registered buffers */
static int uring_own_issue(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct p2pnvme_uring_cmd uc;
	/* written whole below before anything reads it: not zeroed first */
	struct p2pnvme_io io __uninitialized;
	u64 rsvd2 = 0;
	unsigned int i;

	if (!uring_sqe_unused_zero(ioucmd->sqe))
		return -EINVAL;
	BUILD_BUG_ON(sizeof(uc) != 2 * sizeof(struct io_uring_sqe) -
				  offsetof(struct io_uring_sqe, cmd));
	/* one copy: the SQE may be rewritten by userspace meanwhile */
	memcpy(&uc, p2p_uring_cmd_payload(ioucmd, struct p2pnvme_uring_cmd), sizeof(uc));
	/*
	 * zero, so that they can be given a meaning one day; the words
	 * OR'ed in line, not memchr_inv() per command
	 */
	for (i = 0; i < ARRAY_SIZE(uc.rsvd2); i++)
		rsvd2 |= uc.rsvd2[i];
	if (uc.rsvd1 || rsvd2)
		return -EINVAL;
	io = (struct p2pnvme_io){ .argsz = sizeof(io), .flags = uc.flags, .op = uc.op,
				  .slba = uc.slba, .len = uc.len, .addr = uc.addr,
				  .dmabuf_fd = uc.dmabuf_fd };
	return uring_cmd_queue(ioucmd, &io, false, NULL, issue_flags);
}

/*
 * The kernel's NVMe passthrough needs 128-byte SQEs and 32-byte CQEs:
 * -EOPNOTSUPP without, as nvme-pci answers (nvme_uring_cmd_checks()).
 */
static int uring_std_checks(unsigned int issue_flags)
{
	const unsigned int big = IO_URING_F_SQE128 | IO_URING_F_CQE32;

	return (issue_flags & big) == big ? 0 : -EOPNOTSUPP;
}

static int uring_cmd_issue(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	bool vec = ioucmd->cmd_op == NVME_URING_CMD_IO_VEC;
	bool std = ioucmd->cmd_op == NVME_URING_CMD_IO || vec;
	/* io_uring's registered buffers, for the kernel's passthrough */
	bool fixed = std && (ioucmd->flags & IORING_URING_CMD_FIXED);

	if (ioucmd->cmd_op != P2PNVME_URING_CMD_IO && !std)
		return -ENOTTY;
	if (std && uring_std_checks(issue_flags))
		return -EOPNOTSUPP;
	if (!p2p_uring_cmd_reissued(ioucmd))
		pdu_of(ioucmd)->bound = 0;	/* see struct p2pnvme_pdu */
	/*
	 * p2pnvme's own command names p2pnvme's registered buffers, not
	 * io_uring's. The kernel's bits (7.x marks a re-issue) are not the
	 * user's.
	 */
	if (!(issue_flags & IO_URING_F_SQE128) ||
	    (ioucmd->flags & IORING_URING_CMD_MASK & ~(fixed ? IORING_URING_CMD_FIXED : 0)))
		return -EINVAL;
	return std ? uring_std_issue(ioucmd, vec, fixed, issue_flags) :
		     uring_own_issue(ioucmd, issue_flags);
}

/*
 * NVME_URING_CMD_ADMIN: the admin passthrough (p2pnvme_admin_passthru_iter()),
 * answered before the issue returns: res the NVMe status or -errno, the
 * result dword in a 32-byte CQE, as nvme-pci answers it; the data at a user
 * address or, with IORING_URING_CMD_FIXED, in io_uring's registered buffer.
 * It sleeps on the admin queue and the copy-out: where io_uring issues a
 * command again from its own copy of the SQE (7.x), a non-blocking issue is
 * left to its workers; 6.12 runs it here, in the submitter, as its I/O
 * waits out a reset.
 */
static int uring_admin(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct p2pnvme_file *f = ioucmd->file->private_data;
	bool fixed = ioucmd->flags & IORING_URING_CMD_FIXED;
	struct nvme_passthru_cmd64 pt = {};
	struct nvme_uring_cmd nc;
	struct iov_iter iter;
	u32 result = 0;
	long ret;

	*async_of(ioucmd) = NULL;	/* nothing for p2pnvme_uring_cmd_iopoll() */
	ret = uring_std_checks(issue_flags);
	if (ret)
		return ret;
	if (ioucmd->flags & IORING_URING_CMD_MASK & ~IORING_URING_CMD_FIXED)
		return -EINVAL;
	if (P2P_URING_REISSUE_SAFE && (issue_flags & IO_URING_F_NONBLOCK))
		return -EAGAIN;
	memcpy(&nc, p2p_uring_cmd_payload(ioucmd, struct nvme_uring_cmd), sizeof(nc));
	if (nc.rsvd2)
		return -EINVAL;
	pt = (struct nvme_passthru_cmd64){
		.opcode = nc.opcode, .flags = nc.flags, .rsvd1 = nc.rsvd1, .nsid = nc.nsid,
		.cdw2 = nc.cdw2, .cdw3 = nc.cdw3, .metadata = nc.metadata, .addr = nc.addr,
		.metadata_len = nc.metadata_len, .data_len = nc.data_len, .cdw10 = nc.cdw10,
		.cdw11 = nc.cdw11, .cdw12 = nc.cdw12, .cdw13 = nc.cdw13, .cdw14 = nc.cdw14,
		.cdw15 = nc.cdw15, .timeout_ms = nc.timeout_ms,
	};
	/* every command taken here moves data to the host */
	if (fixed && pt.data_len) {
		ret = p2p_uring_cmd_import_fixed(pt.addr, pt.data_len, ITER_DEST, &iter, ioucmd,
						 issue_flags);
		if (ret)
			return ret;
	}
	ret = p2pnvme_admin_passthru_iter(f->c, &pt, fixed && pt.data_len ? &iter : NULL,
					  &result);
	if (ret == -ERESTARTSYS)
		ret = -EINTR;	/* a CQE cannot restart */
	p2p_uring_cmd_done(ioucmd, ret, result, issue_flags);
	return -EIOCBQUEUED;
}

/*
 * P2PNVME_URING_CMD_FILE_IO: the answer handed to the submitter's task
 * with a lazy wake where the kernel has one.
 */
#ifdef HAVE_IO_URING_CMD_DO_IN_TASK_LAZY
#define uring_file_do_in_task(ioucmd, cb)	io_uring_cmd_do_in_task_lazy(ioucmd, cb)
#else
#define uring_file_do_in_task(ioucmd, cb)	io_uring_cmd_complete_in_task(ioucmd, cb)
#endif

/*
 * A file command's transfer ended: let go of it (the file, the registered
 * buffer, the pages, the max_inflight_mb charge) before the CQE says so,
 * then answer: res the bytes or the -errno, res2 its path. In the
 * submitter's task (or io_uring's fallback once that task is exiting):
 * nothing here touches user memory.
 */
static void uring_file_answer(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct p2pnvme_file_cmd *fc = pdu_of(ioucmd)->fc;
	u64 zero_len;
	u32 path;
	long ret = p2pnvme_file_cmd_result(fc, &path, &zero_len);

	p2pnvme_file_cmd_free(fc);
	if (restart_code(ret))
		ret = -EINTR;	/* a CQE cannot restart */
	p2p_uring_cmd_done(ioucmd, ret, P2PNVME_URING_RES2(path, 0) |
			   P2PNVME_URING_RES2_ZERO_LEN(zero_len), issue_flags);
}

static P2P_URING_TW(uring_file_tw)
{
	uring_file_answer(P2P_URING_TW_CMD, P2P_URING_TW_FLAGS);
}

/* The transfer ended after its issue returned: its kiocb's end, any context. */
static void uring_file_end(void *priv)
{
	uring_file_do_in_task((struct io_uring_cmd *)priv, uring_file_tw);
}

/*
 * P2PNVME_URING_CMD_FILE_IO: one transfer of the file command, checked by
 * file.c as an ioctl's entry, then one asynchronous direct I/O of the file.
 The issue blocks in the submitter on every kernel (an inline
 * IOCB_NOWAIT issue, which 7.x could hand to io_uring's workers bound to
 * the registration its buffer id named, is left out until an -EAGAIN at
 * the I/O's end is issued again too; 6.12 would issue it again from the
 * SQ ring). Not cancellable (no
 * io_uring_cmd_mark_cancelable()): the direct I/O ends within the disk's
 * timeouts, or at its removal. IOPOLL rings: -EOPNOTSUPP, nothing would
 * poll the filesystem's bios for it.
 */
static int uring_file_io(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct p2pnvme_file *f = ioucmd->file->private_data;
	struct p2pnvme_pdu *pdu = pdu_of(ioucmd);
	/*
	 * Never IOCB_NOWAIT, for now: a direct I/O may also end in -EAGAIN
	 * after some of its bios were submitted (iomap's next extent under
	 * IOMAP_NOWAIT), which only a reissue from uring_file_end() could
	 * hide; until it does, the issue blocks in the submitter on every
	 * kernel, as on 6.12.
	 */
	bool nowait = false;
	struct p2pnvme_uring_file_cmd uc;
	struct p2pnvme_file_cmd *fc;
	struct p2pnvme_file_io io;
	u64 zero_len;
	u32 path;
	int ret;

	pdu->a = NULL;	/* nothing for p2pnvme_uring_cmd_iopoll() */
	if (!p2p_uring_cmd_reissued(ioucmd))
		pdu->bound = 0;
	if (issue_flags & IO_URING_F_IOPOLL)
		return -EOPNOTSUPP;
	if (!(issue_flags & IO_URING_F_SQE128) || (ioucmd->flags & IORING_URING_CMD_MASK) ||
	    !uring_sqe_unused_zero(ioucmd->sqe))
		return -EINVAL;
	BUILD_BUG_ON(sizeof(uc) != 2 * sizeof(struct io_uring_sqe) -
				  offsetof(struct io_uring_sqe, cmd));
	/* one copy: the SQE may be rewritten by userspace meanwhile */
	memcpy(&uc, p2p_uring_cmd_payload(ioucmd, struct p2pnvme_uring_file_cmd), sizeof(uc));
	BUILD_BUG_ON(ARRAY_SIZE(uc.rsvd) != 5);
	/* five words, or'ed: cheaper than memchr_inv() for every command */
	if (uc.rsvd[0] | uc.rsvd[1] | uc.rsvd[2] | uc.rsvd[3] | uc.rsvd[4])
		return -EINVAL;
	io = (struct p2pnvme_file_io){ .argsz = sizeof(io), .flags = uc.flags, .op = uc.op,
				       .fd = uc.fd, .offset = uc.offset, .len = uc.len,
				       .addr = uc.addr, .buf_id = uc.buf_id };
	fc = p2pnvme_file_cmd_alloc(f, uring_file_end, ioucmd);
	if (!fc)
		return -ENOMEM;
	pdu->fc = fc;
	/* a run of zeros to clear is said in the extra word: a 32-byte CQE */
	ret = p2pnvme_file_cmd_prepare(fc, &io, pdu->bound, issue_flags & IO_URING_F_CQE32);
	if (!ret)
		ret = p2pnvme_file_cmd_issue(fc, nowait);
	if (ret == -EIOCBQUEUED)
		return ret;	/* uring_file_end() hands it to the task */
	/* ended already: answered now, unless the filesystem would block */
	if (!ret && !(nowait && p2pnvme_file_cmd_result(fc, &path, &zero_len) == -EAGAIN)) {
		uring_file_answer(ioucmd, issue_flags);
		return -EIOCBQUEUED;
	}
	if (!ret || ret == -EAGAIN) {
		ret = -EAGAIN;
		pdu->bound = p2pnvme_file_cmd_bound(fc);
	}
	p2pnvme_file_cmd_free(fc);
	return ret;
}

/**
 * p2pnvme_uring_cmd - file_operations.uring_cmd of /dev/p2pnvmeN
 * @ioucmd: the command; its SQE holds a struct p2pnvme_uring_cmd
 *	    (P2PNVME_URING_CMD_IO), a struct p2pnvme_uring_file_cmd
 *	    (P2PNVME_URING_CMD_FILE_IO, uring_file_io()) or a struct
 *	    nvme_uring_cmd (NVME_URING_CMD_IO, _IO_VEC, _ADMIN)
 * @issue_flags: IO_URING_F_*
 *
 * Return: -EIOCBQUEUED (answered with io_uring_cmd_done(), later, or for
 * an admin command already), or the
 * -errno the CQE gets now: -ENOTTY (unknown cmd_op), -EINVAL (no SQE128
 * for P2PNVME_URING_CMD_IO, a bad request, a non-zero byte after it in the
 * command area or in an SQE field without a meaning here: ioprio, addr,
 * len, buf_index, file_index), -ERANGE, -EOPNOTSUPP (the kernel's NVMe
 * commands on a ring without SQE128 and CQE32, as nvme-pci; an
 * unregistered dma-buf, a polled
 * controller and a ring without IORING_SETUP_IOPOLL), -ENOENT (no such
 * registered buffer), -EBADF (a read into a read-only registered dma-buf),
 * -EACCES (a write on a read-only fd), -E2BIG/-EAGAIN (max_inflight_mb;
 * -EAGAIN also for a non-blocking issue without room on its queue, which
 * io_uring's workers issue again; where io_uring would issue it again from
 * the SQ ring, -EBUSY instead; issued again, -ENOENT if the registered
 * buffer it named is gone, even if its id names another one now; and for
 * an inline issue whose registered dma-buf's exporter was interrupted
 * mapping it: async_restart()), -ENOMEM, -EFAULT and the errors of pinning
 * and mapping, -ENODEV, -EINTR; never a restart code (-ERESTARTSYS is
 * -EINTR here).
 */
int p2pnvme_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	int ret;

	if (ioucmd->cmd_op == NVME_URING_CMD_ADMIN)
		ret = uring_admin(ioucmd, issue_flags);
	else if (ioucmd->cmd_op == P2PNVME_URING_CMD_FILE_IO)
		ret = uring_file_io(ioucmd, issue_flags);
	else
		ret = uring_cmd_issue(ioucmd, issue_flags);

	/* a CQE cannot restart (6.12's io_uring says -EINTR, 6.1's and 7.2's pass it on) */
	if (restart_code(ret))
		ret = -EINTR;
	/*
	 * io_uring issues a command answered -EAGAIN again, from its SQ slot
	 * where it has no copy of it (P2P_URING_REISSUE_SAFE): userspace may
	 * have put another command there meanwhile.
	 */
	if (!P2P_URING_REISSUE_SAFE && ret == -EAGAIN)
		return -EBUSY;
	return ret;
}

/*
 * @a has ended: answer it and every other ended request of its IOPOLL ring,
 * whose lock the caller holds, so that io_do_iopoll() collects them in one
 * pass. Requests of other rings are left to their own pollers (the answer
 * puts the command's state into its ring's cache, under that ring's lock).
 * The scan is of the requests in flight from @a's CPU (where a ring's
 * submitter usually stays; the others are answered when their own turn
 * comes), once per answering poll, not per poll. Nothing else answers
 * these: their ring polls them only under that lock, and removal takes
 * only what is still on the list.
 */
static void async_answer_ring(struct p2pnvme_async *a)
{
	struct p2pnvme *c = a->c;
	struct p2pnvme_pcpu *pc = a->pc;
	struct p2pnvme_async *e, *tmp;
	LIST_HEAD(ended);
	bool found = false;

	spin_lock(&pc->async_lock);
	list_for_each_entry_safe(e, tmp, &pc->async_list, link) {
		/* pairs with async_end()'s release: its results are seen */
		if (smp_load_acquire(&e->ended) && e->iopoll && e->ring == a->ring) {
			found |= e == a;
			list_move_tail(&e->link, &ended);
		}
	}
	spin_unlock(&pc->async_lock);
	list_for_each_entry_safe(e, tmp, &ended, link) {
		async_release(e);
		async_done(e, 0);
		async_free(c, e);
	}
	if (!found)	/* removal took it: wait for its release, then answer */
		async_answer(a, 0);
}

/**
 * p2pnvme_uring_cmd_iopoll - file_operations.uring_cmd_iopoll
 * @ioucmd: a command of an IORING_SETUP_IOPOLL ring that p2pnvme_uring_cmd()
 *	    queued
 * @iob: unused: requests are answered one by one
 * @poll_flags: unused: one pass, never sleeps to wait
 *
 * Called by io_uring, with the ring locked, in the task that polls it (the
 * submitter, its SQPOLL thread, or the ring's teardown), until the request
 * is answered. Reaps the request's queue (polled or not; a reset or removal
 * in progress is not waited for: they end the request themselves), and if
 * the request has ended, releases and answers it here, with every other
 * request of the ring that has ended.
 *
 * Return: 1 if the request was answered, else 0.
 */
int p2pnvme_uring_cmd_iopoll(struct io_uring_cmd *ioucmd, struct io_comp_batch *iob,
			     unsigned int poll_flags)
{
	struct p2pnvme_async *a = *async_of(ioucmd);
	struct p2pnvme *c;

	if (!a)		/* an admin command: answered when it was issued */
		return 0;
	c = a->c;
	/* the queue lives while the controller is LIVE under the guard */
	if (!READ_ONCE(a->ended) && percpu_ref_tryget_live(&c->io_ref)) {
		if (p2pnvme_state(c) == P2PNVME_LIVE)
			p2pnvme_queue_reap(a->r.q);
		percpu_ref_put(&c->io_ref);
	}
	if (!READ_ONCE(a->ended))
		return 0;
	/* io_do_iopoll() holds the ring's lock, which the answers need */
	async_answer_ring(a);
	return 1;
}

/*
 * Removal: take an ended request whose task work has not run, from any
 * CPU's list; or NULL, with @more saying whether any list still holds one
 * (not ended yet).
 */
static struct p2pnvme_async *async_take_ended(struct p2pnvme *c, bool *more)
{
	struct p2pnvme_async *a;
	unsigned int cpu;

	*more = false;
	for_each_possible_cpu(cpu) {
		struct p2pnvme_pcpu *pc = per_cpu_ptr(c->pcpu, cpu);

		spin_lock(&pc->async_lock);
		list_for_each_entry(a, &pc->async_list, link) {
			/* pairs with async_end()'s release: its results are seen */
			if (smp_load_acquire(&a->ended)) {
				list_del(&a->link);
				a->taken = true;
				spin_unlock(&pc->async_lock);
				*more = true;	/* looked at again after this one */
				return a;
			}
		}
		*more |= !list_empty(&pc->async_list);
		spin_unlock(&pc->async_lock);
	}
	return NULL;
}

static void async_release_all(struct p2pnvme *c)
{
	struct p2pnvme_async *a;
	bool more = true;

	while (more) {
		a = async_take_ended(c, &more);
		if (a) {
			/* @a lives until its task work, which waits for this */
			async_release(a);
			spin_lock(&a->pc->async_lock);
			a->released = true;
			spin_unlock(&a->pc->async_lock);
			wake_up_all(&c->wq);
		} else if (more) {	/* not ended yet: its submitter has not launched it */
			schedule_timeout_uninterruptible(max(HZ / 100, 1));
		}
	}
}
#else
static void async_watch(struct work_struct *work)
{
}

static void async_release_all(struct p2pnvme *c)
{
}
#endif /* P2P_HAVE_URING_CMD */

/**
 * p2pnvme_async_init - the io_uring side of a new controller
 * @c: the controller
 */
void p2pnvme_async_init(struct p2pnvme *c)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct p2pnvme_pcpu *pc = per_cpu_ptr(c->pcpu, cpu);

		spin_lock_init(&pc->async_lock);
		INIT_LIST_HEAD(&pc->async_list);
		atomic_set(&pc->async_live, 0);
	}
	atomic_set(&c->async_plugged, 0);
	INIT_DELAYED_WORK(&c->async_watch, async_watch);
	p2pnvme_batch_init(&c->async_any, false);
	c->async_any.any_async = true;
}

/**
 * p2pnvme_async_drain - release every io_uring request before the device goes
 * @c: the controller, every command cancelled (removal, after quiesce)
 *
 * Their batches have ended (or end as soon as their submitters launch
 * them): each is released here unless its task work got to it first; the
 * answers follow in the submitters' tasks. A doorbell left to a
 * submitter's block plug is rung (or skipped: the queue is stopped) when
 * its submission batch ends or its task sleeps.
 */
void p2pnvme_async_drain(struct p2pnvme *c)
{
	async_release_all(c);
	wait_event(c->wq, !p2pnvme_async_live(c) && !atomic_read(&c->async_plugged));
	cancel_delayed_work_sync(&c->async_watch);
}

/**
 * p2pnvme_async_live - io_uring requests submitted and not released yet
 * @c: the controller
 *
 * Return: their number, summed over the CPUs they were submitted on (exact
 * once nothing is submitted any more: removal's wait, debugfs).
 */
unsigned int p2pnvme_async_live(struct p2pnvme *c)
{
	unsigned int cpu, n = 0;

	for_each_possible_cpu(cpu)
		n += atomic_read(&per_cpu_ptr(c->pcpu, cpu)->async_live);
	return n;
}

/**
 * p2pnvme_async_exit - free the per-CPU caches of answered io_uring requests
 * @c: the controller, being freed (no file open, no request left)
 */
void p2pnvme_async_exit(struct p2pnvme *c)
{
	unsigned int cpu, i;

	for_each_possible_cpu(cpu) {
		struct p2pnvme_pcpu *pc = per_cpu_ptr(c->pcpu, cpu);

		for (i = 0; i < pc->nr_free; i++)
			kfree(pc->free[i]);
		pc->nr_free = 0;
	}
}
