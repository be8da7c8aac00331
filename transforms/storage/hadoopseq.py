"""Hadoop SequenceFiles and MapFiles, read in Python (the files of a Nutch crawl; import-nutch).

A SequenceFile (version 6, Hadoop 0.20 and later) is a header, then records:

    header   'SEQ', version byte 6, key class and value class (Text strings: a vint length and
             UTF-8), compressed and block-compressed (a byte each), the codec's class (Text, only
             when compressed), metadata (a 4-byte count, then Text pairs), a 16-byte sync marker
    record   4-byte record length, 4-byte key length, the key, then the value (deflated
             alone when record-compressed); a record length of -1 is an escape: a sync marker
             follows (the writer puts one every ~2000 bytes)
    block    (block-compressed files) -1 and the sync marker, a vint record count, then four
             vint-length-prefixed compressed buffers: the key lengths (vints), the keys, the
             value lengths, the values

Integers are big-endian (Java's DataOutput). A MapFile is a directory with the SequenceFile
`data` (records sorted by key) and its `index` (every 128th key); only `data` is read here.

Codecs read: DefaultCodec and DeflateCodec (zlib) and GzipCodec (gzip), both by zlib, and
SnappyCodec (Hadoop's block framing around raw Snappy, decompressed by cramjam). Others (LZ4,
Zstandard, BZip2) are refused with an error naming the codec. Reads are bounded: no length is
trusted beyond what the file holds, and a decompressed buffer may not exceed MAX_INFLATED, so a
truncated or hostile file gives an InputError naming the file and the byte offset, never a hang
or a huge allocation.

Why Python and not a Java helper: docs/import-nutch.md.
"""

import struct
import zlib
from typing import Dict, Iterator, NamedTuple, Optional, Tuple

from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage import fs

__all__ = ['SeqHeader', 'Cursor', 'FormatError', 'read_header', 'read_pairs', 'map_file_data',
           'ZLIB_CODECS', 'SNAPPY_CODEC', 'READ_CODECS', 'MAX_INFLATED', 'SYNC_ESCAPE',
           'file_size', 'inflate', 'unframe', 'decompressor']

MAGIC = b'SEQ'
VERSION = 6
SYNC_SIZE = 16
SYNC_ESCAPE = -1
# Codecs whose streams zlib reads (wbits 47: a zlib or a gzip stream, told apart by its header).
ZLIB_CODECS = frozenset({
    'org.apache.hadoop.io.compress.DefaultCodec', 'org.apache.hadoop.io.compress.DeflateCodec',
    'org.apache.hadoop.io.compress.GzipCodec'})
SNAPPY_CODEC = 'org.apache.hadoop.io.compress.SnappyCodec'
READ_CODECS = ZLIB_CODECS | {SNAPPY_CODEC}
# The most one compressed buffer (a value, or a block's buffer) may inflate to. Hadoop's blocks
# hold about 1 MB (io.seqfile.compress.blocksize) and Nutch's pages are capped by
# http.content.limit (64 KB by default); 256 MB is far above either, and a bound against bombs.
MAX_INFLATED = 256 << 20
_HEADER_MAX = 1 << 20        # a header (class names, metadata) larger than this is not Hadoop's


# Big-endian readers of Java's fixed-size values (DataInput).
_BYTE, _SHORT, _USHORT = (struct.Struct('>b').unpack_from, struct.Struct('>h').unpack_from,
                          struct.Struct('>H').unpack_from)
_INT, _LONG = struct.Struct('>i').unpack_from, struct.Struct('>q').unpack_from
_FLOAT, _DOUBLE = struct.Struct('>f').unpack_from, struct.Struct('>d').unpack_from
_CHUNK = 8 << 20             # bytes a file is read in


class FormatError(ValueError):
    """Malformed bytes: `offset` is where in the buffer being decoded they are."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


class Cursor:
    """Reads Java DataInput values from a buffer, never past its end (FormatError there)."""

    __slots__ = ('data', 'pos', 'end')

    def __init__(self, data: bytes, pos: int = 0, end: Optional[int] = None):
        self.data, self.pos = data, pos
        self.end = len(data) if end is None else end

    def take(self, n: int) -> bytes:
        if n < 0:
            raise FormatError(f'negative length {n}', self.pos)
        if n > self.end - self.pos:
            raise FormatError(f'{n} bytes wanted, {self.end - self.pos} left', self.pos)
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def remaining(self) -> int:
        return self.end - self.pos

    def _fixed(self, unpack, size: int):
        pos = self.pos
        if size > self.end - pos:
            raise FormatError(f'{size} bytes wanted, {self.end - pos} left', pos)
        self.pos = pos + size
        return unpack(self.data, pos)[0]

    def fields(self, layout: struct.Struct) -> tuple:
        """Several fixed-size values at once (a struct.Struct of their big-endian layout)."""
        pos = self.pos
        if layout.size > self.end - pos:
            raise FormatError(f'{layout.size} bytes wanted, {self.end - pos} left', pos)
        self.pos = pos + layout.size
        return layout.unpack_from(self.data, pos)

    def byte(self) -> int:
        return self._fixed(_BYTE, 1)

    def boolean(self) -> bool:
        return self._fixed(_BYTE, 1) != 0

    def short(self) -> int:
        return self._fixed(_SHORT, 2)

    def int(self) -> int:
        return self._fixed(_INT, 4)

    def long(self) -> int:
        return self._fixed(_LONG, 8)

    def float(self) -> float:
        return self._fixed(_FLOAT, 4)

    def double(self) -> float:
        return self._fixed(_DOUBLE, 8)

    def vlong(self) -> int:
        """Hadoop's WritableUtils variable-length integer."""
        first = self.byte()
        if first >= -112:
            return first
        negative = first < -120
        size = (-119 - first) if negative else (-111 - first)    # with the first byte
        value = 0
        for b in self.take(size - 1):
            value = (value << 8) | b
        return ~value if negative else value

    def length(self) -> int:
        """A vint length, checked against the bytes left."""
        return self.length_of(self)

    def length_of(self, target: 'Cursor') -> int:
        """A vint length read here, checked against what `target` has left."""
        at = self.pos
        n = self.vlong()
        if n < 0 or n > target.remaining():
            raise FormatError(f'length {n} with {target.remaining()} bytes left', at)
        return n

    def text(self) -> str:
        """Hadoop's Text (Text.writeString): a vint length and UTF-8."""
        pos = self.pos
        if pos < self.end and self.data[pos] < 0x80:     # a one-byte length (0 to 127)
            n = self.data[pos]
            if n <= self.end - pos - 1:
                self.pos = pos + 1 + n
                return self.data[pos + 1:pos + 1 + n].decode('utf-8', 'replace')
        return self.take(self.length()).decode('utf-8', 'replace')

    def utf(self) -> str:
        """Java's DataOutput.writeUTF: a 2-byte length and (modified) UTF-8."""
        n = self._fixed(_USHORT, 2)
        return self.take(n).decode('utf-8', 'replace')

    def string(self) -> Optional[str]:
        """WritableUtils.writeString: a 4-byte length (-1: null) and UTF-8."""
        n = self.int()
        return None if n == -1 else self.take(n).decode('utf-8', 'replace')


class SeqHeader(NamedTuple):
    version: int
    key_class: str
    value_class: str
    compressed: bool
    block_compressed: bool
    codec: Optional[str]
    metadata: Dict[str, str]
    sync: bytes
    data_start: int


def file_size(path: str) -> int:
    """The size of a file in bytes (InputError when it cannot be read)."""
    try:
        return FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    except (IndexError, OSError) as e:
        raise InputError(f'{path}: cannot read ({e})') from None
    except Exception as e:  # pylint: disable=broad-except  (Beam's BeamIOError: not found)
        raise InputError(f'{path}: cannot read ({str(e).splitlines()[0][:200]})') from None


def _parse_header(data: bytes, path: str) -> SeqHeader:
    c = Cursor(data)
    try:
        if c.take(3) != MAGIC:
            raise FormatError('not a Hadoop SequenceFile (no SEQ magic)', 0)
        version = c.byte()
        if version != VERSION:
            raise FormatError(f'SequenceFile version {version} (only {VERSION}, the one of '
                              f'Hadoop 0.20 and later, is read)', 3)
        key_class, value_class = c.text(), c.text()
        compressed, block = c.boolean(), c.boolean()
        codec = c.text() if compressed else None
        count = c.int()
        if count < 0 or count > c.remaining() // 2:
            raise FormatError(f'metadata count {count}', c.pos - 4)
        metadata = {}
        for _ in range(count):
            name = c.text()
            metadata[name] = c.text()
        sync = c.take(SYNC_SIZE)
    except FormatError as e:
        raise InputError(f'{path}: bad SequenceFile header at byte {e.offset}: {e}') from None
    if compressed and codec not in READ_CODECS:
        raise InputError(f'{path}: compressed with {codec}, which beamcrawl does not read (it '
                         f'reads {", ".join(sorted(c.rsplit(".", 1)[1] for c in READ_CODECS))}); '
                         f'rewrite the crawl with one of those in Nutch (e.g. bin/nutch mergedb '
                         f'with mapreduce.output.fileoutputformat.compress.codec)')
    return SeqHeader(version, key_class, value_class, compressed, block, codec, metadata, sync,
                     c.pos)


def read_header(path: str) -> SeqHeader:
    """The header of the SequenceFile `path`; InputError if it is not one we read."""
    with fs.open_read(path) as f:
        data = f.read(min(_HEADER_MAX, file_size(path)))
    return _parse_header(data, path)


def unframe(data: bytes, decompress) -> bytes:
    """The bytes of a stream of Hadoop's BlockCompressorStream (SnappyCodec): blocks of a 4-byte
    uncompressed length followed by 4-byte-length-prefixed compressed chunks that decompress
    (`decompress(chunk)`) to that length together."""
    c = Cursor(data)
    out, total = [], 0
    while c.remaining():
        at = c.pos
        want = c.int()
        if want < 0 or total + want > MAX_INFLATED:
            raise FormatError(f'a block of {want} bytes (at most {MAX_INFLATED} are read)', at)
        got = 0
        while got < want:
            chunk = c.take(c.int())
            try:
                part = decompress(chunk)
            except Exception as e:  # pylint: disable=broad-except  (the library's own errors)
                raise FormatError(f'bad compressed data ({e})', at) from None
            got += len(part)
            out.append(part)
        if got != want:
            raise FormatError(f'a block of {want} bytes decompressed to {got}', at)
        total += want
    return b''.join(out)


def _snappy():
    """cramjam's raw Snappy decompressor."""
    import cramjam
    return lambda chunk: bytes(cramjam.snappy.decompress_raw(chunk))


def decompressor(codec: Optional[str]):
    """bytes -> bytes for a codec this module reads (the codec's whole stream)."""
    if codec == SNAPPY_CODEC:
        raw = _snappy()
        return lambda data: unframe(data, raw)
    return inflate


def inflate(data: bytes) -> bytes:
    """The bytes of a zlib or gzip stream (gzip members may follow each other)."""
    out = []
    total = 0
    while True:
        d = zlib.decompressobj(47)
        try:
            chunk = d.decompress(data, MAX_INFLATED + 1 - total)
        except zlib.error as e:
            raise FormatError(f'bad compressed data ({e})', 0) from None
        total += len(chunk)
        out.append(chunk)
        if total > MAX_INFLATED:
            raise FormatError(f'compressed data inflates to more than {MAX_INFLATED} bytes', 0)
        if not d.eof:
            raise FormatError('compressed data cut short', len(data))
        data = d.unused_data
        if not data.strip(b'\0'):
            return b''.join(out)


class _Stream:
    """A file read forward in large chunks, with its offset; never asked for more than the
    file holds."""

    def __init__(self, f, size: int, path: str, start: int):
        self.f, self.size, self.path, self.pos = f, size, path, start
        self._buf, self._at = b'', 0          # unread bytes of the chunk in hand

    def read(self, n: int, what: str) -> bytes:
        if n < 0 or n > self.size - self.pos:
            raise InputError(f'{self.path}: truncated or corrupt at byte {self.pos}: {what} of '
                             f'{n} bytes, {self.size - self.pos} left in the file')
        at = self._at
        if n <= len(self._buf) - at:
            self._at = at + n
            self.pos += n
            return self._buf[at:at + n]
        parts = [self._buf[at:]]
        have = len(parts[0])
        while have < n:
            chunk = self.f.read(max(_CHUNK, n - have))
            if not chunk:
                raise InputError(f'{self.path}: cut short at byte {self.pos + have} ({what})')
            parts.append(chunk)
            have += len(chunk)
        data = b''.join(parts)
        self._buf, self._at = data, n
        self.pos += n
        return data[:n]

    def int(self, what: str) -> int:
        return _INT(self.read(4, what))[0]

    def vlong(self, what: str) -> int:
        first = self.read(1, what)
        b = _BYTE(first)[0]
        size = 1
        if b < -112:
            size = (-119 - b) if b < -120 else (-111 - b)
        return Cursor(first + (self.read(size - 1, what) if size > 1 else b'')).vlong()


def read_pairs(path: str) -> Iterator[Tuple[bytes, bytes, int]]:
    """(key bytes, value bytes, offset of the record) of every record of the SequenceFile
    `path`, values inflated. Bad framing raises InputError naming the file and offset."""
    size = file_size(path)
    with fs.open_read(path) as f:
        head = f.read(min(_HEADER_MAX, size))
        header = _parse_header(head, path)
    with fs.open_read(path) as f:
        s = _Stream(f, size, path, 0)
        s.read(header.data_start, 'header')
        if header.block_compressed:
            yield from _blocks(s, header)
        else:
            yield from _records(s, header)


def _sync(s: _Stream, header: SeqHeader) -> None:
    at = s.pos
    if s.read(SYNC_SIZE, 'sync marker') != header.sync:
        raise InputError(f'{s.path}: corrupt at byte {at}: the sync marker does not match the '
                         f'header\'s')


def _records(s: _Stream, header: SeqHeader) -> Iterator[Tuple[bytes, bytes, int]]:
    expand = decompressor(header.codec)
    while s.pos < s.size:
        at = s.pos
        length = s.int('record length')
        if length == SYNC_ESCAPE:
            _sync(s, header)
            continue
        key_length = s.int('key length')
        if key_length < 0 or length < key_length:
            raise InputError(f'{s.path}: corrupt at byte {at}: record length {length}, key '
                             f'length {key_length}')
        key = s.read(key_length, 'key')
        value = s.read(length - key_length, 'value')
        if header.compressed:
            try:
                value = expand(value)
            except FormatError as e:
                raise InputError(f'{s.path}: corrupt value of the record at byte {at}: '
                                 f'{e}') from None
        yield key, value, at


def _buffer(s: _Stream, what: str, expand) -> bytes:
    at = s.pos
    n = s.vlong(f'{what} length')
    data = s.read(n, what)
    try:
        return expand(data)
    except FormatError as e:
        raise InputError(f'{s.path}: corrupt {what} of the block at byte {at}: {e}') from None


def _blocks(s: _Stream, header: SeqHeader) -> Iterator[Tuple[bytes, bytes, int]]:
    expand = decompressor(header.codec)
    while s.pos < s.size:
        at = s.pos
        if s.int('sync escape') != SYNC_ESCAPE:
            raise InputError(f'{s.path}: corrupt at byte {at}: no sync marker before a block')
        _sync(s, header)
        if s.pos == s.size:         # a writer that closes after a sync
            return
        count = s.vlong('record count')
        buffers = [Cursor(_buffer(s, what, expand)) for what in
                   ('key lengths', 'keys', 'value lengths', 'values')]
        key_lengths, keys, value_lengths, values = buffers
        if count < 0 or count > key_lengths.remaining():
            raise InputError(f'{s.path}: corrupt block at byte {at}: {count} records')
        try:
            for _ in range(count):
                key = keys.take(key_lengths.length_of(keys))
                value = values.take(value_lengths.length_of(values))
                yield key, value, at
        except FormatError as e:
            raise InputError(f'{s.path}: corrupt block at byte {at}: {e}') from None


def map_file_data(entry: str) -> Optional[str]:
    """The SequenceFile of a part of a Hadoop output directory: its `data` when `entry` is a
    MapFile directory, else `entry` itself (a SequenceFile)."""
    data = fs.join(entry, 'data')
    return data if fs.exists(data) else entry
