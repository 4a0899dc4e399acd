#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lint fixture (qemu/lint-tests.sh --selftest): a check that cannot fail
. /tests/lib.sh
expect_suites guest.fixture
suite_begin fixture
released
check "the dma-buf goes after the module" true
suite_end; exit $_any_failed
