// SPDX-License-Identifier: GPL-2.0
/*
 * p2preg-test: p2pnvme's registered buffers (P2PNVME_IOC_BUF_REGISTER,
 * P2PNVME_IO_F_REGISTERED), KTAP on stdout, bytes checked by the host
 * (fd 7, see ktap.h).
 *
 *   p2preg-test /dev/p2pnvmeN /dev/p2pbarN
 *	the registration and unregistration tables, reads and writes through
 *	P2PNVME_IOC_IO, P2PNVME_IOC_SUBMIT and io_uring with registered host
 *	memory and p2pmem registered as a dma-buf, the I/O table of the flag,
 *	unregistering with commands in flight, P2PNVME_BUF_MAX, the counters,
 *	closing the file with commands in flight
 *   p2preg-test --revoke /dev/p2pnvmeN /dev/p2pbarN BDF
 *	unbind p2pbar from BDF while reads into its registered dma-buf are in
 *	flight: each answered, the unbind returns, the buffer then fails with
 *	ENODEV (p2pbar is left unbound)
 *   p2preg-test --unbind /dev/p2pnvmeN /dev/p2pbarN BDF
 *	unbind p2pnvme from the controller BDF while reads into registered
 *	buffers are in flight (the controller is left unbound)
 *
 * The namespace is the bench's 64 MiB image of 512-byte LBAs, each sector
 * headed "<seed> LBA <lba>"; reads come from LBA 8192.. (4 MiB, untouched
 * by the suites before), writes go to LBA 49152..58495. The host compares
 * the BAR's backing file (bar0) with the image (nvme0).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/udmabuf.h>
#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

#include "harness.h"
#include "libp2p.h"
#include "p2pnvme-state.h"

#define KIB		1024ULL
#define MIB		(1ULL << 20)
#define CHUNK		(64 * KIB)
#define NR		64		/* commands of each kind in one submission */
#define QD		128		/* reads kept in flight across an unbind */
#define MAXTAG		1024

#define REF_LBA		8192ULL		/* reads: 4 MiB from here, the reference */
#define REF_LEN		(4 * MIB)
#define W_HOST		49152ULL	/* 128 KiB written from registered host memory */
#define W_DBUF		49408ULL	/* 128 KiB written from a registered dma-buf */
#define W_FAIL		49664ULL	/* 64 KiB a failed batch must not write */
#define W_RO		49792ULL	/* 64 KiB from a read-only dma-buf */
#define W_ZERO		49920ULL	/* 4 KiB a refused write zeroes must not clear */
#define W_URING		50176ULL	/* 4 MiB written through the ring */
#define W_REVOKE	58368ULL	/* 64 KiB a revoked buffer must not write */

#define HLEN		(4 * MIB)	/* registered host memory (id 0) */
#define DLEN		(8 * MIB)	/* the exported dma-buf */
#define DOFF		CHUNK		/* ... its registered range (id 1) starts here */
#define D2OFF		(5 * MIB)	/* ... the range unregistered in flight */

#define PLAN_SEQUENCE	84	/* the cases of main_mode()'s sequence */
#define PLAN_REVOKE	11
#define PLAN_UNBIND	8
#define PLAN_CAP	3

static const char *dev;
static int nvme, bar;
static struct io_uring ring;
static unsigned char *ref;	/* an unregistered host read of REF_LBA.., REF_LEN */

/* What moved, by direction and path, as stats/ should count it. */
static struct {
	long rd[P2PNVME_PATH_DMABUF + 1], wr[P2PNVME_PATH_DMABUF + 1];
	long long bytes[P2PNVME_PATH_DMABUF + 1];
} did;

static struct p2pnvme_io sent[MAXTAG];	/* the command of each ring tag */

static void count(const struct p2pnvme_io *io, uint32_t path)
{
	if (path == P2PNVME_PATH_NONE || path > P2PNVME_PATH_DMABUF)
		return;
	if (io->op == P2PNVME_OP_READ)
		did.rd[path]++;
	else if (io->op == P2PNVME_OP_WRITE)
		did.wr[path]++;
	did.bytes[path] += io->len;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Is every byte of @p @c? */
static int all(const unsigned char *p, int c, size_t len)
{
	while (len--)
		if (*p++ != c)
			return 0;
	return 1;
}

/* Does @p hold the image's sectors from @slba on, each "<seed> LBA <lba>"? */
static int pattern_ok(const unsigned char *p, uint64_t slba, uint64_t len)
{
	char want[24];
	uint64_t s;

	for (s = 0; s < len / 512; s++) {
		snprintf(want, sizeof(want), " LBA %010llu\n", (unsigned long long)(slba + s));
		if (!memmem(p + s * 512, 40, want, strlen(want)))
			return 0;
	}
	return 1;
}

/* ---- p2pbar: p2pmem by mapping, p2pmem as a dma-buf -------------------- */

/* A mapping of @len of p2pmem from the provider at @bar (by address). */
static void *p2pmem_map(size_t len)
{
	struct p2p_mem m;

	return p2p_mem_get(bar, len, 0, &m) ? NULL : m.p;
}

struct dbuf {
	int fd;
	unsigned char *map;	/* a CPU mapping of all of it, or NULL */
	uint64_t bar_off;	/* offset into the BAR (the host's bar0 file) */
};

/* p2pmem exported as a dma-buf of @size (P2PBAR_IOC_EXPORT), mapped if @map. */
static int dbuf_get(uint64_t size, int map, struct dbuf *d)
{
	struct p2pbar_export e;
	struct p2pbar_info info;
	void *p;
	int ret;

	d->fd = -1;
	d->map = NULL;
	ret = p2p_bar_info(bar, &info);
	if (!ret)
		ret = p2p_bar_export(bar, size, P2PBAR_EXPORT_F_CLOEXEC, &e);
	if (ret)
		return ret;
	d->fd = e.fd;
	d->bar_off = e.bus_addr - info.bus_addr + info.offset;
	if (!map)
		return 0;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, e.fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	d->map = p;
	return 0;
}

static void sync_cpu(int dfd, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags };

	if (ioctl(dfd, DMA_BUF_IOCTL_SYNC, &s))
		printf("    # DMA_BUF_IOCTL_SYNC: %s\n", strerror(errno));
}

/* Fill @len bytes of the dma-buf at @off with @c through the CPU mapping. */
static void dfill(const struct dbuf *d, uint64_t off, uint64_t len, int c)
{
	sync_cpu(d->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);
	memset(d->map + off, c, len);
	sync_cpu(d->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE);
}

/* Do @len bytes of the dma-buf at @off equal @want? */
static int dsame(const struct dbuf *d, uint64_t off, const unsigned char *want, uint64_t len)
{
	int same;

	sync_cpu(d->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
	same = !memcmp(d->map + off, want, len);
	sync_cpu(d->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
	return same;
}

/* Bytes p2pbar has handed out now (P2PBAR_IOC_INFO), -1 if unknown. */
static long long alloc_bytes(void)
{
	struct p2pbar_info info = { .argsz = sizeof(info) };

	return ioctl(bar, P2PBAR_IOC_INFO, &info) ? -1 : (long long)info.alloc_bytes;
}

/* alloc_bytes() once it is @want, or what it is after @secs. */
static long long alloc_settles(long long want, double secs)
{
	double t0 = now();
	long long got;

	while ((got = alloc_bytes()) != want && now() - t0 < secs)
		usleep(10000);
	return got;
}

/* ---- p2pnvme: registration, transfers ---------------------------------- */

static int reg_host(int fd, const void *p, uint64_t len, uint32_t *id)
{
	return p2p_nvme_register(fd, 0, (uintptr_t)p, len, 0, id);
}

static int reg_dmabuf(int fd, int dfd, uint64_t off, uint64_t len, uint32_t *id)
{
	return p2p_nvme_register(fd, P2PNVME_BUF_F_DMABUF, off, len, dfd, id);
}

/* A transfer naming registered buffer @id at byte offset @off. */
static struct p2pnvme_io rio(uint32_t op, uint64_t slba, uint64_t len, uint32_t id, uint64_t off,
			     uint32_t flags)
{
	return (struct p2pnvme_io){ .argsz = sizeof(struct p2pnvme_io), .op = op, .slba = slba,
				    .len = len, .addr = off, .buf_id = id,
				    .flags = P2PNVME_IO_F_REGISTERED | flags };
}

/* Host memory as a dma-buf (udmabuf) of @len bytes: its fd, or -errno. */
static int udmabuf_of(size_t len)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = len };
	int mfd = memfd_create("p2preg-test", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	int u = open("/dev/udmabuf", O_RDWR | O_CLOEXEC), fd = -ENODEV;

	if (mfd >= 0 && u >= 0 && !ftruncate(mfd, len) &&
	    !fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		c.memfd = mfd;
		fd = ioctl(u, UDMABUF_CREATE, &c);
		if (fd < 0)
			fd = -errno;
	}
	if (mfd >= 0)
		close(mfd);
	if (u >= 0)
		close(u);
	return fd;
}

/* An unregistered transfer, host memory by address. */
static struct p2pnvme_io hio(uint32_t op, uint64_t slba, uint64_t len, void *buf)
{
	return (struct p2pnvme_io){ .argsz = sizeof(struct p2pnvme_io), .op = op, .slba = slba,
				    .len = len, .addr = (uintptr_t)buf };
}

/* P2PNVME_IOC_IO: 0 or -errno, io->path written back. */
static int xfer(int fd, struct p2pnvme_io *io)
{
	int ret = ioctl(fd, P2PNVME_IOC_IO, io) ? -errno : 0;

	if (!ret)
		count(io, io->path);
	return ret;
}

/* P2PNVME_IOC_SUBMIT of @nr entries: 0 or -errno, *at: the failed entry (or @nr). */
static int submit(int fd, struct p2pnvme_io *ios, unsigned int nr, unsigned int *at)
{
	struct p2pnvme_submit s = { .argsz = sizeof(s), .nr = nr, .ios = (uintptr_t)ios };
	int ret = ioctl(fd, P2PNVME_IOC_SUBMIT, &s) ? -errno : 0;
	unsigned int i;

	for (i = 0; i < nr; i++)
		if (!ios[i].result)
			count(&ios[i], ios[i].path);
	*at = s.failed;
	return ret;
}

static void say(const char *what, int ret, uint32_t path)
{
	printf("    # %s: %s, path %u\n", what, strerror(-ret), path);
}

/* ---- io_uring ---------------------------------------------------------- */

static void prep(struct io_uring_sqe *sqe, int fd, const struct p2pnvme_io *io, uint64_t tag)
{
	if (!sqe || tag >= MAXTAG) {	/* every ring here is larger than what is queued on it */
		printf("    # the submission ring is full\n");
		exit(1);
	}
	memset(sqe, 0, 2 * sizeof(*sqe));	/* SQE128 */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = P2PNVME_URING_CMD_IO;
	sqe->user_data = tag;
	/* the ioctls' request, as io_uring's fixed command carries it */
	*(struct p2pnvme_uring_cmd *)sqe->cmd = (struct p2pnvme_uring_cmd){
		.flags = io->flags, .op = io->op, .slba = io->slba, .len = io->len,
		.addr = io->addr, .buf_id = io->buf_id };
	sent[tag] = *io;
}

/*
 * Reap @nr completions into res[tag] and res2[tag] (tags below @size); 0, or
 * -ETIME when one is 30 s late.
 */
static int reap(struct io_uring *r, unsigned int nr, int *res, uint64_t *res2, unsigned int size)
{
	struct __kernel_timespec ts = { .tv_sec = 30 };
	struct io_uring_cqe *cqe;
	unsigned int i;
	uint64_t tag;
	int ret;

	for (i = 0; i < nr; i++) {
		ret = io_uring_wait_cqe_timeout(r, &cqe, &ts);
		if (ret) {
			printf("    # %u of %u completions reaped: %s\n", i, nr, strerror(-ret));
			return ret;
		}
		tag = cqe->user_data;
		if (tag >= size) {
			printf("    # a completion of tag %llu, none was sent\n",
			       (unsigned long long)tag);
			io_uring_cqe_seen(r, cqe);
			return -EPROTO;
		}
		res[tag] = cqe->res;
		if (res2)
			res2[tag] = cqe->big_cqe[0];
		if (!cqe->res)
			count(&sent[tag], cqe->big_cqe[0] & 0xffff);
		io_uring_cqe_seen(r, cqe);
	}
	return 0;
}

/* One command on @fd alone through the ring; its CQE's res. */
static int one(int fd, const struct p2pnvme_io *io)
{
	int res = -EIO;

	prep(io_uring_get_sqe(&ring), fd, io, 0);
	if (io_uring_submit(&ring) != 1 || reap(&ring, 1, &res, NULL, 1))
		return -EIO;
	return res;
}

/* ---- sysfs and debugfs ------------------------------------------------- */

static const char * const stat_names[] = {
	"reads_host", "writes_host", "reads_dmabuf", "writes_dmabuf", "bytes_host",
	"bytes_dmabuf", "reads_p2p", "writes_p2p", "reads_bounce", "writes_bounce", "errors",
};

#define NSTATS	(sizeof(stat_names) / sizeof(stat_names[0]))

static void stats_get(long *v)
{
	char path[160];
	unsigned int i;

	for (i = 0; i < NSTATS; i++) {
		snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/stats/%s",
			 strrchr(dev, '/') + 1, stat_names[i]);
		v[i] = p2p_sysfs_num(path);
	}
}

/* ---- (a) registration and unregistration tables ------------------------ */

#define REG_SZ	((uint32_t)sizeof(struct p2pnvme_buf_reg))
#define REG_SZ_V1	((uint32_t)offsetof(struct p2pnvme_buf_reg, path))

/*
 * Each bad registration gets its errno and registers nothing: the good
 * one after it still gets id 0 (the table runs with no buffer registered).
 */
static void reg_table(unsigned char *buf, const struct dbuf *d)
{
	unsigned char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *gone = anon(4096), *p2p = p2pmem_map(CHUNK);
	int closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
	uint64_t b = (uintptr_t)buf;
	const struct {
		const char *what;
		struct p2pnvme_buf_reg r;
		uint64_t tail;
		int err;
	} t[] = {
		{ "argsz short of the first version",
		  { .argsz = REG_SZ_V1 - 4, .addr = b, .len = 4096 }, 0, EINVAL },
		{ "the first version (argsz 32, no path, owner)",
		  { .argsz = REG_SZ_V1, .addr = b, .len = 4096 }, 0, 0 },
		{ "argsz larger, non-zero tail", { .argsz = REG_SZ + 8, .addr = b, .len = 4096 },
		  1, E2BIG },
		{ "unknown flag", { .argsz = REG_SZ, .flags = 1U << 2, .addr = b, .len = 4096 },
		  0, EINVAL },
		{ "P2P required of host memory",
		  { .argsz = REG_SZ, .flags = P2PNVME_BUF_F_REQUIRE_P2P, .addr = b, .len = 4096 },
		  0, EINVAL },
		{ "id not 0 on input", { .argsz = REG_SZ, .addr = b, .len = 4096, .id = 1 }, 0, EINVAL },
		{ "length 0", { .argsz = REG_SZ, .addr = b }, 0, EINVAL },
		{ "longer than P2PNVME_BUF_MAX_LEN",
		  { .argsz = REG_SZ, .addr = b, .len = P2PNVME_BUF_MAX_LEN + 4096 }, 0, EINVAL },
		{ "address not 4-byte aligned", { .argsz = REG_SZ, .addr = b + 2, .len = 4096 },
		  0, EINVAL },
		{ "address 0", { .argsz = REG_SZ, .len = 4096 }, 0, EINVAL },
		{ "dmabuf_fd without the flag",
		  { .argsz = REG_SZ, .addr = b, .len = 4096, .dmabuf_fd = d->fd }, 0, EINVAL },
		{ "read-only memory", { .argsz = REG_SZ, .addr = (uintptr_t)ro, .len = 4096 }, 0, EFAULT },
		{ "unmapped memory", { .argsz = REG_SZ, .addr = (uintptr_t)gone, .len = 4096 }, 0, EFAULT },
		{ "a mapping of p2pmem", { .argsz = REG_SZ, .addr = (uintptr_t)p2p, .len = CHUNK },
		  0, EREMOTEIO },
		{ "dma-buf: length 0", { .argsz = REG_SZ, .flags = P2PNVME_BUF_F_DMABUF,
		  .dmabuf_fd = d->fd }, 0, EINVAL },
		{ "dma-buf: longer than P2PNVME_BUF_MAX_LEN", { .argsz = REG_SZ,
		  .flags = P2PNVME_BUF_F_DMABUF, .len = P2PNVME_BUF_MAX_LEN + 4096,
		  .dmabuf_fd = d->fd }, 0, EINVAL },
		{ "dma-buf: offset not 4-byte aligned", { .argsz = REG_SZ,
		  .flags = P2PNVME_BUF_F_DMABUF, .addr = 2, .len = 4096, .dmabuf_fd = d->fd },
		  0, EINVAL },
		{ "dma-buf: range past its end", { .argsz = REG_SZ, .flags = P2PNVME_BUF_F_DMABUF,
		  .addr = DLEN - 4096, .len = 8192, .dmabuf_fd = d->fd }, 0, EINVAL },
		{ "dma-buf: offset + length overflowing", { .argsz = REG_SZ,
		  .flags = P2PNVME_BUF_F_DMABUF, .addr = ~0ULL << 12, .len = 8192,
		  .dmabuf_fd = d->fd }, 0, EINVAL },
		{ "dma-buf: fd not a dma-buf", { .argsz = REG_SZ, .flags = P2PNVME_BUF_F_DMABUF,
		  .len = 4096, .dmabuf_fd = nvme }, 0, EBADF },
		{ "dma-buf: negative fd", { .argsz = REG_SZ, .flags = P2PNVME_BUF_F_DMABUF,
		  .len = 4096, .dmabuf_fd = -1 }, 0, EBADF },
		{ "dma-buf: fd not open", { .argsz = REG_SZ, .flags = P2PNVME_BUF_F_DMABUF,
		  .len = 4096, .dmabuf_fd = closed }, 0, EBADF },
		{ "argsz larger, zero tail (accepted)", { .argsz = REG_SZ + 8, .addr = b,
		  .len = 4096 }, 0, 0 },
	};
	struct {
		struct p2pnvme_buf_reg r;
		uint64_t tail;
	} a;
	unsigned int i;
	uint32_t id, got;
	char what[112];
	int ret, next;

	if (closed >= 0)
		close(closed);	/* a descriptor number nothing holds now */
	if (gone)
		munmap(gone, 4096);
	if (ro == MAP_FAILED || !gone || !p2p || closed < 0)
		printf("    # setup of the table: %s\n", strerror(errno));
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		a.r = t[i].r;
		a.tail = t[i].tail;
		ret = ioctl(nvme, P2PNVME_IOC_BUF_REGISTER, &a) ? errno : 0;
		got = a.r.id;
		/* a wrongly accepted one goes, so that the table goes on as planned */
		if (!ret && (t[i].err || got) && p2p_nvme_unregister(nvme, got))
			printf("    # could not unregister id %u\n", got);
		if (!ret && !t[i].err && !got)
			ret = -p2p_nvme_unregister(nvme, got);
		id = ~0U;
		next = reg_host(nvme, buf, 4096, &id);
		if (!next)
			p2p_nvme_unregister(nvme, id);
		if (next || id)
			printf("    # the next registration: %s, id %u\n", strerror(-next), id);
		if (!ret && !t[i].err && got)
			printf("    # accepted as id %u, not 0\n", got);
		snprintf(what, sizeof(what), "register: %s (id 0 still next)", t[i].what);
		result(ret == t[i].err && !next && !id && (ret || !got), what, t[i].err, ret);
	}
	if (ro != MAP_FAILED)
		munmap(ro, 4096);
}

#define UNREG_SZ	((uint32_t)sizeof(struct p2pnvme_buf_unreg))

/* Bad unregistrations leave the buffer registered; an id goes once. */
static void unreg_table(unsigned char *buf)
{
	static const struct {
		const char *what;
		struct p2pnvme_buf_unreg u;
		uint64_t tail;
		int err;
	} t[] = {
		{ "flags set", { .argsz = UNREG_SZ, .flags = 1 }, 0, EINVAL },
		{ "reserved set", { .argsz = UNREG_SZ, .reserved = 1 }, 0, EINVAL },
		{ "argsz short", { .argsz = UNREG_SZ - 4 }, 0, EINVAL },
		{ "argsz larger, non-zero tail", { .argsz = UNREG_SZ + 8 }, 1, E2BIG },
	};
	struct {
		struct p2pnvme_buf_unreg u;
		uint64_t tail;
	} a;
	uint32_t id = ~0U, id0 = ~0U, id1 = ~0U;
	int ret, kept, r0, r1, once, twice, again;
	char what[112];
	unsigned int i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		r0 = reg_host(nvme, buf, 4096, &id);
		a.u = t[i].u;
		a.u.id = id;
		a.tail = t[i].tail;
		ret = ioctl(nvme, P2PNVME_IOC_BUF_UNREGISTER, &a) ? errno : 0;
		kept = p2p_nvme_unregister(nvme, id);	/* still there: this one works */
		if (r0 || id || kept)
			printf("    # register: %s, id %u; then unregister: %s\n", strerror(-r0), id,
			       strerror(-kept));
		snprintf(what, sizeof(what), "unregister: %s (the buffer stays)", t[i].what);
		result(ret == t[i].err && !r0 && !id && !kept, what, t[i].err, ret);
	}
	ret = p2p_nvme_unregister(nvme, 7);
	result(ret == -ENOENT, "unregister: an id never registered", ENOENT, -ret);

	/* 0 and 1 registered; 0 goes, goes again (ENOENT), comes back as the next */
	r0 = reg_host(nvme, buf, 4096, &id0);
	r1 = reg_host(nvme, buf + 4096, 4096, &id1);
	once = p2p_nvme_unregister(nvme, id0);
	twice = p2p_nvme_unregister(nvme, id0);
	again = reg_host(nvme, buf + 8192, 4096, &id);
	printf("    # ids %u and %u; unregister %d, again %d; the next id %u\n", id0, id1, once,
	       twice, id);
	tap(!r0 && !r1 && id0 == 0 && id1 == 1 && !once && twice == -ENOENT && !again && id == 0,
	    "unregister: 0 once, ENOENT twice, the id is the next registration's at once");
	p2p_nvme_unregister(nvme, id);
	p2p_nvme_unregister(nvme, id1);
}

/* ---- (b) P2PNVME_IOC_IO ------------------------------------------------ */

/*
 * debugfs "buffers" of the controller lists a mapped host buffer of
 * @hlen bytes and a mapped dma-buf of @dlen bytes.
 */
static int debugfs_buffers(uint64_t hlen, uint64_t dlen)
{
	char link[256], path[320], line[256], kind[16];
	unsigned long long bytes, start;
	int seg, busy, revoked, mapped, host = 0, dmabuf = 0;
	ssize_t len;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/device", strrchr(dev, '/') + 1);
	len = readlink(path, link, sizeof(link) - 1);
	if (len < 0)
		return 0;
	link[len] = 0;
	snprintf(path, sizeof(path), "/sys/kernel/debug/p2pnvme/%s/buffers", strrchr(link, '/') + 1);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%15s %llu %llu %d %d %d %d", kind, &bytes, &start, &seg, &busy,
			   &revoked, &mapped) != 7 || revoked || !mapped || seg < 1)
			continue;
		host += !strcmp(kind, "host") && bytes == hlen;
		dmabuf += !strcmp(kind, "dmabuf") && bytes == dlen;
	}
	fclose(f);
	printf("    # debugfs buffers: %d host of %llu bytes, %d dma-buf of %llu bytes\n", host,
	       (unsigned long long)hlen, dmabuf, (unsigned long long)dlen);
	return host >= 1 && dmabuf >= 1;
}

static void io_cases(unsigned char *h, unsigned char *u, const struct dbuf *d, uint32_t *hid,
		     uint32_t *dbid)
{
	struct p2pnvme_io io, rb;
	long long a0, a1, a2;
	int r1, r2, ret, ok;
	uint32_t eid = ~0U;
	struct dbuf e;

	*hid = *dbid = ~0U;
	r1 = reg_host(nvme, h, HLEN, hid);
	r2 = reg_dmabuf(nvme, d->fd, DOFF, REF_LEN, dbid);
	printf("    # host memory: %s, id %u; dma-buf: %s, id %u\n", strerror(-r1), *hid,
	       strerror(-r2), *dbid);
	tap(!r1 && !r2 && *hid == 0 && *dbid == 1,
	    "register 4 MiB of host memory and 4 MiB of a p2pbar dma-buf: ids 0 and 1");
	ok = debugfs_buffers(HLEN, REF_LEN);
	tap(ok, "debugfs buffers lists both (kind, bytes, mapped)");

	io = hio(P2PNVME_OP_READ, REF_LBA, REF_LEN, ref);
	ret = xfer(nvme, &io);
	say("reference", ret, io.path);
	tap(!ret && io.path == P2PNVME_PATH_HOST && pattern_ok(ref, REF_LBA, REF_LEN),
	    "reference: unregistered 4 MiB read into host memory has the image's sectors");

	memset(h, 0xee, HLEN);
	io = rio(P2PNVME_OP_READ, REF_LBA + 256, 256 * KIB, *hid, CHUNK, 0);
	ret = xfer(nvme, &io);
	say("host", ret, io.path);
	tap(!ret && io.path == P2PNVME_PATH_HOST && !memcmp(h + CHUNK, ref + 128 * KIB, 256 * KIB) &&
	    h[CHUNK - 1] == 0xee && h[CHUNK + 256 * KIB] == 0xee,
	    "ioctl: 256 KiB into registered host memory at offset 64 KiB (path host, bytes)");

	dfill(d, DOFF, REF_LEN, 0xee);
	io = rio(P2PNVME_OP_READ, REF_LBA + 256, 256 * KIB, *dbid, 128 * KIB, 0);
	ret = xfer(nvme, &io);
	say("dma-buf", ret, io.path);
	hostcheck("equal %llu bar0@%llu nvme0@%llu", 256 * KIB,
		  (unsigned long long)(d->bar_off + DOFF + 128 * KIB), (REF_LBA + 256) * 512);
	tap(!ret && io.path == P2PNVME_PATH_DMABUF &&
	    dsame(d, DOFF + 128 * KIB, ref + 128 * KIB, 256 * KIB) &&
	    d->map[DOFF + 128 * KIB - 1] == 0xee && d->map[DOFF + 384 * KIB] == 0xee,
	    "ioctl: 256 KiB into a registered dma-buf at offset 128 KiB (path dmabuf, bytes)");

	/* 9 LBAs at a 4-byte, not sector, aligned offset */
	io = rio(P2PNVME_OP_READ, REF_LBA + 1, 4608, *hid, 2052, P2PNVME_IO_F_PRP);
	ret = xfer(nvme, &io);
	say("host, PRP", ret, io.path);
	tap(!ret && io.path == P2PNVME_PATH_HOST && !memcmp(h + 2052, ref + 512, 4608) &&
	    h[2051] == 0xee && h[2052 + 4608] == 0xee,
	    "ioctl: 9 LBAs into registered host memory at offset 2052 with PRPs");
	io = rio(P2PNVME_OP_READ, REF_LBA + 1, 4608, *dbid, 2052, P2PNVME_IO_F_SGL);
	ret = xfer(nvme, &io);
	say("dma-buf, SGL", ret, io.path);
	hostcheck("equal 4608 bar0@%llu nvme0@%llu", (unsigned long long)(d->bar_off + DOFF + 2052),
		  (REF_LBA + 1) * 512);
	tap(!ret && io.path == P2PNVME_PATH_DMABUF && dsame(d, DOFF + 2052, ref + 512, 4608) &&
	    d->map[DOFF + 2051] == 0xee && d->map[DOFF + 2052 + 4608] == 0xee,
	    "ioctl: 9 LBAs into a registered dma-buf at offset 2052 with SGLs");

	/* writes from offset 0 of each */
	memset(h, 0x6b, 128 * KIB);
	io = rio(P2PNVME_OP_WRITE, W_HOST, 128 * KIB, *hid, 0, 0);
	ret = xfer(nvme, &io);
	say("write from host", ret, io.path);
	hostcheck("fill %llu nvme0@%llu 0x6b", 128 * KIB, W_HOST * 512);
	memset(u, 0, 128 * KIB);
	rb = hio(P2PNVME_OP_READ, W_HOST, 128 * KIB, u);
	tap(!ret && io.path == P2PNVME_PATH_HOST && !xfer(nvme, &rb) && all(u, 0x6b, 128 * KIB),
	    "ioctl: write 128 KiB from registered host memory (path host, read back)");
	dfill(d, DOFF, 128 * KIB, 0x9c);
	io = rio(P2PNVME_OP_WRITE, W_DBUF, 128 * KIB, *dbid, 0, 0);
	ret = xfer(nvme, &io);
	say("write from dma-buf", ret, io.path);
	hostcheck("fill %llu nvme0@%llu 0x9c", 128 * KIB, W_DBUF * 512);
	memset(u, 0, 128 * KIB);
	rb = hio(P2PNVME_OP_READ, W_DBUF, 128 * KIB, u);
	tap(!ret && io.path == P2PNVME_PATH_DMABUF && !xfer(nvme, &rb) && all(u, 0x9c, 128 * KIB),
	    "ioctl: write 128 KiB from a registered dma-buf (path dmabuf, read back)");

	/* the dma-buf's fd need not stay open; unregistering lets its memory go */
	a0 = alloc_bytes();
	ret = dbuf_get(MIB, 0, &e);
	if (!ret)
		ret = reg_dmabuf(nvme, e.fd, 0, MIB, &eid);
	if (e.fd >= 0)
		close(e.fd);
	a1 = alloc_bytes();
	io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, eid, 0, 0);
	r1 = ret ? ret : xfer(nvme, &io);
	if (!ret)
		hostcheck("equal %llu bar0@%llu nvme0@%llu", CHUNK, (unsigned long long)e.bar_off,
			  REF_LBA * 512);
	r2 = ret ? ret : p2p_nvme_unregister(nvme, eid);
	a2 = alloc_settles(a0, 10);
	ok = !ret && eid == 2 && a1 == a0 + (long long)MIB && !r1 &&
	     io.path == P2PNVME_PATH_DMABUF && !r2 && a2 == a0;
	printf("    # export and register: %s, id %u; read %s, path %u; unregister %s; p2pbar allocated %lld, %lld with the fd closed, %lld after\n",
	       strerror(-ret), eid, strerror(-r1), io.path, strerror(-r2), a0, a1, a2);
	tap(ok, "a registered dma-buf whose fd is closed: readable, unregistering frees it");
}

/* ---- (c) P2PNVME_IOC_SUBMIT -------------------------------------------- */

static void batch_cases(unsigned char *h, unsigned char *u, const struct dbuf *d, uint32_t hid,
			uint32_t dbid)
{
	const char *p = "/sys/module/p2pnvme/parameters/max_inflight_mb";
	struct p2pnvme_io ios[12], rb;
	unsigned int i, at = 0;
	int ret, bad = 0, set, back, r2;
	char old[32];
	long was;

	/* 12 reads: registered host, registered dma-buf, unregistered host, ... */
	memset(h, 0xee, 12 * CHUNK);
	memset(u, 0xee, 12 * CHUNK);
	dfill(d, DOFF, 12 * CHUNK, 0xee);
	for (i = 0; i < 12; i++) {
		uint64_t slba = REF_LBA + i * (CHUNK / 512);

		ios[i] = i % 3 == 0 ? rio(P2PNVME_OP_READ, slba, CHUNK, hid, i * CHUNK, 0) :
			 i % 3 == 1 ? rio(P2PNVME_OP_READ, slba, CHUNK, dbid, i * CHUNK, 0) :
			 hio(P2PNVME_OP_READ, slba, CHUNK, u + i * CHUNK);
	}
	ret = submit(nvme, ios, 12, &at);
	for (i = 0; i < 12; i++) {
		uint32_t want = i % 3 == 1 ? P2PNVME_PATH_DMABUF : P2PNVME_PATH_HOST;
		int same = i % 3 == 0 ? !memcmp(h + i * CHUNK, ref + i * CHUNK, CHUNK) :
			   i % 3 == 1 ? dsame(d, DOFF + i * CHUNK, ref + i * CHUNK, CHUNK) :
			   !memcmp(u + i * CHUNK, ref + i * CHUNK, CHUNK);

		if (i % 3 == 1)
			hostcheck("equal %llu bar0@%llu nvme0@%llu", CHUNK,
				  (unsigned long long)(d->bar_off + DOFF + i * CHUNK),
				  (REF_LBA + i * (CHUNK / 512)) * 512);
		if (ios[i].result || ios[i].path != want || !same) {
			bad++;
			printf("    # entry %u: %s, path %u, bytes %s\n", i, strerror(-ios[i].result),
			       ios[i].path, same ? "right" : "wrong");
		}
	}
	tap(!ret && !bad && at == 12,
	    "submit: 12 reads mixing registered host, registered dma-buf, plain host (paths, bytes)");

	/* registered transfers do not count against max_inflight_mb */
	was = p2p_sysfs_num(p);
	snprintf(old, sizeof(old), "%ld", was);
	set = p2p_sysfs_write(p, "1");
	memset(h, 0xee, HLEN);
	for (i = 0; i < 4; i++)
		ios[i] = rio(P2PNVME_OP_READ, REF_LBA + i * (MIB / 512), MIB, hid, i * MIB, 0);
	ret = submit(nvme, ios, 4, &at);
	for (i = 0, bad = 0; i < 4; i++)
		bad += ios[i].result || ios[i].path != P2PNVME_PATH_HOST;
	for (i = 0; i < 4; i++)
		ios[i] = hio(P2PNVME_OP_READ, REF_LBA + i * (MIB / 512), MIB, u + i * MIB);
	r2 = submit(nvme, ios, 4, &at);
	back = was > 0 ? p2p_sysfs_write(p, old) : -ENOENT;
	printf("    # max_inflight_mb %ld -> 1: %s; registered batch %s, unregistered %s; restored: %s\n",
	       was, strerror(-set), strerror(-ret), strerror(-r2), strerror(-back));
	tap(!set && !ret && !bad && !memcmp(h, ref, 4 * MIB) && r2 == -E2BIG && !back,
	    "submit: 4 MiB registered passes max_inflight_mb=1 (unregistered: E2BIG)");

	/* a bad entry fails the batch before anything is submitted */
	memset(h, 0x11, CHUNK);
	ios[0] = rio(P2PNVME_OP_WRITE, W_FAIL, CHUNK, hid, 0, 0);
	ios[1] = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, dbid, 0, 0);
	ios[2] = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, 1000, 0, 0);
	ios[3] = hio(P2PNVME_OP_READ, REF_LBA, CHUNK, u);
	at = 0;
	ret = submit(nvme, ios, 4, &at);
	hostcheck("pristine %llu nvme0@%llu", CHUNK, W_FAIL * 512);
	rb = hio(P2PNVME_OP_READ, W_FAIL, CHUNK, u);
	r2 = xfer(nvme, &rb);
	printf("    # batch: %s, failed %u; read back %s\n", strerror(-ret), at, strerror(-r2));
	tap(ret == -ENOENT && at == 2 && !r2 && pattern_ok(u, W_FAIL, CHUNK),
	    "submit: entry 2 names an unknown id: ENOENT, failed 2, entry 0 not written");
}

/* ---- (d) io_uring ------------------------------------------------------ */

static void uring_cases(unsigned char *h, unsigned char *u, const struct dbuf *d, uint32_t hid,
			uint32_t dbid)
{
	static int res[3 * NR];
	static uint64_t res2[3 * NR];
	struct p2pnvme_io io, rb;
	int i, got, bad = 0, ret;

	memset(h, 0xee, REF_LEN);
	memset(u, 0xee, REF_LEN);
	dfill(d, DOFF, REF_LEN, 0xee);
	hostcheck("dma-mark");
	/* NR each: registered host, registered dma-buf, unregistered host */
	for (i = 0; i < 3 * NR; i++) {
		uint64_t slba = REF_LBA + (i % NR) * (CHUNK / 512), off = (i % NR) * CHUNK;

		io = i < NR ? rio(P2PNVME_OP_READ, slba, CHUNK, hid, off, 0) :
		     i < 2 * NR ? rio(P2PNVME_OP_READ, slba, CHUNK, dbid, off, 0) :
		     hio(P2PNVME_OP_READ, slba, CHUNK, u + off);
		prep(io_uring_get_sqe(&ring), nvme, &io, i);
	}
	got = io_uring_submit(&ring);
	printf("    # one io_uring_submit(): %d commands\n", got);
	tap(got == 3 * NR, "uring: one io_uring_enter() submits %d commands", 3 * NR);
	memset(res, 0xff, sizeof(res));
	if (got > 0 && reap(&ring, got, res, res2, 3 * NR))
		bad = -1;
	for (i = 0; bad >= 0 && i < 3 * NR; i++) {
		uint32_t want = i >= NR && i < 2 * NR ? P2PNVME_PATH_DMABUF : P2PNVME_PATH_HOST;

		if (res[i] || (res2[i] & 0xffff) != want || res2[i] >> 16) {
			if (bad++ < 4)
				printf("    # command %d: res %d, res2 %#llx\n", i, res[i],
				       (unsigned long long)res2[i]);
		}
	}
	tap(!bad, "uring: %d reads each into registered host, registered dma-buf, plain host: res 0, paths",
	    NR);
	hostcheck("equal %llu bar0@%llu nvme0@%llu", REF_LEN,
		  (unsigned long long)(d->bar_off + DOFF), REF_LBA * 512);
	hostcheck("dma-inflight 32 1");
	tap(!memcmp(h, ref, REF_LEN) && !memcmp(u, ref, REF_LEN) && dsame(d, DOFF, ref, REF_LEN),
	    "uring: all three got the reference's bytes");

	/* writes: NR / 2 from each registered buffer, 2 MiB each, back to back */
	memset(h, 0x5c, 2 * MIB);
	dfill(d, DOFF + 2 * MIB, 2 * MIB, 0xc5);
	for (i = 0; i < NR; i++) {
		uint64_t k = i % (NR / 2), slba = W_URING + i * (CHUNK / 512);

		io = i < NR / 2 ? rio(P2PNVME_OP_WRITE, slba, CHUNK, hid, k * CHUNK, 0) :
		     rio(P2PNVME_OP_WRITE, slba, CHUNK, dbid, 2 * MIB + k * CHUNK, 0);
		prep(io_uring_get_sqe(&ring), nvme, &io, i);
	}
	got = io_uring_submit(&ring);
	bad = got != NR || reap(&ring, NR, res, res2, NR);
	for (i = 0; !bad && i < NR; i++) {
		uint32_t want = i < NR / 2 ? P2PNVME_PATH_HOST : P2PNVME_PATH_DMABUF;

		if (res[i] || (res2[i] & 0xffff) != want || res2[i] >> 16) {
			printf("    # write %d: res %d, res2 %#llx\n", i, res[i],
			       (unsigned long long)res2[i]);
			bad = 1;
		}
	}
	if (got != NR)
		printf("    # writes: %d submitted\n", got);
	hostcheck("fill %llu nvme0@%llu 0x5c", 2 * MIB, W_URING * 512);
	hostcheck("fill %llu nvme0@%llu 0xc5", 2 * MIB, W_URING * 512 + 2 * MIB);
	memset(u, 0, 4 * MIB);
	rb = hio(P2PNVME_OP_READ, W_URING, 4 * MIB, u);
	ret = xfer(nvme, &rb);
	tap(!bad && !ret && all(u, 0x5c, 2 * MIB) && all(u + 2 * MIB, 0xc5, 2 * MIB),
	    "uring: %d writes from registered host memory and a registered dma-buf (paths, read back)",
	    NR);
}

/* ---- (e) the I/O table of P2PNVME_IO_F_REGISTERED ---------------------- */

enum { ID_OK, ID_UNKNOWN, ID_GONE, ID_OTHER };

static void io_table(unsigned char *h, unsigned char *buf, uint32_t hid, int fd2)
{
	static const struct {
		const char *what;
		uint32_t flags, op;
		uint64_t slba, len, addr;
		int id, err;
	} t[] = {
		{ "with P2PNVME_IO_F_DMABUF", P2PNVME_IO_F_DMABUF, P2PNVME_OP_READ, REF_LBA, 4096,
		  0, ID_OK, EINVAL },
		{ "with P2PNVME_IO_F_BOUNCE", P2PNVME_IO_F_BOUNCE, P2PNVME_OP_READ, REF_LBA, 4096,
		  0, ID_OK, EINVAL },
		{ "a flush", 0, P2PNVME_OP_FLUSH, 0, 0, 0, ID_OK, EINVAL },
		{ "write zeroes", 0, P2PNVME_OP_WRITE_ZEROES, W_ZERO, 4096, 0, ID_OK, EINVAL },
		{ "offset + length past the buffer", 0, P2PNVME_OP_READ, REF_LBA, 8192,
		  HLEN - 4096, ID_OK, EINVAL },
		{ "offset at the buffer's end", 0, P2PNVME_OP_READ, REF_LBA, 4096, HLEN, ID_OK,
		  EINVAL },
		{ "offset + length overflowing", 0, P2PNVME_OP_READ, REF_LBA, 8192, ~0ULL << 12,
		  ID_OK, EINVAL },
		{ "offset not 4-byte aligned", 0, P2PNVME_OP_READ, REF_LBA, 4096, 2, ID_OK, EINVAL },
		{ "an id never registered", 0, P2PNVME_OP_READ, REF_LBA, 4096, 0, ID_UNKNOWN, ENOENT },
		{ "an id just unregistered", 0, P2PNVME_OP_READ, REF_LBA, 4096, 0, ID_GONE, ENOENT },
		{ "an id of another open file", 0, P2PNVME_OP_READ, REF_LBA, 4096, 0, ID_OTHER,
		  ENOENT },
	};
	long s0[NSTATS], s1[NSTATS];
	struct p2pnvme_io io, rb;
	unsigned int i, k, moved = 0;
	uint32_t gone = ~0U, id;
	int ret, via, fd, r0;
	char what[112];

	/* an id that was registered (past the live ones) and is not any more */
	r0 = reg_host(nvme, buf, 4096, &gone);
	if (r0 || p2p_nvme_unregister(nvme, gone))
		printf("    # the unregistered id: %s\n", strerror(-r0));
	memset(h, 0xee, HLEN);
	stats_get(s0);
	for (via = 0; via < 2; via++) {
		for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			id = t[i].id == ID_UNKNOWN ? 1000 : t[i].id == ID_GONE ? gone : hid;
			fd = t[i].id == ID_OTHER ? fd2 : nvme;
			io = rio(t[i].op, t[i].slba, t[i].len, id, t[i].addr, t[i].flags);
			ret = via ? one(fd, &io) : xfer(fd, &io);
			snprintf(what, sizeof(what), "%s: registered, %s", via ? "uring" : "ioctl",
				 t[i].what);
			result(ret == -t[i].err, what, t[i].err, -ret);
		}
	}
	/* none of it moved data: the buffer, the range, the counters */
	stats_get(s1);
	for (k = 0; k < NSTATS; k++) {
		if (s1[k] != s0[k]) {
			moved++;
			printf("    # stats/%s: %ld -> %ld\n", stat_names[k], s0[k], s1[k]);
		}
	}
	rb = hio(P2PNVME_OP_READ, W_ZERO, 4096, buf);
	ret = xfer(nvme, &rb);
	tap(!moved && all(h, 0xee, HLEN) && !ret && pattern_ok(buf, W_ZERO, 4096),
	    "the I/O table moved no data (buffer, counters, the write-zeroes range)");
}

/*
 * A dma-buf whose file is not writable (p2pmem exported with
 * P2PBAR_EXPORT_F_RDONLY) registers, but the device may not write into
 * it: reads EBADF through the ioctl and the ring, a write from it works
 * (its zeros land over a pattern, as the host sees), and the CPU may not
 * map it writable either.
 */
static void readonly_dmabuf(void)
{
	struct p2pbar_export e = { .argsz = sizeof(e), .size = CHUNK,
				   .flags = P2PBAR_EXPORT_F_CLOEXEC | P2PBAR_EXPORT_F_RDONLY };
	int r0, r1, r2, r3, r4, rp, wmap = 0;
	struct p2pnvme_io io;
	unsigned char *pat;
	uint32_t id = ~0U;
	void *m;

	r0 = ioctl(bar, P2PBAR_IOC_EXPORT, &e) ? -errno : 0;
	if (!r0) {
		m = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED, e.fd, 0);
		wmap = m == MAP_FAILED ? errno : 0;
		if (m != MAP_FAILED)
			munmap(m, CHUNK);
	}
	/* a pattern where the write goes, so that its zeros show */
	pat = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pat == MAP_FAILED) {
		rp = -errno;
	} else {
		memset(pat, 0xc3, CHUNK);
		io = hio(P2PNVME_OP_WRITE, W_RO, CHUNK, pat);
		rp = xfer(nvme, &io);
		munmap(pat, CHUNK);
	}
	r1 = r0 ? r0 : reg_dmabuf(nvme, e.fd, 0, CHUNK, &id);
	io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, id, 0, 0);
	r2 = r1 ? r1 : xfer(nvme, &io);
	io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, id, 0, 0);
	r3 = r1 ? r1 : one(nvme, &io);
	io = rio(P2PNVME_OP_WRITE, W_RO, CHUNK, id, 0, 0);
	r4 = r1 ? r1 : xfer(nvme, &io);
	printf("    # export: %s, writable mmap: %s; pattern: %s; register: %s; read: %s, through the ring: %s; write: %s, path %u\n",
	       strerror(-r0), strerror(wmap), strerror(-rp), strerror(-r1), strerror(-r2),
	       strerror(-r3), strerror(-r4), io.path);
	if (!r0)
		close(e.fd);	/* the registration holds the dma-buf */
	r0 = r1 ? r1 : p2p_nvme_unregister(nvme, id);
	tap(!r1 && wmap == EACCES && !rp && r2 == -EBADF && r3 == -EBADF && !r4 &&
	    io.path == P2PNVME_PATH_DMABUF && !r0,
	    "a read-only dma-buf: no writable mmap, reads EBADF (ioctl, uring), a write works");
	hostcheck("fill %llu nvme0@%llu 0x00", CHUNK, W_RO * 512);
}

/* ---- (f) unregistering with commands in flight ------------------------- */

/*
 * Register the dma-buf's 2 MiB at D2OFF as *@x and queue @nr reads of
 * 256 KiB into it on @r, going round it 8 times (the same bytes land on
 * the same bytes). Return: 0 or the registration's -errno.
 */
static int round_reads(struct io_uring *r, const struct dbuf *d, int nr, uint32_t *x)
{
	struct p2pnvme_io io;
	int i, ret = reg_dmabuf(nvme, d->fd, D2OFF, 2 * MIB, x);

	for (i = 0; !ret && i < nr; i++) {
		io = rio(P2PNVME_OP_READ, REF_LBA + i % 8 * 512, 256 * KIB, *x,
			 i % 8 * 256 * KIB, 0);
		prep(io_uring_get_sqe(r), nvme, &io, i);
	}
	return ret;
}

/*
 * As many reads as the queue holds at once (so that none waits for a slot
 * and all have named the buffer when the submission returns), on a
 * DEFER_TASKRUN ring that answers nothing until this thread asks: the
 * requests hold the buffer until then, whether the controller is done
 * with them or not, so the unregistration certainly comes while all of
 * them are under way (debugfs counts them), and the id is free at once.
 * 256 KiB each, going round the range 8 times (the same bytes land on the
 * same bytes).
 */
static void inflight_unreg(unsigned char *u, const struct dbuf *d)
{
	static int res[2 * NR];
	static uint64_t res2[2 * NR];
	struct p2pnvme_info info = { .argsz = sizeof(info) };
	uint32_t x = ~0U, y = ~0U;
	struct io_uring dr;
	struct p2pnvme_io io;
	int i, got = 0, r0, r1 = -EIO, r2 = -EIO, ret, bad = 0, nr = 2 * NR, have_ring;
	long held = -1, pending = -1;

	if (!ioctl(nvme, P2PNVME_IOC_INFO, &info) && info.queue_depth < (uint32_t)nr)
		nr = info.queue_depth;
	dfill(d, D2OFF, 2 * MIB, 0xee);
	r0 = -io_uring_queue_init(4 * NR, &dr, IORING_SETUP_SQE128 | IORING_SETUP_CQE32 |
				  IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
	have_ring = !r0;
	if (have_ring) {
		r0 = round_reads(&dr, d, nr, &x);
		got = r0 ? 0 : io_uring_submit(&dr);
		r1 = p2p_nvme_unregister(nvme, x);
		held = inflight_now(dev);
		pending = unreleased(dev);	/* still holding the buffer */
		memset(u, 0xee, CHUNK);
		r2 = reg_host(nvme, u, MIB, &y);	/* the id is free now */
	}
	printf("    # register id %u: %s; %d submitted; unregister: %s, then %ld requests unanswered (%ld at the controller); the next id %u: %s\n",
	       x, strerror(-r0), got, strerror(-r1), pending, held, y, strerror(-r2));
	tap(!r0 && x == 2 && got == nr && !r1 && pending >= nr && !r2 && y == x,
	    "unregister with %d reads in flight on the buffer: 0, its id is free at once", nr);
	memset(res, 0xff, sizeof(res));
	if (got > 0 && reap(&dr, got, res, res2, 2 * NR))
		bad = -1;
	if (have_ring)
		io_uring_queue_exit(&dr);
	for (i = 0; bad >= 0 && i < nr; i++) {
		if ((res[i] || (res2[i] & 0xffff) != P2PNVME_PATH_DMABUF) && bad++ < 4)
			printf("    # command %d: res %d, res2 %#llx\n", i, res[i],
			       (unsigned long long)res2[i]);
	}
	hostcheck("equal %llu bar0@%llu nvme0@%llu", 2 * MIB,
		  (unsigned long long)(d->bar_off + D2OFF), REF_LBA * 512);
	tap(!bad && nr >= 8 && dsame(d, D2OFF, ref, 2 * MIB),
	    "the %d reads complete 0 (path dmabuf) with their bytes", nr);
	io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, y, 0, 0);
	ret = r2 ? r2 : xfer(nvme, &io);
	say("the reused id", ret, io.path);
	tap(!ret && io.path == P2PNVME_PATH_HOST && !memcmp(u, ref, CHUNK),
	    "the reused id names the new buffer (path host, bytes)");
	if (!r2)
		p2p_nvme_unregister(nvme, y);
}

/*
 * While this thread holds its CPU at SCHED_FIFO, nothing may run the
 * io_uring worker there: on a host that takes the vCPU away for long, the
 * guest's clock runs on, and RT throttling (sched_rt_runtime_us) or the
 * fair server's reserve (6.12+) then runs it early (seen on a loaded host:
 * every read issued again before the unregistration, three rounds out of
 * three). Both off for the round, then put back; a knob the kernel lacks
 * is left alone.
 */
#define STARVE_KNOBS	9
struct starve_knob {
	char path[80];
	char old[24];
};

static int knob_set(struct starve_knob *k, const char *path, const char *val)
{
	ssize_t n;
	int fd = open(path, O_RDWR);

	if (fd < 0)
		return 0;
	n = read(fd, k->old, sizeof(k->old) - 1);
	if (n <= 0 || lseek(fd, 0, SEEK_SET) || write(fd, val, strlen(val)) < 0) {
		close(fd);
		return 0;
	}
	k->old[n] = 0;
	snprintf(k->path, sizeof(k->path), "%s", path);
	close(fd);
	return 1;
}

static int starve_others(struct starve_knob *k)
{
	char path[80];
	int n = 0, cpu;

	n += knob_set(&k[n], "/proc/sys/kernel/sched_rt_runtime_us", "-1");
	for (cpu = 0; cpu < STARVE_KNOBS - 1; cpu++) {
		snprintf(path, sizeof(path), "/sys/kernel/debug/sched/fair_server/cpu%d/runtime", cpu);
		n += knob_set(&k[n], path, "0");
	}
	return n;
}

static void starve_restore(struct starve_knob *k, int n)
{
	while (n-- > 0) {
		int fd = open(k[n].path, O_WRONLY);

		if (fd >= 0) {
			if (write(fd, k[n].old, strlen(k[n].old)) < 0)
				printf("    # %s not put back: %s\n", k[n].path, strerror(errno));
			close(fd);
		}
	}
}

/* One round of requeued_binding(): its ENOENT count, or -1 after a failure or before 7.x. */
static int requeued_round(unsigned char *u, const struct dbuf *d, int round)
{
	static int res[2 * NR];
	struct p2pnvme_info info = { .argsz = sizeof(info) };
	int i, got = 0, r0, r1 = -EIO, r2 = -EIO, ok = 0, enoent = 0, bad = 0, nr = 2 * NR;
	long long requeued = nvme_stat(dev, "queue_full_requeued");
	uint32_t x = ~0U, y = ~0U, room = 0;
	unsigned int workers[2] = { 0, 1 };	/* bounded as they are, one unbound */
	cpu_set_t one_cpu, cpus;
	struct sched_param fifo = { .sched_priority = 1 }, normal = { 0 };
	struct io_uring rr;
	struct starve_knob knobs[STARVE_KNOBS];
	int pinned, have_ring, last, rt = 0, nknobs = 0;

	if (!ioctl(nvme, P2PNVME_IOC_INFO, &info))
		room = info.queue_depth;	/* slots */
	dfill(d, D2OFF, 2 * MIB, 0xee);
	memset(u, 0xee, 2 * MIB);
	CPU_ZERO(&one_cpu);
	CPU_SET(sched_getcpu(), &one_cpu);
	pinned = !sched_getaffinity(0, sizeof(cpus), &cpus) &&
		 !sched_setaffinity(0, sizeof(one_cpu), &one_cpu);
	r0 = pinned ? -io_uring_queue_init(4 * NR, &rr, IORING_SETUP_SQE128 | IORING_SETUP_CQE32) :
		      -errno;
	have_ring = pinned && !r0;
	if (have_ring) {
		r0 = io_uring_register_iowq_max_workers(&rr, workers);
		if (r0)
			printf("    # one io_uring worker: %s\n", strerror(-r0));
		/*
		 * The worker on this CPU, this thread above it until it waits:
		 * the worker issues nothing again before the unregistration
		 */
		rt = !io_uring_register_iowq_aff(&rr, sizeof(one_cpu), &one_cpu) &&
		     !sched_setscheduler(0, SCHED_FIFO, &fifo);
		if (rt)
			nknobs = starve_others(knobs);
	}
	if (!r0) {
		r0 = round_reads(&rr, d, nr, &x);
		got = r0 ? 0 : io_uring_submit(&rr);
		r1 = r0 ? r0 : p2p_nvme_unregister(nvme, x);
		r2 = r1 ? r1 : reg_host(nvme, u, 2 * MIB, &y);	/* at the same id */
		if (rt)
			sched_setscheduler(0, SCHED_OTHER, &normal);
		memset(res, 0xff, sizeof(res));
		if (got > 0 && reap(&rr, got, res, NULL, 2 * NR))
			bad = -1;
	}
	starve_restore(knobs, nknobs);
	if (have_ring)
		io_uring_queue_exit(&rr);
	if (pinned)
		sched_setaffinity(0, sizeof(cpus), &cpus);
	requeued = nvme_stat(dev, "queue_full_requeued") - requeued;
	for (i = 0; bad >= 0 && i < got; i++) {
		ok += !res[i];
		enoent += res[i] == -ENOENT;
		if (res[i] && res[i] != -ENOENT && bad++ < 4)
			printf("    # read %d: %s\n", i, strerror(-res[i]));
	}
	printf("    # %d reads on %u slots; id %u unregistered: %s, given to host memory: %s, id %u; %lld requeued, %d complete, %d ENOENT%s\n",
	       got, room, x, strerror(-r1), strerror(-r2), y, requeued, ok, enoent,
	       rt ? "" : "; the worker not held back");
	if (!r2)
		p2p_nvme_unregister(nvme, y);
	/* the round to report: one with ENOENT, the last, or one that failed */
	last = round == 3 || enoent || bad || r0 || r1 || r2 || !reissue_safe();
	if (!last)
		return 0;
	tap(!r0 && got == nr && !r1 && !r2 && y == x && room && room < (uint32_t)nr,
	    "%d reads of a buffer on a %u-slot queue; the buffer unregistered and its id reused at once",
	    nr, room);
	if (reissue_safe())
		tap(!bad && requeued > 0 && enoent > 0 && enoent <= requeued &&
		    ok + enoent == nr,
		    "7.x: reads given back to io_uring are bound to the registration they named: issued again after it went, ENOENT");
	else
		tap(!bad && !requeued && ok == nr,
		    "before 7.x: none is given back, all %d complete on the buffer they named", nr);
	tap(!bad && ok >= 8 && dsame(d, D2OFF, ref, 2 * MIB),
	    "the reads that completed put their bytes in the unregistered buffer");
	return enoent ? enoent : -1;
}

/*
 * Twice as many reads as the queue holds at once, on an ordinary ring,
 * from one CPU (one queue): on 7.x, the inline issue gives back to
 * io_uring's workers what has no room (queue_full_requeued), and they
 * issue it again while the first ones hold the queue (one worker: the ring
 * allows no more). The buffer is unregistered right after the submission,
 * and its id goes to new host memory: a read issued again before that
 * completes into the old buffer, one issued again after must not land in
 * the new one (it fails with ENOENT: its registration is gone; reads take
 * far longer than the unregistration, so some usually are), and the
 * reads that got a slot at once complete into the old buffer. Before 7.x
 * none is given back, and all complete into the old buffer.
 *
 * Whether the worker issues any read again only after the unregistration
 * is a race: a test thread descheduled long enough lets it issue all of
 * them first (seen with two boots sharing the CPUs, and on faster
 * machines in all three rounds). So the worker runs on the test's CPU and
 * the test is SCHED_FIFO until the new registration: the worker issues
 * nothing before the test waits for the answers. Up to three rounds are
 * still run until one shows ENOENT (where the affinity or FIFO is
 * refused); each round's reads must stay out of the new buffer.
 */
static void requeued_binding(unsigned char *u, const struct dbuf *d)
{
	int round, landed = 0;

	for (round = 1; round <= 3; round++) {
		int enoent = requeued_round(u, d, round);

		landed |= !all(u, 0xee, 2 * MIB);
		if (enoent != 0)
			break;
		printf("    # round %d: every read was issued again before the unregistration\n",
		       round);
	}
	tap(!landed, "no read landed in the new buffer at the reused id");
	hostcheck("equal %llu bar0@%llu nvme0@%llu", 2 * MIB,
		  (unsigned long long)(d->bar_off + D2OFF), REF_LBA * 512);
}

/* ---- (g) P2PNVME_BUF_MAX ----------------------------------------------- */

static void limit_cases(unsigned char *buf)
{
	unsigned char *small = anon(P2PNVME_BUF_MAX * 4096);
	int fd = open(dev, O_RDWR | O_CLOEXEC), ret, r1, r2, r3, bad = 0;
	uint32_t i, id = ~0U, id2;

	if (fd < 0 || !small) {
		printf("    # a second open file and its buffers: %s\n", strerror(errno));
		fd = -1;
	}
	for (i = 0; fd >= 0 && i < P2PNVME_BUF_MAX; i++) {
		ret = reg_host(fd, small + i * 4096, 4096, &id);
		if ((ret || id != i) && bad++ < 4)
			printf("    # registration %u: %s, id %u\n", i, strerror(-ret), id);
	}
	tap(fd >= 0 && !bad, "%d registrations of 4 KiB on a new open file: ids 0..%d in order",
	    P2PNVME_BUF_MAX, P2PNVME_BUF_MAX - 1);
	/*
	 * ids below 8 are looked up in a plain array beside the file's
	 * xarray (reg.c): the array's last and the xarray's first and last,
	 * each read into its own buffer, the ones around it untouched
	 */
	for (i = 0, bad = 0; fd >= 0 && i < 3; i++) {
		static const uint32_t ids[] = { 7, 8, P2PNVME_BUF_MAX - 1 };
		struct p2pnvme_io io = rio(P2PNVME_OP_READ, REF_LBA + 8 * ids[i], 4096, ids[i], 0, 0);

		memset(small, 0xee, P2PNVME_BUF_MAX * 4096);
		ret = xfer(fd, &io);
		if (ret || io.path != P2PNVME_PATH_HOST ||
		    memcmp(small + ids[i] * 4096, ref + ids[i] * 4096, 4096) ||
		    !all(small, 0xee, ids[i] * 4096) ||
		    !all(small + (ids[i] + 1) * 4096, 0xee, (P2PNVME_BUF_MAX - 1 - ids[i]) * 4096)) {
			say("read naming that id", ret, io.path);
			bad++;
		}
	}
	tap(fd >= 0 && !bad, "reads naming ids 7, 8 and %d land in those buffers alone",
	    P2PNVME_BUF_MAX - 1);
	ret = fd < 0 ? -EBADF : reg_host(fd, buf, 4096, &id);
	result(ret == -ENOSPC, "registration 1025 on that file", ENOSPC, -ret);
	r1 = fd < 0 ? -EBADF : p2p_nvme_unregister(fd, 500);
	r2 = fd < 0 ? -EBADF : reg_host(fd, small + 500 * 4096, 4096, &id);
	r3 = fd < 0 ? -EBADF : reg_host(fd, buf, 4096, &id2);
	printf("    # unregister 500: %s; register: %s, id %u; once more: %s\n", strerror(-r1),
	       strerror(-r2), id, strerror(-r3));
	tap(!r1 && !r2 && id == 500 && r3 == -ENOSPC,
	    "unregistering id 500 makes it the next one, then ENOSPC again");
	for (i = 0, bad = 0; fd >= 0 && i < P2PNVME_BUF_MAX; i++)
		bad += !!p2p_nvme_unregister(fd, i);
	ret = fd < 0 ? -EBADF : reg_host(fd, buf, 4096, &id);
	printf("    # %d unregistrations failed; the next registration: %s, id %u\n", bad,
	       strerror(-ret), id);
	tap(fd >= 0 && !bad && !ret && id == 0,
	    "all %d unregister; the next registration gets id 0", P2PNVME_BUF_MAX);
	/* gone from the plain array as from the xarray */
	for (i = 0, bad = 0; fd >= 0 && i < 2; i++) {
		struct p2pnvme_io io = rio(P2PNVME_OP_READ, REF_LBA, 4096, i ? 900 : 3, 0, 0);

		ret = xfer(fd, &io);
		if (ret != -ENOENT) {
			say("read naming an unregistered id", ret, io.path);
			bad++;
		}
	}
	tap(fd >= 0 && !bad, "reads naming ids 3 and 900, unregistered: ENOENT");
	if (fd >= 0)
		close(fd);
	if (small)
		munmap(small, P2PNVME_BUF_MAX * 4096);
}

/* The counters went up by what this test moved, by direction and path. */
static void counters(const long *s0)
{
	const long want[NSTATS] = {
		did.rd[P2PNVME_PATH_HOST], did.wr[P2PNVME_PATH_HOST],
		did.rd[P2PNVME_PATH_DMABUF], did.wr[P2PNVME_PATH_DMABUF],
		did.bytes[P2PNVME_PATH_HOST], did.bytes[P2PNVME_PATH_DMABUF],
		0, 0, 0, 0, 0,
	};
	long s1[NSTATS];
	unsigned int i;
	int bad = 0;

	stats_get(s1);
	for (i = 0; i < NSTATS; i++) {
		if (s1[i] - s0[i] != want[i] || s0[i] < 0) {
			bad++;
			printf("    # stats/%s went up by %ld, the test moved %ld\n", stat_names[i],
			       s1[i] - s0[i], want[i]);
		}
	}
	printf("    # moved: %ld/%ld host reads/writes, %ld/%ld dma-buf reads/writes\n",
	       want[0], want[1], want[2], want[3]);
	tap(!bad, "stats: host and dmabuf counters went up by what the test moved, p2p/bounce/errors not");
}

/* ---- (h) closing with registered buffers and commands in flight -------- */

/*
 * In a child: its own file, registered host memory and a registered dma-buf
 * (whose fd it closes), 2 * NR reads in flight through a ring, then
 * close(). With @reap the child then reaps every answer (each must be 0:
 * the file lives until they end); without, it exits with them in flight.
 */
static int close_child(int reap_them)
{
	static int res[2 * NR];
	unsigned char *h = anon(2 * MIB);
	int fd = open(dev, O_RDWR | O_CLOEXEC), i, got, ret, ok = 0;
	uint32_t hid = ~0U, dbid = ~0U;
	struct io_uring r;
	struct dbuf d;
	double t0, took;
	long held;

	if (fd < 0 || !h || dbuf_get(2 * MIB, 0, &d) || reg_host(fd, h, 2 * MIB, &hid) ||
	    reg_dmabuf(fd, d.fd, 0, 2 * MIB, &dbid) ||
	    io_uring_queue_init(256, &r, IORING_SETUP_SQE128 | IORING_SETUP_CQE32)) {
		printf("    # child setup: %s\n", strerror(errno));
		return 10;
	}
	close(d.fd);	/* the registration holds the dma-buf */
	for (i = 0; i < 2 * NR; i++) {
		struct p2pnvme_io io = rio(P2PNVME_OP_READ, REF_LBA + (i % NR) * 64, 32 * KIB,
					   i < NR ? hid : dbid, (i % NR) * 32 * KIB, 0);

		prep(io_uring_get_sqe(&r), fd, &io, i);
	}
	got = io_uring_submit(&r);
	held = inflight_now(dev);
	t0 = now();
	ret = close(fd);
	took = now() - t0;
	printf("    # child: %d submitted, %ld at the controller; close() %s after %.3f s\n", got,
	       held, ret ? strerror(errno) : "returned", took);
	if (got != 2 * NR || ret || took > 5)
		return 11;
	if (!reap_them)
		return 0;	/* exit: the ring goes with the reads in flight */
	memset(res, 0xff, sizeof(res));
	if (reap(&r, 2 * NR, res, NULL, 2 * NR))
		return 12;
	for (i = 0; i < 2 * NR; i++)
		ok += !res[i];
	printf("    # child: %d of %d reads completed 0 after the close\n", ok, 2 * NR);
	io_uring_queue_exit(&r);
	return ok == 2 * NR ? 0 : 13;
}

static void close_case(int reap_them)
{
	long long base = alloc_bytes(), left_mem;
	int status = 0, code = -1;
	long left, busy;
	pid_t pid, w;
	double t0;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		code = close_child(reap_them);
		fflush(stdout);
		_exit(code);
	}
	t0 = now();
	while (pid > 0) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			break;
		}
		if (w < 0 && errno != EINTR)
			break;
		if (now() - t0 > 30) {
			printf("    # the child hangs after %.0f s\n", now() - t0);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(10000);
	}
	/* everything it had goes: the commands, the requests, the dma-buf */
	t0 = now();
	while (((left = unreleased(dev)) != 0 || (busy = inflight_now(dev)) != 0 ||
		alloc_bytes() != base) && now() - t0 < 10)
		usleep(10000);
	left = unreleased(dev);
	busy = inflight_now(dev);
	left_mem = alloc_bytes();
	printf("    # child exit %d; then %ld requests unreleased, %ld commands held, p2pbar %lld bytes (before: %lld)\n",
	       code, left, busy, left_mem, base);
	if (reap_them)
		tap(!code && !left && !busy && left_mem == base,
		    "close with %d registered reads in flight returns, each completes 0, all is released",
		    2 * NR);
	else
		tap(!code && !left && !busy && left_mem == base,
		    "exit with the file closed and %d registered reads in flight: all is released",
		    2 * NR);
}

static void sequence(void)
{
	unsigned char *h = anon(HLEN), *u = anon(REF_LEN), *buf = anon(MIB);
	uint32_t hid = ~0U, dbid = ~0U;
	long s0[NSTATS];
	struct dbuf d;
	int fd2, ret;

	ref = anon(REF_LEN);
	ret = dbuf_get(DLEN, 1, &d);
	fd2 = open(dev, O_RDWR | O_CLOEXEC);
	if (ret || !h || !u || !buf || !ref || fd2 < 0) {
		printf("    # setup: %s\n", strerror(ret ? -ret : errno));
		return;
	}
	stats_get(s0);
	reg_table(buf, &d);
	unreg_table(buf);
	io_cases(h, u, &d, &hid, &dbid);
	batch_cases(h, u, &d, hid, dbid);
	uring_cases(h, u, &d, hid, dbid);
	io_table(h, buf, hid, fd2);
	readonly_dmabuf();
	inflight_unreg(u, &d);
	requeued_binding(u, &d);
	limit_cases(buf);
	counters(s0);
	close(fd2);
}

/* ---- --revoke and --unbind --------------------------------------------- */

struct unbinder {
	char path[96];
	const char *bdf;
	int err, done;
	double took;
};

static void *unbind_fn(void *arg)
{
	struct unbinder *ub = arg;
	double t0 = now();
	int fd = open(ub->path, O_WRONLY | O_CLOEXEC);

	ub->err = fd < 0 || write(fd, ub->bdf, strlen(ub->bdf)) < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	ub->took = now() - t0;
	__atomic_store_n(&ub->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * From this thread keep QD reads of 64 KiB in flight into the registered
 * buffers @ids (4 MiB each, taken in turn), refilling each slot as it is
 * answered, while another thread unbinds @drv from @bdf; stop refilling
 * once the unbind returned and take the rest. Two cases: each answered (0,
 * ENODEV or ECANCELED), the unbind returns within 30 s.
 */
static void storm(const char *drv, const char *bdf, const uint32_t *ids, int nids)
{
	struct unbinder ub = { .bdf = bdf };
	long sent_n = 0, answered = 0, ok = 0, gone = 0, other = 0, inflight;
	double t0, t_done = -1;
	struct io_uring_cqe *cqe;
	struct p2pnvme_io io;
	pthread_t t;
	int slot, ret, joined = 0, stuck = 0;
	char what[64];

	snprintf(ub.path, sizeof(ub.path), "/sys/bus/pci/drivers/%s/unbind", drv);
	for (slot = 0; slot < QD; slot++) {
		io = rio(P2PNVME_OP_READ, REF_LBA + (slot % NR) * (CHUNK / 512), CHUNK,
			 ids[slot % nids], (slot % NR) * CHUNK, 0);
		prep(io_uring_get_sqe(&ring), nvme, &io, slot);
	}
	ret = io_uring_submit(&ring);
	inflight = sent_n = ret > 0 ? ret : 0;
	printf("    # %d reads submitted, %ld at the controller when the unbind begins\n", ret,
	       inflight_now(dev));
	t0 = now();
	ret = pthread_create(&t, NULL, unbind_fn, &ub);
	if (ret) {
		ub.err = ret;
		ub.done = 1;
		joined = 1;
	}
	while (inflight > 0) {
		struct __kernel_timespec ts = { .tv_sec = 1 };
		int done = __atomic_load_n(&ub.done, __ATOMIC_ACQUIRE), more = 0;

		if (done && t_done < 0)
			t_done = now();
		ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (ret == -ETIME || ret == -EINTR) {
			/* answers owed 30 s after the unbind returned (or 60 s in): a hang */
			if ((t_done >= 0 && now() - t_done > 30) || now() - t0 > 60) {
				stuck = 1;
				break;
			}
			continue;
		}
		if (ret) {
			printf("    # waiting for completions: %s\n", strerror(-ret));
			stuck = 1;
			break;
		}
		do {
			slot = cqe->user_data;
			ret = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
			inflight--;
			answered++;
			if (!ret)
				ok++;
			/* EAGAIN: invalidated between lookup and submission */
			else if (ret == -ENODEV || ret == -ECANCELED || ret == -EAGAIN)
				gone++;
			else if (other++ < 4)
				printf("    # slot %d: %s\n", slot, strerror(-ret));
			if (!__atomic_load_n(&ub.done, __ATOMIC_ACQUIRE)) {
				prep(io_uring_get_sqe(&ring), nvme, &sent[slot], slot);
				more++;
			}
		} while (!io_uring_peek_cqe(&ring, &cqe));
		if (more) {
			ret = io_uring_submit(&ring);
			if (ret != more) {
				printf("    # resubmitting %d: %d\n", more, ret);
				ret = ret > 0 ? ret : 0;
			}
			sent_n += ret;
			inflight += ret;
		}
	}
	/* the unbind itself: returned or not, within the bound */
	while (!__atomic_load_n(&ub.done, __ATOMIC_ACQUIRE) && now() - t0 < 60)
		usleep(10000);
	if (!joined && __atomic_load_n(&ub.done, __ATOMIC_ACQUIRE))
		pthread_join(t, NULL);
	else if (!joined)
		pthread_detach(t);
	printf("    # %ld submitted, %ld answered: %ld done, %ld ENODEV/ECANCELED/EAGAIN, %ld other; unbind %s after %.2f s\n",
	       sent_n, answered, ok, gone, other,
	       !__atomic_load_n(&ub.done, __ATOMIC_ACQUIRE) ? "still running" :
	       ub.err ? strerror(ub.err) : "returned", ub.took);
	tap(!stuck && !inflight && answered == sent_n && sent_n >= QD && !other,
	    "unbind %s with %d reads in flight: each answered, done or ENODEV/ECANCELED/EAGAIN", drv, QD);
	snprintf(what, sizeof(what), "the %s unbind returns within 30 s", drv);
	result(__atomic_load_n(&ub.done, __ATOMIC_ACQUIRE) && !ub.err && ub.took < 30, what, 0,
	       ub.err);
}

/* p2preg-test --revoke NVME BAR BDF: p2pbar goes from under a registered dma-buf */
static void revoke_mode(const char *bdf)
{
	unsigned char *h = anon(MIB);
	uint32_t dbid = ~0U, hid = ~0U, again = ~0U;
	int r0, r1, r2, ret, ret2;
	struct p2pnvme_io io, hq;
	struct dbuf d;

	r0 = dbuf_get(REF_LEN, 0, &d);
	r1 = r0 ? r0 : reg_dmabuf(nvme, d.fd, 0, REF_LEN, &dbid);
	r2 = h ? reg_host(nvme, h, MIB, &hid) : -ENOMEM;
	io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, dbid, 0, 0);
	ret = r1 ? r1 : xfer(nvme, &io);
	hq = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, hid, 0, 0);
	ret2 = r2 ? r2 : xfer(nvme, &hq);
	if (!ret)
		hostcheck("equal %llu bar0@%llu nvme0@%llu", CHUNK, (unsigned long long)d.bar_off,
			  REF_LBA * 512);
	printf("    # export: %s; dma-buf id %u: %s, read %s; host id %u: %s, read %s\n",
	       strerror(-r0), dbid, strerror(-r1), strerror(-ret), hid, strerror(-r2),
	       strerror(-ret2));
	tap(!ret && io.path == P2PNVME_PATH_DMABUF && !ret2 && hq.path == P2PNVME_PATH_HOST &&
	    dbid == 0 && hid == 1 && pattern_ok(h, REF_LBA, CHUNK),
	    "a registered dma-buf (id 0) and host buffer (id 1): a read into each");

	storm("p2pbar", bdf, &dbid, 1);

	io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, dbid, 0, 0);
	ret = xfer(nvme, &io);
	result(ret == -ENODEV, "ioctl: a read into the revoked buffer", ENODEV, -ret);
	io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, dbid, 0, 0);	/* nothing written back */
	ret = one(nvme, &io);
	result(ret == -ENODEV, "uring: a read into the revoked buffer", ENODEV, -ret);
	io = rio(P2PNVME_OP_WRITE, W_REVOKE, CHUNK, dbid, 0, 0);
	ret = xfer(nvme, &io);
	result(ret == -ENODEV, "ioctl: a write from the revoked buffer", ENODEV, -ret);
	memset(h, 0, CHUNK);
	hq = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, hid, 0, 0);
	ret = xfer(nvme, &hq);
	say("host buffer", ret, hq.path);
	tap(!ret && hq.path == P2PNVME_PATH_HOST && pattern_ok(h, REF_LBA, CHUNK),
	    "the host buffer on the same file still works (path host)");
	/*
	 * A batch whose second entry names the revoked buffer fails before
	 * anything is submitted; the first entry's read, synced for the
	 * controller already, must leave its buffer as the CPU wrote it (under
	 * swiotlb a sync for the CPU would copy the bounce slot's old bytes in)
	 */
	{
		struct p2pnvme_io b2[2] = { rio(P2PNVME_OP_READ, REF_LBA, CHUNK, hid, 0, 0),
					    rio(P2PNVME_OP_READ, REF_LBA, CHUNK, dbid, 0, 0) };
		unsigned int at = ~0U;
		size_t k, bad = 0;

		memset(h, 0x3c, CHUNK);
		ret = submit(nvme, b2, 2, &at);
		for (k = 0; k < CHUNK; k++)
			bad += h[k] != 0x3c;
		printf("    # batch: %s, failed %u; %zu bytes of the host buffer changed\n",
		       strerror(-ret), at, bad);
		tap(ret == -ENODEV && at == 1 && !bad,
		    "a batch naming the revoked buffer second: ENODEV, failed 1, the first's buffer untouched");
	}
	/*
	 * The same after an imported dma-buf: that batch publishes fences and
	 * takes its list blocks first, without walking the revoked buffer's
	 * mapping (gone with the revocation: KASAN would report the walk).
	 * Under swiotlb the udmabuf itself would be refused when it is
	 * mapped, but the revoked buffer's lookup comes first (a moved
	 * buffer is mapped again there, a revoked one refused).
	 */
	{
		int swiotlb = getenv("P2P_SWIOTLB") && *getenv("P2P_SWIOTLB");
		int ufd = udmabuf_of(CHUNK);
		struct p2pnvme_io b2[2] = {
			{ .argsz = sizeof(b2[0]), .op = P2PNVME_OP_READ, .slba = REF_LBA,
			  .len = CHUNK, .flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = ufd },
			rio(P2PNVME_OP_READ, REF_LBA, CHUNK, dbid, 0, 0) };
		unsigned int at = ~0U;

		ret = ufd < 0 ? ufd : submit(nvme, b2, 2, &at);
		printf("    # udmabuf %d; batch: %s, failed %u\n", ufd, strerror(-ret), at);
		tap(ret == -ENODEV && at == 1,
		    swiotlb ? "a batch of a udmabuf and the revoked buffer: ENODEV at its lookup, failed 1" :
			      "a batch of a udmabuf (fences published) and the revoked buffer: ENODEV, failed 1");
		if (ufd >= 0)
			close(ufd);
	}
	ret = p2p_nvme_unregister(nvme, dbid);
	io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, dbid, 0, 0);
	ret2 = xfer(nvme, &io);
	printf("    # unregister: %s; then a read: %s\n", strerror(-ret), strerror(-ret2));
	tap(!ret && ret2 == -ENOENT, "unregistering the revoked buffer: 0, its id then ENOENT");
	ret = d.fd < 0 ? -EBADF : reg_dmabuf(nvme, d.fd, 0, REF_LEN, &again);
	if (!ret)
		p2p_nvme_unregister(nvme, again);
	result(ret == -ENODEV, "registering the revoked dma-buf again", ENODEV, -ret);
	p2p_nvme_unregister(nvme, hid);
	if (d.fd >= 0)
		close(d.fd);
}

/* p2preg-test --unbind NVME BAR BDF: the controller goes from under its buffers */
static void unbind_mode(const char *bdf)
{
	unsigned char *h = anon(REF_LEN);
	long long base = alloc_bytes(), left;
	uint32_t ids[2] = { ~0U, ~0U }, id = ~0U;
	struct p2pnvme_io io, hq;
	int r0, r1, r2, ret, ret2, i;
	double t0, took;
	struct dbuf d;

	r0 = dbuf_get(REF_LEN, 0, &d);
	r1 = h ? reg_host(nvme, h, REF_LEN, &ids[0]) : -ENOMEM;
	r2 = r0 ? r0 : reg_dmabuf(nvme, d.fd, 0, REF_LEN, &ids[1]);
	hq = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, ids[0], 0, 0);
	ret = r1 ? r1 : xfer(nvme, &hq);
	io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, ids[1], 0, 0);
	ret2 = r2 ? r2 : xfer(nvme, &io);
	if (!ret2)
		hostcheck("equal %llu bar0@%llu nvme0@%llu", CHUNK, (unsigned long long)d.bar_off,
			  REF_LBA * 512);
	printf("    # host id %u: %s, read %s; export %s; dma-buf id %u: %s, read %s\n", ids[0],
	       strerror(-r1), strerror(-ret), strerror(-r0), ids[1], strerror(-r2),
	       strerror(-ret2));
	tap(!ret && hq.path == P2PNVME_PATH_HOST && !ret2 && io.path == P2PNVME_PATH_DMABUF &&
	    ids[0] == 0 && ids[1] == 1 && pattern_ok(h, REF_LBA, CHUNK),
	    "a registered host buffer (id 0) and dma-buf (id 1): a read into each");

	storm("p2pnvme", bdf, ids, 2);

	/* each of the two answers ENODEV: ret is the first other answer */
	for (i = 0, ret = -ENODEV; i < 2; i++) {
		io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, ids[i], 0, 0);
		r0 = xfer(nvme, &io);
		if (r0 != -ENODEV && ret == -ENODEV)
			ret = r0;
	}
	result(ret == -ENODEV, "ioctl: reads into both buffers after the unbind", ENODEV, -ret);
	for (i = 0, ret = -ENODEV; i < 2; i++) {
		io = rio(P2PNVME_OP_READ, REF_LBA, CHUNK, ids[i], 0, 0);
		r0 = one(nvme, &io);
		if (r0 != -ENODEV && ret == -ENODEV)
			ret = r0;
	}
	result(ret == -ENODEV, "uring: reads into both buffers after the unbind", ENODEV, -ret);
	ret = h ? reg_host(nvme, h, 4096, &id) : -ENOMEM;
	if (!ret)
		p2p_nvme_unregister(nvme, id);
	result(ret == -ENODEV, "registering on the file after the unbind", ENODEV, -ret);
	r1 = p2p_nvme_unregister(nvme, ids[0]);
	r2 = p2p_nvme_unregister(nvme, ids[1]);
	printf("    # unregister: %s, %s\n", strerror(-r1), strerror(-r2));
	tap(!r1 && !r2, "both buffers unregister after the unbind");
	if (d.fd >= 0)
		close(d.fd);
	t0 = now();
	ret = close(nvme);
	took = now() - t0;
	nvme = -1;
	left = alloc_settles(base, 10);
	printf("    # close() %s after %.3f s; p2pbar %lld bytes, %lld before\n",
	       ret ? strerror(errno) : "returned", took, left, base);
	tap(!ret && took < 5 && left == base, "the file closes, the dma-buf's p2pmem is freed");
}

/*
 * --bounce-cap MB: max_bounced_reg_mb is MB. Under swiotlb (P2P_SWIOTLB=1)
 * MB 1-MiB host buffers register, the next is refused with ENOBUFS;
 * elsewhere nothing bounces and MB + 3 of them register. Then one
 * unregistered, another registers (under swiotlb: its room came back).
 */
#define SWIOTLB_HIWATER	"/sys/kernel/debug/swiotlb/io_tlb_used_hiwater"

/*
 * One registration larger than the whole cap: under swiotlb=force it is
 * refused before it maps, so swiotlb's high-water mark (slots of 2 KiB,
 * reset first) never gets near its size; without swiotlb it registers.
 */
static void big_beyond_cap(unsigned int mb, int swiotlb)
{
	size_t len = (size_t)(mb + 8) << 20;
	unsigned char *p = anon(len);
	long long hw = -1;
	uint32_t id;
	int ret, reset;

	if (!p) {
		result(0, "host memory for the buffer", 0, errno);
		return;
	}
	memset(p, 0x5a, len);
	reset = p2p_sysfs_write(SWIOTLB_HIWATER, "0");
	ret = reg_host(nvme, p, len, &id);
	if (!reset)
		hw = p2p_sysfs_num(SWIOTLB_HIWATER);
	if (hw < 0)
		printf("    # %zu MiB at once: %s; swiotlb's high-water mark: unknown\n",
		       len >> 20, ret ? strerror(-ret) : "registered");
	else
		printf("    # %zu MiB at once: %s; swiotlb's high-water mark since: %lld KiB\n",
		       len >> 20, ret ? strerror(-ret) : "registered", hw * 2);
	if (!ret)
		p2p_nvme_unregister(nvme, id);
	if (swiotlb)
		tap(ret == -ENOBUFS && hw >= 0 && hw * 2048 < (long long)len,
		    "%zu MiB beyond max_bounced_reg_mb: ENOBUFS before it takes the bounce slots",
		    len >> 20);
	else
		tap(!ret, "%zu MiB at once beyond max_bounced_reg_mb: not bounced, registers",
		    len >> 20);
	munmap(p, len);
}

static void bounce_cap_mode(const char *arg)
{
	const char *env = getenv("P2P_SWIOTLB");
	int swiotlb = env && !strcmp(env, "1");
	unsigned int mb = strtoul(arg, NULL, 0), want = swiotlb ? mb : mb + 2, i, ok = 0;
	size_t len = 1 << 20, all = (size_t)(mb + 3) * len;
	uint32_t ids[64];
	unsigned char *p;
	int ret = 0;

	p = mmap(NULL, all, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mb + 3 > sizeof(ids) / sizeof(ids[0])) {
		result(0, "host memory for the buffers", 0, errno);
		return;
	}
	memset(p, 0x5a, all);
	for (i = 0; i <= want; i++) {
		ret = reg_host(nvme, p + i * len, len, &ids[i]);
		if (ret)
			break;
		ok++;
	}
	printf("    # %s: %u MiB registered, then %s\n", swiotlb ? "swiotlb" : "no swiotlb", ok,
	       ret ? strerror(-ret) : "no refusal");
	if (swiotlb)
		result(ok == mb && ret == -ENOBUFS,
		       "bounced registrations stop at max_bounced_reg_mb", ENOBUFS, -ret);
	else
		tap(ok == want + 1, "nothing is bounced: %u buffers beyond max_bounced_reg_mb register",
		    want + 1 - mb);
	/* under swiotlb the one given back is what makes room */
	ret = ok ? p2p_nvme_unregister(nvme, ids[--ok]) : -ENOENT;
	if (!ret)
		ret = reg_host(nvme, p + ok * len, len, &ids[ok]);
	ok += !ret;
	result(!ret, "one unregistered, one more registers", 0, -ret);
	while (ok)
		p2p_nvme_unregister(nvme, ids[--ok]);
	munmap(p, all);
	big_beyond_cap(mb, swiotlb);
}

static const char *bar_path, *arg;

/* the files every case uses (nvme, bar, ring) */
FIXTURE(files) {
	int unused;
};

FIXTURE_SETUP(files)
{
	nvme = open(dev, O_RDWR | O_CLOEXEC);
	bar = open(bar_path, O_RDWR | O_CLOEXEC);
	if (nvme < 0 || bar < 0 ||
	    io_uring_queue_init(256, &ring, IORING_SETUP_SQE128 | IORING_SETUP_CQE32))
		kt_fail("setup: %s", strerror(errno));
}

FIXTURE_TEARDOWN(files)
{
	io_uring_queue_exit(&ring);
	close(bar);
	close(nvme);
}

/*
 * One sequence on one state: the buffers registered by io_cases() are what
 * the later cases send, and the stats must have gone up by what all of them
 * moved (counters()).
 */
TEST_F(client_reg, files, sequence, PLAN_SEQUENCE, 300)
{
	sequence();
}

TEST_F(client_reg, files, close_reaped, 1, 120)
{
	close_case(1);
}

TEST_F(client_reg, files, exit_in_flight, 1, 120)
{
	close_case(0);
}

TEST_F(client_reg_revoke, files, revoke, PLAN_REVOKE, 120)
{
	revoke_mode(arg);
}

TEST_F(client_reg_unbind, files, unbind, PLAN_UNBIND, 120)
{
	unbind_mode(arg);
}

TEST_F(client_reg_bounce_cap, files, bounce_cap, PLAN_CAP, 120)
{
	bounce_cap_mode(arg);
}

int main(int argc, char **argv)
{
	int revoke = argc > 1 && !strcmp(argv[1], "--revoke");
	int unbind = argc > 1 && !strcmp(argv[1], "--unbind");
	int cap = argc > 1 && !strcmp(argv[1], "--bounce-cap");
	int opt = revoke || unbind || cap;

	if (argc != 3 + 2 * opt) {
		fprintf(stderr, "usage: p2preg-test /dev/p2pnvmeN /dev/p2pbarN\n"
			"       p2preg-test --revoke|--unbind /dev/p2pnvmeN /dev/p2pbarN BDF\n"
			"       p2preg-test --bounce-cap /dev/p2pnvmeN /dev/p2pbarN MB\n");
		return 2;
	}
	/* without the host's line, fd 7 must not become one of ours (hostcheck) */
	if (fcntl(7, F_GETFD) < 0 && errno == EBADF) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null >= 0 && null != 7) {
			dup2(null, 7);
			close(null);
		}
	}
	dev = argv[1 + opt];
	bar_path = argv[2 + opt];
	arg = opt ? argv[4] : NULL;
	return kt_run(revoke ? "client_reg_revoke" : unbind ? "client_reg_unbind" :
		      cap ? "client_reg_bounce_cap" : "client_reg");
}
