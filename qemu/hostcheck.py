#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side checks of a bench run: the second vantage point.

The guest asks for checks with lines in the serial log:

    P2P-HOSTCHECK equal  LEN A@OFF B@OFF [limit=NAME]   bytes of A and B agree
    P2P-HOSTCHECK fill   LEN A@OFF BYTE                 every byte is BYTE
    P2P-HOSTCHECK absent LEN A@OFF B                    A's bytes appear nowhere in B

A and B name files of the run directory: bar0 -> bar0.mem (the ivshmem
backing file), nvme0 -> nvme0.img (the namespace image). limit=NAME marks
a known emulator limitation: a mismatch is then reported as SKIP, never
as a pass. The kernel log is checked too: the guest must reach
"P2P-EXIT 0" without an oops, BUG, WARNING, KASAN or lockdep report.

Writes one KTAP document (suite "host") to stdout.
"""
import os
import re
import sys

SPLATS = [
    (r'Kernel panic', 'kernel panic'),
    (r'\bBUG:', 'BUG'),
    (r'WARNING:', 'WARNING'),
    (r'KASAN:', 'KASAN report'),
    (r'possible circular locking|inconsistent lock state|possible recursive locking|'
     r'suspicious RCU usage|sleeping function called from invalid context', 'lockdep report'),
    (r'kmemleak: .*new suspected memory leaks', 'kmemleak leak'),
    (r'general protection fault|Oops:', 'oops'),
]


def path_of(run, name):
    for ext in ('.mem', '.img'):
        p = os.path.join(run, name + ext)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(name)


def read_at(run, ref, length):
    name, _, off = ref.partition('@')
    with open(path_of(run, name), 'rb') as f:
        f.seek(int(off, 0))
        return f.read(length)


def main():
    run = sys.argv[1]
    with open(os.path.join(run, 'serial.log'), 'rb') as f:
        log = f.read().decode('utf-8', 'replace')
    results = []   # (status, description)

    def res(ok, desc, skip=None):
        if skip:
            results.append(('ok', f'{desc} # SKIP {skip}'))
        else:
            results.append(('ok' if ok else 'not ok', desc))

    m = re.search(r'^P2P-EXIT (\d+)', log, re.M)
    res(m is not None and m.group(1) == '0',
        'guest test script completed' + (f' (exit {m.group(1)})' if m else ' (no P2P-EXIT: crash or timeout)'))
    for pat, what in SPLATS:
        hit = re.search(pat, log)
        res(hit is None, f'kernel log has no {what}')
        if hit:
            line = log[max(0, hit.start() - 200):hit.end() + 200].replace('\n', ' | ')
            print(f'    # {what}: ...{line}...')

    for line in log.splitlines():
        if not line.startswith('P2P-HOSTCHECK '):
            continue
        words = line.split()[1:]
        opts = dict(w.split('=', 1) for w in words if '=' in w and '@' not in w)
        args = [w for w in words if not ('=' in w and '@' not in w)]
        kind, length = args[0], int(args[1], 0)
        try:
            if kind == 'equal':
                a, b = read_at(run, args[2], length), read_at(run, args[3], length)
                ok = len(a) == length and a == b
                limit = opts.get('limit', 'none')
                desc = f'host sees {args[2]} == {args[3]} ({length} bytes)'
                if not ok:
                    firstdiff = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), -1)
                    print(f'    # {desc}: first difference at +{firstdiff}')
                res(ok, desc, skip=None if ok or limit == 'none' else f'emulator limitation: {limit}')
            elif kind == 'fill':
                a = read_at(run, args[2], length)
                byte = int(args[3], 0)
                res(len(a) == length and a == bytes([byte]) * length,
                    f'host sees {args[2]} filled with {byte:#04x} ({length} bytes)')
            elif kind == 'absent':
                a = read_at(run, args[2], length)
                with open(path_of(run, args[3]), 'rb') as f:
                    hay = f.read()
                res(hay.find(a[:4096]) < 0, f'host sees {args[2]} nowhere in {args[3]}')
            else:
                res(False, f'unknown host check {kind}')
        except (OSError, ValueError, IndexError) as e:
            res(False, f'host check {line.strip()}: {e}')

    print('KTAP version 1')
    print('1..1')
    print('    KTAP version 1')
    print('    # Subtest: host')
    print(f'    1..{len(results)}')
    for i, (st, desc) in enumerate(results, 1):
        print(f'    {st} {i} {desc}')
    print(('ok' if all(s == 'ok' for s, _ in results) else 'not ok') + ' 1 host')


if __name__ == '__main__':
    main()
