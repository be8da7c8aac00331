"""invertlinks / readlinkdb: inversion rules, the transforms, incremental = batch, idempotence,
SIGKILL, the readers."""

import glob
import json
import os

import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms.invertlinks import InvertLinks
from beamcrawl.transforms.policy.linkdb import LinkRules, cap_inlinks, invert, truncate_anchor
from beamcrawl.transforms.policy.partition import partition
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, INLINKS_SCHEMA,
                                                  PARSE_DATA_SCHEMA, inlinks, parse_data)
from tests.conftest import kill_when, run_cli, start_command
from tests.workloads import IN_PROCESS, PARALLEL, linkdb_workload, read_linkdb

RULES = LinkRules(ignore_internal=True, ignore_external=False, max_anchor_length=100,
                  max_inlinks=10000)


def pd(url, *links):
    return parse_data(url, title='', parse_status='success', outlinks=links)


PAGES = [pd('http://a.test/1', ('http://b.test/', 'bee'), ('http://a.test/2', 'internal'),
            ('http://c.test/', 'see')),
         pd('http://b.test/', ('http://c.test/', 'from b'), ('http://c.test/', 'from b'),
            ('http://a.test/1', '')),
         pd('http://c.test/', ('http://b.test/', 'bee'))]


def test_invert_rules():
    assert list(invert('http://A.test/x', [('http://a.test/y', 'i'), ('http://b.test/', 'e'),
                                           ('garbage', 'g')], RULES)) == \
        [('http://b.test/', ('http://A.test/x', 'e'))]
    external = LinkRules(ignore_internal=False, ignore_external=True, max_anchor_length=100,
                         max_inlinks=10)
    assert [t for t, _ in invert('http://a.test/x', [('http://a.test/y', 'i'),
                                                    ('http://b.test/', 'e')], external)] == \
        ['http://a.test/y']
    both = LinkRules(ignore_internal=False, ignore_external=False, max_anchor_length=100,
                     max_inlinks=10)
    assert len(list(invert('http://a.test/x', [('http://a.test/y', 'i'),
                                               ('http://b.test/', 'e')], both))) == 2


def test_both_ignore_flags_are_an_error(tmp_path):
    proc = run_cli('invertlinks', str(tmp_path), '-D', 'linkdb.ignore.external.links=true',
                   check=False)
    assert proc.returncode == 2 and 'both true' in proc.stderr


@pytest.mark.parametrize('anchor,length,expected', [
    ('héllo wörld', 5, 'héllo'), ('日本語のテキスト', 3, '日本語'), ('😀😀😀', 2, '😀😀'),
    ('short', 100, 'short'), ('abc', 0, '')])
def test_anchor_truncation_by_characters(anchor, length, expected):
    assert truncate_anchor(anchor, length) == expected


def test_cap_is_deterministic_and_order_free():
    pairs = [(f'http://s{i}.test/', 'a') for i in (5, 3, 9, 1, 7)]
    assert cap_inlinks(pairs, 3) == [('http://s1.test/', 'a'), ('http://s3.test/', 'a'),
                                     ('http://s5.test/', 'a')]
    assert cap_inlinks(reversed(pairs), 3) == cap_inlinks(pairs, 3)
    assert cap_inlinks(cap_inlinks(pairs[:3], 3) + pairs[3:], 3) == cap_inlinks(pairs, 3)


EXPECTED = [
    inlinks('http://b.test/', [('http://a.test/1', 'bee'), ('http://c.test/', 'bee')]),
    inlinks('http://c.test/', [('http://a.test/1', 'see'), ('http://b.test/', 'from b')]),
    inlinks('http://a.test/1', [('http://b.test/', '')]),
]


def test_invert_links_transform(runner, tmp_path):
    """The stage's PTransform on a pipeline: parse_data and an old linkdb (partitioned another
    way) in files; the new version, capped at 2 inlinks per URL, in the update's directory."""
    linkdb = DbLayout(str(tmp_path / 'linkdb'), 'linkdb')
    write_avro_file(f'{linkdb.current}/part-00000.avro', INLINKS_SCHEMA,
                    [inlinks('http://c.test/', [('http://z.test/', 'old')])])
    pages = str(tmp_path / 'parse_data.avro')
    write_avro_file(pages, PARSE_DATA_SCHEMA, PAGES)
    out = DbUpdate(str(tmp_path / 'new'))
    capped = LinkRules(ignore_internal=True, ignore_external=False, max_anchor_length=100,
                       max_inlinks=2)
    with TestPipeline(runner=runner) as p:
        _ = p | InvertLinks(linkdb=linkdb, out=out, parse_data_files=[pages], rules=capped,
                            policy=None, partitions=2)
    written = sorted((r for path in glob.glob(f'{out.dir}/part-*.avro')
                      for r in iter_records([path])), key=lambda r: r['url'])
    assert written == sorted([
        EXPECTED[0], EXPECTED[2],
        inlinks('http://c.test/', [('http://a.test/1', 'see'), ('http://b.test/', 'from b')])
    ], key=lambda r: r['url'])


def _segment(crawl, name, pages):
    seg = os.path.join(crawl, 'segments', name)
    write_avro_file(f'{seg}/parse_data/part-00000.avro', PARSE_DATA_SCHEMA, pages)
    write_avro_file(f'{seg}/crawl_parse/part-00000.avro', CRAWL_DATUM_SCHEMA, [])
    return seg


def _linkdb(crawl):
    return sorted(iter_records(CrawlLayout(crawl).linkdb.part_files()), key=lambda r: r['url'])


def test_incremental_equals_batch_and_is_idempotent(tmp_path):
    one, two = str(tmp_path / 'one'), str(tmp_path / 'two')
    for crawl in (one, two):
        _segment(crawl, '20261122000000', PAGES[:2])
        _segment(crawl, '20261122000001', PAGES[2:] + [pd('http://d.test/',
                                                          ('http://c.test/', 'dee'))])
    assert main(['invertlinks', one, '20261122000000']) == 0
    assert main(['invertlinks', one]) == 0               # the other one, remembered
    assert main(['invertlinks', two]) == 0               # both at once
    assert _linkdb(one) == _linkdb(two)
    assert run_cli('invertlinks', one, check=False).returncode == 1     # nothing left
    before = _linkdb(one)
    assert main(['linkdb', one, '20261122000000']) == 0  # re-inverting changes nothing
    assert _linkdb(one) == before
    c = [r for r in before if r['url'] == 'http://c.test/'][0]
    assert [i['from_url'] for i in c['inlinks']] == ['http://a.test/1', 'http://b.test/',
                                                     'http://d.test/']


def test_readlinkdb(tmp_path, capsys):
    crawl = str(tmp_path / 'crawl')
    _segment(crawl, '20261122000000', PAGES)
    assert main(['invertlinks', crawl]) == 0
    capsys.readouterr()
    assert main(['readlinkdb', crawl, '--url', 'http://C.test:80/']) == 0
    assert capsys.readouterr().out.splitlines() == [
        'http://c.test/\tInlinks:', ' fromUrl: http://a.test/1 anchor: see',
        ' fromUrl: http://b.test/ anchor: from b']
    assert run_cli('readlinkdb', crawl, '--url', 'http://x.test/', check=False).returncode == 1
    assert main(['readlinkdb', crawl, '--dump', str(tmp_path / 'j')]) == 0
    rows = [json.loads(l) for f in glob.glob(str(tmp_path / 'j' / '*.jsonl')) for l in open(f)]
    assert sorted(rows, key=lambda r: r['url']) == sorted(EXPECTED, key=lambda r: r['url'])
    assert main(['readlinkdb', crawl, '--dump', str(tmp_path / 't'), '--format', 'text']) == 0
    text = ''.join(open(f).read() for f in glob.glob(str(tmp_path / 't' / '*.txt')))
    assert 'http://b.test/\tInlinks:\n fromUrl: http://a.test/1 anchor: bee' in text
    proc = run_cli('readlinkdb', crawl, '--dump', str(tmp_path / 'p'),
                   '-D', 'runner.progress.seconds=0')                  # with its progress line
    assert f'readlinkdb --dump linkdb: {len(EXPECTED)}/{len(EXPECTED)} records (100%)' in \
        proc.stderr


@pytest.mark.slow
def test_sigkill_during_invertlinks_keeps_previous_linkdb(tmp_path):
    crawl = str(tmp_path / 'crawl')
    write_avro_file(f'{crawl}/linkdb/current/part-00000.avro', INLINKS_SCHEMA, [
        inlinks(f'http://t{i}.test/', [('http://s.test/', 'a')]) for i in range(50000)])
    _segment(crawl, '20261122000000', [pd(f'http://s{i % 500}.test/p{i}',
                                          *[(f'http://t{(i * 7 + k) % 90000}.test/', f'a{k}')
                                            for k in range(10)]) for i in range(8000)])
    before = _linkdb(crawl)
    lock = os.path.join(crawl, 'linkdb', '.locked')
    writing = os.path.join(crawl, 'linkdb', '.tmp-linkdb-*', 'part-*.avro')
    points = {'the lock is taken': lambda: os.path.exists(lock),
              'the new version is being written': lambda: glob.glob(writing)}
    for what, seen in points.items():
        kill_when(start_command('invertlinks', crawl), seen, what)
        assert os.path.exists(lock) and _linkdb(crawl) == before, what
    assert main(['invertlinks', crawl]) == 0                  # takes over the dead run's lock
    assert len(_linkdb(crawl)) > 50000
    assert not glob.glob(os.path.join(crawl, 'linkdb', '.tmp-*'))


def test_invertlinks_gives_one_result_whatever_the_layout_and_the_workers(tmp_path):
    results = []
    for native in (True, False):
        for extra in (IN_PROCESS, PARALLEL):
            crawl = str(tmp_path / f'{native}-{len(extra)}')
            linkdb_workload(crawl, native)
            run_cli('invertlinks', crawl, '-D', 'linkdb.partitions=4',
                    '-D', 'domain.extra.suffixes=test', *extra)
            results.append(read_linkdb(crawl))
            for i, path in enumerate(sorted(glob.glob(f'{crawl}/linkdb/current/part-*.avro'))):
                urls = [r['url'] for r in iter_records([path])]
                assert urls == sorted(urls) and all(partition(u, 4) == i for u in urls)
    assert len(results[0]) > 150 and all(r == results[0] for r in results)
