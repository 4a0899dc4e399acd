/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: what the driver shares with its KUnit tests. */
#ifndef P2PNVME_PRIV_H
#define P2PNVME_PRIV_H

#include <linux/types.h>
#include <uapi/linux/p2pnvme.h>

int p2pnvme_check_io(const struct p2pnvme_io *io, u32 lba_shift, u64 nlb);

#endif /* P2PNVME_PRIV_H */
