#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# A static lint of the guest tests (qemu/tests/*.guest.sh) and their helpers
# (qemu/guest/lib.sh, qemu/guest/init) for checks that cannot fail and
# results that cannot reach the judge. Each finding is FILE:LINE: [RULE]:
#
#   check-true        check "..." true (or :): a check that cannot fail
#   check-or-true     "; true", "|| true" or "|| :" inside a check's command
#   counter-subshell  check, check_eq, check_same, pass, fail, skip,
#                     hostcheck, jsoncheck, suite_begin or suite_end in a
#                     pipeline or inside $( ), ` ` or ( ): the result
#                     counter (_n) stays in the subshell
#   result-state      an assignment to _n, _failed or _suite outside
#                     lib.sh's suite_begin, _tap and suite_end
#   ktap-status       a test program that prints its own KTAP (a C program
#                     of tools/tests on the harness: kt_run()) run without
#                     "|| _any_failed=1", or in a pipeline or $( ) (but
#                     p2pvirt's commands other than "test" and p2puring-test
#                     --polled, which print none)
#   no-expect         a guest test script without an expect_suites line
#   hostd-check       "hostd check" outside lib.sh: a host check that
#                     fails nowhere when the host never judged it (hostcheck)
#   old-known-warning the old P2P-KNOWN-WARNING line (known_warning_begin)
#
#   qemu/lint-tests.sh [DIR|FILE...]   DIR: a qemu/ directory (its tests/
#                                      and guest/), or a directory of guest
#                                      test scripts; default: this qemu/
#   qemu/lint-tests.sh --selftest      each fixture directory
#                                      qemu/judge-fixtures/lint/RULE[.VARIANT]
#                                      must fail, naming RULE; one line each
# Exit status: 0 clean, 1 findings (or a fixture that passed), 2 usage.
here=$(cd "$(dirname "$0")" && pwd)
exec python3 - "$here" "$@" <<'EOF'
import os
import re
import sys

HERE = sys.argv[1]
ARGS = sys.argv[2:]

COUNTERS = {'check', 'check_eq', 'check_same', 'pass', 'fail', 'skip', 'hostcheck',
            'jsoncheck', 'suite_begin', 'suite_end'}
STATE = {'_n', '_failed', '_suite'}
STATE_OWNERS = {'suite_begin', '_tap', 'suite_end'}


def ktap_programs():
    """The C programs of tools/tests that run on the harness (kt_run())."""
    progs = {'p2pbar-test', 'p2pnvme-test', 'p2pgpu-test', 'p2puring-test', 'p2preg-test',
             'p2pdmabuf-test', 'p2pfuzz', 'p2pfailnth', 'p2premoval', 'p2pvirt'}
    d = os.path.join(HERE, '..', 'tools', 'tests')
    if os.path.isdir(d):
        for f in os.listdir(d):
            if f.endswith('.c'):
                with open(os.path.join(d, f), errors='replace') as fh:
                    if 'kt_run(' in fh.read():
                        progs.add(f[:-2])
    return progs


KTAP_PROGS = ktap_programs()
# the modes of those programs that print no KTAP
NO_KTAP = {'p2pvirt': lambda args: args[:1] != ['test'],
           'p2puring-test': lambda args: args[:1] == ['--polled']}


class ParseError(Exception):
    pass


# ---- lexer ----------------------------------------------------------------

class Word:
    def __init__(self, text, line, substs):
        self.text = text        # as written, quotes included
        self.line = line
        self.substs = substs    # token lists of its $( ), ` ` (subshells)

    def plain(self):
        """The word without its quotes (good enough for names and literals)."""
        return re.sub(r'''["']''', '', self.text)


class Op:
    def __init__(self, text, line):
        self.text = text
        self.line = line


META = set(' \t\n;&|()<>')


class Lexer:
    def __init__(self, s):
        self.s = s
        self.i = 0
        self.line = 1

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ''

    def adv(self, n=1):
        for _ in range(n):
            if self.i < len(self.s) and self.s[self.i] == '\n':
                self.line += 1
            self.i += 1

    def tokens(self, stop=None):
        """Tokens up to the end, or up to an unmatched ')' when stop."""
        out = []
        while True:
            c = self.peek()
            if c == '':
                if stop:
                    raise ParseError(f'line {self.line}: unterminated $(')
                return out
            if c in ' \t':
                self.adv()
            elif c == '\\' and self.peek(1) == '\n':
                self.adv(2)
            elif c == '#':
                while self.peek() not in ('', '\n'):
                    self.adv()
            elif c == '\n':
                out.append(Op('\n', self.line))
                self.adv()
            elif c == ')' and stop:
                self.adv()
                return out
            elif c in ';&|':
                two = c + self.peek(1)
                if two in (';;', '&&', '||'):
                    out.append(Op(two, self.line))
                    self.adv(2)
                else:
                    out.append(Op(c, self.line))
                    self.adv()
            elif c in '()':
                out.append(Op(c, self.line))
                self.adv()
            elif c in '<>' or (c.isdigit() and self._redir_ahead()):
                out.append(self.redirection())
            else:
                out.append(self.word())

    def _redir_ahead(self):
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        return j < len(self.s) and self.s[j] in '<>'

    def redirection(self):
        line = self.line
        while self.peek().isdigit():
            self.adv()
        op = self.peek()
        self.adv()
        if self.peek() in '<>&':
            op += self.peek()
            self.adv()
        if op.endswith('&') and (self.peek().isdigit() or self.peek() == '-'):
            while self.peek().isdigit() or self.peek() == '-':
                self.adv()
            return Op('redir', line)
        while self.peek() in ' \t':
            self.adv()
        target = self.word()
        r = Op('redir', line)
        r.target = target
        return r

    def word(self):
        line = self.line
        start = self.i
        substs = []
        while True:
            c = self.peek()
            if c == '' or c in META:
                break
            if c == '\\':
                self.adv(2)
            elif c == "'":
                self.adv()
                while self.peek() not in ("'", ''):
                    self.adv()
                self.adv()
            elif c == '"':
                self.adv()
                self.dquote(substs)
            elif c == '`':
                substs.append(self.backtick())
            elif c == '$':
                self.dollar(substs)
            else:
                self.adv()
        if self.i == start:
            raise ParseError(f'line {self.line}: unexpected {self.peek()!r}')
        return Word(self.s[start:self.i], line, substs)

    def dquote(self, substs):
        while True:
            c = self.peek()
            if c == '':
                raise ParseError(f'line {self.line}: unterminated "')
            if c == '"':
                self.adv()
                return
            if c == '\\':
                self.adv(2)
            elif c == '`':
                substs.append(self.backtick())
            elif c == '$':
                self.dollar(substs)
            else:
                self.adv()

    def dollar(self, substs):
        if self.peek(1) == '(' and self.peek(2) == '(':
            self.adv(3)
            self.arith(substs)
        elif self.peek(1) == '(':
            self.adv(2)
            substs.append(self.tokens(stop=True))
        elif self.peek(1) == '{':
            self.adv(2)
            depth = 1
            while depth:
                c = self.peek()
                if c == '':
                    raise ParseError(f'line {self.line}: unterminated ${{')
                if c == '\\':
                    self.adv(2)
                    continue
                if c == '"':
                    self.adv()
                    self.dquote(substs)
                    continue
                if c == "'":
                    self.adv()
                    while self.peek() not in ("'", ''):
                        self.adv()
                    self.adv()
                    continue
                if c == '$':
                    self.dollar(substs)
                    continue
                if c == '{':
                    depth += 1
                elif c == '}':
                    depth -= 1
                self.adv()
        else:
            self.adv()

    def arith(self, substs):
        """$(( ... )): to its closing '))'; a $( ) inside is a subshell."""
        depth = 0
        while True:
            c = self.peek()
            if c == '':
                raise ParseError(f'line {self.line}: unterminated $((')
            if c == '$':
                self.dollar(substs)
                continue
            if c == '(':
                depth += 1
            elif c == ')':
                if depth == 0 and self.peek(1) == ')':
                    self.adv(2)
                    return
                depth -= 1
            self.adv()

    def backtick(self):
        self.adv()
        start = self.i
        while self.peek() not in ('`', ''):
            if self.peek() == '\\':
                self.adv()
            self.adv()
        inner = self.s[start:self.i]
        self.adv()
        sub = Lexer(inner)
        sub.line = self.line
        return sub.tokens()


# ---- parser (the subset of sh the guest scripts use) ------------------------

class Node:
    def __init__(self, kind, line, **kw):
        self.kind = kind
        self.line = line
        self.__dict__.update(kw)


RESERVED_END = {'then', 'elif', 'else', 'fi', 'do', 'done', 'esac', '}', ';;'}


class Parser:
    def __init__(self, toks):
        self.t = toks
        self.i = 0

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else None

    def is_word(self, tok, *texts):
        return isinstance(tok, Word) and (not texts or tok.text in texts)

    def is_op(self, tok, *texts):
        return isinstance(tok, Op) and tok.text in texts

    def skip_newlines(self):
        while self.is_op(self.peek(), '\n', ';'):
            self.i += 1

    def expect_word(self, text):
        tok = self.peek()
        if not self.is_word(tok, text):
            line = tok.line if tok else '?'
            raise ParseError(f'line {line}: expected {text!r}')
        self.i += 1

    def parse_list(self, ends=()):
        items = []
        while True:
            self.skip_newlines()
            tok = self.peek()
            if tok is None:
                break
            if isinstance(tok, Word) and tok.text in ends:
                break
            if self.is_op(tok, ')', ';;'):
                break
            items.append(self.and_or())
            tok = self.peek()
            if self.is_op(tok, ';', '&', '\n'):
                self.i += 1
        return Node('list', items[0].line if items else 0, items=items)

    def and_or(self):
        pipes = [self.pipeline()]
        ops = []
        while self.is_op(self.peek(), '&&', '||'):
            ops.append(self.peek().text)
            self.i += 1
            while self.is_op(self.peek(), '\n'):
                self.i += 1
            pipes.append(self.pipeline())
        return Node('and_or', pipes[0].line, pipes=pipes, ops=ops)

    def pipeline(self):
        bang = False
        if self.is_word(self.peek(), '!'):
            bang = True
            self.i += 1
        cmds = [self.command()]
        while self.is_op(self.peek(), '|'):
            self.i += 1
            while self.is_op(self.peek(), '\n'):
                self.i += 1
            cmds.append(self.command())
        return Node('pipeline', cmds[0].line, cmds=cmds, bang=bang)

    def redirs(self, node):
        while isinstance(self.peek(), Op) and self.peek().text == 'redir':
            r = self.peek()
            if hasattr(r, 'target'):
                node.words.append(r.target)
            self.i += 1

    def command(self):
        tok = self.peek()
        if tok is None:
            raise ParseError('unexpected end')
        if self.is_op(tok, '('):
            self.i += 1
            body = self.parse_list()
            if not self.is_op(self.peek(), ')'):
                raise ParseError(f'line {tok.line}: unclosed (')
            self.i += 1
            node = Node('subshell', tok.line, body=body, words=[])
            self.redirs(node)
            return node
        if isinstance(tok, Word):
            w = tok.text
            if w == '{':
                self.i += 1
                body = self.parse_list(ends=('}',))
                self.expect_word('}')
                node = Node('group', tok.line, bodies=[body], words=[])
                self.redirs(node)
                return node
            if w == 'if':
                return self.if_clause()
            if w in ('while', 'until'):
                self.i += 1
                cond = self.parse_list(ends=('do',))
                self.expect_word('do')
                body = self.parse_list(ends=('done',))
                self.expect_word('done')
                node = Node('group', tok.line, bodies=[cond, body], words=[])
                self.redirs(node)
                return node
            if w == 'for':
                self.i += 1
                var = self.peek()
                self.i += 1
                words = []
                self.skip_newlines_only()
                if self.is_word(self.peek(), 'in'):
                    self.i += 1
                    while isinstance(self.peek(), Word):
                        words.append(self.peek())
                        self.i += 1
                self.skip_newlines()
                self.expect_word('do')
                body = self.parse_list(ends=('done',))
                self.expect_word('done')
                node = Node('group', tok.line, bodies=[body], words=words, forvar=var)
                self.redirs(node)
                return node
            if w == 'case':
                return self.case_clause()
            nxt = self.t[self.i + 1] if self.i + 1 < len(self.t) else None
            if re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*\(\)', w) or (
                    re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', w) and self.is_op(nxt, '(')):
                name = w[:-2] if w.endswith('()') else w
                self.i += 1 if w.endswith('()') else 3
                self.skip_newlines_only()
                body = self.command()
                return Node('func', tok.line, name=name, body=body)
        return self.simple()

    def skip_newlines_only(self):
        while self.is_op(self.peek(), '\n'):
            self.i += 1

    def if_clause(self):
        tok = self.peek()
        self.i += 1
        bodies = [self.parse_list(ends=('then',))]
        self.expect_word('then')
        bodies.append(self.parse_list(ends=('elif', 'else', 'fi')))
        while self.is_word(self.peek(), 'elif'):
            self.i += 1
            bodies.append(self.parse_list(ends=('then',)))
            self.expect_word('then')
            bodies.append(self.parse_list(ends=('elif', 'else', 'fi')))
        if self.is_word(self.peek(), 'else'):
            self.i += 1
            bodies.append(self.parse_list(ends=('fi',)))
        self.expect_word('fi')
        node = Node('group', tok.line, bodies=bodies, words=[])
        self.redirs(node)
        return node

    def case_clause(self):
        tok = self.peek()
        self.i += 1
        words = [self.peek()]
        self.i += 1
        self.skip_newlines_only()
        self.expect_word('in')
        bodies = []
        while True:
            self.skip_newlines_only()
            if self.is_word(self.peek(), 'esac'):
                self.i += 1
                break
            if self.is_op(self.peek(), '('):
                self.i += 1
            # the patterns, up to their ')'
            while not self.is_op(self.peek(), ')'):
                if self.peek() is None:
                    raise ParseError(f'line {tok.line}: unterminated case')
                if isinstance(self.peek(), Word):
                    words.append(self.peek())
                self.i += 1
            self.i += 1
            bodies.append(self.parse_list(ends=('esac',)))
            if self.is_op(self.peek(), ';;'):
                self.i += 1
        node = Node('group', tok.line, bodies=bodies, words=words)
        self.redirs(node)
        return node

    def simple(self):
        tok = self.peek()
        assigns, words = [], []
        node = Node('simple', tok.line, assigns=assigns, words=words, argv=[])
        while True:
            tok = self.peek()
            if isinstance(tok, Op) and tok.text == 'redir':
                if hasattr(tok, 'target'):
                    words.append(tok.target)
                self.i += 1
                continue
            if not isinstance(tok, Word):
                break
            if not node.argv and tok.text in RESERVED_END:
                break
            if not node.argv and re.match(r'[A-Za-z_][A-Za-z0-9_]*=', tok.text):
                assigns.append(tok)
            else:
                node.argv.append(tok)
            words.append(tok)
            self.i += 1
        if not assigns and not node.argv:
            tok = self.peek()
            raise ParseError(f'line {tok.line if tok else "?"}: unexpected '
                             f'{tok.text if tok else "end"!r}')
        return node


# ---- rules ------------------------------------------------------------------

class Lint:
    def __init__(self, path, role):
        self.path = path
        self.role = role        # 'test', 'lib' or 'init'
        self.found = []
        self.has_expect = False

    def report(self, line, rule, msg):
        self.found.append(f'{self.path}:{line}: [{rule}] {msg}')

    def walk(self, node, sub=False, func=None):
        k = node.kind
        if k == 'list':
            for n in node.items:
                self.walk(n, sub, func)
        elif k == 'and_or':
            for j, p in enumerate(node.pipes):
                self.walk(p, sub, func)
                self.ktap_status(node, j)
        elif k == 'pipeline':
            piped = sub or len(node.cmds) > 1
            for c in node.cmds:
                self.walk(c, piped, func)
        elif k == 'subshell':
            self.walk(node.body, True, func)
            self.words(node.words, func)
        elif k == 'group':
            for b in node.bodies:
                self.walk(b, sub, func)
            self.words(node.words, func)
            var = getattr(node, 'forvar', None)
            if var is not None and var.text in STATE:
                self.state(var.line, var.text, func)
        elif k == 'func':
            self.walk(node.body, sub, node.name)
        elif k == 'simple':
            self.simple(node, sub, func)

    def words(self, words, func):
        for w in words:
            for toks in w.substs:
                self.walk(parse_all(toks), True, func)
            if 'P2P-KNOWN-WARNING ' in w.text:
                self.report(w.line, 'old-known-warning',
                            'the old P2P-KNOWN-WARNING line: known_warning_begin/end')
            for m in re.finditer(r'\$\(\((.*?)\)\)', w.text, re.S):
                am = re.search(r'(?<![A-Za-z0-9_])(_n|_failed|_suite)\s*([-+*/]?=(?!=)|\+\+|--)',
                               m.group(1))
                if am:
                    self.state(w.line, am.group(1), func)

    def state(self, line, name, func):
        if self.role == 'lib' and (func is None or func in STATE_OWNERS):
            return
        self.report(line, 'result-state',
                    f'{name} assigned outside suite_begin/_tap/suite_end'
                    + (f' (in {func}())' if func else ''))

    def simple(self, node, sub, func):
        self.words(node.words, func)
        for a in node.assigns:
            name = a.text.split('=', 1)[0]
            if name in STATE:
                self.state(a.line, name, func)
        if not node.argv:
            return
        argv = node.argv
        name = argv[0].plain()
        if name == 'read':
            for w in argv[1:]:
                if w.text in STATE:
                    self.state(w.line, w.text, func)
        if name == 'expect_suites' and not sub:
            self.has_expect = True
        if name in COUNTERS and sub:
            self.report(node.line, 'counter-subshell',
                        f'{name} in a pipeline or a subshell: its result is not counted')
        if name == 'hostd' and len(argv) > 1 and argv[1].plain() == 'check' and self.role != 'lib':
            self.report(node.line, 'hostd-check',
                        'hostd check: use hostcheck (it fails when the host judged nothing)')
        if name == 'check':
            cmd = argv[2:]
            if cmd and cmd[0].plain() in ('true', ':'):
                self.report(node.line, 'check-true', 'check "..." true: a check that cannot fail')
            for w in cmd:
                if re.search(r'(;|\|\|)\s*(true|:)(\s|$|["\';)])', w.text):
                    self.report(node.line, 'check-or-true',
                                f'"; true" or "|| true" in a check\'s command: {w.text[:60]}')
                    break
        if name in KTAP_PROGS and not NO_KTAP.get(name, lambda a: False)(
                [w.plain() for w in argv[1:]]):
            node.ktap = True
            if sub:
                self.report(node.line, 'ktap-status',
                            f'{name} in a pipeline or a subshell: its exit status is lost')

    def ktap_status(self, and_or, j):
        p = and_or.pipes[j]
        if len(p.cmds) != 1 or p.cmds[0].kind != 'simple':
            return
        c = p.cmds[0]
        if not getattr(c, 'ktap', False) or len(p.cmds) > 1:
            return
        ok = (j < len(and_or.ops) and and_or.ops[j] == '||' and not p.bang)
        if ok:
            nxt = and_or.pipes[j + 1]
            n = nxt.cmds[0]
            ok = (len(nxt.cmds) == 1 and n.kind == 'simple' and not n.argv and
                  [a.text for a in n.assigns] == ['_any_failed=1'])
        if not ok:
            self.report(c.line, 'ktap-status',
                        f'{c.argv[0].plain()} prints its own KTAP: "|| _any_failed=1" after it')


def parse_all(toks):
    p = Parser(toks)
    tree = p.parse_list()
    if p.i != len(toks):
        tok = toks[p.i]
        raise ParseError(f'line {tok.line}: unexpected {tok.text!r}')
    return tree


def lint_file(path, role):
    with open(path, errors='replace') as f:
        text = f.read()
    lint = Lint(path, role)
    try:
        lint.walk(parse_all(Lexer(text).tokens()))
    except (ParseError, RecursionError) as e:
        lint.report(0, 'parse', f'cannot lint: {e}')
        return lint.found
    if role == 'test' and not lint.has_expect:
        lint.report(1, 'no-expect', 'no expect_suites line: the host cannot miss a suite')
    return lint.found


def targets(arg):
    if os.path.isfile(arg):
        return [(arg, 'lib' if arg.endswith('lib.sh') else
                 'init' if os.path.basename(arg) == 'init' else 'test')]
    out = []
    tdir = os.path.join(arg, 'tests')
    gdir = os.path.join(arg, 'guest')
    if os.path.isdir(tdir) or os.path.isdir(gdir):
        if os.path.isdir(tdir):
            out += [(os.path.join(tdir, f), 'test') for f in sorted(os.listdir(tdir))
                    if f.endswith('.guest.sh')]
        for f, role in (('lib.sh', 'lib'), ('init', 'init')):
            if os.path.isfile(os.path.join(gdir, f)):
                out.append((os.path.join(gdir, f), role))
    else:
        out += [(os.path.join(arg, f), 'test') for f in sorted(os.listdir(arg))
                if f.endswith('.sh')]
    return out


def lint_paths(args):
    found, n = [], 0
    for a in args:
        if not os.path.exists(a):
            print(f'lint-tests: no {a}', file=sys.stderr)
            sys.exit(2)
        for path, role in targets(a):
            n += 1
            found += lint_file(path, role)
    return found, n


def selftest():
    top = os.path.join(HERE, 'judge-fixtures', 'lint')
    bad = 0
    fixtures = sorted(d for d in os.listdir(top) if os.path.isdir(os.path.join(top, d)))
    for fx in fixtures:
        rule = fx.split('.')[0]     # RULE or RULE.VARIANT
        found, _ = lint_paths([os.path.join(top, fx)])
        named = [f for f in found if f'[{rule}]' in f]
        if named:
            print(f'ok   {fx}: the lint fails it: {named[0].split(": ", 1)[1]}')
        else:
            bad = 1
            print(f'FAIL {fx}: the lint does not fail it for [{rule}]'
                  + (f' (only: {"; ".join(found)})' if found else ''))
    if not fixtures:
        print(f'FAIL no fixture in {top}')
        bad = 1
    return bad


if ARGS[:1] == ['--selftest']:
    sys.exit(selftest())
if any(a.startswith('-') for a in ARGS):
    print('usage: qemu/lint-tests.sh [DIR|FILE...] | --selftest', file=sys.stderr)
    sys.exit(2)
found, n = lint_paths(ARGS or [HERE])
for f in found:
    print(f)
print(f'lint-tests: {n} files, {len(found)} findings', file=sys.stderr)
sys.exit(1 if found else 0)
EOF
