"""The bulk paths of the batch stages: Avro block framing (avroblocks), work units and
MapReduce (bulk), and inject / updatedb / invertlinks through them — on real files, in this
process and on worker processes, with a crawldb partitioned the same way (merge join), another
way, or out of order."""

import glob
import io
import os
import random
import zlib

import apache_beam as beam
import fastavro
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.engine import bulk
from beamcrawl.transforms.storage import container, keysfile, partwriter
from beamcrawl.transforms.storage.parts import iter_records, write_avro_file
from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage.databases import DbLayout
from beamcrawl.transforms.policy.partition import partition
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, INLINKS_SCHEMA, PARSE_DATA_SCHEMA,
                                          crawl_datum, inlinks, parse_data)
from beamcrawl.transforms.runners.runtime import local_workers
from tests.conftest import read_db, run_cli, write_seeds

NOW = 1795305600000
DAY = 86400000
PARALLEL = ['-D', 'runner.local.parallel.records=0', '-D', 'runner.local.workers=2']
IN_PROCESS = ['-D', 'runner.local.workers=1']


def _datums(n, seed=1):
    rnd = random.Random(seed)
    return [crawl_datum(f'http://h{i % 7}.test/p/{i}', rnd.choice(['db_fetched', 'db_unfetched']),
                        fetch_time=NOW - rnd.randint(0, 30) * DAY, fetch_interval=86400,
                        score=rnd.randint(0, 64) / 8,      # exact in the schema's 32-bit float
                        metadata={'k': str(i)} if i % 5 == 0 else {})
            for i in range(n)]


# -- avroblocks ---------------------------------------------------------------------------------

def test_part_writer_mixes_encoded_and_raw_records_into_a_valid_file(tmp_path):
    records = _datums(3000)
    source = str(tmp_path / 'source.avro')
    write_avro_file(source, CRAWL_DATUM_SCHEMA, records)
    out = str(tmp_path / 'part-00000.avro')
    with partwriter.PartWriter(out, CRAWL_DATUM_SCHEMA) as writer:
        assert not os.path.exists(out)               # appears only when complete
        for i, (record, raw) in enumerate(container.read_records(source)):
            if i % 2:
                writer.write_raw(raw)
            else:
                writer.write(record)
    assert os.path.exists(out) and not glob.glob(str(tmp_path / '.*inprogress'))
    with open(out, 'rb') as f:
        assert list(fastavro.reader(f)) == records
    header, blocks = container.scan_blocks(out)
    assert len(blocks) > 1 and sum(b.count for b in blocks) == len(records)


def test_part_writer_discards_the_file_on_error(tmp_path):
    out = str(tmp_path / 'part-00000.avro')
    with pytest.raises(RuntimeError):
        with partwriter.PartWriter(out, CRAWL_DATUM_SCHEMA) as writer:
            writer.write(_datums(1)[0])
            raise RuntimeError('stop')
    assert os.listdir(tmp_path) == []


def test_blocks_read_in_any_split_give_every_record_once_with_its_bytes(tmp_path):
    records = _datums(2500)
    path = str(tmp_path / 'a.avro')
    with open(path, 'wb') as f:
        fastavro.writer(f, fastavro.parse_schema(CRAWL_DATUM_SCHEMA), records, codec='deflate',
                        sync_interval=2000)
    _, blocks = container.scan_blocks(path)
    offsets = [b.offset for b in blocks]
    halves = [offsets[0::2], offsets[1::2]]
    got = [r for half in halves for r, _ in container.read_records(path, half)]
    assert sorted(got, key=lambda r: r['url']) == sorted(records, key=lambda r: r['url'])
    schema = fastavro.parse_schema(CRAWL_DATUM_SCHEMA)
    for record, raw in container.read_records(path, offsets[:2]):
        assert fastavro.schemaless_reader(io.BytesIO(raw), schema) == record


@pytest.mark.parametrize('codec', ['null', 'deflate', 'bzip2'])
def test_units_cover_every_record_whatever_the_codec(tmp_path, codec):
    records = _datums(1200)
    path = str(tmp_path / f'{codec}.avro')
    with open(path, 'wb') as f:
        fastavro.writer(f, fastavro.parse_schema(CRAWL_DATUM_SCHEMA), records, codec=codec,
                        sync_interval=1500)
    units = bulk.avro_units([('old', path)], schema=CRAWL_DATUM_SCHEMA, per_unit=100)
    assert sum(u.records for u in units) == len(records)
    native = codec in ('null', 'deflate')
    assert len(units) > 1 if native else len(units) == 1      # bzip2: read whole by fastavro
    assert all(u.raw_ok == native for u in units)
    got = [(r, raw) for u in units for r, raw in container.read_records(u.path, u.blocks)]
    assert [r for r, _ in got] == records
    assert all((raw is not None) == native for _, raw in got)


def test_raw_copy_only_when_the_schema_is_the_same(tmp_path):
    older = {**CRAWL_DATUM_SCHEMA, 'fields': [f for f in CRAWL_DATUM_SCHEMA['fields']
                                              if f['name'] != 'http_code']}
    path = str(tmp_path / 'old.avro')
    write_avro_file(path, older, [{k: v for k, v in r.items() if k != 'http_code'}
                                  for r in _datums(10)])
    assert not bulk.avro_units([('old', path)], schema=CRAWL_DATUM_SCHEMA, per_unit=5)[0].raw_ok


@pytest.mark.parametrize('damage', ['truncate', 'garbage', 'sync', 'not avro'])
def test_damaged_files_are_input_errors_naming_the_file(tmp_path, damage):
    path = str(tmp_path / 'part-00000.avro')
    write_avro_file(path, CRAWL_DATUM_SCHEMA, _datums(3000))
    data = bytearray(open(path, 'rb').read())
    if damage == 'truncate':
        data = data[:len(data) - 100]
    elif damage == 'garbage':
        for i in range(len(data) // 2, len(data) // 2 + 64):
            data[i] ^= 0x5A
    elif damage == 'sync':
        data[-1] ^= 0xFF
    else:
        data = bytearray(b'url\thttp://a.test/\n' * 50)
    open(path, 'wb').write(bytes(data))
    with pytest.raises(InputError) as e:
        bulk.avro_units([('old', path)], schema=CRAWL_DATUM_SCHEMA, per_unit=100)
        list(container.read_records(path))
    assert str(e.value).startswith(path + ': ')


# -- units, partitions, joins --------------------------------------------------------------------

@pytest.mark.parametrize('per_unit', [1, 7, 30, 10 ** 6])
def test_text_units_cut_at_line_starts_and_know_their_line_numbers(tmp_path, per_unit):
    lines = [f'http://a.test/{i}' + 'x' * (i % 13) for i in range(50)] + ['', 'last']
    path = str(tmp_path / 'seeds.txt')
    with open(path, 'w') as f:
        f.write('\n'.join(lines))                 # no final newline
    units = bulk.text_units([('seeds', path)], per_unit=per_unit)
    got = [(n, raw) for u in units for n, raw in bulk.read_unit_lines(u)]
    assert [n for n, _ in got] == list(range(1, len(lines) + 1))
    assert [raw.decode().rstrip('\n') for _, raw in got] == lines


@pytest.mark.parametrize('setting, records, workers, expected', [
    (3, 10 ** 9, 2, 3),          # set: as set
    (0, 0, 1, 1),
    (0, 100, 2, 2),              # at least one per worker
    (0, 1_000_000, 2, 4),        # 250k per partition
    (0, 1_100_000, 2, 6),        # ... rounded up to a multiple of the workers
    (0, 1_100_000, 1, 5),
])
def test_partitions_for(setting, records, workers, expected):
    assert bulk.partitions_for(setting, records, workers) == expected


def _native_db(directory, records, n, keys=False):
    """A crawldb partitioned as bulk writes it; `keys`: with keys files, as PartWriter writes
    them (unchanged records are then copied a run at a time, bulk.join_keyed)."""
    parts = [[] for _ in range(n)]
    for r in records:
        parts[partition(r['url'], n)].append(r)
    for i, part in enumerate(parts):
        path = os.path.join(directory, f'part-{i:05d}.avro')
        part = sorted(part, key=lambda r: r['url'])
        if keys:
            os.makedirs(directory, exist_ok=True)
            with partwriter.PartWriter(path, CRAWL_DATUM_SCHEMA, keys=True) as out:
                for record in part:
                    out.write(record)
        else:
            write_avro_file(path, CRAWL_DATUM_SCHEMA, part)
    with open(os.path.join(directory, '_partitions'), 'w') as f:
        f.write(str(n))


def test_choose_partitions_keeps_a_database_in_its_partitioning(tmp_path):
    db = DbLayout(str(tmp_path / 'crawldb'), 'crawldb')
    _native_db(db.current, _datums(10), 6)
    assert bulk.choose_partitions(0, 1_000_000, 2, db) == 6       # ideal 4: 6 is close enough
    assert bulk.choose_partitions(0, 5_000_000, 2, db) == 20      # ideal 20: re-partitioned
    assert bulk.choose_partitions(3, 1_000_000, 2, db) == 3       # set explicitly
    assert bulk.aligned_parts(db, 6) == {i: f'{db.current}/part-{i:05d}.avro' for i in range(6)}
    assert bulk.aligned_parts(db, 4) is None
    os.remove(f'{db.current}/part-00005.avro')
    assert bulk.aligned_parts(db, 6) is None                      # a part is missing


@pytest.mark.parametrize('old, new, expected', [
    ([], ['b', 'a'], [('a', None, 'A'), ('b', None, 'B')]),
    (['a', 'c'], [], [('a', 'a', None), ('c', 'c', None)]),
    (['b', 'd'], ['a', 'b', 'c', 'e'],
     [('a', None, 'A'), ('b', 'b', 'B'), ('c', None, 'C'), ('d', 'd', None), ('e', None, 'E')]),
])
def test_join_sorted(old, new, expected):
    joined = bulk.join_sorted(((u, 's', b'raw', None) for u in old),
                              {u: u.upper() for u in new})
    assert [(u, u if raw else None, v) for u, _, raw, _, v in joined] == expected


def test_join_sorted_refuses_an_old_part_out_of_order():
    with pytest.raises(bulk.Unsorted):
        list(bulk.join_sorted(((u, '', b'', None) for u in ['a', 'c', 'b']), {'b': 1}))
    with pytest.raises(bulk.Unsorted):
        list(bulk.join_sorted(((u, '', b'', None) for u in ['a', 'a']), {}))


def _write_join(entries, path):
    """Writes what a reducer would: a touched or new URL as a fresh record, an untouched one
    as its bytes."""
    with partwriter.PartWriter(path, CRAWL_DATUM_SCHEMA, keys=True) as out:
        for url, status, raw, _, values in entries(out):
            if values is None:
                out.write_raw(raw, url, status)
            else:
                out.write(crawl_datum(url, 'db_fetched', fetch_time=NOW, fetch_interval=1,
                                      score=float(len(values)),
                                      metadata={'was': status or 'new'}))


@pytest.mark.parametrize('seed', range(12))
def test_join_keyed_writes_what_the_record_by_record_join_writes(tmp_path, seed):
    rnd = random.Random(seed)
    records = sorted(_datums(rnd.choice([0, 1, 5, 900, 3000]), seed), key=lambda r: r['url'])
    old = str(tmp_path / 'part-00000.avro')
    with partwriter.PartWriter(old, CRAWL_DATUM_SCHEMA, keys=True) as out:
        for record in records:
            out.write(record)
    urls = [r['url'] for r in records]
    touched = rnd.sample(urls, rnd.randint(0, len(urls)))
    news = [f'http://h{j % 7}.test/{rnd.choice("aqz")}/{j}' for j in range(rnd.randint(0, 200))]
    groups = {url: ['v'] * rnd.randint(1, 3) for url in touched + news}
    part = keysfile.open_keyed(old)
    copied = bytearray()
    _write_join(lambda out: bulk.join_keyed(part, groups, out, copied),
                str(tmp_path / 'keyed.avro'))
    _write_join(lambda out: bulk.join_sorted(
        ((u, s, raw, None) for u, s, raw in keysfile.read_keyed(old)), groups),
        str(tmp_path / 'sorted.avro'))
    keyed, by_record = (list(container.read_records(str(tmp_path / name)))
                        for name in ('keyed.avro', 'sorted.avro'))
    assert keyed == by_record
    assert len(keyed) == len(set(urls) | set(groups))
    assert list(keysfile.read_keyed(str(tmp_path / 'keyed.avro'))) == \
        list(keysfile.read_keyed(str(tmp_path / 'sorted.avro')))
    untouched = [r['status'] for r in records if r['url'] not in groups]
    assert sorted(part.keys.statuses[i] for i in copied) == sorted(untouched)


class _CopyMapper(bulk.Mapper):
    def map(self, unit, counts):
        for record, raw in container.read_records(unit.path, unit.blocks):
            counts.inc(metrics.CRAWLDB_RECORDS)
            yield record['url'], raw


class _CopyReducer(bulk.Reducer):
    def reduce(self, index, groups, path, counts):
        with partwriter.PartWriter(path, CRAWL_DATUM_SCHEMA) as out:
            for url in sorted(groups):
                for raw in groups[url]:
                    out.write_raw(raw)


def test_map_reduce_partitions_and_sorts_every_record(tmp_path, runner):
    records = _datums(700)
    for i in range(3):
        write_avro_file(str(tmp_path / f'in-{i}.avro'), CRAWL_DATUM_SCHEMA, records[i::3])
    units = bulk.avro_units([('x', str(tmp_path / f'in-{i}.avro')) for i in range(3)],
                            schema=CRAWL_DATUM_SCHEMA, per_unit=50)
    out = tmp_path / 'out'
    out.mkdir()
    with TestPipeline(runner=runner) as p:
        paths = p | bulk.MapReduce(units=units, mapper=_CopyMapper(), reducer=_CopyReducer(),
                                   partitions=5, scratch=str(tmp_path / 'scratch'),
                                   out_dir=str(out))
        assert_that(paths | beam.Map(os.path.basename),
                    equal_to([f'part-{i:05d}.avro' for i in range(5)]))
    for i in range(5):
        part = list(iter_records([str(out / f'part-{i:05d}.avro')]))
        assert [r['url'] for r in part] == sorted(r['url'] for r in part)
        assert all(zlib.crc32(r['url'].encode()) % 5 == i for r in part)
    assert sorted((r for i in range(5) for r in iter_records([str(out / f'part-{i:05d}.avro')])),
                  key=lambda r: r['url']) == sorted(records, key=lambda r: r['url'])


@pytest.mark.parametrize('args, records, expected', [
    ([], 10, 1),                                        # small: this process
    ([], 10 ** 7, os.cpu_count()),                      # large: one per core
    (['--direct_num_workers=3'], 10, 3),                # Beam's option decides
    (['--runner', 'FlinkRunner'], 10 ** 7, 1),          # not the local runner
])
def test_local_workers(cfg, args, records, expected):
    assert local_workers(args, cfg, records) == expected


# -- the stages through the bulk path ------------------------------------------------------------

def _segment(crawl, records_by_part):
    segment = os.path.join(crawl, 'segments', '20261122000000')
    for part, records in records_by_part.items():
        write_avro_file(os.path.join(segment, part, 'part-00000.avro'), CRAWL_DATUM_SCHEMA,
                        records)
    return segment


def _update_workload(crawl, native, n=400, partitions=3, keys=False):
    """A crawldb of n URLs (some with a generate marker) and a segment that fetches some,
    re-signs some (also unfetched ones) and links to old and new URLs (some gone, some
    redirected)."""
    old = _datums(n, seed=2)
    old[3] = dict(old[3], status='db_gone')
    for i in range(0, n, 11):
        old[i] = dict(old[i], metadata=dict(old[i]['metadata'], _ngt_=str(NOW - DAY)))
    db = os.path.join(crawl, 'crawldb', 'current')
    if native:
        _native_db(db, old, partitions, keys)
    else:
        write_avro_file(os.path.join(db, 'part-00000.avro'), CRAWL_DATUM_SCHEMA, old)
    rnd = random.Random(4)
    fetched = [crawl_datum(r['url'], rnd.choice(['fetch_success', 'fetch_gone', 'fetch_retry',
                                                 'fetch_redir_perm', 'fetch_notmodified']),
                           fetch_time=NOW, fetch_interval=86400, score=1.0,
                           protocol_status='success') for r in old[:n // 4]]
    signatures = [crawl_datum(r['url'], 'signature', fetch_time=NOW, fetch_interval=0,
                              signature=b'%d' % (i % 3))
                  for i, r in enumerate(old[:n // 8] + old[n // 4:n // 4 + 10])]
    links = [crawl_datum(rnd.choice(old)['url'] if k % 2 else f'http://new{k % 5}.test/{k}',
                         'linked', fetch_time=NOW, fetch_interval=86400, score=0.1)
             for k in range(n)]
    _segment(crawl, {'crawl_fetch': fetched, 'crawl_parse': signatures + links})


def _parts(crawl):
    return sorted(glob.glob(os.path.join(crawl, 'crawldb', 'current', 'part-*.avro')))


def _assert_native(crawl):
    """The crawldb as inject/updatedb write it: part i holds crc32 mod N == i, sorted."""
    parts = _parts(crawl)
    with open(os.path.join(crawl, 'crawldb', 'current', '_partitions')) as f:
        assert int(f.read()) == len(parts)
    for i, path in enumerate(parts):
        urls = [r['url'] for r in iter_records([path])]
        assert urls == sorted(set(urls))
        assert all(partition(u, len(parts)) == i for u in urls)


def _updatedb(crawl, *extra):
    return run_cli('updatedb', crawl, '--now', str(NOW), '-D', 'crawldb.partitions=3', *extra)


def test_updatedb_gives_one_result_whatever_the_layout_and_the_workers(tmp_path):
    results = {}
    for name, native, keys, extra in [
            ('foreign', False, False, IN_PROCESS), ('native', True, False, IN_PROCESS),
            ('native-keys', True, True, IN_PROCESS), ('native-parallel', True, False, PARALLEL),
            ('native-keys-parallel', True, True, PARALLEL),
            ('foreign-parallel', False, False, PARALLEL)]:
        crawl = str(tmp_path / name)
        _update_workload(crawl, native, keys=keys)
        proc = _updatedb(crawl, *extra)
        assert 'Traceback' not in proc.stderr and 'Worker:' not in proc.stderr
        assert 'INFO:apache_beam' not in proc.stderr
        _assert_native(crawl)
        results[name] = (read_db(crawl), proc.stdout)
    first = results['foreign']
    assert len(first[0]) > 400 and 'added' in first[1]
    for name, result in results.items():
        assert result == first, name


def test_updatedb_merges_an_unsorted_part_the_general_way(tmp_path):
    expected_crawl, crawl = str(tmp_path / 'sorted'), str(tmp_path / 'unsorted')
    _update_workload(expected_crawl, native=True)
    _update_workload(crawl, native=True)
    part = _parts(crawl)[1]
    records = list(iter_records([part]))
    write_avro_file(part, CRAWL_DATUM_SCHEMA, records[::-1])       # the note still says 3
    _updatedb(expected_crawl, *IN_PROCESS)
    _updatedb(crawl, *IN_PROCESS)
    assert read_db(crawl) == read_db(expected_crawl)
    _assert_native(crawl)


def test_updatedb_repartitions_when_the_partitioning_changes(tmp_path):
    crawl = str(tmp_path / 'crawl')
    _update_workload(crawl, native=True, partitions=2)
    before = read_db(crawl)
    _updatedb(crawl, *IN_PROCESS)                  # 2 → 3 parts
    assert len(_parts(crawl)) == 3
    _assert_native(crawl)
    assert set(before) <= set(read_db(crawl))


def test_a_corrupt_record_read_by_a_worker_is_one_line(tmp_path):
    crawl = str(tmp_path / 'crawl')
    _update_workload(crawl, native=True, n=3000)
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


def test_inject_through_units_names_file_and_line_and_merges_natively(tmp_path, monkeypatch):
    monkeypatch.setattr(bulk, 'BYTES_PER_TEXT_UNIT', 64)      # many units for a small file
    crawl = str(tmp_path / 'crawl')
    lines = [f'http://s{i % 4}.test/{i}\tscore={i % 3}' for i in range(40)]
    lines[33] = 'http://bad.test/ page score=1'                    # spaces, not TABs
    seeds = write_seeds(tmp_path / 'seeds.txt', lines)
    from beamcrawl.pipelines.cli import run_command
    assert run_command('inject', [crawl, seeds, '--now', str(NOW), '-D',
                                  'crawldb.partitions=3', '-D', 'domain.extra.suffixes=test']) == 0
    _assert_native(crawl)
    assert len(read_db(crawl)) == 39
    more = write_seeds(tmp_path / 'more.txt', ['http://s1.test/1\tscore=9', 'http://z.test/'])
    proc = run_cli('inject', crawl, more, '--update', '-D', 'crawldb.partitions=3',
                   '-D', 'domain.extra.suffixes=test', *PARALLEL)
    db = read_db(crawl)
    assert len(db) == 40 and db['http://s1.test/1']['score'] == 9.0
    assert '1 merged' in proc.stdout and '1 new' in proc.stdout
    _assert_native(crawl)


def test_inject_warning_names_the_line_in_a_later_unit(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bulk, 'BYTES_PER_TEXT_UNIT', 64)
    lines = [f'http://s.test/{i}' for i in range(30)]
    lines[27] = 'http://bad.test/ page score=1'
    seeds = write_seeds(tmp_path / 'seeds.txt', lines)
    from beamcrawl.pipelines.cli import run_command
    assert run_command('inject', [str(tmp_path / 'crawl'), seeds, '--now', str(NOW)]) == 0
    assert f'{seeds}:28: malformed seed line' in capsys.readouterr().err


def _linkdb_workload(crawl, existing_native):
    rnd = random.Random(9)
    urls = [f'http://l{i % 6}.test/{i}' for i in range(300)]
    old = [inlinks(u, [(rnd.choice(urls), f'old {i}')]) for i, u in enumerate(urls[:150])]
    directory = os.path.join(crawl, 'linkdb', 'current')
    if existing_native:
        parts = [[] for _ in range(4)]
        for r in old:
            parts[partition(r['url'], 4)].append(r)
        for i, part in enumerate(parts):
            write_avro_file(f'{directory}/part-{i:05d}.avro', INLINKS_SCHEMA,
                            sorted(part, key=lambda r: r['url']))
        with open(f'{directory}/_partitions', 'w') as f:
            f.write('4')
    else:
        write_avro_file(f'{directory}/part-00000.avro', INLINKS_SCHEMA, old)
    segment = os.path.join(crawl, 'segments', '20261122000000')
    write_avro_file(f'{segment}/parse_data/part-00000.avro', PARSE_DATA_SCHEMA, [
        parse_data(u, title='t', parse_status='success',
                   outlinks=[(rnd.choice(urls), f'text {k}') for k in range(5)])
        for u in urls])
    write_avro_file(f'{segment}/crawl_parse/part-00000.avro', CRAWL_DATUM_SCHEMA, [])


def _linkdb(crawl):
    out = {}
    for path in glob.glob(os.path.join(crawl, 'linkdb', 'current', 'part-*.avro')):
        for r in iter_records([path]):
            out[r['url']] = sorted((i['from_url'], i['anchor']) for i in r['inlinks'])
    return out


def test_invertlinks_gives_one_result_whatever_the_layout_and_the_workers(tmp_path):
    results = []
    for native in (True, False):
        for extra in (IN_PROCESS, PARALLEL):
            crawl = str(tmp_path / f'{native}-{len(extra)}')
            _linkdb_workload(crawl, native)
            run_cli('invertlinks', crawl, '-D', 'linkdb.partitions=4',
                    '-D', 'domain.extra.suffixes=test', *extra)
            results.append(_linkdb(crawl))
            for i, path in enumerate(sorted(glob.glob(f'{crawl}/linkdb/current/part-*.avro'))):
                urls = [r['url'] for r in iter_records([path])]
                assert urls == sorted(urls) and all(partition(u, 4) == i for u in urls)
    assert len(results[0]) > 150 and all(r == results[0] for r in results)


def test_keys_files_let_unchanged_records_be_copied_undecoded(tmp_path):
    records = sorted(_datums(2000), key=lambda r: r['url'])
    part = str(tmp_path / 'part-00000.avro')
    with partwriter.PartWriter(part, CRAWL_DATUM_SCHEMA, keys=True) as out:
        for r in records:
            out.write(r)
    assert os.path.exists(keysfile.keys_path(part))
    keyed = list(keysfile.read_keyed(part))
    decoded = list(container.read_records(part))
    assert [(u, s) for u, s, _ in keyed] == [(r['url'], r['status']) for r, _ in decoded]
    assert [raw for _, _, raw in keyed] == [raw for _, raw in decoded]
    write_avro_file(part, CRAWL_DATUM_SCHEMA, records)    # rewritten by another writer
    assert keysfile.read_keyed(part) is None            # the stale keys file is not used
    with open(keysfile.keys_path(part), 'wb') as f:
        f.write(b'BCKEYS1\n{not json')
    assert keysfile.read_keyed(part) is None


def test_a_second_updatedb_gives_the_same_with_or_without_keys_files(tmp_path):
    crawls = [str(tmp_path / 'keys'), str(tmp_path / 'nokeys')]
    for crawl in crawls:
        _update_workload(crawl, native=False)
        _updatedb(crawl, *IN_PROCESS)                      # writes parts with keys files
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
        _assert_native(crawl)
    assert read_db(crawls[0]) == read_db(crawls[1])
    assert '30 added' in proc.stdout
