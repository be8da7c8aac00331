"""The CrawlDb update of one URL (Nutch's CrawlDbReducer). Pure, no Beam.

`merge_url(olds, fetches, links, signatures, now, rules)` → (new record or None, outcome) is
Nutch's CrawlDbReducer with these deliberate decisions:

* Inlinks over `db.update.max.inlinks`: the HIGHEST-scoring are kept (D28 in
  docs/nutch-differences.md).
* Ties are broken deterministically: the newest fetch wins, then a real attempt over a
  `notfetching` record, then the higher status code; the newest signature record wins.
* A `notfetching` fetch record (never attempted: time limit, cut-off queue, robots.txt
  unavailable) leaves the crawldb record as it was, with no retry counted, except that the
  generate marker is removed so that it is due again (D17). So does a `blocked` one (refused
  by our own address policy: the server said nothing, D42); generate refuses such URLs while
  the policy stands, and selects them again once it allows them.
* No carried-over signature (D20): fetch records carry no signature unless parse made
  one, so a re-downloaded page is never "not modified" by comparing an old signature with
  itself. Redirect results keep the old signature, as Nutch's do in practice.
* Several crawldb records for one URL (possible after --normalize): the newest fetch time wins.
"""

import dataclasses
from typing import List, Optional, Sequence, Tuple

from beamcrawl.transforms.policy.protocol import NOT_ATTEMPTED
from beamcrawl.transforms.policy.schedule import (STATE_MODIFIED, STATE_NOTMODIFIED, STATE_UNKNOWN,
                                                  FetchSchedule)
from beamcrawl.transforms.policy.simhash import SIMHASH_KEY
from beamcrawl.transforms.storage.records import METADATA_GENERATE_TIME, STATUS_CODES

__all__ = ['UpdateRules', 'merge_url', 'pick_fetch', 'top_links', 'merge_links_only']


@dataclasses.dataclass(frozen=True)
class UpdateRules:
    schedule: FetchSchedule
    scoring: object                 # an OpicScoring-like scorer
    retry_max: int                  # db.fetch.retry.max
    max_interval: int               # db.fetch.interval.max, s
    additions_allowed: bool         # db.update.additions.allowed
    max_inlinks: int                # db.update.max.inlinks


def pick_fetch(fetches: Sequence[dict]) -> Optional[dict]:
    """The fetch record that counts: newest, then attempted over notfetching, then status."""
    if not fetches:
        return None
    return max(fetches, key=lambda f: (f['fetch_time'],
                                       f.get('protocol_status') not in NOT_ATTEMPTED,
                                       STATUS_CODES[f['status']], f['url']))


def top_links(links: Sequence[dict], bound: int) -> List[dict]:
    """The `bound` highest-scoring linked records, highest first (ties: newest, then metadata
    order for determinism)."""
    if len(links) <= 1:                     # the usual case: nothing to order
        return list(links) if bound != 0 else []
    ordered = sorted(links, key=lambda r: (-r['score'], -r['fetch_time'],
                                           sorted(r['metadata'].items())))
    return ordered[:bound] if bound >= 0 else ordered


def _without_marker(record: dict) -> dict:
    if METADATA_GENERATE_TIME not in record['metadata']:
        return record
    metadata = dict(record['metadata'])
    del metadata[METADATA_GENERATE_TIME]
    return dict(record, metadata=metadata)


def merge_url(olds: Sequence[dict], fetches: Sequence[dict], links: Sequence[dict],
              signatures: Sequence[dict], now: int, rules: UpdateRules
              ) -> Tuple[Optional[dict], str]:
    """The new crawldb record of one URL and what happened ('added', 'updated', 'unchanged',
    'not_added', 'notfetching', 'blocked', 'dropped')."""
    if len(olds) == 1:
        old = olds[0]
    else:
        old = max(olds, key=lambda r: (r['fetch_time'], STATUS_CODES[r['status']])) if olds else None
    links = top_links(links, rules.max_inlinks)
    link_scores = [link['score'] for link in links]
    if old is None and not rules.additions_allowed:
        return None, 'not_added'
    fetch = pick_fetch(fetches)
    if fetch is None and links:
        fetch = links[0]
    if fetch is None:
        return (old, 'unchanged') if old is not None else (None, 'dropped')

    scoring, schedule = rules.scoring, rules.schedule
    if fetch.get('protocol_status') in NOT_ATTEMPTED:
        base = old if old is not None else dict(fetch, status='db_unfetched', signature=None,
                                                protocol_status=None, http_code=None)
        result = _without_marker(dict(base, score=scoring.update_db_score(
            old['score'] if old else None, base['score'], link_scores)))
        return result, fetch['protocol_status']

    newest = max(signatures, key=lambda s: (s['fetch_time'], s['signature'] or b'')
                 ) if signatures else None
    signature = newest['signature'] if newest is not None else fetch['signature']
    prev_fetch = old['fetch_time'] if old else 0
    prev_mod = old['modified_time'] if old else 0
    result = dict(fetch, protocol_status=None, http_code=None)
    if old is not None and old['metadata']:
        result['metadata'] = {**old['metadata'], **fetch['metadata']}
    if old is not None and old['modified_time'] > 0 and fetch['modified_time'] == 0:
        result['modified_time'] = old['modified_time']
    old_signature = old['signature'] if old else None
    status = fetch['status']
    t_f = fetch['fetch_time']

    def schedule_it(record, state):
        return schedule.set_fetch_schedule(record, prev_fetch=prev_fetch, prev_mod=prev_mod,
                                           fetch_time=t_f, mod_time=record['modified_time'],
                                           state=state)

    if status == 'linked':
        if old is not None:
            result = dict(old)                   # only the score changes
        else:
            result = schedule.initialize(dict(result, status='db_unfetched', signature=None,
                                              score=scoring.initial_score()), now)
    elif status == 'fetch_success':
        if old_signature is not None and signature is not None:
            same = old_signature == signature
            state = STATE_NOTMODIFIED if same else STATE_MODIFIED
        else:
            same, state = False, STATE_UNKNOWN
        result = schedule_it(dict(result, status='db_notmodified' if same else 'db_fetched',
                                  signature=old_signature if same else signature), state)
        if same:
            result['modified_time'] = prev_mod
        if newest is not None:
            result['metadata'] = _with_fingerprint(result['metadata'], newest['metadata'])
        result = _force_refetch_if_needed(result, rules, now)
    elif status in ('fetch_redir_temp', 'fetch_redir_perm'):
        kept = signature if signature is not None else old_signature
        result = schedule_it(dict(result, status='db_' + status[len('fetch_'):],
                                  signature=kept), STATE_UNKNOWN)
        result = _force_refetch_if_needed(result, rules, now)
    elif status == 'fetch_notmodified':
        result = schedule_it(dict(result, status='db_notmodified', signature=old_signature),
                             STATE_NOTMODIFIED)
        result['modified_time'] = prev_mod
        result = _force_refetch_if_needed(result, rules, now)
    elif status == 'fetch_retry':
        result = schedule.set_page_retry(dict(result, signature=old_signature), t_f)
        if result['retries'] < rules.retry_max:
            result['status'] = 'db_unfetched'
        else:
            result = schedule.set_page_gone(dict(result, status='db_gone'), t_f)
    elif status == 'fetch_gone':
        result = schedule.set_page_gone(dict(result, status='db_gone', signature=old_signature),
                                        t_f)
    else:
        return (old, 'unchanged') if old is not None else (None, 'dropped')

    result['score'] = scoring.update_db_score(old['score'] if old else None, result['score'],
                                              link_scores)
    return _without_marker(result), ('updated' if old is not None else 'added')


def _with_fingerprint(metadata: dict, parsed: dict) -> dict:
    """A fetched page's metadata with the SimHash fingerprint of its new parse (or none, when
    the new parse has no words: an older one no longer describes the page)."""
    out = {k: v for k, v in metadata.items() if k != SIMHASH_KEY}
    if parsed and SIMHASH_KEY in parsed:
        out[SIMHASH_KEY] = parsed[SIMHASH_KEY]
    return out


def merge_links_only(old_score: float, links: Sequence[dict], rules: UpdateRules
                     ) -> Tuple[float, str]:
    """merge_url for a crawldb record whose update brings links and perhaps signature records,
    but no fetch: the record stays as it was except for its score (and the generate marker,
    which merge_url removes except when the outcome is 'unchanged'). Returns (the new score,
    the outcome). The updatedb reducer uses it to patch the score into the record's encoded
    bytes instead of decoding and encoding the record (docs/performance.md)."""
    links = top_links(links, rules.max_inlinks)
    if not links:
        return old_score, 'unchanged'
    score = rules.scoring.update_db_score(old_score, old_score, [link['score'] for link in links])
    return score, ('notfetching' if links[0].get('protocol_status') == 'notfetching'
                   else 'updated')


def _force_refetch_if_needed(record: dict, rules: UpdateRules, now: int) -> dict:
    if record['fetch_interval'] > rules.max_interval:
        return rules.schedule.force_refetch(record, asap=False, now=now)
    return record
