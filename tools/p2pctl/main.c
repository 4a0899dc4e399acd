// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl: operate the P2PDMA suite from the shell.
 *
 *   p2pctl list                               every p2pmem provider and NVMe controller
 *   p2pctl topo                               the PCI tree annotated for P2P, verdict matrix
 *   p2pctl check PROVIDER CLIENT              the kernel's P2P verdict for two functions,
 *                                             why, and what to change; nothing bound
 *   p2pctl doctor                             what this machine can do for P2PDMA, what
 *                                             is missing, each with its fix
 *   p2pctl info [DEV]                         describe a provider (/dev/p2pbar0)
 *   p2pctl verdict CLIENT [DEV]               can CLIENT (a BDF) DMA to the provider?
 *   p2pctl dma-read BLK OFF LEN (--dev DEV | --sysfs BDF)
 *                                             O_DIRECT read of BLK into p2pmem
 *   p2pctl dma-write BLK OFF LEN BYTE (--dev DEV | --sysfs BDF)
 *                                             fill p2pmem with BYTE, O_DIRECT write to BLK
 *   p2pctl nvme-info [NVME]                   describe a p2pnvme controller (/dev/p2pnvme0)
 *   p2pctl nvme-stats [NVME] [--interval SEC] [--reset]
 *   p2pctl nvme-buffers [NVME]                registered buffers, where each is
 *                                             counters by path, latency histograms,
 *                                             bytes/s over SEC, queue depth; --reset
 *   p2pctl nvme-id-ctrl|nvme-smart|nvme-error-log [NVME]
 *                                             health, through NVME_IOCTL_ADMIN_CMD
 *   p2pctl nvme-read NVME SLBA LEN [opts]     namespace -> buffer through p2pnvme
 *   p2pctl nvme-write NVME SLBA LEN BYTE [opts]
 *                                             buffer filled with BYTE -> namespace
 *     opts: --dev P2PBAR (default /dev/p2pbar0) | --host, --offset N (into the
 *           buffer), --bounce | --no-bounce, --prp | --sgl, --batch N (N equal
 *           requests in flight at once through P2PNVME_IOC_SUBMIT), --dmabuf
 *           (p2pmem exported by P2PBAR_IOC_EXPORT, imported by p2pnvme),
 *           --udmabuf (host memory as a dma-buf)
 *   p2pctl nvme-zeroes NVME SLBA LEN          Write Zeroes; p2pctl nvme-flush NVME: Flush
 *   p2pctl nvme-copy SRC SLBA LEN DST DLBA [--dev P2PBAR]
 *                                             controller to controller through p2pmem
 *   p2pctl read-file FILE --length LEN [--offset OFF] [--to p2pbar|host] [fopts]
 *   p2pctl write-file FILE BYTE --length LEN [--offset OFF] [--from p2pbar|host] [fopts]
 *                                             a file on a p2pnvme disk into (from)
 *                                             p2pmem, a registered dma-buf, or host
 *                                             memory: p2pnvme's file command
 *     fopts: --batch N (N transfers in flight at once), --require-p2p, --dev P2PBAR
 *
 * Options, anywhere on the line (getopt_long(): --opt VALUE or --opt=VALUE,
 * "--" ends them): -o json|normal (--json: -o json) for machine output
 * (json-c, one compact line per object); --hold keeps the p2pmem of a
 * transfer (which p2pbar zeroes when it is freed) until stdin is closed, so
 * that someone else can look at the bytes first; -h/--help (also after a
 * command: its usage). A command refuses the options of the others.
 * Numbers are decimal, 0x hex, or with a binary suffix (4k, 2M, 1G); PCI
 * addresses in any form lspci prints (03:00.0, 0000:03:00.0, 10000:00:02.0).
 * Options that exclude each other (--dev/--host, --bounce/--no-bounce,
 * --prp/--sgl, ...) are a usage error.
 * Exit status: 0, 2 for a usage error, 19 (ENODEV) for a device that is not
 * there, or the errno of the failing step (EREMOTEIO = 121 when the kernel
 * refuses P2P); see p2pctl.h.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "p2pctl.h"

/* options that exclude each other: the pairs */
static const struct {
	unsigned int a, b;
} exclusive[] = {
	{ O_DEV, O_HOST }, { O_DEV, O_UDMABUF }, { O_DEV, O_SYSFS },
	{ O_HOST, O_DMABUF }, { O_HOST, O_UDMABUF }, { O_DMABUF, O_UDMABUF },
	{ O_BOUNCE, O_NO_BOUNCE }, { O_BOUNCE, O_DMABUF }, { O_BOUNCE, O_UDMABUF },
	{ O_PRP, O_SGL },
};

#define OPT(o)		(1u << (o))
#define DMA_MASK	(OPT(O_DEV) | OPT(O_SYSFS))
#define FILE_MASK	(OPT(O_LENGTH) | OPT(O_OFFSET) | OPT(O_BATCH) | OPT(O_REQUIRE_P2P) |	\
			 OPT(O_DEV))
#define NVME_IO_MASK	(OPT(O_DEV) | OPT(O_HOST) | OPT(O_DMABUF) | OPT(O_UDMABUF) |	\
			 OPT(O_OFFSET) | OPT(O_BOUNCE) | OPT(O_NO_BOUNCE) | OPT(O_PRP) |	\
			 OPT(O_SGL) | OPT(O_BATCH))

static const struct cmd {
	const char *name, *args, *help;
	int (*fn)(struct p2pctl *c, int argc, char **argv);
	unsigned int opts;	/* OPT(O_x) of each option it takes */
	unsigned int min, max;	/* positional arguments */
} cmds[] = {
	{ "list", "", "p2pmem providers, NVMe controllers, other candidate clients",
	  cmd_list, 0, 0, 0 },
	{ "info", "[DEV]", "describe a provider (default /dev/p2pbar0)", cmd_info, 0, 0, 1 },
	{ "check", "PROVIDER CLIENT", "can CLIENT DMA to PROVIDER's memory? why, and the fix",
	  cmd_check, 0, 2, 2 },
	{ "topo", "", "the PCI tree with ACS, host bridges, p2pmem; a verdict matrix",
	  cmd_topo, 0, 0, 0 },
	{ "doctor", "", "what this machine can do for P2PDMA, what is missing, the fixes",
	  cmd_doctor, 0, 0, 0 },
	{ "verdict", "CLIENT [DEV]", "topology verdict for CLIENT (PCI address)",
	  cmd_verdict, 0, 1, 2 },
	{ "dma-read", "BLK OFF LEN [--dev DEV | --sysfs BDF]",
	  "O_DIRECT read from a block device into p2pmem", cmd_dma_read, DMA_MASK, 3, 3 },
	{ "dma-write", "BLK OFF LEN BYTE [--dev DEV | --sysfs BDF]",
	  "fill p2pmem with BYTE, O_DIRECT write to BLK", cmd_dma_write, DMA_MASK, 4, 4 },
	{ "nvme-info", "[NVME]", "describe a p2pnvme controller (/dev/p2pnvme0)",
	  cmd_nvme_info, 0, 0, 1 },
	{ "nvme-stats", "[NVME] [--interval SEC] [--reset]",
	  "counters by path, latency, bytes/s, queue depth; --reset zeroes them",
	  cmd_nvme_stats, OPT(O_INTERVAL) | OPT(O_RESET), 0, 1 },
	{ "nvme-buffers", "[NVME]",
	  "registered buffers: where each is (dmabuf-p2p and whose BAR, dmabuf-host, dmabuf-coherent)",
	  cmd_nvme_buffers, 0, 0, 1 },
	{ "nvme-id-ctrl", "[NVME]", "Identify Controller, as nvme id-ctrl",
	  cmd_nvme_id_ctrl, 0, 0, 1 },
	{ "nvme-smart", "[NVME]", "the SMART / health log, as nvme smart-log",
	  cmd_nvme_smart, 0, 0, 1 },
	{ "nvme-error-log", "[NVME]", "the error information log, as nvme error-log",
	  cmd_nvme_error_log, 0, 0, 1 },
	{ "nvme-read", "NVME SLBA LEN [opts]", "namespace -> p2pmem (or --host memory)",
	  cmd_nvme_read, NVME_IO_MASK, 3, 3 },
	{ "nvme-write", "NVME SLBA LEN BYTE [opts]", "p2pmem filled with BYTE -> namespace",
	  cmd_nvme_write, NVME_IO_MASK, 4, 4 },
	{ "nvme-zeroes", "NVME SLBA LEN", "Write Zeroes command", cmd_nvme_zeroes, 0, 3, 3 },
	{ "nvme-flush", "NVME", "Flush command", cmd_nvme_flush, 0, 1, 1 },
	{ "nvme-copy", "SRC SLBA LEN DST DLBA [--dev P2PBAR]",
	  "controller to controller through p2pmem", cmd_nvme_copy, OPT(O_DEV), 5, 5 },
	{ "read-file", "FILE --length LEN [--offset OFF] [--to p2pbar|host] [fopts]",
	  "a file on a p2pnvme disk -> p2pmem (a registered dma-buf) or host memory",
	  cmd_read_file, FILE_MASK | OPT(O_TO), 1, 1 },
	{ "write-file", "FILE BYTE --length LEN [--offset OFF] [--from p2pbar|host] [fopts]",
	  "p2pmem (or host memory) filled with BYTE -> a file on a p2pnvme disk",
	  cmd_write_file, FILE_MASK | OPT(O_FROM), 2, 2 },
};

#define FILE_OPTS \
	"    fopts: --batch N (LEN as N transfers in flight at once), --require-p2p\n" \
	"           (-EREMOTEIO rather than host memory), --dev P2PBAR (default /dev/p2pbar0)\n"

#define NVME_IO_OPTS \
	"    opts: --dev P2PBAR | --host, --offset N, --bounce | --no-bounce, --prp | --sgl,\n" \
	"          --batch N (LEN as N requests in flight at once),\n" \
	"          --dmabuf (p2pmem as a dma-buf) | --udmabuf (host memory as a dma-buf)\n"

static void usage(FILE *f)
{
	unsigned int i;

	fputs("usage: p2pctl [-o json|normal] [--hold] COMMAND ...  |  p2pctl --version\n", f);
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		char head[96];

		snprintf(head, sizeof(head), "%s %s", cmds[i].name, cmds[i].args);
		if (strlen(head) > 32)
			fprintf(f, "  %s\n  %-32s %s\n", head, "", cmds[i].help);
		else
			fprintf(f, "  %-32s %s\n", head, cmds[i].help);
		if (!strcmp(cmds[i].name, "nvme-write"))
			fputs(NVME_IO_OPTS, f);
		if (!strcmp(cmds[i].name, "write-file"))
			fputs(FILE_OPTS, f);
	}
	fputs("Options go anywhere on the line (--opt VALUE or --opt=VALUE; -- ends them):\n"
	      "-o json (or --json) for machine output, -h/--help (after a command: its\n"
	      "usage). Numbers: decimal, 0x hex, or with a binary suffix (4k, 2M, 1G).\n"
	      "--sysfs BDF uses the kernel's p2pmem/allocate.\n"
	      "--hold keeps the p2pmem of a transfer until stdin is closed (p2pbar zeroes\n"
	      "memory when it is freed): another observer can check the bytes first.\n"
	      "PCI addresses as lspci prints them (03:00.0, 0000:03:00.0).\n"
	      "Exit status: 0, 2 for a usage error, 19 (ENODEV) for a device that is not\n"
	      "there, or the errno of the failing step (121 = EREMOTEIO: the kernel\n"
	      "refuses P2P). See p2pctl(8).\n", f);
}

static const struct cmd *find_cmd(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

/* p2pctl COMMAND --help */
static int cmd_help(const char *name)
{
	const struct cmd *cmd = find_cmd(name);

	if (!cmd)
		return usage_error("unknown command '%s'", name);
	printf("usage: p2pctl %s %s\n  %s\n", name, cmd->args, cmd->help);
	if (!strncmp(name, "nvme-read", 9) || !strncmp(name, "nvme-write", 10))
		fputs(NVME_IO_OPTS, stdout);
	if (!strcmp(name, "read-file") || !strcmp(name, "write-file"))
		fputs(FILE_OPTS, stdout);
	return 0;
}

/* every option, in the order of the O_* values (a command's own ones first) */
#define O_VAL	0x100	/* getopt_long()'s value for O_x: O_VAL + O_x */
static const struct option options[] = {
	[O_DEV]		= { "dev", required_argument, NULL, O_VAL + O_DEV },
	[O_SYSFS]	= { "sysfs", required_argument, NULL, O_VAL + O_SYSFS },
	[O_HOST]	= { "host", no_argument, NULL, O_VAL + O_HOST },
	[O_DMABUF]	= { "dmabuf", no_argument, NULL, O_VAL + O_DMABUF },
	[O_UDMABUF]	= { "udmabuf", no_argument, NULL, O_VAL + O_UDMABUF },
	[O_OFFSET]	= { "offset", required_argument, NULL, O_VAL + O_OFFSET },
	[O_BOUNCE]	= { "bounce", no_argument, NULL, O_VAL + O_BOUNCE },
	[O_NO_BOUNCE]	= { "no-bounce", no_argument, NULL, O_VAL + O_NO_BOUNCE },
	[O_PRP]		= { "prp", no_argument, NULL, O_VAL + O_PRP },
	[O_SGL]		= { "sgl", no_argument, NULL, O_VAL + O_SGL },
	[O_BATCH]	= { "batch", required_argument, NULL, O_VAL + O_BATCH },
	[O_INTERVAL]	= { "interval", required_argument, NULL, O_VAL + O_INTERVAL },
	[O_RESET]	= { "reset", no_argument, NULL, O_VAL + O_RESET },
	[O_LENGTH]	= { "length", required_argument, NULL, O_VAL + O_LENGTH },
	[O_TO]		= { "to", required_argument, NULL, O_VAL + O_TO },
	[O_FROM]	= { "from", required_argument, NULL, O_VAL + O_FROM },
	[O_REQUIRE_P2P]	= { "require-p2p", no_argument, NULL, O_VAL + O_REQUIRE_P2P },
	[O_JSON]	= { "json", no_argument, NULL, O_VAL + O_JSON },
	[O_HOLD]	= { "hold", no_argument, NULL, O_VAL + O_HOLD },
	[O_FORMAT]	= { "output-format", required_argument, NULL, O_VAL + O_FORMAT },
	[O_VERSION]	= { "version", no_argument, NULL, O_VAL + O_VERSION },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int set_format(struct p2pctl *c, int o, const char *f)
{
	if (f && !strcmp(f, "json"))
		c->out = &p2pctl_json;
	else if (f && !strcmp(f, "normal"))
		c->out = &p2pctl_text;
	else
		return usage_error("%s takes json or normal", o == 'o' ? "-o" : "--output-format");
	return 0;
}

/*
 * The command @argv[1] with its positional arguments @argv[2..]; @bad is
 * the first unknown option on the line, or NULL.
 */
static int run(struct p2pctl *c, int argc, char **argv, const char *bad)
{
	const struct cmd *cmd = find_cmd(argv[1]);
	unsigned int k;

	if (!cmd)
		return usage_error("unknown command '%s'", argv[1]);
	if (bad)
		return usage_error("%s: unknown or incomplete option '%s'", argv[1], bad);
	for (k = 0; k < O_NCMD; k++)
		if (c->opt[k] && !(cmd->opts & OPT(k)))
			return usage_error("%s does not take --%s", argv[1], options[k].name);
	for (k = 0; k < ARRAY_SIZE(exclusive); k++)
		if (c->opt[exclusive[k].a] && c->opt[exclusive[k].b])
			return usage_error("%s: --%s and --%s exclude each other", argv[1],
					   options[exclusive[k].a].name,
					   options[exclusive[k].b].name);
	if ((unsigned int)argc - 2 < cmd->min || (unsigned int)argc - 2 > cmd->max)
		return usage_error("usage: %s%s%s", cmd->name, *cmd->args ? " " : "", cmd->args);
	return cmd->fn(c, argc - 2, argv + 2);
}

/*
 * The whole line through getopt_long(), then the command. @args is @argv
 * as getopt sees it, @pos gets the positional arguments (both argc + 1
 * long). "-": options and positional arguments are returned in the order
 * of the line (no permutation, POSIXLY_CORRECT or not), so args[i] is
 * always argv[i]; ":": a missing argument apart from an unknown option.
 */
static int cmdline(struct p2pctl *c, int argc, char **argv, char **args, char **pos)
{
	char bad_short[3] = "-?", ch;
	const char *bad = NULL;
	int i, o, npos = 0, help = 0, version = 0, rc;

	/* "-1" is a (bad) number for the command, not an option: getopt sees "1" */
	for (i = 0; i < argc; i++)
		args[i] = argv[i][0] == '-' && isdigit((unsigned char)argv[i][1]) ? argv[i] + 1 :
			  argv[i];
	pos[npos++] = argv[0];
	opterr = 0;
	while ((o = getopt_long(argc, args, "-:o:h", options, NULL)) != -1) {
		/* an argument that is an element of its own: as it is on the line */
		char *arg = optarg && optarg == args[optind - 1] ? argv[optind - 1] : optarg;

		switch (o) {
		case 1:
			pos[npos++] = arg;
			break;
		case 'h':
			help = 1;
			break;
		case 'o':
		case O_VAL + O_FORMAT:
			if (set_format(c, o, arg))
				return EXIT_USAGE;
			break;
		case O_VAL + O_JSON:
			c->out = &p2pctl_json;
			break;
		case O_VAL + O_HOLD:
			c->hold = true;
			break;
		case O_VAL + O_VERSION:
			version = 1;
			break;
		case ':':
			if (optopt == 'o' || optopt == O_VAL + O_FORMAT)
				return set_format(c, optopt, NULL);
			/* fall through */
		case '?':
			if (bad)
				break;
			if (optopt > 0 && optopt < O_VAL) {
				bad_short[1] = optopt;
				bad = bad_short;
			} else {
				bad = argv[optind - 1];	/* the whole element */
			}
			break;
		default:
			c->opt[o - O_VAL] = arg ? arg : "";
		}
	}
	while (optind < argc)	/* after "--" */
		pos[npos++] = argv[optind++];
	if (version && !help) {
		c->out->version(c, P2P_VERSION);
		return 0;
	}
	if (help) {
		if (npos > 1)
			return cmd_help(pos[1]);
		usage(stdout);
		return 0;
	}
	if (npos < 2) {
		if (bad)
			return usage_error("unknown or incomplete option '%s'", bad);
		usage(stderr);
		return EXIT_USAGE;
	}
	rc = run(c, npos, pos, bad);
	if (c->hold) {
		fflush(stdout);
		fflush(stderr);
		while (read(STDIN_FILENO, &ch, 1) > 0)
			;
	}
	return rc;
}

int main(int argc, char **argv)
{
	char **args = calloc(argc + 1, sizeof(*args)), **pos = calloc(argc + 1, sizeof(*pos));
	struct p2pctl c = { .out = &p2pctl_text };
	int rc = args && pos ? cmdline(&c, argc, argv, args, pos) : fail(&c, ENOMEM, "command line");

	free(args);
	free(pos);
	return rc;
}
