"""Reading the Avro framing: blocks in any split, raw bytes only for the same schema, damaged
files."""

import io

import fastavro
import pytest

from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.engine import units
from beamcrawl.transforms.storage import container
from beamcrawl.transforms.storage.datumcodec import datums_decoder, encode_datum
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, complete_datum
from tests.workloads import datums


def test_blocks_read_in_any_split_give_every_record_once_with_its_bytes(tmp_path):
    records = datums(2500)
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


def test_raw_copy_only_when_the_schema_is_the_same(tmp_path):
    older = {**CRAWL_DATUM_SCHEMA, 'fields': [f for f in CRAWL_DATUM_SCHEMA['fields']
                                              if f['name'] != 'http_code']}
    path = str(tmp_path / 'old.avro')
    write_avro_file(path, older, [{k: v for k, v in r.items() if k != 'http_code'}
                                  for r in datums(10)])
    assert not units.avro_units([('old', path)], schema=CRAWL_DATUM_SCHEMA, per_unit=5)[0].raw_ok


@pytest.mark.parametrize('damage', ['truncate', 'garbage', 'sync', 'not avro'])
def test_damaged_files_are_input_errors_naming_the_file(tmp_path, damage):
    path = str(tmp_path / 'part-00000.avro')
    write_avro_file(path, CRAWL_DATUM_SCHEMA, datums(3000))
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
        units.avro_units([('old', path)], schema=CRAWL_DATUM_SCHEMA, per_unit=100)
        list(container.read_records(path))
    assert str(e.value).startswith(path + ': ')


@pytest.mark.parametrize('codec', ['null', 'deflate'])
def test_crawldb_records_read_by_hand_are_the_ones_fastavro_reads(tmp_path, codec):
    records = datums(1500)
    for i in range(0, 1500, 97):        # a long of 64 bits: its block is read by fastavro
        records[i] = dict(records[i], fetch_time=(1 << 63) - 1)
    path = str(tmp_path / 'a.avro')
    schema = fastavro.parse_schema(CRAWL_DATUM_SCHEMA)
    with open(path, 'wb') as f:
        fastavro.writer(f, schema, records, codec=codec, sync_interval=3000)
    with open(path, 'rb') as f:
        expected = list(fastavro.reader(f))
    assert expected == records
    got = list(container.read_records(path))
    assert [r for r, _ in got] == expected
    assert all(fastavro.schemaless_reader(io.BytesIO(raw), schema) == r for r, raw in got)
    assert [r for r, raw in container.read_records(path, with_raw=False)] == expected
    assert [(url, status, raw) for url, status, raw in container.read_datum_keys(
        path, [b.offset for b in container.scan_blocks(path)[1]])] == \
        [(r['url'], r['status'], raw) for r, raw in got]


CONTRACT_STATUSES = ['linked', 'injected', 'db_unfetched', 'db_fetched', 'db_gone',
                     'db_redir_perm', 'fetch_success', 'fetch_gone', 'signature']


def _contract(**changes):
    """A CrawlDatum schema of another writer: the contract's fields only, its own status
    symbol order (docs/crawl-dir.md); `changes` replaces fields' types."""
    fields = [
        {'name': 'url', 'type': 'string'},
        {'name': 'status', 'type': {'type': 'enum', 'name': 'CrawlStatus',
                                    'symbols': CONTRACT_STATUSES}},
        {'name': 'fetch_time', 'type': 'long'}, {'name': 'modified_time', 'type': 'long'},
        {'name': 'fetch_interval', 'type': 'int'}, {'name': 'retries', 'type': 'int'},
        {'name': 'score', 'type': 'float'},
        {'name': 'signature', 'type': ['null', 'bytes'], 'default': None},
        {'name': 'metadata', 'type': {'type': 'map', 'values': 'string'}}]
    return {'type': 'record', 'name': 'CrawlDatum',
            'fields': [dict(f, type=changes.get(f['name'], f['type'])) for f in fields]}


@pytest.mark.parametrize('codec', ['null', 'deflate'])
@pytest.mark.parametrize('schema', [_contract(), _contract(score='double')],
                         ids=['contract', 'not hand-decoded'])
def test_records_of_another_writers_schema_are_the_ones_fastavro_reads(tmp_path, codec, schema):
    names = [f['name'] for f in schema['fields']]
    records = []
    for i, record in enumerate(datums(1500)):
        record = {name: record[name] for name in names}
        record['status'] = CONTRACT_STATUSES[i % len(CONTRACT_STATUSES)]
        if i % 97 == 0:             # a long of 64 bits: its block is read by fastavro
            record['fetch_time'] = (1 << 63) - 1
        if i % 5 == 0:
            record['metadata'] = {'k': str(i)}
            record['signature'] = b'%d' % i
        records.append(record)
    path = str(tmp_path / 'a.avro')
    parsed = fastavro.parse_schema(schema)
    with open(path, 'wb') as f:
        fastavro.writer(f, parsed, records, codec=codec, sync_interval=3000)
    with open(path, 'rb') as f:
        expected = list(fastavro.reader(f))
    assert [r['status'] for r in expected] == [r['status'] for r in records]
    got = list(container.read_records(path))
    assert [r for r, _ in got] == expected
    assert all(fastavro.schemaless_reader(io.BytesIO(raw), parsed) == r for r, raw in got)
    assert [r for r, raw in container.read_records(path, with_raw=False)] == expected
    completed = [complete_datum(r) for r in expected]
    assert [r for r, _ in container.read_records(path, with_raw=False, complete=True)] == completed
    assert [r for r, _ in container.read_records(path, complete=True)] == completed
    blocks = container.scan_blocks(path)[1]
    assert len(blocks) > 2
    first = blocks[0].count
    assert [r for r, _ in container.read_records(path, [blocks[1].offset], with_raw=False)] \
        == expected[first:first + blocks[1].count]
    # the first schema is read by hand (datumcodec.datums_decoder), the second by fastavro
    assert (datums_decoder(parsed) is not None) == (schema['fields'][6]['type'] == 'float')


@pytest.mark.parametrize('codec', ['null', 'deflate'])
def test_records_of_another_writers_schema_split_into_our_schemas_bytes(tmp_path, codec):
    # read_datum_keys gives what decoding and encoding each record gives (datums_converter for
    # the blocks it takes, fastavro and encode_datum for the others), and the completed record
    # where encode_datum leaves it (an int out of its range, which fastavro writes anyway).
    schema = _contract()
    names = [f['name'] for f in schema['fields']]
    records = []
    for i, record in enumerate(datums(1500)):
        record = {name: record[name] for name in names}
        record['status'] = CONTRACT_STATUSES[i % len(CONTRACT_STATUSES)]
        if i % 5 == 0:
            record['metadata'] = {'k': str(i), 'l': ''}
            record['signature'] = b'%d' % i
        if i % 211 == 0:            # a long of 64 bits: its block is decoded and encoded
            record['fetch_time'] = (1 << 63) - 1
        if i == 700:                # an int out of its range: the record is given as a dict
            record['retries'] = 1 << 40
        records.append(record)
    path = str(tmp_path / 'a.avro')
    with open(path, 'wb') as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec=codec,
                        sync_interval=3000)
    assert container.splits_datums(path)
    expected = []
    for record in _completed(path):
        raw = encode_datum(record)
        expected.append((record['url'], record['status'], record if raw is None else raw))
    assert sum(isinstance(raw, dict) for _, _, raw in expected) == 1
    blocks = container.scan_blocks(path)[1]
    assert len(blocks) > 5
    got = list(container.read_datum_keys(path, [b.offset for b in blocks]))
    assert got == expected
    first = blocks[0].count
    assert list(container.read_datum_keys(path, [blocks[1].offset])) == \
        expected[first:first + blocks[1].count]


def _completed(path):
    with open(path, 'rb') as f:
        return [complete_datum(r) for r in fastavro.reader(f)]


def test_only_crawldatum_shaped_parts_in_blocks_split(tmp_path):
    records = [{f['name']: r[f['name']] for f in _contract()['fields']} for r in datums(10)]
    for name, schema, codec, splits in [('contract', _contract(), 'deflate', True),
                                        ('ours', CRAWL_DATUM_SCHEMA, 'null', True),
                                        ('double', _contract(score='double'), 'null', False),
                                        ('bzip2', _contract(), 'bzip2', False)]:
        path = str(tmp_path / f'{name}.avro')
        with open(path, 'wb') as f:
            fastavro.writer(f, fastavro.parse_schema(schema), [
                complete_datum(r) if schema is CRAWL_DATUM_SCHEMA else r for r in records],
                codec=codec)
        assert container.splits_datums(path) == splits, name


@pytest.mark.parametrize('codec', ['null', 'deflate'])
def test_datums_come_with_their_bytes_in_our_schema(tmp_path, codec):
    # read_datums: the completed records read_records gives, each with what encode_datum gives
    # it (another writer's blocks made ours, datums_converter) or None for a block the
    # converter leaves (a long of 64 bits); a file in our schema gives its own bytes.
    schema = _contract()
    names = [f['name'] for f in schema['fields']]
    records = []
    for i, record in enumerate(datums(1200)):
        record = {name: record[name] for name in names}
        record['status'] = CONTRACT_STATUSES[i % len(CONTRACT_STATUSES)]
        if i % 5 == 0:
            record['metadata'] = {'k': str(i)}
            record['signature'] = b'%d' % i
        if i == 555:
            record['fetch_time'] = (1 << 63) - 1
        records.append(record)
    path = str(tmp_path / 'contract.avro')
    with open(path, 'wb') as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec=codec,
                        sync_interval=3000)
    blocks = container.scan_blocks(path)[1]
    got = list(container.read_datums(path, [b.offset for b in blocks]))
    assert [r for r, _ in got] == _completed(path)
    leftover = [r for r, raw in got if raw is None]
    assert 0 < len(leftover) < 100 and any(r['fetch_time'] == (1 << 63) - 1 for r in leftover)
    assert all(raw == encode_datum(r) for r, raw in got if raw is not None)
    assert list(container.read_datums(path, [blocks[2].offset])) == \
        got[sum(b.count for b in blocks[:2]):sum(b.count for b in blocks[:3])]
    ours = str(tmp_path / 'ours.avro')
    write_avro_file(ours, CRAWL_DATUM_SCHEMA, _completed(path))
    assert list(container.read_datums(ours)) == list(container.read_records(ours))
    other = str(tmp_path / 'double.avro')           # not CrawlDatum-shaped: no bytes
    with open(other, 'wb') as f:
        fastavro.writer(f, fastavro.parse_schema(_contract(score='double')), records[:50],
                        codec=codec)
    with open(other, 'rb') as f:
        expected = [(complete_datum(r), None) for r in fastavro.reader(f)]
    assert list(container.read_datums(other)) == expected
