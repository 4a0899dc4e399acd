/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: registers, bring-up, admin commands (layer 6) */
#ifndef P2PNVME_ADMIN_H
#define P2PNVME_ADMIN_H

#include "internal.h"

bool p2pnvme_ctrl_gone(struct p2pnvme *c);
int p2pnvme_wait_ready(struct p2pnvme *c, bool ready);
int p2pnvme_ctrl_disable(struct p2pnvme *c);
int p2pnvme_ctrl_enable(struct p2pnvme *c);
int p2pnvme_ctrl_shutdown(struct p2pnvme *c);
void p2pnvme_delete_io_queues(struct p2pnvme *c);
int p2pnvme_create_io_queue(struct p2pnvme *c, struct p2pnvme_queue *q);
void p2pnvme_dbbuf_alloc(struct p2pnvme *c);
int p2pnvme_dbbuf_set(struct p2pnvme *c);
int p2pnvme_identify(struct p2pnvme *c);
int p2pnvme_ns_recheck(struct p2pnvme *c);

#endif /* P2PNVME_ADMIN_H */
