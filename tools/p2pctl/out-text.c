// SPDX-License-Identifier: GPL-2.0
/* p2pctl's text output (-o normal): lines for people. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "p2pctl.h"

static void text_error(struct p2pctl *c __maybe_unused, int err, const char *step,
		       const char *hint)
{
	fprintf(stderr, "p2pctl: %s: %s (errno %d)\n", step, strerror(err), err);
	if (hint)
		fprintf(stderr, "  %s\n", hint);
}

static void text_nvme_status(struct p2pctl *c __maybe_unused, const char *step,
			     int status)
{
	fprintf(stderr, "p2pctl: %s: NVMe status %#x\n", step, status);
}

static void text_io_error(struct p2pctl *c __maybe_unused, const char *step, int err,
			  unsigned int status)
{
	fprintf(stderr, "p2pctl: %s: %s (errno %d, NVMe status %#x)\n", step, strerror(err), err,
		status);
}

static void text_info(struct p2pctl *c __maybe_unused, const char *path,
		      const char *pci, const struct p2pbar_info *i)
{
	printf("%s: %s BAR %u, %llu MiB p2pmem at offset %llu, bus %#llx\n"
	       "  allocated: %llu bytes in %u allocations, %spublished\n",
	       path, pci, i->bar, (unsigned long long)i->size >> 20,
	       (unsigned long long)i->offset, (unsigned long long)i->bus_addr,
	       (unsigned long long)i->alloc_bytes, i->alloc_count,
	       i->flags & P2PBAR_INFO_F_PUBLISHED ? "" : "not ");
}

/* a function's place as topo and list show it: "0", "8.0GT/s", "x4", "12" or "-" */
static void attrs_text(const struct pci_attrs *a, char numa[12], char width[12], char iommu[12])
{
	snprintf(numa, 12, a->numa >= 0 ? "%d" : "-", a->numa);
	snprintf(width, 12, a->width > 0 ? "x%d" : "-", a->width);
	snprintf(iommu, 12, a->iommu >= 0 ? "%d" : "-", a->iommu);
}

static void text_list(struct p2pctl *c __maybe_unused, const struct list_dev *d,
		      unsigned int n)
{
	unsigned int i;

	printf("%-13s %-9s %-10s %-11s %10s %10s %-9s %4s %-8s %5s %5s\n", "PCI", "KIND",
	       "DRIVER", "DEVICE", "P2PMEM", "AVAILABLE", "PUBLISHED", "NUMA", "SPEED", "WIDTH",
	       "IOMMU");
	for (i = 0; i < n; i++) {
		char sz[24] = "-", av[24] = "-", numa[12], width[12], iommu[12];

		if (d[i].has_p2pmem) {
			snprintf(sz, sizeof(sz), "%lld", d[i].p2pmem_size);
			snprintf(av, sizeof(av), "%lld", d[i].p2pmem_available);
		}
		attrs_text(&d[i].at, numa, width, iommu);
		printf("%-13s %-9s %-10s %-11s %10s %10s %-9s %4s %-8s %5s %5s\n", d[i].pci,
		       d[i].kind, *d[i].driver ? d[i].driver : "-", *d[i].dev ? d[i].dev : "-", sz,
		       av, d[i].has_p2pmem ? (d[i].published ? "yes" : "no") : "-", numa,
		       *d[i].at.speed ? d[i].at.speed : "-", width, iommu);
	}
	if (!n)
		printf("no p2pmem provider and no NVMe controller: load p2pbar and bind a device (p2pctl --help)\n");
}

/* "direct (distance 4)", "refused" */
static void map_text(const struct check *k, char *buf, size_t len)
{
	if (k->distance >= 0)
		snprintf(buf, len, "%s (distance %d)", map_name(k->map_type), k->distance);
	else
		snprintf(buf, len, "%s", map_name(k->map_type));
}

/*
 * The answer first, with why and the fix: no P2PDMA in the kernel, no
 * memory to lend, unknown, or the path's verdict; then what the path
 * alone gives where something else decided, and the running kernel.
 */
static void text_check(struct p2pctl *c __maybe_unused, const struct check_report *r)
{
	char path[64], kline[700];

	map_text(r->c, path, sizeof(path));
	switch (r->answer) {
	case ANSWER_NO_P2PDMA:
		printf("%s -> %s: no: this kernel has no P2PDMA\n  why: %s (kernel %s)\n  fix: %s\n",
		       r->provider, r->client, r->k->why, r->k->release, kernel_fix(r->k));
		if (!r->provider_ok)
			printf("  also: %s cannot be a provider: %s\n", r->provider, r->pwhy);
		break;
	case ANSWER_NO_PROVIDER:
		printf("%s -> %s: no: %s cannot be a provider\n  why: %s\n  fix: %s\n", r->provider,
		       r->client, r->provider, r->pwhy, r->pfix);
		break;
	case ANSWER_UNKNOWN:
		printf("%s -> %s: unknown: nothing tells whether this kernel has P2PDMA\n"
		       "  why: %s (kernel %s)\n  fix: %s\n", r->provider, r->client, r->k->why,
		       r->k->release, kernel_fix(r->k));
		break;
	case ANSWER_TOPOLOGY:
		printf("%s -> %s: %s\n  why: %s\n", r->provider, r->client, path, r->why);
		if (*r->fix)
			printf("  fix: %s\n", r->fix);
		break;
	}
	if (r->answer != ANSWER_TOPOLOGY)
		printf("  topology: %s: %s\n", path, r->why);
	if (r->answer != ANSWER_NO_P2PDMA && r->answer != ANSWER_UNKNOWN) {
		kernel_line(r->k, kline, sizeof(kline));
		printf("  running %s\n", kline);
	}
	if (r->kernel)
		printf("  kernel (%s): %s, distance %d%s\n", r->kdev, map_name(r->v->map_type),
		       r->v->distance, r->agrees ? "" : "  <- DISAGREES");
	else
		printf("  predicted: no p2pbar provider is bound to either to ask the kernel\n");
}

static const char *host_rule(const struct topo_host *h)
{
	return h->cpu ? "P2P through it (AMD Zen CPU)" :
	       h->ok == P2PBAR_HOST_ALLOWLIST && h->since > 600 ?
	       "P2P through it (in the kernel's allowlist from 7.2 on)" :
	       h->ok == P2PBAR_HOST_ALLOWLIST ? "P2P through it (in the kernel's allowlist)" :
	       h->ok == P2PBAR_HOST_NEEDS_SAME ? "P2P through it between its own devices only" :
	       "no P2P through it (not in the kernel's allowlist)";
}

/* a host bridge's line: its rule, if the kernel has P2PDMA at all */
static void host_line(const struct topo_report *r, const struct topo_host *h)
{
	printf("%s host bridge%s%s: ", h->name, *h->dev ? " " : "", h->dev);
	if (r->k->p2pdma == P2PDMA_NO)
		printf("no P2P through it: this kernel has no P2PDMA\n");
	else if (r->k->p2pdma == P2PDMA_UNKNOWN)
		printf("unknown: %s if this kernel has P2PDMA\n", host_rule(h));
	else
		printf("%s\n", host_rule(h));
}

/* " (numa 0, 8.0GT/s x4, iommu 12)" with what is known, or nothing */
static void place(const struct pci_attrs *a, char *out, size_t len)
{
	char s[96] = "";

	if (a->numa >= 0)
		snprintf(s, sizeof(s), "numa %d", a->numa);
	if (*a->speed || a->width > 0)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "%s%s%sx%d", *s ? ", " : "",
			 a->speed, *a->speed ? " " : "", a->width);
	if (a->iommu >= 0)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "%siommu %d", *s ? ", " : "",
			 a->iommu);
	if (*s)
		snprintf(out, len, " (%s)", s);
}

/* the tree as lspci -tv draws it, one host bridge after the other */
static void text_tree(const struct topo_report *r)
{
	bool last[64] = { false };
	int i, j, host = -1;

	for (i = 0; i < r->nfns; i++) {
		const struct topo_fn *f = &r->fns[i];
		char what[200] = "";

		while (host < f->host)
			host_line(r, &r->hosts[++host]);
		if (f->depth < 64)
			last[f->depth] = f->last;
		if (*f->driver)
			snprintf(what, sizeof(what), " %s", f->driver);
		if (f->acs)
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 " [ACS redirect]");
		if (f->p2pmem)
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 " [p2pmem %lld MiB%s%s]", f->p2pmem >> 20, *f->p2pbar ? ", " : "",
				 f->p2pbar);
		place(&f->at, what + strlen(what), sizeof(what) - strlen(what));
		for (j = 0; j < f->depth && j < 64; j++)
			fputs(last[j] ? "   " : "|  ", stdout);
		printf("%s %s %s:%s%s\n", f->last ? "`-" : "+-", f->pci, f->vendor, f->device,
		       what);
	}
	while (host < r->nhosts - 1)	/* host bridges with nothing below */
		host_line(r, &r->hosts[++host]);
}

/*
 * a cell of the matrix: the legend, the kernel's verdict, * where they
 * differ; without P2PDMA every pair is refused, and when nothing tells
 * whether the kernel has it, the verdict is unknown: ?
 */
static void cell_text(const struct topo_report *r, const struct topo_cell *cell, char *s,
		      size_t len)
{
	char k[16];

	if (!cell->valid) {
		snprintf(s, len, "X");
		return;
	}
	if (r->k->p2pdma == P2PDMA_NO) {
		snprintf(s, len, "%s - *", topo_level_name(cell->level));
		return;
	}
	if (r->k->p2pdma == P2PDMA_UNKNOWN) {
		snprintf(s, len, "%s ?", topo_level_name(cell->level));
		return;
	}
	if (cell->map_type == P2PBAR_MAP_REFUSED)
		snprintf(k, sizeof(k), "-");
	else
		snprintf(k, sizeof(k), "%c %d", cell->map_type == P2PBAR_MAP_DIRECT ? 'D' : 'H',
			 cell->distance);
	snprintf(s, len, "%s %s%s", topo_level_name(cell->level), k, cell->why ? " *" : "");
}

static void text_topo(struct p2pctl *c __maybe_unused, const struct topo_report *r)
{
	int i, j, differ = 0;
	char kline[700];

	kernel_line(r->k, kline, sizeof(kline));
	printf("%s\n", kline);
	if (r->k->p2pdma != P2PDMA_YES)
		printf("  fix: %s\n", kernel_fix(r->k));
	text_tree(r);
	if (!r->nprov) {
		if (r->k->p2pdma == P2PDMA_NO)
			printf("\nno p2pmem provider: this kernel has no P2PDMA (the fix is above)\n");
		else
			printf("\nno p2pmem provider (bind p2pbar to a device: p2pctl --help)\n");
		return;
	}
	printf("\nverdicts (provider in rows; the path as nvidia-smi topo -m names it, then the kernel's):\n%-13s",
	       "");
	for (j = 0; j < r->ncli; j++)
		printf(" %-13s", r->cli[j]);
	printf(" NUMA\n");
	for (i = 0; i < r->nprov; i++) {
		printf("%-13s", r->prov[i]);
		for (j = 0; j < r->ncli; j++) {
			char s[24];

			cell_text(r, &r->cells[i * r->ncli + j], s, sizeof(s));
			printf(" %-13s", s);
		}
		if (r->prov_numa[i] >= 0)
			printf(" %d\n", r->prov_numa[i]);
		else
			printf(" -\n");
	}
	printf("\nLegend:\n"
	       "  X    = Self\n"
	       "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
	       "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
	       "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
	       "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
	       "  PIX  = Connection traversing at most a single PCIe bridge\n"
	       "  D n  = the kernel's P2PDMA: direct, n its distance; H n: through the host bridge; -: refused\n"
	       "  *    = the path and the kernel's verdict differ: below a common bridge but not direct,\n"
	       "         or through host bridges where the kernel refuses P2P\n");
	if (r->k->p2pdma == P2PDMA_UNKNOWN) {
		printf("  ?    = unknown: nothing tells whether this kernel has P2PDMA (the first line);\n"
		       "         p2pctl check shows what the path alone gives\n");
		return;
	}
	if (r->k->p2pdma == P2PDMA_NO) {
		printf("\nwhere they differ:\n  every pair: this kernel has no P2PDMA (the fix is above)\n");
		return;
	}
	for (i = 0; i < r->nprov; i++) {
		for (j = 0; j < r->ncli; j++) {
			const struct topo_cell *cell = &r->cells[i * r->ncli + j];

			if (!cell->why)
				continue;
			if (!differ++)
				printf("\nwhere they differ:\n");
			printf("  %s -> %s: %s, but %s: %s\n", r->prov[i], r->cli[j],
			       topo_level_name(cell->level), map_name(cell->map_type), cell->why);
		}
	}
}

/* doctor: the answer and the counts, then one line (and details, the fix) a thing */
static void text_doctor(struct p2pctl *c __maybe_unused, const struct doctor_report *r)
{
	int p2pdma = r->k->p2pdma, i, l;
	char counts[64];

	if (r->missing || r->warnings)
		snprintf(counts, sizeof(counts), "%d missing, %d warning%s", r->missing,
			 r->warnings, r->warnings == 1 ? "" : "s");
	else
		snprintf(counts, sizeof(counts), "nothing missing");
	printf("P2PDMA: %s: %s (%s)\n", p2pdma_word(p2pdma),
	       p2pdma == P2PDMA_YES ? "this kernel has P2PDMA" :
	       p2pdma == P2PDMA_NO ? "this kernel has no P2PDMA" :
	       "nothing tells whether this kernel has P2PDMA", counts);
	for (i = 0; i < r->nitems; i++) {
		const struct doc_item *it = &r->items[i];

		for (l = 0; l < it->nlines; l++)
			printf("%-12s %-8s %s\n", l ? "" : it->name,
			       l ? "" : doc_status_name(it->status), it->line[l]);
		if (*it->fix)
			printf("%-21s fix: %s\n", "", it->fix);
	}
}

static void text_verdict(struct p2pctl *c __maybe_unused, const char *client,
			 const char *path, const struct p2pbar_verdict *v)
{
	printf("%s -> %s: %s (distance %d): %s\n", client, path, map_name(v->map_type),
	       v->distance, reason_name(v->reason));
}

static void text_dma(struct p2pctl *c __maybe_unused, const struct dma_report *r)
{
	printf("%s %lld bytes, p2pmem at BAR offset %#llx, fnv1a %s, sha256 %s\n",
	       r->write ? "wrote" : "read", r->bytes, (unsigned long long)r->bar_offset, r->fnv,
	       r->sha);
}

static void text_nvme_info(struct p2pctl *c __maybe_unused, const char *path,
			   const struct p2pnvme_info *i, const char *model)
{
	printf("%s: %s, namespace %u: %llu x %u bytes; %u I/O queues of %u (%s), %u KiB per command%s\n",
	       path, model, i->nsid, (unsigned long long)i->nlb, 1u << i->lba_shift,
	       i->nr_io_queues, i->queue_depth,
	       i->flags & P2PNVME_INFO_F_POLLED ? "polled" : "MSI-X", i->max_xfer >> 10,
	       i->flags & P2PNVME_INFO_F_SGL ? ", SGL" : "");
}

/* @src printable and without its padding, into @dst of @len bytes */
static const char *trimmed(char *dst, size_t len, const char *src)
{
	size_t i, n = strnlen(src, len - 1);

	for (i = 0; i < n; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : ' ';
	while (n && dst[n - 1] == ' ')
		n--;
	dst[n] = 0;
	return dst;
}

static void text_id_ctrl(struct p2pctl *c __maybe_unused, const struct id_ctrl *id)
{
	char sn[sizeof(id->sn)], mn[sizeof(id->mn)], fr[sizeof(id->fr)];

	printf("vid     : %#06x\nssvid   : %#06x\nsn      : %s\nmn      : %s\nfr      : %s\n"
	       "mdts    : %u\ncntlid  : %u\nver     : %#x\nelpe    : %u\nnn      : %u\n",
	       id->vid, id->ssvid, trimmed(sn, sizeof(sn), id->sn),
	       trimmed(mn, sizeof(mn), id->mn), trimmed(fr, sizeof(fr), id->fr), id->mdts,
	       id->cntlid, id->ver, id->elpe, id->nn);
}

static void text_smart(struct p2pctl *c __maybe_unused, const char *dev,
		       const struct smart_field *f, unsigned int n)
{
	unsigned int i;

	printf("SMART / health log of %s\n", dev);
	for (i = 0; i < n; i++) {
		if (!strcmp(f[i].name, "temperature"))
			printf("%-24s: %llu K (%lld C)\n", f[i].name, f[i].v, (long long)f[i].v - 273);
		else
			printf("%-24s: %llu\n", f[i].name, f[i].v);
	}
}

static void text_error_log(struct p2pctl *c __maybe_unused, const char *dev,
			   unsigned int entries, const struct error_entry *e, unsigned int n)
{
	unsigned int i;

	printf("Error information log of %s: %u entries\n", dev, entries);
	for (i = 0; i < n; i++)
		printf("  #%llu: sq %u cid %#x status %#x opcode %#x lba %llu nsid %u\n", e[i].count,
		       e[i].sqid, e[i].cmdid, ERR_SF_STATUS(e[i].sf), e[i].opcode, e[i].lba,
		       e[i].nsid);
	if (!n)
		printf("  no errors logged\n");
}

static void text_stats(struct p2pctl *c __maybe_unused, const struct nvme_stats *s)
{
	static const char * const dirs[] = { "read", "write" };
	unsigned int i, d;

	printf("%s       reads     writes        bytes%s\n", s->name,
	       s->interval ? "      bytes/s" : "");
	for (i = 0; i < STATS_PATHS; i++) {
		printf("  %-7s %10lld %10lld %12lld", s->paths[i], s->reads[i], s->writes[i],
		       s->bytes[i]);
		if (s->interval)
			printf(" %12.0f", s->rate[i]);
		printf("\n");
	}
	for (i = 0; i < STATS_OTHER; i++)
		printf("%s%s %lld", i ? ", " : "  ", s->other[i], s->counter[i]);
	printf("\n  in flight per queue: %s\n  latency     count    mean us     max us\n",
	       s->inflight);
	for (d = 0; d < 2; d++) {
		for (i = 0; i < STATS_PATHS; i++) {
			const struct lat *l = &s->lat[d][i];

			if (!s->have_lat[d][i] || !l->count)
				continue;
			printf("  %-5s %-6s %8lld %10.1f %10.1f\n", dirs[d], s->paths[i], l->count,
			       l->sum / 1000.0 / l->count, l->max / 1000.0);
		}
	}
	if (s->have_file) {
		printf("file command   reads     writes        bytes\n");
		for (i = 0; i < STATS_FILE_PATHS; i++)
			printf("  %-7s %10lld %10lld %12lld\n", s->file_paths[i], s->file_reads[i],
			       s->file_writes[i], s->file_bytes[i]);
		for (i = 0; i < STATS_FILE_OTHER; i++)
			printf("%s%s %lld", i ? ", " : "  ", s->file_other[i], s->file_counter[i]);
		printf("\n");
	}
	if (s->have_disk) {
		printf("disk           reads     writes\n");
		for (i = 0; i < STATS_DISK_PATHS; i++)
			printf("  %-7s %10lld %10lld\n", s->disk_paths[i], s->disk_reads[i],
			       s->disk_writes[i]);
		for (i = 0; i < STATS_DISK_OTHER; i++)
			printf("%s%s %lld", i ? ", " : "  ", s->disk_other[i], s->disk_counter[i]);
		printf("\n");
	}
}

static void text_io(struct p2pctl *c __maybe_unused, const struct io_report *r)
{
	printf("%s %llu bytes at LBA %llu via %s (%u request%s), fnv1a %s, sha256 %s\n",
	       r->write ? "wrote" : "read", (unsigned long long)r->bytes,
	       (unsigned long long)r->slba, r->path, r->entries,
	       r->entries > 1 ? "s in one batch" : "", r->fnv, r->sha);
}

static void text_copy(struct p2pctl *c __maybe_unused, const struct copy_report *r)
{
	printf("copied %llu bytes %s LBA %llu -> %s LBA %llu through p2pmem (%s, %s)\n",
	       (unsigned long long)r->bytes, r->src, (unsigned long long)r->slba, r->dst,
	       (unsigned long long)r->dlba, r->read_path, r->write_path);
}

static void text_file(struct p2pctl *c __maybe_unused, const struct file_report *r)
{
	printf("%s %llu of %llu bytes %s %s at offset %llu via %s ",
	       r->write ? "wrote" : "read", (unsigned long long)r->bytes,
	       (unsigned long long)r->length, r->write ? "to" : "of", r->file,
	       (unsigned long long)r->offset, r->path);
	printf("(%s, %u transfer%s at once, %s), fnv1a %s, sha256 %s\n", r->memory, r->entries,
	       r->entries > 1 ? "s" : "", r->node, r->fnv, r->sha);
}

/* Write Zeroes and Flush say nothing when they succeed */
static void text_done(struct p2pctl *c __maybe_unused,
		      const char *op __maybe_unused,
		      const char *dev __maybe_unused)
{
}

/* one line a buffer: "dmabuf 1048576 B: dmabuf-p2p (0000:05:00.0), require-p2p" */
static void text_buffers(struct p2pctl *c __maybe_unused, const char *dev,
			 const struct reg_entry *e, unsigned int n)
{
	unsigned int i;

	printf("%s: %u registered buffer%s\n", dev, n, n == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		printf("  %-6s %llu B: %s%s%s%s%s, %u segment%s, %d busy%s\n", e[i].kind,
		       (unsigned long long)e[i].bytes, e[i].where, e[i].owner[0] ? " (" : "",
		       e[i].owner, e[i].owner[0] ? ")" : "",
		       e[i].require_p2p ? ", P2P required" : "", e[i].segments,
		       e[i].segments == 1 ? "" : "s", e[i].busy, e[i].revoked ? ", revoked" : "");
}

static void text_version(struct p2pctl *c __maybe_unused, const char *version)
{
	printf("p2pctl %s\n", version);
}

const struct p2pctl_out p2pctl_text = {
	.error = text_error,
	.nvme_status = text_nvme_status,
	.io_error = text_io_error,
	.buffers = text_buffers,
	.info = text_info,
	.list = text_list,
	.check = text_check,
	.topo = text_topo,
	.doctor = text_doctor,
	.verdict = text_verdict,
	.dma = text_dma,
	.nvme_info = text_nvme_info,
	.id_ctrl = text_id_ctrl,
	.smart = text_smart,
	.error_log = text_error_log,
	.stats = text_stats,
	.io = text_io,
	.file = text_file,
	.copy = text_copy,
	.done = text_done,
	.version = text_version,
};
