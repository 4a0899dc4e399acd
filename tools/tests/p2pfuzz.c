// SPDX-License-Identifier: GPL-2.0
/*
 * p2pfuzz: seeded random ioctl, mmap and sysfs operations against the
 * suite's char devices, from several threads sharing the same fds, then a
 * check that nothing was left behind.
 *
 *   p2pfuzz [--seed S] [--ops N] [--threads T] P2PBAR-DEV P2PBAR-BDF [P2PNVME-DEV]
 *
 * Every operation is drawn from a xorshift stream seeded with S (printed,
 * so a failing run can be repeated): INFO, ALLOC, FREE, VERDICT and EXPORT
 * with well-formed, boundary and garbage arguments, argument pointers that
 * are NULL, unmapped, read-only or straddle the end of a mapping, unknown
 * command numbers, mmap with random offsets, lengths and flags, touching
 * mapped memory, writes to sysfs published, fds opened read-only, and with
 * a p2pnvme device INFO, IO and SUBMIT of reads, writes, flushes and write
 * zeroes into host memory, p2pmem mappings and exported dma-bufs, and the
 * admin passthrough with random opcodes, CNS, FIDs, LSP/RAE bits, NUMD and
 * buffer lengths. Meanwhile a second process does the same as uid 65534
 * while it is stopped, continued and interrupted by a restarting signal
 * again and again: the only admin commands it may get through are
 * Identify Controller and Namespace. Errors are the point; a crash, hang or
 * splat is the failure (the bench checks the kernel log). Afterwards, with every fd closed: no allocation is left
 * (p2pbar's counters and the kernel's p2pmem/available) and the whole BAR
 * can be allocated again. Prints one KTAP suite.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/nvme_ioctl.h>
#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

#include "harness.h"
#include "libp2p.h"

#define NFD	4
#define NMAP	16
#define NBUF	8

static const char *bar_dev, *bar_bdf, *nvme_dev;
static long ops_per_thread, pgsz;
static uint64_t bar_size, nlb;
static unsigned int lba_shift = 9;
static int bar_fd[NFD], nvme_fd[2];
static unsigned char *ro_page, *edge;	/* read-only page; last bytes of a mapping */
static long counts[2];			/* ioctls that succeeded, failed */
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

struct fuzz {
	uint64_t s;
	uint32_t handles[32];
	int nh;
	struct { void *p; size_t len; } map[NMAP];
	int dmabuf[NBUF];
	void *host;		/* 1 MiB of host memory for NVMe I/O */
};

static uint64_t rnd(struct fuzz *f)
{
	f->s ^= f->s << 13;
	f->s ^= f->s >> 7;
	f->s ^= f->s << 17;
	return f->s;
}

static uint64_t below(struct fuzz *f, uint64_t n)
{
	return n ? rnd(f) % n : 0;
}

/* sizes: mostly sane, sometimes boundary or garbage */
static uint64_t fuzz_size(struct fuzz *f)
{
	switch (below(f, 8)) {
	case 0: return 0;
	case 1: return below(f, 1ULL << 40);
	case 2: return ~0ULL - below(f, 4096);
	case 3: return bar_size + pgsz * below(f, 2);
	case 4: return pgsz * (1 + below(f, 4)) + below(f, 2);
	default: return pgsz * (1 + below(f, 64));
	}
}

/* an argument pointer: the real struct, or something hostile */
static void *fuzz_ptr(struct fuzz *f, void *good, size_t len)
{
	switch (below(f, 16)) {
	case 0: return NULL;
	case 1: return (void *)0x1000;
	case 2: return ro_page;			/* reads work, writes fault */
	case 3: memcpy(edge + pgsz - len / 2, good, len / 2);
		return edge + pgsz - len / 2;	/* runs off the mapping */
	default: return good;
	}
}

static uint32_t fuzz_argsz(struct fuzz *f, uint32_t real)
{
	switch (below(f, 10)) {
	case 0: return below(f, real);
	case 1: return real + 8 * below(f, 4);
	case 2: return rnd(f);
	default: return real;
	}
}

static int fd_of(struct fuzz *f)
{
	return bar_fd[below(f, NFD)];
}

static void op_bar(struct fuzz *f)
{
	union {
		struct p2pbar_info i;
		struct p2pbar_alloc a;
		struct p2pbar_free fr;
		struct p2pbar_verdict v;
		struct p2pbar_export e;
		unsigned char raw[128];
	} u;
	int fd = fd_of(f), ret, k = below(f, 12);
	unsigned int cmd;
	void *arg = &u;

	memset(&u, 0, sizeof(u));
	if (!below(f, 20))
		for (ret = 0; ret < (int)sizeof(u.raw); ret++)
			u.raw[ret] = rnd(f);
	switch (k) {
	case 0:
		u.i.argsz = fuzz_argsz(f, sizeof(u.i));
		cmd = P2PBAR_IOC_INFO;
		break;
	case 1: case 2: case 3:
		u.a.argsz = fuzz_argsz(f, sizeof(u.a));
		u.a.size = fuzz_size(f);
		u.a.align = below(f, 4) ? 0 : 1ULL << below(f, 64);
		cmd = P2PBAR_IOC_ALLOC;
		break;
	case 4: case 5:
		u.fr.argsz = fuzz_argsz(f, sizeof(u.fr));
		u.fr.handle = f->nh && below(f, 4) ? f->handles[below(f, f->nh)] : below(f, 64);
		cmd = P2PBAR_IOC_FREE;
		break;
	case 6:
		u.v.argsz = fuzz_argsz(f, sizeof(u.v));
		u.v.client_domain = below(f, 4) ? 0 : rnd(f);
		u.v.client_devid = below(f, 8) ? below(f, 0x800) : rnd(f);
		cmd = P2PBAR_IOC_VERDICT;
		break;
	case 7:
		u.e.argsz = fuzz_argsz(f, sizeof(u.e));
		u.e.size = fuzz_size(f);
		u.e.flags = below(f, 4) ? P2PBAR_EXPORT_F_CLOEXEC : rnd(f);
		cmd = P2PBAR_IOC_EXPORT;
		break;
	case 8:
		cmd = below(f, 2) ? _IO(P2PBAR_IOC_MAGIC, below(f, 256)) : (unsigned int)rnd(f);
		break;
	default:
		cmd = P2PBAR_IOC_ALLOC;
		u.a.argsz = sizeof(u.a);
		u.a.size = pgsz * (1 + below(f, 16));
		break;
	}
	arg = fuzz_ptr(f, &u, sizeof(u.a));
	ret = ioctl(fd, cmd, arg);
	if (!ret && arg == &u && cmd == P2PBAR_IOC_ALLOC) {
		if (f->nh < 32)
			f->handles[f->nh++] = u.a.handle;
		if (below(f, 2)) {
			int slot = below(f, NMAP);
			void *p = mmap(NULL, u.a.size, PROT_READ | (below(f, 4) ? PROT_WRITE : 0),
				       MAP_SHARED, fd, u.a.mmap_offset);

			if (p != MAP_FAILED) {
				if (f->map[slot].p)
					munmap(f->map[slot].p, f->map[slot].len);
				f->map[slot].p = p;
				f->map[slot].len = u.a.size;
			}
		}
	}
	if (!ret && arg == &u && cmd == P2PBAR_IOC_EXPORT) {
		int slot = below(f, NBUF);

		if (f->dmabuf[slot] > 0)
			close(f->dmabuf[slot]);
		f->dmabuf[slot] = u.e.fd;
	}
	pthread_mutex_lock(&count_lock);
	counts[ret ? 1 : 0]++;
	pthread_mutex_unlock(&count_lock);
}

static void op_mmap(struct fuzz *f)
{
	int slot = below(f, NMAP), flags = below(f, 6) ? MAP_SHARED : MAP_PRIVATE;
	size_t len = pgsz * (1 + below(f, 8));
	off_t off = below(f, 4) ? (off_t)(pgsz * below(f, bar_size / pgsz + 2)) :
		    (off_t)(rnd(f) & ~(uint64_t)(pgsz - 1));
	void *p;

	if (f->map[slot].p) {
		if (below(f, 2)) {		/* touch what is mapped */
			volatile unsigned char *q = f->map[slot].p;
			size_t at = below(f, f->map[slot].len);

			(void)q[at];
			return;
		}
		munmap(f->map[slot].p, f->map[slot].len);
		f->map[slot].p = NULL;
		return;
	}
	p = mmap(NULL, len, PROT_READ, flags, fd_of(f), off);
	if (p != MAP_FAILED) {
		f->map[slot].p = p;
		f->map[slot].len = len;
	}
}

static void op_sysfs(struct fuzz *f)
{
	static const char *vals[] = { "0", "1", "yes", "maybe", "", "1\n", "10" };
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/sys/class/p2pbar/%s/published", strrchr(bar_dev, '/') + 1);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return;
	if (write(fd, vals[below(f, 7)], strlen(vals[below(f, 7)])) < 0)
		errno = 0;
	close(fd);
}

/* a buffer for NVMe I/O: host memory, a p2pmem mapping, or garbage */
static void fuzz_io(struct fuzz *f, struct p2pnvme_io *io)
{
	int slot = below(f, NMAP);
	uint64_t lbas = 1 + below(f, 64);

	memset(io, 0, sizeof(*io));
	io->argsz = fuzz_argsz(f, sizeof(*io));
	io->op = below(f, 10) ? below(f, 4) : rnd(f);
	io->slba = below(f, 8) ? below(f, nlb) : rnd(f);
	io->len = below(f, 8) ? lbas << lba_shift : fuzz_size(f);
	io->flags = below(f, 4) ? 0 : 1U << below(f, 8);	/* 7 flags and an unknown one */
	switch (below(f, 4)) {
	case 0:
		if (f->map[slot].p && f->map[slot].len >= io->len) {
			io->addr = (uintptr_t)f->map[slot].p;
			break;
		}
		/* fall through */
	case 1:
		io->addr = (uintptr_t)f->host + (below(f, 2) ? 0 : 4 * below(f, 1024));
		break;
	case 2:
		io->flags |= P2PNVME_IO_F_DMABUF;
		io->dmabuf_fd = f->dmabuf[below(f, NBUF)];
		io->addr = pgsz * below(f, 4);
		break;
	default:
		io->addr = rnd(f);
		break;
	}
	if (io->op == P2PNVME_OP_FLUSH && below(f, 2)) {
		io->slba = io->len = io->addr = 0;
		io->flags = 0;
	}
	if (io->op == P2PNVME_OP_WRITE_ZEROES && below(f, 2)) {
		io->addr = 0;
		io->flags &= ~P2PNVME_IO_F_DMABUF;
		io->dmabuf_fd = 0;
	}
	if (io->slba + (io->len >> lba_shift) > nlb && below(f, 2))
		io->slba = 0;
}

static void op_nvme(struct fuzz *f)
{
	int fd = nvme_fd[below(f, 2)], ret;
	struct p2pnvme_io ios[8];
	struct p2pnvme_submit sub;
	struct p2pnvme_info info;
	unsigned int i, n;

	switch (below(f, 4)) {
	case 0:
		memset(&info, 0, sizeof(info));
		info.argsz = fuzz_argsz(f, sizeof(info));
		ret = ioctl(fd, P2PNVME_IOC_INFO, fuzz_ptr(f, &info, sizeof(info)));
		break;
	case 1:
		fuzz_io(f, &ios[0]);
		ret = ioctl(fd, P2PNVME_IOC_IO, fuzz_ptr(f, &ios[0], sizeof(ios[0])));
		break;
	default:
		n = 1 + below(f, 8);
		for (i = 0; i < n; i++) {
			fuzz_io(f, &ios[i]);
			if (below(f, 4))
				ios[i].argsz = sizeof(ios[i]);
		}
		memset(&sub, 0, sizeof(sub));
		sub.argsz = fuzz_argsz(f, sizeof(sub));
		sub.nr = below(f, 10) ? n : rnd(f);
		sub.ios = below(f, 10) ? (uintptr_t)ios : rnd(f);
		ret = ioctl(fd, P2PNVME_IOC_SUBMIT, fuzz_ptr(f, &sub, sizeof(sub)));
		break;
	}
	pthread_mutex_lock(&count_lock);
	counts[ret ? 1 : 0]++;
	pthread_mutex_unlock(&count_lock);
}

/* Identify CNS an unprivileged caller may send (nvme_admin_cmd_allowed()) */
static int unprivileged_ok(const struct nvme_admin_cmd *c)
{
	uint8_t cns = c->cdw10 & 0xff;

	return c->opcode == 0x06 && (cns == 0x00 || cns == 0x01 || cns == 0x05 ||
				     cns == 0x06 || cns == 0x08);
}

static long admin_violations;	/* an unprivileged caller got through */

/* NVME_IOCTL_ADMIN_CMD: the three opcodes it takes, with random fields */
static void op_admin(struct fuzz *f)
{
	static const uint8_t ops[] = { 0x06, 0x02, 0x0a, 0x06, 0x02, 0x0a, 0x09, 0x80, 0xc1 };
	struct nvme_admin_cmd c = { .opcode = ops[below(f, sizeof(ops))] };
	int ret;

	c.nsid = below(f, 4) ? below(f, 3) : rnd(f);
	switch (c.opcode) {
	case 0x06:	/* CNS, CNTID */
		c.cdw10 = below(f, 4) ? below(f, 0x20) : rnd(f);
		break;
	case 0x02:	/* LID, LSP, RAE, NUMDL; NUMDU, LSI */
		c.cdw10 = below(f, 0x100) | below(f, 0x80) << 8 | below(f, 2) << 15 |
			  (below(f, 2) ? below(f, 0x800) : rnd(f) >> 48) << 16;
		c.cdw11 = below(f, 4) ? 0 : rnd(f);
		c.cdw12 = below(f, 4) ? 0 : rnd(f);
		break;
	default:	/* FID, SEL */
		c.cdw10 = below(f, 0x100) | below(f, 8) << 8;
		c.cdw11 = below(f, 2) ? 0 : rnd(f);
		break;
	}
	c.data_len = below(f, 8) ? below(f, 8193) : rnd(f);
	c.addr = below(f, 8) ? (uintptr_t)f->host : (uintptr_t)fuzz_ptr(f, f->host, 16);
	if (below(f, 16) == 0)
		c.flags = rnd(f);
	ret = ioctl(nvme_fd[below(f, 2)], NVME_IOCTL_ADMIN_CMD,
		    below(f, 16) ? &c : fuzz_ptr(f, &c, sizeof(c)));
	if (ret == 0 && geteuid() && !unprivileged_ok(&c))
		admin_violations++;
	pthread_mutex_lock(&count_lock);
	counts[ret ? 1 : 0]++;
	pthread_mutex_unlock(&count_lock);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * The unprivileged process: I/O and admin commands through fds root
 * opened, as uid 65534, while the parent stops, continues and interrupts
 * it. Exit status: 1 if an admin command it may not send got through.
 */
static void unprivileged(uint64_t seed, long ops)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	struct fuzz f = { .s = seed * 0x9e3779b97f4a7c15ULL + 99 };
	long i;

	sigaction(SIGUSR1, &sa, NULL);
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		_exit(3);
	f.host = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < ops; i++) {
		if (below(&f, 2))
			op_admin(&f);
		else
			op_nvme(&f);
	}
	printf("    # unprivileged: %ld operations, %ld admin commands got through that must not\n",
	       ops, admin_violations);
	_exit(admin_violations ? 1 : 0);
}

static void *worker(void *arg)
{
	struct fuzz *f = arg;
	long i;

	f->host = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < ops_per_thread; i++) {
		unsigned int k = below(f, 20);

		if (k < 9)
			op_bar(f);
		else if (k < 13)
			op_mmap(f);
		else if (k < 14)
			op_sysfs(f);
		else if (nvme_dev && k < 15)
			op_admin(f);
		else if (nvme_dev)
			op_nvme(f);
		else
			op_bar(f);
		/* now and then an fd is reopened, read-only or not, under the others' feet */
		if (!below(f, 500)) {
			int slot = below(f, NFD), nfd;

			nfd = open(bar_dev, below(f, 3) ? O_RDWR : O_RDONLY);
			if (nfd >= 0) {
				int old = __atomic_exchange_n(&bar_fd[slot], nfd, __ATOMIC_SEQ_CST);

				close(old);
				f->nh = 0;	/* its handles died with it */
			}
		}
	}
	for (i = 0; i < NMAP; i++)
		if (f->map[i].p)
			munmap(f->map[i].p, f->map[i].len);
	for (i = 0; i < NBUF; i++)
		if (f->dmabuf[i] > 0)
			close(f->dmabuf[i]);
	munmap(f->host, 1 << 20);
	return NULL;
}

/* p2p_sysfs_num() of a path built from @fmt and @arg */
static long read_numf(const char *fmt, const char *arg)
{
	char path[256];

	snprintf(path, sizeof(path), fmt, arg);
	return p2p_sysfs_num(path);
}

static uint64_t seed = 1;
static long ops = 100000, threads = 2;

/*
 * The operations, from @threads threads and an unprivileged process; then
 * every fd closed, also dma-bufs an EXPORT installed although its argument
 * pointer was one of the hostile ones (the result then went nowhere this
 * program could see). Mappings go with the threads, the rest with the test's
 * process.
 */
TEST(fuzz, operations, nvme_dev ? 2 : 1, 300)
{
	struct p2pbar_info info = { .argsz = sizeof(info) };
	struct fuzz sig = { .s = seed + 7 };
	struct fuzz *f;
	pthread_t *tid;
	pid_t child = 0;
	int st = 0;
	long t, i;

	printf("    # seed %llu, %ld operations on %ld threads\n", (unsigned long long)seed, ops,
	       threads);
	for (i = 0; i < NFD; i++)
		bar_fd[i] = open(bar_dev, i == NFD - 1 ? O_RDONLY : O_RDWR);
	if (bar_fd[0] < 0 || ioctl(bar_fd[0], P2PBAR_IOC_INFO, &info))
		kt_fail("open %s: %s", bar_dev, strerror(errno));
	bar_size = info.size;
	if (nvme_dev) {
		struct p2pnvme_info ni = { .argsz = sizeof(ni) };

		nvme_fd[0] = open(nvme_dev, O_RDWR);
		nvme_fd[1] = open(nvme_dev, O_RDONLY);
		if (nvme_fd[0] < 0 || ioctl(nvme_fd[0], P2PNVME_IOC_INFO, &ni))
			kt_fail("open %s: %s", nvme_dev, strerror(errno));
		nlb = ni.nlb;
		lba_shift = ni.lba_shift;
	}
	ro_page = mmap(NULL, pgsz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	edge = mmap(NULL, 2 * pgsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(edge + pgsz, pgsz);

	ops_per_thread = ops / threads;
	if (nvme_dev) {
		child = fork();
		if (!child)
			unprivileged(seed, ops / 10);
	}
	f = calloc(threads, sizeof(*f));
	tid = calloc(threads, sizeof(*tid));
	for (t = 0; t < threads; t++) {
		f[t].s = seed * 0x9e3779b97f4a7c15ULL + t + 1;
		pthread_create(&tid[t], NULL, worker, &f[t]);
	}
	/* restarted system calls: stop and continue it, or interrupt it */
	while (child > 0 && waitpid(child, &st, WNOHANG) == 0) {
		usleep(20000);
		if (rnd(&sig) & 1) {
			kill(child, SIGSTOP);
			usleep(2000);
			kill(child, SIGCONT);
		} else {
			kill(child, SIGUSR1);
		}
	}
	for (t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	if (child > 0)
		tap(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		    "uid 65534, stopped and interrupted throughout: no admin command but Identify Controller/Namespace got through (status %#x)",
		    st);
	tap(1, "%ld random operations finished (%ld succeeded, %ld failed as they should or may)",
	    ops_per_thread * threads, counts[0], counts[1]);
	for (i = 3; i < 4096; i++)
		close(i);
}

/* after the operations' process: nothing left, the whole BAR there again */
TEST(fuzz, drained, 4, 60)
{
	struct p2pbar_info info = { .argsz = sizeof(info) };
	struct p2pbar_alloc all;
	int fd, ret, i;

	/* the pool drains */
	for (i = 0; i < 100 && read_numf("/sys/class/p2pbar/%s/alloc_count",
					strrchr(bar_dev, '/') + 1); i++)
		usleep(20000);
	ret = read_numf("/sys/class/p2pbar/%s/alloc_count", strrchr(bar_dev, '/') + 1) == 0 &&
	      read_numf("/sys/class/p2pbar/%s/alloc_bytes", strrchr(bar_dev, '/') + 1) == 0;
	tap(ret, "every fd closed: no p2pbar allocation left");
	if (!ret) {
		char path[256], line[256];
		FILE *fp;

		snprintf(path, sizeof(path), "/sys/kernel/debug/p2pbar/%s/allocations", bar_bdf);
		fp = fopen(path, "r");
		while (fp && fgets(line, sizeof(line), fp))
			printf("    # left: %s", line);
		if (fp)
			fclose(fp);
	}
	fd = open(bar_dev, O_RDWR);
	if (fd < 0 || ioctl(fd, P2PBAR_IOC_INFO, &info))
		kt_fail("open %s: %s", bar_dev, strerror(errno));
	bar_size = info.size;
	tap(read_numf("/sys/bus/pci/devices/%s/p2pmem/available", bar_bdf) == (long)bar_size,
	    "the kernel's pool has all %llu bytes back", (unsigned long long)bar_size);
	memset(&all, 0, sizeof(all));
	all.argsz = sizeof(all);
	all.size = bar_size;
	ret = ioctl(fd, P2PBAR_IOC_ALLOC, &all) ? errno : 0;
	tap(!ret, "the whole BAR can be allocated again (%s)", strerror(ret));
	close(fd);
	tap(read_numf("/sys/class/p2pbar/%s/alloc_count", strrchr(bar_dev, '/') + 1) == 0,
	    "and is free again after close");
}

int main(int argc, char **argv)
{
	while (argc > 2 && !strncmp(argv[1], "--", 2)) {
		if (!strcmp(argv[1], "--seed"))
			seed = strtoull(argv[2], NULL, 0);
		else if (!strcmp(argv[1], "--ops"))
			ops = strtol(argv[2], NULL, 0);
		else if (!strcmp(argv[1], "--threads"))
			threads = strtol(argv[2], NULL, 0);
		else
			break;
		argv += 2;
		argc -= 2;
	}
	if (argc < 3 || threads < 1 || threads > 8 || ops < 1) {
		fprintf(stderr, "usage: p2pfuzz [--seed S] [--ops N] [--threads T] P2PBAR-DEV BDF [P2PNVME-DEV]\n");
		return 2;
	}
	bar_dev = argv[1];
	bar_bdf = argv[2];
	nvme_dev = argc > 3 ? argv[3] : NULL;
	pgsz = sysconf(_SC_PAGESIZE);
	return kt_run("fuzz");
}
