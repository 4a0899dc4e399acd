// SPDX-License-Identifier: GPL-2.0
/*
 * p2pctl-errlog: p2pctl nvme-error-log against a made-up controller, on the
 * test programs' harness (tools/lib/harness.h), KTAP on stdout. p2pctl's
 * own code is linked with NVME_IOCTL_ADMIN_CMD replaced
 * (-Wl,--wrap=p2p_nvme_admin) by a controller whose error log has 256
 * entries (ELPE 255), each with the Phase Tag set and a Status Field of its
 * own. The log must be read whole, in pieces of 4 KiB at increasing
 * offsets, RAE on all but the last; the JSON gives nvme-cli's status_field
 * (the word >> 1) and phase_tag (bit 0). Each test's fixture runs the
 * command with its stdout in a file and parses what it printed (json-c).
 * Host only: the bench's build suite runs it.
 *
 *   p2pctl-errlog
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "p2pctl.h"
#include "harness.h"

#define ENTRIES	256
#define PIECE	4096

/* what the made-up controller saw: the first value that broke each rule */
struct ctrl {
	unsigned int pieces, reads;
	uint32_t next_off;
	int bad_cmd, bad_len, bad_off, bad_rae;
	uint32_t cmd, len, off, rae;
};

/* the fixture's controller, for the wrapped passthrough (no context) */
static struct ctrl *ctrl;

static void broke(int ok, int *bad, uint32_t *first, uint32_t v)
{
	if (!ok && !(*bad)++)
		*first = v;
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
	ctrl->reads++;
	broke(cmd->opcode == 0x02 && (cmd->cdw10 & 0xff) == 0x01, &ctrl->bad_cmd, &ctrl->cmd,
	      cmd->opcode << 8 | (cmd->cdw10 & 0xff));
	broke(len == cmd->data_len && len <= PIECE, &ctrl->bad_len, &ctrl->len, len);
	broke(off == ctrl->next_off && !cmd->cdw13, &ctrl->bad_off, &ctrl->off, off);
	broke(!!(cmd->cdw10 & 1U << 15) == (off + len < ENTRIES * 64), &ctrl->bad_rae, &ctrl->rae,
	      off);
	if (len > cmd->data_len)
		return -1;
	for (i = 0; i < len; i += 64) {
		unsigned int n = (off + i) / 64;	/* entry n: count n + 1, status n */

		memset(p + i, 0, 64);
		p[i] = (n + 1) & 0xff;
		p[i + 1] = (n + 1) >> 8;
		p[i + 12] = (n << 1 | 1) & 0xff;	/* Status Field n, Phase Tag 1 */
		p[i + 13] = (n << 1) >> 8;
		p[i + 31] = 0x02;			/* opcode */
	}
	ctrl->next_off = off + len;
	ctrl->pieces++;
	return 0;
}

FIXTURE(errlog) {
	struct ctrl ctrl;
	int ret;
	struct json_object *doc, *errors;
};

/* p2pctl -o json nvme-error-log, what it prints on stdout parsed */
FIXTURE_SETUP(errlog)
{
	struct p2pctl c = { .out = &p2pctl_json };
	char dev[] = "/dev/null";
	char *argv = dev, buf[256 * 1024];
	FILE *out = tmpfile();
	int saved = dup(1);
	size_t n;

	ctrl = &self->ctrl;
	if (!out || saved < 0)
		kt_fail("tmpfile, dup");
	fflush(stdout);
	dup2(fileno(out), 1);
	self->ret = cmd_nvme_error_log(&c, 1, &argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(out);
	n = fread(buf, 1, sizeof(buf) - 1, out);
	fclose(out);
	buf[n] = 0;
	self->doc = json_tokener_parse(buf);
	if (!json_object_object_get_ex(self->doc, "errors", &self->errors) ||
	    !json_object_is_type(self->errors, json_type_array))
		self->errors = NULL;
}

FIXTURE_TEARDOWN(errlog)
{
	json_object_put(self->doc);
}

/* a rule every read kept: @bad of them broke it, the first with @first */
static void kept(int bad, unsigned int reads, uint32_t first, const char *what)
{
	tap(!bad, "%s", what);
	if (bad)
		printf("    # %d of %u reads broke it, the first with %#x\n", bad, reads, first);
}

/* the commands the controller got */
TEST_F(p2pctl_errlog, errlog, commands, 4, 10)
{
	const struct ctrl *s = &self->ctrl;

	kept(s->bad_cmd, s->reads, s->cmd,
	     "every read is a Get Log Page of the error log (02h, 01h)");
	kept(s->bad_len, s->reads, s->len, "every piece is 4 KiB at most, NUMD the data length");
	kept(s->bad_off, s->reads, s->off,
	     "the pieces at increasing offsets, each where the last ended");
	kept(s->bad_rae, s->reads, s->rae, "RAE on every piece but the last");
}

/* the whole log, read in pieces */
TEST_F(p2pctl_errlog, errlog, reads_whole, 3, 10)
{
	tap(!self->ret, "p2pctl nvme-error-log succeeds (exit status %d)", self->ret);
	tap(self->ctrl.next_off == ENTRIES * 64, "the whole log read: %u of %u bytes",
	    self->ctrl.next_off, ENTRIES * 64);
	tap(self->ctrl.pieces == ENTRIES * 64 / PIECE, "in pieces of 4 KiB: %u (want %u)",
	    self->ctrl.pieces, ENTRIES * 64 / PIECE);
}

/*
 * How many entries of the JSON have @key other than @mul * n + @add (entry
 * n counts from 0); the first such one in @first.
 */
static int mismatches(struct json_object *errors, const char *key, uint64_t mul, uint64_t add,
		      int *first)
{
	size_t i, n = errors ? json_object_array_length(errors) : 0;
	struct json_object *v;
	int bad = 0;

	*first = -1;
	for (i = 0; i < n; i++) {
		if (json_object_object_get_ex(json_object_array_get_idx(errors, i), key, &v) &&
		    json_object_is_type(v, json_type_int) &&
		    (uint64_t)json_object_get_int64(v) == mul * i + add)
			continue;
		if (!bad++)
			*first = i;
	}
	return bad + (n ? 0 : 1);
}

/* the entries as nvme-cli prints them */
TEST_F(p2pctl_errlog, errlog, json, 7, 10)
{
	static const struct {
		const char *key, *want;
		uint64_t mul, add;
	} fields[] = {
		{ "error_count", "n + 1", 1, 1 },
		{ "status_field", "n: nvme-cli's, the word >> 1", 1, 0 },
		{ "phase_tag", "1: bit 0", 0, 1 },
		{ "opcode", "2", 0, 2 },
	};
	struct json_object *entries = NULL;
	size_t listed = self->errors ? json_object_array_length(self->errors) : 0;
	int first, bad;
	unsigned int i;

	tap(self->doc && json_object_is_type(self->doc, json_type_object),
	    "-o json prints one JSON object");
	json_object_object_get_ex(self->doc, "entries", &entries);
	tap(entries && json_object_get_int(entries) == ENTRIES, "entries: %d (want %d, ELPE + 1)",
	    entries ? json_object_get_int(entries) : -1, ENTRIES);
	tap(listed == ENTRIES, "errors: %zu listed, every entry in use (want %d)", listed, ENTRIES);
	for (i = 0; i < ARRAY_SIZE(fields); i++) {
		bad = mismatches(self->errors, fields[i].key, fields[i].mul, fields[i].add, &first);
		tap(!bad, "errors[n].%s is %s", fields[i].key, fields[i].want);
		if (bad)
			printf("    # %d of %zu entries not, the first errors[%d]\n", bad, listed,
			       first);
	}
}

int main(void)
{
	return kt_run("p2pctl_errlog");
}
