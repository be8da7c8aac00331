"""Benchmark: `beamcrawl report` of a 1M-URL crawl, on the local runner.

The crawl: bench_updatedb's 1M-URL crawldb over 10k hosts (8 parts by URL hash, as updatedb
writes them) and its segment (100k fetch records, 100k signatures, 500k outlinks), with a
crawl_generate of the fetched URLs and a linkdb of 100k pages with 5 inlinks each. Prints one
line: wall time, CPU time and peak RSS of the command's process tree, crawldb records/s, and
the size of the page.

    python bench/bench_report.py [--urls 1000000] [--runs 1] [--keep DIR]
"""

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import bench_updatedb  # noqa: E402
from measure import beamcrawl, best_of  # noqa: E402


def build(crawl, urls):
    from beamcrawl.transforms.storage.fs import part_file
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import iter_records
    from beamcrawl.transforms.storage.partwriter import write_avro_file
    from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, INLINKS_SCHEMA,
                                                      crawl_datum, inlinks)
    bench_updatedb.build(crawl, urls, urls // 10, urls // 2)
    layout = CrawlLayout(crawl)
    segment = '20261122000000'
    fetched = [r['url'] for r in iter_records(layout.part_files(segment, 'crawl_fetch'))]
    write_avro_file(part_file(layout.segment_part(segment, 'crawl_generate'), 0),
                    CRAWL_DATUM_SCHEMA, (
                        crawl_datum(u, 'db_fetched', fetch_time=bench_updatedb.NOW,
                                    fetch_interval=2592000, signature=b'%016d' % 1)
                        for u in fetched))
    rng = random.Random(7)
    pages = sorted(bench_updatedb.url(i) for i in range(1, urls, 10))
    write_avro_file(part_file(layout.linkdb.current, 0), INLINKS_SCHEMA, (
        inlinks(u, [(bench_updatedb.url(rng.randrange(urls)), 'anchor') for _ in range(5)])
        for u in pages))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--urls', type=int, default=1000000)
    parser.add_argument('--runs', type=int, default=1)
    parser.add_argument('--keep', help='work in this directory and keep it')
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix='bench-report-')
    crawl = os.path.join(work, 'crawl')
    if not os.path.exists(os.path.join(crawl, 'crawldb')):
        start = time.time()
        build(crawl, args.urls)
        print(f'  (built the crawl in {time.time() - start:.0f} s)')
    out = os.path.join(work, 'report.html')
    result = best_of(args.runs, 'report', lambda: beamcrawl('report', crawl, '-o', out),
                     records=args.urls)
    print(f'{os.cpu_count()} cores, {args.urls:,} crawldb URLs')
    print(result.line() + f'   page {os.path.getsize(out) / 1024:.0f} kB')
    if not args.keep:
        shutil.rmtree(work)


if __name__ == '__main__':
    main()
