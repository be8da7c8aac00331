"""`beamcrawl report`: the policy's tables, the page's escaping, the pipeline on a real 3-round
crawl of the test web, and the page in headless Chromium (tests/browser.py)."""

import html.parser
import math
import re

import pytest

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms.policy import report as policy
from beamcrawl.transforms.policy.politeness import audit_queue
from beamcrawl.transforms.policy.report_html import SECTIONS, render
from beamcrawl.transforms.policy.svgcharts import bar_chart, fmt, nice_max
from tests import browser
from tests.conftest import read_db, write_seeds
from tests.testweb import Page, html_page

NOW = 1795305600000
HOSTILE = 'x"><script>alert(\'pwned\')</script>.test'
GRAPH = {
    'http://rep.test/': ['/a', '/b', '/no/x', 'http://rep2.test/'],
    'http://rep.test/a': ['/b', '/', '/c'],
    'http://rep.test/b': ['/a', '/gone'],
    'http://rep.test/c': ['http://rep2.test/p'],
    'http://rep2.test/': ['http://rep.test/a'],
    'http://rep2.test/p': ['/'],
}


# -- policy tables ----------------------------------------------------------------------------

@pytest.mark.parametrize('value, bins, label', [
    (-1.0, policy.SCORE_BINS, '< 0'), (0.0, policy.SCORE_BINS, '0 – 0.001'),
    (0.5, policy.SCORE_BINS, '0.5 – 1'), (1e9, policy.SCORE_BINS, '≥ 10'),
    (0, policy.INTERVAL_BINS, '< 1 h'), (86400, policy.INTERVAL_BINS, '1 – 2 d'),
    (30 * 86400, policy.INTERVAL_BINS, '30 – 90 d'), (0, policy.INDEGREE_BINS, '0'),
    (4, policy.INDEGREE_BINS, '3 – 4'), (12345, policy.INDEGREE_BINS, '≥ 1000'),
])
def test_bins(value, bins, label):
    assert policy.bin_of(value, bins) == label


@pytest.mark.parametrize('items, found', [
    ([('db', 'db_fetched')], ('db_fetched', None)),                          # a seed
    ([('db', 'db_fetched'), ('generated', 0), ('linked', 2)], ('db_fetched', None)),
    ([('linked', 1), ('db', 'db_unfetched'), ('linked', 3)], ('db_unfetched', 1)),
    ([('db', 'db_gone'), ('generated', 2), ('linked', 0), ('linked', 1)], ('db_gone', 0)),
    ([('linked', 4)], (None, 4)),                                    # filtered by updatedb
    ([('db', 'db_fetched'), ('generated', 1), ('linked', 1)], ('db_fetched', None)),
])
def test_discovery_round(items, found):
    assert policy.discovery_round(items) == found


def _datum(status, **kw):
    return {'url': kw.pop('url', 'http://h.test/p'), 'status': status, 'score': 1.0,
            'fetch_interval': 86400, 'signature': kw.pop('signature', None),
            'metadata': kw.pop('metadata', {}), 'protocol_status': kw.pop('protocol', None)}


@pytest.mark.parametrize('generated, fetched, signature, change', [
    (_datum('db_fetched', signature=b'a'), _datum('fetch_notmodified'), None, 'not_modified'),
    (_datum('db_fetched', signature=b'a'), _datum('fetch_success'), b'a', 'unchanged'),
    (_datum('db_notmodified', signature=b'a'), _datum('fetch_success'), b'b', 'changed'),
    (_datum('db_unfetched'), _datum('fetch_success'), b'b', None),           # a first fetch
    (_datum('db_fetched', signature=b'a'), _datum('fetch_gone'), None, None),  # a failure
    (_datum('db_fetched'), _datum('fetch_success'), b'b', None),     # nothing to compare with
    (None, _datum('fetch_success'), b'b', None),
])
def test_change_of(generated, fetched, signature, change):
    assert policy.change_of(generated, fetched, signature) == change


def test_changes_per_segment():
    items = [('db', 'db_fetched'),
             ('generated', 0, 'db_unfetched', None), ('fetched', 0, 'fetch_success'),
             ('signature', 0, b'a'),                                   # a first fetch
             ('generated', 1, 'db_fetched', b'a'), ('fetched', 1, 'fetch_success'),
             ('signature', 1, b'a'),
             ('generated', 2, 'db_fetched', b'a'), ('fetched', 2, 'fetch_notmodified'),
             ('generated', 3, 'db_notmodified', b'a'), ('fetched', 3, 'fetch_success'),
             ('signature', 3, b'b'), ('linked', 3),
             ('generated', 4, 'db_fetched', b'b')]                      # not fetched (yet)
    assert policy.changes(items) == [(1, 'unchanged'), (2, 'not_modified'), (3, 'changed')]


def test_fetch_facts_and_keys():
    meta = {'fetch.start': '1000', 'fetch.end': '2500', 'fetch.queue': 'h.test',
            'fetch.delay': '1.5'}
    fact = policy.fetch_record(_datum('fetch_success', metadata=meta, protocol='success'))
    assert fact == {'host': 'h.test', 'status': 'fetch_success', 'protocol': 'success',
                    'start': 1000, 'end': 2500, 'queue': 'h.test', 'delay': 1.5}
    assert policy.fetch_keys('S', fact) == [('fetch_status', 'S', 'fetch_success'),
                                            ('fetch_protocol', 'S', 'success'),
                                            ('fetch_second', 'S', 2)]
    assert policy.host_stats(fact) == (1, 0, 1, 1500)
    assert policy.fetch_record(_datum('linked')) is None
    denied = policy.fetch_record(_datum('fetch_gone', protocol='robots_denied'))
    assert policy.fetch_keys('S', denied)[-1] == ('robots_denied', 'S', 'h.test')
    assert policy.host_stats(denied) == (1, 0, 0, 0)        # reported apart, not a failure
    blocked = policy.fetch_record(_datum('fetch_retry', protocol='blocked'))
    assert policy.fetch_keys('S', blocked)[-1] == ('blocked', 'S', 'h.test')
    assert policy.host_stats(blocked) == (0, 0, 0, 0)       # never requested
    failed = policy.fetch_record(_datum('fetch_retry', protocol='exception',
                                        metadata={'fetch.delay': 'nonsense'}))
    assert failed['delay'] is None and policy.host_stats(failed) == (1, 1, 0, 0)


@pytest.mark.parametrize('fetches, expected', [
    ([(0, 10, 1.0), (1010, 1020, 1.0), (1500, 1510, 1.0)],
     {'fetches': 3, 'delay_ms': 1000.0, 'min_gap_ms': 480, 'median_gap_ms': 740.0,
      'violations': 1}),
    ([(1500, 1510, 1.0), (0, 10, 1.0)],            # any order
     {'fetches': 2, 'delay_ms': 1000.0, 'min_gap_ms': 1490, 'median_gap_ms': 1490,
      'violations': 0}),
    ([(0, 10, 0.5)], {'fetches': 1, 'delay_ms': 500.0, 'min_gap_ms': None,
                      'median_gap_ms': None, 'violations': 0}),
    ([(0, 10, 1.0), (1006, 1010, 1.0)],            # 996 ms: within the 5 ms tolerance
     {'fetches': 2, 'delay_ms': 1000.0, 'min_gap_ms': 996, 'median_gap_ms': 996,
      'violations': 0}),
])
def test_audit_queue(fetches, expected):
    assert audit_queue(fetches, 5.0) == expected


def test_nice_axis_tops_and_numbers():
    assert [nice_max(v) for v in (0, 0.3, 1, 7, 11, 240, 260)] == [1, 0.5, 1, 10, 20, 250, 500]
    assert [fmt(v) for v in (None, 3, 1234567, 0.12345, 2.0)] == ['–', '3', '1,234,567',
                                                                   '0.123', '2']


# -- the page: every text from the web is escaped ---------------------------------------------

class _Elements(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]


def _hostile_data():
    url = f'http://{HOSTILE}/"onmouseover="alert(1)'
    audit = {'fetches': 2, 'delay_ms': 1000.0, 'min_gap_ms': 10, 'median_gap_ms': 10,
             'violations': 1}
    seg = {'name': '20261122000000', 'generated': 2, 'fetched': 2, 'parsed': 1, 'bytes': 10,
           'start': 1000, 'end': 3000, 'status': {'fetch_success': 2},
           'protocol': {'success': 2}, 'robots_denied': {HOSTILE: 1}, 'blocked': {HOSTILE: 1},
           'changes': {'changed': 1}, 'slowest': [[5.0, HOSTILE, 2, 0]],
           'failing': [[1, HOSTILE, 2]], 'politeness': [[HOSTILE, audit]], 'queues': 1,
           'violations': 1, 'rate': {'width_s': 1, 'points': [[0, 1.0], [1, 1.0]]}}
    stats = {'total': 2, 'status': {'db_fetched': 2}, 'retries': {'0': 2}, 'nan_scores': 0,
             'score': {'min': 1.0, 'avg': 1.0, 'max': 1.0, 'quantiles': {'0.5': 1.0}},
             'fetch_interval': {'min': 86400, 'avg': 86400, 'max': 86400},
             'fetch_time': {'min': 0, 'avg': 0, 'max': 0}}
    return {'segments': [seg['name']], 'applied': [seg['name']], 'top': 5, 'schedule': HOSTILE,
            'crawldb': {'stats': stats, 'score_bins': [('1 – 2', 2)],
                        'interval_bins': [('1 – 2 d', 2)]},
            'composition': [(policy.INJECTED, {'db_fetched': 2})],
            'groups': {'host': {'count': 1, 'top': [{'name': HOSTILE, 'urls': 2, 'fetched': 1}]},
                       'domain': {'count': 1, 'top': [{'name': HOSTILE, 'urls': 2,
                                                       'fetched': 1}]}},
            'segment_reports': [seg],
            'linkdb': {'urls': 1, 'inlinks': 3, 'applied': [seg['name']],
                       'indegree_bins': [('3 – 4', 1)], 'top': [{'url': url, 'inlinks': 3}]}}


def test_page_escapes_hosts_and_urls_from_the_web():
    page = render(_hostile_data(), crawl_dir='/c/<blink>"crawl"', now=NOW)
    parsed = _Elements()
    parsed.feed(page)
    assert 'script' not in parsed.tags and 'blink' not in parsed.tags
    assert not [a for a in parsed.attrs if a.startswith('on')]
    assert '<script>' not in page and 'alert(\'pwned\')</script>' not in page
    assert 'x&quot;&gt;&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;.test' in page
    for sid, _ in SECTIONS:
        assert f'<section id="{sid}">' in page
    # no network: no external reference of any kind
    assert not re.search(r'(src|href)="(?!#)', page) and '@import' not in page


def test_chart_titles_carry_the_numbers():
    svg = bar_chart([('db_fetched', 1234), ('<db>', 5)], title='t', x_label='status',
                    y_label='URLs', unit=' URLs')
    assert '<title>db_fetched: 1,234 URLs</title>' in svg
    assert '<title>&lt;db&gt;: 5 URLs</title>' in svg and '>URLs</text>' in svg


# -- a real crawl ------------------------------------------------------------------------------

@pytest.fixture(scope='module')
def crawl(testweb, tmp_path_factory):
    """A 3-round crawl, a day apart, of a small graph on two hosts with a robots.txt denial and
    a 410, its pages due again after a day; then its report."""
    testweb.add('rep.test', '/robots.txt', Page(body=b'User-agent: *\nDisallow: /no/\n',
                                                content_type='text/plain'))
    testweb.add('rep2.test', '/robots.txt', Page(status=404))
    testweb.add('rep.test', '/gone', Page(status=410, body=b'gone'))
    for url, links in GRAPH.items():
        host, path = url[len('http://'):].split('/', 1)
        testweb.add(host, '/' + path, html_page(f'page {url}', links=links))
    tmp = tmp_path_factory.mktemp('report')
    crawl_dir = str(tmp / 'crawl')
    seeds = write_seeds(tmp / 'seeds', ['http://rep.test/'])
    conf = ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={testweb.port}', '-D', 'fetcher.server.delay=0.0',
            '-D', 'domain.extra.suffixes=test', '-D', 'db.fetch.interval.default=86400']
    assert main(['crawl', crawl_dir, '--seeds', seeds, '--rounds', '3', '--now', str(NOW),
                 '--round-interval', '86400', *conf]) == 0
    out = str(tmp / 'report.html')
    assert main(['report', crawl_dir, '-o', out, '--now', str(NOW + 3 * 86400000)]) == 0
    return {'dir': crawl_dir, 'report': out, 'tmp': tmp}


def _readdb_stats(crawl_dir, capsys):
    capsys.readouterr()
    assert main(['readdb', crawl_dir, '--stats']) == 0
    out = capsys.readouterr().out
    stats = {'total': int(re.search(r'TOTAL urls:\t(\d+)', out).group(1))}
    for name, count in re.findall(r'status \d+ \((\w+)\):\t(\d+)', out):
        stats[name] = int(count)
    return stats


def _readseg_list(crawl_dir, capsys):
    capsys.readouterr()
    assert main(['readseg', crawl_dir, '--list']) == 0
    rows = [line.split('\t') for line in capsys.readouterr().out.splitlines()[1:]]
    return {r[0]: {'generated': r[1], 'start': r[3], 'end': r[4], 'fetched': r[5],
                   'parsed': r[6]} for r in rows}


def test_report_of_a_crawl_matches_the_readers(crawl, capsys):
    from beamcrawl.transforms.base.config import load_config
    from beamcrawl.transforms.report import collect_report
    from beamcrawl.transforms.settings import url_policy
    cfg = load_config(defines=['domain.extra.suffixes=test'])
    data = collect_report(crawl['dir'], cfg, [], domains=url_policy(cfg).domains, top=5,
                          tolerance_ms=5.0)
    stats = _readdb_stats(crawl['dir'], capsys)
    assert data['crawldb']['stats']['total'] == stats['total']
    assert {k: v for k, v in data['crawldb']['stats']['status'].items()} == \
        {k: v for k, v in stats.items() if k != 'total'}
    # the composition adds up to the crawldb; the seed is the only injected URL
    db = read_db(crawl['dir'])
    composition = dict(data['composition'])
    assert sum(sum(c.values()) for c in composition.values()) == len(db)
    assert composition[policy.INJECTED] == {db['http://rep.test/']['status']: 1}
    first, second, third = data['segments']
    assert sum(composition[first].values()) == 4   # /a /b /no/x rep2.test/
    listing = _readseg_list(crawl['dir'], capsys)
    segs = {s['name']: s for s in data['segment_reports']}
    assert set(segs) == set(listing) and len(segs) == 3
    for name, row in listing.items():
        seg = segs[name]
        assert (str(seg['generated']), str(seg['fetched']), str(seg['parsed'])) == \
            (row['generated'], row['fetched'], row['parsed'])
    assert segs[first]['status'] == {'fetch_success': 1}
    assert segs[second]['robots_denied'] == {'rep.test': 1}
    assert sum(n for _, n in segs[second]['rate']['points']) > 0
    assert segs[third]['changes'] == {'unchanged': segs[third]['status']['fetch_success'] - 1}
    assert segs[second]['queues'] == 2 and segs[second]['violations'] == 0
    assert data['groups']['host']['count'] == 2
    hosts = {g['name']: g for g in data['groups']['host']['top']}
    assert hosts['rep.test']['urls'] == sum(1 for u in db if u.startswith('http://rep.test/'))
    assert hosts['rep.test']['fetched'] == sum(
        1 for u, r in db.items() if u.startswith('http://rep.test/')
        and r['status'] in ('db_fetched', 'db_notmodified'))
    linkdb = data['linkdb']
    assert linkdb['urls'] == sum(n for _, n in linkdb['indegree_bins'])
    assert linkdb['top'][0]['inlinks'] >= linkdb['top'][-1]['inlinks']
    assert not math.isnan(data['crawldb']['stats']['score']['avg'])


def test_report_without_a_crawldb_is_one_line(tmp_path, capsys):
    assert main(['report', str(tmp_path / 'nothing'), '-o', str(tmp_path / 'r.html')]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'no crawldb' in err[0] and 'Traceback' not in err[0]
    assert not (tmp_path / 'r.html').exists()


@pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))
def test_report_in_headless_chromium(crawl, capsys):
    stats = _readdb_stats(crawl['dir'], capsys)
    listing = _readseg_list(crawl['dir'], capsys)
    with browser.Browser() as chromium:
        chromium.load('file://' + crawl['report'])
        sections = chromium.evaluate(
            '[...document.querySelectorAll("section")].map(s => [s.id, s.querySelector("h2")'
            '.textContent, s.querySelectorAll("svg").length, s.textContent.length])')
        shown = chromium.evaluate(
            'Object.fromEntries([...document.querySelectorAll("[data-stat]")].map('
            'e => [e.dataset.stat, e.dataset.count || e.textContent]))')
        rows = chromium.evaluate(
            '[...document.querySelectorAll("tr[data-segment]")].map('
            'r => [...r.cells].map(c => c.textContent))')
        charts = chromium.evaluate(
            '[...document.querySelectorAll("svg.chart")].map(s => s.getBoundingClientRect()'
            '.height)')
        chromium.screenshot(str(crawl['tmp'] / 'report.png'))
        errors = chromium.errors()
    assert errors == []
    assert [s[0] for s in sections] == [sid for sid, _ in SECTIONS]
    assert all(length > 50 for _, _, _, length in sections)
    assert all(svgs > 0 for _, _, svgs, _ in sections), sections
    assert all(h > 50 for h in charts)
    assert {k: int(v.replace(',', '')) for k, v in shown.items()} == stats
    assert {r[0]: [c.replace(',', '') for c in r[1:4]] for r in rows} == {
        name: [row['generated'], row['fetched'], row['parsed']]
        for name, row in listing.items()}
    assert {r[0]: (r[4], r[5]) for r in rows} == {
        name: (row['start'], row['end']) for name, row in listing.items()}
    assert (crawl['tmp'] / 'report.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
