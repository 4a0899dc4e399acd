/* SPDX-License-Identifier: GPL-2.0 */
/*
 * p2pctl's parts: main.c parses the line and runs a handler of its command
 * table; the handlers, by topic (provider.c, topo.c, nvme.c, copy.c, file.c), fill
 * the structures below and hand them to an output backend (out-text.c,
 * out-json.c: struct p2pctl_out), which alone prints. pci.c is the PCI
 * topology walk, buffer.c the memory a transfer uses.
 */
#ifndef P2PCTL_H
#define P2PCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "libp2p.h"
#include "p2p_verdict.h"

#ifndef __maybe_unused
#define __maybe_unused	__attribute__((unused))
#endif
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * The commands' own options, which main.c parses (getopt_long(), anywhere
 * on the line) before the command runs: opt[O_x] is the argument of --x,
 * "" for a flag, or NULL when it is not on the line. Each command names the
 * ones it takes (its cmds[] entry); any other is a usage error.
 */
enum {
	O_DEV, O_SYSFS, O_HOST, O_DMABUF, O_UDMABUF, O_OFFSET, O_BOUNCE, O_NO_BOUNCE, O_PRP,
	O_SGL, O_BATCH, O_INTERVAL, O_RESET, O_LENGTH, O_TO, O_FROM, O_REQUIRE_P2P, O_NCMD,
	O_JSON = O_NCMD, O_HOLD, O_FORMAT, O_VERSION,	/* everyone's */
};

struct p2pctl_out;

/**
 * struct p2pctl - one run of p2pctl
 * @out: the output backend (-o)
 * @hold: keep the p2pmem of a transfer until stdin is closed (--hold)
 * @opt: the commands' options, as above
 * @printed: the backend has printed the command's document
 */
struct p2pctl {
	const struct p2pctl_out *out;
	bool hold;
	const char *opt[O_NCMD];
	bool printed;
};

/*
 * Exit status (p2pctl(8), EXIT STATUS): 0; EXIT_USAGE for a usage error
 * and nothing else; EXIT_NODEV (ENODEV) when a device named on the line,
 * or the default one, is not there; else the errno of the step that failed
 * (EREMOTEIO when the kernel refuses P2P, EACCES, EPERM, EOPNOTSUPP when
 * it refuses the operation, EIO for an NVMe status).
 */
#define EXIT_USAGE	2
#define EXIT_NODEV	19

int exit_status(int err);
int fail(struct p2pctl *c, int err, const char *what);
__attribute__((format(printf, 1, 2))) int usage_error(const char *fmt, ...);
int pci_arg(const char *cmd, const char *name, const char *s, char *buf, size_t len);
int byte_arg(const char *cmd, const char *s, int *byte);

/* p2p_parse_num() of argument @name of @cmd into @dst, or a usage error */
#define NUM(cmd, name, str, dst) do {						\
		uint64_t v_;							\
		if (p2p_parse_num(str, &v_))					\
			return usage_error("%s: %s: not a number: '%s'", cmd, name, str); \
		dst = v_;							\
	} while (0)

/* ---- pci.c: the PCI tree and the P2PDMA rules over it ------------------- */

#define TOPO_DEPTH	P2PBAR_TOPO_MAX_DEPTH

/* the path from a function up to its host bridge */
struct topo {
	char name[TOPO_DEPTH][16];	/* [0] the function, up to the one on the root bus */
	int acs[TOPO_DEPTH];		/* ACS redirect set on that function */
	int len;
	char host[32];			/* "pci0000:00" */
	char host_dev[16];		/* the host bridge's representative function, or "" */
	uint16_t host_vendor, host_device;
};

/* a verdict for two functions, and why */
struct check {
	uint32_t map_type, reason, host_ok;
	int distance;
	char acs[TOPO_DEPTH * 2][16];	/* ports with ACS redirect, as the kernel lists them */
	int nacs;
	char common[16];		/* the common upstream bridge, or "" */
	const struct topo *host;	/* the host bridge that refused or allowed */
	int host_since;			/* the release whose allowlist lists it, or 0 */
	int hops_a, hops_b;		/* each function's hops up to the common bridge */
};

/* what sysfs says of a function's place: NUMA node, link, IOMMU group */
struct pci_attrs {
	int numa;			/* -1: none or unknown */
	char speed[24];			/* "8.0GT/s", "" if unknown */
	int width;			/* lanes, 0 if unknown */
	int iommu;			/* group, -1 if none */
};

/* nvidia-smi topo -m's legend for the path between two functions */
enum topo_level { TOPO_X, TOPO_PIX, TOPO_PXB, TOPO_PHB, TOPO_NODE, TOPO_SYS };

int topo_of(const char *bdf, struct topo *t);
int acs_redirect(const char *bdf);
int cpu_routes_p2p(void);
void path_of(const struct topo *t, struct p2pbar_topo_path *p);
void check_compute(const struct topo *a, const struct topo *b, struct check *c);
void check_explain(const struct check *c, const char *a, const char *b, char *why, size_t wl,
		   char *fix, size_t fl);
const char *class_dev_of(const char *class, const char *bdf, char *buf, size_t len);
void pci_attrs_of(const char *bdf, struct pci_attrs *a);
enum topo_level topo_level(const struct topo *a, const struct topo *b, const struct check *k,
			   int numa_a, int numa_b);
const char *topo_level_name(enum topo_level l);
bool topo_differs(enum topo_level l, uint32_t map_type);
const char *map_name(uint32_t m);
const char *reason_name(uint32_t r);

/* whether @bdf can lend memory as a provider, and if not, why and the fix */
enum { PROVIDER_NO, PROVIDER_YES, PROVIDER_UNKNOWN };
int provider_usable(const char *bdf, const struct topo *t, char *why, size_t wl, char *fix,
		    size_t fl);
int largest_bar(const char *bdf, unsigned long long *size, unsigned long long *rebar_max);
const char *size_str(unsigned long long n, char *buf, size_t len);

/* ---- kernel.c: what the running kernel was built with ------------------- */

enum { P2PDMA_UNKNOWN, P2PDMA_NO, P2PDMA_YES };

/**
 * struct kernel_info - the running kernel, as far as anything tells
 * @release: uname -r
 * @p2pdma: P2PDMA_YES, P2PDMA_NO, or P2PDMA_UNKNOWN when nothing tells
 * @source: the file that decided ("/proc/config.gz"), "" if none did
 * @why: what it says ("CONFIG_PCI_P2PDMA=y in /proc/config.gz"), or what
 *       could not be read
 * @config: the configuration's text when one was read, else NULL
 */
struct kernel_info {
	char release[65];
	int p2pdma;
	char source[300];
	char why[512];
	char *config;
};

void kernel_read(struct kernel_info *k);
void kernel_done(struct kernel_info *k);
void kernel_answered(struct kernel_info *k, const char *source, const char *why);
int kernel_option(const struct kernel_info *k, const char *opt);
const char *p2pdma_word(int p2pdma);
void kernel_line(const struct kernel_info *k, char *buf, size_t len);
const char *kernel_fix(const struct kernel_info *k);

/* ---- buffer.c: the memory of a transfer, and its checksums -------------- */

struct p2pbuf {
	unsigned char *p;
	size_t len;
	int fd;
	uint64_t bar_offset;
};

int get_p2pmem(struct p2pctl *c, const char *dev, const char *bdf, size_t len, struct p2pbuf *b);
int export_p2pmem(struct p2pctl *c, const char *dev, size_t len, int *dfd,
		  unsigned long long *bar_offset);
int host_dmabuf(struct p2pctl *c, size_t len, int *dfd, unsigned char **map);
void checksums(const unsigned char *p, size_t n, char fnv[17], char sha[65]);

/* ---- what the commands hand to the output ------------------------------- */

/* list: one PCI function */
struct list_dev {
	char pci[P2P_BDF_LEN];
	const char *kind;		/* provider, p2pnvme, nvme-cmb, nvme, nic, gpu, accel */
	char driver[64];
	char dev[64];			/* p2pbar0, p2pnvme0, or "" */
	bool has_p2pmem, published;
	long long p2pmem_size, p2pmem_available;
	struct pci_attrs at;
};

/* check: the answer, from what decides first */
enum check_answer {
	ANSWER_TOPOLOGY,		/* the kernel has P2PDMA: the path's verdict */
	ANSWER_NO_P2PDMA,		/* the kernel has none: no */
	ANSWER_NO_PROVIDER,		/* PROVIDER has no memory to lend: no */
	ANSWER_UNKNOWN,			/* nothing tells whether the kernel has P2PDMA */
};

struct check_report {
	const char *provider, *client;
	const struct check *c;
	const char *why, *fix;		/* the topology's */
	bool kernel;			/* a bound provider answered too */
	const char *kdev;
	const struct p2pbar_verdict *v;	/* its answer */
	bool agrees;
	enum check_answer answer;
	const struct kernel_info *k;	/* the running kernel */
	bool provider_ok;		/* PROVIDER can lend memory (or cannot tell) */
	const char *pwhy, *pfix;	/* if not: why, and the fix */
};

/* "yes", "no" or "unknown": P2P between the two, all told */
const char *check_p2p(const struct check_report *r);

/* topo: a host bridge, a function of the tree, a cell of the matrix */
struct topo_host {
	char name[32];			/* pci0000:00 */
	char dev[16];			/* its representative function, or "" */
	int ok, since;			/* p2p_host_allowed(), the allowlist's release */
	bool cpu;			/* the CPU routes P2P (AMD Zen) */
};

struct topo_fn {
	char pci[16];
	int host, depth;		/* index into the hosts, 0 on the root bus */
	bool last;			/* the last child of its parent */
	char vendor[8], device[8];
	char driver[64];
	bool acs;
	long long p2pmem;		/* bytes, 0 if none */
	char p2pbar[64];		/* its p2pbar instance, or "" */
	struct pci_attrs at;
};

struct topo_cell {
	bool valid;			/* not itself, both paths read */
	uint32_t map_type;		/* the kernel's rules over the path */
	int distance;
	enum topo_level level;		/* nvidia-smi's legend */
	const char *why;		/* where the two differ: the kernel's reason */
};

struct topo_report {
	struct topo_host *hosts;
	int nhosts;
	struct topo_fn *fns;
	int nfns;
	char (*prov)[16], (*cli)[16];
	int *prov_numa;
	int nprov, ncli;
	struct topo_cell *cells;	/* [nprov][ncli] */
	const struct kernel_info *k;	/* the running kernel: with P2PDMA, the cells hold */
};

/* dma-read, dma-write */
struct dma_report {
	bool write;
	long long bytes;
	uint64_t bar_offset;
	const char *fnv, *sha;
};

/* nvme-read, nvme-write */
struct io_report {
	bool write;
	uint64_t bytes, slba, bar_offset;
	unsigned int entries;
	const char *path, *fnv, *sha;
};

/* read-file, write-file */
struct file_report {
	bool write;
	const char *file, *node;	/* the file, the controller whose disk holds it */
	uint64_t offset, bytes, length, bar_offset;
	unsigned int entries;		/* transfers in flight at once */
	const char *memory, *path, *fnv, *sha;
};

/* nvme-buffers: one registered buffer, as debugfs "buffers" lists it */
struct reg_entry {
	char kind[16], where[16], owner[32];
	uint64_t bytes, start;
	unsigned int segments;
	int busy;
	bool revoked, mapped, require_p2p;
};

/* nvme-copy */
struct copy_report {
	uint64_t bytes, slba, dlba, bar_offset;
	const char *src, *dst, *read_path, *write_path;
};

/* nvme-id-ctrl: the fields both backends show */
struct id_ctrl {
	unsigned int vid, ssvid, mdts, cntlid, acl, elpe, sqes, cqes;
	uint32_t ver, oacs, nn, sgls;
	char sn[21], mn[41], fr[9];	/* as the controller pads them */
};

/* nvme-smart: a field of the log, as nvme-cli names it */
struct smart_field {
	const char *name;
	unsigned long long v;
};

/* nvme-error-log: an entry in use, its fields as the log has them */
struct error_entry {
	unsigned long long count, lba, cs;
	unsigned int sqid, cmdid, nsid;
	unsigned int sf;		/* Status Field (bits 15:1) and Phase Tag (bit 0) */
	unsigned int parm, tsi;		/* parameter error location, transport specific */
	unsigned int vs, trtype, csi, opcode, version;
};

/* the Status Field and the Phase Tag of an entry's word, as nvme-cli shows them */
#define ERR_SF_STATUS(sf)	((sf) >> 1 & 0x7fff)
#define ERR_SF_PHASE(sf)	((sf) & 1)

/* nvme-stats */
#define STATS_PATHS	4
#define STATS_OTHER	9
#define LAT_BUCKETS	24

struct lat {
	long long count, sum, max, hist[LAT_BUCKETS];
};

/* the file command's (stats/file_*: p2p, host, dmabuf, bounce) and the disk's (disk/) */
#define STATS_FILE_PATHS	4
#define STATS_FILE_OTHER	10
#define STATS_DISK_PATHS	3
#define STATS_DISK_OTHER	10

struct nvme_stats {
	const char *dev, *name;
	const char * const *paths, * const *other;
	long long reads[STATS_PATHS], writes[STATS_PATHS], bytes[STATS_PATHS];
	uint64_t interval;
	double rate[STATS_PATHS];	/* bytes/s over the interval */
	long long counter[STATS_OTHER];
	const char *inflight;		/* "0 3 1": one count per queue */
	struct lat lat[2][STATS_PATHS];	/* read, write */
	bool have_lat[2][STATS_PATHS];
	/* a module without the file command's counters: have_file false */
	bool have_file;
	const char * const *file_paths, * const *file_other;
	long long file_reads[STATS_FILE_PATHS], file_writes[STATS_FILE_PATHS];
	long long file_bytes[STATS_FILE_PATHS], file_counter[STATS_FILE_OTHER];
	/* the disk's, while it exists (module parameter disk=1) */
	bool have_disk;
	const char * const *disk_paths, * const *disk_other;
	long long disk_reads[STATS_DISK_PATHS], disk_writes[STATS_DISK_PATHS];
	long long disk_counter[STATS_DISK_OTHER];
};

/* doctor: what this machine can do for P2PDMA, what is missing, the fixes */
enum doc_status { DOC_OK, DOC_INFO, DOC_WARN, DOC_MISSING, DOC_UNKNOWN };

#define DOC_LINES	16
#define DOC_ITEMS	12
#define DOC_CANDS	64
#define DOC_PAIRS	128
#define DOC_NODES	32

/* one thing looked at: how it stands, what was found (a line, then details), the fix */
struct doc_item {
	const char *name;
	enum doc_status status;
	char line[DOC_LINES][400];
	int nlines;
	char fix[800];
};

struct doc_module {
	const char *name;
	bool loaded, installed;
	char version[64];		/* as loaded, or "" */
};

/* a candidate: an NVMe controller, a function with p2pmem, a GPU, accelerator, memory */
struct doc_candidate {
	char pci[16];
	const char *kind;		/* nvme, provider, gpu, accel, memory, other */
	long long p2pmem;		/* bytes, 0 if none */
	char p2pbar[64];		/* its p2pbar instance, or "" */
	int provider;			/* PROVIDER_*: could lend memory */
	char why[1024];			/* if not, why */
	int bar;			/* its largest 64-bit prefetchable BAR, or -1 */
	unsigned long long bar_size, rebar_max;
	struct pci_attrs at;
};

/* an NVMe controller and another candidate: the path, the kernel's rules over it */
struct doc_pair {
	int nvme, other;		/* candidates */
	enum topo_level level;
	uint32_t map_type;
	int distance;
	char common[16];		/* the common upstream bridge, or "" */
};

struct doc_node {
	char path[64];
	unsigned int mode;
	char owner[32], group[32];
	bool usable;			/* by whoever runs p2pctl: read and write */
};

struct doctor_report {
	const struct kernel_info *k;
	struct doc_item items[DOC_ITEMS];
	int nitems, missing, warnings;
	struct doc_module mods[2];
	char dkms_versions[256];	/* registered with DKMS, or "" */
	bool dkms_built, dkms_installed, make_installed, headers;
	char iommu_mode[16];		/* off, passthrough, strict, lazy, mixed */
	int iommu_groups;
	bool acs_known;			/* root: the ports' ACS control could be read */
	char acs[DOC_CANDS][16];	/* ports that redirect P2P between candidates */
	int nacs;
	struct doc_candidate cands[DOC_CANDS];
	int ncands;
	struct doc_pair pairs[DOC_PAIRS];
	int npairs;
	struct doc_node nodes[DOC_NODES];
	int nnodes;
};

const char *doc_status_name(enum doc_status s);

/**
 * struct p2pctl_out - an output backend
 *
 * Each command hands what it found to one of these; a backend prints one
 * document per command (JSON: one object on one line), errors included:
 * an error after the document goes to stderr as text.
 */
struct p2pctl_out {
	void (*error)(struct p2pctl *c, int err, const char *step, const char *hint);
	void (*nvme_status)(struct p2pctl *c, const char *step, int status);
	void (*io_error)(struct p2pctl *c, const char *step, int err, unsigned int status);
	void (*info)(struct p2pctl *c, const char *path, const char *pci,
		     const struct p2pbar_info *i);
	void (*list)(struct p2pctl *c, const struct list_dev *d, unsigned int n);
	void (*check)(struct p2pctl *c, const struct check_report *r);
	void (*topo)(struct p2pctl *c, const struct topo_report *r);
	void (*doctor)(struct p2pctl *c, const struct doctor_report *r);
	void (*verdict)(struct p2pctl *c, const char *client, const char *path,
			const struct p2pbar_verdict *v);
	void (*dma)(struct p2pctl *c, const struct dma_report *r);
	void (*nvme_info)(struct p2pctl *c, const char *path, const struct p2pnvme_info *i,
			  const char *model);
	void (*id_ctrl)(struct p2pctl *c, const struct id_ctrl *id);
	void (*smart)(struct p2pctl *c, const char *dev, const struct smart_field *f,
		      unsigned int n);
	void (*error_log)(struct p2pctl *c, const char *dev, unsigned int entries,
			  const struct error_entry *e, unsigned int n);
	void (*stats)(struct p2pctl *c, const struct nvme_stats *s);
	void (*io)(struct p2pctl *c, const struct io_report *r);
	void (*buffers)(struct p2pctl *c, const char *dev, const struct reg_entry *e,
			unsigned int n);
	void (*copy)(struct p2pctl *c, const struct copy_report *r);
	void (*file)(struct p2pctl *c, const struct file_report *r);
	void (*done)(struct p2pctl *c, const char *op, const char *dev);
	void (*version)(struct p2pctl *c, const char *version);
};

extern const struct p2pctl_out p2pctl_text, p2pctl_json;

/* ---- the commands ------------------------------------------------------- */

int cmd_list(struct p2pctl *c, int argc, char **argv);
int cmd_topo(struct p2pctl *c, int argc, char **argv);
int cmd_check(struct p2pctl *c, int argc, char **argv);
int cmd_doctor(struct p2pctl *c, int argc, char **argv);
int cmd_info(struct p2pctl *c, int argc, char **argv);
int cmd_verdict(struct p2pctl *c, int argc, char **argv);
int cmd_dma_read(struct p2pctl *c, int argc, char **argv);
int cmd_dma_write(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_copy(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_info(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_stats(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_buffers(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_id_ctrl(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_smart(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_error_log(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_read(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_write(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_zeroes(struct p2pctl *c, int argc, char **argv);
int cmd_nvme_flush(struct p2pctl *c, int argc, char **argv);
int cmd_read_file(struct p2pctl *c, int argc, char **argv);
int cmd_write_file(struct p2pctl *c, int argc, char **argv);

const char *path_name(uint32_t p);

#endif /* P2PCTL_H */
