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
    dma-notin LEN ADDR                    no NVMe data DMA since the mark touched
                                          [ADDR, ADDR+LEN) (bus addresses: a BAR
                                          that must hear nothing more)
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
    pattern LEN A@OFF ID FOFF             bytes of A are file ID's pattern from file
                                          offset FOFF (tools/tests/p2pfile-test.c:
                                          the 8-byte word at file offset O of file ID
                                          is 0x5046 << 48 | ID << 32 | O / 8, LE)
    nopattern A ID                        no 8-byte word of file ID's pattern, at any
                                          offset, anywhere in A (a race's canary)
    fsmap IMG FS INO ID SIZE N FNV        the extents of inode INO of the ext4 or xfs
                                          (FS) in image IMG, as debugfs or xfs_db read
                                          them (the guest unmounted it), are the
                                          guest's FIEMAP: N extents whose canonical
                                          text hashes to FNV (p2pfile-test's
                                          extents_fnv(): clipped at the block after
                                          SIZE, adjacent ones merged)
    fsdata IMG FS INO ID SIZE ZEROS       every byte of the file below SIZE is in a
                                          written extent of INO in IMG and is ID's
                                          pattern there, but in ZEROS ("a-b,c-d" or
                                          "-": holes, unwritten or zeroed ranges),
                                          where a written extent holds zeros
    fsck IMG FS                           e2fsck -fn or xfs_repair -n -f finds the
                                          filesystem in IMG clean

A and B name files of the run directory: bar0 -> bar0.mem (an ivshmem
backing file), nvme0 -> nvme0.img (a namespace image). limit=NAME marks a
known emulator limitation whose signature is that A was never written (all
zero, as the BAR was before): only that is reported as SKIP; other bytes
fail, and equal bytes fail too ("the limitation is gone: drop limit=").
Every length must be positive; the trace checks fail when QEMU's nvme trace
is missing or has no nvme event at all.

Run as a program after the VM exits, it writes the "host" KTAP suite: the
results hostd recorded, plus the run's own checks:
  - the guest reached "P2P-EXIT 0", and QEMU neither timed out nor died;
  - the kernel log has no oops, BUG, WARNING, KASAN, UBSAN, lockdep or
    kmemleak report, RCU stall, hung task, soft lockup, or DMA pool
    destroyed with blocks still out. A guest test that provokes a warning
    of the kernel's own declares it in the kernel log, around the commands
    that provoke it: "P2P-KNOWN-WARNING-BEGIN FUNCTION MAX | MESSAGE |
    REASON" ... "P2P-KNOWN-WARNING-END FUNCTION"; a WARNING at FUNCTION
    with MESSAGE on it or just before it, between the two, at most MAX
    times, is a SKIP with the reason; anything else fails;
  - where the guest printed "P2P-DMA-API-ERRORS N" (and always on a debug
    kernel), DMA-API debugging's error count equals the warnings it
    printed: none went unreported;
  - every suite the guest declared ("P2P-EXPECT NAME...") printed its
    results, and no suite printed was undeclared;
  - the host checks the guest sent ("P2P-HOSTCHECKS N") all reached hostd;
  - on a run of the insn test (the CPU-per-I/O regression check: a run
    named PROFILE.insn.FLAVOUR), three cases from QEMU's insn plugin's
    counts (scripts/insnlog.py): the plugin counted the guest's
    calibration loops right; p2pnvme's instructions per registered 4 KiB
    QD32 read are at most 1.10 x the run's recorded figure (qemu/insn-baseline,
    or P2P_INSN_BASELINE; none recorded fails); and at most nvme-pci's in
    the same boot. Each case names its figures as key=value.
"""
import array
import base64
import hashlib
import json
import os
import re
import shlex
import struct
import subprocess
import sys

SPLATS = [
    (r'Kernel panic', 'kernel panic'),
    (r'\bBUG:', 'BUG'),
    (r'WARNING:', 'WARNING'),
    (r'KASAN:', 'KASAN report'),
    (r'possible circular locking|inconsistent lock state|possible recursive locking|'
     r'suspicious RCU usage|sleeping function called from invalid context', 'lockdep report'),
    (r'kmemleak: .*new suspected memory leaks', 'kmemleak leak'),
    (r'general protection fault|Oops:|kernel BUG at', 'oops'),
    (r'UBSAN:', 'UBSAN report'),
    (r'rcu: INFO: \S+ (?:self-)?detected stalls?|rcu_\S+ self-detected stall|detected stalls on CPUs',
     'RCU stall'),
    (r'blocked for more than \d+ seconds', 'hung task'),
    (r'soft lockup - CPU', 'soft lockup'),
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
    """QEMU's nvme trace: a trace that is missing, or that never saw one
    nvme event since boot, cannot say that nothing happened."""
    with open(os.path.join(run, 'nvme-dma.log')) as f:
        t = f.read()
    if 'pci_nvme_' not in t:
        raise ValueError('the nvme trace has no pci_nvme_ event at all')
    return t


def trace_since_mark(run):
    with open(os.path.join(run, 'dma.mark')) as f:
        mark, _, ino = f.read().partition(' ')
    if ino and int(ino) != os.stat(os.path.join(run, 'nvme-dma.log')).st_ino:
        raise ValueError('the nvme trace was replaced since the mark')
    return dma_trace(run)[int(mark):]


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


PAT_MAGIC = 0x5046


def pattern_bytes(fid, off, length):
    """LENGTH bytes of file FID's pattern from file offset OFF
    (tools/tests/p2pfile-test.c's pat_fill())."""
    a, b = off & ~7, (off + length + 7) & ~7
    if b >> 3 >= 1 << 32:
        raise ValueError(f'offset {off:#x}+{length:#x} beyond the pattern\'s 32 GiB')
    base = PAT_MAGIC << 48 | (fid & 0xffff) << 32
    words = array.array('Q', range(base + (a >> 3), base + (b >> 3)))
    if sys.byteorder != 'little':
        words.byteswap()
    return words.tobytes()[off - a:off - a + length]


def word_at(data, i):
    """What the 8-byte word around byte I of DATA (aligned as the file) is."""
    w = data[i & ~7:(i & ~7) + 8]
    if len(w) < 8:
        return 'a partial word'
    v = struct.unpack('<Q', w)[0]
    if v == 0:
        return 'zero'
    if v >> 48 == PAT_MAGIC:
        return f'file {v >> 32 & 0xffff:#x} offset {(v & 0xffffffff) * 8:#x}'
    return f'{v:#018x}'


def run_tool(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors='replace', timeout=300)
    return r.returncode, r.stdout


def fs_extents(img, fs, ino):
    """(block size, [(logical, physical, length, unwritten)] in bytes) of
    inode INO, read from the image by the filesystem's own tools."""
    if fs == 'ext4':
        rc, out = run_tool(['debugfs', '-R', 'stats -h', img])
        m = re.search(r'^Block size:\s+(\d+)', out, re.M)
        if rc or not m:
            raise ValueError(f'debugfs stats: exit {rc}: {out[-200:]}')
        bs = int(m.group(1))
        rc, out = run_tool(['debugfs', '-R', f'ex -l <{ino}>', img])
        if rc or 'Level Entries' not in out:
            raise ValueError(f'debugfs ex <{ino}>: exit {rc}: {out[-200:]}')
        ext = []
        for m in re.finditer(r'^\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s+(\d+)\s*-\s*(\d+)\s+(\d+)\s*-\s*(\d+)'
                             r'\s+(\d+)[ \t]*(\S*)', out, re.M):
            if m.group(1) != m.group(2):
                continue        # an index node
            ext.append((int(m.group(3)) * bs, int(m.group(5)) * bs, int(m.group(7)) * bs,
                        1 if m.group(8) == 'Uninit' else 0))
        return bs, ext
    if fs == 'xfs':
        rc, out = run_tool(['xfs_db', '-r', '-c', 'sb 0', '-c', 'p blocksize agblocks', img])
        m1, m2 = re.search(r'blocksize = (\d+)', out), re.search(r'agblocks = (\d+)', out)
        if rc or not m1 or not m2:
            raise ValueError(f'xfs_db sb: exit {rc}: {out[-200:]}')
        bs, agblocks = int(m1.group(1)), int(m2.group(1))
        rc, out = run_tool(['xfs_db', '-r', '-c', f'inode {ino}', '-c', 'bmap', img])
        if rc:
            raise ValueError(f'xfs_db bmap {ino}: exit {rc}: {out[-200:]}')
        ext = [(int(m.group(1)) * bs, (int(m.group(2)) * agblocks + int(m.group(3))) * bs,
                int(m.group(4)) * bs, int(m.group(5)))
               for m in re.finditer(r'^data offset (\d+) startblock \d+ \((\d+)/(\d+)\) count (\d+) '
                                    r'flag (\d+)', out, re.M)]
        return bs, ext
    raise ValueError(f'filesystem {fs}: ext4 or xfs')


def canonical(ext, size, bs):
    """As p2pfile-test's extents(): clipped at the block after SIZE, sorted,
    adjacent extents (logical and physical, same state) merged."""
    end = (size + bs - 1) // bs * bs
    out = []
    for l, p, n, u in sorted(ext):
        if l >= end:
            continue
        n = min(n, end - l)
        if out and out[-1][0] + out[-1][2] == l and out[-1][1] + out[-1][2] == p and out[-1][3] == u:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + n, u)
        else:
            out.append((l, p, n, u))
    return out


def fnv(ext):
    h = 0xcbf29ce484222325
    for l, p, n, u in ext:
        for c in f'{l} {p} {n} {u}\n'.encode():
            h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
    return h


def zero_ranges(text):
    if text == '-':
        return []
    return [tuple(int(x) for x in r.split('-')) for r in text.split(',')]


def fs_check(run, words):
    """fsmap, fsdata and fsck: the filesystem in a namespace image."""
    kind, img, fs = words[0], path_of(run, words[1]), words[2]
    if kind == 'fsck':
        cmd = ['e2fsck', '-fn', img] if fs == 'ext4' else ['xfs_repair', '-n', '-f', img]
        rc, out = run_tool(cmd)
        return ('ok' if rc == 0 else 'not ok', f'{" ".join(cmd[:-1])} finds {fs} in {words[1]} clean',
                f'exit {rc}' + ('' if rc == 0 else ': ' + ' | '.join(out.strip().splitlines()[-4:])[:300]))
    ino, fid, size = int(words[3]), int(words[4], 0), int(words[5])
    bs, raw = fs_extents(img, fs, ino)
    ext = canonical(raw, size, bs)
    if kind == 'fsmap':
        n, want = int(words[6]), int(words[7], 16)
        got = fnv(ext)
        ok = n == len(ext) and got == want
        return ('ok' if ok else 'not ok',
                f'{fs} in {words[1]}: inode {ino}\'s extents on the host are the guest\'s FIEMAP',
                f'{len(ext)} extents, hash {got:016x}; the guest\'s: {n}, {want:016x}')
    zeros = zero_ranges(words[6])
    desc = (f'{fs} in {words[1]}: inode {ino}\'s bytes on the host are file {fid:#x}\'s pattern'
            + (', zeros where it reads as zeros' if zeros else ''))
    with open(img, 'rb') as f:
        covered = []
        for l, p, n, u in ext:
            if u or l >= size:
                continue
            n = min(n, size - l)
            f.seek(p)
            got = f.read(n)
            want = bytearray(pattern_bytes(fid, l, n))
            for a, b in zeros:
                lo, hi = max(a, l), min(b, l + n)
                if lo < hi:
                    want[lo - l:hi - l] = bytes(hi - lo)
            if got != want:
                i = next((k for k in range(min(len(got), n)) if got[k] != want[k]), len(got))
                return 'not ok', desc, (f'file offset {l + i:#x} (image {p + i:#x}): '
                                        f'{word_at(got, i)}, want {word_at(bytes(want), i)}')
            covered.append((l, l + n))
    # every byte outside the zero ranges is in a written extent
    need, pos = [], 0
    for a, b in sorted(zeros) + [(size, size)]:
        if pos < a:
            need.append((pos, a))
        pos = max(pos, b)
    covered.sort()
    for a, b in need:
        pos = a
        for c, d in covered:
            if c <= pos < d:
                pos = d
        if pos < b:
            return 'not ok', desc, f'file bytes {pos:#x}.. are in no written extent'
    return 'ok', desc, f'{len(ext)} extents, {sum(b - a for a, b in covered)} bytes compared'


def do_check(run, words):
    """Run one check; return (ktap status, description, note). Whatever
    goes wrong is a failing check, never a dead daemon."""
    try:
        return check_one(run, words)
    except Exception as e:     # noqa: BLE001: any failure is a verdict
        return 'not ok', f'host check {" ".join(words)[:80]}', f'{type(e).__name__}: {e}'


def check_one(run, words):
    if words and words[0] == 'dma-mark':
        t = dma_trace(run)
        with open(os.path.join(run, 'dma.mark'), 'w') as f:
            f.write(f"{len(t)} {os.stat(os.path.join(run, 'nvme-dma.log')).st_ino}")
        return None, None, 'marked'
    if words and words[0] == 'dma-none':
        n = len(DMA_RE.findall(trace_since_mark(run)))
        return ('ok' if n == 0 else 'not ok'), 'QEMU nvme did no data DMA since the mark', f'{n} mappings'
    if words and words[0] == 'io-none':
        n = sum(1 for kind, _, _ in CMD_RE.findall(trace_since_mark(run)) if kind == 'io_cmd')
        return ('ok' if n == 0 else 'not ok'), 'QEMU nvme got no I/O command since the mark', f'{n} commands'
    if words and words[0] == 'setfeat':
        fid, cdw11 = int(words[1], 0), int(words[2], 0)
        seen = [(int(a, 16), int(b, 16)) for a, b in SETFEAT_RE.findall(trace_since_mark(run))]
        desc = f'QEMU nvme got Set Features {fid:#x} with dword 11 {cdw11:#x}'
        note = ', '.join(f'{a:#x}:{b:#x}' for a, b in seen) or 'no Set Features'
        return ('ok' if (fid, cdw11) in seen else 'not ok'), desc, note
    if words and words[0] == 'dma-inflight':
        least, queues = int(words[1]), int(words[2])
        top = inflight_max(trace_since_mark(run))
        busy = sum(1 for n in top.values() if n >= least)
        desc = f'QEMU nvme held >= {least} commands at once on >= {queues} I/O queues'
        note = 'most at once per queue: ' + (', '.join(f'q{q} {n}' for q, n in sorted(top.items())) or 'none')
        return ('ok' if busy >= queues else 'not ok'), desc, note
    if words and words[0] == 'queues-deleted':
        least = int(words[1])
        with open(os.path.join(run, 'dma.mark')) as f:
            mark = int(f.read().split()[0])
        trace_since_mark(run)
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
        if length <= 0:
            raise ValueError(f'length {length}')
        if words[3:] == ['io']:
            maps, kind = [], None
            for k, a, n in DMA_CMD_RE.findall(trace_since_mark(run)):
                if k:
                    kind = k
                elif kind == 'io_cmd':
                    maps.append((int(a, 16), int(n)))
        else:
            maps = [(int(a, 16), int(n)) for a, n in DMA_RE.findall(trace_since_mark(run))]
        outside = [(a, n) for a, n in maps if a < lo or a + n > lo + length]
        desc = f'QEMU nvme DMA addresses all inside [{lo:#x}, +{length:#x})'
        note = f'{len(maps)} mappings' + (f', first outside {outside[0][0]:#x}' if outside else '')
        return ('ok' if maps and not outside else 'not ok'), desc, note
    if words and words[0] == 'dma-notin':
        length, lo = int(words[1], 0), int(words[2], 0)
        if length <= 0:
            raise ValueError(f'length {length}')
        maps = [(int(a, 16), int(n)) for a, n in DMA_RE.findall(trace_since_mark(run))]
        inside = [(a, n) for a, n in maps if a < lo + length and a + n > lo]
        desc = f'QEMU nvme DMA addresses none inside [{lo:#x}, +{length:#x})'
        note = f'{len(maps)} mappings' + (f', {len(inside)} inside, the first {inside[0][0]:#x}'
                                          if inside else '')
        return ('ok' if not inside else 'not ok'), desc, note
    if words and words[0] in ('fsmap', 'fsdata', 'fsck'):
        return fs_check(run, words)
    if words and words[0] == 'nopattern':
        fid = int(words[2], 0)
        with open(path_of(run, words[1]), 'rb') as f:
            data = f.read()
        needle = struct.pack('<HH', fid, PAT_MAGIC)
        hits, pos = [], data.find(needle)
        while pos >= 0:
            if pos % 8 == 4:
                hits.append(pos - 4)
            pos = data.find(needle, pos + 1)
        return ('ok' if not hits else 'not ok', f'host sees no word of file {fid:#x} anywhere in {words[1]}',
                f'{len(data)} bytes' + (f'; {len(hits)} words, the first at {hits[0]:#x}' if hits else ''))
    opts = dict(w.split('=', 1) for w in words if '=' in w and '@' not in w)
    args = [w for w in words if not ('=' in w and '@' not in w)]
    try:
        kind, length = args[0], int(args[1], 0)
        if length <= 0:
            return 'not ok', f'host check {" ".join(words)}', f'length {length}: nothing to check'
        if kind == 'equal':
            a, b = read_at(run, args[2], length), read_at(run, args[3], length)
            desc = f'host sees {args[2]} == {args[3]} ({length} bytes)'
            limit = opts.get('limit', 'none')
            whole = len(a) == length and len(b) == length
            if whole and a == b:
                if limit != 'none':
                    return 'not ok', desc, f'the limitation {limit} is gone: drop limit='
                return 'ok', desc, ''
            diff = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            # the limitation's one signature: the destination never written
            if limit != 'none' and whole and a.count(0) == length:
                return 'ok', f'{desc} # SKIP emulator limitation: {limit}', f'{args[2]} untouched (zero)'
            return 'not ok', desc, f'first difference at +{diff}' + (
                f' ({len(a)}/{len(b)} of {length} bytes read)' if not whole else '') + (
                f', and {args[2]} is not the limitation\'s untouched zeros' if limit != 'none' else '')
        if kind == 'pattern':
            fid, foff = int(args[3], 0), int(args[4], 0)
            got, want = read_at(run, args[2], length), pattern_bytes(fid, foff, length)
            desc = f'host sees file {fid:#x}\'s bytes {foff:#x}..+{length:#x} at {args[2]}'
            if got == want:
                return 'ok', desc, ''
            i = next((k for k in range(min(len(got), length)) if got[k] != want[k]), len(got))
            if i == len(got):
                return 'not ok', desc, f'{len(got)}/{length} bytes read'
            # the word there as the file aligns its words
            j = i - (foff + i) % 8
            return 'not ok', desc, (f'first difference at +{i:#x} (file offset {foff + i:#x}): '
                                    + (word_at(got[j:j + 8], 0) if j >= 0 else f'{got[i]:#04x}'))
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
            got = read_at(run, args[2], length)
            ok = len(got) == len(want) == length and got == want
            return ('ok' if ok else 'not ok', f'host sees {args[2]} unchanged ({length} bytes)',
                    '' if ok else f'{len(got)}/{len(want)} of {length} bytes read')
        if kind == 'absent':
            a = read_at(run, args[2], length)
            with open(path_of(run, args[3]), 'rb') as f:
                pos = f.read().find(a[:4096])
            return ('ok' if pos < 0 else 'not ok', f'host sees {args[2]} nowhere in {args[3]}',
                    '' if pos < 0 else f'found at {pos:#x}')
        return 'not ok', f'unknown host check {" ".join(words)}', ''
    except (OSError, ValueError, IndexError) as e:
        return 'not ok', f'host check {" ".join(words)}', str(e)


WARN_AT_RE = re.compile(r'WARNING: CPU: \d+ PID: \d+ at (\S+) ([A-Za-z0-9_.]+)\+0x')
KNOWN_RE = re.compile(r'P2P-KNOWN-WARNING-(BEGIN|END) (\S+)(?: (\d+) \| (.*?) \| (.*))?$')


def known_warnings(lines):
    """The declared windows: (begin line, end line, function, max, message,
    reason), from the guest's kernel-log markers."""
    wins, open_ = [], {}
    for i, l in enumerate(lines):
        m = KNOWN_RE.search(l)
        if not m:
            continue
        kind, fn = m.group(1), m.group(2)
        if kind == 'BEGIN':
            open_[fn] = (i, fn, int(m.group(3) or 0), (m.group(4) or '').strip(), (m.group(5) or '').strip())
        elif fn in open_:
            b = open_.pop(fn)
            wins.append((b[0], i) + b[1:])
    for b in open_.values():
        wins.append((b[0], len(lines)) + b[1:])
    return wins


def excused_warnings(lines):
    """{line index of an excused WARNING: reason}: a WARNING at a declared
    function, its message on it or on the three lines before, inside the
    declaration's window, no more than its count."""
    out = {}
    for b, e, fn, most, msg, why in known_warnings(lines):
        used = 0
        for i in range(b + 1, e):
            m = WARN_AT_RE.search(lines[i])
            if not m or m.group(2) != fn or i in out:
                continue
            if msg != '-' and not any(msg in l for l in lines[max(0, i - 3):i + 1]):
                continue
            used += 1
            if used > most:
                break
            out[i] = f'{fn}: {why}'
    return out


def splat_results(log, lines):
    """The kernel log checks."""
    results = []
    excused = excused_warnings(lines)
    for pat, what in SPLATS:
        rx = re.compile(pat)
        hits = [i for i, l in enumerate(lines) if rx.search(l)]
        if what == 'WARNING':
            bad = [i for i in hits if i not in excused]
        else:
            bad = hits
        if not hits:
            results.append(('ok', f'kernel log has no {what}'))
        elif not bad:
            why = '; '.join(sorted(set(excused[i] for i in hits)))
            results.append(('ok', f'kernel log has no {what} # SKIP known kernel warning ({len(hits)}): {why}'))
        else:
            results.append(('not ok', f'kernel log has no {what}'))
        for i in bad[:1]:
            ctx = ' | '.join(lines[max(0, i - 3):i + 5])
            print(f'    # {what}: ...{ctx[:900]}...')
    return results


def dma_api_result(run, log, lines):
    """DMA-API debugging reports each error as a WARNING at kernel/dma/debug.c
    (the guest sets all_errors): its own count must equal those printed."""
    m = re.search(r'^P2P-DMA-API-ERRORS (\d+)', log, re.M)
    debug = os.path.basename(os.path.normpath(run)).split('.')[-1].startswith('debug')
    if not m:
        if debug and re.search(r'^P2P-EXIT', log, re.M):
            return [('not ok', 'DMA-API debugging counted its errors (no P2P-DMA-API-ERRORS on a debug kernel)')]
        return []
    want = int(m.group(1))
    got = sum(1 for l in lines if 'WARNING: CPU:' in l and 'kernel/dma/debug.c' in l)
    return [('ok' if got == want else 'not ok',
             f'DMA-API debugging printed every error it counted ({want} counted, {got} printed)')]


def manifest_results(run, log):
    """Every suite declared printed its results; none printed undeclared."""
    declared = []
    for m in re.finditer(r'^P2P-EXPECT (.*)$', log, re.M):
        declared += m.group(1).split()
    kdir = os.path.join(run, 'ktap')
    printed = sorted(n[:-5] for n in os.listdir(kdir) if n.endswith('.ktap') and n != 'host.ktap') \
        if os.path.isdir(kdir) else []
    if not declared and not printed:
        return []
    missing = [n for n in dict.fromkeys(declared) if n not in printed]
    extra = [n for n in printed if n.split('#')[0] not in declared]
    res = [('ok' if not missing else 'not ok',
            f'every suite the guest declared printed its results ({len(set(declared))} declared)')]
    if missing:
        print(f'    # declared, never printed: {" ".join(missing)}')
    res.append(('ok' if not extra else 'not ok', 'every suite printed was declared'))
    if extra:
        print(f'    # printed, never declared: {" ".join(extra)}')
    return res


def hostcheck_count_result(run, log):
    """The host checks the guest sent all reached hostd."""
    m = re.search(r'^P2P-HOSTCHECKS (\d+)', log, re.M)
    if not m:
        if re.search(r'^P2P-EXIT', log, re.M):
            return [('not ok', 'the guest counted its host checks (no P2P-HOSTCHECKS)')]
        return []
    want = int(m.group(1))
    got = 0
    try:
        with open(os.path.join(run, 'hostd.log'), errors='replace') as f:
            got = sum(1 for l in f if l.startswith('check '))
    except OSError:
        pass
    return [('ok' if got == want else 'not ok',
             f'every host check the guest sent reached the host ({want} sent, {got} received)')]


def insn_results(run):
    """The insn test's regression check (scripts/insnlog.py), on a run of
    that test (its name PROFILE.TEST.FLAVOUR, TEST A+B+... with insn)."""
    name = os.path.basename(os.path.normpath(run))
    parts = name.split('.', 2)
    if len(parts) < 3 or 'insn' not in parts[1].split('+'):
        return []
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.dont_write_bytecode = True      # no compiled Python in the tree (lintian)
    sys.path.insert(0, os.path.join(top, 'scripts'))
    import insnlog
    baseline = os.environ.get('P2P_INSN_BASELINE') or os.path.join(top, 'qemu', 'insn-baseline')
    try:
        cases = insnlog.regression(run, name, baseline)
    except Exception as e:      # judged failed, with the reason, not a crash of the judge
        cases = [(False, f'insn: the CPU-per-I/O regression check could not read the run: {e!r}')]
    # (a '#' in a description would be a KTAP directive)
    return [('ok' if good else 'not ok', desc.replace('#', ' ')) for good, desc in cases]


def main():
    run = sys.argv[1]
    with open(os.path.join(run, 'serial.log'), 'rb') as f:
        log = f.read().decode('utf-8', 'replace').replace('\r', '')
    lines = log.split('\n')
    results = []
    m = re.search(r'^P2P-EXIT (\d+)', log, re.M)
    # a timeout or QEMU's death fails the run even after the guest's exit
    why = re.search(r'^P2P-(TIMEOUT|QEMU-DIED) (.*)$', log, re.M)
    if why:
        why = {'TIMEOUT': 'timeout', 'QEMU-DIED': 'QEMU died'}[why.group(1)] + ' ' + why.group(2)
    results.append(('ok' if m and m.group(1) == '0' and not why else 'not ok',
                    'guest test script completed' +
                    (f' (exit {m.group(1)})' if m else ' (no P2P-EXIT)') +
                    (f' ({why})' if why else (' (guest crash or timeout)' if not m else ''))))
    results += splat_results(log, lines)
    results += dma_api_result(run, log, lines)
    results += manifest_results(run, log)
    results += hostcheck_count_result(run, log)
    results += insn_results(run)
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
