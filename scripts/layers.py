#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
The layering of drivers/p2pnvme: a file calls only into its own layer and
those below it, and the files of one layer call each other without a
circle. Each layer declares its functions in its own header, and a file
includes only the headers of its own layer and those below (internal.h,
the types every layer shares, p2pnvme.h and trace.h are for all). Prints
every call or include that goes up, every circle, and every function
declared in another layer's header; exit status 1 if there is one.

    scripts/layers.py [DIR]      (default: drivers/p2pnvme)

Calls are found by name: a non-static p2pnvme_* function defined in one
file and called in another. A call through a pointer (c->escalate, the
kref release) is not a call here, by design: that is how a lower layer
hands something back up.
"""
import os
import re
import sys

# top down; a file not listed is an error (say where a new file belongs)
LAYERS = [
    ['pci.c', 'cdev.c', 'sysfs.c'],	# the PCI driver, the char device, sysfs
    ['uring.c', 'disk.c'],		# io_uring passthrough; the disk
    ['io.c', 'file.c'],			# requests; the file command
    ['reg.c', 'dmabuf.c', 'shadow.c'],	# registered buffers, dma-buf import, placeholders
    ['ctrl.c'],				# state, I/O guard, reset, recovery
    ['admin.c'],			# registers, bring-up, admin commands
    ['queue.c'],			# queue pairs, slots, completion, timeouts
    ['dptr.c'],				# PRPs, SGLs
]
# each layer's header, in the order of LAYERS; a layer with two (uring.h,
# disk.h; io.h, file.h; reg.h, shadow.h) lists both
HEADERS = ['driver.h', ['uring.h', 'disk.h'], ['io.h', 'file.h'], ['reg.h', 'shadow.h'], 'ctrl.h',
           'admin.h', 'queue.h', 'dptr.h']
SHARED = ['internal.h', 'p2pnvme.h', 'trace.h']


def strip(src):
    src = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), src, flags=re.S)
    src = re.sub(r'//[^\n]*', '', src)
    return re.sub(r'"(\\.|[^"\\])*"', '""', src)


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', 'drivers', 'p2pnvme')
    layer = {f: i for i, fs in enumerate(LAYERS) for f in fs}
    # not kbuild's own output of an in-tree build (p2pnvme.mod.c)
    files = sorted(f for f in os.listdir(top) if f.endswith('.c') and not f.endswith('.mod.c'))
    bad = [f for f in files if f not in layer]
    for f in bad:
        print(f'{f}: not in any layer of scripts/layers.py: say where it belongs')
    src = {f: strip(open(os.path.join(top, f)).read()) for f in files}
    defs = {}
    for f, s in src.items():
        for m in re.finditer(r'^(?!static\b)[a-z_][\w \t*]*?\b(p2pnvme_\w+)\s*\(', s, re.M):
            defs[m.group(1)] = f
    edges = {}
    for f, s in src.items():
        for m in re.finditer(r'\b(p2pnvme_\w+)\s*\(', s):
            g = defs.get(m.group(1))
            if g and g != f:
                line = s.count('\n', 0, m.start()) + 1
                edges.setdefault((f, g), []).append((m.group(1), line))
    for (f, g), calls in sorted(edges.items()):
        if f in layer and g in layer and layer[g] < layer[f]:
            for name, line in calls:
                print(f'{f}:{line}: calls {name}() of {g}, a layer above')
            bad.append(f)
    # circles among the files of one layer
    for fs in LAYERS:
        graph = {f: {g for (a, g) in edges if a == f and g in fs} for f in fs}
        state = {}

        def visit(f, path):
            state[f] = 1
            for g in sorted(graph[f]):
                if state.get(g) == 1:
                    print('circle: ' + ' -> '.join(path[path.index(g):] + [g]))
                    bad.append(g)
                elif not state.get(g):
                    visit(g, path + [g])
            state[f] = 2
        for f in fs:
            if not state.get(f):
                visit(f, [f])
    # headers: who includes what, and who declares what
    hlayer = {h: i for i, hs in enumerate(HEADERS) for h in ([hs] if isinstance(hs, str) else hs)}
    headers = sorted(hlayer, key=lambda h: (hlayer[h], h))
    for h in sorted(f for f in os.listdir(top) if f.endswith('.h')):
        if h not in hlayer and h not in SHARED:
            print(f'{h}: not a layer header nor shared in scripts/layers.py: say which it is')
            bad.append(h)
    for f in files + [h for h in headers if os.path.exists(os.path.join(top, h))]:
        raw = open(os.path.join(top, f)).read()
        mine = layer.get(f, hlayer.get(f))
        for m in re.finditer(r'^#include "([^"]+)"', raw, re.M):
            h = m.group(1)
            if h in hlayer and mine is not None and hlayer[h] < mine:
                line = raw.count('\n', 0, m.start()) + 1
                print(f'{f}:{line}: includes {h}, the header of a layer above')
                bad.append(f)
    for h in headers:
        path = os.path.join(top, h)
        if not os.path.exists(path):
            continue
        for m in re.finditer(r'^[a-z_][\w \t*]*?\b(p2pnvme_\w+)\s*\(', strip(open(path).read()), re.M):
            g = defs.get(m.group(1))
            if m.group(0).startswith('static') or g is None:
                continue
            if layer[g] != hlayer[h]:
                print(f'{h}: declares {m.group(1)}() of {g}, which belongs in {HEADERS[layer[g]]}')
                bad.append(h)
    for f in ['internal.h']:
        for m in re.finditer(r'^[a-z_][\w \t*]*?\b(p2pnvme_\w+)\s*\(', strip(open(os.path.join(top, f)).read()), re.M):
            g = defs.get(m.group(1))
            if g and not m.group(0).startswith('static') and g != 'pci.c':
                print(f'{f}: declares {m.group(1)}() of {g}, which belongs in {HEADERS[layer[g]]}')
                bad.append(f)
    if bad:
        return 1
    print(f'{len(files)} files, {sum(len(c) for c in edges.values())} calls between them, all going down;'
          f' {len(headers)} layer headers, every include going down')
    return 0


if __name__ == '__main__':
    sys.exit(main())
