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
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <p2p_compat.h>

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

	/* Invalid Field in Command, with the DNR bit: SCT/SC reach the request */
	post(f, cid, NVME_SC_INVALID_FIELD | DNR, 0);
	KUNIT_EXPECT_EQ(test, p2pnvme_queue_reap(&f->q), 1);
	KUNIT_EXPECT_EQ(test, f->r.error, -EIO);
	KUNIT_EXPECT_EQ(test, f->r.status, NVME_SC_INVALID_FIELD);
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

	for (i = 0; i < 3; i++) {
		p2pnvme_batch_init(&e[i].b, false);
		e[i].b.end = count_end;
	}
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

static struct kunit_case p2pnvme_queue_cases[] = {
	KUNIT_CASE(submit_entry),
	KUNIT_CASE(completion_ends),
	KUNIT_CASE(error_status),
	KUNIT_CASE(phase_wraps),
	KUNIT_CASE(bogus_completions),
	KUNIT_CASE(room_and_stop),
	KUNIT_CASE(shadow_doorbells),
	KUNIT_CASE(end_stamped_per_pass),
	{}
};

static struct kunit_suite p2pnvme_queue_suite = {
	.name = "p2pnvme_queue",
	.test_cases = p2pnvme_queue_cases,
};

kunit_test_suite(p2pnvme_queue_suite);

P2P_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING");
MODULE_DESCRIPTION("KUnit tests of the p2pnvme client's queue layer against a fake controller");
MODULE_LICENSE("GPL");
