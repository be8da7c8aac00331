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

from beamcrawl.transforms.engine.partitions import partitions_for  # noqa: E402
from beamcrawl.transforms.policy.partition import partition  # noqa: E402
from beamcrawl.transforms.storage.partwriter import PartWriter  # noqa: E402
from beamcrawl.transforms.storage.partwriter import write_avro_file  # noqa: E402
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum  # noqa: E402

NOW = 1795305600000
DAY = 86400000


def url(i):
    return f'http://www.h{i % 10000}.example.com/page/{i}.html'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--urls', type=int, default=1000000)
    parser.add_argument('--fetched', type=int, default=100000)
    parser.add_argument('--links', type=int, default=500000)
    parser.add_argument('--foreign', action='store_true',
                        help='a crawldb not written by beamcrawl (4 parts in URL order)')
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='bench-updatedb-')
    crawl = os.path.join(work, 'crawl')
    start = time.time()
    inputs = build(crawl, args.urls, args.fetched, args.links, native=not args.foreign)
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
    print(f'updatedb: {wall:.1f} s wall, {inputs / wall:.0f} input records/s, '
          f'peak RSS {peak:.0f} MB')
    print('  ' + proc.stdout.strip()[:300])
    shutil.rmtree(work)


def build(crawl, urls, fetched, links, native=True, signatures=7):
    """The crawldb and one segment; returns the number of input records. The crawldb is in the
    layout inject and updatedb write (native: parts by URL hash, as many as an update of this
    size chooses on this machine (8 at 1M URLs on 2 cores), each sorted by URL with its
    keys file, and the _partitions note), or else in 4 parts in index order with no note, as a
    crawldb converted from elsewhere would be (the first updatedb then maps it whole). The
    crawldb's record i has signature i mod `signatures`."""
    rnd = random.Random(3)
    db = os.path.join(crawl, 'crawldb', 'current')
    records = [crawl_datum(url(i), 'db_fetched' if i % 3 else 'db_unfetched',
                           fetch_time=NOW - rnd.randint(0, 30) * DAY, fetch_interval=2592000,
                           score=1.0, signature=b'%016d' % (i % signatures))
               for i in range(urls)]
    if native:
        total = urls + fetched + min(fetched, len(range(0, urls, 10))) + links
        count = partitions_for(0, total, os.cpu_count() or 1)
        parts = [[] for _ in range(count)]
        for record in records:
            parts[partition(record['url'], count)].append(record)
        os.makedirs(db)
        for index, part in enumerate(parts):
            part.sort(key=lambda r: r['url'])
            with PartWriter(os.path.join(db, f'part-{index:05d}.avro'), CRAWL_DATUM_SCHEMA,
                            keys=True) as out:
                for record in part:
                    out.write(record)
        with open(os.path.join(db, '_partitions'), 'w') as f:
            f.write(str(count))
    else:
        step = urls // 4
        for index in range(4):
            write_avro_file(os.path.join(db, f'part-{index:05d}.avro'), CRAWL_DATUM_SCHEMA,
                            records[index * step:(index + 1) * step])
    del records
    segment = os.path.join(crawl, 'segments', '20261122000000')
    statuses = ['fetch_success'] * 7 + ['fetch_retry', 'fetch_gone', 'fetch_redir_perm']
    write_avro_file(os.path.join(segment, 'crawl_fetch', 'part-00000.avro'), CRAWL_DATUM_SCHEMA, [
        crawl_datum(url(i), statuses[i % 10], fetch_time=NOW, fetch_interval=2592000, score=1.0,
                    protocol_status='success')
        for i in rnd.sample(range(urls), fetched)])
    parse = [crawl_datum(url(i), 'signature', fetch_time=NOW, fetch_interval=0,
                         signature=b'%016d' % (i % 5)) for i in range(0, urls, 10)][:fetched]
    parse += [crawl_datum(url(rnd.randrange(urls) if k % 2 else urls + k), 'linked',
                          fetch_time=NOW, fetch_interval=2592000, score=0.05)
              for k in range(links)]
    write_avro_file(os.path.join(segment, 'crawl_parse', 'part-00000.avro'), CRAWL_DATUM_SCHEMA,
                    parse)
    return urls + fetched + len(parse)


if __name__ == '__main__':
    main()
