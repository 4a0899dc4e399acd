#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# CPU cost per I/O in guest instructions: the benchmark boots with QEMU's
# instruction-counting TCG plugin (qemu/plugins/insn.c, P2P_INSN=1 in
# qemu/run.sh), every measured job inside a marked window; per row, the
# whole guest's instructions (all vCPUs, kernel and user: interrupts,
# softirqs, io_uring workers, polling) per I/O for p2pnvme and for nvme-pci
# on the twin controller of the same boot, their ratio, and over several
# boots its spread. What the instrument cannot see: Documentation/bench.rst.
#
#   scripts/cpu-insn.sh [SECONDS]            p2pbench's rows (qemu/tests/benchmark.guest.sh), 3 boots
#   scripts/cpu-insn.sh --fio ...            fio's rows (qemu/tests/fiobench.guest.sh) instead
#   scripts/cpu-insn.sh --runs N ...         N boots (default 3; a target is judged on 3 or more)
#   scripts/cpu-insn.sh --strict ...         under a strict vIOMMU (profile iommu-strict)
#   scripts/cpu-insn.sh --passes N ...       4 KiB points in N interleaved passes per boot (default 3)
#   scripts/cpu-insn.sh --clocksource CS ... the guest's clocksource (scripts/bench-lib.sh)
#   scripts/cpu-insn.sh --from DIR           the tables again from the boots kept in DIR
#   scripts/cpu-insn.sh --update-doc ...     and put them in Documentation/benchmarks.md (3 runs or more)
#
# Each boot's serial log and plugin output are kept in
# out/insn/PROFILE.TEST.DATE/runK/, with the host's load average around it.
# A target is "met" or "missed" only when at least 3 boots measured it,
# their ratios are within 3% of their median, and every boot agrees;
# otherwise the table says why it is not judged.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=3 passes=3 runs=3 profile=switch test=benchmark clock=tsc from='' update=''
. "$top/scripts/bench-lib.sh"
while [ $# -gt 0 ]; do
	case "$1" in
	--fio) test=fiobench ;;
	--runs) runs=${2:?--runs N}; shift ;;
	--strict) profile=iommu-strict ;;
	--passes) passes=${2:?--passes N}; shift ;;
	--clocksource) clock=${2:?--clocksource tsc|hpet|acpi_pm}; shift ;;
	--from) from=${2:?--from DIR}; shift ;;
	--update-doc) update=1 ;;
	-h|--help) sed -n '4,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "cpu-insn.sh: unknown option $1" >&2; exit 2 ;;
	*) secs=$1 ;;
	esac
	shift
done
case $runs in ''|*[!0-9]*|0) echo "cpu-insn.sh: --runs wants a count of 1 or more, not '$runs'" >&2; exit 2 ;; esac
if [ -z "$from" ]; then
	# fiobench's t/io_uring needs 2 s a run (fio-benchmark.sh); p2pbench 1
	min=1; [ $test = fiobench ] && min=2
	bench_counts cpu-insn.sh "$passes" "$secs" $min || exit 2
	append=$(bench_clock_append "$clock") || exit 2
	from=$top/out/insn/$profile.$test.$(date -u +%Y%m%dT%H%M%S)
	run=$top/out/runs/$profile.$test.base
	if [ $test = fiobench ]; then est=$(( secs * (28 + 20 * passes) + 60 )); else est=$(( secs * 61 + 110 )); fi
	echo "cpu-insn: $runs boots of the $profile profile, test $test, with QEMU's instruction-counting plugin," \
		"$secs s per point, $passes passes, clocksource $clock (about $est s each); kept in $from" >&2
	for k in $(seq "$runs"); do
		d=$from/run$k
		mkdir -p "$d"
		cat /proc/loadavg > "$d/loadavg.start"
		P2P_INSN=1 P2P_NVME_TRACE=0 P2P_EXTRA_APPEND="p2pbenchsecs=$secs p2pbenchpasses=$passes $append" \
			"$top/qemu/run.sh" --quiet --timeout $((est * 3 + 300)) "$profile" "$test" ||
			{ echo "cpu-insn: boot $k failed, see $run/serial.log" >&2; exit 1; }
		cat /proc/loadavg > "$d/loadavg.end"
		cp "$run/serial.log" "$run/insn.log" "$d/"
		bench_clock_check "$d/serial.log" "$clock" || echo "cpu-insn: boot $k changed clocksource" > "$d/clock"
		echo "cpu-insn: boot $k of $runs done" >&2
	done
fi
[ -d "$from" ] || { echo "cpu-insn: no directory $from" >&2; exit 2; }
table=$(python3 "$top/scripts/cpu-insn.py" "$from")
echo "$table"
if [ -n "$update" ]; then
	n=$(find "$from" -maxdepth 2 -name insn.log | wc -l)
	[ "$n" -ge 3 ] || { echo "cpu-insn: not updating the document from $n boot(s): 3 or more" >&2; exit 1; }
	# the kept boots' directory says which: PROFILE.TEST.DATE
	case $(basename "$from") in *.fiobench.*) tag=insn-fio-results ;; *) tag=insn-results ;; esac
	case $(basename "$from") in iommu-strict.*) tag=$tag-strict ;; esac
	python3 - "$top/Documentation/benchmarks.md" "$table" "$(date -u +%Y-%m-%d)" "$tag" \
		"$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)" <<'PY'
import re, sys
doc, table, day, tag, rev = sys.argv[1:]
s = open(doc).read()
new = f'<!-- {tag} -->\n{day}, at {rev}, 2 vCPUs under TCG (MTTCG) on a 2-core host:\n\n{table}\n<!-- /{tag} -->'
if f'<!-- {tag} -->' not in s:
    raise SystemExit(f'no <!-- {tag} --> section in {doc}')
s = re.sub(rf'<!-- {tag} -->.*<!-- /{tag} -->', lambda m: new, s, flags=re.S)
open(doc, 'w').write(s)
PY
	echo "updated Documentation/benchmarks.md ($tag)" >&2
fi
