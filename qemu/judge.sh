#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Judge one run where it ran: the tail of qemu/run.sh, on its own so that
# qemu/judge-selftest.sh feeds it the same fixtures a boot would.
#
#   qemu/judge.sh RUN_DIR QEMU_EXIT_STATUS KUNIT_PY
#
# serial.log's KTAP blocks -> RUN_DIR/ktap/ (qemu/ktap.py extract), the
# host suite (qemu/hostcheck.py), then the verdict (qemu/ktap.py judge): the
# kernel's KTAP parser and an independent count of the lines printed;
# RUN_DIR/status says "pass" only if nothing failed, RUN_DIR/summary has
# the counts, RUN_DIR/reasons each failure. Exit status 0 only for a pass.
set -uo pipefail
run=${1:?run dir} qrc=${2:?qemu exit status} kunit_py=${3:?kunit.py}
top=$(cd "$(dirname "$0")/.." && pwd)
echo fail > "$run/status"
rm -rf "$run/ktap/"*.ktap "$run/summary" "$run/reasons"
mkdir -p "$run/ktap"
python3 "$top/qemu/ktap.py" extract "$run" || exit 1
python3 "$top/qemu/hostcheck.py" "$run" > "$run/ktap/host.ktap" || exit 1
python3 "$top/qemu/ktap.py" judge "$kunit_py" "$run" --qemu-rc "$qrc" > "$run/judge.log" || exit 1
echo pass > "$run/status"
