/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of p2pbar: memory handed out and taken back, dma-buf
 * exports, and the revocation of in-kernel users on removal. See
 * Documentation/p2pbar.rst for a trace-cmd/tracefs recipe.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM p2pbar

#if !defined(_P2PBAR_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _P2PBAR_TRACE_H

#include <linux/pci.h>
#include <linux/tracepoint.h>

/* p2pbar_alloc: a new allocation; p2pbar_return: its pages left p2pbar */
DECLARE_EVENT_CLASS(p2pbar_mem,
		    TP_PROTO(struct pci_dev *pdev, u64 bus_addr, u64 size, const char *what),
		    TP_ARGS(pdev, bus_addr, size, what),
		    TP_STRUCT__entry(__field(u32, dom)
				     __field(u8, bus)
				     __field(u8, devfn)
				     __field(u64, bus_addr)
				     __field(u64, size)
				     __field(const char *, what)),
		    TP_fast_assign(__entry->dom = pci_domain_nr(pdev->bus);
				   __entry->bus = pdev->bus->number;
				   __entry->devfn = pdev->devfn;
				   __entry->bus_addr = bus_addr;
				   __entry->size = size;
				   __entry->what = what;),
		    TP_printk("%04x:%02x:%02x.%u bus %#llx size %llu %s",
			      __entry->dom, __entry->bus,
			      PCI_SLOT(__entry->devfn), PCI_FUNC(__entry->devfn),
			      __entry->bus_addr, __entry->size, __entry->what)
);

/* @what: "user" (ALLOC, mmap), "kernel" (p2pbar_alloc(): in-kernel users, dma-bufs) */
DEFINE_EVENT(p2pbar_mem, p2pbar_alloc,
	     TP_PROTO(struct pci_dev *pdev, u64 bus_addr, u64 size, const char *what),
	     TP_ARGS(pdev, bus_addr, size, what));

/* @what: "returned" (zeroed, back to the pool) or "quarantined" */
DEFINE_EVENT(p2pbar_mem, p2pbar_return,
	     TP_PROTO(struct pci_dev *pdev, u64 bus_addr, u64 size, const char *what),
	     TP_ARGS(pdev, bus_addr, size, what));

/* @what: "dma-buf" */
DEFINE_EVENT(p2pbar_mem, p2pbar_export,
	     TP_PROTO(struct pci_dev *pdev, u64 bus_addr, u64 size, const char *what),
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
