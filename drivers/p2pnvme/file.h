/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: the file command (layer 3, beside io.h) */
#ifndef P2PNVME_FILE_H
#define P2PNVME_FILE_H

#include "internal.h"

long p2pnvme_ioc_file_submit(struct p2pnvme_file *f, unsigned long uarg);

#endif /* P2PNVME_FILE_H */
