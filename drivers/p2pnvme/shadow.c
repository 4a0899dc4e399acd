// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: placeholder pages (Documentation/files.rst, step 6). A
 * registered dma-buf that is not p2pbar's (GPU memory: NVIDIA's, amdgpu's,
 * xe's exporters) has no pages the block layer can take, so the file
 * command reads a file into it through pages of its own: host RAM from a
 * pool per controller, each page (a slot) naming the transfer that holds
 * it and its index in that transfer. The filesystem gets a bvec of them
 * and does its direct I/O exactly as for real pages; the disk's mapping
 * (disk.c) recognises them by page frame (a subtraction per chunk) and
 * writes the registration's own bus addresses into the PRPs or SGL
 * instead, so the controller writes the dma-buf, not the RAM. What the
 * controller carried there is marked per 512-byte sector (coverage) by
 * each request that completed without error. Everything else the
 * filesystem returned was written into the placeholders by the CPU (holes,
 * unwritten extents, a page cache fallback): p2pnvme_shadow_finish() finds
 * it there, zeros or not, and completes the dma-buf through its vmap, or
 * hands the zeros back to the caller to clear (an exporter without vmap),
 * or refuses.
 *
 * The pool: file_placeholder_mb of pages (0: no placeholders), in
 * physically contiguous chunks of the largest order the allocator gives,
 * allocated at the first transfer that needs it and freed with the
 * controller. A transfer takes the slots it needs (not necessarily one
 * chunk) or none: -EAGAIN while others hold them (refused, never queued,
 * as max_inflight_mb), -E2BIG for a transfer, or a batch's transfers
 * together, larger than the pool.
 *
 * Invariant: a free slot's page is all zeros. The controller never writes
 * a placeholder a request carried to the dma-buf; what the CPU, or a
 * request that had to use the RAM itself (P2PNVME_SHADOW_*), wrote there
 * is uncovered, and zeroed before the slot is used again
 * (p2pnvme_shadow_reset()). So a CPU read of an uncovered byte sees what
 * the filesystem put there, and nothing older.
 *
 * Locking: the pool's spinlock (process context only) guards the slot
 * bitmaps and the runs' owners; the disk reads a run's start and owner
 * without it, for pages of bios whose transfer holds them (the slots were
 * taken before the bio was built and are let go after it ended). Coverage is a range at a time
 * from completions (bitmap_set() under the transfer's cover_lock), read
 * once the filesystem returned (every bio ended).
 *
 * Runs: a transfer's slots are one run of consecutive slots in a chunk
 * where the pool has one (else as few as they lie free), so that its bvec
 * has an entry per run and the disk walks, maps and covers a run at a
 * time, as for a p2pbar dma-buf's pages: a run's owner is written once, at
 * its first slot (a bit in @starts), and found from any of its slots by
 * the last start at or before it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/bitmap.h>
#include <linux/dma-buf.h>
#include <linux/gfp.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <p2p_compat.h>

#include "shadow.h"
#include "reg.h"

#ifdef MAX_PAGE_ORDER
#define SHADOW_MAX_ORDER	MAX_PAGE_ORDER
#else
#define SHADOW_MAX_ORDER	(MAX_ORDER - 1)		/* before 6.8: exclusive */
#endif

/**
 * p2pnvme_shadow_init - the placeholders' side of a new controller
 * @c: the controller (no pool until the first transfer needs it)
 */
void p2pnvme_shadow_init(struct p2pnvme *c)
{
	mutex_init(&c->shadow_lock);
	c->shadow = NULL;
}

static void shadow_free(struct p2pnvme_shadow *s)
{
	unsigned int i;

	for (i = 0; i < s->nr_chunks; i++)
		__free_pages(s->chunks[i].page, s->chunks[i].order);
	kvfree(s->chunks);
	kvfree(s->slots);
	bitmap_free(s->used);
	bitmap_free(s->starts);
	kfree(s);
}

/**
 * p2pnvme_shadow_exit - the controller's last reference is gone
 * @c: the controller (no transfer is left)
 */
void p2pnvme_shadow_exit(struct p2pnvme *c)
{
	struct p2pnvme_shadow *s = c->shadow;

	if (!s)
		return;
	WARN_ON_ONCE(atomic_read(&s->active) || s->nr_free != s->nr_slots);
	c->shadow = NULL;
	shadow_free(s);
	mutex_destroy(&c->shadow_lock);
}

/* @pages zeroed pages in chunks as large as the allocator gives them */
static struct p2pnvme_shadow *shadow_alloc(unsigned long pages)
{
	unsigned int order = min_t(unsigned int, SHADOW_MAX_ORDER, ilog2(pages));
	struct p2pnvme_shadow *s;
	struct page *page, *tmp;
	unsigned long got = 0;
	unsigned int i = 0;
	LIST_HEAD(list);

	s = kzalloc_obj(*s, GFP_KERNEL);
	if (!s)
		return NULL;
	spin_lock_init(&s->lock);
	INIT_LIST_HEAD(&s->xfers);
	/* the chunks on a list first (their lru and private are ours), then counted */
	while (got < pages) {
		order = min_t(unsigned int, order, ilog2(pages - got));
		page = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
				   (order ? __GFP_NORETRY : 0), order);
		if (!page) {
			if (!order)
				break;	/* what there is will do */
			order--;
			continue;
		}
		set_page_private(page, order);
		list_add_tail(&page->lru, &list);
		s->nr_chunks++;
		got += 1UL << order;
	}
	s->chunks = got ? kvcalloc(s->nr_chunks, sizeof(*s->chunks), GFP_KERNEL) : NULL;
	list_for_each_entry_safe(page, tmp, &list, lru) {
		order = page_private(page);
		list_del(&page->lru);
		set_page_private(page, 0);
		if (!s->chunks) {
			__free_pages(page, order);
			continue;
		}
		s->chunks[i++] = (struct p2pnvme_shadow_chunk){
			.page = page, .pfn = page_to_pfn(page), .nr = 1U << order,
			.first = s->nr_slots, .order = order };
		s->nr_slots += 1U << order;
	}
	if (!s->chunks) {
		s->nr_chunks = 0;
		goto fail;
	}
	s->nr_free = s->nr_slots;
	s->slots = kvcalloc(s->nr_slots, sizeof(*s->slots), GFP_KERNEL);
	s->used = bitmap_zalloc(s->nr_slots, GFP_KERNEL);
	s->starts = bitmap_zalloc(s->nr_slots, GFP_KERNEL);
	if (!s->slots || !s->used || !s->starts)
		goto fail;
	s->lo_pfn = ULONG_MAX;
	for (i = 0; i < s->nr_chunks; i++) {
		s->lo_pfn = min(s->lo_pfn, s->chunks[i].pfn);
		s->hi_pfn = max(s->hi_pfn, s->chunks[i].pfn + s->chunks[i].nr);
	}
	return s;

fail:
	shadow_free(s);
	return NULL;
}

/* The controller's pool, allocated now if this is its first use. */
static struct p2pnvme_shadow *shadow_pool(struct p2pnvme *c, unsigned int mb)
{
	/* acquire: the pool as shadow_alloc() filled it */
	struct p2pnvme_shadow *s = smp_load_acquire(&c->shadow);

	if (s)
		return s;
	mutex_lock(&c->shadow_lock);
	s = c->shadow;
	if (!s) {
		s = shadow_alloc((unsigned long)mb << (20 - PAGE_SHIFT));
		if (s) {
			pci_info(c->pdev, "file command: %u MiB of placeholder pages in %u chunks\n",
				 (unsigned int)(((u64)s->nr_slots << PAGE_SHIFT) >> 20),
				 s->nr_chunks);
			/* release: every field before the disk can see the pool */
			smp_store_release(&c->shadow, s);
		}
	}
	mutex_unlock(&c->shadow_lock);
	return s;
}

static struct page *shadow_page(const struct p2pnvme_shadow *s, unsigned int slot)
{
	unsigned int i;

	for (i = 0; i < s->nr_chunks; i++)
		if (slot - s->chunks[i].first < s->chunks[i].nr)
			return pfn_to_page(s->chunks[i].pfn + slot - s->chunks[i].first);
	return NULL;	/* cannot be */
}

/**
 * p2pnvme_shadow_layout - place a transfer's bytes in its slots
 * @c: the controller
 * @sx: the transfer, holding its slots, not in flight
 *
 * Byte 0 goes at the offset its bus address has in a controller page (the
 * registration's current mapping, as its last remap indexed it), so that
 * the block layer's page boundaries are the mapping's. A request that
 * finds the mapping changed since has the transfer issued again, laid out
 * anew. A run of slots is one bvec entry (its pages are physically
 * contiguous), as a p2pbar dma-buf's pages are one.
 */
void p2pnvme_shadow_layout(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx)
{
	const struct p2pnvme_reg *b = sx->reg;
	unsigned int off, i;
	u64 left = sx->len;

	sx->delta = (READ_ONCE(b->contig_dma) - b->start) & (P2PNVME_CTRL_PAGE - 1);
	sx->off0 = (sx->pos + sx->delta) & (P2PNVME_CTRL_PAGE - 1);
	for (i = 0, off = sx->off0; left; i++, off = 0) {
		const struct p2pnvme_shadow_run *r = &sx->runs[i];
		unsigned int n = min_t(u64, left, ((u64)r->nr << PAGE_SHIFT) - off);

		sx->bvec[i].bv_page = shadow_page(sx->pool, r->slot);
		sx->bvec[i].bv_offset = off;
		sx->bvec[i].bv_len = n;
		left -= n;
	}
	sx->nr_bvec = i;
}

/*
 * Slots [@slot, @slot + @nr) of @s for @sx, as its next run (@sx->runs has
 * room): held, each naming its transfer and its index there.
 */
static void shadow_hold(struct p2pnvme_shadow *s, struct p2pnvme_shadow_xfer *sx,
			unsigned int slot, unsigned int nr, unsigned int *idx)
{
	lockdep_assert_held(&s->lock);
	bitmap_set(s->used, slot, nr);
	s->slots[slot] = (struct p2pnvme_shadow_slot){ .x = sx, .idx = *idx, .nr = nr };
	/* the owner before its start bit: the disk reads them in that order */
	smp_wmb();
	set_bit(slot, s->starts);
	*idx += nr;
	sx->runs[sx->nr_runs++] = (struct p2pnvme_shadow_run){ .slot = slot, .nr = nr };
}

/* One run of @nr free slots in a chunk of @s, held for @sx: false if there is none. */
static bool shadow_take_run(struct p2pnvme_shadow *s, struct p2pnvme_shadow_xfer *sx,
			    unsigned int nr)
{
	unsigned int k, idx = 0;

	lockdep_assert_held(&s->lock);
	for (k = 0; k < s->nr_chunks; k++) {
		const struct p2pnvme_shadow_chunk *ch = &s->chunks[k];
		unsigned long end = ch->first + ch->nr, at;

		if (ch->nr < nr)
			continue;
		at = bitmap_find_next_zero_area(s->used, end, ch->first, nr, 0);
		if (at + nr <= end) {
			shadow_hold(s, sx, at, nr, &idx);
			return true;
		}
	}
	return false;
}

/* @nr free slots of @s (there are) for @sx, the first ones, in as few runs as they lie. */
static void shadow_take_any(struct p2pnvme_shadow *s, struct p2pnvme_shadow_xfer *sx,
			    unsigned int nr)
{
	unsigned int k = 0, idx = 0, slot = 0;

	lockdep_assert_held(&s->lock);
	while (nr) {
		unsigned int end, n;

		slot = find_next_zero_bit(s->used, s->nr_slots, slot);
		while (slot - s->chunks[k].first >= s->chunks[k].nr)
			k++;	/* chunks in slot order */
		end = find_next_bit(s->used, s->chunks[k].first + s->chunks[k].nr, slot);
		n = min(end - slot, nr);
		shadow_hold(s, sx, slot, n, &idx);
		slot += n;
		nr -= n;
	}
}

/**
 * p2pnvme_shadow_get - slots for a transfer, and its bvec
 * @c: the controller
 * @sx: the transfer: @reg, @pos, @len and @require set, nothing held
 * @held: slots the caller's batch holds already; increased by what this
 *	  takes
 *
 * The slots are one run where a chunk has room for it (an entry of the
 * bvec, a piece of the disk's view, a range of coverage), else as they
 * lie free.
 *
 * Return: 0 (@sx->bvec and @sx->nr_bvec set; p2pnvme_shadow_put() lets go),
 * -EOPNOTSUPP (file_placeholder_mb is 0), -E2BIG (larger than the pool,
 * with what the batch holds), -EAGAIN (other transfers hold the room now),
 * -ENOMEM. Process context.
 */
int p2pnvme_shadow_get(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx, unsigned int *held)
{
	unsigned int mb = READ_ONCE(p2pnvme_file_placeholder_mb);
	unsigned long nsec = DIV_ROUND_UP(sx->len, SECTOR_SIZE);
	struct p2pnvme_shadow *s;
	unsigned int nr;

	if (!mb)
		return -EOPNOTSUPP;
	s = shadow_pool(c, mb);
	if (!s)
		return -ENOMEM;
	/* the most any byte-0 offset in a controller page needs */
	nr = DIV_ROUND_UP(sx->len + P2PNVME_CTRL_PAGE - 1, PAGE_SIZE);
	if (nr > s->nr_slots || *held + nr > s->nr_slots)
		return -E2BIG;
	sx->pool = s;
	sx->runs = sx->runs_inline;
	sx->bvec = sx->bvec_inline;
	if (nsec <= BITS_PER_LONG) {
		sx->covered = sx->covered_inline;
		bitmap_zero(sx->covered, nsec);
	} else {
		sx->covered = bitmap_zalloc(nsec, GFP_KERNEL_ACCOUNT);
		if (!sx->covered)
			return -ENOMEM;
	}
	spin_lock_init(&sx->cover_lock);
	atomic_set(&sx->lost, 0);
	sx->nr_runs = 0;
	spin_lock(&s->lock);
	while (s->nr_free >= nr && !shadow_take_run(s, sx, nr)) {
		/* in pieces: room for as many runs as there are slots */
		if (nr > P2PNVME_SHADOW_INLINE && sx->runs == sx->runs_inline) {
			spin_unlock(&s->lock);
			sx->runs = kvmalloc_array(nr, sizeof(*sx->runs), GFP_KERNEL_ACCOUNT);
			if (!sx->runs)
				return -ENOMEM;
			spin_lock(&s->lock);
			continue;	/* the room may have changed */
		}
		shadow_take_any(s, sx, nr);
		break;
	}
	if (!sx->nr_runs) {
		spin_unlock(&s->lock);
		return -EAGAIN;
	}
	s->nr_free -= nr;
	sx->nr = nr;
	list_add_tail(&sx->node, &s->xfers);
	atomic_inc(&s->active);
	spin_unlock(&s->lock);
	*held += nr;
	if (sx->nr_runs > P2PNVME_SHADOW_INLINE) {
		sx->bvec = kvmalloc_array(sx->nr_runs, sizeof(*sx->bvec), GFP_KERNEL_ACCOUNT);
		if (!sx->bvec)
			return -ENOMEM;		/* the slots let go by p2pnvme_shadow_put() */
	}
	p2pnvme_shadow_layout(c, sx);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_shadow_get);

/* Where byte @t of @sx is in its placeholders, and how much of its page follows. */
static u8 *shadow_ptr(const struct p2pnvme_shadow_xfer *sx, u64 t, unsigned int *room)
{
	u64 p = t + sx->off0;
	unsigned long idx = p >> PAGE_SHIFT;
	unsigned int off = offset_in_page(p), i;

	*room = PAGE_SIZE - off;
	for (i = 0; idx >= sx->runs[i].nr; i++)
		idx -= sx->runs[i].nr;
	return (u8 *)page_address(shadow_page(sx->pool, sx->runs[i].slot + idx)) + off;
}

/* Are the placeholder bytes [@t, @t + @n) of @sx all zeros? */
static bool shadow_zero(const struct p2pnvme_shadow_xfer *sx, u64 t, u64 n)
{
	while (n) {
		unsigned int room;
		u8 *p = shadow_ptr(sx, t, &room);
		unsigned int k = min_t(u64, n, room);

		if (memchr_inv(p, 0, k))
			return false;
		t += k;
		n -= k;
	}
	return true;
}

/* Zero the placeholder bytes [@t, @t + @n) of @sx where they are not. */
static void shadow_clear(const struct p2pnvme_shadow_xfer *sx, u64 t, u64 n)
{
	while (n) {
		unsigned int room;
		u8 *p = shadow_ptr(sx, t, &room);
		unsigned int k = min_t(u64, n, room);

		if (memchr_inv(p, 0, k))
			memset(p, 0, k);
		t += k;
		n -= k;
	}
}

/* the bytes of sector @sec of @sx, up to @end */
static u64 shadow_sec_len(u64 sec, u64 end)
{
	return min_t(u64, SECTOR_SIZE, end - (sec << SECTOR_SHIFT));
}

/**
 * p2pnvme_shadow_reset - before a transfer is issued again, or lets go:
 *	its placeholders all zeros again, nothing covered, nothing lost
 * @c: the controller
 * @sx: the transfer, not in flight (every bio of it ended), laid out as
 *	when it was issued
 */
void p2pnvme_shadow_reset(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx)
{
	unsigned long nsec = DIV_ROUND_UP(sx->len, SECTOR_SIZE), sec;

	for_each_clear_bit(sec, sx->covered, nsec)
		shadow_clear(sx, (u64)sec << SECTOR_SHIFT, shadow_sec_len(sec, sx->len));
	bitmap_zero(sx->covered, nsec);
	atomic_set(&sx->lost, 0);
}

/**
 * p2pnvme_shadow_put - let go of a transfer's slots
 * @c: the controller
 * @sx: the transfer, not in flight; p2pnvme_shadow_get() was called
 *	(successful or not)
 */
void p2pnvme_shadow_put(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx)
{
	struct p2pnvme_shadow *s = sx->pool;
	unsigned int i;

	if (sx->nr) {
		p2pnvme_shadow_reset(c, sx);
		spin_lock(&s->lock);
		for (i = 0; i < sx->nr_runs; i++) {
			const struct p2pnvme_shadow_run *r = &sx->runs[i];

			clear_bit(r->slot, s->starts);
			s->slots[r->slot].x = NULL;
			bitmap_clear(s->used, r->slot, r->nr);
		}
		s->nr_free += sx->nr;
		list_del(&sx->node);
		atomic_dec(&s->active);
		spin_unlock(&s->lock);
		sx->nr = 0;
	}
	if (sx->runs != sx->runs_inline)
		kvfree(sx->runs);
	if (sx->bvec != sx->bvec_inline)
		kvfree(sx->bvec);
	if (sx->covered != sx->covered_inline)
		bitmap_free(sx->covered);
	sx->runs = NULL;
	sx->nr_runs = 0;
	sx->bvec = NULL;
	sx->covered = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_shadow_put);

#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
static int shadow_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	if (!dmabuf->ops->vmap)
		return -EOPNOTSUPP;	/* the core would say -EINVAL */
#ifdef HAVE_DMA_BUF_VMAP_UNLOCKED
	return dma_buf_vmap_unlocked(dmabuf, map);
#else
	return dma_buf_vmap(dmabuf, map);
#endif
}

static void shadow_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
#ifdef HAVE_DMA_BUF_VMAP_UNLOCKED
	dma_buf_vunmap_unlocked(dmabuf, map);
#else
	dma_buf_vunmap(dmabuf, map);
#endif
}

/*
 * The CPU's bytes into the dma-buf through its vmap: each uncovered sector
 * of [0, @ret), zeros by a memset (counted in @zeroed), the rest copied
 * (@cpu).
 */
static void shadow_copy(const struct p2pnvme_shadow_xfer *sx, struct iosys_map *map, u64 ret,
			u64 *zeroed, u64 *cpu)
{
	unsigned long nsec = DIV_ROUND_UP(ret, SECTOR_SIZE), sec;

	for_each_clear_bit(sec, sx->covered, nsec) {
		u64 t = (u64)sec << SECTOR_SHIFT, n = shadow_sec_len(sec, ret);

		if (shadow_zero(sx, t, n)) {
			iosys_map_memset(map, sx->pos + t, 0, n);
			*zeroed += n;
			continue;
		}
		*cpu += n;
		while (n) {
			unsigned int room;
			u8 *p = shadow_ptr(sx, t, &room);
			unsigned int k = min_t(u64, n, room);

			iosys_map_memcpy_to(map, sx->pos + t, p, k);
			t += k;
			n -= k;
		}
	}
}
#else
static int shadow_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	return -EOPNOTSUPP;
}

static void shadow_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
}

static void shadow_copy(const struct p2pnvme_shadow_xfer *sx, struct iosys_map *map, u64 ret,
			u64 *zeroed, u64 *cpu)
{
}
#endif

/**
 * p2pnvme_shadow_finish - complete a transfer the filesystem returned
 * @c: the controller
 * @sx: the transfer, every bio of it ended, nothing lost
 * @ret: what the filesystem returned
 * @dmabuf: the registration's dma-buf, with a reference
 * @zero_answer: the caller can be told a run of zeros to clear (an
 *		 ioctl's entry; an io_uring CQE of 32 bytes)
 * @zeroed: out: bytes the CPU wrote as zeros (holes, unwritten extents)
 * @cpu: out: other bytes the CPU wrote (a page cache fallback), copied
 * @zero_len: out: with an exporter without vmap, the run of zeros that
 *	      follows the bytes returned, for the caller to clear
 *
 * Every byte of [0, @ret) the disk did not carry to the dma-buf was
 * written into the placeholders by the CPU. With P2P required only zeros
 * are taken: -EREMOTEIO, nothing copied. Through the exporter's vmap the
 * CPU completes the dma-buf (zeros and all). Without a vmap (NVIDIA's
 * exporter has none, nor do the bench's imitations) the transfer ends at
 * its first byte not carried: the bytes before it, and the run of zeros
 * from there in @zero_len; a byte that is not zero there is -EOPNOTSUPP.
 * Process context.
 *
 * Return: the bytes the transfer answers, or -errno.
 */
long p2pnvme_shadow_finish(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx, long ret,
			   struct dma_buf *dmabuf, bool zero_answer, u64 *zeroed, u64 *cpu,
			   u64 *zero_len)
{
	unsigned long nsec, first, sec;
	struct iosys_map map;
	bool nonzero = false;
	u64 run = 0;

	*zeroed = 0;
	*cpu = 0;
	*zero_len = 0;
	if (ret <= 0)
		return ret;
	nsec = DIV_ROUND_UP(ret, SECTOR_SIZE);
	first = find_first_zero_bit(sx->covered, nsec);
	if (first >= nsec)
		return ret;		/* all the controller's */
	for_each_clear_bit(sec, sx->covered, nsec) {
		if (!shadow_zero(sx, (u64)sec << SECTOR_SHIFT, shadow_sec_len(sec, ret))) {
			nonzero = true;
			break;
		}
	}
	if (nonzero && sx->require)
		return -EREMOTEIO;
	if (!shadow_vmap(dmabuf, &map)) {
		shadow_copy(sx, &map, ret, zeroed, cpu);
		shadow_vunmap(dmabuf, &map);
		return ret;
	}
	/* no vmap: the covered bytes, then the zeros that follow for the caller */
	for (sec = first; sec < nsec && !test_bit(sec, sx->covered); sec++) {
		u64 n = shadow_sec_len(sec, ret);

		if (!shadow_zero(sx, (u64)sec << SECTOR_SHIFT, n))
			break;
		run += n;
	}
	if (!run || !zero_answer) {
		dev_info_ratelimited(&c->pdev->dev,
				     "file command: a read into a registered dma-buf of exporter %s refused (-EOPNOTSUPP): the CPU wrote %s into its placeholders and the exporter has no vmap to complete it with\n",
				     dmabuf->exp_name,
				     run ? "zeros (and this caller cannot be told to clear them)" :
					   "bytes that are not zeros (a page cache fallback)");
		return -EOPNOTSUPP;
	}
	*zero_len = run;
	*zeroed = run;
	return (long)first << SECTOR_SHIFT;
}

/**
 * p2pnvme_shadow_show - debugfs "placeholders": the pool and its transfers
 * @s: the seq_file, @s->private the controller
 * @unused: -
 *
 * Return: 0.
 */
int p2pnvme_shadow_show(struct seq_file *s, void *unused)
{
	struct p2pnvme *c = s->private;
	/* acquire: the pool as shadow_alloc() filled it */
	struct p2pnvme_shadow *sh = smp_load_acquire(&c->shadow);
	struct p2pnvme_shadow_xfer *sx;

	seq_printf(s, "file_placeholder_mb %u\n", READ_ONCE(p2pnvme_file_placeholder_mb));
	if (!sh) {
		seq_puts(s, "pool none (allocated at the first transfer that needs it)\n");
		return 0;
	}
	spin_lock(&sh->lock);
	seq_printf(s, "pool %u pages in %u chunks\nfree %u\nactive %d\n", sh->nr_slots,
		   sh->nr_chunks, sh->nr_free, atomic_read(&sh->active));
	seq_puts(s, "slots    bytes       position    off0 covered_sectors lost attempts\n");
	list_for_each_entry(sx, &sh->xfers, node)
		seq_printf(s, "%-8u %-11llu %-11llu %-4u %-15u %-4d %u\n", sx->nr, sx->len, sx->pos,
			   sx->off0, bitmap_weight(sx->covered, DIV_ROUND_UP(sx->len, SECTOR_SIZE)),
			   atomic_read(&sx->lost), sx->attempts);
	spin_unlock(&sh->lock);
	return 0;
}
