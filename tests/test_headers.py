"""Header names are case-insensitive (RFC 9110): a crawl against servers that spell them in
lowercase, or as Python's http.server does (`Content-type`), gives what a crawl against
Title-Case names gives: MIME types, parses, X-Robots-Tag, conditional requests, header
charsets, redirects, robots.txt redirects and sitemaps."""

import json

import pytest

from beamcrawl.transforms.policy.headers import Headers, canonical, header
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH, PARSE_DATA, PARSE_TEXT
from tests.conftest import read_db, read_parts, run_cli, write_seeds
from tests.testweb import Page, Request, TestWeb, html_page, redirect

NOW = 1795305600000
DAY_MS = 86400 * 1000
RUSSIAN = 'Привет, мир'           # in KOI8-R below, with no charset anywhere but the header


@pytest.mark.parametrize('name, expected', [
    ('content-type', 'Content-Type'), ('CONTENT-TYPE', 'Content-Type'),
    ('Content-type', 'Content-Type'), ('etag', 'ETag'), ('x-robots-tag', 'X-Robots-Tag'),
    ('www-authenticate', 'WWW-Authenticate'), ('last-MODIFIED', 'Last-Modified'),
    ('location', 'Location'), (' x-a ', 'X-A'),
])
def test_canonical_names(name, expected):
    assert canonical(name) == expected


def test_headers_mapping_is_case_insensitive_and_canonical():
    h = Headers([('content-type', 'text/html'), ('ETAG', '"v1"'), ('Set-Cookie', 'a=1'),
                 ('set-cookie', 'b=2')])
    assert h['Content-Type'] == h['CONTENT-type'] == 'text/html'
    assert 'etag' in h and 'ETag' in h and 'Location' not in h
    assert dict(h) == {'Content-Type': 'text/html', 'ETag': '"v1"', 'Set-Cookie': 'a=1, b=2'}
    import pickle
    assert dict(pickle.loads(pickle.dumps(h))) == dict(h)


@pytest.mark.parametrize('mapping, name, expected', [
    ({'content-type': 'text/plain'}, 'Content-Type', 'text/plain'),
    ({'Content-Type': 'text/plain'}, 'content-type', 'text/plain'),
    ({'X-ROBOTS-TAG': 'noindex'}, 'X-Robots-Tag', 'noindex'),
    ({}, 'Content-Type', ''), (None, 'Content-Type', ''),
])
def test_header_lookup_in_any_mapping(mapping, name, expected):
    assert header(mapping, name) == expected


def _etag_page(seen):
    """A page with validators that answers 304 to a request that sends them back."""
    def page(request: Request):
        sent = {k.lower(): v for k, v in request.headers.items()}
        seen.append(sent)
        if sent.get('if-none-match') == '"v1"':
            return Page(status=304, headers={'ETag': '"v1"'})
        return html_page('etag page', headers={
            'ETag': '"v1"', 'Last-Modified': 'Tue, 01 Sep 2026 10:00:00 GMT'})
    return page


def _site(seen):
    return {
        # robots.txt moved: the redirect's Location must be read whatever its case
        '/robots.txt': redirect('/real-robots.txt'),
        '/real-robots.txt': Page(body=b'User-agent: *\nDisallow: /private\n'
                                      b'Sitemap: http://hdr.test/old-sitemap.xml\n',
                                 content_type='text/plain'),
        '/': html_page('home', links=['/plain.txt', '/noindex.html', '/moved', '/koi8.html',
                                      '/etag.html', '/private/x']),
        '/plain.txt': Page(body=b'plain words here\n', content_type='text/plain'),
        '/noindex.html': html_page('hidden', links=['/not-followed'],
                                   headers={'X-Robots-Tag': 'noindex, nofollow'}),
        '/not-followed': html_page('never'),
        '/moved': redirect('/target.html'),
        '/target.html': html_page('target'),
        '/koi8.html': Page(body=f'<html><body><p>{RUSSIAN}</p></body></html>'.encode('koi8-r'),
                           content_type='text/html; charset=KOI8-R'),
        '/etag.html': _etag_page(seen),
        '/private/x': html_page('private'),
        '/old-sitemap.xml': redirect('/maps/listing.xml'),      # not at a default path
        '/maps/listing.xml': Page(content_type='application/xml', body=(
            b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b'<url><loc>http://hdr.test/from-sitemap</loc></url></urlset>')),
        '/from-sitemap': html_page('listed'),
    }


@pytest.fixture(params=[str.lower, str.capitalize], ids=['lowercase', 'http.server'])
def case_web(request):
    seen = []
    web = TestWeb({'hdr.test': _site(seen)}, header_names=request.param).start()
    web.etag_requests = seen
    yield web
    web.stop()


def _conf(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
            '-D', 'domain.extra.suffixes=test', '-D', 'db.fetch.interval.default=86400']


def _by_url(records):
    return {r['url']: r for r in records}


@pytest.mark.slow
def test_a_crawl_reads_headers_in_any_case(case_web, tmp_path):
    web = case_web
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://hdr.test/'])
    run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', '--now', str(NOW), *_conf(web))
    layout = CrawlLayout(crawl)
    segments = layout.segment_names()
    second = segments[1]
    content = _by_url(read_parts(layout.part_files(second, CONTENT)))
    fetched = _by_url(read_parts(layout.part_files(second, CRAWL_FETCH)))
    parse_data = _by_url(read_parts(layout.part_files(second, PARSE_DATA)))
    parse_text = _by_url(read_parts(layout.part_files(second, PARSE_TEXT)))

    plain = 'http://hdr.test/plain.txt'
    assert content[plain]['content_type'] == 'text/plain'
    assert content[plain]['headers']['Content-Type'] == 'text/plain'     # stored canonical
    assert fetched[plain]['metadata']['Content-Type'] == 'text/plain'
    assert parse_data[plain]['parse_status'] == 'success'
    assert parse_text[plain]['text'] == 'plain words here'

    hidden = 'http://hdr.test/noindex.html'
    assert parse_text[hidden]['text'] == '' and parse_data[hidden]['title'] == ''
    assert parse_data[hidden]['outlinks'] == []
    assert not any(r.path == '/not-followed' for r in web.log)

    koi8 = 'http://hdr.test/koi8.html'
    assert RUSSIAN in parse_text[koi8]['text']
    assert parse_data[koi8]['metadata']['charset.source'] == 'header'

    moved = 'http://hdr.test/moved'
    assert fetched[moved]['status'] == 'fetch_redir_perm'
    db = read_db(crawl)
    assert 'http://hdr.test/target.html' in db

    assert not any(r.path.startswith('/private') for r in web.log)   # robots.txt redirect

    etag = 'http://hdr.test/etag.html'
    assert fetched[etag]['metadata']['ETag'] == '"v1"'
    assert fetched[etag]['metadata']['Last-Modified'] == 'Tue, 01 Sep 2026 10:00:00 GMT'
    assert db[etag]['metadata']['ETag'] == '"v1"'

    # The next round, a day later: the page is asked for with its validators and is unchanged.
    web.etag_requests.clear()
    run_cli('crawl', crawl, '--rounds', '1', '--now', str(NOW + 2 * DAY_MS), *_conf(web))
    assert web.etag_requests and web.etag_requests[-1].get('if-none-match') == '"v1"'
    assert web.etag_requests[-1].get('if-modified-since', '').endswith(' GMT')
    assert read_db(crawl)[etag]['status'] == 'db_notmodified'


@pytest.mark.slow
def test_sitemaps_and_readers_with_lowercase_headers(tmp_path):
    web = TestWeb({'hdr.test': _site([])}, header_names=str.lower).start()
    try:
        crawl = str(tmp_path / 'crawl')
        seeds = write_seeds(tmp_path / 'seeds', ['http://hdr.test/plain.txt'])
        run_cli('inject', crawl, seeds, '--now', str(NOW), *_conf(web))
        out = run_cli('sitemap', crawl, '--from-robots', '--now', str(NOW), *_conf(web))
        assert 'http://hdr.test/from-sitemap' in read_db(crawl), out.stderr
        run_cli('crawl', crawl, '--rounds', '1', '--now', str(NOW), *_conf(web))
        segment = CrawlLayout(crawl).segment_names()[-1]
        got = run_cli('readseg', crawl, '--get', segment, 'http://hdr.test/plain.txt',
                      *_conf(web)).stdout
        assert 'text/plain' in got and 'plain words here' in got
    finally:
        web.stop()


def test_stored_lowercase_headers_still_parse():
    """Content written before names were made canonical (a plain dict in the record)."""
    from beamcrawl.transforms.policy.html import parse_document
    parsed = parse_document(b'some text', 'http://x.test/a', 'application/octet-stream',
                            headers={'content-type': 'text/plain; charset=utf-8'})
    assert parsed.status == 'success' and parsed.text == 'some text'
    parsed = parse_document(b'<html><body><a href="/b">b</a>hello</body></html>',
                            'http://x.test/a', 'text/html',
                            headers={'x-robots-tag': 'noindex, nofollow'})
    assert parsed.noindex and parsed.nofollow and not parsed.outlinks


def test_json_dump_of_headers_is_canonical():
    h = Headers({'content-type': 'text/html', 'etag': 'x'})
    assert json.loads(json.dumps(dict(h))) == {'Content-Type': 'text/html', 'ETag': 'x'}
