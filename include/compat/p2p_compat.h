/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One place for kernel API differences, written to the newest API (7.2).
 * The HAVE_* macros come from scripts/conftest.sh compile probes; no
 * LINUX_VERSION_CODE tests anywhere in the suite.
 */
#ifndef P2P_COMPAT_H
#define P2P_COMPAT_H

#include <compat_autoconf.h>
#include <linux/device.h>
#include <linux/mm.h>
#include <linux/memremap.h>

/* kzalloc_obj() arrived in 7.x; before it, the same is kzalloc(sizeof(*ptr), gfp). */
#include <linux/slab.h>
#ifndef kzalloc_obj
#define kzalloc_obj(P, GFP)	kzalloc(sizeof(P), GFP)
#endif

/* class_create() lost its owner argument in 6.4. */
#ifdef HAVE_CLASS_CREATE_NAME_ONLY
#define p2p_class_create(name)	class_create(name)
#else
#define p2p_class_create(name)	class_create(THIS_MODULE, name)
#endif

/* vma->vm_flags became read-only in 6.3. */
#ifndef HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, unsigned long flags)
{
	vma->vm_flags |= flags;
}
#endif

/* page->pgmap is read through page_pgmap() since 6.14. */
#ifndef HAVE_PAGE_PGMAP
static inline struct dev_pagemap *page_pgmap(const struct page *page)
{
	return page->pgmap;
}
#endif

/*
 * P2P pages carry a page_free()/folio_free() callback and may be mapped to
 * userspace (and pinned by GUP with FOLL_PCI_P2PDMA) since 6.2. Before that
 * the provider can hand out memory to in-kernel users only.
 */
#ifdef HAVE_FOLL_PCI_P2PDMA
#define P2P_HAVE_USER_PAGES	1
#else
#define P2P_HAVE_USER_PAGES	0
#endif

/* pcim_iomap_region() replaced pcim_iomap_regions() + pcim_iomap_table() in 6.11. */
#ifndef HAVE_PCIM_IOMAP_REGION
#include <linux/pci.h>
static inline void __iomem *pcim_iomap_region(struct pci_dev *pdev, int bar, const char *name)
{
	int ret = pcim_iomap_regions(pdev, BIT(bar), name);

	return ret ? IOMEM_ERR_PTR(ret) : pcim_iomap_table(pdev)[bar];
}
#endif

/*
 * MODULE_IMPORT_NS() takes a bare token before 6.13 and a string after; the
 * module info it emits is the same string on every kernel.
 */
#define P2P_IMPORT_NS(ns)	MODULE_INFO(import_ns, ns)

#endif /* P2P_COMPAT_H */
