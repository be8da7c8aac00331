"""Redirects in the fetcher: the target of a Location header, and the record that carries it.

A redirect is either followed in the same fetch (http.redirect.max > 0: the target is queued
like any URL, through its own queue's politeness) or recorded as a `linked` crawl_fetch record
for updatedb to add. Either way the target carries `_repr_`, the representative URL that Nutch's
chooseRepr picks for the pair.
"""

import urllib.parse
from typing import Optional, Tuple

from beamcrawl.transforms.policy.domains import choose_repr
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage.records import crawl_datum

__all__ = ['redirect_target', 'target_record']


def redirect_target(url: str, location: str, policy: UrlPolicy, max_length: int
                    ) -> Tuple[Optional[str], str]:
    """(the normalized, accepted target of a redirect from `url`, '') or (None, why not: 'long',
    'malformed', 'filtered', 'denied' by the address policy, or 'self')."""
    try:
        target = urllib.parse.urljoin(url, location.strip()) if location.strip() else url
    except ValueError:
        return None, 'malformed'
    if len(target) > max_length:
        return None, 'long'
    clean, reason = policy.clean(target)
    if clean is None:
        return None, reason
    return (clean, '') if clean != url else (None, 'self')


def target_record(source: dict, target: str, *, temp: bool, status: str, now_ms: int,
                  policy: UrlPolicy) -> dict:
    """The record of a redirect target: `db_unfetched` to fetch now, or `linked` to record."""
    repr_url = choose_repr(source['metadata'].get('_repr_', source['url']), target, temp,
                           policy.domains)
    return crawl_datum(target, status, fetch_time=now_ms,
                       fetch_interval=source['fetch_interval'],
                       metadata={**source['metadata'], '_repr_': repr_url})
