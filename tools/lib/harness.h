/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The test programs' harness: tests and fixtures as in the kernel's
 * tools/testing/selftests/kselftest_harness.h (FIXTURE, FIXTURE_SETUP,
 * FIXTURE_TEARDOWN, TEST, TEST_F; each test forked, killed at its timeout),
 * but keeping the bench's KTAP: one suite per run, a case line per check
 * (tap() and result() of ktap.h, numbered across the tests), the plan
 * summed from each test's own. Why not kselftest_harness.h itself:
 * Documentation/bench.rst, "The test programs' harness".
 *
 *	FIXTURE(dev) { int fd; };
 *	FIXTURE_SETUP(dev) { self->fd = open(path, O_RDWR); if (self->fd < 0) kt_skip("no %s", path); }
 *	FIXTURE_TEARDOWN(dev) { close(self->fd); }
 *	TEST_F(client_reuse, dev, same_buffer, 2, 60) { tap(...); tap(...); }
 *	...
 *	return kt_run("client_reuse");
 *
 * A test belongs to a suite (what kt_run() runs, in the order the tests
 * are written), plans its case lines (an expression, evaluated when the
 * suite starts, so it may use what main() parsed) and has a timeout in
 * seconds, multiplied by $P2P_TIMEOUT_SCALE (the bench's debug kernel:
 * qemu/guest/lib.sh). Each test runs in a child of its own, in a process
 * group of its own: setup, the test, teardown. The harness then prints the
 * test's own line, "ok N <fixture>.<test>", which fails if the child did
 * not exit by itself with all its planned cases printed: killed at the
 * timeout (with its process group), by a signal, kt_fail(), an exit status.
 * Planned cases never printed are "not ok ... not reached (why)", or
 * "ok ... # SKIP reason" after kt_skip(), and cases beyond the plan are
 * diagnostics that fail the test, so a suite's plan always holds.
 * A test's state lives in its fixture, never in what an earlier test left
 * in the process (each child starts from the parent's state).
 */
#ifndef P2P_TESTS_HARNESS_H
#define P2P_TESTS_HARNESS_H

#include <stddef.h>

#include "ktap.h"

struct kt_test {
	const char *suite, *fixture, *name;
	int line;			/* tests run in the order they are written */
	int (*plan)(void);		/* case lines the test prints */
	int timeout;			/* seconds, before $P2P_TIMEOUT_SCALE */
	size_t size;			/* of the fixture's data */
	void (*setup)(void *self);
	void (*teardown)(void *self);
	void (*fn)(void *self);
	struct kt_test *next;
};

void kt_register(struct kt_test *t);
/* run the tests of @suite as one KTAP document; 0 if all passed */
int kt_run(const char *suite);
/* the same, the document's suite named @name (one test set, several runs) */
int kt_run_as(const char *suite, const char *name);

/* end the running test: its remaining cases SKIP with @fmt's reason */
__attribute__((noreturn, format(printf, 1, 2))) void kt_skip(const char *fmt, ...);
/* end the running test: failed, its remaining cases not reached, for @fmt */
__attribute__((noreturn, format(printf, 1, 2))) void kt_fail(const char *fmt, ...);

#define FIXTURE(f) struct _kt_fixture_##f

#define FIXTURE_SETUP(f)							\
	static void _kt_setup_##f(FIXTURE(f) *self);				\
	static void _kt_setup_v_##f(void *self) { _kt_setup_##f(self); }	\
	static void _kt_setup_##f(FIXTURE(f) __attribute__((unused)) *self)

#define FIXTURE_TEARDOWN(f)							\
	static void _kt_teardown_##f(FIXTURE(f) *self);				\
	static void _kt_teardown_v_##f(void *self) { _kt_teardown_##f(self); }	\
	static void _kt_teardown_##f(FIXTURE(f) __attribute__((unused)) *self)

#define _KT_REGISTER(s, f, n, p, tmo, sz, su, td)				\
	static int _kt_plan_##f##_##n(void) { return (p); }			\
	static struct kt_test _kt_test_##f##_##n = {				\
		.suite = #s, .fixture = #f, .name = #n, .line = __LINE__,	\
		.plan = _kt_plan_##f##_##n, .timeout = (tmo), .size = (sz),	\
		.setup = (su), .teardown = (td), .fn = _kt_fn_v_##f##_##n,	\
	};									\
	__attribute__((constructor)) static void _kt_reg_##f##_##n(void)	\
	{									\
		kt_register(&_kt_test_##f##_##n);				\
	}

/* TEST_F(suite, fixture, name, plan, timeout) { ... self->... } */
#define TEST_F(s, f, n, p, tmo)							\
	static void _kt_fn_##f##_##n(FIXTURE(f) *self);				\
	static void _kt_fn_v_##f##_##n(void *self) { _kt_fn_##f##_##n(self); }	\
	_KT_REGISTER(s, f, n, p, tmo, sizeof(FIXTURE(f)), _kt_setup_v_##f,	\
		     _kt_teardown_v_##f)					\
	static void _kt_fn_##f##_##n(FIXTURE(f) __attribute__((unused)) *self)

/* TEST(suite, name, plan, timeout) { ... }: no fixture ("global") */
#define TEST(s, n, p, tmo)							\
	static void _kt_fn_global_##n(void);					\
	static void _kt_fn_v_global_##n(void *self) { (void)self; _kt_fn_global_##n(); } \
	_KT_REGISTER(s, global, n, p, tmo, 0, NULL, NULL)			\
	static void _kt_fn_global_##n(void)

#endif /* P2P_TESTS_HARNESS_H */
