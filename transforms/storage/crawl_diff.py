"""Comparing two crawls record by record (the Flink demo and tests: same results on two runners).

Wall-clock fetch metadata (the real start and end of a request, its response time) differs
between any two runs and is left out; everything else must be equal.
"""

from typing import Dict, List

from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records

__all__ = ['WALL_CLOCK_KEYS', 'crawl_differences']

WALL_CLOCK_KEYS = frozenset({'fetch.start', 'fetch.end', '_rs_'})


def _db(db) -> Dict[str, dict]:
    out = {}
    for record in iter_records(db.part_files()):
        if 'metadata' in record:
            record = dict(record, metadata={k: v for k, v in record['metadata'].items()
                                            if k not in WALL_CLOCK_KEYS})
        if 'inlinks' in record:
            record = dict(record, inlinks=sorted((i['from_url'], i['anchor'])
                                                 for i in record['inlinks']))
        out[record['url']] = record
    return out


def crawl_differences(a: str, b: str, limit: int = 20) -> List[str]:
    """Lines describing how the crawldb and linkdb of crawl dirs `a` and `b` differ (at most
    `limit`); empty when they are equal."""
    lines: List[str] = []
    for name in ('crawldb', 'linkdb'):
        left, right = _db(getattr(CrawlLayout(a), name)), _db(getattr(CrawlLayout(b), name))
        for url in sorted(set(left) | set(right)):
            if left.get(url) != right.get(url):
                if url not in left or url not in right:
                    lines.append(f'{name}: {url} only in {a if url in left else b}')
                else:
                    fields = sorted(k for k in left[url] if left[url][k] != right[url].get(k))
                    lines.append(f'{name}: {url} differs in {", ".join(fields)}')
    return lines[:limit] + ([f'... and {len(lines) - limit} more'] if len(lines) > limit else [])
