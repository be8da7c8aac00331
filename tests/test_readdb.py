"""readdb: statistics (transform and command), dumps, --url, --top-n."""

import csv
import glob
import json
import os

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms.readdb import CrawlDbStats, TopScores, format_stats
from beamcrawl.transforms.storage.records import crawl_datum
from tests.conftest import run_cli, write_seeds

RECORDS = [
    crawl_datum('http://a.test/', 'db_fetched', fetch_time=1000, fetch_interval=86400,
                score=2.0, retries=0, signature=b'\x01\x02'),
    crawl_datum('http://b.test/', 'db_unfetched', fetch_time=3000, fetch_interval=3600,
                score=0.5, retries=1),
    crawl_datum('http://c.test/', 'db_gone', fetch_time=2000, fetch_interval=172800,
                score=0.5, retries=3, metadata={'k': 'v'}),
]


def test_stats_transform(runner):
    with TestPipeline(runner=runner) as p:
        stats = p | beam.Create(RECORDS) | CrawlDbStats([0.5])

        def check(all_stats):
            (s,) = all_stats
            assert s['total'] == 3
            assert s['status'] == {'db_fetched': 1, 'db_gone': 1, 'db_unfetched': 1}
            assert list(s['status']) == ['db_unfetched', 'db_fetched', 'db_gone']
            assert s['retries'] == {'0': 1, '1': 1, '3': 1}
            assert s['score'] == {'min': 0.5, 'avg': 1.0, 'max': 2.0, 'quantiles': {'0.5': 0.5}}
            assert s['fetch_interval'] == {'min': 3600, 'avg': 87600.0, 'max': 172800}
            assert s['fetch_time'] == {'min': 1000, 'avg': 2000.0, 'max': 3000}
        assert_that(stats, check)


def test_stats_of_an_empty_db(runner):
    with TestPipeline(runner=runner) as p:
        stats = p | beam.Create([]) | CrawlDbStats([0.5])
        assert_that(stats | beam.Map(lambda s: (s['total'], s['score']['min'])),
                    equal_to([(0, None)]))


def test_human_stats_in_nutch_order():
    lines = format_stats({
        'total': 2, 'status': {'db_unfetched': 1, 'db_fetched': 1}, 'retries': {'0': 2},
        'nan_scores': 0, 'score': {'min': 1.0, 'avg': 1.5, 'max': 2.0, 'quantiles': {'0.5': 1}},
        'fetch_interval': {'min': 3600, 'avg': 90000, 'max': 2592000},
        'fetch_time': {'min': 0, 'avg': 0, 'max': 0}})
    assert lines[0] == 'TOTAL urls:\t2'
    assert 'shortest fetch interval:\t01:00:00' in lines
    assert 'avg fetch interval:\t1 days, 01:00:00' in lines
    assert 'longest fetch interval:\t30 days, 00:00:00' in lines
    assert lines[-2:] == ['status 1 (db_unfetched):\t1', 'status 2 (db_fetched):\t1']
    assert 'score quantile 0.5:\t1' in lines


def test_top_scores_ties_by_url(runner):
    with TestPipeline(runner=runner) as p:
        top = p | beam.Create(RECORDS) | TopScores(2)
        assert_that(top, equal_to(['2\thttp://a.test/', '0.5\thttp://b.test/']))


@pytest.fixture
def crawl(tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://a.test/\tscore=3\tk=v', 'http://b.test/',
                                             'http://c.test/é\tscore=0.25'])
    assert main(['inject', crawl, seeds, '--now', '1000']) == 0
    return crawl


def test_readdb_commands(crawl, tmp_path, capsys):
    capsys.readouterr()
    assert main(['readdb', crawl, '--stats']) == 0
    out = capsys.readouterr().out
    assert 'TOTAL urls:\t3' in out and 'status 1 (db_unfetched):\t3' in out
    assert 'max score:\t3' in out

    assert main(['readdb', crawl, '--url', 'http://A.test:80/']) == 0   # normalized lookup
    out = capsys.readouterr().out
    assert 'URL: http://a.test/' in out and 'Status: 1 (db_unfetched)' in out and '\tk=v' in out

    assert main(['readdb', crawl, '--dump', str(tmp_path / 'j')]) == 0
    rows = [json.loads(line) for f in glob.glob(str(tmp_path / 'j' / 'part-*.jsonl'))
            for line in open(f, encoding='utf-8')]
    assert sorted(r['url'] for r in rows) == ['http://a.test/', 'http://b.test/',
                                              'http://c.test/%C3%A9']
    assert all(r['status'] == 'db_unfetched' and r['status_code'] == 1 for r in rows)

    assert main(['readdb', crawl, '--dump', str(tmp_path / 'c'), '--format', 'csv',
                 '--regex', r'http://[ab]\.test/']) == 0
    (path,) = glob.glob(str(tmp_path / 'c' / 'part-*.csv'))
    rows = list(csv.DictReader(open(path, encoding='utf-8')))
    assert sorted(r['url'] for r in rows) == ['http://a.test/', 'http://b.test/']
    assert {r['metadata'] for r in rows} == {'k:v', ''}

    assert main(['readdb', crawl, '--dump', str(tmp_path / 's'), '--status', 'DB_FETCHED']) == 0
    assert all(os.path.getsize(f) == 0 for f in glob.glob(str(tmp_path / 's' / '*')))

    assert main(['readdb', crawl, '--top-n', '2', str(tmp_path / 'top.txt')]) == 0
    assert open(tmp_path / 'top.txt').read().splitlines() == ['3\thttp://a.test/',
                                                             '1\thttp://b.test/']


def test_readdb_url_absent_exits_1(crawl):
    proc = run_cli('readdb', crawl, '--url', 'http://nowhere.test/', check=False)
    assert proc.returncode == 1 and 'not found' in proc.stdout


@pytest.mark.parametrize('args,message', [
    (['--stats'], 'no crawldb (run inject first)'),
    (['--dump', 'x', '--status', 'fetched'], 'no crawldb'),
])
def test_readdb_user_errors(tmp_path, args, message):
    proc = run_cli('readdb', str(tmp_path / 'none'), *args, check=False)
    assert proc.returncode == 2 and message in proc.stderr and 'Traceback' not in proc.stderr


def test_readdb_bad_status_and_existing_dump(crawl):
    proc = run_cli('readdb', crawl, '--dump', crawl, check=False)
    assert proc.returncode == 2 and 'already exists' in proc.stderr
    proc = run_cli('readdb', crawl, '--dump', crawl + '/x', '--status', 'fetched', check=False)
    assert proc.returncode == 2 and "--status fetched: unknown" in proc.stderr
