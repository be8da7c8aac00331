"""updatehostdb (Nutch's UpdateHostDb): the crawldb and the new segments' fetches, per host, into
the host database (docs/hostdb.md).

`UpdateHostDb` is the stage: the crawldb's records are keyed by host and combined into
`HostFacts` (policy/hostdb.py); the fetch attempts of the segments not applied yet (their
crawl_fetch) are grouped by host; both are joined with the old hostdb by host, and each host's
new HostDatum is computed by `policy.hostdb.host_datum`. With resolution on, the hosts
`should_check` picks are looked up, each bundle's in parallel threads and each lookup bounded by
`hostdb.resolve.timeout`; its outcome is a counter (hostdb.resolve.*).
"""

import concurrent.futures
import ipaddress
import socket
import typing
from typing import Dict, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.base.counting import CountingDoFn
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, avro_units
from beamcrawl.transforms.policy.hostdb import (HostDbSettings, HostFacts, fetch_outcome,
                                                fold_fetches, host_datum, resolved, should_check,
                                                start_fold)
from beamcrawl.transforms.policy.urlparts import scheme_host
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage import container
from beamcrawl.transforms.storage.parts import ReadParts, WriteParts
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, HOST_DATUM_SCHEMA,
                                                  complete_datum)

__all__ = ['UpdateHostDb', 'Resolution', 'lookup']


class _FactsCombineFn(beam.CombineFn):
    """Merges the HostFacts partials of one host."""

    def create_accumulator(self):
        return HostFacts()

    def add_input(self, acc, partial):
        return acc.merge(partial)

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        out = next(accumulators)
        for acc in accumulators:
            out.merge(acc)
        return out

    def extract_output(self, acc):
        return acc


class _UnitFactsFn(CountingDoFn):
    """A work unit of the crawldb (engine/units.py) → (host, HostFacts) for each host of its
    records: the records are read and summed where they are, not moved through Beam one by one
    (a hand-lifted combiner). With normalize/filter, a URL is cleaned first and a rejected one
    is counted and left out."""

    def __init__(self, settings: HostDbSettings, policy: Optional[UrlPolicy], normalize: bool,
                 filter_urls: bool):
        self.settings = settings
        self.policy, self.normalize, self.filter_urls = policy, normalize, filter_urls

    def process(self, unit):
        facts: Dict[str, HostFacts] = {}
        clean = self.policy is not None and (self.normalize or self.filter_urls)
        settings, counts = self.settings, self.counts
        for record, _ in container.read_records(unit.path, unit.blocks, with_raw=False):
            url = record['url']
            if clean:
                url, _ = self.policy.clean(url, normalize=self.normalize,
                                           filter=self.filter_urls)
                if url is None:
                    counts.inc(metrics.HOSTDB_REJECTED)
                    continue
            scheme, host = scheme_host(url)
            if not host:
                counts.inc(metrics.HOSTDB_REJECTED)
                continue
            netloc = url.partition('//')[2].split('/', 1)[0].split('?', 1)[0].split('#', 1)[0]
            host_facts = facts.get(host)
            if host_facts is None:
                host_facts = facts[host] = HostFacts()
            host_facts.add(complete_datum(record),
                           f'{scheme}://{netloc.rsplit("@", 1)[-1].lower()}', settings)
            counts.inc(metrics.HOSTDB_URLS)
        yield from facts.items()


def _fetch_events(record: dict, segment: str):
    """crawl_fetch record → (host, ((segment, request end, url), outcome, fetch time))."""
    outcome = fetch_outcome(record)
    if outcome is None:
        return
    host = scheme_host(record['url'])[1]
    if not host:
        return
    end = record['metadata'].get('fetch.end', '')
    order = (segment, int(end) if end.isdigit() else 0, record['url'])
    yield host, (order, outcome, record['fetch_time'])


def lookup(host: str) -> bool:
    """Whether the host name resolves (an address literal always does)."""
    try:
        ipaddress.ip_address(host.strip('[]'))
        return True
    except ValueError:
        pass
    try:
        return bool(socket.getaddrinfo(host, None))
    except (OSError, UnicodeError):
        return False


class Resolution:
    """Looks host names up in parallel, each batch within `timeout` seconds; a name not
    answered by then counts as not resolving. Threads stuck in the system's resolver are left
    to finish on their own (a lookup cannot be cancelled)."""

    def __init__(self, threads: int, timeout: float):
        self.threads, self.timeout = max(1, threads), timeout

    def resolve(self, hosts: Sequence[str]) -> Dict[str, Optional[bool]]:
        """host → True / False, or None when it timed out."""
        out: Dict[str, Optional[bool]] = {}
        pool = concurrent.futures.ThreadPoolExecutor(self.threads,
                                                     thread_name_prefix='hostdb-resolve')
        try:
            for start in range(0, len(hosts), self.threads):
                batch = hosts[start:start + self.threads]
                futures = {pool.submit(lookup, h): h for h in batch}
                done, _ = concurrent.futures.wait(futures, timeout=self.timeout)
                for future, host in futures.items():
                    out[host] = future.result() if future in done else None
        finally:
            pool.shutdown(wait=False)
        return out


class _DatumFn(CountingDoFn):
    """(host, {'old': [datum], 'facts': [HostFacts], 'fetches': [[event]]}) → the new HostDatum;
    hosts to look up wait for the end of the bundle, then are resolved together."""

    def __init__(self, settings: HostDbSettings, now: int, resolve_threads: int,
                 resolve_timeout: float):
        self.settings, self.now = settings, now
        self.resolve_threads, self.resolve_timeout = resolve_threads, resolve_timeout

    def start_bundle(self):
        super().start_bundle()
        self._to_check: List[dict] = []

    def process(self, item):
        host, joined = item
        old = joined['old'][0] if joined['old'] else None
        facts = joined['facts'][0] if joined['facts'] else None
        events = [e for group in joined['fetches'] for e in group]
        fold = fold_fetches(start_fold(old), events)
        self.counts.inc(metrics.HOSTDB_FETCHES, fold.attempts)
        datum = host_datum(host, old, facts, fold, self.settings)
        if self.settings.checks and should_check(datum, self.settings, self.now):
            self._to_check.append(datum)
            return
        yield self._written(datum)

    def _written(self, datum):
        self.counts.inc(metrics.HOSTDB_HOSTS)
        if datum['fetch_failures']:
            self.counts.inc(metrics.HOSTDB_FAILING)
        return datum

    def finish_bundle(self):
        if self._to_check:
            answers = Resolution(self.resolve_threads, self.resolve_timeout).resolve(
                [d['host'] for d in self._to_check])
            for datum in self._to_check:
                ok = answers[datum['host']]
                if ok is None:
                    self.counts.inc(metrics.HOSTDB_RESOLVE + 'timeout')
                new, outcome = resolved(datum, bool(ok), self.now)
                self.counts.inc(metrics.HOSTDB_RESOLVE + outcome)
                yield GlobalWindows.windowed_value(self._written(new))
            self._to_check = []
        super().finish_bundle()


class UpdateHostDb(beam.PTransform):
    """PBegin → PCollection[part file]: writes a hostdb version into `out_dir` from the crawldb
    parts, the crawl_fetch parts of new segments and the old hostdb's parts.

    Args (keyword-only):
      crawldb_files: the crawldb's part files.
      fetch_files: [(segment name, crawl_fetch part file)] of the segments to fold in, in any
        order (attempts are ordered by segment name, then by the request's end).
      old_files: the readable hostdb version's part files (none for a new hostdb).
      out_dir: the version being written (DbLayout.update()).
    `weight` is the number of crawldb records, for sizing the run (make_pipeline).
      settings: the fields aggregated and the resolution switches (HostDbSettings).
      now: --now, epoch ms (the time of lookups).
      policy, normalize, filter_urls: clean crawldb URLs first (hostdb.url.normalize/filter).
      resolve_threads, resolve_timeout: hostdb.num.resolvers.threads, hostdb.resolve.timeout.
    """

    def __init__(self, *, crawldb_files: Sequence[str],
                 fetch_files: Sequence[Tuple[str, str]], old_files: Sequence[str],
                 out_dir: str, settings: HostDbSettings, now: int,
                 policy: Optional[UrlPolicy] = None, normalize: bool = False,
                 filter_urls: bool = False, resolve_threads: int = 1,
                 resolve_timeout: float = 10.0):
        super().__init__()
        self.crawldb_files, self.old_files = list(crawldb_files), list(old_files)
        self.fetch_files = list(fetch_files)
        self.out_dir, self.settings, self.now = out_dir, settings, now
        self.policy, self.normalize, self.filter_urls = policy, normalize, filter_urls
        self.resolve_threads, self.resolve_timeout = resolve_threads, resolve_timeout
        self.units = avro_units([('crawldb', f) for f in self.crawldb_files],
                                schema=CRAWL_DATUM_SCHEMA, per_unit=RECORDS_PER_UNIT)
        self.weight = sum(u.records for u in self.units)

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        facts = (pbegin
                 | 'CrawlDbUnits' >> beam.Create(self.units).with_output_types(typing.Any)
                 | 'UnitFacts' >> beam.ParDo(_UnitFactsFn(self.settings, self.policy,
                                                          self.normalize, self.filter_urls))
                 | 'Facts' >> beam.CombinePerKey(_FactsCombineFn()))
        by_segment: Dict[str, List[str]] = {}
        for segment, path in self.fetch_files:
            by_segment.setdefault(segment, []).append(path)
        events = [pbegin
                  | f'ReadFetch{i}' >> ReadParts(paths)
                  | f'Events{i}' >> beam.FlatMap(_fetch_events, segment)
                  for i, (segment, paths) in enumerate(sorted(by_segment.items()))]
        fetches = ((events or [pbegin | 'NoFetches' >> beam.Create([])])
                   | 'AllFetches' >> beam.Flatten()
                   | 'FetchesByHost' >> beam.GroupByKey()
                   | 'AsList' >> beam.MapTuple(lambda host, evs: (host, list(evs))))
        old = (pbegin
               | 'ReadOldHostDb' >> ReadParts(self.old_files)
               | 'KeyOld' >> beam.Map(lambda d: (d['host'], d)))
        return ({'old': old, 'facts': facts, 'fetches': fetches}
                | 'Join' >> beam.CoGroupByKey()
                | 'HostDatum' >> beam.ParDo(_DatumFn(self.settings, self.now,
                                                     self.resolve_threads,
                                                     self.resolve_timeout))
                | 'Write' >> WriteParts(self.out_dir, HOST_DATUM_SCHEMA))
