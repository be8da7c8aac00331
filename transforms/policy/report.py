"""What `beamcrawl report` counts, per record, and how the counts become the report's sections.
Pure: the pipeline (transforms/report.py) calls the key functions on every record and sums
what they give; `assemble` turns the summed rows into the dict that report_html.py renders.

A row is `[kind, key, value]` (JSON): kind names what was counted, key is a string or a list,
value a number or a dict. docs/report.md describes each section.
"""

import math
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from beamcrawl.transforms.policy.crawlstats import FETCHED_STATUSES, group_of
from beamcrawl.transforms.policy.urlparts import MalformedUrl, host_of

__all__ = ['SCORE_BINS', 'INTERVAL_BINS', 'INDEGREE_BINS', 'INJECTED', 'bin_of', 'crawldb_keys',
           'discovery_round', 'changes',
           'group_keys', 'fetch_record', 'fetch_keys', 'host_stats', 'change_of', 'assemble']

# Histogram bins: (lower bound, label); a value falls in the last bin whose bound it reaches.
SCORE_BINS = ((-math.inf, '< 0'), (0.0, '0 – 0.001'), (0.001, '0.001 – 0.01'),
              (0.01, '0.01 – 0.1'), (0.1, '0.1 – 0.5'), (0.5, '0.5 – 1'), (1.0, '1 – 2'),
              (2.0, '2 – 5'), (5.0, '5 – 10'), (10.0, '≥ 10'))
_H, _D = 3600, 86400
INTERVAL_BINS = ((0, '< 1 h'), (_H, '1 – 6 h'), (6 * _H, '6 – 24 h'), (_D, '1 – 2 d'),
                 (2 * _D, '2 – 7 d'), (7 * _D, '7 – 30 d'), (30 * _D, '30 – 90 d'),
                 (90 * _D, '90 – 365 d'), (365 * _D, '≥ 365 d'))
INDEGREE_BINS = ((0, '0'), (1, '1'), (2, '2'), (3, '3 – 4'), (5, '5 – 9'), (10, '10 – 99'),
                 (100, '100 – 999'), (1000, '≥ 1000'))
INJECTED = 'injected'     # the discovery round of a URL no segment linked to (seeds, sitemaps)

# Outcomes of a fetch that are reported apart rather than as a host's failures.
_NOT_FAILURES = frozenset({'success', 'notmodified', 'moved', 'temp_moved', 'notfetching',
                           'robots_denied', 'blocked'})


def bin_of(value: float, bins: Sequence[Tuple[float, str]]) -> str:
    """The label of the bin `value` falls in."""
    label = bins[0][1]
    for bound, name in bins:
        if value >= bound:
            label = name
        else:
            break
    return label


def discovery_round(items: Iterable[Sequence[Any]]) -> Tuple[Optional[str], Optional[int]]:
    """(crawldb status, discovery round) of a URL from what the report's map side found for it:
    ('db', status) from the crawldb, ('linked', i) where segment i linked to it, ('generated',
    i, ...) where segment i was to fetch it (other items are ignored). The round is the first
    segment that linked to it before any segment fetched it (a URL is in the crawldb, and can
    be generated, only after the round that found it); None when none did (a seed or a
    sitemap URL: injected). The status is None for a URL no longer in the crawldb (filtered,
    or never added)."""
    status, linked, generated = None, None, None
    for item in items:
        kind = item[0]
        if kind == 'db':
            status = item[1]
        elif kind == 'linked':
            linked = item[1] if linked is None else min(linked, item[1])
        elif kind == 'generated':
            generated = item[1] if generated is None else min(generated, item[1])
    if linked is not None and (generated is None or linked < generated):
        return status, linked
    return status, None


def changes(items: Iterable[Sequence[Any]]) -> List[Tuple[int, str]]:
    """(segment index, change_of) for each segment that fetched a URL again, from its items:
    ('generated', i, status then, signature then), ('fetched', i, status), ('signature', i,
    signature parse computed)."""
    generated: Dict[int, dict] = {}
    fetched: Dict[int, dict] = {}
    signatures: Dict[int, bytes] = {}
    for item in items:
        if item[0] == 'generated':
            generated[item[1]] = {'status': item[2], 'signature': item[3]}
        elif item[0] == 'fetched':
            fetched[item[1]] = {'status': item[2]}
        elif item[0] == 'signature':
            signatures[item[1]] = item[2]
    out = []
    for i in sorted(generated):
        change = change_of(generated[i], fetched.get(i), signatures.get(i))
        if change is not None:
            out.append((i, change))
    return out


def crawldb_keys(record: dict) -> List[tuple]:
    """The crawldb histograms a record adds 1 to: its score bin (not for a NaN score) and its
    fetch-interval bin."""
    keys = [('interval', bin_of(record['fetch_interval'], INTERVAL_BINS))]
    if not math.isnan(record['score']):
        keys.append(('score', bin_of(record['score'], SCORE_BINS)))
    return keys


def group_keys(record: dict, domains) -> List[Tuple[tuple, Tuple[int, int]]]:
    """((mode, group), (1, fetched 0/1)) for the record's host and registrable domain."""
    fetched = 1 if record['status'] in FETCHED_STATUSES else 0
    out = []
    for mode in ('host', 'domain'):
        group = group_of(record['url'], mode, domains)
        if group:
            out.append(((mode, group), (1, fetched)))
    return out


def fetch_record(record: dict) -> Optional[dict]:
    """The facts of one crawl_fetch record the report uses, None for a `linked` record (a
    redirect target to add, not a fetch): host, status, protocol status, the request's start and
    end (ms, None when not timed), its politeness queue and delay (s)."""
    if record['status'] == 'linked':
        return None
    meta = record.get('metadata') or {}
    try:
        host = host_of(record['url'])
    except MalformedUrl:
        host = ''
    start, end = meta.get('fetch.start'), meta.get('fetch.end')
    timed = start is not None and end is not None
    try:
        delay = float(meta['fetch.delay']) if 'fetch.delay' in meta else None
    except ValueError:
        delay = None
    return {'host': host, 'status': record['status'],
            'protocol': record.get('protocol_status') or meta.get('_pst_') or '',
            'start': int(start) if timed else None, 'end': int(end) if timed else None,
            'queue': meta.get('fetch.queue'), 'delay': delay}


def fetch_keys(segment: str, fact: dict) -> List[tuple]:
    """The per-segment counts a fetch adds 1 to: its status, its protocol status, the second it
    ended in (pages over time), and robots denials or address-policy refusals by host."""
    keys = [('fetch_status', segment, fact['status']),
            ('fetch_protocol', segment, fact['protocol'])]
    if fact['end'] is not None:
        keys.append(('fetch_second', segment, fact['end'] // 1000))
    if fact['protocol'] == 'robots_denied':
        keys.append(('robots_denied', segment, fact['host']))
    elif fact['protocol'] == 'blocked':
        keys.append(('blocked', segment, fact['host']))
    return keys


def host_stats(fact: dict) -> Tuple[int, int, int, int]:
    """(fetches, failures, timed fetches, ms spent) a fetch adds to its host."""
    failed = 1 if fact['protocol'] not in _NOT_FAILURES else 0
    if fact['protocol'] in ('notfetching', 'blocked'):
        return (0, 0, 0, 0)
    if fact['start'] is None:
        return (1, failed, 0, 0)
    return (1, failed, 1, max(0, fact['end'] - fact['start']))


def change_of(generated: Optional[dict], fetched: Optional[dict],
              signature: Optional[bytes]) -> Optional[str]:
    """How a page fetched again compared with its previous fetch: 'not_modified' (a 304),
    'unchanged' (same signature), 'changed', or None when this was not a second fetch of a
    page that had content (a first fetch, a failure). `generated` is the page's crawl_generate
    record (its crawldb state when the fetch list was made), `fetched` its crawl_fetch record,
    `signature` what parse computed."""
    if generated is None or fetched is None or generated['status'] not in FETCHED_STATUSES:
        return None
    if fetched['status'] == 'fetch_notmodified':
        return 'not_modified'
    if fetched['status'] != 'fetch_success' or signature is None or \
            not generated.get('signature'):
        return None
    return 'unchanged' if signature == generated['signature'] else 'changed'


# -- assembling -------------------------------------------------------------------------------

def _ordered_bins(counts: Dict[str, int], bins) -> List[Tuple[str, int]]:
    return [(label, counts.get(label, 0)) for _, label in bins]


def _rebin_seconds(seconds: Dict[int, int], max_bins: int = 60) -> Dict[str, Any]:
    """Pages per second over a fetch, in at most `max_bins` bins of whole seconds: the bin's
    start (s from the first second), its width (s) and pages/s."""
    if not seconds:
        return {'width_s': 0, 'points': []}
    first, last = min(seconds), max(seconds)
    span = last - first + 1
    width = max(1, math.ceil(span / max_bins))
    bins: Dict[int, int] = {}
    for second, count in seconds.items():
        index = (second - first) // width
        bins[index] = bins.get(index, 0) + count
    points = [(i * width, bins.get(i, 0) / width) for i in range((span + width - 1) // width)]
    return {'width_s': width, 'points': points, 'first_s': first}


def assemble(rows: Iterable[Sequence[Any]], *, applied: Sequence[str], segments: Sequence[str],
             linkdb_applied: Sequence[str], top: int) -> Dict[str, Any]:
    """The report's data from the pipeline's rows. `applied` are the crawldb's applied
    segments, `segments` every segment of the crawl dir, in order."""
    counts: Dict[str, Dict[Any, Any]] = {}
    single: Dict[str, Any] = {}
    for kind, key, value in rows:
        if key is None:
            single[kind] = value
        else:
            counts.setdefault(kind, {})[tuple(key) if isinstance(key, list) else key] = value
    stats = single.get('crawldb_stats')
    hist = counts.get('crawldb_hist', {})
    out: Dict[str, Any] = {'segments': list(segments), 'applied': list(applied), 'top': top}
    out['crawldb'] = None if stats is None else {
        'stats': stats,
        'score_bins': _ordered_bins({k[1]: n for k, n in hist.items() if k[0] == 'score'},
                                    SCORE_BINS),
        'interval_bins': _ordered_bins({k[1]: n for k, n in hist.items()
                                        if k[0] == 'interval'}, INTERVAL_BINS)}
    # composition: the crawldb's URLs by the round that first linked to them, by status now
    rounds = [INJECTED] + [s for s in segments]
    by_round: Dict[str, Dict[str, int]] = {}
    for (round_, status), n in counts.get('discovered', {}).items():
        by_round.setdefault(round_, {})[status] = n
    out['composition'] = [(r, by_round.get(r, {})) for r in rounds if r in by_round]
    # hosts and domains
    groups = {}
    for mode in ('host', 'domain'):
        rows_ = single.get(f'top_{mode}s') or []
        groups[mode] = {'count': (counts.get('group_count', {})).get(mode, 0),
                        'top': [{'name': name, 'urls': urls, 'fetched': fetched}
                                for urls, name, fetched in rows_]}
    out['groups'] = groups
    # segments
    segs = []
    for name in segments:
        seg = {'name': name,
               'generated': counts.get('part_records', {}).get((name, 'crawl_generate')),
               'fetched': counts.get('part_records', {}).get((name, 'crawl_fetch')),
               'parsed': counts.get('part_records', {}).get((name, 'parse_data')),
               'bytes': counts.get('content_bytes', {}).get(name, 0),
               'start': counts.get('fetch_start', {}).get(name),
               'end': counts.get('fetch_end', {}).get(name),
               'status': _of_segment(counts.get('fetch_status', {}), name),
               'protocol': _of_segment(counts.get('fetch_protocol', {}), name),
               'robots_denied': _of_segment(counts.get('robots_denied', {}), name),
               'blocked': _of_segment(counts.get('blocked', {}), name),
               'changes': _of_segment(counts.get('change', {}), name),
               'slowest': counts.get('slowest_hosts', {}).get(name, []),
               'failing': counts.get('failing_hosts', {}).get(name, []),
               'politeness': counts.get('politeness', {}).get(name, []),
               'queues': counts.get('politeness_queues', {}).get(name, 0),
               'violations': counts.get('politeness_violations', {}).get(name, 0)}
        seconds = {int(k[1]): n for k, n in counts.get('fetch_second', {}).items()
                   if k[0] == name}
        seg['rate'] = _rebin_seconds(seconds)
        segs.append(seg)
    out['segment_reports'] = segs
    # linkdb
    link_stats = single.get('linkdb_total')
    out['linkdb'] = None if link_stats is None else {
        'urls': link_stats, 'applied': list(linkdb_applied),
        'inlinks': single.get('linkdb_inlinks', 0),
        'indegree_bins': _ordered_bins(counts.get('indegree', {}), INDEGREE_BINS[1:]),
        'top': [{'url': url, 'inlinks': n} for n, url in single.get('top_linked') or []]}
    return out


def _of_segment(counts: Dict[tuple, Any], segment: str) -> Dict[str, Any]:
    """{name: count} of the keys (segment, name) of one segment, largest first."""
    items = [(k[1], n) for k, n in counts.items() if k[0] == segment]
    return dict(sorted(items, key=lambda kv: (-kv[1], kv[0])))
