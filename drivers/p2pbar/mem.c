// SPDX-License-Identifier: GPL-2.0
/*
 * p2pbar memory lifetime: pages from the P2PDMA pool, zeroed before anyone
 * sees them and before they go back; the in-kernel API; the revocation of
 * in-kernel users when the provider goes away.
 *
 * Page ownership (kernels whose P2P pages have a page_free callback, 6.2+):
 * every page of an allocation carries one reference owned by p2pbar plus
 * one per user mapping or GUP pin. p2pbar drops its references only once
 * the allocation is zeroed and nothing else holds a page, so memory that is
 * still mapped or under I/O is never handed out again, and never with
 * someone else's bytes in it: the pool is shared with the kernel's own
 * p2pmem/allocate and with nvmet, which do not zero. Before 6.2 the pages
 * cannot be mapped to userspace and are freed with pci_free_p2pmem().
 *
 * Zeroing is uncached MMIO (seconds for GiBs on a real BAR): it runs
 * outside pb->lock, in chunks, rescheduling in between.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/io.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci-p2pdma.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <p2p_compat.h>

#include "internal.h"
#include "trace.h"

#define P2PBAR_ZERO_CHUNK	SZ_1M
#define P2PBAR_DRAIN_PERIOD	max(HZ / 50, 1)

/* ---- pool pages ------------------------------------------------------ */

#if P2P_HAVE_USER_PAGES
/*
 * Take ownership of freshly allocated pool pages: one page reference each
 * (kernels with folio_free, 7.x, keep idle P2P pages at refcount 0, 6.2 to
 * 6.x at 1: anything else is a leaked reference, warned about as upstream
 * does) and one pgmap
 * reference each, which the core's page_free callback drops when the page
 * returns to the pool. The single pgmap reference pci_alloc_p2pmem() took
 * for the whole range is dropped by the caller.
 */
static void p2pbar_own_pages(void *vaddr, size_t len)
{
	size_t off;

	for (off = 0; off < len; off += PAGE_SIZE) {
		struct page *page = virt_to_page(vaddr + off);

		/* a page someone else still holds would be handed out twice */
#ifdef HAVE_PGMAP_FOLIO_FREE
		VM_WARN_ON_ONCE_PAGE(page_ref_count(page), page);
		set_page_count(page, 1);
#else
		VM_WARN_ON_ONCE_PAGE(page_ref_count(page) != 1, page);
#endif
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

/* Does anything but p2pbar (a GUP pin of I/O in flight) hold a page? */
static bool p2pbar_mem_pinned(struct p2pbar_mem *mem)
{
	size_t off;

	for (off = 0; off < mem->size; off += PAGE_SIZE)
		if (page_ref_count(virt_to_page(mem->vaddr + off)) != 1)
			return true;
	return false;
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

static bool p2pbar_mem_pinned(struct p2pbar_mem *mem)
{
	return false;	/* no user mappings, no GUP of P2P pages before 6.2 */
}
#endif

/* Zero uncached MMIO without hogging the CPU. Never under pb->lock. */
static void p2pbar_zero(void *vaddr, size_t len)
{
	size_t off, n;

	for (off = 0; off < len; off += n) {
		n = min_t(size_t, len - off, P2PBAR_ZERO_CHUNK);
		memset_io((void __iomem __force *)vaddr + off, 0, n);
		cond_resched();
	}
}

/* The pages leave p2pbar: back to the pool (RETURNED) or QUARANTINED. */
static void p2pbar_mem_return(struct p2pbar_mem *mem, enum p2pbar_mem_state to)
{
	struct p2pbar *pb = mem->pb;

	lockdep_assert_held(&pb->lock);
	list_del_init(&mem->node);
	pb->alloc_bytes -= mem->size;
	pb->alloc_count--;
	mem->state = to;
	p2pbar_pool_free(pb, mem->vaddr, mem->size);
	trace_p2pbar_return(pb->pdev, mem->bus, mem->size, to == P2PBAR_MEM_QUARANTINED ?
			    P2PBAR_TRACE_QUARANTINED : P2PBAR_TRACE_RETURNED);
}

/*
 * Zero @mem, which nobody can reach any more, and return its pages.
 * Called and returns with pb->lock held; drops it while zeroing. remove()
 * waits for pb->zeroing before it takes pages back.
 */
static void p2pbar_mem_zero_and_return(struct p2pbar_mem *mem)
{
	struct p2pbar *pb = mem->pb;

	lockdep_assert_held(&pb->lock);
	mem->state = P2PBAR_MEM_ZEROING;
	pb->zeroing++;
	mutex_unlock(&pb->lock);
	p2pbar_zero(mem->vaddr, mem->size);
	mutex_lock(&pb->lock);
	pb->zeroing--;
	p2pbar_mem_return(mem, P2PBAR_MEM_RETURNED);
	wake_up_all(&pb->wq);	/* pb->zeroing, and a release waiting for mem */
}

static void p2pbar_mem_kref_release(struct kref *kref)
{
	struct p2pbar_mem *mem = container_of(kref, struct p2pbar_mem, kref);
	struct p2pbar *pb = mem->pb;

	mutex_lock(&pb->lock);
	/* remove() may be zeroing it to take it back: let it finish */
	while (mem->state == P2PBAR_MEM_ZEROING) {
		mutex_unlock(&pb->lock);
		wait_event(pb->wq, READ_ONCE(mem->state) != P2PBAR_MEM_ZEROING);
		mutex_lock(&pb->lock);
	}
	switch (mem->state) {
	case P2PBAR_MEM_LIVE:
		/*
		 * Zeroed even while the instance is going away: until the core's
		 * teardown the pool still serves p2pmem/allocate and nvmet.
		 */
		if (p2pbar_mem_pinned(mem)) {
			/* I/O still writes here: the drain work (or remove()) finishes */
			mem->state = P2PBAR_MEM_DRAINING;
			if (p2pbar_live(pb))
				mod_delayed_work(p2pbar_wq, &pb->drain_work, P2PBAR_DRAIN_PERIOD);
			mutex_unlock(&pb->lock);
			return;
		}
		p2pbar_mem_zero_and_return(mem);
		break;
	case P2PBAR_MEM_RETURNED:
		break;			/* taken back by remove() */
	case P2PBAR_MEM_QUARANTINED:
		p2pbar_unquarantine(mem);
		break;
	default:
		WARN(1, "p2pbar: allocation released in state %d\n", mem->state);
		break;
	}
	mutex_unlock(&pb->lock);
	kfree(mem);
	p2pbar_put(pb);
}

void p2pbar_mem_put(struct p2pbar_mem *mem)
{
	kref_put(&mem->kref, p2pbar_mem_kref_release);
}

/**
 * p2pbar_drain_work - return released allocations once their pins are gone
 * @work: pb->drain_work
 *
 * Runs while the instance is LIVE; remove() cancels it and takes what is
 * left back itself.
 */
void p2pbar_drain_work(struct work_struct *work)
{
	struct p2pbar *pb = container_of(to_delayed_work(work), struct p2pbar, drain_work);
	struct p2pbar_mem *mem;
	bool pending = false;

	mutex_lock(&pb->lock);
again:
	list_for_each_entry(mem, &pb->mems, node) {
		if (mem->state != P2PBAR_MEM_DRAINING)
			continue;
		if (p2pbar_mem_pinned(mem)) {
			pending = true;
			continue;
		}
		/* the lock is dropped: start over afterwards */
		p2pbar_mem_zero_and_return(mem);
		mutex_unlock(&pb->lock);
		kfree(mem);
		p2pbar_put(pb);		/* not the last: the binding holds one */
		mutex_lock(&pb->lock);
		pending = false;
		goto again;
	}
	if (pending && p2pbar_live(pb))
		queue_delayed_work(p2pbar_wq, &pb->drain_work, P2PBAR_DRAIN_PERIOD);
	mutex_unlock(&pb->lock);
}

/**
 * p2pbar_mem_create - allocate, zero and account
 * @pb: the instance
 * @len: bytes, a multiple of PAGE_SIZE
 * @align: alignment of the bus address, a power of two >= PAGE_SIZE
 * @ops: in-kernel user callbacks, or NULL for a user allocation
 * @priv: argument of @ops, or the owning struct p2pbar_file
 *
 * Takes pb->lock itself; zeroes without it.
 *
 * Return: the allocation with one reference, or ERR_PTR(): -ENODEV (the
 * instance is going away), -ENOSPC (no room), -ENOMEM, -EOPNOTSUPP.
 */
struct p2pbar_mem *p2pbar_mem_create(struct p2pbar *pb, size_t len, size_t align,
				     const struct p2pbar_user_ops *ops, void *priv)
{
	struct p2pbar_mem *mem;
	void *vaddr;

	/* a removed instance says so, not "no room" from its dying pool */
	mutex_lock(&pb->lock);
	if (!p2pbar_live(pb)) {
		mutex_unlock(&pb->lock);
		return ERR_PTR(-ENODEV);
	}
	mutex_unlock(&pb->lock);
	mem = kzalloc_obj(*mem, GFP_KERNEL);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	vaddr = p2pbar_pool_alloc(pb, len, align);
	if (IS_ERR_OR_NULL(vaddr)) {
		kfree(mem);
		return vaddr ? vaddr : ERR_PTR(-ENOSPC);
	}
	/* nobody sees the memory before it is zeroed: it is not listed yet */
	p2pbar_zero(vaddr, len);

	kref_init(&mem->kref);
	mem->ops_refs = 1;	/* the owner's, until p2pbar_free() */
	mem->pb = pb;
	mem->vaddr = vaddr;
	mem->size = len;
	mem->bus = pci_p2pmem_virt_to_bus(pb->pdev, vaddr);
	mem->ops = ops;
	mem->priv = priv;
	mem->owner_pid = task_tgid_nr(current);
	mem->state = P2PBAR_MEM_LIVE;

	mutex_lock(&pb->lock);
	if (!p2pbar_live(pb)) {
		mutex_unlock(&pb->lock);
		p2pbar_pool_free(pb, vaddr, len);
		kfree(mem);
		return ERR_PTR(-ENODEV);
	}
	kref_get(&pb->kref);
	list_add_tail(&mem->node, &pb->mems);
	pb->alloc_bytes += len;
	pb->alloc_count++;
	if (ops)
		pb->kernel_users++;
	mutex_unlock(&pb->lock);
	trace_p2pbar_alloc(pb->pdev, mem->bus, len, ops ? P2PBAR_TRACE_KERNEL : P2PBAR_TRACE_USER);
	pci_dbg(pb->pdev, "allocated %zu bytes at bus address %#llx for %s (pid %d)\n", len,
		(u64)mem->bus, ops ? "an in-kernel user" : "userspace", mem->owner_pid);
	return mem;
}

/* ---- the in-kernel API ------------------------------------------------- */

/**
 * p2pbar_alloc - allocate zeroed p2pmem for an in-kernel user
 * @pb: provider the caller holds a reference to
 * @size: bytes, rounded up to whole pages
 * @ops: callbacks; @ops->revoke is mandatory
 * @priv: passed to @ops
 *
 * The memory stays valid until p2pbar_free(). When the provider goes away,
 * @ops->revoke is called and the user must stop DMA and free the memory
 * within P2PBAR_REVOKE_TIMEOUT (all users' callbacks run in parallel). A
 * user that does not is named in the kernel log and its memory quarantined:
 * the provider's removal completes, but p2pbar refuses to bind the function
 * again until the user frees it. Sleeps (zeroing is uncached MMIO).
 *
 * Return: the allocation, or ERR_PTR(): -EINVAL (bad arguments), -ENODEV
 * (provider removed), -ENOSPC (no room), -ENOMEM.
 */
struct p2pbar_mem *p2pbar_alloc(struct p2pbar *pb, size_t size,
				const struct p2pbar_user_ops *ops, void *priv)
{
	might_sleep();
	if (!size || !ops || !ops->revoke)
		return ERR_PTR(-EINVAL);
	return p2pbar_mem_create(pb, PAGE_ALIGN(size), PAGE_SIZE, ops, priv);
}
EXPORT_SYMBOL_GPL(p2pbar_alloc);

/*
 * The last of the two that may call into the user's ops is done with them:
 * the owner (p2pbar_free()) or the revocation (its callback returned, or it
 * found the memory freed). Release the user's argument.
 */
static void p2pbar_mem_ops_done(struct p2pbar_mem *mem)
{
	if (mem->ops->release)
		mem->ops->release(mem->priv);
}

/**
 * p2pbar_free - free memory from p2pbar_alloc()
 * @mem: the allocation; must not be used afterwards
 *
 * The user must have stopped all DMA to @mem. May be called from any
 * context that may sleep: the revoke callback, a work item the callback
 * flushes, a thread holding a lock the callback takes. It never waits for
 * the revoke callback, so it cannot deadlock with it; a callback the
 * revocation had already picked (running in another thread, or about to
 * start) may still run when it returns. What the
 * callback uses (@priv of p2pbar_alloc()) is the user's until
 * @ops->release: see struct p2pbar_user_ops. Sleeps.
 */
void p2pbar_free(struct p2pbar_mem *mem)
{
	struct p2pbar *pb = mem->pb;
	bool last;

	might_sleep();
	mutex_lock(&pb->lock);
	if (WARN_ON_ONCE(mem->freed || !mem->ops)) {
		mutex_unlock(&pb->lock);
		return;
	}
	mem->freed = true;
	if (!--pb->kernel_users && !p2pbar_live(pb))
		complete(&pb->kernel_users_gone);
	last = !--mem->ops_refs;
	mutex_unlock(&pb->lock);
	if (last)
		p2pbar_mem_ops_done(mem);
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

/* ---- removal ------------------------------------------------------------ */

static void p2pbar_revoke_one(struct work_struct *work)
{
	struct p2pbar_mem *mem = container_of(work, struct p2pbar_mem, revoke_work);
	struct p2pbar *pb = mem->pb;
	bool run, last;

	mutex_lock(&pb->lock);
	run = !mem->freed;
	mutex_unlock(&pb->lock);
	/* unlocked: the callback calls p2pbar_free(), here or elsewhere */
	if (run)
		mem->ops->revoke(mem, mem->priv);
	mutex_lock(&pb->lock);
	last = !--mem->ops_refs;
	mutex_unlock(&pb->lock);
	if (last)
		p2pbar_mem_ops_done(mem);
	p2pbar_mem_put(mem);	/* the revocation's reference */
}

/**
 * p2pbar_revoke_kernel_users - ask in-kernel users to give their memory back
 * @pb: an instance that is REMOVING
 *
 * Every user's revoke callback runs at once, each from its own work item,
 * and all of them get one P2PBAR_REVOKE_TIMEOUT in total: N users do not
 * cost N timeouts. What is still not freed then is quarantined by
 * p2pbar_take_back().
 */
void p2pbar_revoke_kernel_users(struct p2pbar *pb)
{
	unsigned int pending, users;
	unsigned long t0 = jiffies;
	struct p2pbar_mem *mem;

	mutex_lock(&pb->lock);
	WARN_ON(pb->state != P2PBAR_REMOVING);
	list_for_each_entry(mem, &pb->mems, node) {
		if (!mem->ops || mem->freed || mem->revoking)
			continue;
		mem->revoking = true;
		mem->ops_refs++;	/* the revocation's, until its callback returned */
		kref_get(&mem->kref);
		INIT_WORK(&mem->revoke_work, p2pbar_revoke_one);
		queue_work(p2pbar_wq, &mem->revoke_work);
	}
	users = pb->kernel_users;
	pending = users;
	mutex_unlock(&pb->lock);
	trace_p2pbar_revoke(pb->pdev, false, users, users, 0);
	if (users)
		pci_dbg(pb->pdev, "revoking %u in-kernel allocations\n", users);

	if (pending && !wait_for_completion_timeout(&pb->kernel_users_gone,
						    P2PBAR_REVOKE_TIMEOUT)) {
		mutex_lock(&pb->lock);
		pending = pb->kernel_users;
		mutex_unlock(&pb->lock);
		if (pending)
			pci_err(pb->pdev, "%u in-kernel allocations not freed %u s after revocation\n",
				pending, P2PBAR_REVOKE_TIMEOUT / HZ);
	} else {
		pending = 0;
	}
	trace_p2pbar_revoke(pb->pdev, true, users, pending, jiffies_to_msecs(jiffies - t0));
	if (users)
		pci_dbg(pb->pdev, "revocation done in %u ms, %u allocations not given back\n",
			jiffies_to_msecs(jiffies - t0), pending);
}

/**
 * p2pbar_take_back - take every page back from a REMOVING instance
 * @pb: the instance; its user mappings are zapped, its kernel users were
 *	revoked
 *
 * Releases still in progress finish first (no page is taken back under a
 * zeroing). Allocations still owned keep their struct until their owners
 * let go, but the pages return now, so that the core's teardown only waits
 * for GUP pins of I/O in flight. Memory an in-kernel user did not free is
 * quarantined (see p2pbar_quarantine()). The instance is GONE afterwards.
 */
void p2pbar_take_back(struct p2pbar *pb)
{
	struct p2pbar_mem *mem, *tmp;
	LIST_HEAD(drained);
	bool was_draining;

	cancel_delayed_work_sync(&pb->drain_work);

	mutex_lock(&pb->lock);
again:
	/* releases that zero right now finish first */
	while (pb->zeroing) {
		mutex_unlock(&pb->lock);
		wait_event(pb->wq, !READ_ONCE(pb->zeroing));
		mutex_lock(&pb->lock);
	}
	list_for_each_entry(mem, &pb->mems, node) {
		if (mem->state == P2PBAR_MEM_LIVE && mem->ops && !mem->freed) {
			pci_err(pb->pdev, "in-kernel user %ps keeps %zu bytes at bus address %#llx after removal: quarantined\n",
				mem->ops->revoke, mem->size, (u64)mem->bus);
			/* the user may still write here: no zeroing that would mean anything */
			p2pbar_mem_return(mem, P2PBAR_MEM_QUARANTINED);
			p2pbar_quarantine(mem);
			goto again;
		}
		if (WARN(mem->state != P2PBAR_MEM_LIVE && mem->state != P2PBAR_MEM_DRAINING,
			 "p2pbar: allocation in state %d at removal\n", mem->state))
			continue;
		/*
		 * Zeroed before it goes back: the pool still serves other
		 * allocators until the core's teardown. Pages that I/O still
		 * pins are zeroed now and return when the pins go.
		 */
		was_draining = mem->state == P2PBAR_MEM_DRAINING;
		p2pbar_mem_zero_and_return(mem);	/* drops the lock */
		if (was_draining)
			list_add(&mem->node, &drained);	/* nobody holds it */
		goto again;
	}
	p2pbar_set_state(pb, P2PBAR_GONE);
	mutex_unlock(&pb->lock);

	list_for_each_entry_safe(mem, tmp, &drained, node) {
		kfree(mem);
		p2pbar_put(pb);
	}
}
