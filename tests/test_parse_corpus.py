"""The HTML corpus in tests/html_corpus: each document's parse against expected.yaml."""

import codecs
import os

import pytest
import yaml

from beamcrawl.transforms import settings
from beamcrawl.transforms.policy.html import parse_document
from beamcrawl.transforms.policy.outlinks import OutlinkRules, filter_outlinks

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'html_corpus')
with open(os.path.join(CORPUS, 'expected.yaml'), encoding='utf-8') as f:
    EXPECTED = yaml.safe_load(f)
RULES = OutlinkRules(max_outlinks=100, max_length=4096, ignore_internal=False,
                     ignore_external=False, by_domain=False)


def test_corpus_is_complete():
    files = sorted(n for n in os.listdir(CORPUS) if n != 'expected.yaml')
    assert files == sorted(EXPECTED) and len(files) >= 30


def _document(name, spec):
    with open(os.path.join(CORPUS, name), encoding='utf-8') as f:
        text = f.read()
    for placeholder, size in (spec.get('substitute') or {}).items():
        text = text.replace(placeholder, 'x' * size)
    body = text.encode(spec.get('encode', 'utf-8'))
    return (codecs.BOM_UTF8 + body) if spec.get('bom') else body


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_document(name, cfg):
    spec = EXPECTED[name] or {}
    url = spec.get('url', 'http://www.example.test/dir/page.html')
    parse = parse_document(_document(name, spec), url, spec.get('content_type', 'text/html'),
                           headers=spec.get('headers'), agents=('testbot',))
    assert parse.status == spec.get('status', 'success')
    if 'title' in spec:
        assert parse.title == spec['title']
    position = 0
    for snippet in spec.get('text', []):
        found = parse.text.find(snippet, position)
        assert found >= 0, f'{snippet!r} not in {parse.text!r}'
        position = found + len(snippet)
    for snippet in spec.get('not_text', []):
        assert snippet not in parse.text and snippet not in parse.title
    outlinks = filter_outlinks(url, parse.outlinks, RULES, settings.url_policy(cfg))
    assert [list(link) for link in outlinks] == spec.get('outlinks', [])
    for key, value in (spec.get('meta') or {}).items():
        assert parse.metadata.get(key) == value
    if 'refresh' in spec:
        assert list(parse.refresh) == spec['refresh']


@pytest.mark.parametrize('body,content_type,status', [
    (bytes(range(256)) * 8, 'text/html', 'failed'),          # a binary blob labelled text/html
    (b'\x89PNG\r\n\x1a\n' + b'\x00' * 100, 'text/plain', 'failed'),
    (b'%PDF-1.4 ...', 'application/pdf', 'failed'),           # a PDF, but a broken one
    (b'GIF89a', 'image/gif', 'notparsed'),
    (b'<html><title>sniffed</title></html>', '', 'success'),
])
def test_non_html_and_binary(body, content_type, status):
    assert parse_document(body, 'http://a.test/', content_type,
                          max_expanded=1 << 20).status == status


def test_x_robots_tag_for_another_agent_is_ignored():
    body = b'<html><title>t</title><body>text<a href="/l">l</a></body></html>'
    mine = parse_document(body, 'http://a.test/', 'text/html',
                          headers={'X-Robots-Tag': 'testbot: nofollow'}, agents=('testbot',))
    other = parse_document(body, 'http://a.test/', 'text/html',
                           headers={'X-Robots-Tag': 'otherbot: noindex, nofollow'},
                           agents=('testbot',))
    assert mine.nofollow and not mine.outlinks and mine.text
    assert not other.nofollow and other.outlinks and other.title == 't'
