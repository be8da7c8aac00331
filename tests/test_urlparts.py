"""urlparts.scheme_host: its one-regex fast path gives what the plain match and the check of
the next character by hand gave (the oracle below), on a table of odd authorities and on
random URLs made of the characters that decide."""

import random
import re

import pytest

from beamcrawl.transforms.policy.urlparts import MalformedUrl, host_of, scheme_host, split_url

_PLAIN = re.compile(r'([A-Za-z][A-Za-z0-9+.\-]*)://(?:[^@/?#]*@)?([^:/?#\[\]@]+)')


def oracle(url):
    """scheme_host as it was written first: a plain match, then the next character checked."""
    m = _PLAIN.match(url)
    if m:
        end = m.end()
        if end == len(url) or url[end] in ':/?#':
            return m.group(1).lower(), m.group(2).lower()
    try:
        scheme = split_url(url)[0]
    except MalformedUrl:
        return '', ''
    return scheme, host_of(url)


@pytest.mark.parametrize('url', [
    'http://a.test/', 'HTTP://A.Test', 'http://a.test', 'https://a.test:8080/x', 'http://a.test?q',
    'http://a.test#f', 'http://u@a.test/', 'http://u:p@a.test:1/', 'http://u:p@h]', 'http://u@/x',
    'http://u@h@i/', 'http://a:b@c:d/', 'ftp://x@y', 'http://x.y:', 'http://x]y@z/',
    'http://[::1]/', 'http://[::1]:80/', 'http://', 'http://@/', 'http://h@', 'http://h\n',
    'http://x.y/\n', 'http://x.y\\z', '//x.y/', 'mailto:a@b', 'no scheme', '', '1http://a/',
    'http://a b/', 'http://a.test%2f/', 'http://é.test/', 'http://a.test\t/', 's+x.y-z://h/',
])
def test_the_table(url):
    assert scheme_host(url) == oracle(url)


def test_random_urls():
    rng = random.Random(29)
    pieces = ['http', 'HTTPS', 'ftp', 'x', '://', ':', '/', '?', '#', '@', '[', ']', '.', 'a',
              'B', '1', '-', '\n', ' ', 'é', '%', '\\', 'u:p@', 'host', ':80']
    for _ in range(20000):
        url = ''.join(rng.choice(pieces) for _ in range(rng.randrange(1, 12)))
        if rng.random() < 0.5:
            url = rng.choice(['http://', 'https://', 'ftp://', 'HTTP://']) + url
        assert scheme_host(url) == oracle(url), url
