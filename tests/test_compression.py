"""base/compression.py: compressed text inputs by their name, every damaged stream an error."""

import bz2
import gzip
import io
import lzma
import zlib

import pytest
import zstandard

from beamcrawl.transforms.base.compression import (CompressionError, chunks, head, kind, lines,
                                                   read, size)

pytestmark = pytest.mark.unit

def decompress(data, how):
    return read(io.BytesIO(data), how)


TEXT = b''.join(b'http://a.test/%d\n' % i for i in range(3000))


@pytest.mark.parametrize('path, expected', [
    ('seeds.txt', None), ('seeds.txt.GZ', 'gzip'), ('s3://b/seeds.gz', 'gzip'),
    ('a.bz2', 'bzip2'), ('a.xz', 'xz'), ('a.lzma', 'xz'), ('a.deflate', 'deflate'),
    ('a.zst', 'zstd'), ('a.zstd', 'zstd'), ('gz', None), ('a.gzip', None), ('a.tgz', None),
])
def test_the_kind_is_the_suffix_beam_knows(path, expected):
    assert kind(path) == expected


def _cut(data):
    return data[:len(data) - 7]


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


def _two(how, first, second):
    return {'gzip': gzip.compress, 'bzip2': bz2.compress, 'xz': lzma.compress,
            'zstd': zstandard.ZstdCompressor().compress}[how](first), \
        {'gzip': gzip.compress, 'bzip2': bz2.compress, 'xz': lzma.compress,
         'zstd': zstandard.ZstdCompressor().compress}[how](second)


@pytest.mark.parametrize('how', ['gzip', 'bzip2', 'xz', 'zstd'])
@pytest.mark.parametrize('after', ['a damaged second stream', 'a second stream cut short',
                                   'garbage'])
def test_what_follows_a_good_stream_is_checked_too(how, after):
    """bz2.decompress and lzma.decompress stop quietly at the first good stream when what
    follows is not one: a file's later streams, and bytes after its last, are checked."""
    one, two = _two(how, TEXT[:20000], TEXT[20000:])
    tail = {'a damaged second stream': two[:6] + bytes(b ^ 0x5A for b in two[6:40]) + two[40:],
            'a second stream cut short': _cut(two),
            'garbage': b'this is not a stream'}[after]
    assert decompress(one + two, how) == TEXT
    with pytest.raises(CompressionError, match=f'not a readable {how} file'):
        decompress(one + tail, how)


def test_bytes_after_a_deflate_stream_are_an_error():
    with pytest.raises(CompressionError, match='bytes after the end of its stream'):
        decompress(zlib.compress(TEXT) + b'x', 'deflate')


@pytest.mark.parametrize('how', ['gzip', 'bzip2', 'xz', 'zstd'])
def test_zero_padding_between_and_after_streams_is_skipped(how):
    one, two = _two(how, TEXT[:20000], TEXT[20000:])
    assert decompress(one + bytes(8) + two + bytes(4), how) == TEXT


def test_a_long_window_zstd_file_is_read_as_beam_reads_it():
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=31)
    data = zstandard.ZstdCompressor(compression_params=params).compress(TEXT)
    assert decompress(data, 'zstd') == TEXT


class _Trickle:
    """A raw file that returns a few bytes per read, as a slow store may."""
    def __init__(self, data, step):
        self.data, self.at, self.step = data, 0, step

    def read(self, n=-1):
        piece = self.data[self.at:self.at + min(n, self.step)]
        self.at += len(piece)
        return piece


@pytest.mark.parametrize('how, data', STREAMS, ids=IDS)
@pytest.mark.parametrize('step', [1, 7, 1 << 20])
def test_lines_and_scan_stream_whatever_the_reads(how, data, step):
    """lines() gives the file's lines (the last without its newline kept as it is), size() and
    head() its size and first bytes, however the raw bytes arrive."""
    text = TEXT + b'last line without newline'
    raw = {'gzip': gzip.compress, 'bzip2': bz2.compress, 'deflate': zlib.compress,
           'zstd': zstandard.ZstdCompressor().compress}.get(how, lzma.compress)(text)
    assert list(lines(_Trickle(raw, step), how)) == text.splitlines(keepends=True)
    assert size(_Trickle(raw, step), how) == len(text)
    assert head(_Trickle(raw, step), how) == text[:8192]
    assert b''.join(chunks(_Trickle(raw, step), how)) == text


def test_head_decompresses_no_further_than_it_needs():
    """head() gives the first bytes and stops: a file damaged further on is not read there
    (its reader, which reads it all, finds the damage)."""
    good = gzip.compress(TEXT)
    assert head(io.BytesIO(good), 'gzip') == TEXT[:8192]
    assert head(io.BytesIO(good), 'gzip', 10 ** 9) == TEXT
    later_damage = good + b'garbage'
    assert head(io.BytesIO(later_damage), 'gzip', 100) == TEXT[:100]
    with pytest.raises(CompressionError):
        size(io.BytesIO(later_damage), 'gzip')
    with pytest.raises(CompressionError):
        head(io.BytesIO(b'plain text'), 'gzip')


def test_an_error_reading_the_file_is_not_called_damage():
    """An OSError of the file itself (a disk, a store) passes as it is: the command's own
    advice for it applies, not 'not a readable gzip file'."""
    class Failing:
        def __init__(self):
            self.reads = 0

        def read(self, n=-1):
            self.reads += 1
            if self.reads > 1:
                raise OSError(5, 'Input/output error')
            return gzip.compress(TEXT)[:100]

    with pytest.raises(OSError) as raised:
        b''.join(chunks(Failing(), 'gzip'))
    assert not isinstance(raised.value, CompressionError) and raised.value.errno == 5


def test_a_line_longer_than_many_pieces_is_whole():
    line = b'x' * (3 * 1024 * 1024)
    data = gzip.compress(line + b'\nshort\n' + line)
    assert list(lines(io.BytesIO(data), 'gzip')) == [line + b'\n', b'short\n', line]
