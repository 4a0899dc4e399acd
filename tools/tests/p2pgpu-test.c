// SPDX-License-Identifier: GPL-2.0
/*
 * p2pgpu-test: p2pnvme's dma-buf imports against GPU-like exporters (the
 * bench's tools/testing/p2pgpu module: nvidia, amdgpu and xe
 * personalities), KTAP on stdout on the test programs' harness
 * (tools/lib/harness.h, suite gpuexp), bytes checked by the host (fd 7,
 * see ktap.h) in the BAR's backing file and the namespace image.
 *
 *   p2pgpu-test /dev/p2pgpu /dev/p2pnvmeN BAR [/dev/p2pbarN]
 *	BAR: the host's name of the exporter's ivshmem backing file (bar1)
 *	/dev/p2pbarN: a provider whose exports the GPU's importers take
 *
 * A test per personality and part (its transfers, its streams, the static
 * importer, the static-importer trap), then the P2P-required stream, the
 * other direction (p2pbar's exports imported) and the unbind mid-stream,
 * each in a child of its own with the devices opened by its fixture, its
 * exports its own. Each test prints the same cases whatever happens: where
 * a transfer did not go (refused under swiotlb=force, or failed), the
 * cases about where its bytes landed are SKIP, and a test that cannot go
 * on (an export or a registration refused) ends in kt_fail(), its other
 * cases "not reached".
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
 * Where the kernel's P2PDMA verdict refuses the GPU's function and the
 * controller (p2pexpect=refused on the kernel command line: the rootports
 * and acs profiles) p2pnvme must refuse the BAR however the exporter
 * mapped it: nvidia's transfers and registrations fail with -EREMOTEIO,
 * each counted once in stats/refused, no byte moved (nvidia_refused());
 * amdgpu and xe ask the kernel at attach and keep their buffers in host
 * memory for p2pnvme, whose transfers go on as dmabuf-host (host_only(),
 * and the evictions' and static importer's cases say host memory there);
 * the P2P-required stream has nothing to evict (SKIP), the unbind has no
 * registration in the BAR to revoke (unbind_refused()). On every profile:
 * NVIDIA's own check on a chipset its RM flags (nvidia_flagged()) and a
 * dynamic exporter that never asks the kernel moving a registered buffer
 * into its BAR (unchecked_exporter(): refused at each mapping again where
 * the kernel refuses, P2P where it allows).
 *
 * Memory pressure (shrinker_stream(), amdgpu and xe): registered reads and
 * writes through P2PNVME_IOC_SUBMIT and io_uring go on while the
 * exporter's shrinker evicts the buffer again and again (no-wait passes as
 * direct reclaim runs them, waiting ones as kswapd's, drop_caches): every
 * transfer ends with 0 or -EAGAIN (-EBUSY through 6.12's io_uring), none
 * hangs, registered I/O is fenced, the importer's invalidation never
 * sleeps in reclaim, and the bytes are where they belong.
 *
 * The drivers' own behaviour where an outside reading found the
 * personalities different (../shared/notes/gpu-reality.md): VRAM in
 * blocks of mixed sizes, one mapping entry each (amdgpu, xe), ranges split
 * at the importer's maximum segment (nvidia), for 5 and 64 MiB buffers,
 * p2pnvme's transfers crossing blocks at odd offsets checked block by block
 * (fragmented()); xe's refusal to map VRAM the CPU cannot see
 * (xe_invisible()); xe's interruptible maps (xe_interrupted()); amdgpu's
 * attach under the reservation lock (attach_lock()); amdgpu's remove
 * leaving VRAM where it is (unbind_midstream()); NVIDIA's coherent memory
 * (GH200's HBM: pages of a NUMA node without CPUs), its own path,
 * dmabuf-coherent, refused where P2P is required (nvidia_coherent(); SKIP
 * on a machine without such a node).
 *
 * Namespace: the bench's 64 MiB image of 512-byte LBAs, each sector headed
 * "<seed> LBA <lba>"; each personality reads its own 8 MiB from LBA
 * 16384 * personality and writes 64 KiB at LBA 110000 + 256 * personality;
 * the shrinker streams write 4 MiB at LBA 80000 (amdgpu) and 90000 (xe);
 * the fragmented buffers' writes go to LBA 113000 to 119015, xe's
 * invisible VRAM would write at 112768, nvidia's coherent memory writes 64
 * KiB at LBA 121000.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/io_uring.h>
#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

#include "harness.h"
#include "../testing/p2pgpu/p2pgpu_uapi.h"

#define KIB		1024ULL
#define MIB		(1ULL << 20)
#define LBA		512ULL
#define BUF		(1 * MIB)	/* each export */
#define QLEN		(256 * KIB)	/* a read */

static const char *names[] = { "", "nvidia", "amdgpu", "xe" };
/* what main() parsed, for every test */
static const char *gpu_path, *nvme_path, *bar, *bardev;
static char gpu_name[64];	/* the exporter's PCI function, as sysfs names it */
static char nvme_name[64];	/* the controller's */
static const char *nvme_dev;	/* its character device's name (p2pnvme0) */
static int swiotlb;		/* swiotlb=force: host placements cannot be used */
/*
 * p2pexpect=refused: the kernel's P2PDMA verdict refuses the GPU's function
 * and the controller (the rootports and acs profiles)
 */
static int refused;
static int common_bridge;	/* the GPU and the controller share an upstream bridge */
/*
 * p2pflavour=nomove: the run booted the kernel without
 * CONFIG_DMABUF_MOVE_NOTIFY (qemu/configs/nomove.config), which pins every
 * dynamic exporter's buffer while it is mapped: the suite gpuexp_nomove
 * runs, and asserts what that kernel does (a kernel with the option fails it)
 */
static int nomove;
/* the running test's devices: its fixture's, opened in its own child */
static int gpu = -1, nvme = -1;

/* the PCI function a class device belongs to: its sysfs "device" link */
static void sysfs_function(const char *classdev, char *name, size_t size)
{
	char path[256], link[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/%s/device", classdev);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	strncpy(name, strrchr(link, '/') ? strrchr(link, '/') + 1 : link, size - 1);
	name[size - 1] = 0;
}

/* the PCI function bound to @driver (the first), as sysfs lists it */
static void bound_function(const char *driver, char *name, size_t size)
{
	char path[128];
	struct dirent *e;
	DIR *d;

	name[0] = 0;
	snprintf(path, sizeof(path), "/sys/bus/pci/drivers/%s", driver);
	d = opendir(path);
	while (d && (e = readdir(d)))
		if (strlen(e->d_name) >= 12 && e->d_name[4] == ':' && e->d_name[7] == ':' &&
		    strlen(e->d_name) < size) {
			strcpy(name, e->d_name);
			break;
		}
	if (d)
		closedir(d);
}

/*
 * Do two PCI functions share an upstream bridge (a switch's port, or a root
 * port both sit under: what NVIDIA's nv_pci_has_common_pci_switch() looks
 * for)? Their sysfs paths, /sys/devices/pciDDDD:BB/<bridge>/.../<function>,
 * then start with the same root bus and the same first bridge.
 */
static int share_bridge(const char *a, const char *b)
{
	char pa[PATH_MAX], pb[PATH_MAX], path[128];
	char *ea, *eb;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", a);
	if (!realpath(path, pa))
		return 0;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", b);
	if (!realpath(path, pb))
		return 0;
	/* the end of the first component below the root bus's */
	ea = strstr(pa, "/pci");
	eb = strstr(pb, "/pci");
	ea = ea ? strchr(ea + 1, '/') : NULL;
	eb = eb ? strchr(eb + 1, '/') : NULL;
	ea = ea ? strchr(ea + 1, '/') : NULL;
	eb = eb ? strchr(eb + 1, '/') : NULL;
	/* a function right on the root bus has no upstream bridge */
	return ea && eb && ea - pa == eb - pb && !strncmp(pa, pb, ea - pa);
}

/*
 * A transfer to or from a buffer in host memory: it goes (0), except
 * under swiotlb=force, where p2pnvme refuses a dma-buf mapping that needs
 * syncs it cannot make (-EOPNOTSUPP; Documentation/dmabuf.rst).
 */
static int host_ok(int ret)
{
	return swiotlb ? ret == -EOPNOTSUPP : !ret;
}

static const char *host_note(void)
{
	return swiotlb ? " (swiotlb=force: host memory refused, EOPNOTSUPP)" : "";
}

/* write a line to a sysfs file; 0 or -errno */
static int sysfs_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

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
	if (b->where == P2PGPU_WHERE_COHERENT)
		snprintf(s, sizeof(s), "coherent memory, node %llu",
			 (unsigned long long)b->bar_off);
	else
		snprintf(s, sizeof(s), "BAR+%#llx", (unsigned long long)b->bar_off);
	return s;
}

/* The CPU's view of the buffer's bytes (after a move's copy). */
static int cpu_read(int fd, uint64_t off, void *dst, uint64_t len)
{
	struct p2pgpu_buf b = { .off = off, .len = len, .arg = (uintptr_t)dst };

	return buf_op(P2PGPU_IOC_READ, fd, &b);
}

/*
 * The buffer's VRAM blocks in buffer order (P2PGPU_IOC_LAYOUT), *@blk
 * malloc'd; 0 in host memory, or when the layout cannot be had.
 */
static unsigned int layout(int fd, struct p2pgpu_block **blk)
{
	struct p2pgpu_layout l = { .fd = fd };

	*blk = NULL;
	if (ioctl(gpu, P2PGPU_IOC_LAYOUT, &l) || !l.nblocks)
		return 0;
	*blk = calloc(l.nblocks, sizeof(**blk));
	if (!*blk)
		exit(2);
	l.blocks = (uintptr_t)*blk;
	/* a move in between: what the second call says, no more than room */
	{
		unsigned int room = l.nblocks;

		if (ioctl(gpu, P2PGPU_IOC_LAYOUT, &l))
			return 0;
		return l.nblocks < room ? l.nblocks : room;
	}
}

/*
 * The host's view of @len bytes at @off of a buffer in VRAM, block by
 * block (where each lies in the BAR's backing file): equal to the image at
 * byte @img (@byte < 0), or all @byte. Without a layout (never for a buffer
 * in VRAM) the bytes are checked at @b's offset, as one run, and a
 * mismatch says so. Return: the pieces checked.
 */
static int bar_check(int fd, const struct p2pgpu_buf *b, uint64_t off, uint64_t len, uint64_t img,
		     int byte)
{
	struct p2pgpu_block *blk;
	unsigned int n = layout(fd, &blk), k;
	int pieces = 0;

	if (!n) {
		printf("    # no VRAM layout for the buffer: its bytes checked as one run\n");
		blk = calloc(1, sizeof(*blk));
		if (!blk)
			exit(2);
		*blk = (struct p2pgpu_block){ .bar_off = b->bar_off, .len = off + len };
		n = 1;
	}
	for (k = 0; k < n; k++) {
		uint64_t s = off > blk[k].off ? off : blk[k].off;
		uint64_t e = off + len < blk[k].off + blk[k].len ? off + len : blk[k].off + blk[k].len;

		if (s >= e)
			continue;
		if (byte < 0)
			hostcheck("equal %llu %s@%llu nvme0@%llu", (unsigned long long)(e - s), bar,
				  (unsigned long long)(blk[k].bar_off + s - blk[k].off),
				  (unsigned long long)(img + s - off));
		else
			hostcheck("fill %llu %s@%llu %#x", (unsigned long long)(e - s), bar,
				  (unsigned long long)(blk[k].bar_off + s - blk[k].off), byte);
		pieces++;
	}
	free(blk);
	return pieces;
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

/* a registration with @flags besides the dma-buf's; the out fields too */
static int reg_dmabuf_ex(int fd, uint64_t len, uint32_t flags, uint32_t *id,
			 struct p2pnvme_buf_reg *out)
{
	struct p2pnvme_buf_reg r = { .argsz = sizeof(r), .flags = P2PNVME_BUF_F_DMABUF | flags,
				     .len = len, .dmabuf_fd = fd };

	if (ioctl(nvme, P2PNVME_IOC_BUF_REGISTER, &r))
		return -errno;
	*id = r.id;
	if (out)
		*out = r;
	return 0;
}

static int unreg(uint32_t id)
{
	struct p2pnvme_buf_unreg u = { .argsz = sizeof(u), .id = id };

	return ioctl(nvme, P2PNVME_IOC_BUF_UNREGISTER, &u) ? -errno : 0;
}

static int reg_read_f(uint32_t id, uint64_t off, uint64_t slba, uint64_t len, uint32_t flags,
		      uint32_t *path)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ, .slba = slba,
				 .len = len, .addr = off, .buf_id = id,
				 .flags = P2PNVME_IO_F_REGISTERED | flags };
	int ret = xfer(&io);

	if (path)
		*path = ret ? 0 : io.path;
	return ret;
}

static int dmabuf_io_f(uint32_t op, int fd, uint64_t off, uint64_t slba, uint64_t len,
		       uint32_t flags, uint32_t *path)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = op, .slba = slba, .len = len,
				 .addr = off, .flags = P2PNVME_IO_F_DMABUF | flags,
				 .dmabuf_fd = fd };
	int ret = xfer(&io);

	if (path)
		*path = ret ? 0 : io.path;
	return ret;
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
	int ref = host_read(slba, len, want);

	tap(!ref && !cpu_read(fd, off, got, len) && !memcmp(want, got, len),
	    "%s: the buffer (in %s) holds the image's bytes", what, place(&b));
	if (ref)
		printf("    # the reference read of LBA %llu failed: %s\n",
		       (unsigned long long)slba, strerror(-ref));
	if (b.where == P2PGPU_WHERE_BAR)
		bar_check(fd, &b, off, len, slba * LBA, -1);
	else
		hostcheck("absent %llu nvme0@%llu %s", (unsigned long long)len,
			  (unsigned long long)(slba * LBA), bar);
	free(want);
	free(got);
}

/*
 * What p2pnvme reports must tell host memory from the BAR: a transfer into
 * a buffer in host memory may not report the path a transfer into the BAR
 * reports (P2PNVME_PATH_DMABUF_HOST and P2PNVME_PATH_DMABUF).
 */
static void path_says(int fd, uint32_t path, const char *what)
{
	struct p2pgpu_buf b = where(fd);

	if (b.where == P2PGPU_WHERE_BAR) {
		tap(path == P2PNVME_PATH_DMABUF, "%s: path %u, the one a read into the BAR reports",
		    what, path);
	} else {
		tap(path != P2PNVME_PATH_DMABUF,
		    "%s: path %u says host memory, not the BAR's path %u",
		    what, path, P2PNVME_PATH_DMABUF);
	}
}

/*
 * After a transfer (@ret): where its bytes landed (landed()) and, with
 * @path, what p2pnvme said of it (path_says()). A transfer that did not go
 * moved no byte to look for: the same cases, SKIP.
 */
static void moved(int ret, int fd, uint64_t off, uint64_t slba, uint64_t len,
		  const uint32_t *path, const char *what)
{
	if (ret) {
		tap(1, "%s: the buffer holds the image's bytes # SKIP no transfer (%s)", what,
		    strerror(-ret));
		if (path)
			tap(1, "%s: the path says where # SKIP no transfer", what);
		return;
	}
	landed(fd, off, slba, len, what);
	if (path)
		path_says(fd, *path, what);
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
	moved(ret, fd, 0, base, QLEN, &path, what);

	ret = buf_op(P2PGPU_IOC_FILL, fd, &b);
	ret = ret ?: dmabuf_io(P2PNVME_OP_WRITE, fd, 512 * KIB, w, 64 * KIB, NULL);
	tap(!ret, "%s: per-I/O write of 64 KiB from the dma-buf (%s)", names[p], strerror(-ret));
	hostcheck("fill 65536 nvme0@%llu %#x", (unsigned long long)(w * LBA), 0x50 + p);

	ret = reg_dmabuf(fd, BUF, &id);
	tap(!ret, "%s: the dma-buf registers (%s)", names[p], strerror(-ret));
	if (ret)
		kt_fail("%s: no registration to go on with", names[p]);
	snprintf(what, sizeof(what), "%s: registered read", names[p]);
	ret = reg_read(id, QLEN, base + 512, QLEN, &path);
	tap(!ret, "%s of 256 KiB (%s)", what, strerror(-ret));
	moved(ret, fd, QLEN, base + 512, QLEN, &path, what);
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
	tap(host_ok(ret), "%s succeeds: a move is not a revoke (%s)%s", what, strerror(-ret),
	    host_note());
	moved(ret, fd, QLEN, base + 1024, QLEN, &path, what);
	snprintf(what, sizeof(what), "%s: per-I/O read, VRAM full", names[p]);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base + 1536, QLEN, &path);
	tap(host_ok(ret), "%s (%s)%s", what, strerror(-ret), host_note());
	b = where(fd);
	tap(b.where == P2PGPU_WHERE_HOST, "%s: the buffer stayed in host memory (GTT fallback)",
	    what);
	moved(ret, fd, 0, base + 1536, QLEN, &path, what);
	if (h >= 0)
		close(h);

	/*
	 * room again: a peer2peer map validates it back into VRAM; where the
	 * kernel refuses P2P, the exporter's attach took p2pnvme for an
	 * importer without peer2peer, and its maps keep it in host memory
	 */
	snprintf(what, sizeof(what), "%s: per-I/O read, VRAM free", names[p]);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base + 2048, QLEN, &path);
	tap(!ret, "%s (%s)", what, strerror(-ret));
	b = where(fd);
	if (refused)
		tap(b.where == P2PGPU_WHERE_HOST,
		    "%s: P2P refused, the map left it in host memory (%s): the exporter's attach found pci_p2pdma_distance() < 0",
		    what, place(&b));
	else
		tap(b.where == P2PGPU_WHERE_BAR, "%s: the map moved the buffer back into the BAR (%s)",
		    what, place(&b));
	moved(ret, fd, 0, base + 2048, QLEN, &path, what);
	snprintf(what, sizeof(what), "%s: registered read after the move back", names[p]);
	ret = reg_read(id, QLEN, base + 2560, QLEN, &path);
	tap(!ret, "%s succeeds (%s)", what, strerror(-ret));
	moved(ret, fd, QLEN, base + 2560, QLEN, &path, what);
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
	if (pr == MAP_FAILED || (registered && reg_dmabuf(fd, BUF, &id)))
		kt_fail("%s: %s stream: set up", names[p], kind);
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
	if (fd < 0)
		kt_fail("%s: export for the static importer: %s", names[p], strerror(-fd));
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
	/* nvidia's is in the BAR, which the kernel may refuse */
	tap(p != P2PGPU_NVIDIA ? host_ok(ret) : refused ? ret == -EREMOTEIO : !ret, "%s (%s)%s",
	    what, strerror(-ret), p != P2PGPU_NVIDIA ? host_note() :
	    refused ? " (P2P refused: EREMOTEIO)" : "");
	moved(ret, fd, 0, base + 3072, QLEN, &path, what);
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
		if (refused)
			tap(!ret && b.where == P2PGPU_WHERE_HOST,
			    "%s: P2P refused, p2pnvme is no peer2peer importer to the exporter: still in host memory (%s, in %s)",
			    what, strerror(-ret), place(&b));
		else
			tap(!ret && b.where == P2PGPU_WHERE_BAR,
			    "%s: back in VRAM at the next peer2peer map (%s, in %s)", what,
			    strerror(-ret), place(&b));
		moved(ret, fd, 0, base + 3584, QLEN, &path, what);
	}
	close(fd);
}

/* ---- issue 25's rest: P2P required, the owner's name ---- */

/* does debugfs's "buffers" list a registration with all of @words on one line? */
static int debugfs_lists(const char *w1, const char *w2, const char *w3)
{
	char path[256], line[512];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/sys/kernel/debug/p2pnvme/%s/buffers", nvme_name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, w1) && strstr(line, w2) && (!w3 || strstr(line, w3));
	fclose(f);
	return found;
}

/*
 * A buffer in "VRAM": P2PNVME_BUF_F_REQUIRE_P2P registers it, the
 * registration names the exporter's function (as sysfs does), debugfs too,
 * and transfers that require P2P go.
 */
static void owner_and_require(uint32_t p, int fd, uint64_t base)
{
	struct p2pnvme_buf_reg r = { 0 };
	char what[96];
	uint32_t id, path;
	int ret, dbg;

	ret = reg_dmabuf_ex(fd, BUF, P2PNVME_BUF_F_REQUIRE_P2P, &id, &r);
	tap(!ret, "%s: registers with P2PNVME_BUF_F_REQUIRE_P2P in VRAM (%s)", names[p],
	    strerror(-ret));
	if (ret)
		kt_fail("%s: no registration requiring P2P to go on with", names[p]);
	tap(r.path == P2PNVME_PATH_DMABUF && !strcmp(r.owner, gpu_name),
	    "%s: the registration says dmabuf-p2p (%s), the exporter's function %s (path %u)",
	    names[p], r.owner, gpu_name, r.path);
	/* debugfs is always mounted in the guest: no file is a failure */
	dbg = debugfs_lists("dmabuf-p2p", gpu_name, "require-p2p");
	if (dbg < 0)
		tap(0, "%s: debugfs buffers names the owner (p2pnvme/%s/buffers: %s)", names[p],
		    nvme_name, strerror(-dbg));
	else
		tap(dbg, "%s: debugfs buffers: dmabuf-p2p, owner %s, require-p2p", names[p],
		    gpu_name);
	/* p2pctl's view of the registrations says the same */
	{
		char cmd[160], out[4096] = "", want[96];
		size_t got = 0;
		FILE *pp;

		snprintf(cmd, sizeof(cmd), "p2pctl nvme-buffers /dev/%s 2>&1", nvme_dev);
		snprintf(want, sizeof(want), "dmabuf-p2p (%s), P2P required", gpu_name);
		pp = popen(cmd, "r");
		if (pp) {
			got = fread(out, 1, sizeof(out) - 1, pp);
			pclose(pp);
		}
		out[got] = 0;
		tap(strstr(out, want) != NULL, "%s: p2pctl nvme-buffers shows \"%s\"", names[p], want);
		if (!strstr(out, want))
			printf("    # p2pctl said: %.200s\n", out);
	}
	snprintf(what, sizeof(what), "%s: registered read, P2P required", names[p]);
	ret = reg_read_f(id, 2 * QLEN, base + 10240, QLEN, P2PNVME_IO_F_REQUIRE_P2P, &path);
	tap(!ret && path == P2PNVME_PATH_DMABUF, "%s (%s, path %u)", what, strerror(-ret), path);
	moved(ret, fd, 2 * QLEN, base + 10240, QLEN, NULL, what);
	snprintf(what, sizeof(what), "%s: per-I/O read, P2P required", names[p]);
	ret = dmabuf_io_f(P2PNVME_OP_READ, fd, 3 * QLEN, base + 10752, QLEN,
			  P2PNVME_IO_F_REQUIRE_P2P, &path);
	tap(!ret && path == P2PNVME_PATH_DMABUF, "%s (%s, path %u)", what, strerror(-ret), path);
	moved(ret, fd, 3 * QLEN, base + 10752, QLEN, NULL, what);
	unreg(id);
}

/* the buffer's bytes did not change: what the CPU sees now is @before */
static int untouched(int fd, const unsigned char *before, uint64_t len)
{
	unsigned char *now_ = xalloc(len);
	int same = !cpu_read(fd, 0, now_, len) && !memcmp(now_, before, len);

	free(now_);
	return same;
}

/* ---- the kernel's P2PDMA verdict refuses the GPU and the controller ---- */

/* the controller's stats/refused: transfers refused so far, or -1 */
static long refused_count(void)
{
	char path[160], v[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/stats/refused", nvme_dev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(v, sizeof(v), f))
		v[0] = 0;
	fclose(f);
	return v[0] ? strtol(v, NULL, 10) : -1;
}

/* the kernel log holds @s (as dmesg prints it) */
static int klog_has(const char *s)
{
	char line[1024];
	int found = 0;
	FILE *pp = popen("dmesg 2>/dev/null", "r");

	if (!pp)
		return 0;
	while (fgets(line, sizeof(line), pp))
		found |= strstr(line, s) != NULL;
	pclose(pp);
	return found;
}

/*
 * No byte moved into the buffer, filled with @byte: the CPU sees the fill,
 * and the host sees it in the BAR's backing file at the buffer's offset.
 */
static void still_filled(int fd, int byte, const char *what)
{
	unsigned char *now_ = xalloc(BUF);
	struct p2pgpu_buf b = where(fd);
	int ok = !cpu_read(fd, 0, now_, BUF);
	uint64_t i;

	for (i = 0; ok && i < BUF; i++)
		ok = now_[i] == byte;
	tap(ok, "%s: the buffer still holds its %#x fill (in %s): no byte moved", what, byte,
	    place(&b));
	if (b.where == P2PGPU_WHERE_BAR)
		bar_check(fd, &b, 0, BUF, 0, byte);
	free(now_);
}

/*
 * nvidia where the kernel's P2PDMA verdict refuses the GPU's function and
 * the controller (p2pexpect=refused: root ports of a host bridge it does
 * not allow, or ACS redirect on the path). NVIDIA's attach asks nothing,
 * its map hands p2pnvme the BAR all the same: every transfer of it is
 * refused with -EREMOTEIO before any command, per I/O and at
 * registration, P2P required or not, each counted once in stats/refused;
 * no byte moves (the buffer keeps its fill, in the BAR's backing file
 * too; the image keeps its pattern where the writes would have gone).
 * p2pnvme without the verdict check took it all (on rootports a
 * registered read requiring P2P went, path 4: dmabuf).
 */
static void nvidia_refused(void)
{
	const uint32_t p = P2PGPU_NVIDIA;
	const uint64_t base = 16384ULL * p, w = 112000 + 256 * p;
	struct p2pgpu_buf b = { .off = 0, .len = BUF, .arg = 0xa5 };
	uint64_t off = 0;
	uint32_t id = 0;
	long n0, n1;
	int fd, ret;

	fd = export(p, 0, BUF, &off);
	ret = fd < 0 ? fd : buf_op(P2PGPU_IOC_FILL, fd, &b);
	tap(!ret, "nvidia: exports 1 MiB of the BAR (at %#llx), filled with 0xa5 (%s)",
	    (unsigned long long)off, strerror(-ret));
	if (ret)
		kt_fail("nvidia: no export to go on with");
	n0 = refused_count();
	ret = dmabuf_io_f(P2PNVME_OP_READ, fd, 0, base, QLEN, 0, NULL);
	tap(ret == -EREMOTEIO, "nvidia, P2P refused: per-I/O read into the BAR: %s", strerror(-ret));
	ret = dmabuf_io_f(P2PNVME_OP_READ, fd, QLEN, base + 512, QLEN, P2PNVME_IO_F_REQUIRE_P2P,
			  NULL);
	tap(ret == -EREMOTEIO, "nvidia, P2P refused: per-I/O read, P2P required: %s",
	    strerror(-ret));
	ret = dmabuf_io_f(P2PNVME_OP_WRITE, fd, 0, w, 64 * KIB, 0, NULL);
	tap(ret == -EREMOTEIO, "nvidia, P2P refused: per-I/O write from the BAR: %s",
	    strerror(-ret));
	ret = dmabuf_io_f(P2PNVME_OP_WRITE, fd, 0, w, 64 * KIB, P2PNVME_IO_F_REQUIRE_P2P, NULL);
	tap(ret == -EREMOTEIO, "nvidia, P2P refused: per-I/O write, P2P required: %s",
	    strerror(-ret));
	hostcheck("pristine 65536 nvme0@%llu", (unsigned long long)(w * LBA));
	ret = reg_dmabuf_ex(fd, BUF, 0, &id, NULL);
	tap(ret == -EREMOTEIO, "nvidia, P2P refused: registration: %s", strerror(-ret));
	if (!ret)
		unreg(id);
	ret = reg_dmabuf_ex(fd, BUF, P2PNVME_BUF_F_REQUIRE_P2P, &id, NULL);
	tap(ret == -EREMOTEIO, "nvidia, P2P refused: registration, P2P required: %s",
	    strerror(-ret));
	if (!ret)
		unreg(id);
	n1 = refused_count();
	tap(n0 >= 0 && n1 - n0 == 6, "nvidia, P2P refused: stats/refused counted each of the 6 once (%ld -> %ld)",
	    n0, n1);
	still_filled(fd, 0xa5, "nvidia, P2P refused");
	close(fd);
}

/*
 * amdgpu and xe where the kernel refuses P2P between the GPU's function
 * and the controller: their attach cleared p2pnvme's peer2peer
 * (pci_p2pdma_distance() < 0), so their maps keep the buffer in host
 * memory (GTT/TT). Host memory is never refused for the verdict: without
 * P2P required the transfers go, dmabuf-host with no owner; with it they
 * are refused as for any host memory, and move no byte.
 */
static void host_only(uint32_t p, int fd, uint64_t base)
{
	unsigned char *before = xalloc(BUF);
	struct p2pnvme_buf_reg r = { 0 };
	char what[96];
	uint32_t id = 0, path;
	int ret;

	ret = reg_dmabuf_ex(fd, BUF, P2PNVME_BUF_F_REQUIRE_P2P, &id, NULL);
	tap(ret == -EREMOTEIO, "%s, P2P refused: registration requiring P2P refused, host memory (%s)",
	    names[p], strerror(-ret));
	if (!ret)
		unreg(id);
	ret = reg_dmabuf_ex(fd, BUF, 0, &id, &r);
	tap(!ret && r.path == P2PNVME_PATH_DMABUF_HOST && !r.owner[0],
	    "%s, P2P refused: registered without it: dmabuf-host, no owner (%s, path %u, owner '%s')",
	    names[p], strerror(-ret), r.path, r.owner);
	if (ret)
		kt_fail("%s: no registration to go on with", names[p]);
	cpu_read(fd, 0, before, BUF);
	ret = reg_read_f(id, 2 * QLEN, base + 10240, QLEN, P2PNVME_IO_F_REQUIRE_P2P, &path);
	tap(ret == -EREMOTEIO && untouched(fd, before, BUF),
	    "%s, P2P refused: registered read requiring P2P refused (%s), the buffer untouched",
	    names[p], strerror(-ret));
	ret = dmabuf_io_f(P2PNVME_OP_READ, fd, 3 * QLEN, base + 10752, QLEN,
			  P2PNVME_IO_F_REQUIRE_P2P, &path);
	tap(ret == -EREMOTEIO && untouched(fd, before, BUF),
	    "%s, P2P refused: per-I/O read requiring P2P refused (%s), the buffer untouched",
	    names[p], strerror(-ret));
	snprintf(what, sizeof(what), "%s, P2P refused: registered read", names[p]);
	ret = reg_read_f(id, 2 * QLEN, base + 10240, QLEN, 0, &path);
	tap(!ret && path == P2PNVME_PATH_DMABUF_HOST, "%s without it goes, dmabuf-host (%s, path %u)",
	    what, strerror(-ret), path);
	moved(ret, fd, 2 * QLEN, base + 10240, QLEN, NULL, what);
	unreg(id);
	free(before);
}

/*
 * NVIDIA's own topology check, where it makes one: on a chipset its RM
 * flags (P2PGPU_EXPORT_F_NV_UNSUPPORTED_CHIPSET) attach refuses an
 * importer with no upstream bridge in common with the GPU (-ENOTSUPP,
 * which p2pnvme says as -EOPNOTSUPP), whatever the kernel would say; one
 * under a common bridge is taken, and the kernel's verdict is then
 * p2pnvme's to apply. Root ports (rootports; iommu, where the kernel
 * allows the host bridge): refused at attach; a switch: P2P; one root
 * port with ACS redirect (acs): NVIDIA takes p2pnvme, p2pnvme refuses the
 * BAR (-EREMOTEIO). Only the kernel's verdict counts as refused.
 */
static void nvidia_flagged(void)
{
	const uint32_t p = P2PGPU_NVIDIA;
	const uint64_t base = 16384ULL * p + 14336;
	const int want = !common_bridge ? -EOPNOTSUPP : refused ? -EREMOTEIO : 0;
	struct p2pgpu_buf b = { .off = 0, .len = BUF, .arg = 0x6b };
	const char *what = common_bridge ? "nvidia, flagged chipset, a common bridge" :
			   "nvidia, flagged chipset, no common bridge";
	uint32_t id = 0, path = 0;
	uint64_t off = 0;
	long n0, n1;
	int fd, ret, reg;

	fd = export(p, P2PGPU_EXPORT_F_NV_UNSUPPORTED_CHIPSET, BUF, &off);
	ret = fd < 0 ? fd : buf_op(P2PGPU_IOC_FILL, fd, &b);
	tap(!ret, "%s: exports 1 MiB (at %#llx), filled with 0x6b (%s)", what,
	    (unsigned long long)off, strerror(-ret));
	if (ret)
		kt_fail("nvidia: no export to go on with");
	n0 = refused_count();
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base, QLEN, &path);
	tap(ret == want && (ret || path == P2PNVME_PATH_DMABUF),
	    "%s, P2P %s: per-I/O read: %s (want %s; path %u)", what, refused ? "refused" : "allowed",
	    strerror(-ret), strerror(-want), path);
	/* after the per-I/O attachment went: two mappings of one NVIDIA range overlap */
	reg = reg_dmabuf_ex(fd, BUF, 0, &id, NULL);
	tap(reg == want, "%s, P2P %s: registration: %s (want %s)", what,
	    refused ? "refused" : "allowed", strerror(-reg), strerror(-want));
	if (!reg)
		unreg(id);
	n1 = refused_count();
	tap(n0 >= 0 && n1 - n0 == (want == -EREMOTEIO ? 2 : 0),
	    "%s: stats/refused went up by %ld, want %d (the kernel's verdict counts, the exporter's refusal at attach does not)",
	    what, n1 - n0, want == -EREMOTEIO ? 2 : 0);
	if (want == -EOPNOTSUPP)
		tap(klog_has("dma-buf attach refused by its exporter (-EOPNOTSUPP)"),
		    "%s: p2pnvme's log says the exporter refused the importer at attach", what);
	else
		tap(1, "%s: p2pnvme's log says the exporter refused at attach # SKIP attached", what);
	if (!ret)
		landed(fd, 0, base, QLEN, what);
	else
		still_filled(fd, 0x6b, what);
	close(fd);
}

/*
 * A dynamic exporter that never asks the kernel (amdgpu with
 * P2PGPU_EXPORT_F_NO_DISTANCE_CHECK: no driver's code) moves a buffer
 * p2pnvme registered in host memory into its BAR. Where the kernel allows
 * the GPU's function and the controller the registration follows it
 * (mapped again, P2P). Where it refuses (p2pexpect=refused) every mapping
 * of the BAR is: the per-I/O read whose map moved it there, the
 * registration's mapping again at each registered read (P2P required or
 * not), a per-I/O read requiring P2P and a write, -EREMOTEIO each, counted
 * once each, no byte moved. Back in host memory the registration goes on:
 * the BAR is refused, not the buffer.
 */
static void unchecked_exporter(void)
{
	const uint32_t p = P2PGPU_AMDGPU;
	const uint64_t base = 16384ULL * p + 14336, w = 112000 + 256 * p, len = 64 * KIB;
	const char *what = refused ? "unchecked amdgpu, P2P refused" :
			   "unchecked amdgpu, P2P allowed";
	const int want = refused ? -EREMOTEIO : 0;
	unsigned char *before = xalloc(BUF);
	struct p2pgpu_buf b = { .off = 0, .len = BUF, .arg = 0x3c };
	struct p2pnvme_buf_reg r = { 0 };
	uint32_t id = 0, path = 0;
	long n0, n1;
	int fd, ret;

	if (swiotlb)
		kt_skip("swiotlb=force: the registration in host memory it starts from is refused (EOPNOTSUPP)");
	fd = export(p, P2PGPU_EXPORT_F_NO_DISTANCE_CHECK, BUF, NULL);
	ret = fd < 0 ? fd : buf_op(P2PGPU_IOC_FILL, fd, &b);
	if (!ret) {
		b = (struct p2pgpu_buf){ .arg = P2PGPU_EVICT_STAY };
		ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);
	}
	tap(!ret && b.where == P2PGPU_WHERE_HOST,
	    "%s: exported, filled with 0x3c, evicted to host memory for good (%s, in %s)", what,
	    strerror(-ret), place(&b));
	if (ret)
		kt_fail("%s: no export in host memory to go on with", what);
	ret = reg_dmabuf_ex(fd, BUF, 0, &id, &r);
	tap(!ret && r.path == P2PNVME_PATH_DMABUF_HOST,
	    "%s: registers in host memory, dmabuf-host (%s, path %u)", what, strerror(-ret), r.path);
	if (ret)
		kt_fail("%s: no registration to go on with", what);
	ret = reg_read(id, 0, base, len, &path);
	tap(!ret && path == P2PNVME_PATH_DMABUF_HOST,
	    "%s: a registered read in host memory goes, dmabuf-host (%s, path %u)", what,
	    strerror(-ret), path);
	cpu_read(fd, 0, before, BUF);
	n0 = refused_count();

	/* room again: a peer2peer map (this read's) moves it into the BAR */
	b = (struct p2pgpu_buf){ .arg = P2PGPU_EVICT_ALLOW };
	buf_op(P2PGPU_IOC_EVICT, fd, &b);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, len, base + 128, len, &path);
	b = where(fd);
	tap(ret == want && b.where == P2PGPU_WHERE_BAR && (ret || path == P2PNVME_PATH_DMABUF),
	    "%s: a per-I/O read's map moved it into the BAR (in %s); the read: %s (path %u)", what,
	    place(&b), strerror(-ret), path);
	ret = reg_read(id, 2 * len, base + 256, len, &path);
	tap(ret == want && (ret || path == P2PNVME_PATH_DMABUF),
	    "%s: the registration mapped again in the BAR, a registered read: %s (path %u)", what,
	    strerror(-ret), path);
	ret = reg_read_f(id, 3 * len, base + 384, len, P2PNVME_IO_F_REQUIRE_P2P, &path);
	tap(ret == want && (ret || path == P2PNVME_PATH_DMABUF),
	    "%s: a registered read requiring P2P: %s (path %u)", what, strerror(-ret), path);
	ret = dmabuf_io_f(P2PNVME_OP_READ, fd, 4 * len, base + 512, len, P2PNVME_IO_F_REQUIRE_P2P,
			  &path);
	tap(ret == want && (ret || path == P2PNVME_PATH_DMABUF),
	    "%s: a per-I/O read requiring P2P: %s (path %u)", what, strerror(-ret), path);
	ret = dmabuf_io(P2PNVME_OP_WRITE, fd, 8 * len, w, len, NULL);
	tap(ret == want, "%s: a per-I/O write from the BAR: %s", what, strerror(-ret));
	if (refused)
		hostcheck("pristine %llu nvme0@%llu", (unsigned long long)len,
			  (unsigned long long)(w * LBA));
	else
		hostcheck("fill %llu nvme0@%llu 0x3c", (unsigned long long)len,
			  (unsigned long long)(w * LBA));
	n1 = refused_count();
	tap(n0 >= 0 && n1 - n0 == (refused ? 5 : 0), "%s: stats/refused went up by %ld, want %d",
	    what, n1 - n0, refused ? 5 : 0);
	if (refused) {
		b = where(fd);
		tap(untouched(fd, before, BUF), "%s: no byte moved into the buffer", what);
		/* what the four reads would have written: still the fill */
		bar_check(fd, &b, len, 4 * len, 0, 0x3c);
	} else {
		landed(fd, len, base + 128, len, what);
	}

	/* out of the BAR for good again: the registration goes on */
	b = (struct p2pgpu_buf){ .arg = P2PGPU_EVICT_STAY };
	ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);
	ret = ret ?: reg_read(id, 6 * len, base + 768, len, &path);
	tap(!ret && path == P2PNVME_PATH_DMABUF_HOST,
	    "%s: evicted for good again, the registration goes on in host memory (%s, path %u)",
	    what, strerror(-ret), path);
	unreg(id);
	close(fd);
	free(before);
}

/*
 * The static-importer trap (amdgpu's pin in GTT beside a static importer;
 * xe's pin in TT, always on 6.12): P2P required is refused with
 * -EREMOTEIO, at registration and per transfer, and moves no byte; without
 * it the path says host.
 */
static void require_trap(uint32_t p, uint32_t flags, uint64_t base)
{
	const char *kind = flags & P2PGPU_EXPORT_F_XE_PIN_TT ? "xe (6.12's pin: TT)" :
			   names[p];
	struct p2pgpu_buf b = { .off = 0, .len = BUF, .arg = 0x70 + p };
	struct p2pnvme_buf_reg r = { 0 };
	unsigned char *before = xalloc(BUF);
	uint64_t w = 111000 + 256 * p + (flags ? 128 : 0);
	uint32_t id = 0, path;
	int fd, ret;

	fd = export(p, flags, BUF, NULL);
	ret = fd < 0 ? fd : buf_op(P2PGPU_IOC_STATIC_ATTACH, fd, &b);
	b = fd < 0 ? b : where(fd);
	tap(!ret && b.where == P2PGPU_WHERE_HOST, "%s: a static importer pinned it in host memory (%s)",
	    kind, strerror(-ret));
	if (ret)
		kt_fail("%s: no export with a static importer to go on with", kind);
	b = (struct p2pgpu_buf){ .off = 0, .len = BUF, .arg = 0x70 + p };
	buf_op(P2PGPU_IOC_FILL, fd, &b);
	cpu_read(fd, 0, before, BUF);

	ret = reg_dmabuf_ex(fd, BUF, P2PNVME_BUF_F_REQUIRE_P2P, &id, NULL);
	tap(ret == -EREMOTEIO, "%s: registration with P2P required refused: %s", kind,
	    strerror(-ret));
	if (!ret)
		unreg(id);
	ret = reg_dmabuf_ex(fd, BUF, 0, &id, &r);
	if (swiotlb)
		tap(ret == -EOPNOTSUPP, "%s: registered without it%s", kind, host_note());
	else
		tap(!ret && r.path == P2PNVME_PATH_DMABUF_HOST && !r.owner[0],
		    "%s: registered without it: dmabuf-host, no owner (%s, path %u, owner '%s')",
		    kind, strerror(-ret), r.path, r.owner);
	if (!ret) {
		ret = reg_read_f(id, 0, base + 11264, QLEN, P2PNVME_IO_F_REQUIRE_P2P, &path);
		tap(ret == -EREMOTEIO && untouched(fd, before, BUF),
		    "%s: registered read requiring P2P refused (%s), the buffer untouched", kind,
		    strerror(-ret));
		unreg(id);
	} else {
		tap(1, "%s: registered read requiring P2P refused # SKIP not registered (%s)",
		    kind, strerror(-ret));
	}
	ret = dmabuf_io_f(P2PNVME_OP_READ, fd, 0, base + 11264, QLEN, P2PNVME_IO_F_REQUIRE_P2P,
			  &path);
	tap(ret == -EREMOTEIO && untouched(fd, before, BUF),
	    "%s: per-I/O read requiring P2P refused (%s), the buffer untouched", kind,
	    strerror(-ret));
	hostcheck("absent %llu nvme0@%llu %s", (unsigned long long)QLEN,
		  (unsigned long long)((base + 11264) * LBA), bar);
	/* the image at @w zeroed, then a write requiring P2P from host memory */
	{
		struct p2pnvme_io z = { .argsz = sizeof(z), .op = P2PNVME_OP_WRITE_ZEROES,
					.slba = w, .len = 64 * KIB };

		ret = xfer(&z);
	}
	ret = ret ?: dmabuf_io_f(P2PNVME_OP_WRITE, fd, 0, w, 64 * KIB, P2PNVME_IO_F_REQUIRE_P2P,
				 NULL);
	tap(ret == -EREMOTEIO, "%s: per-I/O write requiring P2P refused: %s", kind,
	    strerror(-ret));
	hostcheck("fill 65536 nvme0@%llu 0x00", (unsigned long long)(w * LBA));
	buf_op(P2PGPU_IOC_STATIC_DETACH, fd, &b);
	close(fd);
	free(before);
}

struct progress2 {
	int stop, evicted, reads, fails_other, refused;
	int first_refused, last_ok;	/* read numbers */
	int after, after_refused;	/* reads begun once the eviction returned */
};

/*
 * Registered reads that require P2P keep going while the buffer is evicted
 * for good (VRAM under lasting pressure): the reads before the eviction
 * succeed, those after fail with -EREMOTEIO and move no byte; a
 * registration without the requirement goes on as dmabuf-host; once VRAM
 * is free again the buffer moves back and P2P reads go again.
 */
static void require_stream(uint64_t base)
{
	const uint64_t chunk = 64 * KIB, nchunk = BUF / chunk;
	unsigned char *before = xalloc(BUF);
	struct p2pgpu_buf b = { .arg = P2PGPU_EVICT_STAY };
	int fd, status = 0, at, after, ret;
	uint32_t id_req = 0, id_any = 0, path;
	struct progress2 *pr;
	pid_t pid;

	if (refused)
		kt_skip("P2P refused: amdgpu's attach keeps the buffer in host memory for p2pnvme, no P2P stream to evict (host_only() asserts the refusals)");
	fd = export(P2PGPU_AMDGPU, 0, BUF, NULL);
	pr = mmap(NULL, sizeof(*pr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || pr == MAP_FAILED ||
	    reg_dmabuf_ex(fd, BUF, P2PNVME_BUF_F_REQUIRE_P2P, &id_req, NULL) ||
	    reg_dmabuf_ex(fd, BUF, 0, &id_any, NULL))
		kt_fail("amdgpu: P2P-required stream: set up");
	memset(pr, 0, sizeof(*pr));
	pr->first_refused = -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int r;

		for (r = 0; !__atomic_load_n(&pr->stop, __ATOMIC_ACQUIRE); r++) {
			int after = __atomic_load_n(&pr->evicted, __ATOMIC_ACQUIRE);
			uint64_t k = r % nchunk;
			int e = reg_read(id_req, k * chunk, base + k * (chunk / LBA), chunk, NULL);

			pr->after += after;
			pr->after_refused += after && e == -EREMOTEIO;
			if (e == -EREMOTEIO) {
				if (pr->first_refused < 0)
					pr->first_refused = r;
				pr->refused++;
			} else if (e) {
				if (pr->fails_other++ < 3)
					printf("    # read %d failed: %s\n", r, strerror(-e));
			} else {
				pr->last_ok = r;
			}
			__atomic_fetch_add(&pr->reads, 1, __ATOMIC_RELEASE);
		}
		fflush(stdout);
		_exit(0);
	}
	{
		int i;

		for (i = 0; i < 20000 && __atomic_load_n(&pr->reads, __ATOMIC_ACQUIRE) < 8; i++)
			usleep(1000);
	}
	ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);
	__atomic_store_n(&pr->evicted, 1, __ATOMIC_RELEASE);
	at = __atomic_load_n(&pr->reads, __ATOMIC_ACQUIRE);
	{
		int i;

		for (i = 0; i < 20000 && __atomic_load_n(&pr->reads, __ATOMIC_ACQUIRE) < at + 8; i++)
			usleep(1000);
	}
	__atomic_store_n(&pr->stop, 1, __ATOMIC_RELEASE);
	waitpid(pid, &status, 0);
	after = pr->after;
	tap(!ret && b.where == P2PGPU_WHERE_HOST,
	    "amdgpu: evicted for good in the middle of P2P-required reads (%s)", strerror(-ret));
	tap(WIFEXITED(status) && !pr->fails_other && pr->after_refused == after && after >= 8 &&
	    pr->last_ok < pr->first_refused,
	    "amdgpu: P2P-required stream: %d reads ok before the move, then all %d refused (EREMOTEIO; %d begun after it returned), no other error",
	    pr->first_refused, pr->refused, after);
	/* a read of other LBAs that requires P2P moves no byte */
	cpu_read(fd, 0, before, BUF);
	ret = reg_read(id_req, 0, base + 12288, QLEN, &path);
	tap(ret == -EREMOTEIO && untouched(fd, before, BUF),
	    "amdgpu: P2P-required read after the move refused (%s), the buffer untouched",
	    strerror(-ret));
	hostcheck("absent %llu nvme0@%llu %s", (unsigned long long)QLEN,
		  (unsigned long long)((base + 12288) * LBA), bar);
	/* without the requirement it goes on through host memory */
	ret = reg_read(id_any, 0, base + 12288, QLEN, &path);
	if (swiotlb) {
		tap(ret == -EOPNOTSUPP, "amdgpu: without it, host memory under swiotlb refused: %s",
		    strerror(-ret));
	} else {
		tap(!ret && path == P2PNVME_PATH_DMABUF_HOST,
		    "amdgpu: the same read without the requirement goes on as dmabuf-host (%s, path %u)",
		    strerror(-ret), path);
	}
	moved(ret, fd, 0, base + 12288, QLEN, NULL, "amdgpu: registered read, dmabuf-host");
	/*
	 * VRAM free again. The registration keeps its mapping until the
	 * exporter moves the buffer: another peer2peer map (here a per-I/O
	 * read; the GPU's own use) validates it back into VRAM, which
	 * invalidates the registration, and its next read is P2P again.
	 */
	b.arg = P2PGPU_EVICT_ALLOW;
	buf_op(P2PGPU_IOC_EVICT, fd, &b);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 2 * QLEN, base + 13312, QLEN, &path);
	b = where(fd);
	tap(!ret && path == P2PNVME_PATH_DMABUF && b.where == P2PGPU_WHERE_BAR,
	    "amdgpu: a per-I/O read moves it back into VRAM (%s, in %s)", strerror(-ret),
	    place(&b));
	ret = reg_read(id_req, QLEN, base + 12800, QLEN, &path);
	b = where(fd);
	tap(!ret && path == P2PNVME_PATH_DMABUF && b.where == P2PGPU_WHERE_BAR,
	    "amdgpu: back in VRAM, the P2P-required read goes again (%s, in %s)", strerror(-ret),
	    place(&b));
	moved(ret, fd, QLEN, base + 12800, QLEN, NULL, "amdgpu: P2P-required read, back in VRAM");
	unreg(id_req);
	unreg(id_any);
	munmap(pr, sizeof(*pr));
	close(fd);
	free(before);
}

/* ---- the other direction: p2pbar's exports imported as GPU drivers do ---- */

static int import(int fd, uint32_t flags, struct p2pgpu_import *im)
{
	*im = (struct p2pgpu_import){ .fd = fd, .flags = flags };
	return ioctl(gpu, P2PGPU_IOC_IMPORT, im) ? -errno : 0;
}

/*
 * p2pbar's export offered to a static importer (NVIDIA's kind:
 * dma_buf_attach()) is refused, with a log line the guest script finds; to
 * amdgpu's dynamic peer2peer importer it maps (the BAR's bus address: one
 * switch), and the provider's unbind reaches it as an invalidation, after
 * which the dma-buf maps no more (-ENODEV).
 */
static void import_p2pbar(void)
{
	struct p2pbar_export e = { .argsz = sizeof(e), .size = BUF,
				   .flags = P2PBAR_EXPORT_F_CLOEXEC };
	char prov[64], path[128];
	struct p2pgpu_import im;
	int pfd, ret;
	double t;

	if (!bardev)
		kt_skip("the profile has no second ivshmem function for p2pbar");
	pfd = open(bardev, O_RDWR | O_CLOEXEC);
	if (pfd < 0 || ioctl(pfd, P2PBAR_IOC_EXPORT, &e))
		kt_fail("p2pbar exports 1 MiB: %s", strerror(errno));
	ret = import(e.fd, 0, &im);
	tap(ret == -EOPNOTSUPP, "p2pbar's export, static importer (NVIDIA's dma_buf_attach()): refused, %s",
	    strerror(-ret));
	ret = import(e.fd, P2PGPU_IMPORT_F_DYNAMIC, &im);
	tap(!ret && im.nents >= 1 && im.dma_len == BUF,
	    "p2pbar's export, amdgpu's dynamic peer2peer importer: mapped (%s, %u segments, %llu bytes)",
	    strerror(-ret), im.nents, (unsigned long long)im.dma_len);
	if (ret)
		kt_fail("no dynamic import to go on with");
	tap(im.dma_addr == e.bus_addr, "its mapping starts at the BAR's bus address %#llx (%#llx)",
	    (unsigned long long)e.bus_addr, (unsigned long long)im.dma_addr);
	/* the provider goes: the importer is told, the unbind returns */
	sysfs_function("p2pbar/p2pbar0", prov, sizeof(prov));
	close(pfd);
	pfd = -1;
	t = now();
	ret = sysfs_write("/sys/bus/pci/drivers/p2pbar/unbind", prov);
	t = now() - t;
	tap(!ret && t < 5, "p2pbar unbinds from %s with the dynamic import mapped, in %.1f s (%s)",
	    prov, t, strerror(-ret));
	ret = import(e.fd, P2PGPU_IMPORT_F_DYNAMIC, &im);
	tap(ret == -ENODEV, "the importer's next map after the revocation: %s", strerror(-ret));
	snprintf(path, sizeof(path), "%s", prov);
	ioctl(gpu, P2PGPU_IOC_IMPORT_RELEASE, &im);
	close(e.fd);
	sysfs_write("/sys/bus/pci/drivers_probe", path);	/* p2pbar again (driver_override) */
}

/* ---- ordering with GPU work ---- */

static int reg_io(uint32_t op, uint32_t id, uint64_t off, uint64_t slba, uint64_t len,
		  uint32_t flags, uint32_t *path);

/* a GPU job writing @byte to @len bytes at @off after @ms, behind a fence of @usage */
static int gpu_job(int fd, uint32_t usage, uint64_t off, uint64_t len, int byte, uint32_t ms)
{
	struct p2pgpu_job j = { .fd = fd, .usage = usage, .off = off, .len = len, .byte = byte,
				.delay_ms = ms };

	return ioctl(gpu, P2PGPU_IOC_JOB, &j) ? -errno : 0;
}

/* has every write fence of the dma-buf signalled (poll(POLLIN), as dma_buf_poll())? */
static int writes_done(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

/*
 * p2pnvme orders its transfers after the exporter's KERNEL fences (a
 * move's copy) only, as the RDMA core does: a GPU job still writing the
 * buffer (its fence DMA_RESV_USAGE_WRITE, unsignalled) does not hold an
 * NVMe write from it, which sends the bytes there before the job (the
 * application synchronises: dma_buf poll() or a sync_file export,
 * Documentation/dmabuf.rst, "Ordering with GPU work"). amdgpu's buffer,
 * filled with 0x11; a job writes 0xa5 after 2 s: the per-I/O write
 * issued at once carries 0x11, one issued after poll(POLLIN) 0xa5; a
 * registered write during a second job (0x5a) carries 0xa5. Where the
 * kernel refuses P2P (amdgpu's attach clears peer2peer) the first map
 * moves the buffer to GTT, and a move waits for every fence: that write
 * carries the job's bytes; the rest as above. 6 cases.
 */
static void ordering(void)
{
	const uint64_t w = 120000, len = 64 * KIB;
	struct p2pgpu_buf b = { .off = 0, .len = BUF, .arg = 0x11 };
	uint32_t id = 0;
	int fd, ret, reg, pending;

	fd = export(P2PGPU_AMDGPU, 0, BUF, NULL);
	if (fd < 0 || buf_op(P2PGPU_IOC_FILL, fd, &b))
		kt_fail("amdgpu: no export filled to go on with");
	ret = gpu_job(fd, P2PGPU_JOB_WRITE, 0, len, 0xa5, 2000);
	tap(!ret && !writes_done(fd, 0),
	    "a GPU job writing the buffer, its write fence not signalled yet (%s)", strerror(-ret));
	ret = dmabuf_io(P2PNVME_OP_WRITE, fd, 0, w, len, NULL);
	pending = !writes_done(fd, 0);
	if (refused) {
		/* not peer2peer: the map moves it to GTT, and a move waits for every fence */
		tap(!ret && !pending,
		    "a per-I/O NVMe write from it meanwhile: the exporter's move to host memory waited for the job (%s)",
		    strerror(-ret));
	} else {
		tap(!ret && pending,
		    "a per-I/O NVMe write from it meanwhile: done before the job's fence (%s, fence %s)",
		    strerror(-ret), pending ? "pending" : "signalled: the test cannot tell");
	}
	hostcheck("fill %llu nvme0@%llu %#x", (unsigned long long)len,
		  (unsigned long long)(w * LBA), refused ? 0xa5 : 0x11);
	tap(writes_done(fd, 10000), "poll(POLLIN) on the dma-buf waits for the job's write fence");
	ret = dmabuf_io(P2PNVME_OP_WRITE, fd, 0, w + 128, len, NULL);
	tap(!ret, "a per-I/O write after the wait: the job's bytes (%s)", strerror(-ret));
	hostcheck("fill %llu nvme0@%llu %#x", (unsigned long long)len,
		  (unsigned long long)((w + 128) * LBA), 0xa5);
	reg = reg_dmabuf(fd, BUF, &id);
	ret = reg ?: gpu_job(fd, P2PGPU_JOB_WRITE, 0, len, 0x5a, 2000);
	ret = ret ?: reg_io(P2PNVME_OP_WRITE, id, 0, w + 256, len, 0, NULL);
	pending = !writes_done(fd, 0);
	tap(!ret && pending,
	    "a registered write during a second job: done before its fence, as documented (%s, fence %s)",
	    strerror(-ret), pending ? "pending" : "signalled: the test cannot tell");
	hostcheck("fill %llu nvme0@%llu %#x", (unsigned long long)len,
		  (unsigned long long)((w + 256) * LBA), 0xa5);
	writes_done(fd, 10000);
	/* registered or not: its result says, not the id (0 is one) */
	ret = reg ? 0 : unreg(id);
	tap(!ret && writes_done(fd, 0),
	    "the jobs' fences all signalled, the registration gone (%s)", strerror(-ret));
	close(fd);
}

/* ---- the exporter's device unbound mid-stream ---- */

/* p2pgpu's word when NVIDIA's remove would have hung (p2pgpu_nv_remove_wait()) */
#define NV_GAVE_UP	"nvidia: remove gave up waiting for"

/*
 * debugfs's "buffers" line of the dma-buf registration in @owner's BAR:
 * its revoked and mapped columns; 0 if listed, -ENOENT if not, -errno
 */
static int reg_line(const char *owner, int *revoked, int *mapped)
{
	char path[256], line[512], kind[16], where[32], own[64];
	unsigned long long bytes, start;
	int ret = -ENOENT, busy;
	unsigned int segs;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/p2pnvme/%s/buffers", nvme_name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f))
		if (sscanf(line, "%15s %llu %llu %u %d %d %d %31s %63s", kind, &bytes, &start,
			   &segs, &busy, revoked, mapped, where, own) == 9 &&
		    !strcmp(kind, "dmabuf") && !strcmp(own, owner))
			ret = 0;
	fclose(f);
	return ret;
}

/*
 * NVIDIA's remove waits for every dma-buf of the GPU to be released
 * (p2pgpu_nv_remove_wait(), bounded there at 15 s; NVIDIA's for ever). An
 * nvidia buffer that only p2pnvme's registration holds: the GPU's unbind
 * completes without that wait's bound (p2pnvme revokes the registration as
 * the unbind begins and lets the dma-buf go then), the registration says
 * revoked and unmapped (debugfs), a later registered read fails with
 * -ENODEV and moves nothing, unregistering leaves nothing listed; then
 * the function binds again.
 */
static void nvidia_unbind_release(void)
{
	const uint64_t base = 74096;
	int fd, ret, revoked = -1, mapped = -1;
	struct p2pnvme_buf_reg r = { 0 };
	uint32_t id = 0;
	char drv[128];
	double t;

	fd = export(P2PGPU_NVIDIA, 0, BUF, NULL);
	if (fd < 0)
		kt_fail("nvidia: no export: %s", strerror(-fd));
	ret = reg_dmabuf_ex(fd, BUF, 0, &id, &r);
	tap(!ret && r.path == P2PNVME_PATH_DMABUF, "nvidia: registers in the BAR (%s, path %u)",
	    strerror(-ret), ret ? 0 : r.path);
	if (ret)
		kt_fail("nvidia: no registration to go on with");
	ret = reg_read(id, 0, base, QLEN, NULL);
	tap(!ret, "nvidia: a registered read before the unbind (%s)", strerror(-ret));
	/* only p2pnvme holds the dma-buf now */
	close(fd);
	close(gpu);
	gpu = -1;
	t = now();
	ret = sysfs_write("/sys/bus/pci/drivers/p2pgpu/unbind", gpu_name);
	t = now() - t;
	tap(!ret && !klog_has(NV_GAVE_UP) && t < 14,
	    "nvidia: the GPU's unbind (its remove waits for every dma-buf) was not held by p2pnvme: %.1f s (%s)",
	    t, strerror(-ret));
	ret = reg_line(gpu_name, &revoked, &mapped);
	tap(!ret && revoked == 1 && mapped == 0,
	    "nvidia: the registration says revoked, unmapped (debugfs: %s, revoked %d, mapped %d)",
	    strerror(-ret), revoked, mapped);
	ret = reg_read(id, 0, base + 512, QLEN, NULL);
	tap(ret == -ENODEV, "nvidia: a registered read after the unbind fails (%s)",
	    strerror(-ret));
	hostcheck("absent %llu nvme0@%llu %s", (unsigned long long)QLEN,
		  (unsigned long long)((base + 512) * LBA), bar);
	ret = unreg(id);
	tap(!ret && reg_line(gpu_name, &revoked, &mapped) == -ENOENT,
	    "nvidia: unregistered, nothing left listed (%s)", strerror(-ret));
	snprintf(drv, sizeof(drv), "%s", gpu_name);
	ret = sysfs_write("/sys/bus/pci/drivers/p2pgpu/bind", drv);
	tap(!ret, "p2pgpu binds %s again (%s)", gpu_name, strerror(-ret));
}

struct unbind_stream {
	int stop, unbound, reads, ok_after, fails_before, refused_after, enodev_after, other_after;
	int ok_host_after, unsupp_after;
};

/* reads of one registration until stopped, sorted by what they met */
static pid_t unbind_reader(struct unbind_stream *us, uint32_t id, uint32_t flags, uint64_t base)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid)
		return pid;
	for (int r = 0; !__atomic_load_n(&us->stop, __ATOMIC_ACQUIRE); r++) {
		int after = __atomic_load_n(&us->unbound, __ATOMIC_ACQUIRE);
		uint64_t k = r % 16;
		uint32_t path = 0;
		int e = reg_read_f(id, k * 64 * KIB, base + k * 128, 64 * KIB, flags, &path);

		if (!after) {
			/* the unbind under way: what comes after may come early */
			us->fails_before += e && e != -ENODEV && e != -EREMOTEIO &&
					    !(swiotlb && e == -EOPNOTSUPP);
		} else if (!e) {
			us->ok_after++;
			us->ok_host_after += path == P2PNVME_PATH_DMABUF_HOST;
		} else {
			us->refused_after += e == -EREMOTEIO;
			us->enodev_after += e == -ENODEV;
			us->unsupp_after += e == -EOPNOTSUPP;
			if (e != -EREMOTEIO && e != -ENODEV && e != -EOPNOTSUPP &&
			    us->other_after++ < 3)
				printf("    # read after the unbind: %s\n", strerror(-e));
		}
		__atomic_fetch_add(&us->reads, 1, __ATOMIC_RELEASE);
	}
	fflush(stdout);
	_exit(0);
}

static void wait_reads(struct unbind_stream *us, int n)
{
	int from = __atomic_load_n(&us->reads, __ATOMIC_ACQUIRE), i;

	for (i = 0; i < 30000 && __atomic_load_n(&us->reads, __ATOMIC_ACQUIRE) < from + n; i++)
		usleep(1000);
}

/*
 * p2pgpu's function is unbound while registered reads go on into an
 * nvidia buffer (static: never revoked) and an amdgpu one evicted at
 * unbind (P2PGPU_EXPORT_F_EVICT_AT_UNBIND: xe's xe_bo_pci_dev_remove_all()).
 * nvidia: p2pnvme revokes the registration itself when the function loses
 * its driver, after its commands end: later reads fail with -ENODEV,
 * per-I/O ones too, and nothing lands in the BAR. The evicted amdgpu one:
 * reads go on through host memory (dmabuf-host), those requiring P2P are
 * refused. A third, amdgpu as amdgpu is (its remove evicts nothing), stays
 * in the BAR of a function without a driver, nobody told: p2pnvme revokes
 * its registration once the unbind is over, and refuses a per-I/O read
 * and a new registration of it (-ENODEV: the memory is no longer its
 * driver's to give). The unbind is bounded; once every buffer is released
 * the function binds again.
 */
static void unbind_midstream(void)
{
	const uint64_t nbase = 70000, abase = 72048;
	struct unbind_stream *us;
	uint32_t idn = 0, ida = 0, idr = 0, ids = 0, path;
	pid_t pn = -1, pa = -1, pr = -1;
	int fdn, fda, fds, ret, st;
	char drv[128];
	double t;

	us = mmap(NULL, 3 * sizeof(*us), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	fdn = export(P2PGPU_NVIDIA, 0, BUF, NULL);
	fda = export(P2PGPU_AMDGPU, P2PGPU_EXPORT_F_EVICT_AT_UNBIND, BUF, NULL);
	/* amdgpu's own: neither moved nor revoked at unbind */
	fds = export(P2PGPU_AMDGPU, 0, BUF, NULL);
	if (us == MAP_FAILED || fdn < 0 || fda < 0 || fds < 0 ||
	    reg_dmabuf_ex(fdn, BUF, 0, &idn, NULL) || reg_dmabuf_ex(fds, BUF, 0, &ids, NULL) ||
	    reg_dmabuf_ex(fda, BUF, 0, &ida, NULL) ||
	    reg_dmabuf_ex(fda, BUF, P2PNVME_BUF_F_REQUIRE_P2P, &idr, NULL))
		kt_fail("unbind mid-stream: set up");
	/*
	 * NVIDIA's remove waits for every dma-buf of the GPU to be released:
	 * a user holding one holds the unbind. Only p2pnvme's registration
	 * holds it from here (the readers fork without it).
	 */
	close(fdn);
	memset(us, 0, 3 * sizeof(*us));
	pn = unbind_reader(&us[0], idn, 0, nbase);
	pa = unbind_reader(&us[1], ida, 0, abase);
	pr = unbind_reader(&us[2], idr, 0, abase);
	wait_reads(&us[0], 8);
	wait_reads(&us[1], 8);
	t = now();
	ret = sysfs_write("/sys/bus/pci/drivers/p2pgpu/unbind", gpu_name);
	t = now() - t;
	for (st = 0; st < 3; st++)
		__atomic_store_n(&us[st].unbound, 1, __ATOMIC_RELEASE);
	tap(!ret && t < 20, "p2pgpu's %s unbinds with registered reads in flight, in %.1f s (%s)",
	    gpu_name, t, strerror(-ret));
	for (st = 0; st < 3; st++)
		wait_reads(&us[st], 8);
	for (st = 0; st < 3; st++)
		__atomic_store_n(&us[st].stop, 1, __ATOMIC_RELEASE);
	waitpid(pn, &st, 0);
	waitpid(pa, &st, 0);
	waitpid(pr, &st, 0);
	tap(!us[0].fails_before && us[0].enodev_after >= 8 && !us[0].ok_after && !us[0].other_after,
	    "nvidia: no revoke, so p2pnvme revoked the registration: %d reads after the unbind, all ENODEV",
	    us[0].enodev_after);
	ret = reg_read(idn, 0, nbase + 4096, QLEN, NULL);
	tap(ret == -ENODEV, "nvidia: a registered read now: %s", strerror(-ret));
	tap(!klog_has(NV_GAVE_UP),
	    "nvidia: its remove was not held by p2pnvme's registration (no \"%s\" in the log)",
	    NV_GAVE_UP);
	hostcheck("absent %llu nvme0@%llu %s", (unsigned long long)QLEN,
		  (unsigned long long)((nbase + 4096) * LBA), bar);
	if (swiotlb) {
		tap(!us[1].fails_before && !us[1].ok_after && us[1].unsupp_after >= 8 &&
		    !us[1].other_after,
		    "amdgpu (evicted at unbind): host memory under swiotlb refused (%d EOPNOTSUPP)",
		    us[1].unsupp_after);
	} else {
		tap(!us[1].fails_before && us[1].ok_after >= 8 &&
		    us[1].ok_host_after == us[1].ok_after && !us[1].enodev_after &&
		    !us[1].other_after && !us[1].unsupp_after,
		    "amdgpu (evicted at unbind): %d reads after it went on as dmabuf-host",
		    us[1].ok_host_after);
	}
	tap(!us[2].fails_before && us[2].refused_after >= 8 && !us[2].ok_after &&
	    !us[2].other_after && !us[2].unsupp_after,
	    "amdgpu: those registered requiring P2P: %d refused (EREMOTEIO) after the unbind",
	    us[2].refused_after);
	if (swiotlb) {
		ret = -EOPNOTSUPP;
		tap(1, "amdgpu: a read after the unbind lands in host memory # SKIP %s",
		    "host memory under swiotlb refused");
	} else {
		ret = reg_read(ida, 0, abase + 4096, QLEN, &path);
		tap(!ret && path == P2PNVME_PATH_DMABUF_HOST,
		    "amdgpu: a read after the unbind lands in host memory (%s, path %u)",
		    strerror(-ret), path);
	}
	moved(ret, fda, 0, abase + 4096, QLEN, NULL, "amdgpu: read after the unbind");
	ret = reg_read(ids, 0, nbase + 8192, QLEN, NULL);
	tap(ret == -ENODEV,
	    "amdgpu left in VRAM at the unbind, importers not told: p2pnvme revoked it at the end of the unbind (%s)",
	    strerror(-ret));
	hostcheck("absent %llu nvme0@%llu %s", (unsigned long long)QLEN,
		  (unsigned long long)((nbase + 8192) * LBA), bar);
	{
		struct p2pgpu_buf b = where(fds);
		uint32_t id2 = 0;

		tap(b.where == P2PGPU_WHERE_BAR && b.moves == 0,
		    "amdgpu: its remove evicted nothing, the buffer is still in the BAR (%s, %u moves)",
		    place(&b), b.moves);
		ret = dmabuf_io(P2PNVME_OP_READ, fds, QLEN, nbase + 9216, QLEN, NULL);
		tap(ret == -ENODEV,
		    "amdgpu in the BAR of a function without a driver: a per-I/O read refused (%s: orphan)",
		    strerror(-ret));
		hostcheck("absent %llu nvme0@%llu %s", (unsigned long long)QLEN,
			  (unsigned long long)((nbase + 9216) * LBA), bar);
		ret = reg_dmabuf_ex(fds, BUF, 0, &id2, NULL);
		tap(ret == -ENODEV, "amdgpu in the BAR of a function without a driver: a new registration refused (%s)",
		    strerror(-ret));
		if (!ret)
			unreg(id2);
	}
	unreg(idn);
	unreg(ida);
	unreg(idr);
	unreg(ids);
	close(fda);
	close(fds);
	/* the BAR was held until the last buffer went: now it binds again */
	close(gpu);
	gpu = -1;
	snprintf(drv, sizeof(drv), "%s", gpu_name);
	ret = sysfs_write("/sys/bus/pci/drivers/p2pgpu/bind", drv);
	tap(!ret, "p2pgpu binds %s again once its buffers are released (%s)", gpu_name,
	    strerror(-ret));
	munmap(us, 3 * sizeof(*us));
}

/*
 * Where the kernel refuses P2P between the GPU's function and the
 * controller there is no registration in the GPU's BAR to revoke at the
 * unbind: nvidia's is refused (-EREMOTEIO), amdgpu's lives in host memory
 * (its attach cleared p2pnvme's peer2peer). Its registered reads go on
 * across the unbind (dmabuf-host); an amdgpu buffer nobody mapped stays in
 * VRAM (amdgpu's remove evicts nothing), an xe one is moved out
 * (xe_bo_pci_dev_remove_all()); an nvidia per-I/O read after it is
 * refused for the function without a driver first (-ENODEV); then the
 * function binds again.
 */
static void unbind_refused(void)
{
	const uint64_t nbase = 70000, abase = 72048;
	struct unbind_stream *us;
	struct p2pgpu_buf b;
	uint32_t idn = 0, ida = 0;
	int fdn, fda, fdv, fdx, fdo, ret, st;
	char drv[128];
	pid_t pa;
	double t;

	us = mmap(NULL, sizeof(*us), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fdn = export(P2PGPU_NVIDIA, 0, BUF, NULL);
	fda = export(P2PGPU_AMDGPU, 0, BUF, NULL);
	fdv = export(P2PGPU_AMDGPU, 0, BUF, NULL);	/* nobody maps it: in VRAM */
	fdx = export(P2PGPU_XE, 0, BUF, NULL);		/* likewise */
	/* likewise, and a peer2peer map keeps it there, whatever the kernel says */
	fdo = export(P2PGPU_AMDGPU, P2PGPU_EXPORT_F_NO_DISTANCE_CHECK, BUF, NULL);
	if (us == MAP_FAILED || fdn < 0 || fda < 0 || fdv < 0 || fdx < 0 || fdo < 0)
		kt_fail("unbind, P2P refused: set up");
	ret = reg_dmabuf_ex(fdn, BUF, 0, &idn, NULL);
	tap(ret == -EREMOTEIO, "nvidia, P2P refused: no registration in the BAR to revoke (%s)",
	    strerror(-ret));
	if (!ret)
		unreg(idn);
	/* NVIDIA's remove waits for every dma-buf: none held across the unbind */
	close(fdn);
	if (reg_dmabuf_ex(fda, BUF, 0, &ida, NULL))
		kt_fail("amdgpu: no registration in host memory to go on with");
	memset(us, 0, sizeof(*us));
	pa = unbind_reader(us, ida, 0, abase);
	wait_reads(us, 8);
	t = now();
	ret = sysfs_write("/sys/bus/pci/drivers/p2pgpu/unbind", gpu_name);
	t = now() - t;
	__atomic_store_n(&us->unbound, 1, __ATOMIC_RELEASE);
	tap(!ret && t < 20, "p2pgpu's %s unbinds with registered reads in host memory going, in %.1f s (%s)",
	    gpu_name, t, strerror(-ret));
	wait_reads(us, 8);
	__atomic_store_n(&us->stop, 1, __ATOMIC_RELEASE);
	waitpid(pa, &st, 0);
	tap(!us->fails_before && us->ok_after >= 8 && us->ok_host_after == us->ok_after &&
	    !us->refused_after && !us->enodev_after && !us->unsupp_after && !us->other_after,
	    "amdgpu, P2P refused: its reads went on across the unbind, %d after it, all dmabuf-host",
	    us->ok_host_after);
	b = where(fdv);
	tap(b.where == P2PGPU_WHERE_BAR && !b.moves,
	    "amdgpu: the buffer nobody mapped stayed in VRAM at the unbind, its remove evicts nothing (in %s)",
	    place(&b));
	b = where(fdx);
	tap(b.where == P2PGPU_WHERE_HOST,
	    "xe: the buffer nobody mapped was moved out of VRAM at the unbind, xe_bo_pci_dev_remove_all() (in %s)",
	    place(&b));
	ret = dmabuf_io(P2PNVME_OP_READ, fdo, 0, nbase + 4096, QLEN, NULL);
	tap(ret == -ENODEV,
	    "amdgpu left in VRAM, mapped there without the kernel's word: a per-I/O read now: its function has no driver, said first (%s)",
	    strerror(-ret));
	hostcheck("absent %llu nvme0@%llu %s", (unsigned long long)QLEN,
		  (unsigned long long)((nbase + 4096) * LBA), bar);
	unreg(ida);
	close(fdo);
	close(fda);
	close(fdv);
	close(fdx);
	/* the BAR was held until the last buffer went: now it binds again */
	close(gpu);
	gpu = -1;
	snprintf(drv, sizeof(drv), "%s", gpu_name);
	ret = sysfs_write("/sys/bus/pci/drivers/p2pgpu/bind", drv);
	tap(!ret, "p2pgpu binds %s again once its buffers are released (%s)", gpu_name,
	    strerror(-ret));
	munmap(us, sizeof(*us));
}

/* ---- registered I/O while the shrinker evicts (memory pressure) ---- */

/* io_uring without liburing (this program links none): just what it needs */
struct uring {
	int fd;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	unsigned char *sqes;		/* 128 bytes each (IORING_SETUP_SQE128) */
	unsigned char *cqes;		/* 32 bytes each (IORING_SETUP_CQE32) */
};

static int uring_setup(struct uring *u, unsigned int entries)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32 };
	size_t sq_len, cq_len;
	unsigned char *sq, *cq;

	u->fd = syscall(__NR_io_uring_setup, entries, &p);
	if (u->fd < 0)
		return -errno;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * 2 * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sq_len = cq_len = sq_len > cq_len ? sq_len : cq_len;
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd,
		  IORING_OFF_SQ_RING);
	cq = p.features & IORING_FEAT_SINGLE_MMAP ? sq :
	     mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd,
		  IORING_OFF_CQ_RING);
	u->sqes = mmap(NULL, p.sq_entries * 2 * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || u->sqes == MAP_FAILED)
		return -ENOMEM;
	u->sq_head = (unsigned int *)(sq + p.sq_off.head);
	u->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	u->sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	u->sq_array = (unsigned int *)(sq + p.sq_off.array);
	u->cq_head = (unsigned int *)(cq + p.cq_off.head);
	u->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	u->cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	u->cqes = cq + p.cq_off.cqes;
	return 0;
}

/* queue a P2PNVME_URING_CMD_IO (the caller keeps fewer in flight than the ring holds) */
static void uring_queue(struct uring *u, const struct p2pnvme_uring_cmd *uc, uint64_t tag)
{
	unsigned int tail = *u->sq_tail, idx = tail & *u->sq_mask;
	unsigned char *slot = u->sqes + (size_t)idx * 2 * sizeof(struct io_uring_sqe);
	struct io_uring_sqe *sqe = (struct io_uring_sqe *)slot;

	memset(slot, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = nvme;
	sqe->cmd_op = P2PNVME_URING_CMD_IO;
	sqe->user_data = tag;
	memcpy(slot + offsetof(struct io_uring_sqe, cmd), uc, sizeof(*uc));
	u->sq_array[idx] = idx;
	__atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

/* submit what is queued, wait up to @ms for @wait completions: -ETIME then */
static int uring_enter(struct uring *u, unsigned int submit, unsigned int wait, int ms)
{
	struct __kernel_timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000LL };
	struct io_uring_getevents_arg arg = { .ts = (uint64_t)(uintptr_t)&ts };
	long r = syscall(__NR_io_uring_enter, u->fd, submit, wait,
			 IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg));

	return r < 0 ? -errno : (int)r;
}

/* one completion, if there is one: 1 */
static int uring_reap(struct uring *u, uint64_t *tag, int *res)
{
	unsigned int head = *u->cq_head;
	const struct io_uring_cqe *cqe;

	if (head == __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE))
		return 0;
	cqe = (const struct io_uring_cqe *)(u->cqes + (size_t)(head & *u->cq_mask) *
					    2 * sizeof(*cqe));
	*tag = cqe->user_data;
	*res = cqe->res;
	__atomic_store_n(u->cq_head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

/*
 * The buffer: 8 chunks of 64 KiB read from the image again and again
 * (chunk k from LBA rbase + 128 k), 8 more filled with a pattern each and
 * written again and again to 64 slots of the image (slot s from chunk
 * 8 + s % 8; the ioctl's writes take slots 0-31, io_uring's 32-63).
 */
#define SHR_CHUNK	(64 * KIB)
#define SHR_LBAS	(SHR_CHUNK / LBA)
#define SHR_READS	8
#define SHR_SLOTS	64
#define SHR_QD		8	/* io_uring requests in flight */

static uint32_t shr_byte(uint32_t p, unsigned int chunk)
{
	return 0x80 | (p << 4) | (chunk & 7);
}

/* what one submitter saw: every transfer's result, sorted */
struct shr_side {
	int ok, again, other, hung, unsupported;
	double max_s;
	uint64_t slots;		/* bit s: slot s written successfully at least once */
};

struct shr_state {
	int stop;
	struct shr_side sub, ring;
};

static double shr_bound(void)
{
	const char *s = getenv("P2P_TIMEOUT_SCALE");

	/* a transfer may wait out a move's copy and the moves of others */
	return 20.0 * (s && atof(s) > 1 ? 3 : 1);
}

/* a result of a registered transfer: 0, or "moved again and again" */
static void shr_count(struct shr_side *sd, int res, const char *who)
{
	if (!res) {
		sd->ok++;
	} else if (res == -EAGAIN || res == -EBUSY) {
		/*
		 * The dma-buf moved between lookup and arming 8 times: nothing
		 * sent, the caller tries again (P2PNVME_IOC_SUBMIT's entry and
		 * io_uring's CQE say -EAGAIN; 6.12's io_uring, which would issue
		 * it again from the SQ ring, -EBUSY: uring.c)
		 */
		sd->again++;
	} else if (sd->other++ < 3) {
		printf("    # %s: a transfer ended with %s\n", who, strerror(-res));
	}
}

/*
 * The @n-th read (chunk n % 8) or write (slot @slot0 + n % 32, from chunk
 * 8 + slot % 8) of a submitter
 */
static struct p2pnvme_io shr_io(uint32_t id, int write, unsigned int n, uint64_t rbase,
				uint64_t wbase, unsigned int slot0)
{
	unsigned int k = n % SHR_READS, s = slot0 + n % (SHR_SLOTS / 2);

	return (struct p2pnvme_io){
		.argsz = sizeof(struct p2pnvme_io), .flags = P2PNVME_IO_F_REGISTERED,
		.buf_id = id, .len = SHR_CHUNK,
		.op = write ? P2PNVME_OP_WRITE : P2PNVME_OP_READ,
		.slba = write ? wbase + s * SHR_LBAS : rbase + k * SHR_LBAS,
		.addr = write ? (SHR_READS + s % 8) * SHR_CHUNK : k * SHR_CHUNK,
	};
}

/* P2PNVME_IOC_SUBMIT: batches of two reads and two writes until stopped */
static void shr_submitter(struct shr_state *st, uint32_t id, uint64_t rbase, uint64_t wbase)
{
	struct shr_side *sd = &st->sub;
	unsigned int n[2] = { 0, 0 }, i;

	while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
		struct p2pnvme_io ios[4];
		struct p2pnvme_submit s = { .argsz = sizeof(s), .nr = 4, .ios = (uintptr_t)ios };
		double t = now();
		int ret;

		for (i = 0; i < 4; i++)
			ios[i] = shr_io(id, i & 1, n[i & 1]++, rbase, wbase, 0);
		ret = ioctl(nvme, P2PNVME_IOC_SUBMIT, &s) ? -errno : 0;
		t = now() - t;
		sd->max_s = t > sd->max_s ? t : sd->max_s;
		if (ret && s.failed < 4) {
			/* nothing was submitted: one answer for the batch */
			shr_count(sd, ios[s.failed].result ?: ret, "P2PNVME_IOC_SUBMIT");
			continue;
		}
		for (i = 0; i < 4; i++) {
			shr_count(sd, ios[i].result, "P2PNVME_IOC_SUBMIT");
			if (!ios[i].result && (i & 1))
				sd->slots |= 1ULL << ((ios[i].slba - wbase) / SHR_LBAS);
		}
	}
}

/* io_uring: SHR_QD registered reads and writes in flight until stopped */
static void shr_ringer(struct shr_state *st, uint32_t id, uint64_t rbase, uint64_t wbase)
{
	struct shr_side *sd = &st->ring;
	struct p2pnvme_io ios[SHR_QD];
	double t0[SHR_QD], bound = shr_bound();
	unsigned int n[2] = { 0, 0 }, out = 0, i;
	int busy[SHR_QD] = { 0 }, res, ret;
	struct uring u = { .fd = -1 };
	uint64_t tag;

	ret = uring_setup(&u, 2 * SHR_QD);
	if (ret == -ENOSYS) {
		sd->unsupported = 1;	/* a kernel without io_uring */
		return;
	}
	if (ret) {
		printf("    # io_uring_setup: %s\n", strerror(-ret));
		sd->other++;
		return;
	}
	for (;;) {
		int stop = sd->unsupported || __atomic_load_n(&st->stop, __ATOMIC_ACQUIRE);
		unsigned int pending;

		for (i = 0; !stop && i < SHR_QD; i++) {
			struct p2pnvme_uring_cmd uc;

			if (busy[i])
				continue;
			/* even slots read, odd ones write */
			ios[i] = shr_io(id, i & 1, n[i & 1]++, rbase, wbase, SHR_SLOTS / 2);
			uc = (struct p2pnvme_uring_cmd){ .flags = ios[i].flags, .op = ios[i].op,
							 .slba = ios[i].slba, .len = ios[i].len,
							 .addr = ios[i].addr, .buf_id = id };
			uring_queue(&u, &uc, i);
			t0[i] = now();
			busy[i] = 1;
			out++;
		}
		if (!out)
			break;
		pending = *u.sq_tail - __atomic_load_n(u.sq_head, __ATOMIC_ACQUIRE);
		ret = uring_enter(&u, pending, 1, (int)(bound * 1000));
		if (ret == -ETIME || (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)) {
			printf("    # io_uring_enter: %s with %u requests in flight\n", strerror(-ret),
			       out);
			sd->hung++;
			break;
		}
		while (uring_reap(&u, &tag, &res)) {
			double t;

			if (tag >= SHR_QD || !busy[tag]) {
				sd->other++;
				continue;
			}
			t = now() - t0[tag];
			sd->max_s = t > sd->max_s ? t : sd->max_s;
			busy[tag] = 0;
			out--;
			/* p2pnvme without io_uring passthrough (before 6.6): nothing to stream */
			if (res == -EOPNOTSUPP && !sd->ok) {
				sd->unsupported = 1;
				continue;
			}
			shr_count(sd, res, "io_uring");
			if (!res && ios[tag].op == P2PNVME_OP_WRITE)
				sd->slots |= 1ULL << ((ios[tag].slba - wbase) / SHR_LBAS);
		}
	}
	close(u.fd);
}

static int drop_caches(void)
{
	return sysfs_write("/proc/sys/vm/drop_caches", "2");
}

static int shrink_now(uint32_t flags, struct p2pgpu_shrink *s)
{
	*s = (struct p2pgpu_shrink){ .flags = flags };
	return ioctl(gpu, P2PGPU_IOC_SHRINK, s) ? -errno : 0;
}

/*
 * Registered reads and writes (P2PNVME_IOC_SUBMIT in one child, io_uring
 * in another) into one amdgpu or xe buffer while the parent applies memory
 * pressure: the exporter's shrinker, again and again, as direct reclaim
 * runs it (no-wait passes), as kswapd does (passes that wait for the
 * fences after telling the importers) and through the kernel's own
 * registration (drop_caches). Each eviction moves the buffer to host
 * memory; the next transfer maps it again, which moves it back into VRAM.
 *
 * Asserted: evictions happened; every transfer ended with 0 or -EAGAIN
 * (-EBUSY through 6.12's io_uring): moved 8 times between lookup and
 * arming, nothing sent; none took longer than a bound and the stream ended
 * (no hang); p2pnvme's registered I/O put fences in the reservation object
 * (the no-wait passes skipped the buffer for them, or the waiting passes
 * waited for them); the importers' invalidation never slept inside the
 * shrinker; every chunk read holds the image's bytes (host-checked in the
 * BAR), the written chunks kept their pattern, and every slot written
 * holds its chunk's pattern (read back; the first ones host-checked in the
 * image). On the debug kernel the bench fails the run on any lockdep
 * report (qemu/hostcheck.py): the shrinker's passes hold lockdep's
 * fs_reclaim, as reclaim does.
 *
 * p2pnvme before the fix: its invalidation waited for the busy requests
 * inside the shrinker (inval_slept > 0, "an importer's invalidation slept
 * in the shrinker" in the log) and its registered I/O published no fence
 * (no skip, no wait for p2pnvme's fences: 0); a submitter that entered
 * reclaim allocating a list block while busy could wait on itself.
 */
static void shrinker_stream(uint32_t p)
{
	const uint64_t rbase = 16384ULL * p + 8192, wbase = 80000 + 10000ULL * (p - 2);
	const uint64_t rlen = SHR_READS * SHR_CHUNK;
	struct p2pgpu_shrink s0, s1, s;
	unsigned char *got = xalloc(SHR_CHUNK), *want = xalloc(SHR_CHUNK);
	struct shr_state *st;
	double t0, t, bound = shr_bound(), max_shrink = 0;
	int fd, ret, i, status, bad, nslots, checks = 0, drops = 0, drop_err = 0, passes = 0;
	uint32_t id = 0;
	pid_t pa, pb;
	uint64_t slots;

	if (refused)
		kt_skip("P2P refused: %s keeps the buffer in host memory for p2pnvme, nothing in VRAM to evict",
			names[p]);
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fd = export(p, P2PGPU_EXPORT_F_SHRINKABLE, BUF, NULL);
	ret = fd < 0 ? fd : 0;
	for (i = 0; !ret && i < 8; i++) {
		struct p2pgpu_buf b = { .off = (SHR_READS + i) * SHR_CHUNK, .len = SHR_CHUNK,
					.arg = shr_byte(p, i) };

		ret = buf_op(P2PGPU_IOC_FILL, fd, &b);
	}
	ret = ret ?: reg_dmabuf(fd, BUF, &id);
	ret = ret ?: shrink_now(0, &s0);
	s = s0;
	tap(!ret && st != MAP_FAILED,
	    "%s: a shrinkable export, its upper half filled, registered; the shrinker answers (%s)",
	    names[p], strerror(-ret));
	if (ret || st == MAP_FAILED)
		kt_fail("%s: shrinker stream: set up", names[p]);
	memset(st, 0, sizeof(*st));
	fflush(stdout);
	pa = fork();
	if (pa == 0) {
		shr_submitter(st, id, rbase, wbase);
		fflush(stdout);
		_exit(0);
	}
	pb = fork();
	if (pb == 0) {
		shr_ringer(st, id, rbase, wbase);
		fflush(stdout);
		_exit(0);
	}
	/* memory pressure: at least 3 s and 12 evictions, at most 12 s (debug: 36 s) */
	t0 = now();
	for (i = 0; ; i++) {
		double dt = now() - t0;

		if (dt > bound * 0.6 || (dt > 3 && s.evicted - s0.evicted >= 12))
			break;
		if (i % 8 == 7) {
			drop_err = drop_caches() ?: drop_err;
			drops++;
		} else {
			t = now();
			ret = shrink_now(i % 4 == 3 ? P2PGPU_SHRINK_WAIT : 0, &s);
			t = now() - t;
			max_shrink = t > max_shrink ? t : max_shrink;
			passes += !ret;
		}
		usleep(10000);
	}
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	waitpid(pa, &status, 0);
	bad = !WIFEXITED(status) || WEXITSTATUS(status);
	waitpid(pb, &status, 0);
	bad |= !WIFEXITED(status) || WEXITSTATUS(status);
	shrink_now(0, &s1);
	printf("    # %d shrinker passes (longest %.0f ms), %d drop_caches%s%s; totals: %llu evicted, %llu skipped busy, %llu skipped moving, %llu locked, %llu no memory; %llu invalidations, %llu slept, longest %llu us; %llu waits for an importer, longest %llu ms\n",
	       passes, max_shrink * 1000, drops, drop_err ? ": " : "",
	       drop_err ? strerror(-drop_err) : "",
	       (unsigned long long)(s1.evicted - s0.evicted),
	       (unsigned long long)(s1.skipped_busy - s0.skipped_busy),
	       (unsigned long long)(s1.skipped_moving - s0.skipped_moving),
	       (unsigned long long)(s1.skipped_locked - s0.skipped_locked),
	       (unsigned long long)(s1.skipped_nomem - s0.skipped_nomem),
	       (unsigned long long)(s1.invalidations - s0.invalidations),
	       (unsigned long long)(s1.inval_slept - s0.inval_slept),
	       (unsigned long long)s1.inval_max_ns / 1000,
	       (unsigned long long)(s1.waited_importer - s0.waited_importer),
	       (unsigned long long)s1.wait_max_ns / 1000000);
	diag_where(fd, "after the stream");

	tap(s1.evicted - s0.evicted >= 3,
	    "%s: the shrinker evicted the buffer %llu times with registered I/O going", names[p],
	    (unsigned long long)(s1.evicted - s0.evicted));
	tap(!bad && !st->sub.other && st->sub.ok >= 8,
	    "%s: P2PNVME_IOC_SUBMIT: every registered transfer ended with 0 or EAGAIN (%d ok, %d EAGAIN, %d other)",
	    names[p], st->sub.ok, st->sub.again, st->sub.other);
	if (st->ring.unsupported)
		tap(1, "%s: io_uring: every registered transfer ended with 0 or EAGAIN/EBUSY # SKIP no io_uring passthrough on this kernel",
		    names[p]);
	else
		tap(!bad && !st->ring.other && !st->ring.hung && st->ring.ok >= 8,
		    "%s: io_uring: every registered transfer ended with 0 or EAGAIN/EBUSY (%d ok, %d EAGAIN/EBUSY, %d other)",
		    names[p], st->ring.ok, st->ring.again, st->ring.other);
	tap(!st->ring.hung && st->sub.max_s < bound && st->ring.max_s < bound && max_shrink < bound,
	    "%s: no hang: the longest batch took %.2f s, the longest io_uring transfer %.2f s, the longest shrinker pass %.2f s (bound %.0f s)",
	    names[p], st->sub.max_s, st->ring.max_s, max_shrink, bound);
	tap(s1.skipped_busy - s0.skipped_busy + s1.waited_importer - s0.waited_importer >= 1,
	    "%s: registered I/O is fenced: the no-wait passes skipped the buffer for p2pnvme's fences %llu times, the waiting ones waited for them %llu times",
	    names[p], (unsigned long long)(s1.skipped_busy - s0.skipped_busy),
	    (unsigned long long)(s1.waited_importer - s0.waited_importer));
	tap(s1.invalidations > s0.invalidations && s1.inval_slept == s0.inval_slept,
	    "%s: p2pnvme's invalidation never waited inside the shrinker (%llu of %llu slept)",
	    names[p], (unsigned long long)(s1.inval_slept - s0.inval_slept),
	    (unsigned long long)(s1.invalidations - s0.invalidations));

	/* the bytes: each read chunk holds its LBAs, wherever the buffer is now */
	landed(fd, 0, rbase, rlen, "shrinker stream: the chunks read");
	for (i = 0, ret = 0; !ret && i < 8; i++) {
		unsigned int j;

		ret = cpu_read(fd, (SHR_READS + i) * SHR_CHUNK, got, SHR_CHUNK);
		for (j = 0; !ret && j < SHR_CHUNK; j++)
			ret = got[j] != shr_byte(p, i) ? -EILSEQ : 0;
	}
	tap(!ret, "%s: the written chunks still hold their patterns (%s)", names[p],
	    strerror(-ret));
	slots = st->sub.slots | st->ring.slots;
	for (i = 0, ret = 0, nslots = 0; !ret && i < SHR_SLOTS; i++) {
		uint64_t slba = wbase + i * SHR_LBAS;
		unsigned int j;

		if (!(slots >> i & 1))
			continue;
		ret = host_read(slba, SHR_CHUNK, want);
		for (j = 0; !ret && j < SHR_CHUNK; j++)
			ret = want[j] != shr_byte(p, i) ? -EILSEQ : 0;
		if (ret)
			printf("    # slot %d (LBA %llu): %s\n", i, (unsigned long long)slba,
			       strerror(-ret));
		nslots++;
		/* the host's view of the first two of each submitter's */
		if (!ret && (i < 32 ? checks < 2 : checks < 4)) {
			hostcheck("fill 65536 nvme0@%llu %#x", (unsigned long long)(slba * LBA),
				  shr_byte(p, i));
			checks++;
		}
	}
	tap(!ret && (st->sub.slots & 0xffffffffULL) && (st->ring.unsupported || st->ring.slots >> 32),
	    "%s: each of the %d slots written holds its chunk's pattern (%s)", names[p], nslots,
	    strerror(-ret));
	unreg(id);
	close(fd);
	munmap(st, sizeof(*st));
	free(got);
	free(want);
}

/* ---- the drivers' own behaviour (../shared/notes/gpu-reality.md) ---- */

/* a registered transfer of any direction, with @flags (P2PNVME_IO_F_PRP, _SGL) */
static int reg_io(uint32_t op, uint32_t id, uint64_t off, uint64_t slba, uint64_t len,
		  uint32_t flags, uint32_t *path)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = op, .slba = slba, .len = len,
				 .addr = off, .buf_id = id, .flags = P2PNVME_IO_F_REGISTERED | flags };
	int ret = xfer(&io);

	if (path)
		*path = ret ? 0 : io.path;
	return ret;
}

/* does the controller take SGLs (P2PNVME_INFO_F_SGL)? */
static int has_sgl(void)
{
	struct p2pnvme_info info = { .argsz = sizeof(info) };

	return !ioctl(nvme, P2PNVME_IOC_INFO, &info) && (info.flags & P2PNVME_INFO_F_SGL);
}

/*
 * xe on a small BAR (P2PGPU_EXPORT_F_XE_INVISIBLE): the BO sits in VRAM
 * the CPU cannot see, and xe_ttm_vram_mgr_alloc_sgt() refuses to map it
 * for a peer: -EOPNOTSUPP from dma_buf_map_attachment(), after an attach
 * that took the controller. p2pnvme passes the errno on for every mapping
 * of it (per-I/O read and write, registration with and without
 * REQUIRE_P2P, a registration's remap once the buffer went back into that
 * VRAM) and says in its log that the exporter refused the mapping, not
 * the attach; nothing is counted as refused for P2P (no verdict said no),
 * no byte moves. In TT (evicted for good) the same buffer registers and
 * goes as dmabuf-host; the registration survives the move back (its reads
 * -EOPNOTSUPP, not -ENODEV) and goes again once it is in TT again.
 * p2pnvme before the fix said nothing in its log for a mapping refused,
 * and its documentation called every -EOPNOTSUPP an importer the exporter
 * does not take.
 */
static void xe_invisible(void)
{
	const uint32_t p = P2PGPU_XE;
	const uint64_t base = 16384ULL * p + 15360, w = 112000 + 256 * p, len = 64 * KIB;
	struct p2pgpu_buf b = { .off = 0, .len = BUF, .arg = 0x2e };
	struct p2pnvme_buf_reg r = { 0 };
	uint32_t id = 0, id2 = 0, path = 0;
	long n0, n1;
	int fd, ret, reg = -1;

	if (refused)
		kt_skip("P2P refused: xe's attach takes p2pnvme for an importer without peer2peer, whose maps migrate the buffer to TT: no VRAM mapping to refuse");
	fd = export(p, P2PGPU_EXPORT_F_XE_INVISIBLE, BUF, NULL);
	ret = fd < 0 ? fd : buf_op(P2PGPU_IOC_FILL, fd, &b);
	tap(!ret, "xe, VRAM the CPU cannot see: exported, filled with 0x2e (%s)", strerror(-ret));
	if (ret)
		kt_fail("xe: no export to go on with");
	n0 = refused_count();
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base, len, NULL);
	tap(ret == -EOPNOTSUPP,
	    "xe, invisible VRAM: a per-I/O read's map refused by the exporter: %s (want EOPNOTSUPP)",
	    strerror(-ret));
	ret = dmabuf_io(P2PNVME_OP_WRITE, fd, 0, w, len, NULL);
	tap(ret == -EOPNOTSUPP, "xe, invisible VRAM: a per-I/O write: %s", strerror(-ret));
	hostcheck("pristine %llu nvme0@%llu", (unsigned long long)len,
		  (unsigned long long)(w * LBA));
	ret = reg_dmabuf_ex(fd, BUF, 0, &id, NULL);
	tap(ret == -EOPNOTSUPP, "xe, invisible VRAM: registration: %s", strerror(-ret));
	if (!ret)
		unreg(id);
	ret = reg_dmabuf_ex(fd, BUF, P2PNVME_BUF_F_REQUIRE_P2P, &id, NULL);
	tap(ret == -EOPNOTSUPP,
	    "xe, invisible VRAM: registration requiring P2P: %s (the exporter's answer comes first)",
	    strerror(-ret));
	if (!ret)
		unreg(id);
	n1 = refused_count();
	tap(n0 >= 0 && n1 == n0,
	    "xe, invisible VRAM: stats/refused unchanged (%ld -> %ld): the exporter refused, not a P2P verdict",
	    n0, n1);
	still_filled(fd, 0x2e, "xe, invisible VRAM");
	tap(klog_has("dma-buf mapping refused by its exporter (-EOPNOTSUPP) after it took the controller at attach"),
	    "xe, invisible VRAM: p2pnvme's log says the exporter refused the mapping after the attach, not the importer");
	/* a registration's refusal is logged as a transfer's (one helper), and told apart */
	tap(klog_has("registered dma-buf's mapping refused by its exporter (-EOPNOTSUPP) after it took the controller at attach"),
	    "xe, invisible VRAM: p2pnvme's log says so of the registration's mapping too");

	/* in TT (VRAM under lasting pressure): host memory, which maps */
	b = (struct p2pgpu_buf){ .arg = P2PGPU_EVICT_STAY };
	ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);
	reg = ret ?: reg_dmabuf_ex(fd, BUF, 0, &id2, &r);
	if (swiotlb)
		tap(reg == -EOPNOTSUPP, "xe, invisible VRAM, evicted to TT: registered%s", host_note());
	else
		tap(!reg && r.path == P2PNVME_PATH_DMABUF_HOST,
		    "xe, invisible VRAM, evicted to TT: registers as dmabuf-host (%s, path %u)",
		    strerror(-reg), r.path);
	ret = reg ?: reg_read(id2, 0, base, len, &path);
	tap(swiotlb ? 1 : !ret && path == P2PNVME_PATH_DMABUF_HOST,
	    "xe, invisible VRAM, in TT: a registered read goes, dmabuf-host (%s, path %u)%s",
	    strerror(-ret), path, swiotlb ? " # SKIP not registered under swiotlb" : "");
	/* room again: a peer2peer map moves it back where no peer can map it */
	b = (struct p2pgpu_buf){ .arg = P2PGPU_EVICT_ALLOW };
	buf_op(P2PGPU_IOC_EVICT, fd, &b);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, len, base + 128, len, NULL);
	b = where(fd);
	tap(ret == -EOPNOTSUPP && b.where == P2PGPU_WHERE_BAR,
	    "xe, invisible VRAM: a per-I/O read's map moved it back into that VRAM and refused it (%s, in %s)",
	    strerror(-ret), place(&b));
	ret = reg ?: reg_read(id2, 2 * len, base + 256, len, &path);
	tap(swiotlb ? 1 : ret == -EOPNOTSUPP,
	    "xe, invisible VRAM: the registration's remap there: %s (want EOPNOTSUPP: not revoked)%s",
	    strerror(-ret), swiotlb ? " # SKIP not registered under swiotlb" : "");
	b = (struct p2pgpu_buf){ .arg = P2PGPU_EVICT_STAY };
	ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);
	ret = ret ?: reg ?: reg_read(id2, 3 * len, base + 384, len, &path);
	tap(swiotlb ? 1 : !ret && path == P2PNVME_PATH_DMABUF_HOST,
	    "xe, invisible VRAM: in TT again, the same registration goes (%s, path %u)%s",
	    strerror(-ret), path, swiotlb ? " # SKIP not registered under swiotlb" : "");
	if (!reg)
		unreg(id2);
	close(fd);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* SIGALRM in @ms to this process, its handler with or without SA_RESTART */
static void alarm_in(int ms, int restart)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = restart ? SA_RESTART : 0 };
	struct itimerval it = { .it_value = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 } };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarms = 0;
	setitimer(ITIMER_REAL, &it, NULL);
}

static int evict(int fd, uint64_t how)
{
	struct p2pgpu_buf b = { .arg = how };

	return buf_op(P2PGPU_IOC_EVICT, fd, &b) ?: (b.where == P2PGPU_WHERE_HOST ? 0 : -EBUSY);
}

/* the CQE of a P2PNVME_URING_CMD_IO registered read (bounded by 20 s) */
static int uring_reg_read(struct uring *u, uint32_t id, uint64_t off, uint64_t slba,
			  uint64_t len, int *res)
{
	struct p2pnvme_uring_cmd uc = { .flags = P2PNVME_IO_F_REGISTERED, .op = P2PNVME_OP_READ,
					.slba = slba, .len = len, .addr = off, .buf_id = id };
	double t = now();
	uint64_t tag;
	int ret;

	uring_queue(u, &uc, 1);
	for (;;) {
		ret = uring_enter(u, *u->sq_tail - *u->sq_head, 1, 1000);
		if (uring_reap(u, &tag, res))
			return 0;
		if ((ret < 0 && ret != -EINTR && ret != -ETIME && ret != -EAGAIN) || now() - t > 20)
			return ret < 0 ? ret : -ETIME;
	}
}

/*
 * xe's maps are interruptible (xe_bo_validate() and xe_bo_migrate() run
 * TTM with ctx.interruptible): a map that has to move the buffer answers
 * -ERESTARTSYS when a signal is pending, or a task work (TIF_NOTIFY_SIGNAL:
 * io_uring queues its completions so for the submitter).
 * P2PGPU_EXPORT_F_XE_TASK_WORK puts a task work there at the first map
 * that moves the buffer after each eviction. Through the ioctls nothing is
 * sent, the system call starts over on its way out (the task work run, no
 * signal to deliver) and goes: a per-I/O read, a batch, a registration and
 * a registered read after an eviction each return 0 with the bytes where
 * they belong, the exporter having been interrupted once each. Through
 * io_uring there is no system call to restart: the CQE of a registered
 * read after an eviction must never be -ERESTARTSYS (-512, which no
 * program can name); p2pnvme tries it again (-EAGAIN: io_uring's worker
 * issues it again, 0 in the CQE; -EBUSY where io_uring would issue it from
 * the SQ ring: 6.12) or says -EINTR, and it goes once submitted again.
 * A real signal while xe's map waits for an eviction's copy (2 s): the
 * ioctl returns -EINTR well before, nothing read, when the handler has no
 * SA_RESTART, and starts over and goes with SA_RESTART.
 * p2pnvme before the fix put -512 in the CQE on 7.2 (6.12's io_uring
 * turns it into -EINTR itself).
 */
static void xe_interrupted(void)
{
	const uint32_t p = P2PGPU_XE;
	const uint64_t base = 16384ULL * p + 12288;
	struct p2pgpu_buf b;
	struct uring u = { .fd = -1 };
	struct p2pnvme_buf_reg r = { 0 };
	uint32_t id = 0, path = 0, i0;
	int fd, fd2, fd3, ret, res = 0, tries, first = 0;
	double t;

	if (refused)
		kt_skip("P2P refused: xe keeps the buffer in host memory for p2pnvme, no map of it moves it");
	fd = export(p, P2PGPU_EXPORT_F_XE_TASK_WORK, BUF, NULL);
	fd2 = export(P2PGPU_AMDGPU, 0, BUF, NULL);
	fd3 = export(p, 0, BUF, NULL);
	if (fd < 0 || fd2 < 0 || fd3 < 0)
		kt_fail("xe, interrupted maps: exports: %s", strerror(-(fd < 0 ? fd : fd2 < 0 ? fd2 : fd3)));
	/* the export's first map moves nothing: one that does, first */
	i0 = where(fd).interrupted;

	/* per-I/O read */
	ret = evict(fd, 0) ?: dmabuf_io(P2PNVME_OP_READ, fd, 0, base, QLEN, &path);
	b = where(fd);
	tap(!ret && b.interrupted == i0 + 1 && path == P2PNVME_PATH_DMABUF,
	    "xe, a task work pending at the map: a per-I/O read started over and went (%s, %u interrupted, path %u)",
	    strerror(-ret), b.interrupted - i0, path);
	moved(ret, fd, 0, base, QLEN, NULL, "xe, interrupted per-I/O read");
	i0 = b.interrupted;

	/* a batch: nothing of it sent, all of it again */
	ret = evict(fd, 0);
	if (!ret) {
		struct p2pnvme_io ios[2] = {
			{ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ, .slba = base + 512,
			  .len = QLEN, .addr = QLEN, .flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = fd },
			{ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ, .slba = base + 1024,
			  .len = QLEN, .addr = 0, .flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = fd2 },
		};
		struct p2pnvme_submit s = { .argsz = sizeof(s), .nr = 2, .ios = (uintptr_t)ios };

		ret = ioctl(nvme, P2PNVME_IOC_SUBMIT, &s) ? -errno : 0;
		ret = ret ?: ios[0].result ?: ios[1].result;
	}
	b = where(fd);
	tap(!ret && b.interrupted == i0 + 1,
	    "xe, a task work pending at the map: a batch of two (the xe buffer and another) started over and went (%s, %u interrupted)",
	    strerror(-ret), b.interrupted - i0);
	moved(ret, fd, QLEN, base + 512, QLEN, NULL, "xe, interrupted batch");
	i0 = b.interrupted;

	/* registration */
	ret = evict(fd, 0) ?: reg_dmabuf_ex(fd, BUF, 0, &id, &r);
	b = where(fd);
	tap(!ret && b.interrupted == i0 + 1 && r.path == P2PNVME_PATH_DMABUF,
	    "xe, a task work pending at the map: the registration started over and went (%s, %u interrupted, path %u)",
	    strerror(-ret), b.interrupted - i0, r.path);
	if (ret)
		kt_fail("xe: no registration to go on with");
	i0 = b.interrupted;

	/* a registered read, whose remap is interrupted */
	ret = evict(fd, 0) ?: reg_read(id, 2 * QLEN, base + 1536, QLEN, &path);
	b = where(fd);
	tap(!ret && b.interrupted == i0 + 1 && path == P2PNVME_PATH_DMABUF,
	    "xe, a task work pending at the remap: a registered read started over and went (%s, %u interrupted, path %u)",
	    strerror(-ret), b.interrupted - i0, path);
	moved(ret, fd, 2 * QLEN, base + 1536, QLEN, NULL, "xe, interrupted registered read");
	i0 = b.interrupted;

	/* io_uring: no system call to restart */
	ret = uring_setup(&u, 4);
	if (ret == -ENOSYS) {
		tap(1, "xe, io_uring: the CQE is never -ERESTARTSYS # SKIP no io_uring on this kernel");
		tap(1, "xe, io_uring: the read goes once submitted again # SKIP no io_uring");
		tap(1, "xe, io_uring: the bytes # SKIP no io_uring");
	} else {
		ret = ret ?: evict(fd, 0);
		ret = ret ?: uring_reg_read(&u, id, 3 * QLEN, base + 2048, QLEN, &res);
		first = res;
		tap(!ret && res != -512 &&
		    (!res || res == -EAGAIN || res == -EBUSY || res == -EINTR),
		    "xe, io_uring, a task work pending at the remap: the CQE says %d (%s), never -ERESTARTSYS (-512)",
		    ret ? ret : res, strerror(-(ret ? ret : res)));
		for (tries = 1; !ret && res && res != -512 && tries < 4; tries++)
			ret = uring_reg_read(&u, id, 3 * QLEN, base + 2048, QLEN, &res);
		b = where(fd);
		tap(!ret && !res && b.interrupted == i0 + 1,
		    "xe, io_uring: the registered read went (first CQE %d, then %d; %u interrupted)",
		    first, res, b.interrupted - i0);
		moved(ret ?: res, fd, 3 * QLEN, base + 2048, QLEN, NULL,
		      "xe, interrupted io_uring read");
	}
	if (u.fd >= 0)
		close(u.fd);
	unreg(id);

	/* a real signal while the map waits for a slow copy, without SA_RESTART */
	ret = evict(fd3, P2PGPU_EVICT_SLOW);
	i0 = where(fd3).interrupted;
	alarm_in(100, 0);
	t = now();
	ret = ret ?: dmabuf_io(P2PNVME_OP_READ, fd3, 0, base + 2560, QLEN, NULL);
	t = now() - t;
	b = where(fd3);
	tap(ret == -EINTR && alarms == 1 && t < 1.5 && b.interrupted == i0 + 1,
	    "xe, a signal while its map waits for the eviction's copy: the ioctl returns EINTR after %.2f s (%s, %d signals), nothing sent",
	    t, strerror(-ret), alarms);
	/* back into VRAM (no signal), then again with SA_RESTART */
	dmabuf_io(P2PNVME_OP_READ, fd3, 0, base + 3072, QLEN, NULL);
	ret = evict(fd3, P2PGPU_EVICT_SLOW);
	i0 = where(fd3).interrupted;
	alarm_in(100, 1);
	t = now();
	ret = ret ?: dmabuf_io(P2PNVME_OP_READ, fd3, QLEN, base + 3584, QLEN, &path);
	t = now() - t;
	b = where(fd3);
	tap(!ret && alarms == 1 && b.interrupted == i0 + 1 && path == P2PNVME_PATH_DMABUF,
	    "xe, the same with SA_RESTART: the ioctl started over and went after %.2f s (%s, %d signals, path %u)",
	    t, strerror(-ret), alarms, path);
	moved(ret, fd3, QLEN, base + 3584, QLEN, NULL, "xe, read restarted after a signal");
	signal(SIGALRM, SIG_DFL);
	close(fd);
	close(fd2);
	close(fd3);
}

/*
 * amdgpu's attach takes the BO's reservation lock (7.2's
 * amdgpu_dma_buf_attach(): amdgpu_vm_bo_update_shared()): an importer
 * attaching while it holds that lock deadlocks there (lockdep reports it
 * first on the debug kernel; the test's timeout ends a hang). p2pnvme
 * attaches for a per-I/O transfer, for each dma-buf of a batch once, and
 * for a registration, never under a reservation lock: each goes, within
 * a bound, and the exporter counts one attach under its lock for each
 * (the batch's two entries of one dma-buf share one attachment).
 */
static void attach_lock(void)
{
	const uint64_t base = 16384ULL * P2PGPU_AMDGPU + 15360;
	struct p2pgpu_buf b1, b2;
	uint32_t id = 0;
	int fd1, fd2, ret, reg;
	unsigned int l1, l2;
	double t;

	fd1 = export(P2PGPU_AMDGPU, 0, BUF, NULL);
	fd2 = export(P2PGPU_AMDGPU, 0, BUF, NULL);
	if (fd1 < 0 || fd2 < 0)
		kt_fail("amdgpu, attach lock: exports");
	l1 = where(fd1).locked_attaches;
	l2 = where(fd2).locked_attaches;
	t = now();
	ret = dmabuf_io(P2PNVME_OP_READ, fd1, 0, base, QLEN, NULL);
	t = now() - t;
	b1 = where(fd1);
	tap(!ret && t < 20 && b1.locked_attaches == l1 + 1,
	    "amdgpu, attach under its reservation lock: a per-I/O read attached once and went in %.2f s (%s, %u locked attaches)",
	    t, strerror(-ret), b1.locked_attaches - l1);
	moved(ret, fd1, 0, base, QLEN, NULL, "amdgpu, attach lock: per-I/O read");
	t = now();
	ret = reg = reg_dmabuf(fd1, BUF, &id);
	t = now() - t;
	b1 = where(fd1);
	tap(!ret && t < 20 && b1.locked_attaches == l1 + 2,
	    "amdgpu, attach under its reservation lock: a registration attached once in %.2f s (%s, %u locked attaches)",
	    t, strerror(-ret), b1.locked_attaches - l1);
	{
		struct p2pnvme_io ios[4] = {
			{ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ, .slba = base + 512,
			  .len = QLEN, .addr = QLEN, .flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = fd1 },
			{ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ, .slba = base + 1024,
			  .len = QLEN, .addr = 2 * QLEN, .flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = fd1 },
			{ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ, .slba = base + 1536,
			  .len = QLEN, .addr = 0, .flags = P2PNVME_IO_F_DMABUF, .dmabuf_fd = fd2 },
			{ .argsz = sizeof(ios[0]), .op = P2PNVME_OP_READ, .slba = base + 2048,
			  .len = QLEN, .addr = 3 * QLEN, .flags = P2PNVME_IO_F_REGISTERED,
			  .buf_id = id },
		};
		struct p2pnvme_submit s = { .argsz = sizeof(s), .nr = 4, .ios = (uintptr_t)ios };

		t = now();
		ret = ret ?: (ioctl(nvme, P2PNVME_IOC_SUBMIT, &s) ? -errno : 0);
		t = now() - t;
		ret = ret ?: ios[0].result ?: ios[1].result ?: ios[2].result ?: ios[3].result;
	}
	b1 = where(fd1);
	b2 = where(fd2);
	tap(!ret && t < 20 && b1.locked_attaches == l1 + 3 && b2.locked_attaches == l2 + 1,
	    "amdgpu, attach under its reservation lock: a batch of two entries of one dma-buf, one of another and a registered one attached once per dma-buf and went in %.2f s (%s; %u and %u locked attaches)",
	    t, strerror(-ret), b1.locked_attaches - l1, b2.locked_attaches - l2);
	moved(ret, fd1, 2 * QLEN, base + 1024, QLEN, NULL, "amdgpu, attach lock: batch");
	if (!reg)
		unreg(id);
	close(fd1);
	close(fd2);
}

/* ---- GPU-shaped tables: VRAM blocks and ranges ---- */

#define FRAG_LEN	(192 * KIB)	/* a transfer: across a few small blocks */

/* an export of @size, once the BAR is free (a buffer still going: a copy's reference) */
static int export_when_free(uint32_t p, uint64_t size)
{
	int fd, i;

	for (i = 0; i < 100; i++) {
		fd = export(p, 0, size, NULL);
		if (fd != -ENOSPC)
			return fd;
		usleep(50000);
	}
	return fd;
}

/*
 * Where the @i-th transfer of FRAG_LEN starts: @delta bytes (4-byte
 * aligned, not a sector's multiple) before the end of a block spread over
 * the buffer, so that it crosses into the blocks after it; the index of
 * that block in *@k.
 */
static uint64_t frag_start(const struct p2pgpu_block *blk, unsigned int n, uint64_t size,
			   unsigned int i, uint64_t delta, unsigned int *k)
{
	unsigned int j = n > 7 ? i * (n - 1) / 6 : i % (n - 1);

	while (j && blk[j].off + blk[j].len - delta + FRAG_LEN > size)
		j--;
	*k = j;
	return blk[j].off + blk[j].len - delta;
}

/* the blocks [@off, @off + FRAG_LEN) touches, for the case's name */
static unsigned int frag_span(const struct p2pgpu_block *blk, unsigned int n, uint64_t off)
{
	unsigned int k, c = 0;

	for (k = 0; k < n; k++)
		c += blk[k].off < off + FRAG_LEN && blk[k].off + blk[k].len > off;
	return c;
}

/*
 * One buffer of @size: its table's shape, then transfers through PRPs and
 * SGLs, per I/O and registered, reads and writes, each starting at an odd
 * (4-byte, not sector aligned) offset near a block's end and crossing
 * into the blocks after it; the bytes checked in the BAR block by block by
 * the host. 15 cases.
 */
static void frag_one(uint32_t p, uint64_t size, unsigned int sz)
{
	static const uint64_t delta[6] = { 2052, 3076, 516, 1028, 2564, 12 };
	const uint64_t rbase = 1000 + (p * 12 + sz * 6) * 400;
	const uint64_t wbase = 113000 + ((p - 1) * 4 + sz * 2) * 512;
	const int sgl = has_sgl();
	char what[160];
	struct p2pgpu_block *blk;
	struct p2pgpu_import im;
	unsigned int n, k, sizes = 0, adjacent = 0, i, kb, want_nents = 0;
	uint64_t seen[8] = { 0 }, off;
	uint32_t id = 0, path = 0;
	int fd, ret, reg;

	fd = export_when_free(p, size);
	if (fd < 0)
		kt_fail("%s: no %llu MiB export: %s", names[p], (unsigned long long)(size >> 20),
			strerror(-fd));
	n = layout(fd, &blk);
	for (k = 0; k < n; k++) {
		unsigned int j;

		for (j = 0; j < sizes && seen[j] != blk[k].len; j++)
			;
		if (j == sizes && sizes < 8)
			seen[sizes++] = blk[k].len;
		if (k + 1 < n)
			adjacent += blk[k].bar_off + blk[k].len == blk[k + 1].bar_off;
		/* nvidia: each range split at the GPU function's 64 KiB maximum segment */
		want_nents += p == P2PGPU_NVIDIA ? (blk[k].len + 65535) / 65536 : 1;
	}
	if (p == P2PGPU_NVIDIA)
		tap(n >= 3 && !adjacent && blk[0].len <= 2 * MIB,
		    "nvidia, %llu MiB: %u ranges of up to 2 MiB, no two consecutive in the BAR",
		    (unsigned long long)(size >> 20), n);
	else
		tap(n >= 3 && sizes >= 3 && !adjacent,
		    "%s, %llu MiB: %u VRAM blocks of %u sizes, no two consecutive in the BAR",
		    names[p], (unsigned long long)(size >> 20), n, sizes);
	if (n < 3)
		kt_fail("%s: no fragmented buffer to go on with", names[p]);
	/* the GPU's own function (64 KiB maximum segment) maps it: the table's shape */
	ret = import(fd, P2PGPU_IMPORT_F_DYNAMIC, &im);
	tap(!ret && im.nents == want_nents && im.dma_len == size,
	    "%s, %llu MiB: a mapping for an importer of 64 KiB segments has %u entries, want %u (%s: %s) (%s)",
	    names[p], (unsigned long long)(size >> 20), im.nents, want_nents,
	    p == P2PGPU_NVIDIA ? "each range split at the importer's maximum segment" :
	    "one per block, not split", p == P2PGPU_NVIDIA ? "nv_dma_buf_map_pfns()" :
	    "the VRAM manager's alloc_sgt()", strerror(-ret));
	ioctl(gpu, P2PGPU_IOC_IMPORT_RELEASE, &im);

	if (refused) {
		for (i = 0; i < 13; i++)
			tap(1, "%s, %llu MiB: transfer case %u # SKIP P2P refused: no VRAM mapping for p2pnvme (nvidia: EREMOTEIO, nvidia_refused(); amdgpu, xe: host memory, host_only())",
			    names[p], (unsigned long long)(size >> 20), i + 1);
		free(blk);
		close(fd);
		return;
	}
	/* per I/O: a read with PRPs, one with SGLs, a write with PRPs */
	for (i = 0; i < 2; i++) {
		off = frag_start(blk, n, size, i, delta[i], &kb);
		snprintf(what, sizeof(what), "%s, %llu MiB: per-I/O read with %s at %#llx, across %u blocks from block %u",
			 names[p], (unsigned long long)(size >> 20), i ? "SGLs" : "PRPs",
			 (unsigned long long)off, frag_span(blk, n, off), kb);
		if (i && !sgl) {
			tap(1, "%s # SKIP the controller takes no SGLs", what);
			tap(1, "%s: the bytes # SKIP no SGLs", what);
			continue;
		}
		ret = dmabuf_io_f(P2PNVME_OP_READ, fd, off, rbase + i * 400, FRAG_LEN,
				  i ? P2PNVME_IO_F_SGL : P2PNVME_IO_F_PRP, &path);
		tap(!ret && path == P2PNVME_PATH_DMABUF, "%s (%s, path %u)", what, strerror(-ret),
		    path);
		moved(ret, fd, off, rbase + i * 400, FRAG_LEN, NULL, what);
	}
	off = frag_start(blk, n, size, 2, delta[2], &kb);
	snprintf(what, sizeof(what), "%s, %llu MiB: per-I/O write with PRPs from %#llx, across %u blocks from block %u",
		 names[p], (unsigned long long)(size >> 20), (unsigned long long)off,
		 frag_span(blk, n, off), kb);
	ret = dmabuf_io_f(P2PNVME_OP_READ, fd, off, rbase + 800, FRAG_LEN, P2PNVME_IO_F_PRP, NULL);
	ret = ret ?: dmabuf_io_f(P2PNVME_OP_WRITE, fd, off, wbase, FRAG_LEN, P2PNVME_IO_F_PRP, NULL);
	tap(!ret, "%s (%s)", what, strerror(-ret));
	{
		unsigned char *a = xalloc(FRAG_LEN), *c = xalloc(FRAG_LEN);

		tap(!ret && !host_read(wbase, FRAG_LEN, a) && !host_read(rbase + 800, FRAG_LEN, c) &&
		    !memcmp(a, c, FRAG_LEN),
		    "%s: the image got the bytes of each block in order", what);
		free(a);
		free(c);
	}
	if (!ret) {
		struct p2pgpu_buf b = where(fd);

		bar_check(fd, &b, off, FRAG_LEN, wbase * LBA, -1);
	}

	/* registered: a read with PRPs, one with SGLs, a write with SGLs */
	reg = reg_dmabuf(fd, size, &id);
	tap(!reg, "%s, %llu MiB: registered in %u blocks (%s)", names[p],
	    (unsigned long long)(size >> 20), n, strerror(-reg));
	for (i = 3; i < 5; i++) {
		off = frag_start(blk, n, size, i, delta[i], &kb);
		snprintf(what, sizeof(what), "%s, %llu MiB: registered read with %s at %#llx, across %u blocks from block %u",
			 names[p], (unsigned long long)(size >> 20), i == 4 ? "SGLs" : "PRPs",
			 (unsigned long long)off, frag_span(blk, n, off), kb);
		if (reg || (i == 4 && !sgl)) {
			tap(1, "%s # SKIP %s", what, reg ? "not registered" : "no SGLs");
			tap(1, "%s: the bytes # SKIP no transfer", what);
			continue;
		}
		ret = reg_io(P2PNVME_OP_READ, id, off, rbase + i * 400, FRAG_LEN,
			     i == 4 ? P2PNVME_IO_F_SGL : P2PNVME_IO_F_PRP, &path);
		tap(!ret && path == P2PNVME_PATH_DMABUF, "%s (%s, path %u)", what, strerror(-ret),
		    path);
		moved(ret, fd, off, rbase + i * 400, FRAG_LEN, NULL, what);
	}
	off = frag_start(blk, n, size, 5, delta[5], &kb);
	snprintf(what, sizeof(what), "%s, %llu MiB: registered write with %s from %#llx, across %u blocks from block %u",
		 names[p], (unsigned long long)(size >> 20), sgl ? "SGLs" : "PRPs",
		 (unsigned long long)off, frag_span(blk, n, off), kb);
	ret = reg ?: reg_io(P2PNVME_OP_READ, id, off, rbase + 2000, FRAG_LEN, 0, NULL);
	ret = ret ?: reg_io(P2PNVME_OP_WRITE, id, off, wbase + 512, FRAG_LEN,
			    sgl ? P2PNVME_IO_F_SGL : P2PNVME_IO_F_PRP, NULL);
	tap(!ret, "%s (%s)", what, strerror(-ret));
	{
		unsigned char *a = xalloc(FRAG_LEN), *c = xalloc(FRAG_LEN);

		tap(!ret && !host_read(wbase + 512, FRAG_LEN, a) &&
		    !host_read(rbase + 2000, FRAG_LEN, c) && !memcmp(a, c, FRAG_LEN),
		    "%s: the image got the bytes of each block in order", what);
		free(a);
		free(c);
	}
	if (!ret) {
		struct p2pgpu_buf b = where(fd);

		bar_check(fd, &b, off, FRAG_LEN, (wbase + 512) * LBA, -1);
	}
	if (!reg)
		unreg(id);
	free(blk);
	close(fd);
}

/*
 * The tables the drivers hand out (gpu-reality.md, item 8): amdgpu and xe
 * one entry per drm_buddy block, blocks of mixed sizes not split at the
 * importer's maximum segment; nvidia its ranges, each split at it. For
 * buffers of 5 and 64 MiB (all of the BAR): the shape, then p2pnvme's
 * transfers across block boundaries at odd offsets (frag_one()).
 */
static void fragmented(uint32_t p)
{
	frag_one(p, 5 * MIB, 0);
	frag_one(p, 64 * MIB, 1);
}

/* ---- NVIDIA's coherent memory: GH200's HBM, a NUMA node without CPUs ---- */

/* a sysfs file's first line, trailing newline cut; "" and -errno if unread */
static int sysfs_read(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ret = 0;

	buf[0] = 0;
	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		ret = -EIO;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ret;
}

/* a node list as sysfs writes it ("0-1,3"), as a mask of the first 64 nodes */
static uint64_t node_mask(const char *list)
{
	uint64_t mask = 0;
	const char *p = list;

	while (*p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			break;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (; a <= b && a < 64; a++)
			mask |= 1ULL << a;
		p = *end == ',' ? end + 1 : end;
	}
	return mask;
}

/*
 * The first NUMA node with memory and no CPUs, as sysfs lists them (what
 * a GH200's HBM is to the kernel), and the physical range of its memory
 * blocks in *@start, *@len (0 when memory blocks are not listed); -1 if
 * there is none, @why saying what the machine lacks.
 */
static int memory_only_node(uint64_t *start, uint64_t *len, char *why, size_t size)
{
	char mem[128], cpu[128], path[128], bs[32];
	uint64_t only, lo = UINT64_MAX, hi = 0, block;
	struct dirent *e;
	int nid;
	DIR *d;

	*start = *len = 0;
	if (sysfs_read("/sys/devices/system/node/has_cpu", cpu, sizeof(cpu)) ||
	    sysfs_read("/sys/devices/system/node/has_memory", mem, sizeof(mem))) {
		snprintf(why, size, "the guest's kernel has no NUMA (no /sys/devices/system/node: CONFIG_NUMA is off), so no node with memory and no CPUs to export from");
		return -1;
	}
	only = node_mask(mem) & ~node_mask(cpu);
	if (!only) {
		snprintf(why, size, "the machine has no NUMA node with memory and no CPUs (has_memory %.32s, has_cpu %.32s): its boot had no P_MEMNODE (qemu/run.sh)",
			 mem, cpu);
		return -1;
	}
	for (nid = 0; !(only & 1ULL << nid); nid++)
		;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", nid);
	d = opendir(path);
	if (sysfs_read("/sys/devices/system/memory/block_size_bytes", bs, sizeof(bs)) || !d) {
		if (d)
			closedir(d);
		return nid;
	}
	block = strtoull(bs, NULL, 16);
	while ((e = readdir(d))) {
		uint64_t k;

		if (strncmp(e->d_name, "memory", 6) || !isdigit((unsigned char)e->d_name[6]))
			continue;
		k = strtoull(e->d_name + 6, NULL, 10);
		lo = k < lo ? k : lo;
		hi = k > hi ? k : hi;
	}
	closedir(d);
	if (block && lo != UINT64_MAX) {
		*start = lo * block;
		*len = (hi - lo + 1) * block;
	}
	return nid;
}

/*
 * The controller is behind an IOMMU (sysfs gives it a group): its DMA
 * addresses are IOVAs, not the physical addresses of the memory.
 */
static int iommu_on(void)
{
	char path[160];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", nvme_name);
	return !access(path, F_OK);
}

/* one counter of the controller's stats/, or -1 */
static long long nvme_stat(const char *name)
{
	char path[160], v[32];

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/stats/%s", nvme_dev, name);
	return sysfs_read(path, v, sizeof(v)) || !v[0] ? -1 : strtoll(v, NULL, 10);
}

/* what p2pnvme says when P2P required refuses coherent memory */
#define COHERENT_REFUSED "dma-buf in CPU-coherent device memory (path dmabuf-coherent"

/*
 * NVIDIA's coherent memory (P2PGPU_EXPORT_F_NV_COHERENT): on a GH200 or
 * GB200 the GPU's HBM is a NUMA node with memory and no CPUs, reached by
 * the CPU (and by the controller, through the CPU's memory system) over
 * NVLink-C2C, and NVIDIA's exports of it are struct pages mapped with
 * dma_map_sg_attrs(..., DMA_ATTR_SKIP_CPU_SYNC). p2pnvme must not call it
 * host memory (path 5) nor a BAR (path 4): its transfers report
 * dmabuf-coherent (6), per I/O and registered, in both directions, the
 * bytes land (the CPU's view; the host sees the controller's DMA go to
 * that node's memory, where no IOMMU translates, and the written bytes in
 * the image), counted in the dma-buf counters. P2P required refuses it as
 * it refuses host memory (-EREMOTEIO, counted as refused, no byte moved),
 * with a log line naming the path. p2pnvme before this called the memory
 * dmabuf-host. The export answers -ENODEV where the machine has no such
 * node (the one case then, the others SKIP with what the machine lacks).
 * Under swiotlb=force the pages are bounced (host memory for p2pnvme):
 * refused, -EOPNOTSUPP (or NVIDIA's map fails, -ENOMEM, for a segment
 * larger than swiotlb bounces), the rest SKIP.
 */
static void nvidia_coherent(void)
{
	const uint32_t p = P2PGPU_NVIDIA;
	const uint64_t base = 16384ULL * p + 13312, w = 121000;
	struct p2pgpu_buf b = { .off = 512 * KIB, .len = 64 * KIB, .arg = 0x6c };
	struct p2pnvme_buf_reg r = { 0 };
	unsigned char *before = xalloc(BUF);
	long long rd0, by0, wr0, n0, n1;
	uint64_t start, len, node = ~0ULL;
	uint32_t path = 0, id = 0;
	char why[256], what[96];
	int nid, fd, ret, dbg, dma_check;

	nid = memory_only_node(&start, &len, why, sizeof(why));
	fd = export(p, P2PGPU_EXPORT_F_NV_COHERENT, BUF, &node);
	if (nid < 0) {
		tap(fd == -ENODEV,
		    "nvidia, coherent: no node with memory and no CPUs, the export says so (%s)",
		    strerror(fd < 0 ? -fd : 0));
		if (fd >= 0)
			close(fd);
		kt_skip("%s", why);
	}
	tap(fd >= 0 && where(fd).where == P2PGPU_WHERE_COHERENT && node == (uint64_t)nid,
	    "nvidia, coherent: exports 1 MiB of node %d, the node with memory and no CPUs (%s, node %lld)",
	    nid, strerror(fd < 0 ? -fd : 0), (long long)node);
	if (fd < 0)
		kt_fail("nvidia, coherent: no export to go on with");
	printf("    # node %d: memory blocks at %#llx, %llu MiB\n", nid, (unsigned long long)start,
	       (unsigned long long)(len >> 20));

	/* a per-I/O read: path 6, the bytes, the counters, the host's view of the DMA */
	rd0 = nvme_stat("reads_dmabuf");
	by0 = nvme_stat("bytes_dmabuf");
	dma_check = len && !swiotlb && !iommu_on();
	if (dma_check)
		hostcheck("dma-mark");
	snprintf(what, sizeof(what), "nvidia, coherent: per-I/O read");
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base, QLEN, &path);
	if (swiotlb) {
		/* NVIDIA's map fails (a NULL table) for a segment swiotlb cannot bounce */
		tap(ret == -EOPNOTSUPP || ret == -ENOMEM,
		    "%s under swiotlb=force refused (%s): bounced pages p2pnvme cannot sync (EOPNOTSUPP), or a segment past swiotlb's largest mapping (ENOMEM, the exporter's map)",
		    what, strerror(-ret));
		kt_skip("swiotlb=force: the coherent pages are bounced through host memory, refused");
	}
	tap(!ret && path == P2PNVME_PATH_DMABUF_COHERENT,
	    "%s of 256 KiB reports dmabuf-coherent (%s, path %u; dmabuf-host is %u)", what,
	    strerror(-ret), path, P2PNVME_PATH_DMABUF_HOST);
	if (ret)
		kt_fail("nvidia, coherent: no transfer to go on with");
	/* before any other transfer (landed()'s reference read goes to host memory) */
	if (dma_check)
		hostcheck("dma-in %llu %#llx io", (unsigned long long)len,
			  (unsigned long long)start);
	else if (!len)
		printf("    # node %d lists no memory blocks: the host does not check where the DMA went\n",
		       nid);
	else
		printf("    # IOMMU on: the controller's DMA addresses are IOVAs, the host does not check them\n");
	tap(nvme_stat("reads_dmabuf") == rd0 + 1 &&
	    nvme_stat("bytes_dmabuf") == by0 + (long long)QLEN,
	    "%s: counted in stats/reads_dmabuf (%lld -> %lld) and bytes_dmabuf (+%lld)", what, rd0,
	    nvme_stat("reads_dmabuf"), nvme_stat("bytes_dmabuf") - by0);
	landed(fd, 0, base, QLEN, what);

	/* a write from it: the host finds the fill in the image */
	wr0 = nvme_stat("writes_dmabuf");
	ret = buf_op(P2PGPU_IOC_FILL, fd, &b);
	ret = ret ?: dmabuf_io(P2PNVME_OP_WRITE, fd, 512 * KIB, w, 64 * KIB, &path);
	tap(!ret && path == P2PNVME_PATH_DMABUF_COHERENT && nvme_stat("writes_dmabuf") == wr0 + 1,
	    "nvidia, coherent: per-I/O write of 64 KiB from it reports dmabuf-coherent, counted in writes_dmabuf (%s, path %u)",
	    strerror(-ret), path);
	hostcheck("fill 65536 nvme0@%llu %#x", (unsigned long long)(w * LBA), 0x6c);

	/* P2P required: refused as host memory is, nothing moves, the log names the path */
	cpu_read(fd, 0, before, BUF);
	n0 = refused_count();
	ret = dmabuf_io_f(P2PNVME_OP_READ, fd, 0, base + 512, QLEN, P2PNVME_IO_F_REQUIRE_P2P,
			  &path);
	tap(ret == -EREMOTEIO && untouched(fd, before, BUF),
	    "nvidia, coherent: per-I/O read requiring P2P refused (%s), the buffer untouched",
	    strerror(-ret));
	ret = reg_dmabuf_ex(fd, BUF, P2PNVME_BUF_F_REQUIRE_P2P, &id, NULL);
	tap(ret == -EREMOTEIO, "nvidia, coherent: registration requiring P2P refused (%s)",
	    strerror(-ret));
	if (!ret)
		unreg(id);
	n1 = refused_count();
	tap(n0 >= 0 && n1 - n0 == 2,
	    "nvidia, coherent: stats/refused counted both once (%lld -> %lld)", n0, n1);
	tap(klog_has(COHERENT_REFUSED), "nvidia, coherent: p2pnvme's log says \"%s ...\"",
	    COHERENT_REFUSED);

	/* registered: its path, debugfs, its reads */
	ret = reg_dmabuf_ex(fd, BUF, 0, &id, &r);
	tap(!ret && r.path == P2PNVME_PATH_DMABUF_COHERENT && !r.owner[0],
	    "nvidia, coherent: registers as dmabuf-coherent, no owner (%s, path %u, owner '%s')",
	    strerror(-ret), r.path, r.owner);
	if (ret)
		kt_fail("nvidia, coherent: no registration to go on with");
	dbg = debugfs_lists("dmabuf-coherent", "dmabuf", NULL);
	tap(dbg > 0, "nvidia, coherent: debugfs buffers says dmabuf-coherent (%d)", dbg);
	snprintf(what, sizeof(what), "nvidia, coherent: registered read");
	ret = reg_read(id, QLEN, base + 1024, QLEN, &path);
	tap(!ret && path == P2PNVME_PATH_DMABUF_COHERENT,
	    "%s reports dmabuf-coherent (%s, path %u)", what, strerror(-ret), path);
	moved(ret, fd, QLEN, base + 1024, QLEN, NULL, what);
	cpu_read(fd, 0, before, BUF);
	ret = reg_read_f(id, 2 * QLEN, base + 1536, QLEN, P2PNVME_IO_F_REQUIRE_P2P, &path);
	tap(ret == -EREMOTEIO && untouched(fd, before, BUF),
	    "%s requiring P2P refused (%s), the buffer untouched", what, strerror(-ret));
	unreg(id);
	diag_where(fd, "nvidia, coherent");
	close(fd);
	free(before);
}

/* ---- the tests ---- */

FIXTURE(dev) {
	int gpu, nvme;
};

FIXTURE_SETUP(dev)
{
	self->gpu = open(gpu_path, O_RDWR | O_CLOEXEC);
	self->nvme = open(nvme_path, O_RDWR | O_CLOEXEC);
	if (self->gpu < 0 || self->nvme < 0)
		kt_fail("open %s, %s: %s", gpu_path, nvme_path, strerror(errno));
	gpu = self->gpu;
	nvme = self->nvme;
}

FIXTURE_TEARDOWN(dev)
{
	if (self->gpu >= 0)
		close(self->gpu);
	close(self->nvme);
}

/*
 * A personality's transfers into one export: the basics, its evictions
 * (nvidia: none), P2P required and the owner's name.
 */
static void transfers(uint32_t p)
{
	uint64_t base = 16384ULL * p, off = 0;
	uint32_t id;
	int fd;

	fd = export(p, 0, BUF, &off);
	tap(fd >= 0, "%s: exports 1 MiB of the BAR (at %#llx)", names[p],
	    (unsigned long long)off);
	if (fd < 0)
		kt_fail("%s: no export to go on with: %s", names[p], strerror(-fd));
	id = basics(p, fd, base);
	if (p == P2PGPU_NVIDIA) {
		struct p2pgpu_buf b = { 0 };
		int ret = buf_op(P2PGPU_IOC_EVICT, fd, &b);

		b = where(fd);
		tap(ret == -EOPNOTSUPP && b.where == P2PGPU_WHERE_BAR && !b.moves,
		    "nvidia: never evicted (%s), still in %s", strerror(-ret), place(&b));
	} else {
		evictions(p, fd, id, base);
	}
	unreg(id);
	/*
	 * after that registration is gone: NVIDIA maps with attrs 0
	 * (nv_dma_map_mmio()), and two attachments of one importer overlap,
	 * which DMA-API debugging warns about (its tracking is for host memory)
	 */
	if (refused)
		host_only(p, fd, base);
	else
		owner_and_require(p, fd, base);
	diag_where(fd, names[p]);
	close(fd);
}

/* reads per I/O, then registered ones, while an export of its own moves */
static void streams(uint32_t p)
{
	uint64_t base = 16384ULL * p;
	int fd = export(p, 0, BUF, NULL);

	if (fd < 0)
		kt_fail("%s: no export to read into: %s", names[p], strerror(-fd));
	stream(p, fd, 0, base + 4096);
	stream(p, fd, 1, base + 6144);
	close(fd);
}

/*
 * per test: 1 + basics() 8 + 1 (nvidia) or evictions() 17 + owner_and_require() 8
 * (P2P refused: host_only() 6; nvidia: nvidia_refused() 9 instead)
 */
TEST_F(gpuexp, dev, nvidia_transfers, refused ? 9 : 18, 120)
{
	if (refused)
		nvidia_refused();
	else
		transfers(P2PGPU_NVIDIA);
}

TEST_F(gpuexp, dev, nvidia_static_importer, 7, 60)
{
	static_importer(P2PGPU_NVIDIA, 0, 16384ULL * P2PGPU_NVIDIA);
}

/* GH200's HBM: its own path (dmabuf-coherent), refused where P2P is required */
TEST_F(gpuexp, dev, nvidia_coherent, 14, 60)
{
	nvidia_coherent();
}

TEST_F(gpuexp, dev, amdgpu_transfers, refused ? 32 : 34, 120)
{
	transfers(P2PGPU_AMDGPU);
}

TEST_F(gpuexp, dev, amdgpu_streams, 6, 180)
{
	streams(P2PGPU_AMDGPU);
}

TEST_F(gpuexp, dev, amdgpu_static_importer, 10, 60)
{
	static_importer(P2PGPU_AMDGPU, 0, 16384ULL * P2PGPU_AMDGPU);
}

TEST_F(gpuexp, dev, amdgpu_require_trap, 6, 60)
{
	require_trap(P2PGPU_AMDGPU, 0, 16384ULL * P2PGPU_AMDGPU);
}

TEST_F(gpuexp, dev, xe_transfers, refused ? 32 : 34, 120)
{
	transfers(P2PGPU_XE);
}

TEST_F(gpuexp, dev, xe_streams, 6, 180)
{
	streams(P2PGPU_XE);
}

TEST_F(gpuexp, dev, xe_static_importer, 10, 60)
{
	static_importer(P2PGPU_XE, 0, 16384ULL * P2PGPU_XE);
}

/* 6.12's xe pins in TT, whoever imports */
TEST_F(gpuexp, dev, xe_static_importer_pin_tt, 10, 60)
{
	static_importer(P2PGPU_XE, P2PGPU_EXPORT_F_XE_PIN_TT, 16384ULL * P2PGPU_XE + 8192);
}

TEST_F(gpuexp, dev, xe_require_trap, 6, 60)
{
	require_trap(P2PGPU_XE, 0, 16384ULL * P2PGPU_XE);
}

TEST_F(gpuexp, dev, xe_require_trap_pin_tt, 6, 60)
{
	require_trap(P2PGPU_XE, P2PGPU_EXPORT_F_XE_PIN_TT, 16384ULL * P2PGPU_XE);
}

TEST_F(gpuexp, dev, require_stream, 8, 120)
{
	require_stream(16384ULL * P2PGPU_AMDGPU);
}

/* shrinker_stream(): 1 + 6 + landed() 1 + 2 */
TEST_F(gpuexp, dev, amdgpu_shrinker_stream, 10, 180)
{
	shrinker_stream(P2PGPU_AMDGPU);
}

TEST_F(gpuexp, dev, xe_shrinker_stream, 10, 180)
{
	shrinker_stream(P2PGPU_XE);
}

TEST_F(gpuexp, dev, import_p2pbar, 5, 60)
{
	import_p2pbar();
}

TEST_F(gpuexp, dev, nvidia_flagged_chipset, 6, 60)
{
	nvidia_flagged();
}

TEST_F(gpuexp, dev, unchecked_exporter, 11, 60)
{
	unchecked_exporter();
}

/* xe on a small BAR: VRAM no peer can map (-EOPNOTSUPP at map) */
TEST_F(gpuexp, dev, xe_invisible_vram, 14, 60)
{
	xe_invisible();
}

/* xe's interruptible maps: ioctls start over, io_uring's CQE never -ERESTARTSYS */
TEST_F(gpuexp, dev, xe_interrupted_maps, 13, 90)
{
	xe_interrupted();
}

/* amdgpu's attach takes the reservation lock: p2pnvme never attaches under it */
TEST_F(gpuexp, dev, amdgpu_attach_lock, 5, 60)
{
	attach_lock();
}

/* GPU-shaped tables of 5 and 64 MiB buffers: frag_one() 15 cases each */
TEST_F(gpuexp, dev, nvidia_fragmented, 30, 180)
{
	fragmented(P2PGPU_NVIDIA);
}

TEST_F(gpuexp, dev, amdgpu_fragmented, 30, 180)
{
	fragmented(P2PGPU_AMDGPU);
}

TEST_F(gpuexp, dev, xe_fragmented, 30, 180)
{
	fragmented(P2PGPU_XE);
}

/* ---- a kernel without CONFIG_DMABUF_MOVE_NOTIFY (the nomove flavour) ---- */

/*
 * amdgpu and xe where the dma-buf core pins at every map of a dynamic
 * exporter (6.12's dma_buf_map_attachment() without
 * CONFIG_DMABUF_MOVE_NOTIFY): 6.12's amdgpu_dma_buf_pin() pins in GTT,
 * xe_dma_buf_pin() in TT, so every buffer p2pnvme maps is in host memory,
 * peer2peer or not. A per-I/O read goes through host memory
 * (dmabuf-host) and leaves the buffer there, unpinned; a registration
 * keeps it pinned there (the exporter cannot evict it: -EBUSY) until it is
 * unregistered; P2P required is refused (-EREMOTEIO). Every mapping is a
 * pin here, so the pins are counted after each step: the registration's
 * one, and nothing a refused step mapped (a leaked mapping would be a
 * leaked pin). The first registration on a fresh file may get id 0: whether
 * it exists is its ioctl's result, never its id. 14 cases.
 */
static void nomove_pinned_host(uint32_t p)
{
	const uint64_t base = 16384ULL * p + 12288;
	struct p2pnvme_buf_reg r = { 0 };
	struct p2pgpu_buf b = { 0 };
	uint32_t path = 0, id = 0, id2 = 0, want;
	char what[96];
	int fd, ret, reg;

	fd = export(p, 0, BUF, NULL);
	if (fd < 0)
		kt_fail("%s: no export to go on with: %s", names[p], strerror(-fd));
	snprintf(what, sizeof(what), "%s, no MOVE_NOTIFY: per-I/O read", names[p]);
	ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base, QLEN, &path);
	tap(host_ok(ret) && (ret || path == P2PNVME_PATH_DMABUF_HOST),
	    "%s: the core pinned it, %s pinned it in host memory (%s, path %u, dmabuf-host is %u)%s",
	    what, p == P2PGPU_AMDGPU ? "amdgpu in GTT" : "xe in TT", strerror(-ret), path,
	    P2PNVME_PATH_DMABUF_HOST, host_note());
	b = where(fd);
	tap(b.where == P2PGPU_WHERE_HOST && !b.pins && b.moves >= 1,
	    "%s: the buffer stays in host memory, unpinned once unmapped (in %s, %u pins, %u moves)",
	    what, place(&b), b.pins, b.moves);
	moved(ret, fd, 0, base, QLEN, NULL, what);

	reg = reg_dmabuf_ex(fd, BUF, 0, &id, &r);
	tap(swiotlb ? reg == -EOPNOTSUPP : !reg && r.path == P2PNVME_PATH_DMABUF_HOST,
	    "%s, no MOVE_NOTIFY: it registers in host memory (%s, path %u)%s", names[p],
	    strerror(-reg), reg ? 0 : r.path, host_note());
	/* from here on, the registration's mapping is the only pin */
	want = !reg;
	b = where(fd);
	tap(reg ? !b.pins : b.pins == 1 && b.where == P2PGPU_WHERE_HOST,
	    "%s: the registration's mapping holds it pinned in host memory (%s, %u pins)",
	    names[p], place(&b), b.pins);
	b = (struct p2pgpu_buf){ 0 };
	if (!reg) {
		int e = buf_op(P2PGPU_IOC_EVICT, fd, &b);

		tap(e == -EBUSY, "%s: the exporter cannot move it while registered (evict: %s)",
		    names[p], strerror(-e));
		snprintf(what, sizeof(what), "%s, no MOVE_NOTIFY: registered read", names[p]);
		ret = reg_read(id, QLEN, base + 512, QLEN, &path);
		tap(!ret && path == P2PNVME_PATH_DMABUF_HOST, "%s: through host memory (%s, path %u)",
		    what, strerror(-ret), path);
		moved(ret, fd, QLEN, base + 512, QLEN, NULL, what);
	} else {
		tap(1, "%s: the exporter cannot move it while registered # SKIP not registered (%s)",
		    names[p], strerror(-reg));
		tap(1, "%s: registered read through host memory # SKIP not registered", names[p]);
		tap(1, "%s: registered read's bytes # SKIP not registered", names[p]);
	}
	b = where(fd);
	tap(b.pins == want, "%s: after the registered read, %u pins (%u: the registration's)",
	    names[p], b.pins, want);
	ret = reg_dmabuf_ex(fd, BUF, P2PNVME_BUF_F_REQUIRE_P2P, &id2, NULL);
	tap(ret == -EREMOTEIO || (swiotlb && ret == -EOPNOTSUPP),
	    "%s, no MOVE_NOTIFY: a registration requiring P2P is refused (%s)", names[p],
	    strerror(-ret));
	if (!ret)
		unreg(id2);
	b = where(fd);
	tap(b.pins == want,
	    "%s: the refused registration left no mapping behind (%u pins, %u: the first one's)",
	    names[p], b.pins, want);
	ret = dmabuf_io_f(P2PNVME_OP_READ, fd, 0, base, QLEN, P2PNVME_IO_F_REQUIRE_P2P, NULL);
	tap(ret == -EREMOTEIO || (swiotlb && ret == -EOPNOTSUPP),
	    "%s, no MOVE_NOTIFY: a per-I/O read requiring P2P is refused (%s)", names[p],
	    strerror(-ret));
	b = where(fd);
	tap(b.pins == want,
	    "%s: the refused per-I/O read left no mapping behind (%u pins, %u: the registration's)",
	    names[p], b.pins, want);
	/* the unregister drops the last reference: unmapped before it returns */
	ret = reg ? 0 : unreg(id);
	b = where(fd);
	tap(!ret && !b.pins, "%s: unregistered (%s), unpinned (%u pins)", names[p],
	    strerror(-ret), b.pins);
	close(fd);
}

/*
 * p2pbar's exports, on such a kernel: a mapping pinned by the core could
 * not be revoked when the provider goes, so p2pbar refuses every dynamic
 * importer at attach (P2P_DMA_BUF_CAN_REVOKE) and says why; a static
 * importer (NVIDIA's kind) is refused as on every kernel, with its own
 * log line (the guest script finds both). 5 cases.
 */
static void nomove_p2pbar(void)
{
	struct p2pbar_export e = { .argsz = sizeof(e), .size = BUF,
				   .flags = P2PBAR_EXPORT_F_CLOEXEC };
	struct p2pgpu_import im;
	uint32_t id = 0;
	int pfd, ret;

	if (!bardev)
		kt_skip("the profile has no second ivshmem function for p2pbar");
	pfd = open(bardev, O_RDWR | O_CLOEXEC);
	if (pfd < 0 || ioctl(pfd, P2PBAR_IOC_EXPORT, &e))
		kt_fail("p2pbar exports 1 MiB: %s", strerror(errno));
	ret = dmabuf_io(P2PNVME_OP_READ, e.fd, 0, 16384ULL * 4, QLEN, NULL);
	tap(ret == -EOPNOTSUPP, "no MOVE_NOTIFY: p2pnvme's per-I/O read into p2pbar's export refused at attach (%s)",
	    strerror(-ret));
	ret = reg_dmabuf(e.fd, BUF, &id);
	tap(ret == -EOPNOTSUPP, "no MOVE_NOTIFY: p2pnvme's registration of p2pbar's export refused (%s)",
	    strerror(-ret));
	if (!ret)
		unreg(id);
	ret = import(e.fd, 0, &im);
	tap(ret == -EOPNOTSUPP,
	    "no MOVE_NOTIFY: a static importer (NVIDIA's dma_buf_attach()) refused, as anywhere (%s)",
	    strerror(-ret));
	if (!ret)
		ioctl(gpu, P2PGPU_IOC_IMPORT_RELEASE, &im);
	ret = import(e.fd, P2PGPU_IMPORT_F_DYNAMIC, &im);
	tap(ret == -EOPNOTSUPP, "no MOVE_NOTIFY: amdgpu's dynamic peer2peer import of it refused (%s)",
	    strerror(-ret));
	if (!ret)
		ioctl(gpu, P2PGPU_IOC_IMPORT_RELEASE, &im);
	tap(klog_has("dma-buf import refused: this kernel pins importers' mappings (no CONFIG_DMABUF_MOVE_NOTIFY)"),
	    "p2pbar said why it refuses importers on this kernel");
	close(e.fd);
	close(pfd);
}

/* NVIDIA's exporter is static (no pin): as on any kernel */
TEST_F(gpuexp_nomove, dev, nomove_nvidia_transfers, refused ? 9 : 18, 120)
{
	if (refused)
		nvidia_refused();
	else
		transfers(P2PGPU_NVIDIA);
}

TEST_F(gpuexp_nomove, dev, nomove_amdgpu_pinned_host, 14, 60)
{
	nomove_pinned_host(P2PGPU_AMDGPU);
}

TEST_F(gpuexp_nomove, dev, nomove_xe_pinned_host, 14, 60)
{
	nomove_pinned_host(P2PGPU_XE);
}

TEST_F(gpuexp_nomove, dev, nomove_p2pbar_refused, 5, 60)
{
	nomove_p2pbar();
}

/*
 * review-3's lower-confidence item: a per-I/O (unregistered) dma-buf
 * transfer is not covered by the unbind notifier. Refuted: a batch holds
 * the dma-buf for its whole life (dma_buf_get() before it attaches, the
 * put after its last command), and NVIDIA's remove waits until every
 * dma-buf is released, so the GPU cannot give its memory back under the
 * batch, whose map, made while the remove waits, finds the driver still
 * bound; once it is unbound a new map is refused (-ENODEV: a function
 * without a driver, unbind_refused()). A dynamic exporter's buffer lives
 * as long as its dma-buf too (amdgpu leaves it in VRAM, xe moves it and
 * tells the importers). Here: a per-I/O read into an nvidia buffer waits
 * in p2pnvme's map for a KERNEL fence (a copy job's, 3 s: the map waits
 * io_timeout_ms, 5 s, at most), the test's fd is closed (the batch's reference is the only one besides the job's) and
 * the function unbound: the unbind returns after the read's fence, without
 * giving up, and the read went into the BAR (0, path dmabuf). 5 cases.
 */
struct held_read {
	int started, ret;
	uint32_t path;
	double end;
};

static void batch_across_unbind(void)
{
	const uint64_t base = 75120;
	struct held_read *hr;
	char drv[128];
	double tu, tj;
	int fd, ret, st;
	long pid;

	hr = mmap(NULL, sizeof(*hr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fd = export(P2PGPU_NVIDIA, 0, BUF, NULL);
	/* the job's fence signals 3 s after this at the earliest */
	tj = now();
	if (hr == MAP_FAILED || fd < 0 || gpu_job(fd, P2PGPU_JOB_KERNEL, 0, 4096, 0x77, 3000))
		kt_fail("nvidia: no export with a copy job pending");
	memset(hr, 0, sizeof(*hr));
	fflush(stdout);
	/* a child sharing the fd table: the test's close() is the child's too */
	pid = syscall(SYS_clone, CLONE_FILES | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid < 0)
		kt_fail("clone: %s", strerror(errno));
	if (!pid) {
		__atomic_store_n(&hr->started, 1, __ATOMIC_RELEASE);
		hr->ret = dmabuf_io(P2PNVME_OP_READ, fd, 0, base, QLEN, &hr->path);
		hr->end = now();
		_exit(0);
	}
	while (!__atomic_load_n(&hr->started, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(1500 * 1000);
	tap(!hr->end, "nvidia: a per-I/O read waits in p2pnvme's map for the copy job's KERNEL fence");
	close(fd);
	close(gpu);
	gpu = -1;
	ret = sysfs_write("/sys/bus/pci/drivers/p2pgpu/unbind", gpu_name);
	tu = now();
	waitpid(pid, &st, 0);
	tap(!ret && !klog_has(NV_GAVE_UP), "nvidia: the GPU unbinds with the batch in flight, its remove not given up (%s)",
	    strerror(-ret));
	/*
	 * The read's batch puts the dma-buf inside its ioctl, so the unbind
	 * may return before the reader's clock reads its own end: what shows
	 * the remove waited is that it returned after the fence the read
	 * waited for, 3 s after the job (1.5 s after the unbind began)
	 */
	tap(hr->end && tu >= tj + 3.0,
	    "nvidia: the unbind returned after the read's fence (its remove waited for the batch's dma-buf): %.2f s after the job, %.2f s from the read's end",
	    tu - tj, hr->end ? tu - hr->end : -1.0);
	tap(!hr->ret && hr->path == P2PNVME_PATH_DMABUF,
	    "nvidia: the read went into the BAR while the memory was still the buffer's (%s, path %u)",
	    strerror(-hr->ret), hr->path);
	snprintf(drv, sizeof(drv), "%s", gpu_name);
	ret = sysfs_write("/sys/bus/pci/drivers/p2pgpu/bind", drv);
	tap(!ret, "p2pgpu binds %s again (%s)", gpu_name, strerror(-ret));
	munmap(hr, sizeof(*hr));
}

/* GPU work writing the buffer does not hold p2pnvme's transfers: explicit sync */
TEST_F(gpuexp, dev, ordering_with_gpu_work, 6, 60)
{
	ordering();
}

/* a per-I/O batch across the GPU's unbind: it holds the dma-buf, NVIDIA's remove waits */
TEST_F(gpuexp, dev, batch_across_unbind, 5, 120)
{
	if (refused)
		kt_skip("the kernel's P2PDMA verdict refuses the GPU's BAR: no transfer into it");
	batch_across_unbind();
	self->gpu = gpu;	/* closed there, before the function binds again */
}

/* NVIDIA's remove waits for its dma-bufs; p2pnvme never holds it. p2pgpu binds again. */
TEST_F(gpuexp, dev, nvidia_unbind_release, 7, 120)
{
	if (refused)
		kt_skip("the kernel's P2PDMA verdict refuses the GPU's BAR: no nvidia registration to revoke (nvidia_refused())");
	nvidia_unbind_release();
	self->gpu = gpu;	/* closed there, before the function binds again */
}

/* last: p2pgpu is bound again, with nothing exported */
TEST_F(gpuexp, dev, unbind_midstream, refused ? 7 : 13, 240)
{
	if (refused)
		unbind_refused();
	else
		unbind_midstream();
	self->gpu = gpu;	/* closed there, before the function binds again */
}

int main(int argc, char **argv)
{
	char cls[128], cmdline[4096] = "";
	FILE *f;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s /dev/p2pgpu /dev/p2pnvmeN BAR [/dev/p2pbarN]\n",
			argv[0]);
		return 2;
	}
	gpu_path = argv[1];
	nvme_path = argv[2];
	bar = argv[3];
	bardev = argc == 5 ? argv[4] : NULL;
	bound_function("p2pgpu", gpu_name, sizeof(gpu_name));
	if (!gpu_name[0]) {
		fprintf(stderr, "no PCI function bound to p2pgpu in sysfs\n");
		return 2;
	}
	nvme_dev = strrchr(nvme_path, '/') ? strrchr(nvme_path, '/') + 1 : nvme_path;
	snprintf(cls, sizeof(cls), "p2pnvme/%s", nvme_dev);
	sysfs_function(cls, nvme_name, sizeof(nvme_name));
	f = fopen("/proc/cmdline", "r");
	if (f) {
		if (!fgets(cmdline, sizeof(cmdline), f))
			cmdline[0] = 0;
		fclose(f);
	}
	swiotlb = !!strstr(cmdline, "swiotlb=force");
	refused = !!strstr(cmdline, "p2pexpect=refused");
	common_bridge = share_bridge(gpu_name, nvme_name);
	nomove = !!strstr(cmdline, "p2pflavour=nomove");
	return kt_run(nomove ? "gpuexp_nomove" : "gpuexp");
}
