/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: io_uring passthrough and its blk-mq prototype (layer 2) */
#ifndef P2PNVME_URING_H
#define P2PNVME_URING_H

#include "internal.h"

/* uring.c: io_uring passthrough */
#if P2P_HAVE_URING_CMD
int p2pnvme_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);
int p2pnvme_uring_cmd_iopoll(struct io_uring_cmd *ioucmd, struct io_comp_batch *iob,
			     unsigned int poll_flags);
#endif
void p2pnvme_async_init(struct p2pnvme *c);
void p2pnvme_async_drain(struct p2pnvme *c);
unsigned int p2pnvme_async_live(struct p2pnvme *c);
void p2pnvme_async_exit(struct p2pnvme *c);

/* blkmq.c: the bench-only blk-mq prototype of the io_uring read path */
struct irq_affinity;
#if P2P_HAVE_BLKMQ_PROTO
bool p2pnvme_blkmq_wanted(void);
void p2pnvme_blkmq_irq_sets(struct irq_affinity *affd, unsigned int nvecs);
void p2pnvme_blkmq_init(struct p2pnvme *c);
void p2pnvme_blkmq_exit(struct p2pnvme *c);
bool p2pnvme_blkmq_takes(struct p2pnvme *c, const struct p2pnvme_io *io,
			 unsigned int issue_flags);
int p2pnvme_blkmq_issue(struct io_uring_cmd *ioucmd, struct p2pnvme_file *f,
			const struct p2pnvme_io *io, unsigned int issue_flags);
#else
static inline bool p2pnvme_blkmq_wanted(void)
{
	return false;
}

static inline void p2pnvme_blkmq_irq_sets(struct irq_affinity *affd, unsigned int nvecs) {}
static inline void p2pnvme_blkmq_init(struct p2pnvme *c) {}
static inline void p2pnvme_blkmq_exit(struct p2pnvme *c) {}
#endif

#endif /* P2PNVME_URING_H */
