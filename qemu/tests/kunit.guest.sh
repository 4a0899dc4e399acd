#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# KUnit suites of pure logic (fakes, no bench device needed). Their KTAP is
# collected from debugfs by /init.
. /tests/lib.sh
expect_suites guest.kunit_load kunit.p2pbar kunit.p2pnvme kunit.p2pnvme_queue

suite_begin kunit_load
check "p2pbar loads" load p2pbar
check "p2pbar_kunit loads and runs" load p2pbar_kunit
check "kunit.p2pbar: its results in debugfs" kunit_ran p2pbar
check "p2pnvme loads" load p2pnvme
check "p2pnvme_kunit loads and runs" load p2pnvme_kunit
check "kunit.p2pnvme: its results in debugfs" kunit_ran p2pnvme
check "p2pnvme_queue_kunit loads and runs" load p2pnvme_queue_kunit
check "kunit.p2pnvme_queue: its results in debugfs" kunit_ran p2pnvme_queue
suite_end; exit $_any_failed
