"""Merge joins of a sorted old part with a partition's new items (pure: no Beam).

The reduce side of a stage merges each old part of a database, sorted by URL, with the groups
of new items of the same partition, in one pass (docs/performance.md).
"""

import bisect
import itertools
import operator
from typing import Dict, Iterable, Iterator, List, MutableSequence, Optional, Tuple

from beamcrawl.transforms.storage import keysfile, native, partwriter

__all__ = ['Entry', 'Joined', 'Unsorted', 'join_sorted', 'join_keyed', 'strictly_sorted']


class Unsorted(Exception):
    """An old part that is not sorted by key after all."""


# An old record: (url, status, its encoding or None, the decoded record or None).
Entry = Tuple[str, Optional[str], Optional[bytes], Optional[dict]]
# What the joins yield per URL: (url, the old record's status, its encoding, the decoded old
# record, the new items of its group). The old fields are None for a URL the old part lacks;
# the items are None for an old record no group names. Plain tuples, one per record: see
# engine/items.py for why not NamedTuples.
Joined = Tuple[str, Optional[str], Optional[bytes], Optional[dict], Optional[list]]


def join_sorted(old: Iterable[Entry], groups: Dict[str, list]) -> Iterator[Joined]:
    """Merge join of an old part sorted by URL — entries (url, status, encoded record or None,
    decoded record or None) — with a partition's groups: (url, status, raw, record, the
    group's items) in URL order; an old entry with no group has items None, a group with no
    old entry has url alone. Raises Unsorted when the old part is out of order."""
    keys = sorted(groups)
    n, i = len(keys), 0
    last = None
    for url, status, raw, record in old:
        if last is not None and url <= last:
            raise Unsorted(url)
        last = url
        while i < n and keys[i] < url:
            yield keys[i], None, None, None, groups[keys[i]]
            i += 1
        if i < n and keys[i] == url:
            yield url, status, raw, record, groups[url]
            i += 1
        else:
            yield url, status, raw, record, None
    while i < n:
        yield keys[i], None, None, None, groups[keys[i]]
        i += 1


def join_keyed(part: keysfile.KeyedPart, groups: Dict[str, list], out: partwriter.PartWriter,
               copied: MutableSequence[int], blocks: Optional[Iterable] = None
               ) -> Iterator[Joined]:
    """join_sorted for an old part with its keys file (sorted by URL: the caller checks),
    when every old record that no group names is copied unchanged: such records are not
    yielded but written to `out` here, a run at a time (PartWriter.write_run), as the join
    reaches them, so that the caller's writes of the yielded entries stay in URL order. Their
    status indexes (into part.keys.statuses) are appended to `copied`. Yields (url, status,
    raw, None, items) for an old record with a group, (url, None, None, None, items) for a
    group with no old record. `blocks`: the part's (first record, records, bytes), when they
    are not read from its file (a sorted run of the map's old records: storage/datumruns.py)."""
    keys = part.keys
    urls, index, statuses, lengths = keys.urls, keys.status_index, keys.statuses, keys.lengths
    new = sorted(groups)
    n, k = len(new), 0
    at = _positions(urls, new)                  # where each new URL goes among the old
    for first, count, data in (keysfile.keyed_blocks(part) if blocks is None else blocks):
        view = memoryview(data)
        j, pos, last = first, 0, first + count
        while j < last:
            t = min(max(at[k], j), last) if k < n else last     # bisect_left(urls, new[k], j, last)
            if t > j:                                   # a run that nothing changes
                size = sum(lengths[j:t])
                out.write_run(view[pos:pos + size], keys, j, t)
                copied += index[j:t]
                pos += size
                j = t
                if j == last:
                    break
            url = urls[j]                               # here new[k] <= url
            if new[k] < url:
                yield new[k], None, None, None, groups[new[k]]
            else:
                size = lengths[j]
                yield url, statuses[index[j]], data[pos:pos + size], None, groups[url]
                pos += size
                j += 1
            k += 1
    while k < n:
        yield new[k], None, None, None, groups[new[k]]
        k += 1


def _positions(urls: List[str], new: List[str]) -> List[int]:
    """bisect_left(urls, key) for each key of `new` (both sorted): in C, one merge pass."""
    if native.codec is not None:
        return native.codec.lookup(urls, new)[0]
    return [bisect.bisect_left(urls, key) for key in new]


def strictly_sorted(urls: List[str]) -> bool:
    return all(map(operator.lt, urls, itertools.islice(urls, 1, None)))
