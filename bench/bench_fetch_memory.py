"""Benchmark: the fetch command's peak memory does not grow with the number of pages.

Fetches N pages of SIZE bytes from a local web of 10 hosts (no politeness delay), for N = 300
and N = 3000 by default, and prints the fetch command's peak RSS and wall time for each. With
results journaled as they complete, the two peaks are about equal: memory is bounded by the
fetch threads and http.content.limit, not by the segment.

    python bench/bench_fetch_memory.py [--pages 300,3000] [--size 1000000] [--threads 10]
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
sys.path.insert(0, ROOT)

from tests.testweb import Page, TestWeb  # noqa: E402


def run(pages: int, size: int, threads: int) -> None:
    body = b'<html><body>' + b'x' * max(0, size - 26) + b'</body></html>'
    sites = {f'h{h}.mem.test': {f'/p{i}': Page(body=body) for i in range(pages // 10)}
             for h in range(10)}
    for routes in sites.values():
        routes['/robots.txt'] = Page(status=404)
    work = tempfile.mkdtemp(prefix='bench-fetch-memory-')
    crawl, seeds = os.path.join(work, 'crawl'), os.path.join(work, 'seeds.txt')
    with open(seeds, 'w') as f:
        f.write(''.join(f'http://{host}/p{i}\n' for host in sites for i in range(pages // 10)))
    try:
        with TestWeb(sites) as web:
            conf = ['-D', 'http.agent.name=benchbot', '-D', 'http.proxy.host=127.0.0.1',
                    '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
                    '-D', 'domain.extra.suffixes=test', '-D', f'http.content.limit={size}',
                    '--threads', str(threads)]
            cli = [sys.executable, '-m', 'beamcrawl.pipelines.cli']
            for step in (['inject', crawl, seeds], ['generate', crawl]):
                subprocess.run(cli + step + conf[:-2], cwd=ROOT, check=True,
                               capture_output=True)
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            start = time.time()
            subprocess.run(cli + ['fetch', crawl] + conf, cwd=ROOT, check=True,
                           capture_output=True)
            wall = time.time() - start
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        note = '' if peak > before else ' (not above an earlier command: see the larger run)'
        print(f'{pages:6d} pages of {size / 1e6:.1f} MB: peak RSS {peak / 1024:6.0f} MB, '
              f'{wall:5.1f} s, {pages / wall:6.0f} pages/s{note}', flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pages', default='300,3000')
    parser.add_argument('--size', type=int, default=1000000)
    parser.add_argument('--threads', type=int, default=10)
    args = parser.parse_args()
    for pages in sorted(int(n) for n in args.pages.split(',')):
        run(pages, args.size, args.threads)


if __name__ == '__main__':
    main()
