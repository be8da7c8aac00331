"""Benchmark: generate over a synthetic crawldb.

Builds a crawldb of N URLs (default 1,000,000) over H hosts (default 10,000) with skewed host
sizes (Zipf-like), mixed statuses, scores and fetch times, written with fastavro in 4 parts;
then times `generate --top-n 100000 -D generate.max.count=50` on the local runner and prints
wall time, records/s and peak RSS.

    python bench/bench_generate.py [--urls N] [--hosts H] [--top-n T] [--max-count C] [--keep DIR]
"""

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from beamcrawl.transforms.storage.partwriter import write_avro_file  # noqa: E402
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum  # noqa: E402

NOW = 1795305600000
DAY = 86400000
STATUSES = ['db_unfetched'] * 5 + ['db_fetched'] * 3 + ['db_gone', 'db_redir_temp',
                                                        'db_notmodified']


def build(crawl, urls, hosts, parts=4):
    rnd = random.Random(42)
    weights = [1.0 / (h + 1) for h in range(hosts)]
    host_of = rnd.choices(range(hosts), weights=weights, k=urls)

    def records(first, end):        # made as they are written: 10M records do not fit twice
        for i in range(first, min(end, urls)):
            yield crawl_datum(
                f'http://www.h{host_of[i]}.example.com/page/{i}.html', STATUSES[i % len(STATUSES)],
                fetch_time=NOW + rnd.randint(-30, 10) * DAY, fetch_interval=2592000,
                score=round(rnd.random() * 3, 3), retries=rnd.choice((0, 0, 0, 1)))
    directory = os.path.join(crawl, 'crawldb', 'current')
    step = (urls + parts - 1) // parts
    for p in range(parts):
        write_avro_file(os.path.join(directory, f'part-{p:05d}.avro'), CRAWL_DATUM_SCHEMA,
                        records(p * step, (p + 1) * step))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--urls', type=int, default=1000000)
    parser.add_argument('--hosts', type=int, default=10000)
    parser.add_argument('--top-n', type=int, default=100000)
    parser.add_argument('--max-count', type=int, default=50)
    parser.add_argument('--keep', help='work in this directory and keep it')
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix='bench-generate-')
    crawl = os.path.join(work, 'crawl')
    if not os.path.exists(os.path.join(crawl, 'crawldb')):
        start = time.time()
        build(crawl, args.urls, args.hosts)
        print(f'built a {args.urls}-URL crawldb over {args.hosts} hosts in '
              f'{time.time() - start:.1f} s')
    runners = {
        'pinned local runner (1 process)': [],
        'local runner, 2 worker processes': ['--direct_num_workers=2',
                                             '--direct_running_mode=multi_processing'],
    }
    for label, extra in runners.items():
        cmd = [sys.executable, '-m', 'beamcrawl.pipelines.cli', 'generate', crawl,
               '--top-n', str(args.top_n), '-D', f'generate.max.count={args.max_count}',
               '--num-fetchers', '2', '--now', str(NOW), *extra]
        start = time.time()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.time() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if proc.returncode != 0:
            print(proc.stderr)
            sys.exit(proc.returncode)
        selected = [l for l in proc.stderr.splitlines() if 'generate: ' in l]
        print(f'{label}: generate --top-n {args.top_n} -D generate.max.count={args.max_count}: '
              f'{wall:.1f} s wall, {args.urls / wall:.0f} crawldb records/s, '
              f'peak RSS of any process so far {peak:.0f} MB')
        print('  ' + (selected[-1].split('INFO ')[-1] if selected else ''))
    if not args.keep:
        shutil.rmtree(work)


if __name__ == '__main__':
    main()
