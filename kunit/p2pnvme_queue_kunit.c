// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of p2pnvme's queue layer against a fake controller: the
 * rings are plain memory, the doorbells words the test reads, and the test
 * writes the completion entries a controller would (p2pnvme_queue_setup()
 * is the seam). What is checked: the submission entry and its command
 * identifier, the doorbell values, a completion ending its command and its
 * status reaching the request, the phase bit across wraps, and the entries
 * a broken or hostile controller may write (an identifier of a free slot,
 * of an earlier use of a slot, out of range) changing nothing but the head.
 *
 * Then a whole controller (struct fctl): its admin queue and an I/O queue
 * with a thread playing the controller, which fetches what the doorbells
 * publish and answers it, so that what waits for completions (a batch of
 * the I/O ioctls, the admin passthrough) runs as it does on a device.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/nvme_ioctl.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <p2p_compat.h>

#include "../drivers/p2pnvme/io.h"
#include "../drivers/p2pnvme/ctrl.h"
#include "../drivers/p2pnvme/queue.h"

/**
 * struct fake - a queue, its controller as far as the queue layer looks,
 *	and the test's view of the hardware
 * @c: the controller (state LIVE, no statistics: nothing here counts)
 * @q: the queue under test
 * @b: a batch of the test's, held by the test (pending starts at 1)
 * @r: its one request
 * @io: @r's request data (no transfer: Flush)
 * @db: the SQ tail and CQ head doorbells as the controller sees them
 * @head: the controller's next CQ entry
 * @phase: the phase bit it writes there
 */
struct fake {
	struct p2pnvme c;
	struct p2pnvme_queue q;
	struct p2pnvme_batch b;
	struct p2pnvme_req r;
	struct p2pnvme_io io;
	u32 db[2];
	u16 head;
	u8 phase;
};

#define DEPTH	4	/* three slots: wraps come quickly */
#define DNR	0x4000	/* Do Not Retry, in the status as the driver shifts it */

static struct fake *fake_new(struct kunit *test)
{
	struct fake *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct pci_dev *pdev = kunit_kzalloc(test, sizeof(*pdev), GFP_KERNEL);
	struct p2pnvme_queue *q;

	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_ASSERT_NOT_NULL(test, pdev);
	pdev->dev.init_name = "p2pnvme-kunit";
	f->c.pdev = pdev;
	f->c.state = P2PNVME_LIVE;
	init_waitqueue_head(&f->c.wq);
	q = &f->q;
	p2pnvme_queue_setup(&f->c, q, 1, DEPTH);
	q->sq = kunit_kcalloc(test, DEPTH, sizeof(*q->sq), GFP_KERNEL);
	q->cq = kunit_kcalloc(test, DEPTH, sizeof(*q->cq), GFP_KERNEL);
	q->cmds = kunit_kcalloc(test, DEPTH - 1, sizeof(*q->cmds), GFP_KERNEL);
	q->slot_map = kunit_kcalloc(test, BITS_TO_LONGS(DEPTH - 1), sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, q->sq && q->cq && q->cmds && q->slot_map);
	/* ordinary memory behind the MMIO accessors: the test reads it */
	q->sq_db = (u32 __iomem __force *)&f->db[0];
	q->cq_db = (u32 __iomem __force *)&f->db[1];
	p2pnvme_queue_start(q);
	f->phase = 1;
	p2pnvme_batch_init(&f->b, false);
	f->r.io = &f->io;
	f->r.q = q;
	return f;
}

/* Submit a Flush (no data) for the test's request; its identifier. */
static u16 submit(struct kunit *test, struct fake *f)
{
	struct nvme_command cmd = { .common.opcode = nvme_cmd_flush,
				    .common.nsid = cpu_to_le32(1) };

	KUNIT_ASSERT_EQ(test, p2pnvme_submit(&f->c, &f->b, &f->r, &cmd, NULL, 0, true), 0);
	return cmd.common.command_id;
}

/* The fake controller posts a completion entry for @cid with @sc. */
static void post(struct fake *f, u16 cid, u16 sc, u32 result)
{
	struct nvme_completion *cqe = &f->q.cq[f->head];

	cqe->command_id = cid;
	cqe->result.u32 = cpu_to_le32(result);
	cqe->sq_head = cpu_to_le16(READ_ONCE(f->db[0]));
	cqe->sq_id = cpu_to_le16(f->q.qid);
	/* the phase bit last, as the controller's write becomes visible */
	wmb();
	WRITE_ONCE(cqe->status, cpu_to_le16(sc << 1 | f->phase));
	if (++f->head == DEPTH) {
		f->head = 0;
		f->phase ^= 1;
	}
}

static void submit_entry(struct kunit *test)
{
	struct fake *f = fake_new(test);
	u16 cid = submit(test, f);

	KUNIT_EXPECT_EQ(test, f->q.sq[0].common.opcode, nvme_cmd_flush);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(f->q.sq[0].common.nsid), 1);
	KUNIT_EXPECT_EQ(test, f->q.sq[0].common.command_id, cid);
	/* slot 0, first generation */
	KUNIT_EXPECT_EQ(test, cid, 0 | 1 << P2PNVME_CID_SLOT_BITS);
	KUNIT_EXPECT_EQ(test, f->db[0], 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->b.pending), 2);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_inflight(&f->q), 1);
	/* nothing in the CQ: nothing reaped, the CQ doorbell untouched */
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 0);
	KUNIT_EXPECT_EQ(test, f->db[1], 0);
}

static void completion_ends(struct kunit *test)
{
	struct fake *f = fake_new(test);
	u16 cid = submit(test, f);

	post(f, cid, 0, 0x1234);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 1);
	KUNIT_EXPECT_EQ(test, f->db[1], 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->b.pending), 1);
	KUNIT_EXPECT_EQ(test, f->r.error, 0);
	KUNIT_EXPECT_EQ(test, f->r.result, 0x1234);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_inflight(&f->q), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->q.room), DEPTH - 1);
	/* reaped once: the same entry again is not a new completion */
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 0);
}

static void error_status(struct kunit *test)
{
	struct fake *f = fake_new(test);
	u16 cid = submit(test, f);

	/*
	 * Invalid Field in Command, with the DNR bit: the whole status field
	 * reaches the request (nvme-pci's passthrough returns all of it)
	 */
	post(f, cid, NVME_SC_INVALID_FIELD | DNR, 0);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 1);
	KUNIT_EXPECT_EQ(test, f->r.error, -EIO);
	KUNIT_EXPECT_EQ(test, f->r.status, NVME_SC_INVALID_FIELD | DNR);
}

static void phase_wraps(struct kunit *test)
{
	struct fake *f = fake_new(test);
	unsigned int i;

	/* three times round the rings, two commands in flight at a time */
	for (i = 0; i < 3 * DEPTH; i += 2) {
		u16 a = submit(test, f), b = submit(test, f);

		KUNIT_EXPECT_EQ(test, f->db[0], (i + 2) % DEPTH);
		post(f, b, 0, 0);
		post(f, a, 0, 0);
		KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 2);
		KUNIT_EXPECT_EQ(test, f->db[1], (i + 2) % DEPTH);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&f->b.pending), 1);
	KUNIT_EXPECT_EQ(test, f->r.error, 0);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_inflight(&f->q), 0);
}

/*
 * What a broken controller may post: an identifier of a free slot, of the
 * slot's previous use, or beyond the slots. Each moves the head (the entry
 * is consumed) and ends nothing; the command still in flight ends with its
 * own entry.
 */
static void bogus_completions(struct kunit *test)
{
	struct fake *f = fake_new(test);
	u16 first = submit(test, f), cid;

	post(f, first, 0, 0);
	KUNIT_ASSERT_EQ(test, p2pnvme_queue_reap(&f->q), 1);
	cid = submit(test, f);	/* slot 1 */
	post(f, first, 0, 0);			/* slot 0 is free again */
	post(f, cid - (1 << P2PNVME_CID_SLOT_BITS), 0, 0);	/* slot 1's last use */
	post(f, DEPTH - 1, 0, 0);			/* no such slot */
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 0);
	KUNIT_EXPECT_EQ(test, f->db[1], 0);	/* 1 + 3, wrapped */
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_inflight(&f->q), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->b.pending), 2);
	post(f, cid, 0, 0);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->b.pending), 1);
}

static void room_and_stop(struct kunit *test)
{
	struct fake *f = fake_new(test);
	struct nvme_command cmd = { .common.opcode = nvme_cmd_flush };

	KUNIT_EXPECT_TRUE(test, p2pnvme_room_take(&f->q, DEPTH - 1));
	KUNIT_EXPECT_FALSE(test, p2pnvme_room_take(&f->q, 1));
	p2pnvme_room_give(&f->q, DEPTH - 1);
	/* a stopped queue (a reset under way) takes nothing and gives the room back */
	WRITE_ONCE(f->q.stopped, true);
	KUNIT_EXPECT_EQ(test, p2pnvme_submit(&f->c, &f->b, &f->r, &cmd, NULL, 0, true),
			-ECANCELED);
	KUNIT_EXPECT_EQ(test, f->db[0], 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->q.room), DEPTH - 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->b.pending), 1);
}

/*
 * Shadow doorbells (Doorbell Buffer Config): every new tail and head lands
 * in the queue's words of the shadow buffer; the MMIO write happens only
 * when the controller's event index says it stopped looking, i.e. lies in
 * [old value, new value). Queue 1, stride 1: words 2 (SQ) and 3 (CQ).
 */
static void shadow_doorbells(struct kunit *test)
{
	struct fake *f = fake_new(test);
	__le32 *dbs = kunit_kcalloc(test, 4, sizeof(*dbs), GFP_KERNEL);
	__le32 *eis = kunit_kcalloc(test, 4, sizeof(*eis), GFP_KERNEL);
	u16 a, b, c;

	KUNIT_ASSERT_TRUE(test, dbs && eis);
	p2pnvme_queue_shadow(&f->q, dbs, eis, 1);
	/* the controller last looked at tail 0: the first tail needs the MMIO write */
	a = submit(test, f);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(dbs[2]), 1);
	KUNIT_EXPECT_EQ(test, f->db[0], 1);
	/* it has not caught up with tail 1 yet: memory only */
	b = submit(test, f);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(dbs[2]), 2);
	KUNIT_EXPECT_EQ(test, f->db[0], 1);
	/* the CQ head: the event index (0) lies in [0, 2): an MMIO write */
	post(f, a, 0, 0);
	post(f, b, 0, 0);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 2);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(dbs[3]), 2);
	KUNIT_EXPECT_EQ(test, f->db[1], 2);
	/* it caught up with tail 2 and waits there: an MMIO write again */
	eis[2] = cpu_to_le32(2);
	c = submit(test, f);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(dbs[2]), 3);
	KUNIT_EXPECT_EQ(test, f->db[0], 3);
	/* the CQ's event index (0) is not in [2, 3): memory only */
	post(f, c, 0, 0);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 1);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(dbs[3]), 3);
	KUNIT_EXPECT_EQ(test, f->db[1], 2);
	/* without the buffers (a reset), MMIO only: the tail wraps to 0 */
	p2pnvme_queue_shadow(&f->q, NULL, NULL, 0);
	dbs[2] = cpu_to_le32(0xdead);
	submit(test, f);
	KUNIT_EXPECT_EQ(test, f->db[0], 0);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(dbs[2]), 0xdead);
	/* the admin queue never takes them, as nvme-pci's */
	f->q.qid = 0;
	p2pnvme_queue_shadow(&f->q, dbs, eis, 1);
	KUNIT_EXPECT_NULL(test, f->q.sq_shadow);
	KUNIT_EXPECT_NULL(test, f->q.cq_shadow);
}

/* an asynchronous batch of the test's and how often it ended */
struct ended_batch {
	struct p2pnvme_batch b;
	int ended;
};

static void count_end(struct p2pnvme_batch *b)
{
	container_of(b, struct ended_batch, b)->ended++;
}

static u16 submit_on(struct kunit *test, struct fake *f, struct p2pnvme_batch *b)
{
	struct nvme_command cmd = { .common.opcode = nvme_cmd_flush,
				    .common.nsid = cpu_to_le32(1) };

	KUNIT_ASSERT_EQ(test, p2pnvme_submit(&f->c, b, &f->r, &cmd, NULL, 0, true), 0);
	return cmd.common.command_id;
}

/*
 * One completion pass stamps every asynchronous batch it ends with one
 * clock read (the io_uring latency's end); a later pass reads it again; a
 * batch whose commands are over before its launch is stamped there.
 */
static void end_stamped_per_pass(struct kunit *test)
{
	struct fake *f = fake_new(test);
	struct ended_batch e[3] = {};
	u16 c0, c1, c2;
	u64 before, after = 0;
	int i, cpu, reaped;

	/* as io_uring's requests are set up: no completion, nothing waits */
	for (i = 0; i < 3; i++)
		p2pnvme_batch_init_async(&e[i].b, count_end);
	c0 = submit_on(test, f, &e[0].b);
	c1 = submit_on(test, f, &e[1].b);
	p2pnvme_batch_launch(&e[0].b);
	p2pnvme_batch_launch(&e[1].b);
	KUNIT_EXPECT_EQ(test, e[0].ended + e[1].ended, 0);
	/* one CPU's clock: another's may disagree by a little */
	cpu = get_cpu();
	before = p2pnvme_now();
	post(f, c0, 0, 0);
	post(f, c1, 0, 0);
	reaped = p2pnvme_queue_reap(&f->q);
	put_cpu();
	KUNIT_EXPECT_EQ(test, reaped, 2);
	KUNIT_EXPECT_EQ(test, e[0].ended, 1);
	KUNIT_EXPECT_EQ(test, e[1].ended, 1);
	KUNIT_EXPECT_GE(test, e[0].b.end_ns, before);
	KUNIT_EXPECT_EQ(test, e[0].b.end_ns, e[1].b.end_ns);
	/* over before its launch: the launch ends it, with a clock of its own */
	c2 = submit_on(test, f, &e[2].b);
	post(f, c2, 0, 0);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 1);
	KUNIT_EXPECT_EQ(test, e[2].ended, 0);
	if (get_cpu() == cpu)	/* the same CPU's clock as the first pass's */
		after = e[0].b.end_ns;
	p2pnvme_batch_launch(&e[2].b);
	put_cpu();
	KUNIT_EXPECT_EQ(test, e[2].ended, 1);
	KUNIT_EXPECT_NE(test, e[2].b.end_ns, 0);
	KUNIT_EXPECT_GE(test, e[2].b.end_ns, after);
}

/* ---- a whole controller, answered by a thread ------------------------- */

#define FDEPTH		8
#define FCTL_PT_DMA	0x7f000000ULL	/* the passthrough buffer's bus address */
#define PAT_A		0xa5	/* the data of the Get Log Page given up on */
#define PAT_B		0x5b	/* the data of an Identify */
#define LOG_UNKNOWN	0xca	/* a log page the controller does not have */
#define FEAT_RESULT	0x00070007	/* Get Features' completion dword 0 */
#define NUMD(dw)	((u32)((dw) - 1) << 16)	/* Get Log Page NUMDL */

/**
 * struct fqueue - the controller's side of a queue pair
 * @q: the driver's queue
 * @db: its SQ tail and CQ head doorbells, as the controller sees them
 * @head: the next SQ entry the controller fetches
 * @tail: the next CQ entry it writes
 * @phase: the phase bit it writes there
 */
struct fqueue {
	struct p2pnvme_queue *q;
	u32 db[2];
	u16 head;
	u16 tail;
	u8 phase;
};

/**
 * struct fctl - a controller for the layers above the queues
 * @c: the controller: LIVE, polled, BAR registers that say ready, an admin
 *     queue and one I/O queue
 * @ioq: its I/O queue
 * @fq: the controller's side of the admin queue (0) and the I/O queue (1)
 * @thread: the controller (fctl_thread()): fetches and answers
 * @runner: a thread of the test's that sends an admin command, or NULL
 * @escalated: resets the queue layer asked for (none is done)
 * @hold_log: a Get Log Page is not answered until 200 ms after the runner
 *	      got its answer (fctl_late())
 * @log_cid: the Get Log Page held
 * @log_held: one is held
 * @id_cid: an Identify that came while it was held, held behind it
 * @id_held: one is
 * @a_returned: the runner has its answer, since @a_returned_at (jiffies)
 * @a_returned_at: see @a_returned
 * @late: the held Get Log Page was answered, its data written then
 * @bad_prp: admin commands whose PRP1 was not the passthrough buffer
 */
struct fctl {
	struct p2pnvme c;
	struct p2pnvme_queue ioq;
	struct fqueue fq[2];
	struct task_struct *thread;
	struct task_struct *runner;
	atomic_t escalated;
	bool hold_log;
	u16 log_cid;
	bool log_held;
	u16 id_cid;
	bool id_held;
	bool a_returned;
	unsigned long a_returned_at;
	bool late;
	int bad_prp;
};

static void fctl_escalate(struct p2pnvme *c)
{
	atomic_inc(&container_of(c, struct fctl, c)->escalated);
}

/* The controller posts a completion entry on @fq. */
static void fctl_post(struct fqueue *fq, u16 cid, u16 sc, u32 result)
{
	struct nvme_completion *cqe = &fq->q->cq[fq->tail];

	cqe->command_id = cid;
	cqe->result.u32 = cpu_to_le32(result);
	cqe->sq_head = cpu_to_le16(fq->head);
	cqe->sq_id = cpu_to_le16(fq->q->qid);
	/* its data and the entry before the phase bit */
	wmb();
	WRITE_ONCE(cqe->status, cpu_to_le16(sc << 1 | fq->phase));
	if (++fq->tail == fq->q->depth) {
		fq->tail = 0;
		fq->phase ^= 1;
	}
}

/* The controller's DMA into the passthrough buffer (PRP1 and PRP2). */
static void fctl_dma(struct fctl *f, u8 pat, size_t len)
{
	memset(f->c.pt_buf, pat, len);
}

static void fctl_admin(struct fctl *f, struct fqueue *fq, const struct nvme_command *cmd)
{
	u32 cdw10 = le32_to_cpu(cmd->common.cdw10);
	u16 cid = cmd->common.command_id;

	switch (cmd->common.opcode) {
	case nvme_admin_identify:
		f->bad_prp += le64_to_cpu(cmd->common.dptr.prp1) != FCTL_PT_DMA;
		if (f->log_held && !f->late) {
			f->id_cid = cid;
			f->id_held = true;
			return;
		}
		fctl_dma(f, PAT_B, SZ_4K);
		fctl_post(fq, cid, 0, 0);
		return;
	case nvme_admin_get_log_page:
		f->bad_prp += le64_to_cpu(cmd->common.dptr.prp1) != FCTL_PT_DMA;
		if ((cdw10 & 0xff) == LOG_UNKNOWN) {
			fctl_post(fq, cid, NVME_SC_INVALID_FIELD | DNR, 0);
			return;
		}
		if (READ_ONCE(f->hold_log)) {
			f->log_cid = cid;
			f->log_held = true;
			return;
		}
		fctl_dma(f, PAT_A, min_t(size_t, ((cdw10 >> 16) + 1) * 4, P2PNVME_PT_MAX));
		fctl_post(fq, cid, 0, 0);
		return;
	case nvme_admin_get_features:
		fctl_post(fq, cid, 0, FEAT_RESULT);
		return;
	}
	fctl_post(fq, cid, 0, 0);
}

/*
 * The Get Log Page held, 200 ms after the runner gave up on it: answered
 * after all, its data written late. An Identify sent meanwhile gets its
 * data first, the late data lands over it, then both complete.
 */
static void fctl_late(struct fctl *f)
{
	struct fqueue *fq = &f->fq[0];

	/* acquire: @a_returned_at as the runner wrote it before */
	if (!f->log_held || f->late || !smp_load_acquire(&f->a_returned) ||
	    time_before(jiffies, READ_ONCE(f->a_returned_at) + msecs_to_jiffies(200)))
		return;
	if (f->id_held)
		fctl_dma(f, PAT_B, SZ_4K);
	fctl_dma(f, PAT_A, P2PNVME_PT_MAX);
	fctl_post(fq, f->log_cid, 0, 0);
	if (f->id_held)
		fctl_post(fq, f->id_cid, 0, 0);
	f->id_held = false;
	WRITE_ONCE(f->late, true);
}

/* Fetch what the SQ doorbell of @fq published, answer each. */
static void fctl_fetch(struct fctl *f, struct fqueue *fq, bool admin)
{
	u16 tail = READ_ONCE(fq->db[0]);

	/* the entries after the doorbell that published them */
	smp_rmb();
	while (fq->head != tail) {
		struct nvme_command cmd = fq->q->sq[fq->head];

		if (++fq->head == fq->q->depth)
			fq->head = 0;
		if (admin)
			fctl_admin(f, fq, &cmd);
		else
			fctl_post(fq, cmd.common.command_id, 0, 0);
	}
}

static int fctl_thread(void *data)
{
	struct fctl *f = data;

	while (!kthread_should_stop()) {
		fctl_fetch(f, &f->fq[0], true);
		fctl_fetch(f, &f->fq[1], false);
		fctl_late(f);
		usleep_range(20, 50);
	}
	return 0;
}

static void fq_init(struct kunit *test, struct fctl *f, struct p2pnvme_queue *q, u16 qid)
{
	struct fqueue *fq = &f->fq[!!qid];

	p2pnvme_queue_setup(&f->c, q, qid, FDEPTH);
	q->sq = kunit_kcalloc(test, FDEPTH, sizeof(*q->sq), GFP_KERNEL);
	q->cq = kunit_kcalloc(test, FDEPTH, sizeof(*q->cq), GFP_KERNEL);
	q->cmds = kunit_kcalloc(test, FDEPTH - 1, sizeof(*q->cmds), GFP_KERNEL);
	q->slot_map = kunit_kcalloc(test, BITS_TO_LONGS(FDEPTH - 1), sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, q->sq && q->cq && q->cmds && q->slot_map);
	q->sq_db = (u32 __iomem __force *)&fq->db[0];
	q->cq_db = (u32 __iomem __force *)&fq->db[1];
	p2pnvme_queue_start(q);
	fq->q = q;
	fq->phase = 1;
}

/* A LIVE controller and its thread; fctl_exit() takes them down. */
static struct fctl *fctl_new(struct kunit *test)
{
	struct fctl *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct pci_dev *pdev = kunit_kzalloc(test, sizeof(*pdev), GFP_KERNEL);
	__le32 *regs = kunit_kzalloc(test, SZ_4K, GFP_KERNEL);
	struct task_struct *t;
	struct p2pnvme *c;

	KUNIT_ASSERT_TRUE(test, f && pdev && regs);
	c = &f->c;
	KUNIT_ASSERT_EQ(test, p2pnvme_ctrl_init(c), 0);
	test->priv = f;
	c->pcpu = alloc_percpu(struct p2pnvme_pcpu);
	KUNIT_ASSERT_FALSE(test, !c->pcpu);	/* sparse: no __percpu compared with NULL */
	pdev->dev.init_name = "p2pnvme-kunit";
	c->pdev = pdev;
	c->escalate = fctl_escalate;
	regs[NVME_REG_CSTS / 4] = cpu_to_le32(NVME_CSTS_RDY);
	c->bar = (void __iomem __force *)regs;
	c->nsid = 1;
	c->lba_shift = 9;
	c->nlb = 1 << 20;
	c->max_xfer = SZ_128K;
	c->max_seg = UINT_MAX;
	c->polled = true;
	c->acl = 4;
	c->pt_buf = kunit_kzalloc(test, P2PNVME_PT_MAX, GFP_KERNEL);
	c->pt_dma = FCTL_PT_DMA;
	mutex_init(&c->pt_lock);
	c->cpu_queue = kunit_kcalloc(test, nr_cpu_ids, sizeof(*c->cpu_queue), GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, c->pt_buf && c->cpu_queue);
	fq_init(test, f, &c->adminq, 0);
	fq_init(test, f, &f->ioq, 1);
	c->ioq = &f->ioq;
	c->nr_ioq = 1;
	WRITE_ONCE(c->state, P2PNVME_LIVE);
	t = kthread_run(fctl_thread, f, "p2pnvme-fctl");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	f->thread = t;
	return f;
}

/* The suite's exit: the test's runner first (it ends by its deadline), then the controller. */
static void fctl_exit(struct kunit *test)
{
	struct fctl *f = test->priv;

	if (!f)
		return;
	if (f->runner)
		kthread_stop(f->runner);
	if (f->thread)
		kthread_stop(f->thread);
	free_percpu(f->c.pcpu);
	p2pnvme_ctrl_exit(&f->c);
}

/*
 * What P2PNVME_IOC_SUBMIT reports in failed: the entry whose preparation
 * failed, else the number of entries, on every path: a batch that ran to
 * its end, one refused before anything was sent, a controller gone. Each
 * call starts from what a caller's stack or an earlier try may leave there
 * (entry 0).
 */
static void batch_failed_index(struct kunit *test)
{
	struct fctl *f = fctl_new(test);
	struct p2pnvme_file *file = kunit_kzalloc(test, sizeof(*file), GFP_KERNEL);
	struct p2pnvme_io ios[2];
	unsigned int failed, i;

	KUNIT_ASSERT_NOT_NULL(test, file);
	file->c = &f->c;
	for (i = 0; i < ARRAY_SIZE(ios); i++)
		ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_FLUSH };

	failed = 0;
	KUNIT_EXPECT_EQ(test, p2pnvme_run_batch(&f->c, file, ios, 2, &failed), 0);
	KUNIT_EXPECT_EQ_MSG(test, failed, 2U, "a batch that ran: no entry failed");
	KUNIT_EXPECT_EQ(test, ios[0].result, 0);
	KUNIT_EXPECT_EQ(test, ios[1].result, 0);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->ioq.submitted), 2U);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_inflight(&f->ioq), 0U);

	/* entry 1 asks for SGLs the controller does not take: nothing is sent */
	ios[1].flags = P2PNVME_IO_F_SGL;
	failed = 0;
	KUNIT_EXPECT_EQ(test, p2pnvme_run_batch(&f->c, file, ios, 2, &failed), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, failed, 1U);
	KUNIT_EXPECT_EQ(test, ios[1].result, -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->ioq.submitted), 2U);
	ios[1].flags = 0;

	/* the controller went away: nothing sent, and no entry to blame */
	WRITE_ONCE(f->c.state, P2PNVME_DEAD);
	failed = 0;
	KUNIT_EXPECT_EQ(test, p2pnvme_run_batch(&f->c, file, ios, 2, &failed), -ENODEV);
	KUNIT_EXPECT_EQ_MSG(test, failed, 2U, "nothing was prepared or sent");
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->ioq.submitted), 2U);
}

#ifdef HAVE_KUNIT_VM_MMAP
/* @len bytes of user memory, each @fill */
static unsigned long user_buf(struct kunit *test, size_t len, u8 fill)
{
	unsigned long u = kunit_vm_mmap(test, NULL, 0, len, PROT_READ | PROT_WRITE,
					MAP_ANONYMOUS | MAP_PRIVATE, 0);
	u8 *k = kunit_kmalloc(test, len, GFP_KERNEL);

	KUNIT_ASSERT_NE_MSG(test, u, 0UL, "no user memory");
	KUNIT_ASSERT_NOT_NULL(test, k);
	memset(k, fill, len);
	KUNIT_ASSERT_EQ(test, copy_to_user((void __user *)u, k, len), 0UL);
	return u;
}

static bool all_bytes(const u8 *p, size_t len, u8 v)
{
	return !memchr_inv(p, v, len);
}

/*
 * The admin passthrough answers as nvme-pci's: the whole status of a
 * failed command (DNR too), the result dword, and only the bytes the
 * command moves copied out: the rest of a larger buffer is left as it was.
 */
static void admin_passthru_answers(struct kunit *test)
{
	struct fctl *f = fctl_new(test);
	unsigned long u = user_buf(test, P2PNVME_PT_MAX, 0xee);
	u8 *got = kunit_kzalloc(test, P2PNVME_PT_MAX, GFP_KERNEL);
	struct nvme_passthru_cmd64 pt;
	u32 result = 0;

	KUNIT_ASSERT_NOT_NULL(test, got);
	pt = (struct nvme_passthru_cmd64){ .opcode = nvme_admin_identify,
					   .cdw10 = NVME_ID_CNS_CTRL, .addr = u,
					   .data_len = P2PNVME_PT_MAX };
	KUNIT_EXPECT_EQ(test, p2pnvme_admin_passthru(&f->c, &pt, &result), 0L);
	KUNIT_ASSERT_EQ(test, copy_from_user(got, (void __user *)u, P2PNVME_PT_MAX), 0UL);
	KUNIT_EXPECT_TRUE_MSG(test, all_bytes(got, SZ_4K, PAT_B), "the Identify data (%#x)",
			      got[0]);
	KUNIT_EXPECT_TRUE_MSG(test, all_bytes(got + SZ_4K, SZ_4K, 0xee),
			      "the 4 KiB the Identify does not move, as the caller left them (%#x)",
			      got[SZ_4K]);

	pt = (struct nvme_passthru_cmd64){ .opcode = nvme_admin_get_features,
					   .cdw10 = NVME_FEAT_NUM_QUEUES };
	KUNIT_EXPECT_EQ(test, p2pnvme_admin_passthru(&f->c, &pt, &result), 0L);
	KUNIT_EXPECT_EQ(test, result, (u32)FEAT_RESULT);

	pt = (struct nvme_passthru_cmd64){ .opcode = nvme_admin_get_log_page,
					   .cdw10 = NUMD(128) | LOG_UNKNOWN, .addr = u,
					   .data_len = 512 };
	KUNIT_EXPECT_EQ_MSG(test, p2pnvme_admin_passthru(&f->c, &pt, &result),
			    (long)(NVME_SC_INVALID_FIELD | DNR), "the whole status, DNR too");
	KUNIT_EXPECT_EQ(test, f->bad_prp, 0);
}

/**
 * struct admin_run - an admin passthrough sent from a thread of its own
 * @f: the controller
 * @pt: the command (its buffer is only range-checked: it is given up on)
 * @ret: what p2pnvme_admin_passthru() returned
 * @took: how long it took, jiffies
 * @done: @ret and @took are there
 */
struct admin_run {
	struct fctl *f;
	struct nvme_passthru_cmd64 pt;
	long ret;
	unsigned long took;
	struct completion done;
};

static int admin_runner(void *data)
{
	struct admin_run *a = data;
	unsigned long t0 = jiffies;
	u32 result;

	a->ret = p2pnvme_admin_passthru(&a->f->c, &a->pt, &result);
	a->took = jiffies - t0;
	WRITE_ONCE(a->f->a_returned_at, jiffies);
	/* release: @a_returned_at before, for fctl_late() */
	smp_store_release(&a->f->a_returned, true);
	complete(&a->done);
	/* until fctl_exit() stops it */
	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/*
 * An admin command given up on at its deadline still belongs to the
 * controller, which may DMA into the passthrough buffer after all. A
 * (root's 8 KiB Get Log Page, timeout_ms 200) is given up on; B (anyone's
 * Identify into 8 KiB) is sent right after; 200 ms later the controller
 * answers A, writing its data over what B got. B must not see A's data (B
 * waits until A is over, or a reset took it back), and A is given up on
 * after its own timeout_ms, as nvme-pci does, not after io_timeout_ms.
 */
static void admin_given_up_buffer(struct kunit *test)
{
	struct fctl *f = fctl_new(test);
	unsigned long u = user_buf(test, P2PNVME_PT_MAX, 0xee);
	u8 *got = kunit_kzalloc(test, P2PNVME_PT_MAX, GFP_KERNEL);
	struct admin_run *a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	struct nvme_passthru_cmd64 pt;
	struct task_struct *t;
	u32 result = 0;

	KUNIT_ASSERT_TRUE(test, got && a);
	WRITE_ONCE(f->hold_log, true);
	a->f = f;
	a->pt = (struct nvme_passthru_cmd64){ .opcode = nvme_admin_get_log_page,
					      .cdw10 = NUMD(2048) | NVME_LOG_ERROR, .addr = u,
					      .data_len = P2PNVME_PT_MAX, .timeout_ms = 200 };
	init_completion(&a->done);
	t = kthread_run(admin_runner, a, "p2pnvme-kunit-a");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	f->runner = t;
	KUNIT_ASSERT_NE_MSG(test, wait_for_completion_timeout(&a->done, 60 * HZ), 0UL,
			    "A was never given up on");
	KUNIT_EXPECT_EQ(test, a->ret, (long)-ETIMEDOUT);
	KUNIT_EXPECT_LT_MSG(test, jiffies_to_msecs(a->took), 2000U,
			    "A given up on after its timeout_ms (200), not io_timeout_ms");
	KUNIT_EXPECT_GE(test, atomic_read(&f->escalated), 1);

	pt = (struct nvme_passthru_cmd64){ .opcode = nvme_admin_identify,
					   .cdw10 = NVME_ID_CNS_CTRL, .addr = u,
					   .data_len = P2PNVME_PT_MAX };
	KUNIT_EXPECT_EQ(test, p2pnvme_admin_passthru(&f->c, &pt, &result), 0L);
	KUNIT_EXPECT_TRUE_MSG(test, READ_ONCE(f->late), "A answered late before B ended");
	KUNIT_ASSERT_EQ(test, copy_from_user(got, (void __user *)u, SZ_4K), 0UL);
	KUNIT_EXPECT_TRUE_MSG(test, all_bytes(got, SZ_4K, PAT_B),
			      "B got %#x: its Identify data is %#x, A's late log page %#x",
			      got[0], PAT_B, PAT_A);
	KUNIT_EXPECT_EQ(test, f->bad_prp, 0);
}
#endif

static struct kunit_case p2pnvme_queue_cases[] = {
	KUNIT_CASE(submit_entry),
	KUNIT_CASE(completion_ends),
	KUNIT_CASE(error_status),
	KUNIT_CASE(phase_wraps),
	KUNIT_CASE(bogus_completions),
	KUNIT_CASE(room_and_stop),
	KUNIT_CASE(shadow_doorbells),
	KUNIT_CASE(end_stamped_per_pass),
	KUNIT_CASE(batch_failed_index),
#ifdef HAVE_KUNIT_VM_MMAP
	KUNIT_CASE(admin_passthru_answers),
	KUNIT_CASE(admin_given_up_buffer),
#endif
	{}
};

static struct kunit_suite p2pnvme_queue_suite = {
	.name = "p2pnvme_queue",
	.exit = fctl_exit,
	.test_cases = p2pnvme_queue_cases,
};

kunit_test_suite(p2pnvme_queue_suite);

P2P_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING");
MODULE_DESCRIPTION("KUnit tests of the p2pnvme client's queue layer against a fake controller");
MODULE_LICENSE("GPL");
