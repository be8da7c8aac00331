"""parse_data's URLs and outlinks read by hand (container.read_outlinks, parsedata.walk_block)
are what fastavro reads: random pages, odd strings, arrays in several blocks and with their
byte sizes, other writers' schemas of the same layout; other layouts and damaged blocks go to
fastavro, which raises what it raises."""

import io
import random

import fastavro
import pytest

from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage import container, parsedata
from beamcrawl.transforms.storage.datumcodec import varint
from beamcrawl.transforms.storage.records import PARSE_DATA_SCHEMA


def fastavro_links(path):
    with open(path, 'rb') as f:
        return [(r['url'], [(o['to_url'], o['anchor']) for o in r['outlinks']])
                for r in fastavro.reader(f)]


def text(rng):
    n = rng.choice([0, 1, 5, 40, 63, 64, 65, 300] if rng.random() < 0.2 else [0, 8, 30])
    return ''.join(rng.choices('ab/:.?=&é日😀\x00', k=n))


def pages(n, seed=1):
    rng = random.Random(seed)
    return [{'url': text(rng), 'title': text(rng), 'parse_status': rng.choice(['success', '']),
             'outlinks': [{'to_url': text(rng), 'anchor': text(rng)}
                          for _ in range(rng.choice([0, 1, 5, 5, 70]))],
             'metadata': {text(rng): text(rng) for _ in range(rng.choice([0, 0, 1, 3]))}}
            for _ in range(n)]


def write(path, schema, records, codec='deflate'):
    with open(path, 'wb') as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec=codec,
                        sync_interval=4000)
    return path


@pytest.mark.parametrize('codec', ['null', 'deflate'])
def test_random_pages_read_by_hand_are_fastavros(tmp_path, codec):
    path = write(str(tmp_path / 'p.avro'), PARSE_DATA_SCHEMA, pages(1500), codec)
    header, blocks = container.scan_blocks(path)
    assert len(blocks) > 5 and parsedata.plain_layout(header.schema)
    expected = fastavro_links(path)
    assert list(container.read_outlinks(path)) == expected
    first = blocks[0].count
    assert list(container.read_outlinks(path, [blocks[1].offset])) == \
        expected[first:first + blocks[1].count]


def test_another_writers_schema_of_the_same_layout(tmp_path):
    other = {'type': 'record', 'name': 'Page', 'namespace': 'else.where', 'fields': [
        {'name': 'url', 'type': 'string'}, {'name': 'title', 'type': 'string'},
        {'name': 'parse_status', 'type': 'string'},
        {'name': 'outlinks', 'type': {'type': 'array', 'items': {
            'type': 'record', 'name': 'Link', 'fields': [
                {'name': 'to_url', 'type': 'string'}, {'name': 'anchor', 'type': 'string'}]}}},
        {'name': 'metadata', 'type': {'type': 'map', 'values': 'string'}}]}
    path = write(str(tmp_path / 'p.avro'), other, pages(300, seed=2))
    assert parsedata.plain_layout(container.read_header(path).schema)
    assert list(container.read_outlinks(path)) == fastavro_links(path)


def _string(s):
    data = s.encode('utf-8')
    return varint(len(data)) + data


def test_arrays_and_maps_in_several_blocks_with_their_sizes():
    # fastavro writes one block; another writer may write several, or negative counts followed
    # by the block's byte size
    links = _string('http://b/') + _string('b') + _string('http://c/') + _string('c')
    record = (_string('http://a/') + _string('t') + _string('success')
              + varint(-2) + varint(len(links)) + links
              + varint(1) + _string('http://d/') + _string('') + varint(0)
              + varint(1) + _string('k') + _string('v') + varint(-1) + varint(4)
              + _string('l') + _string('w') + varint(0))
    schema = fastavro.parse_schema(PARSE_DATA_SCHEMA)
    got = parsedata.walk_block(record * 3, 3)
    want = fastavro.schemaless_reader(io.BytesIO(record), schema)
    assert want['metadata'] == {'k': 'v', 'l': 'w'}
    assert got == [(want['url'], [(o['to_url'], o['anchor']) for o in want['outlinks']])] * 3


@pytest.mark.parametrize('damage', ['cut', 'more', 'fewer', 'utf8-url', 'utf8-title',
                                    'utf8-metadata', 'long-varint'])
def test_a_block_that_does_not_walk_cleanly_is_left_to_fastavro(damage):
    good = (_string('http://a/') + _string('t') + _string('s') + varint(1)
            + _string('http://b/') + _string('x') + varint(0) + varint(1) + _string('k')
            + _string('v') + varint(0))
    data, count = {
        'cut': (good[:-3], 1), 'more': (good + good[:4], 1), 'fewer': (good, 2),
        'utf8-url': (b'\x04\xff\xfe' + good[10:], 1),
        'utf8-title': (_string('http://a/') + b'\x02\xff' + good[12:], 1),
        'utf8-metadata': (good[:-4] + b'\x02\xff' + good[-2:], 1),
        'long-varint': (b'\xff' * 11 + good, 1),
    }[damage]
    assert parsedata.walk_block(data, count) is None


def test_other_layouts_are_read_by_fastavro(tmp_path):
    base = PARSE_DATA_SCHEMA['fields']
    layouts = {
        'a field more': base + [{'name': 'extra', 'type': 'string', 'default': ''}],
        'another order': [base[1], base[0]] + base[2:],
        'a logical type': [dict(base[0], type={'type': 'string', 'logicalType': 'uuid'})]
        + base[1:],
        'a union': [dict(base[1], type=['null', 'string'])] + [base[0]] + base[2:],
    }
    for name, fields in layouts.items():
        schema = dict(PARSE_DATA_SCHEMA, fields=fields)
        assert not parsedata.plain_layout(fastavro.parse_schema(schema)), name
    path = write(str(tmp_path / 'x.avro'), dict(PARSE_DATA_SCHEMA, fields=layouts['a field more']),
                 [dict(p, extra='e') for p in pages(50)], 'null')
    assert list(container.read_outlinks(path)) == fastavro_links(path)


def test_a_damaged_part_raises_what_fastavro_raises(tmp_path):
    path = write(str(tmp_path / 'p.avro'), PARSE_DATA_SCHEMA, pages(200), 'null')
    with open(path, 'r+b') as f:
        data = bytearray(f.read())
        start = container.scan_blocks(path)[1][0].offset
        data[start + 6:start + 40] = b'\xff' * 34
        f.seek(0)
        f.write(data)
    with pytest.raises(InputError, match='p.avro'):
        list(container.read_outlinks(path))
