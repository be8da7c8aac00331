"""The streaming fetch's timer logic (transforms/fetcher/streaming/polite.py) on the local runner: a
TestStream advances processing time in steps, requests are simulated (each takes a known time),
and the times the DoFn starts them are asserted exactly. Nothing sleeps: the timers fire on the
test stream's clock, and the DoFn takes the time from them (clock=None)."""

import functools
import urllib.parse

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that

from beamcrawl.transforms import settings
from beamcrawl.transforms.base.config import load_config
from beamcrawl.transforms.fetcher.request import Outcome
from beamcrawl.transforms.fetcher.streaming.polite import UNRESOLVED, PoliteFetch
from beamcrawl.transforms.storage.records import crawl_datum
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH
from tests.conftest import run_cli

POLL = 0.05
STEP = 0.05


class SimulatedRequests:
    """Requests that take `durations[host]` seconds of the test stream's time (0.2 s unless
    said); `outcomes[host]` gives a host's outcome (default: a 200 with a body). The requests
    in flight are shared by every instance (the direct runner makes a DoFn instance per
    bundle; on Flink one instance lives as long as its worker)."""

    inflight = {}

    def __init__(self, durations, outcomes):
        self.durations, self.outcomes = durations, outcomes

    def submit(self, queue, record, now):
        assert (queue, record['url']) not in self.inflight, 'two requests for one URL'
        self.inflight[queue, record['url']] = now

    def result(self, queue, url, now):
        start = self.inflight[queue, url]
        host = urllib.parse.urlsplit(url).hostname
        kind = self.outcomes.get(host, 'success')
        if kind == 'robots_denied':          # no request sent: known at once
            del self.inflight[queue, url]
            return Outcome(protocol='robots_denied', asap=True)
        end = start + self.durations.get(host, 0.2)
        if now < end:
            return None
        del self.inflight[queue, url]
        meta = {'fetch.start': repr(start), 'fetch.end': repr(end)}
        if kind == 'exception':
            return Outcome(protocol='exception', error='HTTP 503', code=503, meta=meta,
                           elapsed=end - start, end=end)
        content = {'url': url, 'metadata': {}}
        return Outcome(protocol='success', code=200, meta=meta, elapsed=end - start, end=end,
                       content=content, crawl_delay=self.outcomes.get(host + ':delay'))


def _records(urls, metadata=None):
    return [crawl_datum(u, 'db_unfetched', fetch_time=0, fetch_interval=60,
                        metadata=(metadata or {}).get(u)) for u in urls]


def _run(urls, *, seconds, durations=None, outcomes=None, overrides=None, queue_times=None,
         unresolved=(), check=None, metadata=None):
    cfg = load_config(overrides={'http.agent.name': 'testbot', 'fetcher.server.delay': 1.0,
                                 **(overrides or {})})
    fetch = settings.fetcher_settings(cfg)
    keyed = [(UNRESOLVED if u in unresolved else urllib.parse.urlsplit(u).hostname, r)
             for u, r in zip(urls, _records(urls, metadata))]
    stream = TestStream().add_elements(keyed)
    for _ in range(int(seconds / STEP)):
        stream = stream.advance_processing_time(STEP)
    stream = stream.advance_watermark_to_infinity()
    SimulatedRequests.inflight.clear()
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    with beam.Pipeline(runner=BundleBasedDirectRunner(), options=options) as p:
        out = (p | stream
               | PoliteFetch(settings=fetch, policy=settings.url_policy(cfg), now=7,
                             poll_s=POLL, clock=None, queue_times=queue_times,
                             requests=functools.partial(SimulatedRequests, durations or {},
                                                        outcomes or {})))
        assert_that(out, check)


def _by_host(results):
    """{host: [(start, end, status)]} of the own crawl_fetch records, in start order."""
    hosts = {}
    for url, records in results:
        own = records[-1][1]
        assert records[-1][0] == CRAWL_FETCH and own['url'] == url
        meta = own['metadata']
        hosts.setdefault(urllib.parse.urlsplit(url).hostname, []).append(
            (float(meta.get('fetch.start', -1)), float(meta.get('fetch.end', -1)),
             own['status']))
    return {h: sorted(v) for h, v in hosts.items()}


def _exactly_once(urls):
    def check(results):
        got = sorted(url for url, _ in results)
        assert got == sorted(urls), got
    return check


def _approx(a, b):
    return abs(a - b) < 1e-6


def test_each_queue_waits_its_delay_after_the_end_of_the_last_request():
    urls = [f'http://a.test/{i}' for i in range(4)] + [f'http://b.test/{i}' for i in range(3)]

    def check(results):
        _exactly_once(urls)(results)
        hosts = _by_host(results)
        # a: 0.2 s per request, delay 1 s: starts at 0, 1.2, 2.4, 3.6 (end + delay, exactly)
        starts = [s for s, _, _ in hosts['a.test']]
        assert len(starts) == 4 and all(_approx(s, e) for s, e in zip(
            starts, [0.0, 1.2, 2.4, 3.6])), hosts['a.test']
        # b answers in 0.5 s: starts at 0, 1.5, 3.0; both queues ran side by side
        starts = [s for s, _, _ in hosts['b.test']]
        assert len(starts) == 3 and all(_approx(s, e) for s, e in zip(
            starts, [0.0, 1.5, 3.0])), hosts['b.test']
        for host in hosts.values():
            assert all(b[0] - a[1] >= 1.0 - 1e-9 for a, b in zip(host, host[1:]))
            assert {status for _, _, status in host} == {'fetch_success'}
        contents = [r for _, records in results for part, r in records if part == CONTENT]
        assert len(contents) == len(urls)
        assert all(r['metadata']['_src_'] == r['url'] for r in contents)
    _run(urls, seconds=6, durations={'b.test': 0.5}, check=check)


def test_robots_crawl_delay_replaces_the_queue_delay_and_earlier_fetches_count():
    urls = [f'http://slow.test/{i}' for i in range(3)]

    def check(results):
        starts = [s for s, _, _ in _by_host(results)['slow.test']]
        # the first request waits for the previous segment's last one (queue time 0.5 s);
        # its robots.txt asks for 2 s between requests
        assert len(starts) == 3 and all(_approx(s, e) for s, e in zip(
            starts, [0.5, 2.7, 4.9])), starts
        delays = {records[-1][1]['metadata']['fetch.delay'] for _, records in results}
        assert delays == {'2.0'}
    _run(urls, seconds=7, outcomes={'slow.test:delay': 2.0},
         queue_times={'slow.test': 0.5}, check=check)


def test_the_hostdb_delay_of_the_first_record_sets_its_queue_delay():
    """generate.fetch.delay.expr's `_variableFetchDelay_` (ms) reaches the streaming fetch as
    the batch one (docs/hostdb.md); the fetcher takes it off the records it writes."""
    urls = [f'http://v.test/{i}' for i in range(3)] + ['http://w.test/0', 'http://w.test/1']
    metadata = {u: {'_variableFetchDelay_': '500'} for u in urls if 'v.test' in u}

    def check(results):
        hosts = _by_host(results)
        starts = [s for s, _, _ in hosts['v.test']]
        assert len(starts) == 3 and all(_approx(s, e) for s, e in zip(
            starts, [0.0, 0.7, 1.4])), starts
        starts = [s for s, _, _ in hosts['w.test']]           # fetcher.server.delay: 1 s
        assert len(starts) == 2 and all(_approx(s, e) for s, e in zip(starts, [0.0, 1.2]))
        assert not any('_variableFetchDelay_' in r['metadata']
                       for _, records in results for _, r in records)
    _run(urls, seconds=3, metadata=metadata, check=check)


def test_exceptions_back_off_and_block_the_queue_after_the_maximum():
    urls = [f'http://down.test/{i}' for i in range(5)]

    def check(results):
        hosts = _by_host(results)['down.test']
        tried = [h for h in hosts if h[0] >= 0]           # the requests sent
        # exception delay 1 s × 2^(n-1) on top of the 1 s delay; blocked after 3
        assert len(tried) == 3
        starts = [s for s, _, _ in tried]
        assert len(starts) == 3 and all(_approx(s, e) for s, e in zip(
            starts, [0.0, 2.2, 5.4])), starts
        protocols = sorted(records[-1][1]['protocol_status'] for _, records in results)
        assert protocols == ['exception'] * 3 + ['notfetching'] * 2
        _exactly_once(urls)(results)
    _run(urls, seconds=8, outcomes={'down.test': 'exception'},
         overrides={'fetcher.max.exceptions.per.queue': 3,
                    'fetcher.exceptions.per.queue.delay': 1.0}, check=check)


def test_no_request_sent_lets_the_queue_go_on_at_once_and_unresolved_hosts_fail():
    urls = [f'http://closed.test/{i}' for i in range(3)] + ['http://nowhere.test/x']

    def check(results):
        by_url = {url: records[-1][1] for url, records in results}
        assert {u: r['protocol_status'] for u, r in by_url.items()} == {
            **{f'http://closed.test/{i}': 'robots_denied' for i in range(3)},
            'http://nowhere.test/x': 'exception'}
        assert by_url['http://nowhere.test/x']['metadata']['_error_'] == 'host does not resolve'
    # robots_denied sends no request: the three are done within a few poll intervals
    _run(urls, seconds=0.5, outcomes={'closed.test': 'robots_denied'},
         unresolved={'http://nowhere.test/x'}, check=check)


def test_streaming_fetch_needs_a_streaming_runner(tmp_path):
    proc = run_cli('fetch', str(tmp_path / 'crawl'), '--streaming', '-D',
                   'http.agent.name=testbot', check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(
        'beamcrawl fetch: fetch --streaming runs on Flink')
    assert 'Traceback' not in proc.stderr


@pytest.mark.parametrize('args,rest', [
    (['--runner', 'PortableRunner', '--job_endpoint', 'localhost:8099'], 'localhost:8081'),
    (['--runner', 'FlinkRunner', '--flink_master', '[local]'], None),
    (['--runner', 'FlinkRunner'], None),
    (['--runner', 'FlinkRunner', '--flink_master', 'http://jm:9000/'], 'jm:9000'),
    (['--runner=FlinkRunner', '--flink_master=jm:9000'], 'jm:9000'),
])
def test_where_a_job_is_cancelled_on_flink(args, rest):
    from beamcrawl.transforms.runners.portable import flink_rest
    assert flink_rest(args, 'localhost:8081') == rest
