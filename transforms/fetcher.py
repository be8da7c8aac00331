"""The fetch engine: Nutch's FetchItemQueues + FetcherThreads inside one process.

`Fetcher.add()` queues generated records by queue id; `fetcher.threads.fetch` worker threads
take items from whichever queue `FetchQueues` says is ready, fetch them (robots.txt first) and
put output records on a result list that the caller drains with `take()`. Every record added
produces exactly one crawl_fetch record (fetched, denied, failed, or `notfetching` when never
attempted), plus `linked` records for redirect targets and, when stored, content records.
Politeness is enforced here with the wall clock, the one place allowed to read it (a batch
runner's timers do not wait: see shared/docs/BEAM_FACTS.md).
"""

import dataclasses
import logging
import socket
import threading
import time
import urllib.parse
from typing import Dict, List, Optional, Tuple

from beamcrawl.transforms.http import HttpClient, HttpSettings
from beamcrawl.transforms.policy.politeness import FetchQueues
from beamcrawl.transforms.policy.protocol import CONTENT_KEPT, fetch_status, protocol_status
from beamcrawl.transforms.policy.scoring import CRAWL_SCORE_KEY
from beamcrawl.transforms.policy.robots import RobotsRules, agent_names, robots_url, rules_from_response
from beamcrawl.transforms.policy.urls import UrlPolicy, choose_repr, scheme_host
from beamcrawl.transforms.records import content as content_record, crawl_datum

__all__ = ['FetcherSettings', 'Fetcher', 'queue_key', 'CRAWL_FETCH', 'CONTENT']

log = logging.getLogger('beamcrawl')

CRAWL_FETCH, CONTENT = 'crawl_fetch', 'content'
_ROBOTS_LIMIT = 512 * 1024            # robots.txt bytes read at most (RFC 9309 asks ≥ 500 KiB)


@dataclasses.dataclass(frozen=True)
class FetcherSettings:
    threads: int
    threads_per_queue: int
    server_delay: float
    min_delay: float
    min_crawl_delay: float
    max_crawl_delay: float
    queue_mode: str
    queue_depth: int
    redirect_max: int
    robots_redirect_max: int
    allow_403: bool
    agents: Tuple[str, ...]
    time_limit_s: float               # -1: none
    max_exceptions: int
    exception_delay: float
    throughput_pages: int
    throughput_retries: int
    throughput_after_s: float
    store_content: bool
    max_url_length: int
    progress_s: float

    @classmethod
    def from_config(cls, cfg, threads: Optional[int] = None) -> 'FetcherSettings':
        delay = cfg['fetcher.server.delay']
        return cls(
            threads=threads or cfg['fetcher.threads.fetch'],
            threads_per_queue=cfg['fetcher.threads.per.queue'],
            server_delay=delay, min_delay=cfg['fetcher.server.min.delay'],
            min_crawl_delay=(delay if cfg['fetcher.min.crawl.delay'] < 0
                             else cfg['fetcher.min.crawl.delay']),
            max_crawl_delay=cfg['fetcher.max.crawl.delay'],
            queue_mode=cfg['fetcher.queue.mode'],
            queue_depth=cfg['fetcher.queue.depth.multiplier'],
            redirect_max=cfg['http.redirect.max'],
            robots_redirect_max=cfg['http.robots.redirect.max'],
            allow_403=cfg['http.robots.403.allow'],
            agents=agent_names(cfg['http.agent.name'], cfg['http.robots.agents']),
            time_limit_s=(cfg['fetcher.timelimit.mins'] * 60.0
                          if cfg['fetcher.timelimit.mins'] >= 0 else -1),
            max_exceptions=cfg['fetcher.max.exceptions.per.queue'],
            exception_delay=(delay if cfg['fetcher.exceptions.per.queue.delay'] < 0
                             else cfg['fetcher.exceptions.per.queue.delay']),
            throughput_pages=cfg['fetcher.throughput.threshold.pages'],
            throughput_retries=cfg['fetcher.throughput.threshold.retries'],
            throughput_after_s=cfg['fetcher.throughput.threshold.check.after'] * 60.0,
            store_content=cfg['fetcher.store.content'],
            max_url_length=cfg['db.max.outlink.length'],
            progress_s=cfg['fetcher.progress.seconds'])


def queue_key(host: str, mode: str, policy: UrlPolicy, ips: Dict[str, str]) -> Optional[str]:
    """The queue id of a host: the host, its registered domain, or its IP (resolved once; None
    when it does not resolve). No scheme and no port, as Nutch."""
    if mode == 'byDomain':
        return policy.domains.domain(host) or host
    if mode == 'byIP':
        if host not in ips:
            try:
                ips[host] = socket.gethostbyname(host)
            except (OSError, UnicodeError):
                ips[host] = ''
        return ips[host] or None
    return host


@dataclasses.dataclass
class _Item:
    record: dict
    qid: Optional[str]
    redirects: int = 0
    generated: bool = True


class Fetcher:
    """One fetch run. Thread-safe `add`/`take`; `close()` waits for the end."""

    def __init__(self, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now_ms: int):
        self.settings = settings
        self.policy = policy
        self.now_ms = now_ms
        self.http = HttpClient(http)
        self.queues = FetchQueues(
            server_delay=settings.server_delay, min_delay=settings.min_delay,
            threads_per_queue=settings.threads_per_queue,
            max_exceptions=settings.max_exceptions, exception_delay=settings.exception_delay)
        self.cond = threading.Condition()
        self.results: List[Tuple[str, dict]] = []
        self.counts: Dict[str, int] = {}
        self.robots: Dict[str, RobotsRules] = {}
        self._robots_locks: Dict[str, threading.Lock] = {}
        self._ips: Dict[str, str] = {}
        self._seen = set()
        self._closed = self._stopped = self._timed_out = False
        self.started = time.time()
        self.deadline = (self.started + settings.time_limit_s if settings.time_limit_s >= 0
                         else None)
        self.pages = self.bytes = self.errors = 0
        self._pages_mark = 0
        self._threads = [threading.Thread(target=self._work, name=f'fetcher-{i}', daemon=True)
                         for i in range(settings.threads)]
        self._threads.append(threading.Thread(target=self._monitor, name='fetch-monitor',
                                              daemon=True))
        for thread in self._threads:
            thread.start()

    # -- the caller's side ----------------------------------------------------------------
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
        self._log_progress(final=True)
        return self.take()

    # -- internals (called with self.cond held unless said otherwise) ----------------------
    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def _enqueue(self, item: _Item) -> None:
        if item.qid is None:
            self._emit_fetch(item, 'exception', None, error='host does not resolve')
        elif self._timed_out or not self.queues.add(item.qid, item, time.time()):
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
        self._count(f'fetch.status.{status}')
        self._count(f'fetch.protocol.{protocol}')

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
                outcome = self._fetch(queue.qid, item)
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

    def _record(self, item: _Item, outcome: '_Outcome') -> None:
        self.pages += 1 if outcome.code is not None else 0
        self.bytes += len(outcome.body or b'')
        self.errors += 1 if outcome.protocol in ('exception', 'failed') else 0
        self._emit_fetch(item, outcome.protocol, outcome.code, error=outcome.error,
                         meta=outcome.meta)
        if outcome.content is not None:
            self._emit(CONTENT, outcome.content)
        if outcome.target:
            self._redirect(item, outcome.target, temp=outcome.protocol == 'temp_moved')

    def _redirect(self, item: _Item, target: str, temp: bool) -> None:
        source = item.record
        repr_url = choose_repr(source['metadata'].get('_repr_', source['url']), target, temp,
                               self.policy.domains)
        metadata = {**source['metadata'], '_repr_': repr_url}
        follow = (self.settings.redirect_max > 0 and item.redirects < self.settings.redirect_max
                  and not self._timed_out)
        if follow:
            if target in self._seen:
                self._count('fetch.redirect.duplicate')
                return
            self._seen.add(target)
            self._count('fetch.redirect.followed')
            scheme, host = scheme_host(target)
            record = crawl_datum(target, 'db_unfetched', fetch_time=self.now_ms,
                                 fetch_interval=source['fetch_interval'], metadata=metadata)
            self._enqueue(_Item(record, queue_key(host, self.settings.queue_mode, self.policy,
                                                  self._ips), item.redirects + 1, False))
            return
        if self.settings.redirect_max > 0 and item.redirects >= self.settings.redirect_max:
            self._count('fetch.redirect.exceeded')
        self._count('fetch.redirect.recorded')
        self._emit(CRAWL_FETCH, crawl_datum(
            target, 'linked', fetch_time=self.now_ms, fetch_interval=source['fetch_interval'],
            score=0.0, metadata=metadata))

    # -- one item, without the lock ---------------------------------------------------------
    def _fetch(self, qid: str, item: _Item) -> '_Outcome':
        url = item.record['url']
        parts = urllib.parse.urlsplit(url)
        rules = self._robots_for(parts.scheme, parts.netloc)
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
                           elapsed=resp.elapsed, crawl_delay=crawl_delay, body=resp.body)
        if protocol in CONTENT_KEPT and self.settings.store_content:
            outcome.content = content_record(
                url, content_bytes=resp.body, content_type=mime or 'application/octet-stream',
                fetch_time=self.now_ms, http_code=resp.code, headers=resp.headers,
                truncated=resp.truncated,
                metadata={CRAWL_SCORE_KEY: repr(float(item.record['score']))})
        if protocol in ('moved', 'temp_moved'):
            outcome.target = self._redirect_target(url, resp.headers.get('Location', ''))
        return outcome

    def _redirect_target(self, url: str, location: str) -> Optional[str]:
        target = urllib.parse.urljoin(url, location.strip()) if location.strip() else url
        if len(target) > self.settings.max_url_length:
            return None
        clean, _ = self.policy.clean(target)
        return clean if clean and clean != url else None

    def _robots_for(self, scheme: str, netloc: str) -> RobotsRules:
        key = f'{scheme}://{netloc.lower()}'
        with self.cond:
            if key in self.robots:
                return self.robots[key]
            lock = self._robots_locks.setdefault(key, threading.Lock())
        with lock:
            with self.cond:
                if key in self.robots:
                    return self.robots[key]
            rules = self._fetch_robots(robots_url(scheme, netloc))
            with self.cond:
                self.robots[key] = rules
                self._count(f'fetch.robots.{rules.kind}')
            return rules

    def _fetch_robots(self, url: str) -> RobotsRules:
        for _ in range(self.settings.robots_redirect_max + 1):
            resp = self.http.get(url, limit=_ROBOTS_LIMIT)
            if resp.code in (301, 302, 303, 307, 308) and resp.headers.get('Location'):
                url = urllib.parse.urljoin(url, resp.headers['Location'])
                continue
            return rules_from_response(resp.code, resp.body, allow_403=self.settings.allow_403,
                                       error=resp.error)
        return rules_from_response(404, b'', allow_403=True)   # too many redirects: allow all

    # -- monitor --------------------------------------------------------------------------
    def _monitor(self) -> None:
        last_log = last_pages = 0.0
        strikes, checking = 0, self.settings.throughput_pages > 0
        while True:
            time.sleep(0.2)
            now = time.time()
            with self.cond:
                if self._stopped:
                    return
                if self.deadline is not None and now >= self.deadline and not self._timed_out:
                    self._timed_out = True
                    log.info('fetch: time limit reached, unfetched URLs are kept for next time')
                    for item in self.queues.drain():
                        self._emit_fetch(item, 'notfetching', None)
                    self.cond.notify_all()
                if checking and now - self.started >= self.settings.throughput_after_s and \
                        now - last_pages >= 1.0:
                    pages_now = self.pages
                    if pages_now - self._pages_mark < self.settings.throughput_pages:
                        strikes += 1
                    self._pages_mark, last_pages = pages_now, now
                    if strikes >= self.settings.throughput_retries:
                        checking = False
                        log.info('fetch: throughput below %d pages/s, stopping',
                                 self.settings.throughput_pages)
                        for item in self.queues.drain():
                            self._emit_fetch(item, 'notfetching', None)
                        self.cond.notify_all()
            if now - last_log >= self.settings.progress_s:
                last_log = now
                self._log_progress()

    def _log_progress(self, final: bool = False) -> None:
        elapsed = max(time.time() - self.started, 1e-6)
        with self.cond:
            active, waiting = self.queues.active_queues(), self.queues.pending_count
        log.info('fetch%s: %d pages, %.1f pages/s, %.0f kB/s, %d active queues, %d waiting, '
                 '%d errors', ' done' if final else '', self.pages, self.pages / elapsed,
                 self.bytes / elapsed / 1024, active, waiting, self.errors)


@dataclasses.dataclass
class _Outcome:
    protocol: str
    code: Optional[int] = None
    error: str = ''
    meta: Optional[Dict[str, str]] = None
    elapsed: float = 0.0
    asap: bool = False
    crawl_delay: Optional[float] = None
    body: Optional[bytes] = None
    content: Optional[dict] = None
    target: Optional[str] = None
