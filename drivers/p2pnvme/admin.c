// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: what userspace may ask of the admin queue, and what Identify
 * data the driver accepts.
 *
 * NVME_IOCTL_ADMIN_CMD is taken as nvme-pci's char device takes it
 * (nvme-cli, libnvme, smartctl), for what keeps a drive's health view:
 * Identify, Get Log Page and Get Features. Who may send what follows
 * nvme-pci's nvme_admin_cmd_allowed(): without CAP_SYS_ADMIN only the
 * Identify data a program needs to form I/O commands. The controller takes
 * a command's transfer length from the command itself (Get Log Page's NUMD,
 * the Feature Identifier), never from the caller's data_len: the length is
 * computed here, and a command that could move more than the caller's
 * buffer, or more than the driver's, is refused before it is sent.
 */
#include <linux/delay.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>
#include <p2p_compat.h>

#include "admin.h"
#include "queue.h"

/* PRP1 and PRP2 describe the passthrough buffer, no list */
static_assert(P2PNVME_PT_MAX == 2 * P2PNVME_CTRL_PAGE);

/**
 * p2pnvme_admin_unprivileged - may a caller without CAP_SYS_ADMIN send @cmd?
 * @cmd: an admin command
 *
 * nvme-pci's allow-list: Identify Namespace, Controller and their I/O
 * Command Set variants. Logs and features can change controller state
 * (Telemetry "create", the Persistent Event Log context, RAE) or expose
 * vendor data: they need CAP_SYS_ADMIN.
 *
 * Return: true if it may.
 */
bool p2pnvme_admin_unprivileged(const struct nvme_command *cmd)
{
	if (cmd->common.opcode != nvme_admin_identify)
		return false;
	switch (cmd->identify.cns) {
	case NVME_ID_CNS_NS:
	case NVME_ID_CNS_CS_NS:
	case NVME_ID_CNS_NS_CS_INDEP:
	case NVME_ID_CNS_CS_CTRL:
	case NVME_ID_CNS_CTRL:
		return true;
	}
	return false;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_admin_unprivileged);

/* The data a Get Features of @fid returns (NVMe 2.0 base spec, 5.27.1). */
static int feature_len(u8 fid, u32 cdw11, u32 *len)
{
	switch (fid) {
	case NVME_FEAT_LBA_RANGE:
	case NVME_FEAT_HOST_MEM_BUF:
	case 0x7d:	/* Enhanced Controller Metadata */
	case 0x7e:	/* Controller Metadata */
	case 0x7f:	/* Namespace Metadata */
		*len = 4096;
		return 0;
	case NVME_FEAT_AUTO_PST:
		*len = 256;
		return 0;
	case NVME_FEAT_PLM_CONFIG:
	case NVME_FEAT_HOST_BEHAVIOR:
		*len = 512;
		return 0;
	case NVME_FEAT_TIMESTAMP:
		*len = 8;
		return 0;
	case NVME_FEAT_HOST_ID:
		*len = cdw11 & 1 ? 16 : 8;	/* EXHID: the 128-bit identifier */
		return 0;
	case NVME_FEAT_ARBITRATION:
	case NVME_FEAT_POWER_MGMT:
	case NVME_FEAT_TEMP_THRESH:
	case NVME_FEAT_ERR_RECOVERY:
	case NVME_FEAT_VOLATILE_WC:
	case NVME_FEAT_NUM_QUEUES:
	case NVME_FEAT_IRQ_COALESCE:
	case NVME_FEAT_IRQ_CONFIG:
	case NVME_FEAT_WRITE_ATOMIC:
	case NVME_FEAT_ASYNC_EVENT:
	case NVME_FEAT_KATO:
	case NVME_FEAT_HCTM:
	case NVME_FEAT_NOPSC:
	case NVME_FEAT_RRL:
	case NVME_FEAT_PLM_WINDOW:
	case 0x15:	/* LBA Status Information Attributes */
	case NVME_FEAT_SANITIZE:
	case 0x18:	/* Endurance Group Event Configuration */
	case 0x19:	/* I/O Command Set Profile */
	case 0x1a:	/* Spinup Control */
	case NVME_FEAT_SW_PROGRESS:
	case NVME_FEAT_RESV_MASK:
	case NVME_FEAT_RESV_PERSIST:
	case NVME_FEAT_WRITE_PROTECT:
		*len = 0;
		return 0;
	}
	/* vendor and unknown features: their data size cannot be known */
	return -EINVAL;
}

/**
 * p2pnvme_admin_xfer_len - the bytes the controller moves for @cmd
 * @cmd: an Identify, Get Log Page or Get Features command
 * @len: out: the most it may transfer, whatever the caller's data_len says
 *
 * Identify data is always 4096 bytes; a log page is (NUMD + 1) dwords
 * (NUMDL in CDW10 bits 31:16, NUMDU in CDW11 bits 15:0); a feature's data
 * size comes with its identifier.
 *
 * Return: 0, or -EINVAL for a feature whose size is not known (vendor
 * specific, reserved) and any other opcode.
 */
int p2pnvme_admin_xfer_len(const struct nvme_command *cmd, u64 *len)
{
	u32 cdw10 = le32_to_cpu(cmd->common.cdw10), cdw11 = le32_to_cpu(cmd->common.cdw11);
	u32 flen;
	int ret;

	switch (cmd->common.opcode) {
	case nvme_admin_identify:
		*len = 4096;
		return 0;
	case nvme_admin_get_log_page:
		*len = (((u64)(cdw11 & 0xffff) << 16 | cdw10 >> 16) + 1) * 4;
		return 0;
	case nvme_admin_get_features:
		ret = feature_len(cdw10 & 0xff, cdw11, &flen);
		if (!ret)
			*len = flen;
		return ret;
	}
	return -EINVAL;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_admin_xfer_len);

/**
 * p2pnvme_ns_format - the LBA format of an Identify Namespace answer
 * @ns: the Identify Namespace data
 * @max_xfer: bytes one command moves at most (MDTS, capped by the driver)
 * @lba_shift: out: log2 of the LBA size
 *
 * The format index has its upper bits in FLBAS 6:5 (NVMe 2.0, more than 16
 * formats) and must name one of the NLBAF + 1 formats the namespace lists.
 * Metadata is refused, as nvme core gives such a namespace capacity 0
 * unless it can handle it: separate metadata would be written to MPTR (bus
 * address 0 here), and with extended LBAs a transfer is nlb * (ds + ms)
 * bytes, more than the buffer the driver describes. An LBA larger than
 * one command moves (16 KiB pages, MDTS 1) is refused as well: every
 * command carries whole LBAs, at least one.
 *
 * Return: 0, -EINVAL for an index past NLBAF, -EOPNOTSUPP for metadata or
 * an LBA size outside 512 bytes .. PAGE_SIZE or larger than @max_xfer.
 */
int p2pnvme_ns_format(const struct nvme_id_ns *ns, u32 max_xfer, u32 *lba_shift)
{
	u8 idx = nvme_lbaf_index(ns->flbas);

	if (idx > ns->nlbaf || idx >= ARRAY_SIZE(ns->lbaf))
		return -EINVAL;
	if (ns->lbaf[idx].ms)
		return -EOPNOTSUPP;
	if (ns->lbaf[idx].ds < 9 || ns->lbaf[idx].ds > PAGE_SHIFT)
		return -EOPNOTSUPP;
	if (1U << ns->lbaf[idx].ds > max_xfer)
		return -EOPNOTSUPP;
	*lba_shift = ns->lbaf[idx].ds;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_ns_format);

/* ---- identify and setup ---------------------------------------------- */

/* Identify with CNS @cns (namespace @nsid) into the page at @dma. */
static int identify_cns(struct p2pnvme *c, u8 cns, u32 nsid, dma_addr_t dma)
{
	struct nvme_command cmd = {};

	cmd.identify.opcode = nvme_admin_identify;
	cmd.identify.nsid = cpu_to_le32(nsid);
	cmd.identify.dptr.prp1 = cpu_to_le64(dma);
	cmd.identify.cns = cns;
	return p2pnvme_admin_exec(c, &cmd, NULL);
}

/* Why the namespace's format is refused, in the words of the spec. */
static void ns_format_refused(struct p2pnvme *c, const struct nvme_id_ns *ns, int err)
{
	u8 idx = nvme_lbaf_index(ns->flbas);

	if (err == -EINVAL)
		pci_err(c->pdev, "namespace %u: LBA format %u, but it lists %u formats\n",
			c->nsid, idx, ns->nlbaf + 1);
	else if (ns->lbaf[idx].ms)
		pci_err(c->pdev, "namespace %u has %u bytes of metadata per LBA (%s): not supported, format it without metadata\n",
			c->nsid, le16_to_cpu(ns->lbaf[idx].ms),
			ns->flbas & NVME_NS_FLBAS_META_EXT ? "extended LBAs" : "separate buffer");
	else if (ns->lbaf[idx].ds >= 9 && ns->lbaf[idx].ds <= PAGE_SHIFT)
		pci_err(c->pdev, "namespace %u: LBA size 2^%u is more than one command moves (%u bytes, MDTS)\n",
			c->nsid, ns->lbaf[idx].ds, c->max_xfer);
	else
		pci_err(c->pdev, "namespace %u: unsupported LBA size 2^%u\n", c->nsid,
			ns->lbaf[idx].ds);
}

/**
 * p2pnvme_ns_recheck - is the namespace still the one the driver serves?
 * @c: the controller, enabled again by a reset (its admin queue only), with
 *     reset_lock held for write
 *
 * Nothing tells p2pnvme when the namespace changes underneath (no
 * Asynchronous Event Requests): the physical function of an SR-IOV setup
 * can Format it, or detach it. Every reset and recovery identifies it
 * again; a namespace gone, formatted to another LBA size or with metadata,
 * or shrunk, is refused rather than served with a stale lba_shift or size.
 *
 * Return: 0, -ENODEV for a namespace that changed, or the Identify's error.
 */
int p2pnvme_ns_recheck(struct p2pnvme *c)
{
	struct nvme_id_ns *ns = c->id_buf;
	u32 shift = 0;
	int ret;

	lockdep_assert_held_write(&c->reset_lock);
	memset(c->id_buf, 0, PAGE_SIZE);
	ret = identify_cns(c, NVME_ID_CNS_NS, c->nsid, c->id_dma);
	if (ret)
		return ret;
	ret = p2pnvme_ns_format(ns, c->max_xfer, &shift);
	if (ret)
		ns_format_refused(c, ns, ret);
	if (ret || shift != c->lba_shift || le64_to_cpu(ns->nsze) < c->nlb) {
		pci_err(c->pdev, "namespace %u changed underneath (%llu LBAs of 2^%u bytes, was %llu of 2^%u): out of service\n",
			c->nsid, le64_to_cpu(ns->nsze), shift, c->nlb, c->lba_shift);
		return -ENODEV;
	}
	return 0;
}

/*
 * Identify data lands in c->id_buf, which lives as long as the binding: a
 * command the controller never completes cannot write into freed memory.
 */
int p2pnvme_identify(struct p2pnvme *c)
{
	struct nvme_id_ctrl *id = c->id_buf;
	struct nvme_command cmd = {};
	dma_addr_t dma = c->id_dma;
	struct nvme_id_ns *ns;
	u32 result, mps = P2PNVME_CTRL_PAGE;
	unsigned int want, granted;
	__le32 *list;
	int ret;

	u64 mdts_bytes;

	ret = identify_cns(c, NVME_ID_CNS_CTRL, 0, dma);
	if (ret)
		return ret;
	memcpy(c->serial, id->sn, sizeof(c->serial));
	memcpy(c->model, id->mn, sizeof(c->model));
	memcpy(c->firmware, id->fr, sizeof(c->firmware));
	c->max_xfer = P2PNVME_MAX_XFER;
	/* MDTS is a power of two of pages; 52 and more do not fit: no limit */
	if (id->mdts && !check_shl_overflow((u64)mps, id->mdts, &mdts_bytes))
		c->max_xfer = min_t(u64, c->max_xfer, mdts_bytes);
	c->sgl = le32_to_cpu(id->sgls) & 0x3;
	c->oacs = le16_to_cpu(id->oacs);
	c->acl = id->acl + 1;	/* zero-based */

	/* the first active namespace */
	ret = identify_cns(c, NVME_ID_CNS_NS_ACTIVE_LIST, 0, dma);
	if (ret)
		return ret;
	list = c->id_buf;
	c->nsid = le32_to_cpu(list[0]);
	if (!c->nsid) {
		pci_err(c->pdev, "no active namespace\n");
		return -ENODEV;
	}

	ret = identify_cns(c, NVME_ID_CNS_NS, c->nsid, dma);
	if (ret)
		return ret;
	ns = c->id_buf;
	c->nlb = le64_to_cpu(ns->nsze);
	ret = p2pnvme_ns_format(ns, c->max_xfer, &c->lba_shift);
	if (ret) {
		ns_format_refused(c, ns, ret);
		return ret;
	}

	/*
	 * Number of Queues: ask, then take what was granted; twice as many
	 * for the disk, which gets them only if all are granted
	 */
	cmd.features.opcode = nvme_admin_set_features;
	cmd.features.fid = cpu_to_le32(NVME_FEAT_NUM_QUEUES);
	c->nr_ioq = clamp_t(unsigned int, min(p2pnvme_max_io_queues, num_online_cpus()), 1,
			    P2PNVME_MAX_IOQ);
	want = c->nr_ioq * (c->want_diskq ? 2 : 1);
	cmd.features.dword11 = cpu_to_le32((want - 1) | (want - 1) << 16);
	ret = p2pnvme_admin_exec(c, &cmd, &result);
	if (ret)
		return ret;
	granted = min((result & 0xffff) + 1, (result >> 16) + 1);
	c->nr_diskq = c->want_diskq && granted >= want ? c->nr_ioq : 0;
	c->nr_ioq = min(c->nr_ioq, granted);
	return 0;
}

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

/* Return: 0 once the controller is disabled, else what disabling said. */
int p2pnvme_ctrl_shutdown(struct p2pnvme *c)
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
 * p2pnvme_delete_io_queues - have a controller that answers end its own I/O
 * @c: the controller, its I/O queues stopped, the admin queue not
 *
 * As nvme-pci disables a controller that is not dead: Delete I/O
 * Submission Queue for every queue, then Delete I/O Completion Queue, and
 * only then CC.EN = 0. The controller aborts what each SQ still holds
 * (Command Aborted due to SQ Deletion: the command ends with -ECANCELED)
 * and fetches nothing more from it, so that no command of an I/O queue is
 * still on its way in when the enable bit drops. QEMU's nvme depends on
 * that order: its controller reset drains the block layer while it can
 * still fetch from the SQs, and a read fetched then completes into a freed
 * queue (QEMU 7.2 segfaulted within 50 to 200 FLRs with reads in flight).
 *
 * A controller that is not ready, reports a fatal status or is gone is
 * disabled without it; the first deletion that fails (a timeout included,
 * after io_timeout_ms) ends it there, and the disable follows either way.
 */
void p2pnvme_delete_io_queues(struct p2pnvme *c)
{
	static const u8 ops[] = { nvme_admin_delete_sq, nvme_admin_delete_cq };
	u32 csts = readl(c->bar + NVME_REG_CSTS);
	unsigned int i, j;

	if (csts == ~0U || (csts & NVME_CSTS_CFS) || !(csts & NVME_CSTS_RDY))
		return;
	for (j = 0; j < ARRAY_SIZE(ops); j++) {
		for (i = 0; i < c->nr_ioq; i++) {
			struct nvme_command cmd = {};
			u16 status = 0;
			int ret;

			cmd.delete_queue.opcode = ops[j];
			cmd.delete_queue.qid = cpu_to_le16(c->ioq[i].qid);
			ret = p2pnvme_admin_exec_status(c, &cmd, NULL, &status);
			if (ret) {
				pci_dbg(c->pdev, "Delete I/O queue %u (opcode %#x): %d, status %#x; disabling\n",
					c->ioq[i].qid, ops[j], ret, status);
				return;
			}
		}
	}
}

/* ---- bring-up ----------------------------------------------------------- */

int p2pnvme_create_io_queue(struct p2pnvme *c, struct p2pnvme_queue *q)
{
	struct nvme_command cmd = {};
	u16 flags = NVME_QUEUE_PHYS_CONTIG;
	int ret;

	p2pnvme_queue_start(q);
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

/* ---- shadow doorbells --------------------------------------------------- */

/**
 * p2pnvme_dbbuf_alloc - memory for shadow doorbells, if the controller has them
 * @c: the controller, identified, its I/O queues counted
 *
 * Doorbell Buffer Config (OACS bit 8) is what emulated controllers offer:
 * there every MMIO write is a trap to the hypervisor, and with it the
 * controller reads the doorbells from host memory and asks for an MMIO
 * write only when it stopped looking. Two controller pages for the
 * binding (a controller that has gone on writing an event index never
 * writes into freed memory); one holds every queue's words. Without them
 * (no support, too many queues for a page, no memory) doorbells are MMIO
 * writes, as before. The disk's queues (disk.c) ring by MMIO only: no
 * shadow doorbells beside them.
 */
void p2pnvme_dbbuf_alloc(struct p2pnvme *c)
{
	struct device *dev = &c->pdev->dev;
	size_t need = (size_t)(c->nr_ioq + 1) * 2 * c->db_stride * sizeof(__le32);

	if (!(c->oacs & NVME_CTRL_OACS_DBBUF_SUPP) || c->want_diskq)
		return;
	if (need > P2PNVME_CTRL_PAGE) {
		pci_info(c->pdev, "shadow doorbells need %zu bytes, more than a page: doorbells by MMIO\n",
			 need);
		return;
	}
	c->dbbuf_dbs = dmam_alloc_coherent(dev, P2PNVME_CTRL_PAGE, &c->dbbuf_dbs_dma, GFP_KERNEL);
	c->dbbuf_eis = dmam_alloc_coherent(dev, P2PNVME_CTRL_PAGE, &c->dbbuf_eis_dma, GFP_KERNEL);
	if (!c->dbbuf_dbs || !c->dbbuf_eis) {
		pci_warn(c->pdev, "no memory for shadow doorbells: doorbells by MMIO\n");
		c->dbbuf_dbs = NULL;	/* what was allocated goes at unbind */
		c->dbbuf_eis = NULL;
	}
}

/* Every I/O queue back on MMIO doorbells: a disabled controller forgot the buffers. */
static void dbbuf_forget(struct p2pnvme *c)
{
	unsigned int i;

	c->dbbuf_live = false;
	for (i = 0; i < c->nr_ioq; i++)
		p2pnvme_queue_shadow(&c->ioq[i], NULL, NULL, 0);
}

/**
 * p2pnvme_dbbuf_set - let the controller read the doorbells from memory
 * @c: the controller, its I/O queues created and none used yet
 *
 * After every enable (a reset forgets the configuration), if the memory is
 * there and the shadow_doorbells parameter says so: the words zeroed (each
 * queue's tail and head are 0), Doorbell Buffer Config, then each I/O queue
 * writes its doorbells there. A controller that refuses the command keeps
 * MMIO doorbells: said, not fatal. Caller holds reset_lock for write, or is
 * probe.
 *
 * Return: 0, or the admin queue's failure.
 */
int p2pnvme_dbbuf_set(struct p2pnvme *c)
{
	struct nvme_command cmd = {};
	unsigned int i;
	u16 status;
	int ret;

	if (!c->dbbuf_dbs || !c->nr_ioq || !READ_ONCE(p2pnvme_shadow_doorbells))
		return 0;
	memset(c->dbbuf_dbs, 0, P2PNVME_CTRL_PAGE);
	memset(c->dbbuf_eis, 0, P2PNVME_CTRL_PAGE);
	cmd.dbbuf.opcode = nvme_admin_dbbuf;
	cmd.dbbuf.prp1 = cpu_to_le64(c->dbbuf_dbs_dma);
	cmd.dbbuf.prp2 = cpu_to_le64(c->dbbuf_eis_dma);
	ret = p2pnvme_admin_exec_status(c, &cmd, NULL, &status);
	if (ret == -EIO) {
		pci_warn(c->pdev, "Doorbell Buffer Config refused (status %#x): doorbells by MMIO\n",
			 status);
		return 0;
	}
	if (ret)
		return ret;
	for (i = 0; i < c->nr_ioq; i++)
		p2pnvme_queue_shadow(&c->ioq[i], c->dbbuf_dbs, c->dbbuf_eis, c->db_stride);
	c->dbbuf_live = true;
	return 0;
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
	dbbuf_forget(c);
	pci_set_master(c->pdev);	/* a reset turned it off */
	p2pnvme_queue_start(&c->adminq);
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
	ret = p2pnvme_dbbuf_set(c);
	if (ret)
		return ret;
	return set_coalescing(c);
}
