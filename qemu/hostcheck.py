#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side checks of a bench run: the second vantage point.

Byte checks arrive from the guest through qemu/hostd.py while the guest
waits (so the bytes are checked at that moment, before the guest reuses the
memory):

    equal  LEN A@OFF B@OFF [limit=NAME]   bytes of A and B agree
    fill   LEN A@OFF BYTE                 every byte is BYTE
    absent LEN A@OFF B                    A's first 4 KiB appear nowhere in B
    pristine LEN A@OFF                    an image still holds its initial pattern
    dma-mark                              start watching QEMU's nvme DMA trace
    dma-in LEN ADDR [io]                  every NVMe data DMA since the mark fell
                                          inside [ADDR, ADDR+LEN) (bus addresses);
                                          io: of I/O commands only (a tool's
                                          Identify at its start left out)
    dma-none                              no NVMe data DMA at all since the mark
    io-none                               no NVMe I/O command at all since the mark
                                          (admin commands may have run)
    setfeat FID CDW11                     since the mark, QEMU's nvme got a Set
                                          Features of FID with dword 11 CDW11
    dma-inflight MIN QUEUES               since the mark, on at least QUEUES I/O
                                          queues QEMU's nvme held MIN or more
                                          commands at once (submitted, not yet
                                          completed)
    queues-deleted MIN                    since the mark, QEMU's nvme was disabled
                                          (CC.EN 1 -> 0) at least MIN times, and each
                                          time every I/O SQ created since the enable
                                          before had been deleted first (nvme-pci's
                                          order; QEMU's reset is unsafe otherwise)
    json NAME KEYS BASE64                 p2pctl NAME's standard output (base64)
                                          is one JSON object, python's json parses
                                          it, with the keys KEYS (a,b,c or -)
    serials LIST                          LIST (a,b,c: what the guest's udev named
                                          its by-serial links) is exactly the set of
                                          serial= properties of the -device nvme
                                          options on QEMU's command line (qemu.cmd)

A and B name files of the run directory: bar0 -> bar0.mem (an ivshmem
backing file), nvme0 -> nvme0.img (a namespace image). limit=NAME marks a
known emulator limitation: a mismatch is then reported as SKIP, never as a
pass.

Run as a program after the VM exits, it writes the "host" KTAP suite: the
results hostd recorded, plus the kernel log checks (the guest reached
"P2P-EXIT 0" without an oops, BUG, WARNING, KASAN, lockdep or kmemleak
report, or a DMA pool destroyed with blocks still out).
"""
import base64
import hashlib
import json
import os
import re
import shlex
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
    # a DMA pool destroyed with blocks still out: a PRP list or SGL segment
    # was never given back (mm/dmapool.c says so and frees nothing)
    (r'dma_pool_destroy \S+ busy', 'DMA pool destroyed busy'),
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


DMA_RE = re.compile(r'pci_nvme_map_addr addr (0x[0-9a-f]+) len (\d+)')
# QEMU's nvme maps a command's data while it processes that command, right
# after tracing it: a mapping belongs to the command traced last
DMA_CMD_RE = re.compile(r'pci_nvme_(io_cmd|admin_cmd)|pci_nvme_map_addr addr (0x[0-9a-f]+) len (\d+)')
CMD_RE = re.compile(r'pci_nvme_(io_cmd|enqueue_req_completion) cid (\d+) (?:nsid \S+ sqid|cqid) (\d+)')
SETFEAT_RE = re.compile(r'pci_nvme_setfeat cid \d+ nsid \S+ fid (0x[0-9a-f]+) save \S+ cdw11 (0x[0-9a-f]+)')


def inflight_max(trace):
    """Most commands QEMU's nvme held at once, per I/O queue id."""
    now, top = {}, {}
    for kind, cid, qid in CMD_RE.findall(trace):
        qid = int(qid)
        if qid == 0:
            continue
        if kind == 'io_cmd':
            now[qid] = now.get(qid, 0) + 1
            top[qid] = max(top.get(qid, 0), now[qid])
        elif now.get(qid):
            now[qid] -= 1
    return top


QUEUE_RE = re.compile(r'^pci_nvme_(create_sq|del_sq|mmio_stopped)\b(?:[^\n]*?\bsqid=(\d+))?', re.M)


def disables(trace, mark):
    """(disables after @mark, those with an I/O SQ still there, SQs left)."""
    live, n, bad, left = set(), 0, 0, 0
    for m in QUEUE_RE.finditer(trace):
        kind, qid = m.group(1), m.group(2)
        if kind == 'create_sq' and qid and qid != '0':
            live.add(qid)
        elif kind == 'del_sq' and qid:
            live.discard(qid)
        elif kind == 'mmio_stopped':
            if m.start() >= mark:
                n += 1
                bad += bool(live)
                left += len(live)
            live.clear()
    return n, bad, left


def dma_trace(run):
    try:
        with open(os.path.join(run, 'nvme-dma.log')) as f:
            return f.read()
    except OSError:
        return ''


def qemu_nvme_serials(run):
    """The serial= of every -device nvme on the run's QEMU command line."""
    with open(os.path.join(run, 'qemu.cmd')) as f:
        args = shlex.split(f.read())
    serials = []
    for opt, val in zip(args, args[1:]):
        driver, _, props = val.partition(',')
        if opt == '-device' and driver == 'nvme':
            serials += [p.split('=', 1)[1] for p in props.split(',') if p.startswith('serial=')]
    return serials


def do_check(run, words):
    """Run one check; return (ktap status, description, note)."""
    if words and words[0] == 'dma-mark':
        with open(os.path.join(run, 'dma.mark'), 'w') as f:
            f.write(str(len(dma_trace(run))))
        return None, None, 'marked'
    if words and words[0] == 'dma-none':
        with open(os.path.join(run, 'dma.mark')) as f:
            mark = int(f.read())
        n = len(DMA_RE.findall(dma_trace(run)[mark:]))
        return ('ok' if n == 0 else 'not ok'), 'QEMU nvme did no data DMA since the mark', f'{n} mappings'
    if words and words[0] == 'io-none':
        with open(os.path.join(run, 'dma.mark')) as f:
            mark = int(f.read())
        n = sum(1 for kind, _, _ in CMD_RE.findall(dma_trace(run)[mark:]) if kind == 'io_cmd')
        return ('ok' if n == 0 else 'not ok'), 'QEMU nvme got no I/O command since the mark', f'{n} commands'
    if words and words[0] == 'setfeat':
        fid, cdw11 = int(words[1], 0), int(words[2], 0)
        with open(os.path.join(run, 'dma.mark')) as f:
            mark = int(f.read())
        seen = [(int(a, 16), int(b, 16)) for a, b in SETFEAT_RE.findall(dma_trace(run)[mark:])]
        desc = f'QEMU nvme got Set Features {fid:#x} with dword 11 {cdw11:#x}'
        note = ', '.join(f'{a:#x}:{b:#x}' for a, b in seen) or 'no Set Features'
        return ('ok' if (fid, cdw11) in seen else 'not ok'), desc, note
    if words and words[0] == 'dma-inflight':
        least, queues = int(words[1]), int(words[2])
        with open(os.path.join(run, 'dma.mark')) as f:
            mark = int(f.read())
        top = inflight_max(dma_trace(run)[mark:])
        busy = sum(1 for n in top.values() if n >= least)
        desc = f'QEMU nvme held >= {least} commands at once on >= {queues} I/O queues'
        note = 'most at once per queue: ' + (', '.join(f'q{q} {n}' for q, n in sorted(top.items())) or 'none')
        return ('ok' if busy >= queues else 'not ok'), desc, note
    if words and words[0] == 'queues-deleted':
        least = int(words[1])
        with open(os.path.join(run, 'dma.mark')) as f:
            mark = int(f.read())
        n, bad, left = disables(dma_trace(run), mark)
        desc = f'QEMU nvme was disabled >= {least} times, its I/O SQs deleted before each'
        note = f'{n} disables; {left} I/O SQs left at {bad} of them'
        return ('ok' if n >= least and not bad else 'not ok'), desc, note
    if words and words[0] == 'json':
        name, keys = words[1], [k for k in words[2].split(',') if k != '-']
        desc = f'p2pctl {name} -o json: one JSON object' + (f' with {", ".join(keys)}' if keys else '')
        try:
            text = base64.b64decode(words[3] if len(words) > 3 else '').decode()
            doc = json.loads(text)
        except (ValueError, UnicodeDecodeError) as e:
            return 'not ok', desc, f'{e}'
        missing = [k for k in keys if not isinstance(doc, dict) or k not in doc]
        ok = isinstance(doc, dict) and not missing
        return ('ok' if ok else 'not ok'), desc, f'{len(text)} bytes' + (f', missing {missing}' if missing else '')
    if words and words[0] == 'serials':
        got = sorted(w for w in (words[1] if len(words) > 1 else '').split(',') if w)
        try:
            want = sorted(qemu_nvme_serials(run))
        except OSError as e:
            return 'not ok', 'host reads the NVMe serials QEMU was given', str(e)
        desc = "the guest's by-serial names are the NVMe serials on QEMU's command line"
        return ('ok' if got and got == want else 'not ok'), desc, f'guest {got}, QEMU {want}'
    if words and words[0] == 'dma-in':
        length, lo = int(words[1], 0), int(words[2], 0)
        with open(os.path.join(run, 'dma.mark')) as f:
            mark = int(f.read())
        if words[3:] == ['io']:
            maps, kind = [], None
            for k, a, n in DMA_CMD_RE.findall(dma_trace(run)[mark:]):
                if k:
                    kind = k
                elif kind == 'io_cmd':
                    maps.append((int(a, 16), int(n)))
        else:
            maps = [(int(a, 16), int(n)) for a, n in DMA_RE.findall(dma_trace(run)[mark:])]
        outside = [(a, n) for a, n in maps if a < lo or a + n > lo + length]
        desc = f'QEMU nvme DMA addresses all inside [{lo:#x}, +{length:#x})'
        note = f'{len(maps)} mappings' + (f', first outside {outside[0][0]:#x}' if outside else '')
        return ('ok' if maps and not outside else 'not ok'), desc, note
    opts = dict(w.split('=', 1) for w in words if '=' in w and '@' not in w)
    args = [w for w in words if not ('=' in w and '@' not in w)]
    try:
        kind, length = args[0], int(args[1], 0)
        if kind == 'equal':
            a, b = read_at(run, args[2], length), read_at(run, args[3], length)
            desc = f'host sees {args[2]} == {args[3]} ({length} bytes)'
            if len(a) == length and a == b:
                return 'ok', desc, ''
            diff = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), -1)
            limit = opts.get('limit', 'none')
            if limit != 'none':
                return 'ok', f'{desc} # SKIP emulator limitation: {limit}', f'first difference at +{diff}'
            return 'not ok', desc, f'first difference at +{diff}'
        if kind == 'sha256':
            a = read_at(run, args[2], length)
            got = hashlib.sha256(a).hexdigest()
            ok = len(a) == length and got == args[3]
            return ('ok' if ok else 'not ok',
                    f'host computes the sha256 of {args[2]} ({length} bytes) the guest printed',
                    '' if ok else f'host {got}, guest {args[3]}')
        if kind == 'fill':
            a = read_at(run, args[2], length)
            byte = int(args[3], 0)
            bad = next((i for i in range(len(a)) if a[i] != byte), -1 if len(a) == length else len(a))
            return ('ok' if bad < 0 else 'not ok',
                    f'host sees {args[2]} filled with {byte:#04x} ({length} bytes)',
                    '' if bad < 0 else f'byte +{bad} differs')
        if kind == 'pristine':
            name, _, off = args[2].partition('@')
            pattern = os.path.join(run, '..', '..', 'images', name + '.pattern')
            with open(pattern, 'rb') as f:
                f.seek(int(off, 0))
                want = f.read(length)
            ok = read_at(run, args[2], length) == want
            return 'ok' if ok else 'not ok', f'host sees {args[2]} unchanged ({length} bytes)', ''
        if kind == 'absent':
            a = read_at(run, args[2], length)
            with open(path_of(run, args[3]), 'rb') as f:
                pos = f.read().find(a[:4096])
            return ('ok' if pos < 0 else 'not ok', f'host sees {args[2]} nowhere in {args[3]}',
                    '' if pos < 0 else f'found at {pos:#x}')
        return 'not ok', f'unknown host check {" ".join(words)}', ''
    except (OSError, ValueError, IndexError) as e:
        return 'not ok', f'host check {" ".join(words)}', str(e)


def main():
    run = sys.argv[1]
    with open(os.path.join(run, 'serial.log'), 'rb') as f:
        log = f.read().decode('utf-8', 'replace')
    results = []
    m = re.search(r'^P2P-EXIT (\d+)', log, re.M)
    # why there is no P2P-EXIT, when run.sh knows: a timeout, QEMU's death
    why = re.search(r'^P2P-(TIMEOUT|QEMU-DIED) (.*)$', log, re.M)
    if why:
        why = {'TIMEOUT': 'timeout', 'QEMU-DIED': 'QEMU died'}[why.group(1)] + ' ' + why.group(2)
    results.append(('ok' if m and m.group(1) == '0' else 'not ok',
                    'guest test script completed' +
                    (f' (exit {m.group(1)})' if m else
                     f' (no P2P-EXIT: {why or "guest crash or timeout"})')))
    # A guest test that provokes a warning the kernel itself prints (not the
    # suite's code) declares it: "P2P-KNOWN-WARNING <file:function> <why>".
    # Such a warning makes the check a SKIP with the reason, never a pass;
    # any other splat still fails it.
    known = re.findall(r'^P2P-KNOWN-WARNING (\S+) (.*)$', log, re.M)
    for pat, what in SPLATS:
        hits = list(re.finditer(pat + r'.*', log))
        excused = [h for h in hits if what == 'WARNING' and
                   any(site in h.group(0) for site, _ in known)]
        if not hits:
            results.append(('ok', f'kernel log has no {what}'))
        elif len(excused) == len(hits):
            why = '; '.join(f'{site}: {reason}' for site, reason in known
                            if any(site in h.group(0) for h in excused))
            results.append(('ok', f'kernel log has no {what} # SKIP known kernel warning: {why}'))
        else:
            results.append(('not ok', f'kernel log has no {what}'))
        for hit in hits[:1]:
            ctx = log[max(0, hit.start() - 200):hit.end() + 300].replace('\n', ' | ')
            print(f'    # {what}: ...{ctx}...')
    rpath = os.path.join(run, 'hostd.results')
    if os.path.exists(rpath):
        with open(rpath) as f:
            for line in f:
                st, _, desc = line.rstrip('\n').partition('\t')
                results.append((st, desc))

    print('KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: host')
    print(f'    1..{len(results)}')
    for i, (st, desc) in enumerate(results, 1):
        print(f'    {st} {i} {desc}')
    print(('ok' if all(s == 'ok' for s, _ in results) else 'not ok') + ' 1 host')


if __name__ == '__main__':
    main()
