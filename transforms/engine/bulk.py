"""Batch stages over files, MapReduce style: the bulk path of inject and updatedb.

    work units ──Map──▶ per-partition spill files ──GroupByKey(partition)──▶ Reduce ──▶ part-P

* A work unit is a run of Avro blocks of one input file (or a byte range of a text file), cut in
  the driver from block headers alone (container.scan_blocks), so that every worker gets a
  similar share however the inputs are split into files.
* The map side (a `Mapper`) turns each record into (url, item) pairs; items are collected per
  partition (crc32(url) mod N, policy/partition.py) and written as one pickle file per unit and
  partition into a scratch directory. Only (partition, file name) pairs cross Beam's shuffle:
  moving the records themselves through the local runner's shuffle costs more than all the
  rest (docs/performance.md).
* The reduce side (a `Reducer`) gets, for one partition, every item of every URL (a dict
  url → [items]) and writes that partition's part file itself; every partition is reduced,
  also one that received nothing, so a database always has parts 0..N-1.

File names are deterministic (unit, partition), so a retried bundle rewrites the same files.
Mappers and reducers are plain objects (pickled to the workers), written per stage
(transforms/updatedb.py, transforms/inject.py).
"""

import bisect
import gc
import io
import itertools
import math
import operator
import pickle
import typing
import zlib
from typing import (Dict, Iterable, Iterator, List, MutableSequence, NamedTuple, Optional,
                    Sequence, Tuple)

import apache_beam as beam
import fastavro
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.storage import container, keysfile, partwriter
from beamcrawl.transforms.storage.parts import named
from beamcrawl.transforms.storage.databases import PARTITIONS_NOTE, DbLayout
from beamcrawl.transforms.storage.fs import part_file

__all__ = ['Unit', 'avro_units', 'text_units', 'partitions_for', 'Mapper', 'Reducer', 'MapReduce',
           'read_unit_lines', 'choose_partitions', 'aligned_parts', 'join_sorted', 'join_keyed',
           'JoinReducer',
           'Unsorted', 'RECORDS_PER_UNIT', 'RECORDS_PER_PARTITION', 'BYTES_PER_TEXT_UNIT']

# Work-unit sizes: small enough to share the work evenly between processes, large enough that
# a unit's fixed costs (one task, a spill file per partition) do not count.
RECORDS_PER_UNIT = 50_000
BYTES_PER_TEXT_UNIT = 4 << 20
# crawldb.partitions = 0: one partition per this many records (the reduce of a partition holds
# all its records in memory: about 0.3 GB for 250k).
RECORDS_PER_PARTITION = 250_000


class Unit(NamedTuple):
    """A share of one input file: Avro blocks (`blocks`: their offsets) or a byte range of a
    text file (`span`: start, end; `first_line`: the number of the range's first line)."""
    index: int
    tag: str                       # which input this is, for the mapper ('old', 'segment', ...)
    path: str
    records: int                   # records (Avro) or bytes (text)
    blocks: Optional[Tuple[int, ...]] = None
    raw_ok: bool = False           # records may be written back as their encoded bytes
    span: Optional[Tuple[int, int]] = None
    first_line: int = 1


def avro_units(inputs: Sequence[Tuple[str, str]], *, schema: dict, per_unit: int,
               first_index: int = 0) -> List[Unit]:
    """Units of about `per_unit` records over (tag, path) Avro inputs. `raw_ok` says whether
    a file's records are encoded exactly as `schema` (then unchanged records are copied)."""
    units: List[Unit] = []
    parsed = fastavro.parse_schema(schema)
    index = first_index
    for tag, path in inputs:
        header, blocks = container.scan_blocks(path)
        raw_ok = header.schema == parsed and header.codec in ('null', 'deflate')
        if not blocks:
            continue
        if header.codec not in ('null', 'deflate'):     # read whole by fastavro
            units.append(Unit(index, tag, path, sum(b.count for b in blocks)))
            index += 1
            continue
        run: List[int] = []
        count = 0
        for block in blocks:
            run.append(block.offset)
            count += block.count
            if count >= per_unit:
                units.append(Unit(index, tag, path, count, tuple(run), raw_ok))
                index += 1
                run, count = [], 0
        if run:
            units.append(Unit(index, tag, path, count, tuple(run), raw_ok))
            index += 1
    return units


def text_units(inputs: Sequence[Tuple[str, str]], *, per_unit: int,
               first_index: int = 0) -> List[Unit]:
    """Units of about `per_unit` bytes over (tag, path) text files, cut at line starts; each
    knows the number of its first line (for messages naming file:line)."""
    units: List[Unit] = []
    index = first_index
    for tag, path in inputs:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            data = f.read()
        start, line = 0, 1
        while start < len(data):
            end = data.find(b'\n', min(start + per_unit, len(data)) - 1)
            end = len(data) if end < 0 else end + 1
            units.append(Unit(index, tag, path, end - start, span=(start, end), first_line=line))
            line += data.count(b'\n', start, end)
            index += 1
            start = end
    return units


def read_unit_lines(unit: Unit) -> Iterator[Tuple[int, bytes]]:
    """(line number, raw line) of a text unit."""
    start, end = unit.span
    with FileSystems.open(unit.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.seek(start)
        data = f.read(end - start)
    for number, raw in enumerate(data.splitlines(keepends=True), unit.first_line):
        yield number, raw


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
    `partitions` parts by bulk.MapReduce (its PARTITIONS_NOTE says so), else None."""
    if db.read_note(PARTITIONS_NOTE) != str(partitions):
        return None
    directory = db.readable_dir()
    expected = [part_file(directory, i) for i in range(partitions)]
    return dict(enumerate(expected)) if db.part_files() == expected else None


class Mapper:
    """The map side of a stage: `map(unit, counts)` yields (url, item) for the records of a
    unit (counts: a metrics.BundleCounts)."""

    def map(self, unit: Unit, counts) -> Iterable[Tuple[str, object]]:
        raise NotImplementedError


class Reducer:
    """The reduce side: `reduce(partition, groups, path, counts)` writes the part file `path`
    from groups {url: [items]} (items in input order: units in index order)."""

    def reduce(self, index: int, groups: Dict[str, list], path: str, counts) -> None:
        raise NotImplementedError


class Unsorted(Exception):
    """An old part that is not sorted by key after all."""


Entry = Tuple[str, Optional[str], Optional[bytes], Optional[dict]]   # url, status, raw, record


def join_sorted(old: Iterable[Entry], groups: Dict[str, list]
                ) -> Iterator[Tuple[str, Optional[str], Optional[bytes], Optional[dict],
                                    Optional[list]]]:
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
               copied: MutableSequence[int]
               ) -> Iterator[Tuple[str, Optional[str], Optional[bytes], None, list]]:
    """join_sorted for an old part with its keys file (sorted by URL: the caller checks),
    when every old record that no group names is copied unchanged: such records are not
    yielded but written to `out` here, a run at a time (PartWriter.write_run), as the join
    reaches them, so that the caller's writes of the yielded entries stay in URL order. Their
    status indexes (into part.keys.statuses) are appended to `copied`. Yields (url, status,
    raw, None, items) for an old record with a group, (url, None, None, None, items) for a
    group with no old record."""
    keys = part.keys
    urls, index, statuses, lengths = keys.urls, keys.status_index, keys.statuses, keys.lengths
    new = sorted(groups)
    n, k = len(new), 0
    for first, count, data in keysfile.keyed_blocks(part):
        view = memoryview(data)
        j, pos, last = first, 0, first + count
        while j < last:
            t = bisect.bisect_left(urls, new[k], j, last) if k < n else last
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


def _strictly_sorted(urls: List[str]) -> bool:
    return all(map(operator.lt, urls, itertools.islice(urls, 1, None)))


class JoinReducer(Reducer):
    """A Reducer that merges a partition's groups with the same partition of the old database
    when that one is partitioned the same way (`old_parts`): the old part is streamed in one
    pass beside the sorted groups (`write_joined`), never mapped; with its keys file
    (keysfile.read_keyed), the old records that nothing changes are not even decoded.
    Without an old part, or when it turns out not to be sorted, the old records go into the
    groups (`old_items`) and the partition is written from them (`write_grouped`). Parts are
    written sorted by URL, with their keys files."""

    schema: dict = None

    def __init__(self, old_parts: Optional[Dict[int, str]] = None):
        self.old_parts = old_parts or {}

    def complete(self, record: dict) -> dict:
        """A record of an old file with another schema, with every field of ours."""
        return record

    def decode(self, raw: bytes) -> dict:
        """An old record from its encoded bytes (the database's own schema)."""
        return fastavro.schemaless_reader(io.BytesIO(raw), self._parsed())

    def _parsed(self):
        parsed = self.__dict__.get('_parsed_schema')
        if parsed is None:
            parsed = self._parsed_schema = fastavro.parse_schema(self.schema)
        return parsed

    def old_items(self, record: dict, raw: Optional[bytes], counts
                  ) -> Iterable[Tuple[str, object]]:
        raise NotImplementedError

    def write_joined(self, joined, out: partwriter.PartWriter, counts) -> None:
        """Writes the partition from join_sorted's tuples; `record` may be None where `raw` is
        there (decode it when it is needed)."""
        raise NotImplementedError

    def write_grouped(self, groups: Dict[str, list], out: partwriter.PartWriter,
                      counts) -> None:
        raise NotImplementedError

    def copies_unchanged(self, statuses: Sequence[str]) -> bool:
        """Whether write_joined would write every old record that no group names as its bytes,
        unchanged, in a part whose records have these statuses. When it would, and the old
        part has its keys file, the join copies such records itself, a run at a time
        (join_keyed), and write_joined sees only the entries with a group."""
        return False

    def count_copied(self, copied: Dict[str, int], counts) -> None:
        """Counts the records the join copied ({status: number}), as write_joined would have."""

    def _old_entries(self, path: str, raw_ok: bool) -> Iterator[Entry]:
        keyed = keysfile.read_keyed(path) if raw_ok else None
        if keyed is not None:
            for url, status, raw in keyed:
                yield url, status, raw, None
            return
        for record in self._old_records(path, raw_ok):
            yield record[0]['url'], record[0].get('status'), record[1], record[0]

    def _old_records(self, path: str, raw_ok: bool):
        for record, raw in container.read_records(path, with_raw=raw_ok):
            yield (record, raw) if raw_ok and raw is not None else (self.complete(record), None)

    def reduce(self, index, groups, path, counts):
        old_path = self.old_parts.get(index)
        if old_path is not None:
            raw_ok = container.read_header(old_path).schema == self._parsed()
            part = keysfile.open_keyed(old_path) if raw_ok else None
            if part is not None and self.copies_unchanged(part.keys.statuses) and \
                    _strictly_sorted(part.keys.urls):
                copied = bytearray()
                with partwriter.PartWriter(path, self.schema, keys=True) as out:
                    self.write_joined(join_keyed(part, groups, out, copied), out, counts)
                by_status = {status: copied.count(i) for i, status in enumerate(part.keys.statuses)}
                self.count_copied({s: n for s, n in by_status.items() if n}, counts)
                return
            try:
                with partwriter.PartWriter(path, self.schema, keys=True) as out:
                    self.write_joined(join_sorted(self._old_entries(old_path, raw_ok), groups),
                                      out, counts)
                return
            except Unsorted:
                counts.clear()
                for record, raw in self._old_records(old_path, raw_ok):
                    for url, item in self.old_items(record, raw, counts):
                        groups.setdefault(url, []).insert(0, item)
        with partwriter.PartWriter(path, self.schema, keys=True) as out:
            self.write_grouped(groups, out, counts)


class _NoGC:
    """Millions of small containers are made here and none is cyclic garbage; Python's cyclic
    GC would rescan them again and again (measured: up to a third of the time)."""

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was_enabled:
            gc.enable()
        return False


class _MapUnitFn(beam.DoFn):
    def __init__(self, mapper: Mapper, partitions: int, scratch: str):
        self.mapper, self.partitions, self.scratch = mapper, partitions, scratch

    def process(self, unit: Unit):
        counts = metrics.BundleCounts()
        n = self.partitions
        buckets: List[list] = [[] for _ in range(n)]
        crc32 = zlib.crc32
        with _NoGC():
            for url, item in self.mapper.map(unit, counts):
                # partition(url, n) of policy/partition.py, inlined: this runs per record
                buckets[crc32(url.encode('utf-8')) % n].append((url, item))
        counts.flush()
        for index, items in enumerate(buckets):
            if not items:
                continue
            path = FileSystems.join(self.scratch, f'u{unit.index:06d}-p{index:05d}.pickle')
            try:
                with FileSystems.create(path,
                                        compression_type=CompressionTypes.UNCOMPRESSED) as f:
                    pickle.dump(items, f, protocol=pickle.HIGHEST_PROTOCOL)
            except OSError as e:
                raise named(e, path) from e
            yield index, (unit.index, path)


class _ReducePartitionFn(beam.DoFn):
    def __init__(self, reducer: Reducer, out_dir: str):
        self.reducer, self.out_dir = reducer, out_dir

    def process(self, item):
        index, spills = item
        counts = metrics.BundleCounts()
        with _NoGC():
            groups: Dict[str, list] = {}
            for _, path in sorted(s for s in spills if s is not None):
                with FileSystems.open(path,
                                      compression_type=CompressionTypes.UNCOMPRESSED) as f:
                    items = pickle.load(f)
                for url, value in items:
                    values = groups.get(url)
                    if values is None:
                        groups[url] = [value]
                    else:
                        values.append(value)
                del items
            path = part_file(self.out_dir, index)
            self.reducer.reduce(index, groups, path, counts)
        counts.flush()
        yield path


class MapReduce(beam.PTransform):
    """PBegin → PCollection[part file path]: runs `mapper` over `units` and `reducer` over each
    of `partitions` partitions, writing `out_dir`/part-NNNNN.avro; spill files go to `scratch`
    (the caller removes it after the pipeline)."""

    def __init__(self, *, units: Sequence[Unit], mapper: Mapper, reducer: Reducer,
                 partitions: int, scratch: str, out_dir: str):
        super().__init__()
        self.units, self.mapper, self.reducer = list(units), mapper, reducer
        self.partitions, self.scratch, self.out_dir = partitions, scratch, out_dir

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        spills = (pbegin
                  | 'Units' >> beam.Create(self.units).with_output_types(typing.Any)
                  | 'Map' >> beam.ParDo(_MapUnitFn(self.mapper, self.partitions, self.scratch)))
        every = pbegin | 'EveryPartition' >> beam.Create(
            [(i, None) for i in range(self.partitions)])
        return ((spills, every)
                | 'All' >> beam.Flatten()
                | 'ByPartition' >> beam.GroupByKey()
                | 'Reduce' >> beam.ParDo(_ReducePartitionFn(self.reducer, self.out_dir)))
