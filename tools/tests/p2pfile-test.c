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
#include "p2pfile-common.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define KIB		1024ULL
#define MIB		(1024 * KIB)
#define BLK		4096		/* both filesystems are made with 4 KiB blocks */
#define CHUNK		(2 * MIB)	/* the p2pmem each test maps: the BAR chunk */
#define HOSTBUF		(8 * MIB)

/* file numbers, added to ID_BASE */
enum {
	F_ALIGN = 1, F_FRAG, F_SPARSE, F_UNW, F_NEW, F_OVER1, F_OVER2, F_BIG, F_EOF,
	F_RACE = 0x20,		/* + 4 * race: target, its second generation, canary */
};

static const char *dir, *bar_path, *bar_name, *manifest;
static unsigned int idbase;
static int race_ms = 1500;

/* ---- the pattern ---------------------------------------------------------- */

static unsigned char pat_byte(unsigned int id, __u64 off)
{
	return pat_word(id, off) >> (8 * (off & 7));
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

/* a new file of @size bytes of @id's pattern, written directly and synced */
static int make_file(const char *name, unsigned int id, __u64 size)
{
	return make_file_at(dirfd_g, name, id, size);
}

/* ---- FIEMAP and the manifest ---------------------------------------------- */

struct ext {
	__u64 l, p, n;
	unsigned int u;		/* 1 unwritten, 9 delalloc or unknown (never on disk) */
};

/* what extents() gathers, extent by extent (extent_add()) */
struct ext_walk {
	__u64 end;
	struct ext *e;
	int n, max;
	unsigned int *flags_or;
};

static int extent_add(const struct fiemap_extent *f, void *arg)
{
	struct ext_walk *w = arg;
	__u64 l = f->fe_logical, len = f->fe_length;
	unsigned int u = f->fe_flags & FIEMAP_EXTENT_UNWRITTEN ? 1 : 0;
	struct ext *prev = w->n ? &w->e[w->n - 1] : NULL;

	if (f->fe_flags & (FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN))
		u = 9;
	if (w->flags_or)
		*w->flags_or |= f->fe_flags;
	if (l >= w->end)
		return 0;
	if (l + len > w->end)
		len = w->end - l;
	if (prev && prev->l + prev->n == l && prev->p + prev->n == f->fe_physical && prev->u == u) {
		prev->n += len;
		return 0;
	}
	if (w->n == w->max)
		return -E2BIG;
	w->e[w->n++] = (struct ext){ l, f->fe_physical, len, u };
	return 0;
}

/*
 * The extents of @fd, synced first unless @nosync, clipped at @end, adjacent
 * ones merged: qemu/hostcheck.py reads the image the same way. Returns how
 * many (at most @max) or -errno; *@flags_or gets every extent's flags.
 */
static int extents(int fd, __u64 end, struct ext *e, int max, int nosync, unsigned int *flags_or)
{
	struct ext_walk w = { .end = end, .e = e, .max = max, .flags_or = flags_or };
	int ret;

	if (flags_or)
		*flags_or = 0;
	ret = p2p_fiemap_walk(fd, 0, end, nosync ? 0 : FIEMAP_FLAG_SYNC, extent_add, &w);
	return ret ? ret : w.n;
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

#define RPIECE		(32 * KIB)	/* an io_uring read's pieces */

/* the stream's reads (race_run()): pread and io_uring in turn, into p2pmem and host memory */
struct files_reader {
	struct race_reader r;
	struct _kt_fixture_ft *self;
};

/* eight slots of p2pmem, then eight of host memory, two reads each in turn */
static unsigned char *files_slot(struct race_reader *r, long long n)
{
	struct files_reader *fr = (struct files_reader *)r;

	return fr->self->d[(n >> 1) & 1].p + (n % 8) * RACE_SLOT;
}

static ssize_t files_read(struct race_reader *r, long long n, int fd, unsigned char *p,
			  uint64_t off, ssize_t *res, unsigned int *np)
{
	struct files_reader *fr = (struct files_reader *)r;

	return rd_pieces(&fr->self->ring, n & 1 ? BY_URING : BY_PREAD, fd, p, RACE_SLOT, off,
			 RPIECE, res, np);
}

/*
 * A stream of reads of the target (1 MiB: 128 KiB at random offsets into
 * eight p2pmem slots and host memory, pread and io_uring in turn) while
 * the racer does @kind (race_run(): three cases); then the target read
 * whole.
 */
static void race(struct _kt_fixture_ft *self, enum race kind)
{
	struct race_ctx rc = { .dirfd = dirfd_g, .fstype = self->fstype, .ms = race_ms,
			       .bar_name = bar_name };
	struct files_reader fr = { { "p2pmem or host memory", files_slot, files_read }, self };
	unsigned int tid = idbase + F_RACE + 4 * kind;

	race_skip_absent(&rc, kind);
	memset(self->m.p, 0, 8 * RACE_SLOT);
	race_run(&rc, kind, tid, &fr.r);
	read_case(self, &self->d[0], BY_PREAD, "target", tid, 0, RACE_TSIZE, 0, 0, RACE_TSIZE,
		  NULL, 0);
	race_end(&rc);
}

TEST_F(files, ft, race_truncate, 4, 120)
{
	race(self, R_TRUNCATE);
}

TEST_F(files, ft, race_punch, 4, 120)
{
	race(self, R_PUNCH);
}

TEST_F(files, ft, race_collapse, 4, 120)
{
	race(self, R_COLLAPSE);
}

TEST_F(files, ft, race_insert, 4, 120)
{
	race(self, R_INSERT);
}

TEST_F(files, ft, race_write, 4, 120)
{
	race(self, R_WRITE);
}

TEST_F(files, ft, race_reflink, 4, 120)
{
	race(self, R_REFLINK);
}

TEST_F(files, ft, race_exchange, 4, 120)
{
	race(self, R_EXCHANGE);
}

TEST_F(files, ft, race_defrag, 4, 120)
{
	race(self, R_DEFRAG);
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
