// SPDX-License-Identifier: GPL-2.0
/*
 * p2pgpu-test: p2pnvme's dma-buf imports against GPU-like exporters (the
 * bench's tools/testing/p2pgpu module: nvidia, amdgpu and xe
 * personalities), KTAP on stdout, bytes checked by the host (fd 7, see
 * ktap.h) in the BAR's backing file and the namespace image.
 *
 *   p2pgpu-test /dev/p2pgpu /dev/p2pnvmeN BAR
 *	BAR: the host's name of the exporter's ivshmem backing file (bar1)
 *
 * For each personality: a per-I/O read into the dma-buf and a write from
 * it, a registered read; for amdgpu and xe an eviction (the bytes follow
 * the buffer), transfers while it lives in host memory (VRAM full), the
 * move back at the next map, reads kept going while it is evicted; for all
 * a static importer besides p2pnvme (the amdgpu static-attach trap: the
 * buffer is pinned in host memory). Where the bytes land is checked from
 * the host: in the BAR at the offset the exporter says, or, for host
 * placement, nowhere in the BAR.
 *
 * Correct behaviour is asserted (issue 25): a registered dma-buf that
 * moved is mapped again, not revoked; a transfer into host memory does not
 * report the path a P2P transfer reports (p2pnvme before the issue's
 * phase 2 failed both).
 *
 * Namespace: the bench's 64 MiB image of 512-byte LBAs, each sector headed
 * "<seed> LBA <lba>"; each personality reads its own 8 MiB from LBA
 * 16384 * personality and writes 64 KiB at LBA 110000 + 256 * personality.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

#include <linux/p2pnvme.h>

#include "ktap.h"
#include "../testing/p2pgpu/p2pgpu_uapi.h"

#define KIB		1024ULL
#define MIB		(1ULL << 20)
#define LBA		512ULL
#define BUF		(1 * MIB)	/* each export */
#define QLEN		(256 * KIB)	/* a read */

static const char *names[] = { "", "nvidia", "amdgpu", "xe" };
static int gpu, nvme;
static const char *bar;
static uint32_t p2p_path;	/* what p2pnvme reports for a read into the BAR */

static void *xalloc(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len))
		exit(2);
	memset(p, 0, len);
	return p;
}

/* ---- the exporter ---- */

static int export(uint32_t personality, uint32_t flags, uint64_t size, uint64_t *bar_off)
{
	struct p2pgpu_export e = { .personality = personality, .flags = flags, .size = size };

	if (ioctl(gpu, P2PGPU_IOC_EXPORT, &e))
		return -errno;
	if (bar_off)
		*bar_off = e.bar_off;
	return e.fd;
}

static int buf_op(unsigned long cmd, int fd, struct p2pgpu_buf *b)
{
	b->fd = fd;
	return ioctl(gpu, cmd, b) ? -errno : 0;
}

static struct p2pgpu_buf where(int fd)
{
	struct p2pgpu_buf b = { 0 };

	buf_op(P2PGPU_IOC_WHERE, fd, &b);
	return b;
}

static const char *place(const struct p2pgpu_buf *b)
{
	static char s[64];

	if (b->where == P2PGPU_WHERE_HOST)
		return "host";
	snprintf(s, sizeof(s), "BAR+%#llx", (unsigned long long)b->bar_off);
	return s;
}

/* The CPU's view of the buffer's bytes (after a move's copy). */
static int cpu_read(int fd, uint64_t off, void *dst, uint64_t len)
{
	struct p2pgpu_buf b = { .off = off, .len = len, .arg = (uintptr_t)dst };

	return buf_op(P2PGPU_IOC_READ, fd, &b);
}

/* Every byte of the export free at that moment: the largest export that fits. */
static int hog(uint64_t *size)
{
	uint64_t s;
	int fd;

	for (s = 64 * MIB; s >= BUF; s -= BUF) {
		fd = export(P2PGPU_AMDGPU, 0, s, NULL);
		if (fd >= 0) {
			*size = s;
			return fd;
		}
	}
	return -ENOSPC;
}

/* ---- p2pnvme ---- */

static int xfer(struct p2pnvme_io *io)
{
	return ioctl(nvme, P2PNVME_IOC_IO, io) ? -errno : 0;
}

static int host_read(uint64_t slba, uint64_t len, void *buf)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .slba = slba,
				 .len = len, .addr = (uintptr_t)buf };

	return xfer(&io);
}

static int dmabuf_io(uint32_t op, int fd, uint64_t off, uint64_t slba, uint64_t len,
		     uint32_t *path)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = op, .slba = slba, .len = len,
				 .addr = off, .flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = fd };
	int ret = xfer(&io);

	if (path)
		*path = ret ? 0 : io.path;
	return ret;
}

static int reg_dmabuf(int fd, uint64_t len, uint32_t *id)
{
	struct p2pnvme_buf_reg r = { .argsz = sizeof(r), .flags = P2PNVME_BUF_F_DMABUF,
				     .len = len, .dmabuf_fd = fd };

	if (ioctl(nvme, P2PNVME_IOC_BUF_REGISTER, &r))
		return -errno;
	*id = r.id;
	return 0;
}

static int unreg(uint32_t id)
{
	struct p2pnvme_buf_unreg u = { .argsz = sizeof(u), .id = id };

	return ioctl(nvme, P2PNVME_IOC_BUF_UNREGISTER, &u) ? -errno : 0;
}

static int reg_read(uint32_t id, uint64_t off, uint64_t slba, uint64_t len, uint32_t *path)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .slba = slba,
				 .len = len, .addr = off, .buf_id = id,
				 .flags = P2PNVME_IO_F_REGISTERED };
	int ret = xfer(&io);

	if (path)
		*path = ret ? 0 : io.path;
	return ret;
}

/* ---- checks ---- */

/*
 * The image's @len bytes at @slba are in the buffer at @off: the CPU's view
 * (the exporter's read) is compared here, the host compares the BAR's
 * backing file, or, with the buffer in host memory, finds them nowhere in
 * the BAR. @what names the transfer.
 */
static void landed(int fd, uint64_t off, uint64_t slba, uint64_t len, const char *what)
{
	unsigned char *want = xalloc(len), *got = xalloc(len);
	struct p2pgpu_buf b = where(fd);

	if (host_read(slba, len, want))
		tap(0, "%s: reference read of LBA %llu", what, (unsigned long long)slba);
	tap(!cpu_read(fd, off, got, len) && !memcmp(want, got, len),
	    "%s: the buffer (in %s) holds the image's bytes", what, place(&b));
	if (b.where == P2PGPU_WHERE_BAR)
		hostcheck("equal %llu %s@%llu nvme0@%llu", (unsigned long long)len, bar,
			  (unsigned long long)(b.bar_off + off), (unsigned long long)(slba * LBA));
	else
		hostcheck("absent %llu nvme0@%llu %s", (unsigned long long)len,
			  (unsigned long long)(slba * LBA), bar);
	free(want);
	free(got);
}

/*
 * What p2pnvme reports must tell host memory from the BAR: a transfer into
 * a buffer in host memory may not report the path a transfer into the BAR
 * reported (P2PNVME_PATH_DMABUF_HOST and P2PNVME_PATH_DMABUF).
 */
static void path_says(int fd, uint32_t path, const char *what)
{
	struct p2pgpu_buf b = where(fd);

	if (b.where == P2PGPU_WHERE_BAR) {
		tap(path == p2p_path, "%s: path %u, the one a read into the BAR reports", what,
		    path);
	} else {
		tap(path != p2p_path,
		    "%s: path %u says host memory, not the BAR's path %u",
		    what, path, p2p_path);
	}
}

static void diag_where(int fd, const char *what)
{
	struct p2pgpu_buf b = where(fd);

	printf("    # %s: in %s, %u pins, %u moves, %u importers\n", what, place(&b), b.pins,
	       b.moves, b.attachments);
}

/* ---- one personality ---- */

/* per-I/O read, write from the buffer, registered read: into "VRAM" */
static uint32_t basics(uint32_t p, int fd, uint64_t base)
{
	char what[96];
	uint32_t path, id = 0;
	struct p2pgpu_buf b = { .off = 512 * KIB, .len = 64 * KIB, .arg = 0x50 + p };
	uint64_t w = 110000 + 256 * p;
	int ret;

	snprintf(what, sizeof(what), "%s: per-I/O read", names[p]);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base, QLEN, &path);
	tap(!ret, "%s of 256 KiB into the dma-buf (%s)", what, strerror(-ret));
	if (!p2p_path && !ret && where(fd).where == P2PGPU_WHERE_BAR)
		p2p_path = path;
	if (!ret) {
		landed(fd, 0, base, QLEN, what);
		path_says(fd, path, what);
	}

	ret = buf_op(P2PGPU_IOC_FILL, fd, &b);
	ret = ret ?: dmabuf_io(P2PNVME_OP_WRITE, fd, 512 * KIB, w, 64 * KIB, NULL);
	tap(!ret, "%s: per-I/O write of 64 KiB from the dma-buf (%s)", names[p], strerror(-ret));
	hostcheck("fill 65536 nvme0@%llu %#x", (unsigned long long)(w * LBA), 0x50 + p);

	ret = reg_dmabuf(fd, BUF, &id);
	tap(!ret, "%s: the dma-buf registers (%s)", names[p], strerror(-ret));
	if (ret)
		return ~0U;
	snprintf(what, sizeof(what), "%s: registered read", names[p]);
	ret = reg_read(id, QLEN, base + 512, QLEN, &path);
	tap(!ret, "%s of 256 KiB (%s)", what, strerror(-ret));
	if (!ret) {
		landed(fd, QLEN, base + 512, QLEN, what);
		path_says(fd, path, what);
	}
	return id;
}

/* An eviction, transfers with "VRAM" full, the move back (amdgpu, xe). */
static void evictions(uint32_t p, int fd, uint32_t id, uint64_t base)
{
	char what[96];
	struct p2pgpu_buf b = { 0 };
	unsigned char *got = xalloc(QLEN), *want = xalloc(QLEN);
	uint64_t hsize = 0;
	uint32_t path;
	int ret, h;

	ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);
	tap(!ret && b.where == P2PGPU_WHERE_HOST, "%s: evicted to host memory (%s, now in %s)",
	    names[p], strerror(-ret), place(&b));
	/* the copy is behind a KERNEL fence: the CPU's read waits for it */
	tap(!cpu_read(fd, QLEN, got, QLEN) && !host_read(base + 512, QLEN, want) &&
	    !memcmp(got, want, QLEN), "%s: the registered read's bytes moved with the buffer",
	    names[p]);

	/* VRAM full: the next maps find no room, the buffer stays in host memory */
	h = hog(&hsize);
	tap(h >= 0, "%s: the rest of the BAR taken by another export (%llu MiB)", names[p],
	    (unsigned long long)(hsize >> 20));

	snprintf(what, sizeof(what), "%s: registered read after the move", names[p]);
	ret = reg_read(id, QLEN, base + 1024, QLEN, &path);
	tap(!ret, "%s succeeds: a move is not a revoke (%s)", what, strerror(-ret));
	if (!ret) {
		landed(fd, QLEN, base + 1024, QLEN, what);
		path_says(fd, path, what);
	}
	snprintf(what, sizeof(what), "%s: per-I/O read, VRAM full", names[p]);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base + 1536, QLEN, &path);
	tap(!ret, "%s (%s)", what, strerror(-ret));
	b = where(fd);
	tap(b.where == P2PGPU_WHERE_HOST, "%s: the buffer stayed in host memory (GTT fallback)",
	    what);
	if (!ret) {
		landed(fd, 0, base + 1536, QLEN, what);
		path_says(fd, path, what);
	}
	if (h >= 0)
		close(h);

	/* room again: a peer2peer map validates it back into VRAM */
	snprintf(what, sizeof(what), "%s: per-I/O read, VRAM free", names[p]);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base + 2048, QLEN, &path);
	tap(!ret, "%s (%s)", what, strerror(-ret));
	b = where(fd);
	tap(b.where == P2PGPU_WHERE_BAR, "%s: the map moved the buffer back into the BAR (%s)",
	    what, place(&b));
	if (!ret) {
		landed(fd, 0, base + 2048, QLEN, what);
		path_says(fd, path, what);
	}
	snprintf(what, sizeof(what), "%s: registered read after the move back", names[p]);
	ret = reg_read(id, QLEN, base + 2560, QLEN, &path);
	tap(!ret, "%s succeeds (%s)", what, strerror(-ret));
	if (!ret) {
		landed(fd, QLEN, base + 2560, QLEN, what);
		path_says(fd, path, what);
	}
	free(got);
	free(want);
}

/*
 * Reads keep going (a child process) while the buffer is evicted three
 * times, each eviction after a few reads and followed by more: every read
 * succeeds (re-mapped after the move), and each 64 KiB chunk of the buffer
 * ends up with the image's bytes meant for it.
 */
struct progress {
	int stop, reads, fails;
};

/* wait until the child did @n more reads than @from (at most 20 s) */
static int reads_past(struct progress *pr, int from, int n)
{
	int i;

	for (i = 0; i < 20000 && __atomic_load_n(&pr->reads, __ATOMIC_ACQUIRE) < from + n; i++)
		usleep(1000);
	return __atomic_load_n(&pr->reads, __ATOMIC_ACQUIRE);
}

static void stream(uint32_t p, int fd, int registered, uint64_t base)
{
	const uint64_t chunk = 64 * KIB, nchunk = BUF / chunk;
	const char *kind = registered ? "registered" : "per-I/O";
	unsigned char *got = xalloc(BUF), *want = xalloc(BUF);
	int status = 0, evicted = 0, i, ret, seen = 0, reads;
	struct progress *pr;
	uint32_t id = 0;
	pid_t pid;

	pr = mmap(NULL, sizeof(*pr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (pr == MAP_FAILED || (registered && reg_dmabuf(fd, BUF, &id))) {
		tap(0, "%s: %s stream: set up", names[p], kind);
		goto out;
	}
	memset(pr, 0, sizeof(*pr));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int r;

		for (r = 0; !__atomic_load_n(&pr->stop, __ATOMIC_ACQUIRE); r++) {
			uint64_t k = r % nchunk;
			int e = registered ?
				reg_read(id, k * chunk, base + k * (chunk / LBA), chunk, NULL) :
				dmabuf_io(P2PNVME_OP_READ, fd, k * chunk,
					  base + k * (chunk / LBA), chunk, NULL);

			if (e && __atomic_fetch_add(&pr->fails, 1, __ATOMIC_RELAXED) < 3)
				printf("    # %s %s read %d failed: %s\n", names[p], kind, r,
				       strerror(-e));
			__atomic_fetch_add(&pr->reads, 1, __ATOMIC_RELEASE);
		}
		fflush(stdout);
		_exit(0);
	}
	for (i = 0; i < 3; i++) {
		struct p2pgpu_buf b = { 0 };

		seen = reads_past(pr, seen, 8);
		ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);
		evicted += !ret;
		seen = __atomic_load_n(&pr->reads, __ATOMIC_ACQUIRE);
	}
	/* a full round of the chunks after the last eviction */
	reads = reads_past(pr, seen, 2 * nchunk);
	__atomic_store_n(&pr->stop, 1, __ATOMIC_RELEASE);
	waitpid(pid, &status, 0);
	reads = __atomic_load_n(&pr->reads, __ATOMIC_ACQUIRE);
	tap(evicted == 3 && reads > seen, "%s: %s stream: %d evictions between %d reads",
	    names[p], kind, evicted, reads);
	tap(WIFEXITED(status) && !pr->fails, "%s: %s stream: every read succeeded (%d of %d failed)",
	    names[p], kind, pr->fails, reads);
	/* every round read the same LBAs into each chunk */
	ret = host_read(base, BUF, want);
	tap(!ret && !cpu_read(fd, 0, got, BUF) && !memcmp(got, want, BUF),
	    "%s: %s stream: every chunk holds its bytes, none lost or misplaced", names[p], kind);
	diag_where(fd, "after the stream");
	if (registered)
		unreg(id);
out:
	if (pr != MAP_FAILED)
		munmap(pr, sizeof(*pr));
	free(got);
	free(want);
}

/*
 * A static importer beside p2pnvme (dma_buf_attach() of the exporter's own
 * function here, as an RDMA NIC's or rocm-xio's first module's): amdgpu
 * and xe pin the buffer in host memory for it; nvidia keeps it in VRAM.
 */
static void static_importer(uint32_t p, uint32_t flags, uint64_t base)
{
	char what[96];
	struct p2pgpu_buf b = { 0 };
	uint32_t path;
	int fd, ret;

	fd = export(p, flags, BUF, NULL);
	if (fd < 0) {
		tap(0, "%s: export for the static importer (%s)", names[p], strerror(-fd));
		return;
	}
	ret = buf_op(P2PGPU_IOC_STATIC_ATTACH, fd, &b);
	tap(!ret, "%s: a static importer attaches and maps (%s)", names[p], strerror(-ret));
	diag_where(fd, "with the static importer");
	if (p == P2PGPU_NVIDIA)
		tap(b.where == P2PGPU_WHERE_BAR && !b.pins,
		    "nvidia: the static importer leaves it in VRAM, unpinned (static exporter)");
	else
		tap(b.where == P2PGPU_WHERE_HOST && b.pins == 1,
		    "%s: the static importer pinned it in host memory (%s pin: not every importer peer2peer)",
		    names[p], p == P2PGPU_AMDGPU ? "amdgpu_dma_buf_pin()" : "xe_dma_buf_pin()");

	snprintf(what, sizeof(what), "%s: per-I/O read beside the static importer", names[p]);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base + 3072, QLEN, &path);
	tap(!ret, "%s (%s)", what, strerror(-ret));
	if (!ret) {
		landed(fd, 0, base + 3072, QLEN, what);
		path_says(fd, path, what);
	}
	ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);
	tap(ret == (p == P2PGPU_NVIDIA ? -EOPNOTSUPP : -EBUSY),
	    "%s: no eviction now (%s: %s)", names[p],
	    p == P2PGPU_NVIDIA ? "never moves" : "pinned", strerror(-ret));
	ret = buf_op(P2PGPU_IOC_STATIC_DETACH, fd, &b);
	tap(!ret && !b.pins, "%s: the static importer detaches, no pin left", names[p]);
	if (p != P2PGPU_NVIDIA) {
		snprintf(what, sizeof(what), "%s: per-I/O read once it left", names[p]);
		ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base + 3584, QLEN, &path);
		b = where(fd);
		tap(!ret && b.where == P2PGPU_WHERE_BAR,
		    "%s: back in VRAM at the next peer2peer map (%s, in %s)", what,
		    strerror(-ret), place(&b));
		if (!ret) {
			landed(fd, 0, base + 3584, QLEN, what);
			path_says(fd, path, what);
		}
	}
	close(fd);
}

static void personality(uint32_t p)
{
	uint64_t base = 16384ULL * p, off = 0;
	uint32_t id;
	int fd;

	fd = export(p, 0, BUF, &off);
	tap(fd >= 0, "%s: exports 1 MiB of the BAR (at %#llx)", names[p],
	    (unsigned long long)off);
	if (fd < 0)
		return;
	id = basics(p, fd, base);
	if (p == P2PGPU_NVIDIA) {
		struct p2pgpu_buf b = { 0 };
		int ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);

		b = where(fd);
		tap(ret == -EOPNOTSUPP && b.where == P2PGPU_WHERE_BAR && !b.moves,
		    "nvidia: never evicted (%s), still in %s", strerror(-ret), place(&b));
	} else if (id != ~0U) {
		evictions(p, fd, id, base);
	}
	if (id != ~0U)
		unreg(id);
	diag_where(fd, names[p]);
	if (p != P2PGPU_NVIDIA) {
		stream(p, fd, 0, base + 4096);
		stream(p, fd, 1, base + 6144);
	}
	close(fd);
	static_importer(p, 0, base);
	if (p == P2PGPU_XE)
		static_importer(p, P2PGPU_EXPORT_F_XE_PIN_TT, base + 8192);
}

int main(int argc, char **argv)
{
	uint32_t p;
	FILE *tmp;
	int out, c;

	if (argc != 4) {
		fprintf(stderr, "usage: %s /dev/p2pgpu /dev/p2pnvmeN BAR\n", argv[0]);
		return 2;
	}
	gpu = open(argv[1], O_RDWR | O_CLOEXEC);
	nvme = open(argv[2], O_RDWR | O_CLOEXEC);
	bar = argv[3];
	if (gpu < 0 || nvme < 0) {
		perror("open");
		return 2;
	}
	/* the plan comes first: the cases go to a file until their number is known */
	out = dup(1);
	tmp = tmpfile();
	if (out < 0 || !tmp || dup2(fileno(tmp), 1) < 0) {
		perror("tmpfile");
		return 2;
	}
	for (p = P2PGPU_NVIDIA; p <= P2PGPU_XE; p++)
		personality(p);
	fflush(stdout);
	dup2(out, 1);
	printf("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: gpuexp\n    1..%d\n", ktap_n);
	rewind(tmp);
	while ((c = fgetc(tmp)) != EOF)
		putchar(c);
	printf("%s 1 gpuexp\n", ktap_failed ? "not ok" : "ok");
	return ktap_failed ? 1 : 0;
}
