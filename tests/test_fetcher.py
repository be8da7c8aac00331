"""The fetch engine against the local test web (through its proxy port)."""

import dataclasses
import gzip
import socket
import threading
import time
from collections import Counter

import pytest

from beamcrawl.transforms import settings
from beamcrawl.transforms.base.config import load_config
from beamcrawl.transforms.fetcher import Fetcher
from beamcrawl.transforms.fetcher.dns import Resolver
from beamcrawl.transforms.fetcher.guard import RequestCut, Watchdog
from beamcrawl.transforms.policy.partition import queue_key
from beamcrawl.transforms.storage.records import crawl_datum
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH
from tests.testweb import Page, html_page, redirect

NOW = 1795305600000
ROBOTS_404 = {}


def _cond_page(request):
    if request.headers.get('If-None-Match') == '"v1"':
        return Page(status=304, headers={'ETag': '"v1"'})
    if request.headers.get('If-Modified-Since'):
        return Page(status=304)
    return Page(body=b'<html>cond</html>', headers={'ETag': '"v1"',
                                                    'Last-Modified': 'Sat, 21 Nov 2026 00:00:00 GMT'})


@pytest.fixture(scope='module', autouse=True)
def sites(testweb):
    for host in ('pol1.test', 'pol2.test', 'tl.test'):
        for i in range(6):
            testweb.add(host, f'/{i}', html_page(f'{host} {i}'))
    for code in (200, 201, 300, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 410, 429, 500,
                 503):
        headers = {'Location': '/target'} if 300 <= code < 400 and code != 304 else {}
        testweb.add('codes.test', f'/c/{code}', Page(status=code, headers=headers, body=b'x'))
    testweb.add('codes.test', '/target', html_page('target'))
    testweb.add('deny.test', '/robots.txt', Page(body=b'User-agent: *\nDisallow: /\n',
                                                 content_type='text/plain'))
    testweb.add('deny.test', '/a', html_page('never'))
    testweb.add('mine.test', '/robots.txt', Page(
        body=b'User-agent: *\nDisallow: /\n\nUser-agent: testbot\nDisallow: /no\n',
        content_type='text/plain'))
    testweb.add('mine.test', '/yes', html_page('yes'))
    testweb.add('mine.test', '/no', html_page('no'))
    testweb.add('delay.test', '/robots.txt', Page(body=b'User-agent: *\nCrawl-delay: 0.6\n',
                                                  content_type='text/plain'))
    testweb.add('hugedelay.test', '/robots.txt', Page(body=b'User-agent: *\nCrawl-delay: 100\n',
                                                      content_type='text/plain'))
    for i in range(3):
        testweb.add('delay.test', f'/{i}', html_page(str(i)))
        testweb.add('hugedelay.test', f'/{i}', html_page(str(i)))
    testweb.add('r500.test', '/robots.txt', Page(status=503, body=b'busy'))
    testweb.add('r500.test', '/a', html_page('a'))
    testweb.add('robredir.test', '/robots.txt', redirect('http://robtarget.test/robots.txt'))
    testweb.add('robtarget.test', '/robots.txt', Page(body=b'User-agent: *\nDisallow: /x\n',
                                                      content_type='text/plain'))
    testweb.add('robredir.test', '/x', html_page('x'))
    testweb.add('robredir.test', '/y', html_page('y'))
    for i in range(1, 4):
        testweb.add('redir.test', f'/r{i}', redirect(f'/r{i + 1}', 302))
    testweb.add('redir.test', '/r4', html_page('final'))
    testweb.add('redir.test', '/loop1', redirect('/loop2'))
    testweb.add('redir.test', '/loop2', redirect('/loop1'))
    testweb.add('cond.test', '/page', _cond_page)
    testweb.add('big.test', '/big', Page(body=b'a' * 200000, content_type='text/plain'))
    bomb = gzip.compress(b'\0' * (64 << 20), compresslevel=9)
    testweb.add('big.test', '/bomb', Page(body=bomb, headers={'Content-Encoding': 'gzip'},
                                          content_type='text/plain'))
    testweb.add('big.test', '/gz', Page(body=gzip.compress(b'hello gzip'),
                                        headers={'Content-Encoding': 'gzip'},
                                        content_type='text/plain'))
    testweb.add('slow.test', '/slow', Page(body=b'late', delay=2.0))
    for i in range(8):
        testweb.add('flaky.test', f'/e{i}', Page(status=500, body=b'boom'))
    pair = _Rendezvous()
    for i in range(4):
        testweb.add('pair.test', f'/{i}', pair)


class _Rendezvous:
    """A page whose requests pair up: each answers only once its partner request has arrived
    (the 1st and 2nd request, the 3rd and 4th, ...), or after 30 s."""

    def __init__(self):
        self.cond = threading.Condition()
        self.arrived = 0

    def __call__(self, request):
        with self.cond:
            mine = self.arrived
            self.arrived += 1
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.arrived >= mine // 2 * 2 + 2, timeout=30)
        return html_page('pair')


def rec(url, **kw):
    return crawl_datum(url, 'db_unfetched', fetch_time=0, fetch_interval=2592000, **kw)


def fetch_all(web, urls, *, threads=4, time_limit_s=None, records=None, **overrides):
    values = {'http.agent.name': 'testbot', 'http.proxy.host': '127.0.0.1',
              'http.proxy.port': web.port, 'fetcher.server.delay': 0.0,
              'domain.extra.suffixes': 'test', 'fetcher.progress.seconds': 60}
    values.update(overrides)
    cfg = load_config(overrides=values)
    fetch = settings.fetcher_settings(cfg, threads)
    if time_limit_s is not None:
        fetch = dataclasses.replace(fetch, time_limit_s=time_limit_s)
    fetcher = Fetcher(fetch, settings.http_settings(cfg, threads), settings.url_policy(cfg), NOW)
    inputs = records or [rec(u) for u in urls]
    for r in inputs:
        fetcher.add(fetcher.queue_of(r['url']), r)
    out = fetcher.close()
    fetched = [r for part, r in out if part == CRAWL_FETCH and r['status'] != 'linked']
    counts = Counter(r['url'] for r in fetched)
    assert all(counts[r['url']] == 1 for r in inputs), 'not exactly once per input URL'
    assert set(counts.values()) <= {1}, 'a followed redirect target fetched twice'
    if not overrides.get('http.redirect.max'):
        assert set(counts) == {r['url'] for r in inputs}
    by_url = {r['url']: r for r in fetched}
    linked = [r for part, r in out if part == CRAWL_FETCH and r['status'] == 'linked']
    contents = {r['url']: r for part, r in out if part == CONTENT}
    return by_url, linked, contents


def gaps(web, host):
    log = sorted(web.requests_for(host), key=lambda r: r.start)
    log = [r for r in log if r.path != '/robots.txt']
    return [b.start - a.end for a, b in zip(log, log[1:])]


def _span(web, host):
    log = [r for r in web.requests_for(host) if r.path != '/robots.txt']
    return min(r.start for r in log), max(r.end for r in log)


def test_politeness_gap_from_end_to_next_start(web):
    urls = [f'http://pol{h}.test/{i}' for h in (1, 2) for i in range(5)]
    by_url, _, _ = fetch_all(web, urls, **{'fetcher.server.delay': 0.3})
    assert all(r['status'] == 'fetch_success' for r in by_url.values())
    for host in ('pol1.test', 'pol2.test'):
        assert len(gaps(web, host)) == 4
        assert min(gaps(web, host)) >= 0.3, gaps(web, host)
    # the two hosts were fetched side by side, not one after the other
    (a_start, a_end), (b_start, b_end) = _span(web, 'pol1.test'), _span(web, 'pol2.test')
    assert a_start < b_end and b_start < a_end


def test_the_politeness_check_fails_without_the_delay(web):
    # Two threads per queue and no delay: each pair.test page answers only once a second
    # request to the host is in progress, so the requests overlap and a gap is negative.
    urls = [f'http://pair.test/{i}' for i in range(4)]
    by_url, _, _ = fetch_all(web, urls, **{'fetcher.server.delay': 0.0,
                                           'fetcher.server.min.delay': 0.0,
                                           'fetcher.threads.per.queue': 2})
    assert all(r['status'] == 'fetch_success' for r in by_url.values())
    assert min(gaps(web, 'pair.test')) < 0.3       # so the assertion above has teeth


def test_status_codes(web):
    codes = (200, 201, 300, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 410, 429, 500, 503)
    urls = [f'http://codes.test/c/{c}' for c in codes]
    by_url, linked, contents = fetch_all(web, urls, **{'fetcher.max.exceptions.per.queue': -1})
    expected = {200: 'fetch_success', 201: 'fetch_retry', 300: 'fetch_redir_perm',
                301: 'fetch_redir_perm', 302: 'fetch_redir_temp', 303: 'fetch_redir_temp',
                304: 'fetch_notmodified', 307: 'fetch_redir_temp', 308: 'fetch_redir_perm',
                400: 'fetch_gone', 401: 'fetch_gone', 403: 'fetch_retry', 404: 'fetch_gone',
                410: 'fetch_gone', 429: 'fetch_retry', 500: 'fetch_retry', 503: 'fetch_retry'}
    for code, status in expected.items():
        r = by_url[f'http://codes.test/c/{code}']
        assert (r['status'], r['http_code']) == (status, code), code
        assert r['metadata']['nutch.protocol.code'] == str(code)
        assert r['fetch_time'] == NOW and r['metadata']['_pst_'] == r['protocol_status']
    assert set(contents) == {f'http://codes.test/c/{c}' for c in (200, 300, 301, 302, 303, 307,
                                                                  308)}
    assert {r['url'] for r in linked} == {'http://codes.test/target'}
    assert all(r['score'] == 0.0 and r['metadata']['_repr_'] for r in linked)


def test_robots_rules(web):
    urls = ['http://deny.test/a', 'http://mine.test/yes', 'http://mine.test/no',
            'http://r500.test/a', 'http://robredir.test/x', 'http://robredir.test/y',
            'http://hugedelay.test/0', 'http://codes.test/c/200']
    by_url, _, _ = fetch_all(web, urls)
    status = {u: (r['status'], r['protocol_status']) for u, r in by_url.items()}
    assert status['http://deny.test/a'] == ('fetch_gone', 'robots_denied')
    assert status['http://mine.test/yes'] == ('fetch_success', 'success')
    assert status['http://mine.test/no'] == ('fetch_gone', 'robots_denied')
    assert status['http://r500.test/a'] == ('fetch_retry', 'notfetching')   # RFC 9309
    assert status['http://robredir.test/x'] == ('fetch_gone', 'robots_denied')
    assert status['http://robredir.test/y'] == ('fetch_success', 'success')
    assert status['http://hugedelay.test/0'] == ('fetch_gone', 'robots_denied')
    assert status['http://codes.test/c/200'][0] == 'fetch_success'          # robots 404
    assert not [r for r in web.requests_for('deny.test') if r.path == '/a']
    assert not [r for r in web.requests_for('r500.test') if r.path == '/a']


def test_robots_crawl_delay_is_obeyed(web):
    by_url, _, _ = fetch_all(web, [f'http://delay.test/{i}' for i in range(3)])
    assert all(r['status'] == 'fetch_success' for r in by_url.values())
    assert min(gaps(web, 'delay.test')) >= 0.6


def test_redirects_recorded_when_not_followed(web):
    by_url, linked, _ = fetch_all(web, ['http://redir.test/r1'])
    assert by_url['http://redir.test/r1']['status'] == 'fetch_redir_temp'
    assert [r['url'] for r in linked] == ['http://redir.test/r2']


def test_redirect_chain_followed(web):
    by_url, linked, contents = fetch_all(web, ['http://redir.test/r1'],
                                         **{'http.redirect.max': 5})
    assert [by_url[f'http://redir.test/r{i}']['status'] for i in (1, 2, 3)] == \
        ['fetch_redir_temp'] * 3
    assert by_url['http://redir.test/r4']['status'] == 'fetch_success'
    assert 'http://redir.test/r4' in contents and not linked


def test_redirect_chain_exceeded_and_loop(web):
    by_url, linked, _ = fetch_all(web, ['http://redir.test/r1'], **{'http.redirect.max': 1})
    assert set(by_url) == {'http://redir.test/r1', 'http://redir.test/r2'}
    assert [r['url'] for r in linked] == ['http://redir.test/r3']
    by_url, linked, _ = fetch_all(web, ['http://redir.test/loop1'], **{'http.redirect.max': 5})
    assert set(by_url) == {'http://redir.test/loop1', 'http://redir.test/loop2'}
    assert not linked                                      # the loop back was not followed


def test_conditional_get_with_both_validators(web):
    first, _, _ = fetch_all(web, ['http://cond.test/page'])
    page = first['http://cond.test/page']
    assert page['status'] == 'fetch_success' and page['metadata']['ETag'] == '"v1"'
    assert page['metadata']['Last-Modified'].startswith('Sat, 21 Nov 2026')
    by_etag, _, contents = fetch_all(web, [], records=[
        rec('http://cond.test/page', metadata={'ETag': '"v1"'})])
    assert by_etag['http://cond.test/page']['status'] == 'fetch_notmodified' and not contents
    by_date, _, _ = fetch_all(web, [], records=[
        rec('http://cond.test/page', modified_time=NOW - 86400000, signature=b'old')])
    r = by_date['http://cond.test/page']
    assert r['status'] == 'fetch_notmodified' and r['signature'] == b'old'
    pages = [x for x in web.requests_for('cond.test') if x.path == '/page']
    assert [x.status for x in pages] == [200, 304, 304]


def test_content_limit_gzip_and_bomb(web):
    _, _, contents = fetch_all(web, ['http://big.test/big', 'http://big.test/gz'],
                               **{'http.content.limit': 1000})
    big = contents['http://big.test/big']
    assert len(big['content']) == 1000 and big['truncated']
    assert contents['http://big.test/gz']['content'] == b'hello gzip'
    assert not contents['http://big.test/gz']['truncated']
    _, _, contents = fetch_all(web, ['http://big.test/bomb'], **{
        'http.content.limit': -1, 'http.content.hard.limit': 1 << 20})
    bomb = contents['http://big.test/bomb']
    assert len(bomb['content']) == 1 << 20 and bomb['truncated']


def test_slow_host_times_out(web):
    by_url, _, _ = fetch_all(web, ['http://slow.test/slow'], **{'http.timeout': 300})
    r = by_url['http://slow.test/slow']
    assert (r['status'], r['protocol_status'], r['http_code']) == \
        ('fetch_retry', 'exception', None)
    assert 'Timeout' in r['metadata']['_error_']       # the page answers only after 2 s


def test_exception_cutoff_leaves_the_rest_unattempted(web):
    urls = [f'http://flaky.test/e{i}' for i in range(8)]
    by_url, _, _ = fetch_all(web, urls, **{'fetcher.max.exceptions.per.queue': 3,
                                           'fetcher.exceptions.per.queue.delay': 0.0})
    protocols = Counter(r['protocol_status'] for r in by_url.values())
    assert protocols == {'exception': 3, 'notfetching': 5}
    assert len([r for r in web.requests_for('flaky.test') if r.path != '/robots.txt']) == 3


def test_time_limit(web):
    urls = [f'http://tl.test/{i}' for i in range(6)]
    by_url, _, _ = fetch_all(web, urls, time_limit_s=1.0, **{'fetcher.server.delay': 0.4})
    protocols = Counter(r['protocol_status'] for r in by_url.values())
    # A delay of 0.4 s lets at most 3 requests start within the 1 s limit; the rest are kept
    # for next time, however fast or slow the machine is.
    assert protocols['success'] <= 3 and protocols['notfetching'] >= 3
    assert protocols['success'] + protocols['notfetching'] == 6
    assert len([r for r in web.requests_for('tl.test') if r.path != '/robots.txt']) == \
        protocols['success']


def test_unresolvable_queue_gets_an_exception_status(web, cfg):
    policy = settings.url_policy(cfg)
    keys = dict(domain_of=policy.domains.domain, resolve=Resolver())
    assert queue_key('nonexistent.invalid', 'byIP', **keys) is None
    assert queue_key('www.a.test', 'byDomain', **keys) == 'a.test'
    assert queue_key('localhost', 'byIP', **keys) == '127.0.0.1'
    assert queue_key('www.a.test', 'byHost', **keys) == 'www.a.test'
    values = {'http.agent.name': 'testbot', 'fetcher.progress.seconds': 60}
    cfg2 = load_config(overrides=values)
    fetcher = Fetcher(settings.fetcher_settings(cfg2, 1), settings.http_settings(cfg2, 1),
                      policy, NOW)
    fetcher.add(None, rec('http://nonexistent.invalid/'))
    (part, r), = fetcher.close()
    assert (r['status'], r['protocol_status']) == ('fetch_retry', 'exception')
    assert 'does not resolve' in r['metadata']['_error_']


# -- the request watchdog (fetcher/guard.py): fetch threads register without a lock ----------

def _until(condition, what: str) -> None:
    """Waits for `condition()` (a bound for a broken watchdog, not a speed limit)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def _cut(watchdog: Watchdog) -> bool:
    try:
        watchdog.check()
        return False
    except RequestCut:
        return True


def test_the_watchdog_cuts_each_request_at_its_deadline_also_after_an_idle_time():
    watchdog = Watchdog()
    try:
        for _ in range(3):                         # the 2nd and 3rd begin with none in flight
            ours, theirs = socket.socketpair()
            watchdog.begin(time.time() + 0.05)
            watchdog.attach(ours)
            _until(lambda: _cut(watchdog), 'the request was not cut at its deadline')
            assert theirs.recv(1) == b''           # its socket was shut down
            assert watchdog.end() is True
            ours.close()
            theirs.close()
        watchdog.begin(time.time() + 3600)         # a request well within its deadline
        assert not _cut(watchdog) and watchdog.end() is False
    finally:
        watchdog.close()


def test_the_watchdog_cuts_what_begins_after_expire_all_and_a_socket_attached_late():
    watchdog = Watchdog()
    try:
        watchdog.begin(time.time() + 3600)
        watchdog.expire_all()
        assert _cut(watchdog)
        ours, theirs = socket.socketpair()
        with pytest.raises(RequestCut):
            watchdog.attach(ours)                  # cut already: refused, and not kept open
        assert watchdog.end() is True
        watchdog.begin(time.time() + 3600)         # after expire_all: cut as it begins
        assert _cut(watchdog)
        assert watchdog.end() is True
        ours.close()
        theirs.close()
    finally:
        watchdog.close()


def test_the_watchdog_keeps_each_thread_s_request_apart():
    watchdog, results, ready = Watchdog(), {}, threading.Barrier(8)

    def one(i):
        ready.wait()
        watchdog.begin(time.time() + (0.05 if i % 2 else 3600))
        _until(lambda: i % 2 == 0 or _cut(watchdog), 'a short request was not cut')
        results[i] = (_cut(watchdog), watchdog.end())

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        watchdog.close()
    assert results == {i: (bool(i % 2), bool(i % 2)) for i in range(8)}


def test_the_fetch_threads_start_beside_the_caller_and_all_end_with_close(web):
    """The first fetch thread starts in the constructor, the others from a thread of their own
    (engine.py): every one of them has started and ended once close() returns."""
    cfg = load_config(overrides={'http.agent.name': 'testbot', 'http.proxy.host': '127.0.0.1',
                                 'http.proxy.port': web.port, 'fetcher.server.delay': 0.0,
                                 'domain.extra.suffixes': 'test'})
    fetcher = Fetcher(settings.fetcher_settings(cfg, 6), settings.http_settings(cfg, 6),
                      settings.url_policy(cfg), NOW)
    assert fetcher._threads[0].is_alive()              # started before the constructor returns
    for i in range(12):
        r = rec(f'http://codes.test/c/200?{i}')
        fetcher.add(fetcher.queue_of(r['url']), r)
    out = fetcher.close()
    assert len(fetcher._threads) == 6
    assert all(t.ident is not None and not t.is_alive() for t in fetcher._threads)
    assert sum(1 for part, r in out if part == CRAWL_FETCH) == 12


def test_a_fetch_goes_on_with_the_threads_the_system_let_it_start(web, monkeypatch, caplog):
    """When the system refuses more threads, the fetch runs on those that started, says so, and
    still gives every URL its one record."""
    start = threading.Thread.start

    def limited(thread):
        number = thread.name.split('-')[-1]
        if thread.name.startswith('fetcher-') and number.isdigit() and int(number) >= 2:
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, 'start', limited)
    urls = [f'http://codes.test/c/200?{i}' for i in range(10)]
    by_url, _, _ = fetch_all(web, urls, threads=5)
    assert {r['status'] for r in by_url.values()} == {'fetch_success'} and len(by_url) == 10
    assert 'fetch: 2 of 5 fetch threads started' in caplog.text
