"""Avro container files block by block: the bulk paths of the batch stages.

An Avro object container file is a header (magic, metadata with the writer's schema and codec,
a 16-byte sync marker) followed by blocks (record count, byte size, the records — deflated with
the deflate codec — and the sync marker again). This module reads and writes that framing
itself and leaves the record encoding to fastavro, so that:

* a file can be cut into work units at block boundaries without decoding it (`scan_blocks`
  reads only block headers, seeking past the data);
* each record is read together with its encoded bytes (`read_records` yields (record, raw)),
  and a record that does not change is written back as those bytes (`PartWriter.write_raw`)
  instead of being encoded again — most of the crawldb in an update (docs/performance.md).

Codecs: null and deflate are read here; a file with another codec (snappy, zstandard, ...)
is read whole through fastavro's reader, with no raw bytes (`raw` is None then).
Errors: every malformed input is an InputError naming the file.
"""

import array
import hashlib
import io
import json
import os
import stat
import zlib
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

import fastavro
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.storage import layout
from beamcrawl.transforms.storage.datumcodec import encode_datum, varint
from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA

__all__ = ['Header', 'Block', 'check_regular', 'read_header', 'scan_blocks', 'read_records',
           'PartWriter', 'read_keyed', 'keys_path', 'Keys', 'KeyedPart', 'open_keyed',
           'keyed_blocks']

MAGIC = b'Obj\x01'
_NATIVE_CODECS = ('null', 'deflate')
_BLOCK_BYTES = 64 * 1024          # uncompressed bytes per written block (fastavro: 16000)


class Header(NamedTuple):
    schema: dict            # the writer's schema, parsed by fastavro
    fields: Tuple[str, ...]
    codec: str
    sync: bytes
    data_start: int         # offset of the first block


class Block(NamedTuple):
    offset: int             # where the block's header starts
    count: int              # records in it


def _read_long(f) -> int:
    shift = result = 0
    while True:
        byte = f.read(1)
        if not byte:
            raise EOFError('truncated varint')
        b = byte[0]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1)
        shift += 7
        if shift > 70:
            raise ValueError('varint too long')


def _read_block(f, offset: int) -> Tuple[int, bytes]:
    """(record count, data as stored) of the block at `offset`."""
    f.seek(offset)
    count = _read_long(f)
    length = _read_long(f)
    data = f.read(length)
    if len(data) != length:
        raise EOFError(f'truncated block at offset {offset}')
    return count, data


def _read_bytes(f) -> bytes:
    size = _read_long(f)
    data = f.read(size)
    if size < 0 or len(data) != size:
        raise EOFError('truncated header')
    return data


def _header_of(f) -> Header:
    if f.read(4) != MAGIC:
        raise ValueError('not an Avro object container file (bad magic)')
    meta = {}
    while True:
        count = _read_long(f)
        if count == 0:
            break
        if count < 0:
            count = -count
            _read_long(f)              # the block's byte size
        for _ in range(count):
            key = _read_bytes(f).decode('utf-8')
            meta[key] = _read_bytes(f)
    sync = f.read(16)
    if len(sync) != 16:
        raise EOFError('truncated header')
    schema = json.loads(meta['avro.schema'].decode('utf-8'))
    codec = meta.get('avro.codec', b'null').decode('ascii') or 'null'
    fields = tuple(field['name'] for field in schema.get('fields', ())) \
        if isinstance(schema, dict) else ()
    return Header(fastavro.parse_schema(schema), fields, codec, sync, f.tell())


def check_regular(path: str) -> None:
    """A part must be a regular file: reading a FIFO or a device named part-N.avro would block
    or never end (InputError naming it otherwise)."""
    if layout.is_local(path):
        try:
            mode = os.stat(path).st_mode
        except OSError as e:
            raise InputError(f'{path}: cannot read ({e.strerror})') from None
        if not stat.S_ISREG(mode):
            raise InputError(f'{path}: not a regular file; a part must be one')


def _open(path: str):
    check_regular(path)
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def read_header(path: str) -> Header:
    """The header of an Avro file (InputError naming the file when it is not one)."""
    try:
        with _open(path) as f:
            return _header_of(f)
    except (OSError, ValueError, EOFError, KeyError, TypeError) as e:
        raise _error(path, e) from None


def _error(path: str, error: Exception) -> InputError:
    if isinstance(error, OSError):
        return InputError(f'{path}: cannot read ({error.strerror or error})')
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return InputError(f'{path}: not a readable Avro file ({text[:200]})')


def scan_blocks(path: str) -> Tuple[Header, List[Block]]:
    """The header and the blocks of a file, reading only block headers."""
    try:
        with _open(path) as f:
            header = _header_of(f)
            blocks = []
            offset = header.data_start
            while f.read(1):
                f.seek(offset)
                count = _read_long(f)
                length = _read_long(f)
                if count < 0 or length < 0:
                    raise ValueError(f'bad block header at offset {offset}')
                f.seek(length, io.SEEK_CUR)
                if f.read(16) != header.sync:
                    raise ValueError(f'truncated block or no sync marker after the block at '
                                     f'offset {offset}')
                blocks.append(Block(offset, count))
                offset = f.tell()
            return header, blocks
    except (OSError, ValueError, EOFError, KeyError, TypeError) as e:
        raise _error(path, e) from None


def read_records(path: str, offsets: Optional[List[int]] = None,
                 reader_schema: Optional[dict] = None, with_raw: bool = True
                 ) -> Iterator[Tuple[dict, Optional[bytes]]]:
    """(record, encoded bytes) of the blocks starting at `offsets` (all blocks: None); the
    bytes are None with `with_raw` False.

    The bytes are the record's encoding in the file's own schema, so they can be written back
    unchanged only into a file with the same schema (PartWriter.write_raw checks the fields).
    With a codec read by fastavro (not null or deflate), every record of the file is read
    and the bytes are None.
    """
    try:
        with _open(path) as f:
            header = _header_of(f)
            if header.codec not in _NATIVE_CODECS:
                if offsets is None or offsets == [header.data_start]:
                    f.seek(0)
                    for record in fastavro.reader(f, reader_schema=reader_schema):
                        yield record, None
                    return
                raise ValueError(f'codec {header.codec} cannot be read block by block')
            if offsets is None:
                offsets = [b.offset for b in scan_blocks(path)[1]]
            if not with_raw:
                # The blocks after the file's own header, decoded by fastavro's reader: about
                # 20% faster than record by record, when no record's bytes are wanted.
                f.seek(0)
                framed = [f.read(header.data_start)]
                for offset in offsets:
                    count, data = _read_block(f, offset)
                    framed += (varint(count), varint(len(data)), data, header.sync)
                for record in fastavro.reader(io.BytesIO(b''.join(framed)),
                                              reader_schema=reader_schema):
                    yield record, None
                return
            reader = (fastavro.parse_schema(reader_schema)
                      if reader_schema is not None else None)
            decode = fastavro.schemaless_reader
            for offset in offsets:
                count, data = _read_block(f, offset)
                if header.codec == 'deflate':
                    data = zlib.decompress(data, -15)
                buf = io.BytesIO(data)
                start = 0
                for _ in range(count):
                    record = decode(buf, header.schema, reader)
                    end = buf.tell()
                    yield record, data[start:end]
                    start = end
    except (OSError, ValueError, EOFError, KeyError, TypeError, IndexError,
            zlib.error) as e:
        raise _error(path, e) from None
    except InputError:
        raise
    except Exception as e:  # pylint: disable=broad-except  (fastavro decoder errors)
        raise _error(path, e) from None


class PartWriter:
    """Writes an Avro file (deflate) of `schema`: `write(record)` encodes a dict,
    `write_raw(raw, url, status)` appends a record already encoded in the same schema. The file
    appears under `path` only once complete (written as a hidden temporary file, then renamed).
    Use as a context manager; an exception discards the temporary file.

    With `keys`, the part gets its keys file (`read_keyed`): every record's URL, status and
    encoded length, so that the next update can copy the records it does not change without
    decoding them. Deflate level 1: about 3× faster than the default 6 on crawldb records, for
    parts about a third larger."""

    def __init__(self, path: str, schema: dict, level: int = 1, keys: bool = False):
        self.path = path
        # CrawlDatum records are encoded by hand (datumcodec: the same bytes, 5× faster).
        self._encode = encode_datum if schema == CRAWL_DATUM_SCHEMA else None
        self._keys = _KeysBuilder() if keys else None
        self.plain_schema = schema
        self.schema = fastavro.parse_schema(schema)
        self.level = level
        directory, name = path.rsplit('/', 1) if '/' in path else ('.', path)
        self._tmp = f'{directory}/.{name}.inprogress'
        # A sync marker derived from the name: rewriting a part gives the same bytes.
        self._sync = hashlib.md5(b'beamcrawl sync ' + path.encode('utf-8')).digest()
        self._buf = io.BytesIO()
        self._count = 0
        self.records = 0
        self._file = None

    def same_schema(self, header: Header) -> bool:
        """Whether raw records of a file with this header can be written here unchanged."""
        return header.schema == self.schema

    def __enter__(self):
        self._file = FileSystems.create(self._tmp,
                                        compression_type=CompressionTypes.UNCOMPRESSED)
        meta = {'avro.schema': json.dumps(self.plain_schema).encode('utf-8'),
                'avro.codec': b'deflate'}
        out = bytearray(MAGIC)
        out += varint(len(meta))
        for key, value in meta.items():
            out += varint(len(key)) + key.encode('utf-8') + varint(len(value)) + value
        out += varint(0) + self._sync
        self._file.write(out)
        self._size = len(out)
        return self

    def write(self, record: dict) -> None:
        buf = self._buf
        raw = self._encode(record) if self._encode is not None else None
        if raw is not None:
            buf.write(raw)
            size = len(raw)
        else:
            start = buf.tell()
            fastavro.schemaless_writer(buf, self.schema, record)
            size = buf.tell() - start
        if self._keys is not None:
            self._keys.add(record['url'], record.get('status') or '', size)
        self._count += 1
        if buf.tell() >= _BLOCK_BYTES:
            self._flush()

    def write_raw(self, raw: bytes, url: Optional[str] = None,
                  status: Optional[str] = None) -> None:
        self._buf.write(raw)
        if self._keys is not None:
            if url is None:
                self._keys = None              # keys unknown: this part gets no keys file
            else:
                self._keys.add(url, status or '', len(raw))
        self._count += 1
        if self._buf.tell() >= _BLOCK_BYTES:
            self._flush()

    def write_run(self, data, keys: 'Keys', start: int, end: int) -> None:
        """Appends records start..end-1 of a keyed part unchanged: `data` is their bytes, in
        order (a slice of one block of that part)."""
        self._buf.write(data)
        if self._keys is not None:
            self._keys.extend(keys, start, end)
        self._count += end - start
        if self._buf.tell() >= _BLOCK_BYTES:
            self._flush()

    def _flush(self):
        if not self._count:
            return
        packer = zlib.compressobj(self.level, zlib.DEFLATED, -15)
        data = packer.compress(self._buf.getbuffer()) + packer.flush()
        block = varint(self._count) + varint(len(data)) + data + self._sync
        self._file.write(block)
        self._size += len(block)
        if self._keys is not None:
            self._keys.blocks.append(self._count)
        self.records += self._count
        self._buf = io.BytesIO()
        self._count = 0

    def __exit__(self, kind, value, tb):
        try:
            if kind is None:
                self._flush()
                size = self._size
                self._file.close()
                keys = keys_path(self.path)
                for old in (self.path, keys):
                    if FileSystems.exists(old):
                        FileSystems.delete([old])
                FileSystems.rename([self._tmp], [self.path])
                if self._keys is not None:
                    self._keys.write(keys, size, self._sync)
                return False
        except OSError as e:
            value = e
        try:
            self._file.close()
        except OSError:
            pass
        try:
            FileSystems.delete([self._tmp])
        except Exception:  # pylint: disable=broad-except  (best effort; the error that matters
            pass           # is raised below)
        if kind is None:
            raise OSError(value.errno, value.strerror, self.path) from value
        return False



# -- keys files ----------------------------------------------------------------------------------
# `part-NNNNN.keys` beside `part-NNNNN.avro` (written by PartWriter with keys=True): the URL,
# status and encoded length of every record of the part, in order. It only saves decoding: a
# keys file whose part was rewritten by something else (another size or sync marker) or that
# cannot be read is ignored, and a part without one is decoded.
#
#   b'BCKEYS1\n', one JSON line {part_size, sync, records, blocks, statuses, url_bytes}, then
#   zlib(url lengths in characters (uint32 each), record lengths (uint32), status indexes
#   (one byte each), the URLs in UTF-8)

_KEYS_MAGIC = b'BCKEYS1\n'


def keys_path(part: str) -> str:
    return (part[:-len('.avro')] if part.endswith('.avro') else part) + '.keys'


class Keys(NamedTuple):
    """A part's keys file, loaded: for record i, its URL `urls[i]`, its status
    `statuses[status_index[i]]` and the size of its encoding `lengths[i]`; `blocks`: the number
    of records of each block of the part, in order."""
    urls: List[str]
    status_index: bytes
    statuses: List[str]
    lengths: array.array
    blocks: List[int]


class _KeysBuilder:
    def __init__(self):
        self.urls: List[str] = []
        self.lengths = array.array('I')
        self.status_index: Dict[str, int] = {}
        self.statuses = bytearray()
        self.blocks: List[int] = []
        self._translations: Dict[int, tuple] = {}

    def add(self, url: str, status: str, length: int) -> None:
        self.urls.append(url)
        self.lengths.append(length)
        index = self.status_index.get(status)
        if index is None:
            index = self.status_index[status] = len(self.status_index)
            if index > 255:
                raise ValueError('more than 256 statuses')
        self.statuses.append(index)

    def extend(self, keys: Keys, start: int, end: int) -> None:
        """Adds records start..end-1 of a loaded keys file."""
        self.urls.extend(keys.urls[start:end])
        self.lengths.extend(keys.lengths[start:end])
        self.statuses.extend(keys.status_index[start:end].translate(self._translation(keys)))

    def _translation(self, keys: Keys) -> bytes:
        """bytes.translate table: a status index of `keys` → the same status's index here."""
        cached = self._translations.get(id(keys))
        if cached is not None and cached[0] is keys:
            return cached[1]
        table = bytearray(256)
        for i, status in enumerate(keys.statuses):
            index = self.status_index.get(status)
            if index is None:
                index = self.status_index[status] = len(self.status_index)
                if index > 255:
                    raise ValueError('more than 256 statuses')
            table[i] = index
        translation = bytes(table)
        self._translations[id(keys)] = (keys, translation)
        return translation

    def write(self, path: str, part_size: int, sync: bytes) -> None:
        blob = ''.join(self.urls).encode('utf-8')
        url_lengths = array.array('I', map(len, self.urls))
        head = {'part_size': part_size, 'sync': sync.hex(), 'records': len(self.urls),
                'blocks': self.blocks, 'url_bytes': len(blob),
                'statuses': sorted(self.status_index, key=self.status_index.get)}
        body = zlib.compress(url_lengths.tobytes() + self.lengths.tobytes()
                             + bytes(self.statuses) + blob, 1)
        tmp = path + '.inprogress'
        try:
            with FileSystems.create(tmp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                f.write(_KEYS_MAGIC + json.dumps(head).encode('utf-8') + b'\n' + body)
            FileSystems.rename([tmp], [path])
        except OSError:               # the part is complete without it
            try:
                FileSystems.delete([tmp])
            except Exception:  # pylint: disable=broad-except
                pass


def _load_keys(part: str, size: int, sync: bytes) -> Optional[Keys]:
    path = keys_path(part)
    try:
        if not FileSystems.exists(path):
            return None
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            data = f.read()
        if not data.startswith(_KEYS_MAGIC):
            return None
        line_end = data.index(b'\n', len(_KEYS_MAGIC))
        head = json.loads(data[len(_KEYS_MAGIC):line_end])
        if head['part_size'] != size or head['sync'] != sync.hex():
            return None
        n = head['records']
        body = zlib.decompress(data[line_end + 1:])
        url_lengths = array.array('I', body[:4 * n])
        lengths = array.array('I', body[4 * n:8 * n])
        status_idx = body[8 * n:9 * n]
        text = body[9 * n:].decode('utf-8')
        statuses = [str(s) for s in head['statuses']]
        if len(url_lengths) != n or len(lengths) != n or len(status_idx) != n or \
                len(body) - 9 * n != head['url_bytes'] or sum(head['blocks']) != n or \
                (n and max(status_idx) >= len(statuses)):
            return None
        urls, pos = [], 0
        for length in url_lengths:
            urls.append(text[pos:pos + length])
            pos += length
        return Keys(urls, status_idx, statuses, lengths, [int(b) for b in head['blocks']])
    except (OSError, ValueError, KeyError, TypeError, IndexError, zlib.error):
        return None


class KeyedPart(NamedTuple):
    path: str
    header: Header
    keys: Keys


def open_keyed(path: str) -> Optional[KeyedPart]:
    """A part with its keys file, when that file is there and matches the part; else None
    (decode the part instead)."""
    check_regular(path)
    try:
        with _open(path) as f:
            header = _header_of(f)
            f.seek(0, io.SEEK_END)
            size = f.tell()
    except (OSError, ValueError, EOFError, KeyError, TypeError) as e:
        raise _error(path, e) from None
    if header.codec not in _NATIVE_CODECS:
        return None
    keys = _load_keys(path, size, header.sync)
    return None if keys is None else KeyedPart(path, header, keys)


def keyed_blocks(part: KeyedPart) -> Iterator[Tuple[int, int, bytes]]:
    """(index of its first record, its number of records, its records' bytes) of every block
    of a keyed part, each checked against the keys file (InputError naming the part when
    they differ)."""
    header, keys = part.header, part.keys
    try:
        with _open(part.path) as f:
            f.seek(header.data_start)
            first = 0
            for expected in keys.blocks:
                count = _read_long(f)
                length = _read_long(f)
                data = f.read(length)
                if count != expected or len(data) != length or f.read(16) != header.sync:
                    raise ValueError('the part does not match its keys file')
                if header.codec == 'deflate':
                    data = zlib.decompress(data, -15)
                if sum(keys.lengths[first:first + count]) != len(data):
                    raise ValueError('the part does not match its keys file')
                yield first, count, data
                first += count
    except (OSError, ValueError, EOFError, zlib.error) as e:
        raise _error(part.path, e) from None


def read_keyed(path: str) -> Optional[Iterator[Tuple[str, str, bytes]]]:
    """(url, status, encoded record) of every record of a part, without decoding any, when
    its keys file is there and matches it; else None (decode the part instead)."""
    part = open_keyed(path)
    return None if part is None else _keyed_records(part)


def _keyed_records(part: KeyedPart):
    urls, index, statuses, lengths = part.keys[:4]
    for first, count, data in keyed_blocks(part):
        pos = 0
        for j in range(first, first + count):
            end = pos + lengths[j]
            yield urls[j], statuses[index[j]], data[pos:end]
            pos = end
