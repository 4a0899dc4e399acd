/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: the file command (layer 3, beside io.h) */
#ifndef P2PNVME_FILE_H
#define P2PNVME_FILE_H

#include <p2p_compat.h>

#include "internal.h"

void p2pnvme_file_init(struct p2pnvme *c);
void p2pnvme_file_exit(struct p2pnvme *c);
long p2pnvme_ioc_file_submit(struct p2pnvme_file *f, unsigned long uarg);
/* the disk's completion of a write's bio (disk.c) */
void p2pnvme_file_credit(struct p2pnvme *c, const struct bio_vec *bv, unsigned int bytes);

#if P2P_HAVE_URING_CMD
/* one transfer of the file command through io_uring (uring.c) */
struct p2pnvme_file_cmd;

struct p2pnvme_file_cmd *p2pnvme_file_cmd_alloc(struct p2pnvme_file *f, void (*end)(void *priv),
						void *priv);
int p2pnvme_file_cmd_prepare(struct p2pnvme_file_cmd *fc, const struct p2pnvme_file_io *io,
			     u64 bound, bool zero_answer);
int p2pnvme_file_cmd_issue(struct p2pnvme_file_cmd *fc, bool nowait);
long p2pnvme_file_cmd_result(const struct p2pnvme_file_cmd *fc, u32 *path, u64 *zero_len);
u64 p2pnvme_file_cmd_bound(const struct p2pnvme_file_cmd *fc);
void p2pnvme_file_cmd_free(struct p2pnvme_file_cmd *fc);
void p2pnvme_file_cmd_cache_free(struct p2pnvme_file *f);
#else
static inline void p2pnvme_file_cmd_cache_free(struct p2pnvme_file *f)
{
}
#endif

#endif /* P2PNVME_FILE_H */
