"""Benchmark: mergedb of two crawldbs (half their URLs shared), mergelinkdb of two linkdbs, and
mergesegs of two fetched and parsed segments, whole and in slices. Prints wall, CPU and peak RSS
of each command (its process tree), as a user runs it.

    python bench/bench_merge.py [--urls 500000] [--pages 20000] [--page-kb 4]
"""

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'bench'))

from measure import beamcrawl, measure  # noqa: E402

from beamcrawl.transforms.storage.partwriter import write_avro_file  # noqa: E402
from beamcrawl.transforms.storage.records import (CONTENT_SCHEMA, CRAWL_DATUM_SCHEMA,  # noqa: E402
                                                  INLINKS_SCHEMA, PARSE_DATA_SCHEMA,
                                                  PARSE_TEXT_SCHEMA, content, crawl_datum, inlinks,
                                                  parse_data, parse_text)

NOW = 1795305600000
DAY = 86400000


def url(i):
    return f'http://www.h{i % 5000}.example.com/page/{i}.html'


def build_db(crawl, first, count, fetched_at, rnd):
    """A crawldb and a linkdb of URLs first..first+count-1, in 4 parts."""
    parts = [[] for _ in range(4)]
    links = [[] for _ in range(4)]
    for i in range(first, first + count):
        fetched = rnd.random() < 0.6
        parts[i % 4].append(crawl_datum(
            url(i), 'db_fetched' if fetched else 'db_unfetched',
            fetch_time=fetched_at + (30 * DAY if fetched else 0), fetch_interval=30 * 86400,
            score=rnd.random(), metadata={'k': str(i % 7)}))
        links[i % 4].append(inlinks(url(i), [(url(rnd.randrange(first, first + count)), 'a')]))
    for index in range(4):
        write_avro_file(f'{crawl}/crawldb/current/part-{index:05d}.avro', CRAWL_DATUM_SCHEMA,
                        sorted(parts[index], key=lambda r: r['url']))
        write_avro_file(f'{crawl}/linkdb/current/part-{index:05d}.avro', INLINKS_SCHEMA,
                        sorted(links[index], key=lambda r: r['url']))


def build_segment(crawl, name, first, pages, page_kb, rnd):
    """A fetched and parsed segment of `pages` pages of about page_kb KiB, 10 outlinks each."""
    segment = f'{crawl}/segments/{name}'
    urls = [url(i) for i in range(first, first + pages)]
    body = (b'<html><body>' + b'x' * (page_kb * 1024) + b'</body></html>')
    fetch_time = NOW + int(name[-2:]) * 1000
    datum = lambda u, s, **kw: crawl_datum(u, s, fetch_time=fetch_time,  # noqa: E731
                                           fetch_interval=30 * 86400, **kw)
    write_avro_file(f'{segment}/crawl_generate/part-00000.avro', CRAWL_DATUM_SCHEMA,
                    [datum(u, 'db_unfetched') for u in urls])
    write_avro_file(f'{segment}/content/part-00000.avro', CONTENT_SCHEMA,
                    [content(u, content_bytes=body, content_type='text/html',
                             fetch_time=fetch_time, http_code=200) for u in urls])
    write_avro_file(f'{segment}/crawl_fetch/part-00000.avro', CRAWL_DATUM_SCHEMA,
                    [datum(u, 'fetch_success', protocol_status='success', http_code=200)
                     for u in urls])
    outlinks = {u: [url(rnd.randrange(4 * pages)) for _ in range(10)] for u in urls}
    write_avro_file(f'{segment}/parse_text/part-00000.avro', PARSE_TEXT_SCHEMA,
                    [parse_text(u, 'text ' * 200) for u in urls])
    write_avro_file(f'{segment}/parse_data/part-00000.avro', PARSE_DATA_SCHEMA,
                    [parse_data(u, title='t', parse_status='success',
                                outlinks=[(t, 'anchor') for t in outlinks[u]]) for u in urls])
    write_avro_file(f'{segment}/crawl_parse/part-00000.avro', CRAWL_DATUM_SCHEMA,
                    [datum(u, 'signature', signature=b'0123456789abcdef') for u in urls] +
                    [datum(t, 'linked', score=0.1) for u in urls for t in outlinks[u]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--urls', type=int, default=500000, help='URLs per crawldb')
    parser.add_argument('--pages', type=int, default=20000, help='pages per segment')
    parser.add_argument('--page-kb', type=int, default=4)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='bench-merge-')
    rnd = random.Random(7)
    a, b = f'{work}/a', f'{work}/b'
    start = time.time()
    build_db(a, 0, args.urls, NOW, rnd)
    build_db(b, args.urls // 2, args.urls, NOW + DAY, rnd)
    build_segment(a, '20261122000001', 0, args.pages, args.page_kb, rnd)
    build_segment(a, '20261122000002', args.pages // 2, args.pages, args.page_kb, rnd)
    print(f'built: 2 crawldbs and linkdbs of {args.urls} URLs ({args.urls // 2} shared), '
          f'2 segments of {args.pages} pages of {args.page_kb} KiB ({args.pages // 2} shared) '
          f'({time.time() - start:.0f} s)')
    try:
        for label, argv, records in [
                ('mergedb', ['mergedb', a, b], 2 * args.urls),
                ('mergelinkdb', ['mergelinkdb', a, b], 2 * args.urls),
                ('mergesegs', ['mergesegs', a, '20261122000001', '20261122000002',
                               '--now', str(NOW + 2 * DAY)], 2 * args.pages),
                ('mergesegs --slice', ['mergesegs', a, '20261122000001', '20261122000002',
                                       '--slice', str(args.pages // 2),
                                       '--now', str(NOW + 3 * DAY)], 2 * args.pages)]:
            result = measure(label, beamcrawl(*argv), records)
            print(result.line())
            print('  ' + result.stdout.strip().splitlines()[0])
    finally:
        shutil.rmtree(work)


if __name__ == '__main__':
    main()
