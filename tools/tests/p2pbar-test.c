// SPDX-License-Identifier: GPL-2.0
/*
 * p2pbar-test: userspace tests of the provider's char device, run in the
 * bench guest. Prints one KTAP suite; asks the host for byte checks over
 * the guest's second serial port (see qemu/hostd.py).
 *
 *   p2pbar-test DEV PCI-BDF NVME-BLK     e.g. /dev/p2pbar0 0000:04:00.0 /dev/nvme0n1
 *
 * P2P_EXPECT=refused in the environment: the topology refuses P2P between
 * the NVMe controller and the BAR, so transfers must fail with EREMOTEIO.
 *   p2pbar-test --removal DEV PCI-BDF    unbind with a live mapping and an open fd
 *   p2pbar-test --unplug DEV PCI-BDF     the same through QEMU device_del (id bar0)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <linux/p2pbar.h>
#include <linux/userfaultfd.h>

#include "harness.h"
#include "libp2p.h"
#include "unpriv.h"

static const char *dev, *bdf, *blk;
static int refused;	/* the bench profile refuses P2P between NVMe and BAR */
static long pgsz;

/*
 * Ask the host (qemu/hostd.py, on the guest's second serial port) to check
 * bytes now, while this process still owns the memory ("check ..."), or to
 * act ("qmp ..."). A check goes through ktap.h's hostcheck(): the host
 * records the result, the guest counts it, and a check the host did not
 * judge fails here. Other commands' replies are printed for the log.
 */
static void host(const char *fmt, ...)
{
	static int fd = -1;
	char line[256], reply[256];
	size_t n = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (!strncmp(line, "check ", 6)) {
		hostcheck("%s", line + 6);
		return;
	}
	if (fd < 0) {
		struct termios t;

		fd = open("/dev/ttyS1", O_RDWR | O_NOCTTY);
		if (fd < 0 || tcgetattr(fd, &t)) {
			tap(0, "open the host line /dev/ttyS1");
			return;
		}
		cfmakeraw(&t);
		tcsetattr(fd, TCSANOW, &t);
	}
	strcat(line, "\n");
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		return;
	while (n < sizeof(reply) - 1 && read(fd, reply + n, 1) == 1 && reply[n] != '\n')
		n++;
	reply[n] = 0;
	printf("    # host: %s\n", reply);
}

/* ioctl that returns -errno or 0 */
static int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static long sysfs_num(const char *attr)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/p2pbar/%s/%s", strrchr(dev, '/') + 1, attr);
	return p2p_sysfs_num(path);
}

static long kernel_available(void)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/p2pmem/available", bdf);
	return p2p_sysfs_num(path);
}

struct snapshot {
	long count, bytes, avail;
};

static struct snapshot snap(void)
{
	struct snapshot s = { sysfs_num("alloc_count"), sysfs_num("alloc_bytes"), kernel_available() };

	return s;
}

static int same(struct snapshot a, struct snapshot b)
{
	return a.count == b.count && a.bytes == b.bytes && a.avail == b.avail;
}

/* Bad input: each gives its errno and changes nothing. */
static void bad_input(int fd)
{
	struct {
		const char *what;
		struct p2pbar_alloc a;
		int err;
	} cases[] = {
		{ "size 0", { .size = 0 }, EINVAL },
		{ "size not a page multiple", { .size = 4097 }, EINVAL },
		{ "size larger than the BAR", { .size = 1ULL << 40 }, ENOSPC },
		{ "huge size", { .size = ~0ULL << 12 }, ENOSPC },
		{ "align not a power of two", { .size = 4096, .align = 3 * 4096 }, EINVAL },
		{ "align below a page", { .size = 4096, .align = 512 }, EINVAL },
		{ "non-zero flags", { .size = 4096, .flags = 1 }, EINVAL },
		{ "non-zero reserved", { .size = 4096, .reserved = 1 }, EINVAL },
		{ "output field preset", { .size = 4096, .handle = 7 }, EINVAL },
	};
	struct snapshot before = snap(), after;
	struct p2pbar_info inf;
	struct p2pbar_verdict v;
	struct p2pbar_free fr;
	unsigned int i;
	int ret;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cases[i].a.argsz = sizeof(cases[i].a);
		ret = xioctl(fd, P2PBAR_IOC_ALLOC, &cases[i].a);
		tap(ret == -cases[i].err, "ALLOC %s -> %s (got %s)", cases[i].what,
		       strerror(cases[i].err), strerror(-ret));
	}
	{
		struct p2pbar_alloc a = { .argsz = 8, .size = 4096 };

		ret = xioctl(fd, P2PBAR_IOC_ALLOC, &a);
		tap(ret == -EINVAL, "ALLOC argsz too small -> EINVAL (got %s)", strerror(-ret));
	}
	ret = xioctl(fd, P2PBAR_IOC_ALLOC, NULL);
	tap(ret == -EFAULT, "ALLOC with a bad pointer -> EFAULT (got %s)", strerror(-ret));
	ret = p2p_bar_free(fd, 12345);
	tap(ret == -ENOENT, "FREE unknown handle -> ENOENT (got %s)", strerror(-ret));
	fr = (struct p2pbar_free){ .argsz = sizeof(fr), .flags = 1 };
	ret = xioctl(fd, P2PBAR_IOC_FREE, &fr);
	tap(ret == -EINVAL, "FREE non-zero flags -> EINVAL (got %s)", strerror(-ret));
	memset(&inf, 0, sizeof(inf));
	inf.argsz = sizeof(inf);
	inf.flags = 2;
	ret = xioctl(fd, P2PBAR_IOC_INFO, &inf);
	tap(ret == -EINVAL, "INFO non-zero flags -> EINVAL (got %s)", strerror(-ret));
	v = (struct p2pbar_verdict){ .argsz = sizeof(v), .client_devid = 0xff07 };
	ret = xioctl(fd, P2PBAR_IOC_VERDICT, &v);
	tap(ret == -ENOENT, "VERDICT absent client -> ENOENT (got %s)", strerror(-ret));
	v = (struct p2pbar_verdict){ .argsz = sizeof(v), .client_domain = 0x10000 };
	ret = xioctl(fd, P2PBAR_IOC_VERDICT, &v);
	tap(ret == -ENOENT, "VERDICT client in an absent domain 0x10000 -> ENOENT, not domain 0 (got %s)",
	       strerror(-ret));
	v = (struct p2pbar_verdict){ .argsz = sizeof(v), .client_devid = 0x10000 };
	ret = xioctl(fd, P2PBAR_IOC_VERDICT, &v);
	tap(ret == -EINVAL, "VERDICT devid above 16 bits -> EINVAL (got %s)", strerror(-ret));
	/* one extension scheme: a larger argsz with a zero tail works, a non-zero tail does not */
	{
		struct { struct p2pbar_info i; uint64_t tail; } big;

		memset(&big, 0, sizeof(big));
		big.i.argsz = sizeof(big);
		ret = xioctl(fd, P2PBAR_IOC_INFO, &big);
		tap(!ret && big.i.size, "INFO with a larger argsz and a zero tail works (%s)",
		       strerror(-ret));
		memset(&big, 0, sizeof(big));
		big.i.argsz = sizeof(big);
		big.tail = 1;
		ret = xioctl(fd, P2PBAR_IOC_INFO, &big);
		tap(ret == -E2BIG, "INFO with a larger argsz and a non-zero tail -> E2BIG (got %s)",
		       strerror(-ret));
	}
	ret = xioctl(fd, _IO(P2PBAR_IOC_MAGIC, 0x7f), NULL);
	tap(ret == -ENOTTY, "unknown ioctl -> ENOTTY (got %s)", strerror(-ret));

	/* mmap that names no allocation, or is private */
	{
		struct p2pbar_alloc a;
		void *p;

		p2p_bar_alloc(fd, 2 * pgsz, 0, &a);
		p = mmap(NULL, pgsz, PROT_READ, MAP_PRIVATE, fd, a.mmap_offset);
		tap(p == MAP_FAILED && errno == EINVAL, "private mmap -> EINVAL");
		p = mmap(NULL, 3 * pgsz, PROT_READ, MAP_SHARED, fd, a.mmap_offset);
		tap(p == MAP_FAILED && errno == EINVAL, "mmap longer than the allocation -> EINVAL");
		p = mmap(NULL, pgsz, PROT_READ, MAP_SHARED, fd, a.mmap_offset + 2 * pgsz);
		tap(p == MAP_FAILED && errno == EINVAL, "mmap past the allocation -> EINVAL");
		p = mmap(NULL, pgsz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.mmap_offset + pgsz);
		tap(p != MAP_FAILED, "mmap of the second page of an allocation");
		if (p != MAP_FAILED)
			munmap(p, pgsz);
		p2p_bar_free(fd, a.handle);
	}
	/* garbage into the writable sysfs file */
	{
		char path[256];
		long pub = sysfs_num("published");
		int sfd;

		snprintf(path, sizeof(path), "/sys/class/p2pbar/%s/published", strrchr(dev, '/') + 1);
		sfd = open(path, O_WRONLY);
		ret = sfd >= 0 && write(sfd, "maybe", 5) < 0 ? -errno : 0;
		if (sfd >= 0)
			close(sfd);
		tap(ret == -EINVAL && sysfs_num("published") == pub,
		       "garbage into published -> EINVAL, unchanged (got %s)", strerror(-ret));
	}
	after = snap();
	tap(same(before, after), "bad input changed nothing (count %ld/%ld, bytes %ld/%ld, available %ld/%ld)",
	       before.count, after.count, before.bytes, after.bytes, before.avail, after.avail);
}

static void data_tests(int fd, const char *blk)
{
	struct p2pbar_info inf;
	struct p2pbar_alloc a, b;
	unsigned char *p;
	uint64_t first_bus;
	size_t i, len = 1 << 20;
	int zero = 1, ret;

	p2p_bar_info(fd, &inf);

	/* CPU writes through the mapping reach the BAR (host reads the file). */
	ret = p2p_bar_alloc(fd, len, 0, &a);
	tap(!ret, "ALLOC 1 MiB (%s)", strerror(-ret));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.mmap_offset);
	tap(p != MAP_FAILED, "mmap the allocation");
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < len; i++)
		zero &= p[i] == 0;
	tap(zero, "fresh allocation reads zeros");
	memset(p, 0x5a, len);
	host("check fill %zu bar0@%llu 0x5a", len,
	       (unsigned long long)(a.bus_addr - inf.bus_addr + inf.offset));
	tap(sysfs_num("alloc_count") == 1 && sysfs_num("alloc_bytes") == (long)len,
	       "sysfs counts one allocation of 1 MiB");
	{
		char path[256], want[128], line[256];
		FILE *f;
		int found = 0;

		snprintf(path, sizeof(path), "/sys/kernel/debug/p2pbar/%s/allocations", bdf);
		snprintf(want, sizeof(want), "0x%llx %zu mmap %d %u live\n",
			 (unsigned long long)a.bus_addr, len, getpid(), a.handle);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			found |= !strcmp(line, want);
		if (f)
			fclose(f);
		tap(found, "debugfs lists the allocation: %.*s", (int)strlen(want) - 1, want);
	}

	/* Zeroing: free, allocate the same region again, it reads zeros. */
	first_bus = a.bus_addr;
	munmap(p, len);
	p2p_bar_free(fd, a.handle);
	tap(sysfs_num("alloc_count") == 0, "freed allocation leaves the count");
	ret = p2p_bar_alloc(fd, len, 0, &b);
	tap(!ret && b.bus_addr == first_bus, "reallocation gets the same region (%#llx)",
	       (unsigned long long)b.bus_addr);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, b.mmap_offset);
	zero = p != MAP_FAILED;
	for (i = 0; zero && i < len; i++)
		zero &= p[i] == 0;
	tap(zero, "reallocated region reads zeros, not the previous owner's bytes");
	if (p != MAP_FAILED)
		munmap(p, len);
	p2p_bar_free(fd, b.handle);

	/* Alignment */
	ret = p2p_bar_alloc(fd, 2 * pgsz, 2 << 20, &a);
	tap(!ret && !(a.bus_addr % (2 << 20)), "ALLOC with 2 MiB alignment is aligned (%#llx)",
	       (unsigned long long)a.bus_addr);
	p2p_bar_free(fd, a.handle);

	/* A mapping outlives FREE; the memory returns when it is unmapped. */
	{
		long avail0 = kernel_available();

		p2p_bar_alloc(fd, len, 0, &a);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.mmap_offset);
		p[0] = 1;
		p2p_bar_free(fd, a.handle);
		p[len - 1] = 2;	/* still valid: the mapping holds the pages */
		tap(kernel_available() == avail0 - (long)len && sysfs_num("alloc_count") == 1,
		       "mapped memory stays allocated after FREE");
		munmap(p, len);
		tap(kernel_available() == avail0 && sysfs_num("alloc_count") == 0,
		       "memory returns to the pool when the last mapping goes");
	}

	/* Closing the fd frees its allocations. */
	{
		int fd2 = open(dev, O_RDWR);

		p2p_bar_alloc(fd2, len, 0, &a);
		tap(sysfs_num("alloc_count") == 1, "allocation on a second fd counted");
		close(fd2);
		tap(sysfs_num("alloc_count") == 0, "closing the fd frees its allocations");
	}

	/*
	 * The kernel's nvme driver DMAs into the mapping (O_DIRECT,
	 * FOLL_PCI_P2PDMA), or refuses with EREMOTEIO where the topology
	 * does not allow P2P (P2P_EXPECT=refused) and moves nothing.
	 */
	{
		int bfd = open(blk, O_RDWR | O_DIRECT);
		unsigned long long boff;
		ssize_t r;

		p2p_bar_alloc(fd, 256 << 10, 0, &a);
		boff = a.bus_addr - inf.bus_addr + inf.offset;
		p = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.mmap_offset);
		r = pread(bfd, p, 256 << 10, 4 << 20);
		if (refused) {
			tap(r < 0 && errno == EREMOTEIO, "O_DIRECT read into p2pmem refused: %s",
			       r < 0 ? strerror(errno) : "it succeeded");
			host("check absent %d nvme0@%d bar0", 256 << 10, 4 << 20);
		} else {
			tap(r == 256 << 10, "O_DIRECT read of 256 KiB from %s into p2pmem (%s)",
			       blk, r < 0 ? strerror(errno) : "ok");
			host("check equal %d bar0@%llu nvme0@%d", 256 << 10, boff, 4 << 20);
		}
		memset(p, 0xc3, 128 << 10);
		r = pwrite(bfd, p, 128 << 10, 8 << 20);
		if (refused) {
			tap(r < 0 && errno == EREMOTEIO, "O_DIRECT write from p2pmem refused: %s",
			       r < 0 ? strerror(errno) : "it succeeded");
			host("check pristine %d nvme0@%d", 128 << 10, 8 << 20);
		} else {
			tap(r == 128 << 10, "O_DIRECT write of 128 KiB from p2pmem to %s (%s)",
			       blk, r < 0 ? strerror(errno) : "ok");
			host("check fill %d nvme0@%d 0xc3", 128 << 10, 8 << 20);
		}
		munmap(p, 256 << 10);
		p2p_bar_free(fd, a.handle);
		close(bfd);
	}
}

/*
 * What existing p2pmem tools do (p2pmem-pci's /dev/p2pmemN, the kernel's
 * p2pmem/allocate): open, mmap at offset 0, use, munmap. No ALLOC: the
 * mapping allocates zeroed memory and frees it when it goes. The kernel's
 * nvme driver moves data in and out of it (O_DIRECT); the host checks the
 * image; p2pbar's available agrees with the kernel's p2pmem/available.
 */
static void mmap_allocates(const char *blk)
{
	size_t len = 1 << 20, i;
	struct snapshot before = snap();
	long avail = sysfs_num("available");
	int fd = open(dev, O_RDWR), rofd = open(dev, O_RDONLY), bfd, zero = 1, same_bytes;
	unsigned char *p, *q, *ref;
	ssize_t r;

	tap(avail == before.avail, "sysfs available %ld = the kernel's p2pmem/available %ld",
	       avail, before.avail);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	tap(p != MAP_FAILED, "mmap at offset 0 without ALLOC allocates (%s)",
	       p == MAP_FAILED ? strerror(errno) : "ok");
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < len; i++)
		zero &= p[i] == 0;
	tap(zero, "... zeroed memory");
	tap(sysfs_num("alloc_count") == before.count + 1 &&
	       sysfs_num("available") == avail - (long)len &&
	       kernel_available() == before.avail - (long)len,
	       "... counted: alloc_count +1, available and p2pmem/available -1 MiB");
	q = mmap(NULL, len, PROT_READ, MAP_SHARED, rofd, 0);
	tap(q == MAP_FAILED && errno == EACCES, "... not on a read-only fd -> EACCES (got %s)",
	       q == MAP_FAILED ? strerror(errno) : "a mapping");
	q = mmap(NULL, pgsz, PROT_READ, MAP_SHARED, fd, pgsz);
	tap(q == MAP_FAILED && errno == EINVAL, "an offset other than 0 naming nothing -> EINVAL");

	bfd = open(blk, O_RDWR | O_DIRECT);
	ref = aligned_alloc(4096, len);
	memset(p, 0x3c, len);
	r = pwrite(bfd, p, len, 12 << 20);
	if (refused) {
		tap(r < 0 && errno == EREMOTEIO, "O_DIRECT write from the mapping refused: %s",
		       r < 0 ? strerror(errno) : "it succeeded");
		host("check pristine %zu nvme0@%d", len, 12 << 20);
	} else {
		tap(r == (ssize_t)len, "O_DIRECT write of 1 MiB from the mapping to %s (%s)", blk,
		       r < 0 ? strerror(errno) : "ok");
		host("check fill %zu nvme0@%d 0x3c", len, 12 << 20);
		/* and back: the same bytes as a read into host memory */
		r = pread(bfd, p, len, 4 << 20);
		same_bytes = r == (ssize_t)len && pread(bfd, ref, len, 4 << 20) == (ssize_t)len &&
			     !memcmp(p, ref, len);
		tap(same_bytes, "O_DIRECT read into the mapping gets what a host read gets");
	}
	free(ref);
	close(bfd);
	munmap(p, len);
	close(rofd);
	close(fd);
	tap(same(before, snap()) && sysfs_num("available") == avail,
	       "munmap freed it: counters and available as before");
}

/*
 * The ALLOC result is copied out to a page that is write-protected with
 * userfaultfd: the copy stalls. Meanwhile a second thread FREEs the handle
 * the ALLOC is about to return (the lowest free one), unmaps the page and
 * lets the copy fail. The handle must not have been usable (ENOENT), the
 * ALLOC fails with EFAULT and leaves nothing behind. Before the fix the
 * FREE worked and the ALLOC's undo freed the allocation a second time.
 */
struct race {
	int uffd, fd;
	uint32_t handle;
	void *page;
	int free_ret, woke;
};

static void *race_thread(void *arg)
{
	struct race *r = arg;
	struct pollfd pfd = { .fd = r->uffd, .events = POLLIN };
	struct uffd_msg msg;
	struct uffdio_range range = { (unsigned long)r->page, pgsz };

	if (poll(&pfd, 1, 10000) != 1 || read(r->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	r->woke = 1;
	r->free_ret = p2p_bar_free(r->fd, r->handle);
	munmap(r->page, pgsz);
	ioctl(r->uffd, UFFDIO_WAKE, &range);
	return NULL;
}

static void alloc_copyout_race(int fd)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { .mode = UFFDIO_WRITEPROTECT_MODE_WP };
	struct snapshot before, after;
	struct race r = { .fd = fd, .free_ret = 1 };
	struct p2pbar_alloc probe, *arg;
	pthread_t t;
	int ret;

	r.uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (r.uffd < 0 || ioctl(r.uffd, UFFDIO_API, &api)) {
		tap(0, "userfaultfd for the ALLOC race (%s)", strerror(errno));
		return;
	}
	/* the next ALLOC gets the lowest free handle: this one */
	if (p2p_bar_alloc(fd, pgsz, 0, &probe) || p2p_bar_free(fd, probe.handle)) {
		tap(0, "probe allocation for the ALLOC race");
		return;
	}
	r.handle = probe.handle;
	before = snap();

	r.page = mmap(NULL, pgsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	arg = r.page;
	memset(arg, 0, sizeof(*arg));
	arg->argsz = sizeof(*arg);
	arg->size = 2 * pgsz;
	reg.range.start = wp.range.start = (unsigned long)r.page;
	reg.range.len = wp.range.len = pgsz;
	if (ioctl(r.uffd, UFFDIO_REGISTER, &reg) || ioctl(r.uffd, UFFDIO_WRITEPROTECT, &wp)) {
		tap(0, "write-protect the ALLOC argument with userfaultfd (%s)", strerror(errno));
		return;
	}
	pthread_create(&t, NULL, race_thread, &r);
	ret = xioctl(fd, P2PBAR_IOC_ALLOC, arg);
	pthread_join(t, NULL);
	close(r.uffd);
	after = snap();
	tap(r.woke, "the ALLOC's copy-out stalled in userfaultfd");
	tap(ret == -EFAULT, "ALLOC whose copy-out fails -> EFAULT (got %s)", strerror(-ret));
	tap(r.free_ret == -ENOENT, "FREE of the handle during the copy-out -> ENOENT: not published yet (got %s)",
	       strerror(-r.free_ret));
	tap(same(before, after), "the failed ALLOC left nothing behind (count %ld/%ld, available %ld/%ld)",
	       before.count, after.count, before.avail, after.avail);
}

/* An fd opened read-only may look, not allocate, free or export. */
static void read_only_fd(void)
{
	struct snapshot before = snap();
	struct p2pbar_export e = { .argsz = sizeof(e), .size = 4096 };
	struct p2pbar_alloc a;
	struct p2pbar_info inf;
	int fd = open(dev, O_RDONLY), ret;

	tap(fd >= 0, "open %s read-only", dev);
	ret = p2p_bar_info(fd, &inf);
	tap(!ret, "INFO on a read-only fd works (%s)", strerror(-ret));
	ret = p2p_bar_alloc(fd, pgsz, 0, &a);
	tap(ret == -EBADF, "ALLOC on a read-only fd -> EBADF (got %s)", strerror(-ret));
	ret = p2p_bar_free(fd, 1);
	tap(ret == -EBADF, "FREE on a read-only fd -> EBADF (got %s)", strerror(-ret));
	ret = xioctl(fd, P2PBAR_IOC_EXPORT, &e);
	tap(ret == -EBADF, "EXPORT on a read-only fd -> EBADF, no writable dma-buf (got %s)",
	       strerror(-ret));
	close(fd);
	tap(same(before, snap()), "the read-only fd changed nothing");
}

/*
 * The pool is shared with the kernel's own p2pmem/allocate (and nvmet),
 * which hand memory out without zeroing it: what p2pbar frees must be
 * zero by then. Write a pattern, free, take the whole free pool through
 * p2pmem/allocate: zeros only.
 */
static void zeroed_for_the_pool(int fd)
{
	size_t len = 1 << 20, i, avail;
	struct p2pbar_alloc a;
	volatile uint64_t *q;
	char path[256];
	uint64_t bad = 0;
	void *p;
	int sfd;

	if (p2p_bar_alloc(fd, len, 0, &a)) {
		tap(0, "ALLOC for the pool test");
		return;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.mmap_offset);
	if (p == MAP_FAILED)
		return;
	memset(p, 0xa5, len);
	munmap(p, len);
	p2p_bar_free(fd, a.handle);

	avail = kernel_available();
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/p2pmem/allocate", bdf);
	sfd = open(path, O_RDWR);
	q = sfd < 0 ? MAP_FAILED : mmap(NULL, avail, PROT_READ, MAP_SHARED, sfd, 0);
	tap(q != MAP_FAILED, "the kernel's p2pmem/allocate maps all %zu free bytes", avail);
	if (q == MAP_FAILED) {
		close(sfd);
		return;
	}
	for (i = 0; i < avail / 8; i++)
		bad += q[i] != 0;
	tap(!bad, "p2pmem/allocate sees zeros where p2pbar's freed pattern was (%llu words not)",
	       (unsigned long long)bad);
	munmap((void *)q, avail);
	close(sfd);
}

/*
 * Zeroing a large allocation is uncached MMIO on real hardware (seconds for
 * GiBs): it must not hold the instance lock. A second thread keeps asking
 * INFO, on another fd, while a 48 MiB ALLOC zeroes; it must keep getting
 * answers (the old code made it wait for the whole zeroing).
 */
struct poller {
	int fd;
	volatile int stop;
	double worst;
	long n;
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *info_poller(void *arg)
{
	struct poller *p = arg;
	struct p2pbar_info i;

	while (!p->stop) {
		double t0 = now_ms(), dt;

		p2p_bar_info(p->fd, &i);
		dt = now_ms() - t0;
		if (dt > p->worst)
			p->worst = dt;
		p->n++;
	}
	return NULL;
}

/* One 48 MiB ALLOC with INFO polled meanwhile: 0 or -errno; *@took and *@worst in ms. */
static int zeroing_round(int fd, double *took, double *worst, long *calls)
{
	struct poller p = { .fd = open(dev, O_RDONLY) };
	struct p2pbar_alloc a;
	double t0;
	pthread_t t;
	int ret;

	pthread_create(&t, NULL, info_poller, &p);
	usleep(20000);
	t0 = now_ms();
	ret = p2p_bar_alloc(fd, 48 << 20, 0, &a);
	*took = now_ms() - t0;
	usleep(5000);
	p.stop = 1;
	pthread_join(t, NULL);
	close(p.fd);
	if (!ret)
		p2p_bar_free(fd, a.handle);
	*worst = p.worst;
	*calls = p.n;
	return ret;
}

/*
 * INFO answers while an ALLOC zeroes (the zeroing runs outside the
 * instance lock). One INFO stalled by the scheduler for a few ms is noise
 * when the whole zeroing takes 15 ms, as it does on a fast machine: up to
 * three rounds, and one where no INFO waited for half of the zeroing
 * suffices. Zeroing under the lock stalls INFO for all of it, every round.
 */
static void zeroing_not_under_lock(int fd)
{
	double took = 0, worst = 0;
	long calls = 0;
	int round, ret = 0;

	for (round = 1; round <= 3; round++) {
		ret = zeroing_round(fd, &took, &worst, &calls);
		if (ret || took < 10 || worst < took / 2)
			break;
		printf("    # round %d: an INFO waited %.1f ms of the %.1f ms zeroing\n", round,
		       worst, took);
	}
	/* the ALLOC's own case: a failure must never read as a SKIP of the next */
	tap(!ret, "a 48 MiB ALLOC with INFO polled meanwhile (%s)", strerror(-ret));
	if (ret) {
		tap(1, "INFO during a 48 MiB ALLOC # SKIP the ALLOC failed");
		return;
	}
	if (took < 10) {
		tap(1, "INFO during a 48 MiB ALLOC # SKIP the ALLOC took %.1f ms: too fast to tell",
		    took);
		return;
	}
	tap(worst < took / 2,
	       "INFO kept answering (worst %.1f ms, %ld calls) while a 48 MiB ALLOC zeroed for %.1f ms",
	       worst, calls, took);
}

/*
 * Who may do what, as uid/gid 65534 (unpriv.h). First the node's default
 * mode refuses the user, and the path to it does not (else the EACCES
 * would be the path's: the bench's / was once 0700, and the old test
 * passed whatever the node's mode). Then the node is given to a group the
 * user is in, as packaging/udev/70-p2pdma.rules does: the driver's own
 * checks must refuse what a read-only fd may not do, and keep one user's
 * allocations from another's file.
 */
#define TEST_GID	990	/* stands for the udev rule's group (groupadd --system p2p) */

enum { U_STAT, U_OPEN, U_INFO, U_ALLOC, U_FREE, U_EXPORT, U_MMAP, U_USE };

struct uop {
	int op;
	const char *path;	/* U_STAT */
	int oflags;		/* the others open dev with these */
	uint32_t handle;	/* U_FREE */
	off_t off;		/* U_MMAP */
};

/* In the unprivileged child: 0 or the errno of @p's operation. */
static int as_user(void *p)
{
	const struct uop *u = p;
	struct p2pbar_export e = { .argsz = sizeof(e), .size = 4096 };
	struct p2pbar_alloc a;
	struct p2pbar_info i;
	volatile unsigned char *m;
	struct stat st;
	int fd, ret = 0;

	if (u->op == U_STAT)
		return stat(u->path, &st) ? errno : 0;
	fd = open(dev, u->oflags);
	if (fd < 0)
		return errno;
	switch (u->op) {
	case U_INFO:
		ret = -p2p_bar_info(fd, &i);
		break;
	case U_ALLOC:
		ret = -p2p_bar_alloc(fd, pgsz, 0, &a);
		break;
	case U_FREE:
		ret = -p2p_bar_free(fd, u->handle);
		break;
	case U_EXPORT:
		ret = -xioctl(fd, P2PBAR_IOC_EXPORT, &e);
		break;
	case U_MMAP:
		m = mmap(NULL, pgsz, PROT_READ, MAP_SHARED, fd, u->off);
		ret = m == MAP_FAILED ? errno : 0;
		break;
	case U_USE:	/* allocate, map, write, read back, free */
		ret = -p2p_bar_alloc(fd, pgsz, 0, &a);
		if (ret)
			break;
		m = mmap(NULL, pgsz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.mmap_offset);
		if (m == MAP_FAILED) {
			ret = errno;
			break;
		}
		m[0] = 0x5a;
		ret = m[0] == 0x5a ? -p2p_bar_free(fd, a.handle) : EIO;
		break;
	}
	close(fd);
	return ret;
}

/* One row: @u run as the unprivileged user (with TEST_GID if @in_group) gives @want. */
static void as_user_row(int in_group, struct uop u, int want, const char *what)
{
	static const gid_t g = TEST_GID;
	int got = unpriv_run_groups(&g, in_group, as_user, &u);

	tap(got == want, "%s -> %s (got %s)", what, want ? strerror(want) : "success",
	       unpriv_str(got));
}

static void privileges(int fd)
{
	struct p2pbar_alloc a[2], *mine;
	struct stat st = { 0 };
	int ok;

	ok = !stat(dev, &st) && (st.st_mode & 07777) == 0600 && !st.st_uid && !st.st_gid;
	tap(ok, "%s is 0600 root:root to begin with (%o %u:%u)", dev,
	       (unsigned int)(st.st_mode & 07777), st.st_uid, st.st_gid);
	/* stat("/") needs no permission; these need search permission on / and /dev */
	as_user_row(0, (struct uop){ .op = U_STAT, .path = "/dev" }, 0,
		    "uid 65534: stat /dev (the path is reachable)");
	as_user_row(0, (struct uop){ .op = U_STAT, .path = dev }, 0,
		    "uid 65534: stat of the node (the path is reachable)");
	as_user_row(0, (struct uop){ .op = U_OPEN, .oflags = O_RDWR }, EACCES,
		    "uid 65534: open read-write, mode 0600");
	as_user_row(0, (struct uop){ .op = U_OPEN, .oflags = O_RDONLY }, EACCES,
		    "uid 65534: open read-only, mode 0600");

	/* the node as the udev rule makes it: 0660, its group one the user is in */
	if (chown(dev, 0, TEST_GID) || chmod(dev, 0660)) {
		tap(0, "chown root:%d and chmod 0660 %s: %s", TEST_GID, dev, strerror(errno));
		goto restore;
	}
	as_user_row(0, (struct uop){ .op = U_OPEN, .oflags = O_RDONLY }, EACCES,
		    "0660, group 990: uid 65534 outside the group, open read-only");
	as_user_row(1, (struct uop){ .op = U_INFO, .oflags = O_RDONLY }, 0,
		    "0660, group 990: a group member's read-only fd, INFO");
	as_user_row(1, (struct uop){ .op = U_ALLOC, .oflags = O_RDONLY }, EBADF,
		    "0660, group 990: a group member's read-only fd, ALLOC");
	as_user_row(1, (struct uop){ .op = U_FREE, .oflags = O_RDONLY, .handle = 1 }, EBADF,
		    "0660, group 990: a group member's read-only fd, FREE");
	as_user_row(1, (struct uop){ .op = U_EXPORT, .oflags = O_RDONLY }, EBADF,
		    "0660, group 990: a group member's read-only fd, EXPORT");
	as_user_row(1, (struct uop){ .op = U_MMAP, .oflags = O_RDONLY }, EACCES,
		    "0660, group 990: a group member's read-only fd, mmap at 0 (allocates)");
	as_user_row(1, (struct uop){ .op = U_USE, .oflags = O_RDWR }, 0,
		    "0660, group 990: a group member's read-write fd, ALLOC, map, write, FREE");

	/* root's allocation, not at offset 0 (which would allocate instead) */
	if (p2p_bar_alloc(fd, pgsz, 0, &a[0]) || p2p_bar_alloc(fd, pgsz, 0, &a[1])) {
		tap(0, "two ALLOCs as root");
		goto restore;
	}
	mine = a[0].mmap_offset ? &a[0] : &a[1];
	as_user_row(1, (struct uop){ .op = U_FREE, .oflags = O_RDWR, .handle = mine->handle },
		    ENOENT, "0660, group 990: a group member cannot FREE root's handle");
	as_user_row(1, (struct uop){ .op = U_MMAP, .oflags = O_RDWR, .off = mine->mmap_offset },
		    EINVAL, "0660, group 990: a group member cannot map root's allocation");
	tap(!p2p_bar_free(fd, a[0].handle) && !p2p_bar_free(fd, a[1].handle),
	       "root's allocations are still there: FREE works");

restore:
	ok = !chown(dev, 0, 0) && !chmod(dev, 0600) && !stat(dev, &st) &&
	     (st.st_mode & 07777) == 0600 && !st.st_gid;
	tap(ok, "%s is 0600 root:root again", dev);
}

static sigjmp_buf jb;
static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/*
 * Removal: a child keeps a mapping (pages faulted in) and an open fd; the
 * parent unbinds the device. Unbind must finish within 20 s, the child's
 * next access must raise SIGBUS and its ioctls must fail with ENODEV.
 */
static void removal(int unplug)
{
	int fd = open(dev, O_RDWR), go[2], done[2], st;
	struct p2pbar_alloc a;
	char path[256], c;
	struct timespec t0, t1;
	pid_t pid;
	int ufd;

	tap(fd >= 0, "open %s", dev);
	tap(!p2p_bar_alloc(fd, 64 * pgsz, 0, &a), "ALLOC before removal");
	if (pipe(go) || pipe(done))
		return;
	pid = fork();
	if (!pid) {
		volatile unsigned char *p = mmap(NULL, 64 * pgsz, PROT_READ | PROT_WRITE,
						 MAP_SHARED, fd, a.mmap_offset);
		volatile int code = 0;

		if (p == MAP_FAILED)
			_exit(10);
		p[0] = 0x11;			/* fault in */
		if (write(done[1], "m", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(11);
		signal(SIGBUS, on_sigbus);
		if (!sigsetjmp(jb, 1)) {
			p[pgsz] = 0x22;		/* must not succeed */
			code |= 1;
		}
		if (!sigsetjmp(jb, 1)) {
			(void)p[0];		/* zapped: faults again */
			code |= 2;
		}
		if (p2p_bar_alloc(fd, pgsz, 0, &a) != -ENODEV)
			code |= 4;
		_exit(code);
	}
	if (read(done[0], &c, 1) != 1)
		return;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (unplug) {
		/* QEMU's device_del; the guest's pciehp removes the function */
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", bdf);
		host("qmp device_del {\"id\": \"bar0\"}");
		do {
			usleep(100000);
			clock_gettime(CLOCK_MONOTONIC, &t1);
		} while (!access(path, F_OK) && t1.tv_sec - t0.tv_sec < 60);
		tap(access(path, F_OK), "hot-unplug with a live mapping and an open fd removed %s", bdf);
	} else {
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver/unbind", bdf);
		ufd = open(path, O_WRONLY);
		tap(ufd >= 0 && write(ufd, bdf, strlen(bdf)) == (ssize_t)strlen(bdf),
		       "unbind with a live mapping and an open fd");
		if (ufd >= 0)
			close(ufd);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	tap(t1.tv_sec - t0.tv_sec < (unplug ? 60 : 20), "removal completed in %ld s",
	       (long)(t1.tv_sec - t0.tv_sec));
	if (write(go[1], "g", 1) != 1)
		return;
	waitpid(pid, &st, 0);
	tap(WIFEXITED(st) && !(WEXITSTATUS(st) & 1), "write to an unfaulted page after removal raises SIGBUS");
	tap(WIFEXITED(st) && !(WEXITSTATUS(st) & 2), "access to a zapped page after removal raises SIGBUS");
	tap(WIFEXITED(st) && !(WEXITSTATUS(st) & 4), "ALLOC after removal -> ENODEV");
	tap(p2p_bar_alloc(fd, pgsz, 0, &a) == -ENODEV, "ioctl on the old fd -> ENODEV");
	tap(mmap(NULL, pgsz, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED, "mmap on the old fd fails");
	close(fd);
	tap(open(dev, O_RDWR) < 0, "the device node is gone");
}

/* the char device, read-write */
FIXTURE(bar) {
	int fd;
};

FIXTURE_SETUP(bar)
{
	self->fd = open(dev, O_RDWR);
	if (self->fd < 0)
		kt_fail("open %s: %s", dev, strerror(errno));
}

FIXTURE_TEARDOWN(bar)
{
	close(self->fd);
}

TEST(provider, open_info, 2, 30)
{
	struct p2pbar_info i;
	int fd = open(dev, O_RDWR), ret;

	tap(fd >= 0, "open %s", dev);
	if (fd < 0)
		return;
	ret = p2p_bar_info(fd, &i);
	tap(!ret && i.bar == 2 && i.size == 64 << 20 && i.offset == 0 &&
	    (i.flags & P2PBAR_INFO_F_PUBLISHED),
	    "INFO: BAR %u, %llu bytes, published", i.bar, (unsigned long long)i.size);
	close(fd);
}

TEST_F(provider, bar, bad_input, 26, 60)
{
	bad_input(self->fd);
}

TEST_F(provider, bar, alloc_copyout_race, 4, 60)
{
	alloc_copyout_race(self->fd);
}

TEST(provider, read_only_fd, 6, 30)
{
	read_only_fd();
}

TEST_F(provider, bar, data, 15, 60)
{
	data_tests(self->fd, blk);
}

TEST(provider, mmap_allocates, refused ? 8 : 9, 60)
{
	mmap_allocates(blk);
}

TEST_F(provider, bar, zeroed_for_the_pool, 2, 60)
{
	zeroed_for_the_pool(self->fd);
}

TEST_F(provider, bar, zeroing_not_under_lock, 2, 60)
{
	zeroing_not_under_lock(self->fd);
}

TEST_F(provider, bar, privileges, 16, 60)
{
	privileges(self->fd);
}

TEST(provider_removal, removal, 10, 60)
{
	removal(0);
}

TEST(provider_unplug, unplug, 10, 120)
{
	removal(1);
}

/* one suite between the markers the bench collects (qemu/ktap.py) */
static int run(const char *suite)
{
	int ret;

	printf("<<<KTAP-BEGIN guest.%s>>>\n", suite);
	ret = kt_run(suite);
	printf("<<<KTAP-END>>>\n");
	return ret;
}

int main(int argc, char **argv)
{
	pgsz = sysconf(_SC_PAGESIZE);
	refused = getenv("P2P_EXPECT") && !strcmp(getenv("P2P_EXPECT"), "refused");
	if (argc == 4 && (!strcmp(argv[1], "--removal") || !strcmp(argv[1], "--unplug"))) {
		dev = argv[2];
		bdf = argv[3];
		return run(!strcmp(argv[1], "--unplug") ? "provider_unplug" : "provider_removal");
	}
	if (argc != 4) {
		fprintf(stderr, "usage: p2pbar-test DEV BDF NVME-BLK | --removal|--unplug DEV BDF\n");
		return 2;
	}
	dev = argv[1];
	bdf = argv[2];
	blk = argv[3];
	return run("provider");
}
