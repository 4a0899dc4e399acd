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
#   scripts/cpu-insn.sh --file ...           the file benchmark's rows (qemu/tests/filebench.guest.sh,
#                                            Documentation/files.rst step 7) instead: each against
#                                            nvme-pci's O_DIRECT of the same file into p2pmem, and
#                                            the filesystem's mapping per I/O on its own;
#                                            placeholders (7) against the real pages (1), <= 1.1x,
#                                            and at 1 MiB QD8 against the bounce (4), <= 0.5x
#   scripts/cpu-insn.sh --insn ...           the insn test's rows (qemu/tests/insn.guest.sh: the
#                                            registered 4 KiB QD32 row and nvme-pci's) instead
#   scripts/cpu-insn.sh --profile ...        and where the instructions go: the plugin's profile
#                                            mode (P2P_INSN_PROF=1 of qemu/run.sh), 1 boot unless
#                                            --runs; after the table, per comparison, p2pnvme's
#                                            row beside nvme-pci's by module and by function
#                                            (scripts/insn-prof.py), also in DIR/profile.md
#   scripts/cpu-insn.sh --runs N ...         N boots (default 3; a target is judged on 3 or more)
#   scripts/cpu-insn.sh --strict ...         under a strict vIOMMU (profile iommu-strict)
#   scripts/cpu-insn.sh --passes N ...       4 KiB points in N interleaved passes per boot (default 3)
#   scripts/cpu-insn.sh --clocksource CS ... the guest's clocksource (scripts/bench-lib.sh)
#   scripts/cpu-insn.sh --from DIR           the tables again from the boots kept in DIR
#                                            (--profile: and the profiles, of profile boots)
#   scripts/cpu-insn.sh --update-doc ...     and put them in Documentation/benchmarks.md (3 runs or more)
#   scripts/cpu-insn.sh --record [--runs N] [--strict]
#                                            the insn test (make check's CPU-per-I/O regression
#                                            check: qemu/tests/insn.guest.sh), booted as make check
#                                            boots it, N times (default 3); their median figure
#                                            written to qemu/insn-baseline for that run, with the
#                                            date, the commit and how (3 boots or more, within 3%)
#   scripts/cpu-insn.sh --record --from DIR  the same from insn boots kept in DIR
#
# Each boot's serial log and plugin output are kept in
# out/insn/PROFILE.TEST.DATE/runK/, with the host's load average around it
# (profile boots: PROFILE.TEST-prof.DATE, with the profiles and System.map).
# The profile mode counts the same instructions, but slows the vCPUs
# against the emulated controllers, which may change how much each
# interrupt completes: its boots are for where, not for the figures; they
# update neither the document nor the recorded figure.
# A target is "met" or "missed" only when at least 3 boots measured it,
# their ratios are within 3% of their median, and every boot agrees;
# otherwise the table says why it is not judged.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=3 passes=3 runs='' profile=switch test=benchmark clock=tsc from='' update='' record='' fixed='' prof=0
. "$top/scripts/bench-lib.sh"
while [ $# -gt 0 ]; do
	case "$1" in
	--fio) test=fiobench fixed+=" $1" ;;
	--file) test=filebench fixed+=" $1" ;;
	--insn) test=insn ;;
	--profile) prof=1 ;;
	--runs) runs=${2:?--runs N}; shift ;;
	--strict) profile=iommu-strict ;;
	--from) from=${2:?--from DIR}; shift ;;
	--record) record=1 ;;
	*)
		# --passes, --clocksource, --update-doc and SECONDS: what --record
		# and --insn refuse (they boot the insn test as make check does)
		bench_opt cpu-insn.sh "$@"
		case "$1" in -*) fixed+=" $1" ;; *) fixed+=" SECONDS" ;; esac
		# shellcheck disable=SC2154 # bench_shift: bench_opt's
		shift $((bench_shift - 1)) ;;
	esac
	shift
done
# --record: the insn test as make check boots it (its own seconds and
# passes; run.sh sets its plugin, trace and clocksource), nothing else;
# --insn: that test too, with --profile if asked
if [ -n "$record" ]; then
	[ $prof = 0 ] || fixed+=" --profile"
	[ -z "$fixed" ] || { echo "cpu-insn.sh: --record boots the insn test as make check does, without$fixed" >&2; exit 2; }
	test=insn
elif [ $test = insn ] && [ -n "$fixed" ]; then
	echo "cpu-insn.sh: --insn boots the insn test as make check does, without$fixed" >&2
	exit 2
fi
# the file benchmark has no strict-vIOMMU table (nor a document block for one)
if [ $test = filebench ] && [ $profile != switch ]; then
	echo "cpu-insn.sh: --file boots the switch profile only, not --strict" >&2
	exit 2
fi
# --profile: the plugin's profile mode, its boots kept apart (-prof)
ptag=
if [ $prof = 1 ]; then
	[ -z "$update" ] || { echo "cpu-insn.sh: profile boots are for where the instructions go, not the document's figures" >&2; exit 2; }
	runs=${runs:-1} ptag=-prof
fi
runs=${runs:-3}
case $runs in ''|*[!0-9]*|0) echo "cpu-insn.sh: --runs wants a count of 1 or more, not '$runs'" >&2; exit 2 ;; esac
if [ -z "$from" ]; then
	# fiobench's t/io_uring needs 2 s a run (fio-benchmark.sh); p2pbench 1
	min=1; [ $test = fiobench ] && min=2
	bench_counts cpu-insn.sh "$passes" "$secs" $min || exit 2
	append=$(bench_clock_append "$clock") || exit 2
	from=$top/out/insn/$profile.$test$ptag.$(date -u +%Y%m%dT%H%M%S)
	run=$top/out/runs/$profile.$test.base
	case $test in
	fiobench) est=$(( secs * (28 + 20 * passes) + 60 )) ;;
	# 20 runs a pass (fio's four among them), a second of set-up each, the
	# warm-ups and fio's verifying runs (estimated: not booted yet)
	filebench) est=$(( (secs + 1) * 20 * passes + 150 )) ;;
	*) est=$(( secs * 61 + 110 )) ;;
	esac
	what="$secs s per point, $passes passes, clocksource $clock"
	if [ $test = insn ]; then
		# qemu/tests/insn.guest.sh's own seconds and passes (about 20 s)
		est=60 append='' what="as make check boots it"
	else
		append="p2pbenchsecs=$secs p2pbenchpasses=$passes $append"
	fi
	echo "cpu-insn: $runs boots of the $profile profile, test $test, with QEMU's instruction-counting plugin," \
		"$what (about $est s each); kept in $from" >&2
	for k in $(seq "$runs"); do
		d=$from/run$k
		mkdir -p "$d"
		cat /proc/loadavg > "$d/loadavg.start"
		if ! P2P_INSN=1 P2P_INSN_PROF=$prof P2P_NVME_TRACE=0 P2P_EXTRA_APPEND="$append" \
			"$top/qemu/run.sh" --quiet --timeout $((est * 3 + 300)) "$profile" "$test"; then
			# the insn test's run is judged against the figure being
			# recorded (none, or the old one): its regression cases may
			# fail here, nothing else
			if [ $test != insn ] || [ ! -s "$run/reasons" ] ||
				grep -qv "^not ok: host: insn: p2pnvme's" "$run/reasons"; then
				echo "cpu-insn: boot $k failed, see $run/serial.log and $run/reasons" >&2
				exit 1
			fi
			echo "cpu-insn: boot $k: $(grep -c . "$run/reasons") regression case(s) failed" \
				"against qemu/insn-baseline as it is" >&2
		fi
		cat /proc/loadavg > "$d/loadavg.end"
		cp "$run/serial.log" "$run/insn.log" "$d/"
		[ $prof = 0 ] || cp "$run"/insn-prof.* "$run/System.map" "$d/"
		bench_clock_check "$d/serial.log" "$clock" || echo "cpu-insn: boot $k changed clocksource" > "$d/clock"
		echo "cpu-insn: boot $k of $runs done" >&2
	done
fi
[ -d "$from" ] || { echo "cpu-insn: no directory $from" >&2; exit 2; }
table=$(python3 "$top/scripts/cpu-insn.py" "$from")
echo "$table"
if [ -n "$record" ]; then
	# the boots' directory says which run they were: PROFILE.insn.DATE
	base=$(basename "$from")
	case $base in
	*.insn.*) ;;
	*) echo "cpu-insn: $from is not the insn test's boots (PROFILE.insn.DATE)" >&2; exit 1 ;;
	esac
	python3 "$top/scripts/cpu-insn.py" --record "$from" "${base%%.insn.*}.insn.base" \
		"$top/qemu/insn-baseline" "$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)" \
		"$(date -u +%Y-%m-%d)" || exit 1
	echo "cpu-insn: commit qemu/insn-baseline with the change it measures" >&2
fi
if [ $prof = 1 ]; then
	# where the instructions go, per comparison (scripts/insn-prof.py)
	python3 "$top/scripts/insn-prof.py" "$from" > "$from/profile.md" ||
		{ echo "cpu-insn: no profile (scripts/insn-prof.py $from)" >&2; exit 1; }
	echo
	cat "$from/profile.md"
	echo "cpu-insn: the profiles are in $from/profile.md; scripts/insn-prof.py --help for other views" >&2
fi
if [ -n "$update" ]; then
	case $(basename "$from") in *.insn.*|*-prof.*)
		echo "cpu-insn: the insn test's boots are the regression check's (--record), and profile boots" \
			"(-prof) are for where the instructions go: neither is the document's" >&2
		exit 1 ;;
	esac
	n=$(find "$from" -maxdepth 2 -name insn.log | wc -l)
	[ "$n" -ge 3 ] || { echo "cpu-insn: not updating the document from $n boot(s): 3 or more" >&2; exit 1; }
	# the kept boots' directory says which: PROFILE.TEST.DATE
	case $(basename "$from") in
	*.fiobench.*) tag=insn-fio-results ;;
	*.filebench.*) tag=insn-file-results ;;
	*) tag=insn-results ;;
	esac
	case $(basename "$from") in iommu-strict.*) tag=$tag-strict ;; esac
	rev=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
	bench_doc_put "$top/Documentation/benchmarks.md" "$tag" \
		"$(date -u +%Y-%m-%d), at $rev, 2 vCPUs under TCG (MTTCG) on a 2-core host:" "$table"
	echo "updated Documentation/benchmarks.md ($tag)" >&2
fi
