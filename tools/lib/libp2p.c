// SPDX-License-Identifier: GPL-2.0
/*
 * libp2p: the suite's devices, sysfs, numbers and PCI addresses for the
 * tools (see libp2p.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/fiemap.h>
#include <linux/fs.h>

#include "libp2p.h"

/* ---- numbers and PCI addresses ---------------------------------------- */

/**
 * p2p_parse_num - a number of a command line
 * @s: decimal, 0x hex or 0 octal, optionally with a binary suffix k/K,
 *     m/M, g/G, t/T (4k = 4096); no sign, no space
 * @v: out: its value
 *
 * Return: 0, or -EINVAL for anything else and for a value past 64 bits.
 */
int p2p_parse_num(const char *s, uint64_t *v)
{
	unsigned int shift = 0;
	unsigned long long n;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end || (shift && n > (UINT64_MAX >> shift)))
		return -EINVAL;
	*v = (uint64_t)n << shift;
	return 0;
}

/* 1 to @max hex digits at *@s, which moves past them; 0 or -EINVAL */
static int hex_field(const char **s, unsigned int max, uint32_t *v)
{
	unsigned int i;

	*v = 0;
	for (i = 0; isxdigit((unsigned char)(*s)[i]); i++) {
		if (i == max)
			return -EINVAL;
		*v = *v << 4 | (isdigit((unsigned char)(*s)[i]) ? (*s)[i] - '0' :
				(tolower((unsigned char)(*s)[i]) - 'a' + 10));
	}
	*s += i;
	return i ? 0 : -EINVAL;
}

/**
 * p2p_parse_bdf - a PCI address in any form lspci prints
 * @s: [DOMAIN:]BUS:DEV.FN in hex: "00:02.0" (lspci), "0000:00:02.0"
 *     (lspci -D, sysfs), "10000:00:02.0" (a VMD domain: 32 bits)
 * @domain: out: the domain
 * @devid: out: bus << 8 | devfn
 *
 * Return: 0, or -EINVAL for anything else (a field out of range, trailing
 * characters).
 */
int p2p_parse_bdf(const char *s, uint32_t *domain, uint32_t *devid)
{
	uint32_t f[4], n = 0;
	const char *p = s;

	if (!s)
		return -EINVAL;
	for (;;) {
		if (n == 4 || hex_field(&p, 8, &f[n]))
			return -EINVAL;
		n++;
		if (*p == ':') {
			p++;
			continue;
		}
		if (*p++ != '.' || n < 2 || n > 3 || hex_field(&p, 1, &f[n]) || *p)
			return -EINVAL;
		n++;
		break;
	}
	if (n == 3) {	/* no domain */
		f[3] = f[2];
		f[2] = f[1];
		f[1] = f[0];
		f[0] = 0;
	}
	if (f[1] > 0xff || f[2] > 0x1f || f[3] > 7)
		return -EINVAL;
	*domain = f[0];
	*devid = f[1] << 8 | f[2] << 3 | f[3];
	return 0;
}

/* The kernel's pci_name() of a function: "0000:00:02.0", "10000:00:02.0". */
char *p2p_bdf_name(uint32_t domain, uint32_t devid, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%02x:%02x.%x", domain, devid >> 8 & 0xff, devid >> 3 & 0x1f,
		 devid & 7);
	return buf;
}

/* @s in any form p2p_parse_bdf() takes, as the kernel names it; 0 or -EINVAL */
int p2p_bdf_canon(const char *s, char *buf, size_t len)
{
	uint32_t domain, devid;

	if (p2p_parse_bdf(s, &domain, &devid))
		return -EINVAL;
	p2p_bdf_name(domain, devid, buf, len);
	return 0;
}

/* ---- sysfs ------------------------------------------------------------- */

/* @src into @dst of @len bytes, cut if need be, always terminated */
void p2p_copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = 0;
}

/* the first line of @dir/@file (newline dropped), or "" */
const char *p2p_sysfs_line(const char *dir, const char *file, char *buf, size_t len)
{
	char path[512];
	FILE *f;

	buf[0] = 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return buf;
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, len, f))
			buf[strcspn(buf, "\n")] = 0;
		else
			buf[0] = 0;
		fclose(f);
	}
	return buf;
}

/* the name of the directory the link @dir/@link points to, or "" */
const char *p2p_sysfs_link(const char *dir, const char *link, char *buf, size_t len)
{
	char path[512], target[512];
	const char *base;
	ssize_t n;

	buf[0] = 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, link) >= (int)sizeof(path))
		return buf;
	n = readlink(path, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = 0;
		base = strrchr(target, '/');
		p2p_copy_str(buf, len, base ? base + 1 : target);
	}
	return buf;
}

/* the number in the file @path (decimal or 0x hex), -1 if it cannot be read */
long long p2p_sysfs_num(const char *path)
{
	char buf[64] = "";
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return *buf ? strtoll(buf, NULL, 0) : -1;
}

/* Write @s to the sysfs (or module parameter) file @path: 0 or -errno. */
int p2p_sysfs_write(const char *path, const char *s)
{
	FILE *f = fopen(path, "we");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(s, f) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* @len bytes at @off of /sys/bus/pci/devices/@bdf/config; 0 or -errno */
int p2p_pci_config(const char *bdf, unsigned int off, void *buf, size_t len)
{
	char path[128];
	ssize_t got;
	int fd;

	if (snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", bdf) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = pread(fd, buf, len, off);
	close(fd);
	return got == (ssize_t)len ? 0 : got < 0 ? -errno : -EIO;
}

/* ---- files ------------------------------------------------------------- */

/**
 * p2p_fiemap_walk - a file's extents, each as FIEMAP reports it
 * @fd: the file
 * @start: the walk asks for the extents from this file offset on ...
 * @end: ... in batches, until one ends at or past @end or holds the last
 *       (FIEMAP_EXTENT_LAST): @fn sees every extent of each batch, those
 *       past @end too, so it clips them itself
 * @flags: FIEMAP's (FIEMAP_FLAG_SYNC: the file's dirty data written first,
 *         at every batch; 0)
 * @fn: called for each extent in file order; a value other than 0 stops
 *      the walk, which returns it
 * @arg: @fn's
 *
 * Return: 0 once the walk is done, @fn's value, or -errno (FIEMAP's, or
 * -ENOMEM).
 */
int p2p_fiemap_walk(int fd, uint64_t start, uint64_t end, uint32_t flags,
		    int (*fn)(const struct fiemap_extent *fe, void *arg), void *arg)
{
	const unsigned int batch = 256;
	size_t sz = sizeof(struct fiemap) + batch * sizeof(struct fiemap_extent);
	struct fiemap *fm = calloc(1, sz);
	int ret = 0, last = 0;
	unsigned int i;

	if (!fm)
		return -ENOMEM;
	while (!ret && !last && start < end) {
		memset(fm, 0, sz);
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_flags = flags;
		fm->fm_extent_count = batch;
		if (ioctl(fd, FS_IOC_FIEMAP, fm)) {
			ret = -errno;
			break;
		}
		if (!fm->fm_mapped_extents)
			break;
		for (i = 0; !ret && i < fm->fm_mapped_extents; i++) {
			const struct fiemap_extent *fe = &fm->fm_extents[i];

			if (fe->fe_flags & FIEMAP_EXTENT_LAST)
				last = 1;
			start = fe->fe_logical + fe->fe_length;
			ret = fn(fe, arg);
		}
	}
	free(fm);
	return ret;
}

/* ---- a p2pbar provider -------------------------------------------------- */

static int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

int p2p_bar_info(int fd, struct p2pbar_info *info)
{
	memset(info, 0, sizeof(*info));
	info->argsz = sizeof(*info);
	return xioctl(fd, P2PBAR_IOC_INFO, info);
}

/* @path opened read-write and described: the fd, or -errno */
int p2p_bar_open(const char *path, struct p2pbar_info *info)
{
	int fd = open(path, O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = p2p_bar_info(fd, info);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int p2p_bar_alloc(int fd, uint64_t size, uint64_t align, struct p2pbar_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->argsz = sizeof(*a);
	a->size = size;
	a->align = align;
	return xioctl(fd, P2PBAR_IOC_ALLOC, a);
}

int p2p_bar_free(int fd, uint32_t handle)
{
	struct p2pbar_free f = { .argsz = sizeof(f), .handle = handle };

	return xioctl(fd, P2PBAR_IOC_FREE, &f);
}

/* p2pmem of @size as a dma-buf (P2PBAR_EXPORT_F_*): its fd is e->fd */
int p2p_bar_export(int fd, uint64_t size, uint32_t flags, struct p2pbar_export *e)
{
	memset(e, 0, sizeof(*e));
	e->argsz = sizeof(*e);
	e->size = size;
	e->flags = flags;
	return xioctl(fd, P2PBAR_IOC_EXPORT, e);
}

/* the kernel's verdict for the function @domain:@devid as a client */
int p2p_bar_verdict(int fd, uint32_t domain, uint32_t devid, struct p2pbar_verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->argsz = sizeof(*v);
	v->client_domain = domain;
	v->client_devid = devid;
	return xioctl(fd, P2PBAR_IOC_VERDICT, v);
}

/**
 * p2p_mem_get - allocate p2pmem from a provider and map it
 * @fd: the provider's open file
 * @len: bytes
 * @align: alignment in the BAR (0: the provider's default)
 * @m: out: the mapping; p2p_mem_put() undoes it
 *
 * Return: 0 or -errno; nothing is left allocated on failure.
 */
int p2p_mem_get(int fd, size_t len, size_t align, struct p2p_mem *m)
{
	struct p2pbar_alloc a;
	struct p2pbar_info i;
	int ret = p2p_bar_info(fd, &i);

	if (!ret)
		ret = p2p_bar_alloc(fd, len, align, &a);
	if (ret)
		return ret;
	m->p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.mmap_offset);
	if (m->p == MAP_FAILED) {
		ret = -errno;
		p2p_bar_free(fd, a.handle);
		return ret;
	}
	m->len = len;
	m->handle = a.handle;
	m->mmap_offset = a.mmap_offset;
	m->fd = fd;
	m->bar_offset = a.bus_addr - i.bus_addr + i.offset;
	return 0;
}

/* unmap and free what p2p_mem_get() gave */
void p2p_mem_put(struct p2p_mem *m)
{
	munmap(m->p, m->len);
	p2p_bar_free(m->fd, m->handle);
}

/* ---- a p2pnvme controller ----------------------------------------------- */

int p2p_nvme_info(int fd, struct p2pnvme_info *info)
{
	memset(info, 0, sizeof(*info));
	info->argsz = sizeof(*info);
	return xioctl(fd, P2PNVME_IOC_INFO, info);
}

/* one transfer (@io's argsz is set here) */
int p2p_nvme_io(int fd, struct p2pnvme_io *io)
{
	io->argsz = sizeof(*io);
	return xioctl(fd, P2PNVME_IOC_IO, io);
}

/* a buffer registered: host memory at @addr, or dma-buf @dmabuf_fd at offset @addr */
int p2p_nvme_register(int fd, uint32_t flags, uint64_t addr, uint64_t len, int dmabuf_fd,
		      uint32_t *id)
{
	struct p2pnvme_buf_reg r = { .argsz = sizeof(r), .flags = flags, .addr = addr,
				     .len = len, .dmabuf_fd = dmabuf_fd };
	int ret = xioctl(fd, P2PNVME_IOC_BUF_REGISTER, &r);

	if (!ret)
		*id = r.id;
	return ret;
}

int p2p_nvme_unregister(int fd, uint32_t id)
{
	struct p2pnvme_buf_unreg u = { .argsz = sizeof(u), .id = id };

	return xioctl(fd, P2PNVME_IOC_BUF_UNREGISTER, &u);
}

/*
 * One P2PNVME_IOC_FILE_SUBMIT of @nr file transfers (each entry's argsz is
 * set here): 0, or the -errno of the batch (its first failed entry's once
 * issued); *@failed, if given, the index of the entry that made it fail
 * before anything was issued, else @nr.
 */
int p2p_nvme_file_submit(int fd, struct p2pnvme_file_io *ios, uint32_t nr, uint32_t *failed)
{
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = nr, .failed = nr,
				      .ios = (uintptr_t)ios };
	uint32_t i;
	int ret;

	for (i = 0; i < nr; i++)
		ios[i].argsz = sizeof(ios[i]);
	ret = xioctl(fd, P2PNVME_IOC_FILE_SUBMIT, &sub);
	if (failed)
		*failed = sub.failed;
	return ret;
}

/* NVME_IOCTL_ADMIN_CMD: 0, the NVMe status (> 0), or -errno */
int p2p_nvme_admin(int fd, struct nvme_admin_cmd *cmd)
{
	int ret = ioctl(fd, NVME_IOCTL_ADMIN_CMD, cmd);

	return ret < 0 ? -errno : ret;
}
