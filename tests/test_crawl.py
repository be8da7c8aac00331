"""The crawl loop on a site with a known link graph; readseg; schedule-sim; the demo."""

import os
import re

import pytest

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records
from tests.conftest import read_db, run_cli, write_seeds
from tests.testweb import Page, html_page

NOW = 1795305600000
GRAPH = {   # page → links, on two hosts
    'http://site.test/': ['/a', '/b', '/no/x', 'http://other.test/'],
    'http://site.test/a': ['/b', '/'],
    'http://site.test/b': ['/a', '/c'],
    'http://site.test/c': ['http://other.test/p'],
    'http://site.test/no/x': [],
    'http://other.test/': ['http://site.test/a'],
    'http://other.test/p': ['/'],
}


@pytest.fixture(scope='module', autouse=True)
def graph_site(testweb):
    testweb.add('site.test', '/robots.txt', Page(body=b'User-agent: *\nDisallow: /no/\n',
                                                 content_type='text/plain'))
    testweb.add('other.test', '/robots.txt', Page(status=404))
    for url, links in GRAPH.items():
        host, path = url[len('http://'):].split('/', 1)
        testweb.add(host, '/' + path, html_page(f'page {url}', links=links))


def _conf(web, *extra):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0.0',
            '-D', 'domain.extra.suffixes=test', *extra]


@pytest.mark.slow
def test_three_rounds_follow_the_link_graph(web, tmp_path, capsys):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://site.test/'])
    assert main(['crawl', crawl, '--seeds', seeds, '--rounds', '3', '--now', str(NOW),
                 *_conf(web)]) == 0
    out = capsys.readouterr().out
    assert out.count('round ') == 3 and 'round 3/3' in out and 'new URLs' in out
    status = {u: r['status'] for u, r in read_db(crawl).items()}
    assert status == {
        'http://site.test/': 'db_fetched', 'http://site.test/a': 'db_fetched',
        'http://site.test/b': 'db_fetched', 'http://other.test/': 'db_fetched',
        'http://site.test/c': 'db_fetched', 'http://site.test/no/x': 'db_gone',
        'http://other.test/p': 'db_unfetched'}
    requested = [(r.host, r.path) for r in web.log if r.path != '/robots.txt']
    assert ('site.test', '/no/x') not in requested                 # robots: never requested
    assert len(requested) == len(set(requested)) == 5              # each page fetched once
    linkdb = {r['url']: [(i['from_url'], i['anchor']) for i in r['inlinks']]
              for r in iter_records(CrawlLayout(crawl).linkdb.part_files())}
    assert linkdb == {  # internal links are ignored by default (linkdb.ignore.internal.links)
        'http://other.test/': [('http://site.test/', 'link 3')],
        'http://site.test/a': [('http://other.test/', 'link 0')],
        'http://other.test/p': [('http://site.test/c', 'link 0')]}
    # readseg sees three segments, and the politeness audit of one passes
    capsys.readouterr()
    assert main(['readseg', crawl, '--list']) == 0
    listing = capsys.readouterr().out.splitlines()
    assert len(listing) == 4 and listing[0].startswith('NAME')
    segment = listing[2].split('\t')[0]
    assert main(['readseg', crawl, '--politeness', segment]) == 0
    assert main(['readseg', crawl, '--get', segment, 'http://site.test/a']) == 0
    got = capsys.readouterr().out
    assert 'crawl_generate::' in got and 'crawl_fetch::' in got and 'parse_data::' in got
    assert main(['readseg', crawl, '--dump', segment, str(tmp_path / 'dump.jsonl')]) == 0
    assert os.path.getsize(tmp_path / 'dump.jsonl') > 0
    proc = run_cli('readseg', crawl, '--dump', segment, str(tmp_path / 'again.jsonl'),
                   '-D', 'runner.progress.seconds=0')                  # with its progress line
    assert re.search(r'readseg --dump: (\d+)/\1 records \(100%\), .*done in', proc.stderr)


@pytest.mark.slow
def test_stop_file_and_nothing_due(web, tmp_path, capsys):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://site.test/'])
    os.makedirs(crawl)
    open(os.path.join(crawl, '.STOP'), 'w').close()
    assert main(['crawl', crawl, '--seeds', seeds, '--rounds', '2', '--now', str(NOW),
                 *_conf(web)]) == 0
    assert '.STOP found' in capsys.readouterr().out
    assert len(read_db(crawl)) == 1 and not os.path.exists(os.path.join(crawl, 'segments'))
    os.remove(os.path.join(crawl, '.STOP'))
    assert main(['crawl', crawl, '--rounds', '5', '--now', str(NOW),
                 '-D', 'db.ignore.external.links=true', '-D', 'linkdb.ignore.internal.links=false',
                 *_conf(web)]) == 0
    assert 'nothing due, stopping' in capsys.readouterr().out


def test_politeness_audit_flags_violations(tmp_path):
    from beamcrawl.transforms.storage.partwriter import write_avro_file
    from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
    segment = tmp_path / 'crawl' / 'segments' / '20261122000000'
    records = [crawl_datum(f'http://a.test/{i}', 'fetch_success', fetch_time=0, fetch_interval=1,
                           metadata={'fetch.start': str(start), 'fetch.end': str(start + 10),
                                     'fetch.queue': 'a.test', 'fetch.delay': '1.0'})
               for i, start in enumerate((0, 1010, 1500))]      # 1000 ms ok, then 480 ms
    write_avro_file(str(segment / 'crawl_fetch' / 'part-00000.avro'), CRAWL_DATUM_SCHEMA, records)
    proc = run_cli('readseg', str(tmp_path / 'crawl'), '--politeness', '20261122000000',
                   check=False)
    assert proc.returncode == 3 and 'a.test\t3\t1000\t\t480\t\t740\t\t1' in proc.stdout


def test_schedule_sim_totals_and_plot(tmp_path):
    proc = run_cli('schedule-sim', '--quiet', '--plot', str(tmp_path / 'sim.png'))
    assert proc.stdout.splitlines()[:2] == ['Total missed: 2958, max miss: 27',
                                             'Page changed 322 times, fetched 527 times.']
    assert (tmp_path / 'sim.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    proc = run_cli('schedule-sim', '--steps', '3')
    assert proc.stdout.splitlines()[:2] == [
        '0. true\twill fetch at 0\tinterval 30 days\tmissed 0',
        '\tfetched and adjusted:\twill fetch at 24\tinterval 24 days']
    proc = run_cli('schedule-sim', '--quiet', '--schedule', 'default', '--steps', '100')
    assert 'fetched 4 times' in proc.stdout      # every 30 days, never adjusted


@pytest.mark.slow
def test_demo(tmp_path):
    proc = run_cli('demo', str(tmp_path / 'demo'), timeout=600)
    assert 'round 3/3' in proc.stdout
    for status in ('db_fetched', 'db_gone', 'db_redir_perm', 'db_unfetched'):
        assert status in proc.stdout
