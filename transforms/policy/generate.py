"""The Generator's decisions (Nutch's Generator). Pure, no Beam.

* `GenerateSettings.check(record, now)`: Nutch's per-record checks in Nutch's order (the URL
  filter is applied by the caller, first).
* `sort_key(...)`: highest sort value first; ties: the record due longest (smallest fetch time)
  first, then the smaller URL. Nutch leaves ties in no defined order. With the optimal
  schedule (`GenerateSettings.sort_key`), what a fetch now gains first (policy/optimal.py
  record_gain; docs/schedules.md), then that order.
* `assign_segments(...)`: the SelectorReducer walk over one globally sorted list, so
  topN is exact (Nutch splits topN evenly over its reducers and can select fewer).
* `segment_names(...)`: unique, increasing segment names without sleeping.

docs/nutch-differences.md D11: when a host moves to the next segment the count there starts at 1
(the URL being placed), and a segment already holding topN URLs is never given more; so no
segment exceeds topN and no host exceeds generate.max.count in any segment.
"""

import dataclasses
import datetime
import math
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from beamcrawl.transforms.policy.schedule import should_fetch
from beamcrawl.transforms.policy.scoring import OpicScoring
from beamcrawl.transforms.storage.records import METADATA_GENERATE_TIME, STATUS_CODES

__all__ = ['GenerateSettings', 'sort_key', 'assign_segments', 'Assignment',
           'segment_names', 'REJECT_REASONS']

# Rejection reasons, in the order the checks run; each has a counter generate.rejected.<reason>.
REJECT_REASONS = ('filtered', 'denied_address', 'not_due', 'generate_locked', 'status_restricted',
                  'below_min_score', 'interval_too_long', 'host_skipped')
# ('host_skipped': its host is left out by the hostdb, policy/hostdb.py skip_reason; checked
# right after the address policy.)


@dataclasses.dataclass(frozen=True)
class GenerateSettings:
    max_interval: int            # db.fetch.interval.max, s
    gen_delay: int               # crawl.gen.delay, ms
    restrict_status: str         # generate.restrict.status ('' = none)
    min_score: float             # generate.min.score
    min_interval: int            # generate.min.interval, s (-1 = none)
    gain_prior_rate: float = 0.0  # the optimal schedule's prior rate (changes/day); 0: not it
    gain_max_days: float = math.inf  # the optimal schedule's longest interval, days

    @classmethod
    def create(cls, *, restrict_status: str, **fields) -> 'GenerateSettings':
        """The settings, checked: ValueError for a status name that does not exist."""
        if restrict_status and restrict_status.lower() not in STATUS_CODES:
            raise ValueError(f'generate.restrict.status={restrict_status}: not a status name')
        return cls(restrict_status=restrict_status.lower(), **fields)

    def check(self, record: dict, now: int) -> Tuple[str, dict]:
        """('' and the fetch-list copy of the record) or (rejection reason, record)."""
        due, candidate = should_fetch(record, now, self.max_interval)
        if not due:
            return 'not_due', record
        generated = record['metadata'].get(METADATA_GENERATE_TIME)
        if generated is not None:
            try:
                if int(generated) + self.gen_delay > now:
                    return 'generate_locked', record
            except ValueError:
                pass   # an unreadable marker locks nothing
        if self.restrict_status and record['status'] != self.restrict_status:
            return 'status_restricted', record
        if sort_value(record) < self.min_score:
            return 'below_min_score', record
        if self.min_interval != -1 and record['fetch_interval'] > self.min_interval:
            return 'interval_too_long', record
        return '', candidate

    def sort_key(self, record: dict, now: int) -> tuple:
        """Ascending order of this key is the selection order: sort_key, after the gain of a
        fetch now with the optimal schedule."""
        if not self.gain_prior_rate:
            return sort_key(record)
        from beamcrawl.transforms.policy.optimal import record_gain
        return (-record_gain(record, now, self.gain_prior_rate, self.gain_max_days),) + \
            sort_key(record)


_SCORING = OpicScoring()


def sort_value(record: dict) -> float:
    """The generator sort value, as the scorer defines it (OPIC: the score)."""
    return _SCORING.sort_value(record)


def sort_key(record: dict) -> tuple:
    """Ascending order of this key is the selection order."""
    return (-sort_value(record), record['fetch_time'], record['url'])


@dataclasses.dataclass
class Assignment:
    """Result of the walk: segment (1-based) of each selected item, and what was left out."""
    segments: Dict[str, int] = dataclasses.field(default_factory=dict)
    over_limit: int = 0          # not reached: topN × maxNumSegments URLs were already placed
    host_capped: int = 0         # its host/domain had generate.max.count URLs in every segment
    hosts_affected: int = 0      # hosts/domains that had URLs left out by the cap


def assign_segments(items: Iterable[Tuple[str, str]], *, top_n: Optional[int], max_count: int,
                    max_segments: int, host_max: Optional[Dict[str, int]] = None
                    ) -> Assignment:
    """SelectorReducer's walk over (count key, url) pairs given in selection order.

    top_n: URLs per segment (None: unlimited). max_count: URLs per host/domain per segment
    (≤ 0: unlimited). max_segments: how many segments may be filled. host_max: count keys with a
    max count of their own (the hostdb's generate.max.count.expr; ≤ 0: unlimited), each key's
    own: a key absent from it has max_count (docs/nutch-differences.md D92).
    """
    limit = top_n if top_n is not None else float('inf')
    out = Assignment()
    seg_counts = [0] * (max_segments + 2)
    host_state: Dict[str, Tuple[int, int]] = {}
    capped_hosts = set()
    capped, unlimited = max_count > 0 or host_max is not None, float('inf')
    count, current = 0, 1
    items = iter(items)
    for key, url in items:
        if count >= limit:
            if current < max_segments:
                count, current = 0, current + 1
            else:
                out.over_limit += 1 + sum(1 for _ in items)
                break
        if capped:
            cap = max_count if host_max is None else (host_max.get(key, max_count) or -1)
            if cap < 0:
                cap = unlimited
            seg, in_seg = host_state.get(key, (1, 0))
            in_seg += 1
            while seg <= max_segments and (seg_counts[seg] >= limit or in_seg > cap):
                seg, in_seg = seg + 1, 1
            if seg > max_segments:
                out.host_capped += 1
                if key not in capped_hosts:
                    capped_hosts.add(key)
                    out.hosts_affected += 1
                continue
            host_state[key] = (seg, in_seg)
        else:
            seg = current
        seg_counts[seg] += 1
        out.segments[url] = seg
        count += 1
    return out


def segment_names(existing: Sequence[str], now: int, count: int) -> List[str]:
    """`count` new segment names (yyyyMMddHHmmss, UTC): the time of `now`, or one second after
    the newest existing segment if that is not later, then one second apart."""
    start = datetime.datetime.fromtimestamp(now // 1000, datetime.timezone.utc)
    newest = max((n for n in existing if len(n) == 14 and n.isdigit()), default=None)
    if newest is not None:
        after = datetime.datetime.strptime(newest, '%Y%m%d%H%M%S').replace(
            tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=1)
        start = max(start, after)
    return [(start + datetime.timedelta(seconds=i)).strftime('%Y%m%d%H%M%S')
            for i in range(count)]
