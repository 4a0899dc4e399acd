// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl: the memory a transfer uses (p2pmem from a provider or from the
 * kernel's sysfs allocator, p2pmem or host memory as a dma-buf) and the
 * checksums of what it moved.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/udmabuf.h>

#include "p2pctl.h"

/* Physical address of a mapped page, from /proc/self/pagemap (root only). */
static int virt_to_phys(void *p, uint64_t *phys)
{
	uint64_t ent;
	long ps = sysconf(_SC_PAGESIZE);
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return -errno;
	if (pread(fd, &ent, 8, ((uintptr_t)p / ps) * 8) != 8) {
		close(fd);
		return -EIO;
	}
	close(fd);
	if (!(ent & (1ULL << 63)) || !(ent & ((1ULL << 55) - 1)))
		return -ENOENT;
	*phys = (ent & ((1ULL << 55) - 1)) * ps + (uintptr_t)p % ps;
	return 0;
}

/* Offset of @phys inside whichever BAR of @bdf contains it (sysfs "resource"). */
static int bar_offset_of(const char *bdf, uint64_t phys, uint64_t *off)
{
	char path[256], line[128];
	unsigned long long s, e, f;
	FILE *fp;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bdf);
	fp = fopen(path, "r");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx %llx %llx", &s, &e, &f) == 3 && e && phys >= s && phys <= e) {
			fclose(fp);
			*off = phys - s;
			return 0;
		}
	}
	fclose(fp);
	return -ENOENT;
}

/* p2pmem from the kernel's own sysfs allocator (6.2+) or from /dev/p2pbarN. */
int get_p2pmem(struct p2pctl *c, const char *dev, const char *bdf, size_t len, struct p2pbuf *b)
{
	char path[256];
	uint64_t phys = 0;
	int ret;

	b->len = len;
	if (bdf) {
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/p2pmem/allocate", bdf);
		b->fd = open(path, O_RDWR | O_CLOEXEC);
		if (b->fd < 0)
			return fail(c, errno, path);
		b->p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
		if (b->p == MAP_FAILED)
			return fail(c, errno, "mmap p2pmem/allocate");
		/* touch nothing: the pages are inserted at mmap time */
		ret = virt_to_phys(b->p, &phys);
		if (!ret)
			ret = bar_offset_of(bdf, phys, &b->bar_offset);
		if (ret)
			return fail(c, -ret, "locating the allocation in the BAR");
		return 0;
	} else {
		struct p2pbar_info i;
		struct p2p_mem m;

		b->fd = p2p_bar_open(dev, &i);
		if (b->fd < 0)
			return fail(c, -b->fd, dev);
		ret = p2p_mem_get(b->fd, len, 0, &m);
		if (ret)
			return fail(c, -ret, "P2PBAR_IOC_ALLOC and mmap");
		/* a second mapping, never unmapped, keeps the memory past free */
		if (c->hold && mmap(NULL, len, PROT_READ, MAP_SHARED, b->fd, m.mmap_offset) ==
		    MAP_FAILED)
			return fail(c, errno, "mmap (--hold)");
		b->p = m.p;
		b->bar_offset = m.bar_offset;
		return 0;
	}
}

/* p2pmem of @dev exported as a dma-buf (P2PBAR_IOC_EXPORT); it owns the memory. */
int export_p2pmem(struct p2pctl *c, const char *dev, size_t len, int *dfd,
		  unsigned long long *bar_offset)
{
	struct p2pbar_export e;
	struct p2pbar_info i;
	int fd = p2p_bar_open(dev, &i), ret;

	if (fd < 0)
		return fail(c, -fd, dev);
	ret = p2p_bar_export(fd, len, P2PBAR_EXPORT_F_CLOEXEC, &e);
	if (ret)
		return fail(c, -ret, "P2PBAR_IOC_EXPORT");
	close(fd);
	/* a second reference, never closed, keeps the dma-buf past close */
	if (c->hold && dup(e.fd) < 0)
		return fail(c, errno, "dup (--hold)");
	*dfd = e.fd;
	*bar_offset = e.bus_addr - i.bus_addr + i.offset;
	return 0;
}

/* Host memory as a dma-buf: a sealed memfd through /dev/udmabuf, mapped at *map. */
int host_dmabuf(struct p2pctl *c, size_t len, int *dfd, unsigned char **map)
{
	struct udmabuf_create uc = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = len };
	int mfd = memfd_create("p2pctl", MFD_ALLOW_SEALING | MFD_CLOEXEC), u;

	if (mfd < 0 || ftruncate(mfd, len) || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return fail(c, errno, "memfd");
	u = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (u < 0)
		return fail(c, errno, "/dev/udmabuf");
	uc.memfd = mfd;
	*dfd = ioctl(u, UDMABUF_CREATE, &uc);
	if (*dfd < 0)
		return fail(c, errno, "UDMABUF_CREATE");
	close(u);
	*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (*map == MAP_FAILED)
		return fail(c, errno, "mmap memfd");
	close(mfd);
	return 0;
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

/* SHA-256 (FIPS 180-4): one 64-byte block into the state @h */
static void sha256_block(uint32_t h[8], const unsigned char *blk)
{
	static const uint32_t k[64] = {
		0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
		0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
		0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
		0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
		0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
		0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
		0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
		0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
		0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
		0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
		0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
	};
	uint32_t w[64], v[8], t1, t2;
	int i;

#define ROR(x, r) ((x) >> (r) | (x) << (32 - (r)))
	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)blk[4 * i] << 24 | (uint32_t)blk[4 * i + 1] << 16 |
		       (uint32_t)blk[4 * i + 2] << 8 | blk[4 * i + 3];
	for (i = 16; i < 64; i++)
		w[i] = (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10)) + w[i - 7] +
		       (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 16];
	memcpy(v, h, sizeof(v));
	for (i = 0; i < 64; i++) {
		t1 = v[7] + (ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25)) +
		     ((v[4] & v[5]) ^ (~v[4] & v[6])) + k[i] + w[i];
		t2 = (ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22)) +
		     ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
#undef ROR
	for (i = 0; i < 8; i++)
		h[i] += v[i];
}

/* SHA-256 of @n bytes at @p, as hex: what sha256sum prints for them */
static void sha256_hex(const unsigned char *p, size_t n, char out[65])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	unsigned char tail[128] = { 0 };
	size_t full = n & ~(size_t)63, rest = n - full, i, tl;
	uint64_t bits = (uint64_t)n * 8;

	for (i = 0; i < full; i += 64)
		sha256_block(h, p + i);
	memcpy(tail, p + full, rest);	/* p2pmem is read as it is copied */
	tail[rest] = 0x80;
	tl = rest + 1 + 8 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[tl - 1 - i] = bits >> (8 * i);
	sha256_block(h, tail);
	if (tl == 128)
		sha256_block(h, tail + 64);
	for (i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", h[i]);
}

/* the checksums of @n bytes at @p: FNV-1a (64 bits) and SHA-256, as hex */
void checksums(const unsigned char *p, size_t n, char fnv[17], char sha[65])
{
	snprintf(fnv, 17, "%016llx", (unsigned long long)fnv1a(p, n));
	sha256_hex(p, n, sha);
}
