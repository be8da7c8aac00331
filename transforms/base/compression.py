"""Compressed text inputs (seed lists, URL lists, site and rule files), known by their name's
suffix as Beam's filesystems and Hadoop know them: read whole and decompressed, and a damaged
or truncated stream is an error that names the file, never a silent short read.

Plain Python, no Beam: a command reads its settings before it imports Beam (docs/performance.md,
"The fetch's head start").
"""

import bz2
import gzip
import lzma
import zlib
from typing import Optional

__all__ = ['SUFFIXES', 'kind', 'decompress', 'CompressionError']

# Suffix (lower case) → the kind of stream; the suffixes of Beam's CompressionTypes.AUTO.
SUFFIXES = {'.gz': 'gzip', '.bz2': 'bzip2', '.deflate': 'deflate', '.zst': 'zstd',
            '.zstd': 'zstd', '.xz': 'xz', '.lzma': 'xz'}


class CompressionError(ValueError):
    """The bytes are not a whole stream of the kind the name says."""


def kind(path: str) -> Optional[str]:
    """The compression a file's name says (None: read as it is)."""
    lower = path.lower()
    for suffix, name in SUFFIXES.items():
        if lower.endswith(suffix):
            return name
    return None


def decompress(data: bytes, how: str) -> bytes:
    """The decompressed bytes of a whole stream (every member of a multi-member gzip or bzip2
    file, every frame of a zstd one). Raises CompressionError for bytes that are not such a
    stream or stop before its end. An empty file holds nothing, whatever its name."""
    if not data:
        return b''
    try:
        if how == 'gzip':
            return gzip.decompress(data)
        if how == 'bzip2':
            return bz2.decompress(data)
        if how == 'xz':
            return lzma.decompress(data)            # .xz and the older .lzma format
        if how == 'deflate':
            d = zlib.decompressobj()
            out = d.decompress(data) + d.flush()
            if not d.eof:
                raise EOFError('the stream ends before its end marker')
            return out
        if how == 'zstd':
            return _zstd(data)
    except CompressionError:
        raise
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as e:
        raise CompressionError(f'not a readable {how} file ({e})') from None
    raise ValueError(f'unknown compression {how!r}')


def _zstd(data: bytes) -> bytes:
    import zstandard                # a dependency of Beam's; imported only for a .zst file
    out, rest = [], data
    while rest:
        d = zstandard.ZstdDecompressor().decompressobj()
        try:
            out.append(d.decompress(rest))
        except zstandard.ZstdError as e:
            raise CompressionError(f'not a readable zstd file ({e})') from None
        if not d.eof:
            raise CompressionError('not a readable zstd file (the stream ends before its end '
                                   'marker)')
        rest = d.unused_data
    return b''.join(out)
