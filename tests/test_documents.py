"""Documents other than HTML and text (policy/documents.py): one document of each format with
known contents (tests/documents_corpus/NAME.json: its title, four sentences, one of them in
German and French, two links with their anchors, its author), read by MIME type and by its
first bytes; hostile documents fail their parse and nothing else; and a crawl of a web serving
every format (docs/documents.md "Formats")."""

import glob
import io
import json
import os
import random
import unicodedata
import zipfile

import pytest

from beamcrawl.transforms.policy.documents import FORMATS, document_format, parse_binary
from beamcrawl.transforms.policy.html import parse_document
from tests.conftest import read_parts, run_cli, write_seeds

CORPUS = os.path.join(os.path.dirname(__file__), 'documents_corpus')
LIMIT = 64 * 1024 * 1024
MIME = {'pdf': 'application/pdf', 'docx': FORMATS['docx'][0], 'xlsx': FORMATS['xlsx'][0],
        'pptx': FORMATS['pptx'][0], 'odt': FORMATS['odt'][0], 'ods': FORMATS['ods'][0],
        'odp': FORMATS['odp'][0], 'rtf': 'application/rtf', 'epub': 'application/epub+zip',
        'rss': 'application/rss+xml', 'atom': 'application/atom+xml', 'xml': 'application/xml',
        'doc': 'application/msword', 'xls': 'application/vnd.ms-excel',
        'ppt': 'application/vnd.ms-powerpoint'}


def _documents():
    for path in sorted(glob.glob(os.path.join(CORPUS, '*.json'))):
        with open(path, encoding='utf-8') as f:
            expected = json.load(f)
        with open(path[:-len('.json')], 'rb') as f:
            yield expected, f.read()


def _norm(text: str) -> str:
    return ' '.join(unicodedata.normalize('NFC', text).split())


DOCUMENTS = list(_documents())


def test_the_corpus_has_every_format():
    assert sorted(e['format'] for e, _ in DOCUMENTS) == sorted(MIME)


@pytest.mark.parametrize('expected,body', DOCUMENTS, ids=[e['format'] for e, _ in DOCUMENTS])
def test_each_format_gives_its_text_title_links_and_author(expected, body):
    url = f'http://docs.test/{expected["file"]}'
    parse = parse_document(body, url, MIME[expected['format']], max_expanded=LIMIT)
    assert parse.status == 'success', parse.metadata
    text = _norm(parse.text)
    for sentence in expected['sentences']:
        assert _norm(sentence) in text
    assert parse.title == expected['title']
    assert parse.metadata['author'] == expected['author']
    urls = [u for u, _ in parse.outlinks]
    for link in expected['links']:
        assert link['url'] in urls
        if expected['format'] != 'ppt':          # a ppt's link holds no anchor of its own
            assert (link['url'], link['anchor']) in parse.outlinks
    if expected.get('pages'):
        assert parse.metadata['pages'] == str(expected['pages'])
    assert parse.metadata['document.format'] == {'rss': 'feed', 'atom': 'feed'}.get(
        expected['format'], expected['format'])


@pytest.mark.parametrize('expected,body', DOCUMENTS, ids=[e['format'] for e, _ in DOCUMENTS])
def test_a_document_served_without_its_type_is_known_by_its_bytes(expected, body):
    fmt = {'rss': 'feed', 'atom': 'feed'}.get(expected['format'], expected['format'])
    if fmt != 'xml':                              # XML without a type may be anything
        assert document_format('application/octet-stream', body) == fmt
    assert document_format(MIME[expected['format']], body) == fmt


def test_other_types_are_not_documents():
    assert document_format('image/png', b'\x89PNG\r\n') is None
    assert document_format('application/octet-stream', b'\x00\x01binary') is None
    assert document_format('application/zip', _zip({'a.txt': b'hello'})) is None
    parse = parse_document(b'\x89PNG\r\n', 'http://x.test/a.png', 'image/png', max_expanded=LIMIT)
    assert parse.status == 'notparsed'


def _zip(members) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def _docx_with(document_xml: bytes) -> bytes:
    return _zip({'[Content_Types].xml': b'<Types/>', 'word/document.xml': document_xml})


def test_a_zip_bomb_fails_its_parse_at_once():
    """word/document.xml of 200 MB (0.2 MB compressed): refused by its declared size before a
    byte of it is expanded."""
    body = _docx_with(b'<w:document xmlns:w="x">' + b' ' * (200 * 1024 * 1024) + b'</w:document>')
    assert len(body) < 1024 * 1024
    parse = parse_document(body, 'http://x.test/bomb.docx', MIME['docx'], max_expanded=LIMIT)
    assert parse.status == 'failed'
    assert parse.metadata['parse.error'].startswith('document too large: word/document.xml')


def test_a_zip_member_that_lies_about_its_size_is_cut():
    body = bytearray(_docx_with(b'<w:document xmlns:w="x">' + b' ' * 100000 + b'</w:document>'))
    # the central directory's uncompressed size of word/document.xml, made small
    z = zipfile.ZipFile(io.BytesIO(bytes(body)))
    info = z.getinfo('word/document.xml')
    central = bytes(body).rfind(b'PK\x01\x02', 0, bytes(body).find(b'PK\x05\x06'))
    while not bytes(body[central + 46:central + 46 + len(info.filename)]) == b'word/document.xml':
        central = bytes(body).rfind(b'PK\x01\x02', 0, central)
    body[central + 24:central + 28] = (100).to_bytes(4, 'little')
    parse = parse_binary(bytes(body), 'http://x.test/lie.docx', 'docx', max_expanded=1000)
    assert parse.status == 'failed'         # zipfile stops at the declared size: a bad CRC


def test_more_text_than_the_limit_fails():
    words = b'<w:p><w:r><w:t>' + b'word ' * 1000 + b'</w:t></w:r></w:p>'
    body = _docx_with(b'<w:document xmlns:w="http://schemas.openxmlformats.org/'
                      b'wordprocessingml/2006/main"><w:body>' + words * 20 + b'</w:body>'
                      b'</w:document>')
    assert parse_binary(body, 'http://x/', 'docx', max_expanded=10 ** 7).status == 'success'
    parse = parse_binary(body, 'http://x/', 'docx', max_expanded=50000)
    assert parse.status == 'failed' and 'too large' in parse.metadata['parse.error']


_NOISE = random.Random(5).randbytes(5000)


@pytest.mark.parametrize('fmt,body', [
    ('pdf', None),                                       # the corpus PDF cut in half
    ('pdf', b'%PDF-1.7\n' + _NOISE),
    ('docx', b'PK\x03\x04' + _NOISE),
    ('xlsx', _zip({'xl/workbook.xml': b'<not-closed'})),
    ('epub', _zip({'mimetype': b'application/epub+zip'})),
    ('doc', b'\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1' + _NOISE),
    ('xml', b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;&a;</x'),
    ('feed', b'<rss><channel><title>t'),
    ('rtf', b'{\\rtf1 {\\field{\\*\\fldinst HYPERLINK "http://a.test/"}{\\fldrslt '),
], ids=['pdf-cut', 'pdf-noise', 'docx-noise', 'xlsx-bad-xml', 'epub-empty', 'doc-noise',
        'xml-cut', 'feed-cut', 'rtf-cut'])
def test_malformed_documents_fail_their_parse(fmt, body):
    if body is None:
        pdf = next(b for e, b in DOCUMENTS if e['format'] == 'pdf')
        body = pdf[:len(pdf) // 2]
    parse = parse_binary(body, 'http://x.test/doc', fmt, max_expanded=LIMIT)
    assert parse.status in ('failed', 'success')
    if parse.status == 'failed':
        assert parse.metadata['parse.error'] and parse.metadata['document.format'] == fmt


def test_xml_entities_are_not_expanded():
    billion = (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
               b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
               b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><l>&c;&c;&c;</l>')
    parse = parse_binary(billion, 'http://x.test/l.xml', 'xml', max_expanded=LIMIT)
    assert 'aaaaaaaaaa' not in parse.text


@pytest.mark.e2e
def test_a_crawl_parses_every_format(tmp_path):
    """inject → generate → fetch with fetcher.parse: every document of the corpus served with its
    type (and a PDF as application/octet-stream) is parsed with its title and outlinks. (Each at
    a path without its extension: Nutch's default URL filter, ours, drops .ppt and .xls URLs.)"""
    from tests.testweb import Page, TestWeb
    pages = {'/robots.txt': Page(body=b'User-agent: *\nAllow: /\n', content_type='text/plain')}
    for expected, body in DOCUMENTS:
        pages[f'/{expected["format"]}'] = Page(body=body,
                                                content_type=MIME[expected['format']])
    pdf = next(b for e, b in DOCUMENTS if e['format'] == 'pdf')
    pages['/download'] = Page(body=pdf, content_type='application/octet-stream')
    with TestWeb({'docs.test': pages}) as web:
        crawl = str(tmp_path / 'crawl')
        seeds = write_seeds(tmp_path / 'seeds', [f'http://docs.test{p}' for p in pages
                                                 if p != '/robots.txt'])
        conf = ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
                '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
                '-D', 'domain.extra.suffixes=test', '-D', 'fetcher.parse=true',
                '--now', '2026-11-22T00:00:00Z']
        run_cli('inject', crawl, seeds, *conf)
        run_cli('generate', crawl, *conf)
        run_cli('fetch', crawl, *conf)
    segment = sorted(glob.glob(f'{crawl}/segments/*'))[-1]
    data = {r['url']: r for r in read_parts(glob.glob(f'{segment}/parse_data/*.avro'))}
    assert len(data) == len(DOCUMENTS) + 1
    for expected, _ in DOCUMENTS:
        record = data[f'http://docs.test/{expected["format"]}']
        assert record['parse_status'] == 'success', record['metadata']
        assert record['title'] == expected['title']
        links = {o['to_url'] for o in record['outlinks']}
        assert {link['url'] for link in expected['links']} <= links
    assert data['http://docs.test/download']['metadata']['document.format'] == 'pdf'
    texts = {r['url']: r['text'] for r in read_parts(glob.glob(f'{segment}/parse_text/*.avro'))}
    for expected, _ in DOCUMENTS:
        text = _norm(texts[f'http://docs.test/{expected["format"]}'])
        assert all(_norm(sentence) in text for sentence in expected['sentences'])


def test_a_200_mb_document_fails_its_parse_in_the_sandbox(runner):
    """200 MB that claim to be a PDF: passed to the child, refused by PDFium, a failed parse."""
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline
    from apache_beam.testing.util import assert_that, equal_to

    from beamcrawl.transforms import parse, settings
    from beamcrawl.transforms.base.config import load_config
    from beamcrawl.transforms.storage.records import content
    from beamcrawl.transforms.storage.segments import PARSE_DATA
    cfg = load_config(defines=['domain.extra.suffixes=test'])
    big = b'%PDF-1.7\n' + b'0' * (200 * 1024 * 1024)
    docs = [content('http://docs.test/big.pdf', content_bytes=big, content_type=MIME['pdf'],
                    fetch_time=1, http_code=200)]
    del big
    with TestPipeline(runner=runner) as p:
        out = p | beam.Create(docs) | parse.ParseContent(settings=settings.parse_settings(cfg),
                                                         policy=settings.url_policy(cfg), now=7)
        assert_that(out[PARSE_DATA] | beam.Map(lambda d: (d['parse_status'],
                                                         d['metadata']['document.format'])),
                    equal_to([('failed', 'pdf')]))


@pytest.mark.parametrize('reader,error,counter', [
    ('tests.sandbox_calls:parse_that_hangs', 'parser.timeout exceeded',
     'parse.documents.timeout'),
    ('tests.sandbox_calls:parse_that_crashes', 'the document crashed its reader (signal 11)',
     'parse.documents.crashed'),
])
def test_a_reader_that_hangs_or_crashes_is_a_failed_parse(runner, monkeypatch, reader, error,
                                                           counter):
    """Documents are parsed in a child process: a reader stuck (in native code, where a thread
    cannot be stopped) is killed at parser.timeout, one that crashes its process is reported;
    the next document is parsed by a new child."""
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline
    from apache_beam.testing.util import assert_that, equal_to

    from beamcrawl.transforms import parse, settings
    from beamcrawl.transforms.base.config import load_config
    from beamcrawl.transforms.runners.runtime import counters_of
    from beamcrawl.transforms.storage.records import content
    from beamcrawl.transforms.storage.segments import PARSE_DATA
    monkeypatch.setattr(parse, '_PARSE_DOCUMENT', reader)
    cfg = load_config(defines=['domain.extra.suffixes=test', 'parser.timeout=1'])
    pdf = next(b for e, b in DOCUMENTS if e['format'] == 'pdf')
    docs = [content(f'http://docs.test/{i}.pdf', content_bytes=pdf, content_type=MIME['pdf'],
                    fetch_time=1, http_code=200) for i in range(2)]
    docs.append(content('http://docs.test/page', content_bytes=b'<p>html is not sandboxed</p>',
                        content_type='text/html', fetch_time=1, http_code=200))
    p = TestPipeline(runner=runner)
    out = p | beam.Create(docs) | parse.ParseContent(settings=settings.parse_settings(cfg),
                                                     policy=settings.url_policy(cfg), now=7)
    assert_that(out[PARSE_DATA] | beam.Map(lambda d: (d['url'], d['parse_status'],
                                                     d['metadata'].get('parse.error', ''))),
                equal_to([('http://docs.test/0.pdf', 'failed', error),
                          ('http://docs.test/1.pdf', 'failed', error),
                          ('http://docs.test/page', 'success', '')]))
    counters = counters_of(p.run())
    assert counters[counter] == 2 and counters['parse.status.failed'] == 2
