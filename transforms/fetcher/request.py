"""One URL's request and the records it gives: shared by the batch engine (engine.py) and the
streaming fetch (transforms/fetcher/streaming/fetch.py), so that both decide alike.

`Requester.fetch(record)` applies the address policy, robots.txt (per site, through a
RobotsCache) and a Crawl-delay above the maximum, then sends the GET and returns an `Outcome`:
what happened, and what the queue must learn from it (the response time, a Crawl-delay, whether
a request was sent at all). It blocks for the duration of the request: callers run it on their
own threads. `fetch_record` and `outcome_records` turn an outcome into crawl_fetch and content
records.
"""

import dataclasses
import time
import urllib.parse
from typing import Callable, Dict, List, Optional, Tuple

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.fetcher.http import HttpClient
from beamcrawl.transforms.fetcher.journal.paths import SOURCE_KEY
from beamcrawl.transforms.fetcher.redirects import redirect_target, target_record
from beamcrawl.transforms.fetcher.robots_cache import RobotsCache
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.policy.protocol import (CONTENT_KEPT, NOT_ATTEMPTED, fetch_status,
                                                  protocol_status)
from beamcrawl.transforms.policy.scoring import CRAWL_SCORE_KEY
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage.records import content as content_record
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH, WARC
from beamcrawl.transforms.storage.warc import exchange_records

__all__ = ['Outcome', 'Requester', 'fetch_record', 'outcome_records', 'warc_record']


@dataclasses.dataclass
class Outcome:
    protocol: str
    code: Optional[int] = None
    error: str = ''
    meta: Optional[Dict[str, str]] = None
    elapsed: float = 0.0
    asap: bool = False                 # no request was sent: the queue may go on at once
    crawl_delay: Optional[float] = None
    body: Optional[bytes] = None
    content: Optional[dict] = None
    target: Optional[str] = None
    cut: bool = False                  # the request was cut (deadline or time limit)
    end: float = 0.0                   # when the request ended (epoch s; 0: none was sent)
    warc: Optional[bytes] = None       # WARC records of the exchange (fetcher.store.warc)


class Requester:
    """Sends the request of one URL. `count(name)` is called (from the requesting thread) for
    the counters of what happens on the way: robots.txt fetched, addresses refused, deadlines."""

    def __init__(self, settings: FetcherSettings, http: HttpClient, policy: UrlPolicy,
                 now_ms: int, count: Callable[[str], None]):
        self.settings, self.http, self.policy, self.now_ms = settings, http, policy, now_ms
        self.count = count
        self.robots = RobotsCache(http, redirect_max=settings.robots_redirect_max,
                                  allow_403=settings.allow_403, denied=policy.denied,
                                  on_fetched=lambda rules: count(metrics.FETCH_ROBOTS + rules.kind),
                                  on_denied=lambda reason: count(metrics.FETCH_DENIED_ADDRESS))

    def fetch(self, record: dict) -> Outcome:
        url = record['url']
        denied = self.policy.denied(url)
        if denied:
            self.count(metrics.FETCH_DENIED_ADDRESS)
            return Outcome(protocol='blocked', error=f'address policy: {denied}', asap=True)
        parts = urllib.parse.urlsplit(url)
        rules = self.robots.rules(parts.scheme, parts.netloc)
        if rules.kind == 'unavailable':
            return Outcome(protocol='notfetching', error=rules.reason, asap=True)
        if not rules.allowed(url, self.settings.agents):
            return Outcome(protocol='robots_denied', asap=True)
        crawl_delay = None
        delay = rules.crawl_delay(self.settings.agents)
        if delay is not None:
            if 0 <= self.settings.max_crawl_delay < delay:
                return Outcome(protocol='robots_denied', asap=True,
                               error=f'Crawl-delay {delay:g} s > fetcher.max.crawl.delay')
            crawl_delay = max(delay, self.settings.min_crawl_delay)
        start = time.time()
        resp = self.http.get(url, modified_time=record['modified_time'],
                             etag=record['metadata'].get('ETag'))
        end = time.time()
        if resp.denied:
            self.count(metrics.FETCH_DENIED_ADDRESS)
            return Outcome(protocol='blocked', error=f'address policy: {resp.error}', asap=True)
        if resp.cut:
            self.count(metrics.FETCH_DEADLINE)
        protocol = protocol_status(resp.code)
        meta = {'_rs_': str(int(resp.elapsed * 1000)), 'fetch.start': str(int(start * 1000)),
                'fetch.end': str(int(end * 1000))}
        for header in ('ETag', 'Last-Modified'):
            if header in resp.headers:
                meta[header] = resp.headers[header]
        mime = resp.headers.get('Content-Type', '').split(';', 1)[0].strip().lower()
        if resp.body and mime:
            meta['Content-Type'] = mime
        error = resp.error or (f'HTTP {resp.code}' if protocol == 'exception' else '')
        outcome = Outcome(protocol=protocol, code=resp.code, error=error, meta=meta,
                          elapsed=resp.elapsed, crawl_delay=crawl_delay, body=resp.body,
                          cut=resp.cut, end=end)
        if protocol in CONTENT_KEPT and self.settings.store_content:
            outcome.content = content_record(
                url, content_bytes=resp.body, content_type=mime or 'application/octet-stream',
                fetch_time=self.now_ms, http_code=resp.code, headers=resp.headers,
                truncated=resp.truncated,
                metadata={CRAWL_SCORE_KEY: repr(float(record['score']))})
        if resp.exchange is not None:
            outcome.warc = exchange_records(resp.exchange)
        if protocol in ('moved', 'temp_moved'):
            outcome.target, why = redirect_target(url, resp.headers.get('Location', ''),
                                                  self.policy, self.settings.max_url_length)
            if why == 'denied':
                self.count(metrics.FETCH_DENIED_ADDRESS)
        return outcome


def fetch_record(record: dict, protocol: str, code: Optional[int], now_ms: int, *,
                 error: str = '', meta: Optional[Dict[str, str]] = None) -> dict:
    """The crawl_fetch record of a generated (or followed) URL after a fetch attempt."""
    metadata = {**record['metadata'], '_pst_': protocol, **(meta or {})}
    if code is not None:
        metadata['nutch.protocol.code'] = str(code)
    if error:
        metadata['_error_'] = error
    signature = record['signature'] if protocol in ('notmodified', *NOT_ATTEMPTED) else None
    return dict(record, status=fetch_status(protocol), fetch_time=now_ms, metadata=metadata,
                signature=signature, protocol_status=protocol, http_code=code)


def warc_record(url: str, source: str, data: bytes) -> dict:
    """The journal record of the WARC records (gzip members) of `url`'s exchange."""
    return {'url': url, 'metadata': {SOURCE_KEY: source}, 'warc': data}


def outcome_records(record: dict, outcome: Outcome, now_ms: int, policy: UrlPolicy
                    ) -> List[Tuple[str, dict]]:
    """The (part, record) pairs of a generated URL whose redirect (if any) is recorded, not
    followed: its content and WARC records, the `linked` record of the target, then its own
    crawl_fetch record
    (last, as the journal wants: fetcher/journal/). Every record carries `_src_`."""
    url = record['url']
    out: List[Tuple[str, dict]] = []
    if outcome.content is not None:
        outcome.content['metadata'][SOURCE_KEY] = url
        out.append((CONTENT, outcome.content))
    if outcome.warc is not None:
        out.append((WARC, warc_record(url, url, outcome.warc)))
    if outcome.target:
        linked = target_record(record, outcome.target, temp=outcome.protocol == 'temp_moved',
                               status='linked', now_ms=now_ms, policy=policy)
        linked['metadata'] = {**linked['metadata'], SOURCE_KEY: url}
        out.append((CRAWL_FETCH, linked))
    own = fetch_record(record, outcome.protocol, outcome.code, now_ms, error=outcome.error,
                       meta=outcome.meta)
    own['metadata'][SOURCE_KEY] = url
    out.append((CRAWL_FETCH, own))
    return out
