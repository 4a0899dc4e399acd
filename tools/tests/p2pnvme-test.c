// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme-test: every malformed P2PNVME ioctl gets its errno, and none of
 * them reaches the controller (counters unchanged; the caller asks the
 * host to confirm that QEMU's nvme did no DMA meanwhile).
 *
 *   p2pnvme-test /dev/p2pnvmeN
 *   p2pnvme-test --stuck-unbind /dev/p2pnvmeN BDF
 *	unbind the controller while an I/O ioctl's buffer is stuck in a
 *	userfaultfd fault: the unbind must not wait for the fault
 *   p2pnvme-test --stuck-unbind-admin /dev/p2pnvmeN BDF
 *	the same with the admin passthrough's copy-out (Identify) stuck
 *   p2pnvme-test --admin /dev/p2pnvmeN     the admin passthrough's table
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/nvme_ioctl.h>
#include <linux/p2pnvme.h>
#include <linux/userfaultfd.h>

#include "harness.h"
#include "libp2p.h"

/* the command line: the device, and what the mode needs */
static const char *dev, *bdf, *bar_path;
static int refused;

/* Sum of every counter in sysfs stats/ */
static long long stats_sum(const char *dev)
{
	char pat[256];
	long long sum = 0;
	glob_t g;
	size_t i;

	snprintf(pat, sizeof(pat), "/sys/class/p2pnvme/%s/stats/*", strrchr(dev, '/') + 1);
	if (glob(pat, 0, NULL, &g))
		return -1;
	for (i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");
		long long v = 0;

		if (f && fscanf(f, "%lld", &v) == 1)
			sum += v;
		if (f)
			fclose(f);
	}
	globfree(&g);
	return sum;
}

/* A P2PNVME_IOC_SUBMIT that must fail with @err, blaming entry @failed. */
static void submit_case(int fd, const char *what, struct p2pnvme_submit sub, int err,
			unsigned int failed)
{
	char name[128];
	int ret;

	sub.argsz = sub.argsz ? sub.argsz : sizeof(sub);
	ret = ioctl(fd, P2PNVME_IOC_SUBMIT, &sub) ? errno : 0;
	snprintf(name, sizeof(name), "submit: %s", what);
	if (failed != ~0U && ret == err && sub.failed != failed) {
		printf("    # failed index %u, want %u\n", sub.failed, failed);
		ret = -1;
	}
	result(ret == err, name, err, ret);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

struct stuck {
	int fd, ret, admin;
	void *buf;
};

static void *stuck_io(void *arg)
{
	struct stuck *st = arg;
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .len = 4096,
				 .addr = (uintptr_t)st->buf };
	/* Identify Controller: the copy of its 4 KiB to the user faults */
	struct nvme_admin_cmd id = { .opcode = 0x06, .cdw10 = 1, .data_len = 4096,
				     .addr = (uintptr_t)st->buf };

	if (st->admin)
		st->ret = ioctl(st->fd, NVME_IOCTL_ADMIN_CMD, &id) ? errno : 0;
	else
		st->ret = ioctl(st->fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	return NULL;
}

/*
 * A READ into memory registered with userfaultfd (missing pages): pinning
 * the buffer blocks in the fault. Unbind the controller meanwhile: it must
 * finish at once (it used to wait for the fault, with reset_lock held for
 * read by the ioctl); the fault is resolved after 10 s either way, so the
 * old behaviour shows as a 10 s unbind instead of a hang. The ioctl then
 * finds the controller gone: ENODEV. With @admin, an Identify through the
 * admin passthrough whose copy-out faults (it used to copy inside the I/O
 * guard): the command was done before the unbind, so once the fault is
 * resolved the ioctl succeeds with the controller's data.
 */
static void stuck_unbind(int admin)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct stuck st = { .ret = -1, .admin = admin };
	struct uffd_msg msg;
	struct pollfd pfd;
	char path[256];
	double t0, took;
	pthread_t t;
	int uffd, ufd, ok;

	st.fd = open(dev, O_RDWR);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	st.buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (uintptr_t)st.buf;
	reg.range.len = 4096;
	if (st.fd < 0 || uffd < 0 || ioctl(uffd, UFFDIO_API, &api) ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg))
		kt_fail("set up a userfaultfd buffer: %s", strerror(errno));
	pthread_create(&t, NULL, stuck_io, &st);
	pfd = (struct pollfd){ .fd = uffd, .events = POLLIN };
	ok = poll(&pfd, 1, 10000) == 1 && read(uffd, &msg, sizeof(msg)) == sizeof(msg);
	result(ok, admin ? "the admin passthrough's copy-out is stuck in a fault" :
	       "the I/O ioctl's buffer is stuck in a fault", 0, ok ? 0 : ETIMEDOUT);

	/* unbind from a second thread's view: this one resolves after 10 s */
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver/unbind", bdf);
	t0 = now();
	if (fork() == 0) {
		struct uffdio_zeropage zp = { .range = { (uintptr_t)st.buf, 4096 } };

		close(st.fd);	/* the module must not stay busy for it */
		usleep(10 * 1000 * 1000);
		ioctl(uffd, UFFDIO_ZEROPAGE, &zp);
		_exit(0);
	}
	ufd = open(path, O_WRONLY);
	ok = ufd >= 0 && write(ufd, bdf, strlen(bdf)) == (ssize_t)strlen(bdf);
	took = now() - t0;
	if (ufd >= 0)
		close(ufd);
	printf("    # unbind took %.2f s\n", took);
	result(ok && took < 5, "unbind does not wait for a fault in a user buffer", 0,
	       ok ? (took < 5 ? 0 : ETIMEDOUT) : errno);
	{
		struct uffdio_zeropage zp = { .range = { (uintptr_t)st.buf, 4096 } };

		ioctl(uffd, UFFDIO_ZEROPAGE, &zp);	/* the new code: resolve now */
	}
	pthread_join(t, NULL);
	if (admin) {
		/* Identify Controller starts with the PCI vendor: QEMU's 1b36 */
		uint16_t vid = *(uint16_t *)st.buf;

		printf("    # Identify's VID %#x\n", vid);
		result(!st.ret && vid == 0x1b36,
		       "the stuck Identify then completes with the controller's data", 0,
		       st.ret ? st.ret : vid == 0x1b36 ? 0 : EIO);
	} else {
		result(st.ret == ENODEV, "the stuck ioctl then finds the controller gone", ENODEV,
		       st.ret);
	}
	ok = ioctl(st.fd, P2PNVME_IOC_IO, &(struct p2pnvme_io){ .argsz = sizeof(struct p2pnvme_io),
		   .op = P2PNVME_OP_FLUSH }) ? errno : 0;
	result(ok == ENODEV, "later I/O on the open file: ENODEV", ENODEV, ok);
}

TEST(client_stuck_unbind, stuck_io, 4, 60)
{
	stuck_unbind(0);
}

TEST(client_stuck_unbind_admin, stuck_admin, 4, 60)
{
	stuck_unbind(1);
}

/*
 * An fd opened read-only may read, not write (nvme_cmd_allowed()'s rule).
 * The READ goes to an unmapped buffer: it passes the permission check and
 * fails on the buffer (EFAULT), so that no DMA happens here.
 */
static void read_only_fd(const char *dev, void *buf, uint64_t lba)
{
	struct p2pnvme_io io;
	int fd = open(dev, O_RDONLY), ret;

	io = (struct p2pnvme_io){ .argsz = sizeof(io), .op = P2PNVME_OP_READ, .len = lba,
				  .addr = 0x1000 };
	ret = ioctl(fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	result(ret == EFAULT, "read-only fd: READ is allowed (fails on its unmapped buffer)",
	       EFAULT, ret);
	io = (struct p2pnvme_io){ .argsz = sizeof(io), .op = P2PNVME_OP_WRITE, .len = lba,
				  .addr = (uintptr_t)buf };
	ret = ioctl(fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	result(ret == EACCES, "read-only fd: WRITE", EACCES, ret);
	io = (struct p2pnvme_io){ .argsz = sizeof(io), .op = P2PNVME_OP_WRITE_ZEROES, .len = lba };
	ret = ioctl(fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	result(ret == EACCES, "read-only fd: WRITE ZEROES", EACCES, ret);
	close(fd);
}

/* max_inflight_mb bounds what one file pins or bounces at once. */
static void inflight_bound(int fd, void *buf, uint64_t lba)
{
	const char *p = "/sys/module/p2pnvme/parameters/max_inflight_mb";
	struct p2pnvme_io ios[2];
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = 2, .ios = (uintptr_t)ios };
	FILE *f = fopen(p, "w");
	int ret, i;

	if (f) {
		fputs("1", f);
		fclose(f);
	}
	for (i = 0; i < 2; i++)
		ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ,
					      .slba = i * 2048, .len = 2048 * lba,
					      .addr = (uintptr_t)buf + i * 2048 * lba };
	ret = ioctl(fd, P2PNVME_IOC_SUBMIT, &sub) ? errno : 0;
	result(ret == E2BIG, "submit: more than max_inflight_mb in one batch", E2BIG, ret);
	f = fopen(p, "w");
	if (f) {
		fputs("256", f);
		fclose(f);
	}
}

/* One admin command: 0, the errno, or EPROTO for an NVMe status. */
static int admin_cmd(int fd, struct nvme_admin_cmd c, void *buf)
{
	int ret;

	if (c.data_len)
		c.addr = (uintptr_t)buf;
	ret = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &c);
	return ret < 0 ? errno : ret ? EPROTO : 0;	/* > 0: an NVMe status */
}

#define NUMD(dw) ((uint32_t)((dw) - 1) << 16)	/* Get Log Page NUMDL */

/* the client's char device, and a buffer of host memory */
FIXTURE(nvme) {
	int fd;
	char *buf;
};

FIXTURE_SETUP(nvme)
{
	self->fd = open(dev, O_RDWR);
	self->buf = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (self->fd < 0 || self->buf == MAP_FAILED)
		kt_fail("open %s, 4 MiB of memory: %s", dev, strerror(errno));
}

FIXTURE_TEARDOWN(nvme)
{
	munmap(self->buf, 4 << 20);
	close(self->fd);
}

/*
 * NVME_IOCTL_ADMIN_CMD: what keeps the health view passes (Identify, Get
 * Log Page, Get Features), what would pull the queues from under p2pnvme
 * or change the drive is refused, bad arguments get their errno. The
 * controller takes the transfer's length from the command: one that could
 * move more than data_len is refused before it is sent.
 */
TEST_F(client_admin, nvme, admin_table, 18, 60)
{
	struct {
		const char *what;
		struct nvme_admin_cmd c;
		int err;
	} cases[] = {
		{ "admin: Identify Controller", { .opcode = 0x06, .cdw10 = 1, .data_len = 4096 }, 0 },
		{ "admin: Get Features (number of queues)", { .opcode = 0x0a, .cdw10 = 7 }, 0 },
		{ "admin: SMART log, 512 bytes", { .opcode = 0x02, .nsid = 0xffffffff,
		  .cdw10 = NUMD(128) | 0x02, .data_len = 512 }, 0 },
		{ "admin: error log, 8 KiB (PRP2)", { .opcode = 0x02, .cdw10 = NUMD(2048) | 0x01,
		  .data_len = 8192 }, 0 },
		{ "admin: Get Features (timestamp), 8 bytes", { .opcode = 0x0a, .cdw10 = 0x0e,
		  .data_len = 8 }, 0 },
		{ "admin: Format NVM refused", { .opcode = 0x80, .nsid = 1 }, EPERM },
		{ "admin: Delete I/O SQ refused", { .opcode = 0x00, .cdw10 = 1 }, EPERM },
		{ "admin: Set Features refused", { .opcode = 0x09, .cdw10 = 7 }, EPERM },
		{ "admin: flags set", { .opcode = 0x06, .cdw10 = 1, .flags = 1 }, EINVAL },
		{ "admin: metadata", { .opcode = 0x06, .cdw10 = 1, .metadata_len = 64 }, EINVAL },
		{ "admin: more than 8 KiB of data", { .opcode = 0x06, .cdw10 = 1, .data_len = 8196 },
		  EINVAL },
		/* the length the controller takes, against the caller's buffer */
		{ "admin: Identify into 512 bytes", { .opcode = 0x06, .cdw10 = 1, .data_len = 512 },
		  EINVAL },
		{ "admin: SMART log NUMD 16 KiB into 512 bytes", { .opcode = 0x02,
		  .nsid = 0xffffffff, .cdw10 = NUMD(4096) | 0x02, .data_len = 512 }, EINVAL },
		{ "admin: error log NUMD 4 KiB with no buffer", { .opcode = 0x02,
		  .cdw10 = NUMD(1024) | 0x01 }, EINVAL },
		{ "admin: log NUMD 12 KiB into 8 KiB", { .opcode = 0x02,
		  .cdw10 = NUMD(3072) | 0x01, .data_len = 8192 }, EINVAL },
		{ "admin: log NUMDU set", { .opcode = 0x02, .cdw10 = NUMD(128) | 0x02, .cdw11 = 1,
		  .data_len = 8192 }, EINVAL },
		{ "admin: timestamp with no buffer", { .opcode = 0x0a, .cdw10 = 0x0e }, EINVAL },
		{ "admin: vendor feature (size unknown)", { .opcode = 0x0a, .cdw10 = 0xc0,
		  .data_len = 8192 }, EINVAL },
	};
	unsigned int i;
	int ret;

	_Static_assert(sizeof(cases) / sizeof(cases[0]) == 18, "the plan");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ret = admin_cmd(self->fd, cases[i].c, self->buf);
		result(ret == cases[i].err, cases[i].what, cases[i].err, ret);
	}
}

/*
 * Where the kernel's passthrough ABI is nvme-pci's, the answers are
 * nvme-pci's (QEMU's controller behind both): the whole status of a failed
 * command, DNR included (QEMU's unknown log page: 0x4002); an admin read
 * copies out what the command moves, the rest of a larger buffer left as
 * it was; an I/O command takes a buffer larger than its NLB's bytes (nvme
 * read -z 8192 for one block) and moves just those, a smaller one is
 * refused with nothing moved.
 */
TEST_F(client_admin, nvme, nvme_abi, 4, 60)
{
	struct p2pnvme_info info = { .argsz = sizeof(info) };
	unsigned char *a = (unsigned char *)self->buf, *b = a + (1 << 20);
	struct nvme_admin_cmd ac;
	struct nvme_passthru_cmd c;
	struct p2pnvme_io io;
	uint32_t lba;
	int ret, nsid, i;

	if (ioctl(self->fd, P2PNVME_IOC_INFO, &info))
		kt_fail("INFO: %s", strerror(errno));
	lba = 1U << info.lba_shift;
	nsid = ioctl(self->fd, NVME_IOCTL_ID);

	ac = (struct nvme_admin_cmd){ .opcode = 0x02, .cdw10 = NUMD(128) | 0xca,
				      .addr = (uintptr_t)a, .data_len = 512 };
	ret = ioctl(self->fd, NVME_IOCTL_ADMIN_CMD, &ac);
	printf("    # Get Log Page 0xca: %d (%#x)\n", ret, ret > 0 ? ret : 0);
	tap(ret > 0 && (ret & 0x7ff) == 0x002 && (ret & 0x4000),
	    "admin: an unknown log page returns the whole status, DNR included (0x4002 on nvme-pci)");

	memset(a, 0xee, 8192);
	memset(b, 0, 4096);
	ac = (struct nvme_admin_cmd){ .opcode = 0x06, .cdw10 = 1, .addr = (uintptr_t)a,
				      .data_len = 8192 };
	ret = ioctl(self->fd, NVME_IOCTL_ADMIN_CMD, &ac) ? errno : 0;
	ac.addr = (uintptr_t)b;
	ac.data_len = 4096;
	i = ioctl(self->fd, NVME_IOCTL_ADMIN_CMD, &ac) ? errno : 0;
	for (i = i ? -1 : 4096; i >= 0 && i < 8192 && a[i] == 0xee; i++)
		;
	if (i != 8192)
		printf("    # byte %d after the Identify data: %#x\n", i, i >= 0 ? a[i] : 0);
	result(!ret && i == 8192 && !memcmp(a, b, 4096),
	       "admin: Identify into 8 KiB: its 4 KiB copied, the rest of the buffer untouched",
	       0, ret);

	memset(a, 0xee, lba + 4096);
	io = (struct p2pnvme_io){ .argsz = sizeof(io), .op = P2PNVME_OP_READ, .slba = 8,
				  .len = lba, .addr = (uintptr_t)b };
	c = (struct nvme_passthru_cmd){ .opcode = 0x02, .nsid = nsid, .addr = (uintptr_t)a,
					.data_len = lba + 4096, .cdw10 = 8 };
	ret = ioctl(self->fd, NVME_IOCTL_IO_CMD, &c);
	ret = ret < 0 ? errno : ret;
	i = ioctl(self->fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	for (i = i ? -1 : (int)lba; i >= 0 && i < (int)lba + 4096 && a[i] == 0xee; i++)
		;
	result(!ret && i == (int)lba + 4096 && !memcmp(a, b, lba),
	       "I/O: a Read of one LBA into a buffer 4 KiB larger (data_len > NLB's bytes), as nvme-pci",
	       0, ret);

	memset(a, 0xee, lba);
	c.data_len = lba - 4;
	ret = ioctl(self->fd, NVME_IOCTL_IO_CMD, &c);
	ret = ret < 0 ? errno : ret;
	result(ret == EINVAL && a[0] == 0xee,
	       "I/O: data_len short of the NLB's bytes: EINVAL, nothing read", EINVAL, ret);
}

/* What an unprivileged opener gets; ids index the results it sends back. */
static const struct {
	const char *what;
	struct nvme_admin_cmd c;
	int err;
} unpriv_cases[] = {
	{ "unprivileged: Identify Controller", { .opcode = 0x06, .cdw10 = 1, .data_len = 4096 }, 0 },
	{ "unprivileged: Identify Namespace", { .opcode = 0x06, .nsid = 1, .data_len = 4096 }, 0 },
	{ "unprivileged: Identify active namespace list refused",
	  { .opcode = 0x06, .cdw10 = 2, .data_len = 4096 }, EACCES },
	{ "unprivileged: SMART log refused", { .opcode = 0x02, .nsid = 0xffffffff,
	  .cdw10 = NUMD(128) | 0x02, .data_len = 512 }, EACCES },
	{ "unprivileged: error log refused", { .opcode = 0x02, .cdw10 = NUMD(16) | 0x01,
	  .data_len = 64 }, EACCES },
	{ "unprivileged: Get Features refused", { .opcode = 0x0a, .cdw10 = 7 }, EACCES },
	{ "unprivileged: Format NVM never sent", { .opcode = 0x80, .nsid = 1 }, EPERM },
};

#define UNPRIV_EXTRA 3	/* the open, a WRITE on O_RDONLY, the memlock charge */

/*
 * The unprivileged user's half: report each errno through @out. The node
 * is opened up (as the udev rule's group has it), so what refuses is the
 * driver, not the mode.
 */
static void unprivileged_child(const char *dev, int out)
{
	int res[sizeof(unpriv_cases) / sizeof(unpriv_cases[0]) + UNPRIV_EXTRA];
	struct rlimit rl = { 64 << 10, 64 << 10 };
	static char buf[8192];
	unsigned int i, k = 0;
	char *host;
	int fd, wfd;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		_exit(3);
	fd = open(dev, O_RDONLY);
	res[k++] = fd < 0 ? errno : 0;
	for (i = 0; i < sizeof(unpriv_cases) / sizeof(unpriv_cases[0]); i++)
		res[k++] = fd < 0 ? -1 : admin_cmd(fd, unpriv_cases[i].c, buf);
	{
		struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_WRITE,
					 .len = 4096, .addr = (uintptr_t)buf };

		res[k++] = fd < 0 ? -1 : ioctl(fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	}
	/* 1 MiB of host memory pinned against a 64 KiB RLIMIT_MEMLOCK */
	host = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	wfd = open(dev, O_RDWR);
	if (wfd < 0 || host == MAP_FAILED || setrlimit(RLIMIT_MEMLOCK, &rl)) {
		res[k++] = -1;
	} else {
		struct p2pnvme_buf_reg r = { .argsz = sizeof(r), .addr = (uintptr_t)host,
					     .len = 1 << 20 };

		res[k++] = ioctl(wfd, P2PNVME_IOC_BUF_REGISTER, &r) ? errno : 0;
	}
	if (write(out, res, sizeof(res)) != sizeof(res))
		_exit(4);
	_exit(0);
}

/*
 * As the unprivileged user, with the node as the driver creates it (0600):
 * the path is reachable (the guest's / and /dev are 0755), the open refused
 * by the node's mode. Exit status: the errno of the open.
 */
static int default_mode_open(const char *dev)
{
	struct stat sb;
	pid_t pid = fork();
	int st = 0, fd;

	if (!pid) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(100);
		if (stat(dev, &sb))	/* a path it cannot reach fails here */
			_exit(101);
		fd = open(dev, O_RDONLY);
		_exit(fd < 0 ? errno : 0);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 102;
}

/*
 * Who may send what, as nvme-pci's nvme_admin_cmd_allowed(): an
 * unprivileged opener only the Identify data it needs to form commands.
 */
TEST(client_admin, unprivileged, sizeof(unpriv_cases) / sizeof(unpriv_cases[0]) + UNPRIV_EXTRA + 1,
     60)
{
	int res[sizeof(unpriv_cases) / sizeof(unpriv_cases[0]) + UNPRIV_EXTRA];
	unsigned int i, k = 0, nc = sizeof(unpriv_cases) / sizeof(unpriv_cases[0]);
	int p[2], st = 0, ret;
	struct stat sb;
	pid_t pid;

	ret = default_mode_open(dev);
	if (ret == 101)
		tap(0, "unprivileged: the node's default mode refuses the open # uid 65534 cannot reach %s",
		    dev);
	else
		result(ret == EACCES, "unprivileged: the node's default mode refuses the open (the path is reachable)",
		       EACCES, ret);
	if (stat(dev, &sb) || pipe(p) || chmod(dev, 0666))
		kt_fail("unprivileged: the node opened up for the test: %s", strerror(errno));
	pid = fork();
	if (!pid) {
		close(p[0]);
		unprivileged_child(dev, p[1]);
	}
	close(p[1]);
	memset(res, 0xff, sizeof(res));
	if (read(p[0], res, sizeof(res)) != sizeof(res))
		memset(res, 0xff, sizeof(res));
	close(p[0]);
	waitpid(pid, &st, 0);
	chmod(dev, sb.st_mode & 07777);
	result(res[k++] == 0, "unprivileged: opens the node made 0666 (O_RDONLY)", 0, res[0]);
	for (i = 0; i < nc; i++, k++)
		result(res[k] == unpriv_cases[i].err, unpriv_cases[i].what, unpriv_cases[i].err,
		       res[k]);
	result(res[k] == EACCES, "unprivileged, read-only fd: WRITE refused", EACCES, res[k]);
	k++;
	result(res[k] == ENOMEM, "unprivileged: 1 MiB registration over a 64 KiB RLIMIT_MEMLOCK",
	       ENOMEM, res[k]);
}

/* Root is not charged (CAP_IPC_LOCK): the limit above is what refused. */
TEST_F(client_admin, nvme, memlock_root, 1, 30)
{
	int fd = self->fd;
	struct rlimit old, rl = { 64 << 10, 64 << 10 };
	char *host = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct p2pnvme_buf_reg r = { .argsz = sizeof(r), .addr = (uintptr_t)host,
				     .len = 1 << 20 };
	struct p2pnvme_buf_unreg u = { .argsz = sizeof(u) };
	int ret;

	getrlimit(RLIMIT_MEMLOCK, &old);
	setrlimit(RLIMIT_MEMLOCK, &rl);
	ret = ioctl(fd, P2PNVME_IOC_BUF_REGISTER, &r) ? errno : 0;
	setrlimit(RLIMIT_MEMLOCK, &old);
	result(ret == 0, "root: the same registration (CAP_IPC_LOCK)", 0, ret);
	if (!ret) {
		u.id = r.id;
		ioctl(fd, P2PNVME_IOC_BUF_UNREGISTER, &u);
	}
	munmap(host, 1 << 20);
}

/*
 * A batch waiting out a reset is stopped and continued (SIGSTOP, SIGCONT:
 * what a debugger attaching does), so its ioctl is restarted. The restart
 * must find its arguments as they were: it waits on, and ends with the
 * reset's outcome (0, or ENODEV when the reset gives up), never EINVAL.
 * Run while @dev's controller is being reset.
 */
TEST(client_restart, restart, 2, 120)
{
	static struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .len = 4096 };
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = 1, .ios = (uintptr_t)&io };
	char *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int fd = open(dev, O_RDWR), st = 0, i, blocked;
	pid_t pid;

	if (fd < 0 || buf == MAP_FAILED)
		kt_fail("open %s: %s", dev, strerror(errno));
	io.addr = (uintptr_t)buf;
	pid = fork();
	if (!pid)
		_exit(ioctl(fd, P2PNVME_IOC_SUBMIT, &sub) ? errno : 0);
	usleep(300 * 1000);
	blocked = waitpid(pid, &st, WNOHANG) == 0;
	tap(blocked, "a batch submitted during the reset waits for it");
	for (i = 0; blocked && i < 5; i++) {
		kill(pid, SIGSTOP);
		usleep(50 * 1000);
		kill(pid, SIGCONT);
		usleep(50 * 1000);
	}
	if (blocked)
		waitpid(pid, &st, 0);
	st = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	result(st == 0 || st == ENODEV,
	       "stopped and continued 5 times, its restarted ioctl ends with the reset (0 or ENODEV)",
	       ENODEV, st);
	close(fd);
}

/*
 * Structures used again as they came back: their out-fields (result, path,
 * status; failed) are ignored on input, and written afresh.
 */
TEST_F(client_reuse, nvme, batch_again, 1, 60)
{
	struct p2pnvme_io ios[3];
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = 3, .ios = (uintptr_t)ios };
	char *buf = self->buf;
	int fd = self->fd, ret, i;

	for (i = 0; i < 3; i++)
		ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ,
					      .slba = i * 8, .len = 4096,
					      .addr = (uintptr_t)buf + i * 4096 };
	ret = ioctl(fd, P2PNVME_IOC_SUBMIT, &sub) ? errno : 0;
	if (!ret) {
		sub.failed = 1;
		for (i = 0; i < 3; i++)
			ios[i].result = -5, ios[i].status = 0x281;
		ret = ioctl(fd, P2PNVME_IOC_SUBMIT, &sub) ? errno : 0;
	}
	result(ret == 0 && sub.failed == sub.nr && ios[0].path && !ios[0].status && !ios[2].result,
	       "submit: the same batch again as it came back (out-fields ignored)", 0, ret);
}

TEST_F(client_reuse, nvme, io_preset, 1, 60)
{
	struct p2pnvme_io io;
	int ret;

	io = (struct p2pnvme_io){ .argsz = sizeof(io), .op = P2PNVME_OP_READ, .len = 4096,
				  .addr = (uintptr_t)self->buf, .result = -22, .path = 9, .status = 1 };
	ret = ioctl(self->fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	result(ret == 0 && io.result == 0 && io.path && io.status == 0,
	       "io: out-fields preset are ignored and written", 0, ret);
}

/* /sys/class/p2pnvme/<name of @dev>/@attr as a number, -1 if unreadable */
static long long attr_of(const char *dev, const char *attr)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/%s", strrchr(dev, '/') + 1, attr);
	return p2p_sysfs_num(path);
}

static int set_attr(const char *dev, const char *attr, const char *val)
{
	char path[256];
	int fd, ok;

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/%s", strrchr(dev, '/') + 1, attr);
	fd = open(path, O_WRONLY);
	ok = fd >= 0 && write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* NVME_IOCTL_IO_CMD: a Read of @len bytes at @slba into @buf: 0, -errno or the NVMe status */
static int std_read(int fd, uint32_t nsid, uint64_t slba, uint32_t len, unsigned int shift,
		    void *buf)
{
	struct nvme_passthru_cmd c = { .opcode = 0x02, .nsid = nsid, .addr = (uintptr_t)buf,
				       .data_len = len, .cdw10 = (uint32_t)slba,
				       .cdw11 = (uint32_t)(slba >> 32),
				       .cdw12 = (len >> shift) - 1 };
	int ret = ioctl(fd, NVME_IOCTL_IO_CMD, &c);

	return ret < 0 ? -errno : ret;
}

/*
 * The standard I/O passthrough into p2pmem: a mapping of @bar (an
 * allocating mmap at offset 0, as fio's --iomem=mmapshared does) is the
 * buffer. Where the topology allows P2P the read goes there (reads_p2p)
 * with the bytes a host-memory read gets; where it refuses, EREMOTEIO
 * unless passthru_bounce allows the bounce. @refused: the profile's verdict.
 */
TEST(client_std_p2pmem, std_read_p2pmem, 3, 60)
{
	struct p2pnvme_info info = { .argsz = sizeof(info) };
	int fd = open(dev, O_RDWR), bfd = open(bar_path, O_RDWR), ret, id;
	size_t len = 65536;
	unsigned char *p, *h = malloc(len);
	long long p2p0, bounce0;

	if (fd < 0 || bfd < 0 || !h || ioctl(fd, P2PNVME_IOC_INFO, &info))
		kt_fail("open %s, %s, INFO: %s", dev, bar_path, strerror(errno));
	id = ioctl(fd, NVME_IOCTL_ID);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bfd, 0);
	if (p == MAP_FAILED || id <= 0)
		kt_fail("mmap %s, NVME_IOCTL_ID: %s", bar_path, strerror(errno));
	ret = std_read(fd, id, 4096, len, info.lba_shift, h);
	result(!ret && id == (int)info.nsid, "NVME_IOCTL_ID, and a Read into host memory", 0, -ret);
	p2p0 = attr_of(dev, "stats/reads_p2p");
	bounce0 = attr_of(dev, "stats/reads_bounce");
	memset(p, 0xee, len);
	ret = std_read(fd, id, 4096, len, info.lba_shift, p);
	if (refused) {
		result(ret == -EREMOTEIO && p[0] == 0xee,
		       "a Read into p2pmem the topology refuses: EREMOTEIO, no silent bounce",
		       EREMOTEIO, -ret);
		set_attr(dev, "passthru_bounce", "1");
		ret = std_read(fd, id, 4096, len, info.lba_shift, p);
		set_attr(dev, "passthru_bounce", "0");
		result(!ret && !memcmp(p, h, len) &&
		       attr_of(dev, "stats/reads_bounce") == bounce0 + 1,
		       "with passthru_bounce 1: bounced, the same bytes", 0, -ret);
	} else {
		result(!ret && !memcmp(p, h, len) && attr_of(dev, "stats/reads_p2p") == p2p0 + 1,
		       "a Read into p2pmem: path p2p, the bytes of the host-memory read", 0, -ret);
		result(attr_of(dev, "stats/reads_bounce") == bounce0,
		       "... and nothing bounced", 0, 0);
	}
	munmap(p, len);
	close(bfd);
	close(fd);
	free(h);
}

/* the counters before the bad input, read by main() before the suite runs */
static long long counters_before;

/* the client's char device, its namespace's size, host memory */
FIXTURE(bad) {
	int fd;
	uint64_t nlb, lba;
	char *buf;
};

FIXTURE_SETUP(bad)
{
	struct p2pnvme_info info = { .argsz = sizeof(info) };

	self->fd = open(dev, O_RDWR);
	if (self->fd < 0 || ioctl(self->fd, P2PNVME_IOC_INFO, &info))
		kt_fail("open %s, INFO: %s", dev, strerror(errno));
	self->nlb = info.nlb;
	self->lba = 1ULL << info.lba_shift;
	self->buf = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (self->buf == MAP_FAILED)
		kt_fail("4 MiB of memory: %s", strerror(errno));
}

FIXTURE_TEARDOWN(bad)
{
	munmap(self->buf, 4 << 20);
	close(self->fd);
}

#define IO_CASES 14

TEST_F(client_badinput, bad, io, IO_CASES + 3, 60)
{
	uint64_t nlb = self->nlb, lba = self->lba;
	char *buf = self->buf;
	int fd = self->fd, ret;
	struct p2pnvme_io io;
	struct {
		const char *what;
		struct p2pnvme_io io;
		int err;
	} cases[] = {
		{ "LBA range past the end", { .op = P2PNVME_OP_READ, .slba = nlb - 1, .len = 2 * lba }, ERANGE },
		{ "start LBA past the end", { .op = P2PNVME_OP_READ, .slba = nlb, .len = lba }, ERANGE },
		{ "overflowing LBA range", { .op = P2PNVME_OP_READ, .slba = ~0ULL, .len = lba }, ERANGE },
		{ "length not a multiple of the LBA size", { .op = P2PNVME_OP_READ, .len = lba + 1 }, EINVAL },
		{ "zero length", { .op = P2PNVME_OP_READ, .len = 0 }, EINVAL },
		{ "unaligned buffer", { .op = P2PNVME_OP_READ, .len = lba, .addr = 1 }, EINVAL },
		{ "no buffer", { .op = P2PNVME_OP_READ, .len = lba, .addr = 0 }, EINVAL },
		{ "unknown operation", { .op = 9, .len = lba }, EOPNOTSUPP },
		{ "unknown flag", { .op = P2PNVME_OP_READ, .len = lba, .flags = 1 << 7 }, EINVAL },
		{ "PRP and SGL at once", { .op = P2PNVME_OP_READ, .len = lba,
					   .flags = P2PNVME_IO_F_PRP | P2PNVME_IO_F_SGL }, EINVAL },
		{ "bounce and no-bounce at once", { .op = P2PNVME_OP_READ, .len = lba,
					   .flags = P2PNVME_IO_F_BOUNCE | P2PNVME_IO_F_NO_BOUNCE }, EINVAL },
		{ "flush with a range", { .op = P2PNVME_OP_FLUSH, .len = lba }, EINVAL },
		{ "write zeroes with a buffer", { .op = P2PNVME_OP_WRITE_ZEROES, .len = lba }, EINVAL },
		{ "unmapped buffer", { .op = P2PNVME_OP_READ, .len = lba, .addr = 0x1000 }, EFAULT },
	};
	unsigned int i;

	_Static_assert(sizeof(cases) / sizeof(cases[0]) == IO_CASES, "the plan");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		io = cases[i].io;
		io.argsz = sizeof(io);
		if (io.addr == 0 && cases[i].err != EINVAL && io.op != P2PNVME_OP_WRITE_ZEROES &&
		    io.op != P2PNVME_OP_FLUSH)
			io.addr = (uintptr_t)buf;
		if (!strcmp(cases[i].what, "write zeroes with a buffer"))
			io.addr = (uintptr_t)buf;
		ret = ioctl(fd, P2PNVME_IOC_IO, &io) ? errno : 0;
		result(ret == cases[i].err, cases[i].what, cases[i].err, ret);
	}
	io = (struct p2pnvme_io){ .argsz = 8, .op = P2PNVME_OP_READ, .len = lba,
				  .addr = (uintptr_t)buf };
	ret = ioctl(fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	result(ret == EINVAL, "argsz too small", EINVAL, ret);
	ret = ioctl(fd, P2PNVME_IOC_IO, NULL) ? errno : 0;
	result(ret == EFAULT, "bad argument pointer", EFAULT, ret);
	ret = ioctl(fd, _IO(P2PNVME_IOC_MAGIC, 0x7f), NULL) ? errno : 0;
	result(ret == ENOTTY, "unknown ioctl", ENOTTY, ret);
}

/* P2PNVME_IOC_INFO */
TEST_F(client_badinput, bad, info, 4, 30)
{
	struct p2pnvme_info bad = { .argsz = sizeof(bad), .flags = 1 };
	int fd = self->fd, ret;

	ret = ioctl(fd, P2PNVME_IOC_INFO, &bad) ? errno : 0;
	result(ret == EINVAL, "info: flags set on input", EINVAL, ret);
	bad = (struct p2pnvme_info){ .argsz = sizeof(bad), .reserved = 1 };
	ret = ioctl(fd, P2PNVME_IOC_INFO, &bad) ? errno : 0;
	result(ret == EINVAL, "info: reserved set", EINVAL, ret);
	bad = (struct p2pnvme_info){ .argsz = 4 };
	ret = ioctl(fd, P2PNVME_IOC_INFO, &bad) ? errno : 0;
	result(ret == EINVAL, "info: argsz too small", EINVAL, ret);
	bad = (struct p2pnvme_info){ .argsz = sizeof(bad), .reserved2 = 1 };
	ret = ioctl(fd, P2PNVME_IOC_INFO, &bad) ? errno : 0;
	result(ret == EINVAL, "info: reserved2 set", EINVAL, ret);
}

TEST_F(client_badinput, bad, read_only_fd, 3, 30)
{
	read_only_fd(dev, self->buf, self->lba);
}

TEST_F(client_badinput, bad, inflight_bound, 1, 30)
{
	inflight_bound(self->fd, self->buf, self->lba);
}

/* P2PNVME_IOC_SUBMIT: the batch itself, then one bad entry among good ones */
TEST_F(client_badinput, bad, submit, 8, 60)
{
	struct p2pnvme_io ios[3];
	struct p2pnvme_submit ok = { .nr = 3, .ios = (uintptr_t)ios }, sub;
	uint64_t lba = self->lba;
	int fd = self->fd;
	unsigned int i;

	for (i = 0; i < 3; i++)
		ios[i] = (struct p2pnvme_io){ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ,
					      .slba = i * 8, .len = 8 * lba,
					      .addr = (uintptr_t)self->buf + i * 8 * lba };
	sub = ok, sub.nr = 0;
	submit_case(fd, "no entries", sub, EINVAL, ~0U);
	sub = ok, sub.nr = P2PNVME_SUBMIT_MAX + 1;
	submit_case(fd, "more than P2PNVME_SUBMIT_MAX entries", sub, EINVAL, ~0U);
	sub = ok, sub.flags = 1;
	submit_case(fd, "unknown flag", sub, EINVAL, ~0U);
	sub = ok, sub.argsz = 8;
	submit_case(fd, "argsz too small", sub, EINVAL, ~0U);
	sub = ok, sub.ios = 0;
	submit_case(fd, "entries not mapped", sub, EFAULT, ~0U);
	ios[1].argsz = 8;
	submit_case(fd, "entry 1 with a wrong argsz", ok, EINVAL, 1);
	ios[1].argsz = sizeof(ios[1]);
	ios[2].slba = self->nlb;
	submit_case(fd, "entry 2 past the end of the namespace", ok, ERANGE, 2);
	ios[2].slba = 16;
	ios[2].addr = 0x1000;
	/* entries 0 and 1 are good: they must not have been submitted either */
	submit_case(fd, "entry 2 with an unmapped buffer", ok, EFAULT, 2);
}

/* what the tests above sent never reached the controller */
TEST(client_badinput, counters, 1, 30)
{
	tap(counters_before >= 0 && stats_sum(dev) == counters_before,
	    "counters unchanged by bad input");
}

int main(int argc, char **argv)
{
	static const struct {
		const char *opt, *suite;
		int argc;
	} modes[] = {
		{ "--stuck-unbind", "client_stuck_unbind", 4 },
		{ "--stuck-unbind-admin", "client_stuck_unbind_admin", 4 },
		{ "--admin", "client_admin", 3 },
		{ "--restart", "client_restart", 3 },
		{ "--reuse", "client_reuse", 3 },
		{ "--std-p2pmem", "client_std_p2pmem", 5 },
	};
	unsigned int i;

	for (i = 0; argc > 2 && i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(argv[1], modes[i].opt))
			continue;
		if (argc != modes[i].argc)
			return 2;
		dev = argv[2];
		bdf = bar_path = argc > 3 ? argv[3] : NULL;
		refused = argc > 4 && !strcmp(argv[4], "refused");
		return kt_run(modes[i].suite);
	}
	if (argc != 2 || argv[1][0] == '-')
		return 2;
	dev = argv[1];
	counters_before = stats_sum(dev);
	return kt_run("client_badinput");
}
