"""Keys files: `part-NNNNN.keys` beside `part-NNNNN.avro`, written by PartWriter with keys=True.

A keys file holds the URL, status and encoded length of every record of its part, in order. It
only saves decoding: a keys file whose part was rewritten by something else (another size or
sync marker) or that cannot be read is ignored, and a part without one is decoded.

  b'BCKEYS1\n', one JSON line {part_size, sync, records, blocks, statuses, url_bytes}, then
  in zlib's format (storage/deflate.py): url lengths in characters (uint32 each), record lengths
  (uint32), status indexes (one byte each), the URLs in UTF-8
"""

import array
import io
import json
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from beamcrawl.transforms.storage import deflate, fs, native
from beamcrawl.transforms.storage.container import (NATIVE_CODECS, Header, check_regular, header_of,
                                                    open_part, read_long, unreadable)

__all__ = ['keys_path', 'Keys', 'KeysBuilder', 'KeyedPart', 'open_keyed', 'keyed_blocks',
           'read_keyed']

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


class KeysBuilder:
    """A keys file being built, record by record, as its part is written."""

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
        body = deflate.compress(url_lengths.tobytes() + self.lengths.tobytes()
                             + bytes(self.statuses) + blob, 1)
        try:
            fs.write_file(path, _KEYS_MAGIC + json.dumps(head).encode('utf-8') + b'\n' + body,
                          replace=True)
        except OSError:               # the part is complete without it
            pass


def _load_keys(part: str, size: int, sync: bytes) -> Optional[Keys]:
    path = keys_path(part)
    try:
        data = fs.read_file(path)
        if data is None or not data.startswith(_KEYS_MAGIC):
            return None
        line_end = data.index(b'\n', len(_KEYS_MAGIC))
        head = json.loads(data[len(_KEYS_MAGIC):line_end])
        if head['part_size'] != size or head['sync'] != sync.hex():
            return None
        n = head['records']
        body = deflate.decompress(data[line_end + 1:])
        url_lengths = array.array('I', body[:4 * n])
        lengths = array.array('I', body[4 * n:8 * n])
        status_idx = body[8 * n:9 * n]
        text = body[9 * n:].decode('utf-8')
        statuses = [str(s) for s in head['statuses']]
        if len(url_lengths) != n or len(lengths) != n or len(status_idx) != n or \
                len(body) - 9 * n != head['url_bytes'] or sum(head['blocks']) != n or \
                (n and max(status_idx) >= len(statuses)):
            return None
        if native.codec is not None:
            urls = native.codec.slices(text, url_lengths)
        else:
            urls, pos = [], 0
            for length in url_lengths:
                urls.append(text[pos:pos + length])
                pos += length
        return Keys(urls, status_idx, statuses, lengths, [int(b) for b in head['blocks']])
    except (OSError, ValueError, KeyError, TypeError, IndexError, deflate.Error):
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
        with open_part(path) as f:
            header = header_of(f)
            f.seek(0, io.SEEK_END)
            size = f.tell()
    except (OSError, ValueError, EOFError, KeyError, TypeError) as e:
        raise unreadable(path, e) from None
    if header.codec not in NATIVE_CODECS:
        return None
    keys = _load_keys(path, size, header.sync)
    return None if keys is None else KeyedPart(path, header, keys)


def keyed_blocks(part: KeyedPart) -> Iterator[Tuple[int, int, bytes]]:
    """(index of its first record, its number of records, its records' bytes) of every block
    of a keyed part, each checked against the keys file (InputError naming the part when
    they differ)."""
    header, keys = part.header, part.keys
    try:
        with open_part(part.path) as f:
            f.seek(header.data_start)
            first = 0
            for expected in keys.blocks:
                count = read_long(f)
                length = read_long(f)
                data = f.read(length)
                if count != expected or len(data) != length or f.read(16) != header.sync:
                    raise ValueError('the part does not match its keys file')
                if header.codec == 'deflate':
                    data = deflate.inflate_raw(data)
                if sum(keys.lengths[first:first + count]) != len(data):
                    raise ValueError('the part does not match its keys file')
                yield first, count, data
                first += count
    except (OSError, ValueError, EOFError, deflate.Error) as e:
        raise unreadable(part.path, e) from None


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
