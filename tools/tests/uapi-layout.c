// SPDX-License-Identifier: GPL-2.0
/*
 * uapi-layout: the suite's ioctl structures have one layout on every ABI
 * (no implicit padding, so a 32-bit process on a 64-bit kernel passes the
 * same bytes). Built by tools/Makefile for the build machine
 * (build/uapi-layout) and for i386 (build/uapi-layout-m32); the bench's
 * build suite runs both. Each prints one KTAP document on the harness
 * (tools/lib/harness.h), a test per structure and a case per check of it:
 * its size, the last member ending at the end (no tail padding), its 8-byte
 * members on 8-byte offsets (i386 aligns them to 4 only) and the offsets
 * other versions or members depend on. The suite is named after the ABI
 * (uapi_layout_x86_64, uapi_layout_i386), and both check the same numbers:
 * one layout.
 *
 * The checks are run, not compile-time assertions: a layout that changed
 * builds, and its case fails, naming what moved. On the harness rather
 * than ktap.c alone: nothing here hangs or crashes, but a fork per
 * structure costs nothing, and a plan that holds counts a case that was
 * lost or added.
 *
 *   uapi-layout
 */
#include <stddef.h>
#include <stdio.h>

#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

#include "harness.h"

#if defined(__i386__)
#define ABI_SUITE uapi_layout_i386
#elif defined(__x86_64__)
#define ABI_SUITE uapi_layout_x86_64
#else
#define ABI_SUITE uapi_layout
#endif
#define STR(x) #x
#define XSTR(x) STR(x)

static void size_is(const char *t, size_t size, size_t want)
{
	tap(size == want, "%s: %zu bytes (want %zu)", t, size, want);
}

static void ends_at_end(const char *t, const char *m, size_t end, size_t size)
{
	tap(end == size, "%s: %s ends at byte %zu, its end (%zu), no tail padding", t, m, end,
	    size);
}

static void aligned8(const char *t, const char *m, size_t off)
{
	tap(off % 8 == 0, "%s: %s at offset %zu, a multiple of 8", t, m, off);
}

static void offset_is(const char *t, const char *m, size_t off, size_t want, const char *why)
{
	tap(off == want, "%s: %s at offset %zu (want %zu: %s)", t, m, off, want, why);
}

/* where member @m of type @T ends (as the kernel's offsetofend()) */
#define offsetofend(T, m)	(offsetof(T, m) + sizeof(((T *)0)->m))

/* the size of @T is @size bytes */
#define SIZE(T, size)		size_is(#T, sizeof(T), size)
/* its last member @m ends exactly at its end: no tail padding */
#define TAIL(T, m)		ends_at_end(#T, #m, offsetofend(T, m), sizeof(T))
/* the 8-byte member @m sits on an 8-byte offset */
#define ALIGN8(T, m)		aligned8(#T, #m, offsetof(T, m))
/* @m sits at offset @off, which @why depends on */
#define OFFSET(T, m, off, why)	offset_is(#T, #m, offsetof(T, m), off, why)

TEST(ABI_SUITE, p2pbar_info, 3, 5)
{
	SIZE(struct p2pbar_info, 64);
	TAIL(struct p2pbar_info, pci_devid);
	ALIGN8(struct p2pbar_info, bar_size);
}

TEST(ABI_SUITE, p2pbar_alloc, 4, 5)
{
	SIZE(struct p2pbar_alloc, 48);
	TAIL(struct p2pbar_alloc, bus_addr);
	ALIGN8(struct p2pbar_alloc, size);
	ALIGN8(struct p2pbar_alloc, mmap_offset);
}

TEST(ABI_SUITE, p2pbar_free, 2, 5)
{
	SIZE(struct p2pbar_free, 16);
	TAIL(struct p2pbar_free, reserved);
}

TEST(ABI_SUITE, p2pbar_verdict, 2, 5)
{
	SIZE(struct p2pbar_verdict, 44);
	TAIL(struct p2pbar_verdict, reserved);
}

TEST(ABI_SUITE, p2pbar_export, 4, 5)
{
	SIZE(struct p2pbar_export, 32);
	TAIL(struct p2pbar_export, bus_addr);
	ALIGN8(struct p2pbar_export, size);
	ALIGN8(struct p2pbar_export, bus_addr);
}

TEST(ABI_SUITE, p2pnvme_info, 3, 5)
{
	SIZE(struct p2pnvme_info, 104);
	TAIL(struct p2pnvme_info, reserved2);
	ALIGN8(struct p2pnvme_info, nlb);
}

TEST(ABI_SUITE, p2pnvme_io, 4, 5)
{
	SIZE(struct p2pnvme_io, 56);
	TAIL(struct p2pnvme_io, reserved);
	ALIGN8(struct p2pnvme_io, slba);
	OFFSET(struct p2pnvme_io, buf_id, offsetof(struct p2pnvme_io, dmabuf_fd),
	       "buf_id shares dmabuf_fd's place");
}

TEST(ABI_SUITE, p2pnvme_submit, 3, 5)
{
	SIZE(struct p2pnvme_submit, 24);
	TAIL(struct p2pnvme_submit, ios);
	ALIGN8(struct p2pnvme_submit, ios);
}

TEST(ABI_SUITE, p2pnvme_buf_reg, 5, 5)
{
	SIZE(struct p2pnvme_buf_reg, 56);
	TAIL(struct p2pnvme_buf_reg, owner);
	ALIGN8(struct p2pnvme_buf_reg, addr);
	ALIGN8(struct p2pnvme_buf_reg, len);
	OFFSET(struct p2pnvme_buf_reg, path, 32,
	       "the first version's argsz, still accepted, ends there");
}

TEST(ABI_SUITE, p2pnvme_buf_unreg, 2, 5)
{
	SIZE(struct p2pnvme_buf_unreg, 16);
	TAIL(struct p2pnvme_buf_unreg, reserved);
}

TEST(ABI_SUITE, p2pnvme_file_io, 5, 5)
{
	SIZE(struct p2pnvme_file_io, 64);
	TAIL(struct p2pnvme_file_io, zero_len);
	ALIGN8(struct p2pnvme_file_io, offset);
	ALIGN8(struct p2pnvme_file_io, bytes);
	OFFSET(struct p2pnvme_file_io, status, 44, "the -errno right after buf_id");
}

/* the whole command area of a 128-byte SQE */
TEST(ABI_SUITE, p2pnvme_uring_cmd, 4, 5)
{
	SIZE(struct p2pnvme_uring_cmd, 80);
	TAIL(struct p2pnvme_uring_cmd, rsvd2);
	ALIGN8(struct p2pnvme_uring_cmd, slba);
	ALIGN8(struct p2pnvme_uring_cmd, rsvd2);
}

/* P2PNVME_URING_CMD_FILE_IO's: the whole command area too */
TEST(ABI_SUITE, p2pnvme_uring_file_cmd, 4, 5)
{
	SIZE(struct p2pnvme_uring_file_cmd, 80);
	TAIL(struct p2pnvme_uring_file_cmd, rsvd);
	ALIGN8(struct p2pnvme_uring_file_cmd, offset);
	ALIGN8(struct p2pnvme_uring_file_cmd, rsvd);
}

int main(void)
{
	return kt_run(XSTR(ABI_SUITE));
}
