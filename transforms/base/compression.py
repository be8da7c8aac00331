"""Compressed text inputs (seed lists, URL lists, site and rule files), known by their name's
suffix as Beam's filesystems know them: decompressed as a stream, every stream of the file
checked to its end. A damaged or truncated stream, or bytes after the last one that are not
another stream, is an error that names the file, never a silent short read.

Plain Python, no Beam: a command reads its settings before it imports Beam (docs/performance.md,
"The fetch's head start"). The decompressors are imported on first use.
"""

from typing import BinaryIO, Iterator, Optional

__all__ = ['SUFFIXES', 'kind', 'chunks', 'read', 'lines', 'head', 'size', 'CompressionError']

# Suffix (lower case) → the kind of stream: the suffixes of Beam's CompressionTypes.AUTO.
SUFFIXES = {'.gz': 'gzip', '.bz2': 'bzip2', '.deflate': 'deflate', '.zst': 'zstd',
            '.zstd': 'zstd', '.xz': 'xz', '.lzma': 'xz'}

# Compressed bytes read at a time: what one step can expand to stays in the tens of MB.
READ_BYTES = 64 << 10
# The largest zstd window accepted: Beam's (2 GB, `zstd --long=31`).
ZSTD_MAX_WINDOW = 1 << 31


class CompressionError(ValueError):
    """The bytes are not whole streams of the kind the name says."""


def kind(path: str) -> Optional[str]:
    """The compression a file's name says (None: read as it is)."""
    lower = path.lower()
    for suffix, name in SUFFIXES.items():
        if lower.endswith(suffix):
            return name
    return None


def _decompressor(how: str):
    """A new decompressor of one stream (gzip member, bzip2 or xz stream, zstd frame): each has
    decompress(), eof and unused_data."""
    if how == 'gzip':
        import zlib
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if how == 'deflate':
        import zlib
        return zlib.decompressobj()         # a zlib stream, as Beam's DEFLATE reads it
    if how == 'bzip2':
        import bz2
        return bz2.BZ2Decompressor()
    if how == 'xz':
        import lzma
        return lzma.LZMADecompressor()      # .xz and the older .lzma format
    if how == 'zstd':
        import zstandard                    # a dependency of Beam's
        return zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW).decompressobj()
    raise ValueError(f'unknown compression {how!r}')


def _errors():
    """What the decompressors raise for bad bytes (bzip2's is an OSError: only their own
    calls are guarded, not the reads of the file)."""
    import lzma
    import zlib
    found = [OSError, EOFError, ValueError, zlib.error, lzma.LZMAError]
    try:
        import zstandard
        found.append(zstandard.ZstdError)
    except ImportError:
        pass
    return tuple(found)


def chunks(raw: BinaryIO, how: str) -> Iterator[bytes]:
    """The decompressed bytes of the file `raw`, in pieces, through every stream it holds (the
    members of a concatenated gzip, the frames of a zstd file); deflate is one stream. Zero
    bytes between or after streams are padding (as xz and GNU gzip take them). Raises
    CompressionError at the first damaged byte, at a stream cut short, or at bytes after a
    stream that do not start another; an error of `raw` itself (OSError) passes as it is."""
    errors = _errors()
    d = None
    while True:
        data = raw.read(READ_BYTES)
        if not data:
            break
        while data:
            if d is None:
                if how != 'deflate':
                    data = data.lstrip(b'\0')   # zero padding between or after streams
                    if not data:
                        break
                d = _decompressor(how)
            try:
                out = d.decompress(data)
            except errors as e:
                raise CompressionError(f'not a readable {how} file ({e})') from None
            if out:
                yield out
            if not d.eof:
                break
            data = d.unused_data
            d = None
            if how == 'deflate' and (data or raw.read(1)):
                raise CompressionError('not a readable deflate file (bytes after the end of '
                                       'its stream)')
    if d is not None:
        raise CompressionError(f'not a readable {how} file (it ends in the middle of a '
                               'stream: cut short?)')


def read(raw: BinaryIO, how: Optional[str]) -> bytes:
    """The whole of the file `raw`: as it is (`how` None), else decompressed (see `chunks`).
    An empty file holds nothing, whatever its name."""
    return raw.read() if how is None else b''.join(chunks(raw, how))


def lines(raw: BinaryIO, how: str) -> Iterator[bytes]:
    """The lines of a compressed file, each with its newline (the last one may have none),
    decompressed as they are read: memory holds a piece and a line, not the file."""
    rest: list = []                     # the pieces of a line not ended yet
    for piece in chunks(raw, how):
        cut = piece.rfind(b'\n') + 1
        if not cut:
            rest.append(piece)
            continue
        yield from b''.join(rest + [piece[:cut]]).splitlines(keepends=True)
        rest = [piece[cut:]] if cut < len(piece) else []
    if rest:
        yield b''.join(rest)


def head(raw: BinaryIO, how: str, size: int = 8192) -> bytes:
    """The first `size` decompressed bytes of a compressed file (fewer if it holds fewer),
    decompressing no further: the streams after them are checked by whoever reads the rest."""
    first, got = [], 0
    for piece in chunks(raw, how):
        first.append(piece)
        got += len(piece)
        if got >= size:
            break
    return b''.join(first)[:size]


def size(raw: BinaryIO, how: str) -> int:
    """The decompressed size of a whole compressed file, every stream checked to its end,
    without holding the file."""
    return sum(len(piece) for piece in chunks(raw, how))
