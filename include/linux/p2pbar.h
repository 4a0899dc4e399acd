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

#include <linux/dma-buf.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/string.h>
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

/* the name of p2pbar's module, by which p2pbar_dmabuf_ops_of() knows it */
#define P2PBAR_MODNAME	"p2pbar"

/**
 * struct p2pbar_dmabuf_ops - the operations of every dma-buf p2pbar exports
 * @ops: its dma-buf operations: such a dma-buf's ->ops is &@ops
 * @pages: p2pbar_dmabuf_pages()
 * @pages_put: p2pbar_dmabuf_pages_put()
 *
 * p2pbar's in-kernel calls on its own dma-bufs, reached through the
 * dma-buf itself (p2pbar_dmabuf_ops_of()): an importer that must not
 * depend on p2pbar's module (p2pnvme's file command) calls them without a
 * symbol lookup, a module reference or a cache of its own.
 */
struct p2pbar_dmabuf_ops {
	struct dma_buf_ops ops;
	struct page *(*pages)(struct dma_buf *dmabuf, u64 offset, u64 len,
			      struct pci_dev **provider);
	void (*pages_put)(struct dma_buf *dmabuf);
};

extern const struct p2pbar_dmabuf_ops p2pbar_dmabuf_ops;

/**
 * p2pbar_dmabuf_ops_of - p2pbar's calls on a dma-buf, if p2pbar exported it
 * @dmabuf: a dma-buf the caller holds a reference to, of any exporter
 *
 * A dma-buf holds its exporter's module (dmabuf->owner, taken by
 * dma_buf_export() and put at its release), so the calls returned stay
 * valid for as long as the caller holds @dmabuf, whatever p2pbar's module
 * does meanwhile: it cannot be unloaded, and a p2pbar loaded again later
 * is found afresh through its own dma-bufs. Nothing is looked up by symbol
 * and nothing is cached, so nothing can go stale, and the caller holds no
 * reference to p2pbar's module beyond the dma-buf's own.
 *
 * A modular p2pbar is known by its module's name (P2PBAR_MODNAME), unique
 * among the loaded modules, and exports no dma-buf with other operations
 * than p2pbar_dmabuf_ops (drivers/p2pbar/dmabuf.c); a built-in one (no
 * module to depend on, and dmabuf->owner NULL) by its operations' address.
 * The caller's cost: a look at the owner's name, no lock, no atomic.
 *
 * Return: p2pbar's operations, or NULL for another exporter's dma-buf.
 */
static inline const struct p2pbar_dmabuf_ops *p2pbar_dmabuf_ops_of(const struct dma_buf *dmabuf)
{
#if IS_BUILTIN(CONFIG_P2PBAR)
	if (dmabuf->ops != &p2pbar_dmabuf_ops.ops)
		return NULL;
#else
	if (!dmabuf->owner || strcmp(module_name(dmabuf->owner), P2PBAR_MODNAME))
		return NULL;
#endif
	return container_of(dmabuf->ops, struct p2pbar_dmabuf_ops, ops);
}
#else
static inline struct dma_buf *p2pbar_dmabuf_export(struct p2pbar *pb, size_t size,
						   pci_bus_addr_t *bus_addr)
{
	return ERR_PTR(-EOPNOTSUPP);
}
#endif

#endif /* _LINUX_P2PBAR_H */
