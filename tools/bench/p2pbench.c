// SPDX-License-Identifier: GPL-2.0
/*
 * p2pbench: timed random reads into p2pmem, for benchmark ratios.
 *
 *   p2pbench engine NVME SIZE SECONDS [--qd N] [--threads T] [--bounce | --host]
 *        this suite's queue engine: P2PNVME_IOC_IO reads at queue depth 1,
 *        or batches of N reads in flight at once (P2PNVME_IOC_SUBMIT); with
 *        T threads, each does that on its own buffer (T x N in flight)
 *   p2pbench blk BLKDEV SIZE SECONDS QD [--host]
 *        O_DIRECT reads through the kernel's nvme driver (Linux AIO, depth QD)
 *   p2pbench uring engine|engine-std|blk|ng DEV SIZE SECONDS QD [--bounce | --host] [--iopoll] [--defer]
 *        one thread keeps QD reads in flight through io_uring: the engine's
 *        P2PNVME_URING_CMD_IO on /dev/p2pnvmeN, O_DIRECT IORING_OP_READ on
 *        nvme-pci's /dev/nvmeXnY (non-fixed buffers), or nvme-pci's
 *        passthrough NVME_URING_CMD_IO on /dev/ngXnY (engine-std: the same
 *        command on /dev/p2pnvmeN, as fio sends it); adds p99 latency.
 *        --iopoll: an IORING_SETUP_IOPOLL ring, completions reaped by
 *        polling (p2pnvme loaded with poll=1, nvme-pci with poll_queues).
 *        --defer: the ring fio sets up (SINGLE_ISSUER | DEFER_TASKRUN |
 *        COOP_TASKRUN: completions' task work runs when the task waits)
 *   p2pbench uring disk DISK SIZE SECONDS QD [--host]
 *        O_DIRECT IORING_OP_READ on p2pnvme's disk (/dev/p2pnvmeNnM, p2pnvme
 *        loaded with disk=1), as on nvme-pci's block device: blk-mq on
 *        p2pnvme's own second set of queues; reported as disk-uring. The
 *        disk's byte counter (bytes_p2p, or bytes_host with --host) must
 *        have grown by every read's bytes
 *   p2pbench uring engine-reg NVME SIZE SECONDS QD [--host] [--iopoll]
 *        the engine's io_uring path with a registered buffer: the p2pmem,
 *        exported by p2pbar as a dma-buf (P2PBAR_IOC_EXPORT), or the host
 *        memory, is registered once (P2PNVME_IOC_BUF_REGISTER) and every
 *        read names it (P2PNVME_IO_F_REGISTERED): nothing is pinned or
 *        mapped per I/O
 *
 *   p2pbench file KIND FILE SIZE SECONDS QD [--nvme NVME] [--dev BLKDEV] [--verify SRC]
 *        one file read every way (Documentation/files.rst, step 7), one
 *        thread keeping QD reads of SIZE in flight at random SIZE-aligned
 *        offsets: the same offsets for every KIND (srand(1) over the pieces
 *        of FILE that lie whole in one written extent, FIEMAP), into p2pmem
 *        of /dev/p2pbar0. KIND:
 *          cmd           p2pnvme's file command through io_uring
 *                        (P2PNVME_URING_CMD_FILE_IO on NVME, default
 *                        /dev/p2pnvme0) into a registered p2pbar dma-buf:
 *                        reported as file-cmd
 *          cmd-ioctl     the same through P2PNVME_IOC_FILE_SUBMIT, batches of
 *                        QD one after another: file-cmd-ioctl
 *          cmd-placeholders  cmd, run while p2pnvme's bench-only
 *                        file_placeholder_force is 1 (the caller sets it:
 *                        the same dma-buf through placeholder pages, as
 *                        GPU memory goes): file-cmd-placeholders
 *          odirect       O_DIRECT IORING_OP_READ of FILE into a mapping of
 *                        p2pmem: file-disk on p2pnvme's disk, file-nvme-pci
 *                        elsewhere
 *          bounce        O_DIRECT into host memory, each read then copied
 *                        into a p2pmem mapping (memcpy; what a program does
 *                        without P2P): file-bounce-disk, file-bounce-nvme-pci
 *          extent-disk   O_DIRECT IORING_OP_READ of BLKDEV (--dev: FILE's own
 *                        block device, p2pnvme's disk) at FILE's extents, into
 *                        a p2pmem mapping: the reads without the filesystem
 *          extent-engine the engine's registered read (P2PNVME_URING_CMD_IO)
 *                        of FILE's LBAs into a registered p2pbar dma-buf: the
 *                        LBA path without the filesystem and the disk
 *        Fails unless every read moved SIZE bytes on the path meant (the
 *        CQE's, or the batch entry's, path dmabuf for cmd, cmd-ioctl,
 *        cmd-placeholders and extent-engine; stats/file_placeholder_reads
 *        counted every read of cmd-placeholders and none of cmd and
 *        cmd-ioctl, file_placeholder_force 1 for the first and 0 for the
 *        others), p2pnvme's disk counted every byte (bytes_p2p;
 *        bytes_host for a bounce; none for extent-engine) or another block
 *        device read at least every sector, and with --verify SRC (a copy
 *        of FILE) each slot's last read holds SRC's bytes at its offset.
 *        The JSON line adds "slots" (the pieces) and "verified" (slots
 *        checked against SRC)
 *   p2pbench regcost NVME SIZE N
 *        what registering costs (P2PNVME_IOC_BUF_REGISTER + _UNREGISTER, N
 *        times each): SIZE bytes of faulted-in host memory (pinned and
 *        mapped) against a p2pbar dma-buf of SIZE (attached and mapped);
 *        microseconds per 4 KiB page of each and their ratio
 *   p2pbench allocflat BAR N
 *        P2PBAR_IOC_ALLOC + _FREE of 4 KiB, N pairs, with 0, 1000 and 10000
 *        other allocations live on the same file: microseconds per pair at
 *        each and the ratio of the worst to the one at 0
 *   p2pbench mark N start|end
 *        execute instruction-count window N's start or end marker (below)
 *   p2pbench mark N LOOPS
 *        window N around a loop of exactly 2 x LOOPS user instructions (a
 *        calibration of the counting: scripts/cpu-insn.sh checks it)
 *
 * With P2PBENCH_MARK=N in the environment, engine, blk, uring and file put their
 * measured loop (what their CPU time covers) inside instruction-count
 * window N, and their JSON line says "mark":N. A window's start marker is
 * id 2N, its end 2N + 1 (N 1..32767): "nopl 0x7032XXXX(%rax)" with the id
 * in XXXX, a 7-byte NOP that does nothing on hardware or in a plain QEMU;
 * QEMU's TCG plugin qemu/plugins/insn.c sees it execute and writes out the
 * guest's instruction counts (Documentation/benchmarks.md, "Instructions
 * per I/O").
 *
 * Buffers are p2pmem from /dev/p2pbar0 unless --host. Prints one JSON line:
 * ops, IOPS, MiB/s, mean latency, and guest CPU time (all CPUs, from
 * /proc/stat, so interrupt and polling time count) per I/O and per GiB.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/nvme_ioctl.h>
#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

#include "libp2p.h"
#include "p2puring.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* busy CPU time of the whole guest in seconds (user..softirq, no idle/iowait) */
static double cpu_busy(void)
{
	unsigned long long v[8] = {};
	FILE *f = fopen("/proc/stat", "r");

	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			 &v[3], &v[4], &v[5], &v[6], &v[7]) != 8) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / sysconf(_SC_CLK_TCK);
}

#define MARK_MAGIC	0x7032u
#define MARK_MAX	32767

/* the window P2PBENCH_MARK names (0: none) and its markers' code */
static int mark_window;
static unsigned char *mark_code;

/*
 * Window @n's markers as two functions on a page of their own: at 0 the
 * start marker (id 2n) and a ret, at 16 the end marker (2n + 1). Written
 * at run time because the id is in the instruction. 0, or -errno.
 */
static int mark_prepare(int n)
{
	unsigned char *p;
	int k;

	if (n < 1 || n > MARK_MAX)
		return -EINVAL;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	for (k = 0; k < 2; k++) {
		uint32_t disp = MARK_MAGIC << 16 | (2 * n + k);
		unsigned char *f = p + 16 * k;

		f[0] = 0x0f;	/* nopl disp32(%rax) */
		f[1] = 0x1f;
		f[2] = 0x80;
		memcpy(f + 3, &disp, sizeof(disp));	/* little-endian, as x86 reads it */
		f[7] = 0xc3;	/* ret */
	}
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC)) {
		k = -errno;
		munmap(p, 4096);
		return k;
	}
	mark_code = p;
	mark_window = n;
	return 0;
}

/* execute the window's start (0) or end (1) marker, if there is a window */
static void mark(int end)
{
	if (mark_code)
		((void (*)(void))(mark_code + 16 * end))();
}

/* the JSON line's "mark" field: ,"mark":N or nothing */
static const char *mark_json(void)
{
	static char s[24];

	if (!mark_window)
		return "";
	snprintf(s, sizeof(s), ",\"mark\":%d", mark_window);
	return s;
}

/*
 * p2pbench mark N start|end: one marker; p2pbench mark N LOOPS: window N
 * around LOOPS iterations of a two-instruction loop.
 */
static int mark_cmd(char **argv)
{
	long n = strtol(argv[0], NULL, 10);
	unsigned long c;
	long loops;
	char *end;
	int ret;

	ret = n < 1 || n > MARK_MAX ? -EINVAL : mark_prepare(n);
	if (ret)
		return fprintf(stderr, "mark N: N 1..%d (%s)\n", MARK_MAX, strerror(-ret)), 2;
	if (!strcmp(argv[1], "start") || !strcmp(argv[1], "end")) {
		mark(!strcmp(argv[1], "end"));
		return 0;
	}
	loops = strtol(argv[1], &end, 10);
	if (*end || loops < 1)
		return fprintf(stderr, "mark N start|end|LOOPS (1 or more)\n"), 2;
	c = loops;
	mark(0);
	asm volatile("1:\n\tdec %0\n\tjnz 1b" : "+r" (c) : : "cc");
	mark(1);
	printf("{\"bench\":\"mark\",\"loops\":%ld,\"user_insns\":%ld%s}\n", loops, 2 * loops,
	       mark_json());
	return 0;
}

static void *buffer(size_t len, int host)
{
	struct p2p_mem m;
	void *p;
	int fd;

	if (host) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	fd = open("/dev/p2pbar0", O_RDWR);
	if (fd < 0 || p2p_mem_get(fd, len, 0, &m))
		return NULL;
	return m.p;	/* fd stays open for the run */
}

/* more of a run's JSON line, ,"name":value..., or nothing */
static char report_extra[96];

static void report_p99(const char *what, const char *dev, size_t size, int qd,
		       const char *path, long ops, double secs, double lat_sum, double cpu,
		       double p99)
{
	printf("{\"bench\":\"%s\",\"dev\":\"%s\",\"size\":%zu,\"qd\":%d,\"path\":\"%s\","
	       "\"ops\":%ld,\"iops\":%.1f,\"mib_s\":%.2f,\"lat_us\":%.1f,\"p99_us\":%.1f,"
	       "\"cpu_us_per_io\":%.2f,\"cpu_s_per_gib\":%.3f%s%s}\n",
	       what, dev, size, qd, path, ops, ops / secs, ops * (double)size / secs / (1 << 20),
	       ops ? lat_sum / ops * 1e6 : 0, p99 * 1e6, ops ? cpu / ops * 1e6 : 0,
	       ops ? cpu / (ops * (double)size / (1 << 30)) : 0, mark_json(), report_extra);
}

static void report(const char *what, const char *dev, size_t size, int qd, const char *path,
		   long ops, double secs, double lat_sum, double cpu)
{
	report_p99(what, dev, size, qd, path, ops, secs, lat_sum, cpu, 0);
}

/* One thread of the engine benchmark: synchronous batches of @qd reads. */
struct worker {
	pthread_t tid;
	int fd, qd, bounce;
	unsigned int seed;
	size_t size;
	unsigned char *buf;	/* qd * size bytes of its own */
	struct p2pnvme_info *info;
	double secs, t0, lat;
	long ops;
	int err;
	uint32_t path;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct p2pnvme_submit sub = { .argsz = sizeof(sub) };
	struct p2pnvme_io ios[P2PNVME_SUBMIT_MAX];
	uint64_t span = w->info->nlb - (w->size >> w->info->lba_shift);
	uint64_t align = (4096 >> w->info->lba_shift) - 1;
	double s, t;
	int i;

	do {
		s = now();
		for (i = 0; i < w->qd; i++) {
			ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[i]), .op = P2PNVME_OP_READ,
						      .len = w->size,
						      .addr = (uintptr_t)(w->buf + i * w->size),
						      .flags = w->bounce ? P2PNVME_IO_F_BOUNCE : 0 };
			ios[i].slba = ((uint64_t)rand_r(&w->seed) % span) & ~align;
		}
		if (w->qd == 1) {
			if (ioctl(w->fd, P2PNVME_IOC_IO, &ios[0])) {
				w->err = errno;
				return NULL;
			}
		} else {
			sub.nr = w->qd;
			sub.failed = 0;
			sub.ios = (uintptr_t)ios;
			if (ioctl(w->fd, P2PNVME_IOC_SUBMIT, &sub)) {
				w->err = errno;
				return NULL;
			}
		}
		t = now();
		/* every read of a batch completes within the batch's time */
		w->lat += (t - s) * w->qd;
		w->ops += w->qd;
	} while (t - w->t0 < w->secs);
	w->path = ios[0].path;
	return NULL;
}

static int engine(int argc, char **argv)
{
	size_t size = strtoul(argv[1], NULL, 0);
	double secs = atof(argv[2]), t0, t1, c0, c1, lat = 0;
	struct p2pnvme_info info = { .argsz = sizeof(info) };
	int bounce = 0, host = 0, qd = 1, threads = 1, fd, i;
	struct worker *w;
	const char *path;
	unsigned char *buf;
	long ops = 0;

	for (i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--bounce"))
			bounce = 1;
		else if (!strcmp(argv[i], "--host"))
			host = 1;
		else if (!strcmp(argv[i], "--qd") && i + 1 < argc)
			qd = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else
			return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
	}
	if (qd < 1 || qd > P2PNVME_SUBMIT_MAX || threads < 1 || threads > 64)
		return fprintf(stderr, "QD 1..%d, threads 1..64\n", P2PNVME_SUBMIT_MAX), 2;
	fd = open(argv[0], O_RDWR);
	if (fd < 0 || ioctl(fd, P2PNVME_IOC_INFO, &info))
		return perror(argv[0]), 1;
	buf = buffer(size * qd * threads, host);
	w = calloc(threads, sizeof(*w));
	if (!buf || !w)
		return perror("buffer"), 1;
	mark(0);
	c0 = cpu_busy();
	t0 = now();
	for (i = 0; i < threads; i++) {
		w[i] = (struct worker){ .fd = fd, .qd = qd, .bounce = bounce, .seed = i + 1,
					.size = size, .buf = buf + (size_t)i * qd * size,
					.info = &info, .secs = secs, .t0 = t0 };
		if (pthread_create(&w[i].tid, NULL, worker_run, &w[i]))
			return perror("pthread_create"), 1;
	}
	for (i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	t1 = now();
	c1 = cpu_busy();
	mark(1);
	for (i = 0; i < threads; i++) {
		if (w[i].err)
			return fprintf(stderr, "thread %d: %s\n", i, strerror(w[i].err)), 1;
		ops += w[i].ops;
		lat += w[i].lat;
	}
	path = w[0].path == P2PNVME_PATH_P2P ? "p2p" :
	       w[0].path == P2PNVME_PATH_BOUNCE ? "bounce" : "host";
	report(threads > 1 ? "engine-threads" : "engine", argv[0], size, qd * threads, path, ops,
	       t1 - t0, lat, c1 - c0);
	return 0;
}

static int blk(int argc, char **argv)
{
	size_t size = strtoul(argv[1], NULL, 0);
	double secs = atof(argv[2]), t0, t1 = 0, c0, c1, lat = 0, *start;
	int qd = atoi(argv[3]), host = argc > 4 && !strcmp(argv[4], "--host");
	struct iocb *cbs, **cbp;
	struct io_event ev[64];
	aio_context_t ctx = 0;
	unsigned char *buf;
	long ops = 0, inflight = 0, i, n;
	off_t devsize;
	int fd;

	if (qd < 1 || qd > 64)
		return fprintf(stderr, "QD 1..64\n"), 2;
	fd = open(argv[0], O_RDONLY | O_DIRECT);
	if (fd < 0)
		return perror(argv[0]), 1;
	devsize = lseek(fd, 0, SEEK_END);
	buf = buffer(size * qd, host);
	cbs = calloc(qd, sizeof(*cbs));
	cbp = calloc(qd, sizeof(*cbp));
	start = calloc(qd, sizeof(*start));
	if (!buf || !cbs || !cbp || !start || syscall(SYS_io_setup, qd, &ctx))
		return perror("setup"), 1;
	srand(1);
	mark(0);
	c0 = cpu_busy();
	t0 = now();
	for (;;) {
		/* keep QD reads in flight until the time is up */
		for (n = 0, i = 0; i < qd && inflight + n < qd && now() - t0 < secs; i++) {
			if (cbs[i].aio_data)
				continue;
			memset(&cbs[i], 0, sizeof(cbs[i]));
			cbs[i].aio_data = i + 1;
			cbs[i].aio_fildes = fd;
			cbs[i].aio_lio_opcode = IOCB_CMD_PREAD;
			cbs[i].aio_buf = (uintptr_t)(buf + i * size);
			cbs[i].aio_nbytes = size;
			cbs[i].aio_offset = ((off_t)rand() % ((devsize - size) / 4096)) * 4096;
			start[i] = now();
			cbp[n++] = &cbs[i];
		}
		if (n && syscall(SYS_io_submit, ctx, n, cbp) != n)
			return perror("io_submit"), 1;
		inflight += n;
		if (!inflight)
			break;
		n = syscall(SYS_io_getevents, ctx, 1, 64, ev, NULL);
		if (n < 0)
			return perror("io_getevents"), 1;
		t1 = now();
		for (i = 0; i < n; i++) {
			struct iocb *cb = (struct iocb *)(uintptr_t)ev[i].obj;

			if (ev[i].res != (long long)size)
				return fprintf(stderr, "read failed: %lld\n", (long long)ev[i].res), 1;
			lat += t1 - start[cb->aio_data - 1];
			cb->aio_data = 0;
			ops++;
			inflight--;
		}
	}
	c1 = cpu_busy();
	mark(1);
	report("nvme-pci", argv[0], size, qd, host ? "host" : "p2p", ops, t1 - t0, lat, c1 - c0);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * What one thread keeps in flight through io_uring (uring(), file_bench()):
 * the ring and its depth, for how long, per slot a read to prepare and its
 * completion to check; and what was measured.
 */
struct uloop {
	struct io_uring *ring;
	int qd;
	double secs;
	/* a read into slot @i of the run's buffer */
	void (*prep)(struct io_uring_sqe *sqe, void *arg, int i);
	/* slot @i's completion: 0, or 1 once it said what was wrong */
	int (*done)(const struct io_uring_cqe *cqe, void *arg, int i);
	void *arg;
	double *start;		/* per slot: when its read was submitted */
	double *lats;		/* each read's latency, @maxlat at most (@nlat) */
	size_t nlat, maxlat;
	double lat;		/* their sum */
	double t0, t1;		/* the start (the caller's), the last completions' time */
	long ops;
};

/*
 * @u->qd reads in flight from @u->t0 on, each slot given a new read as its
 * completion is reaped (many per io_uring_enter()) until @u->secs have
 * passed, then drained: 0, or 1 after saying why not. Inlined into each
 * caller, where prep() and done() are known: the measured loop calls them
 * directly, as when each caller had a loop of its own.
 */
static __always_inline int uring_loop(struct uloop *u)
{
	long inflight;
	int i, ret;

	for (i = 0; i < u->qd; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(u->ring);

		if (!sqe)
			return fprintf(stderr, "ring full\n"), 1;
		u->prep(sqe, u->arg, i);
		u->start[i] = now();
	}
	inflight = io_uring_submit(u->ring);
	while (inflight) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;

		ret = io_uring_wait_cqe(u->ring, &cqe);
		if (ret)
			return fprintf(stderr, "wait: %s\n", strerror(-ret)), 1;
		u->t1 = now();
		io_uring_for_each_cqe(u->ring, head, cqe) {
			int slot = cqe->user_data;
			double l = u->t1 - u->start[slot];

			if (u->done(cqe, u->arg, slot))
				return 1;
			u->lat += l;
			if (u->nlat < u->maxlat)
				u->lats[u->nlat++] = l;
			u->ops++;
			inflight--;
			n++;
			if (u->t1 - u->t0 < u->secs) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(u->ring);

				if (!sqe)
					return fprintf(stderr, "ring full\n"), 1;
				u->prep(sqe, u->arg, slot);
				u->start[slot] = u->t1;
				inflight++;
			}
		}
		io_uring_cq_advance(u->ring, n);
		if (io_uring_sq_ready(u->ring) && io_uring_submit(u->ring) < 0)
			return perror("io_uring_submit"), 1;
	}
	return 0;
}

enum { U_ENGINE, U_BLK, U_NG, U_ENGINE_REG, U_ENGINE_STD, U_DISK };

/* what uring() reads with, and into */
struct uctx {
	int kind, fd, flags;
	uint32_t nsid, buf_id;
	unsigned char *buf;
	size_t size;
	uint64_t blocks;
	uint32_t path;		/* the engine's last completion's */
};

/*
 * One read at a random 4 KiB-aligned offset into slot @i of the buffer
 * (for U_ENGINE_REG: of the registered buffer, at offset i * size).
 */
static void uring_prep(struct io_uring_sqe *sqe, void *arg, int i)
{
	const struct uctx *c = arg;
	int kind = c->kind, fd = c->fd, flags = c->flags;
	uint32_t nsid = c->nsid, buf_id = c->buf_id;
	unsigned char *buf = c->buf;
	size_t size = c->size;
	uint64_t off = ((uint64_t)rand() % c->blocks) * 4096;

	if (kind == U_BLK || kind == U_DISK) {
		io_uring_prep_read(sqe, fd, buf + i * size, size, off);
		sqe->user_data = i;
	} else if (kind == U_NG || kind == U_ENGINE_STD) {
		struct nvme_uring_cmd *cmd = (struct nvme_uring_cmd *)sqe->cmd;

		memset(sqe, 0, 2 * sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = fd;
		sqe->cmd_op = NVME_URING_CMD_IO;
		sqe->user_data = i;
		cmd->opcode = 0x02;	/* Read */
		cmd->nsid = nsid;
		cmd->addr = (uintptr_t)(buf + i * size);
		cmd->data_len = size;
		cmd->cdw10 = (off / 512) & 0xffffffff;
		cmd->cdw11 = (off / 512) >> 32;
		cmd->cdw12 = size / 512 - 1;
	} else {
		struct p2pnvme_uring_cmd io = { .op = P2PNVME_OP_READ, .slba = off / 512,
						.len = size, .flags = flags };

		if (kind == U_ENGINE_REG) {
			io.flags |= P2PNVME_IO_F_REGISTERED;
			io.buf_id = buf_id;
			io.addr = (uint64_t)i * size;
		} else {
			io.addr = (uintptr_t)(buf + i * size);
		}
		p2p_uring_cmd(sqe, fd, P2PNVME_URING_CMD_IO, &io, sizeof(io), i);
	}
}

/* a read's completion: all its bytes (the engine's: its path kept) */
static int uring_done(const struct io_uring_cqe *cqe, void *arg, int i)
{
	struct uctx *c = arg;

	(void)i;
	if (cqe->res < 0 || ((c->kind == U_BLK || c->kind == U_DISK) && cqe->res != (int)c->size))
		return fprintf(stderr, "read failed: %s\n", strerror(-cqe->res)), 1;
	if (c->kind == U_ENGINE || c->kind == U_ENGINE_REG)
		c->path = cqe->big_cqe[0] & 0xffff;
	return 0;
}

/*
 * The counter @name of p2pnvme's disk (/sys/class/p2pnvme/p2pnvmeN/disk/)
 * that holds block device @dev, the disk or one of its partitions; -1 if
 * @dev is not a p2pnvme disk's. The disk's parent device is the
 * controller's class device; a partition's is the disk.
 */
static long long disk_counter(dev_t dev, const char *name)
{
	static const char * const fmt[] = { "/sys/dev/block/%u:%u/device/disk/%s",
					    "/sys/dev/block/%u:%u/../device/disk/%s" };
	long long n = -1;
	char path[128];
	unsigned int i;
	FILE *f;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), fmt[i], major(dev), minor(dev), name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%lld", &n) != 1)
			n = -1;
		fclose(f);
		break;
	}
	return n;
}

/*
 * The bytes p2pnvme's disk behind the block device @fd has moved on the
 * P2P path (its counter bytes_p2p, /sys/class/p2pnvme/p2pnvmeN/disk/), or
 * on the host path with @host; -1 if @fd is not a p2pnvme disk.
 */
static long long disk_bytes(int fd, int host)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISBLK(st.st_mode))
		return -1;
	return disk_counter(st.st_rdev, host ? "bytes_host" : "bytes_p2p");
}

/*
 * The buffer of engine-reg, registered once on @fd: @len bytes of p2pmem
 * exported by p2pbar as a dma-buf (whose fd can go: the registration holds
 * it), or of host memory. Its id, or -errno.
 */
static long register_buffer(int fd, size_t len, int host)
{
	struct p2pbar_export e = { .fd = -1 };
	uint32_t id, flags = 0;
	uint64_t addr = 0;
	int bar = -1, ret;

	if (host) {
		void *p = buffer(len, 1);

		if (!p)
			return -ENOMEM;
		addr = (uintptr_t)p;
	} else {
		bar = open("/dev/p2pbar0", O_RDWR | O_CLOEXEC);
		ret = bar < 0 ? -errno : p2p_bar_export(bar, len, P2PBAR_EXPORT_F_CLOEXEC, &e);
		if (ret) {
			if (bar >= 0)
				close(bar);
			return ret;
		}
		flags = P2PNVME_BUF_F_DMABUF;
	}
	ret = p2p_nvme_register(fd, flags, addr, len, host ? 0 : e.fd, &id);
	if (!host) {
		close(e.fd);
		close(bar);
	}
	return ret ? ret : (long)id;
}

/*
 * p2pbench uring KIND DEV SIZE SECONDS QD: one thread keeps QD reads in
 * flight, refilling as completions are reaped (many per io_uring_enter()).
 */
static int uring(int argc, char **argv)
{
	static const char * const names[] = { "engine-uring", "nvme-pci-uring", "nvme-pci-ng",
					      "engine-uring-reg", "engine-uring-std", "disk-uring" };
	long long bytes0, bytes1;
	int kind = !strcmp(argv[0], "engine") ? U_ENGINE : !strcmp(argv[0], "blk") ? U_BLK :
		   !strcmp(argv[0], "ng") ? U_NG : !strcmp(argv[0], "engine-reg") ? U_ENGINE_REG :
		   !strcmp(argv[0], "engine-std") ? U_ENGINE_STD :
		   !strcmp(argv[0], "disk") ? U_DISK : -1;
	size_t size = strtoul(argv[2], NULL, 0), maxlat = 1 << 22;
	double secs = atof(argv[3]), c0, c1, *start, *lats;
	int qd = atoi(argv[4]), host = 0, flags = 0, iopoll = 0, defer = 0, fd, i;
	unsigned int setup = IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
	char name[32];
	long buf_id = 0;
	uint32_t nsid = 1;
	struct io_uring ring;
	struct uctx c;
	struct uloop u;
	unsigned char *buf = NULL;
	uint64_t blocks;
	off_t devsize;

	for (i = 5; i < argc; i++) {
		if (!strcmp(argv[i], "--host"))
			host = 1;
		else if (!strcmp(argv[i], "--bounce"))
			flags |= P2PNVME_IO_F_BOUNCE;
		else if (!strcmp(argv[i], "--iopoll"))
			iopoll = 1;
		else if (!strcmp(argv[i], "--defer"))
			defer = 1;
		else
			return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
	}
	if (kind < 0 || qd < 1 || qd > 256)
		return fprintf(stderr, "uring engine|engine-reg|engine-std|blk|ng|disk DEV SIZE SECONDS QD (1..256)\n"),
		       2;
	if (kind == U_ENGINE_REG && (flags & P2PNVME_IO_F_BOUNCE))
		return fprintf(stderr, "engine-reg: registered buffers are never bounced\n"), 2;
	fd = open(argv[1], kind == U_BLK || kind == U_DISK ? O_RDONLY | O_DIRECT : O_RDWR);
	if (fd < 0)
		return perror(argv[1]), 1;
	if (kind == U_ENGINE || kind == U_ENGINE_REG || kind == U_ENGINE_STD) {
		struct p2pnvme_info info = { .argsz = sizeof(info) };

		if (ioctl(fd, P2PNVME_IOC_INFO, &info))
			return perror("P2PNVME_IOC_INFO"), 1;
		devsize = (off_t)info.nlb << info.lba_shift;
		/* engine-std: the kernel's NVMe command, as fio sends it */
		if (kind == U_ENGINE_STD && (int)(nsid = ioctl(fd, NVME_IOCTL_ID)) <= 0)
			return perror("NVME_IOCTL_ID"), 1;
	} else if (kind == U_NG) {
		const char *tail = strstr(argv[1], "/ng");
		int id = ioctl(fd, NVME_IOCTL_ID), bfd;
		char blkdev[64];

		if (id <= 0 || !tail)
			return perror("NVME_IOCTL_ID"), 1;
		nsid = id;
		/* the block device of the same namespace (ngXnY: nvmeXnY) says how big */
		snprintf(blkdev, sizeof(blkdev), "/dev/nvme%s", tail + 3);
		bfd = open(blkdev, O_RDONLY);
		devsize = bfd < 0 ? 0 : lseek(bfd, 0, SEEK_END);
		if (bfd >= 0)
			close(bfd);
		if (devsize <= (off_t)size)
			return fprintf(stderr, "%s: no size\n", blkdev), 1;
	} else {
		devsize = lseek(fd, 0, SEEK_END);
		setup = 0;
	}
	blocks = (devsize - size) / 4096;
	if (kind == U_ENGINE_REG) {
		/* a dma-buf is a whole number of pages */
		buf_id = register_buffer(fd, (size * qd + 4095) & ~(size_t)4095, host);
		if (buf_id < 0)
			return fprintf(stderr, "register: %s\n", strerror(-buf_id)), 1;
	} else {
		buf = buffer(size * qd, host);
	}
	/* completions reaped by polling: p2pnvme's queues, nvme-pci's poll queues */
	if (iopoll)
		setup |= IORING_SETUP_IOPOLL;
	if (defer)
		setup |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			 IORING_SETUP_COOP_TASKRUN;
	start = calloc(qd, sizeof(*start));
	lats = calloc(maxlat, sizeof(*lats));
	if ((!buf && kind != U_ENGINE_REG) || !start || !lats ||
	    io_uring_queue_init(qd, &ring, setup))
		return perror("setup"), 1;
	/* fault the latency array in now: its page faults are not the I/O's CPU */
	memset(lats, 0, maxlat * sizeof(*lats));
	bytes0 = kind == U_DISK ? disk_bytes(fd, host) : 0;
	if (bytes0 < 0)
		return fprintf(stderr, "%s: not a p2pnvme disk (p2pnvme disk=1)\n", argv[1]), 1;
	c = (struct uctx){ .kind = kind, .fd = fd, .flags = flags, .nsid = nsid, .buf_id = buf_id,
			   .buf = buf, .size = size, .blocks = blocks };
	u = (struct uloop){ .ring = &ring, .qd = qd, .secs = secs, .prep = uring_prep,
			    .done = uring_done, .arg = &c, .start = start, .lats = lats,
			    .maxlat = maxlat };
	srand(1);
	mark(0);
	c0 = cpu_busy();
	u.t0 = u.t1 = now();
	if (uring_loop(&u))
		return 1;
	c1 = cpu_busy();	/* before the sort: its CPU is not the I/O's */
	mark(1);
	/* the disk's reads all went through p2pnvme's disk, on the path meant */
	bytes1 = kind == U_DISK ? disk_bytes(fd, host) : 0;
	if (bytes1 - bytes0 != (long long)(kind == U_DISK ? u.ops * size : 0))
		return fprintf(stderr, "%s: the disk counted %lld bytes %s for %ld reads of %zu\n",
			       argv[1], bytes1 - bytes0, host ? "host" : "p2p", u.ops, size), 1;
	qsort(lats, u.nlat, sizeof(*lats), cmp_double);
	snprintf(name, sizeof(name), "%s%s%s", names[kind], iopoll ? "-iopoll" : "",
		 defer ? "-defer" : "");
	report_p99(name, argv[1], size, qd,
		   host ? "host" : kind == U_BLK || kind == U_NG || kind == U_DISK ? "p2p" :
		   c.path == P2PNVME_PATH_P2P ? "p2p" : c.path == P2PNVME_PATH_BOUNCE ? "bounce" :
		   c.path == P2PNVME_PATH_DMABUF ? "dmabuf" : "host",
		   u.ops, u.t1 - u.t0, u.lat, c1 - c0, u.nlat ? lats[u.nlat * 99 / 100] : 0);
	return 0;
}

/* ---- p2pbench file: one file, read every way ------------------------------ */

enum { F_CMD, F_CMD_IOCTL, F_ODIRECT, F_BOUNCE, F_EXTENT_DISK, F_EXTENT_ENGINE, F_CMD_SHADOW };

/* p2pnvme's bench-only switch: file reads into p2pbar dma-bufs through placeholders */
#define FILE_FORCE_PARAM	"/sys/module/p2pnvme/parameters/file_placeholder_force"

/* file_placeholder_force as it is: 1 (Y), 0 (N), or -1 (no such parameter) */
static int file_force(void)
{
	FILE *f = fopen(FILE_FORCE_PARAM, "r");
	int c;

	if (!f)
		return -1;
	c = fgetc(f);
	fclose(f);
	return c == 'Y' || c == '1' ? 1 : c == 'N' || c == '0' ? 0 : -1;
}

/*
 * The reads through placeholders the controller of char device @nfd has
 * ended without error (its stats/file_placeholder_reads), or -1.
 */
static long long placeholder_reads(int nfd)
{
	struct stat st;
	char path[128];
	long long n = -1;
	FILE *f;

	if (fstat(nfd, &st) || !S_ISCHR(st.st_mode))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/stats/file_placeholder_reads",
		 major(st.st_rdev), minor(st.st_rdev));
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/* a SIZE-aligned piece of the file that lies whole in one written extent */
struct fslot {
	uint64_t off;	/* in the file */
	uint64_t phys;	/* on its block device (FIEMAP's fe_physical) */
};

struct fext {
	uint64_t l, p, n;
};

/* what file_extents() gathers, extent by extent (file_extent_add()) */
struct fext_walk {
	struct fext *e;
	long n, max;
};

static int file_extent_add(const struct fiemap_extent *f, void *arg)
{
	const uint32_t bad = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
			     FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED |
			     FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_DATA_INLINE |
			     FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_UNWRITTEN;
	struct fext_walk *w = arg;
	struct fext *t;

	if (f->fe_flags & bad)
		return 0;
	if (w->n && w->e[w->n - 1].l + w->e[w->n - 1].n == f->fe_logical &&
	    w->e[w->n - 1].p + w->e[w->n - 1].n == f->fe_physical) {
		w->e[w->n - 1].n += f->fe_length;
		return 0;
	}
	if (w->n == w->max) {
		w->max = w->max ? 2 * w->max : 64;
		t = realloc(w->e, w->max * sizeof(*t));
		if (!t)
			return -ENOMEM;
		w->e = t;
	}
	w->e[w->n++] = (struct fext){ f->fe_logical, f->fe_physical, f->fe_length };
	return 0;
}

/*
 * The written extents of @fd below @fsize (FIEMAP, synced first), adjacent
 * ones merged, in *@out: how many, or -errno. Extents that are not plain
 * data on the device (unwritten, delayed, inline, encoded...) are left out.
 */
static long file_extents(int fd, uint64_t fsize, struct fext **out)
{
	struct fext_walk w = { 0 };
	int ret = p2p_fiemap_walk(fd, 0, fsize, FIEMAP_FLAG_SYNC, file_extent_add, &w);

	if (ret || !w.n) {
		free(w.e);
		return ret;
	}
	*out = w.e;
	return w.n;
}

/*
 * The @size-aligned pieces of @fd below @fsize that lie whole in one of its
 * written extents, in *@out: how many (0: none), or -errno.
 */
static long file_slots(int fd, uint64_t fsize, size_t size, struct fslot **out)
{
	struct fext *e = NULL;
	struct fslot *s;
	long ne = file_extents(fd, fsize, &e), n = 0, j;
	uint64_t k;

	if (ne <= 0)
		return ne;
	s = calloc(fsize / size + 1, sizeof(*s));
	if (!s) {
		free(e);
		return -ENOMEM;
	}
	for (j = 0; j < ne; j++)
		for (k = (e[j].l + size - 1) / size;
		     (k + 1) * size <= e[j].l + e[j].n && (k + 1) * size <= fsize; k++)
			s[n++] = (struct fslot){ k * size, e[j].p + (k * size - e[j].l) };
	free(e);
	*out = s;
	return n;
}

/* the sectors block device @dev has read (its stat), or -1 */
static long long blk_sectors_read(dev_t dev)
{
	unsigned long long v[3];
	char path[64];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat", major(dev), minor(dev));
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]);
	fclose(f);
	return n == 3 ? (long long)v[2] : -1;
}

/* 1 if block device @dev is a disk of the controller whose char device is @nfd */
static int same_controller(dev_t dev, int nfd)
{
	char a[128], b[128], *ra, *rb;
	struct stat st;
	int same;

	if (fstat(nfd, &st) || !S_ISCHR(st.st_mode))
		return 0;
	snprintf(a, sizeof(a), "/sys/dev/block/%u:%u/device", major(dev), minor(dev));
	ra = realpath(a, NULL);
	if (!ra) {
		snprintf(a, sizeof(a), "/sys/dev/block/%u:%u/../device", major(dev), minor(dev));
		ra = realpath(a, NULL);
	}
	snprintf(b, sizeof(b), "/sys/dev/char/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	rb = realpath(b, NULL);
	same = ra && rb && !strcmp(ra, rb);
	free(ra);
	free(rb);
	return same;
}

/* what a file run reads with, and into */
struct fctx {
	int kind;
	int ffd;		/* the file */
	int nfd;		/* /dev/p2pnvmeN: cmd, cmd-ioctl, extent-engine */
	int bfd;		/* the file's block device: extent-disk */
	size_t size;
	const struct fslot *slots;
	long nslots;
	long *cur;		/* per slot of the buffer: the piece its last read read */
	unsigned char *dst;	/* the destination as the CPU sees it (p2pmem) */
	unsigned char *host;	/* bounce: the host memory read into first */
	uint32_t buf_id;	/* the registered dma-buf of dst */
	uint32_t lba_shift;
};

/* one read of a random piece of the file into slot @i of the destination */
static void file_prep(struct io_uring_sqe *sqe, void *arg, int i)
{
	const struct fctx *x = arg;
	long k = rand() % x->nslots;
	const struct fslot *s = &x->slots[k];
	uint64_t at = (uint64_t)i * x->size;

	x->cur[i] = k;
	if (x->kind == F_CMD || x->kind == F_CMD_SHADOW) {
		struct p2pnvme_uring_file_cmd c = { .op = P2PNVME_OP_READ,
						    .flags = P2PNVME_FILE_F_REGISTERED,
						    .fd = x->ffd, .buf_id = x->buf_id,
						    .offset = s->off, .len = x->size, .addr = at };

		p2p_uring_cmd(sqe, x->nfd, P2PNVME_URING_CMD_FILE_IO, &c, sizeof(c), i);
	} else if (x->kind == F_EXTENT_ENGINE) {
		struct p2pnvme_uring_cmd c = { .op = P2PNVME_OP_READ,
					       .flags = P2PNVME_IO_F_REGISTERED,
					       .slba = s->phys >> x->lba_shift, .len = x->size,
					       .addr = at, .buf_id = x->buf_id };

		p2p_uring_cmd(sqe, x->nfd, P2PNVME_URING_CMD_IO, &c, sizeof(c), i);
	} else {
		if (x->kind == F_BOUNCE)
			io_uring_prep_read(sqe, x->ffd, x->host + at, x->size, s->off);
		else if (x->kind == F_EXTENT_DISK)
			io_uring_prep_read(sqe, x->bfd, x->dst + at, x->size, s->phys);
		else
			io_uring_prep_read(sqe, x->ffd, x->dst + at, x->size, s->off);
		sqe->user_data = i;
	}
}

/* a read's completion: all its bytes on the path meant; a bounce's copy into the BAR */
static int file_done(const struct io_uring_cqe *cqe, void *arg, int slot)
{
	const struct fctx *x = arg;
	size_t size = x->size;
	int kind = x->kind;

	/* the engine's read answers 0, the others the bytes */
	if (cqe->res != (kind == F_EXTENT_ENGINE ? 0 : (int)size))
		return fprintf(stderr, "read failed: %d (%s)\n", cqe->res,
			       cqe->res < 0 ? strerror(-cqe->res) : "short"), 1;
	if ((kind == F_CMD || kind == F_CMD_SHADOW || kind == F_EXTENT_ENGINE) &&
	    (cqe->big_cqe[0] & 0xffff) != P2PNVME_PATH_DMABUF)
		return fprintf(stderr, "read on path %u, not dmabuf\n",
			       (unsigned int)(cqe->big_cqe[0] & 0xffff)), 1;
	/* what a program does without P2P: the copy into the BAR */
	if (kind == F_BOUNCE)
		memcpy(x->dst + (size_t)slot * size, x->host + (size_t)slot * size, size);
	return 0;
}

/*
 * p2pbench file KIND FILE SIZE SECONDS QD [--nvme NVME] [--dev BLKDEV]
 * [--verify SRC]: random SIZE reads of one file, QD in flight, one thread.
 */
static int file_bench(int argc, char **argv)
{
	static const char * const kinds[] = { "cmd", "cmd-ioctl", "odirect", "bounce",
					      "extent-disk", "extent-engine", "cmd-placeholders" };
	const char *nvme = "/dev/p2pnvme0", *dev = NULL, *verify = NULL, *name, *path;
	size_t size = strtoul(argv[2], NULL, 0), nlat = 0, maxlat = 1 << 22, blen;
	double secs = atof(argv[3]), t0, t1, c0, c1, lat = 0, *start, *lats;
	int qd = atoi(argv[4]), kind = -1, ondisk, reg, cmd, forced, uring, ret, i;
	long long ctr0 = 0, ctr1 = 0, sec0, sec1, ph0 = 0, ph1;
	struct fctx x = { .nfd = -1, .bfd = -1 };
	long ops = 0, verified = 0;
	unsigned int setup = 0;
	struct io_uring ring;
	struct fslot *slots;
	struct stat st;

	for (i = 0; i < (int)(sizeof(kinds) / sizeof(kinds[0])); i++)
		if (!strcmp(argv[0], kinds[i]))
			kind = i;
	for (i = 5; i < argc; i++) {
		if (!strcmp(argv[i], "--nvme") && i + 1 < argc)
			nvme = argv[++i];
		else if (!strcmp(argv[i], "--dev") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "--verify") && i + 1 < argc)
			verify = argv[++i];
		else
			return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
	}
	if (kind < 0 || qd < 1 || qd > P2PNVME_SUBMIT_MAX || !size || size % 4096 ||
	    size > P2PNVME_FILE_MAX_LEN || (kind == F_EXTENT_DISK && !dev))
		return fprintf(stderr, "file cmd|cmd-ioctl|cmd-placeholders|odirect|bounce|extent-disk|"
			       "extent-engine FILE SIZE SECONDS QD\n     SIZE a multiple of 4096 up to %u, "
			       "QD 1..%d; extent-disk: --dev BLKDEV\n",
			       P2PNVME_FILE_MAX_LEN, P2PNVME_SUBMIT_MAX), 2;
	x.kind = kind;
	x.size = size;
	cmd = kind == F_CMD || kind == F_CMD_IOCTL || kind == F_CMD_SHADOW;
	reg = cmd || kind == F_EXTENT_ENGINE;
	forced = kind == F_CMD_SHADOW;
	uring = kind != F_CMD_IOCTL;
	x.ffd = open(argv[1], O_RDONLY | O_CLOEXEC |
		     (kind == F_ODIRECT || kind == F_BOUNCE ? O_DIRECT : 0));
	if (x.ffd < 0 || fstat(x.ffd, &st))
		return perror(argv[1]), 1;
	if (!S_ISREG(st.st_mode))
		return fprintf(stderr, "%s: not a regular file\n", argv[1]), 1;
	/* the same pieces for every kind: those in one written extent */
	x.nslots = file_slots(x.ffd, st.st_size, size, &slots);
	if (x.nslots <= 0)
		return fprintf(stderr, "%s: %s\n", argv[1], x.nslots ? strerror(-x.nslots) :
			       "no piece of SIZE lies in one written extent"), 1;
	x.slots = slots;
	ondisk = disk_counter(st.st_dev, "bytes_p2p") >= 0;
	if (!ondisk && kind != F_ODIRECT && kind != F_BOUNCE)
		return fprintf(stderr, "%s: not on a p2pnvme disk (p2pnvme disk=1)\n", argv[1]), 1;
	if (reg) {
		x.nfd = open(nvme, O_RDWR | O_CLOEXEC);
		if (x.nfd < 0)
			return perror(nvme), 1;
		if (!same_controller(st.st_dev, x.nfd))
			return fprintf(stderr, "%s: %s is not on its disk\n", nvme, argv[1]), 1;
	}
	/*
	 * The file command into a p2pbar dma-buf: through its pages, or with
	 * cmd-placeholders through placeholders (file_placeholder_force, set
	 * by the caller: qemu/tests/filebench.guest.sh); each run checks the
	 * switch is as its row wants and, after, that the reads went that way.
	 */
	if (cmd) {
		int force = file_force();

		if (force != forced)
			return fprintf(stderr, "%s is %d: %s wants it %d\n", FILE_FORCE_PARAM, force,
				       kinds[kind], forced), 1;
		ph0 = placeholder_reads(x.nfd);
		if (ph0 < 0)
			return fprintf(stderr, "%s: no stats/file_placeholder_reads\n", nvme), 1;
	}
	if (kind == F_EXTENT_ENGINE) {
		struct p2pnvme_info info;

		if (p2p_nvme_info(x.nfd, &info))
			return perror("P2PNVME_IOC_INFO"), 1;
		x.lba_shift = info.lba_shift;
		for (i = 0; i < x.nslots; i++)
			if (slots[i].phys & ((1ULL << x.lba_shift) - 1))
				return fprintf(stderr, "%s: an extent not on an LBA\n", argv[1]), 1;
	}
	if (kind == F_EXTENT_DISK) {
		struct stat bs;

		x.bfd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (x.bfd < 0 || fstat(x.bfd, &bs))
			return perror(dev), 1;
		if (!S_ISBLK(bs.st_mode) || bs.st_rdev != st.st_dev)
			return fprintf(stderr, "%s: not the block device of %s\n", dev, argv[1]), 1;
	}
	/* the destination, p2pmem: a registered p2pbar dma-buf, or a mapping */
	blen = (size * qd + 4095) & ~(size_t)4095;
	if (reg) {
		struct p2pbar_export e;
		struct p2pbar_info bi;
		int bar = p2p_bar_open("/dev/p2pbar0", &bi);

		ret = bar < 0 ? bar : p2p_bar_export(bar, blen, P2PBAR_EXPORT_F_CLOEXEC, &e);
		if (ret)
			return fprintf(stderr, "P2PBAR_IOC_EXPORT: %s\n", strerror(-ret)), 1;
		x.dst = mmap(NULL, blen, PROT_READ | PROT_WRITE, MAP_SHARED, e.fd, 0);
		if (x.dst == MAP_FAILED)
			return perror("mmap of the dma-buf"), 1;
		ret = p2p_nvme_register(x.nfd, P2PNVME_BUF_F_DMABUF, 0, blen, e.fd, &x.buf_id);
		if (ret)
			return fprintf(stderr, "register: %s\n", strerror(-ret)), 1;
	} else {
		x.dst = buffer(blen, 0);
		if (!x.dst)
			return perror("p2pmem"), 1;
	}
	if (kind == F_BOUNCE) {
		x.host = buffer(blen, 1);
		if (!x.host)
			return perror("host memory"), 1;
		/* faulted in now: a program copies into buffers it has */
		memset(x.host, 0, blen);
		memset(x.dst, 0, blen);
	}
	x.cur = calloc(qd, sizeof(*x.cur));
	start = calloc(qd, sizeof(*start));
	lats = calloc(maxlat, sizeof(*lats));
	if (!x.cur || !start || !lats)
		return perror("setup"), 1;
	for (i = 0; i < qd; i++)
		x.cur[i] = -1;
	if (kind == F_CMD || kind == F_CMD_SHADOW || kind == F_EXTENT_ENGINE)
		setup = IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
	if (uring && io_uring_queue_init(qd, &ring, setup))
		return perror("io_uring_queue_init"), 1;
	/* fault the latency array in now: its page faults are not the I/O's CPU */
	memset(lats, 0, maxlat * sizeof(*lats));
	if (ondisk)
		ctr0 = disk_counter(st.st_dev, kind == F_BOUNCE ? "bytes_host" : "bytes_p2p");
	sec0 = blk_sectors_read(st.st_dev);
	srand(1);
	mark(0);
	c0 = cpu_busy();
	t0 = t1 = now();
	if (!uring) {
		/* P2PNVME_IOC_FILE_SUBMIT: batches of QD, one after another */
		struct p2pnvme_file_io *ios = calloc(qd, sizeof(*ios));
		uint32_t failed;
		double s;

		if (!ios)
			return perror("calloc"), 1;
		do {
			s = now();
			for (i = 0; i < qd; i++) {
				long k = rand() % x.nslots;

				x.cur[i] = k;
				ios[i] = (struct p2pnvme_file_io){
					.op = P2PNVME_OP_READ, .flags = P2PNVME_FILE_F_REGISTERED,
					.fd = x.ffd, .offset = slots[k].off, .len = size,
					.addr = (uint64_t)i * size, .buf_id = x.buf_id };
			}
			ret = p2p_nvme_file_submit(x.nfd, ios, qd, &failed);
			if (ret)
				return fprintf(stderr, "P2PNVME_IOC_FILE_SUBMIT: %s (failed %u of %d)\n",
					       strerror(-ret), failed, qd), 1;
			t1 = now();
			for (i = 0; i < qd; i++)
				if (ios[i].status || ios[i].bytes != size ||
				    ios[i].path != P2PNVME_PATH_DMABUF)
					return fprintf(stderr, "entry %d: status %d, %llu bytes, path %u\n",
						       i, ios[i].status,
						       (unsigned long long)ios[i].bytes, ios[i].path), 1;
			/* every read of a batch completes within the batch's time */
			lat += (t1 - s) * qd;
			if (nlat < maxlat)
				lats[nlat++] = t1 - s;
			ops += qd;
		} while (t1 - t0 < secs);
		free(ios);
	} else {
		struct uloop u = { .ring = &ring, .qd = qd, .secs = secs, .prep = file_prep,
				   .done = file_done, .arg = &x, .start = start, .lats = lats,
				   .maxlat = maxlat, .t0 = t0, .t1 = t1 };

		if (uring_loop(&u))
			return 1;
		t1 = u.t1;
		lat = u.lat;
		nlat = u.nlat;
		ops = u.ops;
	}
	c1 = cpu_busy();	/* before the checks and the sort: their CPU is not the I/O's */
	mark(1);
	/*
	 * Where the reads went: through p2pnvme's disk by every byte (P2P, or
	 * host memory for a bounce), or around it for the engine's LBA
	 * reads; on another block device, at least every byte read from it.
	 */
	if (ondisk) {
		long long want = kind == F_EXTENT_ENGINE ? 0 : ops * (long long)size;

		ctr1 = disk_counter(st.st_dev, kind == F_BOUNCE ? "bytes_host" : "bytes_p2p");
		if (ctr1 - ctr0 != want)
			return fprintf(stderr, "%s: p2pnvme's disk counted %lld bytes %s for %ld reads of %zu\n",
				       argv[1], ctr1 - ctr0, kind == F_BOUNCE ? "host" : "p2p", ops,
				       size), 1;
	} else {
		sec1 = blk_sectors_read(st.st_dev);
		if (sec0 < 0 || sec1 - sec0 < ops * (long long)(size / 512))
			return fprintf(stderr, "%s: its block device read %lld sectors for %ld reads of %zu\n",
				       argv[1], sec0 < 0 ? -1 : sec1 - sec0, ops, size), 1;
	}
	/* through placeholders every read (cmd-placeholders), or none */
	if (cmd) {
		long long want = forced ? ops : 0;

		ph1 = placeholder_reads(x.nfd);
		if (ph1 - ph0 != want || file_force() != forced)
			return fprintf(stderr, "%s: %lld of %ld reads through placeholders, %lld wanted; %s %d\n",
				       nvme, ph1 < 0 ? -1 : ph1 - ph0, ops, want, FILE_FORCE_PARAM,
				       file_force()), 1;
	}
	/* each slot's last read holds the file's bytes at its offset (SRC's) */
	if (verify) {
		unsigned char *want = malloc(size);
		int sfd = open(verify, O_RDONLY | O_CLOEXEC);

		if (!want || sfd < 0)
			return perror(verify), 1;
		for (i = 0; i < qd; i++) {
			uint64_t off;

			if (x.cur[i] < 0)
				continue;
			off = slots[x.cur[i]].off;
			if (pread(sfd, want, size, off) != (ssize_t)size)
				return fprintf(stderr, "%s: no %zu bytes at %llu\n", verify, size,
					       (unsigned long long)off), 1;
			if (memcmp(x.dst + (size_t)i * size, want, size))
				return fprintf(stderr, "slot %d: %zu bytes of %s at %llu are not %s's\n",
					       i, size, argv[1], (unsigned long long)off, verify), 1;
			verified++;
		}
		close(sfd);
		free(want);
		if (!verified)
			return fprintf(stderr, "nothing read to verify\n"), 1;
	}
	qsort(lats, nlat, sizeof(*lats), cmp_double);
	name = kind == F_CMD ? "file-cmd" : kind == F_CMD_IOCTL ? "file-cmd-ioctl" :
	       kind == F_CMD_SHADOW ? "file-cmd-placeholders" :
	       kind == F_EXTENT_DISK ? "extent-disk" : kind == F_EXTENT_ENGINE ? "extent-engine" :
	       kind == F_BOUNCE ? (ondisk ? "file-bounce-disk" : "file-bounce-nvme-pci") :
	       ondisk ? "file-disk" : "file-nvme-pci";
	path = reg ? "dmabuf" : kind == F_BOUNCE ? "bounce" : "p2p";
	snprintf(report_extra, sizeof(report_extra), ",\"slots\":%ld,\"verified\":%ld", x.nslots,
		 verified);
	report_p99(name, argv[1], size, qd, path, ops, t1 - t0, lat, c1 - c0,
		   nlat ? lats[nlat * 99 / 100] : 0);
	return 0;
}

/* Register and unregister @r on @fd @n times: seconds per cycle, or -1. */
static double reg_cycles(int fd, struct p2pnvme_buf_reg *r, long n)
{
	struct p2pnvme_buf_unreg u = { .argsz = sizeof(u) };
	double t0 = now();
	long i;

	for (i = 0; i < n; i++) {
		r->id = 0;
		if (ioctl(fd, P2PNVME_IOC_BUF_REGISTER, r))
			return perror("register"), -1;
		u.id = r->id;
		if (ioctl(fd, P2PNVME_IOC_BUF_UNREGISTER, &u))
			return perror("unregister"), -1;
	}
	return (now() - t0) / n;
}

static int regcost(char **argv)
{
	size_t size = strtoul(argv[1], NULL, 0);
	long n = atol(argv[2]), pages = size / 4096;
	struct p2pnvme_buf_reg host = { .argsz = sizeof(host), .len = size };
	struct p2pnvme_buf_reg dbuf = { .argsz = sizeof(dbuf), .len = size,
					.flags = P2PNVME_BUF_F_DMABUF };
	struct p2pbar_export e;
	double th, tp;
	int fd, bar;
	void *p;

	if (!pages || size % 4096 || n < 1)
		return fprintf(stderr, "regcost NVME SIZE N: SIZE a multiple of 4096, N >= 1\n"), 2;
	fd = open(argv[0], O_RDWR);
	bar = open("/dev/p2pbar0", O_RDWR);
	if (fd < 0 || bar < 0)
		return perror("open"), 1;
	p = buffer(size, 1);
	if (!p)
		return perror("mmap"), 1;
	memset(p, 0x5a, size);	/* faulted in: the cost measured is the pin and map */
	if (p2p_bar_export(bar, size, 0, &e))
		return perror("P2PBAR_IOC_EXPORT"), 1;
	host.addr = (uintptr_t)p;
	dbuf.dmabuf_fd = e.fd;
	/* one of each first: TCG translates the code paths on first use */
	if (reg_cycles(fd, &host, 1) < 0 || reg_cycles(fd, &dbuf, 1) < 0)
		return 1;
	th = reg_cycles(fd, &host, n);
	tp = reg_cycles(fd, &dbuf, n);
	if (th <= 0 || tp <= 0)
		return 1;
	printf("{\"bench\":\"regcost\",\"size\":%zu,\"n\":%ld,\"host_us_per_page\":%.3f,"
	       "\"p2pmem_us_per_page\":%.3f,\"ratio\":%.3f}\n", size, n, th * 1e6 / pages,
	       tp * 1e6 / pages, tp / th);
	return 0;
}

/* @n pairs of a 4 KiB P2PBAR_IOC_ALLOC and its _FREE: seconds per pair, or -1 */
static double alloc_pairs(int bar, long n)
{
	struct p2pbar_alloc a = { .argsz = sizeof(a), .size = 4096 };
	struct p2pbar_free f = { .argsz = sizeof(f) };
	double t0 = now();
	long i;

	for (i = 0; i < n; i++) {
		a.handle = 0;
		a.mmap_offset = 0;
		a.bus_addr = 0;
		if (ioctl(bar, P2PBAR_IOC_ALLOC, &a))
			return perror("P2PBAR_IOC_ALLOC"), -1;
		f.handle = a.handle;
		if (ioctl(bar, P2PBAR_IOC_FREE, &f))
			return perror("P2PBAR_IOC_FREE"), -1;
	}
	return (now() - t0) / n;
}

static int allocflat(char **argv)
{
	static const long lives[] = { 0, 1000, 10000 };
	struct p2pbar_alloc a = { .argsz = sizeof(a), .size = 4096 };
	long n = atol(argv[1]), held = 0;
	double t[3], worst = 0;
	unsigned int k;
	int bar;

	if (n < 1)
		return fprintf(stderr, "allocflat BAR N: N >= 1\n"), 2;
	bar = open(argv[0], O_RDWR);
	if (bar < 0)
		return perror(argv[0]), 1;
	if (alloc_pairs(bar, n) < 0)	/* warm up */
		return 1;
	for (k = 0; k < 3; k++) {
		for (; held < lives[k]; held++) {
			a.handle = 0;
			a.mmap_offset = 0;
			a.bus_addr = 0;
			if (ioctl(bar, P2PBAR_IOC_ALLOC, &a))
				return perror("P2PBAR_IOC_ALLOC (live)"), 1;
		}
		t[k] = alloc_pairs(bar, n);
		if (t[k] < 0)
			return 1;
		if (t[k] > worst)
			worst = t[k];
	}
	printf("{\"bench\":\"allocflat\",\"n\":%ld,\"us_per_pair_0\":%.2f,\"us_per_pair_1000\":%.2f,"
	       "\"us_per_pair_10000\":%.2f,\"ratio\":%.3f}\n", n, t[0] * 1e6, t[1] * 1e6,
	       t[2] * 1e6, worst / t[0]);
	close(bar);	/* frees the live ones */
	return 0;
}

int main(int argc, char **argv)
{
	const char *window = getenv("P2PBENCH_MARK");
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "mark"))
		return mark_cmd(argv + 2);
	if (window && *window) {
		ret = mark_prepare(strtol(window, NULL, 10) > MARK_MAX ? -1 : atoi(window));
		if (ret)
			return fprintf(stderr, "P2PBENCH_MARK=%s: %s (1..%d)\n", window,
				       strerror(-ret), MARK_MAX), 2;
	}
	if (argc >= 7 && !strcmp(argv[1], "uring"))
		return uring(argc - 2, argv + 2);
	if (argc >= 5 && !strcmp(argv[1], "engine"))
		return engine(argc - 2, argv + 2);
	if (argc >= 6 && !strcmp(argv[1], "blk"))
		return blk(argc - 2, argv + 2);
	if (argc >= 7 && !strcmp(argv[1], "file"))
		return file_bench(argc - 2, argv + 2);
	if (argc == 5 && !strcmp(argv[1], "regcost"))
		return regcost(argv + 2);
	if (argc == 4 && !strcmp(argv[1], "allocflat"))
		return allocflat(argv + 2);
	fprintf(stderr, "usage: p2pbench engine NVME SIZE SECONDS [--qd N] [--threads T] [--bounce|--host]\n"
		"       p2pbench blk BLKDEV SIZE SECONDS QD [--host]\n"
		"       p2pbench uring engine|blk|ng|disk DEV SIZE SECONDS QD [--bounce|--host]\n"
		"       p2pbench uring engine-reg NVME SIZE SECONDS QD [--host]\n"
		"       p2pbench file cmd|cmd-ioctl|odirect|bounce|extent-disk|extent-engine FILE SIZE SECONDS QD\n"
		"                [--nvme NVME] [--dev BLKDEV] [--verify SRC]\n"
		"       p2pbench regcost NVME SIZE N\n"
		"       p2pbench allocflat BAR N\n"
		"       p2pbench mark N start|end|LOOPS\n");
	return 2;
}
