"""Nutch's AdaptiveFetchSchedule.main() simulation as a function. Pure, no Beam.

A page changes every `period_days`; the schedule is asked once per simulated day whether to
fetch it; each fetch tells the schedule whether the page had changed since the previous one.
"""

import dataclasses
from typing import Callable, List, Optional

from beamcrawl.transforms.policy.schedule import (MS_PER_S, STATE_MODIFIED, STATE_NOTMODIFIED,
                                                  FetchSchedule)
from beamcrawl.transforms.storage.records import crawl_datum

__all__ = ['SimResult', 'simulate']

DAY_S = 86400
DAY_MS = DAY_S * MS_PER_S


@dataclasses.dataclass
class SimResult:
    total_missed: int = 0
    max_missed: int = 0
    changes: int = 0
    fetches: int = 0
    days: List[int] = dataclasses.field(default_factory=list)        # day of each fetch
    intervals: List[int] = dataclasses.field(default_factory=list)   # interval after it, s
    missed: List[int] = dataclasses.field(default_factory=list)      # changes missed before it


def simulate(schedule: FetchSchedule, *, period_days: float = 30, steps: int = 10000,
             start_interval: int = 30 * DAY_S, log: Optional[Callable[[str], None]] = None,
             url: str = 'http://www.example.com/', content_type: Optional[str] = None
             ) -> SimResult:
    page = crawl_datum(url, 'db_unfetched', fetch_time=0, fetch_interval=start_interval,
                       score=1.0, metadata={'Content-Type': content_type} if content_type
                       else None)
    update = int(period_days * DAY_MS)
    changed, last_modified, now, miss = True, 0, 0, 0
    out = SimResult()
    for i in range(steps):
        if last_modified + update < now:
            changed, last_modified = True, now
            out.changes += 1
        if log:
            log(f'{i}. {str(changed).lower()}\twill fetch at {page["fetch_time"] // DAY_MS}\t'
                f'interval {page["fetch_interval"] // DAY_S} days\tmissed {miss}')
        if page['fetch_time'] <= now:
            out.fetches += 1
            page = schedule.set_fetch_schedule(
                page, prev_fetch=page['fetch_time'], prev_mod=page['modified_time'],
                fetch_time=now, mod_time=last_modified,
                state=STATE_MODIFIED if changed else STATE_NOTMODIFIED)
            if log:
                log(f'\tfetched and adjusted:\twill fetch at {page["fetch_time"] // DAY_MS}\t'
                    f'interval {page["fetch_interval"] // DAY_S} days')
            if not changed:
                miss += 1
            out.max_missed = max(out.max_missed, miss)
            out.days.append(now // DAY_MS)
            out.intervals.append(page['fetch_interval'])
            out.missed.append(miss)
            changed = False
            out.total_missed += miss
            miss = 0
        elif changed:
            miss += 1
        now += DAY_MS
    return out
