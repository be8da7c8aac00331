"""Nutch's Writables, read in Python: the values of a Nutch 1.x crawl's SequenceFiles.

Each decoder reads one value, as Nutch's `readFields` does, from a hadoopseq.Cursor, and returns
plain Python values (policy/nutchrecords.py turns them into beamcrawl's records):

  Text          vint length, UTF-8                                     -> str
  CrawlDatum    version (7 and 6; 5 with a float interval), status, fetch time, retries,
                interval (s), score, modified time, signature, MapWritable metadata -> dict
  MapWritable   classes it adds (id, Java UTF name), an int count, then (class id, key,
                class id, value) pairs; values: Text, Int/Long/Float/Double/Byte/Boolean/
                Bytes/Null/VInt/VLong Writables, MD5Hash, nested MapWritable, ProtocolStatus
                -> dict (ProtocolStatus -> ProtocolStatus, BytesWritable/MD5Hash -> bytes)
  ProtocolStatus  version (1, 2), code, last modified, arguments
  Inlinks       an int count of Inlink (from URL, anchor, optional MapWritable)
  ParseData     version 5, ParseStatus (version 1 or 2: major, minor, arguments), title,
                outlinks (to URL, anchor, optional MapWritable), content and parse Metadata
  ParseText     version 1 (gzip-compressed string) or 2 (Text)
  Content       version -1: URL, base URL, content bytes, content type, Metadata
  Metadata      an int count of names, each with an int count of Text values -> {name: [values]}

Every length is checked against the bytes left (hadoopseq.Cursor): a hostile value raises
FormatError, which the reader reports as an InputError naming the file and record.
"""

import struct
from typing import Callable, Dict, List, NamedTuple, Tuple

from beamcrawl.transforms.storage.hadoopseq import Cursor, FormatError, inflate

__all__ = ['ProtocolStatus', 'ParseStatus', 'VALUE_DECODERS', 'decode',
           'crawl_datum', 'map_writable', 'inlinks', 'parse_data', 'parse_text', 'content',
           'metadata', 'protocol_status']

_IO = 'org.apache.hadoop.io.'


class ProtocolStatus(NamedTuple):
    code: int
    last_modified: int
    args: Tuple[str, ...]


class ParseStatus(NamedTuple):
    major: int
    minor: int
    args: Tuple[str, ...]


def _string_array(c: Cursor, compressed: bool) -> Tuple[str, ...]:
    """WritableUtils.(write|writeCompressed)StringArray: an int count (-1: null), strings."""
    n = c.int()
    if n == -1:
        return ()
    if n < 0 or n > c.remaining() // 4:
        raise FormatError(f'string array of {n}', c.pos - 4)
    out = []
    for _ in range(n):
        if compressed:
            size = c.int()
            value = None if size == -1 else inflate(c.take(size)).decode('utf-8', 'replace')
        else:
            value = c.string()
        out.append(value or '')
    return tuple(out)


def protocol_status(c: Cursor) -> ProtocolStatus:
    version = c.byte()
    if version not in (1, 2):
        raise FormatError(f'ProtocolStatus version {version}', c.pos - 1)
    code, last_modified = c.byte(), c.long()
    return ProtocolStatus(code, last_modified, _string_array(c, compressed=version == 1))


def _parse_status(c: Cursor) -> ParseStatus:
    version = c.byte()
    if version not in (1, 2):
        raise FormatError(f'ParseStatus version {version}', c.pos - 1)
    major, minor = c.byte(), c.short()
    return ParseStatus(major, minor, _string_array(c, compressed=version == 1))


def _bytes_writable(c: Cursor) -> bytes:
    return c.take(c.int())


# The classes a MapWritable knows without naming them (Hadoop's AbstractMapWritable ids).
_PREDEFINED = {
    -127: _IO + 'ArrayWritable', -126: _IO + 'BooleanWritable', -125: _IO + 'BytesWritable',
    -124: _IO + 'FloatWritable', -123: _IO + 'IntWritable', -122: _IO + 'LongWritable',
    -121: _IO + 'MapWritable', -120: _IO + 'MD5Hash', -119: _IO + 'NullWritable',
    -118: _IO + 'ObjectWritable', -117: _IO + 'SortedMapWritable', -116: _IO + 'Text',
    -115: _IO + 'TwoDArrayWritable', -114: _IO + 'VIntWritable', -113: _IO + 'VLongWritable',
}


def map_writable(c: Cursor) -> Dict[object, object]:
    """Hadoop's MapWritable; keys and values decoded by their class (_WRITABLES)."""
    classes = dict(_PREDEFINED)
    for _ in range(c.byte()):
        ident = c.byte()
        classes[ident] = c.utf()
    count = c.int()
    if count < 0 or count > c.remaining() // 2:
        raise FormatError(f'MapWritable of {count} entries', c.pos - 4)
    out = {}
    for _ in range(count):
        key = _writable(c, classes)
        if isinstance(key, (dict, bytearray, list)):
            key = repr(key)
        out[key] = _writable(c, classes)
    return out


def _writable(c: Cursor, classes: Dict[int, str]):
    at = c.pos
    ident = c.byte()
    name = classes.get(ident)
    if name is None:
        raise FormatError(f'MapWritable class id {ident} not declared', at)
    decoder = _WRITABLES.get(name)
    if decoder is None:
        raise FormatError(f'a MapWritable value of class {name}, which beamcrawl does not '
                          f'read', at)
    return decoder(c)


_WRITABLES: Dict[str, Callable[[Cursor], object]] = {
    _IO + 'Text': Cursor.text,
    _IO + 'IntWritable': Cursor.int,
    _IO + 'LongWritable': Cursor.long,
    _IO + 'FloatWritable': Cursor.float,
    _IO + 'DoubleWritable': Cursor.double,
    _IO + 'ByteWritable': Cursor.byte,
    _IO + 'BooleanWritable': Cursor.boolean,
    _IO + 'VIntWritable': Cursor.vlong,
    _IO + 'VLongWritable': Cursor.vlong,
    _IO + 'BytesWritable': _bytes_writable,
    _IO + 'MD5Hash': lambda c: c.take(16),
    _IO + 'NullWritable': lambda c: None,
    _IO + 'MapWritable': map_writable,
    'org.apache.nutch.protocol.ProtocolStatus': protocol_status,
}


# status, fetch time, retries, interval (s), score, modified time: versions 6 and 7; version 5
# kept the interval as a float
_DATUM_FIELDS = struct.Struct('>bqbifq')
_DATUM_FIELDS_5 = struct.Struct('>bqbffq')


def crawl_datum(c: Cursor) -> dict:
    """Nutch's CrawlDatum (versions 5 to 7; older ones, from before Nutch 1.0, are refused)."""
    version = c.byte()
    if not 5 <= version <= 7:
        raise FormatError(f'CrawlDatum version {version} (5 to 7 are read)', c.pos - 1)
    status, fetch_time, retries, interval, score, modified = c.fields(
        _DATUM_FIELDS if version > 5 else _DATUM_FIELDS_5)
    interval = round(interval)
    out = {'version': version, 'status': status, 'fetch_time': fetch_time, 'retries': retries,
           'fetch_interval': interval, 'score': score, 'modified_time': modified}
    size = c.byte() & 0xff          # Nutch writes the signature's length as a byte
    out['signature'] = c.take(size) if size else None
    out['metadata'] = map_writable(c) if c.boolean() else {}
    return out


def _link(c: Cursor) -> Tuple[str, str, Dict]:
    url, anchor = c.text(), c.text()
    return url, anchor, (map_writable(c) if c.boolean() else {})


def inlinks(c: Cursor) -> List[Tuple[str, str, Dict]]:
    """Nutch's Inlinks: (from URL, anchor, metadata) of each Inlink."""
    n = c.int()
    if n < 0 or n > c.remaining() // 3:
        raise FormatError(f'{n} inlinks', c.pos - 4)
    return [_link(c) for _ in range(n)]


def metadata(c: Cursor) -> Dict[str, List[str]]:
    """Nutch's Metadata: {name: [values]}."""
    n = c.int()
    if n < 0 or n > c.remaining() // 2:
        raise FormatError(f'Metadata of {n} names', c.pos - 4)
    out: Dict[str, List[str]] = {}
    for _ in range(n):
        name = c.text()
        count = c.int()
        if count < 0 or count > c.remaining():
            raise FormatError(f'{count} values of {name!r}', c.pos - 4)
        out.setdefault(name, []).extend(c.text() for _ in range(count))
    return out


def parse_data(c: Cursor) -> dict:
    version = c.byte()
    if version != 5:
        raise FormatError(f'ParseData version {version} (5 is read)', c.pos - 1)
    status = _parse_status(c)
    title = c.text()
    n = c.int()
    if n < 0 or n > c.remaining() // 3:
        raise FormatError(f'{n} outlinks', c.pos - 4)
    outlinks = [_link(c) for _ in range(n)]
    return {'status': status, 'title': title, 'outlinks': outlinks,
            'content_meta': metadata(c), 'parse_meta': metadata(c)}


def parse_text(c: Cursor) -> str:
    version = c.byte()
    if version == 1:
        size = c.int()
        return '' if size == -1 else inflate(c.take(size)).decode('utf-8', 'replace')
    if version == 2:
        return c.text()
    raise FormatError(f'ParseText version {version} (1 and 2 are read)', c.pos - 1)


def content(c: Cursor) -> dict:
    version = c.int()
    if version != -1:
        raise FormatError(f'Content version {version} (-1, the one of Nutch 1.x, is read)',
                          c.pos - 4)
    url, base = c.text(), c.text()
    data = c.take(c.int())
    return {'url': url, 'base_url': base, 'content': data, 'content_type': c.text(),
            'metadata': metadata(c)}


_NUTCH = 'org.apache.nutch.'
VALUE_DECODERS: Dict[str, Callable[[Cursor], object]] = {
    _NUTCH + 'crawl.CrawlDatum': crawl_datum,
    _NUTCH + 'crawl.Inlinks': inlinks,
    _NUTCH + 'parse.ParseData': parse_data,
    _NUTCH + 'parse.ParseText': parse_text,
    _NUTCH + 'protocol.Content': content,
    _IO + 'Text': Cursor.text,
}


def decode(decoder: Callable[[Cursor], object], data: bytes):
    """One value from its bytes (FormatError when they are malformed)."""
    return decoder(Cursor(data))
