"""The data of `beamcrawl report`: one Beam pipeline over the crawldb, the segments and the linkdb,
every figure a combine (counts, mins, maxes, top-N), so that only small results reach the
driver. What is counted per record is policy/report.py; the page is policy/report_html.py.

    crawldb ── CrawlDbStats (readdb --stats); score and fetch-interval histograms;
               URLs and fetched pages per host and domain, top N
    crawldb + segments' crawl_generate and linked records ── each URL's discovery round
    crawl_fetch ── statuses, pages per second, per host and per politeness queue
    content ── bytes; crawl_generate + crawl_fetch + crawl_parse ── change of refetched pages
    linkdb ── in-degree histogram, top pages by inlinks
"""

import functools
import json
from typing import Any, Iterator, List, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.crawlstats import CountKeys
from beamcrawl.transforms.policy import report as policy
from beamcrawl.transforms.policy.politeness import audit_queue
from beamcrawl.transforms.readdb import CrawlDbStats
from beamcrawl.transforms.runners import progress
from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import (ReadCrawlDb, ReadParts, check_avro_files,
                                                count_records, iter_records)

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


class _FirstRounds(beam.CombineFn):
    """(kind, round index) values of a URL → (first round that linked to it, first round that
    generated it); None where none did."""

    def create_accumulator(self):
        return [None, None]

    def add_input(self, acc, value):
        slot = 0 if value[0] == 'linked' else 1
        acc[slot] = value[1] if acc[slot] is None else min(acc[slot], value[1])
        return acc

    def merge_accumulators(self, accs):
        out = [None, None]
        for acc in accs:
            for slot in (0, 1):
                if acc[slot] is not None:
                    out[slot] = acc[slot] if out[slot] is None else min(out[slot], acc[slot])
        return out

    def extract_output(self, acc):
        return tuple(acc)


def _discovered(item, segments: Sequence[str]):
    """(url, {'db': [status], 'rounds': [(linked, generated)]}) → the (round, status) the URL
    adds 1 to: the first round that linked to it before any round fetched it (a URL generated
    before anything linked to it came from inject or a sitemap)."""
    _, grouped = item
    for status in grouped['db']:
        round_ = policy.INJECTED
        for linked, generated in grouped['rounds']:
            if linked is not None and (generated is None or linked < generated):
                round_ = segments[linked]
        yield ('discovered', round_, status)


class _CountFn(beam.DoFn):
    """Reports the records it sees to a progress Reporter (emits nothing)."""

    def __init__(self, done: progress.Reporter):
        self.done = done

    def start_bundle(self):
        self._ticker = progress.Ticker(self.done)

    def process(self, record):
        self._ticker.tick()
        return ()

    def finish_bundle(self):
        self._ticker.flush()


def _change(item):
    (segment, _), grouped = item
    generated = grouped['generate'][0] if grouped['generate'] else None
    fetched = grouped['fetch'][0] if grouped['fetch'] else None
    signature = grouped['signature'][0] if grouped['signature'] else None
    change = policy.change_of(generated, fetched, signature)
    return [('change', segment, change)] if change else []


class ReportData(beam.PTransform):
    """PBegin → PCollection of rows [kind, key, value] (policy/report.py `assemble` reads them).

    Args:
      crawl: the CrawlLayout.
      segments: the segment names to report on, in order.
      quantiles: db.stats.score.quantiles.
      domains: the DomainHelper of the crawl's URL policy.
      top: how many hosts, domains, queues and pages each top list keeps.
      tolerance_ms: the politeness audit's tolerance (as `readseg --politeness`).
    """

    def __init__(self, crawl: CrawlLayout, segments: Sequence[str], *, quantiles, domains,
                 top: int, tolerance_ms: float):
        super().__init__()
        self.crawl, self.segments = crawl, list(segments)
        self.quantiles, self.domains = quantiles, domains
        self.top, self.tolerance_ms = top, tolerance_ms
        self.records = count_records(crawl.crawldb.part_files())
        self.parts = {part: [(s, f) for s in self.segments if crawl.has_part(s, part)
                             for f in crawl.part_files(s, part)]
                      for part in ('crawl_generate', 'crawl_fetch', 'crawl_parse', 'content')}
        check_avro_files([f for files in self.parts.values() for _, f in files])

    def _read(self, pbegin, part: str):
        files = self.parts[part]
        return (pbegin
                | f'{part}Files' >> beam.Create(files)
                | f'{part}Spread' >> beam.Reshuffle()
                | f'{part}Read' >> _read_tagged())

    def expand(self, pbegin):
        top, out = self.top, []
        db = pbegin | 'ReadCrawlDb' >> ReadCrawlDb(self.crawl.crawldb)
        _ = db | 'Progress' >> beam.ParDo(_CountFn(progress.stage(
            pbegin.pipeline, 'crawldb', self.records, 'records')))
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
        index = {s: i for i, s in enumerate(self.segments)}
        fetch = self._read(pbegin, 'crawl_fetch')
        generate = self._read(pbegin, 'crawl_generate')
        parse = self._read(pbegin, 'crawl_parse')
        # discovery rounds
        linked = ((fetch, parse)
                  | 'LinkedAll' >> beam.Flatten()
                  | 'Linked' >> beam.Filter(lambda sr: sr[1]['status'] == 'linked')
                  | 'LinkedRound' >> beam.Map(lambda sr: (sr[1]['url'], ('linked', index[sr[0]]))))
        generated = generate | 'GenRound' >> beam.Map(
            lambda sr: (sr[1]['url'], ('generated', index[sr[0]])))
        rounds = ((linked, generated)
                  | 'RoundsAll' >> beam.Flatten()
                  | 'FirstRounds' >> beam.CombinePerKey(_FirstRounds()))
        statuses = db | 'DbStatus' >> beam.Map(lambda r: (r['url'], r['status']))
        out.append({'db': statuses, 'rounds': rounds}
                   | 'JoinRounds' >> beam.CoGroupByKey()
                   | 'Discovered' >> beam.FlatMap(_discovered, self.segments)
                   | 'CountDiscovered' >> beam.combiners.Count.PerElement()
                   | 'DiscoveredRows' >> beam.Map(_counted))
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
        # change of pages fetched again
        keyed = {
            'generate': generate | 'GenKey' >> beam.Map(lambda sr: ((sr[0], sr[1]['url']), {
                'status': sr[1]['status'], 'signature': sr[1]['signature']})),
            'fetch': fetch | 'FetchKey' >> beam.Map(lambda sr: ((sr[0], sr[1]['url']), {
                'status': sr[1]['status']})),
            'signature': (parse
                          | 'Signatures' >> beam.Filter(lambda sr: sr[1]['status'] == 'signature')
                          | 'SigKey' >> beam.Map(lambda sr: ((sr[0], sr[1]['url']),
                                                             sr[1]['signature'])))}
        out.append(keyed
                   | 'JoinChanges' >> beam.CoGroupByKey()
                   | 'Changes' >> beam.FlatMap(_change)
                   | 'CountChanges' >> beam.combiners.Count.PerElement()
                   | 'ChangeRows' >> beam.Map(_counted))
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
    data = ReportData(crawl, segments, quantiles=cfg['db.stats.score.quantiles'],
                      domains=domains, top=top, tolerance_ms=tolerance_ms)
    p = make_pipeline(beam_args, cfg, data.records)
    rows: List[Any] = [['part_records', [s, part], count_records(crawl.part_files(s, part))]
                       for s in segments for part in ('crawl_generate', 'crawl_fetch',
                                                      'parse_data')
                       if crawl.has_part(s, part)]
    scratch = crawl.scratch_dir('report')
    _ = (p
         | 'Report' >> data
         | 'Json' >> beam.Map(functools.partial(json.dumps, ensure_ascii=False))
         | 'Write' >> beam.io.WriteToText(FileSystems.join(scratch, 'rows')))
    try:
        run_pipeline(p, 'report')
        for path in fs.list_files(FileSystems.join(scratch, 'rows*')):
            with FileSystems.open(path) as f:
                rows += [json.loads(line) for line in f.read().decode('utf-8').splitlines()]
    finally:
        fs.delete(scratch)
    return policy.assemble(rows, applied=crawl.crawldb.applied_segments(), segments=segments,
                           linkdb_applied=crawl.linkdb.applied_segments(), top=top)
