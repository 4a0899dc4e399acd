/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the file tests share (p2pfile-test.c, p2pfilecmd-test.c,
 * p2pfileuring-test.c): the byte pattern (a word per 8 bytes: magic, file
 * id, offset >> 3), p2pmem of the provider as a registered dma-buf, what
 * the file command's two tests set up alike (the controller's node and a
 * patterned file, its counters, the host's check of a file's extents in
 * the image), and the races of Documentation/files.rst step 3: an operation on a target
 * file again and again, each followed by a canary file written into what
 * it freed, against a stream of reads whose reader each program brings
 * (O_DIRECT pread and io_uring; the file command through the ioctl and
 * through io_uring).
 */
#ifndef P2PFILE_COMMON_H
#define P2PFILE_COMMON_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any #include: fallocate() needs it"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/types.h>

#include "harness.h"
#include "libp2p.h"

#define PAT_MAGIC	0x5046ULL
#define PAT_BLK		4096	/* the tests' filesystems have 4 KiB blocks */

/* the 8-byte word at file offset @off of file @id */
static inline uint64_t pat_word(unsigned int id, uint64_t off)
{
	return PAT_MAGIC << 48 | (uint64_t)(id & 0xffff) << 32 | (uint32_t)(off >> 3);
}

/* @len bytes of file @id's pattern from file offset @off into @p */
static inline void pat_fill(unsigned char *p, unsigned int id, uint64_t off, size_t len)
{
	size_t i;
	int b;

	for (i = 0; i < len; i++) {
		uint64_t w = pat_word(id, off + i);

		if (!((off + i) & 7) && i + 8 <= len) {
			for (b = 0; b < 8; b++)
				p[i + b] = w >> (8 * b);
			i += 7;
		} else {
			p[i] = w >> (8 * ((off + i) & 7));
		}
	}
}

/* the first byte of @p that is not @id's pattern from @off, or -1 */
static inline long long pat_diff(const unsigned char *p, unsigned int id, uint64_t off, size_t len)
{
	unsigned char b[4096];
	size_t i, j, n;

	for (i = 0; i < len; i += n) {
		n = len - i < sizeof(b) ? len - i : sizeof(b);
		pat_fill(b, id, off + i, n);
		for (j = 0; j < n; j++)
			if (p[i + j] != b[j])
				return i + j;
	}
	return -1;
}

static inline uint64_t get_le64(const unsigned char *p)
{
	uint64_t w = 0;
	int i;

	for (i = 7; i >= 0; i--)
		w = w << 8 | p[i];
	return w;
}

/*
 * @id's pattern written at [@off, @off + @len) of @fd, a MiB per pwrite();
 * a direct write if @fd is O_DIRECT. 0 or -errno.
 */
static inline int write_pat(int fd, unsigned int id, uint64_t off, size_t len)
{
	size_t piece = len < (1 << 20) ? len : (1 << 20), done = 0;
	unsigned char *b;
	int ret = 0;

	if (posix_memalign((void **)&b, PAT_BLK, piece ? piece : PAT_BLK))
		return -ENOMEM;
	while (done < len) {
		size_t n = len - done < piece ? len - done : piece;
		ssize_t w;

		pat_fill(b, id, off + done, n);
		w = pwrite(fd, b, n, off + done);
		if (w != (ssize_t)n) {
			ret = w < 0 ? -errno : -EIO;
			break;
		}
		done += n;
	}
	free(b);
	return ret;
}

/* file @name of directory @dirfd: @size bytes of @id's pattern, written directly, synced */
static inline int make_file_at(int dirfd, const char *name, unsigned int id, uint64_t size)
{
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
	int ret;

	if (fd < 0)
		return -errno;
	ret = write_pat(fd, id, 0, size);
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

static inline long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* p2pmem of the provider as a dma-buf, mapped and registered with @nfd */
struct dbuf {
	int dfd;
	unsigned char *p;
	size_t len;
	uint32_t id;
	uint64_t bar_offset;
};

static inline int dbuf_get(const char *bar_path, int nfd, size_t len, struct dbuf *b)
{
	struct p2pbar_export e;
	struct p2pbar_info i;
	int bfd = p2p_bar_open(bar_path, &i), ret;

	if (bfd < 0)
		return -bfd;
	ret = -p2p_bar_export(bfd, len, P2PBAR_EXPORT_F_CLOEXEC, &e);
	close(bfd);
	if (ret)
		return ret;
	b->dfd = e.fd;
	b->len = len;
	b->bar_offset = e.bus_addr - i.bus_addr + i.offset;
	b->p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, e.fd, 0);
	if (b->p == MAP_FAILED)
		return errno;
	return -p2p_nvme_register(nfd, P2PNVME_BUF_F_DMABUF, 0, len, e.fd, &b->id);
}

static inline void dbuf_put(int nfd, struct dbuf *b)
{
	p2p_nvme_unregister(nfd, b->id);
	munmap(b->p, b->len);
	close(b->dfd);
}

/* dbuf_get(), or the test fails */
static inline void dbuf_must(const char *bar_path, int nfd, size_t len, struct dbuf *b)
{
	int ret = dbuf_get(bar_path, nfd, len, b);

	if (ret)
		kt_fail("a registered dma-buf: %s", strerror(ret));
}

/*
 * @len bytes of p2pmem twice: a registered dma-buf (@b) and a /dev/p2pbarN
 * mapping (@m, of the provider's file *@bfd); or the test fails.
 */
static inline void mem2_get(const char *bar_path, int nfd, size_t len, struct dbuf *b, int *bfd,
			    struct p2p_mem *m)
{
	struct p2pbar_info i;

	dbuf_must(bar_path, nfd, len, b);
	*bfd = p2p_bar_open(bar_path, &i);
	if (*bfd < 0 || p2p_mem_get(*bfd, len, 0, m))
		kt_fail("a mapping of %s: %s", bar_path, strerror(errno));
}

static inline void mem2_put(int nfd, struct dbuf *b, int bfd, struct p2p_mem *m)
{
	p2p_mem_put(m);
	close(bfd);
	dbuf_put(nfd, b);
}

/* ---- the file command's tests (p2pfilecmd-test.c, p2pfileuring-test.c) ---- */

/* the tests' paths: char path[FILE_PATH_LEN] */
#define FILE_PATH_LEN	512

/* file @name in @d: @size bytes of @id's pattern, written back and synced */
static inline int mkfile(const char *d, const char *name, unsigned int id, size_t size,
			 char *path)
{
	int fd, ok;

	if (snprintf(path, FILE_PATH_LEN, "%s/%s", d, name) >= FILE_PATH_LEN) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	ok = (!size || !write_pat(fd, id, 0, size)) && !fsync(fd);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * The fixtures' start: the controller's @node opened (returned), a file
 * @name of @size bytes of @id's pattern in @dir (its path in @path) and
 * its direct I/O alignment in @st; or the test fails.
 */
static inline int node_and_file(const char *node, const char *dir, const char *name,
				unsigned int id, size_t size, char *path, struct statx *st)
{
	int nfd = open(node, O_RDWR | O_CLOEXEC);

	if (nfd < 0)
		kt_fail("open %s: %s", node, strerror(errno));
	if (mkfile(dir, name, id, size, path))
		kt_fail("writing %s/%s: %s", dir, name, strerror(errno));
	if (statx(AT_FDCWD, path, 0, STATX_DIOALIGN, st) || !(st->stx_mask & STATX_DIOALIGN) ||
	    !st->stx_dio_offset_align)
		kt_fail("statx STATX_DIOALIGN of %s: no direct I/O alignment", path);
	return nfd;
}

/* the number in /sys/class/p2pnvme/<@node's name>/@file, or -1 */
static inline long long node_num(const char *node, const char *file)
{
	const char *name = strrchr(node, '/') ? strrchr(node, '/') + 1 : node;
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/%s", name, file);
	return p2p_sysfs_num(path);
}

/* what extents_check() walks with */
struct extents_check_walk {
	const char *img_name;
	unsigned int id;
	uint64_t off, end, n;
};

static inline int extents_check_one(const struct fiemap_extent *e, void *arg)
{
	struct extents_check_walk *w = arg;
	uint64_t lo = e->fe_logical > w->off ? e->fe_logical : w->off;
	uint64_t hi = e->fe_logical + e->fe_length < w->end ? e->fe_logical + e->fe_length : w->end;

	if (e->fe_logical >= w->end)
		return 0;	/* past the range */
	if (hi <= lo || (e->fe_flags & (FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_UNKNOWN)))
		return -1;
	hostcheck("pattern %llu %s@%llu %#x %llu", (unsigned long long)(hi - lo), w->img_name,
		  (unsigned long long)(e->fe_physical + (lo - e->fe_logical)), w->id,
		  (unsigned long long)lo);
	w->n += hi - lo;
	return 0;
}

/*
 * @fd's extents under [@off, @off + @len) as the host must find them in
 * the image @img_name (FIEMAP, synced first): each a "pattern" check of
 * file @id's bytes at its physical offset. 0, or -1 where the range is not
 * all written extents.
 */
static inline int extents_check(int fd, const char *img_name, unsigned int id, uint64_t off,
				uint64_t len)
{
	struct extents_check_walk w = { .img_name = img_name, .id = id, .off = off,
					.end = off + len };

	if (p2p_fiemap_walk(fd, off, off + len, FIEMAP_FLAG_SYNC, extents_check_one, &w))
		return -1;
	return w.n == len ? 0 : -1;
}

/* ---- races (Documentation/files.rst, step 3) ------------------------------ */

#define EXT4_MAGIC	0xEF53
#define XFS_MAGIC	0x58465342

/* ext4's EXT4_IOC_MOVE_EXT (fs/ext4/ext4.h, what e4defrag calls) */
struct move_extent {
	__u32 reserved;
	__u32 donor_fd;
	__u64 orig_start;	/* in blocks */
	__u64 donor_start;
	__u64 len;
	__u64 moved_len;
};

#define EXT4_IOC_MOVE_EXT	_IOWR('f', 15, struct move_extent)

/* xfs's XFS_IOC_EXCHANGE_RANGE (fs/xfs/libxfs/xfs_fs.h, 6.10+) */
struct xfs_exchange_range {
	__s32 file1_fd;
	__u32 pad;
	__u64 file1_offset;
	__u64 file2_offset;
	__u64 length;
	__u64 flags;
};

#define XFS_EXCHANGE_RANGE_DRY_RUN	0x4ULL		/* bit 2 */
#define XFS_IOC_EXCHANGE_RANGE		_IOW('X', 129, struct xfs_exchange_range)

enum race {
	R_TRUNCATE, R_PUNCH, R_COLLAPSE, R_INSERT, R_WRITE, R_REFLINK, R_EXCHANGE, R_DEFRAG,
};

static inline const char *race_name(enum race kind)
{
	static const char *const name[] = {
		"truncate", "punch hole", "collapse range", "insert range",
		"overlapping and reallocating writes", "reflink (FICLONE)",
		"exchange range (XFS_IOC_EXCHANGE_RANGE)",
		"move extents (EXT4_IOC_MOVE_EXT, e4defrag's)",
	};

	return name[kind];
}

#define RACE_TSIZE	(1024 * 1024ULL)	/* the target */
#define RACE_SLOT	(128 * 1024ULL)		/* one read of the stream */
#define RACE_MIN_OPS	8
#define RACE_MIN_READS	24
#define RACE_MAX_PIECES	32

/* where a race runs */
struct race_ctx {
	int dirfd;		/* the directory of the target, the canary, the others */
	int fstype;		/* its statfs() f_type */
	int ms;			/* the racer goes on this long at least */
	const char *bar_name;	/* the host's name of the BAR the reads land in */
};

/* what the racer and the reader share (MAP_SHARED) */
struct race_state {
	int stop;		/* the racer is done */
	int quit;		/* the reader gave up waiting */
	long long reads;	/* these three: __atomic */
	int ops, err;
	char what[96];
};

static inline int race_open(const struct race_ctx *rc, const char *name, int flags)
{
	return openat(rc->dirfd, name, flags | O_CLOEXEC, 0644);
}

/* the canary: written into whatever was freed, synced, freed again */
static inline int race_canary(int c, unsigned int cid)
{
	int ret = write_pat(c, cid, 0, 256 * 1024);

	if (!ret && (fdatasync(c) || ftruncate(c, 0)))
		ret = -errno;
	return ret;
}

/* the racer's files: the target directly and through the page cache, the canary */
struct race_fds {
	int t, tb, c;
};

/*
 * One operation of @kind on the target at @off, then the canary into what
 * it freed, then the target whole again where the operation changed its
 * size or bytes. NULL, or the step that failed (errno says why).
 */
static inline const char *race_step(const struct race_ctx *rc, enum race kind, struct race_fds *f,
				    uint64_t off, int n, unsigned int tid, unsigned int cid)
{
	const uint64_t kib = 1024;
	struct xfs_exchange_range xr;
	struct move_extent me;
	const char *what = NULL;
	int aux = -1;

	switch (kind) {
	case R_TRUNCATE:
		if (ftruncate(f->tb, off))
			return "ftruncate";
		break;
	case R_PUNCH:
		if (fallocate(f->tb, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, 128 * kib))
			return "punch hole";
		break;
	case R_COLLAPSE:
		if (fallocate(f->tb, FALLOC_FL_COLLAPSE_RANGE, off, 64 * kib))
			return "collapse range";
		break;
	case R_INSERT:
		if (fallocate(f->tb, FALLOC_FL_INSERT_RANGE, off, 64 * kib))
			return "insert range";
		break;
	case R_WRITE:
		/* in place (direct, buffered); every third time out of place too */
		if (write_pat(n & 1 ? f->tb : f->t, tid + 1, off, 128 * kib))
			return "overlapping write";
		if (n % 3 != 2)
			break;
		aux = race_open(rc, "clone", O_RDWR | O_CREAT | O_TRUNC);
		if (aux >= 0 && !ioctl(aux, FICLONE, f->t)) {
			/* xfs: the write moves the target to new blocks (CoW) */
			if (write_pat(f->t, tid + 1, off, 128 * kib))
				what = "write to a shared extent";
		} else if (aux >= 0 && errno == EOPNOTSUPP) {
			/* ext4: a hole punched and written again (new blocks) */
			if (fallocate(f->t, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
				      128 * kib) || write_pat(f->t, tid + 1, off, 128 * kib))
				what = "punch and write";
		} else {
			what = "FICLONE of the target";
		}
		break;
	case R_REFLINK:
		/*
		 * The target's blocks shared with a clone, the clone written
		 * (its own blocks) and cloned onto the target, whose old blocks
		 * are freed: the canary; then the same back.
		 */
		aux = race_open(rc, "clone", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT);
		if (aux < 0 || ioctl(aux, FICLONE, f->t))
			what = "FICLONE from the target";
		else if (write_pat(aux, tid + 1, 0, RACE_TSIZE) || ioctl(f->t, FICLONE, aux))
			what = "FICLONE onto the target";
		else if (race_canary(f->c, cid))
			what = "the canary";
		else if (write_pat(aux, tid, 0, RACE_TSIZE) || ioctl(f->t, FICLONE, aux))
			what = "FICLONE of the target's pattern onto it";
		break;
	case R_EXCHANGE:
		/* a copy of the target's pattern exchanged in; the old blocks freed */
		aux = race_open(rc, "swap", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT);
		xr = (struct xfs_exchange_range){ .file1_fd = aux, .length = RACE_TSIZE };
		if (aux < 0 || write_pat(aux, tid, 0, RACE_TSIZE) || fsync(aux))
			what = "the exchange's file";
		else if (ioctl(f->t, XFS_IOC_EXCHANGE_RANGE, &xr))
			what = "XFS_IOC_EXCHANGE_RANGE";
		break;
	case R_DEFRAG:
		/* the target's data moved to a donor's blocks; the old freed */
		aux = race_open(rc, "donor", O_RDWR | O_CREAT | O_TRUNC);
		me = (struct move_extent){ .donor_fd = aux, .len = RACE_TSIZE / PAT_BLK };
		if (aux < 0 || fallocate(aux, 0, 0, RACE_TSIZE))
			what = "the donor";
		else if (ioctl(f->tb, EXT4_IOC_MOVE_EXT, &me) ||
			 me.moved_len != RACE_TSIZE / PAT_BLK)
			what = "EXT4_IOC_MOVE_EXT";
		break;
	}
	if (aux >= 0) {
		int err = errno;

		close(aux);
		unlinkat(rc->dirfd, "clone", 0);
		unlinkat(rc->dirfd, "swap", 0);
		unlinkat(rc->dirfd, "donor", 0);
		errno = err;
	}
	if (what)
		return what;
	if (race_canary(f->c, cid))
		return "the canary";
	if ((kind == R_TRUNCATE || kind == R_PUNCH || kind == R_COLLAPSE || kind == R_INSERT) &&
	    (ftruncate(f->tb, RACE_TSIZE) || write_pat(f->t, tid, 0, RACE_TSIZE)))
		return "the target written again";
	return NULL;
}

/*
 * The racer (a child): @kind's operation on the target again and again
 * (race_step()), for @rc->ms and until both sides did enough; the target
 * restored to its first pattern at the end. It never returns (_exit()).
 */
static inline void race_racer(const struct race_ctx *rc, enum race kind, struct race_state *st,
			      unsigned int tid, unsigned int cid)
{
	struct race_fds f = {
		.t = race_open(rc, "target", O_RDWR | O_DIRECT),
		.tb = race_open(rc, "target", O_RDWR),
		.c = race_open(rc, "canary", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT),
	};
	long long end = now_ms() + rc->ms;
	const char *what = NULL;

	srandom(tid);
	if (f.t < 0 || f.tb < 0 || f.c < 0)
		what = "open";
	while (!what && !__atomic_load_n(&st->quit, __ATOMIC_ACQUIRE) &&
	       (now_ms() < end || st->ops < RACE_MIN_OPS ||
		__atomic_load_n(&st->reads, __ATOMIC_ACQUIRE) < RACE_MIN_READS)) {
		errno = 0;
		what = race_step(rc, kind, &f, (random() % 14) * 64 * 1024, st->ops, tid, cid);
		if (!what)
			st->ops++;
	}
	errno = 0;
	if (!what && (ftruncate(f.tb, RACE_TSIZE) || write_pat(f.t, tid, 0, RACE_TSIZE) ||
		      fsync(f.t)))
		what = "the target restored";
	if (what) {
		st->err = errno ? errno : EIO;
		snprintf(st->what, sizeof(st->what), "%s", what);
	}
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	_exit(0);
}

/* a read's words: what may be there, what was */
struct race_tally {
	long long reads, shorts, zeros, elsewhere, canary, other, failed;
	long long bad_off;
	uint64_t bad_word;
	int first_err;
};

/*
 * Each word of @p (@n bytes read at file offset @off): the target's (@tid,
 * or @tid2 when set) at that offset; at another offset if @moved; zero if
 * @zeros; then the rest of the slot (@slot bytes) never holds the canary.
 */
static inline void race_classify(struct race_tally *t, const unsigned char *p, ssize_t n,
				 size_t slot, uint64_t off, unsigned int tid, unsigned int tid2,
				 unsigned int cid, int moved, int zeros)
{
	size_t i;

	for (i = 0; i + 8 <= slot; i += 8) {
		uint64_t w = get_le64(p + i);
		unsigned int id = (w >> 32) & 0xffff;
		int ours = w >> 48 == PAT_MAGIC && (id == tid || (tid2 && id == tid2));

		if (w >> 48 == PAT_MAGIC && id == cid) {
			t->canary++;
		} else if (n < 0 || (ssize_t)i >= n) {
			continue;
		} else if (!w && zeros) {
			t->zeros++;
		} else if (ours && (uint32_t)w == (uint32_t)((off + i) >> 3)) {
			continue;
		} else if (ours && moved) {
			t->elsewhere++;
		} else {
			if (!t->other++) {
				t->bad_off = off + i;
				t->bad_word = w;
			}
		}
	}
}

/*
 * The stream's reader, of the program running the race: @slot gives the
 * memory read @n (0, 1, ...) goes to (RACE_SLOT bytes the CPU may fill:
 * race_run() fills it with 0xee first, so that a byte claimed read but
 * never written is neither the pattern nor zero); @read reads RACE_SLOT
 * bytes of the target's @fd at @off into @p in pieces, each piece's bytes
 * or -errno in @res (RACE_MAX_PIECES), their count in *@np, and returns
 * the bytes read or the first -errno. @where names the memory for the
 * cases.
 */
struct race_reader {
	const char *where;
	unsigned char *(*slot)(struct race_reader *r, long long n);
	ssize_t (*read)(struct race_reader *r, long long n, int fd, unsigned char *p, uint64_t off,
			ssize_t *res, unsigned int *np);
};

/*
 * The operations a filesystem does not have: reflink and exchange range on
 * ext4, move extents on xfs, exchange range on an xfs made without it
 * (mkfs.xfs before xfsprogs 6.10 cannot ask for it): the test skips.
 */
static inline void race_skip_absent(const struct race_ctx *rc, enum race kind)
{
	struct xfs_exchange_range xr = { .length = PAT_BLK, .flags = XFS_EXCHANGE_RANGE_DRY_RUN };
	int a, b, absent;

	if (kind == R_REFLINK && rc->fstype == EXT4_MAGIC)
		kt_skip("ext4 has no reflink");
	if (kind == R_DEFRAG && rc->fstype != EXT4_MAGIC)
		kt_skip("EXT4_IOC_MOVE_EXT is ext4's; xfs moves extents by exchange range");
	if (kind != R_EXCHANGE)
		return;
	if (rc->fstype != XFS_MAGIC)
		kt_skip("exchange range is xfs's (XFS_IOC_EXCHANGE_RANGE)");
	if (make_file_at(rc->dirfd, "xa", 0, PAT_BLK) || make_file_at(rc->dirfd, "xb", 0, PAT_BLK))
		kt_fail("exchange range's probe files: %s", strerror(errno));
	a = race_open(rc, "xa", O_RDWR);
	b = race_open(rc, "xb", O_RDWR);
	xr.file1_fd = a;
	absent = ioctl(b, XFS_IOC_EXCHANGE_RANGE, &xr) && errno == EOPNOTSUPP;
	close(a);
	close(b);
	unlinkat(rc->dirfd, "xa", 0);
	unlinkat(rc->dirfd, "xb", 0);
	if (absent)
		kt_skip("%s",
			"this xfs lacks exchange range (EOPNOTSUPP: mkfs.xfs older than xfsprogs 6.10 cannot set the feature)");
}

/*
 * A race: a RACE_TSIZE target of file id @tid ("target" in @rc->dirfd),
 * its canary @tid + 3 ("canary"); a stream of RACE_SLOT reads at random
 * offsets by @rd while a child does @kind to the target (race_racer()).
 * Three cases: the racer's operations succeeded; every word read was the
 * target's (or its second pattern @tid + 1, the writes' and the
 * reflinks'), moved or zero where @kind makes it so; no canary word; and
 * a host check that the BAR holds none either. The target is left
 * restored, for the caller's own read of it whole; race_end() removes the
 * files.
 */
static inline void race_run(const struct race_ctx *rc, enum race kind, unsigned int tid,
			    struct race_reader *rd)
{
	unsigned int cid = tid + 3;
	int moved = kind == R_COLLAPSE || kind == R_INSERT;
	/* ext4's reallocating write is a punched hole written again */
	int zeros = kind == R_TRUNCATE || kind == R_PUNCH || moved ||
		    (kind == R_WRITE && rc->fstype == EXT4_MAGIC);
	unsigned int tid2 = kind == R_WRITE || kind == R_REFLINK ? tid + 1 : 0;
	struct race_state *st;
	struct race_tally t = { .bad_off = -1 };
	long long t0 = now_ms(), scale = getenv("P2P_TIMEOUT_SCALE") ? 5 : 1;
	pid_t pid;
	int fd;

	if (make_file_at(rc->dirfd, "target", tid, RACE_TSIZE))
		kt_fail("target: %s", strerror(errno));
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fd = race_open(rc, "target", O_RDONLY | O_DIRECT);
	if (st == MAP_FAILED || fd < 0)
		kt_fail("target: %s", strerror(errno));
	memset(st, 0, sizeof(*st));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		kt_fail("fork: %s", strerror(errno));
	if (!pid)
		race_racer(rc, kind, st, tid, cid);
	while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
		unsigned char *p = rd->slot(rd, t.reads);
		uint64_t off = (random() % (RACE_TSIZE / RACE_SLOT)) * RACE_SLOT;
		ssize_t r, res[RACE_MAX_PIECES];
		unsigned int np = 0, i;
		size_t piece;

		/*
		 * The slot filled first: an earlier read's bytes left there
		 * would pass for this one's. The barrier: these stores reach
		 * the BAR before the device's writes.
		 */
		memset(p, 0xee, RACE_SLOT);
		__sync_synchronize();
		r = rd->read(rd, t.reads, fd, p, off, res, &np);
		__atomic_store_n(&st->reads, ++t.reads, __ATOMIC_RELEASE);
		if (now_ms() - t0 > 60000 * scale)
			__atomic_store_n(&st->quit, 1, __ATOMIC_RELEASE);
		if (r < 0) {
			if (!t.failed++)
				t.first_err = -r;
			continue;
		}
		t.shorts += r < (ssize_t)RACE_SLOT;
		/* each piece checked for the bytes it read, at its own offset */
		if (!np || np > RACE_MAX_PIECES)
			kt_fail("the reader said %u pieces", np);
		piece = RACE_SLOT / np;
		for (i = 0; i < np; i++)
			race_classify(&t, p + i * piece, res[i], piece, off + i * piece, tid, tid2,
				      cid, moved, zeros);
	}
	waitpid(pid, NULL, 0);
	close(fd);
	tap(!st->err && st->ops >= RACE_MIN_OPS,
	    "%s: %d operations on the target, each followed by a canary written into what it freed%s%s%s%s",
	    race_name(kind), st->ops, st->err ? ": " : "", st->what, st->err ? ": " : "",
	    st->err ? strerror(st->err) : "");
	tap(!t.failed && !t.other && t.reads >= RACE_MIN_READS,
	    "%s: %lld reads during them (%lld short, %lld failed%s%s), every word the target's at its offset%s%s (%lld zero words, %lld moved)",
	    race_name(kind), t.reads, t.shorts, t.failed, t.failed ? ": " : "",
	    t.failed ? strerror(t.first_err) : "", moved ? " or moved" : "",
	    zeros ? " or zero" : "", t.zeros, t.elsewhere);
	if (t.other)
		printf("    # %lld unexpected words; the first at file offset %lld: %#018llx\n",
		       t.other, t.bad_off, (unsigned long long)t.bad_word);
	tap(!t.canary, "%s: no canary word (file id %#x) in %s after any read (%lld found)",
	    race_name(kind), cid, rd->where, t.canary);
	hostcheck("nopattern %s %#x", rc->bar_name, cid);
	munmap(st, sizeof(*st));
}

/* the race's files gone */
static inline void race_end(const struct race_ctx *rc)
{
	unlinkat(rc->dirfd, "target", 0);
	unlinkat(rc->dirfd, "canary", 0);
}

/* ---- a file's direct I/O toggled (Documentation/files.rst, step 8) -------- */

/*
 * ext4's data journalling flag (FS_JOURNAL_DATA_FL, chattr +j) set and
 * cleared on a file again and again by a child, so that its direct I/O
 * comes and goes under a stream of transfers: ext4_dio_alignment() is 0
 * while the flag is set, on a nodelalloc mount only (ext4_inode_journal_mode()
 * ignores the flag with delalloc). The child needs CAP_SYS_RESOURCE.
 */
struct jflag_state {
	int stop;		/* the stream is done: __atomic */
	long long toggles;	/* flag changes done: __atomic */
	int err;		/* the first FS_IOC_SETFLAGS error */
};

/*
 * Is the journalling flag on @fd's file what takes its direct I/O away
 * (STATX_DIOALIGN 0 while set, not 0 after)? 1, 0 (no: a delalloc mount),
 * or -errno (EOPNOTSUPP: not ext4). The flag is left cleared.
 */
static inline int jflag_works(int fd)
{
	struct statx on, off;
	int flags, ret = 0;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		return -errno;
	flags |= FS_JOURNAL_DATA_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags))
		return -errno;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &on))
		ret = -errno;
	flags &= ~FS_JOURNAL_DATA_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags) && !ret)
		ret = -errno;
	if (!ret && statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &off))
		ret = -errno;
	if (ret)
		return ret;
	return !on.stx_dio_offset_align && off.stx_dio_offset_align;
}

/*
 * The toggler (a child): the flag on and off on @fd's file, as fast as the
 * filesystem lets it (each change waits for the direct I/O in flight,
 * takes i_rwsem exclusive and writes the journal), until @st->stop; left
 * cleared. It never returns (_exit()).
 */
static inline void jflag_toggler(int fd, struct jflag_state *st)
{
	int flags, on = 0;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags)) {
		__atomic_store_n(&st->err, errno, __ATOMIC_RELEASE);
		_exit(0);
	}
	while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
		on = !on;
		flags = on ? flags | FS_JOURNAL_DATA_FL : flags & ~FS_JOURNAL_DATA_FL;
		if (ioctl(fd, FS_IOC_SETFLAGS, &flags)) {
			__atomic_store_n(&st->err, errno, __ATOMIC_RELEASE);
			break;
		}
		__atomic_add_fetch(&st->toggles, 1, __ATOMIC_RELEASE);
	}
	flags &= ~FS_JOURNAL_DATA_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags) && !st->err)
		__atomic_store_n(&st->err, errno, __ATOMIC_RELEASE);
	_exit(0);
}

#endif /* P2PFILE_COMMON_H */
