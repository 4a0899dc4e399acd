/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: what the driver shares with its KUnit tests. */
#ifndef P2PNVME_PRIV_H
#define P2PNVME_PRIV_H

#include <linux/nvme.h>
#include <linux/scatterlist.h>
#include <linux/types.h>
#include <uapi/linux/p2pnvme.h>

/* A position in a DMA-mapped scatterlist, advanced command by command. */
struct p2pnvme_cursor {
	struct scatterlist *sg;
	u64 off;	/* into the current entry */
};

int p2pnvme_check_io(const struct p2pnvme_io *io, u32 lba_shift, u64 nlb);
bool p2pnvme_data_needs_list(const struct p2pnvme_cursor *cur, u64 len, bool sgl);
int p2pnvme_build_prps(__le64 *list, dma_addr_t list_dma, struct p2pnvme_cursor *cur,
		       u64 len, struct nvme_command *cmd);
int p2pnvme_build_sgl(struct nvme_sgl_desc *list, dma_addr_t list_dma,
		      struct p2pnvme_cursor *cur, u64 len, struct nvme_command *cmd);

bool p2pnvme_admin_unprivileged(const struct nvme_command *cmd);
int p2pnvme_admin_xfer_len(const struct nvme_command *cmd, u64 *len);
int p2pnvme_ns_format(const struct nvme_id_ns *ns, u32 max_xfer, u32 *lba_shift);

#endif /* P2PNVME_PRIV_H */
