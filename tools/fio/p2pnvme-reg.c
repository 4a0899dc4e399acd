// SPDX-License-Identifier: GPL-2.0
/*
 * fio external ioengine "p2pnvme_reg": fio's jobs on /dev/p2pnvmeN through
 * p2pnvme's registered buffers, the path fio's own engines cannot name.
 *
 * fio's buffers (every io_u's) are one dma-buf of p2pmem exported by p2pbar
 * (P2PBAR_IOC_EXPORT) and mapped into fio, or with p2pbar=host one mapping
 * of host memory; it is registered once per open file
 * (P2PNVME_IOC_BUF_REGISTER) and every command names it by id and offset
 * (P2PNVME_URING_CMD_IO with P2PNVME_IO_F_REGISTERED), on an io_uring of
 * 128-byte SQEs: nothing is pinned or mapped per I/O. fio reads and writes
 * the buffers through the mapping, so verify= checks the bytes that moved
 * between the controller and the BAR.
 *
 *   fio --ioengine=external:/usr/lib/fio/p2pnvme-reg.so --filename=/dev/p2pnvme0 \
 *       --rw=randread --bs=4k --iodepth=32 [--p2pbar=/dev/p2pbar1|host] [--require_p2p=1]
 *
 * Built against the headers of the fio that loads it (an external engine
 * sees fio's structures): `make -C tools FIO_SRC=<configured fio source
 * tree>`. Read, write and flush; a job with trims is refused
 * (EOPNOTSUPP). The buffers come from the engine and are registered once,
 * so fio's mem= and iomem= are refused, and so is read_iolog (a replay may
 * reallocate the buffers while the files hold the old registration).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <liburing.h>

#include "fio.h"
#include "optgroup.h"

#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>
#include "libp2p.h"

struct p2preg_options {
	void *pad;		/* fio: no option at offset 0 */
	char *p2pbar;		/* the provider's device, or "host" */
	unsigned int require_p2p;
};

/* One per job (thread): the ring and the buffer all its io_us live in. */
struct p2preg_data {
	struct io_uring ring;
	unsigned int depth;
	unsigned int queued;		/* prepared, not yet submitted */
	struct io_u **pending;		/* those, for their issue time */
	struct io_u **events;		/* reaped by getevents() */
	void *buf;
	size_t len;
	int bar_fd;			/* -1 for host memory */
	int dmabuf_fd;
};

/* One per open file: the buffer's registration on it. */
struct p2preg_file {
	uint32_t buf_id;
	uint32_t lba_shift;
};

static struct fio_option options[] = {
	{
		.name	= "p2pbar",
		.lname	= "p2pbar device",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct p2preg_options, p2pbar),
		.def	= "/dev/p2pbar0",
		.help	= "p2pbar device whose p2pmem holds the buffers, or host",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "require_p2p",
		.lname	= "require P2P",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct p2preg_options, require_p2p),
		.def	= "0",
		.help	= "fail (EREMOTEIO) rather than move data through host memory",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= NULL,
	},
};

static int p2preg_host(struct thread_data *td)
{
	struct p2preg_options *o = td->eo;

	return !strcmp(o->p2pbar, "host");
}

/*
 * The ring fio's own io_uring_cmd engine sets up, so that the rows compare
 * drivers and not rings: completions run when fio reaps them
 * (DEFER_TASKRUN) rather than interrupting it, each flag dropped in turn
 * where the kernel lacks it. Its completion ring is twice the depth.
 */
static int p2preg_ring_init(struct p2preg_data *d)
{
	static const unsigned int setups[] = {
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	unsigned int i;
	int ret;

	for (i = 0;; i++) {
		ret = io_uring_queue_init(d->depth, &d->ring, IORING_SETUP_SQE128 |
					  IORING_SETUP_CQE32 | setups[i]);
		if (ret != -EINVAL || !setups[i])
			return ret;
	}
}

static int p2preg_init(struct thread_data *td)
{
	struct p2preg_data *d;
	int ret;

	if (td_trim(td)) {
		log_err("p2pnvme_reg: trim: %s\n", strerror(EOPNOTSUPP));
		td_verror(td, EOPNOTSUPP, "trim");
		return 1;
	}
	if (td->o.read_iolog_file) {
		log_err("p2pnvme_reg: read_iolog: %s (a replay may reallocate the registered buffers)\n",
			strerror(EINVAL));
		td_verror(td, EINVAL, "read_iolog");
		return 1;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		td_verror(td, ENOMEM, "calloc");
		return 1;
	}
	d->depth = td->o.iodepth;
	d->bar_fd = -1;
	d->dmabuf_fd = -1;
	d->pending = calloc(d->depth, sizeof(*d->pending));
	d->events = calloc(d->depth, sizeof(*d->events));
	if (!d->pending || !d->events) {
		ret = -ENOMEM;
		goto err;
	}
	ret = p2preg_ring_init(d);
	if (ret)
		goto err;
	td->io_ops_data = d;
	return 0;
err:
	log_err("p2pnvme_reg: io_uring of %u 128-byte SQEs: %s\n", d->depth, strerror(-ret));
	free(d->events);
	free(d->pending);
	free(d);
	return 1;
}

static void p2preg_cleanup(struct thread_data *td)
{
	struct p2preg_data *d = td->io_ops_data;

	if (!d)
		return;
	io_uring_queue_exit(&d->ring);
	free(d->events);
	free(d->pending);
	free(d);
	td->io_ops_data = NULL;
}

/* fio's buffers: a mapping of a p2pmem dma-buf, or of host memory. */
static int p2preg_iomem_alloc(struct thread_data *td, size_t size)
{
	struct p2preg_options *o = td->eo;
	struct p2preg_data *d = td->io_ops_data;
	struct p2pbar_export e;
	int ret;

	d->len = (size + page_mask) & ~page_mask;
	if (p2preg_host(td)) {
		d->buf = mmap(NULL, d->len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (d->buf == MAP_FAILED) {
			ret = -errno;
			goto err;
		}
		td->orig_buffer = d->buf;
		return 0;
	}
	d->bar_fd = open(o->p2pbar, O_RDWR | O_CLOEXEC);
	if (d->bar_fd < 0) {
		ret = -errno;
		goto err;
	}
	ret = p2p_bar_export(d->bar_fd, d->len, P2PBAR_EXPORT_F_CLOEXEC, &e);
	if (ret)
		goto err_close_bar;
	d->dmabuf_fd = e.fd;
	d->buf = mmap(NULL, d->len, PROT_READ | PROT_WRITE, MAP_SHARED, d->dmabuf_fd, 0);
	if (d->buf == MAP_FAILED) {
		ret = -errno;
		goto err_close_dmabuf;
	}
	td->orig_buffer = d->buf;
	return 0;

err_close_dmabuf:
	close(d->dmabuf_fd);
	d->dmabuf_fd = -1;
err_close_bar:
	close(d->bar_fd);
	d->bar_fd = -1;
err:
	d->buf = NULL;
	log_err("p2pnvme_reg: %zu bytes of %s for the buffers: %s\n", d->len,
		p2preg_host(td) ? "host memory" : o->p2pbar, strerror(-ret));
	return 1;
}

static void p2preg_iomem_free(struct thread_data *td)
{
	struct p2preg_data *d = td->io_ops_data;

	if (!d)
		return;
	if (d->buf)
		munmap(d->buf, d->len);
	d->buf = NULL;
	if (d->dmabuf_fd >= 0)
		close(d->dmabuf_fd);
	if (d->bar_fd >= 0)
		close(d->bar_fd);
	d->dmabuf_fd = -1;
	d->bar_fd = -1;
	td->orig_buffer = NULL;
}

static int p2preg_get_file_size(struct thread_data *td, struct fio_file *f)
{
	struct p2pnvme_info info;
	int fd, ret;

	if (fio_file_size_known(f))
		return 0;
	fd = open(f->file_name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		td_verror(td, errno, "open");
		return 1;
	}
	ret = p2p_nvme_info(fd, &info);
	close(fd);
	if (ret) {
		td_verror(td, -ret, "P2PNVME_IOC_INFO");
		return 1;
	}
	f->real_file_size = info.nlb << info.lba_shift;
	fio_file_set_size_known(f);
	return 0;
}

static int p2preg_open_file(struct thread_data *td, struct fio_file *f)
{
	struct p2preg_options *o = td->eo;
	struct p2preg_data *d = td->io_ops_data;
	struct p2pnvme_info info;
	struct p2preg_file *pf;
	uint32_t flags = 0;
	int ret;

	if (!d->buf) {
		log_err("p2pnvme_reg: no buffer (fio's mem= and iomem= do not apply)\n");
		td_verror(td, EINVAL, "open_file");
		return 1;
	}
	f->fd = open(f->file_name, (td_write(td) ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (f->fd < 0) {
		td_verror(td, errno, "open");
		return 1;
	}
	pf = calloc(1, sizeof(*pf));
	if (!pf) {
		td_verror(td, ENOMEM, "calloc");
		goto err;
	}
	ret = p2p_nvme_info(f->fd, &info);
	if (ret) {
		td_verror(td, -ret, "P2PNVME_IOC_INFO");
		goto err;
	}
	pf->lba_shift = info.lba_shift;
	if (!p2preg_host(td))
		flags = P2PNVME_BUF_F_DMABUF | (o->require_p2p ? P2PNVME_BUF_F_REQUIRE_P2P : 0);
	ret = p2p_nvme_register(f->fd, flags, p2preg_host(td) ? (uintptr_t)d->buf : 0, d->len,
				p2preg_host(td) ? 0 : d->dmabuf_fd, &pf->buf_id);
	if (ret) {
		log_err("p2pnvme_reg: registering the buffers on %s: %s\n", f->file_name,
			strerror(-ret));
		td_verror(td, -ret, "P2PNVME_IOC_BUF_REGISTER");
		goto err;
	}
	FILE_SET_ENG_DATA(f, pf);
	return 0;
err:
	free(pf);
	close(f->fd);
	f->fd = -1;
	return 1;
}

/* Closing the file drops its registration. */
static int p2preg_close_file(struct thread_data *td, struct fio_file *f)
{
	free(FILE_ENG_DATA(f));
	FILE_SET_ENG_DATA(f, NULL);
	if (f->fd >= 0 && close(f->fd)) {
		f->fd = -1;
		return errno;
	}
	f->fd = -1;
	return 0;
}

static enum fio_q_status p2preg_queue(struct thread_data *td, struct io_u *io_u)
{
	struct p2preg_options *o = td->eo;
	struct p2preg_data *d = td->io_ops_data;
	struct p2preg_file *pf = FILE_ENG_DATA(io_u->file);
	struct p2pnvme_uring_cmd cmd = { 0 };
	struct io_uring_sqe *sqe;

	fio_ro_check(td, io_u);
	switch (io_u->ddir) {
	case DDIR_READ:
	case DDIR_WRITE:
		if (io_u->offset & ((1ULL << pf->lba_shift) - 1)) {
			/* the command addresses blocks: never round */
			if (d->queued)
				return FIO_Q_BUSY;
			io_u->error = EINVAL;
			io_u_mark_submit(td, 1);
			io_u_mark_complete(td, 1);
			return FIO_Q_COMPLETED;
		}
		cmd.op = io_u->ddir == DDIR_READ ? P2PNVME_OP_READ : P2PNVME_OP_WRITE;
		cmd.flags = P2PNVME_IO_F_REGISTERED |
			    (o->require_p2p ? P2PNVME_IO_F_REQUIRE_P2P : 0);
		cmd.slba = io_u->offset >> pf->lba_shift;
		cmd.len = io_u->xfer_buflen;
		cmd.addr = (char *)io_u->xfer_buf - (char *)d->buf;
		cmd.buf_id = pf->buf_id;
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
		cmd.op = P2PNVME_OP_FLUSH;
		break;
	default:
		if (d->queued)
			return FIO_Q_BUSY;
		io_u->error = EOPNOTSUPP;
		io_u_mark_submit(td, 1);
		io_u_mark_complete(td, 1);
		return FIO_Q_COMPLETED;
	}
	sqe = io_uring_get_sqe(&d->ring);
	if (!sqe)
		return FIO_Q_BUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = io_u->file->fd;
	sqe->cmd_op = P2PNVME_URING_CMD_IO;
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
	io_uring_sqe_set_data(sqe, io_u);
	d->pending[d->queued++] = io_u;
	return FIO_Q_QUEUED;
}

/*
 * Submit what queue() prepared; their issue time is the submission's. At
 * most iodepth commands are in flight and the completion ring holds twice
 * that, so the kernel never refuses for a full completion ring: EAGAIN is a
 * transient allocation failure, retried after a pause.
 */
static int p2preg_commit(struct thread_data *td)
{
	struct p2preg_data *d = td->io_ops_data;
	unsigned int done = 0, i;
	struct timespec now;
	int ret = 0;

	while (done < d->queued) {
		/* and run the completions waiting (fio's io_uring_enter(GETEVENTS)) */
		ret = io_uring_submit_and_get_events(&d->ring);
		if (ret == -EINTR)
			continue;
		if (ret == -EAGAIN) {
			usleep(1);
			continue;
		}
		if (ret <= 0) {
			ret = ret ? ret : -EIO;
			td_verror(td, -ret, "io_uring_submit_and_get_events");
			break;
		}
		if (fio_fill_issue_time(td)) {
			fio_gettime(&now, NULL);
			for (i = done; i < done + ret; i++) {
				d->pending[i]->issue_time = now;
				io_u_queued(td, d->pending[i]);
			}
		}
		io_u_mark_submit(td, ret);
		done += ret;
		ret = 0;
	}
	/* what was not submitted stays first in line */
	memmove(d->pending, d->pending + done, (d->queued - done) * sizeof(*d->pending));
	d->queued -= done;
	return ret;
}

static int p2preg_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			    const struct timespec *t)
{
	struct p2preg_data *d = td->io_ops_data;
	struct io_uring_cqe *cqe;
	unsigned int n = 0;
	struct io_u *io_u;
	int ret;

	while (n < max) {
		ret = io_uring_peek_cqe(&d->ring, &cqe);
		if (ret == -EAGAIN) {
			if (n >= min)
				break;
			/* one enter for all that fio waits for, as fio's engine */
			ret = io_uring_wait_cqe_nr(&d->ring, &cqe, min - n);
		}
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			td_verror(td, -ret, "io_uring_wait_cqe");
			return ret;
		}
		io_u = io_uring_cqe_get_data(cqe);
		/* 0 or -errno; a failed NVMe command is -EIO (status in big_cqe) */
		io_u->error = cqe->res < 0 ? -cqe->res : 0;
		d->events[n++] = io_u;
		io_uring_cqe_seen(&d->ring, cqe);
	}
	return n;
}

static struct io_u *p2preg_event(struct thread_data *td, int event)
{
	struct p2preg_data *d = td->io_ops_data;

	return d->events[event];
}

struct ioengine_ops ioengine = {
	.name			= "p2pnvme_reg",
	.version		= FIO_IOOPS_VERSION,
	.flags			= FIO_RAWIO | FIO_NOEXTEND | FIO_NODISKUTIL | FIO_MEMALIGN |
				  FIO_NO_OFFLOAD | FIO_ASYNCIO_SETS_ISSUE_TIME,
	.init			= p2preg_init,
	.cleanup		= p2preg_cleanup,
	.queue			= p2preg_queue,
	.commit			= p2preg_commit,
	.getevents		= p2preg_getevents,
	.event			= p2preg_event,
	.open_file		= p2preg_open_file,
	.close_file		= p2preg_close_file,
	.get_file_size		= p2preg_get_file_size,
	.iomem_alloc		= p2preg_iomem_alloc,
	.iomem_free		= p2preg_iomem_free,
	.options		= options,
	.option_struct_size	= sizeof(struct p2preg_options),
};
