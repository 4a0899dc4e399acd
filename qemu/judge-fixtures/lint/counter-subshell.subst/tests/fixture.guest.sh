#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lint fixture (qemu/lint-tests.sh --selftest): a result inside $( )
. /tests/lib.sh
expect_suites guest.fixture
suite_begin fixture
out=$(p2pctl info; pass "p2pctl info ran")
diag "$out"
suite_end; exit $_any_failed
