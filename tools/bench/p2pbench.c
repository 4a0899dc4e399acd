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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

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

static void *buffer(size_t len, int host)
{
	struct p2pbar_alloc a = { .argsz = sizeof(a), .size = len };
	void *p;
	int fd;

	if (host) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	fd = open("/dev/p2pbar0", O_RDWR);
	if (fd < 0 || ioctl(fd, P2PBAR_IOC_ALLOC, &a))
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.mmap_offset);
	return p == MAP_FAILED ? NULL : p;	/* fd stays open for the run */
}

static void report(const char *what, const char *dev, size_t size, int qd, const char *path,
		   long ops, double secs, double lat_sum, double cpu)
{
	printf("{\"bench\":\"%s\",\"dev\":\"%s\",\"size\":%zu,\"qd\":%d,\"path\":\"%s\","
	       "\"ops\":%ld,\"iops\":%.1f,\"mib_s\":%.2f,\"lat_us\":%.1f,"
	       "\"cpu_us_per_io\":%.1f,\"cpu_s_per_gib\":%.3f}\n",
	       what, dev, size, qd, path, ops, ops / secs, ops * (double)size / secs / (1 << 20),
	       ops ? lat_sum / ops * 1e6 : 0, ops ? cpu / ops * 1e6 : 0,
	       ops ? cpu / (ops * (double)size / (1 << 30)) : 0);
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
	double secs = atof(argv[2]), t0, t1, c0, lat = 0;
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
	for (i = 0; i < threads; i++) {
		if (w[i].err)
			return fprintf(stderr, "thread %d: %s\n", i, strerror(w[i].err)), 1;
		ops += w[i].ops;
		lat += w[i].lat;
	}
	path = w[0].path == P2PNVME_PATH_P2P ? "p2p" :
	       w[0].path == P2PNVME_PATH_BOUNCE ? "bounce" : "host";
	report(threads > 1 ? "engine-threads" : "engine", argv[0], size, qd * threads, path, ops,
	       t1 - t0, lat, cpu_busy() - c0);
	return 0;
}

static int blk(int argc, char **argv)
{
	size_t size = strtoul(argv[1], NULL, 0);
	double secs = atof(argv[2]), t0, t1 = 0, c0, lat = 0, *start;
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
	report("nvme-pci", argv[0], size, qd, host ? "host" : "p2p", ops, t1 - t0, lat,
	       cpu_busy() - c0);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 5 && !strcmp(argv[1], "engine"))
		return engine(argc - 2, argv + 2);
	if (argc >= 6 && !strcmp(argv[1], "blk"))
		return blk(argc - 2, argv + 2);
	fprintf(stderr, "usage: p2pbench engine NVME SIZE SECONDS [--qd N] [--threads T] [--bounce|--host]\n"
		"       p2pbench blk BLKDEV SIZE SECONDS QD [--host]\n");
	return 2;
}
