/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * p2pbar: a PCI BAR exposed as p2pmem, userspace interface.
 *
 * Every ioctl argument starts with argsz (the size userspace filled in) and
 * flags; unknown flags and non-zero reserved fields are rejected with
 * -EINVAL so that they can be given a meaning later. Structures have no
 * implicit padding and the same layout on 32- and 64-bit ABIs.
 *
 * Extension, the one scheme (as vfio and openat2 have it): command numbers
 * do not encode a size (_IO), structures only grow at the end, and argsz
 * says how much the caller passed. An older, shorter structure is accepted
 * down to the end of the structure's first version (vfio's minsz; smaller:
 * -EINVAL), the members it lacks read as zero; a larger one is accepted
 * when every byte the kernel does not know is zero (-E2BIG otherwise). The
 * kernel writes back no more than argsz bytes, and of those only the part
 * it knows. Arrays of structures (P2PNVME_IOC_SUBMIT's entries) have a
 * fixed stride: each entry's argsz is exactly the size of this version.
 *
 * PCI functions are named by domain (all 32 bits: VMD domains start at
 * 0x10000) and devid (bus << 8 | devfn).
 */
#ifndef _UAPI_LINUX_P2PBAR_H
#define _UAPI_LINUX_P2PBAR_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* ioctl code 0xB9, numbers 0x00-0x1F (p2pnvme has 0x20-0x3F): free in 7.2's ioctl-number.rst */
#define P2PBAR_IOC_MAGIC	0xB9

/* Topology verdict between the provider and a client function. */
enum p2pbar_map_type {
	P2PBAR_MAP_REFUSED	= 0,	/* no P2P possible: -EREMOTEIO for users */
	P2PBAR_MAP_DIRECT	= 1,	/* bus addresses through a common bridge */
	P2PBAR_MAP_HOST_BRIDGE	= 2,	/* routed through the host bridge */
};

/* Why the verdict is what it is (enum p2pbar_map_type explains how). */
enum p2pbar_reason {
	P2PBAR_REASON_COMMON_BRIDGE	= 0,	/* common upstream bridge, no ACS redirect */
	P2PBAR_REASON_ACS_REDIRECT	= 1,	/* ACS RR/CR/EC set on a port of the path */
	P2PBAR_REASON_NO_COMMON_BRIDGE	= 2,	/* only the host bridge is shared */
};

/* How the host bridge was judged when traffic has to cross it. */
enum p2pbar_host_ok {
	P2PBAR_HOST_UNUSED	= 0,	/* path does not cross the host bridge */
	P2PBAR_HOST_CPU		= 1,	/* the CPU is known to route P2P (AMD Zen+) */
	P2PBAR_HOST_ALLOWLIST	= 2,	/* host bridge is in the kernel's allowlist */
	P2PBAR_HOST_NOT_LISTED	= 3,	/* host bridge is not in the allowlist */
	P2PBAR_HOST_NEEDS_SAME	= 4,	/* listed, but only within one host bridge */
};

/**
 * struct p2pbar_info - P2PBAR_IOC_INFO: describe this provider
 * @argsz: sizeof(struct p2pbar_info)
 * @flags: in: 0; out: P2PBAR_INFO_F_*
 * @bar: BAR number backing the p2pmem
 * @pci_domain: PCI domain of the provider
 * @bar_size: size of that BAR in bytes
 * @offset: offset of the p2pmem inside the BAR
 * @size: bytes of p2pmem registered with the P2PDMA core
 * @bus_addr: PCI bus address of the first p2pmem byte
 * @alloc_bytes: bytes currently allocated through this driver
 * @alloc_count: number of live allocations through this driver
 * @pci_devid: bus << 8 | devfn of the provider
 */
struct p2pbar_info {
	__u32 argsz;
	__u32 flags;
#define P2PBAR_INFO_F_PUBLISHED		(1U << 0)
#define P2PBAR_INFO_F_USER_MMAP		(1U << 1)	/* kernel can map p2pmem to users */
	__u32 bar;
	__u32 pci_domain;
	__u64 bar_size;
	__u64 offset;
	__u64 size;
	__u64 bus_addr;
	__u64 alloc_bytes;
	__u32 alloc_count;
	__u32 pci_devid;
};

/**
 * struct p2pbar_alloc - P2PBAR_IOC_ALLOC: allocate zeroed p2pmem
 * @argsz: sizeof(struct p2pbar_alloc)
 * @flags: must be 0
 * @size: in: bytes, a non-zero multiple of the page size
 * @align: in: 0 for page alignment, else a power of two >= page size
 *	   (alignment of the bus address)
 * @handle: out: names the allocation in P2PBAR_IOC_FREE
 * @reserved: must be zero
 * @mmap_offset: out: pass to mmap() (MAP_SHARED) to map the allocation
 * @bus_addr: out: PCI bus address of the allocation
 */
struct p2pbar_alloc {
	__u32 argsz;
	__u32 flags;
	__u64 size;
	__u64 align;
	__u32 handle;
	__u32 reserved;
	__u64 mmap_offset;
	__u64 bus_addr;
};

/**
 * struct p2pbar_free - P2PBAR_IOC_FREE: release an allocation
 * @argsz: sizeof(struct p2pbar_free)
 * @flags: must be 0
 * @handle: from P2PBAR_IOC_ALLOC on the same open file
 * @reserved: must be zero
 *
 * The memory returns to the pool once no mapping or I/O still holds it.
 */
struct p2pbar_free {
	__u32 argsz;
	__u32 flags;
	__u32 handle;
	__u32 reserved;
};

/**
 * struct p2pbar_verdict - P2PBAR_IOC_VERDICT: can @client DMA to this BAR?
 * @argsz: sizeof(struct p2pbar_verdict)
 * @flags: must be 0
 * @client_domain: in: PCI domain of the client function
 * @client_devid: in: bus << 8 | devfn of it (bits 16-31 must be zero)
 * @distance: out: the running kernel's pci_p2pdma_distance(), -1 when
 *	      refused
 * @map_type: out: enum p2pbar_map_type, as the running kernel decides it
 * @reason: out: enum p2pbar_reason
 * @host_ok: out: enum p2pbar_host_ok
 * @acs_devid: out: first port with ACS redirect (devid form, in the
 *	       client's domain), or ~0
 * @host_id: out: vendor << 16 | device of the host bridge judged, or 0
 * @reserved: must be zero
 *
 * @distance and @map_type are the kernel's own decision; the walk of the
 * topology only explains it (@reason, @host_ok, @acs_devid, @host_id).
 */
struct p2pbar_verdict {
	__u32 argsz;
	__u32 flags;
	__u32 client_domain;
	__u32 client_devid;
	__s32 distance;
	__u32 map_type;
	__u32 reason;
	__u32 host_ok;
	__u32 acs_devid;
	__u32 host_id;
	__u32 reserved;
};

/**
 * struct p2pbar_export - P2PBAR_IOC_EXPORT: allocate zeroed p2pmem as a dma-buf
 * @argsz: sizeof(struct p2pbar_export)
 * @flags: P2PBAR_EXPORT_F_*
 * @size: in: bytes, a non-zero multiple of the page size
 * @fd: in: 0; out: the dma-buf's file descriptor, which owns the memory
 * @reserved: must be zero
 * @bus_addr: out: PCI bus address of the memory
 *
 * Importers must handle peer memory (peer2peer) and be revocable (dynamic,
 * with an invalidation callback); others fail to attach with -EOPNOTSUPP.
 * When the provider goes away the dma-buf is revoked: importers are told to
 * unmap and new mappings fail with -ENODEV. With P2PBAR_EXPORT_F_RDONLY the
 * dma-buf's file is read-only: a shared writable mmap() of it fails with
 * -EACCES, and importers that honour the file's mode (p2pnvme's
 * registration does) only read the memory.
 */
struct p2pbar_export {
	__u32 argsz;
	__u32 flags;
#define P2PBAR_EXPORT_F_CLOEXEC	(1U << 0)	/* the fd is close-on-exec */
#define P2PBAR_EXPORT_F_RDONLY	(1U << 1)	/* the dma-buf's file is O_RDONLY */
	__u64 size;
	__s32 fd;
	__u32 reserved;
	__u64 bus_addr;
};

/* no size in the numbers: argsz is the one extension scheme (see the top) */
#define P2PBAR_IOC_INFO		_IO(P2PBAR_IOC_MAGIC, 0x10)	/* struct p2pbar_info */
#define P2PBAR_IOC_ALLOC	_IO(P2PBAR_IOC_MAGIC, 0x11)	/* struct p2pbar_alloc */
#define P2PBAR_IOC_FREE		_IO(P2PBAR_IOC_MAGIC, 0x12)	/* struct p2pbar_free */
#define P2PBAR_IOC_VERDICT	_IO(P2PBAR_IOC_MAGIC, 0x13)	/* struct p2pbar_verdict */
#define P2PBAR_IOC_EXPORT	_IO(P2PBAR_IOC_MAGIC, 0x14)	/* struct p2pbar_export */

#endif /* _UAPI_LINUX_P2PBAR_H */
