"""One command, measured: wall time, CPU time and peak memory of its whole process tree.

Beamcrawl's batch stages may run their work in worker processes (docs/performance.md), so the
peak RSS of the driver alone says little: the tree's resident memory is summed from /proc every
20 ms while the command runs (Linux), and the CPU time is the user + system time of the command
and every descendant it waited for. Each measured command prints one line:

    updatedb                     9.1 s wall   14.6 s CPU   1.23 GB peak RSS   190000 records/s
"""

import os
import subprocess
import sys
import threading
import time
from typing import List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PAGE = os.sysconf('SC_PAGE_SIZE') if hasattr(os, 'sysconf') else 4096


def _children(pid: int) -> List[int]:
    try:
        with open(f'/proc/{pid}/task/{pid}/children') as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _tree_rss(pid: int) -> int:
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f'/proc/{p}/statm') as f:
                total += int(f.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            continue
        stack.extend(_children(p))
    return total


class Result:
    def __init__(self, label, wall, cpu, peak, records, returncode, stdout, stderr):
        self.label, self.wall, self.cpu, self.peak = label, wall, cpu, peak
        self.records, self.returncode = records, returncode
        self.stdout, self.stderr = stdout, stderr

    def line(self) -> str:
        rate = f'   {self.records / self.wall:9.0f} records/s' if self.records else ''
        return (f'{self.label:<28} {self.wall:6.1f} s wall {self.cpu:6.1f} s CPU '
                f'{self.peak / 2 ** 30:5.2f} GB peak RSS{rate}')


def measure(label: str, argv: List[str], records: int = 0, cwd: Optional[str] = None,
            env: Optional[dict] = None) -> Result:
    """Runs `argv` to the end; raises SystemExit with its stderr when it fails."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd or ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out_chunks, err_chunks = [], []
    readers = [threading.Thread(target=lambda s=s, c=c: c.append(s.read()), daemon=True)
               for s, c in ((proc.stdout, out_chunks), (proc.stderr, err_chunks))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    for r in readers:
        r.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    # Not usage.ru_maxrss: Linux carries a process's peak over fork and exec, so a command
    # started by a bench that holds its workload in memory would report the bench's size.
    result = Result(label, wall, usage.ru_utime + usage.ru_stime, peak[0], records,
                    proc.returncode, ''.join(out_chunks), ''.join(err_chunks))
    if proc.returncode != 0:
        sys.stderr.write(result.stderr[-3000:])
        raise SystemExit(f'{label}: exit {proc.returncode}')
    return result


def beamcrawl(*args: str) -> List[str]:
    """The argv of a beamcrawl command run with this interpreter."""
    return [sys.executable, '-m', 'beamcrawl.pipelines.cli', *args]


def best_of(runs: int, label: str, argv_of, records: int = 0, before=None) -> Result:
    """The fastest of `runs` runs; `before()` (if given) resets the state before each run and
    `argv_of()` gives the command."""
    best = None
    for _ in range(runs):
        if before:
            before()
        result = measure(label, argv_of(), records)
        if best is None or result.wall < best.wall:
            best = result
    return best
