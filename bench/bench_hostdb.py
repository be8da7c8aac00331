"""Benchmark: updatehostdb on generate's 1M-URL workload, then generate without and with the
hostdb (a skip rule, a per-host max count and a per-host delay from expressions).

    python bench/bench_hostdb.py [--urls 1000000] [--hosts 10000] [--runs 3]

The crawldb is bench_generate.py's (Zipf-like host sizes, half unfetched, a quarter of the
records with a retry); updatehostdb reads it whole (no segment). generate runs as
bench_batch.py's (--top-n a tenth of the URLs, generate.max.count=50); with the hostdb it adds
`generate.max.count.expr=unfetched > 100 ? 20 : 50` and `generate.fetch.delay.expr=
connectionFailures > 10 ? 5000 : -1`. Each line is the best of --runs runs.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import bench_generate  # noqa: E402
from measure import beamcrawl, best_of  # noqa: E402

NOW = str(bench_generate.NOW)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--urls', type=int, default=1000000)
    parser.add_argument('--hosts', type=int, default=10000)
    parser.add_argument('--runs', type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='bench-hostdb-')
    crawl = os.path.join(work, 'crawl')
    try:
        start = time.time()
        bench_generate.build(crawl, args.urls, args.hosts)
        print(f'built a {args.urls}-URL crawldb over {args.hosts} hosts in '
              f'{time.time() - start:.1f} s')
        hostdb = os.path.join(crawl, 'hostdb')
        print(best_of(args.runs, 'updatehostdb',
                      lambda: beamcrawl('updatehostdb', crawl, '--now', NOW), args.urls,
                      before=lambda: shutil.rmtree(hostdb, ignore_errors=True)).line())
        segments = os.path.join(crawl, 'segments')
        generate = ['generate', crawl, '--top-n', str(args.urls // 10), '-D',
                    'generate.max.count=50', '--num-fetchers', '2', '--now', NOW]
        with_hostdb = ['--hostdb', '-D', 'generate.max.count.expr=unfetched > 100 ? 20 : 50',
                       '-D', 'generate.fetch.delay.expr=connectionFailures > 10 ? 5000 : -1']
        for label, extra in (('generate', []), ('generate --hostdb', with_hostdb)):
            result = best_of(args.runs, label, lambda: beamcrawl(*generate, *extra), args.urls,
                             before=lambda: shutil.rmtree(segments, ignore_errors=True))
            print(result.line())
            said = [line.split('INFO')[-1].strip() for line in result.stderr.splitlines()
                    if 'generate.hostdb.' in line or 'generate: ' in line
                    or 'host_skipped' in line]
            for line in said:
                print('    ' + line)
    finally:
        shutil.rmtree(work)


if __name__ == '__main__':
    main()
