"""Nutch's records as beamcrawl's (import-nutch; docs/import-nutch.md): pure rules, no I/O.

The values come from storage/nutchwritables.py (Nutch's Writables as plain Python values); the
records returned are those of storage/records.py. What maps to what:

* Status: Nutch's status byte is the code beamcrawl's status names carry (records.STATUS_CODES);
  a byte Nutch does not define is an error (the file is corrupt).
* Times (ms), interval (s), retries, score (a 32-bit float) and signature are copied as they are.
* Metadata (a MapWritable of Writables) becomes a map of strings: Text as is, numbers in
  decimal (a float by the shortest text that reads back as the same 32- or 64-bit value), a
  boolean as true/false, bytes in hex, a null as '', a nested map as JSON, and Nutch's
  ProtocolStatus (`_pst_`) as beamcrawl's protocol status name.
* crawl_fetch records also get `protocol_status` (from `_pst_`) and `http_code` (from
  `nutch.protocol.code`), which beamcrawl keeps in fields of their own.
* Nutch's Metadata (names with a list of values) becomes one string per name, the values joined
  by ', ' (HTTP's rule for repeated header fields).
* Content: beamcrawl keeps the response headers apart from the fetcher's notes: names that start
  with `nutch.` or `_` (Nutch's own: `nutch.segment.name`, `nutch.crawl.score`, `_fst_`) go to
  `metadata`, the rest to `headers`. Its HTTP code and fetch time are those of the URL's
  crawl_fetch record (Nutch's Content has neither).
* ParseData: the parse status as beamcrawl names it, the outlinks' URL and anchor (their
  metadata is dropped: beamcrawl's outlinks have none), and the parse metadata plus the
  content digest (`nutch.content.digest`).
"""

import json
import struct
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from beamcrawl.transforms.storage.records import STATUS_CODES, content, crawl_datum, inlinks
from beamcrawl.transforms.storage.records import parse_data as parse_data_record
from beamcrawl.transforms.storage.records import parse_text

__all__ = ['STATUS_BY_CODE', 'PROTOCOL_STATUS_NAMES', 'PARSE_STATUS_NAMES', 'datum',
           'metadata_text', 'joined', 'content_record', 'parse_data', 'parse_text_record',
           'inlinks_record', 'protocol_name', 'parse_status_name', 'METADATA_PROTOCOL_STATUS',
           'METADATA_HTTP_CODE']

STATUS_BY_CODE = {code: name for name, code in STATUS_CODES.items()}

# Nutch's ProtocolStatus codes and the name beamcrawl gives each (records.PROTOCOL_STATUSES).
# Nutch's proto_not_found (no plugin for the URL's protocol) is beamcrawl's failed.
PROTOCOL_STATUS_NAMES = {
    1: 'success', 2: 'failed', 10: 'failed', 11: 'gone', 12: 'moved', 13: 'temp_moved',
    14: 'notfound', 15: 'retry', 16: 'exception', 17: 'access_denied', 18: 'robots_denied',
    19: 'redir_exceeded', 20: 'notfetching', 21: 'notmodified', 22: 'would_block', 23: 'blocked',
}
# Nutch's ParseStatus major codes (minor 100 of success: a redirect, e.g. a meta refresh).
PARSE_STATUS_NAMES = {0: 'notparsed', 1: 'success', 2: 'failed'}
_SUCCESS_REDIRECT = 100

METADATA_PROTOCOL_STATUS = '_pst_'
METADATA_HTTP_CODE = 'nutch.protocol.code'
_DIGEST = 'nutch.content.digest'


def protocol_name(code: int) -> str:
    """beamcrawl's name of a Nutch ProtocolStatus code (ValueError when Nutch has none)."""
    try:
        return PROTOCOL_STATUS_NAMES[code]
    except KeyError:
        raise ValueError(f'protocol status code {code} is not one of Nutch\'s') from None


def _float_text(value: float, single: bool) -> str:
    """The shortest decimal that reads back as the same float (32-bit when `single`), as Java's
    Float.toString and Double.toString choose it."""
    if value != value:
        return 'NaN'
    if value in (float('inf'), float('-inf')):
        return 'Infinity' if value > 0 else '-Infinity'
    if not single:
        return repr(value)
    packed = struct.pack('>f', value)
    for digits in range(1, 10):
        text = f'{value:.{digits}g}'
        if struct.pack('>f', float(text)) == packed:
            return repr(float(text))
    return repr(value)


def metadata_text(value) -> str:
    """One MapWritable value as a string (see the module's docstring)."""
    # Decoded values carry their Python type; a ProtocolStatus is a named tuple with a code.
    if isinstance(value, str):
        return value
    if value is None:
        return ''
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        single = struct.unpack('>f', struct.pack('>f', value))[0] == value
        return _float_text(value, single)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if hasattr(value, 'code') and hasattr(value, 'last_modified'):
        return protocol_name(value.code)
    if isinstance(value, dict):
        return json.dumps({str(k): metadata_text(v) for k, v in value.items()}, sort_keys=True)
    return str(value)


def _metadata(meta: Mapping) -> Dict[str, str]:
    return {str(k): metadata_text(v) for k, v in meta.items()}


def datum(url: str, nutch: Mapping, *, fetch_part: bool = False) -> dict:
    """A beamcrawl CrawlDatum from a Nutch CrawlDatum (nutchwritables.crawl_datum);
    `fetch_part`: a crawl_fetch record (its protocol status and HTTP code get their fields).
    ValueError when its status is not one of Nutch's."""
    status = STATUS_BY_CODE.get(nutch['status'])
    if status is None:
        raise ValueError(f'status byte {nutch["status"]} is not one of Nutch\'s')
    meta = _metadata(nutch['metadata'])
    protocol, code = None, None
    if fetch_part:
        pst = nutch['metadata'].get(METADATA_PROTOCOL_STATUS)
        protocol = meta[METADATA_PROTOCOL_STATUS] if pst is not None else None
        text = meta.get(METADATA_HTTP_CODE, '')
        code = int(text) if text.isdigit() else None
    return crawl_datum(url, status, fetch_time=nutch['fetch_time'],
                       fetch_interval=nutch['fetch_interval'],
                       modified_time=nutch['modified_time'], retries=nutch['retries'],
                       score=nutch['score'], signature=nutch['signature'], metadata=meta,
                       protocol_status=protocol, http_code=code)


def joined(meta: Mapping[str, List[str]]) -> Dict[str, str]:
    """Nutch's Metadata ({name: [values]}) with one string per name."""
    return {name: ', '.join(values) for name, values in meta.items()}


def _nutch_note(name: str) -> bool:
    return name.startswith('nutch.') or name.startswith('_')


def content_record(url: str, nutch: Mapping, *, fetch_time: int,
                   http_code: Optional[int]) -> dict:
    """A beamcrawl Content from a Nutch Content, with the fetch time and HTTP code of its
    crawl_fetch record (0 and None when it has none)."""
    meta = joined(nutch['metadata'])
    headers = {k: v for k, v in meta.items() if not _nutch_note(k)}
    notes = {k: v for k, v in meta.items() if _nutch_note(k)}
    return content(url, content_bytes=nutch['content'], content_type=nutch['content_type'],
                   fetch_time=fetch_time, base_url=nutch['base_url'] or url,
                   http_code=http_code, headers=headers, metadata=notes)


def parse_status_name(major: int, minor: int) -> str:
    name = PARSE_STATUS_NAMES.get(major, 'failed')
    return 'success_redirect' if name == 'success' and minor == _SUCCESS_REDIRECT else name


def parse_data(url: str, nutch: Mapping) -> dict:
    """A beamcrawl ParseData from a Nutch ParseData (nutchwritables.parse_data)."""
    meta = joined(nutch['parse_meta'])
    digest = nutch['content_meta'].get(_DIGEST)
    if digest and _DIGEST not in meta:
        meta[_DIGEST] = ', '.join(digest)
    status = nutch['status']
    return parse_data_record(url, title=nutch['title'],
                             parse_status=parse_status_name(status.major, status.minor),
                             outlinks=[(to, anchor) for to, anchor, _ in nutch['outlinks']],
                             metadata=meta)


def parse_text_record(url: str, text: str) -> dict:
    return parse_text(url, text)


def inlinks_record(url: str, links: Iterable[Tuple[str, str, Mapping]]) -> dict:
    """A beamcrawl Inlinks from Nutch's (from URL, anchor, metadata) inlinks."""
    return inlinks(url, [(source, anchor) for source, anchor, _ in links])
