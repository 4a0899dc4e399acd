// SPDX-License-Identifier: GPL-2.0
/*
 * insn-mock: a stand-in for the part of QEMU's plugin API (version 1) that
 * insn.c uses, linked with insn.c into one program, so that the plugin's
 * counting, its windows and its profile mode can be checked on the host
 * without booting anything (qemu/plugins/insn-selftest.sh):
 *
 *   insn-mock OUT [ARG...]    ARGs as the plugin's (prof=on), out=OUT first
 *
 * It translates a few made-up blocks (kernel and user, one translated
 * twice, as after a flush; marker blocks as p2pbench writes them: the
 * marker and a ret) and runs them from two threads, one per vCPU, in a
 * fixed script of three windows, the third left open at exit; the counts
 * each window must show are insn-selftest.sh's. Each block's instructions
 * are 3-byte NOPs but for the markers.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include <qemu-plugin.h>

#define MAX_INSNS	8

struct qemu_plugin_insn {
	__u64 vaddr;
	unsigned char data[8];
	size_t size;
	qemu_plugin_vcpu_udata_cb_t cb;
	void *udata;
};

struct qemu_plugin_tb {
	__u64 vaddr;
	size_t n;
	struct qemu_plugin_insn insn[MAX_INSNS];
	qemu_plugin_vcpu_udata_cb_t cb;
	void *udata;
};

static qemu_plugin_vcpu_tb_trans_cb_t trans_cb;
static qemu_plugin_udata_cb_t exit_cb;
static void *exit_udata;

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb)
{
	trans_cb = cb;
}

void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *udata)
{
	exit_cb = cb;
	exit_udata = udata;
}

void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *udata)
{
	tb->cb = cb;
	tb->udata = udata;
}

void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *udata)
{
	insn->cb = cb;
	insn->udata = udata;
}

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb)
{
	return tb->n;
}

uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb)
{
	return tb->vaddr;
}

struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx)
{
	return idx < tb->n ? (struct qemu_plugin_insn *)&tb->insn[idx] : NULL;
}

const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn)
{
	return insn->data;
}

size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn)
{
	return insn->size;
}

uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn)
{
	return insn->vaddr;
}

bool qemu_plugin_bool_parse(const char *name, const char *val, bool *ret)
{
	if (!strcmp(val, "on") || !strcmp(val, "yes") || !strcmp(val, "true"))
		return *ret = true, true;
	if (!strcmp(val, "off") || !strcmp(val, "no") || !strcmp(val, "false"))
		return *ret = false, true;
	return false;
}

/* a block at @vaddr of @n 3-byte NOPs, translated */
static struct qemu_plugin_tb *block(__u64 vaddr, size_t n)
{
	struct qemu_plugin_tb *tb = calloc(1, sizeof(*tb));
	size_t i;

	if (!tb || n > MAX_INSNS)
		exit(2);
	tb->vaddr = vaddr;
	tb->n = n;
	for (i = 0; i < n; i++) {
		tb->insn[i].vaddr = vaddr + 3 * i;
		memcpy(tb->insn[i].data, "\x0f\x1f\x00", 3);
		tb->insn[i].size = 3;
	}
	trans_cb(0, tb);
	return tb;
}

/* a marker block as p2pbench's: nopl 0x7032XXXX(%rax), ret */
static struct qemu_plugin_tb *marker(__u64 vaddr, unsigned int id)
{
	struct qemu_plugin_tb *tb = calloc(1, sizeof(*tb));
	unsigned char m[7] = { 0x0f, 0x1f, 0x80, id & 0xff, id >> 8, 0x32, 0x70 };

	if (!tb)
		exit(2);
	tb->vaddr = vaddr;
	tb->n = 2;
	tb->insn[0].vaddr = vaddr;
	memcpy(tb->insn[0].data, m, 7);
	tb->insn[0].size = 7;
	tb->insn[1].vaddr = vaddr + 7;
	tb->insn[1].data[0] = 0xc3;
	tb->insn[1].size = 1;
	trans_cb(0, tb);
	return tb;
}

/* vCPU @vcpu executes @tb @times times, as TCG would: block, then insns */
static void run(unsigned int vcpu, struct qemu_plugin_tb *tb, unsigned int times)
{
	size_t i;

	while (times--) {
		tb->cb(vcpu, tb->udata);
		for (i = 0; i < tb->n; i++)
			if (tb->insn[i].cb)
				tb->insn[i].cb(vcpu, tb->insn[i].udata);
	}
}

#define KTEXT	0xffffffff81000000ULL
#define KMOD	0xffffffffa0000000ULL
#define USER	0x0000555555554000ULL
#define MARKS	0x00007f0000000000ULL

static struct qemu_plugin_tb *k1, *k1again, *k2, *m1, *u1, *ms[4], *me[4];
static pthread_barrier_t step;

/* vCPU 1: busy in the kernel while vCPU 0's program opens and closes windows */
static void *vcpu1(void *arg)
{
	pthread_barrier_wait(&step);	/* window 1 open */
	run(1, k2, 500);
	run(1, k1again, 200);
	pthread_barrier_wait(&step);
	pthread_barrier_wait(&step);	/* window 1 closed */
	run(1, k2, 50);
	pthread_barrier_wait(&step);
	pthread_barrier_wait(&step);	/* window 2 open */
	run(1, m1, 40);
	pthread_barrier_wait(&step);
	return NULL;
}

int main(int argc, char **argv)
{
	const qemu_info_t info = {
		.target_name = "x86_64",
		.version = { .min = QEMU_PLUGIN_VERSION, .cur = QEMU_PLUGIN_VERSION },
		.system_emulation = true,
		.system = { .smp_vcpus = 2, .max_vcpus = 2 },
	};
	char **args = calloc(argc + 1, sizeof(*args));
	pthread_t t;
	int i;

	if (argc < 2 || !args)
		return fprintf(stderr, "usage: insn-mock OUT [prof=on]\n"), 2;
	if (asprintf(&args[0], "out=%s", argv[1]) < 0)
		return 2;
	for (i = 2; i < argc; i++)
		args[i - 1] = argv[i];
	if (qemu_plugin_install(0, &info, argc - 1, args))
		return fprintf(stderr, "insn-mock: the plugin refused to install\n"), 1;
	k1 = block(KTEXT + 0x100, 5);
	k1again = block(KTEXT + 0x100, 5);	/* translated again: one entry */
	k2 = block(KTEXT + 0x200, 4);
	m1 = block(KMOD + 0x1010, 6);
	u1 = block(USER + 0x1000, 3);
	for (i = 1; i <= 3; i++) {
		ms[i] = marker(MARKS + 0x1000 * i, 2 * i);
		me[i] = marker(MARKS + 0x1000 * i + 16, 2 * i + 1);
	}
	pthread_barrier_init(&step, NULL, 2);
	if (pthread_create(&t, NULL, vcpu1, NULL))
		return 2;
	/* before any window: not profiled */
	run(0, u1, 10);
	run(0, k1, 7);
	/* window 1 */
	run(0, ms[1], 1);
	pthread_barrier_wait(&step);
	run(0, u1, 1000);
	run(0, k1, 300);
	pthread_barrier_wait(&step);	/* vCPU 1 done with window 1 */
	run(0, me[1], 1);
	pthread_barrier_wait(&step);
	run(0, u1, 5);			/* between windows: not profiled */
	pthread_barrier_wait(&step);
	/* window 2: k1 again, its count from 0 */
	run(0, ms[2], 1);
	pthread_barrier_wait(&step);
	run(0, k1, 11);
	run(0, m1, 2);
	pthread_barrier_wait(&step);
	run(0, me[2], 1);
	pthread_join(t, NULL);
	/* window 3, left open: written at exit */
	run(0, ms[3], 1);
	run(0, k2, 3);
	exit_cb(0, exit_udata);
	return 0;
}
