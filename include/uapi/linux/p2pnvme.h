/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * p2pnvme: an NVMe controller driven by the P2PDMA suite, userspace interface.
 *
 * Every ioctl argument starts with argsz and flags; unknown flags, non-zero
 * reserved fields and an argsz short of the first version are rejected
 * with -EINVAL before any command reaches the controller. Extension
 * follows <linux/p2pbar.h>: command numbers without a size, structures
 * that grow at the end, an older shorter structure read with its missing
 * members zero, a larger argsz accepted when the unknown tail is zero
 * (-E2BIG otherwise).
 * Structures have no implicit padding and one layout on 32- and 64-bit.
 */
#ifndef _UAPI_LINUX_P2PNVME_H
#define _UAPI_LINUX_P2PNVME_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* ioctl code 0xB9, numbers 0x20-0x3F (p2pbar has 0x00-0x1F): free in 7.2's ioctl-number.rst */
#define P2PNVME_IOC_MAGIC	0xB9

/**
 * struct p2pnvme_info - P2PNVME_IOC_INFO: the controller and its namespace
 * @argsz: sizeof(struct p2pnvme_info)
 * @flags: in: 0; out: P2PNVME_INFO_F_*
 * @nsid: namespace the I/O ioctls address (the first active one)
 * @lba_shift: log2 of its LBA size
 * @nlb: its size in LBAs
 * @max_xfer: bytes one command moves at most (MDTS, capped by the driver)
 * @nr_io_queues: I/O queue pairs in use
 * @queue_depth: commands one I/O queue holds at once
 * @reserved: must be zero
 * @serial: serial number, space padded, not NUL terminated
 * @model: model number, space padded, not NUL terminated
 * @reserved2: must be zero (the structure has the same size, 104 bytes, on
 *	       32- and 64-bit ABIs)
 */
struct p2pnvme_info {
	__u32 argsz;
	__u32 flags;
#define P2PNVME_INFO_F_SGL	(1U << 0)	/* controller takes SGLs for I/O */
#define P2PNVME_INFO_F_POLLED	(1U << 1)	/* completions polled, no MSI-X */
	__u32 nsid;
	__u32 lba_shift;
	__u64 nlb;
	__u32 max_xfer;
	__u32 nr_io_queues;
	__u32 queue_depth;
	__u32 reserved;
	char serial[20];
	char model[40];
	__u32 reserved2;
};

enum p2pnvme_op {
	P2PNVME_OP_READ		= 0,	/* namespace -> buffer */
	P2PNVME_OP_WRITE	= 1,	/* buffer -> namespace */
	P2PNVME_OP_FLUSH	= 2,	/* no buffer, no range */
	P2PNVME_OP_WRITE_ZEROES	= 3,	/* no buffer */
};

/* Which way the data went (struct p2pnvme_io.path). */
enum p2pnvme_path {
	P2PNVME_PATH_NONE	= 0,	/* no data (flush, write zeroes) */
	P2PNVME_PATH_HOST	= 1,	/* ordinary host memory */
	P2PNVME_PATH_P2P	= 2,	/* controller DMA straight to/from p2pmem */
	P2PNVME_PATH_BOUNCE	= 3,	/* p2pmem through a host bounce buffer */
	P2PNVME_PATH_DMABUF	= 4,	/* to an imported dma-buf in a device's BAR */
	P2PNVME_PATH_DMABUF_HOST = 5,	/* to an imported dma-buf in host memory */
	/*
	 * to an imported dma-buf in device memory the CPU reaches coherently
	 * (pages on a NUMA node without CPUs: GH200/GB200 HBM over C2C; or
	 * MEMORY_DEVICE_COHERENT pages): the CPU's memory system, not P2P
	 */
	P2PNVME_PATH_DMABUF_COHERENT = 6,
};

/**
 * struct p2pnvme_io - P2PNVME_IOC_IO: one transfer, split by MDTS
 * @argsz: sizeof(struct p2pnvme_io)
 * @flags: P2PNVME_IO_F_*
 * @op: enum p2pnvme_op
 * @result: out: 0 or the transfer's -errno (what the ioctl returns for
 *	    P2PNVME_IOC_IO; per entry for P2PNVME_IOC_SUBMIT). The ioctls
 *	    ignore @result, @path and @status on input (a struct may be used
 *	    again as it came back); through io_uring they must be zero
 * @slba: first LBA
 * @len: bytes, a non-zero multiple of the LBA size, at most
 *	 P2PNVME_IO_MAX_LEN
 * @addr: user address of the buffer, 4-byte aligned: host memory or a
 *	  mapping of p2pmem (/dev/p2pbarN, the kernel's p2pmem/allocate);
 *	  with P2PNVME_IO_F_DMABUF the byte offset into the dma-buf; with
 *	  P2PNVME_IO_F_REGISTERED the byte offset into the registered buffer
 * @path: out: enum p2pnvme_path
 * @status: out: NVMe status (SCT << 8 | SC, without the CRD, More and DNR
 *	    bits) of a failed command (0x371, host aborted, when a reset or
 *	    removal cancelled it)
 * @dmabuf_fd: with P2PNVME_IO_F_DMABUF, a dma-buf file descriptor (p2pmem
 *	       exported by P2PBAR_IOC_EXPORT, GPU memory, udmabuf, ...);
 *	       otherwise 0
 * @buf_id: with P2PNVME_IO_F_REGISTERED (instead of @dmabuf_fd), the id
 *	    P2PNVME_IOC_BUF_REGISTER returned on this file (-ENOENT if none;
 *	    -EINVAL for a range past its end, -ENODEV once its exporter
 *	    revoked it, -EBADF for a read into a dma-buf registered from a
 *	    read-only fd)
 * @reserved: must be zero
 *
 * P2PNVME_IO_F_REQUIRE_P2P: the data must move between the controller and
 * a device's memory peer to peer, never through the CPU's memory system
 * (host memory, or device memory the CPU reaches coherently): a transfer
 * that would is refused with -EREMOTEIO (what P2PNVME_IO_F_NO_BOUNCE
 * answers when the topology refuses P2P) before any command is sent,
 * counted as refused. That is host memory at @addr or a registered host
 * buffer, p2pmem the controller cannot reach (no bounce: implies
 * P2PNVME_IO_F_NO_BOUNCE; with P2PNVME_IO_F_BOUNCE -EINVAL), and a dma-buf
 * whose mapping, checked at every transfer, is host memory (path
 * P2PNVME_PATH_DMABUF_HOST: a GPU buffer pinned or evicted to GTT/TT,
 * udmabuf) or CPU-coherent device memory (P2PNVME_PATH_DMABUF_COHERENT:
 * GH200's HBM, which the controller reaches through the CPU's memory
 * system as it reaches host memory).
 */
struct p2pnvme_io {
	__u32 argsz;
	__u32 flags;
#define P2PNVME_IO_F_NO_BOUNCE	(1U << 0)	/* -EREMOTEIO rather than bounce */
#define P2PNVME_IO_F_BOUNCE	(1U << 1)	/* bounce even if P2P would work */
#define P2PNVME_IO_F_PRP	(1U << 2)	/* describe data with PRPs ... */
#define P2PNVME_IO_F_SGL	(1U << 3)	/* ... or SGLs (default: SGL if supported) */
#define P2PNVME_IO_F_DMABUF	(1U << 4)	/* the buffer is dmabuf_fd at offset addr */
#define P2PNVME_IO_F_REGISTERED	(1U << 5)	/* the buffer is buf_id at offset addr */
#define P2PNVME_IO_F_REQUIRE_P2P (1U << 6)	/* -EREMOTEIO rather than host memory */
	__u32 op;
	__s32 result;
	__u64 slba;
	__u64 len;
	__u64 addr;
	__u32 path;
	__u32 status;
	union {
		__s32 dmabuf_fd;
		__u32 buf_id;
	};
	__u32 reserved;
};

#define P2PNVME_IO_MAX_LEN	(64U << 20)

/**
 * struct p2pnvme_submit - P2PNVME_IOC_SUBMIT: many transfers in flight at once
 * @argsz: sizeof(struct p2pnvme_submit)
 * @flags: must be zero
 * @nr: entries at @ios, 1 .. P2PNVME_SUBMIT_MAX
 * @failed: out: index of the entry that made the batch fail before
 *	    anything was submitted (bad entry, bad buffer, refused topology);
 *	    @nr otherwise; ignored on input. Interrupted by a signal before
 *	    anything was submitted, the call writes nothing back and is
 *	    restarted (or fails with EINTR) as any system call
 * @ios: user address of @nr struct p2pnvme_io, each with argsz exactly
 *	 sizeof(struct p2pnvme_io); @result, @path and @status are written
 *	 back for every entry
 *
 * Every entry is checked and its buffer pinned and mapped before the first
 * command is submitted. Entries are spread over the I/O queues and may
 * complete in any order (a flush orders nothing). The ioctl returns when
 * all are done: 0, or the -errno of the first failed entry.
 */
struct p2pnvme_submit {
	__u32 argsz;
	__u32 flags;
	__u32 nr;
	__u32 failed;
	__u64 ios;
};

#define P2PNVME_SUBMIT_MAX	256

/**
 * struct p2pnvme_buf_reg - P2PNVME_IOC_BUF_REGISTER: a buffer pinned and
 *	mapped for the controller once, for any number of transfers
 * @argsz: sizeof(struct p2pnvme_buf_reg)
 * @flags: P2PNVME_BUF_F_*
 * @addr: host memory: its user address, 4-byte aligned, writable (pinned
 *	  for as long as it is registered and charged to RLIMIT_MEMLOCK
 *	  unless the caller has CAP_IPC_LOCK); with P2PNVME_BUF_F_DMABUF the
 *	  byte offset into the dma-buf, 4-byte aligned
 * @len: bytes, 1 .. P2PNVME_BUF_MAX_LEN
 * @dmabuf_fd: with P2PNVME_BUF_F_DMABUF, a dma-buf file descriptor (p2pmem
 *	       exported by P2PBAR_IOC_EXPORT, GPU memory, udmabuf, ...), which
 *	       need not stay open; otherwise 0
 * @id: in: 0; out: the buffer's id, for P2PNVME_IO_F_REGISTERED (on this
 *	open file only, the lowest free one)
 * @path: out (ignored on input; from the structure's second version,
 *	  argsz 56: a caller of the first, argsz 32, ending at @id, gets
 *	  neither @path nor @owner): where the buffer is at registration,
 *	  P2PNVME_PATH_HOST, P2PNVME_PATH_DMABUF (a PCI function's BAR),
 *	  P2PNVME_PATH_DMABUF_HOST (host memory) or
 *	  P2PNVME_PATH_DMABUF_COHERENT (CPU-coherent device memory); a
 *	  dma-buf's exporter may move it later (the transfers' @path say
 *	  where each went)
 * @owner: out (ignored on input; second version, as @path): with
 *	   P2PNVME_PATH_DMABUF, the PCI name of the function whose BAR holds
 *	   the buffer ("0000:05:00.0"), NUL terminated; otherwise empty
 *
 * P2PNVME_BUF_F_REQUIRE_P2P (with P2PNVME_BUF_F_DMABUF only, -EINVAL
 * otherwise): the buffer must stay in a PCI function's BAR, reached peer
 * to peer. A dma-buf whose mapping is host memory, or CPU-coherent device
 * memory (which the controller reaches through the CPU's memory system as
 * it reaches host memory), is refused with -EREMOTEIO, at registration and
 * at every later transfer after a move put it there (an eviction to
 * GTT/TT); no byte moves. Without it, such transfers go on
 * (P2PNVME_PATH_DMABUF_HOST, P2PNVME_PATH_DMABUF_COHERENT).
 * P2PNVME_IO_F_REQUIRE_P2P asks the same of one transfer.
 *
 * A transfer that names a registered buffer pins, maps and decides nothing:
 * its PRPs or SGLs come from the addresses taken here. A dma-buf is attached
 * as a dynamic importer and mapped once (after the exporter's kernel
 * fences); when its exporter moves or revokes it, the commands at the
 * controller finish (or are cancelled at their timeout) before the exporter
 * hears back; after a move the next transfer maps it where it went, after
 * a revocation the buffer's later transfers fail with -ENODEV: register
 * it again. p2pmem is registered as a dma-buf: a mapping of it is refused
 * with -EREMOTEIO (a long-term pin would hold up the provider's removal).
 * Registered buffers are never bounced. Unregistering and closing the file
 * release everything, removing the controller unmaps everything; transfers
 * already under way keep their buffer until they end. A buffer belongs to
 * the open file: whoever holds the file (a child after fork(), a receiver
 * of SCM_RIGHTS) can move data into and out of it, as with io_uring's own
 * registered buffers.
 *
 * Return: 0; -EINVAL (bad fields, zero or too long, a dma-buf range past its
 * end, a dma-buf whose mapping is not in whole 4 KiB pages inside the
 * range), -EBADF (not a dma-buf), -EFAULT/-ENOMEM and the errors of
 * pinning, -EREMOTEIO (the range holds p2pmem), -ENOMEM (RLIMIT_MEMLOCK),
 * -ENOBUFS (host memory the DMA layer bounces through swiotlb, beyond the
 * controller's max_bounced_reg_mb),
 * -ENOSPC (P2PNVME_BUF_MAX buffers on the file), -ENODEV (controller gone;
 * the exporter's device unbound, for an exporter that cannot move the
 * buffer: see Documentation/dmabuf.rst),
 * -EINTR (a signal while a reset was waited out), -ETIMEDOUT (the exporter's
 * fences did not signal within io_timeout_ms), -EOPNOTSUPP (no dma-buf
 * support; a mapping that needs CPU syncs p2pnvme cannot do: a dma-buf of
 * host memory under swiotlb or on a non-coherent device, host memory merged
 * by an IOMMU on such a device), or what the exporter says (-EREMOTEIO: the
 * controller cannot reach the dma-buf's memory, -ENODEV: revoked), and
 * -EREMOTEIO for host or CPU-coherent device memory with
 * P2PNVME_BUF_F_REQUIRE_P2P.
 */
struct p2pnvme_buf_reg {
	__u32 argsz;
	__u32 flags;
#define P2PNVME_BUF_F_DMABUF	(1U << 0)	/* dmabuf_fd at offset addr */
#define P2PNVME_BUF_F_REQUIRE_P2P (1U << 1)	/* -EREMOTEIO rather than host memory */
	__u64 addr;
	__u64 len;
	__s32 dmabuf_fd;
	__u32 id;
	__u32 path;
	char owner[20];
};

#define P2PNVME_BUF_MAX		1024
#define P2PNVME_BUF_MAX_LEN	(1ULL << 30)

/**
 * struct p2pnvme_buf_unreg - P2PNVME_IOC_BUF_UNREGISTER
 * @argsz: sizeof(struct p2pnvme_buf_unreg)
 * @flags: must be zero
 * @id: what P2PNVME_IOC_BUF_REGISTER returned
 * @reserved: must be zero
 *
 * Return: 0, -EINVAL (bad fields), -ENOENT (no such buffer on this file).
 */
struct p2pnvme_buf_unreg {
	__u32 argsz;
	__u32 flags;
	__u32 id;
	__u32 reserved;
};

/**
 * struct p2pnvme_file_io - one transfer of P2PNVME_IOC_FILE_SUBMIT: a byte
 *	range of a regular file on this controller's disk, read into or
 *	written from memory, through the filesystem's own direct I/O
 * @argsz: sizeof(struct p2pnvme_file_io)
 * @flags: P2PNVME_FILE_F_*
 * @op: P2PNVME_OP_READ (file -> memory) or P2PNVME_OP_WRITE (memory -> file)
 * @fd: a file descriptor of the caller's, open for reading (a read) or
 *	writing (a write), else -EBADF: a regular file on the filesystem of
 *	this controller's disk (/dev/p2pnvmeNn1 or one of its partitions;
 *	module parameter disk=1), else -EXDEV. Its own open mode and flags
 *	decide, as for pread()/pwrite() with O_DIRECT: O_APPEND appends
 *	whatever @offset says, O_DSYNC makes the write durable; a write to
 *	an active swap file is -ETXTBSY (a read goes on, as pread()'s)
 * @offset: file offset; with @len a multiple of the file's direct I/O
 *	    offset alignment (statx() STATX_DIOALIGN: stx_dio_offset_align,
 *	    for reads stx_dio_read_offset_align where the kernel reports one),
 *	    else -EINVAL; a file without direct I/O (alignment 0) is
 *	    -EOPNOTSUPP
 * @len: bytes, 1 .. P2PNVME_FILE_MAX_LEN
 * @addr: user address of the memory, host memory or a mapping of p2pmem
 *	  (/dev/p2pbarN), aligned to stx_dio_mem_align; with
 *	  P2PNVME_FILE_F_REGISTERED the byte offset into the registered
 *	  buffer @buf_id
 * @buf_id: with P2PNVME_FILE_F_REGISTERED, the id P2PNVME_IOC_BUF_REGISTER
 *	    returned on this file (host memory, a p2pbar dma-buf, or, for a
 *	    read, any other dma-buf: GPU memory, see below); else 0
 * @status: out: 0 or the transfer's -errno
 * @bytes: out: bytes moved (a read that reaches the end of the file is
 *	   short, as pread()'s)
 * @path: out: enum p2pnvme_path: P2PNVME_PATH_P2P (p2pmem at @addr),
 *	  P2PNVME_PATH_HOST (host memory, a registered host buffer),
 *	  P2PNVME_PATH_DMABUF (a registered p2pbar dma-buf; another
 *	  exporter's: P2PNVME_PATH_DMABUF, P2PNVME_PATH_DMABUF_HOST or
 *	  P2PNVME_PATH_DMABUF_COHERENT, where its mapping is); set when the
 *	  transfer was checked, whatever its @status; P2PNVME_PATH_BOUNCE
 *	  when it ended, if the filesystem moved p2pmem's or the dma-buf's
 *	  bytes through its page cache, the CPU copying them (see below),
 *	  and from the check for p2pmem or a dma-buf and an encrypted file,
 *	  whose contents the CPU en/decrypts
 * @zero_len: in: must be zero; out: a read into a dma-buf through
 *	      placeholders whose exporter has no vmap: the length of the run
 *	      of zeros that follows @bytes, which the caller must clear in its
 *	      own buffer (a GPU memset), then go on at @offset + @bytes +
 *	      @zero_len; else 0
 *
 * The ioctls ignore @status, @bytes and @path on input.
 *
 * P2PNVME_FILE_F_REQUIRE_P2P: the data must move between the controller and
 * the memory peer to peer. Host memory is refused before anything is
 * issued (-EREMOTEIO), and so is p2pmem or a dma-buf for an encrypted
 * file (fscrypt): the disk has no inline encryption, so blk-crypto's
 * fallback en/decrypts its contents with the CPU (a read's in place in the
 * memory, a write's into bounce pages); without the flag such a transfer
 * goes on, @path P2PNVME_PATH_BOUNCE. The filesystem may still take its page cache after
 * the checks, inside the call (ext4 when the file's direct I/O went away
 * meanwhile: chattr +j on a nodelalloc mount, fsverity; a write whose page
 * cache cannot be invalidated; xfs's sub-block write to a reflinked file):
 * such a transfer fails -EREMOTEIO once it ended, with its bytes moved
 * nonetheless: a read's are in the memory, a write's in the file. Without
 * the flag it succeeds with @path P2PNVME_PATH_BOUNCE. A read is judged by
 * the filesystem's own trace (ext4 clears the kiocb's IOCB_DIRECT before it
 * reads through the page cache; xfs always reads direct), a write by the
 * bytes the controller took from the memory against the bytes written; a
 * read's holes, which the filesystem zeroes with the CPU, do not count as
 * a bounce.
 *
 * A registered dma-buf that is not p2pbar's (GPU memory) has no pages the
 * block layer can take: a read goes through placeholder pages of the
 * controller's pool (module parameter file_placeholder_mb, 0: -EOPNOTSUPP),
 * which the controller's DMA never touches, its requests carrying the
 * bytes to the dma-buf's own bus addresses. Whatever the filesystem wrote
 * with the CPU instead (holes and unwritten extents read as zeros, a page
 * cache fallback) lands in the placeholders and is completed afterwards:
 * through the exporter's vmap (zeros and bytes alike; other bytes put the
 * transfer on P2PNVME_PATH_BOUNCE), or, without a vmap (NVIDIA's exporter
 * has none), the transfer stops at its first such byte: @bytes what the
 * controller carried before it, @zero_len the zeros from there; bytes that
 * are not zeros there are -EOPNOTSUPP. With P2PNVME_FILE_F_REQUIRE_P2P only
 * zeros are taken, else -EREMOTEIO, nothing copied. The pool's room is
 * -EAGAIN while other transfers hold it, -E2BIG for more than it has (a
 * batch's reads together); a buffer that keeps moving under the read,
 * which is issued again, whole, each time, -EAGAIN after 8 issues. Writes
 * from such a dma-buf are -EOPNOTSUPP (the filesystem may take its page
 * cache inside the call, with the placeholders' zeros), and so is a read of
 * an encrypted file (blk-crypto's fallback decrypts in place).
 */
struct p2pnvme_file_io {
	__u32 argsz;
	__u32 flags;
#define P2PNVME_FILE_F_REGISTERED	(1U << 0)	/* the memory is buf_id at offset addr */
#define P2PNVME_FILE_F_REQUIRE_P2P	(1U << 1)	/* -EREMOTEIO rather than host memory */
	__u32 op;
	__s32 fd;
	__u64 offset;
	__u64 len;
	__u64 addr;
	__u32 buf_id;
	__s32 status;
	__u64 bytes;
	__u32 path;
	__u32 zero_len;
};

#define P2PNVME_FILE_MAX_LEN	(64U << 20)

/*
 * P2PNVME_IOC_FILE_SUBMIT takes a struct p2pnvme_submit whose @ios points
 * at @nr (1 .. P2PNVME_SUBMIT_MAX) struct p2pnvme_file_io, each with argsz
 * exactly sizeof(struct p2pnvme_file_io); @failed as for P2PNVME_IOC_SUBMIT.
 *
 * Every entry is checked before the first is issued (an error there: the
 * ioctl returns it with @failed its index, nothing moved, nothing written
 * back but @failed): the fields, the file (open mode, a regular file on
 * this controller's disk, not an xfs realtime file, not an active swap
 * file for a write (-ETXTBSY), direct I/O and its alignment), the memory,
 * and the P2P rules: p2pmem the controller cannot
 * reach (the kernel's P2PDMA verdict) is -EREMOTEIO, and so is host memory
 * with P2PNVME_FILE_F_REQUIRE_P2P, and p2pmem for an encrypted file with
 * it; a buffer of host memory and p2pmem
 * together is -EINVAL. A registered buffer: -ENOENT (no such id), -EINVAL
 * (range past its end), -EBADF (a read into a dma-buf registered from a
 * read-only fd), -ENODEV (revoked), -EOPNOTSUPP (a dma-buf that is not
 * p2pbar's: a write from it, a read of an encrypted file into it, or any
 * read with file_placeholder_mb 0), -EAGAIN and -E2BIG (the placeholder
 * pool's room, see struct p2pnvme_file_io). Bytes
 * at user addresses count against max_inflight_mb as the LBA transfers'
 * (-E2BIG, -EAGAIN; @failed is then @nr: the batch as a whole).
 *
 * Then each entry is one asynchronous direct I/O of the file (its
 * filesystem's: dirty page cache written back first, the blocks the
 * file's for the whole I/O, holes read as zeros), all in flight at once,
 * and the ioctl returns when all are done: 0, or the -errno of the first
 * failed entry, with @status, @bytes and @path written back for every
 * entry (-EREMOTEIO: a REQUIRE_P2P entry the filesystem served through
 * its page cache after all, see struct p2pnvme_file_io). A user address
 * is pinned as for O_DIRECT (by the block layer; p2pmem a write is taken
 * from, by the command, for the transfer); a registered buffer is held
 * until its transfer ends. The file, its
 * filesystem and the memory stay referenced until then: closing the fd,
 * a lazy unmount, unregistering the buffer wait for nothing; an unbind
 * of p2pnvme fails what is in flight (-EIO).
 */

/* no size in the numbers: argsz is the one extension scheme (see the top) */
#define P2PNVME_IOC_INFO	_IO(P2PNVME_IOC_MAGIC, 0x20)	/* struct p2pnvme_info */
#define P2PNVME_IOC_IO		_IO(P2PNVME_IOC_MAGIC, 0x21)	/* struct p2pnvme_io */
#define P2PNVME_IOC_SUBMIT	_IO(P2PNVME_IOC_MAGIC, 0x22)	/* struct p2pnvme_submit */
#define P2PNVME_IOC_BUF_REGISTER   _IO(P2PNVME_IOC_MAGIC, 0x23) /* struct p2pnvme_buf_reg */
#define P2PNVME_IOC_BUF_UNREGISTER _IO(P2PNVME_IOC_MAGIC, 0x24) /* struct p2pnvme_buf_unreg */
#define P2PNVME_IOC_FILE_SUBMIT	_IO(P2PNVME_IOC_MAGIC, 0x25)	/* struct p2pnvme_submit */

/**
 * struct p2pnvme_uring_cmd - P2PNVME_URING_CMD_IO: one transfer through
 *	io_uring, in the 80-byte command area of a 128-byte SQE
 * @flags: P2PNVME_IO_F_*, as for P2PNVME_IOC_IO
 * @op: enum p2pnvme_op
 * @slba: first LBA
 * @len: bytes, as for P2PNVME_IOC_IO
 * @addr: user address, or the offset into the registered buffer
 * @dmabuf_fd: see struct p2pnvme_io
 * @buf_id: see struct p2pnvme_io
 * @rsvd1: must be zero
 * @rsvd2: must be zero
 *
 * Fixed at the command area's size, as nvme's struct nvme_uring_cmd is,
 * so that it never depends on struct p2pnvme_io growing; nothing is
 * written back (the CQE answers).
 */
struct p2pnvme_uring_cmd {
	__u32 flags;
	__u32 op;
	__u64 slba;
	__u64 len;
	__u64 addr;
	union {
		__s32 dmabuf_fd;
		__u32 buf_id;
	};
	__u32 rsvd1;
	__u64 rsvd2[5];
};

/*
 * io_uring passthrough: IORING_OP_URING_CMD on /dev/p2pnvmeN with cmd_op
 * P2PNVME_URING_CMD_IO, on a ring set up with IORING_SETUP_SQE128 (the
 * SQE's command area holds one struct p2pnvme_uring_cmd, checked as
 * P2PNVME_IOC_IO checks its request; its reserved members and the SQE's
 * ioprio, addr, len, buf_index and file_index must be zero, -EINVAL
 * otherwise).
 * The CQE's res is 0 or the -errno P2PNVME_IOC_IO would return; with
 * IORING_SETUP_CQE32 the first extra word is path | status << 16. One
 * io_uring_enter() submits many, each completes on its own. Registered
 * buffers (P2PNVME_IO_F_REGISTERED, host memory or a dma-buf) are the
 * fast way; not (yet): P2PNVME_IO_F_DMABUF (-EOPNOTSUPP: register the
 * dma-buf instead), polled controllers (poll=1: -EOPNOTSUPP).
 */
#define P2PNVME_URING_CMD_IO	_IO(P2PNVME_IOC_MAGIC, 0x30)	/* struct p2pnvme_uring_cmd */
#define P2PNVME_URING_RES2(path, status)	((__u64)(path) | (__u64)(status) << 16)
/* P2PNVME_URING_CMD_FILE_IO: struct p2pnvme_file_io's zero_len, in the extra word */
#define P2PNVME_URING_RES2_ZERO_LEN(zero_len)	((__u64)(zero_len) << 32)
#define P2PNVME_URING_RES2_GET_ZERO_LEN(res2)	((__u32)((__u64)(res2) >> 32))

/**
 * struct p2pnvme_uring_file_cmd - P2PNVME_URING_CMD_FILE_IO: one transfer of
 *	the file command through io_uring, in the 80-byte command area of a
 *	128-byte SQE
 * @flags: P2PNVME_FILE_F_*, as for struct p2pnvme_file_io
 * @op: P2PNVME_OP_READ or P2PNVME_OP_WRITE
 * @fd: the file, a descriptor of the submitter's (not an io_uring
 *	registered file), as struct p2pnvme_file_io's
 * @buf_id: with P2PNVME_FILE_F_REGISTERED, the registered buffer; else 0
 * @offset: file offset, as struct p2pnvme_file_io's
 * @len: bytes, as struct p2pnvme_file_io's
 * @addr: user address, or the offset into the registered buffer
 * @rsvd: must be zero
 *
 * The fields of struct p2pnvme_file_io that go in, fixed at the command
 * area's size as struct p2pnvme_uring_cmd; nothing is written back.
 */
struct p2pnvme_uring_file_cmd {
	__u32 flags;
	__u32 op;
	__s32 fd;
	__u32 buf_id;
	__u64 offset;
	__u64 len;
	__u64 addr;
	__u64 rsvd[5];
};

/*
 * P2PNVME_URING_CMD_FILE_IO: IORING_OP_URING_CMD on /dev/p2pnvmeN, on a ring
 * set up with IORING_SETUP_SQE128 (-EINVAL otherwise), one struct
 * p2pnvme_uring_file_cmd in the command area, the SQE's other fields as
 * for P2PNVME_URING_CMD_IO. Checked as an entry of P2PNVME_IOC_FILE_SUBMIT,
 * with the same errnos, each answered in the CQE's res at once (the extra
 * words then 0). Issued, the CQE's res is the bytes moved (a read that
 * reaches the end of the file is short) or the -errno it ended with, and
 * with IORING_SETUP_CQE32 the first extra word path | status << 16 as
 * P2PNVME_URING_CMD_IO's (status 0: the filesystem reports no NVMe
 * status; path P2PNVME_PATH_BOUNCE, and res -EREMOTEIO with
 * P2PNVME_FILE_F_REQUIRE_P2P, for a transfer the filesystem served through
 * its page cache, as struct p2pnvme_file_io says), and struct
 * p2pnvme_file_io's zero_len in its upper 32 bits
 * (P2PNVME_URING_RES2_GET_ZERO_LEN()): a read into a dma-buf without vmap
 * that needs it on a ring without IORING_SETUP_CQE32 is -EOPNOTSUPP. Not on an
 * IORING_SETUP_IOPOLL ring (-EOPNOTSUPP). A command
 * cannot be cancelled: once issued, the filesystem's direct I/O ends it
 * (the disk's timeouts and its removal bound it), and closing the ring
 * waits for that.
 */
#define P2PNVME_URING_CMD_FILE_IO _IO(P2PNVME_IOC_MAGIC, 0x31)	/* struct p2pnvme_uring_file_cmd */

#endif /* _UAPI_LINUX_P2PNVME_H */
