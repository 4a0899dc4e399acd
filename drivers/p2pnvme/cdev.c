// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: the char device /dev/p2pnvmeN and its ioctls: INFO, IO,
 * SUBMIT, the registered buffers' REGISTER and UNREGISTER, the file
 * command's FILE_SUBMIT (file.c), nvme-pci's admin passthrough, and the
 * io_uring passthrough's entry. Each ioctl checks its argument before
 * anything reaches the controller; the requests themselves are io.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/nvme_ioctl.h>
#include <linux/ptrace.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <linux/p2p_ioctl.h>
#include <p2p_compat.h>

#include "driver.h"
#include "uring.h"
#include "io.h"
#include "file.h"
#include "reg.h"
#include "queue.h"

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
	spin_lock_init(&f->fc_lock);
	filp->private_data = f;
	return nonseekable_open(inode, filp);
}

static int p2pnvme_release(struct inode *inode, struct file *filp)
{
	struct p2pnvme_file *f = filp->private_data;

	p2pnvme_reg_file_release(f);
	p2pnvme_file_cmd_cache_free(f);
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

/*
 * One transfer of an ioctl: checked against the namespace and the file's
 * rights (@allowed), charged to the file's bytes in flight, run.
 * Return: -errno before anything was submitted (*@ran false, if asked),
 * or the batch's answer.
 */
static int run_one(struct p2pnvme_file *f, struct file *filp, struct p2pnvme_io *io,
		   int (*allowed)(struct file *filp, const struct p2pnvme_io *io), bool *ran)
{
	struct p2pnvme *c = f->c;
	unsigned int failed;
	u64 bytes;
	int ret = p2pnvme_check_io(io, c->lba_shift, c->nlb);

	if (ran)
		*ran = false;
	if (!ret)
		ret = allowed(filp, io);
	if (!ret)
		ret = p2pnvme_inflight_get(f, io, 1, &bytes);
	if (ret)
		return ret;
	if (ran)
		*ran = true;
	ret = p2pnvme_run_batch(c, f, io, 1, &failed);
	p2pnvme_inflight_put(f, bytes);
	return ret;
}

static long ioc_io(struct p2pnvme_file *f, struct file *filp, unsigned long uarg)
{
	struct p2pnvme_io io;
	bool ran;
	int ret = p2p_ioctl_copy_in(&io, sizeof(io), offsetofend(struct p2pnvme_io, reserved),
				    uarg);

	if (ret)
		return ret;
	p2pnvme_io_clear_out(&io);
	ret = run_one(f, filp, &io, p2pnvme_io_allowed, &ran);
	if (!ran || ret == -ERESTARTSYS)
		return ret;	/* nothing was submitted, nothing is written */
	io.status = p2pnvme_io_status(&io);
	if (p2p_ioctl_copy_out(uarg, &io, sizeof(io)))
		return -EFAULT;
	return ret;
}

/*
 * NVME_IOCTL_IO_CMD and NVME_IOCTL_IO64_CMD (@wide), as nvme-pci takes
 * them on a namespace: Read, Write, Flush and Write Zeroes of the served
 * namespace, the data at a user address (host memory, or a mapping of
 * p2pmem) through the same pin, map and policy as P2PNVME_IOC_IO. What a
 * standard client cannot say, it cannot get: p2pmem the topology refuses
 * is -EREMOTEIO unless the device's passthru_bounce allows a bounce. No
 * metadata, protection information, dataset management or flags. Returns
 * the NVMe status when the controller fails the command, as nvme-pci does.
 */
static long ioc_nvme_io(struct p2pnvme_file *f, struct file *filp, unsigned long uarg, bool wide)
{
	struct nvme_passthru_cmd64 __user *up64 = (void __user *)uarg;
	struct nvme_passthru_cmd __user *up = (void __user *)uarg;
	struct p2pnvme *c = f->c;
	struct nvme_uring_cmd nc;
	struct p2pnvme_io io;
	int ret;

	/* both start as struct nvme_uring_cmd does, up to rsvd2 */
	BUILD_BUG_ON(offsetof(struct nvme_passthru_cmd64, result) != sizeof(nc));
	if (copy_from_user(&nc, up64, sizeof(nc)))
		return -EFAULT;
	ret = p2pnvme_io_from_nvme(c, &nc, false, &io);
	if (ret)
		return ret;
	ret = run_one(f, filp, &io, p2pnvme_nvme_io_allowed, NULL);
	if (ret == -EIO && io.status)
		ret = io.status;	/* the controller's answer, not an errno */
	/* no command returns a result dword worth passing on here */
	if (ret >= 0 && (wide ? put_user(0ULL, &up64->result) : put_user(0U, &up->result)))
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
	for (i = 0; i < sub.nr; i++)
		ios[i].status = p2pnvme_io_status(&ios[i]);
	if (copy_to_user(u64_to_user_ptr(sub.ios), ios, size))
		ret = -EFAULT;
out_failed:
	if (put_user(sub.failed, &usub->failed))
		ret = -EFAULT;
out_free:
	kfree(ios);
	return ret;
}

/*
 * NVME_IOCTL_ADMIN_CMD and NVME_IOCTL_ADMIN64_CMD (@wide: the 64-bit
 * result of struct nvme_passthru_cmd64), as nvme-pci takes them:
 * p2pnvme_admin_passthru().
 */
static long ioc_admin(struct p2pnvme *c, unsigned long uarg, bool wide)
{
	struct nvme_passthru_cmd64 __user *up64 = (void __user *)uarg;
	struct nvme_passthru_cmd __user *up = (void __user *)uarg;
	/* the two agree up to timeout_ms; the narrow one's result is rsvd2 here */
	struct nvme_passthru_cmd64 pt = {};
	u32 result = 0;
	long ret;

	BUILD_BUG_ON(offsetof(struct nvme_passthru_cmd, result) !=
		     offsetof(struct nvme_passthru_cmd64, rsvd2));
	if (copy_from_user(&pt, up64, wide ? sizeof(*up64) : sizeof(*up)))
		return -EFAULT;
	ret = p2pnvme_admin_passthru(c, &pt, &result);
	if (ret >= 0 &&
	    (wide ? put_user((u64)result, &up64->result) : put_user(result, &up->result)))
		return -EFAULT;
	return ret;
}

static long p2pnvme_ioctl(struct file *filp, unsigned int cmd, unsigned long uarg)
{
	struct p2pnvme_file *f = filp->private_data;

	switch (cmd) {
	case NVME_IOCTL_ID:
		/* the namespace served, as on nvme-pci's namespace char device */
		force_successful_syscall_return();
		return f->c->nsid;
	case NVME_IOCTL_ADMIN_CMD:
		return ioc_admin(f->c, uarg, false);
	case NVME_IOCTL_ADMIN64_CMD:
		return ioc_admin(f->c, uarg, true);
	case NVME_IOCTL_IO_CMD:
		return ioc_nvme_io(f, filp, uarg, false);
	case NVME_IOCTL_IO64_CMD:
		return ioc_nvme_io(f, filp, uarg, true);
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
	case P2PNVME_IOC_FILE_SUBMIT:
		return p2pnvme_ioc_file_submit(f, uarg);
	default:
		return -ENOTTY;
	}
}

const struct file_operations p2pnvme_fops = {
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
