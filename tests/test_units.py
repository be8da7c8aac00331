"""Work units: every record once whatever the codec; text units cut at line starts."""

import fastavro
import pytest

from beamcrawl.transforms.engine.units import avro_units, read_unit_lines, text_units
from beamcrawl.transforms.storage import container
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA
from tests.workloads import datums


@pytest.mark.parametrize('codec', ['null', 'deflate', 'bzip2'])
def test_units_cover_every_record_whatever_the_codec(tmp_path, codec):
    records = datums(1200)
    path = str(tmp_path / f'{codec}.avro')
    with open(path, 'wb') as f:
        fastavro.writer(f, fastavro.parse_schema(CRAWL_DATUM_SCHEMA), records, codec=codec,
                        sync_interval=1500)
    units = avro_units([('old', path)], schema=CRAWL_DATUM_SCHEMA, per_unit=100)
    assert sum(u.records for u in units) == len(records)
    native = codec in ('null', 'deflate')
    assert len(units) > 1 if native else len(units) == 1      # bzip2: read whole by fastavro
    assert all(u.raw_ok == native for u in units)
    got = [(r, raw) for u in units for r, raw in container.read_records(u.path, u.blocks)]
    assert [r for r, _ in got] == records
    assert all((raw is not None) == native for _, raw in got)


@pytest.mark.parametrize('per_unit', [1, 7, 30, 10 ** 6])
def test_text_units_cut_at_line_starts_and_know_their_line_numbers(tmp_path, per_unit):
    lines = [f'http://a.test/{i}' + 'x' * (i % 13) for i in range(50)] + ['', 'last']
    path = str(tmp_path / 'seeds.txt')
    with open(path, 'w') as f:
        f.write('\n'.join(lines))                 # no final newline
    units = text_units([('seeds', path)], per_unit=per_unit)
    got = [(n, raw) for u in units for n, raw in read_unit_lines(u)]
    assert [n for n, _ in got] == list(range(1, len(lines) + 1))
    assert [raw.decode().rstrip('\n') for _, raw in got] == lines


@pytest.mark.parametrize('suffix, opener', [('.gz', 'gzip'), ('.bz2', 'bz2'), ('.xz', 'lzma')])
def test_a_compressed_text_file_is_one_unit_read_decompressed(tmp_path, suffix, opener):
    import importlib
    lines = [f'http://a.test/{i}' for i in range(3000)]
    path = str(tmp_path / ('seeds.txt' + suffix))
    with importlib.import_module(opener).open(path, 'wt') as f:
        f.write('\n'.join(lines) + '\n')
    units = text_units([('seeds', path)], per_unit=100)
    assert len(units) == 1
    got = [(n, raw) for u in units for n, raw in read_unit_lines(u)]
    assert [n for n, _ in got] == list(range(1, len(lines) + 1))
    assert [raw.decode().rstrip('\n') for _, raw in got] == lines
