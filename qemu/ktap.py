#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""KTAP plumbing of the bench. Parsing is left to the kernel's own
tools/testing/kunit/kunit.py; this only cuts and joins documents.

  ktap.py extract RUN_DIR             serial.log blocks -> RUN_DIR/ktap/*.ktap
  ktap.py merge OUT.ktap RUN_DIR...   one document, suites prefixed with the run
  ktap.py run OUT.ktap COMMAND...     a host-side test program's document -> OUT.ktap
                                      (beside the build suite's own): exit 0 if it is
                                      whole, whatever its cases say
  ktap.py count KUNIT_PY OUT.ktap [--json FILE]
                                      parse with kunit.py, print the summary line
"""
import json
import os
import re
import subprocess
import sys


def extract(run):
    with open(os.path.join(run, 'serial.log'), 'rb') as f:
        log = f.read().decode('utf-8', 'replace').replace('\r', '')
    os.makedirs(os.path.join(run, 'ktap'), exist_ok=True)
    for m in re.finditer(r'<<<KTAP-BEGIN (\S+)>>>\n(.*?)<<<KTAP-END>>>', log, re.S):
        with open(os.path.join(run, 'ktap', m.group(1) + '.ktap'), 'w') as f:
            f.write(m.group(2))


def suites_of(doc):
    """Strip a document's header and plan; return its top-level suites as
    (name, lines) where lines are the indented body and the final result."""
    lines = [l for l in doc.splitlines() if l.strip()]
    out, body = [], []
    for l in lines:
        if l.startswith('KTAP version') or re.match(r'^1\.\.\d+', l):
            continue
        m = re.match(r'^(ok|not ok) \d+ (\S+)(.*)$', l)
        if m:
            out.append((m.group(2), body, m.group(1), m.group(3)))
            body = []
        else:
            body.append(l)
    if body:   # a document cut short (crash): report it as a failed suite
        out.append(('truncated', body, 'not ok', ''))
    return out


def merge(out_path, runs):
    all_suites = []
    for run in runs:
        tag = os.path.basename(os.path.normpath(run))
        kdir = os.path.join(run, 'ktap')
        names = sorted(os.listdir(kdir)) if os.path.isdir(kdir) else []
        if not names:
            all_suites.append((f'{tag}.no-results',
                               ['    KTAP version 1', f'    # Subtest: {tag}.no-results', '    1..1',
                                '    not ok 1 the run left no KTAP (see its serial.log)'], 'not ok', ''))
        for n in names:
            with open(os.path.join(kdir, n)) as f:
                for name, body, st, rest in suites_of(f.read()):
                    body = [re.sub(r'^(\s*# Subtest: )(\S+)$', lambda m: m.group(1) + f'{tag}.{m.group(2)}', l, count=1)
                            if l.startswith('    # Subtest:') else l for l in body]
                    all_suites.append((f'{tag}.{name}', body, st, rest))
    with open(out_path, 'w') as f:
        f.write('KTAP version 1\n')
        f.write(f'1..{len(all_suites)}\n')
        for i, (name, body, st, rest) in enumerate(all_suites, 1):
            f.write('\n'.join(body) + '\n')
            f.write(f'{st} {i} {name}{rest}\n')


def run(out_path, cmd):
    """Run a test program of the build suite (on tools/lib/harness.h) and
    keep its KTAP document where merge finds it, so that its cases are
    counted one by one, as a guest's are. Its cases' failures are counted
    there: this fails only for a document that is not whole (no program,
    a crash), which would otherwise count nothing."""
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, errors='replace')
        out, why = r.stdout, f'exit status {r.returncode}'
    except OSError as e:
        out, why = '', str(e)
    with open(out_path, 'w') as f:
        f.write(out)
    lines = [l for l in out.splitlines() if l.strip()]
    if not lines or not re.match(r'^(ok|not ok) 1 \S+', lines[-1]):
        print(f'{cmd[0]}: no whole KTAP document ({why})')
        return 1
    return 0


def walk(group, counts, failed, path=''):
    for t in group.get('test_cases', []):
        counts[t['status']] = counts.get(t['status'], 0) + 1
        if t['status'] not in ('PASS', 'SKIP'):
            failed.append(f"{path}{group['name']}: {t['name']}")
    for g in group.get('sub_groups', []):
        walk(g, counts, failed, path)


def count(kunit_py, ktap, json_out=None):
    json_out = json_out or ktap + '.json'
    r = subprocess.run([sys.executable, kunit_py, 'parse', f'--json={json_out}', ktap],
                       capture_output=True, text=True)
    try:
        with open(json_out) as f:
            data = json.load(f)
    except (OSError, ValueError):
        print(r.stdout + r.stderr)
        print('0 passed, 1 failed')
        return 1
    counts, failed = {}, []
    walk(data, counts, failed)
    for f_ in failed:
        print(f'FAILED: {f_}')
    passed = counts.get('PASS', 0)
    bad = sum(v for k, v in counts.items() if k not in ('PASS', 'SKIP'))
    print(f'{passed} passed, {bad} failed, {counts.get("SKIP", 0)} skipped')
    return 0 if bad == 0 and passed > 0 else 1


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'extract':
        extract(sys.argv[2])
    elif cmd == 'merge':
        merge(sys.argv[2], sys.argv[3:])
    elif cmd == 'run':
        sys.exit(run(sys.argv[2], sys.argv[3:]))
    elif cmd == 'count':
        js = sys.argv[sys.argv.index('--json') + 1] if '--json' in sys.argv else None
        sys.exit(count(sys.argv[2], sys.argv[3], js))
    else:
        sys.exit(__doc__)
