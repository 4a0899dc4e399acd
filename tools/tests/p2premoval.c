// SPDX-License-Identifier: GPL-2.0
/*
 * p2premoval: unbind the provider again and again with every kind of user
 * alive at once, and check what each of them sees afterwards.
 *
 *   p2premoval CYCLES P2PBAR-BDF P2PNVME-DEV [BOUND-SECONDS]
 *
 * Each cycle binds p2pbar (to /dev/p2pbar0), starts four users and unbinds
 * while they are busy:
 *   mmap     an allocation of /dev/p2pbar0, mapped and touched
 *   sysfs    a mapping of the kernel's own p2pmem/allocate
 *   dmabuf   p2pmem exported as a dma-buf, p2pnvme reading into it in a loop
 *   nvme     p2pnvme batches of reads into a /dev/p2pbar0 mapping, in a loop
 * Afterwards every mapping raises SIGBUS, the char device's ioctls fail with
 * ENODEV, the dma-buf's I/O with ENODEV, and the users exit. The slowest
 * unbind is reported; with these (compliant) users it must stay within the
 * bound, 1 s by default.
 * Splats and leaks are for the bench's log check and kmemleak.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
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

#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

#include "harness.h"

#define DEV	"/dev/p2pbar0"

static const char *bdf, *nvme_dev;
static sigjmp_buf jb;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int sysfs_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -errno;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : -errno;
	close(fd);
	return ok;
}

/* does touching @p raise SIGBUS? */
static int faults(volatile unsigned char *p)
{
	signal(SIGBUS, on_sigbus);
	if (sigsetjmp(jb, 1))
		return 1;
	(void)p[0];
	return 0;
}

static void *bar_map(int fd, size_t len)
{
	struct p2pbar_alloc a = { .argsz = sizeof(a), .size = len };
	void *p;

	if (ioctl(fd, P2PBAR_IOC_ALLOC, &a))
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.mmap_offset);
	return p == MAP_FAILED ? NULL : p;
}

enum { U_MMAP, U_SYSFS, U_DMABUF, U_NVME, NR_USERS };
static const char * const user_name[] = { "mmap", "sysfs", "dmabuf", "nvme" };

/*
 * One user. Writes one byte to @ready once it is busy, reads one from @go
 * once the provider is gone, then checks. Exit code: 0, or a bit per
 * broken promise (1: no SIGBUS, 2: wrong errno, 4: setup failed).
 */
static int user(int kind, int ready, int go)
{
	volatile unsigned char *p = NULL;
	int fd = -1, nfd = -1, dfd = -1, err = 0, code = 0, started = 0;
	char c = 'r', path[256];

	if (kind != U_SYSFS)
		fd = open(DEV, O_RDWR);
	if (kind == U_DMABUF || kind == U_NVME)
		nfd = open(nvme_dev, O_RDWR);
	switch (kind) {
	case U_MMAP:
		p = bar_map(fd, 64 << 10);
		if (p)
			p[0] = 1;
		break;
	case U_SYSFS:
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/p2pmem/allocate", bdf);
		fd = open(path, O_RDWR);
		p = fd < 0 ? MAP_FAILED : mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE,
					       MAP_SHARED, fd, 0);
		p = p == MAP_FAILED ? NULL : p;
		if (p)
			p[0] = 1;
		break;
	case U_DMABUF: {
		struct p2pbar_export e = { .argsz = sizeof(e), .size = 256 << 10 };

		dfd = ioctl(fd, P2PBAR_IOC_EXPORT, &e) ? -1 : e.fd;
		p = (void *)1;		/* no mapping to check */
		break;
	}
	case U_NVME:
		p = bar_map(fd, 1 << 20);
		break;
	}
	if (!p || (kind == U_DMABUF && dfd < 0) || (nfd < 0 && kind >= U_DMABUF))
		code |= 4;
	/* I/O users keep the device busy until it fails under them */
	while (!code && (kind == U_DMABUF || kind == U_NVME)) {
		struct p2pnvme_io ios[16];
		struct p2pnvme_submit s = { .argsz = sizeof(s), .nr = 16, .ios = (uintptr_t)ios };
		int i, ret;

		for (i = 0; i < 16; i++)
			ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[0]),
				.op = P2PNVME_OP_READ, .slba = i * 128, .len = 16 << 10,
				.addr = kind == U_NVME ? (uintptr_t)p + i * (64 << 10) :
					(uint64_t)i * (16 << 10),
				.flags = kind == U_DMABUF ? P2PNVME_IO_F_DMABUF : 0,
				.dmabuf_fd = kind == U_DMABUF ? dfd : 0 };
		ret = ioctl(nfd, P2PNVME_IOC_SUBMIT, &s) ? errno : 0;
		if (!ret && !started++ && write(ready, &c, 1) != 1)
			code |= 4;
		if (!started && ret) {
			code |= 4;	/* never worked */
			break;
		}
		if (ret == EAGAIN)
			continue;	/* told to stop using the dma-buf: retry */
		if (ret) {
			err = ret;
			break;
		}
	}
	if (!started && write(ready, &c, 1) != 1)
		code |= 4;
	if (read(go, &c, 1) != 1)
		code |= 4;
	if (code & 4)
		return code;
	switch (kind) {
	case U_MMAP:
	case U_SYSFS:
		if (!faults(p))
			code |= 1;
		if (kind == U_MMAP) {
			struct p2pbar_info i = { .argsz = sizeof(i) };

			if (!ioctl(fd, P2PBAR_IOC_INFO, &i) || errno != ENODEV)
				code |= 2;
		}
		break;
	case U_DMABUF:
		if (err != ENODEV)
			code |= 2;
		break;
	case U_NVME:
		/* its mapping was zapped: pinning it fails, touching it faults */
		if (err != EFAULT || !faults(p))
			code |= err != EFAULT ? 2 : 1;
		break;
	}
	return code;
}

static int cycles;
static double bound = 1.0;
static char drv[256];

/*
 * The cycles: each binds p2pbar if it is not bound, starts the users,
 * unbinds under them and collects what each saw. A cycle that hangs is the
 * harness's timeout (the base kernel needs about 10 s for 100 cycles).
 */
TEST(removal_cycles, cycles, 2, 120)
{
	double slowest = 0, total = 0;
	int cycle, k, bad = 0, n = 0;

	for (cycle = 0; cycle < cycles; cycle++) {
		int ready[2], go[2], st, code[NR_USERS], i;
		pid_t pid[NR_USERS];
		double t0, took;
		char c;

		if (access(drv, F_OK) && sysfs_write("/sys/bus/pci/drivers/p2pbar/bind", bdf)) {
			printf("    # cycle %d: bind failed: %s\n", cycle, strerror(errno));
			bad++;
			break;
		}
		if (pipe(ready) || pipe(go))
			kt_fail("pipe: %s", strerror(errno));
		for (k = 0; k < NR_USERS; k++) {
			pid[k] = fork();
			if (!pid[k]) {
				close(ready[0]);
				close(go[1]);
				_exit(user(k, ready[1], go[0]));
			}
		}
		close(ready[1]);
		close(go[0]);
		for (k = 0; k < NR_USERS; k++)
			if (read(ready[0], &c, 1) != 1)
				break;
		t0 = now();
		if (sysfs_write("/sys/bus/pci/drivers/p2pbar/unbind", bdf))
			bad++;
		took = now() - t0;
		total += took;
		if (took > slowest)
			slowest = took;
		for (k = 0; k < NR_USERS; k++)
			if (write(go[1], "g", 1) != 1)
				break;
		for (k = 0; k < NR_USERS; k++) {
			waitpid(pid[k], &st, 0);
			code[k] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		close(ready[0]);
		close(go[1]);
		for (i = 0, k = 0; k < NR_USERS; k++) {
			if (!code[k])
				continue;
			if (!i++)
				bad++;
			printf("    # cycle %d: the %s user: %s%s%s\n", cycle, user_name[k],
			       code[k] & 4 ? "could not start " : "",
			       code[k] & 1 ? "no SIGBUS " : "", code[k] & 2 ? "wrong errno" : "");
		}
		if (!access(DEV, F_OK)) {
			printf("    # cycle %d: %s still exists\n", cycle, DEV);
			bad++;
		}
		n++;
	}
	tap(!bad, "%d removal cycles with four kinds of users alive: SIGBUS, ENODEV, all exit", n);
	printf("    # unbind: slowest %.3f s, mean %.3f s\n", slowest, n ? total / n : 0);
	tap(slowest <= bound, "the slowest unbind took %.3f s (at most %.1f s with compliant users)",
	    slowest, bound);
}

/* the provider ends bound, for whatever runs next, however the cycles ended */
TEST(removal_cycles, rebind, 1, 30)
{
	int k = access(drv, F_OK) ? sysfs_write("/sys/bus/pci/drivers/p2pbar/bind", bdf) : 0;

	tap(!k, "p2pbar binds again after the cycles");
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: p2premoval CYCLES P2PBAR-BDF P2PNVME-DEV [BOUND-SECONDS]\n");
		return 2;
	}
	if (argc == 5)
		bound = strtod(argv[4], NULL);
	cycles = atoi(argv[1]);
	bdf = argv[2];
	nvme_dev = argv[3];
	snprintf(drv, sizeof(drv), "/sys/bus/pci/devices/%s/driver", bdf);
	return kt_run("removal_cycles");
}
