# SPDX-License-Identifier: GPL-2.0
# Sourced by the benchmark scripts (benchmark.sh, fio-benchmark.sh,
# cpu-profile.sh, cpu-insn.sh) and by qemu/run.sh (the insn test's
# clocksource): their counts, and the guest's clocksource.

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
