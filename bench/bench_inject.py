"""Benchmark: inject N seed URLs into a new crawldb, re-inject them into the full crawldb, then
`readdb --stats`. Prints wall time, records/s and the peak RSS of each command.

    python bench/bench_inject.py [--urls 200000] [--hosts 10000] [--keep DIR]
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(label, args, records):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.time()
    subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', *args], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.time() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    note = '' if peak > before else ' (peak not above an earlier command)'
    print(f'{label:<28} {wall:7.1f} s  {records / wall:9.0f} records/s  '
          f'peak RSS {peak / 1024:6.0f} MB{note}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--urls', type=int, default=200000)
    parser.add_argument('--hosts', type=int, default=10000)
    parser.add_argument('--keep', help='work in this directory and keep it')
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix='bench-inject-')
    os.makedirs(work, exist_ok=True)
    seeds = os.path.join(work, 'seeds.txt')
    with open(seeds, 'w') as f:
        for i in range(args.urls):
            f.write(f'http://www.h{i % args.hosts}.example.com/p/{i}.html\tscore={i % 7}\n')
    crawl = os.path.join(work, 'crawl')
    print(f'{args.urls} seed URLs over {args.hosts} hosts, {os.cpu_count()} cores')
    timed('inject (new crawldb)', ['inject', crawl, seeds], args.urls)
    timed('inject (all known)', ['inject', crawl, seeds], args.urls)
    timed('readdb --stats', ['readdb', crawl, '--stats'], args.urls)
    if not args.keep:
        shutil.rmtree(work)


if __name__ == '__main__':
    main()
