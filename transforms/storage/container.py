"""Avro object container files, read block by block (the engine of the batch stages).

An Avro object container file is a header (magic, metadata with the writer's schema and codec,
a 16-byte sync marker) followed by blocks (record count, byte size, the records — deflated with
the deflate codec — and the sync marker again). This module reads that framing itself and leaves
the record encoding to fastavro, so that:

* a file can be cut into work units at block boundaries without decoding it (`scan_blocks`
  reads only block headers, seeking past the data);
* each record is read together with its encoded bytes (`read_records` yields (record, raw)),
  and a record that does not change is written back as those bytes (partwriter.PartWriter
  `write_raw`) instead of being encoded again — most of the crawldb in an update
  (docs/performance.md).

Codecs: null and deflate are read here; a file with another codec (snappy, zstandard, ...)
is read whole through fastavro's reader, with no raw bytes (`raw` is None then).
Errors: every malformed input is an InputError naming the file.
"""

import contextlib
import functools
import io
import json
import os
import stat
from typing import Callable, Iterator, List, NamedTuple, Optional, Tuple, Union

import fastavro

from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage import deflate, fs, parsedata
from beamcrawl.transforms.storage.datumcodec import (HandDecoder, datums_converter,
                                                     datums_decoder, encode_datum,
                                                     parsed_datum_schema, split_datums, varint)
from beamcrawl.transforms.storage.records import complete_datum

__all__ = ['Header', 'Block', 'MAGIC', 'NATIVE_CODECS', 'check_regular', 'read_header',
           'scan_blocks', 'read_records', 'read_datum_keys', 'splits_datums', 'read_long',
           'read_block', 'header_of', 'open_part', 'unreadable', 'read_datum_blocks']

MAGIC = b'Obj\x01'
NATIVE_CODECS = ('null', 'deflate')


class Header(NamedTuple):
    schema: dict            # the writer's schema, parsed by fastavro
    fields: Tuple[str, ...]
    codec: str
    sync: bytes
    data_start: int         # offset of the first block


class Block(NamedTuple):
    offset: int             # where the block's header starts
    count: int              # records in it


def read_long(f) -> int:
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


def read_block(f, offset: int) -> Tuple[int, bytes]:
    """(record count, data as stored) of the block at `offset`."""
    f.seek(offset)
    count = read_long(f)
    length = read_long(f)
    data = f.read(length)
    if len(data) != length:
        raise EOFError(f'truncated block at offset {offset}')
    return count, data


def _decompressed_blocks(f, header: Header, offsets: List[int]) -> Iterator[Tuple[int, bytes]]:
    """(record count, data decompressed) of the blocks at `offsets` (null or deflate codec)."""
    for offset in offsets:
        count, data = read_block(f, offset)
        if header.codec == 'deflate':
            data = deflate.inflate_raw(data)
        yield count, data


def _read_bytes(f) -> bytes:
    size = read_long(f)
    data = f.read(size)
    if size < 0 or len(data) != size:
        raise EOFError('truncated header')
    return data


def header_of(f) -> Header:
    if f.read(4) != MAGIC:
        raise ValueError('not an Avro object container file (bad magic)')
    meta = {}
    while True:
        count = read_long(f)
        if count == 0:
            break
        if count < 0:
            count = -count
            read_long(f)              # the block's byte size
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
    if fs.is_local(path):
        try:
            mode = os.stat(path).st_mode
        except OSError as e:
            raise InputError(f'{path}: cannot read ({e.strerror})') from None
        if not stat.S_ISREG(mode):
            raise InputError(f'{path}: not a regular file; a part must be one')


def open_part(path: str):
    """A part opened for reading its bytes (a regular file only: check_regular)."""
    check_regular(path)
    return fs.open_read(path)


def read_header(path: str) -> Header:
    """The header of an Avro file (InputError naming the file when it is not one)."""
    try:
        with open_part(path) as f:
            return header_of(f)
    except (OSError, ValueError, EOFError, KeyError, TypeError) as e:
        raise unreadable(path, e) from None


def unreadable(path: str, error: Exception) -> InputError:
    """The one error of a part that cannot be read, or is not an Avro file, naming it."""
    if isinstance(error, OSError):
        return InputError(f'{path}: cannot read ({error.strerror or error})')
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return InputError(f'{path}: not a readable Avro file ({text[:200]})')


def scan_blocks(path: str) -> Tuple[Header, List[Block]]:
    """The header and the blocks of a file, reading only block headers."""
    try:
        with open_part(path) as f:
            header = header_of(f)
            blocks = []
            offset = header.data_start
            while f.read(1):
                f.seek(offset)
                count = read_long(f)
                length = read_long(f)
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
        raise unreadable(path, e) from None


def read_records(path: str, offsets: Optional[List[int]] = None,
                 reader_schema: Optional[dict] = None, with_raw: bool = True,
                 complete: bool = False) -> Iterator[Tuple[dict, Optional[bytes]]]:
    """(record, encoded bytes) of the blocks starting at `offsets` (all blocks: None); the
    bytes are None with `with_raw` False. `complete` (CrawlDatum files): each record as
    records.complete_datum completes it (the hand decoder builds it so at once).

    The bytes are the record's encoding in the file's own schema, so they can be written back
    unchanged only into a file with the same schema (PartWriter.write_raw checks the fields).
    With a codec read by fastavro (not null or deflate), every record of the file is read
    and the bytes are None.
    """
    with _reading(path), open_part(path) as f:
        header = header_of(f)
        if header.codec not in NATIVE_CODECS:
            if offsets is None or offsets == [header.data_start]:
                f.seek(0)
                for record in fastavro.reader(f, reader_schema=reader_schema):
                    yield (complete_datum(record) if complete else record), None
                return
            raise ValueError(f'codec {header.codec} cannot be read block by block')
        if offsets is None:
            offsets = [b.offset for b in scan_blocks(path)[1]]
        decode = (datums_decoder(header.schema, complete) if reader_schema is None
                  else None)
        if decode is not None:
            # CrawlDatum records, in the crawldb's schema or another CrawlDatum-shaped one
            # (only the contract's fields, the status symbols in another order), decoded
            # here (datumcodec.datums_decoder: less than half fastavro's cost where times
            # repeat, HandDecoder decides); a block that does not decode cleanly is left
            # to fastavro.
            hand = HandDecoder(decode)
            for count, data in _decompressed_blocks(f, header, offsets):
                decoded = hand.decode(data, count)
                if decoded is None:
                    decoded = _decoded_by_fastavro(data, count, header.schema)
                    if complete:
                        decoded = [(complete_datum(r), raw) for r, raw in decoded]
                if with_raw:
                    yield from decoded
                else:
                    for record, _ in decoded:
                        yield record, None
            return
        if not with_raw:
            # The blocks after the file's own header, decoded by fastavro's reader: about
            # 20% faster than record by record, when no record's bytes are wanted.
            f.seek(0)
            framed = [f.read(header.data_start)]
            for offset in offsets:
                count, data = read_block(f, offset)
                framed += (varint(count), varint(len(data)), data, header.sync)
            for record in fastavro.reader(io.BytesIO(b''.join(framed)),
                                          reader_schema=reader_schema):
                yield (complete_datum(record) if complete else record), None
            return
        reader = (fastavro.parse_schema(reader_schema)
                  if reader_schema is not None else None)
        for count, data in _decompressed_blocks(f, header, offsets):
            for record, raw in _decoded_by_fastavro(data, count, header.schema, reader):
                yield (complete_datum(record) if complete else record), raw


def read_datums(path: str, offsets: Optional[List[int]] = None
                ) -> Iterator[Tuple[dict, Optional[bytes]]]:
    """(record, its bytes in CRAWL_DATUM_SCHEMA or None) of a CrawlDatum file's blocks at
    `offsets` (all: None), each record complete (records.complete_datum): read_records, with
    the records' bytes in the crawldb's own schema rather than the file's. For a file in
    CRAWL_DATUM_SCHEMA they are the file's bytes; for another writer's CrawlDatum-shaped schema,
    the block split and made ours (datumcodec.datums_converter: the bytes encode_datum gives
    the record decoded), None for the records of a block the converter leaves; for any other
    schema or codec, None."""
    header = read_header(path)
    if header.schema == parsed_datum_schema():
        yield from read_records(path, offsets, with_raw=True)
        return
    convert = datums_converter(header.schema) if header.codec in NATIVE_CODECS else None
    decode = datums_decoder(header.schema, True) if convert is not None else None
    if decode is None:
        yield from read_records(path, offsets, with_raw=False, complete=True)
        return
    with _reading(path), open_part(path) as f:
        header = header_of(f)
        if offsets is None:
            offsets = [b.offset for b in scan_blocks(path)[1]]
        hand = HandDecoder(decode)
        for count, data in _decompressed_blocks(f, header, offsets):
            decoded = hand.decode(data, count)
            if decoded is None:
                decoded = [(complete_datum(r), None)
                           for r, _ in _decoded_by_fastavro(data, count, header.schema)]
            ours = convert(data, count)
            if ours is None:
                for record, _ in decoded:
                    yield record, None
            else:
                for (record, _), (_, _, raw) in zip(decoded, ours):
                    yield record, raw


def read_outlinks(path: str, offsets: Optional[List[int]] = None
                  ) -> Iterator[Tuple[str, List[Tuple[str, str]]]]:
    """(url, [(to_url, anchor)]) of each record of a parse_data part's blocks at `offsets`
    (all: None), as fastavro reads them: walked by hand where the writer's schema is
    ParseData's layout (parsedata.walk_block), else, and for a block that does not walk
    cleanly, by fastavro."""
    header = read_header(path)
    if header.codec not in NATIVE_CODECS or not parsedata.plain_layout(header.schema):
        for record, _ in read_records(path, offsets, with_raw=False):
            yield record['url'], [(o['to_url'], o['anchor']) for o in record['outlinks']]
        return
    with _reading(path), open_part(path) as f:
        header = header_of(f)
        if offsets is None:
            offsets = [b.offset for b in scan_blocks(path)[1]]
        for count, data in _decompressed_blocks(f, header, offsets):
            walked = parsedata.walk_block(data, count)
            if walked is None:
                walked = [(record['url'],
                           [(o['to_url'], o['anchor']) for o in record['outlinks']])
                          for record, _ in _decoded_by_fastavro(data, count, header.schema)]
            yield from walked


@contextlib.contextmanager
def _reading(path: str) -> Iterator[None]:
    """Any error while a part is read (fastavro's decoder errors too) is an InputError naming
    the part; an InputError passes as it is."""
    try:
        yield
    except InputError:
        raise
    except Exception as e:  # pylint: disable=broad-except  (fastavro decoder errors)
        raise unreadable(path, e) from None


def _decoded_by_fastavro(data: bytes, count: int, schema: dict, reader: Optional[dict] = None
                         ) -> Iterator[Tuple[dict, bytes]]:
    """(record, its encoded bytes) of a block's `count` records, decoded by fastavro."""
    buf = io.BytesIO(data)
    start = 0
    for _ in range(count):
        record = fastavro.schemaless_reader(buf, schema, reader)
        end = buf.tell()
        yield record, data[start:end]
        start = end


def splits_datums(path: str) -> bool:
    """Whether read_datum_keys reads the part: its records are CrawlDatum records in
    CRAWL_DATUM_SCHEMA or another CrawlDatum-shaped schema (datumcodec.datums_converter), in
    blocks (null or deflate codec)."""
    header = read_header(path)
    return header.codec in NATIVE_CODECS and datums_converter(header.schema) is not None


def read_datum_keys(path: str, offsets: List[int]
                    ) -> Iterator[Tuple[str, str, Union[bytes, dict]]]:
    """(url, status, the record's bytes in CRAWL_DATUM_SCHEMA) of the records of the blocks at
    `offsets` of a crawldb part that splits_datums reads, without decoding them
    (datumcodec.split_datums: a quarter of the cost; datums_converter for another writer's
    CrawlDatum-shaped schema: its bytes made ours). A block that does not split cleanly is
    decoded by fastavro, which raises what read_records would; in another writer's schema, its
    records completed (records.complete_datum) are encoded in ours (encode_datum), and a record
    that encode_datum leaves is given as that completed dict instead of bytes (the caller's
    writer encodes it with fastavro, as it would any record)."""
    for _, _, keys in read_datum_blocks(path, offsets):
        yield from keys()


def read_datum_blocks(path: str, offsets: List[int]
                      ) -> Iterator[Tuple[int, bytes, Callable[[], Iterator[tuple]]]]:
    """(record count, data decompressed, `keys`) of the blocks at `offsets` of a part that
    splits_datums reads; `keys()` gives the block's (url, status, bytes or dict) as
    read_datum_keys does (for a caller that takes the block's bytes in C where it can:
    storage/datumruns.py)."""
    with _reading(path), open_part(path) as f:
        header = header_of(f)
        if header.codec not in NATIVE_CODECS:
            raise ValueError(f'codec {header.codec} cannot be read block by block')
        own = header.schema == parsed_datum_schema()
        split_block = split_datums if own else datums_converter(header.schema)
        if split_block is None:
            raise ValueError('not a CrawlDatum-shaped schema')

        def keys(count, data):
            with _reading(path):
                split = split_block(data, count)
                if split is not None:
                    yield from split
                elif own:
                    yield from ((record['url'], record['status'], raw) for record, raw
                                in _decoded_by_fastavro(data, count, header.schema))
                else:
                    for record, _ in _decoded_by_fastavro(data, count, header.schema):
                        record = complete_datum(record)
                        raw = encode_datum(record)
                        yield record['url'], record['status'], record if raw is None else raw
        for count, data in _decompressed_blocks(f, header, offsets):
            yield count, data, functools.partial(keys, count, data)
