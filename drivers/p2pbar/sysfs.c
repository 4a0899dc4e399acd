// SPDX-License-Identifier: GPL-2.0
/*
 * p2pbar sysfs (/sys/class/p2pbar/p2pbarN/: one value per file) and
 * debugfs (/sys/kernel/debug/p2pbar/<bdf>/: the tables).
 */
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/seq_file.h>
#include <linux/sysfs.h>

#include "internal.h"

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
/*
 * What p2pbar can still hand out. The pool is the kernel's: its own
 * device/p2pmem/available also subtracts what p2pmem/allocate and nvmet
 * took; with p2pbar the only user, the two agree.
 */
P2PBAR_SHOW(available, "%llu", p2pbar_live(pb) ? pb->region.size - pb->alloc_bytes : 0);

static ssize_t published_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	struct p2pbar *pb = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", READ_ONCE(pb->published));
}

/*
 * Only a LIVE instance publishes: once remove() has unpublished, nothing
 * may offer the memory to other kernel users (nvmet, pci_p2pmem_find()),
 * which would take it without any revocation.
 */
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
	if (!p2pbar_live(pb)) {
		mutex_unlock(&pb->lock);
		return -ENODEV;
	}
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
	&dev_attr_available.attr,
	NULL,
};

static const struct attribute_group p2pbar_group = {
	.attrs = p2pbar_attrs,
};

const struct attribute_group *p2pbar_groups[] = {
	&p2pbar_group,
	NULL,
};

static const char * const p2pbar_mem_states[] = {
	[P2PBAR_MEM_LIVE] = "live",
	[P2PBAR_MEM_ZEROING] = "zeroing",
	[P2PBAR_MEM_DRAINING] = "draining",
	[P2PBAR_MEM_RETURNED] = "returned",
	[P2PBAR_MEM_QUARANTINED] = "quarantined",
};

static int p2pbar_allocations_show(struct seq_file *s, void *unused)
{
	struct p2pbar *pb = s->private;
	struct p2pbar_mem *mem;

	seq_puts(s, "bus_addr size owner pid handle state\n");
	mutex_lock(&pb->lock);
	list_for_each_entry(mem, &pb->mems, node)
		seq_printf(s, "0x%llx %zu %s %d %u %s\n", (u64)mem->bus, mem->size,
			   mem->ops ? "kernel" : "mmap", mem->owner_pid, mem->handle,
			   p2pbar_mem_states[mem->state]);
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

void p2pbar_debugfs_init(struct p2pbar *pb)
{
	pb->debugfs = debugfs_create_dir(pci_name(pb->pdev), p2pbar_debugfs);
	debugfs_create_file("allocations", 0400, pb->debugfs, pb, &p2pbar_allocations_fops);
	debugfs_create_file("verdicts", 0400, pb->debugfs, pb, &p2pbar_verdicts_fops);
}
