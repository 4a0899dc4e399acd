// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: /sys/class/p2pnvme/p2pnvmeN (the counters by path, the file
 * command's, the latencies, in flight) and debugfs (the queues' state, the io_uring
 * requests, the registered buffers, the placeholder pool), for the operator and for a person
 * looking at a stuck device.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/seq_file.h>
#include <linux/sysfs.h>
#include <p2p_compat.h>

#include "driver.h"
#include "reg.h"
#include "shadow.h"
#include "uring.h"

/* ---- sysfs: /sys/class/p2pnvme/p2pnvmeN/stats/<counter> --------------- */

static ssize_t stat_show(struct device *dev, struct device_attribute *attr, char *buf);

#define STAT_ATTR(name)	__ATTR(name, 0444, stat_show, NULL)

/* in enum p2pnvme_stat order: the index of an attribute is its counter */
static struct device_attribute stat_attrs[] = {
	STAT_ATTR(reads_p2p), STAT_ATTR(writes_p2p),
	STAT_ATTR(reads_bounce), STAT_ATTR(writes_bounce),
	STAT_ATTR(reads_host), STAT_ATTR(writes_host),
	STAT_ATTR(bytes_p2p), STAT_ATTR(bytes_bounce), STAT_ATTR(bytes_host),
	STAT_ATTR(refused), STAT_ATTR(errors), STAT_ATTR(timeouts),
	STAT_ATTR(aborts), STAT_ATTR(resets), STAT_ATTR(cancelled),
	STAT_ATTR(irqs), STAT_ATTR(reads_dmabuf), STAT_ATTR(writes_dmabuf),
	STAT_ATTR(bytes_dmabuf), STAT_ATTR(queue_full_waits), STAT_ATTR(queue_full_requeued),
	STAT_ATTR(file_reads_p2p), STAT_ATTR(file_writes_p2p),
	STAT_ATTR(file_reads_host), STAT_ATTR(file_writes_host),
	STAT_ATTR(file_reads_dmabuf), STAT_ATTR(file_writes_dmabuf),
	STAT_ATTR(file_reads_bounce), STAT_ATTR(file_writes_bounce),
	STAT_ATTR(file_bytes_p2p), STAT_ATTR(file_bytes_host), STAT_ATTR(file_bytes_dmabuf),
	STAT_ATTR(file_bytes_bounce), STAT_ATTR(file_errors), STAT_ATTR(file_errors_fallback),
	STAT_ATTR(file_refused_xdev), STAT_ATTR(file_refused_align),
	STAT_ATTR(file_refused_p2p), STAT_ATTR(file_refused_swapfile),
	STAT_ATTR(file_refused_inflight),
	STAT_ATTR(file_zeroed_bytes), STAT_ATTR(file_cpu_bytes), STAT_ATTR(file_placeholder_reads),
};

static_assert(ARRAY_SIZE(stat_attrs) == ST_NR);

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

/*
 * The drive as a drive: what nvme-pci's sysfs says of a controller and its
 * namespace (space padding trimmed), for udev rules and inventory tools.
 */
static ssize_t show_padded(char *buf, const char *s, size_t len)
{
	while (len && (s[len - 1] == ' ' || !s[len - 1]))
		len--;
	return sysfs_emit(buf, "%.*s\n", (int)len, s);
}

static ssize_t serial_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);

	return show_padded(buf, c->serial, sizeof(c->serial));
}
static DEVICE_ATTR_RO(serial);

static ssize_t model_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);

	return show_padded(buf, c->model, sizeof(c->model));
}
static DEVICE_ATTR_RO(model);

static ssize_t firmware_rev_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);

	return show_padded(buf, c->firmware, sizeof(c->firmware));
}
static DEVICE_ATTR_RO(firmware_rev);

static ssize_t nsid_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", c->nsid);
}
static DEVICE_ATTR_RO(nsid);

static ssize_t numa_node_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", dev_to_node(&c->pdev->dev));
}
static DEVICE_ATTR_RO(numa_node);

/* May the standard passthrough's I/O bounce p2pmem the topology refuses? */
static ssize_t passthru_bounce_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct p2pnvme *c = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", READ_ONCE(c->passthru_bounce));
}

static ssize_t passthru_bounce_store(struct device *dev, struct device_attribute *attr,
				     const char *buf, size_t count)
{
	struct p2pnvme *c = dev_get_drvdata(dev);
	bool val;
	int ret = kstrtobool(buf, &val);

	if (ret)
		return ret;
	WRITE_ONCE(c->passthru_bounce, val);
	return count;
}
static DEVICE_ATTR_RW(passthru_bounce);

static struct attribute *drive_attrs[] = {
	&dev_attr_serial.attr,
	&dev_attr_model.attr,
	&dev_attr_firmware_rev.attr,
	&dev_attr_nsid.attr,
	&dev_attr_numa_node.attr,
	&dev_attr_passthru_bounce.attr,
	NULL,
};

static const struct attribute_group drive_group = {
	.attrs = drive_attrs,
};

const struct attribute_group *p2pnvme_groups[] = {
	&drive_group,
	&stats_group,
	NULL,
};

/* ---- debugfs: the queues' state, for a person looking at a stuck device -- */

static void show_queue(struct seq_file *s, struct p2pnvme_queue *q)
{
	u16 sq_tail, inflight_max;
	bool stopped, shadow;

	/* the completion side as the reaper left it a moment ago */
	spin_lock(&q->sq_lock);
	sq_tail = q->sq_tail;
	inflight_max = q->inflight_max;
	stopped = q->stopped;
	shadow = !!q->sq_shadow;
	spin_unlock(&q->sq_lock);
	seq_printf(s, "%u %u %d %u %u %u %u %u %u %pad %pad %u\n", q->qid, q->depth, q->vector,
		   sq_tail, READ_ONCE(q->cq_head), READ_ONCE(q->cq_phase),
		   p2pnvme_queue_inflight(q), inflight_max, stopped, &q->sq_dma, &q->cq_dma,
		   shadow);
}

static int queues_show(struct seq_file *s, void *unused)
{
	static const char * const states[] = { "live", "resetting", "recovering", "deleting",
					       "dead" };
	struct p2pnvme *c = s->private;
	unsigned int i;

	seq_printf(s, "# %s\n", states[p2pnvme_state(c)]);
	seq_puts(s, "qid depth vector sq_tail cq_head phase inflight max_inflight stopped sq_dma cq_dma shadow\n");
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

	seq_printf(s, "requests %u plugged %d\n", p2pnvme_async_live(c),
		   atomic_read(&c->async_plugged));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(uring);

static int buffers_show(struct seq_file *s, void *unused)
{
	return p2pnvme_reg_show(s, unused);
}
DEFINE_SHOW_ATTRIBUTE(buffers);

static int placeholders_show(struct seq_file *s, void *unused)
{
	return p2pnvme_shadow_show(s, unused);
}
DEFINE_SHOW_ATTRIBUTE(placeholders);

/* The stats group's attributes: every counter, the latencies, the rest. */
void p2pnvme_sysfs_init(void)
{
	int i;

	for (i = 0; i < ST_NR; i++)
		stat_attr_list[i] = &stat_attrs[i].attr;
	for (i = 0; i < 2 * LAT_PATHS; i++)
		stat_attr_list[ST_NR + i] = &lat_attrs[i].attr;
	stat_attr_list[ST_NR + 2 * LAT_PATHS] = &dev_attr_inflight.attr;
	stat_attr_list[ST_NR + 2 * LAT_PATHS + 1] = &dev_attr_reset.attr;
}

/* The controller's debugfs files, in its directory (@c->debugfs). */
void p2pnvme_debugfs_add(struct p2pnvme *c)
{
	debugfs_create_file("queues", 0400, c->debugfs, c, &queues_fops);
	debugfs_create_file("uring", 0400, c->debugfs, c, &uring_fops);
	debugfs_create_file("buffers", 0400, c->debugfs, c, &buffers_fops);
	debugfs_create_file("placeholders", 0400, c->debugfs, c, &placeholders_fops);
}
