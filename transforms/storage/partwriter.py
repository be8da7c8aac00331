"""Writing Avro files: the one writer family of beamcrawl.

  AvroWriter      the shared part: the header, records encoded (by hand for CrawlDatum:
                  datumcodec.encoder_for) or copied as their bytes, deflated blocks
  PartWriter      a part: written aside, published whole by a rename (on an object store: in
                  place, where an object appears whole), with its keys file
  AppendWriter    a journal file: written in place, each flush() a block the OS has
                  (a killed writer leaves the blocks before its last one readable)
  write_avro_file a small part from a list of records (fetch lists, empty parts)

Every write error names its file (an OSError with the path: the command reports it in one line).
"""

import bisect
import hashlib
import io
import itertools
import json
import uuid
from typing import Iterable, Optional

import fastavro

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.storage import deflate, fs
from beamcrawl.transforms.storage.container import MAGIC, Header
from beamcrawl.transforms.storage.datumcodec import encoder_for, varint
from beamcrawl.transforms.storage.keysfile import Keys, KeysBuilder, keys_path

__all__ = ['AvroWriter', 'PartWriter', 'AppendWriter', 'write_avro_file', 'named']

_BLOCK_BYTES = 64 * 1024          # uncompressed bytes per written block (fastavro: 16000)


def named(error: OSError, path: str) -> OSError:
    """The same OSError naming `path` (a write error of a file object often names none)."""
    return error if error.filename else OSError(error.errno, error.strerror, path)


class AvroWriter:
    """An Avro object container file (deflate) of `schema` being written to `target`:
    `write(record)` encodes a dict, `write_raw(raw)` appends a record already encoded in the
    same schema; records are deflated in blocks of about 64 KiB (`flush()` ends one sooner).
    Deflate level 1: about 3× faster than the default 6 on crawldb records, for files about a
    third larger. The sync marker is derived from `name`: the same file written again gives the
    same bytes."""

    def __init__(self, target: str, schema: dict, *, name: str, level: int = 1):
        self.target, self.level = target, level
        self._encode = encoder_for(schema)     # a faster encoder of the same bytes, if any
        self.plain_schema = schema
        self.schema = fastavro.parse_schema(schema)
        self._sync = hashlib.md5(b'beamcrawl sync ' + name.encode('utf-8')).digest()
        self._buf = io.BytesIO()
        self._count = 0
        self.records = 0
        self._size = 0
        self._file = None

    def same_schema(self, header: Header) -> bool:
        """Whether raw records of a file with this header can be written here unchanged."""
        return header.schema == self.schema

    def open(self) -> None:
        try:
            self._file = fs.create(self.target)
            meta = {'avro.schema': json.dumps(self.plain_schema).encode('utf-8'),
                    'avro.codec': b'deflate'}
            out = bytearray(MAGIC)
            out += varint(len(meta))
            for key, value in meta.items():
                out += varint(len(key)) + key.encode('utf-8') + varint(len(value)) + value
            out += varint(0) + self._sync
            self._file.write(out)
            self._size = len(out)
        except OSError as e:
            raise named(e, self.target) from e

    def encode(self, record: dict) -> bytes:
        """A record's encoding in the file's schema, as `write` would append it."""
        raw = self._encode(record) if self._encode is not None else None
        if raw is None:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, self.schema, record)
            raw = buf.getvalue()
        return raw

    def write(self, record: dict) -> int:
        """Encodes and appends a record; returns the size of its encoding."""
        buf = self._buf
        raw = self._encode(record) if self._encode is not None else None
        if raw is not None:
            buf.write(raw)
            size = len(raw)
        else:
            start = buf.tell()
            fastavro.schemaless_writer(buf, self.schema, record)
            size = buf.tell() - start
        self._count += 1
        if buf.tell() >= _BLOCK_BYTES:
            self._block()
        return size

    def write_raw(self, raw: bytes) -> None:
        self._buf.write(raw)
        self._count += 1
        if self._buf.tell() >= _BLOCK_BYTES:
            self._block()

    def _block(self) -> None:
        """Writes the records buffered so far as one block."""
        if not self._count:
            return
        data = deflate.deflate_raw(self._buf.getbuffer(), self.level)
        block = varint(self._count) + varint(len(data)) + data + self._sync
        try:
            self._file.write(block)
        except OSError as e:
            raise named(e, self.target) from e
        self._size += len(block)
        self._blocked(self._count)
        self.records += self._count
        self._buf = io.BytesIO()
        self._count = 0

    def _blocked(self, count: int) -> None:
        """A block of `count` records was written (subclasses keep track)."""

    def _end_block(self, finish) -> None:
        """Writes the buffered records as a block, then `finish`es the file (flush or close)."""
        self._block()
        try:
            finish()
        except OSError as e:
            raise named(e, self.target) from e

    def _close(self) -> None:
        self._end_block(self._file.close)


class PartWriter(AvroWriter):
    """A part: `path` appears only once complete (written as a hidden temporary file beside it,
    then renamed; on an object store written in place: an object appears when its upload ends).
    Use as a context manager; an exception discards what was written.

    With `keys`, the part gets its keys file (keysfile.py): every record's URL, status and
    encoded length, so that the next update can copy the records it does not change without
    decoding them (write_raw then needs the record's url and status)."""

    def __init__(self, path: str, schema: dict, level: int = 1, keys: bool = False):
        directory, name = path.rsplit('/', 1) if '/' in path else ('.', path)
        aside = f'{directory}/.{name}.inprogress'
        super().__init__(aside if fs.renames(path) else path, schema, name=path, level=level)
        self.path = path
        self._keys = KeysBuilder() if keys else None

    def write(self, record: dict) -> int:
        size = super().write(record)
        if self._keys is not None:
            self._keys.add(record['url'], record.get('status') or '', size)
        return size

    def write_raw(self, raw: bytes, url: Optional[str] = None,
                  status: Optional[str] = None) -> None:
        if self._keys is not None:
            if url is None:
                self._keys = None              # keys unknown: this part gets no keys file
            else:
                self._keys.add(url, status or '', len(raw))
        super().write_raw(raw)

    def write_run(self, data, keys: Keys, start: int, end: int) -> None:
        """Appends records start..end-1 of a keyed part unchanged: `data` is their bytes, in
        order (a slice of one block of that part). The blocks end where writing the records
        one by one would end them, so that the file is the same however it was written."""
        room = _BLOCK_BYTES - self._buf.tell()
        if len(data) < room:
            self._buf.write(data)
            if self._keys is not None:
                self._keys.extend(keys, start, end)
            self._count += end - start
            return
        ends = list(itertools.accumulate(keys.lengths[start:end]))     # of each record
        first, pos = 0, 0
        while first < len(ends):
            # the record that fills the block ends it; the rest stays in the buffer
            last = min(bisect.bisect_left(ends, pos + room, first), len(ends) - 1)
            self._buf.write(data[pos:ends[last]])
            if self._keys is not None:
                self._keys.extend(keys, start + first, start + last + 1)
            self._count += last + 1 - first
            first, pos = last + 1, ends[last]
            if self._buf.tell() >= _BLOCK_BYTES:
                self._block()
            room = _BLOCK_BYTES - self._buf.tell()

    def _blocked(self, count: int) -> None:
        if self._keys is not None:
            self._keys.blocks.append(count)

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.commit()
        else:
            self.abort()
        return False

    def commit(self) -> None:
        """Publishes the part (and its keys file); on an error the part is discarded."""
        try:
            self._close()
            size = self._size
            keys = keys_path(self.path)
            for old in ((self.path, keys) if self.target != self.path else (keys,)):
                fs.delete(old)
            if self.target != self.path:
                fs.rename(self.target, self.path)
        except OSError as e:
            self.abort()
            raise named(e, self.path) from e
        if self._keys is not None:
            self._keys.write(keys, size, self._sync)
        metrics.counter(metrics.STORE_PARTS).inc()
        metrics.counter(metrics.STORE_PART_BYTES).inc(size)

    def abort(self) -> None:
        """Discards the part being written (best effort: the error that matters is raised by
        the caller)."""
        try:
            if self._file is not None:
                self._file.close()
        except OSError:
            pass
        try:
            fs.delete(self.target)
        except Exception:  # pylint: disable=broad-except
            pass


class AppendWriter(AvroWriter):
    """A file written in place (a fetch journal's): records are appended, and each `flush()`
    writes them as a block and hands it to the operating system, so that a reader of the file
    finds every record flushed before (a killed writer's last block may be cut: the journal's
    reader stops there)."""

    def __init__(self, path: str, schema: dict):
        super().__init__(path, schema, name=f'{path} {uuid.uuid4().hex}')
        self.path = path

    def flush(self) -> None:
        self._end_block(self._file.flush)

    def close(self) -> None:
        self._close()


def write_avro_file(path: str, schema: dict, records: Iterable[dict]) -> None:
    """Writes one part from `records` (an empty list gives a valid empty file)."""
    with PartWriter(path, schema) as out:
        for record in records:
            out.write(record)
