#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host daemon of a bench run: the guest's synchronous line to the host.

The guest writes one line to its second serial port (/dev/ttyS1) and waits
for the one-line reply. Commands:

    check KIND ...          a byte check (qemu/hostcheck.py), done now
    qmp COMMAND [JSON]      a QMP command (e.g. device_del {"id": "bar0"})
    cputime                 the host CPU time QEMU has used so far, for the
                            benchmarks: "ok VCPU_NS QEMU_NS MAIN_NS", its
                            vCPU threads' (from their schedstat, in ns: what
                            the guest's CPUs ran, emulated traps included,
                            without the time a vCPU waited for QEMU's lock
                            or for a host core), the whole process's
                            (utime + stime, the device models and their
                            I/O workers too; tick precision) and its main
                            loop thread's (schedstat), which runs the
                            device models
    note TEXT               recorded in the run's hostd.log

Replies start with "ok" or "not ok". Check results are appended to
RUN/hostd.results, which hostcheck.py turns into KTAP after the run.

  hostd.py RUN_DIR
  hostd.py --diag RUN_DIR   what a silent boot's QEMU is doing (its state,
                            the vCPUs' registers), for run.sh before it
                            kills a boot that printed nothing
"""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostcheck import do_check  # noqa: E402


def connect(path, timeout=60):
    end = time.time() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.time() > end:
                raise
            time.sleep(0.05)


class Qmp:
    def __init__(self, path):
        self.s = connect(path)
        self.f = self.s.makefile('rw')
        json.loads(self.f.readline())          # greeting
        self.cmd('qmp_capabilities')

    def cmd(self, name, args=None):
        self.f.write(json.dumps({'execute': name, 'arguments': args or {}}) + '\n')
        self.f.flush()
        while True:
            r = json.loads(self.f.readline())
            if 'return' in r or 'error' in r:
                return r


def cputime(qmp):
    """QEMU's CPU time so far, in ns: its vCPU threads', the whole
    process's and its main thread's."""
    r = qmp.cmd('query-cpus-fast')
    tids = [c['thread-id'] for c in r['return']]
    vcpu = 0
    for t in tids:
        with open(f'/proc/{t}/schedstat') as f:
            vcpu += int(f.read().split()[0])
    with open(f'/proc/{tids[0]}/status') as f:
        tgid = next(int(l.split()[1]) for l in f if l.startswith('Tgid:'))
    with open(f'/proc/{tgid}/stat') as f:
        # after the command name, which may hold spaces: utime, stime are
        # fields 14 and 15 of stat(5)
        fields = f.read().rsplit(')', 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    with open(f'/proc/{tgid}/task/{tgid}/schedstat') as f:
        main = int(f.read().split()[0])
    return vcpu, ticks * 1000000000 // os.sysconf('SC_CLK_TCK'), main


def main():
    run = sys.argv[1]
    sock = connect(os.path.join(run, 'hostd.sock'))
    qmp = None
    log = open(os.path.join(run, 'hostd.log'), 'a')
    results = open(os.path.join(run, 'hostd.results'), 'a')
    buf = b''
    while True:
        data = sock.recv(4096)
        if not data:
            break
        buf += data
        while b'\n' in buf:
            raw, buf = buf.split(b'\n', 1)
            line = raw.decode('utf-8', 'replace').strip()
            if not line:
                continue
            words = line.split()
            if words[0] == 'check':
                st, desc, note = do_check(run, words[1:])
                if st is None:      # bookkeeping, not a check
                    reply = f'ok {note}'
                else:
                    results.write(f'{st}\t{desc}\n')
                    results.flush()
                    reply = f'{st} {desc}' + (f' ({note})' if note else '')
            elif words[0] == 'qmp':
                try:
                    qmp = qmp or Qmp(os.path.join(run, 'qmp.sock'))
                    args = json.loads(line.split(None, 2)[2]) if len(words) > 2 else None
                    r = qmp.cmd(words[1], args)
                    reply = 'ok' if 'return' in r else f'not ok {r["error"].get("desc")}'
                except (OSError, ValueError) as e:
                    reply = f'not ok {e}'
            elif words[0] == 'cputime':
                try:
                    qmp = qmp or Qmp(os.path.join(run, 'qmp.sock'))
                    reply = 'ok %d %d %d' % cputime(qmp)
                except (OSError, ValueError, KeyError, IndexError, StopIteration) as e:
                    reply = f'not ok {e}'
            elif words[0] == 'note':
                reply = 'ok'
            else:
                reply = f'not ok unknown command {words[0]}'
            log.write(f'{line} -> {reply}\n')
            log.flush()
            sock.sendall((reply + '\n').encode())


def diag(run):
    """QEMU's state and vCPU registers: where a boot that printed nothing is."""
    qmp = Qmp(os.path.join(run, 'qmp.sock'))
    print(json.dumps(qmp.cmd('query-status')))
    for hmp in ('info cpus', 'info registers -a'):
        r = qmp.cmd('human-monitor-command', {'command-line': hmp})
        print(f'# {hmp}')
        print(r.get('return', r))


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--diag':
        diag(sys.argv[2])
    else:
        main()
