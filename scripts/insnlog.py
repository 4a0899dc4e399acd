# SPDX-License-Identifier: GPL-2.0
"""Instruction counts of a boot with QEMU's insn plugin: the parsing of
scripts/cpu-insn.py, in a module of its own. Imported, not run.

A boot's guest printed its P2P-BENCH / P2P-FIO lines with the window
("mark":N) its job ran in; the plugin (qemu/plugins/insn.c) wrote every
vCPU's kernel and user instruction counts at window N's start marker (id
2N) and end marker (2N + 1) to insn.log. A row's instructions per I/O are
the whole guest's instructions over its windows (all vCPUs, both modes)
divided by its I/Os; rows measured in several passes of a boot are
pooled. P2P-INSN-CAL lines are calibrations: a loop of a known user
instruction count, which the plugin must have counted, else the boot is
rejected.
"""
import json
import os
import re

MARK = re.compile(r'^mark (\d+) vcpu (\d+) host_ns (\d+) vclock_ns (-?\d+) '
                  r'kernel ([\d,]+) user ([\d,]+)$')
SPREAD_MAX = 0.03   # issue 43: three boots agree within 3% per row
BOOTS_MIN = 3


class Bad(Exception):
    pass


def load_marks(path):
    marks, header = {}, None
    with open(path, errors='replace') as f:
        for line in f:
            line = line.strip()
            if line.startswith('insn format '):
                header = line
                continue
            m = MARK.match(line)
            if not m:
                continue
            mid = int(m[1])
            if mid in marks:
                raise Bad(f'{path}: marker {mid} executed twice')
            marks[mid] = dict(vcpu=int(m[2]), ns=int(m[3]), vns=int(m[4]),
                              k=[int(x) for x in m[5].split(',')],
                              u=[int(x) for x in m[6].split(',')])
    if header is None:
        raise Bad(f'{path}: not the insn plugin\'s output')
    return marks


def window(marks, n, what):
    s, e = marks.get(2 * n), marks.get(2 * n + 1)
    if s is None or e is None:
        raise Bad(f'window {n} ({what}): the plugin saw no {"start" if s is None else "end"} marker')
    k = sum(e['k']) - sum(s['k'])
    u = sum(e['u']) - sum(s['u'])
    if k < 0 or u < 0:
        raise Bad(f'window {n} ({what}): counts went backwards')
    return k, u


def lines(path, tag):
    with open(path, errors='replace') as f:
        for line in f:
            line = line.strip()
            if line.startswith(tag + ' {'):
                yield json.loads(line.split(' ', 1)[1])


def cal_ok(want, got):
    """A calibration counted right: the loop and the few instructions
    around it (the markers' ret, the loop's setup), nothing less."""
    return want <= got <= want * 1.001 + 100


def calibrations(marks, serial):
    """[(window, the loop's user instructions, user instructions counted)]"""
    out = []
    for c in lines(serial, 'P2P-INSN-CAL'):
        _, u = window(marks, c['mark'], 'calibration')
        out.append((c['mark'], c['user_insns'], u))
    return out


def rows_of(marks, serial, d):
    """{key: [kernel insns, user insns, ios]} of a boot's marked rows."""
    rows = {}

    def add(key, n, ios, what):
        if not ios:
            raise Bad(f'{d}: window {n} ({what}): no I/O')
        k, u = window(marks, n, what)
        r = rows.setdefault(key, [0, 0, 0])
        r[0] += k
        r[1] += u
        r[2] += ios
    for r in lines(serial, 'P2P-BENCH'):
        if r.get('mark') is None or 'ops' not in r:
            continue
        add(('B', r['bench'], r['size'], r['qd'], r['path']), r['mark'], r['ops'], r['bench'])
    for r in lines(serial, 'P2P-FIO'):
        if r.get('mark') is None:
            continue
        if r['fio'] is None:
            raise Bad(f'{d}: fio failed: {r["row"]} on {r["dev"]}')
        add(('F', r['row'], r['dev'] == '/dev/p2pnvme0'), r['mark'],
            r['fio']['jobs'][0]['read']['total_ios'], r['row'])
    if not rows:
        raise Bad(f'{d}: no marked row')
    return rows


def boot(d):
    """One boot: {key: [kernel insns, user insns, ios]}, and what it says about itself."""
    marks = load_marks(os.path.join(d, 'insn.log'))
    serial = os.path.join(d, 'serial.log')
    info = {'cal': [], 'load': '', 'clock': os.path.exists(os.path.join(d, 'clock'))}
    for n, want, u in calibrations(marks, serial):
        if not cal_ok(want, u):
            raise Bad(f'{d}: calibration window {n}: {u} user instructions counted '
                      f'for a loop of {want}: the plugin miscounts')
        info['cal'].append(u - want)
    if not info['cal']:
        raise Bad(f'{d}: no calibration (P2P-INSN-CAL): was the guest booted with p2pinsn=1?')
    try:
        a = open(os.path.join(d, 'loadavg.start')).read().split()[0]
        b = open(os.path.join(d, 'loadavg.end')).read().split()[0]
        info['load'] = f'{a} -> {b}'
    except OSError:
        pass
    return rows_of(marks, serial, d), info
