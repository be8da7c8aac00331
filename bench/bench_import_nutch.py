"""Benchmark: import-nutch of a synthetic Nutch crawl (a crawldb of N URLs in 4 uncompressed
MapFile parts, a linkdb of N/4 entries and a segment of N/10 fetched pages, record-compressed
with DefaultCodec, as Nutch 1.22 writes them). Prints wall, CPU, peak RSS and records/s.

    python bench/bench_import_nutch.py [--urls 200000] [--runs 1]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from measure import beamcrawl, best_of  # noqa: E402

from tests import seqfiles as sf  # noqa: E402

_PAGE = b'<html><head><title>t</title></head><body>' + b'<p>some text</p>' * 200 + b'</body>'


def url(i: int) -> str:
    return f'http://www.h{i % 10000}.example.com/page/{i}.html'


def build(root: str, n: int) -> int:
    """Writes the Nutch crawl; returns its number of records (all parts)."""
    def write(rel, records, value_class, compression):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(sf.sequence_file(records, value_class=value_class, compression=compression,
                                     sync_every=20))
    keys = sorted(url(i) for i in range(n))
    meta = [(sf.t('_pst_'), sf.protocol_status(1)), (sf.t('nutch.protocol.code'), sf.t('200')),
            (sf.t('Content-Type'), sf.t('text/html'))]
    for part in range(4):
        write(f'crawldb/current/part-r-{part:05d}/data',
              [(sf.text(u), sf.crawl_datum(2, fetch_time=1795601500000 + i, score=0.5,
                                           signature=b'\x01' * 16, metadata=meta))
               for i, u in enumerate(keys[part::4])], sf.DATUM, 'none')
    write('linkdb/current/part-r-00000/data',
          [(sf.text(u), sf.inlinks([(url(i + 1), 'anchor'), (url(i + 2), 'other')]))
           for i, u in enumerate(keys[::4])], 'org.apache.nutch.crawl.Inlinks', 'record')
    pages = keys[::10]
    segment = 'segments/20261125000000/'
    write(segment + 'crawl_fetch/part-r-00000/data',
          [(sf.text(u), sf.crawl_datum(33, fetch_time=1795601500000, metadata=meta))
           for u in pages], sf.DATUM, 'record')
    write(segment + 'content/part-r-00000/data',
          [(sf.text(u), sf.content(u, _PAGE, 'text/html', [('Content-Type', ['text/html'])]))
           for u in pages], 'org.apache.nutch.protocol.Content', 'record')
    return n + len(keys[::4]) + 2 * len(pages)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--urls', type=int, default=200000)
    parser.add_argument('--runs', type=int, default=1)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='bench-import-nutch-')
    nutch, crawl = os.path.join(work, 'nutch'), os.path.join(work, 'crawl')
    start = time.time()
    records = build(nutch, args.urls)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(nutch) for f in fs)
    print(f'built: a Nutch crawl of {args.urls} URLs, {records} records in all, '
          f'{size / 2 ** 20:.0f} MB ({time.time() - start:.0f} s)')
    result = best_of(args.runs, 'import-nutch', lambda: beamcrawl('import-nutch', nutch, crawl),
                     records, before=lambda: shutil.rmtree(crawl, ignore_errors=True))
    print(result.line())
    print('  ' + result.stdout.strip())
    shutil.rmtree(work)


if __name__ == '__main__':
    main()
