// SPDX-License-Identifier: GPL-2.0
/* p2pctl: a provider (/dev/p2pbarN) described, and its verdict for a client. */
#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>

#include "p2pctl.h"

/* p2pctl info [DEV] */
int cmd_info(struct p2pctl *c, int argc, char **argv)
{
	const char *path = argc ? argv[0] : "/dev/p2pbar0";
	char pci[P2P_BDF_LEN];
	struct p2pbar_info i;
	int fd = p2p_bar_open(path, &i);

	if (fd < 0)
		return fail(c, -fd, path);
	close(fd);
	p2p_bdf_name(i.pci_domain, i.pci_devid, pci, sizeof(pci));
	c->out->info(c, path, pci, &i);
	return 0;
}

/* p2pctl verdict CLIENT [DEV] */
int cmd_verdict(struct p2pctl *c, int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/dev/p2pbar0";
	char client[P2P_BDF_LEN];
	struct p2pbar_verdict v;
	struct p2pbar_info i;
	uint32_t dom, devid;
	int fd, ret;

	ret = pci_arg("verdict", "CLIENT", argv[0], client, sizeof(client));
	if (ret)
		return ret;
	p2p_parse_bdf(client, &dom, &devid);
	fd = p2p_bar_open(path, &i);
	if (fd < 0)
		return fail(c, -fd, path);
	ret = p2p_bar_verdict(fd, dom, devid, &v);
	close(fd);
	if (ret)
		return fail(c, -ret, "P2PBAR_IOC_VERDICT");
	c->out->verdict(c, client, path, &v);
	return 0;
}
