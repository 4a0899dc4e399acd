// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl: data through p2pmem. dma-read and dma-write move it between a
 * block device (O_DIRECT, any driver) and p2pmem; nvme-copy from one
 * p2pnvme controller to another through p2pmem, never through host memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

#include "p2pctl.h"

static int cmd_dma(struct p2pctl *c, bool write, char **argv)
{
	const char *blk = argv[0], *dev = "/dev/p2pbar0", *bdf = NULL;
	char sha[65], sum[17], pci[P2P_BDF_LEN];
	unsigned long long off, len;
	struct dma_report r = { .write = write };
	int bfd, byte = 0, n;
	struct p2pbuf b;
	ssize_t got;

	NUM("dma", "OFF", argv[1], off);
	NUM("dma", "LEN", argv[2], len);
	if (write) {
		n = byte_arg("dma-write", argv[3], &byte);
		if (n)
			return n;
	}
	if (c->opt[O_DEV])
		dev = c->opt[O_DEV];
	if (c->opt[O_SYSFS]) {
		const char *cmd = write ? "dma-write" : "dma-read";
		char dir[96], what[160];

		n = pci_arg(cmd, "--sysfs", c->opt[O_SYSFS], pci, sizeof(pci));
		if (n)
			return n;
		snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", pci);
		if (access(dir, F_OK)) {
			snprintf(what, sizeof(what),
				 "%s: --sysfs: no such PCI function %s (lspci -D lists them)", cmd, pci);
			return fail(c, errno, what);
		}
		bdf = pci;
	}
	n = get_p2pmem(c, dev, bdf, len, &b);
	if (n)
		return n;
	bfd = open(blk, (write ? O_WRONLY : O_RDONLY) | O_DIRECT | O_CLOEXEC);
	if (bfd < 0)
		return fail(c, errno, blk);
	if (write) {
		memset(b.p, byte, len);
		got = pwrite(bfd, b.p, len, off);
	} else {
		got = pread(bfd, b.p, len, off);
	}
	if (got < 0)
		return fail(c, errno, write ? "O_DIRECT pwrite from p2pmem" :
				    "O_DIRECT pread into p2pmem");
	if ((unsigned long long)got != len)
		return fail(c, EIO, "short transfer");
	checksums(b.p, len, sum, sha);
	r.bytes = got;
	r.bar_offset = b.bar_offset;
	r.fnv = sum;
	r.sha = sha;
	c->out->dma(c, &r);
	close(bfd);
	munmap(b.p, len);
	close(b.fd);
	return 0;
}

/* p2pctl dma-read BLK OFF LEN */
int cmd_dma_read(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	return cmd_dma(c, false, argv);
}

/* p2pctl dma-write BLK OFF LEN BYTE */
int cmd_dma_write(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	return cmd_dma(c, true, argv);
}

/* p2pctl nvme-copy SRC SLBA LEN DST DLBA: NVMe -> p2pmem -> NVMe */
int cmd_nvme_copy(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	struct p2pnvme_io rd = { .op = P2PNVME_OP_READ };
	struct p2pnvme_io wr = { .op = P2PNVME_OP_WRITE };
	const char *dev = "/dev/p2pbar0";
	struct p2pbuf b = { .fd = -1 };
	struct copy_report r;
	int sfd, dfd, ret;

	if (c->opt[O_DEV])
		dev = c->opt[O_DEV];
	NUM("nvme-copy", "SLBA", argv[1], rd.slba);
	NUM("nvme-copy", "LEN", argv[2], rd.len);
	wr.len = rd.len;
	NUM("nvme-copy", "DLBA", argv[4], wr.slba);
	ret = get_p2pmem(c, dev, NULL, (rd.len + 4095) & ~4095ULL, &b);
	if (ret)
		return ret;
	rd.addr = wr.addr = (uintptr_t)b.p;
	sfd = open(argv[0], O_RDWR | O_CLOEXEC);
	if (sfd < 0)
		return fail(c, errno, argv[0]);
	dfd = open(argv[3], O_RDWR | O_CLOEXEC);
	if (dfd < 0)
		return fail(c, errno, argv[3]);
	ret = p2p_nvme_io(sfd, &rd);
	if (ret)
		return fail(c, -ret, "read from the source");
	ret = p2p_nvme_io(dfd, &wr);
	if (ret)
		return fail(c, -ret, "write to the destination");
	r = (struct copy_report){ .bytes = rd.len, .slba = rd.slba, .dlba = wr.slba,
				  .bar_offset = b.bar_offset, .src = argv[0], .dst = argv[3],
				  .read_path = path_name(rd.path), .write_path = path_name(wr.path) };
	c->out->copy(c, &r);
	close(sfd);
	close(dfd);
	munmap(b.p, b.len);
	close(b.fd);
	return 0;
}
