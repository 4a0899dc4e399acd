// SPDX-License-Identifier: GPL-2.0
/*
 * p2pbar: expose a memory BAR of any PCI function as p2pmem.
 *
 * The administrator binds a function with driver_override or new_id (there
 * is no ID table: the driver never grabs a device by surprise). Probe
 * requests the BAR, registers the chosen part of it with
 * pci_p2pdma_add_resource(), which creates ZONE_DEVICE pages, publishes it
 * for other drivers and creates /dev/p2pbarN. Userspace allocates zeroed
 * p2pmem with ioctls and maps it (cdev.c); in-kernel users allocate through
 * the API in <linux/p2pbar.h> (mem.c).
 *
 * Removal while memory is in use (remove()): the instance leaves LIVE
 * (ioctls, faults and publishing fail from then on), is unpublished, every
 * user mapping is zapped (later access gets SIGBUS), in-kernel users are
 * asked, all at once, to give their memory back and get one bounded wait,
 * then p2pbar takes every page back so that the core's teardown, which
 * waits for every page, only waits for I/O in flight. Memory an in-kernel
 * user still holds then is quarantined: the user is named in the log, and
 * p2pbar refuses to bind the function again until that memory is freed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/memremap.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <p2p_compat.h>

#include "internal.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static int bar = -1;
module_param(bar, int, 0444);
MODULE_PARM_DESC(bar, "BAR to expose (default -1: the largest 64-bit prefetchable memory BAR)");

static unsigned long long offset;
module_param(offset, ullong, 0444);
MODULE_PARM_DESC(offset, "Offset into the BAR, a multiple of 2 MiB (default 0)");

static unsigned long long size;
module_param(size, ullong, 0444);
MODULE_PARM_DESC(size, "Bytes to expose, a multiple of 2 MiB (default 0: to the end of the BAR)");

/*
 * region=: per device, which BAR and part of it, applied at probe in place
 * of bar=, offset= and size=. Writable, so that it can be set before a
 * device is bound; a write replaces the whole table or, when any entry is
 * wrong, changes nothing.
 */
static DEFINE_MUTEX(p2pbar_regions_lock);
static bool p2pbar_loaded;	/* module init is done: region= writes come from sysfs */
static struct p2pbar_dev_region p2pbar_regions[P2PBAR_MAX_DEV_REGIONS];	/* the lock */
static unsigned int p2pbar_nr_regions;						/* the lock */

static void p2pbar_bars_of(struct pci_dev *pdev, struct p2pbar_bar_desc *bars)
{
	int i;

	for (i = 0; i < P2PBAR_NR_BARS; i++) {
		bars[i].len = pci_resource_len(pdev, i);
		bars[i].flags = pci_resource_flags(pdev, i);
		bars[i].start = pci_resource_start(pdev, i);
	}
}

static int p2pbar_regions_set(const char *val, const struct kernel_param *kp)
{
	struct p2pbar_dev_region *tab;
	struct p2pbar_bar_desc bars[P2PBAR_NR_BARS];
	struct p2pbar_region region;
	struct pci_dev *pdev;
	unsigned int n, i;
	const char *why;
	int ret;

	tab = kcalloc(P2PBAR_MAX_DEV_REGIONS, sizeof(*tab), GFP_KERNEL);
	if (!tab)
		return -ENOMEM;
	ret = p2pbar_parse_regions(val, tab, P2PBAR_MAX_DEV_REGIONS, &n, &why);
	if (ret) {
		pr_err("region=%.80s: %s\n", val, why);
		goto out;
	}
	/* devices that are there are checked now: a wrong entry changes nothing */
	for (i = 0; i < n; i++) {
		pdev = pci_get_domain_bus_and_slot(tab[i].domain, tab[i].bus, tab[i].devfn);
		if (!pdev && !p2pbar_loaded) {
			/* given at load time: the device may be hot-plugged later */
			pr_info("region=: no PCI device %04x:%02x:%02x.%d yet; its entry applies when it appears\n",
				tab[i].domain, tab[i].bus, PCI_SLOT(tab[i].devfn),
				PCI_FUNC(tab[i].devfn));
			continue;
		}
		if (!pdev) {
			pr_err("region=: no PCI device %04x:%02x:%02x.%d\n", tab[i].domain,
			       tab[i].bus, PCI_SLOT(tab[i].devfn), PCI_FUNC(tab[i].devfn));
			ret = -ENODEV;
			goto out;
		}
		p2pbar_bars_of(pdev, bars);
		ret = p2pbar_pick_region(bars, tab[i].bar, tab[i].offset, tab[i].size,
					 memremap_compat_align(), &region, &why);
		if (ret) {
			pci_err(pdev, "region=: cannot use BAR %d offset %llu size %llu: %s\n",
				tab[i].bar, tab[i].offset, tab[i].size, why);
			pci_dev_put(pdev);
			goto out;
		}
		pci_dev_put(pdev);
	}
	mutex_lock(&p2pbar_regions_lock);
	memcpy(p2pbar_regions, tab, n * sizeof(*tab));
	p2pbar_nr_regions = n;
	mutex_unlock(&p2pbar_regions_lock);
out:
	kfree(tab);
	return ret;
}

static int p2pbar_regions_get(char *buf, const struct kernel_param *kp)
{
	struct p2pbar_dev_region *r;
	unsigned int i;
	int len = 0;

	mutex_lock(&p2pbar_regions_lock);
	for (i = 0; i < p2pbar_nr_regions; i++) {
		r = &p2pbar_regions[i];
		len += sysfs_emit_at(buf, len, "%s%04x:%02x:%02x.%d@%d:%llu:%llu", i ? "," : "",
				     r->domain, r->bus, PCI_SLOT(r->devfn), PCI_FUNC(r->devfn),
				     r->bar, r->offset, r->size);
	}
	mutex_unlock(&p2pbar_regions_lock);
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}

static const struct kernel_param_ops p2pbar_regions_ops = {
	.set = p2pbar_regions_set,
	.get = p2pbar_regions_get,
};
module_param_cb(region, &p2pbar_regions_ops, NULL, 0644);
MODULE_PARM_DESC(region, "Per device: BDF@BAR[:OFFSET[:SIZE]],... (e.g. 0000:04:00.0@2:32M:16M); overrides bar/offset/size for those devices");

/* The region= entry of @pdev, if it has one; else the module-wide choice. */
static void p2pbar_request_of(struct pci_dev *pdev, int *b, u64 *off, u64 *sz)
{
	unsigned int i;

	*b = bar;
	*off = offset;
	*sz = size;
	mutex_lock(&p2pbar_regions_lock);
	for (i = 0; i < p2pbar_nr_regions; i++) {
		struct p2pbar_dev_region *r = &p2pbar_regions[i];

		if (r->domain == pci_domain_nr(pdev->bus) && r->bus == pdev->bus->number &&
		    r->devfn == pdev->devfn) {
			*b = r->bar;
			*off = r->offset;
			*sz = r->size;
			break;
		}
	}
	mutex_unlock(&p2pbar_regions_lock);
}

static bool publish = true;
module_param(publish, bool, 0444);
MODULE_PARM_DESC(publish, "Publish the memory for other drivers at probe (default true; see sysfs p2pbar/published)");

/* revocations and draining: flushed by module exit, never left running it */
struct workqueue_struct *p2pbar_wq;
dev_t p2pbar_devt;
static struct cdev p2pbar_cdev;
struct class *p2pbar_class;
struct dentry *p2pbar_debugfs;
/* minor -> struct p2pbar; xa_lock is taken with kref_get to open safely */
DEFINE_XARRAY_ALLOC(p2pbar_minors);
/* All bound instances, for p2pbar_find(); protects p2pbar_list. */
static DEFINE_MUTEX(p2pbar_list_lock);
static LIST_HEAD(p2pbar_list);

static void p2pbar_release(struct kref *kref)
{
	struct p2pbar *pb = container_of(kref, struct p2pbar, kref);

	WARN_ON(!list_empty(&pb->mems));
	WARN_ON(delayed_work_pending(&pb->drain_work));
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

/* ---- state -------------------------------------------------------------- */

/**
 * p2pbar_set_state - move an instance along LIVE -> REMOVING -> GONE
 * @pb: the instance, pb->lock held
 * @state: the next state; any other transition is a bug (WARN, ignored)
 */
void p2pbar_set_state(struct p2pbar *pb, enum p2pbar_state state)
{
	lockdep_assert_held(&pb->lock);
	if (WARN(state != pb->state + 1, "p2pbar: state %d -> %d\n", pb->state, state))
		return;
	WRITE_ONCE(pb->state, state);
}

/* ---- quarantine ----------------------------------------------------------- */

/**
 * struct p2pbar_quarantined - BAR memory an in-kernel user kept past removal
 * @node: entry in p2pbar_quarantine_list
 * @mem: the allocation; its struct lives until the user frees it
 * @domain: PCI domain of the provider function
 * @devid: bus << 8 | devfn of it
 * @bdf: its name, for messages once the function itself is gone
 */
struct p2pbar_quarantined {
	struct list_head node;
	struct p2pbar_mem *mem;
	int domain;
	u16 devid;
	char bdf[32];
};

/* Memory still in use by someone who ignored a revocation; see probe. */
static DEFINE_MUTEX(p2pbar_quarantine_lock);
static LIST_HEAD(p2pbar_quarantine_list);

/**
 * p2pbar_quarantine - remember memory taken back from an uncooperative user
 * @mem: the allocation, QUARANTINED, pb->lock held
 *
 * The user may still DMA to the range: p2pbar will not bind the function
 * again (a new pool would hand the range out) until p2pbar_unquarantine().
 * A failed record costs only that protection, which is logged.
 */
void p2pbar_quarantine(struct p2pbar_mem *mem)
{
	struct pci_dev *pdev = mem->pb->pdev;
	struct p2pbar_quarantined *q;

	lockdep_assert_held(&mem->pb->lock);
	q = kzalloc_obj(*q, GFP_KERNEL);
	if (!q) {
		pci_err(pdev, "cannot record quarantined memory: a re-bind will reuse it\n");
		return;
	}
	q->mem = mem;
	q->domain = pci_domain_nr(pdev->bus);
	q->devid = pci_dev_id(pdev);
	strscpy(q->bdf, pci_name(pdev), sizeof(q->bdf));
	mutex_lock(&p2pbar_quarantine_lock);
	list_add_tail(&q->node, &p2pbar_quarantine_list);
	mutex_unlock(&p2pbar_quarantine_lock);
}

/**
 * p2pbar_unquarantine - the user of quarantined memory let go of it
 * @mem: the allocation being released, pb->lock held
 */
void p2pbar_unquarantine(struct p2pbar_mem *mem)
{
	struct p2pbar_quarantined *q, *tmp;

	lockdep_assert_held(&mem->pb->lock);
	mutex_lock(&p2pbar_quarantine_lock);
	list_for_each_entry_safe(q, tmp, &p2pbar_quarantine_list, node) {
		if (q->mem != mem)
			continue;
		pr_info("%s: quarantined memory at bus address %#llx freed by its user\n",
			q->bdf, (u64)mem->bus);
		list_del(&q->node);
		kfree(q);
	}
	mutex_unlock(&p2pbar_quarantine_lock);
}

static unsigned int p2pbar_quarantined_on(struct pci_dev *pdev)
{
	struct p2pbar_quarantined *q;
	unsigned int n = 0;

	mutex_lock(&p2pbar_quarantine_lock);
	list_for_each_entry(q, &p2pbar_quarantine_list, node)
		n += q->domain == pci_domain_nr(pdev->bus) && q->devid == pci_dev_id(pdev);
	mutex_unlock(&p2pbar_quarantine_lock);
	return n;
}

/* ---- PCI driver ------------------------------------------------------ */

static int p2pbar_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct p2pbar_bar_desc bars[P2PBAR_NR_BARS];
	struct p2pbar_region region;
	u64 want_off, want_size;
	struct p2pbar *pb;
	const char *why;
	unsigned int n;
	int want_bar, ret;

	n = p2pbar_quarantined_on(pdev);
	if (n) {
		pci_err(pdev, "%u allocations of the previous binding are still in use by an in-kernel user that ignored its revocation; not binding until they are freed\n",
			n);
		return -EBUSY;
	}
	p2pbar_bars_of(pdev, bars);
	p2pbar_request_of(pdev, &want_bar, &want_off, &want_size);
	ret = p2pbar_pick_region(bars, want_bar, want_off, want_size, memremap_compat_align(),
				 &region, &why);
	if (ret) {
		pci_err(pdev, "cannot use bar=%d offset=%llu size=%llu: %s\n",
			want_bar, want_off, want_size, why);
		return ret;
	}

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	/* no other driver may claim the BAR while p2pmem lives there */
	ret = pcim_request_region(pdev, region.bar, KBUILD_MODNAME);
	if (ret) {
		pci_err(pdev, "BAR %d is in use by another driver (%d)\n", region.bar, ret);
		return ret;
	}

	pb = kzalloc_obj(*pb, GFP_KERNEL);
	if (!pb)
		return -ENOMEM;
	kref_init(&pb->kref);
	mutex_init(&pb->lock);
	INIT_LIST_HEAD(&pb->mems);
	INIT_LIST_HEAD(&pb->files);
	INIT_LIST_HEAD(&pb->list);
	xa_init_flags(&pb->handles, XA_FLAGS_ALLOC1);
	INIT_DELAYED_WORK(&pb->drain_work, p2pbar_drain_work);
	init_waitqueue_head(&pb->wq);
	init_completion(&pb->kernel_users_gone);
	pb->state = P2PBAR_LIVE;
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
	p2pbar_debugfs_init(pb);

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

static void p2pbar_remove(struct pci_dev *pdev)
{
	struct p2pbar *pb = pci_get_drvdata(pdev);

	mutex_lock(&p2pbar_list_lock);
	list_del_init(&pb->list);
	mutex_unlock(&p2pbar_list_lock);

	/* from here: no allocation, fault, mapping, publish or open */
	mutex_lock(&pb->lock);
	p2pbar_set_state(pb, P2PBAR_REMOVING);
	if (pb->published)
		pci_p2pmem_publish(pdev, false);
	WRITE_ONCE(pb->published, false);
	mutex_unlock(&pb->lock);

	xa_erase(&p2pbar_minors, pb->minor);
	device_destroy(p2pbar_class, MKDEV(MAJOR(p2pbar_devt), pb->minor));
	debugfs_remove_recursive(pb->debugfs);

	p2pbar_zap_user_mappings(pb);
	p2pbar_revoke_kernel_users(pb);
	p2pbar_take_back(pb);

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

	p2pbar_wq = alloc_workqueue(KBUILD_MODNAME, WQ_UNBOUND, 0);
	if (!p2pbar_wq)
		return -ENOMEM;
	ret = alloc_chrdev_region(&p2pbar_devt, 0, P2PBAR_MAX_DEVS, KBUILD_MODNAME);
	if (ret)
		goto err_wq;
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
	WRITE_ONCE(p2pbar_loaded, true);
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
err_wq:
	destroy_workqueue(p2pbar_wq);
	return ret;
}

/*
 * No quarantine record outlives the module: whoever holds quarantined
 * memory holds the module too (a user of p2pbar_alloc() by its symbol
 * references, an exported dma-buf by its owner reference).
 */
static void __exit p2pbar_exit(void)
{
	pci_unregister_driver(&p2pbar_driver);
	debugfs_remove_recursive(p2pbar_debugfs);
	class_destroy(p2pbar_class);
	cdev_del(&p2pbar_cdev);
	unregister_chrdev_region(p2pbar_devt, P2PBAR_MAX_DEVS);
	destroy_workqueue(p2pbar_wq);	/* a revocation's last steps run here */
}

module_init(p2pbar_init);
module_exit(p2pbar_exit);

P2P_IMPORT_NS("DMA_BUF");
MODULE_DESCRIPTION("Expose a PCI BAR as published P2PDMA memory");
MODULE_VERSION(P2P_VERSION);
MODULE_LICENSE("GPL");
