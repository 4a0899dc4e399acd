#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# KUnit suites of pure logic (fakes, no bench device needed). Their KTAP is
# collected from debugfs by /init.
. /tests/lib.sh

suite_begin kunit_load
check "p2pbar loads" load p2pbar
check "p2pbar_kunit loads and runs" load p2pbar_kunit
check "p2pnvme loads" load p2pnvme
check "p2pnvme_kunit loads and runs" load p2pnvme_kunit
check "p2pnvme_queue_kunit loads and runs" load p2pnvme_queue_kunit
suite_end; exit $_any_failed
