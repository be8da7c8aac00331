"""datumcodec: CrawlDatum records encoded by hand give fastavro's bytes, or are left to
fastavro; the score is found and replaced inside encoded records; records split out of a block
are the ones fastavro reads there; records decoded by hand, in our schema or in another
CrawlDatum-shaped one (the contract's fields only), are the ones fastavro reads. Every test runs
on both implementations of the hand codec: the C loops (storage/_datums.c) and their Python
twins."""

import io
import math
import random

import fastavro
import pytest

from beamcrawl.transforms.storage import datumcodec, native
from beamcrawl.transforms.storage.datumcodec import (datum_score_offset, datums_converter,
                                                     datums_decoder, decode_datum, decode_datums,
                                                     encode_datum, score_at, split_datums, varint,
                                                     with_score)
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, STATUSES, complete_datum,
                                                  crawl_datum)

SCHEMA = fastavro.parse_schema(CRAWL_DATUM_SCHEMA)
NOW = 1795305600000


@pytest.fixture(autouse=True, params=['c', 'python'])
def codec(request, monkeypatch):
    """The codec under test: the C loops (which the install builds: setup.py) or the Python
    ones."""
    if request.param == 'c':
        assert native.codec is not None, f'the C codec is {native.missing()}'
    else:
        monkeypatch.setattr(datumcodec, '_c', None)
    return request.param


def _fastavro(record):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, SCHEMA, record)
    return buf.getvalue()


def _decode(raw):
    return fastavro.schemaless_reader(io.BytesIO(raw), SCHEMA)


def _datum(**fields):
    record = crawl_datum('http://example.com/', 'db_fetched', fetch_time=NOW,
                         fetch_interval=2592000, score=1.0)
    record.update(fields)
    return record


PLAIN = [
    _datum(),
    _datum(url='http://xn--bcher-kva.example/ü/日本?q=ä#frag', status='db_unfetched'),
    _datum(url='', fetch_time=0, fetch_interval=0, score=0.0),
    _datum(fetch_time=-1, modified_time=-(1 << 63), retries=(1 << 31) - 1),
    _datum(fetch_time=(1 << 63) - 1, fetch_interval=-(1 << 31)),
    _datum(score=-0.0), _datum(score=float('inf')), _datum(score=float('-inf')),
    _datum(score=float('nan')), _datum(score=3), _datum(score=0.1), _datum(score=1e-45),
    _datum(signature=b''), _datum(signature=bytes(range(256))),
    _datum(metadata={'_ngt_': '1795305600000'}),
    _datum(metadata={'a': '', '': 'b', 'ключ': 'значение', 'fixedInterval': '86400.0'}),
    _datum(protocol_status='success', http_code=200),
    _datum(protocol_status='', http_code=-1),
    _datum(http_code=(1 << 31) - 1),
] + [_datum(status=status) for status in STATUSES]


@pytest.mark.parametrize('record', PLAIN)
def test_a_plain_record_gets_fastavros_bytes(record):
    assert encode_datum(record) == _fastavro(record)


def test_random_records_get_fastavros_bytes():
    rnd = random.Random(5)
    alphabet = 'abc/:?=&é日\u00a0%'
    for _ in range(3000):
        record = crawl_datum(
            'http://' + ''.join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 90))),
            rnd.choice(STATUSES), fetch_time=rnd.randint(-(1 << 63), (1 << 63) - 1),
            fetch_interval=rnd.randint(-(1 << 31), (1 << 31) - 1),
            modified_time=rnd.choice([0, NOW, rnd.randint(-(1 << 40), 1 << 40)]),
            retries=rnd.randint(0, 300), score=rnd.uniform(-1e30, 1e30),
            signature=rnd.choice([None, rnd.randbytes(rnd.randint(0, 40))]),
            metadata={str(rnd.random()): 'v' * rnd.randint(0, 200)
                      for _ in range(rnd.randint(0, 4))},
            protocol_status=rnd.choice([None, 'notfetching', 'ü']),
            http_code=rnd.choice([None, 0, 404, rnd.randint(-(1 << 31), (1 << 31) - 1)]))
        assert encode_datum(record) == _fastavro(record), record


@pytest.mark.parametrize('fields', [
    {'fetch_time': True}, {'fetch_time': 1.0}, {'fetch_time': 1 << 63},
    {'modified_time': -(1 << 63) - 1}, {'fetch_interval': 1 << 31}, {'retries': '0'},
    {'http_code': 2.0}, {'score': None}, {'score': '1'}, {'score': 1e40},
    {'signature': 'abc'}, {'signature': bytearray(b'x')}, {'metadata': {'k': 1}},
    {'metadata': [('k', 'v')]}, {'protocol_status': 1}, {'status': 'no_such_status'},
    {'url': b'http://bytes/'}, {'url': 'http://\ud800/'},
])
def test_a_record_not_plainly_typed_is_left_to_fastavro(fields):
    assert encode_datum(_datum(**fields)) is None


def test_a_record_missing_a_field_is_left_to_fastavro():
    record = _datum()
    del record['http_code']
    assert encode_datum(record) is None


@pytest.mark.parametrize('record', [r for r in PLAIN if not r['metadata']])
def test_the_score_is_found_and_replaced_in_the_bytes(record):
    raw = _fastavro(record)
    offset = datum_score_offset(raw)
    assert offset is not None
    expected = _decode(raw)['score']
    assert score_at(raw, offset) == expected or (math.isnan(expected)
                                                 and math.isnan(score_at(raw, offset)))
    patched = with_score(raw, offset, 2.5)
    assert _decode(patched) == dict(_decode(raw), score=2.5)


@pytest.mark.parametrize('record', [r for r in PLAIN if r['metadata']])
def test_a_record_with_metadata_has_no_score_offset(record):
    assert datum_score_offset(_fastavro(record)) is None


def test_cut_or_garbled_bytes_give_no_offset_or_a_valid_one():
    raw = _fastavro(_datum(signature=b'sig'))
    for end in range(len(raw)):
        assert datum_score_offset(raw[:end]) in (None, datum_score_offset(raw))
    assert datum_score_offset(b'\xff' * 40) is None


def _fastavro_read(data, count, schema=SCHEMA):
    """What fastavro reads in a block (written in `schema`): [(record, its bytes)]."""
    buf, out, start = io.BytesIO(data), [], 0
    for _ in range(count):
        record = fastavro.schemaless_reader(buf, schema)
        out.append((record, data[start:buf.tell()]))
        start = buf.tell()
    return out


def _fastavro_split(data, count):
    """What fastavro reads in a block: [(url, status, the record's bytes)]."""
    return [(r['url'], r['status'], raw) for r, raw in _fastavro_read(data, count)]


def _same(decoded, expected):
    """decode_datums' result is fastavro's (a NaN score equal to a NaN score)."""
    assert len(decoded) == len(expected)
    for (record, raw), (other, other_raw) in zip(decoded, expected):
        assert raw == other_raw and list(record) == list(other)
        for field, value in record.items():
            assert value == other[field] or (field == 'score' and math.isnan(value)
                                             and math.isnan(other[field])), (field, record)
            assert type(value) is type(other[field])


def _random_records(seed, n, bits=64):
    rnd = random.Random(seed)
    top = 1 << (bits - 1)
    alphabet = 'abc/:?=&é日\u00a0%'
    return [crawl_datum(
        'http://' + ''.join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 90))),
        rnd.choice(STATUSES), fetch_time=rnd.randint(-top, top - 1),
        fetch_interval=rnd.randint(-(1 << 31), (1 << 31) - 1),
        modified_time=rnd.choice([0, NOW, rnd.randint(-(1 << 40), 1 << 40)]),
        retries=rnd.randint(0, 300), score=rnd.uniform(-1e30, 1e30),
        signature=rnd.choice([None, rnd.randbytes(rnd.randint(0, 200))]),
        metadata={str(rnd.random()): 'v' * rnd.randint(0, 200) for _ in range(rnd.randint(0, 4))},
        protocol_status=rnd.choice([None, 'notfetching', 'ü' * rnd.randint(0, 80)]),
        http_code=rnd.choice([None, 0, 404, rnd.randint(-(1 << 31), (1 << 31) - 1)]))
        for _ in range(n)]


def test_a_block_splits_into_the_records_fastavro_reads():
    for records in (PLAIN, _random_records(7, 3000), [_datum(url='u' * 70)], []):
        data = b''.join(_fastavro(r) for r in records)
        split = split_datums(data, len(records))
        assert split == _fastavro_split(data, len(records))
        assert [(url, status) for url, status, _ in split] == \
            [(r['url'], r['status']) for r in records]


def test_a_map_in_blocks_with_their_sizes_splits_too():
    # Avro lets a writer give a map block's count negated and followed by its byte size;
    # fastavro writes none, another writer may.
    raw = _fastavro(_datum(metadata={'k': 'v'}))
    entries = b'\x02k\x02v'
    assert entries in raw
    other = raw.replace(varint(1) + entries + b'\x00',
                        varint(-1) + varint(len(entries)) + entries + varint(0))
    assert other != raw
    data = other + raw
    assert split_datums(data, 2) == _fastavro_split(data, 2)


def test_cut_garbled_or_miscounted_blocks_do_not_split():
    data = b''.join(_fastavro(r) for r in _random_records(9, 20))
    assert split_datums(data, 19) is None           # bytes left over
    assert split_datums(data, 21) is None           # a record missing
    for end in range(0, len(data), 7):
        assert split_datums(data[:end], 20) is None
    assert split_datums(b'\x02a\x7e' + b'\x00' * 20, 1) is None   # no such status
    assert split_datums(b'\x02\xff\x00' + b'\x00' * 20, 1) is None  # a URL not in UTF-8
    rnd = random.Random(3)
    for _ in range(2000):           # garbled: no split, or the one fastavro reads
        garbled = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            garbled[rnd.randrange(len(garbled))] = rnd.randrange(256)
        split = split_datums(bytes(garbled), 20)
        if split is not None:
            assert split == _fastavro_split(bytes(garbled), 20)


def _63_bits(record):
    return all(-(1 << 62) <= record[f] < 1 << 62 for f in ('fetch_time', 'modified_time'))


def test_a_block_decodes_into_the_records_fastavro_reads():
    for records in ([r for r in PLAIN if _63_bits(r)], _random_records(7, 3000, bits=63),
                    [_datum(url='u' * 70)], []):
        data = b''.join(_fastavro(r) for r in records)
        _same(decode_datums(data, len(records)), _fastavro_read(data, len(records)))


def test_a_long_of_64_bits_is_left_to_fastavro():
    for record in (_datum(fetch_time=(1 << 63) - 1), _datum(modified_time=-(1 << 63))):
        data = _fastavro(record)
        assert decode_datums(data, 1) is None
        assert split_datums(data, 1) is not None          # the split reads no value


def test_a_map_in_blocks_with_their_sizes_decodes_too():
    raw = _fastavro(_datum(metadata={'k': 'v', 'x': 'yz'}))
    entries = b'\x04\x02k\x02v\x02x\x04yz'
    assert entries in raw
    data = raw.replace(entries + b'\x00', varint(-2) + varint(9) + entries[1:] + b'\x00') + raw
    assert data[:len(raw)] != raw
    _same(decode_datums(data, 2), _fastavro_read(data, 2))


def test_cut_garbled_or_miscounted_blocks_do_not_decode():
    data = b''.join(_fastavro(r) for r in _random_records(9, 20, bits=63))
    assert decode_datums(data, 20) is not None
    assert decode_datums(data, 19) is None
    assert decode_datums(data, 21) is None
    for end in range(0, len(data), 7):
        assert decode_datums(data[:end], 20) is None
    rnd = random.Random(4)
    for _ in range(2000):           # garbled: not decoded, or decoded as fastavro does
        garbled = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            garbled[rnd.randrange(len(garbled))] = rnd.randrange(256)
        decoded = decode_datums(bytes(garbled), 20)
        if decoded is not None:
            _same(decoded, _fastavro_read(bytes(garbled), 20))


def test_one_record_decodes_as_fastavro_reads_it():
    for record in PLAIN:                # 64-bit longs too: fastavro reads those
        raw = _fastavro(record)
        _same([(decode_datum(raw), raw)], [(_decode(raw), raw)])
    with pytest.raises(Exception):
        decode_datum(b'\x02a\x7e')     # no such status: fastavro says so


def test_blocks_of_new_times_are_left_to_fastavro_and_tried_again_later(codec):
    """In Python a value decoded for the first time costs more than in fastavro's C; in C,
    every block is decoded."""
    from beamcrawl.transforms.storage.datumcodec import HandDecoder
    rnd = random.Random(2)
    repeated = b''.join(_fastavro(_datum(url=f'http://a.test/{i}')) for i in range(50))
    new = b''.join(_fastavro(_datum(url=f'http://a.test/{i}', fetch_time=rnd.randrange(1 << 50),
                                    modified_time=rnd.randrange(1 << 50))) for i in range(50))
    hand = HandDecoder()
    if codec == 'c':
        for block in (repeated, new) + (repeated,) * HandDecoder.PROBE:
            assert hand.decode(block, 50) is not None
        return
    assert hand.decode(repeated, 50) is not None
    assert hand.decode(new, 50) is not None              # decoded, but it brought new times:
    for _ in range(HandDecoder.PROBE - 1):
        assert hand.decode(repeated, 50) is None         # fastavro's for a while
    assert hand.decode(repeated, 50) is not None         # then tried again
    assert hand.decode(repeated, 50) is not None


# -- another writer's CrawlDatum-shaped schema ----------------------------------------------------
# A crawldb written by another tool carries only the contract's fields (docs/crawl-dir.md), its
# status enum's symbols in its own order; its crawl_fetch adds protocol_status as a plain string
# and http_code. The hand decoder must read such a block as fastavro reads it with the writer's
# schema alone (container.read_records gives no reader schema), and leave any other schema to
# fastavro.

CONTRACT_STATUSES = ['db_unfetched', 'db_fetched', 'db_gone', 'db_redir_temp', 'db_redir_perm',
                     'db_notmodified', 'db_duplicate', 'db_orphan', 'fetch_success',
                     'fetch_retry', 'fetch_redir_temp', 'fetch_redir_perm', 'fetch_gone',
                     'fetch_notmodified', 'signature', 'injected', 'linked']


def _contract(statuses=CONTRACT_STATUSES, signature=('null', 'bytes'), tail=()):
    """The contract's CrawlDatum schema (no namespace, no defaults but the signature's), with
    `tail` fields after metadata."""
    return {'type': 'record', 'name': 'CrawlDatum', 'fields': [
        {'name': 'url', 'type': 'string'},
        {'name': 'status', 'type': {'type': 'enum', 'name': 'CrawlStatus',
                                    'symbols': list(statuses)}},
        {'name': 'fetch_time', 'type': 'long'}, {'name': 'modified_time', 'type': 'long'},
        {'name': 'fetch_interval', 'type': 'int'}, {'name': 'retries', 'type': 'int'},
        {'name': 'score', 'type': 'float'},
        {'name': 'signature', 'type': list(signature), 'default': None},
        {'name': 'metadata', 'type': {'type': 'map', 'values': 'string'}}] + list(tail)}


_PROTOCOL = {'name': 'protocol_status', 'type': 'string'}
_HTTP = {'name': 'http_code', 'type': ['null', 'int'], 'default': None}
CONTRACT = _contract()
SHAPED = {       # writer schemas the hand decoder reads
    'contract': CONTRACT,
    'symbols reversed': _contract(statuses=CONTRACT_STATUSES[::-1]),
    'symbols shuffled, fewer': _contract(statuses=random.Random(1).sample(CONTRACT_STATUSES, 12)),
    'signature bytes first': _contract(signature=('bytes', 'null')),
    'crawl_fetch': _contract(tail=[_PROTOCOL, _HTTP]),
    'protocol union': _contract(tail=[{'name': 'protocol_status', 'type': ['null', 'string']}]),
    'protocol only': _contract(tail=[_PROTOCOL]),
    'http plain': _contract(tail=[_PROTOCOL, {'name': 'http_code', 'type': 'int'}]),
    'http union reversed': _contract(tail=[{'name': 'protocol_status', 'type': ['string', 'null']},
                                           {'name': 'http_code', 'type': ['int', 'null']}]),
    'java strings': dict(_contract(), fields=[
        dict(f, type={'type': 'string', 'avro.java.string': 'String'}) if f['type'] == 'string'
        else f for f in CONTRACT['fields']]),
    'ours': CRAWL_DATUM_SCHEMA,
}


def _fields(schema, **changes):
    """`schema` with its fields changed: name → new field (None: dropped)."""
    fields = []
    for field in schema['fields']:
        if field['name'] in changes:
            if changes[field['name']] is not None:
                fields.append(dict(field, **changes[field['name']]))
        else:
            fields.append(field)
    return dict(schema, fields=fields)


NOT_SHAPED = {   # writer schemas left to fastavro
    'modified_time missing': _fields(CONTRACT, modified_time=None),
    'metadata missing': _fields(CONTRACT, metadata=None),
    'url renamed': _fields(CONTRACT, url={'name': 'URL'}),
    'score a double': _fields(CONTRACT, score={'type': 'double'}),
    'fetch_time an int': _fields(CONTRACT, fetch_time={'type': 'int'}),
    'retries a long': _fields(CONTRACT, retries={'type': 'long'}),
    'fetch_time a timestamp': _fields(CONTRACT, fetch_time={
        'type': {'type': 'long', 'logicalType': 'timestamp-millis'}}),
    'status a string': _fields(CONTRACT, status={'type': 'string'}),
    'status of 65 symbols': _contract(statuses=[f's{i}' for i in range(65)]),
    'signature not null': _fields(CONTRACT, signature={'type': 'bytes', 'default': ''}),
    'signature a string': _contract(signature=('null', 'string')),
    'metadata of bytes': _fields(CONTRACT, metadata={'type': {'type': 'map', 'values': 'bytes'}}),
    'protocol_status bytes': _contract(tail=[{'name': 'protocol_status', 'type': 'bytes'}]),
    'http_code a long': _contract(tail=[_PROTOCOL, {'name': 'http_code', 'type': 'long'}]),
    'http_code without protocol': _contract(tail=[_HTTP]),
    'a field more': _contract(tail=[_PROTOCOL, _HTTP, {'name': 'x', 'type': 'int'}]),
    'fields in another order': dict(CONTRACT, fields=[CONTRACT['fields'][2],
                                                      CONTRACT['fields'][1],
                                                      CONTRACT['fields'][0]]
                                    + CONTRACT['fields'][3:]),
}


def _shaped_records(schema, records):
    """`records` as the writer of `schema` has them: its fields, statuses it has."""
    names = [f['name'] for f in schema['fields']]
    symbols = schema['fields'][1]['type']['symbols']
    out = []
    for i, record in enumerate(records):
        record = {name: record[name] for name in names}
        if record['status'] not in symbols:
            record['status'] = symbols[i % len(symbols)]
        for name in ('protocol_status', 'http_code'):    # a plain type: never null
            if name in record and record[name] is None and not isinstance(
                    schema['fields'][names.index(name)]['type'], list):
                record[name] = '' if name == 'protocol_status' else 0
        out.append(record)
    return out


def _block(schema, records):
    parsed = fastavro.parse_schema(schema)
    buf = io.BytesIO()
    for record in records:
        fastavro.schemaless_writer(buf, parsed, record)
    return buf.getvalue(), parsed


EDGE = [r for r in PLAIN if _63_bits(r)] + [
    _datum(signature=b'\x00\x02'), _datum(metadata={str(i): str(i) * i for i in range(70)}),
    _datum(fetch_time=(1 << 62) - 1, modified_time=-(1 << 62), fetch_interval=-(1 << 31),
           retries=(1 << 31) - 1),
    _datum(url='x' * 64), _datum(url='x' * 63), _datum(protocol_status='ü' * 100, http_code=-1)]


@pytest.mark.parametrize('name', sorted(SHAPED))
def test_a_crawldatum_shaped_block_decodes_into_the_records_fastavro_reads(name):
    schema = SHAPED[name]
    decode = datums_decoder(fastavro.parse_schema(schema))
    assert decode is not None
    assert datums_decoder(schema) is not None           # the schema as JSON gives, too
    for records in (EDGE, _random_records(11, 2000, bits=63), []):
        records = _shaped_records(schema, records)
        data, parsed = _block(schema, records)
        expected = _fastavro_read(data, len(records), parsed)
        _same(decode(data, len(records)), expected)
        assert len(expected[0][0] if expected else records) == len(schema['fields']) or \
            not records


@pytest.mark.parametrize('name', sorted(SHAPED))
def test_completed_records_are_the_ones_complete_datum_makes_of_fastavros(name):
    schema = SHAPED[name]
    decode = datums_decoder(schema, complete=True)
    records = _shaped_records(schema, EDGE + _random_records(13, 500, bits=63))
    data, parsed = _block(schema, records)
    expected = [(complete_datum(r), raw) for r, raw in _fastavro_read(data, len(records), parsed)]
    decoded = decode(data, len(records))
    _same(decoded, expected)
    assert all(len(r) == len(CRAWL_DATUM_SCHEMA['fields']) for r, _ in decoded)
    assert all(complete_datum(r) is r for r, _ in decoded)     # nothing left to complete


def test_the_status_is_the_writers_symbol_whatever_its_order():
    for statuses in (CONTRACT_STATUSES, CONTRACT_STATUSES[::-1], ['linked', 'db_fetched']):
        schema = _contract(statuses=statuses)
        records = [_datum(status=s) for s in statuses]
        data, parsed = _block(schema, _shaped_records(schema, records))
        decoded = datums_decoder(parsed)(data, len(records))
        assert [r['status'] for r, _ in decoded] == statuses
    schema = _contract(statuses=['linked', 'db_fetched'])
    data, parsed = _block(schema, _shaped_records(schema, [_datum(status='linked')]))
    assert data[1 + len('http://example.com/')] == 0        # after the URL: index 0, linked
    assert datums_decoder(parsed)(data, 1)[0][0]['status'] == 'linked'


def test_our_schema_gets_decode_datums():
    assert datums_decoder(SCHEMA) is decode_datums


@pytest.mark.parametrize('name', sorted(NOT_SHAPED))
def test_other_schemas_are_left_to_fastavro(name):
    schema = NOT_SHAPED[name]
    assert datums_decoder(schema) is None
    assert datums_decoder(fastavro.parse_schema(schema)) is None


@pytest.mark.parametrize('name', ['contract', 'crawl_fetch', 'symbols reversed'])
def test_cut_garbled_or_miscounted_contract_blocks_do_not_decode(name):
    schema = SHAPED[name]
    records = _shaped_records(schema, _random_records(12, 20, bits=63))
    data, parsed = _block(schema, records)
    decode = datums_decoder(parsed)
    assert decode(data, 20) is not None
    assert decode(data, 19) is None
    assert decode(data, 21) is None
    for end in range(0, len(data), 5):
        assert decode(data[:end], 20) is None
    rnd = random.Random(5)
    decoded_some = 0
    for _ in range(2000):           # garbled: not decoded, or decoded as fastavro does
        garbled = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            garbled[rnd.randrange(len(garbled))] = rnd.randrange(256)
        decoded = decode(bytes(garbled), 20)
        if decoded is not None:
            decoded_some += 1
            _same(decoded, _fastavro_read(bytes(garbled), 20, parsed))
    assert decoded_some > 100       # the comparison above was made


def test_a_long_of_64_bits_in_a_contract_block_is_left_to_fastavro():
    decode = datums_decoder(CONTRACT)
    for record in (_datum(fetch_time=(1 << 63) - 1), _datum(modified_time=-(1 << 63))):
        data, _ = _block(CONTRACT, _shaped_records(CONTRACT, [record]))
        assert decode(data, 1) is None


# -- another writer's CrawlDatum-shaped records made our schema's bytes --------------------------
# datums_converter must give, for every block it takes, exactly the bytes encode_datum gives
# each record as fastavro reads it (completed): what updatedb wrote before it existed. A block
# whose bytes would not come back the same (a varint not in its shortest form, a map in blocks
# or with a key twice, a NaN score, a status we have not, ...) is left to the caller (None).

def _encoded(data, count, parsed):
    """What decoding a block and encoding each record in our schema gives: [(url, status,
    bytes)] (None: a record that encode_datum leaves)."""
    out = []
    for record, _ in _fastavro_read(data, count, parsed):
        record = complete_datum(record)
        out.append((record['url'], record['status'], encode_datum(record)))
    return out


def _plain_values(records):
    """`records` with values the converter takes as they are: finite scores, ints of 27 bits."""
    out = []
    for r in records:
        r = dict(r, fetch_interval=r['fetch_interval'] % (1 << 26), retries=r['retries'] % 1000)
        if r['http_code'] is not None:
            r['http_code'] %= 1000
        if not math.isfinite(r['score']):
            r['score'] = 0.5
        out.append(r)
    return out


@pytest.mark.parametrize('name', sorted(SHAPED))
def test_a_crawldatum_shaped_block_converts_to_the_bytes_encoding_gives(name):
    schema = SHAPED[name]
    convert = datums_converter(fastavro.parse_schema(schema))
    assert datums_converter(schema) is not None
    edge = [r for r in EDGE if r['fetch_interval'] >= 0 and math.isfinite(r['score'])
            and 0 <= r['retries'] < 1000 and (r['http_code'] or 0) >= 0]
    for records in (_plain_values(edge), _plain_values(_random_records(11, 2000, bits=63)), []):
        records = _shaped_records(schema, records)
        data, parsed = _block(schema, records)
        expected = _encoded(data, len(records), parsed)
        assert all(raw is not None for _, _, raw in expected)
        assert convert(data, len(records)) == expected


def test_the_status_gets_our_index_and_a_status_we_have_not_leaves_the_block():
    for statuses in (STATUSES, CONTRACT_STATUSES[::-1], ['linked', 'db_fetched', 'odd']):
        schema = _contract(statuses=statuses)
        known = [s for s in statuses if s in STATUSES]
        records = _shaped_records(schema, [_datum(status=s) for s in known])
        data, parsed = _block(schema, records)
        converted = datums_converter(parsed)(data, len(records))
        assert converted == _encoded(data, len(records), parsed)
        assert [status for _, status, _ in converted] == known
        assert [raw[1 + len('http://example.com/')] for _, _, raw in converted] == \
            [2 * STATUSES.index(s) for s in known]
    data, parsed = _block(schema, _shaped_records(schema, [_datum(status='odd')]))
    assert datums_converter(parsed)(data, 1) is None


def test_a_reversed_signature_union_gets_our_branch_bytes():
    schema = SHAPED['signature bytes first']
    records = [_datum(signature=None), _datum(signature=b''), _datum(signature=b'\x00\x02')]
    data, parsed = _block(schema, _shaped_records(schema, records))
    converted = datums_converter(parsed)(data, 3)
    assert [raw for _, _, raw in converted] == [encode_datum(r) for r in records]


def test_the_missing_fields_are_appended_as_nulls():
    records = _plain_values(_random_records(3, 50, bits=63))
    data, parsed = _block(CONTRACT, _shaped_records(CONTRACT, records))
    converted = datums_converter(parsed)(data, 50)
    ours = [complete_datum(r) for r, raw in _fastavro_read(data, 50, parsed)]
    assert [_decode(raw) for _, _, raw in converted] == ours
    assert all(raw[-2:] == b'\x00\x00' for _, _, raw in converted)


def _varint_long(n, extra):
    """n's varint with `extra` needless bytes (continuation bits, then a zero byte)."""
    encoded = bytearray(varint(n))
    encoded[-1] |= 0x80
    return bytes(encoded) + b'\x80' * (extra - 1) + b'\x00'


LEFT = {        # records of the contract schema whose bytes encoding would not give back
    'a NaN score': _datum(score=float('nan')),
    'an infinite score': _datum(score=float('-inf')),
    'an interval of 28 bits': _datum(fetch_interval=1 << 27),
    'retries of 31 bits': _datum(retries=(1 << 31) - 1),
    'a long of 64 bits': _datum(fetch_time=-(1 << 63)),
}


@pytest.mark.parametrize('name', sorted(LEFT))
def test_a_record_whose_bytes_would_change_leaves_the_block(name):
    records = _shaped_records(CONTRACT, [_datum(), LEFT[name], _datum()])
    data, parsed = _block(CONTRACT, records)
    assert datums_converter(parsed)(data, 3) is None
    data, _ = _block(CONTRACT, records[:1])
    assert datums_converter(parsed)(data, 1) is not None      # the others convert


def _hand_block(url=b'http://example.com/', status=b'\x02', longs=None, score=b'\x00\x00\x80?',
                signature=b'\x00', metadata=b'\x00'):
    """One contract record's bytes, written by hand (fields' encodings given)."""
    longs = longs or [varint(NOW), varint(0), varint(86400), varint(0)]
    return varint(len(url)) + url + status + b''.join(longs) + score + signature + metadata


def test_varints_not_in_their_shortest_form_leave_the_block():
    convert = datums_converter(CONTRACT)
    plain = _hand_block()
    assert convert(plain, 1) == _encoded(plain, 1, fastavro.parse_schema(CONTRACT))
    url = b'http://example.com/'
    not_shortest = [
        _varint_long(len(url), 1) + _hand_block()[1:],
        _hand_block(longs=[_varint_long(NOW, 1), varint(0), varint(86400), varint(0)]),
        _hand_block(longs=[varint(NOW), _varint_long(0, 2), varint(86400), varint(0)]),
        _hand_block(longs=[varint(NOW), varint(0), varint(86400), _varint_long(3, 1)]),
        _hand_block(signature=b'\x02' + _varint_long(2, 1) + b'ab'),
        _hand_block(metadata=_varint_long(1, 1) + b'\x02k\x02v\x00'),
        _hand_block(metadata=b'\x02' + _varint_long(1, 1) + b'k\x02v\x00'),
        _hand_block(metadata=b'\x02\x02k' + _varint_long(1, 1) + b'v\x00'),
    ]
    for data in not_shortest:
        encoded = _encoded(data, 1, fastavro.parse_schema(CONTRACT))[0][2]   # fastavro reads it
        assert encoded != data + b'\x00\x00'      # but its bytes taken as they are would differ
        assert convert(data, 1) is None, data


def _decode_contract(data):
    return fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(CONTRACT))


def test_a_map_in_blocks_or_with_a_key_twice_leaves_the_block():
    convert = datums_converter(CONTRACT)
    one = _hand_block(metadata=b'\x04\x02a\x02x\x02b\x02y\x00')
    assert convert(one, 1) == _encoded(one, 1, fastavro.parse_schema(CONTRACT))
    for metadata in (b'\x03\x0c\x02a\x02x\x02b\x02y\x00',        # a block with its size
                     b'\x02\x02a\x02x\x02\x02b\x02y\x00',        # two blocks
                     b'\x04\x02a\x02x\x02a\x02y\x00'):           # the key 'a' twice
        data = _hand_block(metadata=metadata)
        assert _decode_contract(data)['metadata'] in ({'a': 'x', 'b': 'y'}, {'a': 'y'})
        assert convert(data, 1) is None


@pytest.mark.parametrize('name', ['contract', 'crawl_fetch', 'symbols reversed',
                                  'signature bytes first', 'http union reversed'])
def test_cut_garbled_or_miscounted_contract_blocks_do_not_convert(name):
    schema = SHAPED[name]
    records = _shaped_records(schema, _plain_values(_random_records(12, 20, bits=63)))
    data, parsed = _block(schema, records)
    convert = datums_converter(parsed)
    assert convert(data, 20) is not None
    assert convert(data, 19) is None
    assert convert(data, 21) is None
    for end in range(0, len(data), 5):
        assert convert(data[:end], 20) is None
    rnd = random.Random(5)
    converted_some = 0
    for _ in range(2000):       # garbled: not converted, or as decoding and encoding give
        garbled = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            garbled[rnd.randrange(len(garbled))] = rnd.randrange(256)
        converted = convert(bytes(garbled), 20)
        if converted is not None:
            converted_some += 1
            assert converted == _encoded(bytes(garbled), 20, parsed)
    assert converted_some > 100     # the comparison above was made


@pytest.mark.parametrize('name', sorted(NOT_SHAPED))
def test_other_schemas_get_no_converter(name):
    assert datums_converter(NOT_SHAPED[name]) is None
