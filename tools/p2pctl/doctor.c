// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl doctor: what this machine can do for P2PDMA and what is missing,
 * each with its fix, on one screen or in one JSON document. The kernel
 * (CONFIG_PCI_P2PDMA, CONFIG_DMABUF_MOVE_NOTIFY), the suite's modules and
 * their version, DKMS, the IOMMU, ACS on the ports between the candidates,
 * their BARs (Resizable BAR too), which NVMe controllers share a switch
 * with a GPU or provider, the device nodes. It reads files only: nothing
 * is loaded, bound or run.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p2pctl.h"

#define DKMS_TREE	"/var/lib/dkms/p2pdma-suite"

const char *doc_status_name(enum doc_status s)
{
	static const char * const names[] = { "ok", "info", "warn", "missing", "unknown" };

	return names[s];
}

static struct doc_item *item(struct doctor_report *r, const char *name, enum doc_status st)
{
	struct doc_item *it = &r->items[r->nitems++];

	it->name = name;
	it->status = st;
	return it;
}

__attribute__((format(printf, 2, 3)))
static void line(struct doc_item *it, const char *fmt, ...)
{
	va_list ap;

	if (it->nlines == DOC_LINES)
		return;
	va_start(ap, fmt);
	vsnprintf(it->line[it->nlines++], sizeof(it->line[0]), fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3)))
static void fixf(struct doc_item *it, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(it->fix, sizeof(it->fix), fmt, ap);
	va_end(ap);
}

/* the first file @pattern matches, into @buf ("" if none) */
static bool first_match(const char *pattern, char *buf, size_t len)
{
	glob_t g;
	bool found = !glob(pattern, 0, NULL, &g) && g.gl_pathc;

	p2p_copy_str(buf, len, found ? g.gl_pathv[0] : "");
	globfree(&g);
	return found;
}

/* ---- the kernel --------------------------------------------------------- */

static void doc_kernel(struct doctor_report *r)
{
	const struct kernel_info *k = r->k;
	struct doc_item *it = item(r, "kernel", k->p2pdma == P2PDMA_YES ? DOC_OK :
				   k->p2pdma == P2PDMA_NO ? DOC_MISSING : DOC_UNKNOWN);
	char buf[700];

	kernel_line(k, buf, sizeof(buf));
	line(it, "%s", buf);
	if (k->p2pdma != P2PDMA_YES)
		fixf(it, "%s", kernel_fix(k));
}

/*
 * Before 7.x, without CONFIG_DMABUF_MOVE_NOTIFY every dynamic mapping is
 * pinned and can never be revoked: p2pbar refuses dma-buf importers then
 * (Documentation/dmabuf.rst).
 */
static void doc_move_notify(struct doctor_report *r)
{
	const struct kernel_info *k = r->k;
	int v = kernel_option(k, "CONFIG_DMABUF_MOVE_NOTIFY"), major = atoi(k->release);
	struct doc_item *it;

	if (!v) {
		it = item(r, "move-notify", DOC_UNKNOWN);
		line(it, "CONFIG_DMABUF_MOVE_NOTIFY: unknown: only the kernel's configuration tells, and there is none (/proc/config.gz, /boot/config-%s)",
		     k->release);
		fixf(it, "let the kernel say how it was built: modprobe configs (for /proc/config.gz), or install its /boot/config-$(uname -r)");
		return;
	}
	if (v == 'y') {
		it = item(r, "move-notify", DOC_OK);
		line(it, "CONFIG_DMABUF_MOVE_NOTIFY=y in %s: dma-bufs can be moved and revoked under their importers",
		     k->source);
	} else if (major >= 7) {
		it = item(r, "move-notify", DOC_OK);
		line(it, "CONFIG_DMABUF_MOVE_NOTIFY is not set in %s, and need not be: 7.x revokes dma-bufs regardless",
		     k->source);
	} else {
		it = item(r, "move-notify", DOC_WARN);
		line(it, "CONFIG_DMABUF_MOVE_NOTIFY is not set in %s: p2pbar refuses dma-buf importers (EOPNOTSUPP: nvme-read --dmabuf, a GPU's import of p2pmem)",
		     k->source);
		fixf(it, "for dma-bufs of p2pmem, a kernel built with CONFIG_DMABUF_MOVE_NOTIFY=y (or 7.x); p2pmem through /dev/p2pbarN works without");
	}
}

/* ---- the suite's modules, DKMS ------------------------------------------ */

/* /lib/modules/RELEASE/modules.dep lists NAME.ko (any compression) */
static bool modules_dep_has(const char *release, const char *name)
{
	char path[300], l[1024], *colon, *base;
	size_t n = strlen(name);
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/lib/modules/%s/modules.dep", release);
	f = fopen(path, "re");
	while (f && !found && fgets(l, sizeof(l), f)) {
		colon = strchr(l, ':');
		if (!colon)
			continue;
		*colon = 0;
		base = strrchr(l, '/');
		base = base ? base + 1 : l;
		found = !strncmp(base, name, n) && !strncmp(base + n, ".ko", 3);
	}
	if (f)
		fclose(f);
	return found;
}

static void doc_module(struct doctor_report *r, int i, const char *name, bool needed)
{
	struct doc_module *m = &r->mods[i];
	const char *release = r->k->release;
	enum doc_status absent = needed ? DOC_MISSING : DOC_INFO;
	const char *what = needed ? "" : "; only p2pctl nvme-* and the p2pnvme API need it";
	char dir[300];
	struct doc_item *it;
	struct stat st;

	m->name = name;
	snprintf(dir, sizeof(dir), "/sys/module/%s", name);
	m->loaded = !stat(dir, &st);
	p2p_sysfs_line(dir, "version", m->version, sizeof(m->version));
	m->installed = modules_dep_has(release, name);
	if (m->loaded && !strcmp(m->version, P2P_VERSION)) {
		it = item(r, name, DOC_OK);
		line(it, "%s %s is loaded", name, m->version);
	} else if (m->loaded) {
		it = item(r, name, DOC_WARN);
		line(it, "%s %s is loaded; p2pctl is %s", name, *m->version ? m->version :
		     "(no version)", P2P_VERSION);
		fixf(it, "load the modules of p2pctl's version: rmmod p2pnvme p2pbar, install the suite's %s (dkms status p2pdma-suite), modprobe %s",
		     P2P_VERSION, name);
	} else if (r->k->p2pdma == P2PDMA_NO) {
		it = item(r, name, absent);
		line(it, "%s is not loaded, and cannot be: this kernel has no P2PDMA%s", name, what);
		fixf(it, "the kernel first (above)");
	} else if (m->installed) {
		it = item(r, name, absent);
		line(it, "%s is installed for %s but not loaded%s", name, release, what);
		fixf(it, "modprobe %s (at every boot: the example modules-load.d file p2pdma-modules.conf)",
		     name);
	} else {
		it = item(r, name, absent);
		line(it, "%s is not installed for %s: its modules.dep does not list it%s", name,
		     release, what);
		fixf(it, "install the suite for this kernel (dkms, below), then modprobe %s", name);
	}
}

static void doc_dkms(struct doctor_report *r)
{
	const char *rel = r->k->release;
	char pattern[400], found[400], build[300];
	struct dirent *e;
	struct stat st;
	struct doc_item *it;
	DIR *d;

	/* registered versions: the tree's directories but its kernel-R-ARCH links */
	d = opendir(DKMS_TREE);
	while (d && (e = readdir(d))) {
		size_t l = strlen(r->dkms_versions);

		if (e->d_name[0] == '.' || !strncmp(e->d_name, "kernel-", 7))
			continue;
		snprintf(r->dkms_versions + l, sizeof(r->dkms_versions) - l, "%s%s", l ? " " : "",
			 e->d_name);
		snprintf(pattern, sizeof(pattern), DKMS_TREE "/%.64s/%.64s/*/module/p2pbar.ko*",
			 e->d_name, rel);
		r->dkms_built |= first_match(pattern, found, sizeof(found));
	}
	if (d)
		closedir(d);
	snprintf(pattern, sizeof(pattern), "/lib/modules/%s/updates/dkms/p2pbar.ko*", rel);
	r->dkms_installed = first_match(pattern, found, sizeof(found));
	snprintf(pattern, sizeof(pattern), "/lib/modules/%s/updates/p2pdma/p2pbar.ko*", rel);
	r->make_installed = first_match(pattern, found, sizeof(found));
	snprintf(build, sizeof(build), "/lib/modules/%s/build", rel);
	r->headers = !stat(build, &st) && S_ISDIR(st.st_mode);

	if (r->dkms_installed || r->make_installed) {
		it = item(r, "dkms", DOC_OK);
		if (r->dkms_installed)
			line(it, "p2pdma-suite %s: installed for %s by DKMS (updates/dkms)",
			     *r->dkms_versions ? r->dkms_versions : "(not registered any more)", rel);
		else
			line(it, "make install's modules for %s (updates/p2pdma)%s%s", rel,
			     *r->dkms_versions ? "; DKMS has p2pdma-suite " : "", r->dkms_versions);
		return;
	}
	if (r->k->p2pdma == P2PDMA_NO) {
		it = item(r, "dkms", DOC_INFO);
		if (*r->dkms_versions)
			line(it, "p2pdma-suite %s is added; DKMS skipped %s: it has no CONFIG_PCI_P2PDMA (BUILD_EXCLUSIVE_CONFIG, which dkms prints as \"Error! ... Skipped.\")",
			     r->dkms_versions, rel);
		else
			line(it, "the suite is not installed, nor could it be built for %s: it has no P2PDMA",
			     rel);
		fixf(it, "the kernel first (above): DKMS builds the modules for every kernel installed later that has P2PDMA and its headers");
		return;
	}
	it = item(r, "dkms", DOC_MISSING);
	if (r->dkms_built) {
		line(it, "p2pdma-suite %s is built for %s but not installed", r->dkms_versions, rel);
		fixf(it, "dkms install p2pdma-suite/VERSION -k %s (VERSION: %s)", rel, r->dkms_versions);
		return;
	}
	if (*r->dkms_versions)
		line(it, "p2pdma-suite %s is added to DKMS but not built for %s%s%s", r->dkms_versions,
		     rel, r->headers ? "" : ": there are no headers for it, no ", r->headers ? "" : build);
	else
		line(it, "the suite's modules are not installed for %s%s%s", rel,
		     r->headers ? "" : ", and there are no headers to build them with, no ",
		     r->headers ? "" : build);
	if (!r->headers)
		fixf(it, "install this kernel's headers (Debian, Ubuntu: linux-headers-%s; RHEL, Fedora: kernel-devel-%s), then %s",
		     rel, rel, *r->dkms_versions ? "dkms autoinstall -k $(uname -r)" :
		     "install the p2pdma-dkms package (or make install)");
	else if (*r->dkms_versions)
		fixf(it, "dkms autoinstall -k %s (its make.log says why it did not build: %s/VERSION/build/make.log)",
		     rel, DKMS_TREE);
	else
		fixf(it, "install the p2pdma-dkms package (Documentation/quickstart.rst, 2.), or make && make install from the suite's source");
}

/* ---- the IOMMU ---------------------------------------------------------- */

static void doc_iommu(struct doctor_report *r)
{
	int identity = 0, strict = 0, lazy = 0, other = 0;
	char dir[300], v[32];
	struct doc_item *it;
	struct dirent *e;
	DIR *d = opendir("/sys/kernel/iommu_groups");

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		r->iommu_groups++;
		snprintf(dir, sizeof(dir), "/sys/kernel/iommu_groups/%.64s", e->d_name);
		p2p_sysfs_line(dir, "type", v, sizeof(v));
		if (!strcmp(v, "identity"))
			identity++;
		else if (!strcmp(v, "DMA"))
			strict++;
		else if (!strcmp(v, "DMA-FQ"))
			lazy++;
		else
			other++;
	}
	if (d)
		closedir(d);
	it = item(r, "iommu", DOC_INFO);
	if (!r->iommu_groups) {
		p2p_copy_str(r->iommu_mode, sizeof(r->iommu_mode), "off");
		line(it, "off: no IOMMU groups; devices DMA to bus addresses");
		return;
	}
	p2p_copy_str(r->iommu_mode, sizeof(r->iommu_mode),
		     identity == r->iommu_groups ? "passthrough" :
		     strict + other == r->iommu_groups && strict ? "strict" :
		     lazy + other == r->iommu_groups && lazy ? "lazy" : "mixed");
	line(it, "%s: %d group%s (%d identity, %d DMA, %d DMA-FQ, %d other); each candidate's group is with its BARs",
	     r->iommu_mode, r->iommu_groups, r->iommu_groups == 1 ? "" : "s", identity, strict,
	     lazy, other);
	if (strcmp(r->iommu_mode, "passthrough"))
		line(it, "P2P through the host bridge is translated (IOVAs, which works); below a switch, only without ACS redirect (acs)");
}

/* ---- the candidates: their BARs, the paths between them, ACS ----------- */

static const char *candidate_kind(const char *dir, long long p2pmem)
{
	char v[32];
	unsigned long cls = strtoul(p2p_sysfs_line(dir, "class", v, sizeof(v)), NULL, 16);

	if (cls == 0x010802)
		return "nvme";
	if (p2pmem > 0)
		return "provider";
	switch (cls >> 16) {
	case 0x03: return "gpu";
	case 0x12: return "accel";
	case 0x05: return "memory";
	case 0xff: return "other";	/* FPGAs, among others: with a 64-bit prefetchable BAR */
	case 0x0b: return (cls >> 8) == 0x0b40 ? "accel" : NULL;
	}
	return NULL;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void doc_candidates(struct doctor_report *r)
{
	static char names[1024][16];
	static struct topo t[DOC_CANDS];
	char dir[300], v[64], fix[640];
	bool path_ok[DOC_CANDS];
	struct dirent *e;
	int n = 0, i, j, a;
	DIR *d = opendir("/sys/bus/pci/devices");

	while (d && (e = readdir(d)) && n < 1024)
		if (e->d_name[0] != '.' && strlen(e->d_name) < 16)
			p2p_copy_str(names[n++], 16, e->d_name);
	if (d)
		closedir(d);
	qsort(names, n, 16, name_cmp);
	for (i = 0; i < n && r->ncands < DOC_CANDS; i++) {
		struct doc_candidate *cd = &r->cands[r->ncands];
		long long p2pmem;
		const char *kind;

		snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%.15s", names[i]);
		p2pmem = strtoll(p2p_sysfs_line(dir, "p2pmem/size", v, sizeof(v)), NULL, 0);
		kind = candidate_kind(dir, p2pmem);
		if (!kind || (!strcmp(kind, "other") &&
			      largest_bar(names[i], &cd->bar_size, &cd->rebar_max) < 0))
			continue;
		memset(cd, 0, sizeof(*cd));
		p2p_copy_str(cd->pci, sizeof(cd->pci), names[i]);
		cd->kind = kind;
		cd->p2pmem = p2pmem > 0 ? p2pmem : 0;
		if (cd->p2pmem)
			class_dev_of("p2pbar", names[i], cd->p2pbar, sizeof(cd->p2pbar));
		path_ok[r->ncands] = !topo_of(names[i], &t[r->ncands]);
		cd->provider = provider_usable(names[i], path_ok[r->ncands] ? &t[r->ncands] : NULL,
					       cd->why, sizeof(cd->why), fix, sizeof(fix));
		cd->bar = largest_bar(names[i], &cd->bar_size, &cd->rebar_max);
		pci_attrs_of(names[i], &cd->at);
		r->ncands++;
	}

	/* every pair: ACS on the ports between them; an NVMe and a non-NVMe: the path */
	r->acs_known = !geteuid();
	for (i = 0; i < r->ncands; i++) {
		for (j = i + 1; j < r->ncands; j++) {
			bool ni = !strcmp(r->cands[i].kind, "nvme"), nj = !strcmp(r->cands[j].kind, "nvme");
			struct check k;

			if (!path_ok[i] || !path_ok[j])
				continue;
			/* the non-NVMe one lends the memory */
			if (ni && !nj)
				check_compute(&t[j], &t[i], &k);
			else
				check_compute(&t[i], &t[j], &k);
			for (a = 0; a < k.nacs; a++) {
				int x;

				for (x = 0; x < r->nacs && strcmp(r->acs[x], k.acs[a]); x++)
					;
				if (x == r->nacs && r->nacs < DOC_CANDS)
					p2p_copy_str(r->acs[r->nacs++], 16, k.acs[a]);
			}
			if (ni != nj && r->npairs < DOC_PAIRS) {
				struct doc_pair *p = &r->pairs[r->npairs++];
				int nv = ni ? i : j, ot = ni ? j : i;

				p->nvme = nv;
				p->other = ot;
				p->level = topo_level(&t[ot], &t[nv], &k, r->cands[ot].at.numa,
						      r->cands[nv].at.numa);
				p->map_type = k.map_type;
				p->distance = k.distance;
				p2p_copy_str(p->common, sizeof(p->common), k.common);
			}
		}
	}
	qsort(r->acs, r->nacs, 16, name_cmp);
}

static void doc_acs(struct doctor_report *r)
{
	char list[DOC_CANDS * 17] = "";
	struct doc_item *it;
	int i;

	if (!r->acs_known) {
		it = item(r, "acs", DOC_UNKNOWN);
		line(it, "unknown: only root reads the ports' ACS control in config space");
		fixf(it, "run p2pctl doctor as root");
		return;
	}
	if (r->ncands < 2) {
		it = item(r, "acs", DOC_INFO);
		line(it, "fewer than two candidates: no path between them to look at");
		return;
	}
	if (!r->nacs) {
		it = item(r, "acs", DOC_OK);
		line(it, "no port redirects P2P between the %d candidates", r->ncands);
		return;
	}
	for (i = 0; i < r->nacs; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ";" : "",
			 r->acs[i]);
	it = item(r, "acs", DOC_WARN);
	line(it, "ACS redirect on %s: P2P between the devices below sends its requests up to the host bridge",
	     list);
	fixf(it, "boot with pci=disable_acs_redir=%s (it loosens isolation between the devices and may merge IOMMU groups), or turn ACS redirect off for those ports in the firmware setup",
	     list);
}

/* " (numa 0, iommu 12)", or "" */
static const char *where(const struct pci_attrs *a, char *buf, size_t len)
{
	if (a->numa >= 0 && a->iommu >= 0)
		snprintf(buf, len, " (numa %d, iommu %d)", a->numa, a->iommu);
	else if (a->numa >= 0 || a->iommu >= 0)
		snprintf(buf, len, " (%s %d)", a->numa >= 0 ? "numa" : "iommu",
			 a->numa >= 0 ? a->numa : a->iommu);
	else
		buf[0] = 0;
	return buf;
}

static void doc_bars(struct doctor_report *r)
{
	struct doc_item *it = item(r, "bars", DOC_MISSING);
	int i, usable = 0, listed = 0, more = 0;
	char sz[32], mx[32], at[48], grow[300] = "";

	for (i = 0; i < r->ncands; i++) {
		const struct doc_candidate *cd = &r->cands[i];
		const char *why = cd->why;

		if (!strcmp(cd->kind, "nvme") && !cd->p2pmem)
			continue;
		usable += cd->p2pmem || cd->provider == PROVIDER_YES;
		listed++;
		if (it->nlines >= DOC_LINES - 3) {	/* room for a Resizable BAR line, and this */
			more++;
			continue;
		}
		where(&cd->at, at, sizeof(at));
		if (!strncmp(why, cd->pci, strlen(cd->pci)))
			why += strlen(cd->pci) + 1;	/* "has no BAR ..." */
		if (cd->p2pmem)
			line(it, "%s %s: %s p2pmem%s%s%s", cd->pci, cd->kind,
			     size_str(cd->p2pmem, sz, sizeof(sz)), *cd->p2pbar ? ", " : "", cd->p2pbar, at);
		else if (cd->provider == PROVIDER_YES)
			line(it, "%s %s: BAR %d, %s 64-bit prefetchable: p2pbar can use it%s", cd->pci,
			     cd->kind, cd->bar, size_str(cd->bar_size, sz, sizeof(sz)), at);
		else if (cd->provider == PROVIDER_NO)
			line(it, "%s %s: %s%s", cd->pci, cd->kind, why, at);
		else
			line(it, "%s %s: sysfs does not list its BARs%s", cd->pci, cd->kind, at);
		if (cd->bar >= 0 && cd->rebar_max > cd->bar_size) {
			line(it, "  (Resizable BAR: BAR %d can grow from %s to %s)", cd->bar,
			     size_str(cd->bar_size, sz, sizeof(sz)),
			     size_str(cd->rebar_max, mx, sizeof(mx)));
			if (!*grow)
				snprintf(grow, sizeof(grow), "; to grow a BAR: echo N > /sys/bus/pci/devices/%s/resource%d_resize (2^N MiB) while no driver has it",
					 cd->pci, cd->bar);
		}
	}
	if (more)
		line(it, "... and %d more (-o json lists them all)", more);
	if (usable) {
		it->status = DOC_OK;
		if (*grow)
			fixf(it, "%s", grow + 2);
		return;
	}
	if (!listed)
		line(it, "no function with p2pmem, and no GPU, accelerator or memory device");
	fixf(it, "a provider: a function with a 64-bit prefetchable memory BAR of 2 MiB or more (a GPU's or accelerator's aperture, an NVMe CMB, an FPGA), or a larger BAR (Resizable BAR, Above 4G Decoding in the firmware setup)%s",
	     grow);
}

/* a pair as a line: "0000:03:00.0 nvme and 0000:04:00.0 provider: under one switch ..." */
static void pair_line(struct doc_item *it, const struct doctor_report *r, const struct doc_pair *p)
{
	const struct doc_candidate *nv = &r->cands[p->nvme], *ot = &r->cands[p->other];
	char path[64];

	if (p->distance >= 0)
		snprintf(path, sizeof(path), "%s, distance %d", map_name(p->map_type), p->distance);
	else
		snprintf(path, sizeof(path), "%s", map_name(p->map_type));
	if (*p->common)
		line(it, "%s nvme and %s %s: under one switch or port (%s, %s): %s", nv->pci,
		     ot->pci, ot->kind, p->common, topo_level_name(p->level), path);
	else
		line(it, "%s nvme and %s %s: through %s (%s): %s", nv->pci, ot->pci, ot->kind,
		     p->level == TOPO_PHB ? "their host bridge" : "two host bridges",
		     topo_level_name(p->level), path);
}

/*
 * Which NVMe controllers share a switch with a GPU, accelerator or
 * provider: the count, then the pairs below one switch, then the others
 * as room allows (-o json has them all).
 */
static void doc_pairs(struct doctor_report *r)
{
	struct doc_item *it = item(r, "pairs", DOC_INFO);
	int i, pass, direct = 0, below = 0, through = 0, refused = 0, nvme = 0, more = 0;

	for (i = 0; i < r->ncands; i++)
		nvme += !strcmp(r->cands[i].kind, "nvme");
	if (!r->npairs && !nvme) {
		line(it, "no NVMe controller");
		return;
	}
	if (!r->npairs) {
		line(it, "no GPU, accelerator or provider to pair the %d NVMe controller%s with", nvme,
		     nvme == 1 ? "" : "s");
		return;
	}
	for (i = 0; i < r->npairs; i++) {
		direct += r->pairs[i].map_type == P2PBAR_MAP_DIRECT;
		below += !!*r->pairs[i].common;
		through += r->pairs[i].map_type == P2PBAR_MAP_HOST_BRIDGE;
		refused += r->pairs[i].map_type == P2PBAR_MAP_REFUSED;
	}
	line(it, "%d pair%s of an NVMe controller and a GPU, accelerator or provider: %d below one switch or port; %s%d direct, %d through the host bridge, %d refused%s",
	     r->npairs, r->npairs == 1 ? "" : "s", below,
	     r->k->p2pdma == P2PDMA_YES ? "" : "with P2PDMA, ", direct, through, refused,
	     r->acs_known ? "" : " (as if no port had ACS redirect: only root reads it)");
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < r->npairs; i++) {
			if ((*r->pairs[i].common ? 0 : 1) != pass)
				continue;
			if (it->nlines >= DOC_LINES - 1)
				more++;
			else
				pair_line(it, r, &r->pairs[i]);
		}
	}
	if (more)
		line(it, "... and %d more (-o json lists them all)", more);
	if (direct) {
		it->status = DOC_OK;
		return;
	}
	it->status = DOC_WARN;
	fixf(it, "%sput an NVMe controller and the provider under one PCIe switch, for a direct path%s",
	     through ? "" : "every pair is refused: ", r->nacs ? " (and see acs)" : "");
}

static void doc_nodes(struct doctor_report *r)
{
	static const char * const patterns[] = { "/dev/p2pbar[0-9]*", "/dev/p2pnvme[0-9]*" };
	struct doc_item *it = item(r, "nodes", DOC_INFO);
	unsigned int p, i;
	int usable = 0;

	for (p = 0; p < ARRAY_SIZE(patterns); p++) {
		glob_t g;

		if (glob(patterns[p], 0, NULL, &g)) {
			globfree(&g);
			continue;
		}
		for (i = 0; i < g.gl_pathc && r->nnodes < DOC_NODES; i++) {
			struct doc_node *nd = &r->nodes[r->nnodes];
			struct passwd *pw;
			struct group *gr;
			struct stat st;

			if (stat(g.gl_pathv[i], &st))
				continue;
			p2p_copy_str(nd->path, sizeof(nd->path), g.gl_pathv[i]);
			nd->mode = st.st_mode & 07777;
			pw = getpwuid(st.st_uid);
			gr = getgrgid(st.st_gid);
			if (pw)
				p2p_copy_str(nd->owner, sizeof(nd->owner), pw->pw_name);
			else
				snprintf(nd->owner, sizeof(nd->owner), "%u", st.st_uid);
			if (gr)
				p2p_copy_str(nd->group, sizeof(nd->group), gr->gr_name);
			else
				snprintf(nd->group, sizeof(nd->group), "%u", st.st_gid);
			nd->usable = !access(nd->path, R_OK | W_OK);
			usable += nd->usable;
			line(it, "%s: %s:%s %04o, %s", nd->path, nd->owner, nd->group, nd->mode,
			     nd->usable ? "usable by you" : "not usable by you");
			r->nnodes++;
		}
		globfree(&g);
	}
	if (!r->nnodes) {
		line(it, "no /dev/p2pbarN or /dev/p2pnvmeN");
		if (r->mods[0].loaded)
			fixf(it, "bind p2pbar to a provider (bars): echo p2pbar > /sys/bus/pci/devices/BDF/driver_override; echo BDF > /sys/bus/pci/drivers_probe");
		return;
	}
	if (usable == r->nnodes) {
		it->status = DOC_OK;
		return;
	}
	it->status = DOC_WARN;
	fixf(it, "run as root, or install the udev rule 70-p2pdma.rules (group p2p, mode 0660) and join that group");
}

/*
 * p2pctl doctor: exit 0 when the kernel has P2PDMA (what else is missing
 * is said, each with its fix), EOPNOTSUPP when it has none, ENODATA when
 * nothing tells.
 */
int cmd_doctor(struct p2pctl *c, int argc __maybe_unused, char **argv __maybe_unused)
{
	static struct doctor_report r;
	struct kernel_info ki;
	int i;

	memset(&r, 0, sizeof(r));
	kernel_read(&ki);
	if (ki.p2pdma != P2PDMA_YES && !access("/sys/module/p2pbar", F_OK))
		kernel_answered(&ki, "/sys/module/p2pbar",
				"p2pbar is loaded, and it loads only where the kernel has P2PDMA");
	r.k = &ki;
	doc_kernel(&r);
	doc_move_notify(&r);
	doc_module(&r, 0, "p2pbar", true);
	doc_module(&r, 1, "p2pnvme", false);
	doc_dkms(&r);
	doc_iommu(&r);
	doc_candidates(&r);
	doc_acs(&r);
	doc_bars(&r);
	doc_pairs(&r);
	doc_nodes(&r);
	for (i = 0; i < r.nitems; i++) {
		r.missing += r.items[i].status == DOC_MISSING;
		r.warnings += r.items[i].status == DOC_WARN;
	}
	c->out->doctor(c, &r);
	kernel_done(&ki);
	return ki.p2pdma == P2PDMA_YES ? 0 : ki.p2pdma == P2PDMA_NO ? EOPNOTSUPP : ENODATA;
}
