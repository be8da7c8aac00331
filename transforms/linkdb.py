"""The LinkDb as Beam transforms: parse_data → inverted links, merged into the linkdb."""

import gc
from typing import List, Optional, Tuple

import apache_beam as beam

from apache_beam.transforms.window import GlobalWindows

from beamcrawl.transforms import metrics
from beamcrawl.transforms.dbio import Record, iter_records, write_avro_file
from beamcrawl.transforms.layout import part_file
from beamcrawl.transforms.policy.partition import partition
from beamcrawl.transforms.policy.linkdb import LinkRules, Pair, cap_inlinks, invert
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.records import INLINKS_SCHEMA, inlink_pairs, inlinks as inlinks_record

__all__ = ['InvertLinks', 'MergeInlinks', 'InlinksCombineFn', 'UpdateLinkDb', 'PARTITIONS_NOTE']


class InlinksCombineFn(beam.CombineFn):
    """Sets of (from_url, anchor) pairs → the capped, sorted list. Accumulators stay bounded:
    above 2 × max they are cut to the max smallest, which cannot change the result."""

    def __init__(self, max_inlinks: int):
        self.max_inlinks = max_inlinks

    def create_accumulator(self):
        return set()

    def _bound(self, acc):
        if 0 <= self.max_inlinks and len(acc) > 2 * self.max_inlinks:
            return set(cap_inlinks(acc, self.max_inlinks))
        return acc

    def add_input(self, acc, pairs):
        acc.update(pairs)
        return self._bound(acc)

    def merge_accumulators(self, accumulators):
        out = set()
        for acc in accumulators:
            out |= acc
            out = self._bound(out)
        return out

    def extract_output(self, acc):
        return cap_inlinks(acc, self.max_inlinks)


class _InvertFn(beam.DoFn):
    def __init__(self, rules, policy, normalize, filter_urls):
        self.rules, self.policy = rules, policy
        self.normalize, self.filter_urls = normalize, filter_urls

    def start_bundle(self):
        self._count = 0

    def finish_bundle(self):
        metrics.counter(metrics.LINKDB_INVERTED).inc(self._count)

    def process(self, parse_data):
        links = ((o['to_url'], o['anchor']) for o in parse_data['outlinks'])
        for target, pair in invert(parse_data['url'], links, self.rules, self.policy,
                                   normalize=self.normalize, filter_urls=self.filter_urls):
            self._count += 1
            yield target, (pair,)


class InvertLinks(beam.PTransform):
    """PCollection[ParseData] → PCollection[(target url, [(from_url, anchor)])], combined per
    target (a reusable step: an indexer can take anchors from it too).

    Args (keyword-only):
      rules: ignore internal/external links, anchor length, inlink cap.
      policy: URL normalizers and filters (when normalize / filter_urls).
      normalize, filter_urls: apply them to sources and targets.
    """

    def __init__(self, *, rules: LinkRules, policy: Optional[UrlPolicy] = None,
                 normalize: bool = False, filter_urls: bool = False):
        super().__init__()
        self.rules, self.policy = rules, policy
        self.normalize, self.filter_urls = normalize, filter_urls

    def expand(self, parse_data: beam.PCollection[Record]
               ) -> beam.PCollection[Tuple[str, List[Pair]]]:
        return (parse_data
                | 'Invert' >> beam.ParDo(_InvertFn(self.rules, self.policy, self.normalize,
                                                   self.filter_urls))
                | 'CombinePerTarget' >> beam.CombinePerKey(
                    InlinksCombineFn(self.rules.max_inlinks)))


class MergeInlinks(beam.PTransform):
    """(PCollection[Inlinks] the linkdb, PCollection[(url, pairs)] new inlinks) → the new
    linkdb's Inlinks records; entries with no inlink are not written."""

    def __init__(self, max_inlinks: int):
        super().__init__()
        self.max_inlinks = max_inlinks

    def expand(self, inputs) -> beam.PCollection[Record]:     # inputs: (linkdb, inverted links)
        linkdb, inverted = inputs
        existing = linkdb | 'KeyExisting' >> beam.Map(
            lambda r: (r['url'], [(i['from_url'], i['anchor']) for i in r['inlinks']]))
        return ((existing, inverted)
                | 'Both' >> beam.Flatten()
                | 'Union' >> beam.CombinePerKey(InlinksCombineFn(self.max_inlinks))
                | 'NotEmpty' >> beam.Filter(lambda kv: len(kv[1]) > 0)
                | 'Records' >> beam.MapTuple(inlinks_record))


# -- the partitioned linkdb update -------------------------------------------------------------
# A linkdb version written by UpdateLinkDb keeps the inlinks of URL u in part
# partition(u, N), N recorded in the version's PARTITIONS note. An update then merges each part
# on its own: the old part file is streamed, never turned into Beam elements.

PARTITIONS_NOTE = '_partitions'


class _InvertByPartitionFn(beam.DoFn):
    """parse_data → per bundle, {partition: {target: {(from, anchor)}}}, one element per part."""

    def __init__(self, rules, policy, normalize, filter_urls, partitions):
        self.rules, self.policy = rules, policy
        self.normalize, self.filter_urls = normalize, filter_urls
        self.partitions = partitions

    def start_bundle(self):
        self._parts = {}
        self._count = 0
        # Millions of small containers are created here and none is cyclic garbage; Python's
        # cyclic GC would rescan them again and again (measured: 7.2 s → 4.5 s for 2M links).
        self._gc_was_enabled = gc.isenabled()
        gc.disable()

    def process(self, parse_data):
        links = ((o['to_url'], o['anchor']) for o in parse_data['outlinks'])
        for target, pair in invert(parse_data['url'], links, self.rules, self.policy,
                                   normalize=self.normalize, filter_urls=self.filter_urls):
            self._count += 1
            part = self._parts.setdefault(partition(target, self.partitions), {})
            pairs = part.get(target)
            if pairs is None:
                part[target] = [pair]
            else:
                pairs.append(pair)
                if 0 <= self.rules.max_inlinks < len(pairs) // 2:
                    part[target] = cap_inlinks(pairs, self.rules.max_inlinks)
        return ()

    def finish_bundle(self):
        if self._gc_was_enabled:
            gc.enable()
        metrics.counter(metrics.LINKDB_INVERTED).inc(self._count)
        for index, targets in self._parts.items():
            yield GlobalWindows.windowed_value((index, ('new', targets)))
        self._parts = {}


class _MergePartitionFn(beam.DoFn):
    """(partition, [('new', {target: pairs}) | ('old', Inlinks)]) → the partition's part file
    in out_dir, merged with the old part file of the same partition when the old version has
    the same partitioning. Rewriting a part is idempotent (same name, same content)."""

    def __init__(self, *, out_dir, old_parts, max_inlinks):
        self.out_dir, self.old_parts, self.max_inlinks = out_dir, old_parts, max_inlinks

    def process(self, item):
        gc_was_enabled = gc.isenabled()
        gc.disable()                    # as in _InvertByPartitionFn
        try:
            yield from self._process(item)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _process(self, item):
        index, values = item
        new = {}
        old_records = []
        for kind, value in values:
            if kind == 'new':
                for target, pairs in value.items():
                    new.setdefault(target, set()).update(pairs)
            elif kind == 'old':
                old_records.append(value)
        path = part_file(self.out_dir, index)
        old_path = self.old_parts.get(index)
        records = (iter_records([old_path]) if old_path else iter(old_records))
        write_avro_file(path, INLINKS_SCHEMA, self._merged(records, new))
        metrics.counter(metrics.LINKDB_PARTS_WRITTEN).inc()
        yield path

    def _merged(self, old_records, new):
        for record in old_records:
            pairs = new.pop(record['url'], None)
            if pairs is None:
                yield record
                continue
            pairs.update(inlink_pairs(record))
            yield inlinks_record(record['url'], cap_inlinks(pairs, self.max_inlinks))
        for target, pairs in new.items():
            if pairs:
                yield inlinks_record(target, cap_inlinks(pairs, self.max_inlinks))


class UpdateLinkDb(beam.PTransform):
    """PCollection[ParseData] → the new linkdb version's part files in out_dir (yields paths).

    Args (keyword-only):
      rules, policy, normalize, filter_urls: as InvertLinks.
      partitions: number of parts; a URL's inlinks live in part crc32(url) mod partitions.
      old_parts: {partition: part file} of the old version when it has the same partitioning.
      old_records: PCollection[Inlinks] of an old version partitioned otherwise (else None).
      out_dir: the new version's directory.
    """

    def __init__(self, *, rules: LinkRules, policy: Optional[UrlPolicy], normalize: bool,
                 filter_urls: bool, partitions: int, old_parts, old_records, out_dir: str):
        super().__init__()
        self.rules, self.policy = rules, policy
        self.normalize, self.filter_urls = normalize, filter_urls
        self.partitions, self.old_parts, self.old_records = partitions, old_parts, old_records
        self.out_dir = out_dir

    def expand(self, parse_data: beam.PCollection[Record]) -> beam.PCollection[str]:
        n = self.partitions
        streams = [
            parse_data | 'InvertByPartition' >> beam.ParDo(_InvertByPartitionFn(
                self.rules, self.policy, self.normalize, self.filter_urls, n)),
            parse_data.pipeline | 'EveryPartition' >> beam.Create(
                [(i, ('none', None)) for i in range(n)]),
        ]
        if self.old_records is not None:
            streams.append(self.old_records | 'KeyOld' >> beam.Map(
                lambda r: (partition(r['url'], n), ('old', r))))
        return (streams
                | 'All' >> beam.Flatten()
                | 'ByPartition' >> beam.GroupByKey()
                | 'MergePartition' >> beam.ParDo(_MergePartitionFn(
                    out_dir=self.out_dir, old_parts=self.old_parts,
                    max_inlinks=self.rules.max_inlinks)))
