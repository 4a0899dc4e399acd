// SPDX-License-Identifier: GPL-2.0
/*
 * uring-read: the smallest use of p2pnvme's io_uring passthrough. Reads
 * COUNT chunks of SIZE bytes from LBA 0 on into p2pmem of /dev/p2pbar0, all
 * in flight at once from one thread, and says which path each one took.
 *
 *   uring-read [/dev/p2pnvme0 [COUNT [SIZE]]]      (defaults: 32, 131072)
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
#include <sys/mman.h>

#include <linux/p2pnvme.h>

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "/dev/p2pnvme0";
	unsigned int count = argc > 2 ? atoi(argv[2]) : 32, i;
	size_t size = argc > 3 ? strtoul(argv[3], NULL, 0) : 131072;
	int nvme = open(dev, O_RDWR), bar = open("/dev/p2pbar0", O_RDWR);
	struct io_uring ring;
	unsigned char *mem;

	if (nvme < 0 || bar < 0 || !count || !size) {
		fprintf(stderr, "uring-read: %s or /dev/p2pbar0: %s\n", dev, strerror(errno));
		return 1;
	}
	/* p2pmem: a shared mapping of /dev/p2pbar0 at offset 0 allocates it */
	mem = mmap(NULL, count * size, PROT_READ | PROT_WRITE, MAP_SHARED, bar, 0);
	/* the command needs 128-byte SQEs; 32-byte CQEs carry path and status */
	if (mem == MAP_FAILED ||
	    io_uring_queue_init(count, &ring, IORING_SETUP_SQE128 | IORING_SETUP_CQE32)) {
		perror("uring-read: p2pmem or ring");
		return 1;
	}
	for (i = 0; i < count; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		struct p2pnvme_io io = {
			.argsz = sizeof(io), .op = P2PNVME_OP_READ, .slba = i * (size / 512),
			.len = size, .addr = (uintptr_t)(mem + i * size),
		};

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
