"""Partitioning: how many partitions, and when a database keeps its own."""

import os

import pytest

from beamcrawl.transforms.engine import partitions
from beamcrawl.transforms.storage.databases import DbLayout
from tests.workloads import datums, write_partitioned_db


@pytest.mark.parametrize('setting, records, workers, expected', [
    (3, 10 ** 9, 2, 3),          # set: as set
    (0, 0, 1, 1),
    (0, 100, 2, 2),              # at least one per worker
    (0, 1_000_000, 2, 4),        # 250k per partition
    (0, 1_100_000, 2, 6),        # ... rounded up to a multiple of the workers
    (0, 1_100_000, 1, 5),
])
def test_partitions_for(setting, records, workers, expected):
    assert partitions.partitions_for(setting, records, workers) == expected


def test_choose_partitions_keeps_a_database_in_its_partitioning(tmp_path):
    db = DbLayout(str(tmp_path / 'crawldb'), 'crawldb')
    write_partitioned_db(db.current, datums(10), 6)
    assert partitions.choose_partitions(0, 1_000_000, 2, db) == 6       # ideal 4: 6 is close enough
    assert partitions.choose_partitions(0, 5_000_000, 2, db) == 20      # ideal 20: re-partitioned
    assert partitions.choose_partitions(3, 1_000_000, 2, db) == 3       # set explicitly
    assert partitions.aligned_parts(db, 6) == {i: f'{db.current}/part-{i:05d}.avro'
                                                for i in range(6)}
    assert partitions.aligned_parts(db, 4) is None
    os.remove(f'{db.current}/part-00005.avro')
    assert partitions.aligned_parts(db, 6) is None                      # a part is missing
