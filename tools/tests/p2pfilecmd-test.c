// SPDX-License-Identifier: GPL-2.0
/*
 * p2pfilecmd-test: p2pnvme's file command (P2PNVME_IOC_FILE_SUBMIT,
 * Documentation/files.rst step 4) on a filesystem mounted from p2pnvme's
 * disk, with KTAP output (qemu/tests/filecmd.guest.sh).
 *
 *   p2pfilecmd-test [--bar-unbind BDF | --bar-reload BDF MODULE | --fallback | --crypt |
 *		     --verity | --gpu GPU_BAR GPU_BDF]
 *		     SUITE DIR /dev/p2pnvmeN /dev/p2pbarN BAR_NAME IMG_NAME ID_BASE OTHER
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
 * The counters (stats/file_*, and the disk's bytes_p2p) moved by exactly
 * what known operations did: a P2P read, a sparse file read (its hole and
 * unwritten extent in the file command's bytes, not in the disk's), a
 * write, one refusal of each reason. A 512-byte write into a reflinked xfs
 * file, which xfs sends to its page cache: path bounce, counted there, the
 * disk's bytes_p2p unmoved, the bytes in the image (6.1's and 6.12's xfs;
 * SKIP on ext4 and 7.x). An active swap file: writes ETXTBSY
 * before the batch is issued (counted), reads as pread's (SKIP without
 * CONFIG_SWAP). max_inflight_mb at 1: a batch of 2 MiB at user addresses
 * E2BIG as a whole (counted once), registered memory not counted.
 * Step 3's races (p2pfile-common.h): truncate, punch hole, collapse and
 * insert range, reallocating writes, reflink, exchange range and move
 * extents where the filesystem has them, each against a stream of file
 * commands into a registered dma-buf and a /dev/p2pbarN mapping, single
 * entries and batches; a canary file written into what each operation
 * freed never reaches them (here and on the host); P2P_FILES_RACE_MS
 * (default 300) how long each racer goes on at least.
 *
 * --fallback: the page cache after the command's check (Documentation/
 * files.rst, step 8), on ext4 mounted nodelalloc, where the data
 * journalling flag (chattr +j) takes a file's direct I/O away: a child
 * toggles it on a fully written file against a stream of 4 KiB transfers
 * into and from a registered p2pbar dma-buf and a /dev/p2pbarN mapping
 * (single entries and batches of 8), for at least a second and until the
 * race was hit 4 times (15 s at most): REQUIRE_P2P reads, each the file's
 * bytes, moved by the controller (the disk's bytes_p2p moves by exactly
 * theirs) or refused EREMOTEIO (once the page cache served it) or
 * EOPNOTSUPP (at the check); the same reads without REQUIRE_P2P, the page
 * cache's on path bounce; REQUIRE_P2P writes of the file's own bytes, as
 * the reads. Each counted exactly (stats/file_*). A kernel whose command
 * does not judge a transfer after it ended fails them: the page cache's
 * transfers come back on the p2p or dmabuf path, bytes the disk never
 * moved.
 *
 * --fallback also streams its reads into the dma-buf through placeholder
 * pages (file_placeholder_force): with REQUIRE_P2P counted as through
 * p2pbar's own pages; without, the page cache's bytes copied into the
 * dma-buf through its vmap (path bounce, file_cpu_bytes).
 *
 * --gpu GPU_BAR GPU_BDF: reads into the bench's GPU personalities (p2pgpu,
 * bound to GPU_BDF, exporting from the BAR whose backing file is GPU_BAR)
 * through placeholder pages (Documentation/files.rst, step 6), on ext4:
 * each personality from a plain file through the ioctl and io_uring (the
 * exporter's CPU view and the host's), a sparse file and a preallocated
 * range (zero_len, the buffer untouched there), REQUIRE_P2P with a hole, a
 * fragmented file, writes EOPNOTSUPP, amdgpu's and xe's buffers evicted
 * under a stream of reads; a p2pbar dma-buf forced through placeholders
 * (its vmap writes the zeros; checked on the host); p2pgpu unbound
 * mid-stream, last (nvidia's reads ENODEV after it, amdgpu's go on in host
 * memory; bounded), and bound again. The --crypt suite has a read of the
 * encrypted file through placeholders: EOPNOTSUPP.
 *
 * --verity: verity files on ext4 made with -O verity, which have no direct
 * I/O (STATX_DIOALIGN 0): reads into a /dev/p2pbarN mapping, a registered
 * p2pbar dma-buf (its pages and placeholders) and host memory EOPNOTSUPP at
 * the check, nothing issued or counted, the file whole by pread; and
 * fs-verity turned on for fresh files under a stream of REQUIRE_P2P reads:
 * each moved whole (the file's bytes, the disk's bytes_p2p exactly theirs)
 * or refused EOPNOTSUPP or EREMOTEIO. SKIP on a kernel without fs-verity
 * or the SHA-256 it hashes with (6.12's fs-verity needs
 * CONFIG_CRYPTO_SHA256, which the bench's base.config sets; 7.2's hashes
 * with lib/crypto).
 *
 * --crypt: an encrypted file (fscrypt v2, a raw key added by root) on ext4
 * made with -O encrypt and mounted -o inlinecrypt, whose contents the CPU
 * en/decrypts (blk-crypto's fallback: the disk has no inline encryption):
 * REQUIRE_P2P reads into a /dev/p2pbarN mapping and a registered p2pbar
 * dma-buf EREMOTEIO at the check, nothing issued (the memory untouched,
 * the disk's bytes_p2p unmoved), counted in file_refused_p2p; the same
 * without REQUIRE_P2P the file's plaintext on path bounce, into host
 * memory path host; REQUIRE_P2P writes EREMOTEIO at the check, the file
 * unchanged. SKIP where the file has no direct I/O (statx): a kernel
 * without inline encryption. A kernel without the check answers the reads
 * on the p2p and dmabuf paths and issues the writes.
 *
 * --bar-unbind BDF: the suite of one test, p2pbar unbound from BDF while a
 * thread keeps batches reading into a registered p2pbar dma-buf and a
 * mapping: bounded, each batch moved or ENODEV/EFAULT, none issued after
 * the unbind returned moved, and QEMU's trace shows no DMA into the BAR
 * from then on; p2pbar is left unbound.
 *
 * --bar-reload BDF MODULE: the suite of one test, p2pbar unloaded and
 * loaded again (from MODULE, its .ko; bound to BDF again) while p2pnvme
 * stays: with a dma-buf of p2pbar's that a file command read into still
 * open, mapped and registered, rmmod p2pbar is EAGAIN ("in use", the
 * dma-buf holds the module) and p2pbar stays; closed and unregistered, its
 * module references drop to 0 and rmmod succeeds (p2pnvme holds nothing of
 * p2pbar's); p2pnvme's file command goes on into host memory without
 * p2pbar; loaded again, reads through the ioctl and through io_uring into
 * a new registered p2pbar dma-buf are the file's bytes, here and on the
 * host in the BAR's backing file; closed, rmmod succeeds again after the
 * io_uring command. p2pbar is left loaded and bound, as found.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fscrypt.h>
#include <linux/fsverity.h>

#include "harness.h"
#include "libp2p.h"
#include "p2pfile-common.h"
#include "p2puring.h"
#include "../testing/p2pgpu/p2pgpu_uapi.h"
#include "unpriv.h"

#define KIB		1024ULL
#define MIB		(1024 * KIB)
#define NR_MAX		P2PNVME_SUBMIT_MAX

static const char *dir, *node, *bar_path, *bar_name, *img_name, *other, *bar_bdf, *bar_ko;
static unsigned int idbase;
static int race_ms = 300;

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
	self->id = idbase + 1;
	self->nfd = node_and_file(node, dir, "data", self->id, 4 * MIB, self->path, &self->st);
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
	dbuf_must(bar_path, self->nfd, 64 * KIB, &b);
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
	tap(!extents_check(fd, img_name, id, 256 * KIB, MIB),
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

/* ---- the counters ------------------------------------------------------------ */

/*
 * What an operator reads: the file command's counters (stats/file_*) and
 * the bytes the disk's requests moved into or out of p2pmem
 * (disk/bytes_p2p: only P2PDMA pages, never the filesystem's metadata, its
 * journal or its page cache, which are host memory).
 */
static const char * const cnt_name[] = {
	"stats/file_reads_p2p", "stats/file_writes_p2p", "stats/file_reads_host",
	"stats/file_writes_host", "stats/file_reads_dmabuf", "stats/file_writes_dmabuf",
	"stats/file_reads_bounce", "stats/file_writes_bounce",
	"stats/file_bytes_p2p", "stats/file_bytes_host", "stats/file_bytes_dmabuf",
	"stats/file_bytes_bounce", "stats/file_errors", "stats/file_errors_fallback",
	"stats/file_refused_xdev", "stats/file_refused_align",
	"stats/file_refused_p2p", "stats/file_refused_swapfile", "stats/file_refused_inflight",
	"disk/bytes_p2p", "stats/file_zeroed_bytes", "stats/file_cpu_bytes",
};

enum {
	C_READS_P2P, C_WRITES_P2P, C_READS_HOST, C_WRITES_HOST, C_READS_DMABUF, C_WRITES_DMABUF,
	C_READS_BOUNCE, C_WRITES_BOUNCE, C_BYTES_P2P, C_BYTES_HOST, C_BYTES_DMABUF,
	C_BYTES_BOUNCE, C_ERRORS, C_ERRORS_FALLBACK, C_XDEV, C_ALIGN, C_P2P, C_SWAPFILE,
	C_INFLIGHT, C_DISK_P2P, C_ZEROED, C_CPU, C_NR
};

_Static_assert(sizeof(cnt_name) / sizeof(cnt_name[0]) == C_NR, "a name per counter");

struct cnt {
	long long v[C_NR];
};

/* every counter of /sys/class/p2pnvme/<node's name>/; 0, or -1 if one is missing */
static int cnt_get(struct cnt *c)
{
	unsigned int i;

	for (i = 0; i < C_NR; i++) {
		c->v[i] = node_num(node, cnt_name[i]);
		if (c->v[i] < 0)
			return -1;
	}
	return 0;
}

/*
 * Did every counter move from @a to @b by exactly @want (the rest by 0)?
 * @why: the first that did not, for the case line.
 */
static int cnt_moved(const struct cnt *a, const struct cnt *b, const long long *want, char *why,
		     size_t len)
{
	unsigned int i;

	snprintf(why, len, "each as wanted");
	for (i = 0; i < C_NR; i++) {
		if (b->v[i] - a->v[i] != want[i]) {
			snprintf(why, len, "%s moved by %lld, want %lld", cnt_name[i],
				 b->v[i] - a->v[i], want[i]);
			return 0;
		}
	}
	return 1;
}

/* written (not unwritten) bytes of @fd's extents within [0, @len): FIEMAP; -1 */
struct written_walk {
	uint64_t len;
	long long n;
};

static int written_add(const struct fiemap_extent *e, void *arg)
{
	struct written_walk *w = arg;
	uint64_t z = e->fe_logical + e->fe_length < w->len ? e->fe_logical + e->fe_length : w->len;

	if (!(e->fe_flags & FIEMAP_EXTENT_UNWRITTEN) && z > e->fe_logical)
		w->n += z - e->fe_logical;
	return 0;
}

static long long written_bytes(int fd, uint64_t len)
{
	struct written_walk w = { .len = len };

	return p2p_fiemap_walk(fd, 0, len, FIEMAP_FLAG_SYNC, written_add, &w) ? -1 : w.n;
}

/*
 * The counters move by exactly what known operations did, each read before
 * and after: a read into a /dev/p2pbarN mapping (file_reads_p2p, its bytes,
 * and the disk's bytes_p2p by as much); a read of a sparse file into a
 * registered dma-buf: its bytes on the dmabuf path, the disk's bytes_p2p
 * only by its written extents (the hole and the unwritten extent are
 * zeroed by the CPU inside the filesystem, not moved by the controller); a
 * write from a registered dma-buf; one refusal of each reason the bench
 * can make (EXDEV, a misaligned offset, host memory with REQUIRE_P2P: its
 * counter +1, nothing else); a malformed entry counts nowhere.
 * max_inflight_mb's and the swap file's refusals are in those tests.
 */
TEST_F(filecmd, fc, counters, 9, 60)
{
	unsigned char *host = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0), *dio = NULL;
	unsigned int a = self->st.stx_dio_offset_align, sid = self->id + 3, k;
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), sfd = -1, dfd = -1, ofd, bfd, ret;
	struct cnt c0, c1;
	struct p2pnvme_file_io io;
	struct p2pbar_info i;
	struct p2p_mem m;
	char why[160], path[512], opath[512];
	long long written;
	struct dbuf b;
	int zeros = 1;

	bfd = p2p_bar_open(bar_path, &i);
	if (fd < 0 || host == MAP_FAILED || bfd < 0 || p2p_mem_get(bfd, MIB, 0, &m))
		kt_fail("setup: %s", strerror(errno));
	dbuf_must(bar_path, self->nfd, MIB, &b);
	if (cnt_get(&c0))
		kt_fail("the counters in /sys/class/p2pnvme/: missing (a module without them?)");
	ofd = mkfile(other, "filecmd-cnt", self->id, 64 * KIB, opath) ? -1 :
	      open(opath, O_RDONLY | O_CLOEXEC);

	/* 1 MiB into a /dev/p2pbar0 mapping: path p2p, and the controller moved it */
	io = fio(P2PNVME_OP_READ, fd, 0, MIB, (uintptr_t)m.p, 0, 0);
	ret = submit1(self->nfd, &io);
	if (cnt_get(&c1))
		kt_fail("the counters went away");
	{
		long long want[C_NR] = { [C_READS_P2P] = 1, [C_BYTES_P2P] = MIB,
					 [C_DISK_P2P] = MIB };

		tap(!ret && io.bytes == MIB && io.path == P2PNVME_PATH_P2P &&
		    cnt_moved(&c0, &c1, want, why, sizeof(why)),
		    "1 MiB into a /dev/p2pbar0 mapping (%s, path %u): file_reads_p2p +1, file_bytes_p2p and the disk's bytes_p2p +1 MiB, nothing else (%s)",
		    err_str(ret), io.path, why);
	}

	/*
	 * A 1 MiB file: 256 KiB written, a 256 KiB hole, 256 KiB fallocated
	 * (unwritten), 256 KiB written; direct writes, so that no speculative
	 * preallocation fills the hole.
	 */
	sprintf(path, "%s/sparse", dir);
	sfd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	dfd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (sfd < 0 || dfd < 0 || posix_memalign((void **)&dio, 4096, 256 * KIB))
		kt_fail("setup: %s", strerror(errno));
	ret = ftruncate(sfd, MIB) ? errno : 0;
	pat_fill(dio, sid, 0, 256 * KIB);
	if (!ret && pwrite(dfd, dio, 256 * KIB, 0) != (ssize_t)(256 * KIB))
		ret = errno ?: EIO;
	pat_fill(dio, sid, 768 * KIB, 256 * KIB);
	if (!ret && pwrite(dfd, dio, 256 * KIB, 768 * KIB) != (ssize_t)(256 * KIB))
		ret = errno ?: EIO;
	if (!ret && fallocate(sfd, 0, 512 * KIB, 256 * KIB))
		ret = errno;
	if (!ret && fsync(sfd))
		ret = errno;
	written = ret ? -1 : written_bytes(sfd, MIB);
	tap(written == 512 * (long long)KIB,
	    "a sparse file: 1 MiB, 512 KiB of it written, a hole and an unwritten extent (%s, FIEMAP: %lld bytes written)",
	    err_str(ret), written);

	/* all of it into a registered dma-buf: 1 MiB on the dmabuf path, the controller moved 512 KiB */
	memset(b.p, 0xff, MIB);
	cnt_get(&c0);
	io = fio(P2PNVME_OP_READ, sfd, 0, MIB, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	ret = submit1(self->nfd, &io);
	if (cnt_get(&c1))
		kt_fail("the counters went away");
	for (k = 256 * KIB; k < 768 * KIB; k++)
		zeros &= !b.p[k];
	tap(!ret && io.bytes == MIB && zeros && pat_diff(b.p, sid, 0, 256 * KIB) < 0 &&
	    pat_diff(b.p + 768 * KIB, sid, 768 * KIB, 256 * KIB) < 0,
	    "the sparse file into a registered dma-buf: 1 MiB, its data, zeros for the hole and the unwritten extent (%s, %llu bytes)",
	    err_str(ret), (unsigned long long)io.bytes);
	{
		long long want[C_NR] = { [C_READS_DMABUF] = 1, [C_BYTES_DMABUF] = MIB,
					 [C_DISK_P2P] = written };

		tap(cnt_moved(&c0, &c1, want, why, sizeof(why)),
		    "... file_reads_dmabuf +1, file_bytes_dmabuf +1 MiB, the disk's bytes_p2p +%lld: the other %lld zeroed by the CPU (%s)",
		    written, MIB - written, why);
	}

	/* 256 KiB written from the dma-buf into the hole */
	pat_fill(b.p, sid, 256 * KIB, 256 * KIB);
	cnt_get(&c0);
	io = fio(P2PNVME_OP_WRITE, sfd, 256 * KIB, 256 * KIB, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	ret = submit1(self->nfd, &io);
	if (cnt_get(&c1))
		kt_fail("the counters went away");
	{
		long long want[C_NR] = { [C_WRITES_DMABUF] = 1, [C_BYTES_DMABUF] = 256 * KIB,
					 [C_DISK_P2P] = 256 * KIB };

		tap(!ret && io.bytes == 256 * KIB && cnt_moved(&c0, &c1, want, why, sizeof(why)),
		    "256 KiB written from the dma-buf into the hole (%s): file_writes_dmabuf +1, file_bytes_dmabuf and the disk's bytes_p2p +256 KiB (%s)",
		    err_str(ret), why);
	}

	/* refusals: their reason +1, nothing moved, nothing else counted */
#define REFUSAL(err, counter, what, ...) do {						\
		long long want[C_NR] = { [counter] = 1 };				\
										\
		cnt_get(&c0);								\
		io = fio(__VA_ARGS__);							\
		ret = submit1(self->nfd, &io);						\
		if (cnt_get(&c1))							\
			kt_fail("the counters went away");				\
		tap(ret == (err) && cnt_moved(&c0, &c1, want, why, sizeof(why)),	\
		    "%s: %s, %s +1, nothing else (%s)", what, err_str(err),		\
		    cnt_name[counter] + 6, why);					\
	} while (0)
	REFUSAL(EXDEV, C_XDEV, "a file on another device", P2PNVME_OP_READ, ofd, 0, 4096,
		(uintptr_t)host, 0, 0);
	REFUSAL(EINVAL, C_ALIGN, "an offset off the direct I/O alignment", P2PNVME_OP_READ, fd,
		a / 2, a, (uintptr_t)host, 0, 0);
	REFUSAL(EREMOTEIO, C_P2P, "host memory with REQUIRE_P2P", P2PNVME_OP_READ, fd, 0, 4096,
		(uintptr_t)host, P2PNVME_FILE_F_REQUIRE_P2P, 0);
#undef REFUSAL
	{
		long long want[C_NR] = { 0 };

		cnt_get(&c0);
		io = fio(P2PNVME_OP_READ, fd, 0, 0, (uintptr_t)host, 0, 0);
		ret = submit1(self->nfd, &io);
		if (cnt_get(&c1))
			kt_fail("the counters went away");
		tap(ret == EINVAL && cnt_moved(&c0, &c1, want, why, sizeof(why)),
		    "a malformed entry (length 0): %s, counted nowhere (%s)", err_str(ret), why);
	}
	dbuf_put(self->nfd, &b);
	p2p_mem_put(&m);
	close(bfd);
	free(dio);
	close(dfd);
	close(sfd);
	unlink(path);
	if (ofd >= 0)
		close(ofd);
	close(fd);
	munmap(host, MIB);
}

/*
 * A write the filesystem sends to its page cache whatever the file's
 * direct I/O alignment said (Documentation/files.rst, "The page cache
 * after the check"): 512 bytes, sector-aligned, into a reflinked xfs file
 * (xfs_file_dio_write_unaligned(): -ENOTBLK on a CoW inode, then xfs's
 * buffered write), from a registered p2pbar dma-buf, without REQUIRE_P2P.
 * The command tells by the bytes the disk carried from the dma-buf (none):
 * path bounce, counted there, the disk's bytes_p2p unmoved; the file holds
 * the bytes (here and in the image). 6.1's and 6.12's xfs report the sector
 * as the write alignment; 7.2's reports the allocation unit for a CoW
 * inode, so the command refuses the write at its check (SKIP). ext4 has no
 * reflink (SKIP).
 */
TEST_F(filecmd, fc, write_cow_bounce, 4, 60)
{
	unsigned int id = self->id + 5, nid = self->id + 6;
	int fd, cfd, ret, ok;
	char path[512], cpath[512];
	unsigned char *back = malloc(64 * KIB);
	struct p2pnvme_file_io io;
	struct cnt c0 = { { 0 } }, c1 = { { -1 } };
	long long want[C_NR] = { [C_WRITES_BOUNCE] = 1, [C_BYTES_BOUNCE] = 512 };
	char why[160];
	struct statx st;
	struct dbuf b;

	if (!back || mkfile(dir, "cow", id, 64 * KIB, path))
		kt_fail("setup: %s", strerror(errno));
	sprintf(cpath, "%s/cow-clone", dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	cfd = open(cpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || cfd < 0)
		kt_fail("setup: %s", strerror(errno));
	if (ioctl(cfd, FICLONE, fd)) {
		ret = errno;
		close(cfd);
		close(fd);
		unlink(cpath);
		unlink(path);
		if (ret == EOPNOTSUPP || ret == EXDEV || ret == EINVAL || ret == ENOTTY)
			kt_skip("no reflink here (FICLONE: %s): ext4, or xfs without it", strerror(ret));
		kt_fail("FICLONE: %s", strerror(ret));
	}
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) || !st.stx_dio_offset_align)
		kt_fail("statx STATX_DIOALIGN of the reflinked file: %s", strerror(errno));
	if (st.stx_dio_offset_align > 512) {
		close(cfd);
		close(fd);
		unlink(cpath);
		unlink(path);
		kt_skip("the reflinked file's direct I/O write alignment is %u (7.x's xfs reports the allocation unit): a sub-block write is refused at the command's check, never reaches the page cache",
			st.stx_dio_offset_align);
	}
	dbuf_must(bar_path, self->nfd, 64 * KIB, &b);
	pat_fill(b.p, nid, 512, 512);
	cnt_get(&c0);
	io = fio(P2PNVME_OP_WRITE, fd, 512, 512, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	ret = submit1(self->nfd, &io);
	if (cnt_get(&c1))
		kt_fail("the counters went away");
	tap(!ret && io.bytes == 512 && io.path == P2PNVME_PATH_BOUNCE,
	    "512 bytes from a registered dma-buf into a reflinked file (xfs's page cache): path bounce (%s, %llu bytes, path %u)",
	    err_str(ret), (unsigned long long)io.bytes, io.path);
	tap(cnt_moved(&c0, &c1, want, why, sizeof(why)),
	    "... file_writes_bounce +1, file_bytes_bounce +512, the disk's bytes_p2p +0, nothing else (%s)",
	    why);
	ok = !fsync(fd) && pread(fd, back, 64 * KIB, 0) == (ssize_t)(64 * KIB) &&
	     pat_diff(back, id, 0, 512) < 0 && pat_diff(back + 512, nid, 512, 512) < 0 &&
	     pat_diff(back + 1024, id, 1024, 63 * KIB) < 0;
	tap(ok, "fsync, read back: the 512 bytes written, the rest as before");
	tap(!extents_check(fd, img_name, nid, 512, 512),
	    "FIEMAP: the written range is on the disk; the host checks it in %s", img_name);
	dbuf_put(self->nfd, &b);
	close(cfd);
	close(fd);
	unlink(cpath);
	unlink(path);
	free(back);
}

/* ---- a swap file ------------------------------------------------------------- */

/* a swap area of @size bytes at @path as mkswap makes one: version 1, last page, signature */
static int mkswapfile(const char *path, size_t size)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *p = calloc(1, size);
	uint32_t v[2] = { 1, size / pg - 1 };
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), ok;

	if (fd < 0 || !p) {
		free(p);
		return -1;
	}
	memcpy(p + 1024, v, sizeof(v));
	memcpy(p + pg - 10, "SWAPSPACE2", 10);
	ok = pwrite(fd, p, size, 0) == (ssize_t)size && !fsync(fd);
	free(p);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * An active swap file (swapon(2)): a write is ETXTBSY, alone and as the
 * second entry of a batch, whose first write (to another file) then never
 * happens; the header page the swap code keeps stays as it was. A read
 * goes on, as pread()'s. After swapoff the same write goes through.
 */
TEST_F(filecmd, fc, swapfile, 6, 60)
{
	unsigned char *h = mmap(NULL, 64 * KIB, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char ref[4096], now[4096], nb[4096];
	unsigned int nid = self->id + 0x10, failed = 0;
	struct p2pnvme_file_io io, ios[2];
	int sfd = -1, nfd2 = -1, on, off = -1, err;
	int r1 = -1, r2 = -1, r3 = -1, r4 = -1;
	char swp[512], next[512];
	uint64_t b3 = 0, b4 = 0;
	long long want[C_NR] = { [C_SWAPFILE] = 1 };
	struct cnt c0 = { { 0 } }, c1 = { { -1 } };
	char why[160];

	/* /proc/swaps is mm/swapfile.c's: without it swapon(2) is not there either */
	if (access("/proc/swaps", F_OK))
		kt_skip("%s",
			"the kernel has no swap (no /proc/swaps): CONFIG_SWAP is not set (qemu/configs/base.config)");
	sprintf(swp, "%s/swapfile", dir);
	if (h == MAP_FAILED || mkswapfile(swp, MIB) || mkfile(dir, "swapnext", nid, 64 * KIB, next))
		kt_fail("setup: %s", strerror(errno));
	on = !swapon(swp, 0);
	err = errno;
	if (!on) {
		unlink(swp);
		unlink(next);
		kt_fail("swapon %s: %s", swp, strerror(err));
	}
	/* from here until swapoff nothing ends the test early */
	sfd = open(swp, O_RDWR | O_CLOEXEC);
	nfd2 = open(next, O_RDWR | O_CLOEXEC);
	if (sfd < 0 || pread(sfd, ref, sizeof(ref), 0) != (ssize_t)sizeof(ref))
		memset(ref, 0, sizeof(ref));
	memset(h, 0x5a, 64 * KIB);
	if (sfd >= 0 && nfd2 >= 0) {
		io = fio(P2PNVME_OP_WRITE, sfd, 0, 4096, (uintptr_t)h, 0, 0);
		cnt_get(&c0);
		r1 = submit1(self->nfd, &io);
		cnt_get(&c1);
		ios[0] = fio(P2PNVME_OP_WRITE, nfd2, 0, 4096, (uintptr_t)h, 0, 0);
		ios[1] = fio(P2PNVME_OP_WRITE, sfd, 0, 4096, (uintptr_t)h, 0, 0);
		r2 = submit(self->nfd, ios, 2, &failed);
		io = fio(P2PNVME_OP_READ, sfd, 0, 4096, (uintptr_t)h + 32 * KIB, 0, 0);
		r3 = submit1(self->nfd, &io);
		b3 = io.bytes;
	}
	if (sfd < 0 || pread(sfd, now, sizeof(now), 0) != (ssize_t)sizeof(now))
		memset(now, 0xff, sizeof(now));
	if (pread(nfd2, nb, sizeof(nb), 0) != (ssize_t)sizeof(nb))
		memset(nb, 0xff, sizeof(nb));
	off = swapoff(swp) ? errno : 0;
	if (!off && sfd >= 0) {
		io = fio(P2PNVME_OP_WRITE, sfd, 0, 4096, (uintptr_t)h, 0, 0);
		r4 = submit1(self->nfd, &io);
		b4 = io.bytes;
	}

	tap(sfd >= 0 && nfd2 >= 0 && !memcmp(ref + 4086, "SWAPSPACE2", 10),
	    "swapon of a 1 MiB swap file on the disk's filesystem; its header page read by pread");
	tap(r1 == ETXTBSY && !memcmp(now, ref, sizeof(ref)),
	    "a write to the active swap file: ETXTBSY, its header page untouched (%s)",
	    err_str(r1));
	tap(cnt_moved(&c0, &c1, want, why, sizeof(why)),
	    "... counted: file_refused_swapfile +1, nothing else (%s)", why);
	tap(r2 == ETXTBSY && failed == 1 && pat_diff(nb, nid, 0, sizeof(nb)) < 0,
	    "a batch of a write to another file and one to the swap file: ETXTBSY, failed 1, the other file untouched (%s, failed %u)",
	    err_str(r2), failed);
	tap(r3 == 0 && b3 == 4096 && !memcmp(h + 32 * KIB, ref, sizeof(ref)),
	    "a read of the active swap file: its header page, as pread's (%s, %llu bytes)",
	    err_str(r3), (unsigned long long)b3);
	tap(!off && r4 == 0 && b4 == 4096,
	    "swapoff (%s), then the same write: 4096 bytes (%s, %llu)", err_str(off), err_str(r4),
	    (unsigned long long)b4);
	if (sfd >= 0)
		close(sfd);
	if (nfd2 >= 0)
		close(nfd2);
	unlink(swp);
	unlink(next);
	munmap(h, 64 * KIB);
}

/* ---- max_inflight_mb ------------------------------------------------------- */

#define INFLIGHT_PARAM	"/sys/module/p2pnvme/parameters/max_inflight_mb"

/*
 * Bytes at user addresses count against max_inflight_mb as the LBA
 * transfers' do: with 1 MiB, a batch of two 1 MiB reads into host memory
 * is E2BIG for the whole batch (failed is nr, nothing moved); the same two
 * into a registered dma-buf pin nothing per transfer and pass; one 1 MiB
 * read at a user address fits. The parameter is put back.
 */
TEST_F(filecmd, fc, inflight, 6, 60)
{
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), set, back, r1, r2, r3, k, untouched = 1;
	unsigned char *host = mmap(NULL, 2 * MIB, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long long was = p2p_sysfs_num(INFLIGHT_PARAM);
	struct p2pnvme_file_io ios[2];
	long long want[C_NR] = { [C_INFLIGHT] = 1 };
	struct cnt c0 = { { 0 } }, c1 = { { -1 } };
	unsigned int failed = 0, good = 0;
	char old[32], why[160];
	struct dbuf b;

	r1 = dbuf_get(bar_path, self->nfd, 2 * MIB, &b);
	if (fd < 0 || host == MAP_FAILED || r1 || was <= 0)
		kt_fail("setup: %s (max_inflight_mb %lld)", strerror(fd < 0 ? errno : r1), was);
	snprintf(old, sizeof(old), "%lld", was);
	memset(host, 0xee, 2 * MIB);
	memset(b.p, 0xee, 2 * MIB);
	set = p2p_sysfs_write(INFLIGHT_PARAM, "1");
	for (k = 0; k < 2; k++)
		ios[k] = fio(P2PNVME_OP_READ, fd, k * MIB, MIB, (uintptr_t)host + k * MIB, 0, 0);
	cnt_get(&c0);
	r1 = submit(self->nfd, ios, 2, &failed);
	cnt_get(&c1);
	for (k = 0; k < (int)(2 * MIB); k++)
		untouched &= host[k] == 0xee;
	for (k = 0; k < 2; k++)
		ios[k] = fio(P2PNVME_OP_READ, fd, k * MIB, MIB, k * MIB, P2PNVME_FILE_F_REGISTERED,
			     b.id);
	r2 = submit(self->nfd, ios, 2, NULL);
	for (k = 0; k < 2; k++)
		good += !ios[k].status && ios[k].bytes == MIB;
	ios[0] = fio(P2PNVME_OP_READ, fd, MIB, MIB, (uintptr_t)host, 0, 0);
	r3 = submit1(self->nfd, &ios[0]);
	back = p2p_sysfs_write(INFLIGHT_PARAM, old);

	tap(!set, "max_inflight_mb %lld -> 1 (%s)", was, strerror(-set));
	tap(r1 == E2BIG && failed == 2 && untouched,
	    "two 1 MiB reads at user addresses in one batch: E2BIG, failed 2 (nr), nothing moved (%s, failed %u)",
	    err_str(r1), failed);
	tap(cnt_moved(&c0, &c1, want, why, sizeof(why)),
	    "... counted once for the batch: file_refused_inflight +1, nothing else (%s)", why);
	tap(!r2 && good == 2 && pat_diff(b.p, self->id, 0, 2 * MIB) < 0,
	    "the same two into a registered dma-buf: not counted, both moved, the file's bytes (%s, %u good)",
	    err_str(r2), good);
	hostcheck("pattern %llu %s@%llu %#x %llu", 2 * MIB, bar_name,
		  (unsigned long long)b.bar_offset, self->id, 0ULL);
	tap(!r3 && ios[0].bytes == MIB && pat_diff(host, self->id, MIB, MIB) < 0,
	    "one 1 MiB read at a user address fits: moved, the file's bytes (%s)", err_str(r3));
	tap(!back && p2p_sysfs_num(INFLIGHT_PARAM) == was, "max_inflight_mb back to %lld (%s)", was,
	    strerror(-back));
	dbuf_put(self->nfd, &b);
	munmap(host, 2 * MIB);
	close(fd);
}

/* ---- step 3's races through the command ------------------------------------ */

/* a registered dma-buf and a /dev/p2pbarN mapping: eight 128 KiB slots each */
FIXTURE(fr) {
	int nfd, dirfd, fstype, bfd;
	struct dbuf b;
	struct p2p_mem m;
};

FIXTURE_SETUP(fr)
{
	struct statfs sf;

	self->nfd = open(node, O_RDWR | O_CLOEXEC);
	self->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (self->nfd < 0 || self->dirfd < 0 || fstatfs(self->dirfd, &sf))
		kt_fail("open %s, %s: %s", node, dir, strerror(errno));
	self->fstype = sf.f_type;
	mem2_get(bar_path, self->nfd, RACE_TSIZE, &self->b, &self->bfd, &self->m);
}

FIXTURE_TEARDOWN(fr)
{
	mem2_put(self->nfd, &self->b, self->bfd, &self->m);
	close(self->dirfd);
	close(self->nfd);
}

/*
 * The stream's reads (race_run()): into the registered dma-buf, then into
 * the mapping, two reads each in turn; one entry of 128 KiB, then a batch
 * of four of 32 KiB, in turn.
 */
struct cmd_reader {
	struct race_reader r;
	struct _kt_fixture_fr *self;
};

static unsigned char *cmd_slot(struct race_reader *r, long long n)
{
	struct _kt_fixture_fr *self = ((struct cmd_reader *)r)->self;

	return ((n >> 1) & 1 ? self->m.p : self->b.p) + (n % 8) * RACE_SLOT;
}

static ssize_t cmd_read(struct race_reader *r, long long n, int fd, unsigned char *p,
			uint64_t off, ssize_t *res, unsigned int *np)
{
	struct _kt_fixture_fr *self = ((struct cmd_reader *)r)->self;
	unsigned int k = n & 1 ? 4 : 1, i;
	size_t piece = RACE_SLOT / k;
	struct p2pnvme_file_io ios[4];
	int dmabuf = !((n >> 1) & 1), ret;
	ssize_t total = 0;

	for (i = 0; i < k; i++)
		ios[i] = dmabuf ? fio(P2PNVME_OP_READ, fd, off + i * piece, piece,
				      (n % 8) * RACE_SLOT + i * piece, P2PNVME_FILE_F_REGISTERED,
				      self->b.id) :
				  fio(P2PNVME_OP_READ, fd, off + i * piece, piece,
				      (uintptr_t)(p + i * piece), 0, 0);
	ret = submit(self->nfd, ios, k, NULL);
	for (i = 0; i < k; i++) {
		res[i] = ios[i].status ? ios[i].status : (ssize_t)ios[i].bytes;
		total += ios[i].bytes;
	}
	*np = k;
	return ret ? -ret : total;
}

/*
 * A stream of file commands reading the target while the racer does @kind
 * (race_run(): three cases), then the target read whole by the command into
 * the dma-buf: the pattern, here and on the host.
 */
static void cmd_race(struct _kt_fixture_fr *self, enum race kind)
{
	struct race_ctx rc = { .dirfd = self->dirfd, .fstype = self->fstype, .ms = race_ms,
			       .bar_name = bar_name };
	struct cmd_reader cr = { { "the dma-buf or the mapping", cmd_slot, cmd_read }, self };
	unsigned int tid = idbase + 0x20 + 4 * kind;
	struct p2pnvme_file_io io;
	long long d = 0;
	int fd, ret;

	race_skip_absent(&rc, kind);
	memset(self->b.p, 0, RACE_TSIZE);
	memset(self->m.p, 0, RACE_TSIZE);
	race_run(&rc, kind, tid, &cr.r);
	fd = race_open(&rc, "target", O_RDONLY);
	memset(self->b.p, 0xee, RACE_TSIZE);
	io = fio(P2PNVME_OP_READ, fd, 0, RACE_TSIZE, 0,
		 P2PNVME_FILE_F_REGISTERED | P2PNVME_FILE_F_REQUIRE_P2P, self->b.id);
	ret = fd < 0 ? errno : submit1(self->nfd, &io);
	if (!ret)
		d = pat_diff(self->b.p, tid, 0, RACE_TSIZE);
	tap(!ret && io.bytes == RACE_TSIZE && d < 0,
	    "%s: the target after, whole by the command into the dma-buf: its pattern (%s, first wrong %lld)",
	    race_name(kind), err_str(ret), d);
	if (!ret)
		hostcheck("pattern %llu %s@%llu %#x 0", RACE_TSIZE, bar_name,
			  (unsigned long long)self->b.bar_offset, tid);
	if (fd >= 0)
		close(fd);
	race_end(&rc);
}

TEST_F(filecmd, fr, race_truncate, 4, 120)
{
	cmd_race(self, R_TRUNCATE);
}

TEST_F(filecmd, fr, race_punch, 4, 120)
{
	cmd_race(self, R_PUNCH);
}

TEST_F(filecmd, fr, race_collapse, 4, 120)
{
	cmd_race(self, R_COLLAPSE);
}

TEST_F(filecmd, fr, race_insert, 4, 120)
{
	cmd_race(self, R_INSERT);
}

TEST_F(filecmd, fr, race_write, 4, 120)
{
	cmd_race(self, R_WRITE);
}

TEST_F(filecmd, fr, race_reflink, 4, 120)
{
	cmd_race(self, R_REFLINK);
}

TEST_F(filecmd, fr, race_exchange, 4, 120)
{
	cmd_race(self, R_EXCHANGE);
}

TEST_F(filecmd, fr, race_defrag, 4, 120)
{
	cmd_race(self, R_DEFRAG);
}

/* ---- the page cache after the check (--fallback) ---------------------------- */

#define FB_BLK		4096		/* one transfer */
#define FB_TSIZE	MIB		/* the file */
#define FB_BATCH	8		/* entries of every third call, and slots per memory */
#define FB_MIN_MS	1000		/* the stream goes on this long at least ... */
#define FB_MIN_TOGGLES	8		/* ... and until the flag changed this often ... */
#define FB_MIN_HITS	4		/* ... and this many transfers took the page cache */
#define FB_MAX_MS	15000		/* but no longer (times P2P_TIMEOUT_SCALE) */

/*
 * A fully written file on ext4 mounted nodelalloc (the filecmd script's
 * fallback suite), whose data journalling flag takes its direct I/O away
 * while set; a registered p2pbar dma-buf and a /dev/p2pbarN mapping of
 * FB_BATCH slots each.
 */
FIXTURE(fb) {
	int nfd, bfd;
	unsigned int tid;
	char path[512];
	struct dbuf b;
	struct p2p_mem m;
};

FIXTURE_SETUP(fb)
{
	int fd, ret;

	self->nfd = open(node, O_RDWR | O_CLOEXEC);
	if (self->nfd < 0)
		kt_fail("open %s: %s", node, strerror(errno));
	self->tid = idbase + 0x40;
	sprintf(self->path, "%s/jtarget", dir);
	fd = open(self->path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
	if (fd < 0 || write_pat(fd, self->tid, 0, FB_TSIZE) || fsync(fd))
		kt_fail("the file %s: %s", self->path, strerror(errno));
	ret = jflag_works(fd);
	close(fd);
	if (ret == -EOPNOTSUPP || ret == -ENOTTY)
		kt_skip("%s", "FS_JOURNAL_DATA_FL is ext4's: this filesystem has no such flag");
	if (ret < 0)
		kt_fail("chattr +j/-j of %s: %s", self->path, strerror(-ret));
	if (!ret)
		kt_fail("%s",
			"chattr +j leaves the file's direct I/O on: ext4 honours the flag only without delalloc (mount -o nodelalloc)");
	mem2_get(bar_path, self->nfd, FB_BATCH * FB_BLK, &self->b, &self->bfd, &self->m);
}

FIXTURE_TEARDOWN(fb)
{
	mem2_put(self->nfd, &self->b, self->bfd, &self->m);
	unlink(self->path);
	close(self->nfd);
}

/* what a stream did */
struct fb_tally {
	long long calls, toggles, ms;
	/* transfers: by how they ended */
	long long moved[2], moved_bytes[2];	/* [0] the mapping (p2p), [1] the dma-buf */
	long long bounce[2], bounce_bytes;	/* path bounce (without REQUIRE_P2P) */
	long long remoteio[2];			/* EREMOTEIO once issued */
	long long notsupp;			/* EOPNOTSUPP at the check: not issued */
	long long other, short_moves, bad;	/* none of those; a short one; wrong bytes */
	int other_err, toggle_err;
	long long bad_off;
	long long disk;				/* the disk's bytes_p2p, moved meanwhile */
	long long hits;				/* transfers the page cache took */
};

static long long fb_disk_p2p(void)
{
	return node_num(node, "disk/bytes_p2p");
}

/*
 * Transfers the page cache took, as far as can be told: EREMOTEIO and
 * bounce answers, and bytes answered on the p2p and dmabuf paths that the
 * controller did not move (what a kernel without the verdict answers).
 */
static long long fb_hits(const struct fb_tally *t, long long disk)
{
	long long unmoved = t->moved_bytes[0] + t->moved_bytes[1] - disk;

	return t->remoteio[0] + t->remoteio[1] + t->bounce[0] + t->bounce[1] +
	       (unmoved > 0 ? unmoved / FB_BLK : 0);
}

/*
 * A stream of FB_BLK transfers of the file (@write: from the memory, the
 * file's own bytes; else into it, each checked against the file's pattern)
 * with @flags, while a child toggles the file's journalling flag: one
 * entry into the dma-buf, one into the mapping, a batch of FB_BATCH into
 * both in turn, at random blocks; for FB_MIN_MS and until FB_MIN_TOGGLES
 * and FB_MIN_HITS, FB_MAX_MS at most.
 */
static void fb_stream(struct _kt_fixture_fb *self, bool write, uint32_t flags,
		      struct fb_tally *t)
{
	long long scale = getenv("P2P_TIMEOUT_SCALE") ? atoll(getenv("P2P_TIMEOUT_SCALE")) : 1;
	long long min_ms = race_ms > FB_MIN_MS ? race_ms : FB_MIN_MS, t0, disk0;
	struct p2pnvme_file_io ios[FB_BATCH];
	uint64_t offs[FB_BATCH];
	struct jflag_state *st;
	int fd, jfd, i;
	pid_t pid;

	memset(t, 0, sizeof(*t));
	t->bad_off = -1;
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fd = open(self->path, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	jfd = open(self->path, O_RDONLY | O_CLOEXEC);
	if (st == MAP_FAILED || fd < 0 || jfd < 0)
		kt_fail("setup: %s", strerror(errno));
	memset(st, 0, sizeof(*st));
	srandom(self->tid + write);
	disk0 = fb_disk_p2p();
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		kt_fail("fork: %s", strerror(errno));
	if (!pid)
		jflag_toggler(jfd, st);
	t0 = now_ms();
	for (;;) {
		long long el = now_ms() - t0;
		unsigned int k = t->calls % 3 == 2 ? FB_BATCH : 1, failed = 0;
		int ret;

		if (t->calls % 16 == 0)
			t->hits = fb_hits(t, fb_disk_p2p() - disk0);
		if ((el >= min_ms && __atomic_load_n(&st->toggles, __ATOMIC_ACQUIRE) >= FB_MIN_TOGGLES &&
		     t->hits >= FB_MIN_HITS) || el >= FB_MAX_MS * scale ||
		    __atomic_load_n(&st->err, __ATOMIC_ACQUIRE))
			break;
		for (i = 0; i < (int)k; i++) {
			/* single entries: the dma-buf, then the mapping; a batch: both in turn */
			int map = k == 1 ? (int)(t->calls % 3) : i & 1;
			unsigned char *p = (map ? self->m.p : self->b.p) + i * FB_BLK;

			offs[i] = (random() % (FB_TSIZE / FB_BLK)) * FB_BLK;
			if (write)
				pat_fill(p, self->tid, offs[i], FB_BLK);
			else
				memset(p, 0xee, FB_BLK);
			ios[i] = map ? fio(write ? P2PNVME_OP_WRITE : P2PNVME_OP_READ, fd, offs[i],
					   FB_BLK, (uintptr_t)p, flags, 0) :
				       fio(write ? P2PNVME_OP_WRITE : P2PNVME_OP_READ, fd, offs[i],
					   FB_BLK, i * FB_BLK, flags | P2PNVME_FILE_F_REGISTERED,
					   self->b.id);
		}
		/* the CPU's stores reach the BAR before the controller's */
		__sync_synchronize();
		ret = submit(self->nfd, ios, k, &failed);
		t->calls++;
		if (ret && failed < k) {
			/* refused at the check, nothing issued */
			if (ret == EOPNOTSUPP) {
				t->notsupp += k;
			} else {
				if (!t->other)
					t->other_err = ret;
				t->other += k;
			}
			continue;
		}
		for (i = 0; i < (int)k; i++) {
			int map = ios[i].flags & P2PNVME_FILE_F_REGISTERED ? 0 : 1;
			int at = !map;	/* the counts' index: [0] the mapping */
			unsigned char *p = (map ? self->m.p : self->b.p) + i * FB_BLK;
			long long d;

			if (ios[i].status == -EREMOTEIO) {
				t->remoteio[at]++;
				continue;
			}
			if (ios[i].status) {
				if (!t->other)
					t->other_err = -ios[i].status;
				t->other++;
				continue;
			}
			if (ios[i].bytes != FB_BLK)
				t->short_moves++;
			if (ios[i].path == P2PNVME_PATH_BOUNCE) {
				t->bounce[at]++;
				t->bounce_bytes += ios[i].bytes;
			} else if (ios[i].path == (map ? P2PNVME_PATH_P2P : P2PNVME_PATH_DMABUF)) {
				t->moved[at]++;
				t->moved_bytes[at] += ios[i].bytes;
			} else {
				if (!t->other)
					t->other_err = EPROTO;	/* a path it cannot have */
				t->other++;
			}
			/* a read's bytes, whichever way they came */
			d = write ? -1 : pat_diff(p, self->tid, offs[i], ios[i].bytes);
			if (d >= 0 && !t->bad++)
				t->bad_off = offs[i] + d;
		}
	}
	t->ms = now_ms() - t0;
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	waitpid(pid, NULL, 0);
	t->toggles = st->toggles;
	t->toggle_err = st->err;
	t->disk = fb_disk_p2p() - disk0;
	t->hits = fb_hits(t, t->disk);
	munmap(st, sizeof(*st));
	close(jfd);
	close(fd);
}

/* the case lines every stream has: the toggler, the race hit, the exact bytes */
static void fb_common(const struct fb_tally *t, bool write)
{
	long long direct = t->moved_bytes[0] + t->moved_bytes[1];

	printf("    # %lld calls in %lld ms, %lld flag changes; transfers: %lld + %lld moved by the controller (mapping + dma-buf), %lld + %lld bounce, %lld + %lld EREMOTEIO, %lld EOPNOTSUPP at the check, %lld other (%s); the disk's bytes_p2p +%lld\n",
	       t->calls, t->ms, t->toggles, t->moved[0], t->moved[1], t->bounce[0], t->bounce[1],
	       t->remoteio[0], t->remoteio[1], t->notsupp, t->other, err_str(t->other_err),
	       t->disk);
	tap(!t->toggle_err && t->toggles >= FB_MIN_TOGGLES,
	    "the file's data journalling flag (chattr +j) set and cleared %lld times under the stream (%s)",
	    t->toggles, err_str(t->toggle_err));
	tap(t->hits >= FB_MIN_HITS,
	    "the race was hit: %lld %ss the filesystem served through its page cache (%lld EREMOTEIO, %lld bounce, %lld answered p2p/dmabuf that the controller did not move)",
	    t->hits, write ? "write" : "read", t->remoteio[0] + t->remoteio[1],
	    t->bounce[0] + t->bounce[1],
	    direct - t->disk > 0 ? (direct - t->disk) / FB_BLK : 0);
	tap(direct == t->disk,
	    "the transfers answered on the p2p and dmabuf paths: %lld bytes, exactly what the controller moved into p2pmem (the disk's bytes_p2p +%lld)",
	    direct, t->disk);
}

/*
 * One fallback case: the counters read around a stream (fb_stream()) of
 * reads, or @write writes of the file's own bytes, with REQUIRE_P2P if
 * @require; then fb_common()'s lines and three of the case's own: the
 * bytes (a read's in the memory, a write's in the file after), every
 * transfer ending as the flags allow (REQUIRE_P2P: moved or refused,
 * never bounced; without: moved or bounced, never EREMOTEIO), and every
 * counter moved by exactly those transfers. 6 lines.
 */
static void fb_case(struct _kt_fixture_fb *self, bool write, bool require)
{
	const char *op = write ? "write" : "read";
	long long rio, bounce, want[C_NR] = { 0 }, d = -2;
	unsigned char *back = NULL;
	struct cnt c0, c1;
	struct fb_tally t;
	char why[160];
	int fd;

	if (write) {
		back = malloc(FB_TSIZE);
		if (!back)
			kt_fail("setup: %s", "no memory");
	}
	if (cnt_get(&c0))
		kt_fail("%sthe counters in /sys/class/p2pnvme/: missing", write ? "setup: " : "");
	fb_stream(self, write, require ? P2PNVME_FILE_F_REQUIRE_P2P : 0, &t);
	if (cnt_get(&c1))
		kt_fail("the counters went away");
	fb_common(&t, write);
	rio = t.remoteio[0] + t.remoteio[1];
	bounce = t.bounce[0] + t.bounce[1];
	if (write) {
		fd = open(self->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !fsync(fd) && pread(fd, back, FB_TSIZE, 0) == (ssize_t)FB_TSIZE)
			d = pat_diff(back, self->tid, 0, FB_TSIZE);
		if (fd >= 0)
			close(fd);
		tap(d < 0 && d != -2 && !t.short_moves,
		    "the file after: its pattern whole (first wrong byte %lld; %lld writes short)", d,
		    t.short_moves);
	} else if (require) {
		tap(!t.bad && !t.short_moves,
		    "every read answered moved holds the file's 4 KiB (%lld wrong, the first at %lld; %lld short)",
		    t.bad, t.bad_off, t.short_moves);
	} else {
		tap(!t.bad && !t.short_moves,
		    "every read answered holds the file's 4 KiB, bounce ones too (%lld wrong, the first at %lld; %lld short)",
		    t.bad, t.bad_off, t.short_moves);
	}
	if (require)
		tap(!t.other && !bounce,
		    "every %s moved (%lld + %lld), or refused: EREMOTEIO after the page cache %s it (%lld + %lld), EOPNOTSUPP at the check (%lld); none other (%lld, %s)",
		    op, t.moved[0], t.moved[1], write ? "took" : "served", t.remoteio[0],
		    t.remoteio[1], t.notsupp, t.other + bounce, err_str(t.other_err));
	else
		tap(!t.other && !rio,
		    "every %s moved by the controller (%lld + %lld) or bounced (%lld + %lld), or refused EOPNOTSUPP at the check (%lld); none other (%lld, %s)",
		    op, t.moved[0], t.moved[1], t.bounce[0], t.bounce[1], t.notsupp,
		    t.other + rio, err_str(t.other_err));
	want[write ? C_WRITES_P2P : C_READS_P2P] = t.moved[0];
	want[write ? C_WRITES_DMABUF : C_READS_DMABUF] = t.moved[1];
	want[C_BYTES_P2P] = t.moved_bytes[0];
	want[C_BYTES_DMABUF] = t.moved_bytes[1];
	want[C_DISK_P2P] = t.disk;
	if (require) {
		want[C_ERRORS] = rio;
		want[C_ERRORS_FALLBACK] = rio;
	} else {
		want[write ? C_WRITES_BOUNCE : C_READS_BOUNCE] = bounce;
		want[C_BYTES_BOUNCE] = t.bounce_bytes;
	}
	tap(cnt_moved(&c0, &c1, want, why, sizeof(why)),
	    "counted: file_%ss_p2p and _dmabuf by the %ss moved, %s, nothing else (%s)", op, op,
	    require ? "file_errors and file_errors_fallback by the EREMOTEIO ones" :
		      write ? "file_writes_bounce and file_bytes_bounce by the bounced ones" :
			      "file_reads_bounce and file_bytes_bounce by the bounced ones",
	    why);
	free(back);
}

/*
 * REQUIRE_P2P reads of a file whose direct I/O comes and goes: each read
 * the controller moved (the file's bytes, the disk's bytes_p2p by exactly
 * theirs), or refused: EOPNOTSUPP at the check (the flag set then), or
 * EREMOTEIO once the filesystem read it through its page cache (the flag
 * set after the check; ext4 cleared IOCB_DIRECT). Counted so: errors and
 * errors_fallback by the EREMOTEIO ones, nothing on the bounce path.
 */
TEST_F(filecmd_fallback, fb, read_require_p2p, 6, 120)
{
	fb_case(self, false, true);
}

/*
 * A stream of reads (fb_stream()) with @flags, the dma-buf's through
 * placeholder pages (file_placeholder_force on around it), the counters
 * read before (@c0) and after (@c1); fb_common()'s lines.
 */
static void fb_placeholders(struct _kt_fixture_fb *self, uint32_t flags, struct cnt *c0,
			    struct cnt *c1, struct fb_tally *t)
{
	if (cnt_get(c0))
		kt_fail("the counters in /sys/class/p2pnvme/: missing");
	if (p2p_sysfs_write("/sys/module/p2pnvme/parameters/file_placeholder_force", "1"))
		kt_fail("file_placeholder_force: %s", strerror(errno));
	fb_stream(self, false, flags, t);
	p2p_sysfs_write("/sys/module/p2pnvme/parameters/file_placeholder_force", "0");
	if (cnt_get(c1))
		kt_fail("the counters went away");
	fb_common(t, false);
}

/*
 * The same REQUIRE_P2P reads with the dma-buf's going through placeholder
 * pages (file_placeholder_force, as GPU memory's would): what the page
 * cache served lands in the placeholders, bytes that are not zeros, and is
 * EREMOTEIO, nothing copied into the dma-buf; the rest moved by the
 * controller to the dma-buf's bus addresses. Counted exactly as through
 * p2pbar's own pages (file_errors_fallback included), and nothing in
 * file_zeroed_bytes or file_cpu_bytes.
 */
TEST_F(filecmd_fallback, fb, read_require_p2p_placeholders, 6, 120)
{
	struct cnt c0, c1;
	struct fb_tally t;
	char why[160];

	fb_placeholders(self, P2PNVME_FILE_F_REQUIRE_P2P, &c0, &c1, &t);
	tap(!t.bad && !t.short_moves,
	    "every read answered moved holds the file's 4 KiB (%lld wrong, the first at %lld; %lld short)",
	    t.bad, t.bad_off, t.short_moves);
	tap(!t.other && !t.bounce[0] && !t.bounce[1],
	    "every read moved (%lld + %lld), or refused: EREMOTEIO after the page cache served it (%lld + %lld), EOPNOTSUPP at the check (%lld); none other (%lld, %s)",
	    t.moved[0], t.moved[1], t.remoteio[0], t.remoteio[1], t.notsupp,
	    t.other + t.bounce[0] + t.bounce[1], err_str(t.other_err));
	{
		long long want[C_NR] = {
			[C_READS_P2P] = t.moved[0], [C_READS_DMABUF] = t.moved[1],
			[C_BYTES_P2P] = t.moved_bytes[0], [C_BYTES_DMABUF] = t.moved_bytes[1],
			[C_ERRORS] = t.remoteio[0] + t.remoteio[1],
			[C_ERRORS_FALLBACK] = t.remoteio[0] + t.remoteio[1], [C_DISK_P2P] = t.disk,
		};

		tap(cnt_moved(&c0, &c1, want, why, sizeof(why)),
		    "counted as through p2pbar's own pages: file_errors_fallback by the EREMOTEIO ones, file_zeroed_bytes and file_cpu_bytes unmoved, nothing else (%s)",
		    why);
	}
}

/*
 * The same reads without REQUIRE_P2P: those the page cache served succeed
 * with path bounce (the CPU copied the file's bytes into p2pmem), counted
 * on the bounce path; those on the p2p and dmabuf paths are exactly what
 * the controller moved.
 */
TEST_F(filecmd_fallback, fb, read_bounce, 6, 120)
{
	fb_case(self, false, false);
}

/*
 * The same reads without REQUIRE_P2P, the dma-buf's through placeholder
 * pages (file_placeholder_force): what the page cache served lands in the
 * placeholders and is copied into the dma-buf through p2pbar's vmap, on
 * path bounce (the file's bytes, checked like every other read); the rest
 * moved by the controller to the dma-buf's bus addresses. Counted: the
 * bounced reads on the bounce path, and the dma-buf's among them in
 * file_cpu_bytes as well (bytes the CPU wrote that are not zeros);
 * nothing in file_zeroed_bytes.
 */
TEST_F(filecmd_fallback, fb, read_bounce_placeholders, 6, 120)
{
	struct cnt c0, c1;
	struct fb_tally t;
	char why[160];

	fb_placeholders(self, 0, &c0, &c1, &t);
	tap(!t.bad && !t.short_moves,
	    "every read answered holds the file's 4 KiB, bounce ones too (%lld wrong, the first at %lld; %lld short)",
	    t.bad, t.bad_off, t.short_moves);
	tap(!t.other && !t.remoteio[0] && !t.remoteio[1],
	    "every read moved by the controller (%lld + %lld) or bounced (%lld + %lld), or refused EOPNOTSUPP at the check (%lld); none other (%lld, %s)",
	    t.moved[0], t.moved[1], t.bounce[0], t.bounce[1], t.notsupp,
	    t.other + t.remoteio[0] + t.remoteio[1], err_str(t.other_err));
	{
		long long want[C_NR] = {
			[C_READS_P2P] = t.moved[0], [C_READS_DMABUF] = t.moved[1],
			[C_BYTES_P2P] = t.moved_bytes[0], [C_BYTES_DMABUF] = t.moved_bytes[1],
			[C_READS_BOUNCE] = t.bounce[0] + t.bounce[1], [C_BYTES_BOUNCE] = t.bounce_bytes,
			[C_CPU] = t.bounce[1] * FB_BLK, [C_DISK_P2P] = t.disk,
		};

		tap(cnt_moved(&c0, &c1, want, why, sizeof(why)),
		    "counted: file_reads_bounce and file_bytes_bounce by the bounced reads, file_cpu_bytes by the dma-buf's (%lld x 4 KiB through its vmap), file_zeroed_bytes unmoved, nothing else (%s)",
		    t.bounce[1], why);
	}
}

/*
 * REQUIRE_P2P writes of the file's own bytes from the mapping and the
 * dma-buf while its direct I/O comes and goes: each written by the
 * controller from p2pmem (the disk's bytes_p2p by exactly theirs), or
 * refused: EOPNOTSUPP at the check, EREMOTEIO once the filesystem wrote it
 * through its page cache (ext4_buffered_write_iter(): the disk carried
 * none of the write's memory). The file keeps its bytes.
 */
TEST_F(filecmd_fallback, fb, write_require_p2p, 6, 120)
{
	fb_case(self, true, true);
}

/* ---- an encrypted file (--crypt) ------------------------------------------ */

#define CR_TSIZE	(64 * KIB)	/* the file */
#define CR_OFF		(16 * KIB)	/* a transfer: its offset ... */
#define CR_LEN		(16 * KIB)	/* ... and length */
/* what ENOPKG (fscrypt's "Missing crypto API support") means here */
#define CR_NOPKG	"the kernel lacks the crypto fscrypt's v2 AES-256-XTS policy needs (CONFIG_CRYPTO_AES, _XTS, _CBC, _CTS, _HMAC, _SHA512)"

/*
 * A file of an fscrypt v2 directory (a raw key added by root) on ext4 made
 * with -O encrypt and mounted -o inlinecrypt (the filecmd script's crypt
 * suite): its contents are encrypted by blk-crypto's fallback, the CPU,
 * since p2pnvme's disk has no inline encryption. A registered p2pbar
 * dma-buf and a /dev/p2pbarN mapping of CR_LEN each.
 */
/* does /proc/crypto list an algorithm named @alg (built in or loaded)? */
static bool crypto_has(const char *alg)
{
	char line[256], want[128];
	bool found = false;
	FILE *f = fopen("/proc/crypto", "re");

	if (!f)
		return false;
	snprintf(want, sizeof(want), "name         : %s\n", alg);
	while (!found && fgets(line, sizeof(line), f))
		found = !strcmp(line, want);
	fclose(f);
	return found;
}

FIXTURE(cr) {
	int nfd, bfd;
	unsigned int tid;
	char path[512];
	struct dbuf b;
	struct p2p_mem m;
};

FIXTURE_SETUP(cr)
{
	struct {
		struct fscrypt_add_key_arg a;
		__u8 raw[FSCRYPT_MAX_KEY_SIZE];
	} k = { .a = { .key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER,
		       .raw_size = FSCRYPT_MAX_KEY_SIZE } };
	struct fscrypt_policy_v2 pol = {
		.version = FSCRYPT_POLICY_V2,
		.contents_encryption_mode = FSCRYPT_MODE_AES_256_XTS,
		.filenames_encryption_mode = FSCRYPT_MODE_AES_256_CTS,
		.flags = FSCRYPT_POLICY_FLAGS_PAD_32,
	};
	char d[512];
	struct statx st;
	int dfd, ret, j;

	self->nfd = open(node, O_RDWR | O_CLOEXEC);
	if (self->nfd < 0)
		kt_fail("open %s: %s", node, strerror(errno));
	self->tid = idbase + 0x50;
	snprintf(d, sizeof(d), "%s/crypt", dir);
	if (mkdir(d, 0755) && errno != EEXIST)
		kt_fail("mkdir %s: %s", d, strerror(errno));
	dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		kt_fail("open %s: %s", d, strerror(errno));
	for (j = 0; j < FSCRYPT_MAX_KEY_SIZE; j++)
		k.raw[j] = 0xc0 ^ j;
	ret = ioctl(dfd, FS_IOC_ADD_ENCRYPTION_KEY, &k.a) ? errno : 0;
	/*
	 * ENOPKG, or the crypto API's ENOENT: hmac(sha512) missing (fscrypt's
	 * HKDF); an ENOENT with sha512 in /proc/crypto is a failure
	 */
	if (ret == ENOPKG || (ret == ENOENT && !crypto_has("sha512")))
		kt_skip("FS_IOC_ADD_ENCRYPTION_KEY: %s (%s; /proc/crypto has no sha512)", CR_NOPKG,
			strerror(ret));
	if (ret)
		kt_fail("FS_IOC_ADD_ENCRYPTION_KEY on %s: %s (CONFIG_FS_ENCRYPTION?)", d,
			strerror(ret));
	memcpy(pol.master_key_identifier, k.a.key_spec.u.identifier,
	       FSCRYPT_KEY_IDENTIFIER_SIZE);
	/* an empty directory, or one with this very policy already */
	if (ioctl(dfd, FS_IOC_SET_ENCRYPTION_POLICY, &pol))
		kt_fail("FS_IOC_SET_ENCRYPTION_POLICY v2 on %s: %s (mke2fs -O encrypt?)", d,
			strerror(errno));
	close(dfd);
	ret = mkfile(d, "f", self->tid, CR_TSIZE, self->path) ? errno : 0;
	/* ENOPKG: xts(aes) (blk-crypto's fallback) or cts(cbc(aes)) (the name) missing */
	if (ret == ENOPKG)
		kt_skip("the file %s/f: %s", d, CR_NOPKG);
	if (ret)
		kt_fail("the file %s/f: %s", d, strerror(ret));
	if (statx(AT_FDCWD, self->path, 0, STATX_DIOALIGN, &st))
		kt_fail("statx %s: %s", self->path, strerror(errno));
	if (!(st.stx_mask & STATX_DIOALIGN) || !st.stx_dio_offset_align)
		kt_skip("%s",
			"the encrypted file has no direct I/O (statx STATX_DIOALIGN 0): the kernel lacks inline encryption (CONFIG_FS_ENCRYPTION_INLINE_CRYPT, CONFIG_BLK_INLINE_ENCRYPTION_FALLBACK)");
	if (CR_OFF % st.stx_dio_offset_align || CR_LEN % st.stx_dio_offset_align)
		kt_fail("statx: direct I/O offset alignment %u, more than the transfers' %llu",
			st.stx_dio_offset_align, CR_LEN);
	mem2_get(bar_path, self->nfd, CR_LEN, &self->b, &self->bfd, &self->m);
}

FIXTURE_TEARDOWN(cr)
{
	mem2_put(self->nfd, &self->b, self->bfd, &self->m);
	unlink(self->path);
	close(self->nfd);
}

/* one transfer of [CR_OFF, +CR_LEN) on @fd, into or from the mapping or the dma-buf */
static int cr_one(struct _kt_fixture_cr *self, int fd, bool write, bool dmabuf, uint32_t flags,
		  struct p2pnvme_file_io *io, unsigned int *failed)
{
	uint32_t op = write ? P2PNVME_OP_WRITE : P2PNVME_OP_READ;

	*io = dmabuf ? fio(op, fd, CR_OFF, CR_LEN, 0, flags | P2PNVME_FILE_F_REGISTERED,
			   self->b.id) :
		       fio(op, fd, CR_OFF, CR_LEN, (uintptr_t)self->m.p, flags, 0);
	__sync_synchronize();
	return submit(self->nfd, io, 1, failed);
}

/* what cr_one()'s @dmabuf names */
static const char * const cr_what[] = { "a /dev/p2pbarN mapping", "a registered p2pbar dma-buf" };

/* 1 if all @len bytes at @p are @c */
static int all_are(const unsigned char *p, size_t len, unsigned char c)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

/* the case line of two refusals at the check since @c0: file_refused_p2p +2, nothing else */
static void cr_refused2(const struct cnt *c0)
{
	static const long long want[C_NR] = { [C_P2P] = 2 };
	struct cnt c1;
	char why[160];

	if (cnt_get(&c1))
		kt_fail("the counters went away");
	tap(cnt_moved(c0, &c1, want, why, sizeof(why)),
	    "counted: file_refused_p2p +2, nothing issued (the disk's bytes_p2p unmoved), nothing else (%s)",
	    why);
}

/*
 * REQUIRE_P2P reads of the encrypted file into the mapping and the dma-buf:
 * the fallback would decrypt them in place in the BAR, with the CPU, so
 * each is EREMOTEIO at the check, nothing issued (the memory untouched,
 * the disk's bytes_p2p unmoved), counted once each in file_refused_p2p. A
 * kernel without the check answers path p2p or dmabuf.
 */
TEST_F(filecmd_crypt, cr, read_require_p2p, 3, 60)
{
	struct p2pnvme_file_io io;
	unsigned int failed;
	struct cnt c0;
	int fd, at, ret;

	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || cnt_get(&c0))
		kt_fail("setup: %s", fd < 0 ? strerror(errno) : "the counters: missing");
	for (at = 0; at < 2; at++) {
		unsigned char *p = at ? self->b.p : self->m.p;

		memset(p, 0xee, CR_LEN);
		ret = cr_one(self, fd, false, at, P2PNVME_FILE_F_REQUIRE_P2P, &io, &failed);
		tap(ret == EREMOTEIO && !failed && all_are(p, CR_LEN, 0xee),
		    "a REQUIRE_P2P read of the encrypted file into %s: EREMOTEIO at the check (%s, failed %u, path %u), the memory untouched",
		    cr_what[at], err_str(ret), failed, io.path);
	}
	cr_refused2(&c0);
	close(fd);
}

/*
 * The same reads without REQUIRE_P2P: the file's plaintext, on path
 * bounce (the controller moved the ciphertext into p2pmem, the disk's
 * bytes_p2p says, and the CPU decrypted it there); into host memory, path
 * host, as ever.
 */
TEST_F(filecmd_crypt, cr, read_bounce, 4, 60)
{
	struct p2pnvme_file_io io;
	struct cnt c0, c1;
	unsigned int failed;
	unsigned char *h;
	long long d;
	char why[160];
	int fd, at, ret;

	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || cnt_get(&c0) || posix_memalign((void **)&h, 4096, CR_LEN))
		kt_fail("setup: %s", fd < 0 ? strerror(errno) : "the counters or memory: missing");
	for (at = 0; at < 2; at++) {
		unsigned char *p = at ? self->b.p : self->m.p;

		memset(p, 0xee, CR_LEN);
		ret = cr_one(self, fd, false, at, 0, &io, &failed);
		d = pat_diff(p, self->tid, CR_OFF, CR_LEN);
		tap(!ret && io.bytes == CR_LEN && io.path == P2PNVME_PATH_BOUNCE && d < 0,
		    "a read of the encrypted file into %s: %s, %llu bytes, path %u (want %u, bounce), the file's plaintext (first wrong byte %lld)",
		    cr_what[at], err_str(ret), (unsigned long long)io.bytes, io.path,
		    P2PNVME_PATH_BOUNCE, d);
	}
	memset(h, 0xee, CR_LEN);
	io = fio(P2PNVME_OP_READ, fd, CR_OFF, CR_LEN, (uintptr_t)h, 0, 0);
	ret = submit(self->nfd, &io, 1, &failed);
	d = pat_diff(h, self->tid, CR_OFF, CR_LEN);
	tap(!ret && io.bytes == CR_LEN && io.path == P2PNVME_PATH_HOST && d < 0,
	    "a read of the encrypted file into host memory: %s, %llu bytes, path %u (want %u, host), the file's plaintext (first wrong byte %lld)",
	    err_str(ret), (unsigned long long)io.bytes, io.path, P2PNVME_PATH_HOST, d);
	if (cnt_get(&c1))
		kt_fail("the counters went away");
	{
		long long want[C_NR] = {
			[C_READS_BOUNCE] = 2, [C_BYTES_BOUNCE] = 2 * CR_LEN,
			[C_READS_HOST] = 1, [C_BYTES_HOST] = CR_LEN, [C_DISK_P2P] = 2 * CR_LEN,
		};

		tap(cnt_moved(&c0, &c1, want, why, sizeof(why)),
		    "counted: file_reads_bounce +2, file_reads_host +1 and their bytes; the disk's bytes_p2p by the two p2pmem reads' ciphertext; nothing else (%s)",
		    why);
	}
	free(h);
	close(fd);
}

/*
 * REQUIRE_P2P writes into the encrypted file from the mapping and the
 * dma-buf: the fallback would encrypt them with the CPU into bounce pages,
 * so each is EREMOTEIO at the check, the file unchanged, counted in
 * file_refused_p2p (a kernel that issues them fails them after the fact,
 * their bytes written).
 */
TEST_F(filecmd_crypt, cr, write_require_p2p, 4, 60)
{
	unsigned char *back = malloc(CR_TSIZE);
	struct p2pnvme_file_io io;
	struct cnt c0;
	unsigned int failed;
	long long d = -2;
	int fd, at, ret;

	fd = open(self->path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || !back || cnt_get(&c0))
		kt_fail("setup: %s", fd < 0 ? strerror(errno) : "the counters or memory: missing");
	for (at = 0; at < 2; at++) {
		/* another file's bytes: a write that happened shows */
		pat_fill(at ? self->b.p : self->m.p, self->tid + 1, CR_OFF, CR_LEN);
		ret = cr_one(self, fd, true, at, P2PNVME_FILE_F_REQUIRE_P2P, &io, &failed);
		tap(ret == EREMOTEIO && !failed,
		    "a REQUIRE_P2P write of the encrypted file from %s: EREMOTEIO at the check (%s, failed %u, path %u)",
		    cr_what[at], err_str(ret), failed, io.path);
	}
	cr_refused2(&c0);
	if (!fsync(fd) && pread(fd, back, CR_TSIZE, 0) == (ssize_t)CR_TSIZE)
		d = pat_diff(back, self->tid, 0, CR_TSIZE);
	tap(d == -1, "the file after: its own bytes, whole (first wrong byte %lld)", d);
	free(back);
	close(fd);
}

/*
 * A read of the encrypted file into a dma-buf through placeholders (a
 * p2pbar dma-buf with the bench's file_placeholder_force, as GPU memory
 * would go): EOPNOTSUPP at the check, the memory untouched, since
 * blk-crypto's fallback would decrypt the placeholders in place and leave
 * the ciphertext in the dma-buf, reported as carried.
 */
TEST_F(filecmd_crypt, cr, placeholders_refused, 1, 60)
{
	struct p2pnvme_file_io io;
	unsigned int failed;
	int fd, ret;

	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || p2p_sysfs_write("/sys/module/p2pnvme/parameters/file_placeholder_force", "1"))
		kt_fail("setup: %s", strerror(errno));
	memset(self->b.p, 0xee, CR_LEN);
	ret = cr_one(self, fd, false, true, 0, &io, &failed);
	p2p_sysfs_write("/sys/module/p2pnvme/parameters/file_placeholder_force", "0");
	tap(ret == EOPNOTSUPP && !failed && all_are(self->b.p, CR_LEN, 0xee),
	    "a read of the encrypted file into a dma-buf through placeholders: EOPNOTSUPP at the check (%s, failed %u), the memory untouched",
	    err_str(ret), failed);
	close(fd);
}

/* ---- a verity file (--verity) ----------------------------------------------- */

#define VR_TSIZE	(256 * KIB)	/* each file */
#define VR_LEN		(16 * KIB)	/* a transfer */
#define VR_ROUNDS	24		/* the race: files turned verity under a stream */
#define VR_AFTER	4		/* reads of each after its turn */
#define VR_FORCE	"/sys/module/p2pnvme/parameters/file_placeholder_force"

/*
 * Files on ext4 made with -O verity (the filecmd script's verity suite):
 * once fs-verity is on, ext4 has no direct I/O for the file
 * (ext4_should_use_dio(): STATX_DIOALIGN 0), and its page cache verifies
 * what it reads. A registered p2pbar dma-buf and a /dev/p2pbarN mapping of
 * VR_LEN each.
 */
FIXTURE(vr) {
	int nfd, bfd;
	unsigned int tid;
	char path[FILE_PATH_LEN];
	struct dbuf b;
	struct p2p_mem m;
};

/* fs-verity turned on for @path (SHA-256, 4 KiB blocks): 0 or an errno */
static int verity_enable(const char *path)
{
	struct fsverity_enable_arg a = {
		.version = 1, .hash_algorithm = FS_VERITY_HASH_ALG_SHA256, .block_size = 4096,
	};
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return errno;
	ret = ioctl(fd, FS_IOC_ENABLE_VERITY, &a) ? errno : 0;
	close(fd);
	return ret;
}

FIXTURE_SETUP(vr)
{
	int ret;

	self->nfd = open(node, O_RDWR | O_CLOEXEC);
	if (self->nfd < 0)
		kt_fail("open %s: %s", node, strerror(errno));
	if (access("/sys/fs/ext4/features/verity", F_OK))
		kt_skip("%s", "ext4 has no fs-verity in this kernel (CONFIG_FS_VERITY)");
	self->tid = idbase + 0x60;
	if (mkfile(dir, "verity", self->tid, VR_TSIZE, self->path))
		kt_fail("the file %s/verity: %s", dir, strerror(errno));
	ret = verity_enable(self->path);
	/* ENOPKG: fs-verity's "Missing crypto API support" for SHA-256 */
	if (ret == ENOPKG)
		kt_skip("FS_IOC_ENABLE_VERITY: %s (the kernel lacks the crypto fs-verity's SHA-256 needs: CONFIG_CRYPTO_SHA256)",
			strerror(ret));
	if (ret)
		kt_fail("FS_IOC_ENABLE_VERITY on %s: %s (mke2fs -O verity?)", self->path,
			strerror(ret));
	mem2_get(bar_path, self->nfd, VR_LEN, &self->b, &self->bfd, &self->m);
}

FIXTURE_TEARDOWN(vr)
{
	mem2_put(self->nfd, &self->b, self->bfd, &self->m);
	unlink(self->path);
	close(self->nfd);
}

/* what vr_one()'s @at names */
static const char * const vr_what[] = {
	"a /dev/p2pbarN mapping", "a registered p2pbar dma-buf",
	"a registered p2pbar dma-buf through placeholders", "host memory",
};

/*
 * One read of [@off, +VR_LEN) of @fd with @flags into: @at 0 the mapping,
 * 1 the dma-buf, 2 the dma-buf through placeholders (file_placeholder_force
 * set around it), 3 @host. Its memory filled with 0xee first.
 */
static int vr_one(struct _kt_fixture_vr *self, int fd, int at, uint64_t off, uint32_t flags,
		  unsigned char *host, struct p2pnvme_file_io *io, unsigned int *failed)
{
	unsigned char *p = at == 0 ? self->m.p : at == 3 ? host : self->b.p;
	int ret;

	memset(p, 0xee, VR_LEN);
	*io = at == 1 || at == 2 ?
	      fio(P2PNVME_OP_READ, fd, off, VR_LEN, 0, flags | P2PNVME_FILE_F_REGISTERED, self->b.id) :
	      fio(P2PNVME_OP_READ, fd, off, VR_LEN, (uintptr_t)p, flags, 0);
	__sync_synchronize();
	if (at == 2 && p2p_sysfs_write(VR_FORCE, "1"))
		kt_fail("file_placeholder_force: %s", strerror(errno));
	ret = submit(self->nfd, io, 1, failed);
	if (at == 2)
		p2p_sysfs_write(VR_FORCE, "0");
	return ret;
}

/*
 * A verity file has no direct I/O on ext4 (statx STATX_DIOALIGN offset 0):
 * the command refuses its reads at the check, EOPNOTSUPP, into p2pmem, a
 * dma-buf (its pages and placeholders) and host memory alike: nothing
 * issued, the memory untouched, nothing counted. The file reads whole by
 * pread (the page cache verifies it), so the refusal is the command's.
 */
TEST_F(filecmd_verity, vr, refused, 7, 60)
{
	static const long long none[C_NR];
	struct p2pnvme_file_io io;
	unsigned int failed;
	struct cnt c0, c1;
	unsigned char *h;
	struct statx st;
	char why[160];
	int fd, at, ret;

	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || cnt_get(&c0) || posix_memalign((void **)&h, 4096, VR_TSIZE))
		kt_fail("setup: %s", fd < 0 ? strerror(errno) : "the counters or memory: missing");
	ret = statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) ? errno : 0;
	tap(!ret && (st.stx_attributes & STATX_ATTR_VERITY) && (st.stx_mask & STATX_DIOALIGN) &&
	    !st.stx_dio_offset_align,
	    "statx: the file is verity and has no direct I/O (STATX_DIOALIGN offset alignment %u; %s)",
	    ret ? 0 : st.stx_dio_offset_align, err_str(ret));
	for (at = 0; at < 4; at++) {
		unsigned char *p = at == 0 ? self->m.p : at == 3 ? h : self->b.p;

		ret = vr_one(self, fd, at, VR_LEN, 0, h, &io, &failed);
		tap(ret == EOPNOTSUPP && !failed && all_are(p, VR_LEN, 0xee),
		    "a read of the verity file into %s: EOPNOTSUPP at the check (%s, failed %u), the memory untouched",
		    vr_what[at], err_str(ret), failed);
	}
	if (cnt_get(&c1))
		kt_fail("the counters went away");
	tap(cnt_moved(&c0, &c1, none, why, sizeof(why)), "counted: nothing (%s)", why);
	tap(pread(fd, h, VR_TSIZE, 0) == VR_TSIZE && pat_diff(h, self->tid, 0, VR_TSIZE) < 0,
	    "pread reads the verity file whole, its bytes (the page cache verifies them)");
	free(h);
	close(fd);
}

/*
 * fs-verity turned on while REQUIRE_P2P reads of the file stream: into
 * the mapping, the dma-buf, and the dma-buf through placeholders, a third
 * of VR_ROUNDS fresh files each. Each read the controller moved (the
 * file's bytes, whole), or refused: EOPNOTSUPP at the check once the
 * file is verity, or EREMOTEIO where ext4 took its page cache after the
 * check (the turn landed between them: the page cache's bytes are never
 * answered as P2P); none other. The bytes answered on the p2p and dmabuf
 * paths are exactly the disk's bytes_p2p.
 */
TEST_F(filecmd_verity, vr, turned_on_under_reads, 5, 300)
{
	long long moved = 0, moved_bytes = 0, notsupp = 0, remoteio = 0, other = 0, bad = 0;
	long long after_notsupp = 0;
	long long disk0 = node_num(node, "disk/bytes_p2p"), disk, before = 0;
	int r, turned = 0, other_err = 0, turn_err = 0;
	char path[FILE_PATH_LEN];

	srandom(self->tid);
	for (r = 0; r < VR_ROUNDS; r++) {
		int at = r % 3, fd, status, after = 0, done = 0;
		pid_t pid;

		if (mkfile(dir, "vrace", self->tid + 1, VR_TSIZE, path))
			kt_fail("the file %s/vrace: %s", dir, strerror(errno));
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			kt_fail("open %s: %s", path, strerror(errno));
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			kt_fail("fork: %s", strerror(errno));
		if (!pid) {
			usleep(random() % 20000);
			_exit(verity_enable(path));
		}
		while (after < VR_AFTER) {
			uint64_t off = (random() % (VR_TSIZE / VR_LEN)) * VR_LEN;
			struct p2pnvme_file_io io;
			unsigned int failed;
			int ret;

			if (!done && waitpid(pid, &status, WNOHANG) == pid) {
				done = 1;
				if (WIFEXITED(status) && !WEXITSTATUS(status))
					turned++;
				else if (!turn_err)
					turn_err = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
			}
			after += done;
			ret = vr_one(self, fd, at, off, P2PNVME_FILE_F_REQUIRE_P2P, NULL, &io, &failed);
			/* refused at the check (the entry's index in @failed), or its status */
			if (ret && failed < 1) {
				if (ret == EOPNOTSUPP) {
					notsupp++;
					after_notsupp += done;
					continue;
				}
			} else {
				ret = -io.status;
				if (ret == EREMOTEIO) {
					remoteio++;
					continue;
				}
			}
			if (ret || io.path != (at ? P2PNVME_PATH_DMABUF : P2PNVME_PATH_P2P) ||
			    io.bytes != VR_LEN) {
				if (!other_err)
					other_err = ret ?: EPROTO;
				other++;
				continue;
			}
			moved++;
			moved_bytes += io.bytes;
			before += !done;
			if (pat_diff(at ? self->b.p : self->m.p, self->tid + 1, off, VR_LEN) >= 0)
				bad++;
		}
		close(fd);
		unlink(path);
	}
	disk = node_num(node, "disk/bytes_p2p") - disk0;
	printf("    # %d files turned verity under the reads: %lld moved (%lld before a turn), %lld EOPNOTSUPP at the check, %lld EREMOTEIO (the page cache after the check), %lld other (%s); the disk's bytes_p2p +%lld\n",
	       turned, moved, before, notsupp, remoteio, other, err_str(other_err), disk);
	tap(turned == VR_ROUNDS && !turn_err,
	    "fs-verity turned on for each of %d files under a stream of reads (%d; %s)", VR_ROUNDS,
	    turned, err_str(turn_err));
	tap(after_notsupp == VR_ROUNDS * VR_AFTER,
	    "every read after a turn returned: refused EOPNOTSUPP at the check (%lld of %d)",
	    after_notsupp, VR_ROUNDS * VR_AFTER);
	tap(!bad, "every read answered moved holds the file's bytes (%lld wrong)", bad);
	tap(!other, "every read moved whole, or refused EOPNOTSUPP or EREMOTEIO; none other (%lld, %s)",
	    other, err_str(other_err));
	tap(moved_bytes == disk,
	    "the reads answered on the p2p and dmabuf paths: %lld bytes, exactly what the controller moved (the disk's bytes_p2p +%lld)",
	    moved_bytes, disk);
}

/* ---- p2pbar unbound mid-stream (--bar-unbind) ------------------------------ */

#define UB_ENTRIES	8
#define UB_PIECE	(64 * KIB)

/* the stream: batches into the registered dma-buf and the mapping in turn */
struct ub_stream {
	int nfd, fd;
	uint32_t id;
	unsigned char *map;		/* never touched by the CPU: SIGBUS after the unbind */
	int stop, unbound, done;	/* __atomic */
	long long ok, gone, other, after, late_ok;	/* __atomic: ok and after */
	int other_err;
};

static void *ub_stream_fn(void *arg)
{
	struct ub_stream *s = arg;
	struct p2pnvme_file_io ios[UB_ENTRIES];
	long long k;
	int i, ret;

	for (k = 0; !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE); k++) {
		/* whether the unbind had returned before this batch was issued */
		int after = __atomic_load_n(&s->unbound, __ATOMIC_ACQUIRE);

		for (i = 0; i < UB_ENTRIES; i++) {
			uint64_t off = ((k * UB_ENTRIES + i) % 64) * UB_PIECE;

			ios[i] = k & 1 ? fio(P2PNVME_OP_READ, s->fd, off, UB_PIECE,
					     (uintptr_t)s->map + i * UB_PIECE, 0, 0) :
					 fio(P2PNVME_OP_READ, s->fd, off, UB_PIECE, i * UB_PIECE,
					     P2PNVME_FILE_F_REGISTERED, s->id);
		}
		ret = submit(s->nfd, ios, UB_ENTRIES, NULL);
		if (!ret) {
			__atomic_add_fetch(&s->ok, 1, __ATOMIC_RELEASE);
			s->late_ok += after;
		} else if (ret == ENODEV || ret == EFAULT) {
			s->gone++;	/* the registration revoked; the mapping zapped */
		} else if (!s->other++) {
			s->other_err = ret;
		}
		if (after)
			__atomic_add_fetch(&s->after, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static double now_s(void)
{
	return now_ms() / 1000.0;
}

/* an IOMMU translates the controller's DMA: QEMU's trace shows IOVAs, not bus addresses */
static int have_iommu(void)
{
	DIR *d = opendir("/sys/class/iommu");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n > 0;
}

/*
 * p2pbar unbound from @bar_bdf while a thread keeps batches of file
 * commands reading into a registered p2pbar dma-buf and a /dev/p2pbarN
 * mapping: the unbind returns in bounded time; each batch before it
 * moved, or failed ENODEV (the registration revoked) or EFAULT (the
 * mapping zapped), and nothing else; no batch issued after it returned
 * moved a byte, and QEMU's nvme did no DMA into the BAR from then on
 * (the host's trace); after, both refusals again, and the buffer
 * unregisters. It leaves p2pbar unbound: the guest test binds it again.
 */
TEST_F(filecmd_bar_unbind, fc, unbind_mid_stream, 7, 120)
{
	long long scale = getenv("P2P_TIMEOUT_SCALE") ? atoll(getenv("P2P_TIMEOUT_SCALE")) : 1;
	struct ub_stream s = { .nfd = self->nfd };
	struct p2pnvme_file_io io;
	struct p2pbar_info info;
	struct p2p_mem m;
	double t0, took = -1;
	int bfd, ret, r1, r2, r3, r4, r5, uerr, k;
	pthread_t th;
	struct dbuf b;
	long long d1, d2;

	s.fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ret = dbuf_get(bar_path, self->nfd, UB_ENTRIES * UB_PIECE, &b);
	bfd = p2p_bar_open(bar_path, &info);
	if (s.fd < 0 || ret || bfd < 0 || p2p_mem_get(bfd, UB_ENTRIES * UB_PIECE, 0, &m))
		kt_fail("setup: %s", strerror(s.fd < 0 ? errno : ret ?: EIO));
	s.id = b.id;
	s.map = m.p;

	/* the stream's two destinations work, before */
	memset(b.p, 0xee, UB_PIECE);
	memset(m.p, 0xee, UB_PIECE);
	io = fio(P2PNVME_OP_READ, s.fd, 0, UB_PIECE, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	r1 = submit1(self->nfd, &io);
	io = fio(P2PNVME_OP_READ, s.fd, 0, UB_PIECE, (uintptr_t)m.p, 0, 0);
	r2 = r1 ? r1 : submit1(self->nfd, &io);
	d1 = pat_diff(b.p, self->id, 0, UB_PIECE);
	d2 = pat_diff(m.p, self->id, 0, UB_PIECE);
	tap(!r1 && !r2 && d1 < 0 && d2 < 0,
	    "before: 64 KiB into the registered dma-buf and into the mapping, the file's bytes (%s)",
	    err_str(r1 ?: r2));
	hostcheck("pattern %llu %s@%llu %#x 0", UB_PIECE, bar_name,
		  (unsigned long long)b.bar_offset, self->id);
	hostcheck("pattern %llu %s@%llu %#x 0", UB_PIECE, bar_name,
		  (unsigned long long)m.bar_offset, self->id);

	if (pthread_create(&th, NULL, ub_stream_fn, &s))
		kt_fail("pthread_create");
	for (k = 0; k < 1000 * scale && __atomic_load_n(&s.ok, __ATOMIC_ACQUIRE) < 10; k++)
		usleep(10000);
	t0 = now_s();
	ret = p2p_sysfs_write("/sys/bus/pci/drivers/p2pbar/unbind", bar_bdf);
	took = now_s() - t0;
	uerr = -ret;
	__atomic_store_n(&s.unbound, 1, __ATOMIC_RELEASE);
	/* from here on no byte may reach the BAR */
	hostcheck("dma-mark");
	/* the stream goes on, refused, for 16 batches issued after the unbind */
	for (k = 0; k < 500 * scale && __atomic_load_n(&s.after, __ATOMIC_ACQUIRE) < 16; k++)
		usleep(10000);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	for (k = 0; k < 3000 * scale && !__atomic_load_n(&s.done, __ATOMIC_ACQUIRE); k++)
		usleep(10000);
	if (!__atomic_load_n(&s.done, __ATOMIC_ACQUIRE))
		kt_fail("the stream did not end within %lld s of being told", 30 * scale);
	pthread_join(th, NULL);
	/* after: the registration revoked, the mapping zapped */
	io = fio(P2PNVME_OP_READ, s.fd, 0, UB_PIECE, 0, P2PNVME_FILE_F_REGISTERED, b.id);
	r3 = submit1(self->nfd, &io);
	io = fio(P2PNVME_OP_READ, s.fd, 0, UB_PIECE, (uintptr_t)m.p, 0, 0);
	r4 = submit1(self->nfd, &io);
	r5 = -p2p_nvme_unregister(self->nfd, b.id);
	if (have_iommu())
		printf("%s\n",
		       "    # an IOMMU: QEMU's trace has IOVAs, not the BAR's bus addresses; no trace check");
	else
		hostcheck("dma-notin %#llx %#llx", (unsigned long long)info.size,
			  (unsigned long long)info.bus_addr);

	printf("    # stream: %lld batches moved, %lld refused (ENODEV, EFAULT), %lld other (%s); ",
	       s.ok, s.gone, s.other, err_str(s.other_err));
	printf("%lld issued after the unbind returned\n", s.after);
	tap(!uerr && took < 10 * scale, "p2pbar unbinds from %s under the stream in %.2f s (%s)",
	    bar_bdf, took, err_str(uerr));
	tap(s.ok >= 10 && s.gone >= 1 && !s.other,
	    "each batch moved or was refused ENODEV or EFAULT (%lld, %lld, %lld other: %s)", s.ok,
	    s.gone, s.other, err_str(s.other_err));
	tap(s.after >= 16 && !s.late_ok,
	    "none of the %lld batches issued after the unbind returned moved a byte (%lld did)",
	    s.after, s.late_ok);
	result(r3 == ENODEV, "after: a read into the revoked registered dma-buf", ENODEV, r3);
	result(r4 == EFAULT, "after: a read into the zapped /dev/p2pbar0 mapping", EFAULT, r4);
	result(r5 == 0, "after: the revoked buffer unregisters", 0, r5);
	munmap(b.p, b.len);
	close(b.dfd);
	munmap(m.p, m.len);
	close(bfd);
	close(s.fd);
}

/* ---- p2pbar unloaded and loaded again under p2pnvme (--bar-reload) -------- */

/* p2pbar's module references (/sys/module/p2pbar/refcnt); -1: not loaded */
static long long bar_refcnt(void)
{
	return p2p_sysfs_num("/sys/module/p2pbar/refcnt");
}

/* rmmod p2pbar, as busybox's and kmod's rmmod ask it: 0 or errno */
static int bar_unload(void)
{
	return syscall(SYS_delete_module, "p2pbar", O_NONBLOCK) ? errno : 0;
}

/* @bar_bdf's driver is p2pbar */
static int bar_bound(void)
{
	char path[256], link[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", bar_bdf);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = 0;
	return !strcmp(strrchr(link, '/') ? strrchr(link, '/') + 1 : link, "p2pbar");
}

/*
 * insmod @bar_ko; it binds @bar_bdf (whose driver_override still names
 * p2pbar) at its registration, probed again here in case. 0 once bound
 * and its node is there, or errno.
 */
static int bar_load(long long scale)
{
	int fd = open(bar_ko, O_RDONLY | O_CLOEXEC), ret, k;

	if (fd < 0)
		return errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? errno : 0;
	close(fd);
	if (ret)
		return ret;
	for (k = 0; k < 1000 * scale; k++) {
		if (bar_bound() && !access(bar_path, R_OK | W_OK))
			return 0;
		if (k == 100)
			p2p_sysfs_write("/sys/bus/pci/drivers_probe", bar_bdf);
		usleep(10000);
	}
	return ETIMEDOUT;
}

/* p2pbar's references back to 0 within 2 s (@scale): the time, or -1 */
static double bar_unheld(long long scale)
{
	long long t0 = now_ms();

	while (bar_refcnt() != 0) {
		if (now_ms() - t0 > 2000 * scale)
			return -1;
		usleep(10000);
	}
	return (now_ms() - t0) / 1000.0;
}

/* One P2PNVME_URING_CMD_FILE_IO read on a ring of its own: the CQE's res and res2. */
static int uring_read1(int nfd, const struct p2pnvme_file_io *io, uint64_t *res2)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32 };
	struct p2pnvme_uring_file_cmd c = { .flags = io->flags, .op = io->op, .fd = io->fd,
					    .buf_id = io->buf_id, .offset = io->offset,
					    .len = io->len, .addr = io->addr };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int ret;

	ret = io_uring_queue_init_params(4, &ring, &p);
	if (ret)
		return ret;
	sqe = io_uring_get_sqe(&ring);
	if (!sqe) {
		io_uring_queue_exit(&ring);
		return -EBUSY;
	}
	p2p_uring_cmd(sqe, nfd, P2PNVME_URING_CMD_FILE_IO, &c, sizeof(c), 0);
	ret = io_uring_submit(&ring);
	ret = ret == 1 ? io_uring_wait_cqe(&ring, &cqe) : ret < 0 ? ret : -EIO;
	if (!ret) {
		ret = cqe->res;
		*res2 = cqe->big_cqe[0];
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	return ret;
}

/*
 * p2pbar unloaded and loaded again while p2pnvme stays, around file
 * commands into its dma-bufs: a dma-buf holds p2pbar's module while it
 * lives (rmmod EAGAIN), p2pnvme holds nothing of p2pbar's after its file
 * command used one (closed: rmmod succeeds), and finds the new p2pbar's
 * dma-bufs through the ioctl and io_uring, with the file's bytes in the
 * BAR. Leaves p2pbar loaded and bound.
 */
TEST_F(filecmd_bar_reload, fc, reload, 10, 120)
{
	long long scale = getenv("P2P_TIMEOUT_SCALE") ? atoll(getenv("P2P_TIMEOUT_SCALE")) : 1;
	uint32_t flags = P2PNVME_FILE_F_REGISTERED | P2PNVME_FILE_F_REQUIRE_P2P;
	int fd = open(self->path, O_RDONLY | O_CLOEXEC), ret, r2;
	unsigned char *host = mmap(NULL, 64 * KIB, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct p2pnvme_file_io io;
	long long held, d, d2;
	uint64_t res2 = ~0ULL;
	double took;
	struct dbuf b;

	if (fd < 0 || host == MAP_FAILED)
		kt_fail("setup: %s", strerror(errno));
	if (bar_refcnt() < 0)
		kt_fail("p2pbar is not loaded (/sys/module/p2pbar/refcnt)");

	/* a file command into a p2pbar dma-buf, which stays open, mapped, registered */
	ret = dbuf_get(bar_path, self->nfd, 2 * MIB, &b);
	if (ret)
		kt_fail("a registered p2pbar dma-buf: %s", strerror(ret));
	io = fio(P2PNVME_OP_READ, fd, 0, 256 * KIB, 0, flags, b.id);
	ret = submit1(self->nfd, &io);
	d = pat_diff(b.p, self->id, 0, 256 * KIB);
	tap(!ret && io.bytes == 256 * KIB && io.path == P2PNVME_PATH_DMABUF && d < 0,
	    "before: 256 KiB into a registered p2pbar dma-buf, path dmabuf, the file's bytes (%s, %llu bytes, path %u, first wrong %lld)",
	    err_str(ret), (unsigned long long)io.bytes, io.path, d);
	held = bar_refcnt();
	ret = bar_unload();
	tap(ret == EAGAIN && bar_refcnt() >= 1,
	    "rmmod p2pbar while that dma-buf lives: EAGAIN (in use), p2pbar stays (%s; refcnt %lld)",
	    err_str(ret), held);
	if (!ret)
		kt_fail("p2pbar unloaded under a live dma-buf of its own");

	/* closed: nothing holds p2pbar, p2pnvme least of all */
	dbuf_put(self->nfd, &b);
	took = bar_unheld(scale);
	tap(took >= 0,
	    "closed and unregistered: p2pbar's references drop to 0 (in %.2f s; refcnt %lld)",
	    took, bar_refcnt());
	ret = bar_unload();
	tap(!ret && bar_refcnt() < 0 && access(bar_path, F_OK),
	    "rmmod p2pbar after the file command used its dma-buf: it unloads, %s is gone (%s)",
	    bar_path, err_str(ret));
	if (ret)
		kt_fail("p2pbar did not unload: %s", err_str(ret));
	io = fio(P2PNVME_OP_READ, fd, 64 * KIB, 64 * KIB, (uintptr_t)host, 0, 0);
	ret = submit1(self->nfd, &io);
	d = pat_diff(host, self->id, 64 * KIB, 64 * KIB);
	tap(!ret && io.bytes == 64 * KIB && io.path == P2PNVME_PATH_HOST && d < 0,
	    "without p2pbar: p2pnvme's file command reads into host memory (%s, first wrong %lld)",
	    err_str(ret), d);

	/* loaded again, at the same address or not: its dma-bufs are found afresh */
	ret = bar_load(scale);
	tap(!ret, "p2pbar loads again from %s and binds %s, %s is back (%s)", bar_ko, bar_bdf,
	    bar_path, err_str(ret));
	if (ret)
		kt_fail("p2pbar did not come back: %s", err_str(ret));
	ret = dbuf_get(bar_path, self->nfd, 2 * MIB, &b);
	if (ret)
		kt_fail("a registered dma-buf of the new p2pbar: %s", strerror(ret));
	memset(b.p, 0xee, 2 * MIB);
	io = fio(P2PNVME_OP_READ, fd, MIB, MIB, 0, flags, b.id);
	ret = submit1(self->nfd, &io);
	d = pat_diff(b.p, self->id, MIB, MIB);
	tap(!ret && io.bytes == MIB && io.path == P2PNVME_PATH_DMABUF && d < 0,
	    "after: 1 MiB through the ioctl into a new p2pbar dma-buf, path dmabuf, the file's bytes (%s, %llu bytes, path %u, first wrong %lld)",
	    err_str(ret), (unsigned long long)io.bytes, io.path, d);
	hostcheck("pattern %llu %s@%llu %#x %llu", MIB, bar_name,
		  (unsigned long long)b.bar_offset, self->id, MIB);
	io = fio(P2PNVME_OP_READ, fd, 2 * MIB, MIB, MIB, flags, b.id);
	r2 = uring_read1(self->nfd, &io, &res2);
	d2 = pat_diff(b.p + MIB, self->id, 2 * MIB, MIB);
	tap(r2 == (int)MIB && res2 == P2PNVME_URING_RES2(P2PNVME_PATH_DMABUF, 0) && d2 < 0,
	    "after: 1 MiB through io_uring into it, path dmabuf, the file's bytes (res %d, res2 %#llx, first wrong %lld)",
	    r2, (unsigned long long)res2, d2);
	hostcheck("pattern %llu %s@%llu %#x %llu", MIB, bar_name,
		  (unsigned long long)b.bar_offset + MIB, self->id, 2 * MIB);

	/* closed again: the io_uring command left nothing held either */
	dbuf_put(self->nfd, &b);
	took = bar_unheld(scale);
	held = bar_refcnt();
	ret = bar_unload();
	tap(took >= 0 && !ret && bar_refcnt() < 0,
	    "closed: rmmod p2pbar after the io_uring command used its dma-buf: it unloads (%s; refcnt %lld after %.2f s)",
	    err_str(ret), held, took);
	ret = bar_refcnt() < 0 ? bar_load(scale) : 0;
	tap(!ret && bar_bound(), "p2pbar loaded and bound to %s again, as found (%s)", bar_bdf,
	    err_str(ret));
	munmap(host, 64 * KIB);
	close(fd);
}

/* ---- placeholders: reads into GPU memory (--gpu) --------------------------- */

#define GP_PARAM	"/sys/module/p2pnvme/parameters/file_placeholder_force"
#define GP_SIZE		(2 * MIB)	/* each export */
#define GP_TSIZE	MIB		/* the plain and the fragmented file */
#define GP_SPARSE	(256 * KIB)	/* the sparse and the preallocated file */

static const char *gpu_bar;		/* the BAR p2pgpu exports from (its backing file) */
static const char *gpu_bdf;		/* p2pgpu's function */
static const char * const gp_name[] = { "", "nvidia", "amdgpu", "xe" };

/*
 * Files on p2pnvme's disk, the bench's GPU personalities (p2pgpu, bound to
 * the profile's last ivshmem function), each export registered with
 * p2pnvme: the file command reads into them through placeholder pages.
 * None has a vmap (NVIDIA's exporter has none): the CPU's zeros come back
 * as zero_len. The plain file, GP_TSIZE of the pattern; the sparse one,
 * data [0, 64K), a hole [64K, 128K), data [128K, 256K); the preallocated
 * one, data [0, 64K), unwritten [64K, 192K), data [192K, 256K); the
 * fragmented one, GP_TSIZE written 4 KiB at a time in a shuffled order,
 * each synced.
 */
FIXTURE(gp) {
	int nfd, gfd;
	unsigned int tid;
	char plain[512], sparse[512], prealloc[512], frag[512];
	int dfd[4];
	uint32_t id[4];
};

static int gp_export(int gfd, uint32_t personality, int *dfd)
{
	struct p2pgpu_export e = { .personality = personality, .size = GP_SIZE };

	if (ioctl(gfd, P2PGPU_IOC_EXPORT, &e))
		return errno;
	*dfd = e.fd;
	return 0;
}

static int gp_buf(int gfd, unsigned long cmd, int dfd, uint64_t off, uint64_t len, uint64_t arg,
		  struct p2pgpu_buf *out)
{
	struct p2pgpu_buf b = { .fd = dfd, .off = off, .len = len, .arg = arg };
	int ret = ioctl(gfd, cmd, &b) ? errno : 0;

	if (out)
		*out = b;
	return ret;
}

/* the exporter's CPU view of @len bytes at @off: file @id's pattern from @foff? */
static long long gp_diff(struct _kt_fixture_gp *self, int p, uint64_t off, uint64_t len,
			 unsigned int id, uint64_t foff)
{
	unsigned char *b = malloc(len);
	long long d = -2;

	if (b && !gp_buf(self->gfd, P2PGPU_IOC_READ, self->dfd[p], off, len, (uintptr_t)b, NULL))
		d = pat_diff(b, id, foff, len);
	free(b);
	return d;
}

/* ... all @byte? 1, 0, or -1 when it cannot be read */
static int gp_all(struct _kt_fixture_gp *self, int p, uint64_t off, uint64_t len, int byte)
{
	unsigned char *b = malloc(len);
	int ret = -1;

	if (b && !gp_buf(self->gfd, P2PGPU_IOC_READ, self->dfd[p], off, len, (uintptr_t)b, NULL))
		ret = all_are(b, len, byte);
	free(b);
	return ret;
}

/* the host's view: the BAR's backing file at the buffer's VRAM blocks */
static void gp_host(struct _kt_fixture_gp *self, int p, uint64_t off, uint64_t len,
		    unsigned int id, uint64_t foff)
{
	struct p2pgpu_block blk[64];
	struct p2pgpu_layout l = { .fd = self->dfd[p], .nblocks = 64, .blocks = (uintptr_t)blk };
	unsigned int k;

	if (ioctl(self->gfd, P2PGPU_IOC_LAYOUT, &l) || !l.nblocks || l.nblocks > 64) {
		printf("    # %s: no VRAM layout (%u blocks): not checked on the host\n", gp_name[p],
		       l.nblocks);
		return;
	}
	for (k = 0; k < l.nblocks; k++) {
		uint64_t s = off > blk[k].off ? off : blk[k].off;
		uint64_t e = off + len < blk[k].off + blk[k].len ? off + len :
			     blk[k].off + blk[k].len;

		if (s < e)
			hostcheck("pattern %llu %s@%llu %#x %llu", (unsigned long long)(e - s),
				  gpu_bar, (unsigned long long)(blk[k].bar_off + s - blk[k].off),
				  id, (unsigned long long)(foff + s - off));
	}
}

/* a read of [@foff, +@len) of @path into export @p at @off */
static int gp_read(struct _kt_fixture_gp *self, int p, const char *path, uint64_t foff,
		   uint64_t len, uint64_t off, uint32_t flags, struct p2pnvme_file_io *io)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return errno;
	*io = fio(P2PNVME_OP_READ, fd, foff, len, off, P2PNVME_FILE_F_REGISTERED | flags,
		  self->id[p]);
	ret = submit1(self->nfd, io);
	close(fd);
	return ret;
}

static int gp_uring(struct _kt_fixture_gp *self, int p, const char *path, uint64_t foff,
		    uint64_t len, uint64_t off, uint64_t *res2)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;
	struct p2pnvme_file_io io;

	if (fd < 0)
		return -errno;
	io = fio(P2PNVME_OP_READ, fd, foff, len, off, P2PNVME_FILE_F_REGISTERED, self->id[p]);
	ret = uring_read1(self->nfd, &io, res2);
	close(fd);
	return ret;
}

/* @buf: DIR/@name, for the fixtures' files (room: 512) */
static const char *gp_path(char *buf, const char *name)
{
	snprintf(buf, 512, "%s/%s", dir, name);
	return buf;
}

/* @path: data [0, 64K), then @hole bytes either a hole or preallocated, then data to GP_SPARSE */
static int gp_holed(const char *path, unsigned int id, uint64_t hole, bool prealloc)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), ok;

	if (fd < 0)
		return -1;
	ok = !write_pat(fd, id, 0, 64 * KIB) &&
	     (!prealloc || !fallocate(fd, 0, 64 * KIB, hole)) &&
	     !write_pat(fd, id, 64 * KIB + hole, GP_SPARSE - 64 * KIB - hole) && !fsync(fd);
	close(fd);
	return ok ? 0 : -1;
}

/* GP_TSIZE of @id's pattern, 4 KiB at a time in a shuffled order, each synced */
static int gp_fragmented(const char *path, unsigned int id)
{
	unsigned int n = GP_TSIZE / 4096, i, order[GP_TSIZE / 4096];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), ok = 1;

	if (fd < 0)
		return -1;
	for (i = 0; i < n; i++)
		order[i] = i;
	srandom(id);
	for (i = n - 1; i > 0; i--) {
		unsigned int j = random() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < n && ok; i++)
		ok = !write_pat(fd, id, (uint64_t)order[i] * 4096, 4096) && !fdatasync(fd);
	close(fd);
	return ok ? 0 : -1;
}

FIXTURE_SETUP(gp)
{
	int p, ret;

	self->nfd = open(node, O_RDWR | O_CLOEXEC);
	self->gfd = open("/dev/p2pgpu", O_RDWR | O_CLOEXEC);
	if (self->nfd < 0 || self->gfd < 0)
		kt_fail("open %s, /dev/p2pgpu: %s", node, strerror(errno));
	self->tid = idbase + 0x60;
	if (mkfile(dir, "gp-plain", self->tid, GP_TSIZE, self->plain) ||
	    gp_holed(gp_path(self->sparse, "gp-sparse"), self->tid + 1, 64 * KIB,
		     false) ||
	    gp_holed(gp_path(self->prealloc, "gp-prealloc"), self->tid + 2,
		     128 * KIB, true) ||
	    gp_fragmented(gp_path(self->frag, "gp-frag"), self->tid + 3))
		kt_fail("the files: %s", strerror(errno));
	for (p = P2PGPU_NVIDIA; p <= P2PGPU_XE; p++) {
		ret = gp_export(self->gfd, p, &self->dfd[p]);
		if (ret)
			kt_fail("%s export of %llu: %s", gp_name[p], GP_SIZE, strerror(ret));
		ret = -p2p_nvme_register(self->nfd, P2PNVME_BUF_F_DMABUF, 0, GP_SIZE,
					 self->dfd[p], &self->id[p]);
		if (ret)
			kt_fail("%s export registered: %s", gp_name[p], strerror(ret));
	}
}

FIXTURE_TEARDOWN(gp)
{
	int p;

	for (p = P2PGPU_NVIDIA; p <= P2PGPU_XE; p++) {
		p2p_nvme_unregister(self->nfd, self->id[p]);
		close(self->dfd[p]);
	}
	unlink(self->plain);
	unlink(self->sparse);
	unlink(self->prealloc);
	unlink(self->frag);
	close(self->gfd);
	close(self->nfd);
}

/*
 * The plain file into each personality's buffer, 1 MiB by the ioctl and
 * 512 KiB by io_uring: the file's bytes, seen by the exporter's CPU
 * (P2PGPU_IOC_READ) and on the host in its BAR's backing file; path
 * dmabuf, nothing for the CPU (zero_len 0, file_zeroed_bytes and
 * file_cpu_bytes unmoved), every read through placeholders
 * (file_placeholder_reads +6). A kernel without placeholders says
 * EOPNOTSUPP.
 */
TEST_F(filecmd_gpu, gp, plain, 7, 120)
{
	struct p2pnvme_file_io io;
	long long d, ph0, ph1;
	uint64_t res2;
	struct cnt c0, c1;
	char why[160];
	int p, ret;

	ph0 = node_num(node, "stats/file_placeholder_reads");
	if (cnt_get(&c0) || ph0 < 0)
		kt_fail("the counters: missing");
	for (p = P2PGPU_NVIDIA; p <= P2PGPU_XE; p++) {
		gp_buf(self->gfd, P2PGPU_IOC_FILL, self->dfd[p], 0, GP_SIZE, 0xee, NULL);
		ret = gp_read(self, p, self->plain, 0, GP_TSIZE, 0, 0, &io);
		d = gp_diff(self, p, 0, GP_TSIZE, self->tid, 0);
		tap(!ret && io.bytes == GP_TSIZE && io.path == P2PNVME_PATH_DMABUF && !io.zero_len &&
		    d == -1,
		    "%s: 1 MiB of a file through the ioctl, path dmabuf, the file's bytes (%s, %llu bytes, path %u, zero_len %u, first wrong %lld)",
		    gp_name[p], err_str(ret), (unsigned long long)io.bytes, io.path, io.zero_len, d);
		gp_host(self, p, 0, GP_TSIZE, self->tid, 0);
		res2 = ~0ULL;
		ret = gp_uring(self, p, self->plain, 256 * KIB, 512 * KIB, MIB, &res2);
		d = gp_diff(self, p, MIB, 512 * KIB, self->tid, 256 * KIB);
		tap(ret == (int)(512 * KIB) && res2 == P2PNVME_URING_RES2(P2PNVME_PATH_DMABUF, 0) &&
		    d == -1,
		    "%s: 512 KiB through io_uring, path dmabuf, zero_len 0, the file's bytes (res %d, res2 %#llx, first wrong %lld)",
		    gp_name[p], ret, (unsigned long long)res2, d);
		gp_host(self, p, MIB, 512 * KIB, self->tid, 256 * KIB);
	}
	ph1 = node_num(node, "stats/file_placeholder_reads");
	if (cnt_get(&c1) || ph1 < 0)
		kt_fail("the counters went away");
	{
		long long want[C_NR] = {
			[C_READS_DMABUF] = 6, [C_BYTES_DMABUF] = 3 * (GP_TSIZE + 512 * KIB),
			[C_DISK_P2P] = 3 * (GP_TSIZE + 512 * KIB),
		};

		tap(cnt_moved(&c0, &c1, want, why, sizeof(why)) && ph1 - ph0 == 6,
		    "counted: file_reads_dmabuf +6 and their bytes, the disk's bytes_p2p by as much, file_zeroed_bytes and file_cpu_bytes unmoved, file_placeholder_reads +6 (%s; file_placeholder_reads %+lld)",
		    why, ph1 - ph0);
	}
}

/*
 * A hole and a preallocated (unwritten) range, which the filesystem reads
 * as zeros with the CPU: without a vmap the read stops there, bytes the
 * data before, zero_len the zeros, the buffer untouched there (0xee: the
 * caller clears it); from offset + bytes + zero_len on, the rest. Through
 * io_uring the same in the CQE's extra word. With REQUIRE_P2P the zeros
 * are taken as well. A kernel that copied the zeros nowhere and said
 * nothing would answer 256 KiB with 0xee in the buffer.
 */
TEST_F(filecmd_gpu, gp, holes, 14, 120)
{
	struct p2pnvme_file_io io;
	uint64_t res2;
	struct cnt c0, c1;
	char why[160];
	long long d1, d2;
	int p, ret, u;

	if (cnt_get(&c0))
		kt_fail("the counters: missing");
	for (p = P2PGPU_NVIDIA; p <= P2PGPU_XE; p++) {
		gp_buf(self->gfd, P2PGPU_IOC_FILL, self->dfd[p], 0, GP_SIZE, 0xee, NULL);
		ret = gp_read(self, p, self->sparse, 0, GP_SPARSE, 0, 0, &io);
		d1 = gp_diff(self, p, 0, 64 * KIB, self->tid + 1, 0);
		u = gp_all(self, p, 64 * KIB, 64 * KIB, 0xee);
		tap(!ret && io.bytes == 64 * KIB && io.zero_len == 64 * KIB &&
		    io.path == P2PNVME_PATH_DMABUF && d1 == -1 && u == 1,
		    "%s: a sparse file: 64 KiB, then zero_len 64 KiB (the hole) for the caller, the buffer untouched there (%s, %llu bytes, zero_len %u, path %u, first wrong %lld, untouched %d)",
		    gp_name[p], err_str(ret), (unsigned long long)io.bytes, io.zero_len, io.path, d1,
		    u);
		ret = gp_read(self, p, self->sparse, 128 * KIB, 128 * KIB, 128 * KIB, 0, &io);
		d2 = gp_diff(self, p, 128 * KIB, 128 * KIB, self->tid + 1, 128 * KIB);
		tap(!ret && io.bytes == 128 * KIB && !io.zero_len && d2 == -1,
		    "%s: ... going on past the zeros: the rest, 128 KiB (%s, %llu bytes, zero_len %u, first wrong %lld)",
		    gp_name[p], err_str(ret), (unsigned long long)io.bytes, io.zero_len, d2);
		gp_host(self, p, 128 * KIB, 128 * KIB, self->tid + 1, 128 * KIB);
		ret = gp_read(self, p, self->prealloc, 0, GP_SPARSE, 0, 0, &io);
		d1 = gp_diff(self, p, 0, 64 * KIB, self->tid + 2, 0);
		tap(!ret && io.bytes == 64 * KIB && io.zero_len == 128 * KIB && d1 == -1,
		    "%s: a preallocated (unwritten) range: 64 KiB, then zero_len 128 KiB (%s, %llu bytes, zero_len %u, first wrong %lld)",
		    gp_name[p], err_str(ret), (unsigned long long)io.bytes, io.zero_len, d1);
		res2 = ~0ULL;
		ret = gp_uring(self, p, self->sparse, 0, GP_SPARSE, 0, &res2);
		tap(ret == (int)(64 * KIB) && (res2 & 0xffff) == P2PNVME_PATH_DMABUF &&
		    P2PNVME_URING_RES2_GET_ZERO_LEN(res2) == 64 * KIB,
		    "%s: the sparse file through io_uring: res 64 KiB, zero_len 64 KiB in the extra word (res %d, res2 %#llx)",
		    gp_name[p], ret, (unsigned long long)res2);
	}
	ret = gp_read(self, P2PGPU_NVIDIA, self->sparse, 0, GP_SPARSE, 0,
		      P2PNVME_FILE_F_REQUIRE_P2P, &io);
	tap(!ret && io.bytes == 64 * KIB && io.zero_len == 64 * KIB,
	    "REQUIRE_P2P: the hole's zeros are taken, zero_len 64 KiB (%s, %llu bytes, zero_len %u)",
	    err_str(ret), (unsigned long long)io.bytes, io.zero_len);
	if (cnt_get(&c1))
		kt_fail("the counters went away");
	{
		/* per personality: 64+128 (sparse), 64 (prealloc), 64 (uring); and 64 */
		long long b = 3 * (64 + 128 + 64 + 64) * KIB + 64 * KIB;
		long long want[C_NR] = {
			[C_READS_DMABUF] = 13, [C_BYTES_DMABUF] = b, [C_DISK_P2P] = -1,
			[C_ZEROED] = 3 * (64 + 128 + 64) * KIB + 64 * KIB,
		};

		/* the disk read the holes' neighbours too: not asserted */
		want[C_DISK_P2P] = c1.v[C_DISK_P2P] - c0.v[C_DISK_P2P];
		tap(cnt_moved(&c0, &c1, want, why, sizeof(why)) &&
		    want[C_DISK_P2P] >= b,
		    "counted: file_reads_dmabuf +13, their bytes, file_zeroed_bytes by the zeros answered, file_cpu_bytes unmoved, the disk's bytes_p2p at least the bytes (%s)",
		    why);
	}
}

/* The fragmented file, whole, into each: its bytes, here and on the host. */
TEST_F(filecmd_gpu, gp, fragmented, 3, 120)
{
	struct p2pnvme_file_io io;
	long long d;
	int p, ret;

	for (p = P2PGPU_NVIDIA; p <= P2PGPU_XE; p++) {
		gp_buf(self->gfd, P2PGPU_IOC_FILL, self->dfd[p], 0, GP_SIZE, 0xee, NULL);
		ret = gp_read(self, p, self->frag, 0, GP_TSIZE, 4096, 0, &io);
		d = gp_diff(self, p, 4096, GP_TSIZE, self->tid + 3, 0);
		tap(!ret && io.bytes == GP_TSIZE && !io.zero_len && d == -1,
		    "%s: a fragmented file (written 4 KiB at a time, shuffled), 1 MiB at buffer offset 4 KiB: its bytes (%s, %llu bytes, first wrong %lld)",
		    gp_name[p], err_str(ret), (unsigned long long)io.bytes, d);
		gp_host(self, p, 4096, GP_TSIZE, self->tid + 3, 0);
	}
}

/* Writes from GPU memory: EOPNOTSUPP, the file unchanged. */
TEST_F(filecmd_gpu, gp, write_refused, 3, 60)
{
	unsigned char *back = malloc(GP_TSIZE);
	struct p2pnvme_file_io io;
	int fd, p, ret;
	long long d;

	fd = open(self->plain, O_RDWR | O_CLOEXEC);
	if (fd < 0 || !back)
		kt_fail("setup: %s", strerror(errno));
	for (p = P2PGPU_NVIDIA; p <= P2PGPU_XE; p++) {
		gp_buf(self->gfd, P2PGPU_IOC_FILL, self->dfd[p], 0, GP_SIZE, 0x77, NULL);
		io = fio(P2PNVME_OP_WRITE, fd, 0, 64 * KIB, 0, P2PNVME_FILE_F_REGISTERED,
			 self->id[p]);
		ret = submit1(self->nfd, &io);
		d = pread(fd, back, GP_TSIZE, 0) == (ssize_t)GP_TSIZE ?
		    pat_diff(back, self->tid, 0, GP_TSIZE) : -2;
		tap(ret == EOPNOTSUPP && d == -1,
		    "%s: a write from it: EOPNOTSUPP, the file unchanged (%s, first wrong %lld)",
		    gp_name[p], err_str(ret), d);
	}
	free(back);
	close(fd);
}

/*
 * amdgpu's and xe's buffers evicted to host memory and moved back again and
 * again (a child, P2PGPU_IOC_EVICT) while reads of the plain file go on:
 * each read moves the file's bytes or fails cleanly (EAGAIN after its
 * buffer moved under each of its issues); the buffer moved, and the
 * bytes of every read that succeeded were checked right after it, in
 * whichever placement it had.
 */
TEST_F(filecmd_gpu, gp, evictions, 4, 180)
{
	int p;

	for (p = P2PGPU_AMDGPU; p <= P2PGPU_XE; p++) {
		struct p2pgpu_buf b0, b1;
		long long ok = 0, again = 0, bad = 0, t0;
		int ret = 0, fails = 0;
		struct p2pnvme_file_io io;
		pid_t child;

		gp_buf(self->gfd, P2PGPU_IOC_WHERE, self->dfd[p], 0, 0, 0, &b0);
		child = fork();
		if (child == 0) {
			long long t = now_ms();

			while (now_ms() - t < 2000) {
				gp_buf(self->gfd, P2PGPU_IOC_EVICT, self->dfd[p], 0, 0, 0, NULL);
				usleep(20000);
			}
			_exit(0);
		}
		t0 = now_ms();
		while (now_ms() - t0 < 2200) {
			uint64_t off = ((ok + again + bad) % 4) * 256 * KIB;

			ret = gp_read(self, p, self->plain, off, 256 * KIB, off, 0, &io);
			if (ret == EAGAIN) {
				again++;
			} else if (!ret && io.bytes == 256 * KIB &&
				   gp_diff(self, p, off, 256 * KIB, self->tid, off) == -1) {
				ok++;
			} else {
				bad++;
				if (!fails++)
					printf("    # %s: a read at %llu: %s, %llu bytes\n", gp_name[p],
					       (unsigned long long)off, err_str(ret),
					       (unsigned long long)io.bytes);
			}
		}
		waitpid(child, NULL, 0);
		gp_buf(self->gfd, P2PGPU_IOC_WHERE, self->dfd[p], 0, 0, 0, &b1);
		tap(!bad && ok > 0,
		    "%s: reads during evictions: each the file's bytes (%lld) or EAGAIN (%lld), none other (%lld)",
		    gp_name[p], ok, again, bad);
		tap(b1.moves > b0.moves,
		    "%s: the buffer moved meanwhile (%u moves before, %u after)", gp_name[p],
		    b0.moves, b1.moves);
	}
}

/*
 * A p2pbar dma-buf through placeholders (the bench's file_placeholder_force):
 * p2pbar has a vmap (6.2+), so the CPU's zeros of a hole and an unwritten
 * range go into the BAR through it: the whole read answered, zero_len 0,
 * the zeros in the BAR where the buffer held 0xee, checked on the host in
 * the BAR's backing file; file_zeroed_bytes by the zeros. The same plain
 * read through p2pbar's real pages (force off) into another dma-buf gives
 * the same bytes. Before 6.2 p2pbar has no vmap: the zeros are answered.
 */
FIXTURE(gf) {
	int nfd;
	unsigned int tid;
	char sparse[512], prealloc[512];
	struct dbuf a, b;
};

FIXTURE_SETUP(gf)
{
	int ret;

	self->nfd = open(node, O_RDWR | O_CLOEXEC);
	if (self->nfd < 0)
		kt_fail("open %s: %s", node, strerror(errno));
	self->tid = idbase + 0x68;
	if (gp_holed(gp_path(self->sparse, "gf-sparse"), self->tid, 64 * KIB,
		     false) ||
	    gp_holed(gp_path(self->prealloc, "gf-prealloc"), self->tid + 1,
		     128 * KIB, true))
		kt_fail("the files: %s", strerror(errno));
	ret = dbuf_get(bar_path, self->nfd, GP_SPARSE, &self->a);
	if (!ret)
		ret = dbuf_get(bar_path, self->nfd, GP_SPARSE, &self->b);
	if (ret)
		kt_fail("registered p2pbar dma-bufs: %s", strerror(ret));
	if (p2p_sysfs_write(GP_PARAM, "1"))
		kt_fail("%s: %s", GP_PARAM, strerror(errno));
}

FIXTURE_TEARDOWN(gf)
{
	p2p_sysfs_write(GP_PARAM, "0");
	dbuf_put(self->nfd, &self->a);
	dbuf_put(self->nfd, &self->b);
	unlink(self->sparse);
	unlink(self->prealloc);
	close(self->nfd);
}

static bool have_vmap(void)
{
	struct utsname u;
	int ma = 0, mi = 0;

	return !uname(&u) && sscanf(u.release, "%d.%d", &ma, &mi) == 2 &&
	       (ma > 6 || (ma == 6 && mi >= 2));
}

TEST_F(filecmd_gpu, gf, forced_p2pbar, 5, 120)
{
	bool vmap = have_vmap();
	struct p2pnvme_file_io io;
	struct cnt c0, c1;
	long long d1, d2;
	int fd, ret, z;

	if (cnt_get(&c0))
		kt_fail("the counters: missing");
	fd = open(self->sparse, O_RDONLY | O_CLOEXEC);
	memset(self->a.p, 0xee, GP_SPARSE);
	io = fio(P2PNVME_OP_READ, fd, 0, GP_SPARSE, 0, P2PNVME_FILE_F_REGISTERED, self->a.id);
	ret = submit1(self->nfd, &io);
	d1 = pat_diff(self->a.p, self->tid, 0, 64 * KIB);
	z = all_are(self->a.p + 64 * KIB, 64 * KIB, vmap ? 0 : 0xee);
	d2 = pat_diff(self->a.p + 128 * KIB, self->tid, 128 * KIB, 128 * KIB);
	if (vmap)
		tap(!ret && io.bytes == GP_SPARSE && !io.zero_len &&
		    io.path == P2PNVME_PATH_DMABUF && d1 == -1 && z && d2 == -1,
		    "a sparse file into a p2pbar dma-buf through placeholders: 256 KiB, the hole's zeros written through p2pbar's vmap (%s, %llu bytes, zero_len %u, path %u, first wrong %lld/%lld, zeros %d)",
		    err_str(ret), (unsigned long long)io.bytes, io.zero_len, io.path, d1, d2, z);
	else
		tap(!ret && io.bytes == 64 * KIB && io.zero_len == 64 * KIB && d1 == -1 && z,
		    "a sparse file into a p2pbar dma-buf through placeholders, no vmap before 6.2: 64 KiB, zero_len 64 KiB, the buffer untouched there (%s, %llu bytes, zero_len %u, first wrong %lld, untouched %d)",
		    err_str(ret), (unsigned long long)io.bytes, io.zero_len, d1, z);
	hostcheck("pattern %llu %s@%llu %#x 0", 64 * KIB, bar_name,
		  (unsigned long long)self->a.bar_offset, self->tid);
	if (vmap) {
		hostcheck("fill %llu %s@%llu 0", 64 * KIB, bar_name,
			  (unsigned long long)self->a.bar_offset + 64 * KIB);
		hostcheck("pattern %llu %s@%llu %#x %llu", 128 * KIB, bar_name,
			  (unsigned long long)self->a.bar_offset + 128 * KIB, self->tid, 128 * KIB);
	}
	close(fd);
	fd = open(self->prealloc, O_RDONLY | O_CLOEXEC);
	memset(self->a.p, 0xee, GP_SPARSE);
	io = fio(P2PNVME_OP_READ, fd, 0, GP_SPARSE, 0, P2PNVME_FILE_F_REGISTERED, self->a.id);
	ret = submit1(self->nfd, &io);
	z = all_are(self->a.p + 64 * KIB, 128 * KIB, vmap ? 0 : 0xee);
	d2 = pat_diff(self->a.p + 192 * KIB, self->tid + 1, 192 * KIB, 64 * KIB);
	tap(!ret && z && (vmap ? io.bytes == GP_SPARSE && d2 == -1 : io.zero_len == 128 * KIB),
	    "a preallocated range into it: %s (%s, %llu bytes, zero_len %u, zeros %d, first wrong %lld)",
	    vmap ? "zeros through the vmap, then the data" : "zero_len 128 KiB",
	    err_str(ret), (unsigned long long)io.bytes, io.zero_len, z, d2);
	/* the same bytes through p2pbar's own pages */
	p2p_sysfs_write(GP_PARAM, "0");
	memset(self->b.p, 0x11, GP_SPARSE);
	io = fio(P2PNVME_OP_READ, fd, 0, GP_SPARSE, 0, P2PNVME_FILE_F_REGISTERED, self->b.id);
	ret = submit1(self->nfd, &io);
	tap(!ret && io.bytes == GP_SPARSE && (!vmap || !memcmp(self->a.p, self->b.p, GP_SPARSE)),
	    "the same read through p2pbar's own pages: the same bytes (%s, %llu bytes)",
	    err_str(ret), (unsigned long long)io.bytes);
	close(fd);
	if (cnt_get(&c1))
		kt_fail("the counters went away");
	tap(c1.v[C_ZEROED] - c0.v[C_ZEROED] == 192 * (long long)KIB &&
	    c1.v[C_CPU] == c0.v[C_CPU],
	    "counted: file_zeroed_bytes by the zeros (64 + 128 KiB: %lld), file_cpu_bytes unmoved (%lld)",
	    c1.v[C_ZEROED] - c0.v[C_ZEROED], c1.v[C_CPU] - c0.v[C_CPU]);
	tap(c1.v[C_READS_DMABUF] - c0.v[C_READS_DMABUF] == 3,
	    "counted: file_reads_dmabuf +3 (%lld)", c1.v[C_READS_DMABUF] - c0.v[C_READS_DMABUF]);
}

/*
 * p2pgpu unbound while reads through placeholders go on (the last test of
 * the suite: it binds p2pgpu again). nvidia's exporter never revokes, so
 * p2pnvme revokes its registration at the unbind (waiting, bounded, for
 * the disk's requests on its bus addresses): every read after it ENODEV.
 * amdgpu's buffer, exported to be evicted at the unbind, is moved to host
 * memory (the invalidation waits for the disk's requests likewise): its
 * reads go on there. The unbind ends in bounded time; none of the reads
 * fails otherwise. Only the registrations hold the buffers (NVIDIA's remove
 * waits for every dma-buf of the GPU).
 */
struct gr_stream {
	int unbound, stop;
	int ok_before, ok_after, enodev_after, other, other_err;
	uint32_t path_after;
};

FIXTURE(gr) {
	int nfd;
	unsigned int tid;
	char plain[512];
};

FIXTURE_SETUP(gr)
{
	self->nfd = open(node, O_RDWR | O_CLOEXEC);
	if (self->nfd < 0)
		kt_fail("open %s: %s", node, strerror(errno));
	self->tid = idbase + 0x70;
	if (mkfile(dir, "gr-plain", self->tid, GP_TSIZE, self->plain))
		kt_fail("the file: %s", strerror(errno));
}

FIXTURE_TEARDOWN(gr)
{
	unlink(self->plain);
	close(self->nfd);
}

static pid_t gr_reader(struct _kt_fixture_gr *self, struct gr_stream *us, uint32_t id)
{
	pid_t pid = fork();
	int fd;

	if (pid)
		return pid;
	fd = open(self->plain, O_RDONLY | O_CLOEXEC);
	while (!__atomic_load_n(&us->stop, __ATOMIC_ACQUIRE)) {
		int after = __atomic_load_n(&us->unbound, __ATOMIC_ACQUIRE);
		struct p2pnvme_file_io io = fio(P2PNVME_OP_READ, fd, 0, 256 * KIB, 0,
						P2PNVME_FILE_F_REGISTERED, id);
		int ret = submit1(self->nfd, &io);

		if (!ret && io.bytes == 256 * KIB) {
			if (after) {
				us->ok_after++;
				us->path_after = io.path;
			} else {
				us->ok_before++;
			}
		} else if (ret == ENODEV && after) {
			us->enodev_after++;
		} else if (ret != ENODEV && ret != EAGAIN) {
			/* ENODEV or EAGAIN racing the unbind itself: not counted */
			us->other++;
			us->other_err = ret;
		}
		usleep(1000);
	}
	_exit(0);
}

static void gr_wait(struct gr_stream *us, bool after, int n)
{
	long long t0 = now_ms();

	while (now_ms() - t0 < 20000 &&
	       (after ? us->ok_after + us->enodev_after : us->ok_before) < n)
		usleep(10000);
}

TEST_F(filecmd_gpu, gr, unbind_midstream, 4, 180)
{
	struct gr_stream *us = mmap(NULL, 2 * sizeof(*us), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct p2pgpu_export en = { .personality = P2PGPU_NVIDIA, .size = GP_SIZE };
	struct p2pgpu_export ea = { .personality = P2PGPU_AMDGPU, .size = GP_SIZE,
				    .flags = P2PGPU_EXPORT_F_EVICT_AT_UNBIND };
	uint32_t idn = 0, ida = 0;
	pid_t pn, pa;
	double t;
	int gfd, ret, st;

	gfd = open("/dev/p2pgpu", O_RDWR | O_CLOEXEC);
	if (us == MAP_FAILED || gfd < 0 || ioctl(gfd, P2PGPU_IOC_EXPORT, &en) ||
	    ioctl(gfd, P2PGPU_IOC_EXPORT, &ea) ||
	    p2p_nvme_register(self->nfd, P2PNVME_BUF_F_DMABUF, 0, GP_SIZE, en.fd, &idn) ||
	    p2p_nvme_register(self->nfd, P2PNVME_BUF_F_DMABUF, 0, GP_SIZE, ea.fd, &ida))
		kt_fail("set up: %s", strerror(errno));
	/* only the registrations hold them from here */
	close(en.fd);
	close(ea.fd);
	close(gfd);
	memset(us, 0, 2 * sizeof(*us));
	pn = gr_reader(self, &us[0], idn);
	pa = gr_reader(self, &us[1], ida);
	gr_wait(&us[0], false, 8);
	gr_wait(&us[1], false, 8);
	t = now_ms();
	ret = -p2p_sysfs_write("/sys/bus/pci/drivers/p2pgpu/unbind", gpu_bdf);
	t = (now_ms() - t) / 1000.0;
	__atomic_store_n(&us[0].unbound, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&us[1].unbound, 1, __ATOMIC_RELEASE);
	tap(!ret && t < 20,
	    "p2pgpu's %s unbinds with reads through placeholders in flight, in %.1f s (%s; %d + %d reads before)",
	    gpu_bdf, t, err_str(ret), us[0].ok_before, us[1].ok_before);
	gr_wait(&us[0], true, 8);
	gr_wait(&us[1], true, 8);
	__atomic_store_n(&us[0].stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&us[1].stop, 1, __ATOMIC_RELEASE);
	waitpid(pn, &st, 0);
	waitpid(pa, &st, 0);
	tap(us[0].ok_before >= 8 && us[0].enodev_after >= 8 && !us[0].ok_after && !us[0].other,
	    "nvidia: p2pnvme revoked its registration: %d reads after the unbind, all ENODEV (%d moved after, %d other: %s)",
	    us[0].enodev_after, us[0].ok_after, us[0].other, err_str(us[0].other_err));
	tap(us[1].ok_before >= 8 && us[1].ok_after >= 8 && !us[1].enodev_after && !us[1].other &&
	    us[1].path_after == P2PNVME_PATH_DMABUF_HOST,
	    "amdgpu (evicted at the unbind): %d reads after it went on in host memory (path %u; %d ENODEV, %d other: %s)",
	    us[1].ok_after, us[1].path_after, us[1].enodev_after, us[1].other,
	    err_str(us[1].other_err));
	p2p_nvme_unregister(self->nfd, idn);
	p2p_nvme_unregister(self->nfd, ida);
	ret = 0;
	for (st = 0; st < 50; st++) {
		ret = -p2p_sysfs_write("/sys/bus/pci/drivers/p2pgpu/bind", gpu_bdf);
		if (!ret)
			break;
		usleep(100000);
	}
	tap(!ret, "p2pgpu binds %s again once its buffers are released (%s)", gpu_bdf,
	    err_str(ret));
	munmap(us, 2 * sizeof(*us));
}

int main(int argc, char **argv)
{
	const char *ms = getenv("P2P_FILES_RACE_MS");
	int unbind = argc > 2 && !strcmp(argv[1], "--bar-unbind");
	int fallback = argc > 1 && !strcmp(argv[1], "--fallback");
	int crypt = argc > 1 && !strcmp(argv[1], "--crypt");
	int verity = argc > 1 && !strcmp(argv[1], "--verity");
	int reload = argc > 3 && !strcmp(argv[1], "--bar-reload");
	int gpu = argc > 3 && !strcmp(argv[1], "--gpu");

	if (gpu) {
		gpu_bar = argv[2];
		gpu_bdf = argv[3];
		argc -= 3;
		argv += 3;
	} else if (unbind || reload) {
		bar_bdf = argv[2];
		bar_ko = reload ? argv[3] : NULL;
		argc -= 2 + reload;
		argv += 2 + reload;
	} else if (fallback || crypt || verity) {
		argc--;
		argv++;
	}
	if (argc != 9) {
		fprintf(stderr,
			"usage: %s [--bar-unbind BDF | --bar-reload BDF MODULE | --fallback | --crypt | --verity | --gpu GPU_BAR GPU_BDF] SUITE DIR /dev/p2pnvmeN /dev/p2pbarN BAR_NAME IMG_NAME ID_BASE OTHER\n",
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
	/* --bar-unbind: p2pbar unbound mid-stream, alone (it leaves p2pbar unbound) */
	if (unbind)
		return kt_run_as("filecmd_bar_unbind", argv[1]);
	/* --bar-reload: p2pbar unloaded and loaded again, alone */
	if (reload)
		return kt_run_as("filecmd_bar_reload", argv[1]);
	/* --gpu: reads into the bench's GPU personalities through placeholders */
	if (gpu)
		return kt_run_as("filecmd_gpu", argv[1]);
	/* --crypt: an encrypted file, on ext4 mounted inlinecrypt */
	if (crypt)
		return kt_run_as("filecmd_crypt", argv[1]);
	/* --verity: verity files, on ext4 made with -O verity */
	if (verity)
		return kt_run_as("filecmd_verity", argv[1]);
	/* --fallback: the page cache after the check, on ext4 mounted nodelalloc */
	return kt_run_as(fallback ? "filecmd_fallback" : "filecmd", argv[1]);
}
