# SPDX-License-Identifier: GPL-2.0
"""Instruction counts of a boot with QEMU's insn plugin: the parsing shared
by scripts/cpu-insn.py (the tables, and --record) and qemu/hostcheck.py
(the CPU-per-I/O regression check of the insn test). Imported, not run.

A boot's guest printed its P2P-BENCH / P2P-FIO lines with the window
("mark":N) its job ran in; the plugin (qemu/plugins/insn.c) wrote every
vCPU's kernel and user instruction counts at window N's start marker (id
2N) and end marker (2N + 1) to insn.log. A row's instructions per I/O are
the whole guest's instructions over its windows (all vCPUs, both modes)
divided by its I/Os; rows measured in several passes of a boot are
pooled. P2P-INSN-CAL lines are calibrations: a loop of a known user
instruction count, which the plugin must have counted, else the boot is
rejected.

The regression check (issue 43: make check fails when the engine's
instructions per registered 4 KiB read grow more than 10% over the
recorded figure, or exceed nvme-pci's in the same boot): FIGURE is the row
judged, NVME_PCI the rows it is held to (the best of them, as
Documentation/benchmarks.md compares (c) with the best of (a) and (b)),
qemu/insn-baseline the recorded figures, one line per run:

    RUN FIGURE key=value...

RUN the run's name (out/runs/RUN: PROFILE.TEST.FLAVOUR[-SERIES]), FIGURE
the median of the boots scripts/cpu-insn.sh --record booted, or "none":
no recorded figure, which the check fails.
"""
import json
import os
import re
import statistics
import subprocess

MARK = re.compile(r'^mark (\d+) vcpu (\d+) host_ns (\d+) vclock_ns (-?\d+) '
                  r'kernel ([\d,]+) user ([\d,]+)$')
EXIT = re.compile(r'^exit host_ns \d+ lost (\d+) ')
SPREAD_MAX = 0.03   # issue 43: three boots agree within 3% per row
BOOTS_MIN = 3

# the row the regression check judges: p2pnvme's engine, io_uring, reads of
# 4 KiB at QD32 into a registered p2pmem dma-buf ((c) of benchmarks.md),
# interrupts; and nvme-pci's O_DIRECT reads (a) and passthrough (b) into
# p2pmem of the same BAR, the best of which it must not exceed
FIGURE = ('B', 'engine-uring-reg', 4096, 32, 'dmabuf')
NVME_PCI = (('B', 'nvme-pci-uring', 4096, 32, 'p2p'), ('B', 'nvme-pci-ng', 4096, 32, 'p2p'))
GROWTH_MAX = 0.10   # issue 43: more than 10% over the recorded figure fails
IOS_MIN = 1000      # fewer I/Os in a row judge nothing


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


def lost_blocks(path):
    """The blocks the plugin could not count (its exit line), or None
    where it wrote none (QEMU did not exit through its atexit)."""
    with open(path, errors='replace') as f:
        for line in f:
            m = EXIT.match(line.strip())
            if m:
                return int(m[1])
    return None


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


def marked(serial, d):
    """[(key, window, I/Os, what)]: the marked runs of a boot's serial log,
    each a row's measurement in a window of its own."""
    out = []
    for r in lines(serial, 'P2P-BENCH'):
        if r.get('mark') is None or 'ops' not in r:
            continue
        out.append((('B', r['bench'], r['size'], r['qd'], r['path']), r['mark'], r['ops'], r['bench']))
    for r in lines(serial, 'P2P-FIO'):
        if r.get('mark') is None:
            continue
        if r['fio'] is None:
            raise Bad(f'{d}: fio failed: {r["row"]} on {r["dev"]}')
        ios = r['fio']['jobs'][0]['read']['total_ios']
        if 'bench' in r:
            # a row of the file benchmark: keyed as p2pbench's rows are
            out.append((('B', r['bench'], r['bs'], r['qd'], r['mem']), r['mark'], ios, r['bench']))
            continue
        out.append((('F', r['row'], r['dev'] == '/dev/p2pnvme0'), r['mark'], ios, r['row']))
    return out


def rows_of(marks, serial, d):
    """{key: [kernel insns, user insns, ios]} of a boot's marked rows."""
    rows = {}
    for key, n, ios, what in marked(serial, d):
        if not ios:
            raise Bad(f'{d}: window {n} ({what}): no I/O')
        k, u = window(marks, n, what)
        r = rows.setdefault(key, [0, 0, 0])
        r[0] += k
        r[1] += u
        r[2] += ios
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


def per_io(r):
    """A row's whole-guest instructions per I/O."""
    return (r[0] + r[1]) / r[2]


def nvme_pci_best(rows):
    """(name, instructions per I/O) of nvme-pci's cheaper row, or None."""
    have = [(k[1], per_io(rows[k])) for k in NVME_PCI if k in rows]
    return min(have, key=lambda x: x[1]) if have else None


def booted_kernel(serial):
    """What the guest's uname -r said (P2P-BOOTED), or '?'."""
    with open(serial, errors='replace') as f:
        for line in f:
            if line.startswith('P2P-BOOTED '):
                return line.split()[1]
    return '?'


def qemu_version():
    """This machine's QEMU as it says it (7.2.22), or '?'."""
    try:
        out = subprocess.run(['qemu-system-x86_64', '--version'], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return '?'
    m = re.match(r'QEMU emulator version (\S+)', out)
    return m[1] if m else '?'


def read_baseline(path):
    """{run: (figure or None, {key: value})}; Bad for a line it cannot read."""
    out = {}
    with open(path, errors='replace') as f:
        for i, line in enumerate(f, 1):
            words = line.split('#', 1)[0].split()
            if not words:
                continue
            if len(words) < 2 or words[0] in out:
                raise Bad(f'{path}:{i}: "RUN FIGURE key=value..." once per run, not "{line.strip()}"')
            try:
                fig = None if words[1] == 'none' else float(words[1])
            except ValueError:
                fig = -1
            if fig is not None and not fig > 0:
                raise Bad(f'{path}:{i}: the figure is a positive number or none, not {words[1]}')
            out[words[0]] = (fig, dict(w.split('=', 1) for w in words[2:] if '=' in w))
    return out


def write_baseline(path, run, figure, keys):
    """Put RUN's line in the baseline file, in place of its old one (the
    comments and the other runs' lines kept), or at its end."""
    new = f'{run} {figure:.1f} ' + ' '.join(f'{k}={v}' for k, v in keys.items()) + '\n'
    with open(path) as f:
        old = f.readlines()
    out, done = [], False
    for line in old:
        words = line.split('#', 1)[0].split()
        if words and words[0] == run:
            if not done:
                out.append(new)
            done = True
        else:
            out.append(line)
    if not done:
        out.append(new)
    with open(path + '.tmp', 'w') as f:
        f.writelines(out)
    os.replace(path + '.tmp', path)
    return new


def regression(run, name, baseline):
    """The regression check of one run of the insn test: its three cases,
    [(ok, description)], each with its figures as key=value."""
    log, serial = os.path.join(run, 'insn.log'), os.path.join(run, 'serial.log')
    what = ("p2pnvme's instructions per registered 4 KiB QD32 read "
            f'(engine, io_uring, dma-buf) at most {1 + GROWTH_MAX:.2f}x the recorded figure')
    vs = ("p2pnvme's instructions per registered 4 KiB QD32 read at most nvme-pci's "
          '(the cheaper of O_DIRECT and passthrough, into p2pmem) in the same boot')
    cal = 'insn: the plugin counted each calibration loop (a known count of user instructions) right'
    try:
        marks = load_marks(log)
    except (OSError, Bad) as e:
        why = f'no counts ({e}): was the plugin loaded (qemu/run.sh loads it for the insn test)?'
        return [(False, f'{cal}: {why}'), (False, f'insn: {what}: {why}'), (False, f'insn: {vs}: {why}')]
    out = []
    try:
        cals = calibrations(marks, serial)
        lost = lost_blocks(log)
        good = bool(cals) and all(cal_ok(w, u) for _, w, u in cals) and not lost
        out.append((good, f'{cal}: windows={",".join(str(n) for n, _, _ in cals) or "none"} '
                          f'loop_insns={",".join(str(w) for _, w, _ in cals) or "-"} '
                          f'counted_extra={",".join(f"{u - w:+d}" for _, w, u in cals) or "-"} '
                          f'lost_blocks={"?" if lost is None else lost}'))
    except (OSError, Bad, KeyError, ValueError) as e:
        out.append((False, f'{cal}: {e}'))
    try:
        rows = rows_of(marks, serial, run)
        if FIGURE not in rows:
            raise Bad('no marked engine-uring-reg 4096 QD32 dmabuf row: did the guest test run it?')
        if rows[FIGURE][2] < IOS_MIN:
            raise Bad(f'{rows[FIGURE][2]} I/Os in the engine\'s row, {IOS_MIN} wanted')
        fig = per_io(rows[FIGURE])
    except (OSError, Bad, KeyError, ValueError) as e:
        return out + [(False, f'insn: {what}: {e}'), (False, f'insn: {vs}: {e}')]
    try:
        rec = read_baseline(baseline).get(name)
    except (OSError, Bad) as e:
        rec, why = None, str(e)
    else:
        why = f'no recorded figure for {name} in {os.path.basename(baseline)}: scripts/cpu-insn.sh --record'
    if rec is None or rec[0] is None:
        out.append((False, f'insn: {what}: insns_per_io={fig:.1f} recorded=none ({why})'))
    else:
        limit = rec[0] * (1 + GROWTH_MAX)
        k = rec[1]
        out.append((fig <= limit, f'insn: {what}: insns_per_io={fig:.1f} recorded={rec[0]:.1f} '
                                  f'limit={limit:.1f} ratio={fig / rec[0]:.3f} (recorded '
                                  f'{k.get("date", "?")} at {k.get("commit", "?")}, kernel '
                                  f'{k.get("kernel", "?")}, QEMU {k.get("qemu", "?")}; this boot kernel '
                                  f'{booted_kernel(serial)}, QEMU {qemu_version()})'))
    best = nvme_pci_best(rows)
    if best is None or min(rows[k][2] for k in NVME_PCI if k in rows) < IOS_MIN:
        out.append((False, f'insn: {vs}: insns_per_io={fig:.1f} nvme_pci=none (no marked nvme-pci '
                           f'row of {IOS_MIN} I/Os or more)'))
    else:
        each = ' '.join(f'{k[1]}={per_io(rows[k]):.1f}' for k in NVME_PCI if k in rows)
        out.append((fig <= best[1], f'insn: {vs}: insns_per_io={fig:.1f} nvme_pci={best[1]:.1f} '
                                    f'ratio={fig / best[1]:.3f} ({each})'))
    return out


def record_figures(boots):
    """The figure and nvme-pci's best of each boot: ([figure], [nvme-pci]), or Bad."""
    figs, pci = [], []
    for rows, info in boots:
        if FIGURE not in rows or nvme_pci_best(rows) is None:
            raise Bad('a boot without the registered 4 KiB QD32 row or nvme-pci\'s: not the insn test')
        if info['clock']:
            raise Bad('a boot changed clocksource during the run')
        figs.append(per_io(rows[FIGURE]))
        pci.append(nvme_pci_best(rows)[1])
    if len(figs) < BOOTS_MIN:
        raise Bad(f'{len(figs)} boot(s): a figure is recorded from {BOOTS_MIN} or more')
    med = statistics.median(figs)
    if (max(figs) - min(figs)) / med > SPREAD_MAX:
        raise Bad(f'the boots\' figures {", ".join(f"{x:.1f}" for x in figs)} spread '
                  f'{(max(figs) - min(figs)) / med:.1%}, more than {SPREAD_MAX:.0%}: not recorded '
                  '(see what loaded the host, and boot again)')
    return figs, pci
