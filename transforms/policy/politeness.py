"""Per-queue politeness (Nutch's FetchItemQueues). Pure, no Beam.

Time is passed in (seconds, any monotonic origin); the fetcher passes its wall clock, tests
pass numbers. `FetchQueues` decides which item may be fetched now:

* a queue hands out an item only while fewer than `threads_per_queue` are in progress and its
  next allowed time has come; the delay runs from the END of one fetch to the START of the next:
  `server_delay` (or a robots Crawl-delay) with one thread per queue, `min_delay` with more;
* among ready queues, the one with the most estimated work left goes first (pending items ×
  (delay + observed response time)): long and slow queues start early, which is what bounds the
  makespan of a politeness-bound fetch;
* exceptions add an exponential back-off of `exception_delay × 2^(n−1)` (Nutch's code; its
  documentation says 2^n), and after `max_exceptions` the queue is blocked and its items are
  handed back as not fetched.
"""

import collections
import dataclasses
import heapq
import itertools
from typing import Any, Deque, Dict, List, Optional, Tuple

__all__ = ['FetchQueue', 'FetchQueues', 'request_ended', 'audit_queue']


@dataclasses.dataclass
class FetchQueue:
    qid: str
    crawl_delay: float
    pending: Deque[Any] = dataclasses.field(default_factory=collections.deque)
    in_progress: int = 0
    next_fetch: float = 0.0
    exceptions: int = 0
    blocked: bool = False
    response_time: float = 0.0      # moving average of observed response times, s
    version: int = 0                # invalidates stale heap entries
    min_delay: Optional[float] = None   # the hostdb's delay also bounds several threads' gaps


def request_ended(queue: FetchQueue, end: float, *, delay: float, max_exceptions: int,
                  exception_delay: float, response_time: float = 0.0, exception: bool = False,
                  asap: bool = False) -> bool:
    """What one request teaches its queue, the request having ended at `end`: the moving average
    of response times, the next allowed start (`end` + `delay`, or `end` when no request was
    sent), the exception count and its back-off. True when the queue has now reached
    max_exceptions and must be blocked. Shared by the batch fetcher (FetchQueues) and the
    streaming fetch, which keeps one FetchQueue per key in Beam state."""
    if response_time:
        queue.response_time = (response_time if not queue.response_time
                               else 0.7 * queue.response_time + 0.3 * response_time)
    queue.next_fetch = end if asap else end + delay
    if exception:
        queue.exceptions += 1
        if 0 < max_exceptions <= queue.exceptions:
            return True
        if exception_delay > 0:
            queue.next_fetch += exception_delay * 2 ** min(queue.exceptions - 1, 31)
    return False


class FetchQueues:
    """The set of queues. Not thread-safe: the fetcher holds one lock around every call."""

    def __init__(self, *, server_delay: float, min_delay: float, threads_per_queue: int,
                 max_exceptions: int, exception_delay: float,
                 next_allowed: Optional[Dict[str, float]] = None):
        self.server_delay = server_delay
        self.min_delay = min_delay
        self.threads_per_queue = max(1, threads_per_queue)
        self.max_exceptions = max_exceptions
        self.exception_delay = exception_delay
        # When a queue's first request may start: the end of the last request to it in an
        # earlier fetch (or before an interrupted one) plus its delay, as far as it is known.
        self.next_allowed = dict(next_allowed or {})
        self.queues: Dict[str, FetchQueue] = {}
        self._ready: List[Tuple[float, int, str, int]] = []     # (-work left, seq, qid, version)
        self._waiting: List[Tuple[float, int, str, int]] = []   # (next fetch, seq, qid, version)
        self._seq = itertools.count()
        self.pending_count = 0
        self.in_progress_count = 0

    # -- adding and scheduling ----------------------------------------------------------------
    def add(self, qid: str, item: Any, now: float, delay: Optional[float] = None) -> bool:
        """Queues an item; False when the queue is blocked (the caller reports it unfetched).
        `delay` (s): the item's host's delay from the hostdb (generate.fetch.delay.expr); the
        first item of a queue that has one sets the queue's delay, as Nutch's fetcher does (a
        robots.txt Crawl-delay met later still replaces it)."""
        queue = self.queues.get(qid)
        if queue is None:
            queue = self.queues[qid] = FetchQueue(qid, self.server_delay,
                                                  next_fetch=self.next_allowed.get(qid, 0.0))
        if queue.blocked:
            return False
        if delay is not None and queue.min_delay is None:
            queue.crawl_delay = queue.min_delay = delay
        queue.pending.append(item)
        self.pending_count += 1
        self._schedule(queue, now)
        return True

    def delay_of(self, queue: FetchQueue) -> float:
        """The gap a queue keeps between requests (see the module's docstring)."""
        if self.threads_per_queue == 1:
            return queue.crawl_delay
        return self.min_delay if queue.min_delay is None else queue.min_delay

    def _work_left(self, queue: FetchQueue) -> float:
        delay = self.delay_of(queue)
        return len(queue.pending) * (delay + queue.response_time)

    def _schedule(self, queue: FetchQueue, now: float) -> None:
        if not queue.pending or queue.in_progress >= self.threads_per_queue:
            return
        queue.version += 1
        if queue.next_fetch <= now:
            heapq.heappush(self._ready, (-self._work_left(queue), next(self._seq), queue.qid,
                                         queue.version))
        else:
            heapq.heappush(self._waiting, (queue.next_fetch, next(self._seq), queue.qid,
                                           queue.version))

    def next_ready(self, now: float) -> Tuple[Optional[FetchQueue], Any, Optional[float]]:
        """(queue, item, None) for an item that may be fetched now, or (None, None, wait) where
        wait is the time until a queue becomes ready (None: nothing is waiting at all)."""
        while self._waiting and self._waiting[0][0] <= now:
            _, _, qid, version = heapq.heappop(self._waiting)
            queue = self.queues[qid]
            if version == queue.version:
                heapq.heappush(self._ready, (-self._work_left(queue), next(self._seq), qid,
                                             queue.version))
        while self._ready:
            _, _, qid, version = heapq.heappop(self._ready)
            queue = self.queues[qid]
            if version != queue.version or not queue.pending or \
                    queue.in_progress >= self.threads_per_queue or queue.next_fetch > now:
                continue
            item = queue.pending.popleft()
            self.pending_count -= 1
            queue.in_progress += 1
            self.in_progress_count += 1
            queue.version += 1
            self._schedule(queue, now)   # more threads per queue may take the next one now
            return queue, item, None
        wait = None
        while self._waiting:
            next_fetch, _, qid, version = self._waiting[0]
            if version == self.queues[qid].version:
                wait = max(0.0, next_fetch - now)
                break
            heapq.heappop(self._waiting)
        return None, None, wait

    # -- results ----------------------------------------------------------------------------
    def finish(self, queue: FetchQueue, now: float, *, response_time: float = 0.0,
               exception: bool = False, asap: bool = False) -> List[Any]:
        """Marks an item of `queue` done at `now`; returns the items dropped because the queue
        reached max_exceptions (to be reported as not fetched)."""
        queue.in_progress -= 1
        self.in_progress_count -= 1
        delay = self.delay_of(queue)
        dropped: List[Any] = []
        if request_ended(queue, now, delay=delay, max_exceptions=self.max_exceptions,
                         exception_delay=self.exception_delay, response_time=response_time,
                         exception=exception, asap=asap):
            dropped = self.block(queue.qid)
        self._schedule(queue, now)
        return dropped

    def set_crawl_delay(self, qid: str, delay: float) -> None:
        """A robots.txt Crawl-delay (already bounded by the caller) replaces the queue's delay."""
        self.queues[qid].crawl_delay = delay

    def block(self, qid: str) -> List[Any]:
        """Stops a queue: its pending items are returned and later adds are refused."""
        queue = self.queues[qid]
        queue.blocked = True
        dropped = list(queue.pending)
        queue.pending.clear()
        self.pending_count -= len(dropped)
        queue.version += 1
        return dropped

    def drain(self) -> List[Any]:
        """Empties every queue (time limit, throughput stop); returns the items."""
        dropped: List[Any] = []
        for queue in self.queues.values():
            dropped.extend(queue.pending)
            queue.pending.clear()
            queue.version += 1
        self.pending_count = 0
        return dropped

    def active_queues(self) -> int:
        return sum(1 for q in self.queues.values() if q.pending or q.in_progress)

    def work_left(self) -> float:
        """Seconds the queue with the most work left still needs at least (its items × (delay
        + observed response time)): no fetch ends sooner, however many threads it has."""
        return max((self._work_left(q) for q in self.queues.values() if q.pending),
                   default=0.0)

    def longest(self, n: int) -> List[Tuple[str, int]]:
        """The n queues with the most items left (waiting or in progress), most first."""
        sizes = [(len(q.pending) + q.in_progress, q.qid) for q in self.queues.values()
                 if q.pending or q.in_progress]
        return [(qid, size) for size, qid in heapq.nsmallest(n, sizes,
                                                             key=lambda t: (-t[0], t[1]))]


def audit_queue(fetches: List[Tuple[int, int, float]], tolerance_ms: float) -> Dict[str, Any]:
    """The politeness audit of one queue (`readseg --politeness`, the report): `fetches` are
    (start ms, end ms, delay s) of its requests, in any order. A gap runs from the end of one
    request to the start of the next; it violates the delay in force when it is shorter than
    that delay less `tolerance_ms`. Returns fetches, delay_ms (of the first request), min_gap_ms
    and median_gap_ms (None with fewer than two requests) and violations."""
    ordered = sorted(fetches)
    gaps = [(b[0] - a[1], a[2] * 1000) for a, b in zip(ordered, ordered[1:])]
    values = sorted(g for g, _ in gaps)
    median = None
    if values:
        mid = len(values) // 2
        median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    return {'fetches': len(ordered), 'delay_ms': ordered[0][2] * 1000 if ordered else None,
            'min_gap_ms': values[0] if values else None, 'median_gap_ms': median,
            'violations': sum(1 for gap, delay in gaps if gap < delay - tolerance_ms)}
