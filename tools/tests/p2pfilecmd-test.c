// SPDX-License-Identifier: GPL-2.0
/*
 * p2pfilecmd-test: p2pnvme's file command (P2PNVME_IOC_FILE_SUBMIT,
 * Documentation/files.rst step 4) on a filesystem mounted from p2pnvme's
 * disk, with KTAP output (qemu/tests/filecmd.guest.sh).
 *
 *   p2pfilecmd-test SUITE DIR /dev/p2pnvmeN /dev/p2pbarN BAR_NAME IMG_NAME ID_BASE OTHER
 *
 * DIR: a directory of the filesystem on /dev/p2pnvmeNn1 (the whole disk:
 * FIEMAP's physical offsets are the image's); OTHER: a directory on any
 * other device. Files hold p2pfile-test's pattern (the 8-byte word at file
 * offset O of file I is 0x5046 << 48 | I << 32 | O / 8, little endian),
 * ids ID_BASE + a number.
 *
 * Bad input, each errno, with nothing moved: fields, fds (closed, read on
 * a write-only fd and the other way round, a directory, a file on OTHER),
 * misalignment per statx STATX_DIOALIGN, registered buffers (no such id,
 * past the end), host memory with REQUIRE_P2P, faulting lists, a batch
 * whose last entry is bad (the writes before it never happen). Reads into
 * a registered p2pbar dma-buf (path dmabuf), a /dev/p2pbarN mapping (p2p)
 * and host memory (host, short across EOF), each checked here and, for
 * p2pmem, on the host in the BAR's backing file (BAR_NAME) while the
 * memory is held; a write from a p2pbar dma-buf checked on the host in the
 * image (IMG_NAME) at the file's extents (FIEMAP, after fsync). Batches of
 * 256, two threads with 256 each on one fd, the fd closed by another
 * thread mid-batch. As uid 65534 (the script makes the nodes 0666): a file
 * it owns into a registered dma-buf, a file it cannot open, a read-only
 * fd written (EBADF), an fd of root's received by SCM_RIGHTS, O_APPEND.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fiemap.h>
#include <linux/fs.h>

#include "harness.h"
#include "libp2p.h"
#include "p2pfile-common.h"
#include "unpriv.h"

#define KIB		1024ULL
#define MIB		(1024 * KIB)
#define NR_MAX		P2PNVME_SUBMIT_MAX

static const char *dir, *node, *bar_path, *bar_name, *img_name, *other;
static unsigned int idbase;

/* ---- the pattern, as p2pfile-test writes it ------------------------------ */

/* file @name in @d: @size bytes of @id's pattern, written back and synced */
static int mkfile(const char *d, const char *name, unsigned int id, size_t size, char *path)
{
	unsigned char *p = malloc(size ? size : 1);
	int fd, ok;

	sprintf(path, "%s/%s", d, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !p) {
		free(p);
		return -1;
	}
	pat_fill(p, id, 0, size);
	ok = pwrite(fd, p, size, 0) == (ssize_t)size && !fsync(fd);
	free(p);
	close(fd);
	return ok ? 0 : -1;
}

/* ---- the command ---------------------------------------------------------- */

static struct p2pnvme_file_io fio(uint32_t op, int fd, uint64_t off, uint64_t len, uint64_t addr,
				  uint32_t flags, uint32_t id)
{
	return (struct p2pnvme_file_io){ .argsz = sizeof(struct p2pnvme_file_io), .op = op,
					 .fd = fd, .offset = off, .len = len, .addr = addr,
					 .flags = flags, .buf_id = id };
}

/* one P2PNVME_IOC_FILE_SUBMIT: 0 or errno; *@failed as the kernel wrote it */
static int submit(int nfd, struct p2pnvme_file_io *ios, unsigned int nr, unsigned int *failed)
{
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = nr, .failed = 0xdead,
				      .ios = (uintptr_t)ios };
	int ret = ioctl(nfd, P2PNVME_IOC_FILE_SUBMIT, &sub) ? errno : 0;

	if (failed)
		*failed = sub.failed;
	return ret;
}

static int submit1(int nfd, struct p2pnvme_file_io *io)
{
	return submit(nfd, io, 1, NULL);
}

static const char *err_str(int e)
{
	return e ? strerror(e) : "success";
}

/* ---- the fixture: the controller's node, a patterned file ----------------- */

FIXTURE(fc) {
	int nfd;
	char path[512];
	unsigned int id;
	struct statx st;
};

FIXTURE_SETUP(fc)
{
	self->nfd = open(node, O_RDWR | O_CLOEXEC);
	if (self->nfd < 0)
		kt_fail("open %s: %s", node, strerror(errno));
	self->id = idbase + 1;
	if (mkfile(dir, "data", self->id, 4 * MIB, self->path))
		kt_fail("writing %s/data: %s", dir, strerror(errno));
	if (statx(AT_FDCWD, self->path, 0, STATX_DIOALIGN, &self->st) ||
	    !(self->st.stx_mask & STATX_DIOALIGN) || !self->st.stx_dio_offset_align)
		kt_fail("statx STATX_DIOALIGN of %s: no direct I/O alignment", self->path);
}

FIXTURE_TEARDOWN(fc)
{
	close(self->nfd);
}

/* every refusal, before anything is issued: its errno and the failing entry */
TEST_F(filecmd, fc, bad_input, 24, 60)
{
	int rfd = open(self->path, O_RDONLY | O_CLOEXEC);
	int wfd = open(self->path, O_WRONLY | O_CLOEXEC);
	unsigned int a = self->st.stx_dio_offset_align, failed;
	unsigned char *host = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);
	uint64_t h = (uintptr_t)host;
	struct p2pnvme_file_io io, ios[4];
	char opath[512];
	struct dbuf b;
	int dfd, ofd, closed, ret;

	if (rfd < 0 || wfd < 0 || host == MAP_FAILED)
		kt_fail("setup: %s", strerror(errno));
	ret = dbuf_get(bar_path, self->nfd, 64 * KIB, &b);
	if (ret)
		kt_fail("a registered dma-buf: %s", strerror(ret));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ofd = mkfile(other, "filecmd-other", self->id, 64 * KIB, opath) ? -1 :
	      open(opath, O_RDONLY | O_CLOEXEC);
	closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(closed);

#define REFUSED(want, what, ...) do {						\
		int want_ = (want);						\
									\
		io = fio(__VA_ARGS__);						\
		ret = submit1(self->nfd, &io);					\
		result(ret == want_, what, want_, ret);				\
	} while (0)
	io = fio(P2PNVME_OP_READ, rfd, 0, 4096, h, 0, 0);
	io.argsz = sizeof(io) - 8;
	ret = submit1(self->nfd, &io);
	result(ret == EINVAL, "argsz short of the structure: EINVAL", EINVAL, ret);
	REFUSED(EINVAL, "an unknown flag: EINVAL", P2PNVME_OP_READ, rfd, 0, 4096, h, 1U << 7, 0);
	REFUSED(EINVAL, "op flush: EINVAL", P2PNVME_OP_FLUSH, rfd, 0, 4096, h, 0, 0);
	REFUSED(EINVAL, "length 0: EINVAL", P2PNVME_OP_READ, rfd, 0, 0, h, 0, 0);
	REFUSED(EINVAL, "length past P2PNVME_FILE_MAX_LEN: EINVAL", P2PNVME_OP_READ, rfd, 0,
		P2PNVME_FILE_MAX_LEN + 4096ULL, h, 0, 0);
	REFUSED(EINVAL, "offset + length past LLONG_MAX: EINVAL", P2PNVME_OP_READ, rfd,
		INT64_MAX - 4095, 8192, h, 0, 0);
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
	REFUSED(EINVAL, "memory off stx_dio_mem_align: EINVAL", P2PNVME_OP_READ, rfd, 0, a,
		h + self->st.stx_dio_mem_align / 2 + (self->st.stx_dio_mem_align == 1), 0, 0);
	REFUSED(ENOENT, "a registered buffer id never given: ENOENT", P2PNVME_OP_READ, rfd, 0, 4096,
		0, P2PNVME_FILE_F_REGISTERED, b.id + 1000);
	REFUSED(EINVAL, "a range past the registered buffer's end: EINVAL", P2PNVME_OP_READ, rfd,
		0, 8192, 60 * KIB, P2PNVME_FILE_F_REGISTERED, b.id);
	REFUSED(EREMOTEIO, "host memory with REQUIRE_P2P: EREMOTEIO", P2PNVME_OP_READ, rfd, 0, 4096,
		h, P2PNVME_FILE_F_REQUIRE_P2P, 0);
	ret = submit(self->nfd, NULL, 0, NULL);
	result(ret == EINVAL, "nr 0: EINVAL", EINVAL, ret);
	ret = submit(self->nfd, (struct p2pnvme_file_io *)(uintptr_t)0x10, 4, NULL);
	result(ret == EFAULT, "a list at a faulting address: EFAULT", EFAULT, ret);

	/* a batch: the writes before a bad entry never happen */
	memset(host, 0xa5, MIB);
	ios[0] = fio(P2PNVME_OP_WRITE, wfd, 0, 4096, h, 0, 0);
	ios[1] = fio(P2PNVME_OP_WRITE, wfd, 4096, 4096, h, 0, 0);
	ios[2] = fio(P2PNVME_OP_WRITE, wfd, 8192, 4096, h, 0, 0);
	ios[3] = fio(P2PNVME_OP_WRITE, rfd, 12288, 4096, h, 0, 0);
	ret = submit(self->nfd, ios, 4, &failed);
	if (pread(rfd, host, 12288, 0) != 12288)
		memset(host, 0, 12288);
	tap(ret == EBADF && failed == 3 && pat_diff(host, self->id, 0, 12288) < 0,
	    "a batch of 3 writes and a bad 4th: EBADF, failed 3, the file untouched (%s, failed %u)",
	    err_str(ret), failed);
#undef REFUSED
	dbuf_put(self->nfd, &b);
}

/* a read into a registered p2pbar dma-buf: its pages, path dmabuf */
TEST_F(filecmd, fc, read_dmabuf, 4, 60)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), ret;
	struct p2pnvme_file_io io;
	long long d;
	struct dbuf b;

	ret = dbuf_get(bar_path, self->nfd, 2 * MIB, &b);
	if (fd < 0 || ret)
		kt_fail("setup: %s", strerror(fd < 0 ? errno : ret));
	io = fio(P2PNVME_OP_READ, fd, 512 * KIB, MIB, 64 * KIB, P2PNVME_FILE_F_REGISTERED |
		 P2PNVME_FILE_F_REQUIRE_P2P, b.id);
	ret = submit1(self->nfd, &io);
	result(ret == 0, "1 MiB of the file into a registered dma-buf, REQUIRE_P2P", 0, ret);
	tap(io.status == 0 && io.bytes == MIB, "status 0, 1 MiB moved (status %d, %llu bytes)",
	    io.status, (unsigned long long)io.bytes);
	tap(io.path == P2PNVME_PATH_DMABUF, "path dmabuf (%u)", io.path);
	d = pat_diff(b.p + 64 * KIB, self->id, 512 * KIB, MIB);
	tap(d < 0, "the bytes through the dma-buf's mapping are the file's (first wrong: %lld)", d);
	hostcheck("pattern %llu %s@%llu %#x %llu", MIB, bar_name,
		  (unsigned long long)b.bar_offset + 64 * KIB, self->id, 512 * KIB);
	dbuf_put(self->nfd, &b);
	close(fd);
}

/* a read into a /dev/p2pbarN mapping: a user-backed iterator of p2pmem, path p2p */
TEST_F(filecmd, fc, read_p2pmem, 3, 60)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), bfd, ret;
	struct p2pnvme_file_io io;
	struct p2pbar_info i;
	struct p2p_mem m;
	long long d;

	bfd = p2p_bar_open(bar_path, &i);
	if (fd < 0 || bfd < 0 || p2p_mem_get(bfd, 2 * MIB, 0, &m))
		kt_fail("setup: %s", strerror(errno));
	io = fio(P2PNVME_OP_READ, fd, MIB, MIB, (uintptr_t)m.p, P2PNVME_FILE_F_REQUIRE_P2P, 0);
	ret = submit1(self->nfd, &io);
	result(ret == 0, "1 MiB into a /dev/p2pbar0 mapping, REQUIRE_P2P", 0, ret);
	tap(io.bytes == MIB && io.path == P2PNVME_PATH_P2P, "1 MiB, path p2p (%llu, %u)",
	    (unsigned long long)io.bytes, io.path);
	d = pat_diff(m.p, self->id, MIB, MIB);
	tap(d < 0, "the bytes through the mapping are the file's (first wrong: %lld)", d);
	hostcheck("pattern %llu %s@%llu %#x %llu", MIB, bar_name,
		  (unsigned long long)m.bar_offset, self->id, MIB);
	p2p_mem_put(&m);
	close(bfd);
	close(fd);
}

/* host memory, a read across the end of the file: short, as pread's */
TEST_F(filecmd, fc, read_host_eof, 4, 60)
{
	unsigned char *host = mmap(NULL, MIB, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const size_t size = 3 * 4096 + 1234;
	struct p2pnvme_file_io io;
	char path[512];
	int fd, ret;

	if (host == MAP_FAILED || mkfile(dir, "eof", self->id + 1, size, path))
		kt_fail("setup: %s", strerror(errno));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	io = fio(P2PNVME_OP_READ, fd, 8192, 16384, (uintptr_t)host, 0, 0);
	ret = submit1(self->nfd, &io);
	result(ret == 0, "16 KiB from 8 KiB of a 13522-byte file into host memory", 0, ret);
	tap(io.bytes == size - 8192, "short: %zu bytes (%llu)", size - 8192,
	    (unsigned long long)io.bytes);
	tap(io.path == P2PNVME_PATH_HOST, "path host (%u)", io.path);
	tap(pat_diff(host, self->id + 1, 8192, size - 8192) < 0, "the bytes are the file's");
	close(fd);
	munmap(host, MIB);
}

/*
 * The file's extents under [@off, @off + @len) as the host must find them in
 * the image: each a "pattern" check of the image at its physical offset.
 */
static int extents_check(int fd, unsigned int id, uint64_t off, uint64_t len)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent fe[64];
	} x = { .fm = { .fm_start = off, .fm_length = len, .fm_flags = FIEMAP_FLAG_SYNC,
			.fm_extent_count = 64 } };
	unsigned int i, n = 0;

	if (ioctl(fd, FS_IOC_FIEMAP, &x))
		return -1;
	for (i = 0; i < x.fm.fm_mapped_extents; i++) {
		struct fiemap_extent *e = &x.fe[i];
		uint64_t a = e->fe_logical > off ? e->fe_logical : off;
		uint64_t z = e->fe_logical + e->fe_length < off + len ?
			     e->fe_logical + e->fe_length : off + len;

		if (z <= a || (e->fe_flags & (FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_UNKNOWN)))
			return -1;
		hostcheck("pattern %llu %s@%llu %#x %llu", (unsigned long long)(z - a), img_name,
			  (unsigned long long)(e->fe_physical + (a - e->fe_logical)), id,
			  (unsigned long long)a);
		n += z - a;
	}
	return n == len ? 0 : -1;
}

/* a write from a registered p2pbar dma-buf: the image holds it */
TEST_F(filecmd, fc, write_dmabuf, 5, 60)
{
	unsigned int id = self->id + 2;
	struct p2pnvme_file_io io;
	char path[512];
	unsigned char *back;
	struct dbuf b;
	int fd, ret;

	sprintf(path, "%s/written", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	back = malloc(MIB);
	ret = dbuf_get(bar_path, self->nfd, MIB, &b);
	if (fd < 0 || !back || ret)
		kt_fail("setup: %s", strerror(fd < 0 ? errno : ret));
	/* what the file will hold from 256 KiB on, through the dma-buf's CPU mapping */
	pat_fill(back, id, 256 * KIB, MIB);
	memcpy(b.p, back, MIB);
	io = fio(P2PNVME_OP_WRITE, fd, 256 * KIB, MIB, 0, P2PNVME_FILE_F_REGISTERED |
		 P2PNVME_FILE_F_REQUIRE_P2P, b.id);
	ret = submit1(self->nfd, &io);
	result(ret == 0, "1 MiB written from a registered dma-buf at 256 KiB, REQUIRE_P2P", 0, ret);
	tap(io.bytes == MIB && io.path == P2PNVME_PATH_DMABUF, "1 MiB, path dmabuf (%llu, %u)",
	    (unsigned long long)io.bytes, io.path);
	tap(!fsync(fd), "fsync");
	memset(back, 0, MIB);
	tap(pread(fd, back, MIB, 256 * KIB) == (ssize_t)MIB &&
	    pat_diff(back, id, 256 * KIB, MIB) < 0, "read back: the pattern");
	tap(!extents_check(fd, id, 256 * KIB, MIB),
	    "FIEMAP: written extents cover the range; the host checks each in %s", img_name);
	dbuf_put(self->nfd, &b);
	free(back);
	close(fd);
}

/* 256 transfers in one call, every one checked */
TEST_F(filecmd, fc, batch256, 3, 120)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), ret;
	struct p2pnvme_file_io *ios = calloc(NR_MAX, sizeof(*ios));
	unsigned int i, good = 0, failed;
	struct dbuf b;

	ret = dbuf_get(bar_path, self->nfd, MIB, &b);
	if (fd < 0 || !ios || ret)
		kt_fail("setup: %s", strerror(fd < 0 ? errno : ret ?: ENOMEM));
	/* the file's 4 KiB blocks in reverse order into the buffer */
	for (i = 0; i < NR_MAX; i++)
		ios[i] = fio(P2PNVME_OP_READ, fd, (uint64_t)(NR_MAX - 1 - i) * 4096, 4096,
			     (uint64_t)i * 4096, P2PNVME_FILE_F_REGISTERED, b.id);
	ret = submit(self->nfd, ios, NR_MAX, &failed);
	result(ret == 0, "256 reads of 4 KiB in one call", 0, ret);
	tap(failed == NR_MAX, "failed is nr (%u)", failed);
	for (i = 0; i < NR_MAX; i++)
		good += !ios[i].status && ios[i].bytes == 4096 &&
			ios[i].path == P2PNVME_PATH_DMABUF &&
			pat_diff(b.p + i * 4096, self->id, (uint64_t)(NR_MAX - 1 - i) * 4096,
				 4096) < 0;
	result(good == NR_MAX, "every entry: status 0, 4096 bytes, path dmabuf, its block", NR_MAX,
	       good);
	hostcheck("pattern 4096 %s@%llu %#x %u", bar_name,
		  (unsigned long long)b.bar_offset + (NR_MAX - 1) * 4096, self->id, 0);
	dbuf_put(self->nfd, &b);
	free(ios);
	close(fd);
}

/* a thread's batch (thr_batch()) or its close (thr_close()) */
struct thr {
	int nfd, fd, ret, closefd;
	uint32_t id;
	unsigned int base, good;
};

static void *thr_batch(void *arg)
{
	struct thr *t = arg;
	struct p2pnvme_file_io *ios = calloc(NR_MAX, sizeof(*ios));
	unsigned int i;

	if (!ios) {
		t->ret = ENOMEM;
		return NULL;
	}
	for (i = 0; i < NR_MAX; i++)
		ios[i] = fio(P2PNVME_OP_READ, t->fd, (uint64_t)(t->base + i) * 4096, 4096,
			     (uint64_t)(t->base + i) * 4096, P2PNVME_FILE_F_REGISTERED, t->id);
	t->ret = submit(t->nfd, ios, NR_MAX, NULL);
	for (i = 0; i < NR_MAX; i++)
		t->good += !ios[i].status && ios[i].bytes == 4096;
	free(ios);
	return NULL;
}

/* two threads, 256 transfers each, on one fd and one registered buffer */
TEST_F(filecmd, fc, two_threads, 3, 120)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), ret;
	struct thr t[2] = { { .base = 0 }, { .base = NR_MAX } };
	pthread_t th[2];
	struct dbuf b;
	int k;

	ret = dbuf_get(bar_path, self->nfd, 2 * MIB, &b);
	if (fd < 0 || ret)
		kt_fail("setup: %s", strerror(fd < 0 ? errno : ret));
	for (k = 0; k < 2; k++) {
		t[k].nfd = self->nfd;
		t[k].fd = fd;
		t[k].id = b.id;
		if (pthread_create(&th[k], NULL, thr_batch, &t[k]))
			kt_fail("pthread_create");
	}
	for (k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	tap(!t[0].ret && !t[1].ret, "both calls end well (%s, %s)", err_str(t[0].ret),
	    err_str(t[1].ret));
	result(t[0].good + t[1].good == 2 * NR_MAX, "every entry of both moved 4096 bytes",
	       2 * NR_MAX, t[0].good + t[1].good);
	tap(pat_diff(b.p, self->id, 0, 2 * MIB) < 0, "the buffer holds the file's first 2 MiB");
	dbuf_put(self->nfd, &b);
	close(fd);
}

static void *thr_close(void *arg)
{
	struct thr *t = arg;

	usleep(200);
	t->ret = close(t->closefd) ? errno : 0;
	return NULL;
}

/* the fd closed by another thread during the call: the command holds the file */
TEST_F(filecmd, fc, fd_closed, 2, 60)
{
	struct thr t = { 0 }, c = { 0 };
	pthread_t th[2];
	struct dbuf b;
	int ret;

	ret = dbuf_get(bar_path, self->nfd, 2 * MIB, &b);
	t.fd = open(self->path, O_RDONLY | O_CLOEXEC);
	if (t.fd < 0 || ret)
		kt_fail("setup: %s", strerror(t.fd < 0 ? errno : ret));
	t.nfd = self->nfd;
	t.id = b.id;
	c.closefd = t.fd;
	if (pthread_create(&th[0], NULL, thr_batch, &t) ||
	    pthread_create(&th[1], NULL, thr_close, &c))
		kt_fail("pthread_create");
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	/* closed before the call looked: EBADF, nothing moved; else all of it */
	tap((t.ret == EBADF && !t.good) || (!t.ret && t.good == NR_MAX),
	    "the call: all moved, or EBADF before any (%s, %u moved)", err_str(t.ret), t.good);
	tap(t.ret || pat_diff(b.p, self->id, 0, MIB) < 0, "what moved is the file's");
	dbuf_put(self->nfd, &b);
}

/* ---- as uid 65534 ----------------------------------------------------------- */

struct upriv {
	const char *own, *root;
	int sock;
	unsigned int id;
};

/* a file of its own into a registered dma-buf of its own */
static int u_own(void *arg)
{
	struct upriv *u = arg;
	int nfd = open(node, O_RDWR | O_CLOEXEC), fd = open(u->own, O_RDONLY | O_CLOEXEC), ret;
	struct p2pnvme_file_io io;
	struct dbuf b;

	if (nfd < 0 || fd < 0)
		return errno;
	ret = dbuf_get(bar_path, nfd, 64 * KIB, &b);
	if (ret)
		return ret;
	io = fio(P2PNVME_OP_READ, fd, 0, 64 * KIB, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	ret = submit1(nfd, &io);
	if (!ret && (io.bytes != 64 * KIB || pat_diff(b.p, u->id, 0, 64 * KIB) >= 0))
		ret = 200;
	return ret;
}

/* root's file of mode 0600: the open is what refuses */
static int u_root_open(void *arg)
{
	struct upriv *u = arg;

	return open(u->root, O_RDONLY | O_CLOEXEC) < 0 ? errno : 0;
}

/* its own file open read-only, written */
static int u_rdonly_write(void *arg)
{
	struct upriv *u = arg;
	int nfd = open(node, O_RDWR | O_CLOEXEC), fd = open(u->own, O_RDONLY | O_CLOEXEC);
	unsigned char *h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	struct p2pnvme_file_io io;

	if (nfd < 0 || fd < 0 || h == MAP_FAILED)
		return errno;
	io = fio(P2PNVME_OP_WRITE, fd, 0, 4096, (uintptr_t)h, 0, 0);
	return submit1(nfd, &io);
}

/* root's file, by an fd root opened and sent over a socket: the fd decides */
static int u_scm(void *arg)
{
	struct upriv *u = arg;
	char cbuf[CMSG_SPACE(sizeof(int))], c;
	struct iovec iov = { &c, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	unsigned char *h = mmap(NULL, 64 * KIB, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int nfd = open(node, O_RDWR | O_CLOEXEC), fd, ret;
	struct p2pnvme_file_io io;
	struct cmsghdr *cm;

	if (nfd < 0 || h == MAP_FAILED || recvmsg(u->sock, &mh, 0) != 1)
		return errno ?: EIO;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return 201;
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	io = fio(P2PNVME_OP_READ, fd, 0, 64 * KIB, (uintptr_t)h, 0, 0);
	ret = submit1(nfd, &io);
	if (!ret && (io.bytes != 64 * KIB || pat_diff(h, u->id + 1, 0, 64 * KIB) >= 0))
		ret = 200;
	return ret;
}

/* its own file open O_APPEND: a write at offset 0 lands at the end */
static int u_append(void *arg)
{
	struct upriv *u = arg;
	int nfd = open(node, O_RDWR | O_CLOEXEC);
	int fd = open(u->own, O_WRONLY | O_APPEND | O_CLOEXEC);
	unsigned char *h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	struct p2pnvme_file_io io;

	if (nfd < 0 || fd < 0 || h == MAP_FAILED)
		return errno;
	memset(h, 0x5a, 4096);
	io = fio(P2PNVME_OP_WRITE, fd, 0, 4096, (uintptr_t)h, 0, 0);
	return submit1(nfd, &io);
}

TEST_F(filecmd, fc, unprivileged, 5, 120)
{
	char own[512], root[512];
	struct upriv u = { own, root, -1, self->id + 3 };
	unsigned char blk[4096], first[4096];
	int sv[2], fd, st;
	struct stat sb;

	if (mkfile(dir, "nobody", u.id, 64 * KIB, own) || chown(own, 65534, 65534) ||
	    chmod(own, 0600) || mkfile(dir, "rootonly", u.id + 1, 64 * KIB, root) ||
	    chmod(root, 0600) || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		kt_fail("setup: %s", strerror(errno));
	if (stat(node, &sb) || (sb.st_mode & 0006) != 0006)
		kt_fail("%s is not open to others: the guest test makes it 0666 first", node);
	st = unpriv_run(u_own, &u);
	tap(st == 0, "uid 65534: a file of its own into a registered dma-buf (%s)", unpriv_str(st));
	st = unpriv_run(u_root_open, &u);
	tap(st == EACCES, "uid 65534: root's 0600 file cannot be opened: EACCES (%s)",
	    unpriv_str(st));
	st = unpriv_run(u_rdonly_write, &u);
	tap(st == EBADF, "uid 65534: its read-only fd written: EBADF (%s)", unpriv_str(st));
	{
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, c = 0;
		struct iovec iov = { &c, 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

		fd = open(root, O_RDONLY | O_CLOEXEC);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
		if (fd < 0 || sendmsg(sv[0], &mh, 0) != 1)
			kt_fail("sending root's fd: %s", strerror(errno));
		close(fd);	/* in flight only: the child gets it from the socket */
		u.sock = sv[1];
		st = unpriv_run(u_scm, &u);
		tap(st == 0, "uid 65534: root's file by an fd received by SCM_RIGHTS (%s)",
		    unpriv_str(st));
	}
	fd = open(own, O_RDONLY | O_CLOEXEC);
	if (pread(fd, first, 4096, 0) != 4096)
		memset(first, 0, sizeof(first));
	st = unpriv_run(u_append, &u);
	tap(st == 0 && !fstat(fd, &sb) && sb.st_size == 68 * KIB &&
	    pread(fd, blk, 4096, 64 * KIB) == 4096 && blk[0] == 0x5a && blk[4095] == 0x5a &&
	    pat_diff(first, u.id, 0, 4096) < 0,
	    "uid 65534: O_APPEND, offset 0: appended, 68 KiB now, the first block kept (%s)",
	    unpriv_str(st));
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

int main(int argc, char **argv)
{
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
	if ((idbase & 0xff) || idbase > 0xff00) {
		fprintf(stderr, "ID_BASE: a multiple of 0x100 below 0x10000\n");
		return 2;
	}
	return kt_run_as("filecmd", argv[1]);
}
