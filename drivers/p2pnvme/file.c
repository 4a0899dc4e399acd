// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: the file command, P2PNVME_IOC_FILE_SUBMIT (Documentation/files.rst,
 * step 4). Byte ranges of regular files on the filesystem of this
 * controller's disk (disk.c) read into, or written from, host memory,
 * p2pmem or a registered buffer, through the filesystem's own direct I/O:
 * the filesystem keeps every guarantee of O_DIRECT (dirty page cache
 * written back first, the blocks the file's for the whole I/O, holes read
 * as zeros), and p2pnvme decides nothing about blocks.
 *
 * Each batch of up to P2PNVME_SUBMIT_MAX transfers is checked whole before
 * the first is issued: the fields; the file, by the caller's own open file
 * (its mode, a regular file on this disk or one of its partitions, not an
 * xfs realtime file, not an active swap file for a write, FMODE_CAN_ODIRECT,
 * the statx() direct I/O alignment);
 * the memory, with the P2P rules (the kernel's P2PDMA verdict for p2pmem,
 * host memory refused under P2PNVME_FILE_F_REQUIRE_P2P, and so is p2pmem
 * for an encrypted file, whose contents the CPU en/decrypts: without the
 * flag such a transfer goes on, on the bounce path). Then every
 * transfer is an asynchronous kiocb with IOCB_DIRECT, all in flight at
 * once, and the ioctl waits for the last (uninterruptibly: the I/O is
 * bounded by the disk's timeouts and its removal).
 *
 * The memory: a user address stays a user-backed iterator, pinned by the
 * block layer as for O_DIRECT (the disk has BLK_FEAT_PCI_P2PDMA, so a
 * /dev/p2pbarN mapping is pinned too); a registered host buffer becomes a
 * bvec of its pinned pages; a registered p2pbar dma-buf a bvec of p2pbar's
 * own pages (p2pbar_dmabuf_pages()), held for the transfer as a mapping of
 * it, so a revocation waits for it. p2pnvme does not depend on p2pbar (it
 * loads and works without it; p2pbar may come, go and come again): it
 * calls p2pbar through the dma-buf it holds (p2pbar_dmabuf_ops_of(): the
 * dma-buf holds p2pbar's module), with no symbol lookup, no module
 * reference of its own and no state that p2pbar's unload could leave
 * stale. Only this disk is trusted with such a kernel bvec of P2PDMA
 * pages: its request mapping takes each segment as it is.
 * A dma-buf of another exporter has no pages (GPU memory): a read goes
 * through placeholder pages (shadow.c, files.rst step 6), host RAM of the
 * controller's pool that the disk's mapping replaces with the dma-buf's
 * own bus addresses; the registration is mapped where it is before the
 * filesystem's call (p2pnvme_reg_ready()), no fence is published, and the
 * bytes the CPU wrote (holes, a fallback) are completed once it returned
 * (file_shadow_end(), in process context). A write from it, or a read of
 * an encrypted file into it, is -EOPNOTSUPP.
 *
 * The verdict after the fact: the filesystem may still serve a transfer
 * through its page cache, the CPU copying the bytes, when the file's direct
 * I/O went away after the check (ext4: chattr +j on a nodelalloc mount,
 * fsverity; ext4_should_use_dio()), or for reasons of its own (a write's
 * page cache invalidation failing, xfs's sub-block write to a CoW inode:
 * -ENOTBLK). No check before the issue can close that window: the
 * filesystem decides under its own i_rwsem, inside the call. So each
 * transfer into or from p2pmem or a p2pbar dma-buf is judged when it ended
 * (file_verdict()): a read by IOCB_DIRECT, which ext4 clears before it
 * takes the page cache; a write by the bytes the disk's requests carried
 * from the transfer's own bio_vec array (its bios point into it:
 * bio_iov_bvec_set()), credited by the disk's completion through
 * @c->file_watch (p2pnvme_file_credit()), against the bytes written. A
 * transfer the CPU moved reports P2PNVME_PATH_BOUNCE, or with
 * P2PNVME_FILE_F_REQUIRE_P2P fails -EREMOTEIO, its bytes already moved:
 * in the memory for a read, in the file for a write.
 *
 * Counters (stats/file_*): each transfer when it ends, by the path it
 * reported, and the refusals an operator is told about, by reason; for
 * reads through placeholders, the bytes the CPU wrote, zeros and others.
 *
 * Lifetime: each transfer holds its file (so its mount: a close or a lazy
 * unmount meanwhile waits for nothing), its registered buffer and the
 * dma-buf's pages until its kiocb completed. No lock of p2pnvme's is held
 * around the filesystem's calls.
 *
 * Through io_uring (P2PNVME_URING_CMD_FILE_IO, uring.c) a transfer is one
 * struct p2pnvme_file_cmd, checked by the same code as an ioctl's entry,
 * issued alone, and released in its submitter's task once it ended.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/bvec.h>
#include <linux/cred.h>
#include <linux/dma-buf.h>
#include <linux/file.h>
#include <linux/fileattr.h>
#include <linux/fs.h>
#include <linux/fscrypt.h>
#include <linux/magic.h>
#include <linux/math64.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/pci-p2pdma.h>
#include <linux/slab.h>
#include <linux/stat.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/p2pbar.h>
#include <linux/p2p_ioctl.h>
#include <p2p_compat.h>

#include "file.h"
#include "io.h"
#include "reg.h"
#include "shadow.h"

/* user pages looked at per call to learn where a buffer is */
#define FILE_PEEK	32
/* issues of a read through placeholders whose buffer keeps moving */
#define FILE_SHADOW_TRIES	8

#ifndef HAVE_KIOCB_START_WRITE
/* before 6.6 (and early 6.1.y): what aio did for an asynchronous write */
static inline void kiocb_start_write(struct kiocb *iocb)
{
	struct super_block *sb = file_inode(iocb->ki_filp)->i_sb;

	sb_start_write(sb);
	__sb_writers_release(sb, SB_FREEZE_WRITE);
}

static inline void kiocb_end_write(struct kiocb *iocb)
{
	struct super_block *sb = file_inode(iocb->ki_filp)->i_sb;

	__sb_writers_acquired(sb, SB_FREEZE_WRITE);
	sb_end_write(sb);
}
#endif

struct file_batch;

/**
 * struct file_xfer - one transfer, from its check to its end
 * @iocb: its kiocb (IOCB_DIRECT, completed by file_ki_complete())
 * @batch: the batch it belongs to
 * @io: the caller's description, where the answer goes
 * @file: the file, with a reference
 * @reg: the registered buffer it names, with a reference, or NULL
 * @dmabuf: a p2pbar dma-buf whose pages are held, with a reference, or NULL
 * @p2pbar: @dmabuf's p2pbar calls (p2pbar_dmabuf_ops_of()), valid while
 *	    @dmabuf is held
 * @bvec: the registered memory as a bvec (@bv1 for one run), or NULL
 * @bv1: the one run of a p2pbar dma-buf
 * @nr_bvec: entries at @bvec
 * @iov: the user address as an iovec
 * @bound: the serial of the registration @io's buffer id must still name
 *	   (an io_uring command issued again), or 0
 * @ret: what the kiocb ended with (file_verdict()'s answer)
 * @watch: what the disk moved of a write from p2pmem (@watched)
 * @watched: @bvec is in the controller's file_watch
 * @pinned: @bvec's pages are a user address's, pinned here (a write from
 *	    p2pmem at a user address)
 * @sx: a read into a registered dma-buf without pages: its placeholders
 *	(shadow.c; @bvec is theirs), or NULL
 * @sx_own: room for @sx that comes with the transfer (an io_uring one's),
 *	    or NULL: @sx is allocated
 * @sdmabuf: then the dma-buf, with a reference (its vmap completes it)
 * @zero_answer: then the caller can be told a run of zeros to clear
 *		 (struct p2pnvme_file_io's @zero_len)
 * @shadow_ret: what the filesystem returned, for @shadow_work
 * @shadow_work: completes it in process context (file_shadow_end())
 * @cred: the submitter's credentials, under which @shadow_work issues the
 *	  read again (a worker's are the kernel's: the filesystem's and the
 *	  LSMs' checks must see the caller, as io_uring's workers do)
 */
struct file_xfer {
	struct kiocb iocb;
	struct file_batch *batch;
	struct p2pnvme_file_io *io;
	struct file *file;
	struct p2pnvme_reg *reg;
	struct dma_buf *dmabuf;
	const struct p2pbar_dmabuf_ops *p2pbar;
	struct bio_vec *bvec;
	struct bio_vec bv1;
	unsigned int nr_bvec;
	struct iovec iov;
	u64 bound;
	long ret;
	struct p2pnvme_watch watch;
	bool watched;
	bool pinned;
	struct p2pnvme_shadow_xfer *sx;
	struct p2pnvme_shadow_xfer *sx_own;
	struct dma_buf *sdmabuf;
	bool zero_answer;
	long shadow_ret;
	struct work_struct shadow_work;
	const struct cred *cred;
};

/**
 * struct file_batch - one ioctl's transfers, or one io_uring command's
 * @c: the controller
 * @pending: transfers not ended yet, and one for the submitter
 * @ended: called by the transfer that drops @pending to 0 (any context)
 * @done: completed by an ioctl's @ended
 * @pgmap: the P2PDMA page map whose verdict was last taken
 * @verdict: that verdict (0 or -EREMOTEIO)
 * @shadow_held: placeholder slots its transfers hold (shadow.c)
 */
struct file_batch {
	struct p2pnvme *c;
	atomic_t pending;
	void (*ended)(struct file_batch *fb);
	struct completion done;
	struct dev_pagemap *pgmap;
	int verdict;
	unsigned int shadow_held;
};

/* ---- the file ---------------------------------------------------------- */

#ifndef BCACHEFS_SUPER_MAGIC
#define BCACHEFS_SUPER_MAGIC	0xca451a4e	/* 6.7+'s <linux/magic.h> */
#endif

/* Filesystems that place a file's data on devices of their choosing. */
static bool file_fs_multidev(struct super_block *sb)
{
	return sb->s_magic == BTRFS_SUPER_MAGIC || sb->s_magic == BCACHEFS_SUPER_MAGIC;
}

/*
 * An xfs realtime file keeps its data on the realtime device. Only xfs
 * has them: other filesystems are not asked (their fileattr_get per
 * transfer would cost as much as the rest of the check).
 */
static int file_realtime(struct file *file)
{
#ifdef HAVE_FILE_KATTR
	struct file_kattr fa = {};
#else
	struct fileattr fa = {};
#endif
	int ret;

	if (file_inode(file)->i_sb->s_magic != XFS_SUPER_MAGIC)
		return 0;
	ret = vfs_fileattr_get(file->f_path.dentry, &fa);
	if (ret == -ENOIOCTLCMD || ret == -ENOTTY || ret == -EOPNOTSUPP)
		return 0;	/* no attributes: no realtime file either */
	if (ret)
		return ret;
	return fa.fsx_xflags & FS_XFLAG_REALTIME ? -EXDEV : 0;
}

/*
 * Is @file one the command takes: a regular file whose filesystem is on
 * this controller's disk (the whole disk or a partition), with its data
 * there, and direct I/O?
 */
static int file_check_file(struct p2pnvme *c, struct file *file)
{
	struct inode *inode = file_inode(file);
	struct super_block *sb = inode->i_sb;
	struct block_device *bdev;
	bool ours;
	int ret;

	if (S_ISDIR(inode->i_mode))
		return -EISDIR;
	if (!S_ISREG(inode->i_mode))
		return -EINVAL;
	rcu_read_lock();
	bdev = rcu_dereference(c->disk_bdev);
	ours = bdev && sb->s_bdev && sb->s_bdev->bd_disk == bdev->bd_disk;
	rcu_read_unlock();
	if (!ours || file_fs_multidev(sb))
		return -EXDEV;
	ret = file_realtime(file);
	if (ret)
		return ret;
	if (!(file->f_mode & FMODE_CAN_ODIRECT))
		return -EOPNOTSUPP;
	return 0;
}

/*
 * The filesystem's direct I/O alignment for this file (statx
 * STATX_DIOALIGN), checked before it sees the request: for a file
 * without direct I/O, or a misaligned request, ext4 may take the page
 * cache silently. @mem: the memory's address (or an offset with the same
 * low bits).
 */
static int file_check_align(struct file *file, const struct p2pnvme_file_io *io, u64 mem)
{
	bool read = io->op == P2PNVME_OP_READ;
	struct kstat st = {};
	u32 align, rem;
	int ret;

	ret = vfs_getattr(&file->f_path, &st, STATX_DIOALIGN, AT_STATX_SYNC_AS_STAT);
	if (ret)
		return ret;
	if (!(st.result_mask & STATX_DIOALIGN) || !st.dio_offset_align || !st.dio_mem_align)
		return -EOPNOTSUPP;
	align = st.dio_offset_align;
#ifdef HAVE_KSTAT_DIO_READ_OFFSET_ALIGN
	if (read && st.dio_read_offset_align)
		align = st.dio_read_offset_align;
#endif
	/*
	 * A write smaller than a block may go through the page cache (xfs's
	 * unaligned CoW writes, which 6.12's xfs does not report): not when
	 * P2P is required.
	 */
	if (!read && (io->flags & P2PNVME_FILE_F_REQUIRE_P2P))
		align = max(align, i_blocksize(file_inode(file)));
	div_u64_rem(io->offset, align, &rem);
	if (rem)
		return -EINVAL;
	div_u64_rem(io->len, align, &rem);
	if (rem)
		return -EINVAL;
	div_u64_rem(mem, st.dio_mem_align, &rem);
	return rem ? -EINVAL : 0;
}

/* ---- the memory ---------------------------------------------------------- */

/* The PCI function whose memory BAR holds CPU physical address @phys (a reference). */
static struct pci_dev *file_bar_owner(phys_addr_t phys)
{
	struct pci_dev *pdev = NULL;
	int bar;

	for_each_pci_dev(pdev) {
		for (bar = 0; bar < PCI_STD_NUM_BARS; bar++) {
			struct resource *res = &pdev->resource[bar];

			if ((res->flags & IORESOURCE_MEM) && pci_resource_len(pdev, bar) &&
			    phys >= res->start && phys <= res->end)
				return pdev;
		}
	}
	return NULL;
}

/* The kernel's P2PDMA verdict between @provider and the controller. */
static int file_reachable(struct p2pnvme *c, struct pci_dev *provider)
{
	if (pci_p2pdma_distance(provider, &c->pdev->dev, true) >= 0)
		return 0;
	dev_warn_ratelimited(&c->pdev->dev,
			     "file command: p2pmem in the BAR of %s refused (-EREMOTEIO): the kernel's P2PDMA verdict refuses peer-to-peer DMA between %s and %s\n",
			     pci_name(provider), pci_name(provider), pci_name(c->pdev));
	return -EREMOTEIO;
}

/* The verdict for a P2PDMA page, taken once per page map and batch. */
static int file_page_verdict(struct file_batch *fb, struct page *page)
{
	struct dev_pagemap *pgmap = page_pgmap(page);
	struct pci_dev *owner;

	if (pgmap == fb->pgmap)
		return fb->verdict;
	owner = file_bar_owner(page_to_phys(page));
	fb->verdict = owner ? file_reachable(fb->c, owner) : -EREMOTEIO;
	pci_dev_put(owner);
	fb->pgmap = pgmap;
	return fb->verdict;
}

/* Let go of the user pages a write from p2pmem kept (file_user_mem()). */
static void file_unpin(struct file_xfer *x, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		unpin_user_page(x->bvec[i].bv_page);
}

/*
 * A user address: where is it? The pages are looked at (pinned and let go
 * at once; the block layer pins them again for the I/O): all p2pmem
 * (P2PNVME_PATH_P2P, each run's provider reachable) or all host memory.
 * A mapping the caller changes in between is its own race, as with
 * O_DIRECT: the block layer takes what it then finds, and the disk maps
 * p2pmem only where the kernel's verdict allows.
 *
 * A write from p2pmem keeps its pins instead and becomes a bvec of those
 * pages, as a registered buffer's: the disk can then tell its bios from
 * any other (their bi_io_vec point into @x->bvec), which the verdict after
 * the write needs (file_verdict()). A read, or a write from host memory,
 * stays a user-backed iterator. The pins of a write that is refused here
 * are let go here.
 */
static int file_user_mem(struct file_batch *fb, struct file_xfer *x)
{
	struct p2pnvme_file_io *io = x->io;
	bool require = io->flags & P2PNVME_FILE_F_REQUIRE_P2P;
	bool keep = io->op == P2PNVME_OP_WRITE;
	unsigned long start = io->addr & PAGE_MASK;
	unsigned int n = DIV_ROUND_UP(offset_in_page(io->addr) + io->len, PAGE_SIZE);
	unsigned int gup = io->op == P2PNVME_OP_READ ? FOLL_WRITE : 0;
	struct page *pages[FILE_PEEK];
	bool p2p = false, host = false;
	unsigned int done, i;
	int got, ret = 0;

	if (!access_ok(u64_to_user_ptr(io->addr), io->len))
		return -EFAULT;
	if (!P2P_HAVE_USER_PAGES) {
		/* no p2pmem can be mapped to userspace before 6.2 */
		io->path = P2PNVME_PATH_HOST;
		return require ? -EREMOTEIO : 0;
	}
#if P2P_HAVE_USER_PAGES
	gup |= FOLL_PCI_P2PDMA;
#endif
	for (done = 0; done < n; done += got) {
		got = pin_user_pages_fast(start + (unsigned long)done * PAGE_SIZE,
					  min_t(unsigned int, n - done, FILE_PEEK), gup, pages);
		if (got <= 0) {
			ret = got ?: -EFAULT;
			break;
		}
		/* a write from host memory (its first page says) is not kept */
		if (!done && keep && !is_pci_p2pdma_page(pages[0]))
			keep = false;
		if (!done && keep) {
			x->bvec = kvmalloc_array(n, sizeof(*x->bvec), GFP_KERNEL_ACCOUNT);
			if (!x->bvec) {
				unpin_user_pages(pages, got);
				ret = -ENOMEM;
				break;
			}
		}
		for (i = 0; i < got; i++) {
			if (keep)
				x->bvec[done + i].bv_page = pages[i];
			if (!is_pci_p2pdma_page(pages[i])) {
				host = true;
				continue;
			}
			p2p = true;
			if (!ret)
				ret = file_page_verdict(fb, pages[i]);
		}
		if (!keep)
			unpin_user_pages(pages, got);
		cond_resched();
	}
	if (keep && done == n && !ret && p2p && !host) {
		u64 left = io->len;
		unsigned int off = offset_in_page(io->addr);

		for (i = 0; i < n; i++, off = 0) {
			x->bvec[i].bv_offset = off;
			x->bvec[i].bv_len = min_t(u64, left, PAGE_SIZE - off);
			left -= x->bvec[i].bv_len;
		}
		x->nr_bvec = n;
		x->pinned = true;	/* let go by file_release() */
	} else if (keep && x->bvec) {
		/* refused, or p2pmem and host memory mixed */
		file_unpin(x, done);
		kvfree(x->bvec);
		x->bvec = NULL;
	}
	if (done < n)
		return ret;
	io->path = p2p && !host ? P2PNVME_PATH_P2P : P2PNVME_PATH_HOST;
	if (p2p && host)
		return -EINVAL;		/* host memory and p2pmem in one buffer */
	if (ret)
		return ret;
	return host && require ? -EREMOTEIO : 0;
}

/* A registered host buffer's range as a bvec of its pinned pages. */
static int file_reg_host(struct file_xfer *x, struct p2pnvme_reg *b, u64 *mem)
{
	/* byte 0 of the buffer is at the first entry's offset in the first page */
	u64 pos = (u64)b->sgt.sgl->offset + x->io->addr, left = x->io->len;
	unsigned int pg = pos >> PAGE_SHIFT, off = offset_in_page(pos), i;

	x->nr_bvec = DIV_ROUND_UP(off + left, PAGE_SIZE);
	if (pg + x->nr_bvec > b->nr_pages)
		return -EINVAL;		/* cannot be: the range was checked */
	x->bvec = kvmalloc_array(x->nr_bvec, sizeof(*x->bvec), GFP_KERNEL_ACCOUNT);
	if (!x->bvec)
		return -ENOMEM;
	for (i = 0; i < x->nr_bvec; i++, off = 0) {
		unsigned int n = min_t(u64, left, PAGE_SIZE - off);

		x->bvec[i].bv_page = b->pages[pg + i];
		x->bvec[i].bv_offset = off;
		x->bvec[i].bv_len = n;
		left -= n;
	}
	*mem = pos;
	return 0;
}

/*
 * Refuse with @err, counted by its reason @s (stats/file_refused_*): the
 * refusals an operator is told about. The others (malformed fields, a bad
 * fd, no such buffer) count nowhere, as the LBA paths' do not.
 */
static int file_refuse(struct p2pnvme *c, enum p2pnvme_stat s, int err)
{
	p2pnvme_stat_add(c, s, 1);
	return err;
}

#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
static void file_shadow_work(struct work_struct *work);

/*
 * A read into a registered dma-buf without pages (GPU memory; a p2pbar
 * dma-buf with the bench's file_placeholder_force): placeholder pages
 * stand for it (shadow.c), the registration mapped where it is now, before
 * the filesystem's call and outside every lock of it. A write is refused:
 * the filesystem may push its memory through the page cache (a fallback
 * decided inside the call), which would write the placeholders' zeros
 * into the file (Documentation/files.rst, "Only reads"). So is an
 * encrypted file: blk-crypto's fallback would decrypt the placeholders in
 * place and leave the ciphertext in the dma-buf. Takes @dmabuf's reference.
 */
static int file_reg_shadow(struct file_batch *fb, struct file_xfer *x, struct p2pnvme_reg *b,
			   struct dma_buf *dmabuf, u64 *mem)
{
	struct p2pnvme_file_io *io = x->io;
	struct p2pnvme *c = fb->c;
	struct p2pnvme_shadow_xfer *sx;
	const char *why = NULL;
	int ret;

	x->sdmabuf = dmabuf;	/* held: released by file_release() */
	if (io->op != P2PNVME_OP_READ)
		why = "a write from it: the filesystem may take its page cache inside the call";
	else if (fscrypt_needs_contents_encryption(file_inode(x->file)))
		why = "an encrypted file: blk-crypto's fallback decrypts in the placeholders";
	else if (!READ_ONCE(p2pnvme_file_placeholder_mb))
		why = "file_placeholder_mb is 0";
	if (why) {
		dev_info_ratelimited(&c->pdev->dev,
				     "file command: registered dma-buf of exporter %s refused (-EOPNOTSUPP): its memory has no pages the block layer can take, and placeholders cannot stand for it (%s); read into a p2pbar dma-buf and copy from there\n",
				     dmabuf->exp_name, why);
		return -EOPNOTSUPP;
	}
	ret = p2pnvme_reg_ready(b);
	if (ret)
		return ret;
	io->path = p2pnvme_reg_path(b);
	if (x->sx_own)
		sx = memset(x->sx_own, 0, sizeof(*sx));
	else
		sx = kzalloc_obj(*sx, GFP_KERNEL_ACCOUNT);
	if (!sx)
		return -ENOMEM;
	x->sx = sx;
	sx->reg = b;
	sx->pos = b->start + io->addr;
	sx->len = io->len;
	sx->require = (io->flags & P2PNVME_FILE_F_REQUIRE_P2P) || b->require_p2p;
	if (sx->require && READ_ONCE(b->host))
		return -EREMOTEIO;
	INIT_WORK(&x->shadow_work, file_shadow_work);
	x->cred = get_current_cred();
	ret = p2pnvme_shadow_get(c, sx, &fb->shadow_held);
	if (ret == -EAGAIN || ret == -E2BIG)
		return file_refuse(c, ST_FILE_REFUSED_INFLIGHT, ret);
	if (ret)
		return ret;
	x->bvec = sx->bvec;
	x->nr_bvec = sx->nr_bvec;
	*mem = sx->off0;	/* the placeholders' address bits, for dio_mem_align */
	return 0;
}

/*
 * A registered dma-buf: p2pbar's pages, held until the transfer ends; the
 * provider's verdict. Another exporter's memory (GPU memory) has no pages
 * the block layer can take. p2pbar's calls come with the dma-buf, which
 * holds p2pbar's module until file_release() puts it.
 */
static int file_reg_dmabuf(struct file_batch *fb, struct file_xfer *x, struct p2pnvme_reg *b,
			   u64 *mem)
{
	struct p2pnvme *c = fb->c;
	u64 pos = b->start + x->io->addr;
	const struct p2pbar_dmabuf_ops *p2pbar;
	struct pci_dev *provider;
	struct dma_buf *dmabuf;
	struct page *page;
	int reach, kind;

	dmabuf = p2pnvme_reg_dmabuf_get(b);
	if (!dmabuf)
		return -ENODEV;		/* revoked for good */
	/* p2pbar's or not: asked once per registration (its exporter's name) */
	kind = READ_ONCE(b->file_p2pbar);
	if (!kind) {
		kind = p2pbar_dmabuf_ops_of(dmabuf) ? 1 : -1;
		WRITE_ONCE(b->file_p2pbar, kind);
	}
	/* what p2pbar_dmabuf_ops_of() answers for it, without the look again */
	p2pbar = kind > 0 ? container_of(dmabuf->ops, struct p2pbar_dmabuf_ops, ops) : NULL;
	/* no pages (not p2pbar's), or the bench asks for placeholders anyway */
	if (!p2pbar || READ_ONCE(p2pnvme_file_placeholder_force))
		return file_reg_shadow(fb, x, b, dmabuf, mem);
	page = p2pbar->pages(dmabuf, pos, x->io->len, &provider);
	if (IS_ERR(page)) {
		dma_buf_put(dmabuf);
		return PTR_ERR(page);
	}
	x->dmabuf = dmabuf;	/* held: released by file_release() */
	x->p2pbar = p2pbar;
	x->bv1.bv_page = page;
	x->bv1.bv_offset = offset_in_page(pos);
	x->bv1.bv_len = x->io->len;
	x->bvec = &x->bv1;
	x->nr_bvec = 1;
	*mem = pos;
	/* the verdict once per registration: pci_p2pdma_distance() walks the topology */
	reach = READ_ONCE(b->file_reach);
	if (!reach) {
		reach = file_reachable(c, provider) ?: 1;
		WRITE_ONCE(b->file_reach, reach);
	}
	return reach < 0 ? reach : 0;
}
#else
static int file_reg_dmabuf(struct file_batch *fb, struct file_xfer *x, struct p2pnvme_reg *b,
			   u64 *mem)
{
	return -EOPNOTSUPP;
}
#endif

/* A registered buffer: looked up, its range and rights, its memory. */
static int file_reg_mem(struct file_batch *fb, struct p2pnvme_file *f, struct file_xfer *x,
			u64 *mem)
{
	struct p2pnvme_file_io *io = x->io;
	struct p2pnvme_reg *b;

	b = p2pnvme_reg_find(f, io->buf_id);
	if (!b)
		return -ENOENT;
	x->reg = b;
	if (x->bound && b->serial != x->bound)
		return -ENOENT;	/* not the registration it was bound to */
	if (io->addr > b->len || io->len > b->len - io->addr)
		return -EINVAL;
	/* the controller writes into it on a read of the file */
	if (io->op == P2PNVME_OP_READ && !b->writable)
		return -EBADF;
	if (READ_ONCE(b->revoked))
		return -ENODEV;
	if (b->kind == P2PNVME_REG_HOST) {
		io->path = P2PNVME_PATH_HOST;
		if (io->flags & P2PNVME_FILE_F_REQUIRE_P2P)
			return -EREMOTEIO;
		return file_reg_host(x, b, mem);
	}
	io->path = P2PNVME_PATH_DMABUF;
	return file_reg_dmabuf(fb, x, b, mem);
}

/* ---- what the disk moved of a write ------------------------------------ */

/* @x->bvec's first and last byte, the range its bios' bi_io_vec point into */
static unsigned long file_watch_first(const struct file_xfer *x)
{
	return (unsigned long)x->bvec;
}

static unsigned long file_watch_last(const struct file_xfer *x)
{
	return (unsigned long)(x->bvec + x->nr_bvec) - 1;
}

/*
 * Watch a write from p2pmem: from now until file_release() the disk
 * credits @x with each bio of its that completed (p2pnvme_file_credit()).
 * Process context.
 */
static int file_watch(struct p2pnvme *c, struct file_xfer *x)
{
	int ret;

	atomic64_set(&x->watch.moved, 0);
	ret = mtree_insert_range(&c->file_watch, file_watch_first(x), file_watch_last(x),
				 &x->watch, GFP_KERNEL_ACCOUNT);
	/* -EEXIST cannot be: the range is memory this transfer owns */
	if (WARN_ON_ONCE(ret == -EEXIST))
		return -EIO;
	if (ret)
		return ret;
	x->watched = true;
	atomic_inc(&c->file_watched);
	return 0;
}

/* The transfer is over: no bio of its is left to credit. Process context. */
static void file_unwatch(struct p2pnvme *c, struct file_xfer *x)
{
	if (!x->watched)
		return;
	mtree_erase(&c->file_watch, file_watch_first(x));
	atomic_dec(&c->file_watched);
	x->watched = false;
}

/**
 * p2pnvme_file_credit - a write request of the disk completed without error:
 *	credit one of its bios to the file command's write it came from
 * @c: the controller
 * @bv: the bio's bi_io_vec
 * @bytes: the bio's bytes (bi_iter.bi_size)
 *
 * A bio whose bi_io_vec points into a watched write's bio_vec array was
 * built on it by bio_iov_bvec_set() (the filesystem's direct I/O, split or
 * not by the block layer): its bytes are the write's own memory, which the
 * controller read. A bio of the page cache, of bounce pages (7.x iomap's
 * IOMAP_DIO_BOUNCE, blk-crypto's fallback) or of any other user points
 * elsewhere. The entry found stays valid: its write cannot end, and
 * file_unwatch() cannot run, before this bio ended. Any context.
 */
void p2pnvme_file_credit(struct p2pnvme *c, const struct bio_vec *bv, unsigned int bytes)
{
	struct p2pnvme_watch *w = mtree_load(&c->file_watch, (unsigned long)bv);

	if (w)
		atomic64_add(bytes, &w->moved);
}

/**
 * p2pnvme_file_init - the file command's side of a new controller
 * @c: the controller
 */
void p2pnvme_file_init(struct p2pnvme *c)
{
	mt_init_flags(&c->file_watch, MT_FLAGS_USE_RCU);
	atomic_set(&c->file_watched, 0);
	p2pnvme_shadow_init(c);
}

/**
 * p2pnvme_file_exit - the controller's last reference is gone
 * @c: the controller (p2pnvme_file_init() was called; no transfer is left)
 */
void p2pnvme_file_exit(struct p2pnvme *c)
{
	WARN_ON_ONCE(atomic_read(&c->file_watched));
	mtree_destroy(&c->file_watch);
	p2pnvme_shadow_exit(c);
}

/* ---- one transfer -------------------------------------------------------- */

/*
 * An encrypted file's contents are the CPU's to encrypt and decrypt: the
 * disk has no inline encryption hardware (no blk_crypto_profile), so
 * blk-crypto's fallback does it (block/blk-crypto-fallback.c). A read's
 * ciphertext is DMAed into the memory and decrypted there in place by the
 * CPU, through its mapping of the BAR; a write is encrypted by the CPU into
 * bounce pages, which the controller reads. So a transfer into or from
 * p2pmem or a p2pbar dma-buf is on the bounce path, or with
 * P2PNVME_FILE_F_REQUIRE_P2P refused here, before anything is issued. A
 * regular file's encryption is fixed when it is created: no window after
 * this check. Host memory is not concerned.
 */
static int file_check_crypt(struct p2pnvme *c, struct file_xfer *x)
{
	struct p2pnvme_file_io *io = x->io;

	if (io->path != P2PNVME_PATH_P2P && io->path != P2PNVME_PATH_DMABUF)
		return 0;
	if (!fscrypt_needs_contents_encryption(file_inode(x->file)))
		return 0;
	io->path = P2PNVME_PATH_BOUNCE;
	if (!(io->flags & P2PNVME_FILE_F_REQUIRE_P2P))
		return 0;
	dev_info_ratelimited(&c->pdev->dev,
			     "file command: a %s of an encrypted file with REQUIRE_P2P refused (-EREMOTEIO): the CPU en/decrypts its contents (blk-crypto fallback), the disk has no inline encryption\n",
			     io->op == P2PNVME_OP_READ ? "read" : "write");
	return -EREMOTEIO;
}

/*
 * Check everything about @x that can be checked before any I/O is issued;
 * what it takes (the file, the buffer, the pages) is released by
 * file_release() whatever this returns.
 */
static int file_prepare(struct file_batch *fb, struct p2pnvme_file *f, struct file_xfer *x)
{
	struct p2pnvme_file_io *io = x->io;
	bool registered = io->flags & P2PNVME_FILE_F_REGISTERED;
	struct p2pnvme *c = fb->c;
	u64 mem = io->addr;
	int ret;

	io->status = 0;
	io->bytes = 0;
	io->path = P2PNVME_PATH_NONE;
	if (io->argsz != sizeof(*io) || io->zero_len ||
	    (io->flags & ~(P2PNVME_FILE_F_REGISTERED | P2PNVME_FILE_F_REQUIRE_P2P)))
		return -EINVAL;
	if (io->op != P2PNVME_OP_READ && io->op != P2PNVME_OP_WRITE)
		return -EINVAL;
	if (!io->len || io->len > P2PNVME_FILE_MAX_LEN)
		return -EINVAL;
	/* a file position is a loff_t: the range must end at LLONG_MAX at most */
	if (io->offset > LLONG_MAX || io->len > LLONG_MAX - io->offset)
		return -EINVAL;
	if (!registered && (io->buf_id || !io->addr || io->addr + io->len < io->addr))
		return -EINVAL;

	x->file = fget(io->fd);
	if (!x->file)
		return -EBADF;
	/* the caller's own open file decides, as read() and write() */
	if (!(x->file->f_mode & (io->op == P2PNVME_OP_READ ? FMODE_READ : FMODE_WRITE)))
		return -EBADF;
	ret = file_check_file(c, x->file);
	if (ret == -EXDEV)
		return file_refuse(c, ST_FILE_REFUSED_XDEV, ret);
	if (ret)
		return ret;
	/*
	 * An active swap file belongs to the swap code, which writes its
	 * blocks behind the filesystem: a write is -ETXTBSY, as
	 * generic_write_checks_count() answers at the issue, but here for the
	 * whole batch before any entry is issued. A read goes on, as pread()'s.
	 * A swapon after this check meets the filesystem's own check.
	 */
	if (io->op == P2PNVME_OP_WRITE && IS_SWAPFILE(file_inode(x->file)))
		return file_refuse(c, ST_FILE_REFUSED_SWAPFILE, -ETXTBSY);
	ret = registered ? file_reg_mem(fb, f, x, &mem) : file_user_mem(fb, x);
	/* the kernel's P2PDMA verdict, or host memory under REQUIRE_P2P */
	if (ret == -EREMOTEIO)
		return file_refuse(c, ST_FILE_REFUSED_P2P, ret);
	if (ret)
		return ret;
	ret = file_check_align(x->file, io, mem);
	/* its -EINVAL is misalignment, and only that */
	if (ret == -EINVAL)
		return file_refuse(c, ST_FILE_REFUSED_ALIGN, ret);
	if (ret)
		return ret;
	ret = file_check_crypt(c, x);
	if (ret)
		return file_refuse(c, ST_FILE_REFUSED_P2P, ret);
	/* a write from p2pmem: the disk says what it moved (file_verdict()) */
	if (io->op == P2PNVME_OP_WRITE && x->bvec &&
	    (io->path == P2PNVME_PATH_P2P || io->path == P2PNVME_PATH_DMABUF))
		return file_watch(c, x);
	return 0;
}

/*
 * Did the CPU move a transfer into or from p2pmem or a p2pbar dma-buf that
 * ended with @ret (any context)? The filesystem decides that inside the
 * call, under its own locks, after every check of file_prepare(); only its
 * traces tell:
 *
 * - a read: ext4_dio_read_iter() clears IOCB_DIRECT before it hands the
 *   read to generic_file_read_iter() (a file whose direct I/O went away:
 *   ext4_should_use_dio()); xfs never serves a direct read from its page
 *   cache. Such a read returns before the issue does, so the flag is read
 *   in the kiocb as the filesystem left it;
 * - a write: what the disk carried of the write's own memory
 *   (p2pnvme_file_credit()) against the bytes written: the page cache's
 *   copy (ext4_buffered_write_iter() after ext4_should_use_dio() or a short
 *   direct write, xfs's buffered write after -ENOTBLK, a failed
 *   kiocb_invalidate_pages()) is written back from page cache pages, if at
 *   all before the answer, never from this memory. Neither filesystem
 *   clears a write's IOCB_DIRECT.
 *
 * Then the path is P2PNVME_PATH_BOUNCE: the bytes went through host memory
 * (the page cache) and a CPU copy, as the LBA paths' bounce through host
 * pages. With P2PNVME_FILE_F_REQUIRE_P2P the transfer fails -EREMOTEIO
 * instead, though its bytes moved: the read's are in the memory, the
 * write's in the file (or its page cache, written back later). Bytes the
 * filesystem zeroed for a read's holes are not the page cache's: the read
 * was direct, and stays on its path (iomap_dio_hole_iter()).
 */
static long file_verdict(struct p2pnvme *c, struct file_xfer *x, long ret)
{
	struct p2pnvme_file_io *io = x->io;
	bool cpu;

	if (io->path != P2PNVME_PATH_P2P && io->path != P2PNVME_PATH_DMABUF)
		return ret;
	if (io->op == P2PNVME_OP_READ)
		cpu = !(x->iocb.ki_flags & IOCB_DIRECT);
	else
		cpu = ret > 0 && atomic64_read(&x->watch.moved) < ret;
	if (!cpu)
		return ret;
	io->path = P2PNVME_PATH_BOUNCE;
	if (ret <= 0 || !(io->flags & P2PNVME_FILE_F_REQUIRE_P2P))
		return ret;
	p2pnvme_stat_add(c, ST_FILE_ERRORS_FALLBACK, 1);
	dev_info_ratelimited(&c->pdev->dev,
			     "file command: a %s of %lld bytes with REQUIRE_P2P failed (-EREMOTEIO) after the filesystem moved it through its page cache (the bytes moved: the file's direct I/O went away after the check, or the filesystem fell back)\n",
			     io->op == P2PNVME_OP_READ ? "read" : "write", (long long)ret);
	return -EREMOTEIO;
}

/*
 * Count a transfer that ended (any context): its bytes on the path it
 * reported, or an error. The bytes are what the filesystem returned: bytes
 * it zeroed with the CPU (holes and unwritten extents of a direct read,
 * iomap_dio_hole_iter()) are in them; a transfer it moved through its page
 * cache is on the bounce path (file_verdict()). What the controller moved
 * is in the disk's counters.
 */
static void file_account(struct p2pnvme *c, const struct file_xfer *x, long ret)
{
	bool write = x->io->op == P2PNVME_OP_WRITE;
	enum p2pnvme_stat n, b;

	if (ret < 0) {
		p2pnvme_stat_add(c, ST_FILE_ERRORS, 1);
		return;
	}
	switch (x->io->path) {
	case P2PNVME_PATH_P2P:
		n = write ? ST_FILE_WRITES_P2P : ST_FILE_READS_P2P;
		b = ST_FILE_BYTES_P2P;
		break;
	case P2PNVME_PATH_DMABUF:
	case P2PNVME_PATH_DMABUF_HOST:
	case P2PNVME_PATH_DMABUF_COHERENT:
		n = write ? ST_FILE_WRITES_DMABUF : ST_FILE_READS_DMABUF;
		b = ST_FILE_BYTES_DMABUF;
		break;
	case P2PNVME_PATH_BOUNCE:
		n = write ? ST_FILE_WRITES_BOUNCE : ST_FILE_READS_BOUNCE;
		b = ST_FILE_BYTES_BOUNCE;
		break;
	default:
		n = write ? ST_FILE_WRITES_HOST : ST_FILE_READS_HOST;
		b = ST_FILE_BYTES_HOST;
		break;
	}
	p2pnvme_stat_add(c, n, 1);
	p2pnvme_stat_add(c, b, ret);
}

/* One more transfer of the batch ended (any context). */
static void file_done(struct file_xfer *x, long ret)
{
	struct file_batch *fb = x->batch;

	/* an IOCB_NOWAIT issue that would block is issued again: not an end */
	if (!(ret == -EAGAIN && (x->iocb.ki_flags & IOCB_NOWAIT))) {
		ret = file_verdict(fb->c, x, ret);
		file_account(fb->c, x, ret);
	}
	x->ret = ret;
	if (atomic_dec_and_test(&fb->pending))
		fb->ended(fb);
}

/* An ioctl's last transfer ended: its submitter waits for it. */
static void file_batch_ended(struct file_batch *fb)
{
	complete(&fb->done);
}

/* The kiocb's end: may run in interrupt context. */
static void file_ki_complete(struct kiocb *iocb, long ret)
{
	struct file_xfer *x = container_of(iocb, struct file_xfer, iocb);

	if (iocb->ki_flags & IOCB_WRITE)
		kiocb_end_write(iocb);
	if (x->sx) {
		/* the disk carried it all: nothing to read or copy (file_shadow_end()) */
		if (p2pnvme_shadow_carried(x->sx, ret)) {
			x->sx->attempts++;
			p2pnvme_stat_add(x->batch->c, ST_FILE_PLACEHOLDER_READS, 1);
			file_done(x, ret);
			return;
		}
		/* else placeholders are read and copied in process context */
		x->shadow_ret = ret;
		queue_work(system_unbound_wq, &x->shadow_work);
		return;
	}
	file_done(x, ret);
}

/*
 * A direct write as vfs_iocb_iter_write() makes it on 6.12 and 7.2 (6.1's
 * takes no freeze protection), as loop's lo_rw_aio() and aio's write do;
 * with IOCB_NOWAIT a frozen filesystem is -EAGAIN, as io_uring's own
 * write finds it (io_kiocb_start_write()).
 */
static ssize_t file_write(struct file_xfer *x, struct iov_iter *it)
{
	struct file *file = x->file;
	ssize_t ret;

	if (!file->f_op->write_iter)
		return -EINVAL;
	if (!(file->f_mode & FMODE_WRITE))
		return -EBADF;
	if (!(file->f_mode & FMODE_CAN_WRITE))
		return -EINVAL;
	ret = rw_verify_area(WRITE, file, &x->iocb.ki_pos, iov_iter_count(it));
	if (ret < 0)
		return ret;
	if (x->iocb.ki_flags & IOCB_NOWAIT) {
		struct super_block *sb = file_inode(file)->i_sb;

		if (!sb_start_write_trylock(sb))
			return -EAGAIN;
		/* as kiocb_start_write(): lockdep lets the completion release it */
		__sb_writers_release(sb, SB_FREEZE_WRITE);
	} else {
		kiocb_start_write(&x->iocb);
	}
	x->iocb.ki_flags |= IOCB_WRITE;
	ret = file->f_op->write_iter(&x->iocb, it);
	if (ret != -EIOCBQUEUED)
		kiocb_end_write(&x->iocb);
	return ret;
}

static void file_shadow_end(struct file_xfer *x, long ret);

/*
 * Issue @x; it ends in file_done(), now or from its completion (through
 * file_shadow_end() for placeholders). @nowait:
 * IOCB_NOWAIT, the filesystem answers -EAGAIN rather than block (the
 * caller checked FMODE_NOWAIT).
 */
static void file_issue(struct file_xfer *x, bool nowait)
{
	struct p2pnvme_file_io *io = x->io;
	unsigned int dir = io->op == P2PNVME_OP_READ ? ITER_DEST : ITER_SOURCE;
	struct iov_iter it;
	ssize_t ret;

	init_sync_kiocb(&x->iocb, x->file);
	x->iocb.ki_pos = io->offset;
	x->iocb.ki_flags |= IOCB_DIRECT | (nowait ? IOCB_NOWAIT : 0);
	x->iocb.ki_complete = file_ki_complete;
	if (x->bvec) {
		iov_iter_bvec(&it, dir, x->bvec, x->nr_bvec, io->len);
	} else {
		x->iov.iov_base = u64_to_user_ptr(io->addr);
		x->iov.iov_len = io->len;
		iov_iter_init(&it, dir, &x->iov, 1, io->len);
	}
	if (io->op == P2PNVME_OP_READ)
		ret = vfs_iocb_iter_read(x->file, &x->iocb, &it);
	else
		ret = file_write(x, &it);
	if (ret == -EIOCBQUEUED)
		return;
	if (x->sx)
		file_shadow_end(x, ret);
	else
		file_done(x, ret);
}

/*
 * A read through placeholders whose filesystem call returned @ret, every
 * bio of it ended (process context: the submitter, or @shadow_work). A
 * request that put its bytes in the placeholders' RAM decided: the
 * registration revoked (-ENODEV), now in host memory with P2P required
 * (-EREMOTEIO), or moved (mapped anew: the read is issued again, whole,
 * at most FILE_SHADOW_TRIES times, then -EAGAIN; reads are idempotent).
 * Else the bytes the CPU wrote are completed (p2pnvme_shadow_finish()):
 * zeros count in file_zeroed_bytes, other bytes in file_cpu_bytes and put
 * the transfer on the bounce path. A read that ended without error counts
 * in file_placeholder_reads (what shows the bench's forced rows used them).
 */
static void file_shadow_end(struct file_xfer *x, long ret)
{
	struct p2pnvme *c = x->batch->c;
	struct p2pnvme_shadow_xfer *sx = x->sx;
	unsigned int lost = atomic_read(&sx->lost);
	u64 zeroed, cpu, zero_len;

	sx->attempts++;
	if (lost & P2PNVME_SHADOW_REVOKED) {
		ret = -ENODEV;
	} else if (lost & P2PNVME_SHADOW_HOST) {
		ret = -EREMOTEIO;
	} else if (lost && ret >= 0) {
		if (sx->attempts >= FILE_SHADOW_TRIES) {
			dev_info_ratelimited(&c->pdev->dev,
					     "file command: a read into a registered dma-buf failed (-EAGAIN): the buffer moved under each of its %u issues\n",
					     sx->attempts);
			ret = -EAGAIN;
		} else {
			/* zeros again where the RAM took bytes, laid out as it was */
			p2pnvme_shadow_reset(c, sx);
			ret = p2pnvme_reg_ready(sx->reg);
			if (!ret && sx->require && READ_ONCE(sx->reg->host))
				ret = -EREMOTEIO;
			if (!ret) {
				x->io->path = p2pnvme_reg_path(sx->reg);
				p2pnvme_shadow_layout(c, sx);
				x->bvec = sx->bvec;
				x->nr_bvec = sx->nr_bvec;
				file_issue(x, false);
				return;
			}
		}
	}
	if (ret > 0) {
		ret = p2pnvme_shadow_finish(c, sx, ret, x->sdmabuf, x->zero_answer, &zeroed, &cpu,
					    &zero_len);
		if (ret >= 0) {
			x->io->zero_len = zero_len;
			p2pnvme_stat_add(c, ST_FILE_ZEROED_BYTES, zeroed);
			p2pnvme_stat_add(c, ST_FILE_CPU_BYTES, cpu);
			if (cpu)
				x->io->path = P2PNVME_PATH_BOUNCE;
		} else if (ret == -EREMOTEIO) {
			/* REQUIRE_P2P, and the CPU wrote more than zeros: the page cache */
			x->io->path = P2PNVME_PATH_BOUNCE;
			p2pnvme_stat_add(c, ST_FILE_ERRORS_FALLBACK, 1);
		}
	}
	if (ret >= 0)
		p2pnvme_stat_add(c, ST_FILE_PLACEHOLDER_READS, 1);
	file_done(x, ret);
}

#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
/* @x->shadow_work: the kiocb ended, maybe in interrupt context */
static void file_shadow_work(struct work_struct *work)
{
	struct file_xfer *x = container_of(work, struct file_xfer, shadow_work);
	const struct cred *old = override_creds(x->cred);

	file_shadow_end(x, x->shadow_ret);
	revert_creds(old);
}
#endif

/* Let go of what file_prepare() took (process context, the I/O over). */
static void file_release(struct file_batch *fb, struct file_xfer *x)
{
	file_unwatch(fb->c, x);
	if (x->cred) {
		put_cred(x->cred);
		x->cred = NULL;
	}
	if (x->sx) {
		/* its bvec is the placeholders' */
		p2pnvme_shadow_put(fb->c, x->sx);
		if (x->sx != x->sx_own)
			kfree(x->sx);
		x->sx = NULL;
		x->bvec = NULL;
	}
#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
	if (x->sdmabuf)
		dma_buf_put(x->sdmabuf);
	if (x->dmabuf) {
		x->p2pbar->pages_put(x->dmabuf);
		dma_buf_put(x->dmabuf);	/* may let p2pbar's module go */
	}
#endif
	if (x->pinned)
		file_unpin(x, x->nr_bvec);
	if (x->bvec != &x->bv1)
		kvfree(x->bvec);
	if (x->reg)
		p2pnvme_reg_release(x->reg);
	if (x->file)
		fput(x->file);
}

/*
 * User memory is pinned by the block layer for the transfer: counted
 * against the file's max_inflight_mb as the LBA transfers' pins are
 * (-E2BIG: never fits, -EAGAIN: the file's other transfers hold it).
 */
static int file_inflight_get(struct p2pnvme_file *f, const struct p2pnvme_file_io *ios,
			     unsigned int nr, u64 *bytes)
{
	u64 limit = (u64)READ_ONCE(p2pnvme_max_inflight_mb) << 20, sum = 0;
	unsigned int i;

	*bytes = 0;
	for (i = 0; i < nr; i++)
		if (!(ios[i].flags & P2PNVME_FILE_F_REGISTERED))
			sum += ios[i].len;	/* each at most P2PNVME_FILE_MAX_LEN */
	if (sum > limit)
		return file_refuse(f->c, ST_FILE_REFUSED_INFLIGHT, -E2BIG);
	if (!sum)
		return 0;
	if (atomic64_add_return(sum, &f->inflight) > limit) {
		atomic64_sub(sum, &f->inflight);
		return file_refuse(f->c, ST_FILE_REFUSED_INFLIGHT, -EAGAIN);
	}
	*bytes = sum;
	return 0;
}

/**
 * p2pnvme_ioc_file_submit - P2PNVME_IOC_FILE_SUBMIT
 * @f: the controller's open file
 * @uarg: user address of a struct p2pnvme_submit whose entries are
 *	  struct p2pnvme_file_io
 *
 * Return: 0, or the -errno of the first transfer that failed (see
 * <uapi/linux/p2pnvme.h>); -EINVAL, -EFAULT, -ENOMEM for the arguments,
 * -ENODEV once the controller is being removed.
 */
long p2pnvme_ioc_file_submit(struct p2pnvme_file *f, unsigned long uarg)
{
	struct p2pnvme_submit __user *usub = (void __user *)uarg;
	struct file_batch fb = { .c = f->c, .ended = file_batch_ended };
	struct p2pnvme_file_io *ios;
	struct p2pnvme_submit sub;
	struct file_xfer *xs;
	struct blk_plug plug;
	unsigned int i, prepared = 0;
	size_t size;
	u64 bytes;
	int ret = p2p_ioctl_copy_in(&sub, sizeof(sub), offsetofend(struct p2pnvme_submit, ios),
				    uarg);

	if (ret)
		return ret;
	if (sub.flags || !sub.nr || sub.nr > P2PNVME_SUBMIT_MAX)
		return -EINVAL;
	if (p2pnvme_state(f->c) >= P2PNVME_DELETING)
		return -ENODEV;
	size = array_size(sub.nr, sizeof(*ios));
	ios = memdup_user(u64_to_user_ptr(sub.ios), size);
	if (IS_ERR(ios))
		return PTR_ERR(ios);
	xs = kvcalloc(sub.nr, sizeof(*xs), GFP_KERNEL_ACCOUNT);
	if (!xs) {
		ret = -ENOMEM;
		goto out_free_ios;
	}
	atomic_set(&fb.pending, 1);
	init_completion(&fb.done);

	/* every transfer is checked, and holds what it needs, before any is issued */
	sub.failed = sub.nr;
	for (i = 0; i < sub.nr; i++) {
		xs[i].batch = &fb;
		xs[i].io = &ios[i];
		xs[i].zero_answer = true;	/* written back in the entry */
		prepared = i + 1;
		ret = file_prepare(&fb, f, &xs[i]);
		if (ret) {
			sub.failed = i;
			goto out_failed;
		}
	}
	ret = file_inflight_get(f, ios, sub.nr, &bytes);
	if (ret)
		goto out_failed;	/* the whole batch: @failed is nr */

	atomic_add(sub.nr, &fb.pending);
	blk_start_plug(&plug);
	for (i = 0; i < sub.nr; i++)
		file_issue(&xs[i], false);
	blk_finish_plug(&plug);
	if (!atomic_dec_and_test(&fb.pending))
		wait_for_completion_io(&fb.done);
	p2pnvme_inflight_put(f, bytes);

	for (i = 0; i < sub.nr; i++) {
		long r = xs[i].ret;

		ios[i].bytes = r > 0 ? r : 0;
		ios[i].status = r < 0 ? r : 0;
		if (r < 0 && !ret)
			ret = r;
	}
	if (copy_to_user(u64_to_user_ptr(sub.ios), ios, size))
		ret = -EFAULT;
out_failed:
	if (put_user(sub.failed, &usub->failed))
		ret = -EFAULT;
	for (i = 0; i < prepared; i++)
		file_release(&fb, &xs[i]);
	kvfree(xs);
out_free_ios:
	kfree(ios);
	return ret;
}

#if P2P_HAVE_URING_CMD
/* ---- one transfer through io_uring (uring.c) ------------------------------ */

/**
 * struct p2pnvme_file_cmd - one P2PNVME_URING_CMD_FILE_IO transfer
 * @fb: a batch of one
 * @x: the transfer
 * @io: its description (the SQE's, kernel copy)
 * @f: the controller's open file it came through (io_uring holds it open
 *     until the answer)
 * @bytes: charged to @f->inflight
 * @end: called once it ended, if that was after p2pnvme_file_cmd_issue()
 *	 returned (any context, maybe hard interrupt)
 * @priv: for @end
 * @next_free: in @f's cache of ended transfers (@f->fc_lock)
 * @sx: @x's placeholders, if it has them (@x.sx_own): zeroed when taken,
 *	not with the rest at each use
 */
struct p2pnvme_file_cmd {
	struct file_batch fb;
	struct file_xfer x;
	struct p2pnvme_file_io io;
	struct p2pnvme_file *f;
	u64 bytes;
	void (*end)(void *priv);
	void *priv;
	struct p2pnvme_file_cmd *next_free;
	/* not cleared at a reuse: from here on */
	struct p2pnvme_shadow_xfer sx;
};

/*
 * Ended io_uring transfers an open file keeps for its next ones: at QD32
 * the slab's allocation and free of each (its free mostly the slow path,
 * the object's slab not the CPU's) cost about 400 of a 4 KiB read's 6,900
 * instructions. At most this many (under 1 KiB each).
 */
#define FILE_CMD_CACHE	32

static void file_cmd_ended(struct file_batch *fb)
{
	struct p2pnvme_file_cmd *fc = container_of(fb, struct p2pnvme_file_cmd, fb);

	fc->end(fc->priv);
}

/**
 * p2pnvme_file_cmd_alloc - a new io_uring file transfer, not checked yet
 * @f: the controller's open file
 * @end: called when it ends after its issue returned (any context)
 * @priv: for @end
 *
 * Return: the transfer (free with p2pnvme_file_cmd_free()), or NULL.
 */
struct p2pnvme_file_cmd *p2pnvme_file_cmd_alloc(struct p2pnvme_file *f, void (*end)(void *priv),
						void *priv)
{
	struct p2pnvme_file_cmd *fc;

	spin_lock(&f->fc_lock);
	fc = f->fc_free;
	if (fc) {
		f->fc_free = fc->next_free;
		f->fc_nfree--;
	}
	spin_unlock(&f->fc_lock);
	if (fc)		/* as new: nothing of the last transfer (@sx: when taken) */
		memset(fc, 0, offsetof(struct p2pnvme_file_cmd, sx));
	else
		fc = kzalloc(sizeof(*fc), GFP_KERNEL_ACCOUNT);
	if (!fc)
		return NULL;
	fc->x.sx_own = &fc->sx;
	fc->fb.c = f->c;
	fc->fb.ended = file_cmd_ended;
	fc->x.batch = &fc->fb;
	fc->x.io = &fc->io;
	fc->f = f;
	fc->end = end;
	fc->priv = priv;
	return fc;
}

/**
 * p2pnvme_file_cmd_prepare - check a transfer and take what it needs
 * @fc: from p2pnvme_file_cmd_alloc(), not prepared yet
 * @io: the transfer, as an entry of P2PNVME_IOC_FILE_SUBMIT (@argsz set)
 * @bound: the serial of the registration its buffer id must still name
 *	   (issued again after -EAGAIN), or 0
 * @zero_answer: the answer can say a run of zeros for the caller to clear
 *		 (placeholders of an exporter without vmap: a 32-byte CQE)
 *
 * The checks of an ioctl's entry (file_prepare()), then its bytes at a
 * user address charged to max_inflight_mb. What it took is let go by
 * p2pnvme_file_cmd_free(), whatever this returns.
 *
 * Return: 0 or the -errno of P2PNVME_IOC_FILE_SUBMIT's checks; -ENODEV
 * once the controller is being removed.
 */
int p2pnvme_file_cmd_prepare(struct p2pnvme_file_cmd *fc, const struct p2pnvme_file_io *io,
			     u64 bound, bool zero_answer)
{
	int ret;

	if (p2pnvme_state(fc->f->c) >= P2PNVME_DELETING)
		return -ENODEV;
	fc->io = *io;
	fc->x.bound = bound;
	fc->x.zero_answer = zero_answer;
	ret = file_prepare(&fc->fb, fc->f, &fc->x);
	if (ret)
		return ret;
	return file_inflight_get(fc->f, &fc->io, 1, &fc->bytes);
}

/**
 * p2pnvme_file_cmd_issue - issue a prepared transfer
 * @fc: prepared by p2pnvme_file_cmd_prepare() without error
 * @nowait: the filesystem answers -EAGAIN rather than block (IOCB_NOWAIT)
 *
 * Return: 0 if it has ended already (p2pnvme_file_cmd_result() has its
 * answer, @fc->end is not called); -EIOCBQUEUED if @fc->end will be
 * called; -EAGAIN, nothing issued, if @nowait and the file takes no
 * IOCB_NOWAIT.
 */
int p2pnvme_file_cmd_issue(struct p2pnvme_file_cmd *fc, bool nowait)
{
	if (nowait && !(fc->x.file->f_mode & FMODE_NOWAIT))
		return -EAGAIN;
	/* the transfer and the submitter: the last of the two answers */
	atomic_set(&fc->fb.pending, 2);
	file_issue(&fc->x, nowait);
	return atomic_dec_and_test(&fc->fb.pending) ? 0 : -EIOCBQUEUED;
}

/**
 * p2pnvme_file_cmd_result - the answer of a transfer that ended
 * @fc: the transfer
 * @path: out: enum p2pnvme_path, set when it was checked
 * @zero_len: out: struct p2pnvme_file_io's @zero_len (placeholders)
 *
 * Return: the bytes moved (a read is short at the end of the file), or
 * the -errno it ended with.
 */
long p2pnvme_file_cmd_result(const struct p2pnvme_file_cmd *fc, u32 *path, u64 *zero_len)
{
	*path = fc->io.path;
	*zero_len = fc->io.zero_len;
	return fc->x.ret;
}

/**
 * p2pnvme_file_cmd_bound - the registration a transfer's buffer id names
 * @fc: a prepared transfer
 *
 * Return: its serial, or 0 if it names none; for its issue again after
 * -EAGAIN (p2pnvme_file_cmd_prepare()'s @bound).
 */
u64 p2pnvme_file_cmd_bound(const struct p2pnvme_file_cmd *fc)
{
	return fc->x.reg ? fc->x.reg->serial : 0;
}

/**
 * p2pnvme_file_cmd_free - let go of a transfer and all it holds
 * @fc: the transfer, ended or never issued (process context)
 */
void p2pnvme_file_cmd_free(struct p2pnvme_file_cmd *fc)
{
	struct p2pnvme_file *f = fc->f;

	p2pnvme_inflight_put(f, fc->bytes);
	file_release(&fc->fb, &fc->x);
	/* what it held is let go: kept for the file's next transfer, or freed */
	spin_lock(&f->fc_lock);
	if (f->fc_nfree < FILE_CMD_CACHE) {
		fc->next_free = f->fc_free;
		f->fc_free = fc;
		f->fc_nfree++;
		fc = NULL;
	}
	spin_unlock(&f->fc_lock);
	kfree(fc);
}

/**
 * p2pnvme_file_cmd_cache_free - free the ended transfers an open file kept
 * @f: the file, released: no transfer of it is left
 */
void p2pnvme_file_cmd_cache_free(struct p2pnvme_file *f)
{
	struct p2pnvme_file_cmd *fc;

	while ((fc = f->fc_free)) {
		f->fc_free = fc->next_free;
		kfree(fc);
	}
	f->fc_nfree = 0;
}
#endif /* P2P_HAVE_URING_CMD */
