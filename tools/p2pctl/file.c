// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl read-file, write-file: a byte range of a file on a p2pnvme disk
 * into, or from, p2pmem or host memory through p2pnvme's file command
 * (P2PNVME_IOC_FILE_SUBMIT; Documentation/files.rst). The controller is the
 * one whose disk holds the file (/dev/p2pnvmeN for a file on
 * /dev/p2pnvmeNn1 or a partition of it).
 *
 * --to/--from p2pbar: p2pmem of --dev exported as a dma-buf and registered
 * with the controller (the memory the command takes as p2pbar's own
 * pages); host: anonymous memory at a user address. --batch N: N transfers
 * in flight at once per P2PNVME_IOC_FILE_SUBMIT (each at most
 * P2PNVME_FILE_MAX_LEN; a longer range takes several calls, with one line
 * of progress on a terminal).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "p2pctl.h"

/*
 * /dev/p2pnvmeN of the disk @file is on: the block device of its
 * filesystem is p2pnvmeNnM or one of its partitions (sysfs names the disk
 * in the device's path). -EXDEV for any other device.
 */
static int nvme_of_file(const char *file, char *node, size_t len)
{
	char sys[64], link[PATH_MAX], *comp, *save = NULL;
	unsigned int ctrl, ns;
	struct stat st;
	ssize_t n;
	int end;

	if (stat(file, &st))
		return -errno;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	n = readlink(sys, link, sizeof(link) - 1);
	if (n < 0)
		return errno == ENOENT ? -EXDEV : -errno;
	link[n] = '\0';
	for (comp = strtok_r(link, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		end = 0;
		if (sscanf(comp, "p2pnvme%un%u%n", &ctrl, &ns, &end) == 2 && !comp[end]) {
			snprintf(node, len, "/dev/p2pnvme%u", ctrl);
			return 0;
		}
	}
	return -EXDEV;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* one line on a terminal, rewritten as the transfer goes */
static void progress(const char *cmd, uint64_t done, uint64_t total, double t0, bool last)
{
	char a[32], b[32], r[32];
	double s = now_s() - t0;

	if (!isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\r%s: %s of %s, %s/s   ", cmd, size_str(done, a, sizeof(a)),
		size_str(total, b, sizeof(b)),
		size_str(s > 0 ? (unsigned long long)(done / s) : 0, r, sizeof(r)));
	if (last)
		fputc('\n', stderr);
}

/* the memory of the transfer: p2pmem as a registered dma-buf, or host memory */
struct file_mem {
	unsigned char *p;
	size_t len;
	int dfd;
	uint32_t id;
	bool registered;
	unsigned long long bar_offset;
};

static int mem_get(struct p2pctl *c, int nfd, bool p2pbar, const char *dev, size_t len,
		   struct file_mem *m)
{
	int ret;

	m->len = (len + 4095) & ~(size_t)4095;
	if (!p2pbar) {
		m->p = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			    -1, 0);
		return m->p == MAP_FAILED ? fail(c, errno, "mmap host memory") : 0;
	}
	ret = export_p2pmem(c, dev, m->len, &m->dfd, &m->bar_offset);
	if (ret)
		return ret;
	/* filled and checksummed through the dma-buf's own CPU mapping */
	m->p = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, m->dfd, 0);
	if (m->p == MAP_FAILED)
		return fail(c, errno, "mmap of the exported dma-buf");
	ret = p2p_nvme_register(nfd, P2PNVME_BUF_F_DMABUF, 0, m->len, m->dfd, &m->id);
	if (ret)
		return fail(c, -ret, "P2PNVME_IOC_BUF_REGISTER of the dma-buf");
	m->registered = true;
	return 0;
}

static int cmd_file(struct p2pctl *c, bool write, char **argv)
{
	const char *cmd = write ? "write-file" : "read-file", *dev = "/dev/p2pbar0";
	const char *mem = c->opt[write ? O_FROM : O_TO] ?: "p2pbar";
	struct p2pnvme_file_io *ios = NULL;
	unsigned long long off = 0, len, done = 0, moved = 0;
	struct file_mem m = { .dfd = -1 };
	char node[64], sum[17], sha[65];
	unsigned int batch = 1, i, n = 0;
	uint64_t part, round;
	struct file_report r;
	int fd, nfd, byte = 0, ret;
	uint32_t path = P2PNVME_PATH_NONE;
	bool p2pbar;
	double t0;

	if (write) {
		ret = byte_arg(cmd, argv[1], &byte);
		if (ret)
			return ret;
	}
	if (!c->opt[O_LENGTH])
		return usage_error("%s: --length LEN is needed", cmd);
	NUM(cmd, "--length", c->opt[O_LENGTH], len);
	if (c->opt[O_OFFSET])
		NUM(cmd, "--offset", c->opt[O_OFFSET], off);
	if (c->opt[O_BATCH])
		NUM(cmd, "--batch", c->opt[O_BATCH], batch);
	if (c->opt[O_DEV])
		dev = c->opt[O_DEV];
	if (strcmp(mem, "p2pbar") && strcmp(mem, "host"))
		return usage_error("%s: --%s takes p2pbar or host", cmd, write ? "from" : "to");
	p2pbar = !strcmp(mem, "p2pbar");
	if (!p2pbar && c->opt[O_DEV])
		return usage_error("%s: --dev is for p2pbar memory", cmd);
	if (!len || !batch || batch > P2PNVME_SUBMIT_MAX || len % batch)
		return usage_error("%s: --length must be a non-zero multiple of --batch (1 .. %u)",
				   cmd, P2PNVME_SUBMIT_MAX);
	/* each entry at most P2PNVME_FILE_MAX_LEN: a longer range takes rounds */
	part = len / batch;
	if (part > P2PNVME_FILE_MAX_LEN) {
		part = P2PNVME_FILE_MAX_LEN;
		if (len % part)
			return usage_error("%s: --length beyond %u x %u bytes: a multiple of %u",
					   cmd, batch, P2PNVME_FILE_MAX_LEN,
					   P2PNVME_FILE_MAX_LEN);
	}

	ret = nvme_of_file(argv[0], node, sizeof(node));
	if (ret == -EXDEV) {
		c->out->error(c, EXDEV, argv[0],
			      "the file is not on a p2pnvme disk (/dev/p2pnvmeNn1, module parameter disk=1)");
		return exit_status(EXDEV);
	}
	if (ret)
		return fail(c, -ret, argv[0]);
	fd = open(argv[0], (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return fail(c, errno, argv[0]);
	nfd = open(node, O_RDWR | O_CLOEXEC);
	if (nfd < 0)
		return fail(c, errno, node);
	ret = mem_get(c, nfd, p2pbar, dev, len, &m);
	if (ret)
		return ret;
	if (write)
		memset(m.p, byte, len);
	ios = calloc(batch, sizeof(*ios));
	if (!ios)
		return fail(c, ENOMEM, cmd);

	t0 = now_s();
	for (done = 0; done < len; done += round) {
		struct p2pnvme_submit sub = { .argsz = sizeof(sub), .ios = (uintptr_t)ios };

		round = len - done < part * batch ? len - done : part * batch;
		n = round / part;
		for (i = 0; i < n; i++) {
			uint64_t at = done + i * part;

			ios[i] = (struct p2pnvme_file_io){
				.argsz = sizeof(ios[i]),
				.op = write ? P2PNVME_OP_WRITE : P2PNVME_OP_READ,
				.fd = fd, .offset = off + at, .len = part,
				.flags = (c->opt[O_REQUIRE_P2P] ? P2PNVME_FILE_F_REQUIRE_P2P : 0) |
					 (m.registered ? P2PNVME_FILE_F_REGISTERED : 0),
				.addr = m.registered ? at : (uintptr_t)(m.p + at),
				.buf_id = m.registered ? m.id : 0,
			};
		}
		sub.nr = n;
		sub.failed = n;
		if (ioctl(nfd, P2PNVME_IOC_FILE_SUBMIT, &sub)) {
			char step[96];
			int err = errno;

			if (done)
				progress(cmd, done, len, t0, true);
			if (sub.failed < n)
				snprintf(step, sizeof(step),
					 "P2PNVME_IOC_FILE_SUBMIT (entry %u of %u made the batch fail)",
					 sub.failed, n);
			else
				snprintf(step, sizeof(step), "P2PNVME_IOC_FILE_SUBMIT");
			c->out->io_error(c, step, err, 0);
			return exit_status(err);
		}
		for (i = 0; i < n; i++) {
			moved += ios[i].bytes;
			/* one transfer through the page cache makes the range's path bounce */
			if (path != P2PNVME_PATH_BOUNCE)
				path = ios[i].path;
		}
		if (len > round)
			progress(cmd, done + round, len, t0, done + round >= len);
		/* a read that reached the end of the file: nothing more to read */
		if (!write && ios[n - 1].bytes < part)
			break;
	}
	checksums(m.p, moved, sum, sha);
	r = (struct file_report){ .write = write, .file = argv[0], .node = node,
				  .offset = off, .bytes = moved, .length = len,
				  .entries = batch, .memory = mem, .path = path_name(path),
				  .bar_offset = p2pbar ? m.bar_offset : 0, .fnv = sum, .sha = sha };
	c->out->file(c, &r);
	free(ios);
	if (m.registered)
		p2p_nvme_unregister(nfd, m.id);
	munmap(m.p, m.len);
	if (m.dfd >= 0)
		close(m.dfd);
	close(nfd);
	close(fd);
	return 0;
}

/* p2pctl read-file FILE --length LEN [--offset OFF] [--to p2pbar|host] [...] */
int cmd_read_file(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	return cmd_file(c, false, argv);
}

/* p2pctl write-file FILE BYTE --length LEN [--offset OFF] [--from p2pbar|host] [...] */
int cmd_write_file(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	return cmd_file(c, true, argv);
}
