"""base/compression.py: compressed text inputs by their name, every damaged stream an error."""

import bz2
import gzip
import lzma
import zlib

import pytest
import zstandard

from beamcrawl.transforms.base.compression import CompressionError, decompress, kind

pytestmark = pytest.mark.unit

TEXT = b''.join(b'http://a.test/%d\n' % i for i in range(3000))


@pytest.mark.parametrize('path, expected', [
    ('seeds.txt', None), ('seeds.txt.GZ', 'gzip'), ('s3://b/seeds.gz', 'gzip'),
    ('a.bz2', 'bzip2'), ('a.xz', 'xz'), ('a.lzma', 'xz'), ('a.deflate', 'deflate'),
    ('a.zst', 'zstd'), ('a.zstd', 'zstd'), ('gz', None), ('a.gzip', None), ('a.tgz', None),
])
def test_the_kind_is_the_suffix_beam_knows(path, expected):
    assert kind(path) == expected


STREAMS = [
    ('gzip', gzip.compress(TEXT[:20000]) + gzip.compress(TEXT[20000:])),     # two members
    ('bzip2', bz2.compress(TEXT)),
    ('xz', lzma.compress(TEXT)),
    ('xz', lzma.compress(TEXT, format=lzma.FORMAT_ALONE)),
    ('deflate', zlib.compress(TEXT)),
    ('zstd', zstandard.ZstdCompressor().compress(TEXT[:20000]) +
     zstandard.ZstdCompressor().compress(TEXT[20000:])),                  # two frames
]


IDS = ['gzip', 'bzip2', 'xz', 'lzma', 'deflate', 'zstd']


@pytest.mark.parametrize('how, data', STREAMS, ids=IDS)
def test_a_whole_stream_decompresses_whole(how, data):
    assert decompress(data, how) == TEXT


@pytest.mark.parametrize('how, data', STREAMS, ids=IDS)
@pytest.mark.parametrize('damage', ['truncated', 'plain text', 'one byte'])
def test_a_damaged_stream_is_an_error_not_a_short_read(how, data, damage):
    bad = {'truncated': data[:len(data) - 7], 'plain text': TEXT[:100],
           'one byte': data[:1]}[damage]
    with pytest.raises(CompressionError, match=f'not a readable {how} file'):
        decompress(bad, how)


@pytest.mark.parametrize('how', sorted(set(IDS) - {'lzma'}))
def test_an_empty_file_holds_nothing_whatever_its_name(how):
    assert decompress(b'', how) == b''
