/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of p2pnvme: every submission and completion of the queue
 * engine, the path each transfer takes and why, bounce copies, controller
 * resets. See Documentation/p2pnvme.rst for a trace-cmd/tracefs recipe.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM p2pnvme

#if !defined(_P2PNVME_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _P2PNVME_TRACE_H

#include <linux/pci.h>
#include <linux/tracepoint.h>

TRACE_EVENT(p2pnvme_submit,
	    TP_PROTO(struct pci_dev *pdev, u16 qid, u16 cid, u8 opcode, u64 dptr),
	    TP_ARGS(pdev, qid, cid, opcode, dptr),
	    TP_STRUCT__entry(__field(u32, dom)
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
	    TP_STRUCT__entry(__field(u32, dom)
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

/* the symbols below, for tools that parse the format files (trace-cmd, perf) */
TRACE_DEFINE_ENUM(P2PNVME_PATH_NONE);
TRACE_DEFINE_ENUM(P2PNVME_PATH_P2P);
TRACE_DEFINE_ENUM(P2PNVME_PATH_BOUNCE);
TRACE_DEFINE_ENUM(P2PNVME_PATH_HOST);
TRACE_DEFINE_ENUM(P2PNVME_PATH_DMABUF);
TRACE_DEFINE_ENUM(P2PNVME_PATH_DMABUF_HOST);
TRACE_DEFINE_ENUM(P2PNVME_PATH_DMABUF_COHERENT);
TRACE_DEFINE_ENUM(P2PNVME_WHY_HOST);
TRACE_DEFINE_ENUM(P2PNVME_WHY_REACHABLE);
TRACE_DEFINE_ENUM(P2PNVME_WHY_FORCED);
TRACE_DEFINE_ENUM(P2PNVME_WHY_TOPOLOGY);
TRACE_DEFINE_ENUM(P2PNVME_WHY_POLICY);
TRACE_DEFINE_ENUM(P2PNVME_WHY_DMABUF);
TRACE_DEFINE_ENUM(P2PNVME_WHY_REQUIRED);
TRACE_DEFINE_ENUM(P2PNVME_WHY_UNREACHABLE);
TRACE_DEFINE_ENUM(P2PNVME_WHY_COHERENT);

/*
 * The path a transfer took (enum p2pnvme_path; NONE: refused), why (enum
 * p2pnvme_why), and for a dma-buf in a device's memory the PCI function
 * whose BAR it is (owner, "-" otherwise).
 */
TRACE_EVENT(p2pnvme_path,
	    TP_PROTO(struct pci_dev *pdev, bool write, u64 slba, u64 len, unsigned int path,
		     unsigned int why, const char *owner),
	    TP_ARGS(pdev, write, slba, len, path, why, owner),
	    TP_STRUCT__entry(__field(u32, dom)
			     __field(u8, bus)
			     __field(u8, devfn)
			     __field(bool, write)
			     __field(u64, slba)
			     __field(u64, len)
			     __field(unsigned int, path)
			     __field(unsigned int, why)
			     __array(char, owner, P2PNVME_OWNER_LEN)),
	    TP_fast_assign(__entry->dom = pci_domain_nr(pdev->bus);
			   __entry->bus = pdev->bus->number;
			   __entry->devfn = pdev->devfn;
			   __entry->write = write;
			   __entry->slba = slba;
			   __entry->len = len;
			   __entry->path = path;
			   __entry->why = why;
			   strscpy(__entry->owner, owner[0] ? owner : "-", P2PNVME_OWNER_LEN);),
	    TP_printk("%04x:%02x:%02x.%u %s slba %llu len %llu path %s (%s) owner %s",
		      __entry->dom, __entry->bus,
		      PCI_SLOT(__entry->devfn), PCI_FUNC(__entry->devfn),
		      __entry->write ? "write" : "read", __entry->slba, __entry->len,
		      __print_symbolic(__entry->path,
				       { P2PNVME_PATH_NONE, "refused" },
				       { P2PNVME_PATH_P2P, "p2p" },
				       { P2PNVME_PATH_BOUNCE, "bounce" },
				       { P2PNVME_PATH_HOST, "host" },
				       { P2PNVME_PATH_DMABUF, "dmabuf" },
				       { P2PNVME_PATH_DMABUF_HOST, "dmabuf-host" },
				       { P2PNVME_PATH_DMABUF_COHERENT, "dmabuf-coherent" }),
		      __print_symbolic(__entry->why,
				       { P2PNVME_WHY_HOST, "host memory" },
				       { P2PNVME_WHY_REACHABLE, "controller reaches the provider" },
				       { P2PNVME_WHY_FORCED, "bounce asked for" },
				       { P2PNVME_WHY_TOPOLOGY, "topology refuses P2P" },
				       { P2PNVME_WHY_POLICY, "P2P refused, bouncing not allowed" },
				       { P2PNVME_WHY_DMABUF, "dma-buf, the exporter maps" },
				       { P2PNVME_WHY_REQUIRED, "host memory, P2P required" },
				       { P2PNVME_WHY_UNREACHABLE,
					 "P2PDMA verdict refuses the owner" },
				       { P2PNVME_WHY_COHERENT,
					 "CPU-coherent device memory, P2P required" }),
		      __entry->owner)
);

TRACE_EVENT(p2pnvme_bounce_copy,
	    TP_PROTO(struct pci_dev *pdev, u64 len, bool to_p2pmem),
	    TP_ARGS(pdev, len, to_p2pmem),
	    TP_STRUCT__entry(__field(u32, dom)
			     __field(u8, bus)
			     __field(u8, devfn)
			     __field(u64, len)
			     __field(bool, to_p2pmem)),
	    TP_fast_assign(__entry->dom = pci_domain_nr(pdev->bus);
			   __entry->bus = pdev->bus->number;
			   __entry->devfn = pdev->devfn;
			   __entry->len = len;
			   __entry->to_p2pmem = to_p2pmem;),
	    TP_printk("%04x:%02x:%02x.%u %llu bytes %s",
		      __entry->dom, __entry->bus,
		      PCI_SLOT(__entry->devfn), PCI_FUNC(__entry->devfn), __entry->len,
		      __entry->to_p2pmem ? "host -> p2pmem" : "p2pmem -> host")
);

TRACE_EVENT(p2pnvme_reset,
	    TP_PROTO(struct pci_dev *pdev, bool done, int result),
	    TP_ARGS(pdev, done, result),
	    TP_STRUCT__entry(__field(u32, dom)
			     __field(u8, bus)
			     __field(u8, devfn)
			     __field(bool, done)
			     __field(int, result)),
	    TP_fast_assign(__entry->dom = pci_domain_nr(pdev->bus);
			   __entry->bus = pdev->bus->number;
			   __entry->devfn = pdev->devfn;
			   __entry->done = done;
			   __entry->result = result;),
	    TP_printk("%04x:%02x:%02x.%u %s result %d",
		      __entry->dom, __entry->bus,
		      PCI_SLOT(__entry->devfn), PCI_FUNC(__entry->devfn),
		      __entry->done ? "end" : "begin", __entry->result)
);

#endif /* _P2PNVME_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
