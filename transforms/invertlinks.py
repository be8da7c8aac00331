"""invertlinks (Nutch's LinkDb): the outlinks of parsed segments, inverted into the linkdb.

`InvertLinks` is the stage: a MapReduce (engine/mapreduce.py) whose map side inverts the
outlinks of parse_data (policy/linkdb.py: `InvertMapper`) and whose reduce side merges each
target's new inlinks with its old entry, capped (`InlinksReducer`). A linkdb version keeps the
inlinks of URL u in part crc32(u) mod N, each part sorted by URL, N in its `_partitions` note
(docs/crawl-dir.md); an update merges each old part with its partition's new inlinks in one pass.
"""

from typing import Dict, List, Optional, Sequence

import apache_beam as beam

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.engine import partitions as partitions_mod
from beamcrawl.transforms.engine.mapreduce import MapReduce
from beamcrawl.transforms.engine.reducers import JoinReducer, Mapper
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, avro_units
from beamcrawl.transforms.policy.linkdb import LinkRules, Pair, cap_inlinks, invert
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage import container
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.inlinkscodec import encode_inlinks
from beamcrawl.transforms.storage.records import INLINKS_SCHEMA, PARSE_DATA_SCHEMA, inlink_pairs
from beamcrawl.transforms.storage.records import inlinks as inlinks_record

__all__ = ['InvertLinks', 'InvertMapper', 'InlinksReducer', 'PARSE_INPUT', 'OLD_INPUT']


PARSE_INPUT, OLD_INPUT = 'parse_data', 'old'    # the tags of units.Unit

# The items of the map side, per target URL, told apart by their Python type (plain values:
# typed wrappers would cost more than the rest of the map side, engine/items.py):
NewInlink = Pair                   # (from_url, anchor): one inverted outlink
OldInlinks = List[Pair]            # an old entry, decoded: its (from_url, anchor) pairs
OldRaw = bytes                     # an old entry as its encoded bytes (copied when unchanged)

class InvertMapper(Mapper):
    """reducers.Mapper of invertlinks: parse_data units → (target, (from_url, anchor)) for every
    outlink `invert` keeps; linkdb units (an old version partitioned otherwise) →
    (url, OldRaw) or (url, OldInlinks)."""

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
        # the URL and the outlinks of each page, read by hand (container.read_outlinks)
        for url, links in container.read_outlinks(unit.path, unit.blocks):
            for target, pair in invert(url, links, self.rules, self.policy,
                                       normalize=self.normalize, filter_urls=self.filter_urls):
                inverted += 1
                yield target, pair
        counts.inc(metrics.LINKDB_INVERTED, inverted)

    @staticmethod
    def old_item(record, raw, counts):  # pylint: disable=unused-argument
        if raw is not None:
            yield record['url'], raw
        else:
            yield record['url'], inlink_pairs(record)


class InlinksReducer(JoinReducer):
    """reducers.Reducer of invertlinks: the inlinks of each target of a partition, merged with its
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
            capped = cap_inlinks(pairs, self.max_inlinks)
            raw = encode_inlinks(url, capped)       # fastavro's bytes, by hand (inlinkscodec)
            if raw is None:
                out.write(inlinks_record(url, capped))
            else:
                out.write_raw(raw, url)

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
        for url in sorted(groups):              # (sorting the URLs alone: half the cost)
            values = groups[url]
            if len(values) == 1:
                kind = type(values[0])
                if kind is tuple:                   # one new inlink: the usual case
                    self._write(url, values, out)
                    continue
                if kind is bytes:
                    out.write_raw(values[0], url)
                    continue
            pairs = set()
            for value in values:
                if type(value) is tuple:            # pylint: disable=unidiomatic-typecheck
                    pairs.add(value)
                elif type(value) is bytes:          # pylint: disable=unidiomatic-typecheck
                    pairs.update(inlink_pairs(self.decode(value)))
                else:
                    pairs.update(value)
            self._write(url, pairs, out)
        counts.inc(metrics.LINKDB_PARTS_WRITTEN)


# A parsed page (its outlinks inverted) costs about as much as this many crawldb records: for
# sizing the work only (runner.local.parallel.records).
_PAGE_WEIGHT = 4


class InvertLinks(beam.PTransform):
    """PBegin → PCollection[part file]: inverts the outlinks of parse_data parts into the linkdb
    `linkdb`, writing its new version `out`.

    Args (keyword-only):
      linkdb: the linkdb (its readable version is read).
      out: the version being written (DbLayout.update()).
      parse_data_files: parse_data part files of the segments inverted.
      rules: ignore internal/external links, anchor length, inlink cap.
      policy: URL normalizers and filters (when normalize / filter_urls).
      partitions: linkdb.partitions.
      normalize, filter_urls: apply them to sources and targets.

    `weight` is the size of the work in crawldb records, for sizing the run (make_pipeline).
    """

    def __init__(self, *, linkdb: DbLayout, out: DbUpdate, parse_data_files: Sequence[str],
                 rules: LinkRules, policy: Optional[UrlPolicy], partitions: int,
                 normalize: bool = False, filter_urls: bool = False):
        super().__init__()
        self.linkdb, self.out, self.rules, self.partitions = linkdb, out, rules, partitions
        self.mapper = InvertMapper(rules, policy, normalize, filter_urls)
        self.new_units = avro_units([(PARSE_INPUT, f) for f in parse_data_files],
                                    schema=PARSE_DATA_SCHEMA,
                                    per_unit=RECORDS_PER_UNIT // _PAGE_WEIGHT)
        # A linkdb partitioned the same way is merged part by part; another is mapped whole.
        self.old_parts = partitions_mod.aligned_parts(linkdb, partitions)
        self.old_units = [] if self.old_parts else avro_units(
            [(OLD_INPUT, f) for f in linkdb.part_files()], schema=INLINKS_SCHEMA,
            per_unit=RECORDS_PER_UNIT, first_index=len(self.new_units))
        self.weight = (_PAGE_WEIGHT * sum(u.records for u in self.new_units)
                       + sum(u.records for u in self.old_units))

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        return pbegin | 'MapReduce' >> MapReduce(
            units=self.new_units + self.old_units, mapper=self.mapper,
            reducer=InlinksReducer(self.rules.max_inlinks, self.old_parts),
            partitions=self.partitions, out=self.out)
