// SPDX-License-Identifier: GPL-2.0
/*
 * p2pfileuring-test: p2pnvme's file command through io_uring
 * (P2PNVME_URING_CMD_FILE_IO, Documentation/files.rst step 5) on a
 * filesystem mounted from p2pnvme's disk, with KTAP output
 * (qemu/tests/filecmd.guest.sh, after p2pfilecmd-test).
 *
 *   p2pfileuring-test SUITE DIR /dev/p2pnvmeN /dev/p2pbarN BAR_NAME IMG_NAME ID_BASE OTHER
 *
 * The arguments and the files' pattern as p2pfilecmd-test's (the 8-byte
 * word at file offset O of file I is 0x5046 << 48 | I << 32 | O / 8, little
 * endian), ids ID_BASE + 0x80 + a number.
 *
 * Each refusal's errno in the CQE (the fields, the fds, a directory, a
 * file on OTHER, misalignment, registered buffers, REQUIRE_P2P, a ring
 * without SQE128, a byte in the reserved area or an unused SQE field, an
 * IORING_SETUP_IOPOLL ring). Reads into a registered p2pbar dma-buf (path
 * dmabuf in the CQE's extra word) and a /dev/p2pbarN mapping (p2p), checked
 * here and on the host in the BAR's backing file (BAR_NAME); a short read
 * into host memory across EOF, counted (stats/file_reads_host, its bytes)
 * before its CQE; a write from a p2pbar dma-buf checked on the
 * host in the image (IMG_NAME) at the file's extents; a 512-byte write
 * into a reflinked xfs file, which xfs sends to its page cache: path bounce
 * in the CQE (6.1's and 6.12's xfs; SKIP elsewhere). 256 commands in
 * flight on a plain ring, a DEFER_TASKRUN ring and an SQPOLL ring, each
 * checked. The ring closed, and its task gone, with 256 in flight: bounded,
 * the buffer unregistered after, the next command good. max_inflight_mb
 * at 1: a 2 MiB command at a user address -E2BIG in its CQE; a 1 MiB one
 * answered but not reaped (DEFER_TASKRUN) holds the room, so an ioctl of
 * the same open file is EAGAIN, nothing moved, until it is reaped.
 *
 * Step 3's races (p2pfile-common.h, as p2pfilecmd-test runs them through
 * the ioctl): truncate, punch hole, collapse and insert range,
 * reallocating writes, reflink, exchange range and move extents where the
 * filesystem has them, each against a stream of reads through the ring
 * into a registered dma-buf and a /dev/p2pbarN mapping, each read 32
 * commands of 4 KiB or 8 of 16 KiB in flight at once; every word each CQE
 * claims read the target's (zero or moved where the operation makes it
 * so), a canary file written into what each operation freed in none of
 * them (here and on the host); every CQE's res and extra word (the
 * memory's path); the target whole after, here and on the host.
 * P2P_FILES_RACE_MS (default 300) how long each racer goes on at least.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/fiemap.h>
#include <linux/fs.h>

#include "harness.h"
#include "libp2p.h"
#include "p2puring.h"
#include "p2pfile-common.h"

#define KIB		1024ULL
#define MIB		(1024 * KIB)
#define NR_FLIGHT	256
#define RING_FLAGS	(IORING_SETUP_SQE128 | IORING_SETUP_CQE32)

static const char *dir, *node, *bar_path, *bar_name, *img_name, *other;
static unsigned int idbase;
static int race_ms = 300;

/* ---- the command ---------------------------------------------------------- */

static struct p2pnvme_uring_file_cmd fcmd(uint32_t op, int fd, uint64_t off, uint64_t len,
					  uint64_t addr, uint32_t flags, uint32_t id)
{
	return (struct p2pnvme_uring_file_cmd){ .op = op, .fd = fd, .offset = off, .len = len,
						.addr = addr, .flags = flags, .buf_id = id };
}

static void prep(struct io_uring_sqe *sqe, int nfd, const struct p2pnvme_uring_file_cmd *c,
		 uint64_t tag)
{
	if (!sqe)
		kt_fail("the submission ring is full");
	p2p_uring_cmd(sqe, nfd, P2PNVME_URING_CMD_FILE_IO, c, sizeof(*c), tag);
}

/* One command alone, the byte at @poke of its SQE set (if not -1): its CQE's res. */
static int one_poked(struct io_uring *ring, int nfd, const struct p2pnvme_uring_file_cmd *c,
		     ssize_t poke, uint64_t *res2)
{
	int res = -EIO;
	uint64_t r2 = ~0ULL;

	prep(io_uring_get_sqe(ring), nfd, c, 0);
	if (poke >= 0)
		((unsigned char *)ring->sq.sqes)[(ring->sq.sqe_tail - 1) % *ring->sq.kring_entries *
						 2 * sizeof(struct io_uring_sqe) + poke] = 1;
	if (io_uring_submit(ring) != 1 || p2p_uring_reap(ring, 1, &res, &r2))
		return -EIO;
	if (res2)
		*res2 = r2;
	return res;
}

static int one(struct io_uring *ring, int nfd, const struct p2pnvme_uring_file_cmd *c,
	       uint64_t *res2)
{
	return one_poked(ring, nfd, c, -1, res2);
}

static int ring_init(struct io_uring *ring, unsigned int entries, unsigned int flags)
{
	struct io_uring_params p = { .flags = flags, .sq_thread_idle = 1000 };

	return io_uring_queue_init_params(entries, ring, &p);
}

/* ---- the fixture: the controller's node, a patterned file, a ring --------- */

FIXTURE(fu) {
	int nfd;
	char path[512];
	unsigned int id;
	struct statx st;
	struct io_uring ring;
};

FIXTURE_SETUP(fu)
{
	int ret;

	self->id = idbase + 0x81;
	self->nfd = node_and_file(node, dir, "udata", self->id, 4 * MIB, self->path, &self->st);
	ret = ring_init(&self->ring, 2 * NR_FLIGHT, RING_FLAGS);
	if (ret)
		kt_fail("io_uring_queue_init: %s", strerror(-ret));
}

FIXTURE_TEARDOWN(fu)
{
	io_uring_queue_exit(&self->ring);
	close(self->nfd);
}

/* every refusal in the CQE, before anything is issued */
TEST_F(fileuring, fu, bad_input, 24, 60)
{
	int rfd = open(self->path, O_RDONLY | O_CLOEXEC);
	int wfd = open(self->path, O_WRONLY | O_CLOEXEC);
	unsigned int a = self->st.stx_dio_offset_align;
	unsigned char *host = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);
	uint64_t h = (uintptr_t)host;
	struct p2pnvme_uring_file_cmd c;
	struct io_uring small, ip;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	char opath[512];
	struct dbuf b;
	int dfd, ofd, closed, ret;

	if (rfd < 0 || wfd < 0 || host == MAP_FAILED)
		kt_fail("setup: %s", strerror(errno));
	dbuf_must(bar_path, self->nfd, 64 * KIB, &b);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ofd = mkfile(other, "fileuring-other", self->id, 64 * KIB, opath) ? -1 :
	      open(opath, O_RDONLY | O_CLOEXEC);
	closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(closed);

#define REFUSED(want, what, ...) do {						\
		int want_ = (want);						\
									\
		c = fcmd(__VA_ARGS__);						\
		ret = one(&self->ring, self->nfd, &c, NULL);			\
		result(ret == -want_, what, want_, -ret);			\
	} while (0)
	REFUSED(EINVAL, "an unknown flag: EINVAL", P2PNVME_OP_READ, rfd, 0, 4096, h, 1U << 7, 0);
	REFUSED(EINVAL, "op flush: EINVAL", P2PNVME_OP_FLUSH, rfd, 0, 4096, h, 0, 0);
	REFUSED(EINVAL, "length 0: EINVAL", P2PNVME_OP_READ, rfd, 0, 0, h, 0, 0);
	REFUSED(EINVAL, "length past P2PNVME_FILE_MAX_LEN: EINVAL", P2PNVME_OP_READ, rfd, 0,
		P2PNVME_FILE_MAX_LEN + 4096ULL, h, 0, 0);
	REFUSED(EINVAL, "offset 2^64 - 4096 (overflow): EINVAL", P2PNVME_OP_READ, rfd,
		~4095ULL, 4096, h, 0, 0);
	REFUSED(EINVAL, "user address 0: EINVAL", P2PNVME_OP_READ, rfd, 0, 4096, 0, 0, 0);
	REFUSED(EFAULT, "a kernel address: EFAULT", P2PNVME_OP_READ, rfd, 0, 4096,
		0xffff888000000000ULL, 0, 0);
	REFUSED(EBADF, "fd -1: EBADF", P2PNVME_OP_READ, -1, 0, 4096, h, 0, 0);
	REFUSED(EBADF, "a closed fd: EBADF", P2PNVME_OP_READ, closed, 0, 4096, h, 0, 0);
	REFUSED(EBADF, "a read through a write-only fd: EBADF", P2PNVME_OP_READ, wfd, 0, 4096, h,
		0, 0);
	REFUSED(EBADF, "a write through a read-only fd: EBADF", P2PNVME_OP_WRITE, rfd, 0, 4096, h,
		0, 0);
	REFUSED(EISDIR, "a directory: EISDIR", P2PNVME_OP_READ, dfd, 0, 4096, h, 0, 0);
	REFUSED(EXDEV, "a file on another device: EXDEV", P2PNVME_OP_READ, ofd, 0, 4096, h, 0, 0);
	REFUSED(EINVAL, "an offset off the direct I/O alignment: EINVAL", P2PNVME_OP_READ, rfd,
		a / 2, a, h, 0, 0);
	REFUSED(EINVAL, "a length off the direct I/O alignment: EINVAL", P2PNVME_OP_READ, rfd, 0,
		a + a / 2, h, 0, 0);
	REFUSED(ENOENT, "a registered buffer id never given: ENOENT", P2PNVME_OP_READ, rfd, 0, 4096,
		0, P2PNVME_FILE_F_REGISTERED, b.id + 1000);
	REFUSED(EINVAL, "a range past the registered buffer's end: EINVAL", P2PNVME_OP_READ, rfd,
		0, 8192, 60 * KIB, P2PNVME_FILE_F_REGISTERED, b.id);
	REFUSED(EREMOTEIO, "host memory with REQUIRE_P2P: EREMOTEIO", P2PNVME_OP_READ, rfd, 0, 4096,
		h, P2PNVME_FILE_F_REQUIRE_P2P, 0);
#undef REFUSED
	c = fcmd(P2PNVME_OP_READ, rfd, 0, 4096, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	ret = one_poked(&self->ring, self->nfd, &c,
			offsetof(struct io_uring_sqe, cmd) +
			offsetof(struct p2pnvme_uring_file_cmd, rsvd) + 39, NULL);
	result(ret == -EINVAL, "a byte in the reserved area: EINVAL", EINVAL, -ret);
	ret = one_poked(&self->ring, self->nfd, &c, offsetof(struct io_uring_sqe, len), NULL);
	result(ret == -EINVAL, "the SQE's len set: EINVAL", EINVAL, -ret);
	ret = one(&self->ring, self->nfd, &c, NULL);
	tap(ret == 4096, "the same command untouched: 4096 bytes (%d)", ret);

	/* a misaligned write through host memory: refused, the file untouched */
	memset(host, 0xa5, MIB);
	c = fcmd(P2PNVME_OP_WRITE, wfd, a / 2, a, h, 0, 0);
	ret = one(&self->ring, self->nfd, &c, NULL);
	tap(ret == -EINVAL && pread(rfd, host, 2 * a, 0) == 2 * (ssize_t)a &&
	    pat_diff(host, self->id, 0, 2 * a) < 0,
	    "a misaligned write: EINVAL, the file untouched (%d)", ret);

	/* a ring of 64-byte SQEs */
	ret = ring_init(&small, 8, IORING_SETUP_CQE32);
	if (ret)
		kt_fail("a ring without SQE128: %s", strerror(-ret));
	sqe = io_uring_get_sqe(&small);
	if (!sqe)
		kt_fail("a ring without SQE128: no SQE");
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = self->nfd;
	sqe->cmd_op = P2PNVME_URING_CMD_FILE_IO;
	ret = io_uring_submit(&small) == 1 && !io_uring_wait_cqe(&small, &cqe) ? cqe->res : -EIO;
	result(ret == -EINVAL, "a ring without SQE128: EINVAL", EINVAL, -ret);
	io_uring_queue_exit(&small);

	/* an IORING_SETUP_IOPOLL ring: refused */
	ret = ring_init(&ip, 8, RING_FLAGS | IORING_SETUP_IOPOLL);
	if (ret)
		kt_fail("an IOPOLL ring: %s", strerror(-ret));
	c = fcmd(P2PNVME_OP_READ, rfd, 0, 4096, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	ret = one(&ip, self->nfd, &c, NULL);
	result(ret == -EOPNOTSUPP, "an IORING_SETUP_IOPOLL ring: EOPNOTSUPP", EOPNOTSUPP, -ret);
	io_uring_queue_exit(&ip);

	dbuf_put(self->nfd, &b);
	munmap(host, MIB);
}

/* a read into a registered p2pbar dma-buf: path dmabuf in the CQE */
TEST_F(fileuring, fu, read_dmabuf, 3, 60)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), ret;
	struct p2pnvme_uring_file_cmd c;
	uint64_t res2;
	long long d;
	struct dbuf b;

	ret = dbuf_get(bar_path, self->nfd, 2 * MIB, &b);
	if (fd < 0 || ret)
		kt_fail("setup: %s", strerror(fd < 0 ? errno : ret));
	memset(b.p, 0xee, 2 * MIB);
	c = fcmd(P2PNVME_OP_READ, fd, 512 * KIB, MIB, 64 * KIB,
		 P2PNVME_FILE_F_REGISTERED | P2PNVME_FILE_F_REQUIRE_P2P, b.id);
	ret = one(&self->ring, self->nfd, &c, &res2);
	tap(ret == (int)MIB, "1 MiB of the file into a registered dma-buf, REQUIRE_P2P: res %d",
	    ret);
	tap(res2 == P2PNVME_URING_RES2(P2PNVME_PATH_DMABUF, 0), "res2: path dmabuf (%#llx)",
	    (unsigned long long)res2);
	d = pat_diff(b.p + 64 * KIB, self->id, 512 * KIB, MIB);
	tap(d < 0, "the bytes through the dma-buf's mapping are the file's (first wrong: %lld)", d);
	hostcheck("pattern %llu %s@%llu %#x %llu", MIB, bar_name,
		  (unsigned long long)b.bar_offset + 64 * KIB, self->id, 512 * KIB);
	dbuf_put(self->nfd, &b);
	close(fd);
}

/* a read into a /dev/p2pbarN mapping: path p2p */
TEST_F(fileuring, fu, read_p2pmem, 3, 60)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), bfd, ret;
	struct p2pnvme_uring_file_cmd c;
	struct p2pbar_info i;
	struct p2p_mem m;
	uint64_t res2;
	long long d;

	bfd = p2p_bar_open(bar_path, &i);
	if (fd < 0 || bfd < 0 || p2p_mem_get(bfd, 2 * MIB, 0, &m))
		kt_fail("setup: %s", strerror(errno));
	c = fcmd(P2PNVME_OP_READ, fd, MIB, MIB, (uintptr_t)m.p, P2PNVME_FILE_F_REQUIRE_P2P, 0);
	ret = one(&self->ring, self->nfd, &c, &res2);
	tap(ret == (int)MIB, "1 MiB into a /dev/p2pbar0 mapping, REQUIRE_P2P: res %d", ret);
	tap(res2 == P2PNVME_URING_RES2(P2PNVME_PATH_P2P, 0), "res2: path p2p (%#llx)",
	    (unsigned long long)res2);
	d = pat_diff(m.p, self->id, MIB, MIB);
	tap(d < 0, "the bytes through the mapping are the file's (first wrong: %lld)", d);
	hostcheck("pattern %llu %s@%llu %#x %llu", MIB, bar_name,
		  (unsigned long long)m.bar_offset, self->id, MIB);
	p2p_mem_put(&m);
	close(bfd);
	close(fd);
}

/* one of the controller's counters (stats/@counter), or -1 */
static long long nvme_stat(const char *counter)
{
	char file[64];

	snprintf(file, sizeof(file), "stats/%s", counter);
	return node_num(node, file);
}

/*
 * host memory, a read across the end of the file: short; counted by the
 * bytes it moved before its CQE came
 */
TEST_F(fileuring, fu, read_host_eof, 4, 60)
{
	unsigned char *host = mmap(NULL, MIB, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const size_t size = 3 * 4096 + 1234;
	long long n0, n1, b0, b1, e0, e1;
	struct p2pnvme_uring_file_cmd c;
	char path[512];
	uint64_t res2;
	int fd, ret;

	if (host == MAP_FAILED || mkfile(dir, "ueof", self->id + 1, size, path))
		kt_fail("setup: %s", strerror(errno));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	c = fcmd(P2PNVME_OP_READ, fd, 8192, 16384, (uintptr_t)host, 0, 0);
	n0 = nvme_stat("file_reads_host");
	b0 = nvme_stat("file_bytes_host");
	e0 = nvme_stat("file_errors");
	ret = one(&self->ring, self->nfd, &c, &res2);
	n1 = nvme_stat("file_reads_host");
	b1 = nvme_stat("file_bytes_host");
	e1 = nvme_stat("file_errors");
	tap(ret == (int)(size - 8192), "16 KiB from 8 KiB of a 13522-byte file: short, res %d",
	    ret);
	tap(n0 >= 0 && b0 >= 0 && e0 >= 0 && n1 - n0 == 1 && b1 - b0 == (long long)(size - 8192) &&
	    e1 == e0,
	    "counted by its CQE: file_reads_host +1 (%lld), file_bytes_host +%zu (%lld), no error (%lld)",
	    n1 - n0, size - 8192, b1 - b0, e1 - e0);
	tap(res2 == P2PNVME_URING_RES2(P2PNVME_PATH_HOST, 0), "res2: path host (%#llx)",
	    (unsigned long long)res2);
	tap(pat_diff(host, self->id + 1, 8192, size - 8192) < 0, "the bytes are the file's");
	close(fd);
	munmap(host, MIB);
}

/* a write from a registered p2pbar dma-buf: the image holds it */
TEST_F(fileuring, fu, write_dmabuf, 4, 60)
{
	unsigned int id = self->id + 2;
	struct p2pnvme_uring_file_cmd c;
	unsigned char *back;
	char path[512];
	uint64_t res2;
	struct dbuf b;
	int fd, ret;

	sprintf(path, "%s/uwritten", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	back = malloc(MIB);
	ret = dbuf_get(bar_path, self->nfd, MIB, &b);
	if (fd < 0 || !back || ret)
		kt_fail("setup: %s", strerror(fd < 0 ? errno : ret));
	pat_fill(back, id, 128 * KIB, MIB);
	memcpy(b.p, back, MIB);
	c = fcmd(P2PNVME_OP_WRITE, fd, 128 * KIB, MIB, 0,
		 P2PNVME_FILE_F_REGISTERED | P2PNVME_FILE_F_REQUIRE_P2P, b.id);
	ret = one(&self->ring, self->nfd, &c, &res2);
	tap(ret == (int)MIB, "1 MiB written from a registered dma-buf at 128 KiB: res %d", ret);
	tap(res2 == P2PNVME_URING_RES2(P2PNVME_PATH_DMABUF, 0), "res2: path dmabuf (%#llx)",
	    (unsigned long long)res2);
	memset(back, 0, MIB);
	tap(!fsync(fd) && pread(fd, back, MIB, 128 * KIB) == (ssize_t)MIB &&
	    pat_diff(back, id, 128 * KIB, MIB) < 0, "fsync, read back: the pattern");
	tap(!extents_check(fd, img_name, id, 128 * KIB, MIB),
	    "FIEMAP: written extents cover the range; the host checks each in %s", img_name);
	dbuf_put(self->nfd, &b);
	free(back);
	close(fd);
}

/*
 * A write xfs sends to its page cache (p2pfilecmd-test's write_cow_bounce,
 * through io_uring): 512 bytes into a reflinked file from a registered
 * p2pbar dma-buf, without REQUIRE_P2P (which asks a write for whole
 * blocks: refused at the check). Answered with its bytes and path bounce
 * in res2, counted on the bounce path before the CQE; the file holds the
 * bytes (here and in the image). SKIP where the filesystem has no reflink
 * (ext4) or reports the CoW write alignment (7.x's xfs: refused at the
 * check).
 */
TEST_F(fileuring, fu, write_cow_bounce, 4, 60)
{
	unsigned int id = self->id + 5, nid = self->id + 6;
	long long n0, n1, b0, b1, f0, f1;
	struct p2pnvme_uring_file_cmd c;
	unsigned char *back = malloc(64 * KIB);
	char path[512], cpath[512];
	int fd, cfd, ret, res;
	uint64_t r2 = 0;
	struct statx st;
	struct dbuf b;

	if (!back || mkfile(dir, "ucow", id, 64 * KIB, path))
		kt_fail("setup: %s", strerror(errno));
	sprintf(cpath, "%s/ucow-clone", dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	cfd = open(cpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || cfd < 0)
		kt_fail("setup: %s", strerror(errno));
	errno = 0;
	if (ioctl(cfd, FICLONE, fd) ||
	    statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) || st.stx_dio_offset_align > 512) {
		ret = errno;
		close(cfd);
		close(fd);
		unlink(cpath);
		unlink(path);
		if (!ret)
			kt_skip("the reflinked file's direct I/O write alignment is %u (7.x's xfs reports the allocation unit): refused at the check",
				st.stx_dio_offset_align);
		kt_skip("no reflink here (FICLONE: %s): ext4, or xfs without it", strerror(ret));
	}
	dbuf_must(bar_path, self->nfd, 64 * KIB, &b);
	pat_fill(b.p, nid, 512, 512);
	n0 = nvme_stat("file_writes_bounce");
	b0 = nvme_stat("file_bytes_bounce");
	f0 = nvme_stat("file_errors");
	c = fcmd(P2PNVME_OP_WRITE, fd, 512, 512, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	res = one(&self->ring, self->nfd, &c, &r2);
	n1 = nvme_stat("file_writes_bounce");
	b1 = nvme_stat("file_bytes_bounce");
	f1 = nvme_stat("file_errors");
	tap(res == 512 && r2 == P2PNVME_URING_RES2(P2PNVME_PATH_BOUNCE, 0),
	    "512 bytes into a reflinked file (xfs's page cache): res %d, res2 path bounce (%#llx)",
	    res, (unsigned long long)r2);
	tap(n0 >= 0 && f0 >= 0 && n1 - n0 == 1 && b1 - b0 == 512 && f1 == f0,
	    "counted by its CQE: file_writes_bounce +1 (%lld), file_bytes_bounce +512 (%lld), no error (%lld)",
	    n1 - n0, b1 - b0, f1 - f0);
	tap(!fsync(fd) && pread(fd, back, 64 * KIB, 0) == (ssize_t)(64 * KIB) &&
	    pat_diff(back, id, 0, 512) < 0 && pat_diff(back + 512, nid, 512, 512) < 0 &&
	    pat_diff(back + 1024, id, 1024, 63 * KIB) < 0,
	    "fsync, read back: the 512 bytes written, the rest as before");
	tap(!extents_check(fd, img_name, nid, 512, 512),
	    "FIEMAP: the written range is on the disk; the host checks it in %s", img_name);
	dbuf_put(self->nfd, &b);
	close(cfd);
	close(fd);
	unlink(cpath);
	unlink(path);
	free(back);
}

/*
 * 256 reads of 4 KiB in flight on a ring set up with @flags, the file's
 * blocks in reverse order into a registered dma-buf; each CQE and block
 * checked.
 */
static void flight(struct _kt_fixture_fu *self, unsigned int flags, const char *what)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), ret;
	static int res[NR_FLIGHT];
	static uint64_t res2[NR_FLIGHT];
	struct p2pnvme_uring_file_cmd c;
	unsigned int i, good = 0;
	struct io_uring ring;
	struct dbuf b;

	ret = dbuf_get(bar_path, self->nfd, MIB, &b);
	if (fd < 0 || ret)
		kt_fail("setup: %s", strerror(fd < 0 ? errno : ret));
	ret = ring_init(&ring, NR_FLIGHT, RING_FLAGS | flags);
	if (ret)
		kt_fail("a %s ring: %s", what, strerror(-ret));
	memset(b.p, 0xee, MIB);
	for (i = 0; i < NR_FLIGHT; i++) {
		c = fcmd(P2PNVME_OP_READ, fd, (uint64_t)(NR_FLIGHT - 1 - i) * 4096, 4096,
			 (uint64_t)i * 4096, P2PNVME_FILE_F_REGISTERED, b.id);
		prep(io_uring_get_sqe(&ring), self->nfd, &c, i);
		res[i] = -EIO;
	}
	ret = io_uring_submit(&ring);
	tap(ret == NR_FLIGHT, "%s (%d submitted)", what, ret);
	ret = p2p_uring_reap(&ring, NR_FLIGHT, res, res2);
	for (i = 0; !ret && i < NR_FLIGHT; i++)
		good += res[i] == 4096 && res2[i] == P2PNVME_URING_RES2(P2PNVME_PATH_DMABUF, 0) &&
			pat_diff(b.p + i * 4096, self->id, (uint64_t)(NR_FLIGHT - 1 - i) * 4096,
				 4096) < 0;
	tap(good == NR_FLIGHT, "every CQE: res 4096, path dmabuf, its block (%u of %d)", good,
	    NR_FLIGHT);
	io_uring_queue_exit(&ring);
	dbuf_put(self->nfd, &b);
	close(fd);
}

TEST_F(fileuring, fu, flight256, 2, 120)
{
	flight(self, 0, "256 reads of 4 KiB submitted at once");
}

TEST_F(fileuring, fu, flight256_defer_taskrun, 2, 120)
{
	flight(self, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	       "DEFER_TASKRUN ring: 256 reads of 4 KiB submitted at once");
}

TEST_F(fileuring, fu, flight256_sqpoll, 2, 120)
{
	flight(self, IORING_SETUP_SQPOLL, "SQPOLL ring: 256 reads of 4 KiB submitted at once");
}

/* 256 reads into @b submitted on a new ring of @nfd; the ring not reaped */
static int submit_unreaped(struct io_uring *ring, int nfd, int fd, struct dbuf *b)
{
	struct p2pnvme_uring_file_cmd c;
	unsigned int i;
	int ret = ring_init(ring, NR_FLIGHT, RING_FLAGS);

	if (ret)
		return ret;
	for (i = 0; i < NR_FLIGHT; i++) {
		c = fcmd(P2PNVME_OP_READ, fd, (uint64_t)i * 4096, 4096, (uint64_t)i * 4096,
			 P2PNVME_FILE_F_REGISTERED, b->id);
		prep(io_uring_get_sqe(ring), nfd, &c, i);
	}
	return io_uring_submit(ring) == NR_FLIGHT ? 0 : -EIO;
}

/*
 * The ring closed with 256 in flight, then a task that exits with 256 in
 * flight on its ring: both bounded; the buffer then unregisters and the
 * next command reads well.
 */
TEST_F(fileuring, fu, teardown, 5, 120)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), ret, st = -1;
	struct p2pnvme_uring_file_cmd c;
	struct io_uring ring;
	long long t0;
	struct dbuf b;
	pid_t pid;

	ret = dbuf_get(bar_path, self->nfd, MIB, &b);
	if (fd < 0 || ret)
		kt_fail("setup: %s", strerror(fd < 0 ? errno : ret));
	ret = submit_unreaped(&ring, self->nfd, fd, &b);
	if (ret)
		kt_fail("256 reads: %s", strerror(-ret));
	t0 = now_ms();
	io_uring_queue_exit(&ring);
	tap(now_ms() - t0 < 10000, "the ring closed with 256 in flight: %lld ms", now_ms() - t0);

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		kt_fail("fork: %s", strerror(errno));
	if (!pid)
		/* no reap, no close: the exit */
		_exit(submit_unreaped(&ring, self->nfd, fd, &b) ? 1 : 0);
	t0 = now_ms();
	while (now_ms() - t0 < 10000 && waitpid(pid, &st, WNOHANG) == 0)
		usleep(10000);
	tap(WIFEXITED(st) && !WEXITSTATUS(st),
	    "a task exits with 256 in flight on its ring: gone in %lld ms (status %#x)",
	    now_ms() - t0, st);
	if (st == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	ret = p2p_nvme_unregister(self->nfd, b.id);
	result(ret == 0, "the registered buffer unregisters after", 0, -ret);
	munmap(b.p, b.len);
	close(b.dfd);
	ret = dbuf_get(bar_path, self->nfd, MIB, &b);
	if (ret)
		kt_fail("a new registered dma-buf: %s", strerror(ret));
	c = fcmd(P2PNVME_OP_READ, fd, 0, MIB, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	ret = one(&self->ring, self->nfd, &c, NULL);
	tap(ret == (int)MIB, "the next command: 1 MiB (%d)", ret);
	tap(pat_diff(b.p, self->id, 0, MIB) < 0, "its bytes are the file's");
	dbuf_put(self->nfd, &b);
	close(fd);
}

/* ---- max_inflight_mb ------------------------------------------------------- */

#define INFLIGHT_PARAM	"/sys/module/p2pnvme/parameters/max_inflight_mb"

/* one P2PNVME_IOC_FILE_SUBMIT of one read at a user address: 0 or errno */
static int ioctl_read(int nfd, int fd, uint64_t off, uint64_t len, void *p, unsigned int *failed,
		      uint64_t *bytes)
{
	struct p2pnvme_file_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .fd = fd,
				      .offset = off, .len = len, .addr = (uintptr_t)p };
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = 1, .failed = 0xdead,
				      .ios = (uintptr_t)&io };
	int ret = ioctl(nfd, P2PNVME_IOC_FILE_SUBMIT, &sub) ? errno : 0;

	*failed = sub.failed;
	*bytes = io.bytes;
	return ret;
}

/*
 * max_inflight_mb through io_uring, at 1 MiB: a command of 2 MiB at a user
 * address never fits, -E2BIG in its CQE (a refusal: extra word 0); a 1 MiB
 * one answered but not reaped on a DEFER_TASKRUN ring holds its charge
 * (let go when the task runs its answer), so an ioctl's 4 KiB at a user
 * address on the same open file is EAGAIN for the whole batch, nothing
 * moved: refused, not queued; once the answer is reaped the same ioctl
 * moves. The parameter is put back.
 */
TEST_F(fileuring, fu, inflight, 5, 60)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), set, back, big, res = -EIO, held = 0;
	unsigned char *host = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long long was = p2p_sysfs_num(INFLIGHT_PARAM);
	unsigned int failed = 0, tries, k, untouched = 1;
	struct p2pnvme_uring_file_cmd c;
	uint64_t res2 = ~0ULL, bytes = 0;
	int r1 = -1, r2 = -1;
	struct io_uring ring;
	char old[32];

	if (fd < 0 || host == MAP_FAILED || was <= 0)
		kt_fail("setup: %s (max_inflight_mb %lld)", strerror(errno), was);
	if (ring_init(&ring, 8, RING_FLAGS | IORING_SETUP_SINGLE_ISSUER |
			       IORING_SETUP_DEFER_TASKRUN))
		kt_fail("a DEFER_TASKRUN ring");
	snprintf(old, sizeof(old), "%lld", was);
	memset(host, 0xee, 4 * MIB);
	set = p2p_sysfs_write(INFLIGHT_PARAM, "1");
	c = fcmd(P2PNVME_OP_READ, fd, 0, 2 * MIB, (uintptr_t)host, 0, 0);
	big = one(&ring, self->nfd, &c, &res2);
	/* the held read: answered inline (its issue outran the disk) holds nothing, try again */
	for (tries = 0; tries < 5 && !held; tries++) {
		c = fcmd(P2PNVME_OP_READ, fd, MIB, MIB, (uintptr_t)host + 2 * MIB, 0, 0);
		prep(io_uring_get_sqe(&ring), self->nfd, &c, 0);
		if (io_uring_submit(&ring) != 1)
			break;
		held = !io_uring_cq_ready(&ring);
		if (!held && p2p_uring_reap(&ring, 1, &res, NULL))
			break;
	}
	if (held) {
		r1 = ioctl_read(self->nfd, fd, 0, 4096, host + 3 * MIB, &failed, &bytes);
		for (k = 0; k < 4096; k++)
			untouched &= host[3 * MIB + k] == 0xee;
		/* the reap runs the answer: the charge let go */
		if (p2p_uring_reap(&ring, 1, &res, NULL))
			res = -EIO;
		r2 = ioctl_read(self->nfd, fd, 0, 4096, host + 3 * MIB, &k, &bytes);
	}
	back = p2p_sysfs_write(INFLIGHT_PARAM, old);
	io_uring_queue_exit(&ring);

	tap(!set, "max_inflight_mb %lld -> 1 (%s)", was, strerror(-set));
	tap(big == -E2BIG && res2 == 0,
	    "a command of 2 MiB at a user address: -E2BIG in its CQE, extra word 0 (res %d, %#llx)",
	    big, (unsigned long long)res2);
	if (!held) {
		tap(1,
		    "a 1 MiB command held unreaped leaves no room for an ioctl # SKIP its answer came within its issue %u times: nothing held the room",
		    tries);
		tap(1, "reaped, the room is back # SKIP nothing was held");
	} else {
		tap(r1 == EAGAIN && failed == 1 && untouched,
		    "a 1 MiB command answered, not reaped (DEFER_TASKRUN): an ioctl's 4 KiB at a user address on the same file is EAGAIN, failed 1 (nr), nothing moved (%s, failed %u)",
		    strerror(r1), failed);
		tap(res == (int)MIB && pat_diff(host + 2 * MIB, self->id, MIB, MIB) < 0 && !r2 &&
		    bytes == 4096 && pat_diff(host + 3 * MIB, self->id, 0, 4096) < 0,
		    "reaped: its 1 MiB the file's bytes (res %d); the same ioctl then moves 4 KiB (%s)",
		    res, strerror(r2));
	}
	tap(!back && p2p_sysfs_num(INFLIGHT_PARAM) == was, "max_inflight_mb back to %lld (%s)", was,
	    strerror(-back));
	munmap(host, 4 * MIB);
	close(fd);
}

/* ---- step 3's races through io_uring --------------------------------------- */

#define RACE_QD		32	/* an even read of the stream: commands in flight at once */
#define RACE_QD_BIG	8	/* an odd one's */

/*
 * A registered dma-buf and a /dev/p2pbarN mapping (eight RACE_SLOT slots
 * each), a ring of its own
 */
FIXTURE(ur) {
	int nfd, dirfd, fstype, bfd;
	struct dbuf b;
	struct p2p_mem m;
	struct io_uring ring;
};

FIXTURE_SETUP(ur)
{
	struct p2pbar_info i;
	struct statfs sf;
	int ret;

	self->nfd = open(node, O_RDWR | O_CLOEXEC);
	self->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (self->nfd < 0 || self->dirfd < 0 || fstatfs(self->dirfd, &sf))
		kt_fail("open %s, %s: %s", node, dir, strerror(errno));
	self->fstype = sf.f_type;
	ret = dbuf_get(bar_path, self->nfd, RACE_TSIZE, &self->b);
	if (ret)
		kt_fail("a registered dma-buf: %s", strerror(ret));
	self->bfd = p2p_bar_open(bar_path, &i);
	if (self->bfd < 0 || p2p_mem_get(self->bfd, RACE_TSIZE, 0, &self->m))
		kt_fail("a mapping of %s: %s", bar_path, strerror(errno));
	ret = ring_init(&self->ring, 2 * RACE_QD, RING_FLAGS);
	if (ret)
		kt_fail("io_uring_queue_init: %s", strerror(-ret));
}

FIXTURE_TEARDOWN(ur)
{
	io_uring_queue_exit(&self->ring);
	p2p_mem_put(&self->m);
	close(self->bfd);
	dbuf_put(self->nfd, &self->b);
	close(self->dirfd);
	close(self->nfd);
}

/*
 * The stream's reads (race_run()): into the registered dma-buf, then into
 * the mapping, two reads each in turn (p2pfilecmd-test's slots); each read
 * its slot's pieces submitted at once, all in flight together: RACE_QD
 * commands of 4 KiB, then RACE_QD_BIG of 16 KiB, in turn. Every CQE is
 * counted, and one whose res is more than its piece, or that moved bytes
 * with an extra word other than the memory's path (dmabuf, p2p) and
 * status 0, is a wrong answer.
 */
struct ur_reader {
	struct race_reader r;
	struct _kt_fixture_ur *self;
	long long cqes, wrong;
	uint64_t first_res2;
	int first_res;
};

static unsigned char *ur_slot(struct race_reader *r, long long n)
{
	struct _kt_fixture_ur *self = ((struct ur_reader *)r)->self;

	return ((n >> 1) & 1 ? self->m.p : self->b.p) + (n % 8) * RACE_SLOT;
}

static ssize_t ur_read(struct race_reader *r, long long n, int fd, unsigned char *p, uint64_t off,
		       ssize_t *res, unsigned int *np)
{
	struct ur_reader *ur = (struct ur_reader *)r;
	struct _kt_fixture_ur *self = ur->self;
	unsigned int k = n & 1 ? RACE_QD_BIG : RACE_QD, i;
	size_t piece = RACE_SLOT / k;
	int dmabuf = !((n >> 1) & 1), first_err = 0;
	uint64_t want2 = P2PNVME_URING_RES2(dmabuf ? P2PNVME_PATH_DMABUF : P2PNVME_PATH_P2P, 0);
	struct p2pnvme_uring_file_cmd c;
	uint64_t pending = (1ULL << k) - 1;
	struct io_uring_cqe *cqe;
	ssize_t total = 0;
	int ret;

	for (i = 0; i < k; i++) {
		c = dmabuf ? fcmd(P2PNVME_OP_READ, fd, off + i * piece, piece,
				  (n % 8) * RACE_SLOT + i * piece, P2PNVME_FILE_F_REGISTERED,
				  self->b.id) :
			     fcmd(P2PNVME_OP_READ, fd, off + i * piece, piece,
				  (uintptr_t)(p + i * piece), 0, 0);
		prep(io_uring_get_sqe(&self->ring), self->nfd, &c, i);
	}
	ret = io_uring_submit(&self->ring);
	if (ret != (int)k)
		kt_fail("%d commands submitted of %u: %s", ret, k,
			ret < 0 ? strerror(-ret) : "short");
	/* every one reaped before the slot is used again */
	while (pending) {
		ret = io_uring_wait_cqe(&self->ring, &cqe);
		if (ret)
			kt_fail("io_uring_wait_cqe: %s", strerror(-ret));
		i = cqe->user_data;
		if (cqe->user_data >= k || !(pending & 1ULL << i))
			kt_fail("a CQE of no command in flight (user_data %llu)",
				(unsigned long long)cqe->user_data);
		res[i] = cqe->res;
		ur->cqes++;
		if (cqe->res > (int)piece || (cqe->res >= 0 && cqe->big_cqe[0] != want2)) {
			if (!ur->wrong++) {
				ur->first_res = cqe->res;
				ur->first_res2 = cqe->big_cqe[0];
			}
			/* a res beyond its piece: not one of its bytes is claimed read */
			if (cqe->res > (int)piece)
				res[i] = 0;
		}
		io_uring_cqe_seen(&self->ring, cqe);
		pending &= ~(1ULL << i);
	}
	/* race_run() checks each piece for the bytes its CQE reports */
	for (i = 0; i < k; i++) {
		if (res[i] < 0 && !first_err)
			first_err = res[i];
		if (res[i] > 0)
			total += res[i];
	}
	*np = k;
	return first_err ? first_err : total;
}

/*
 * A stream of file commands through io_uring reading the target while the
 * racer does @kind (race_run(): three cases); every CQE's answer (a case);
 * then the target read whole by one command into the dma-buf: its
 * pattern, here and on the host.
 */
static void ur_race(struct _kt_fixture_ur *self, enum race kind)
{
	struct race_ctx rc = { .dirfd = self->dirfd, .fstype = self->fstype, .ms = race_ms,
			       .bar_name = bar_name };
	struct ur_reader ur = { .r = { "the dma-buf or the mapping", ur_slot, ur_read },
				.self = self };
	unsigned int tid = idbase + 0xa0 + 4 * kind;
	struct p2pnvme_uring_file_cmd c;
	uint64_t res2 = ~0ULL;
	long long d = 0;
	int fd, ret;

	race_skip_absent(&rc, kind);
	memset(self->b.p, 0, RACE_TSIZE);
	memset(self->m.p, 0, RACE_TSIZE);
	race_run(&rc, kind, tid, &ur.r);
	tap(!ur.wrong && ur.cqes >= RACE_MIN_READS * RACE_QD_BIG,
	    "%s: %lld CQEs, each res a -errno or at most its command's bytes, its extra word the memory's path (dmabuf, p2p) with status 0 when it moved bytes (%lld wrong)",
	    race_name(kind), ur.cqes, ur.wrong);
	if (ur.wrong)
		printf("    # the first wrong CQE: res %d, extra word %#llx\n", ur.first_res,
		       (unsigned long long)ur.first_res2);
	fd = race_open(&rc, "target", O_RDONLY);
	memset(self->b.p, 0xee, RACE_TSIZE);
	c = fcmd(P2PNVME_OP_READ, fd, 0, RACE_TSIZE, 0,
		 P2PNVME_FILE_F_REGISTERED | P2PNVME_FILE_F_REQUIRE_P2P, self->b.id);
	ret = fd < 0 ? -errno : one(&self->ring, self->nfd, &c, &res2);
	if (ret == (int)RACE_TSIZE)
		d = pat_diff(self->b.p, tid, 0, RACE_TSIZE);
	tap(ret == (int)RACE_TSIZE && res2 == P2PNVME_URING_RES2(P2PNVME_PATH_DMABUF, 0) && d < 0,
	    "%s: the target after, whole by one command into the dma-buf: res %d, path dmabuf (%#llx), its pattern (first wrong %lld)",
	    race_name(kind), ret, (unsigned long long)res2, d);
	if (ret == (int)RACE_TSIZE)
		hostcheck("pattern %llu %s@%llu %#x 0", RACE_TSIZE, bar_name,
			  (unsigned long long)self->b.bar_offset, tid);
	if (fd >= 0)
		close(fd);
	race_end(&rc);
}

TEST_F(fileuring, ur, race_truncate, 5, 120)
{
	ur_race(self, R_TRUNCATE);
}

TEST_F(fileuring, ur, race_punch, 5, 120)
{
	ur_race(self, R_PUNCH);
}

TEST_F(fileuring, ur, race_collapse, 5, 120)
{
	ur_race(self, R_COLLAPSE);
}

TEST_F(fileuring, ur, race_insert, 5, 120)
{
	ur_race(self, R_INSERT);
}

TEST_F(fileuring, ur, race_write, 5, 120)
{
	ur_race(self, R_WRITE);
}

TEST_F(fileuring, ur, race_reflink, 5, 120)
{
	ur_race(self, R_REFLINK);
}

TEST_F(fileuring, ur, race_exchange, 5, 120)
{
	ur_race(self, R_EXCHANGE);
}

TEST_F(fileuring, ur, race_defrag, 5, 120)
{
	ur_race(self, R_DEFRAG);
}

int main(int argc, char **argv)
{
	const char *ms = getenv("P2P_FILES_RACE_MS");

	if (argc != 9) {
		fprintf(stderr,
			"usage: %s SUITE DIR /dev/p2pnvmeN /dev/p2pbarN BAR_NAME IMG_NAME ID_BASE OTHER\n",
			argv[0]);
		return 2;
	}
	dir = argv[2];
	node = argv[3];
	bar_path = argv[4];
	bar_name = argv[5];
	img_name = argv[6];
	idbase = strtoul(argv[7], NULL, 0);
	other = argv[8];
	if (ms && atoi(ms) > 0)
		race_ms = atoi(ms);
	if ((idbase & 0xff) || idbase > 0xff00) {
		fprintf(stderr, "ID_BASE: a multiple of 0x100 below 0x10000\n");
		return 2;
	}
	return kt_run_as("fileuring", argv[1]);
}
