#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# README.md and p2pctl(8) name only what the tree has (host only, seconds):
# every "p2pctl COMMAND" and its options, every "make TARGET" and every path
# into the tree they name, checked against the tree itself.
#
#   scripts/doc-check.sh [P2PCTL [FILE...]]   check README.md and Documentation/man/p2pctl.8
#                                             (or FILEs); P2PCTL: tools/build/p2pctl
#   scripts/doc-check.sh --selftest [P2PCTL]  every fixture in scripts/doc-check-fixtures/
#                                             named bad-* must fail, with the file:line its
#                                             first line expects; ok-* must pass
#
# What is read, and from where:
#   - commands: README's code (indented and fenced blocks, `spans`), the man
#     page's .Dl lines: a "p2pctl" or "make" at the start of a command (after
#     &&, ||, ;, " | "), as a shell splits it; the man page's ".It Cm NAME"
#     in COMMANDS, and every "Fl" (but after ".Nm other-program")
#   - a p2pctl command must be a line of "p2pctl --help"; its options must
#     be in "p2pctl COMMAND --help", or be the global ones (the usage line and
#     the paragraph after the commands, less any command's own); a man page
#     "Fl" outside a command line must be in one of the help texts
#   - a make target must be a rule of the Makefile (of -C DIR's, if given)
#   - a path is a word that starts with a top-level directory of the tree
#     (Documentation/x.rst, qemu/run.sh, tools/...), outside comments: it
#     must exist (<placeholder>, ... and * as globs), or be what .gitignore
#     names as a build product (tools/build/p2pctl, drivers/p2pbar/p2pbar.ko)
#     in a directory that exists or is itself generated
# Each finding is printed as FILE:LINE: what; exit 1 if there is one, 2 when
# P2PCTL cannot be run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=check
if [ "${1:-}" = --selftest ]; then
	mode=selftest
	shift
fi
case "${1:-}" in
-h|--help) sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
p2pctl=${1:-$top/tools/build/p2pctl}
[ $# -gt 0 ] && shift
if ! "$p2pctl" --help >/dev/null 2>&1; then
	echo "doc-check: cannot run $p2pctl --help (make -C tools first)" >&2
	exit 2
fi
exec python3 - "$top" "$mode" "$p2pctl" "$@" <<'PY'
import glob, os, re, shlex, subprocess, sys

top, mode, p2pctl = sys.argv[1:4]
files = sys.argv[4:] or ['README.md', 'Documentation/man/p2pctl.8']
OPT = re.compile(r'(?<![\w-])(--?[A-Za-z][\w-]*)')
VALUED = re.compile(r'(?<![\w-])(--?[A-Za-z][\w-]*)[ =](?:[A-Z][A-Z0-9_]*|json\|normal)\b')


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


class P2pctl:
    """What p2pctl's help says it has: commands, their options, the global ones."""

    def __init__(self, exe):
        rc, out = run([exe, '--help'])
        lines = out.splitlines()
        self.cmds = [m.group(1) for m in (re.match(r'^  ([a-z][a-z0-9-]*)(?: |$)', l) for l in lines) if m]
        self.opts = {}
        self.valued = set(VALUED.findall(out))
        texts = [out]
        for c in self.cmds:
            rc, h = run([exe, c, '--help'])
            if rc != 0:
                sys.exit(f'doc-check: {exe} {c} --help exits {rc}')
            self.opts[c] = set(OPT.findall(h))
            self.valued |= set(VALUED.findall(h))
            texts.append(h)
        # the usage line and the paragraph after the command list
        tail = next((i for i, l in enumerate(lines) if i and l and not l[0].isspace()), len(lines))
        own = set().union(*self.opts.values())
        self.glob = set(OPT.findall('\n'.join([lines[0]] + lines[tail:]))) - own
        self.every = set(OPT.findall('\n'.join(texts)))


tool = P2pctl(p2pctl)
makefiles = {}


def make_targets(d):
    if d not in makefiles:
        ts = set()
        with open(os.path.join(top, d, 'Makefile')) as f:
            for line in f:
                m = re.match(r'^([^\s:=#][^:=#]*?)\s*::?(?!=)', line)
                if m:
                    ts |= {t for t in m.group(1).split() if '$' not in t}
        makefiles[d] = ts
    return makefiles[d]


tops = sorted(d for d in os.listdir(top) if not d.startswith('.') and os.path.isdir(os.path.join(top, d)))
PATH = re.compile(r'(?<![\w./~$@-])((?:%s)/[\w.*<>@+/-]*)' % '|'.join(map(re.escape, tops)))


def ignored(p):
    return subprocess.run(['git', '-C', top, 'check-ignore', '-q', '--no-index', '--', p],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def path_ok(p):
    q = re.sub(r'<[^>]*>', '*', p).replace('...', '*')
    if any(c in q for c in '*?['):
        if glob.glob(os.path.join(top, q)):
            return True
    elif os.path.exists(os.path.join(top, q)):
        return True
    # a build product: .gitignore names it, and its directory exists or is generated
    parent = os.path.dirname(q.rstrip('/'))
    return ignored(q) and (os.path.isdir(os.path.join(top, parent)) or ignored(parent))


class Checker:
    def __init__(self):
        self.problems = []
        self.counts = dict(commands=0, options=0, targets=0, paths=0)

    def bad(self, where, what):
        self.problems.append(f'{where}: {what}')

    def option(self, where, opt, sub):
        self.counts['options'] += 1
        if opt in tool.glob or (sub and opt in tool.opts.get(sub, ())):
            return
        if sub:
            self.bad(where, f'p2pctl {sub} {opt}: not an option of {sub} (p2pctl {sub} --help) nor a global one (p2pctl --help)')
        else:
            self.bad(where, f'p2pctl {opt}: not a global option (p2pctl --help)')

    def command(self, where, sub):
        self.counts['commands'] += 1
        if sub not in tool.cmds:
            self.bad(where, f'p2pctl {sub}: no such command (p2pctl --help)')
            return False
        return True

    def p2pctl(self, where, toks):
        sub, opts, i = None, [], 0
        while i < len(toks):
            t = toks[i].strip('[]')
            i += 1
            if t in ('', '|', '...') or re.match(r'^-[0-9]', t):
                continue
            if t == '--':
                break
            if t.startswith('-'):
                name = t.split('=', 1)[0]
                opts.append(name)
                if '=' not in t and name in tool.valued:
                    i += 1
            elif sub is None:
                sub = t
        if sub is not None and not re.match(r'^[a-z][a-z0-9-]*$', sub):
            sub = None          # a placeholder: COMMAND, <command>
        if sub is not None and not self.command(where, sub):
            return
        for o in opts:
            self.option(where, o, sub)

    def make(self, where, toks):
        d, targets, i = '.', [], 0
        while i < len(toks):
            t = toks[i].strip('[]')
            i += 1
            if t in ('-C', '-f', '-j', '-l', '-o', '-W', '-I'):
                if t == '-C' and i < len(toks):
                    d = toks[i]
                i += 1
            elif t.startswith('-C') and len(t) > 2:
                d = t[2:]
            elif not t or t.startswith('-') or '=' in t or t in ('|', '...'):
                continue
            elif re.match(r'^[\w./%+-]+$', t):
                targets.append(t)
        if d.startswith(('/', '$', '~')) or '...' in d:
            return              # another tree's
        if not os.path.isfile(os.path.join(top, d, 'Makefile')):
            self.bad(where, f'make -C {d}: no {d}/Makefile in the tree')
            return
        for t in targets:
            self.counts['targets'] += 1
            if t not in make_targets(d):
                mk = 'Makefile' if d == '.' else f'{d}/Makefile'
                self.bad(where, f'make {t}: no such target in {mk}')

    def code(self, where, text):
        """Shell text: each command that starts with p2pctl or make."""
        q = None        # the comment ends the text: a # outside quotes, after a blank
        for i, ch in enumerate(text):
            if q:
                q = None if ch == q else q
            elif ch in '\'"':
                q = ch
            elif ch == '#' and (i == 0 or text[i - 1].isspace()):
                text = text[:i]
                break
        for seg in re.split(r'&&|\|\||;|\s\|\s|`', text):
            try:
                toks = shlex.split(seg, comments=True)
            except ValueError:
                toks = seg.split('#')[0].split()
            while toks and (re.match(r'^[A-Za-z_][A-Za-z0-9_]*=', toks[0]) or toks[0] in ('sudo', 'env', 'time', 'exec', '!', '$', '#')):
                toks = toks[1:]
            if not toks:
                continue
            if toks[0] == 'p2pctl' or toks[0].endswith('/p2pctl'):
                self.p2pctl(where, toks[1:])
            elif toks[0] == 'make':
                self.make(where, toks[1:])

    def paths(self, where, text):
        for m in PATH.finditer(text):
            p = m.group(1).rstrip('.')
            self.counts['paths'] += 1
            if not path_ok(p):
                self.bad(where, f'{p}: not in the tree')

    def markdown(self, name, lines):
        fence, comment, prev_blank, in_code = False, False, True, False
        for n, line in enumerate(lines, 1):
            where = f'{name}:{n}'
            if comment or line.lstrip().startswith('<!--'):
                comment = '-->' not in line
                continue
            if line.lstrip().startswith('```'):
                fence = not fence
                continue
            # an indented block: four spaces, after a blank line or more of it
            in_code = fence or (line.startswith(('    ', '\t')) and (prev_blank or in_code))
            prev_blank = not line.strip()
            if in_code:
                self.code(where, line)
            else:
                for span in re.findall(r'`([^`]+)`', line):
                    self.code(where, span)
            self.paths(where, line)

    def man(self, name, lines):
        section = None
        for n, line in enumerate(lines, 1):
            where = f'{name}:{n}'
            if line.startswith(('.\\"', "'\\\"")):
                continue
            toks = line.split()
            if line.startswith('.Sh '):
                section = line[4:].strip()
            if line.startswith('.Dl '):
                self.code(where, line[4:])
                self.paths(where, line)
                continue
            sub = None
            if section == 'COMMANDS' and line.startswith('.It Cm ') and len(toks) > 2:
                sub = toks[2] if self.command(where, toks[2]) else ''
            owner = 'p2pctl'
            for j, t in enumerate(toks):
                if t in ('Nm', '.Nm'):
                    nxt = toks[j + 1] if j + 1 < len(toks) else ''
                    owner = 'p2pctl' if not nxt or nxt[0].isupper() or nxt in ('p2pctl',) else nxt
                    if owner == 'make':
                        for k in range(j + 2, len(toks) - 1, 2):
                            if toks[k] != 'Cm':
                                break
                            self.make(where, [toks[k + 1]])
                elif t in ('Fl', '.Fl') and j + 1 < len(toks) and owner == 'p2pctl':
                    opt = '-' + toks[j + 1]
                    if opt in ('--', '-|'):
                        continue
                    if sub:
                        self.option(where, opt, sub)
                    else:
                        self.counts['options'] += 1
                        if opt not in tool.every:
                            self.bad(where, f'p2pctl {opt}: in no help text of p2pctl (p2pctl [COMMAND] --help)')
            self.paths(where, line)

    def file(self, name):
        with open(os.path.join(top, name) if not os.path.isabs(name) else name) as f:
            lines = f.read().splitlines()
        if name.endswith('.md'):
            self.markdown(name, lines)
        else:
            self.man(name, lines)


def check(names):
    c = Checker()
    for name in names:
        c.file(name)
    return c


if mode == 'check':
    c = check(files)
    for p in c.problems:
        print(p)
    n = c.counts
    print(f"doc-check: {', '.join(files)}: {n['commands']} p2pctl commands, {n['options']} options, "
          f"{n['targets']} make targets, {n['paths']} paths; {len(c.problems)} not in the tree")
    sys.exit(1 if c.problems else 0)

# --selftest: bad-* must fail where their first line says, ok-* must pass
fix = 'scripts/doc-check-fixtures'
failed = 0
names = sorted(os.listdir(os.path.join(top, fix)))
for f in names:
    name = f'{fix}/{f}'
    c = check([name])
    with open(os.path.join(top, name)) as fh:
        m = re.search(r'doc-check expects: (\d+): (.*?)(?: -->)?$', fh.readline().rstrip())
    if f.startswith('ok-'):
        ok = not c.problems
        why = 'passes' if ok else 'fails: ' + '; '.join(c.problems)
    elif m:
        want = f'{name}:{m.group(1)}: '
        ok = any(p.startswith(want) and m.group(2) in p for p in c.problems)
        why = (f'fails: {want}{m.group(2)}' if ok else
               f'does not fail with "{want}...{m.group(2)}": ' + ('; '.join(c.problems) or 'no finding'))
    else:
        ok, why = False, 'has no "doc-check expects: LINE: TEXT" first line'
    print(f"{'ok  ' if ok else 'FAIL'} {name} {why}")
    failed += not ok
print(f'doc-check --selftest: {len(names) - failed} of {len(names)} fixtures as expected')
sys.exit(1 if failed or not names else 0)
PY
