"""Status mapping, robots.txt decisions, representative URLs (chooseRepr)."""

import pytest

from beamcrawl.transforms.policy.domains import DomainHelper, choose_repr
from beamcrawl.transforms.policy.protocol import fetch_status, protocol_status
from beamcrawl.transforms.policy.robots import agent_names, rules_from_response


@pytest.mark.parametrize('code,protocol,status', [
    (200, 'success', 'fetch_success'),
    (201, 'exception', 'fetch_retry'),
    (204, 'exception', 'fetch_retry'),
    (300, 'moved', 'fetch_redir_perm'),
    (301, 'moved', 'fetch_redir_perm'),
    (302, 'temp_moved', 'fetch_redir_temp'),
    (303, 'temp_moved', 'fetch_redir_temp'),
    (304, 'notmodified', 'fetch_notmodified'),
    (305, 'moved', 'fetch_redir_perm'),
    (307, 'temp_moved', 'fetch_redir_temp'),
    (308, 'moved', 'fetch_redir_perm'),
    (400, 'gone', 'fetch_gone'),
    (401, 'access_denied', 'fetch_gone'),
    (403, 'exception', 'fetch_retry'),
    (404, 'notfound', 'fetch_gone'),
    (410, 'gone', 'fetch_gone'),
    (429, 'exception', 'fetch_retry'),
    (500, 'exception', 'fetch_retry'),
    (503, 'exception', 'fetch_retry'),
    (None, 'exception', 'fetch_retry'),
])
def test_status_mapping(code, protocol, status):
    assert protocol_status(code) == protocol
    assert fetch_status(protocol) == status


@pytest.mark.parametrize('protocol,status', [
    ('robots_denied', 'fetch_gone'), ('notfetching', 'fetch_retry'), ('failed', 'fetch_retry'),
    ('redir_exceeded', 'fetch_retry'), ('something-new', 'fetch_retry')])
def test_other_protocol_statuses(protocol, status):
    assert fetch_status(protocol) == status


ROBOTS = b"""User-agent: *
Disallow: /private/
Crawl-delay: 2

User-agent: testbot
Disallow: /only-testbot-denied
"""


@pytest.mark.parametrize('code,body,allow_403,kind', [
    (200, ROBOTS, True, 'parsed'),
    (404, b'', True, 'allow_all'),
    (410, b'', True, 'allow_all'),
    (401, b'', True, 'allow_all'),
    (403, b'', True, 'allow_all'),
    (403, b'', False, 'deny_all'),
    (500, b'', True, 'unavailable'),
    (503, b'', True, 'unavailable'),
    (429, b'', True, 'unavailable'),
    (None, b'', True, 'unavailable'),
])
def test_robots_response_kinds(code, body, allow_403, kind):
    assert rules_from_response(code, body, allow_403=allow_403).kind == kind


def test_robots_agent_groups_and_crawl_delay():
    rules = rules_from_response(200, ROBOTS, allow_403=True)
    other = agent_names('otherbot', [])
    mine = agent_names('OtherBot', ['*', 'TestBot', 'otherbot'])
    assert mine == ('otherbot', 'testbot')
    assert not rules.allowed('http://a.test/private/1', other)
    assert rules.allowed('http://a.test/only-testbot-denied', other)
    assert rules.allowed('http://a.test/private/1', mine)            # its own group wins
    assert not rules.allowed('http://a.test/only-testbot-denied', mine)
    assert rules.crawl_delay(other) == 2.0 and rules.crawl_delay(mine) is None
    assert not rules_from_response(403, b'', allow_403=False).allowed('http://a/', other)


A = 'http://www.a.com'


@pytest.mark.parametrize('src,dst,temp,expected', [
    (A, 'http://www.b.com', False, 'http://www.b.com'),
    (A, 'http://www.b.com', True, 'http://www.b.com'),
    (A, A + '?y=1', False, A),
    (A, A + '/xyz/index.html', False, A),
    (A + '/xyz/index.html', A, False, A),
    (A + '/xyz/index.html', A + '/abc/page.html', False, A + '/abc/page.html'),
    (A, A + '/xyz/index.html', True, A),
    (A + '/xyz/index.html', A, True, A),
    (A + '/xyz/index.html', A + '/abc/page.html', True, A + '/abc/page.html'),
    (A + '/xyz/index.html', 'http://www.news.a.com/abc/page.html', True, A + '/xyz/index.html'),
    (A, 'http://www.news.a.com', True, A),
])
def test_choose_repr(src, dst, temp, expected):
    assert choose_repr(src, dst, temp, DomainHelper()) == expected
