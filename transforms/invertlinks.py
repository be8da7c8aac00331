"""The LinkDb as Beam transforms: parse_data → inverted links, merged into the linkdb."""

from typing import Dict, List, Optional, Tuple

import apache_beam as beam


from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.storage import container
from beamcrawl.transforms.engine.bulk import JoinReducer, Mapper
from beamcrawl.transforms.storage.parts import Record
from beamcrawl.transforms.storage.databases import PARTITIONS_NOTE
from beamcrawl.transforms.policy.linkdb import LinkRules, Pair, cap_inlinks, invert
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage.records import INLINKS_SCHEMA, inlink_pairs, inlinks as inlinks_record

__all__ = ['InvertLinks', 'MergeInlinks', 'InlinksCombineFn', 'PARTITIONS_NOTE',
           'InvertMapper', 'InlinksReducer', 'PARSE_INPUT', 'OLD_INPUT']


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


# -- the bulk path (bulk.MapReduce), what the invertlinks command runs --------------------------
# A linkdb version keeps the inlinks of URL u in part crc32(u) mod N, each part sorted by URL,
# N in its PARTITIONS_NOTE (docs/crawl-dir.md); an update merges each old part with its
# partition's new inlinks in one pass.

PARSE_INPUT, OLD_INPUT = 'parse_data', 'old'    # the tags of bulk.Unit
_RAW = 'r'      # (_RAW, bytes, None): an old Inlinks record as its encoded bytes (new inlinks
                # are (from_url, anchor) pairs, old ones a list of pairs)


def _is_raw(value) -> bool:
    return type(value) is tuple and len(value) == 3       # pylint: disable=unidiomatic-typecheck


class InvertMapper(Mapper):
    """bulk.Mapper of invertlinks: parse_data units → (target, (from_url, anchor)) for every
    outlink `invert` keeps; linkdb units (an old version partitioned otherwise) →
    (url, (_RAW, bytes, None)) or (url, [pairs])."""

    def __init__(self, rules: LinkRules, policy: Optional[UrlPolicy], normalize: bool,
                 filter_urls: bool):
        self.rules, self.policy = rules, policy
        self.normalize, self.filter_urls = normalize, filter_urls

    def map(self, unit, counts):
        if unit.tag == OLD_INPUT:
            for record, raw in container.read_records(unit.path, unit.blocks):
                yield from self.old_item(record, raw if unit.raw_ok else None, counts)
            return
        inverted = 0
        for parse_data, _ in container.read_records(unit.path, unit.blocks, with_raw=False):
            links = ((o['to_url'], o['anchor']) for o in parse_data['outlinks'])
            for target, pair in invert(parse_data['url'], links, self.rules, self.policy,
                                       normalize=self.normalize, filter_urls=self.filter_urls):
                inverted += 1
                yield target, pair
        counts.inc(metrics.LINKDB_INVERTED, inverted)

    @staticmethod
    def old_item(record, raw, counts):  # pylint: disable=unused-argument
        if raw is not None:
            yield record['url'], (_RAW, raw, None)
        else:
            yield record['url'], inlink_pairs(record)


class InlinksReducer(JoinReducer):
    """bulk.Reducer of invertlinks: the inlinks of each target of a partition, merged with its
    old entry and capped (linkdb.max.inlinks), written sorted by URL; an old entry that got no
    new link is copied as its bytes."""

    schema = INLINKS_SCHEMA

    def __init__(self, max_inlinks: int, old_parts: Optional[Dict[int, str]] = None):
        super().__init__(old_parts)
        self.max_inlinks = max_inlinks

    def old_items(self, record, raw, counts):
        return InvertMapper.old_item(record, raw, counts)

    def _write(self, url, pairs, out):
        if pairs:
            out.write(inlinks_record(url, cap_inlinks(pairs, self.max_inlinks)))

    def copies_unchanged(self, statuses):
        return True

    def write_joined(self, joined, out, counts):
        for url, _, raw, record, values in joined:
            if values is None:
                if raw is not None:
                    out.write_raw(raw, url)
                elif record['inlinks']:
                    out.write(record)
                continue
            pairs = set(values)
            if raw is not None or record is not None:
                pairs.update(inlink_pairs(record if record is not None else self.decode(raw)))
            self._write(url, pairs, out)
        counts.inc(metrics.LINKDB_PARTS_WRITTEN)

    def write_grouped(self, groups, out, counts):
        for url in sorted(groups):
            values = groups[url]
            if len(values) == 1 and _is_raw(values[0]):
                out.write_raw(values[0][1], url)
                continue
            pairs = set()
            for value in values:
                if _is_raw(value):
                    pairs.update(inlink_pairs(self.decode(value[1])))
                elif isinstance(value, list):
                    pairs.update(value)
                else:
                    pairs.add(value)
            self._write(url, pairs, out)
        counts.inc(metrics.LINKDB_PARTS_WRITTEN)
