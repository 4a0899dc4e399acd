// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl's JSON output (-o json, json-c): one object per command on one
 * line of stdout, keys in the order they were added. An error before the
 * command's object is that object; one after it goes to stderr as text, so
 * that stdout always holds one JSON document.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "p2pctl.h"

/* @o as one line of stdout; @o is freed */
static void print(struct p2pctl *c, struct json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						      JSON_C_TO_STRING_NOSLASHESCAPE);

	if (s)
		puts(s);
	json_object_put(o);
	c->printed = true;
}

static void jstr(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

static void jint(struct json_object *o, const char *key, int64_t v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
}

static void juint(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static void jbool(struct json_object *o, const char *key, bool v)
{
	json_object_object_add(o, key, json_object_new_boolean(v));
}

static void json_error(struct p2pctl *c, int err, const char *step, const char *hint)
{
	struct json_object *o;

	if (c->printed) {
		p2pctl_text.error(c, err, step, hint);
		return;
	}
	o = json_object_new_object();
	jstr(o, "error", strerror(err));
	jint(o, "errno", err);
	jstr(o, "step", step);
	if (hint)
		jstr(o, "hint", hint);
	print(c, o);
}

static void json_nvme_status(struct p2pctl *c, const char *step, int status)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "error", "NVMe status");
	jint(o, "status", status);
	jstr(o, "step", step);
	print(c, o);
}

static void json_io_error(struct p2pctl *c, const char *step, int err, unsigned int status)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "error", strerror(err));
	jint(o, "errno", err);
	juint(o, "status", status);
	jstr(o, "step", step);
	print(c, o);
}

static void json_info(struct p2pctl *c, const char *path, const char *pci,
		      const struct p2pbar_info *i)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "device", path);
	jstr(o, "pci", pci);
	juint(o, "bar", i->bar);
	juint(o, "bar_size", i->bar_size);
	juint(o, "offset", i->offset);
	juint(o, "size", i->size);
	juint(o, "bus_addr", i->bus_addr);
	juint(o, "alloc_bytes", i->alloc_bytes);
	juint(o, "alloc_count", i->alloc_count);
	jbool(o, "published", i->flags & P2PBAR_INFO_F_PUBLISHED);
	jbool(o, "user_mmap", i->flags & P2PBAR_INFO_F_USER_MMAP);
	print(c, o);
}

/* a function's NUMA node, link and IOMMU group, null where unknown */
static void jattrs(struct json_object *o, const struct pci_attrs *a)
{
	json_object_object_add(o, "numa_node", a->numa >= 0 ? json_object_new_int(a->numa) : NULL);
	json_object_object_add(o, "link_speed", *a->speed ? json_object_new_string(a->speed) :
				NULL);
	json_object_object_add(o, "link_width", a->width > 0 ? json_object_new_int(a->width) :
				NULL);
	json_object_object_add(o, "iommu_group", a->iommu >= 0 ? json_object_new_int(a->iommu) :
				NULL);
}

static void json_list(struct p2pctl *c, const struct list_dev *d, unsigned int n)
{
	struct json_object *o = json_object_new_object(), *devs = json_object_new_array();
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_new_object();

		jstr(e, "pci", d[i].pci);
		jstr(e, "kind", d[i].kind);
		jstr(e, "driver", d[i].driver);
		jstr(e, "dev", d[i].dev);
		if (d[i].has_p2pmem) {
			jint(e, "p2pmem_size", d[i].p2pmem_size);
			jint(e, "p2pmem_available", d[i].p2pmem_available);
			jbool(e, "published", d[i].published);
		}
		jattrs(e, &d[i].at);
		json_object_array_add(devs, e);
	}
	json_object_object_add(o, "devices", devs);
	print(c, o);
}

/* the running kernel: release, P2PDMA yes/no/unknown, the file that decided (or null) */
static struct json_object *jkernel(const struct kernel_info *k)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "release", k->release);
	jstr(o, "p2pdma", p2pdma_word(k->p2pdma));
	json_object_object_add(o, "source", *k->source ? json_object_new_string(k->source) : NULL);
	jstr(o, "why", k->why);
	if (k->p2pdma != P2PDMA_YES)
		jstr(o, "fix", kernel_fix(k));
	return o;
}

static void json_check(struct p2pctl *c, const struct check_report *r)
{
	struct json_object *o = json_object_new_object(), *t;
	char why[1200];

	jstr(o, "provider", r->provider);
	jstr(o, "client", r->client);
	/* the answer: what decides first (no P2PDMA, no memory to lend, unknown, the path) */
	switch (r->answer) {
	case ANSWER_NO_P2PDMA:
		jstr(o, "verdict", "refused");
		jint(o, "distance", -1);
		snprintf(why, sizeof(why), "this kernel has no P2PDMA: %s", r->k->why);
		jstr(o, "reason", why);
		jstr(o, "fix", kernel_fix(r->k));
		break;
	case ANSWER_NO_PROVIDER:
		jstr(o, "verdict", "refused");
		jint(o, "distance", -1);
		jstr(o, "reason", r->pwhy);
		jstr(o, "fix", r->pfix);
		break;
	case ANSWER_UNKNOWN:
		jstr(o, "verdict", "unknown");
		jint(o, "distance", -1);
		snprintf(why, sizeof(why), "nothing tells whether this kernel has P2PDMA: %s",
			 r->k->why);
		jstr(o, "reason", why);
		jstr(o, "fix", kernel_fix(r->k));
		break;
	case ANSWER_TOPOLOGY:
		jstr(o, "verdict", map_name(r->c->map_type));
		jint(o, "distance", r->c->distance);
		jstr(o, "reason", r->why);
		jstr(o, "fix", r->fix);
		break;
	}
	/* the kernel's own answer when a provider is bound, else a prediction */
	jstr(o, "source", r->kernel ? "kernel" : "predicted");
	if (r->kernel) {
		struct json_object *k = json_object_new_object();

		jstr(k, "verdict", map_name(r->v->map_type));
		jint(k, "distance", r->v->distance);
		jbool(k, "agrees", r->agrees);
		json_object_object_add(o, "kernel", k);
	}
	/* all told: yes only when the kernel has P2PDMA, PROVIDER memory, and the path allows */
	jstr(o, "p2p", check_p2p(r));
	json_object_object_add(o, "running_kernel", jkernel(r->k));
	jbool(o, "provider_ok", r->provider_ok);
	/* what the path alone gives, as a kernel with P2PDMA would decide */
	t = json_object_new_object();
	jstr(t, "verdict", map_name(r->c->map_type));
	jint(t, "distance", r->c->distance);
	jstr(t, "reason", r->why);
	jstr(t, "fix", r->fix);
	json_object_object_add(o, "topology", t);
	print(c, o);
}

static const char *host_p2p(const struct topo_host *h)
{
	return h->cpu ? "cpu" : h->ok == P2PBAR_HOST_ALLOWLIST ? "allowlist" :
	       h->ok == P2PBAR_HOST_NEEDS_SAME ? "own-devices" : "no";
}

static void json_topo(struct p2pctl *c, const struct topo_report *r)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	int p2pdma = r->k->p2pdma;
	const char *parent[64];
	int i, j;

	json_object_object_add(o, "running_kernel", jkernel(r->k));
	for (i = 0; i < r->nhosts; i++) {
		struct json_object *h = json_object_new_object();

		jstr(h, "name", r->hosts[i].name);
		jstr(h, "dev", r->hosts[i].dev);
		/* "no" and "unknown" with the kernel's P2PDMA; "rule": the host bridge's own */
		jstr(h, "p2p", p2pdma == P2PDMA_YES ? host_p2p(&r->hosts[i]) : p2pdma_word(p2pdma));
		jstr(h, "rule", host_p2p(&r->hosts[i]));
		if (r->hosts[i].ok == P2PBAR_HOST_ALLOWLIST && r->hosts[i].since)
			jint(h, "allowlist_since", r->hosts[i].since);
		json_object_array_add(a, h);
	}
	json_object_object_add(o, "host_bridges", a);
	a = json_object_new_array();
	for (i = 0; i < r->nfns; i++) {
		const struct topo_fn *f = &r->fns[i];
		struct json_object *e = json_object_new_object();

		if (f->depth < 64)
			parent[f->depth] = f->pci;
		jstr(e, "pci", f->pci);
		jstr(e, "host_bridge", r->hosts[f->host].name);
		if (f->depth && f->depth <= 64)
			jstr(e, "parent", parent[f->depth - 1]);
		else
			json_object_object_add(e, "parent", NULL);
		jstr(e, "vendor", f->vendor);
		jstr(e, "device", f->device);
		jstr(e, "driver", f->driver);
		jbool(e, "acs_redirect", f->acs);
		jint(e, "p2pmem_size", f->p2pmem);
		jstr(e, "p2pbar", f->p2pbar);
		jattrs(e, &f->at);
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "functions", a);
	a = json_object_new_array();
	for (i = 0; i < r->nprov; i++) {
		for (j = 0; j < r->ncli; j++) {
			const struct topo_cell *cell = &r->cells[i * r->ncli + j];
			struct json_object *e;

			if (!cell->valid)
				continue;
			e = json_object_new_object();
			jstr(e, "provider", r->prov[i]);
			jstr(e, "client", r->cli[j]);
			/* the running kernel's: without P2PDMA refused, unknown if nothing tells */
			jstr(e, "verdict", p2pdma == P2PDMA_YES ? map_name(cell->map_type) :
			     p2pdma == P2PDMA_NO ? "refused" : "unknown");
			jint(e, "distance", p2pdma == P2PDMA_YES ? cell->distance : -1);
			/* nvidia-smi topo -m's legend, and whether the kernel agrees */
			jstr(e, "topology", topo_level_name(cell->level));
			if (p2pdma == P2PDMA_NO) {
				jbool(e, "differs", true);
				jstr(e, "why", "this kernel has no P2PDMA");
			} else {
				jbool(e, "differs", p2pdma == P2PDMA_YES && cell->why);
				if (p2pdma == P2PDMA_YES && cell->why)
					jstr(e, "why", cell->why);
			}
			/* what the path alone gives, as a kernel with P2PDMA would decide */
			jstr(e, "topology_verdict", map_name(cell->map_type));
			jint(e, "topology_distance", cell->distance);
			json_object_array_add(a, e);
		}
	}
	json_object_object_add(o, "verdicts", a);
	print(c, o);
}

/* a string, or null when it is "" */
static void jstr_or_null(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, *v ? json_object_new_string(v) : NULL);
}

/* doctor: the answer, each thing looked at, then the facts behind them */
static void json_doctor(struct p2pctl *c, const struct doctor_report *r)
{
	struct json_object *o = json_object_new_object(), *a, *e, *x;
	char mode[8], buf[256], *tok, *save;
	int i, l;

	jstr(o, "p2p", p2pdma_word(r->k->p2pdma));
	json_object_object_add(o, "running_kernel", jkernel(r->k));
	jint(o, "missing", r->missing);
	jint(o, "warnings", r->warnings);
	a = json_object_new_array();
	for (i = 0; i < r->nitems; i++) {
		const struct doc_item *it = &r->items[i];

		e = json_object_new_object();
		jstr(e, "name", it->name);
		jstr(e, "status", doc_status_name(it->status));
		jstr(e, "summary", it->nlines ? it->line[0] : "");
		x = json_object_new_array();
		for (l = 1; l < it->nlines; l++)
			json_object_array_add(x, json_object_new_string(it->line[l]));
		json_object_object_add(e, "details", x);
		jstr_or_null(e, "fix", it->fix);
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "checks", a);

	a = json_object_new_array();
	for (i = 0; i < 2; i++) {
		e = json_object_new_object();
		jstr(e, "name", r->mods[i].name);
		jbool(e, "loaded", r->mods[i].loaded);
		jstr_or_null(e, "version", r->mods[i].version);
		jbool(e, "installed", r->mods[i].installed);
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "modules", a);
	e = json_object_new_object();
	x = json_object_new_array();
	p2p_copy_str(buf, sizeof(buf), r->dkms_versions);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		json_object_array_add(x, json_object_new_string(tok));
	json_object_object_add(e, "versions", x);
	jbool(e, "built", r->dkms_built);
	jbool(e, "installed", r->dkms_installed);
	jbool(e, "make_install", r->make_installed);
	jbool(e, "headers", r->headers);
	json_object_object_add(o, "dkms", e);
	e = json_object_new_object();
	jstr(e, "mode", r->iommu_mode);
	jint(e, "groups", r->iommu_groups);
	json_object_object_add(o, "iommu", e);
	if (r->acs_known) {
		a = json_object_new_array();
		for (i = 0; i < r->nacs; i++)
			json_object_array_add(a, json_object_new_string(r->acs[i]));
		json_object_object_add(o, "acs_redirect", a);
	} else {
		json_object_object_add(o, "acs_redirect", NULL);	/* unknown: not root */
	}

	a = json_object_new_array();
	for (i = 0; i < r->ncands; i++) {
		const struct doc_candidate *cd = &r->cands[i];

		e = json_object_new_object();
		jstr(e, "pci", cd->pci);
		jstr(e, "kind", cd->kind);
		jint(e, "p2pmem_size", cd->p2pmem);
		jstr(e, "p2pbar", cd->p2pbar);
		jstr(e, "provider", cd->provider == PROVIDER_YES ? "yes" :
		     cd->provider == PROVIDER_NO ? "no" : "unknown");
		if (cd->provider == PROVIDER_NO)
			jstr(e, "why", cd->why);
		/* its largest 64-bit prefetchable BAR, and how far Resizable BAR grows it */
		json_object_object_add(e, "bar", cd->bar >= 0 ? json_object_new_int(cd->bar) :
				       NULL);
		juint(e, "bar_size", cd->bar_size);
		json_object_object_add(e, "rebar_max", cd->rebar_max ?
				       json_object_new_uint64(cd->rebar_max) : NULL);
		jattrs(e, &cd->at);
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "candidates", a);
	a = json_object_new_array();
	for (i = 0; i < r->npairs; i++) {
		const struct doc_pair *p = &r->pairs[i];

		e = json_object_new_object();
		jstr(e, "nvme", r->cands[p->nvme].pci);
		jstr(e, "other", r->cands[p->other].pci);
		jstr(e, "kind", r->cands[p->other].kind);
		jstr(e, "topology", topo_level_name(p->level));
		/* the kernel's rules over the path, as with P2PDMA */
		jstr(e, "topology_verdict", map_name(p->map_type));
		jint(e, "topology_distance", p->distance);
		jstr_or_null(e, "common_bridge", p->common);
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "pairs", a);
	a = json_object_new_array();
	for (i = 0; i < r->nnodes; i++) {
		e = json_object_new_object();
		jstr(e, "path", r->nodes[i].path);
		snprintf(mode, sizeof(mode), "%04o", r->nodes[i].mode & 07777);
		jstr(e, "mode", mode);
		jstr(e, "owner", r->nodes[i].owner);
		jstr(e, "group", r->nodes[i].group);
		jbool(e, "usable", r->nodes[i].usable);
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "nodes", a);
	print(c, o);
}

static void json_verdict(struct p2pctl *c, const char *client,
			 const char *path __maybe_unused, const struct p2pbar_verdict *v)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "client", client);
	jstr(o, "verdict", map_name(v->map_type));
	jint(o, "distance", v->distance);
	juint(o, "reason", v->reason);
	juint(o, "host_ok", v->host_ok);
	juint(o, "acs_devid", v->acs_devid);
	juint(o, "host_id", v->host_id);
	print(c, o);
}

static void json_dma(struct p2pctl *c, const struct dma_report *r)
{
	struct json_object *o = json_object_new_object();

	jint(o, "bytes", r->bytes);
	juint(o, "bar_offset", r->bar_offset);
	jstr(o, "fnv1a", r->fnv);
	jstr(o, "sha256", r->sha);
	print(c, o);
}

static void json_nvme_info(struct p2pctl *c, const char *path, const struct p2pnvme_info *i,
			   const char *model)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "device", path);
	juint(o, "nsid", i->nsid);
	juint(o, "lba_size", 1u << i->lba_shift);
	juint(o, "nlb", i->nlb);
	juint(o, "max_xfer", i->max_xfer);
	juint(o, "io_queues", i->nr_io_queues);
	juint(o, "queue_depth", i->queue_depth);
	jbool(o, "sgl", i->flags & P2PNVME_INFO_F_SGL);
	jbool(o, "polled", i->flags & P2PNVME_INFO_F_POLLED);
	jstr(o, "model", model);
	print(c, o);
}

static void json_id_ctrl(struct p2pctl *c, const struct id_ctrl *id)
{
	struct json_object *o = json_object_new_object();

	juint(o, "vid", id->vid);
	juint(o, "ssvid", id->ssvid);
	jstr(o, "sn", id->sn);
	jstr(o, "mn", id->mn);
	jstr(o, "fr", id->fr);
	juint(o, "mdts", id->mdts);
	juint(o, "cntlid", id->cntlid);
	juint(o, "ver", id->ver);
	juint(o, "oacs", id->oacs);
	juint(o, "acl", id->acl);
	juint(o, "elpe", id->elpe);
	juint(o, "sqes", id->sqes);
	juint(o, "cqes", id->cqes);
	juint(o, "nn", id->nn);
	juint(o, "sgls", id->sgls);
	print(c, o);
}

static void json_smart(struct p2pctl *c, const char *dev __maybe_unused,
		       const struct smart_field *f, unsigned int n)
{
	struct json_object *o = json_object_new_object();
	unsigned int i;

	for (i = 0; i < n; i++)
		juint(o, f[i].name, f[i].v);
	print(c, o);
}

static void json_error_log(struct p2pctl *c, const char *dev __maybe_unused,
			   unsigned int entries, const struct error_entry *e, unsigned int n)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct json_object *x = json_object_new_object();

		/* nvme-cli's names, values and order (json_error_log()) */
		juint(x, "error_count", e[i].count);
		juint(x, "sqid", e[i].sqid);
		juint(x, "cmdid", e[i].cmdid);
		juint(x, "status_field", ERR_SF_STATUS(e[i].sf));
		juint(x, "phase_tag", ERR_SF_PHASE(e[i].sf));
		juint(x, "parm_error_location", e[i].parm);
		juint(x, "lba", e[i].lba);
		juint(x, "nsid", e[i].nsid);
		juint(x, "vs", e[i].vs);
		juint(x, "trtype", e[i].trtype);
		juint(x, "csi", e[i].csi);
		juint(x, "opcode", e[i].opcode);
		juint(x, "cs", e[i].cs);
		juint(x, "trtype_spec_info", e[i].tsi);
		juint(x, "log_page_version", e[i].version);
		json_object_array_add(a, x);
	}
	juint(o, "entries", entries);
	json_object_object_add(o, "errors", a);
	print(c, o);
}

static void json_stats(struct p2pctl *c, const struct nvme_stats *s)
{
	static const char * const dirs[] = { "read", "write" };
	struct json_object *o = json_object_new_object(), *a, *lat;
	const char *p;
	unsigned int i, d;
	char *end, k[32];
	int b;

	jstr(o, "device", s->dev);
	for (i = 0; i < STATS_PATHS; i++) {
		snprintf(k, sizeof(k), "reads_%s", s->paths[i]);
		jint(o, k, s->reads[i]);
		snprintf(k, sizeof(k), "writes_%s", s->paths[i]);
		jint(o, k, s->writes[i]);
		snprintf(k, sizeof(k), "bytes_%s", s->paths[i]);
		jint(o, k, s->bytes[i]);
		if (s->interval) {
			char txt[64];

			/* json-c's own doubles print otherwise: this text, as ever */
			snprintf(txt, sizeof(txt), "%.0f", s->rate[i]);
			snprintf(k, sizeof(k), "bytes_per_s_%s", s->paths[i]);
			json_object_object_add(o, k, json_object_new_double_s(s->rate[i], txt));
		}
	}
	for (i = 0; i < STATS_OTHER; i++)
		jint(o, s->other[i], s->counter[i]);
	a = json_object_new_array();
	for (p = s->inflight; ; p = end) {
		long long v = strtoll(p, &end, 10);

		if (end == p)
			break;
		json_object_array_add(a, json_object_new_int64(v));
	}
	json_object_object_add(o, "inflight", a);
	lat = json_object_new_object();
	for (d = 0; d < 2; d++) {
		struct json_object *dir = json_object_new_object();

		for (i = 0; i < STATS_PATHS; i++) {
			struct json_object *one = json_object_new_object();
			struct json_object *hist = json_object_new_array();
			struct lat l = { 0 };

			if (s->have_lat[d][i])
				l = s->lat[d][i];
			jint(one, "count", l.count);
			jint(one, "mean_ns", l.count ? l.sum / l.count : 0);
			jint(one, "max_ns", l.max);
			for (b = 0; b < LAT_BUCKETS; b++)
				json_object_array_add(hist, json_object_new_int64(l.hist[b]));
			json_object_object_add(one, "hist_log2_us", hist);
			json_object_object_add(dir, s->paths[i], one);
		}
		json_object_object_add(lat, dirs[d], dir);
	}
	json_object_object_add(o, "latency", lat);
	/* flat, the sysfs names with file_ (as there) and disk_ in front */
	for (i = 0; s->have_file && i < STATS_FILE_PATHS; i++) {
		snprintf(k, sizeof(k), "file_reads_%s", s->file_paths[i]);
		jint(o, k, s->file_reads[i]);
		snprintf(k, sizeof(k), "file_writes_%s", s->file_paths[i]);
		jint(o, k, s->file_writes[i]);
		snprintf(k, sizeof(k), "file_bytes_%s", s->file_paths[i]);
		jint(o, k, s->file_bytes[i]);
	}
	for (i = 0; s->have_file && i < STATS_FILE_OTHER; i++) {
		snprintf(k, sizeof(k), "file_%s", s->file_other[i]);
		jint(o, k, s->file_counter[i]);
	}
	for (i = 0; s->have_disk && i < STATS_DISK_PATHS; i++) {
		snprintf(k, sizeof(k), "disk_reads_%s", s->disk_paths[i]);
		jint(o, k, s->disk_reads[i]);
		snprintf(k, sizeof(k), "disk_writes_%s", s->disk_paths[i]);
		jint(o, k, s->disk_writes[i]);
	}
	for (i = 0; s->have_disk && i < STATS_DISK_OTHER; i++) {
		snprintf(k, sizeof(k), "disk_%s", s->disk_other[i]);
		jint(o, k, s->disk_counter[i]);
	}
	print(c, o);
}

static void json_io(struct p2pctl *c, const struct io_report *r)
{
	struct json_object *o = json_object_new_object();

	juint(o, "bytes", r->bytes);
	juint(o, "entries", r->entries);
	jstr(o, "path", r->path);
	juint(o, "bar_offset", r->bar_offset);
	jstr(o, "fnv1a", r->fnv);
	jstr(o, "sha256", r->sha);
	print(c, o);
}

static void json_file(struct p2pctl *c, const struct file_report *r)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "command", r->write ? "write-file" : "read-file");
	jstr(o, "file", r->file);
	jstr(o, "device", r->node);
	juint(o, "offset", r->offset);
	juint(o, "length", r->length);
	juint(o, "bytes", r->bytes);
	juint(o, "entries", r->entries);
	jstr(o, "memory", r->memory);
	jstr(o, "path", r->path);
	juint(o, "bar_offset", r->bar_offset);
	jstr(o, "fnv1a", r->fnv);
	jstr(o, "sha256", r->sha);
	print(c, o);
}

static void json_copy(struct p2pctl *c, const struct copy_report *r)
{
	struct json_object *o = json_object_new_object();

	juint(o, "bytes", r->bytes);
	jstr(o, "read_path", r->read_path);
	jstr(o, "write_path", r->write_path);
	juint(o, "bar_offset", r->bar_offset);
	print(c, o);
}

static void json_done(struct p2pctl *c, const char *op, const char *dev)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "device", dev);
	jstr(o, "command", op);
	jstr(o, "result", "done");
	print(c, o);
}

static void json_buffers(struct p2pctl *c, const char *dev, const struct reg_entry *e,
			 unsigned int n)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	unsigned int i;

	jstr(o, "device", dev);
	for (i = 0; i < n; i++) {
		struct json_object *b = json_object_new_object();

		jstr(b, "kind", e[i].kind);
		juint(b, "bytes", e[i].bytes);
		juint(b, "start", e[i].start);
		jstr(b, "where", e[i].where);
		jstr(b, "owner", e[i].owner);
		jbool(b, "require_p2p", e[i].require_p2p);
		juint(b, "segments", e[i].segments);
		jint(b, "busy", e[i].busy);
		jbool(b, "revoked", e[i].revoked);
		jbool(b, "mapped", e[i].mapped);
		json_object_array_add(a, b);
	}
	json_object_object_add(o, "buffers", a);
	print(c, o);
}

static void json_version(struct p2pctl *c, const char *version)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "version", version);
	print(c, o);
}

const struct p2pctl_out p2pctl_json = {
	.error = json_error,
	.nvme_status = json_nvme_status,
	.io_error = json_io_error,
	.buffers = json_buffers,
	.info = json_info,
	.list = json_list,
	.check = json_check,
	.topo = json_topo,
	.doctor = json_doctor,
	.verdict = json_verdict,
	.dma = json_dma,
	.nvme_info = json_nvme_info,
	.id_ctrl = json_id_ctrl,
	.smart = json_smart,
	.error_log = json_error_log,
	.stats = json_stats,
	.io = json_io,
	.file = json_file,
	.copy = json_copy,
	.done = json_done,
	.version = json_version,
};
