"""generate: SelectForFetch on TestPipeline, and the command end to end."""

import glob
import os

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms import settings
from beamcrawl.transforms.generate import SelectForFetch
from beamcrawl.transforms.policy.urlparts import host_of
from beamcrawl.transforms.runners.runtime import counters_of
from beamcrawl.transforms.storage.records import crawl_datum
from tests.conftest import read_db, read_parts, run_cli, write_db

DAY = 86400000
NOW = 1795305600000      # 2026-11-22T00:00:00Z


def rec(url, score=1.0, fetch_time=0, status='db_unfetched', **kw):
    return crawl_datum(url, status, fetch_time=fetch_time, fetch_interval=2592000, score=score,
                       **kw)


def _select(runner, cfg, records, **kw):
    args = dict(settings=settings.generate_settings(cfg), policy=settings.url_policy(cfg),
                now=NOW, top_n=None, max_count=-1, count_mode='host', max_segments=1)
    args.update(kw)
    p = TestPipeline(runner=runner)
    out = (p | beam.Create(records) | SelectForFetch(**args)
           | beam.Map(lambda sr: (sr[0], sr[1]['url'])))
    return p, out


def test_exact_top_n_across_hosts(runner, cfg):
    # 3 hosts with very different scores: the global top 4 are exact, not split per host.
    records = ([rec(f'http://a.test/{i}', score=10 - i) for i in range(5)]
               + [rec(f'http://b.test/{i}', score=0.5) for i in range(5)]
               + [rec(f'http://c.test/{i}', score=7.5) for i in range(1)])
    p, out = _select(runner, cfg, records, top_n=4)
    assert_that(out, equal_to([(1, 'http://a.test/0'), (1, 'http://a.test/1'),
                               (1, 'http://a.test/2'), (1, 'http://c.test/0')]))
    p.run().wait_until_finish()


def test_per_host_and_per_domain_caps(runner, cfg):
    records = [rec(f'http://{h}.example.test/{i}', score=5 - i)
               for h in ('www', 'news') for i in range(3)]
    p, out = _select(runner, cfg, records, max_count=2)
    assert_that(out | beam.combiners.Count.Globally(), equal_to([4]), label='byHost')
    p.run().wait_until_finish()
    p, out = _select(runner, cfg, records, max_count=2, count_mode='domain')
    # one domain (example.test): the two best URLs over both hosts, ties by URL
    assert_that(out, equal_to([(1, 'http://news.example.test/0'),
                               (1, 'http://www.example.test/0')]), label='byDomain')
    p.run().wait_until_finish()


def test_overflow_into_segments_and_counters(runner, cfg):
    records = [rec(f'http://a.test/{i}', score=10 - i) for i in range(5)] + \
              [rec('http://b.test/0', score=0.1)]
    p, out = _select(runner, cfg, records, top_n=2, max_count=2, max_segments=2)
    assert_that(out, equal_to([(1, 'http://a.test/0'), (1, 'http://a.test/1'),
                               (2, 'http://a.test/2'), (2, 'http://a.test/3')]))
    result = p.run()
    result.wait_until_finish()
    c = counters_of(result)
    assert c['generate.due'] == 6 and c['generate.host_capped'] == 1   # a.test/4
    assert c['generate.over_limit'] == 1                                # b.test/0


def test_rejections_counted_by_reason(runner, cfg):
    records = [rec('http://a.test/due'), rec('http://a.test/later', fetch_time=NOW + DAY),
               rec('http://a.test/x.gif'), rec('not-a-url'),
               rec('http://a.test/locked', metadata={'_ngt_': str(NOW - DAY)}),
               rec('http://a.test/neg', score=-1.0)]
    p, out = _select(runner, cfg, records)
    assert_that(out, equal_to([(1, 'http://a.test/due')]))
    result = p.run()
    result.wait_until_finish()
    c = counters_of(result)
    assert c['generate.rejected.not_due'] == 1 and c['generate.rejected.filtered'] == 1
    assert c['generate.malformed'] == 1 and c['generate.rejected.generate_locked'] == 1
    assert c['generate.rejected.below_min_score'] == 1


@pytest.fixture
def crawl(tmp_path):
    crawl = str(tmp_path / 'crawl')
    records = [rec(f'http://h{h}.test/p{i}', score=1 + (h * 7 + i) % 5, fetch_time=NOW - DAY)
               for h in range(12) for i in range(6)]
    records += [rec('http://h0.test/future', fetch_time=NOW + DAY), rec('garbage')]
    write_db(crawl, records)
    return crawl


def test_generate_writes_host_partitioned_parts(crawl, capsys):
    assert main(['generate', crawl, '--num-fetchers', '3', '--now', str(NOW)]) == 0
    (segment,) = capsys.readouterr().out.split()
    assert segment == os.path.join(crawl, 'segments', '20261122000000')
    parts = sorted(glob.glob(os.path.join(segment, 'crawl_generate', 'part-*.avro')))
    assert [os.path.basename(p) for p in parts] == [f'part-0000{i}.avro' for i in range(3)]
    owner = {}
    total = 0
    for path in parts:
        records = read_parts([path])
        total += len(records)
        for r in records:
            assert owner.setdefault(host_of(r['url']), path) == path, 'a host split across parts'
            assert r['metadata']['_ngt_'] == str(NOW)
        hosts = [host_of(r['url']) for r in records]
        if len(set(hosts)) > 1:   # hosts interleave: not one host's URLs in a single run
            runs = sum(1 for a, b in zip(hosts, hosts[1:]) if a != b) + 1
            assert runs > len(set(hosts))
    assert total == 72
    assert not os.path.exists(os.path.join(crawl, 'crawldb', '.locked'))


def test_nothing_due_exits_1_and_leaves_no_segment(crawl):
    proc = run_cli('generate', crawl, '--now', str(NOW - 10 * DAY), check=False)
    assert proc.returncode == 1 and proc.stdout == ''
    assert not os.path.exists(os.path.join(crawl, 'segments')) or \
        os.listdir(os.path.join(crawl, 'segments')) == []


def test_update_crawldb_makes_consecutive_generates_disjoint(crawl, capsys):
    args = ['-D', 'generate.update.crawldb=true', '--top-n', '30', '--now', str(NOW)]
    assert main(['generate', crawl, *args]) == 0
    assert main(['generate', crawl, *args]) == 0
    assert main(['generate', crawl, *args]) == 0
    first, second, third = capsys.readouterr().out.split()
    assert first < second < third          # unique, increasing names in the same second
    sets = [{r['url'] for r in read_parts(glob.glob(f'{s}/crawl_generate/*.avro'))}
            for s in (first, second, third)]
    assert [len(s) for s in sets] == [30, 30, 12]
    assert not sets[0] & sets[1] and not sets[1] & sets[2] and not sets[0] & sets[2]
    db = read_db(crawl)
    assert all(db[u]['metadata'].get('_ngt_') == str(NOW) for s in sets for u in s)
    # the lock expires after crawl.gen.delay: a week later everything is due again
    assert main(['generate', crawl, '--now', str(NOW + 8 * DAY)]) == 0


def test_without_update_crawldb_the_crawldb_is_untouched(crawl):
    before = read_db(crawl)
    assert main(['generate', crawl, '--top-n', '5', '--now', str(NOW)]) == 0
    assert read_db(crawl) == before
    assert main(['generate', crawl, '--top-n', '5', '--now', str(NOW)]) == 0   # same URLs again


def test_generate_user_errors(tmp_path, crawl):
    proc = run_cli('generate', str(tmp_path / 'none'), check=False)
    assert proc.returncode == 2 and 'no crawldb' in proc.stderr
    proc = run_cli('generate', crawl, '--top-n', '0', check=False)
    assert proc.returncode == 2 and 'positive integer' in proc.stderr
    proc = run_cli('generate', crawl, '-D', 'generate.restrict.status=nope', check=False)
    assert proc.returncode == 2 and 'not a status name' in proc.stderr


def _generate_killed_at(crawl, point, tmp_path):
    """Starts generate (with generate.update.crawldb) that holds at `point` of its install, and
    kills it with SIGKILL there (observed: the hold file appears)."""
    import subprocess
    import sys

    from tests.conftest import ROOT, cli_env, kill_when
    hold = str(tmp_path / f'held-at-{point}')
    proc = subprocess.Popen(
        [sys.executable, '-m', 'beamcrawl.pipelines.cli', 'generate', crawl, '--top-n', '30',
         '--now', str(NOW), '-D', 'generate.update.crawldb=true'], cwd=ROOT,
        env=cli_env({'BEAMCRAWL_HOLD_AT': point, 'BEAMCRAWL_HOLD_FILE': hold}),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_when(proc, lambda: os.path.exists(hold), f'generate reached {point}')


def _generated(crawl):
    """{segment: its generated URLs} of the published segments."""
    found = {}
    for name in sorted(os.listdir(f'{crawl}/segments')):
        part = f'{crawl}/segments/{name}/crawl_generate'
        if os.path.isdir(part):
            found[name] = {r['url'] for r in read_parts(glob.glob(f'{part}/*.avro'))}
    return found


@pytest.mark.parametrize('point', ['install.pending', 'install.renamed'])
def test_generate_killed_while_publishing_is_completed_by_the_next_run(crawl, tmp_path, point):
    """generate.update.crawldb: the segment and the crawldb marking its URLs become visible
    together; a kill between them is completed by the next run, never undone or repeated."""
    _generate_killed_at(crawl, point, tmp_path)
    published = _generated(crawl)
    assert len(published) == (1 if point == 'install.renamed' else 0)   # the segment came first
    # The next run (here a generate, as it would be in a crawl loop) completes the install
    # before it selects: its segment holds other URLs than the killed run's.
    proc = run_cli('generate', crawl, '--top-n', '30', '--now', str(NOW),
                   '-D', 'generate.update.crawldb=true')
    assert 'completing the install that a killed run began' in proc.stderr
    first, second = _generated(crawl).values()
    assert len(first) == len(second) == 30 and not first & second
    db = read_db(crawl)
    assert all(db[u]['metadata'].get('_ngt_') == str(NOW) for u in first | second)
    assert not os.path.exists(os.path.join(crawl, 'crawldb', '.pending-install.json'))


def test_a_crawldb_of_another_writers_schema_generates_the_same_fetch_lists(tmp_path):
    # A crawldb in a CrawlDatum-shaped schema of another writer (the contract's fields, its own
    # symbol order): its due records travel encoded in our schema (_SelectFn), and the fetch
    # lists are the ones of the same crawldb in ours, record by record, in order.
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.partwriter import write_avro_file
    from tests.workloads import CONTRACT_SCHEMA
    records = [rec(f'http://h{h}.test/p{i}', score=1 + (h * 7 + i) % 5, fetch_time=NOW - DAY,
                   status=('db_unfetched', 'db_fetched', 'db_gone')[i % 3],
                   signature=b'%d' % i if i % 2 else None,
                   metadata={'k': str(i)} if i % 4 == 0 else {})
               for h in range(12) for i in range(9)]
    fetch_lists = {}
    for name in ('ours', 'contract'):
        crawl = str(tmp_path / name)
        if name == 'ours':
            write_db(crawl, records)
        else:
            write_avro_file(f'{CrawlLayout(crawl).crawldb.current}/part-00000.avro',
                            CONTRACT_SCHEMA, [{f['name']: r[f['name']]
                                               for f in CONTRACT_SCHEMA['fields']}
                                              for r in records])
        run_cli('generate', crawl, '--num-fetchers', '2', '--top-n', '40', '-D',
                'generate.max.count=3', '--now', str(NOW))
        parts = sorted(glob.glob(os.path.join(crawl, 'segments', '*', 'crawl_generate', '*')))
        fetch_lists[name] = [(os.path.basename(p), read_parts([p])) for p in parts]
    assert sum(len(r) for _, r in fetch_lists['ours']) == 36       # 3 of each of 12 hosts
    assert fetch_lists['contract'] == fetch_lists['ours']


class _Progress:
    def add(self, n):
        pass


def _oracle(records, gen_settings, now, **kw):
    """The selection by its definition: every due record in selection order, one walk
    (policy.generate.assign_segments) with no trimming: {url: segment}."""
    from beamcrawl.transforms.policy.generate import assign_segments
    due = []
    for r in records:
        reason, candidate = gen_settings.check(r, now)
        if not reason:
            due.append((gen_settings.sort_key(candidate, now), host_of(r['url'])))
    due.sort()
    return assign_segments(((host, sk[-1]) for sk, host in due), **kw).segments


@pytest.mark.parametrize('bundles', [1, 2, 5])
@pytest.mark.parametrize('schedule', ['default', 'optimal'])
def test_bundles_trimmed_and_merged_select_what_one_walk_over_all_selects(cfg, bundles,
                                                                          schedule):
    """_SelectFn trims each bundle's groups (and drops what cannot survive the trim at once),
    _AssignFn merges the bundles and walks: the same selection as one walk over every due
    record, for caps, topN and several segments, whatever the bundles."""
    import random

    from beamcrawl.transforms import generate as g
    from beamcrawl.transforms.base.config import load_config
    rng = random.Random(bundles * 7 + len(schedule))
    cfg = load_config(defines=['domain.extra.suffixes=test',
                               f'db.fetch.schedule.class={schedule}'])
    gen = settings.generate_settings(cfg)
    policy = settings.url_policy(cfg)
    records = [rec(f'http://h{rng.randrange(6)}.test/{i}', score=rng.choice([1.0, 2.0, 0.5, 3.25]),
                   fetch_time=NOW - rng.randrange(1, 40) * DAY) for i in range(400)]
    for top_n, max_count, max_segments in [(None, 3, 1), (10, 3, 1), (25, 4, 3), (7, 50, 2),
                                           (30, 1, 2), (None, 2, 4)]:
        keep = max_count * max_segments
        if top_n is not None:
            keep = min(keep, top_n * max_segments)
        blobs = []
        for b in range(bundles):
            select = g._SelectFn(settings=gen, policy=policy, now=NOW, count_mode='host',
                                 filter_urls=True, keep=keep, per_host=True, done=_Progress())
            select.start_bundle()
            for r in records[b::bundles]:
                assert select._select(r) is None
            blobs += [w.value for w in select.finish_bundle()]
        assign = g._AssignFn(keep=keep, per_host=True, top_n=top_n, max_count=max_count,
                             max_segments=max_segments, marker=str(NOW),
                             trimmed_by_cap=keep == max_count * max_segments)
        got = {r['url']: segment for segment, r in assign.process(blobs)}
        assert got == _oracle(records, gen, NOW, top_n=top_n, max_count=max_count,
                              max_segments=max_segments), (top_n, max_count, max_segments)
        assert len(got) <= (top_n or len(records)) * max_segments


def test_the_optimal_schedule_keeps_top_n_with_a_cap(crawl, capsys):
    # Its sort key starts with the gain: the URL is its last element, not its third.
    assert main(['generate', crawl, '--top-n', '5', '-D', 'generate.max.count=10', '-D',
                 'db.fetch.schedule.class=optimal', '--now', str(NOW)]) == 0
    (segment,) = capsys.readouterr().out.split()
    assert len(read_parts(glob.glob(f'{segment}/crawl_generate/*.avro'))) == 5


@pytest.mark.parametrize('defines', [
    ['--top-n', '30', '-D', 'generate.max.count=2'],
    ['--top-n', '30', '-D', 'generate.max.count=2', '-D', 'partition.url.mode=byDomain',
     '-D', 'domain.extra.suffixes=test'],
    ['--top-n', '20', '-D', 'generate.max.count=4', '-D', 'generate.count.mode=domain',
     '-D', 'domain.extra.suffixes=test', '--max-num-segments', '3'],
    ['--top-n', '25'],
    [],                                           # no topN, no cap: every due URL at once
])
def test_fetch_lists_keyed_in_the_selection_are_the_ones_keyed_per_url(tmp_path, defines):
    """Without generate.update.crawldb the selection hands the fetch lists their parts'
    records keyed and encoded (WriteFetchLists grouped); with it, each URL goes through
    KeyByQueue: the same parts, record for record, in order (byIP is always keyed per URL)."""
    records = [rec(f'http://{h}.d{h % 3}.test/p{i}', score=1 + (h * 7 + i) % 5,
                   fetch_time=NOW - DAY if i % 7 else NOW + 400 * DAY,  # far future: due now
                   metadata={'k': str(i)} if i % 5 == 0 else {})
               for h in range(12) for i in range(9)]
    lists = []
    for update in ('false', 'true'):
        crawl = str(tmp_path / update)
        write_db(crawl, records)
        run_cli('generate', crawl, '--num-fetchers', '3', '--now', str(NOW), *defines,
                '-D', f'generate.update.crawldb={update}')
        parts = sorted(glob.glob(os.path.join(crawl, 'segments', '*', 'crawl_generate', '*')))
        lists.append([(os.path.relpath(p, crawl), read_parts([p])) for p in parts])
    assert lists[0] == lists[1]
    assert len(lists[0]) >= 3 and sum(len(r) for _, r in lists[0]) > 10
