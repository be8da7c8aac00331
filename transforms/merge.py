"""mergedb, mergelinkdb, mergesegs (Nutch's CrawlDbMerger, LinkDbMerger, SegmentMerger).

* `MergeCrawlDbs` and `MergeLinkDbs` are MapReduces (engine/mapreduce.py) over the part files of
  several databases: the map side normalizes and filters the URLs when asked (Nutch's
  CrawlDbFilter and LinkDbFilter), the reduce side merges the records of each URL by
  policy/merging.py and writes the partition sorted by URL, as inject and updatedb do.
* `MergeSegments` reads the records of the chosen parts of several segments, groups them by URL,
  keeps per part what `merge_segment_url` keeps, and writes the result as slices
  (`<scratch>/<slice>/<part>/part-NNNNN.avro`, the URLs of a host in one part, each part sorted
  by URL); the command publishes each slice as a segment (docs/merging.md).
"""

from typing import List, Optional, Sequence, Tuple

import apache_beam as beam

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.engine.mapreduce import MapReduce
from beamcrawl.transforms.engine.partitions import partitions_for
from beamcrawl.transforms.engine.reducers import Mapper, Reducer
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, avro_units
from beamcrawl.transforms.policy.merging import (merge_datums, merge_inlinks, merge_segment_url,
                                                 slice_of)
from beamcrawl.transforms.policy.partition import partition
from beamcrawl.transforms.policy.urlparts import scheme_host
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.runners.runtime import workers_of
from beamcrawl.transforms.storage import container, fs, partwriter
from beamcrawl.transforms.storage.databases import DbUpdate
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, DB_STATUSES, INLINKS_SCHEMA,
                                                  SCHEMAS, complete_datum, inlink_pairs, inlinks)

__all__ = ['MergeCrawlDbs', 'MergeLinkDbs', 'MergeSegments', 'CrawlDbMergeMapper',
           'LinkDbMergeMapper', 'slice_dir', 'RECORDS_PER_FILE']

# mergesegs: about how many records of a part one of its files holds (each file is written by
# one worker from its records in memory: a content record is a whole page).
RECORDS_PER_FILE = 5_000


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

def slice_dir(scratch: str, number: int, part: str) -> str:
    """Where MergeSegments writes the part `part` of slice `number`."""
    return fs.join(scratch, f'{number:05d}', part)


class _ReadSegmentFileFn(beam.DoFn, _UrlCleaner):
    """(segment, part, file) → (url, (segment, part, record)) for each record, its URL
    normalized and filtered when asked."""

    def __init__(self, policy, normalize, filter_urls):
        _UrlCleaner.__init__(self, policy, normalize, filter_urls)

    def process(self, item):
        segment, part, path = item
        counts = metrics.BundleCounts()
        for record, _ in container.read_records(path, with_raw=False):
            counts.inc(metrics.MERGE_READ)
            url = self.clean(record['url'], counts)
            if url is None:
                continue
            if url != record['url']:
                record = dict(record, url=url)
            yield url, (segment, part, record)
        counts.flush()


class _MergeUrlFn(beam.DoFn):
    def process(self, item):
        url, values = item
        metrics.counter(metrics.MERGE_WRITTEN).inc()
        yield url, merge_segment_url(values)


def _ranks(urls: List[str]) -> dict:
    return {url: rank for rank, url in enumerate(sorted(urls))}


class _ToFilesFn(beam.DoFn):
    """(url, {part: records}) → ((slice, part, shard), record): a host's URLs in one shard."""

    def __init__(self, slice_size: int, shards: int):
        self.slice_size, self.shards = slice_size, shards

    def process(self, item, ranks=None):
        url, parts = item
        number = slice_of(ranks[url], self.slice_size) if ranks is not None else 0
        shard = partition(scheme_host(url)[1] or '', self.shards)
        for part, records in parts.items():
            for record in records:
                yield (number, part, shard), record


class _WriteFileFn(beam.DoFn):
    def __init__(self, scratch: str):
        self.scratch = scratch

    def process(self, item):
        (number, part, shard), records = item
        records = sorted(records, key=lambda r: r['url'])       # stable: linked stay in order
        path = fs.part_file(slice_dir(self.scratch, number, part), shard)
        with partwriter.PartWriter(path, SCHEMAS[part]) as out:
            for record in records:
                out.write(record)
        yield path


class MergeSegments(beam.PTransform):
    """PBegin → PCollection[part file]: segments merged (Nutch's SegmentMerger) into slices under
    `scratch` (slice_dir).

    Args (keyword-only):
      files: (segment name, part, part file) of every input part read.
      scratch: the directory the slices are written into.
      slice_size: URLs per slice (--slice); 0: one slice.
      shards: part files per part of a slice (the URLs of a host in one).
      policy, normalize, filter_urls: as for the databases.

    With slice_size, the URLs are numbered in their order (all of them, as strings, in one
    worker's memory) and cut into slices of slice_size."""

    def __init__(self, *, files: Sequence[Tuple[str, str, str]], scratch: str, slice_size: int,
                 shards: int, policy: Optional[UrlPolicy], normalize: bool = False,
                 filter_urls: bool = False):
        super().__init__()
        self.files, self.scratch = list(files), scratch
        self.slice_size, self.shards = slice_size, max(1, shards)
        self.reader = _ReadSegmentFileFn(policy, normalize, filter_urls)

    def expand(self, pbegin):
        merged = (pbegin
                  | 'Files' >> beam.Create(self.files)
                  | 'Read' >> beam.ParDo(self.reader)
                  | 'ByUrl' >> beam.GroupByKey()
                  | 'Merge' >> beam.ParDo(_MergeUrlFn()))
        to_files = _ToFilesFn(self.slice_size, self.shards)
        if self.slice_size > 0:
            ranks = (merged
                     | 'Urls' >> beam.Keys()
                     | 'AllUrls' >> beam.combiners.ToList()
                     | 'Rank' >> beam.Map(_ranks))
            keyed = merged | 'ToFiles' >> beam.ParDo(to_files, beam.pvalue.AsSingleton(ranks))
        else:
            keyed = merged | 'ToFiles' >> beam.ParDo(to_files)
        return (keyed
                | 'ByFile' >> beam.GroupByKey()
                | 'Write' >> beam.ParDo(_WriteFileFn(self.scratch)))

