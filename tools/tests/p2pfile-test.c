// SPDX-License-Identifier: GPL-2.0
/*
 * p2pfile-test: byte ranges of files on a mounted ext4 or xfs read with
 * O_DIRECT, by pread() and by io_uring's IORING_OP_READ, into p2pmem (a
 * /dev/p2pbarN mapping) and into host memory, with KTAP output
 * (Documentation/files.rst, step 3; Documentation/bench.rst, "The files
 * suite").
 *
 *   p2pfile-test SUITE DIR /dev/p2pbarN BAR_NAME ID_BASE MANIFEST
 *
 * Every file holds a pattern keyed by (file id, offset): the 8-byte word at
 * file offset O of file I is 0x5046 << 48 | I << 32 | O / 8, little endian,
 * so any byte can be checked, and a word out of place, of another file (the
 * canaries of the races) or of nowhere is told apart from a zero. Ids are
 * ID_BASE + a file number (16 bits): each run of the suite has its own.
 * What lands in p2pmem is checked here through the mapping and on the host
 * in the BAR's backing file (qemu/hostcheck.py "pattern", "fill", "nopattern"
 * on BAR_NAME), while this program still holds the memory (p2pbar zeroes
 * memory that is freed).
 *
 * The files: fragmented (free space cut into single blocks first, then
 * random-order 4 KiB writes and an fsync: hundreds of extents), sparse
 * (holes read as zeros), fallocated with unwritten ranges and a zeroed
 * range (zeros), written and not flushed (the direct read must see the
 * page cache's bytes), larger than the BAR chunk this program maps (2 MiB)
 * and than one NVMe command, ending mid-sector (reads across EOF short as a
 * buffered pread's). Misaligned offset, length and buffer per
 * statx(STATX_DIOALIGN): EINVAL, nothing written. Then races: a stream of
 * reads of a target file against truncate, punch hole, collapse range,
 * insert range, overlapping and reallocating writes, reflink (FICLONE) and
 * XFS_IOC_EXCHANGE_RANGE where the filesystem has them, and ext4's
 * EXT4_IOC_MOVE_EXT (what e4defrag does); after each operation a canary
 * file is written into the freed blocks, and its pattern must never reach
 * a destination.
 *
 * The files the suite keeps are listed in MANIFEST, one line each:
 * "NAME INODE ID SIZE EXTENTS FNV ZEROS", their FIEMAP (clipped at the
 * last block, adjacent extents merged) as a count and an FNV-1a hash, and
 * the ranges that read as zeros ("a-b,c-d" or "-"). After the unmount the
 * guest test asks the host to read the same extents from the image
 * (debugfs, xfs_db) and the bytes there (qemu/hostcheck.py "fsmap",
 * "fsdata").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/p2pbar.h>
#include <linux/types.h>

#include "harness.h"
#include "libp2p.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define KIB		1024ULL
#define MIB		(1024 * KIB)
#define BLK		4096		/* both filesystems are made with 4 KiB blocks */
#define CHUNK		(2 * MIB)	/* the p2pmem each test maps: the BAR chunk */
#define HOSTBUF		(8 * MIB)
#define PAT_MAGIC	0x5046ULL
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

/* file numbers, added to ID_BASE */
enum {
	F_ALIGN = 1, F_FRAG, F_SPARSE, F_UNW, F_NEW, F_OVER1, F_OVER2, F_BIG, F_EOF,
	F_RACE = 0x20,		/* + 4 * race: target, its second generation, canary */
};

static const char *dir, *bar_path, *bar_name, *manifest;
static unsigned int idbase;
static int race_ms = 1500;

/* ---- the pattern ---------------------------------------------------------- */

static __u64 pat_word(unsigned int id, __u64 off)
{
	return PAT_MAGIC << 48 | (__u64)(id & 0xffff) << 32 | (uint32_t)(off >> 3);
}

static unsigned char pat_byte(unsigned int id, __u64 off)
{
	return pat_word(id, off) >> (8 * (off & 7));
}

static __u64 get_le64(const unsigned char *p)
{
	__u64 w = 0;
	int i;

	for (i = 7; i >= 0; i--)
		w = w << 8 | p[i];
	return w;
}

/* @len bytes of file @id's pattern from file offset @off into @p */
static void pat_fill(unsigned char *p, unsigned int id, __u64 off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (!((off + i) & 7) && i + 8 <= len) {
			__u64 w = pat_word(id, off + i);
			int b;

			for (b = 0; b < 8; b++)
				p[i + b] = w >> (8 * b);
			i += 7;
		} else {
			p[i] = pat_byte(id, off + i);
		}
	}
}

/* ranges of a file that read as zeros: [a, b) */
struct range {
	__u64 a, b;
};

static int in_zeros(__u64 off, const struct range *z, int nz)
{
	int i;

	for (i = 0; i < nz; i++)
		if (off >= z[i].a && off < z[i].b)
			return 1;
	return 0;
}

/*
 * The first byte of @p (file bytes [@off, @off + @len)) that is not what the
 * file holds: zero inside @z, @id's pattern elsewhere. -1 if none.
 */
static long long layout_diff(const unsigned char *p, unsigned int id, __u64 off, size_t len,
			     const struct range *z, int nz)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char want = in_zeros(off + i, z, nz) ? 0 : pat_byte(id, off + i);

		if (p[i] != want)
			return i;
	}
	return -1;
}

/* ---- files ---------------------------------------------------------------- */

static int dirfd_g = -1;

static int fopen_at(const char *name, int flags)
{
	return openat(dirfd_g, name, flags | O_CLOEXEC, 0644);
}

/* @id's pattern written at [@off, @off + @len); a direct write if @fd is O_DIRECT */
static int write_pat(int fd, unsigned int id, __u64 off, size_t len)
{
	size_t piece = len < MIB ? len : MIB, done = 0;
	unsigned char *b;
	int ret = 0;

	if (posix_memalign((void **)&b, BLK, piece ? piece : BLK))
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

/* a new file of @size bytes of @id's pattern, written directly and synced */
static int make_file(const char *name, unsigned int id, __u64 size)
{
	int fd = fopen_at(name, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT), ret;

	if (fd < 0)
		return -errno;
	ret = write_pat(fd, id, 0, size);
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

/* ---- FIEMAP and the manifest ---------------------------------------------- */

struct ext {
	__u64 l, p, n;
	unsigned int u;		/* 1 unwritten, 9 delalloc or unknown (never on disk) */
};

/*
 * The extents of @fd, synced first unless @nosync, clipped at @end, adjacent
 * ones merged: qemu/hostcheck.py reads the image the same way. Returns how
 * many (at most @max) or -errno; *@flags_or gets every extent's flags.
 */
static int extents(int fd, __u64 end, struct ext *e, int max, int nosync, unsigned int *flags_or)
{
	size_t sz = sizeof(struct fiemap) + 512 * sizeof(struct fiemap_extent);
	struct fiemap *fm = calloc(1, sz);
	__u64 start = 0;
	int n = 0, last = 0;
	unsigned int i;

	if (!fm)
		return -ENOMEM;
	if (flags_or)
		*flags_or = 0;
	while (!last && start < end) {
		memset(fm, 0, sz);
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_flags = nosync ? 0 : FIEMAP_FLAG_SYNC;
		fm->fm_extent_count = 512;
		if (ioctl(fd, FS_IOC_FIEMAP, fm)) {
			n = -errno;
			break;
		}
		if (!fm->fm_mapped_extents)
			break;
		for (i = 0; i < fm->fm_mapped_extents; i++) {
			struct fiemap_extent *f = &fm->fm_extents[i];
			__u64 l = f->fe_logical, len = f->fe_length;
			unsigned int u = f->fe_flags & FIEMAP_EXTENT_UNWRITTEN ? 1 : 0;

			if (f->fe_flags & (FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN))
				u = 9;
			if (flags_or)
				*flags_or |= f->fe_flags;
			if (f->fe_flags & FIEMAP_EXTENT_LAST)
				last = 1;
			start = l + len;
			if (l >= end)
				continue;
			if (l + len > end)
				len = end - l;
			struct ext *prev = n ? &e[n - 1] : NULL;

			if (prev && prev->l + prev->n == l && prev->p + prev->n == f->fe_physical &&
			    prev->u == u) {
				e[n - 1].n += len;
				continue;
			}
			if (n == max) {
				free(fm);
				return -E2BIG;
			}
			e[n++] = (struct ext){ l, f->fe_physical, len, u };
		}
	}
	free(fm);
	return n;
}

/* FNV-1a 64 of the canonical text of @n extents: "L P N U\n" each, in bytes */
static __u64 extents_fnv(const struct ext *e, int n)
{
	__u64 h = 0xcbf29ce484222325ULL;
	char line[96];
	int i, k, len;

	for (i = 0; i < n; i++) {
		len = snprintf(line, sizeof(line), "%llu %llu %llu %u\n",
			       e[i].l, e[i].p, e[i].n, e[i].u);
		for (k = 0; k < len; k++) {
			h ^= (unsigned char)line[k];
			h *= 0x100000001b3ULL;
		}
	}
	return h;
}

#define MAX_EXT 4096

/* one line of the manifest for file @name; 0 or -errno */
static int manifest_add(const char *name, unsigned int id, __u64 size,
			const struct range *z, int nz)
{
	struct ext *e = calloc(MAX_EXT, sizeof(*e));
	char zs[256] = "-";
	struct stat st;
	int fd, n, i, len = 0;
	FILE *f;

	fd = fopen_at(name, O_RDONLY);
	if (!e || fd < 0 || fstat(fd, &st)) {
		free(e);
		return -errno;
	}
	n = extents(fd, (size + BLK - 1) / BLK * BLK, e, MAX_EXT, 0, NULL);
	close(fd);
	for (i = 0; i < nz && len < (int)sizeof(zs) - 48; i++)
		len += snprintf(zs + len, sizeof(zs) - len, "%s%llu-%llu", i ? "," : "",
				z[i].a, z[i].b);
	f = fopen(manifest, "a");
	if (n < 0 || !f) {
		free(e);
		if (f)
			fclose(f);
		return n < 0 ? n : -errno;
	}
	fprintf(f, "%s %llu %#x %llu %d %016llx %s\n", name,
		(__u64)st.st_ino, id, size, n, extents_fnv(e, n), zs);
	fclose(f);
	free(e);
	return 0;
}

/* ---- reads ---------------------------------------------------------------- */

enum read_by { BY_PREAD, BY_URING };
static const char *const how_name[] = { "pread", "IORING_OP_READ" };

#define MAX_PIECES	32

/*
 * @len bytes at @off of @fd into @p, by one pread() or by io_uring reads
 * of @piece bytes each, all in flight at once; the bytes read (as pread
 * counts them: the pieces' sum) or -errno. The pieces are independent
 * reads: against a racing truncate, a later piece can come back full
 * after an earlier one met EOF, so the sum does not say which bytes were
 * read. @res (MAX_PIECES entries, or NULL) gets each piece's own result,
 * the whole read's as piece 0 for a pread; the count of pieces returned
 * through @np.
 */
static ssize_t rd_pieces(struct io_uring *ring, enum read_by how, int fd, void *p, size_t len,
			 __u64 off, size_t piece, ssize_t *res, unsigned int *np)
{
	struct io_uring_cqe *cqe;
	unsigned int n, i, done = 0;
	ssize_t total = 0;
	int err = 0;

	if (np)
		*np = 0;
	if (how == BY_PREAD) {
		ssize_t r = pread(fd, p, len, off);

		r = r < 0 ? -errno : r;
		if (res)
			res[0] = r;
		if (np)
			*np = 1;
		return r;
	}
	if (!piece || piece > len)
		piece = len;
	n = (len + piece - 1) / piece;
	if (n > MAX_PIECES)
		return -E2BIG;
	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		size_t l = len - i * piece < piece ? len - i * piece : piece;

		if (!sqe)
			return -EBUSY;
		io_uring_prep_read(sqe, fd, (char *)p + i * piece, l, off + i * piece);
		sqe->user_data = i;	/* which piece its completion is */
		if (res)
			res[i] = -EIO;	/* until its completion says */
	}
	if (io_uring_submit(ring) != (int)n)
		err = -EIO;
	while (done < n) {
		int r = io_uring_wait_cqe(ring, &cqe);

		if (r)
			return r;
		if (res && cqe->user_data < n)
			res[cqe->user_data] = cqe->res;
		if (cqe->res < 0 && !err)
			err = cqe->res;
		else if (cqe->res > 0)
			total += cqe->res;
		io_uring_cqe_seen(ring, cqe);
		done++;
	}
	if (np)
		*np = n;
	return err ? err : total;
}

static ssize_t rd(struct io_uring *ring, enum read_by how, int fd, void *p, size_t len, __u64 off,
		  size_t piece)
{
	return rd_pieces(ring, how, fd, p, len, off, piece, NULL, NULL);
}

/* where a read lands: the p2pmem chunk or host memory */
struct dst {
	const char *name;
	unsigned char *p;
	int p2p;
	__u64 bar_off;	/* of p[0] in the BAR (p2p) */
};

FIXTURE(ft) {
	int bar, fstype;
	struct p2p_mem m;
	unsigned char *host;
	struct io_uring ring;
	struct dst d[2];	/* p2pmem, host memory */
};

FIXTURE_SETUP(ft)
{
	struct p2pbar_info info;
	struct statfs sf;
	int ret;

	self->bar = p2p_bar_open(bar_path, &info);
	if (self->bar < 0)
		kt_fail("open %s: %s", bar_path, strerror(-self->bar));
	ret = p2p_mem_get(self->bar, CHUNK, 0, &self->m);
	if (ret)
		kt_fail("%llu MiB of p2pmem from %s: %s", CHUNK / MIB, bar_path, strerror(-ret));
	if (posix_memalign((void **)&self->host, BLK, HOSTBUF))
		kt_fail("host memory: %s", strerror(ENOMEM));
	memset(self->host, 0, HOSTBUF);
	ret = io_uring_queue_init(64, &self->ring, 0);
	if (ret)
		kt_fail("io_uring_queue_init: %s", strerror(-ret));
	dirfd_g = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd_g < 0 || fstatfs(dirfd_g, &sf))
		kt_fail("%s: %s", dir, strerror(errno));
	self->fstype = sf.f_type;
	self->d[0] = (struct dst){ "p2pmem", self->m.p, 1, self->m.bar_offset };
	self->d[1] = (struct dst){ "host memory", self->host, 0, 0 };
}

FIXTURE_TEARDOWN(ft)
{
	io_uring_queue_exit(&self->ring);
	free(self->host);
	p2p_mem_put(&self->m);
	close(self->bar);
	close(dirfd_g);
}

/*
 * The host checks the bytes a read put in p2pmem at @doff: @id's pattern
 * from file offset @off, zeros inside @z, as the BAR's backing file has them.
 */
static void host_layout(struct dst *d, __u64 doff, unsigned int id, __u64 off, size_t len,
			const struct range *z, int nz)
{
	__u64 pos = off, end = off + len;

	if (!d->p2p)
		return;
	while (pos < end) {
		int zero = in_zeros(pos, z, nz);
		__u64 next = pos;

		while (next < end && in_zeros(next, z, nz) == zero) {
			__u64 step = end;
			int i;

			/* to the next range boundary at once */
			for (i = 0; i < nz; i++) {
				if (z[i].a > next && z[i].a < step)
					step = z[i].a;
				if (z[i].b > next && z[i].b < step)
					step = z[i].b;
			}
			next = step;
		}
		if (zero)
			hostcheck("fill %llu %s@%llu 0", next - pos, bar_name,
				  d->bar_off + doff + (pos - off));
		else
			hostcheck("pattern %llu %s@%llu %#x %llu", next - pos,
				  bar_name, d->bar_off + doff + (pos - off), id, pos);
		pos = next;
	}
}

/*
 * A case: [@off, @off + @len) of file @name read into @d at @doff (filled
 * with 0xee before) by @how in pieces of @piece; @want bytes come back,
 * and they are what the file holds; the host checks p2pmem's copy.
 */
static void read_case(struct _kt_fixture_ft *self, struct dst *d, enum read_by how,
		      const char *name, unsigned int id, __u64 off, size_t len, size_t piece,
		      __u64 doff, ssize_t want, const struct range *z, int nz)
{
	int fd = fopen_at(name, O_RDONLY | O_DIRECT);
	long long bad = -1;
	ssize_t r;

	memset(d->p + doff, 0xee, len);
	r = fd < 0 ? -errno : rd(&self->ring, how, fd, d->p + doff, len, off, piece);
	if (r == want)
		bad = layout_diff(d->p + doff, id, off, r, z, nz);
	tap(r == want && bad < 0, "%s: %s of %zu bytes at %llu into %s: %zd bytes%s%s",
	    name, how_name[how], len, off, d->name, r,
	    r < 0 ? ", " : (bad < 0 ? ", each as the file holds it" : ", a byte differs"),
	    r < 0 ? strerror(-r) : "");
	if (bad >= 0)
		printf("    # first difference at +%lld: %#04x, want %#04x\n", bad,
		       d->p[doff + bad], in_zeros(off + bad, z, nz) ? 0 : pat_byte(id, off + bad));
	if (r == want && r > 0)
		host_layout(d, doff, id, off, r, z, nz);
	if (fd >= 0)
		close(fd);
}

/*
 * The whole of [0, @size) of @name into p2pmem in CHUNK pieces (each
 * piece a pread or io_uring reads of @piece), then into host memory at
 * once: 2 * pieces + 2 cases.
 */
static void read_all(struct _kt_fixture_ft *self, const char *name, unsigned int id, __u64 size,
		     size_t piece, const struct range *z, int nz)
{
	enum read_by how;
	__u64 off;

	for (how = BY_PREAD; how <= BY_URING; how++)
		for (off = 0; off < size; off += CHUNK) {
			size_t len = size - off < CHUNK ? size - off : CHUNK;

			read_case(self, &self->d[0], how, name, id, off, len, piece, 0, len, z, nz);
		}
	for (how = BY_PREAD; how <= BY_URING; how++)
		read_case(self, &self->d[1], how, name, id, 0, size, how == BY_URING ? MIB : 0, 0,
			  size, z, nz);
}

static int chunks(__u64 size)
{
	return (size + CHUNK - 1) / CHUNK;
}

/* a case: file @name is in the manifest */
static void in_manifest(const char *name, unsigned int id, __u64 size, const struct range *z,
			int nz)
{
	int ret = manifest_add(name, id, size, z, nz);

	tap(!ret, "%s: its extents in the manifest for the host%s%s", name, ret ? ": " : "",
	    ret ? strerror(-ret) : "");
}

/* ---- alignment ------------------------------------------------------------ */

/*
 * statx(STATX_DIOALIGN) on a written file, then for each destination an
 * offset, a length and a buffer misaligned by half the alignment statx
 * gives: EINVAL and nothing written; an io_uring read at a misaligned
 * offset: -EINVAL in its CQE; the smallest aligned read: its bytes.
 */
TEST_F(files, ft, dio_align, 3 + 2 * 5, 60)
{
	struct statx stx;
	unsigned int ma, oa;
	int fd, i, ret;

	ret = make_file("align", idbase + F_ALIGN, 256 * KIB);
	fd = fopen_at("align", O_RDONLY | O_DIRECT);
	if (ret || fd < 0)
		kt_fail("align: written and opened: %s", strerror(ret ? -ret : errno));
	ret = statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx);
	tap(!ret && (stx.stx_mask & STATX_DIOALIGN), "statx(STATX_DIOALIGN) answers (%s)",
	    ret ? strerror(errno) : "ok");
	ma = stx.stx_dio_mem_align;
	oa = stx.stx_dio_offset_align;
	tap(ma >= 1 && ma <= BLK && !(ma & (ma - 1)),
	    "direct I/O memory alignment is a power of two up to a page: %u", ma);
	tap(oa >= 512 && oa <= BLK && !(oa & (oa - 1)),
	    "direct I/O offset alignment is a logical block or more, up to a page: %u", oa);
	if (!oa || oa > BLK || !ma || ma > BLK)
		kt_fail("no alignment to test against");
	for (i = 0; i < 2; i++) {
		struct dst *d = &self->d[i];
		unsigned char *p = d->p + BLK;
		long long bad;
		ssize_t r;
		int k;

		char what[128];

		memset(d->p, 0xee, 64 * KIB);
		r = pread(fd, p, oa, oa / 2);
		snprintf(what, sizeof(what), "%s: pread at offset %u (offset alignment / 2)",
			 d->name, oa / 2);
		result(r < 0 && errno == EINVAL, what, EINVAL, r < 0 ? errno : 0);
		r = pread(fd, p, oa + oa / 2, oa);
		snprintf(what, sizeof(what), "%s: pread of %u bytes (1.5 offset alignments)",
			 d->name, oa + oa / 2);
		result(r < 0 && errno == EINVAL, what, EINVAL, r < 0 ? errno : 0);
		if (ma > 1) {
			r = pread(fd, p + ma / 2, oa, oa);
			snprintf(what, sizeof(what),
				 "%s: pread into a buffer %u bytes off its alignment", d->name,
				 ma / 2);
			result(r < 0 && errno == EINVAL, what, EINVAL, r < 0 ? errno : 0);
		} else {
			tap(1,
			    "%s: pread into a misaligned buffer # SKIP stx_dio_mem_align is 1: any buffer is aligned",
			    d->name);
		}
		r = rd(&self->ring, BY_URING, fd, p, oa, oa / 2, 0);
		snprintf(what, sizeof(what), "%s: IORING_OP_READ at offset %u", d->name, oa / 2);
		result(r == -EINVAL, what, EINVAL, r < 0 ? -r : 0);
		for (k = 0; k < 64 * (int)KIB && d->p[k] == 0xee; k++)
			;
		r = pread(fd, d->p + ma, oa, oa);
		bad = r == oa ? layout_diff(d->p + ma, idbase + F_ALIGN, oa, oa, NULL, 0) : 0;
		tap(k == 64 * KIB && r == oa && bad < 0,
		    "%s: the refused reads wrote nothing (%d bytes untouched), and %u bytes at %u into a buffer aligned to %u are the file's",
		    d->name, k, oa, oa, ma);
		if (r == oa)
			host_layout(d, ma, idbase + F_ALIGN, oa, oa, NULL, 0);
	}
	close(fd);
	unlinkat(dirfd_g, "align", 0);
}

/* ---- the corpus ----------------------------------------------------------- */

#define FRAG_SIZE	(3 * MIB)

/*
 * Written whole, then every other block punched out and written again
 * directly, in random order, each right after its punch: the freed block
 * is not reused before the log commits (ext4's deferred frees, xfs's busy
 * extents), so each goes elsewhere and every block is an extent of its own.
 */
TEST_F(files, ft, fragmented, 2 + 2 * chunks(FRAG_SIZE) + 2 + 1, 180)
{
	unsigned int nodd = FRAG_SIZE / BLK / 2, i, *order = calloc(nodd, sizeof(*order));
	struct ext *e = calloc(MAX_EXT, sizeof(*e));
	int fd, n, ret = 0;

	if (!e || !order)
		kt_fail("memory");
	if (make_file("fragmented", idbase + F_FRAG, FRAG_SIZE))
		kt_fail("fragmented: %s", strerror(errno));
	fd = fopen_at("fragmented", O_RDWR | O_DIRECT);
	if (fd < 0)
		kt_fail("fragmented: %s", strerror(errno));
	for (i = 0; i < nodd; i++)
		order[i] = 2 * i + 1;
	srandom(idbase);
	for (i = nodd - 1; i > 0; i--) {
		unsigned int j = random() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < nodd && !ret; i++) {
		__u64 off = (__u64)order[i] * BLK;

		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, BLK))
			ret = -errno;
		else
			ret = write_pat(fd, idbase + F_FRAG, off, BLK);
	}
	if (!ret && fsync(fd))
		ret = -errno;
	tap(!ret,
	    "fragmented: 3 MiB written, then its %u odd blocks punched and written again in random order, fsync%s%s",
	    nodd, ret ? ": " : "", ret ? strerror(-ret) : "");
	n = extents(fd, FRAG_SIZE, e, MAX_EXT, 0, NULL);
	tap(n >= 300, "fragmented: %d extents (FIEMAP), want 300 or more", n);
	close(fd);
	read_all(self, "fragmented", idbase + F_FRAG, FRAG_SIZE, 128 * KIB, NULL, 0);
	in_manifest("fragmented", idbase + F_FRAG, FRAG_SIZE, NULL, 0);
	free(order);
	free(e);
}

#define SPARSE_SIZE	(4 * MIB)
static const struct range sparse_data[] = {
	{ 0, 64 * KIB }, { MIB + 64 * KIB, MIB + 320 * KIB }, { 3 * MIB, 3 * MIB + 128 * KIB },
};

static const struct range sparse_holes[] = {
	{ 64 * KIB, MIB + 64 * KIB }, { MIB + 320 * KIB, 3 * MIB },
	{ 3 * MIB + 128 * KIB, SPARSE_SIZE },
};

TEST_F(files, ft, sparse, 1 + 2 * chunks(SPARSE_SIZE) + 2 + 1, 120)
{
	__u64 pos = 0;
	int fd, i, ok = 1;
	char got[256] = "";
	size_t gl = 0;

	/* the size first: no write extends the file (no post-EOF preallocation) */
	fd = fopen_at("sparse", O_RDWR | O_CREAT | O_TRUNC);
	if (fd < 0 || ftruncate(fd, SPARSE_SIZE))
		kt_fail("sparse: %s", strerror(errno));
	for (i = 0; i < 3; i++)
		if (write_pat(fd, idbase + F_SPARSE, sparse_data[i].a,
			      sparse_data[i].b - sparse_data[i].a))
			kt_fail("sparse: write: %s", strerror(errno));
	if (fsync(fd))
		kt_fail("sparse: fsync: %s", strerror(errno));
	for (i = 0; i < 3; i++) {
		off_t d = lseek(fd, pos, SEEK_DATA), h = d < 0 ? -1 : lseek(fd, d, SEEK_HOLE);

		gl += snprintf(got + gl, sizeof(got) - gl, " [%lld, %lld)", (long long)d,
			       (long long)h);
		ok &= d == (off_t)sparse_data[i].a && h == (off_t)sparse_data[i].b;
		pos = h < 0 ? (off_t)SPARSE_SIZE : h;
	}
	tap(ok, "sparse: SEEK_DATA/SEEK_HOLE find the three data ranges:%s", got);
	close(fd);
	read_all(self, "sparse", idbase + F_SPARSE, SPARSE_SIZE, 256 * KIB, sparse_holes, 3);
	in_manifest("sparse", idbase + F_SPARSE, SPARSE_SIZE, sparse_holes, 3);
}

#define UNW_SIZE	(2 * MIB)
static const struct range unw_zeros[] = {
	{ 0, 256 * KIB }, { 512 * KIB, 640 * KIB }, { 768 * KIB, 1536 * KIB },
	{ 1600 * KIB, UNW_SIZE },
};

/*
 * fallocate()d, two ranges written directly, a written range zeroed again
 * (FALLOC_FL_ZERO_RANGE: unwritten on both filesystems): zeros but there.
 */
TEST_F(files, ft, unwritten, 1 + 2 * chunks(UNW_SIZE) + 2 + 1, 120)
{
	struct ext *e = calloc(MAX_EXT, sizeof(*e));
	unsigned int flags;
	int fd, n;

	if (!e)
		kt_fail("memory");
	fd = fopen_at("unwritten", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT);
	if (fd < 0 || fallocate(fd, 0, 0, UNW_SIZE))
		kt_fail("unwritten: fallocate: %s", strerror(errno));
	if (write_pat(fd, idbase + F_UNW, 256 * KIB, 512 * KIB) ||
	    write_pat(fd, idbase + F_UNW, 1536 * KIB, 64 * KIB) ||
	    fallocate(fd, FALLOC_FL_ZERO_RANGE, 512 * KIB, 128 * KIB) || fsync(fd))
		kt_fail("unwritten: writes, zero range: %s", strerror(errno));
	n = extents(fd, UNW_SIZE, e, MAX_EXT, 0, &flags);
	tap(n > 0 && (flags & FIEMAP_EXTENT_UNWRITTEN),
	    "unwritten: FIEMAP shows %d extents, unwritten ones among them", n);
	close(fd);
	read_all(self, "unwritten", idbase + F_UNW, UNW_SIZE, 512 * KIB, unw_zeros, 4);
	in_manifest("unwritten", idbase + F_UNW, UNW_SIZE, unw_zeros, 4);
	free(e);
}

/*
 * Written through the page cache and not flushed: a new file (delayed
 * allocation: FIEMAP says so before the read) and an overwrite of a synced
 * file with a second pattern. The direct read writes the range back first
 * and returns the new bytes.
 */
TEST_F(files, ft, unflushed, 2 + 2 + 2 + 2, 120)
{
	struct ext *e = calloc(MAX_EXT, sizeof(*e));
	unsigned int flags;
	int fd, n;

	if (!e)
		kt_fail("memory");
	fd = fopen_at("new", O_RDWR | O_CREAT | O_TRUNC);
	if (fd < 0 || write_pat(fd, idbase + F_NEW, 0, MIB))
		kt_fail("new: buffered write: %s", strerror(errno));
	n = extents(fd, MIB, e, MAX_EXT, 1, &flags);
	tap(n > 0 && (flags & FIEMAP_EXTENT_DELALLOC),
	    "new: 1 MiB written through the page cache, not flushed: FIEMAP says delayed allocation (%d extents, flags %#x)",
	    n, flags);
	read_case(self, &self->d[0], BY_PREAD, "new", idbase + F_NEW, 0, MIB, 0, 0, MIB, NULL, 0);
	read_case(self, &self->d[1], BY_URING, "new", idbase + F_NEW, 0, MIB, 256 * KIB, 0, MIB,
		  NULL, 0);
	close(fd);

	if (make_file("overwritten", idbase + F_OVER1, MIB))
		kt_fail("overwritten: %s", strerror(errno));
	fd = fopen_at("overwritten", O_RDWR);
	tap(fd >= 0 && !write_pat(fd, idbase + F_OVER2, 0, MIB),
	    "overwritten: a synced 1 MiB file written again through the page cache, not flushed");
	read_case(self, &self->d[0], BY_URING, "overwritten", idbase + F_OVER2, 0, MIB, 128 * KIB,
		  0, MIB, NULL, 0);
	read_case(self, &self->d[1], BY_PREAD, "overwritten", idbase + F_OVER2, 0, MIB, 0, 0, MIB,
		  NULL, 0);
	if (fd >= 0)
		close(fd);
	in_manifest("new", idbase + F_NEW, MIB, NULL, 0);
	in_manifest("overwritten", idbase + F_OVER2, MIB, NULL, 0);
	free(e);
}

#define BIG_SIZE	(5 * MIB + 512 * KIB)

/* the limit of one request of the file's block device, in bytes */
static long long max_request(int fd)
{
	char path[128];
	struct stat st;
	long long kb;

	if (fstat(fd, &st))
		return -errno;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/max_hw_sectors_kb",
		 major(st.st_dev), minor(st.st_dev));
	kb = p2p_sysfs_num(path);
	return kb < 0 ? kb : kb * 1024;
}

TEST_F(files, ft, big, 1 + 2 * chunks(BIG_SIZE) + 2 + 1, 180)
{
	long long mdts;
	int fd;

	if (make_file("big", idbase + F_BIG, BIG_SIZE))
		kt_fail("big: %s", strerror(errno));
	fd = fopen_at("big", O_RDONLY);
	mdts = fd < 0 ? -errno : max_request(fd);
	tap(mdts > 0 && (__u64)mdts < CHUNK,
	    "big: %llu bytes, the %llu MiB chunk of p2pmem it is read through in pieces, each more than one command of %lld bytes (max_hw_sectors_kb)",
	    BIG_SIZE, CHUNK / MIB, mdts);
	if (fd >= 0)
		close(fd);
	read_all(self, "big", idbase + F_BIG, BIG_SIZE, 512 * KIB, NULL, 0);
	in_manifest("big", idbase + F_BIG, BIG_SIZE, NULL, 0);
}

#define EOF_SIZE	(MIB + 1000)

/*
 * Across the end of a file that ends mid-sector: as many bytes as a
 * buffered pread() of the same range returns, the same bytes; at the
 * aligned end, nothing.
 */
TEST_F(files, ft, eof, 2 * 2 + 2 + 1, 60)
{
	static const __u64 offs[] = { MIB - 4 * KIB, MIB + 512 };
	unsigned char ref[8 * KIB];
	int fd, bfd, i, k;
	ssize_t want, r;

	fd = fopen_at("eof", O_RDWR | O_CREAT | O_TRUNC);
	if (fd < 0 || write_pat(fd, idbase + F_EOF, 0, EOF_SIZE) || fsync(fd))
		kt_fail("eof: %s", strerror(errno));
	close(fd);
	bfd = fopen_at("eof", O_RDONLY);
	for (k = 0; k < 2; k++) {
		for (i = 0; i < 2; i++) {
			want = pread(bfd, ref, 8 * KIB, offs[k]);
			read_case(self, &self->d[i], k ? BY_PREAD : BY_URING, "eof", idbase + F_EOF,
				  offs[k], 8 * KIB, 4 * KIB, 0, want, NULL, 0);
			if (want > 0 && memcmp(ref, self->d[i].p, want))
				printf("    # %s: the buffered pread's bytes differ\n",
				       self->d[i].name);
		}
	}
	fd = fopen_at("eof", O_RDONLY | O_DIRECT);
	for (i = 0; i < 2; i++) {
		r = pread(fd, self->d[i].p, 4 * KIB, (EOF_SIZE + 511) / 512 * 512);
		tap(r == 0, "eof: a read at the aligned end into %s returns 0 (got %zd)",
		    self->d[i].name, r);
	}
	close(fd);
	close(bfd);
	in_manifest("eof", idbase + F_EOF, EOF_SIZE, NULL, 0);
}

/* ---- races ---------------------------------------------------------------- */

enum race {
	R_TRUNCATE, R_PUNCH, R_COLLAPSE, R_INSERT, R_WRITE, R_REFLINK, R_EXCHANGE, R_DEFRAG,
};

static const char *const race_name[] = {
	"truncate", "punch hole", "collapse range", "insert range",
	"overlapping and reallocating writes", "reflink (FICLONE)",
	"exchange range (XFS_IOC_EXCHANGE_RANGE)", "move extents (EXT4_IOC_MOVE_EXT, e4defrag's)",
};

#define TSIZE		MIB
#define SLOT		(128 * KIB)
#define RPIECE		(32 * KIB)	/* an io_uring read's pieces */
#define MIN_OPS		8
#define MIN_READS	24

/* what the racer and the reader share (MAP_SHARED) */
struct race_state {
	int stop;		/* the racer is done */
	int quit;		/* the reader gave up waiting */
	long long reads;	/* these three: __atomic */
	int ops, err;
	char what[96];
};

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* the canary: written into whatever was freed, synced, freed again */
static int canary(int c, unsigned int cid)
{
	int ret = write_pat(c, cid, 0, 256 * KIB);

	if (!ret && (fdatasync(c) || ftruncate(c, 0)))
		ret = -errno;
	return ret;
}

/* the racer's files: the target directly and through the page cache, the canary */
struct racer_fds {
	int t, tb, c;
};

/*
 * One operation of @kind on the target at @off, then the canary into what
 * it freed, then the target whole again where the operation changed its
 * size or bytes. NULL, or the step that failed (errno says why).
 */
static const char *race_step(enum race kind, struct racer_fds *f, __u64 off, int n,
			     unsigned int tid, unsigned int cid)
{
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
		if (fallocate(f->tb, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, 128 * KIB))
			return "punch hole";
		break;
	case R_COLLAPSE:
		if (fallocate(f->tb, FALLOC_FL_COLLAPSE_RANGE, off, 64 * KIB))
			return "collapse range";
		break;
	case R_INSERT:
		if (fallocate(f->tb, FALLOC_FL_INSERT_RANGE, off, 64 * KIB))
			return "insert range";
		break;
	case R_WRITE:
		/* in place (direct, buffered); every third time out of place too */
		if (write_pat(n & 1 ? f->tb : f->t, tid + 1, off, 128 * KIB))
			return "overlapping write";
		if (n % 3 != 2)
			break;
		aux = fopen_at("clone", O_RDWR | O_CREAT | O_TRUNC);
		if (aux >= 0 && !ioctl(aux, FICLONE, f->t)) {
			/* xfs: the write moves the target to new blocks (CoW) */
			if (write_pat(f->t, tid + 1, off, 128 * KIB))
				what = "write to a shared extent";
		} else if (aux >= 0 && errno == EOPNOTSUPP) {
			/* ext4: a hole punched and written again (new blocks) */
			if (fallocate(f->t, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
				      128 * KIB) || write_pat(f->t, tid + 1, off, 128 * KIB))
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
		aux = fopen_at("clone", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT);
		if (aux < 0 || ioctl(aux, FICLONE, f->t))
			what = "FICLONE from the target";
		else if (write_pat(aux, tid + 1, 0, TSIZE) || ioctl(f->t, FICLONE, aux))
			what = "FICLONE onto the target";
		else if (canary(f->c, cid))
			what = "the canary";
		else if (write_pat(aux, tid, 0, TSIZE) || ioctl(f->t, FICLONE, aux))
			what = "FICLONE of the target's pattern onto it";
		break;
	case R_EXCHANGE:
		/* a copy of the target's pattern exchanged in; the old blocks freed */
		aux = fopen_at("swap", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT);
		xr = (struct xfs_exchange_range){ .file1_fd = aux, .length = TSIZE };
		if (aux < 0 || write_pat(aux, tid, 0, TSIZE) || fsync(aux))
			what = "the exchange's file";
		else if (ioctl(f->t, XFS_IOC_EXCHANGE_RANGE, &xr))
			what = "XFS_IOC_EXCHANGE_RANGE";
		break;
	case R_DEFRAG:
		/* the target's data moved to a donor's blocks; the old freed */
		aux = fopen_at("donor", O_RDWR | O_CREAT | O_TRUNC);
		me = (struct move_extent){ .donor_fd = aux, .len = TSIZE / BLK };
		if (aux < 0 || fallocate(aux, 0, 0, TSIZE))
			what = "the donor";
		else if (ioctl(f->tb, EXT4_IOC_MOVE_EXT, &me) || me.moved_len != TSIZE / BLK)
			what = "EXT4_IOC_MOVE_EXT";
		break;
	}
	if (aux >= 0) {
		int err = errno;

		close(aux);
		unlinkat(dirfd_g, "clone", 0);
		unlinkat(dirfd_g, "swap", 0);
		unlinkat(dirfd_g, "donor", 0);
		errno = err;
	}
	if (what)
		return what;
	if (canary(f->c, cid))
		return "the canary";
	if ((kind == R_TRUNCATE || kind == R_PUNCH || kind == R_COLLAPSE || kind == R_INSERT) &&
	    (ftruncate(f->tb, TSIZE) || write_pat(f->t, tid, 0, TSIZE)))
		return "the target written again";
	return NULL;
}

/*
 * The racer (a child): @kind's operation on the target again and again
 * (race_step()), for race_ms and until both sides did enough; the target
 * restored to its first pattern at the end.
 */
static void racer(enum race kind, struct race_state *st, unsigned int tid, unsigned int cid)
{
	struct racer_fds f = {
		.t = fopen_at("target", O_RDWR | O_DIRECT),
		.tb = fopen_at("target", O_RDWR),
		.c = fopen_at("canary", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT),
	};
	long long end = now_ms() + race_ms;
	const char *what = NULL;

	srandom(tid);
	if (f.t < 0 || f.tb < 0 || f.c < 0)
		what = "open";
	while (!what && !__atomic_load_n(&st->quit, __ATOMIC_ACQUIRE) &&
	       (now_ms() < end || st->ops < MIN_OPS ||
		__atomic_load_n(&st->reads, __ATOMIC_ACQUIRE) < MIN_READS)) {
		errno = 0;
		what = race_step(kind, &f, (random() % 14) * 64 * KIB, st->ops, tid, cid);
		if (!what)
			st->ops++;
	}
	errno = 0;
	if (!what && (ftruncate(f.tb, TSIZE) || write_pat(f.t, tid, 0, TSIZE) || fsync(f.t)))
		what = "the target restored";
	if (what) {
		st->err = errno ? errno : EIO;
		snprintf(st->what, sizeof(st->what), "%s", what);
	}
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	_exit(0);
}

/* a read's words: what may be there, what was */
struct tally {
	long long reads, shorts, zeros, elsewhere, canary, other, failed;
	long long bad_off;
	__u64 bad_word;
	int first_err;
};

/*
 * Each word of @p (@n bytes read at file offset @off): the target's (@tid,
 * or @tid2 when set) at that offset; at another offset if @moved; zero if
 * @zeros; then the rest of the slot (@slot bytes) never holds the canary.
 */
static void classify(struct tally *t, const unsigned char *p, size_t n, size_t slot, __u64 off,
		     unsigned int tid, unsigned int tid2, unsigned int cid, int moved, int zeros)
{
	size_t i;

	for (i = 0; i + 8 <= slot; i += 8) {
		__u64 w = get_le64(p + i);
		unsigned int id = (w >> 32) & 0xffff;
		int ours = w >> 48 == PAT_MAGIC && (id == tid || (tid2 && id == tid2));

		if (w >> 48 == PAT_MAGIC && id == cid) {
			t->canary++;
		} else if (i >= n) {
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
 * A stream of reads of the target (1 MiB: 128 KiB at random offsets into
 * eight p2pmem slots and host memory, pread and io_uring in turn) while the
 * racer does @kind. Cases: the racer's operations succeeded; every word
 * read was the target's (or its second pattern, the writes' and the
 * reflinks'); no canary word; the target read whole after.
 */
static void race(struct _kt_fixture_ft *self, enum race kind)
{
	unsigned int tid = idbase + F_RACE + 4 * kind, cid = tid + 3;
	int moved = kind == R_COLLAPSE || kind == R_INSERT;
	/* ext4's reallocating write is a punched hole written again */
	int zeros = kind == R_TRUNCATE || kind == R_PUNCH || moved ||
		    (kind == R_WRITE && self->fstype == EXT4_MAGIC);
	unsigned int tid2 = kind == R_WRITE || kind == R_REFLINK ? tid + 1 : 0;
	struct race_state *st;
	struct tally t = { .bad_off = -1 };
	long long t0 = now_ms(), scale = getenv("P2P_TIMEOUT_SCALE") ? 5 : 1;
	pid_t pid;
	int fd;

	if (make_file("target", tid, TSIZE))
		kt_fail("target: %s", strerror(errno));
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fd = fopen_at("target", O_RDONLY | O_DIRECT);
	if (st == MAP_FAILED || fd < 0)
		kt_fail("target: %s", strerror(errno));
	memset(st, 0, sizeof(*st));
	memset(self->m.p, 0, 8 * SLOT);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		kt_fail("fork: %s", strerror(errno));
	if (!pid)
		racer(kind, st, tid, cid);
	while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
		struct dst *d = &self->d[(t.reads >> 1) & 1];
		__u64 off = (random() % 8) * SLOT;
		size_t doff = (t.reads % 8) * SLOT;
		ssize_t r, res[MAX_PIECES];
		unsigned int np, i;
		size_t piece;

		/*
		 * The slot filled first: an earlier read's bytes left there
		 * would pass for this one's, and a byte claimed read but never
		 * written is not the pattern, nor zero. The barrier: these
		 * stores reach the BAR before the device's writes.
		 */
		memset(d->p + doff, 0xee, SLOT);
		__sync_synchronize();
		r = rd_pieces(&self->ring, t.reads & 1 ? BY_URING : BY_PREAD, fd, d->p + doff, SLOT,
			      off, RPIECE, res, &np);
		__atomic_store_n(&st->reads, ++t.reads, __ATOMIC_RELEASE);
		if (now_ms() - t0 > 60000 * scale)
			__atomic_store_n(&st->quit, 1, __ATOMIC_RELEASE);
		if (r < 0) {
			if (!t.failed++)
				t.first_err = -r;
			continue;
		}
		t.shorts += r < (ssize_t)SLOT;
		/* each piece checked for the bytes it read, at its own offset */
		piece = SLOT / np;
		for (i = 0; i < np; i++)
			classify(&t, d->p + doff + i * piece, res[i], piece, off + i * piece, tid,
				 tid2, cid, moved, zeros);
	}
	waitpid(pid, NULL, 0);
	close(fd);
	tap(!st->err && st->ops >= MIN_OPS,
	    "%s: %d operations on the target, each followed by a canary written into what it freed%s%s%s%s",
	    race_name[kind], st->ops, st->err ? ": " : "", st->what, st->err ? ": " : "",
	    st->err ? strerror(st->err) : "");
	tap(!t.failed && !t.other && t.reads >= MIN_READS,
	    "%s: %lld reads during them (%lld short, %lld failed%s%s), every word the target's at its offset%s%s (%lld zero words, %lld moved)",
	    race_name[kind], t.reads, t.shorts, t.failed, t.failed ? ": " : "",
	    t.failed ? strerror(t.first_err) : "", moved ? " or moved" : "",
	    zeros ? " or zero" : "", t.zeros, t.elsewhere);
	if (t.other)
		printf("    # %lld unexpected words; the first at file offset %lld: %#018llx\n",
		       t.other, t.bad_off, t.bad_word);
	tap(!t.canary,
	    "%s: no canary word (file id %#x) in p2pmem or host memory after any read (%lld found)",
	    race_name[kind], cid, t.canary);
	hostcheck("nopattern %s %#x", bar_name, cid);
	read_case(self, &self->d[0], BY_PREAD, "target", tid, 0, TSIZE, 0, 0, TSIZE, NULL, 0);
	munmap(st, sizeof(*st));
	unlinkat(dirfd_g, "target", 0);
	unlinkat(dirfd_g, "canary", 0);
}

/*
 * The operations a filesystem does not have: reflink and exchange range on
 * ext4, move extents on xfs, exchange range on an xfs made without it
 * (mkfs.xfs before xfsprogs 6.10 cannot ask for it).
 */
static void race_if(struct _kt_fixture_ft *self, enum race kind)
{
	struct xfs_exchange_range xr = { .length = BLK, .flags = XFS_EXCHANGE_RANGE_DRY_RUN };
	int a, b;

	if (kind == R_REFLINK && self->fstype == EXT4_MAGIC)
		kt_skip("ext4 has no reflink");
	if (kind == R_DEFRAG && self->fstype != EXT4_MAGIC)
		kt_skip("EXT4_IOC_MOVE_EXT is ext4's; xfs moves extents by exchange range");
	if (kind == R_EXCHANGE) {
		if (self->fstype != XFS_MAGIC)
			kt_skip("exchange range is xfs's (XFS_IOC_EXCHANGE_RANGE)");
		if (make_file("xa", idbase, BLK) || make_file("xb", idbase, BLK))
			kt_fail("exchange range's probe files: %s", strerror(errno));
		a = fopen_at("xa", O_RDWR);
		b = fopen_at("xb", O_RDWR);
		xr.file1_fd = a;
		if (ioctl(b, XFS_IOC_EXCHANGE_RANGE, &xr) && errno == EOPNOTSUPP) {
			unlinkat(dirfd_g, "xa", 0);
			unlinkat(dirfd_g, "xb", 0);
			kt_skip("%s",
				"this xfs lacks exchange range (EOPNOTSUPP: mkfs.xfs older than xfsprogs 6.10 cannot set the feature)");
		}
		close(a);
		close(b);
		unlinkat(dirfd_g, "xa", 0);
		unlinkat(dirfd_g, "xb", 0);
	}
	race(self, kind);
}

TEST_F(files, ft, race_truncate, 4, 120)
{
	race_if(self, R_TRUNCATE);
}

TEST_F(files, ft, race_punch, 4, 120)
{
	race_if(self, R_PUNCH);
}

TEST_F(files, ft, race_collapse, 4, 120)
{
	race_if(self, R_COLLAPSE);
}

TEST_F(files, ft, race_insert, 4, 120)
{
	race_if(self, R_INSERT);
}

TEST_F(files, ft, race_write, 4, 120)
{
	race_if(self, R_WRITE);
}

TEST_F(files, ft, race_reflink, 4, 120)
{
	race_if(self, R_REFLINK);
}

TEST_F(files, ft, race_exchange, 4, 120)
{
	race_if(self, R_EXCHANGE);
}

TEST_F(files, ft, race_defrag, 4, 120)
{
	race_if(self, R_DEFRAG);
}

int main(int argc, char **argv)
{
	const char *ms = getenv("P2P_FILES_RACE_MS");

	if (argc != 7) {
		fprintf(stderr, "usage: %s SUITE DIR /dev/p2pbarN BAR_NAME ID_BASE MANIFEST\n",
			argv[0]);
		return 2;
	}
	dir = argv[2];
	bar_path = argv[3];
	bar_name = argv[4];
	idbase = strtoul(argv[5], NULL, 0);
	manifest = argv[6];
	if (ms && atoi(ms) > 0)
		race_ms = atoi(ms);
	if ((idbase & 0xff) || idbase > 0xff00) {
		fprintf(stderr, "ID_BASE: a multiple of 0x100 below 0x10000\n");
		return 2;
	}
	/* one document per filesystem and design, named on the command line */
	return kt_run_as("files", argv[1]);
}
