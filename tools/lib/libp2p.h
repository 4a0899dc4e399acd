/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libp2p: what p2pctl, the test programs and the benchmark share. The
 * suite's devices (a p2pbar provider, a p2pnvme controller) through their
 * ioctls, the PCI functions behind them through sysfs, a file's extents
 * (FIEMAP), and the numbers and PCI addresses a command line gives.
 *
 * Every function that can fail returns 0 (or a file descriptor) on success
 * and -errno on failure; none prints anything.
 */
#ifndef P2P_TOOLS_LIBP2P_H
#define P2P_TOOLS_LIBP2P_H

#include <stddef.h>
#include <stdint.h>

#include <linux/p2pbar.h>
#include <linux/p2pnvme.h>
#include <linux/nvme_ioctl.h>

/* ---- numbers and PCI addresses ---------------------------------------- */

int p2p_parse_num(const char *s, uint64_t *v);

/* "ffffffff:ff:1f.7" and its NUL, with room to spare */
#define P2P_BDF_LEN	24

int p2p_parse_bdf(const char *s, uint32_t *domain, uint32_t *devid);
char *p2p_bdf_name(uint32_t domain, uint32_t devid, char *buf, size_t len);
int p2p_bdf_canon(const char *s, char *buf, size_t len);

/* ---- sysfs ------------------------------------------------------------- */

const char *p2p_sysfs_line(const char *dir, const char *file, char *buf, size_t len);
const char *p2p_sysfs_link(const char *dir, const char *link, char *buf, size_t len);
long long p2p_sysfs_num(const char *path);
int p2p_sysfs_write(const char *path, const char *s);
int p2p_pci_config(const char *bdf, unsigned int off, void *buf, size_t len);
void p2p_copy_str(char *dst, size_t len, const char *src);

/* ---- files ------------------------------------------------------------- */

struct fiemap_extent;

int p2p_fiemap_walk(int fd, uint64_t start, uint64_t end, uint32_t flags,
		    int (*fn)(const struct fiemap_extent *fe, void *arg), void *arg);

/* ---- a p2pbar provider -------------------------------------------------- */

int p2p_bar_open(const char *path, struct p2pbar_info *info);
int p2p_bar_info(int fd, struct p2pbar_info *info);
int p2p_bar_alloc(int fd, uint64_t size, uint64_t align, struct p2pbar_alloc *a);
int p2p_bar_free(int fd, uint32_t handle);
int p2p_bar_export(int fd, uint64_t size, uint32_t flags, struct p2pbar_export *e);
int p2p_bar_verdict(int fd, uint32_t domain, uint32_t devid, struct p2pbar_verdict *v);

/**
 * struct p2p_mem - p2pmem allocated from a provider and mapped
 * @p: the CPU mapping
 * @len: its length
 * @bar_offset: where it starts in the provider's BAR
 * @handle: P2PBAR_IOC_FREE's name for it
 * @mmap_offset: the provider file's offset that maps it
 * @fd: the provider's open file it came from
 */
struct p2p_mem {
	unsigned char *p;
	size_t len;
	uint64_t bar_offset;
	uint32_t handle;
	uint64_t mmap_offset;
	int fd;
};

int p2p_mem_get(int fd, size_t len, size_t align, struct p2p_mem *m);
void p2p_mem_put(struct p2p_mem *m);

/* ---- a p2pnvme controller ----------------------------------------------- */

int p2p_nvme_info(int fd, struct p2pnvme_info *info);
int p2p_nvme_io(int fd, struct p2pnvme_io *io);
int p2p_nvme_register(int fd, uint32_t flags, uint64_t addr, uint64_t len, int dmabuf_fd,
		      uint32_t *id);
int p2p_nvme_unregister(int fd, uint32_t id);
int p2p_nvme_file_submit(int fd, struct p2pnvme_file_io *ios, uint32_t nr, uint32_t *failed);
int p2p_nvme_admin(int fd, struct nvme_admin_cmd *cmd);

#endif /* P2P_TOOLS_LIBP2P_H */
