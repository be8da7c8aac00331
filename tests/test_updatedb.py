"""updatedb: UpdateCrawlDb on a pipeline and through the command: multi-round crawls, one result
whatever the crawldb's layout and the workers, keys files, SIGKILL."""

import glob
import os

import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms import settings
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from beamcrawl.transforms.updatedb import MapRules, UpdateCrawlDb
from tests.conftest import kill_when, read_db, run_cli, start_command, write_db, write_seeds
from tests.testweb import Page
from tests.workloads import (IN_PROCESS, PARALLEL, assert_partitioned, crawldb_parts, run_updatedb,
                             update_workload)

DAY = 86400000
NOW = 1795305600000


def test_update_crawldb_transform(runner, cfg, tmp_path):
    """The stage's PTransform on a pipeline: a crawldb and a segment's records in part files,
    the new version written into the update's directory."""
    old = [crawl_datum('http://a.test/', 'db_unfetched', fetch_time=0, fetch_interval=60,
                       score=1.0, metadata={'_ngt_': '5'}),
           crawl_datum('http://gone.test/', 'db_gone', fetch_time=0, fetch_interval=60)]
    news = [crawl_datum('http://a.test/', 'fetch_success', fetch_time=NOW, fetch_interval=60,
                        score=1.0, protocol_status='success'),
            crawl_datum('http://a.test/', 'signature', fetch_time=NOW, fetch_interval=0,
                        signature=b'S'),
            crawl_datum('http://b.test/', 'linked', fetch_time=NOW, fetch_interval=60, score=0.5)]
    db = DbLayout(str(tmp_path / 'crawldb'), 'crawldb')
    write_avro_file(f'{db.current}/part-00000.avro', CRAWL_DATUM_SCHEMA, old)
    segment = str(tmp_path / 'crawl_fetch.avro')
    write_avro_file(segment, CRAWL_DATUM_SCHEMA, news)
    out = DbUpdate(str(tmp_path / 'new'))
    with TestPipeline(runner=runner) as p:
        _ = p | UpdateCrawlDb(
            crawldb=db, out=out, segment_files=[segment], rules=settings.update_rules(cfg),
            map_rules=MapRules(policy=settings.url_policy(cfg), purge_gone=True,
                               normalize=False, filter_urls=False), now=NOW)
    written = [r for path in sorted(glob.glob(f'{out.dir}/part-*.avro'))
               for r in iter_records([path])]
    assert [(r['url'], r['status'], r['signature'], r['score'], '_ngt_' in r['metadata'])
            for r in written] == [('http://a.test/', 'db_fetched', b'S', 1.0, False),
                                  ('http://b.test/', 'db_unfetched', None, 0.5, False)]


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


def test_updatedb_gives_one_result_whatever_the_layout_and_the_workers(tmp_path):
    results = {}
    for name, native, keys, extra in [
            ('foreign', False, False, IN_PROCESS), ('native', True, False, IN_PROCESS),
            ('native-keys', True, True, IN_PROCESS), ('native-parallel', True, False, PARALLEL),
            ('native-keys-parallel', True, True, PARALLEL),
            ('foreign-parallel', False, False, PARALLEL),
            ('other-schema', 'other', False, IN_PROCESS),
            ('other-schema-parallel', 'other', False, PARALLEL),
            ('contract-schema', 'contract', False, IN_PROCESS),
            ('contract-schema-parallel', 'contract', False, PARALLEL)]:
        crawl = str(tmp_path / name)
        update_workload(crawl, native, keys=keys)
        proc = run_updatedb(crawl, *extra)
        assert 'Traceback' not in proc.stderr and 'Worker:' not in proc.stderr
        assert 'INFO:apache_beam' not in proc.stderr
        assert_partitioned(crawl)
        results[name] = (read_db(crawl), proc.stdout)
    first = results['foreign']
    assert len(first[0]) > 400 and 'added' in first[1]
    for name, result in results.items():
        assert result == first, name


def test_updatedb_merges_an_unsorted_part_the_general_way(tmp_path):
    expected_crawl, crawl = str(tmp_path / 'sorted'), str(tmp_path / 'unsorted')
    update_workload(expected_crawl, native=True)
    update_workload(crawl, native=True)
    part = crawldb_parts(crawl)[1]
    records = list(iter_records([part]))
    write_avro_file(part, CRAWL_DATUM_SCHEMA, records[::-1])       # the note still says 3
    run_updatedb(expected_crawl, *IN_PROCESS)
    run_updatedb(crawl, *IN_PROCESS)
    assert read_db(crawl) == read_db(expected_crawl)
    assert_partitioned(crawl)


def test_updatedb_repartitions_when_the_partitioning_changes(tmp_path):
    crawl = str(tmp_path / 'crawl')
    update_workload(crawl, native=True, partitions=2)
    before = read_db(crawl)
    run_updatedb(crawl, *IN_PROCESS)                  # 2 → 3 parts
    assert len(crawldb_parts(crawl)) == 3
    assert_partitioned(crawl)
    assert set(before) <= set(read_db(crawl))


def test_a_corrupt_record_read_by_a_worker_is_one_line(tmp_path):
    crawl = str(tmp_path / 'crawl')
    update_workload(crawl, native=True, n=3000)
    path = os.path.join(crawl, 'segments', '20261122000000', 'crawl_parse', 'part-00000.avro')
    data = bytearray(open(path, 'rb').read())
    for i in range(len(data) // 2, len(data) // 2 + 64):
        data[i] ^= 0x5A
    open(path, 'wb').write(bytes(data))
    proc = run_cli('updatedb', crawl, '--now', str(NOW), *PARALLEL, check=False)
    assert proc.returncode == 2
    lines = [l for l in proc.stderr.splitlines() if ' INFO ' not in l]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f'beamcrawl updatedb: {path}: not a readable Avro file (')
    assert 'while running' not in lines[0]
    assert read_db(crawl)                          # the crawldb is as it was


def test_a_second_updatedb_gives_the_same_with_or_without_keys_files(tmp_path):
    crawls = [str(tmp_path / 'keys'), str(tmp_path / 'nokeys')]
    for crawl in crawls:
        update_workload(crawl, native=False)
        run_updatedb(crawl, *IN_PROCESS)                      # writes parts with keys files
    assert glob.glob(os.path.join(crawls[0], 'crawldb', 'current', 'part-*.keys'))
    for path in glob.glob(os.path.join(crawls[1], 'crawldb', 'current', 'part-*.keys')):
        os.remove(path)
    for crawl in crawls:
        urls = sorted(read_db(crawl))
        segment = os.path.join(crawl, 'segments', '20261123000000')
        write_avro_file(os.path.join(segment, 'crawl_fetch', 'part-00000.avro'),
                        CRAWL_DATUM_SCHEMA,
                        [crawl_datum(u, 'fetch_success', fetch_time=NOW + DAY,
                                     fetch_interval=86400, score=1.0, protocol_status='success')
                         for u in urls[::7]])
        write_avro_file(os.path.join(segment, 'crawl_parse', 'part-00000.avro'),
                        CRAWL_DATUM_SCHEMA,
                        [crawl_datum(f'http://more.test/{k}', 'linked', fetch_time=NOW + DAY,
                                     fetch_interval=86400, score=0.5) for k in range(30)])
        proc = run_cli('updatedb', crawl, '--now', str(NOW + DAY), '-D', 'crawldb.partitions=3',
                       *(PARALLEL if crawl == crawls[0] else IN_PROCESS))
        assert_partitioned(crawl)
    assert read_db(crawls[0]) == read_db(crawls[1])
    assert '30 added' in proc.stdout
