"""inject: the transform on TestPipeline, and the command end to end on real files."""

import glob
import json
import os

import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms import settings
from beamcrawl.transforms.engine import units
from beamcrawl.transforms.inject import Inject
from beamcrawl.transforms.policy.inject import InjectRules
from beamcrawl.transforms.runners.runtime import counters_of
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from tests.conftest import kill_when, read_db, run_cli, start_command, write_seeds
from tests.workloads import PARALLEL, assert_partitioned

NOW = '2026-11-22T00:00:00Z'
NOW_MS = 1795305600000

SEEDS = [
    '# a comment, then a blank line',
    '',
    'http://WWW.A.test:80/x/../index.html\tscore=2.5\ttopic=news',
    'http://b.test/\tfetch_interval=3600\tfixed_interval=true',
    'http://b.test:80/\tscore=9',                  # duplicate of the previous URL: last wins
    'http://c.test/logo.png',                      # filtered (image)
    'mailto:someone@c.test',                       # filtered (scheme)
    'not a url at all',                            # malformed
    'http://d.test/ score=1',                      # malformed: metadata after spaces
    'http://e.test:99999/',                        # malformed port
    'http://f.test/page?id=1\tnutch.score=0.5\tnutch.fetchInterval=86400',
    'http://g.test/\tscore=lots',                  # bad metadata: ignored, URL injected
]


def _rules(**kw):
    base = dict(score_injected=1.0, interval_default=2592000, overwrite=False, update=False,
                purge_gone=False)
    return InjectRules(**{**base, **kw})


def test_inject_transform(tmp_path, runner, cfg):
    """The stage's PTransform on a pipeline: seeds and a crawldb in files, the new version
    written into the update's directory."""
    seeds = write_seeds(tmp_path / 'seeds.txt', ['http://a.test/', 'http://a.test/\tscore=3',
                                                 'http://new.test/', 'bad url'])
    old = crawl_datum('http://a.test/', 'db_fetched', fetch_time=7, fetch_interval=10, score=0.25)
    kept = crawl_datum('http://old.test/', 'db_gone', fetch_time=7, fetch_interval=10)
    db = DbLayout(str(tmp_path / 'crawldb'), 'crawldb')
    write_avro_file(f'{db.current}/part-00000.avro', CRAWL_DATUM_SCHEMA, [old, kept])
    out = DbUpdate(str(tmp_path / 'new'))
    p = TestPipeline(runner=runner)
    _ = p | Inject(crawldb=db, out=out, seed_paths=[seeds], policy=settings.url_policy(cfg),
                   rules=_rules(), now=100)
    result = p.run()
    result.wait_until_finish()
    written = sorted((r for path in glob.glob(f'{out.dir}/part-*.avro')
                      for r in iter_records([path])), key=lambda r: r['url'])
    assert written == [old, crawl_datum('http://new.test/', 'db_unfetched', fetch_time=100,
                                        fetch_interval=2592000, score=1.0), kept]
    counters = counters_of(result)
    assert counters['inject.lines'] == 4
    assert counters['inject.injected'] == 3
    assert counters['inject.malformed'] == 1
    assert counters['inject.duplicate_seeds'] == 1
    assert counters['inject.new'] == 1 and counters['inject.already_known'] == 1
    assert counters['crawldb.records'] == 3


def test_inject_then_readdb_stats(tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds.txt', SEEDS)
    proc = run_cli('inject', crawl, seeds, '--now', NOW, '-D', 'domain.extra.suffixes=test')
    assert '5 injected, 4 new' in proc.stdout and '3 malformed' in proc.stdout
    assert '2 filtered' in proc.stdout and '1 duplicate' in proc.stdout
    assert "seeds.txt:8: malformed URL 'not a url at all'" in proc.stderr
    assert 'seeds.txt:9: malformed seed line: metadata must be separated by TAB' in proc.stderr
    stats = json.loads(run_cli('readdb', crawl, '--stats', '--json').stdout)
    assert stats['total'] == 4
    assert stats['status'] == {'db_unfetched': 4}
    assert stats['score']['max'] == 9.0 and stats['score']['min'] == 0.5
    assert stats['fetch_time']['min'] == stats['fetch_time']['max'] == NOW_MS
    db = read_db(crawl)
    assert sorted(db) == ['http://b.test/', 'http://f.test/page?id=1', 'http://g.test/',
                          'http://www.a.test/index.html']
    a = db['http://www.a.test/index.html']
    assert (a['score'], a['metadata'], a['fetch_interval']) == (2.5, {'topic': 'news'}, 2592000)
    b = db['http://b.test/']      # the last line for b.test won, whole
    assert (b['score'], b['fetch_interval'], b['metadata']) == (9.0, 2592000, {})
    f = db['http://f.test/page?id=1']
    assert (f['score'], f['fetch_interval']) == (0.5, 86400)
    assert db['http://g.test/']['score'] == 1.0


def _inject(crawl, seeds, *extra, capsys=None):
    code = main(['inject', crawl, seeds, '--now', NOW, *extra])
    assert code == 0
    return capsys.readouterr().out if capsys else ''


def test_reinject_changes_nothing_and_keeps_backup(tmp_path, capsys):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds.txt', SEEDS)
    _inject(crawl, seeds)
    first = read_db(crawl)
    out = _inject(crawl, seeds, '--now', '2026-12-01T00:00:00Z', capsys=capsys)
    assert '0 new, 4 already known, 0 merged' in out
    assert read_db(crawl) == first
    assert os.path.isdir(os.path.join(crawl, 'crawldb', 'old'))
    assert not os.path.exists(os.path.join(crawl, 'crawldb', '.locked'))


def test_overwrite_and_update_behave_as_nutch(tmp_path, capsys):
    crawl = str(tmp_path / 'crawl')
    _inject(crawl, write_seeds(tmp_path / 's1', ['http://a.test/\tscore=2\tk=1\tx=old']))
    before = read_db(crawl)['http://a.test/']

    # --update: metadata merged, non-default score taken, default interval not, state kept
    out = _inject(crawl, write_seeds(tmp_path / 's2', ['http://a.test/\tscore=5\tk=2']),
                  '--update', '--now', '2026-12-01T00:00:00Z', capsys=capsys)
    assert '1 merged' in out
    after = read_db(crawl)['http://a.test/']
    assert after['metadata'] == {'k': '2', 'x': 'old'} and after['score'] == 5.0
    assert after['fetch_time'] == before['fetch_time']

    _inject(crawl, write_seeds(tmp_path / 's3', ['http://a.test/\tscore=1']), '--update')
    assert read_db(crawl)['http://a.test/']['score'] == 5.0   # default score: old one kept

    # --overwrite: the seed replaces the record entirely
    _inject(crawl, write_seeds(tmp_path / 's4', ['http://a.test/\tfetch_interval=60']),
            '--overwrite', '--now', '2026-12-02T00:00:00Z')
    over = read_db(crawl)['http://a.test/']
    assert over['metadata'] == {} and over['score'] == 1.0 and over['fetch_interval'] == 60
    assert over['fetch_time'] == 1795305600000 + 10 * 86400000


def test_seed_directory_reads_plain_files_only(tmp_path, capsys):
    seeds = tmp_path / 'seeds'
    (seeds / 'sub').mkdir(parents=True)
    write_seeds(seeds / 'one.txt', ['http://a.test/'])
    write_seeds(seeds / 'two.txt', ['http://b.test/'])
    write_seeds(seeds / '.hidden', ['http://hidden.test/'])
    write_seeds(seeds / 'sub' / 'three.txt', ['http://c.test/'])
    crawl = str(tmp_path / 'crawl')
    _inject(crawl, str(seeds))
    assert sorted(read_db(crawl)) == ['http://a.test/', 'http://b.test/']


def _compress(name, data):
    import bz2
    import gzip
    import lzma
    import zlib

    import zstandard
    return {'gz': gzip.compress, 'bz2': bz2.compress, 'xz': lzma.compress,
            'zst': zstandard.ZstdCompressor().compress, 'deflate': zlib.compress,
            'GZ': gzip.compress}[name.rsplit('.', 1)[1]](data)


@pytest.mark.parametrize('name', ['many.txt.gz', 'many.txt.bz2', 'many.txt.xz', 'many.zst',
                                  'many.deflate', 'MANY.TXT.GZ'])
def test_compressed_seed_files_are_read_decompressed(tmp_path, name):
    """Seeds compressed (as Nutch's inject reads a .gz through Hadoop), alone or in a seed
    directory beside a plain file: every URL, none malformed."""
    seeds = tmp_path / 'seeds'
    seeds.mkdir()
    (seeds / name).write_bytes(_compress(name, ''.join(
        f'http://a.test/{i}\n' for i in range(500)).encode()))
    write_seeds(seeds / 'plain.txt', ['http://b.test/'])
    crawl = str(tmp_path / 'crawl')
    proc = run_cli('inject', crawl, str(seeds / name), '--now', NOW)
    assert '500 injected' in proc.stdout and '0 malformed' in proc.stdout, proc.stdout
    crawl2 = str(tmp_path / 'crawl2')
    proc = run_cli('inject', crawl2, str(seeds), '--now', NOW)
    assert '501 injected' in proc.stdout and '0 malformed' in proc.stdout, proc.stdout
    assert sorted(read_db(crawl2)) == sorted([f'http://a.test/{i}' for i in range(500)] +
                                             ['http://b.test/'])


def _empty_dir(d):
    (d / 'empty').mkdir()
    return str(d / 'empty')


def _binary_file(d):
    (d / 'bin').write_bytes(b'\x00\x01\x02')
    return str(d / 'bin')


def _plain_named_gz(d):
    (d / 'seeds.txt.gz').write_text('http://a.test/\n')
    return str(d / 'seeds.txt.gz')


def _truncated_gz(d):
    import gzip
    data = gzip.compress(''.join(f'http://a.test/{i}\n' for i in range(2000)).encode())
    (d / 'seeds').mkdir()
    (d / 'seeds' / 'ok.txt').write_text('http://b.test/\n')
    (d / 'seeds' / 'cut.txt.gz').write_bytes(data[:len(data) // 2])
    return str(d / 'seeds')


@pytest.mark.parametrize('setup,message', [
    (lambda d: str(d / 'missing.txt'), 'missing.txt: seeds file or directory not found'),
    (_empty_dir, 'no seed files in this directory'),
    (_binary_file, 'bin: not a text file of seed URLs'),
    (_plain_named_gz, 'seeds.txt.gz: not a readable gzip file ('),
    (_truncated_gz, 'cut.txt.gz: not a readable gzip file (it ends in the middle of a stream'),
])
def test_bad_seeds_are_one_line_errors(tmp_path, setup, message):
    proc = run_cli('inject', str(tmp_path / 'crawl'), setup(tmp_path), check=False)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert 'Traceback' not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not os.path.exists(tmp_path / 'crawl' / 'crawldb' / 'current')


def test_corrupt_crawldb_is_a_one_line_error(tmp_path):
    crawl = tmp_path / 'crawl'
    (crawl / 'crawldb' / 'current').mkdir(parents=True)
    (crawl / 'crawldb' / 'current' / 'part-00000.avro').write_bytes(b'garbage')
    proc = run_cli('inject', str(crawl), write_seeds(tmp_path / 's', ['http://a.test/']),
                   check=False)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    assert 'part-00000.avro: not a readable Avro file' in proc.stderr
    assert not os.path.exists(crawl / 'crawldb' / '.locked')


def test_second_updater_exits_2_naming_the_lock(tmp_path):
    crawl = tmp_path / 'crawl'
    (crawl / 'crawldb').mkdir(parents=True)
    (crawl / 'crawldb' / '.locked').write_text('pid=1 command=inject\n')
    proc = run_cli('inject', str(crawl), write_seeds(tmp_path / 's', ['http://a.test/']),
                   check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert f'lock {crawl}/crawldb/.locked is held' in proc.stderr
    assert 'delete' in proc.stderr and 'Traceback' not in proc.stderr


def test_same_crawldb_on_direct_runner_and_pinned_runner(tmp_path):
    seeds = write_seeds(tmp_path / 'seeds.txt', SEEDS)
    pinned, direct = str(tmp_path / 'pinned'), str(tmp_path / 'direct')
    run_cli('inject', pinned, seeds, '--now', NOW)
    run_cli('inject', direct, seeds, '--now', NOW, '--runner', 'DirectRunner')
    assert read_db(pinned) == read_db(direct) and len(read_db(pinned)) == 4


def test_multi_threading_mode_is_refused(tmp_path):
    proc = run_cli('inject', str(tmp_path / 'c'), write_seeds(tmp_path / 's', ['http://a.test/']),
                   '--direct_running_mode=multi_threading', check=False)
    assert proc.returncode == 2 and 'loses records' in proc.stderr


@pytest.mark.slow
def test_sigkill_mid_inject_leaves_previous_crawldb_readable(tmp_path):
    crawl = str(tmp_path / 'crawl')
    run_cli('inject', crawl, write_seeds(tmp_path / 'small', ['http://keep.test/']), '--now', NOW)
    before = read_db(crawl)
    big = write_seeds(tmp_path / 'big', [f'http://h{i % 500}.test/p{i}' for i in range(60000)])
    lock = os.path.join(crawl, 'crawldb', '.locked')
    writing = os.path.join(crawl, 'crawldb', '.tmp-crawldb-*', '.*.avro.inprogress')
    points = {'the lock is taken': lambda: os.path.exists(lock),
              'the new version is being written': lambda: glob.glob(writing)}
    for what, seen in points.items():
        kill_when(start_command('inject', crawl, big, '--now', NOW), seen, what)
        assert os.path.exists(lock) and read_db(crawl) == before, what
    rerun = run_cli('inject', crawl, big, '--now', NOW)      # takes over the dead run's lock
    assert 'taking over the lock' in rerun.stderr
    assert len(read_db(crawl)) == 60001
    assert not [n for n in os.listdir(os.path.join(crawl, 'crawldb')) if n.startswith('.tmp-')]


def test_inject_through_units_names_file_and_line_and_merges_natively(tmp_path, monkeypatch):
    monkeypatch.setattr(units, 'BYTES_PER_TEXT_UNIT', 64)      # many units for a small file
    crawl = str(tmp_path / 'crawl')
    lines = [f'http://s{i % 4}.test/{i}\tscore={i % 3}' for i in range(40)]
    lines[33] = 'http://bad.test/ page score=1'                    # spaces, not TABs
    seeds = write_seeds(tmp_path / 'seeds.txt', lines)
    from beamcrawl.pipelines.cli import run_command
    assert run_command('inject', [crawl, seeds, '--now', str(NOW), '-D',
                                  'crawldb.partitions=3', '-D', 'domain.extra.suffixes=test']) == 0
    assert_partitioned(crawl)
    assert len(read_db(crawl)) == 39
    more = write_seeds(tmp_path / 'more.txt', ['http://s1.test/1\tscore=9', 'http://z.test/'])
    proc = run_cli('inject', crawl, more, '--update', '-D', 'crawldb.partitions=3',
                   '-D', 'domain.extra.suffixes=test', *PARALLEL)
    db = read_db(crawl)
    assert len(db) == 40 and db['http://s1.test/1']['score'] == 9.0
    assert '1 merged' in proc.stdout and '1 new' in proc.stdout
    assert_partitioned(crawl)


def test_inject_warning_names_the_line_in_a_later_unit(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(units, 'BYTES_PER_TEXT_UNIT', 64)
    lines = [f'http://s.test/{i}' for i in range(30)]
    lines[27] = 'http://bad.test/ page score=1'
    seeds = write_seeds(tmp_path / 'seeds.txt', lines)
    from beamcrawl.pipelines.cli import run_command
    assert run_command('inject', [str(tmp_path / 'crawl'), seeds, '--now', str(NOW)]) == 0
    assert f'{seeds}:28: malformed seed line' in capsys.readouterr().err
