// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl nvme-error-log against a made-up controller: p2pctl's own code,
 * linked with NVME_IOCTL_ADMIN_CMD replaced (-Wl,--wrap=p2p_nvme_admin) by
 * a controller whose error log has 256 entries (ELPE 255), each with the
 * Phase Tag set and a Status Field of its own. The log must be read whole,
 * in pieces of 4 KiB at increasing offsets, RAE on all but the last; the
 * JSON (on stdout, for p2pctl-errlog.sh to parse) gives nvme-cli's
 * status_field and phase_tag. A check that fails says so on stderr and
 * makes the exit status 1.
 *
 *   p2pctl-errlog
 */
#include <stdio.h>
#include <string.h>

#include "p2pctl.h"

#define ENTRIES	256

static unsigned int pieces, bad;
static uint32_t next_off;

static void expect(int ok, const char *what, unsigned int v)
{
	if (!ok) {
		fprintf(stderr, "FAIL: %s (%#x)\n", what, v);
		bad++;
	}
}

int __wrap_p2p_nvme_admin(int fd, struct nvme_admin_cmd *cmd);

int __wrap_p2p_nvme_admin(int fd __maybe_unused, struct nvme_admin_cmd *cmd)
{
	uint8_t *p = (uint8_t *)(uintptr_t)cmd->addr;
	uint32_t len = ((cmd->cdw10 >> 16) + 1) * 4, off = cmd->cdw12, i;

	if (cmd->opcode == 0x06) {	/* Identify Controller */
		memset(p, 0, cmd->data_len);
		p[262] = ENTRIES - 1;	/* ELPE */
		return 0;
	}
	expect(cmd->opcode == 0x02 && (cmd->cdw10 & 0xff) == 0x01, "Get Log Page, error log",
	       cmd->cdw10);
	expect(len == cmd->data_len && len <= 4096, "a piece of 4 KiB at most", len);
	expect(off == next_off && !cmd->cdw13, "pieces at increasing offsets", off);
	expect(!!(cmd->cdw10 & 1U << 15) == (off + len < ENTRIES * 64), "RAE until the last piece",
	       cmd->cdw10);
	for (i = 0; i < len; i += 64) {
		unsigned int n = (off + i) / 64;	/* entry n: count n + 1, status n */

		memset(p + i, 0, 64);
		p[i] = (n + 1) & 0xff;
		p[i + 1] = (n + 1) >> 8;
		p[i + 12] = (n << 1 | 1) & 0xff;	/* Status Field n, Phase Tag 1 */
		p[i + 13] = (n << 1) >> 8;
		p[i + 31] = 0x02;			/* opcode */
	}
	next_off = off + len;
	pieces++;
	return 0;
}

int main(void)
{
	struct p2pctl c = { .out = &p2pctl_json };
	char *argv[] = { "/dev/null", NULL };
	int ret = cmd_nvme_error_log(&c, 1, argv);

	expect(!ret, "nvme-error-log succeeds", ret);
	expect(next_off == ENTRIES * 64, "the whole log read", next_off);
	expect(pieces == ENTRIES * 64 / 4096, "in 4 KiB pieces", pieces);
	return !!bad;
}
