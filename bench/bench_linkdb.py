"""Benchmark: invertlinks of 100k parse_data records × 20 outlinks over 10k hosts into an
existing 1M-entry linkdb. Prints wall time and peak RSS.

    python bench/bench_linkdb.py [--pages 100000] [--links 20] [--existing 1000000]
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

from beamcrawl.transforms.policy.partition import partition  # noqa: E402
from beamcrawl.transforms.storage.partwriter import write_avro_file  # noqa: E402
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, INLINKS_SCHEMA,
                                                  PARSE_DATA_SCHEMA, inlinks, parse_data)


def url(i):
    return f'http://www.h{i % 10000}.example.com/page/{i}.html'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pages', type=int, default=100000)
    parser.add_argument('--links', type=int, default=20)
    parser.add_argument('--existing', type=int, default=1000000)
    parser.add_argument('--partitions', type=int, default=8, help='linkdb.partitions')
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='bench-linkdb-')
    crawl = os.path.join(work, 'crawl')
    start = time.time()
    build(crawl, args.pages, args.links, args.existing, args.partitions)
    print(f'built: {args.existing} linkdb entries, {args.pages} pages × {args.links} outlinks '
          f'over 10000 hosts ({time.time() - start:.0f} s)')
    runners = {'pinned local runner (1 process)': [],
               'local runner, 2 worker processes': ['--direct_num_workers=2',
                                                    '--direct_running_mode=multi_processing']}
    for label, extra in runners.items():
        shutil.rmtree(f'{crawl}/linkdb/old', ignore_errors=True)
        start = time.time()
        proc = subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'invertlinks',
                               crawl, '20261122000000', '-D', f'linkdb.partitions={args.partitions}',
                               *extra], cwd=ROOT, capture_output=True, text=True)
        wall = time.time() - start
        if proc.returncode != 0:
            print(proc.stderr[-3000:])
            sys.exit(1)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f'{label}: invertlinks {wall:.1f} s wall, peak RSS of any process so far '
              f'{peak:.0f} MB')
        print('  ' + proc.stdout.strip())
    shutil.rmtree(work)


def build(crawl, pages, links, existing, partitions):
    """An existing linkdb of `existing` entries in the layout invertlinks writes (none for 0) and
    one segment of `pages` parse_data records with `links` outlinks each, to targets among
    2 × max(existing, pages) URLs."""
    rnd = random.Random(5)
    if existing:
        parts = {p: [] for p in range(partitions)}
        for i in range(existing):
            parts[partition(url(i), partitions)].append(
                inlinks(url(i), [(url(rnd.randrange(existing)), f'anchor {i % 97}')]))
        for index, records in parts.items():
            write_avro_file(f'{crawl}/linkdb/current/part-{index:05d}.avro', INLINKS_SCHEMA,
                            records)
        with open(f'{crawl}/linkdb/current/_partitions', 'w') as f:
            f.write(str(partitions))
    universe = 2 * max(existing, pages)
    segment = f'{crawl}/segments/20261122000000'
    write_avro_file(f'{segment}/parse_data/part-00000.avro', PARSE_DATA_SCHEMA, [
        parse_data(url(i), title='t', parse_status='success', outlinks=[
            (url(rnd.randrange(universe)), f'link text {k}') for k in range(links)])
        for i in range(pages)])
    write_avro_file(f'{segment}/crawl_parse/part-00000.avro', CRAWL_DATUM_SCHEMA, [])

if __name__ == '__main__':
    main()
