#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The suite's udev rules (packaging/udev, shipped as examples) under
# Debian's own systemd-udevd and udevadm (the base kernel has netlink uevents,
# AF_UNIX, inotify), installed as their headers say. On the switch profile:
#   71-p2pbar-bind.rules: a coldplug (every add event replayed, as at boot)
#     gives 0000:04:00.0 to p2pbar before the module loads, and an add event
#     replayed with p2pbar already loaded binds it too; its commented line,
#     uncommented, keeps nvme-pci off an NVMe controller for p2pnvme.
#   70-p2pdma.rules: after "groupadd --system p2p, udevadm control --reload
#     && udevadm trigger" every /dev/p2pbarN and /dev/p2pnvmeN is 0660 with
#     the group p2p, and /dev/p2pnvme/by-serial/SERIAL links each NVMe
#     controller's node, named by the serial nvme-pci read, sysfs shows and
#     QEMU was given (the host reads its command line); the links go with an
#     unbind or the module's removal and come back with the driver.
. /tests/lib.sh
expect_suites guest.udev_daemon guest.udev_bind guest.udev_perms guest.udev_rebind

BAR0=$(find_pci 1af4 1110)
BAR1=$(find_pci 1af4 1110 2)
NV0=$(find_pci 1b36 0010)
NV1=$(find_pci 1b36 0010 2)
EX=/usr/share/doc/p2pdma-tools/examples
RULES=/etc/udev/rules.d
BYSN=/dev/p2pnvme/by-serial

settle() { udevadm settle --timeout=120; }
drv() {	# drv BDF: the bound driver's name, or none
	if [ -e "/sys/bus/pci/devices/$1/driver" ]; then
		basename "$(readlink "/sys/bus/pci/devices/$1/driver")"
	else
		echo none
	fi
}
ovr() { cat "/sys/bus/pci/devices/$1/driver_override"; }
# every PCI function's driver_override but $1's, one line each
overrides_but() {
	for d in /sys/bus/pci/devices/*; do
		[ "${d##*/}" = "$1" ] || echo "${d##*/}=$(cat "$d/driver_override")"
	done
}
node_of() {	# node_of CLASS BDF: /dev/NAME of the class device on that function
	for d in /sys/class/"$1"/*; do
		[ "$(basename "$(readlink -f "$d/device")")" = "$2" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	echo "(no-$1-device-on-$2)"
}
perm() { stat -c '%a %u %g' "$1" 2>/dev/null || echo "(no-$1)"; }
devnum() { stat -c '%t %T' "$1" | { read -r a b; printf '%d:%d\n' "0x$a" "0x$b"; }; }
unbind() { echo "$1" > "/sys/bus/pci/devices/$1/driver/unbind"; }

# the serials nvme-pci read (Identify Controller, space padded in sysfs)
nvme_serial() { sed 's/ *$//' /sys/bus/pci/devices/"$1"/nvme/nvme*/serial; }
S0=$(nvme_serial "$NV0")
S1=$(nvme_serial "$NV1")

suite_begin udev_daemon
diag "udevadm $(udevadm --version); NVMe $NV0 serial '$S0', $NV1 serial '$S1'"
check "systemd-udevd and udevadm in the initramfs" test -x /bin/udevadm -a -L /lib/systemd/systemd-udevd
check_eq "the bind rule's address is the first ivshmem function" "$BAR0" 0000:04:00.0
check_eq "the commented NVMe line's address is the first NVMe controller" "$NV0" 0000:03:00.0
mkdir -p /run
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p "$RULES"
SYSTEMD_LOG_TARGET=console SYSTEMD_LOG_LEVEL=info /lib/systemd/systemd-udevd >/tmp/udevd.log 2>&1 &
UDEVD=$!
i=0
while ! udevadm control --ping 2>/dev/null && kill -0 $UDEVD 2>/dev/null && [ $i -lt 150 ]; do
	sleep 0.2; i=$((i + 1))
done
check "systemd-udevd runs and answers on its control socket" udevadm control --ping
# the kernel's uevent reaches udevd over netlink, udevd passes it on
udevadm monitor --kernel --udev --subsystem-match=pci >/tmp/monitor.log 2>&1 &
mon=$!
sleep 1
udevadm trigger --action=change "/sys/bus/pci/devices/$BAR0"
settle
sleep 0.5
kill $mon; wait $mon 2>/dev/null
check "the kernel's change uevent of $BAR0 on netlink (udevadm monitor: KERNEL)" \
	grep -q "^KERNEL.*change .*/$BAR0 (pci)" /tmp/monitor.log
check "udevd processed it (udevadm monitor: UDEV)" grep -q "^UDEV .*change .*/$BAR0 (pci)" /tmp/monitor.log
suite_end

suite_begin udev_bind
# 71-p2pbar-bind.rules in /etc/udev/rules.d, then the boot's coldplug: the
# rule runs before modules-load.d loads p2pbar
cp "$EX/71-p2pbar-bind.rules" "$RULES/"
udevadm control --reload
before=$(overrides_but "$BAR0")
check "coldplug: udevadm trigger --action=add of every subsystem and device, settled" \
	sh -c 'udevadm trigger --type=subsystems --action=add && udevadm trigger --type=devices --action=add &&
	       udevadm settle --timeout=120'
check_eq "the rule set $BAR0's driver_override to p2pbar" "$(ovr "$BAR0")" p2pbar
check_eq "no other PCI function's driver_override changed" "$(overrides_but "$BAR0")" "$before"
check_eq "$BAR0 has no driver yet (p2pbar not loaded)" "$(drv "$BAR0")" none
check "p2pbar loads (as from modules-load.d)" load p2pbar
check_eq "p2pbar took $BAR0 by the override" "$(drv "$BAR0")" p2pbar
check_eq "and not $BAR1 (no override, no ID table)" "$(drv "$BAR1")" none
# the other order: p2pbar loaded before the add event comes (modules-load.d
# and udev's coldplug run side by side at boot)
unbind "$BAR0"
echo > "/sys/bus/pci/devices/$BAR0/driver_override"
check_eq "$BAR0 free again, no override" "$(drv "$BAR0") $(ovr "$BAR0")" "none (null)"
udevadm trigger --action=add "/sys/bus/pci/devices/$BAR0"
settle
check_eq "add event with p2pbar loaded: the override set" "$(ovr "$BAR0")" p2pbar
check_eq "add event with p2pbar loaded: p2pbar took $BAR0" "$(drv "$BAR0")" p2pbar
# the rule's commented p2pnvme line, uncommented as its header offers: an
# add event of a controller no driver has yet (nvme-pci is built into the
# bench's kernel, so it is unbound here first) keeps nvme-pci off it
sed -e 's/^#ACTION==/ACTION==/' -e 's/^#\([[:space:]]*RUN+=\)/\1/' "$EX/71-p2pbar-bind.rules" \
	> "$RULES/71-p2pbar-bind.rules"
check_eq "the p2pnvme line uncommented" "$(grep -c '^[^#].*p2pnvme\|^[[:space:]]*RUN+=' "$RULES/71-p2pbar-bind.rules")" 3
udevadm control --reload
unbind "$NV0"
echo > "/sys/bus/pci/devices/$NV0/driver_override"
udevadm trigger --action=add "/sys/bus/pci/devices/$NV0"
settle
check_eq "the p2pnvme line set $NV0's driver_override" "$(ovr "$NV0")" p2pnvme
check_eq "nvme-pci (loaded) did not take $NV0 back" "$(drv "$NV0")" none
check "p2pnvme loads" load p2pnvme
check_eq "p2pnvme took $NV0 by the override" "$(drv "$NV0")" p2pnvme
check_eq "and left $NV1 to nvme-pci" "$(drv "$NV1")" nvme
unbind "$NV0"
echo > "/sys/bus/pci/devices/$NV0/driver_override"
udevadm trigger --action=add "/sys/bus/pci/devices/$NV0"
settle
check_eq "add event with p2pnvme loaded: p2pnvme took $NV0" "$(ovr "$NV0") $(drv "$NV0")" "p2pnvme p2pnvme"
cp "$EX/71-p2pbar-bind.rules" "$RULES/"
udevadm control --reload
suite_end

suite_begin udev_perms
check "p2pbar takes $BAR1" bind p2pbar "$BAR1"
check "p2pnvme takes $NV1" bind p2pnvme "$NV1"
settle
NODES="$(node_of p2pbar "$BAR0") $(node_of p2pbar "$BAR1") $(node_of p2pnvme "$NV0") $(node_of p2pnvme "$NV1")"
for n in $NODES; do
	check_eq "$n: the kernel's 0600 root:root (udevd runs, no rule of ours)" "$(perm "$n")" "600 0 0"
done
check "no by-serial link yet" test ! -e "$BYSN"
# as 70-p2pdma.rules' header says: copy, groupadd --system p2p (a line in
# /etc/group here: busybox-static has no addgroup), udevadm control
# --reload && udevadm trigger
cp "$EX/70-p2pdma.rules" "$RULES/"
GID=990
echo "p2p:x:$GID:" >> /etc/group
check "udevadm control --reload && udevadm trigger, settled" \
	sh -c 'udevadm control --reload && udevadm trigger && udevadm settle --timeout=120'
for n in $NODES; do
	check_eq "$n: 0660, owner root, group p2p" "$(perm "$n")" "660 0 $GID"
done
want=$(printf '%s\n' "$S0" "$S1" | sort | tr '\n' ' ')
check_eq "by-serial: a link per controller, named by the serials nvme-pci read" \
	"$(ls "$BYSN" 2>/dev/null | sort | tr '\n' ' ')" "$want"
hostcheck serials "$(ls "$BYSN" 2>/dev/null | tr '\n' ',')"
for p in "$NV0 $S0" "$NV1 $S1"; do
	set -- $p
	l=$BYSN/$2
	n=$(node_of p2pnvme "$1")
	c=/sys/class/p2pnvme/${n#/dev/}
	check_eq "by-serial/$2 resolves to $1's node" "$(readlink -f "$l")" "$n"
	check "$n is a char device" test -c "$n"
	check_eq "$n's numbers are the ones sysfs gives" "$(devnum "$n")" "$(cat "$c/dev")"
	check_same "the link's name is ${n#/dev/}'s serial in sysfs" "$(cat "$c/serial")" "$2"
	check "udev's database lists the link for $n" sh -c "udevadm info -q symlink $n | grep -qw p2pnvme/by-serial/$2"
done
check "udevd reported nothing about the suite's rule files" sh -c '! grep "rules.d/7[01]-p2p" /tmp/udevd.log'
suite_end

suite_begin udev_rebind
n1=$(node_of p2pnvme "$NV1")
check_eq "before: by-serial/$S1 to $n1" "$(readlink -f "$BYSN/$S1")" "$n1"
unbind "$NV1"
settle
check "$NV1 unbound: by-serial/$S1 gone" test ! -e "$BYSN/$S1" -a ! -L "$BYSN/$S1"
check "and $n1 gone" test ! -e "$n1"
check_eq "by-serial/$S0 stays, to $NV0's node" "$(readlink -f "$BYSN/$S0")" "$(node_of p2pnvme "$NV0")"
check "p2pnvme takes $NV1 again" bind p2pnvme "$NV1"
settle
n1=$(node_of p2pnvme "$NV1")
check_eq "by-serial/$S1 back, to $NV1's node" "$(readlink -f "$BYSN/$S1")" "$n1"
check_eq "$n1: 0660, group p2p again" "$(perm "$n1")" "660 0 $GID"
b1=$(node_of p2pbar "$BAR1")
check "before: $b1 is there" test -c "$b1"
unbind "$BAR1"
settle
check "$BAR1 unbound: $b1 gone" test ! -e "$b1"
check "p2pbar takes $BAR1 again" bind p2pbar "$BAR1"
settle
b1=$(node_of p2pbar "$BAR1")
check_eq "$b1: 0660, group p2p again" "$(perm "$b1")" "660 0 $GID"
check_eq "before: two by-serial links" "$(ls "$BYSN" | wc -l)" 2
check "p2pnvme unloads" rmmod p2pnvme
settle
check_eq "no by-serial link left" "$(ls "$BYSN" 2>/dev/null)" ""
check "p2pnvme loads again" load p2pnvme
check "p2pnvme takes $NV0 (its override still set)" bind p2pnvme "$NV0"
check "p2pnvme takes $NV1" bind p2pnvme "$NV1"
settle
check_eq "by-serial/$S0 back, to $NV0's node" "$(readlink -f "$BYSN/$S0")" "$(node_of p2pnvme "$NV0")"
check_eq "by-serial/$S1 back, to $NV1's node" "$(readlink -f "$BYSN/$S1")" "$(node_of p2pnvme "$NV1")"
check "udevd is still running" kill -0 $UDEVD
suite_end

# leave no udevd, rules or group behind for a next test in the same boot
udevadm control --exit
wait $UDEVD
rm -f "$RULES/70-p2pdma.rules" "$RULES/71-p2pbar-bind.rules"
sed -i '/^p2p:/d' /etc/group
umount /run
if [ $_any_failed -ne 0 ]; then
	echo "udevd's log (last 80 lines):"
	tail -n 80 /tmp/udevd.log
	echo "udevadm monitor:"
	cat /tmp/monitor.log
fi
[ $_any_failed -eq 0 ]
