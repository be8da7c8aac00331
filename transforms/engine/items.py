"""The items a stage's map side sends to its reduce side, per URL (engine/mapreduce.py).

An item is a plain tuple whose first element, a small int, says what it is:

  (OLD_RAW, bytes, status)      a database record that may be copied as it is: its encoding
  (OLD, record)                 a database record, decoded (its file has another schema, or
                                the map side changed it)
  (SEED, key, datum)            inject: a seed line's record; key = (file index, line number)
  (SEED_RAW, key, bytes, status)  inject: the same record, encoded in the map (the usual new
                                URL is then written as those bytes, never pickled as a dict)
  (FETCH | LINK | SIGNATURE, record)   updatedb: a crawl_fetch or crawl_parse record, a dict,
                                or its encoding in the crawldb's schema (decoded in the reduce,
                                where the merge needs it: transforms/updatedb.py)

RUNS: a mapper may yield (None, source) instead of a (url, item) pair: `source.partition(n)`
gives a block's records as n runs of bytes, already encoded as the output's and cut by URL
(storage/datumruns.py RunSource), which the engine spills as they are and the reducer sorts
and joins (engine/reducers.py JoinReducer); or None, and then `source.items()` gives its
(url, item) pairs.

Plain tuples, not NamedTuples or dataclasses: items are made, pickled into spill files and
unpickled once per record, and a NamedTuple costs about 3.5 µs more per item than a tuple for
that (measured on 1M items of this shape: 0.6 s against 4.1 s) — a third of updatedb's time on
1M records. invertlinks' items are told apart by their Python type instead
(transforms/invertlinks.py).
"""

from typing import Tuple

__all__ = ['OLD', 'OLD_RAW', 'SEED', 'FETCH', 'LINK', 'SIGNATURE', 'SEED_RAW', 'OldRaw', 'Old',
           'Seed', 'SeedRaw', 'Tagged']

OLD, OLD_RAW, SEED, FETCH, LINK, SIGNATURE, SEED_RAW = range(7)

OldRaw = Tuple[int, bytes, str]          # (OLD_RAW, encoded record, status)
Old = Tuple[int, dict]                   # (OLD, record)
Seed = Tuple[int, Tuple[int, int], dict]  # (SEED, (file index, line number), datum)
SeedRaw = Tuple[int, Tuple[int, int], bytes, str]  # (SEED_RAW, key, encoded datum, status)
Tagged = Tuple[int, dict]                # (FETCH | LINK | SIGNATURE, record)
