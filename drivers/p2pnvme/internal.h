/* SPDX-License-Identifier: GPL-2.0 */
/*
 * p2pnvme internals: the controller, its queues and command slots, and the
 * requests and batches that userspace transfers become.
 *
 * Locking, outermost first:
 *   the device lock (pci_dev_lock()) held by the PCI core around probe(),
 *                                remove(), .shutdown, each PCI error
 *                                callback and a PCI reset of the function
 *                                (reset_prepare to reset_done): they never
 *                                run at once; a freeze may happen under it,
 *                                and the reset worker never takes it (so
 *                                they wait for the worker under it)
 *   p2pnvme.io_ref (percpu_ref) the I/O guard (p2pnvme_io_enter()): held by
 *                                I/O ioctls while their batch is mapped and
 *                                in flight (never while pinning or waiting
 *                                for user memory), by io_uring submissions
 *                                while they map and queue, by the io_uring
 *                                watchdog while it looks for expired
 *                                commands (p2pnvme_io_tryenter(): it never
 *                                waits); the reset worker, the end of PCI
 *                                error recovery or of a PCI reset, and
 *                                remove() kill it and wait for it to drain
 *                                (p2pnvme_io_freeze()). Lockdep
 *                                sees it as @io_map: taken for read by the
 *                                holders, for write by a freeze
 *   p2pnvme.reset_lock (rwsem)  for read by those that look at the queues
 *                                outside the I/O path (INFO, sysfs); for
 *                                write by the reset worker, the end of PCI
 *                                error recovery or of a PCI reset, and
 *                                remove(), after their freeze
 *   p2pnvme_disk.lock (mutex)   the disk's queue pairs' life (disk.c):
 *                                stopping, cancelling, restarting and
 *                                killing them; inside reset_lock (for
 *                                write) when a reset or recovery restarts
 *                                them, never inside the I/O guard; holds
 *                                no spinlock while it sends admin commands
 *   p2pnvme.reg_lock (mutex)    the registered buffers' list and mappings
 *                                (reg.c): inside the I/O guard when a
 *                                registration lists its buffer, outside
 *                                a dma-buf's reservation lock
 *   dma_resv (ww_mutex)         a dma-buf's reservation lock: inside the
 *                                I/O guard when a batch or a
 *                                registration maps one (a registration
 *                                may wait there for the exporter's fences,
 *                                up to io_timeout_ms); its holder may wait
 *                                for a registered buffer's busy requests
 *                                (reg_invalidate()), so a request busy on
 *                                a buffer takes no reservation lock and
 *                                not reg_lock before it is idle again
 *   p2pnvme_queue.cq_lock (spin) one queue's completion side: its CQ and
 *                                the busy slots, for whoever reaps it or
 *                                looks at them (its interrupt handler
 *                                too, so _irqsave elsewhere); never taken
 *                                by a submitter
 *   p2pnvme_queue.sq_lock (spin) one queue's submission side: the copy
 *                                into the SQ, its tail and doorbell,
 *                                @stopped; nothing else (no PRP is built
 *                                under it), never in interrupt context
 *   p2pnvme.state_lock (spin)   @state transitions
 *   p2pnvme_pcpu.async_lock     one CPU's list of the io_uring requests
 *     (spin)                     submitted there and their taken/released
 *                                flags; process context only (a
 *                                completion ends a request with a release
 *                                store, no lock); never two at once
 *   p2pnvme.shadow_lock (mutex) the placeholder pool's allocation (shadow.c),
 *                                once; outside every lock above
 *   p2pnvme_shadow.lock (spin)  the placeholder slots' owners: process
 *                                context only; the disk reads a slot's
 *                                owner without it
 *   p2pnvme.file_watch (the     the file command's writes from p2pmem in
 *     maple tree's spinlock)     flight (file.c): taken by file.c in
 *                                process context only, never inside any
 *                                lock above; the disk's completions look
 *                                them up without it (RCU)
 *   p2pnvme_file.fc_lock (spin) an open file's cache of ended io_uring file
 *                                transfers (file.c): process context
 *                                only, nothing taken inside it
 * No queue's lock is held while another queue's is taken, nor a queue's
 * cq_lock while its sq_lock is taken (or the other way). A completion
 * takes wait queue locks inside cq_lock (it ends and idles requests).
 * Room and command slots are taken lock-free (@room, @slot_map).
 */
#ifndef P2PNVME_INTERNAL_H
#define P2PNVME_INTERNAL_H

#include <linux/atomic.h>
#include <linux/blk_types.h>
#include <linux/cache.h>
#include <linux/completion.h>
#include <linux/dma-fence.h>
#include <linux/interrupt.h>
#include <linux/kref.h>
#include <linux/lockdep.h>
#include <linux/list.h>
#include <linux/maple_tree.h>
#include <asm/local64.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/percpu.h>
#include <linux/percpu-refcount.h>
#include <linux/rcupdate.h>
#include <linux/nvme.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/sched/clock.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <p2p_compat.h>
#include <uapi/linux/p2pnvme.h>

#include "p2pnvme.h"

#define P2PNVME_MAX_DEVS	32
#define P2PNVME_MAX_IOQ		32
#define P2PNVME_AQ_DEPTH	32
#define P2PNVME_MAX_DEPTH	4096	/* I/O queue entries, as the CID's slot bits allow */
#define P2PNVME_MAX_XFER	SZ_512K	/* one list page describes it */
#define P2PNVME_CTRL_PAGE	4096	/* CC.MPS = 0 */
#define P2PNVME_LIST_SIZE	4096	/* per-command PRP/SGL list */
#define P2PNVME_PT_MAX		8192	/* admin passthrough data: PRP1 + PRP2 */
/*
 * SCT << 8 | SC of a completion's status (the phase bit shifted out): what
 * struct p2pnvme_io.status reports, without the CRD, More and DNR bits
 */
#define P2PNVME_STATUS_MASK	0x7ff
/* command identifier: slot index in the low bits, a generation above */
#define P2PNVME_CID_SLOT_BITS	12	/* P2PNVME_MAX_DEPTH */
#define P2PNVME_CID_SLOT_MASK	((1U << P2PNVME_CID_SLOT_BITS) - 1)
static_assert(P2PNVME_MAX_DEPTH <= 1U << P2PNVME_CID_SLOT_BITS);

#define P2PNVME_IO_TIMEOUT_MS	5000	/* io_timeout_ms's default */
extern unsigned int p2pnvme_io_timeout_ms;
extern unsigned long p2pnvme_io_timeout_jiffies;
extern bool p2pnvme_bounce;
extern unsigned int p2pnvme_coalesce_entries;
extern unsigned int p2pnvme_coalesce_time_us;
extern unsigned int p2pnvme_max_bounced_reg_mb;
extern bool p2pnvme_shadow_doorbells;

/*
 * the command timeout in jiffies, at least one: io_timeout_ms as its
 * setter converted it (pci.c), not converted again for every command
 */
static inline unsigned long p2pnvme_io_timeout(void)
{
	return READ_ONCE(p2pnvme_io_timeout_jiffies);
}

/* why a transfer takes its path (the p2pnvme_path tracepoint, dev_dbg) */
enum p2pnvme_why {
	P2PNVME_WHY_HOST,	/* host memory: no P2P to decide */
	P2PNVME_WHY_REACHABLE,	/* p2pmem the controller reaches */
	P2PNVME_WHY_FORCED,	/* P2PNVME_IO_F_BOUNCE */
	P2PNVME_WHY_TOPOLOGY,	/* dma_map_sgtable() said -EREMOTEIO: bounce */
	P2PNVME_WHY_POLICY,	/* unreachable and bouncing not allowed */
	P2PNVME_WHY_DMABUF,	/* an imported dma-buf: the exporter maps */
	P2PNVME_WHY_REQUIRED,	/* host memory, and P2P required (_F_REQUIRE_P2P) */
	P2PNVME_WHY_UNREACHABLE,	/* a dma-buf in a BAR P2PDMA refuses */
	P2PNVME_WHY_COHERENT,	/* CPU-coherent device memory, and P2P required */
};

/* a PCI function's name, as struct p2pnvme_buf_reg.owner holds it */
#define P2PNVME_OWNER_LEN	20

enum p2pnvme_stat {
	ST_READS_P2P, ST_WRITES_P2P, ST_READS_BOUNCE, ST_WRITES_BOUNCE,
	ST_READS_HOST, ST_WRITES_HOST, ST_BYTES_P2P, ST_BYTES_BOUNCE, ST_BYTES_HOST,
	ST_REFUSED, ST_ERRORS, ST_TIMEOUTS, ST_ABORTS, ST_RESETS, ST_CANCELLED,
	ST_IRQS, ST_READS_DMABUF, ST_WRITES_DMABUF, ST_BYTES_DMABUF,
	ST_QUEUE_FULL_WAITS, ST_QUEUE_FULL_REQUEUED,
	/* the file command (file.c): transfers ended, by the path it reported */
	ST_FILE_READS_P2P, ST_FILE_WRITES_P2P, ST_FILE_READS_HOST, ST_FILE_WRITES_HOST,
	ST_FILE_READS_DMABUF, ST_FILE_WRITES_DMABUF, ST_FILE_READS_BOUNCE, ST_FILE_WRITES_BOUNCE,
	ST_FILE_BYTES_P2P, ST_FILE_BYTES_HOST, ST_FILE_BYTES_DMABUF, ST_FILE_BYTES_BOUNCE,
	ST_FILE_ERRORS,
	/* ... of those errors, REQUIRE_P2P transfers the page cache served */
	ST_FILE_ERRORS_FALLBACK,
	/* ... and its refusals before anything was issued, by reason */
	ST_FILE_REFUSED_XDEV, ST_FILE_REFUSED_ALIGN, ST_FILE_REFUSED_P2P,
	ST_FILE_REFUSED_SWAPFILE, ST_FILE_REFUSED_INFLIGHT,
	/* bytes of reads through placeholders the CPU wrote: zeros, and the rest */
	ST_FILE_ZEROED_BYTES, ST_FILE_CPU_BYTES,
	/* reads through placeholders that ended without error */
	ST_FILE_PLACEHOLDER_READS, ST_NR
};

/*
 * Latency of transfers as the caller waits for them (submission to the end
 * of its batch), per direction and path: count, sum, maximum and a log2
 * histogram of microseconds (bucket 0: below 2 us, bucket i: [2^i, 2^(i+1))
 * us, the last one open-ended).
 */
#define P2PNVME_LAT_BUCKETS	24
enum { LAT_P2P, LAT_BOUNCE, LAT_HOST, LAT_DMABUF, LAT_PATHS };

struct p2pnvme_lat {
	u64 count;
	u64 sum_ns;
	u64 hist[P2PNVME_LAT_BUCKETS];
};

/* What the counters say, summed over the CPUs (see p2pnvme_counts()). */
struct p2pnvme_counts {
	u64 stats[ST_NR];
	struct p2pnvme_lat lat[2][LAT_PATHS];
};

/* io_uring requests kept per CPU for the next ones (uring.c) */
#define P2PNVME_ASYNC_CACHE	32

struct p2pnvme_async;

/*
 * One CPU's share of the counters: added to on that CPU only (local64,
 * safe against its interrupts), read from any CPU. No cache line is
 * shared between CPUs on the I/O path. And answered io_uring requests
 * kept for the CPU's next ones, @free[0..@nr_free): process context with
 * preemption off; freed with the controller (p2pnvme_async_exit()).
 *
 * And the io_uring requests submitted on this CPU, not released yet: on
 * @async_list (@async_lock) from their submission to their answer,
 * counted in @async_live until their release. A request's answer usually
 * runs on the CPU that submitted it (in its submitter's task), so these
 * lines stay with that CPU too; removal and the watchdog walk every CPU's.
 */
struct p2pnvme_pcpu {
	local64_t stats[ST_NR];
	local64_t lat_count[2][LAT_PATHS];
	local64_t lat_sum[2][LAT_PATHS];
	local64_t lat_hist[2][LAT_PATHS][P2PNVME_LAT_BUCKETS];
	unsigned int nr_free;
	struct p2pnvme_async *free[P2PNVME_ASYNC_CACHE];
	spinlock_t async_lock;	/* see above */
	struct list_head async_list;
	atomic_t async_live;
};

/* Controller state; see struct p2pnvme for who moves it where. */
/*
 * The controller's state; p2pnvme_change_state() is the only writer, and
 * its table the only list of transitions:
 *
 *   RESETTING -> LIVE        probe is done; the reset worker brought it back
 *   LIVE -> RESETTING        p2pnvme_schedule_reset() (a timeout, CSTS.CFS)
 *   LIVE, RESETTING ->       PCI error recovery or a PCI reset of the
 *     RECOVERING             function takes it (the reset worker, if any,
 *                            finishes without enabling it)
 *   RECOVERING -> LIVE       their end brought it back
 *   LIVE, RESETTING,         remove() and shutdown()
 *     RECOVERING -> DELETING
 *   any -> DEAD              failure (probe, a reset or recovery that
 *                            could not bring it back, a permanent PCI
 *                            error), or the end of remove()
 *
 * I/O waits while RESETTING or RECOVERING; DELETING and DEAD refuse it.
 */
enum p2pnvme_state {
	P2PNVME_LIVE,		/* I/O accepted */
	P2PNVME_RESETTING,	/* probe, or the reset worker queued or running */
	P2PNVME_RECOVERING,	/* PCI error recovery or a PCI reset owns it */
	P2PNVME_DELETING,	/* remove() or shutdown() in progress */
	P2PNVME_DEAD,		/* final: nothing touches the device any more */
	P2PNVME_NR_STATES
};

/* who owns a RECOVERING controller (struct p2pnvme.recovery) */
enum p2pnvme_recovery {
	P2PNVME_RECOVERY_NONE,
	P2PNVME_RECOVERY_PCI_ERROR,	/* AER/DPC: error_detected .. resume */
	P2PNVME_RECOVERY_FUNC_RESET,	/* reset_prepare .. reset_done */
};

struct p2pnvme_batch;
struct p2pnvme_file;
struct p2pnvme_disk;		/* disk.h */
struct p2pnvme_shadow;		/* shadow.h */
struct p2pnvme_reg;		/* reg.h */
struct p2pnvme_fence;		/* reg.h */
struct p2pnvme_lists;		/* queue.h */
struct p2pnvme_cmd;		/* queue.h */

/**
 * struct p2pnvme_req - one transfer (an entry of a batch)
 * @io: the user's request, kernel copy; @io->result and friends are written
 *	when the batch finishes
 * @q: queue every command of this request goes to
 * @pages: pinned user pages (NULL for commands without data)
 * @nr: how many
 * @iter: where the data is, instead of @io->addr: the iovecs or io_uring's
 *	  registered buffer of the kernel's NVMe passthrough through io_uring;
 *	  the caller's, read and cleared when the request is prepared
 * @borrowed: @pages are io_uring's registered buffer's, held by the command
 *	      until it is answered: not unpinned here
 * @sgt: DMA-mapped table the commands describe: @pages, or @bpages
 * @page1: @pages of a buffer within one page (a 4 KiB I/O), which then
 *	   needs no array of its own
 * @sg1: @sgt's one entry when it describes one page: no table to allocate
 * @bpages: host bounce pages when the request bounces
 * @bnr: how many
 * @reg: the registered buffer it names (P2PNVME_IO_F_REGISTERED), with a
 *	 reference
 * @reg_busy: counted in @reg->busy
 * @dmabuf: imported dma-buf (P2PNVME_IO_F_DMABUF), with a reference
 * @owner: the entry of the batch whose attachment and mapping of @dmabuf
 *	   this one uses (itself, or an earlier entry for the same dma-buf)
 * @attach: our attachment to it; NULL unless @owner is this entry
 * @dsgt: its mapping for the controller (both directions), held until the
 *	  batch is over
 * @fence: ours, allocated at map time (entries that own an attachment,
 *	   and every request naming a registered dma-buf), in the dma-buf's
 *	   reservation object while the commands may run: the exporter waits
 *	   for it before it moves or revokes the memory
 * @fence_added: @fence is initialised and published
 * @resv_locked: p2pnvme_dmabuf_fence() holds the resv of @dmabuf (or of
 *		 @reg's dma-buf)
 * @lists: list blocks taken for this request alone before its fence was
 *	   published (an io_uring request: its batch's), given back when it
 *	   is unmapped; NULL for a batch's entries (run_batch() holds theirs)
 * @signalling: p2pnvme_req_map() published @fence and entered the fence
 *		signalling section, which p2pnvme_req_launched() leaves
 * @cookie: dma_fence_begin_signalling()'s, for that
 * @invalidated: the exporter asked us to stop using the mapping (set from
 *		 its invalidation callback, under the dma-buf's resv lock)
 * @dmabuf_host: @dsgt is host memory, not a PCI device's BAR
 *		 (p2pnvme_dmabuf_in_host())
 * @dmabuf_coherent: with @dmabuf_host, that memory is device memory the
 *		     CPU reaches coherently (p2pnvme_dmabuf_in_host())
 * @dmabuf_owner: the function whose BAR the data goes to or comes from
 *		  (dma-bufs, registered ones too), or "": the trace's
 * @dmabuf_unreachable: the mapping is in @dmabuf_owner's BAR and the
 *			kernel's P2PDMA verdict refuses P2P between that
 *			function and the controller
 *			(p2pnvme_dmabuf_in_host()): refused with -EREMOTEIO
 *			(a registered buffer's mapping again, too)
 * @dir: DMA direction of @sgt or @dsgt
 * @mapped: @sgt is DMA-mapped
 * @single: mapped as one page (req_map_single()): @sg1 holds the address
 * @p2p: @pages are p2pmem
 * @bounce: the data goes through @bpages
 * @deny: bouncing is not allowed (policy or P2PNVME_IO_F_NO_BOUNCE)
 * @sgl: describe the data with SGLs
 * @why: enum p2pnvme_why, for tracing and debug messages
 * @error: first error of any of its commands (written by their queue's
 *	   reaper; read once the batch is over)
 * @status: NVMe status of the command that failed (as @error): its
 *	    completion's whole status field but the phase bit (SCT << 8 | SC,
 *	    CRD, More and DNR above), as the kernel's NVMe passthrough returns
 *	    it; struct p2pnvme_io.status keeps P2PNVME_STATUS_MASK of it
 * @result: completion dword 0 of the last command (as @error; admin commands)
 * @submit_error: what stopped its submission half way (the submitter's;
 *		  p2pnvme_req_error() merges it into @error)
 * @reserved: room on @q taken ahead for its commands not submitted yet
 *	      (p2pnvme_req_reserve())
 * @bound: the serial of the registration @io's buffer id must still name
 *	   (an io_uring request issued again, see uring.c), or 0
 * @reg_gen: @reg's mapping generation its list blocks were counted for
 *	     (p2pnvme_reg_lists()), which p2pnvme_reg_arm() checks; 0: not
 *	     counted
 */
struct p2pnvme_req {
	struct p2pnvme_io *io;
	struct p2pnvme_queue *q;
	struct page **pages;
	unsigned int nr;
	struct iov_iter *iter;
	bool borrowed;
	struct sg_table sgt;
	struct page *page1;
	struct scatterlist sg1;
	struct page **bpages;
	unsigned int bnr;
	struct p2pnvme_reg *reg;
	bool reg_busy;
	struct dma_buf *dmabuf;
	struct p2pnvme_req *owner;
	struct dma_buf_attachment *attach;
	struct sg_table *dsgt;
	struct p2pnvme_fence *fence;
	bool fence_added;
	bool resv_locked;
	struct p2pnvme_lists *lists;
	bool signalling;
	bool cookie;
	bool invalidated;
	bool dmabuf_host;
	bool dmabuf_coherent;
	char dmabuf_owner[P2PNVME_OWNER_LEN];
	bool dmabuf_unreachable;
	enum dma_data_direction dir;
	bool mapped;
	bool single;
	bool p2p;
	bool bounce;
	bool deny;
	bool sgl;
	u8 why;
	int error;
	u16 status;
	u32 result;
	int submit_error;
	unsigned int reserved;
	u64 bound;
	unsigned long reg_gen;
};

/*
 * The out-fields of a request read from an ioctl's argument: what the
 * caller left there (a struct re-used, a call restarted) means nothing.
 */
static inline void p2pnvme_io_clear_out(struct p2pnvme_io *io)
{
	io->result = 0;
	io->path = 0;
	io->status = 0;
}

/*
 * The status a request of p2pnvme's own interface reports (struct
 * p2pnvme_io.status): SCT and SC, without the CRD, More and DNR bits that
 * the kernel's NVMe passthrough returns.
 */
static inline u32 p2pnvme_io_status(const struct p2pnvme_io *io)
{
	return io->status & P2PNVME_STATUS_MASK;
}

/*
 * Once every command of @r is over: its outcome. The first real error wins
 * over a cancellation, whether a command or the submission saw it.
 */
static inline void p2pnvme_req_error(struct p2pnvme_req *r)
{
	if (r->submit_error && (!r->error || r->error == -ECANCELED))
		r->error = r->submit_error;
	r->submit_error = 0;
}

/**
 * struct p2pnvme_batch - requests submitted together and waited for together
 * @pending: commands submitted and not completed yet, plus one held by the
 *	     submitter until p2pnvme_wait_batch(): it cannot drop to 0 while
 *	     commands are still being submitted
 * @done: completed by whoever drops @pending to 0 (and then touches the
 *	  batch no more); the waiter returns only after taking it, so an
 *	  on-stack batch is safe and a completion wakes just its own waiter.
 *	  Not set up for an asynchronous batch (p2pnvme_batch_init_async()),
 *	  which has @end instead, nor is @next_check
 * @admin: the commands go to the admin queue (always polled)
 * @any_async: matches the commands of every asynchronous batch (the
 *	       watchdog's: see p2pnvme_async_watch())
 * @next_check: jiffies of the waiter's next look for expired commands
 * @timeout: jiffies each of its commands gets before it expires; 0:
 *	     io_timeout_ms (the admin passthrough's: the command's own
 *	     timeout_ms, or 60 s, as nvme-pci's)
 * @end: for an asynchronous batch (io_uring), called instead of completing
 *	 @done by whoever drops @pending to 0, possibly in hard interrupt
 *	 context and under its queue's cq_lock
 * @lists: list blocks taken for the batch before its dma-buf fences were
 *	   published (p2pnvme_submit() allocates none with reclaim then), or
 *	   NULL
 * @end_ns: with @end: p2pnvme_now() when its last command was over, read
 *	    once per completion pass for every batch that pass ends; set
 *	    before @end runs
 */
struct p2pnvme_batch {
	atomic_t pending;
	struct completion done;
	bool admin;
	bool any_async;
	unsigned long next_check;
	unsigned long timeout;
	void (*end)(struct p2pnvme_batch *b);
	struct p2pnvme_lists *lists;
	u64 end_ns;
};

/**
 * struct p2pnvme_queue - one submission/completion queue pair
 * @c: its controller
 * @qid: 0 for the admin queue
 * @depth: entries of each ring; at most @depth - 1 commands are in flight
 * @vector: MSI-X vector of the CQ, -1 when polled
 * @sq: submission ring (coherent host memory)
 * @sq_dma: its bus address
 * @cq: completion ring (coherent host memory)
 * @cq_dma: its bus address
 * @sq_db: SQ tail doorbell in BAR0
 * @cq_db: CQ head doorbell in BAR0
 * @sq_shadow: the SQ tail's word in the shadow doorbell buffer (Doorbell
 *	       Buffer Config), NULL while the controller does not read one;
 *	       written under @sq_lock
 * @sq_ei: the controller's event index for the SQ tail, beside it
 * @cq_shadow: the CQ head's word there, written under @cq_lock
 * @cq_ei: the controller's event index for the CQ head
 * @cmds: @depth - 1 command slots
 * @list_pool: P2PNVME_LIST_SIZE coherent blocks for the commands' lists
 *	       (I/O queues)
 * @slot_map: a bit per slot, set while it is taken (atomic bit operations)
 * @room: slots neither taken nor reserved: a submitter takes room first
 *	  (one slot's, or a request's worth at once), so the slot it then
 *	  looks for in @slot_map is there
 * @next_slot: where the search for a free slot starts (a hint)
 * @sq_lock: protects the submission side, see the top of the file
 * @sq_tail: next free SQ slot
 * @sq_db_tail: tail last written to @sq_db
 * @stopped: no submissions (reset or removal in progress)
 * @submitted: commands published, ever (wraps)
 * @inflight_max: most commands in flight seen at once (debugfs), looked
 *		 at each doorbell
 * @cq_lock: protects the completion side (the fields below and the busy
 *	     slots), see the top of the file
 * @cq_head: next CQ entry to look at
 * @cq_phase: phase bit that marks a new CQ entry
 * @completed: commands ended, ever (wraps); @submitted - @completed are in
 *	       flight
 */
struct p2pnvme_queue {
	struct p2pnvme *c;
	u16 qid;
	u16 depth;
	int vector;
	struct nvme_command *sq;
	dma_addr_t sq_dma;
	struct nvme_completion *cq;
	dma_addr_t cq_dma;
	u32 __iomem *sq_db;
	u32 __iomem *cq_db;
	__le32 *sq_shadow;
	__le32 *sq_ei;
	__le32 *cq_shadow;
	__le32 *cq_ei;
	struct p2pnvme_cmd *cmds;
	struct dma_pool *list_pool;
	unsigned long *slot_map;
	atomic_t room;
	unsigned int next_slot;

	spinlock_t sq_lock;	/* see above */
	u16 sq_tail;
	u16 sq_db_tail;
	bool stopped;
	u32 submitted;
	u16 inflight_max;

	spinlock_t cq_lock ____cacheline_aligned_in_smp;	/* see above */
	u16 cq_head;
	u8 cq_phase;
	u32 completed;
};

/* Commands of @q in flight (a snapshot, unless both sides are held off). */
static inline unsigned int p2pnvme_queue_inflight(const struct p2pnvme_queue *q)
{
	u32 completed = READ_ONCE(q->completed);

	/* a command completes after its submission: read in that order */
	smp_rmb();
	return (u32)(READ_ONCE(q->submitted) - completed);
}

/**
 * struct p2pnvme_upper_ops - what the controller's owners tell a layer
 *	above that has queue pairs of its own on it (the disk, disk.c): its
 *	queues live and die with the controller's enables, but only that
 *	layer knows its requests. Called by ctrl.c (and pci.c at shutdown),
 *	never by name: a lower layer calls up only through a pointer.
 * @stop: no more submissions to its queues (quiesced; idempotent); with
 *	  @answers, the controller still answers its admin queue, and the
 *	  layer deletes its I/O queues there before the controller is
 *	  disabled (as p2pnvme_delete_io_queues() does for the engine's)
 * @cancel: the controller is disabled (or gone): nothing in flight can
 *	    complete or DMA any more; each request ends, or is requeued to
 *	    be retried after the restart (@err: why; -ENODEV: never retried)
 * @restart: the controller was enabled again (@err 0: its queues are
 *	     created again and submissions resume), or will not be (@err:
 *	     every request fails from now on, without reaching the
 *	     controller). Return: 0, or why its queues could not be created,
 *	     which fails the reset; called with reset_lock held for write,
 *	     or at shutdown
 */
struct p2pnvme_upper_ops {
	void (*stop)(struct p2pnvme *c, bool answers);
	void (*cancel)(struct p2pnvme *c, int err);
	int (*restart)(struct p2pnvme *c, int err);
};

/**
 * struct p2pnvme - one controller
 * @pdev: the PCI function
 * @bar: BAR0 mapping
 * @cap: CAP register
 * @db_stride: doorbell stride in 32-bit words
 * @ready_timeout: CAP.TO in jiffies
 * @minor: of /dev/p2pnvmeN
 * @dev: the char device's struct device
 * @nsid: namespace served
 * @lba_shift: log2 of its LBA size
 * @nlb: its size in LBAs
 * @max_xfer: bytes per command
 * @max_seg: bytes of one scatterlist segment the DMA layer maps at once
 * @sgl: the controller takes SGLs for I/O commands
 * @polled: I/O completions are polled (no MSI-X)
 * @acl: Abort Command Limit: Aborts the controller takes at once
 * @aborts: Aborts outstanding
 * @serial: Identify serial number
 * @model: Identify model number
 * @firmware: Identify firmware revision
 * @passthru_bounce: the NVMe passthrough's I/O (NVME_IOCTL_IO_CMD) may bounce
 *		     p2pmem the topology refuses (sysfs, default no)
 * @oacs: Identify's Optional Admin Command Support
 * @dbbuf_dbs: the shadow doorbell buffer, one controller page (coherent,
 *	       lives as long as the device), or NULL: the controller has no
 *	       Doorbell Buffer Config, or shadow_doorbells was off at probe
 * @dbbuf_dbs_dma: its bus address
 * @dbbuf_eis: the event index buffer beside it
 * @dbbuf_eis_dma: its bus address
 * @dbbuf_live: the controller reads them since this enable (set and cleared
 *		under @reset_lock for write, or at probe)
 * @id_buf: one page for Identify data (coherent, lives as long as the device)
 * @id_dma: its bus address
 * @pt_buf: P2PNVME_PT_MAX bytes for admin passthrough data (coherent, lives
 *	    as long as the device: a command that never completes cannot
 *	    write into freed memory)
 * @pt_dma: its bus address
 * @pt_lock: serialises users of @pt_buf (and none uses it while
 *	     @admin_abandoned is not 0)
 * @nr_ioq: I/O queue pairs created
 * @want_diskq: probe asks for a second set of queue pairs, the disk's
 *		(disk.c)
 * @nr_diskq: the second set's queue pairs: as many as @nr_ioq, after
 *	       them, each with its own vector; 0 without it
 * @disk: the disk, or NULL (set by disk.c at probe, cleared at removal
 *	  once nothing calls it any more)
 * @upper: the disk's hooks (@disk's), or NULL: set at probe before the
 *	   controller is LIVE, cleared with @disk
 * @disk_rules: the disk was added: the LBA paths of the char device need
 *		CAP_SYS_RAWIO from then on, for the rest of the binding
 * @disk_bdev: the disk's whole-device block_device while the disk is added
 *	       (RCU: freed a grace period after its last reference), for
 *	       p2pnvme_disk_claimed()
 * @cpu_queue: per possible CPU, the index of the I/O queue it submits to:
 *	       the one whose interrupt the CPU takes
 * @cpuhp_node: on the driver's CPU hotplug state from after the I/O queues
 *		are created to before their vectors are freed (pci.c)
 * @adminq: the admin queue (polled)
 * @ioq: the I/O queues
 * @io_ref: the I/O guard, see the top of the file
 * @io_drained: completed by @io_ref's release: a freeze is over
 * @io_map: lockdep's view of @io_ref
 * @reset_lock: see the top of the file
 * @state_lock: protects @state and @recovery
 * @recovery: enum p2pnvme_recovery: who owns the controller while it is
 *	      RECOVERING (the PCI callbacks, under the device lock)
 * @state: enum p2pnvme_state, written only by p2pnvme_change_state()
 *	   (under @state_lock; the transitions to DEAD that readers of the
 *	   queues must not see half done also under @reset_lock for write).
 *	   DEAD is final: the device, its BAR and its queue memory are not
 *	   touched again (all released at unbind).
 * @escalate: how the queue layer asks for a reset when a timeout calls for
 *	      one (p2pnvme_schedule_reset(), set by p2pnvme_ctrl_init()): the
 *	      layer below the controller's never calls it by name, as blk-mq's
 *	      timeout handler is the driver's
 * @reset_work: resets the controller, holding a reference on @kref
 * @wq: woken whenever slots go free (submitters waiting for one, removal
 *	waiting for the queues to drain) or @state changes
 * @admin_abandoned: admin commands given up on at their deadline that the
 *		     controller still owns (their slots busy; changed under
 *		     the admin queue's cq_lock): it may still DMA into their
 *		     buffers, so @pt_buf is not used again until none is left
 *		     (the controller answers late, or a reset, recovery or
 *		     removal cancels them)
 * @progress: completions so far (any queue), for waiters that need to know
 *	      whether something happened since they last looked
 * @pcpu: per CPU counters and latency sums, read by sysfs; and the CPU's
 *	  cache of io_uring requests
 * @lat_max: the longest latency by [write][path], ns (atomic: it changes
 *	     only when a new maximum is seen)
 * @stats_lock: serialises a reset with the readers of @base
 * @base: what the counters said at the last reset; readers subtract it
 * @kref: held by the driver binding, each open file and a queued reset, so
 *	  that an ioctl on a file that outlived the device finds DEAD
 * @debugfs: /sys/kernel/debug/p2pnvme/<bdf>/
 * @async_watch: looks for the expired commands of io_uring requests while
 *		any CPU's list has one (struct p2pnvme_pcpu; remove() waits
 *		for every CPU's @async_live to be 0)
 * @async_any: the batch the watchdog's timeout checks match them with
 * @async_plugged: doorbells an io_uring submitter left to its block plug
 *		   (rung when the submission batch ends); remove() waits
 *		   for 0 before the queues go
 * @reg_lock: protects @reg_list and the buffers' mappings (see reg.c)
 * @reg_bounced: bytes of registered host buffers mapped through swiotlb's
 *		 bounce slots, at most max_bounced_reg_mb
 * @reg_list: every registered buffer of every file, for removal
 * @reg_nb: PCI bus notifier: the unbinding of a function whose BAR a
 *	    registered dma-buf of a static exporter maps (reg.c); a function
 *	    added or removed (@p2p_verdicts)
 * @p2p_verdicts: the kernel's P2PDMA verdict between the controller and
 *		  each function a dma-buf mapping was found in, by that
 *		  function's domain and id (xa_mk_value(): 1 reachable, 0
 *		  not); emptied whenever a PCI function is added or removed
 *		  (dmabuf.c)
 * @p2p_gen: bumped at each of those, so that a verdict computed across
 *	     one is not kept
 * @file_watch: the file command's writes from p2pmem in flight, each a
 *		struct p2pnvme_watch by the address range of its bio_vec
 *		array (file.c): the disk's completion credits each bio of a
 *		write request whose bi_io_vec is in one of them (RCU lookups,
 *		MT_FLAGS_USE_RCU; changed in process context only)
 * @file_watched: how many are in @file_watch (the disk looks only while
 *		  some are)
 * @shadow_lock: serialises the allocation of @shadow
 * @shadow: the file command's placeholder pool (shadow.c), NULL until a
 *	    transfer first needs it; published whole (a release store), freed
 *	    with the controller
 */
struct p2pnvme {
	struct pci_dev *pdev;
	void __iomem *bar;
	u64 cap;
	u32 db_stride;
	unsigned long ready_timeout;
	int minor;
	struct device *dev;
	u32 nsid;
	u32 lba_shift;
	u64 nlb;
	u32 max_xfer;
	unsigned int max_seg;
	bool sgl;
	bool polled;
	unsigned int acl;
	atomic_t aborts;
	char serial[20];
	char model[40];
	char firmware[8];
	bool passthru_bounce;
	u16 oacs;
	__le32 *dbbuf_dbs;
	dma_addr_t dbbuf_dbs_dma;
	__le32 *dbbuf_eis;
	dma_addr_t dbbuf_eis_dma;
	bool dbbuf_live;
	void *id_buf;
	dma_addr_t id_dma;
	void *pt_buf;
	dma_addr_t pt_dma;
	struct mutex pt_lock;	/* see above */
	unsigned int nr_ioq;
	bool want_diskq;
	unsigned int nr_diskq;
	struct p2pnvme_disk *disk;
	const struct p2pnvme_upper_ops *upper;
	bool disk_rules;
	struct block_device __rcu *disk_bdev;
	u16 *cpu_queue;
	struct hlist_node cpuhp_node;
	struct p2pnvme_queue adminq;
	struct p2pnvme_queue *ioq;
	struct percpu_ref io_ref;
	struct completion io_drained;
	struct lockdep_map io_map;
	struct rw_semaphore reset_lock;
	spinlock_t state_lock;	/* see above */
	enum p2pnvme_recovery recovery;
	enum p2pnvme_state state;
	void (*escalate)(struct p2pnvme *c);
	struct work_struct reset_work;
	wait_queue_head_t wq;
	atomic_t admin_abandoned;
	atomic_t progress;
	struct p2pnvme_pcpu __percpu *pcpu;
	atomic64_t lat_max[2][LAT_PATHS];
	struct mutex stats_lock;	/* see above */
	struct p2pnvme_counts base;
	struct kref kref;
	struct dentry *debugfs;
	struct delayed_work async_watch;
	struct p2pnvme_batch async_any;
	atomic_t async_plugged;
	struct mutex reg_lock;	/* see above */
	struct list_head reg_list;
	atomic64_t reg_bounced;
	struct notifier_block reg_nb;
	struct xarray p2p_verdicts;
	atomic_t p2p_gen;
	struct maple_tree file_watch;
	atomic_t file_watched;
	struct mutex shadow_lock;	/* see above */
	struct p2pnvme_shadow *shadow;
};

/**
 * struct p2pnvme_watch - what the disk tells the file command about one
 *	write from p2pmem (file.c; the disk's completion, disk.c)
 * @moved: bytes of the write's own bio_vec array that the disk's requests
 *	   carried and the controller completed without error
 */
struct p2pnvme_watch {
	atomic64_t moved;
};

/* registered buffer ids a file also keeps in a plain array (reg.c) */
#define P2PNVME_REG_FAST	8

struct p2pnvme_reg;
struct p2pnvme_file_cmd;

/**
 * struct p2pnvme_file - one open() of /dev/p2pnvmeN
 * @c: the controller, with a reference
 * @inflight: bytes of the file's transfers under way now (pinned user
 *	      memory or bounce pages), bounded by max_inflight_mb
 * @regs: its registered buffers by id (XA_FLAGS_ALLOC; RCU lookups)
 * @reg_fast: the entries of @regs below P2PNVME_REG_FAST, the same ones,
 *	      for a lookup per transfer without walking @regs; set and
 *	      cleared with them under @regs' lock, read under RCU
 * @fc_lock: guards @fc_free and @fc_nfree (process context)
 * @fc_free: io_uring file transfers that ended, kept for the next ones
 *	     (file.c, p2pnvme_file_cmd_alloc(): an allocation cache, as
 *	     io_uring keeps its own), linked through their @next_free
 * @fc_nfree: how many (at most FILE_CMD_CACHE); freed at the release
 */
struct p2pnvme_file {
	struct p2pnvme *c;
	atomic64_t inflight;
	struct xarray regs;
	struct p2pnvme_reg __rcu *reg_fast[P2PNVME_REG_FAST];
	spinlock_t fc_lock;	/* see above */
	struct p2pnvme_file_cmd *fc_free;
	unsigned int fc_nfree;
};

/* Any context: this CPU's counter, no cache line shared with others. */
static inline void p2pnvme_stat_add(struct p2pnvme *c, enum p2pnvme_stat s, u64 v)
{
	local64_add(v, &get_cpu_ptr(c->pcpu)->stats[s]);
	put_cpu_ptr(c->pcpu);
}

static inline enum p2pnvme_state p2pnvme_state(struct p2pnvme *c)
{
	return READ_ONCE(c->state);
}

/*
 * Is the controller's disk (disk.c) claimed now: opened exclusively
 * (mounted, mkfs, a holder such as dm), itself or one of its partitions
 * (the whole device's bd_holder is set for a partition's claim too)? A
 * snapshot: a claim may begin right after.
 */
static inline bool p2pnvme_disk_claimed(struct p2pnvme *c)
{
	struct block_device *bdev;
	bool claimed;

	rcu_read_lock();
	bdev = rcu_dereference(c->disk_bdev);
	claimed = bdev && READ_ONCE(bdev->bd_holder);
	rcu_read_unlock();
	return claimed;
}

/*
 * The time stamps of the latency counters: local_clock(), the scheduler's
 * clock (the TSC on x86, read where it runs), not ktime_get(). Where a
 * VM's clocksource is HPET or the ACPI PM timer (its TSC found unstable),
 * every ktime_get() is a register read the hypervisor traps, microseconds
 * per I/O that nvme-pci's passthrough, which reads no clock, never pays.
 * Two CPUs' stamps may disagree by a little (at most about a tick where
 * the TSC is not stable): p2pnvme_elapsed() makes a negative span 0.
 */
static inline u64 p2pnvme_now(void)
{
	return local_clock();
}

static inline u64 p2pnvme_elapsed(u64 start, u64 end)
{
	return end > start ? end - start : 0;
}

/* the I/O queue of the CPU this runs on (a hint: it may migrate after) */
static inline struct p2pnvme_queue *p2pnvme_cpu_queue(struct p2pnvme *c)
{
	return &c->ioq[c->cpu_queue[raw_smp_processor_id()]];
}

/*
 * Defined by pci.c, read by every layer: module parameters and the
 * controller's release (every layer drops its references with
 * kref_put(..., p2pnvme_free)).
 */
extern unsigned int p2pnvme_max_io_queues;
extern unsigned int p2pnvme_max_inflight_mb;
extern struct xarray p2pnvme_minors;
void p2pnvme_free(struct kref *kref);

/*
 * Each layer's functions are declared in its own header, top down:
 * driver.h, uring.h, io.h, reg.h, ctrl.h, admin.h, queue.h, dptr.h. A file
 * includes only its own layer's header and those below, and calls only
 * into them (scripts/layers.py, run by make check, says which include or
 * call goes up). Queue timeouts ask for a reset through @escalate.
 */

#endif /* P2PNVME_INTERNAL_H */
