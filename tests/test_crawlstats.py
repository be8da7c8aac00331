"""The statistics tools (Nutch's domainstats, crawlcomplete, protocolstats): the keys each
crawldb record gives, and the commands' counts on a crawl of the test web against counts made
directly from its crawldb."""

import collections

import pytest

from beamcrawl.transforms.policy.crawlstats import (completion_keys, domain_keys, group_of, ordered,
                                                    protocol_keys)
from beamcrawl.transforms.policy.domains import DomainHelper
from tests.conftest import read_db, run_cli, write_seeds
from tests.testweb import Page, html_page

NOW = 1795305600000
DOMAINS = DomainHelper(['test'])


@pytest.mark.parametrize('url, mode, group', [
    ('http://www.example.co.uk/a', 'host', 'www.example.co.uk'),
    ('http://www.example.co.uk/a', 'domain', 'example.co.uk'),
    ('http://www.example.co.uk/a', 'suffix', 'co.uk'),
    ('http://www.example.co.uk/a', 'tld', 'uk'),
    ('http://news.a.test:8080/', 'domain', 'a.test'),
    ('http://news.a.test:8080/', 'host', 'news.a.test'),
    ('http://10.0.0.1/x', 'domain', '10.0.0.1'),
    ('http://10.0.0.1/x', 'suffix', ''),
    ('http://10.0.0.1/x', 'tld', ''),
    ('mailto:x@y', 'host', ''),
])
def test_groups(url, mode, group):
    assert group_of(url, mode, DOMAINS) == group


def _rec(url, status, **meta):
    return {'url': url, 'status': status, 'metadata': meta}


@pytest.mark.parametrize('record, every, keys', [
    (_rec('http://a.test/', 'db_fetched'), False, [('total', 'FETCHED'), ('fetched', 'a.test')]),
    (_rec('http://a.test/', 'db_notmodified'), True,
     [('total', 'FETCHED'), ('fetched', 'a.test'), ('all', 'a.test')]),
    (_rec('http://a.test/', 'db_unfetched'), False, [('total', 'NOT_FETCHED')]),
    (_rec('http://a.test/', 'db_gone'), True, [('total', 'NOT_FETCHED'), ('all', 'a.test')]),
])
def test_domain_keys(record, every, keys):
    assert domain_keys(record, 'host', DOMAINS, every) == keys


@pytest.mark.parametrize('record, by, key', [
    (_rec('http://a.test/', 'db_fetched', **{'nutch.protocol.code': '200', '_pst_': 'success'}),
     'code', '200'),
    (_rec('http://a.test/', 'db_fetched', **{'nutch.protocol.code': '200', '_pst_': 'success'}),
     'status', 'success'),
    (_rec('http://a.test/', 'db_gone', _pst_='robots_denied'), 'code', 'robots_denied'),
    (_rec('http://a.test/', 'db_unfetched'), 'code', 'UNFETCHED'),
    (_rec('http://a.test/', 'db_unfetched'), 'status', 'UNFETCHED'),
])
def test_protocol_keys(record, by, key):
    assert protocol_keys(record, by) == [key]


def test_completion_keys_and_order():
    assert completion_keys(_rec('http://x.a.test/', 'db_redir_perm'), 'domain', DOMAINS) == \
        ['a.test UNFETCHED']
    assert ordered([('b', 2), ('a', 2), ('c', 5)]) == [(5, 'c'), (2, 'a'), (2, 'b')]


def _conf(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'domain.extra.suffixes=test',
            '-D', 'fetcher.server.delay=0', '--now', str(NOW)]


@pytest.fixture(scope='module')
def stats_crawl(testweb, tmp_path_factory):
    testweb.add('s1.stats.test', '/robots.txt', Page(body=b'User-agent: *\nDisallow: /no\n',
                                                     content_type='text/plain'))
    testweb.add('s1.stats.test', '/', html_page('s1', links=[
        '/a', '/b', '/no', '/gone', '/error', '/moved', 'http://s2.stats.test/']))
    testweb.add('s1.stats.test', '/a', html_page('a', links=['/deep']))
    testweb.add('s1.stats.test', '/b', html_page('b'))
    testweb.add('s1.stats.test', '/gone', Page(status=404, body=b'no'))
    testweb.add('s1.stats.test', '/error', Page(status=500, body=b'boom'))
    testweb.add('s1.stats.test', '/moved', Page(status=301, headers={'Location': '/b'}))
    testweb.add('s2.stats.test', '/robots.txt', Page(status=404))
    testweb.add('s2.stats.test', '/', html_page('s2', links=['http://other.test/']))
    tmp = tmp_path_factory.mktemp('stats')
    crawl = str(tmp / 'crawl')
    seeds = write_seeds(tmp / 'seeds', ['http://s1.stats.test/'])
    run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', *_conf(testweb))
    return crawl, list(read_db(crawl).values())


def _lines(proc):
    return [line.split('\t') for line in proc.stdout.splitlines()]


def test_domainstats_counts_fetched_pages_per_group(stats_crawl, web):
    crawl, records = stats_crawl
    fetched = collections.Counter(DOMAINS.url_domain(r['url']) for r in records
                                  if r['status'] in ('db_fetched', 'db_notmodified'))
    every = collections.Counter(DOMAINS.url_domain(r['url']) for r in records)
    lines = _lines(run_cli('domainstats', crawl, '--mode', 'domain', *_conf(web)))
    assert lines[-2:] == [[str(sum(fetched.values())), 'FETCHED'],
                          [str(len(records) - sum(fetched.values())), 'NOT_FETCHED']]
    assert {group: int(n) for n, group in lines[:-2]} == dict(fetched)
    lines = _lines(run_cli('domainstats', crawl, '--mode', 'host', '--all', *_conf(web)))
    hosts = collections.Counter(r['url'].split('/')[2] for r in records)
    assert {group: int(n) for _, n, group in lines[:-2]} == dict(hosts)
    assert int(lines[0][0]) >= int(lines[1][0])       # the largest first
    assert 'other.test' in every and 'other.test' not in fetched


def test_crawlcomplete_counts_fetched_and_unfetched(stats_crawl, web):
    crawl, records = stats_crawl
    expected = collections.Counter(
        f'{r["url"].split("/")[2]} '
        f'{"FETCHED" if r["status"] in ("db_fetched", "db_notmodified") else "UNFETCHED"}'
        for r in records)
    lines = _lines(run_cli('crawlcomplete', crawl, *_conf(web)))
    assert {key: int(n) for n, key in lines} == dict(expected)
    assert expected['s1.stats.test FETCHED'] >= 3 and expected['s1.stats.test UNFETCHED'] >= 3


def test_protocolstats_counts_codes_and_statuses(stats_crawl, web):
    crawl, records = stats_crawl
    lines = {key: int(n) for n, key in _lines(run_cli('protocolstats', crawl, *_conf(web)))}
    assert lines['404'] == 1 and lines['500'] == 1 and lines['301'] == 1
    assert lines['robots_denied'] == 1
    assert lines['UNFETCHED'] == sum(1 for r in records if '_pst_' not in r['metadata'])
    assert sum(lines.values()) == len(records)
    by_status = {key: int(n) for n, key in _lines(run_cli('protocolstats', crawl, '--by',
                                                          'status', *_conf(web)))}
    assert by_status['notfound'] == 1 and by_status['moved'] == 1
    assert by_status['success'] == lines['200']


def test_stats_without_a_crawldb_fail_in_one_line(tmp_path):
    proc = run_cli('domainstats', str(tmp_path / 'none'), check=False)
    assert proc.returncode == 2 and 'no crawldb' in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
