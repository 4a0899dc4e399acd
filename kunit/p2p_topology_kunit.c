// SPDX-License-Identifier: GPL-2.0
/*
 * Live topology test for the QEMU bench: the kernel's own P2PDMA verdict
 * between the bench's NVMe controller (client) and its BAR device
 * (provider) must be what the booted topology profile predicts, and the
 * provider's verdict (p2pbar_verdict()) must agree with the kernel for the
 * provider against every PCI function in the machine.
 *
 * Parameters come from the profile (qemu/profiles/): expect=direct,
 * host-bridge or refused; distance= the kernel's distance, -2 to skip.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/p2pbar.h>

static char *expect = "";
module_param(expect, charp, 0444);
MODULE_PARM_DESC(expect, "Expected verdict: direct, host-bridge or refused (empty: skip)");

static int distance = -2;
module_param(distance, int, 0444);
MODULE_PARM_DESC(distance, "Expected pci_p2pdma_distance(), -2 to not check (default)");

static unsigned int provider_id = 0x1af41110;	/* ivshmem-plain */
module_param(provider_id, uint, 0444);
MODULE_PARM_DESC(provider_id, "vendor << 16 | device of the provider (default ivshmem 1af4:1110)");

static unsigned int client_class = PCI_CLASS_STORAGE_EXPRESS;
module_param(client_class, uint, 0444);
MODULE_PARM_DESC(client_class, "PCI class of the client (default NVMe 0x010802)");

struct topo_ctx {
	struct pci_dev *provider;
	struct pci_dev *client;
};

static int topo_init(struct kunit *test)
{
	struct topo_ctx *ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ctx);
	ctx->provider = pci_get_device(provider_id >> 16, provider_id & 0xffff, NULL);
	ctx->client = pci_get_class(client_class, NULL);
	test->priv = ctx;
	if (!ctx->provider || !ctx->client)
		kunit_skip(test, "no provider %08x or client class %06x in this machine",
			   provider_id, client_class);
	return 0;
}

static void topo_exit(struct kunit *test)
{
	struct topo_ctx *ctx = test->priv;

	pci_dev_put(ctx->provider);
	pci_dev_put(ctx->client);
}

static u32 expected_map(struct kunit *test)
{
	if (!strcmp(expect, "direct"))
		return P2PBAR_MAP_DIRECT;
	if (!strcmp(expect, "host-bridge"))
		return P2PBAR_MAP_HOST_BRIDGE;
	if (!strcmp(expect, "refused"))
		return P2PBAR_MAP_REFUSED;
	kunit_skip(test, "no expectation given (expect=%s)", expect);
	return ~0U;
}

/* The kernel's verdict is what the profile predicts. */
static void kernel_verdict_matches_profile(struct kunit *test)
{
	struct topo_ctx *ctx = test->priv;
	u32 want = expected_map(test);
	int dist;

	dist = pci_p2pdma_distance(ctx->provider, &ctx->client->dev, true);
	kunit_info(test, "pci_p2pdma_distance(%s, %s) = %d, expected %s",
		   pci_name(ctx->provider), pci_name(ctx->client), dist, expect);
	if (want == P2PBAR_MAP_REFUSED)
		KUNIT_EXPECT_EQ(test, dist, -1);
	else
		KUNIT_EXPECT_GE(test, dist, 0);
	if (distance != -2)
		KUNIT_EXPECT_EQ(test, dist, distance);
}

/* The provider's verdict says the same, with the same distance. */
static void provider_verdict_matches_profile(struct kunit *test)
{
	struct topo_ctx *ctx = test->priv;
	u32 want = expected_map(test);
	struct p2pbar_verdict v = {};

	KUNIT_ASSERT_EQ(test, p2pbar_verdict(ctx->provider, ctx->client, &v), 0);
	KUNIT_EXPECT_EQ(test, v.map_type, want);
	KUNIT_EXPECT_EQ(test, v.distance,
			pci_p2pdma_distance(ctx->provider, &ctx->client->dev, false));
}

/* ... and for every other function of the machine too. */
static void provider_verdict_agrees_everywhere(struct kunit *test)
{
	struct topo_ctx *ctx = test->priv;
	struct pci_dev *client = NULL;
	struct p2pbar_verdict v;
	int kdist, checked = 0;

	for_each_pci_dev(client) {
		memset(&v, 0, sizeof(v));
		KUNIT_ASSERT_EQ(test, p2pbar_verdict(ctx->provider, client, &v), 0);
		kdist = pci_p2pdma_distance(ctx->provider, &client->dev, false);
		KUNIT_EXPECT_EQ_MSG(test, v.distance, kdist, "client %s", pci_name(client));
		KUNIT_EXPECT_EQ_MSG(test, v.map_type == P2PBAR_MAP_REFUSED, kdist < 0,
				    "client %s", pci_name(client));
		checked++;
	}
	KUNIT_EXPECT_GT(test, checked, 2);
}

static struct kunit_case topo_cases[] = {
	KUNIT_CASE(kernel_verdict_matches_profile),
	KUNIT_CASE(provider_verdict_matches_profile),
	KUNIT_CASE(provider_verdict_agrees_everywhere),
	{}
};

static struct kunit_suite topo_suite = {
	.name = "p2p_topology",
	.init = topo_init,
	.exit = topo_exit,
	.test_cases = topo_cases,
};

kunit_test_suite(topo_suite);

MODULE_DESCRIPTION("Live P2PDMA topology verdicts on the QEMU bench");
MODULE_LICENSE("GPL");
