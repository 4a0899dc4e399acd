/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: data pointers (layer 8; the builders are in p2pnvme.h, for KUnit) */
#ifndef P2PNVME_DPTR_H
#define P2PNVME_DPTR_H

#include "internal.h"

void p2pnvme_cursor_advance(struct p2pnvme_cursor *cur, u64 n);
bool p2pnvme_dma_need_sync(struct device *dev, struct sg_table *sgt);

#endif /* P2PNVME_DPTR_H */
