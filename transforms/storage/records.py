"""Record types of the crawl directory: Avro schemas, the status enum and converters.

Records travel through pipelines as plain dicts shaped like their Avro schema (this is what
`apache_beam.io.avroio` reads and writes). The constructors here fill every field, and
`complete_datum` fills fields that an older file may lack, since Beam's Avro reader does no
reader-schema resolution. Field names are a contract (docs/crawl-dir.md, "Records").
"""

from typing import Iterable, List, Mapping, Optional, Tuple

__all__ = [
    'STATUSES', 'STATUS_CODES', 'DB_STATUSES', 'FETCH_STATUSES', 'PROTOCOL_STATUSES',
    'CRAWL_DATUM_SCHEMA', 'CONTENT_SCHEMA', 'PARSE_TEXT_SCHEMA', 'PARSE_DATA_SCHEMA',
    'INLINKS_SCHEMA', 'HOST_DATUM_SCHEMA', 'OUTLINKS_SCHEMA', 'NODE_SCHEMA', 'SCHEMAS',
    'crawl_datum', 'complete_datum', 'complete_host_datum',
    'content', 'parse_text',
    'parse_data', 'inlinks', 'status_code', 'METADATA_GENERATE_TIME', 'METADATA_FIXED_INTERVAL',
]

# Nutch's status names with their numeric codes (CrawlDatum.STATUS_*), in code order. The Avro
# enum keeps this symbol order; the codes are printed by readdb as Nutch does.
STATUS_CODES = {
    'db_unfetched': 1, 'db_fetched': 2, 'db_gone': 3, 'db_redir_temp': 4, 'db_redir_perm': 5,
    'db_notmodified': 6, 'db_duplicate': 7, 'db_orphan': 8,
    'fetch_success': 33, 'fetch_retry': 34, 'fetch_redir_temp': 35, 'fetch_redir_perm': 36,
    'fetch_gone': 37, 'fetch_notmodified': 38,
    'signature': 65, 'injected': 66, 'linked': 67,
}
STATUSES = tuple(STATUS_CODES)
DB_STATUSES = frozenset(s for s in STATUSES if s.startswith('db_'))
FETCH_STATUSES = frozenset(s for s in STATUSES if s.startswith('fetch_'))

# ProtocolStatus names carried by crawl_fetch records (docs/crawl-dir.md, "Statuses").
PROTOCOL_STATUSES = (
    'success', 'failed', 'gone', 'moved', 'temp_moved', 'notfound', 'retry', 'exception',
    'access_denied', 'robots_denied', 'redir_exceeded', 'notfetching', 'notmodified',
    'would_block', 'blocked',
)

# Metadata keys with Nutch's names.
METADATA_GENERATE_TIME = '_ngt_'          # generate time (ms) of a generated record
METADATA_FIXED_INTERVAL = 'fixedInterval'  # seconds; the adaptive schedule keeps it fixed

_NS = 'org.beamcrawl'

CRAWL_DATUM_SCHEMA = {
    'type': 'record', 'name': 'CrawlDatum', 'namespace': _NS,
    'fields': [
        {'name': 'url', 'type': 'string'},
        {'name': 'status', 'type': {'type': 'enum', 'name': 'CrawlStatus', 'symbols': list(STATUSES)}},
        {'name': 'fetch_time', 'type': 'long'},
        {'name': 'modified_time', 'type': 'long', 'default': 0},
        {'name': 'fetch_interval', 'type': 'int'},
        {'name': 'retries', 'type': 'int', 'default': 0},
        {'name': 'score', 'type': 'float', 'default': 0.0},
        {'name': 'signature', 'type': ['null', 'bytes'], 'default': None},
        {'name': 'metadata', 'type': {'type': 'map', 'values': 'string'}, 'default': {}},
        # crawl_fetch only; null elsewhere.
        {'name': 'protocol_status', 'type': ['null', 'string'], 'default': None},
        {'name': 'http_code', 'type': ['null', 'int'], 'default': None},
    ],
}

CONTENT_SCHEMA = {
    'type': 'record', 'name': 'Content', 'namespace': _NS,
    'fields': [
        {'name': 'url', 'type': 'string'},
        {'name': 'base_url', 'type': 'string'},
        {'name': 'content_type', 'type': 'string'},
        {'name': 'http_code', 'type': ['null', 'int'], 'default': None},
        {'name': 'headers', 'type': {'type': 'map', 'values': 'string'}, 'default': {}},
        {'name': 'content', 'type': 'bytes'},
        {'name': 'truncated', 'type': 'boolean', 'default': False},
        {'name': 'fetch_time', 'type': 'long'},
        # beamcrawl's addition: fetcher notes for parse (e.g. nutch.crawl.score for OPIC)
        {'name': 'metadata', 'type': {'type': 'map', 'values': 'string'}, 'default': {}},
    ],
}

PARSE_TEXT_SCHEMA = {
    'type': 'record', 'name': 'ParseText', 'namespace': _NS,
    'fields': [
        {'name': 'url', 'type': 'string'},
        {'name': 'text', 'type': 'string'},
        # Not in Nutch: the text without boilerplate (parser.main.text.extractor; '' when not
        # extracted). Segments parsed before it have no such field: read it with .get.
        {'name': 'main_text', 'type': 'string', 'default': ''},
    ],
}

_OUTLINK = {
    'type': 'record', 'name': 'Outlink',
    'fields': [{'name': 'to_url', 'type': 'string'}, {'name': 'anchor', 'type': 'string'}],
}

PARSE_DATA_SCHEMA = {
    'type': 'record', 'name': 'ParseData', 'namespace': _NS,
    'fields': [
        {'name': 'url', 'type': 'string'},
        {'name': 'title', 'type': 'string'},
        {'name': 'parse_status', 'type': 'string'},
        {'name': 'outlinks', 'type': {'type': 'array', 'items': _OUTLINK}},
        {'name': 'metadata', 'type': {'type': 'map', 'values': 'string'}, 'default': {}},
    ],
}

_INLINK = {
    'type': 'record', 'name': 'Inlink',
    'fields': [{'name': 'from_url', 'type': 'string'}, {'name': 'anchor', 'type': 'string'}],
}

INLINKS_SCHEMA = {
    'type': 'record', 'name': 'Inlinks', 'namespace': _NS,
    'fields': [
        {'name': 'url', 'type': 'string'},
        {'name': 'inlinks', 'type': {'type': 'array', 'items': _INLINK}},
    ],
}

# The host database's records (hostdb/; docs/hostdb.md): one per host, Nutch's HostDatum with
# beamcrawl's additions. Counts are URLs of the crawldb; times are epoch ms (0: never).
_HOST_COUNTS = ('unfetched', 'fetched', 'gone', 'redir_temp', 'redir_perm', 'not_modified',
                'duplicate', 'orphan', 'connection_failures', 'fetch_failures', 'dns_failures',
                'last_check', 'last_success', 'last_failure', 'robots_denied')
HOST_DATUM_SCHEMA = {
    'type': 'record', 'name': 'HostDatum', 'namespace': _NS,
    'fields': [
        {'name': 'host', 'type': 'string'},
        {'name': 'homepage_url', 'type': 'string'},
        *({'name': name, 'type': 'long'} for name in _HOST_COUNTS),
        {'name': 'crawl_delay', 'type': 'double'},
        {'name': 'metadata', 'type': {'type': 'map', 'values': 'double'}},
        # Added after the first hostdbs, with defaults (complete_host_datum): its crawldb URLs
        # injected from a sitemap, the distinct sitemaps they came from, and some of those.
        {'name': 'sitemap_urls', 'type': 'long', 'default': 0},
        {'name': 'sitemap_count', 'type': 'long', 'default': 0},
        {'name': 'sitemaps', 'type': {'type': 'array', 'items': 'string'}, 'default': []},
    ],
}

# The web graph (webgraphdb/, docs/crawl-dir.md): a page's outlinks as its most recent parse
# gave them (fetch_time: that parse's fetch time, ms), and a node per URL of the graph with its
# degrees and LinkRank score (0 until linkrank has run). Its inlinks use INLINKS_SCHEMA.
OUTLINKS_SCHEMA = {
    'type': 'record', 'name': 'Outlinks', 'namespace': _NS,
    'fields': [
        {'name': 'url', 'type': 'string'},
        {'name': 'fetch_time', 'type': 'long'},
        {'name': 'outlinks', 'type': {'type': 'array', 'items': _OUTLINK}},
    ],
}

NODE_SCHEMA = {
    'type': 'record', 'name': 'Node', 'namespace': _NS,
    'fields': [
        {'name': 'url', 'type': 'string'},
        {'name': 'num_inlinks', 'type': 'int'},
        {'name': 'num_outlinks', 'type': 'int'},
        {'name': 'inlink_score', 'type': 'double', 'default': 0.0},
    ],
}

# Schema of each part kind, by directory name (docs/crawl-dir.md, "Layout").
SCHEMAS = {
    'crawldb': CRAWL_DATUM_SCHEMA,
    'hostdb': HOST_DATUM_SCHEMA,
    'crawl_generate': CRAWL_DATUM_SCHEMA,
    'crawl_fetch': CRAWL_DATUM_SCHEMA,
    'crawl_parse': CRAWL_DATUM_SCHEMA,
    'content': CONTENT_SCHEMA,
    'parse_text': PARSE_TEXT_SCHEMA,
    'parse_data': PARSE_DATA_SCHEMA,
    'linkdb': INLINKS_SCHEMA,
}


def status_code(status: str) -> int:
    """Nutch's numeric code of a status name (for readers)."""
    return STATUS_CODES[status]


def crawl_datum(url: str, status: str, *, fetch_time: int, fetch_interval: int,
                modified_time: int = 0, retries: int = 0, score: float = 0.0,
                signature: Optional[bytes] = None, metadata: Optional[Mapping[str, str]] = None,
                protocol_status: Optional[str] = None, http_code: Optional[int] = None) -> dict:
    """A CrawlDatum record with every field set."""
    if status not in STATUS_CODES:
        raise ValueError(f'unknown status {status!r}')
    return {
        'url': url, 'status': status, 'fetch_time': int(fetch_time),
        'modified_time': int(modified_time), 'fetch_interval': int(fetch_interval),
        'retries': int(retries), 'score': float(score), 'signature': signature,
        'metadata': dict(metadata or {}), 'protocol_status': protocol_status,
        'http_code': http_code,
    }


_DATUM_DEFAULTS = {f['name']: f.get('default') for f in CRAWL_DATUM_SCHEMA['fields']}


def complete_datum(record: Mapping) -> dict:
    """A CrawlDatum read from a file, with fields its writer did not have filled in (the record
    itself when nothing is missing)."""
    if len(record) == len(_DATUM_DEFAULTS) and record.get('metadata') is not None:
        return record
    out = dict(record)
    for name, default in _DATUM_DEFAULTS.items():
        if name not in out:
            out[name] = dict(default) if isinstance(default, dict) else default
    if out['metadata'] is None:
        out['metadata'] = {}
    return out


_HOST_DEFAULTS = {f['name']: f['default'] for f in HOST_DATUM_SCHEMA['fields'] if 'default' in f}


def complete_host_datum(record: Mapping) -> dict:
    """A HostDatum read from a hostdb written before some fields existed, with their defaults
    (the record itself when nothing is missing)."""
    if all(name in record for name in _HOST_DEFAULTS):
        return record
    out = dict(record)
    for name, default in _HOST_DEFAULTS.items():
        if name not in out:
            out[name] = list(default) if isinstance(default, list) else default
    return out


def content(url: str, *, content_bytes: bytes, content_type: str, fetch_time: int,
            base_url: Optional[str] = None, http_code: Optional[int] = None,
            headers: Optional[Mapping[str, str]] = None, truncated: bool = False,
            metadata: Optional[Mapping[str, str]] = None) -> dict:
    """A Content record."""
    return {
        'url': url, 'base_url': base_url or url, 'content_type': content_type,
        'http_code': http_code, 'headers': dict(headers or {}), 'content': content_bytes,
        'truncated': bool(truncated), 'fetch_time': int(fetch_time),
        'metadata': dict(metadata or {}),
    }


def parse_text(url: str, text: str, main_text: str = '') -> dict:
    """A ParseText record."""
    return {'url': url, 'text': text, 'main_text': main_text}


def parse_data(url: str, *, title: str, parse_status: str,
               outlinks: Iterable[tuple] = (), metadata: Optional[Mapping[str, str]] = None) -> dict:
    """A ParseData record; `outlinks` are (to_url, anchor) pairs."""
    return {
        'url': url, 'title': title, 'parse_status': parse_status,
        'outlinks': [{'to_url': to, 'anchor': anchor} for to, anchor in outlinks],
        'metadata': dict(metadata or {}),
    }


def inlinks(url: str, links: Iterable[tuple]) -> dict:
    """An Inlinks record; `links` are (from_url, anchor) pairs."""
    return {'url': url, 'inlinks': [{'from_url': f, 'anchor': a} for f, a in links]}


def inlink_pairs(record: Mapping) -> List[Tuple[str, str]]:
    """The (from_url, anchor) pairs of an Inlinks record."""
    return [(i['from_url'], i['anchor']) for i in record['inlinks']]
