// SPDX-License-Identifier: GPL-2.0
/*
 * p2pvirt: NVMe SR-IOV flexible resources, through the primary controller's
 * char device (/dev/nvmeN, owned by nvme-pci), for a guest without nvme-cli.
 *
 *   p2pvirt [--json] list DEV
 *	Identify CNS 14h (Primary Controller Capabilities) and CNS 15h
 *	(Secondary Controller List): the flexible VQ/VI pools, and per
 *	secondary controller its SCID, VFN, state, NVQ, NVI
 *	(nvme-cli: primary-ctrl-caps, list-secondary).
 *   p2pvirt [--json] assign DEV VFN NVQ NVI
 *	Virtualization Management (1Ch) on the secondary controller of VF
 *	number VFN: Secondary Offline (7h) if it is online, Secondary Assign
 *	(8h) of NVQ VQ (RT 0) and NVI VI (RT 1) flexible resources, Secondary
 *	Online (9h) (nvme-cli: virt-mgmt).
 *   p2pvirt format DEV NSID LBAF
 *	Format NVM (80h) of namespace NSID to LBA format LBAF, no secure
 *	erase, no protection information (nvme-cli: format -n NSID -l LBAF):
 *	for the test of a namespace formatted under a VF's driver.
 *   p2pvirt test DEV VFN NVQ NVI
 *	The bench's sriov test (qemu/tests/sriov.guest.sh), once VF VFN is
 *	enabled: KTAP on the test programs' harness (tools/lib/harness.h),
 *	suite sriov_virt. "pools": Identify answers, the controller has VQ
 *	and VI flexible resources, its pools are free and hold what the VF
 *	is to get, the VF's secondary controller is listed offline with
 *	none. "assign": as assign does, a case per step (listed, VQ and VI
 *	assigned with the NRM asked for, online), then the list says the VF
 *	is online with them, and the pools say they went to a secondary.
 *
 * An NVMe status is printed in hex; the exit code is 0 on success, 1 on a
 * failure (NVMe status or system error, a case that failed), 2 on bad
 * arguments.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/nvme_ioctl.h>

#include "harness.h"

#define ADM_IDENTIFY		0x06
#define ADM_VIRT_MGMT		0x1c
#define ADM_FORMAT_NVM		0x80
#define CNS_PRIMARY_CAPS	0x14
#define CNS_SECONDARY_LIST	0x15
#define ACT_SEC_OFFLINE		0x7
#define ACT_SEC_ASSIGN		0x8
#define ACT_SEC_ONLINE		0x9
#define RT_VQ			0
#define RT_VI			1
#define ID_SIZE			4096
#define ARRAY_SIZE(a)		((int)(sizeof(a) / sizeof((a)[0])))

/* Identify CNS 14h, NVMe 1.4 figure 253; little endian */
struct pri_ctrl_caps {
	uint16_t cntlid;
	uint16_t portid;
	uint8_t crt;
	uint8_t rsvd5[27];
	uint32_t vqfrt;		/* VQ flexible resources total */
	uint32_t vqrfa;		/* ... assigned to secondaries */
	uint16_t vqrfap;	/* ... allocated to the primary */
	uint16_t vqprt;		/* VQ private to the primary */
	uint16_t vqfrsm;	/* max VQ flexible per secondary */
	uint16_t vqgran;
	uint8_t rsvd48[16];
	uint32_t vifrt;
	uint32_t virfa;
	uint16_t virfap;
	uint16_t viprt;
	uint16_t vifrsm;
	uint16_t vigran;
	uint8_t rsvd80[4016];
} __attribute__((packed));

/* Identify CNS 15h, NVMe 1.4 figures 254, 255 */
struct sec_ctrl {
	uint16_t scid;
	uint16_t pcid;
	uint8_t scs;		/* bit 0: online */
	uint8_t rsvd5[3];
	uint16_t vfn;
	uint16_t nvq;
	uint16_t nvi;
	uint8_t rsvd14[18];
} __attribute__((packed));

struct sec_ctrl_list {
	uint8_t numid;
	uint8_t rsvd1[31];
	struct sec_ctrl sc[127];
} __attribute__((packed));

_Static_assert(sizeof(struct pri_ctrl_caps) == ID_SIZE, "CNS 14h layout");
_Static_assert(sizeof(struct sec_ctrl) == 32, "secondary controller entry layout");
_Static_assert(sizeof(struct sec_ctrl_list) == ID_SIZE, "CNS 15h layout");

static int json;
static const char *dev;

static void __attribute__((noreturn)) usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: p2pvirt [--json] list DEV\n"
		"       p2pvirt [--json] assign DEV VFN NVQ NVI\n"
		"       p2pvirt format DEV NSID LBAF\n"
		"       p2pvirt test DEV VFN NVQ NVI\n"
		"\n"
		"DEV is a primary controller's char device (/dev/nvme0), as bound to nvme-pci.\n"
		"list    Identify Primary Controller Capabilities (CNS 14h) and the Secondary\n"
		"        Controller List (CNS 15h): the flexible VQ/VI pools and, per secondary\n"
		"        controller, SCID, VFN, SCS (online/offline), NVQ, NVI.\n"
		"assign  Virtualization Management (1Ch) on the secondary controller of VF\n"
		"        number VFN (1-based, as sriov_numvfs counts): Secondary Offline (7h)\n"
		"        if it is online, Secondary Assign (8h) of NVQ flexible VQ (RT 0) and\n"
		"        NVI flexible VI (RT 1), Secondary Online (9h). NVQ counts the VF's\n"
		"        admin queue. QEMU wants NVQ >= 2, NVI >= 1, and the VF enabled\n"
		"        (sriov_numvfs) before it goes online.\n"
		"format  Format NVM (80h) of namespace NSID to LBA format LBAF (0-63), no\n"
		"        secure erase, no protection information: every controller the\n"
		"        namespace is attached to (the VFs too) sees the new format.\n"
		"test    KTAP (suite sriov_virt): the pools free, then assign as above, a\n"
		"        case per step and per what the controller says after it.\n"
		"--json  one JSON object on one line, on stdout:\n"
		"        list:   {\"device\",\"primary\":{\"cntlid\",\"crt\",\"vqfrt\",\"vqrfa\",\"vqrfap\",\n"
		"                \"vqprt\",\"vqfrsm\",\"vqgran\",\"vq_free\",\"vifrt\",\"virfa\",\"virfap\",\n"
		"                \"viprt\",\"vifrsm\",\"vigran\",\"vi_free\"},\"secondary\":[{\"scid\",\"pcid\",\n"
		"                \"vfn\",\"scs\",\"state\",\"nvq\",\"nvi\"},...]}\n"
		"        assign: {\"device\",\"vfn\",\"scid\",\"offlined\",\"nvq\",\"nvi\",\"state\"}\n"
		"        (nvq, nvi: the NRM the controller returned; state: as listed after)\n"
		"An NVMe status is printed in hex (with DNR 0x4000 when set).\n"
		"Exit: 0 done, 1 NVMe status or system error, 2 bad arguments.\n");
	exit(code);
}

static const char *status_str(int st)
{
	switch (st & 0x7ff) {
	case 0x001: return "Invalid Command Opcode";
	case 0x002: return "Invalid Field in Command";
	case 0x11f: return "Invalid Controller Identifier";
	case 0x120: return "Invalid Secondary Controller State";
	case 0x121: return "Invalid Number of Controller Resources";
	case 0x122: return "Invalid Resource Identifier";
	default: return "see the NVMe specification";
	}
}

/* an NVMe status (> 0) or -errno from the admin passthrough; 0 on success */
static int admin(int fd, struct nvme_admin_cmd *cmd, const char *what)
{
	int ret = ioctl(fd, NVME_IOCTL_ADMIN_CMD, cmd);

	if (ret < 0) {
		ret = -errno;
		fprintf(stderr, "p2pvirt: %s: %s: %s\n", dev, what, strerror(-ret));
	} else if (ret > 0) {
		fprintf(stderr, "p2pvirt: %s: %s: NVMe status 0x%x (%s%s)\n", dev, what, ret,
			status_str(ret), ret & 0x4000 ? ", DNR" : "");
	}
	return ret;
}

static int identify(int fd, uint8_t cns, uint16_t cntid, void *buf, const char *what)
{
	struct nvme_admin_cmd cmd = {
		.opcode = ADM_IDENTIFY,
		.addr = (uint64_t)(uintptr_t)buf,
		.data_len = ID_SIZE,
		.cdw10 = cns | (uint32_t)cntid << 16,
	};

	memset(buf, 0, ID_SIZE);
	return admin(fd, &cmd, what);
}

static int virt_mgmt(int fd, uint8_t act, uint8_t rt, uint16_t cntlid, uint16_t nr,
		     uint32_t *nrm, const char *what)
{
	struct nvme_admin_cmd cmd = {
		.opcode = ADM_VIRT_MGMT,
		.cdw10 = act | (uint32_t)rt << 8 | (uint32_t)cntlid << 16,
		.cdw11 = nr,
	};
	int ret = admin(fd, &cmd, what);

	if (!ret && nrm)
		*nrm = cmd.result & 0xffff;
	return ret;
}

static int read_caps(int fd, struct pri_ctrl_caps *caps, struct sec_ctrl_list *list)
{
	int ret = identify(fd, CNS_PRIMARY_CAPS, 0, caps,
			   "Identify Primary Controller Capabilities (CNS 14h)");

	if (!ret)
		ret = identify(fd, CNS_SECONDARY_LIST, 0, list,
			       "Identify Secondary Controller List (CNS 15h)");
	return ret;
}

static unsigned int nsec(const struct sec_ctrl_list *list)
{
	return list->numid < 127 ? list->numid : 127;
}

static const struct sec_ctrl *find_vfn(const struct sec_ctrl_list *list, unsigned int vfn)
{
	unsigned int i;

	for (i = 0; i < nsec(list); i++)
		if (le16toh(list->sc[i].vfn) == vfn)
			return &list->sc[i];
	return NULL;
}

static const char *state(const struct sec_ctrl *sc)
{
	return sc->scs & 1 ? "online" : "offline";
}

/* free = total - allocated to the primary - assigned to secondaries */
static long vq_free(const struct pri_ctrl_caps *c)
{
	return (long)le32toh(c->vqfrt) - le16toh(c->vqrfap) - (long)le32toh(c->vqrfa);
}

static long vi_free(const struct pri_ctrl_caps *c)
{
	return (long)le32toh(c->vifrt) - le16toh(c->virfap) - (long)le32toh(c->virfa);
}

static void print_list(const struct pri_ctrl_caps *c, const struct sec_ctrl_list *list)
{
	const struct sec_ctrl *sc;
	unsigned int i;

	if (json) {
		printf("{\"device\":\"%s\",\"primary\":{\"cntlid\":%u,\"crt\":%u,"
		       "\"vqfrt\":%u,\"vqrfa\":%u,\"vqrfap\":%u,\"vqprt\":%u,\"vqfrsm\":%u,"
		       "\"vqgran\":%u,\"vq_free\":%ld,"
		       "\"vifrt\":%u,\"virfa\":%u,\"virfap\":%u,\"viprt\":%u,\"vifrsm\":%u,"
		       "\"vigran\":%u,\"vi_free\":%ld},\"secondary\":[",
		       dev, le16toh(c->cntlid), c->crt,
		       le32toh(c->vqfrt), le32toh(c->vqrfa), le16toh(c->vqrfap),
		       le16toh(c->vqprt), le16toh(c->vqfrsm), le16toh(c->vqgran), vq_free(c),
		       le32toh(c->vifrt), le32toh(c->virfa), le16toh(c->virfap),
		       le16toh(c->viprt), le16toh(c->vifrsm), le16toh(c->vigran), vi_free(c));
		for (i = 0; i < nsec(list); i++) {
			sc = &list->sc[i];
			printf("%s{\"scid\":%u,\"pcid\":%u,\"vfn\":%u,\"scs\":%u,\"state\":\"%s\","
			       "\"nvq\":%u,\"nvi\":%u}", i ? "," : "",
			       le16toh(sc->scid), le16toh(sc->pcid), le16toh(sc->vfn), sc->scs,
			       state(sc), le16toh(sc->nvq), le16toh(sc->nvi));
		}
		printf("]}\n");
		return;
	}
	printf("%s: primary controller 0x%04x, crt %#x\n", dev, le16toh(c->cntlid), c->crt);
	printf("  VQ: flexible total (vqfrt) %u, to primary (vqrfap) %u, secondaries (vqrfa) %u,\n"
	       "      free %ld; private (vqprt) %u, max per secondary (vqfrsm) %u, granularity %u\n",
	       le32toh(c->vqfrt), le16toh(c->vqrfap), le32toh(c->vqrfa), vq_free(c),
	       le16toh(c->vqprt), le16toh(c->vqfrsm), le16toh(c->vqgran));
	printf("  VI: flexible total (vifrt) %u, to primary (virfap) %u, secondaries (virfa) %u,\n"
	       "      free %ld; private (viprt) %u, max per secondary (vifrsm) %u, granularity %u\n",
	       le32toh(c->vifrt), le16toh(c->virfap), le32toh(c->virfa), vi_free(c),
	       le16toh(c->viprt), le16toh(c->vifrsm), le16toh(c->vigran));
	printf("  secondary controllers (NUMID): %u\n", list->numid);
	if (nsec(list))
		printf("  %-6s  %-6s  %-5s  %-4s  %-7s  %-5s  %s\n",
		       "SCID", "PCID", "VFN", "SCS", "STATE", "NVQ", "NVI");
	for (i = 0; i < nsec(list); i++) {
		sc = &list->sc[i];
		printf("  0x%04x  0x%04x  %-5u  0x%-2x  %-7s  %-5u  %u\n", le16toh(sc->scid),
		       le16toh(sc->pcid), le16toh(sc->vfn), sc->scs, state(sc),
		       le16toh(sc->nvq), le16toh(sc->nvi));
	}
}

static int open_dev(void)
{
	int fd = open(dev, O_RDONLY);

	if (fd < 0)
		fprintf(stderr, "p2pvirt: %s: %s\n", dev, strerror(errno));
	return fd;
}

static int do_list(void)
{
	static struct pri_ctrl_caps caps;
	static struct sec_ctrl_list list;
	int fd = open_dev(), ret;

	if (fd < 0)
		return 1;
	ret = read_caps(fd, &caps, &list);
	close(fd);
	if (ret)
		return 1;
	print_list(&caps, &list);
	return 0;
}

/* a hint for the status codes a wrong setup gets from QEMU's nvme_virt_mngmt() */
static void assign_hint(int st, const struct pri_ctrl_caps *c, unsigned int nvq, unsigned int nvi)
{
	switch (st & 0x7ff) {
	case 0x120:
		fprintf(stderr, "p2pvirt: online needs NVQ >= 2 and NVI >= 1, and the VF enabled "
			"(echo N > /sys/bus/pci/devices/PF/sriov_numvfs)\n");
		break;
	case 0x121:
		fprintf(stderr, "p2pvirt: at most %u VQ and %u VI per secondary (vqfrsm, vifrsm)\n",
			le16toh(c->vqfrsm), le16toh(c->vifrsm));
		break;
	case 0x122:
		fprintf(stderr, "p2pvirt: asked %u VQ, %u VI; free in the pools %ld VQ, %ld VI "
			"(plus what this secondary held)\n", nvq, nvi, vq_free(c), vi_free(c));
		break;
	}
}

/* how far an assignment went: the step it stopped at, A_DONE if none */
enum assign_step { A_LIST, A_FIND, A_OFFLINE, A_VQ, A_VI, A_ONLINE, A_RELIST, A_DONE };

struct assign {
	unsigned int vfn, nvq, nvi;
	enum assign_step step;
	uint16_t scid;
	int offlined;
	uint32_t nrm_vq, nrm_vi;	/* what the controller returned */
	struct sec_ctrl after;		/* the secondary controller, listed after */
};

/*
 * Give VF @a->vfn @a->nvq flexible VQ and @a->nvi VI, and put it online:
 * 0, or the NVMe status (> 0) or -errno of the step @a->step stopped at
 * (1 for a VF not listed). @caps and @list are read first.
 */
static int assign(int fd, struct assign *a, struct pri_ctrl_caps *caps, struct sec_ctrl_list *list)
{
	const struct sec_ctrl *sc;
	int ret;

	a->step = A_LIST;
	ret = read_caps(fd, caps, list);
	if (ret)
		return ret;
	a->step = A_FIND;
	sc = find_vfn(list, a->vfn);
	if (!sc) {
		fprintf(stderr, "p2pvirt: %s: no secondary controller has VFN %u (%u listed)\n",
			dev, a->vfn, nsec(list));
		return 1;
	}
	a->scid = le16toh(sc->scid);
	a->step = A_OFFLINE;
	if (sc->scs & 1) {
		ret = virt_mgmt(fd, ACT_SEC_OFFLINE, RT_VQ, a->scid, 0, NULL,
				"Virtualization Management: Secondary Offline (7h)");
		if (ret)
			return ret;
		a->offlined = 1;
	}
	a->step = A_VQ;
	ret = virt_mgmt(fd, ACT_SEC_ASSIGN, RT_VQ, a->scid, a->nvq, &a->nrm_vq,
			"Virtualization Management: Secondary Assign (8h) VQ");
	if (ret)
		goto hint;
	a->step = A_VI;
	ret = virt_mgmt(fd, ACT_SEC_ASSIGN, RT_VI, a->scid, a->nvi, &a->nrm_vi,
			"Virtualization Management: Secondary Assign (8h) VI");
	if (ret)
		goto hint;
	a->step = A_ONLINE;
	ret = virt_mgmt(fd, ACT_SEC_ONLINE, RT_VQ, a->scid, 0, NULL,
			"Virtualization Management: Secondary Online (9h)");
	if (ret)
		goto hint;
	/* what the controller says now */
	a->step = A_RELIST;
	ret = identify(fd, CNS_SECONDARY_LIST, 0, list,
		       "Identify Secondary Controller List (CNS 15h)");
	if (ret)
		return ret;
	sc = find_vfn(list, a->vfn);
	if (!sc) {
		fprintf(stderr, "p2pvirt: %s: VFN %u left the secondary controller list\n",
			dev, a->vfn);
		return 1;
	}
	a->after = *sc;
	a->step = A_DONE;
	return 0;
hint:
	assign_hint(ret, caps, a->nvq, a->nvi);
	return ret;
}

static int do_assign(unsigned int vfn, unsigned int nvq, unsigned int nvi)
{
	static struct pri_ctrl_caps caps;
	static struct sec_ctrl_list list;
	struct assign a = { .vfn = vfn, .nvq = nvq, .nvi = nvi };
	int fd = open_dev(), ret;

	if (fd < 0)
		return 1;
	ret = assign(fd, &a, &caps, &list);
	close(fd);
	if (!json) {
		if (a.offlined)
			printf("%s: VF %u: secondary controller 0x%04x offline\n", dev, vfn,
			       a.scid);
		if (a.step > A_VQ)
			printf("%s: VF %u: secondary controller 0x%04x assigned %u VQ, NRM %#x\n",
			       dev, vfn, a.scid, nvq, a.nrm_vq);
		if (a.step > A_VI)
			printf("%s: VF %u: secondary controller 0x%04x assigned %u VI, NRM %#x\n",
			       dev, vfn, a.scid, nvi, a.nrm_vi);
	}
	if (ret)
		return 1;
	if (json)
		printf("{\"device\":\"%s\",\"vfn\":%u,\"scid\":%u,\"offlined\":%s,\"nvq\":%u,"
		       "\"nvi\":%u,\"state\":\"%s\"}\n", dev, vfn, a.scid,
		       a.offlined ? "true" : "false", a.nrm_vq, a.nrm_vi, state(&a.after));
	else
		printf("%s: VF %u: secondary controller 0x%04x %s, NVQ %u, NVI %u\n", dev, vfn,
		       a.scid, state(&a.after), le16toh(a.after.nvq), le16toh(a.after.nvi));
	if (!(a.after.scs & 1)) {
		fprintf(stderr, "p2pvirt: %s: VF %u is still offline\n", dev, vfn);
		return 1;
	}
	return 0;
}

static int do_format(unsigned int nsid, unsigned int lbaf)
{
	/* LBAF bits 3:0 in CDW10 3:0, bits 5:4 in CDW10 13:12 (LBAFU) */
	struct nvme_admin_cmd cmd = {
		.opcode = ADM_FORMAT_NVM,
		.nsid = nsid,
		.cdw10 = (lbaf & 0xf) | (lbaf >> 4) << 12,
		.timeout_ms = 600000,
	};
	int fd = open_dev(), ret;

	if (fd < 0)
		return 1;
	ret = admin(fd, &cmd, "Format NVM");
	close(fd);
	return ret ? 1 : 0;
}

/* ---- test: KTAP on the harness ---- */

/* what main() parsed for the test */
static unsigned int test_vfn, test_nvq, test_nvi;

static const char *const step_names[] = {
	[A_LIST] = "Identify", [A_FIND] = "the secondary controller list",
	[A_OFFLINE] = "Secondary Offline", [A_VQ] = "Secondary Assign VQ",
	[A_VI] = "Secondary Assign VI", [A_ONLINE] = "Secondary Online",
	[A_RELIST] = "the list after", [A_DONE] = "none",
};

/* an admin command's failure as the cases say it */
static const char *failure(int ret)
{
	static char s[64];

	if (ret < 0)
		return strerror(-ret);
	snprintf(s, sizeof(s), "NVMe status %#x (%s)", ret, status_str(ret));
	return s;
}

FIXTURE(ctrl) {
	int fd;
	struct pri_ctrl_caps caps;
	struct sec_ctrl_list list;
};

FIXTURE_SETUP(ctrl)
{
	self->fd = open_dev();
	if (self->fd < 0)
		kt_fail("cannot open %s", dev);
}

FIXTURE_TEARDOWN(ctrl)
{
	close(self->fd);
}

/* a flexible resource's pool, as a diagnostic */
static void pool(const char *kind, unsigned int total, unsigned int primary,
		 unsigned int secondaries, long free, unsigned int most)
{
	printf("    # %s: %u flexible (primary %u, secondaries %u, free %ld), %u per secondary\n",
	       kind, total, primary, secondaries, free, most);
}

/* before the assignment: the pools free, the VF's controller without any */
TEST_F(sriov_virt, ctrl, pools, 5, 30)
{
	const struct pri_ctrl_caps *c = &self->caps;
	const struct sec_ctrl *sc;
	int ret = read_caps(self->fd, &self->caps, &self->list);

	tap(!ret, "Identify: Primary Controller Capabilities, Secondary Controller List");
	if (ret)
		kt_fail("Identify: %s", failure(ret));
	pool("VQ", le32toh(c->vqfrt), le16toh(c->vqrfap), le32toh(c->vqrfa), vq_free(c),
	     le16toh(c->vqfrsm));
	pool("VI", le32toh(c->vifrt), le16toh(c->virfap), le32toh(c->virfa), vi_free(c),
	     le16toh(c->vifrsm));
	tap((c->crt & 3) == 3, "the controller has VQ and VI flexible resources (CRT %#x)", c->crt);
	tap(vq_free(c) == le32toh(c->vqfrt) && vi_free(c) == le32toh(c->vifrt),
	    "the flexible pools are free: %ld of %u VQ, %ld of %u VI",
	    vq_free(c), le32toh(c->vqfrt), vi_free(c), le32toh(c->vifrt));
	tap(test_nvq <= vq_free(c) && test_nvq <= le16toh(c->vqfrsm) &&
	    test_nvi <= vi_free(c) && test_nvi <= le16toh(c->vifrsm),
	    "they hold %u VQ and %u VI for VF %u, within the most per secondary", test_nvq,
	    test_nvi, test_vfn);
	sc = find_vfn(&self->list, test_vfn);
	tap(sc && !(sc->scs & 1) && !sc->nvq && !sc->nvi,
	    "VF %u's secondary controller is listed offline, without resources (%s, NVQ %u, NVI %u)",
	    test_vfn, sc ? state(sc) : "not listed", sc ? le16toh(sc->nvq) : 0,
	    sc ? le16toh(sc->nvi) : 0);
}

/* the assignment, a case per step, then what the controller says */
TEST_F(sriov_virt, ctrl, assign, 6, 60)
{
	struct assign a = { .vfn = test_vfn, .nvq = test_nvq, .nvi = test_nvi };
	const struct pri_ctrl_caps *c = &self->caps;
	int ret = assign(self->fd, &a, &self->caps, &self->list);

	if (ret)
		printf("    # stopped at %s: %s\n", step_names[a.step], failure(ret));
	tap(a.step > A_FIND, "VF %u has a secondary controller (SCID %#x)", a.vfn, a.scid);
	tap(a.step > A_VQ && a.nrm_vq == a.nvq,
	    "Virtualization Management: Secondary Assign (8h) of %u VQ (NRM %u)", a.nvq, a.nrm_vq);
	tap(a.step > A_VI && a.nrm_vi == a.nvi,
	    "Virtualization Management: Secondary Assign (8h) of %u VI (NRM %u)", a.nvi, a.nrm_vi);
	tap(a.step > A_ONLINE, "Virtualization Management: Secondary Online (9h)%s",
	    a.offlined ? ", after Secondary Offline (7h)" : "");
	tap(a.step == A_DONE && (a.after.scs & 1) && le16toh(a.after.nvq) == a.nvq &&
	    le16toh(a.after.nvi) == a.nvi,
	    "the list says VF %u is online with %u VQ and %u VI (%s, NVQ %u, NVI %u)", a.vfn,
	    a.nvq, a.nvi, state(&a.after), le16toh(a.after.nvq), le16toh(a.after.nvi));
	ret = read_caps(self->fd, &self->caps, &self->list);
	tap(!ret && le32toh(c->vqrfa) == a.nvq && le32toh(c->virfa) == a.nvi,
	    "the pools say they went to a secondary: %u VQ, %u VI (vqrfa, virfa)",
	    le32toh(c->vqrfa), le32toh(c->virfa));
}

static unsigned int number(const char *s, unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v > max) {
		fprintf(stderr, "p2pvirt: '%s' is not an integer in 0..%lu\n", s, max);
		usage(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	char *args[8];
	int i, n = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			usage(0);
		else if (n < ARRAY_SIZE(args))
			args[n++] = argv[i];
		else
			usage(2);
	}
	if (n == 2 && !strcmp(args[0], "list")) {
		dev = args[1];
		return do_list();
	}
	if (n == 5 && !strcmp(args[0], "assign")) {
		unsigned int vfn = number(args[2], 0xffff);
		unsigned int nvq = number(args[3], 0xffff);
		unsigned int nvi = number(args[4], 0xffff);

		if (!vfn) {
			fprintf(stderr, "p2pvirt: VFN counts from 1\n");
			usage(2);
		}
		dev = args[1];
		return do_assign(vfn, nvq, nvi);
	}
	if (n == 5 && !strcmp(args[0], "test")) {
		test_vfn = number(args[2], 0xffff);
		test_nvq = number(args[3], 0xffff);
		test_nvi = number(args[4], 0xffff);
		dev = args[1];
		return kt_run("sriov_virt");
	}
	if (n == 4 && !strcmp(args[0], "format")) {
		unsigned int nsid = number(args[2], 0xfffffffe);
		unsigned int lbaf = number(args[3], 63);

		dev = args[1];
		return do_format(nsid, lbaf);
	}
	usage(2);
	return 2;
}
