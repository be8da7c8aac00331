"""The URLs and outlinks of parse_data parts, read by hand (invertlinks' map reads nothing else).

fastavro's reader builds a dict per record and one per outlink: about 10 µs for a page of five
outlinks, the tuples invertlinks wants included. A ParseData record is five fields in a fixed
order (records.PARSE_DATA_SCHEMA: url, title, parse_status, the outlinks, metadata), all
strings, an array of records of two strings and a map of strings, so a block's records can be
walked in Python, taking the URL and the (to_url, anchor) pairs and checking the rest (every
string is UTF-8, as fastavro's decoding requires): about 5 µs (docs/performance.md, "Outlinks
read by hand"). container.read_outlinks reads a file so: a writer's schema of another shape,
or another codec, is read by fastavro, and so is a block that does not walk cleanly (cut,
garbled, a string that is not UTF-8, records left over or missing), which then raises what
fastavro raises.
"""

from typing import List, Optional, Tuple

__all__ = ['plain_layout', 'walk_block']

Link = Tuple[str, str]


def _plain(avro_type, kind: str) -> bool:
    return avro_type == kind           # a logical type or a union is a dict or a list: not plain


def plain_layout(schema) -> bool:
    """Whether a writer's schema (parsed by fastavro) is ParseData's layout: url, title and
    parse_status strings, outlinks an array of records (to_url, anchor) of strings, metadata a
    map of strings, in that order and nothing else."""
    if not isinstance(schema, dict) or schema.get('type') != 'record':
        return False
    fields = schema.get('fields') or []
    if [f.get('name') for f in fields] != ['url', 'title', 'parse_status', 'outlinks',
                                           'metadata']:
        return False
    types = [f.get('type') for f in fields]
    if not all(_plain(t, 'string') for t in types[:3]):
        return False
    outlinks, metadata = types[3], types[4]
    if not isinstance(outlinks, dict) or outlinks.get('type') != 'array':
        return False
    item = outlinks.get('items')
    if not isinstance(item, dict) or item.get('type') != 'record' or \
            [f.get('name') for f in item.get('fields') or []] != ['to_url', 'anchor'] or \
            not all(_plain(f.get('type'), 'string') for f in item['fields']):
        return False
    return isinstance(metadata, dict) and metadata.get('type') == 'map' and \
        _plain(metadata.get('values'), 'string')


def _long(data: bytes, pos: int) -> Tuple[int, int]:
    """(value, end) of the zigzag varint at `pos` (IndexError past the data's end)."""
    b = data[pos]
    pos += 1
    n = b & 0x7F
    shift = 7
    while b >= 0x80:
        if shift > 63:
            raise ValueError('varint too long')
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


def walk_block(data: bytes, count: int) -> Optional[List[Tuple[str, List[Link]]]]:
    """[(url, [(to_url, anchor)])] of a block's `count` records, or None where the block does
    not walk cleanly (fastavro then reads it)."""
    out = []
    append = out.append
    size = len(data)
    pos = 0
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:                    # a string shorter than 64 bytes: one length byte
                end = pos + 1 + (b >> 1)
                if b & 1 or end > size:
                    return None
                url = data[pos + 1:end].decode('utf-8')
            else:
                n, pos = _long(data, pos)
                end = pos + n
                if n < 0 or end > size:
                    return None
                url = data[pos:end].decode('utf-8')
            pos = end
            for _ in range(2):              # title, parse_status: checked, not kept
                n, pos = _long(data, pos)
                end = pos + n
                if n < 0 or end > size:
                    return None
                data[pos:end].decode('utf-8')
                pos = end
            links = []
            while True:                     # the outlinks: blocks of items, then 0
                n, pos = _long(data, pos)
                if n == 0:
                    break
                if n < 0:                   # a block with its byte size
                    n = -n
                    _, pos = _long(data, pos)
                for _ in range(n):
                    b = data[pos]
                    if b < 0x80:
                        end = pos + 1 + (b >> 1)
                        if b & 1 or end > size:
                            return None
                        to_url = data[pos + 1:end].decode('utf-8')
                    else:
                        m, pos = _long(data, pos)
                        end = pos + m
                        if m < 0 or end > size:
                            return None
                        to_url = data[pos:end].decode('utf-8')
                    pos = end
                    b = data[pos]
                    if b < 0x80:
                        end = pos + 1 + (b >> 1)
                        if b & 1 or end > size:
                            return None
                        anchor = data[pos + 1:end].decode('utf-8')
                    else:
                        m, pos = _long(data, pos)
                        end = pos + m
                        if m < 0 or end > size:
                            return None
                        anchor = data[pos:end].decode('utf-8')
                    pos = end
                    links.append((to_url, anchor))
            while True:                     # metadata: checked, not kept
                n, pos = _long(data, pos)
                if n == 0:
                    break
                if n < 0:
                    n = -n
                    _, pos = _long(data, pos)
                for _ in range(2 * n):
                    m, pos = _long(data, pos)
                    end = pos + m
                    if m < 0 or end > size:
                        return None
                    data[pos:end].decode('utf-8')
                    pos = end
            if pos > size:
                return None
            append((url, links))
    except (IndexError, ValueError):        # cut, a bad varint, not UTF-8 (UnicodeDecodeError)
        return None
    return out if pos == size else None
