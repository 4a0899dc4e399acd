# SPDX-License-Identifier: GPL-2.0
# Sourced by the benchmark scripts (benchmark.sh, fio-benchmark.sh,
# file-benchmark.sh, cpu-profile.sh, cpu-insn.sh) and by qemu/run.sh (the
# insn test's clocksource): the options they share, their counts, the
# guest's clocksource, and their tables' place in a document.

# bench_opt SCRIPT ARG...: the option ARG (the first; the rest its
# value) if it is one of those every benchmark script takes, into the
# script's variables: --update-doc (update=1), --passes N (passes),
# --clocksource CS (clock), SECONDS (secs); -h or --help prints the
# script's header (bench_help) and exits 0, another option is refused
# (exit 2). bench_shift: how many words it took.
# shellcheck disable=SC2034 # the calling script's variables
bench_opt() {
	local script=$1
	shift
	bench_shift=1
	case "$1" in
	--update-doc) update=1 ;;
	--passes) passes=${2:?--passes N}; bench_shift=2 ;;
	--clocksource) clock=${2:?--clocksource tsc|hpet|acpi_pm}; bench_shift=2 ;;
	-h|--help) bench_help "$0"; exit 0 ;;
	-*) echo "$script: unknown option $1" >&2; exit 2 ;;
	*) secs=$1 ;;
	esac
}

# bench_help SCRIPT: SCRIPT's header, its comment from line 4 to the first
# line that is not one, without the "# "
bench_help() {
	awk 'NR >= 4 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "$1"
}

# bench_counts SCRIPT PASSES SECONDS MIN_SECONDS: 0 if the counts are
# whole numbers, PASSES at least 1 and SECONDS at least MIN_SECONDS; else
# say which is wrong, and 2
bench_counts() {
	case $2 in ''|*[!0-9]*|0)
		echo "$1: --passes wants a count of 1 or more, not '$2'" >&2; return 2 ;;
	esac
	case $3 in ''|*[!0-9]*) ;; *) [ "$3" -ge "$4" ] && return 0 ;; esac
	echo "$1: SECONDS wants a count of $4 or more, not '$3'" >&2
	return 2
}

# The clocksource.
#
# Under TCG the guest's clocksource watchdog, its reads delayed by the
# emulation, may find the TSC unstable in the middle of a run and move the
# guest to HPET, where every clock read (fio's own, a driver's) is a
# register access QEMU emulates: several microseconds each, where a
# server's TSC costs nanoseconds. Some boots did, some did not, and their
# results differed by up to 1.6x. So a benchmark boot names its clocksource
# (--clocksource, default tsc, which is trusted: tsc=reliable), the guest
# tests say which one they ran on at their start and end (P2P-CLOCK), and
# bench_clock_check complains when that is not the one asked for.

# bench_clock_append NAME: the kernel arguments for clocksource NAME
bench_clock_append() {
	case $1 in
	tsc) echo "clocksource=tsc tsc=reliable" ;;
	hpet|acpi_pm) echo "clocksource=$1" ;;
	*) echo "--clocksource wants tsc, hpet or acpi_pm, not '$1'" >&2; return 2 ;;
	esac
}

# bench_clock_check SERIAL_LOG NAME: 0 if the guest's tests ran on NAME from
# their start to their end; else say what they ran on, and 1
bench_clock_check() {
	local seen
	# tsc-early is the TSC before its calibration is refined (the first
	# seconds of a boot): the same clock
	seen=$(grep -a '^P2P-CLOCK ' "$1" | tr -d '\r' |
		awk '{ c = $3; if (c == "tsc-early") c = "tsc"; print c }' | sort -u | tr '\n' ' ')
	[ "$seen" = "$2 " ] && return 0
	echo "warning: the guest's clocksource was '${seen% }' during the run, not '$2' as asked:" \
		"these numbers include its clock reads' cost" >&2
	return 1
}

# bench_updating: whether a script puts its run's tables in the document:
# not without --update-doc (update); with it, yes, or exit 1 saying why not
# if the run was not on the clocksource asked for (clock; clock_ok empty:
# bench_clock_check said so)
bench_updating() {
	[ -n "$update" ] || return 1
	if [ -z "$clock_ok" ]; then
		echo "not updating Documentation/benchmarks.md: the run was not on clocksource $clock" >&2
		exit 1
	fi
}

# bench_doc_put DOC TAG HEAD TABLE: the block of DOC between "<!-- TAG -->"
# and "<!-- /TAG -->" made HEAD (a line: when, where, how), a blank line and
# TABLE; fails if DOC has no such block
bench_doc_put() {
	python3 - "$@" <<'PY'
import re, sys
doc, tag, head, table = sys.argv[1:]
s = open(doc).read()
new = f'<!-- {tag} -->\n{head}\n\n{table}\n<!-- /{tag} -->'
if f'<!-- {tag} -->' not in s:
    raise SystemExit(f'no <!-- {tag} --> section in {doc}')
s = re.sub(rf'<!-- {tag} -->.*<!-- /{tag} -->', lambda m: new, s, flags=re.S)
open(doc, 'w').write(s)
PY
}
