// SPDX-License-Identifier: GPL-2.0
/*
 * p2pfailnth: systematic fault injection over every ioctl of the suite and
 * over probe, with /proc/thread-self/fail-nth (failslab and fail_page_alloc
 * armed for sleeping allocations by the caller).
 *
 *   p2pfailnth P2PBAR-DEV P2PBAR-BDF P2PNVME-DEV [NVME-BDF]
 *
 * For each operation, N = 1, 2, ...: the N-th fault site the operation
 * reaches fails. The operation must then return an error, or succeed (a
 * failure that was absorbed, say by a fallback), and either way leave the
 * state as before once it is undone: p2pbar's counters, the kernel's
 * p2pmem/available, the fds of this process. The sweep of an operation
 * ends at the first N it no longer reaches. Probe of p2pbar is swept the
 * same way through the driver's bind file, and with NVME-BDF p2pnvme's
 * probe too: there the faults are kept to stacks through p2pnvme's own
 * code and out of pci_enable_device_flags() (the kernel's ACPI IRQ routing
 * under it mishandles an allocation failure: a use-after-free in
 * acpi_ns_get_attached_object()), with the stack filter of
 * CONFIG_FAULT_INJECTION_STACKTRACE_FILTER; P2P_FAILNTH_STEP=K in the
 * environment injects only every K-th of its fault sites (each bind brings
 * a controller up: the whole sweep takes many minutes on the debug
 * kernel under TCG). Leaks are for kmemleak, which
 * the bench scans after the run; splats for the bench's log check.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/nvme_ioctl.h>
#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

#include "harness.h"
#include "libp2p.h"

static const char *bar_dev, *bdf, *nvme_dev;
static int bar, nvme;
static void *host;

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int c = 0;

	while (d && readdir(d))
		c++;
	if (d)
		closedir(d);
	return c;
}

struct state {
	long count, bytes, avail;
	int fds;
};

static struct state snap(void)
{
	char p[256];
	struct state s;

	snprintf(p, sizeof(p), "/sys/class/p2pbar/%s/alloc_count", strrchr(bar_dev, '/') + 1);
	s.count = p2p_sysfs_num(p);
	snprintf(p, sizeof(p), "/sys/class/p2pbar/%s/alloc_bytes", strrchr(bar_dev, '/') + 1);
	s.bytes = p2p_sysfs_num(p);
	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/p2pmem/available", bdf);
	s.avail = p2p_sysfs_num(p);
	s.fds = open_fds();
	return s;
}

/*
 * Arm the nth fault (nth > 0), or disarm and tell (nth == 0): 0 means the
 * armed fault was injected, N > 0 that it was not reached. The file stays
 * open: opening it would be a fault site itself.
 */
static int nth_fd = -1;

static int fail_nth(int nth)
{
	char buf[16];
	int len, ret = -1;

	if (nth) {
		len = snprintf(buf, sizeof(buf), "%d", nth);
		return pwrite(nth_fd, buf, len, 0) == len ? 0 : -1;
	}
	len = pread(nth_fd, buf, sizeof(buf) - 1, 0);
	if (len > 0) {
		buf[len] = 0;
		ret = atoi(buf);
	}
	if (pwrite(nth_fd, "0", 1, 0) != 1)
		ret = -1;
	return ret;
}

/* One operation: returns 0 or -errno; undo() reverts a success. */
struct op {
	const char *name;
	int (*run)(void **undo_arg);
	void (*undo)(void *undo_arg);
};

static int bar_info(void **u __attribute__((unused)))
{
	struct p2pbar_info i = { .argsz = sizeof(i) };

	return ioctl(bar, P2PBAR_IOC_INFO, &i) ? -errno : 0;
}

static struct p2pbar_alloc last_alloc;

static int bar_alloc(void **u __attribute__((unused)))
{
	last_alloc = (struct p2pbar_alloc){ .argsz = sizeof(last_alloc), .size = 1 << 20 };
	return ioctl(bar, P2PBAR_IOC_ALLOC, &last_alloc) ? -errno : 0;
}

static void bar_alloc_undo(void *u __attribute__((unused)))
{
	struct p2pbar_free f = { .argsz = sizeof(f), .handle = last_alloc.handle };

	ioctl(bar, P2PBAR_IOC_FREE, &f);
}

/* ALLOC, map, fault every page, unmap, FREE: one operation */
static int bar_map_cycle(void **u __attribute__((unused)))
{
	struct p2pbar_alloc a = { .argsz = sizeof(a), .size = 64 << 10 };
	struct p2pbar_free f = { .argsz = sizeof(f) };
	volatile unsigned char *p;
	size_t i;
	int ret = 0;

	if (ioctl(bar, P2PBAR_IOC_ALLOC, &a))
		return -errno;
	p = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, bar, a.mmap_offset);
	if (p == MAP_FAILED) {
		ret = -errno;
	} else {
		for (i = 0; i < a.size; i += 4096)
			p[i] = 1;
		munmap((void *)p, a.size);
	}
	f.handle = a.handle;
	ioctl(bar, P2PBAR_IOC_FREE, &f);
	return ret;
}

static int bar_verdict(void **u __attribute__((unused)))
{
	struct p2pbar_verdict v = { .argsz = sizeof(v) };
	unsigned int b, d, fn;

	sscanf(bdf, "%*x:%x:%x.%x", &b, &d, &fn);
	v.client_devid = b << 8 | d << 3 | fn;
	return ioctl(bar, P2PBAR_IOC_VERDICT, &v) ? -errno : 0;
}

static int bar_export(void **u)
{
	struct p2pbar_export e = { .argsz = sizeof(e), .size = 64 << 10 };

	if (ioctl(bar, P2PBAR_IOC_EXPORT, &e))
		return -errno;
	*u = (void *)(intptr_t)e.fd;
	return 0;
}

static void close_undo(void *u)
{
	close((int)(intptr_t)u);
}

static int nvme_info(void **u __attribute__((unused)))
{
	struct p2pnvme_info i = { .argsz = sizeof(i) };

	return ioctl(nvme, P2PNVME_IOC_INFO, &i) ? -errno : 0;
}

static int nvme_read(uint64_t addr, uint32_t flags, int dfd)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .len = 64 << 10,
				 .addr = addr, .flags = flags, .dmabuf_fd = dfd };

	return ioctl(nvme, P2PNVME_IOC_IO, &io) ? -errno : 0;
}

static int nvme_read_host(void **u __attribute__((unused)))
{
	return nvme_read((uintptr_t)host, 0, 0);
}

/* into p2pmem of /dev/p2pbar0: P2P, then forced bounce */
static int nvme_read_p2p(uint32_t flags)
{
	struct p2pbar_alloc a = { .argsz = sizeof(a), .size = 64 << 10 };
	struct p2pbar_free f = { .argsz = sizeof(f) };
	void *p;
	int ret;

	if (ioctl(bar, P2PBAR_IOC_ALLOC, &a))
		return -errno;
	p = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, bar, a.mmap_offset);
	ret = p == MAP_FAILED ? -errno : nvme_read((uintptr_t)p, flags, 0);
	if (p != MAP_FAILED)
		munmap(p, a.size);
	f.handle = a.handle;
	ioctl(bar, P2PBAR_IOC_FREE, &f);
	return ret;
}

static int nvme_read_p2pmem(void **u __attribute__((unused)))
{
	return nvme_read_p2p(0);
}

static int nvme_read_bounce(void **u __attribute__((unused)))
{
	return nvme_read_p2p(P2PNVME_IO_F_BOUNCE);
}

static int nvme_read_dmabuf(void **u __attribute__((unused)))
{
	struct p2pbar_export e = { .argsz = sizeof(e), .size = 64 << 10 };
	int ret;

	if (ioctl(bar, P2PBAR_IOC_EXPORT, &e))
		return -errno;
	ret = nvme_read(0, P2PNVME_IO_F_DMABUF, e.fd);
	close(e.fd);
	return ret;
}

static int nvme_submit(void **u __attribute__((unused)))
{
	struct p2pnvme_io ios[4];
	struct p2pnvme_submit s = { .argsz = sizeof(s), .nr = 4, .ios = (uintptr_t)ios };
	int i;

	for (i = 0; i < 4; i++)
		ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ,
					      .slba = i * 128, .len = 64 << 10,
					      .addr = (uintptr_t)host + i * (64 << 10) };
	return ioctl(nvme, P2PNVME_IOC_SUBMIT, &s) ? -errno : 0;
}

/*
 * One batch into two dma-bufs, 64 KiB each (PRP lists): the list blocks
 * are taken before the batch's fences are published
 */
static int nvme_submit_dmabufs(void **u __attribute__((unused)))
{
	struct p2pbar_export e[2] = { { .argsz = sizeof(e[0]), .size = 64 << 10 },
				      { .argsz = sizeof(e[0]), .size = 64 << 10 } };
	struct p2pnvme_io ios[2];
	struct p2pnvme_submit s = { .argsz = sizeof(s), .nr = 2, .ios = (uintptr_t)ios };
	int i, fd[2] = { -1, -1 }, ret = 0;

	for (i = 0; i < 2 && !ret; i++) {
		if (ioctl(bar, P2PBAR_IOC_EXPORT, &e[i]))
			ret = -errno;
		else
			fd[i] = e[i].fd;
		ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ,
					      .slba = i * 128, .len = 64 << 10,
					      .flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = fd[i] };
	}
	if (!ret)
		ret = ioctl(nvme, P2PNVME_IOC_SUBMIT, &s) ? -errno : 0;
	for (i = 0; i < 2; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return ret;
}

/* the admin passthrough: the SMART log, 512 bytes */
static int nvme_admin(void **u __attribute__((unused)))
{
	struct nvme_admin_cmd c = { .opcode = 0x02, .nsid = 0xffffffff,
				    .cdw10 = 127 << 16 | 0x02, .data_len = 512,
				    .addr = (uintptr_t)host };
	int ret = ioctl(nvme, NVME_IOCTL_ADMIN_CMD, &c);

	return ret < 0 ? -errno : ret ? -EPROTO : 0;
}

/* a registered buffer (host memory, or a dma-buf of p2pmem), then unregistered */
static int nvme_register(uint32_t flags, uint64_t addr, int dfd, uint32_t *id)
{
	struct p2pnvme_buf_reg r = { .argsz = sizeof(r), .flags = flags, .addr = addr,
				     .len = 64 << 10, .dmabuf_fd = dfd };

	if (ioctl(nvme, P2PNVME_IOC_BUF_REGISTER, &r))
		return -errno;
	*id = r.id;
	return 0;
}

static void nvme_unregister(uint32_t id)
{
	struct p2pnvme_buf_unreg u = { .argsz = sizeof(u), .id = id };

	ioctl(nvme, P2PNVME_IOC_BUF_UNREGISTER, &u);
}

static int nvme_reg_host(void **u)
{
	uint32_t id = 0;
	int ret = nvme_register(0, (uintptr_t)host, 0, &id);

	*u = (void *)(uintptr_t)id;
	return ret;
}

static void nvme_reg_undo(void *u)
{
	nvme_unregister((uint32_t)(uintptr_t)u);
}

static int nvme_reg_dmabuf(void **u __attribute__((unused)))
{
	struct p2pbar_export e = { .argsz = sizeof(e), .size = 64 << 10 };
	uint32_t id = 0;
	int ret;

	if (ioctl(bar, P2PBAR_IOC_EXPORT, &e))
		return -errno;
	ret = nvme_register(P2PNVME_BUF_F_DMABUF, 0, e.fd, &id);
	close(e.fd);
	if (!ret)
		nvme_unregister(id);
	return ret;
}

/* register host memory, read into it by id, unregister */
static int nvme_read_registered(void **u __attribute__((unused)))
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .len = 64 << 10,
				 .flags = P2PNVME_IO_F_REGISTERED };
	uint32_t id = 0;
	int ret = nvme_register(0, (uintptr_t)host, 0, &id);

	if (ret)
		return ret;
	io.buf_id = id;
	ret = ioctl(nvme, P2PNVME_IOC_IO, &io) ? -errno : 0;
	nvme_unregister(id);
	return ret;
}

static const struct op ops[] = {
	{ "p2pbar INFO", bar_info, NULL },
	{ "p2pbar ALLOC", bar_alloc, bar_alloc_undo },
	{ "p2pbar ALLOC, mmap, fault, FREE", bar_map_cycle, NULL },
	{ "p2pbar VERDICT", bar_verdict, NULL },
	{ "p2pbar EXPORT", bar_export, close_undo },
	{ "p2pnvme INFO", nvme_info, NULL },
	{ "p2pnvme IO read into host memory", nvme_read_host, NULL },
	{ "p2pnvme IO read into p2pmem", nvme_read_p2pmem, NULL },
	{ "p2pnvme IO read bounced into p2pmem", nvme_read_bounce, NULL },
	{ "p2pnvme IO read into an exported dma-buf", nvme_read_dmabuf, NULL },
	{ "p2pnvme SUBMIT of 4 reads", nvme_submit, NULL },
	{ "p2pnvme SUBMIT of reads into two dma-bufs", nvme_submit_dmabufs, NULL },
	{ "p2pnvme admin passthrough (SMART log)", nvme_admin, NULL },
	{ "p2pnvme BUF_REGISTER of host memory", nvme_reg_host, nvme_reg_undo },
	{ "p2pnvme BUF_REGISTER of a p2pmem dma-buf, UNREGISTER", nvme_reg_dmabuf, NULL },
	{ "p2pnvme IO read into a registered buffer", nvme_read_registered, NULL },
};

static int same(struct state a, struct state b)
{
	return a.count == b.count && a.bytes == b.bytes && a.avail == b.avail && a.fds == b.fds;
}

static void sweep(const struct op *op)
{
	struct state before = snap(), after;
	int nth, ret = -1, left, errors = 0, absorbed = 0, bad = 0;
	void *u = NULL;

	for (nth = 1; nth < 2000; nth++) {
		u = NULL;
		if (fail_nth(nth))
			break;
		ret = op->run(&u);
		left = fail_nth(0);
		if (!ret && op->undo)
			op->undo(u);
		if (ret)
			errors++;
		else if (!left)
			absorbed++;
		after = snap();
		if (!same(before, after) && bad++ < 3)
			printf("    # %s, fault %d: state changed (count %ld/%ld, avail %ld/%ld, fds %d/%d), returned %d\n",
			       op->name, nth, before.count, after.count, before.avail, after.avail,
			       before.fds, after.fds, ret);
		if (left > 0)
			break;		/* the operation no longer reaches fault nth */
	}
	/* the last run reached no fault: with nothing failing, the operation works */
	if (ret)
		printf("    # %s: fails (%s) even with no fault injected\n", op->name,
		       strerror(ret < 0 ? -ret : EIO));
	tap(!bad && nth < 2000 && !ret,
	    "%s: %d fault sites, %d failed it, %d absorbed, state unchanged, works without faults",
	    op->name, nth - 1, errors, absorbed);
}

static int unbind(const char *drv, const char *dev)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "/sys/bus/pci/drivers/%s/unbind", drv);
	fd = open(path, O_WRONLY);
	ret = fd >= 0 && write(fd, dev, strlen(dev)) == (ssize_t)strlen(dev) ? 0 : -1;
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * The address range of module @mod's text, or of the kernel function @fn
 * (from its address to the next symbol's), from /proc/kallsyms.
 */
static int text_range(const char *mod, const char *fn, unsigned long long *lo,
		      unsigned long long *hi)
{
	unsigned long long a, fn_at = 0, next = ~0ULL;
	char line[512], type, name[256], owner[256];
	FILE *f = fopen("/proc/kallsyms", "r");

	*lo = ~0ULL;
	*hi = 0;
	while (f && fgets(line, sizeof(line), f)) {
		owner[0] = 0;
		if (sscanf(line, "%llx %c %255s %255s", &a, &type, name, owner) < 3 || !a)
			continue;
		if (mod && (type == 't' || type == 'T') && !strcmp(owner, mod)) {
			*lo = a < *lo ? a : *lo;
			*hi = a > *hi ? a : *hi;
		}
		if (fn && !owner[0] && !strcmp(name, fn))
			fn_at = a;
		else if (fn && fn_at && a > fn_at && a < next)
			next = a;
	}
	if (f)
		fclose(f);
	if (fn) {
		*lo = fn_at;
		*hi = next;
	} else {
		*hi += 4096;	/* past the start of its last function */
	}
	return *lo && *lo < *hi && *hi != ~0ULL ? 0 : -1;
}

static int write_attr(const char *attr, const char *file, unsigned long long v)
{
	char path[256], val[32];
	int fd, ret;

	snprintf(path, sizeof(path), "/sys/kernel/debug/%s/%s", attr, file);
	snprintf(val, sizeof(val), "%#llx", v);
	fd = open(path, O_WRONLY);
	ret = fd >= 0 && write(fd, val, strlen(val)) > 0 ? 0 : -1;
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * Keep injected faults to stacks through p2pnvme and out of
 * pci_enable_device_flags(); @on false restores "anywhere".
 */
static int filter_faults(int on)
{
	static const char * const attrs[] = { "failslab", "fail_page_alloc" };
	unsigned long long rs = 0, re = ~0ULL, js = 0, je = 0;
	unsigned int i;
	int ret = 0;

	if (on && (text_range("[p2pnvme]", NULL, &rs, &re) ||
		   text_range(NULL, "pci_enable_device_flags", &js, &je)))
		return -1;
	for (i = 0; i < 2; i++) {
		ret |= write_attr(attrs[i], "require-start", rs);
		ret |= write_attr(attrs[i], "require-end", re);
		ret |= write_attr(attrs[i], "reject-start", js);
		ret |= write_attr(attrs[i], "reject-end", je);
	}
	if (on)
		printf("    # faults only under p2pnvme [%#llx, %#llx), not under pci_enable_device_flags [%#llx, %#llx)\n",
		       rs, re, js, je);
	return ret;
}

/*
 * probe of @drv on @dev, through the driver's bind file with the N-th fault
 * failing: a refused probe leaves nothing (@node, and @extra if given).
 */
static void sweep_probe(const char *drv, const char *dev, const char *node, const char *extra,
			int step)
{
	char path[256], drvlink[256];
	int nth, left, bound = 0, refused = 0, bad = 0, fd;

	snprintf(drvlink, sizeof(drvlink), "/sys/bus/pci/devices/%s/driver", dev);
	snprintf(path, sizeof(path), "/sys/bus/pci/drivers/%s/bind", drv);
	for (nth = 1; nth < 5000; nth += step) {
		struct timespec t0, t1;
		double took;

		fd = open(path, O_WRONLY);
		if (fd < 0 || fail_nth(nth))
			break;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (write(fd, dev, strlen(dev)) < 0)
			errno = 0;	/* refused: looked at below */
		left = fail_nth(0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		close(fd);
		took = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (took > 2)
			printf("    # %s probe fault %d: the bind took %.1f s\n", drv, nth, took);
		if (!access(drvlink, F_OK)) {
			bound++;
			if (unbind(drv, dev))
				bad++;
		} else {
			refused++;
			if ((!access(node, F_OK) || (extra && !access(extra, F_OK))) && bad++ < 3)
				printf("    # %s probe fault %d left %s behind\n", drv, nth,
				       access(node, F_OK) ? extra : node);
		}
		if (left > 0)
			break;
	}
	if (step == 1)
		tap(!bad && nth < 5000 && refused > 0,
		    "%s probe: %d fault sites, %d refused cleanly, %d bound anyway", drv, nth - 1,
		    refused, bound);
	else
		tap(!bad && nth < 5000 && refused > 0,
		    "%s probe: every %d-th of %d-%d fault sites (P2P_FAILNTH_STEP): %d refused cleanly, %d bound anyway",
		    drv, step, nth - step, nth - 1, refused, bound);
}

static const char *nvme_bdf;

/* the char devices and this thread's fail-nth, where sweep() finds them */
FIXTURE(devs) {
	int unused;
};

FIXTURE_SETUP(devs)
{
	host = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (host == MAP_FAILED)
		kt_fail("1 MiB of memory: %s", strerror(errno));
	memset(host, 1, 1 << 20);
	bar = open(bar_dev, O_RDWR);
	nvme = open(nvme_dev, O_RDWR);
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (bar < 0 || nvme < 0 || nth_fd < 0 || fail_nth(0) < 0)
		kt_fail("open %s, %s and /proc/thread-self/fail-nth", bar_dev, nvme_dev);
}

FIXTURE_TEARDOWN(devs)
{
	close(nth_fd);
	close(nvme);
	close(bar);
	munmap(host, 1 << 20);
}

TEST_F(failnth, devs, ioctls, sizeof(ops) / sizeof(ops[0]), 120)
{
	unsigned int i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		sweep(&ops[i]);
}

/* probes last: the instances go away and come back many times */
FIXTURE(probe) {
	int unused;
};

FIXTURE_SETUP(probe)
{
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth_fd < 0 || fail_nth(0) < 0)
		kt_fail("open /proc/thread-self/fail-nth");
}

FIXTURE_TEARDOWN(probe)
{
	close(nth_fd);
}

TEST_F(failnth, probe, p2pbar, 1, 120)
{
	char p2pmem[256];

	if (unbind("p2pbar", bdf))
		printf("    # unbind before the probe sweep: %s\n", strerror(errno));
	snprintf(p2pmem, sizeof(p2pmem), "/sys/bus/pci/devices/%s/p2pmem", bdf);
	sweep_probe("p2pbar", bdf, bar_dev, p2pmem, 1);
}

TEST_F(failnth, probe, p2pnvme, !!nvme_bdf, 300)
{
	if (!nvme_bdf)
		kt_skip("no NVMe BDF given");
	if (unbind("p2pnvme", nvme_bdf))
		printf("    # unbind before the probe sweep: %s\n", strerror(errno));
	if (filter_faults(1))
		tap(0, "p2pnvme probe: fault stack filter set up (CONFIG_FAULT_INJECTION_STACKTRACE_FILTER)");
	else
		sweep_probe("p2pnvme", nvme_bdf, nvme_dev, NULL,
			    getenv("P2P_FAILNTH_STEP") ? atoi(getenv("P2P_FAILNTH_STEP")) ?: 1 : 1);
	filter_faults(0);
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: p2pfailnth P2PBAR-DEV BDF P2PNVME-DEV [NVME-BDF]\n");
		return 2;
	}
	bar_dev = argv[1];
	bdf = argv[2];
	nvme_dev = argv[3];
	nvme_bdf = argc == 5 ? argv[4] : NULL;
	return kt_run("failnth");
}
