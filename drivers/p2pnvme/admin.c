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
#include <linux/capability.h>
#include <linux/nvme_ioctl.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>
#include <p2p_compat.h>

#include "internal.h"

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
 * @lba_shift: out: log2 of the LBA size
 *
 * The format index has its upper bits in FLBAS 6:5 (NVMe 2.0, more than 16
 * formats) and must name one of the NLBAF + 1 formats the namespace lists.
 * Metadata is refused, as nvme core gives such a namespace capacity 0
 * unless it can handle it: separate metadata would be written to MPTR (bus
 * address 0 here), and with extended LBAs a transfer is nlb * (ds + ms)
 * bytes, more than the buffer the driver describes.
 *
 * Return: 0, -EINVAL for an index past NLBAF, -EOPNOTSUPP for metadata or
 * an LBA size outside 512 bytes .. PAGE_SIZE.
 */
int p2pnvme_ns_format(const struct nvme_id_ns *ns, u32 *lba_shift)
{
	u8 idx = nvme_lbaf_index(ns->flbas);

	if (idx > ns->nlbaf || idx >= ARRAY_SIZE(ns->lbaf))
		return -EINVAL;
	if (ns->lbaf[idx].ms)
		return -EOPNOTSUPP;
	if (ns->lbaf[idx].ds < 9 || ns->lbaf[idx].ds > PAGE_SHIFT)
		return -EOPNOTSUPP;
	*lba_shift = ns->lbaf[idx].ds;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_ns_format);

/*
 * The passthrough's data goes through a buffer of the controller's own
 * (P2PNVME_PT_MAX bytes, PRP1 and PRP2 always describe all of it), zeroed
 * before each command, and is copied out after. Returns the NVMe status
 * (SCT << 8 | SC) when the controller fails the command, as nvme-pci does,
 * a negative errno otherwise: -EPERM for a command the driver never sends
 * for userspace, -EACCES for one that needs CAP_SYS_ADMIN, -EINVAL for a
 * transfer longer than data_len or the driver's buffer.
 */
long p2pnvme_ioc_admin(struct p2pnvme *c, unsigned long uarg)
{
	struct nvme_passthru_cmd __user *up = (void __user *)uarg;
	struct nvme_passthru_cmd pt;
	struct nvme_command cmd = {};
	void *data = NULL;
	u32 result = 0;
	u16 status = 0;
	u64 xfer;
	long ret;

	if (copy_from_user(&pt, up, sizeof(pt)))
		return -EFAULT;
	/*
	 * Everything else would pull the queues from under p2pnvme or change
	 * the drive (Format, Firmware, queue management, Set Features).
	 */
	if (pt.opcode != nvme_admin_identify && pt.opcode != nvme_admin_get_log_page &&
	    pt.opcode != nvme_admin_get_features)
		return -EPERM;
	if (pt.flags || pt.rsvd1 || pt.metadata || pt.metadata_len || pt.cdw2 || pt.cdw3)
		return -EINVAL;
	if (pt.data_len > P2PNVME_PT_MAX || (pt.data_len && !pt.addr))
		return -EINVAL;

	cmd.common.opcode = pt.opcode;
	cmd.common.nsid = cpu_to_le32(pt.nsid);
	cmd.common.cdw10 = cpu_to_le32(pt.cdw10);
	cmd.common.cdw11 = cpu_to_le32(pt.cdw11);
	cmd.common.cdw12 = cpu_to_le32(pt.cdw12);
	cmd.common.cdw13 = cpu_to_le32(pt.cdw13);
	cmd.common.cdw14 = cpu_to_le32(pt.cdw14);
	cmd.common.cdw15 = cpu_to_le32(pt.cdw15);
	if (!p2pnvme_admin_unprivileged(&cmd) && !capable(CAP_SYS_ADMIN))
		return -EACCES;
	ret = p2pnvme_admin_xfer_len(&cmd, &xfer);
	if (ret)
		return ret;
	if (xfer > pt.data_len)
		return -EINVAL;
	if (pt.data_len && !access_ok(u64_to_user_ptr(pt.addr), pt.data_len))
		return -EFAULT;
	/* the whole buffer: the controller never follows a pointer left 0 */
	cmd.common.dptr.prp1 = cpu_to_le64(c->pt_dma);
	cmd.common.dptr.prp2 = cpu_to_le64(c->pt_dma + P2PNVME_CTRL_PAGE);

	/*
	 * The copy-out faults outside the guard: a user buffer stuck in a
	 * fault (userfaultfd, FUSE) must hold up neither a reset nor an unbind.
	 */
	if (pt.data_len) {
		data = kmalloc(pt.data_len, GFP_KERNEL);
		if (!data)
			return -ENOMEM;
	}
	ret = p2pnvme_io_enter(c);
	if (ret)
		goto out_free;
	mutex_lock(&c->pt_lock);
	memset(c->pt_buf, 0, P2PNVME_PT_MAX);
	ret = p2pnvme_admin_exec_status(c, &cmd, &result, &status);
	if (!ret && data)
		memcpy(data, c->pt_buf, pt.data_len);
	mutex_unlock(&c->pt_lock);
	p2pnvme_io_exit(c);
	if (!ret && data && copy_to_user(u64_to_user_ptr(pt.addr), data, pt.data_len))
		ret = -EFAULT;
out_free:
	kfree(data);
	if (ret == -EIO)
		ret = status;	/* the controller's answer, not an errno */
	if (ret >= 0 && put_user(result, &up->result))
		return -EFAULT;
	return ret;
}
