#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Instructions per I/O, per row, from boots with QEMU's insn plugin.

    scripts/cpu-insn.py DIR     DIR/run*/{serial.log,insn.log,loadavg.*}
    scripts/cpu-insn.py --record DIR RUN BASELINE COMMIT DATE
                                the insn test's boots in DIR: their median
                                figure written to BASELINE as RUN's
                                (qemu/insn-baseline, make check's
                                CPU-per-I/O regression check)

scripts/cpu-insn.sh boots and calls this; the parsing is
scripts/insnlog.py's. Each boot's guest printed its
P2P-BENCH / P2P-FIO lines with the window ("mark":N) its job ran in; the
plugin (qemu/plugins/insn.c) wrote every vCPU's kernel and user
instruction counts at window N's start marker (id 2N) and end marker
(2N + 1). A row's instructions per I/O are the whole guest's instructions
over its windows (all vCPUs, both modes) divided by its I/Os; rows
measured in several passes of a boot are pooled. P2P-INSN-CAL lines are
calibrations: a loop of a known user instruction count, which the
plugin must have counted, else the boot is rejected.
"""
import glob
import os
import re
import statistics
import sys

sys.dont_write_bytecode = True  # no compiled Python in the tree (lintian)
from insnlog import (BOOTS_MIN, SPREAD_MAX, Bad, boot, booted_kernel,  # noqa: E402
                     qemu_version, record_figures, write_baseline)


def kib(s):
    return f'{s // 1024} KiB'


def comparisons(keys):
    """(label, ours, [theirs...], target, target's name): the rows to compare."""
    out = []
    cmp = out.append
    for size in (4096, 131072):
        for qd in (1, 32):
            cmp((f'ioctl, {kib(size)} QD{qd}: engine vs nvme-pci (Linux AIO)',
                 ('B', 'engine', size, qd, 'p2p'), [('B', 'nvme-pci', size, qd, 'p2p')], None))
        cmp((f'ioctl, {kib(size)} QD32: engine, 32 threads vs nvme-pci (Linux AIO)',
             ('B', 'engine-threads', size, 32, 'p2p'), [('B', 'nvme-pci', size, 32, 'p2p')], None))
    for size in (4096, 131072):
        for qd in (1, 32):
            best = [('B', 'nvme-pci-uring', size, qd, 'p2p'), ('B', 'nvme-pci-ng', size, qd, 'p2p')]
            t = {(4096, 32): 0.6, (131072, 32): 0.7}.get((size, qd))
            cmp((f'io_uring, {kib(size)} QD{qd}: (c) registered dma-buf vs best of (a), (b)',
                 ('B', 'engine-uring-reg', size, qd, 'dmabuf'), best, t))
            cmp((f"io_uring, {kib(size)} QD{qd}: (c') unregistered vs best of (a), (b)",
                 ('B', 'engine-uring', size, qd, 'p2p'), best, None))
    for qd in (1, 32):
        # blk-mq against the engine on one controller (benchmarks.md, "blk-mq
        # or the engine"): no target, the decision is made
        cmp((f"io_uring, 4 KiB QD{qd}: p2pnvme's disk (O_DIRECT, blk-mq) vs the engine (c)",
             ('B', 'disk-uring', 4096, qd, 'p2p'),
             [('B', 'engine-uring-reg', 4096, qd, 'dmabuf')], None))
        cmp((f"io_uring, 4 KiB QD{qd}: p2pnvme's disk vs nvme-pci O_DIRECT (a)",
             ('B', 'disk-uring', 4096, qd, 'p2p'),
             [('B', 'nvme-pci-uring', 4096, qd, 'p2p')], None))
    for size, qd in ((4096, 1), (131072, 1), (131072, 32)):
        cmp((f'ioctl, {kib(size)} QD{qd}: engine P2P vs bounce',
             ('B', 'engine', size, qd, 'p2p'), [('B', 'engine', size, qd, 'bounce')], None))
    for size, t in ((4096, 0.9), (131072, 0.3)):
        cmp((f'io_uring, {kib(size)} QD32: engine P2P vs bounce',
             ('B', 'engine-uring', size, 32, 'p2p'), [('B', 'engine-uring', size, 32, 'bounce')], t))
    for size in (4096, 131072):
        for qd in (1, 32):
            cmp((f'io_uring polled, {kib(size)} QD{qd}: (c) vs best of (a), (b)',
                 ('B', 'engine-uring-reg-iopoll', size, qd, 'dmabuf'),
                 [('B', 'nvme-pci-uring-iopoll', size, qd, 'p2p'),
                  ('B', 'nvme-pci-ng-iopoll', size, qd, 'p2p')], None))
    for kind, cmd in (('engine-uring', 'P2PNVME_URING_CMD_IO'), ('engine-uring-std', 'NVME_URING_CMD_IO')):
        for tag, ring in (('', 'plain ring'), ('-defer', "fio's ring")):
            cmp((f'p2pbench, 4 KiB QD32 host memory, {cmd}, {ring}: vs nvme-pci (ng)',
                 ('B', kind + tag, 4096, 32, 'host'), [('B', 'nvme-pci-ng' + tag, 4096, 32, 'host')],
                 None))
    for size, qd in ((4096, 32), (1048576, 8)):
        # the file benchmark (qemu/tests/filebench.guest.sh, files.rst step
        # 7): every row against (3), nvme-pci's O_DIRECT of the same bytes
        # into p2pmem; issue 41's target for the file command, files.rst's
        # for p2pnvme's disk; then the filesystem's mapping on its own
        s = f'{size // 1048576} MiB' if size >= 1048576 else kib(size)
        base = [('B', 'file-nvme-pci', size, qd, 'p2p')]
        fcmd, fdisk = ('B', 'file-cmd', size, qd, 'dmabuf'), ('B', 'file-disk', size, qd, 'p2p')
        bounce = ('B', 'file-bounce-nvme-pci', size, qd, 'bounce')
        edisk, eeng = ('B', 'extent-disk', size, qd, 'p2p'), ('B', 'extent-engine', size, qd, 'dmabuf')
        cmp((f'file, {s} QD{qd}: (1) the file command, io_uring, registered dma-buf vs (3) nvme-pci O_DIRECT',
             fcmd, base, 0.8))
        cmp((f"file, {s} QD{qd}: (1') the file command, ioctl batches vs (3)",
             ('B', 'file-cmd-ioctl', size, qd, 'dmabuf'), base, None))
        # placeholders (files.rst, "What decides (b)"): the same dma-buf
        # through placeholders within 1.1x of its real pages' CPU per I/O,
        # and at 1 MiB QD8 half the bounce's CPU per GiB (for equal sizes,
        # per I/O) or twice its throughput (that half: the time tables)
        fph = ('B', 'file-cmd-placeholders', size, qd, 'dmabuf')
        cmp((f'file, {s} QD{qd}: (7) the file command through placeholders vs (3)', fph, base, None))
        cmp((f'file, {s} QD{qd}: (7) the file command through placeholders vs (1) the real pages', fph,
             [fcmd], 1.1))
        if size == 1048576:
            cmp((f'file, {s} QD{qd}: (7) the file command through placeholders vs (4) the bounce, '
                 'half the CPU per GiB (or 2x its throughput: the time tables)', fph, [bounce], 0.5))
        cmp((f"file, {s} QD{qd}: (2) O_DIRECT on p2pnvme's disk vs (3)", fdisk, base, 1.1))
        cmp((f'file, {s} QD{qd}: (4) the bounce (O_DIRECT into host memory, a memcpy into the BAR) vs (3)',
             bounce, base, None))
        cmp((f"file, {s} QD{qd}: (5) p2pnvme's disk at the file's extents vs (3)", edisk, base, None))
        cmp((f"file, {s} QD{qd}: (6) the engine's registered reads of the file's LBAs vs (3)", eeng, base,
             None))
        cmp((f"file, {s} QD{qd}: the filesystem's mapping: (2) vs (5), the same reads without it",
             fdisk, [edisk], None))
        cmp((f'file, {s} QD{qd}: the file path over the LBA engine: (1) vs (6)', fcmd, [eeng], None))
        cmp((f'file, {s} QD{qd}: (1) the file command vs (4) the bounce', fcmd, [bounce], None))
        # fio's O_DIRECT of the same files (a tool this suite does not own)
        fio3, fio2 = ('B', 'fio-file-nvme-pci', size, qd, 'p2p'), ('B', 'fio-file-disk', size, qd, 'p2p')
        cmp((f"file, {s} QD{qd}: (1) the file command vs (3f) fio's O_DIRECT of the file on nvme-pci", fcmd,
             [fio3], 0.8))
        cmp((f'file, {s} QD{qd}: (3f) fio vs (3) p2pbench, the same O_DIRECT reads on nvme-pci', fio3, base,
             None))
        cmp((f"file, {s} QD{qd}: (2f) fio on p2pnvme's disk vs (3f) on nvme-pci", fio2, [fio3], None))
    mems = {'host': 'host memory', 'fixed': 'registered host buffers', 'p2p': 'p2pmem',
            'reg': 'registered p2pmem dma-buf (nvme-pci: mapped per I/O)'}
    for row in dict.fromkeys(k[1] for k in keys if k[0] == 'F'):
        parts = row.split('-')
        mem = mems.get(parts[0]) or 'polled, ' + mems.get(parts[1], parts[1])
        t = {'host-4096-32': 0.9, 'reg-4096-32': 0.6}.get(row)
        cmp((f'fio, {kib(int(parts[-2]))} QD{parts[-1]}, {mem}: p2pnvme vs nvme-pci',
             ('F', row, True), [('F', row, False)], t))
    return [c for c in out if c[1] in keys and any(t in keys for t in c[2])]


def fmt(n):
    return f'{n / 1000:.1f}k' if n >= 1000 else f'{n:.0f}'


def verdict(ratios, target):
    if target is None:
        return ''
    if len(ratios) < BOOTS_MIN:
        return f'not judged: {len(ratios)} boot(s), {BOOTS_MIN} wanted'
    med = statistics.median(ratios)
    spread = (max(ratios) - min(ratios)) / med
    if spread > SPREAD_MAX:
        return f'not judged: spread {spread:.1%} > {SPREAD_MAX:.0%}'
    if all(r <= target for r in ratios):
        return 'met'
    if all(r > target for r in ratios):
        return 'missed'
    return 'not judged: the boots disagree'


def boot_dirs(top):
    dirs = [d for d in glob.glob(os.path.join(top, 'run*')) if re.fullmatch(r'run\d+', os.path.basename(d))
            and os.path.exists(os.path.join(d, 'insn.log'))]
    dirs.sort(key=lambda d: int(os.path.basename(d)[3:]))
    if not dirs:
        raise Bad(f'{top}: no boot (run*/insn.log)')
    return dirs


def record(top, run, baseline, rev, day):
    """The regression check's figure for RUN from the insn test's boots in
    TOP: their median, written to the baseline file with how it was
    measured (scripts/insnlog.py, record_figures: 3 boots or more, within
    3% of each other, none with a changed clocksource)."""
    dirs = boot_dirs(top)
    boots = [boot(d) for d in dirs]
    figs, pci = record_figures(boots)
    kernels = sorted(set(booted_kernel(os.path.join(d, 'serial.log')) for d in dirs))
    loads = [info['load'].replace(' -> ', '>') or '?' for _, info in boots]
    med = statistics.median(figs)
    line = write_baseline(baseline, run, med, {
        'date': day, 'commit': rev, 'boots': len(figs),
        'per_boot': ','.join(f'{x:.1f}' for x in figs),
        'spread': f'{(max(figs) - min(figs)) / med:.1%}',
        'nvme_pci': f'{statistics.median(pci):.1f}',
        'kernel': ','.join(kernels), 'qemu': qemu_version(),
        'load': ','.join(loads), 'from': os.path.basename(os.path.normpath(top))})
    print(f'recorded in {baseline}:\n{line}', end='')


def main():
    if sys.argv[1] == '--record':
        record(*sys.argv[2:7])
        return
    top = sys.argv[1]
    boots = [boot(d) for d in boot_dirs(top)]
    keys = set.intersection(*(set(rows) for rows, _ in boots))
    # the file benchmark's rows compare paths, not drivers, and say by how
    # many instructions they differ (the filesystem's mapping per I/O)
    files = any(k[1].startswith(('file-', 'extent-')) for k in keys)
    what = ("the row's over the one it is compared with in the same boot (its difference: the "
            'median of the boots\' differences)' if files else
            "p2pnvme's over nvme-pci's (the better of its paths where there are two) in the same boot")
    out = [f'{len(boots)} boot(s); each row: the whole guest\'s instructions (all vCPUs, kernel + user) '
           'per I/O, the median over the boots (in parentheses the kernel\'s share); the ratio is '
           f'{what}, its median, its spread ((max - min) / median) and each boot\'s.', '',
           '| boot | calibration: extra user instructions counted | host load average, start -> end | clocksource |',
           '|---|---|---|---|']
    for i, (rows, info) in enumerate(boots, 1):
        out.append(f"| {i} | {', '.join(f'+{c}' for c in info['cal'])} | {info['load'] or '?'} | "
                   f"{'changed during the run' if info['clock'] else 'as asked'} |")
    if files:
        out += ['', '| row | insns/IO | compared with: insns/IO | ratio | difference insns/IO | spread | '
                'per boot | target | verdict |', '|---|---|---|---|---|---|---|---|---|']
    else:
        out += ['', '| row | p2pnvme insns/IO | nvme-pci insns/IO | ratio | spread | per boot | target | verdict |',
                '|---|---|---|---|---|---|---|---|']
    for label, ours, theirs, target in comparisons(keys):
        ratios, o_io, t_io, o_k, t_k, diff = [], [], [], [], [], []
        for rows, _ in boots:
            o = rows[ours]
            best = min((rows[t] for t in theirs if t in rows), key=lambda r: (r[0] + r[1]) / r[2])
            oi, ti = (o[0] + o[1]) / o[2], (best[0] + best[1]) / best[2]
            ratios.append(oi / ti)
            diff.append(oi - ti)
            o_io.append(oi)
            t_io.append(ti)
            o_k.append(o[0] / (o[0] + o[1]))
            t_k.append(best[0] / (best[0] + best[1]))
        med = statistics.median(ratios)
        spread = f'{(max(ratios) - min(ratios)) / med:.1%}' if len(ratios) > 1 else '-'
        d = f' {statistics.median(diff):+,.0f} |' if files else ''
        out.append(f'| {label} | {fmt(statistics.median(o_io))} ({statistics.median(o_k):.0%}) | '
                   f'{fmt(statistics.median(t_io))} ({statistics.median(t_k):.0%}) | {med:.2f} |{d} '
                   f"{spread} | {', '.join(f'{r:.2f}' for r in ratios)} | "
                   f"{f'<= {target}x' if target else ''} | {verdict(ratios, target)} |")
    missing = set.union(*(set(rows) for rows, _ in boots)) - keys
    if missing:
        out += ['', 'Rows not measured in every boot (left out): ' +
                ', '.join(sorted(' '.join(map(str, k[1:])) for k in missing))]
    print('\n'.join(out))


if __name__ == '__main__':
    try:
        main()
    except Bad as e:
        sys.exit(f'cpu-insn: {e}')
