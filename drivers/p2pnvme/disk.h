/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: the namespace as a block device (layer 2, beside uring.h) */
#ifndef P2PNVME_DISK_H
#define P2PNVME_DISK_H

#include "internal.h"

void p2pnvme_disk_init(struct p2pnvme *c);
void p2pnvme_disk_add(struct p2pnvme *c);
void p2pnvme_disk_remove(struct p2pnvme *c);
void p2pnvme_disk_quiesce(struct p2pnvme *c);
void p2pnvme_disk_fail(struct p2pnvme *c);
void p2pnvme_disk_free(struct p2pnvme *c);

#endif /* P2PNVME_DISK_H */
