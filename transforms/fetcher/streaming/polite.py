"""PoliteFetch: per-queue politeness on a streaming runner, one stateful DoFn per queue with
processing-time timers (see the package's docstring)."""

import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import apache_beam as beam
from apache_beam.coders import PickleCoder, StrUtf8Coder
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import (BagStateSpec, ReadModifyWriteStateSpec, TimerSpec,
                                              on_timer)
from apache_beam.utils.timestamp import Timestamp

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.fetcher.http import HttpSettings
from beamcrawl.transforms.fetcher.journal.paths import SOURCE_KEY
from beamcrawl.transforms.fetcher.request import fetch_record, outcome_records
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.fetcher.streaming.requests import RequestsFactory
from beamcrawl.transforms.policy.hostdb import take_variable_delay
from beamcrawl.transforms.policy.politeness import FetchQueue, request_ended
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage.segments import CRAWL_FETCH

__all__ = ['PoliteFetch', 'UNRESOLVED']

UNRESOLVED = ''          # the key of URLs whose host has no address (byIP queues)


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
        record, delay = take_variable_delay(record)
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
        if delay is not None and queue.min_delay is None:   # as FetchQueues.add
            queue.crawl_delay = queue.min_delay = delay
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
            requests = RequestsFactory(settings, http, policy, now)
        self.fn = _PoliteFetchFn(settings=settings, policy=policy, now=now, requests=requests,
                                 poll_s=poll_s, queue_times=dict(queue_times or {}),
                                 clock=clock)

    def expand(self, keyed):
        # str keys: a deterministic key coder (Beam warns about the default one)
        return keyed | 'PoliteFetch' >> beam.ParDo(self.fn).with_input_types(
            Tuple[str, Any])
