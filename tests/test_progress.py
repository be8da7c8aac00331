"""Progress lines: their text, the terminal and log forms, the fetch's hosts that hold it back,
and the batch stages' reports from worker processes (runner.progress.seconds 0: every step is
shown, so nothing here depends on the machine's speed)."""

import io
import logging
import re

import pytest

from beamcrawl.transforms.base.progress import (Line, Reporter, Ticker, Tracker, format_duration,
                                                progress_text)
from beamcrawl.transforms.fetcher.monitor import Progress, holding_back, progress_line
from beamcrawl.transforms.policy.politeness import FetchQueues
from tests.conftest import run_cli, write_seeds


@pytest.mark.parametrize('seconds, text', [
    (0, '0 s'), (4.4, '4 s'), (59.6, '1 min 00 s'), (125, '2 min 05 s'), (3600, '1 h 00 min'),
    (11220, '3 h 07 min'), (-3, '0 s')])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize('args, text', [
    (('updatedb map', 250_000, 1_000_000, 'records', 10.0, False),
     'updatedb map: 250,000/1,000,000 records (25%), 25,000 records/s, 30 s left'),
    (('updatedb map', 1_000_000, 1_000_000, 'records', 40.0, True),
     'updatedb map: 1,000,000/1,000,000 records (100%), 25,000 records/s, done in 40 s'),
    (('parse', 3, 8, 'pages', 2.0, False), 'parse: 3/8 pages (38%), 1.5 pages/s, 3 s left'),
    (('inject map', 0, 4, 'units', 1.0, False), 'inject map: 0/4 units (0%), 0.0 units/s'),
    (('x', 7, 0, 'records', 1.0, False), 'x: 7 records, 7.0 records/s'),   # total unknown
])
def test_progress_text(args, text):
    assert progress_text(*args) == text


def test_terminal_line_is_rewritten_in_place_and_ends_with_a_newline():
    out = io.StringIO()
    line = Line(0, stream=out, tty=True)
    line.show('a: 1/2')
    line.show('a: 2/2', final=True)
    assert out.getvalue() == '\ra: 1/2\x1b[K\ra: 2/2\x1b[K\n'
    line = Line(3600, stream=out, tty=True)
    line.show('first')
    line.show('not shown: within the interval')
    line.close()
    assert out.getvalue().endswith('\rfirst\x1b[K\n')


def test_log_lines_when_not_a_terminal(caplog):
    line = Line(3600, stream=io.StringIO(), tty=False)
    with caplog.at_level(logging.INFO, logger='beamcrawl'):
        line.show('one')
        line.show('two: within the interval')
        line.show('three', final=True)           # a final line always shows
    assert [r.getMessage() for r in caplog.records] == ['one', 'three']


def test_tracker_sums_reports_of_its_stages(caplog, tmp_path):
    tracker = Tracker(0, Line(0, stream=io.StringIO(), tty=False))
    mapped = tracker.stage('map', 300, 'records')
    reduced = tracker.stage('reduce', 2, 'partitions')
    with caplog.at_level(logging.INFO, logger='beamcrawl'):
        tracker.start('updatedb')
        mapped.add(100)
        ticker = Ticker(mapped)
        for _ in range(200):
            ticker.tick()
        ticker.flush()
        reduced.add(1)
        reduced.add(1)
        path = tracker.path
        tracker.stop(completed=True)
    lines = [r.getMessage() for r in caplog.records]
    assert any(re.fullmatch(r'updatedb map: 300/300 records \(100%\), .* done in \d+ s', m)
               for m in lines), lines
    assert any(m.startswith('updatedb reduce: 2/2 partitions (100%)') for m in lines), lines
    assert sum(1 for m in lines if 'done in' in m) == 2      # one last line per stage
    import os
    assert not os.path.exists(path)
    Reporter(path, 'map').add(5)                # the file is gone: reporting does nothing
    Reporter(None, 'map').add(5)


@pytest.mark.parametrize('progress, held', [
    # the whole list queued, two queues hold most of what is left
    (Progress(total=100, left=10, closed=True, longest=[('slow.test', 7), ('b.test', 2)]),
     [('slow.test', 7), ('b.test', 2)]),
    # still being queued: not near the end
    (Progress(total=100, left=10, closed=False, longest=[('slow.test', 7)]), []),
    # many small queues left: none holds it back
    (Progress(total=100, left=60, closed=True,
              longest=[('a.test', 2), ('b.test', 2), ('c.test', 2)]), []),
    (Progress(total=100, left=0, closed=True, longest=[]), []),
])
def test_holding_back(progress, held):
    assert holding_back(progress) == held


def test_fetch_progress_line_names_the_longest_queues_near_the_end():
    progress = Progress(pages=90, bytes=90 * 1024, errors=1, active_queues=1, waiting=9,
                        total=100, left=10, closed=True, longest=[('slow.test', 10)])
    assert progress_line(progress, 10.0) == (
        'fetch: 90/100 URLs (90%), 90 pages, 9.0 pages/s, 9 kB/s, 1 s left, 1 active queues, '
        '9 waiting, 1 errors; held back by slow.test (10 left)')
    progress.bound_s = 125.0      # its politeness delays alone need longer than its rate says
    assert ', 2 min 05 s left, ' in progress_line(progress, 10.0)
    progress.left, progress.longest = 0, []
    assert progress_line(progress, 20.0, final=True) == (
        'fetch done: 100/100 URLs (100%), 90 pages, 4.5 pages/s, 4 kB/s, in 20 s, '
        '1 active queues, 9 waiting, 1 errors')


def test_longest_queues():
    queues = FetchQueues(server_delay=1.0, min_delay=0.0, threads_per_queue=1,
                         max_exceptions=-1, exception_delay=0.0)
    for qid, n in (('a.test', 1), ('b.test', 3), ('c.test', 2), ('d.test', 3)):
        for i in range(n):
            queues.add(qid, i, 0.0)
    queue, _, _ = queues.next_ready(0.0)        # one in progress still counts as left
    assert queues.longest(2) == [('b.test', 3), ('d.test', 3)]
    assert queues.longest(9)[-1] == ('a.test', 1) and len(queues.longest(9)) == 4
    assert queue.qid in ('b.test', 'd.test')
    assert queues.work_left() == 3.0       # 3 items × 1 s delay (no response time seen yet)


def test_batch_stages_show_progress_from_worker_processes(tmp_path):
    """inject and updatedb on two worker processes (parallel from 0 records): each stage's
    last line counts everything its workers did."""
    seeds = write_seeds(tmp_path / 'seeds', [f'http://h{i}.test/' for i in range(40)])
    crawl = str(tmp_path / 'crawl')
    proc = run_cli('inject', crawl, seeds, '-D', 'runner.progress.seconds=0',
                   '-D', 'runner.local.parallel.records=0', '-D', 'runner.local.workers=2',
                   '-D', 'crawldb.partitions=3', '--now', '1795305600000')
    assert re.search(r'inject map: (\d+)/\1 units \(100%\), .*done in', proc.stderr), \
        proc.stderr
    assert 'inject reduce: 3/3 partitions (100%)' in proc.stderr
    proc = run_cli('generate', crawl, '-D', 'runner.progress.seconds=0', '--now',
                   '1795305600000')
    assert 'generate select: 40/40 records (100%)' in proc.stderr, proc.stderr


def test_fetch_progress_names_the_host_that_holds_it_back(testweb, tmp_path):
    """Eight pages of one host, 0.3 s apart (its politeness delay), and one page of another:
    the fetch lasts at least 2 s whatever the machine, and its progress lines (every 0.1 s)
    name the host with the long queue once the other is done."""
    from tests.testweb import Page, html_page
    for i in range(8):
        testweb.add('long.test', f'/p{i}', html_page(f'p{i}'))
    testweb.add('long.test', '/robots.txt', Page(status=404))
    testweb.add('short.test', '/', html_page('short'))
    testweb.add('short.test', '/robots.txt', Page(status=404))
    seeds = write_seeds(tmp_path / 'seeds', ['http://short.test/'] +
                        [f'http://long.test/p{i}' for i in range(8)])
    crawl = str(tmp_path / 'crawl')
    conf = ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={testweb.port}', '-D', 'fetcher.server.delay=0.3',
            '-D', 'fetcher.progress.seconds=0.1', '-D', 'domain.extra.suffixes=test',
            '--now', '1795305600000']
    run_cli('inject', crawl, seeds, *conf)
    run_cli('generate', crawl, *conf)
    proc = run_cli('fetch', crawl, *conf)
    lines = [line for line in proc.stderr.splitlines() if ' fetch' in line]
    assert any(re.search(r'fetch: \d/9 URLs .*; held back by long\.test \(\d left\)$', line)
               for line in lines), '\n'.join(lines)
    assert any('fetch done: 9/9 URLs (100%), 9 pages' in line for line in lines), \
        '\n'.join(lines)
