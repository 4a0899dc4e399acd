// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl: a p2pnvme controller. Its description, counters and health
 * (Identify, SMART and error logs through NVME_IOCTL_ADMIN_CMD, which
 * nvme-pci takes too), and its transfers: into or out of p2pmem, host
 * memory or a dma-buf, Write Zeroes and Flush.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "p2pctl.h"

const char *path_name(uint32_t p)
{
	return p == P2PNVME_PATH_P2P ? "p2p" : p == P2PNVME_PATH_BOUNCE ? "bounce" :
	       p == P2PNVME_PATH_HOST ? "host" : p == P2PNVME_PATH_DMABUF ? "dmabuf" :
	       p == P2PNVME_PATH_DMABUF_HOST ? "dmabuf-host" :
	       p == P2PNVME_PATH_DMABUF_COHERENT ? "dmabuf-coherent" : "none";
}

/* p2pctl nvme-info [NVME] */
int cmd_nvme_info(struct p2pctl *c, int argc, char **argv)
{
	const char *path = argc ? argv[0] : "/dev/p2pnvme0";
	struct p2pnvme_info i;
	char model[sizeof(i.model) + 1];
	int fd = open(path, O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		return fail(c, errno, path);
	ret = p2p_nvme_info(fd, &i);
	close(fd);
	if (ret)
		return fail(c, -ret, "P2PNVME_IOC_INFO");
	snprintf(model, sizeof(model), "%.40s", i.model);	/* not NUL terminated */
	c->out->nvme_info(c, path, &i, model);
	return 0;
}

/*
 * p2pctl nvme-buffers [NVME]: every buffer registered on the controller,
 * by any process, from debugfs's "buffers" (root): where each one is now
 * (host, dmabuf-p2p with the function whose BAR it is, dmabuf-host,
 * dmabuf-coherent, moved)
 */
int cmd_nvme_buffers(struct p2pctl *c, int argc, char **argv)
{
	const char *path = argc ? argv[0] : "/dev/p2pnvme0";
	char sys[256], link[256], dbg[320], line[512];
	struct reg_entry e[P2PNVME_BUF_MAX];
	const char *bdf, *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	unsigned int n = 0;
	ssize_t len;
	FILE *f;

	if (access(path, F_OK))
		return fail(c, errno, path);
	snprintf(sys, sizeof(sys), "/sys/class/p2pnvme/%s/device", name);
	len = readlink(sys, link, sizeof(link) - 1);
	if (len <= 0)
		return fail(c, errno, sys);
	link[len] = 0;
	bdf = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	snprintf(dbg, sizeof(dbg), "/sys/kernel/debug/p2pnvme/%s/buffers", bdf);
	f = fopen(dbg, "r");
	if (!f)
		return fail(c, errno, dbg);
	if (!fgets(line, sizeof(line), f))	/* the header */
		line[0] = 0;
	while (n < P2PNVME_BUF_MAX && fgets(line, sizeof(line), f)) {
		struct reg_entry *r = &e[n];
		char req[32] = "";
		unsigned long long bytes, start;
		int revoked, mapped;

		memset(r, 0, sizeof(*r));
		if (sscanf(line, "%15s %llu %llu %u %d %d %d %15s %31s %31s", r->kind, &bytes, &start,
			   &r->segments, &r->busy, &revoked, &mapped, r->where, r->owner, req) < 9)
			continue;
		r->bytes = bytes;
		r->start = start;
		r->revoked = revoked;
		r->mapped = mapped;
		r->require_p2p = !strcmp(req, "require-p2p");
		if (!strcmp(r->owner, "-"))
			r->owner[0] = 0;
		n++;
	}
	fclose(f);
	c->out->buffers(c, path, e, n);
	return 0;
}

/* ---- health: Identify, SMART and error logs through NVME_IOCTL_ADMIN_CMD -- */

/* little-endian fields of a log or identify page */
static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/*
 * One admin command through the passthrough p2pnvme shares with nvme-pci
 * (and nvme-cli): 0, the NVMe status (> 0), or -errno.
 */
static int admin(const char *dev, struct nvme_admin_cmd *cmd)
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = p2p_nvme_admin(fd, cmd);
	close(fd);
	return ret;
}

/* Identify Controller into @id (4096 bytes) */
static int identify_ctrl(const char *dev, uint8_t *id)
{
	struct nvme_admin_cmd cmd = { .opcode = 0x06, .cdw10 = 1 /* CNS controller */,
				      .addr = (uintptr_t)id, .data_len = 4096 };

	return admin(dev, &cmd);
}

/*
 * Get Log Page @lid of @len bytes (a dword multiple) for all namespaces,
 * in pieces of 4 KiB at increasing offsets (LPOL/LPOU) as libnvme reads
 * it, asking the controller to retain the asynchronous event (RAE) until
 * the last piece: a passthrough moves at most 8 KiB at once.
 */
#define LOG_PIECE	4096

static int get_log(const char *dev, uint8_t lid, void *buf, uint32_t len)
{
	uint32_t off, n;
	int ret;

	for (off = 0; off < len; off += n) {
		struct nvme_admin_cmd cmd = { .opcode = 0x02, .nsid = 0xffffffff };

		n = len - off < LOG_PIECE ? len - off : LOG_PIECE;
		cmd.cdw10 = (n / 4 - 1) << 16 | (off + n < len ? 1U << 15 : 0) | lid;
		cmd.cdw12 = off;	/* LPOL; LPOU (cdw13) stays 0 below 4 GiB */
		cmd.addr = (uintptr_t)buf + off;
		cmd.data_len = n;
		ret = admin(dev, &cmd);
		if (ret)
			return ret;
	}
	return 0;
}

static int admin_fail(struct p2pctl *c, const char *what, int ret)
{
	if (ret < 0)
		return fail(c, -ret, what);
	c->out->nvme_status(c, what, ret);
	return EIO;
}

/* an identify string field as nvme-cli takes it ("%-.*s"): up to a NUL, padding kept */
static void id_str(char *dst, const uint8_t *src, int n)
{
	snprintf(dst, n + 1, "%-.*s", n, (const char *)src);
}

/* p2pctl nvme-id-ctrl [NVME] */
int cmd_nvme_id_ctrl(struct p2pctl *c, int argc, char **argv)
{
	const char *dev = argc ? argv[0] : "/dev/p2pnvme0";
	uint8_t id[4096];
	struct id_ctrl r;
	int ret = identify_ctrl(dev, id);

	if (ret)
		return admin_fail(c, "Identify Controller", ret);
	r = (struct id_ctrl){
		.vid = le(id, 2), .ssvid = le(id + 2, 2), .mdts = id[77],
		.cntlid = le(id + 78, 2), .ver = le(id + 80, 4), .oacs = le(id + 256, 2),
		.acl = id[258], .elpe = id[262], .sqes = id[512], .cqes = id[513],
		.nn = le(id + 516, 4), .sgls = le(id + 536, 4),
	};
	id_str(r.sn, id + 4, 20);
	id_str(r.mn, id + 24, 40);
	id_str(r.fr, id + 64, 8);
	c->out->id_ctrl(c, &r);
	return 0;
}

/* p2pctl nvme-smart [NVME] */
int cmd_nvme_smart(struct p2pctl *c, int argc, char **argv)
{
	static const struct { const char *name; int off, len; } f[] = {
		{ "critical_warning", 0, 1 }, { "temperature", 1, 2 }, { "avail_spare", 3, 1 },
		{ "spare_thresh", 4, 1 }, { "percent_used", 5, 1 },
		{ "data_units_read", 32, 8 }, { "data_units_written", 48, 8 },
		{ "host_read_commands", 64, 8 }, { "host_write_commands", 80, 8 },
		{ "controller_busy_time", 96, 8 }, { "power_cycles", 112, 8 },
		{ "power_on_hours", 128, 8 }, { "unsafe_shutdowns", 144, 8 },
		{ "media_errors", 160, 8 }, { "num_err_log_entries", 176, 8 },
	};
	const char *dev = argc ? argv[0] : "/dev/p2pnvme0";
	struct smart_field v[ARRAY_SIZE(f)];
	uint8_t log[512];
	unsigned int i;
	int ret = get_log(dev, 0x02, log, sizeof(log));

	if (ret)
		return admin_fail(c, "Get Log Page (SMART / Health)", ret);
	for (i = 0; i < ARRAY_SIZE(f); i++)
		v[i] = (struct smart_field){ f[i].name, le(log + f[i].off, f[i].len) };
	c->out->smart(c, dev, v, i);
	return 0;
}

/* p2pctl nvme-error-log [NVME]: every entry of the log, those in use shown */
int cmd_nvme_error_log(struct p2pctl *c, int argc, char **argv)
{
	const char *dev = argc ? argv[0] : "/dev/p2pnvme0";
	struct error_entry errs[256];
	uint8_t id[4096], log[256 * 64];
	unsigned int n, i, used = 0;
	int ret = identify_ctrl(dev, id);

	if (ret)
		return admin_fail(c, "Identify Controller", ret);
	n = id[262] + 1;	/* ELPE: entries - 1, 256 at most */
	ret = get_log(dev, 0x01, log, n * 64);
	if (ret)
		return admin_fail(c, "Get Log Page (Error Information)", ret);
	for (i = 0; i < n; i++) {
		const uint8_t *e = log + i * 64;

		if (!le(e, 8))
			continue;
		errs[used++] = (struct error_entry){
			.count = le(e, 8), .sqid = le(e + 8, 2), .cmdid = le(e + 10, 2),
			.sf = le(e + 12, 2), .parm = le(e + 14, 2), .lba = le(e + 16, 8),
			.nsid = le(e + 24, 4), .vs = e[28], .trtype = e[29], .csi = e[30],
			.opcode = e[31], .cs = le(e + 32, 8), .tsi = le(e + 40, 2),
			.version = e[63],
		};
	}
	c->out->error_log(c, dev, n, errs, used);
	return 0;
}

/* One counter of /sys/class/p2pnvme/NAME/stats, or -1. */
static long long nvme_stat(const char *name, const char *counter)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/stats/%s", name, counter);
	return p2p_sysfs_num(path);
}

/* One counter of /sys/class/p2pnvme/NAME/disk (the disk's), or -1. */
static long long disk_stat(const char *name, const char *counter)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/disk/%s", name, counter);
	return p2p_sysfs_num(path);
}

/* The file command's counters (stats/file_*) and the disk's (disk/), where there. */
static void nvme_stats_file_disk(struct nvme_stats *s)
{
	static const char * const fpaths[STATS_FILE_PATHS] = { "p2p", "host", "dmabuf", "bounce" };
	static const char * const fother[STATS_FILE_OTHER] = {
		"errors", "errors_fallback", "refused_xdev", "refused_align", "refused_p2p", "refused_swapfile",
		"refused_inflight", "zeroed_bytes", "cpu_bytes", "placeholder_reads" };
	static const char * const dpaths[STATS_DISK_PATHS] = { "p2p", "host", "mixed" };
	static const char * const dother[STATS_DISK_OTHER] = {
		"bytes_p2p", "bytes_host", "flushes", "write_zeroes", "refused", "errors",
		"retries", "timeouts", "aborts", "cancelled" };
	unsigned int i;
	char n[48];

	s->file_paths = fpaths;
	s->file_other = fother;
	s->disk_paths = dpaths;
	s->disk_other = dother;
	s->have_file = nvme_stat(s->name, "file_reads_p2p") >= 0;
	for (i = 0; s->have_file && i < STATS_FILE_PATHS; i++) {
		snprintf(n, sizeof(n), "file_reads_%s", fpaths[i]);
		s->file_reads[i] = nvme_stat(s->name, n);
		snprintf(n, sizeof(n), "file_writes_%s", fpaths[i]);
		s->file_writes[i] = nvme_stat(s->name, n);
		snprintf(n, sizeof(n), "file_bytes_%s", fpaths[i]);
		s->file_bytes[i] = nvme_stat(s->name, n);
	}
	for (i = 0; s->have_file && i < STATS_FILE_OTHER; i++) {
		snprintf(n, sizeof(n), "file_%s", fother[i]);
		s->file_counter[i] = nvme_stat(s->name, n);
	}
	s->have_disk = disk_stat(s->name, "reads_p2p") >= 0;
	for (i = 0; s->have_disk && i < STATS_DISK_PATHS; i++) {
		snprintf(n, sizeof(n), "reads_%s", dpaths[i]);
		s->disk_reads[i] = disk_stat(s->name, n);
		snprintf(n, sizeof(n), "writes_%s", dpaths[i]);
		s->disk_writes[i] = disk_stat(s->name, n);
	}
	for (i = 0; s->have_disk && i < STATS_DISK_OTHER; i++)
		s->disk_counter[i] = disk_stat(s->name, dother[i]);
}

/* stats/latency_<dir>_<path>: count sum_ns max_ns hist[0..]; 0 or -1 */
static int nvme_lat(const char *name, const char *dir, const char *path, struct lat *l)
{
	char file[256];
	FILE *f;
	int i, ok;

	snprintf(file, sizeof(file), "/sys/class/p2pnvme/%s/stats/latency_%s_%s", name, dir, path);
	f = fopen(file, "re");
	if (!f)
		return -1;
	ok = fscanf(f, "%lld %lld %lld", &l->count, &l->sum, &l->max) == 3;
	for (i = 0; ok && i < LAT_BUCKETS; i++)
		ok = fscanf(f, "%lld", &l->hist[i]) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/* p2pctl nvme-stats [NVME] [--interval SEC] [--reset] */
int cmd_nvme_stats(struct p2pctl *c, int argc, char **argv)
{
	static const char * const paths[STATS_PATHS] = { "p2p", "bounce", "host", "dmabuf" };
	static const char * const other[STATS_OTHER] = {
		"refused", "errors", "timeouts", "aborts", "resets", "cancelled", "irqs",
		"queue_full_waits", "queue_full_requeued" };
	static const char * const dirs[] = { "read", "write" };
	struct nvme_stats s = { .dev = argc ? argv[0] : "/dev/p2pnvme0", .paths = paths,
				.other = other };
	long long b0[STATS_PATHS];
	char n[32], file[256], q[512];
	unsigned int i, d;

	if (c->opt[O_INTERVAL])
		NUM("nvme-stats", "--interval", c->opt[O_INTERVAL], s.interval);
	s.name = strrchr(s.dev, '/') ? strrchr(s.dev, '/') + 1 : s.dev;
	if (nvme_stat(s.name, "reads_p2p") < 0)
		return fail(c, ENODEV, s.dev);
	/* bytes/s over the interval: two samples of the byte counters */
	for (i = 0; i < STATS_PATHS; i++) {
		snprintf(n, sizeof(n), "bytes_%s", paths[i]);
		b0[i] = s.bytes[i] = nvme_stat(s.name, n);
	}
	if (s.interval) {
		sleep(s.interval);
		for (i = 0; i < STATS_PATHS; i++) {
			snprintf(n, sizeof(n), "bytes_%s", paths[i]);
			s.bytes[i] = nvme_stat(s.name, n);
			s.rate[i] = (double)(s.bytes[i] - b0[i]) / s.interval;
		}
	}
	for (i = 0; i < STATS_PATHS; i++) {
		snprintf(n, sizeof(n), "reads_%s", paths[i]);
		s.reads[i] = nvme_stat(s.name, n);
		snprintf(n, sizeof(n), "writes_%s", paths[i]);
		s.writes[i] = nvme_stat(s.name, n);
	}
	for (i = 0; i < STATS_OTHER; i++)
		s.counter[i] = nvme_stat(s.name, other[i]);
	snprintf(file, sizeof(file), "/sys/class/p2pnvme/%s", s.name);
	s.inflight = p2p_sysfs_line(file, "stats/inflight", q, sizeof(q));
	for (d = 0; d < 2; d++)
		for (i = 0; i < STATS_PATHS; i++)
			s.have_lat[d][i] = !nvme_lat(s.name, dirs[d], paths[i], &s.lat[d][i]);
	nvme_stats_file_disk(&s);
	c->out->stats(c, &s);
	if (c->opt[O_RESET]) {
		FILE *f;

		snprintf(file, sizeof(file), "/sys/class/p2pnvme/%s/stats/reset", s.name);
		f = fopen(file, "we");
		if (!f || fputs("1\n", f) < 0 || fclose(f))
			return fail(c, errno, "stats/reset");
	}
	return 0;
}

/*
 * The transfer @io as @n entries of one P2PNVME_IOC_SUBMIT, all in flight at
 * once; @io gets the path of the last entry, or the status of the first
 * failed one; *@failed the entry that made the batch fail.
 */
static int submit_split(int fd, struct p2pnvme_io *io, unsigned int n, unsigned int *failed)
{
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = n };
	struct p2pnvme_io *ios = calloc(n, sizeof(*ios));
	struct p2pnvme_info info;
	uint64_t part = io->len / n;
	unsigned int i;
	int ret;

	if (!ios || !n || io->len % n)
		return free(ios), EINVAL;
	ret = p2p_nvme_info(fd, &info);
	if (ret)
		return free(ios), -ret;
	for (i = 0; i < n; i++) {
		ios[i] = *io;
		ios[i].len = part;
		ios[i].slba = io->slba + i * (part >> info.lba_shift);
		ios[i].addr = io->addr + i * part;
	}
	sub.ios = (uintptr_t)ios;
	ret = ioctl(fd, P2PNVME_IOC_SUBMIT, &sub) ? errno : 0;
	io->path = ios[n - 1].path;
	for (i = 0; i < n; i++) {
		if (ios[i].result) {
			io->status = ios[i].status;
			break;
		}
	}
	*failed = sub.failed;
	free(ios);
	return ret;
}

static int cmd_nvme_io(struct p2pctl *c, bool write, char **argv)
{
	struct p2pnvme_io io = { .argsz = sizeof(io) };
	const char *dev = "/dev/p2pbar0";
	unsigned long long boff = 0, off = 0;
	int i, fd, byte = 0, err, dfd = -1;
	unsigned int batch = 0, failed = 0;
	unsigned char *buf = NULL;
	char sum[17] = "", sha[65] = "";
	struct io_report r;
	size_t maplen;
	struct p2pbuf b = { .fd = -1 };

	io.op = write ? P2PNVME_OP_WRITE : P2PNVME_OP_READ;
	NUM("nvme-io", "SLBA", argv[1], io.slba);
	NUM("nvme-io", "LEN", argv[2], io.len);
	if (write) {
		i = byte_arg("nvme-write", argv[3], &byte);
		if (i)
			return i;
	}
	if (c->opt[O_DEV])
		dev = c->opt[O_DEV];
	if (c->opt[O_OFFSET])
		NUM("nvme-io", "--offset", c->opt[O_OFFSET], off);
	if (c->opt[O_BATCH])
		NUM("nvme-io", "--batch", c->opt[O_BATCH], batch);
	io.flags |= (c->opt[O_BOUNCE] ? P2PNVME_IO_F_BOUNCE : 0) |
		    (c->opt[O_NO_BOUNCE] ? P2PNVME_IO_F_NO_BOUNCE : 0) |
		    (c->opt[O_PRP] ? P2PNVME_IO_F_PRP : 0) | (c->opt[O_SGL] ? P2PNVME_IO_F_SGL : 0);
	maplen = (off + io.len + 4095) & ~4095ULL;
	if (c->opt[O_DMABUF]) {
		i = export_p2pmem(c, dev, maplen, &dfd, &boff);
		if (i)
			return i;
		/* filled and checksummed through the dma-buf's own CPU mapping */
		buf = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
		if (buf == MAP_FAILED)
			return fail(c, errno, "mmap of the exported dma-buf");
	} else if (c->opt[O_UDMABUF]) {
		i = host_dmabuf(c, maplen, &dfd, &buf);
		if (i)
			return i;
	} else if (c->opt[O_HOST]) {
		buf = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			return fail(c, errno, "mmap host buffer");
	} else {
		i = get_p2pmem(c, dev, NULL, maplen, &b);
		if (i)
			return i;
		buf = b.p;
		boff = b.bar_offset;
	}
	if (write)
		memset(buf + off, byte, io.len);
	if (dfd >= 0) {
		io.flags |= P2PNVME_IO_F_DMABUF;
		io.dmabuf_fd = dfd;
		io.addr = off;
	} else {
		io.addr = (uintptr_t)(buf + off);
	}
	fd = open(argv[0], O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail(c, errno, argv[0]);
	if (batch)
		err = submit_split(fd, &io, batch, &failed);
	else
		err = -p2p_nvme_io(fd, &io);
	if (err) {
		char step[96];

		if (batch && failed < batch)
			snprintf(step, sizeof(step),
				 "P2PNVME_IOC_SUBMIT (entry %u of %u made the batch fail)", failed,
				 batch);
		else
			snprintf(step, sizeof(step), "%s",
				 batch ? "P2PNVME_IOC_SUBMIT" : "P2PNVME_IOC_IO");
		c->out->io_error(c, step, err, io.status);
		return exit_status(err);
	}
	close(fd);
	checksums(buf + off, io.len, sum, sha);
	r = (struct io_report){ .write = write, .bytes = io.len, .slba = io.slba,
				.bar_offset = boff + off, .entries = batch ? batch : 1,
				.path = path_name(io.path), .fnv = sum, .sha = sha };
	c->out->io(c, &r);
	munmap(buf, maplen);
	if (b.fd >= 0)
		close(b.fd);
	if (dfd >= 0)
		close(dfd);
	return 0;
}

/* p2pctl nvme-read NVME SLBA LEN [opts] */
int cmd_nvme_read(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	return cmd_nvme_io(c, false, argv);
}

/* p2pctl nvme-write NVME SLBA LEN BYTE [opts] */
int cmd_nvme_write(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	return cmd_nvme_io(c, true, argv);
}

/* Write Zeroes over an LBA range, or Flush (no range). */
static int nodata(struct p2pctl *c, uint32_t op, char **argv)
{
	struct p2pnvme_io io = { .op = op };
	int fd, ret;

	if (op == P2PNVME_OP_WRITE_ZEROES) {
		NUM("nvme-zeroes", "SLBA", argv[1], io.slba);
		NUM("nvme-zeroes", "LEN", argv[2], io.len);
	}
	fd = open(argv[0], O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail(c, errno, argv[0]);
	ret = p2p_nvme_io(fd, &io);
	close(fd);
	if (ret)
		return fail(c, -ret, op == P2PNVME_OP_FLUSH ? "flush" : "write zeroes");
	c->out->done(c, op == P2PNVME_OP_FLUSH ? "flush" : "write-zeroes", argv[0]);
	return 0;
}

/* p2pctl nvme-zeroes NVME SLBA LEN */
int cmd_nvme_zeroes(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	return nodata(c, P2PNVME_OP_WRITE_ZEROES, argv);
}

/* p2pctl nvme-flush NVME */
int cmd_nvme_flush(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	return nodata(c, P2PNVME_OP_FLUSH, argv);
}
