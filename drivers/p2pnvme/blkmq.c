// SPDX-License-Identifier: GPL-2.0
/*
 * PROTOTYPE, for the benchmark only (module parameter blkmq_proto, default
 * off): the io_uring hot path of a registered 4 KiB read on blk-mq instead
 * of the queue engine (queue.c), to measure what blk-mq's machinery costs
 * before deciding to build on it (issue 22). Nothing else goes this way.
 *
 * Loaded with blkmq_proto=1, probe asks the controller for a second set of
 * I/O queue pairs, as many as the engine's (qid nr_ioq + 1 ..), each with
 * its own MSI-X vector from a second interrupt set spread over the CPUs as
 * the engine's are; the engine's queues, vectors and CPU map do not change.
 * The prototype owns these queues whole, so no command identifier is
 * shared with the engine: its CIDs are blk-mq's tags with a generation in
 * the top 4 bits, as nvme-pci's. A tag set with one hardware context per
 * queue and a request_queue without a disk (as nvme's admin and generic
 * char device queues) sit on them.
 *
 * While blkmq_proto is 1 (it may be switched at run time, as the benchmark
 * does between passes), a P2PNVME_URING_CMD_IO read of at most 4 KiB into a
 * registered buffer, from a ring without IOPOLL, goes:
 *   issue   blk_mq_alloc_request(REQ_OP_DRV_IN), the request checked and
 *           armed on its registered buffer as the engine does it (io.c,
 *           reg.c), the NVMe command with the buffer's premapped address
 *           (dptr.c) in the request's PDU, blk_execute_rq_nowait() with
 *           blkmq_end_io(); io_uring's block plug holds it until the end of
 *           the submission batch
 *   queue   .queue_rq copies the command into the SQ, rings the doorbell on
 *           bd->last; .commit_rqs rings what a batch left
 *   irq     the CQ's handler finds the request by tag, and
 *           blk_mq_complete_request() ends it (on the submitting CPU)
 *   end     blkmq_end_io() idles the registered buffer and hands the
 *           request to the submitter's task (io_uring task work), which
 *           counts, answers with io_uring_cmd_done() and frees the request
 *
 * What it leaves out, on purpose: resets. The prototype's queues exist only
 * in the controller enable that created them; after a reset or a PCI
 * recovery it refuses (-EIO), and a command lost in one fails at its blk-mq
 * timeout, once the controller has been disabled since it was queued (until
 * then a timeout asks the engine for a reset). Removal stops the queue,
 * frees the vectors, fails what is in flight and destroys the queue (which
 * waits for the answered requests' task work) before the queues' memory
 * goes. Not on polled controllers, not for IOPOLL rings.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/debugfs.h>
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <p2p_compat.h>

#include "uring.h"
#include "io.h"
#include "reg.h"
#include "ctrl.h"
#include "admin.h"
#include "queue.h"

#if P2P_HAVE_BLKMQ_PROTO
static bool blkmq_proto;
module_param(blkmq_proto, bool, 0644);
MODULE_PARM_DESC(blkmq_proto, "Bench-only prototype: at probe, build blk-mq queues beside the engine's; while set, registered 4 KiB io_uring reads use them (default false)");

/* the CID: a 4-bit generation above the tag, as nvme_cid() */
#define BLKMQ_TAG_BITS	12
#define BLKMQ_TAG_MASK	((1U << BLKMQ_TAG_BITS) - 1)
static_assert(P2PNVME_MAX_DEPTH <= 1U << BLKMQ_TAG_BITS);

/**
 * struct p2pnvme_blkmq - the blk-mq prototype of one controller
 * @c: the controller
 * @set: one hardware context per queue of @q
 * @queue: the request_queue, without a disk; queuedata is this
 * @enables: @c->enables when the queues were created: they exist only
 *	     while it has not changed
 * @dead: removal: .queue_rq fails what is still dispatched
 * @ios: requests answered, per CPU (debugfs)
 * @nr: queue pairs
 * @q: the queue pairs; only their SQ side (sq_lock), CQ side (cq_lock,
 *     taken by the interrupt handler only) and rings are used, not their
 *     command slots
 */
struct p2pnvme_blkmq {
	struct p2pnvme *c;
	struct blk_mq_tag_set set;
	struct request_queue *queue;
	u32 enables;
	bool dead;
	u64 __percpu *ios;
	unsigned int nr;
	struct p2pnvme_queue q[] __counted_by(nr);
};

/**
 * struct blkmq_pdu - what each request carries (the tag set's cmd_size)
 * @r: the transfer, as the engine's io_uring requests have it
 * @io: the request from the SQE
 * @cmd: the NVMe command, its CID written by .queue_rq
 * @f: the file it came through (io_uring holds it until the answer)
 * @ioucmd: what is answered
 * @t0: p2pnvme_now() at issue
 * @error: set by a cancellation or a timeout before it completes
 * @status: the NVMe status of its completion
 * @genctr: bumped at each dispatch of this tag; kept across uses
 */
struct blkmq_pdu {
	struct p2pnvme_req r;
	struct p2pnvme_io io;
	struct nvme_command cmd;
	struct p2pnvme_file *f;
	struct io_uring_cmd *ioucmd;
	u64 t0;
	int error;
	u16 status;
	u8 genctr;
};

static struct request **rq_of(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct request *) > sizeof(ioucmd->pdu));
	return (struct request **)ioucmd->pdu;
}

/* In the submitter's task: count, release, answer, free the request. */
static P2P_URING_TW(blkmq_tw)
{
	struct io_uring_cmd *ioucmd = P2P_URING_TW_CMD;
	struct request *rq = *rq_of(ioucmd);
	struct blkmq_pdu *pdu = blk_mq_rq_to_pdu(rq);
	struct p2pnvme_blkmq *bq = rq->q->queuedata;

	p2pnvme_req_finish(bq->c, &pdu->r, p2pnvme_elapsed(pdu->t0, p2pnvme_now()));
	this_cpu_inc(*bq->ios);
	p2p_uring_cmd_done(ioucmd, pdu->io.result,
			   P2PNVME_URING_RES2(pdu->io.path, pdu->io.status), P2P_URING_TW_FLAGS);
	blk_mq_free_request(rq);	/* last: removal's queue destruction waits for it */
}

/*
 * The request is over (any context): its command cannot reach the
 * controller any more, so the buffer may be invalidated; the rest in the
 * submitter's task, as nvme_uring_cmd_end_io() does.
 */
static P2P_RQ_END_IO(blkmq_end_io)
{
	struct blkmq_pdu *pdu = blk_mq_rq_to_pdu(rq);
	struct p2pnvme_req *r = &pdu->r;

	r->error = pdu->error ?: pdu->status ? -EIO : blk_status_to_errno(err);
	r->status = pdu->status & 0x7ff;
	p2pnvme_req_ended(r);	/* idle, a registered dma-buf's fence signalled */
	io_uring_cmd_do_in_task_lazy(pdu->ioucmd, blkmq_tw);
	return RQ_END_IO_NONE;
}

static void blkmq_complete(struct request *rq)
{
	struct blkmq_pdu *pdu = blk_mq_rq_to_pdu(rq);

	blk_mq_end_request(rq, pdu->error || pdu->status ? BLK_STS_IOERR : BLK_STS_OK);
}

/* Let the controller see the SQ entries so far. Caller holds sq_lock. */
static void blkmq_ring_locked(struct p2pnvme_queue *q)
{
	lockdep_assert_held(&q->sq_lock);
	if (q->sq_tail == q->sq_db_tail)
		return;
	writel(q->sq_tail, q->sq_db);	/* ordered after the entries */
	q->sq_db_tail = q->sq_tail;
}

static blk_status_t blkmq_queue_rq(struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	struct p2pnvme_blkmq *bq = hctx->queue->queuedata;
	struct p2pnvme_queue *q = hctx->driver_data;
	struct request *rq = bd->rq;
	struct blkmq_pdu *pdu = blk_mq_rq_to_pdu(rq);

	if (unlikely(READ_ONCE(bq->dead)))
		return BLK_STS_IOERR;
	pdu->genctr++;
	pdu->cmd.common.command_id = rq->tag | (pdu->genctr & 0xf) << BLKMQ_TAG_BITS;
	blk_mq_start_request(rq);
	spin_lock(&q->sq_lock);
	memcpy(&q->sq[q->sq_tail], &pdu->cmd, sizeof(pdu->cmd));
	if (++q->sq_tail == q->depth)
		q->sq_tail = 0;
	if (bd->last)
		blkmq_ring_locked(q);
	spin_unlock(&q->sq_lock);
	return BLK_STS_OK;
}

/* A dispatch batch ended without a request marked last. */
static void blkmq_commit_rqs(struct blk_mq_hw_ctx *hctx)
{
	struct p2pnvme_queue *q = hctx->driver_data;

	spin_lock(&q->sq_lock);
	blkmq_ring_locked(q);
	spin_unlock(&q->sq_lock);
}

/*
 * No answer in io_timeout_ms. Once the controller has been disabled since
 * the command was queued (a reset enabled it again, or it is DEAD), the
 * command can neither complete nor DMA: fail it. Before that, have the
 * engine reset the controller and wait again.
 */
static enum blk_eh_timer_return blkmq_timeout(struct request *rq)
{
	struct p2pnvme_blkmq *bq = rq->q->queuedata;
	struct blkmq_pdu *pdu = blk_mq_rq_to_pdu(rq);
	struct p2pnvme *c = bq->c;

	if (READ_ONCE(c->enables) != bq->enables || p2pnvme_state(c) == P2PNVME_DEAD) {
		pdu->error = -ETIMEDOUT;
		blk_mq_complete_request(rq);
		return BLK_EH_DONE;
	}
	if (p2pnvme_state(c) == P2PNVME_LIVE)
		c->escalate(c);
	return BLK_EH_RESET_TIMER;
}

static int blkmq_init_hctx(struct blk_mq_hw_ctx *hctx, void *data, unsigned int i)
{
	struct p2pnvme_blkmq *bq = data;

	hctx->driver_data = &bq->q[i];
	return 0;
}

/* Each CPU to the queue whose interrupt it takes, as the engine's map. */
static void blkmq_map_queues(struct blk_mq_tag_set *set)
{
	struct blk_mq_queue_map *map = &set->map[HCTX_TYPE_DEFAULT];
	struct p2pnvme_blkmq *bq = set->driver_data;
	const struct cpumask *mask;
	unsigned int i, cpu;

	for (i = 0; i < map->nr_queues; i++) {
		mask = pci_irq_get_affinity(bq->c->pdev, bq->c->nr_ioq + 1 + i);
		if (!mask) {
			blk_mq_map_queues(map);
			return;
		}
		for_each_cpu(cpu, mask)
			map->mq_map[cpu] = map->queue_offset + i;
	}
}

static const struct blk_mq_ops blkmq_ops = {
	.queue_rq	= blkmq_queue_rq,
	.commit_rqs	= blkmq_commit_rqs,
	.complete	= blkmq_complete,
	.timeout	= blkmq_timeout,
	.init_hctx	= blkmq_init_hctx,
	.map_queues	= blkmq_map_queues,
};

static irqreturn_t blkmq_irq(int irq, void *data)
{
	struct p2pnvme_queue *q = data;
	struct p2pnvme_blkmq *bq = q->c->blkmq;
	struct blk_mq_tags *tags = bq->set.tags[q - bq->q];
	bool moved = false;

	spin_lock(&q->cq_lock);
	for (;;) {
		struct nvme_completion *cqe = &q->cq[q->cq_head];
		u16 st = le16_to_cpu(READ_ONCE(cqe->status)), cid;
		struct blkmq_pdu *pdu;
		struct request *rq;

		if ((st & 1) != q->cq_phase)
			break;
		dma_rmb();	/* the entry after its phase bit */
		cid = READ_ONCE(cqe->command_id);
		if (++q->cq_head == q->depth) {
			q->cq_head = 0;
			q->cq_phase ^= 1;
		}
		moved = true;
		rq = blk_mq_tag_to_rq(tags, cid & BLKMQ_TAG_MASK);
		pdu = rq ? blk_mq_rq_to_pdu(rq) : NULL;
		if (!pdu || (pdu->genctr & 0xf) != cid >> BLKMQ_TAG_BITS) {
			dev_warn_ratelimited(&q->c->pdev->dev, "blk-mq q%u: completion for unknown cid %#x\n",
					     q->qid, cid);
			continue;
		}
		pdu->status = st >> 1;
		if (!blk_mq_complete_request_remote(rq))
			blkmq_complete(rq);
	}
	if (moved)
		writel(q->cq_head, q->cq_db);
	spin_unlock(&q->cq_lock);
	return moved ? IRQ_HANDLED : IRQ_NONE;
}

/**
 * p2pnvme_blkmq_takes - does the prototype take this io_uring request?
 * @c: the controller
 * @io: the request, checked
 * @issue_flags: IO_URING_F_*
 *
 * Return: true for a read of at most 4 KiB into a registered buffer from a
 * ring without IOPOLL, while blkmq_proto is set and the prototype exists.
 */
bool p2pnvme_blkmq_takes(struct p2pnvme *c, const struct p2pnvme_io *io,
			 unsigned int issue_flags)
{
	return c->blkmq && READ_ONCE(blkmq_proto) && io->op == P2PNVME_OP_READ &&
	       (io->flags & P2PNVME_IO_F_REGISTERED) && io->len <= SZ_4K &&
	       !(issue_flags & IO_URING_F_IOPOLL);
}

/* The read's command, with the registered buffer's premapped address. */
static int blkmq_build(struct p2pnvme *c, struct blkmq_pdu *pdu)
{
	struct p2pnvme_req *r = &pdu->r;
	struct nvme_command *cmd = &pdu->cmd;
	struct p2pnvme_cursor cur;

	memset(cmd, 0, sizeof(*cmd));
	cmd->rw.opcode = nvme_cmd_read;
	cmd->rw.nsid = cpu_to_le32(c->nsid);
	cmd->rw.slba = cpu_to_le64(pdu->io.slba);
	cmd->rw.length = cpu_to_le16((pdu->io.len >> c->lba_shift) - 1);
	p2pnvme_reg_cursor(r, &cur);
	/* no list pages here: a read that needs one is not the prototype's */
	if (p2pnvme_data_needs_list(&cur, pdu->io.len, r->sgl))
		return -EOPNOTSUPP;
	return r->sgl ? p2pnvme_build_sgl(NULL, 0, &cur, pdu->io.len, cmd) :
			p2pnvme_build_prps(NULL, 0, &cur, pdu->io.len, cmd);
}

/**
 * p2pnvme_blkmq_issue - issue an io_uring read through the prototype
 * @ioucmd: the command
 * @f: its file
 * @io: the request, checked, p2pnvme_blkmq_takes() true
 * @issue_flags: IO_URING_F_*
 *
 * Return: -EIOCBQUEUED, or the -errno the CQE gets now: -EIO (a reset
 * since probe), -ENODEV, -EAGAIN (no tag on a non-blocking issue), and
 * those of the buffer's lookup (as the engine's path).
 */
int p2pnvme_blkmq_issue(struct io_uring_cmd *ioucmd, struct p2pnvme_file *f,
			const struct p2pnvme_io *io, unsigned int issue_flags)
{
	struct p2pnvme *c = f->c;
	bool nowait = P2P_URING_REISSUE_SAFE && (issue_flags & IO_URING_F_NONBLOCK);
	struct p2pnvme_blkmq *bq;
	struct blkmq_pdu *pdu;
	bool signalling, cookie;
	struct request *rq;
	int ret;

	/*
	 * The guard keeps @bq alive until the request holds its queue:
	 * removal tears it down only once the guard is frozen for good.
	 */
	if (!p2pnvme_io_tryenter(c))
		return p2pnvme_state(c) >= P2PNVME_DELETING ? -ENODEV : -EIO;
	bq = READ_ONCE(c->blkmq);
	ret = -EIO;
	if (!bq || READ_ONCE(c->enables) != bq->enables)
		goto out_exit;
	rq = blk_mq_alloc_request(bq->queue, REQ_OP_DRV_IN | (nowait ? REQ_NOWAIT : 0),
				  nowait ? BLK_MQ_REQ_NOWAIT : 0);
	if (IS_ERR(rq)) {
		ret = PTR_ERR(rq);
		goto out_exit;
	}
	pdu = blk_mq_rq_to_pdu(rq);
	pdu->io = *io;
	pdu->r = (struct p2pnvme_req){ .io = &pdu->io, .q = rq->mq_hctx->driver_data };
	pdu->f = f;
	pdu->ioucmd = ioucmd;
	pdu->error = 0;
	pdu->status = 0;
	ret = p2pnvme_req_prepare(c, f, &pdu->r);
	/* a registered dma-buf: fenced as the engine's requests (no list needed) */
	if (!ret)
		ret = p2pnvme_req_map(c, &pdu->r, NULL);
	if (!ret)
		ret = blkmq_build(c, pdu);
	if (ret)
		goto out_abandon;
	*rq_of(ioucmd) = rq;
	rq->end_io = blkmq_end_io;
	pdu->t0 = p2pnvme_now();
	/* the fence signalling section ends after the dispatch, when @pdu may be gone */
	signalling = pdu->r.signalling;
	cookie = pdu->r.cookie;
	pdu->r.signalling = false;
	blk_execute_rq_nowait(rq, false);
	if (signalling)
		p2pnvme_dmabuf_signalled(cookie);
	p2pnvme_io_exit(c);
	return -EIOCBQUEUED;

out_abandon:
	p2pnvme_req_abandon(c, &pdu->r);
	blk_mq_free_request(rq);
out_exit:
	p2pnvme_io_exit(c);
	return ret;
}

static int blkmq_show(struct seq_file *s, void *unused)
{
	struct p2pnvme_blkmq *bq = s->private;
	unsigned int cpu;
	u64 ios = 0;

	for_each_possible_cpu(cpu)
		ios += *per_cpu_ptr(bq->ios, cpu);
	seq_printf(s, "queues %u\nenabled %d\nios %llu\n", bq->nr,
		   READ_ONCE(blkmq_proto) && READ_ONCE(bq->c->enables) == bq->enables, ios);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(blkmq);

/**
 * p2pnvme_blkmq_wanted - should probe make room for the prototype?
 *
 * Return: blkmq_proto's value now.
 */
bool p2pnvme_blkmq_wanted(void)
{
	return READ_ONCE(blkmq_proto);
}

/**
 * p2pnvme_blkmq_irq_sets - split I/O vectors in two sets of one size (the
 *	engine's, the prototype's), each spread over every CPU
 * @affd: the affinity descriptor (.calc_sets)
 * @nvecs: vectors to split, an even number
 */
void p2pnvme_blkmq_irq_sets(struct irq_affinity *affd, unsigned int nvecs)
{
	affd->nr_sets = 2;
	affd->set_size[0] = nvecs / 2;
	affd->set_size[1] = nvecs - nvecs / 2;
}

/* Queue pair @i (qid and vector after the engine's) on the controller. */
static int blkmq_queue_create(struct p2pnvme_blkmq *bq, unsigned int i)
{
	struct p2pnvme *c = bq->c;
	struct device *dev = &c->pdev->dev;
	struct p2pnvme_queue *q = &bq->q[i];
	u16 qid = c->nr_ioq + 1 + i;
	const char *name;
	int ret;

	ret = p2pnvme_queue_alloc(c, q, qid, c->ioq[0].depth);
	if (ret)
		return ret;
	name = devm_kasprintf(dev, GFP_KERNEL, "p2pnvme:%s:blkmq%u", pci_name(c->pdev), qid);
	if (!name)
		return -ENOMEM;
	ret = devm_request_irq(dev, pci_irq_vector(c->pdev, qid), blkmq_irq, 0, name, q);
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

static void blkmq_free_irqs(struct p2pnvme_blkmq *bq)
{
	struct device *dev = &bq->c->pdev->dev;
	unsigned int i;

	for (i = 0; i < bq->nr; i++)
		if (bq->q[i].vector >= 0)
			devm_free_irq(dev, pci_irq_vector(bq->c->pdev, bq->q[i].vector),
				      &bq->q[i]);
}

/**
 * p2pnvme_blkmq_init - build the prototype, when probe made room for it
 * @c: the controller, enabled, its engine queues created, not LIVE yet
 *
 * A failure is said and leaves the controller without the prototype.
 */
void p2pnvme_blkmq_init(struct p2pnvme *c)
{
	struct p2pnvme_blkmq *bq;
	unsigned int i;
	int ret = -ENOMEM;

	if (!c->nr_protoq)
		return;
	bq = kzalloc(struct_size(bq, q, c->nr_protoq), GFP_KERNEL);
	if (!bq)
		goto fail;
	bq->nr = c->nr_protoq;
	bq->c = c;
	bq->enables = c->enables;
	for (i = 0; i < bq->nr; i++)
		bq->q[i].vector = -1;
	bq->ios = alloc_percpu(u64);
	if (!bq->ios)
		goto err_free;
	bq->set.ops = &blkmq_ops;
	bq->set.nr_hw_queues = bq->nr;
	bq->set.nr_maps = 1;
	bq->set.queue_depth = c->ioq[0].depth - 1;
	bq->set.cmd_size = sizeof(struct blkmq_pdu);
	bq->set.numa_node = dev_to_node(&c->pdev->dev);
	bq->set.timeout = p2pnvme_io_timeout();
	bq->set.driver_data = bq;
	ret = blk_mq_alloc_tag_set(&bq->set);
	if (ret)
		goto err_percpu;
	bq->queue = blk_mq_alloc_queue(&bq->set, NULL, bq);
	if (IS_ERR(bq->queue)) {
		ret = PTR_ERR(bq->queue);
		goto err_tag_set;
	}
	/* before any vector can fire: the handler finds @bq through @c */
	c->blkmq = bq;
	for (i = 0; i < bq->nr; i++) {
		ret = blkmq_queue_create(bq, i);
		if (ret)
			goto err_irqs;
	}
	debugfs_create_file("blkmq_proto", 0444, c->debugfs, bq, &blkmq_fops);
	pci_info(c->pdev, "blk-mq PROTOTYPE (bench only): %u queues of %u, qid %u..%u\n",
		 bq->nr, bq->set.queue_depth, c->nr_ioq + 1, c->nr_ioq + bq->nr);
	return;

err_irqs:
	/* queues created on the controller stay there, empty and unused */
	blkmq_free_irqs(bq);
	c->blkmq = NULL;
	blk_mq_destroy_queue(bq->queue);
	blk_put_queue(bq->queue);
err_tag_set:
	blk_mq_free_tag_set(&bq->set);
err_percpu:
	free_percpu(bq->ios);
err_free:
	kfree(bq);
fail:
	pci_warn(c->pdev, "no blk-mq prototype (%d)\n", ret);
}

/* Removal: a request the controller will never answer now. */
static bool blkmq_cancel(struct request *rq, void *data)
{
	struct blkmq_pdu *pdu = blk_mq_rq_to_pdu(rq);

	if (blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT)
		return true;
	pdu->error = -ENODEV;
	blk_mq_complete_request(rq);
	return true;
}

/**
 * p2pnvme_blkmq_exit - tear the prototype down before the queues' memory goes
 * @c: the controller, disabled (shut down, or DEAD), its I/O guard frozen
 *     for good: nobody issues any more
 *
 * Requests still in io_uring's block plugs are failed when they are
 * dispatched; the queue's destruction waits for every request, and so for
 * the answered ones' task work.
 */
void p2pnvme_blkmq_exit(struct p2pnvme *c)
{
	struct p2pnvme_blkmq *bq = c->blkmq;

	if (!bq)
		return;
	WRITE_ONCE(bq->dead, true);
	/* waits for a .queue_rq that did not see @dead */
	blk_mq_quiesce_queue(bq->queue);
	blkmq_free_irqs(bq);	/* waits for a running handler */
	blk_mq_tagset_busy_iter(&bq->set, blkmq_cancel, NULL);
	blk_mq_unquiesce_queue(bq->queue);
	blk_mq_destroy_queue(bq->queue);
	blk_put_queue(bq->queue);
	blk_mq_free_tag_set(&bq->set);
	c->blkmq = NULL;
	free_percpu(bq->ios);
	kfree(bq);
}

#endif /* P2P_HAVE_BLKMQ_PROTO */
