"""A small writer of Hadoop SequenceFiles and Nutch Writables for tests (an oracle written from
the formats' descriptions in transforms/storage/hadoopseq.py and nutchwritables.py): files in
every compression the reader must take, and hostile variants of them."""

import gzip
import struct
import zlib
from typing import Iterable, List, Optional, Tuple

IO = 'org.apache.hadoop.io.'
TEXT = IO + 'Text'
DATUM = 'org.apache.nutch.crawl.CrawlDatum'
DEFAULT_CODEC = 'org.apache.hadoop.io.compress.DefaultCodec'
GZIP_CODEC = 'org.apache.hadoop.io.compress.GzipCodec'
SYNC = bytes(range(16))


def vint(value: int) -> bytes:
    """Hadoop's WritableUtils.writeVLong."""
    if -112 <= value <= 127:
        return struct.pack('>b', value)
    size, prefix = 0, -112
    if value < 0:
        value, prefix = ~value, -120
    tmp = value
    while tmp:
        tmp >>= 8
        size += 1
    return struct.pack('>b', prefix - size) + value.to_bytes(size, 'big')


def text(s: str) -> bytes:
    data = s.encode('utf-8')
    return vint(len(data)) + data


def utf(s: str) -> bytes:
    data = s.encode('utf-8')
    return struct.pack('>H', len(data)) + data


# MapWritable values: (class name, encoded bytes).
def t(s: str):
    return TEXT, text(s)


def protocol_status(code: int, last_modified: int = 0, args: Iterable[str] = ()) -> tuple:
    args = list(args)
    body = struct.pack('>bbq', 2, code, last_modified) + struct.pack('>i', len(args))
    for a in args:
        data = a.encode('utf-8')
        body += struct.pack('>i', len(data)) + data
    return 'org.apache.nutch.protocol.ProtocolStatus', body


_PREDEFINED = {
    'ArrayWritable': -127, 'BooleanWritable': -126, 'BytesWritable': -125, 'FloatWritable': -124,
    'IntWritable': -123, 'LongWritable': -122, 'MapWritable': -121, 'MD5Hash': -120,
    'NullWritable': -119, 'ObjectWritable': -118, 'SortedMapWritable': -117, 'Text': -116,
    'TwoDArrayWritable': -115, 'VIntWritable': -114, 'VLongWritable': -113,
}


def map_writable(entries: List[Tuple[tuple, tuple]]) -> bytes:
    """Hadoop's MapWritable of ((key class, key bytes), (value class, value bytes)) pairs."""
    ids, declared = {}, []
    for name, _ in (e for pair in entries for e in pair):
        short = name[len(IO):] if name.startswith(IO) else None
        if short in _PREDEFINED:
            ids[name] = _PREDEFINED[short]
        elif name not in ids:
            ids[name] = len(declared) + 1
            declared.append(name)
    out = struct.pack('>b', len(declared))
    for i, name in enumerate(declared, 1):
        out += struct.pack('>b', i) + utf(name)
    out += struct.pack('>i', len(entries))
    for (kc, kb), (vc, vb) in entries:
        out += struct.pack('>b', ids[kc]) + kb + struct.pack('>b', ids[vc]) + vb
    return out


def crawl_datum(status: int, *, fetch_time: int = 0, retries: int = 0, interval: int = 2592000,
                score: float = 1.0, modified: int = 0, signature: Optional[bytes] = None,
                metadata: Optional[List[Tuple[tuple, tuple]]] = None, version: int = 7) -> bytes:
    layout = '>bbqbifq' if version > 5 else '>bbqbffq'   # version 5: a float interval
    out = struct.pack(layout, version, status, fetch_time, retries, interval, score, modified)
    out += struct.pack('>B', len(signature)) + signature if signature else b'\0'
    if metadata:
        return out + b'\1' + map_writable(metadata)
    return out + b'\0'


def _link(url: str, anchor: str) -> bytes:
    return text(url) + text(anchor) + b'\0'


def inlinks(links: List[Tuple[str, str]]) -> bytes:
    return struct.pack('>i', len(links)) + b''.join(_link(u, a) for u, a in links)


def nutch_metadata(meta: List[Tuple[str, List[str]]]) -> bytes:
    out = struct.pack('>i', len(meta))
    for name, values in meta:
        out += text(name) + struct.pack('>i', len(values)) + b''.join(text(v) for v in values)
    return out


def content(url: str, data: bytes, content_type: str, meta=()) -> bytes:
    return (struct.pack('>i', -1) + text(url) + text(url) + struct.pack('>i', len(data)) + data
            + text(content_type) + nutch_metadata(list(meta)))


def parse_text(s: str) -> bytes:
    return b'\2' + text(s)


def parse_data(title: str, outlinks: List[Tuple[str, str]], *, major: int = 1, minor: int = 0,
               content_meta=(), parse_meta=()) -> bytes:
    return (b'\5' + struct.pack('>bbhi', 2, major, minor, -1) + text(title)
            + struct.pack('>i', len(outlinks)) + b''.join(_link(u, a) for u, a in outlinks)
            + nutch_metadata(list(content_meta)) + nutch_metadata(list(parse_meta)))


def _compress(data: bytes, codec: str) -> bytes:
    return gzip.compress(data) if codec == GZIP_CODEC else zlib.compress(data)


def sequence_file(records: List[Tuple[bytes, bytes]], *, value_class: str = DATUM,
                  compression: str = 'none', codec: str = DEFAULT_CODEC, sync_every: int = 2,
                  metadata=(), key_class: str = TEXT) -> bytes:
    """A SequenceFile of (key bytes, value bytes) records; compression: none, record, block
    (blocks of `sync_every` records; record files get a sync escape every `sync_every`)."""
    compressed = compression != 'none'
    out = bytearray(b'SEQ\x06' + text(key_class) + text(value_class)
           + bytes([compressed, compression == 'block'])
           + (text(codec) if compressed else b'')
           + struct.pack('>i', len(metadata)) + b''.join(text(k) + text(v) for k, v in metadata)
           + SYNC)
    if compression == 'block':
        for start in range(0, len(records), sync_every):
            chunk = records[start:start + sync_every]
            buffers = [b''.join(vint(len(k)) for k, _ in chunk), b''.join(k for k, _ in chunk),
                       b''.join(vint(len(v)) for _, v in chunk), b''.join(v for _, v in chunk)]
            out += struct.pack('>i', -1) + SYNC + vint(len(chunk))
            for buf in buffers:
                packed = _compress(buf, codec)
                out += vint(len(packed)) + packed
        return bytes(out)
    for i, (key, value) in enumerate(records):
        if i and i % sync_every == 0:
            out += struct.pack('>i', -1) + SYNC
        if compression == 'record':
            value = _compress(value, codec)
        out += struct.pack('>ii', len(key) + len(value), len(key)) + key + value
    return bytes(out)
