"""webgraph (Nutch's WebGraph): the outlinks of parsed segments, their inlinks and a node per URL,
in the webgraphdb (docs/crawl-dir.md, "webgraphdb"; docs/link-analysis.md).

`WebGraph` is the stage: two MapReduces (engine/mapreduce.py) in one pipeline.

1. Outlinks: the outlinks of the segments' parse_data (and, with link.delete.gone, their
   crawl_fetch records of gone and redirected pages) merged with the current outlinks, per
   source URL: the most recent parse's links win, filtered by policy/linkrank.py
   `select_outlinks` (`OutlinksReducer`).
2. Inlinks and nodes, from the outlinks just written: each link inverted, and per URL a node
   with its numbers of inlinks and outlinks (`NodesReducer` writes both parts of a partition).

Every part of a version holds the URLs u with crc32(u) mod N == its number, sorted by URL, N in
each directory's `_partitions` note: LinkRank reads a partition's nodes beside its outlinks.
"""

from typing import Optional, Sequence

import apache_beam as beam

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.engine.mapreduce import MapReduce
from beamcrawl.transforms.engine.reducers import Mapper, Reducer
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, avro_units
from beamcrawl.transforms.parse import FETCH_TIME_KEY
from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.linkrank import GraphRules, first_outlinks, newest, select_outlinks
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage import container
from beamcrawl.transforms.storage.databases import PARTITIONS_NOTE, DbUpdate
from beamcrawl.transforms.storage.fs import join, part_file
from beamcrawl.transforms.storage.layout import INLINKS, NODES, OUTLINKS
from beamcrawl.transforms.storage.partwriter import PartWriter
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, INLINKS_SCHEMA, NODE_SCHEMA,
                                                  OUTLINKS_SCHEMA, PARSE_DATA_SCHEMA)

__all__ = ['WebGraph', 'OutlinksMapper', 'OutlinksReducer', 'NodesMapper', 'NodesReducer',
           'GONE_STATUSES']

PARSE_INPUT, FETCH_INPUT, OLD_INPUT = 'parse_data', 'crawl_fetch', 'old'
# crawl_fetch statuses whose page's outlinks link.delete.gone removes (as Nutch's WebGraph)
GONE_STATUSES = frozenset({'fetch_redir_temp', 'fetch_redir_perm', 'fetch_gone'})
GONE = None                      # the map side's item for a gone page (Python types tell items
                                 # apart: engine/items.py)


class OutlinksMapper(Mapper):
    """parse_data → (source, (fetch time, links)); crawl_fetch → (url, GONE) for a gone page;
    the current outlinks → (source, (fetch time, links)). With normalize / filter_urls, sources
    and targets go through the URL policy (a rejected source drops its links)."""

    def __init__(self, policy: Optional[UrlPolicy], normalize: bool, filter_urls: bool,
                 now: int):
        self.policy, self.normalize, self.filter_urls = policy, normalize, filter_urls
        self.now = now

    def _clean(self, url: str) -> Optional[str]:
        if not (self.normalize or self.filter_urls):
            return url
        return self.policy.clean(url, normalize=self.normalize, filter=self.filter_urls)[0]

    def _links(self, links):
        for url, anchor in links:
            url = self._clean(url)
            if url is not None:
                yield url, anchor

    def map(self, unit, counts):
        for record, _ in container.read_records(unit.path, unit.blocks, with_raw=False):
            url = self._clean(record['url'])
            if url is None:
                counts.inc(metrics.WEBGRAPH_REJECTED)
                continue
            if unit.tag == FETCH_INPUT:
                if record['status'] in GONE_STATUSES:
                    yield url, GONE
            elif unit.tag == OLD_INPUT:
                yield url, (record['fetch_time'], tuple(self._links(
                    (o['to_url'], o['anchor']) for o in record['outlinks'])))
            else:
                links = first_outlinks(self._links(
                    (o['to_url'], o['anchor']) for o in record['outlinks']))
                if links:
                    yield url, (_fetch_time(record, self.now), tuple(links))


def _fetch_time(parse_data: dict, now: int) -> int:
    """The fetch time of a parse (its metadata's _ftk_), else now (as Nutch)."""
    try:
        return int((parse_data.get('metadata') or {}).get(FETCH_TIME_KEY))
    except (TypeError, ValueError):
        return now


class OutlinksReducer(Reducer):
    """Per source URL of a partition: nothing when the page is gone, else the links of its most
    recent parse that the rules keep (policy/linkrank.py), as one Outlinks record."""

    def __init__(self, rules: GraphRules, domains: DomainHelper):
        self.rules, self.domains = rules, domains

    def reduce(self, index, groups, path, counts):
        lookup, known = self.domains.url_domain, {}

        def domain_of(url):        # a target is linked from several pages of the partition
            domain = known.get(url)
            if domain is None:
                domain = known[url] = lookup(url)
            return domain
        with PartWriter(path, OUTLINKS_SCHEMA) as out:
            for url in sorted(groups):
                values = groups[url]
                if any(v is GONE for v in values):
                    counts.inc(metrics.WEBGRAPH_GONE)
                    continue
                fetch_time, links = newest(values)
                kept = select_outlinks(url, links, self.rules, domain_of)
                counts.inc(metrics.WEBGRAPH_IGNORED, len(links) - len(kept))
                if kept:
                    counts.inc(metrics.WEBGRAPH_OUTLINKS, len(kept))
                    out.write({'url': url, 'fetch_time': fetch_time,
                               'outlinks': [{'to_url': u, 'anchor': a} for u, a in kept]})


class NodesMapper(Mapper):
    """Outlinks → (source, its number of outlinks) and (target, (source, anchor)) per link."""

    def map(self, unit, counts):
        for record, _ in container.read_records(unit.path, unit.blocks, with_raw=False):
            source, links = record['url'], record['outlinks']
            yield source, len(links)
            for link in links:
                yield link['to_url'], (source, link['anchor'])


class NodesReducer(Reducer):
    """Per URL of a partition: its node (numbers of inlinks and outlinks, score 0 as Nutch's
    NodeDb) in the nodes part, its inlinks (sorted by source) in the inlinks part."""

    def __init__(self, inlinks_dir: str):
        self.inlinks_dir = inlinks_dir

    def reduce(self, index, groups, path, counts):
        with PartWriter(path, NODE_SCHEMA) as nodes, \
                PartWriter(part_file(self.inlinks_dir, index), INLINKS_SCHEMA) as inlinks:
            for url in sorted(groups):
                num_outlinks, pairs = 0, []
                for value in groups[url]:
                    if type(value) is int:           # pylint: disable=unidiomatic-typecheck
                        num_outlinks += value
                    else:
                        pairs.append(value)
                pairs.sort()
                if pairs:
                    inlinks.write({'url': url, 'inlinks': [{'from_url': f, 'anchor': a}
                                                           for f, a in pairs]})
                nodes.write({'url': url, 'num_inlinks': len(pairs),
                             'num_outlinks': num_outlinks, 'inlink_score': 0.0})
                counts.inc(metrics.WEBGRAPH_NODES)


# A parsed page costs about as much as this many crawldb records (for sizing the work only).
_PAGE_WEIGHT = 4


class WebGraph(beam.PTransform):
    """PBegin → PCollection[nodes part file]: builds a new webgraphdb version `out` from the
    parse_data (and crawl_fetch) parts of segments and the current outlinks.

    Args (keyword-only):
      out: the version being written (DbLayout.update(parts_in=NODES)).
      parse_data_files, crawl_fetch_files: parts of the segments added (crawl_fetch only with
        link.delete.gone).
      old_outlinks_files: the outlinks parts of the current version.
      rules: policy/linkrank.py GraphRules.
      domains: registrable domains (policy/domains.py).
      policy, normalize, filter_urls: the URL normalizers and filters, when asked.
      partitions: webgraph.partitions.
      now: the fetch time of a parse that does not say its own.
    """

    def __init__(self, *, out: DbUpdate, parse_data_files: Sequence[str],
                 crawl_fetch_files: Sequence[str], old_outlinks_files: Sequence[str],
                 rules: GraphRules, domains: DomainHelper, policy: Optional[UrlPolicy],
                 normalize: bool, filter_urls: bool, partitions: int, now: int):
        super().__init__()
        self.out, self.rules, self.domains, self.partitions = out, rules, domains, partitions
        self.mapper = OutlinksMapper(policy, normalize, filter_urls, now)
        per = RECORDS_PER_UNIT // _PAGE_WEIGHT
        self.units = avro_units([(PARSE_INPUT, f) for f in parse_data_files],
                                schema=PARSE_DATA_SCHEMA, per_unit=per)
        self.units += avro_units([(FETCH_INPUT, f) for f in crawl_fetch_files],
                                 schema=CRAWL_DATUM_SCHEMA, per_unit=RECORDS_PER_UNIT,
                                 first_index=len(self.units))
        self.units += avro_units([(OLD_INPUT, f) for f in old_outlinks_files],
                                 schema=OUTLINKS_SCHEMA, per_unit=per,
                                 first_index=len(self.units))
        self.weight = _PAGE_WEIGHT * sum(u.records for u in self.units)

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        inlinks_dir = join(self.out.dir, INLINKS)
        outlinks = _sub_update(self.out, OUTLINKS)
        nodes = _sub_update(self.out, NODES)
        DbUpdate(inlinks_dir).write_note(PARTITIONS_NOTE, str(self.partitions))
        written = pbegin | 'Outlinks' >> MapReduce(
            units=self.units, mapper=self.mapper,
            reducer=OutlinksReducer(self.rules, self.domains),
            partitions=self.partitions, out=outlinks)
        return written | 'InlinksAndNodes' >> MapReduce(
            units=_outlinks_units, mapper=NodesMapper(), reducer=NodesReducer(inlinks_dir),
            partitions=self.partitions, out=nodes)


def _outlinks_units(paths):
    return avro_units([('outlinks', p) for p in sorted(paths)], schema=OUTLINKS_SCHEMA,
                      per_unit=RECORDS_PER_UNIT // _PAGE_WEIGHT)


def _sub_update(out: DbUpdate, name: str) -> DbUpdate:
    """A directory of the version being written, as a DbUpdate for MapReduce; its spill files
    go into the version's scratch directory (removed when the update ends)."""
    sub = DbUpdate(join(out.dir, name))
    sub.scratch = join(out.scratch, name)
    return sub
