"""updatedb: UpdateCrawlDb on TestPipeline; the command in multi-round crawls; SIGKILL."""

import glob
import os

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beamcrawl.transforms import settings
from beamcrawl.pipelines.cli import main
from tests.conftest import kill_when, read_db, run_cli, start_command, write_db, write_seeds
from tests.testweb import Page
from beamcrawl.transforms.storage.parts import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from beamcrawl.transforms.updatedb import UpdateCrawlDb

DAY = 86400000
NOW = 1795305600000


def test_update_crawldb_transform(runner, cfg):
    old = [crawl_datum('http://a.test/', 'db_unfetched', fetch_time=0, fetch_interval=60,
                       score=1.0, metadata={'_ngt_': '5'}),
           crawl_datum('http://gone.test/', 'db_gone', fetch_time=0, fetch_interval=60)]
    news = [crawl_datum('http://a.test/', 'fetch_success', fetch_time=NOW, fetch_interval=60,
                        score=1.0, protocol_status='success'),
            crawl_datum('http://a.test/', 'signature', fetch_time=NOW, fetch_interval=0,
                        signature=b'S'),
            crawl_datum('http://b.test/', 'linked', fetch_time=NOW, fetch_interval=60, score=0.5)]
    with TestPipeline(runner=runner) as p:
        out = ((p | 'Old' >> beam.Create(old), p | 'News' >> beam.Create(news))
               | UpdateCrawlDb(rules=settings.update_rules(cfg), policy=settings.url_policy(cfg),
                               now=NOW, purge_gone=True))
        assert_that(out | beam.Map(lambda r: (r['url'], r['status'], r['signature'],
                                              r['score'], '_ngt_' in r['metadata'])),
                    equal_to([('http://a.test/', 'db_fetched', b'S', 1.0, False),
                              ('http://b.test/', 'db_unfetched', None, 0.5, False)]))


@pytest.fixture(scope='module', autouse=True)
def changing_site(testweb):
    counter = {'n': 0}

    def changing(request):
        counter['n'] += 1
        return Page(body=f'<html><body>version {counter["n"]}</body></html>'.encode())

    testweb.add('change.test', '/changing', changing)
    testweb.add('change.test', '/static', Page(body=b'<html><body>always the same</body></html>'))
    testweb.add('change.test', '/robots.txt', Page(status=404))


def _conf(web, *extra):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0.0',
            '-D', 'domain.extra.suffixes=test', *extra]


def _round(crawl, web, now, *extra):
    conf = _conf(web, *extra)
    assert main(['generate', crawl, '--now', str(now), *conf]) == 0
    assert main(['fetch', crawl, '--now', str(now), *conf]) == 0
    assert main(['parse', crawl, '--now', str(now), *conf]) == 0
    assert main(['updatedb', crawl, '--now', str(now), *conf]) == 0


@pytest.mark.slow
def test_adaptive_schedule_over_rounds(web, tmp_path, capsys):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 's', ['http://change.test/changing', 'http://change.test/static'])
    extra = ['-D', 'db.fetch.schedule.class=adaptive', '-D', 'db.fetch.interval.default=3600']
    assert main(['inject', crawl, seeds, '--now', str(NOW), *_conf(web, *extra)]) == 0
    for k in range(3):
        _round(crawl, web, NOW + k * DAY, *extra)
    db = read_db(crawl)
    changing, static = db['http://change.test/changing'], db['http://change.test/static']
    assert changing['status'] == 'db_fetched' and changing['fetch_interval'] < 3600
    assert static['status'] == 'db_notmodified' and static['fetch_interval'] > 3600
    assert static['modified_time'] == NOW             # first time this content was seen
    assert changing['modified_time'] == NOW + 2 * DAY
    # every segment is applied: a further updatedb has nothing to do
    proc = run_cli('updatedb', crawl, check=False)
    assert proc.returncode == 1 and 'nothing to do' in proc.stderr


def test_no_additions_and_explicit_segments(web, tmp_path, capsys):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 's', ['http://www.a.test/'])
    conf = _conf(web)
    assert main(['inject', crawl, seeds, '--now', str(NOW), *conf]) == 0
    assert main(['generate', crawl, '--now', str(NOW), *conf]) == 0
    segment = capsys.readouterr().out.split()[-1]
    assert main(['fetch', crawl, '--now', str(NOW), '-D', 'fetcher.parse=true', *conf]) == 0
    assert main(['updatedb', crawl, segment, '--no-additions', '--now', str(NOW)]) == 0
    assert list(read_db(crawl)) == ['http://www.a.test/']          # its links not added
    capsys.readouterr()
    assert main(['updatedb', crawl, os.path.basename(segment), '--now', str(NOW)]) == 0
    assert 'was applied before; applying it again' in capsys.readouterr().err
    assert len(read_db(crawl)) == 4                                # applied again, with links


@pytest.mark.slow
def test_sigkill_during_updatedb_keeps_previous_crawldb(tmp_path):
    crawl = str(tmp_path / 'crawl')
    write_db(crawl, [crawl_datum(f'http://h{i % 300}.test/p{i}', 'db_unfetched', fetch_time=0,
                                 fetch_interval=60) for i in range(80000)])
    segment = os.path.join(crawl, 'segments', '20261122000000')
    write_avro_file(os.path.join(segment, 'crawl_fetch', 'part-00000.avro'), CRAWL_DATUM_SCHEMA,
                    [crawl_datum(f'http://h{i % 300}.test/p{i}', 'fetch_success', fetch_time=NOW,
                                 fetch_interval=60, protocol_status='success')
                     for i in range(0, 80000, 2)])
    before = read_db(crawl)
    lock = os.path.join(crawl, 'crawldb', '.locked')
    writing = os.path.join(crawl, 'crawldb', '.tmp-crawldb-*', '.*.avro.inprogress')
    points = {'the lock is taken': lambda: os.path.exists(lock),
              'the new version is being written': lambda: glob.glob(writing)}
    for what, seen in points.items():
        kill_when(start_command('updatedb', crawl, '--now', str(NOW)), seen, what)
        assert os.path.exists(lock), what                 # killed mid-update ...
        assert read_db(crawl) == before, what             # ... and the crawldb is as it was
    assert glob.glob(writing)                             # the abandoned version is still there
    rerun = run_cli('updatedb', crawl, '--now', str(NOW))  # takes over the dead run's lock
    assert f'{lock}: taking over the lock left by a run that no longer runs' in rerun.stderr
    after = read_db(crawl)
    assert len(after) == 80000
    assert sum(r['status'] == 'db_fetched' for r in after.values()) == 40000
    assert not glob.glob(os.path.join(crawl, 'crawldb', '.tmp-*'))      # and removed now
