#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
The layering of drivers/p2pnvme: a file calls only into its own layer and
those below it, and the files of one layer call each other without a
circle. Prints every call that goes up or closes a circle, and the
function it calls; exit status 1 if there is one.

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
    ['uring.c', 'blkmq.c'],		# io_uring passthrough; its blk-mq prototype
    ['io.c'],				# requests
    ['reg.c', 'dmabuf.c'],		# registered buffers, dma-buf import
    ['ctrl.c'],				# state, I/O guard, reset, recovery
    ['admin.c'],			# registers, bring-up, admin commands
    ['queue.c'],			# queue pairs, slots, completion, timeouts
    ['dptr.c'],				# PRPs, SGLs
]


def strip(src):
    src = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), src, flags=re.S)
    src = re.sub(r'//[^\n]*', '', src)
    return re.sub(r'"(\\.|[^"\\])*"', '""', src)


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', 'drivers', 'p2pnvme')
    layer = {f: i for i, fs in enumerate(LAYERS) for f in fs}
    files = sorted(f for f in os.listdir(top) if f.endswith('.c'))
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
    if bad:
        return 1
    print(f'{len(files)} files, {sum(len(c) for c in edges.values())} calls between them, all going down')
    return 0


if __name__ == '__main__':
    sys.exit(main())
