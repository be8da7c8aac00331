"""One URL through the crawl's own steps, outside a pipeline: what `parsechecker` and
`indexchecker` show (Nutch's ParserChecker and IndexingFiltersChecker).

`check_url` fetches a URL with the fetcher's Requester (address policy, robots.txt, Crawl-delay
limit, size and time bounds), optionally following redirects, and parses a 200 response with
the parse stage's own DoFn (transforms/parse.py `parse_one`). `index_entry` then merges the
fetch into the URL's crawldb record as updatedb does (policy/updatedb.py `merge_url`) and
builds the document the indexer would write (policy/indexing.py), or names the deletion.
Nothing is written anywhere.
"""

import dataclasses
import urllib.parse
from typing import Dict, List, Optional, Sequence, Tuple

from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.fetcher.http import HttpClient, HttpSettings
from beamcrawl.transforms.fetcher.request import Requester, outcome_records
from beamcrawl.transforms.fetcher.robots_cache import ROBOTS_LIMIT, RobotsCache
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.parse import ParseSettings, parse_one
from beamcrawl.transforms.policy.indexing import IndexRules, build_document, deletion
from beamcrawl.transforms.policy.robots import RobotsRules, rules_from_response
from beamcrawl.transforms.policy.updatedb import UpdateRules, merge_url
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage.records import crawl_datum
from beamcrawl.transforms.storage.segments import (CONTENT, CRAWL_FETCH, CRAWL_PARSE, PARSE_DATA,
                                                   PARSE_TEXT)

__all__ = ['CheckSettings', 'Checked', 'check_url', 'index_entry', 'robots_rules']


@dataclasses.dataclass(frozen=True)
class CheckSettings:
    """What the checkers run with: the stages' own settings (transforms/settings.py
    `check_settings` builds it)."""
    fetcher: FetcherSettings
    http: HttpSettings
    policy: UrlPolicy
    parse: ParseSettings
    update: UpdateRules
    index: IndexRules
    interval_default: int             # db.fetch.interval.default, s
    score_injected: float             # db.score.injected
    follow: int                       # redirects followed (--follow-redirects), else 0


@dataclasses.dataclass
class Checked:
    url: str                                  # the URL fetched last (after redirects followed)
    redirects: List[Tuple[str, str]]          # (from, to) for each redirect followed
    fetch: dict                               # its crawl_fetch record
    content: Optional[dict]                   # its content record (None: nothing kept)
    parts: Dict[str, list]                    # parse parts: {part: [records]} (empty: unparsed)
    counts: Dict[str, int]                    # counters of the fetch and the parse
    unfollowed: Optional[str] = None          # a redirect target not followed


def check_url(url: str, s: CheckSettings, now_ms: int) -> Checked:
    """Fetches `url` and parses the response; follows up to `s.follow` redirects."""
    fetcher = dataclasses.replace(s.fetcher, store_content=True, store_warc=False)
    counts: Dict[str, int] = {}

    def count(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1

    http = HttpClient(s.http)
    redirects: List[Tuple[str, str]] = []
    try:
        requester = Requester(fetcher, http, s.policy, now_ms, count)
        current = crawl_datum(url, 'db_unfetched', fetch_time=now_ms,
                              fetch_interval=s.interval_default, score=s.score_injected)
        while True:
            outcome = requester.fetch(current)
            records = outcome_records(current, outcome, now_ms, s.policy)
            if outcome.target and len(redirects) < s.follow:
                redirects.append((current['url'], outcome.target))
                current = crawl_datum(outcome.target, 'db_unfetched', fetch_time=now_ms,
                                      fetch_interval=current['fetch_interval'],
                                      score=current['score'])
                continue
            break
    finally:
        http.close()
    fetch = next(r for part, r in reversed(records) if part == CRAWL_FETCH)
    content = next((r for part, r in records if part == CONTENT), None)
    parts: Dict[str, list] = {}
    if content is not None:
        parts, parse_counts = parse_one(content, settings=s.parse, policy=s.policy, now=now_ms)
        for name, n in parse_counts.items():
            counts[name] = counts.get(name, 0) + n
    return Checked(url=current['url'], redirects=redirects, fetch=fetch, content=content,
                   parts=parts, counts=counts, unfollowed=outcome.target)


def index_entry(checked: Checked, s: CheckSettings, now_ms: int, old: Optional[dict] = None,
                inlinks: Sequence[Tuple[str, str]] = ()) -> Tuple[Optional[dict], dict, str]:
    """(the document the indexer would write or None, the crawldb record updatedb would make
    of the fetch, why there is no document: '' or the reason)."""
    signatures = [r for r in checked.parts.get(CRAWL_PARSE, []) if r['status'] == 'signature']
    db, _ = merge_url([old] if old else [], [checked.fetch], [], signatures, now_ms,
                      s.update)
    reason = deletion(db)
    if reason:
        return None, db, f'deleted from the index: {reason}'
    data = next(iter(checked.parts.get(PARSE_DATA, [])), None)
    text = next(iter(checked.parts.get(PARSE_TEXT, [])), None)
    doc = build_document(db, inlinks, data, text, s.index)
    if doc is None:
        why = (f'not indexable: crawldb status {db["status"]}' if data is not None
               else 'not indexable: no parse')
        if data is not None and data['parse_status'] not in ('success', 'success_redirect'):
            why = f'not indexable: parse status {data["parse_status"]}'
        return None, db, why
    return doc, db, ''


def robots_rules(source: str, s: CheckSettings) -> RobotsRules:
    """The rules of a robots.txt: a local file (read as a 200 response, as much of it as the
    fetcher reads), or an http(s) URL fetched as the fetcher fetches robots.txt (redirects,
    http.robots.403.allow, the address policy)."""
    parts = urllib.parse.urlsplit(source)
    if parts.scheme not in ('http', 'https'):
        try:
            with open(source, 'rb') as f:
                body = f.read(ROBOTS_LIMIT)
        except OSError as e:
            raise UserError(f'{source}: cannot read ({e.strerror})') from None
        return rules_from_response(200, body, allow_403=s.fetcher.allow_403)
    refused: List[str] = []
    http = HttpClient(s.http)
    try:
        cache = RobotsCache(http, redirect_max=s.fetcher.robots_redirect_max,
                            allow_403=s.fetcher.allow_403, denied=s.policy.denied,
                            on_fetched=lambda rules: None, on_denied=refused.append)
        rules = cache.rules(parts.scheme, parts.netloc)
    finally:
        http.close()
    if refused:
        raise UserError(f'{source}: refused by the address policy ({refused[0]}); see '
                        f'http.address.allow')
    return rules
