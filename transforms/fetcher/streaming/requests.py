"""ThreadedRequests: a worker's requests in flight, on its own thread pool (streaming/)."""

import concurrent.futures
import logging
import threading
import time
from typing import Dict, Optional, Tuple

from beamcrawl.transforms.fetcher.http import HttpClient, HttpSettings
from beamcrawl.transforms.fetcher.request import Outcome, Requester
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.policy.urls import UrlPolicy

__all__ = ['ThreadedRequests', 'RequestsFactory']

log = logging.getLogger('beamcrawl')


class ThreadedRequests:
    """Requests in flight on a worker-local thread pool, by (queue, URL): `submit` returns at
    once, `result` is None until the request has ended. One per DoFn instance (created in
    setup), shared by all the queues that instance serves."""

    def __init__(self, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now_ms: int):
        self._lock = threading.Lock()
        self._counts: Dict[str, int] = {}
        self.http = HttpClient(http)
        self.requester = Requester(settings, self.http, policy, now_ms, count=self._count)
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=settings.threads, thread_name_prefix='polite-fetch')
        self.futures: Dict[Tuple[str, str], concurrent.futures.Future] = {}

    def _count(self, name: str) -> None:
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + 1

    def _fetch(self, record: dict) -> Outcome:
        try:
            return self.requester.fetch(record)
        except Exception as e:  # pylint: disable=broad-except  (one URL never kills the run)
            log.exception('fetch of %s failed', record['url'])
            return Outcome(protocol='failed', error=f'{type(e).__name__}: {e}', end=time.time())

    def submit(self, queue: str, record: dict, now: float) -> None:
        self.futures[queue, record['url']] = self.pool.submit(self._fetch, record)

    def result(self, queue: str, url: str, now: float) -> Optional[Outcome]:
        """The outcome once the request has ended; None while it runs. KeyError: this worker
        has no such request (it was sent before a restore): the caller sends it again."""
        future = self.futures[queue, url]
        if not future.done():
            return None
        del self.futures[queue, url]
        return future.result()

    def take_counts(self) -> Dict[str, int]:
        with self._lock:
            counts, self._counts = self._counts, {}
            return counts

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.http.close()


class RequestsFactory:
    """Makes a worker's ThreadedRequests (a picklable callable)."""

    def __init__(self, settings, http, policy, now):
        self.args = (settings, http, policy, now)

    def __call__(self):
        return ThreadedRequests(*self.args)
