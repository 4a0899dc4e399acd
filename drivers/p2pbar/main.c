// SPDX-License-Identifier: GPL-2.0
/*
 * p2pbar: expose a memory BAR of any PCI function as p2pmem.
 *
 * The administrator binds a function with driver_override or new_id (there
 * is no ID table: the driver never grabs a device by surprise). Probe
 * registers the chosen part of a BAR with pci_p2pdma_add_resource(), which
 * creates ZONE_DEVICE pages, publishes it for other drivers and creates
 * /dev/p2pbarN. Userspace allocates zeroed p2pmem with ioctls and maps it;
 * in-kernel users allocate through the API in <linux/p2pbar.h>.
 *
 * Page ownership (kernels whose P2P pages have a page_free callback, 6.2+):
 * every page of an allocation carries one reference owned by p2pbar plus
 * one per user mapping or GUP pin. Dropping the last reference returns the
 * page to the P2PDMA pool through the core's page_free callback, so memory
 * that is still mapped or under I/O is never handed out again. Before 6.2
 * the pages cannot be mapped to userspace and are freed with
 * pci_free_p2pmem().
 *
 * Removal while memory is in use: remove() first marks the instance dead
 * (ioctls and faults fail), unpublishes it, zaps every user mapping (later
 * access gets SIGBUS), asks in-kernel users to give their memory back and
 * waits for them, bounded, then drops p2pbar's own page references so the
 * core's teardown, which waits for every page, only waits for I/O in flight.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/kref.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <linux/p2pbar.h>
#include <linux/p2p_ioctl.h>
#include <p2p_compat.h>

#include "p2pbar.h"

#define P2PBAR_MAX_DEVS		64
#define P2PBAR_REVOKE_TIMEOUT	(10 * HZ)

static int bar = -1;
module_param(bar, int, 0444);
MODULE_PARM_DESC(bar, "BAR to expose (default -1: the largest 64-bit prefetchable memory BAR)");

static unsigned long long offset;
module_param(offset, ullong, 0444);
MODULE_PARM_DESC(offset, "Offset into the BAR, a multiple of 2 MiB (default 0)");

static unsigned long long size;
module_param(size, ullong, 0444);
MODULE_PARM_DESC(size, "Bytes to expose, a multiple of 2 MiB (default 0: to the end of the BAR)");

static bool publish = true;
module_param(publish, bool, 0444);
MODULE_PARM_DESC(publish, "Publish the memory for other drivers at probe (default true; see sysfs p2pbar/published)");

/**
 * struct p2pbar - one bound provider function
 * @pdev: the function; a reference is held until the last p2pbar_put()
 * @kref: held by the driver binding, open files, mappings and API users
 * @minor: of /dev/p2pbarN
 * @dev: the char device's struct device
 * @region: BAR, offset and size of the p2pmem
 * @bar_size: size of the whole BAR
 * @bus_base: PCI bus address of the first p2pmem byte
 * @debugfs: per-instance debugfs directory
 * @list: entry in p2pbar_list, protected by p2pbar_list_lock
 * @lock: protects every field below it
 * @dead: set once by remove(); no new allocation, mapping or fault after it
 * @published: last value given to pci_p2pmem_publish()
 * @mems: live allocations (struct p2pbar_mem.node)
 * @files: open files (struct p2pbar_file.node)
 * @handles: handle -> struct p2pbar_mem of user allocations
 * @alloc_bytes: bytes of @mems
 * @alloc_count: entries of @mems
 * @kernel_users: allocations owned by in-kernel users
 * @kernel_users_gone: completed when @kernel_users drops to 0 after @dead
 */
struct p2pbar {
	struct pci_dev *pdev;
	struct kref kref;
	int minor;
	struct device *dev;
	struct p2pbar_region region;
	u64 bar_size;
	pci_bus_addr_t bus_base;
	struct dentry *debugfs;
	struct list_head list;

	struct mutex lock;	/* protects the members below */
	bool dead;
	bool published;
	struct list_head mems;
	struct list_head files;
	struct xarray handles;
	u64 alloc_bytes;
	u32 alloc_count;
	unsigned int kernel_users;
	struct completion kernel_users_gone;
};

/**
 * struct p2pbar_mem - one allocation
 * @pb: provider; holds a reference on it
 * @kref: held by the owner (handle or in-kernel user) and each user VMA
 * @node: entry in pb->mems (under pb->lock) while the memory is owned
 * @vaddr: kernel address of the first byte (an MMIO mapping: use *io helpers)
 * @size: bytes
 * @bus: PCI bus address
 * @handle: for user allocations, the key in pb->handles; 0 otherwise
 * @ops: in-kernel user callbacks, NULL for user allocations
 * @priv: argument of @ops
 * @owner_pid: who allocated it (for the debugfs listing)
 * @released: pages given back (set under pb->lock); later faults SIGBUS
 * @revoking: the revoke callback was called (under pb->lock)
 * @freed: p2pbar_free() was called: no revoke callback from now on
 *	   (under pb->lock)
 * @revoker: the task running the revoke callback
 * @revoke_done: completed when the revoke callback has returned
 */
struct p2pbar_mem {
	struct p2pbar *pb;
	struct kref kref;
	struct list_head node;
	void *vaddr;
	size_t size;
	pci_bus_addr_t bus;
	u32 handle;
	const struct p2pbar_user_ops *ops;
	void *priv;
	pid_t owner_pid;
	bool released;
	bool revoking;
	bool freed;
	struct task_struct *revoker;
	struct completion revoke_done;
};

/**
 * struct p2pbar_file - one open() of /dev/p2pbarN
 * @pb: the provider; holds a reference
 * @filp: the file, for zapping its mappings on removal
 * @node: entry in pb->files, under pb->lock
 */
struct p2pbar_file {
	struct p2pbar *pb;
	struct file *filp;
	struct list_head node;
};

static dev_t p2pbar_devt;
static struct cdev p2pbar_cdev;
static struct class *p2pbar_class;
static struct dentry *p2pbar_debugfs;
/* minor -> struct p2pbar; xa_lock is taken with kref_get to open safely */
static DEFINE_XARRAY_ALLOC(p2pbar_minors);
/* All bound instances, for p2pbar_find(); protects p2pbar_list. */
static DEFINE_MUTEX(p2pbar_list_lock);
static LIST_HEAD(p2pbar_list);

static void p2pbar_release(struct kref *kref)
{
	struct p2pbar *pb = container_of(kref, struct p2pbar, kref);

	WARN_ON(!list_empty(&pb->mems));
	xa_destroy(&pb->handles);
	pci_dev_put(pb->pdev);
	kfree(pb);
}

/**
 * p2pbar_put - drop a reference taken by p2pbar_get() or p2pbar_find()
 * @pb: provider, may be NULL
 */
void p2pbar_put(struct p2pbar *pb)
{
	if (pb)
		kref_put(&pb->kref, p2pbar_release);
}
EXPORT_SYMBOL_GPL(p2pbar_put);

/**
 * p2pbar_get - the provider instance bound to a PCI function
 * @pdev: a function, possibly not bound to p2pbar
 *
 * Return: the instance with a reference the caller drops with p2pbar_put(),
 * or NULL if @pdev is not a live p2pbar provider.
 */
struct p2pbar *p2pbar_get(struct pci_dev *pdev)
{
	struct p2pbar *pb, *found = NULL;

	mutex_lock(&p2pbar_list_lock);
	list_for_each_entry(pb, &p2pbar_list, list) {
		if (pb->pdev == pdev) {
			kref_get(&pb->kref);
			found = pb;
			break;
		}
	}
	mutex_unlock(&p2pbar_list_lock);
	return found;
}
EXPORT_SYMBOL_GPL(p2pbar_get);

/**
 * p2pbar_find - the closest published provider a client can reach
 * @client: the DMA master (a PCI function or a device below one)
 *
 * Uses pci_p2pdma_distance(); ties go to the first bound provider.
 *
 * Return: an instance with a reference (drop with p2pbar_put()), or NULL
 * if no published provider is reachable by @client.
 */
struct p2pbar *p2pbar_find(struct device *client)
{
	struct p2pbar *pb, *best = NULL;
	int dist, best_dist = INT_MAX;

	mutex_lock(&p2pbar_list_lock);
	list_for_each_entry(pb, &p2pbar_list, list) {
		if (!READ_ONCE(pb->published))
			continue;
		dist = pci_p2pdma_distance(pb->pdev, client, false);
		if (dist >= 0 && dist < best_dist) {
			best = pb;
			best_dist = dist;
		}
	}
	if (best)
		kref_get(&best->kref);
	mutex_unlock(&p2pbar_list_lock);
	return best;
}
EXPORT_SYMBOL_GPL(p2pbar_find);

/**
 * p2pbar_pci_dev - the PCI function of a provider
 * @pb: provider the caller holds a reference to
 *
 * Return: the function; valid while the reference is held.
 */
struct pci_dev *p2pbar_pci_dev(struct p2pbar *pb)
{
	return pb->pdev;
}
EXPORT_SYMBOL_GPL(p2pbar_pci_dev);

/* ---- allocation and page ownership ---------------------------------- */

#if P2P_HAVE_USER_PAGES
/*
 * Take ownership of freshly allocated pool pages: one page reference each
 * (7.2 keeps idle P2P pages at refcount 0, 6.12 at 1) and one pgmap
 * reference each, which the core's page_free callback drops when the page
 * returns to the pool. The single pgmap reference pci_alloc_p2pmem() took
 * for the whole range is dropped by the caller.
 */
static void p2pbar_own_pages(void *vaddr, size_t len)
{
	size_t off;

	for (off = 0; off < len; off += PAGE_SIZE) {
		struct page *page = virt_to_page(vaddr + off);

		if (!page_ref_count(page))
			set_page_count(page, 1);
		percpu_ref_get(&page_pgmap(page)->ref);
	}
}

/* Drop p2pbar's references; each page returns once nothing else holds it. */
static void p2pbar_disown_pages(void *vaddr, size_t len)
{
	size_t off;

	for (off = 0; off < len; off += PAGE_SIZE)
		put_page(virt_to_page(vaddr + off));
}

static void *p2pbar_pool_alloc(struct p2pbar *pb, size_t len, size_t align)
{
	size_t slack = align > PAGE_SIZE ? align - PAGE_SIZE : 0;
	struct percpu_ref *ref;
	pci_bus_addr_t bus;
	void *raw, *vaddr;
	size_t head;

	raw = pci_alloc_p2pmem(pb->pdev, len + slack);
	if (!raw)
		return NULL;
	ref = &page_pgmap(virt_to_page(raw))->ref;
	p2pbar_own_pages(raw, len + slack);
	percpu_ref_put(ref);

	/* Align the bus address, give the head and tail back. */
	bus = pci_p2pmem_virt_to_bus(pb->pdev, raw);
	head = slack ? ALIGN(bus, align) - bus : 0;
	vaddr = raw + head;
	if (head)
		p2pbar_disown_pages(raw, head);
	if (slack - head)
		p2pbar_disown_pages(vaddr + len, slack - head);
	return vaddr;
}

static void p2pbar_pool_free(struct p2pbar *pb, void *vaddr, size_t len)
{
	p2pbar_disown_pages(vaddr, len);
}
#else
static void *p2pbar_pool_alloc(struct p2pbar *pb, size_t len, size_t align)
{
	if (align > PAGE_SIZE)
		return ERR_PTR(-EOPNOTSUPP);
	return pci_alloc_p2pmem(pb->pdev, len);
}

static void p2pbar_pool_free(struct p2pbar *pb, void *vaddr, size_t len)
{
	pci_free_p2pmem(pb->pdev, vaddr, len);
}
#endif

/* Give the pages back to the pool, once. Caller holds pb->lock. */
static void p2pbar_mem_release_pages(struct p2pbar_mem *mem)
{
	struct p2pbar *pb = mem->pb;

	lockdep_assert_held(&pb->lock);
	if (mem->released)
		return;
	mem->released = true;
	list_del_init(&mem->node);
	pb->alloc_bytes -= mem->size;
	pb->alloc_count--;
	if (mem->ops && !--pb->kernel_users && pb->dead)
		complete(&pb->kernel_users_gone);
	p2pbar_pool_free(pb, mem->vaddr, mem->size);
}

static void p2pbar_mem_kref_release(struct kref *kref)
{
	struct p2pbar_mem *mem = container_of(kref, struct p2pbar_mem, kref);
	struct p2pbar *pb = mem->pb;

	mutex_lock(&pb->lock);
	p2pbar_mem_release_pages(mem);
	mutex_unlock(&pb->lock);
	kfree(mem);
	p2pbar_put(pb);
}

static void p2pbar_mem_put(struct p2pbar_mem *mem)
{
	kref_put(&mem->kref, p2pbar_mem_kref_release);
}

/* Allocate, zero and account. Caller holds pb->lock and checked !pb->dead. */
static struct p2pbar_mem *p2pbar_mem_create(struct p2pbar *pb, size_t len,
					    size_t align)
{
	struct p2pbar_mem *mem;
	void *vaddr;

	lockdep_assert_held(&pb->lock);
	mem = kzalloc_obj(*mem, GFP_KERNEL);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	vaddr = p2pbar_pool_alloc(pb, len, align);
	if (IS_ERR_OR_NULL(vaddr)) {
		kfree(mem);
		return vaddr ? vaddr : ERR_PTR(-ENOSPC);
	}
	/* No stale bytes from a previous owner, ever. */
	memset_io((void __iomem __force *)vaddr, 0, len);

	kref_init(&mem->kref);
	kref_get(&pb->kref);
	init_completion(&mem->revoke_done);
	mem->pb = pb;
	mem->vaddr = vaddr;
	mem->size = len;
	mem->bus = pci_p2pmem_virt_to_bus(pb->pdev, vaddr);
	mem->owner_pid = task_tgid_nr(current);
	list_add_tail(&mem->node, &pb->mems);
	pb->alloc_bytes += len;
	pb->alloc_count++;
	return mem;
}

/**
 * p2pbar_alloc - allocate zeroed p2pmem for an in-kernel user
 * @pb: provider the caller holds a reference to
 * @size: bytes, rounded up to whole pages
 * @ops: callbacks; @ops->revoke is mandatory
 * @priv: passed to @ops
 *
 * The memory stays valid until p2pbar_free(). When the provider goes away,
 * @ops->revoke is called and the user must stop DMA and free the memory;
 * after P2PBAR_REVOKE_TIMEOUT the provider takes the pages back anyway.
 *
 * Return: the allocation, or ERR_PTR(): -EINVAL (bad arguments), -ENODEV
 * (provider removed), -ENOSPC (no room), -ENOMEM.
 */
struct p2pbar_mem *p2pbar_alloc(struct p2pbar *pb, size_t size,
				const struct p2pbar_user_ops *ops, void *priv)
{
	struct p2pbar_mem *mem;

	if (!size || !ops || !ops->revoke)
		return ERR_PTR(-EINVAL);
	size = PAGE_ALIGN(size);
	mutex_lock(&pb->lock);
	if (pb->dead) {
		mem = ERR_PTR(-ENODEV);
	} else {
		mem = p2pbar_mem_create(pb, size, PAGE_SIZE);
		if (!IS_ERR(mem)) {
			mem->ops = ops;
			mem->priv = priv;
			pb->kernel_users++;
		}
	}
	mutex_unlock(&pb->lock);
	return mem;
}
EXPORT_SYMBOL_GPL(p2pbar_alloc);

/**
 * p2pbar_free - free memory from p2pbar_alloc()
 * @mem: the allocation; must not be used afterwards
 *
 * The user must have stopped all DMA to @mem. May be called from the
 * revoke callback. Called from anywhere else while the callback runs, it
 * waits for the callback to return: afterwards the callback is neither
 * running nor going to be called, so the user may free what it passed as
 * @priv.
 */
void p2pbar_free(struct p2pbar_mem *mem)
{
	struct p2pbar *pb = mem->pb;
	bool wait;

	mutex_lock(&pb->lock);
	mem->freed = true;
	wait = mem->revoking && mem->revoker != current;
	mutex_unlock(&pb->lock);
	if (wait)
		wait_for_completion(&mem->revoke_done);
	p2pbar_mem_put(mem);
}
EXPORT_SYMBOL_GPL(p2pbar_free);

/**
 * p2pbar_mem_vaddr - kernel address of an allocation
 * @mem: allocation
 *
 * Return: an address in the BAR's ZONE_DEVICE mapping; it is MMIO, so use
 * memcpy_toio()/memcpy_fromio() or readX()/writeX() on it.
 */
void *p2pbar_mem_vaddr(struct p2pbar_mem *mem)
{
	return mem->vaddr;
}
EXPORT_SYMBOL_GPL(p2pbar_mem_vaddr);

/**
 * p2pbar_mem_bus_addr - PCI bus address of an allocation
 * @mem: allocation
 *
 * Return: the bus address of the first byte, valid for DMA by clients for
 * which p2pbar_verdict() reports P2PBAR_MAP_DIRECT.
 */
pci_bus_addr_t p2pbar_mem_bus_addr(struct p2pbar_mem *mem)
{
	return mem->bus;
}
EXPORT_SYMBOL_GPL(p2pbar_mem_bus_addr);

/**
 * p2pbar_mem_size - size of an allocation
 * @mem: allocation
 *
 * Return: bytes, a multiple of PAGE_SIZE.
 */
size_t p2pbar_mem_size(struct p2pbar_mem *mem)
{
	return mem->size;
}
EXPORT_SYMBOL_GPL(p2pbar_mem_size);

/* ---- char device ----------------------------------------------------- */

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
	if (pb->dead) {
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
		p2pbar_mem_put(mem);	/* the handle's reference */
		mutex_lock(&pb->lock);
	}
	mutex_unlock(&pb->lock);
	kfree(pf);
	p2pbar_put(pb);
	return 0;
}

static long p2pbar_ioc_info(struct p2pbar *pb, unsigned long uarg)
{
	struct p2pbar_info info;
	int ret;

	ret = p2p_ioctl_copy_in(&info, sizeof(info), uarg);
	if (ret)
		return ret;
	if (info.flags || info.reserved)
		return -EINVAL;

	mutex_lock(&pb->lock);
	info.bar = pb->region.bar;
	info.pci_id = (u32)pci_domain_nr(pb->pdev->bus) << 16 | pci_dev_id(pb->pdev);
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

	return copy_to_user((void __user *)uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long p2pbar_ioc_alloc(struct p2pbar_file *pf, unsigned long uarg)
{
	struct p2pbar *pb = pf->pb;
	struct p2pbar_alloc req;
	struct p2pbar_mem *mem;
	u32 handle;
	int ret;

	ret = p2p_ioctl_copy_in(&req, sizeof(req), uarg);
	if (ret)
		return ret;
	if (req.handle || req.mmap_offset || req.bus_addr)
		return -EINVAL;
	ret = p2pbar_check_alloc(&req, pb->region.size);
	if (ret)
		return ret;

	mutex_lock(&pb->lock);
	if (pb->dead) {
		ret = -ENODEV;
		goto out_unlock;
	}
	mem = p2pbar_mem_create(pb, req.size, req.align ?: PAGE_SIZE);
	if (IS_ERR(mem)) {
		ret = PTR_ERR(mem);
		goto out_unlock;
	}
	mem->priv = pf;
	ret = xa_alloc(&pb->handles, &handle, mem, XA_LIMIT(1, INT_MAX), GFP_KERNEL);
	if (ret)
		goto out_release;
	mem->handle = handle;
	mutex_unlock(&pb->lock);

	req.handle = handle;
	req.bus_addr = mem->bus;
	req.mmap_offset = mem->bus - pb->bus_base;
	if (copy_to_user((void __user *)uarg, &req, sizeof(req))) {
		/* undo: nobody can have seen the handle yet */
		mutex_lock(&pb->lock);
		xa_erase(&pb->handles, handle);
		mutex_unlock(&pb->lock);
		p2pbar_mem_put(mem);
		return -EFAULT;
	}
	return 0;

out_release:
	p2pbar_mem_release_pages(mem);
	mutex_unlock(&pb->lock);
	kfree(mem);
	p2pbar_put(pb);
	return ret;
out_unlock:
	mutex_unlock(&pb->lock);
	return ret;
}

static long p2pbar_ioc_free(struct p2pbar_file *pf, unsigned long uarg)
{
	struct p2pbar *pb = pf->pb;
	struct p2pbar_free req;
	struct p2pbar_mem *mem;
	int ret;

	ret = p2p_ioctl_copy_in(&req, sizeof(req), uarg);
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

	ret = p2p_ioctl_copy_in(&v, sizeof(v), uarg);
	if (ret)
		return ret;
	if (v.flags || v.reserved)
		return -EINVAL;

	client = pci_get_domain_bus_and_slot(v.client >> 16, (v.client >> 8) & 0xff,
					     v.client & 0xff);
	if (!client)
		return -ENODEV;
	ret = p2pbar_verdict(pb->pdev, client, &v);
	pci_dev_put(client);
	if (ret)
		return ret;
	return copy_to_user((void __user *)uarg, &v, sizeof(v)) ? -EFAULT : 0;
}

static long p2pbar_ioctl(struct file *filp, unsigned int cmd, unsigned long uarg)
{
	struct p2pbar_file *pf = filp->private_data;
	struct p2pbar *pb = pf->pb;

	if (READ_ONCE(pb->dead))
		return -ENODEV;

	switch (cmd) {
	case P2PBAR_IOC_INFO:
		return p2pbar_ioc_info(pb, uarg);
	case P2PBAR_IOC_ALLOC:
		return p2pbar_ioc_alloc(pf, uarg);
	case P2PBAR_IOC_FREE:
		return p2pbar_ioc_free(pf, uarg);
	case P2PBAR_IOC_VERDICT:
		return p2pbar_ioc_verdict(pb, uarg);
	case P2PBAR_IOC_EXPORT:
		return p2pbar_ioc_export(pb, uarg);
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
 * either completes before the instance is marked dead, and its PTE is then
 * zapped, or sees the flag and raises SIGBUS.
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
	if (!pb->dead && !mem->released && off < mem->size) {
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

static int p2pbar_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct p2pbar_file *pf = filp->private_data;
	struct p2pbar *pb = pf->pb;
	struct p2pbar_mem *mem, *found = NULL;
	u64 start = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 len = vma->vm_end - vma->vm_start;
	unsigned long idx;

	if (!P2P_HAVE_USER_PAGES)
		return -EOPNOTSUPP;
	if (!(vma->vm_flags & VM_SHARED)) {
		pci_info_ratelimited(pb->pdev, "%s: private mapping refused\n", current->comm);
		return -EINVAL;
	}

	mutex_lock(&pb->lock);
	if (pb->dead) {
		mutex_unlock(&pb->lock);
		return -ENODEV;
	}
	/* The offset names an allocation of this file; the range stays inside it. */
	xa_for_each(&pb->handles, idx, mem) {
		u64 mstart = mem->bus - pb->bus_base;

		if (mem->priv == pf && start >= mstart && start < mstart + mem->size) {
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
	if (!found)
		return -EINVAL;

	vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = found;
	vma->vm_ops = &p2pbar_vm_ops;
	return 0;
}

static const struct file_operations p2pbar_fops = {
	.owner = THIS_MODULE,
	.open = p2pbar_open,
	.release = p2pbar_release_file,
	.unlocked_ioctl = p2pbar_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = p2pbar_mmap,
};

/* ---- sysfs: /sys/class/p2pbar/p2pbarN/ -------------------------------- */

#define P2PBAR_SHOW(name, fmt, expr)					\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	struct p2pbar *pb = dev_get_drvdata(dev);			\
	ssize_t ret;							\
									\
	mutex_lock(&pb->lock);						\
	ret = sysfs_emit(buf, fmt "\n", expr);				\
	mutex_unlock(&pb->lock);					\
	return ret;							\
}									\
static DEVICE_ATTR_RO(name)

P2PBAR_SHOW(bar, "%d", pb->region.bar);
P2PBAR_SHOW(bar_size, "%llu", pb->bar_size);
P2PBAR_SHOW(offset, "%llu", pb->region.offset);
P2PBAR_SHOW(size, "%llu", pb->region.size);
P2PBAR_SHOW(bus_addr, "0x%llx", (u64)pb->bus_base);
P2PBAR_SHOW(alloc_count, "%u", pb->alloc_count);
P2PBAR_SHOW(alloc_bytes, "%llu", pb->alloc_bytes);

static ssize_t published_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	struct p2pbar *pb = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", READ_ONCE(pb->published));
}

static ssize_t published_store(struct device *dev, struct device_attribute *attr,
			       const char *buf, size_t count)
{
	struct p2pbar *pb = dev_get_drvdata(dev);
	bool val;
	int ret;

	ret = kstrtobool(buf, &val);
	if (ret)
		return ret;
	mutex_lock(&pb->lock);
	pci_p2pmem_publish(pb->pdev, val);
	WRITE_ONCE(pb->published, val);
	mutex_unlock(&pb->lock);
	return count;
}
static DEVICE_ATTR_RW(published);

static struct attribute *p2pbar_attrs[] = {
	&dev_attr_bar.attr,
	&dev_attr_bar_size.attr,
	&dev_attr_offset.attr,
	&dev_attr_size.attr,
	&dev_attr_bus_addr.attr,
	&dev_attr_published.attr,
	&dev_attr_alloc_count.attr,
	&dev_attr_alloc_bytes.attr,
	NULL,
};

ATTRIBUTE_GROUPS(p2pbar);

/* ---- debugfs: allocations and verdicts (tables do not belong in sysfs) -- */

static int p2pbar_allocations_show(struct seq_file *s, void *unused)
{
	struct p2pbar *pb = s->private;
	struct p2pbar_mem *mem;

	seq_puts(s, "bus_addr size owner pid handle\n");
	mutex_lock(&pb->lock);
	list_for_each_entry(mem, &pb->mems, node)
		seq_printf(s, "0x%llx %zu %s %d %u\n", (u64)mem->bus, mem->size,
			   mem->ops ? "kernel" : "mmap", mem->owner_pid, mem->handle);
	mutex_unlock(&pb->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(p2pbar_allocations);

static int p2pbar_verdicts_show(struct seq_file *s, void *unused)
{
	struct p2pbar *pb = s->private;
	struct pci_dev *client = NULL;
	struct p2pbar_verdict v = {};
	char why[160];

	seq_puts(s, "client id verdict distance kernel_distance reason\n");
	for_each_pci_dev(client) {
		if (p2pbar_verdict(pb->pdev, client, &v))
			continue;
		p2pbar_verdict_explain(&v, why, sizeof(why));
		seq_printf(s, "%s %04x:%04x %s %d %d %s\n", pci_name(client),
			   client->vendor, client->device, p2pbar_map_name(v.map_type),
			   v.distance, pci_p2pdma_distance(pb->pdev, &client->dev, false),
			   why);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(p2pbar_verdicts);

/* ---- PCI driver ------------------------------------------------------ */

static int p2pbar_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct p2pbar_bar_desc bars[P2PBAR_NR_BARS];
	struct p2pbar_region region;
	struct p2pbar *pb;
	const char *why;
	int i, ret;

	for (i = 0; i < P2PBAR_NR_BARS; i++) {
		bars[i].len = pci_resource_len(pdev, i);
		bars[i].flags = pci_resource_flags(pdev, i);
		bars[i].start = pci_resource_start(pdev, i);
	}
	ret = p2pbar_pick_region(bars, bar, offset, size, memremap_compat_align(),
				 &region, &why);
	if (ret) {
		pci_err(pdev, "cannot use bar=%d offset=%llu size=%llu: %s\n",
			bar, offset, size, why);
		return ret;
	}

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;

	pb = kzalloc_obj(*pb, GFP_KERNEL);
	if (!pb)
		return -ENOMEM;
	kref_init(&pb->kref);
	mutex_init(&pb->lock);
	INIT_LIST_HEAD(&pb->mems);
	INIT_LIST_HEAD(&pb->files);
	INIT_LIST_HEAD(&pb->list);
	xa_init_flags(&pb->handles, XA_FLAGS_ALLOC1);
	init_completion(&pb->kernel_users_gone);
	pb->pdev = pci_dev_get(pdev);
	pb->region = region;
	pb->bar_size = pci_resource_len(pdev, region.bar);

	ret = pci_p2pdma_add_resource(pdev, region.bar, region.size, region.offset);
	if (ret) {
		pci_err(pdev, "pci_p2pdma_add_resource(bar %d, %llu bytes at %llu) failed: %d\n",
			region.bar, region.size, region.offset, ret);
		goto err_put;
	}
	pb->bus_base = pci_bus_address(pdev, region.bar) + region.offset;

	ret = xa_alloc(&p2pbar_minors, &pb->minor, pb,
		       XA_LIMIT(0, P2PBAR_MAX_DEVS - 1), GFP_KERNEL);
	if (ret) {
		pci_err(pdev, "more than %d providers bound\n", P2PBAR_MAX_DEVS);
		goto err_put;
	}
	pb->dev = device_create_with_groups(p2pbar_class, &pdev->dev,
					    MKDEV(MAJOR(p2pbar_devt), pb->minor),
					    pb, p2pbar_groups, "p2pbar%d", pb->minor);
	if (IS_ERR(pb->dev)) {
		ret = PTR_ERR(pb->dev);
		goto err_minor;
	}

	pci_set_drvdata(pdev, pb);
	pb->debugfs = debugfs_create_dir(pci_name(pdev), p2pbar_debugfs);
	debugfs_create_file("allocations", 0400, pb->debugfs, pb, &p2pbar_allocations_fops);
	debugfs_create_file("verdicts", 0400, pb->debugfs, pb, &p2pbar_verdicts_fops);

	if (publish) {
		pci_p2pmem_publish(pdev, true);
		pb->published = true;
	}
	mutex_lock(&p2pbar_list_lock);
	list_add_tail(&pb->list, &p2pbar_list);
	mutex_unlock(&p2pbar_list_lock);

	pci_info(pdev, "p2pbar%d: BAR %d, %llu MiB at offset %llu, bus address %#llx%s\n",
		 pb->minor, region.bar, region.size >> 20, region.offset,
		 (u64)pb->bus_base, publish ? ", published" : "");
	return 0;

err_minor:
	xa_erase(&p2pbar_minors, pb->minor);
err_put:
	p2pbar_put(pb);
	return ret;
}

/* Ask in-kernel users to give their memory back; wait, bounded. */
static void p2pbar_revoke_kernel_users(struct p2pbar *pb)
{
	struct p2pbar_mem *mem;
	bool pending;

	for (;;) {
		bool found = false;

		mutex_lock(&pb->lock);
		list_for_each_entry(mem, &pb->mems, node) {
			if (mem->ops && !mem->revoking && !mem->freed) {
				mem->revoking = true;
				mem->revoker = current;
				kref_get(&mem->kref);
				found = true;
				break;
			}
		}
		mutex_unlock(&pb->lock);
		if (!found)
			break;
		/* Unlocked: the callback calls p2pbar_free(). */
		mem->ops->revoke(mem, mem->priv);
		complete_all(&mem->revoke_done);
		p2pbar_mem_put(mem);
	}

	mutex_lock(&pb->lock);
	pending = pb->kernel_users;
	mutex_unlock(&pb->lock);
	if (pending && !wait_for_completion_timeout(&pb->kernel_users_gone,
						    P2PBAR_REVOKE_TIMEOUT))
		pci_err(pb->pdev, "in-kernel users kept %u allocations past the revoke timeout; taking the pages back\n",
			pb->kernel_users);
}

static void p2pbar_remove(struct pci_dev *pdev)
{
	struct p2pbar *pb = pci_get_drvdata(pdev);
	struct p2pbar_file *pf;
	struct p2pbar_mem *mem, *tmp;

	mutex_lock(&p2pbar_list_lock);
	list_del_init(&pb->list);
	mutex_unlock(&p2pbar_list_lock);

	mutex_lock(&pb->lock);
	pb->dead = true;
	if (pb->published)
		pci_p2pmem_publish(pdev, false);
	pb->published = false;
	mutex_unlock(&pb->lock);

	/* No new opens; existing files keep pb alive and see pb->dead. */
	xa_erase(&p2pbar_minors, pb->minor);
	device_destroy(p2pbar_class, MKDEV(MAJOR(p2pbar_devt), pb->minor));
	debugfs_remove_recursive(pb->debugfs);

	/*
	 * Zap every user mapping: faults after this see pb->dead and get
	 * SIGBUS. Files cannot go away meanwhile: releasing one takes pb->lock.
	 */
	mutex_lock(&pb->lock);
	list_for_each_entry(pf, &pb->files, node)
		unmap_mapping_range(pf->filp->f_mapping, 0, 0, 1);
	mutex_unlock(&pb->lock);

	p2pbar_revoke_kernel_users(pb);

	/*
	 * Take back whatever is still owned: handles of open files and
	 * in-kernel allocations past the timeout. The struct p2pbar_mem stay
	 * until their holders let go; only the pages return now, and the core
	 * teardown that follows waits just for GUP pins of I/O in flight.
	 */
	mutex_lock(&pb->lock);
	list_for_each_entry_safe(mem, tmp, &pb->mems, node)
		p2pbar_mem_release_pages(mem);
	mutex_unlock(&pb->lock);

	pci_info(pdev, "p2pbar%d: removed\n", pb->minor);
	p2pbar_put(pb);
}

static struct pci_driver p2pbar_driver = {
	.name = KBUILD_MODNAME,
	.id_table = NULL,	/* bind with driver_override or new_id only */
	.probe = p2pbar_probe,
	.remove = p2pbar_remove,
};

static int __init p2pbar_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&p2pbar_devt, 0, P2PBAR_MAX_DEVS, KBUILD_MODNAME);
	if (ret)
		return ret;
	cdev_init(&p2pbar_cdev, &p2pbar_fops);
	ret = cdev_add(&p2pbar_cdev, p2pbar_devt, P2PBAR_MAX_DEVS);
	if (ret)
		goto err_region;
	p2pbar_class = p2p_class_create(KBUILD_MODNAME);
	if (IS_ERR(p2pbar_class)) {
		ret = PTR_ERR(p2pbar_class);
		goto err_cdev;
	}
	p2pbar_debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	ret = pci_register_driver(&p2pbar_driver);
	if (ret)
		goto err_class;
	return 0;

err_class:
	debugfs_remove_recursive(p2pbar_debugfs);
	class_destroy(p2pbar_class);
err_cdev:
	cdev_del(&p2pbar_cdev);
err_region:
	unregister_chrdev_region(p2pbar_devt, P2PBAR_MAX_DEVS);
	return ret;
}

static void __exit p2pbar_exit(void)
{
	pci_unregister_driver(&p2pbar_driver);
	debugfs_remove_recursive(p2pbar_debugfs);
	class_destroy(p2pbar_class);
	cdev_del(&p2pbar_cdev);
	unregister_chrdev_region(p2pbar_devt, P2PBAR_MAX_DEVS);
}

module_init(p2pbar_init);
module_exit(p2pbar_exit);

P2P_IMPORT_NS("DMA_BUF");
MODULE_DESCRIPTION("Expose a PCI BAR as published P2PDMA memory");
MODULE_LICENSE("GPL");
