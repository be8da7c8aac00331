"""The Generator as Beam transforms: crawldb → selected records per segment → fetch-list parts.

Shape (the design card's "host-keyed GroupByKey with top-N combiners"):
  select (per record, Nutch's checks) → per host/domain Top-N combiner (only the URLs a host
  could ever get: generate.max.count × maxNumSegments) → one global walk in selection order
  (exact topN, per-host caps, overflow into the next segment) → key by (segment, part) → one
  Avro file per part, hosts interleaved.
Without a per-host cap the global step is a plain Top-N combiner.
"""

import pickle
import typing
from operator import itemgetter
from typing import Dict, Optional, Tuple

import apache_beam as beam
from apache_beam.transforms.combiners import ToList
from apache_beam.transforms.window import GlobalWindows

from beamcrawl.transforms.base import metrics, progress
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, Unit, avro_units
from beamcrawl.transforms.fetcher.queues import KeyByQueue
from beamcrawl.transforms.policy.generate import GenerateSettings, assign_segments
from beamcrawl.transforms.policy.hostdb import VARIABLE_FETCH_DELAY, HostPlan
from beamcrawl.transforms.policy.partition import QUEUE_MODES, partition, scatter_key
from beamcrawl.transforms.policy.urlparts import scheme_host
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage import container, fs, segments
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.datumcodec import decode_datum, encode_datum
from beamcrawl.transforms.storage.parts import ReadCrawlDb, Record, WriteParts
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, METADATA_GENERATE_TIME

__all__ = ['SelectForFetch', 'WriteFetchLists', 'MarkGenerated', 'complete_fetch_lists']


def _truncate(items: list, keep: int) -> None:
    """Keeps the `keep` first items in selection order (items are (sort key, ...) tuples)."""
    items.sort(key=itemgetter(0))
    del items[keep:]


def _decoded(record) -> dict:
    """A candidate as a dict (it may travel as its encoded bytes, see _SelectFn)."""
    if isinstance(record, bytes):
        return decode_datum(record)
    return record


def _mark(record: dict, now: str, delays: Optional[Dict[str, str]] = None) -> dict:
    """The fetch-list copy of a selected record: the generate marker, and its host's fetch
    delay from the hostdb (VARIABLE_FETCH_DELAY, ms) when it has one."""
    if delays:
        delay = delays.get(scheme_host(record['url'])[1])
        if delay is not None:
            return dict(record, metadata={**record['metadata'], METADATA_GENERATE_TIME: now,
                                          VARIABLE_FETCH_DELAY: delay})
    return dict(record, metadata={**record['metadata'], METADATA_GENERATE_TIME: now})


class _SelectFn(metrics.CountingDoFn):
    """crawldb record → due records, grouped and trimmed per bundle.

    With `keep` set, due records are collected per group (the host/domain, or one global group)
    and only the `keep` first in selection order survive; each bundle then emits
    (group, (number of due records, [(sort key, count key, record)])): a hand-lifted combiner
    that avoids Beam's per-element combine cost. Without `keep` (no topN, no cap), each due
    record is emitted at once as (1, record with the generate marker).
    Counts are summed locally and added to the Beam counters once per bundle.
    """

    def __init__(self, *, settings, policy, now, count_mode, filter_urls, keep, per_host,
                 done: progress.Reporter, skip_hosts=None, delays=None):
        self.done = done
        self.skip_hosts = skip_hosts          # hosts the hostdb leaves out (None: no hostdb)
        self.delays = delays                  # host → fetch delay (ms, text) from the hostdb
        self.settings = settings
        self.policy = policy
        self.now = now
        self.count_mode = count_mode
        self.filter_urls = filter_urls
        self.keep = keep
        self.per_host = per_host

    def start_bundle(self):
        super().start_bundle()
        self._groups = {}

    def process(self, item):
        if not isinstance(item, Unit):
            selected = self._select(item)
            if selected is not None:
                yield selected
            return
        select = self._select
        raw_ok = item.raw_ok
        for record, raw in container.read_records(item.path, item.blocks, with_raw=raw_ok,
                                                  complete=not raw_ok):
            selected = select(record, raw) if raw_ok else select(record, encode=True)
            if selected is not None:
                yield selected
        self.done.add(item.records)

    def _select(self, record, raw=None, encode=False):
        """(1, marked record) when keep is None and the record is due; else None (a due record
        is collected in its group: as its encoded bytes when the fetch list takes it unchanged,
        which moves through the shuffle far more cheaply than a dict; `encode`: a record of
        another writer's file, encoded in CRAWL_DATUM_SCHEMA here)."""
        url = record['url']
        parts = scheme_host(url)
        host = parts[1]
        if not host:
            self.counts.inc(metrics.GENERATE_MALFORMED)
            return None
        if self.filter_urls and not self.policy.accept(url, parts):
            self.counts.inc(metrics.GENERATE_REJECTED + 'filtered')
            return None
        if self.policy.denied_host(host):      # the address policy holds even with --no-filter
            self.counts.inc(metrics.GENERATE_REJECTED + 'denied_address')
            return None
        if self.skip_hosts is not None and host in self.skip_hosts:
            self.counts.inc(metrics.GENERATE_REJECTED + 'host_skipped')
            return None
        reason, candidate = self.settings.check(record, self.now)
        if reason:
            self.counts.inc(metrics.GENERATE_REJECTED + reason)
            return None
        self.counts.inc(metrics.GENERATE_DUE)
        if self.keep is None:
            return 1, _mark(candidate, str(self.now), self.delays)
        key = host if self.count_mode == 'host' else self.policy.domains.domain(host)
        name = key if self.per_host else ''
        group = self._groups.get(name)
        if group is None:
            group = self._groups[name] = [0, []]
        group[0] += 1
        sort_key = self.settings.sort_key(candidate, self.now)
        if candidate is record:
            if encode:
                raw = encode_datum(record)
            if raw is not None:
                candidate = raw
        group[1].append((sort_key, key, candidate))
        if len(group[1]) >= 2 * self.keep:
            _truncate(group[1], self.keep)
        return None

    def finish_bundle(self):
        super().finish_bundle()
        for name, (total, items) in self._groups.items():
            _truncate(items, self.keep)
            yield GlobalWindows.windowed_value((name, (total, items)))
        self._groups = {}


# A group's keep when nothing bounds it (a host without a cap and no topN): every due URL.
_UNBOUNDED = 1 << 62


class _MergeTopCombineFn(beam.CombineFn):
    """Merges (count, items) partials of one group, keeping the `keep` first items."""

    def __init__(self, keep):
        self.keep = keep

    def create_accumulator(self):
        return 0, []

    def add_input(self, acc, partial):
        items = acc[1] + partial[1]
        if len(items) > self.keep:
            _truncate(items, self.keep)
        return acc[0] + partial[0], items

    def merge_accumulators(self, accumulators):
        total, items = 0, []
        for acc in accumulators:
            total, items = self.add_input((total, items), acc)
        return total, items

    def extract_output(self, acc):
        _truncate(acc[1], self.keep)
        return acc


class _AssignFn(beam.DoFn):
    """All groups [(group, (due count, [(sort key, count key)]))] → {url: segment index},
    pickled, by the SelectorReducer walk. Only compact tuples come here: the records are joined
    back afterwards (_JoinSelectedFn)."""

    def __init__(self, *, top_n, max_count, max_segments, trimmed_by_cap, host_max=None):
        self.host_max = host_max
        self.top_n = top_n
        self.max_count = max_count
        self.max_segments = max_segments
        self.trimmed_by_cap = trimmed_by_cap   # URLs the per-group trim dropped hit the cap
        self.over_limit = metrics.counter(metrics.GENERATE_OVER_LIMIT)
        self.host_capped = metrics.counter(metrics.GENERATE_HOST_CAPPED)
        self.hosts_affected = metrics.counter(metrics.GENERATE_HOSTS_AFFECTED)

    def process(self, groups):
        candidates = []
        trimmed = 0
        for _, (total, items) in groups:
            trimmed += total - len(items)
            candidates.extend(items)
        candidates.sort(key=itemgetter(0))
        result = assign_segments(((key, sk[2]) for sk, key in candidates),
                                 top_n=self.top_n, max_count=self.max_count,
                                 max_segments=self.max_segments, host_max=self.host_max)
        self.host_capped.inc(result.host_capped + (trimmed if self.trimmed_by_cap else 0))
        self.over_limit.inc(result.over_limit + (0 if self.trimmed_by_cap else trimmed))
        self.hosts_affected.inc(result.hosts_affected)
        # One element, the whole assignment pickled: the join reads it as a side input in every
        # bundle, and Beam decodes a side input entry by entry and weighs what it decoded object
        # by object (objsize) for its cache: a tenth of generate's CPU for 100k entries. A
        # bytes object is decoded and weighed at once (docs/performance.md).
        yield pickle.dumps(result.segments, protocol=pickle.HIGHEST_PROTOCOL)


_NO_ASSIGNMENT = pickle.dumps({}, protocol=pickle.HIGHEST_PROTOCOL)


class _JoinSelectedFn(beam.DoFn):
    """(group, (due count, [(sort key, count key, record bytes)])) with the pickled assignment
    {url: segment index} → (segment index, the selected record marked as generated)."""

    def __init__(self, marker: str, delays: Optional[Dict[str, str]] = None):
        self.marker, self.delays = marker, delays
        self._blob = self._segments = None

    def process(self, group, assignment: bytes):
        if assignment is not self._blob and assignment != self._blob:
            self._blob, self._segments = assignment, pickle.loads(assignment)
        segments, marker, delays = self._segments, self.marker, self.delays
        for sk, _, record in group[1][1]:
            segment = segments.get(sk[2])
            if segment is not None:
                yield segment, _mark(_decoded(record), marker, delays)


class SelectForFetch(beam.PTransform):
    """PCollection[CrawlDatum] (the crawldb) → PCollection[(segment index ≥ 1, CrawlDatum)].
    Given `crawldb`, it applies to the pipeline itself (PBegin) and reads that crawldb's parts
    in work units (engine/units.py) where the records are selected, not moving them through
    Beam one by one (the generate command); `weight` is then the number of records.

    Args (keyword-only):
      crawldb: the crawldb to read (None: the input PCollection is the records).
      settings: the per-record checks (shouldFetch, generate lock, status, score, interval).
      policy: URL filters and the domain helper.
      now: the current time, epoch ms; also the generate marker `_ngt_` of selected records.
      top_n: URLs per segment (None: unlimited); exact over the whole crawldb.
      max_count: generate.max.count, URLs per host or domain per segment (≤ 0: unlimited).
      count_mode: 'host' or 'domain' (generate.count.mode).
      max_segments: how many segments may be filled (overflow goes to the next one).
      filter_urls: apply the URL filters (generate.filter).
      hosts: the hostdb's decisions (policy.hostdb.HostPlan: hosts skipped, their own max
        counts and fetch delays), or None without a hostdb. Small: sent to every worker whole.
    """

    def __init__(self, *, settings: GenerateSettings, policy: UrlPolicy, now: int,
                 top_n: Optional[int], max_count: int, count_mode: str, max_segments: int,
                 filter_urls: bool = True, crawldb: Optional[DbLayout] = None,
                 hosts: Optional[HostPlan] = None):
        super().__init__()
        self.hosts = hosts
        if count_mode not in ('host', 'domain'):
            raise ValueError(f'count mode {count_mode!r}')
        self.settings, self.policy, self.now = settings, policy, now
        self.top_n, self.max_count, self.max_segments = top_n, max_count, max_segments
        self.count_mode, self.filter_urls = count_mode, filter_urls
        self.units = None if crawldb is None else avro_units(
            [('crawldb', f) for f in crawldb.part_files()], schema=CRAWL_DATUM_SCHEMA,
            per_unit=RECORDS_PER_UNIT)
        self.weight = sum(u.records for u in self.units or ())

    def expand(self, crawldb) -> beam.PCollection[Tuple[int, Record]]:
        if self.units is not None:          # PBegin: the crawldb's parts, read where selected
            crawldb = crawldb | 'CrawlDbUnits' >> beam.Create(self.units).with_output_types(
                typing.Any)
        hosts = self.hosts
        host_max = hosts.max_count if hosts is not None and hosts.max_count else None
        delays = ({h: str(ms) for h, ms in hosts.delay_ms.items()}
                  if hosts is not None and hosts.delay_ms else None)
        per_host = self.max_count > 0 or host_max is not None
        keep = None
        if per_host:
            # Each group keeps what its host could be given: its cap × maxNumSegments; a group
            # without a cap (a host whose own max count is unlimited) keeps what topN allows.
            caps = [self.max_count, *(host_max or {}).values()]
            keep = max(caps) * self.max_segments if min(caps) > 0 else None
            if self.top_n is not None:
                keep = min(keep or self.top_n * self.max_segments, self.top_n * self.max_segments)
            elif keep is None:
                keep = _UNBOUNDED
        elif self.top_n is not None:
            keep = self.top_n * self.max_segments
        select = _SelectFn(settings=self.settings, policy=self.policy, now=self.now,
                           count_mode=self.count_mode, filter_urls=self.filter_urls,
                           keep=keep, per_host=per_host,
                           done=progress.stage(crawldb.pipeline, 'select', self.weight,
                                               'records'),
                           skip_hosts=(frozenset(hosts.skip) if hosts is not None else None),
                           delays=delays)
        if keep is None:
            return crawldb | 'Select' >> beam.ParDo(select)
        groups = (crawldb
                  | 'Select' >> beam.ParDo(select)
                  | 'MergeGroups' >> beam.CombinePerKey(_MergeTopCombineFn(keep)))
        assigned = (groups
                    | 'Compact' >> beam.Map(lambda g: (g[0], (g[1][0], [
                        (sk, key) for sk, key, _ in g[1][1]])))
                    | 'AllGroups' >> ToList().without_defaults()
                    | 'Assign' >> beam.ParDo(_AssignFn(
                        top_n=self.top_n, max_count=self.max_count,
                        max_segments=self.max_segments, host_max=host_max,
                        trimmed_by_cap=(per_host and host_max is None
                                        and keep == self.max_count * self.max_segments))))
        # (ToList without its default: Beam would hand the list to the step that adds the
        # default as a side input, decoded and weighed entry by entry; with nothing selected,
        # the join's side input is the empty assignment.)
        return groups | 'JoinSelected' >> beam.ParDo(
            _JoinSelectedFn(str(self.now), delays),
            beam.pvalue.AsSingleton(assigned, default_value=_NO_ASSIGNMENT))


class _PartOfFn(beam.DoFn):
    """(queue id, (segment, record)) → ((segment, part index), record)."""

    def __init__(self, num_parts: int):
        self.num_parts = num_parts
        self.selected = metrics.counter(metrics.GENERATE_SELECTED)

    def process(self, item):
        queue, (segment, record) = item
        self.selected.inc()
        yield (segment, partition(queue or '', self.num_parts)), record  # unresolvable: one part


class _WritePartFn(beam.DoFn):
    """((segment, part), records) → the part's Avro file, in scatter order; yields its path."""

    def __init__(self, part_dirs: Dict[int, str]):
        self.part_dirs = part_dirs

    def process(self, item):
        (segment, part), records = item
        records = sorted(records, key=lambda r: (scatter_key(r['url']), r['url']))
        path = fs.part_file(self.part_dirs[segment], part)
        write_avro_file(path, CRAWL_DATUM_SCHEMA, records)
        yield path


class WriteFetchLists(beam.PTransform):
    """PCollection[(segment index, CrawlDatum)] → one Avro file per (segment, part) under
    part_dirs[segment]; all URLs of a host (or domain, or IP) go to the same part.

    Args:
      part_dirs: {segment index: directory to write crawl_generate parts into}.
      num_parts: parts per segment (--num-fetchers).
      mode: partition.url.mode, one of QUEUE_MODES.
      policy: for the domain helper (byDomain).
    """

    def __init__(self, *, part_dirs: Dict[int, str], num_parts: int, mode: str,
                 policy: UrlPolicy):
        super().__init__()
        if mode not in QUEUE_MODES:
            raise ValueError(f'partition mode {mode!r}')
        self.part_dirs, self.num_parts, self.mode, self.policy = part_dirs, num_parts, mode, policy

    def expand(self, assigned: beam.PCollection[Tuple[int, Record]]) -> beam.PCollection[str]:
        return (assigned
                | 'KeyByQueue' >> KeyByQueue(mode=self.mode, policy=self.policy,
                                             url_of=lambda item: item[1]['url'])
                | 'PartKey' >> beam.ParDo(_PartOfFn(self.num_parts))
                | 'GroupParts' >> beam.GroupByKey()
                | 'WritePart' >> beam.ParDo(_WritePartFn(self.part_dirs)))


class MarkGenerated(beam.PTransform):
    """PBegin → PCollection[part file]: writes the crawldb version `out`: `crawldb` with
    `_ngt_` = now on every URL that was selected (generate.update.crawldb), so that a second
    generate skips them.

    Args (keyword-only):
      crawldb: the crawldb read.
      out: the version written (DbLayout.update()).
      selected: PCollection[(segment index, CrawlDatum)] from SelectForFetch.
      now: the generate time written into `_ngt_`.
    """

    def __init__(self, *, crawldb: DbLayout, out: DbUpdate, selected, now: int):
        super().__init__()
        self.crawldb, self.out, self.selected, self.now = crawldb, out, selected, now

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        urls = self.selected | 'SelectedUrls' >> beam.Map(lambda item: (item[1]['url'], True))
        marker = str(self.now)

        def mark(record, chosen):
            if record['url'] not in chosen:
                return record
            return dict(record, metadata={**record['metadata'], METADATA_GENERATE_TIME: marker})

        return (pbegin
                | 'ReadCrawlDb' >> ReadCrawlDb(self.crawldb)
                | 'Mark' >> beam.Map(mark, beam.pvalue.AsDict(urls))
                | 'WriteCrawlDb' >> WriteParts(self.out.dir, CRAWL_DATUM_SCHEMA))


def complete_fetch_lists(updates, num_parts: int) -> None:
    """Driver side, after the pipeline, for each segment's SegmentUpdate: a segment that
    received no URL is abandoned; the others get their missing parts as empty files, so that
    every segment has num_parts fetch-list parts."""
    for update in updates:
        present = set(update.part_files(segments.CRAWL_GENERATE))
        if not present:
            update.abandon()
            continue
        for index in range(num_parts):
            path = fs.part_file(update.tmp[segments.CRAWL_GENERATE], index)
            if path not in present:
                write_avro_file(path, CRAWL_DATUM_SCHEMA, [])
