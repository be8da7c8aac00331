"""MapReduce on real files: every record partitioned, and each part sorted."""

import os
import zlib

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.engine import mapreduce, reducers
from beamcrawl.transforms.engine.units import avro_units
from beamcrawl.transforms.storage import container, partwriter
from beamcrawl.transforms.storage.databases import DbUpdate
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA
from tests.workloads import datums


class _CopyMapper(reducers.Mapper):
    def map(self, unit, counts):
        for record, raw in container.read_records(unit.path, unit.blocks):
            counts.inc(metrics.CRAWLDB_RECORDS)
            yield record['url'], raw


class _CopyReducer(reducers.Reducer):
    def reduce(self, index, groups, path, counts):
        with partwriter.PartWriter(path, CRAWL_DATUM_SCHEMA) as out:
            for url in sorted(groups):
                for raw in groups[url]:
                    out.write_raw(raw)


def test_map_reduce_partitions_and_sorts_every_record(tmp_path, runner):
    records = datums(700)
    for i in range(3):
        write_avro_file(str(tmp_path / f'in-{i}.avro'), CRAWL_DATUM_SCHEMA, records[i::3])
    units = avro_units([('x', str(tmp_path / f'in-{i}.avro')) for i in range(3)],
                       schema=CRAWL_DATUM_SCHEMA, per_unit=50)
    out = tmp_path / 'out'
    out.mkdir()
    with TestPipeline(runner=runner) as p:
        paths = p | mapreduce.MapReduce(units=units, mapper=_CopyMapper(), reducer=_CopyReducer(),
                                        partitions=5, out=DbUpdate(str(out)))
        assert_that(paths | beam.Map(os.path.basename),
                    equal_to([f'part-{i:05d}.avro' for i in range(5)]))
    assert (out / '_partitions').read_text() == '5'      # the version records its partitioning
    for i in range(5):
        part = list(iter_records([str(out / f'part-{i:05d}.avro')]))
        assert [r['url'] for r in part] == sorted(r['url'] for r in part)
        assert all(zlib.crc32(r['url'].encode()) % 5 == i for r in part)
    assert sorted((r for i in range(5) for r in iter_records([str(out / f'part-{i:05d}.avro')])),
                  key=lambda r: r['url']) == sorted(records, key=lambda r: r['url'])
