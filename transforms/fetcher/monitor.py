"""The fetch run's watchdog: the time limit (fetcher.timelimit.mins), the throughput threshold
(fetcher.throughput.threshold.*) and the progress line (fetcher.progress.seconds)."""

import dataclasses
import logging
import threading
import time
from typing import Callable, List, Optional, Tuple

from beamcrawl.transforms.base.progress import Line, format_duration
from beamcrawl.transforms.fetcher.settings import FetcherSettings

__all__ = ['Progress', 'Monitor', 'progress_line', 'holding_back']

log = logging.getLogger('beamcrawl')
_TICK_S = 0.2


@dataclasses.dataclass
class Progress:
    """What the progress line shows."""
    pages: int = 0            # responses received
    bytes: int = 0            # body bytes received
    errors: int = 0           # exceptions and failures
    active_queues: int = 0
    waiting: int = 0          # URLs waiting in queues
    total: int = 0            # URLs given to the fetcher so far
    left: int = 0             # of them, URLs waiting or in progress
    closed: bool = False      # every URL of the fetch list was given
    longest: List[Tuple[str, int]] = dataclasses.field(default_factory=list)  # (queue, left)
    bound_s: float = 0.0      # the politeness bound of what is left (FetchQueues.work_left)


def holding_back(progress: Progress) -> List[Tuple[str, int]]:
    """The queues that hold the fetch back near its end: once the whole fetch list is queued,
    the longest queues (at most three) while they hold at least half of the URLs left; a fetch
    bound by politeness ends when its longest queue does."""
    if not progress.closed or progress.left <= 0 or not progress.longest:
        return []
    top = progress.longest[:3]
    return top if 2 * sum(n for _, n in top) >= progress.left else []


def progress_line(progress: Progress, elapsed: float, final: bool = False) -> str:
    """`fetch: done/total URLs (p%), pages/s, kB/s, time left, queues, waiting, errors` and,
    near the end, `held back by QUEUE (N left), ...`."""
    elapsed = max(elapsed, 1e-6)
    done = max(0, progress.total - progress.left)    # (redirects followed are left too)
    rate = done / elapsed
    parts = [f'fetch{" done" if final else ""}: {done:,}/{progress.total:,} URLs'
             + (f' ({100.0 * done / progress.total:.0f}%)' if progress.total else ''),
             f'{progress.pages:,} pages', f'{progress.pages / elapsed:.1f} pages/s',
             f'{progress.bytes / elapsed / 1024:.0f} kB/s']
    if final:
        parts.append(f'in {format_duration(elapsed)}')
    elif progress.closed and progress.left and rate > 0:
        left_s = max(progress.left / rate, progress.bound_s)
        parts.append(f'{format_duration(left_s)} left')
    parts += [f'{progress.active_queues} active queues', f'{progress.waiting} waiting',
              f'{progress.errors} errors']
    text = ', '.join(parts)
    held = [] if final else holding_back(progress)
    if held:
        text += '; held back by ' + ', '.join(f'{q} ({n} left)' for q, n in held)
    return text


def log_progress(progress: Progress, elapsed: float, final: bool = False,
                 line: Optional[Line] = None) -> None:
    """Shows the progress line (on `line`: in place on a terminal; else a log line)."""
    text = progress_line(progress, elapsed, final)
    if line is None:
        log.info('%s', text)
    else:
        line.show(text, final=final)


class Monitor:
    """A daemon thread. `progress()` reads the fetcher's state; `stop_fetching(reason)` makes
    the fetcher stop taking new URLs; `finished()` says the fetch is over; `interrupted` is set
    when the user asked the command to stop (SIGINT, SIGTERM)."""

    def __init__(self, settings: FetcherSettings, started: float, *,
                 progress: Callable[[], Progress], stop_fetching: Callable[[str], None],
                 finished: Callable[[], bool], interrupted: threading.Event):
        self.settings = settings
        self.started = started
        self.progress = progress
        self.stop_fetching = stop_fetching
        self.finished = finished
        self.interrupted = interrupted
        self.line = Line(settings.progress_s)
        self.thread = threading.Thread(target=self._run, name='fetch-monitor', daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        s = self.settings
        deadline = self.started + s.time_limit_s if s.time_limit_s >= 0 else None
        last_log, last_check = self.started, 0.0      # the first progress line after progress_s
        pages_mark = strikes = 0
        checking = s.throughput_pages > 0
        while not self.finished():
            time.sleep(_TICK_S)
            if self.finished():
                break               # the fetcher's own last line says how it ended
            now = time.time()
            if self.interrupted.is_set():
                self.stop_fetching('interrupted')
            if deadline is not None and now >= deadline:
                deadline = None
                log.info('fetch: time limit reached, unfetched URLs are kept for next time')
                self.stop_fetching('time limit')
            if checking and now - self.started >= s.throughput_after_s and \
                    now - last_check >= 1.0:
                pages = self.progress().pages
                if pages - pages_mark < s.throughput_pages:
                    strikes += 1
                pages_mark, last_check = pages, now
                if strikes >= s.throughput_retries:
                    checking = False
                    log.info('fetch: throughput below %d pages/s, stopping', s.throughput_pages)
                    self.stop_fetching('throughput')
            if now - last_log >= s.progress_s:
                last_log = now
                log_progress(self.progress(), now - self.started, line=self.line)
