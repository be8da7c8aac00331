"""The host database (docs/hostdb.md): its policy in tables, then updatehostdb, readhostdb,
generate --hostdb and sitemap --from-hostdb from the command line on the loopback test web."""

import csv
import dataclasses
import glob
import json
import os
import shutil

import pytest

from beamcrawl.transforms.policy import hostdb as policy
from beamcrawl.transforms.policy.expressions import Expression, ExpressionError, Missing
from beamcrawl.transforms.policy.generate import assign_segments
from beamcrawl.transforms.policy.politeness import FetchQueues
from tests.conftest import logged_counters, read_db, read_parts, run_cli, write_seeds
from tests.testweb import Page, html_page

DAY = 86_400_000
NOW = 1_790_000_000_000

# -- the expression language -----------------------------------------------------------------


@pytest.mark.parametrize('text, env, expected', [
    ('fetched > 10', {'fetched': 11}, True),
    ('fetched > 10', {'fetched': 10}, False),
    ('fetched >= 10 and gone == 0', {'fetched': 10, 'gone': 0}, True),
    ('fetched >= 10 && gone == 0', {'fetched': 10, 'gone': 1}, False),
    ('fetched < 1 or gone > 2', {'fetched': 5, 'gone': 3}, True),
    ('not fetched', {'fetched': 0}, True),
    ('!(a == 1) || b', {'a': 1, 'b': 0}, False),
    ('1 + 2 * 3', {}, 7),
    ('(1 + 2) * 3', {}, 9),
    ('10 / 4', {}, 2.5),
    ('7 % 3', {}, 1),
    ('-a + 1', {'a': 3}, -2),
    ('a > 1 ? 50 : 10', {'a': 2}, 50),
    ('a > 1 ? 50 : a > 0 ? 20 : 10', {'a': 1}, 20),
    ('avg._rs_ * 2', {'avg._rs_': 150.0}, 300.0),
    ('true and 1.5e3 == 1500', {}, True),
    ('a != b', {'a': 1, 'b': 2}, True),
])
def test_expressions_evaluate(text, env, expected):
    assert Expression(text).evaluate(env) == expected


@pytest.mark.parametrize('text, message', [
    ('', 'empty'),
    ('__import__("os")', '"os"'),             # strings are not part of the language
    ('fetched.__class__', 'unknown name'),
    ('a(1)', 'no function calls'),
    ('open(1)', 'no function calls'),
    ('* 2', 'expected a number, a name or'),
    ('a = 1', "column 3: '= 1' is not part"),
    ('a =~ 1', "column 3: '=~ 1' is not part"),
    ('1 < a < 3', 'chained comparison'),
    ('(1 + 2', "expected ')'"),
    ('1 +', 'the end'),
    ('fetched ; 1', "column 9: '; 1' is not part"),
    ('x' * 2001, 'longer than'),
    ('(' * 60 + '1' + ')' * 60, 'nested'),
    ('a ? 1', "expected ':'"),
])
def test_expressions_refuse_anything_else_with_where(text, message):
    with pytest.raises(ExpressionError) as e:
        Expression(text, lambda name: name in ('a', 'fetched'))
    assert message in str(e.value)


def test_a_name_the_host_lacks_is_missing_not_zero():
    expr = Expression('avg._rs_ > 100')
    with pytest.raises(Missing):
        expr.evaluate({})
    assert expr.test({}) is False and expr.number({}) is None
    assert Expression('1 / a').number({'a': 0}) is None


# -- fetch outcomes and the failure run --------------------------------------------------------

@pytest.mark.parametrize('status, protocol, expected', [
    ('fetch_success', 'success', policy.ANSWERED),
    ('fetch_gone', 'notfound', policy.ANSWERED),
    ('fetch_gone', 'robots_denied', policy.ANSWERED),
    ('fetch_redir_perm', 'moved', policy.ANSWERED),
    ('fetch_notmodified', 'notmodified', policy.ANSWERED),
    ('fetch_retry', 'exception', 'failed'),
    ('fetch_retry', 'failed', 'failed'),
    ('fetch_retry', 'notfetching', None),
    ('fetch_retry', 'blocked', None),
    ('linked', None, None),
])
def test_fetch_outcome(status, protocol, expected):
    record = {'status': status, 'protocol_status': protocol, 'metadata': {}}
    assert policy.fetch_outcome(record) == expected


@pytest.mark.parametrize('start, events, expected', [
    ((0, 0, 0), [], (0, 0, 0, 0)),
    ((0, 0, 0), [(('s1', 1), 'failed', 10), (('s1', 2), 'failed', 10)], (2, 0, 10, 2)),
    # an answer ends the run, whatever the order the events come in
    ((3, 5, 7), [(('s2', 9), 'failed', 20), (('s2', 3), policy.ANSWERED, 20),
                 (('s1', 1), 'failed', 15)], (1, 20, 20, 3)),
    ((3, 5, 7), [(('s1', 1), policy.ANSWERED, 15)], (0, 15, 7, 1)),
    ((2, 5, 7), [(('s1', 1), 'failed', 15)], (3, 5, 15, 1)),
])
def test_fold_fetches(start, events, expected):
    out = policy.fold_fetches(policy.FetchFold(*start), events)
    assert (out.failures, out.last_success, out.last_failure, out.attempts) == expected


# -- host facts --------------------------------------------------------------------------------

SETTINGS = policy.HostDbSettings(numeric_fields=('_rs_',), string_fields=('Content-Type',),
                                 percentiles=(50, 90), recheck_interval=DAY, sitemaps_max=2)


def _rec(status, retries=0, **meta):
    return {'status': status, 'retries': retries, 'metadata': meta}


def test_host_facts_count_aggregate_and_merge_alike():
    records = [
        (_rec('db_fetched', _rs_='100', **{'Content-Type': 'text/html', 'fetch.delay': '5.0',
                                            'fetch.end': '2000'}), 'http://h'),
        (_rec('db_fetched', _rs_='300', **{'Content-Type': 'text/html', 'fetch.delay': '2.0',
                                            'fetch.end': '1000'}), 'http://h'),
        (_rec('db_notmodified', _rs_='200', **{'Content-Type': 'text/plain'}), 'https://h'),
        (_rec('db_unfetched', 2, _rs_='9999'), 'http://h'),      # not aggregated: not fetched
        (_rec('db_gone', 0, _pst_='robots_denied'), 'http://h'),
        (_rec('db_fetched', _rs_='nan'), 'http://h'),            # not a finite number: left out
    ]
    whole = policy.HostFacts()
    for record, site in records:
        whole.add(record, site, SETTINGS)
    halves = [policy.HostFacts(), policy.HostFacts()]
    for i, (record, site) in enumerate(records):
        halves[i % 2].add(record, site, SETTINGS)
    merged = halves[0].merge(halves[1])
    for facts in (whole, merged):
        assert facts.counts == {'fetched': 3, 'not_modified': 1, 'unfetched': 1, 'gone': 1}
        assert (facts.retried, facts.robots_denied, facts.homepage()) == (1, 1, 'http://h/')
        assert facts.delay == (2000, 5.0)          # the newest request's delay
        assert facts.metadata(SETTINGS.percentiles) == {
            'avg._rs_': 200.0, 'min._rs_': 100.0, 'max._rs_': 300.0, 'pct50._rs_': 200.0,
            'pct90._rs_': 300.0, 'Content-Type.text/html': 2.0, 'Content-Type.text/plain': 1.0}


S1, S2, S3 = 'http://h/s1.xml', 'http://h/s2.xml', 'http://other/s3.xml'


@pytest.mark.parametrize('sitemaps, kept, expected', [
    ([], 10, (0, 0, [])),                                 # a host no sitemap listed
    ([None, None], 10, (0, 0, [])),                       # URLs not injected from a sitemap
    ([S1, None, S1], 10, (2, 1, [S1])),
    ([S3, S1, S1, S2, S2, S2], 10, (6, 3, [S2, S1, S3])),  # the ones that gave most URLs first
    ([S3, S1, S1, S2, S2, S2], 2, (6, 3, [S2, S1])),       # hostdb.sitemaps.max: all counted
    ([S3, S2, S1], 2, (3, 3, [S1, S2])),                   # ties: by URL
    ([S1, S2], 0, (2, 2, [])),
    (['', S1], 10, (1, 1, [S1])),                         # an empty value is no sitemap
])
def test_host_facts_count_urls_from_sitemaps_and_keep_the_largest(sitemaps, kept, expected):
    records = [_rec('db_unfetched', **({} if sm is None else {'_sitemap_': sm}))
               for sm in sitemaps]
    whole, halves = policy.HostFacts(), [policy.HostFacts(), policy.HostFacts()]
    for i, record in enumerate(records):
        whole.add(record, 'http://h', SETTINGS)
        halves[i % 2].add(record, 'http://h', SETTINGS)
    for facts in (whole, halves[0].merge(halves[1])):
        got = facts.sitemap_facts(kept)
        assert (got['sitemap_urls'], got['sitemap_count'], got['sitemaps']) == expected
    datum = policy.host_datum('h', None, whole, policy.FetchFold(),
                              dataclasses.replace(SETTINGS, sitemaps_max=kept))
    assert (datum['sitemap_urls'], datum['sitemap_count'], datum['sitemaps']) == expected
    env = policy.expression_env(datum, NOW)
    assert (env['sitemap_urls'], env['sitemap_count']) == expected[:2]


def test_sitemap_facts_are_recounted_not_carried_over():
    """Like the status counts, the sitemap facts come from the crawldb as it is now: a host whose
    URLs left the crawldb keeps its record with none."""
    old = dict(policy.new_datum('h'), sitemap_urls=5, sitemap_count=1, sitemaps=[S1])
    datum = policy.host_datum('h', old, None, policy.FetchFold(), SETTINGS)
    assert (datum['sitemap_urls'], datum['sitemap_count'], datum['sitemaps']) == (0, 0, [])


@pytest.mark.parametrize('hist, p, expected', [
    ({1.0: 1}, 99, 1.0),
    ({1.0: 1, 2.0: 1, 3.0: 1, 4.0: 1}, 50, 2.0),
    ({1.0: 1, 2.0: 1, 3.0: 1, 4.0: 1}, 75, 3.0),
    ({1.0: 1, 2.0: 1, 3.0: 1, 4.0: 1}, 76, 4.0),
    ({10.0: 98, 500.0: 2}, 99, 500.0),
    ({10.0: 98, 500.0: 2}, 98, 10.0),
])
def test_percentile_is_nearest_rank(hist, p, expected):
    assert policy.percentile(hist, p) == expected


def test_host_datum_carries_failures_and_dns_over_and_counts_anew():
    old = dict(policy.new_datum('h'), dns_failures=2, last_check=5, fetched=99,
               homepage_url='https://h/')
    datum = policy.host_datum('h', old, None, policy.FetchFold(4, 1, 9, 4), SETTINGS)
    assert (datum['fetched'], datum['dns_failures'], datum['last_check'], datum['homepage_url'],
            datum['fetch_failures'], datum['last_success'], datum['last_failure']) == \
        (0, 2, 5, 'https://h/', 4, 1, 9)


# -- resolution --------------------------------------------------------------------------------

def _checks(**flags):
    return policy.HostDbSettings((), (), (), recheck_interval=DAY, sitemaps_max=10, **flags)


@pytest.mark.parametrize('dns, last_check, now, flags, expected', [
    (0, 0, 0, {'check_new': True}, True),
    (0, 0, 0, {'check_known': True, 'check_failed': True}, False),   # new: only check_new
    (0, 100, 100 + DAY, {'check_known': True}, True),
    (0, 100, 99 + DAY, {'check_known': True}, False),                # not due
    (0, 100, 99 + DAY, {'check_known': True, 'force': True}, True),
    (0, 100, 100 + DAY, {'check_failed': True}, False),             # known, not failed
    (2, 100, 100 + 3 * DAY, {'check_failed': True}, True),          # interval × (failures + 1)
    (2, 100, 99 + 3 * DAY, {'check_failed': True}, False),
    (2, 100, 100 + 3 * DAY, {'check_known': True}, False),
])
def test_should_check(dns, last_check, now, flags, expected):
    datum = dict(policy.new_datum('h'), dns_failures=dns, last_check=last_check)
    assert policy.should_check(datum, _checks(**flags), now) is expected


@pytest.mark.parametrize('dns, last_check, ok, outcome, failures', [
    (0, 0, True, 'new_known_host', 0),
    (0, 0, False, 'new_unknown_host', 1),
    (0, 5, True, 'existing_known_host', 0),
    (3, 5, True, 'rediscovered_host', 0),
    (3, 5, False, 'existing_unknown_host', 4),
])
def test_resolved(dns, last_check, ok, outcome, failures):
    datum = dict(policy.new_datum('h'), dns_failures=dns, last_check=last_check)
    new, said = policy.resolved(datum, ok, 42)
    assert (said, new['dns_failures'], new['last_check']) == (outcome, failures, 42)


# -- generate's per-host decisions -------------------------------------------------------------

@pytest.mark.parametrize('dns, fetch_failures, last_failure, now, limit, expected', [
    (0, 0, 0, 10, 3, ''),
    (4, 0, 0, 10, 3, 'dns_failures'),
    (3, 0, 0, 10, 3, ''),
    (0, 4, 10, 10 + DAY - 1, 3, 'fetch_failures'),
    (0, 4, 10, 10 + DAY, 3, ''),                       # tried again after the interval
    (0, 3, 10, 11, 3, ''),
    (9, 9, 10, 11, -1, ''),                            # -1: never
])
def test_skip_reason(dns, fetch_failures, last_failure, now, limit, expected):
    datum = dict(policy.new_datum('h'), dns_failures=dns, fetch_failures=fetch_failures,
                 last_failure=last_failure)
    rules = policy.HostRules(skip_failures=limit, recheck_interval=DAY)
    assert policy.skip_reason(datum, rules, now) == expected


def test_host_plan_takes_each_host_from_its_own_datum_only():
    """Nutch's quirk (values of one host leak onto the next hosts absent from the hostdb, or
    whose expression fails) is not copied: such hosts keep the defaults."""
    rules = policy.HostRules(
        skip_failures=3, recheck_interval=DAY,
        max_count=Expression('fetched > 10 ? 5 : avg._rs_ > 100 ? 1 : 0'),
        fetch_delay=Expression('avg._rs_ * 10'))
    datums = [dict(policy.new_datum('big'), fetched=20, metadata={'avg._rs_': 50.0}),
              dict(policy.new_datum('lacking'), fetched=1),        # no avg._rs_
              dict(policy.new_datum('slow'), fetched=1, metadata={'avg._rs_': 300.0}),
              dict(policy.new_datum('down'), fetched=50, fetch_failures=9, last_failure=NOW)]
    plan = policy.host_plan(datums, rules, NOW)
    assert plan.skip == {'down': 'fetch_failures'}
    assert plan.max_count == {'big': 5, 'slow': 1}
    assert plan.delay_ms == {'big': 500, 'slow': 3000}
    assert plan.undefined == 1


def test_expression_env_has_nutch_names_and_ours():
    datum = dict(policy.new_datum('h'), fetched=3, not_modified=2, redir_temp=1, redir_perm=4,
                 gone=5, dns_failures=1, metadata={'Content-Type.text/html': 3.0})
    env = policy.expression_env(datum, NOW)
    assert (env['ok'], env['redirs'], env['numRecords'], env['num_records'], env['notModified'],
            env['dnsFailures'], env['now'], env['Content_Type.text_html']) == \
        (5, 5, 15, 15, 2, 1, NOW, 3.0)


@pytest.mark.parametrize('host_max, max_count, expected', [
    (None, 1, {'a1': 1, 'b1': 1}),                  # generate.max.count alone, as before
    ({'a': 2}, -1, {'a1': 1, 'a2': 1, 'b1': 1, 'b2': 1, 'b3': 1}),
    ({'a': 2}, 1, {'a1': 1, 'a2': 1, 'b1': 1}),     # b keeps generate.max.count
    ({'a': 0, 'b': 1}, 2, {'a1': 1, 'a2': 1, 'a3': 1, 'b1': 1}),   # 0: unlimited, as Nutch
])
def test_assign_segments_with_per_host_max(host_max, max_count, expected):
    items = [('a', 'a1'), ('b', 'b1'), ('a', 'a2'), ('b', 'b2'), ('a', 'a3'), ('b', 'b3')]
    out = assign_segments(items, top_n=None, max_count=max_count, max_segments=1,
                          host_max=host_max)
    assert out.segments == expected


def test_the_variable_delay_is_taken_off_and_sets_its_queue_once():
    record = {'url': 'http://h/', 'metadata': {policy.VARIABLE_FETCH_DELAY: '2500', 'x': '1'}}
    clean, delay = policy.take_variable_delay(record)
    assert (clean['metadata'], delay, record['metadata']['x']) == ({'x': '1'}, 2.5, '1')
    assert policy.take_variable_delay(clean) == (clean, None)
    assert policy.take_variable_delay(
        {'metadata': {policy.VARIABLE_FETCH_DELAY: 'soon'}})[1] is None
    queues = FetchQueues(server_delay=5.0, min_delay=0.0, threads_per_queue=1, max_exceptions=-1,
                         exception_delay=0.0)
    queues.add('h', 'first', 0.0, delay=2.5)
    queues.add('h', 'second', 0.0, delay=9.0)     # the first item's value holds
    queues.add('g', 'other', 0.0)
    assert (queues.queues['h'].crawl_delay, queues.queues['g'].crawl_delay) == (2.5, 5.0)


# -- from the command line, on the loopback test web -------------------------------------------

SITEMAP = ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
           '<url><loc>http://maps-hdb.test/from-sitemap</loc></url></urlset>').encode()


@pytest.fixture
def hostdb_web(web):
    """The test web plus: a host whose every page fails (503), a host with a sitemap named by its
    robots.txt, and a host with several pages never linked (injected later)."""
    web.add('down-hdb.test', '/', Page(status=503, body=b'down'))
    web.add('down-hdb.test', '/x', Page(status=503, body=b'down'))
    web.add('maps-hdb.test', '/robots.txt', Page(
        body=b'User-agent: *\nDisallow:\nSitemap: http://maps-hdb.test/maps/s.xml\n',
        content_type='text/plain'))
    web.add('maps-hdb.test', '/', html_page('maps home'))
    web.add('maps-hdb.test', '/maps/s.xml', Page(body=SITEMAP, content_type='application/xml'))
    web.add('maps-hdb.test', '/from-sitemap', html_page('from the sitemap'))
    for page in ('/p1', '/p2', '/p3'):
        web.add('many-hdb.test', page, html_page(page))
    return web


def _conf(web, *more):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
            '-D', 'domain.extra.suffixes=test', *more]


def _get(crawl, host):
    proc = run_cli('readhostdb', crawl, '--get', host)
    return json.loads(proc.stdout)


def _crawled(tmp_path, web):
    """Two rounds two days apart (a failed fetch is retried after a day), the hostdb updated
    after each and used by the second generate (two failures in a row do not skip a host): the
    failing host has failed four times in a row."""
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://www.a.test/', 'http://b.test/',
                                             'http://down-hdb.test/', 'http://down-hdb.test/x',
                                             'http://maps-hdb.test/'])
    proc = run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', '--hostdb',
                   '--now', str(NOW), '--round-interval', str(2 * 86400), *_conf(web))
    assert proc.stderr.count('== updatehostdb') == 2
    generates = [line for line in proc.stderr.splitlines() if line.startswith('== generate')]
    assert ['--hostdb' in line for line in generates] == [False, True]   # once there is one
    return crawl


def test_updatehostdb_then_readhostdb_and_generate_skip_the_failing_host(hostdb_web, tmp_path):
    crawl = _crawled(tmp_path, hostdb_web)
    db = read_db(crawl)
    down = _get(crawl, 'down-hdb.test')
    assert (down['unfetched'], down['fetched'], down['connection_failures'],
            down['fetch_failures'], down['last_success'], down['last_failure']) == \
        (2, 0, 2, 4, 0, NOW + 2 * DAY)
    a = _get(crawl, 'www.a.test')
    a_urls = [r for u, r in db.items() if u.startswith('http://www.a.test/')]
    for status, field in policy.STATUS_FIELDS.items():
        assert a[field] == sum(r['status'] == status for r in a_urls), field
    assert a['gone'] == a['robots_denied'] == 1            # /private/x, refused by robots.txt
    fetches = read_parts(glob.glob(f'{crawl}/segments/*/crawl_fetch/*.avro'))
    assert (a['fetch_failures'], a['last_success'], a['homepage_url']) == \
        (0, max(r['fetch_time'] for r in fetches if r['url'].startswith('http://www.a.test/')
                and r['status'] == 'fetch_success'), 'http://www.a.test/')
    assert a['metadata']['min._rs_'] <= a['metadata']['pct50._rs_'] <= a['metadata']['max._rs_']
    assert a['metadata']['Content-Type.text/html'] == a['fetched'] + a['not_modified']

    hosts = run_cli('readhostdb', crawl, '--hostnames').stdout.split()
    assert hosts == sorted({u.split('/')[2] for u in db})
    failing = run_cli('readhostdb', crawl, '--hostnames', '--expr',
                      'fetch_failures > 3 and connectionFailures >= 1').stdout.split()
    assert failing == ['down-hdb.test']
    run_cli('readhostdb', crawl, '--dump', str(tmp_path / 'dump'), '--format', 'csv')
    with open(tmp_path / 'dump' / 'part-00000.csv', encoding='utf-8') as f:
        rows = list(csv.DictReader(f))
    assert [r['host'] for r in rows] == hosts
    assert {r['host']: int(r['fetch_failures']) for r in rows}['down-hdb.test'] == 4

    # generate: the failing host's URLs are due again (a day after their last failure); without
    # the hostdb they are selected, with it they are not, until hostdb.recheck.interval passed
    at = str(NOW + 3 * DAY)
    plain = run_cli('generate', crawl, '--now', at, *_conf(hostdb_web))
    urls = {r['url'] for r in read_parts(glob.glob(plain.stdout.split()[0] +
                                                   '/crawl_generate/*.avro'))}
    assert {'http://down-hdb.test/', 'http://down-hdb.test/x'} <= urls
    shutil.rmtree(plain.stdout.split()[0])
    wait = ['-D', f'hostdb.recheck.interval={2 * DAY}']
    skipping = run_cli('generate', crawl, '--hostdb', '--now', at, *wait, *_conf(hostdb_web),
                       check=False)
    assert skipping.returncode == 1 and not skipping.stdout      # only they were due
    counters = logged_counters(skipping.stderr)
    assert counters['generate.rejected.host_skipped'] == 2
    assert counters['generate.hostdb.skipped_hosts.fetch_failures'] == 1
    later = run_cli('generate', crawl, '--hostdb', '--now', str(NOW + 4 * DAY), *wait,
                    *_conf(hostdb_web))
    assert 'generate.rejected.host_skipped' not in logged_counters(later.stderr)
    assert {'http://down-hdb.test/', 'http://down-hdb.test/x'} <= {
        r['url'] for r in read_parts(glob.glob(later.stdout.split()[0] + '/crawl_generate/*'))}


def test_generate_takes_per_host_max_count_and_fetch_delay_to_the_fetcher(hostdb_web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://many-hdb.test/p1', 'http://many-hdb.test/p2',
                                             'http://many-hdb.test/p3', 'http://b.test/'])
    conf = _conf(hostdb_web, '-D', 'generate.max.count.expr=unfetched >= 3 ? 2 : -1',
                 '-D', 'generate.fetch.delay.expr=unfetched >= 3 ? 1234 : -1')
    run_cli('inject', crawl, seeds, '--now', str(NOW), *conf)
    assert 'lookups' not in run_cli('updatehostdb', crawl, '--now', str(NOW), *conf).stdout
    made = run_cli('generate', crawl, '--hostdb', '--now', str(NOW), *conf)
    segment = made.stdout.split()[0]
    listed = read_parts(glob.glob(segment + '/crawl_generate/*.avro'))
    many = [r for r in listed if r['url'].startswith('http://many-hdb.test/')]
    assert len(many) == 2 and len(listed) == 3
    assert {r['metadata'].get(policy.VARIABLE_FETCH_DELAY) for r in many} == {'1234'}
    (b,) = [r for r in listed if r not in many]
    assert policy.VARIABLE_FETCH_DELAY not in b['metadata']      # b.test's expression: -1
    counters = logged_counters(made.stderr)
    assert counters['generate.hostdb.max_count_hosts'] == 2      # b.test's own: unlimited
    assert counters['generate.host_capped'] == 1
    run_cli('fetch', crawl, segment, '--now', str(NOW), *conf)
    fetched = {r['url']: r for r in read_parts(glob.glob(segment + '/crawl_fetch/*.avro'))}
    for record in many:
        assert fetched[record['url']]['metadata']['fetch.delay'] == '1.234'
        assert policy.VARIABLE_FETCH_DELAY not in fetched[record['url']]['metadata']
    assert fetched['http://b.test/']['metadata']['fetch.delay'] == '0.0'
    gaps = sorted((r for r in hostdb_web.requests_for('many-hdb.test')
                   if r.path != '/robots.txt'), key=lambda r: r.start)
    assert len(gaps) == 2 and gaps[1].start - gaps[0].end >= 1.234 - 0.005


def test_sitemap_from_hostdb_reads_the_sitemaps_of_its_hosts(hostdb_web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://maps-hdb.test/'])
    run_cli('inject', crawl, seeds, '--now', str(NOW), *_conf(hostdb_web))
    run_cli('updatehostdb', crawl, '--now', str(NOW), *_conf(hostdb_web))
    proc = run_cli('sitemap', crawl, '--from-hostdb', '--now', str(NOW), *_conf(hostdb_web))
    assert 'http://maps-hdb.test/from-sitemap' in read_db(crawl)
    assert '1 sitemaps read' in proc.stdout


def test_the_hostdb_says_which_sitemaps_gave_a_hosts_urls(hostdb_web, tmp_path):
    """sitemap --from-robots injects maps-hdb.test/from-sitemap with the sitemap it came from;
    the mark survives a crawl round, and updatehostdb counts it for that host only."""
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://maps-hdb.test/', 'http://b.test/'])
    conf = _conf(hostdb_web)
    run_cli('inject', crawl, seeds, '--now', str(NOW), *conf)
    run_cli('sitemap', crawl, '--from-robots', '--now', str(NOW), *conf)
    sitemap = 'http://maps-hdb.test/maps/s.xml'
    marked = {u: r['metadata'].get('_sitemap_') for u, r in read_db(crawl).items()}
    assert marked == {'http://maps-hdb.test/': None, 'http://b.test/': None,
                      'http://maps-hdb.test/from-sitemap': sitemap}
    run_cli('crawl', crawl, '--rounds', '1', '--hostdb-update', '--now', str(NOW), *conf)
    fetched = read_db(crawl)['http://maps-hdb.test/from-sitemap']
    assert (fetched['status'], fetched['metadata']['_sitemap_']) == ('db_fetched', sitemap)
    maps, b = _get(crawl, 'maps-hdb.test'), _get(crawl, 'b.test')
    assert (maps['fetched'], maps['sitemap_urls'], maps['sitemap_count'], maps['sitemaps']) == \
        (2, 1, 1, [sitemap])
    assert (b['fetched'], b['sitemap_urls'], b['sitemap_count'], b['sitemaps']) == (1, 0, 0, [])
    listed = run_cli('readhostdb', crawl, '--hostnames', '--expr', 'sitemap_urls > 0').stdout
    assert listed.split() == ['maps-hdb.test']
    run_cli('readhostdb', crawl, '--dump', str(tmp_path / 'dump'), '--format', 'csv')
    with open(tmp_path / 'dump' / 'part-00000.csv', encoding='utf-8') as f:
        rows = {r['host']: r for r in csv.DictReader(f)}
    assert (rows['maps-hdb.test']['sitemap_count'], json.loads(rows['maps-hdb.test']['sitemaps']),
            json.loads(rows['b.test']['sitemaps'])) == ('1', [sitemap], [])


def test_a_hostdb_written_before_the_sitemap_fields_still_reads(hostdb_web, tmp_path):
    """A hostdb part written with the HostDatum schema of before (no sitemap fields): readhostdb,
    --expr, generate --hostdb and updatehostdb read it with the fields' defaults."""
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.partwriter import write_avro_file
    from beamcrawl.transforms.storage.records import HOST_DATUM_SCHEMA
    crawl = str(tmp_path / 'crawl')
    conf = _conf(hostdb_web)
    run_cli('inject', crawl, write_seeds(tmp_path / 'seeds', ['http://b.test/']), '--now',
            str(NOW), *conf)
    run_cli('updatehostdb', crawl, '--now', str(NOW), *conf)
    new_fields = ('sitemap_urls', 'sitemap_count', 'sitemaps')
    old_schema = dict(HOST_DATUM_SCHEMA, fields=[f for f in HOST_DATUM_SCHEMA['fields']
                                                 if f['name'] not in new_fields])
    (part,) = CrawlLayout(crawl).hostdb.part_files()
    datums = read_parts([part])
    write_avro_file(part, old_schema, [{k: v for k, v in d.items() if k not in new_fields}
                                       for d in datums])
    assert not set(new_fields) & set(read_parts([part])[0])       # really the old shape
    assert {k: _get(crawl, 'b.test')[k] for k in new_fields} == \
        {'sitemap_urls': 0, 'sitemap_count': 0, 'sitemaps': []}
    assert run_cli('readhostdb', crawl, '--hostnames', '--expr',
                   'sitemap_count == 0 and unfetched == 1').stdout.split() == ['b.test']
    made = run_cli('generate', crawl, '--hostdb', '--now', str(NOW), '-D',
                   'generate.max.count.expr=sitemap_urls + 5', *conf)
    assert logged_counters(made.stderr)['generate.hostdb.max_count_hosts'] == 1
    assert [r['url'] for r in read_parts(glob.glob(made.stdout.split()[0] +
                                                   '/crawl_generate/*.avro'))] == ['http://b.test/']
    run_cli('updatehostdb', crawl, '--now', str(NOW), *conf)      # the old version as input
    (datum,) = read_parts(CrawlLayout(crawl).hostdb.part_files())
    assert (datum['host'], datum['unfetched'], datum['sitemaps']) == ('b.test', 1, [])


def test_resolution_is_optional_bounded_and_counted(tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://localhost/', 'http://no-such-host.invalid/'])
    conf = ['-D', 'http.agent.name=testbot', '-D', 'hostdb.resolve.timeout=30',
            '-D', 'http.address.allow=127.0.0.0/8']      # localhost may be a seed
    run_cli('inject', crawl, seeds, '--now', str(NOW), *conf)
    plain = run_cli('updatehostdb', crawl, '--now', str(NOW), *conf)
    assert not any(k.startswith('hostdb.resolve.') for k in logged_counters(plain.stderr))
    first = run_cli('updatehostdb', crawl, '--check-all', '--now', str(NOW), *conf)
    counters = logged_counters(first.stderr)
    assert (counters['hostdb.resolve.new_known_host'],
            counters['hostdb.resolve.new_unknown_host']) == (1, 1)
    assert (_get(crawl, 'localhost')['dns_failures'],
            _get(crawl, 'no-such-host.invalid')['dns_failures'],
            _get(crawl, 'localhost')['last_check']) == (0, 1, NOW)
    again = run_cli('updatehostdb', crawl, '--check-failed', '--force', '--now', str(NOW + 1),
                    *conf)
    assert logged_counters(again.stderr)['hostdb.resolve.existing_unknown_host'] == 1
    assert _get(crawl, 'no-such-host.invalid')['dns_failures'] == 2
    assert _get(crawl, 'localhost')['last_check'] == NOW        # --check-failed: not known ones


@pytest.mark.parametrize('args, message', [
    (['readhostdb', '{crawl}', '--hostnames'], 'no hostdb (run updatehostdb first)'),
    (['readhostdb', '{crawl}', '--hostnames', '--expr', 'fetched > "x"'], 'column 11'),
    (['readhostdb', '{crawl}', '--hostnames', '--expr', 'fetchd > 1'], 'unknown name'),
    (['generate', '{crawl}', '--hostdb'], 'no hostdb (run updatehostdb first)'),
    (['generate', '{crawl}', '--hostdb', '-D', 'generate.max.count.expr=max(1)'],
     'no function calls'),
    (['generate', '{crawl}', '--hostdb', '-D', 'generate.max.count.expr=1', '-D',
      'generate.count.mode=domain'], 'generate.count.mode=host'),
    (['sitemap', '{crawl}', '--from-hostdb', '--from-robots'], 'one of them'),
    (['sitemap', '{crawl}', '--from-hostdb'], 'no hostdb (run updatehostdb first)'),
])
def test_hostdb_errors_are_one_line(tmp_path, args, message):
    crawl = str(tmp_path / 'crawl')
    run_cli('inject', crawl, write_seeds(tmp_path / 'seeds', ['http://a.test/']),
            '-D', 'http.agent.name=testbot')
    proc = run_cli(*[a.format(crawl=crawl) for a in args], '-D', 'http.agent.name=testbot',
                   check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and 'Traceback' not in proc.stderr
    assert not os.path.exists(os.path.join(crawl, 'hostdb', 'current'))
