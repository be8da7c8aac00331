"""The fetch engine's settings (built from the configuration by transforms/settings.py)."""

import dataclasses
from typing import Tuple

__all__ = ['FetcherSettings']


@dataclasses.dataclass(frozen=True)
class FetcherSettings:
    threads: int                      # fetcher.threads.fetch (or --threads)
    threads_per_queue: int            # fetcher.threads.per.queue
    server_delay: float               # fetcher.server.delay, s
    min_delay: float                  # fetcher.server.min.delay, s (threads_per_queue > 1)
    min_crawl_delay: float            # fetcher.min.crawl.delay, s (a robots Crawl-delay floor)
    max_crawl_delay: float            # fetcher.max.crawl.delay, s (< 0: any)
    queue_mode: str                   # fetcher.queue.mode: byHost, byDomain, byIP
    queue_depth: int                  # fetcher.queue.depth.multiplier
    redirect_max: int                 # http.redirect.max (0: record redirects, not follow)
    robots_redirect_max: int          # http.robots.redirect.max
    allow_403: bool                   # http.robots.403.allow
    agents: Tuple[str, ...]           # our names for robots.txt, lowercased
    time_limit_s: float               # fetcher.timelimit.mins in s; -1: none
    max_exceptions: int               # fetcher.max.exceptions.per.queue (≤ 0: no cut-off)
    exception_delay: float            # fetcher.exceptions.per.queue.delay, s
    throughput_pages: int             # fetcher.throughput.threshold.pages (≤ 0: no check)
    throughput_retries: int           # fetcher.throughput.threshold.retries
    throughput_after_s: float         # fetcher.throughput.threshold.check.after, in s
    store_content: bool               # fetcher.store.content
    store_warc: bool                  # fetcher.store.warc
    max_url_length: int               # db.max.outlink.length (redirect targets)
    progress_s: float                 # fetcher.progress.seconds
    journal_roll_s: float             # fetcher.journal.roll.seconds (stores that cannot append)
    journal_batch_s: float            # fetcher.journal.batch.seconds
