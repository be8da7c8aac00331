"""The fetch engine: Nutch's FetchItemQueues + FetcherThreads inside one process.

`Fetcher.add()` queues generated records by queue id; `fetcher.threads.fetch` worker threads
take items from whichever queue `FetchQueues` says is ready, fetch them (robots.txt first) and
put output records on a result list that the caller drains with `take()`. Every record added
produces exactly one crawl_fetch record (fetched, denied, failed, or `notfetching` when never
attempted), plus `linked` records for redirect targets and, when stored, content records.

Politeness is enforced here with the wall clock, the one place allowed to read it: a batch
runner's timers do not wait (docs/architecture.md, "Politeness in batch").
"""

import dataclasses
import logging
import threading
import time
import urllib.parse
from typing import Dict, List, Optional, Tuple

from beamcrawl.transforms import metrics
from beamcrawl.transforms.dns import Resolver
from beamcrawl.transforms.fetcher.http import HttpClient, HttpSettings
from beamcrawl.transforms.fetcher.monitor import Monitor, Progress, log_progress
from beamcrawl.transforms.fetcher.redirects import redirect_target, target_record
from beamcrawl.transforms.fetcher.robots_cache import RobotsCache
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.layout import CONTENT, CRAWL_FETCH
from beamcrawl.transforms.policy.partition import queue_key
from beamcrawl.transforms.policy.politeness import FetchQueues
from beamcrawl.transforms.policy.protocol import CONTENT_KEPT, fetch_status, protocol_status
from beamcrawl.transforms.policy.scoring import CRAWL_SCORE_KEY
from beamcrawl.transforms.policy.urls import UrlPolicy, scheme_host
from beamcrawl.transforms.records import content as content_record

__all__ = ['Fetcher']

log = logging.getLogger('beamcrawl')


@dataclasses.dataclass
class _Item:
    record: dict
    qid: Optional[str]
    redirects: int = 0


@dataclasses.dataclass
class _Outcome:
    protocol: str
    code: Optional[int] = None
    error: str = ''
    meta: Optional[Dict[str, str]] = None
    elapsed: float = 0.0
    asap: bool = False                 # no request was sent: the queue may go on at once
    crawl_delay: Optional[float] = None
    body: Optional[bytes] = None
    content: Optional[dict] = None
    target: Optional[str] = None
    cut: bool = False                  # the request was cut (deadline or time limit)


class Fetcher:
    """One fetch run. Thread-safe `add`/`take`; `close()` waits for the end."""

    def __init__(self, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now_ms: int):
        self.settings = settings
        self.policy = policy
        self.now_ms = now_ms
        self.http = HttpClient(http)
        self.resolve = Resolver()
        self.queues = FetchQueues(
            server_delay=settings.server_delay, min_delay=settings.min_delay,
            threads_per_queue=settings.threads_per_queue,
            max_exceptions=settings.max_exceptions, exception_delay=settings.exception_delay)
        self.robots = RobotsCache(self.http, redirect_max=settings.robots_redirect_max,
                                  allow_403=settings.allow_403, denied=policy.denied,
                                  on_fetched=self._robots_fetched, on_denied=self._denied)
        self.cond = threading.Condition()
        self.results: List[Tuple[str, dict]] = []
        self.counts: Dict[str, int] = {}
        self.progress = Progress()
        self._seen = set()
        self._closed = self._stopped = self._no_more = False
        self.started = time.time()
        self._threads = [threading.Thread(target=self._work, name=f'fetcher-{i}', daemon=True)
                         for i in range(settings.threads)]
        self._monitor = Monitor(settings, self.started, progress=self._progress,
                                stop_fetching=self.stop, finished=lambda: self._stopped)
        for thread in self._threads:
            thread.start()
        self._monitor.start()

    # -- the caller's side ----------------------------------------------------------------
    def queue_of(self, url: str) -> Optional[str]:
        """The queue id of a URL (None: its host has no address, in byIP mode)."""
        host = scheme_host(url)[1]
        if not host:
            return None
        return queue_key(host, self.settings.queue_mode, domain_of=self.policy.domains.domain,
                         resolve=self.resolve)

    def add(self, qid: Optional[str], record: dict) -> None:
        with self.cond:
            self._seen.add(record['url'])
            self._enqueue(_Item(record, qid))
            self.cond.notify_all()

    def outstanding(self) -> int:
        with self.cond:
            return self.queues.pending_count + self.queues.in_progress_count

    def take(self, wait: float = 0.0) -> List[Tuple[str, dict]]:
        """Output records produced so far ((part name, record) pairs); waits up to `wait` s."""
        with self.cond:
            if not self.results and wait > 0:
                self.cond.wait(wait)
            out, self.results = self.results, []
            return out

    def close(self) -> List[Tuple[str, dict]]:
        """No more input: waits until every item is done, stops the threads, returns the rest."""
        with self.cond:
            self._closed = True
            self.cond.notify_all()
        for thread in self._threads:
            thread.join()
        self.http.close()
        log_progress(self._progress(), time.time() - self.started, final=True)
        return self.take()

    # -- internals (called with self.cond held unless said otherwise) ----------------------
    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def _progress(self) -> Progress:
        with self.cond:
            self.progress.active_queues = self.queues.active_queues()
            self.progress.waiting = self.queues.pending_count
            return dataclasses.replace(self.progress)

    def stop(self, reason: str) -> None:
        """No new request from now on (the time limit, the throughput threshold, an interrupt):
        waiting URLs are reported as not fetched, and requests in flight are cut now (they are
        reported as not fetched too). `close()` still has to be called."""
        with self.cond:
            self._no_more = True
            for item in self.queues.drain():
                self._emit_fetch(item, 'notfetching', None, error=f'fetch stopped: {reason}')
            self.cond.notify_all()
        self.http.cut_all()

    def _robots_fetched(self, rules) -> None:
        with self.cond:
            self._count(metrics.FETCH_ROBOTS + rules.kind)

    def _denied(self, reason: str) -> None:
        with self.cond:
            self._count(metrics.FETCH_DENIED_ADDRESS)

    def _enqueue(self, item: _Item) -> None:
        if item.qid is None:
            self._emit_fetch(item, 'exception', None, error='host does not resolve')
        elif self._no_more or not self.queues.add(item.qid, item, time.time()):
            self._emit_fetch(item, 'notfetching', None)

    def _emit(self, part: str, record: dict) -> None:
        self.results.append((part, record))

    def _emit_fetch(self, item: _Item, protocol: str, code: Optional[int], *, error: str = '',
                    meta: Optional[Dict[str, str]] = None) -> None:
        record = item.record
        status = fetch_status(protocol)
        metadata = {**record['metadata'], '_pst_': protocol, **(meta or {})}
        if code is not None:
            metadata['nutch.protocol.code'] = str(code)
        if error:
            metadata['_error_'] = error
        signature = record['signature'] if protocol in ('notmodified', 'notfetching') else None
        self._emit(CRAWL_FETCH, dict(record, status=status, fetch_time=self.now_ms,
                                     metadata=metadata, signature=signature,
                                     protocol_status=protocol, http_code=code))
        self._count(metrics.FETCH_STATUS + status)
        self._count(metrics.FETCH_PROTOCOL + protocol)

    def _work(self) -> None:
        while True:
            with self.cond:
                while True:
                    if self._stopped:
                        return
                    queue, item, wait = self.queues.next_ready(time.time())
                    if item is not None:
                        break
                    if self._closed and self.queues.pending_count == 0 \
                            and self.queues.in_progress_count == 0:
                        self._stopped = True
                        self.cond.notify_all()
                        return
                    self.cond.wait(min(wait if wait is not None else 0.5, 0.5))
            try:
                outcome = self._fetch(item)
                if outcome.meta is not None:
                    outcome.meta['fetch.queue'] = queue.qid
            except Exception as e:  # pylint: disable=broad-except  (one URL never kills the run)
                log.exception('fetch of %s failed', item.record['url'])
                outcome = _Outcome(protocol='failed', error=f'{type(e).__name__}: {e}')
            with self.cond:
                if outcome.crawl_delay is not None:
                    self.queues.set_crawl_delay(queue.qid, outcome.crawl_delay)
                if outcome.meta is not None:
                    outcome.meta['fetch.delay'] = repr(
                        queue.crawl_delay if self.settings.threads_per_queue == 1
                        else self.settings.min_delay)
                dropped = self.queues.finish(queue, time.time(), response_time=outcome.elapsed,
                                             exception=outcome.protocol == 'exception',
                                             asap=outcome.asap)
                self._record(item, outcome)
                for lost in dropped:
                    self._emit_fetch(lost, 'notfetching', None)
                self.cond.notify_all()

    def _record(self, item: _Item, outcome: _Outcome) -> None:
        if outcome.protocol == 'exception' and self._no_more and outcome.cut:
            outcome.protocol = 'notfetching'      # cut by the time limit: kept for next time
        self.progress.pages += 1 if outcome.code is not None else 0
        self.progress.bytes += len(outcome.body or b'')
        self.progress.errors += 1 if outcome.protocol in ('exception', 'failed') else 0
        self._emit_fetch(item, outcome.protocol, outcome.code, error=outcome.error,
                         meta=outcome.meta)
        if outcome.content is not None:
            self._emit(CONTENT, outcome.content)
        if outcome.target:
            self._redirect(item, outcome.target, temp=outcome.protocol == 'temp_moved')

    def _redirect(self, item: _Item, target: Optional[str], temp: bool) -> None:
        """Follows a redirect in this fetch (http.redirect.max > 0) or records its target."""
        limit = self.settings.redirect_max
        if limit > 0 and item.redirects < limit and not self._no_more:
            if target in self._seen:
                self._count(metrics.FETCH_REDIRECT_DUPLICATE)
                return
            self._seen.add(target)
            self._count(metrics.FETCH_REDIRECT_FOLLOWED)
            record = target_record(item.record, target, temp=temp, status='db_unfetched',
                                   now_ms=self.now_ms, policy=self.policy)
            self._enqueue(_Item(record, self.queue_of(target), item.redirects + 1))
            return
        if limit > 0 and item.redirects >= limit:
            self._count(metrics.FETCH_REDIRECT_EXCEEDED)
        self._count(metrics.FETCH_REDIRECT_RECORDED)
        self._emit(CRAWL_FETCH, target_record(item.record, target, temp=temp, status='linked',
                                              now_ms=self.now_ms, policy=self.policy))

    # -- one item, without the lock ---------------------------------------------------------
    def _fetch(self, item: _Item) -> _Outcome:
        url = item.record['url']
        denied = self.policy.denied(url)
        if denied:
            self._denied(denied)
            return _Outcome(protocol='blocked', error=f'address policy: {denied}', asap=True)
        parts = urllib.parse.urlsplit(url)
        rules = self.robots.rules(parts.scheme, parts.netloc)
        if rules.kind == 'unavailable':
            return _Outcome(protocol='notfetching', error=rules.reason, asap=True)
        if not rules.allowed(url, self.settings.agents):
            return _Outcome(protocol='robots_denied', asap=True)
        crawl_delay = None
        delay = rules.crawl_delay(self.settings.agents)
        if delay is not None:
            if 0 <= self.settings.max_crawl_delay < delay:
                return _Outcome(protocol='robots_denied', asap=True,
                                error=f'Crawl-delay {delay:g} s > fetcher.max.crawl.delay')
            crawl_delay = max(delay, self.settings.min_crawl_delay)
        start = time.time()
        resp = self.http.get(url, modified_time=item.record['modified_time'],
                             etag=item.record['metadata'].get('ETag'))
        end = time.time()
        if resp.denied:
            self._denied(resp.error)
            return _Outcome(protocol='blocked', error=f'address policy: {resp.error}', asap=True)
        if resp.cut:
            with self.cond:
                self._count(metrics.FETCH_DEADLINE)
        protocol = protocol_status(resp.code)
        meta = {'_rs_': str(int(resp.elapsed * 1000)), 'fetch.start': str(int(start * 1000)),
                'fetch.end': str(int(end * 1000))}
        for header in ('ETag', 'Last-Modified'):
            if header in resp.headers:
                meta[header] = resp.headers[header]
        mime = resp.headers.get('Content-Type', '').split(';', 1)[0].strip().lower()
        if resp.body and mime:
            meta['Content-Type'] = mime
        error = resp.error or (f'HTTP {resp.code}' if protocol == 'exception' else '')
        outcome = _Outcome(protocol=protocol, code=resp.code, error=error, meta=meta,
                           elapsed=resp.elapsed, crawl_delay=crawl_delay, body=resp.body,
                           cut=resp.cut)
        if protocol in CONTENT_KEPT and self.settings.store_content:
            outcome.content = content_record(
                url, content_bytes=resp.body, content_type=mime or 'application/octet-stream',
                fetch_time=self.now_ms, http_code=resp.code, headers=resp.headers,
                truncated=resp.truncated,
                metadata={CRAWL_SCORE_KEY: repr(float(item.record['score']))})
        if protocol in ('moved', 'temp_moved'):
            outcome.target, why = redirect_target(url, resp.headers.get('Location', ''),
                                                  self.policy, self.settings.max_url_length)
            if why == 'denied':
                self._denied(why)
        return outcome
