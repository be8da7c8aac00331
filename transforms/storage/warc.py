"""WARC records of fetched pages (docs/warc.md), written with FastWARC.

`exchange_records(exchange)` turns one HTTP exchange, as the fetcher saw it on the wire
(`RawExchange`), into WARC/1.1 records, each compressed as its own gzip member so that tools can
seek to any record: a `response` (a `revisit` with the server-not-modified profile for a 304) and
the `request` that is concurrent to it. `write_warc_file` puts a `warcinfo` record first and the
members after it. `reconstructed_records` builds a response from a stored Content record, for
crawls made without `fetcher.store.warc` (`beamcrawl warc-export`).

Why FastWARC: it builds and digests a request + response pair in 0.12 ms for a 2 KB page and
0.32 ms for 12 KB, where warcio takes 0.20 and 0.41 ms (bench/bench_warc.py, both compressing
with zlib at level 6); from about 30 KB on, compression dominates and the two are even. Both
libraries' checkers accept what it writes (the tests run both). The fetcher builds these records
on its own threads while pages stream in, so the cost per page matters. Each record is
compressed here with zlib: FastWARC's GzipWriter, set up once per record to get one gzip member
per record, cost more than the record itself.

No Beam here: the fetch journal (fetcher/journal/) stores the members as results complete and
publishes them as `segments/<seg>/warc/part-NNNNN.warc.gz`.
"""

import base64
import dataclasses
import datetime
import hashlib
import http
import importlib.metadata
import io
import uuid
import zlib
from typing import Iterable, List, Optional, Sequence, Tuple

from fastwarc.warc import WarcRecord, WarcRecordType

__all__ = ['RawExchange', 'exchange_records', 'warcinfo_fields', 'warcinfo_record',
           'write_warc_file', 'reconstructed_records', 'sha1_digest',
           'RECONSTRUCTED_HEADER', 'NOT_MODIFIED_PROFILE']

NOT_MODIFIED_PROFILE = 'http://netpreserve.org/warc/1.1/revisit/server-not-modified'
# An extension field (WARC 1.1 allows them) on records built from stored content, not the wire.
RECONSTRUCTED_HEADER = 'WARC-Beamcrawl-Reconstructed'
_GZIP_LEVEL = 6            # zlib's own default level
# Headers that describe bytes no longer as they were: kept under the prefix Common Crawl uses.
_RENAMED_PREFIX = 'X-Crawler-'


@dataclasses.dataclass
class RawExchange:
    """One HTTP exchange as far as the HTTP library shows it."""
    url: str
    request: bytes                        # request line and headers, as sent, ending in CRLF CRLF
    status_line: str                      # e.g. 'HTTP/1.1 200 OK'
    headers: List[Tuple[str, str]]        # response headers in the order received
    body: bytes                           # the body received: transfer- but not content-decoded
    start_ms: int                         # when the request was sent (epoch ms)
    truncated: bool = False               # the body was cut at the content limit
    ip: Optional[str] = None              # the peer's address when known (not through a proxy)

    @property
    def code(self) -> int:
        return int(self.status_line.split(' ', 2)[1])


def sha1_digest(data: bytes) -> str:
    """A WARC digest value: 'sha1:' and the SHA-1 in base32."""
    return 'sha1:' + base64.b32encode(hashlib.sha1(data).digest()).decode('ascii')


def _record_id() -> str:
    return f'<urn:uuid:{uuid.uuid4()}>'


def _date(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000.0, tz=datetime.timezone.utc)


def _member(record_type: WarcRecordType, record_id: str, date_ms: int,
            fields: Sequence[Tuple[str, str]], block: bytes,
            payload: Optional[bytes] = None) -> bytes:
    """One record as its own gzip member; block digest always, payload digest of `payload`."""
    record = WarcRecord()
    record.init_headers(record_type, record_id[len('<urn:'):-1].encode('ascii'))
    record.record_date = _date(date_ms)
    for name, value in fields:
        record.headers.append(name, value)
    record.set_bytes_content(block)
    out = io.BytesIO()
    record.write(out, checksum_data=True,
                 payload_digest=hashlib.sha1(payload).digest() if payload is not None else None)
    # zlib rather than FastWARC's GzipWriter: one member per record, and setting up a
    # GzipWriter per record cost more than the record itself (bench/bench_warc.py).
    compressor = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 31)
    return compressor.compress(out.getvalue()) + compressor.flush()


def _http_head(status_line: str, headers: Iterable[Tuple[str, str]]) -> bytes:
    lines = [status_line] + [f'{name}: {value}' for name, value in headers]
    return ('\r\n'.join(lines) + '\r\n\r\n').encode('iso-8859-1', 'replace')


def _stored_headers(headers: Iterable[Tuple[str, str]], renamed: Sequence[str]
                    ) -> List[Tuple[str, str]]:
    """The headers with those in `renamed` (lowercase names) kept under X-Crawler-: they would
    tell a reader to decode bytes that are stored decoded already."""
    return [((_RENAMED_PREFIX + name) if name.lower() in renamed else name, value)
            for name, value in headers]


def exchange_records(exchange: RawExchange) -> bytes:
    """The gzip members of one exchange: its request, then its response (or revisit)."""
    response_id = _record_id()
    # urllib3 removes the chunked framing: the body is stored without it.
    headers = _stored_headers(exchange.headers, ('transfer-encoding',))
    common = [('WARC-Target-URI', exchange.url)]
    if exchange.ip:
        common.append(('WARC-IP-Address', exchange.ip))
    request = _member(WarcRecordType.request, _record_id(), exchange.start_ms,
                      common + [('WARC-Concurrent-To', response_id),
                                ('Content-Type', 'application/http; msgtype=request')],
                      exchange.request)
    head = _http_head(exchange.status_line, headers)
    if exchange.code == 304:
        response = _member(WarcRecordType.revisit, response_id, exchange.start_ms,
                           common + [('WARC-Profile', NOT_MODIFIED_PROFILE),
                                     ('WARC-Refers-To-Target-URI', exchange.url),
                                     ('Content-Type', 'application/http; msgtype=response')],
                           head)
    else:
        fields = common + [('Content-Type', 'application/http; msgtype=response')]
        if exchange.truncated:
            fields.append(('WARC-Truncated', 'length'))
        response = _member(WarcRecordType.response, response_id, exchange.start_ms, fields,
                           head + exchange.body, payload=exchange.body)
    return request + response


def warcinfo_fields(segment: str, user_agent: str, description: str = '') -> Tuple[
        Tuple[str, str], ...]:
    """The warcinfo fields of a segment's WARC files."""
    try:
        version = importlib.metadata.version('beamcrawl')
    except importlib.metadata.PackageNotFoundError:
        version = 'unknown'
    fields = [('software', f'beamcrawl/{version}'), ('format', 'WARC File Format 1.1'),
              ('conformsTo', 'https://iipc.github.io/warc-specifications/specifications/'
                             'warc-format/warc-1.1/'),
              ('isPartOf', segment), ('http-header-user-agent', user_agent),
              ('robots', 'obey')]
    if description:
        fields.append(('description', description))
    return tuple(fields)


def warcinfo_record(fields: Sequence[Tuple[str, str]], date_ms: int, filename: str) -> bytes:
    """The warcinfo record that opens a file: `fields` as application/warc-fields."""
    block = ''.join(f'{name}: {value}\r\n' for name, value in fields).encode('utf-8')
    return _member(WarcRecordType.warcinfo, _record_id(), date_ms,
                   [('WARC-Filename', filename), ('Content-Type', 'application/warc-fields')],
                   block)


def write_warc_file(path: str, info: Sequence[Tuple[str, str]], date_ms: int,
                    members: Iterable[bytes], opener) -> int:
    """Writes a warcinfo record and then `members` (gzip members of records) to `path` through
    `opener(path)` (a binary file factory); returns how many member groups were written."""
    count = 0
    with opener(path) as out:
        out.write(warcinfo_record(info, date_ms, path.rsplit('/', 1)[-1]))
        for member in members:
            out.write(member)
            count += 1
    return count


def reconstructed_records(content: dict) -> bytes:
    """A response record built from a stored Content record (no wire bytes were kept): its
    stored headers (encodings and lengths renamed, as the body is stored decoded) and body,
    marked with WARC-Beamcrawl-Reconstructed. The block is what was stored, not the wire."""
    body = content['content']
    code = content.get('http_code') or 200
    headers = _stored_headers(sorted((content.get('headers') or {}).items()),
                              ('transfer-encoding', 'content-encoding', 'content-length'))
    headers.append(('Content-Length', str(len(body))))
    head = _http_head(f'HTTP/1.1 {code} {_reason(code)}', headers)
    fields = [('WARC-Target-URI', content['url']),
              ('Content-Type', 'application/http; msgtype=response'),
              (RECONSTRUCTED_HEADER, 'from the stored content record')]
    if content.get('truncated'):
        fields.append(('WARC-Truncated', 'length'))
    return _member(WarcRecordType.response, _record_id(), content['fetch_time'], fields,
                   head + body, payload=body)


def _reason(code: int) -> str:
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return 'Unknown'

