/* SPDX-License-Identifier: GPL-2.0 */
/*
 * p2pbar: in-kernel interface of the BAR provider.
 *
 * A provider instance (struct p2pbar) exists for each PCI function bound to
 * the p2pbar driver. Users look one up, take a reference, allocate p2pmem
 * with a revoke callback and free it again. When the provider goes away
 * (unbind, rmmod, hot-unplug) every user's revoke callback is called and the
 * provider waits, bounded, for the memory to be freed before tearing down.
 */
#ifndef _LINUX_P2PBAR_H
#define _LINUX_P2PBAR_H

#include <linux/pci.h>
#include <linux/types.h>
#include <uapi/linux/p2pbar.h>

struct p2pbar;
struct p2pbar_mem;

/**
 * struct p2pbar_user_ops - callbacks of an in-kernel p2pmem user
 * @revoke: the provider is going away. Stop DMA to @mem and call
 *	    p2pbar_free() on it, from this callback or soon after (another
 *	    thread or a work item, which the callback may flush: p2pbar_free()
 *	    never waits for the callback). Called without provider locks
 *	    held, in process context, at most once per allocation; not for
 *	    an allocation p2pbar_free() had marked freed when the revocation
 *	    got to it, but the revocation may pick it just before: the
 *	    callback may then run while, or begin just after, another
 *	    thread frees @mem. So the user frees it once (taken under its
 *	    own lock, as the dma-buf exporter does); mandatory.
 * @release: optional. p2pbar is done with @priv: p2pbar_free() was called
 *	     and no revoke callback runs or will run. Called once, from
 *	     p2pbar_free() or, if the callback still ran then, from the
 *	     revocation's work item right after it returned. A user that
 *	     frees @priv, or lets its module go, does it here; without
 *	     @release, @priv must outlive any revoke callback.
 */
struct p2pbar_user_ops {
	void (*revoke)(struct p2pbar_mem *mem, void *priv);
	void (*release)(void *priv);
};

/* the topology paths, shared with p2pctl: common/p2p_verdict.h */
#include <p2p_verdict.h>

void p2pbar_verdict_compute(const struct p2pbar_topo_path *provider,
			    const struct p2pbar_topo_path *client,
			    bool cpu_routes_p2p, struct p2pbar_verdict *v);
void p2pbar_verdict_reconcile(struct p2pbar_verdict *v, int kernel_distance);
int p2pbar_topo_path_fill(struct pci_dev *pdev, struct p2pbar_topo_path *path);
int p2pbar_verdict(struct pci_dev *provider, struct pci_dev *client,
		   struct p2pbar_verdict *v);
int p2pbar_verdict_explain(const struct p2pbar_verdict *v, char *buf, size_t len);
const char *p2pbar_map_name(u32 map_type);

struct p2pbar *p2pbar_get(struct pci_dev *pdev);
struct p2pbar *p2pbar_find(struct device *client);
void p2pbar_put(struct p2pbar *pb);
struct pci_dev *p2pbar_pci_dev(struct p2pbar *pb);

struct p2pbar_mem *p2pbar_alloc(struct p2pbar *pb, size_t size,
				const struct p2pbar_user_ops *ops, void *priv);
void p2pbar_free(struct p2pbar_mem *mem);
void *p2pbar_mem_vaddr(struct p2pbar_mem *mem);
pci_bus_addr_t p2pbar_mem_bus_addr(struct p2pbar_mem *mem);
size_t p2pbar_mem_size(struct p2pbar_mem *mem);

struct dma_buf;
#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
struct dma_buf *p2pbar_dmabuf_export(struct p2pbar *pb, size_t size, pci_bus_addr_t *bus_addr);
struct page *p2pbar_dmabuf_pages(struct dma_buf *dmabuf, u64 offset, u64 len,
				 struct pci_dev **provider);
void p2pbar_dmabuf_pages_put(struct dma_buf *dmabuf);
#else
static inline struct dma_buf *p2pbar_dmabuf_export(struct p2pbar *pb, size_t size,
						   pci_bus_addr_t *bus_addr)
{
	return ERR_PTR(-EOPNOTSUPP);
}
#endif

#endif /* _LINUX_P2PBAR_H */
