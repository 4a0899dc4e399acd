#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# p2pctl's command line, no device needed: --help and COMMAND --help exit
# 0 on stdout, usage errors, bad numbers and bad PCI addresses exit 2 with
# one line naming what is wrong, a missing device exits 19 (ENODEV), never
# 2, options go anywhere (getopt_long), a command refuses the others' and
# options that exclude each other, JSON strings are escaped (json-c).
#
#   tools/tests/p2pctl-cli.sh [P2PCTL]
P=${1:-$(dirname "$0")/../build/p2pctl}
bad=0

# expect RC PATTERN ARGS...: exit status RC, and PATTERN in stdout+stderr
expect() {
	want=$1 pat=$2; shift 2
	out=$("$P" "$@" 2>&1); rc=$?
	if [ "$rc" != "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$pat"; then
		echo "FAIL: p2pctl $*: exit $rc (want $want), output: $(printf '%s' "$out" | head -n 2)"
		bad=1
	fi
}

expect 0 '^usage: p2pctl' --help
expect 0 '^usage: p2pctl' -h
expect 0 '^usage: p2pctl nvme-read NVME SLBA LEN' nvme-read --help
expect 0 '^usage: p2pctl verdict CLIENT' --help verdict
expect 0 '^p2pctl [0-9]' --version
expect 2 '^usage: p2pctl'
expect 2 "unknown command 'bogus' (see p2pctl --help)" bogus
expect 2 "unknown command 'bogus'" bogus --help
expect 2 'usage: verdict CLIENT' verdict
expect 2 'usage: list' list extra
expect 2 'usage: topo' topo extra
expect 2 'usage: doctor' doctor extra
expect 2 'doctor does not take --dev' doctor --dev /dev/p2pbar0
expect 2 'usage: check PROVIDER CLIENT' check 0000:00:00.0
expect 19 'check: PROVIDER: no such PCI function 0000:ff:1f.7' check 0000:ff:1f.7 0000:ff:1f.6
expect 19 'check: PROVIDER: no such PCI function 0000:ff:1f.7' check ff:1f.7 ff:1f.6
expect 0 '^usage: p2pctl list' list --help
expect 2 "dma: LEN: not a number: 'abc'" dma-read /dev/null 0 abc
expect 2 "dma: OFF: not a number: '4x'" dma-read /dev/null 4x 4096
expect 2 "not a number: '-1'" nvme-read /dev/null -1 4096
expect 2 "not a number: '99999999999999999999'" nvme-read /dev/null 0 99999999999999999999
expect 2 "not a number: '16777216T'" nvme-read /dev/null 0 16777216T
expect 2 "BYTE: more than 255: '256'" dma-write /dev/null 0 4k 256
expect 2 "unknown or incomplete option '--frob'" nvme-read /dev/null 0 4k --frob
expect 2 "unknown or incomplete option '--batch'" nvme-read /dev/null 0 4k --batch
expect 2 '-o takes json or normal' -o xml info
expect 2 'usage: nvme-copy' nvme-copy a 1
# suffixes are taken (the device is what fails then, with its errno)
expect 19 '"step":"/nonexistent/p2pbar"' dma-read /nonexistent/blk 1k 4k --dev /nonexistent/p2pbar -o json
# options anywhere; JSON strings escaped
expect 19 '"step":"/nonexistent/\\"q"' info '/nonexistent/"q' --json
expect 19 'p2pctl: /nonexistent/x: No such file' -o json -o normal info /nonexistent/x
# getopt_long: --opt=VALUE, abbreviations, "--" ends the options, an
# option of another command is refused by name, a missing argument too,
# an argument that looks like a negative number is still an argument
expect 19 '"step":"/nonexistent/p2pbar"' dma-read /nonexistent/blk 1k 4k --dev=/nonexistent/p2pbar -o json
expect 19 '"step":"/nonexistent/x"' --output-format=json info /nonexistent/x
expect 2 "nvme-io: --batch: not a number: 'x'" nvme-read /dev/null 0 4k --bat x
expect 2 "info does not take --batch (see p2pctl --help)" info --batch 4
expect 2 "verdict does not take --dev" verdict 0000:00:00.0 --dev /dev/p2pbar0
expect 2 "nvme-stats does not take --host" nvme-stats --host
expect 19 '"step":"--frob"' -o json info -- --frob
expect 2 "info: unknown or incomplete option '-x'" info -x
expect 2 "unknown or incomplete option '--host=1'" nvme-read /dev/null 0 4k --host=1
expect 2 "unknown or incomplete option '--frob'" --frob
expect 2 "nvme-io: --batch: not a number: '-1'" nvme-read /dev/null 0 4k --batch -1
expect 2 "nvme-stats: unknown or incomplete option '--interval'" nvme-stats --interval
expect 2 '--output-format takes json or normal' list --output-format
export POSIXLY_CORRECT=1	# options after the command all the same
expect 2 "unknown or incomplete option '--frob'" nvme-read /dev/null 0 4k --frob
unset POSIXLY_CORRECT
# JSON by json-c: controls escaped, "/" not
expect 19 '"step":"/nonexistent/a\\tb\\u0001"' -o json info "$(printf '/nonexistent/a\tb\001')"
expect 19 '"step":"/nonexistent/\\\\"' -o json info '/nonexistent/\'

# a missing device node says what to load and bind, and exits 19 (ENODEV)
expect 19 'load p2pbar and bind a device to it' info /dev/p2pbar99
expect 19 '"hint":"load p2pnvme and give it a controller' nvme-info /dev/p2pnvme99 -o json
expect 19 '^p2pctl: /nonexistent/x: No such file or directory (errno 2)$' info /nonexistent/x
expect 19 'p2pctl: /nonexistent/n: No such file' nvme-read /nonexistent/n 0 4k --host
expect 19 'p2pctl: /nonexistent/n: No such file' nvme-flush /nonexistent/n
expect 19 'p2pctl: /nonexistent/n: No such device' nvme-stats /nonexistent/n

# the file command's: what it needs, what it takes, a file elsewhere (EXDEV)
expect 2 'read-file: --length LEN is needed' read-file /nonexistent/x
expect 2 'read-file: --to takes p2pbar or host' read-file /nonexistent/x --length 4k --to gpu
expect 2 'read-file does not take --from' read-file /nonexistent/x --length 4k --from host
expect 2 'write-file does not take --to' write-file /nonexistent/x 1 --length 4k --to host
expect 2 "write-file: BYTE: more than 255: '256'" write-file /nonexistent/x 256 --length 4k
expect 2 'read-file: --dev is for p2pbar memory' read-file /nonexistent/x --length 4k --to host --dev x
expect 2 'read-file: --length must be a non-zero multiple of --batch' read-file /nonexistent/x --length 4k --batch 3
expect 2 'read-file: --length must be a non-zero multiple of --batch' read-file /nonexistent/x --length 1M --batch 257
expect 18 'the file is not on a p2pnvme disk' read-file "$P" --length 4k
expect 18 '"errno":18' read-file "$P" --length 4k --to host -o json

# PCI addresses in every form lspci prints; a bad one is a usage error
# naming the argument, a missing one exits 19 naming it
for a in 00:1f.7 0000:00:1f.7 0:0:1f.7 1f:0.0 10000:00:1f.7 ffffffff:ff:1f.7; do
	expect 19 "no such PCI function" check "$a" 00:00.0
done
for a in 00:20.0 00:00.8 100:00.0 00:00.00 00:00 00.0 1:2:3:4.0 '0000:00:00.0 ' ' 00:00.0' \
	 -1:00.0 +1:00.0 100000000:00:00.0 0x00:00.0 00:00.0x ''; do
	expect 2 "check: CLIENT: not a PCI address: '$a'" check 00:00.0 "$a"
	expect 2 "verdict: CLIENT: not a PCI address: '$a'" verdict "$a"
	expect 2 "dma-read: --sysfs: not a PCI address: '$a'" dma-read /dev/null 0 4k --sysfs "$a"
done
expect 19 'dma-read: --sysfs: no such PCI function 0000:ff:1f.7' dma-read /dev/null 0 4k --sysfs ff:1f.7
expect 19 'dma-write: --sysfs: no such PCI function 0000:ff:1f.7' dma-write /dev/null 0 4k 1 --sysfs=0000:ff:1f.7

# options that exclude each other: a usage error naming both, nothing done
for p in "--dev x --host" "--host --dev x" "--dev x --udmabuf" "--host --dmabuf" "--host --udmabuf" \
	 "--dmabuf --udmabuf" "--bounce --no-bounce" "--bounce --dmabuf" "--bounce --udmabuf" \
	 "--prp --sgl"; do
	# shellcheck disable=SC2086
	expect 2 "nvme-read: --.* and --.* exclude each other" nvme-read /nonexistent/n 0 4k $p
done
expect 2 'dma-read: --dev and --sysfs exclude each other' dma-read /dev/null 0 4k --sysfs 00:00.0 --dev x
expect 2 'nvme-write: --prp and --sgl exclude each other' nvme-write /nonexistent/n 0 4k 1 --sgl --prp

# every command: its --help, too many arguments, too few (where it needs some)
for c in $("$P" --help | awk '/^  [a-z]/ { print $1 }'); do
	expect 0 "^usage: p2pctl $c " "$c" --help
	expect 2 "usage: $c" "$c" a b c d e f g
done
for c in check verdict dma-read dma-write nvme-read nvme-write nvme-zeroes nvme-flush nvme-copy \
	 read-file write-file; do
	expect 2 "usage: $c" "$c"
done
# every number of every command refuses garbage, naming it
for n in "dma: OFF|dma-read /dev/null 1q 4k" "dma: LEN|dma-read /dev/null 0 1q" \
	 "dma-write: BYTE|dma-write /dev/null 0 4k 1q" "SLBA|nvme-read /dev/null 1q 4k" \
	 "LEN|nvme-read /dev/null 0 1q" "nvme-write: BYTE|nvme-write /dev/null 0 4k 1q" \
	 "--offset|nvme-read /dev/null 0 4k --offset 1q" "--batch|nvme-write /dev/null 0 4k 1 --batch 1q" \
	 "nvme-zeroes: SLBA|nvme-zeroes /dev/null 1q 4k" "nvme-zeroes: LEN|nvme-zeroes /dev/null 0 1q" \
	 "nvme-copy: SLBA|nvme-copy a 1q 4k b 0" "nvme-copy: LEN|nvme-copy a 0 1q b 0" \
	 "nvme-copy: DLBA|nvme-copy a 0 4k b 1q" "nvme-stats: --interval|nvme-stats --interval 1q" \
	 "read-file: --length|read-file /dev/null --length 1q" \
	 "read-file: --offset|read-file /dev/null --length 4k --offset 1q" \
	 "write-file: --batch|write-file /dev/null 1 --length 4k --batch 1q"; do
	# shellcheck disable=SC2086
	expect 2 "${n%%|*}: not a number: '1q'" ${n#*|}
done

# -o json: standard output is one JSON object for every command, an error
# included (parsed by python's json; topo and check need root, else their
# error is the object; doctor's is one whatever its answer and exit status)
D=/nonexistent/x
for a in "list" "topo" "doctor" "check 00:00.0 00:00.0" "info $D" "verdict 00:00.0 $D" \
	 "dma-read $D 0 4k --dev $D" "dma-write $D 0 4k 1 --dev $D" "nvme-info $D" \
	 "nvme-stats $D" "nvme-id-ctrl $D" "nvme-smart $D" "nvme-error-log $D" \
	 "nvme-read $D 0 4k --host" "nvme-write $D 0 4k 1 --host" "nvme-zeroes $D 0 4k" \
	 "nvme-flush $D" "nvme-copy $D 0 4k $D 0 --dev $D" "read-file $D --length 4k" \
	 "write-file $D 1 --length 4k --from host" "--version"; do
	# shellcheck disable=SC2086
	out=$("$P" $a -o json 2>/dev/null)
	if ! printf '%s' "$out" | python3 -c 'import json, sys; sys.exit(not isinstance(json.load(sys.stdin), dict))' 2>/dev/null; then
		echo "FAIL: p2pctl $a -o json: not one JSON object: $(printf '%s' "$out" | head -c 200)"
		bad=1
	fi
done

[ $bad = 0 ] && echo "p2pctl command line: all cases pass"
exit $bad
