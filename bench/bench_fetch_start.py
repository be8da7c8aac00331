"""Benchmark: a fetch's start-up, many short fetches of one prepared segment, interleaved.

bench_fetch.py's web (120 hosts × 2 pages by default, delay 1 s, 4 slow hosts); each run fetches
a fresh copy of the same generated segment. Prints, over the runs, the median and the fastest
time from the command's start to its first request, to the first page of the host that ends
last, and the whole command beyond M (its minimal makespan). A single run spreads by more than
most start-up changes are worth on a busy 2-core machine: compare medians of ten runs or more,
with `--against REV` (that revision's code, run alternately with this tree's).

    python bench/bench_fetch_start.py [--runs 10] [--hosts 120] [--pages 2] [--slow 4]
                                      [--against REV]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'bench'))

import bench_fetch  # noqa: E402
from bench_batch import _tree_of  # noqa: E402

from tests.testweb import TestWeb  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    bench_fetch.arguments(parser)
    parser.set_defaults(hosts=120, pages=2, slow=4)
    parser.add_argument('--runs', type=int, default=10)
    parser.add_argument('--against', metavar='REV', help='also run git revision REV, alternately')
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='bench-fetch-start-')
    trees = {'this tree': None}
    if args.against:
        trees = {f'@{args.against}': _tree_of(args.against, work), 'this tree': None}
    figures = {name: [] for name in trees}
    sites = bench_fetch.build_sites(args)
    try:
        with TestWeb(sites) as web:
            conf = bench_fetch.prepare(web, sites, args, os.path.join(work, 'crawl'),
                                       os.path.join(work, 'seeds.txt'))
            for run in range(args.runs):
                for name, path in trees.items():
                    crawl = os.path.join(work, f'run{run}-{len(figures[name])}-{name[:4]}')
                    shutil.copytree(os.path.join(work, 'crawl'), crawl)
                    env = {k: v for k, v in bench_fetch.ENV.items() if k != 'PYTHONPATH'}
                    if path is not None:
                        env['PYTHONPATH'] = path
                    web.clear_log()
                    start = time.time()
                    proc = subprocess.run(bench_fetch.CLI + ['fetch', crawl, '--threads',
                                                             str(args.threads)] + conf,
                                          cwd=ROOT, capture_output=True, text=True, env=env)
                    end = time.time()
                    if proc.returncode != 0:
                        print(proc.stderr[-3000:])
                        sys.exit(1)
                    f = bench_fetch.fetch_figures(web, args, start, end)
                    figures[name].append((f['first_request'], f['first_page'] + f['last_host_start'],
                                          f['wall'] - f['m']))
                    shutil.rmtree(crawl)
    finally:
        if args.against:
            subprocess.run(['git', 'worktree', 'remove', '--force', os.path.join(work, 'against')],
                           cwd=ROOT, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f'{args.hosts} hosts x {args.pages} pages, delay {args.delay} s, {args.slow} slow hosts; '
          f'{args.runs} runs each; seconds from the command\'s start (median, fastest)')
    for name, rows in figures.items():
        first, last_host, beyond = zip(*rows)
        print(f'{name:>16}: first request {statistics.median(first):.3f} ({min(first):.3f}); '
              f'first page of the host that ends last {statistics.median(last_host):.3f} '
              f'({min(last_host):.3f}); whole command beyond M {statistics.median(beyond):.3f} '
              f'({min(beyond):.3f})')


if __name__ == '__main__':
    main()
