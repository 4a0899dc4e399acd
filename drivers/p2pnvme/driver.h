/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: the PCI driver, the char device, sysfs (layer 1) */
#ifndef P2PNVME_DRIVER_H
#define P2PNVME_DRIVER_H

#include "internal.h"

/* cdev.c: the char device */
extern const struct file_operations p2pnvme_fops;

/* sysfs.c: sysfs and debugfs */
extern const struct attribute_group *p2pnvme_groups[];
void p2pnvme_sysfs_init(void);
void p2pnvme_debugfs_add(struct p2pnvme *c);
void p2pnvme_counts(struct p2pnvme *c, struct p2pnvme_counts *out);

#endif /* P2PNVME_DRIVER_H */
