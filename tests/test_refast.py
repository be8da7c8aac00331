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
