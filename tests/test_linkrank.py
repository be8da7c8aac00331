"""Link analysis (webgraph, linkrank, scoreupdater, nodedumper): the rules as tables, the web graph
built incrementally, LinkRank against an independent PageRank, the whole chain on a crawl of the
test web (generate's order changes with the scores), and one small graph on the embedded Flink."""

import glob
import json
import os
import shutil

import networkx as nx
import numpy as np
import pytest

from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.linkrank import (Convergence, GraphRules, RankParams, aggregate,
                                                  counted_inlinks, first_outlinks, group_key,
                                                  limit_keys, linkrank_score, newest, outlink_share,
                                                  page_of, select_outlinks)
from beamcrawl.transforms.storage.layout import INLINKS, NODES, OUTLINKS, CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from tests.conftest import ROOT, read_db, read_parts, run_cli, write_seeds
from tests.linkgraphs import page, random_graph, write_segment
from tests.testweb import Page, html_page

DOMAINS = DomainHelper(['test'])
ALL = GraphRules(ignore_internal_host=False, ignore_internal_domain=False, limit_page=False,
                 limit_domain=False, delete_gone=False)
NUTCH = GraphRules(ignore_internal_host=True, ignore_internal_domain=True, limit_page=True,
                   limit_domain=True, delete_gone=False)


# --- the rules ---------------------------------------------------------------------------------

@pytest.mark.parametrize('url,page', [
    ('http://A.test/X?q=1', 'http://a.test/x'),
    ('http://a.test/x?q=1#frag', 'http://a.test/x#frag'),
    ('http://a.test/', 'http://a.test/'),
    ('https://a.test:8080/p', 'https://a.test:8080/p'),
    ('no scheme at all', None),
])
def test_page_of_is_nutchs_get_page(url, page):
    assert page_of(url) == page


def test_first_outlinks_keeps_the_first_anchor_of_each_target():
    assert first_outlinks([('http://b.test/', 'one'), ('http://c.test/', 'c'),
                           ('http://b.test/', 'two'), ('', 'empty')]) == \
        [('http://b.test/', 'one'), ('http://c.test/', 'c')]


def test_newest_parse_wins_and_equal_times_add_up():
    old, new = [('http://x.test/', 'old')], [('http://y.test/', 'new')]
    assert newest([(1, old), (2, new)]) == (2, new)
    assert newest([(2, new), (1, old)]) == (2, new)
    assert newest([(2, old), (2, new)]) == (2, old + new)
    assert newest([]) == (0, [])


A = 'http://www.a.test/page'
LINKS = [('http://www.a.test/other', 'same host'), ('http://blog.a.test/', 'same domain'),
         ('http://b.test/1?x=1', 'b one'), ('http://b.test/1?x=2', 'b one again, other query'),
         ('http://b.test/2', 'b two'), ('http://c.test/', 'c'), ('mailto:someone', 'no host')]


@pytest.mark.parametrize('rules,kept', [
    (ALL, [0, 1, 2, 3, 4, 5]),
    (NUTCH, [2, 5]),
    (GraphRules(True, False, False, False, False), [1, 2, 3, 4, 5]),
    (GraphRules(False, True, False, False, False), [2, 3, 4, 5]),
    (GraphRules(False, False, True, False, False), [0, 1, 2, 4, 5]),
    (GraphRules(False, False, False, True, False), [0, 2, 5]),
    (GraphRules(True, True, True, False, False), [2, 4, 5]),
])
def test_select_outlinks_as_nutchs_outlinkdb_reducer(rules, kept):
    assert select_outlinks(A, LINKS, rules, DOMAINS.url_domain) == [LINKS[i] for i in kept]


def _params(limit_page=True, limit_domain=True, damping=0.85, nodes=10):
    return RankParams.create(damping=damping, initial=1.0, nodes=nodes, limit_page=limit_page,
                             limit_domain=limit_domain)


@pytest.mark.parametrize('limit_page,limit_domain,counted', [
    (False, False, ['http://a.test/1', 'http://a.test/1?x', 'http://a.test/2', 'http://b.test/']),
    (True, False, ['http://a.test/1', 'http://a.test/2', 'http://b.test/']),
    (False, True, ['http://a.test/1', 'http://b.test/']),
    (True, True, ['http://a.test/1', 'http://b.test/']),
])
def test_counted_inlinks_in_source_order_one_per_page_and_domain(limit_page, limit_domain,
                                                                 counted):
    params = _params(limit_page, limit_domain)
    inlinks = [('http://b.test/', 0.5), ('http://a.test/2', 0.25), ('http://a.test/1?x', 0.125),
               ('http://a.test/1', 1.0)]
    got = counted_inlinks(inlinks, params, lambda s: limit_keys(s, params, DOMAINS.url_domain))
    assert [s for s, _ in got] == counted


@pytest.mark.parametrize('damping,nodes,total,score', [
    (0.85, 10, 0.0, 0.15 + 0.85 * 0.1),          # no inlink: (1 - d) + d * rank one
    (0.85, 10, 2.0, 0.15 + 0.85 * 2.1),
    (0.5, 4, 1.0, 0.5 + 0.5 * 1.25),
    (0.0, 4, 7.0, 1.0),
    (1.0, 2, 1.5, 2.0),
])
def test_linkrank_formula(damping, nodes, total, score):
    assert linkrank_score(total, _params(damping=damping, nodes=nodes)) == pytest.approx(score)


def test_outlink_share_and_bad_parameters():
    assert outlink_share(3.0, 2) == 1.5
    assert outlink_share(3.0, 0) == 3.0                # Nutch's Node.getOutlinkScore
    with pytest.raises(ValueError, match='damping'):
        _params(damping=1.5)
    with pytest.raises(ValueError, match='no node'):
        _params(nodes=0)


def test_convergence_and_grouping():
    a, b = Convergence(), Convergence()
    a.add(1.0, 1.5)
    a.add(1.0, 0.75)
    b.add(2.0, 2.0)
    both = a.merge(b)
    assert (both.l1, both.largest, both.nodes, both.total) == (0.75, 0.5, 3, 4.25)
    assert Convergence.from_dict(both.as_dict()).line(2, 5).startswith(
        'iteration 2/5: L1 change 0.75, max change 0.5, mean score 1.41667')
    assert group_key('http://WWW.A.test/x', 'host', DOMAINS.url_domain) == 'www.a.test'
    assert group_key('http://www.a.test/x', 'domain', DOMAINS.url_domain) == 'a.test'
    assert aggregate([1.0, 3.0, 2.0], 'sum') == 6.0
    assert aggregate([1.0, 3.0, 2.0], 'max') == 3.0
    assert aggregate([], 'max') == 0.0


# --- the web graph -----------------------------------------------------------------------------

def _nodes(crawl):
    return {r['url']: r for r in iter_records(CrawlLayout(str(crawl)).webgraphdb.part_files(NODES))}


def _outlinks(crawl):
    db = CrawlLayout(str(crawl)).webgraphdb
    return {r['url']: [o['to_url'] for o in r['outlinks']]
            for r in iter_records(db.part_files(OUTLINKS))}


def _inlinks(crawl):
    db = CrawlLayout(str(crawl)).webgraphdb
    return {r['url']: [i['from_url'] for i in r['inlinks']]
            for r in iter_records(db.part_files(INLINKS))}


def test_webgraph_is_incremental_newer_outlinks_replace_older_and_gone_pages_leave(tmp_path):
    one, both = str(tmp_path / 'one'), str(tmp_path / 'both')
    first = {0: [1, 2], 1: [0], 2: [0, 1]}
    second = {0: [3], 3: [1]}            # page 0 parsed again: its links are now just 3
    for crawl in (one, both):
        write_segment(crawl, first, segment='20261101000000', fetch_time=1000)
        write_segment(crawl, second, segment='20261102000000', fetch_time=2000)
    run_cli('webgraph', one, '20261101000000')
    assert _outlinks(one)[page(0)] == [page(1), page(2)]
    run_cli('webgraph', one)                                   # the segment not applied yet
    run_cli('webgraph', both)
    assert _outlinks(one) == _outlinks(both) == {
        page(0): [page(3)], page(1): [page(0)], page(2): [page(0), page(1)], page(3): [page(1)]}
    assert _inlinks(one) == _inlinks(both) == {
        page(0): [page(1), page(2)], page(1): [page(2), page(3)], page(3): [page(0)]}
    nodes = _nodes(one)
    assert nodes == _nodes(both)
    assert {u: (n['num_inlinks'], n['num_outlinks']) for u, n in nodes.items()} == {
        page(0): (2, 1), page(1): (2, 1), page(2): (0, 2), page(3): (1, 1)}
    assert run_cli('webgraph', one, check=False).returncode == 1     # nothing new

    # link.delete.gone: a segment whose fetch found page 2 gone removes its outlinks.
    gone = '20261103000000'
    layout = CrawlLayout(one)
    write_segment(one, {1: [0]}, segment=gone, fetch_time=3000)
    write_avro_file(f'{layout.segment_part(gone, "crawl_fetch")}/part-00000.avro',
                    CRAWL_DATUM_SCHEMA, [crawl_datum(page(2), 'fetch_gone', fetch_time=3000,
                                                     fetch_interval=86400)])
    out = run_cli('webgraph', one, '-D', 'link.delete.gone=true')
    assert page(2) not in _outlinks(one) and page(2) not in _nodes(one), out.stderr
    assert 'webgraph.gone_pages' in out.stderr


def test_webgraph_filters_and_normalizes_when_asked(tmp_path):
    from beamcrawl.transforms.storage.records import PARSE_DATA_SCHEMA, parse_data
    links = [('http://img.test/pic.gif', 'a picture'), ('HTTP://Other.TEST:80/a/../b', 'b')]
    for name, options in (('plain', []), ('asked', ['--filter', '--normalize'])):
        crawl = str(tmp_path / name)
        layout = CrawlLayout(crawl)
        segment = write_segment(crawl, {0: [1]}, parts=1)   # its parse_data replaced:
        write_avro_file(f'{layout.segment_part(segment, "parse_data")}/part-00000.avro',
                        PARSE_DATA_SCHEMA, [parse_data('http://from.test/', title='',
                                                       parse_status='success', outlinks=links)])
        run_cli('webgraph', crawl, *options)
    assert _outlinks(tmp_path / 'plain') == {'http://from.test/': [u for u, _ in links]}
    assert _outlinks(tmp_path / 'asked') == {'http://from.test/': ['http://other.test/b']}


# --- LinkRank against an independent PageRank --------------------------------------------------

def _linkrank(crawl, graph, iterations, *extra):
    """The node scores of `graph` after webgraph and linkrank (`extra`: options of both), and
    linkrank's log."""
    write_segment(crawl, graph)
    run_cli('webgraph', crawl, *extra)
    proc = run_cli('linkrank', crawl, '-D', f'link.analyze.num.iterations={iterations}', *extra)
    return {u: n['inlink_score'] for u, n in _nodes(crawl).items()}, proc.stderr


def _matrix(graph):
    """(node URLs, M) with M[u, v] = 1 / outdegree(u) for each link u → v, built by networkx."""
    g = nx.DiGraph()
    g.add_edges_from((page(s), page(t)) for s, targets in graph.items() for t in targets)
    urls = sorted(g.nodes)
    adjacency = nx.to_numpy_array(g, nodelist=urls)
    degrees = adjacency.sum(axis=1, keepdims=True)
    return urls, g, np.divide(adjacency, degrees, out=np.zeros_like(adjacency),
                              where=degrees > 0)


@pytest.mark.slow
def test_linkrank_agrees_with_networkx_pagerank_within_1e_4(tmp_path):
    """Compared: beamcrawl's scores after 40 iterations and the fixed point of Nutch's
    formula computed from networkx's PageRank. On a graph where every page has outlinks,
    Nutch's unnormalized fixed point s = c + d·Mᵀs (c = 1 - d + d/N) sums to N·c/(1 - d), and
    s / sum(s) is exactly the PageRank networkx defines (damping d, uniform teleport), so
    s = pagerank · N·c/(1 - d). networkx's Google matrix and numpy's linear solver share no
    code with the pipeline, and the pipeline stops at 40 iterations, not at the fixed point:
    agreeing within 1e-4 needs both the formula and the convergence to be right. The same
    iterations run by numpy from Nutch's recurrence agree to rounding."""
    graph = random_graph(3000, 5, seed=7, skew=1.0)
    scores, log = _linkrank(str(tmp_path / 'crawl'), graph, 40, '-D', 'webgraph.partitions=2')
    urls, g, m = _matrix(graph)
    n, d = len(urls), 0.85
    assert len(scores) == n == 3000
    google = nx.google_matrix(g, alpha=d, nodelist=urls)
    # the stationary distribution: x (I - G) = 0 with sum(x) = 1
    system = (np.eye(n) - google).T
    system[-1, :] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    pagerank = np.linalg.solve(system, rhs)
    c = (1 - d) + d / n
    expected = pagerank * n * c / (1 - d)
    got = np.array([scores[u] for u in urls])
    assert np.abs(got - expected).max() < 1e-4
    assert got.max() / got.min() > 5                          # the scores do differ
    recurrence = np.ones(n)
    for _ in range(40):
        recurrence = c + d * m.T @ recurrence
    assert np.abs(got - recurrence).max() < 1e-9

    # The log: one line per iteration, the changes shrinking.
    lines = [line for line in log.splitlines() if 'linkrank: iteration' in line]
    assert len(lines) == 40 and 'iteration 40/40' in lines[-1]
    changes = [float(line.split('max change ')[1].split(',')[0]) for line in lines]
    assert changes[-1] < 1e-5 < changes[0]
    note = json.loads(open(glob.glob(str(tmp_path / 'crawl/webgraphdb/current/_linkrank.json'))[0]
                           ).read())
    assert [i['max'] for i in note['iterations']] == pytest.approx(changes, rel=1e-5)


def test_linkrank_loses_the_mass_of_pages_without_outlinks_as_nutch(tmp_path):
    """Pages without outlinks give nothing (Nutch's Inverter skips them): the scores are those
    of the linear system (I - d·Mᵀ) s = c with M's empty rows, solved by numpy, here after the
    default 10 iterations, compared with the same 10 steps."""
    graph = random_graph(400, 4, seed=3, dangling=60)
    scores, _ = _linkrank(str(tmp_path / 'crawl'), graph, 10)
    urls, _, m = _matrix(graph)
    n, d = len(urls), 0.85
    c = (1 - d) + d / n
    steps = np.ones(n)
    for _ in range(10):
        steps = c + d * m.T @ steps
    got = np.array([scores[u] for u in urls])
    assert np.abs(got - steps).max() < 1e-9
    fixed = np.linalg.solve(np.eye(n) - d * m.T, np.full(n, c))
    assert got.sum() < n and fixed.sum() < n * c / (1 - d) - 1     # mass is lost


# --- the chain on a crawl of the test web -------------------------------------------------------

NOW = '2026-11-20T00:00:00Z'
LATER = '2026-12-20T00:00:00Z'
SPOKES = ('s1.test', 's2.test', 's3.test', 's4.test')


@pytest.fixture(scope='module')
def linked_site(testweb):
    """big.test's home has many internal pages linking to it (OPIC likes that; LinkRank ignores
    internal links); hub.test's home gets a link from every spoke site's home."""
    testweb.add('big.test', '/robots.txt', Page(status=404))
    internal = [f'/p{i}' for i in range(8)]
    testweb.add('big.test', '/', html_page('big', links=internal + ['http://s1.test/']))
    for path in internal:
        testweb.add('big.test', path, html_page(f'big {path}', links=['/']))
    testweb.add('hub.test', '/robots.txt', Page(status=404))
    testweb.add('hub.test', '/', html_page('hub', links=['/about']))
    testweb.add('hub.test', '/about', html_page('about hub', links=['/']))
    for host in SPOKES:
        testweb.add(host, '/robots.txt', Page(status=404))
        testweb.add(host, '/', html_page(host, links=['http://hub.test/', '/local']))
        testweb.add(host, '/local', html_page(f'{host} local', links=['/']))


def _conf(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
            '-D', 'domain.extra.suffixes=test', '-D', 'db.fetch.interval.default=86400']


def _generated(crawl):
    layout = CrawlLayout(crawl)
    segment = layout.segment_names()[-1]
    return [r['url'] for r in read_parts(layout.part_files(segment, 'crawl_generate'))]


@pytest.mark.slow
def test_the_chain_from_the_command_line_changes_what_generate_picks(web, linked_site,
                                                                     tmp_path):
    crawl = str(tmp_path / 'crawl')
    # big.test's internal pages are seeds too: each gives its OPIC score to big.test's home.
    seeds = write_seeds(tmp_path / 'seeds', ['http://big.test/', 'http://hub.test/'] +
                        [f'http://big.test/p{i}' for i in range(8)] +
                        [f'http://{h}/' for h in SPOKES])
    run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', '--now', NOW,
            '--round-interval', '3600', *_conf(web))
    run_cli('webgraph', crawl, *_conf(web))
    nodes = _nodes(crawl)
    hub, big = 'http://hub.test/', 'http://big.test/'
    # Internal links are not in the graph (link.ignore.internal.host/domain).
    assert 'http://big.test/p0' not in nodes and 'http://s1.test/local' not in nodes
    assert nodes[hub]['num_inlinks'] == len(SPOKES) and nodes[big]['num_outlinks'] == 1
    assert run_cli('scoreupdater', crawl, check=False).returncode == 2     # no scores yet
    out = run_cli('linkrank', crawl, *_conf(web))
    assert 'linkrank: iteration 10/10: L1 change' in out.stderr
    scores = {u: n['inlink_score'] for u, n in _nodes(crawl).items()}
    assert max(scores, key=scores.get) == hub

    before = str(tmp_path / 'before')
    shutil.copytree(crawl, before)
    out = run_cli('scoreupdater', crawl, *_conf(web))
    db = read_db(crawl)
    for url, record in db.items():
        expected = scores.get(url, 0.0)          # link.score.updater.clear.score for the rest
        assert record['score'] == pytest.approx(expected, rel=1e-6), url
    assert db['http://big.test/p0']['score'] == 0.0
    assert {r['status'] for r in db.values()} == {r['status'] for r in read_db(before).values()}

    # generate sorts by score: OPIC's favourite before, LinkRank's after.
    for where in (before, crawl):
        run_cli('generate', where, '--top-n', '1', '--now', LATER, *_conf(web))
    assert _generated(crawl) == [hub]
    assert _generated(before) != [hub]

    # index boosts by the crawldb score (indexer.score.power 0.5): LinkRank's now.
    index = tmp_path / 'index'
    run_cli('index', crawl, '--format', 'jsonl', '--output', str(index), '--no-dedup')
    documents = {d['id']: d for f in glob.glob(str(index / 'part-*.jsonl'))
                 for d in map(json.loads, open(f, encoding='utf-8'))}
    assert documents[hub]['boost'] == pytest.approx(scores[hub] ** 0.5, rel=1e-5)
    assert documents['http://big.test/p0']['boost'] == 0.0

    # nodedumper: the top scores, and the inlinks summed per host.
    top = tmp_path / 'top.txt'
    run_cli('nodedumper', crawl, '--scores', '--top-n', '2', str(top))
    lines = top.read_text().splitlines()
    assert len(lines) == 2 and lines[0].split('\t')[0] == hub
    assert float(lines[0].split('\t')[1]) == pytest.approx(scores[hub], rel=1e-5)
    hosts = tmp_path / 'hosts.txt'
    run_cli('nodedumper', crawl, '--inlinks', '--host', 'sum', str(hosts))
    per_host = dict(line.split('\t') for line in hosts.read_text().splitlines())
    assert float(per_host['hub.test']) == len(SPOKES)
    eff = tmp_path / 'eff.txt'
    run_cli('nodedumper', crawl, '--outlinks', '--domain', 'max', '--top-n', '1', '--as-eff',
            str(eff))
    assert eff.read_text().strip().endswith('=1')


def test_linkrank_killed_while_installing_leaves_a_readable_graph(tmp_path):
    """SIGKILL after the previous version was moved aside, before the new one is in place
    (install.swapped: observed, not timed): readers fall back to old/, the next linkrank moves
    it back and installs its own version, with the same scores as an undisturbed run."""
    import subprocess
    import sys

    from tests.conftest import cli_env, kill_when
    crawl = str(tmp_path / 'crawl')
    graph = random_graph(60, 3, seed=5)
    write_segment(crawl, graph)
    run_cli('webgraph', crawl)
    before = _nodes(crawl)
    hold = str(tmp_path / 'held')
    proc = subprocess.Popen(
        [sys.executable, '-m', 'beamcrawl.pipelines.cli', 'linkrank', crawl], cwd=ROOT,
        env=cli_env({'BEAMCRAWL_HOLD_AT': 'install.swapped', 'BEAMCRAWL_HOLD_FILE': hold}),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_when(proc, lambda: os.path.exists(hold), 'linkrank reached install.swapped')
    db = CrawlLayout(crawl).webgraphdb
    assert not os.path.exists(db.current) and _nodes(crawl) == before     # old/ is read
    run_cli('linkrank', crawl)
    scores = {u: n['inlink_score'] for u, n in _nodes(crawl).items()}
    reference, _ = _linkrank(str(tmp_path / 'reference'), graph, 10)
    assert scores == reference and set(scores) == set(before)


def test_commands_on_a_crawl_without_a_web_graph_give_one_line(tmp_path):
    crawl = str(tmp_path / 'crawl')
    write_segment(crawl, {0: [1]})
    for args in (['linkrank', crawl], ['nodedumper', crawl, '--scores', str(tmp_path / 'o')]):
        proc = run_cli(*args, check=False)
        assert proc.returncode == 2 and 'run webgraph first' in proc.stderr
        assert 'Traceback' not in proc.stderr
    proc = run_cli('linkrank', crawl, '-D', 'link.analyze.damping.factor=1.5', check=False)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr


# --- Flink ------------------------------------------------------------------------------------

@pytest.mark.flink
@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.xdist_group('flink')
def test_linkrank_on_the_embedded_flink_equals_the_local_runner(tmp_path):
    from beamcrawl.transforms.runners.localflink import LocalFlink
    flink = LocalFlink(os.path.join(ROOT, '.flink'))
    flink.prepare()
    graph = random_graph(200, 3, seed=11, dangling=10)
    local, _ = _linkrank(str(tmp_path / 'local'), graph, 3)
    beam = ['--runner', 'FlinkRunner', '--flink_master', '[local]',
            '--flink_job_server_jar', flink.jar]
    crawl = str(tmp_path / 'flink')
    write_segment(crawl, graph)
    run_cli('webgraph', crawl, *beam, timeout=900)
    run_cli('linkrank', crawl, '-D', 'link.analyze.num.iterations=3', *beam, timeout=900)
    on_flink = {u: n['inlink_score'] for u, n in _nodes(crawl).items()}
    assert on_flink == local and len(local) > 150
