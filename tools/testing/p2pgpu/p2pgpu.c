// SPDX-License-Identifier: GPL-2.0
/*
 * p2pgpu: a bench-only dma-buf exporter (never installed) that hands out
 * ranges of an ivshmem BAR as dma-bufs the way the GPU drivers users have
 * do, so that p2pnvme's imports can be tested against them. The BAR plays
 * the GPU's VRAM (NVIDIA's BAR1); host pages play GTT/TT. Each export picks
 * a personality; each is written from that driver's code, whose functions
 * are named where their behaviour is copied:
 *
 * - nvidia: open-gpu-kernel-modules 595.45.04, kernel-open/nvidia/nv-dmabuf.c
 *   (nv_dma_buf_ops: attach, map_dma_buf, unmap_dma_buf, release, mmap; no
 *   pin/unpin, so a static exporter; never moves, never revoked).
 * - amdgpu: drivers/gpu/drm/amd/amdgpu/amdgpu_dma_buf.c (amdgpu_dmabuf_ops)
 *   and amdgpu_object.c (amdgpu_bo_placement_from_domain(),
 *   amdgpu_bo_move_notify()), Linux 7.2.
 * - xe: drivers/gpu/drm/xe/xe_dma_buf.c (xe_dmabuf_ops) and xe_bo.c
 *   (try_add_system(), xe_bo_move_notify()), Linux 7.2; 6.12's pin with
 *   P2PGPU_EXPORT_F_XE_PIN_TT, and on a kernel before 7.x.
 * - amdgpu's and xe's pin are 6.12's (GTT/TT, always) on a kernel before
 *   7.x: what a kernel without CONFIG_DMABUF_MOVE_NOTIFY calls at every
 *   map (P2PGPU_PIN_VRAM).
 *
 * NVIDIA's coherent memory (GH200, GB200: HBM the CPU reaches over C2C, a
 * NUMA node without CPUs) with P2PGPU_EXPORT_F_NV_COHERENT: pages of such a
 * node, mapped as nv_dma_buf_map_pages() maps them.
 *
 * Not imitated (Documentation/dmabuf.rst says why): runtime PM, XGMI, DCC,
 * CPU mmap/vmap and begin_cpu_access, the GPU's own use of the buffer,
 * VRAM-to-VRAM moves, the C2C link itself. NVIDIA's remove waits
 * for every dma-buf to be released, bounded here (nv_remove_wait). Moves
 * are TTM's as far as importers see them: the
 * importers are told (invalidation) before the move, the move waits for
 * every fence in the reservation object (the copy job syncs to them), and
 * the copy of a move at a map or of an eviction is asynchronous, behind a
 * DMA_RESV_USAGE_KERNEL fence that importers must wait for before they use
 * the new placement (ttm_bo_move_accel_cleanup()); the map returns the new
 * placement at once. xe's moves at a map are interruptible (xe_bo_validate()
 * and xe_bo_migrate() run TTM with ctx.interruptible): -ERESTARTSYS when a
 * signal, or io_uring's task work (TIF_NOTIFY_SIGNAL), is pending;
 * amdgpu_dma_buf_map()'s are not.
 *
 * VRAM is handed out as the drivers' allocators do (drm_buddy): amdgpu and
 * xe buffers in naturally aligned blocks of mixed sizes, each block one
 * entry of a mapping whatever the importer's maximum segment
 * (amdgpu_vram_mgr_alloc_sgt(), xe_ttm_vram_mgr_alloc_sgt(): up to 2 GiB);
 * nvidia ranges of up to 2 MiB, each split at the importer's maximum
 * segment (nv_dma_buf_map_pfns()). Blocks are taken from the top of the BAR
 * down, so that a buffer's blocks are never one run in buffer order.
 *
 * One instance: the first ivshmem function bound (driver_override), BAR 2,
 * /dev/p2pgpu. The function's BAR stays mapped until the last dma-buf of it
 * is released, even after an unbind. Unbinding the function: xe moves the
 * data of exported BOs out to system memory (xe_device_remove() ->
 * xe_bo_pci_dev_remove_all()), telling their importers (invalidation), and
 * later maps find no VRAM; amdgpu leaves its buffers in VRAM and tells
 * nobody, as amdgpu_pci_remove() -> amdgpu_device_fini_hw() evicts nothing
 * (it evicts with amdgpu_device_evict_resources() at suspend only;
 * P2PGPU_EXPORT_F_EVICT_AT_UNBIND plays xe's eviction for an amdgpu
 * buffer); nvidia's buffers stay where they are and nothing is revoked (no
 * revoke in nv-dmabuf.c): importers are not told, and the remove waits
 * until every nvidia dma-buf is released (nv_pci_remove_helper()).
 *
 * Memory pressure: a shrinker (registered, so drop_caches, kswapd and
 * direct reclaim call it; P2PGPU_IOC_SHRINK runs the same pass now, in
 * direct reclaim's context) evicts amdgpu and xe buffers exported with
 * P2PGPU_EXPORT_F_SHRINKABLE from VRAM to host memory, as TTM's and xe's
 * shrinkers move BOs (xe_shrinker_scan() -> xe_bo_shrink() ->
 * ttm_bo_shrink(), whose move calls xe_bo_move_notify()): the buffer list
 * and each reservation lock only trylocked (ttm_lru_walk_trylock()), no
 * allocation that may reclaim, the importers told from reclaim, and in a
 * no-wait pass (direct reclaim: ttm_bo_shrink_avoid_wait()) a buffer
 * whose fences are not all signalled is skipped (ttm_bo_shrink_suitable());
 * kswapd's pass waits for them after telling the importers. It measures
 * what a driver's shrinker relies on: that an importer's callback does not
 * block (sleep) there, and that importers with I/O in flight have fences
 * in the reservation object. It frees no host memory (it takes some): it
 * exists to call importers from reclaim, and says it freed nothing.
 *
 * It imports too (P2PGPU_IOC_IMPORT), as the GPU drivers do: a static
 * importer (dma_buf_attach()), or amdgpu's dynamic one
 * (amdgpu_dma_buf_create_obj(): dma_buf_dynamic_attach() with
 * allow_peer2peer, amdgpu_dma_buf_move_notify() unmapping).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fcntl.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/io.h>
#include <linux/kref.h>
#include <linux/log2.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/shrinker.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/swap.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <p2p_compat.h>

#include "p2pgpu_uapi.h"

#define P2PGPU_BAR		2		/* ivshmem-plain's shared memory */
#define P2PGPU_WAIT		(10 * HZ)	/* fences a move waits for */
#define P2PGPU_COPY_DELAY	msecs_to_jiffies(200)	/* an eviction's copy */
#define P2PGPU_SLOW_COPY	msecs_to_jiffies(2000)	/* P2PGPU_EVICT_SLOW's */
#define P2PGPU_MOVE_DELAY	msecs_to_jiffies(20)	/* a move's copy at a map */
#define P2PGPU_READ_MAX		(4U << 20)
#define P2PGPU_NV_RANGE		SZ_2M	/* nvidia's ranges, at most */
#define P2PGPU_MAX_SEG		SZ_2G	/* AMDGPU_MAX_SG_SEGMENT_SIZE, xe's SZ_2G */

/*
 * The sizes of an amdgpu or xe buffer's VRAM blocks, in turn (drm_buddy
 * hands out naturally aligned powers of two; a BO whose size is not a
 * multiple of 2 MiB gets blocks of any size down to 4 KiB)
 */
static const unsigned long p2pgpu_block_sizes[] = {
	SZ_2M, SZ_4K, SZ_64K, SZ_1M, SZ_8K, SZ_256K,
};

/* moves (__p2pgpu_move()) */
#define MOVE_ASYNC	0x1	/* the copy behind a KERNEL fence */
#define MOVE_INTR	0x2	/* interruptible: xe's validate and migrate */
#define MOVE_SHRINK	0x4	/* the shrinker's: no reclaim, measured */
#define MOVE_SLOW	0x8	/* the copy takes P2PGPU_SLOW_COPY */

/**
 * struct p2pgpu - the bound function
 * @kref: the misc device's and every buffer's
 * @pdev: the function, with a reference
 * @bar: BAR 2, mapped
 * @phys: its CPU physical address
 * @npages: its pages
 * @used: pages handed out (@lock)
 * @lock: protects @used
 * @misc: /dev/p2pgpu
 * @serial: numbers the buffers, for the log
 * @gone: the function is unbound: no VRAM for any buffer (@lock)
 * @bos_lock: protects @bos and @st; taken before a buffer's reservation
 *	      lock (only trylocked by the shrinker, as both are in reclaim)
 * @bos: every exported buffer not yet released
 * @shrinker: registered while the function is bound
 * @st: the shrinker's counts since load (struct p2pgpu_shrink's totals)
 */
struct p2pgpu {
	struct kref kref;
	struct pci_dev *pdev;
	void __iomem *bar;
	phys_addr_t phys;
	unsigned long npages;
	unsigned long *used;
	struct mutex lock;	/* see above */
	struct miscdevice misc;
	atomic_t serial;
	bool gone;
	struct mutex bos_lock;	/* see above */
	struct list_head bos;
	struct shrinker *shrinker;
	struct {
		u64 passes, evicted, skipped_busy, skipped_moving, skipped_locked;
		u64 skipped_nomem, invalidations, inval_slept, inval_max_ns;
		u64 waited_importer, wait_max_ns;
	} st;
};

enum p2pgpu_place {
	PLACE_BAR = P2PGPU_WHERE_BAR, PLACE_HOST = P2PGPU_WHERE_HOST,
	PLACE_COHERENT = P2PGPU_WHERE_COHERENT,
};

struct p2pgpu_fence {
	struct dma_fence base;
	spinlock_t lock;	/* the fence's */
};

/* a run of BAR pages: a VRAM block (amdgpu, xe) or range (nvidia) */
struct p2pgpu_blk {
	unsigned long page;	/* the first */
	unsigned long n;
};

/**
 * struct p2pgpu_bo - an exported buffer ("BO")
 * @gpu: its function, with a reference
 * @dmabuf: the dma-buf
 * @personality: P2PGPU_*
 * @flags: P2PGPU_EXPORT_F_*
 * @id: for the log
 * @npages: its size in pages
 * @place: where the bytes are (dmabuf->resv)
 * @blk: with PLACE_BAR, its VRAM blocks in buffer order (dmabuf->resv)
 * @nblk: how many
 * @pages: with PLACE_HOST, the host pages; with PLACE_COHERENT, the pages
 *	   of the coherent node (dmabuf->resv)
 * @nid: with PLACE_COHERENT, that node
 * @pins: importers' pins (dmabuf->resv)
 * @moves: moves so far (dmabuf->resv)
 * @copy_work: a move's copy, between @copy_blk and @copy_pages
 * @copy_fence: its fence, in dmabuf->resv as DMA_RESV_USAGE_KERNEL
 * @copy_blk: the blocks it copies from (an eviction: freed once copied) or
 *	      into (a move into VRAM: @blk)
 * @copy_nblk: how many
 * @copy_pages: the host pages it copies into (an eviction: @pages) or from
 *		(a move into VRAM: freed once copied)
 * @copy_in: a move into VRAM
 * @fence_ctx: the fence context of the copies
 * @node: on @gpu->bos (@gpu->bos_lock)
 * @no_vram: kept out of VRAM, as under lasting VRAM pressure
 *	     (P2PGPU_EVICT_STAY; dmabuf->resv)
 * @intr_armed: P2PGPU_EXPORT_F_XE_TASK_WORK: the next map that moves it
 *		finds a task work pending (dmabuf->resv)
 * @interrupted: maps answered -ERESTARTSYS (dmabuf->resv)
 * @locked_attaches: attaches that took the reservation lock (amdgpu's)
 */
struct p2pgpu_bo {
	struct p2pgpu *gpu;
	struct dma_buf *dmabuf;
	u32 personality;
	u32 flags;
	int id;
	unsigned long npages;
	enum p2pgpu_place place;
	struct p2pgpu_blk *blk;
	unsigned int nblk;
	struct page **pages;
	int nid;
	unsigned int pins;
	unsigned int moves;
	struct delayed_work copy_work;
	struct p2pgpu_fence *copy_fence;
	struct p2pgpu_blk *copy_blk;
	unsigned int copy_nblk;
	struct page **copy_pages;
	bool copy_in;
	u64 fence_ctx;
	struct list_head node;
	bool no_vram;
	bool intr_armed;
	unsigned int interrupted;
	unsigned int locked_attaches;
};

/* the static importers a file of /dev/p2pgpu holds (P2PGPU_IOC_STATIC_ATTACH) */
struct p2pgpu_static {
	struct list_head node;
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
};

/* a GPU driver's import of any dma-buf (P2PGPU_IOC_IMPORT) */
struct p2pgpu_import_buf {
	struct list_head node;
	struct p2pgpu *gpu;
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;		/* dmabuf->resv; NULL once invalidated */
	unsigned int nents;
	unsigned int invalidated;	/* dmabuf->resv */
	u64 dma_addr;
	u64 dma_len;
};

struct p2pgpu_file {
	struct p2pgpu *gpu;
	struct mutex lock;	/* protects @statics and @imports */
	struct list_head statics;
	struct list_head imports;
};

static DEFINE_MUTEX(p2pgpu_dev_lock);
static struct p2pgpu *p2pgpu_dev;	/* the bound instance (p2pgpu_dev_lock) */

static const char * const p2pgpu_names[] = {
	[P2PGPU_NVIDIA] = "nvidia", [P2PGPU_AMDGPU] = "amdgpu", [P2PGPU_XE] = "xe",
};

static void p2pgpu_free(struct kref *kref)
{
	struct p2pgpu *gpu = container_of(kref, struct p2pgpu, kref);

	pci_iounmap(gpu->pdev, gpu->bar);
	pci_release_region(gpu->pdev, P2PGPU_BAR);
	pci_disable_device(gpu->pdev);
	pci_dev_put(gpu->pdev);
	bitmap_free(gpu->used);
	kfree(gpu);
}

/*
 * The highest run of @n free BAR pages aligned to @n (drm_buddy's blocks
 * are naturally aligned), @gpu->lock held; -ENOSPC if there is none.
 */
static long bar_find_top(struct p2pgpu *gpu, unsigned long n)
{
	unsigned long start;

	if (n > gpu->npages)
		return -ENOSPC;
	for (start = (gpu->npages - n) / n * n; ; start -= n) {
		if (find_next_bit(gpu->used, start + n, start) >= start + n)
			return start;
		if (start < n)
			return -ENOSPC;
	}
}

/*
 * Cleared when freed (@used: a buffer's bytes were there), so that stale
 * bytes are never taken for new ones
 */
static void __bar_free(struct p2pgpu *gpu, const struct p2pgpu_blk *blk, unsigned int nblk,
		       bool used)
{
	unsigned int k;

	for (k = 0; used && k < nblk; k++)
		memset_io(gpu->bar + (blk[k].page << PAGE_SHIFT), 0, blk[k].n << PAGE_SHIFT);
	mutex_lock(&gpu->lock);
	for (k = 0; k < nblk; k++)
		bitmap_clear(gpu->used, blk[k].page, blk[k].n);
	mutex_unlock(&gpu->lock);
}

static void bar_free(struct p2pgpu *gpu, const struct p2pgpu_blk *blk, unsigned int nblk)
{
	__bar_free(gpu, blk, nblk, true);
}

/*
 * VRAM for @npages pages as @personality's allocator hands it out: amdgpu
 * and xe in drm_buddy blocks of p2pgpu_block_sizes[] in turn, nvidia in
 * ranges of P2PGPU_NV_RANGE, each at most the largest power of two left,
 * halved where no such block is free, taken from the top of the BAR down.
 * Return: the blocks (kvfree() them, after bar_free()), *@nblk of them;
 * ERR_PTR(-ENOSPC) when VRAM is full (or the function unbound), -ENOMEM.
 */
static struct p2pgpu_blk *bar_alloc(struct p2pgpu *gpu, u32 personality, unsigned long npages,
				    unsigned int *nblk)
{
	struct p2pgpu_blk *tmp, *blk;
	unsigned long left = npages;
	unsigned int n = 0;

	tmp = kvmalloc_array(npages, sizeof(*tmp), GFP_KERNEL);
	if (!tmp)
		return ERR_PTR(-ENOMEM);
	mutex_lock(&gpu->lock);
	while (left && !gpu->gone) {	/* unbound: no VRAM at all */
		unsigned long want = personality == P2PGPU_NVIDIA ? P2PGPU_NV_RANGE :
				     p2pgpu_block_sizes[n % ARRAY_SIZE(p2pgpu_block_sizes)];
		long first;

		want = min(max(want >> PAGE_SHIFT, 1UL), rounddown_pow_of_two(left));
		while ((first = bar_find_top(gpu, want)) < 0 && want > 1)
			want /= 2;
		if (first < 0)
			break;
		bitmap_set(gpu->used, first, want);
		tmp[n].page = first;
		tmp[n++].n = want;
		left -= want;
	}
	mutex_unlock(&gpu->lock);
	blk = left ? NULL : kvmalloc_array(n, sizeof(*blk), GFP_KERNEL);
	if (!blk) {
		__bar_free(gpu, tmp, n, false);	/* nothing was written there */
		kvfree(tmp);
		return ERR_PTR(left ? -ENOSPC : -ENOMEM);
	}
	memcpy(blk, tmp, n * sizeof(*blk));
	kvfree(tmp);
	*nblk = n;
	return blk;
}

/* where page @i of @bo is in VRAM (@bo->blk) */
static void __iomem *bar_addr(struct p2pgpu_bo *bo, unsigned long i)
{
	unsigned int k;

	for (k = 0; k < bo->nblk - 1 && i >= bo->blk[k].n; k++)
		i -= bo->blk[k].n;
	return bo->gpu->bar + ((bo->blk[k].page + i) << PAGE_SHIFT);
}

static struct page **host_alloc(unsigned long n, gfp_t gfp)
{
	struct page **pages = kvcalloc(n, sizeof(*pages), gfp);
	unsigned long i;

	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(gfp | __GFP_ZERO);
		if (!pages[i])
			goto err;
	}
	return pages;
err:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

static void host_free(struct page **pages, unsigned long n)
{
	unsigned long i;

	if (!pages)
		return;
	for (i = 0; i < n; i++)
		__free_page(pages[i]);
	kvfree(pages);
}

/*
 * The first node with memory and no CPUs, or NUMA_NO_NODE: what NVIDIA's
 * driver onlines a GH200's or GB200's HBM as (a node per GPU, more with
 * MIG), and what the bench's machine gives the gpuexp boots.
 */
static int coherent_node(void)
{
	int nid;

	for_each_node_state(nid, N_MEMORY)
		if (!node_state(nid, N_CPU))
			return nid;
	return NUMA_NO_NODE;
}

/*
 * @n zeroed pages of node @nid and no other, in physically contiguous
 * ranges of up to P2PGPU_NV_RANGE (the RM's ranges), smaller where the node
 * has no such run free, each split into pages (freed one by one,
 * host_free()). NULL when the node has not that much free.
 */
static struct page **coherent_alloc(int nid, unsigned long n)
{
	const gfp_t gfp = GFP_KERNEL | __GFP_THISNODE | __GFP_ZERO | __GFP_NOWARN;
	unsigned int order = ilog2(P2PGPU_NV_RANGE >> PAGE_SHIFT);
	struct page **pages = kvcalloc(n, sizeof(*pages), GFP_KERNEL);
	unsigned long i = 0, j;

	if (!pages)
		return NULL;
	while (i < n) {
		struct page *page;

		order = min_t(unsigned int, order, ilog2(n - i));
		page = alloc_pages_node(nid, gfp, order);
		if (!page && order) {
			order--;
			continue;
		}
		if (!page) {
			host_free(pages, i);
			return NULL;
		}
		split_page(page, order);
		for (j = 0; j < 1UL << order; j++)
			pages[i++] = page + j;
	}
	return pages;
}

/*
 * The CPU copies a move makes (the GPU's copy engine, for TTM), between
 * VRAM blocks @blk and host @pages, in buffer order: @to_host or back.
 */
static void copy_bar_host(struct p2pgpu_bo *bo, const struct p2pgpu_blk *blk, unsigned int nblk,
			  struct page **pages, bool to_host)
{
	unsigned long i = 0, j;
	unsigned int k;

	for (k = 0; k < nblk; k++) {
		for (j = 0; j < blk[k].n; j++, i++) {
			void __iomem *io = bo->gpu->bar + ((blk[k].page + j) << PAGE_SHIFT);
			void *p = kmap_local_page(pages[i]);

			if (to_host)
				memcpy_fromio(p, io, PAGE_SIZE);
			else
				memcpy_toio(io, p, PAGE_SIZE);
			kunmap_local(p);
		}
	}
}

static const char *p2pgpu_fence_driver_name(struct dma_fence *f)
{
	return KBUILD_MODNAME;
}

static const char *p2pgpu_fence_timeline_name(struct dma_fence *f)
{
	return "move";
}

#ifndef HAVE_DMA_FENCE_DRIVER_NAME
/* before 7.x a fence calls its ops for as long as it lives (as p2pnvme's) */
static void p2pgpu_fence_release(struct dma_fence *f)
{
	dma_fence_free(f);
	module_put(THIS_MODULE);
}
#endif

static const struct dma_fence_ops p2pgpu_fence_ops = {
	.get_driver_name = p2pgpu_fence_driver_name,
	.get_timeline_name = p2pgpu_fence_timeline_name,
#ifndef HAVE_DMA_FENCE_DRIVER_NAME
	.release = p2pgpu_fence_release,
#endif
};

/*
 * A move's copy, done: the bytes are where the buffer went; what they left
 * (an eviction's VRAM blocks, a move-in's host pages) goes.
 */
static void p2pgpu_copy_work(struct work_struct *work)
{
	struct p2pgpu_bo *bo = container_of(to_delayed_work(work), struct p2pgpu_bo, copy_work);
	struct p2pgpu_fence *f = bo->copy_fence;

	/* nobody touches the pages or the blocks before the fence signals */
	copy_bar_host(bo, bo->copy_blk, bo->copy_nblk, bo->copy_pages, !bo->copy_in);
	if (bo->copy_in) {
		host_free(bo->copy_pages, bo->npages);
	} else {
		bar_free(bo->gpu, bo->copy_blk, bo->copy_nblk);
		kvfree(bo->copy_blk);
	}
	bo->copy_blk = NULL;
	bo->copy_pages = NULL;
	bo->copy_fence = NULL;
	dma_fence_signal(&f->base);
	dma_fence_put(&f->base);
	dma_buf_put(bo->dmabuf);	/* taken when queued */
}

/*
 * Is an importer's fence in @bo's reservation object not signalled (its
 * DMA in flight)? The exporter's own copy fences are not counted.
 */
static bool importer_busy(struct p2pgpu_bo *bo)
{
	struct dma_resv_iter cursor;
	struct dma_fence *f;

	dma_resv_assert_held(bo->dmabuf->resv);
	dma_resv_for_each_fence(&cursor, bo->dmabuf->resv, DMA_RESV_USAGE_BOOKKEEP, f)
		if (f->context != bo->fence_ctx && !dma_fence_is_signaled(f))
			return true;
	return false;
}

/*
 * Tell the importers, for the shrinker (@bo->gpu->bos_lock held): measured,
 * since a callback that blocks here blocks reclaim. A sleep is the task
 * leaving the CPU blocked (a voluntary switch), not a preemption.
 */
static void shrink_invalidate(struct p2pgpu_bo *bo)
{
	struct p2pgpu *gpu = bo->gpu;
	unsigned long nvcsw = current->nvcsw;
	u64 t0 = ktime_get_ns(), dt;

	p2p_dma_buf_invalidate(bo->dmabuf);
	dt = ktime_get_ns() - t0;
	gpu->st.invalidations++;
	if (current->nvcsw != nvcsw) {
		gpu->st.inval_slept++;
		dev_warn_ratelimited(&gpu->pdev->dev, "%s buffer %d: an importer's invalidation slept in the shrinker (%llu us): it blocks reclaim\n",
				     p2pgpu_names[bo->personality], bo->id, div_u64(dt, 1000));
	}
	gpu->st.inval_max_ns = max(gpu->st.inval_max_ns, dt);
}

/*
 * xe's validate and migrate (MOVE_INTR) run TTM with ctx.interruptible:
 * its first wait (another BO's lock, room in VRAM, the fences) sees a
 * pending signal, or io_uring's task work for this task (TIF_NOTIFY_SIGNAL:
 * signal_pending() too), before the importers are told. With
 * P2PGPU_EXPORT_F_XE_TASK_WORK the task work is there once after each
 * move to host memory: the flag is set as task_work_add(TWA_SIGNAL) sets
 * it, for a user task only (a kernel thread would never clear it); the
 * return to userspace, or io_uring, clears it. Return: 0 or -ERESTARTSYS.
 */
static int move_interrupted(struct p2pgpu_bo *bo)
{
	if (bo->intr_armed && !(current->flags & PF_KTHREAD)) {
		bo->intr_armed = false;
		set_thread_flag(TIF_NOTIFY_SIGNAL);
	}
	return signal_pending(current) ? -ERESTARTSYS : 0;
}

/*
 * Move @bo to @to, its reservation lock held, as a TTM move looks to
 * importers: every attachment is told first (amdgpu_bo_move_notify() and
 * xe_bo_move_notify() call dma_buf_invalidate_mappings(), called
 * dma_buf_move_notify() before 7.x), then the move waits for every fence
 * (importers' DMA; amdgpu_copy_buffer() syncs to the reservation object).
 * MOVE_ASYNC (an eviction, a move at a map) copies in the background behind
 * a KERNEL fence, as ttm_bo_move_accel_cleanup() publishes the copy job's,
 * and the new placement is the buffer's at once; else the copy is done
 * before this returns. MOVE_INTR: interruptible (move_interrupted(), and
 * the wait for the fences), -ERESTARTSYS. -ENOSPC: no room in "VRAM". The
 * shrinker's (MOVE_SHRINK, its buffer list locked) allocates with @gfp (no
 * reclaim) and is measured.
 */
static int __p2pgpu_move(struct p2pgpu_bo *bo, enum p2pgpu_place to, unsigned int how,
			 const char *why, gfp_t gfp)
{
	struct dma_resv *resv = bo->dmabuf->resv;
	struct p2pgpu *gpu = bo->gpu;
	struct p2pgpu_blk *blk = NULL;
	struct p2pgpu_fence *f = NULL;
	struct page **pages = NULL;
	unsigned int nblk = 0;
	unsigned long delay;
	bool busy = false;
	long left;
	u64 t0 = 0;
	int ret;

	dma_resv_assert_held(resv);
	if (bo->place == to)
		return 0;
	if (to == PLACE_BAR) {
		blk = bar_alloc(gpu, bo->personality, bo->npages, &nblk);
		if (IS_ERR(blk))
			return PTR_ERR(blk);
	} else {
		pages = host_alloc(bo->npages, gfp);
		if (!pages)
			return -ENOMEM;
	}
	if (how & MOVE_ASYNC) {
		f = kzalloc_obj(*f, gfp);
		ret = f ? dma_resv_reserve_fences(resv, 1) : -ENOMEM;
		if (ret)
			goto err;
	}
	if (how & MOVE_INTR) {
		ret = move_interrupted(bo);
		if (ret)
			goto err;
	}
	if (how & MOVE_SHRINK) {
		shrink_invalidate(bo);
		busy = importer_busy(bo);
		t0 = ktime_get_ns();
	} else {
		p2p_dma_buf_invalidate(bo->dmabuf);
	}
	left = dma_resv_wait_timeout(resv, DMA_RESV_USAGE_BOOKKEEP, how & MOVE_INTR, P2PGPU_WAIT);
	if (busy) {
		gpu->st.waited_importer++;
		gpu->st.wait_max_ns = max(gpu->st.wait_max_ns, ktime_get_ns() - t0);
	}
	if (left <= 0) {
		ret = left ?: -EBUSY;
		if (!left)
			pci_err(gpu->pdev, "%s buffer %d: fences not signalled, not moved\n",
				p2pgpu_names[bo->personality], bo->id);
		goto err;	/* the importers map again where it is */
	}
	bo->moves++;
	if (to == PLACE_BAR) {
		if (f) {
			bo->copy_pages = bo->pages;	/* freed by the copy */
			bo->copy_blk = blk;
			bo->copy_nblk = nblk;
		} else {
			copy_bar_host(bo, blk, nblk, bo->pages, false);
			host_free(bo->pages, bo->npages);
		}
		bo->pages = NULL;
		bo->blk = blk;
		bo->nblk = nblk;
	} else {
		if (f) {
			bo->copy_blk = bo->blk;		/* freed by the copy */
			bo->copy_nblk = bo->nblk;
			bo->copy_pages = pages;
		} else {
			copy_bar_host(bo, bo->blk, bo->nblk, pages, true);
			bar_free(gpu, bo->blk, bo->nblk);
			kvfree(bo->blk);
		}
		bo->blk = NULL;
		bo->nblk = 0;
		bo->pages = pages;
		bo->intr_armed = bo->flags & P2PGPU_EXPORT_F_XE_TASK_WORK;
	}
	if (f) {
		bo->copy_in = to == PLACE_BAR;
		delay = to == PLACE_BAR ? P2PGPU_MOVE_DELAY :
			how & MOVE_SLOW ? P2PGPU_SLOW_COPY : P2PGPU_COPY_DELAY;
		spin_lock_init(&f->lock);
#ifndef HAVE_DMA_FENCE_DRIVER_NAME
		__module_get(THIS_MODULE);	/* put by p2pgpu_fence_release() */
#endif
		dma_fence_init(&f->base, &p2pgpu_fence_ops, &f->lock, bo->fence_ctx, bo->moves);
		dma_resv_add_fence(resv, &f->base, DMA_RESV_USAGE_KERNEL);
		bo->copy_fence = f;
		get_dma_buf(bo->dmabuf);	/* put by the work */
		queue_delayed_work(system_wq, &bo->copy_work, delay);
	}
	bo->place = to;
	/* a shrinkable buffer moves many times: said at debug level */
	if (to == PLACE_BAR && (bo->flags & P2PGPU_EXPORT_F_SHRINKABLE))
		pci_dbg(gpu->pdev, "%s buffer %d: GTT -> VRAM at BAR offset %#lx, %u blocks (%s)\n",
			p2pgpu_names[bo->personality], bo->id, blk->page << PAGE_SHIFT, nblk, why);
	else if (to == PLACE_BAR)
		pci_info(gpu->pdev, "%s buffer %d: GTT -> VRAM at BAR offset %#lx, %u blocks (%s)\n",
			 p2pgpu_names[bo->personality], bo->id, blk->page << PAGE_SHIFT, nblk, why);
	else if (bo->flags & P2PGPU_EXPORT_F_SHRINKABLE)
		pci_dbg(gpu->pdev, "%s buffer %d: VRAM -> GTT, host pages (%s)\n",
			p2pgpu_names[bo->personality], bo->id, why);
	else
		pci_info(gpu->pdev, "%s buffer %d: VRAM -> GTT, host pages (%s)\n",
			 p2pgpu_names[bo->personality], bo->id, why);
	return 0;

err:
	if (ret == -ERESTARTSYS)
		bo->interrupted++;
	kfree(f);
	host_free(pages, bo->npages);
	if (blk) {
		__bar_free(gpu, blk, nblk, false);	/* nothing was copied there */
		kvfree(blk);
	}
	return ret;
}

static int p2pgpu_move(struct p2pgpu_bo *bo, enum p2pgpu_place to, unsigned int how,
		       const char *why)
{
	return __p2pgpu_move(bo, to, how, why, GFP_KERNEL);
}

/*
 * ttm_bo_validate() into "VRAM with GTT as fallback" (the GTT place is
 * TTM_PL_FLAG_FALLBACK: amdgpu_bo_placement_from_domain() for a BO that
 * prefers VRAM, xe's try_add_system() for a VRAM BO): a buffer in GTT is
 * not compatible and moves back to VRAM, unless VRAM is full.
 */
static int p2pgpu_validate_vram(struct p2pgpu_bo *bo, unsigned int how, const char *why)
{
	int ret;

	if (bo->no_vram && bo->place == PLACE_HOST)
		return 0;	/* VRAM full for it (P2PGPU_EVICT_STAY) */
	ret = p2pgpu_move(bo, PLACE_BAR, how, why);

	return ret == -ENOSPC ? 0 : ret;
}

/* ---- attach ---- */

/*
 * nv_pci_has_common_pci_switch() (nv-pci.c): an upstream bridge of the GPU
 * that is an upstream bridge of the importer too (a switch port, or a
 * root port both sit under). ACS and the host bridge are not looked at.
 */
static bool nv_common_bridge(struct pci_dev *gpu, struct pci_dev *peer)
{
	struct pci_dev *a, *b;

	for (a = pci_upstream_bridge(gpu); a; a = pci_upstream_bridge(a))
		for (b = pci_upstream_bridge(peer); b; b = pci_upstream_bridge(b))
			if (a == b)
				return true;
	return false;
}

/*
 * nv_dma_buf_attach(), MAPPING_TYPE_DEFAULT: the topology check
 * nv_grdma_pci_topology_supported() allows by default; only on a chipset
 * the RM flags (NV_FLAG_PCI_P2P_UNSUPPORTED_CHIPSET, played by
 * P2PGPU_EXPORT_F_NV_UNSUPPORTED_CHIPSET) it wants an upstream bridge in
 * common with the importer (nv_pci_has_common_pci_switch()). Never
 * pci_p2pdma_distance(): an importer the kernel would refuse is taken all
 * the same. It then refuses a dynamic importer without peer2peer, the
 * memory having no struct page (!nv->mem_has_struct_page; coherent memory
 * has, and takes it); a static importer is accepted. Both refusals are
 * NVIDIA's -ENOTSUPP (524, an errno userspace cannot name).
 * nv_dma_buf_attach() casts the importer with to_pci_dev() unchecked (and
 * nv_dma_map_peer() wants a PCI device): a device that is not PCI is
 * refused here (-EOPNOTSUPP) rather than misread.
 */
static int p2pgpu_nv_attach(struct dma_buf *dmabuf, struct dma_buf_attachment *attach)
{
	struct p2pgpu_bo *bo = dmabuf->priv;

	if (!dev_is_pci(attach->dev)) {
		pci_info(bo->gpu->pdev, "nvidia: dma-buf attach failed: %s is not a PCI device\n",
			 dev_name(attach->dev));
		return -EOPNOTSUPP;
	}
	if ((bo->flags & P2PGPU_EXPORT_F_NV_UNSUPPORTED_CHIPSET) &&
	    !nv_common_bridge(bo->gpu->pdev, to_pci_dev(attach->dev))) {
		pci_info(bo->gpu->pdev, "nvidia: dma-buf attach failed: PCI topology not supported for dma-buf (%s: no common switch, chipset flagged)\n",
			 dev_name(attach->dev));
		return -ENOTSUPP;
	}
	if (attach->importer_ops && !attach->peer2peer && bo->place != PLACE_COHERENT) {
		pci_info(bo->gpu->pdev, "nvidia: dma-buf attach failed: importer unable to handle MMIO without struct page\n");
		return -ENOTSUPP;
	}
	return 0;
}

/*
 * The check amdgpu_dma_buf_attach() and xe_dma_buf_attach() make:
 * peer2peer is cleared when pci_p2pdma_distance() from the GPU says no.
 * P2PGPU_EXPORT_F_NO_DISTANCE_CHECK skips it (no driver's code).
 */
static void p2pgpu_distance_check(struct p2pgpu_bo *bo, struct dma_buf_attachment *attach)
{
	if (attach->peer2peer && !(bo->flags & P2PGPU_EXPORT_F_NO_DISTANCE_CHECK) &&
	    pci_p2pdma_distance(bo->gpu->pdev, attach->dev, false) < 0)
		attach->peer2peer = false;
}

/*
 * amdgpu_dma_buf_attach() (7.2): the distance check (not imitated: DCC
 * surfaces on GFX12, and the runtime-PM reference a peer2peer attachment
 * takes, peer2peer cleared while the GPU is runtime suspended), then
 * amdgpu_vm_bo_update_shared() under the BO's reservation lock,
 * dma_resv_lock(resv, NULL): an importer that attaches holding that lock
 * deadlocks here (lockdep reports it first). The attach itself succeeds.
 * 6.12's amdgpu takes no lock in attach; the dma-buf core takes it right
 * after the exporter's attach in every version.
 */
static int p2pgpu_amdgpu_attach(struct dma_buf *dmabuf, struct dma_buf_attachment *attach)
{
	struct p2pgpu_bo *bo = dmabuf->priv;
	int ret;

	p2pgpu_distance_check(bo, attach);
	ret = dma_resv_lock(dmabuf->resv, NULL);
	if (ret)
		return ret;
	bo->locked_attaches++;
	dma_resv_unlock(dmabuf->resv);
	return 0;
}

/*
 * xe_dma_buf_attach(): the same distance check; an importer without
 * peer2peer is refused only when the BO cannot migrate to TT
 * (xe_bo_can_migrate()), which these buffers always can. No lock taken
 * (a runtime-PM reference, not imitated).
 */
static int p2pgpu_xe_attach(struct dma_buf *dmabuf, struct dma_buf_attachment *attach)
{
	p2pgpu_distance_check(dmabuf->priv, attach);
	return 0;
}

/* ---- pin ---- */

static bool all_peer2peer(struct dma_buf *dmabuf)
{
	struct dma_buf_attachment *a;

	list_for_each_entry(a, &dmabuf->attachments, node)
		if (!a->peer2peer)
			return false;
	return true;
}

/*
 * Which pin the drivers of the running kernel's generation have: 7.2's
 * amdgpu_dma_buf_pin() and xe_dma_buf_pin() keep VRAM when every
 * attachment is peer2peer; 6.12's (6.12.117) pin in GTT/TT, always. On
 * 6.12 the difference shows only where the dma-buf core pins for a dynamic
 * importer, which it does at every map on a kernel without
 * CONFIG_DMABUF_MOVE_NOTIFY (dma_buf_map_attachment()): there 6.12's amdgpu
 * and xe put every buffer p2pnvme maps in host memory. (A static importer
 * is never peer2peer: host memory in both.) The 7.x dma-buf API
 * (dma_buf_invalidate_mappings()) tells the generations apart.
 */
#ifdef HAVE_DMA_BUF_INVALIDATE_MAPPINGS
#define P2PGPU_PIN_VRAM		1
#else
#define P2PGPU_PIN_VRAM		0
#endif

/*
 * amdgpu_dma_buf_pin() (7.2): VRAM stays allowed only if every attachment
 * is peer2peer, else the BO is pinned in GTT: amdgpu_bo_pin() validates
 * into the domains left (VRAM preferred, GTT fallback) and pins there. A
 * static dma_buf_attach() is not peer2peer, so the core's pin for it puts
 * the buffer in host memory, silently. 6.12's (P2PGPU_PIN_VRAM 0) pins in
 * GTT whoever attached: amdgpu_bo_pin(bo, AMDGPU_GEM_DOMAIN_GTT). A pinned
 * BO outside the domains: -EINVAL (amdgpu_bo_pin()).
 */
static int p2pgpu_amdgpu_pin(struct dma_buf_attachment *attach)
{
	struct p2pgpu_bo *bo = attach->dmabuf->priv;
	bool vram = P2PGPU_PIN_VRAM && all_peer2peer(attach->dmabuf);
	int ret = 0;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (bo->pins) {
		if (bo->place == PLACE_BAR && !vram)
			return -EINVAL;
	} else if (vram) {
		ret = p2pgpu_validate_vram(bo, 0, "pin, every importer peer2peer");
	} else {
		ret = p2pgpu_move(bo, PLACE_HOST, 0,
				  P2PGPU_PIN_VRAM ? "pin, an importer not peer2peer" :
						    "pin: 6.12's amdgpu pins in GTT");
	}
	if (!ret)
		bo->pins++;
	return ret;
}

/*
 * xe_dma_buf_pin() (7.2): with an attachment that is not peer2peer the BO
 * migrates to TT (xe_bo_migrate()) and is pinned there; if all are, it is
 * pinned where it is, after a validate on the first pin
 * (xe_bo_pin_external()). A pinned BO that is neither in TT nor in VRAM
 * with VRAM allowed: -EINVAL. 6.12's xe_dma_buf_pin(), which always
 * migrates to TT: on a kernel before 7.x (P2PGPU_PIN_VRAM 0), and on 7.x
 * with P2PGPU_EXPORT_F_XE_PIN_TT.
 */
static int p2pgpu_xe_pin(struct dma_buf_attachment *attach)
{
	struct p2pgpu_bo *bo = attach->dmabuf->priv;
	bool vram = P2PGPU_PIN_VRAM && !(bo->flags & P2PGPU_EXPORT_F_XE_PIN_TT) &&
		    all_peer2peer(attach->dmabuf);
	int ret = 0;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (bo->pins && bo->place != PLACE_HOST && !(bo->place == PLACE_BAR && vram))
		return -EINVAL;
	if (!vram)
		ret = p2pgpu_move(bo, PLACE_HOST, 0, "pin: xe pins in TT");
	else if (!bo->pins)
		ret = p2pgpu_validate_vram(bo, 0, "pin in place, every importer peer2peer");
	if (!ret)
		bo->pins++;
	return ret;
}

/* amdgpu_dma_buf_unpin(), xe_dma_buf_unpin(): movable again */
static void p2pgpu_unpin(struct dma_buf_attachment *attach)
{
	struct p2pgpu_bo *bo = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	bo->pins--;
}

/* ---- map ---- */

/* nv_dma_buf_get_sg_count(): NVIDIA's entries, at most the importer's maximum segment */
static size_t nv_max_seg(struct device *dev)
{
	return clamp_t(size_t, ALIGN_DOWN(dma_get_max_seg_size(dev), PAGE_SIZE), PAGE_SIZE,
		       ALIGN_DOWN(UINT_MAX, PAGE_SIZE));
}

/*
 * VRAM: no struct page, each piece mapped with dma_map_resource() for the
 * importer's device (an IOVA under an IOMMU, the CPU physical address
 * otherwise) and sg_set_page(sg, NULL, ...). amdgpu_vram_mgr_alloc_sgt()
 * and xe_ttm_vram_mgr_alloc_sgt() (DMA_ATTR_SKIP_CPU_SYNC) make one entry
 * per drm_buddy block, up to 2 GiB, whatever the importer's maximum
 * segment; nv_dma_buf_map_pfns() with nv_dma_map_peer() and
 * nv_dma_map_mmio() (attrs 0) splits each range at the importer's maximum
 * segment.
 */
static struct sg_table *p2pgpu_map_bar(struct p2pgpu_bo *bo, struct device *dev,
				       enum dma_data_direction dir, unsigned long attrs)
{
	size_t seg = P2PGPU_MAX_SEG, left = 0, len;
	struct scatterlist *sg;
	struct sg_table *sgt;
	unsigned int i, k, n = 0;
	phys_addr_t phys = 0;
	int ret;

	if (bo->personality == P2PGPU_NVIDIA)
		seg = nv_max_seg(dev);
	for (k = 0; k < bo->nblk; k++)
		n += DIV_ROUND_UP(bo->blk[k].n << PAGE_SHIFT, seg);
	sgt = kzalloc_obj(*sgt, GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (ret)
		goto err_free;
	k = 0;
	for_each_sgtable_sg(sgt, sg, i) {
		dma_addr_t addr;

		if (!left) {	/* the next block */
			phys = bo->gpu->phys + (bo->blk[k].page << PAGE_SHIFT);
			left = bo->blk[k++].n << PAGE_SHIFT;
		}
		len = min(left, seg);
		addr = dma_map_resource(dev, phys, len, dir, attrs);
		if (dma_mapping_error(dev, addr)) {
			ret = -EIO;
			sgt->nents = i;
			goto err_unmap;
		}
		sg_set_page(sg, NULL, len, 0);
		sg_dma_address(sg) = addr;
		sg_dma_len(sg) = len;
		phys += len;
		left -= len;
	}
	return sgt;

err_unmap:
	for_each_sgtable_dma_sg(sgt, sg, i)
		dma_unmap_resource(dev, sg_dma_address(sg), sg_dma_len(sg), dir, attrs);
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

/*
 * GTT/TT: the host pages, drm_prime_pages_to_sg() then dma_map_sgtable()
 * with DMA_ATTR_SKIP_CPU_SYNC (amdgpu_dma_buf_map(), xe_dma_buf_map()).
 * drm_prime_pages_to_sg() makes segments of at most the GPU's
 * dma_max_mapping_size() (256 KiB under swiotlb).
 */
static struct sg_table *p2pgpu_map_host(struct p2pgpu_bo *bo, struct device *dev,
					enum dma_data_direction dir)
{
	size_t max_seg = dma_max_mapping_size(&bo->gpu->pdev->dev);
	struct sg_table *sgt;
	int ret;

	if (!max_seg || max_seg > UINT_MAX)
		max_seg = UINT_MAX;
	sgt = kzalloc_obj(*sgt, GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table_from_pages_segment(sgt, bo->pages, bo->npages, 0,
						bo->npages << PAGE_SHIFT,
						ALIGN_DOWN(max_seg, PAGE_SIZE), GFP_KERNEL);
	if (ret)
		goto err_free;
	ret = dma_map_sgtable(dev, sgt, dir, DMA_ATTR_SKIP_CPU_SYNC);
	if (ret) {
		sg_free_table(sgt);
		ret = -EBUSY;	/* as amdgpu_dma_buf_map()'s error_free */
		goto err_free;
	}
	return sgt;

err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static struct sg_table *p2pgpu_map_place(struct dma_buf_attachment *attach,
					 enum dma_data_direction dir, unsigned long attrs)
{
	struct p2pgpu_bo *bo = attach->dmabuf->priv;

	if (bo->place == PLACE_BAR)
		return p2pgpu_map_bar(bo, attach->dev, dir, attrs);
	return p2pgpu_map_host(bo, attach->dev, dir);
}

/*
 * nv_dma_buf_map_pages(), NVIDIA's coherent memory (GH200's HBM over C2C,
 * nv->mem_has_struct_page): the pages' ranges split at the importer's
 * maximum segment, with their struct pages (sg_set_page()), then
 * dma_map_sg_attrs(..., DMA_BIDIRECTIONAL, DMA_ATTR_SKIP_CPU_SYNC) for the
 * importer's device: an IOVA under an IOMMU, the pages' physical addresses
 * otherwise, nothing saying they are the GPU's. NVIDIA's failure is a NULL
 * table, which the dma-buf core answers with -ENOMEM.
 */
static struct sg_table *p2pgpu_map_coherent(struct p2pgpu_bo *bo, struct device *dev)
{
	struct sg_table *sgt;
	int ret, n;

	sgt = kzalloc_obj(*sgt, GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table_from_pages_segment(sgt, bo->pages, bo->npages, 0,
						bo->npages << PAGE_SHIFT, nv_max_seg(dev),
						GFP_KERNEL);
	if (ret)
		goto err_free;
	n = dma_map_sg_attrs(dev, sgt->sgl, sgt->orig_nents, DMA_BIDIRECTIONAL,
			     DMA_ATTR_SKIP_CPU_SYNC);
	if (n <= 0) {
		sg_free_table(sgt);
		ret = -ENOMEM;
		goto err_free;
	}
	sgt->nents = n;
	return sgt;

err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

/*
 * nv_dma_buf_map(): the memory never moves; every mapping is made for the
 * importer's device, always bidirectional: its BAR1 (nv_dma_buf_map_pfns()),
 * or on a coherent platform its pages (nv_dma_buf_map_pages()).
 */
static struct sg_table *p2pgpu_nv_map(struct dma_buf_attachment *attach,
				      enum dma_data_direction dir)
{
	struct p2pgpu_bo *bo = attach->dmabuf->priv;

	if (bo->place == PLACE_COHERENT)
		return p2pgpu_map_coherent(bo, attach->dev);
	return p2pgpu_map_bar(bo, attach->dev, DMA_BIDIRECTIONAL, 0);
}

/*
 * Validate an unpinned BO for a map (its reservation lock held): into VRAM
 * (GTT/TT as fallback) for a peer2peer attachment, into GTT/TT otherwise;
 * so a map by an importer that is not peer2peer moves the buffer to host
 * memory (every other importer told), and a peer2peer map moves an
 * evicted buffer back. The move's copy runs behind a KERNEL fence, the
 * mapping is of the new placement at once. @how: MOVE_INTR for xe.
 */
static int p2pgpu_map_validate(struct dma_buf_attachment *attach, unsigned int how)
{
	struct p2pgpu_bo *bo = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (bo->pins)
		return 0;	/* mapped where it is */
	how |= MOVE_ASYNC;
	if (attach->peer2peer)
		return p2pgpu_validate_vram(bo, how, "map by a peer2peer importer");
	return p2pgpu_move(bo, PLACE_HOST, how, "map, importer not peer2peer");
}

/*
 * amdgpu_dma_buf_map(): ttm_bo_validate() with ctx { false, false }, not
 * interruptible, as p2pgpu_map_validate() says; a pinned BO is mapped where
 * it is.
 */
static struct sg_table *p2pgpu_amdgpu_map(struct dma_buf_attachment *attach,
					  enum dma_data_direction dir)
{
	int ret = p2pgpu_map_validate(attach, 0);

	if (ret)
		return ERR_PTR(ret);
	return p2pgpu_map_place(attach, dir, DMA_ATTR_SKIP_CPU_SYNC);
}

/*
 * xe_dma_buf_map(): unpinned, a map by an importer that is not peer2peer
 * migrates the BO to TT (xe_bo_migrate()); a peer2peer one validates it
 * (xe_bo_validate(): VRAM, TT as fallback), both with an interruptible TTM
 * context: -ERESTARTSYS (or -EINTR) reach the importer from
 * dma_buf_map_attachment(). Pinned: where it is. VRAM the CPU cannot see
 * (P2PGPU_EXPORT_F_XE_INVISIBLE) is refused after the validate, as
 * xe_ttm_vram_mgr_alloc_sgt() refuses a BO whose used_visible_size is
 * short of its size: -EOPNOTSUPP.
 */
static struct sg_table *p2pgpu_xe_map(struct dma_buf_attachment *attach,
				      enum dma_data_direction dir)
{
	struct p2pgpu_bo *bo = attach->dmabuf->priv;
	int ret = p2pgpu_map_validate(attach, MOVE_INTR);

	if (ret)
		return ERR_PTR(ret);
	if (bo->place == PLACE_BAR && (bo->flags & P2PGPU_EXPORT_F_XE_INVISIBLE)) {
		pci_dbg(bo->gpu->pdev, "xe buffer %d: in VRAM the CPU cannot see, no peer mapping (-EOPNOTSUPP)\n",
			bo->id);
		return ERR_PTR(-EOPNOTSUPP);
	}
	return p2pgpu_map_place(attach, dir, DMA_ATTR_SKIP_CPU_SYNC);
}

/*
 * amdgpu_dma_buf_unmap(), xe_dma_buf_unmap(): a table with pages is host
 * memory (dma_unmap_sgtable()), one without is VRAM (the vram manager's
 * free_sgt: dma_unmap_resource()); nv_dma_buf_unmap_pfns() and
 * nv_dma_buf_unmap_pages() likewise, bidirectional (the latter with
 * dma_unmap_sg() and the mapped count; here the count the table was
 * mapped with, as the DMA API wants).
 */
static void p2pgpu_unmap(struct dma_buf_attachment *attach, struct sg_table *sgt,
			 enum dma_data_direction dir)
{
	struct p2pgpu_bo *bo = attach->dmabuf->priv;
	struct scatterlist *sg;
	unsigned int i;

	if (bo->personality == P2PGPU_NVIDIA)
		dir = DMA_BIDIRECTIONAL;
	if (sg_page(sgt->sgl)) {
		dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	} else {
		unsigned long attrs = bo->personality == P2PGPU_NVIDIA ? 0 : DMA_ATTR_SKIP_CPU_SYNC;

		for_each_sgtable_dma_sg(sgt, sg, i)
			dma_unmap_resource(attach->dev, sg_dma_address(sg), sg_dma_len(sg), dir,
					   attrs);
	}
	sg_free_table(sgt);
	kfree(sgt);
}

static void p2pgpu_release(struct dma_buf *dmabuf)
{
	struct p2pgpu_bo *bo = dmabuf->priv;

	mutex_lock(&bo->gpu->bos_lock);
	list_del(&bo->node);
	mutex_unlock(&bo->gpu->bos_lock);
	/* a move's copy holds a reference: none is pending */
	if (bo->place == PLACE_BAR)
		bar_free(bo->gpu, bo->blk, bo->nblk);
	kvfree(bo->blk);
	host_free(bo->pages, bo->npages);
	pci_info(bo->gpu->pdev, "%s buffer %d released after %u moves\n",
		 p2pgpu_names[bo->personality], bo->id, bo->moves);
	kref_put(&bo->gpu->kref, p2pgpu_free);
	kfree(bo);
}

/* nv_dma_buf_ops: no pin/unpin, so a static exporter */
static const struct dma_buf_ops p2pgpu_nv_ops = {
	.attach = p2pgpu_nv_attach,
	.map_dma_buf = p2pgpu_nv_map,
	.unmap_dma_buf = p2pgpu_unmap,
	.release = p2pgpu_release,
};

static const struct dma_buf_ops p2pgpu_amdgpu_ops = {
	.attach = p2pgpu_amdgpu_attach,
	.pin = p2pgpu_amdgpu_pin,
	.unpin = p2pgpu_unpin,
	.map_dma_buf = p2pgpu_amdgpu_map,
	.unmap_dma_buf = p2pgpu_unmap,
	.release = p2pgpu_release,
};

static const struct dma_buf_ops p2pgpu_xe_ops = {
	.attach = p2pgpu_xe_attach,
	.pin = p2pgpu_xe_pin,
	.unpin = p2pgpu_unpin,
	.map_dma_buf = p2pgpu_xe_map,
	.unmap_dma_buf = p2pgpu_unmap,
	.release = p2pgpu_release,
};

static const struct dma_buf_ops *const p2pgpu_ops[] = {
	[P2PGPU_NVIDIA] = &p2pgpu_nv_ops, [P2PGPU_AMDGPU] = &p2pgpu_amdgpu_ops,
	[P2PGPU_XE] = &p2pgpu_xe_ops,
};

/* ---- memory pressure ---- */

/* a buffer the shrinker may evict: in VRAM, unpinned, exported for it */
static bool shrinkable(struct p2pgpu_bo *bo)
{
	return (bo->flags & P2PGPU_EXPORT_F_SHRINKABLE) && READ_ONCE(bo->place) == PLACE_BAR &&
	       !READ_ONCE(bo->pins);
}

/*
 * One buffer, its reservation lock trylocked: skipped in a no-wait pass
 * while a fence is not signalled (ttm_bo_shrink_suitable()), else evicted
 * to host memory without reclaim (the eviction tells the importers, waits
 * for the fences, and copies behind a KERNEL fence).
 */
static int shrink_bo(struct p2pgpu_bo *bo, bool wait)
{
	struct p2pgpu *gpu = bo->gpu;
	int ret;

	if (!wait && !dma_resv_test_signaled(bo->dmabuf->resv, DMA_RESV_USAGE_BOOKKEEP)) {
		if (importer_busy(bo))
			gpu->st.skipped_busy++;
		else
			gpu->st.skipped_moving++;
		return -EBUSY;
	}
	ret = __p2pgpu_move(bo, PLACE_HOST, MOVE_ASYNC | MOVE_SHRINK,
			    wait ? "shrinker, waiting" : "shrinker", GFP_NOWAIT | __GFP_NOWARN);
	if (!ret)
		gpu->st.evicted++;
	else if (ret == -ENOMEM)
		gpu->st.skipped_nomem++;
	return ret;
}

/*
 * A shrinker pass over the exported buffers, in reclaim: the list and each
 * reservation lock trylocked (a holder may be allocating: waiting for it
 * here could deadlock), a buffer in its last fput left alone. @wait: the
 * pass may wait for fences (kswapd's). Return: pages evicted, or
 * SHRINK_STOP when the list was busy; *@scanned: pages looked at.
 */
static unsigned long p2pgpu_shrink(struct p2pgpu *gpu, unsigned long nr_to_scan, bool wait,
				   unsigned long *scanned)
{
	unsigned long evicted = 0;
	struct p2pgpu_bo *bo;

	*scanned = 0;
	if (!mutex_trylock(&gpu->bos_lock))
		return SHRINK_STOP;
	gpu->st.passes++;
	list_for_each_entry(bo, &gpu->bos, node) {
		struct dma_buf *dmabuf = bo->dmabuf;

		if (*scanned >= nr_to_scan)
			break;
		if (!shrinkable(bo))
			continue;
		/* its release waits for the list: the file stays, maybe dying */
		if (!p2p_get_file_active(&dmabuf->file))
			continue;
		if (dma_resv_trylock(dmabuf->resv)) {
			if (bo->place == PLACE_BAR && !bo->pins) {
				*scanned += bo->npages;
				if (!shrink_bo(bo, wait))
					evicted += bo->npages;
			}
			dma_resv_unlock(dmabuf->resv);
		} else {
			gpu->st.skipped_locked++;
		}
		fput(dmabuf->file);	/* a last one is deferred: not released here */
	}
	mutex_unlock(&gpu->bos_lock);
	return evicted;
}

static unsigned long p2pgpu_shrink_count(struct shrinker *shrinker, struct shrink_control *sc)
{
	struct p2pgpu *gpu = p2p_shrinker_priv(shrinker);
	unsigned long n = 0;
	struct p2pgpu_bo *bo;

	if (!mutex_trylock(&gpu->bos_lock))
		return 0;
	list_for_each_entry(bo, &gpu->bos, node)
		if (shrinkable(bo))
			n += bo->npages;
	mutex_unlock(&gpu->bos_lock);
	return n ?: SHRINK_EMPTY;
}

/*
 * The kernel's call (drop_caches, kswapd, direct reclaim). Only kswapd
 * waits for fences, as ttm_bo_shrink_avoid_wait() has it. Evicting VRAM
 * frees no host memory: nothing is said to be freed.
 */
static unsigned long p2pgpu_shrink_scan(struct shrinker *shrinker, struct shrink_control *sc)
{
	struct p2pgpu *gpu = p2p_shrinker_priv(shrinker);
	unsigned long scanned, ret;

	ret = p2pgpu_shrink(gpu, sc->nr_to_scan, current_is_kswapd(), &scanned);
	if (ret == SHRINK_STOP || !scanned)
		return SHRINK_STOP;
	sc->nr_scanned = scanned;
	return 0;
}

/*
 * P2PGPU_IOC_SHRINK: a pass now, as direct reclaim runs shrinkers
 * (__perform_reclaim(): lockdep's fs_reclaim held, PF_MEMALLOC so that
 * nothing below reclaims again), then the totals.
 */
static long p2pgpu_ioc_shrink(struct p2pgpu *gpu, void __user *uarg)
{
	struct p2pgpu_shrink arg;
	unsigned long scanned, evicted;
	unsigned int noreclaim;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~P2PGPU_SHRINK_WAIT) || arg.reserved)
		return -EINVAL;
	fs_reclaim_acquire(GFP_KERNEL);
	noreclaim = memalloc_noreclaim_save();
	evicted = p2pgpu_shrink(gpu, arg.nr_to_scan ?: ULONG_MAX, arg.flags & P2PGPU_SHRINK_WAIT,
				&scanned);
	memalloc_noreclaim_restore(noreclaim);
	fs_reclaim_release(GFP_KERNEL);
	arg.scanned = scanned;
	arg.evicted_pages = evicted == SHRINK_STOP ? 0 : evicted;
	mutex_lock(&gpu->bos_lock);
	arg.passes = gpu->st.passes;
	arg.evicted = gpu->st.evicted;
	arg.skipped_busy = gpu->st.skipped_busy;
	arg.skipped_moving = gpu->st.skipped_moving;
	arg.skipped_locked = gpu->st.skipped_locked;
	arg.skipped_nomem = gpu->st.skipped_nomem;
	arg.invalidations = gpu->st.invalidations;
	arg.inval_slept = gpu->st.inval_slept;
	arg.inval_max_ns = gpu->st.inval_max_ns;
	arg.waited_importer = gpu->st.waited_importer;
	arg.wait_max_ns = gpu->st.wait_max_ns;
	mutex_unlock(&gpu->bos_lock);
	return copy_to_user(uarg, &arg, sizeof(arg)) ? -EFAULT : 0;
}

/* ---- ioctls ---- */

static long p2pgpu_ioc_export(struct p2pgpu *gpu, void __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp);
	struct p2pgpu_export arg;
	struct dma_buf *dmabuf;
	const u32 xe_only = P2PGPU_EXPORT_F_XE_INVISIBLE | P2PGPU_EXPORT_F_XE_TASK_WORK;
	const u32 nv_only = P2PGPU_EXPORT_F_NV_UNSUPPORTED_CHIPSET | P2PGPU_EXPORT_F_NV_COHERENT;
	struct p2pgpu_blk *blk = NULL;
	struct p2pgpu_bo *bo;
	unsigned int nblk = 0, k;
	int fd;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.personality < P2PGPU_NVIDIA || arg.personality > P2PGPU_XE ||
	    (arg.flags & ~(P2PGPU_EXPORT_F_XE_PIN_TT | P2PGPU_EXPORT_F_EVICT_AT_UNBIND |
			   P2PGPU_EXPORT_F_NO_DISTANCE_CHECK | P2PGPU_EXPORT_F_SHRINKABLE |
			   nv_only | xe_only)) ||
	    ((arg.flags & nv_only) && arg.personality != P2PGPU_NVIDIA) ||
	    ((arg.flags & (P2PGPU_EXPORT_F_NO_DISTANCE_CHECK | P2PGPU_EXPORT_F_SHRINKABLE)) &&
	     arg.personality == P2PGPU_NVIDIA) ||
	    ((arg.flags & P2PGPU_EXPORT_F_EVICT_AT_UNBIND) && arg.personality != P2PGPU_AMDGPU) ||
	    ((arg.flags & xe_only) && arg.personality != P2PGPU_XE) ||
	    !arg.size || !PAGE_ALIGNED(arg.size) ||
	    arg.size > ((u64)gpu->npages << PAGE_SHIFT))
		return -EINVAL;
	bo = kzalloc_obj(*bo, GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	bo->gpu = gpu;
	bo->personality = arg.personality;
	bo->flags = arg.flags;
	bo->npages = arg.size >> PAGE_SHIFT;
	bo->id = atomic_inc_return(&gpu->serial);
	bo->fence_ctx = dma_fence_context_alloc(1);
	INIT_DELAYED_WORK(&bo->copy_work, p2pgpu_copy_work);
	bo->intr_armed = bo->flags & P2PGPU_EXPORT_F_XE_TASK_WORK;
	if (bo->flags & P2PGPU_EXPORT_F_NV_COHERENT) {
		/* in the coherent HBM's node, cleared */
		bo->nid = coherent_node();
		if (bo->nid == NUMA_NO_NODE) {
			pci_info(gpu->pdev, "nvidia: no coherent memory to export: no NUMA node has memory and no CPUs (what a GH200's HBM is)\n");
			kfree(bo);
			return -ENODEV;
		}
		bo->pages = coherent_alloc(bo->nid, bo->npages);
		if (!bo->pages) {
			kfree(bo);
			return -ENOMEM;
		}
		bo->place = PLACE_COHERENT;
	} else {
		/* created in VRAM, cleared */
		blk = bar_alloc(gpu, bo->personality, bo->npages, &nblk);
		if (IS_ERR(blk)) {
			kfree(bo);
			return PTR_ERR(blk);
		}
		bo->place = PLACE_BAR;
		bo->blk = blk;
		bo->nblk = nblk;
		for (k = 0; k < nblk; k++)
			memset_io(gpu->bar + (blk[k].page << PAGE_SHIFT), 0,
				  blk[k].n << PAGE_SHIFT);
	}

	exp.ops = p2pgpu_ops[arg.personality];
	exp.size = arg.size;
	exp.flags = O_RDWR;
	exp.priv = bo;
	kref_get(&gpu->kref);
	dmabuf = dma_buf_export(&exp);
	if (IS_ERR(dmabuf)) {
		if (blk)
			bar_free(gpu, blk, nblk);
		kvfree(blk);
		host_free(bo->pages, bo->npages);
		kref_put(&gpu->kref, p2pgpu_free);
		kfree(bo);
		return PTR_ERR(dmabuf);
	}
	bo->dmabuf = dmabuf;
	mutex_lock(&gpu->bos_lock);
	list_add_tail(&bo->node, &gpu->bos);
	mutex_unlock(&gpu->bos_lock);
	arg.where = bo->place;
	if (bo->place == PLACE_COHERENT) {
		arg.bar_off = bo->nid;
		pci_info(gpu->pdev, "nvidia buffer %d: %llu bytes of coherent memory on NUMA node %d (memory, no CPUs)\n",
			 bo->id, arg.size, bo->nid);
	} else {
		arg.bar_off = (u64)blk[0].page << PAGE_SHIFT;
		pci_info(gpu->pdev, "%s buffer %d: %llu bytes in VRAM at BAR offset %#llx, %u blocks\n",
			 p2pgpu_names[bo->personality], bo->id, arg.size, arg.bar_off, nblk);
	}
	/* from here the dma-buf's release frees bo */
	fd = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	arg.fd = fd;
	/* the fd is the caller's now: a failed copy leaves it open */
	return copy_to_user(uarg, &arg, sizeof(arg)) ? -EFAULT : 0;
}

/* the dma-buf @fd if this module exported it, with a reference */
static struct dma_buf *p2pgpu_get(int fd)
{
	struct dma_buf *dmabuf = dma_buf_get(fd);
	unsigned int i;

	if (IS_ERR(dmabuf))
		return dmabuf;
	for (i = P2PGPU_NVIDIA; i <= P2PGPU_XE; i++)
		if (dmabuf->ops == p2pgpu_ops[i])
			return dmabuf;
	dma_buf_put(dmabuf);
	return ERR_PTR(-EINVAL);
}

/* where it is: with the reservation lock held */
static void p2pgpu_where(struct p2pgpu_bo *bo, struct p2pgpu_buf *arg)
{
	struct dma_buf_attachment *a;

	arg->where = bo->place;
	arg->bar_off = bo->place == PLACE_BAR ? (u64)bo->blk[0].page << PAGE_SHIFT :
		       bo->place == PLACE_COHERENT ? bo->nid : 0;
	arg->pins = bo->pins;
	arg->moves = bo->moves;
	arg->interrupted = bo->interrupted;
	arg->locked_attaches = bo->locked_attaches;
	arg->attachments = 0;
	list_for_each_entry(a, &bo->dmabuf->attachments, node)
		arg->attachments++;
}

/*
 * The CPU's view of @len bytes at @off, after any move's copy (the KERNEL
 * fences): into @buf for READ, set to the byte for FILL.
 */
static void p2pgpu_cpu_copy(struct p2pgpu_bo *bo, u64 off, u64 len, void *buf, int byte);

static int p2pgpu_cpu_access(struct p2pgpu_bo *bo, u64 off, u64 len, void *buf, int byte)
{
	long left = dma_resv_wait_timeout(bo->dmabuf->resv, DMA_RESV_USAGE_KERNEL, true,
					  P2PGPU_WAIT);

	if (left <= 0)
		return left ?: -ETIMEDOUT;
	p2pgpu_cpu_copy(bo, off, len, buf, byte);
	return 0;
}

/*
 * The copy itself, where the bytes are now: the caller holds the
 * reservation lock, or a fence in it that every move waits for.
 */
static void p2pgpu_cpu_copy(struct p2pgpu_bo *bo, u64 off, u64 len, void *buf, int byte)
{
	u64 done = 0;

	while (done < len) {
		u64 pos = off + done;
		size_t n = min_t(u64, len - done, PAGE_SIZE - offset_in_page(pos));
		unsigned long page = pos >> PAGE_SHIFT;

		if (bo->place == PLACE_BAR) {
			void __iomem *p = bar_addr(bo, page) + offset_in_page(pos);

			if (buf)
				memcpy_fromio(buf + done, p, n);
			else
				memset_io(p, byte, n);
		} else {
			void *p = kmap_local_page(bo->pages[page]);

			if (buf)
				memcpy(buf + done, p + offset_in_page(pos), n);
			else
				memset(p + offset_in_page(pos), byte, n);
			kunmap_local(p);
		}
		done += n;
	}
}

/**
 * struct p2pgpu_job_work - a GPU job's write behind its fence (P2PGPU_IOC_JOB)
 * @work: runs it after the delay
 * @fence: its fence, in the buffer's reservation object
 * @bo: the buffer (its dma-buf held)
 * @off: where
 * @len: bytes
 * @byte: what
 */
struct p2pgpu_job_work {
	struct delayed_work work;
	struct p2pgpu_fence *fence;
	struct p2pgpu_bo *bo;
	u64 off, len;
	int byte;
};

static void p2pgpu_job_run(struct work_struct *work)
{
	struct p2pgpu_job_work *jw = container_of(to_delayed_work(work), struct p2pgpu_job_work,
						  work);
	struct p2pgpu_bo *bo = jw->bo;

	/* no move before the fence signals: the placement holds */
	p2pgpu_cpu_copy(bo, jw->off, jw->len, NULL, jw->byte);
	pci_info(bo->gpu->pdev, "%s buffer %d: job wrote %#x to %llu bytes at %llu, fence signalled\n",
		 p2pgpu_names[bo->personality], bo->id, jw->byte, jw->len, jw->off);
	dma_fence_signal(&jw->fence->base);
	dma_fence_put(&jw->fence->base);
	dma_buf_put(bo->dmabuf);
	kfree(jw);
}

/*
 * P2PGPU_IOC_JOB: see struct p2pgpu_job. The job starts after the fences
 * already there (waited for here, as the GPU's scheduler would), so that
 * it writes where the buffer is.
 */
static long p2pgpu_ioc_job(void __user *uarg)
{
	enum dma_resv_usage usage;
	struct p2pgpu_job_work *jw;
	struct p2pgpu_job arg;
	struct dma_buf *dmabuf;
	struct p2pgpu_bo *bo;
	long left;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.usage != P2PGPU_JOB_WRITE && arg.usage != P2PGPU_JOB_KERNEL) ||
	    arg.byte > 0xff || arg.delay_ms > 10000)
		return -EINVAL;
	usage = arg.usage == P2PGPU_JOB_WRITE ? DMA_RESV_USAGE_WRITE : DMA_RESV_USAGE_KERNEL;
	dmabuf = p2pgpu_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	bo = dmabuf->priv;
	if (arg.off > dmabuf->size || arg.len > dmabuf->size - arg.off) {
		ret = -EINVAL;
		goto out_put;
	}
	jw = kzalloc_obj(*jw, GFP_KERNEL);
	if (jw)
		jw->fence = kzalloc_obj(*jw->fence, GFP_KERNEL);
	if (!jw || !jw->fence) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (ret)
		goto out_free;
	left = dma_resv_wait_timeout(dmabuf->resv, DMA_RESV_USAGE_BOOKKEEP, true, P2PGPU_WAIT);
	ret = left > 0 ? dma_resv_reserve_fences(dmabuf->resv, 1) : left ?: -ETIMEDOUT;
	if (ret) {
		dma_resv_unlock(dmabuf->resv);
		goto out_free;
	}
	spin_lock_init(&jw->fence->lock);
#ifndef HAVE_DMA_FENCE_DRIVER_NAME
	__module_get(THIS_MODULE);	/* put by p2pgpu_fence_release() */
#endif
	dma_fence_init(&jw->fence->base, &p2pgpu_fence_ops, &jw->fence->lock,
		       dma_fence_context_alloc(1), 1);
	dma_resv_add_fence(dmabuf->resv, &jw->fence->base, usage);
	jw->bo = bo;
	jw->off = arg.off;
	jw->len = arg.len;
	jw->byte = arg.byte;
	INIT_DELAYED_WORK(&jw->work, p2pgpu_job_run);
	get_dma_buf(dmabuf);	/* put by the job */
	queue_delayed_work(system_unbound_wq, &jw->work, msecs_to_jiffies(arg.delay_ms));
	dma_resv_unlock(dmabuf->resv);
	dma_buf_put(dmabuf);
	return 0;

out_free:
	if (jw)
		kfree(jw->fence);
	kfree(jw);
out_put:
	dma_buf_put(dmabuf);
	return ret;
}

static long p2pgpu_ioc_buf(unsigned int cmd, void __user *uarg)
{
	struct p2pgpu_buf arg;
	struct dma_buf *dmabuf;
	struct p2pgpu_bo *bo;
	void *buf = NULL;
	int ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.reserved)
		return -EINVAL;
	dmabuf = p2pgpu_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	bo = dmabuf->priv;
	if (cmd == P2PGPU_IOC_EVICT && arg.arg > P2PGPU_EVICT_SLOW) {
		ret = -EINVAL;
		goto out_put;
	}
	if (cmd == P2PGPU_IOC_READ || cmd == P2PGPU_IOC_FILL) {
		if (arg.off > dmabuf->size || arg.len > dmabuf->size - arg.off ||
		    (cmd == P2PGPU_IOC_READ && arg.len > P2PGPU_READ_MAX) ||
		    (cmd == P2PGPU_IOC_FILL && arg.arg > 0xff)) {
			ret = -EINVAL;
			goto out_put;
		}
		/* user memory is copied outside the reservation lock (mmap_lock first) */
		if (cmd == P2PGPU_IOC_READ) {
			buf = kvmalloc(arg.len ?: 1, GFP_KERNEL);
			if (!buf) {
				ret = -ENOMEM;
				goto out_put;
			}
		}
	}
	ret = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (ret)
		goto out_put;
	switch (cmd) {
	case P2PGPU_IOC_EVICT:
		/*
		 * What TTM does under VRAM pressure (or amdgpu's and xe's
		 * suspend): move the BO to GTT/TT. nvidia's memory never
		 * moves; a pinned BO is not evicted (ttm_bo_evict() skips it,
		 * xe_bo_move_notify() says -EINVAL).
		 */
		if (bo->personality == P2PGPU_NVIDIA)
			ret = -EOPNOTSUPP;
		else if (arg.arg == P2PGPU_EVICT_ALLOW)
			bo->no_vram = false;	/* back at its next peer2peer map */
		else if (bo->pins)
			ret = -EBUSY;
		else
			ret = p2pgpu_move(bo, PLACE_HOST,
					  arg.arg == P2PGPU_EVICT_SLOW ? MOVE_ASYNC | MOVE_SLOW :
					  MOVE_ASYNC, "evicted");
		if (!ret && arg.arg == P2PGPU_EVICT_STAY)
			bo->no_vram = true;
		break;
	case P2PGPU_IOC_READ:
		ret = p2pgpu_cpu_access(bo, arg.off, arg.len, buf, 0);
		break;
	case P2PGPU_IOC_FILL:
		ret = p2pgpu_cpu_access(bo, arg.off, arg.len, NULL, arg.arg);
		break;
	}
	p2pgpu_where(bo, &arg);
	dma_resv_unlock(dmabuf->resv);
	if (!ret && buf && copy_to_user(u64_to_user_ptr(arg.arg), buf, arg.len))
		ret = -EFAULT;
	if (!ret && copy_to_user(uarg, &arg, sizeof(arg)))
		ret = -EFAULT;
out_put:
	kvfree(buf);
	dma_buf_put(dmabuf);
	return ret;
}

/* P2PGPU_IOC_LAYOUT: the VRAM blocks, as struct p2pgpu_layout says */
static long p2pgpu_ioc_layout(void __user *uarg)
{
	struct p2pgpu_block *out = NULL;
	struct p2pgpu_layout arg;
	struct dma_buf *dmabuf;
	struct p2pgpu_bo *bo;
	unsigned int room, k, n;
	u64 off = 0;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.reserved)
		return -EINVAL;
	dmabuf = p2pgpu_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	bo = dmabuf->priv;
	/* no buffer has more blocks than pages */
	room = min_t(unsigned long, arg.nblocks, bo->npages);
	if (room) {
		out = kvcalloc(room, sizeof(*out), GFP_KERNEL);
		if (!out) {
			ret = -ENOMEM;
			goto out_put;
		}
	}
	ret = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (ret)
		goto out_put;
	arg.where = bo->place;
	n = bo->place == PLACE_BAR ? bo->nblk : 0;
	for (k = 0; k < n; k++) {
		if (k < room)
			out[k] = (struct p2pgpu_block){ .off = off,
				.bar_off = (u64)bo->blk[k].page << PAGE_SHIFT,
				.len = (u64)bo->blk[k].n << PAGE_SHIFT };
		off += (u64)bo->blk[k].n << PAGE_SHIFT;
	}
	dma_resv_unlock(dmabuf->resv);
	arg.nblocks = n;
	if (min(n, room) && copy_to_user(u64_to_user_ptr(arg.blocks), out,
					 min(n, room) * sizeof(*out)))
		ret = -EFAULT;
	if (!ret && copy_to_user(uarg, &arg, sizeof(arg)))
		ret = -EFAULT;
out_put:
	kvfree(out);
	dma_buf_put(dmabuf);
	return ret;
}

/*
 * A static importer of this function, as a driver that calls
 * dma_buf_attach() (NVIDIA's importers, rocm-xio's first module, an RDMA
 * NIC's pinned import) is: not peer2peer, so a dynamic exporter is pinned
 * for it by the core (at attach before 7.x, at map from 7.x) where that
 * exporter pins for importers that cannot take P2P.
 */
static long p2pgpu_ioc_static(struct p2pgpu_file *pf, unsigned int cmd, void __user *uarg)
{
	struct p2pgpu_static *s, *found = NULL;
	struct p2pgpu_buf arg;
	struct dma_buf *dmabuf;
	int ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.reserved)
		return -EINVAL;
	dmabuf = p2pgpu_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	mutex_lock(&pf->lock);
	list_for_each_entry(s, &pf->statics, node)
		if (s->dmabuf == dmabuf)
			found = s;
	if (cmd == P2PGPU_IOC_STATIC_DETACH) {
		if (!found) {
			ret = -ENOENT;
			goto out_unlock;
		}
		list_del(&found->node);
		dma_buf_unmap_attachment_unlocked(found->attach, found->sgt, DMA_BIDIRECTIONAL);
		dma_buf_detach(dmabuf, found->attach);
		dma_buf_put(found->dmabuf);
		kfree(found);
		goto out_where;
	}
	if (found) {
		ret = -EBUSY;
		goto out_unlock;
	}
	s = kzalloc_obj(*s, GFP_KERNEL);
	if (!s) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	s->attach = dma_buf_attach(dmabuf, &pf->gpu->pdev->dev);
	if (IS_ERR(s->attach)) {
		ret = PTR_ERR(s->attach);
		kfree(s);
		goto out_unlock;
	}
	s->sgt = dma_buf_map_attachment_unlocked(s->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(s->sgt)) {
		ret = PTR_ERR(s->sgt);
		dma_buf_detach(dmabuf, s->attach);
		kfree(s);
		goto out_unlock;
	}
	get_dma_buf(dmabuf);
	s->dmabuf = dmabuf;
	list_add(&s->node, &pf->statics);
out_where:
	dma_resv_lock(dmabuf->resv, NULL);
	p2pgpu_where(dmabuf->priv, &arg);
	dma_resv_unlock(dmabuf->resv);
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		ret = -EFAULT;
out_unlock:
	mutex_unlock(&pf->lock);
	dma_buf_put(dmabuf);
	return ret;
}

/*
 * amdgpu_dma_buf_move_notify(): the exporter moves or revokes the buffer
 * (its reservation lock held); amdgpu invalidates its page tables and maps
 * again at the next validation. Here: unmap, count, map again only when
 * asked (P2PGPU_IOC_IMPORT of the same fd).
 */
static void p2pgpu_import_invalidate(struct dma_buf_attachment *attach)
{
	struct p2pgpu_import_buf *im = attach->importer_priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	im->invalidated++;
	if (im->sgt)
		dma_buf_unmap_attachment(attach, im->sgt, DMA_BIDIRECTIONAL);
	im->sgt = NULL;
	im->dma_addr = 0;
	pci_info(im->gpu->pdev, "import: the exporter invalidated our mapping (%u)\n",
		 im->invalidated);
}

static const struct dma_buf_attach_ops p2pgpu_import_ops = {
	.allow_peer2peer = true,
	.P2P_DMA_BUF_INVALIDATE_OP = p2pgpu_import_invalidate,
};

/* map (again), the reservation lock held; nothing on error */
static int p2pgpu_import_map(struct p2pgpu_import_buf *im)
{
	struct sg_table *sgt;
	struct scatterlist *sg;
	unsigned int i;

	dma_resv_assert_held(im->dmabuf->resv);
	if (im->sgt)
		return 0;
	sgt = dma_buf_map_attachment(im->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt))
		return PTR_ERR(sgt);
	im->sgt = sgt;
	im->nents = sgt->nents;
	im->dma_addr = sg_dma_address(sgt->sgl);
	im->dma_len = 0;
	for_each_sgtable_dma_sg(sgt, sg, i)
		im->dma_len += sg_dma_len(sg);
	return 0;
}

static void p2pgpu_import_free(struct p2pgpu_import_buf *im)
{
	dma_resv_lock(im->dmabuf->resv, NULL);
	if (im->sgt)
		dma_buf_unmap_attachment(im->attach, im->sgt, DMA_BIDIRECTIONAL);
	im->sgt = NULL;
	dma_resv_unlock(im->dmabuf->resv);
	dma_buf_detach(im->dmabuf, im->attach);
	dma_buf_put(im->dmabuf);
	kfree(im);
}

/*
 * P2PGPU_IOC_IMPORT: this function imports any exporter's dma-buf as a
 * GPU driver would (see struct p2pgpu_import); again on the same fd: map
 * again after an invalidation. _RELEASE: unmap and detach.
 */
static long p2pgpu_ioc_import(struct p2pgpu_file *pf, unsigned int cmd, void __user *uarg)
{
	struct p2pgpu_import_buf *im, *found = NULL;
	struct p2pgpu_import arg;
	struct dma_buf *dmabuf;
	bool dynamic;
	int ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~P2PGPU_IMPORT_F_DYNAMIC)
		return -EINVAL;
	dynamic = arg.flags & P2PGPU_IMPORT_F_DYNAMIC;
	dmabuf = dma_buf_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	mutex_lock(&pf->lock);
	list_for_each_entry(im, &pf->imports, node)
		if (im->dmabuf == dmabuf)
			found = im;
	if (cmd == P2PGPU_IOC_IMPORT_RELEASE) {
		if (!found) {
			ret = -ENOENT;
		} else {
			list_del(&found->node);
			p2pgpu_import_free(found);
		}
		goto out_unlock;
	}
	im = found;
	if (!im) {
		im = kzalloc_obj(*im, GFP_KERNEL);
		if (!im) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		im->gpu = pf->gpu;
		if (dynamic)
			im->attach = dma_buf_dynamic_attach(dmabuf, &pf->gpu->pdev->dev,
							    &p2pgpu_import_ops, im);
		else
			im->attach = dma_buf_attach(dmabuf, &pf->gpu->pdev->dev);
		if (IS_ERR(im->attach)) {
			ret = PTR_ERR(im->attach);
			pci_info(pf->gpu->pdev, "import (%s) refused at attach: %d\n",
				 dynamic ? "dynamic, peer2peer" : "static", ret);
			kfree(im);
			goto out_unlock;
		}
		get_dma_buf(dmabuf);
		im->dmabuf = dmabuf;
	}
	dma_resv_lock(dmabuf->resv, NULL);
	ret = p2pgpu_import_map(im);
	arg.nents = im->nents;
	arg.invalidated = im->invalidated;
	arg.dma_addr = im->dma_addr;
	arg.dma_len = im->dma_len;
	dma_resv_unlock(dmabuf->resv);
	if (ret) {
		pci_info(pf->gpu->pdev, "import (%s) refused at map: %d\n",
			 dynamic ? "dynamic, peer2peer" : "static", ret);
		if (!found)
			p2pgpu_import_free(im);
		goto out_unlock;
	}
	if (!found)
		list_add(&im->node, &pf->imports);
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		ret = -EFAULT;
out_unlock:
	mutex_unlock(&pf->lock);
	dma_buf_put(dmabuf);
	return ret;
}

static long p2pgpu_ioctl(struct file *file, unsigned int cmd, unsigned long uarg)
{
	struct p2pgpu_file *pf = file->private_data;

	switch (cmd) {
	case P2PGPU_IOC_EXPORT:
		return p2pgpu_ioc_export(pf->gpu, (void __user *)uarg);
	case P2PGPU_IOC_WHERE:
	case P2PGPU_IOC_EVICT:
	case P2PGPU_IOC_READ:
	case P2PGPU_IOC_FILL:
		return p2pgpu_ioc_buf(cmd, (void __user *)uarg);
	case P2PGPU_IOC_STATIC_ATTACH:
	case P2PGPU_IOC_STATIC_DETACH:
		return p2pgpu_ioc_static(pf, cmd, (void __user *)uarg);
	case P2PGPU_IOC_IMPORT:
	case P2PGPU_IOC_IMPORT_RELEASE:
		return p2pgpu_ioc_import(pf, cmd, (void __user *)uarg);
	case P2PGPU_IOC_SHRINK:
		return p2pgpu_ioc_shrink(pf->gpu, (void __user *)uarg);
	case P2PGPU_IOC_LAYOUT:
		return p2pgpu_ioc_layout((void __user *)uarg);
	case P2PGPU_IOC_JOB:
		return p2pgpu_ioc_job((void __user *)uarg);
	}
	return -ENOTTY;
}

static int p2pgpu_open(struct inode *inode, struct file *file)
{
	struct p2pgpu *gpu = container_of(file->private_data, struct p2pgpu, misc);
	struct p2pgpu_file *pf = kzalloc_obj(*pf, GFP_KERNEL);

	if (!pf)
		return -ENOMEM;
	mutex_init(&pf->lock);
	INIT_LIST_HEAD(&pf->statics);
	INIT_LIST_HEAD(&pf->imports);
	kref_get(&gpu->kref);
	pf->gpu = gpu;
	file->private_data = pf;
	return 0;
}

static int p2pgpu_file_release(struct inode *inode, struct file *file)
{
	struct p2pgpu_file *pf = file->private_data;
	struct p2pgpu_import_buf *im, *itmp;
	struct p2pgpu_static *s, *tmp;

	list_for_each_entry_safe(im, itmp, &pf->imports, node)
		p2pgpu_import_free(im);
	list_for_each_entry_safe(s, tmp, &pf->statics, node) {
		dma_buf_unmap_attachment_unlocked(s->attach, s->sgt, DMA_BIDIRECTIONAL);
		dma_buf_detach(s->dmabuf, s->attach);
		dma_buf_put(s->dmabuf);
		kfree(s);
	}
	kref_put(&pf->gpu->kref, p2pgpu_free);
	kfree(pf);
	return 0;
}

static const struct file_operations p2pgpu_fops = {
	.owner = THIS_MODULE,
	.open = p2pgpu_open,
	.release = p2pgpu_file_release,
	.unlocked_ioctl = p2pgpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static int p2pgpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct p2pgpu *gpu;
	int ret;

	if (!(pci_resource_flags(pdev, P2PGPU_BAR) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, P2PGPU_BAR) < PAGE_SIZE)
		return -ENODEV;
	gpu = kzalloc_obj(*gpu, GFP_KERNEL);
	if (!gpu)
		return -ENOMEM;
	kref_init(&gpu->kref);
	mutex_init(&gpu->lock);
	mutex_init(&gpu->bos_lock);
	INIT_LIST_HEAD(&gpu->bos);
	ret = pci_enable_device_mem(pdev);
	if (ret)
		goto err_free;
	ret = pci_request_region(pdev, P2PGPU_BAR, KBUILD_MODNAME);
	if (ret)
		goto err_disable;
	gpu->bar = pci_iomap(pdev, P2PGPU_BAR, 0);
	gpu->npages = pci_resource_len(pdev, P2PGPU_BAR) >> PAGE_SHIFT;
	gpu->used = bitmap_zalloc(gpu->npages, GFP_KERNEL);
	if (!gpu->bar || !gpu->used) {
		ret = -ENOMEM;
		goto err_unmap;
	}
	gpu->phys = pci_resource_start(pdev, P2PGPU_BAR);
	gpu->shrinker = p2p_shrinker_create(KBUILD_MODNAME, gpu, p2pgpu_shrink_count,
					    p2pgpu_shrink_scan);
	if (!gpu->shrinker) {
		ret = -ENOMEM;
		goto err_unmap;
	}
	gpu->pdev = pci_dev_get(pdev);
	gpu->misc.minor = MISC_DYNAMIC_MINOR;
	gpu->misc.name = KBUILD_MODNAME;
	gpu->misc.fops = &p2pgpu_fops;
	gpu->misc.mode = 0600;
	mutex_lock(&p2pgpu_dev_lock);
	ret = p2pgpu_dev ? -EBUSY : misc_register(&gpu->misc);
	if (!ret)
		p2pgpu_dev = gpu;
	mutex_unlock(&p2pgpu_dev_lock);
	if (ret) {
		p2p_shrinker_destroy(gpu->shrinker);
		kref_put(&gpu->kref, p2pgpu_free);
		return ret;
	}
	pci_set_drvdata(pdev, gpu);
	pci_info(pdev, "p2pgpu: %lu MiB of BAR %d as \"VRAM\", /dev/%s (bench only)\n",
		 gpu->npages >> (20 - PAGE_SHIFT), P2PGPU_BAR, gpu->misc.name);
	return 0;

err_unmap:
	if (gpu->bar)
		pci_iounmap(pdev, gpu->bar);
	bitmap_free(gpu->used);
	pci_release_region(pdev, P2PGPU_BAR);
err_disable:
	pci_disable_device(pdev);
err_free:
	kfree(gpu);
	return ret;
}

/*
 * The device goes. xe moves every buffer it can out of VRAM, telling
 * importers first (xe_bo_pci_dev_remove_all(); p2pgpu_move()); a buffer
 * pinned in VRAM stays (said in the log). amdgpu's remove evicts nothing:
 * its buffers stay in VRAM, importers not told, unless exported with
 * P2PGPU_EXPORT_F_EVICT_AT_UNBIND (then as xe). nvidia's never move and
 * are never revoked: their importers are not told, and the BAR stays
 * mapped until the last buffer is released.
 */
static void p2pgpu_evict_all(struct p2pgpu *gpu)
{
	struct p2pgpu_bo *bo;

	mutex_lock(&gpu->lock);
	gpu->gone = true;
	mutex_unlock(&gpu->lock);
	mutex_lock(&gpu->bos_lock);
	list_for_each_entry(bo, &gpu->bos, node) {
		struct dma_resv *resv = bo->dmabuf->resv;
		int ret = 0;

		dma_resv_lock(resv, NULL);
		if (bo->personality == P2PGPU_NVIDIA)
			pci_info(gpu->pdev, "nvidia buffer %d: device unbound; importers not told (no revoke), its %s stays until the buffer is released\n",
				 bo->id,
				 bo->place == PLACE_COHERENT ? "coherent memory" : "BAR range");
		else if (bo->place == PLACE_BAR && bo->pins)
			pci_info(gpu->pdev, "%s buffer %d: pinned in VRAM, not evicted at unbind\n",
				 p2pgpu_names[bo->personality], bo->id);
		else if (bo->place == PLACE_BAR && bo->personality == P2PGPU_AMDGPU &&
			 !(bo->flags & P2PGPU_EXPORT_F_EVICT_AT_UNBIND))
			pci_info(gpu->pdev, "amdgpu buffer %d: left in VRAM at unbind, importers not told (amdgpu_pci_remove() evicts nothing)\n",
				 bo->id);
		else
			ret = p2pgpu_move(bo, PLACE_HOST, 0, "device unbound");
		dma_resv_unlock(resv);
		if (ret)
			pci_err(gpu->pdev, "%s buffer %d: not evicted at unbind: %d\n",
				p2pgpu_names[bo->personality], bo->id, ret);
	}
	mutex_unlock(&gpu->bos_lock);
}

/* nvidia's dma-bufs not released yet */
static unsigned int p2pgpu_nv_alive(struct p2pgpu *gpu)
{
	struct p2pgpu_bo *bo;
	unsigned int n = 0;

	mutex_lock(&gpu->bos_lock);
	list_for_each_entry(bo, &gpu->bos, node)
		n += bo->personality == P2PGPU_NVIDIA;
	mutex_unlock(&gpu->bos_lock);
	return n;
}

/*
 * NVIDIA's remove (nv_pci_remove() -> nv_pci_remove_helper()) waits for
 * every reference to the device, and each of its dma-bufs holds one until
 * it is released: it polls every 500 ms, for ever (GPU reset is refused
 * meanwhile). An importer that keeps an nvidia dma-buf holds the unbind.
 * Here the wait is bounded by nv_remove_wait seconds (0: for ever, as
 * NVIDIA's), so that the bench sees a failure rather than a hang; giving
 * up is said in the log, which the tests look for.
 */
static unsigned int nv_remove_wait = 15;
module_param(nv_remove_wait, uint, 0644);
MODULE_PARM_DESC(nv_remove_wait,
		 "seconds nvidia's remove waits for its dma-bufs to be released (0: for ever, as NVIDIA's)");

static void p2pgpu_nv_remove_wait(struct p2pgpu *gpu)
{
	unsigned long t0 = jiffies, bound = READ_ONCE(nv_remove_wait) * HZ;
	unsigned int n = p2pgpu_nv_alive(gpu);

	if (!n)
		return;
	pci_info(gpu->pdev, "nvidia: remove waits for %u dma-bufs to be released (nv_pci_remove_helper(): every 500 ms)\n",
		 n);
	while ((n = p2pgpu_nv_alive(gpu))) {
		if (bound && time_after(jiffies, t0 + bound)) {
			pci_err(gpu->pdev, "nvidia: remove gave up waiting for %u dma-bufs after %u s (NVIDIA's waits for ever: the unbind would hang)\n",
				n, jiffies_to_msecs(jiffies - t0) / 1000);
			return;
		}
		msleep(500);
	}
	pci_info(gpu->pdev, "nvidia: remove: every dma-buf released after %u ms\n",
		 jiffies_to_msecs(jiffies - t0));
}

/*
 * Exports outlive the binding: the BAR stays mapped until the last goes.
 * nvidia's remove waits for its dma-bufs first (p2pgpu_nv_remove_wait()).
 */
static void p2pgpu_remove(struct pci_dev *pdev)
{
	struct p2pgpu *gpu = pci_get_drvdata(pdev);

	/* no pass runs after this: the unbind's own eviction follows */
	p2p_shrinker_destroy(gpu->shrinker);
	gpu->shrinker = NULL;
	p2pgpu_evict_all(gpu);
	p2pgpu_nv_remove_wait(gpu);
	mutex_lock(&p2pgpu_dev_lock);
	misc_deregister(&gpu->misc);
	p2pgpu_dev = NULL;
	mutex_unlock(&p2pgpu_dev_lock);
	kref_put(&gpu->kref, p2pgpu_free);
}

/* no ID table: bound with driver_override only */
static struct pci_driver p2pgpu_driver = {
	.name = KBUILD_MODNAME,
	.probe = p2pgpu_probe,
	.remove = p2pgpu_remove,
};
module_pci_driver(p2pgpu_driver);

P2P_IMPORT_NS("DMA_BUF");
MODULE_DESCRIPTION("Bench-only dma-buf exporter with the behaviour of NVIDIA's, amdgpu's and xe's");
MODULE_VERSION(P2P_VERSION);
MODULE_LICENSE("GPL");
