// SPDX-License-Identifier: GPL-2.0
/*
 * Topology verdict: can a client DMA to this provider's BAR, how, and why.
 *
 * p2pbar_verdict_compute() is pure (no PCI access) so that KUnit can feed it
 * fake topologies; p2pbar_topo_path_fill() reads a real one. The rules are
 * those of calc_map_type_and_dist() in drivers/pci/p2pdma.c, written once
 * in common/p2p_verdict.c (p2pctl's predictions come from the same file):
 * walk up from the provider, find the first bridge shared with the client,
 * and look for ACS redirect on the ports below it; without a shared bridge,
 * or with a redirect, traffic crosses the host bridge, which is allowed
 * only on CPUs known to route P2P or for allow-listed host bridges.
 *
 * The decision is the running kernel's, not ours: the allowlist differs
 * between kernels (7.2 lists more host bridges than 6.12), so
 * p2pbar_verdict() takes the distance from pci_p2pdma_distance() and
 * p2pbar_verdict_reconcile() fits the explanation to it.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/p2pbar.h>
#include <linux/pci-p2pdma.h>

#include "p2pbar.h"

/**
 * p2pbar_verdict_compute - decide whether and how two functions can do P2P
 * @a: path of the provider
 * @b: path of the client
 * @cpu_routes_p2p: the CPU is known to route P2P through its host bridges
 * @v: filled in (distance, map_type, reason, host_ok, acs_devid, host_id);
 *     argsz, flags and client are left alone
 *
 * The rules are common/p2p_verdict.c's, which p2pctl is built from too;
 * this puts the walk's findings into the ioctl's terms. Pure function:
 * the result depends only on the arguments.
 */
void p2pbar_verdict_compute(const struct p2pbar_topo_path *a,
			    const struct p2pbar_topo_path *b,
			    bool cpu_routes_p2p, struct p2pbar_verdict *v)
{
	const struct p2pbar_topo_path *h;
	struct p2p_walk w;

	p2p_verdict_walk(a, b, cpu_routes_p2p, &w);
	v->distance = w.distance;
	v->map_type = w.map_type;
	v->reason = w.reason;
	v->host_ok = w.host_ok;
	/* the first redirecting port, the provider's side first, in devid form */
	if (w.acs_provider)
		v->acs_devid = (u16)a->node[__ffs(w.acs_provider)].id;
	else if (w.acs_client)
		v->acs_devid = (u16)b->node[__ffs(w.acs_client)].id;
	else
		v->acs_devid = ~0U;
	h = w.host_client ? b : a;
	v->host_id = w.host_ok == P2PBAR_HOST_UNUSED ? 0 :
		     (u32)h->host_vendor << 16 | h->host_device;
}
EXPORT_SYMBOL_GPL(p2pbar_verdict_compute);

/**
 * p2pbar_verdict_reconcile - make a computed verdict the running kernel's
 * @v: from p2pbar_verdict_compute()
 * @kernel_distance: pci_p2pdma_distance() for the same pair, -1 if refused
 *
 * The distance and whether P2P is possible at all are the kernel's. Where
 * the kernel disagrees with the walk it is about the host bridge (an
 * allowlist entry one kernel has and another lacks): the explanation says
 * what the running kernel decided. Pure function.
 */
void p2pbar_verdict_reconcile(struct p2pbar_verdict *v, int kernel_distance)
{
	if (kernel_distance < 0) {
		if (v->map_type != P2PBAR_MAP_REFUSED && v->host_ok != P2PBAR_HOST_UNUSED)
			v->host_ok = P2PBAR_HOST_NOT_LISTED;	/* not in *this* kernel's list */
		v->map_type = P2PBAR_MAP_REFUSED;
		v->distance = -1;
		return;
	}
	if (v->map_type == P2PBAR_MAP_REFUSED) {
		v->map_type = P2PBAR_MAP_HOST_BRIDGE;	/* this kernel allows the host bridge */
		v->host_ok = P2PBAR_HOST_ALLOWLIST;
	}
	v->distance = kernel_distance;
}
EXPORT_SYMBOL_GPL(p2pbar_verdict_reconcile);

static u64 p2pbar_pci_id(struct pci_dev *pdev)
{
	return P2PBAR_TOPO_ID(pci_domain_nr(pdev->bus), pci_dev_id(pdev));
}

/* The representative function of a host bridge, as p2pdma.c picks it. */
static struct pci_dev *host_bridge_dev(struct pci_bus *root)
{
	struct pci_dev *dev;

	dev = list_first_entry_or_null(&root->devices, struct pci_dev, bus_list);
	if (!dev)
		return NULL;
	if (dev->devfn == PCI_DEVFN(0, 0) ||
	    (pci_is_pcie(dev) && pci_pcie_type(dev) == PCI_EXP_TYPE_ROOT_PORT))
		return dev;
	return NULL;
}

/**
 * p2pbar_topo_path_fill - record @pdev and its upstream bridges
 * @pdev: the function; the caller holds a reference to it
 * @path: filled in
 *
 * Return: 0, or -E2BIG if the hierarchy is deeper than the path can hold.
 */
int p2pbar_topo_path_fill(struct pci_dev *pdev, struct p2pbar_topo_path *path)
{
	struct pci_host_bridge *host = pci_find_host_bridge(pdev->bus);
	struct pci_dev *dev, *hb;
	u16 ctrl;
	int pos;

	memset(path, 0, sizeof(*path));
	for (dev = pdev; dev; dev = pci_upstream_bridge(dev)) {
		if (path->len == P2PBAR_TOPO_MAX_DEPTH)
			return -E2BIG;
		path->node[path->len].id = p2pbar_pci_id(dev);
		pos = pci_find_ext_capability(dev, PCI_EXT_CAP_ID_ACS);
		if (pos) {
			pci_read_config_word(dev, pos + PCI_ACS_CTRL, &ctrl);
			path->node[path->len].acs_redirect =
				!!(ctrl & (PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC));
		}
		path->len++;
	}
	path->host = P2PBAR_TOPO_ID(pci_domain_nr(host->bus), host->bus->number);
	hb = host_bridge_dev(host->bus);
	if (hb) {
		path->host_vendor = hb->vendor;
		path->host_device = hb->device;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(p2pbar_topo_path_fill);

static bool p2pbar_cpu_routes_p2p(void)
{
#ifdef CONFIG_X86
	/* Any AMD CPU whose family ID is Zen or newer, as p2pdma.c decides. */
	if (boot_cpu_data.x86_vendor == X86_VENDOR_AMD && boot_cpu_data.x86 >= 0x17)
		return true;
#endif
	return false;
}

/**
 * p2pbar_verdict - topology verdict between two PCI functions
 * @provider: function whose memory is the DMA target
 * @client: function that would issue the DMA
 * @v: filled in as by p2pbar_verdict_compute()
 *
 * The caller holds references to both functions. The distance and map
 * type are the running kernel's (pci_p2pdma_distance()); the walk adds the
 * reason in terms a person can act on.
 *
 * Return: 0, or a negative errno if a path could not be read.
 */
int p2pbar_verdict(struct pci_dev *provider, struct pci_dev *client,
		   struct p2pbar_verdict *v)
{
	struct p2pbar_topo_path *pa, *pb;
	char why[128];
	int ret;

	pa = kmalloc_array(2, sizeof(*pa), GFP_KERNEL);
	if (!pa)
		return -ENOMEM;
	pb = pa + 1;
	ret = p2pbar_topo_path_fill(provider, pa);
	if (!ret)
		ret = p2pbar_topo_path_fill(client, pb);
	if (!ret) {
		v->client_domain = pci_domain_nr(client->bus);
		v->client_devid = pci_dev_id(client);
		p2pbar_verdict_compute(pa, pb, p2pbar_cpu_routes_p2p(), v);
		p2pbar_verdict_reconcile(v, pci_p2pdma_distance(provider, &client->dev, false));
		p2pbar_verdict_explain(v, why, sizeof(why));
		pci_dbg(provider, "verdict for %s: %s, distance %d: %s\n", pci_name(client),
			p2pbar_map_name(v->map_type), v->distance, why);
	}
	kfree(pa);
	return ret;
}
EXPORT_SYMBOL_GPL(p2pbar_verdict);

static const char * const map_names[] = {
	[P2PBAR_MAP_REFUSED] = "refused",
	[P2PBAR_MAP_DIRECT] = "direct",
	[P2PBAR_MAP_HOST_BRIDGE] = "host-bridge",
};

/**
 * p2pbar_map_name - short name of an enum p2pbar_map_type value
 * @map_type: the value
 *
 * Return: "direct", "host-bridge", "refused" or "?".
 */
const char *p2pbar_map_name(u32 map_type)
{
	return map_type < ARRAY_SIZE(map_names) ? map_names[map_type] : "?";
}
EXPORT_SYMBOL_GPL(p2pbar_map_name);

/**
 * p2pbar_verdict_explain - the reason of a verdict in words
 * @v: a computed verdict
 * @buf: output
 * @len: size of @buf
 *
 * Return: the number of characters written, as scnprintf().
 */
int p2pbar_verdict_explain(const struct p2pbar_verdict *v, char *buf, size_t len)
{
	int n = 0;

	switch (v->reason) {
	case P2PBAR_REASON_COMMON_BRIDGE:
		return scnprintf(buf, len, "common upstream bridge, no ACS redirect");
	case P2PBAR_REASON_ACS_REDIRECT:
		n = scnprintf(buf, len, "ACS redirect set on %04x:%02x:%02x.%x",
			      v->client_domain, PCI_BUS_NUM(v->acs_devid),
			      PCI_SLOT(v->acs_devid & 0xff), PCI_FUNC(v->acs_devid & 0xff));
		break;
	default:
		n = scnprintf(buf, len, "no common upstream bridge");
		break;
	}
	switch (v->host_ok) {
	case P2PBAR_HOST_CPU:
		n += scnprintf(buf + n, len - n, "; CPU routes P2P through the host bridge");
		break;
	case P2PBAR_HOST_ALLOWLIST:
		n += scnprintf(buf + n, len - n, "; host bridge %04x:%04x is allow-listed",
			       v->host_id >> 16, v->host_id & 0xffff);
		break;
	case P2PBAR_HOST_NEEDS_SAME:
		n += scnprintf(buf + n, len - n,
			       "; host bridge %04x:%04x allows P2P only within itself",
			       v->host_id >> 16, v->host_id & 0xffff);
		break;
	case P2PBAR_HOST_NOT_LISTED:
		n += scnprintf(buf + n, len - n, "; host bridge %04x:%04x not in allowlist",
			       v->host_id >> 16, v->host_id & 0xffff);
		break;
	}
	return n;
}
EXPORT_SYMBOL_GPL(p2pbar_verdict_explain);
