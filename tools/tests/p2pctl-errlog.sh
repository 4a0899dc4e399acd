#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# p2pctl nvme-error-log against a made-up controller with 256 error log
# entries (tools/tests/p2pctl-errlog.c): read whole, in 4 KiB pieces, and
# each entry's status_field and phase_tag as nvme-cli prints them
# (status_field = the word >> 1, phase_tag = bit 0), parsed by python.
#
#   tools/tests/p2pctl-errlog.sh [P2PCTL-ERRLOG]
B=${1:-$(dirname "$0")/../build/p2pctl-errlog}
out=$("$B") || { echo "FAIL: $B exits $?"; exit 1; }
printf '%s' "$out" | python3 -c '
import json
import sys

d = json.load(sys.stdin)
e = d["errors"]
want = [{"error_count": n + 1, "status_field": n, "phase_tag": 1, "opcode": 2} for n in range(256)]
got = [{k: x[k] for k in ("error_count", "status_field", "phase_tag", "opcode")} for x in e]
if d["entries"] != 256 or got != want:
    sys.exit("FAIL: p2pctl nvme-error-log -o json: %s entries, %d in use, first %s"
             % (d["entries"], len(got), got[:2]))
' || exit 1
echo "p2pctl nvme-error-log: 256 entries in 4 KiB pieces, nvme-cli's status_field: all cases pass"
