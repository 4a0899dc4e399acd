/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: io_uring passthrough (layer 2) */
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

#endif /* P2PNVME_URING_H */
