"""linkrank, scoreupdater, nodedumper (Nutch's LinkRank, ScoreUpdater, NodeDumper) over the
webgraphdb (docs/link-analysis.md).

`LinkRank` is the stage: its iterations, one MapReduce (engine/mapreduce.py) each, chained in one
pipeline. Iteration k maps partition i's nodes (their scores after iteration k-1) beside the same
partition's outlinks: each node goes to itself, and its score divided by its outdegree to each
target (Nutch's Inverter); the reduce side applies the formula of policy/linkrank.py to every
node of a partition (Nutch's Analyzer) and writes the partition's nodes with their new scores,
and a note of how much they changed (`Convergence`), which the command logs per iteration.

`ScoreUpdater` joins the crawldb with the node scores into a new crawldb version; `TopNodes`
is nodedumper's sort or grouping.
"""

import json
from typing import Callable, List, Optional, Sequence

import apache_beam as beam

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.engine import partitions as partitions_mod
from beamcrawl.transforms.engine.mapreduce import MapReduce
from beamcrawl.transforms.engine.reducers import Mapper, Reducer
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, Unit, avro_units
from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.linkrank import (DUMP_KINDS, Convergence, RankParams, aggregate,
                                                  counted_inlinks, group_key, limit_keys,
                                                  linkrank_score, outlink_share)
from beamcrawl.transforms.runners.runtime import workers_of
from beamcrawl.transforms.storage import container, fs
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.fs import basename, join, part_file
from beamcrawl.transforms.storage.parts import ReadParts
from beamcrawl.transforms.storage.partwriter import PartWriter
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, NODE_SCHEMA, complete_datum

__all__ = ['LinkRank', 'RankMapper', 'RankReducer', 'read_convergence', 'ScoreUpdater',
           'TopNodes']


class RankMapper(Mapper):
    """A partition's nodes beside its outlinks → (url, (inlinks, outlinks, score)) per node and
    (target, (source, share)) per outlink. In the first iteration every node starts at the
    initial score (Nutch's Initializer)."""

    def __init__(self, outlinks_dir: str, initial: Optional[float]):
        self.outlinks_dir, self.initial = outlinks_dir, initial

    def map(self, unit, counts):
        targets = {}
        outlinks = join(self.outlinks_dir, basename(unit.path))
        for record, _ in container.read_records(outlinks, with_raw=False):
            targets[record['url']] = [o['to_url'] for o in record['outlinks']]
        initial = self.initial
        for node, _ in container.read_records(unit.path, with_raw=False):
            url, degree = node['url'], node['num_outlinks']
            score = node['inlink_score'] if initial is None else initial
            yield url, (node['num_inlinks'], degree, score)
            if degree > 0:
                share = outlink_share(score, degree)
                for target in targets.get(url, ()):
                    yield target, (url, share)


_LIMIT_KEYS: dict = {}
_LIMIT_KEYS_MAX = 2_000_000


class RankReducer(Reducer):
    """A partition's nodes with their new scores (policy/linkrank.py), and a note of how much
    they changed (`stats_dir`/part-NNNNN.json: a Convergence as JSON)."""

    def __init__(self, params: RankParams, domains: DomainHelper, stats_dir: str):
        self.params, self.domains, self.stats_dir = params, domains, stats_dir

    def reduce(self, index, groups, path, counts):
        params, change = self.params, Convergence()
        domain_of = self.domains.url_domain
        # A source's limit keys, remembered by the worker process over partitions and
        # iterations (each iteration has its own copy of this reducer, and of its DomainHelper).
        remembered = _LIMIT_KEYS.setdefault((params.limit_page, params.limit_domain,
                                             self.domains.extra_suffixes), {})
        if len(remembered) > _LIMIT_KEYS_MAX:
            remembered.clear()

        def keys_of(source):
            keys = remembered.get(source)
            if keys is None:
                keys = remembered[source] = limit_keys(source, params, domain_of)
            return keys
        ignored = 0
        with PartWriter(path, NODE_SCHEMA) as out:
            for url in sorted(groups):
                node, inlinks = None, []
                for value in groups[url]:
                    if len(value) == 3:
                        node = value
                    else:
                        inlinks.append(value)
                if node is None:
                    continue                  # cannot be: every target is a node
                counted = counted_inlinks(inlinks, params, keys_of)
                ignored += len(inlinks) - len(counted)
                score = linkrank_score(sum(share for _, share in counted), params)
                change.add(node[2], score)
                out.write({'url': url, 'num_inlinks': node[0], 'num_outlinks': node[1],
                           'inlink_score': score})
        counts.inc(metrics.LINKRANK_NODES, change.nodes)
        counts.inc(metrics.LINKRANK_IGNORED, ignored)
        fs.write_file(join(self.stats_dir, f'part-{index:05d}.json'),
                      json.dumps(change.as_dict()).encode('ascii'), replace=True)


def read_convergence(stats_dir: str) -> Convergence:
    """The Convergence of an iteration: its partitions' notes summed."""
    total = Convergence()
    for path in fs.list_files(join(stats_dir, 'part-*.json')):
        total = total.merge(Convergence.from_dict(json.loads(fs.read_file(path))))
    return total


def _partition_units(paths: Sequence[str]) -> List[Unit]:
    """One unit per partition: its nodes part (the outlinks part has the same name)."""
    return [Unit(i, 'nodes', p) for i, p in enumerate(sorted(paths))]


class LinkRank(beam.PTransform):
    """PBegin → PCollection[nodes part file]: `iterations` LinkRank iterations over the nodes
    `nodes_files` (partitioned as the outlinks in `outlinks_dir`), the last one writing the
    nodes directory `out_dir`, the others directories of `scratch`; iteration k's Convergence
    is in `stats_dir(k)` (read_convergence).

    Args (keyword-only):
      first: the number of the first iteration here (1: every node starts at params.initial;
        later: at the score it has in nodes_files).
    """

    def __init__(self, *, nodes_files: Sequence[str], outlinks_dir: str, out_dir: str,
                 scratch: str, params: RankParams, domains: DomainHelper, iterations: int,
                 first: int = 1):
        super().__init__()
        self.nodes_files = sorted(nodes_files)
        self.outlinks_dir, self.out_dir, self.scratch = outlinks_dir, out_dir, scratch
        self.params, self.domains = params, domains
        self.iterations, self.first = iterations, first
        self.partitions = len(self.nodes_files)

    def stats_dir(self, iteration: int) -> str:
        return join(self.scratch, f'stats-{iteration:04d}')

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        written, previous = pbegin, None
        last = self.first + self.iterations - 1
        for k in range(self.first, last + 1):
            if k == last:
                out = DbUpdate(self.out_dir)
                out.scratch = join(self.scratch, 'spills-last')
            else:
                out = DbUpdate(join(self.scratch, f'iteration-{k:04d}'))
            units = _partition_units(self.nodes_files if k == self.first else
                                     [part_file(previous, i) for i in range(self.partitions)])
            previous = out.dir
            written = written | f'Iteration{k}' >> MapReduce(
                units=units,
                mapper=RankMapper(self.outlinks_dir,
                                  self.params.initial if k == 1 else None),
                reducer=RankReducer(self.params, self.domains, self.stats_dir(k)),
                partitions=self.partitions, out=out)
        return written


# --- scoreupdater ----------------------------------------------------------------------------

CRAWLDB_INPUT, NODES_INPUT = 'crawldb', 'nodes'


class ScoreMapper(Mapper):
    """crawldb records → (url, record); nodes → (url, score)."""

    def map(self, unit, counts):
        for record, _ in container.read_records(unit.path, unit.blocks, with_raw=False):
            if unit.tag == NODES_INPUT:
                yield record['url'], float(record['inlink_score'])
            else:
                yield record['url'], complete_datum(record)


class ScoreReducer(Reducer):
    """Each crawldb record of a partition with its node's score, or `clear_score` when the
    graph has no node for it (Nutch's ScoreUpdater); a node without a record adds nothing."""

    def __init__(self, clear_score: float):
        self.clear_score = clear_score

    def reduce(self, index, groups, path, counts):
        with PartWriter(path, CRAWL_DATUM_SCHEMA, keys=True) as out:
            for url in sorted(groups):
                record, score = None, None
                for value in groups[url]:
                    if type(value) is float:         # pylint: disable=unidiomatic-typecheck
                        score = value
                    else:
                        record = value
                if record is None:
                    counts.inc(metrics.SCOREUPDATER_NOT_IN_DB)
                    continue
                if score is None:
                    counts.inc(metrics.SCOREUPDATER_CLEARED)
                    score = self.clear_score
                else:
                    counts.inc(metrics.SCOREUPDATER_SCORED)
                out.write({**record, 'score': score})
                counts.inc(metrics.CRAWLDB_RECORDS)


class ScoreUpdater(beam.PTransform):
    """PBegin → PCollection[crawldb part file]: the crawldb `crawldb` with the scores of the
    webgraphdb's `nodes_files`, written as the crawldb version `out`.

    Args (keyword-only):
      clear_score: link.score.updater.clear.score.
      partitions: crawldb.partitions (0: chosen from the records and the workers).
    """

    def __init__(self, *, crawldb: DbLayout, nodes_files: Sequence[str], out: DbUpdate,
                 clear_score: float, partitions: int):
        super().__init__()
        self.crawldb, self.out, self.partitions = crawldb, out, partitions
        self.clear_score = clear_score
        self.units = avro_units([(CRAWLDB_INPUT, f) for f in crawldb.part_files()],
                                schema=CRAWL_DATUM_SCHEMA, per_unit=RECORDS_PER_UNIT)
        self.units += avro_units([(NODES_INPUT, f) for f in nodes_files], schema=NODE_SCHEMA,
                                 per_unit=RECORDS_PER_UNIT, first_index=len(self.units))
        self.weight = sum(u.records for u in self.units)

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        plan = partitions_mod.plan(self.crawldb, setting=self.partitions, records=self.weight,
                                   workers=workers_of(pbegin.pipeline), remap=True)
        return pbegin | 'MapReduce' >> MapReduce(
            units=self.units, mapper=ScoreMapper(), reducer=ScoreReducer(self.clear_score),
            partitions=plan.count, out=self.out)


# --- nodedumper --------------------------------------------------------------------------------

class TopNodes(beam.PTransform):
    """PBegin → PCollection[str]: nodedumper's lines `name<TAB>value`, the highest `n` values
    first (ties by name): per node URL, or per host or domain (`group_by`) with the sum or the
    maximum (`how`) of its nodes' values. `kind`: scores, inlinks or outlinks."""

    def __init__(self, *, nodes_files: Sequence[str], kind: str, n: int,
                 group_by: Optional[str], how: str, domains: DomainHelper,
                 separator: str = '\t'):
        super().__init__()
        self.read = ReadParts(list(nodes_files))
        self.field, self.n, self.group_by, self.how = DUMP_KINDS[kind], n, group_by, how
        self.domains, self.separator = domains, separator

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        field, group_by, domains = self.field, self.group_by, self.domains
        values = pbegin | 'Read' >> self.read
        if group_by is None:
            pairs = values | 'Values' >> beam.Map(lambda node: (node['url'], float(node[field])))
        else:
            how = self.how
            pairs = (values
                     | 'ByGroup' >> beam.FlatMap(_grouped(group_by, field, domains))
                     | 'Group' >> beam.GroupByKey()
                     | 'Aggregate' >> beam.MapTuple(lambda name, vs: (name, aggregate(vs, how))))
        separator = self.separator
        return (pairs
                | 'Top' >> beam.combiners.Top.Of(self.n, key=lambda p: (p[1], _Desc(p[0])))
                | 'Lines' >> beam.FlatMap(
                    lambda top: [f'{name}{separator}{value:.6g}' for name, value in top]))


def _grouped(group_by: str, field: str, domains: DomainHelper) -> Callable:
    def name_value(node):
        name = group_key(node['url'], group_by, domains.url_domain)
        if name:
            yield name, float(node[field])
    return name_value


class _Desc:
    """A string ordered backwards: Top.Of keeps the largest keys, and among equal values the
    smallest name should come first."""

    __slots__ = ('s',)

    def __init__(self, s: str):
        self.s = s

    def __lt__(self, other):
        return self.s > other.s

    def __eq__(self, other):
        return self.s == other.s
