// SPDX-License-Identifier: GPL-2.0
/*
 * p2pdmabuf-test: the dma-buf bridge between p2pbar (exporter) and p2pnvme
 * (importer), with KTAP output.
 *
 *   p2pdmabuf-test /dev/p2pbarN /dev/p2pnvmeN BAR_BDF
 *
 * Bad P2PBAR_IOC_EXPORT and P2PNVME_IO_F_DMABUF requests get their errno;
 * NVMe LBA 2048.. (256 KiB) is read into exported p2pmem and written back
 * from it to LBA 61440.. (the caller compares the two ranges in the image
 * file); a batch of reads lands in a dma-buf; host memory from udmabuf is
 * imported too. The dma-buf is mmapped: it reads zeros, a pattern written
 * through it is what the host sees in the BAR's backing file, private and
 * oversized mappings are refused. Last, the provider is unbound while a
 * child keeps I/O going into the dma-buf: the unbind returns, the child's
 * I/O ends with ENODEV, the CPU mapping raises SIGBUS, and later use of the
 * dma-buf fails with ENODEV.
 *
 *   p2pdmabuf-test --fence-error /dev/p2pbarN /dev/p2pnvmeN SLBA LEN ERRNO
 *
 * A read of LEN bytes at SLBA into a dma-buf that the caller has made fail
 * with ERRNO (a throttled controller and a short io_timeout_ms: ETIMEDOUT):
 * a sync_file exported from the dma-buf while the read runs holds the
 * client's write fence, unsignalled; it signals when the read ends, with
 * the error (the kernel's sync_file reports the fence's status).
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

#include <poll.h>

#include <linux/dma-buf.h>
#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>
#include <linux/sync_file.h>
#include <linux/udmabuf.h>

#include "harness.h"
#include "libp2p.h"

#define MMAP_SIZE (1 << 20)

static int export(int bar, struct p2pbar_export e)
{
	e.argsz = e.argsz ? e.argsz : sizeof(e);
	if (ioctl(bar, P2PBAR_IOC_EXPORT, &e))
		return -errno;
	return e.fd;
}

/* One transfer between LBAs and a dma-buf; 0 or errno. */
static int dmabuf_io(int nvme, int op, uint64_t slba, uint64_t len, int dfd, uint64_t off,
		     uint32_t flags)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = op, .slba = slba, .len = len,
				 .addr = off, .dmabuf_fd = dfd,
				 .flags = P2PNVME_IO_F_DMABUF | flags };

	return ioctl(nvme, P2PNVME_IOC_IO, &io) ? errno : 0;
}

static const char *bar_path, *nvme_path, *bar_bdf;

/* the provider's and the client's char devices */
FIXTURE(devs) {
	int bar, nvme;
};

FIXTURE_SETUP(devs)
{
	self->bar = open(bar_path, O_RDWR);
	self->nvme = open(nvme_path, O_RDWR);
	if (self->bar < 0 || self->nvme < 0)
		kt_fail("open %s, %s: %s", bar_path, nvme_path, strerror(errno));
}

FIXTURE_TEARDOWN(devs)
{
	close(self->nvme);
	close(self->bar);
}

TEST_F(client_dmabuf_api, devs, export_refused, 7, 30)
{
	int bar = self->bar;
	struct {
		const char *what;
		struct p2pbar_export e;
		int err;
	} cases[] = {
		{ "export: unknown flag", { .flags = 1 << 5, .size = 4096 }, EINVAL },
		{ "export: zero size", { .size = 0 }, EINVAL },
		{ "export: size not a page multiple", { .size = 4097 }, EINVAL },
		{ "export: fd preset", { .size = 4096, .fd = 3 }, EINVAL },
		{ "export: reserved set", { .size = 4096, .reserved = 1 }, EINVAL },
		{ "export: argsz too small", { .argsz = 8, .size = 4096 }, EINVAL },
		{ "export: more than the BAR holds", { .size = 1ULL << 40 }, ENOSPC },
	};
	unsigned int i;
	int ret;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ret = export(bar, cases[i].e);
		if (ret >= 0)
			close(ret);
		result(ret == -cases[i].err, cases[i].what, cases[i].err, ret < 0 ? -ret : 0);
	}
}

static void import_cases(int nvme, int dfd, int other_fd)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .len = 4096,
				 .dmabuf_fd = dfd };
	int ret;

	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 0, 4096, -1, 0, 0);
	result(ret == EINVAL, "import: negative fd", EINVAL, ret);
	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 0, 4096, 1000, 0, 0);
	result(ret == EBADF, "import: fd not open", EBADF, ret);
	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 0, 4096, other_fd, 0, 0);
	result(ret == EINVAL, "import: fd not a dma-buf", EINVAL, ret);
	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 0, 8192, dfd, (1 << 20) - 4096, 0);
	result(ret == EINVAL, "import: range past the dma-buf's end", EINVAL, ret);
	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 0, 4096, dfd, 2, 0);
	result(ret == EINVAL, "import: offset not dword aligned", EINVAL, ret);
	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 0, 4096, dfd, 0, P2PNVME_IO_F_BOUNCE);
	result(ret == EINVAL, "import: bounce forced on a dma-buf", EINVAL, ret);
	io.addr = 0x10000;	/* fd given without P2PNVME_IO_F_DMABUF */
	ret = ioctl(nvme, P2PNVME_IOC_IO, &io) ? errno : 0;
	result(ret == EINVAL, "import: dmabuf_fd without the flag", EINVAL, ret);
}

/*
 * Host memory as a dma-buf: the same bytes as a plain host-memory read.
 * Under swiotlb (every confidential guest) udmabuf's mapping bounces and
 * nobody syncs it for our transfers (DMA_ATTR_SKIP_CPU_SYNC): refused with
 * EOPNOTSUPP, the buffer untouched.
 */
static void udmabuf_case(int nvme)
{
	int swiotlb = getenv("P2P_SWIOTLB") && *getenv("P2P_SWIOTLB");
	struct udmabuf_create c = { .size = 1 << 20 };
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .slba = 2048,
				 .len = 1 << 18 };
	unsigned char *a, *ref;
	int mfd, u, dfd, ret, i;

	mfd = memfd_create("p2pdmabuf-test", MFD_ALLOW_SEALING);
	u = open("/dev/udmabuf", O_RDWR);
	if (mfd < 0 || u < 0 || ftruncate(mfd, 1 << 20) ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		result(0, "udmabuf: setup", 0, errno);
		return;
	}
	c.memfd = mfd;
	dfd = ioctl(u, UDMABUF_CREATE, &c);
	a = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ref = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (dfd < 0 || a == MAP_FAILED || ref == MAP_FAILED) {
		result(0, "udmabuf: setup", 0, errno);
		return;
	}
	memset(a, 0xee, 1 << 20);
	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 2048, 1 << 18, dfd, 4096, 0);
	if (swiotlb) {
		for (i = 0; i < 1 << 20 && a[i] == 0xee; i++)
			;
		result(ret == EOPNOTSUPP && i == 1 << 20,
		       "udmabuf under swiotlb: refused (EOPNOTSUPP), the buffer untouched",
		       EOPNOTSUPP, ret);
		goto out;
	}
	io.addr = (uintptr_t)ref;
	if (!ret)
		ret = ioctl(nvme, P2PNVME_IOC_IO, &io) ? errno : 0;
	if (!ret && (memcmp(a + 4096, ref, 1 << 18) || a[0] != 0xee || a[4096 + (1 << 18)] != 0xee))
		ret = EILSEQ;
	result(!ret, "udmabuf: host memory imported as a dma-buf gets the bytes a host read gets",
	       0, ret);
out:
	munmap(a, 1 << 20);
	munmap(ref, 1 << 20);
	close(dfd);
	close(u);
	close(mfd);
}

/* The CPU address of BAR 2 of @bdf (bus == CPU address on the bench). */
static uint64_t bar_start(const char *bdf)
{
	char path[128], line[128];
	unsigned long long start = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bdf);
	f = fopen(path, "r");
	for (i = 0; f && fgets(line, sizeof(line), f); i++)
		if (i == 2)
			sscanf(line, "%llx", &start);
	if (f)
		fclose(f);
	return start;
}

static int sync_cpu(int dfd, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags };

	return ioctl(dfd, DMA_BUF_IOCTL_SYNC, &s) ? errno : 0;
}

/*
 * A CPU mapping of an exported dma-buf, checked from the host; returns the
 * mapping (MMAP_SIZE bytes of @dfd), kept for the revocation.
 */
static unsigned char *mmap_cases(int bar, int nvme, const char *bdf)
{
	struct p2pbar_export e = { .argsz = sizeof(e), .size = MMAP_SIZE };
	static unsigned char ref[65536];
	unsigned char *p;
	void *q;
	size_t i;
	int ret, mfd;

	mfd = ioctl(bar, P2PBAR_IOC_EXPORT, &e) ? -errno : e.fd;
	p = mfd < 0 ? MAP_FAILED : mmap(NULL, MMAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	result(p != MAP_FAILED, "mmap: MAP_SHARED of an exported dma-buf", 0, p == MAP_FAILED ? errno : 0);
	if (p == MAP_FAILED)
		return NULL;
	for (i = 0; i < MMAP_SIZE && !p[i]; i++)
		;
	tap(i == MMAP_SIZE, "mmap: a new dma-buf reads zeros (first non-zero byte at %zu)", i);
	ret = sync_cpu(mfd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW);
	memset(p, 0x5a, MMAP_SIZE);
	if (!ret)
		ret = sync_cpu(mfd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW);
	result(!ret, "mmap: DMA_BUF_IOCTL_SYNC around CPU writes", 0, ret);
	/* the host reads the BAR's backing file: the bytes are in the BAR */
	hostcheck("fill %d bar0@%llu 0x5a", MMAP_SIZE,
		  (unsigned long long)(e.bus_addr - bar_start(bdf)));
	q = mmap(NULL, MMAP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, mfd, 0);
	result(q == MAP_FAILED && errno == EINVAL, "mmap: MAP_PRIVATE refused", EINVAL,
	       q == MAP_FAILED ? errno : 0);
	q = mmap(NULL, 2 * MMAP_SIZE, PROT_READ, MAP_SHARED, mfd, 0);
	result(q == MAP_FAILED && errno == EINVAL, "mmap: longer than the dma-buf", EINVAL,
	       q == MAP_FAILED ? errno : 0);
	q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, mfd, MMAP_SIZE);
	result(q == MAP_FAILED && errno == EINVAL, "mmap: offset at the dma-buf's end", EINVAL,
	       q == MAP_FAILED ? errno : 0);
	/* what p2pnvme reads into the dma-buf, the CPU mapping shows */
	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 2048, 65536, mfd, 65536, 0);
	if (!ret) {
		struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .slba = 2048,
					 .len = 65536, .addr = (uintptr_t)ref };

		ret = ioctl(nvme, P2PNVME_IOC_IO, &io) ? errno : 0;
	}
	if (!ret && (memcmp(p + 65536, ref, 65536) || p[65535] != 0x5a || p[131072] != 0x5a))
		ret = EILSEQ;
	result(!ret, "mmap: an NVMe read into the dma-buf shows through the CPU mapping", 0, ret);
	close(mfd);	/* the mapping keeps the dma-buf */
	return p;
}

static sigjmp_buf sigbus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(sigbus_jmp, 1);
}

/* Does touching @p raise SIGBUS? */
static int faults(volatile unsigned char *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int hit = 0;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(sigbus_jmp, 1))
		hit = 1;
	else
		(void)p[0];
	sigaction(SIGBUS, &old, NULL);
	return hit;
}

/*
 * Keep batches of reads going into @dfd until one fails; exit with its
 * errno. -EAGAIN (the mapping was invalidated while the batch was being
 * submitted) means: try again, the next batch maps afresh or learns that
 * the memory was revoked.
 */
static void io_loop(int nvme, int dfd)
{
	struct p2pnvme_io ios[16];
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = 16, .ios = (uintptr_t)ios };
	int i;

	for (;;) {
		for (i = 0; i < 16; i++)
			ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[i]), .op = P2PNVME_OP_READ,
						      .slba = 2048 + i * 128, .len = 65536,
						      .addr = i * 65536, .dmabuf_fd = dfd,
						      .flags = P2PNVME_IO_F_DMABUF };
		sub.failed = 0;
		if (ioctl(nvme, P2PNVME_IOC_SUBMIT, &sub) && errno != EAGAIN)
			_exit(errno);
	}
}

static void revoke_case(int bar, int nvme, int dfd, unsigned char *map, const char *bdf)
{
	struct timespec t0, t1;
	int status, fd, ret, err;
	pid_t child;

	child = fork();
	if (child == 0)
		io_loop(nvme, dfd);
	usleep(300000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = open("/sys/bus/pci/drivers/p2pbar/unbind", O_WRONLY);
	ret = fd < 0 || write(fd, bdf, strlen(bdf)) < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("    # unbind took %.2f s\n", t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	result(!ret && t1.tv_sec - t0.tv_sec < 20,
	       "revoke: unbinding the provider with I/O into its dma-buf returns", 0, ret);
	alarm(60);
	err = waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	alarm(0);
	result(err == ENODEV, "revoke: the I/O in flight ends with ENODEV", ENODEV,
	       err < 0 ? EINTR : err);
	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 0, 4096, dfd, 0, 0);
	result(ret == ENODEV, "revoke: a later import of the revoked dma-buf", ENODEV, ret);
	tap(map && faults(map), "revoke: the dma-buf's CPU mapping raises SIGBUS");
	ret = sync_cpu(dfd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
	result(ret == ENODEV, "revoke: DMA_BUF_IOCTL_SYNC on the revoked dma-buf", ENODEV, ret);
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, dfd, 0);
	result(map == MAP_FAILED && errno == ENODEV, "revoke: a new mmap of the revoked dma-buf",
	       ENODEV, map == MAP_FAILED ? errno : 0);
	ret = export(bar, (struct p2pbar_export){ .size = 4096 });
	result(ret == -ENODEV, "revoke: export on the removed provider", ENODEV, ret < 0 ? -ret : 0);
}

/* NVMe -> dma-buf -> NVMe: the caller compares LBA 61440.. with 2048.. */
TEST_F(client_dmabuf_api, devs, import, 10, 60)
{
	struct p2pnvme_io ios[4];
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = 4, .ios = (uintptr_t)ios };
	int nvme = self->nvme, dfd, ret, i;

	dfd = export(self->bar, (struct p2pbar_export){ .size = 1 << 20,
							.flags = P2PBAR_EXPORT_F_CLOEXEC });
	result(dfd >= 0, "export 1 MiB", 0, dfd < 0 ? -dfd : 0);
	if (dfd < 0)
		return;
	import_cases(nvme, dfd, self->bar);

	ret = dmabuf_io(nvme, P2PNVME_OP_READ, 2048, 1 << 18, dfd, 0, 0);
	if (!ret)
		ret = dmabuf_io(nvme, P2PNVME_OP_WRITE, 61440, 1 << 18, dfd, 0, 0);
	result(!ret, "read 256 KiB into the dma-buf, write it back elsewhere", 0, ret);

	for (i = 0; i < 4; i++)
		ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[i]), .op = P2PNVME_OP_READ,
					      .slba = 2048 + i * 256, .len = 1 << 17,
					      .addr = (1 << 18) + i * (1 << 17), .dmabuf_fd = dfd,
					      .flags = P2PNVME_IO_F_DMABUF };
	ret = ioctl(nvme, P2PNVME_IOC_SUBMIT, &sub) ? errno : 0;
	for (i = 0; !ret && i < 4; i++)
		ret = ios[i].path == P2PNVME_PATH_DMABUF ? 0 : EPROTO;
	result(!ret, "a batch of 4 reads into one dma-buf, path dmabuf", 0, ret);
	close(dfd);
}

TEST_F(client_dmabuf_api, devs, udmabuf, 1, 60)
{
	udmabuf_case(self->nvme);
}

TEST_F(client_dmabuf_api, devs, mmap, 7, 60)
{
	unsigned char *map = mmap_cases(self->bar, self->nvme, bar_bdf);

	if (map)
		munmap(map, MMAP_SIZE);
}

/* a dma-buf with I/O going into it and a CPU mapping of another, revoked */
FIXTURE(revocable) {
	int bar, nvme, dfd;
	unsigned char *map;
};

FIXTURE_SETUP(revocable)
{
	struct p2pbar_export e = { .argsz = sizeof(e), .size = MMAP_SIZE };
	void *p;

	self->bar = open(bar_path, O_RDWR);
	self->nvme = open(nvme_path, O_RDWR);
	if (self->bar < 0 || self->nvme < 0)
		kt_fail("open %s, %s: %s", bar_path, nvme_path, strerror(errno));
	self->dfd = export(self->bar, (struct p2pbar_export){ .size = 1 << 20,
							      .flags = P2PBAR_EXPORT_F_CLOEXEC });
	if (self->dfd < 0)
		kt_fail("export 1 MiB: %s", strerror(-self->dfd));
	if (ioctl(self->bar, P2PBAR_IOC_EXPORT, &e))
		kt_fail("export the dma-buf to map: %s", strerror(errno));
	p = mmap(NULL, MMAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, e.fd, 0);
	if (p == MAP_FAILED)
		kt_fail("mmap the dma-buf: %s", strerror(errno));
	self->map = p;
	self->map[0] = 0x5a;
	close(e.fd);	/* the mapping keeps the dma-buf */
}

FIXTURE_TEARDOWN(revocable)
{
	munmap(self->map, MMAP_SIZE);
	close(self->dfd);
	close(self->nvme);
	close(self->bar);
}

TEST_F(client_dmabuf_api, revocable, revoke, 7, 120)
{
	revoke_case(self->bar, self->nvme, self->dfd, self->map, bar_bdf);
}

static uint64_t fence_slba, fence_len;
static int fence_errno;

/* the status of a sync_file's fence: 0 running, 1 signalled, or -errno */
static int sync_status(int sfd)
{
	struct sync_file_info info = {};

	if (ioctl(sfd, SYNC_IOC_FILE_INFO, &info))
		return -1000 - errno;
	return info.status;
}

TEST_F(client_faults_dmabuf_fence, devs, fence_error, 4, 120)
{
	struct dma_buf_export_sync_file ex = { .flags = DMA_BUF_SYNC_READ, .fd = -1 };
	struct pollfd pfd = { .events = POLLIN };
	int dfd, status = 1, i, ret, wst;
	pid_t pid;

	dfd = export(self->bar, (struct p2pbar_export){ .size = fence_len });
	if (dfd < 0)
		kt_fail("export %llu bytes: %s", (unsigned long long)fence_len, strerror(-dfd));
	pid = fork();
	if (pid < 0)
		kt_fail("fork: %s", strerror(errno));
	if (!pid)
		_exit(dmabuf_io(self->nvme, P2PNVME_OP_READ, fence_slba, fence_len, dfd, 0, 0));
	/* a reader's view of the dma-buf (its write fences) while the read runs */
	for (i = 0; i < 1000 && status; i++) {
		if (ex.fd >= 0)
			close(ex.fd);
		ex.fd = -1;
		if (ioctl(dfd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &ex))
			kt_fail("DMA_BUF_IOCTL_EXPORT_SYNC_FILE: %s", strerror(errno));
		status = sync_status(ex.fd);
		if (status)
			usleep(5000);
	}
	tap(status == 0, "a sync_file taken from the dma-buf while the read runs holds a fence not signalled yet (status %d)",
	    status);
	pfd.fd = ex.fd;
	ret = poll(&pfd, 1, 100 * 1000);
	tap(ret == 1, "the fence signals when the read ends");
	if (waitpid(pid, &wst, 0) != pid || !WIFEXITED(wst))
		kt_fail("the reading child did not exit");
	result(WEXITSTATUS(wst) == fence_errno, "the read into the dma-buf fails", fence_errno,
	       WEXITSTATUS(wst));
	status = sync_status(ex.fd);
	tap(status == -fence_errno, "the fence carries the read's error (status %d, want %d)",
	    status, -fence_errno);
	close(ex.fd);
	close(dfd);
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "--fence-error")) {
		bar_path = argv[2];
		nvme_path = argv[3];
		fence_slba = strtoull(argv[4], NULL, 0);
		fence_len = strtoull(argv[5], NULL, 0);
		fence_errno = atoi(argv[6]);
		return kt_run("client_faults_dmabuf_fence");
	}
	if (argc != 4)
		return 2;
	bar_path = argv[1];
	nvme_path = argv[2];
	bar_bdf = argv[3];
	return kt_run("client_dmabuf_api");
}
