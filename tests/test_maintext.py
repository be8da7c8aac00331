"""Main text (policy/maintext.py) on a labelled set: pages of 11 site templates (news, the same
articles split by ads on another site, a blog with comments, a German and a French page,
documentation, a forum thread, a page with hashed class names only, a product page, a short
notice, a listing) whose main text is known (tests/maintext_corpus/NAME.txt, written apart from
the boilerplate; docs/documents.md "Main text")."""

import glob
import os
import re

import pytest

from beamcrawl.transforms.policy import maintext
from beamcrawl.transforms.policy.html import parse_document

CORPUS = os.path.join(os.path.dirname(__file__), 'maintext_corpus')
_TOKEN = re.compile(r'\w+')


def _pages():
    for path in sorted(glob.glob(os.path.join(CORPUS, '*.html'))):
        name = os.path.basename(path)[:-5]
        with open(path, encoding='utf-8') as f:
            html = f.read()
        with open(path[:-5] + '.txt', encoding='utf-8') as f:
            truth = f.read()
        yield name, html, truth


def _f1(kept: str, truth: str):
    """Precision, recall and F1 of the kept words against the true ones (bags of words)."""
    from collections import Counter
    got, want = Counter(_TOKEN.findall(kept.lower())), Counter(_TOKEN.findall(truth.lower()))
    common = sum((got & want).values())
    if not common:
        return 0.0, 0.0, 0.0
    p, r = common / sum(got.values()), common / sum(want.values())
    return p, r, 2 * p * r / (p + r)


def test_the_main_text_of_the_labelled_pages():
    scores = {}
    for name, html, truth in _pages():
        kept, error = maintext.main_text(html, 'trafilatura')
        assert error == ''
        if not truth.strip():
            # A listing has no main content; trafilatura keeps its teasers (about half of the
            # page's words) but drops its menus and footer.
            visible = parse_document(html.encode(), 'http://x.test/', 'text/html').text
            assert len(_TOKEN.findall(kept)) < len(_TOKEN.findall(visible)) * 0.6
            continue
        scores[name] = _f1(kept, truth)
    assert len(scores) == 20
    f1 = [s[2] for s in scores.values()]
    assert sum(f1) / len(f1) >= 0.85, scores
    for name, (p, r, f) in scores.items():
        if name.startswith(('news_', 'adsplit_', 'de_', 'fr_', 'docs_', 'blog_')):
            assert f >= 0.9, (name, p, r)                # articles, posts, documentation
        else:
            assert f >= 0.5, (name, p, r)                # product pages, short notices


def test_near_copies_extract_alike():
    """The same article on two sites (other menus, ads between its paragraphs) gives the same
    main text; what near-duplicate detection rests on."""
    pages = {name: html for name, html, _ in _pages()}
    for name in [n for n in pages if n.startswith('news_')]:
        copy = 'adsplit_' + name[len('news_'):]
        a = maintext.main_text(pages[name], 'trafilatura')[0]
        b = maintext.main_text(pages[copy], 'trafilatura')[0]
        assert _f1(a, b)[2] >= 0.95


def test_no_extractor_no_main_text():
    assert maintext.main_text('<p>hello</p>', 'none') == ('', '')
    with pytest.raises(ValueError, match='expected one of'):
        maintext.main_text('<p>hello</p>', 'boilerpipe')


def test_a_failing_extractor_gives_an_error_not_an_exception(monkeypatch):
    import trafilatura

    def broken(*args, **kwargs):
        raise RuntimeError('boom')
    monkeypatch.setattr(trafilatura, 'extract', broken)
    assert maintext.main_text('<p>hello</p>', 'trafilatura') == ('', 'RuntimeError: boom')
    parse = parse_document(b'<html><body><p>hello world</p></body></html>', 'http://x.test/',
                           'text/html', main_text_extractor='trafilatura')
    assert parse.status == 'success' and parse.text == 'hello world'
    assert parse.main_text == '' and parse.metadata['main_text.error'] == 'RuntimeError: boom'


def test_parse_extracts_the_main_text_when_asked():
    html = open(os.path.join(CORPUS, 'news_sourdough.html'), 'rb').read()
    plain = parse_document(html, 'http://x.test/', 'text/html')
    main = parse_document(html, 'http://x.test/', 'text/html',
                          main_text_extractor='trafilatura')
    assert plain.main_text == '' and main.text == plain.text
    assert main.main_text and len(main.main_text) < len(main.text) * 0.8
    noindex = parse_document(b'<html><head><meta name="robots" content="noindex"></head>'
                             b'<body><p>secret words here</p></body></html>', 'http://x.test/',
                             'text/html', main_text_extractor='trafilatura')
    assert noindex.text == '' and noindex.main_text == ''
