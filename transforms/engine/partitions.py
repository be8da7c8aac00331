"""How many hash partitions a database has, and whether its parts can be merged as they are.

A database version written by the engine is partitioned: part i holds the URLs u with
crc32(u) mod N == i, sorted (policy/partition.py), and its `_partitions` note says N
(docs/crawl-dir.md). This module is the one owner of that choice: `plan()` picks N for a stage
and finds the old parts it can merge without mapping them again; MapReduce (engine/mapreduce.py)
records N in the version it writes.
"""

import math
from typing import Dict, NamedTuple, Optional

from beamcrawl.transforms.storage.databases import PARTITIONS_NOTE, DbLayout
from beamcrawl.transforms.storage.fs import part_file

__all__ = ['Partitioning', 'plan', 'partitions_for', 'choose_partitions', 'aligned_parts',
           'RECORDS_PER_PARTITION']

# crawldb.partitions = 0: one partition per this many records (the reduce of a partition holds
# all its records in memory: about 0.3 GB for 250k).
RECORDS_PER_PARTITION = 250_000


def partitions_for(setting: int, records: int, workers: int,
                   per_partition: int = RECORDS_PER_PARTITION) -> int:
    """The number of partitions: `setting` when > 0; else one per `per_partition` records,
    rounded up to a multiple of the number of workers (so that each does the same share)."""
    if setting > 0:
        return setting
    workers = max(workers, 1)
    return max(1, math.ceil(records / per_partition / workers)) * workers


def choose_partitions(setting: int, records: int, workers: int, db: DbLayout) -> int:
    """partitions_for, except that an automatic choice keeps the database's current number
    while it stays within a factor of 2 of the ideal one: then the old parts are merged as they
    are (`aligned_parts`) instead of being mapped again."""
    ideal = partitions_for(setting, records, workers)
    if setting > 0:
        return ideal
    note = db.read_note(PARTITIONS_NOTE)
    current = int(note) if note and note.isdigit() else 0
    return current if ideal / 2 <= current <= ideal * 2 else ideal


def aligned_parts(db: DbLayout, partitions: int) -> Optional[Dict[int, str]]:
    """{partition: part file} when the database's readable version is partitioned into exactly
    `partitions` parts by mapreduce.MapReduce (its PARTITIONS_NOTE says so), else None."""
    if db.read_note(PARTITIONS_NOTE) != str(partitions):
        return None
    directory = db.readable_dir()
    expected = [part_file(directory, i) for i in range(partitions)]
    return dict(enumerate(expected)) if db.part_files() == expected else None


class Partitioning(NamedTuple):
    """How a stage partitions the database version it writes."""
    count: int                              # N partitions, so N parts
    old_parts: Optional[Dict[int, str]]     # the old version's parts, when merged as they are


def plan(db: DbLayout, *, setting: int, records: int, workers: int,
         remap: bool = False) -> Partitioning:
    """The partitioning of a new version of `db` for a stage reading `records` records with
    `workers` processes (`setting`: the database's `*.partitions` key, 0 = automatic). The old
    parts are merged part by part when they are partitioned the same way, unless `remap` (URLs
    may change: every record goes through the map side again)."""
    count = choose_partitions(setting, records, workers, db)
    return Partitioning(count, None if remap else aligned_parts(db, count))
