// SPDX-License-Identifier: GPL-2.0
/*
 * insn: a QEMU TCG plugin (Debian's QEMU 7.2, plugin API version 1) that
 * counts the instructions the guest executes, per vCPU, kernel and user
 * apart, and writes them out whenever the guest executes a marker.
 *
 *   qemu-system-x86_64 ... -plugin file=insn.so,out=FILE[,prof=on]
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
 *
 * Profile mode (prof=on; the default is off, whose work and output are
 * the above and nothing else): while a window is open (its start marker,
 * id 2N, executed and not yet its end marker, 2N + 1), every execution of
 * a block also counts for that block, keyed by its start address and its
 * instruction count (a block translated again, after a flush, counts on in
 * the same entry; user blocks of different processes at one address
 * share one). At the window's end marker the blocks that ran in it are
 * written to FILE's name with "-prof.N" in place of ".log" (insn.log:
 * insn-prof.N), N the window:
 *
 *   insn-prof format 1 window N vcpus V dropped D
 *   VADDR NINSNS BYTES EXECS
 *   ...
 *   end blocks B insns I
 *
 * VADDR the block's start (hex), NINSNS its instructions, BYTES its
 * code's size, EXECS how often it ran in the window (all vCPUs); B the
 * lines, I the sum of NINSNS x EXECS; D the blocks left out because the
 * table was full (must stay 0). A window still open at exit (or when the
 * next one opens) is written then, its first line saying "open". The block
 * holding the start marker counts before the window (its execution
 * callback runs before the marker's) and the one holding the end marker
 * inside it, as in the marker lines' counts: I is the window's count in
 * FILE, but for the blocks another vCPU ran between a marker's line and
 * the window's opening or closing (a few, said as the profile's coverage
 * by scripts/insn-prof.py).
 *
 * Counting per block: each vCPU's executions in a table of its own,
 * written only by its own thread, each entry tagged with the window it
 * counts (a sequence number, from 1); the first execution in a new window
 * starts the entry again from 0. No thread writes another's counts and
 * nothing is reset between windows; a dump reads the entries of its
 * window. Profile mode costs a hash look-up at translation and a second
 * counter update per block executed.
 */
#include <dlfcn.h>
#include <stdbool.h>
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

/*
 * Profile mode. A block as translated: its start, instruction count, code
 * size, whether it is the kernel's, and its index in the vCPUs' tables
 * (PROF_NONE: the table was full). Allocated at translation under
 * prof_lock, entered in the hash and in prof_blocks, never freed; the
 * execution callback's udata.
 */
#define PROF_MAX	2097152u	/* distinct blocks profiled in a boot */
#define PROF_HASH	262144u
#define PROF_NONE	UINT32_MAX

struct prof_block {
	struct prof_block *next;	/* in its hash chain */
	__u64 vaddr;
	__u32 n;
	__u32 bytes;
	__u32 idx;
	__u32 kernel;
};

/* a vCPU's count of one block: its own thread writes it, a dump reads it */
struct prof_slot {
	__u64 seq;	/* the window the count is of */
	__u64 execs;
};

static int prof;
static char *prof_prefix;	/* FILE without ".log", then "-prof" */
static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prof_block **prof_hash;	/* under prof_lock */
static struct prof_block **prof_blocks;	/* [0, prof_n): written before prof_n grows */
static __u32 prof_n;
static __u64 prof_dropped;
static struct prof_slot **prof_slots;	/* [vcpu][idx] */
/* the open window's sequence number (0: none open), set under out_lock */
static __u64 prof_open;
static __u64 prof_seq;			/* under out_lock */
static unsigned int prof_win;		/* under out_lock: the open window */

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

/* profile mode: the default's count and the block's, in an open window */
static void tb_exec_prof(unsigned int vcpu, void *udata)
{
	const struct prof_block *b = udata;
	struct prof_slot *s;
	__u64 *c, w;

	if (vcpu >= nvcpus) {
		__atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
		return;
	}
	c = &counts[vcpu].insn[b->kernel];
	__atomic_store_n(c, *c + b->n, __ATOMIC_RELAXED);
	w = __atomic_load_n(&prof_open, __ATOMIC_RELAXED);
	if (!w || b->idx == PROF_NONE)
		return;
	s = &prof_slots[vcpu][b->idx];
	if (s->seq != w) {
		/* a dump that sees the new window sees the count from 0 */
		__atomic_store_n(&s->execs, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->seq, w, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&s->execs, s->execs + 1, __ATOMIC_RELAXED);
}

/* write the blocks that ran in window @win (sequence @seq); under out_lock */
static void prof_dump(unsigned int win, __u64 seq, int open)
{
	size_t len = strlen(prof_prefix) + 16;
	char *path = malloc(len);
	__u64 total = 0, execs;
	__u32 n, i, nb = 0;
	unsigned int v;
	FILE *f;

	if (!path)
		return;
	snprintf(path, len, "%s.%u", prof_prefix, win);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		free(path);
		return;
	}
	fprintf(f, "insn-prof format %d window %u%s vcpus %u dropped %llu\n", INSN_FORMAT, win,
		open ? " open" : "", nvcpus,
		(unsigned long long)__atomic_load_n(&prof_dropped, __ATOMIC_RELAXED));
	n = __atomic_load_n(&prof_n, __ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++) {
		const struct prof_block *b = prof_blocks[i];

		execs = 0;
		for (v = 0; v < nvcpus; v++)
			if (__atomic_load_n(&prof_slots[v][i].seq, __ATOMIC_ACQUIRE) == seq)
				execs += __atomic_load_n(&prof_slots[v][i].execs, __ATOMIC_RELAXED);
		if (!execs)
			continue;
		fprintf(f, "%llx %u %u %llu\n", (unsigned long long)b->vaddr, b->n, b->bytes,
			(unsigned long long)execs);
		total += execs * b->n;
		nb++;
	}
	fprintf(f, "end blocks %u insns %llu\n", nb, (unsigned long long)total);
	if (fclose(f))
		perror(path);
	free(path);
}

/* profile mode: window @id / 2 opens (even @id) or closes; under out_lock */
static void prof_mark(unsigned int id)
{
	__u64 seq = __atomic_load_n(&prof_open, __ATOMIC_RELAXED);

	if (!(id & 1)) {
		if (seq)	/* the last one never closed: what it has */
			prof_dump(prof_win, seq, 1);
		prof_win = id / 2;
		__atomic_store_n(&prof_open, ++prof_seq, __ATOMIC_RELAXED);
	} else if (seq && id / 2 == prof_win) {
		__atomic_store_n(&prof_open, 0, __ATOMIC_RELAXED);
		prof_dump(prof_win, seq, 0);
	}
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
	if (prof)
		prof_mark((unsigned int)(uintptr_t)udata);
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

/* profile mode: the entry of block @tb, made if it is new */
static struct prof_block *prof_block(struct qemu_plugin_tb *tb)
{
	__u64 vaddr = qemu_plugin_tb_vaddr(tb);
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
	__u32 h = (__u32)((vaddr ^ vaddr >> 21 ^ n << 7) * 0x9e3779b1u) % PROF_HASH;
	struct prof_block *b;

	pthread_mutex_lock(&prof_lock);
	for (b = prof_hash[h]; b; b = b->next)
		if (b->vaddr == vaddr && b->n == n)
			goto out;
	b = malloc(sizeof(*b));
	if (!b)
		goto out;
	b->vaddr = vaddr;
	b->n = n;
	b->bytes = qemu_plugin_insn_vaddr(last) + qemu_plugin_insn_size(last) - vaddr;
	b->kernel = vaddr >= KERNEL_HALF;
	b->idx = PROF_NONE;
	if (prof_n < PROF_MAX) {
		b->idx = prof_n;
		prof_blocks[prof_n] = b;
		__atomic_store_n(&prof_n, prof_n + 1, __ATOMIC_RELEASE);
	} else {
		__atomic_fetch_add(&prof_dropped, 1, __ATOMIC_RELAXED);
	}
	b->next = prof_hash[h];
	prof_hash[h] = b;
out:
	pthread_mutex_unlock(&prof_lock);
	return b;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	int kernel = qemu_plugin_tb_vaddr(tb) >= KERNEL_HALF, m;
	struct prof_block *b = prof && n ? prof_block(tb) : NULL;

	if (b)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_prof, QEMU_PLUGIN_CB_NO_REGS, b);
	else
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

/* profile mode's tables, and its files' names from FILE's */
static int prof_init(const char *path)
{
	size_t len = strlen(path);
	unsigned int v;

	if (len > 4 && !strcmp(path + len - 4, ".log"))
		len -= 4;
	prof_prefix = malloc(len + sizeof("-prof"));
	prof_hash = calloc(PROF_HASH, sizeof(*prof_hash));
	prof_blocks = calloc(PROF_MAX, sizeof(*prof_blocks));
	prof_slots = calloc(nvcpus ? nvcpus : 1, sizeof(*prof_slots));
	if (!prof_prefix || !prof_hash || !prof_blocks || !prof_slots)
		goto nomem;
	memcpy(prof_prefix, path, len);
	memcpy(prof_prefix + len, "-prof", sizeof("-prof"));
	/* untouched pages stay unallocated: a table costs what it holds */
	for (v = 0; v < nvcpus; v++) {
		prof_slots[v] = calloc(PROF_MAX, sizeof(**prof_slots));
		if (!prof_slots[v])
			goto nomem;
	}
	return 0;
nomem:
	fprintf(stderr, "insn plugin: no memory for the profile's tables\n");
	return -1;
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	pthread_mutex_lock(&out_lock);
	if (prof && __atomic_load_n(&prof_open, __ATOMIC_RELAXED))
		prof_dump(prof_win, __atomic_load_n(&prof_open, __ATOMIC_RELAXED), 1);
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
	bool on;
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			path = argv[i] + 4;
		} else if (!strncmp(argv[i], "prof=", 5) &&
			   qemu_plugin_bool_parse("prof", argv[i] + 5, &on)) {
			prof = on;
		} else {
			fprintf(stderr, "insn plugin: unknown argument %s (out=FILE[,prof=on])\n",
				argv[i]);
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
	if (prof && prof_init(path))
		return -1;
	*(void **)&vclock = dlsym(RTLD_DEFAULT, "qemu_clock_get_ns");
	fprintf(out, "insn format %d api %d target %s vcpus %u vclock %s\n", INSN_FORMAT,
		info->version.cur, info->target_name, nvcpus, vclock ? "yes" : "no");
	fflush(out);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
