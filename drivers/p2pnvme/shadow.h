/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: placeholder pages for dma-bufs without pages (layer 4, read by disk.c) */
#ifndef P2PNVME_SHADOW_H
#define P2PNVME_SHADOW_H

#include <linux/bvec.h>
#include <linux/mm.h>

#include "internal.h"

struct dma_buf;
struct p2pnvme_reg;
struct seq_file;

/* why a transfer's placeholder bytes went into the placeholders' own RAM */
#define P2PNVME_SHADOW_RETRY	1U	/* its buffer moved, or the request had no room: again */
#define P2PNVME_SHADOW_HOST	2U	/* now in host memory, P2P required: -EREMOTEIO */
#define P2PNVME_SHADOW_REVOKED	4U	/* revoked for good: -ENODEV */

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
 * @slots: their indices in the pool
 * @bvec: the filesystem's bvec of their pages (@nr_bvec used)
 * @nr_bvec: entries of @bvec for @off0 and @len
 * @covered: 512-byte sectors of [0, @len) that a request carried to the
 *	     registration's memory and completed without error (set_bit() from
 *	     the disk's completions)
 * @lost: P2PNVME_SHADOW_* bits: requests that put its bytes in RAM
 * @node: on the pool's list of transfers (debugfs)
 * @attempts: issues so far
 */
struct p2pnvme_shadow_xfer {
	struct p2pnvme_reg *reg;
	u64 pos;
	u64 len;
	unsigned int off0;
	unsigned int delta;
	bool require;
	unsigned int nr;
	unsigned int *slots;
	struct bio_vec *bvec;
	unsigned int nr_bvec;
	unsigned long *covered;
	atomic_t lost;
	struct list_head node;
	unsigned int attempts;
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
 * struct p2pnvme_shadow_slot - one placeholder page
 * @x: the transfer that holds it, or NULL
 * @idx: the page's index in @x's bvec
 */
struct p2pnvme_shadow_slot {
	struct p2pnvme_shadow_xfer *x;
	unsigned int idx;
};

/**
 * struct p2pnvme_shadow - a controller's placeholder pool (shadow.c),
 *	allocated at the first transfer that needs it (c->shadow_lock) and
 *	published whole (c->shadow, a release store)
 * @lock: protects @used, @nr_free, the slots' owners and @xfers
 * @lo_pfn: the lowest page frame of any chunk
 * @hi_pfn: past the highest
 * @nr_chunks: chunks in @chunks
 * @chunks: the pool's memory
 * @nr_slots: pages in all
 * @nr_free: pages no transfer holds
 * @used: a bit per slot held
 * @slots: each page's owner
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
 * page boundary marks the sector it shares with the next piece, which the
 * same request carries.
 */
static inline void p2pnvme_shadow_cover(struct p2pnvme_shadow_xfer *sx, u64 t, u64 n)
{
	u64 s, end = min(t + n, sx->len);

	for (s = t >> SECTOR_SHIFT; (s << SECTOR_SHIFT) < end; s++)
		set_bit(s, sx->covered);
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
