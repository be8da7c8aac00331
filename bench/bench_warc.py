"""WARC writing cost per exchange: beamcrawl's records (FastWARC, transforms/storage/warc.py)
against the
same records written with warcio, the other maintained Python WARC library.

python bench/bench_warc.py [--exchanges N] [--page-kb K]

Each exchange is a request and a response record, each its own gzip member (zlib level 6 for
both), with block and payload digests; the figure is exchanges per second and ms per exchange,
best of 3. Try --page-kb 2, 12, 28 and 100: the difference is in building the records, and from
about 30 KB on compression dominates.
warcio comes with the test extras (pip install -e '.[test]').
"""

import argparse
import io
import random
import time
import zlib

from beamcrawl.transforms.storage.warc import RawExchange, exchange_records


def _pages(count: int, size: int):
    rng = random.Random(1)
    words = [''.join(rng.choice('abcdefghijklmnop') for _ in range(rng.randint(3, 9)))
             for _ in range(3000)]
    pages = []
    for _ in range(count):
        text, n = [], 0
        while n < size:
            word = rng.choice(words)
            text.append(word)
            n += len(word) + 1
        pages.append(('<html><body><p>' + ' '.join(text) + '</p></body></html>').encode())
    return pages


_REQUEST = (b'GET /p HTTP/1.1\r\nHost: a.test\r\nUser-Agent: bench\r\nAccept: */*\r\n'
            b'Accept-Encoding: gzip, deflate\r\n\r\n')
_HEADERS = [('Content-Type', 'text/html; charset=utf-8'), ('Server', 'bench'),
            ('Date', 'Tue, 24 Nov 2026 00:00:00 GMT')]


def with_fastwarc(pages, n):
    out = 0
    for i in range(n):
        body = pages[i % len(pages)]
        out += len(exchange_records(RawExchange(
            f'http://a.test/{i}', _REQUEST, 'HTTP/1.1 200 OK',
            _HEADERS + [('Content-Length', str(len(body)))], body, 1_700_000_000_000)))
    return out


def with_warcio(pages, n):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=False)
    out = 0

    def member(record):
        buffer.seek(0)
        buffer.truncate()
        writer.write_record(record)
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        return len(z.compress(buffer.getvalue()) + z.flush())

    for i in range(n):
        body = pages[i % len(pages)]
        http = StatusAndHeaders('200 OK', _HEADERS + [('Content-Length', str(len(body)))],
                                protocol='HTTP/1.1')
        response = writer.create_warc_record(f'http://a.test/{i}', 'response',
                                             payload=io.BytesIO(body), http_headers=http)
        request = writer.create_warc_record(f'http://a.test/{i}', 'request',
                                            payload=io.BytesIO(_REQUEST))
        request.rec_headers.add_header('WARC-Concurrent-To',
                                       response.rec_headers.get_header('WARC-Record-ID'))
        out += member(request) + member(response)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--exchanges', type=int, default=2000)
    parser.add_argument('--page-kb', type=float, default=12.0)
    args = parser.parse_args()
    pages = _pages(50, int(args.page_kb * 1024))
    for name, write in (('fastwarc', with_fastwarc), ('warcio', with_warcio)):
        best, size = None, 0
        for _ in range(3):
            start = time.perf_counter()
            size = write(pages, args.exchanges)
            took = time.perf_counter() - start
            best = took if best is None else min(best, took)
        print(f'{name:9s} {args.exchanges / best:8.0f} exchanges/s  '
              f'{1000 * best / args.exchanges:.2f} ms/exchange  {size / 1e6:.1f} MB written '
              f'({args.page_kb:g} KB pages)')


if __name__ == '__main__':
    main()
