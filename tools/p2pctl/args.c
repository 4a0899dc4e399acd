// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl: what goes wrong, said one way. A failed step through the output
 * backend and its exit status; a usage error; the arguments every command
 * parses alike (PCI addresses, fill bytes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "p2pctl.h"

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

/*
 * The exit status for a step that failed with errno @err: the errno, but
 * a missing device (ENOENT, ENXIO) is ENODEV, so that 2 (ENOENT) only ever
 * means a usage error.
 */
int exit_status(int err)
{
	if (err == ENOENT || err == ENXIO || err == ENODEV)
		return EXIT_NODEV;
	return err > 0 && err < 256 ? err : 1;
}

/* The step @what failed with errno @err: said through the output; the exit status. */
int fail(struct p2pctl *c, int err, const char *what)
{
	c->out->error(c, err, what, missing_hint(err, what));
	return exit_status(err);
}

/* A usage error: one line saying what is wrong and where to look; exit 2. */
int usage_error(const char *fmt, ...)
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
 * Argument @name of @cmd, a PCI function in any form lspci prints, as the
 * kernel names it (sysfs), into @buf; or a usage error naming it.
 */
int pci_arg(const char *cmd, const char *name, const char *s, char *buf, size_t len)
{
	if (p2p_bdf_canon(s, buf, len))
		return usage_error("%s: %s: not a PCI address: '%s' (lspci's 03:00.0 or 0000:03:00.0)",
				   cmd, name, s);
	return 0;
}

/* Argument BYTE of @cmd, a fill byte (0..255), into @byte; or a usage error naming it. */
int byte_arg(const char *cmd, const char *s, int *byte)
{
	uint64_t v;

	if (p2p_parse_num(s, &v))
		return usage_error("%s: BYTE: not a number: '%s'", cmd, s);
	if (v > 255)
		return usage_error("%s: BYTE: more than 255: '%s'", cmd, s);
	*byte = v;
	return 0;
}
