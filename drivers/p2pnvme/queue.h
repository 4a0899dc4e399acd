/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: queue pairs, command slots, submission, completion, timeouts (layer 7) */
#ifndef P2PNVME_QUEUE_H
#define P2PNVME_QUEUE_H

#include "internal.h"

/* list blocks a struct p2pnvme_lists holds without arrays of its own */
#define P2PNVME_LISTS_INLINE	2

/**
 * struct p2pnvme_lists - PRP/SGL list blocks of one queue's @list_pool,
 *	taken by a batch before it publishes dma-buf fences: until they are
 *	signalled nothing may allocate with reclaim (a shrinker may wait on
 *	them: the cross-driver contract of drivers/dma-buf/dma-fence.c)
 * @nr: blocks left, used from the end
 * @list: their addresses: @list1, or an array of their own for more than
 *	  P2PNVME_LISTS_INLINE
 * @dma: their bus addresses: @dma1, or an array as @list
 * @list1: room for a few (an io_uring request's: nothing allocated for
 *	   the arrays per request)
 * @dma1: the same for their bus addresses
 */
struct p2pnvme_lists {
	unsigned int nr;
	void **list;
	dma_addr_t *dma;
	void *list1[P2PNVME_LISTS_INLINE];
	dma_addr_t dma1[P2PNVME_LISTS_INLINE];
};

/**
 * struct p2pnvme_cmd - a command slot of a queue; its index is the low bits
 * of the command identifier. A submitter owns the slot from taking its bit
 * of the queue's @slot_map until it publishes the command (@busy, set under
 * @sq_lock); from then on whoever reaps the queue under cq_lock does,
 * which ends it and gives the bit back.
 * @batch: the batch waiting for it; NULL when the slot is free, or when
 *	   the waiter gave up on an admin command the controller still owns
 * @req: the request it belongs to
 * @busy: owned by the controller (submitted, not completed or cancelled)
 * @aborted: an Abort was sent for it after its deadline
 * @expired: past its deadline when a reset or removal stopped the queue;
 *	     fails with -ETIMEDOUT however it ends
 * @gen: generation, bumped at each use, in the upper bits of the CID
 * @deadline: jiffies by which it must complete
 * @list: PRP list or SGL segment of this command, from @list_pool while
 *	  it needs one, else NULL (the slot's owner's)
 * @list_dma: its bus address
 */
struct p2pnvme_cmd {
	struct p2pnvme_batch *batch;
	struct p2pnvme_req *req;
	bool busy;
	bool aborted;
	bool expired;
	u8 gen;
	unsigned long deadline;
	__le64 *list;
	dma_addr_t list_dma;
};

void p2pnvme_queue_setup(struct p2pnvme *c, struct p2pnvme_queue *q, u16 qid, u16 depth);
int p2pnvme_queue_alloc(struct p2pnvme *c, struct p2pnvme_queue *q, u16 qid, u16 depth);
int p2pnvme_admin_exec(struct p2pnvme *c, struct nvme_command *cmd, u32 *result);
int p2pnvme_admin_exec_status(struct p2pnvme *c, struct nvme_command *cmd, u32 *result,
			      u16 *status);
int p2pnvme_admin_exec_timeout(struct p2pnvme *c, struct nvme_command *cmd,
			       unsigned long timeout, u32 *result, u16 *status);
bool p2pnvme_admin_abandoned(struct p2pnvme *c);
void p2pnvme_batch_init(struct p2pnvme_batch *b, bool admin);

/**
 * p2pnvme_batch_init_async - an asynchronous batch: @end runs when its
 *	last command is over and it was launched (p2pnvme_batch_launch())
 * @b: the batch
 * @end: called instead of completing @b->done, which nothing waits on:
 *	 neither it nor @b->next_check is set (p2pnvme_wait_batch() and a
 *	 waiter's timeout checks never see an asynchronous batch; the
 *	 watchdog's are @c->async_any's). In line: one per io_uring request.
 */
static inline void p2pnvme_batch_init_async(struct p2pnvme_batch *b,
					    void (*end)(struct p2pnvme_batch *b))
{
	atomic_set(&b->pending, 1);	/* the submitter's, see the struct */
	b->admin = false;
	b->any_async = false;
	b->timeout = 0;
	b->end = end;
	b->lists = NULL;
}

int p2pnvme_submit(struct p2pnvme *c, struct p2pnvme_batch *b, struct p2pnvme_req *r,
		   struct nvme_command *cmd, struct p2pnvme_cursor *cur, u64 len, bool ring);
void p2pnvme_ring(struct p2pnvme_queue *q);
bool p2pnvme_room_take(struct p2pnvme_queue *q, unsigned int n);
void p2pnvme_room_give(struct p2pnvme_queue *q, unsigned int n);
void p2pnvme_ring_live(struct p2pnvme_queue *q);
void p2pnvme_wait_batch(struct p2pnvme *c, struct p2pnvme_batch *b);
void p2pnvme_batch_launch(struct p2pnvme_batch *b);
void p2pnvme_check_async_timeouts(struct p2pnvme *c);
unsigned int p2pnvme_queue_reap(struct p2pnvme_queue *q);
irqreturn_t p2pnvme_irq(int irq, void *data);
void p2pnvme_queue_start(struct p2pnvme_queue *q);
void p2pnvme_queue_shadow(struct p2pnvme_queue *q, __le32 *dbs, __le32 *eis, u32 stride);
void p2pnvme_io_queues_stop(struct p2pnvme *c);
void p2pnvme_queues_stop(struct p2pnvme *c);
void p2pnvme_queues_cancel(struct p2pnvme *c, int err);
unsigned int p2pnvme_queues_inflight(struct p2pnvme *c);
void p2pnvme_queues_poll(struct p2pnvme *c);

#endif /* P2PNVME_QUEUE_H */
