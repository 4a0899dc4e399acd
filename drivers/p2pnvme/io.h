/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: requests (layer 3) */
#ifndef P2PNVME_IO_H
#define P2PNVME_IO_H

#include "internal.h"

int p2pnvme_io_allowed(struct file *filp, const struct p2pnvme_io *io);
struct nvme_uring_cmd;
int p2pnvme_io_from_nvme(struct p2pnvme *c, const struct nvme_uring_cmd *nc, bool vec,
			 struct p2pnvme_io *io);
int p2pnvme_nvme_io_allowed(struct file *filp, const struct p2pnvme_io *io);
struct nvme_passthru_cmd64;
long p2pnvme_admin_passthru(struct p2pnvme *c, const struct nvme_passthru_cmd64 *pt,
			    u32 *result);
struct iov_iter;
long p2pnvme_admin_passthru_iter(struct p2pnvme *c, const struct nvme_passthru_cmd64 *pt,
				 struct iov_iter *to, u32 *result);
int p2pnvme_inflight_get(struct p2pnvme_file *f, const struct p2pnvme_io *ios, unsigned int nr,
			 u64 *bytes);

/* give back what p2pnvme_inflight_get() took */
static inline void p2pnvme_inflight_put(struct p2pnvme_file *f, u64 bytes)
{
	if (bytes)
		atomic64_sub(bytes, &f->inflight);
}

int p2pnvme_run_batch(struct p2pnvme *c, struct p2pnvme_file *f, struct p2pnvme_io *ios,
		      unsigned int nr, unsigned int *failed);
int p2pnvme_req_prepare(struct p2pnvme *c, struct p2pnvme_file *f, struct p2pnvme_req *r);
struct p2pnvme_lists;
struct p2pnvme_fence_slot;
int p2pnvme_req_map(struct p2pnvme *c, struct p2pnvme_req *r, struct p2pnvme_lists *l,
		    struct p2pnvme_fence_slot *(*batch)(struct p2pnvme_queue *q));
void p2pnvme_req_launched(struct p2pnvme_req *r);
void p2pnvme_req_ended(struct p2pnvme_req *r);
int p2pnvme_req_reserve(struct p2pnvme *c, struct p2pnvme_req *r);
void p2pnvme_req_unreserve(struct p2pnvme_req *r);
int p2pnvme_req_submit(struct p2pnvme *c, struct p2pnvme_batch *b, struct p2pnvme_req *r);
void p2pnvme_req_finish(struct p2pnvme *c, struct p2pnvme_req *r, u64 ns);
void p2pnvme_req_abandon(struct p2pnvme *c, struct p2pnvme_req *r);

#endif /* P2PNVME_IO_H */
