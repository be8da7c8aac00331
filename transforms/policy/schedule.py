"""Fetch schedules (Nutch's FetchSchedule classes). Pure, no Beam.

`DefaultFetchSchedule` keeps intervals fixed; `AdaptiveFetchSchedule` shortens the interval of
pages that change and lengthens it for pages that do not, exactly as Nutch computes it (float32
arithmetic like Java's, so results match Nutch to the second); `MimeAdaptiveFetchSchedule`
takes its rates per MIME type. Records are plain dicts; every method returns a changed copy.

The adaptive sync-delta offset keeps Nutch's integer division (it is 0 whenever the offset
exceeds the maximum interval), so intervals and fetch times match Nutch (docs/nutch-differences.md
D31).
"""

import math
import struct
from typing import Dict, Mapping, Optional, Tuple

__all__ = ['should_fetch', 'MS_PER_S', 'STATE_UNKNOWN', 'STATE_MODIFIED', 'STATE_NOTMODIFIED',
           'FetchSchedule', 'DefaultFetchSchedule', 'AdaptiveFetchSchedule',
           'MimeAdaptiveFetchSchedule', 'parse_host_intervals', 'parse_mime_rates',
           'SCHEDULE_KINDS', 'schedule_kind']

MS_PER_S = 1000
DAY_MS = 86400 * 1000
STATE_UNKNOWN, STATE_MODIFIED, STATE_NOTMODIFIED = 0, 1, 2

SCHEDULE_KINDS = {
    'org.apache.nutch.crawl.DefaultFetchSchedule': 'default', 'DefaultFetchSchedule': 'default',
    'default': 'default',
    'org.apache.nutch.crawl.AdaptiveFetchSchedule': 'adaptive',
    'AdaptiveFetchSchedule': 'adaptive', 'adaptive': 'adaptive',
    'org.apache.nutch.crawl.MimeAdaptiveFetchSchedule': 'mime-adaptive',
    'MimeAdaptiveFetchSchedule': 'mime-adaptive', 'mime-adaptive': 'mime-adaptive',
    'optimal': 'optimal', 'OptimalFetchSchedule': 'optimal',       # ours (policy/optimal.py)
}


def schedule_kind(name: str) -> str:
    try:
        return SCHEDULE_KINDS[name]
    except KeyError:
        raise ValueError(f'db.fetch.schedule.class={name}: expected one of '
                         f'{sorted(set(SCHEDULE_KINDS))}') from None


def f32(x: float) -> float:
    """Rounds to the nearest float32, as a Java float holds it."""
    return struct.unpack('f', struct.pack('f', x))[0]


def java_round(x: float) -> int:
    """Math.round: nearest, ties up."""
    return int(math.floor(x + 0.5))


def _cap_interval(interval: int, max_interval: int) -> int:
    """An interval above max_interval becomes 0.9 × max_interval (Java rounds the float)."""
    return java_round(0.9 * max_interval) if interval > max_interval else interval


def should_fetch(record: dict, now: int, max_interval: int) -> Tuple[bool, dict]:
    """AbstractFetchSchedule.shouldFetch: (due?, record to put in the fetch list).

    A fetch time more than `max_interval` seconds in the future is not trusted (a clock jump,
    a bad import): the record is made due now and an interval above the maximum is capped.
    The returned record is a copy when it was changed; the crawldb record itself is not.
    """
    if record['fetch_time'] - now > max_interval * MS_PER_S:
        record = dict(record, fetch_time=now,
                      fetch_interval=_cap_interval(record['fetch_interval'], max_interval))
    return record['fetch_time'] <= now, record


class FetchSchedule:
    """AbstractFetchSchedule: what every schedule shares."""

    kind = 'abstract'

    def __init__(self, *, default_interval: int, max_interval: int):
        self.default_interval = default_interval
        self.max_interval = max_interval

    def initialize(self, record: dict, now: int) -> dict:
        """A new URL: due now, the default interval, no retries."""
        return dict(record, fetch_time=now, fetch_interval=self.default_interval, retries=0)

    def set_fetch_schedule(self, record: dict, *, prev_fetch: int, prev_mod: int,
                           fetch_time: int, mod_time: int, state: int) -> dict:
        raise NotImplementedError

    def set_page_gone(self, record: dict, fetch_time: int) -> dict:
        """Longer and longer intervals for a page that is gone: × 1.5, capped at 0.9 × max."""
        interval = record['fetch_interval']
        if interval * 1.5 < self.max_interval:
            interval = java_round(f32(interval * f32(1.5)))
        else:
            interval = java_round(f32(self.max_interval * f32(0.9)))
        return dict(record, fetch_interval=interval,
                    fetch_time=fetch_time + interval * MS_PER_S)

    def set_page_retry(self, record: dict, fetch_time: int) -> dict:
        """A transient failure: try again in a day, one more retry counted."""
        return dict(record, fetch_time=fetch_time + DAY_MS, retries=record['retries'] + 1)

    def force_refetch(self, record: dict, *, asap: bool, now: int) -> dict:
        """Makes a page look new again (interval capped), e.g. when its interval is too long."""
        out = dict(record, status='db_unfetched', retries=0, signature=None, modified_time=0,
                   fetch_interval=_cap_interval(record['fetch_interval'], self.max_interval))
        if asap:
            out['fetch_time'] = now
        return out


class DefaultFetchSchedule(FetchSchedule):
    """The interval never changes; the next fetch is one interval after this one."""

    kind = 'default'

    def set_fetch_schedule(self, record, *, prev_fetch, prev_mod, fetch_time, mod_time, state):
        interval = record['fetch_interval'] or self.default_interval
        modified = fetch_time if mod_time <= 0 or state == STATE_MODIFIED else mod_time
        return dict(record, retries=0, fetch_interval=interval,
                    fetch_time=fetch_time + interval * MS_PER_S, modified_time=modified)


class AdaptiveFetchSchedule(FetchSchedule):
    """AdaptiveFetchSchedule.setFetchSchedule, step by step as Nutch computes it."""

    kind = 'adaptive'

    def __init__(self, *, default_interval: int, max_interval: int, inc_rate: float,
                 dec_rate: float, min_interval_s: float, max_interval_s: float,
                 sync_delta: bool, sync_delta_rate: float,
                 host_intervals: Optional[Mapping[str, Tuple[Optional[float],
                                                             Optional[float]]]] = None):
        super().__init__(default_interval=default_interval, max_interval=max_interval)
        self.inc_rate, self.dec_rate = f32(inc_rate), f32(dec_rate)
        self.min_interval, self.max_interval_s = f32(min_interval_s), f32(max_interval_s)
        self.sync_delta = sync_delta
        self.sync_delta_rate = f32(sync_delta_rate)        # a float, widened to double in use
        self.host_intervals = dict(host_intervals or {})

    def _rates(self, record: dict) -> Tuple[float, float]:
        return self.inc_rate, self.dec_rate

    def _bounds(self, record: dict) -> Tuple[float, float]:
        lo, hi = self.min_interval, self.max_interval_s
        if self.host_intervals:
            # pure; only needed with host intervals
            from beamcrawl.transforms.policy.urlparts import host_of
            custom = self.host_intervals.get(host_of(record['url']))
            if custom:
                lo = f32(custom[0]) if custom[0] is not None else lo
                hi = f32(custom[1]) if custom[1] is not None else hi
        return lo, hi

    def set_fetch_schedule(self, record, *, prev_fetch, prev_mod, fetch_time, mod_time, state):
        interval = f32(record['fetch_interval'] or self.default_interval)
        ref_time = fetch_time
        fixed = record['metadata'].get('fixedInterval')
        fixed_value = None
        if fixed is not None:
            try:
                fixed_value = f32(float(fixed))
            except ValueError:
                fixed_value = None
        if fixed_value is not None:
            interval = fixed_value
            mod = mod_time
        else:
            mod = mod_time if mod_time > 0 else fetch_time
            inc, dec = self._rates(record)
            if state == STATE_MODIFIED:
                interval = f32(interval * f32(1.0 - dec))
                mod = fetch_time
            elif state == STATE_NOTMODIFIED:
                interval = f32(interval * f32(1.0 + inc))
            min_i, max_i = self._bounds(record)
            if self.sync_delta:
                delta = fetch_time - mod
                if f32(delta) > f32(interval * 1000):
                    interval = f32(delta // 1000)
                offset = java_round(delta * self.sync_delta_rate)
                if delta > 0 and offset > int(max_i) * 1000:
                    offset = (offset // delta) * int(max_i) * 1000     # Nutch's (D31)
                ref_time = fetch_time - offset
            if interval < min_i:
                interval = min_i
            elif interval > max_i:
                interval = max_i
        return dict(record, retries=0, fetch_interval=java_round(interval),
                    fetch_time=ref_time + java_round(interval * 1000.0), modified_time=mod)


class MimeAdaptiveFetchSchedule(AdaptiveFetchSchedule):
    """Adaptive, with inc/dec rates per MIME type (metadata Content-Type, up to the first ';')."""

    kind = 'mime-adaptive'

    def __init__(self, *, mime_rates: Mapping[str, Tuple[float, float]], **kw):
        super().__init__(**kw)
        self.mime_rates = {k.lower(): (f32(i), f32(d)) for k, (i, d) in mime_rates.items()}

    def _rates(self, record):
        mime = record['metadata'].get('Content-Type')
        if mime is not None:
            hit = self.mime_rates.get(mime.split(';', 1)[0].lower())
            if hit:
                return hit
        return self.inc_rate, self.dec_rate


def _host_value(text: str) -> Optional[float]:
    if text in ('default', '0'):
        return None
    return float(text)


def parse_host_intervals(text: str, *, min_interval_s: float, max_interval_s: float,
                         source: str = 'adaptive-host-specific-intervals.txt'
                         ) -> Tuple[Dict[str, Tuple[Optional[float], Optional[float]]], list]:
    """({host: (min or None, max or None)}, [problems]) from `host min max` lines; bad lines
    are reported and skipped, as Nutch does."""
    hosts, problems = {}, []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        fields = line.split()
        where = f'{source}:{lineno}'
        if len(fields) != 3:
            problems.append(f'{where}: expected "host min max", skipped')
            continue
        try:
            lo, hi = _host_value(fields[1]), _host_value(fields[2])
        except ValueError:
            problems.append(f'{where}: min and max must be numbers or "default", skipped')
            continue
        if lo is None and hi is None:
            problems.append(f'{where}: both values are default, ignored')
            continue
        if (lo is not None and lo < 0) or (hi is not None and hi < 0):
            problems.append(f'{where}: negative interval, skipped')
        elif lo is not None and hi is not None and lo > hi:
            problems.append(f'{where}: min > max, skipped')
        elif lo is not None and lo < min_interval_s:
            problems.append(f'{where}: min below the global min_interval, skipped')
        elif hi is not None and hi > max_interval_s:
            problems.append(f'{where}: max above the global max_interval, skipped')
        else:
            hosts[fields[0].lower()] = (lo, hi)
    return hosts, problems


def parse_mime_rates(text: str, source: str = 'adaptive-mimetypes.txt'
                     ) -> Tuple[Dict[str, Tuple[float, float]], list]:
    """({mime: (inc_rate, dec_rate)}, [problems]) from `mime<TAB>inc<TAB>dec` lines (Nutch's adaptive-mimetypes.txt)."""
    rates, problems = {}, []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        fields = line.rstrip('\r\n').split('\t')
        if len(fields) != 3:
            problems.append(f'{source}:{lineno}: expected "mime<TAB>inc_rate<TAB>dec_rate", '
                            f'skipped')
            continue
        try:
            rates[fields[0].strip().lower()] = (float(fields[1]), float(fields[2]))
        except ValueError:
            problems.append(f'{source}:{lineno}: rates must be numbers, skipped')
    return rates, problems

