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
 * The files, top down (calls only go down; scripts/layers.py checks it):
 * pci.c (this: the PCI driver, module parameters, the controller's
 * lifetime), cdev.c (the char device and its ioctls), sysfs.c (sysfs and
 * debugfs); uring.c (io_uring passthrough), disk.c (the namespace as a
 * block device, disk=1); io.c (requests: pin, map,
 * bounce, submit, complete); reg.c (registered buffers), dmabuf.c (dma-buf
 * import); ctrl.c (the controller's state, the I/O guard, reset and
 * recovery); admin.c (registers, bring-up, admin commands); queue.c
 * (queue pairs, command slots, submission, completion, timeouts); dptr.c
 * (data pointers: PRPs, SGLs).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/cpuhotplug.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
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

#include "driver.h"
#include "uring.h"
#include "disk.h"
#include "file.h"
#include "shadow.h"
#include "reg.h"
#include "ctrl.h"
#include "admin.h"
#include "queue.h"

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

unsigned int p2pnvme_io_timeout_ms = P2PNVME_IO_TIMEOUT_MS;
/* msecs_to_jiffies() of it, rounded up as that does, for every command */
unsigned long p2pnvme_io_timeout_jiffies = DIV_ROUND_UP(P2PNVME_IO_TIMEOUT_MS * HZ, MSEC_PER_SEC);
static struct uint_range io_timeout_range = { &p2pnvme_io_timeout_ms, 10, 3600000 };

/* io_timeout_ms, and the jiffies p2pnvme_io_timeout() reads from it */
static int io_timeout_set(const char *arg, const struct kernel_param *kp)
{
	int ret = uint_range_set(arg, kp);

	if (!ret)
		WRITE_ONCE(p2pnvme_io_timeout_jiffies,
			   msecs_to_jiffies(READ_ONCE(p2pnvme_io_timeout_ms)) ?: 1);
	return ret;
}

static const struct kernel_param_ops io_timeout_ops = {
	.set = io_timeout_set,
	.get = uint_range_get,
};

module_param_cb(io_timeout_ms, &io_timeout_ops, &io_timeout_range, 0644);
MODULE_PARM_DESC(io_timeout_ms, "Per-command timeout before abort and reset, 10 .. 3600000 (default 5000)");

bool p2pnvme_bounce = true;
module_param_named(bounce, p2pnvme_bounce, bool, 0644);
MODULE_PARM_DESC(bounce, "Bounce p2pmem through host memory when P2P is impossible (default true; false: -EREMOTEIO)");

unsigned int p2pnvme_max_io_queues = P2PNVME_MAX_IOQ;
static struct uint_range max_io_queues_range = { &p2pnvme_max_io_queues, 1, P2PNVME_MAX_IOQ };
module_param_cb(max_io_queues, &uint_range_ops, &max_io_queues_range, 0444);
MODULE_PARM_DESC(max_io_queues, "I/O queue pairs to ask for, 1 .. 32, at most one per online CPU (default 32)");

static unsigned int io_queue_depth = 1024;
static struct uint_range io_queue_depth_range = { &io_queue_depth, 16, P2PNVME_MAX_DEPTH };
module_param_cb(io_queue_depth, &uint_range_ops, &io_queue_depth_range, 0444);
MODULE_PARM_DESC(io_queue_depth, "Entries of each I/O queue, 16 .. 4096, at most CAP.MQES + 1 (default 1024)");

static bool poll_mode;
module_param_named(poll, poll_mode, bool, 0444);
MODULE_PARM_DESC(poll, "Poll for I/O completions instead of taking MSI-X interrupts (default false)");

unsigned int p2pnvme_max_inflight_mb = 256;
static struct uint_range max_inflight_range = { &p2pnvme_max_inflight_mb, 1, 65536 };
module_param_cb(max_inflight_mb, &uint_range_ops, &max_inflight_range, 0644);
MODULE_PARM_DESC(max_inflight_mb, "MiB of data one open file may have pinned or bounced at once, 1 .. 65536 (default 256)");

unsigned int p2pnvme_max_bounced_reg_mb = 32;
static struct uint_range max_bounced_reg_range = { &p2pnvme_max_bounced_reg_mb, 0, 65536 };
module_param_cb(max_bounced_reg_mb, &uint_range_ops, &max_bounced_reg_range, 0644);
MODULE_PARM_DESC(max_bounced_reg_mb, "MiB of registered host buffers a controller may keep in swiotlb's bounce slots, 0 .. 65536 (default 32)");

unsigned int p2pnvme_file_placeholder_mb = 32;
static struct uint_range file_placeholder_range = { &p2pnvme_file_placeholder_mb, 0, 4096 };
module_param_cb(file_placeholder_mb, &uint_range_ops, &file_placeholder_range, 0644);
MODULE_PARM_DESC(file_placeholder_mb, "MiB of placeholder pages per controller for file reads into dma-bufs without pages (GPU memory), allocated at first use, 0 .. 4096; 0: such reads are refused (default 32)");

bool p2pnvme_file_placeholder_force;
module_param_named(file_placeholder_force, p2pnvme_file_placeholder_force, bool, 0644);
MODULE_PARM_DESC(file_placeholder_force, "Bench only: file reads into p2pbar dma-bufs go through placeholder pages too, as GPU memory does (default false)");

bool p2pnvme_shadow_doorbells = true;
module_param_named(shadow_doorbells, p2pnvme_shadow_doorbells, bool, 0644);
MODULE_PARM_DESC(shadow_doorbells, "Use the controller's Doorbell Buffer Config where it has one (emulated controllers), taken at probe and each reset (default true)");

/* Interrupt Coalescing (Feature 08h), set at probe and after each reset */
unsigned int p2pnvme_coalesce_entries;
static struct uint_range coalesce_entries_range = { &p2pnvme_coalesce_entries, 0, 256 };
module_param_cb(coalesce_entries, &uint_range_ops, &coalesce_entries_range, 0444);
MODULE_PARM_DESC(coalesce_entries, "Completions per interrupt the controller may gather, 0 .. 256 (default 0: its own setting)");

unsigned int p2pnvme_coalesce_time_us;
static struct uint_range coalesce_time_range = { &p2pnvme_coalesce_time_us, 0, 25500 };
module_param_cb(coalesce_time_us, &uint_range_ops, &coalesce_time_range, 0444);
MODULE_PARM_DESC(coalesce_time_us, "Longest an interrupt may wait for more completions, 0 .. 25500 us in steps of 100 (default 0)");

static bool disk_param;
module_param_named(disk, disk_param, bool, 0644);
MODULE_PARM_DESC(disk, "At probe, present the namespace as a block device /dev/p2pnvme<N>n<nsid> on queues of its own; the LBA ioctls then need CAP_SYS_RAWIO (default false)");

static dev_t p2pnvme_devt;
static struct cdev p2pnvme_cdev;
static struct class *p2pnvme_class;
static struct dentry *p2pnvme_debugfs;
/* minor -> controller; the xa_lock pairs open() with remove() */
DEFINE_XARRAY_ALLOC(p2pnvme_minors);

void p2pnvme_free(struct kref *kref)
{
	struct p2pnvme *c = container_of(kref, struct p2pnvme, kref);

	pci_dev_put(c->pdev);
	p2pnvme_file_exit(c);
	p2pnvme_reg_exit(c);
	p2pnvme_ctrl_exit(c);
	p2pnvme_async_exit(c);
	free_percpu(c->pcpu);
	kfree(c);
}

/* ---- PCI driver -------------------------------------------------------- */

/* Split the I/O vectors in two sets of one size, each spread over every CPU. */
static void irq_sets(struct irq_affinity *affd, unsigned int nvecs)
{
	affd->nr_sets = 2;
	affd->set_size[0] = nvecs / 2;
	affd->set_size[1] = nvecs - nvecs / 2;
}

/*
 * MSI-X: vector 0 stays with the (polled) admin queue, I/O queue i gets
 * vector i, spread over the CPUs by the IRQ core (managed affinity, as
 * nvme-pci); each CPU submits to the queue whose interrupt it takes. The
 * second set of queues (the disk's, disk.c) gets a second set of as many
 * vectors after them, spread the same way, or none at all.
 */
static int setup_irqs(struct p2pnvme *c)
{
	struct irq_affinity affd = { .pre_vectors = 1 };
	struct irq_affinity sets = { .pre_vectors = 1, .calc_sets = irq_sets };
	unsigned int want = 2 * c->nr_ioq + 1;
	struct pci_dev *pdev = c->pdev;
	const struct cpumask *mask;
	unsigned int cpu, i;
	int nvec;

	c->cpu_queue = devm_kcalloc(&pdev->dev, nr_cpu_ids, sizeof(*c->cpu_queue), GFP_KERNEL);
	if (!c->cpu_queue)
		return -ENOMEM;
	c->polled = poll_mode;
	if (c->polled)
		c->nr_diskq = 0;
	if (c->nr_diskq &&
	    pci_alloc_irq_vectors_affinity(pdev, want, want, PCI_IRQ_MSIX | PCI_IRQ_AFFINITY,
					   &sets) < 0) {
		pci_info(pdev, "no vectors for a second set of queues (the disk's)\n");
		c->nr_diskq = 0;
	}
	if (!c->polled && !c->nr_diskq) {
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

/* ---- CPU hotplug ------------------------------------------------------ */

static enum cpuhp_state p2pnvme_cpuhp_state;

/*
 * The last online CPU of an I/O queue's vector is going down. Once it is
 * dead the IRQ core shuts the managed vector down, and a completion posted
 * after that waits for a poller: a batch's waiter after 50 ms, the io_uring
 * watchdog after up to 500 ms. So the queue is drained now, while its
 * interrupt still works, as blk_mq_hctx_notify_offline() drains a hardware
 * context. No new command comes from this CPU: its tasks were moved away
 * when CPUHP_AP_ACTIVE went down, before CPUHP_AP_ONLINE_DYN; a submitter
 * preempted between choosing the queue and ringing it is the pollers'.
 * The wait is bounded by io_timeout_ms, by which a stuck command has met
 * the timeout ladder, and ends when the controller leaves LIVE (a reset or
 * removal fails or finishes what is in flight).
 */
static int p2pnvme_cpu_offline(unsigned int cpu, struct hlist_node *node)
{
	struct p2pnvme *c = hlist_entry(node, struct p2pnvme, cpuhp_node);
	struct p2pnvme_queue *q = &c->ioq[c->cpu_queue[cpu]];
	const struct cpumask *mask;
	unsigned long deadline;
	unsigned int other;

	if (q->vector < 0)
		return 0;
	mask = pci_irq_get_affinity(c->pdev, q->vector);
	if (!mask || !cpumask_test_cpu(cpu, mask))
		return 0;
	for_each_cpu_and(other, mask, cpu_online_mask)
		if (other != cpu)
			return 0;	/* the vector lives on */
	deadline = jiffies + p2pnvme_io_timeout();
	while (p2pnvme_queue_inflight(q) && p2pnvme_state(c) == P2PNVME_LIVE &&
	       time_before(jiffies, deadline))
		usleep_range(1000, 2000);
	return 0;
}

static void cpuhp_add(struct p2pnvme *c)
{
	if (!c->polled)
		cpuhp_state_add_instance_nocalls(p2pnvme_cpuhp_state, &c->cpuhp_node);
}

/* Before the vectors go: waits for a CPU going down meanwhile. */
static void cpuhp_del(struct p2pnvme *c)
{
	if (!hlist_unhashed(&c->cpuhp_node))
		cpuhp_state_remove_instance_nocalls(p2pnvme_cpuhp_state, &c->cpuhp_node);
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
	bool want_disk = READ_ONCE(disk_param);
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
	if (p2pnvme_ctrl_init(c)) {
		free_percpu(c->pcpu);
		kfree(c);
		return -ENOMEM;
	}
	mutex_init(&c->stats_lock);
	kref_init(&c->kref);
	c->pdev = pci_dev_get(pdev);
	mutex_init(&c->pt_lock);
	p2pnvme_async_init(c);
	p2pnvme_reg_init(c);
	p2pnvme_file_init(c);
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
	/* the disk takes the second set of queues */
	c->want_diskq = !poll_mode && want_disk;
	ret = p2pnvme_ctrl_enable(c);
	if (!ret)
		ret = p2pnvme_identify(c);
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
	cpuhp_add(c);
	p2pnvme_dbbuf_alloc(c);
	ret = p2pnvme_dbbuf_set(c);
	if (ret)
		goto err_disable;

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
	p2pnvme_debugfs_add(c);
	/* without it on failure */
	if (want_disk)
		p2pnvme_disk_init(c);
	pci_save_state(pdev);	/* for the slot reset of a PCI error's recovery */
	p2pnvme_reg_watch(c);	/* static exporters' devices unbound (reg.c) */
	/* an early opener of the minor saw RESETTING and waited */
	p2pnvme_change_state(c, P2PNVME_LIVE);
	pci_info(pdev, "p2pnvme%d: ns %u, %llu x %u B, %u I/O queues of %u, %s, max %u KiB/cmd%s\n",
		 c->minor, c->nsid, c->nlb, 1 << c->lba_shift, c->nr_ioq, c->ioq[0].depth - 1,
		 c->polled ? "polled" : "MSI-X", c->max_xfer >> 10, c->sgl ? ", SGL" : "");
	/* last: the partition scan reads a LIVE controller */
	p2pnvme_disk_add(c);
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
	cpuhp_del(c);
	free_irqs(c);
err_put:
	kref_put(&c->kref, p2pnvme_free);
	return ret;
}

static void p2pnvme_remove(struct pci_dev *pdev)
{
	struct p2pnvme *c = pci_get_drvdata(pdev);

	/* first, while the controller answers: the filesystem syncs and lets go */
	p2pnvme_disk_remove(c);
	p2pnvme_reg_unwatch(c);
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
	/* nobody issues any more and the controller is stopped */
	p2pnvme_disk_free(c);
	/*
	 * Every command is over and no submitter is inside the I/O guard any
	 * more: the io_uring requests are released now, before the queues go.
	 */
	p2pnvme_async_drain(c);
	p2pnvme_reg_remove(c);	/* no mapping outlives the binding */
	cpuhp_del(c);
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
	p2pnvme_disk_quiesce(c);	/* its queues deleted while the controller answers */
	p2pnvme_quiesce(c);
	p2pnvme_disk_fail(c);		/* what is left of the disk's I/O fails */
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
	int ret;

	p2pnvme_sysfs_init();
	p2pnvme_dmabuf_note();
	ret = p2pnvme_reset_wq_create();
	if (ret)
		return ret;
	ret = alloc_chrdev_region(&p2pnvme_devt, 0, P2PNVME_MAX_DEVS, KBUILD_MODNAME);
	if (ret)
		goto err_wq;
	cdev_init(&p2pnvme_cdev, &p2pnvme_fops);
	ret = cdev_add(&p2pnvme_cdev, p2pnvme_devt, P2PNVME_MAX_DEVS);
	if (ret)
		goto err_region;
	p2pnvme_class = p2p_class_create(KBUILD_MODNAME);
	if (IS_ERR(p2pnvme_class)) {
		ret = PTR_ERR(p2pnvme_class);
		goto err_cdev;
	}
	ret = cpuhp_setup_state_multi(CPUHP_AP_ONLINE_DYN, "p2pnvme:online", NULL,
				      p2pnvme_cpu_offline);
	if (ret < 0)
		goto err_class;
	p2pnvme_cpuhp_state = ret;
	p2pnvme_debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	ret = pci_register_driver(&p2pnvme_driver);
	if (ret)
		goto err_cpuhp;
	return 0;

err_cpuhp:
	debugfs_remove_recursive(p2pnvme_debugfs);
	cpuhp_remove_multi_state(p2pnvme_cpuhp_state);
err_class:
	class_destroy(p2pnvme_class);
err_cdev:
	cdev_del(&p2pnvme_cdev);
err_region:
	unregister_chrdev_region(p2pnvme_devt, P2PNVME_MAX_DEVS);
err_wq:
	p2pnvme_reset_wq_destroy();
	return ret;
}

static void __exit p2pnvme_exit(void)
{
	pci_unregister_driver(&p2pnvme_driver);
	debugfs_remove_recursive(p2pnvme_debugfs);
	cpuhp_remove_multi_state(p2pnvme_cpuhp_state);
	class_destroy(p2pnvme_class);
	cdev_del(&p2pnvme_cdev);
	unregister_chrdev_region(p2pnvme_devt, P2PNVME_MAX_DEVS);
	p2pnvme_reset_wq_destroy();
}

module_init(p2pnvme_init);
module_exit(p2pnvme_exit);

P2P_IMPORT_NS("DMA_BUF");
MODULE_DESCRIPTION("NVMe client that moves data straight to and from p2pmem");
MODULE_VERSION(P2P_VERSION);
MODULE_LICENSE("GPL");
