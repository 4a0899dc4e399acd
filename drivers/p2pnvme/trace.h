/* SPDX-License-Identifier: GPL-2.0 */
/* Tracepoints of the p2pnvme queue engine: every submission and completion. */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM p2pnvme

#if !defined(_P2PNVME_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _P2PNVME_TRACE_H

#include <linux/pci.h>
#include <linux/tracepoint.h>

TRACE_EVENT(p2pnvme_submit,
	    TP_PROTO(struct pci_dev *pdev, u16 qid, u16 cid, u8 opcode, u64 dptr),
	    TP_ARGS(pdev, qid, cid, opcode, dptr),
	    TP_STRUCT__entry(__field(u16, dom)
			     __field(u8, bus)
			     __field(u8, devfn)
			     __field(u16, qid)
			     __field(u16, cid)
			     __field(u8, opcode)
			     __field(u64, dptr)),
	    TP_fast_assign(__entry->dom = pci_domain_nr(pdev->bus);
			   __entry->bus = pdev->bus->number;
			   __entry->devfn = pdev->devfn;
			   __entry->qid = qid;
			   __entry->cid = cid;
			   __entry->opcode = opcode;
			   __entry->dptr = dptr;),
	    TP_printk("%04x:%02x:%02x.%u q%u cid %u opcode %#x dptr %#llx",
		      __entry->dom, __entry->bus,
		      PCI_SLOT(__entry->devfn), PCI_FUNC(__entry->devfn),
		      __entry->qid, __entry->cid,
		      __entry->opcode, __entry->dptr)
);

TRACE_EVENT(p2pnvme_complete,
	    TP_PROTO(struct pci_dev *pdev, u16 qid, u16 cid, u16 status),
	    TP_ARGS(pdev, qid, cid, status),
	    TP_STRUCT__entry(__field(u16, dom)
			     __field(u8, bus)
			     __field(u8, devfn)
			     __field(u16, qid)
			     __field(u16, cid)
			     __field(u16, status)),
	    TP_fast_assign(__entry->dom = pci_domain_nr(pdev->bus);
			   __entry->bus = pdev->bus->number;
			   __entry->devfn = pdev->devfn;
			   __entry->qid = qid;
			   __entry->cid = cid;
			   __entry->status = status;),
	    TP_printk("%04x:%02x:%02x.%u q%u cid %u status %#x",
		      __entry->dom, __entry->bus,
		      PCI_SLOT(__entry->devfn), PCI_FUNC(__entry->devfn),
		      __entry->qid, __entry->cid,
		      __entry->status)
);

#endif /* _P2PNVME_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
