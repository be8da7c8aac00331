"""Inlinks records (the linkdb's, records.INLINKS_SCHEMA) encoded by hand.

fastavro's `schemaless_writer` costs about 7 µs for an Inlinks record of one or two pairs, built
as dicts for it first; most of it is the call itself. The schema is two strings and an array
of records of two strings, so the bytes are simple to write: each string as its UTF-8 length
(a zigzag varint) and bytes, the array as one block (its count, its items, then 0) or, when
empty, the 0 alone, as fastavro writes them (docs/performance.md, "Inlinks records encoded by
hand"). Anything that is not plainly typed (a value that is not a str, a string that UTF-8
cannot encode) is left to fastavro: `encode_inlinks` returns None, and the caller's fastavro
write then raises what it always raised.
"""

from typing import Optional, Sequence, Tuple

from beamcrawl.transforms.storage.datumcodec import varint

__all__ = ['encode_inlinks']

# The encoded lengths 0..63: one byte each (zigzag doubles them).
_SHORT = tuple(bytes([n << 1]) for n in range(64))


def encode_inlinks(url: str, pairs: Sequence[Tuple[str, str]]) -> Optional[bytes]:
    """The bytes fastavro writes for records.inlinks(url, pairs) in INLINKS_SCHEMA, or None
    where the record is not plainly typed (a value other than a str, a lone surrogate, a pair
    that is not two values)."""
    short = _SHORT
    try:
        if type(url) is not str:          # pylint: disable=unidiomatic-typecheck
            return None
        data = url.encode('utf-8')
        n = len(data)
        out = [short[n] if n < 64 else varint(n), data]
        if pairs:
            n = len(pairs)
            out.append(short[n] if n < 64 else varint(n))
            for from_url, anchor in pairs:
                # pylint: disable-next=unidiomatic-typecheck
                if type(from_url) is not str or type(anchor) is not str:
                    return None
                data = from_url.encode('utf-8')
                n = len(data)
                out.append(short[n] if n < 64 else varint(n))
                out.append(data)
                data = anchor.encode('utf-8')
                n = len(data)
                out.append(short[n] if n < 64 else varint(n))
                out.append(data)
        out.append(b'\x00')
        return b''.join(out)
    except (UnicodeEncodeError, ValueError, TypeError):
        return None
