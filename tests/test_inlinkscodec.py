"""inlinkscodec: Inlinks records encoded by hand give fastavro's bytes, or None where fastavro
decides (tables of edge cases, thousands of random records); the linkdb parts written with it
are the parts fastavro's encoder wrote."""

import io
import random

import fastavro
import pytest

from beamcrawl.transforms.invertlinks import InlinksReducer
from beamcrawl.transforms.storage.container import read_header
from beamcrawl.transforms.storage.inlinkscodec import encode_inlinks
from beamcrawl.transforms.storage.partwriter import PartWriter
from beamcrawl.transforms.storage.records import INLINKS_SCHEMA, inlinks

SCHEMA = fastavro.parse_schema(INLINKS_SCHEMA)


def fastavro_bytes(url, pairs):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, SCHEMA, inlinks(url, pairs))
    return buf.getvalue()


@pytest.mark.parametrize('url,pairs', [
    ('http://a.test/', []),
    ('', []),
    ('http://a.test/', [('', '')]),
    ('http://a.test/', [('http://b.test/', 'anchor')]),
    ('http://a.test/', [('http://b.test/', ''), ('http://c.test/', 'x')]),
    ('x' * 63, [('y' * 63, 'z' * 64)]),                # the one-byte lengths end at 63
    ('x' * 64, [('y' * 8191, 'z' * 8192)]),            # two-byte lengths end at 8191
    ('http://é.test/ü', [('http://日本.test/', 'ß → ✓ 😀')]),  # lengths in bytes, not characters
    ('http://a.test/', [('http://b.test/', str(i)) for i in range(64)]),   # a count of 64
    ('http://a.test/', [('http://b.test/', str(i)) for i in range(300)]),
    ('http://a.test/', (('http://b.test/', 'a tuple of pairs'),)),
])
def test_the_bytes_are_fastavros(url, pairs):
    assert encode_inlinks(url, pairs) == fastavro_bytes(url, pairs)


def test_random_records_give_fastavros_bytes():
    rng = random.Random(29)
    alphabet = 'abc/:.?=&-_%' + 'éü日😀' + '\x00\x7f'

    def text():
        n = rng.choice([0, 1, 5, 30, 63, 64, 65, 200, 9000] if rng.random() < 0.1 else [0, 5, 40])
        return ''.join(rng.choices(alphabet, k=n))

    for _ in range(3000):
        url = text()
        pairs = [(text(), text()) for _ in range(rng.choice([0, 1, 1, 2, 5, 5, 70]))]
        assert encode_inlinks(url, pairs) == fastavro_bytes(url, pairs)


@pytest.mark.parametrize('url,pairs', [
    (b'http://a.test/', []),                           # bytes where a str belongs
    (None, []),
    ('http://a.test/', [(b'http://b.test/', 'x')]),
    ('http://a.test/', [('http://b.test/', None)]),
    ('http://a.\udcff.test/', []),                     # a lone surrogate: UTF-8 has none
    ('http://a.test/', [('http://b.test/', '\ud800')]),
    ('http://a.test/', [('http://b.test/',)]),         # a pair of one value
    ('http://a.test/', [('http://b.test/', 'x', 'y')]),
    ('http://a.test/', [5]),
])
def test_what_is_not_plainly_typed_is_left_to_fastavro(url, pairs):
    assert encode_inlinks(url, pairs) is None


def test_a_reduced_partition_is_the_part_fastavro_wrote(tmp_path):
    """InlinksReducer writes through encode_inlinks; the same records written by fastavro
    give the same file (the sync marker is made from the path)."""
    rng = random.Random(3)
    groups = {}
    for i in range(2000):
        target = f'http://t{rng.randrange(500)}.test/{rng.randrange(3)}'
        groups.setdefault(target, []).append((f'http://s{i % 97}.test/p{i}', f'a{i % 5}'))
    groups['http://t-old.test/'] = [[('http://old.test/', 'old')], ('http://new.test/', 'new')]
    ours = str(tmp_path / 'part-00000.avro')
    with PartWriter(ours, INLINKS_SCHEMA, keys=True) as out:
        InlinksReducer(max_inlinks=3).write_grouped(groups, out, _NoCounts())
    theirs = str(tmp_path / 'fastavro' / 'part-00000.avro')
    (tmp_path / 'fastavro').mkdir()
    with PartWriter(theirs, INLINKS_SCHEMA, keys=True) as out:
        for url in sorted(groups):
            pairs = set()
            for value in groups[url]:
                if isinstance(value, tuple):
                    pairs.add(value)
                else:
                    pairs.update(value)
            out.write(inlinks(url, sorted(pairs)[:3]))
    with open(ours, 'rb') as a, open(theirs, 'rb') as b:
        ours_records, theirs_records = list(fastavro.reader(a)), list(fastavro.reader(b))
    assert ours_records == theirs_records and len(ours_records) == len(groups)
    # the files differ only by their sync markers, made from their paths
    assert _without_sync(ours) == _without_sync(theirs)
    assert _without_sync(ours[:-5] + '.keys', ours) == _without_sync(theirs[:-5] + '.keys', theirs)


class _NoCounts:
    def inc(self, *_):
        pass


def _without_sync(path, avro=None):
    """The file's bytes with its part's sync marker (made from the part's path) blanked."""
    sync = read_header(avro or path).sync
    with open(path, 'rb') as f:
        data = f.read()
    return data.replace(sync, b'\0' * 16).replace(sync.hex().encode(), b'0' * 32)
