// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl: the machine. list (every provider, NVMe controller and other
 * candidate client), topo (the PCI tree annotated for P2P and a verdict
 * matrix), check (the verdict for two functions, why, and what to change).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "p2pctl.h"

#define PCI_DEVICES	"/sys/bus/pci/devices"

static int bdf_cmp(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

/* other candidate clients by PCI class: NICs (RDMA), GPUs, accelerators */
static const char *client_kind(const char *class)
{
	unsigned long c = strtoul(class, NULL, 16);

	switch (c >> 16) {
	case 0x02: return "nic";
	case 0x03: return "gpu";
	case 0x12: return "accel";
	case 0x0b: return (c >> 8) == 0x0b40 ? "accel" : NULL;	/* co-processor */
	}
	return NULL;
}

/* what list says about the function @name, or false if it does not list it */
static bool list_one(const char *name, struct list_dev *l)
{
	char dir[600], v[64], pub[8];
	const char *client;
	bool nvme;

	memset(l, 0, sizeof(*l));
	snprintf(dir, sizeof(dir), "%s/%s", PCI_DEVICES, name);
	nvme = !strcmp(p2p_sysfs_line(dir, "class", v, sizeof(v)), "0x010802");
	client = client_kind(v);
	l->has_p2pmem = *p2p_sysfs_line(dir, "p2pmem/size", v, sizeof(v)) != 0;
	p2p_sysfs_link(dir, "driver", l->driver, sizeof(l->driver));
	if (!strcmp(l->driver, "p2pbar")) {
		l->kind = "provider";
		class_dev_of("p2pbar", name, l->dev, sizeof(l->dev));
	} else if (!strcmp(l->driver, "p2pnvme")) {
		l->kind = "p2pnvme";
		class_dev_of("p2pnvme", name, l->dev, sizeof(l->dev));
	} else if (l->has_p2pmem) {
		l->kind = nvme ? "nvme-cmb" : "provider";
	} else if (nvme) {
		l->kind = "nvme";
	} else if (client) {
		l->kind = client;	/* a DMA master that could use p2pmem */
	}
	if (!l->kind)
		return false;
	p2p_copy_str(l->pci, sizeof(l->pci), name);
	pci_attrs_of(name, &l->at);
	if (l->has_p2pmem) {
		l->p2pmem_size = strtoll(p2p_sysfs_line(dir, "p2pmem/size", v, sizeof(v)), NULL, 10);
		l->p2pmem_available = strtoll(p2p_sysfs_line(dir, "p2pmem/available", v, sizeof(v)),
					      NULL, 10);
		l->published = !strcmp(p2p_sysfs_line(dir, "p2pmem/published", pub, sizeof(pub)),
				       "1");
	}
	return true;
}

/*
 * p2pctl list: every PCI function that has p2pmem (bound p2pbar instances,
 * NVMe CMBs, anything the kernel's P2PDMA core knows), every NVMe
 * controller (driven by p2pnvme, nvme or nothing), and the other candidate
 * clients (NICs, GPUs, accelerators), one line each.
 */
int cmd_list(struct p2pctl *c, int argc __maybe_unused,
	     char **argv __maybe_unused)
{
	char *names[1024];
	struct list_dev *devs;
	unsigned int n = 0, i, shown = 0;
	struct dirent *e;
	DIR *d = opendir(PCI_DEVICES);

	if (!d)
		return fail(c, errno, PCI_DEVICES);
	while ((e = readdir(d)) && n < 1024)
		if (e->d_name[0] != '.')
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), bdf_cmp);
	devs = calloc(n ? n : 1, sizeof(*devs));
	if (!devs)
		return fail(c, ENOMEM, "list");
	for (i = 0; i < n; i++) {
		if (names[i] && list_one(names[i], &devs[shown]))
			shown++;
		free(names[i]);
	}
	c->out->list(c, devs, shown);
	free(devs);
	return 0;
}

/* the /dev/p2pbarN bound to @bdf, if any */
static const char *provider_dev(const char *bdf, char *buf, size_t len)
{
	char name[64];

	if (!*class_dev_of("p2pbar", bdf, name, sizeof(name)))
		return NULL;
	snprintf(buf, len, "/dev/%s", name);
	return buf;
}

/* "yes", "no" or "unknown": P2P between the two, all told */
const char *check_p2p(const struct check_report *r)
{
	switch (r->answer) {
	case ANSWER_TOPOLOGY:
		return r->c->map_type == P2PBAR_MAP_REFUSED ? "no" : "yes";
	case ANSWER_UNKNOWN:
		return "unknown";
	default:
		return "no";
	}
}

/*
 * p2pctl check PROVIDER CLIENT: the kernel's verdict for the path, from
 * sysfs and config space with its rules; but first whether the running
 * kernel has P2PDMA at all, and whether PROVIDER has memory to lend.
 */
int cmd_check(struct p2pctl *c, int argc __maybe_unused, char **argv)
{
	static const char * const names[] = { "PROVIDER", "CLIENT" };
	char pci[2][P2P_BDF_LEN], why[512], fix[512], dev[96], pwhy[1024], pfix[640];
	struct check_report r = { .provider = pci[0], .client = pci[1], .agrees = true };
	struct p2pbar_verdict v;
	struct kernel_info ki;
	struct topo t[2];
	struct check k;
	const char *kdev, *other;
	int ret, i, prov;

	for (i = 0; i < 2; i++) {
		ret = pci_arg("check", names[i], argv[i], pci[i], sizeof(pci[i]));
		if (ret)
			return ret;
	}
	for (i = 0; i < 2; i++) {
		ret = topo_of(pci[i], &t[i]);
		if (ret) {
			snprintf(why, sizeof(why),
				 "check: %s: no such PCI function %s (lspci -D lists them)", names[i],
				 pci[i]);
			return fail(c, -ret, why);
		}
	}
	/* without root, config space past 64 bytes reads short: ACS unknown */
	if (geteuid())
		return fail(c, EACCES, "check reads the ACS capabilities in config space: run it as root");
	check_compute(&t[0], &t[1], &k);
	check_explain(&k, pci[0], pci[1], why, sizeof(why), fix, sizeof(fix));
	kernel_read(&ki);
	prov = provider_usable(pci[0], &t[0], pwhy, sizeof(pwhy), pfix, sizeof(pfix));

	/* with a provider bound, the kernel's own verdict must be the same */
	kdev = provider_dev(pci[0], dev, sizeof(dev));
	other = pci[1];
	if (!kdev) {
		kdev = provider_dev(pci[1], dev, sizeof(dev));
		other = pci[0];
	}
	if (kdev) {
		struct p2pbar_info i;
		uint32_t dom, devid;
		int fd = p2p_bar_open(kdev, &i);

		if (fd >= 0 && !p2p_parse_bdf(other, &dom, &devid) &&
		    !p2p_bar_verdict(fd, dom, devid, &v)) {
			r.kernel = true;
			r.agrees = v.map_type == k.map_type && v.distance == k.distance;
			/*
			 * A host bridge listed from 7.2 on, on an older kernel: its
			 * allowlist lacks it, and its answer is the one that holds
			 */
			if (!r.agrees && k.host_since > 600 && v.map_type == P2PBAR_MAP_REFUSED &&
			    k.map_type == P2PBAR_MAP_HOST_BRIDGE) {
				k.map_type = P2PBAR_MAP_REFUSED;
				k.distance = -1;
				k.host_ok = P2PBAR_HOST_NOT_LISTED;
				check_explain(&k, pci[0], pci[1], why, sizeof(why), fix,
					      sizeof(fix));
				r.agrees = true;
			}
		}
		if (fd >= 0)
			close(fd);
	}
	/* p2pbar answered: its kernel has P2PDMA, whatever the files say */
	if (r.kernel && ki.p2pdma != P2PDMA_YES) {
		char said[160];

		snprintf(said, sizeof(said), "p2pbar answered through %s", kdev);
		kernel_answered(&ki, kdev, said);
	}
	r.c = &k;
	r.why = why;
	r.fix = fix;
	r.kdev = kdev;
	r.v = &v;
	r.k = &ki;
	r.provider_ok = prov != PROVIDER_NO;
	r.pwhy = pwhy;
	r.pfix = pfix;
	/* what decides first: no P2PDMA, no memory to lend, then the path */
	if (ki.p2pdma == P2PDMA_NO)
		r.answer = ANSWER_NO_P2PDMA;
	else if (prov == PROVIDER_NO)
		r.answer = ANSWER_NO_PROVIDER;
	else if (ki.p2pdma == P2PDMA_UNKNOWN && k.map_type != P2PBAR_MAP_REFUSED)
		r.answer = ANSWER_UNKNOWN;	/* a refusal stands either way */
	else
		r.answer = ANSWER_TOPOLOGY;
	c->out->check(c, &r);
	kernel_done(&ki);
	if (!r.agrees)
		return fail(c, EPROTO, "p2pctl's verdict and the kernel's disagree: please report it");
	return 0;
}

/* sorted names of the PCI functions directly below sysfs directory @dir */
static int children(const char *dir, char names[][16], int max)
{
	unsigned int dom, bus, dev, fn;
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)) && n < max)
		if (sscanf(e->d_name, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4 &&
		    strlen(e->d_name) == 12)
			p2p_copy_str(names[n++], 16, e->d_name);
	if (d)
		closedir(d);
	qsort(names, n, 16, (int (*)(const void *, const void *))strcmp);
	return n;
}

#define TOPO_FNS	1024

/* the functions below @dir, depth first, into @r->fns */
static void tree(struct topo_report *r, int host, const char *dir, int depth)
{
	char names[64][16], sub[PATH_MAX], v[32];
	int n = children(dir, names, 64), i;

	for (i = 0; i < n && r->nfns < TOPO_FNS; i++) {
		struct topo_fn *f = &r->fns[r->nfns++];
		char path[400];
		long long sz;

		snprintf(path, sizeof(path), "%s/%.15s", PCI_DEVICES, names[i]);
		memset(f, 0, sizeof(*f));
		p2p_copy_str(f->pci, sizeof(f->pci), names[i]);
		f->host = host;
		f->depth = depth;
		f->last = i == n - 1;
		p2p_copy_str(f->vendor, sizeof(f->vendor),
			     p2p_sysfs_line(path, "vendor", v, sizeof(v)) + 2);
		p2p_copy_str(f->device, sizeof(f->device),
			     p2p_sysfs_line(path, "device", v, sizeof(v)) + 2);
		p2p_sysfs_link(path, "driver", f->driver, sizeof(f->driver));
		f->acs = acs_redirect(names[i]);
		pci_attrs_of(names[i], &f->at);
		sz = strtoll(p2p_sysfs_line(path, "p2pmem/size", v, sizeof(v)), NULL, 0);
		if (sz > 0) {
			f->p2pmem = sz;
			class_dev_of("p2pbar", names[i], f->p2pbar, sizeof(f->p2pbar));
		}
		if (snprintf(sub, sizeof(sub), "%s/%.15s", dir, names[i]) >= (int)sizeof(sub) ||
		    depth > 40)
			continue;	/* deeper than anything real */
		tree(r, host, sub, depth + 1);
	}
}

/* each host bridge, whether P2P may go through it, and the tree below it */
static int topo_hosts(struct topo_report *r)
{
	char dir[300];
	struct dirent *e;
	DIR *d = opendir("/sys/devices");
	int i;

	while (d && (e = readdir(d)) && r->nhosts < 32)
		if (!strncmp(e->d_name, "pci", 3) && strlen(e->d_name) < 32)
			p2p_copy_str(r->hosts[r->nhosts++].name, 32, e->d_name);
	if (d)
		closedir(d);
	if (!r->nhosts)
		return -ENODEV;
	qsort(r->hosts, r->nhosts, sizeof(r->hosts[0]),
	      (int (*)(const void *, const void *))strcmp);
	for (i = 0; i < r->nhosts; i++) {
		struct topo_host *h = &r->hosts[i];
		struct p2pbar_topo_path p;
		struct topo t;
		char first[1][16];

		snprintf(dir, sizeof(dir), "/sys/devices/%.31s", h->name);
		memset(&t, 0, sizeof(t));
		if (children(dir, first, 1) && !topo_of(first[0], &t) && t.host_vendor) {
			path_of(&t, &p);
			h->ok = p2p_host_allowed(&p, true, &h->since);
		} else {
			h->ok = P2PBAR_HOST_NOT_LISTED;
		}
		p2p_copy_str(h->dev, sizeof(h->dev), t.host_dev);
		h->cpu = cpu_routes_p2p();
		tree(r, i, dir, 0);
	}
	return 0;
}

/*
 * providers (functions with p2pmem) against clients (NVMe and providers):
 * the kernel's verdict and nvidia-smi's legend, and where they differ, why
 */
static void topo_matrix(struct topo_report *r, char (*why)[512], int nwhy)
{
	char dir[300], v[64], fix[512];
	struct pci_attrs pa, pb;
	struct dirent *e;
	DIR *d = opendir(PCI_DEVICES);
	int i, j, used = 0;

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", PCI_DEVICES, e->d_name);
		if (*p2p_sysfs_line(dir, "p2pmem/size", v, sizeof(v)) && r->nprov < 64)
			p2p_copy_str(r->prov[r->nprov++], 16, e->d_name);
		if ((*v || !strcmp(p2p_sysfs_line(dir, "class", v, sizeof(v)), "0x010802")) &&
		    r->ncli < 64)
			p2p_copy_str(r->cli[r->ncli++], 16, e->d_name);
	}
	if (d)
		closedir(d);
	qsort(r->prov, r->nprov, 16, (int (*)(const void *, const void *))strcmp);
	qsort(r->cli, r->ncli, 16, (int (*)(const void *, const void *))strcmp);
	for (i = 0; i < r->nprov; i++) {
		struct topo ta;

		pci_attrs_of(r->prov[i], &pa);
		r->prov_numa[i] = pa.numa;
		if (topo_of(r->prov[i], &ta))
			continue;
		for (j = 0; j < r->ncli; j++) {
			struct topo_cell *cell = &r->cells[i * r->ncli + j];
			struct topo tb;
			struct check k;

			if (!strcmp(r->prov[i], r->cli[j]) || topo_of(r->cli[j], &tb))
				continue;
			check_compute(&ta, &tb, &k);
			pci_attrs_of(r->cli[j], &pb);
			cell->valid = true;
			cell->map_type = k.map_type;
			cell->distance = k.distance;
			cell->level = topo_level(&ta, &tb, &k, pa.numa, pb.numa);
			if (topo_differs(cell->level, k.map_type) && used < nwhy) {
				check_explain(&k, r->prov[i], r->cli[j], why[used], sizeof(why[0]),
					      fix, sizeof(fix));
				cell->why = why[used++];
			}
		}
	}
}

/*
 * p2pctl topo: the running kernel (has it P2PDMA?), then the PCI tree as
 * lspci -tv draws it, with what matters for P2P: ACS redirect on ports,
 * p2pmem, drivers, each host bridge and whether this kernel allows P2P
 * through it, each function's NUMA node, link and IOMMU group; then the
 * verdict of every provider for every NVMe controller and provider (the
 * same computation as check; without P2PDMA, refused) beside nvidia-smi
 * topo -m's legend for the path, and where the two differ, why.
 */
int cmd_topo(struct p2pctl *c, int argc __maybe_unused,
	     char **argv __maybe_unused)
{
	static struct topo_host hosts[32];
	static struct topo_fn fns[TOPO_FNS];
	static char prov[64][16], cli[64][16], why[64][512];
	static struct topo_cell cells[64 * 64];
	static int prov_numa[64];
	struct topo_report r = { .hosts = hosts, .fns = fns, .prov = prov, .cli = cli,
				 .prov_numa = prov_numa, .cells = cells };
	struct kernel_info ki;
	int ret;

	if (geteuid())
		return fail(c, EACCES, "topo reads the ACS capabilities in config space: run it as root");
	ret = topo_hosts(&r);
	if (ret)
		return fail(c, -ret, "no PCI host bridge in /sys/devices");
	topo_matrix(&r, why, 64);
	kernel_read(&ki);
	r.k = &ki;
	c->out->topo(c, &r);
	kernel_done(&ki);
	return 0;
}
