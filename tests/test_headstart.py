"""The fetch's head start (transforms/fetcher/headstart.py): the first request of each queue is
under way before Beam is imported, the pipeline's DoFn takes the same fetcher over, and the fetch
is the one it is without a head start: the same statuses, each URL requested once, every gap
between two requests to a host at least the delay."""

import glob
import json
import subprocess
import sys
import time

import pytest

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms import settings
from beamcrawl.transforms.base.config import load_config
from beamcrawl.transforms.fetcher import headstart
from beamcrawl.transforms.fetcher.journal import reading
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from tests.conftest import ROOT, cli_env, read_parts, run_cli, write_seeds
from tests.testweb import Page, TestWeb, html_page, redirect

NOW = '2026-11-22T00:00:00Z'
DELAY = 0.3
HOSTS, PAGES = 5, 3


@pytest.fixture(scope='module')
def small_web():
    sites = {}
    for h in range(HOSTS):
        pages = {f'/p{i}': html_page(f'host {h} page {i}') for i in range(PAGES)}
        pages['/gone'] = Page(status=404)
        pages['/robots.txt'] = Page(body=b'User-agent: *\nDisallow: /private\n',
                                    content_type='text/plain')
        sites[f'h{h}.head.test'] = pages
    web = TestWeb(sites).start()
    yield web
    web.stop()


def _urls():
    return [f'http://h{h}.head.test/{p}' for h in range(HOSTS)
            for p in [f'p{i}' for i in range(PAGES)] + ['gone', 'private/x']]


def _agent(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', f'fetcher.server.delay={DELAY}',
            '-D', 'domain.extra.suffixes=test']


def _generated(web, tmp_path, name):
    crawl = str(tmp_path / name)
    seeds = write_seeds(tmp_path / f'{name}-seeds', _urls())
    run_cli('inject', crawl, seeds, '--now', NOW, *_agent(web))
    run_cli('generate', crawl, '--num-fetchers', '2', '--now', NOW, *_agent(web))
    return crawl


def _statuses(crawl):
    [segment] = glob.glob(f'{crawl}/segments/*')
    records = read_parts(glob.glob(f'{segment}/crawl_fetch/*.avro'))
    return {r['url']: r['status'] for r in records if r['status'] != 'linked'}


def _check_polite(log):
    """Each page requested once; robots.txt once per host; every gap ≥ the delay."""
    pages = [(r.host, r.path) for r in log if r.path != '/robots.txt']
    assert len(pages) == len(set(pages))
    robots = [r.host for r in log if r.path == '/robots.txt']
    assert sorted(robots) == sorted(set(robots))
    by_host = {}
    for r in sorted((r for r in log if r.path != '/robots.txt'), key=lambda r: r.start):
        by_host.setdefault(r.host, []).append(r)
    gaps = [b.start - a.end for reqs in by_host.values() for a, b in zip(reqs, reqs[1:])]
    assert gaps and min(gaps) >= DELAY


# A wrapper of the `beamcrawl` program that notes, when Beam's import begins, what the head
# start had added to its fetcher by then.
_WATCH = r'''
import json, runpy, sys
OUT = %r
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == 'apache_beam' and not hasattr(self, 'seen'):
            self.seen = True
            head = sys.modules.get('beamcrawl.transforms.fetcher.headstart')
            started = [len(h.added) for h in head._STARTED.values()] if head else []
            with open(OUT, 'w') as f:
                json.dump(started, f)
        return None
sys.meta_path.insert(0, Watch())
sys.argv[0] = 'beamcrawl'
runpy.run_module('beamcrawl.pipelines.cli', run_name='__main__')
'''


def _watched_fetch(crawl, web, out, *extra):
    return subprocess.run([sys.executable, '-c', _WATCH % str(out), 'fetch', crawl, '--now', NOW,
                           *_agent(web), *extra], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=cli_env())


def test_the_head_start_requests_before_beam_is_imported_and_changes_nothing(small_web,
                                                                              tmp_path):
    with_head = _generated(small_web, tmp_path, 'with')
    without = _generated(small_web, tmp_path, 'without')
    small_web.clear_log()
    proc = _watched_fetch(with_head, small_web, tmp_path / 'watch.json')
    assert proc.returncode == 0, proc.stderr
    # when Beam's import began, the first URL of every host was in the head start's fetcher
    assert json.loads((tmp_path / 'watch.json').read_text()) == [HOSTS]
    _check_polite(small_web.log)
    log_with = sorted((r.host, r.path) for r in small_web.log)

    small_web.clear_log()
    proc = _watched_fetch(without, small_web, tmp_path / 'watch2.json',
                          '-D', 'fetcher.head.start=false')
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / 'watch2.json').read_text()) == []
    _check_polite(small_web.log)
    assert sorted((r.host, r.path) for r in small_web.log) == log_with
    assert _statuses(with_head) == _statuses(without)
    assert set(_statuses(with_head).values()) == {'fetch_success', 'fetch_gone'} and \
        len(_statuses(with_head)) == len(_urls())


def test_a_beam_option_or_streaming_leaves_the_head_start_out(small_web, tmp_path):
    crawl = _generated(small_web, tmp_path, 'c')
    small_web.clear_log()
    proc = _watched_fetch(crawl, small_web, tmp_path / 'watch.json',
                          '--direct_running_mode', 'in_memory')
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / 'watch.json').read_text()) == []   # Beam first: no head start
    _check_polite(small_web.log)
    assert len(_statuses(crawl)) == len(_urls())


@pytest.mark.parametrize('failure', [RuntimeError('no pipeline today'), KeyboardInterrupt()])
def test_a_head_start_nothing_took_over_is_journaled_and_resumed(small_web, tmp_path,
                                                                 monkeypatch, capsys, failure):
    crawl = _generated(small_web, tmp_path, 'c')
    small_web.clear_log()
    from beamcrawl.transforms.runners import runtime

    def broken(*_args, **_kwargs):
        # fails once the head start's URLs are done (the point observed, whatever the
        # machine's speed: with Beam imported before, the pipeline comes at once)
        [head] = headstart._STARTED.values()
        while head.fetcher.outstanding():
            time.sleep(0.01)
        raise failure
    monkeypatch.setattr(runtime, 'make_pipeline', broken)
    err = _failed_fetch(main, crawl, small_web, capsys, failure)
    if isinstance(failure, KeyboardInterrupt):     # what the user reads says what was kept
        assert f'interrupted: {HOSTS} fetched, {len(_urls()) - HOSTS} left; rerun to resume' \
            in err, err
    else:
        assert 'no pipeline today' in err
    # the head start's URLs (the first of each host) are in the journal, fetched
    [journal] = glob.glob(f'{crawl}/segments/*/.fetch')
    assert reading.read_journals(journal).fetched == HOSTS
    monkeypatch.undo()
    assert main(['fetch', crawl, '--now', NOW, *_agent(small_web)]) == 0
    assert 'fetched by an earlier run' in capsys.readouterr().out
    _check_polite([r for r in small_web.log if r.path != '/robots.txt'])
    assert len(_statuses(crawl)) == len(_urls())


def _failed_fetch(main, crawl, web, capsys, failure):
    code = main(['fetch', crawl, '--now', NOW, *_agent(web)])
    assert code == (130 if isinstance(failure, KeyboardInterrupt) else 2)
    return capsys.readouterr().err


def test_start_takes_the_first_url_of_each_queue_within_its_bounds(small_web, tmp_path):
    cfg = load_config(overrides={'http.agent.name': 'testbot', 'http.proxy.host': '127.0.0.1',
                                 'http.proxy.port': small_web.port, 'fetcher.server.delay': 0.0,
                                 'fetcher.threads.fetch': 2,
                                 'fetcher.queue.depth.multiplier': 1})
    fetch = settings.fetcher_settings(cfg)
    part = str(tmp_path / 'part-00000.avro')
    urls = _urls()
    write_avro_file(part, CRAWL_DATUM_SCHEMA,
                    [crawl_datum(u, 'db_unfetched', fetch_time=0, fetch_interval=60)
                     for u in urls + [urls[0]]])
    kwargs = dict(generate_files=[part], settings=fetch,
                  http=settings.http_settings(cfg, fetch.threads),
                  policy=settings.url_policy(cfg), now=5, journal_dir=str(tmp_path / 'j'))
    head = headstart.start(run_id='r1', done=frozenset({urls[0]}), **kwargs)
    try:
        # threads × depth = 2 queues; h0's first URL was done before: its next one is taken
        assert head.added == {urls[1], urls[PAGES + 2]}
        assert headstart.adopt(str(tmp_path / 'other'), 'r1') is None
        assert headstart.adopt(str(tmp_path / 'j'), 'r1') is head
        assert headstart.adopt(str(tmp_path / 'j'), 'r1') is None       # taken over once
        assert head.skips(urls[1]) and not head.skips(urls[1]) and not head.skips(urls[0])
    finally:
        head.fetcher.stop('interrupted')
        head.fetcher.close()
    by_ip = settings.fetcher_settings(load_config(overrides={
        'http.agent.name': 'testbot', 'fetcher.queue.mode': 'byIP'}))
    assert headstart.start(run_id='r2', **dict(kwargs, settings=by_ip)) is None
    # abandoned: what it fetched is journaled under the run
    head = headstart.start(run_id='r3', **kwargs)
    deadline = time.monotonic() + 120
    while head.fetcher.outstanding() and time.monotonic() < deadline:    # both requested
        time.sleep(0.01)
    assert headstart.abandon(head) == len(head.added) == 2
    assert headstart.adopt(str(tmp_path / 'j'), 'r3') is None
    journaled = read_parts(glob.glob(str(tmp_path / 'j' / 'run-r3' / '*.crawl_fetch.avro')))
    assert {r['url'] for r in journaled if r['status'] != 'linked'} == set(head.added)


def test_a_url_a_head_start_redirect_fetched_is_not_requested_again(tmp_path):
    """The head start follows a redirect to a URL of the fetch list before the pipeline adds
    that URL: the add is left out, and each URL is requested once, as without the head start
    (then the target is in the fetcher first and the redirect is a duplicate)."""
    web = TestWeb({'r.head.test': {'/a': redirect('/b'), '/b': redirect('/a'),
                                   '/c': html_page('c'),
                                   '/robots.txt': Page(body=b'', content_type='text/plain')}})
    web.start()
    try:
        cfg = load_config(overrides={'http.agent.name': 'testbot', 'http.proxy.host': '127.0.0.1',
                                     'http.proxy.port': web.port, 'fetcher.server.delay': 0.0,
                                     'http.redirect.max': 3, 'domain.extra.suffixes': ['test']})
        fetch = settings.fetcher_settings(cfg)
        part = str(tmp_path / 'part-00000.avro')
        urls = ['http://r.head.test/a', 'http://r.head.test/b', 'http://r.head.test/c']
        records = [crawl_datum(u, 'db_unfetched', fetch_time=0, fetch_interval=60) for u in urls]
        write_avro_file(part, CRAWL_DATUM_SCHEMA, records)
        head = headstart.start(generate_files=[part], settings=fetch,
                               http=settings.http_settings(cfg, fetch.threads),
                               policy=settings.url_policy(cfg), now=5,
                               journal_dir=str(tmp_path / 'j'), run_id='r1')
        assert head.added == {urls[0]}
        while head.fetcher.outstanding():      # /a, then /b through the redirect: both done
            time.sleep(0.01)
        for record in records:                 # what the DoFn does once it takes over
            if not head.skips(record['url']):
                head.fetcher.add(head.fetcher.queue_of(record['url']), record)
        results = head.fetcher.close()
    finally:
        web.stop()
    assert sorted(r.path for r in web.log if r.path != '/robots.txt') == ['/a', '/b', '/c']
    statuses = {}
    for part_name, record in results:
        if part_name == 'crawl_fetch' and record['status'] != 'linked':
            statuses.setdefault(record['url'], []).append(record['status'])
    assert statuses == {urls[0]: ['fetch_redir_perm'], urls[1]: ['fetch_redir_perm'],
                        urls[2]: ['fetch_success']}


def test_a_late_fetch_whose_settings_name_a_store_reaches_the_store(small_web, tmp_path):
    """A fetch that parses its command line without Beam still reads a setting's file on S3
    (the site file names a URL filter there): Beam's filesystems are set up before the
    settings are used. The S3 endpoint is a loopback socket that no one answers: the command
    connecting to it is the proof (not Beam's 'Unable to get filesystem')."""
    import select
    import socket
    crawl = _generated(small_web, tmp_path, 'c')
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(8)
    site = tmp_path / 'site.yaml'
    site.write_text('urlfilter.regex.file: s3://crawl/regex-urlfilter.txt\n')
    env = cli_env({'AWS_ENDPOINT_URL': f'http://127.0.0.1:{listener.getsockname()[1]}',
                   'AWS_ACCESS_KEY_ID': 'test', 'AWS_SECRET_ACCESS_KEY': 'test',
                   'AWS_DEFAULT_REGION': 'us-east-1'})
    proc = subprocess.Popen([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'fetch', crawl,
                             '--conf', str(site), '--now', NOW, *_agent(small_web)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        connected = False
        while not connected and proc.poll() is None:
            connected = bool(select.select([listener], [], [], 0.1)[0])
        if not connected:
            _, err = proc.communicate()
            raise AssertionError(f'the fetch ended ({proc.returncode}) without reaching S3:\n'
                                 f'{err}')
    finally:
        proc.kill()
        proc.communicate()
        listener.close()
