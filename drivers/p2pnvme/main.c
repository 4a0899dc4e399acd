// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: drive an NVMe controller so that its data lands in, or comes
 * from, p2pmem without a bounce through host RAM.
 *
 * The administrator binds a controller with driver_override in place of
 * nvme-pci. The driver brings the controller up itself (admin queue,
 * Identify, I/O queue pairs), and serves transfers between a namespace LBA
 * range and a user buffer (host memory, or a mapping of p2pmem from any
 * provider: /dev/p2pbarN, the kernel's p2pmem/allocate) or an imported
 * dma-buf. p2pmem is mapped with dma_map_sgtable(), which gives the
 * controller bus addresses or says -EREMOTEIO when the topology refuses P2P
 * (the kernel's verdict, cached per provider and client); the transfer then
 * falls back to host bounce pages, or is refused with -EREMOTEIO, by policy.
 * Every I/O is counted by the path it took.
 *
 * The queue engine (engine.c) keeps many commands in flight per queue,
 * takes MSI-X interrupts (or polls), and aborts, resets and cancels; io.c
 * turns user requests into commands; this file is the PCI driver, the char
 * device and its ioctls, sysfs and debugfs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/module.h>
#include <linux/nvme_ioctl.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <linux/p2p_ioctl.h>
#include <p2p_compat.h>

#include "internal.h"

/* An unsigned module parameter that takes only values in [min, max]. */
struct uint_range {
	unsigned int *val;
	unsigned int min;
	unsigned int max;
};

static int uint_range_set(const char *arg, const struct kernel_param *kp)
{
	const struct uint_range *r = kp->arg;
	unsigned int v;

	if (kstrtouint(arg, 0, &v) || v < r->min || v > r->max)
		return -EINVAL;
	WRITE_ONCE(*r->val, v);
	return 0;
}

static int uint_range_get(char *buf, const struct kernel_param *kp)
{
	const struct uint_range *r = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(*r->val));
}

static const struct kernel_param_ops uint_range_ops = {
	.set = uint_range_set,
	.get = uint_range_get,
};

unsigned int p2pnvme_io_timeout_ms = 5000;
static struct uint_range io_timeout_range = { &p2pnvme_io_timeout_ms, 10, 3600000 };
module_param_cb(io_timeout_ms, &uint_range_ops, &io_timeout_range, 0644);
MODULE_PARM_DESC(io_timeout_ms, "Per-command timeout before abort and reset, 10 .. 3600000 (default 5000)");

bool p2pnvme_bounce = true;
module_param_named(bounce, p2pnvme_bounce, bool, 0644);
MODULE_PARM_DESC(bounce, "Bounce p2pmem through host memory when P2P is impossible (default true; false: -EREMOTEIO)");

static unsigned int max_io_queues = P2PNVME_MAX_IOQ;
static struct uint_range max_io_queues_range = { &max_io_queues, 1, P2PNVME_MAX_IOQ };
module_param_cb(max_io_queues, &uint_range_ops, &max_io_queues_range, 0444);
MODULE_PARM_DESC(max_io_queues, "I/O queue pairs to ask for, 1 .. 32, at most one per online CPU (default 32)");

static unsigned int io_queue_depth = 1024;
static struct uint_range io_queue_depth_range = { &io_queue_depth, 16, P2PNVME_MAX_DEPTH };
module_param_cb(io_queue_depth, &uint_range_ops, &io_queue_depth_range, 0444);
MODULE_PARM_DESC(io_queue_depth, "Entries of each I/O queue, 16 .. 4096, at most CAP.MQES + 1 (default 1024)");

static bool poll_mode;
module_param_named(poll, poll_mode, bool, 0444);
MODULE_PARM_DESC(poll, "Poll for I/O completions instead of taking MSI-X interrupts (default false)");

static unsigned int max_inflight_mb = 256;
static struct uint_range max_inflight_range = { &max_inflight_mb, 1, 65536 };
module_param_cb(max_inflight_mb, &uint_range_ops, &max_inflight_range, 0644);
MODULE_PARM_DESC(max_inflight_mb, "MiB of data one open file may have pinned or bounced at once, 1 .. 65536 (default 256)");

unsigned int p2pnvme_max_bounced_reg_mb = 32;
static struct uint_range max_bounced_reg_range = { &p2pnvme_max_bounced_reg_mb, 0, 65536 };
module_param_cb(max_bounced_reg_mb, &uint_range_ops, &max_bounced_reg_range, 0644);
MODULE_PARM_DESC(max_bounced_reg_mb, "MiB of registered host buffers a controller may keep in swiotlb's bounce slots, 0 .. 65536 (default 32)");

/* Interrupt Coalescing (Feature 08h), set at probe and after each reset */
unsigned int p2pnvme_coalesce_entries;
static struct uint_range coalesce_entries_range = { &p2pnvme_coalesce_entries, 0, 256 };
module_param_cb(coalesce_entries, &uint_range_ops, &coalesce_entries_range, 0444);
MODULE_PARM_DESC(coalesce_entries, "Completions per interrupt the controller may gather, 0 .. 256 (default 0: its own setting)");

unsigned int p2pnvme_coalesce_time_us;
static struct uint_range coalesce_time_range = { &p2pnvme_coalesce_time_us, 0, 25500 };
module_param_cb(coalesce_time_us, &uint_range_ops, &coalesce_time_range, 0444);
MODULE_PARM_DESC(coalesce_time_us, "Longest an interrupt may wait for more completions, 0 .. 25500 us in steps of 100 (default 0)");

static dev_t p2pnvme_devt;
static struct cdev p2pnvme_cdev;
static struct class *p2pnvme_class;
static struct dentry *p2pnvme_debugfs;
static struct lock_class_key p2pnvme_io_key;
/* minor -> controller; the xa_lock pairs open() with remove() */
static DEFINE_XARRAY_ALLOC(p2pnvme_minors);

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
	ret = p2pnvme_ns_format(ns, &shift);
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
static int identify(struct p2pnvme *c)
{
	struct nvme_id_ctrl *id = c->id_buf;
	struct nvme_command cmd = {};
	dma_addr_t dma = c->id_dma;
	struct nvme_id_ns *ns;
	u32 result, mps = P2PNVME_CTRL_PAGE;
	__le32 *list;
	int ret;

	u64 mdts_bytes;

	ret = identify_cns(c, NVME_ID_CNS_CTRL, 0, dma);
	if (ret)
		return ret;
	memcpy(c->serial, id->sn, sizeof(c->serial));
	memcpy(c->model, id->mn, sizeof(c->model));
	c->max_xfer = P2PNVME_MAX_XFER;
	/* MDTS is a power of two of pages; 52 and more do not fit: no limit */
	if (id->mdts && !check_shl_overflow((u64)mps, id->mdts, &mdts_bytes))
		c->max_xfer = min_t(u64, c->max_xfer, mdts_bytes);
	c->sgl = le32_to_cpu(id->sgls) & 0x3;
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
	ret = p2pnvme_ns_format(ns, &c->lba_shift);
	if (ret) {
		ns_format_refused(c, ns, ret);
		return ret;
	}

	/* Number of Queues: ask, then take what was granted */
	cmd.features.opcode = nvme_admin_set_features;
	cmd.features.fid = cpu_to_le32(NVME_FEAT_NUM_QUEUES);
	c->nr_ioq = clamp_t(unsigned int, min(max_io_queues, num_online_cpus()), 1,
			    P2PNVME_MAX_IOQ);
	cmd.features.dword11 = cpu_to_le32((c->nr_ioq - 1) | (c->nr_ioq - 1) << 16);
	ret = p2pnvme_admin_exec(c, &cmd, &result);
	if (ret)
		return ret;
	c->nr_ioq = min3(c->nr_ioq, (result & 0xffff) + 1, (result >> 16) + 1);
	return 0;
}

/* ---- char device ------------------------------------------------------- */

static int p2pnvme_open(struct inode *inode, struct file *filp)
{
	struct p2pnvme_file *f;
	struct p2pnvme *c;

	f = kzalloc_obj(*f, GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	xa_lock(&p2pnvme_minors);
	c = xa_load(&p2pnvme_minors, iminor(inode));
	if (c)
		kref_get(&c->kref);
	xa_unlock(&p2pnvme_minors);
	if (!c) {
		kfree(f);
		return -ENODEV;
	}
	f->c = c;
	xa_init_flags(&f->regs, XA_FLAGS_ALLOC);
	filp->private_data = f;
	return nonseekable_open(inode, filp);
}

static int p2pnvme_release(struct inode *inode, struct file *filp)
{
	struct p2pnvme_file *f = filp->private_data;

	p2pnvme_reg_file_release(f);
	kref_put(&f->c->kref, p2pnvme_free);
	kfree(f);
	return 0;
}

/* The queues exist while reset_lock is held for read and the state is below DELETING. */
static long ioc_info(struct p2pnvme *c, unsigned long uarg)
{
	struct p2pnvme_info info;
	int ret = p2p_ioctl_copy_in(&info, sizeof(info),
				    offsetofend(struct p2pnvme_info, reserved2), uarg);

	if (ret)
		return ret;
	if (info.flags || info.reserved || info.reserved2)
		return -EINVAL;
	down_read(&c->reset_lock);
	if (p2pnvme_state(c) >= P2PNVME_DELETING) {
		up_read(&c->reset_lock);
		return -ENODEV;
	}
	info.flags = (c->sgl ? P2PNVME_INFO_F_SGL : 0) | (c->polled ? P2PNVME_INFO_F_POLLED : 0);
	info.nsid = c->nsid;
	info.lba_shift = c->lba_shift;
	info.nlb = c->nlb;
	info.max_xfer = c->max_xfer;
	info.nr_io_queues = c->nr_ioq;
	info.queue_depth = c->ioq[0].depth - 1;
	memcpy(info.serial, c->serial, sizeof(info.serial));
	memcpy(info.model, c->model, sizeof(info.model));
	up_read(&c->reset_lock);
	return p2p_ioctl_copy_out(uarg, &info, sizeof(info));
}

/* A reference on the I/O guard with the controller LIVE, or none. */
static bool io_tryget(struct p2pnvme *c)
{
	/* a reference first, then the state: a freeze waits for us */
	if (!percpu_ref_tryget_live(&c->io_ref))
		return false;
	if (p2pnvme_state(c) == P2PNVME_LIVE)
		return true;
	percpu_ref_put(&c->io_ref);
	return false;
}

/**
 * p2pnvme_io_enter - enter the I/O path
 * @c: the controller
 *
 * Holds the I/O guard (@c->io_ref) with the controller LIVE on success; the
 * caller leaves with p2pnvme_io_exit(). A reset in progress is waited out.
 * A per-CPU reference, not a shared lock: the reset worker and remove()
 * kill it and wait for every holder (p2pnvme_io_freeze()).
 *
 * Return: 0, -ENODEV (the controller is going away or dead) or
 * -ERESTARTSYS (a signal: nothing was done, and the caller writes nothing
 * back, so that the restarted call starts over from the same arguments).
 */
int p2pnvme_io_enter(struct p2pnvme *c)
{
	int ret;

	for (;;) {
		if (io_tryget(c)) {
			/* not recursive: entering inside the guard may wait for a reset */
			rwsem_acquire_read(&c->io_map, 0, 0, _RET_IP_);
			return 0;
		}
		if (p2pnvme_state(c) >= P2PNVME_DELETING)
			return -ENODEV;
		/* the freeze revives the guard before the state leaves RESETTING */
		ret = wait_event_interruptible(c->wq, p2pnvme_state(c) != P2PNVME_RESETTING &&
					       p2pnvme_state(c) != P2PNVME_RECOVERING);
		if (ret)
			return ret;
	}
}

/**
 * p2pnvme_io_tryenter - enter the I/O path if the controller is LIVE now
 * @c: the controller
 *
 * As p2pnvme_io_enter(), but never waits: for those that must not hold up
 * a reset (the io_uring watchdog), and that simply come back later.
 * Leave with p2pnvme_io_exit().
 *
 * Return: true when inside the I/O guard with the controller LIVE.
 */
bool p2pnvme_io_tryenter(struct p2pnvme *c)
{
	if (!io_tryget(c))
		return false;
	rwsem_acquire_read(&c->io_map, 0, 1, _RET_IP_);
	return true;
}

/**
 * p2pnvme_io_exit - leave the I/O path entered with p2pnvme_io_enter() or
 *	p2pnvme_io_tryenter()
 * @c: the controller
 */
void p2pnvme_io_exit(struct p2pnvme *c)
{
	rwsem_release(&c->io_map, _RET_IP_);
	percpu_ref_put(&c->io_ref);
}

/*
 * The last holder left a killed guard: possibly from an RCU callback that
 * holds no reference on @c, so the completion is the last thing touched;
 * the freeze that waits for it may free @c right after.
 */
static void p2pnvme_io_ref_zero(struct percpu_ref *ref)
{
	struct p2pnvme *c = container_of(ref, struct p2pnvme, io_ref);

	complete(&c->io_drained);
}

/**
 * p2pnvme_io_freeze - wait until nobody is inside the I/O guard
 * @c: the controller, not LIVE any more (RESETTING, DELETING or DEAD), so
 *     that whoever enters from now on leaves again at once
 *
 * Kills the guard's reference and waits for every holder to leave (each
 * I/O ioctl's batch is over or cancelled, each io_uring submission has
 * queued its commands). p2pnvme_io_thaw() revives it. Sleeps.
 */
void p2pnvme_io_freeze(struct p2pnvme *c)
{
	/* lockdep: a freeze inside the guard, or under what a holder waits for */
	rwsem_acquire(&c->io_map, 0, 0, _THIS_IP_);
	rwsem_release(&c->io_map, _THIS_IP_);
	reinit_completion(&c->io_drained);
	percpu_ref_kill(&c->io_ref);
	wait_for_completion(&c->io_drained);
}

/**
 * p2pnvme_io_thaw - let the I/O path in again after p2pnvme_io_freeze()
 * @c: the controller; called before its state leaves RESETTING
 */
void p2pnvme_io_thaw(struct p2pnvme *c)
{
	percpu_ref_resurrect(&c->io_ref);
}

/*
 * May this file do @io? Writes need an fd opened for writing, as
 * nvme_cmd_allowed() has it for nvme-pci's passthrough (-EACCES).
 */
int p2pnvme_io_allowed(struct file *filp, const struct p2pnvme_io *io)
{
	if ((io->op == P2PNVME_OP_WRITE || io->op == P2PNVME_OP_WRITE_ZEROES) &&
	    !(filp->f_mode & FMODE_WRITE))
		return -EACCES;
	return 0;
}

/*
 * Account @ios against the file's max_inflight_mb: -E2BIG for a batch that
 * can never fit, -EAGAIN while the file's other batches hold the room.
 */
int p2pnvme_inflight_get(struct p2pnvme_file *f, const struct p2pnvme_io *ios,
			 unsigned int nr, u64 *bytes)
{
	u64 limit = (u64)READ_ONCE(max_inflight_mb) << 20, sum = 0;
	unsigned int i;

	/* registered buffers pin nothing per transfer: not counted */
	for (i = 0; i < nr; i++)
		if ((ios[i].op == P2PNVME_OP_READ || ios[i].op == P2PNVME_OP_WRITE) &&
		    !(ios[i].flags & P2PNVME_IO_F_REGISTERED))
			sum += ios[i].len;	/* each at most P2PNVME_IO_MAX_LEN */
	if (sum > limit)
		return -E2BIG;
	*bytes = 0;
	if (!sum)	/* no shared cache line for what pins nothing */
		return 0;
	if (atomic64_add_return(sum, &f->inflight) > limit) {
		atomic64_sub(sum, &f->inflight);
		return -EAGAIN;
	}
	*bytes = sum;
	return 0;
}

static long ioc_io(struct p2pnvme_file *f, struct file *filp, unsigned long uarg)
{
	struct p2pnvme *c = f->c;
	struct p2pnvme_io io;
	unsigned int failed;
	u64 bytes;
	int ret = p2p_ioctl_copy_in(&io, sizeof(io), offsetofend(struct p2pnvme_io, reserved),
				    uarg);

	if (ret)
		return ret;
	p2pnvme_io_clear_out(&io);
	ret = p2pnvme_check_io(&io, c->lba_shift, c->nlb);
	if (!ret)
		ret = p2pnvme_io_allowed(filp, &io);
	if (!ret)
		ret = p2pnvme_inflight_get(f, &io, 1, &bytes);
	if (ret)
		return ret;
	ret = p2pnvme_run_batch(c, f, &io, 1, &failed);
	p2pnvme_inflight_put(f, bytes);
	if (ret == -ERESTARTSYS)
		return ret;	/* nothing was submitted, nothing is written */
	if (p2p_ioctl_copy_out(uarg, &io, sizeof(io)))
		return -EFAULT;
	return ret;
}

static long ioc_submit(struct p2pnvme_file *f, struct file *filp, unsigned long uarg)
{
	struct p2pnvme_submit __user *usub = (void __user *)uarg;
	struct p2pnvme *c = f->c;
	struct p2pnvme_submit sub;
	struct p2pnvme_io *ios;
	unsigned int i;
	u64 bytes;
	size_t size;
	int ret = p2p_ioctl_copy_in(&sub, sizeof(sub), offsetofend(struct p2pnvme_submit, ios),
				    uarg);

	if (ret)
		return ret;
	if (sub.flags || !sub.nr || sub.nr > P2PNVME_SUBMIT_MAX)
		return -EINVAL;
	size = array_size(sub.nr, sizeof(*ios));
	ios = memdup_user(u64_to_user_ptr(sub.ios), size);
	if (IS_ERR(ios))
		return PTR_ERR(ios);

	/* every entry is checked before anything is pinned or submitted */
	for (i = 0; i < sub.nr; i++) {
		p2pnvme_io_clear_out(&ios[i]);
		ret = ios[i].argsz == sizeof(*ios) ? 0 : -EINVAL;
		if (!ret)
			ret = p2pnvme_check_io(&ios[i], c->lba_shift, c->nlb);
		if (!ret)
			ret = p2pnvme_io_allowed(filp, &ios[i]);
		if (ret) {
			sub.failed = i;
			goto out_failed;
		}
	}
	ret = p2pnvme_inflight_get(f, ios, sub.nr, &bytes);
	if (ret)
		goto out_free;
	sub.failed = sub.nr;
	ret = p2pnvme_run_batch(c, f, ios, sub.nr, &sub.failed);
	p2pnvme_inflight_put(f, bytes);
	if (ret == -ERESTARTSYS)
		goto out_free;	/* nothing was submitted, nothing is written */
	if (copy_to_user(u64_to_user_ptr(sub.ios), ios, size))
		ret = -EFAULT;
out_failed:
	if (put_user(sub.failed, &usub->failed))
		ret = -EFAULT;
out_free:
	kfree(ios);
	return ret;
}

static long p2pnvme_ioctl(struct file *filp, unsigned int cmd, unsigned long uarg)
{
	struct p2pnvme_file *f = filp->private_data;

	switch (cmd) {
	case NVME_IOCTL_ADMIN_CMD:
		return p2pnvme_ioc_admin(f->c, uarg);
	case P2PNVME_IOC_INFO:
		return ioc_info(f->c, uarg);
	case P2PNVME_IOC_IO:
		return ioc_io(f, filp, uarg);
	case P2PNVME_IOC_SUBMIT:
		return ioc_submit(f, filp, uarg);
	case P2PNVME_IOC_BUF_REGISTER:
		return p2pnvme_ioc_buf_register(f, uarg);
	case P2PNVME_IOC_BUF_UNREGISTER:
		return p2pnvme_ioc_buf_unregister(f, uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations p2pnvme_fops = {
	.owner = THIS_MODULE,
	.open = p2pnvme_open,
	.release = p2pnvme_release,
	.unlocked_ioctl = p2pnvme_ioctl,
#if P2P_HAVE_URING_CMD
	.uring_cmd = p2pnvme_uring_cmd,
	.uring_cmd_iopoll = p2pnvme_uring_cmd_iopoll,
#endif
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
	STAT_ATTR(aborts), STAT_ATTR(resets), STAT_ATTR(cancelled),
	STAT_ATTR(irqs), STAT_ATTR(reads_dmabuf), STAT_ATTR(writes_dmabuf),
	STAT_ATTR(bytes_dmabuf), STAT_ATTR(queue_full_waits), STAT_ATTR(queue_full_requeued),
};

/* The counters as of now, minus what they were at the last reset. */
static void counts_raw(struct p2pnvme *c, struct p2pnvme_counts *out)
{
	unsigned int cpu, i, w, p, b;

	memset(out, 0, sizeof(*out));
	for_each_possible_cpu(cpu) {
		struct p2pnvme_pcpu *pc = per_cpu_ptr(c->pcpu, cpu);

		for (i = 0; i < ST_NR; i++)
			out->stats[i] += local64_read(&pc->stats[i]);
		for (w = 0; w < 2; w++) {
			for (p = 0; p < LAT_PATHS; p++) {
				struct p2pnvme_lat *l = &out->lat[w][p];

				l->count += local64_read(&pc->lat_count[w][p]);
				l->sum_ns += local64_read(&pc->lat_sum[w][p]);
				for (b = 0; b < P2PNVME_LAT_BUCKETS; b++)
					l->hist[b] += local64_read(&pc->lat_hist[w][p][b]);
			}
		}
	}
}

/**
 * p2pnvme_counts - the counters since the last reset, summed over the CPUs
 * @c: the controller
 * @out: filled in
 */
void p2pnvme_counts(struct p2pnvme *c, struct p2pnvme_counts *out)
{
	u64 *o = (u64 *)out, *base = (u64 *)&c->base;
	size_t i;

	BUILD_BUG_ON(sizeof(*out) % sizeof(u64));
	mutex_lock(&c->stats_lock);
	counts_raw(c, out);
	for (i = 0; i < sizeof(*out) / sizeof(u64); i++)
		o[i] -= base[i];
	mutex_unlock(&c->stats_lock);
}

static ssize_t stat_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);
	struct p2pnvme_counts *n = kzalloc_obj(*n, GFP_KERNEL);
	ssize_t ret;

	if (!n)
		return -ENOMEM;
	p2pnvme_counts(c, n);
	ret = sysfs_emit(buf, "%llu\n", n->stats[attr - stat_attrs]);
	kfree(n);
	return ret;
}

/*
 * stats/latency_<read|write>_<path>: count, sum and maximum in ns, then the
 * P2PNVME_LAT_BUCKETS buckets of the log2 histogram in microseconds: an
 * array of one type, as sysfs allows.
 */
static ssize_t lat_show(struct device *dev, struct device_attribute *attr, char *buf);

#define LAT_ATTR(name)	__ATTR(name, 0444, lat_show, NULL)

/* [write * LAT_PATHS + path] */
static struct device_attribute lat_attrs[2 * LAT_PATHS] = {
	LAT_ATTR(latency_read_p2p), LAT_ATTR(latency_read_bounce),
	LAT_ATTR(latency_read_host), LAT_ATTR(latency_read_dmabuf),
	LAT_ATTR(latency_write_p2p), LAT_ATTR(latency_write_bounce),
	LAT_ATTR(latency_write_host), LAT_ATTR(latency_write_dmabuf),
};

static ssize_t lat_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);
	struct p2pnvme_counts *n = kzalloc_obj(*n, GFP_KERNEL);
	unsigned int i = attr - lat_attrs, b;
	struct p2pnvme_lat *l;
	int len;

	if (!n)
		return -ENOMEM;
	p2pnvme_counts(c, n);
	l = &n->lat[i / LAT_PATHS][i % LAT_PATHS];
	len = sysfs_emit(buf, "%llu %llu %lld", l->count, l->sum_ns,
			 (long long)atomic64_read(&c->lat_max[i / LAT_PATHS][i % LAT_PATHS]));
	for (b = 0; b < P2PNVME_LAT_BUCKETS; b++)
		len += sysfs_emit_at(buf, len, " %llu", l->hist[b]);
	kfree(n);
	return len + sysfs_emit_at(buf, len, "\n");
}

/* stats/inflight: commands in flight now, per I/O queue */
static ssize_t inflight_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);
	unsigned int i;
	int len = 0;

	down_read(&c->reset_lock);	/* the queues stay while we look */
	for (i = 0; i < c->nr_ioq && p2pnvme_state(c) < P2PNVME_DELETING; i++)
		len += sysfs_emit_at(buf, len, "%s%u", i ? " " : "",
				     p2pnvme_queue_inflight(&c->ioq[i]));
	up_read(&c->reset_lock);
	return len + sysfs_emit_at(buf, len, "\n");
}
static DEVICE_ATTR_RO(inflight);

/* stats/reset: writing 1 zeroes every counter and histogram */
static ssize_t reset_store(struct device *dev, struct device_attribute *attr, const char *buf,
			   size_t count)
{
	struct p2pnvme *c = dev_get_drvdata(dev);
	unsigned int i, j;
	bool val;
	int ret = kstrtobool(buf, &val);

	if (ret)
		return ret;
	if (!val)
		return -EINVAL;
	/* the per CPU counters are not touched: readers subtract @base */
	mutex_lock(&c->stats_lock);
	counts_raw(c, &c->base);
	for (i = 0; i < 2; i++)
		for (j = 0; j < LAT_PATHS; j++)
			atomic64_set(&c->lat_max[i][j], 0);
	mutex_unlock(&c->stats_lock);
	pci_dbg(c->pdev, "counters reset by %s\n", current->comm);
	return count;
}
static DEVICE_ATTR_WO(reset);

/* the counters, the latencies, inflight and reset */
static struct attribute *stat_attr_list[ST_NR + 2 * LAT_PATHS + 2 + 1];

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
	u16 sq_tail, inflight_max;
	bool stopped;

	/* the completion side as the reaper left it a moment ago */
	spin_lock(&q->sq_lock);
	sq_tail = q->sq_tail;
	inflight_max = q->inflight_max;
	stopped = q->stopped;
	spin_unlock(&q->sq_lock);
	seq_printf(s, "%u %u %d %u %u %u %u %u %u %pad %pad\n", q->qid, q->depth, q->vector,
		   sq_tail, READ_ONCE(q->cq_head), READ_ONCE(q->cq_phase),
		   p2pnvme_queue_inflight(q), inflight_max, stopped, &q->sq_dma, &q->cq_dma);
}

static int queues_show(struct seq_file *s, void *unused)
{
	static const char * const states[] = { "live", "resetting", "recovering", "deleting",
					       "dead" };
	struct p2pnvme *c = s->private;
	unsigned int i;

	seq_printf(s, "# %s\n", states[p2pnvme_state(c)]);
	seq_puts(s, "qid depth vector sq_tail cq_head phase inflight max_inflight stopped sq_dma cq_dma\n");
	show_queue(s, &c->adminq);
	for (i = 0; i < c->nr_ioq; i++)
		show_queue(s, &c->ioq[i]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(queues);

/* debugfs uring: io_uring requests not released yet, doorbells left to plugs */
static int uring_show(struct seq_file *s, void *unused)
{
	struct p2pnvme *c = s->private;

	seq_printf(s, "requests %d plugged %d\n", atomic_read(&c->async_live),
		   atomic_read(&c->async_plugged));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(uring);

static int buffers_show(struct seq_file *s, void *unused)
{
	return p2pnvme_reg_show(s, unused);
}
DEFINE_SHOW_ATTRIBUTE(buffers);

/* ---- PCI driver -------------------------------------------------------- */

/*
 * MSI-X: vector 0 stays with the (polled) admin queue, I/O queue i gets
 * vector i, spread over the CPUs by the IRQ core (managed affinity, as
 * nvme-pci); each CPU submits to the queue whose interrupt it takes.
 */
static int setup_irqs(struct p2pnvme *c)
{
	struct irq_affinity affd = { .pre_vectors = 1 };
	struct pci_dev *pdev = c->pdev;
	const struct cpumask *mask;
	unsigned int cpu, i;
	int nvec;

	c->cpu_queue = devm_kcalloc(&pdev->dev, nr_cpu_ids, sizeof(*c->cpu_queue), GFP_KERNEL);
	if (!c->cpu_queue)
		return -ENOMEM;
	c->polled = poll_mode;
	if (!c->polled) {
		nvec = pci_alloc_irq_vectors_affinity(pdev, 2, c->nr_ioq + 1,
						      PCI_IRQ_MSIX | PCI_IRQ_AFFINITY, &affd);
		if (nvec < 0) {
			pci_info(pdev, "no MSI-X (%d): polling for completions\n", nvec);
			c->polled = true;
		} else {
			c->nr_ioq = min_t(unsigned int, c->nr_ioq, nvec - 1);
		}
	}
	for_each_possible_cpu(cpu)
		c->cpu_queue[cpu] = cpu % c->nr_ioq;
	for (i = 0; !c->polled && i < c->nr_ioq; i++) {
		mask = pci_irq_get_affinity(pdev, i + 1);
		if (!mask)
			continue;
		for_each_cpu(cpu, mask)
			c->cpu_queue[cpu] = i;
	}
	return 0;
}

static int setup_io_queue(struct p2pnvme *c, unsigned int i)
{
	struct device *dev = &c->pdev->dev;
	struct p2pnvme_queue *q = &c->ioq[i];
	u16 depth = min_t(u32, READ_ONCE(io_queue_depth), NVME_CAP_MQES(c->cap) + 1);
	const char *name;
	int ret;

	ret = p2pnvme_queue_alloc(c, q, i + 1, depth);
	if (ret)
		return ret;
	if (!c->polled) {
		name = devm_kasprintf(dev, GFP_KERNEL, "p2pnvme:%s:q%u", pci_name(c->pdev), i + 1);
		if (!name)
			return -ENOMEM;
		ret = devm_request_irq(dev, pci_irq_vector(c->pdev, i + 1), p2pnvme_irq, 0,
				       name, q);
		if (ret)
			return ret;
		q->vector = i + 1;	/* free_irqs() frees only what was requested */
	}
	return p2pnvme_create_io_queue(c, q);
}

/* Before the controller struct goes: no handler may run on it afterwards. */
static void free_irqs(struct p2pnvme *c)
{
	unsigned int i;

	for (i = 0; c->ioq && i < c->nr_ioq; i++)
		if (c->ioq[i].vector >= 0)
			devm_free_irq(&c->pdev->dev, pci_irq_vector(c->pdev, c->ioq[i].vector),
				      &c->ioq[i]);
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
	/* as nvme-pci: PRPs stay valid through swiotlb, SGL segments are u32 */
	dma_set_min_align_mask(dev, P2PNVME_CTRL_PAGE - 1);
	dma_set_max_seg_size(dev, 0xffffffff);

	c = kzalloc_obj(*c, GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->pcpu = alloc_percpu(struct p2pnvme_pcpu);
	if (!c->pcpu) {
		kfree(c);
		return -ENOMEM;
	}
	if (percpu_ref_init(&c->io_ref, p2pnvme_io_ref_zero, PERCPU_REF_ALLOW_REINIT,
			    GFP_KERNEL)) {
		free_percpu(c->pcpu);
		kfree(c);
		return -ENOMEM;
	}
	mutex_init(&c->stats_lock);
	kref_init(&c->kref);
	c->pdev = pci_dev_get(pdev);
	init_rwsem(&c->reset_lock);
	init_completion(&c->io_drained);
	lockdep_init_map(&c->io_map, "p2pnvme_io", &p2pnvme_io_key, 0);
	spin_lock_init(&c->state_lock);
	mutex_init(&c->pt_lock);
	c->state = P2PNVME_RESETTING;	/* not live until probe is done: I/O waits */
	INIT_WORK(&c->reset_work, p2pnvme_reset_work);
	init_waitqueue_head(&c->wq);
	p2pnvme_async_init(c);
	p2pnvme_reg_init(c);
	/* what one segment may hold: swiotlb, for one, maps 256 KiB at most */
	c->max_seg = max_t(size_t, PAGE_SIZE,
			   min_t(size_t, dma_max_mapping_size(dev), dma_get_max_seg_size(dev)) &
			   PAGE_MASK);
	c->acl = 1;
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
	c->id_buf = dmam_alloc_coherent(dev, PAGE_SIZE, &c->id_dma, GFP_KERNEL);
	c->pt_buf = dmam_alloc_coherent(dev, P2PNVME_PT_MAX, &c->pt_dma, GFP_KERNEL);
	if (!c->id_buf || !c->pt_buf) {
		ret = -ENOMEM;
		goto err_put;
	}

	ret = p2pnvme_queue_alloc(c, &c->adminq, 0, P2PNVME_AQ_DEPTH);
	if (ret)
		goto err_put;
	/* admin queue only, to learn how many I/O queues there will be */
	c->nr_ioq = 0;
	ret = p2pnvme_ctrl_enable(c);
	if (!ret)
		ret = identify(c);
	if (!ret)
		ret = setup_irqs(c);
	if (ret)
		goto err_disable;

	c->ioq = devm_kcalloc(dev, c->nr_ioq, sizeof(*c->ioq), GFP_KERNEL);
	if (!c->ioq) {
		ret = -ENOMEM;
		goto err_disable;
	}
	for (i = 0; i < c->nr_ioq; i++)
		c->ioq[i].vector = -1;	/* free_irqs() after a failure below */
	for (i = 0; i < c->nr_ioq; i++) {
		ret = setup_io_queue(c, i);
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
	debugfs_create_file("uring", 0400, c->debugfs, c, &uring_fops);
	debugfs_create_file("buffers", 0400, c->debugfs, c, &buffers_fops);
	pci_save_state(pdev);	/* for the slot reset of a PCI error's recovery */
	/* last: an early opener of the minor saw RESETTING and waited */
	p2pnvme_change_state(c, P2PNVME_LIVE);
	pci_info(pdev, "p2pnvme%d: ns %u, %llu x %u B, %u I/O queues of %u, %s, max %u KiB/cmd%s\n",
		 c->minor, c->nsid, c->nlb, 1 << c->lba_shift, c->nr_ioq, c->ioq[0].depth - 1,
		 c->polled ? "polled" : "MSI-X", c->max_xfer >> 10, c->sgl ? ", SGL" : "");
	return 0;

err_minor:
	xa_erase(&p2pnvme_minors, c->minor);
err_disable:
	/* a file opened meanwhile finds DEAD, never a half-built controller */
	down_write(&c->reset_lock);
	p2pnvme_change_state(c, P2PNVME_DEAD);
	up_write(&c->reset_lock);
	p2pnvme_ctrl_disable(c);
	pci_clear_master(pdev);
	free_irqs(c);
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

	/* no new I/O, no new reset; a queued reset that never ran is dropped */
	p2pnvme_change_state(c, P2PNVME_DELETING);
	if (cancel_work_sync(&c->reset_work))
		kref_put(&c->kref, p2pnvme_free);
	if (p2pnvme_state(c) == P2PNVME_DELETING)
		p2pnvme_quiesce(c);

	/* every I/O ioctl has returned; later ones on open files see DEAD */
	p2pnvme_io_freeze(c);
	down_write(&c->reset_lock);	/* and every reader of the queues */
	p2pnvme_change_state(c, P2PNVME_DEAD);
	up_write(&c->reset_lock);
	/*
	 * Every command is over and no submitter is inside the I/O guard any
	 * more: the io_uring requests are released now, before the queues go.
	 */
	p2pnvme_async_drain(c);
	p2pnvme_reg_remove(c);	/* no mapping outlives the binding */
	free_irqs(c);
	kref_put(&c->kref, p2pnvme_free);	/* the binding's reference */
}

/* Reboot, kexec, poweroff: an orderly CC.SHN, as nvme-pci does. */
static void p2pnvme_shutdown(struct pci_dev *pdev)
{
	struct p2pnvme *c = pci_get_drvdata(pdev);

	if (!p2pnvme_change_state(c, P2PNVME_DELETING))
		return;		/* DEAD: nothing to shut down */
	if (cancel_work_sync(&c->reset_work))
		kref_put(&c->kref, p2pnvme_free);	/* the queued reset's */
	p2pnvme_quiesce(c);
}

/*
 * PCI error recovery (AER, DPC), as nvme-pci does it: a frozen link stops
 * everything (bus mastering off, commands in flight fail with -EIO), the
 * core resets the slot, resume brings the controller up again; a permanent
 * failure takes it out of service.
 */
static pci_ers_result_t p2pnvme_error_detected(struct pci_dev *pdev, pci_channel_state_t state)
{
	struct p2pnvme *c = pci_get_drvdata(pdev);

	switch (state) {
	case pci_channel_io_normal:
		return PCI_ERS_RESULT_CAN_RECOVER;
	case pci_channel_io_frozen:
		pci_warn(pdev, "frozen state error detected, reset controller\n");
		p2pnvme_error_stop(c, -EIO);
		return PCI_ERS_RESULT_NEED_RESET;
	case pci_channel_io_perm_failure:
		pci_warn(pdev, "failure state error detected, request disconnect\n");
		p2pnvme_error_stop(c, -ENODEV);
		return PCI_ERS_RESULT_DISCONNECT;
	}
	return PCI_ERS_RESULT_NEED_RESET;
}

static pci_ers_result_t p2pnvme_slot_reset(struct pci_dev *pdev)
{
	pci_info(pdev, "restart after slot reset\n");
	pci_restore_state(pdev);
	return PCI_ERS_RESULT_RECOVERED;
}

static void p2pnvme_resume(struct pci_dev *pdev)
{
	struct p2pnvme *c = pci_get_drvdata(pdev);
	int ret = p2pnvme_error_resume(c);

	/* > 0: after a recoverable error of another device below the same bridge */
	if (ret > 0)
		return;
	if (ret)
		pci_err(pdev, "controller did not come back after the error; out of service\n");
	else
		pci_info(pdev, "controller back in service after the error\n");
}

/*
 * A reset of the function by the PCI core (an FLR through sysfs or VFIO, a
 * bus or slot reset of a sibling that takes this one along), with the
 * device lock held from prepare to done: as nvme-pci, the controller is
 * stopped while it can still answer, and enabled again afterwards; I/O
 * waits meanwhile.
 */
static void p2pnvme_pci_reset_prepare(struct pci_dev *pdev)
{
	p2pnvme_reset_prepare(pci_get_drvdata(pdev));
}

static void p2pnvme_pci_reset_done(struct pci_dev *pdev)
{
	p2pnvme_reset_done(pci_get_drvdata(pdev));
}

static const struct pci_error_handlers p2pnvme_err_handler = {
	.error_detected = p2pnvme_error_detected,
	.slot_reset = p2pnvme_slot_reset,
	.resume = p2pnvme_resume,
	.reset_prepare = p2pnvme_pci_reset_prepare,
	.reset_done = p2pnvme_pci_reset_done,
};

static struct pci_driver p2pnvme_driver = {
	.name = KBUILD_MODNAME,
	.id_table = NULL,	/* bind with driver_override in place of nvme */
	.probe = p2pnvme_probe,
	.remove = p2pnvme_remove,
	.shutdown = p2pnvme_shutdown,
	.err_handler = &p2pnvme_err_handler,
};

static int __init p2pnvme_init(void)
{
	int i, ret;

	for (i = 0; i < ST_NR; i++)
		stat_attr_list[i] = &stat_attrs[i].attr;
	for (i = 0; i < 2 * LAT_PATHS; i++)
		stat_attr_list[ST_NR + i] = &lat_attrs[i].attr;
	stat_attr_list[ST_NR + 2 * LAT_PATHS] = &dev_attr_inflight.attr;
	stat_attr_list[ST_NR + 2 * LAT_PATHS + 1] = &dev_attr_reset.attr;
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

P2P_IMPORT_NS("DMA_BUF");
MODULE_DESCRIPTION("NVMe client that moves data straight to and from p2pmem");
MODULE_VERSION(P2P_VERSION);
MODULE_LICENSE("GPL");
