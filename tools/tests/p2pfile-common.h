/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the file command's tests share (p2pfilecmd-test.c, p2pfileuring-test.c):
 * the byte pattern p2pfile-test writes (a word per 8 bytes: magic, file id,
 * offset >> 3), and p2pmem of the provider as a registered dma-buf.
 */
#ifndef P2PFILE_COMMON_H
#define P2PFILE_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libp2p.h"

#define PAT_MAGIC	0x5046ULL

static inline void pat_fill(unsigned char *p, unsigned int id, uint64_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t o = off + i;
		uint64_t w = PAT_MAGIC << 48 | (uint64_t)(id & 0xffff) << 32 | (uint32_t)(o >> 3);

		p[i] = w >> (8 * (o & 7));
	}
}

/* the first byte of @p that is not @id's pattern from @off, or -1 */
static inline long long pat_diff(const unsigned char *p, unsigned int id, uint64_t off, size_t len)
{
	unsigned char b[4096];
	size_t i, j, n;

	for (i = 0; i < len; i += n) {
		n = len - i < sizeof(b) ? len - i : sizeof(b);
		pat_fill(b, id, off + i, n);
		for (j = 0; j < n; j++)
			if (p[i + j] != b[j])
				return i + j;
	}
	return -1;
}

/* p2pmem of the provider as a dma-buf, mapped and registered with @nfd */
struct dbuf {
	int dfd;
	unsigned char *p;
	size_t len;
	uint32_t id;
	uint64_t bar_offset;
};

static inline int dbuf_get(const char *bar_path, int nfd, size_t len, struct dbuf *b)
{
	struct p2pbar_export e;
	struct p2pbar_info i;
	int bfd = p2p_bar_open(bar_path, &i), ret;

	if (bfd < 0)
		return -bfd;
	ret = -p2p_bar_export(bfd, len, P2PBAR_EXPORT_F_CLOEXEC, &e);
	close(bfd);
	if (ret)
		return ret;
	b->dfd = e.fd;
	b->len = len;
	b->bar_offset = e.bus_addr - i.bus_addr + i.offset;
	b->p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, e.fd, 0);
	if (b->p == MAP_FAILED)
		return errno;
	return -p2p_nvme_register(nfd, P2PNVME_BUF_F_DMABUF, 0, len, e.fd, &b->id);
}

static inline void dbuf_put(int nfd, struct dbuf *b)
{
	p2p_nvme_unregister(nfd, b->id);
	munmap(b->p, b->len);
	close(b->dfd);
}

#endif /* P2PFILE_COMMON_H */
