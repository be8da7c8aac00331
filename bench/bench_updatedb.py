"""Benchmark: updatedb of a synthetic 1M-URL crawldb with one segment holding 100k fetch records
and 500k outlinks (half of them to new URLs). Prints wall time, records/s and peak RSS.

    python bench/bench_updatedb.py [--urls 1000000] [--fetched 100000] [--links 500000]
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

from beamcrawl.transforms.dbio import write_avro_file  # noqa: E402
from beamcrawl.transforms.records import CRAWL_DATUM_SCHEMA, crawl_datum  # noqa: E402

NOW = 1795305600000
DAY = 86400000


def url(i):
    return f'http://www.h{i % 10000}.example.com/page/{i}.html'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--urls', type=int, default=1000000)
    parser.add_argument('--fetched', type=int, default=100000)
    parser.add_argument('--links', type=int, default=500000)
    args = parser.parse_args()
    rnd = random.Random(3)
    work = tempfile.mkdtemp(prefix='bench-updatedb-')
    crawl = os.path.join(work, 'crawl')
    start = time.time()
    db = os.path.join(crawl, 'crawldb', 'current')
    step = args.urls // 4
    for part in range(4):
        write_avro_file(os.path.join(db, f'part-{part:05d}.avro'), CRAWL_DATUM_SCHEMA, [
            crawl_datum(url(i), 'db_fetched' if i % 3 else 'db_unfetched',
                        fetch_time=NOW - rnd.randint(0, 30) * DAY, fetch_interval=2592000,
                        score=1.0, signature=b'%016d' % (i % 7))
            for i in range(part * step, (part + 1) * step)])
    segment = os.path.join(crawl, 'segments', '20261122000000')
    statuses = ['fetch_success'] * 7 + ['fetch_retry', 'fetch_gone', 'fetch_redir_perm']
    write_avro_file(os.path.join(segment, 'crawl_fetch', 'part-00000.avro'), CRAWL_DATUM_SCHEMA, [
        crawl_datum(url(i), statuses[i % 10], fetch_time=NOW, fetch_interval=2592000, score=1.0,
                    protocol_status='success')
        for i in rnd.sample(range(args.urls), args.fetched)])
    parse = [crawl_datum(url(i), 'signature', fetch_time=NOW, fetch_interval=0,
                         signature=b'%016d' % (i % 5)) for i in range(0, args.urls, 10)][:args.fetched]
    parse += [crawl_datum(url(rnd.randrange(args.urls) if k % 2 else args.urls + k), 'linked',
                          fetch_time=NOW, fetch_interval=2592000, score=0.05)
              for k in range(args.links)]
    write_avro_file(os.path.join(segment, 'crawl_parse', 'part-00000.avro'), CRAWL_DATUM_SCHEMA,
                    parse)
    print(f'built: {args.urls} crawldb records, {args.fetched} fetch records, {args.links} '
          f'outlinks ({time.time() - start:.0f} s)')
    start = time.time()
    proc = subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'updatedb', crawl,
                           '--now', str(NOW)], cwd=ROOT, capture_output=True, text=True)
    wall = time.time() - start
    if proc.returncode != 0:
        print(proc.stderr[-3000:])
        sys.exit(1)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    total = args.urls + args.fetched + len(parse)
    print(f'updatedb: {wall:.1f} s wall, {total / wall:.0f} input records/s, peak RSS {peak:.0f} MB')
    print('  ' + proc.stdout.strip()[:300])
    shutil.rmtree(work)


if __name__ == '__main__':
    main()
