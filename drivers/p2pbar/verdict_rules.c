// SPDX-License-Identifier: GPL-2.0
/*
 * The P2PDMA topology rules, from the one source p2pctl is built from too
 * (common/p2p_verdict.c): verdict.c adapts them to struct p2pbar_verdict.
 */
#include "p2p_verdict.c"
