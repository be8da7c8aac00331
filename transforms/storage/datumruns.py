"""CrawlDatum records as runs of bytes, partitioned and sorted in C (storage/_datums.c).

The first update of a crawldb that is mapped whole (written elsewhere, or before the crawldb was
partitioned) carries every old record from the map to the reduce, most of them to be copied
unchanged. Handled one by one in Python that was most of the update's time; here a block's
records are split, made ours (another writer's, as datumcodec.datums_converter makes them) and
cut into the partitions by URL in C, and the reduce sorts a partition's records by URL in C
too, into a run that the merge join reads like a part with its keys file
(engine/joins.py `join_keyed`). Only the records that meet a new item become Python objects.
docs/performance.md, "Old records as runs of bytes".

A run is bytes: per record, its length (4 bytes, little-endian) and its encoding in
CRAWL_DATUM_SCHEMA. Pure, no Beam.
"""

import array
import sys
from typing import Callable, Iterable, List, NamedTuple, Optional, Tuple

from beamcrawl.transforms.storage import native
from beamcrawl.transforms.storage.datumcodec import _OWN_CONV, _c_conv, _layout_of
from beamcrawl.transforms.storage.keysfile import Keys
from beamcrawl.transforms.storage.records import STATUSES

__all__ = ['available', 'conversion', 'keep_mask', 'RunSource', 'SortedRun', 'sorted_run',
           'u32_array']


def available() -> bool:
    """Whether runs can be made here (the C loops are built: storage/native.py)."""
    return native.codec is not None


def conversion(schema) -> Optional[tuple]:
    """How a writer's records become ours in C, for a CrawlDatum-shaped writer schema
    (datumcodec._layout_of; our own is taken as its bytes); None for any other."""
    layout = _layout_of(schema)
    if layout is None:
        return None
    conv = _c_conv(layout)
    return _OWN_CONV if conv[1] else conv


def keep_mask(statuses: Iterable[str]) -> bytes:
    """The 64-byte mask of our status indexes whose records are kept (the others dropped)."""
    kept = set(statuses)
    return bytes(1 if i < len(STATUSES) and STATUSES[i] in kept else 0 for i in range(64))


class RunSource:
    """A block of CrawlDatum records that the map side hands to the engine as runs
    (engine/items.py): `partition(n)` gives its records as n runs by URL (crc32 mod n, as
    policy/partition.py), or None when the block is not clean in C (the records then come
    from `items()`, the mapper's own (url, item) pairs for them, as before)."""

    __slots__ = ('data', 'count', 'conv', 'keep', 'items')

    def __init__(self, data: bytes, count: int, conv: tuple, keep: bytes,
                 items: Callable[[], Iterable[Tuple[str, object]]]):
        self.data, self.count, self.conv, self.keep, self.items = data, count, conv, keep, items

    def partition(self, n: int) -> Optional[Tuple[List[bytes], List[int]]]:
        return native.codec.partition(self.data, self.count, self.conv, self.keep, n)


class SortedRun(NamedTuple):
    """A partition's runs in URL order: `keys` as a part's keys file gives them, the records'
    bytes in that order (`data`), and whether every URL is there once (`once`)."""
    keys: Keys
    data: bytes
    once: bool

    def statuses(self) -> List[str]:
        """The statuses its records have."""
        return [self.keys.statuses[i] for i in set(self.keys.status_index)]

    def blocks(self) -> Iterable[Tuple[int, int, bytes]]:
        """(first record, records, their bytes), as keysfile.keyed_blocks gives a part's."""
        return [(0, len(self.keys.urls), self.data)]

    def records(self) -> Iterable[Tuple[str, str, bytes]]:
        """(url, status, encoded record) in URL order."""
        urls, index, statuses, lengths = self.keys[:4]
        data, pos = self.data, 0
        for i, url in enumerate(urls):
            end = pos + lengths[i]
            yield url, statuses[index[i]], data[pos:end]
            pos = end


def sorted_run(runs: List[bytes]) -> SortedRun:
    """The records of `runs` (RunSource.partition's, of one partition) sorted by URL (by
    UTF-8 bytes: Python's order of the str), those of equal URLs in their runs' order."""
    urls, status_index, lengths, data, once = native.codec.sorted_run(runs)
    return SortedRun(Keys(urls, status_index, list(STATUSES), u32_array(lengths), [len(urls)]),
                     data, once)


def u32_array(data: bytes) -> array.array:
    """The array('I') (4-byte items, as keys files hold them) of little-endian u32 bytes."""
    sizes = array.array('I', data)
    if sys.byteorder != 'little':
        sizes.byteswap()
    return sizes
