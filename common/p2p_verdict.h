/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The P2PDMA topology rules, written once: drivers/pci/p2pdma.c's
 * calc_map_type_and_dist() as a pure function of two paths to the root.
 * Compiled into p2pbar (drivers/p2pbar/verdict_rules.c includes
 * p2p_verdict.c) and into p2pctl, so the driver's explanation and the
 * tool's prediction cannot drift apart.
 */
#ifndef P2P_VERDICT_H
#define P2P_VERDICT_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <linux/types.h>
#endif

/* A PCI function's identity in the verdict: domain (all 32 bits) and devid. */
#define P2PBAR_TOPO_ID(domain, devid)	((__u64)(__u32)(domain) << 16 | (__u16)(devid))

#define P2PBAR_TOPO_MAX_DEPTH	16

/**
 * struct p2pbar_topo_node - one PCI function on the way to the root, for
 *	the topology verdict
 * @id: P2PBAR_TOPO_ID() of it (identity and messages)
 * @acs_redirect: ACS Control has P2P Request/Completion Redirect or Egress
 *	Control set (PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC)
 */
struct p2pbar_topo_node {
	__u64 id;
	bool acs_redirect;
};

/**
 * struct p2pbar_topo_path - a function and its upstream bridges
 * @node: node[0] is the function, node[len - 1] sits on the root bus
 * @len: number of valid entries in @node
 * @host: identity of the host bridge: P2PBAR_TOPO_ID(domain, root bus)
 * @host_vendor: vendor of the host bridge's representative function
 *	(devfn 00.0 or a root port first on the root bus), 0 if none
 * @host_device: its device ID
 */
struct p2pbar_topo_path {
	struct p2pbar_topo_node node[P2PBAR_TOPO_MAX_DEPTH];
	int len;
	__u64 host;
	__u16 host_vendor;
	__u16 host_device;
};

/**
 * struct p2p_walk - what the walk from a provider to a client found
 * @map_type: enum p2pbar_map_type
 * @reason: enum p2pbar_reason
 * @host_ok: enum p2pbar_host_ok
 * @distance: as pci_p2pdma_distance(): -1 when refused
 * @common: index in the provider's path of the first bridge the client
 *	    also sits under, -1 when they share none below the host bridge
 * @acs_provider: bit i: the provider's node[i] redirects (ACS), at or
 *		  below the common bridge
 * @acs_client: bit i: the client's node[i] redirects, below the common
 *		bridge
 * @host_client: the host bridge judged is the client's (else the
 *		 provider's)
 * @host_since: the kernel release whose allowlist first lists the host
 *		bridge judged (600 for 6.0, 702 for 7.2), 0 if not listed
 */
struct p2p_walk {
	__u32 map_type;
	__u32 reason;
	__u32 host_ok;
	int distance;
	int common;
	__u32 acs_provider;
	__u32 acs_client;
	bool host_client;
	int host_since;
};

__u32 p2p_host_allowed(const struct p2pbar_topo_path *p, bool same_host, int *since);
void p2p_verdict_walk(const struct p2pbar_topo_path *provider,
		      const struct p2pbar_topo_path *client, bool cpu_routes_p2p,
		      struct p2p_walk *w);

#endif /* P2P_VERDICT_H */
