"""Benchmark: index N synthetic parsed pages, then query the index.

Builds a crawl directory of N fetched pages (about 2 KB of text each, 50 inlinks anchors spread
over them) in one parsed segment, runs `beamcrawl index` (dedup included) and prints documents
per second, peak RSS and the index size; then runs Q queries through the search code and prints
the median and 95th-percentile latency.

    python bench/bench_index.py [--pages 100000] [--queries 200]
"""

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from beamcrawl.transforms.storage.fs import part_file
from beamcrawl.transforms.storage.layout import CrawlLayout  # noqa: E402
from beamcrawl.transforms.storage.partwriter import write_avro_file  # noqa: E402
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, INLINKS_SCHEMA,  # noqa: E402
                                                  PARSE_DATA_SCHEMA, PARSE_TEXT_SCHEMA, crawl_datum,
                                                  inlinks, parse_data, parse_text)
from beamcrawl.transforms.storage.shards import search  # noqa: E402

WORDS = ('crawler search index page web link anchor text politeness fetch schedule host '
         'domain robots segment shard query score boost signature parse content title '
         'freshness adaptive interval budget').split()


def build(crawl: str, pages: int) -> None:
    rng = random.Random(7)
    layout = CrawlLayout(crawl)
    segment = '20261122000000'
    urls = [f'http://h{i % 2000}.bench.test/p{i}' for i in range(pages)]
    write_avro_file(part_file(layout.crawldb.current, 0), CRAWL_DATUM_SCHEMA, (
        crawl_datum(u, 'db_fetched', fetch_time=1795305600000, fetch_interval=2592000,
                    score=rng.random() * 3, signature=i.to_bytes(8, 'big'))
        for i, u in enumerate(urls)))
    write_avro_file(part_file(layout.linkdb.current, 0), INLINKS_SCHEMA, (
        inlinks(u, [(f'http://src{j}.bench.test/', ' '.join(rng.choices(WORDS, k=3)))
                    for j in range(50)]) for u in urls[::100]))
    write_avro_file(part_file(layout.segment_part(segment, 'parse_text'), 0), PARSE_TEXT_SCHEMA, (
        parse_text(u, ' '.join(rng.choices(WORDS, k=300))) for u in urls))
    write_avro_file(part_file(layout.segment_part(segment, 'parse_data'), 0), PARSE_DATA_SCHEMA, (
        parse_data(u, title=' '.join(rng.choices(WORDS, k=5)), parse_status='success',
                   outlinks=[(urls[(i + 1) % pages], 'next')], metadata={'_ftk_': '1'})
        for i, u in enumerate(urls)))
    write_avro_file(part_file(layout.segment_part(segment, 'crawl_parse'), 0),
                    CRAWL_DATUM_SCHEMA, [])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pages', type=int, default=100000)
    parser.add_argument('--queries', type=int, default=200)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='bench-index-')
    crawl = os.path.join(work, 'crawl')
    try:
        build(crawl, args.pages)
        start = time.time()
        subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'index', crawl],
                       cwd=ROOT, check=True, capture_output=True)
        wall = time.time() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in
                   os.walk(os.path.join(crawl, 'index')) for f in fs)
        print(f'index: {args.pages} pages in {wall:.1f} s = {args.pages / wall:.0f} documents/s'
              f' (dedup and join included); peak RSS {peak:.0f} MB; index {size / 2**20:.0f} MB')
        shards = CrawlLayout(crawl).index_shards()
        rng = random.Random(3)
        latencies = []
        for _ in range(args.queries):
            query = ' '.join(rng.choices(WORDS, k=rng.choice((1, 2, 3))))
            begin = time.perf_counter()
            search(shards, query, 10)
            latencies.append((time.perf_counter() - begin) * 1000)
        latencies.sort()
        p95 = latencies[int(0.95 * len(latencies))]
        print(f'search: {args.queries} queries of 1-3 words, top 10 with snippets: median '
              f'{statistics.median(latencies):.1f} ms, p95 {p95:.1f} ms (each query opens the '
              f'shards, as the command does)')
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
