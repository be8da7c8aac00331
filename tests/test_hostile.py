"""The crawler against the hostile test web (tests/hostileweb.py): every case ends in a recorded
status, a counter, or a one-line error; nothing reaches a refused address; no request outlives
its deadline; the crawl's invariants hold."""

import dataclasses
import os
import socket
import urllib.parse
from collections import Counter

import pytest

from beamcrawl.transforms import settings
from beamcrawl.transforms.base.config import load_config
from beamcrawl.transforms.fetcher import Fetcher
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH
from tests import hostileweb
from tests.conftest import logged_counters, read_db, run_cli, write_seeds
from tests.forwardproxy import ForwardingProxy
from tests.testweb import html_page

NOW = 1795305600000
DEADLINE_MS = 1000


@pytest.fixture(scope='module', autouse=True)
def hostile(testweb):
    for host, routes in hostileweb.sites().items():
        for path, route in routes.items():
            testweb.add(host, path, route)
    testweb.add('rebind.test', '/', html_page('reached through a rebinding name'))


@pytest.fixture(scope='module')
def slow_tls():
    """HTTPS servers that never finish their handshake, one per test that uses one."""
    servers = {name: hostileweb.TlsTrickler(name).start()
               for name in ('tls-fwd', 'tls-direct', 'tls-limit-fwd', 'tls-limit-direct')}
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture(scope='module')
def forwarder(testweb, slow_tls):
    """A forwarding proxy in front of the test web (and of two TLS tricklers, as tls.test and
    tls-limit.test), trickling its CONNECT answer for the slow-connect hosts."""
    tunnels = {'tls.test': slow_tls['tls-fwd'].port,
               'tls-limit.test': slow_tls['tls-limit-fwd'].port}
    proxy = ForwardingProxy(lambda host, port: ('127.0.0.1', tunnels.get(host, testweb.port)),
                            trickle_connect=['slow-connect.test', 'slow-connect-limit.test'])
    yield proxy.start()
    proxy.stop()


def _path(web, forwarder, path):
    """(how a URL's host is written, the config overrides) of a way to reach the test web."""
    if path == 'test web as proxy':
        return '', {}
    if path == 'forwarding proxy':
        return 'fwd-', {'http.proxy.port': forwarder.port}
    assert path == 'no proxy'
    return '127.0.0.1', {'http.proxy.host': '', 'http.address.allow': '127.0.0.0/8'}


PATHS = ['test web as proxy', 'forwarding proxy', 'no proxy']


def _values(web, **overrides):
    values = {'http.agent.name': 'testbot', 'http.proxy.host': '127.0.0.1',
              'http.proxy.port': web.port, 'fetcher.server.delay': 0.0,
              'domain.extra.suffixes': 'test', 'fetcher.progress.seconds': 60,
              'http.request.deadline': DEADLINE_MS, 'http.timeout': 3000}
    values.update(overrides)
    return values


def fetch(web, urls, *, time_limit_s=None, **overrides):
    """Fetches URLs with the fetch engine; returns (records by URL, linked, contents, counts)."""
    cfg = load_config(overrides=_values(web, **overrides))
    engine = settings.fetcher_settings(cfg, 4)
    if time_limit_s is not None:
        engine = dataclasses.replace(engine, time_limit_s=time_limit_s)
    fetcher = Fetcher(engine, settings.http_settings(cfg, 4), settings.url_policy(cfg), NOW)
    for url in urls:
        fetcher.add(fetcher.queue_of(url), crawl_datum(url, 'db_unfetched', fetch_time=0,
                                                       fetch_interval=86400))
    out = fetcher.close()
    fetched = [r for part, r in out if part == CRAWL_FETCH and r['status'] != 'linked']
    counts = Counter(r['url'] for r in fetched)
    assert set(urls) <= set(counts) and set(counts.values()) == {1}, 'not once per URL'
    return ({r['url']: r for r in fetched},
            [r for part, r in out if part == CRAWL_FETCH and r['status'] == 'linked'],
            {r['url']: r for part, r in out if part == CONTENT}, fetcher.counts)


def only_hostile_hosts(web):
    hosts = {r.host for r in web.log}
    assert hosts <= hostileweb.HOSTS | {'rebind.test'}, hosts - hostileweb.HOSTS


def test_every_spelling_of_a_denied_address_is_refused_unrequested(web):
    by_url, _, contents, counts = fetch(web, hostileweb.DENIED_TARGETS)
    assert {(r['status'], r['protocol_status']) for r in by_url.values()} == \
        {('fetch_retry', 'blocked')}       # not gone: the server said nothing (D42)
    assert all('address policy' in r['metadata']['_error_'] for r in by_url.values())
    assert counts['fetch.denied.address'] == len(hostileweb.DENIED_TARGETS)
    assert not contents and web.log == []            # not even a robots.txt request


def test_redirects_to_denied_addresses_are_neither_followed_nor_recorded(web):
    urls = [f'http://evil.test/redirect/{i}' for i in range(len(hostileweb.DENIED_TARGETS))]
    by_url, linked, _, counts = fetch(web, urls, **{'http.redirect.max': 3})
    assert {r['status'] for r in by_url.values()} == {'fetch_redir_temp'}
    assert linked == [] and counts['fetch.denied.address'] == len(urls)
    only_hostile_hosts(web)


def test_a_robots_txt_redirect_to_a_denied_address_is_not_followed(web):
    by_url, _, _, counts = fetch(web, ['http://robots-ssrf.test/page'])
    assert by_url['http://robots-ssrf.test/page']['status'] == 'fetch_success'
    assert counts['fetch.denied.address'] == 1
    assert [r.path for r in web.requests_for('robots-ssrf.test')] == ['/robots.txt', '/page']
    only_hostile_hosts(web)


def test_the_address_connected_to_is_checked_without_a_proxy(web, monkeypatch):
    real = socket.getaddrinfo

    def rebinding(host, *args, **kwargs):       # a public-looking name that resolves to us
        return real('127.0.0.1' if host == 'rebind.test' else host, *args, **kwargs)

    monkeypatch.setattr(socket, 'getaddrinfo', rebinding)
    url = f'http://rebind.test:{web.port}/'
    no_proxy = {'http.proxy.host': ''}
    by_url, _, _, counts = fetch(web, [url], **no_proxy)
    assert (by_url[url]['status'], by_url[url]['protocol_status']) == ('fetch_retry', 'blocked')
    assert 'loopback address 127.0.0.1' in by_url[url]['metadata']['_error_']
    assert counts['fetch.denied.address'] == 2           # robots.txt and the page
    assert web.log == []
    by_url, _, _, _ = fetch(web, [url], **no_proxy, **{'http.address.allow': '127.0.0.0/8'})
    assert by_url[url]['status'] == 'fetch_success'       # an intranet crawl opts in
    assert [r.path for r in web.requests_for('rebind.test')] == ['/robots.txt', '/']


@pytest.mark.parametrize('path', PATHS)
def test_trickled_headers_and_body_are_cut_at_the_deadline(web, forwarder, path):
    # /body-close answers `Connection: close` (as proxies often do) before its slow body.
    prefix, overrides = _path(web, forwarder, path)
    names = ['headers', 'body', 'body-close', 'never']
    if prefix == '127.0.0.1':
        prefix, site, notes = 'direct-', f'http://127.0.0.1:{web.port}', 'direct-'
    else:
        site, notes = f'http://{prefix}trickle.test', prefix
    urls = [f'{site}/{name}' for name in names]
    by_url, _, contents, counts = fetch(web, urls, **overrides)
    for url in urls:
        r = by_url[url]
        assert (r['status'], r['protocol_status'], r['http_code']) == \
            ('fetch_retry', 'exception', None), url
        assert 'cut at its deadline' in r['metadata']['_error_'], url
    assert not contents and counts['fetch.deadline_exceeded'] == len(urls)
    # The servers never got to the end of their slow responses: the requests were cut.
    for name in names:
        assert hostileweb.outcome(notes + name).startswith('cut'), name


@pytest.mark.parametrize('path,url,note', [
    ('forwarding proxy', 'https://slow-connect.test/page', 'connect-slow-connect.test'),
    ('forwarding proxy', 'https://tls.test/page', 'tls-fwd'),
    ('no proxy', 'https://127.0.0.1:{tls-direct}/page', 'tls-direct'),
])
def test_a_slow_connect_or_tls_handshake_is_cut_at_the_deadline(web, forwarder, slow_tls, path,
                                                                   url, note):
    # The proxy's answer to CONNECT and the TLS handshake come before the request is sent:
    # the deadline holds for them too. The site's robots.txt is the request that hangs, so its
    # page is not fetched now.
    url = url.replace('{tls-direct}', str(slow_tls['tls-direct'].port))
    by_url, _, _, counts = fetch(web, [url], **_path(web, forwarder, path)[1])
    r = by_url[url]
    assert (r['status'], r['protocol_status']) == ('fetch_retry', 'notfetching')
    assert r['metadata']['_error_'].startswith('robots.txt not fetched')
    assert counts['fetch.robots.unavailable'] == 1
    assert hostileweb.outcome(note).startswith('cut after'), note


def test_truncated_responses_and_huge_headers_are_failures(web):
    urls = ['http://trickle.test/truncated-body', 'http://trickle.test/truncated-headers',
            'http://trickle.test/huge-headers']
    by_url, _, contents, _ = fetch(web, urls, **{'http.request.deadline': 30000})
    for url in urls:
        assert (by_url[url]['status'], by_url[url]['protocol_status']) == \
            ('fetch_retry', 'exception'), url
    assert not contents


LIMIT_CASES = [
    # path, first URL (it hangs), the note of what hangs
    ('test web as proxy', 'http://limit.test/a', 'limit-a'),
    ('forwarding proxy', 'http://fwd-limit.test/a', 'fwd-limit-a'),
    ('no proxy', 'http://127.0.0.1:{web}/a', 'direct-limit-a'),
    ('forwarding proxy', 'https://slow-connect-limit.test/a', 'connect-slow-connect-limit.test'),
    ('forwarding proxy', 'https://tls-limit.test/a', 'tls-limit-fwd'),
    ('no proxy', 'https://127.0.0.1:{tls}/a', 'tls-limit-direct'),
]


@pytest.mark.parametrize('path,first,note', LIMIT_CASES)
def test_the_time_limit_ends_the_fetch_with_requests_in_flight(web, forwarder, slow_tls, path,
                                                               first, note):
    # Two URLs of one queue whose first request hangs (a page that never answers, a proxy's
    # CONNECT answer or a TLS handshake that trickles), with deadlines far away: once it is in
    # flight, the fetch is stopped as the time limit stops it; the request is cut at once and
    # /b, still waiting, is not requested.
    tls = slow_tls.get(note)
    first = first.format(web=web.port, tls=slow_tls['tls-limit-direct'].port)
    urls = [first, first[:-1] + 'b']
    host = urllib.parse.urlsplit(first).hostname
    if note.startswith('connect-'):
        in_flight = lambda: ('CONNECT', f'{host}:443') in forwarder.requests()  # noqa: E731
    elif note.startswith('tls-'):
        in_flight = lambda: tls.connections > 0  # noqa: E731
    else:
        in_flight = lambda: '/a' in [r.path for r in web.requests_for(host)]  # noqa: E731
    cfg = load_config(overrides=_values(web, **{'http.request.deadline': 600000,
                                                'http.timeout': 600000},
                                        **_path(web, forwarder, path)[1]))
    fetcher = Fetcher(settings.fetcher_settings(cfg, 4), settings.http_settings(cfg, 4),
                      settings.url_policy(cfg), NOW)
    for url in urls:
        fetcher.add(fetcher.queue_of(url), crawl_datum(url, 'db_unfetched', fetch_time=0,
                                                       fetch_interval=86400))
    fetcher.finish()
    while not in_flight():
        assert not fetcher.done(), 'the fetch ended before its first request was in flight'
        fetcher.take(wait=0.01)
    fetcher.stop('time limit')
    out = fetcher.close()
    by_url = {r['url']: r for part, r in out if part == CRAWL_FETCH}
    assert set(by_url) == set(urls)
    assert {r['protocol_status'] for r in by_url.values()} == {'notfetching'}
    assert {r['status'] for r in by_url.values()} == {'fetch_retry'}
    assert hostileweb.outcome(note).startswith('cut')        # cut, not waited for
    if first.startswith('http:'):
        assert [r.path for r in web.requests_for(host)] == ['/robots.txt', '/a']
    else:                                                    # robots.txt hung: nothing more
        assert not web.requests_for(host)
        if tls is not None:
            assert tls.connections == 1
        else:
            assert forwarder.requests().count(('CONNECT', f'{host}:443')) == 1


@pytest.mark.parametrize('path', ['forwarding proxy', 'no proxy'])
def test_fetcher_timelimit_mins_cuts_a_slow_body_and_keeps_the_urls(web, forwarder, tmp_path,
                                                                     path):
    # The time limit itself (a fraction of a minute), through the command: a body that takes a
    # minute after `Connection: close`, and a URL behind it in the same queue.
    prefix, overrides = _path(web, forwarder, path)
    site = f'http://127.0.0.1:{web.port}' if prefix == '127.0.0.1' else f'http://{prefix}limit.test'
    note = 'direct-' if prefix == '127.0.0.1' else prefix
    urls = [f'{site}/slow-body', f'{site}/b']
    crawl = str(tmp_path / 'crawl')
    conf = [*_conf(web, '-D', 'http.request.deadline=600000', '-D', 'http.timeout=600000'),
            *[arg for key, value in overrides.items() for arg in ('-D', f'{key}={value}')]]
    run_cli('inject', crawl, write_seeds(tmp_path / 'seeds', urls), '--now', str(NOW), *conf)
    run_cli('generate', crawl, '--now', str(NOW), *conf)
    proc = run_cli('fetch', crawl, '--now', str(NOW), *conf,
                   '-D', 'fetcher.timelimit.mins=0.05')
    layout = CrawlLayout(crawl)
    (segment,) = layout.segment_names()
    fetched = {r['url']: r for r in iter_records(layout.part_files(segment, CRAWL_FETCH))}
    assert set(fetched) == set(urls)
    assert {(r['status'], r['protocol_status']) for r in fetched.values()} == \
        {('fetch_retry', 'notfetching')}
    assert 'time limit' in proc.stderr
    host = urllib.parse.urlsplit(site).hostname
    requested = [r.path for r in web.requests_for(host) if r.path != '/robots.txt']
    # Both URLs are in one queue, in the order the fetch's GroupByKey gives them (not defined):
    # the first was in flight at the limit and was cut; the one behind it was never requested.
    assert len(requested) <= 1, requested
    if requested == ['/slow-body']:
        assert hostileweb.outcome(note + 'limit-slow-body').startswith('cut after')
    elif requested == ['/b']:                      # a page that never answers
        assert hostileweb.outcome(note + 'limit-b') == 'cut'


def test_a_slow_robots_txt_means_not_now(web):
    by_url, _, _, counts = fetch(web, ['http://slow-robots.test/page'])
    r = by_url['http://slow-robots.test/page']
    assert (r['status'], r['protocol_status']) == ('fetch_retry', 'notfetching')
    assert counts['fetch.robots.unavailable'] == 1
    assert [x.path for x in web.requests_for('slow-robots.test')] == ['/robots.txt']
    assert hostileweb.outcome('robots').startswith('cut after')


def test_a_2_gb_body_and_a_gzip_bomb_stop_at_their_caps(web):
    # The point here is the caps: deadlines long enough for a loaded machine.
    slack = {'http.request.deadline': 120000, 'http.timeout': 60000}
    by_url, _, contents, _ = fetch(web, ['http://trickle.test/huge-body'],
                                   **{'http.content.limit': 65536, **slack})
    assert by_url['http://trickle.test/huge-body']['status'] == 'fetch_success'
    body = contents['http://trickle.test/huge-body']
    assert len(body['content']) == 65536 and body['truncated']
    sent = int(hostileweb.outcome('huge-body').split()[1])
    assert sent < 100 * 2 ** 20                               # it stopped reading early
    _, _, contents, _ = fetch(web, ['http://trickle.test/bomb'], **{
        'http.content.limit': -1, 'http.content.hard.limit': 1 << 20, **slack})
    assert len(contents['http://trickle.test/bomb']['content']) == 1 << 20


def test_redirect_loops_and_long_chains_end(web):
    by_url, linked, _, counts = fetch(web, ['http://chain.test/loop1', 'http://chain.test/hop/0'],
                                      **{'http.redirect.max': 5})
    assert 'http://chain.test/loop2' in by_url and not any('loop' in r['url'] for r in linked)
    hops = sorted(u for u in by_url if '/hop/' in u)
    assert len(hops) == 6 and [r['url'] for r in linked] == ['http://chain.test/hop/6']
    assert counts['fetch.redirect.exceeded'] == 1
    assert Counter(r.path for r in web.requests_for('chain.test'))['/loop1'] == 1


@pytest.mark.parametrize('host,page,d5', [
    ('robots-garbage.test', 'fetch_success', 'fetch_success'),
    ('robots-500.test', 'fetch_retry', 'fetch_retry'),
    ('robots-429.test', 'fetch_retry', 'fetch_retry'),
    ('robots-huge.test', 'fetch_success', 'fetch_gone'),     # rules past 512 KiB are not read
])
def test_hostile_robots_files(web, host, page, d5):
    by_url, _, _, _ = fetch(web, [f'http://{host}/page', f'http://{host}/d5'])
    assert (by_url[f'http://{host}/page']['status'], by_url[f'http://{host}/d5']['status']) == \
        (page, d5)
    requested = {r.path for r in web.requests_for(host)}
    assert ('/page' in requested) == (page == 'fetch_success')




def _conf(web, *extra):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
            '-D', 'domain.extra.suffixes=test', '-D', f'http.request.deadline={DEADLINE_MS}',
            *extra]


@pytest.mark.slow
def test_a_crawl_of_hostile_pages_keeps_every_denied_address_out(web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', [
        'http://evil.test/links', 'http://evil.test/base', 'http://evil.test/refresh',
        'http://robots-ssrf.test/page', 'http://deep.test/urls',
        *[f'http://evil.test/redirect/{i}' for i in range(len(hostileweb.DENIED_TARGETS))]])
    proc = run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', '--now', str(NOW),
                   *_conf(web, '-D', 'http.redirect.max=2'))
    counters = logged_counters(proc.stderr)
    assert counters['parse.denied_address'] >= len(hostileweb.DENIED_TARGETS) + 2   # base, refresh
    assert counters['fetch.denied.address'] >= len(hostileweb.DENIED_TARGETS) + 1   # robots
    only_hostile_hosts(web)
    policy = settings.url_policy(load_config(defines=['domain.extra.suffixes=test']))
    db = read_db(crawl)
    assert not [u for u in db if policy.denied(u)]
    assert 'http://ok.test/' in db and 'http://ok.test/b' in db    # the harmless links stay
    assert not [u for u in db if 'web.test' in u or ' ' in u or 'münchen' in u]
    assert 'http://xn--mnchen-3ya.test/' in db                        # one host, one queue
    layout = CrawlLayout(crawl)
    for segment in layout.segment_names():                           # the crawl's invariants
        generated = [r['url'] for r in iter_records(layout.part_files(segment, 'crawl_generate'))]
        fetched = [r['url'] for r in iter_records(layout.part_files(segment, CRAWL_FETCH))
                   if r['status'] != 'linked']
        assert Counter(fetched) == Counter(generated)


@pytest.mark.slow
def test_deep_and_mislabelled_pages_keep_their_links_and_text(web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    pages = ['fonts', 'divs', 'undefined', 'utf16', 'outlinks']
    seeds = write_seeds(tmp_path / 'seeds', [f'http://deep.test/{p}' for p in pages])
    run_cli('inject', crawl, seeds, '--now', str(NOW), *_conf(web))
    run_cli('generate', crawl, '--now', str(NOW), *_conf(web))
    proc = run_cli('fetch', crawl, '--now', str(NOW), *_conf(web, '-D', 'fetcher.parse=true'))
    assert logged_counters(proc.stderr)['parse.fallback_tokenizer'] == 1
    layout = CrawlLayout(crawl)
    (segment,) = layout.segment_names()
    data = {r['url']: r for r in iter_records(layout.part_files(segment, 'parse_data'))}
    text = {r['url']: r['text'] for r in iter_records(layout.part_files(segment, 'parse_text'))}

    def links(page):
        return [o['to_url'] for o in data[f'http://deep.test/{page}']['outlinks']]

    assert 'http://deep.test/after-fonts' in links('fonts') and 'fonts tail' in \
        text['http://deep.test/fonts']
    assert links('divs') == ['http://deep.test/after-divs']
    assert 'divs tail' in text['http://deep.test/divs']
    assert data['http://deep.test/divs']['metadata']['parse.fallback'].startswith('tokenizer')
    for page, link in (('undefined', 'x'), ('utf16', 'y')):
        record = data[f'http://deep.test/{page}']
        assert record['parse_status'] == 'success' and links(page) == [f'http://deep.test/{link}']
        assert record['metadata']['charset'] == 'utf-8'
        assert record['metadata']['charset.source'] == 'default'
    assert data['http://deep.test/utf16']['title'] == 'Plain ASCII'
    assert len(links('outlinks')) == 100                  # db.max.outlinks.per.page


def test_bad_seed_values_are_reported_with_their_line(tmp_path):
    seeds = write_seeds(tmp_path / 'seeds', [
        'http://n.test/\tscore=nan', 'http://i.test/\tscore=inf', 'http://h.test/\tscore=1e308',
        'http://a b.test/', 'http://münchen.test/', 'http://xn--mnchen-3ya.test/',
        'http://web.test%2f.evil.test/', 'http://169.254.169.254/'])
    proc = run_cli('inject', str(tmp_path / 'c'), seeds, '--now', str(NOW),
                   '-D', 'domain.extra.suffixes=test')
    for line in (1, 2, 3):
        assert f'seeds:{line}: score=' in proc.stderr
    assert 'seeds:8: ' in proc.stderr and 'address policy' in proc.stderr
    counters = logged_counters(proc.stderr)
    assert counters['inject.malformed'] == 2 and counters['inject.denied_address'] == 1
    db = read_db(tmp_path / 'c')
    assert sorted(db) == ['http://h.test/', 'http://i.test/', 'http://n.test/',
                          'http://xn--mnchen-3ya.test/']
    assert {r['score'] for r in db.values()} == {1.0}      # the default score, not nan
    stats = run_cli('readdb', str(tmp_path / 'c'), '--stats', '--json').stdout
    assert '"avg": 1.0' in stats and '"nan_scores": 0' in stats


def test_control_characters_in_config_are_refused(tmp_path):
    proc = run_cli('fetch', str(tmp_path / 'c'), '-D', 'http.agent.name=bot\r\nX-Evil: 1',
                   check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        'beamcrawl fetch: http.agent.name: control characters (CR, LF, TAB, NUL...) are not '
        'allowed in a value']


def test_a_part_that_is_no_regular_file_or_corrupt_is_one_line(tmp_path):
    crawl = str(tmp_path / 'crawl')
    db = CrawlLayout(crawl).crawldb
    write_avro_file(f'{db.current}/part-00000.avro', CRAWL_DATUM_SCHEMA, [
        crawl_datum('http://a.test/', 'db_unfetched', fetch_time=0, fetch_interval=60)])
    os.mkfifo(f'{db.current}/part-00009.avro')
    for args in (('readdb', crawl, '--stats'), ('generate', crawl),
                 ('readdb', crawl, '--url', 'http://missing.test/')):
        proc = run_cli(*args, check=False, timeout=120)
        assert proc.returncode == 2, args
        assert proc.stderr.strip().splitlines()[-1].endswith(
            'part-00009.avro: not a regular file; a part must be one'), args
    segment = os.path.join(crawl, 'segments', '20261122000000', 'crawl_fetch')
    os.makedirs(segment)
    with open(os.path.join(segment, 'part-00000.avro'), 'wb') as f:
        f.write(b'Obj\x01 this is no Avro file')
    for args in (('readseg', crawl, '--list'),
                 ('readseg', crawl, '--dump', '20261122000000', str(tmp_path / 'dump'))):
        proc = run_cli(*args, check=False)
        assert proc.returncode == 2 and 'Traceback' not in proc.stderr, args
        assert 'crawl_fetch/part-00000.avro: not a readable Avro file' in proc.stderr, args
