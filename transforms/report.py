"""The data of `beamcrawl report`: one Beam pipeline over the crawldb, the segments and the linkdb,
its figures combines (counts, mins, maxes, top-N) and one join on the batch engine, so that
only small results reach the driver. What is counted per record is policy/report.py; the page is policy/report_html.py.

    crawldb ── CrawlDbStats (readdb --stats); score and fetch-interval histograms;
               URLs and fetched pages per host and domain, top N
    crawldb + segments' crawl_generate, crawl_fetch, crawl_parse ── each URL's discovery
               round (by status) and the change of refetched pages: a join on the batch
               engine (engine/mapreduce.py)
    crawl_fetch ── statuses, pages per second, per host and per politeness queue
    content ── bytes
    linkdb ── in-degree histogram, top pages by inlinks
"""

import functools
import json
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.crawlstats import CountKeys
from beamcrawl.transforms.engine.mapreduce import MapReduce
from beamcrawl.transforms.engine.partitions import partitions_for
from beamcrawl.transforms.engine.reducers import Mapper, Reducer
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, Unit, avro_units
from beamcrawl.transforms.policy import report as policy
from beamcrawl.transforms.policy.politeness import audit_queue
from beamcrawl.transforms.readdb import CrawlDbStats
from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline, workers_of
from beamcrawl.transforms.storage import container, fs
from beamcrawl.transforms.storage.databases import DbUpdate
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import (ReadCrawlDb, ReadParts, check_avro_files,
                                                count_records, iter_records)
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA

__all__ = ['ReportData', 'collect_report']


def _read_tagged():
    """(tag, record) of Avro files given as (tag, path), each file read whole by one task."""
    def read(item) -> Iterator[Tuple[str, dict]]:
        tag, path = item
        for record in iter_records([path]):
            yield tag, record
    return beam.FlatMap(read)


def _rows(kind: str):
    """(key tuple, value) → [kind, key, value] (a 1-tuple key becomes its only element)."""
    def row(kv):
        key, value = kv
        return [kind, key[0] if len(key) == 1 else list(key), value]
    return beam.Map(row)


def _counted(kv) -> list:
    key, n = kv       # key: (kind, k1[, k2...])
    return [key[0], key[1] if len(key) == 2 else list(key[1:]), n]


class _SumTuples(beam.CombineFn):
    """Element-wise sums of equal-length tuples of numbers."""

    def __init__(self, width: int):
        self.width = width

    def create_accumulator(self):
        return [0] * self.width

    def add_input(self, acc, value):
        for i, v in enumerate(value):
            acc[i] += v
        return acc

    def merge_accumulators(self, accs):
        out = [0] * self.width
        for acc in accs:
            for i, v in enumerate(acc):
                out[i] += v
        return out

    def extract_output(self, acc):
        return tuple(acc)


class _RoundsMapper(Mapper):
    """Each URL's items for policy.discovery_round and policy.changes: the crawldb's units →
    (url, ('db', status)); segment i's crawl_generate → ('generated', i, status, signature);
    its crawl_fetch → ('fetched', i, status), or ('linked', i) for a redirect target; its
    crawl_parse → ('linked', i) and ('signature', i, signature). Unit tags are `db` and
    `PART:i`."""

    def map(self, unit: Unit, counts) -> Iterator[Tuple[str, tuple]]:
        read = container.read_records
        if unit.tag == 'db':
            for record, _ in read(unit.path, unit.blocks, with_raw=False):
                yield record['url'], ('db', record['status'])
            return
        part, index = unit.tag.split(':')
        at = int(index)
        for record, _ in read(unit.path, unit.blocks, with_raw=False):
            status = record['status']
            if status == 'linked':
                yield record['url'], ('linked', at)
            elif part == 'crawl_generate':
                yield record['url'], ('generated', at, status, record.get('signature'))
            elif part == 'crawl_fetch':
                yield record['url'], ('fetched', at, status)
            elif status == 'signature':
                yield record['url'], ('signature', at, record.get('signature'))


class _RoundsReducer(Reducer):
    """A partition's URLs → its rows ['discovered', [round, status], n] and ['change',
    [segment, change], n] as JSON lines, written at `path` (a scratch file the driver reads)."""

    def __init__(self, segments: Sequence[str]):
        self.segments = list(segments)

    def reduce(self, index, groups, path, counts) -> None:
        found: Dict[Tuple[str, str, str], int] = {}
        for items in groups.values():
            status, round_ = policy.discovery_round(items)
            if status is not None:
                key = ('discovered',
                       policy.INJECTED if round_ is None else self.segments[round_], status)
                found[key] = found.get(key, 0) + 1
            for at, change in policy.changes(items):
                key = ('change', self.segments[at], change)
                found[key] = found.get(key, 0) + 1
        with fs.create(path) as f:
            for (kind, a, b), n in sorted(found.items()):
                f.write((json.dumps([kind, [a, b], n]) + '\n').encode())


class ReportData(beam.PTransform):
    """PBegin → PCollection of rows [kind, key, value] (policy/report.py `assemble` reads them).

    Args:
      crawl: the CrawlLayout.
      segments: the segment names to report on, in order.
      quantiles: db.stats.score.quantiles.
      domains: the DomainHelper of the crawl's URL policy.
      top: how many hosts, domains, queues and pages each top list keeps.
      tolerance_ms: the politeness audit's tolerance (as `readseg --politeness`).
      scratch: a scratch directory of the crawl dir for the join's working files and results
        (the caller removes it).
      workers: the pipeline's worker processes (runtime.workers_of), to size the join.
    """

    def __init__(self, crawl: CrawlLayout, segments: Sequence[str], *, quantiles, domains,
                 top: int, tolerance_ms: float, scratch: str, workers: int):
        super().__init__()
        self.crawl, self.segments = crawl, list(segments)
        self.quantiles, self.domains = quantiles, domains
        self.top, self.tolerance_ms = top, tolerance_ms
        self.parts = {part: [(s, f) for s in self.segments if crawl.has_part(s, part)
                             for f in crawl.part_files(s, part)]
                      for part in ('crawl_generate', 'crawl_fetch', 'crawl_parse', 'content')}
        check_avro_files([f for files in self.parts.values() for _, f in files])
        index = {name: i for i, name in enumerate(self.segments)}
        inputs = [('db', f) for f in crawl.crawldb.part_files()]
        inputs += [(f'{part}:{index[s]}', f)
                   for part in ('crawl_generate', 'crawl_fetch', 'crawl_parse')
                   for s, f in self.parts[part]]
        self.round_units = avro_units(inputs, schema=CRAWL_DATUM_SCHEMA,
                                      per_unit=RECORDS_PER_UNIT)
        self.round_partitions = partitions_for(0, sum(u.records for u in self.round_units),
                                               workers)
        self.rounds_out = DbUpdate(FileSystems.join(scratch, 'rounds'))

    def _read(self, pbegin, part: str):
        files = self.parts[part]
        return (pbegin
                | f'{part}Files' >> beam.Create(files)
                | f'{part}Spread' >> beam.Reshuffle()
                | f'{part}Read' >> _read_tagged())

    def expand(self, pbegin):
        top, out = self.top, []
        # discovery rounds and the change of refetched pages: a join of every crawldb URL with
        # the segments' records, on the batch engine (spill files per partition, no URL
        # through Beam's shuffle): its memory is a partition's, whatever the crawl's size
        _ = pbegin | 'Rounds' >> MapReduce(units=self.round_units, mapper=_RoundsMapper(),
                                           reducer=_RoundsReducer(self.segments),
                                           partitions=self.round_partitions,
                                           out=self.rounds_out)
        db = pbegin | 'ReadCrawlDb' >> ReadCrawlDb(self.crawl.crawldb)      # counts progress
        out.append(db | 'Stats' >> CrawlDbStats(self.quantiles)
                   | 'StatsRow' >> beam.Map(lambda s: ['crawldb_stats', None, s]))
        out.append(db | 'Hist' >> CountKeys(policy.crawldb_keys)
                   | 'HistRows' >> beam.Map(lambda kv: ['crawldb_hist', list(kv[0]), kv[1]]))
        groups = (db
                  | 'GroupKeys' >> beam.FlatMap(policy.group_keys, self.domains)
                  | 'PerGroup' >> beam.CombinePerKey(_SumTuples(2)))
        out.append(groups
                   | 'GroupMode' >> beam.Map(lambda kv: ('group_count', kv[0][0]))
                   | 'GroupCount' >> beam.combiners.Count.PerElement()
                   | 'GroupCountRows' >> beam.Map(_counted))
        out.append(groups
                   | 'ByMode' >> beam.Map(lambda kv: (kv[0][0], (kv[1][0], kv[0][1], kv[1][1])))
                   | 'TopGroups' >> beam.combiners.Top.PerKey(
                       top, key=lambda t: (t[0], t[2], [-ord(c) for c in t[1]]))
                   | 'TopGroupRows' >> beam.Map(lambda kv: [f'top_{kv[0]}s', None,
                                                            [list(t) for t in kv[1]]]))
        fetch = self._read(pbegin, 'crawl_fetch')
        # fetches
        facts = (fetch
                 | 'Facts' >> beam.Map(lambda sr: (sr[0], policy.fetch_record(sr[1])))
                 | 'Fetches' >> beam.Filter(lambda sf: sf[1] is not None))
        out.append(facts
                   | 'FetchKeys' >> beam.FlatMap(lambda sf: policy.fetch_keys(*sf))
                   | 'CountFetchKeys' >> beam.combiners.Count.PerElement()
                   | 'FetchRows' >> beam.Map(_counted))
        timed = facts | 'Timed' >> beam.Filter(lambda sf: sf[1]['start'] is not None)
        out.append(timed | 'Starts' >> beam.Map(lambda sf: (sf[0], sf[1]['start']))
                   | 'FirstStart' >> beam.CombinePerKey(min)
                   | 'StartRows' >> beam.Map(lambda kv: ['fetch_start', kv[0], kv[1]]))
        out.append(timed | 'Ends' >> beam.Map(lambda sf: (sf[0], sf[1]['end']))
                   | 'LastEnd' >> beam.CombinePerKey(max)
                   | 'EndRows' >> beam.Map(lambda kv: ['fetch_end', kv[0], kv[1]]))
        hosts = (facts
                 | 'HostStats' >> beam.Map(
                     lambda sf: ((sf[0], sf[1]['host']), policy.host_stats(sf[1])))
                 | 'PerHost' >> beam.CombinePerKey(_SumTuples(4)))
        # (segment, (avg ms, host, fetches, failures))
        out.append(hosts
                   | 'WithTime' >> beam.Filter(lambda kv: kv[1][2] > 0)
                   | 'AvgTime' >> beam.Map(lambda kv: (kv[0][0], (kv[1][3] / kv[1][2], kv[0][1],
                                                                   kv[1][0], kv[1][1])))
                   | 'Slowest' >> beam.combiners.Top.PerKey(top)
                   | 'SlowRows' >> beam.Map(lambda kv: ['slowest_hosts', kv[0],
                                                        [list(t) for t in kv[1]]]))
        out.append(hosts
                   | 'WithFailures' >> beam.Filter(lambda kv: kv[1][1] > 0)
                   | 'Failures' >> beam.Map(lambda kv: (kv[0][0], (kv[1][1], kv[0][1],
                                                                   kv[1][0])))
                   | 'MostFailing' >> beam.combiners.Top.PerKey(top)
                   | 'FailRows' >> beam.Map(lambda kv: ['failing_hosts', kv[0],
                                                        [list(t) for t in kv[1]]]))
        tolerance = self.tolerance_ms
        audits = (timed
                  | 'Queued' >> beam.Filter(lambda sf: sf[1]['queue'] and sf[1]['delay'] is
                                            not None)
                  | 'QueueKey' >> beam.Map(lambda sf: ((sf[0], sf[1]['queue']), (
                      sf[1]['start'], sf[1]['end'], sf[1]['delay'])))
                  | 'ByQueue' >> beam.GroupByKey()
                  | 'Audit' >> beam.Map(lambda kv: (kv[0][0], (kv[0][1], audit_queue(
                      list(kv[1]), tolerance)))))
        out.append(audits
                   | 'AuditTop' >> beam.combiners.Top.PerKey(
                       top, key=lambda qa: (qa[1]['violations'], qa[1]['fetches'], qa[0]))
                   | 'AuditRows' >> beam.Map(lambda kv: ['politeness', kv[0],
                                                         [[q, a] for q, a in kv[1]]]))
        out.append(audits
                   | 'AuditCounts' >> beam.FlatMap(lambda sqa: [
                       (('politeness_queues', sqa[0]), 1),
                       (('politeness_violations', sqa[0]), sqa[1][1]['violations'])])
                   | 'AuditSums' >> beam.CombinePerKey(sum)
                   | 'AuditCountRows' >> beam.Map(_counted))
        out.append(self._read(pbegin, 'content')
                   | 'Bytes' >> beam.Map(lambda sr: (sr[0], len(sr[1].get('content') or b'')))
                   | 'SumBytes' >> beam.CombinePerKey(sum)
                   | 'BytesRows' >> beam.Map(lambda kv: ['content_bytes', kv[0], kv[1]]))
        # linkdb
        linkdb_files = self.crawl.linkdb.part_files()
        if linkdb_files:
            degrees = (pbegin
                       | 'ReadLinkDb' >> ReadParts(linkdb_files)
                       | 'InDegree' >> beam.Map(lambda r: (len(r['inlinks']), r['url'])))
            out.append(degrees
                       | 'DegreeBins' >> beam.Map(
                           lambda nu: ('indegree', policy.bin_of(nu[0], policy.INDEGREE_BINS)))
                       | 'CountDegrees' >> beam.combiners.Count.PerElement()
                       | 'DegreeRows' >> beam.Map(_counted))
            out.append(degrees
                       | 'LinkTotals' >> beam.Map(lambda nu: (1, nu[0]))
                       | 'SumLinks' >> beam.CombineGlobally(_SumTuples(2))
                       | 'LinkTotalRows' >> beam.FlatMap(lambda t: [['linkdb_total', None, t[0]],
                                                                    ['linkdb_inlinks', None,
                                                                     t[1]]]))
            out.append(degrees
                       | 'TopLinked' >> beam.combiners.Top.Of(
                           top, key=lambda nu: (nu[0], [-ord(c) for c in nu[1]]))
                       | 'TopLinkedRows' >> beam.Map(lambda t: ['top_linked', None,
                                                                [list(x) for x in t]]))
        return tuple(out) | 'AllRows' >> beam.Flatten()


def collect_report(crawl_dir: str, cfg, beam_args: Sequence[str], *, domains, top: int,
                   tolerance_ms: float) -> dict:
    """Runs the report's pipeline over a crawl dir and returns policy.assemble's dict
    (`domains`: the DomainHelper of the crawl's URL policy). A crawl dir without a crawldb is a
    UserError (exit 2)."""
    from beamcrawl.transforms.base.errors import UserError
    crawl = CrawlLayout(crawl_dir)
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    segments = crawl.segment_names()
    scratch = crawl.scratch_dir('report')
    records = count_records(crawl.crawldb.part_files())
    p = make_pipeline(beam_args, cfg, records)
    data = ReportData(crawl, segments, quantiles=cfg['db.stats.score.quantiles'],
                      domains=domains, top=top, tolerance_ms=tolerance_ms, scratch=scratch,
                      workers=workers_of(p))
    rows: List[Any] = [['part_records', [s, part], count_records(crawl.part_files(s, part))]
                       for s in segments for part in ('crawl_generate', 'crawl_fetch',
                                                      'parse_data')
                       if crawl.has_part(s, part)]
    _ = (p
         | 'Report' >> data
         | 'Json' >> beam.Map(functools.partial(json.dumps, ensure_ascii=False))
         | 'Write' >> beam.io.WriteToText(FileSystems.join(scratch, 'rows')))
    try:
        run_pipeline(p, 'report')
        for path in (fs.list_files(FileSystems.join(scratch, 'rows*')) +
                     fs.list_files(FileSystems.join(data.rounds_out.dir, 'part-*'))):
            with FileSystems.open(path) as f:
                rows += [json.loads(line) for line in f.read().decode('utf-8').splitlines()]
    finally:
        fs.delete(scratch)
    return policy.assemble(rows, applied=crawl.crawldb.applied_segments(), segments=segments,
                           linkdb_applied=crawl.linkdb.applied_segments(), top=top)
