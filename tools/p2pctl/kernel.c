// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl: what the running kernel was built with. Its configuration from
 * /proc/config.gz (inflated by zlib: p2pctl runs no other program), else
 * from /boot/config-$(uname -r); else its symbols: the
 * bool CONFIG_PCI_P2PDMA builds pci_p2pdma_add_resource() in, which
 * /proc/kallsyms then lists. The first source that can tell decides, and
 * is named; when none can, the answer is unknown, never yes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "p2pctl.h"

#define KCONFIG_MAX	(64 << 20)	/* no configuration is larger, inflated or not */

/*
 * The gzip file @in (@len bytes), inflated by zlib (which checks its CRC-32
 * and length), as a string into *@text (malloc'd); 0 or -errno.
 */
static int gunzip(const unsigned char *in, size_t len, char **text)
{
	z_stream z = { .next_in = (unsigned char *)in, .avail_in = (uInt)len };
	size_t cap = 1 << 18, n = 0;
	char *out = NULL, *q;
	int ret;

	if (len > KCONFIG_MAX || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return -EINVAL;
	for (;;) {
		if (!out || n + 1 >= cap) {
			if (out)
				cap *= 2;
			q = cap > KCONFIG_MAX ? NULL : realloc(out, cap);
			if (!q) {
				ret = Z_MEM_ERROR;
				break;
			}
			out = q;
		}
		z.next_out = (unsigned char *)out + n;
		z.avail_out = (uInt)(cap - n - 1);
		ret = inflate(&z, Z_NO_FLUSH);
		n = cap - 1 - z.avail_out;
		if (ret != Z_OK)
			break;
	}
	inflateEnd(&z);
	if (ret != Z_STREAM_END) {
		free(out);
		return ret == Z_MEM_ERROR ? -ENOMEM : -EIO;
	}
	out[n] = 0;
	*text = out;
	return 0;
}

/* ---- the running kernel ------------------------------------------------- */

/* the whole file @path into *@buf (malloc'd, NUL-terminated), its length in *@len */
static int slurp(const char *path, char **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *p = malloc(cap), *q;
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0 || !p) {
		err = fd < 0 ? -errno : -ENOMEM;
		goto fail;
	}
	for (;;) {
		if (n + 1 == cap) {
			err = -EFBIG;
			if (cap >= KCONFIG_MAX)
				goto fail;
			err = -ENOMEM;
			q = realloc(p, cap * 2);
			if (!q)
				goto fail;
			p = q;
			cap *= 2;
		}
		got = read(fd, p + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			goto fail;
		}
		if (!got)
			break;
		n += got;
	}
	close(fd);
	p[n] = 0;
	*buf = p;
	*len = n;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(p);
	return err;
}

/*
 * @opt ("CONFIG_PCI_P2PDMA") in the configuration @text: its value's
 * first character ('y', 'm', or the start of a number or string), 'n'
 * when it is not set or not there (Kconfig leaves out what cannot be set).
 */
static int config_value(const char *text, const char *opt)
{
	size_t n = strlen(opt);
	const char *l;

	for (l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, opt, n) && l[n] == '=')
			return l[n + 1] && l[n + 1] != '\n' ? l[n + 1] : 'n';
	return 'n';
}

int kernel_option(const struct kernel_info *k, const char *opt)
{
	return k->config ? config_value(k->config, opt) : 0;
}

/* /proc/kallsyms lists @sym: 1, 0 if not, -errno if it cannot tell (absent, empty) */
static int kallsyms_has(const char *sym)
{
	char line[512], *name, *end;
	int lines = 0, found = 0;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		lines++;
		/* "ffffffff81234560 T name\t[module]" */
		name = strchr(line, ' ');
		name = name ? strchr(name + 1, ' ') : NULL;
		if (!name)
			continue;
		name++;
		end = name + strcspn(name, " \t\n");
		*end = 0;
		found = !strcmp(name, sym);
	}
	fclose(f);
	return found ? 1 : lines ? 0 : -ENODATA;
}

/* "no /proc/config.gz", "/proc/config.gz unreadable (...)", for the unknown answer */
static void nothing_in(char *buf, size_t len, const char *path, int err)
{
	size_t l = strlen(buf);

	snprintf(buf + l, len - l, "%s%s%s%s%s", l ? ", " : "", err == -ENOENT ? "no " : "", path,
		 err == -ENOENT ? "" : err == -ENODATA ? " lists nothing" :
		 err == -EIO || err == -EINVAL ? " is corrupt" : " is unreadable: ",
		 err == -ENOENT || err == -ENODATA || err == -EIO || err == -EINVAL ? "" :
		 strerror(-err));
}

/*
 * Judge the running kernel: CONFIG_PCI_P2PDMA from /proc/config.gz, else
 * /boot/config-$(uname -r), else /proc/kallsyms; kernel_done() frees it.
 */
void kernel_read(struct kernel_info *k)
{
	static const char sym[] = "pci_p2pdma_add_resource";
	struct utsname u;
	char *raw = NULL;
	size_t len;
	int ret;

	memset(k, 0, sizeof(*k));
	p2p_copy_str(k->release, sizeof(k->release), uname(&u) ? "?" : u.release);
	ret = slurp("/proc/config.gz", &raw, &len);
	if (!ret) {
		ret = gunzip((unsigned char *)raw, len, &k->config);
		free(raw);
	}
	if (!ret) {
		p2p_copy_str(k->source, sizeof(k->source), "/proc/config.gz");
	} else {
		nothing_in(k->why, sizeof(k->why), "/proc/config.gz", ret);
		snprintf(k->source, sizeof(k->source), "/boot/config-%s", k->release);
		ret = slurp(k->source, &k->config, &len);
		if (ret)
			nothing_in(k->why, sizeof(k->why), k->source, ret);
	}
	if (!ret) {
		k->p2pdma = config_value(k->config, "CONFIG_PCI_P2PDMA") == 'y' ? P2PDMA_YES :
			    P2PDMA_NO;
		snprintf(k->why, sizeof(k->why), "CONFIG_PCI_P2PDMA%s %s",
			 k->p2pdma == P2PDMA_YES ? "=y in" :
			 strstr(k->config, "# CONFIG_PCI_P2PDMA is not set") ? " is not set in" :
			 " is not in", k->source);
		return;
	}
	ret = kallsyms_has(sym);
	if (ret >= 0) {
		p2p_copy_str(k->source, sizeof(k->source), "/proc/kallsyms");
		k->p2pdma = ret ? P2PDMA_YES : P2PDMA_NO;
		snprintf(k->why, sizeof(k->why), "/proc/kallsyms has %s%s", ret ? "" : "no ", sym);
		return;
	}
	nothing_in(k->why, sizeof(k->why), "/proc/kallsyms", ret);
	k->source[0] = 0;
	k->p2pdma = P2PDMA_UNKNOWN;
}

void kernel_done(struct kernel_info *k)
{
	free(k->config);
	k->config = NULL;
}

/*
 * p2pbar answered (through @source, saying @why): it loads only where the
 * kernel has P2PDMA, so the kernel has it, whatever the files say
 */
void kernel_answered(struct kernel_info *k, const char *source, const char *why)
{
	k->p2pdma = P2PDMA_YES;
	p2p_copy_str(k->source, sizeof(k->source), source);
	p2p_copy_str(k->why, sizeof(k->why), why);
}

const char *p2pdma_word(int p2pdma)
{
	return p2pdma == P2PDMA_YES ? "yes" : p2pdma == P2PDMA_NO ? "no" : "unknown";
}

/* "kernel 6.1.0: has P2PDMA (CONFIG_PCI_P2PDMA=y in /proc/config.gz)" */
void kernel_line(const struct kernel_info *k, char *buf, size_t len)
{
	snprintf(buf, len, "kernel %s: %s (%s)", k->release,
		 k->p2pdma == P2PDMA_YES ? "has P2PDMA" : k->p2pdma == P2PDMA_NO ? "no P2PDMA" :
		 "P2PDMA unknown", k->why);
}

/* what to do about a kernel without P2PDMA, or one nothing tells about */
const char *kernel_fix(const struct kernel_info *k)
{
	if (k->p2pdma == P2PDMA_NO)
		return "boot a kernel built with CONFIG_PCI_P2PDMA=y (it needs CONFIG_ZONE_DEVICE, "
		       "so a 64-bit kernel with memory hotplug); distribution kernels without it, "
		       "as Debian's stock ones, must be rebuilt with it";
	if (k->p2pdma == P2PDMA_UNKNOWN)
		return "let the kernel say how it was built: modprobe configs (for /proc/config.gz), "
		       "or install its /boot/config-$(uname -r); it needs CONFIG_PCI_P2PDMA=y";
	return "";
}
