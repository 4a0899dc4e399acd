#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The file benchmark's tables (Documentation/files.rst, step 7) from the
P2P-BENCH lines of a boot of qemu/tests/filebench.guest.sh.

    scripts/file-bench.py SERIAL_LOG [PROFILE]   the markdown tables
    scripts/file-bench.py --selftest             the tables of made-up lines
                                                 checked, and the refusals

scripts/file-benchmark.sh boots and calls this. Each figure is the median
of its row's passes. The rows, per shape (4 KiB QD32, 1 MiB QD8), into
p2pmem of one BAR, reading one file:

  (1)  file-cmd             p2pnvme's file command through io_uring, into a
                            registered p2pbar dma-buf
  (1') file-cmd-ioctl       the same through P2PNVME_IOC_FILE_SUBMIT batches
  (7)  file-cmd-placeholders (1) with p2pnvme's file_placeholder_force: the
                            same dma-buf through placeholder pages
  (2)  file-disk            O_DIRECT io_uring, the file on p2pnvme's disk
  (3)  file-nvme-pci        O_DIRECT io_uring, the same bytes on nvme-pci's
                            namespace of the twin controller: the baseline
  (4)  file-bounce-nvme-pci (3) into host memory, then a memcpy into the BAR
  (5)  extent-disk          p2pnvme's disk by O_DIRECT at the file's extents
  (6)  extent-engine        the engine's registered reads of the file's LBAs
  (2f) fio-file-disk        fio (io_uring, direct=1) of the file on p2pnvme's
                            disk into a p2pmem mapping (P2P-FIO lines)
  (3f) fio-file-nvme-pci    the same on nvme-pci's namespace: (3) as fio,
                            a tool this suite does not own, measures it

(2) - (5) is the filesystem's mapping per I/O (VFS, the filesystem's
iomap, the same block layer and memory); (1) - (6) what the file path
costs over the LBA engine (the mapping, the bio and blk-mq). (7) against
(1) and (4) is what decides whether placeholders ship (files.rst, "What
decides (b)"): 0.9x (1)'s IOPS and throughput at no more than 1.1x its CPU
per I/O, and at 1 MiB QD8 2x the bounce's throughput or half its CPU per
GiB (the rule's other half, the CPU filling holes only on the test
corpus, is the filecmd tests', not the bench's).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no compiled Python in the tree (lintian)

SHAPES = ((4096, 32), (1048576, 8))
ROWS = (('(1)', 'file-cmd', 'dmabuf', 'file command, io_uring, registered p2pbar dma-buf'),
        ("(1')", 'file-cmd-ioctl', 'dmabuf', 'file command, ioctl batches of QD, the same dma-buf'),
        ('(7)', 'file-cmd-placeholders', 'dmabuf', 'file command, io_uring, the same dma-buf through placeholders'),
        ('(2)', 'file-disk', 'p2p', "O_DIRECT io_uring, the file on p2pnvme's disk, into a p2pmem mapping"),
        ('(3)', 'file-nvme-pci', 'p2p', "O_DIRECT io_uring, the file on nvme-pci's namespace, into a p2pmem mapping"),
        ('(4)', 'file-bounce-nvme-pci', 'bounce', '(3) into host memory, then a memcpy into the p2pmem mapping'),
        ('(5)', 'extent-disk', 'p2p', "p2pnvme's disk by O_DIRECT at the file's extents (no filesystem)"),
        ('(6)', 'extent-engine', 'dmabuf', "the engine's registered reads of the file's LBAs (no filesystem, no disk)"),
        ('(2f)', 'fio-file-disk', 'p2p', "fio, O_DIRECT io_uring, the file on p2pnvme's disk, into a p2pmem mapping"),
        ('(3f)', 'fio-file-nvme-pci', 'p2p', "fio, O_DIRECT io_uring, the file on nvme-pci's namespace, into a p2pmem mapping"))
# the guest's busy time in the P2P-FIO lines: /proc/stat ticks (USER_HZ)
USER_HZ = 100
# under TCG the emulated controller sets the IOPS and throughput whatever
# the driver (Documentation/bench.rst, "the emulated controller bounds IOPS")
BOUND = ', bound by the emulated controller (Documentation/bench.rst)'
# and a copy by the CPU is emulated instruction by instruction: the
# bounce's memcpy costs under TCG what it would not on hardware
COPY = ', the file command bound by the emulated controller, the copy emulated by TCG'


class Bad(Exception):
    pass


def fio_row(r):
    """A P2P-FIO line of a fio row (qemu/tests/filebench.guest.sh's
    fio_row) as p2pbench's figures: fio's IOPS, bandwidth, total latency
    mean and 99th percentile, and the guest's busy ticks between fio's
    prerun and postrun per I/O."""
    if r['fio'] is None:
        raise Bad(f"fio failed: {r['bench']} {size_name(r['bs'])} QD{r['qd']}")
    rd = r['fio']['jobs'][0]['read']
    ops, size, busy = rd['total_ios'], r['bs'], r['busy'] / USER_HZ
    if not ops:
        raise Bad(f"fio read nothing: {r['bench']} {size_name(size)} QD{r['qd']}")
    return dict(bench=r['bench'], size=size, qd=r['qd'], path=r['mem'], ops=ops,
                iops=rd['iops'], mib_s=rd['bw_bytes'] / 1048576, lat_us=rd['lat_ns']['mean'] / 1000,
                p99_us=rd['lat_ns']['percentile']['99.000000'] / 1000,
                cpu_us_per_io=busy / ops * 1e6, cpu_s_per_gib=busy / (ops * size / (1 << 30)))


def rows_of(lines):
    out = []
    for line in lines:
        if line.startswith('P2P-BENCH {'):
            out.append(json.loads(line.split(' ', 1)[1]))
        elif line.startswith('P2P-FIO {'):
            r = json.loads(line.split(' ', 1)[1])
            if 'bench' in r:
                out.append(fio_row(r))
    return out


def size_name(s):
    return f'{s // 1048576} MiB' if s >= 1048576 else f'{s // 1024} KiB'


def tables(rows, profile='switch'):
    def get(bench, size, qd, path):
        rs = [r for r in rows if r['bench'] == bench and r['size'] == size and r['qd'] == qd and
              r['path'] == path]
        if not rs:
            raise Bad(f'no result for {bench} {size_name(size)} QD{qd} {path}')
        return {k: statistics.median(r[k] for r in rs) for k in
                ('iops', 'mib_s', 'lat_us', 'p99_us', 'cpu_us_per_io', 'cpu_s_per_gib')}, len(rs)

    got, npass = {}, set()
    for size, qd in SHAPES:
        for tag, bench, path, _ in ROWS:
            got[size, qd, tag], n = get(bench, size, qd, path)
            npass.add(n)
    words = {1: 'one pass', 2: 'medians of two interleaved passes', 3: 'medians of three interleaved passes'}
    passes = (words.get(min(npass), f'medians of {min(npass)} interleaved passes')
              if len(npass) == 1 else f'medians of {min(npass)}-{max(npass)} passes')
    out = [f'### One file into p2pmem of one BAR: the file command, O_DIRECT on either driver (p2pbench, fio), '
           f'the bounce, and the LBA paths under it, one thread, profile {profile}; {passes}', '',
           '| size | QD | row | what | IOPS | MiB/s | lat µs mean/p99 | CPU µs/IO | CPU s/GiB | IOPS vs (3) | CPU/IO vs (3) |',
           '|---|---|---|---|---|---|---|---|---|---|---|']
    for size, qd in SHAPES:
        base = got[size, qd, '(3)']
        for tag, bench, _, what in ROWS:
            r = got[size, qd, tag]
            out.append(f"| {size_name(size)} | {qd} | {tag} | {what} (`{bench}`) | {r['iops']:.0f} | "
                       f"{r['mib_s']:.1f} | {r['lat_us']:.0f}/{r['p99_us']:.0f} | {r['cpu_us_per_io']:.2f} | {r['cpu_s_per_gib']:.3f} | "
                       f"{r['iops'] / base['iops']:.2f} | {r['cpu_us_per_io'] / base['cpu_us_per_io']:.2f} |")
    out += ['', "### The filesystem's mapping per I/O, and the file path over the LBA engine", '',
            "| size | QD | (2) - (5): the filesystem's mapping, CPU µs/IO | IOPS (2)/(5) | "
            '(1) - (6): the file path over the engine, CPU µs/IO | IOPS (1)/(6) |',
            '|---|---|---|---|---|---|']
    for size, qd in SHAPES:
        g = {t: got[size, qd, t] for t in ('(1)', '(2)', '(5)', '(6)')}
        out.append(f"| {size_name(size)} | {qd} | {g['(2)']['cpu_us_per_io'] - g['(5)']['cpu_us_per_io']:+.2f} | "
                   f"{g['(2)']['iops'] / g['(5)']['iops']:.2f} | "
                   f"{g['(1)']['cpu_us_per_io'] - g['(6)']['cpu_us_per_io']:+.2f} | "
                   f"{g['(1)']['iops'] / g['(6)']['iops']:.2f} |")

    def verdict(ok):
        return 'met' if ok else 'missed'

    def ratio(size, qd, a, b, k):
        return got[size, qd, a][k] / got[size, qd, b][k]
    out += ['', '### Targets (issue 41; files.rst step 7: the disk), this run', '',
            '| target | wanted | got | |', '|---|---|---|---|']
    for size, qd in SHAPES:
        s = f'{size_name(size)} QD{qd}'
        what = 'IOPS' if size == 4096 else 'throughput'
        r = ratio(size, qd, '(1)', '(3)', 'iops')
        out.append(f'| {s}: file command (1) {what} vs nvme-pci O_DIRECT (3){BOUND} | >= 1.0x | {r:.2f}x | '
                   f'{verdict(r >= 1.0)} |')
        r = ratio(size, qd, '(1)', '(3)', 'cpu_us_per_io')
        out.append(f'| {s}: file command (1) CPU per I/O vs (3) | <= 0.8x | {r:.2f}x | {verdict(r <= 0.8)} |')
        r = ratio(size, qd, '(1)', '(3f)', 'iops')
        out.append(f"| {s}: file command (1) {what} vs fio's O_DIRECT on nvme-pci (3f){BOUND} | >= 1.0x | "
                   f'{r:.2f}x | {verdict(r >= 1.0)} |')
        r = ratio(size, qd, '(1)', '(3f)', 'cpu_us_per_io')
        out.append(f"| {s}: file command (1) CPU per I/O vs (3f) | <= 0.8x | {r:.2f}x | {verdict(r <= 0.8)} |")
    r = ratio(1048576, 8, '(1)', '(4)', 'mib_s')
    out.append(f'| 1 MiB QD8: file command (1) throughput vs the bounce (4){COPY} | >= 2x | {r:.2f}x | '
               f'{verdict(r >= 2)} |')
    for size, qd in SHAPES:
        s = f'{size_name(size)} QD{qd}'
        r = ratio(size, qd, '(2)', '(3)', 'iops')
        out.append(f"| {s}: p2pnvme's disk, O_DIRECT (2) IOPS vs (3){BOUND} | >= 0.9x | {r:.2f}x | "
                   f'{verdict(r >= 0.9)} |')
        r = ratio(size, qd, '(2)', '(3)', 'cpu_us_per_io')
        out.append(f"| {s}: p2pnvme's disk, O_DIRECT (2) CPU per I/O vs (3) | <= 1.1x | {r:.2f}x | "
                   f'{verdict(r <= 1.1)} |')
    out += ['', "### Placeholders: (7) against the real pages (1) and the bounce (4) "
            '(files.rst, "What decides (b)"), this run', '',
            '| rule | wanted | got | |', '|---|---|---|---|']
    ok = True
    for size, qd in SHAPES:
        s = f'{size_name(size)} QD{qd}'
        for k, what in (('iops', 'IOPS'), ('mib_s', 'throughput')):
            r = ratio(size, qd, '(7)', '(1)', k)
            ok &= r >= 0.9
            out.append(f'| {s}: placeholders (7) {what} vs the real pages (1){BOUND} | >= 0.9x | {r:.2f}x | '
                       f'{verdict(r >= 0.9)} |')
        r = ratio(size, qd, '(7)', '(1)', 'cpu_us_per_io')
        ok &= r <= 1.1
        out.append(f'| {s}: placeholders (7) CPU per I/O vs (1) | <= 1.1x | {r:.2f}x | {verdict(r <= 1.1)} |')
    t = ratio(1048576, 8, '(7)', '(4)', 'mib_s')
    c = ratio(1048576, 8, '(7)', '(4)', 'cpu_s_per_gib')
    ok &= t >= 2 or c <= 0.5
    out.append(f'| 1 MiB QD8: placeholders (7) vs the bounce (4){COPY}: throughput, or CPU per GiB | '
               f'>= 2x, or <= 0.5x | {t:.2f}x, {c:.2f}x | {verdict(t >= 2 or c <= 0.5)} |')
    out.append(f"| the bench's part of the rule: placeholders ship | all of the above | | "
               f"{'met' if ok else 'missed'} |")
    return '\n'.join(out)


def selftest():
    """The tables of made-up rows: the ratios, the differences and the
    verdicts where they are known; a row missing is refused."""
    fails = []

    def expect(what, ok):
        print(f"{'ok' if ok else 'FAILED'}: {what}")
        if not ok:
            fails.append(what)

    # IOPS and CPU per I/O of each row, (3) the baseline
    fig = {'file-cmd': (40000, 2.0), 'file-cmd-ioctl': (45000, 1.5), 'file-cmd-placeholders': (38000, 2.1),
           'file-disk': (38000, 3.0),
           'file-nvme-pci': (40000, 3.0), 'file-bounce-nvme-pci': (20000, 5.0),
           'extent-disk': (39000, 2.5), 'extent-engine': (48000, 1.2),
           'fio-file-disk': (39000, 3.5), 'fio-file-nvme-pci': (40000, 4.0)}
    path = {bench: p for _, bench, p, _ in ROWS}

    def gen(fig):
        lines = []
        for size, qd in SHAPES:
            k = 1 if size == 4096 else 0.1
            for p in range(3):
                for bench, (iops, cpu) in fig.items():
                    # passes around the median: the table's figures are these
                    d = (p - 1) * 0.05
                    io = iops * k * (1 + d)
                    if bench.startswith('fio-'):
                        # fio's JSON, the guest's busy ticks over its I/O
                        ops = int(io * 3)
                        rd = dict(total_ios=ops, iops=io, bw_bytes=io * size,
                                  lat_ns=dict(mean=qd / io * 1e9, percentile={'99.000000': 2 * qd / io * 1e9}))
                        lines.append('P2P-FIO ' + json.dumps(dict(
                            row=bench, bench=bench, dev='/mnt/f', mem='p2p', bs=size, qd=qd,
                            busy=cpu * (1 + d) * ops / 1e6 * USER_HZ, mark=1, read_bytes=ops * size,
                            fio=dict(jobs=[dict(read=rd)]))))
                        continue
                    lines.append('P2P-BENCH ' + json.dumps(dict(
                        bench=bench, dev='/mnt/f', size=size, qd=qd, path=path[bench],
                        ops=int(io * 3), iops=io, mib_s=io * size / 1048576, lat_us=qd / io * 1e6,
                        p99_us=2 * qd / io * 1e6, cpu_us_per_io=cpu * (1 + d),
                        cpu_s_per_gib=cpu * (1 + d) / 1e6 * (1 << 30) / size,
                        mark=1, slots=8192, verified=qd)))
        lines.append('P2P-BENCH {"bench":"regcost","size":4096,"n":1,"host_us_per_page":1,'
                     '"p2pmem_us_per_page":1,"ratio":1}')
        return lines
    lines = gen(fig)
    t = tables(rows_of(lines))
    tl = t.split('\n')
    expect('the heading says three passes', 'medians of three interleaved passes' in tl[0])
    expect('(1) at 4 KiB: 40000 IOPS, CPU 2.00, 1.00x the IOPS and 0.67x the CPU of (3)',
           any(line.startswith('| 4 KiB | 32 | (1) |') and line.endswith('| 40000 | 156.2 | 800/1600 | 2.00 | 0.524 | 1.00 | 0.67 |')
               for line in tl))
    expect('(3) against itself: 1.00 and 1.00',
           any(line.startswith('| 1 MiB | 8 | (3) |') and line.endswith('| 1.00 | 1.00 |') for line in tl))
    expect("the filesystem's mapping at 4 KiB: (2) - (5) +0.50 µs, IOPS 0.97; (1) - (6) +0.80 µs, IOPS 0.83",
           '| 4 KiB | 32 | +0.50 | 0.97 | +0.80 | 0.83 |' in tl)
    expect('4 KiB QD32 CPU target met at 0.67x',
           '| 4 KiB QD32: file command (1) CPU per I/O vs (3) | <= 0.8x | 0.67x | met |' in tl)
    expect("fio's row (3f) from its P2P-FIO lines: 40000 IOPS, 4.00 µs, 1.33x (3)'s CPU",
           any(line.startswith('| 4 KiB | 32 | (3f) |') and
               line.endswith('| 40000 | 156.2 | 800/1600 | 4.00 | 1.049 | 1.00 | 1.33 |') for line in tl))
    expect("against fio's (3f): the IOPS 1.00x met, the CPU 0.50x met",
           f"| 4 KiB QD32: file command (1) IOPS vs fio's O_DIRECT on nvme-pci (3f){BOUND} | >= 1.0x | 1.00x | met |"
           in tl and '| 4 KiB QD32: file command (1) CPU per I/O vs (3f) | <= 0.8x | 0.50x | met |' in tl)
    expect('4 KiB QD32 IOPS target met at 1.00x, labelled as the emulated controller\'s bound',
           f'| 4 KiB QD32: file command (1) IOPS vs nvme-pci O_DIRECT (3){BOUND} | >= 1.0x | 1.00x | met |' in tl)
    expect('1 MiB QD8 against the bounce: 2.00x, met',
           f'| 1 MiB QD8: file command (1) throughput vs the bounce (4){COPY} | >= 2x | 2.00x | met |' in tl)
    expect("the disk's IOPS at 0.95x: met (>= 0.9x)",
           f"| 4 KiB QD32: p2pnvme's disk, O_DIRECT (2) IOPS vs (3){BOUND} | >= 0.9x | 0.95x | met |" in tl)
    expect("the disk's CPU at 1.00x: met (<= 1.1x)",
           "| 1 MiB QD8: p2pnvme's disk, O_DIRECT (2) CPU per I/O vs (3) | <= 1.1x | 1.00x | met |" in tl)
    expect('(7) at 4 KiB: 38000 IOPS, 0.95x (1)\'s IOPS and throughput, met',
           f'| 4 KiB QD32: placeholders (7) IOPS vs the real pages (1){BOUND} | >= 0.9x | 0.95x | met |' in tl and
           f'| 4 KiB QD32: placeholders (7) throughput vs the real pages (1){BOUND} | >= 0.9x | 0.95x | met |' in tl)
    expect('(7) at 1 MiB: 1.05x (1)\'s CPU per I/O, met (<= 1.1x)',
           '| 1 MiB QD8: placeholders (7) CPU per I/O vs (1) | <= 1.1x | 1.05x | met |' in tl)
    expect('(7) against the bounce: 1.90x the throughput (short of 2x) but 0.42x the CPU per GiB: met',
           f'| 1 MiB QD8: placeholders (7) vs the bounce (4){COPY}: throughput, or CPU per GiB | '
           '>= 2x, or <= 0.5x | 1.90x, 0.42x | met |' in tl)
    expect('placeholders ship (the bench\'s part)',
           "| the bench's part of the rule: placeholders ship | all of the above | | met |" in tl)
    # a slower file command: the targets missed
    tl = tables(rows_of(gen(dict(fig, **{'file-cmd': (40000, 2.7)})))).split('\n')
    expect('2.7 µs against 3.0: 0.90x, missed',
           '| 4 KiB QD32: file command (1) CPU per I/O vs (3) | <= 0.8x | 0.90x | missed |' in tl)
    # placeholders short of the real pages, and no better than the bounce
    tl = tables(rows_of(gen(dict(fig, **{'file-cmd-placeholders': (30000, 2.6)})))).split('\n')
    expect('(7) at 0.75x (1)\'s IOPS: missed',
           f'| 4 KiB QD32: placeholders (7) IOPS vs the real pages (1){BOUND} | >= 0.9x | 0.75x | missed |' in tl)
    expect('(7) at 1.30x (1)\'s CPU per I/O: missed',
           '| 4 KiB QD32: placeholders (7) CPU per I/O vs (1) | <= 1.1x | 1.30x | missed |' in tl)
    expect('(7) against the bounce: 1.50x and 0.52x, neither: missed',
           f'| 1 MiB QD8: placeholders (7) vs the bounce (4){COPY}: throughput, or CPU per GiB | '
           '>= 2x, or <= 0.5x | 1.50x, 0.52x | missed |' in tl)
    expect('placeholders do not ship',
           "| the bench's part of the rule: placeholders ship | all of the above | | missed |" in tl)
    # only the CPU per I/O over 1.1x: the whole rule missed
    tl = tables(rows_of(gen(dict(fig, **{'file-cmd-placeholders': (40000, 2.3)})))).split('\n')
    expect('(7) at 1.15x (1)\'s CPU alone misses the rule',
           '| 1 MiB QD8: placeholders (7) CPU per I/O vs (1) | <= 1.1x | 1.15x | missed |' in tl and
           "| the bench's part of the rule: placeholders ship | all of the above | | missed |" in tl)
    try:
        tables(rows_of([line for line in lines if '"file-cmd-placeholders"' not in line]))
        expect('a missing (7) is refused', False)
    except Bad as e:
        expect(f'a missing (7) is refused ({e})', 'file-cmd-placeholders' in str(e))
    # a row missing: refused, naming it
    try:
        tables(rows_of([line for line in lines if '"extent-engine"' not in line]))
        expect('a missing row is refused', False)
    except Bad as e:
        expect(f'a missing row is refused ({e})', 'extent-engine' in str(e))
    # a fio run that failed (its JSON null): refused, naming it
    try:
        tables(rows_of([line.split(', "fio": ')[0] + ', "fio": null}' if '"fio-file-disk"' in line else line
                        for line in lines]))
        expect('a failed fio row is refused', False)
    except Bad as e:
        expect(f'a failed fio row is refused ({e})', 'fio-file-disk' in str(e))
    insn_selftest(expect)
    return 1 if fails else 0


def insn_selftest(expect):
    """scripts/cpu-insn.py's file rows on three made-up boots of the file
    benchmark: each row's instructions per I/O against (3), the
    difference, the targets judged."""
    here = os.path.dirname(os.path.abspath(__file__))
    # instructions per I/O of each row, 4 KiB QD32 and 1 MiB QD8
    per = {4096: {'file-cmd': 7000, 'file-cmd-ioctl': 6000, 'file-cmd-placeholders': 7500,
                  'file-disk': 10500, 'file-nvme-pci': 10000,
                  'file-bounce-nvme-pci': 12000, 'extent-disk': 9000, 'extent-engine': 5000},
           1048576: {'file-cmd': 85000, 'file-cmd-ioctl': 80000, 'file-cmd-placeholders': 97000,
                     'file-disk': 99000, 'file-nvme-pci': 100000,
                     'file-bounce-nvme-pci': 900000, 'extent-disk': 97000, 'extent-engine': 60000}}
    for size, fio in ((4096, (10200, 12500)), (1048576, (99500, 100500))):
        per[size].update({'fio-file-disk': fio[0], 'fio-file-nvme-pci': fio[1]})
    path = {bench: p for _, bench, p, _ in ROWS}
    with tempfile.TemporaryDirectory() as top:
        for b, scale in enumerate((1.0, 1.01, 0.99), 1):
            d = os.path.join(top, f'run{b}')
            os.mkdir(d)
            serial = ['P2P-INSN-CAL {"bench":"mark","loops":1000000,"user_insns":2000000,"mark":1}']
            log = ['insn format 1 api 1 target x86_64 vcpus 2 vclock yes']
            k = u = 0

            def mark(n):
                log.append(f'mark {n} vcpu 0 host_ns {n} vclock_ns {n} kernel {k},0 user {u},0')
            mark(2)
            u += 2000000 + 8
            mark(3)
            w = 1
            for size, qd in SHAPES:
                for bench, n in per[size].items():
                    w += 1
                    if bench.startswith('fio-'):
                        serial.append('P2P-FIO ' + json.dumps(dict(
                            row=bench, bench=bench, dev='/mnt/f', mem='p2p', bs=size, qd=qd, busy=1,
                            mark=w, fio=dict(jobs=[dict(read=dict(total_ios=1000))]))))
                    else:
                        serial.append('P2P-BENCH ' + json.dumps(dict(bench=bench, size=size, qd=qd,
                                                                     path=path[bench], ops=1000, mark=w)))
                    mark(2 * w)
                    k += round(n * scale * 900)
                    u += round(n * scale * 100)
                    mark(2 * w + 1)
            w += 1
            serial.append('P2P-INSN-CAL {"bench":"mark","loops":1000000,"user_insns":2000000,'
                          f'"mark":{w}}}')
            mark(2 * w)
            u += 2000000 + 8
            mark(2 * w + 1)
            with open(os.path.join(d, 'serial.log'), 'w') as f:
                f.write('\n'.join(serial) + '\n')
            with open(os.path.join(d, 'insn.log'), 'w') as f:
                f.write('\n'.join(log) + '\n')
        r = subprocess.run([sys.executable, os.path.join(here, 'cpu-insn.py'), top],
                           capture_output=True, text=True)
    expect(f'cpu-insn.py reads three made-up boots of the file benchmark (exit {r.returncode}: '
           f'{r.stderr.strip()})', r.returncode == 0)
    tl = r.stdout.split('\n')

    def row(label):
        return next((line for line in tl if line.startswith(f'| {label} |')), '')
    got = row('file, 4 KiB QD32: (1) the file command, io_uring, registered dma-buf vs (3) nvme-pci O_DIRECT')
    expect('cpu-insn: (1) against (3) at 4 KiB: 7.0k against 10.0k, 0.70, -3,000, spread 0, <= 0.8x met',
           got.endswith('| 7.0k (90%) | 10.0k (90%) | 0.70 | -3,000 | 0.0% | 0.70, 0.70, 0.70 | <= 0.8x | met |'))
    got = row('file, 1 MiB QD8: (1) the file command, io_uring, registered dma-buf vs (3) nvme-pci O_DIRECT')
    expect('cpu-insn: (1) against (3) at 1 MiB: 0.85, missed', got.endswith('| 0.85 | -15,000 | 0.0% | '
                                                                            '0.85, 0.85, 0.85 | <= 0.8x | missed |'))
    got = row("file, 4 KiB QD32: (1) the file command vs (3f) fio's O_DIRECT of the file on nvme-pci")
    expect("cpu-insn: (1) against fio's (3f) at 4 KiB: 7.0k against 12.5k, 0.56, <= 0.8x met",
           got.endswith('| 7.0k (90%) | 12.5k (90%) | 0.56 | -5,500 | 0.0% | 0.56, 0.56, 0.56 | <= 0.8x | met |'))
    got = row("file, 4 KiB QD32: (3f) fio vs (3) p2pbench, the same O_DIRECT reads on nvme-pci")
    expect("cpu-insn: fio's (3f) against p2pbench's (3): 1.25, no target",
           '| 12.5k (90%) | 10.0k (90%) | 1.25 | +2,500 |' in got and got.endswith('|  |  |'))
    got = row("file, 4 KiB QD32: (2f) fio on p2pnvme's disk vs (3f) on nvme-pci")
    expect("cpu-insn: fio on either driver at 4 KiB: 0.82, no target", '| 0.82 | -2,300 |' in got)
    got = row("file, 4 KiB QD32: (2) O_DIRECT on p2pnvme's disk vs (3)")
    expect("cpu-insn: the disk's O_DIRECT (2) against (3): 1.05, <= 1.1x met", got.endswith('| <= 1.1x | met |')
           and '| 1.05 | +500 |' in got)
    got = row("file, 4 KiB QD32: the filesystem's mapping: (2) vs (5), the same reads without it")
    expect("cpu-insn: the filesystem's mapping at 4 KiB: +1,500 instructions per I/O, no target",
           '| 10.5k (90%) | 9.0k (90%) | 1.17 | +1,500 |' in got and got.endswith('|  |  |'))
    got = row('file, 4 KiB QD32: the file path over the LBA engine: (1) vs (6)')
    expect('cpu-insn: the file path over the engine at 4 KiB: +2,000', '| 1.40 | +2,000 |' in got)
    got = row("file, 4 KiB QD32: (7) the file command through placeholders vs (1) the real pages")
    expect('cpu-insn: (7) against (1) at 4 KiB: 7.5k against 7.0k, 1.07, +500, <= 1.1x met',
           got.endswith('| 7.5k (90%) | 7.0k (90%) | 1.07 | +500 | 0.0% | 1.07, 1.07, 1.07 | <= 1.1x | met |'))
    got = row("file, 1 MiB QD8: (7) the file command through placeholders vs (1) the real pages")
    expect('cpu-insn: (7) against (1) at 1 MiB: 1.14, missed', got.endswith('| 1.14 | +12,000 | 0.0% | '
                                                                          '1.14, 1.14, 1.14 | <= 1.1x | missed |'))
    got = row('file, 1 MiB QD8: (7) the file command through placeholders vs (4) the bounce, '
              'half the CPU per GiB (or 2x its throughput: the time tables)')
    expect('cpu-insn: (7) against the bounce at 1 MiB: 0.11, <= 0.5x met',
           got.endswith('| 0.11 | -803,000 | 0.0% | 0.11, 0.11, 0.11 | <= 0.5x | met |'))
    expect('cpu-insn: (7) against the bounce only at 1 MiB QD8',
           not row('file, 4 KiB QD32: (7) the file command through placeholders vs (4) the bounce, '
                   'half the CPU per GiB (or 2x its throughput: the time tables)'))
    got = row('file, 4 KiB QD32: (7) the file command through placeholders vs (3)')
    expect('cpu-insn: (7) against (3), no target', '| 0.75 | -2,500 |' in got and got.endswith('|  |  |'))
    expect('cpu-insn: the file table\'s header names the difference',
           any(line.startswith('| row | insns/IO | compared with: insns/IO | ratio | difference insns/IO |')
               for line in tl))


def main():
    if sys.argv[1:] == ['--selftest']:
        sys.exit(selftest())
    if len(sys.argv) not in (2, 3):
        sys.exit('usage: scripts/file-bench.py SERIAL_LOG [PROFILE] | --selftest')
    with open(sys.argv[1], errors='replace') as f:
        rows = rows_of(f)
    print(tables(rows, *sys.argv[2:]))


if __name__ == '__main__':
    try:
        main()
    except Bad as e:
        sys.exit(f'file-bench: {e}')
