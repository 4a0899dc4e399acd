#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""KTAP plumbing and the judge of the bench. Parsing is the kernel's own
tools/testing/kunit/kunit.py's; this cuts and joins documents, and judges a
run only when every result it printed was counted.

  ktap.py extract RUN_DIR             serial.log blocks -> RUN_DIR/ktap/*.ktap
                                      (a name printed again: NAME#2, NAME#3...)
  ktap.py merge OUT.ktap RUN_DIR...   one document, suites prefixed with the run
  ktap.py run OUT.ktap COMMAND...     a host-side test program's document -> OUT.ktap
                                      (beside the build suite's own): exit 0 if it is
                                      whole, whatever its cases say
  ktap.py count KUNIT_PY FILE.ktap [--json FILE]
                                      judge one document (see judge), print the
                                      reasons and, last, the summary line
  ktap.py judge KUNIT_PY RUN_DIR [--qemu-rc N]
                                      judge one run: its ktap/*.ktap merged into
                                      RUN_DIR/run.ktap, the summary line into
                                      RUN_DIR/summary, the reasons it failed into
                                      RUN_DIR/reasons; exit 0 only for a pass
  ktap.py summary OUT_DIR RUN...      the verdict of make check: every RUN named
                                      (a run dir's name under OUT_DIR/runs) must
                                      exist, be judged and pass; their summary
                                      lines summed, each failure with its reason

A document passes only if kunit.py parsed all of it (no [ERROR], nothing
CRASHED, a fresh JSON), every plan matches the results printed at its level,
no line anywhere says "not ok" (a "not ok ... # SKIP" is a failure), the
cases kunit.py counted are exactly the case lines printed, and something
passed. Each such finding counts as a failure in the summary line, beside
the failed cases.
"""
import json
import os
import re
import subprocess
import sys

RESULT_RE = re.compile(r'^(ok|not ok) (\d+)(?: (.*))?$')
PLAN_RE = re.compile(r'^1\.\.(\d+)')
SKIP_RE = re.compile(r'#\s*SKIP\b', re.I)
SUMMARY_RE = re.compile(r'^(\d+) passed, (\d+) failed, (\d+) skipped$')


def extract(run):
    with open(os.path.join(run, 'serial.log'), 'rb') as f:
        log = f.read().decode('utf-8', 'replace').replace('\r', '')
    os.makedirs(os.path.join(run, 'ktap'), exist_ok=True)
    seen = {}
    for m in re.finditer(r'<<<KTAP-BEGIN (\S+)>>>\n(.*?)<<<KTAP-END>>>', log, re.S):
        # a suite printed twice keeps both copies: the second is NAME#2
        name = m.group(1)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name += f'#{seen[name]}'
        with open(os.path.join(run, 'ktap', name + '.ktap'), 'w') as f:
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
        names = sorted(n for n in os.listdir(kdir) if n.endswith('.ktap')) if os.path.isdir(kdir) else []
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


class Frame:
    def __init__(self, indent, name):
        self.indent, self.name = indent, name
        self.plan, self.results, self.children = None, 0, False
        self.fails_at_open, self.child_fails = 0, 0


def structure(doc, where):
    """Our own reading of a KTAP document, independent of kunit.py: the
    case lines (results that close no subtest) as (status, text), and every
    structural fault: a plan that does not match its results, a level
    without a plan, a second plan."""
    cases, faults = [], []
    stack = [Frame(-1, where)]

    def close(f):
        if f.plan is None:
            # KUnit prints no plan for a parameterised case's results
            # (lib/kunit/test.c): only below a suite's own level
            if f.results and f.indent < 8:
                faults.append(f'{where}: {f.name}: {f.results} results without a plan')
        elif f.plan != f.results:
            faults.append(f'{where}: {f.name}: plan 1..{f.plan}, {f.results} results')

    for raw in doc.splitlines():
        if not raw.strip():
            continue
        body = raw.lstrip(' ')
        ind = len(raw) - len(body)
        opens = body.startswith('KTAP version') or body.startswith('# Subtest:')
        res, plan = RESULT_RE.match(body), PLAN_RE.match(body)
        if not (opens or res or plan):
            continue        # diagnostics and stray lines
        while len(stack) > 1 and stack[-1].indent > ind:
            child = stack.pop()
            close(child)
            stack[-1].children = True
            stack[-1].child_fails = sum(1 for st, _ in cases if st == 'FAIL') - child.fails_at_open
        if stack[-1].indent < ind:
            stack.append(Frame(ind, body[11:] if body.startswith('# Subtest:') else stack[-1].name))
            stack[-1].fails_at_open = sum(1 for st, _ in cases if st == 'FAIL')
        top = stack[-1]
        if body.startswith('# Subtest:'):
            top.name = body[11:].strip()
        if plan:
            if top.plan is not None:
                faults.append(f'{where}: {top.name}: a second plan')
            top.plan = int(plan.group(1))
        if res:
            top.results += 1
            if not top.children:
                st = res.group(1)
                text = res.group(3) or ''
                if st == 'ok':
                    st = 'SKIP' if SKIP_RE.search(text) else 'PASS'
                else:
                    st = 'FAIL'
                cases.append((st, f'{top.name}: {text}'))
            elif res.group(1) != 'ok' and not top.child_fails:
                # a suite failed with none of its cases failing
                faults.append(f'{where}: suite line "{body}", no case of it failed')
            top.children = False
    while len(stack) > 1:
        close(stack.pop())
    return cases, faults


def walk(group, counts, failed, path=''):
    for t in group.get('test_cases', []):
        counts[t['status']] = counts.get(t['status'], 0) + 1
        if t['status'] not in ('PASS', 'SKIP'):
            failed.append(f"{path}{group['name']}: {t['name']}")
    for g in group.get('sub_groups', []):
        walk(g, counts, failed, path)


def kunit_parse(kunit_py, ktap, json_out):
    """kunit.py's counts of a document, and what went wrong parsing it."""
    faults = []
    try:
        os.unlink(json_out)     # never a previous run's JSON
    except FileNotFoundError:
        pass
    try:
        r = subprocess.run([sys.executable, kunit_py, 'parse', f'--json={json_out}', ktap],
                           capture_output=True, text=True, errors='replace')
    except OSError as e:
        return None, [f'kunit.py did not run: {e}']
    out = re.sub(r'\x1b\[[0-9;]*m', '', r.stdout)
    if r.returncode not in (0, 1) or 'Traceback' in r.stderr:
        faults.append(f'kunit.py exit status {r.returncode}: {r.stderr.strip().splitlines()[-1:] or ""}')
    for l in out.splitlines():
        if '[ERROR]' in l or '[CRASHED]' in l:
            faults.append('kunit.py: ' + l.split('] ', 1)[-1].strip())
    m = re.search(r'Testing complete\. Ran \d+ tests:.*errors: (\d+)', out)
    if m and int(m.group(1)) and not any(f.startswith('kunit.py: ') for f in faults):
        faults.append(f'kunit.py counts {m.group(1)} parse errors')
    try:
        with open(json_out) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        faults.append(f'kunit.py wrote no JSON: {e}')
        return None, faults
    counts, failed = {}, []
    walk(data, counts, failed)
    return (counts, failed), faults


def judge_docs(kunit_py, merged, docs, json_out):
    """Judge: (passed, failed, skipped, reasons). docs: (where, text) of
    each document as it was printed; merged: those as one KTAP file."""
    cases, faults = [], []
    for where, text in docs:
        c, f = structure(text, where)
        cases += c
        faults += f
    mine = {s: sum(1 for st, _ in cases if st == s) for s in ('PASS', 'FAIL', 'SKIP')}
    reasons = [f'not ok: {t}' for st, t in cases if st == 'FAIL']
    parsed, kfaults = kunit_parse(kunit_py, merged, json_out)
    faults += kfaults
    if parsed:
        counts, _ = parsed
        theirs = sum(counts.values())
        if theirs != len(cases):
            faults.append(f'kunit.py counted {theirs} cases, the documents print {len(cases)}')
        if counts.get('FAIL', 0) + counts.get('ERROR', 0) > mine['FAIL']:
            faults.append(f'kunit.py counts {counts.get("FAIL", 0) + counts.get("ERROR", 0)} failed, '
                          f'the case lines {mine["FAIL"]}')
    if not mine['PASS']:
        faults.append('nothing passed')
    reasons += faults
    return mine['PASS'], mine['FAIL'] + len(faults), mine['SKIP'], reasons


def count(kunit_py, ktap, json_out=None):
    json_out = json_out or ktap + '.json'
    with open(ktap, errors='replace') as f:
        text = f.read()
    p, fl, s, reasons = judge_docs(kunit_py, ktap, [(os.path.basename(ktap), text)], json_out)
    for r in reasons:
        print(f'FAILED: {r}')
    print(f'{p} passed, {fl} failed, {s} skipped')
    return 0 if fl == 0 else 1


def judge(kunit_py, run_dir, qemu_rc=None):
    kdir = os.path.join(run_dir, 'ktap')
    names = sorted(n for n in os.listdir(kdir) if n.endswith('.ktap')) if os.path.isdir(kdir) else []
    docs = []
    for n in names:
        with open(os.path.join(kdir, n), errors='replace') as f:
            docs.append((n[:-5], f.read()))
    merged = os.path.join(run_dir, 'run.ktap')
    merge(merged, [run_dir])
    if docs:
        p, fl, s, reasons = judge_docs(kunit_py, merged, docs, merged + '.json')
    else:
        p, fl, s, reasons = 0, 1, 0, ['the run left no KTAP (see its serial.log)']
    if qemu_rc not in (None, 0):
        fl += 1
        reasons.append(f'QEMU exit status {qemu_rc}')
    line = f'{p} passed, {fl} failed, {s} skipped'
    with open(os.path.join(run_dir, 'summary'), 'w') as f:
        f.write(line + '\n')
    with open(os.path.join(run_dir, 'reasons'), 'w') as f:
        f.write(''.join(r + '\n' for r in reasons))
    for r in reasons:
        print(f'FAILED: {r}')
    print(line)
    return 0 if fl == 0 else 1


def summary(out_dir, runs):
    """The verdict over the runs make check selected: each must have been
    judged a pass; a run with no dir, no status, or no summary line is a
    failure with its reason."""
    tot = [0, 0, 0]
    failed_runs = []
    for name in runs:
        d = os.path.join(out_dir, 'runs', name)

        def read(f):
            try:
                with open(os.path.join(d, f), errors='replace') as fh:
                    return fh.read()
            except OSError:
                return None
        if not os.path.isdir(d):
            tot[1] += 1
            failed_runs.append((name, ['no run: run.sh refused it or never ran (see the [bench] lines)']))
            continue
        status = (read('status') or '').strip()
        m = SUMMARY_RE.match((read('summary') or '').strip())
        reasons = [l for l in (read('reasons') or '').splitlines() if l]
        if m:
            p, fl, s = map(int, m.groups())
        else:
            p, fl, s = 0, 0, 0
            reasons.append('no summary: the run stopped before it was judged')
        if status != 'pass' and fl == 0:
            fl = 1
            reasons.append(f'status {status or "missing"}')
        tot[0] += p
        tot[1] += fl
        tot[2] += s
        if fl:
            failed_runs.append((name, reasons or [f'{fl} failed']))
    for name, reasons in failed_runs:
        for r in reasons[:20]:
            print(f'FAILED: {name}: {r}')
        if len(reasons) > 20:
            print(f'FAILED: {name}: ... and {len(reasons) - 20} more (see {out_dir}/runs/{name}/reasons)')
    print(f'{len(runs)} runs, {len(runs) - len(failed_runs)} passed')
    print(f'{tot[0]} passed, {tot[1]} failed, {tot[2]} skipped')
    return 0 if tot[1] == 0 and tot[0] > 0 and runs else 1


if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 1 else ''
    if cmd == 'extract':
        extract(sys.argv[2])
    elif cmd == 'merge':
        merge(sys.argv[2], sys.argv[3:])
    elif cmd == 'run':
        sys.exit(run(sys.argv[2], sys.argv[3:]))
    elif cmd == 'count':
        js = sys.argv[sys.argv.index('--json') + 1] if '--json' in sys.argv else None
        sys.exit(count(sys.argv[2], sys.argv[3], js))
    elif cmd == 'judge':
        rc = int(sys.argv[sys.argv.index('--qemu-rc') + 1]) if '--qemu-rc' in sys.argv else None
        sys.exit(judge(sys.argv[2], sys.argv[3], rc))
    elif cmd == 'summary':
        sys.exit(summary(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit(__doc__)
