/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a /dev/p2pnvmeN controller holds right now, read from sysfs and
 * debugfs: for tests that check nothing is left behind.
 */
#ifndef P2PNVME_STATE_H
#define P2PNVME_STATE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Commands the controller holds now (stats/inflight of @dev), -1 if unknown. */
static inline long inflight_now(const char *dev)
{
	char path[128];
	long n, sum = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/stats/inflight", strrchr(dev, '/') + 1);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%ld", &n) == 1)
		sum += n;
	fclose(f);
	return sum;
}

/* Counter @name of @dev's stats/ (a number), -1 if unknown. */
static inline long long nvme_stat(const char *dev, const char *name)
{
	char path[160];
	long long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/stats/%s", strrchr(dev, '/') + 1,
		 name);
	f = fopen(path, "r");
	if (f && fscanf(f, "%lld", &n) != 1)
		n = -1;
	if (f)
		fclose(f);
	return n;
}

/* io_uring requests p2pnvme has not released (debugfs uring), -1 if unknown */
static inline long unreleased(const char *dev)
{
	char link[256], path[320];
	long n = -1;
	ssize_t len;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/p2pnvme/%s/device", strrchr(dev, '/') + 1);
	len = readlink(path, link, sizeof(link) - 1);
	if (len < 0)
		return -1;
	link[len] = 0;
	snprintf(path, sizeof(path), "/sys/kernel/debug/p2pnvme/%s/uring", strrchr(link, '/') + 1);
	f = fopen(path, "r");
	if (f && fscanf(f, "requests %ld", &n) != 1)
		n = -1;
	if (f)
		fclose(f);
	return n;
}

/*
 * Does this kernel's io_uring issue a command answered -EAGAIN again from a
 * copy of its SQE (7.x)? p2pnvme gives such commands back only there.
 */
static inline int reissue_safe(void)
{
	struct utsname u;

	return !uname(&u) && atoi(u.release) >= 7;
}

#endif /* P2PNVME_STATE_H */
