"""parse: ParseContent on TestPipeline; `beamcrawl parse` and fetch with fetcher.parse."""

import glob
import hashlib

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms import settings
from beamcrawl.transforms.base.config import load_config
from beamcrawl.transforms.parse import ParseContent
from beamcrawl.transforms.runners.runtime import counters_of
from beamcrawl.transforms.storage.records import content
from beamcrawl.transforms.storage.segments import CRAWL_PARSE, PARSE_DATA, PARSE_TEXT
from tests.conftest import read_parts, run_cli, write_seeds

NOW = '2026-11-22T00:00:00Z'
PAGE = (b'<html><head><title>T</title><meta http-equiv="refresh" content="2;url=/moved">'
        b'</head><body>hello <a href="/a">A</a><a href="/a">A</a><a href="/b.png">img</a>'
        b'<a href="http://other.test/">O</a></body></html>')


def test_parse_content_transform(runner, cfg):
    docs = [content('http://www.a.test/', content_bytes=PAGE, content_type='text/html',
                    fetch_time=1, http_code=200),
            content('http://www.a.test/big', content_bytes=b'<p>x', content_type='text/html',
                    fetch_time=1, http_code=200, truncated=True),
            content('http://www.a.test/moved', content_bytes=b'', content_type='text/html',
                    fetch_time=1, http_code=301)]
    p = TestPipeline(runner=runner)
    out = p | beam.Create(docs) | ParseContent(settings=settings.parse_settings(cfg),
                                               policy=settings.url_policy(cfg), now=7)
    assert_that(out[PARSE_TEXT], equal_to([{'url': 'http://www.a.test/',
                                            'text': 'T\nhello AAimgO', 'main_text': ''}]),
                label='text')
    assert_that(out[PARSE_DATA] | beam.Map(lambda d: (d['title'], d['parse_status'],
                                                      [o['to_url'] for o in d['outlinks']])),
                equal_to([('T', 'success_redirect', ['http://www.a.test/a',
                                                     'http://other.test/'])]), label='data')
    assert_that(out[CRAWL_PARSE] | beam.Map(lambda r: (r['url'], r['status'], r['fetch_interval'],
                                                       r['signature'], r['fetch_time'])),
                equal_to([('http://www.a.test/', 'signature', 0, hashlib.md5(PAGE).digest(), 7),
                          ('http://www.a.test/moved', 'linked', 0, None, 7),
                          ('http://www.a.test/a', 'linked', 2592000, None, 7),
                          ('http://other.test/', 'linked', 2592000, None, 7)]), label='crawl')
    result = p.run()
    result.wait_until_finish()
    counters = counters_of(result)
    assert counters['parse.skipped.truncated'] == 1
    assert counters['parse.skipped.not_success'] == 1
    assert counters['parse.status.success_redirect'] == 1


def test_ignore_external_links_and_text_signature(runner):
    cfg = load_config(overrides={'db.ignore.external.links': True,
                                 'db.signature.class': 'TextMD5Signature'})
    doc = content('http://www.a.test/', content_bytes=PAGE, content_type='text/html',
                  fetch_time=1, http_code=200)
    with TestPipeline(runner=runner) as p:
        out = p | beam.Create([doc]) | ParseContent(settings=settings.parse_settings(cfg),
                                                    policy=settings.url_policy(cfg), now=7)
        assert_that(out[CRAWL_PARSE] | beam.Map(lambda r: (r['url'], r['signature'])),
                    equal_to([('http://www.a.test/', hashlib.md5(b'T\nhello AAimgO').digest()),
                              ('http://www.a.test/moved', None),
                              ('http://www.a.test/a', None)]))


def _agent(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0.05',
            '-D', 'domain.extra.suffixes=test']


def _crawl_to_fetch(web, tmp_path, capsys, *extra):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://www.a.test/', 'http://b.test/',
                                             'http://b.test/old'])
    assert main(['inject', crawl, seeds, '--now', NOW, *_agent(web)]) == 0
    assert main(['generate', crawl, '--now', NOW, *_agent(web)]) == 0
    segment = capsys.readouterr().out.split()[-1]
    assert main(['fetch', crawl, '--now', NOW, *_agent(web), *extra]) == 0
    return crawl, segment


def _check_parsed(segment):
    data = {d['url']: d for d in read_parts(glob.glob(f'{segment}/parse_data/*.avro'))}
    assert set(data) == {'http://www.a.test/', 'http://b.test/'}
    assert [o['to_url'] for o in data['http://www.a.test/']['outlinks']] == [
        'http://www.a.test/page1.html', 'http://b.test/', 'http://www.a.test/private/x']
    texts = {t['url']: t['text'] for t in read_parts(glob.glob(f'{segment}/parse_text/*.avro'))}
    assert texts['http://b.test/'].startswith('B home')
    statuses = sorted(r['status'] for r in read_parts(glob.glob(f'{segment}/crawl_parse/*.avro')))
    assert statuses == ['linked'] * 4 + ['signature'] * 2


def test_parse_command(web, tmp_path, capsys):
    crawl, segment = _crawl_to_fetch(web, tmp_path, capsys)
    assert main(['parse', crawl, '--now', NOW]) == 0
    assert '2 success' in capsys.readouterr().out
    _check_parsed(segment)
    proc = run_cli('parse', crawl, segment, check=False)
    assert proc.returncode == 2 and 'already has crawl_parse' in proc.stderr


def test_fetcher_parse(web, tmp_path, capsys):
    crawl, segment = _crawl_to_fetch(web, tmp_path, capsys, '-D', 'fetcher.parse=true')
    _check_parsed(segment)
    proc = run_cli('parse', crawl, check=False)
    assert proc.returncode == 2 and 'no segment with crawl_fetch and content' in proc.stderr


def test_parse_detects_the_language_and_keeps_the_declared_ones_apart(runner):
    """`lang.detected` and `lang.confidence` from the page's own text (its main text when one is
    extracted), beside `lang` (<html lang>) and `lang.http` (Content-Language)."""
    german = ('<html lang="en"><head><title>Radweg</title></head><body><nav>Home News Sport '
              'Login</nav><article><h1>Neuer Radweg</h1><p>Der Stadtrat hat am Dienstag '
              'beschlossen, einen neuen Radweg entlang des Flusses zu bauen. Die Arbeiten '
              'sollen im Frühjahr beginnen und etwa zwei Jahre dauern.</p></article>'
              '</body></html>').encode()
    docs = [content('http://www.a.test/de', content_bytes=german, content_type='text/html',
                    fetch_time=1, http_code=200, headers={'content-language': 'de-DE'}),
            content('http://www.a.test/n', content_bytes=b'<p>42 17</p>',
                    content_type='text/html', fetch_time=1, http_code=200)]
    for extractor in ('none', 'trafilatura'):
        cfg = load_config(defines=['domain.extra.suffixes=test',
                                   f'parser.main.text.extractor={extractor}'])
        with TestPipeline(runner=runner) as p:
            out = p | beam.Create(docs) | ParseContent(settings=settings.parse_settings(cfg),
                                                       policy=settings.url_policy(cfg), now=7)
            assert_that(out[PARSE_DATA] | beam.Map(lambda d: (d['url'], {
                k: (v if k != 'lang.confidence' else float(v) >= 0.9)
                for k, v in d['metadata'].items() if k.startswith('lang')})),
                equal_to([('http://www.a.test/n', {}),
                          ('http://www.a.test/de', {'lang': 'en', 'lang.http': 'de-DE',
                                                    'lang.detected': 'de',
                                                    'lang.confidence': True})]),
                label='languages')
            assert_that(out[PARSE_TEXT] | beam.Map(lambda t: (t['url'], bool(t['main_text']))),
                        equal_to([('http://www.a.test/de', extractor != 'none'),
                                  ('http://www.a.test/n', False)]), label='main')
