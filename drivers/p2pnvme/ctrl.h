/* SPDX-License-Identifier: GPL-2.0 */
/* p2pnvme: the controller's state, the I/O guard, reset and recovery (layer 5) */
#ifndef P2PNVME_CTRL_H
#define P2PNVME_CTRL_H

#include "internal.h"

int p2pnvme_reset_wq_create(void);
void p2pnvme_reset_wq_destroy(void);
int p2pnvme_ctrl_init(struct p2pnvme *c);
void p2pnvme_ctrl_exit(struct p2pnvme *c);
bool p2pnvme_change_state(struct p2pnvme *c, enum p2pnvme_state new);
int p2pnvme_io_enter_state(struct p2pnvme *c, unsigned int state);
int p2pnvme_io_enter(struct p2pnvme *c);
bool p2pnvme_io_tryenter(struct p2pnvme *c);
void p2pnvme_io_exit(struct p2pnvme *c);
void p2pnvme_io_freeze(struct p2pnvme *c);
void p2pnvme_io_thaw(struct p2pnvme *c);
void p2pnvme_schedule_reset(struct p2pnvme *c);
void p2pnvme_quiesce(struct p2pnvme *c);
void p2pnvme_error_stop(struct p2pnvme *c, int err);
int p2pnvme_error_resume(struct p2pnvme *c);
void p2pnvme_reset_prepare(struct p2pnvme *c);
void p2pnvme_reset_done(struct p2pnvme *c);

#endif /* P2PNVME_CTRL_H */
