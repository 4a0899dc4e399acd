#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where a row's guest instructions go, per function: the insn plugin's
profile mode (qemu/plugins/insn.c, prof=on) named with the booted
kernel's symbols, per I/O, and p2pnvme's rows beside nvme-pci's.

    scripts/insn-prof.py [options] DIR...

DIR: one boot (serial.log, insn.log, insn-prof.N, System.map: what
qemu/run.sh leaves with P2P_INSN_PROF=1, or a boot kept by
scripts/cpu-insn.sh --profile), or a directory of such boots (run*/),
pooled: each row's instructions and I/Os summed over the boots.

    --top N            N functions a table (default 20)
    --only TEXT        the comparisons whose label has TEXT (cpu-insn.py's
                       labels, e.g. 'registered dma-buf')
    --pair A B         rows A and B side by side instead of cpu-insn.py's
                       comparisons; a row as BENCH:SIZE:QD:PATH
                       (engine-uring-reg:4096:32:dmabuf) or fio:ROW:p2pnvme
                       or fio:ROW:nvme-pci
    --window N [--window M]
                       one window's profile, or two side by side, of the
                       first DIR: per I/O where the window is a row's run,
                       else its instructions
    --map FILE         the booted kernel's System.map (default DIR/System.map)

For each comparison of scripts/cpu-insn.py whose rows the boots measured
(p2pnvme's row against nvme-pci's, the cheaper of two where there are
two, as cpu-insn.py picks it): each row's instructions per I/O, how much
of the windows' counts the profile holds (its coverage), then by module
and by function where the two differ most, then each row's own top.

Names: a block is its start address's function, all its instructions
with it. Kernel text from System.map, moved by the difference between the
guest's _text and the map's (KASLR; the bench's kernels are not
relocatable); modules from the guest's /proc/kallsyms and /proc/modules,
which the guest prints (P2P-KSYMS blocks, qemu/guest/lib.sh insn_syms)
before a window whenever the modules moved; user space is "[user]" (every
process's code at one address shares a block, and nothing here knows
which binary it was). Kernel code outside vmlinux's text and the modules
is named by kallsyms' entries of no module ([bpf], [__builtin__ftrace])
within 4 KiB of one, else "[kernel ?]".
"""
import argparse
import bisect
import glob
import importlib.util
import os
import re
import sys

sys.dont_write_bytecode = True  # no compiled Python in the tree (lintian)
from insnlog import Bad, load_marks, marked, window  # noqa: E402

KERNEL_HALF = 0xffff800000000000
PSEUDO_SPAN = 4096  # how far past a [bpf] or [__builtin__ftrace] symbol its code is taken to go
TEXT_TYPES = set('tTwW')
HEADER = re.compile(r'^insn-prof format 1 window (\d+)( open)? vcpus (\d+) dropped (\d+)$')
BLOCK = re.compile(r'^([0-9a-f]+) (\d+) (\d+) (\d+)$')
END = re.compile(r'^end blocks (\d+) insns (\d+)$')
KSYM = re.compile(r'^S ([0-9a-f]+) ([a-zA-Z]) (\S+)(?:\s+\[(\S+)\])?$')
KMOD = re.compile(r'^M (\S+) (\d+) \S+ \S+ \S+ (0x[0-9a-f]+)')


def cpu_insn():
    """scripts/cpu-insn.py as a module: its comparisons()."""
    spec = importlib.util.spec_from_file_location(
        'cpu_insn', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cpu-insn.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def prefer(a, b):
    """Of two names at one address, the one to show: not a __pfx_
    padding, then the fewer leading underscores, then the first."""
    def rank(n):
        return (n.startswith('__pfx_'), len(n) - len(n.lstrip('_')), n)
    return min(a, b, key=rank)


class Table:
    """Sorted function starts, each with its name and module."""

    def __init__(self, syms):
        best = {}
        for addr, name, mod in syms:
            if addr in best:
                best[addr] = (prefer(best[addr][0], name), mod)
            else:
                best[addr] = (name, mod)
        self.addrs = sorted(best)
        self.names = [best[a] for a in self.addrs]

    def find(self, pc):
        i = bisect.bisect_right(self.addrs, pc) - 1
        if i < 0:
            return None
        name, mod = self.names[i]
        # a block in a function's padding belongs to the function
        return (name[len('__pfx_'):] if name.startswith('__pfx_') else name), mod


def system_map(path):
    """(Table of vmlinux's text, _text, _stext, _etext) from a System.map."""
    syms, marks = [], {}
    try:
        f = open(path, errors='replace')
    except OSError as e:
        raise Bad(f'no System.map of the booted kernel ({e}): --map FILE, or a boot '
                  'with P2P_INSN_PROF=1 (qemu/run.sh copies it)') from e
    with f:
        for line in f:
            w = line.split()
            if len(w) != 3:
                continue
            try:
                addr = int(w[0], 16)
            except ValueError:
                continue
            if w[2] in ('_text', '_stext', '_etext'):
                marks[w[2]] = addr
            if w[1] in TEXT_TYPES:
                syms.append((addr, w[2], 'vmlinux'))
    if not all(k in marks for k in ('_text', '_stext', '_etext')):
        raise Bad(f'{path}: no _text, _stext and _etext: not a kernel\'s System.map')
    return Table(syms), marks['_text'], marks['_stext'], marks['_etext']


class Ksyms:
    """One P2P-KSYMS block of the guest: the modules' extents and text
    symbols, and the running kernel's _text."""

    def __init__(self):
        self.mods = []      # (base, end, name)
        self.syms = []
        self.text = None
        self.table = None

    def add(self, line):
        m = KMOD.match(line)
        if m:
            base = int(m[3], 16)
            self.mods.append((base, base + int(m[2]), m[1]))
            return
        m = KSYM.match(line)
        if not m or m[2] not in TEXT_TYPES:
            return
        if m[4]:
            self.syms.append((int(m[1], 16), m[3], m[4]))
        elif m[3] == '_text':
            self.text = int(m[1], 16)

    def done(self):
        self.table = Table(self.syms)
        self.mods.sort()
        self.modnames = {m for _, _, m in self.mods}


def ksyms_blocks(serial):
    """{window: Ksyms}: the blocks the guest printed, each before the
    window its number names, valid from that window on."""
    out, cur = {}, None
    with open(serial, errors='replace') as f:
        for line in f:
            line = line.strip()
            if line.startswith('P2P-KSYMS-BEGIN '):
                cur = Ksyms()
                try:
                    out[int(line.split()[1])] = cur
                except (IndexError, ValueError):
                    cur = None
            elif line == 'P2P-KSYMS-END':
                if cur:
                    cur.done()
                cur = None
            elif cur is not None:
                cur.add(line)
    return {n: k for n, k in out.items() if k.table is not None}


class Namer:
    """A boot's names: block start -> (function, module)."""

    def __init__(self, d, map_path):
        serial = os.path.join(d, 'serial.log')
        self.vmlinux, self.map_text, self.stext, self.etext = system_map(
            map_path or os.path.join(d, 'System.map'))
        self.blocks = ksyms_blocks(serial)
        self.keys = sorted(self.blocks)
        self.notes = []
        if not self.blocks:
            self.notes.append('no module symbols in the serial log (the guest prints them with '
                              'p2pinsnprof=1): module code is "[kernel ?]"')
        texts = {k.text for k in self.blocks.values() if k.text is not None}
        if len(texts) > 1:
            raise Bad(f'{serial}: the kernel\'s _text moved during the boot')
        self.offset = texts.pop() - self.map_text if texts else 0
        if self.offset:
            self.notes.append(f'the guest\'s kernel runs {self.offset:+#x} from its System.map (KASLR)')
        self.cache = {}

    def ksyms(self, win):
        i = bisect.bisect_right(self.keys, win) - 1
        return self.blocks[self.keys[i]] if i >= 0 else None

    def name(self, pc, win):
        ks = self.ksyms(win)
        key = (pc, id(ks))
        if key in self.cache:
            return self.cache[key]
        self.cache[key] = r = self._name(pc, ks)
        return r

    def _name(self, pc, ks):
        if pc < KERNEL_HALF:
            return '[user]', 'user'
        if ks:
            i = bisect.bisect_right(ks.mods, (pc, float('inf'), '')) - 1
            if i >= 0 and ks.mods[i][0] <= pc < ks.mods[i][1]:
                mod = ks.mods[i][2]
                f = ks.table.find(pc)
                if f and f[1] == mod:
                    return f
                return f'[{mod} ?]', mod
        k = pc - self.offset
        if self.stext <= k < self.etext:
            return self.vmlinux.find(k)
        if ks:
            # kallsyms' own entries of no module: [bpf], [__builtin__ftrace]
            i = bisect.bisect_right(ks.table.addrs, pc) - 1
            if i >= 0 and pc - ks.table.addrs[i] < PSEUDO_SPAN and \
                    ks.table.names[i][1] not in ks.modnames:
                return ks.table.names[i]
        return '[kernel ?]', '?'


def read_prof(path):
    """(header, [(pc, insns per exec, execs)], total): Bad if it is not
    whole."""
    try:
        f = open(path, errors='replace')
    except OSError as e:
        raise Bad(f'no profile {os.path.basename(path)} ({e}): was the plugin in profile mode '
                  '(prof=on: P2P_INSN_PROF=1 of qemu/run.sh, scripts/cpu-insn.sh --profile)?') from e
    with f:
        rows = f.read().splitlines()
    h = HEADER.match(rows[0]) if rows else None
    e = END.match(rows[-1]) if rows else None
    if not h or not e:
        raise Bad(f'{path}: not a whole profile (its first and last lines)')
    blocks = []
    for line in rows[1:-1]:
        m = BLOCK.match(line)
        if not m:
            raise Bad(f'{path}: a line that is no block: {line!r}')
        blocks.append((int(m[1], 16), int(m[2]), int(m[4])))
    total = sum(n * x for _, n, x in blocks)
    if len(blocks) != int(e[1]) or total != int(e[2]):
        raise Bad(f'{path}: its blocks do not add up to its end line')
    return {'window': int(h[1]), 'open': bool(h[2]), 'dropped': int(h[4])}, blocks, total


class Boot:
    def __init__(self, d, map_path):
        self.d = d
        self.marks = load_marks(os.path.join(d, 'insn.log'))
        self.serial = os.path.join(d, 'serial.log')
        self.namer = Namer(d, map_path)
        self.runs = marked(self.serial, d)
        self.windows = {}

    def window(self, n):
        """{(function, module): instructions}, the profile's total and
        the plugin's count of window n (None: open at exit)."""
        if n not in self.windows:
            self.windows[n] = self._window(n)
        return self.windows[n]

    def _window(self, n):
        h, blocks, total = read_prof(os.path.join(self.d, f'insn-prof.{n}'))
        if h['dropped']:
            raise Bad(f'{self.d}: window {n}: {h["dropped"]} blocks left out of the profile '
                      '(the plugin\'s table was full)')
        funcs = {}
        for pc, n_insns, execs in blocks:
            f = self.namer.name(pc, n)
            funcs[f] = funcs.get(f, 0) + n_insns * execs
        try:
            k, u = window(self.marks, n, f'window {n}')
        except Bad:
            if not h['open']:
                raise
            return funcs, total, None   # open at exit: no count to hold it to
        return funcs, total, k + u

    def row(self, key):
        """A row over its windows: functions, I/Os, profiled and counted
        instructions; None where the boot did not measure it."""
        funcs, ios, prof, counted, n = {}, 0, 0, 0, 0
        for k, win, io, _ in self.runs:
            if k != key:
                continue
            f, p, c = self.window(win)
            if c is None:
                raise Bad(f'{self.d}: window {win} ({key_text(key)}) never closed')
            for name, v in f.items():
                funcs[name] = funcs.get(name, 0) + v
            ios += io
            prof += p
            counted += c
            n += 1
        if not n:
            return None
        if not ios:
            raise Bad(f'{self.d}: row {key_text(key)}: no I/O')
        return {'funcs': funcs, 'ios': ios, 'prof': prof, 'counted': counted, 'windows': n}


def pool(rows):
    out = {'funcs': {}, 'ios': 0, 'prof': 0, 'counted': 0, 'windows': 0}
    for r in rows:
        for name, v in r['funcs'].items():
            out['funcs'][name] = out['funcs'].get(name, 0) + v
        for k in ('ios', 'prof', 'counted', 'windows'):
            out[k] += r[k]
    return out


def key_text(key):
    if key[0] == 'B':
        return ':'.join(map(str, key[1:]))
    return f'fio:{key[1]}:{"p2pnvme" if key[2] else "nvme-pci"}'


def parse_key(s):
    w = s.split(':')
    if w[0] == 'fio' and len(w) == 3 and w[2] in ('p2pnvme', 'nvme-pci'):
        return ('F', w[1], w[2] == 'p2pnvme')
    if len(w) == 4 and w[1].isdigit() and w[2].isdigit():
        return ('B', w[0], int(w[1]), int(w[2]), w[3])
    raise SystemExit(f'insn-prof: a row is BENCH:SIZE:QD:PATH or fio:ROW:p2pnvme|nvme-pci, not {s!r}')


def num(x, per='/IO'):
    """Per I/O: a decimal below 100; a window's instructions: whole."""
    return f'{x:,.1f}' if per and abs(x) < 100 else f'{x:,.0f}'


def diff(x, per):
    return f'{x:+,.1f}' if per and abs(x) < 100 else f'{x:+,.0f}'


def fname(f):
    return f[0]


def coverage(r):
    return f'{r["prof"] / r["counted"]:.2%}' if r['counted'] else '-'


def top_table(r, top, per):
    """A row's (or a window's) own top functions."""
    total = sum(r['funcs'].values())
    out = [f'| function | module | insns{per} | share |', '|---|---|---|---|']
    items = sorted(r['funcs'].items(), key=lambda kv: (-kv[1], kv[0]))
    div = r['ios'] or 1
    for f, v in items[:top]:
        out.append(f'| {fname(f)} | {f[1]} | {num(v / div, per)} | {v / total:.1%} |')
    rest = items[top:]
    if rest:
        v = sum(x for _, x in rest)
        out.append(f'| ({len(rest)} more) | | {num(v / div, per)} | {v / total:.1%} |')
    return out


def side_tables(a, b, top, per, na, nb):
    """Two rows side by side: by module, then the functions that differ most."""
    da, db = a['ios'] or 1, b['ios'] or 1
    out = [f'By module (insns{per}):', '',
           f'| module | {na} | {nb} | difference |', '|---|---|---|---|']
    mods = {}
    for side, r, d in ((0, a, da), (1, b, db)):
        for f, v in r['funcs'].items():
            mods.setdefault(f[1], [0, 0])[side] += v / d
    for m, (x, y) in sorted(mods.items(), key=lambda kv: -abs(kv[1][0] - kv[1][1])):
        out.append(f'| {m} | {num(x, per)} | {num(y, per)} | {diff(x - y, per)} |')
    ta, tb = sum(a['funcs'].values()) / da, sum(b['funcs'].values()) / db
    out.append(f'| all | {num(ta, per)} | {num(tb, per)} | {diff(ta - tb, per)} |')
    funcs = {}
    for side, r, d in ((0, a, da), (1, b, db)):
        for f, v in r['funcs'].items():
            funcs.setdefault(f, [0, 0])[side] += v / d
    items = sorted(funcs.items(), key=lambda kv: (-abs(kv[1][0] - kv[1][1]), kv[0]))
    out += ['', f'Functions where they differ most (insns{per}; {na} minus {nb}):', '',
            f'| function | module | {na} | {nb} | difference |', '|---|---|---|---|---|']
    for f, (x, y) in items[:top]:
        out.append(f'| {fname(f)} | {f[1]} | {num(x, per)} | {num(y, per)} | {diff(x - y, per)} |')
    rest = items[top:]
    if rest:
        x = sum(v[0] for _, v in rest)
        y = sum(v[1] for _, v in rest)
        out.append(f'| ({len(rest)} more) | | {num(x, per)} | {num(y, per)} | {diff(x - y, per)} |')
    return out


COVER = 0.01    # a profile further than this from the plugin's count is said to be


def row_line(name, key, r):
    out = (f'- {name}: {key_text(key)}, {num(sum(r["funcs"].values()) / r["ios"])} insns per I/O '
           f'profiled over {r["windows"]} window(s), {r["ios"]:,} I/Os; the plugin counted '
           f'{num(r["counted"] / r["ios"])}, the profile holds {coverage(r)} of it')
    if r['counted'] and abs(r['prof'] / r['counted'] - 1) > COVER:
        out += (f' (**more than {COVER:.0%} off**: blocks counted outside the profile, or a '
                'profile of another boot)')
    return out


def compare(boots, label, ours, theirs, top):
    """One comparison: ours against the cheapest of theirs (per boot, as
    cpu-insn.py picks it; pooled over the boots)."""
    a, b, names = [], [], set()
    for bt in boots:
        o = bt.row(ours)
        ts = [(t, bt.row(t)) for t in theirs]
        ts = [(t, r) for t, r in ts if r]
        if not o or not ts:
            return []
        t, r = min(ts, key=lambda tr: tr[1]['counted'] / tr[1]['ios'])
        a.append(o)
        b.append(r)
        names.add(t)
    a, b = pool(a), pool(b)
    tk = names.pop() if len(names) == 1 else None
    out = [f'### {label}', '', row_line('p2pnvme', ours, a)]
    out.append(row_line('nvme-pci', tk, b) if tk else
               f'- nvme-pci: the cheaper of {", ".join(key_text(t) for t in theirs)} in each boot')
    pa, pb = sum(a['funcs'].values()) / a['ios'], sum(b['funcs'].values()) / b['ios']
    out.append(f'- ratio of the profiles: {pa / pb:.3f} (of the plugin\'s counts: '
               f'{a["counted"] / a["ios"] / (b["counted"] / b["ios"]):.3f})')
    out += [''] + side_tables(a, b, top, '/IO', 'p2pnvme', 'nvme-pci')
    out += ['', 'p2pnvme\'s own top (insns/IO):', ''] + top_table(a, top, '/IO')
    out += ['', 'nvme-pci\'s own top (insns/IO):', ''] + top_table(b, top, '/IO') + ['']
    return out


def window_item(bt, n):
    funcs, prof, counted = bt.window(n)
    runs = [(k, io) for k, win, io, _ in bt.runs if win == n]
    what = f'window {n}' + (f' ({key_text(runs[0][0])}, {runs[0][1]:,} I/Os)' if runs else '')
    return {'funcs': funcs, 'ios': runs[0][1] if runs else 0, 'prof': prof, 'counted': counted,
            'windows': 1}, what


def boots_of(dirs, map_path):
    out = []
    for d in dirs:
        runs = sorted((x for x in glob.glob(os.path.join(d, 'run*'))
                       if re.fullmatch(r'run\d+', os.path.basename(x))),
                      key=lambda x: int(os.path.basename(x)[3:]))
        for b in (runs or [d]):
            out.append(Boot(b, map_path))
    return out


def main():
    ap = argparse.ArgumentParser(usage='%(prog)s [options] DIR...', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 add_help=False)
    ap.add_argument('-h', '--help', action='help', help=argparse.SUPPRESS)
    ap.add_argument('dirs', nargs='+', metavar='DIR', help=argparse.SUPPRESS)
    ap.add_argument('--top', type=int, default=20, help=argparse.SUPPRESS)
    ap.add_argument('--only', help=argparse.SUPPRESS)
    ap.add_argument('--pair', nargs=2, metavar=('A', 'B'), help=argparse.SUPPRESS)
    ap.add_argument('--window', type=int, action='append', help=argparse.SUPPRESS)
    ap.add_argument('--map', help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.top < 1:
        raise SystemExit('insn-prof: --top wants 1 or more')
    boots = boots_of(a.dirs, a.map)
    out = []
    for bt in boots:
        for n in bt.namer.notes:
            out.append(f'Note ({bt.d}): {n}.')
    if out:
        out.append('')
    if a.window:
        if len(a.window) > 2:
            raise SystemExit('insn-prof: one --window, or two side by side')
        items = [window_item(boots[0], n) for n in a.window]
        per = '/IO' if all(r['ios'] for r, _ in items) else ''
        if not per:
            for r, _ in items:
                r['ios'] = 0
        for r, what in items:
            held = (f'the profile holds {coverage(r)} of the plugin\'s count' if r['counted'] is not None
                    else 'open at exit (the plugin wrote it then), no count to hold it to')
            out.append(f'- {what}: {num(sum(r["funcs"].values()) / (r["ios"] or 1), per)} insns{per}, {held}')
        out.append('')
        if len(items) == 2:
            out += side_tables(items[0][0], items[1][0], a.top, per,
                               f'window {a.window[0]}', f'window {a.window[1]}') + ['']
        for r, what in items:
            out += [f'{what}, its own top (insns{per}):', ''] + top_table(r, a.top, per) + ['']
    elif a.pair:
        ka, kb = parse_key(a.pair[0]), parse_key(a.pair[1])
        got = compare(boots, f'{key_text(ka)} vs {key_text(kb)}', ka, [kb], a.top)
        if not got:
            raise Bad(f'the boots did not measure both {key_text(ka)} and {key_text(kb)}')
        out += got
    else:
        keys = set.intersection(*({k for k, _, _, _ in bt.runs} for bt in boots))
        n = 0
        for label, ours, theirs, _ in cpu_insn().comparisons(keys):
            if a.only and a.only not in label:
                continue
            got = compare(boots, label, ours, theirs, a.top)
            out += got
            n += bool(got)
        if not n:
            raise Bad('no comparison of p2pnvme\'s row and nvme-pci\'s in these boots'
                      + (f' whose label has {a.only!r}' if a.only else ''))
    print('\n'.join(out).rstrip())


if __name__ == '__main__':
    try:
        main()
    except Bad as e:
        sys.exit(f'insn-prof: {e}')
