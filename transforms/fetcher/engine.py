"""The fetch engine: Nutch's FetchItemQueues + FetcherThreads inside one process.

`Fetcher.add()` queues generated records by queue id; `fetcher.threads.fetch` worker threads
take items from whichever queue `FetchQueues` says is ready, fetch them (robots.txt first) and
put output records on a result list that the caller drains with `take()`. Every record added
produces exactly one crawl_fetch record (fetched, denied, failed, or `notfetching` when never
attempted), plus `linked` records for redirect targets and, when stored, content records.

Output order is what makes a fetch resumable (fetcher/journal/): every record carries `_src_`,
the generated URL it stems from, and the crawl_fetch record of a generated URL comes after all
the records it led to (its content, the records of a redirect chain followed from it). Memory
is bounded: fetch threads wait while more than one content limit's worth of results waits to
be taken, so a fetch holds at most about (threads + 2) × http.content.limit of content.

Politeness is enforced here with the wall clock, the one place allowed to read it: a batch
runner's timers do not wait (docs/architecture.md, "Politeness in batch").
"""

import dataclasses
import logging
import threading
import time
from typing import Dict, List, Optional, Tuple

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.fetcher.dns import Resolver
from beamcrawl.transforms.fetcher.http import HttpClient, HttpSettings
from beamcrawl.transforms.fetcher.journal.paths import SOURCE_KEY
from beamcrawl.transforms.fetcher.monitor import Monitor, Progress, log_progress
from beamcrawl.transforms.fetcher.redirects import target_record
from beamcrawl.transforms.fetcher.request import Outcome, Requester, fetch_record, warc_record
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.policy.hostdb import take_variable_delay
from beamcrawl.transforms.policy.partition import url_queue
from beamcrawl.transforms.policy.politeness import FetchQueues
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.runners.interrupts import INTERRUPTED
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH, WARC

__all__ = ['Fetcher']

log = logging.getLogger('beamcrawl')


class _Item:
    """A URL to fetch: a generated one (its own root) or a redirect target followed from one."""

    __slots__ = ('record', 'qid', 'redirects', 'root', 'held', 'own', 'pending')

    def __init__(self, record: dict, qid: Optional[str], redirects: int = 0,
                 root: Optional['_Item'] = None):
        self.record, self.qid, self.redirects = record, qid, redirects
        self.root = root or self
        self.held: List[dict] = []         # root: crawl_fetch records of its chain, not out yet
        self.own: Optional[dict] = None    # root: its own crawl_fetch record, once it has one
        self.pending = 0                   # root: redirect targets queued and not done

    @property
    def url(self) -> str:
        return self.record['url']


class Fetcher:
    """One fetch run. Thread-safe `add`/`take`; `finish()` then `take()` until `done()`, or
    `close()`, which waits for the end and returns the rest.

    Args:
      queue_times: {queue id: epoch s} the earliest start of each queue's first request (the
        last request to it in an earlier fetch plus its delay).
    """

    def __init__(self, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now_ms: int, queue_times: Optional[Dict[str, float]] = None):
        self.settings = settings
        self.policy = policy
        self.now_ms = now_ms
        self.http = HttpClient(http)
        self.resolve = Resolver()
        self.queues = FetchQueues(
            server_delay=settings.server_delay, min_delay=settings.min_delay,
            threads_per_queue=settings.threads_per_queue,
            max_exceptions=settings.max_exceptions, exception_delay=settings.exception_delay,
            next_allowed=queue_times)
        # One lock, three kinds of waiters: the caller and fetch threads waiting for room for
        # results (cond); idle fetch threads (_idle); and the one idle thread that waits for the
        # next queue to become ready (_timer). An event wakes the threads it concerns, not all
        # of them: with 30 threads, waking every one at each request cost a third of the
        # fetch's CPU and delayed the requests of the moment (docs/performance.md).
        lock = threading.RLock()
        self.cond = threading.Condition(lock)
        self._idle = threading.Condition(lock)
        self._timer = threading.Condition(lock)
        self._timer_held = False
        self.results: List[Tuple[str, dict]] = []
        self._result_bytes = 0
        self._result_cap = http.hard_limit if http.content_limit < 0 else \
            min(http.content_limit, http.hard_limit)
        self.counts: Dict[str, int] = {}
        self.progress = Progress()
        self.requester = Requester(settings, self.http, policy, now_ms, count=self._count_locked)
        self.left = 0                      # generated URLs left unfetched by an interrupt
        self._seen = set()                 # URLs added and redirect targets followed
        self._followed = set()             # redirect targets followed
        self._closed = self._stopped = self._no_more = self._interrupted = False
        self._ended = threading.Event()           # set with _stopped
        self.started = time.time()
        self._threads = [threading.Thread(target=self._work, name=f'fetcher-{i}', daemon=True)
                         for i in range(settings.threads)]
        self._monitor = Monitor(settings, self.started, progress=self._progress,
                                stop_fetching=self.stop, finished=lambda: self._stopped,
                                interrupted=INTERRUPTED)
        # Each start waits until the new thread runs: a millisecond or more on a busy machine,
        # 0.03 s for 30 threads before the caller could add its first URL. The first thread
        # starts here (an error to start it is the caller's), the others from a thread of
        # their own, while the caller adds URLs and the threads started first fetch them.
        self._threads[0].start()
        self._starter = threading.Thread(target=self._start_threads, name='fetcher-start',
                                         daemon=True)
        self._starter.start()
        self._monitor.start()

    def _start_threads(self) -> None:
        for i, thread in enumerate(self._threads[1:], 1):
            try:
                thread.start()
            except RuntimeError as e:        # the system's limit of threads: go on with fewer
                log.warning('fetch: %d of %d fetch threads started (%s)', i,
                            len(self._threads), e)
                del self._threads[i:]
                return

    # -- the caller's side ----------------------------------------------------------------
    def queue_of(self, url: str) -> Optional[str]:
        """The queue id of a URL (None: its host has no address, in byIP mode)."""
        return url_queue(url, self.settings.queue_mode, domain_of=self.policy.domains.domain,
                         resolve=self.resolve)

    def add(self, qid: Optional[str], record: dict) -> None:
        with self.cond:
            if record['url'] in self._followed:
                # A redirect of this fetch got to the URL first (a head start's, or a URL
                # added after the rest of its group): its result is the URL's, requested once.
                return
            self.progress.total += 1
            self._seen.add(record['url'])
            self._enqueue(_Item(record, qid))
            self._wake_fetchers()

    def outstanding(self) -> int:
        with self.cond:
            return self.queues.pending_count + self.queues.in_progress_count

    def take(self, wait: float = 0.0, batch: float = 0.0) -> List[Tuple[str, dict]]:
        """Output records produced so far ((part name, record) pairs); waits up to `wait` s
        for the first, then `batch` s for others to join it, unless the fetch ends first. The
        batch wait sleeps apart from the fetch threads' events: a caller woken at every
        result would compete with them for the interpreter."""
        with self.cond:
            if not self.results and wait > 0 and not self._stopped:
                self.cond.wait(wait)
            linger = batch > 0 and bool(self.results) and not self._stopped
        if linger:
            self._ended.wait(batch)
        with self.cond:
            out, self.results, self._result_bytes = self.results, [], 0
            self.cond.notify_all()            # fetch threads waiting for room go on
            return out

    def finish(self) -> None:
        """No more input: the fetcher stops once every queued URL is done."""
        with self.cond:
            self._closed = True
            self.cond.notify_all()
            self._wake_fetchers(everyone=True)

    def done(self) -> bool:
        """Every URL done and every record taken."""
        with self.cond:
            return self._stopped and not self.results

    def close(self) -> List[Tuple[str, dict]]:
        """No more input: waits until every item is done, stops the threads, returns the rest
        (for callers that do not stream: everything waits in memory until then)."""
        self.finish()
        out = []
        while not self.done():
            out.extend(self.take(wait=0.2))
        self._starter.join()
        for thread in self._threads:
            thread.join()
        self.http.close()
        log_progress(self._progress(), time.time() - self.started, final=True,
                     line=self._monitor.line)
        return out + self.take()

    def stop(self, reason: str) -> None:
        """No new request from now on. After the time limit or the throughput threshold, the
        URLs not tried are recorded as not fetched and requests in flight are cut (they are
        recorded as not fetched too); after an interrupt, requests in flight finish and the URLs
        not tried are left out, for a later run to fetch."""
        with self.cond:
            if self._no_more:
                return
            self._no_more = True
            self._interrupted = reason == 'interrupted'
            for item in self.queues.drain():
                if self._interrupted:
                    self._leave(item)
                else:
                    self._emit_fetch(item, 'notfetching', None, error=f'fetch stopped: {reason}')
            self.cond.notify_all()
            self._wake_fetchers(everyone=True)
        if not self._interrupted:
            self.http.cut_all()

    # -- internals (called with self.cond held unless said otherwise) ----------------------
    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def _progress(self) -> Progress:
        with self.cond:
            self.progress.active_queues = self.queues.active_queues()
            self.progress.waiting = self.queues.pending_count
            self.progress.left = self.queues.pending_count + self.queues.in_progress_count
            self.progress.closed = self._closed
            self.progress.longest = self.queues.longest(3)
            self.progress.bound_s = self.queues.work_left()
            return dataclasses.replace(self.progress)

    def _wake_fetchers(self, everyone: bool = False) -> None:
        """The queues changed: the thread waiting for the next ready queue recomputes its wait
        and one idle thread looks for work (every thread, with `everyone`: the end)."""
        if everyone:
            self._timer.notify_all()
            self._idle.notify_all()
        else:
            self._timer.notify()
            self._idle.notify()

    def _count_locked(self, name: str) -> None:
        """A count from a fetch thread (the Requester's callback)."""
        with self.cond:
            self._count(name)

    def _enqueue(self, item: _Item) -> None:
        item.record, delay = take_variable_delay(item.record)
        if item.qid is None:
            self._emit_fetch(item, 'exception', None, error='host does not resolve')
        elif self._no_more and self._interrupted:
            self._leave(item)
        elif self._no_more or not self.queues.add(item.qid, item, time.time(),
                                                  delay):
            self._emit_fetch(item, 'notfetching', None)

    def _leave(self, item: _Item) -> None:
        """An interrupt left this item unfetched: a generated URL is left for the next run (no
        record); a redirect target becomes a `linked` record of its generated URL."""
        if item.root is item:
            self.left += 1
            return
        self._hold(item, dict(item.record, status='linked', score=0.0), own=True)

    def _emit(self, part: str, record: dict) -> None:
        self.results.append((part, record))

    def _emit_content(self, item: _Item, record: dict) -> None:
        record['metadata'][SOURCE_KEY] = item.root.url
        self._emit(CONTENT, record)
        self._result_bytes += len(record['content'])

    def _emit_fetch(self, item: _Item, protocol: str, code: Optional[int], *, error: str = '',
                    meta: Optional[Dict[str, str]] = None) -> None:
        record = fetch_record(item.record, protocol, code, self.now_ms, error=error, meta=meta)
        self._count(metrics.FETCH_STATUS + record['status'])
        self._count(metrics.FETCH_PROTOCOL + protocol)
        self._hold(item, record, own=True)

    def _hold(self, item: _Item, record: dict, own: bool) -> None:
        """Keeps a crawl_fetch record with its generated URL's others until the chain is done
        (`own`: the one record of `item` itself); the generated URL's own record goes out
        last."""
        record['metadata'] = {**record['metadata'], SOURCE_KEY: item.root.url}
        root = item.root
        if own and item is root:
            root.own = record
        else:
            root.held.append(record)
            if own:
                root.pending -= 1          # a followed target is done
        if root.own is not None and root.pending == 0:
            for held in root.held:
                self._emit(CRAWL_FETCH, held)
            self._emit(CRAWL_FETCH, root.own)
            root.held, root.own = [], None
            root.pending = -1              # released

    def _work(self) -> None:
        while True:
            with self.cond:
                while True:
                    if self._stopped:
                        return
                    if self._result_bytes > self._result_cap:
                        self.cond.wait(0.5)        # wait for room: the caller takes results
                        continue
                    queue, item, wait = self.queues.next_ready(time.time())
                    if item is not None:
                        self._idle.notify()        # the next ready item, if any, is another's
                        break
                    if self._closed and self.queues.pending_count == 0 \
                            and self.queues.in_progress_count == 0:
                        self._stopped = True
                        self._ended.set()
                        self.cond.notify_all()
                        self._wake_fetchers(everyone=True)
                        return
                    if self._timer_held:
                        self._idle.wait(0.5)
                        continue
                    self._timer_held = True
                    try:
                        self._timer.wait(min(wait if wait is not None else 0.5, 0.5))
                    finally:
                        self._timer_held = False
            try:
                outcome = self._fetch(item)
                if outcome.meta is not None:
                    outcome.meta['fetch.queue'] = queue.qid
            except Exception as e:  # pylint: disable=broad-except  (one URL never kills the run)
                log.exception('fetch of %s failed', item.url)
                outcome = Outcome(protocol='failed', error=f'{type(e).__name__}: {e}')
            with self.cond:
                if outcome.crawl_delay is not None:
                    self.queues.set_crawl_delay(queue.qid, outcome.crawl_delay)
                if outcome.meta is not None:
                    outcome.meta['fetch.delay'] = repr(self.queues.delay_of(queue))
                # The delay runs from the end of the request (the Requester's clock, before
                # its records were made), as the politeness audit measures it.
                dropped = self.queues.finish(queue, outcome.end or time.time(),
                                             response_time=outcome.elapsed,
                                             exception=outcome.protocol == 'exception',
                                             asap=outcome.asap)
                self._record(item, outcome)
                for lost in dropped:
                    self._emit_fetch(lost, 'notfetching', None)
                self.cond.notify_all()
                self._timer.notify()               # the queue's next item has a new time

    def _record(self, item: _Item, outcome: Outcome) -> None:
        if outcome.protocol == 'exception' and self._no_more and outcome.cut:
            outcome.protocol = 'notfetching'      # cut by the time limit: kept for next time
        self.progress.pages += 1 if outcome.code is not None else 0
        self.progress.bytes += len(outcome.body or b'')
        self.progress.errors += 1 if outcome.protocol in ('exception', 'failed') else 0
        if outcome.content is not None:
            self._emit_content(item, outcome.content)
        if outcome.warc is not None:
            self._emit(WARC, warc_record(item.url, item.root.url, outcome.warc))
            self._result_bytes += len(outcome.warc)
        if outcome.target:
            self._redirect(item, outcome.target, temp=outcome.protocol == 'temp_moved')
        self._emit_fetch(item, outcome.protocol, outcome.code, error=outcome.error,
                         meta=outcome.meta)

    def _redirect(self, item: _Item, target: str, temp: bool) -> None:
        """Follows a redirect in this fetch (http.redirect.max > 0) or records its target."""
        limit = self.settings.redirect_max
        if limit > 0 and item.redirects < limit and not self._no_more:
            if target in self._seen:
                self._count(metrics.FETCH_REDIRECT_DUPLICATE)
                return
            self._seen.add(target)
            self._followed.add(target)
            self._count(metrics.FETCH_REDIRECT_FOLLOWED)
            record = target_record(item.record, target, temp=temp, status='db_unfetched',
                                   now_ms=self.now_ms, policy=self.policy)
            item.root.pending += 1
            self._enqueue(_Item(record, self.queue_of(target), item.redirects + 1, item.root))
            return
        if limit > 0 and item.redirects >= limit:
            self._count(metrics.FETCH_REDIRECT_EXCEEDED)
        self._count(metrics.FETCH_REDIRECT_RECORDED)
        self._hold(item, target_record(item.record, target, temp=temp, status='linked',
                                       now_ms=self.now_ms, policy=self.policy), own=False)

    # -- one item, without the lock ---------------------------------------------------------
    def _fetch(self, item: _Item) -> Outcome:
        return self.requester.fetch(item.record)
