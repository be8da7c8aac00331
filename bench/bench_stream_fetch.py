"""Benchmark: the polite regime of bench_fetch.py, fetched by the streaming fetch on the local
Flink cluster (`fetch --streaming`) and by the batch fetch on the local runner, on the same
generated segment (two copies of one crawl dir) and the same local web.

Prints, for each: the fetch stage (first request start to last request end, from the server's
log) against the minimal makespan M, the whole command's wall time, and the smallest and median
gap between consecutive requests to a host. The first run assembles the cluster in .flink/
(docs/streaming-fetch.md).

    python bench/bench_stream_fetch.py [--hosts 100] [--pages 10] [--slow 4] [--delay 1.0]
                                       [--threads 30] [--parallelism 2]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from bench_fetch import CLI, ROOT, arguments, build_sites, fetch_figures, prepare  # noqa: E402

from beamcrawl.transforms.runners.localflink import LocalFlink  # noqa: E402
from tests.testweb import TestWeb  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    arguments(parser)
    parser.set_defaults(hosts=100, pages=10, slow=4)
    parser.add_argument('--parallelism', type=int, default=2)
    args = parser.parse_args()
    flink = LocalFlink(os.path.join(ROOT, '.flink'))
    flink.prepare()
    flink.start()
    sites = build_sites(args)
    work = tempfile.mkdtemp(prefix='bench-stream-fetch-')
    rows = []
    try:
        with TestWeb(sites) as web:
            batch = os.path.join(work, 'batch')
            conf = prepare(web, sites, args, batch, os.path.join(work, 'seeds.txt'))
            streaming = os.path.join(work, 'streaming')
            shutil.copytree(batch, streaming)
            for name, crawl, extra in (
                    ('streaming on Flink', streaming,
                     ['--streaming', *flink.options(), '--parallelism', str(args.parallelism)]),
                    ('batch, local runner', batch, [])):
                web.clear_log()
                start = time.time()
                proc = subprocess.run(CLI + ['fetch', crawl, '--threads', str(args.threads)] +
                                      conf + extra, cwd=ROOT, capture_output=True, text=True)
                end = time.time()
                if proc.returncode != 0:
                    print(proc.stderr[-3000:])
                    sys.exit(1)
                rows.append((name, fetch_figures(web, args, start, end)))
    finally:
        flink.stop()
        shutil.rmtree(work)
    print(f'{args.hosts} hosts x {args.pages} pages, delay {args.delay} s, {args.slow} hosts '
          f'answering in {args.slow_response} s, {args.threads} threads')
    for name, f in rows:
        print(f'{name:22} stage {f["stage"]:6.1f} s = {f["stage"] / f["m"]:.3f} x M '
              f'(M = {f["m"]:.1f} s); command {f["wall"]:6.1f} s = {f["m"] / f["wall"]:.1%} of M; '
              f'gap per host: min {f["min_gap"] * 1000:.0f} ms, median '
              f'{f["median_gap"] * 1000:.0f} ms; {f["pages"]} pages')


if __name__ == '__main__':
    main()
