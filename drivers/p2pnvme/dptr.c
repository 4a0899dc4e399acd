// SPDX-License-Identifier: GPL-2.0
/*
 * p2pnvme: data pointers. A cursor walks a DMA-mapped scatterlist command
 * by command; PRP1/PRP2 or a PRP list, or SGL data block descriptors,
 * describe each command's share. Pure functions of the mapping (KUnit
 * tests them against hand-made scatterlists).
 */
#include <linux/dma-mapping.h>
#include <linux/scatterlist.h>
#include <kunit/visibility.h>

#include "dptr.h"

/* ---- data pointers ----------------------------------------------------- */

static dma_addr_t cursor_addr(struct p2pnvme_cursor *cur)
{
	return sg_dma_address(cur->sg) + cur->off;
}

void p2pnvme_cursor_advance(struct p2pnvme_cursor *cur, u64 n)
{
	while (n && cur->sg) {
		u64 step = min_t(u64, n, sg_dma_len(cur->sg) - cur->off);

		cur->off += step;
		n -= step;
		if (cur->off == sg_dma_len(cur->sg)) {
			cur->sg = sg_next(cur->sg);
			cur->off = 0;
		}
	}
}

/**
 * p2pnvme_data_needs_list - does a command's data need a PRP list or an SGL
 *	segment, or fit into the command itself
 * @cur: where the data starts in a DMA-mapped scatterlist
 * @len: bytes
 * @sgl: described with SGLs (else PRPs)
 *
 * Exactly what p2pnvme_build_prps() and p2pnvme_build_sgl() need: PRP1 and
 * PRP2 cover the data up to the end of its second controller page, one SGL
 * data block descriptor what is left of the current segment.
 *
 * Return: true if a list is needed.
 */
bool p2pnvme_data_needs_list(const struct p2pnvme_cursor *cur, u64 len, bool sgl)
{
	dma_addr_t addr;

	if (!cur->sg)
		return false;	/* the build fails without a list just as well */
	if (sgl)
		return len > sg_dma_len(cur->sg) - cur->off;
	addr = sg_dma_address(cur->sg) + cur->off;
	return len > 2 * P2PNVME_CTRL_PAGE - (addr & (P2PNVME_CTRL_PAGE - 1));
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_data_needs_list);

/* p2pnvme_build_prps() past its one-segment case: page by page */
static noinline int build_prps_walk(__le64 *list, dma_addr_t list_dma,
				    struct p2pnvme_cursor *cur, dma_addr_t addr, u64 first,
				    u64 len, struct nvme_command *cmd)
{
	dma_addr_t second = 0;
	int n = 0;

	/* the first PRP may not cross the end of its segment into another */
	if (first > sg_dma_len(cur->sg) - cur->off)
		return -EINVAL;
	cmd->rw.dptr.prp1 = cpu_to_le64(addr);
	p2pnvme_cursor_advance(cur, first);
	len -= first;
	while (len) {
		u64 step = min_t(u64, len, P2PNVME_CTRL_PAGE);

		if (!cur->sg)
			return -EINVAL;
		addr = cursor_addr(cur);
		if (addr & (P2PNVME_CTRL_PAGE - 1))
			return -EINVAL;
		if (step > sg_dma_len(cur->sg) - cur->off)
			return -EINVAL;	/* a page split over two segments */
		if (n == P2PNVME_LIST_SIZE / sizeof(__le64) || (n && !list))
			return -E2BIG;
		if (list)
			list[n] = cpu_to_le64(addr);
		if (!n)
			second = addr;
		n++;
		p2pnvme_cursor_advance(cur, step);
		len -= step;
	}
	if (n == 1)
		cmd->rw.dptr.prp2 = cpu_to_le64(second);
	else if (n > 1)
		cmd->rw.dptr.prp2 = cpu_to_le64(list_dma);
	return 0;
}

/**
 * p2pnvme_build_prps - describe data with PRP1/PRP2 or a PRP list
 * @list: the command's list page (P2PNVME_LIST_SIZE bytes), or NULL when
 *	  p2pnvme_data_needs_list() said none is needed
 * @list_dma: its bus address
 * @cur: where the data starts in a DMA-mapped scatterlist; advanced by @len
 * @len: bytes
 * @cmd: the command whose data pointer is filled in
 *
 * Return: 0, -EINVAL when the mapped segments cannot be PRPs (every entry
 * after the first must start on a controller page, every one before the
 * last end on one) or the list runs short, -E2BIG when the list is full
 * (or needed and missing).
 */
int p2pnvme_build_prps(__le64 *list, dma_addr_t list_dma, struct p2pnvme_cursor *cur,
		       u64 len, struct nvme_command *cmd)
{
	dma_addr_t addr;
	u64 first;

	if (!cur->sg || !len)
		return -EINVAL;
	addr = cursor_addr(cur);
	if (addr & 3)
		return -EINVAL;		/* PRPs are dword aligned */
	first = min_t(u64, len, P2PNVME_CTRL_PAGE - (addr & (P2PNVME_CTRL_PAGE - 1)));
	/*
	 * Most commands (every 4 KiB one): PRP1, and PRP2 past the first
	 * page, inside the cursor's segment (a request of one segment: all
	 * of it, the cursor moving on to the next). What the walk does for
	 * them, without its loop.
	 */
	if (len - first <= P2PNVME_CTRL_PAGE && len <= sg_dma_len(cur->sg) - cur->off) {
		cmd->rw.dptr.prp1 = cpu_to_le64(addr);
		if (len > first)
			cmd->rw.dptr.prp2 = cpu_to_le64(addr + first);
		p2pnvme_cursor_advance(cur, len);
		return 0;
	}
	return build_prps_walk(list, list_dma, cur, addr, first, len, cmd);
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_build_prps);

/* p2pnvme_build_sgl() past its one-segment case: segment by segment */
static noinline int build_sgl_walk(struct nvme_sgl_desc *list, dma_addr_t list_dma,
				   struct p2pnvme_cursor *cur, u64 len, struct nvme_command *cmd)
{
	struct nvme_sgl_desc d = {};
	int n = 0;

	while (len) {
		u64 step;

		if (!cur->sg)
			return -EINVAL;
		step = min_t(u64, len, sg_dma_len(cur->sg) - cur->off);
		if (n == P2PNVME_LIST_SIZE / sizeof(*list) || (n && !list))
			return -E2BIG;
		d.addr = cpu_to_le64(cursor_addr(cur));
		d.length = cpu_to_le32(step);
		d.type = NVME_SGL_FMT_DATA_DESC << 4;
		if (list)
			list[n] = d;
		n++;
		p2pnvme_cursor_advance(cur, step);
		len -= step;
	}
	if (n == 1) {
		cmd->rw.dptr.sgl = d;
	} else {
		cmd->rw.dptr.sgl.addr = cpu_to_le64(list_dma);
		cmd->rw.dptr.sgl.length = cpu_to_le32(n * sizeof(*list));
		cmd->rw.dptr.sgl.type = NVME_SGL_FMT_LAST_SEG_DESC << 4;
	}
	return 0;
}

/**
 * p2pnvme_build_sgl - describe data with SGL data block descriptors
 * @list: the command's list page, room for P2PNVME_LIST_SIZE / 16
 *	  descriptors, or NULL when p2pnvme_data_needs_list() said none is
 *	  needed
 * @list_dma: its bus address
 * @cur: where the data starts in a DMA-mapped scatterlist; advanced by @len
 * @len: bytes
 * @cmd: the command whose data pointer is filled in
 *
 * One segment of the scatterlist is one descriptor; a single descriptor goes
 * into the command itself, several into @list behind a last-segment
 * descriptor.
 *
 * Return: 0, -EINVAL when the scatterlist runs short, -E2BIG when the list
 * is full (or needed and missing).
 */
int p2pnvme_build_sgl(struct nvme_sgl_desc *list, dma_addr_t list_dma,
		      struct p2pnvme_cursor *cur, u64 len, struct nvme_command *cmd)
{
	struct nvme_sgl_desc d = {};

	if (!len)
		return -EINVAL;
	cmd->rw.flags = NVME_CMD_SGL_METABUF;
	/*
	 * Most commands: one descriptor in the command, inside the cursor's
	 * segment (a request of one segment: all of it, the cursor moving on
	 * to the next). What the walk does for them, without its loop.
	 */
	if (cur->sg && len <= sg_dma_len(cur->sg) - cur->off) {
		d.addr = cpu_to_le64(cursor_addr(cur));
		d.length = cpu_to_le32(len);
		d.type = NVME_SGL_FMT_DATA_DESC << 4;
		cmd->rw.dptr.sgl = d;
		p2pnvme_cursor_advance(cur, len);
		return 0;
	}
	return build_sgl_walk(list, list_dma, cur, len, cmd);
}
EXPORT_SYMBOL_IF_KUNIT(p2pnvme_build_sgl);

/*
 * The device's own answer (6.11+): no mapping of it needs syncs until one
 * is bounced through swiotlb, which clears it before that mapping is
 * returned. dma_need_sync() ignores it with CONFIG_DMA_API_DEBUG (every
 * sync is then made, for the debug checks to see) and, behind an IOMMU,
 * answers "needs syncs" for every address: read as a refusal, that made
 * every dma-buf import -EOPNOTSUPP on a debug kernel with an IOMMU.
 * Before 6.11 there is no such answer: behind an IOMMU dma_need_sync()
 * is true whatever the mapping (the IOMMU's ops have sync methods).
 */
static bool dev_skips_sync(struct device *dev)
{
#if defined(HAVE_DEV_DMA_SKIP_SYNC_FN)
	return dev_dma_skip_sync(dev);
#elif defined(HAVE_DEV_DMA_SKIP_SYNC)
	return dev->dma_skip_sync;
#else
	return false;
#endif
}

/**
 * p2pnvme_dma_need_sync - does the DMA layer want syncs for any segment of
 *	a mapping (swiotlb's bounce slots, a non-coherent device)?
 * @dev: the device it is mapped for
 * @sgt: the mapping, made before the call
 *
 * Return: true if it does.
 */
bool p2pnvme_dma_need_sync(struct device *dev, struct sg_table *sgt)
{
	struct scatterlist *sg;
	unsigned int i;

	if (dev_skips_sync(dev))
		return false;
	for_each_sgtable_dma_sg(sgt, sg, i)
		if (dma_need_sync(dev, sg_dma_address(sg)))
			return true;
	return false;
}
