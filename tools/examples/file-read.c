// SPDX-License-Identifier: GPL-2.0
/*
 * file-read: a file on p2pnvme's disk into a p2pbar dma-buf through the
 * file command (P2PNVME_IOC_FILE_SUBMIT): p2pmem exported by /dev/p2pbar0,
 * registered with /dev/p2pnvme0, LEN bytes of FILE from OFFSET into it.
 *
 *   file-read FILE OFFSET LEN     (OFFSET, LEN: multiples of the file's
 *                                  direct I/O alignment, statx STATX_DIOALIGN)
 * Build: make -C tools build/file-read (plain C, the uapi headers alone)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

int main(int argc, char **argv)
{
	struct p2pbar_export e = { .argsz = sizeof(e), .flags = P2PBAR_EXPORT_F_CLOEXEC };
	struct p2pnvme_buf_reg reg = { .argsz = sizeof(reg), .flags = P2PNVME_BUF_F_DMABUF };
	struct p2pnvme_file_io io = { .argsz = sizeof(io), .op = P2PNVME_OP_READ,
				      .flags = P2PNVME_FILE_F_REGISTERED };
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = 1, .ios = (uintptr_t)&io };
	int bar, nvme;

	if (argc != 4)
		return fprintf(stderr, "usage: file-read FILE OFFSET LEN\n"), 2;
	io.fd = open(argv[1], O_RDONLY);
	bar = open("/dev/p2pbar0", O_RDWR);
	nvme = open("/dev/p2pnvme0", O_RDWR);
	if (io.fd < 0 || bar < 0 || nvme < 0)
		return perror("open"), 1;
	io.offset = strtoull(argv[2], NULL, 0);
	io.len = strtoull(argv[3], NULL, 0);
	e.size = (io.len + 4095) & ~4095ULL;		/* zeroed p2pmem, as a dma-buf */
	if (ioctl(bar, P2PBAR_IOC_EXPORT, &e))
		return perror("P2PBAR_IOC_EXPORT"), 1;
	reg.dmabuf_fd = e.fd;
	reg.len = e.size;
	if (ioctl(nvme, P2PNVME_IOC_BUF_REGISTER, &reg))
		return perror("P2PNVME_IOC_BUF_REGISTER"), 1;
	io.buf_id = reg.id;			/* io.addr 0: the buffer's start */
	if (ioctl(nvme, P2PNVME_IOC_FILE_SUBMIT, &sub))	/* errno: the transfer's */
		return perror("P2PNVME_IOC_FILE_SUBMIT"), 1;
	printf("%llu bytes of %s at %llu into p2pmem at bus address %#llx (path %u)\n",
	       (unsigned long long)io.bytes, argv[1], (unsigned long long)io.offset,
	       (unsigned long long)e.bus_addr, io.path);
	return 0;
}
