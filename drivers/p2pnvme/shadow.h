/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: placeholder pages for dma-bufs without pages (layer 4, read by disk.c) */
#ifndef P2PNVME_SHADOW_H
#define P2PNVME_SHADOW_H

#include <linux/bitmap.h>
#include <linux/bvec.h>
#include <linux/mm.h>
#include <linux/spinlock.h>

#include "internal.h"

struct dma_buf;
struct p2pnvme_reg;
struct seq_file;

/* why a transfer's placeholder bytes went into the placeholders' own RAM */
#define P2PNVME_SHADOW_RETRY	1U	/* its buffer moved, or the request had no room: again */
#define P2PNVME_SHADOW_HOST	2U	/* now in host memory, P2P required: -EREMOTEIO */
#define P2PNVME_SHADOW_REVOKED	4U	/* revoked for good: -ENODEV */

/* runs of slots a transfer holds without allocations of its own */
#define P2PNVME_SHADOW_INLINE	4

/**
 * struct p2pnvme_shadow_run - consecutive slots of one chunk
 * @slot: the first
 * @nr: slots
 */
struct p2pnvme_shadow_run {
	unsigned int slot;
	unsigned int nr;
};

/**
 * struct p2pnvme_shadow_xfer - one file command read into a registered
 *	dma-buf through placeholder pages (file.c owns it; the disk reads it)
 * @reg: the registration, held by the transfer
 * @pos: byte 0's position in the registration's mapping (the dma-buf
 *	 offset: @reg->start + the transfer's offset)
 * @len: bytes
 * @off0: byte 0's offset in the first placeholder page: the bus address of
 *	  @pos modulo the controller page (so every page boundary of the
 *	  placeholders is one of the mapping's, and PRPs describe them)
 * @delta: the mapping's bus address less its position, modulo the
 *	   controller page, when @off0 was computed; a request whose mapping
 *	   says otherwise (mapped anew since) puts the bytes in RAM and has
 *	   the transfer issued again
 * @require: P2P required (the transfer's or the registration's flag)
 * @nr: slots held (the most any @off0 needs)
 * @pool: the pool they are in
 * @runs: the slots, in the transfer's order, as runs of consecutive
 *	  slots of one chunk (physically contiguous pages): one run where
 *	  the pool has room for it
 * @nr_runs: entries of @runs
 * @bvec: the filesystem's bvec: an entry per run (@nr_bvec used)
 * @nr_bvec: entries of @bvec for @off0 and @len
 * @cover_lock: guards @covered's words against completions of other
 *		requests (any context: irqsave)
 * @covered: 512-byte sectors of [0, @len) that a request carried to the
 *	     registration's memory and completed without error (set by the
 *	     disk's completions, a range at a time)
 * @lost: P2PNVME_SHADOW_* bits: requests that put its bytes in RAM
 * @node: on the pool's list of transfers (debugfs)
 * @attempts: issues so far
 * @runs_inline: @runs of a transfer of at most P2PNVME_SHADOW_INLINE runs
 * @bvec_inline: its @bvec
 * @covered_inline: @covered of a transfer of at most BITS_PER_LONG sectors
 */
struct p2pnvme_shadow_xfer {
	struct p2pnvme_reg *reg;
	u64 pos;
	u64 len;
	unsigned int off0;
	unsigned int delta;
	bool require;
	unsigned int nr;
	struct p2pnvme_shadow *pool;
	struct p2pnvme_shadow_run *runs;
	unsigned int nr_runs;
	struct bio_vec *bvec;
	unsigned int nr_bvec;
	spinlock_t cover_lock;	/* see above */
	unsigned long *covered;
	atomic_t lost;
	struct list_head node;
	unsigned int attempts;
	struct p2pnvme_shadow_run runs_inline[P2PNVME_SHADOW_INLINE];
	struct bio_vec bvec_inline[P2PNVME_SHADOW_INLINE];
	DECLARE_BITMAP(covered_inline, BITS_PER_LONG);
};

/**
 * struct p2pnvme_shadow_chunk - physically contiguous pages of the pool
 * @page: the first
 * @pfn: its page frame number
 * @nr: pages
 * @first: the pool's slot index of @page
 * @order: the allocation's order
 */
struct p2pnvme_shadow_chunk {
	struct page *page;
	unsigned long pfn;
	unsigned int nr;
	unsigned int first;
	unsigned int order;
};

/**
 * struct p2pnvme_shadow_slot - the first placeholder page of a run
 * @x: the transfer that holds the run, or NULL
 * @idx: the page's index in @x's pages (its bytes from @x's byte 0 on)
 * @nr: the run's pages
 */
struct p2pnvme_shadow_slot {
	struct p2pnvme_shadow_xfer *x;
	unsigned int idx;
	unsigned int nr;
};

/**
 * struct p2pnvme_shadow - a controller's placeholder pool (shadow.c),
 *	allocated at the first transfer that needs it (c->shadow_lock) and
 *	published whole (c->shadow, a release store)
 * @lock: protects @used, @starts, @nr_free, the runs' owners and @xfers
 *	  (written; the disk reads @starts and the owners without it)
 * @lo_pfn: the lowest page frame of any chunk
 * @hi_pfn: past the highest
 * @nr_chunks: chunks in @chunks
 * @chunks: the pool's memory
 * @nr_slots: pages in all
 * @nr_free: pages no transfer holds
 * @used: a bit per slot held
 * @starts: a bit per run's first slot (the owner is in its @slots entry)
 * @slots: each run's owner, at its first slot's index
 * @xfers: transfers holding slots
 * @active: transfers holding slots (read by the disk, without @lock)
 */
struct p2pnvme_shadow {
	spinlock_t lock;	/* see above */
	unsigned long lo_pfn;
	unsigned long hi_pfn;
	unsigned int nr_chunks;
	struct p2pnvme_shadow_chunk *chunks;
	unsigned int nr_slots;
	unsigned int nr_free;
	unsigned long *used;
	unsigned long *starts;
	struct p2pnvme_shadow_slot *slots;
	struct list_head xfers;
	atomic_t active;
};

extern unsigned int p2pnvme_file_placeholder_mb;
extern bool p2pnvme_file_placeholder_force;

void p2pnvme_shadow_init(struct p2pnvme *c);
void p2pnvme_shadow_exit(struct p2pnvme *c);
int p2pnvme_shadow_get(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx, unsigned int *held);
void p2pnvme_shadow_layout(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx);
void p2pnvme_shadow_reset(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx);
void p2pnvme_shadow_put(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx);
long p2pnvme_shadow_finish(struct p2pnvme *c, struct p2pnvme_shadow_xfer *sx, long ret,
			   struct dma_buf *dmabuf, bool zero_answer, u64 *zeroed, u64 *cpu,
			   u64 *zero_len);
int p2pnvme_shadow_show(struct seq_file *s, void *unused);

/**
 * p2pnvme_shadow_active - may a request of the disk hold placeholder pages?
 * @c: the controller
 *
 * Return: true while a transfer holds slots (any context, no lock).
 */
static inline bool p2pnvme_shadow_active(struct p2pnvme *c)
{
	/* acquire: the pool as it was published */
	struct p2pnvme_shadow *s = smp_load_acquire(&c->shadow);

	return s && atomic_read(&s->active);
}

/**
 * p2pnvme_shadow_span - may page frames [@pfn, @pfn + @nr) hold placeholders?
 * @s: the pool, active (p2pnvme_shadow_active())
 * @pfn: the first page frame of a request's segment
 * @nr: its pages
 *
 * Return: false for a segment wholly outside the pool's span.
 */
static inline bool p2pnvme_shadow_span(const struct p2pnvme_shadow *s, unsigned long pfn,
				       unsigned long nr)
{
	return pfn + nr > s->lo_pfn && pfn < s->hi_pfn;
}

/**
 * p2pnvme_shadow_slot - the pool's slot of page frame @pfn
 * @s: the pool, active (p2pnvme_shadow_active())
 * @pfn: a page frame of a request's data
 *
 * A subtraction per chunk; a frame outside the pool's span costs one.
 *
 * Return: the slot's index, or -1 for a page that is not a placeholder.
 */
static inline int p2pnvme_shadow_slot(const struct p2pnvme_shadow *s, unsigned long pfn)
{
	unsigned int i;

	if (pfn - s->lo_pfn >= s->hi_pfn - s->lo_pfn)
		return -1;
	for (i = 0; i < s->nr_chunks; i++)
		if (pfn - s->chunks[i].pfn < s->chunks[i].nr)
			return s->chunks[i].first + (pfn - s->chunks[i].pfn);
	return -1;
}

/**
 * p2pnvme_shadow_owner - the transfer holding a placeholder, and where
 * @s: the pool, active
 * @slot: a slot some transfer holds (a page of a request's data)
 * @idx: out: the page's index in the transfer's pages
 * @left: out: the pages of its run from @slot on (@slot included)
 *
 * The run's first slot is the last start at or before @slot: the slots
 * between belong to the same run, so no other transfer's start is there,
 * and the bits of a held run stay as they are while it is held.
 *
 * Return: the transfer.
 */
static inline struct p2pnvme_shadow_xfer *
p2pnvme_shadow_owner(const struct p2pnvme_shadow *s, unsigned int slot, unsigned int *idx,
		     unsigned int *left)
{
	unsigned int first = find_last_bit(s->starts, slot + 1);
	const struct p2pnvme_shadow_slot *sl = &s->slots[first];

	*idx = sl->idx + (slot - first);
	*left = sl->nr - (slot - first);
	return sl->x;
}

/**
 * p2pnvme_shadow_t - where a placeholder byte is in its transfer
 * @sx: the transfer holding the slot
 * @idx: the slot's index in @sx's bvec
 * @off: the byte's offset in the page
 *
 * Return: the byte's offset from the transfer's byte 0.
 */
static inline u64 p2pnvme_shadow_t(const struct p2pnvme_shadow_xfer *sx, unsigned int idx,
				   unsigned int off)
{
	return (u64)idx * PAGE_SIZE + off - sx->off0;
}

/**
 * p2pnvme_shadow_cover - a request carried [@t, @t + @n) of @sx to its
 *	registration's memory and completed without error (any context)
 * @sx: the transfer
 * @t: offset from its byte 0
 * @n: bytes
 *
 * A request's bytes of one transfer start and end on 512-byte boundaries
 * of the transfer (file offsets: the filesystem's direct I/O is in
 * logical blocks, and the transfer starts on one); a piece of it cut at a
 * chunk's end marks the sector it shares with the next piece, which the
 * same request carries.
 */
static inline void p2pnvme_shadow_cover(struct p2pnvme_shadow_xfer *sx, u64 t, u64 n)
{
	u64 end = min(t + n, sx->len);
	unsigned long first = t >> SECTOR_SHIFT, flags;

	if (end <= t)
		return;
	spin_lock_irqsave(&sx->cover_lock, flags);
	bitmap_set(sx->covered, first, DIV_ROUND_UP(end, SECTOR_SIZE) - first);
	spin_unlock_irqrestore(&sx->cover_lock, flags);
}

/**
 * p2pnvme_shadow_carried - did the disk carry every byte a read returned
 *	to its registration's memory? (any context; every bio of @sx ended)
 * @sx: the transfer
 * @ret: what the filesystem returned
 *
 * Then nothing is left for the CPU (p2pnvme_shadow_finish() would answer
 * @ret): no request lost bytes to the RAM, and every sector of [0, @ret)
 * is covered. The coverage was set before each request's end, which comes
 * before the read's.
 *
 * Return: true for a read that needs no process context to complete.
 */
static inline bool p2pnvme_shadow_carried(const struct p2pnvme_shadow_xfer *sx, long ret)
{
	unsigned long nsec;

	if (ret <= 0 || atomic_read(&sx->lost))
		return false;
	nsec = DIV_ROUND_UP(ret, SECTOR_SIZE);
	return find_first_zero_bit(sx->covered, nsec) >= nsec;
}

/**
 * p2pnvme_shadow_lose - a request put @sx's bytes in the placeholders' RAM
 * @sx: the transfer
 * @why: P2PNVME_SHADOW_*
 */
static inline void p2pnvme_shadow_lose(struct p2pnvme_shadow_xfer *sx, unsigned int why)
{
	atomic_or(why, &sx->lost);
}

#endif /* P2PNVME_SHADOW_H */
