"""Fetch schedules (NUTCH_REFERENCE.md §7). Pure, no Beam.

This module holds the behaviour every schedule shares (AbstractFetchSchedule); the Default,
Adaptive and MIME-adaptive `setFetchSchedule` rules are added with updatedb.
"""

from typing import Tuple

__all__ = ['should_fetch', 'MS_PER_S']

MS_PER_S = 1000


def _cap_interval(interval: int, max_interval: int) -> int:
    """An interval above max_interval becomes 0.9 × max_interval (Java rounds the float)."""
    return int(round(0.9 * max_interval)) if interval > max_interval else interval


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
