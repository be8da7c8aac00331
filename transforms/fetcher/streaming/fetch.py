"""The streaming fetch: per-queue politeness with a stateful DoFn and processing-time timers.

This is the design card's fetcher, for a streaming runner (Flink with --streaming), where
processing-time timers fire on the wall clock and Flink checkpoints state and timers. In batch,
timers do not wait (docs/architecture.md, "Politeness in batch"): the batch fetcher (fetch.py)
stays the default. docs/streaming-fetch.md says when to use which.

`PoliteFetch`: PCollection[(queue id, CrawlDatum)] → PCollection[(generated URL, [(part,
record)])]. For each queue (the key), a stateful DoFn keeps

  pending    BagState: the queue's URLs, as they arrive
  taken      BagState: the URLs handed to a request (a URL is taken once)
  inflight   the record being fetched (kept until its result is in: after a restore from a
             checkpoint, a request that was in flight is sent again)
  queue      the queue's politeness state (policy/politeness.FetchQueue: next allowed start,
             Crawl-delay, exceptions, response time, blocked)

and two processing-time timers: `fetch`, set to the queue's next allowed start (the end of its
last request plus its delay, exactly as the batch fetcher: policy/politeness.request_ended), and
`poll`. The fetch timer never blocks its thread for a download: it hands the request to a
worker-local thread pool (`ThreadedRequests`) and sets the poll timer, which collects the result
when it is there (or looks again a little later). So one worker serves any number of queues.
One request per queue is in flight at a time (fetcher.threads.per.queue is 1 here).

The requests themselves (robots.txt, address policy, Crawl-delay limit, the GET) and the records
they give are the batch fetcher's (fetcher/request.py). Redirects are recorded as `linked`
records for the next round, as with http.redirect.max = 0: following one would need a
feedback loop into another key.

`StreamingFetchSegment` wires it for a segment: the fetch list (`FetchListUntilDrained`) →
keyed by queue → PoliteFetch → the fetch journal (fetcher/journal.py), which the command
publishes once the job has ended, each generated URL's records once (a URL fetched again after
a restore from a checkpoint keeps its first complete attempt).

The end of a finite streaming job: when its input ends, Beam's Flink runner (2.62) stops firing
processing-time timers and waits for the watermark, which pending timers hold back: the job
would never end (and a job restarted from scratch would re-queue URLs the journal already
has). So the fetch list is read by a splittable DoFn that, once it has emitted the records,
stays open; the command watches the journal (for its progress line too) and cancels the job
once the journal holds every generated URL (`run_until_drained`). Every result is in the
journal by then: it is flushed per URL.
"""

import concurrent.futures
import logging
import threading
import time
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

import apache_beam as beam
from apache_beam.coders import PickleCoder, StrUtf8Coder
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import (BagStateSpec, ReadModifyWriteStateSpec, TimerSpec,
                                              on_timer)
from apache_beam.utils.timestamp import Duration, Timestamp

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.storage.parts import Record, iter_records
from beamcrawl.transforms.fetcher.dns import Resolver
from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.fetcher.http import HttpClient, HttpSettings
from beamcrawl.transforms.fetcher.journal import JournalWriter, read_journals
from beamcrawl.transforms.fetcher.request import (Outcome, Requester, fetch_record,
                                                  outcome_records)
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.runners.interrupts import INTERRUPTED
from beamcrawl.transforms.fetcher.journal import SOURCE_KEY
from beamcrawl.transforms.storage.segments import CRAWL_FETCH
from beamcrawl.transforms.policy.partition import url_queue
from beamcrawl.transforms.policy.politeness import FetchQueue, request_ended
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.runners.portable import cancel_job

__all__ = ['PoliteFetch', 'StreamingFetchSegment', 'FetchListStayingOpen', 'run_until_drained',
           'ThreadedRequests', 'UNRESOLVED']

log = logging.getLogger('beamcrawl')

UNRESOLVED = ''          # the key of URLs whose host has no address (byIP queues)


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


def _now(clock: Optional[Callable[[], float]], fired: Timestamp) -> float:
    """The current time: the wall clock, or (clock None: a test stream's processing time) the
    time the timer fired at."""
    return clock() if clock is not None else float(fired)


class _PoliteFetchFn(beam.DoFn):
    """(queue id, record) → (generated URL, [(part, record)]), one queue per key."""

    PENDING = BagStateSpec('pending', PickleCoder())
    TAKEN = BagStateSpec('taken', StrUtf8Coder())
    INFLIGHT = ReadModifyWriteStateSpec('inflight', PickleCoder())
    QUEUE = ReadModifyWriteStateSpec('queue', PickleCoder())
    FETCH = TimerSpec('fetch', TimeDomain.REAL_TIME)
    POLL = TimerSpec('poll', TimeDomain.REAL_TIME)

    def __init__(self, *, settings: FetcherSettings, policy: UrlPolicy, now: int,
                 requests: Callable[[], object], poll_s: float,
                 queue_times: Dict[str, float], clock: Optional[Callable[[], float]]):
        self.settings, self.policy, self.now_ms = settings, policy, now
        self.requests_factory, self.poll_s = requests, poll_s
        self.queue_times, self.clock = queue_times, clock

    def setup(self):
        self.requests = self.requests_factory()

    def teardown(self):
        close = getattr(self.requests, 'close', None)
        if close is not None:
            close()

    # -- helpers -----------------------------------------------------------------------------
    def _counts(self, statuses: List[dict] = ()) -> None:
        take = getattr(self.requests, 'take_counts', None)
        for name, n in (take() if take is not None else {}).items():
            metrics.counter(name).inc(n)
        for record in statuses:
            metrics.counter(metrics.FETCH_STATUS + record['status']).inc()
            metrics.counter(metrics.FETCH_PROTOCOL + record['protocol_status']).inc()

    def _unfetched(self, record: dict, protocol: str, error: str = ''):
        own = fetch_record(record, protocol, None, self.now_ms, error=error)
        own['metadata'][SOURCE_KEY] = record['url']
        self._counts([own])
        return record['url'], [(CRAWL_FETCH, own)]

    # -- elements ----------------------------------------------------------------------------
    def process(self, element, pending=beam.DoFn.StateParam(PENDING),
                queue_state=beam.DoFn.StateParam(QUEUE),
                fetch=beam.DoFn.TimerParam(FETCH)):
        qid, record = element
        if qid == UNRESOLVED:
            yield self._unfetched(record, 'exception', 'host does not resolve')
            return
        queue = queue_state.read()
        if queue is None:
            queue = FetchQueue(qid, self.settings.server_delay,
                               next_fetch=self.queue_times.get(qid, 0.0))
        if queue.blocked:
            yield self._unfetched(record, 'notfetching')
            return
        pending.add(record)
        # queue.in_progress here means: a timer is set or a request is in flight (cleared when
        # the queue is drained)
        if not queue.in_progress:
            queue.in_progress = 1
            now = self.clock() if self.clock is not None else 0.0
            fetch.set(Timestamp.of(max(queue.next_fetch, now)))
        queue_state.write(queue)

    @on_timer(FETCH)
    def on_fetch(self, fired=beam.DoFn.TimestampParam, key=beam.DoFn.KeyParam,
                 pending=beam.DoFn.StateParam(PENDING), taken=beam.DoFn.StateParam(TAKEN),
                 inflight=beam.DoFn.StateParam(INFLIGHT),
                 queue_state=beam.DoFn.StateParam(QUEUE),
                 fetch=beam.DoFn.TimerParam(FETCH), poll=beam.DoFn.TimerParam(POLL)):
        queue = queue_state.read()
        now = _now(self.clock, fired)
        if queue.next_fetch > now:          # early (a runner may fire timers ahead): not yet
            fetch.set(Timestamp.of(queue.next_fetch))
            return
        done = set(taken.read())
        record = next((r for r in pending.read() if r['url'] not in done), None)
        if record is None:                  # drained: the next element sets the timer again
            queue.in_progress = 0
            queue_state.write(queue)
            return
        taken.add(record['url'])
        inflight.write(record)
        self.requests.submit(key, record, now)
        poll.set(Timestamp.of(now + self.poll_s))

    @on_timer(POLL)
    def on_poll(self, fired=beam.DoFn.TimestampParam, key=beam.DoFn.KeyParam,
                pending=beam.DoFn.StateParam(PENDING), taken=beam.DoFn.StateParam(TAKEN),
                inflight=beam.DoFn.StateParam(INFLIGHT),
                queue_state=beam.DoFn.StateParam(QUEUE),
                fetch=beam.DoFn.TimerParam(FETCH), poll=beam.DoFn.TimerParam(POLL)):
        record = inflight.read()
        if record is None:
            return
        now = _now(self.clock, fired)
        try:
            outcome = self.requests.result(key, record['url'], now)
        except KeyError:                    # sent by this key's worker before a restore
            self.requests.submit(key, record, now)
            outcome = None
        if outcome is None:
            poll.set(Timestamp.of(now + self.poll_s))
            return
        queue = queue_state.read()
        if outcome.crawl_delay is not None:
            queue.crawl_delay = outcome.crawl_delay
        if outcome.meta is not None:
            outcome.meta['fetch.queue'] = key
            outcome.meta['fetch.delay'] = repr(queue.crawl_delay)
        blocked = request_ended(
            queue, outcome.end if outcome.end and not outcome.asap else now,
            delay=queue.crawl_delay, max_exceptions=self.settings.max_exceptions,
            exception_delay=self.settings.exception_delay, response_time=outcome.elapsed,
            exception=outcome.protocol == 'exception', asap=outcome.asap)
        records = outcome_records(record, outcome, self.now_ms, self.policy)
        if outcome.target:
            metrics.counter(metrics.FETCH_REDIRECT_RECORDED).inc()
        self._counts([records[-1][1]])
        inflight.clear()
        yield record['url'], records
        done = set(taken.read())
        left = [r for r in pending.read() if r['url'] not in done]
        if blocked:
            queue.blocked = True
            for dropped in left:
                taken.add(dropped['url'])
                yield self._unfetched(dropped, 'notfetching')
            left = []
        if left:
            fetch.set(Timestamp.of(max(queue.next_fetch, now)))
        else:
            queue.in_progress = 0
        queue_state.write(queue)


class PoliteFetch(beam.PTransform):
    """PCollection[(queue id, CrawlDatum)] → PCollection[(generated URL, [(part, record)])]:
    every record fetched once, each queue's requests spaced by its delay from the end of one to
    the start of the next. Runs on a streaming runner (processing-time timers).

    Args (keyword-only):
      settings: fetcher settings (delays, Crawl-delay limits, exceptions, threads: the size of
        each worker's request pool).
      policy: URL normalizers, filters and address policy.
      now: the fetch time written into crawl_fetch records, epoch ms.
      requests: a callable that makes a worker's request pool (default: ThreadedRequests with
        `http`); tests pass a simulated one.
      poll_s: how often a request in flight is looked at, s.
      queue_times: {queue id: epoch s} the earliest first request per queue.
      clock: the current time (default: the wall clock); None: the time a timer fired at (a
        TestStream's processing time).
    """

    def __init__(self, *, settings: FetcherSettings, policy: UrlPolicy, now: int,
                 poll_s: float, http: Optional[HttpSettings] = None,
                 requests: Optional[Callable[[], object]] = None,
                 queue_times: Optional[Dict[str, float]] = None,
                 clock: Optional[Callable[[], float]] = time.time):
        super().__init__()
        if requests is None:
            if http is None:
                raise ValueError('PoliteFetch needs http settings or a requests factory')
            requests = _RequestsFactory(settings, http, policy, now)
        self.fn = _PoliteFetchFn(settings=settings, policy=policy, now=now, requests=requests,
                                 poll_s=poll_s, queue_times=dict(queue_times or {}),
                                 clock=clock)

    def expand(self, keyed):
        # str keys: a deterministic key coder (Beam warns about the default one)
        return keyed | 'PoliteFetch' >> beam.ParDo(self.fn).with_input_types(
            Tuple[str, Any])


class _RequestsFactory:
    """Makes a worker's ThreadedRequests (a picklable callable)."""

    def __init__(self, settings, http, policy, now):
        self.args = (settings, http, policy, now)

    def __call__(self):
        return ThreadedRequests(*self.args)


class _TwoPhases(RestrictionProvider):
    """[0, 2): offset 0 is "emit the records", offset 1 is "the fetch is drained"."""

    def initial_restriction(self, element):
        return OffsetRange(0, 2)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, element, restriction):
        return restriction.size()

    def split(self, element, restriction):
        yield restriction


class _StayOpenFn(beam.DoFn):
    """paths → their records; then the element stays open, deferring itself every `check_s`,
    until the job is cancelled."""

    def __init__(self, check_s: float):
        self.check_s = check_s

    @beam.DoFn.unbounded_per_element()
    def process(self, paths, tracker=beam.DoFn.RestrictionParam(_TwoPhases())):
        if tracker.current_restriction().start == 0:
            if not tracker.try_claim(0):
                return
            yield from iter_records(paths)
        tracker.defer_remainder(Duration.of(self.check_s))


class FetchListStayingOpen(beam.PTransform):
    """PBegin → the records of the fetch-list files `paths`, from a source that does not end
    (see the module's docstring: the command cancels the job)."""

    def __init__(self, paths: List[str], check_s: float = 5.0):
        super().__init__()
        self.paths, self.check_s = list(paths), check_s

    def expand(self, pbegin):
        return (pbegin
                | 'Paths' >> beam.Create([self.paths])
                | 'Read' >> beam.ParDo(_StayOpenFn(self.check_s)))


class _KeyByQueueFn(beam.DoFn):
    """record → (queue id, record); UNRESOLVED when its host has no address (byIP)."""

    def __init__(self, *, mode: str, policy: UrlPolicy):
        self.mode, self.policy = mode, policy

    def setup(self):
        self._resolve = Resolver()

    def process(self, record):
        qid = url_queue(record['url'], self.mode, domain_of=self.policy.domains.domain,
                        resolve=self._resolve)
        yield qid or UNRESOLVED, record


class _JournalFn(beam.DoFn):
    """(generated URL, [(part, record)]) → appended to this worker's journal files (flushed per
    URL; the files stay open for the worker's life)."""

    def __init__(self, journal_dir: str, run_id: str):
        self.journal_dir, self.run_id = journal_dir, run_id

    def setup(self):
        self._journal = None

    def process(self, element):
        if self._journal is None:
            self._journal = JournalWriter(self.journal_dir, self.run_id)
        self._journal.write(element[1])

    def teardown(self):
        if self._journal is not None:
            self._journal.close()


class StreamingFetchSegment(beam.PTransform):
    """PCollection[CrawlDatum] (crawl_generate) → the segment's fetch journal, through
    PoliteFetch (arguments as FetchSegment's in fetch.py, plus `poll_s`)."""

    def __init__(self, *, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now: int, journal_dir: str, run_id: str, poll_s: float,
                 done: FrozenSet[str] = frozenset(),
                 queue_times: Optional[Dict[str, float]] = None):
        super().__init__()
        self.settings, self.http, self.policy, self.now = settings, http, policy, now
        self.journal_dir, self.run_id, self.poll_s = journal_dir, run_id, poll_s
        self.done = frozenset(done)
        self.queue_times = dict(queue_times or {})

    def expand(self, generated: beam.PCollection[Record]):
        done = self.done
        return (generated
                | 'SkipDone' >> beam.Filter(lambda record: record['url'] not in done)
                | 'KeyByQueue' >> beam.ParDo(_KeyByQueueFn(mode=self.settings.queue_mode,
                                                           policy=self.policy))
                | 'Fetch' >> PoliteFetch(settings=self.settings, http=self.http,
                                         policy=self.policy, now=self.now, poll_s=self.poll_s,
                                         queue_times=self.queue_times)
                | 'Journal' >> beam.ParDo(_JournalFn(self.journal_dir, self.run_id)))


def run_until_drained(pipeline: beam.Pipeline, journal_dir: str, expected: int, *,
                      check_s: float, progress_s: float, what: str,
                      flink_rest: Optional[str]) -> int:
    """Runs a streaming fetch job until its journal holds `expected` generated URLs, logging
    progress; then cancels it, on the cluster itself (`flink_rest`: Flink's REST host:port).
    Returns how many are done (fewer after an interrupt); a job that ends by itself (failed, or
    cancelled from outside) is a UserError saying how many are done."""
    started = last_log = time.time()
    result = pipeline.run()
    done = first = None
    try:
        while True:
            read_start = time.time()
            done = read_journals(journal_dir).fetched
            # reading the journal takes longer as it grows: look at most 10% of the time
            wait_s = max(check_s, 9 * (time.time() - read_start))
            first = done if first is None else first
            if done >= expected or INTERRUPTED.is_set():
                break
            now = time.time()
            if now - last_log >= progress_s:
                log.info('%s: %d of %d URLs done, %.1f pages/s', what, done, expected,
                         (done - first) / max(now - started, 1e-9))
                last_log = now
            state = str(result.state).rsplit('.', 1)[-1]
            if state in _ENDED:
                done = read_journals(journal_dir).fetched
                raise UserError(f'{what}: the Flink job ended ({state}) with {done} of '
                                f'{expected} URLs done; rerun to fetch the rest (the journal '
                                f'keeps what was fetched)')
            INTERRUPTED.wait(wait_s)
    finally:
        cancel_job(result, flink_rest, 'streaming fetch job')
    log.info('%s finished in %.1f s: %d URLs', what, time.time() - started, done)
    return done


_ENDED = ('DONE', 'FAILED', 'CANCELLED', 'STOPPED')


