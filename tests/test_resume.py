"""A fetch that survives: kill -9, SIGINT/SIGTERM, a second fetcher, a full disk, a crawl killed
between stages; politeness across restarts and rounds. Kills happen at points observed in the
fetch journal, never after a sleep."""

import contextlib
import glob
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from beamcrawl.transforms.fetcher.journal.reading import read_journals
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_GENERATE
from tests.conftest import ROOT, kill_when, read_db, run_cli, start_command, write_seeds
from tests.testweb import Page, html_page

pytestmark = pytest.mark.slow

NOW = '2026-11-22T00:00:00Z'
DELAY = 0.3                    # fetcher.server.delay
CRAWL_DELAY = 2.0              # robots.txt Crawl-delay of slowpoke.test
THREADS = 4
HOSTS = {f'r{i}.test': DELAY for i in range(3)}
HOSTS['slowpoke.test'] = CRAWL_DELAY


@pytest.fixture(scope='module', autouse=True)
def resume_web(testweb):
    for host in HOSTS:
        robots = (b'User-agent: *\nCrawl-delay: 2\n' if host == 'slowpoke.test' else b'')
        testweb.add(host, '/robots.txt', Page(body=robots, content_type='text/plain'))
        for i in range(6):
            testweb.add(host, f'/p{i}', html_page(f'{host} {i}', '<p>' + 'words ' * 50 + '</p>'))
    for i in range(4):                   # a chain found one page per round
        testweb.add('chain.r.test', f'/c{i}', html_page(f'chain {i}', links=[f'/c{i + 1}']))
    testweb.add('chain.r.test', '/robots.txt', Page(body=b'User-agent: *\nCrawl-delay: 2\n',
                                                    content_type='text/plain'))


def _conf(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', f'fetcher.server.delay={DELAY}',
            '-D', 'domain.extra.suffixes=test', '-D', f'fetcher.threads.fetch={THREADS}']


def _generated(web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', [f'http://{h}/p{i}' for h in HOSTS for i in range(6)])
    run_cli('inject', crawl, seeds, '--now', NOW, *_conf(web))
    run_cli('generate', crawl, '--now', NOW, *_conf(web))
    layout = CrawlLayout(crawl)
    (segment,) = layout.segment_names()
    web.clear_log()
    return crawl, layout, segment


def _done(layout, segment):
    return set(read_journals(layout.fetch_journal(segment)).done)


def _pages(web):
    return [r for r in web.log if r.path != '/robots.txt' and r.host in HOSTS]


def _exactly_once(layout, segment):
    generated = [r['url'] for r in iter_records(layout.part_files(segment, CRAWL_GENERATE))]
    fetched = [r for r in iter_records(layout.part_files(segment, CRAWL_FETCH))]
    assert Counter(r['url'] for r in fetched) == Counter(generated)
    assert {r['status'] for r in fetched} == {'fetch_success'}


def _gaps_held(web, in_flight=frozenset()):
    """Every gap between two requests to a host is at least the host's delay, except after a
    request that was in flight at a kill (the journal could not know its end)."""
    for host, delay in HOSTS.items():
        log = sorted((r for r in _pages(web) if r.host == host), key=lambda r: r.start)
        for a, b in zip(log, log[1:]):
            if (a.host, a.path) in in_flight:
                continue
            assert b.start - a.end >= delay, (host, a.path, b.path, b.start - a.end)


def test_kill_9_mid_fetch_then_rerun_fetches_only_what_is_left(web, tmp_path):
    crawl, layout, segment = _generated(web, tmp_path)
    slowpoke = {f'http://slowpoke.test/p{i}' for i in range(6)}
    in_flight = set()
    # First run: killed once 6 URLs (2 of the slow host) are done; the rerun names the segment
    # and is killed once 14 are done; the last run names none and finishes.
    for args, enough in (([], (6, 2)), ([segment], (14, 3))):
        proc = start_command('fetch', crawl, *args, '--now', NOW, *_conf(web))
        kill_when(proc, lambda: (len(_done(layout, segment)) >= enough[0] and
                                 len(_done(layout, segment) & slowpoke) >= enough[1]),
                  f'{enough} URLs were journaled')
        done = _done(layout, segment)
        assert len(done) < len(HOSTS) * 6
        in_flight |= {(r.host, r.path) for r in _pages(web)
                      if f'http://{r.host}{r.path}' not in done}
    run_cli('fetch', crawl, '--now', NOW, *_conf(web))
    _exactly_once(layout, segment)
    requests = Counter((r.host, r.path) for r in _pages(web))
    again = {key for key, n in requests.items() if n > 1}
    assert again <= in_flight and len(again) <= 2 * THREADS      # only what was in flight
    assert set(requests) == {(h, f'/p{i}') for h in HOSTS for i in range(6)}
    _gaps_held(web, in_flight)
    assert not os.path.exists(layout.fetch_journal(segment))      # published and cleaned


@pytest.mark.parametrize('sig,code', [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_keeps_every_result_and_the_rerun_resumes(web, tmp_path, sig, code):
    crawl, layout, segment = _generated(web, tmp_path)
    proc = subprocess.Popen([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'fetch', crawl,
                             '--now', NOW, *_conf(web)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    while len(_done(layout, segment)) < 5:
        assert proc.poll() is None, 'the fetch ended before it was interrupted'
        time.sleep(0.01)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == code
    last = stderr.strip().splitlines()[-1]
    fetched, left = len(_done(layout, segment)), len(HOSTS) * 6 - len(_done(layout, segment))
    assert last == f'beamcrawl fetch: interrupted: {fetched} fetched, {left} left; rerun to ' \
                   f'resume'
    assert 'Traceback' not in stderr and left > 0
    assert not layout.has_part(segment, CRAWL_FETCH)
    assert not os.path.exists(os.path.join(layout.segment(segment), '.locked'))
    run_cli('fetch', crawl, '--now', NOW, *_conf(web))
    _exactly_once(layout, segment)
    assert set(Counter((r.host, r.path) for r in _pages(web)).values()) == {1}   # none again
    _gaps_held(web)


def test_a_second_fetch_of_a_segment_being_fetched_is_refused(web, tmp_path):
    crawl, layout, segment = _generated(web, tmp_path)
    lock = os.path.join(layout.segment(segment), '.locked')
    first = start_command('fetch', crawl, '--now', NOW, *_conf(web))
    try:
        while not os.path.exists(lock):
            assert first.poll() is None
            time.sleep(0.01)
        second = run_cli('fetch', crawl, segment, '--now', NOW, *_conf(web), check=False)
        assert second.returncode == 2
        (line,) = second.stderr.strip().splitlines()
        assert 'lock' in line and lock in line and f'pid={first.pid}' in line
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=300)


@contextlib.contextmanager
def small_disk(path, size):
    """A tmpfs of `size` mounted at `path` for the block (skips where it cannot be mounted)."""
    if os.geteuid() != 0:
        pytest.skip('mounting a small tmpfs to fill needs root')
    os.makedirs(path, exist_ok=True)
    proc = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size}', 'tmpfs', path],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f'cannot mount a tmpfs here ({proc.stderr.strip()})')
    try:
        yield path
    finally:
        subprocess.run(['umount', '-l', path], capture_output=True)


def test_a_full_disk_is_one_line_and_the_fetch_resumes_once_space_is_freed(testweb, tmp_path):
    with small_disk(str(tmp_path / 'disk'), '3m') as disk:
        body = os.urandom(300000)                      # incompressible pages
        for i in range(20):
            testweb.add('full.test', f'/p{i}', Page(body=body,
                                                    content_type='application/octet-stream'))
        testweb.add('full.test', '/robots.txt', Page(status=404))
        crawl = os.path.join(disk, 'crawl')
        conf = _conf(testweb)
        seeds = write_seeds(tmp_path / 'seeds', [f'http://full.test/p{i}' for i in range(20)])
        run_cli('inject', crawl, seeds, '--now', NOW, *conf)
        run_cli('generate', crawl, '--now', NOW, *conf)
        layout = CrawlLayout(crawl)
        (segment,) = layout.segment_names()
        proc = run_cli('fetch', crawl, '--now', NOW, *conf, '-D', 'fetcher.server.delay=0',
                       check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        (line,) = [l for l in proc.stderr.splitlines() if l.startswith('beamcrawl fetch:')]
        assert 'No space left on device (errno 28 ENOSPC)' in line and disk in line
        assert 'the disk is full: free space on it' in line
        done_before = _done(layout, segment)
        subprocess.run(['mount', '-o', 'remount,size=64m', disk], check=True)
        run_cli('fetch', crawl, '--now', NOW, *conf, '-D', 'fetcher.server.delay=0')
        generated = [r['url'] for r in iter_records(layout.part_files(segment, CRAWL_GENERATE))]
        fetched = [r['url'] for r in iter_records(layout.part_files(segment, CRAWL_FETCH))]
        assert Counter(fetched) == Counter(generated) and done_before
        requests = Counter(f'http://full.test{r.path}' for r in testweb.requests_for('full.test')
                           if r.path != '/robots.txt')
        again = {url for url, n in requests.items() if n > 1}
        assert not again & done_before          # what was written is never requested again


def _used_bytes(path):
    out = subprocess.run(['df', '--output=used', '-B1', path], capture_output=True, text=True,
                         check=True).stdout.split()
    return int(out[-1])


def test_a_full_disk_during_updatedb_exits_2_and_keeps_the_crawldb(testweb, tmp_path):
    with small_disk(str(tmp_path / 'disk'), '64m') as disk:
        testweb.add('fullupd.test', '/robots.txt', Page(status=404))
        for i in range(2):
            testweb.add('fullupd.test', f'/p{i}', html_page(f'page {i}'))
        crawl = os.path.join(disk, 'crawl')
        conf = _conf(testweb)
        # A crawldb of 20,000 URLs (a new version takes far more than the room left below).
        seeds = write_seeds(tmp_path / 'seeds', [f'http://fullupd.test/p{i}'
                                                 for i in range(20000)])
        run_cli('inject', crawl, seeds, '--now', NOW, *conf)
        run_cli('generate', crawl, '--now', NOW, '--top-n', '2', *conf)
        run_cli('fetch', crawl, '--now', NOW, *conf)
        before = read_db(crawl)
        subprocess.run(['mount', '-o', f'remount,size={_used_bytes(disk) + 65536}', disk],
                       check=True)
        proc = run_cli('updatedb', crawl, '--now', NOW, *conf, check=False)
        assert proc.returncode == 2 and 'Traceback' not in proc.stderr, proc.stderr
        (line,) = [l for l in proc.stderr.splitlines() if l.startswith('beamcrawl updatedb:')]
        assert 'errno 28 ENOSPC' in line and 'the disk is full: free space on it' in line
        assert read_db(crawl) == before                     # the crawldb is as it was
        subprocess.run(['mount', '-o', 'remount,size=64m', disk], check=True)
        run_cli('updatedb', crawl, '--now', NOW, *conf)
        assert read_db(crawl)['http://fullupd.test/p0']['status'] == 'db_fetched'


def test_a_crawl_killed_between_stages_completes_its_round_without_refetching(web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', [f'http://r{i}.test/p0' for i in range(3)])
    conf = _conf(web)
    proc = start_command('crawl', crawl, '--seeds', seeds, '--rounds', '1', '--now', NOW, *conf,
                         '-D', 'fetcher.parse=true')
    kill_when(proc, lambda: glob.glob(f'{crawl}/segments/*/crawl_fetch'), 'the fetch was published')
    layout = CrawlLayout(crawl)
    (segment,) = layout.segment_names()
    assert segment not in layout.crawldb.applied_segments()
    requested = len(_pages(web))
    rerun = run_cli('crawl', crawl, '--rounds', '1', '--now', NOW, *conf, '-D',
                    'fetcher.parse=true')
    assert f'continuing segment {segment}' in rerun.stderr
    assert len(_pages(web)) == requested                  # nothing fetched again
    assert layout.segment_names() == [segment]             # and nothing generated meanwhile
    assert {r['status'] for u, r in read_db(crawl).items() if u.endswith('/p0')} == \
        {'db_fetched'}
    assert segment in layout.linkdb.applied_segments()


def test_per_host_delays_hold_across_rounds(web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://chain.r.test/c0'])
    run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '4', '--now', NOW,
            '--round-interval', '0', *_conf(web), '-D', 'fetcher.parse=true')
    log = sorted((r for r in web.requests_for('chain.r.test') if r.path != '/robots.txt'),
                 key=lambda r: r.start)
    assert [r.path for r in log] == ['/c0', '/c1', '/c2', '/c3']      # one page a round
    gaps = [b.start - a.end for a, b in zip(log, log[1:])]
    assert min(gaps) >= CRAWL_DELAY, gaps


def test_an_interrupted_updatedb_keeps_the_crawldb(tmp_path):
    from beamcrawl.transforms.storage.partwriter import write_avro_file
    from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
    from tests.conftest import write_db
    crawl = str(tmp_path / 'crawl')
    write_db(crawl, [crawl_datum(f'http://h{i % 300}.test/p{i}', 'db_unfetched', fetch_time=0,
                                 fetch_interval=60) for i in range(60000)])
    write_avro_file(f'{crawl}/segments/20261122000000/crawl_fetch/part-00000.avro',
                    CRAWL_DATUM_SCHEMA,
                    [crawl_datum(f'http://h{i % 300}.test/p{i}', 'fetch_success', fetch_time=1,
                                 fetch_interval=60, protocol_status='success')
                     for i in range(0, 60000, 2)])
    before = read_db(crawl)
    lock = os.path.join(crawl, 'crawldb', '.locked')
    proc = subprocess.Popen([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'updatedb', crawl],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    while not glob.glob(os.path.join(crawl, 'crawldb', '.tmp-crawldb-*')):
        assert proc.poll() is None
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130
    assert stderr.strip().splitlines()[-1].startswith('beamcrawl updatedb: interrupted (SIGINT)')
    assert 'Traceback' not in stderr
    assert not os.path.exists(lock) and read_db(crawl) == before
    assert not glob.glob(os.path.join(crawl, 'crawldb', '.tmp-*'))
