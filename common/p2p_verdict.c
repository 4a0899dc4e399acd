// SPDX-License-Identifier: GPL-2.0
/*
 * The P2PDMA topology rules (see p2p_verdict.h): walk up from the provider
 * until a bridge the client also sits under; an ACS redirect on a port of
 * that path, or no such bridge, sends the traffic through the host bridge,
 * which the kernel allows on CPUs known to route P2P (AMD Zen and newer)
 * and for the host bridges of its allowlist. Pure: the result depends only
 * on the arguments. Built by the kernel and by userspace: kernel types and
 * headers only through p2p_verdict.h.
 */
#ifdef __KERNEL__
#include <linux/kernel.h>
#include <uapi/linux/p2pbar.h>
#else
#include <stddef.h>
#include <linux/p2pbar.h>
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#include "p2p_verdict.h"

#define SAME_HOST_BRIDGE	1	/* allowed only when both sit under it */
#define ANY_DEVICE		0xffff

/*
 * drivers/pci/p2pdma.c's pci_p2pdma_whitelist[], with the release that
 * first lists each entry (6.0 for all older ones): the running kernel's
 * own list decides; this one explains and predicts.
 */
static const struct {
	__u16 vendor;
	__u16 device;
	__u8 flags;
	__u16 since;
} p2p_host_allowlist[] = {
	{ 0x8086, 0x3c00, SAME_HOST_BRIDGE, 600 },	/* Xeon E5 */
	{ 0x8086, 0x3c01, SAME_HOST_BRIDGE, 600 },
	{ 0x8086, 0x2f00, SAME_HOST_BRIDGE, 600 },	/* Xeon E5 v3 */
	{ 0x8086, 0x2f01, SAME_HOST_BRIDGE, 600 },
	{ 0x8086, 0x2030, 0, 600 },			/* Skylake-E */
	{ 0x8086, 0x2031, 0, 600 },
	{ 0x8086, 0x2032, 0, 600 },
	{ 0x8086, 0x2033, 0, 600 },
	{ 0x8086, 0x2020, 0, 600 },
	{ 0x8086, 0x09a2, 0, 600 },
	{ 0x8086, 0x0b25, 0, 702 },			/* DSA SPR0 */
	{ 0x8086, 0x0cfe, 0, 702 },			/* IAX SPR0 */
	{ 0x8086, 0x11fb, 0, 702 },			/* DSA GNRD */
	{ 0x8086, 0x1212, 0, 702 },			/* DSA DMR */
	{ 0x8086, 0x1216, 0, 702 },			/* IAA DMR */
	{ 0x8086, 0x4940, 0, 702 },			/* QAT 4XXX */
	{ 0x8086, 0x4942, 0, 702 },			/* QAT 401XX */
	{ 0x8086, 0x4944, 0, 702 },			/* QAT 402XX */
	{ 0x8086, 0x4946, 0, 702 },			/* QAT 420XX */
	{ 0x8086, 0x4948, 0, 702 },			/* QAT 6XXX */
	{ 0x1ae0, ANY_DEVICE, 0, 702 },			/* Google SoCs */
};

/**
 * p2p_host_allowed - may P2P go through @p's host bridge?
 * @p: a path; its host bridge's representative function is judged
 * @same_host: both functions sit under this host bridge
 * @since: out: the release whose allowlist first lists it (600, 702), or 0
 *
 * Return: enum p2pbar_host_ok: P2PBAR_HOST_ALLOWLIST, P2PBAR_HOST_NEEDS_SAME
 * (listed, but only within itself) or P2PBAR_HOST_NOT_LISTED.
 */
__u32 p2p_host_allowed(const struct p2pbar_topo_path *p, bool same_host, int *since)
{
	size_t i;

	*since = 0;
	if (!p->host_vendor)
		return P2PBAR_HOST_NOT_LISTED;
	for (i = 0; i < ARRAY_SIZE(p2p_host_allowlist); i++) {
		if (p2p_host_allowlist[i].vendor != p->host_vendor)
			continue;
		if (p2p_host_allowlist[i].device != ANY_DEVICE &&
		    p2p_host_allowlist[i].device != p->host_device)
			continue;
		*since = p2p_host_allowlist[i].since;
		if ((p2p_host_allowlist[i].flags & SAME_HOST_BRIDGE) && !same_host)
			return P2PBAR_HOST_NEEDS_SAME;
		return P2PBAR_HOST_ALLOWLIST;
	}
	return P2PBAR_HOST_NOT_LISTED;
}

/**
 * p2p_verdict_walk - decide whether and how two functions can do P2P
 * @a: the provider's path
 * @b: the client's path
 * @cpu_routes_p2p: the CPU is known to route P2P through its host bridges
 * @w: filled in
 */
void p2p_verdict_walk(const struct p2pbar_topo_path *a, const struct p2pbar_topo_path *b,
		      bool cpu_routes_p2p, struct p2p_walk *w)
{
	int ia, ib, common_b = -1, since_b;
	__u32 host_b;

	*w = (struct p2p_walk){ .common = -1, .host_ok = P2PBAR_HOST_UNUSED };
	/* walk up from the provider until a node is also on the client's path */
	for (ia = 0; ia < a->len; ia++) {
		if (a->node[ia].acs_redirect)
			w->acs_provider |= 1U << ia;
		for (ib = 0; ib < b->len; ib++) {
			if (a->node[ia].id == b->node[ib].id && a->host == b->host) {
				common_b = ib;
				break;
			}
		}
		if (common_b >= 0)
			break;
	}

	if (common_b < 0) {
		w->distance = a->len + b->len;
		w->reason = P2PBAR_REASON_NO_COMMON_BRIDGE;
		w->acs_provider = 0;	/* the kernel reports ACS only below a common bridge */
	} else {
		w->common = ia;
		w->distance = ia + common_b;
		for (ib = 0; ib < common_b; ib++)
			if (b->node[ib].acs_redirect)
				w->acs_client |= 1U << ib;
		if (!w->acs_provider && !w->acs_client) {
			w->map_type = P2PBAR_MAP_DIRECT;
			w->reason = P2PBAR_REASON_COMMON_BRIDGE;
			return;
		}
		w->reason = P2PBAR_REASON_ACS_REDIRECT;
	}

	/* through the host bridge(s) */
	if (cpu_routes_p2p) {
		w->host_ok = P2PBAR_HOST_CPU;
	} else if (a->host == b->host) {
		w->host_ok = p2p_host_allowed(a, true, &w->host_since);
	} else {
		w->host_ok = p2p_host_allowed(a, false, &w->host_since);
		host_b = p2p_host_allowed(b, false, &since_b);
		if (w->host_ok == P2PBAR_HOST_ALLOWLIST && host_b != P2PBAR_HOST_ALLOWLIST) {
			w->host_ok = host_b;
			w->host_since = since_b;
			w->host_client = true;
		}
	}

	if (w->host_ok == P2PBAR_HOST_CPU || w->host_ok == P2PBAR_HOST_ALLOWLIST) {
		w->map_type = P2PBAR_MAP_HOST_BRIDGE;
	} else {
		w->map_type = P2PBAR_MAP_REFUSED;
		w->distance = -1;
	}
}
