"""transforms/policy/sitemaps.py: every sitemap kind, its limits, its scope rule, and the
bounds of a run."""

import gzip

import pytest

from beamcrawl.transforms.policy.sitemaps import (CHANGEFREQ_SECONDS, SitemapBounds, SitemapEntry,
                                                  SitemapLimits, fetch_interval, in_scope,
                                                  parse_lastmod, parse_sitemap, site_scope,
                                                  sitemap_host, sitemap_scope)

LIMITS = SitemapLimits(max_bytes=100_000, max_urls=100, strict=True)
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _urlset(*entries):
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>' + ''.join(entries) +
            '</urlset>').encode()


def _url(loc, **fields):
    inner = ''.join(f'<{k}>{v}</{k}>' for k, v in fields.items())
    return f'<url><loc>{loc}</loc>{inner}</url>'


def test_a_urlset_gives_urls_with_lastmod_changefreq_and_priority():
    parsed = parse_sitemap(_urlset(
        _url('http://a.test/dir/1', lastmod='2026-11-01', changefreq='daily', priority='0.8'),
        _url('http://a.test/dir/2'),
        _url('http://a.test/dir/3', lastmod='yesterday', changefreq='often', priority='7'),
        '<url><lastmod>2026-01-01</lastmod></url>'),
        'http://a.test/dir/sitemap.xml', LIMITS)
    assert parsed.kind == 'urlset' and parsed.error == ''
    assert parsed.urls == [
        SitemapEntry('http://a.test/dir/1', 1793491200000, 'daily', 0.8),
        SitemapEntry('http://a.test/dir/2'),
        SitemapEntry('http://a.test/dir/3')]
    assert parsed.dropped == {'bad_lastmod': 1, 'bad_changefreq': 1, 'bad_priority': 1,
                              'no_url': 1}


@pytest.mark.parametrize('url,kept', [
    ('http://a.test/dir/page', True),
    ('http://a.test/dir/sub/page', True),
    ('http://A.TEST/dir/x', True),               # host names are case-insensitive
    ('http://a.test/other/page', False),          # above the sitemap's directory
    ('https://a.test/dir/page', False),           # another scheme
    ('http://a.test:8080/dir/page', False),       # another port
    ('http://b.test/dir/page', False),            # another host
])
def test_the_scope_rule(url, kept):
    parsed = parse_sitemap(_urlset(_url(url)), 'http://a.test/dir/sitemap.xml', LIMITS)
    assert bool(parsed.urls) == kept
    assert parsed.dropped == ({} if kept else {'out_of_scope': 1})
    loose = parse_sitemap(_urlset(_url(url)), 'http://a.test/dir/sitemap.xml',
                          SitemapLimits(100_000, 100, strict=False))
    assert len(loose.urls) == 1


def test_a_site_that_names_a_sitemap_in_robots_txt_is_in_its_scope():
    body = _urlset(_url('http://c.test/page'), _url('http://e.test/page'))
    parsed = parse_sitemap(body, 'http://d.test/maps/c.xml', LIMITS,
                           scopes=[site_scope('http://c.test/robots.txt')])
    assert [e.url for e in parsed.urls] == ['http://c.test/page']
    assert parsed.dropped == {'out_of_scope': 1}


def test_scope_helpers():
    assert sitemap_scope('http://a.test/x/y/map.xml?q=1') == 'http://a.test/x/y/'
    assert sitemap_scope('http://a.test') == 'http://a.test/'
    assert in_scope('http://a.test/x/y/z', ['http://a.test/x/'])
    assert not in_scope('http://a.test/xy', ['http://a.test/x/'])


def test_an_index_gives_sitemaps_and_a_gzip_sitemap_is_read():
    index = (f'<sitemapindex {NS}><sitemap><loc>http://a.test/s1.xml.gz</loc>'
             f'<lastmod>2026-01-01</lastmod></sitemap><sitemap><loc>http://x.test/s2.xml</loc>'
             f'</sitemap><sitemap><loc>not a url</loc></sitemap></sitemapindex>').encode()
    parsed = parse_sitemap(index, 'http://a.test/index.xml', LIMITS)
    assert parsed.kind == 'index'
    assert parsed.sitemaps == ['http://a.test/s1.xml.gz', 'http://x.test/s2.xml']
    assert parsed.dropped == {'invalid_url': 1}
    zipped = parse_sitemap(gzip.compress(_urlset(_url('http://a.test/z'))),
                           'http://a.test/s1.xml.gz', LIMITS)
    assert [e.url for e in zipped.urls] == ['http://a.test/z']


def test_text_rss_and_atom():
    text = parse_sitemap(b'\xef\xbb\xbfhttp://a.test/1\n\n  http://a.test/2  \r\nftp://a.test/3\n'
                         b'http://b.test/4\n', 'http://a.test/sitemap.txt', LIMITS)
    assert text.kind == 'text'
    assert [e.url for e in text.urls] == ['http://a.test/1', 'http://a.test/2']
    assert text.dropped == {'invalid_url': 1, 'out_of_scope': 1}
    rss = parse_sitemap(b'<rss version="2.0"><channel><title>t</title>'
                        b'<item><link>http://a.test/post1</link>'
                        b'<pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate></item>'
                        b'<item><link>/post2</link></item></channel></rss>',
                        'http://a.test/feed.rss', LIMITS)
    assert rss.kind == 'rss'
    assert rss.urls == [SitemapEntry('http://a.test/post1', 1793613600000),
                        SitemapEntry('http://a.test/post2')]
    atom = parse_sitemap(b'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
                         b'<entry><link rel="self" href="http://a.test/self"/>'
                         b'<link href="http://a.test/e1"/><updated>2026-11-02T10:00:00Z</updated>'
                         b'</entry><entry><link rel="alternate" href="e2"/></entry></feed>',
                         'http://a.test/atom.xml', LIMITS)
    assert atom.kind == 'atom'
    assert atom.urls == [SitemapEntry('http://a.test/e1', 1793613600000),
                         SitemapEntry('http://a.test/e2')]


def test_limits_bombs_and_malformed_input_never_raise():
    many = parse_sitemap(_urlset(*[_url(f'http://a.test/{i}') for i in range(150)]),
                         'http://a.test/sitemap.xml', LIMITS)
    assert len(many.urls) == 100 and many.dropped == {'over_limit': 50}
    bomb = gzip.compress(b'<urlset>' + b' ' * 5_000_000 + b'</urlset>')
    big = parse_sitemap(bomb, 'http://a.test/bomb.xml.gz', LIMITS)
    assert not big.urls and 'sitemap.size.max' in big.error
    laughs = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
              b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
              b'<urlset><url><loc>http://a.test/&lol3;</loc></url></urlset>')
    entities = parse_sitemap(laughs, 'http://a.test/sitemap.xml', LIMITS)
    assert all(len(e.url) < 100 for e in entities.urls)         # never expanded
    cut = parse_sitemap(_urlset(_url('http://a.test/1'), _url('http://a.test/2'))[:-30],
                        'http://a.test/sitemap.xml', LIMITS)
    assert [e.url for e in cut.urls] == ['http://a.test/1'] and 'malformed XML' in cut.error
    for junk in (b'\x1f\x8bnot gzip', b'<html><body>hi</body></html>', b'', b'   ',
                 b'<' * 1000, bytes(range(256)), b'<urlset>' + b'<a>' * 10000):
        parsed = parse_sitemap(junk, 'http://a.test/sitemap.xml', LIMITS)
        assert not parsed.sitemaps


@pytest.mark.parametrize('changefreq,expected', [
    (None, 2592000), ('always', 60), ('hourly', 3600), ('daily', 86400), ('weekly', 604800),
    ('monthly', 2592000), ('yearly', 7776000), ('never', 7776000)])
def test_changefreq_to_interval_within_the_schedule_bounds(changefreq, expected):
    assert fetch_interval(changefreq, default=2592000, shortest=60.0, longest=7776000) == expected
    assert set(CHANGEFREQ_SECONDS) == {'always', 'hourly', 'daily', 'weekly', 'monthly',
                                       'yearly', 'never'}


@pytest.mark.parametrize('text,ms', [
    ('2026', 1767225600000), ('2026-11', 1793491200000), ('2026-11-02', 1793577600000),
    ('2026-11-02T10:00Z', 1793613600000), ('2026-11-02T10:00:00+01:00', 1793610000000),
    ('2026-11-02T10:00:00.5Z', 1793613600500), ('Mon, 02 Nov 2026 10:00:00 GMT', 1793613600000),
    ('soon', None), ('2026-13-01', None), ('', None)])
def test_lastmod_formats(text, ms):
    assert parse_lastmod(text) == ms


BOUNDS = SitemapBounds(count_max=100, host_count_max=10, host_time_max=60.0, time_max=600.0)


@pytest.mark.parametrize('bounds,run_taken,host_taken,refused', [
    (BOUNDS, 0, 0, None),
    (BOUNDS, 99, 9, None),
    (BOUNDS, 99, 10, 'over_host_count'),       # the host's share is taken
    (BOUNDS, 100, 0, 'over_count'),            # the run's is, whatever the host's
    (BOUNDS, 100, 10, 'over_count'),
    (SitemapBounds(1, 1, -1, -1), 0, 0, None),  # the first sitemap is always taken
])
def test_sitemap_count_bounds(bounds, run_taken, host_taken, refused):
    assert bounds.refuse_count(run_taken, host_taken) == refused


NO_TIME = SitemapBounds(count_max=100, host_count_max=10, host_time_max=-1, time_max=-1)


@pytest.mark.parametrize('bounds,now,run_started,host_started,refused', [
    (BOUNDS, 1000.0, 1000.0, None, None),            # a host's first sitemap
    (BOUNDS, 1059.9, 1000.0, 1000.0, None),
    (BOUNDS, 1060.0, 1000.0, 1000.0, 'over_host_time'),
    (BOUNDS, 1060.0, 1000.0, None, None),            # a host that starts late has its own time
    (BOUNDS, 1599.0, 1000.0, 1590.0, None),
    (BOUNDS, 1600.0, 1000.0, None, 'over_time'),     # the run's time ends everything
    (BOUNDS, 1600.0, 1000.0, 1000.0, 'over_time'),
    (NO_TIME, 10 ** 9, 0.0, 0.0, None),              # -1: no limit
    (SitemapBounds(100, 10, 0.0, -1), 5.0, 0.0, None, None),    # 0: one sitemap per host
    (SitemapBounds(100, 10, 0.0, -1), 5.0, 0.0, 5.0, 'over_host_time'),
    (SitemapBounds(100, 10, -1, 0.0), 5.0, 5.0, None, 'over_time'),   # 0: none at all
])
def test_sitemap_time_bounds(bounds, now, run_started, host_started, refused):
    assert bounds.refuse_time(now, run_started, host_started) == refused


@pytest.mark.parametrize('url,host', [
    ('http://Sm.Test/index.xml', 'sm.test'),
    ('https://sm.test:8443/a.xml', 'sm.test'),         # scheme and port: one host
    ('http://[::1]:80/x', '::1'),
    ('http://[bad/x', ''),
])
def test_a_sitemap_counts_against_its_host(url, host):
    assert sitemap_host(url) == host
