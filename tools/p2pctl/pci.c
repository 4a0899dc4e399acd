// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl: the PCI tree from sysfs and config space, and the kernel's
 * P2PDMA rules over it (common/p2p_verdict.c, the source p2pbar is built
 * from too).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p2pctl.h"

/* the /sys/class/CLASS/NAME whose device link is @bdf, or "" */
const char *class_dev_of(const char *class, const char *bdf, char *buf, size_t len)
{
	char dir[300], dev[64];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/sys/class/%s", class);
	buf[0] = 0;
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		char cdir[600];

		if (e->d_name[0] == '.')
			continue;
		snprintf(cdir, sizeof(cdir), "%s/%s", dir, e->d_name);
		if (!strcmp(p2p_sysfs_link(cdir, "device", dev, sizeof(dev)), bdf)) {
			p2p_copy_str(buf, len, e->d_name);
			break;
		}
	}
	if (d)
		closedir(d);
	return buf;
}

/*
 * What drivers/pci/p2pdma.c (calc_map_type_and_dist()) decides, computed
 * without binding anything: walk up from A to the first bridge B also sits
 * under; ACS P2P redirect (RR, CR or EC) on a port of that path, or no
 * common bridge, sends the traffic through the host bridge, which the
 * kernel allows on AMD Zen and newer CPUs and for the host bridges of its
 * allowlist (which differs between kernel versions: 7.x lists more).
 * drivers/p2pbar/verdict.c is the same walk, inside the kernel.
 */

/* ACS Control has P2P Request/Completion Redirect or Egress Control set */
int acs_redirect(const char *bdf)
{
	unsigned int pos = 0x100, guard = 0;
	uint32_t hdr;
	uint16_t ctrl;

	while (pos >= 0x100 && pos < 0x1000 && guard++ < 64) {
		if (p2p_pci_config(bdf, pos, &hdr, 4) || hdr == 0 || hdr == ~0U)
			return 0;	/* no extended space (or not root): none */
		if ((hdr & 0xffff) == 0x000d)
			return !p2p_pci_config(bdf, pos + 6, &ctrl, 2) && (ctrl & (0x04 | 0x08 | 0x20));
		pos = hdr >> 20;
	}
	return 0;
}

/* PCIe device/port type of @bdf (PCI_EXP_FLAGS_TYPE), -1 if not PCIe */
static int pcie_type(const char *bdf)
{
	uint8_t pos = 0, cap[2];
	uint16_t flags;
	int guard = 0;

	if (p2p_pci_config(bdf, 0x34, &pos, 1))
		return -1;
	while (pos >= 0x40 && guard++ < 48) {
		if (p2p_pci_config(bdf, pos, cap, 2))
			return -1;
		if (cap[0] == 0x10)
			return p2p_pci_config(bdf, pos + 2, &flags, 2) ? -1 : (flags >> 4) & 0xf;
		pos = cap[1];
	}
	return -1;
}

int topo_of(const char *bdf, struct topo *t)
{
	char link[300], real[PATH_MAX], *p, *tok, *save, *parts[64], rootbus[300];
	int n = 0, i;
	struct dirent *e;
	DIR *d;

	memset(t, 0, sizeof(*t));
	snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s", bdf);
	if (!realpath(link, real))
		return -errno;
	/* /sys/devices/pci0000:00/0000:00:1c.0/0000:01:00.0 */
	p = strstr(real, "/pci");
	if (!p)
		return -ENODEV;
	for (tok = strtok_r(p, "/", &save); tok && n < 64; tok = strtok_r(NULL, "/", &save))
		parts[n++] = tok;
	if (n < 2 || n - 1 > TOPO_DEPTH)
		return -E2BIG;
	p2p_copy_str(t->host, sizeof(t->host), parts[0]);
	for (i = n - 1; i >= 1; i--) {
		p2p_copy_str(t->name[t->len], sizeof(t->name[0]), parts[i]);
		t->acs[t->len] = acs_redirect(parts[i]);
		t->len++;
	}
	/*
	 * The kernel's pci_host_bridge_dev(): the first function on the root
	 * bus if it is 00.0 or a root port. Root bus functions are the
	 * directory's children named DDDD:BB:..; the lowest devfn comes first.
	 */
	snprintf(rootbus, sizeof(rootbus), "/sys/devices/%s", t->host);
	d = opendir(rootbus);
	while (d && (e = readdir(d))) {
		unsigned int dom, bus, dev, fn;

		if (sscanf(e->d_name, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
			continue;
		if (!*t->host_dev || strcmp(e->d_name, t->host_dev) < 0)
			p2p_copy_str(t->host_dev, sizeof(t->host_dev), e->d_name);
	}
	if (d)
		closedir(d);
	if (*t->host_dev) {
		char dir[300], v[16];

		if (strcmp(t->host_dev + 8, "00.0") && pcie_type(t->host_dev) != 4) {
			t->host_dev[0] = 0;	/* neither 00.0 nor a root port */
			return 0;
		}
		snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", t->host_dev);
		t->host_vendor = strtoul(p2p_sysfs_line(dir, "vendor", v, sizeof(v)), NULL, 16);
		t->host_device = strtoul(p2p_sysfs_line(dir, "device", v, sizeof(v)), NULL, 16);
	}
	return 0;
}

/* cpu_supports_p2pdma(): an AMD CPU of family 0x17 (Zen) or later */
int cpu_routes_p2p(void)
{
	char line[256];
	int amd = 0, family = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "vendor_id", 9))
			amd = !!strstr(line, "AuthenticAMD");
		else if (!strncmp(line, "cpu family", 10))
			family = atoi(strchr(line, ':') ? strchr(line, ':') + 1 : "0");
		else if (line[0] == '\n')
			break;	/* the first CPU is enough, as cpu_data(0) */
	}
	if (f)
		fclose(f);
	return amd && family >= 0x17;
}

/*
 * @t in the terms of the rules' one source (common/p2p_verdict.c, built
 * into p2pbar too): identities from the PCI names.
 */
void path_of(const struct topo *t, struct p2pbar_topo_path *p)
{
	unsigned int dom, bus, dev, fn;
	int i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < t->len; i++) {
		if (sscanf(t->name[i], "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4) {
			p->node[i].id = P2PBAR_TOPO_ID(dom, bus << 8 | dev << 3 | fn);
		} else {
			/*
			 * Not a function (a VMD domain's pciDDDDD:BB): an identity
			 * of its name, above every P2PBAR_TOPO_ID() (48 bits)
			 */
			uint64_t h = 0xcbf29ce484222325ULL;
			const char *s;

			for (s = t->name[i]; *s; s++)
				h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
			p->node[i].id = 1ULL << 63 | h >> 1;
		}
		p->node[i].acs_redirect = t->acs[i];
	}
	p->len = t->len;
	if (sscanf(t->host, "pci%x:%x", &dom, &bus) == 2)
		p->host = P2PBAR_TOPO_ID(dom, bus);
	p->host_vendor = t->host_vendor;
	p->host_device = t->host_device;
}


void check_compute(const struct topo *a, const struct topo *b, struct check *c)
{
	struct p2pbar_topo_path pa, pb;
	struct p2p_walk w;
	int i;

	memset(c, 0, sizeof(*c));
	path_of(a, &pa);
	path_of(b, &pb);
	p2p_verdict_walk(&pa, &pb, cpu_routes_p2p(), &w);
	c->map_type = w.map_type;
	c->reason = w.reason;
	c->host_ok = w.host_ok;
	c->distance = w.distance;
	c->host_since = w.host_since;
	c->hops_a = c->hops_b = -1;
	if (w.common >= 0) {
		p2p_copy_str(c->common, sizeof(c->common), a->name[w.common]);
		c->hops_a = w.common;
		for (i = 0; i < b->len; i++)
			if (!strcmp(b->name[i], c->common))
				c->hops_b = i;
	}
	/* the redirecting ports as the kernel lists them: the provider's side first */
	for (i = 0; i < a->len; i++)
		if (w.acs_provider & 1U << i)
			p2p_copy_str(c->acs[c->nacs++], sizeof(c->acs[0]), a->name[i]);
	for (i = 0; i < b->len; i++)
		if (w.acs_client & 1U << i)
			p2p_copy_str(c->acs[c->nacs++], sizeof(c->acs[0]), b->name[i]);
	if (w.host_ok != P2PBAR_HOST_UNUSED)
		c->host = w.host_client ? b : a;
}

/* the reason in words, and what to change */
void check_explain(const struct check *c, const char *a, const char *b, char *why,
			  size_t wl, char *fix, size_t fl)
{
	char list[TOPO_DEPTH * 2 * 17] = "";
	int i;

	for (i = 0; i < c->nacs; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ";" : "",
			 c->acs[i]);
	fix[0] = 0;
	if (c->reason == P2PBAR_REASON_COMMON_BRIDGE) {
		snprintf(why, wl, "%s is the common upstream bridge and no port below it redirects",
			 c->common);
		return;
	}
	if (c->reason == P2PBAR_REASON_ACS_REDIRECT) {
		snprintf(why, wl, "ACS on %s redirects P2P requests up to the host bridge (the common bridge is %s)",
			 list, c->common);
		if (c->map_type == P2PBAR_MAP_REFUSED)
			snprintf(fix, fl, "boot with pci=disable_acs_redir=%s (or turn ACS redirect off for those ports in the BIOS), or use a CPU or host bridge this kernel allows",
				 list);
		else
			snprintf(fix, fl, "for a direct path, boot with pci=disable_acs_redir=%s", list);
	} else {
		snprintf(why, wl, "%s and %s share no upstream bridge below the host bridge", a, b);
		if (c->map_type == P2PBAR_MAP_REFUSED)
			snprintf(fix, fl, "put both devices under one PCIe switch (or root port with a switch), or use a CPU/host bridge this kernel allows");
		else
			snprintf(fix, fl, "for a direct path, put both devices under one PCIe switch");
	}
	if (c->map_type == P2PBAR_MAP_REFUSED && c->host)
		snprintf(why + strlen(why), wl - strlen(why),
			 "; the host bridge %s (%04x:%04x) is %s", *c->host->host_dev ? c->host->host_dev : c->host->host,
			 c->host->host_vendor, c->host->host_device,
			 c->host_ok == P2PBAR_HOST_NEEDS_SAME ? "allowed only when both devices sit under it" :
			 "not in this kernel's P2PDMA allowlist, and the CPU is no AMD Zen or newer (those route P2P)");
	else if (c->map_type == P2PBAR_MAP_HOST_BRIDGE)
		snprintf(why + strlen(why), wl - strlen(why), "; the host bridge routes it (%s)",
			 c->host_ok == P2PBAR_HOST_CPU ? "AMD Zen CPU" :
			 c->host_since > 600 ? "in the kernel's allowlist from 7.2 on" :
			 "in this kernel's allowlist");
}

/* sysfs resource flags (include/linux/ioport.h) */
#define IORES_IO	0x00000100
#define IORES_MEM	0x00000200
#define IORES_PREFETCH	0x00002000
#define IORES_MEM_64	0x00100000
#define IORES_DISABLED	0x10000000
#define IORES_UNSET	0x20000000
/* ZONE_DEVICE's sections (memremap_compat_align() on x86_64): p2pbar's least */
#define P2PBAR_MIN	(2ULL << 20)

/* "512 KiB", "64 MiB": in the largest unit that divides it */
const char *size_str(unsigned long long n, char *buf, size_t len)
{
	static const char * const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	unsigned int u = 0;

	while (n >= 1024 && !(n & 1023) && u < ARRAY_SIZE(unit) - 1) {
		n >>= 10;
		u++;
	}
	snprintf(buf, len, "%llu %s", n, unit[u]);
	return buf;
}

/*
 * Can @bdf (its path @t, or NULL) lend memory as a provider: PROVIDER_YES
 * when it has p2pmem already or a BAR p2pbar takes (a 64-bit prefetchable
 * memory BAR of 2 MiB or more: p2pbar_pick_region()), PROVIDER_NO with
 * @why and @fix for a host bridge, a bridge or a function without such a
 * BAR, PROVIDER_UNKNOWN when sysfs does not list its BARs.
 */
int provider_usable(const char *bdf, const struct topo *t, char *why, size_t wl, char *fix,
		    size_t fl)
{
	char dir[300], v[64], line[160], bars[512] = "", path[400], sz[32];
	unsigned long cls;
	int i, grow = -1;
	FILE *f;

	why[0] = 0;
	snprintf(fix, fl, "name as PROVIDER a function with p2pmem or with a 64-bit prefetchable memory BAR of 2 MiB or more (p2pctl doctor lists them)");
	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", bdf);
	cls = strtoul(p2p_sysfs_line(dir, "class", v, sizeof(v)), NULL, 16) >> 8;
	if (cls == 0x0600) {
		snprintf(why, wl, "%s is %s (PCI class 0600): it routes traffic and has no memory to lend",
			 bdf, t && !strcmp(t->host_dev, bdf) ? "the host bridge itself" :
			 "a host bridge function");
		return PROVIDER_NO;
	}
	if (cls == 0x0604 || cls == 0x0609) {
		snprintf(why, wl, "%s is a PCI bridge (class %04lx): it forwards traffic and has no memory to lend",
			 bdf, cls);
		return PROVIDER_NO;
	}
	if (strtoll(p2p_sysfs_line(dir, "p2pmem/size", v, sizeof(v)), NULL, 0) > 0)
		return PROVIDER_YES;	/* the kernel has p2pmem of it already */
	snprintf(path, sizeof(path), "%s/resource", dir);
	f = fopen(path, "re");
	if (!f) {
		fix[0] = 0;
		return PROVIDER_UNKNOWN;
	}
	/* "start end flags" in hex, BARs 0-5 first; the upper half of a 64-bit BAR is 0 */
	for (i = 0; i < 6 && fgets(line, sizeof(line), f); i++) {
		unsigned long long start, end, flags, len;
		char what[96] = "";

		if (sscanf(line, "%llx %llx %llx", &start, &end, &flags) != 3 || !flags ||
		    end <= start)
			continue;
		len = end - start + 1;
		if (flags & IORES_IO) {
			snprintf(bars + strlen(bars), sizeof(bars) - strlen(bars), "%sBAR %d: I/O ports",
				 *bars ? "; " : "", i);
			continue;
		}
		if (!(flags & IORES_MEM))
			continue;
		/* p2pbar's test, in its words (BARs are aligned to their size) */
		if (flags & (IORES_UNSET | IORES_DISABLED))
			snprintf(what, sizeof(what), "no address assigned");
		if (len < P2PBAR_MIN)
			snprintf(what + strlen(what), sizeof(what) - strlen(what), "%stoo small",
				 *what ? ", " : "");
		if (!(flags & IORES_PREFETCH))
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 "%snot prefetchable", *what ? ", " : "");
		if (!(flags & IORES_MEM_64))
			snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s32-bit",
				 *what ? ", " : "");
		if (!*what) {
			fclose(f);
			fix[0] = 0;
			return PROVIDER_YES;
		}
		if (len < P2PBAR_MIN && (flags & IORES_PREFETCH) && (flags & IORES_MEM_64))
			grow = i;
		snprintf(bars + strlen(bars), sizeof(bars) - strlen(bars), "%sBAR %d (%s): %s",
			 *bars ? "; " : "", i, size_str(len, sz, sizeof(sz)), what);
	}
	fclose(f);
	snprintf(why, wl, "%s has no BAR p2pbar can use: %s; p2pbar needs a 64-bit prefetchable memory BAR of 2 MiB or more",
		 bdf, *bars ? bars : "it has none");
	if (grow >= 0) {
		/* Resizable BAR: bit n of the sizes it offers is 2^n MiB */
		unsigned long long sizes;
		int n;

		snprintf(path, sizeof(path), "resource%d_resize", grow);
		sizes = strtoull(p2p_sysfs_line(dir, path, v, sizeof(v)), NULL, 16);
		for (n = 40; n >= 0 && !(sizes >> n & 1); n--)
			;
		if (n >= 1)
			snprintf(fix + strlen(fix), fl - strlen(fix),
				 "; or grow BAR %d with Resizable BAR while no driver has it: echo %d > %s/%s (%s, the largest it offers)",
				 grow, n, dir, path, size_str(1ULL << (20 + n), sz, sizeof(sz)));
		else
			snprintf(fix + strlen(fix), fl - strlen(fix),
				 "; or grow BAR %d with Resizable BAR in the firmware setup, if the device has it",
				 grow);
	}
	return PROVIDER_NO;
}

/*
 * @bdf's largest 64-bit prefetchable memory BAR: its index, or -1; its
 * size into *@size, and with Resizable BAR the largest size the device
 * offers for it into *@rebar_max (else 0)
 */
int largest_bar(const char *bdf, unsigned long long *size, unsigned long long *rebar_max)
{
	const unsigned long long want = IORES_MEM | IORES_MEM_64 | IORES_PREFETCH;
	char path[300], line[160], v[64];
	unsigned long long sizes;
	int i, bar = -1, n;
	FILE *f;

	*size = *rebar_max = 0;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bdf);
	f = fopen(path, "re");
	for (i = 0; f && i < 6 && fgets(line, sizeof(line), f); i++) {
		unsigned long long start, end, flags;

		if (sscanf(line, "%llx %llx %llx", &start, &end, &flags) != 3 || end <= start ||
		    (flags & want) != want || end - start + 1 <= *size)
			continue;
		bar = i;
		*size = end - start + 1;
	}
	if (f)
		fclose(f);
	if (bar < 0)
		return -1;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", bdf);
	snprintf(line, sizeof(line), "resource%d_resize", bar);
	sizes = strtoull(p2p_sysfs_line(path, line, v, sizeof(v)), NULL, 16);
	for (n = 40; n >= 0 && !(sizes >> n & 1); n--)
		;
	if (n >= 0)
		*rebar_max = 1ULL << (20 + n);
	return bar;
}

const char *map_name(uint32_t m)
{
	return m == P2PBAR_MAP_DIRECT ? "direct" :
	       m == P2PBAR_MAP_HOST_BRIDGE ? "host-bridge" : "refused";
}

const char *reason_name(uint32_t r)
{
	return r == P2PBAR_REASON_COMMON_BRIDGE ? "common upstream bridge" :
	       r == P2PBAR_REASON_ACS_REDIRECT ? "ACS redirect on the path" :
	       "no common upstream bridge";
}


/* /sys/bus/pci/devices/@bdf's numa_node, current link and IOMMU group */
void pci_attrs_of(const char *bdf, struct pci_attrs *a)
{
	char dir[300], v[64], *p, *q;

	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", bdf);
	a->numa = *p2p_sysfs_line(dir, "numa_node", v, sizeof(v)) ? atoi(v) : -1;
	/* "8.0 GT/s PCIe", "Unknown" */
	a->speed[0] = 0;
	if (isdigit((unsigned char)*p2p_sysfs_line(dir, "current_link_speed", v, sizeof(v)))) {
		for (p = v, q = a->speed; *p && q < a->speed + sizeof(a->speed) - 1; p++) {
			if (*p == ' ' && !strncmp(p, " PCIe", 5))
				break;
			if (*p != ' ')
				*q++ = *p;
		}
		*q = 0;
	}
	a->width = atoi(p2p_sysfs_line(dir, "current_link_width", v, sizeof(v)));
	a->iommu = *p2p_sysfs_link(dir, "iommu_group", v, sizeof(v)) ? atoi(v) : -1;
}

/*
 * nvidia-smi topo -m's legend for the path between @a and @b, from the
 * same walk (@k): PIX through at most one PCIe switch (each function at
 * most two hops below the common bridge), PXB through several, PHB
 * through the host bridge, NODE between host bridges of one NUMA node,
 * SYS between NUMA nodes. An unknown node (-1) counts as the same.
 */
enum topo_level topo_level(const struct topo *a, const struct topo *b, const struct check *k,
			   int numa_a, int numa_b)
{
	if (!strcmp(a->name[0], b->name[0]))
		return TOPO_X;
	if (*k->common)
		return k->hops_a <= 2 && k->hops_b <= 2 ? TOPO_PIX : TOPO_PXB;
	if (!strcmp(a->host, b->host))
		return TOPO_PHB;
	return numa_a < 0 || numa_b < 0 || numa_a == numa_b ? TOPO_NODE : TOPO_SYS;
}

const char *topo_level_name(enum topo_level l)
{
	static const char * const names[] = { "X", "PIX", "PXB", "PHB", "NODE", "SYS" };

	return names[l];
}

/*
 * Where the legend and the kernel part: a path below a common bridge
 * (PIX, PXB) that the kernel does not take directly (ACS redirect), or a
 * path through host bridges (PHB, NODE, SYS) on which it refuses P2P.
 */
bool topo_differs(enum topo_level l, uint32_t map_type)
{
	if (l == TOPO_PIX || l == TOPO_PXB)
		return map_type != P2PBAR_MAP_DIRECT;
	return l != TOPO_X && map_type == P2PBAR_MAP_REFUSED;
}
