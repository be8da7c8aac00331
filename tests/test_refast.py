"""The faster searches of the filter's regexes find what the regexes find."""

import re

import pytest


@pytest.mark.parametrize('pattern', [
    r'(?i)\.(?:gif|jpg|png|ico|css|js)$',     # Nutch's suffix rule: searched in the tail
    r'\.html?$', r'[0-9]{3}$', '.',           # a tail rule; `.`: any character
    r'(?<=/)x$', r'\bx$', r'a|b$', r'(?m)x$', r'(x)\1$', r'^http://a\.test/$',   # searched whole
    r'x+$', r'\$',
])
def test_filter_searchers_find_what_the_regex_finds(pattern):
    from beamcrawl.transforms.policy.refast import searcher
    regex = re.compile(pattern)
    fast = searcher(regex)
    urls = ['', '\n', '\nx', 'x', 'xx\n', 'http://a.test/', 'http://a.test/p.GIF', 'a.gif\n',
            'http://a.test/x', 'http://a.test/xx', 'http://a.test/a x', 'b', 'http://a.test/123',
            'http://a.test/index.htm', 'q.html\n', 'cost$', '/x']
    for url in urls:
        assert bool(fast(url)) == bool(regex.search(url)), (pattern, url)


LOOP_URLS = ['', '/', '//', 'http://a.test/', 'http://a.test/a/b/a/c/a/', 'http://a.test/a/b/a/c/a',
             'http://a.test/x/y/x/z/x/w', 'http://a.test/x/y/X/z/x/', 'http://a.test/a//a/c/a/',
             'http://a.test/ab/c/ab/d/ab/e', 'http://a.test/a/b/c/d/e/f/g', '//////', '/a/b/a/c/a/',
             'http://a.test/p?q=/a/b/a/c/a/', 'http://a.test/a.b.c/d', 'x..y', 'x...y', 'a.b.c',
             'a=b&c=d', 'http://a.test/?a=1&&b=2', '/A/b/a/c/A/']


@pytest.mark.parametrize('pattern', [
    r'(/[^/]+)/[^/]+\1/[^/]+\1/',                 # Nutch's loop rule (its `.*` taken off)
    r'(?i)(/[^/]+)/[^/]+\1/[^/]+\1/', r'(?:/[^/]+){3,}', r'//+', r'(?:/a|//b){2}',
    r'/(?:x|/)/', r'a/|/b/', r'(?:/a/)?/', r'\.\.', r'\.{3}$', r'&{2,}', r'=.*&.*=',
    r'(?>/a)/', r'(?=/)/', r'(/)\1\1', r'(?:(/)|x)\1',
])
def test_a_rule_is_not_searched_where_its_characters_are_too_few(pattern):
    from beamcrawl.transforms.policy.refast import searcher
    regex = re.compile(pattern)
    fast = searcher(regex)
    for url in LOOP_URLS:
        assert bool(fast(url)) == bool(regex.search(url)), (pattern, url)


def test_the_characters_a_rule_requires():
    from beamcrawl.transforms.policy.refast import _Counted, _required_counts, searcher
    assert _required_counts(re.compile(r'(/[^/]+)/[^/]+\1/[^/]+\1/')) == {'/': 6}
    assert _required_counts(re.compile(r'(?:/a/){2,5}|//')) == {'/': 2}
    assert _required_counts(re.compile(r'(?:/a/)*x')) == {}
    assert _required_counts(re.compile(r'(?i)[.,]a\.B')) == {'.': 1}   # a class counts nothing
    assert isinstance(searcher(re.compile(r'(/[^/]+)/[^/]+\1/[^/]+\1/')), _Counted)
    assert not isinstance(searcher(re.compile(r'\.(gif|jpg)$')), _Counted)   # one '.': no count


def test_a_tail_rule_remembers_its_answers_and_forgets_them_when_full(monkeypatch):
    import pickle

    from beamcrawl.transforms.policy import refast
    regex = re.compile(r'(?i)\.(?:gif|jpg)$')
    fast = refast.searcher(regex)
    assert isinstance(fast, refast._TailSearch)
    monkeypatch.setattr(refast, '_TAILS_REMEMBERED', 3)
    urls = ['http://a.test/x.gif', 'http://a.test/y.GIF', 'http://a.test/x.html', 'a.jpg\n',
            'http://a.test/x.gif', 'x.jpg', 'http://b.test/x.html'] * 3
    for url in urls:
        assert fast(url) == bool(regex.search(url)), url
        assert len(fast._answers) <= 3
    copy = pickle.loads(pickle.dumps(fast))           # the answers stay in their process
    assert copy._answers == {} and copy('z.gif') and not copy('z.gifx')
