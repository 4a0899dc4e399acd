// SPDX-License-Identifier: GPL-2.0
/*
 * insn: a QEMU TCG plugin (Debian's QEMU 7.2, plugin API version 1) that
 * counts the instructions the guest executes, per vCPU, kernel and user
 * apart, and writes them out whenever the guest executes a marker.
 *
 *   qemu-system-x86_64 ... -plugin file=insn.so,out=FILE
 *
 * Counting: every translated block gets an execution callback that adds
 * the block's instruction count to its vCPU's own counter, user or kernel
 * by the block's virtual address (x86-64: the upper half is the kernel's;
 * a block never crosses from one half into the other, and syscall, sysret,
 * interrupts and exceptions all end or start a block). Only the vCPU's own
 * thread writes its counter (one thread per vCPU under MTTCG; all on one
 * under thread=single), so no count is lost to a race; a marker's report
 * reads the other vCPUs' counters as they are at that moment. API 1 has
 * neither per-vCPU inline counters nor register access, hence the callback
 * and the address split. A block is counted whole when it starts: one that
 * an exception leaves early (a page fault, say) counts the instructions
 * after the faulting one that did not run.
 *
 * Markers: "nopl 0x7032XXXX(%rax)" (0f 1f 80 XX XX 32 70), a 7-byte NOP
 * that does nothing on hardware or under QEMU alone; its displacement's
 * upper 16 bits are the magic 0x7032 ("p2"), the lower 16 the marker's id.
 * Recognised at translation from the instruction's bytes; when one is
 * executed, a line is written to FILE:
 *
 *   mark ID vcpu V host_ns T vclock_ns C kernel K0,K1,.. user U0,U1,..
 *
 * T: the host's CLOCK_MONOTONIC; C: QEMU's virtual clock (without -icount
 * it follows the host's time while the guest runs), or -1 where this QEMU
 * does not export qemu_clock_get_ns (not part of the plugin API: looked up
 * by dlsym); Kn, Un: vCPU n's kernel and user instructions so far. FILE
 * starts with a line naming the plugin, the target and the vCPU count, and
 * ends with an "exit" line of the final counts.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/types.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define INSN_FORMAT	1
#define MARK_MAGIC	0x7032
#define KERNEL_HALF	0xffff800000000000ULL
#define QEMU_CLOCK_VIRTUAL	1	/* include/qemu/timer.h */

/*
 * One vCPU's counts, [0] user and [1] kernel: written only by that vCPU's
 * thread (relaxed atomic stores, so that a reader on another vCPU's thread
 * sees a whole value), read by any thread. A cache line each.
 */
struct vcpu_count {
	__u64 insn[2];
	__u64 pad[6];	/* to 64 bytes: allocated on a cache line (aligned_alloc) */
};

static struct vcpu_count *counts;
static unsigned int nvcpus;
static __u64 lost;	/* blocks of a vCPU index beyond nvcpus: must stay 0 */

/* out, and the order of its lines, under out_lock */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;

static __s64 (*vclock)(int type);

static __u64 host_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (__u64)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/* udata: the block's instruction count << 1 | 1 if it is the kernel's */
static void tb_exec(unsigned int vcpu, void *udata)
{
	uintptr_t v = (uintptr_t)udata;
	__u64 *c;

	if (vcpu >= nvcpus) {
		__atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
		return;
	}
	c = &counts[vcpu].insn[v & 1];
	__atomic_store_n(c, *c + (v >> 1), __ATOMIC_RELAXED);
}

/* the counts of every vCPU, "kernel K0,K1,.. user U0,U1,.." */
static void write_counts(void)
{
	static const char * const names[] = { " user ", " kernel " };
	unsigned int i;
	int m;

	for (m = 1; m >= 0; m--) {
		fputs(names[m], out);
		for (i = 0; i < nvcpus; i++)
			fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)
				__atomic_load_n(&counts[i].insn[m], __ATOMIC_RELAXED));
	}
}

static void mark_exec(unsigned int vcpu, void *udata)
{
	__s64 vns = vclock ? vclock(QEMU_CLOCK_VIRTUAL) : -1;
	__u64 ns = host_ns();

	pthread_mutex_lock(&out_lock);
	if (!out) {
		pthread_mutex_unlock(&out_lock);
		return;
	}
	fprintf(out, "mark %u vcpu %u host_ns %llu vclock_ns %lld",
		(unsigned int)(uintptr_t)udata, vcpu, (unsigned long long)ns, (long long)vns);
	write_counts();
	fputc('\n', out);
	fflush(out);
	pthread_mutex_unlock(&out_lock);
}

/* the marker's id, or -1 if @insn is not one */
static int mark_id(struct qemu_plugin_insn *insn)
{
	const __u8 *b;

	if (qemu_plugin_insn_size(insn) != 7)
		return -1;
	b = qemu_plugin_insn_data(insn);
	if (b[0] != 0x0f || b[1] != 0x1f || b[2] != 0x80 ||
	    b[5] != (MARK_MAGIC & 0xff) || b[6] != MARK_MAGIC >> 8)
		return -1;
	return b[3] | b[4] << 8;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	int kernel = qemu_plugin_tb_vaddr(tb) >= KERNEL_HALF, m;

	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)(uintptr_t)(n << 1 | kernel));
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		m = mark_id(insn);
		if (m >= 0)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)m);
	}
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	pthread_mutex_lock(&out_lock);
	fprintf(out, "exit host_ns %llu lost %llu", (unsigned long long)host_ns(),
		(unsigned long long)__atomic_load_n(&lost, __ATOMIC_RELAXED));
	write_counts();
	fputc('\n', out);
	fclose(out);
	out = NULL;
	pthread_mutex_unlock(&out_lock);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			path = argv[i] + 4;
		} else {
			fprintf(stderr, "insn plugin: unknown argument %s (out=FILE)\n", argv[i]);
			return -1;
		}
	}
	if (!path || !*path) {
		fprintf(stderr, "insn plugin: out=FILE is needed\n");
		return -1;
	}
	/* the kernel/user split by address is x86-64's */
	if (!info->system_emulation || strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "insn plugin: x86_64 system emulation only, not %s%s\n",
			info->target_name, info->system_emulation ? "" : " user mode");
		return -1;
	}
	nvcpus = info->system.max_vcpus;
	counts = aligned_alloc(64, (nvcpus ? nvcpus : 1) * sizeof(*counts));
	if (counts)
		memset(counts, 0, (nvcpus ? nvcpus : 1) * sizeof(*counts));
	out = fopen(path, "w");
	if (!counts || !out) {
		perror(path);
		return -1;
	}
	*(void **)&vclock = dlsym(RTLD_DEFAULT, "qemu_clock_get_ns");
	fprintf(out, "insn format %d api %d target %s vcpus %u vclock %s\n", INSN_FORMAT,
		info->version.cur, info->target_name, nvcpus, vclock ? "yes" : "no");
	fflush(out);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
