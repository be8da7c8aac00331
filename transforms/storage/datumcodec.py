"""CrawlDatum records in Avro's binary encoding, written by hand where that is much cheaper than
fastavro's general encoder. Pure, no Beam.

* `encode_datum(record)`: the record's bytes, the same bytes fastavro writes for
  CRAWL_DATUM_SCHEMA, in about a fifth of the time (0.8 µs against 4.3 µs a record on the
  development machine; docs/performance.md). A record that is not plainly typed (a field of
  another type, a number out of its range, a missing field) gets None: the caller encodes it
  with fastavro, which then does whatever fastavro does with it.
* `datum_score_offset`, `score_at`, `with_score`: the score inside an encoded record. An
  update that brings a known URL nothing but inlinks changes only its score, so updatedb
  writes the record's bytes with the score replaced instead of decoding and encoding it.

Avro's binary encoding (the Avro specification, "Binary Encoding"): int and long are zigzag
varints; a string or bytes is its length (a long) and its bytes; an enum is the symbol's index;
a union is the branch's index and the value; a map is blocks of (count, keys and values) ended
by a count of 0; a float is 4 bytes little-endian.
"""

import functools
import io
import re
import struct
from typing import Callable, Dict, NamedTuple, Optional, Tuple

import fastavro

from beamcrawl.transforms.storage.native import codec as _c
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, STATUSES

__all__ = ['encode_datum', 'encoder_for', 'varint', 'datum_score_offset', 'score_at', 'with_score',
           'split_datums', 'decode_datums', 'datums_decoder', 'datums_converter', 'decode_datum',
           'parsed_datum_schema', 'HandDecoder']

_FIELDS = tuple(f['name'] for f in CRAWL_DATUM_SCHEMA['fields'])
assert _FIELDS == ('url', 'status', 'fetch_time', 'modified_time', 'fetch_interval', 'retries',
                   'score', 'signature', 'metadata', 'protocol_status', 'http_code'), \
    'CRAWL_DATUM_SCHEMA changed: change datumcodec with it'

_FLOAT = struct.Struct('<f')
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


def varint(n: int) -> bytes:
    """A long in Avro's encoding: zigzag, then 7 bits a byte, least significant first."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class _Varints(dict):
    """Encoded longs by value, remembered: a crawldb's times and intervals repeat a lot."""

    limit = 50_000

    def __missing__(self, n: int) -> bytes:
        if not _LONG_MIN <= n <= _LONG_MAX:       # callers check the type
            raise _Unplain()
        if len(self) >= self.limit:
            self.clear()
        encoded = self[n] = varint(n)
        return encoded


class _Unplain(Exception):
    """A record that encode_datum leaves to fastavro."""


_LONGS = _Varints()
_STATUS = {status: varint(i) for i, status in enumerate(STATUSES)}


def _string(text) -> bytes:
    if type(text) is not str:               # pylint: disable=unidiomatic-typecheck
        raise _Unplain()
    data = text.encode('utf-8')
    return _LONGS[len(data)] + data


def _long(n) -> bytes:
    if type(n) is not int:                  # pylint: disable=unidiomatic-typecheck
        raise _Unplain()                    # (True or 1.0 would find 1's encoding)
    return _LONGS[n]


def _int(n) -> bytes:
    if type(n) is not int:                  # pylint: disable=unidiomatic-typecheck
        raise _Unplain()
    if not _INT_MIN <= n <= _INT_MAX:
        raise _Unplain()
    return _LONGS[n]


def _metadata(metadata: Dict[str, str]) -> bytes:
    if type(metadata) is not dict:          # pylint: disable=unidiomatic-typecheck
        raise _Unplain()
    if not metadata:
        return b'\x00'
    parts = [_LONGS[len(metadata)]]
    for key, value in metadata.items():
        parts.append(_string(key))
        parts.append(_string(value))
    parts.append(b'\x00')
    return b''.join(parts)


def encode_datum(record: dict) -> Optional[bytes]:
    """The record's encoding in CRAWL_DATUM_SCHEMA, byte for byte what fastavro writes; None
    when the record is not plainly typed (encode it with fastavro then)."""
    if _c is not None:
        return _c.encode_own(record)
    try:
        signature = record['signature']
        if signature is None:
            signature = b'\x00'
        elif type(signature) is bytes:      # pylint: disable=unidiomatic-typecheck
            signature = b'\x02' + _LONGS[len(signature)] + signature
        else:
            return None
        protocol = record['protocol_status']
        http_code = record['http_code']
        score = record['score']
        if type(score) not in (float, int):     # a bool, a numpy number...: fastavro decides
            return None
        return b''.join((
            _string(record['url']), _STATUS[record['status']], _long(record['fetch_time']),
            _long(record['modified_time']), _int(record['fetch_interval']),
            _int(record['retries']), _FLOAT.pack(score), signature,
            _metadata(record['metadata']),
            b'\x00' if protocol is None else b'\x02' + _string(protocol),
            b'\x00' if http_code is None else b'\x02' + _int(http_code)))
    except (_Unplain, KeyError, TypeError, OverflowError, UnicodeError, struct.error):
        return None


def encoder_for(schema: dict) -> Optional[Callable[[dict], Optional[bytes]]]:
    """A hand-written encoder giving fastavro's bytes for records of `schema`, when there is
    one (CrawlDatum: encode_datum, 5× faster); else None (use fastavro)."""
    return encode_datum if schema == CRAWL_DATUM_SCHEMA else None


# -- the score inside an encoded record ----------------------------------------------------------
# It follows the URL (a length and its bytes) and five varints (status, fetch_time,
# modified_time, fetch_interval, retries).

_FIVE_VARINTS = re.compile(rb'(?:[\x80-\xff]{0,9}[\x00-\x7f]){5}')


def _varint_at(raw: bytes, pos: int) -> Tuple[int, int]:
    """(value, end) of the zigzag varint at `pos`."""
    shift = result = 0
    while True:
        b = raw[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def datum_score_offset(raw: bytes) -> Optional[int]:
    """Where the score of an encoded record starts, when its metadata is empty (so that
    replacing the score is all an inlinks-only update does to it); else None. `raw` is one
    whole record (a keys file or container.read_records says where it ends)."""
    if _c is not None:
        return _c.score_offset(raw)
    try:
        length, pos = _varint_at(raw, 0)
        m = _FIVE_VARINTS.match(raw, pos + length)
        if m is None:
            return None
        score = m.end()
        pos = score + 4
        if raw[pos] == 0:                       # signature: null
            pos += 1
        elif raw[pos] == 2:                     # signature: the union's 'bytes' branch
            length, pos = _varint_at(raw, pos + 1)
            pos += length
        else:
            return None
        return score if raw[pos] == 0 else None      # metadata: an empty map
    except IndexError:
        return None


def score_at(raw: bytes, offset: int) -> float:
    """The score of an encoded record (`offset` from datum_score_offset)."""
    return _FLOAT.unpack_from(raw, offset)[0]


def with_score(raw: bytes, offset: int, score: float) -> bytes:
    """The encoded record with its score (at `offset`, from datum_score_offset) replaced."""
    if _c is not None:
        return _c.with_score(raw, offset, score)
    return raw[:offset] + _FLOAT.pack(score) + raw[offset + 4:]


# -- records split out of a block, without decoding them -----------------------------------------
# Where only a record's URL, status and bytes are wanted (an old crawldb record that an update
# copies as it is), reading its fields' lengths costs a fraction of decoding it into a dict
# (docs/performance.md).

_STATUS_NAMES = tuple(STATUSES)
_FOUR_VARINTS = re.compile(rb'(?:[\x80-\xff]{0,9}[\x00-\x7f]){4}')


def split_datums(data: bytes, count: int) -> Optional[list]:
    """[(url, status, encoded record)] of a block's `count` records (its data, decompressed, in
    CRAWL_DATUM_SCHEMA); None when the data is not exactly that many well-formed records (the
    caller decodes it with fastavro then, which says what is wrong)."""
    if _c is not None:
        return _c.split(data, count, _OWN_CONV)
    out = []
    append = out.append
    four = _FOUR_VARINTS.match
    statuses = _STATUS_NAMES
    pos = 0
    try:
        for _ in range(count):
            start = pos
            b = data[pos]
            if b < 0x80:                            # the URL's length, one byte (< 64)
                length, pos = b >> 1, pos + 1
            else:
                length, pos = _varint_at(data, pos)
            if length < 0:
                return None
            end = pos + length
            url = data[pos:end].decode('utf-8')
            b = data[end]
            if b >= 0x80 or b & 1:                  # the status: a small non-negative index
                return None
            status = statuses[b >> 1]
            m = four(data, end + 1)                 # fetch_time ... retries
            if m is None:
                return None
            pos = m.end() + 4                       # the score: a float
            b = data[pos]
            if b == 0:                              # signature: null
                pos += 1
            elif b == 2:                            # signature: bytes
                length, pos = _varint_at(data, pos + 1)
                if length < 0:
                    return None
                pos += length
            else:
                return None
            if data[pos] == 0:                      # metadata: an empty map
                pos += 1
            else:
                while True:
                    entries, pos = _varint_at(data, pos)
                    if entries == 0:
                        break
                    if entries < 0:                 # a block with its byte size
                        entries = -entries
                        _, pos = _varint_at(data, pos)
                    for _ in range(2 * entries):
                        length, pos = _varint_at(data, pos)
                        if length < 0:
                            return None
                        data[pos:pos + length].decode('utf-8')
                        pos += length
            b = data[pos]
            if b == 0:                              # protocol_status: null
                pos += 1
            elif b == 2:                            # protocol_status: a string
                length, pos = _varint_at(data, pos + 1)
                if length < 0:
                    return None
                data[pos:pos + length].decode('utf-8')
                pos += length
            else:
                return None
            b = data[pos]
            if b == 0:                              # http_code: null
                pos += 1
            elif b == 2:                            # http_code: an int
                code, pos = _varint_at(data, pos + 1)
                if not _INT_MIN <= code <= _INT_MAX:
                    return None
            else:
                return None
            if pos > len(data):
                return None
            append((url, status, data[start:pos]))
    except (IndexError, UnicodeDecodeError):
        return None
    return out if pos == len(data) else None


# -- records decoded by hand ---------------------------------------------------------------------
# fastavro's schemaless_reader costs about 3 µs a CrawlDatum record, most of it per call; read
# here, a block's records cost less than half that when their times repeat (docs/performance.md).
# The four varints after the status are taken by one regex; their values are remembered by their
# bytes (the URLs one update added share their fetch time, intervals and retry counts repeat).
# A value decoded in Python costs more than fastavro's C: where most records bring new times
# (fetched pages), `HandDecoder` leaves the blocks to fastavro.
#
# The same loop reads files written in another CrawlDatum-shaped schema (`datums_decoder`): a
# crawldb or segment written by another tool with only the contract's fields (docs/crawl-dir.md),
# its status enum's symbols in any order. Such a file is read without a reader schema, so the
# records are what fastavro reads with the writer's schema alone: the writer's fields, the
# status its symbol; or, for a caller that completes them anyway, the record as
# records.complete_datum completes it (protocol_status and http_code None where the writer has
# no such field), built at once rather than copied.

_FOUR_LONGS = re.compile(rb'([\x80-\xff]{0,8}[\x00-\x7f])([\x80-\xff]{0,8}[\x00-\x7f])'
                         rb'([\x80-\xff]{0,8}[\x00-\x7f])([\x80-\xff]{0,8}[\x00-\x7f])')


class _Decoded(dict):
    """Long values by their encoded bytes (at most 9 bytes: 63 bits), remembered; `misses`
    counts the values that were not."""

    limit = 50_000
    misses = 0

    def __missing__(self, data: bytes) -> int:
        self.misses += 1
        if len(self) >= self.limit:
            self.clear()
        value = self[data] = _varint_at(data, 0)[0]
        return value


_LONG_OF = _Decoded()


def _string_at(data: bytes, pos: int) -> Tuple[str, int]:
    length, pos = _varint_at(data, pos)
    if length < 0:
        raise IndexError('negative length')
    end = pos + length
    if end > len(data):
        raise IndexError('cut short')
    return data[pos:end].decode('utf-8'), end


# How the writer wrote an optional field (signature, protocol_status, http_code): the byte that
# says null and the byte that says a value (a union's branch indexes 0 and 1, zigzag: 0 and 2,
# in the writer's order), or _PLAIN (the value's type alone, never null), or _ABSENT (no such
# field: it ends the writer's record).
_PLAIN = (-1, -1)
_ABSENT = None


class _Layout(NamedTuple):
    statuses: Tuple[str, ...]           # the status enum's symbols, by index
    signature: Tuple[int, int]          # (null byte, value byte): a union of null and bytes
    protocol_status: Optional[Tuple[int, int]]
    http_code: Optional[Tuple[int, int]]


_OWN_LAYOUT = _Layout(_STATUS_NAMES, (0, 2), (0, 2), (0, 2))


@functools.lru_cache(maxsize=64)
def _c_layout(layout: _Layout) -> tuple:
    """The layout as _datums.c takes it: (statuses, signature's null and value bytes, then per
    optional field a mode (0 absent, 1 plain, 2 a union) and its null and value bytes)."""
    def field(written):
        if written is _ABSENT:
            return (0, 0, 0)
        return (1, 0, 0) if written is _PLAIN else (2, *written)
    return (layout.statuses, *layout.signature, *field(layout.protocol_status),
            *field(layout.http_code))


def _c_conv(layout: _Layout) -> tuple:
    """The conversion of a writer's records to ours as _datums.c takes it: (layout, whether it
    is our own schema, per writer symbol our (status, index) or None, same symbol order)."""
    own = {name: i for i, name in enumerate(_STATUS_NAMES)}
    table = tuple((_STATUS_NAMES[own[s]], own[s]) if s in own else None
                  for s in layout.statuses)
    return (_c_layout(layout), layout == _OWN_LAYOUT, table,
            all(own.get(s) == i for i, s in enumerate(layout.statuses)))


_OWN_CONV = _c_conv(_OWN_LAYOUT)
if _c is not None:
    _c.set_own(_c_layout(_OWN_LAYOUT))


def _decode_block(data: bytes, count: int, layout: _Layout, complete: bool = False
                  ) -> Optional[list]:
    """decode_datums for the writer's `layout`; `complete`: every record with all of
    CRAWL_DATUM_SCHEMA's fields (as records.complete_datum fills them)."""
    if _c is not None:
        return _c.decode(data, count, _c_layout(layout), complete)
    out = []
    append = out.append
    four = _FOUR_LONGS.match
    longs = _LONG_OF
    statuses, (sig_null, sig_value), protocol, http = layout
    full = complete or (protocol is not _ABSENT and http is not _ABSENT)
    unpack_float = _FLOAT.unpack_from
    size = len(data)
    pos = 0
    try:
        for _ in range(count):
            start = pos
            b = data[pos]
            if b < 0x80:                            # the URL's length, one byte (< 64)
                end = pos + 1 + (b >> 1)
                if b & 1 or end > size:
                    return None
                url = data[pos + 1:end].decode('utf-8')
            else:
                url, end = _string_at(data, pos)
            b = data[end]
            if b >= 0x80 or b & 1:                  # the status: a small non-negative index
                return None
            status = statuses[b >> 1]
            m = four(data, end + 1)                 # fetch_time, modified_time, interval, retries
            if m is None:
                return None
            fetch_time, modified_time, interval, retries = m.groups()
            pos = m.end()
            if pos + 4 > size:
                return None
            score = unpack_float(data, pos)[0]
            pos += 4
            b = data[pos]
            if b == sig_null:
                signature = None
                pos += 1
            elif b == sig_value:
                length, pos = _varint_at(data, pos + 1)
                if length < 0 or pos + length > size:
                    return None
                signature = data[pos:pos + length]
                pos += length
            else:
                return None
            metadata = {}
            if data[pos] == 0:
                pos += 1
            else:
                while True:
                    entries, pos = _varint_at(data, pos)
                    if entries == 0:
                        break
                    if entries < 0:                 # a block with its byte size
                        entries = -entries
                        _, pos = _varint_at(data, pos)
                    for _ in range(entries):
                        key, pos = _string_at(data, pos)
                        metadata[key], pos = _string_at(data, pos)
            protocol_status = http_code = None
            if protocol is not _ABSENT:
                if protocol is _PLAIN:
                    protocol_status, pos = _string_at(data, pos)
                else:
                    b = data[pos]
                    if b == protocol[0]:
                        pos += 1
                    elif b == protocol[1]:
                        protocol_status, pos = _string_at(data, pos + 1)
                    else:
                        return None
            if http is not _ABSENT:
                if http is _PLAIN:
                    http_code, pos = _varint_at(data, pos)
                else:
                    b = data[pos]
                    if b == http[0]:
                        pos += 1
                    elif b == http[1]:
                        http_code, pos = _varint_at(data, pos + 1)
                    else:
                        return None
            if full:
                record = {'url': url, 'status': status, 'fetch_time': longs[fetch_time],
                          'modified_time': longs[modified_time],
                          'fetch_interval': longs[interval], 'retries': longs[retries],
                          'score': score, 'signature': signature, 'metadata': metadata,
                          'protocol_status': protocol_status, 'http_code': http_code}
            else:                                   # the writer's fields only
                record = {'url': url, 'status': status, 'fetch_time': longs[fetch_time],
                          'modified_time': longs[modified_time],
                          'fetch_interval': longs[interval], 'retries': longs[retries],
                          'score': score, 'signature': signature, 'metadata': metadata}
                if protocol is not _ABSENT:
                    record['protocol_status'] = protocol_status
            if pos > size:
                return None
            append((record, data[start:pos]))
    except (IndexError, UnicodeDecodeError):
        return None
    return out if pos == size else None


def decode_datums(data: bytes, count: int) -> Optional[list]:
    """[(record, its encoded bytes)] of a block's `count` records (its data, decompressed, in
    CRAWL_DATUM_SCHEMA): the dicts fastavro's reader gives. None when the data is not exactly
    that many well-formed records or holds a long of more than 63 bits (the caller reads it
    with fastavro then, which decides)."""
    return _decode_block(data, count, _OWN_LAYOUT)


_PRIMITIVES = ('null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string')


def _primitive(avro_type) -> Optional[str]:
    """The primitive type named by `avro_type` ('long', {'type': 'long'}); None for any other
    type, and for a primitive with a logical type (fastavro would read it as something else)."""
    if isinstance(avro_type, dict):
        if 'logicalType' in avro_type:
            return None
        avro_type = avro_type.get('type')
    return avro_type if isinstance(avro_type, str) and avro_type in _PRIMITIVES else None


def _optional(avro_type, value: str) -> Optional[Tuple[int, int]]:
    """How an optional field of type `avro_type` is written, when it holds `value`s: a union
    of null and `value` in either order, or `value` alone (_PLAIN); None for anything else."""
    if _primitive(avro_type) == value:
        return _PLAIN
    if isinstance(avro_type, list) and len(avro_type) == 2:
        branches = [_primitive(t) for t in avro_type]
        if branches == ['null', value]:
            return (0, 2)
        if branches == [value, 'null']:
            return (2, 0)
    return None


_FIXED_TYPES = {'url': 'string', 'fetch_time': 'long', 'modified_time': 'long',
                'fetch_interval': 'int', 'retries': 'int', 'score': 'float'}


def _layout_of(schema) -> Optional[_Layout]:
    """The layout of a CrawlDatum-shaped writer schema (parsed by fastavro or not); None when
    the schema is not one: its fields must be CRAWL_DATUM_SCHEMA's first 9, 10 or 11, in that
    order, of these types: url string; status an enum (any symbols, up to 64, in any order);
    fetch_time and modified_time long; fetch_interval and retries int; score float; signature
    a union of null and bytes; metadata a map of strings; protocol_status a string and
    http_code an int, each alone or in a union with null."""
    if not isinstance(schema, dict) or schema.get('type') != 'record':
        return None
    fields = schema.get('fields')
    if not isinstance(fields, list) or not 9 <= len(fields) <= len(_FIELDS):
        return None
    if any(not isinstance(f, dict) for f in fields):
        return None
    types = {f.get('name'): f.get('type') for f in fields}
    if tuple(f.get('name') for f in fields) != _FIELDS[:len(fields)]:
        return None
    if any(_primitive(types[name]) != kind for name, kind in _FIXED_TYPES.items()):
        return None
    status = types['status']
    if not (isinstance(status, dict) and status.get('type') == 'enum'
            and 'logicalType' not in status):
        return None
    symbols = status.get('symbols')
    if not (isinstance(symbols, list) and 0 < len(symbols) <= 64
            and all(isinstance(s, str) for s in symbols)):
        return None
    metadata = types['metadata']
    if not (isinstance(metadata, dict) and metadata.get('type') == 'map'
            and 'logicalType' not in metadata and _primitive(metadata.get('values')) == 'string'):
        return None
    signature = _optional(types['signature'], 'bytes')
    if signature is None or signature is _PLAIN:
        return None
    tail = []
    for name, value in (('protocol_status', 'string'), ('http_code', 'int')):
        if name not in types:
            tail.append(_ABSENT)
            continue
        written = _optional(types[name], value)
        if written is None:
            return None
        tail.append(written)
    return _Layout(tuple(symbols), signature, *tail)


def datums_decoder(schema, complete: bool = False
                   ) -> Optional[Callable[[bytes, int], Optional[list]]]:
    """For a file whose writer's schema is `schema` (parsed by fastavro or not): a decoder of
    its blocks like decode_datums, giving the records fastavro reads with that schema alone
    (no reader schema), when the schema is CrawlDatum-shaped (_layout_of: CRAWL_DATUM_SCHEMA's
    fields, or its first 9 or 10, with the types beamcrawl reads by hand); else None (fastavro
    reads the file). With `complete`, the records are as records.complete_datum completes
    those: the fields the writer has not, None."""
    layout = _layout_of(schema)
    if layout is None:
        return None
    if layout == _OWN_LAYOUT:
        return decode_datums
    if _c is not None:
        c_layout = _c_layout(layout)
        return lambda data, count: _c.decode(data, count, c_layout, complete)
    return lambda data, count: _decode_block(data, count, layout, complete)



# -- records of another CrawlDatum-shaped writer, as our schema's bytes ---------------------------
# A record that another tool wrote in a CrawlDatum-shaped schema (_layout_of) is, in our schema,
# almost the same bytes: the status is its index in our enum rather than the writer's, a
# signature union written bytes-first has its branch byte swapped, and the fields the writer has
# not (protocol_status, http_code: null) are appended; for the contract's 9 fields with our
# symbol order, the writer's bytes and b'\x00\x00'. What a record decoded and encoded again
# (encode_datum) would give, at the cost of splitting it (docs/performance.md). The bytes are
# taken as they are only where encoding the decoded record gives them back: every varint in
# its shortest form, a map in one block of distinct keys, a score that is not a NaN or an
# infinity (their bits might not survive a float), longs of at most 63 bits and ints of at most
# 27; any other block is left to the caller (None), which decodes and encodes it.

_CANONICAL_LONGS = re.compile(rb'(?:[\x80-\xff]{1,8}[\x01-\x7f]|[\x00-\x7f])'
                              rb'(?:[\x80-\xff]{1,8}[\x01-\x7f]|[\x00-\x7f])'
                              rb'(?:[\x80-\xff]{1,3}[\x01-\x7f]|[\x00-\x7f])'
                              rb'(?:[\x80-\xff]{1,3}[\x01-\x7f]|[\x00-\x7f])')


def _length_at(data: bytes, pos: int) -> Tuple[int, int]:
    """(length, end) of the length at `pos` in its shortest form (IndexError otherwise, as for
    a cut block: the caller leaves the block)."""
    b = data[pos]
    if b < 0x80:
        if b & 1:
            raise IndexError('negative length')
        return b >> 1, pos + 1
    length, end = _varint_at(data, pos)
    if data[end - 1] == 0 or length < 0:
        raise IndexError('not a shortest length')
    return length, end


def _text_end(data: bytes, pos: int) -> int:
    """The end of the UTF-8 string at `pos` (checked)."""
    length, pos = _length_at(data, pos)
    end = pos + length
    if end > len(data):
        raise IndexError('cut short')
    data[pos:end].decode('utf-8')
    return end


def _own_tail(data: bytes, pos: int, layout: _Layout) -> Tuple[bytes, int]:
    """(protocol_status and http_code in our schema, end) of a writer's record whose fields
    after metadata start at `pos`."""
    parts = []
    protocol, http = layout.protocol_status, layout.http_code
    if protocol is _ABSENT:
        parts.append(b'\x00')
    else:
        if protocol is not _PLAIN:
            b = data[pos]
            pos += 1
        if protocol is _PLAIN or b == protocol[1]:
            end = _text_end(data, pos)
            parts.append(b'\x02' + data[pos:end])
            pos = end
        elif b == protocol[0]:
            parts.append(b'\x00')
        else:
            raise IndexError('no such branch')
    if http is _ABSENT:
        parts.append(b'\x00')
    else:
        if http is not _PLAIN:
            b = data[pos]
            pos += 1
        if http is _PLAIN or b == http[1]:
            code, end = _varint_at(data, pos)
            if not _INT_MIN <= code <= _INT_MAX or (end - pos > 1 and data[end - 1] == 0):
                raise IndexError('not a plain int')
            parts.append(b'\x02' + data[pos:end])
            pos = end
        elif b == http[0]:
            parts.append(b'\x00')
        else:
            raise IndexError('no such branch')
    return b''.join(parts), pos


def _convert_block(data: bytes, count: int, layout: _Layout, statuses: Tuple,
                   same_order: bool) -> Optional[list]:
    """[(url, status, the record's bytes in CRAWL_DATUM_SCHEMA)] of a block of the writer's
    `layout`; `statuses`: (our status name, our status byte) by the writer's index, None for a
    symbol we have not; `same_order`: every symbol has the writer's index in ours."""
    out = []
    append = out.append
    longs = _CANONICAL_LONGS.match
    sig_null, sig_value = layout.signature
    swap_signature = sig_null != 0
    plain_tail = layout.protocol_status is _ABSENT and layout.http_code is _ABSENT
    size = len(data)
    pos = 0
    try:
        for _ in range(count):
            start = pos
            b = data[pos]
            if b < 0x80:                            # the URL's length, one byte (< 64)
                end = pos + 1 + (b >> 1)
                if b & 1 or end > size:
                    return None
                url = data[pos + 1:end].decode('utf-8')
            else:
                length, pos = _length_at(data, pos)
                end = pos + length
                if end > size:
                    return None
                url = data[pos:end].decode('utf-8')
            at_status = end
            b = data[end]
            if b >= 0x80 or b & 1:                  # the status: a small non-negative index
                return None
            status, status_byte = statuses[b >> 1]
            m = longs(data, end + 1)                # fetch_time, modified_time, interval, retries
            if m is None:
                return None
            pos = m.end()
            if pos + 4 > size or (data[pos + 3] & 0x7F == 0x7F and data[pos + 2] & 0x80):
                return None                         # cut, or a NaN or infinite score
            pos += 4
            at_signature = pos
            b = data[pos]
            if b == sig_null:
                pos += 1
            elif b == sig_value:
                length, pos = _length_at(data, pos + 1)
                pos += length
                if pos > size:
                    return None
            else:
                return None
            if data[pos] == 0:                      # metadata: an empty map
                pos += 1
            else:
                entries, pos = _length_at(data, pos)       # one block, a positive count
                keys = set()
                for _ in range(entries):
                    end = _text_end(data, pos)
                    keys.add(data[pos:end])
                    pos = _text_end(data, end)
                if len(keys) != entries or data[pos] != 0:
                    return None                     # a key twice, or another block
                pos += 1
            if same_order and not swap_signature:
                raw = data[start:pos]
            else:
                raw = b''.join((
                    data[start:at_status], status_byte, data[at_status + 1:at_signature],
                    (b'\x02' if data[at_signature] == sig_value else b'\x00')
                    if swap_signature else data[at_signature:at_signature + 1],
                    data[at_signature + 1:pos]))
            if plain_tail:
                append((url, status, raw + b'\x00\x00'))
            else:
                tail, pos = _own_tail(data, pos, layout)
                append((url, status, raw + tail))
    except (IndexError, TypeError, UnicodeDecodeError):     # TypeError: a status we have not
        return None
    return out if pos == size else None


def datums_converter(schema) -> Optional[Callable[[bytes, int], Optional[list]]]:
    """For a file whose writer's schema is `schema` (parsed by fastavro or not): a splitter of
    its blocks like split_datums, giving [(url, status, the record's bytes in
    CRAWL_DATUM_SCHEMA)], the bytes encode_datum gives the record decoded, when the schema is
    CrawlDatum-shaped (_layout_of); else None. A block the splitter leaves (None) is one to
    decode and encode. (A file in CRAWL_DATUM_SCHEMA itself is split by split_datums, its
    bytes taken as they are, whatever their form: they are the file's own.)"""
    layout = _layout_of(schema)
    if layout is None:
        return None
    if _c is not None:
        conv = _c_conv(layout)
        return lambda data, count: _c.split(data, count, conv)
    own = {name: i for i, name in enumerate(_STATUS_NAMES)}
    statuses = tuple((_STATUS_NAMES[own[s]], varint(own[s])) if s in own else None
                     for s in layout.statuses)
    same_order = all(own.get(s) == i for i, s in enumerate(layout.statuses))
    return lambda data, count: _convert_block(data, count, layout, statuses, same_order)


class HandDecoder:
    """Decides, block by block along one file, whether the hand decoder pays (decode_datums,
    or `decode` from datums_decoder): while a block's records bring fewer new long values than
    there are records, the next block is decoded by hand; after a block that brought more, the
    next `PROBE` - 1 blocks are left to fastavro (None), and the one after is tried again."""

    PROBE = 8

    def __init__(self, decode: Callable[[bytes, int], Optional[list]] = decode_datums):
        self.skip = 0
        self._decode = decode

    def decode(self, data: bytes, count: int) -> Optional[list]:
        if _c is not None:                  # in C, always cheaper than fastavro
            return self._decode(data, count)
        if self.skip:
            self.skip -= 1
            return None
        before = _LONG_OF.misses
        decoded = self._decode(data, count)
        if _LONG_OF.misses - before > count:
            self.skip = self.PROBE - 1
        return decoded


def decode_datum(raw: bytes) -> dict:
    """One encoded record (CRAWL_DATUM_SCHEMA) as fastavro's reader gives it: by hand, or by
    fastavro where decode_datums leaves it (which raises what fastavro raises)."""
    if _c is not None:
        record = _c.decode_own(raw)
        if record is not None:
            return record
    else:
        decoded = decode_datums(raw, 1)
        if decoded is not None:
            return decoded[0][0]
    return fastavro.schemaless_reader(io.BytesIO(raw), parsed_datum_schema())


def parsed_datum_schema(cache=[]) -> dict:  # pylint: disable=dangerous-default-value
    """CRAWL_DATUM_SCHEMA parsed by fastavro (as a file's header schema is), parsed once."""
    if not cache:
        cache.append(fastavro.parse_schema(CRAWL_DATUM_SCHEMA))
    return cache[0]
