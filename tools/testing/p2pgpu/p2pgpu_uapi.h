/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * p2pgpu: the bench's GPU-like dma-buf exporter (never installed), shared
 * by the module and tools/tests/p2pgpu-test.c. See p2pgpu.c.
 */
#ifndef P2PGPU_UAPI_H
#define P2PGPU_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* how the exported dma-buf behaves: whose driver it imitates */
#define P2PGPU_NVIDIA	1	/* nv-dmabuf.c: static, page-less, never moves */
#define P2PGPU_AMDGPU	2	/* amdgpu_dma_buf.c: dynamic, VRAM or GTT */
#define P2PGPU_XE	3	/* xe_dma_buf.c: dynamic, VRAM or TT */

/*
 * xe's pin before 7.x (6.12's xe_dma_buf_pin()): always migrate to TT; on a
 * kernel before 7.x amdgpu's and xe's pins are 6.12's with or without it
 */
#define P2PGPU_EXPORT_F_XE_PIN_TT	0x1
/*
 * amdgpu only: moved to host memory when the function is unbound, the
 * importers told first, as xe does (xe_bo_pci_dev_remove_all()); without
 * it an amdgpu buffer stays in VRAM and nobody is told, as amdgpu's remove
 * (amdgpu_pci_remove() -> amdgpu_device_fini_hw()) evicts nothing
 */
#define P2PGPU_EXPORT_F_EVICT_AT_UNBIND	0x2
/*
 * nvidia only: the chipset is one NVIDIA's RM flags for P2P
 * (NV_FLAG_PCI_P2P_UNSUPPORTED_CHIPSET): attach refuses an importer with
 * no upstream bridge in common with the GPU (nv_pci_has_common_pci_switch())
 * with -ENOTSUPP; without the flag NVIDIA's attach checks no topology
 */
#define P2PGPU_EXPORT_F_NV_UNSUPPORTED_CHIPSET	0x4
/*
 * amdgpu and xe only, and neither driver's code: attach leaves the
 * importer's peer2peer as it asked, without pci_p2pdma_distance(), so a
 * peer2peer map puts the buffer in VRAM whatever the topology (a dynamic
 * exporter that never asks; the bench's way to move a registered buffer
 * into a BAR the kernel refuses)
 */
#define P2PGPU_EXPORT_F_NO_DISTANCE_CHECK	0x8
/*
 * amdgpu and xe only: the shrinker may evict it (TTM's and xe's shrinkers
 * take any unpinned BO; here only those exported with this flag, so that
 * the other tests' buffers stay where those tests put them)
 */
#define P2PGPU_EXPORT_F_SHRINKABLE		0x10
/*
 * xe only: the BO lives in VRAM the CPU cannot see (a small BAR, no
 * resizable BAR; a BO created without
 * DRM_XE_GEM_CREATE_FLAG_NEEDS_VISIBLE_VRAM). The bench keeps its bytes in
 * its BAR all the same, but a peer2peer map of it in VRAM is refused as
 * xe_ttm_vram_mgr_alloc_sgt() refuses it: -EOPNOTSUPP
 * (vres->used_visible_size < size), after the validate that put it there.
 * Maps for importers without peer2peer migrate it to TT and go.
 */
#define P2PGPU_EXPORT_F_XE_INVISIBLE		0x20
/*
 * xe only: the first map that has to move the buffer, after the export and
 * after each move of it to host memory, finds a task work queued for the
 * mapping task (TIF_NOTIFY_SIGNAL set, as io_uring's task_work_add(...,
 * TWA_SIGNAL) sets it when a completion is due), so that signal_pending()
 * holds and xe's interruptible validate answers -ERESTARTSYS; the task
 * work runs on the way back to userspace (a syscall restarts). Every xe
 * map that moves the buffer is interruptible, flag or not (a real signal).
 */
#define P2PGPU_EXPORT_F_XE_TASK_WORK		0x40
/*
 * nvidia only: the buffer is in the GPU's CPU-coherent memory, as on GH200
 * and GB200, whose HBM the CPU reaches over NVLink-C2C and NVIDIA's driver
 * onlines as a NUMA node without CPUs: pages of the first node with memory
 * and no CPUs (-ENODEV when the machine has none), zeroed, mapped for each
 * importer as nv_dma_buf_map_pages() maps them (struct pages, split at the
 * importer's maximum segment, dma_map_sg_attrs(..., DMA_BIDIRECTIONAL,
 * DMA_ATTR_SKIP_CPU_SYNC)), never moved. Not imitated: the C2C link itself
 * (the bench's node is ordinary guest RAM) and the BAR1 mapping NVIDIA
 * gives its MAPPING_TYPE_FORCE_PCIE exports of the same memory.
 */
#define P2PGPU_EXPORT_F_NV_COHERENT		0x80

/* where a buffer's bytes are */
#define P2PGPU_WHERE_BAR	1	/* "VRAM": the BAR, at @bar_off */
#define P2PGPU_WHERE_HOST	2	/* "GTT"/"TT": host pages */
#define P2PGPU_WHERE_COHERENT	3	/* coherent HBM: pages of a node without CPUs */

/**
 * struct p2pgpu_export - P2PGPU_IOC_EXPORT
 * @personality: P2PGPU_NVIDIA, P2PGPU_AMDGPU or P2PGPU_XE
 * @flags: P2PGPU_EXPORT_F_*
 * @size: bytes, a non-zero multiple of the page size; zeroed BAR memory
 *	  (zeroed pages with P2PGPU_EXPORT_F_NV_COHERENT)
 * @fd: out: the dma-buf (O_RDWR, O_CLOEXEC)
 * @where: out: P2PGPU_WHERE_BAR (P2PGPU_WHERE_COHERENT with
 *	   P2PGPU_EXPORT_F_NV_COHERENT)
 * @bar_off: out: its offset in the BAR (with P2PGPU_WHERE_COHERENT, the
 *	     NUMA node its pages are on)
 */
struct p2pgpu_export {
	__u32 personality;
	__u32 flags;
	__u64 size;
	__s32 fd;
	__u32 where;
	__u64 bar_off;
};

/**
 * struct p2pgpu_buf - the other ioctls, on a dma-buf this module exported
 * @fd: the dma-buf
 * @where: out: P2PGPU_WHERE_* after the call
 * @bar_off: out: with P2PGPU_WHERE_BAR, the offset in the BAR; with
 *	     P2PGPU_WHERE_COHERENT, the NUMA node of its pages
 * @off: P2PGPU_IOC_READ, P2PGPU_IOC_FILL: byte offset into the buffer
 * @len: P2PGPU_IOC_READ (at most 4 MiB), P2PGPU_IOC_FILL: bytes
 * @arg: P2PGPU_IOC_READ: user address to copy to; P2PGPU_IOC_FILL: the byte;
 *	 P2PGPU_IOC_EVICT: 0, P2PGPU_EVICT_STAY or P2PGPU_EVICT_ALLOW
 * @pins: out: pins held by importers
 * @moves: out: moves so far (evictions, and moves back at a map)
 * @attachments: out: importers attached
 * @reserved: 0
 * @interrupted: out: maps answered -ERESTARTSYS (xe: a signal or a task
 *		 work pending when the map had to move the buffer)
 * @locked_attaches: out: attaches that took the reservation lock (amdgpu's
 *		     attach does, amdgpu_vm_bo_update_shared())
 *
 * @bar_off is where its first VRAM block is: a buffer in VRAM is in blocks
 * (P2PGPU_IOC_LAYOUT).
 */
struct p2pgpu_buf {
	__s32 fd;
	__u32 where;
	__u64 bar_off;
	__u64 off;
	__u64 len;
	__u64 arg;
	__u32 pins;
	__u32 moves;
	__u32 attachments;
	__u32 reserved;
	__u32 interrupted;
	__u32 locked_attaches;
};

#define P2PGPU_IOC_MAGIC	0xBA
#define P2PGPU_IOC_EXPORT	_IOWR(P2PGPU_IOC_MAGIC, 0x01, struct p2pgpu_export)
/* where the buffer is now */
#define P2PGPU_IOC_WHERE	_IOWR(P2PGPU_IOC_MAGIC, 0x02, struct p2pgpu_buf)
/*
 * evict to host pages as TTM does under VRAM pressure (not nvidia, not
 * pinned); with @arg P2PGPU_EVICT_STAY the pressure lasts: maps keep it in
 * host memory (GTT fallback) until an EVICT with P2PGPU_EVICT_ALLOW (which
 * moves nothing itself). The copy runs behind a KERNEL fence for 200 ms;
 * with P2PGPU_EVICT_SLOW for 2 s (the copy engine busy), so that a map
 * moving it back waits that long (interruptibly on xe).
 */
#define P2PGPU_EVICT_STAY	1
#define P2PGPU_EVICT_ALLOW	2
#define P2PGPU_EVICT_SLOW	3
#define P2PGPU_IOC_EVICT	_IOWR(P2PGPU_IOC_MAGIC, 0x03, struct p2pgpu_buf)
/* the CPU's view of the bytes, wherever they are (after a move's copy) */
#define P2PGPU_IOC_READ		_IOWR(P2PGPU_IOC_MAGIC, 0x04, struct p2pgpu_buf)
#define P2PGPU_IOC_FILL		_IOWR(P2PGPU_IOC_MAGIC, 0x05, struct p2pgpu_buf)
/*
 * a static importer (dma_buf_attach(), then a mapping) of this PCI
 * function, held until P2PGPU_IOC_STATIC_DETACH or the file's close: what
 * an RDMA NIC or rocm-xio's first module did
 */
#define P2PGPU_IOC_STATIC_ATTACH _IOWR(P2PGPU_IOC_MAGIC, 0x06, struct p2pgpu_buf)
#define P2PGPU_IOC_STATIC_DETACH _IOWR(P2PGPU_IOC_MAGIC, 0x07, struct p2pgpu_buf)

/**
 * struct p2pgpu_import - P2PGPU_IOC_IMPORT: this function imports a dma-buf
 *	(any exporter's: p2pbar's, this module's) as a GPU driver does
 * @fd: the dma-buf
 * @flags: P2PGPU_IMPORT_F_DYNAMIC: amdgpu's import
 *	   (amdgpu_dma_buf_create_obj(): dma_buf_dynamic_attach() with
 *	   allow_peer2peer and a move_notify that unmaps); without it a
 *	   static importer, dma_buf_attach() then a mapping (what NVIDIA's
 *	   and older importers do)
 * @nents: out: DMA segments of the mapping
 * @invalidated: out: times the exporter invalidated the mapping
 * @dma_addr: out: the first segment's DMA address (0 once invalidated)
 * @dma_len: out: the mapping's bytes
 *
 * Held until P2PGPU_IOC_IMPORT_RELEASE (same @fd) or the file's close. The
 * errno is the exporter's (attach, or map); the log says what it said.
 */
struct p2pgpu_import {
	__s32 fd;
	__u32 flags;
	__u32 nents;
	__u32 invalidated;
	__u64 dma_addr;
	__u64 dma_len;
};

#define P2PGPU_IMPORT_F_DYNAMIC	0x1

#define P2PGPU_IOC_IMPORT		_IOWR(P2PGPU_IOC_MAGIC, 0x08, struct p2pgpu_import)
#define P2PGPU_IOC_IMPORT_RELEASE	_IOWR(P2PGPU_IOC_MAGIC, 0x09, struct p2pgpu_import)

/**
 * struct p2pgpu_shrink - P2PGPU_IOC_SHRINK: run the shrinker now, in the
 *	context of direct reclaim (lockdep's fs_reclaim held, no reclaim
 *	below it, as __perform_reclaim() has it), through the same code as
 *	the shrinker the kernel calls (drop_caches, kswapd, direct reclaim)
 * @flags: P2PGPU_SHRINK_WAIT: a pass that may wait for a buffer's fences
 *	   after its importers were told (kswapd's, as xe's shrinker waits
 *	   there: ttm_bo_shrink_avoid_wait() false); without it a no-wait pass
 *	   (direct reclaim's), which skips a buffer whose fences are not all
 *	   signalled (ttm_bo_shrink_suitable())
 * @reserved: 0
 * @nr_to_scan: pages to scan, 0 for all
 * @scanned: out: pages of VRAM buffers this call looked at
 * @evicted_pages: out: pages this call evicted from VRAM to host memory
 *
 * Out, totals of every pass since the module was loaded (this ioctl's and
 * the kernel's):
 * @passes: shrinker passes run (a pass that found the buffer list busy
 *	    runs nothing: not counted)
 * @evicted: buffers evicted
 * @skipped_busy: buffers a no-wait pass skipped because an importer's fence
 *		  was not signalled (I/O in flight, fenced)
 * @skipped_moving: ... because the exporter's own copy fence was not
 * @skipped_locked: buffers whose reservation lock the trylock did not get
 * @skipped_nomem: evictions given up: no host pages without reclaim
 * @invalidations: times the importers of a buffer were told (the
 *		   invalidation callbacks, all of one buffer's, once)
 * @inval_slept: of those, the times the callbacks slept (the task blocked:
 *		 an importer waited inside them, in reclaim)
 * @inval_max_ns: the longest of those calls
 * @waited_importer: waits after the callbacks (wait passes) that found an
 *		     importer's fence not signalled: the exporter waited for
 *		     the importer's I/O on its fence
 * @wait_max_ns: the longest of those waits
 */
struct p2pgpu_shrink {
	__u32 flags;
	__u32 reserved;
	__u64 nr_to_scan;
	__u64 scanned;
	__u64 evicted_pages;
	__u64 passes;
	__u64 evicted;
	__u64 skipped_busy;
	__u64 skipped_moving;
	__u64 skipped_locked;
	__u64 skipped_nomem;
	__u64 invalidations;
	__u64 inval_slept;
	__u64 inval_max_ns;
	__u64 waited_importer;
	__u64 wait_max_ns;
};

#define P2PGPU_SHRINK_WAIT	0x1

#define P2PGPU_IOC_SHRINK		_IOWR(P2PGPU_IOC_MAGIC, 0x0a, struct p2pgpu_shrink)

/**
 * struct p2pgpu_block - one VRAM block of a buffer: a drm_buddy block
 *	(amdgpu, xe: one entry of their mappings each) or a range (nvidia:
 *	split at the importer's maximum segment in its mappings)
 * @off: where it starts in the buffer
 * @bar_off: where it is in the BAR
 * @len: bytes
 */
struct p2pgpu_block {
	__u64 off;
	__u64 bar_off;
	__u64 len;
};

/**
 * struct p2pgpu_layout - P2PGPU_IOC_LAYOUT: where a buffer's VRAM blocks are
 * @fd: the dma-buf
 * @nblocks: in: room at @blocks; out: the buffer's blocks (0 in host
 *	     memory), of which the first min(in, out) were written
 * @blocks: user address of struct p2pgpu_block[@nblocks], in buffer order
 * @where: out: P2PGPU_WHERE_*
 * @reserved: 0
 *
 * amdgpu and xe allocate blocks of mixed sizes (2 MiB, 4 KiB, 64 KiB,
 * 1 MiB, 8 KiB, 256 KiB in turn, smaller where VRAM has no such block
 * free), each naturally aligned, from the top of the BAR down, so that no
 * two blocks are one run in buffer order; nvidia, ranges of up to 2 MiB.
 */
struct p2pgpu_layout {
	__s32 fd;
	__u32 nblocks;
	__u64 blocks;
	__u32 where;
	__u32 reserved;
};

#define P2PGPU_IOC_LAYOUT		_IOWR(P2PGPU_IOC_MAGIC, 0x0b, struct p2pgpu_layout)

/**
 * struct p2pgpu_job - P2PGPU_IOC_JOB: a GPU job that writes the buffer,
 *	published as GPU drivers publish their jobs' fences in an exported
 *	BO's reservation object (implicit sync), signalled once it wrote
 * @fd: the dma-buf
 * @usage: P2PGPU_JOB_WRITE (a shader or copy writing it: the fence as
 *	   DMA_RESV_USAGE_WRITE) or P2PGPU_JOB_KERNEL (a move's copy:
 *	   DMA_RESV_USAGE_KERNEL, which every importer waits for)
 * @off: where it writes, in the buffer
 * @len: bytes
 * @byte: what it writes there (0 to 255)
 * @delay_ms: when, after the call (at most 10000): the fence stays
 *	      unsignalled until then
 *
 * The job syncs to the fences already there (it starts after them); a
 * move of the buffer waits for it, as for every fence.
 */
struct p2pgpu_job {
	__s32 fd;
	__u32 usage;
	__u64 off;
	__u64 len;
	__u32 byte;
	__u32 delay_ms;
};

#define P2PGPU_JOB_WRITE	1
#define P2PGPU_JOB_KERNEL	2

#define P2PGPU_IOC_JOB			_IOW(P2PGPU_IOC_MAGIC, 0x0c, struct p2pgpu_job)

#endif /* P2PGPU_UAPI_H */
