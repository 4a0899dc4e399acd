// SPDX-License-Identifier: GPL-2.0
/*
 * uring-read: the smallest use of p2pnvme's io_uring passthrough. Reads
 * COUNT chunks of SIZE bytes from LBA 0 on into p2pmem of /dev/p2pbar0, all
 * in flight at once from one thread, and says which path each one took.
 * With --registered the p2pmem is exported by p2pbar as a dma-buf and
 * registered with p2pnvme once; each read names it by id and offset.
 *
 *   uring-read [--registered] [/dev/p2pnvme0 [COUNT [SIZE]]]   (defaults: 32, 131072)
 *
 * Build: cc -O2 -I include/uapi -o uring-read tools/examples/uring-read.c -luring
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>

int main(int argc, char **argv)
{
	int reg = argc > 1 && !strcmp(argv[1], "--registered");
	const char *dev = argc > 1 + reg ? argv[1 + reg] : "/dev/p2pnvme0";
	unsigned int count = argc > 2 + reg ? atoi(argv[2 + reg]) : 32, i;
	size_t size = argc > 3 + reg ? strtoul(argv[3 + reg], NULL, 0) : 131072;
	int nvme = open(dev, O_RDWR), bar = open("/dev/p2pbar0", O_RDWR);
	struct p2pbar_export e = { .argsz = sizeof(e), .size = (count * size + 4095) & ~4095UL };
	struct p2pnvme_buf_reg r = { .argsz = sizeof(r), .flags = P2PNVME_BUF_F_DMABUF,
				     .len = count * size };
	unsigned char *mem = NULL;
	struct io_uring ring;

	if (nvme < 0 || bar < 0 || !count || !size) {
		fprintf(stderr, "uring-read: %s or /dev/p2pbar0: %s\n", dev, strerror(errno));
		return 1;
	}
	if (reg) {
		/* p2pmem as a dma-buf, pinned and mapped for the controller once */
		if (ioctl(bar, P2PBAR_IOC_EXPORT, &e)) {
			perror("uring-read: P2PBAR_IOC_EXPORT");
			return 1;
		}
		r.dmabuf_fd = e.fd;
		if (ioctl(nvme, P2PNVME_IOC_BUF_REGISTER, &r)) {
			perror("uring-read: P2PNVME_IOC_BUF_REGISTER");
			return 1;
		}
		close(e.fd);	/* the registration holds the dma-buf */
		printf("registered %zu bytes of p2pmem as buffer %u\n", count * size, r.id);
	} else {
		/* p2pmem: a shared mapping of /dev/p2pbar0 at offset 0 allocates it */
		mem = mmap(NULL, count * size, PROT_READ | PROT_WRITE, MAP_SHARED, bar, 0);
		if (mem == MAP_FAILED) {
			perror("uring-read: p2pmem");
			return 1;
		}
	}
	/* the command needs 128-byte SQEs; 32-byte CQEs carry path and status */
	if (io_uring_queue_init(count, &ring, IORING_SETUP_SQE128 | IORING_SETUP_CQE32)) {
		perror("uring-read: ring");
		return 1;
	}
	for (i = 0; i < count; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		struct p2pnvme_uring_cmd io = {
			.op = P2PNVME_OP_READ, .slba = i * (size / 512), .len = size,
		};

		if (reg) {	/* the buffer by id, addr the offset into it */
			io.flags = P2PNVME_IO_F_REGISTERED;
			io.buf_id = r.id;
			io.addr = (uint64_t)i * size;
		} else {
			io.addr = (uintptr_t)(mem + i * size);
		}
		if (!sqe)
			return 1;
		memset(sqe, 0, 2 * sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = nvme;
		sqe->cmd_op = P2PNVME_URING_CMD_IO;
		sqe->user_data = i;
		memcpy(sqe->cmd, &io, sizeof(io));
	}
	printf("submitted %d reads in one call\n", io_uring_submit(&ring));
	for (i = 0; i < count; i++) {
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe(&ring, &cqe))
			return 1;
		printf("read %llu: %s, path %llu, NVMe status %#llx\n",
		       (unsigned long long)cqe->user_data, strerror(-cqe->res),
		       (unsigned long long)(cqe->big_cqe[0] & 0xffff),
		       (unsigned long long)(cqe->big_cqe[0] >> 16));
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	return 0;
}
