/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of p2pbar: memory handed out and taken back, dma-buf
 * exports, and the revocation of in-kernel users on removal. See
 * Documentation/p2pbar.rst for a trace-cmd/tracefs recipe.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM p2pbar

#ifndef P2PBAR_TRACE_WHAT
#define P2PBAR_TRACE_WHAT
/* what an allocation event is about (no string pointers: modules unload) */
enum p2pbar_trace_what {
	P2PBAR_TRACE_USER,		/* ALLOC, mmap */
	P2PBAR_TRACE_KERNEL,		/* p2pbar_alloc(): in-kernel users, dma-bufs */
	P2PBAR_TRACE_RETURNED,		/* zeroed, back to the pool */
	P2PBAR_TRACE_QUARANTINED,	/* a user that ignored its revocation */
	P2PBAR_TRACE_DMABUF,		/* exported */
};
#endif

#if !defined(_P2PBAR_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _P2PBAR_TRACE_H

#include <linux/pci.h>
#include <linux/tracepoint.h>

TRACE_DEFINE_ENUM(P2PBAR_TRACE_USER);
TRACE_DEFINE_ENUM(P2PBAR_TRACE_KERNEL);
TRACE_DEFINE_ENUM(P2PBAR_TRACE_RETURNED);
TRACE_DEFINE_ENUM(P2PBAR_TRACE_QUARANTINED);
TRACE_DEFINE_ENUM(P2PBAR_TRACE_DMABUF);

/* p2pbar_alloc: a new allocation; p2pbar_return: its pages left p2pbar */
DECLARE_EVENT_CLASS(p2pbar_mem,
		    TP_PROTO(struct pci_dev *pdev, u64 bus_addr, u64 size, unsigned int what),
		    TP_ARGS(pdev, bus_addr, size, what),
		    TP_STRUCT__entry(__field(u32, dom)
				     __field(u8, bus)
				     __field(u8, devfn)
				     __field(u64, bus_addr)
				     __field(u64, size)
				     __field(unsigned int, what)),
		    TP_fast_assign(__entry->dom = pci_domain_nr(pdev->bus);
				   __entry->bus = pdev->bus->number;
				   __entry->devfn = pdev->devfn;
				   __entry->bus_addr = bus_addr;
				   __entry->size = size;
				   __entry->what = what;),
		    TP_printk("%04x:%02x:%02x.%u bus %#llx size %llu %s",
			      __entry->dom, __entry->bus,
			      PCI_SLOT(__entry->devfn), PCI_FUNC(__entry->devfn),
			      __entry->bus_addr, __entry->size,
			      __print_symbolic(__entry->what,
					       { P2PBAR_TRACE_USER, "user" },
					       { P2PBAR_TRACE_KERNEL, "kernel" },
					       { P2PBAR_TRACE_RETURNED, "returned" },
					       { P2PBAR_TRACE_QUARANTINED, "quarantined" },
					       { P2PBAR_TRACE_DMABUF, "dma-buf" }))
);

/* @what: P2PBAR_TRACE_USER or _KERNEL */
DEFINE_EVENT(p2pbar_mem, p2pbar_alloc,
	     TP_PROTO(struct pci_dev *pdev, u64 bus_addr, u64 size, unsigned int what),
	     TP_ARGS(pdev, bus_addr, size, what));

/* @what: P2PBAR_TRACE_RETURNED or _QUARANTINED */
DEFINE_EVENT(p2pbar_mem, p2pbar_return,
	     TP_PROTO(struct pci_dev *pdev, u64 bus_addr, u64 size, unsigned int what),
	     TP_ARGS(pdev, bus_addr, size, what));

/* @what: P2PBAR_TRACE_DMABUF */
DEFINE_EVENT(p2pbar_mem, p2pbar_export,
	     TP_PROTO(struct pci_dev *pdev, u64 bus_addr, u64 size, unsigned int what),
	     TP_ARGS(pdev, bus_addr, size, what));

/* removal asks @users in-kernel users to give memory back; @left did not */
TRACE_EVENT(p2pbar_revoke,
	    TP_PROTO(struct pci_dev *pdev, bool done, unsigned int users, unsigned int left,
		     unsigned int ms),
	    TP_ARGS(pdev, done, users, left, ms),
	    TP_STRUCT__entry(__field(u32, dom)
			     __field(u8, bus)
			     __field(u8, devfn)
			     __field(bool, done)
			     __field(unsigned int, users)
			     __field(unsigned int, left)
			     __field(unsigned int, ms)),
	    TP_fast_assign(__entry->dom = pci_domain_nr(pdev->bus);
			   __entry->bus = pdev->bus->number;
			   __entry->devfn = pdev->devfn;
			   __entry->done = done;
			   __entry->users = users;
			   __entry->left = left;
			   __entry->ms = ms;),
	    TP_printk("%04x:%02x:%02x.%u %s users %u left %u after %u ms",
		      __entry->dom, __entry->bus,
		      PCI_SLOT(__entry->devfn), PCI_FUNC(__entry->devfn),
		      __entry->done ? "end" : "begin", __entry->users, __entry->left, __entry->ms)
);

#endif /* _P2PBAR_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
