"""What Nutch's statistics tools count for each crawldb record: `domainstats` (DomainStatistics),
`crawlcomplete` (CrawlCompletionStats) and `protocolstats` (ProtocolStatusStatistics). Pure:
each function gives the keys one record adds 1 to; the pipeline (transforms/crawlstats.py) sums
them.
"""

from typing import List

from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.urlparts import MalformedUrl, host_of

__all__ = ['FETCHED_STATUSES', 'MODES', 'group_of', 'domain_keys', 'completion_keys',
           'protocol_keys', 'ordered']

# A page counts as fetched in all three tools when the crawldb holds its content's state.
FETCHED_STATUSES = frozenset({'db_fetched', 'db_notmodified'})
MODES = ('host', 'domain', 'suffix', 'tld')
FETCHED, NOT_FETCHED, UNFETCHED = 'FETCHED', 'NOT_FETCHED', 'UNFETCHED'


def group_of(url: str, mode: str, domains: DomainHelper) -> str:
    """The host, registrable domain, public suffix or top-level domain of a URL ('' when it has
    no host)."""
    try:
        host = host_of(url)
    except MalformedUrl:
        return ''
    if not host or mode == 'host':
        return host
    if mode == 'domain':
        return domains.domain(host)
    if mode == 'suffix':
        return domains.suffix(host)
    if mode == 'tld':
        name = host.split(':', 1)[0].rstrip('.')
        return '' if domains.suffix(host) == '' else name.rsplit('.', 1)[-1]
    raise ValueError(f'unknown mode {mode!r} (one of {", ".join(MODES)})')


def domain_keys(record: dict, mode: str, domains: DomainHelper, every: bool = False
                ) -> List[tuple]:
    """domainstats: a fetched page adds to its group's fetched count and to FETCHED; any other
    to NOT_FETCHED (Nutch's counts); with `every`, each page also adds to its group's count of
    all pages. Keys: ('fetched', group), ('all', group) and ('total', FETCHED | NOT_FETCHED)."""
    fetched = record['status'] in FETCHED_STATUSES
    group = group_of(record['url'], mode, domains) if fetched or every else ''
    keys: List[tuple] = [('total', FETCHED if fetched else NOT_FETCHED)]
    if fetched and group:
        keys.append(('fetched', group))
    if every and group:
        keys.append(('all', group))
    return keys


def completion_keys(record: dict, mode: str, domains: DomainHelper) -> List[str]:
    """crawlcomplete: `group FETCHED` or `group UNFETCHED` (host or domain mode)."""
    group = group_of(record['url'], mode, domains)
    return [f'{group} {FETCHED if record["status"] in FETCHED_STATUSES else UNFETCHED}']


def protocol_keys(record: dict, by: str = 'code') -> List[str]:
    """protocolstats: the page's last HTTP code (Nutch's `nutch.protocol.code`), or with
    by='status' its last protocol status name (`_pst_`). A page whose last attempt got no HTTP
    answer (robots_denied, a network error) counts by its status name in both (Nutch counts it
    UNFETCHED); UNFETCHED is a page never attempted."""
    meta = record.get('metadata') or {}
    value = (meta.get('nutch.protocol.code') if by == 'code' else None) or meta.get('_pst_')
    return [value if value else UNFETCHED]


def ordered(counts) -> List[tuple]:
    """(count, key) pairs, the largest count first (then by key), as Nutch's tools list them."""
    return sorted(((n, key) for key, n in counts), key=lambda item: (-item[0], item[1]))
