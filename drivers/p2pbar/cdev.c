// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/p2pbarN: allocate zeroed p2pmem, map it, free it, export it as a
 * dma-buf, ask for topology verdicts.
 *
 * Every caller is assumed hostile: threads race on one fd, argument
 * buffers fault or vanish, fds are opened read-only. Allocations belong to
 * the open file; a handle is published only once userspace has received
 * it, and an fd opened without write access can look but not allocate,
 * free or export.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/p2p_ioctl.h>
#include <p2p_compat.h>

#include "internal.h"

static int p2pbar_open(struct inode *inode, struct file *filp)
{
	struct p2pbar_file *pf;
	struct p2pbar *pb;

	pf = kzalloc_obj(*pf, GFP_KERNEL);
	if (!pf)
		return -ENOMEM;

	xa_lock(&p2pbar_minors);
	pb = xa_load(&p2pbar_minors, iminor(inode));
	if (pb)
		kref_get(&pb->kref);
	xa_unlock(&p2pbar_minors);
	if (!pb)
		goto err_free;

	mutex_lock(&pb->lock);
	if (!p2pbar_live(pb)) {
		mutex_unlock(&pb->lock);
		p2pbar_put(pb);
		goto err_free;
	}
	pf->pb = pb;
	pf->filp = filp;
	list_add(&pf->node, &pb->files);
	mutex_unlock(&pb->lock);
	filp->private_data = pf;
	return nonseekable_open(inode, filp);

err_free:
	kfree(pf);
	return -ENODEV;
}

/* Take one handle of @pf out of the table, or NULL when none is left. */
static struct p2pbar_mem *p2pbar_take_file_handle(struct p2pbar *pb,
						  struct p2pbar_file *pf)
{
	struct p2pbar_mem *mem;
	unsigned long idx;

	lockdep_assert_held(&pb->lock);
	xa_for_each(&pb->handles, idx, mem) {
		if (mem->priv == pf) {
			xa_erase(&pb->handles, idx);
			return mem;
		}
	}
	return NULL;
}

static int p2pbar_release_file(struct inode *inode, struct file *filp)
{
	struct p2pbar_file *pf = filp->private_data;
	struct p2pbar *pb = pf->pb;
	struct p2pbar_mem *mem;

	mutex_lock(&pb->lock);
	list_del(&pf->node);
	while ((mem = p2pbar_take_file_handle(pb, pf))) {
		mutex_unlock(&pb->lock);
		p2pbar_mem_put(mem);	/* the handle's reference; zeroes */
		mutex_lock(&pb->lock);
	}
	mutex_unlock(&pb->lock);
	kfree(pf);
	p2pbar_put(pb);
	return 0;
}

/**
 * p2pbar_zap_user_mappings - unmap every user mapping of an instance
 * @pb: an instance that is REMOVING: faults after this raise SIGBUS
 *
 * Files cannot go away meanwhile: releasing one takes pb->lock.
 */
void p2pbar_zap_user_mappings(struct p2pbar *pb)
{
	struct p2pbar_file *pf;

	mutex_lock(&pb->lock);
	list_for_each_entry(pf, &pb->files, node)
		unmap_mapping_range(pf->filp->f_mapping, 0, 0, 1);
	mutex_unlock(&pb->lock);
}

static long p2pbar_ioc_info(struct p2pbar *pb, unsigned long uarg)
{
	struct p2pbar_info info;
	int ret;

	ret = p2p_ioctl_copy_in(&info, sizeof(info),
				offsetofend(struct p2pbar_info, pci_devid), uarg);
	if (ret)
		return ret;
	if (info.flags)
		return -EINVAL;

	mutex_lock(&pb->lock);
	info.bar = pb->region.bar;
	info.pci_domain = pci_domain_nr(pb->pdev->bus);
	info.pci_devid = pci_dev_id(pb->pdev);
	info.bar_size = pb->bar_size;
	info.offset = pb->region.offset;
	info.size = pb->region.size;
	info.bus_addr = pb->bus_base;
	info.alloc_bytes = pb->alloc_bytes;
	info.alloc_count = pb->alloc_count;
	if (pb->published)
		info.flags |= P2PBAR_INFO_F_PUBLISHED;
	if (P2P_HAVE_USER_PAGES)
		info.flags |= P2PBAR_INFO_F_USER_MMAP;
	mutex_unlock(&pb->lock);

	return p2p_ioctl_copy_out(uarg, &info, sizeof(info));
}

/*
 * The handle is reserved (a NULL entry: FREE, mmap and close do not see
 * it) until the result reached userspace; only then does it name the
 * allocation. A failed copy-out undoes what no one else can have seen,
 * whatever other threads on the same file do meanwhile.
 */
static long p2pbar_ioc_alloc(struct p2pbar_file *pf, unsigned long uarg)
{
	struct p2pbar *pb = pf->pb;
	struct p2pbar_alloc req;
	struct p2pbar_mem *mem;
	u32 handle;
	int ret;

	ret = p2p_ioctl_copy_in(&req, sizeof(req), offsetofend(struct p2pbar_alloc, bus_addr),
				uarg);
	if (ret)
		return ret;
	if (req.handle || req.mmap_offset || req.bus_addr)
		return -EINVAL;
	ret = p2pbar_check_alloc(&req, pb->region.size);
	if (ret)
		return ret;

	mem = p2pbar_mem_create(pb, req.size, req.align ?: PAGE_SIZE, NULL, pf);
	if (IS_ERR(mem))
		return PTR_ERR(mem);
	ret = xa_alloc(&pb->handles, &handle, NULL, XA_LIMIT(1, INT_MAX), GFP_KERNEL);
	if (ret)
		goto err_put;
	mem->handle = handle;

	req.handle = handle;
	req.bus_addr = mem->bus;
	req.mmap_offset = mem->bus - pb->bus_base;
	if (p2p_ioctl_copy_out(uarg, &req, sizeof(req))) {
		ret = -EFAULT;
		goto err_handle;
	}
	/* xa_store() into a reserved index does not allocate */
	WARN_ON(xa_err(xa_store(&pb->handles, handle, mem, GFP_KERNEL)));
	return 0;

err_handle:
	xa_erase(&pb->handles, handle);		/* the reservation only */
err_put:
	p2pbar_mem_put(mem);
	return ret;
}

static long p2pbar_ioc_free(struct p2pbar_file *pf, unsigned long uarg)
{
	struct p2pbar *pb = pf->pb;
	struct p2pbar_free req;
	struct p2pbar_mem *mem;
	int ret;

	ret = p2p_ioctl_copy_in(&req, sizeof(req), offsetofend(struct p2pbar_free, reserved),
				uarg);
	if (ret)
		return ret;
	if (req.flags || req.reserved)
		return -EINVAL;

	mutex_lock(&pb->lock);
	mem = xa_load(&pb->handles, req.handle);
	if (!mem || mem->priv != pf) {
		mutex_unlock(&pb->lock);
		return -ENOENT;
	}
	xa_erase(&pb->handles, req.handle);
	mutex_unlock(&pb->lock);
	p2pbar_mem_put(mem);
	return 0;
}

static long p2pbar_ioc_verdict(struct p2pbar *pb, unsigned long uarg)
{
	struct p2pbar_verdict v;
	struct pci_dev *client;
	int ret;

	ret = p2p_ioctl_copy_in(&v, sizeof(v), offsetofend(struct p2pbar_verdict, reserved), uarg);
	if (ret)
		return ret;
	if (v.flags || v.reserved || v.client_devid > 0xffff)
		return -EINVAL;

	client = pci_get_domain_bus_and_slot(v.client_domain, PCI_BUS_NUM(v.client_devid),
					     v.client_devid & 0xff);
	if (!client)
		return -ENOENT;		/* -ENODEV means: this provider is gone */
	ret = p2pbar_verdict(pb->pdev, client, &v);
	pci_dev_put(client);
	if (ret)
		return ret;
	return p2p_ioctl_copy_out(uarg, &v, sizeof(v));
}

static long p2pbar_ioctl(struct file *filp, unsigned int cmd, unsigned long uarg)
{
	struct p2pbar_file *pf = filp->private_data;
	struct p2pbar *pb = pf->pb;
	bool writable = filp->f_mode & FMODE_WRITE;

	if (READ_ONCE(pb->state) != P2PBAR_LIVE)
		return -ENODEV;

	switch (cmd) {
	case P2PBAR_IOC_INFO:
		return p2pbar_ioc_info(pb, uarg);
	case P2PBAR_IOC_ALLOC:
		return writable ? p2pbar_ioc_alloc(pf, uarg) : -EBADF;
	case P2PBAR_IOC_FREE:
		return writable ? p2pbar_ioc_free(pf, uarg) : -EBADF;
	case P2PBAR_IOC_VERDICT:
		return p2pbar_ioc_verdict(pb, uarg);
	case P2PBAR_IOC_EXPORT:
		return writable ? p2pbar_ioc_export(pb, uarg) : -EBADF;
	default:
		return -ENOTTY;
	}
}

/* ---- mmap: pages are inserted at fault time, under pb->lock ----------- */

static void p2pbar_vm_open(struct vm_area_struct *vma)
{
	struct p2pbar_mem *mem = vma->vm_private_data;

	kref_get(&mem->kref);
}

static void p2pbar_vm_close(struct vm_area_struct *vma)
{
	p2pbar_mem_put(vma->vm_private_data);
}

/*
 * Inserting under pb->lock orders every fault against remove(): a fault
 * either completes before the instance leaves LIVE, and its PTE is then
 * zapped, or sees the new state and raises SIGBUS.
 */
static vm_fault_t p2pbar_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct p2pbar_mem *mem = vma->vm_private_data;
	struct p2pbar *pb = mem->pb;
	unsigned long off;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	int err;

	/* vm_pgoff was rebased to the start of the allocation in mmap() */
	off = (vmf->pgoff << PAGE_SHIFT);
	mutex_lock(&pb->lock);
	if (p2pbar_live(pb) && mem->state == P2PBAR_MEM_LIVE && off < mem->size) {
		err = vm_insert_page(vma, vmf->address, virt_to_page(mem->vaddr + off));
		/* -EBUSY: a racing fault mapped it first */
		ret = (!err || err == -EBUSY) ? VM_FAULT_NOPAGE : vmf_error(err);
	}
	mutex_unlock(&pb->lock);
	return ret;
}

static const struct vm_operations_struct p2pbar_vm_ops = {
	.open = p2pbar_vm_open,
	.close = p2pbar_vm_close,
	.fault = p2pbar_vm_fault,
};

/*
 * mmap() at offset 0 that names no allocation of this file allocates, as
 * the kernel's p2pmem/allocate and p2pmem-pci's /dev/p2pmemN do: zeroed
 * memory of the mapping's length, owned by the mapping and freed with it
 * (munmap, exit). Existing p2pmem tools (p2pmem-test, fio
 * --iomem=mmapshared:/dev/p2pbar0) work unmodified this way. It needs a
 * writable fd, like ALLOC.
 */
static int p2pbar_mmap_alloc(struct p2pbar_file *pf, struct vm_area_struct *vma)
{
	struct p2pbar_mem *mem;

	if (!(vma->vm_file->f_mode & FMODE_WRITE))
		return -EACCES;
	mem = p2pbar_mem_create(pf->pb, vma->vm_end - vma->vm_start, PAGE_SIZE, NULL, pf);
	if (IS_ERR(mem))	/* no room is ENOMEM to mmap(), as p2pmem/allocate says */
		return PTR_ERR(mem) == -ENOSPC ? -ENOMEM : PTR_ERR(mem);
	/* no handle: the VMA holds the only reference, its close frees it */
	vma->vm_pgoff = 0;
	p2pbar_mem_vma_init(mem, vma);
	return 0;
}

static int p2pbar_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct p2pbar_file *pf = filp->private_data;
	struct p2pbar *pb = pf->pb;
	struct p2pbar_mem *mem, *found = NULL;
	u64 start = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 len = vma->vm_end - vma->vm_start;
	bool named = false;
	unsigned long idx;

	if (!P2P_HAVE_USER_PAGES)
		return -EOPNOTSUPP;
	/* MAP_SHARED of a read-only fd has VM_MAYSHARE but not VM_SHARED */
	if (!(vma->vm_flags & VM_MAYSHARE)) {
		pci_info_ratelimited(pb->pdev, "%s: private mapping refused\n", current->comm);
		return -EINVAL;
	}

	mutex_lock(&pb->lock);
	if (!p2pbar_live(pb)) {
		mutex_unlock(&pb->lock);
		return -ENODEV;
	}
	/* The offset names an allocation of this file; the range stays inside it. */
	xa_for_each(&pb->handles, idx, mem) {
		u64 mstart = mem->bus - pb->bus_base;

		if (mem->priv == pf && start >= mstart && start < mstart + mem->size) {
			named = true;
			if (len <= mem->size - (start - mstart)) {
				found = mem;
				vma->vm_pgoff = (start - mstart) >> PAGE_SHIFT;
			}
			break;
		}
	}
	if (found)
		kref_get(&found->kref);
	mutex_unlock(&pb->lock);
	if (!named && !start)
		return p2pbar_mmap_alloc(pf, vma);
	if (!found)
		return -EINVAL;
	p2pbar_mem_vma_init(found, vma);
	return 0;
}

/**
 * p2pbar_mem_vma_init - make @vma a mapping of @mem, faulted in on demand
 * @mem: the allocation; the caller passes one reference to the VMA
 * @vma: a shared mapping whose vm_pgoff counts pages from the start of @mem
 *
 * For /dev/p2pbarN and for exported dma-bufs alike: pages are inserted at
 * fault time under pb->lock while the instance is LIVE, and SIGBUS after.
 * The owner zaps the mappings (p2pbar_zap_user_mappings(), the dma-buf's
 * revocation) once the instance left LIVE.
 */
void p2pbar_mem_vma_init(struct p2pbar_mem *mem, struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = mem;
	vma->vm_ops = &p2pbar_vm_ops;
}

const struct file_operations p2pbar_fops = {
	.owner = THIS_MODULE,
	.open = p2pbar_open,
	.release = p2pbar_release_file,
	.unlocked_ioctl = p2pbar_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = p2pbar_mmap,
};
