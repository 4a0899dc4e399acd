#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Sign installed modules for Secure Boot with the kernel's own sign-file,
# as DKMS does (make install runs it). The key: KEY= and CERT= given, else
# the DKMS framework's (/var/lib/dkms/mok.key, mok.pub), else Ubuntu's
# shim-signed MOK (/var/lib/shim-signed/mok/MOK.priv, MOK.der). One line
# either way: what signed them, or why they are not signed.
#
#   scripts/sign-modules.sh KDIR KEY CERT MODULE...
set -euo pipefail

kdir=$1 key=$2 cert=$3 given=
shift 3
note() { echo "  NOTE     modules not signed: $*"; }

if [ -n "$key$cert" ]; then
	[ -r "$key" ] && [ -r "$cert" ] ||
		{ echo "error: KEY=$key and CERT=$cert must both name readable files" >&2; exit 1; }
	given=1
else
	for pair in /var/lib/dkms/mok.key:/var/lib/dkms/mok.pub \
		    /var/lib/shim-signed/mok/MOK.priv:/var/lib/shim-signed/mok/MOK.der; do
		if [ -r "${pair%%:*}" ] && [ -r "${pair#*:}" ]; then
			key=${pair%%:*} cert=${pair#*:}
			break
		fi
	done
fi
# the kernel's configuration: .config, else include/config/auto.conf (the
# headers packages of 6.12's and later's bindeb-pkg have no .config)
kcfg=$kdir/.config
[ -f "$kcfg" ] || kcfg=$kdir/include/config/auto.conf
hash=$(sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"$/\1/p' "$kcfg" 2>/dev/null || true)
if [ -z "$key" ]; then
	note "no key (KEY= CERT=, /var/lib/dkms/mok.key, /var/lib/shim-signed/mok/MOK.priv); Secure Boot would refuse them"
elif [ ! -x "$kdir/scripts/sign-file" ]; then
	[ -z "$given" ] || { echo "error: KEY= given, but $kdir/scripts/sign-file is missing" >&2; exit 1; }
	note "$kdir/scripts/sign-file is missing (a kernel without CONFIG_MODULE_SIG?)"
else
	for m in "$@"; do
		"$kdir/scripts/sign-file" "${hash:-sha256}" "$key" "$cert" "$m"
	done
	echo "  SIGN     $(basename -a "$@" | tr '\n' ' ')with $cert (${hash:-sha256})"
fi
