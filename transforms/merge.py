"""mergedb, mergelinkdb, mergesegs (Nutch's CrawlDbMerger, LinkDbMerger, SegmentMerger).

* `MergeCrawlDbs` and `MergeLinkDbs` are MapReduces (engine/mapreduce.py) over the part files of
  several databases: the map side normalizes and filters the URLs when asked (Nutch's
  CrawlDbFilter and LinkDbFilter), the reduce side merges the records of each URL by
  policy/merging.py and writes the partition sorted by URL, as inject and updatedb do.
* `MergeSegments` is a MapReduce too, over the chosen parts of several segments: per URL it
  keeps per part what `merge_segment_url` keeps; `CutSlices` cuts the result into slices of N
  URLs. The command publishes each slice as a segment (docs/merging.md).
"""

import contextlib
import math
import pickle
from typing import List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.engine.mapreduce import MapReduce
from beamcrawl.transforms.engine.partitions import partitions_for
from beamcrawl.transforms.engine.reducers import Mapper, Reducer
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, avro_units
from beamcrawl.transforms.policy.merging import (merge_datums, merge_inlinks, merge_segment_url,
                                                 slice_of)
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.runners.runtime import workers_of
from beamcrawl.transforms.storage import container, fs, partwriter
from beamcrawl.transforms.storage.databases import DbUpdate
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, DB_STATUSES, INLINKS_SCHEMA,
                                                  SCHEMAS, complete_datum, inlink_pairs, inlinks)

__all__ = ['MergeCrawlDbs', 'MergeLinkDbs', 'MergeSegments', 'CrawlDbMergeMapper',
           'LinkDbMergeMapper', 'SegmentMergeMapper', 'CutSlices', 'slice_dir',
           'BYTES_PER_PARTITION']

# mergesegs: about how many bytes of input files (compressed) a partition of the merge takes:
# its reducer holds them decoded in memory (content records are whole pages).
BYTES_PER_PARTITION = 32 << 20


class _UrlCleaner:
    """Normalize and filter a URL when asked (None: dropped, counted)."""

    def __init__(self, policy: Optional[UrlPolicy], normalize: bool, filter_urls: bool):
        self.policy, self.normalize, self.filter_urls = policy, normalize, filter_urls

    def clean(self, url: str, counts) -> Optional[str]:
        if not (self.normalize or self.filter_urls):
            return url
        cleaned, _ = self.policy.clean(url, normalize=self.normalize, filter=self.filter_urls)
        if cleaned is None:
            counts.inc(metrics.MERGE_FILTERED)
        return cleaned


class CrawlDbMergeMapper(Mapper, _UrlCleaner):
    """crawldb units (tag: the input's number) → (url, (input number, record)); db_gone records
    are dropped with db.update.purge.404 (as Nutch's CrawlDbFilter does), other URLs
    normalized and filtered when asked."""

    def __init__(self, policy: Optional[UrlPolicy], normalize: bool, filter_urls: bool,
                 purge_gone: bool):
        _UrlCleaner.__init__(self, policy, normalize, filter_urls)
        self.purge_gone = purge_gone

    def map(self, unit, counts):
        index = int(unit.tag)
        for record, _ in container.read_records(unit.path, unit.blocks, with_raw=False):
            record = complete_datum(record)
            counts.inc(metrics.MERGE_READ)
            if record['status'] not in DB_STATUSES:
                continue
            if self.purge_gone and record['status'] == 'db_gone':
                counts.inc(metrics.MERGE_PURGED)
                continue
            url = self.clean(record['url'], counts)
            if url is not None:
                yield url, (index, record if url == record['url'] else dict(record, url=url))


class _CrawlDbMergeReducer(Reducer):
    def reduce(self, index, groups, path, counts):
        with partwriter.PartWriter(path, CRAWL_DATUM_SCHEMA, keys=True) as out:
            for url in sorted(groups):
                values = sorted(groups[url], key=lambda v: v[0])     # input order (stable)
                merged = merge_datums([record for _, record in values])
                out.write(merged)
                counts.inc(metrics.MERGE_STATUS + merged['status'])
                counts.inc(metrics.MERGE_WRITTEN)


class LinkDbMergeMapper(Mapper, _UrlCleaner):
    """linkdb units → (url, [(from_url, anchor)]): targets and sources normalized and filtered
    when asked (Nutch's LinkDbFilter: a rejected target drops its entry, a rejected source
    its inlink)."""

    def map(self, unit, counts):
        for record, _ in container.read_records(unit.path, unit.blocks, with_raw=False):
            counts.inc(metrics.MERGE_READ)
            url = self.clean(record['url'], counts)
            if url is None:
                continue
            pairs = []
            for from_url, anchor in inlink_pairs(record):
                from_url = self.clean(from_url, counts)
                if from_url is not None:
                    pairs.append((from_url, anchor))
            if pairs:
                yield url, pairs


class _LinkDbMergeReducer(Reducer):
    def __init__(self, max_inlinks: int):
        self.max_inlinks = max_inlinks

    def reduce(self, index, groups, path, counts):
        with partwriter.PartWriter(path, INLINKS_SCHEMA, keys=True) as out:
            for url in sorted(groups):
                out.write(inlinks(url, merge_inlinks(groups[url], self.max_inlinks)))
                counts.inc(metrics.MERGE_WRITTEN)


class _MergeDbs(beam.PTransform):
    """PBegin → PCollection[part file]: the part files of `inputs` (one list per database, in
    input order) merged into the version `out`."""

    schema: dict = None

    def __init__(self, *, inputs: Sequence[Sequence[str]], out: DbUpdate, partitions: int,
                 mapper: Mapper, reducer: Reducer):
        super().__init__()
        self.out, self.setting, self.mapper, self.reducer = out, partitions, mapper, reducer
        self.units = []
        for number, files in enumerate(inputs):
            self.units += avro_units([(str(number), f) for f in files], schema=self.schema,
                                     per_unit=RECORDS_PER_UNIT, first_index=len(self.units))
        self.weight = sum(u.records for u in self.units)

    def expand(self, pbegin):
        count = partitions_for(self.setting, self.weight, workers_of(pbegin.pipeline))
        return pbegin | 'MapReduce' >> MapReduce(units=self.units, mapper=self.mapper,
                                                 reducer=self.reducer, partitions=count,
                                                 out=self.out)


class MergeCrawlDbs(_MergeDbs):
    """Crawldbs merged (Nutch's CrawlDbMerger). Args (keyword-only): inputs (the part files of
    each crawldb, the one merged into first), out (DbLayout.update()), partitions
    (crawldb.partitions), policy, normalize, filter_urls, purge_gone (db.update.purge.404).
    `weight`: the records read."""

    schema = CRAWL_DATUM_SCHEMA

    def __init__(self, *, inputs, out, partitions, policy, normalize=False, filter_urls=False,
                 purge_gone=False):
        super().__init__(inputs=inputs, out=out, partitions=partitions,
                         mapper=CrawlDbMergeMapper(policy, normalize, filter_urls, purge_gone),
                         reducer=_CrawlDbMergeReducer())


class MergeLinkDbs(_MergeDbs):
    """Linkdbs merged (Nutch's LinkDbMerger). Args (keyword-only): inputs, out, partitions
    (linkdb.partitions), max_inlinks (linkdb.max.inlinks), policy, normalize, filter_urls."""

    schema = INLINKS_SCHEMA

    def __init__(self, *, inputs, out, partitions, max_inlinks, policy, normalize=False,
                 filter_urls=False):
        super().__init__(inputs=inputs, out=out, partitions=partitions,
                         mapper=LinkDbMergeMapper(policy, normalize, filter_urls),
                         reducer=_LinkDbMergeReducer(max_inlinks))


# -- segments ---------------------------------------------------------------------------------
#
# The merge is a MapReduce like the databases': the map side reads the records of every input
# part (normalized and filtered), the reduce side merges each URL of a partition and writes the
# partition's records of each part, sorted by URL, into `<scratch>/merged/<part>/part-P.avro`,
# with the partition's URLs in order (`_urls/part-P`). Records never pass through Beam's
# shuffle (docs/performance.md). With --slice, a second pipeline cuts the partitions into
# slices: the URLs in order of (partition, URL), N to a slice, each worker streaming the files of
# one partition into `<scratch>/slices/<slice>/<part>/part-P.avro`.

_MERGED, _SLICES, _URLS = 'merged', 'slices', '_urls'


def slice_dir(scratch: str, number: int, part: str) -> str:
    """Where the part `part` of slice `number` is, once MergeSegments is done."""
    return fs.join(scratch, _SLICES, f'{number:05d}', part)


def merged_dir(scratch: str, part: str) -> str:
    """Where MergeSegments writes the merged records of a part (all slices)."""
    return fs.join(scratch, _MERGED, part)


def _urls_file(scratch: str, index: int) -> str:
    return fs.join(scratch, _MERGED, _URLS, f'part-{index:05d}')


class SegmentMergeMapper(Mapper, _UrlCleaner):
    """segment part units (tag: `segment/part`) → (url, (segment, part, record)), the URL
    normalized and filtered when asked."""

    def map(self, unit, counts):
        segment, part = unit.tag.split('/')
        for record, _ in container.read_records(unit.path, unit.blocks, with_raw=False):
            counts.inc(metrics.MERGE_READ)
            url = self.clean(record['url'], counts)
            if url is not None:
                yield url, (segment, part, record if url == record['url']
                            else dict(record, url=url))


class _SegmentMergeReducer(Reducer):
    def __init__(self, scratch: str):
        self.scratch = scratch

    def reduce(self, index, groups, path, counts):
        urls = sorted(groups)
        with contextlib.ExitStack() as stack:
            writers = {}
            for url in urls:
                for part, records in merge_segment_url(groups[url]).items():
                    out = writers.get(part)
                    if out is None:
                        out = writers[part] = stack.enter_context(partwriter.PartWriter(
                            fs.part_file(merged_dir(self.scratch, part), index), SCHEMAS[part]))
                    for record in records:
                        out.write(record)
        with fs.create(_urls_file(self.scratch, index)) as f:
            f.write(pickle.dumps(urls, protocol=pickle.HIGHEST_PROTOCOL))
        counts.inc(metrics.MERGE_WRITTEN, len(urls))


class _SliceFn(beam.DoFn):
    """(partition, its first URL's number) → the partition's records, copied into the slices
    their URLs' numbers fall in."""

    def __init__(self, scratch: str, parts: Sequence[str], size: int):
        self.scratch, self.parts, self.size = scratch, list(parts), size

    def process(self, item):
        index, first = item
        data = fs.read_file(_urls_file(self.scratch, index))
        urls = pickle.loads(data) if data else []
        number = {url: slice_of(first + rank, self.size) for rank, url in enumerate(urls)}
        for part in self.parts:
            source = fs.part_file(merged_dir(self.scratch, part), index)
            if not fs.exists(source):
                continue
            with contextlib.ExitStack() as stack:
                writers = {}
                for record, raw in container.read_records(source):
                    target = number[record['url']]
                    out = writers.get(target)
                    if out is None:
                        out = writers[target] = stack.enter_context(partwriter.PartWriter(
                            fs.part_file(slice_dir(self.scratch, target, part), index),
                            SCHEMAS[part]))
                    if raw is not None:
                        out.write_raw(raw)
                    else:
                        out.write(record)
            yield source


class MergeSegments(beam.PTransform):
    """PBegin → PCollection: segments merged (Nutch's SegmentMerger) under `scratch`; the merge
    is then slice 0 (`single_slice`), or is cut into slices by `CutSlices`.

    Args (keyword-only):
      files: (segment name, part, part file) of every input part read, in segment order.
      scratch: the directory the merge and its slices are written into.
      policy, normalize, filter_urls: as for the databases.

    `weight`: the records read; `parts`: the parts merged; `partitions`: set by expand (a
    partition per BYTES_PER_PARTITION of input files, a multiple of the workers)."""

    def __init__(self, *, files: Sequence[Tuple[str, str, str]], scratch: str,
                 policy: Optional[UrlPolicy], normalize: bool = False, filter_urls: bool = False):
        super().__init__()
        self.scratch = scratch
        self.parts = list(dict.fromkeys(part for _, part, _ in files))
        self.units = []
        for segment, part, path in files:
            self.units += avro_units([(f'{segment}/{part}', path)], schema=SCHEMAS[part],
                                     per_unit=RECORDS_PER_UNIT, first_index=len(self.units))
        self.weight = sum(u.records for u in self.units)
        self.bytes = sum(m.size_in_bytes for r in FileSystems.match([f for _, _, f in files])
                         for m in r.metadata_list)
        self.mapper = SegmentMergeMapper(policy, normalize, filter_urls)
        self.partitions = 0

    def expand(self, pbegin):
        self.partitions = partitions_for(0, math.ceil(self.bytes / BYTES_PER_PARTITION),
                                         workers_of(pbegin.pipeline), per_partition=1)
        out = DbUpdate(fs.join(self.scratch, _MERGED))
        fs.mkdirs(out.dir)
        return pbegin | 'MapReduce' >> MapReduce(
            units=self.units, mapper=self.mapper, reducer=_SegmentMergeReducer(self.scratch),
            partitions=self.partitions, out=out)

    def partition_urls(self) -> List[int]:
        """After the merge: the number of URLs of each partition (driver side: reads the URL
        lists one at a time)."""
        out = []
        for index in range(self.partitions):
            data = fs.read_file(_urls_file(self.scratch, index))
            out.append(len(pickle.loads(data)) if data else 0)
        return out

    def single_slice(self) -> None:
        """Without --slice: the merge becomes slice 0 (driver side)."""
        target = fs.join(self.scratch, _SLICES, f'{0:05d}')
        fs.mkdirs(target)
        for part in self.parts:
            if fs.exists(merged_dir(self.scratch, part)):
                fs.rename(merged_dir(self.scratch, part), fs.join(target, part))


class CutSlices(beam.PTransform):
    """PBegin → PCollection: the merge of `merge` (a MergeSegments that ran) cut into slices of
    `size` URLs, in order of (partition, URL), given the URL counts of its partitions."""

    def __init__(self, merge: MergeSegments, size: int, counts: Sequence[int]):
        super().__init__()
        firsts = [sum(counts[:i]) for i in range(len(counts))]
        self.items = [(i, first) for i, first in enumerate(firsts) if counts[i]]
        self.fn = _SliceFn(merge.scratch, merge.parts, size)

    def expand(self, pbegin):
        return (pbegin | 'Partitions' >> beam.Create(self.items)
                | 'Slice' >> beam.ParDo(self.fn))
