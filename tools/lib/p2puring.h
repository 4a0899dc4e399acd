/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the io_uring programs share (liburing's: only those that link
 * -luring include this): p2pnvme's commands as IORING_OP_URING_CMD in a
 * 128-byte SQE, and their completions reaped by tag.
 */
#ifndef P2P_TOOLS_P2PURING_H
#define P2P_TOOLS_P2PURING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <liburing.h>

/*
 * @sqe, of a ring set up with IORING_SETUP_SQE128, made a driver's command
 * @cmd_op on @fd: @len bytes of @cmd in its command area (80 at most), tag
 * @tag, everything else 0.
 */
static inline void p2p_uring_cmd(struct io_uring_sqe *sqe, int fd, uint32_t cmd_op,
				 const void *cmd, size_t len, uint64_t tag)
{
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = cmd_op;
	sqe->user_data = tag;
	memcpy(sqe->cmd, cmd, len);
}

/*
 * Reap @nr completions of @ring into @res[tag] and, if given, @res2[tag]
 * (a CQE32 ring's first extra word); 0 or -errno.
 */
static inline int p2p_uring_reap(struct io_uring *ring, unsigned int nr, int *res,
				 uint64_t *res2)
{
	struct io_uring_cqe *cqe;
	unsigned int i;
	int ret;

	for (i = 0; i < nr; i++) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret)
			return ret;
		res[cqe->user_data] = cqe->res;
		if (res2)
			res2[cqe->user_data] = cqe->big_cqe[0];
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

#endif /* P2P_TOOLS_P2PURING_H */
