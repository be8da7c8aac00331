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


@pytest.mark.parametrize('per_unit', [1, 7, 30, 1000, 10 ** 6])
def test_a_compressed_text_file_with_a_scratch_dir_is_cut_as_its_plain_text(tmp_path, per_unit):
    """With a scratch directory, a compressed file is decompressed once into a plain copy and
    cut as the plain file would be: the same spans, the same line numbers, the same lines."""
    import gzip

    from beamcrawl.transforms.base import compression
    lines = [f'http://a.test/{i}' + 'x' * (i % 13) for i in range(3000)] + ['', 'last']
    text = '\n'.join(lines).encode()
    plain = str(tmp_path / 'seeds.txt')
    with open(plain, 'wb') as f:
        f.write(text)
    packed = str(tmp_path / 'seeds.txt.gz')
    with open(packed, 'wb') as f:           # two members, so a stream boundary falls inside
        f.write(gzip.compress(text[:5000]) + gzip.compress(text[5000:]))
    want = text_units([('seeds', plain)], per_unit=per_unit)
    old = compression.READ_BYTES
    compression.READ_BYTES = 997            # many pieces, cut anywhere
    try:
        got = text_units([('seeds', packed)], per_unit=per_unit, first_index=3,
                         scratch=str(tmp_path / 'scratch'))
    finally:
        compression.READ_BYTES = old
    assert [(u.index, u.span, u.first_line) for u in got] == \
        [(u.index + 3, u.span, u.first_line) for u in want]
    assert all(u.path == packed and u.read_from for u in got)
    assert [x for u in got for x in read_unit_lines(u)] == \
        [x for u in want for x in read_unit_lines(u)]
