"""FetchQueues with a fake clock: readiness, delays, priority, back-off, blocking."""

from beamcrawl.transforms.policy.politeness import FetchQueues


def queues(**kw):
    args = dict(server_delay=5.0, min_delay=0.0, threads_per_queue=1, max_exceptions=-1,
                exception_delay=0.0)
    args.update(kw)
    return FetchQueues(**args)


def test_delay_runs_from_end_to_next_start():
    q = queues()
    for i in range(3):
        q.add('a', f'a{i}', now=0)
    queue, item, _ = q.next_ready(0)
    assert item == 'a0'
    assert q.next_ready(1)[:2] == (None, None)          # in progress: nothing else from 'a'
    q.finish(queue, now=2.0)                             # fetch ended at t=2
    _, _, wait = q.next_ready(4.0)
    assert wait == 3.0                                   # allowed at 2 + 5
    assert q.next_ready(6.99)[1] is None
    assert q.next_ready(7.0)[1] == 'a1'


def test_queues_are_independent_and_longest_first():
    q = queues()
    q.add('short', 's0', 0)
    for i in range(4):
        q.add('long', f'l{i}', 0)
    first = q.next_ready(0)
    second = q.next_ready(0)
    assert [first[1], second[1]] == ['l0', 's0']         # most work left goes first
    assert q.next_ready(0)[1] is None


def test_slow_queue_gets_priority_once_observed():
    q = queues(server_delay=1.0)
    for i in range(3):
        q.add('slow', f's{i}', 0)
        q.add('fast', f'f{i}', 0)
    a, item_a, _ = q.next_ready(0)
    b, item_b, _ = q.next_ready(0)
    slow, fast = (a, b) if a.qid == 'slow' else (b, a)
    q.finish(slow, 10.0, response_time=3.0)
    q.finish(fast, 10.0, response_time=0.01)
    assert q.next_ready(11.0)[0].qid == 'slow'


def test_threads_per_queue_and_min_delay():
    q = queues(threads_per_queue=2, min_delay=1.0)
    for i in range(4):
        q.add('a', i, 0)
    one, two = q.next_ready(0), q.next_ready(0)
    assert (one[1], two[1]) == (0, 1)
    assert q.next_ready(0)[1] is None                    # two in progress
    q.finish(one[0], 0.5)
    assert q.next_ready(1.0)[1] is None                  # min delay from 0.5
    assert q.next_ready(1.5)[1] == 2


def test_exponential_backoff_and_blocking():
    q = queues(server_delay=1.0, exception_delay=2.0, max_exceptions=3)
    for i in range(6):
        q.add('a', i, 0)
    queue, _, _ = q.next_ready(0)
    assert q.finish(queue, 10, exception=True) == []
    assert queue.next_fetch == 10 + 1 + 2                 # delay + 2 × 2^0
    queue, _, _ = q.next_ready(13)
    q.finish(queue, 20, exception=True)
    assert queue.next_fetch == 20 + 1 + 4                 # delay + 2 × 2^1
    queue, _, _ = q.next_ready(25)
    dropped = q.finish(queue, 30, exception=True)         # third exception: blocked
    assert dropped == [3, 4, 5] and q.pending_count == 0
    assert q.add('a', 'late', 31) is False


def test_asap_finish_and_robots_delay():
    q = queues(server_delay=5.0)
    q.add('a', 1, 0)
    q.add('a', 2, 0)
    queue, _, _ = q.next_ready(0)
    q.finish(queue, 1.0, asap=True)                      # robots-denied: no wait
    assert q.next_ready(1.0)[1] == 2
    q.set_crawl_delay('a', 10.0)
    q.add('a', 3, 1.0)
    q.finish(queue, 2.0)
    assert q.next_ready(11.9)[1] is None and q.next_ready(12.0)[1] == 3


def test_drain_returns_everything_pending():
    q = queues()
    for i in range(3):
        q.add(f'h{i}', i, 0)
    q.next_ready(0)
    assert len(q.drain()) == 2
    assert q.pending_count == 0 and q.next_ready(100)[1] is None
