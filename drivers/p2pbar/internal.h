/* SPDX-License-Identifier: GPL-2.0 */
/*
 * p2pbar internals: the instance, its allocations and its open files.
 *
 * The driver is split by concern:
 *   main.c   the instance: lookup, probe, the state machine, removal and
 *            quarantine
 *   mem.c    memory lifetime: pool pages, zeroing, draining pinned pages,
 *            the in-kernel API and the revocation of in-kernel users
 *   cdev.c   /dev/p2pbarN: ioctls and mmap
 *   sysfs.c  /sys/class/p2pbar/p2pbarN and debugfs
 *   dmabuf.c the dma-buf exporter (an in-kernel user of mem.c)
 *
 * Locking, outermost first:
 *   p2pbar_list_lock (mutex)  the list of bound instances
 *   p2pbar.lock (mutex)       the instance's state, its allocations, files
 *                             and handles; page faults insert under it
 * pb->lock is never held while memory is zeroed, while a user callback
 * runs, or while removal waits.
 */
#ifndef P2PBAR_INTERNAL_H
#define P2PBAR_INTERNAL_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/p2pbar.h>

#include "p2pbar.h"

#define P2PBAR_MAX_DEVS		64
/* how long removal waits, in all, for in-kernel users to free their memory */
#define P2PBAR_REVOKE_TIMEOUT	(10 * HZ)

/**
 * enum p2pbar_state - life of an instance
 * @P2PBAR_LIVE: probe is done: allocations, mappings, faults, publishing
 * @P2PBAR_REMOVING: remove() has begun: none of those any more
 * @P2PBAR_GONE: remove() took every page back; only references remain
 *
 * LIVE -> REMOVING -> GONE, both by remove(), under pb->lock
 * (p2pbar_set_state()). There is no way back: a re-bind is a new instance.
 */
enum p2pbar_state {
	P2PBAR_LIVE,
	P2PBAR_REMOVING,
	P2PBAR_GONE,
};

/**
 * enum p2pbar_mem_state - life of an allocation's pages
 * @P2PBAR_MEM_LIVE: owned (a handle, an in-kernel user, a mapping): the
 *	pages are p2pbar's and faults may map them
 * @P2PBAR_MEM_ZEROING: the last owner let go; being zeroed outside pb->lock
 * @P2PBAR_MEM_DRAINING: the last owner let go but I/O still pins pages
 *	(O_DIRECT in flight); the drain work zeroes and returns them once the
 *	pins are gone. Still counted in alloc_count/alloc_bytes.
 * @P2PBAR_MEM_RETURNED: the pages went back to the P2PDMA pool, zeroed, or
 *	were taken back by remove() (the pool dies with the instance)
 * @P2PBAR_MEM_QUARANTINED: taken back by remove() from an in-kernel user
 *	that did not free it within P2PBAR_REVOKE_TIMEOUT; until it does, the
 *	BAR range is recorded and p2pbar refuses to bind the function again
 *
 * LIVE -> ZEROING -> RETURNED or DRAINING -> ZEROING -> RETURNED (last
 * reference, drain work, remove()); LIVE -> ZEROING -> RETURNED and LIVE ->
 * QUARANTINED (remove()). All under pb->lock; ZEROING is left by the task
 * that entered it, and a release that finds it waits on pb->wq.
 */
enum p2pbar_mem_state {
	P2PBAR_MEM_LIVE,
	P2PBAR_MEM_ZEROING,
	P2PBAR_MEM_DRAINING,
	P2PBAR_MEM_RETURNED,
	P2PBAR_MEM_QUARANTINED,
};

/**
 * struct p2pbar - one bound provider function
 * @pdev: the function; a reference is held until the last p2pbar_put()
 * @kref: held by the driver binding, open files, allocations and API users
 * @minor: of /dev/p2pbarN
 * @dev: the char device's struct device
 * @region: BAR, offset and size of the p2pmem
 * @bar_size: size of the whole BAR
 * @bus_base: PCI bus address of the first p2pmem byte
 * @debugfs: per-instance debugfs directory
 * @list: entry in p2pbar_list, protected by p2pbar_list_lock
 * @drain_work: returns DRAINING allocations once their pins are gone
 * @wq: woken when @zeroing drops or @kernel_users changes
 * @kernel_users_gone: completed when @kernel_users drops to 0 while REMOVING
 * @lock: protects every field below it
 * @state: enum p2pbar_state
 * @published: last value given to pci_p2pmem_publish()
 * @mems: allocations whose pages are p2pbar's (LIVE, ZEROING, DRAINING)
 * @files: open files (struct p2pbar_file.node)
 * @handles: handle -> struct p2pbar_mem of user allocations; an index
 *	     reserved with a NULL entry is an ALLOC whose result is still being
 *	     copied to userspace
 * @alloc_bytes: bytes of @mems, including what still drains
 * @alloc_count: entries of @mems
 * @kernel_users: allocations owned by in-kernel users, not freed yet
 * @zeroing: allocations being zeroed outside the lock (new or released)
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
	struct delayed_work drain_work;
	wait_queue_head_t wq;
	struct completion kernel_users_gone;

	struct mutex lock;	/* protects the members below */
	enum p2pbar_state state;
	bool published;
	struct list_head mems;
	struct list_head files;
	struct xarray handles;
	u64 alloc_bytes;
	u32 alloc_count;
	unsigned int kernel_users;
	unsigned int zeroing;
};

/**
 * struct p2pbar_mem - one allocation
 * @pb: provider; holds a reference on it
 * @kref: held by the owner (handle or in-kernel user), each user VMA and a
 *	  running revocation; the pages are released when it drops to 0
 * @node: entry in pb->mems while the pages are p2pbar's (pb->lock)
 * @vaddr: kernel address of the first byte (an MMIO mapping: use *io helpers)
 * @size: bytes
 * @bus: PCI bus address
 * @handle: for user allocations, the key in pb->handles; 0 otherwise
 * @ops: in-kernel user callbacks, NULL for user allocations
 * @priv: argument of @ops; the owning struct p2pbar_file for user ones
 * @owner_pid: who allocated it (for the debugfs listing)
 * @revoke_work: runs @ops->revoke when the provider goes away
 * @state: enum p2pbar_mem_state (pb->lock)
 * @revoking: a revocation was queued (pb->lock)
 * @ops_refs: who may still call into @ops: the owner until p2pbar_free(),
 *	      a queued revocation until its callback returned; the last one
 *	      calls @ops->release (pb->lock)
 * @freed: p2pbar_free() was called: no revoke callback from now on
 *	   (pb->lock)
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
	struct work_struct revoke_work;
	enum p2pbar_mem_state state;
	bool revoking;
	unsigned int ops_refs;
	bool freed;
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

/* main.c */
extern struct workqueue_struct *p2pbar_wq;
extern struct class *p2pbar_class;
extern dev_t p2pbar_devt;
extern struct xarray p2pbar_minors;
extern struct dentry *p2pbar_debugfs;

void p2pbar_set_state(struct p2pbar *pb, enum p2pbar_state state);

static inline bool p2pbar_live(struct p2pbar *pb)
{
	lockdep_assert_held(&pb->lock);
	return pb->state == P2PBAR_LIVE;
}

/* mem.c */
struct p2pbar_mem *p2pbar_mem_create(struct p2pbar *pb, size_t len, size_t align,
				     const struct p2pbar_user_ops *ops, void *priv);
void p2pbar_mem_put(struct p2pbar_mem *mem);
void p2pbar_drain_work(struct work_struct *work);
void p2pbar_revoke_kernel_users(struct p2pbar *pb);
void p2pbar_take_back(struct p2pbar *pb);

/* cdev.c */
extern const struct file_operations p2pbar_fops;
void p2pbar_zap_user_mappings(struct p2pbar *pb);
void p2pbar_mem_vma_init(struct p2pbar_mem *mem, struct vm_area_struct *vma);

/* sysfs.c */
extern const struct attribute_group *p2pbar_groups[];
void p2pbar_debugfs_init(struct p2pbar *pb);

/* main.c: quarantine of memory in-kernel users kept past removal */
void p2pbar_quarantine(struct p2pbar_mem *mem);
void p2pbar_unquarantine(struct p2pbar_mem *mem);

#endif /* P2PBAR_INTERNAL_H */
