// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: the controller's state and its owners. p2pnvme_change_state()
 * is the one writer of the state, from a table of transitions; the I/O
 * guard (a percpu_ref every I/O path holds while it uses the queues) lets
 * a reset, a recovery or removal wait until nobody does; the reset worker
 * stops, disables, cancels and brings the controller back; PCI error
 * recovery and a PCI reset of the function take it over (RECOVERING) and
 * give it back; removal quiesces it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/pci.h>
#include <linux/percpu-refcount.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>

#include "ctrl.h"
#include "admin.h"
#include "queue.h"
#include "trace.h"

static struct lock_class_key p2pnvme_io_key;

/*
 * Resets run here, not on system_unbound_wq: a dma-buf's write fence can
 * be waited on from reclaim (an exporter's shrinker), and only a reset
 * may end the commands it waits for. WQ_MEM_RECLAIM keeps a rescuer, as
 * nvme-pci's nvme_reset_wq does.
 */
static struct workqueue_struct *p2pnvme_reset_wq;

/**
 * p2pnvme_reset_wq_create - the module's reset workqueue, before any probe
 *
 * Return: 0, or -ENOMEM.
 */
int p2pnvme_reset_wq_create(void)
{
	p2pnvme_reset_wq = alloc_workqueue("p2pnvme-reset", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return p2pnvme_reset_wq ? 0 : -ENOMEM;
}

/* after the last remove(): every controller cancelled its reset work */
void p2pnvme_reset_wq_destroy(void)
{
	destroy_workqueue(p2pnvme_reset_wq);
}

static void p2pnvme_io_ref_zero(struct percpu_ref *ref);
static void p2pnvme_reset_work(struct work_struct *work);

/* Which states each state may follow (enum p2pnvme_state has the why). */
static const u8 state_from[P2PNVME_NR_STATES] = {
	[P2PNVME_LIVE]		= BIT(P2PNVME_RESETTING) | BIT(P2PNVME_RECOVERING),
	[P2PNVME_RESETTING]	= BIT(P2PNVME_LIVE),
	[P2PNVME_RECOVERING]	= BIT(P2PNVME_LIVE) | BIT(P2PNVME_RESETTING),
	[P2PNVME_DELETING]	= BIT(P2PNVME_LIVE) | BIT(P2PNVME_RESETTING) |
				  BIT(P2PNVME_RECOVERING),
	[P2PNVME_DEAD]		= BIT(P2PNVME_LIVE) | BIT(P2PNVME_RESETTING) |
				  BIT(P2PNVME_RECOVERING) | BIT(P2PNVME_DELETING),
};

/* p2pnvme_change_state() with state_lock held; the caller wakes @c->wq. */
static bool __change_state(struct p2pnvme *c, enum p2pnvme_state new)
{
	enum p2pnvme_state old = c->state;

	lockdep_assert_held(&c->state_lock);
	if (!(state_from[new] & BIT(old)))
		return false;
	WRITE_ONCE(c->state, new);
	if (new != P2PNVME_RECOVERING)
		c->recovery = P2PNVME_RECOVERY_NONE;
	return true;
}

/**
 * p2pnvme_change_state - move the controller to another state
 * @c: the controller
 * @new: where it goes
 *
 * The only writer of @c->state, as nvme_change_ctrl_state() is nvme
 * core's: the table above says which transitions exist (enum
 * p2pnvme_state, why). Whoever waits on @c->wq for a state is woken.
 *
 * Return: true if it moved; false if @new cannot follow the state it is in
 * (someone else took the controller over: a removal, a recovery, a
 * failure).
 */
bool p2pnvme_change_state(struct p2pnvme *c, enum p2pnvme_state new)
{
	bool moved;

	spin_lock(&c->state_lock);
	moved = __change_state(c, new);
	spin_unlock(&c->state_lock);
	if (moved)
		wake_up_all(&c->wq);
	return moved;
}

/**
 * p2pnvme_schedule_reset - have the reset worker reset a live controller
 * @c: the controller
 *
 * Nothing happens unless it is LIVE: a reset already queued or running, a
 * recovery or a removal takes care of everything in flight.
 */
void p2pnvme_schedule_reset(struct p2pnvme *c)
{
	bool queue = false;

	spin_lock(&c->state_lock);
	/* the link is down: PCI error recovery is coming, registers read ~0 */
	if (!pci_channel_offline(c->pdev) && __change_state(c, P2PNVME_RESETTING)) {
		kref_get(&c->kref);	/* the worker's, put when it is done */
		/*
		 * Queued with the state: whoever moves it on (remove(), a
		 * recovery) cancels the work afterwards and cannot miss it.
		 */
		queue_work(p2pnvme_reset_wq, &c->reset_work);
		queue = true;
	}
	spin_unlock(&c->state_lock);
	if (queue)
		wake_up_all(&c->wq);
}

/*
 * The end of a reset or a recovery that left the controller in @from: LIVE
 * again when @ret is 0, else out of service for good (DEAD), and then the
 * controller does not DMA any more either. Caller holds reset_lock for
 * write. Whoever took over meanwhile (a removal: DELETING; a recovery:
 * RECOVERING, from the reset worker) keeps the controller.
 */
static void reset_finish(struct p2pnvme *c, enum p2pnvme_state from, int ret)
{
	bool moved = false;

	lockdep_assert_held_write(&c->reset_lock);
	spin_lock(&c->state_lock);
	if (c->state == from)
		moved = __change_state(c, ret ? P2PNVME_DEAD : P2PNVME_LIVE);
	spin_unlock(&c->state_lock);
	if (!moved)
		return;
	wake_up_all(&c->wq);
	if (ret) {
		p2pnvme_ctrl_disable(c);
		pci_clear_master(c->pdev);
	}
}

/*
 * The layer above with queue pairs of its own (the disk, disk.c), told
 * through c->upper: set at probe before the controller went LIVE, cleared
 * only once it is DEAD and nothing below calls it.
 */
static void upper_stop(struct p2pnvme *c, bool answers)
{
	if (c->upper)
		c->upper->stop(c, answers);
}

static void upper_cancel(struct p2pnvme *c, int err)
{
	if (c->upper)
		c->upper->cancel(c, err);
}

/* Return: @err, or why the upper layer's queues did not come back. */
static int upper_restart(struct p2pnvme *c, int err)
{
	return c->upper ? c->upper->restart(c, err) : err;
}

/*
 * Take the controller out of service for a reset, while its registers
 * still answer: no more submissions, the I/O queues deleted if it still
 * answers (p2pnvme_delete_io_queues(), as nvme-pci), CC.EN = 0, bus
 * mastering off, then every command in flight fails. Nothing may be
 * cancelled (buffers unpinned, freed) while the controller can still DMA.
 * CC.EN = 0 asks it to stop, but a hung controller may not acknowledge
 * within CAP.TO, or seem to while its registers do not answer: bus
 * mastering goes off in any case, as nvme-pci disables the PCI device, and
 * comes back with the enable.
 *
 * Return: what disabling said; -ENODEV: the device is gone, and so the
 * commands failed with -ENODEV rather than -ECANCELED.
 */
static int ctrl_halt(struct p2pnvme *c)
{
	int ret;

	upper_stop(c, true);		/* the disk's queues deleted first, the same way */
	p2pnvme_io_queues_stop(c);
	p2pnvme_delete_io_queues(c);
	p2pnvme_queues_stop(c);
	ret = p2pnvme_ctrl_disable(c);
	pci_clear_master(c->pdev);
	p2pnvme_queues_cancel(c, ret == -ENODEV ? -ENODEV : -ECANCELED);
	upper_cancel(c, ret == -ENODEV ? -ENODEV : -ECANCELED);
	return ret;
}

static void p2pnvme_reset_work(struct work_struct *work)
{
	struct p2pnvme *c = container_of(work, struct p2pnvme, reset_work);
	bool deleting;
	int ret;

	p2pnvme_stat_add(c, ST_RESETS, 1);
	trace_p2pnvme_reset(c->pdev, false, 0);
	pci_dbg(c->pdev, "reset: stopping the queues\n");
	ret = ctrl_halt(c);

	p2pnvme_io_freeze(c);		/* every I/O ioctl has returned */
	down_write(&c->reset_lock);	/* and every reader of the queues */
	/* remove() or a recovery took over: it does the rest */
	deleting = p2pnvme_state(c) != P2PNVME_RESETTING;
	if (!ret && !deleting)
		ret = p2pnvme_ctrl_enable(c);
	/* the disk's queues too; handed over, the new owner restarts it */
	if (!deleting)
		ret = upper_restart(c, ret);
	/* before the state leaves RESETTING; remove() freezes it for good */
	p2pnvme_io_thaw(c);
	reset_finish(c, P2PNVME_RESETTING, ret);
	trace_p2pnvme_reset(c->pdev, true, ret);
	if (deleting)
		pci_dbg(c->pdev, "reset: handed over to %s\n",
			p2pnvme_state(c) == P2PNVME_RECOVERING ? "PCI recovery" : "removal");
	else if (ret)
		pci_err(c->pdev, "reset failed (%d); the controller is out of service\n", ret);
	else
		pci_warn(c->pdev, "controller reset\n");
	up_write(&c->reset_lock);
	wake_up_all(&c->wq);
	kref_put(&c->kref, p2pnvme_free);
}

/*
 * PCI error recovery or a PCI reset of the function (@owner) takes the
 * controller: LIVE or RESETTING -> RECOVERING (or DEAD, with @err -ENODEV),
 * so that no timeout schedules a reset from now on; then a reset queued is
 * dropped and one running is waited for (it sees RECOVERING and enables
 * nothing, and it never needs the device lock, which the caller holds:
 * nothing else can take the controller meanwhile, remove() included). The
 * I/O path waits in p2pnvme_io_enter() meanwhile, or fails (DEAD).
 * ctrl_give_back() ends it.
 *
 * Return: true if it was in service and is now the caller's; false: it
 * was out of service already, or another recovery owns it.
 */
static bool ctrl_take(struct p2pnvme *c, enum p2pnvme_recovery owner, int err)
{
	bool taken;

	device_lock_assert(&c->pdev->dev);
	spin_lock(&c->state_lock);
	taken = __change_state(c, err == -ENODEV ? P2PNVME_DEAD : P2PNVME_RECOVERING);
	if (taken && err != -ENODEV)
		c->recovery = owner;
	spin_unlock(&c->state_lock);
	if (!taken)
		return false;
	wake_up_all(&c->wq);
	if (cancel_work_sync(&c->reset_work))
		kref_put(&c->kref, p2pnvme_free);	/* the queued reset's */
	return true;
}

/* Does @owner's recovery hold the controller? (the device lock keeps it so) */
static bool ctrl_owned(struct p2pnvme *c, enum p2pnvme_recovery owner)
{
	device_lock_assert(&c->pdev->dev);
	return p2pnvme_state(c) == P2PNVME_RECOVERING && READ_ONCE(c->recovery) == owner;
}

/*
 * The end of what ctrl_take() began: a controller @owner still holds is
 * enabled again as the reset worker does it (every I/O ioctl has returned
 * first; the guard comes back before the state leaves RECOVERING), its
 * config space saved again for the next PCI reset or error (restoring it
 * used it up). Caller holds the device lock, as for ctrl_take().
 *
 * Return: 0 when it is LIVE again; otherwise it is out of service (DEAD,
 * or @owner did not hold it: -ENODEV).
 */
static int ctrl_give_back(struct p2pnvme *c, enum p2pnvme_recovery owner)
{
	bool owned;
	int ret = -ENODEV;

	p2pnvme_io_freeze(c);		/* every I/O ioctl has returned */
	down_write(&c->reset_lock);	/* and every reader of the queues */
	owned = ctrl_owned(c, owner);
	if (owned)
		ret = p2pnvme_ctrl_enable(c);
	ret = upper_restart(c, ret);	/* the disk's queues, or its failure */
	p2pnvme_io_thaw(c);		/* before the state leaves RECOVERING */
	if (owned)
		reset_finish(c, P2PNVME_RECOVERING, ret);
	up_write(&c->reset_lock);
	if (owned)
		p2pnvme_stat_add(c, ST_RESETS, 1);
	if (!ret)
		pci_save_state(c->pdev);
	return ret;
}

/**
 * p2pnvme_error_stop - a PCI error froze the link: take everything back
 * @c: the controller; the PCI core holds the device lock (no remove())
 * @err: what the commands in flight fail with
 *
 * The controller's registers cannot be trusted now: no CC.EN = 0, just
 * bus mastering off, then every command in flight fails. The state goes to
 * RECOVERING (the I/O ioctls wait) or, with @err -ENODEV, to DEAD;
 * p2pnvme_error_resume() brings the controller back after the slot reset.
 */
void p2pnvme_error_stop(struct p2pnvme *c, int err)
{
	ctrl_take(c, P2PNVME_RECOVERY_PCI_ERROR, err);
	upper_stop(c, false);
	p2pnvme_queues_stop(c);
	pci_clear_master(c->pdev);
	p2pnvme_queues_cancel(c, err);
	upper_cancel(c, err);
	/* out of service for good: nothing will restart the disk's queues */
	if (p2pnvme_state(c) == P2PNVME_DEAD)
		upper_restart(c, -ENODEV);
}

/**
 * p2pnvme_error_resume - bring a controller back after a PCI error's reset
 * @c: the controller; the PCI core holds the device lock
 *
 * Nothing happens unless p2pnvme_error_stop() took it (a recoverable error
 * of another device below the same bridge also ends in resume).
 *
 * Return: 0 when it is LIVE again; 1 when the error was not its own;
 * otherwise it is DEAD.
 */
int p2pnvme_error_resume(struct p2pnvme *c)
{
	if (!ctrl_owned(c, P2PNVME_RECOVERY_PCI_ERROR))
		return 1;
	return ctrl_give_back(c, P2PNVME_RECOVERY_PCI_ERROR);
}

/**
 * p2pnvme_reset_prepare - a reset of the PCI function is coming: stop first
 * @c: the controller; the PCI core holds the device lock from here until
 *     after p2pnvme_reset_done() (no remove(), no PCI error callback)
 *
 * An FLR through sysfs, or a bus or slot reset that takes this function
 * along: the PCI core turns memory decoding and bus mastering off next,
 * then resets the function. As the reset worker does while the registers
 * still answer: queues stopped, CC.EN = 0, bus mastering off, every
 * command in flight fails (-ECANCELED, -ETIMEDOUT if it had expired,
 * -ENODEV if the device is gone). Until p2pnvme_reset_done() no timeout
 * schedules a reset (its registers read all ones or zeroes meanwhile) and
 * the I/O path waits (RECOVERING). A controller that PCI error recovery
 * owns is left to it (it resumes it), one out of service stays so.
 */
void p2pnvme_reset_prepare(struct p2pnvme *c)
{
	if (!ctrl_take(c, P2PNVME_RECOVERY_FUNC_RESET, -ECANCELED))
		return;
	trace_p2pnvme_reset(c->pdev, false, 0);
	pci_dbg(c->pdev, "PCI reset: stopping the controller\n");
	ctrl_halt(c);
}

/**
 * p2pnvme_reset_done - the PCI function's reset is over: enable it again
 * @c: the controller; the PCI core restored its config space and holds the
 *     device lock
 *
 * As after a PCI error's slot reset: LIVE again, or out of service (DEAD)
 * if it does not come back. Nothing happens unless
 * p2pnvme_reset_prepare() took it.
 */
void p2pnvme_reset_done(struct p2pnvme *c)
{
	int ret;

	if (!ctrl_owned(c, P2PNVME_RECOVERY_FUNC_RESET))
		return;
	ret = ctrl_give_back(c, P2PNVME_RECOVERY_FUNC_RESET);
	trace_p2pnvme_reset(c->pdev, true, ret);
	if (ret)
		pci_err(c->pdev, "controller did not come back after a PCI reset (%d); out of service\n",
			ret);
	else
		pci_info(c->pdev, "controller back in service after a PCI reset\n");
}

/**
 * p2pnvme_quiesce - take a controller out of service for removal
 * @c: the controller, state DELETING
 *
 * No new commands; the ones in flight get up to io_timeout_ms to complete
 * (unless the device is gone), then an orderly shutdown (CC.SHN) and
 * whatever is left fails with -ENODEV.
 */
void p2pnvme_quiesce(struct p2pnvme *c)
{
	unsigned long deadline = jiffies + p2pnvme_io_timeout();

	p2pnvme_queues_stop(c);
	while (p2pnvme_queues_inflight(c) && !p2pnvme_ctrl_gone(c) &&
	       time_before(jiffies, deadline)) {
		/* waiters reap their own completions; help the polled ones */
		p2pnvme_queues_poll(c);
		wait_event_timeout(c->wq, !p2pnvme_queues_inflight(c), max(HZ / 100, 1));
	}
	/* as in a reset: no cancellation while the controller may DMA */
	p2pnvme_ctrl_shutdown(c);
	pci_clear_master(c->pdev);
	p2pnvme_queues_cancel(c, -ENODEV);
}

/* A reference on the I/O guard with the controller LIVE, or none. */
static bool io_tryget(struct p2pnvme *c)
{
	/* a reference first, then the state: a freeze waits for us */
	if (!percpu_ref_tryget_live(&c->io_ref))
		return false;
	if (p2pnvme_state(c) == P2PNVME_LIVE)
		return true;
	percpu_ref_put(&c->io_ref);
	return false;
}

/**
 * p2pnvme_io_enter_state - enter the I/O path
 * @c: the controller
 * @state: how a reset in progress is waited out: TASK_INTERRUPTIBLE for a
 *	   system call, TASK_KILLABLE where a signal means nothing to the
 *	   caller (io_uring issues, whose task and workers see task work as a
 *	   pending signal)
 *
 * Holds the I/O guard (@c->io_ref) with the controller LIVE on success; the
 * caller leaves with p2pnvme_io_exit(). A reset in progress is waited out.
 * A per-CPU reference, not a shared lock: the reset worker and remove()
 * kill it and wait for every holder (p2pnvme_io_freeze()).
 *
 * Return: 0, -ENODEV (the controller is going away or dead) or
 * -ERESTARTSYS (a signal: nothing was done, and the caller writes nothing
 * back, so that the restarted call starts over from the same arguments).
 */
int p2pnvme_io_enter_state(struct p2pnvme *c, unsigned int state)
{
	int ret;

	for (;;) {
		if (io_tryget(c)) {
			/* not recursive: entering inside the guard may wait for a reset */
			rwsem_acquire_read(&c->io_map, 0, 0, _RET_IP_);
			return 0;
		}
		if (p2pnvme_state(c) >= P2PNVME_DELETING)
			return -ENODEV;
		/* the freeze revives the guard before the state leaves RESETTING */
		ret = wait_event_state(c->wq, p2pnvme_state(c) != P2PNVME_RESETTING &&
				       p2pnvme_state(c) != P2PNVME_RECOVERING, state);
		if (ret)
			return ret;
	}
}

/**
 * p2pnvme_io_enter - enter the I/O path from a system call
 * @c: the controller
 *
 * p2pnvme_io_enter_state(), interruptible.
 *
 * Return: as p2pnvme_io_enter_state().
 */
int p2pnvme_io_enter(struct p2pnvme *c)
{
	return p2pnvme_io_enter_state(c, TASK_INTERRUPTIBLE);
}

/**
 * p2pnvme_io_tryenter - enter the I/O path if the controller is LIVE now
 * @c: the controller
 *
 * As p2pnvme_io_enter(), but never waits: for those that must not hold up
 * a reset (the io_uring watchdog), and that simply come back later.
 * Leave with p2pnvme_io_exit().
 *
 * Return: true when inside the I/O guard with the controller LIVE.
 */
bool p2pnvme_io_tryenter(struct p2pnvme *c)
{
	if (!io_tryget(c))
		return false;
	rwsem_acquire_read(&c->io_map, 0, 1, _RET_IP_);
	return true;
}

/**
 * p2pnvme_io_exit - leave the I/O path entered with p2pnvme_io_enter() or
 *	p2pnvme_io_tryenter()
 * @c: the controller
 */
void p2pnvme_io_exit(struct p2pnvme *c)
{
	rwsem_release(&c->io_map, _RET_IP_);
	percpu_ref_put(&c->io_ref);
}

/*
 * The last holder left a killed guard: possibly from an RCU callback that
 * holds no reference on @c, so the completion is the last thing touched;
 * the freeze that waits for it may free @c right after.
 */
static void p2pnvme_io_ref_zero(struct percpu_ref *ref)
{
	struct p2pnvme *c = container_of(ref, struct p2pnvme, io_ref);

	complete(&c->io_drained);
}

/**
 * p2pnvme_io_freeze - wait until nobody is inside the I/O guard
 * @c: the controller, not LIVE any more (RESETTING, DELETING or DEAD), so
 *     that whoever enters from now on leaves again at once
 *
 * Kills the guard's reference and waits for every holder to leave (each
 * I/O ioctl's batch is over or cancelled, each io_uring submission has
 * queued its commands). p2pnvme_io_thaw() revives it. Sleeps.
 */
void p2pnvme_io_freeze(struct p2pnvme *c)
{
	/* lockdep: a freeze inside the guard, or under what a holder waits for */
	rwsem_acquire(&c->io_map, 0, 0, _THIS_IP_);
	rwsem_release(&c->io_map, _THIS_IP_);
	reinit_completion(&c->io_drained);
	percpu_ref_kill(&c->io_ref);
	wait_for_completion(&c->io_drained);
}

/**
 * p2pnvme_io_thaw - let the I/O path in again after p2pnvme_io_freeze()
 * @c: the controller; called before its state leaves RESETTING
 */
void p2pnvme_io_thaw(struct p2pnvme *c)
{
	percpu_ref_resurrect(&c->io_ref);
}

/**
 * p2pnvme_ctrl_init - the controller's state, reset worker and I/O guard
 * @c: the controller, zeroed, before probe brings it up
 *
 * The state starts RESETTING: an early opener of the char device waits
 * until probe is done (p2pnvme_change_state() to LIVE).
 *
 * Return: 0 or -ENOMEM.
 */
int p2pnvme_ctrl_init(struct p2pnvme *c)
{
	int ret = percpu_ref_init(&c->io_ref, p2pnvme_io_ref_zero, PERCPU_REF_ALLOW_REINIT,
				  GFP_KERNEL);

	if (ret)
		return ret;
	init_rwsem(&c->reset_lock);
	init_completion(&c->io_drained);
	lockdep_init_map(&c->io_map, "p2pnvme_io", &p2pnvme_io_key, 0);
	spin_lock_init(&c->state_lock);
	c->state = P2PNVME_RESETTING;
	INIT_WORK(&c->reset_work, p2pnvme_reset_work);
	init_waitqueue_head(&c->wq);
	c->escalate = p2pnvme_schedule_reset;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_ctrl_init);

/**
 * p2pnvme_ctrl_exit - undo p2pnvme_ctrl_init()
 * @c: the controller, its last reference gone
 */
void p2pnvme_ctrl_exit(struct p2pnvme *c)
{
	percpu_ref_exit(&c->io_ref);
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_ctrl_exit);
