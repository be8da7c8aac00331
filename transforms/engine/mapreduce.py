"""MapReduce: the Beam wiring of the batch stages (inject, updatedb, invertlinks).

    work units ──Map──▶ per-partition spill files ──GroupByKey(partition)──▶ Reduce ──▶ part-P

* A work unit (engine/units.py) is a run of Avro blocks of one input file, or a byte range of a
  text file.
* The map side (a `Mapper`) turns each record into (url, item) pairs; items are collected per
  partition (crc32(url) mod N, policy/partition.py) and written as one spill file per unit into
  a scratch directory beside the version being written (on the crawl directory's filesystem:
  every worker of a cluster reads it), one pickle per partition. A mapper may also hand over
  records already encoded as the output's, which are cut into the partitions in C as runs of
  bytes (engine/items.py RUNS: a crawldb mapped whole), a span of their own beside the pickle.
  Only (partition, file, byte range, kind) tuples cross Beam's shuffle: moving the records
  themselves through the local runner's shuffle costs more than all the rest
  (docs/performance.md); one file per unit, not per unit and partition, keeps an object
  store's object count in check (docs/scaling.md).
* The reduce side (a `Reducer`) gets, for one partition, every item of every URL (a dict
  url → [items]), and the partition's runs when there are any (`runs=`), and writes that
  partition's part file itself; every partition is reduced, also one that received nothing,
  so a database always has parts 0..N-1.

File names are deterministic (one per unit), so a retried bundle rewrites the same files.
Mappers and reducers are plain objects (pickled to the workers), written per stage
(transforms/updatedb.py, transforms/inject.py).
"""

import gc
import io
import logging
import pickle
import typing
import zlib
from typing import Dict, List

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.base import metrics, progress
from beamcrawl.transforms.engine.reducers import Mapper, Reducer
from beamcrawl.transforms.engine.units import Unit, spread
from beamcrawl.transforms.runners.runtime import workers_of
from beamcrawl.transforms.storage import fs, native
from beamcrawl.transforms.storage.databases import PARTITIONS_NOTE, DbUpdate
from beamcrawl.transforms.storage.fs import part_file
from beamcrawl.transforms.storage.partwriter import named

__all__ = ['MapReduce']

log = logging.getLogger('beamcrawl')


# What a spill file's span holds: a pickled list of (url, item), or records as runs of bytes
# (engine/items.py RUNS), which only a reducer that takes them (JoinReducer) is given.
_PICKLED, _RUN = 0, 1


def _pickled(items: list) -> bytes:
    """A spill's items pickled without the pickler's memo: the memo (an entry per object, to
    pickle a shared object once) cost 1.9 µs an item of updatedb's segment records, against
    0.24 µs without it (items hold no cycles, and few objects twice)."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        pickler.fast = True             # documented as deprecated, kept in 3.11-3.13
    except AttributeError:              # a Python without it: the memo's way
        pass
    pickler.dump(items)
    return buf.getvalue()


class _NoGC:
    """Millions of small containers are made here and none is cyclic garbage; Python's cyclic
    GC would rescan them again and again (measured: up to a third of the time). On the way out
    the objects made meanwhile are moved out of the GC's sight (gc.freeze) before it is enabled
    again: else its next collection would scan all of them once more, and promote them to be
    scanned again later (measured: a tenth of updatedb's worker time). Reference counting
    still frees them."""

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was_enabled:
            gc.freeze()
            gc.enable()
        return False


class _MapUnitFn(beam.DoFn):
    def __init__(self, mapper: Mapper, partitions: int, scratch: str,
                 done: progress.Reporter):
        self.mapper, self.partitions, self.scratch = mapper, partitions, scratch
        self.done = done

    def process(self, unit: Unit, *after):   # after: a side input that only orders the stages
        counts = metrics.BundleCounts()
        n = self.partitions
        buckets: List[list] = [[] for _ in range(n)]
        runs: List[list] = [[] for _ in range(n)]
        crc32 = zlib.crc32
        with _NoGC():
            for pair in self.mapper.map(unit, counts):         # (url, item)
                if pair[0] is not None:
                    # partition(url, n) of policy/partition.py, inlined: this runs per record
                    buckets[crc32(pair[0].encode('utf-8')) % n].append(pair)
                    continue
                source = pair[1]                    # records as runs of bytes (items.py)
                parted = source.partition(n)
                if parted is None:
                    for pair in source.items():
                        buckets[crc32(pair[0].encode('utf-8')) % n].append(pair)
                    continue
                for index, run in enumerate(parted[0]):
                    if run:
                        runs[index].append(run)
        counts.flush()
        # One spill file per unit, the partitions one after the other: on an object store a
        # file per unit and partition would be units × partitions objects (docs/scaling.md).
        path = FileSystems.join(self.scratch, f'u{unit.index:06d}.spill')
        spans = []
        try:
            with fs.create(path) as f:
                offset = 0
                for index, items in enumerate(buckets):
                    parts = [(_RUN, b''.join(runs[index]))]
                    if items:
                        parts.append((_PICKLED, _pickled(items)))
                    for kind, data in parts:
                        if data:
                            f.write(data)
                            spans.append((index, offset, len(data), kind))
                            offset += len(data)
                    buckets[index] = runs[index] = None
        except OSError as e:
            raise named(e, path) from e
        metrics.counter(metrics.STORE_SPILLS).inc()
        metrics.counter(metrics.STORE_SPILL_BYTES).inc(offset)
        self.done.add(unit.records or 1)
        for index, offset, length, kind in spans:
            yield index, (unit.index, path, offset, length, kind)


class _ReducePartitionFn(beam.DoFn):
    def __init__(self, reducer: Reducer, out_dir: str, done: progress.Reporter):
        self.reducer, self.out_dir, self.done = reducer, out_dir, done

    def process(self, item):
        index, spills = item
        counts = metrics.BundleCounts()
        with _NoGC():
            groups: Dict[str, list] = {}
            runs = []
            for _, path, offset, length, kind in sorted(s for s in spills if s is not None):
                data = fs.store(path).read_range(path, offset, length)
                if len(data) != length:
                    raise OSError(f'{path}: cut short (read {len(data)} of {length} bytes at '
                                  f'{offset})')
                if kind == _RUN:
                    runs.append(data)
                    continue
                items = pickle.loads(data)
                del data
                for url, value in items:
                    values = groups.get(url)
                    if values is None:
                        groups[url] = [value]
                    else:
                        values.append(value)
                del items
            path = part_file(self.out_dir, index)
            if runs:
                self.reducer.reduce(index, groups, path, counts, runs=runs)
            else:
                self.reducer.reduce(index, groups, path, counts)
        counts.flush()
        self.done.add(1)
        yield path


def _say_if_python(said=[]) -> None:  # pylint: disable=dangerous-default-value
    """Logs once when the codec's C loops are not there (storage/native.py): a stage then
    takes about twice its CPU."""
    why = native.missing()
    if why is not None and not why.startswith('turned off') and not said:
        said.append(why)
        log.warning('the C loops of the record codec are %s: the batch stages run in Python, '
                    'at about half the speed (reinstall beamcrawl with a C compiler at hand)', why)


class MapReduce(beam.PTransform):
    """PBegin → PCollection[part file path]: runs `mapper` over `units` and `reducer` over each
    of `partitions` partitions, writing the database version `out` (a DbUpdate:
    part-NNNNN.avro in `out.dir`, spill files in `out.scratch`, which the update removes) and
    recording its partitioning there (the `_partitions` note, written by the driver when the
    pipeline is built).

    Chained after another stage (the web graph's inlinks after its outlinks, each LinkRank
    iteration after the one before), the transform takes that stage's PCollection as its input
    and maps only once every element of it is there (a side input). `units` may then be a
    function of the list of those elements (the files the stage wrote), applied on a worker."""

    def __init__(self, *, units, mapper: Mapper, reducer: Reducer, partitions: int,
                 out: DbUpdate):
        super().__init__()
        self.units = units if callable(units) else list(units)
        self.mapper, self.reducer = mapper, reducer
        self.partitions, self.out = partitions, out

    def expand(self, before) -> beam.PCollection[str]:
        _say_if_python()
        self.out.write_note(PARTITIONS_NOTE, str(self.partitions))
        workers = workers_of(before.pipeline)
        after = [] if isinstance(before, beam.pvalue.PBegin) else [beam.pvalue.AsList(before)]
        reduced = progress.stage(before.pipeline, 'reduce', self.partitions, 'partitions')
        if callable(self.units):
            make = self.units
            units = (before.pipeline
                     | 'Start' >> beam.Create([None])
                     | 'MakeUnits' >> beam.FlatMap(lambda _, done: spread(make(done), workers),
                                                   *after).with_output_types(typing.Any)
                     | 'Spread' >> beam.Reshuffle())
            after = []
            mapped = progress.Reporter(None, 'map')     # its units are known only on a worker
        else:
            listed = spread(self.units, workers)
            # progress: records of Avro units; units when some are text (seed lists)
            by_records = all(u.records for u in listed)
            mapped = progress.stage(before.pipeline, 'map', sum(u.records for u in listed)
                                    if by_records else len(listed),
                                    'records' if by_records else 'units')
            units = before.pipeline | 'Units' >> beam.Create(listed).with_output_types(
                typing.Any)
        spills = units | 'Map' >> beam.ParDo(_MapUnitFn(self.mapper, self.partitions,
                                                         self.out.scratch, mapped), *after)
        every = before.pipeline | 'EveryPartition' >> beam.Create(
            [(i, None) for i in range(self.partitions)])
        return ((spills, every)
                | 'All' >> beam.Flatten()
                | 'ByPartition' >> beam.GroupByKey()
                | 'Reduce' >> beam.ParDo(_ReducePartitionFn(self.reducer, self.out.dir, reduced)))
