// SPDX-License-Identifier: GPL-2.0
/*
 * p2puring-test: p2pnvme's io_uring passthrough (P2PNVME_URING_CMD_IO),
 * KTAP on stdout, bytes checked by the host (fd 7, see ktap.h).
 *
 *   p2puring-test /dev/p2pnvmeN /dev/p2pbarN
 *	many commands in flight from one thread (reads into p2pmem and host
 *	memory, one submission), writes from p2pmem, the bad-SQE table, a
 *	ring torn down with I/O in flight
 *   p2puring-test --unbind /dev/p2pnvmeN /dev/p2pbarN BDF
 *	unbind the controller with commands in flight: every one is
 *	answered, the unbind returns
 *   p2puring-test --iopoll /dev/p2pnvmeN /dev/p2pbarN BDF
 *	the same on IORING_SETUP_IOPOLL rings, whose completions the kernel
 *	reaps when the ring polls (polled controller or not): many commands
 *	in flight, a ring polled by its SQPOLL thread, a ring torn down with
 *	I/O in flight, the unbind; and the
 *	unbind with commands in flight on every queue (a ring per CPU)
 *   p2puring-test --polled /dev/p2pnvmeN /dev/p2pbarN
 *	exit 0 if the (polled) controller refuses a ring that does not poll
 *	with EOPNOTSUPP
 *   p2puring-test --reset-race /dev/p2pnvmeN BDF ROUNDS
 *	keep reads in flight into host memory on a controller slow enough
 *	for them to time out (the faults profile's throttled one, a short
 *	io_timeout_ms), so that the watchdog aborts and resets, while the
 *	function is reset ROUNDS times through sysfs: every read is answered
 *	(done, ECANCELED or ETIMEDOUT), the controller is live afterwards
 *
 * The namespace is the bench's 64 MiB image of 512-byte LBAs; the host
 * compares the BAR's backing file (bar0) with the image (nvme0).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <linux/p2pbar.h>
#include <linux/nvme_ioctl.h>
#include <linux/p2pnvme.h>

#include "harness.h"
#include "libp2p.h"
#include "p2puring.h"
#include "p2pnvme-state.h"

#define CHUNK	65536ULL
#define NR	64		/* commands of each kind in flight at once */
#define MAX_CPUS	16
#define CPU_NR		32	/* reads per CPU: below the bench's depth of 64 */
#define RACE_QD		8	/* reads in flight during the reset race */
#define RACE_LEN	4096

#define RING_FLAGS	(IORING_SETUP_SQE128 | IORING_SETUP_CQE32)
#define NUMD(dw)	((uint32_t)((dw) - 1) << 16)	/* Get Log Page NUMDL */

/* the kinds of ring the teardown and unbind cases run on */
enum ring_kind { PLAIN, DEFER, IOPOLL };

static const char *const kind_name[] = {
	[PLAIN] = "plain ring", [DEFER] = "DEFER_TASKRUN ring", [IOPOLL] = "IOPOLL ring",
};

static unsigned int kind_flags(enum ring_kind kind)
{
	switch (kind) {
	case DEFER:
		return RING_FLAGS | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	case IOPOLL:
		return RING_FLAGS | IORING_SETUP_IOPOLL;
	default:
		return RING_FLAGS;
	}
}

static void prep(struct io_uring_sqe *sqe, int fd, const struct p2pnvme_uring_cmd *io, uint64_t tag)
{
	if (!sqe) {	/* every ring here is larger than what is queued on it */
		printf("    # the submission ring is full\n");
		exit(1);
	}
	p2p_uring_cmd(sqe, fd, P2PNVME_URING_CMD_IO, io, sizeof(*io), tag);
}

static struct p2pnvme_uring_cmd rw(uint32_t op, uint64_t slba, uint64_t len, void *buf)
{
	return (struct p2pnvme_uring_cmd){ .op = op, .slba = slba, .len = len,
					   .addr = (uintptr_t)buf };
}

/* One command alone, the byte at @poke of its 128-byte SQE set (if not -1); its CQE's res. */
static int one_poked(struct io_uring *ring, int fd, const struct p2pnvme_uring_cmd *io, uint32_t cmd_op,
		     ssize_t poke)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	int res = -EIO;

	prep(sqe, fd, io, 0);
	sqe->cmd_op = cmd_op;
	if (poke >= 0)
		((unsigned char *)sqe)[poke] = 1;
	if (io_uring_submit(ring) != 1 || p2p_uring_reap(ring, 1, &res, NULL))
		return -EIO;
	return res;
}

/* One command alone; its CQE's res. */
static int one(struct io_uring *ring, int fd, const struct p2pnvme_uring_cmd *io, uint32_t cmd_op)
{
	return one_poked(ring, fd, io, cmd_op, -1);
}

/*
 * The bad-SQE table: each answered with its errno, nothing transferred.
 * Then a good read with one byte made non-zero where the command has no
 * meaning: the rest of the 80-byte command area and SQE fields that
 * io_uring hands to the driver unchecked (the byte is each field's first,
 * so the field is non-zero whatever the byte order). io_uring itself
 * refuses an ioprio for URING_CMD (6.12, 7.2); p2pnvme checks it too.
 */
static void bad_sqes(struct io_uring *ring, int fd, int rofd, unsigned char *buf)
{
	static const struct {
		const char *what;
		ssize_t poke;
	} z[] = {
		{ "command: rsvd1 not zero",
		  offsetof(struct io_uring_sqe, cmd) + offsetof(struct p2pnvme_uring_cmd, rsvd1) },
		{ "command: rsvd2 not zero",
		  offsetof(struct io_uring_sqe, cmd) + offsetof(struct p2pnvme_uring_cmd, rsvd2) },
		{ "command area: its last byte (byte 79)", 2 * sizeof(struct io_uring_sqe) - 1 },
		{ "addr not zero", offsetof(struct io_uring_sqe, addr) },
		{ "len not zero", offsetof(struct io_uring_sqe, len) },
		{ "ioprio not zero", offsetof(struct io_uring_sqe, ioprio) },
		{ "buf_index not zero (no IORING_URING_CMD_FIXED)",
		  offsetof(struct io_uring_sqe, buf_index) },
		{ "file_index not zero", offsetof(struct io_uring_sqe, file_index) },
	};
	static const struct {
		const char *what;
		struct p2pnvme_uring_cmd io;
		int err;
	} t[] = {
		{ "unknown operation", { .op = 9, .len = 4096 }, EOPNOTSUPP },
		{ "length not a multiple of the LBA", { .len = 1000 }, EINVAL },
		{ "length 0", { .op = P2PNVME_OP_READ }, EINVAL },
		{ "beyond the namespace", { .slba = 131071, .len = 4096 }, ERANGE },
		{ "LBA overflow", { .slba = ~0ULL, .len = 4096 }, ERANGE },
		{ "unknown flag", { .flags = 1U << 31, .len = 4096 }, EINVAL },
		{ "PRP and SGL at once", { .len = 4096,
			.flags = P2PNVME_IO_F_PRP | P2PNVME_IO_F_SGL }, EINVAL },
		{ "a dma-buf (not through io_uring yet)", { .len = 4096,
			.flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = 0 }, EOPNOTSUPP },
		{ "no buffer", { .len = 4096 }, EINVAL },
		{ "an unmapped buffer", { .len = 4096, .addr = 4096 }, EFAULT },
	};
	struct p2pnvme_uring_cmd io;
	unsigned int i;
	char what[96];
	int res;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		io = t[i].io;
		if (!io.addr && !(io.flags & P2PNVME_IO_F_DMABUF) &&
		    strcmp(t[i].what, "no buffer"))
			io.addr = (uintptr_t)buf;
		res = one(ring, fd, &io, P2PNVME_URING_CMD_IO);
		snprintf(what, sizeof(what), "bad SQE: %s", t[i].what);
		result(res == -t[i].err, what, t[i].err, -res);
	}
	io = rw(P2PNVME_OP_READ, 0, 4096, buf);
	res = one_poked(ring, fd, &io, P2PNVME_URING_CMD_IO, -1);
	result(!res, "bad SQE: the good read the next rows spoil", 0, -res);
	for (i = 0; i < sizeof(z) / sizeof(z[0]); i++) {
		res = one_poked(ring, fd, &io, P2PNVME_URING_CMD_IO, z[i].poke);
		snprintf(what, sizeof(what), "bad SQE: %s", z[i].what);
		result(res == -EINVAL, what, EINVAL, -res);
	}
	res = one(ring, fd, &io, _IO(P2PNVME_IOC_MAGIC, 0x2f));
	result(res == -ENOTTY, "bad SQE: unknown cmd_op", ENOTTY, -res);
	io = rw(P2PNVME_OP_WRITE, 0, 4096, buf);
	res = one(ring, rofd, &io, P2PNVME_URING_CMD_IO);
	result(res == -EACCES, "bad SQE: a write through a read-only fd", EACCES, -res);
	io = rw(P2PNVME_OP_WRITE_ZEROES, 0, 4096, NULL);
	res = one(ring, rofd, &io, P2PNVME_URING_CMD_IO);
	result(res == -EACCES, "bad SQE: write zeroes through a read-only fd", EACCES, -res);
}

/* A ring of 64-byte SQEs cannot carry the command: -EINVAL. */
static void small_sqe(int fd, unsigned char *buf)
{
	struct p2pnvme_uring_cmd io = rw(P2PNVME_OP_READ, 0, 4096, buf);
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	int res = -EIO;

	if (io_uring_queue_init(4, &ring, 0)) {
		result(0, "a ring without SQE128 is refused", EINVAL, errno);
		return;
	}
	sqe = io_uring_get_sqe(&ring);
	if (!sqe)
		exit(1);
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = P2PNVME_URING_CMD_IO;
	memcpy(sqe->cmd, &io, 16);	/* all a 64-byte SQE has room for */
	if (io_uring_submit(&ring) == 1 && !io_uring_wait_cqe(&ring, &cqe)) {
		res = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	result(res == -EINVAL, "a ring without SQE128 is refused", EINVAL, -res);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * One submission of NR reads into p2pmem and NR into host memory, all in
 * flight at once, from this one thread; then NR writes from p2pmem.
 */
static void many(const char *dev, struct io_uring *ring, int fd, int bar)
{
	static int res[2 * NR];
	static uint64_t res2[2 * NR];
	struct p2pnvme_info info = { .argsz = sizeof(info) };
	long long requeued, cmds, room;
	cpu_set_t one_cpu, all;
	int pinned;
	struct io_uring_sqe *sqe;
	struct p2p_mem m;
	struct p2pnvme_uring_cmd io;
	unsigned char *host;
	int i, bad = 0, got, ret;

	ret = p2p_mem_get(bar, NR * CHUNK, 4096, &m);
	host = mmap(NULL, NR * CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ret || host == MAP_FAILED) {
		result(0, "p2pmem and host memory for the reads", 0, ret ? -ret : errno);
		return;
	}
	/* all of them go to this CPU's queue: what does not fit there now */
	CPU_ZERO(&one_cpu);
	CPU_SET(sched_getcpu(), &one_cpu);
	pinned = !sched_getaffinity(0, sizeof(all), &all) &&
		 !sched_setaffinity(0, sizeof(one_cpu), &one_cpu);
	if (!pinned)
		printf("    # cannot stay on one CPU: %s\n", strerror(errno));
	ret = ioctl(fd, P2PNVME_IOC_INFO, &info);
	cmds = 2 * NR * ((CHUNK + info.max_xfer - 1) / (info.max_xfer ?: 1));
	room = info.queue_depth;
	requeued = nvme_stat(dev, "queue_full_requeued");
	/* no page fault while the queue fills: the submitter does not sleep */
	memset(m.p, 0, NR * CHUNK);
	memset(host, 0, NR * CHUNK);
	hostcheck("dma-mark");
	/* reads from LBA 8192 (4 MiB) on, the host's side: nvme0@0x400000 */
	for (i = 0; i < 2 * NR; i++) {
		void *buf = i < NR ? m.p + i * CHUNK : host + (i - NR) * CHUNK;

		io = rw(P2PNVME_OP_READ, 8192 + (i % NR) * (CHUNK / 512), CHUNK, buf);
		sqe = io_uring_get_sqe(ring);
		prep(sqe, fd, &io, i);
	}
	got = io_uring_submit(ring);
	if (pinned)
		sched_setaffinity(0, sizeof(all), &all);
	printf("    # one io_uring_submit(): %d commands\n", got);
	tap(got == 2 * NR, "one io_uring_enter() submits %d commands", 2 * NR);
	if (p2p_uring_reap(ring, got > 0 ? got : 0, res, res2)) {
		tap(0, "their completions are reaped");
		return;
	}
	for (i = 0; i < 2 * NR; i++) {
		uint32_t path = res2[i] & 0xffff;

		if (res[i] || path != (i < NR ? P2PNVME_PATH_P2P : P2PNVME_PATH_HOST)) {
			if (bad++ < 4)
				printf("    # command %d: res %d, path %u\n", i, res[i], path);
		}
	}
	tap(!bad, "%d reads into p2pmem (path p2p) and %d into host memory (path host) succeed",
	    NR, NR);
	hostcheck("equal %llu bar0@%llu nvme0@%u", NR * CHUNK, (unsigned long long)m.bar_offset,
		  8192 * 512);
	/* the host's view of the host-memory reads: the same bytes */
	tap(!memcmp(host, m.p, NR * CHUNK), "host memory got the bytes p2pmem got");
	hostcheck("dma-inflight 32 1");
	/*
	 * The doorbell waits for the end of the submission (its plug) unless
	 * the submitter sleeps (io_uring creating a worker may): the inline
	 * issue finds the queue full after its room at the latest, and that
	 * command, rather than wait, is answered -EAGAIN, for io_uring's
	 * workers to issue again (they may wait for a slot). Only where
	 * io_uring issues it again from a copy of its SQE (7.x): before, it
	 * would read the SQ slot again, and p2pnvme waits for room instead.
	 */
	requeued = nvme_stat(dev, "queue_full_requeued") - requeued;
	printf("    # %lld commands, room for %lld on the queue: %lld given back to io_uring\n",
	       cmds, room, requeued);
	if (reissue_safe())
		tap(!ret && (cmds > room ? requeued > 0 : !requeued),
		    "the inline issue never waits for a slot: what its queue has no room for is requeued");
	else
		tap(!ret && !requeued,
		    "before 7.x nothing is given back to io_uring: the inline issue waits for room");

	/* writes from p2pmem: a pattern to LBA 16384 (8 MiB) on */
	memset(m.p, 0xa5, NR * CHUNK);
	for (i = 0; i < NR; i++) {
		io = rw(P2PNVME_OP_WRITE, 16384 + i * (CHUNK / 512), CHUNK, m.p + i * CHUNK);
		prep(io_uring_get_sqe(ring), fd, &io, i);
	}
	got = io_uring_submit(ring);
	bad = got != NR || p2p_uring_reap(ring, NR, res, res2);
	for (i = 0; !bad && i < NR; i++)
		bad = res[i] || (res2[i] & 0xffff) != P2PNVME_PATH_P2P;
	tap(!bad, "%d writes from p2pmem in one submission succeed", NR);
	hostcheck("fill %llu nvme0@%u 0xa5", NR * CHUNK, 16384 * 512);

	/* a flush and write zeroes through the ring too */
	io = (struct p2pnvme_uring_cmd){ .op = P2PNVME_OP_FLUSH };
	ret = one(ring, fd, &io, P2PNVME_URING_CMD_IO);
	result(!ret, "flush", 0, -ret);
	io = rw(P2PNVME_OP_WRITE_ZEROES, 16384, CHUNK, NULL);
	ret = one(ring, fd, &io, P2PNVME_URING_CMD_IO);
	result(!ret, "write zeroes over the first 64 KiB of the pattern", 0, -ret);
	hostcheck("fill %llu nvme0@%u 0x00", CHUNK, 16384 * 512);
	munmap(m.p, NR * CHUNK);
	munmap(host, NR * CHUNK);
}

/*
 * An IOPOLL ring whose submissions and polling are io_uring's SQPOLL
 * thread's: that thread calls .uring_cmd_iopoll, this one only waits for
 * the CQEs it posts.
 */
static void sqpoll(int fd, int bar)
{
	static int res[NR];
	static uint64_t res2[NR];
	struct io_uring_params p = {
		.flags = kind_flags(IOPOLL) | IORING_SETUP_SQPOLL, .sq_thread_idle = 1000,
	};
	struct io_uring ring;
	struct p2pnvme_uring_cmd io;
	struct p2p_mem m;
	int i, ret, got, bad;

	ret = io_uring_queue_init_params(2 * NR, &ring, &p);
	if (ret) {
		result(0, "an SQPOLL IOPOLL ring", 0, -ret);
		return;
	}
	ret = p2p_mem_get(bar, NR * CHUNK, 4096, &m);
	if (ret) {
		result(0, "p2pmem for the SQPOLL ring", 0, -ret);
		io_uring_queue_exit(&ring);
		return;
	}
	memset(m.p, 0, NR * CHUNK);
	for (i = 0; i < NR; i++) {
		io = rw(P2PNVME_OP_READ, 8192 + i * (CHUNK / 512), CHUNK, m.p + i * CHUNK);
		prep(io_uring_get_sqe(&ring), fd, &io, i);
	}
	got = io_uring_submit(&ring);
	bad = got != NR || p2p_uring_reap(&ring, NR, res, res2);
	for (i = 0; !bad && i < NR; i++)
		bad = res[i] || (res2[i] & 0xffff) != P2PNVME_PATH_P2P;
	tap(!bad, "SQPOLL + IOPOLL ring: %d reads into p2pmem, issued and polled by its thread",
	    NR);
	hostcheck("equal %llu bar0@%llu nvme0@%u", NR * CHUNK, (unsigned long long)m.bar_offset,
		  8192 * 512);
	munmap(m.p, NR * CHUNK);
	io_uring_queue_exit(&ring);
}

/*
 * Requests in flight when the ring goes: closing it returns at once (the
 * kernel tears the ring down in the background). On a DEFER_TASKRUN ring
 * none is answered before that (this thread never asks), nor on an IOPOLL
 * ring (nobody polls until the teardown does): afterwards every one is
 * released and the controller holds no command, within the timeout.
 */
static void teardown(const char *dev, int fd, int bar, enum ring_kind kind)
{
	struct io_uring ring;
	long held, left;
	struct p2p_mem m;
	double t0;
	int i, ret;

	ret = io_uring_queue_init(256, &ring, kind_flags(kind));
	if (!ret)
		ret = p2p_mem_get(bar, NR * CHUNK, 4096, &m);
	if (ret) {
		result(0, "a second ring", 0, -ret);
		return;
	}
	for (i = 0; i < 4 * NR; i++) {
		struct p2pnvme_uring_cmd io = rw(P2PNVME_OP_READ, (i % NR) * (CHUNK / 512), CHUNK,
					  m.p + (i % NR) * CHUNK);

		prep(io_uring_get_sqe(&ring), fd, &io, i);
	}
	if (kind == IOPOLL) {
		/*
		 * io_uring_submit() on an IOPOLL ring also polls (GETEVENTS),
		 * which may answer them all before the close: publish the
		 * entries and enter without asking for completions instead.
		 */
		io_uring_smp_store_release(ring.sq.ktail, ring.sq.sqe_tail);
		ret = io_uring_enter(ring.ring_fd, 4 * NR, 0, 0, NULL);
	} else {
		ret = io_uring_submit(&ring);
	}
	t0 = now();
	held = unreleased(dev);
	io_uring_queue_exit(&ring);	/* not one completion reaped */
	munmap(m.p, NR * CHUNK);
	while (((left = unreleased(dev)) > 0 || inflight_now(dev) > 0) && now() - t0 < 10)
		usleep(10000);
	printf("    # %d submitted, %ld requests unreleased at the close, %ld after %.3f s\n",
	       ret, held, left, now() - t0);
	tap(ret == 4 * NR && held > 0 && left == 0 && !inflight_now(dev),
	    "%s torn down with %d reads in flight: every request released", kind_name[kind],
	    4 * NR);
}

struct unbinder {
	const char *bdf;
	int err;
	double took;
};

static void *unbind_fn(void *arg)
{
	struct unbinder *u = arg;
	double t0 = now();
	int fd = open("/sys/bus/pci/drivers/p2pnvme/unbind", O_WRONLY);

	u->err = fd < 0 || write(fd, u->bdf, strlen(u->bdf)) < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	u->took = now() - t0;
	return NULL;
}

/*
 * Unbind with 4 * NR reads in flight. On a plain ring this thread reaps
 * while the unbind runs (removal and the answers race). On a DEFER_TASKRUN
 * ring task work runs only when this thread asks for completions, which it
 * does not before the unbind has returned: removal must release the
 * requests itself. Either way each is answered, the unbind returns.
 */
static int unbind_case(const char *dev, int fd, int bar, const char *bdf, enum ring_kind rk)
{
	static int res[4 * NR];
	struct unbinder u = { .bdf = bdf };
	const char *kind = kind_name[rk];
	int defer = rk == DEFER;
	char what[96];
	struct io_uring ring;
	struct p2p_mem m;
	pthread_t t;
	int i, ok = 0, gone = 0, other = 0, ret;
	long held;

	memset(res, 0, sizeof(res));
	ret = io_uring_queue_init(512, &ring, kind_flags(rk));
	if (!ret)
		ret = p2p_mem_get(bar, NR * CHUNK, 4096, &m);
	if (ret) {
		result(0, "a ring and p2pmem", 0, -ret);
		return 1;
	}
	for (i = 0; i < 4 * NR; i++) {
		struct p2pnvme_uring_cmd io = rw(P2PNVME_OP_READ, (i % NR) * (CHUNK / 512), CHUNK,
					  m.p + (i % NR) * CHUNK);

		prep(io_uring_get_sqe(&ring), fd, &io, i);
	}
	ret = io_uring_submit(&ring);
	held = inflight_now(dev);
	pthread_create(&t, NULL, unbind_fn, &u);
	if (defer)
		pthread_join(t, NULL);	/* no completion reaped meanwhile */
	if (p2p_uring_reap(&ring, ret > 0 ? ret : 0, res, NULL))
		other = -1;
	if (!defer)
		pthread_join(t, NULL);
	for (i = 0; i < ret; i++) {
		if (!res[i])
			ok++;
		else if (res[i] == -ENODEV || res[i] == -ECANCELED)
			gone++;
		else if (other++ < 4)
			printf("    # command %d: %s\n", i, strerror(-res[i]));
	}
	printf("    # %s: %d submitted, %ld at the controller when the unbind began: %d done, %d ENODEV/ECANCELED, unbind took %.2f s\n",
	       kind, ret, held, ok, gone, u.took);
	tap(ret == 4 * NR && ok + gone == ret && !other,
	    "%s: unbind with %d reads in flight: each answered, done or ENODEV/ECANCELED",
	    kind, 4 * NR);
	snprintf(what, sizeof(what), "%s: the unbind returns", kind);
	result(!u.err && u.took < 10, what, 0, u.err);
	ret = one(&ring, fd, &(struct p2pnvme_uring_cmd){ .op = P2PNVME_OP_FLUSH },
		  P2PNVME_URING_CMD_IO);
	snprintf(what, sizeof(what), "%s: a command after the unbind", kind);
	result(ret == -ENODEV, what, ENODEV, -ret);
	io_uring_queue_exit(&ring);
	munmap(m.p, NR * CHUNK);
	return 0;
}

/* p2puring-test --polled NVME BAR: exit 0 if a read is refused, EOPNOTSUPP */
static int polled(const char *dev)
{
	struct io_uring ring;
	struct p2pnvme_uring_cmd io;
	void *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open(dev, O_RDWR | O_CLOEXEC), res;

	if (fd < 0 || buf == MAP_FAILED || io_uring_queue_init(4, &ring, RING_FLAGS))
		return 1;
	io = rw(P2PNVME_OP_READ, 0, 4096, buf);
	res = one(&ring, fd, &io, P2PNVME_URING_CMD_IO);
	printf("polled controller: %s\n", strerror(-res));
	return res == -EOPNOTSUPP ? 0 : 1;
}

/* One submitter per CPU, for unbind_every_queue(). */
struct cpu_sub {
	pthread_t t;
	int cpu, fd, bar, submitted, ok, gone, other, err;
	pthread_barrier_t *ready, *go;
};

/*
 * On CPU @s->cpu (so on its queue): NR reads on an IOPOLL ring of its own,
 * submitted without polling; once the unbind has begun, reap them all.
 */
static void *cpu_sub_fn(void *arg)
{
	struct cpu_sub *s = arg;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct p2p_mem m;
	cpu_set_t set;
	int i, up = 0;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	s->err = sched_setaffinity(0, sizeof(set), &set) ? errno : 0;
	if (!s->err) {
		s->err = -io_uring_queue_init(2 * CPU_NR, &ring, kind_flags(IOPOLL));
		up = !s->err;
	}
	if (!s->err)
		s->err = -p2p_mem_get(s->bar, NR * CHUNK, 4096, &m);
	if (!s->err) {
		for (i = 0; i < CPU_NR; i++) {
			struct p2pnvme_uring_cmd io = rw(P2PNVME_OP_READ, i * (CHUNK / 512), CHUNK,
						  m.p + i * CHUNK);

			prep(io_uring_get_sqe(&ring), s->fd, &io, i);
		}
		/* no GETEVENTS: nothing is reaped before the unbind */
		io_uring_smp_store_release(ring.sq.ktail, ring.sq.sqe_tail);
		s->submitted = io_uring_enter(ring.ring_fd, CPU_NR, 0, 0, NULL);
	}
	pthread_barrier_wait(s->ready);
	pthread_barrier_wait(s->go);	/* the unbind has begun */
	for (i = 0; i < s->submitted; i++) {
		if (io_uring_wait_cqe(&ring, &cqe)) {
			s->other++;
			break;
		}
		if (!cqe->res)
			s->ok++;
		else if (cqe->res == -ENODEV || cqe->res == -ECANCELED)
			s->gone++;
		else
			s->other++;
		io_uring_cqe_seen(&ring, cqe);
	}
	if (up)
		io_uring_queue_exit(&ring);
	if (!s->err)
		munmap(m.p, NR * CHUNK);
	return NULL;
}

/*
 * Each I/O queue's SQ tail, from debugfs (qid depth vector sq_tail ...);
 * the number of queues, or 0.
 */
static int sq_tails(const char *bdf, long *tail, long *depth)
{
	char path[128], line[256];
	long qid, d, vec, t;
	int nq = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/p2pnvme/%s/queues", bdf);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%ld %ld %ld %ld", &qid, &d, &vec, &t) != 4 || !qid ||
		    nq == MAX_CPUS)
			continue;
		depth[nq] = d;
		tail[nq++] = t;
	}
	if (f)
		fclose(f);
	return nq;
}

/*
 * Controller removal with commands in flight on every queue: a thread per
 * CPU (CPU i submits to queue i modulo their number) queues CPU_NR reads on
 * an IOPOLL ring and polls only once the unbind has begun, so at the
 * unbind every read is unanswered (a poll or removal answers an IOPOLL
 * request, nothing else; the watchdog may have reaped some at the
 * controller) and every queue's SQ tail has moved. Each read is answered,
 * the unbind returns.
 */
static void unbind_every_queue(const char *dev, int fd, int bar, const char *bdf)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), t0[MAX_CPUS], t1[MAX_CPUS], depth[MAX_CPUS];
	struct cpu_sub sub[MAX_CPUS] = {};
	struct unbinder u = { .bdf = bdf };
	int i, nq, moved = 0, subs = 0, ok = 0, gone = 0, other = 0, err = 0;
	pthread_barrier_t ready, go;
	long held, sum = 0;
	pthread_t t;

	cpus = cpus < 1 ? 1 : cpus > MAX_CPUS ? MAX_CPUS : cpus;
	nq = sq_tails(bdf, t0, depth);
	pthread_barrier_init(&ready, NULL, cpus + 1);
	pthread_barrier_init(&go, NULL, cpus + 1);
	for (i = 0; i < cpus; i++) {
		sub[i] = (struct cpu_sub){ .cpu = i, .fd = fd, .bar = bar, .ready = &ready,
					   .go = &go };
		pthread_create(&sub[i].t, NULL, cpu_sub_fn, &sub[i]);
	}
	pthread_barrier_wait(&ready);
	held = unreleased(dev);
	printf("    # %ld CPUs, %d queues; submitted per queue:", cpus, nq);
	for (i = 0; nq == sq_tails(bdf, t1, depth) && i < nq; i++) {
		long d = (t1[i] - t0[i] + depth[i]) % depth[i];

		printf(" %ld", d);
		moved += d > 0;
		sum += d;
	}
	printf("; %ld requests unanswered\n", held);
	pthread_create(&t, NULL, unbind_fn, &u);
	pthread_barrier_wait(&go);
	for (i = 0; i < cpus; i++) {
		pthread_join(sub[i].t, NULL);
		err = err ? err : sub[i].err;
		subs += sub[i].submitted;
		ok += sub[i].ok;
		gone += sub[i].gone;
		other += sub[i].other;
	}
	pthread_join(t, NULL);
	tap(nq > 0 && moved == (nq < cpus ? nq : cpus) && sum == cpus * CPU_NR && held == cpus * CPU_NR,
	    "IOPOLL rings: %ld reads unanswered on every queue when the unbind began",
	    cpus * CPU_NR);
	printf("    # %d submitted, %d done, %d ENODEV/ECANCELED, unbind took %.2f s\n", subs, ok,
	       gone, u.took);
	tap(!err && subs == cpus * CPU_NR && ok + gone == subs && !other,
	    "IOPOLL rings: unbind with %d reads in flight from each of %ld CPUs: each answered",
	    CPU_NR, cpus);
	result(!u.err && u.took < 10, "IOPOLL rings on every queue: the unbind returns", 0, u.err);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&go);
}

struct resetter {
	const char *bdf;
	int rounds, done, err;
	double longest;
	int stop;	/* the resets are over (atomic) */
};

/* Reset the function @r->rounds times, 0.7 s apart, through sysfs. */
static void *reset_fn(void *arg)
{
	struct resetter *r = arg;
	char path[128];
	double t0;
	int i, fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", r->bdf);
	for (i = 0; i < r->rounds; i++) {
		usleep(700000);
		t0 = now();
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "1", 1) != 1) {
			r->err = errno;
			if (fd >= 0)
				close(fd);
			break;
		}
		close(fd);
		if (now() - t0 > r->longest)
			r->longest = now() - t0;
		r->done++;
	}
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* @bdf's state as debugfs says it ("live", "resetting", ...), or "?". */
static void ctrl_state(const char *bdf, char *st, size_t len)
{
	char path[128], line[64];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/p2pnvme/%s/queues", bdf);
	snprintf(st, len, "?");
	f = fopen(path, "r");
	if (f && fgets(line, sizeof(line), f) && !strncmp(line, "# ", 2))
		snprintf(st, len, "%.*s", (int)strcspn(line + 2, "\n"), line + 2);
	if (f)
		fclose(f);
}

/*
 * Resets of the PCI function through sysfs (p2pnvme's .reset_prepare and
 * .reset_done) racing with the io_uring watchdog: RACE_QD reads of 4 KiB
 * into host memory are kept in flight on a controller slow enough that
 * they time out (the faults profile's throttled nvme1, io_timeout_ms set
 * short by the caller), so the watchdog aborts them and has the controller
 * reset by its worker, while the function is reset @rounds times. Each
 * read is answered, done or failed cleanly; nothing is left at the
 * controller; it is live afterwards. Without the callbacks a timeout's
 * reset that overlaps the function reset finds the registers off and
 * leaves the controller dead; without the watchdog inside the I/O guard it
 * may send an Abort while a reset starts the admin queue again.
 */
static void reset_race(const char *dev, int fd, const char *bdf, int rounds)
{
	struct resetter r = { .bdf = bdf, .rounds = rounds };
	long long t0 = nvme_stat(dev, "timeouts"), r0 = nvme_stat(dev, "resets");
	struct __kernel_timespec wait = { .tv_sec = 30 };
	int ok = 0, cancelled = 0, timedout = 0, other = 0, stuck = 0;
	int i, out = 0, res, tag;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	unsigned char *buf;
	long left = -1, held = -1;
	char st[32];
	pthread_t t;
	double d0;

	buf = mmap(NULL, RACE_QD * RACE_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (buf == MAP_FAILED || io_uring_queue_init(2 * RACE_QD, &ring, RING_FLAGS)) {
		tap(0, "a ring and host memory for the reset race");
		return;
	}
	memset(buf, 0, RACE_QD * RACE_LEN);
	pthread_create(&t, NULL, reset_fn, &r);
	for (i = 0; i < RACE_QD; i++) {
		struct p2pnvme_uring_cmd io = rw(P2PNVME_OP_READ, i * (RACE_LEN / 512), RACE_LEN,
					  buf + i * RACE_LEN);

		prep(io_uring_get_sqe(&ring), fd, &io, i);
	}
	out = io_uring_submit(&ring);
	if (out < 0)
		out = 0;
	/* each answer is submitted again until the resets are over */
	while (out) {
		if (io_uring_wait_cqe_timeout(&ring, &cqe, &wait)) {
			stuck = out;
			break;
		}
		tag = cqe->user_data;
		res = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
		out--;
		if (!res)
			ok++;
		else if (res == -ECANCELED)
			cancelled++;
		else if (res == -ETIMEDOUT)
			timedout++;
		else if (other++ < 4)
			printf("    # read %d: %s\n", tag, strerror(-res));
		if (!__atomic_load_n(&r.stop, __ATOMIC_ACQUIRE)) {
			struct p2pnvme_uring_cmd io = rw(P2PNVME_OP_READ, tag * (RACE_LEN / 512),
						  RACE_LEN, buf + tag * RACE_LEN);

			prep(io_uring_get_sqe(&ring), fd, &io, tag);
			out += io_uring_submit(&ring) == 1;
		}
	}
	pthread_join(t, NULL);
	printf("    # %d resets (longest %.2f s): %d reads done, %d ECANCELED, %d ETIMEDOUT, ",
	       r.done, r.longest, ok, cancelled, timedout);
	printf("%d other, %d unanswered\n", other, stuck);
	printf("    # timeouts %lld, resets %lld meanwhile\n", nvme_stat(dev, "timeouts") - t0,
	       nvme_stat(dev, "resets") - r0);
	result(r.done == rounds && !r.err,
	       "PCI resets of the function through sysfs while io_uring reads time out", 0, r.err);
	tap(!stuck && !other && ok + cancelled + timedout > 0,
	    "every read answered: done, ECANCELED or ETIMEDOUT");
	tap(nvme_stat(dev, "timeouts") > t0 && nvme_stat(dev, "resets") - r0 >= rounds,
	    "the watchdog saw timeouts meanwhile, and every reset was counted");
	/* a reset for the last timeouts may still run: it ends within CAP.TO */
	d0 = now();
	do {
		ctrl_state(bdf, st, sizeof(st));
		if (!strcmp(st, "live"))
			break;
		usleep(100000);
	} while (now() - d0 < 30);
	tap(!strcmp(st, "live"), "the controller is live afterwards (%s after %.1f s)", st,
	    now() - d0);
	io_uring_queue_exit(&ring);
	d0 = now();
	while (((left = unreleased(dev)) > 0 || (held = inflight_now(dev)) > 0) && now() - d0 < 10)
		usleep(10000);
	held = inflight_now(dev);
	tap(!left && !held, "every request released, none at the controller (%ld, %ld)", left,
	    held);
	munmap(buf, RACE_QD * RACE_LEN);
}

/* Bind the controller again (driver_override still names p2pnvme). */
static int rebind(const char *dev, const char *bdf)
{
	int fd = open("/sys/bus/pci/drivers_probe", O_WRONLY), ret;

	ret = fd < 0 || write(fd, bdf, strlen(bdf)) < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	fd = open(dev, O_RDWR | O_CLOEXEC);
	result(!ret && fd >= 0, "p2pnvme takes the controller again", 0,
	       ret ? ret : fd < 0 ? errno : 0);
	return fd;
}

/*
 * One command of the kernel's NVMe passthrough on @ring (@op, with
 * io_uring's registered buffer @fixed - 1 when @fixed): its CQE's res,
 * *@res2 its result dword
 */
static int std_cmdx(struct io_uring *ring, int fd, unsigned int op, int fixed,
		    const struct nvme_uring_cmd *nc, uint64_t *res2)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	int res = -EIO;
	uint64_t r2 = ~0ULL;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	if (fixed) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = fixed - 1;
	}
	memcpy(sqe->cmd, nc, sizeof(*nc));
	if (io_uring_submit(ring) != 1 || p2p_uring_reap(ring, 1, &res, &r2))
		return -EIO;
	if (res2)
		*res2 = r2;
	return res;
}

static int std_cmd(struct io_uring *ring, int fd, const struct nvme_uring_cmd *nc, uint64_t *res2)
{
	return std_cmdx(ring, fd, NVME_URING_CMD_IO, 0, nc, res2);
}

/*
 * NVME_URING_CMD_IO_VEC and io_uring's registered buffers
 * (IORING_URING_CMD_FIXED), as fio and liburing's test send them: a 64 KiB
 * read in three iovecs lands what the unvectored read @want got; iovecs
 * that cannot make one buffer (a middle one off a page) are refused and
 * nothing is read; a registered buffer is read into and written from;
 * both together, and a registered buffer for p2pnvme's own command, are
 * refused as nvme-pci refuses the first.
 */
static void std_iter(struct io_uring *ring, int fd, int nsid, unsigned int lba_shift,
		     const unsigned char *want)
{
	unsigned char *p = mmap(NULL, 3 << 16, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct nvme_uring_cmd nc = { .opcode = 0x02, .nsid = nsid, .cdw10 = 2048,
				     .cdw12 = (65536 >> lba_shift) - 1 };
	struct iovec v[3], reg;
	int res, regd;

	if (p == MAP_FAILED) {
		result(0, "three buffers for the vectored cases", 0, errno);
		return;
	}
	/* 4 KiB, 56 KiB, 4 KiB in three places, not in order */
	v[0] = (struct iovec){ p + (2 << 16), 4096 };
	v[1] = (struct iovec){ p, 57344 };
	v[2] = (struct iovec){ p + (1 << 16), 4096 };
	memset(p, 0xee, 3 << 16);
	nc.addr = (uintptr_t)v;
	nc.data_len = 3;
	res = std_cmdx(ring, fd, NVME_URING_CMD_IO_VEC, 0, &nc, NULL);
	result(!res && !memcmp(v[0].iov_base, want, 4096) &&
	       !memcmp(v[1].iov_base, want + 4096, 57344) &&
	       !memcmp(v[2].iov_base, want + 61440, 4096),
	       "NVME_URING_CMD_IO_VEC: a 64 KiB Read into 3 iovecs, the bytes of one buffer",
	       0, -res);
	memset(p, 0xee, 3 << 16);
	v[1].iov_base = p + 512;
	res = std_cmdx(ring, fd, NVME_URING_CMD_IO_VEC, 0, &nc, NULL);
	result(res == -EINVAL && p[512] == 0xee && *(unsigned char *)v[0].iov_base == 0xee,
	       "... a middle iovec off a page: EINVAL, nothing read", EINVAL, -res);
	nc.data_len = 0;
	res = std_cmdx(ring, fd, NVME_URING_CMD_IO_VEC, 0, &nc, NULL);
	result(res == -EINVAL, "... no iovec: EINVAL", EINVAL, -res);

	reg = (struct iovec){ p + (1 << 16), 1 << 16 };
	regd = io_uring_register_buffers(ring, &reg, 1);
	memset(p, 0xee, 3 << 16);
	nc.addr = (uintptr_t)reg.iov_base;
	nc.data_len = 65536;
	res = regd ? regd : std_cmdx(ring, fd, NVME_URING_CMD_IO, 1, &nc, NULL);
	result(!res && !memcmp(reg.iov_base, want, 65536),
	       "IORING_URING_CMD_FIXED: a 64 KiB Read into io_uring's registered buffer", 0, -res);
	for (res = 0; res < 4096; res++)
		p[(2 << 16) + res] = res * 13 + 5;
	memcpy(reg.iov_base, p + (2 << 16), 4096);
	nc = (struct nvme_uring_cmd){ .opcode = 0x01, .nsid = nsid, .cdw10 = 60016,
				      .addr = (uintptr_t)reg.iov_base, .data_len = 4096,
				      .cdw12 = (4096 >> lba_shift) - 1 };
	res = regd ? regd : std_cmdx(ring, fd, NVME_URING_CMD_IO, 1, &nc, NULL);
	nc.opcode = 0x02;
	nc.addr = (uintptr_t)p;
	memset(p, 0, 4096);
	if (!res)
		res = std_cmd(ring, fd, &nc, NULL);
	result(!res && !memcmp(p, p + (2 << 16), 4096),
	       "... a Write from it, read back", 0, -res);
	nc.addr = (uintptr_t)v;
	nc.data_len = 1;
	v[0] = (struct iovec){ reg.iov_base, 4096 };
	res = regd ? regd : std_cmdx(ring, fd, NVME_URING_CMD_IO_VEC, 1, &nc, NULL);
	result(res == -EINVAL, "... vectored and registered together: EINVAL, as nvme-pci",
	       EINVAL, -res);
	if (!regd)
		io_uring_unregister_buffers(ring);
	munmap(p, 3 << 16);
}

/*
 * io_uring's registered buffers pin nothing per transfer: a 2 MiB Read
 * into one passes max_inflight_mb=1 (its bytes those of the same Read into
 * plain memory before the limit was set), the same Read into plain memory
 * is E2BIG, as for p2pnvme's own registered buffers.
 */
static void std_fixed_uncharged(struct io_uring *ring, int fd, int nsid, unsigned int lba_shift)
{
	const char *p = "/sys/module/p2pnvme/parameters/max_inflight_mb";
	const size_t len = 2 << 20;
	unsigned char *m = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct nvme_uring_cmd nc = { .opcode = 0x02, .nsid = nsid, .cdw10 = 4096,
				     .data_len = len, .cdw12 = (len >> lba_shift) - 1 };
	int plain, set, fixed = -EIO, unfixed = -EIO, back, regd;
	struct iovec reg;
	long long was = p2p_sysfs_num(p);
	char old[32];

	if (m == MAP_FAILED || was <= 0) {
		result(0, "IORING_URING_CMD_FIXED: 2 MiB past max_inflight_mb=1", 0,
		       m == MAP_FAILED ? errno : ENOENT);
		return;
	}
	memset(m, 0xee, 2 * len);
	nc.addr = (uintptr_t)m;
	plain = std_cmd(ring, fd, &nc, NULL);
	reg = (struct iovec){ m + len, len };
	regd = io_uring_register_buffers(ring, &reg, 1);
	snprintf(old, sizeof(old), "%lld", was);
	set = p2p_sysfs_write(p, "1");
	if (!set && !regd) {
		nc.addr = (uintptr_t)reg.iov_base;
		fixed = std_cmdx(ring, fd, NVME_URING_CMD_IO, 1, &nc, NULL);
		nc.addr = (uintptr_t)m;
		unfixed = std_cmd(ring, fd, &nc, NULL);
	}
	back = p2p_sysfs_write(p, old);
	printf("    # max_inflight_mb %lld -> 1: %s; plain read before %s, registered %s, plain %s; restored: %s\n",
	       was, strerror(-set), strerror(-plain), strerror(-fixed), strerror(-unfixed),
	       strerror(-back));
	result(!plain && !set && !regd && !fixed && !memcmp(m + len, m, len) &&
	       unfixed == -E2BIG && !back,
	       "IORING_URING_CMD_FIXED: a 2 MiB Read passes max_inflight_mb=1 (pins nothing; plain memory: E2BIG)",
	       0, -fixed);
	if (!regd)
		io_uring_unregister_buffers(ring);
	munmap(m, 2 * len);
}

/*
 * NVME_URING_CMD_ADMIN, as libnvme built with liburing reads log pages: the
 * Identify Controller data and the result dword of Get Features (Number of
 * Queues) the admin ioctl gets, Set Features refused as there.
 */
static void std_admin(struct io_uring *ring, int fd)
{
	unsigned char *a = calloc(1, 4096), *b = calloc(1, 4096);
	struct nvme_admin_cmd ac = { .opcode = 0x06, .addr = (uintptr_t)b, .data_len = 4096,
				     .cdw10 = 1 };
	struct nvme_uring_cmd nc = { .opcode = 0x06, .addr = (uintptr_t)a, .data_len = 4096,
				     .cdw10 = 1 };
	uint64_t r2 = ~0ULL;
	int res, io;

	if (!a || !b)
		return;
	res = std_cmdx(ring, fd, NVME_URING_CMD_ADMIN, 0, &nc, &r2);
	io = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &ac);
	result(!res && !io && !memcmp(a, b, 4096) && a[0] | a[1],
	       "NVME_URING_CMD_ADMIN: Identify Controller, the data of the admin ioctl", 0, -res);
	nc = (struct nvme_uring_cmd){ .opcode = 0x0a, .cdw10 = 7 };
	ac = (struct nvme_admin_cmd){ .opcode = 0x0a, .cdw10 = 7 };
	res = std_cmdx(ring, fd, NVME_URING_CMD_ADMIN, 0, &nc, &r2);
	io = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &ac);
	result(!res && !io && r2 == ac.result && r2,
	       "... Get Features (Number of Queues): the result dword in big_cqe[0]", 0, -res);
	nc.opcode = 0x09;
	nc.cdw11 = 0x00010001;
	res = std_cmdx(ring, fd, NVME_URING_CMD_ADMIN, 0, &nc, NULL);
	result(res == -EPERM, "... Set Features is not sent", EPERM, -res);
	free(a);
	free(b);
}

/*
 * The kernel's NVMe io_uring passthrough, as fio's io_uring_cmd engine and
 * liburing's test send it: struct nvme_uring_cmd with NVME_URING_CMD_IO on
 * an SQE128 + CQE32 ring, the namespace from NVME_IOCTL_ID. Reads land the
 * bytes a P2PNVME_IOC_IO read gets, a write is read back, and the answers
 * are nvme-pci's: res 0 and the result dword in big_cqe[0], -EPERM for an
 * opcode the driver does not send, -EINVAL for another namespace.
 */
/* the command line: devices, the mode's options */
static const char *dev, *bar_path, *bdf;
static int iopoll, rounds;

TEST(client_uring_std, std, 15, 60)
{
	struct p2pnvme_info info = { .argsz = sizeof(info) };
	unsigned char *a = malloc(65536), *b = malloc(65536), *w = malloc(4096);
	int fd = open(dev, O_RDWR | O_CLOEXEC), nsid, res, i;
	struct p2pnvme_io io;
	struct io_uring ring;
	uint64_t r2 = 0;

	if (fd < 0 || !a || !b || !w || ioctl(fd, P2PNVME_IOC_INFO, &info) ||
	    io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 | IORING_SETUP_CQE32))
		kt_fail("open %s, INFO, a ring: %s", dev, strerror(errno));
	nsid = ioctl(fd, NVME_IOCTL_ID);
	io = (struct p2pnvme_io){ .argsz = sizeof(io), .op = P2PNVME_OP_READ, .slba = 2048,
				  .len = 65536, .addr = (uintptr_t)b };
	memset(a, 0xee, 65536);
	res = std_cmd(&ring, fd, &(struct nvme_uring_cmd){ .opcode = 0x02, .nsid = nsid,
		      .addr = (uintptr_t)a, .data_len = 65536, .cdw10 = 2048,
		      .cdw12 = (65536 >> info.lba_shift) - 1 }, &r2);
	i = ioctl(fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	result(!res && !r2 && !i && !memcmp(a, b, 65536),
	       "NVME_URING_CMD_IO: a 64 KiB Read, the bytes of a P2PNVME_IOC_IO read, result 0",
	       0, -res);
	for (i = 0; i < 4096; i++)
		w[i] = i * 7 + 1;
	res = std_cmd(&ring, fd, &(struct nvme_uring_cmd){ .opcode = 0x01, .nsid = nsid,
		      .addr = (uintptr_t)w, .data_len = 4096, .cdw10 = 60000,
		      .cdw12 = (4096 >> info.lba_shift) - 1 }, NULL);
	memset(a, 0, 4096);
	if (!res)
		res = std_cmd(&ring, fd, &(struct nvme_uring_cmd){ .opcode = 0x02, .nsid = nsid,
			      .addr = (uintptr_t)a, .data_len = 4096, .cdw10 = 60000,
			      .cdw12 = (4096 >> info.lba_shift) - 1 }, NULL);
	result(!res && !memcmp(a, w, 4096), "a Write, then read back", 0, -res);
	res = std_cmd(&ring, fd, &(struct nvme_uring_cmd){ .opcode = 0x00, .nsid = nsid }, NULL);
	result(!res, "a Flush", 0, -res);
	res = std_cmd(&ring, fd, &(struct nvme_uring_cmd){ .opcode = 0x09, .nsid = nsid }, NULL);
	result(res == -EPERM, "Dataset Management is not sent", EPERM, -res);
	res = std_cmd(&ring, fd, &(struct nvme_uring_cmd){ .opcode = 0x02, .nsid = nsid + 1,
		      .addr = (uintptr_t)a, .data_len = 4096,
		      .cdw12 = (4096 >> info.lba_shift) - 1 }, NULL);
	result(res == -EINVAL, "another namespace", EINVAL, -res);
	std_iter(&ring, fd, nsid, info.lba_shift, b);
	std_fixed_uncharged(&ring, fd, nsid, info.lba_shift);
	std_admin(&ring, fd);
	io_uring_queue_exit(&ring);
	close(fd);
}

/*
 * A command of the kernel's passthrough on a ring with smaller entries
 * (@setup without IORING_SETUP_SQE128 or IORING_SETUP_CQE32): its CQE's
 * res. The command area is left zero: nothing may read it.
 */
static int std_small(unsigned int setup, int fd, unsigned int op)
{
	size_t sqe_size = setup & IORING_SETUP_SQE128 ? 128 : 64;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	int res = -EIO;

	if (io_uring_queue_init(4, &ring, setup))
		return -EIO;
	sqe = io_uring_get_sqe(&ring);
	if (sqe) {
		memset(sqe, 0, sqe_size);
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = fd;
		sqe->cmd_op = op;
		if (io_uring_submit(&ring) == 1 && !io_uring_wait_cqe(&ring, &cqe)) {
			res = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	io_uring_queue_exit(&ring);
	return res;
}

/*
 * Where the kernel's io_uring passthrough is nvme-pci's, the answers are
 * nvme-pci's: a ring without 128-byte SQEs and 32-byte CQEs is
 * EOPNOTSUPP (nvme_uring_cmd_checks()), for I/O and admin commands alike;
 * NVME_URING_CMD_ADMIN takes io_uring's registered buffers
 * (IORING_URING_CMD_FIXED) and returns the whole status of a failed
 * command (DNR too: QEMU's unknown log page is 0x4002); an I/O command
 * takes a buffer larger than its NLB's bytes and moves just those.
 */
TEST(client_uring_std, std_as_nvme_pci, 6, 60)
{
	unsigned char *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open(dev, O_RDWR | O_CLOEXEC), res, nsid, regd, i;
	struct p2pnvme_info info = { .argsz = sizeof(info) };
	struct nvme_admin_cmd ac;
	struct nvme_uring_cmd nc;
	struct p2pnvme_io io;
	struct io_uring ring;
	struct iovec reg;

	if (fd < 0 || m == MAP_FAILED || ioctl(fd, P2PNVME_IOC_INFO, &info) ||
	    io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 | IORING_SETUP_CQE32))
		kt_fail("open %s, INFO, a ring: %s", dev, strerror(errno));
	nsid = ioctl(fd, NVME_IOCTL_ID);

	res = std_small(0, fd, NVME_URING_CMD_IO);
	result(res == -EOPNOTSUPP, "NVME_URING_CMD_IO on a ring of 64-byte SQEs: EOPNOTSUPP, as nvme-pci",
	       EOPNOTSUPP, -res);
	res = std_small(0, fd, NVME_URING_CMD_ADMIN);
	result(res == -EOPNOTSUPP, "NVME_URING_CMD_ADMIN on a ring of 64-byte SQEs: EOPNOTSUPP",
	       EOPNOTSUPP, -res);
	res = std_small(IORING_SETUP_SQE128, fd, NVME_URING_CMD_IO);
	result(res == -EOPNOTSUPP, "NVME_URING_CMD_IO, SQE128 without CQE32: EOPNOTSUPP, as nvme-pci",
	       EOPNOTSUPP, -res);

	/* Identify Controller into io_uring's registered buffer, and by the ioctl */
	reg = (struct iovec){ m, 8192 };
	regd = io_uring_register_buffers(&ring, &reg, 1);
	memset(m, 0xee, 1 << 16);
	nc = (struct nvme_uring_cmd){ .opcode = 0x06, .cdw10 = 1, .addr = (uintptr_t)m,
				      .data_len = 4096 };
	res = regd ? regd : std_cmdx(&ring, fd, NVME_URING_CMD_ADMIN, 1, &nc, NULL);
	ac = (struct nvme_admin_cmd){ .opcode = 0x06, .cdw10 = 1, .addr = (uintptr_t)m + 32768,
				      .data_len = 4096 };
	i = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &ac);
	result(!res && !i && !memcmp(m, m + 32768, 4096) && m[4096] == 0xee,
	       "NVME_URING_CMD_ADMIN with IORING_URING_CMD_FIXED: the Identify data of the ioctl",
	       0, -res);
	if (!regd)
		io_uring_unregister_buffers(&ring);

	nc = (struct nvme_uring_cmd){ .opcode = 0x02, .cdw10 = NUMD(128) | 0xca,
				      .addr = (uintptr_t)m, .data_len = 512 };
	res = std_cmdx(&ring, fd, NVME_URING_CMD_ADMIN, 0, &nc, NULL);
	printf("    # Get Log Page 0xca: res %d (%#x)\n", res, res > 0 ? res : 0);
	tap(res > 0 && (res & 0x7ff) == 0x002 && (res & 0x4000),
	    "NVME_URING_CMD_ADMIN: an unknown log page's whole status, DNR included (0x4002 on nvme-pci)");

	/* one LBA at 2048 into a buffer 4 KiB larger; P2PNVME_IOC_IO's read beside */
	memset(m, 0xee, 1 << 16);
	nc = (struct nvme_uring_cmd){ .opcode = 0x02, .nsid = nsid, .addr = (uintptr_t)m,
				      .data_len = (1U << info.lba_shift) + 4096, .cdw10 = 2048 };
	res = std_cmd(&ring, fd, &nc, NULL);
	io = (struct p2pnvme_io){ .argsz = sizeof(io), .op = P2PNVME_OP_READ, .slba = 2048,
				  .len = 1U << info.lba_shift, .addr = (uintptr_t)m + 32768 };
	i = ioctl(fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	result(!res && !i && !memcmp(m, m + 32768, io.len) && m[io.len] == 0xee &&
	       m[io.len + 4095] == 0xee,
	       "NVME_URING_CMD_IO: a Read of one LBA, data_len 4 KiB more than its bytes", 0, -res);
	io_uring_queue_exit(&ring);
	munmap(m, 1 << 16);
	close(fd);
}

/* the client's and the provider's char devices */
FIXTURE(devs) {
	int fd, bar;
};

FIXTURE_SETUP(devs)
{
	self->fd = open(dev, O_RDWR | O_CLOEXEC);
	self->bar = bar_path ? open(bar_path, O_RDWR | O_CLOEXEC) : -1;
	if (self->fd < 0 || (bar_path && self->bar < 0))
		kt_fail("open %s, %s: %s", dev, bar_path, strerror(errno));
}

FIXTURE_TEARDOWN(devs)
{
	close(self->bar);
	close(self->fd);
}

/* ... and a ring of 256 entries (IOPOLL in client_uring_iopoll), a read-only fd, memory */
FIXTURE(ring) {
	int fd, rofd, bar;
	unsigned char *buf;
	struct io_uring ring;
};

FIXTURE_SETUP(ring)
{
	self->fd = open(dev, O_RDWR | O_CLOEXEC);
	self->rofd = open(dev, O_RDONLY | O_CLOEXEC);
	self->bar = open(bar_path, O_RDWR | O_CLOEXEC);
	self->buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (self->fd < 0 || self->rofd < 0 || self->bar < 0 || self->buf == MAP_FAILED ||
	    io_uring_queue_init(256, &self->ring, iopoll ? kind_flags(IOPOLL) : RING_FLAGS))
		kt_fail("setup: %s", strerror(errno));
}

FIXTURE_TEARDOWN(ring)
{
	io_uring_queue_exit(&self->ring);
	munmap(self->buf, 1 << 20);
	close(self->bar);
	close(self->rofd);
	close(self->fd);
}

TEST_F(client_uring, ring, many, 7, 120)
{
	many(dev, &self->ring, self->fd, self->bar);
}

TEST_F(client_uring, ring, bad_sqes, 22, 60)
{
	bad_sqes(&self->ring, self->fd, self->rofd, self->buf);
}

TEST_F(client_uring, ring, small_sqe, 1, 30)
{
	small_sqe(self->fd, self->buf);
}

TEST_F(client_uring, ring, teardown_defer, 1, 60)
{
	teardown(dev, self->fd, self->bar, DEFER);
}

/* every completion of these is reaped by the test's own polling */
TEST_F(client_uring_iopoll, ring, many_iopoll, 7, 120)
{
	many(dev, &self->ring, self->fd, self->bar);
}

TEST_F(client_uring_iopoll, ring, sqpoll, 1, 60)
{
	sqpoll(self->fd, self->bar);
}

TEST_F(client_uring_iopoll, ring, teardown_iopoll, 1, 60)
{
	teardown(dev, self->fd, self->bar, IOPOLL);
}

TEST_F(client_uring_iopoll, devs, unbind_iopoll, 3, 60)
{
	unbind_case(dev, self->fd, self->bar, bdf, IOPOLL);
}

TEST(client_uring_iopoll, rebind_iopoll, 1, 60)
{
	close(rebind(dev, bdf));
}

TEST_F(client_uring_iopoll, devs, unbind_every_queue, 3, 60)
{
	unbind_every_queue(dev, self->fd, self->bar, bdf);
}

TEST(client_uring_iopoll, rebind_every_queue, 1, 60)
{
	close(rebind(dev, bdf));
}

TEST_F(client_uring_unbind, devs, unbind_plain, 3, 60)
{
	unbind_case(dev, self->fd, self->bar, bdf, PLAIN);
}

TEST(client_uring_unbind, rebind_plain, 1, 60)
{
	close(rebind(dev, bdf));
}

TEST_F(client_uring_unbind, devs, unbind_defer, 3, 60)
{
	unbind_case(dev, self->fd, self->bar, bdf, DEFER);
}

TEST_F(client_faults_uring_reset, devs, reset_race, 5, 300)
{
	reset_race(dev, self->fd, bdf, rounds);
}

int main(int argc, char **argv)
{
	int unbind = argc > 1 && !strcmp(argv[1], "--unbind");
	int opt;

	iopoll = argc > 1 && !strcmp(argv[1], "--iopoll");
	opt = unbind || iopoll;
	if (argc == 4 && !strcmp(argv[1], "--polled"))
		return polled(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--std")) {
		dev = argv[2];
		return kt_run("client_uring_std");
	}
	if (argc == 5 && !strcmp(argv[1], "--reset-race")) {
		dev = argv[2];
		bdf = argv[3];
		rounds = atoi(argv[4]);
		if (rounds < 1)
			return 2;
		return kt_run("client_faults_uring_reset");
	}
	if (argc != 3 + 2 * opt) {
		fprintf(stderr,
			"usage: p2puring-test [--unbind | --iopoll] /dev/p2pnvmeN /dev/p2pbarN%s\n"
			"       p2puring-test --reset-race /dev/p2pnvmeN BDF ROUNDS\n",
			opt ? " BDF" : "");
		return 2;
	}
	dev = argv[1 + opt];
	bar_path = argv[2 + opt];
	bdf = opt ? argv[4] : NULL;
	return kt_run(unbind ? "client_uring_unbind" : iopoll ? "client_uring_iopoll" :
		      "client_uring");
}
