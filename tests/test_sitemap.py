"""`beamcrawl sitemap` on the test web: every sitemap kind, indexes, robots.txt, the scope rule,
a bomb and a broken sitemap, politeness, how the found URLs enter the crawldb, and the hostile
sitemaps of tests/hostileweb.py: loops, nests and slow hosts within the run's bounds, and a run
stopped by a signal that keeps what it read."""

import gzip
import re
import signal
import subprocess
import sys
import time

import pytest

from beamcrawl.transforms.policy.sitemaps import parse_lastmod
from tests import hostileweb
from tests.conftest import ROOT, logged_counters, read_db, run_cli, write_seeds
from tests.testweb import Page, html_page

NOW = '2026-11-22T00:00:00Z'
NOW_MS = 1795305600000
DELAY = 0.2
XML = 'application/xml'
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _urlset(*entries):
    return (f'<?xml version="1.0"?><urlset {NS}>' + ''.join(entries) + '</urlset>').encode()


def _url(loc, **fields):
    return f'<url><loc>{loc}</loc>' + ''.join(f'<{k}>{v}</{k}>' for k, v in fields.items()) + \
        '</url>'


def _index(*locs):
    return (f'<sitemapindex {NS}>' + ''.join(f'<sitemap><loc>{loc}</loc></sitemap>'
                                             for loc in locs) + '</sitemapindex>').encode()


@pytest.fixture(scope='module')
def sitemap_web(testweb):
    add = testweb.add
    add('sm.test', '/robots.txt', Page(body=b'User-agent: *\nDisallow: /private/\n'
                                            b'Sitemap: http://sm.test/sitemap_index.xml\n',
                                       content_type='text/plain'))
    add('sm.test', '/sitemap_index.xml', Page(body=_index(
        'http://sm.test/maps/a.xml', 'http://sm.test/maps/b.xml.gz', 'http://sm.test/maps/feed.rss',
        'http://sm.test/maps/atom.xml', 'http://sm.test/maps/urls.txt',
        'http://sm.test/maps/bomb.xml.gz', 'http://sm.test/maps/broken.xml',
        'http://sm.test/maps/index2.xml', 'http://sm.test/private/hidden.xml',
        'http://sm.test/maps/missing.xml'), content_type=XML))
    add('sm.test', '/maps/a.xml', Page(body=_urlset(
        _url('http://sm.test/daily', lastmod='2026-11-01', changefreq='daily', priority='0.9'),
        _url('http://sm.test/always', changefreq='always', priority='0.1'),
        _url('http://sm.test/never', changefreq='never'),
        _url('http://sm.test/plain'),
        _url('http://elsewhere.test/not-vouched')), content_type=XML))
    add('sm.test', '/maps/b.xml.gz', Page(body=gzip.compress(_urlset(
        _url('http://sm.test/from-gzip', changefreq='weekly'))),
        content_type='application/x-gzip'))
    add('sm.test', '/maps/feed.rss', Page(body=(
        b'<rss version="2.0"><channel><title>news</title><item><link>http://sm.test/news/1</link>'
        b'<pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate></item></channel></rss>'),
        content_type='application/rss+xml'))
    add('sm.test', '/maps/atom.xml', Page(body=(
        b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="http://sm.test/post/1"/>'
        b'<updated>2026-11-03T00:00:00Z</updated></entry></feed>'),
        content_type='application/atom+xml'))
    add('sm.test', '/maps/urls.txt', Page(body=b'http://sm.test/t1\nhttp://sm.test/t2\n',
                                          content_type='text/plain'))
    add('sm.test', '/maps/bomb.xml.gz', Page(body=gzip.compress(
        b'<urlset>' + b' ' * (8 << 20) + b'</urlset>'), content_type='application/x-gzip'))
    add('sm.test', '/maps/broken.xml', Page(body=_urlset(_url('http://sm.test/before-fault'))[:-9]
                                            + b'<<<', content_type=XML))
    add('sm.test', '/maps/index2.xml', Page(body=_index('http://sm.test/maps/deep.xml'),
                                            content_type=XML))
    add('sm.test', '/maps/deep.xml', Page(body=_urlset(_url('http://sm.test/deep')),
                                          content_type=XML))
    add('sm.test', '/private/hidden.xml', Page(body=_urlset(_url('http://sm.test/hidden'))))
    add('sm.test', '/maps/missing.xml', Page(status=404))
    add('sm.test', '/', html_page('home'))
    # a site whose robots.txt names a sitemap on another host, which may list the site's URLs
    add('cross.test', '/robots.txt', Page(body=b'Sitemap: http://maps.test/cross/c.xml\n',
                                          content_type='text/plain'))
    add('maps.test', '/robots.txt', Page(status=404))
    add('maps.test', '/cross/c.xml', Page(body=_urlset(
        _url('http://cross.test/p1', priority='0.7'), _url('http://maps.test/cross/own'),
        _url('http://maps.test/elsewhere'), _url('http://third.test/z')), content_type=XML))
    # robots.txt naming no sitemap: /sitemap.xml is tried
    add('nosm.test', '/robots.txt', Page(status=404))
    add('nosm.test', '/sitemap.xml', Page(body=_urlset(_url('http://nosm.test/found')),
                                          content_type=XML))
    # a sitemap named on the command line: only its directory is in scope
    add('sm2.test', '/robots.txt', Page(status=404))
    add('sm2.test', '/dir/sitemap.xml', Page(body=_urlset(
        _url('http://sm2.test/dir/ok', changefreq='hourly', priority='0.3',
             lastmod='2026-10-01T12:00:00+02:00'),
        _url('http://sm2.test/up'), _url('http://sm.test/plain', priority='0.2')),
        content_type=XML))
    return testweb


def _conf(web, *more):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', f'fetcher.server.delay={DELAY}',
            '-D', 'domain.extra.suffixes=test', '-D', 'sitemap.size.max=1000000', *more]


def _gaps_held(web, host):
    log = sorted((r for r in web.requests_for(host) if r.path != '/robots.txt'),
                 key=lambda r: r.start)
    assert len(log) > 1
    for a, b in zip(log, log[1:]):
        assert b.start - a.end >= DELAY - 0.005, (a.path, b.path, b.start - a.end)


def test_sitemap_from_robots_injects_every_kind_with_intervals_and_scores(sitemap_web, web,
                                                                        tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://sm.test/', 'http://cross.test/',
                                             'http://nosm.test/'])
    run_cli('inject', crawl, seeds, '--now', NOW, *_conf(web))
    proc = run_cli('sitemap', crawl, '--from-robots', '--now', NOW, *_conf(web),
                   '-D', 'runner.progress.seconds=0')
    assert re.search(r'sitemap read: \d+ sitemaps, .*done in', proc.stderr), proc.stderr
    db = read_db(crawl)
    found = {u for u in db if u not in ('http://sm.test/', 'http://cross.test/',
                                        'http://nosm.test/')}
    assert found == {
        'http://sm.test/daily', 'http://sm.test/always', 'http://sm.test/never',
        'http://sm.test/plain', 'http://sm.test/from-gzip', 'http://sm.test/news/1',
        'http://sm.test/post/1', 'http://sm.test/t1', 'http://sm.test/t2',
        'http://sm.test/before-fault', 'http://sm.test/deep', 'http://cross.test/p1',
        'http://maps.test/cross/own', 'http://nosm.test/found'}
    daily = db['http://sm.test/daily']
    assert (daily['status'], daily['fetch_interval'], daily['score'], daily['modified_time'],
            daily['fetch_time']) == ('db_unfetched', 86400, pytest.approx(0.9),
                                     parse_lastmod('2026-11-01'), NOW_MS)
    assert db['http://sm.test/always']['fetch_interval'] == 60            # the schedule's min
    assert db['http://sm.test/never']['fetch_interval'] == 7776000        # db.fetch.interval.max
    assert db['http://sm.test/plain']['fetch_interval'] == 2592000        # the default
    assert db['http://sm.test/plain']['score'] == pytest.approx(0.5)      # the protocol's default
    assert db['http://sm.test/from-gzip']['fetch_interval'] == 604800
    assert db['http://sm.test/news/1']['modified_time'] == parse_lastmod(
        'Mon, 02 Nov 2026 10:00:00 GMT')
    assert db['http://cross.test/p1']['score'] == pytest.approx(0.7)
    assert db['http://sm.test/']['score'] == pytest.approx(1.0)           # seeds untouched
    # each URL names the sitemap that listed it (an index's child, a robots.txt's cross
    # submission, the default /sitemap.xml); the seeds name none
    assert {u: r['metadata'].get('_sitemap_') for u, r in db.items()
            if u in ('http://sm.test/daily', 'http://sm.test/deep', 'http://sm.test/t1',
                     'http://cross.test/p1', 'http://nosm.test/found', 'http://sm.test/')} == {
        'http://sm.test/daily': 'http://sm.test/maps/a.xml',
        'http://sm.test/deep': 'http://sm.test/maps/deep.xml',
        'http://sm.test/t1': 'http://sm.test/maps/urls.txt',
        'http://cross.test/p1': 'http://maps.test/cross/c.xml',
        'http://nosm.test/found': 'http://nosm.test/sitemap.xml', 'http://sm.test/': None}
    out = proc.stdout + proc.stderr
    assert 'sitemap.kind.urlset' in out and 'sitemap.malformed' in out
    assert 'sitemap: 14 injected, 14 new' in proc.stdout
    # the robots.txt rules hold for sitemaps too; each site's robots.txt was asked for once
    assert not [r for r in web.log if r.path.startswith('/private/')]
    assert len([r for r in web.requests_for('sm.test') if r.path == '/robots.txt']) == 1
    assert [r.path for r in web.requests_for('nosm.test')] == ['/robots.txt', '/sitemap.xml']
    _gaps_held(web, 'sm.test')
    assert 'Traceback' not in proc.stderr


def test_sitemap_urls_keep_to_their_scope_and_existing_records(sitemap_web, web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://sm.test/plain'])
    run_cli('inject', crawl, seeds, '--now', NOW, *_conf(web))
    run_cli('sitemap', crawl, 'http://sm2.test/dir/sitemap.xml', '--now', NOW, *_conf(web))
    db = read_db(crawl)
    assert set(db) == {'http://sm.test/plain', 'http://sm2.test/dir/ok'}
    ok = db['http://sm2.test/dir/ok']
    assert (ok['fetch_interval'], ok['score'], ok['modified_time']) == (
        3600, pytest.approx(0.3), parse_lastmod('2026-10-01T10:00:00Z'))
    assert ok['metadata']['_sitemap_'] == 'http://sm2.test/dir/sitemap.xml'
    # the existing record keeps its values unless sitemap.url.overwrite.existing
    assert db['http://sm.test/plain']['score'] == pytest.approx(1.0)
    assert '_sitemap_' not in db['http://sm.test/plain']['metadata']
    run_cli('sitemap', crawl, 'http://sm2.test/dir/sitemap.xml', '--now', NOW,
            *_conf(web, '-D', 'sitemap.url.overwrite.existing=true',
                   '-D', 'sitemap.strict.parsing=false'))
    db = read_db(crawl)
    assert db['http://sm.test/plain']['score'] == pytest.approx(0.2)
    assert db['http://sm.test/plain']['metadata']['_sitemap_'] == \
        'http://sm2.test/dir/sitemap.xml'
    assert 'http://sm2.test/up' in db
    # a later plain inject --update keeps the mark; --overwrite replaces the record, mark too
    seeds = write_seeds(tmp_path / 'again', ['http://sm.test/plain\tnutch.score=0.4'])
    run_cli('inject', crawl, seeds, '--update', '--now', NOW, *_conf(web))
    plain = read_db(crawl)['http://sm.test/plain']
    assert (plain['score'], plain['metadata']['_sitemap_']) == (
        pytest.approx(0.4), 'http://sm2.test/dir/sitemap.xml')
    run_cli('inject', crawl, seeds, '--overwrite', '--now', NOW, *_conf(web))
    assert '_sitemap_' not in read_db(crawl)['http://sm.test/plain']['metadata']


@pytest.mark.parametrize('args,message', [
    ([], 'name sitemap URLs or give --from-robots'),
    (['http://sm.test/x.xml', '--from-robots'], 'name sitemap URLs or give --from-robots'),
    (['ftp://sm.test/x.xml'], 'refused by the URL policy'),
])
def test_sitemap_usage_errors_are_one_line(web, tmp_path, args, message):
    proc = run_cli('sitemap', str(tmp_path / 'crawl'), *args, *_conf(web), check=False)
    assert proc.returncode == 2 and message in proc.stderr
    assert 'Traceback' not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.fixture(scope='module')
def hostile_sitemaps(testweb):
    for host, routes in hostileweb.sitemap_sites().items():
        for path, route in routes.items():
            testweb.add(host, path, route)
    return testweb


def _sitemaps_of(web, host):
    """The sitemap requests a host received, in order (robots.txt left out)."""
    return [r.path for r in sorted(web.requests_for(host), key=lambda r: r.start)
            if r.path != '/robots.txt']




def _inject_sites(web, tmp_path, hosts):
    crawl = str(tmp_path / 'crawl')
    run_cli('inject', crawl, write_seeds(tmp_path / 'seeds', [f'http://{h}/' for h in hosts]),
            '--now', NOW, *_conf(web))
    return crawl


def test_an_index_that_names_itself_is_read_once(hostile_sitemaps, web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    proc = run_cli('sitemap', crawl, 'http://sm-loop.test/index.xml', '--now', NOW,
                   *_conf(web, '-D', 'fetcher.server.delay=0'))
    # four spellings of itself, one fetch
    assert _sitemaps_of(web, 'sm-loop.test') == ['/index.xml', '/urls.xml']
    assert logged_counters(proc.stderr)['sitemap.duplicate_sitemaps'] == 4
    assert set(read_db(crawl)) == {'http://sm-loop.test/a', 'http://sm-loop.test/b'}


def test_one_host_cannot_take_a_sitemap_run(hostile_sitemaps, web, tmp_path):
    crawl = _inject_sites(web, tmp_path, ['sm-nest.test', 'sm-loop.test', 'sm-ok.test'])
    proc = run_cli('sitemap', crawl, '--from-robots', '--now', NOW,
                   *_conf(web, '-D', 'fetcher.server.delay=0', '-D', 'sitemap.host.count.max=20'))
    # sm-nest.test: its index, the sitemap it names first and 18 nested indexes, no more
    nest = _sitemaps_of(web, 'sm-nest.test')
    assert nest == ['/index.xml', '/urls.xml', *[f'/n/{i}.xml' for i in range(18)]]
    counters = logged_counters(proc.stderr)
    # not taken: the other 982 nested indexes, and the sitemap each of the 18 read names
    assert counters['sitemap.over_host_count'] == hostileweb.NESTED
    assert counters['sitemap.hosts_limited'] == 1
    assert f'sitemap: {hostileweb.NESTED} sitemaps not fetched: {hostileweb.NESTED} over ' \
           f'sitemap.host.count.max (1 host cut short)' in proc.stdout
    assert 'sm-nest.test reached sitemap.host.count.max' in proc.stderr
    # the other hosts are read, once each, and everything read is injected
    assert _sitemaps_of(web, 'sm-loop.test') == ['/index.xml', '/urls.xml']
    assert _sitemaps_of(web, 'sm-ok.test') == ['/sitemap.xml']
    found = set(read_db(crawl)) - {'http://sm-nest.test/', 'http://sm-loop.test/',
                                   'http://sm-ok.test/'}
    assert found == {'http://sm-nest.test/top', 'http://sm-loop.test/a', 'http://sm-loop.test/b',
                     'http://sm-ok.test/x', 'http://sm-ok.test/y'}
    assert proc.returncode == 0 and 'sitemap: 5 injected, 5 new' in proc.stdout


def test_a_slow_host_is_cut_short_by_its_time(hostile_sitemaps, web, tmp_path):
    # Each sitemap of sm-slow.test takes SLOW_SITEMAP_S to answer and the host has that long:
    # after its index and at most one slow sitemap, its time is up, whatever the machine.
    crawl = _inject_sites(web, tmp_path, ['sm-slow.test', 'sm-ok.test'])
    proc = run_cli('sitemap', crawl, '--from-robots', '--now', NOW,
                   *_conf(web, '-D', 'fetcher.server.delay=0',
                          '-D', f'sitemap.host.time.max={hostileweb.SLOW_SITEMAP_S}'))
    slow = _sitemaps_of(web, 'sm-slow.test')
    assert slow[0] == '/index.xml' and len(slow) <= 2
    counters = logged_counters(proc.stderr)
    assert counters['sitemap.over_host_time'] == hostileweb.SLOW_SITEMAPS - (len(slow) - 1)
    assert 'sm-slow.test reached sitemap.host.time.max' in proc.stderr
    assert 'after sitemap.host.time.max (1 host cut short)' in proc.stdout
    db = read_db(crawl)
    assert {'http://sm-ok.test/x', 'http://sm-ok.test/y'} <= set(db)
    assert len([u for u in db if '/page/' in u]) == len(slow) - 1


def test_a_run_out_of_time_fetches_nothing_more_and_says_so(hostile_sitemaps, web, tmp_path):
    crawl = _inject_sites(web, tmp_path, ['sm-nest.test', 'sm-ok.test'])
    web.clear_log()
    proc = run_cli('sitemap', crawl, '--from-robots', '--now', NOW,
                   *_conf(web, '-D', 'sitemap.time.max=0'))
    assert web.log == []
    assert "sitemap: 2 sites' robots.txt not read (after sitemap.time.max or a stop)" in \
        proc.stdout
    assert 'sitemap: 0 injected' in proc.stdout and proc.returncode == 0


@pytest.mark.parametrize('sig,code', [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_sitemap_run_injects_what_it_read(hostile_sitemaps, web, tmp_path, sig,
                                                     code):
    crawl = _inject_sites(web, tmp_path, ['sm-nest.test', 'sm-ok.test'])
    web.clear_log()
    # With DELAY between requests, sm-nest.test's 2001 sitemaps take minutes: the signal comes
    # once four of them and sm-ok.test's sitemap have been requested.
    proc = subprocess.Popen([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'sitemap', crawl,
                             '--from-robots', '--now', NOW, *_conf(web)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while len(_sitemaps_of(web, 'sm-nest.test')) < 4 or \
                not _sitemaps_of(web, 'sm-ok.test'):
            assert proc.poll() is None, 'the run ended before the signal'
            time.sleep(0.01)
        requested = _sitemaps_of(web, 'sm-nest.test')
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    # the sitemaps requested before the signal were read, at most the one waiting in the
    # fetcher's queue was requested after it, and what they gave is in the crawldb
    assert requested[:2] == ['/index.xml', '/urls.xml']
    assert len(_sitemaps_of(web, 'sm-nest.test')) <= len(requested) + 1
    db = read_db(crawl)
    assert {'http://sm-nest.test/top', 'http://sm-ok.test/x', 'http://sm-ok.test/y'} <= set(db)
    assert 'sitemap: 3 injected, 3 new' in out
    assert f'interrupted ({signal.Signals(sig).name}): 3 URLs from the ' in err
    assert 'sitemaps were not read' in err and 'Traceback' not in err
