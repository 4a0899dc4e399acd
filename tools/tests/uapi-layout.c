// SPDX-License-Identifier: GPL-2.0
/*
 * uapi-layout: the suite's ioctl structures have one layout on every ABI
 * (no implicit padding, so a 32-bit process on a 64-bit kernel passes the
 * same bytes). Compiled by tools/Makefile for the build machine and by the
 * bench's build suite with -m32 as well; the checks are compile-time, the
 * program only prints the sizes.
 */
#include <stddef.h>
#include <stdio.h>

#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

/* size, and the last member ends exactly at the end: no tail padding */
#define LAYOUT(type, size, last)						\
	_Static_assert(sizeof(struct type) == (size), #type " size");		\
	_Static_assert(offsetof(struct type, last) +				\
		       sizeof(((struct type *)0)->last) == (size), #type " tail")

LAYOUT(p2pbar_info, 64, pci_devid);
LAYOUT(p2pbar_alloc, 48, bus_addr);
LAYOUT(p2pbar_free, 16, reserved);
LAYOUT(p2pbar_verdict, 44, reserved);
LAYOUT(p2pbar_export, 32, bus_addr);
LAYOUT(p2pnvme_info, 104, reserved2);
LAYOUT(p2pnvme_io, 56, reserved);
LAYOUT(p2pnvme_submit, 24, ios);
LAYOUT(p2pnvme_buf_reg, 56, owner);
LAYOUT(p2pnvme_buf_unreg, 16, reserved);
/* the whole command area of a 128-byte SQE */
LAYOUT(p2pnvme_uring_cmd, 80, rsvd2);

/* 8-byte members sit on 8-byte offsets (i386 aligns them to 4 only) */
_Static_assert(offsetof(struct p2pbar_info, bar_size) % 8 == 0, "p2pbar_info.bar_size");
_Static_assert(offsetof(struct p2pbar_alloc, size) % 8 == 0, "p2pbar_alloc.size");
_Static_assert(offsetof(struct p2pbar_alloc, mmap_offset) % 8 == 0, "p2pbar_alloc.mmap_offset");
_Static_assert(offsetof(struct p2pbar_export, size) % 8 == 0, "p2pbar_export.size");
_Static_assert(offsetof(struct p2pbar_export, bus_addr) % 8 == 0, "p2pbar_export.bus_addr");
_Static_assert(offsetof(struct p2pnvme_info, nlb) % 8 == 0, "p2pnvme_info.nlb");
_Static_assert(offsetof(struct p2pnvme_io, slba) % 8 == 0, "p2pnvme_io.slba");
_Static_assert(offsetof(struct p2pnvme_submit, ios) % 8 == 0, "p2pnvme_submit.ios");
_Static_assert(offsetof(struct p2pnvme_buf_reg, addr) % 8 == 0, "p2pnvme_buf_reg.addr");
_Static_assert(offsetof(struct p2pnvme_buf_reg, len) % 8 == 0, "p2pnvme_buf_reg.len");
_Static_assert(offsetof(struct p2pnvme_uring_cmd, slba) % 8 == 0, "p2pnvme_uring_cmd.slba");
_Static_assert(offsetof(struct p2pnvme_uring_cmd, rsvd2) % 8 == 0, "p2pnvme_uring_cmd.rsvd2");
/* the first version of p2pnvme_buf_reg (argsz 32), still accepted */
_Static_assert(offsetof(struct p2pnvme_buf_reg, path) == 32, "p2pnvme_buf_reg.path");
/* buf_id shares dmabuf_fd's place in p2pnvme_io */
_Static_assert(offsetof(struct p2pnvme_io, buf_id) == offsetof(struct p2pnvme_io, dmabuf_fd),
	       "p2pnvme_io.buf_id");

int main(void)
{
	printf("p2pbar_info %zu, p2pbar_alloc %zu, p2pbar_free %zu, p2pbar_verdict %zu, p2pbar_export %zu, p2pnvme_info %zu, p2pnvme_io %zu, p2pnvme_submit %zu, p2pnvme_buf_reg %zu, p2pnvme_buf_unreg %zu, p2pnvme_uring_cmd %zu\n",
	       sizeof(struct p2pbar_info), sizeof(struct p2pbar_alloc), sizeof(struct p2pbar_free),
	       sizeof(struct p2pbar_verdict), sizeof(struct p2pbar_export),
	       sizeof(struct p2pnvme_info), sizeof(struct p2pnvme_io), sizeof(struct p2pnvme_submit),
	       sizeof(struct p2pnvme_buf_reg), sizeof(struct p2pnvme_buf_unreg),
	       sizeof(struct p2pnvme_uring_cmd));
	return 0;
}
