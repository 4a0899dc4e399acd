// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl: operate the P2PDMA suite from the shell.
 *
 *   p2pctl list                               every p2pmem provider and NVMe controller
 *   p2pctl topo                               the PCI tree annotated for P2P, verdict matrix
 *   p2pctl check PROVIDER CLIENT              the kernel's P2P verdict for two functions,
 *                                             why, and what to change; nothing bound
 *   p2pctl info [DEV]                         describe a provider (/dev/p2pbar0)
 *   p2pctl verdict CLIENT [DEV]               can CLIENT (a BDF) DMA to the provider?
 *   p2pctl dma-read BLK OFF LEN (--dev DEV | --sysfs BDF)
 *                                             O_DIRECT read of BLK into p2pmem
 *   p2pctl dma-write BLK OFF LEN BYTE (--dev DEV | --sysfs BDF)
 *                                             fill p2pmem with BYTE, O_DIRECT write to BLK
 *   p2pctl nvme-info [NVME]                   describe a p2pnvme controller (/dev/p2pnvme0)
 *   p2pctl nvme-stats [NVME] [--interval SEC] [--reset]
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
 *
 * Options, anywhere on the line (getopt_long(): --opt VALUE or --opt=VALUE,
 * "--" ends them): -o json|normal (--json: -o json) for machine output
 * (json-c, one compact line per object); --hold keeps the p2pmem of a
 * transfer (which p2pbar zeroes when it is freed) until stdin is closed, so
 * that someone else can look at the bytes first; -h/--help (also after a
 * command: its usage). A command refuses the options of the others.
 * Numbers are decimal, 0x hex, or with a binary suffix (4k, 2M, 1G).
 * Exit status: 0, 2 for a usage error, or the errno of the failing step
 * (EREMOTEIO = 121 when the kernel refuses P2P).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <json-c/json.h>

#include <linux/p2pbar.h>
#include <linux/nvme_ioctl.h>
#include <linux/p2pnvme.h>
#include <linux/udmabuf.h>

#include "p2p_verdict.h"

static int json;
static int hold;	/* keep p2pmem until stdin is closed */

/*
 * The commands' own options, which cmdline() parses (getopt_long(), anywhere
 * on the line) before the command runs: opt[O_x] is the argument of --x,
 * "" for a flag, or NULL when it is not on the line. Each command names the
 * ones it takes (cmds[] below); any other is a usage error.
 */
enum {
	O_DEV, O_SYSFS, O_HOST, O_DMABUF, O_UDMABUF, O_OFFSET, O_BOUNCE, O_NO_BOUNCE, O_PRP,
	O_SGL, O_BATCH, O_INTERVAL, O_RESET, O_NCMD,
	O_JSON = O_NCMD, O_HOLD, O_FORMAT, O_VERSION,	/* everyone's */
};

static const char *opt[O_NCMD];

/* ---- JSON output: json-c objects, each printed on one compact line ---- */

/* @o as one line of stdout, keys in the order they were added; @o is freed */
static void json_print(struct json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						      JSON_C_TO_STRING_NOSLASHESCAPE);

	if (s)
		puts(s);
	json_object_put(o);
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

static void jbool(struct json_object *o, const char *key, int v)
{
	json_object_object_add(o, key, json_object_new_boolean(v));
}

/* What to do when a device node of the suite is missing, or NULL. */
static const char *missing_hint(int err, const char *what)
{
	if (err != ENOENT)
		return NULL;
	if (!strncmp(what, "/dev/p2pbar", 11))
		return "load p2pbar and bind a device to it: modprobe p2pbar; "
		       "echo p2pbar > /sys/bus/pci/devices/BDF/driver_override; "
		       "echo BDF > /sys/bus/pci/drivers_probe (p2pctl list shows the candidates)";
	if (!strncmp(what, "/dev/p2pnvme", 12))
		return "load p2pnvme and give it a controller: modprobe p2pnvme; "
		       "echo BDF > /sys/bus/pci/devices/BDF/driver/unbind; "
		       "echo p2pnvme > /sys/bus/pci/devices/BDF/driver_override; "
		       "echo BDF > /sys/bus/pci/drivers_probe (p2pctl list shows the NVMe controllers)";
	return NULL;
}

static int fail(int err, const char *what)
{
	const char *hint = missing_hint(err, what);

	if (json) {
		struct json_object *o = json_object_new_object();

		jstr(o, "error", strerror(err));
		jint(o, "errno", err);
		jstr(o, "step", what);
		if (hint)
			jstr(o, "hint", hint);
		json_print(o);
	} else {
		fprintf(stderr, "p2pctl: %s: %s (errno %d)\n", what, strerror(err), err);
		if (hint)
			fprintf(stderr, "  %s\n", hint);
	}
	return err;
}

#define EXIT_USAGE	2

/* A usage error: one line saying what is wrong and where to look; exit 2. */
static __attribute__((format(printf, 1, 2))) int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("p2pctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see p2pctl --help)\n", stderr);
	return EXIT_USAGE;
}

/*
 * A number: decimal, 0x hex or 0 octal, optionally with a binary suffix
 * k/K, m/M, g/G, t/T (4k = 4096). Anything else, or an overflow, is -1.
 */
static int parse_num(const char *s, uint64_t *v)
{
	unsigned int shift = 0;
	unsigned long long n;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end || (shift && n > (UINT64_MAX >> shift)))
		return -1;
	*v = (uint64_t)n << shift;
	return 0;
}

/* parse_num() of argument @name of @cmd, or a usage error */
#define NUM(cmd, name, str, dst) do {						\
		uint64_t v_;							\
		if (parse_num(str, &v_))					\
			return usage_error("%s: %s: not a number: '%s'", cmd, name, str); \
		dst = v_;							\
	} while (0)

/* [DOMAIN:]BUS:DEV.FN; domains are 32 bits (VMD's start at 0x10000). */
static int parse_bdf(const char *s, uint32_t *domain, uint32_t *devid)
{
	unsigned int dom = 0, bus, dev, fn;

	if (sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) {
		dom = 0;
		if (sscanf(s, "%x:%x.%x", &bus, &dev, &fn) != 3)
			return -1;
	}
	if (bus > 0xff || dev > 0x1f || fn > 7)
		return -1;
	*domain = dom;
	*devid = bus << 8 | dev << 3 | fn;
	return 0;
}

static int open_dev(const char *path, struct p2pbar_info *info)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	memset(info, 0, sizeof(*info));
	info->argsz = sizeof(*info);
	if (ioctl(fd, P2PBAR_IOC_INFO, info)) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

static int cmd_info(const char *path)
{
	struct p2pbar_info i;
	char pci[32];
	int fd = open_dev(path, &i);

	if (fd < 0)
		return fail(-fd, path);
	snprintf(pci, sizeof(pci), "%04x:%02x:%02x.%x", i.pci_domain, i.pci_devid >> 8,
		 (i.pci_devid >> 3) & 0x1f, i.pci_devid & 7);
	if (json) {
		struct json_object *o = json_object_new_object();

		jstr(o, "device", path);
		jstr(o, "pci", pci);
		juint(o, "bar", i.bar);
		juint(o, "bar_size", i.bar_size);
		juint(o, "offset", i.offset);
		juint(o, "size", i.size);
		juint(o, "bus_addr", i.bus_addr);
		juint(o, "alloc_bytes", i.alloc_bytes);
		juint(o, "alloc_count", i.alloc_count);
		jbool(o, "published", i.flags & P2PBAR_INFO_F_PUBLISHED);
		jbool(o, "user_mmap", i.flags & P2PBAR_INFO_F_USER_MMAP);
		json_print(o);
	} else {
		printf("%s: %s BAR %u, %llu MiB p2pmem at offset %llu, bus %#llx\n"
		       "  allocated: %llu bytes in %u allocations, %spublished\n",
		       path, pci, i.bar, (unsigned long long)i.size >> 20,
		       (unsigned long long)i.offset, (unsigned long long)i.bus_addr,
		       (unsigned long long)i.alloc_bytes, i.alloc_count,
		       i.flags & P2PBAR_INFO_F_PUBLISHED ? "" : "not ");
	}
	close(fd);
	return 0;
}

/* ---- list: providers, p2pnvme controllers, candidate clients --------- */

/* @src into @dst of @len bytes, cut if need be, always terminated */
static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = 0;
}

/* the first line of a sysfs file (newline dropped), or "" */
static const char *sysfs_line(const char *dir, const char *file, char *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	buf[0] = 0;
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	return buf;
}

/* the name of the directory a sysfs link points to, or "" */
static const char *sysfs_link(const char *dir, const char *link, char *buf, size_t len)
{
	char path[512], target[512];
	ssize_t n;

	if (snprintf(path, sizeof(path), "%s/%s", dir, link) >= (int)sizeof(path))
		return strcpy(buf, "");
	n = readlink(path, target, sizeof(target) - 1);
	buf[0] = 0;
	if (n > 0) {
		target[n] = 0;
		copy_str(buf, len, strrchr(target, '/') ? strrchr(target, '/') + 1 : target);
	}
	return buf;
}

/* the /sys/class/CLASS/NAME whose device link is @bdf, or "" */
static const char *class_dev_of(const char *class, const char *bdf, char *buf, size_t len)
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
		if (!strcmp(sysfs_link(cdir, "device", dev, sizeof(dev)), bdf)) {
			copy_str(buf, len, e->d_name);
			break;
		}
	}
	if (d)
		closedir(d);
	return buf;
}

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

/*
 * Every PCI function that has p2pmem (bound p2pbar instances, NVMe CMBs,
 * anything the kernel's P2PDMA core knows), every NVMe controller (driven
 * by p2pnvme, nvme or nothing), and the other candidate clients (NICs,
 * GPUs, accelerators), one line each.
 */
static int cmd_list(void)
{
	const char *root = "/sys/bus/pci/devices";
	char *names[1024], dir[600], v[64], drv[64], node[64], sz[32], av[32], pub[8];
	unsigned int n = 0, i, shown = 0;
	struct json_object *devs = NULL;
	struct dirent *e;
	DIR *d = opendir(root);

	if (!d)
		return fail(errno, root);
	while ((e = readdir(d)) && n < 1024)
		if (e->d_name[0] != '.')
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), bdf_cmp);
	if (json)
		devs = json_object_new_array();
	else
		printf("%-13s %-9s %-10s %-11s %10s %10s %s\n", "PCI", "KIND", "DRIVER", "DEVICE",
		       "P2PMEM", "AVAILABLE", "PUBLISHED");
	for (i = 0; i < n; i++) {
		const char *kind = NULL, *client;
		int has_p2pmem, nvme;

		snprintf(dir, sizeof(dir), "%s/%s", root, names[i]);
		nvme = !strcmp(sysfs_line(dir, "class", v, sizeof(v)), "0x010802");
		client = client_kind(v);
		has_p2pmem = *sysfs_line(dir, "p2pmem/size", sz, sizeof(sz)) != 0;
		sysfs_link(dir, "driver", drv, sizeof(drv));
		node[0] = 0;
		if (!strcmp(drv, "p2pbar")) {
			kind = "provider";
			class_dev_of("p2pbar", names[i], node, sizeof(node));
		} else if (!strcmp(drv, "p2pnvme")) {
			kind = "p2pnvme";
			class_dev_of("p2pnvme", names[i], node, sizeof(node));
		} else if (has_p2pmem) {
			kind = nvme ? "nvme-cmb" : "provider";
		} else if (nvme) {
			kind = "nvme";
		} else if (client) {
			kind = client;	/* a DMA master that could use p2pmem */
		}
		if (!kind)
			continue;
		if (has_p2pmem) {
			sysfs_line(dir, "p2pmem/size", sz, sizeof(sz));
			sysfs_line(dir, "p2pmem/available", av, sizeof(av));
			sysfs_line(dir, "p2pmem/published", pub, sizeof(pub));
		} else {
			sz[0] = av[0] = pub[0] = 0;
		}
		if (json) {
			struct json_object *o = json_object_new_object();

			jstr(o, "pci", names[i]);
			jstr(o, "kind", kind);
			jstr(o, "driver", drv);
			jstr(o, "dev", node);
			if (has_p2pmem) {
				jint(o, "p2pmem_size", strtoll(sz, NULL, 10));
				jint(o, "p2pmem_available", strtoll(av, NULL, 10));
				jbool(o, "published", !strcmp(pub, "1"));
			}
			json_object_array_add(devs, o);
		} else {
			printf("%-13s %-9s %-10s %-11s %10s %10s %s\n", names[i], kind, *drv ? drv : "-",
			       *node ? node : "-", has_p2pmem ? sz : "-", has_p2pmem ? av : "-",
			       has_p2pmem ? (!strcmp(pub, "1") ? "yes" : "no") : "-");
		}
		shown++;
	}
	if (json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "devices", devs);
		json_print(o);
	} else if (!shown) {
		printf("no p2pmem provider and no NVMe controller: load p2pbar and bind a device (p2pctl --help)\n");
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	return 0;
}

/* ---- check: the kernel's P2PDMA rules, from sysfs and config space ---- */

static const char *map_name(uint32_t m);

/*
 * What drivers/pci/p2pdma.c (calc_map_type_and_dist()) decides, computed
 * without binding anything: walk up from A to the first bridge B also sits
 * under; ACS P2P redirect (RR, CR or EC) on a port of that path, or no
 * common bridge, sends the traffic through the host bridge, which the
 * kernel allows on AMD Zen and newer CPUs and for the host bridges of its
 * allowlist (which differs between kernel versions: 7.x lists more).
 * drivers/p2pbar/verdict.c is the same walk, inside the kernel.
 */
#define TOPO_DEPTH	P2PBAR_TOPO_MAX_DEPTH

struct topo {
	char name[TOPO_DEPTH][16];	/* [0] the function, up to the one on the root bus */
	int acs[TOPO_DEPTH];		/* ACS redirect set on that function */
	int len;
	char host[32];			/* "pci0000:00" */
	char host_dev[16];		/* the host bridge's representative function, or "" */
	uint16_t host_vendor, host_device;
};

/* /sys/bus/pci/devices/@bdf/config, @len bytes from @off; 0 or -1 */
static int read_config(const char *bdf, unsigned int off, void *buf, size_t len)
{
	char path[128];
	int fd, ok;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", bdf);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = pread(fd, buf, len, off) == (ssize_t)len;
	close(fd);
	return ok ? 0 : -1;
}

/* ACS Control has P2P Request/Completion Redirect or Egress Control set */
static int acs_redirect(const char *bdf)
{
	unsigned int pos = 0x100, guard = 0;
	uint32_t hdr;
	uint16_t ctrl;

	while (pos >= 0x100 && pos < 0x1000 && guard++ < 64) {
		if (read_config(bdf, pos, &hdr, 4) || hdr == 0 || hdr == ~0U)
			return 0;	/* no extended space (or not root): none */
		if ((hdr & 0xffff) == 0x000d)
			return !read_config(bdf, pos + 6, &ctrl, 2) && (ctrl & (0x04 | 0x08 | 0x20));
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

	if (read_config(bdf, 0x34, &pos, 1))
		return -1;
	while (pos >= 0x40 && guard++ < 48) {
		if (read_config(bdf, pos, cap, 2))
			return -1;
		if (cap[0] == 0x10)
			return read_config(bdf, pos + 2, &flags, 2) ? -1 : (flags >> 4) & 0xf;
		pos = cap[1];
	}
	return -1;
}

static int topo_of(const char *bdf, struct topo *t)
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
	copy_str(t->host, sizeof(t->host), parts[0]);
	for (i = n - 1; i >= 1; i--) {
		copy_str(t->name[t->len], sizeof(t->name[0]), parts[i]);
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
			copy_str(t->host_dev, sizeof(t->host_dev), e->d_name);
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
		t->host_vendor = strtoul(sysfs_line(dir, "vendor", v, sizeof(v)), NULL, 16);
		t->host_device = strtoul(sysfs_line(dir, "device", v, sizeof(v)), NULL, 16);
	}
	return 0;
}

/* cpu_supports_p2pdma(): an AMD CPU of family 0x17 (Zen) or later */
static int cpu_routes_p2p(void)
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
static void path_of(const struct topo *t, struct p2pbar_topo_path *p)
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

struct check {
	uint32_t map_type, reason, host_ok;
	int distance;
	char acs[TOPO_DEPTH * 2][16];	/* ports with ACS redirect, as the kernel lists them */
	int nacs;
	char common[16];		/* the common upstream bridge, or "" */
	const struct topo *host;	/* the host bridge that refused or allowed */
	int host_since;			/* the release whose allowlist lists it, or 0 */
};

static void check_compute(const struct topo *a, const struct topo *b, struct check *c)
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
	if (w.common >= 0)
		copy_str(c->common, sizeof(c->common), a->name[w.common]);
	/* the redirecting ports as the kernel lists them: the provider's side first */
	for (i = 0; i < a->len; i++)
		if (w.acs_provider & 1U << i)
			copy_str(c->acs[c->nacs++], sizeof(c->acs[0]), a->name[i]);
	for (i = 0; i < b->len; i++)
		if (w.acs_client & 1U << i)
			copy_str(c->acs[c->nacs++], sizeof(c->acs[0]), b->name[i]);
	if (w.host_ok != P2PBAR_HOST_UNUSED)
		c->host = w.host_client ? b : a;
}

/* the reason in words, and what to change */
static void check_explain(const struct check *c, const char *a, const char *b, char *why,
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

/* the /dev/p2pbarN bound to @bdf, if any */
static const char *provider_dev(const char *bdf, char *buf, size_t len)
{
	char name[64];

	if (!*class_dev_of("p2pbar", bdf, name, sizeof(name)))
		return NULL;
	snprintf(buf, len, "/dev/%s", name);
	return buf;
}

static int cmd_check(int argc, char **argv)
{
	struct topo ta, tb;
	struct check c;
	char why[512], fix[512], dev[96];
	const char *kdev, *other;
	struct p2pbar_verdict v = { .argsz = sizeof(v) };
	int ret, kernel = 0, agree = 1;

	if (argc != 2)
		return usage_error("usage: check PROVIDER CLIENT (PCI addresses)");
	/* without root, config space past 64 bytes reads short: ACS unknown */
	if (geteuid())
		return fail(EACCES, "check reads the ACS capabilities in config space: run it as root");
	ret = topo_of(argv[0], &ta);
	if (!ret)
		ret = topo_of(argv[1], &tb);
	if (ret)
		return fail(-ret, "no such PCI function (lspci -D lists them)");
	check_compute(&ta, &tb, &c);
	check_explain(&c, argv[0], argv[1], why, sizeof(why), fix, sizeof(fix));

	/* with a provider bound, the kernel's own verdict must be the same */
	kdev = provider_dev(argv[0], dev, sizeof(dev));
	other = argv[1];
	if (!kdev) {
		kdev = provider_dev(argv[1], dev, sizeof(dev));
		other = argv[0];
	}
	if (kdev) {
		struct p2pbar_info i;
		int fd = open_dev(kdev, &i);

		if (fd >= 0 && !parse_bdf(other, &v.client_domain, &v.client_devid) &&
		    !ioctl(fd, P2PBAR_IOC_VERDICT, &v)) {
			kernel = 1;
			agree = v.map_type == c.map_type && v.distance == c.distance;
			/*
			 * A host bridge listed from 7.2 on, on an older kernel: its
			 * allowlist lacks it, and its answer is the one that holds
			 */
			if (!agree && c.host_since > 600 && v.map_type == P2PBAR_MAP_REFUSED &&
			    c.map_type == P2PBAR_MAP_HOST_BRIDGE) {
				c.map_type = P2PBAR_MAP_REFUSED;
				c.distance = -1;
				c.host_ok = P2PBAR_HOST_NOT_LISTED;
				check_explain(&c, argv[0], argv[1], why, sizeof(why), fix, sizeof(fix));
				agree = 1;
			}
		}
		if (fd >= 0)
			close(fd);
	}
	if (json) {
		struct json_object *o = json_object_new_object();

		jstr(o, "provider", argv[0]);
		jstr(o, "client", argv[1]);
		jstr(o, "verdict", map_name(c.map_type));
		jint(o, "distance", c.distance);
		jstr(o, "reason", why);
		jstr(o, "fix", fix);
		/* the kernel's own answer when a provider is bound, else a prediction */
		jstr(o, "source", kernel ? "kernel" : "predicted");
		if (kernel) {
			struct json_object *k = json_object_new_object();

			jstr(k, "verdict", map_name(v.map_type));
			jint(k, "distance", v.distance);
			jbool(k, "agrees", agree);
			json_object_object_add(o, "kernel", k);
		}
		json_print(o);
	} else {
		printf("%s -> %s: %s", argv[0], argv[1], map_name(c.map_type));
		if (c.distance >= 0)
			printf(" (distance %d)", c.distance);
		printf("\n  why: %s\n", why);
		if (*fix)
			printf("  fix: %s\n", fix);
		if (kernel)
			printf("  kernel (%s): %s, distance %d%s\n", kdev, map_name(v.map_type),
			       v.distance, agree ? "" : "  <- DISAGREES");
		else
			printf("  predicted: no p2pbar provider is bound to either to ask the kernel\n");
	}
	if (!agree)
		return fail(EPROTO, "p2pctl's verdict and the kernel's disagree: please report it");
	return 0;
}

/* ---- topo: the PCI tree, annotated, and a verdict matrix -------------- */

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
			copy_str(names[n++], 16, e->d_name);
	if (d)
		closedir(d);
	qsort(names, n, 16, (int (*)(const void *, const void *))strcmp);
	return n;
}

/* what a function is, for the tree: "[p2pmem 64M, p2pbar0]", "[nvme]", ... */
static void annotate(const char *bdf, char *out, size_t len)
{
	char dir[300], v[64], drv[64], node[64];
	long long sz;

	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%.15s", bdf);
	out[0] = 0;
	sysfs_link(dir, "driver", drv, sizeof(drv));
	if (*drv)
		snprintf(out, len, " %s", drv);
	if (acs_redirect(bdf))
		snprintf(out + strlen(out), len - strlen(out), " [ACS redirect]");
	sz = strtoll(sysfs_line(dir, "p2pmem/size", v, sizeof(v)), NULL, 0);
	if (sz > 0) {
		node[0] = 0;
		class_dev_of("p2pbar", bdf, node, sizeof(node));
		snprintf(out + strlen(out), len - strlen(out), " [p2pmem %lld MiB%s%s]", sz >> 20,
			 *node ? ", " : "", node);
	}
}

static void tree(const char *dir, const char *prefix)
{
	char names[64][16], sub[PATH_MAX], pre[128], what[160], v[16], d[16];
	int n = children(dir, names, 64), i;

	for (i = 0; i < n; i++) {
		char path[400];

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%.15s", names[i]);
		annotate(names[i], what, sizeof(what));
		printf("%s%s %s %s:%s%s\n", prefix, i == n - 1 ? "`-" : "+-", names[i],
		       sysfs_line(path, "vendor", v, sizeof(v)) + 2,
		       sysfs_line(path, "device", d, sizeof(d)) + 2, what);
		if (snprintf(sub, sizeof(sub), "%s/%.15s", dir, names[i]) >= (int)sizeof(sub) ||
		    snprintf(pre, sizeof(pre), "%s%s", prefix, i == n - 1 ? "   " : "|  ") >=
		    (int)sizeof(pre))
			continue;	/* deeper than anything real */
		tree(sub, pre);
	}
}

/*
 * The PCI tree as lspci -tv draws it, with what matters for P2P: ACS
 * redirect on ports, p2pmem, drivers, each host bridge and whether this
 * kernel allows P2P through it; then the verdict of every provider for
 * every NVMe controller and provider (the same computation as check).
 */
static int cmd_topo(void)
{
	char hosts[32][32], prov[64][16], cli[64][16], dir[300], v[64];
	int nh = 0, np = 0, nc = 0, i, j;
	struct dirent *e;
	DIR *d;

	if (geteuid())
		return fail(EACCES, "topo reads the ACS capabilities in config space: run it as root");
	d = opendir("/sys/devices");

	while (d && (e = readdir(d)) && nh < 32)
		if (!strncmp(e->d_name, "pci", 3) && strlen(e->d_name) < 32)
			copy_str(hosts[nh++], 32, e->d_name);
	if (d)
		closedir(d);
	if (!nh)
		return fail(ENODEV, "no PCI host bridge in /sys/devices");
	qsort(hosts, nh, 32, (int (*)(const void *, const void *))strcmp);
	for (i = 0; i < nh; i++) {
		struct p2pbar_topo_path p;
		struct topo t;
		char first[1][16];
		int ok, since = 0;

		snprintf(dir, sizeof(dir), "/sys/devices/%.31s", hosts[i]);
		memset(&t, 0, sizeof(t));
		if (children(dir, first, 1) && !topo_of(first[0], &t) && t.host_vendor) {
			path_of(&t, &p);
			ok = p2p_host_allowed(&p, true, &since);
		} else {
			ok = P2PBAR_HOST_NOT_LISTED;
		}
		printf("%s host bridge%s%s: %s\n", hosts[i], *t.host_dev ? " " : "", t.host_dev,
		       cpu_routes_p2p() ? "P2P through it (AMD Zen CPU)" :
		       ok == P2PBAR_HOST_ALLOWLIST && since > 600 ?
		       "P2P through it (in the kernel's allowlist from 7.2 on)" :
		       ok == P2PBAR_HOST_ALLOWLIST ? "P2P through it (in the kernel's allowlist)" :
		       ok == P2PBAR_HOST_NEEDS_SAME ? "P2P through it between its own devices only" :
		       "no P2P through it (not in the kernel's allowlist)");
		tree(dir, "");
	}

	/* providers: functions with p2pmem; clients: NVMe controllers and providers */
	d = opendir("/sys/bus/pci/devices");
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", e->d_name);
		if (*sysfs_line(dir, "p2pmem/size", v, sizeof(v)) && np < 64)
			copy_str(prov[np++], 16, e->d_name);
		if ((*v || !strcmp(sysfs_line(dir, "class", v, sizeof(v)), "0x010802")) && nc < 64)
			copy_str(cli[nc++], 16, e->d_name);
	}
	if (d)
		closedir(d);
	qsort(prov, np, 16, (int (*)(const void *, const void *))strcmp);
	qsort(cli, nc, 16, (int (*)(const void *, const void *))strcmp);
	if (!np) {
		printf("\nno p2pmem provider (bind p2pbar to a device: p2pctl --help)\n");
		return 0;
	}
	printf("\nverdicts (provider in rows; D direct, H host bridge, - refused; distance):\n%-13s", "");
	for (j = 0; j < nc; j++)
		printf(" %-13s", cli[j]);
	printf("\n");
	for (i = 0; i < np; i++) {
		struct topo ta;

		printf("%-13s", prov[i]);
		if (topo_of(prov[i], &ta)) {
			printf("\n");
			continue;
		}
		for (j = 0; j < nc; j++) {
			struct topo tb;
			struct check c;
			char cell[16];

			if (!strcmp(prov[i], cli[j]) || topo_of(cli[j], &tb)) {
				printf(" %-13s", ".");
				continue;
			}
			check_compute(&ta, &tb, &c);
			if (c.map_type == P2PBAR_MAP_REFUSED)
				snprintf(cell, sizeof(cell), "-");
			else
				snprintf(cell, sizeof(cell), "%c %d",
					 c.map_type == P2PBAR_MAP_DIRECT ? 'D' : 'H', c.distance);
			printf(" %-13s", cell);
		}
		printf("\n");
	}
	return 0;
}

static const char *map_name(uint32_t m)
{
	return m == P2PBAR_MAP_DIRECT ? "direct" :
	       m == P2PBAR_MAP_HOST_BRIDGE ? "host-bridge" : "refused";
}

static const char *reason_name(uint32_t r)
{
	return r == P2PBAR_REASON_COMMON_BRIDGE ? "common upstream bridge" :
	       r == P2PBAR_REASON_ACS_REDIRECT ? "ACS redirect on the path" :
	       "no common upstream bridge";
}

static int cmd_verdict(const char *client, const char *path)
{
	struct p2pbar_verdict v = { .argsz = sizeof(v) };
	struct p2pbar_info i;
	int fd;

	if (parse_bdf(client, &v.client_domain, &v.client_devid))
		return fail(EINVAL, "client must be a PCI address like 0000:03:00.0");
	fd = open_dev(path, &i);
	if (fd < 0)
		return fail(-fd, path);
	if (ioctl(fd, P2PBAR_IOC_VERDICT, &v))
		return fail(errno, "P2PBAR_IOC_VERDICT");
	close(fd);
	if (json) {
		struct json_object *o = json_object_new_object();

		jstr(o, "client", client);
		jstr(o, "verdict", map_name(v.map_type));
		jint(o, "distance", v.distance);
		juint(o, "reason", v.reason);
		juint(o, "host_ok", v.host_ok);
		juint(o, "acs_devid", v.acs_devid);
		juint(o, "host_id", v.host_id);
		json_print(o);
	} else {
		printf("%s -> %s: %s (distance %d): %s\n", client, path, map_name(v.map_type),
		       v.distance, reason_name(v.reason));
	}
	return 0;
}

/* Physical address of a mapped page, from /proc/self/pagemap (root only). */
static int virt_to_phys(void *p, uint64_t *phys)
{
	uint64_t ent;
	long ps = sysconf(_SC_PAGESIZE);
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return -errno;
	if (pread(fd, &ent, 8, ((uintptr_t)p / ps) * 8) != 8) {
		close(fd);
		return -EIO;
	}
	close(fd);
	if (!(ent & (1ULL << 63)) || !(ent & ((1ULL << 55) - 1)))
		return -ENOENT;
	*phys = (ent & ((1ULL << 55) - 1)) * ps + (uintptr_t)p % ps;
	return 0;
}

/* Offset of @phys inside whichever BAR of @bdf contains it (sysfs "resource"). */
static int bar_offset_of(const char *bdf, uint64_t phys, uint64_t *off)
{
	char path[256], line[128];
	unsigned long long s, e, f;
	FILE *fp;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bdf);
	fp = fopen(path, "r");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx %llx %llx", &s, &e, &f) == 3 && e && phys >= s && phys <= e) {
			fclose(fp);
			*off = phys - s;
			return 0;
		}
	}
	fclose(fp);
	return -ENOENT;
}

struct p2pbuf {
	void *p;
	size_t len;
	int fd;
	uint64_t bar_offset;
};

/* p2pmem from the kernel's own sysfs allocator (6.2+) or from /dev/p2pbarN. */
static int get_p2pmem(const char *dev, const char *bdf, size_t len, struct p2pbuf *b)
{
	char path[256];
	uint64_t phys = 0;
	int ret;

	b->len = len;
	if (bdf) {
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/p2pmem/allocate", bdf);
		b->fd = open(path, O_RDWR | O_CLOEXEC);
		if (b->fd < 0)
			return fail(errno, path);
		b->p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
		if (b->p == MAP_FAILED)
			return fail(errno, "mmap p2pmem/allocate");
		/* touch nothing: the pages are inserted at mmap time */
		ret = virt_to_phys(b->p, &phys);
		if (!ret)
			ret = bar_offset_of(bdf, phys, &b->bar_offset);
		if (ret)
			return fail(-ret, "locating the allocation in the BAR");
		return 0;
	} else {
		struct p2pbar_alloc a = { .argsz = sizeof(a), .size = len };
		struct p2pbar_info i;

		b->fd = open_dev(dev, &i);
		if (b->fd < 0)
			return fail(-b->fd, dev);
		if (ioctl(b->fd, P2PBAR_IOC_ALLOC, &a))
			return fail(errno, "P2PBAR_IOC_ALLOC");
		b->p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, a.mmap_offset);
		if (b->p == MAP_FAILED)
			return fail(errno, "mmap");
		/* a second mapping, never unmapped, keeps the memory past free */
		if (hold && mmap(NULL, len, PROT_READ, MAP_SHARED, b->fd, a.mmap_offset) == MAP_FAILED)
			return fail(errno, "mmap (--hold)");
		b->bar_offset = a.bus_addr - i.bus_addr + i.offset;
		return 0;
	}
}

/* p2pmem of @dev exported as a dma-buf (P2PBAR_IOC_EXPORT); it owns the memory. */
static int export_p2pmem(const char *dev, size_t len, int *dfd, unsigned long long *bar_offset)
{
	struct p2pbar_export e = { .argsz = sizeof(e), .flags = P2PBAR_EXPORT_F_CLOEXEC,
				   .size = len };
	struct p2pbar_info i;
	int fd = open_dev(dev, &i);

	if (fd < 0)
		return fail(-fd, dev);
	if (ioctl(fd, P2PBAR_IOC_EXPORT, &e))
		return fail(errno, "P2PBAR_IOC_EXPORT");
	close(fd);
	/* a second reference, never closed, keeps the dma-buf past close */
	if (hold && dup(e.fd) < 0)
		return fail(errno, "dup (--hold)");
	*dfd = e.fd;
	*bar_offset = e.bus_addr - i.bus_addr + i.offset;
	return 0;
}

/* Host memory as a dma-buf: a sealed memfd through /dev/udmabuf, mapped at *map. */
static int host_dmabuf(size_t len, int *dfd, unsigned char **map)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = len };
	int mfd = memfd_create("p2pctl", MFD_ALLOW_SEALING | MFD_CLOEXEC), u;

	if (mfd < 0 || ftruncate(mfd, len) || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return fail(errno, "memfd");
	u = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (u < 0)
		return fail(errno, "/dev/udmabuf");
	c.memfd = mfd;
	*dfd = ioctl(u, UDMABUF_CREATE, &c);
	if (*dfd < 0)
		return fail(errno, "UDMABUF_CREATE");
	close(u);
	*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (*map == MAP_FAILED)
		return fail(errno, "mmap memfd");
	close(mfd);
	return 0;
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

/* SHA-256 (FIPS 180-4): one 64-byte block into the state @h */
static void sha256_block(uint32_t h[8], const unsigned char *blk)
{
	static const uint32_t k[64] = {
		0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
		0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
		0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
		0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
		0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
		0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
		0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
		0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
		0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
		0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
		0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
	};
	uint32_t w[64], v[8], t1, t2;
	int i;

#define ROR(x, r) ((x) >> (r) | (x) << (32 - (r)))
	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)blk[4 * i] << 24 | (uint32_t)blk[4 * i + 1] << 16 |
		       (uint32_t)blk[4 * i + 2] << 8 | blk[4 * i + 3];
	for (i = 16; i < 64; i++)
		w[i] = (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10)) + w[i - 7] +
		       (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 16];
	memcpy(v, h, sizeof(v));
	for (i = 0; i < 64; i++) {
		t1 = v[7] + (ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25)) +
		     ((v[4] & v[5]) ^ (~v[4] & v[6])) + k[i] + w[i];
		t2 = (ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22)) +
		     ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
#undef ROR
	for (i = 0; i < 8; i++)
		h[i] += v[i];
}

/* SHA-256 of @n bytes at @p, as hex: what sha256sum prints for them */
static void sha256_hex(const unsigned char *p, size_t n, char out[65])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	unsigned char tail[128] = { 0 };
	size_t full = n & ~(size_t)63, rest = n - full, i, tl;
	uint64_t bits = (uint64_t)n * 8;

	for (i = 0; i < full; i += 64)
		sha256_block(h, p + i);
	memcpy(tail, p + full, rest);	/* p2pmem is read as it is copied */
	tail[rest] = 0x80;
	tl = rest + 1 + 8 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[tl - 1 - i] = bits >> (8 * i);
	sha256_block(h, tail);
	if (tl == 128)
		sha256_block(h, tail + 64);
	for (i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", h[i]);
}

static int cmd_dma(int write, int argc, char **argv)
{
	const char *blk, *dev = "/dev/p2pbar0", *bdf;
	char sha[65], sum[17];
	unsigned long long off, len;
	int bfd, byte = 0, n = 0;
	struct p2pbuf b;
	ssize_t r;

	if (argc != 3 + write)
		return usage_error("usage: dma-read BLK OFF LEN | dma-write BLK OFF LEN BYTE");
	blk = argv[0];
	NUM("dma", "OFF", argv[1], off);
	NUM("dma", "LEN", argv[2], len);
	if (write) {
		NUM("dma-write", "BYTE", argv[3], byte);
		if (byte > 255)
			return usage_error("dma-write: BYTE: more than 255: '%s'", argv[3]);
	}
	if (opt[O_DEV])
		dev = opt[O_DEV];
	bdf = opt[O_SYSFS];
	n = get_p2pmem(dev, bdf, len, &b);
	if (n)
		return n;
	bfd = open(blk, (write ? O_WRONLY : O_RDONLY) | O_DIRECT | O_CLOEXEC);
	if (bfd < 0)
		return fail(errno, blk);
	if (write) {
		memset(b.p, byte, len);
		r = pwrite(bfd, b.p, len, off);
	} else {
		r = pread(bfd, b.p, len, off);
	}
	if (r < 0)
		return fail(errno, write ? "O_DIRECT pwrite from p2pmem" : "O_DIRECT pread into p2pmem");
	if ((unsigned long long)r != len)
		return fail(EIO, "short transfer");
	sha256_hex(b.p, len, sha);
	snprintf(sum, sizeof(sum), "%016llx", (unsigned long long)fnv1a(b.p, len));
	if (json) {
		struct json_object *o = json_object_new_object();

		jint(o, "bytes", r);
		juint(o, "bar_offset", b.bar_offset);
		jstr(o, "fnv1a", sum);
		jstr(o, "sha256", sha);
		json_print(o);
	} else {
		printf("%s %zd bytes, p2pmem at BAR offset %#llx, fnv1a %s, sha256 %s\n",
		       write ? "wrote" : "read", r, (unsigned long long)b.bar_offset, sum, sha);
	}
	close(bfd);
	munmap(b.p, len);
	close(b.fd);
	return 0;
}

static const char *path_name(uint32_t p)
{
	return p == P2PNVME_PATH_P2P ? "p2p" : p == P2PNVME_PATH_BOUNCE ? "bounce" :
	       p == P2PNVME_PATH_HOST ? "host" : p == P2PNVME_PATH_DMABUF ? "dmabuf" :
	       p == P2PNVME_PATH_DMABUF_HOST ? "dmabuf-host" : "none";
}

static int cmd_nvme_info(const char *path)
{
	struct p2pnvme_info i = { .argsz = sizeof(i) };
	char model[sizeof(i.model) + 1];
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return fail(errno, path);
	if (ioctl(fd, P2PNVME_IOC_INFO, &i))
		return fail(errno, "P2PNVME_IOC_INFO");
	close(fd);
	snprintf(model, sizeof(model), "%.40s", i.model);	/* not NUL terminated */
	if (json) {
		struct json_object *o = json_object_new_object();

		jstr(o, "device", path);
		juint(o, "nsid", i.nsid);
		juint(o, "lba_size", 1u << i.lba_shift);
		juint(o, "nlb", i.nlb);
		juint(o, "max_xfer", i.max_xfer);
		juint(o, "io_queues", i.nr_io_queues);
		juint(o, "queue_depth", i.queue_depth);
		jbool(o, "sgl", i.flags & P2PNVME_INFO_F_SGL);
		jbool(o, "polled", i.flags & P2PNVME_INFO_F_POLLED);
		jstr(o, "model", model);
		json_print(o);
	} else {
		printf("%s: %s, namespace %u: %llu x %u bytes; %u I/O queues of %u (%s), %u KiB per command%s\n",
		       path, model, i.nsid, (unsigned long long)i.nlb, 1u << i.lba_shift,
		       i.nr_io_queues, i.queue_depth,
		       i.flags & P2PNVME_INFO_F_POLLED ? "polled" : "MSI-X", i.max_xfer >> 10,
		       i.flags & P2PNVME_INFO_F_SGL ? ", SGL" : "");
	}
	return 0;
}

/* ---- health: Identify, SMART and error logs through NVME_IOCTL_ADMIN_CMD -- */

/* little-endian fields of a log or identify page */
static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/*
 * One admin command through the passthrough p2pnvme shares with nvme-pci
 * (and nvme-cli): 0, the NVMe status (> 0), or -errno.
 */
static int admin(const char *dev, uint8_t opcode, uint32_t nsid, uint32_t cdw10, void *buf,
		 uint32_t len)
{
	struct nvme_admin_cmd cmd = { .opcode = opcode, .nsid = nsid, .cdw10 = cdw10,
				      .addr = (uintptr_t)buf, .data_len = len };
	int fd = open(dev, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
	if (ret < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int admin_fail(const char *what, int ret)
{
	if (ret < 0)
		return fail(-ret, what);
	if (json) {
		struct json_object *o = json_object_new_object();

		jstr(o, "error", "NVMe status");
		jint(o, "status", ret);
		jstr(o, "step", what);
		json_print(o);
	} else {
		fprintf(stderr, "p2pctl: %s: NVMe status %#x\n", what, ret);
	}
	return EIO;
}

/* printable, trimmed copy of an identify string field */
static void id_str(char *dst, const uint8_t *src, int n)
{
	int i;

	for (i = 0; i < n; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : ' ';
	while (n && dst[n - 1] == ' ')
		n--;
	dst[n] = 0;
}

static int cmd_nvme_id_ctrl(const char *dev)
{
	uint8_t id[4096];
	char sn[21], mn[41], fr[9];
	int ret = admin(dev, 0x06, 0, 1 /* CNS controller */, id, sizeof(id));

	if (ret)
		return admin_fail("Identify Controller", ret);
	id_str(sn, id + 4, 20);
	id_str(mn, id + 24, 40);
	id_str(fr, id + 64, 8);
	if (json) {
		struct json_object *o = json_object_new_object();

		juint(o, "vid", le(id, 2));
		juint(o, "ssvid", le(id + 2, 2));
		jstr(o, "sn", sn);
		jstr(o, "mn", mn);
		jstr(o, "fr", fr);
		juint(o, "mdts", id[77]);
		juint(o, "cntlid", le(id + 78, 2));
		juint(o, "ver", le(id + 80, 4));
		juint(o, "oacs", le(id + 256, 2));
		juint(o, "acl", id[258]);
		juint(o, "elpe", id[262]);
		juint(o, "sqes", id[512]);
		juint(o, "cqes", id[513]);
		juint(o, "nn", le(id + 516, 4));
		juint(o, "sgls", le(id + 536, 4));
		json_print(o);
	} else {
		printf("vid     : %#06llx\nssvid   : %#06llx\nsn      : %s\nmn      : %s\nfr      : %s\n"
		       "mdts    : %u\ncntlid  : %llu\nver     : %#llx\nelpe    : %u\nnn      : %llu\n",
		       (unsigned long long)le(id, 2), (unsigned long long)le(id + 2, 2), sn, mn, fr,
		       id[77], (unsigned long long)le(id + 78, 2), (unsigned long long)le(id + 80, 4),
		       id[262], (unsigned long long)le(id + 516, 4));
	}
	return 0;
}

/* Get Log Page @lid of @len bytes (a dword multiple) for all namespaces */
static int get_log(const char *dev, uint8_t lid, void *buf, uint32_t len)
{
	return admin(dev, 0x02, 0xffffffff, ((len / 4 - 1) << 16) | lid, buf, len);
}

static int cmd_nvme_smart(const char *dev)
{
	static const struct { const char *name; int off, len; } f[] = {
		{ "critical_warning", 0, 1 }, { "temperature", 1, 2 }, { "avail_spare", 3, 1 },
		{ "spare_thresh", 4, 1 }, { "percent_used", 5, 1 },
		{ "data_units_read", 32, 8 }, { "data_units_written", 48, 8 },
		{ "host_read_commands", 64, 8 }, { "host_write_commands", 80, 8 },
		{ "controller_busy_time", 96, 8 }, { "power_cycles", 112, 8 },
		{ "power_on_hours", 128, 8 }, { "unsafe_shutdowns", 144, 8 },
		{ "media_errors", 160, 8 }, { "num_err_log_entries", 176, 8 },
	};
	struct json_object *o = NULL;
	uint8_t log[512];
	unsigned int i;
	int ret = get_log(dev, 0x02, log, sizeof(log));

	if (ret)
		return admin_fail("Get Log Page (SMART / Health)", ret);
	if (json)
		o = json_object_new_object();
	else
		printf("SMART / health log of %s\n", dev);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		unsigned long long v = le(log + f[i].off, f[i].len);

		if (json)
			juint(o, f[i].name, v);
		else if (!strcmp(f[i].name, "temperature"))
			printf("%-24s: %llu K (%lld C)\n", f[i].name, v, (long long)v - 273);
		else
			printf("%-24s: %llu\n", f[i].name, v);
	}
	if (json)
		json_print(o);
	return 0;
}

static int cmd_nvme_error_log(const char *dev)
{
	struct json_object *errs = NULL;
	uint8_t id[4096], log[256 * 64];
	unsigned int n, i, shown = 0;
	int ret = admin(dev, 0x06, 0, 1, id, sizeof(id));

	if (ret)
		return admin_fail("Identify Controller", ret);
	n = id[262] + 1;	/* ELPE: entries - 1 */
	if (n * 64 > 8192)
		n = 8192 / 64;	/* what one passthrough takes */
	ret = get_log(dev, 0x01, log, n * 64);
	if (ret)
		return admin_fail("Get Log Page (Error Information)", ret);
	if (json)
		errs = json_object_new_array();
	else
		printf("Error information log of %s: %u entries\n", dev, n);
	for (i = 0; i < n; i++) {
		const uint8_t *e = log + i * 64;
		unsigned long long count = le(e, 8);

		if (!count)
			continue;
		if (json) {
			struct json_object *o = json_object_new_object();

			juint(o, "error_count", count);
			juint(o, "sqid", le(e + 8, 2));
			juint(o, "cmdid", le(e + 10, 2));
			juint(o, "status_field", le(e + 12, 2));
			juint(o, "lba", le(e + 16, 8));
			juint(o, "nsid", le(e + 24, 4));
			json_object_array_add(errs, o);
		} else {
			printf("  #%llu: sq %llu cid %llu status %#llx lba %llu nsid %llu\n", count,
			       (unsigned long long)le(e + 8, 2), (unsigned long long)le(e + 10, 2),
			       (unsigned long long)le(e + 12, 2) >> 1, (unsigned long long)le(e + 16, 8),
			       (unsigned long long)le(e + 24, 4));
		}
		shown++;
	}
	if (json) {
		struct json_object *o = json_object_new_object();

		juint(o, "entries", n);
		json_object_object_add(o, "errors", errs);
		json_print(o);
	} else if (!shown) {
		printf("  no errors logged\n");
	}
	return 0;
}

/*
 * The transfer @io as @n entries of one P2PNVME_IOC_SUBMIT, all in flight at
 * once; @io gets the path of the last entry, or the status of the first
 * failed one.
 */
static int submit_split(int fd, struct p2pnvme_io *io, unsigned int n)
{
	struct p2pnvme_info info = { .argsz = sizeof(info) };
	struct p2pnvme_submit sub = { .argsz = sizeof(sub), .nr = n };
	struct p2pnvme_io *ios = calloc(n, sizeof(*ios));
	uint64_t part = io->len / n;
	unsigned int i;
	int ret;

	if (!ios || !n || io->len % n)
		return free(ios), EINVAL;
	if (ioctl(fd, P2PNVME_IOC_INFO, &info))
		return free(ios), errno;
	for (i = 0; i < n; i++) {
		ios[i] = *io;
		ios[i].len = part;
		ios[i].slba = io->slba + i * (part >> info.lba_shift);
		ios[i].addr = io->addr + i * part;
	}
	sub.ios = (uintptr_t)ios;
	ret = ioctl(fd, P2PNVME_IOC_SUBMIT, &sub) ? errno : 0;
	io->path = ios[n - 1].path;
	for (i = 0; i < n; i++) {
		if (ios[i].result) {
			io->status = ios[i].status;
			break;
		}
	}
	if (ret && sub.failed < n && !json)
		fprintf(stderr, "p2pctl: entry %u of %u made the batch fail\n", sub.failed, n);
	free(ios);
	return ret;
}

/* One counter of /sys/class/p2pnvme/NAME/stats, or -1. */
static long long nvme_stat(const char *name, const char *counter)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/stats/%s", name, counter);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* The controller's counters: transfers and bytes by path, then failures. */
/* stats/latency_<dir>_<path>: count sum_ns max_ns hist[0..]; 0 or -1 */
#define LAT_BUCKETS 24
struct lat { long long count, sum, max, hist[LAT_BUCKETS]; };

static int nvme_lat(const char *name, const char *dir, const char *path, struct lat *l)
{
	char file[256];
	FILE *f;
	int i, ok;

	snprintf(file, sizeof(file), "/sys/class/p2pnvme/%s/stats/latency_%s_%s", name, dir, path);
	f = fopen(file, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%lld %lld %lld", &l->count, &l->sum, &l->max) == 3;
	for (i = 0; ok && i < LAT_BUCKETS; i++)
		ok = fscanf(f, "%lld", &l->hist[i]) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

static int cmd_nvme_stats(int argc, char **argv)
{
	static const char * const paths[] = { "p2p", "bounce", "host", "dmabuf" };
	static const char * const other[] = { "refused", "errors", "timeouts", "aborts",
					       "resets", "cancelled", "irqs", "queue_full_waits",
					       "queue_full_requeued" };
	static const char * const dirs[] = { "read", "write" };
	const char *dev = "/dev/p2pnvme0", *name;
	long long b0[4] = { 0 }, b1[4] = { 0 };
	uint64_t interval = 0;
	char c[32], file[256], q[512];
	unsigned int i, d;
	int k;

	if (argc > 1)
		return usage_error("usage: nvme-stats [NVME] [--interval SEC] [--reset]");
	if (argc)
		dev = argv[0];
	if (opt[O_INTERVAL])
		NUM("nvme-stats", "--interval", opt[O_INTERVAL], interval);
	name = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
	snprintf(c, sizeof(c), "reads_%s", paths[0]);
	if (nvme_stat(name, c) < 0)
		return fail(ENODEV, dev);
	/* bytes/s over the interval: two samples of the byte counters */
	for (i = 0; i < 4; i++) {
		snprintf(c, sizeof(c), "bytes_%s", paths[i]);
		b0[i] = nvme_stat(name, c);
	}
	if (interval) {
		sleep(interval);
		for (i = 0; i < 4; i++) {
			snprintf(c, sizeof(c), "bytes_%s", paths[i]);
			b1[i] = nvme_stat(name, c);
		}
	}
	snprintf(file, sizeof(file), "/sys/class/p2pnvme/%s", name);
	sysfs_line(file, "stats/inflight", q, sizeof(q));
	if (json) {
		struct json_object *o = json_object_new_object(), *a, *lat;
		const char *p;
		char *end;

		jstr(o, "device", dev);
		for (i = 0; i < 4; i++) {
			snprintf(c, sizeof(c), "reads_%s", paths[i]);
			jint(o, c, nvme_stat(name, c));
			snprintf(c, sizeof(c), "writes_%s", paths[i]);
			jint(o, c, nvme_stat(name, c));
			snprintf(c, sizeof(c), "bytes_%s", paths[i]);
			jint(o, c, interval ? b1[i] : b0[i]);
			if (interval) {
				double rate = (double)(b1[i] - b0[i]) / interval;
				char txt[64];

				/* json-c's own doubles print otherwise: this text, as ever */
				snprintf(txt, sizeof(txt), "%.0f", rate);
				snprintf(c, sizeof(c), "bytes_per_s_%s", paths[i]);
				json_object_object_add(o, c, json_object_new_double_s(rate, txt));
			}
		}
		for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
			jint(o, other[i], nvme_stat(name, other[i]));
		a = json_object_new_array();
		for (p = q; ; p = end) {	/* "0 3 1": one count per queue */
			long long v = strtoll(p, &end, 10);

			if (end == p)
				break;
			json_object_array_add(a, json_object_new_int64(v));
		}
		json_object_object_add(o, "inflight", a);
		lat = json_object_new_object();
		for (d = 0; d < 2; d++) {
			struct json_object *dir = json_object_new_object();

			for (i = 0; i < 4; i++) {
				struct json_object *one = json_object_new_object();
				struct json_object *hist = json_object_new_array();
				struct lat l = { 0 };

				nvme_lat(name, dirs[d], paths[i], &l);
				jint(one, "count", l.count);
				jint(one, "mean_ns", l.count ? l.sum / l.count : 0);
				jint(one, "max_ns", l.max);
				for (k = 0; k < LAT_BUCKETS; k++)
					json_object_array_add(hist,
							      json_object_new_int64(l.hist[k]));
				json_object_object_add(one, "hist_log2_us", hist);
				json_object_object_add(dir, paths[i], one);
			}
			json_object_object_add(lat, dirs[d], dir);
		}
		json_object_object_add(o, "latency", lat);
		json_print(o);
	} else {
		printf("%s       reads     writes        bytes%s\n", name, interval ? "      bytes/s" : "");
		for (i = 0; i < 4; i++) {
			long long r, w;

			snprintf(c, sizeof(c), "reads_%s", paths[i]);
			r = nvme_stat(name, c);
			snprintf(c, sizeof(c), "writes_%s", paths[i]);
			w = nvme_stat(name, c);
			printf("  %-7s %10lld %10lld %12lld", paths[i], r, w, interval ? b1[i] : b0[i]);
			if (interval)
				printf(" %12.0f", (double)(b1[i] - b0[i]) / interval);
			printf("\n");
		}
		for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
			printf("%s%s %lld", i ? ", " : "  ", other[i], nvme_stat(name, other[i]));
		printf("\n  in flight per queue: %s\n  latency     count    mean us     max us\n", q);
		for (d = 0; d < 2; d++) {
			for (i = 0; i < 4; i++) {
				struct lat l = { 0 };

				if (nvme_lat(name, dirs[d], paths[i], &l) || !l.count)
					continue;
				printf("  %-5s %-6s %8lld %10.1f %10.1f\n", dirs[d], paths[i], l.count,
				       l.sum / 1000.0 / l.count, l.max / 1000.0);
			}
		}
	}
	if (opt[O_RESET]) {
		FILE *f;

		snprintf(file, sizeof(file), "/sys/class/p2pnvme/%s/stats/reset", name);
		f = fopen(file, "w");
		if (!f || fputs("1\n", f) < 0 || fclose(f))
			return fail(errno, "stats/reset");
	}
	return 0;
}

static int cmd_nvme_io(int write, int argc, char **argv)
{
	struct p2pnvme_io io = { .argsz = sizeof(io) };
	const char *dev = "/dev/p2pbar0";
	unsigned long long boff = 0, off = 0;
	int i, fd, byte = 0, err, dfd = -1;
	unsigned int batch = 0;
	unsigned char *buf = NULL;
	char sum[40] = "", sha[65] = "";
	size_t maplen;
	struct p2pbuf b = { .fd = -1 };

	if (argc != 3 + write)
		return usage_error("usage: nvme-read NVME SLBA LEN | nvme-write NVME SLBA LEN BYTE");
	io.op = write ? P2PNVME_OP_WRITE : P2PNVME_OP_READ;
	NUM("nvme-io", "SLBA", argv[1], io.slba);
	NUM("nvme-io", "LEN", argv[2], io.len);
	if (write) {
		NUM("nvme-write", "BYTE", argv[3], byte);
		if (byte > 255)
			return usage_error("nvme-write: BYTE: more than 255: '%s'", argv[3]);
	}
	if (opt[O_DEV])
		dev = opt[O_DEV];
	if (opt[O_OFFSET])
		NUM("nvme-io", "--offset", opt[O_OFFSET], off);
	if (opt[O_BATCH])
		NUM("nvme-io", "--batch", opt[O_BATCH], batch);
	io.flags |= (opt[O_BOUNCE] ? P2PNVME_IO_F_BOUNCE : 0) |
		    (opt[O_NO_BOUNCE] ? P2PNVME_IO_F_NO_BOUNCE : 0) |
		    (opt[O_PRP] ? P2PNVME_IO_F_PRP : 0) | (opt[O_SGL] ? P2PNVME_IO_F_SGL : 0);
	maplen = (off + io.len + 4095) & ~4095ULL;
	if (opt[O_DMABUF]) {
		i = export_p2pmem(dev, maplen, &dfd, &boff);
		if (i)
			return i;
		/* filled and checksummed through the dma-buf's own CPU mapping */
		buf = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
		if (buf == MAP_FAILED)
			return fail(errno, "mmap of the exported dma-buf");
	} else if (opt[O_UDMABUF]) {
		i = host_dmabuf(maplen, &dfd, &buf);
		if (i)
			return i;
	} else if (opt[O_HOST]) {
		buf = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			return fail(errno, "mmap host buffer");
	} else {
		i = get_p2pmem(dev, NULL, maplen, &b);
		if (i)
			return i;
		buf = b.p;
		boff = b.bar_offset;
	}
	if (write)
		memset(buf + off, byte, io.len);
	if (dfd >= 0) {
		io.flags |= P2PNVME_IO_F_DMABUF;
		io.dmabuf_fd = dfd;
		io.addr = off;
	} else {
		io.addr = (uintptr_t)(buf + off);
	}
	fd = open(argv[0], O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail(errno, argv[0]);
	if (batch)
		err = submit_split(fd, &io, batch);
	else
		err = ioctl(fd, P2PNVME_IOC_IO, &io) ? errno : 0;
	if (err) {
		if (json) {
			struct json_object *o = json_object_new_object();

			jstr(o, "error", strerror(err));
			jint(o, "errno", err);
			juint(o, "status", io.status);
			json_print(o);
		} else {
			fprintf(stderr, "p2pctl: %s: %s (errno %d, NVMe status %#x)\n",
				batch ? "P2PNVME_IOC_SUBMIT" : "P2PNVME_IOC_IO", strerror(err), err,
				io.status);
		}
		return err;
	}
	close(fd);
	if (buf) {
		snprintf(sum, sizeof(sum), "%016llx", (unsigned long long)fnv1a(buf + off, io.len));
		sha256_hex(buf + off, io.len, sha);
	}
	if (json) {
		struct json_object *o = json_object_new_object();

		juint(o, "bytes", io.len);
		juint(o, "entries", batch ? batch : 1);
		jstr(o, "path", path_name(io.path));
		juint(o, "bar_offset", boff + off);
		jstr(o, "fnv1a", sum);
		jstr(o, "sha256", sha);
		json_print(o);
	} else {
		printf("%s %llu bytes at LBA %llu via %s (%u request%s)%s%s%s%s\n",
		       write ? "wrote" : "read", (unsigned long long)io.len,
		       (unsigned long long)io.slba, path_name(io.path), batch ? batch : 1,
		       batch > 1 ? "s in one batch" : "", *sum ? ", fnv1a " : "", sum,
		       *sha ? ", sha256 " : "", sha);
	}
	if (buf)
		munmap(buf, maplen);
	if (b.fd >= 0)
		close(b.fd);
	if (dfd >= 0)
		close(dfd);
	return 0;
}

/* Write Zeroes over an LBA range, or Flush (no range). */
static int cmd_nvme_nodata(int op, int argc, char **argv)
{
	struct p2pnvme_io io = { .argsz = sizeof(io), .op = op };
	int fd;

	if (argc < 1 || (op == P2PNVME_OP_WRITE_ZEROES && argc < 3))
		return usage_error("usage: nvme-zeroes NVME SLBA LEN | nvme-flush NVME");
	if (op == P2PNVME_OP_WRITE_ZEROES) {
		NUM("nvme-zeroes", "SLBA", argv[1], io.slba);
		NUM("nvme-zeroes", "LEN", argv[2], io.len);
	}
	fd = open(argv[0], O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail(errno, argv[0]);
	if (ioctl(fd, P2PNVME_IOC_IO, &io))
		return fail(errno, op == P2PNVME_OP_FLUSH ? "flush" : "write zeroes");
	close(fd);
	return 0;
}

/* NVMe -> p2pmem -> NVMe: the data never touches host memory. */
static int cmd_nvme_copy(int argc, char **argv)
{
	struct p2pnvme_io rd = { .argsz = sizeof(rd), .op = P2PNVME_OP_READ };
	struct p2pnvme_io wr = { .argsz = sizeof(wr), .op = P2PNVME_OP_WRITE };
	const char *dev = "/dev/p2pbar0";
	struct p2pbuf b = { .fd = -1 };
	int sfd, dfd, ret;

	if (argc != 5)
		return usage_error("usage: nvme-copy SRC SLBA LEN DST DLBA [--dev P2PBAR]");
	if (opt[O_DEV])
		dev = opt[O_DEV];
	NUM("nvme-copy", "SLBA", argv[1], rd.slba);
	NUM("nvme-copy", "LEN", argv[2], rd.len);
	wr.len = rd.len;
	NUM("nvme-copy", "DLBA", argv[4], wr.slba);
	ret = get_p2pmem(dev, NULL, (rd.len + 4095) & ~4095ULL, &b);
	if (ret)
		return ret;
	rd.addr = wr.addr = (uintptr_t)b.p;
	sfd = open(argv[0], O_RDWR | O_CLOEXEC);
	dfd = open(argv[3], O_RDWR | O_CLOEXEC);
	if (sfd < 0 || dfd < 0)
		return fail(errno, "open controllers");
	if (ioctl(sfd, P2PNVME_IOC_IO, &rd))
		return fail(errno, "read from the source");
	if (ioctl(dfd, P2PNVME_IOC_IO, &wr))
		return fail(errno, "write to the destination");
	if (json) {
		struct json_object *o = json_object_new_object();

		juint(o, "bytes", rd.len);
		jstr(o, "read_path", path_name(rd.path));
		jstr(o, "write_path", path_name(wr.path));
		juint(o, "bar_offset", b.bar_offset);
		json_print(o);
	} else {
		printf("copied %llu bytes %s LBA %llu -> %s LBA %llu through p2pmem (%s, %s)\n",
		       (unsigned long long)rd.len, argv[0], (unsigned long long)rd.slba, argv[3],
		       (unsigned long long)wr.slba, path_name(rd.path), path_name(wr.path));
	}
	close(sfd);
	close(dfd);
	munmap(b.p, b.len);
	close(b.fd);
	return 0;
}

#define OPT(o)		(1u << (o))
#define DMA_MASK	(OPT(O_DEV) | OPT(O_SYSFS))
#define NVME_IO_MASK	(OPT(O_DEV) | OPT(O_HOST) | OPT(O_DMABUF) | OPT(O_UDMABUF) |	\
			 OPT(O_OFFSET) | OPT(O_BOUNCE) | OPT(O_NO_BOUNCE) | OPT(O_PRP) |	\
			 OPT(O_SGL) | OPT(O_BATCH))

static const struct cmd {
	const char *name, *args, *help;
	unsigned int opts;	/* OPT(O_x) of each option it takes */
	unsigned int min, max;	/* positional arguments */
} cmds[] = {
	{ "list", "", "p2pmem providers, NVMe controllers, other candidate clients", 0, 0, 0 },
	{ "info", "[DEV]", "describe a provider (default /dev/p2pbar0)", 0, 0, 1 },
	{ "check", "PROVIDER CLIENT", "can CLIENT DMA to PROVIDER's memory? why, and the fix", 0, 2, 2 },
	{ "topo", "", "the PCI tree with ACS, host bridges, p2pmem; a verdict matrix", 0, 0, 0 },
	{ "verdict", "CLIENT [DEV]", "topology verdict for CLIENT (PCI address)", 0, 1, 2 },
	{ "dma-read", "BLK OFF LEN [--dev DEV | --sysfs BDF]",
	  "O_DIRECT read from a block device into p2pmem", DMA_MASK, 3, 3 },
	{ "dma-write", "BLK OFF LEN BYTE [--dev DEV | --sysfs BDF]",
	  "fill p2pmem with BYTE, O_DIRECT write to BLK", DMA_MASK, 4, 4 },
	{ "nvme-info", "[NVME]", "describe a p2pnvme controller (/dev/p2pnvme0)", 0, 0, 1 },
	{ "nvme-stats", "[NVME] [--interval SEC] [--reset]",
	  "counters by path, latency, bytes/s, queue depth; --reset zeroes them",
	  OPT(O_INTERVAL) | OPT(O_RESET), 0, 1 },
	{ "nvme-id-ctrl", "[NVME]", "Identify Controller, as nvme id-ctrl", 0, 0, 1 },
	{ "nvme-smart", "[NVME]", "the SMART / health log, as nvme smart-log", 0, 0, 1 },
	{ "nvme-error-log", "[NVME]", "the error information log, as nvme error-log", 0, 0, 1 },
	{ "nvme-read", "NVME SLBA LEN [opts]", "namespace -> p2pmem (or --host memory)",
	  NVME_IO_MASK, 3, 3 },
	{ "nvme-write", "NVME SLBA LEN BYTE [opts]", "p2pmem filled with BYTE -> namespace",
	  NVME_IO_MASK, 4, 4 },
	{ "nvme-zeroes", "NVME SLBA LEN", "Write Zeroes command", 0, 3, 3 },
	{ "nvme-flush", "NVME", "Flush command", 0, 1, 1 },
	{ "nvme-copy", "SRC SLBA LEN DST DLBA [--dev P2PBAR]",
	  "controller to controller through p2pmem", OPT(O_DEV), 5, 5 },
};

#define NVME_IO_OPTS \
	"    opts: --dev P2PBAR | --host, --offset N, --bounce | --no-bounce, --prp | --sgl,\n" \
	"          --batch N (LEN as N requests in flight at once),\n" \
	"          --dmabuf (p2pmem as a dma-buf) | --udmabuf (host memory as a dma-buf)\n"

static void usage(FILE *f)
{
	unsigned int i;

	fputs("usage: p2pctl [-o json|normal] [--hold] COMMAND ...  |  p2pctl --version\n", f);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char head[96];

		snprintf(head, sizeof(head), "%s %s", cmds[i].name, cmds[i].args);
		if (strlen(head) > 32)
			fprintf(f, "  %s\n  %-32s %s\n", head, "", cmds[i].help);
		else
			fprintf(f, "  %-32s %s\n", head, cmds[i].help);
		if (!strcmp(cmds[i].name, "nvme-write"))
			fputs(NVME_IO_OPTS, f);
	}
	fputs("Options go anywhere on the line (--opt VALUE or --opt=VALUE; -- ends them):\n"
	      "-o json (or --json) for machine output, -h/--help (after a command: its\n"
	      "usage). Numbers: decimal, 0x hex, or with a binary suffix (4k, 2M, 1G).\n"
	      "--sysfs BDF uses the kernel's p2pmem/allocate.\n"
	      "--hold keeps the p2pmem of a transfer until stdin is closed (p2pbar zeroes\n"
	      "memory when it is freed): another observer can check the bytes first.\n"
	      "Exit status: 0, 2 for a usage error, or the errno of the failing step\n"
	      "(121 = EREMOTEIO: the kernel refuses P2P). See p2pctl(8).\n", f);
}

static const struct cmd *find_cmd(const char *name)
{
	unsigned int i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
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
	[O_JSON]	= { "json", no_argument, NULL, O_VAL + O_JSON },
	[O_HOLD]	= { "hold", no_argument, NULL, O_VAL + O_HOLD },
	[O_FORMAT]	= { "output-format", required_argument, NULL, O_VAL + O_FORMAT },
	[O_VERSION]	= { "version", no_argument, NULL, O_VAL + O_VERSION },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int set_format(int c, const char *f)
{
	if (f && !strcmp(f, "json"))
		json = 1;
	else if (f && !strcmp(f, "normal"))
		json = 0;
	else
		return usage_error("%s takes json or normal", c == 'o' ? "-o" : "--output-format");
	return 0;
}

/*
 * The command @argv[1] with its positional arguments @argv[2..]; @bad is
 * the first unknown option on the line, or NULL.
 */
static int run(int argc, char **argv, const char *bad)
{
	const struct cmd *cmd = find_cmd(argv[1]);
	unsigned int k;

	if (!cmd)
		return usage_error("unknown command '%s'", argv[1]);
	if (bad)
		return usage_error("%s: unknown or incomplete option '%s'", argv[1], bad);
	for (k = 0; k < O_NCMD; k++)
		if (opt[k] && !(cmd->opts & OPT(k)))
			return usage_error("%s does not take --%s", argv[1], options[k].name);
	if ((unsigned int)argc - 2 < cmd->min || (unsigned int)argc - 2 > cmd->max)
		return usage_error("usage: %s%s%s", cmd->name, *cmd->args ? " " : "", cmd->args);
	if (!strcmp(argv[1], "topo"))
		return argc > 2 ? usage_error("usage: topo") : cmd_topo();
	if (!strcmp(argv[1], "check"))
		return cmd_check(argc - 2, argv + 2);
	if (!strcmp(argv[1], "list"))
		return argc > 2 ? usage_error("usage: list") : cmd_list();
	if (!strcmp(argv[1], "info"))
		return cmd_info(argc > 2 ? argv[2] : "/dev/p2pbar0");
	if (!strcmp(argv[1], "verdict")) {
		if (argc < 3)
			return usage_error("usage: verdict CLIENT [DEV]");
		return cmd_verdict(argv[2], argc > 3 ? argv[3] : "/dev/p2pbar0");
	}
	if (!strcmp(argv[1], "dma-read"))
		return cmd_dma(0, argc - 2, argv + 2);
	if (!strcmp(argv[1], "dma-write"))
		return cmd_dma(1, argc - 2, argv + 2);
	if (!strcmp(argv[1], "nvme-info"))
		return cmd_nvme_info(argc > 2 ? argv[2] : "/dev/p2pnvme0");
	if (!strcmp(argv[1], "nvme-id-ctrl"))
		return cmd_nvme_id_ctrl(argc > 2 ? argv[2] : "/dev/p2pnvme0");
	if (!strcmp(argv[1], "nvme-smart"))
		return cmd_nvme_smart(argc > 2 ? argv[2] : "/dev/p2pnvme0");
	if (!strcmp(argv[1], "nvme-error-log"))
		return cmd_nvme_error_log(argc > 2 ? argv[2] : "/dev/p2pnvme0");
	if (!strcmp(argv[1], "nvme-stats"))
		return cmd_nvme_stats(argc - 2, argv + 2);
	if (!strcmp(argv[1], "nvme-read"))
		return cmd_nvme_io(0, argc - 2, argv + 2);
	if (!strcmp(argv[1], "nvme-write"))
		return cmd_nvme_io(1, argc - 2, argv + 2);
	if (!strcmp(argv[1], "nvme-zeroes"))
		return cmd_nvme_nodata(P2PNVME_OP_WRITE_ZEROES, argc - 2, argv + 2);
	if (!strcmp(argv[1], "nvme-flush"))
		return cmd_nvme_nodata(P2PNVME_OP_FLUSH, argc - 2, argv + 2);
	return cmd_nvme_copy(argc - 2, argv + 2);
}

/*
 * The whole line through getopt_long(), then the command. @args is @argv
 * as getopt sees it, @pos gets the positional arguments (both argc + 1
 * long). "-": options and positional arguments are returned in the order
 * of the line (no permutation, POSIXLY_CORRECT or not), so args[i] is
 * always argv[i]; ":": a missing argument apart from an unknown option.
 */
static int cmdline(int argc, char **argv, char **args, char **pos)
{
	char bad_short[3] = "-?", c;
	const char *bad = NULL;
	int i, o, npos = 0, help = 0, rc;

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
			if (set_format(o, arg))
				return EXIT_USAGE;
			break;
		case O_VAL + O_JSON:
			json = 1;
			break;
		case O_VAL + O_HOLD:
			hold = 1;
			break;
		case O_VAL + O_VERSION:
			printf("p2pctl %s\n", P2P_VERSION);
			return 0;
		case ':':
			if (optopt == 'o' || optopt == O_VAL + O_FORMAT)
				return set_format(optopt, NULL);
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
			opt[o - O_VAL] = arg ? arg : "";
		}
	}
	while (optind < argc)	/* after "--" */
		pos[npos++] = argv[optind++];
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
	rc = run(npos, pos, bad);
	if (hold) {
		fflush(stdout);
		fflush(stderr);
		while (read(STDIN_FILENO, &c, 1) > 0)
			;
	}
	return rc;
}

int main(int argc, char **argv)
{
	char **args = calloc(argc + 1, sizeof(*args)), **pos = calloc(argc + 1, sizeof(*pos));
	int rc = args && pos ? cmdline(argc, argv, args, pos) : fail(ENOMEM, "command line");

	free(args);
	free(pos);
	return rc;
}
