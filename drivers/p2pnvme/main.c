// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: drive an NVMe controller so that its data lands in, or comes
 * from, p2pmem without a bounce through host RAM.
 *
 * The administrator binds a controller with driver_override in place of
 * nvme-pci. The driver brings the controller up itself (admin queue,
 * Identify, I/O queue pairs), and serves transfers between a namespace LBA
 * range and a user buffer: host memory, or a mapping of p2pmem from any
 * provider (/dev/p2pbarN, the kernel's p2pmem/allocate). For p2pmem it
 * checks the topology first (pci_p2pdma_distance()), maps the pages with
 * dma_map_sgtable() so the controller gets bus addresses, and falls back to
 * a host bounce buffer when P2P is impossible, or refuses with -EREMOTEIO,
 * by policy. Every I/O is counted by the path it took.
 *
 * Completions are polled: one command per I/O queue is in flight at a time
 * (queue->lock), queues are picked by CPU. A command that does not complete
 * within io_timeout_ms is aborted; if the controller does not give it back,
 * the controller is reset and the I/O fails with -ETIMEDOUT.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/nvme.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <kunit/visibility.h>
#include <linux/p2p_ioctl.h>
#include <uapi/linux/p2pnvme.h>
#include <p2p_compat.h>

#include "p2pnvme.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

#define P2PNVME_MAX_DEVS	32
#define P2PNVME_MAX_IOQ		32
#define P2PNVME_AQ_DEPTH	32
#define P2PNVME_IOQ_DEPTH	64
#define P2PNVME_MAX_XFER	SZ_512K	/* one PRP list page describes it */
#define P2PNVME_CTRL_PAGE	4096	/* CC.MPS = 0 */

static unsigned int io_timeout_ms = 5000;
module_param(io_timeout_ms, uint, 0644);
MODULE_PARM_DESC(io_timeout_ms, "Per-command timeout before abort and reset (default 5000)");

static bool bounce = true;
module_param(bounce, bool, 0644);
MODULE_PARM_DESC(bounce, "Bounce p2pmem through host memory when P2P is impossible (default true; false: -EREMOTEIO)");

static unsigned int max_io_queues = 4;
module_param(max_io_queues, uint, 0444);
MODULE_PARM_DESC(max_io_queues, "I/O queue pairs to ask for, at most one per CPU (default 4)");

enum p2pnvme_stat {
	ST_READS_P2P, ST_WRITES_P2P, ST_READS_BOUNCE, ST_WRITES_BOUNCE,
	ST_READS_HOST, ST_WRITES_HOST, ST_BYTES_P2P, ST_BYTES_BOUNCE, ST_BYTES_HOST,
	ST_REFUSED, ST_ERRORS, ST_TIMEOUTS, ST_ABORTS, ST_RESETS, ST_NR
};

/**
 * struct p2pnvme_queue - one submission/completion queue pair
 * @qid: 0 for the admin queue
 * @depth: entries of each ring
 * @sq: submission ring (host memory)
 * @sq_dma: its bus address
 * @cq: completion ring (host memory)
 * @cq_dma: its bus address
 * @sq_db: SQ tail doorbell in BAR0
 * @cq_db: CQ head doorbell in BAR0
 * @prp: one page for a PRP or SGL list
 * @prp_dma: its bus address
 * @lock: serialises the one command in flight and every field below
 * @sq_tail: next free SQ slot
 * @cq_head: next CQ entry to look at
 * @cq_phase: phase bit that marks a new CQ entry
 * @cid: command identifier of the next command
 */
struct p2pnvme_queue {
	u16 qid;
	u16 depth;
	struct nvme_command *sq;
	dma_addr_t sq_dma;
	struct nvme_completion *cq;
	dma_addr_t cq_dma;
	u32 __iomem *sq_db;
	u32 __iomem *cq_db;
	__le64 *prp;
	dma_addr_t prp_dma;

	struct mutex lock;	/* see above */
	u16 sq_tail;
	u16 cq_head;
	u8 cq_phase;
	u16 cid;
};

/**
 * struct p2pnvme - one controller
 * @pdev: the PCI function
 * @bar: BAR0 mapping
 * @cap: CAP register
 * @db_stride: doorbell stride in 32-bit words
 * @ready_timeout: CAP.TO in jiffies
 * @minor: of /dev/p2pnvmeN
 * @dev: the char device's struct device
 * @nsid: namespace served
 * @lba_shift: log2 of its LBA size
 * @nlb: its size in LBAs
 * @max_xfer: bytes per command
 * @sgl: the controller takes SGLs for I/O commands
 * @serial: Identify serial number
 * @model: Identify model number
 * @nr_ioq: I/O queue pairs created
 * @adminq: the admin queue
 * @ioq: the I/O queues
 * @bounce: bounce buffer per I/O queue (host memory, @max_xfer bytes)
 * @bounce_dma: their bus addresses
 * @reset_lock: I/O holds it for read; reset and remove for write
 * @dead: controller gone or failed for good: everything returns -ENODEV;
 *	   set under reset_lock held for write, after which nothing touches
 *	   the device, its BAR or its queue memory (all released at unbind)
 * @stats: counters (enum p2pnvme_stat), atomic, read by sysfs
 * @kref: held by the driver binding and by each open file, so that an
 *	  ioctl on a file that outlived the device finds @dead, not freed memory
 * @debugfs: /sys/kernel/debug/p2pnvme/<bdf>/
 */
struct p2pnvme {
	struct pci_dev *pdev;
	void __iomem *bar;
	u64 cap;
	u32 db_stride;
	unsigned long ready_timeout;
	int minor;
	struct device *dev;
	u32 nsid;
	u32 lba_shift;
	u64 nlb;
	u32 max_xfer;
	bool sgl;
	char serial[20];
	char model[40];
	unsigned int nr_ioq;
	struct p2pnvme_queue adminq;
	struct p2pnvme_queue *ioq;
	void *bounce[P2PNVME_MAX_IOQ];
	dma_addr_t bounce_dma[P2PNVME_MAX_IOQ];
	struct rw_semaphore reset_lock;
	bool dead;
	atomic64_t stats[ST_NR];
	struct kref kref;
	struct dentry *debugfs;
};

static dev_t p2pnvme_devt;
static struct cdev p2pnvme_cdev;
static struct class *p2pnvme_class;
static struct dentry *p2pnvme_debugfs;
/* minor -> controller; the xa_lock pairs open() with remove() */
static DEFINE_XARRAY_ALLOC(p2pnvme_minors);

static void p2pnvme_free(struct kref *kref)
{
	struct p2pnvme *c = container_of(kref, struct p2pnvme, kref);

	pci_dev_put(c->pdev);
	kfree(c);
}

static void stat_add(struct p2pnvme *c, enum p2pnvme_stat s, u64 v)
{
	atomic64_add(v, &c->stats[s]);
}

/* ---- registers ------------------------------------------------------- */

static bool ctrl_gone(struct p2pnvme *c)
{
	/* surprise removal: config and MMIO reads return all ones */
	return readl(c->bar + NVME_REG_CSTS) == ~0U;
}

static int wait_ready(struct p2pnvme *c, bool ready)
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

static int ctrl_disable(struct p2pnvme *c)
{
	u32 cc = readl(c->bar + NVME_REG_CC);

	writel(cc & ~NVME_CC_ENABLE, c->bar + NVME_REG_CC);
	return wait_ready(c, false);
}

/* ---- queues ---------------------------------------------------------- */

/*
 * Lock order: an I/O queue's lock, then the admin queue's (a timed-out
 * command is aborted through the admin queue with its queue still held).
 * The admin queue gets its own lockdep class for that nesting.
 */
static struct lock_class_key p2pnvme_adminq_key;

static int queue_alloc(struct p2pnvme *c, struct p2pnvme_queue *q, u16 qid, u16 depth)
{
	struct device *dev = &c->pdev->dev;

	q->qid = qid;
	q->depth = depth;
	mutex_init(&q->lock);
	if (!qid)
		lockdep_set_class(&q->lock, &p2pnvme_adminq_key);
	q->sq = dmam_alloc_coherent(dev, depth * sizeof(*q->sq), &q->sq_dma, GFP_KERNEL);
	q->cq = dmam_alloc_coherent(dev, depth * sizeof(*q->cq), &q->cq_dma, GFP_KERNEL);
	q->prp = dmam_alloc_coherent(dev, PAGE_SIZE, &q->prp_dma, GFP_KERNEL);
	if (!q->sq || !q->cq || !q->prp)
		return -ENOMEM;
	q->sq_db = c->bar + NVME_REG_DBS + (2 * qid) * c->db_stride * 4;
	q->cq_db = c->bar + NVME_REG_DBS + (2 * qid + 1) * c->db_stride * 4;
	return 0;
}

static void queue_reset_state(struct p2pnvme_queue *q)
{
	q->sq_tail = 0;
	q->cq_head = 0;
	q->cq_phase = 1;
	memset(q->cq, 0, q->depth * sizeof(*q->cq));
}

/*
 * Submit @cmd on @q and poll for its completion. Caller holds q->lock.
 * Return: 0, -EIO with *@status set for an NVMe error, -ETIMEDOUT with the
 * command still owned by the controller, -ENODEV when the device is gone.
 */
static int queue_exec_locked(struct p2pnvme *c, struct p2pnvme_queue *q,
			     struct nvme_command *cmd, u32 *result, u16 *status,
			     unsigned long timeout)
{
	unsigned long deadline = jiffies + timeout;
	struct nvme_completion *cqe;
	u16 cid = q->cid++, st;
	u32 csts;

	lockdep_assert_held(&q->lock);
	cmd->common.command_id = cid;
	memcpy(&q->sq[q->sq_tail], cmd, sizeof(*cmd));
	if (++q->sq_tail == q->depth)
		q->sq_tail = 0;
	trace_p2pnvme_submit(c->pdev, q->qid, cid, cmd->common.opcode,
			     le64_to_cpu(cmd->common.dptr.prp1));
	/*
	 * writel() orders the SQ entry (coherent host memory) before the
	 * doorbell MMIO write, so the controller never fetches a stale slot.
	 */
	writel(q->sq_tail, q->sq_db);

	for (;;) {
		cqe = &q->cq[q->cq_head];
		/* the phase bit flips when the controller has written the entry */
		st = le16_to_cpu(READ_ONCE(cqe->status));
		if ((st & 1) == q->cq_phase)
			break;
		if (time_after(jiffies, deadline))
			return ctrl_gone(c) ? -ENODEV : -ETIMEDOUT;
		csts = readl(c->bar + NVME_REG_CSTS);
		if (csts == ~0U)
			return -ENODEV;		/* surprise removal */
		if (csts & NVME_CSTS_CFS)
			return -ETIMEDOUT;	/* fatal status: only a reset helps */
		usleep_range(5, 20);
	}
	/* read the rest of the entry only after seeing the phase bit */
	dma_rmb();
	if (result)
		*result = le32_to_cpu(cqe->result.u32);
	if (++q->cq_head == q->depth) {
		q->cq_head = 0;
		q->cq_phase ^= 1;
	}
	/* tell the controller the entry is consumed */
	writel(q->cq_head, q->cq_db);
	trace_p2pnvme_complete(c->pdev, q->qid, cqe->command_id, st >> 1);

	if (cqe->command_id != cid) {
		pci_err(c->pdev, "q%u: completion for cid %u, expected %u\n", q->qid,
			cqe->command_id, cid);
		return -EIO;
	}
	if (status)
		*status = st >> 1;
	return (st >> 1) ? -EIO : 0;
}

static int admin_exec(struct p2pnvme *c, struct nvme_command *cmd, u32 *result)
{
	u16 status = 0;
	int ret;

	mutex_lock(&c->adminq.lock);
	ret = queue_exec_locked(c, &c->adminq, cmd, result, &status,
				msecs_to_jiffies(io_timeout_ms));
	mutex_unlock(&c->adminq.lock);
	if (ret == -EIO)
		pci_err(c->pdev, "admin opcode %#x failed, status %#x\n",
			cmd->common.opcode, status);
	return ret;
}

static int create_io_queue(struct p2pnvme *c, struct p2pnvme_queue *q)
{
	struct nvme_command cmd = {};
	int ret;

	queue_reset_state(q);
	cmd.create_cq.opcode = nvme_admin_create_cq;
	cmd.create_cq.prp1 = cpu_to_le64(q->cq_dma);
	cmd.create_cq.cqid = cpu_to_le16(q->qid);
	cmd.create_cq.qsize = cpu_to_le16(q->depth - 1);
	cmd.create_cq.cq_flags = cpu_to_le16(NVME_QUEUE_PHYS_CONTIG);	/* polled */
	ret = admin_exec(c, &cmd, NULL);
	if (ret)
		return ret;

	memset(&cmd, 0, sizeof(cmd));
	cmd.create_sq.opcode = nvme_admin_create_sq;
	cmd.create_sq.prp1 = cpu_to_le64(q->sq_dma);
	cmd.create_sq.sqid = cpu_to_le16(q->qid);
	cmd.create_sq.qsize = cpu_to_le16(q->depth - 1);
	cmd.create_sq.sq_flags = cpu_to_le16(NVME_QUEUE_PHYS_CONTIG);
	cmd.create_sq.cqid = cpu_to_le16(q->qid);
	return admin_exec(c, &cmd, NULL);
}

/*
 * Enable the controller with a fresh admin queue and create the I/O queues
 * (memory is kept across resets). Caller holds reset_lock for write or is
 * probe.
 */
static int ctrl_enable(struct p2pnvme *c)
{
	u32 aqa = (P2PNVME_AQ_DEPTH - 1) | (P2PNVME_AQ_DEPTH - 1) << 16;
	unsigned int i;
	int ret;

	ret = ctrl_disable(c);
	if (ret)
		return ret;
	queue_reset_state(&c->adminq);
	writel(aqa, c->bar + NVME_REG_AQA);
	lo_hi_writeq(c->adminq.sq_dma, c->bar + NVME_REG_ASQ);
	lo_hi_writeq(c->adminq.cq_dma, c->bar + NVME_REG_ACQ);
	writel(NVME_CC_ENABLE | NVME_CC_CSS_NVM |
	       (ilog2(P2PNVME_CTRL_PAGE) - 12) << NVME_CC_MPS_SHIFT |
	       NVME_CC_AMS_RR | NVME_CC_SHN_NONE | NVME_CC_IOSQES | NVME_CC_IOCQES,
	       c->bar + NVME_REG_CC);
	ret = wait_ready(c, true);
	if (ret)
		return ret;
	for (i = 0; i < c->nr_ioq; i++) {
		ret = create_io_queue(c, &c->ioq[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* Reset after a timeout. Caller holds reset_lock for write. */
static void ctrl_reset(struct p2pnvme *c)
{
	int ret;

	stat_add(c, ST_RESETS, 1);
	ret = ctrl_enable(c);
	if (ret) {
		pci_err(c->pdev, "reset failed (%d); the controller is out of service\n", ret);
		c->dead = true;
	} else {
		pci_warn(c->pdev, "controller reset\n");
	}
}

/* ---- identify and setup ---------------------------------------------- */

/* Identify with CNS @cns (namespace @nsid) into the page at @dma. */
static int identify_cns(struct p2pnvme *c, u8 cns, u32 nsid, dma_addr_t dma)
{
	struct nvme_command cmd = {};

	cmd.identify.opcode = nvme_admin_identify;
	cmd.identify.nsid = cpu_to_le32(nsid);
	cmd.identify.dptr.prp1 = cpu_to_le64(dma);
	cmd.identify.cns = cns;
	return admin_exec(c, &cmd, NULL);
}

static int identify(struct p2pnvme *c)
{
	struct nvme_command cmd = {};
	struct nvme_id_ctrl *id;
	struct nvme_id_ns *ns;
	dma_addr_t dma;
	u32 result, mps = P2PNVME_CTRL_PAGE;
	__le32 *list;
	int ret;

	id = dma_alloc_coherent(&c->pdev->dev, PAGE_SIZE, &dma, GFP_KERNEL);
	if (!id)
		return -ENOMEM;

	ret = identify_cns(c, NVME_ID_CNS_CTRL, 0, dma);
	if (ret)
		goto out_free;
	memcpy(c->serial, id->sn, sizeof(c->serial));
	memcpy(c->model, id->mn, sizeof(c->model));
	c->max_xfer = P2PNVME_MAX_XFER;
	if (id->mdts)
		c->max_xfer = min_t(u64, c->max_xfer, (u64)mps << id->mdts);
	c->sgl = le32_to_cpu(id->sgls) & 0x3;

	/* the first active namespace */
	ret = identify_cns(c, NVME_ID_CNS_NS_ACTIVE_LIST, 0, dma);
	if (ret)
		goto out_free;
	list = (__le32 *)id;
	c->nsid = le32_to_cpu(list[0]);
	if (!c->nsid) {
		pci_err(c->pdev, "no active namespace\n");
		ret = -ENODEV;
		goto out_free;
	}

	ret = identify_cns(c, NVME_ID_CNS_NS, c->nsid, dma);
	if (ret)
		goto out_free;
	ns = (struct nvme_id_ns *)id;
	c->nlb = le64_to_cpu(ns->nsze);
	c->lba_shift = ns->lbaf[ns->flbas & NVME_NS_FLBAS_LBA_MASK].ds;
	if (c->lba_shift < 9 || c->lba_shift > PAGE_SHIFT) {
		pci_err(c->pdev, "unsupported LBA size 2^%u\n", c->lba_shift);
		ret = -EOPNOTSUPP;
		goto out_free;
	}

	/* Number of Queues: ask, then take what was granted */
	cmd.features.opcode = nvme_admin_set_features;
	cmd.features.fid = cpu_to_le32(NVME_FEAT_NUM_QUEUES);
	c->nr_ioq = clamp_t(unsigned int, min(max_io_queues, num_online_cpus()), 1,
			    P2PNVME_MAX_IOQ);
	cmd.features.dword11 = cpu_to_le32((c->nr_ioq - 1) | (c->nr_ioq - 1) << 16);
	ret = admin_exec(c, &cmd, &result);
	if (ret)
		goto out_free;
	c->nr_ioq = min3(c->nr_ioq, (result & 0xffff) + 1, (result >> 16) + 1);
out_free:
	dma_free_coherent(&c->pdev->dev, PAGE_SIZE, id, dma);
	return ret;
}

/* ---- data transfer ---------------------------------------------------- */

/* A DMA-mapped byte range: walks sg entries in controller pages. */
struct dma_cursor {
	struct scatterlist *sg;
	u64 off;	/* into the current entry */
};

static dma_addr_t cursor_addr(struct dma_cursor *cur)
{
	return sg_dma_address(cur->sg) + cur->off;
}

static void cursor_advance(struct dma_cursor *cur, u64 n)
{
	while (n) {
		u64 step = min_t(u64, n, sg_dma_len(cur->sg) - cur->off);

		cur->off += step;
		n -= step;
		if (cur->off == sg_dma_len(cur->sg)) {
			cur->sg = sg_next(cur->sg);
			cur->off = 0;
			if (!cur->sg)
				break;
		}
	}
}

/* Describe @len bytes at @cur with PRP1/PRP2 or a PRP list in q->prp. */
static int build_prps(struct p2pnvme_queue *q, struct dma_cursor *cur, u64 len,
		      struct nvme_command *cmd)
{
	dma_addr_t addr = cursor_addr(cur);
	u64 first = min_t(u64, len, P2PNVME_CTRL_PAGE - (addr & (P2PNVME_CTRL_PAGE - 1)));
	int n = 0;

	cmd->rw.dptr.prp1 = cpu_to_le64(addr);
	cursor_advance(cur, first);
	len -= first;
	while (len) {
		u64 step = min_t(u64, len, P2PNVME_CTRL_PAGE);

		if (!cur->sg)
			return -EINVAL;
		addr = cursor_addr(cur);
		/* every PRP after the first starts on a controller page */
		if (addr & (P2PNVME_CTRL_PAGE - 1))
			return -EINVAL;
		if (n == PAGE_SIZE / sizeof(__le64))
			return -E2BIG;
		q->prp[n++] = cpu_to_le64(addr);
		cursor_advance(cur, step);
		len -= step;
	}
	if (n == 1)
		cmd->rw.dptr.prp2 = q->prp[0];
	else if (n > 1)
		cmd->rw.dptr.prp2 = cpu_to_le64(q->prp_dma);
	return 0;
}

/* Describe @len bytes at @cur with SGL data blocks (a segment if several). */
static int build_sgl(struct p2pnvme_queue *q, struct dma_cursor *cur, u64 len,
		     struct nvme_command *cmd)
{
	struct nvme_sgl_desc *d = (struct nvme_sgl_desc *)q->prp;
	int n = 0;

	cmd->rw.flags = NVME_CMD_SGL_METABUF;
	while (len) {
		u64 step;

		if (!cur->sg)
			return -EINVAL;
		step = min_t(u64, len, sg_dma_len(cur->sg) - cur->off);
		if (n == PAGE_SIZE / sizeof(*d))
			return -E2BIG;
		d[n].addr = cpu_to_le64(cursor_addr(cur));
		d[n].length = cpu_to_le32(step);
		d[n].type = NVME_SGL_FMT_DATA_DESC << 4;
		n++;
		cursor_advance(cur, step);
		len -= step;
	}
	if (n == 1) {
		cmd->rw.dptr.sgl = d[0];
	} else {
		cmd->rw.dptr.sgl.addr = cpu_to_le64(q->prp_dma);
		cmd->rw.dptr.sgl.length = cpu_to_le32(n * sizeof(*d));
		cmd->rw.dptr.sgl.type = NVME_SGL_FMT_LAST_SEG_DESC << 4;
	}
	return 0;
}

/*
 * One command of at most max_xfer bytes. Caller holds q->lock, which also
 * covers the queue's list page and bounce buffer. On a timeout the command
 * is aborted; the caller resets the controller if it is still outstanding.
 */
static int io_cmd(struct p2pnvme *c, struct p2pnvme_queue *q, u8 opcode, u64 slba,
		  u64 len, struct dma_cursor *cur, bool sgl, u16 *status)
{
	struct nvme_command cmd = {};
	int ret;

	lockdep_assert_held(&q->lock);
	cmd.rw.opcode = opcode;
	cmd.rw.nsid = cpu_to_le32(c->nsid);
	cmd.rw.slba = cpu_to_le64(slba);
	if (opcode != nvme_cmd_flush)
		cmd.rw.length = cpu_to_le16((len >> c->lba_shift) - 1);
	if (cur) {
		ret = sgl ? build_sgl(q, cur, len, &cmd) : build_prps(q, cur, len, &cmd);
		if (ret)
			return ret;
	}
	ret = queue_exec_locked(c, q, &cmd, NULL, status, msecs_to_jiffies(io_timeout_ms));
	if (ret == -ETIMEDOUT) {
		struct nvme_command abort = {};
		u32 res = 1;

		stat_add(c, ST_TIMEOUTS, 1);
		pci_warn(c->pdev, "q%u cid %u timed out after %u ms, aborting\n", q->qid,
			 cmd.common.command_id, io_timeout_ms);
		abort.abort.opcode = nvme_admin_abort_cmd;
		abort.abort.sqid = cpu_to_le16(q->qid);
		abort.abort.cid = cmd.common.command_id;
		/* Abort dw0 bit 0 clear: the command was aborted and will complete */
		if (!admin_exec(c, &abort, &res) && !(res & 1))
			stat_add(c, ST_ABORTS, 1);
	}
	return ret;
}

static int pin_user(u64 addr, u64 len, bool write_to_mem, struct page ***pagesp,
		    unsigned int *nr)
{
	unsigned int n = DIV_ROUND_UP(offset_in_page(addr) + len, PAGE_SIZE);
	unsigned int gup = (write_to_mem ? FOLL_WRITE : 0);
	struct page **pages;
	int got;

#if P2P_HAVE_USER_PAGES
	gup |= FOLL_PCI_P2PDMA;
#endif
	pages = kvmalloc_array(n, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	got = pin_user_pages_fast(addr & PAGE_MASK, n, gup, pages);
	if (got != n) {
		if (got > 0)
			unpin_user_pages(pages, got);
		kvfree(pages);
		return got < 0 ? got : -EFAULT;
	}
	*pagesp = pages;
	*nr = n;
	return 0;
}

/* The PCI function whose BAR holds @page (a P2PDMA page), with a reference. */
static struct pci_dev *page_provider(struct page *page)
{
	phys_addr_t phys = page_to_phys(page);
	struct pci_dev *pdev = NULL;
	int i;

	for_each_pci_dev(pdev) {
		for (i = 0; i < PCI_STD_NUM_BARS; i++) {
			if (pci_resource_len(pdev, i) && phys >= pci_resource_start(pdev, i) &&
			    phys <= pci_resource_end(pdev, i))
				return pdev;	/* for_each_pci_dev holds the reference */
		}
	}
	return NULL;
}

/* CPU copy between the bounce buffer and the (p2pmem) user pages. */
static void bounce_copy(struct page **pages, u64 addr, u64 off, void *buf, u64 len,
			bool to_pages)
{
	u64 pos = offset_in_page(addr) + off;

	while (len) {
		struct page *pg = pages[pos >> PAGE_SHIFT];
		u64 in = pos & ~PAGE_MASK, n = min_t(u64, len, PAGE_SIZE - in);
		void __iomem *io = (void __iomem __force *)page_address(pg) + in;

		/* p2pmem is MMIO: only the *io accessors may touch it */
		if (to_pages)
			memcpy_toio(io, buf, n);
		else
			memcpy_fromio(buf, io, n);
		buf += n;
		pos += n;
		len -= n;
	}
}

static int do_io(struct p2pnvme *c, struct p2pnvme_io *io)
{
	bool write = io->op == P2PNVME_OP_WRITE;
	enum dma_data_direction dir = write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	u8 opcode = write ? nvme_cmd_write : nvme_cmd_read;
	struct p2pnvme_queue *q = &c->ioq[raw_smp_processor_id() % c->nr_ioq];
	struct sg_table sgt = {};
	struct pci_dev *provider;
	struct page **pages = NULL;
	struct dma_cursor cur;
	bool p2p, use_bounce, sgl;
	unsigned int nr = 0, i;
	u64 done = 0, slba = io->slba;
	u16 status = 0;
	int ret;

	sgl = c->sgl && !(io->flags & P2PNVME_IO_F_PRP);
	if ((io->flags & P2PNVME_IO_F_SGL) && !c->sgl)
		return -EOPNOTSUPP;

	if (io->op == P2PNVME_OP_FLUSH || io->op == P2PNVME_OP_WRITE_ZEROES) {
		mutex_lock(&q->lock);
		if (io->op == P2PNVME_OP_FLUSH) {
			ret = io_cmd(c, q, nvme_cmd_flush, 0, 0, NULL, false, &status);
		} else {
			for (done = 0, ret = 0; done < io->len && !ret; done += c->max_xfer)
				ret = io_cmd(c, q, nvme_cmd_write_zeroes,
					     slba + (done >> c->lba_shift),
					     min_t(u64, io->len - done, c->max_xfer), NULL,
					     false, &status);
		}
		mutex_unlock(&q->lock);
		io->status = status;
		return ret;
	}

	ret = pin_user(io->addr, io->len, !write, &pages, &nr);
	if (ret)
		return ret;
	p2p = is_pci_p2pdma_page(pages[0]);
	for (i = 1; i < nr; i++) {
		if (is_pci_p2pdma_page(pages[i]) != p2p) {
			ret = -EINVAL;	/* host memory and p2pmem in one buffer */
			goto out_unpin;
		}
	}

	/* Topology first: can this controller reach the provider at all? */
	use_bounce = p2p && (io->flags & P2PNVME_IO_F_BOUNCE);
	if (p2p && !use_bounce) {
		provider = page_provider(pages[0]);
		if (!provider || pci_p2pdma_distance(provider, &c->pdev->dev, false) < 0)
			use_bounce = true;
		pci_dev_put(provider);
	}
	if (use_bounce && !(io->flags & P2PNVME_IO_F_BOUNCE) &&
	    ((io->flags & P2PNVME_IO_F_NO_BOUNCE) || !bounce)) {
		stat_add(c, ST_REFUSED, 1);
		ret = -EREMOTEIO;
		goto out_unpin;
	}

	if (!use_bounce) {
		ret = sg_alloc_table_from_pages(&sgt, pages, nr, offset_in_page(io->addr),
						io->len, GFP_KERNEL);
		if (ret)
			goto out_unpin;
		/* P2PDMA pages get bus addresses here, or -EREMOTEIO */
		ret = dma_map_sgtable(&c->pdev->dev, &sgt, dir, 0);
		if (ret == -EREMOTEIO && bounce && !(io->flags & P2PNVME_IO_F_NO_BOUNCE)) {
			use_bounce = true;
		} else if (ret) {
			if (ret == -EREMOTEIO)
				stat_add(c, ST_REFUSED, 1);
			goto out_sgt;
		}
	}

	/* one transfer at a time per queue: the list page and bounce buffer are the queue's */
	mutex_lock(&q->lock);
	for (done = 0; done < io->len && !ret; ) {
		u64 n = min_t(u64, io->len - done, c->max_xfer);
		unsigned int qi = q - c->ioq;

		if (use_bounce) {
			struct scatterlist one;

			if (write)
				bounce_copy(pages, io->addr, done, c->bounce[qi], n, false);
			sg_init_table(&one, 1);
			sg_dma_address(&one) = c->bounce_dma[qi];
			sg_dma_len(&one) = n;
			cur.sg = &one;
			cur.off = 0;
			ret = io_cmd(c, q, opcode, slba, n, &cur, sgl, &status);
			if (!ret && !write)
				bounce_copy(pages, io->addr, done, c->bounce[qi], n, true);
		} else {
			if (!done) {
				cur.sg = sgt.sgl;
				cur.off = 0;
			}
			ret = io_cmd(c, q, opcode, slba, n, &cur, sgl, &status);
		}
		slba += n >> c->lba_shift;
		done += n;
	}
	mutex_unlock(&q->lock);

	if (!ret) {
		if (!p2p) {
			io->path = P2PNVME_PATH_HOST;
			stat_add(c, write ? ST_WRITES_HOST : ST_READS_HOST, 1);
			stat_add(c, ST_BYTES_HOST, io->len);
		} else if (use_bounce) {
			io->path = P2PNVME_PATH_BOUNCE;
			stat_add(c, write ? ST_WRITES_BOUNCE : ST_READS_BOUNCE, 1);
			stat_add(c, ST_BYTES_BOUNCE, io->len);
		} else {
			io->path = P2PNVME_PATH_P2P;
			stat_add(c, write ? ST_WRITES_P2P : ST_READS_P2P, 1);
			stat_add(c, ST_BYTES_P2P, io->len);
		}
	}
	io->status = status;
	if (sgt.nents && !use_bounce)
		dma_unmap_sgtable(&c->pdev->dev, &sgt, dir, 0);
out_sgt:
	sg_free_table(&sgt);
out_unpin:
	unpin_user_pages_dirty_lock(pages, nr, !write && !ret);
	kvfree(pages);
	return ret;
}

/* ---- char device ------------------------------------------------------- */

static int p2pnvme_open(struct inode *inode, struct file *filp)
{
	struct p2pnvme *c;

	xa_lock(&p2pnvme_minors);
	c = xa_load(&p2pnvme_minors, iminor(inode));
	if (c)
		kref_get(&c->kref);
	xa_unlock(&p2pnvme_minors);
	if (!c)
		return -ENODEV;
	filp->private_data = c;
	return nonseekable_open(inode, filp);
}

static int p2pnvme_release(struct inode *inode, struct file *filp)
{
	struct p2pnvme *c = filp->private_data;

	kref_put(&c->kref, p2pnvme_free);
	return 0;
}

static long ioc_info(struct p2pnvme *c, unsigned long uarg)
{
	struct p2pnvme_info info;
	int ret = p2p_ioctl_copy_in(&info, sizeof(info), uarg);

	if (ret)
		return ret;
	if (info.flags || info.reserved)
		return -EINVAL;
	if (READ_ONCE(c->dead))
		return -ENODEV;
	info.flags = c->sgl ? P2PNVME_INFO_F_SGL : 0;
	info.nsid = c->nsid;
	info.lba_shift = c->lba_shift;
	info.nlb = c->nlb;
	info.max_xfer = c->max_xfer;
	info.nr_io_queues = c->nr_ioq;
	info.queue_depth = P2PNVME_IOQ_DEPTH;
	memcpy(info.serial, c->serial, sizeof(info.serial));
	memcpy(info.model, c->model, sizeof(info.model));
	return copy_to_user((void __user *)uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

/**
 * p2pnvme_check_io - validate a P2PNVME_IOC_IO request before any I/O
 * @io: the request
 * @lba_shift: log2 of the namespace's LBA size
 * @nlb: namespace size in LBAs
 *
 * Return: 0 or -EINVAL (malformed), -ERANGE (LBA range outside the
 * namespace), -EOPNOTSUPP (unknown operation).
 */
int p2pnvme_check_io(const struct p2pnvme_io *io, u32 lba_shift, u64 nlb)
{
	const u32 known = P2PNVME_IO_F_NO_BOUNCE | P2PNVME_IO_F_BOUNCE |
			  P2PNVME_IO_F_PRP | P2PNVME_IO_F_SGL;
	u64 end;

	if ((io->flags & ~known) || io->reserved || io->path || io->status)
		return -EINVAL;
	if ((io->flags & P2PNVME_IO_F_PRP) && (io->flags & P2PNVME_IO_F_SGL))
		return -EINVAL;
	if ((io->flags & P2PNVME_IO_F_NO_BOUNCE) && (io->flags & P2PNVME_IO_F_BOUNCE))
		return -EINVAL;
	if (io->op > P2PNVME_OP_WRITE_ZEROES)
		return -EOPNOTSUPP;
	if (io->op == P2PNVME_OP_FLUSH)
		return io->len || io->slba || io->addr ? -EINVAL : 0;
	if (!io->len || io->len & ((1ULL << lba_shift) - 1))
		return -EINVAL;
	if (check_add_overflow(io->slba, io->len >> lba_shift, &end) || end > nlb)
		return -ERANGE;
	if (io->op == P2PNVME_OP_WRITE_ZEROES)
		return io->addr ? -EINVAL : 0;
	if (!io->addr || io->addr & 3)
		return -EINVAL;
	if (io->addr + io->len < io->addr)
		return -EINVAL;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_check_io);

static long ioc_io(struct p2pnvme *c, unsigned long uarg)
{
	struct p2pnvme_io io;
	int ret = p2p_ioctl_copy_in(&io, sizeof(io), uarg);

	if (ret)
		return ret;
	ret = p2pnvme_check_io(&io, c->lba_shift, c->nlb);
	if (ret)
		return ret;

	down_read(&c->reset_lock);
	if (c->dead) {
		up_read(&c->reset_lock);
		return -ENODEV;
	}
	ret = do_io(c, &io);
	up_read(&c->reset_lock);

	if (ret == -ETIMEDOUT) {
		down_write(&c->reset_lock);
		if (!c->dead)
			ctrl_reset(c);
		up_write(&c->reset_lock);
	}
	if (ret == -ENODEV) {
		down_write(&c->reset_lock);
		c->dead = true;
		up_write(&c->reset_lock);
	}
	/* device-side failures only; bad buffers and policy refusals are not */
	if (ret == -EIO || ret == -ETIMEDOUT || ret == -ENODEV)
		stat_add(c, ST_ERRORS, 1);
	if (copy_to_user((void __user *)uarg, &io, sizeof(io)))
		return -EFAULT;
	return ret;
}

static long p2pnvme_ioctl(struct file *filp, unsigned int cmd, unsigned long uarg)
{
	struct p2pnvme *c = filp->private_data;

	switch (cmd) {
	case P2PNVME_IOC_INFO:
		return ioc_info(c, uarg);
	case P2PNVME_IOC_IO:
		return ioc_io(c, uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations p2pnvme_fops = {
	.owner = THIS_MODULE,
	.open = p2pnvme_open,
	.release = p2pnvme_release,
	.unlocked_ioctl = p2pnvme_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

/* ---- sysfs: /sys/class/p2pnvme/p2pnvmeN/stats/<counter> --------------- */

static ssize_t stat_show(struct device *dev, struct device_attribute *attr, char *buf);

#define STAT_ATTR(name)	__ATTR(name, 0444, stat_show, NULL)

/* in enum p2pnvme_stat order: the index of an attribute is its counter */
static struct device_attribute stat_attrs[ST_NR] = {
	STAT_ATTR(reads_p2p), STAT_ATTR(writes_p2p),
	STAT_ATTR(reads_bounce), STAT_ATTR(writes_bounce),
	STAT_ATTR(reads_host), STAT_ATTR(writes_host),
	STAT_ATTR(bytes_p2p), STAT_ATTR(bytes_bounce), STAT_ATTR(bytes_host),
	STAT_ATTR(refused), STAT_ATTR(errors), STAT_ATTR(timeouts),
	STAT_ATTR(aborts), STAT_ATTR(resets),
};

static ssize_t stat_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(&c->stats[attr - stat_attrs]));
}

static struct attribute *stat_attr_list[ST_NR + 1];

static const struct attribute_group stats_group = {
	.name = "stats",
	.attrs = stat_attr_list,
};

static const struct attribute_group *p2pnvme_groups[] = {
	&stats_group,
	NULL,
};

/* ---- debugfs: the queues' state, for a person looking at a stuck device -- */

static void show_queue(struct seq_file *s, struct p2pnvme_queue *q)
{
	mutex_lock(&q->lock);	/* waits for the command in flight, bounded */
	seq_printf(s, "%u %u %u %u %u %u %pad %pad\n", q->qid, q->depth, q->sq_tail,
		   q->cq_head, q->cq_phase, q->cid, &q->sq_dma, &q->cq_dma);
	mutex_unlock(&q->lock);
}

static int queues_show(struct seq_file *s, void *unused)
{
	struct p2pnvme *c = s->private;
	unsigned int i;

	seq_puts(s, "qid depth sq_tail cq_head phase next_cid sq_dma cq_dma\n");
	down_read(&c->reset_lock);
	if (!c->dead) {
		show_queue(s, &c->adminq);
		for (i = 0; i < c->nr_ioq; i++)
			show_queue(s, &c->ioq[i]);
	}
	up_read(&c->reset_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(queues);

/* ---- PCI driver -------------------------------------------------------- */

static void p2pnvme_shutdown_ctrl(struct p2pnvme *c)
{
	unsigned long deadline = jiffies + c->ready_timeout;
	u32 cc = readl(c->bar + NVME_REG_CC);

	if (cc == ~0U)
		return;
	/* orderly shutdown: CC.SHN normal, wait for CSTS.SHST complete */
	writel((cc & ~NVME_CC_SHN_MASK) | NVME_CC_SHN_NORMAL, c->bar + NVME_REG_CC);
	while ((readl(c->bar + NVME_REG_CSTS) & NVME_CSTS_SHST_MASK) != NVME_CSTS_SHST_CMPLT) {
		if (time_after(jiffies, deadline) || ctrl_gone(c)) {
			pci_warn(c->pdev, "shutdown did not complete\n");
			break;
		}
		usleep_range(1000, 2000);
	}
	ctrl_disable(c);
}

static int p2pnvme_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct p2pnvme *c;
	unsigned int i;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;

	c = kzalloc_obj(*c, GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	kref_init(&c->kref);
	c->pdev = pci_dev_get(pdev);
	init_rwsem(&c->reset_lock);
	c->bar = pcim_iomap_region(pdev, 0, KBUILD_MODNAME);
	if (IS_ERR(c->bar)) {
		pci_err(pdev, "cannot map BAR0 (is nvme still bound?)\n");
		ret = PTR_ERR(c->bar);
		goto err_put;
	}
	c->cap = lo_hi_readq(c->bar + NVME_REG_CAP);
	if (c->cap == ~0ULL) {
		ret = -ENODEV;
		goto err_put;
	}
	c->db_stride = 1 << NVME_CAP_STRIDE(c->cap);
	c->ready_timeout = (NVME_CAP_TIMEOUT(c->cap) + 1) * HZ / 2;
	if (NVME_CAP_MPSMIN(c->cap) > 0) {
		pci_err(pdev, "controller does not support 4 KiB pages\n");
		ret = -EOPNOTSUPP;
		goto err_put;
	}

	ret = queue_alloc(c, &c->adminq, 0, P2PNVME_AQ_DEPTH);
	if (ret)
		goto err_put;
	/* admin queue only, to learn how many I/O queues there will be */
	c->nr_ioq = 0;
	ret = ctrl_enable(c);
	if (!ret)
		ret = identify(c);
	if (ret)
		goto err_disable;

	c->ioq = devm_kcalloc(dev, c->nr_ioq, sizeof(*c->ioq), GFP_KERNEL);
	if (!c->ioq) {
		ret = -ENOMEM;
		goto err_disable;
	}
	for (i = 0; i < c->nr_ioq; i++) {
		u16 depth = min_t(u32, P2PNVME_IOQ_DEPTH, NVME_CAP_MQES(c->cap) + 1);

		ret = queue_alloc(c, &c->ioq[i], i + 1, depth);
		if (ret)
			goto err_disable;
		c->bounce[i] = dmam_alloc_coherent(dev, c->max_xfer, &c->bounce_dma[i],
						   GFP_KERNEL);
		if (!c->bounce[i]) {
			ret = -ENOMEM;
			goto err_disable;
		}
		ret = create_io_queue(c, &c->ioq[i]);
		if (ret)
			goto err_disable;
	}

	ret = xa_alloc(&p2pnvme_minors, &c->minor, c, XA_LIMIT(0, P2PNVME_MAX_DEVS - 1),
		       GFP_KERNEL);
	if (ret)
		goto err_disable;
	pci_set_drvdata(pdev, c);
	c->dev = device_create_with_groups(p2pnvme_class, dev,
					   MKDEV(MAJOR(p2pnvme_devt), c->minor), c,
					   p2pnvme_groups, "p2pnvme%d", c->minor);
	if (IS_ERR(c->dev)) {
		ret = PTR_ERR(c->dev);
		goto err_minor;
	}
	c->debugfs = debugfs_create_dir(pci_name(pdev), p2pnvme_debugfs);
	debugfs_create_file("queues", 0400, c->debugfs, c, &queues_fops);
	pci_info(pdev, "p2pnvme%d: ns %u, %llu x %u B, %u I/O queues, max %u KiB/cmd%s\n",
		 c->minor, c->nsid, c->nlb, 1 << c->lba_shift, c->nr_ioq, c->max_xfer >> 10,
		 c->sgl ? ", SGL" : "");
	return 0;

err_minor:
	xa_erase(&p2pnvme_minors, c->minor);
err_disable:
	ctrl_disable(c);
err_put:
	kref_put(&c->kref, p2pnvme_free);
	return ret;
}

static void p2pnvme_remove(struct pci_dev *pdev)
{
	struct p2pnvme *c = pci_get_drvdata(pdev);

	xa_erase(&p2pnvme_minors, c->minor);
	device_destroy(p2pnvme_class, MKDEV(MAJOR(p2pnvme_devt), c->minor));
	debugfs_remove_recursive(c->debugfs);
	/* wait for I/O in flight; later ioctls on open files see dead */
	down_write(&c->reset_lock);
	if (!c->dead)
		p2pnvme_shutdown_ctrl(c);
	c->dead = true;
	up_write(&c->reset_lock);
	kref_put(&c->kref, p2pnvme_free);	/* the binding's reference */
}

static struct pci_driver p2pnvme_driver = {
	.name = KBUILD_MODNAME,
	.id_table = NULL,	/* bind with driver_override in place of nvme */
	.probe = p2pnvme_probe,
	.remove = p2pnvme_remove,
};

static int __init p2pnvme_init(void)
{
	int i, ret;

	for (i = 0; i < ST_NR; i++)
		stat_attr_list[i] = &stat_attrs[i].attr;
	ret = alloc_chrdev_region(&p2pnvme_devt, 0, P2PNVME_MAX_DEVS, KBUILD_MODNAME);
	if (ret)
		return ret;
	cdev_init(&p2pnvme_cdev, &p2pnvme_fops);
	ret = cdev_add(&p2pnvme_cdev, p2pnvme_devt, P2PNVME_MAX_DEVS);
	if (ret)
		goto err_region;
	p2pnvme_class = p2p_class_create(KBUILD_MODNAME);
	if (IS_ERR(p2pnvme_class)) {
		ret = PTR_ERR(p2pnvme_class);
		goto err_cdev;
	}
	p2pnvme_debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	ret = pci_register_driver(&p2pnvme_driver);
	if (ret)
		goto err_class;
	return 0;

err_class:
	debugfs_remove_recursive(p2pnvme_debugfs);
	class_destroy(p2pnvme_class);
err_cdev:
	cdev_del(&p2pnvme_cdev);
err_region:
	unregister_chrdev_region(p2pnvme_devt, P2PNVME_MAX_DEVS);
	return ret;
}

static void __exit p2pnvme_exit(void)
{
	pci_unregister_driver(&p2pnvme_driver);
	debugfs_remove_recursive(p2pnvme_debugfs);
	class_destroy(p2pnvme_class);
	cdev_del(&p2pnvme_cdev);
	unregister_chrdev_region(p2pnvme_devt, P2PNVME_MAX_DEVS);
}

module_init(p2pnvme_init);
module_exit(p2pnvme_exit);

MODULE_DESCRIPTION("NVMe client that moves data straight to and from p2pmem");
MODULE_LICENSE("GPL");
