"""The fetch run's watchdog: the time limit (fetcher.timelimit.mins), the throughput threshold
(fetcher.throughput.threshold.*) and the progress line (fetcher.progress.seconds)."""

import dataclasses
import logging
import threading
import time
from typing import Callable

from beamcrawl.transforms.fetcher.settings import FetcherSettings

__all__ = ['Progress', 'Monitor']

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


def log_progress(progress: Progress, elapsed: float, final: bool = False) -> None:
    elapsed = max(elapsed, 1e-6)
    log.info('fetch%s: %d pages, %.1f pages/s, %.0f kB/s, %d active queues, %d waiting, '
             '%d errors', ' done' if final else '', progress.pages, progress.pages / elapsed,
             progress.bytes / elapsed / 1024, progress.active_queues, progress.waiting,
             progress.errors)


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
                log_progress(self.progress(), now - self.started)
