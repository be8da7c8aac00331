"""The Generator as Beam transforms: crawldb → selected records per segment → fetch-list parts.

Shape (the design card's "host-keyed GroupByKey with top-N combiners"):
  select (per record, Nutch's checks; per bundle, only the URLs a host could ever get:
  generate.max.count × maxNumSegments) → the bundles' candidates, handed on as one spill file
  each (or one pickled element) → one global walk in selection order over all of them (exact
  topN, per-host caps, overflow into the next segment) → key by (segment, part) → one Avro
  file per part, hosts interleaved.
Without a per-host cap the groups are one global group; without a cap and a topN every due
record is selected at once. The candidates never cross Beam one by one (docs/performance.md).
"""

import io
import pickle
import typing
import uuid
from operator import itemgetter
from typing import Dict, Optional, Tuple

import apache_beam as beam
import fastavro
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.combiners import ToList
from apache_beam.transforms.window import GlobalWindows

from beamcrawl.transforms.base import metrics, progress
from beamcrawl.transforms.base.counting import CountingDoFn
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, Unit, avro_units
from beamcrawl.transforms.fetcher.queues import KeyByQueue
from beamcrawl.transforms.policy.generate import GenerateSettings, assign_segments
from beamcrawl.transforms.policy.hostdb import VARIABLE_FETCH_DELAY, HostPlan
from beamcrawl.transforms.policy.partition import QUEUE_MODES, partition, scatter_key, url_queue
from beamcrawl.transforms.policy.urlparts import scheme_host
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage import container, fs, segments
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.datumcodec import (decode_datum, encode_datum,
                                                      parsed_datum_schema)
from beamcrawl.transforms.storage.parts import ReadCrawlDb, WriteParts
from beamcrawl.transforms.storage.partwriter import PartWriter, named, write_avro_file
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


def _encoded(record: dict) -> bytes:
    """A record's bytes in CRAWL_DATUM_SCHEMA, as PartWriter.write encodes it (by hand, or by
    fastavro where the hand encoder leaves it)."""
    raw = encode_datum(record)
    if raw is None:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed_datum_schema(), record)
        raw = buf.getvalue()
    return raw


def _mark(record: dict, now: str, delays: Optional[Dict[str, str]] = None) -> dict:
    """The fetch-list copy of a selected record: the generate marker, and its host's fetch
    delay from the hostdb (VARIABLE_FETCH_DELAY, ms) when it has one."""
    if delays:
        delay = delays.get(scheme_host(record['url'])[1])
        if delay is not None:
            return dict(record, metadata={**record['metadata'], METADATA_GENERATE_TIME: now,
                                          VARIABLE_FETCH_DELAY: delay})
    return dict(record, metadata={**record['metadata'], METADATA_GENERATE_TIME: now})


class _SelectFn(CountingDoFn):
    """crawldb record → due records, grouped and trimmed per bundle.

    With `keep` set, due records are collected per group (the host/domain, or one global group)
    and only the `keep` first in selection order survive; each bundle then hands on its groups
    [(group, number of due records, [(sort key, count key, record)])] as one element: the path
    of a spill file under `scratch` holding them pickled, or without `scratch` the pickled
    bytes themselves (_AssignFn reads either). Without `keep` (no topN, no cap), each due
    record is emitted at once as (1, record with the generate marker).
    Counts are summed locally and added to the Beam counters once per bundle.
    """

    def __init__(self, *, settings, policy, now, count_mode, filter_urls, keep, per_host,
                 done: progress.Reporter, skip_hosts=None, delays=None,
                 scratch: Optional[str] = None):
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
        self.scratch = scratch

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
        # the records' bytes in our schema: a file of another writer's CrawlDatum schema has
        # them made ours (docs/performance.md)
        for record, raw in container.read_datums(item.path, item.blocks):
            selected = select(record, raw)
            if selected is not None:
                yield selected
        self.done.add(item.records)

    def _select(self, record, raw=None):
        """(1, marked record) when keep is None and the record is due; else None (a due record
        is collected in its group: as its encoded bytes `raw` when the fetch list takes it
        unchanged, else as a dict, encoded at the bundle's end if it survives the trim)."""
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
            group = self._groups[name] = [0, [], None]
        group[0] += 1
        sort_key = self.settings.sort_key(candidate, self.now)
        bound = group[2]
        if bound is not None and sort_key > bound:
            # `keep` candidates of this bundle come before it: it cannot survive the trim
            return None
        if candidate is record and raw is not None:
            candidate = raw
        items = group[1]
        items.append((sort_key, key, candidate))
        if len(items) >= 2 * self.keep:
            _truncate(items, self.keep)
            group[2] = items[-1][0]
        return None

    def finish_bundle(self):
        super().finish_bundle()
        if not self._groups:
            return
        totals = {}
        candidates = []
        for name, (total, items, _) in self._groups.items():
            totals[name] = total
            _truncate(items, self.keep)
            candidates += items
        self._groups = {}
        # in selection order: the assign step merges the bundles' runs (a sort of sorted runs
        # is a merge) rather than sorting all of them in one process
        candidates.sort(key=itemgetter(0))
        # a candidate read as a dict (changed by the checks, or of a block the converter
        # left) travels as its encoding in CRAWL_DATUM_SCHEMA where it has one: smaller
        for i, (sort_key, key, candidate) in enumerate(candidates):
            if type(candidate) is dict:    # pylint: disable=unidiomatic-typecheck
                raw = encode_datum(candidate)
                if raw is not None:
                    candidates[i] = sort_key, key, raw
        data = _pickled((totals, candidates))
        del candidates
        if self.scratch is None:
            yield GlobalWindows.windowed_value(data)
            return
        # A name of its own per bundle: a retried bundle writes another file, and only the
        # paths handed on are read (the update removes its scratch directory at its end).
        path = FileSystems.join(self.scratch, f'select-{uuid.uuid4().hex}.pickle')
        try:
            with fs.create(path) as f:
                f.write(data)
        except OSError as e:
            raise named(e, path) from e
        yield GlobalWindows.windowed_value(path)


def _pickled(value) -> bytes:
    """A bundle's candidates pickled without the pickler's memo (its `fast` mode: they hold no
    object twice that matters, and no cycle): the memo of a few hundred thousand candidates
    costs more than the rest of the pickling (0.21 against 0.48 s for 190k candidates)."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.fast = True
    pickler.dump(value)
    return buf.getvalue()


# A group's keep when nothing bounds it (a host without a cap and no topN): every due URL.
_UNBOUNDED = 1 << 62


def _candidates(carrier) -> Tuple[Dict[str, int], list]:
    """A bundle's ({group: due count}, [(sort key, count key, record)] in selection order) from
    what _SelectFn handed on: the pickled bytes, or the path of the spill file holding them."""
    if isinstance(carrier, bytes):
        return pickle.loads(carrier)
    data = fs.read_file(carrier)
    if data is None:
        raise OSError(f'{carrier}: the spill file of a select bundle is missing')
    return pickle.loads(data)


class _AssignFn(beam.DoFn):
    """Every bundle's candidates (the list of what _SelectFn handed on) → (segment index, the
    selected record marked as generated): the bundles' runs are merged in selection order and
    each group trimmed to its `keep` first, then walked (policy.generate.assign_segments: exact
    topN, per-host caps, overflow into the next segments). One call for the whole crawldb, in
    one worker: only the candidates a host could get reach it."""

    def __init__(self, *, keep, per_host, top_n, max_count, max_segments, trimmed_by_cap,
                 marker: str, host_max=None, delays: Optional[Dict[str, str]] = None,
                 parts: Optional['FetchListParts'] = None):
        self.keep, self.per_host = keep, per_host
        self.parts = parts
        self.host_max = host_max
        self.top_n = top_n
        self.max_count = max_count
        self.max_segments = max_segments
        self.trimmed_by_cap = trimmed_by_cap   # URLs the per-group trim dropped hit the cap
        self.marker, self.delays = marker, delays
        self.over_limit = metrics.counter(metrics.GENERATE_OVER_LIMIT)
        self.host_capped = metrics.counter(metrics.GENERATE_HOST_CAPPED)
        self.hosts_affected = metrics.counter(metrics.GENERATE_HOSTS_AFFECTED)

    def process(self, carriers):
        due = 0
        merged = []
        for carrier in carriers:
            totals, candidates = _candidates(carrier)
            due += sum(totals.values())
            merged += candidates
            del candidates
        merged.sort(key=itemgetter(0))
        # each group's `keep` first (a group is a count key, or all of them without a cap)
        keep, per_host = self.keep, self.per_host
        taken: Dict[str, int] = {}
        candidates = []
        for candidate in merged:
            name = candidate[1] if per_host else ''
            n = taken.get(name, 0)
            if n < keep:
                taken[name] = n + 1
                candidates.append(candidate)
        del merged
        trimmed = due - len(candidates)
        # the sort key ends with the URL (policy.generate.sort_key)
        result = assign_segments(((key, sk[-1]) for sk, key, _ in candidates),
                                 top_n=self.top_n, max_count=self.max_count,
                                 max_segments=self.max_segments, host_max=self.host_max)
        self.host_capped.inc(result.host_capped + (trimmed if self.trimmed_by_cap else 0))
        self.over_limit.inc(result.over_limit + (0 if self.trimmed_by_cap else trimmed))
        self.hosts_affected.inc(result.hosts_affected)
        segments, marker, delays = result.segments, self.marker, self.delays
        if self.parts is None:
            for sk, _, record in candidates:
                segment = segments.get(sk[-1])
                if segment is not None:
                    yield segment, _mark(_decoded(record), marker, delays)
            return
        part_of = self.parts.part_of
        lists: Dict[Tuple[int, int], list] = {}
        for sk, key, record in candidates:
            segment = segments.get(sk[-1])
            if segment is None:
                continue
            marked = _mark(_decoded(record), marker, delays)
            url = marked['url']
            target = segment, part_of(url, key)
            entries = lists.get(target)
            if entries is None:
                entries = lists[target] = []
            entries.append((url, _encoded(marked)))
        metrics.counter(metrics.GENERATE_SELECTED).inc(sum(map(len, lists.values())))
        yield from lists.items()


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
      scratch: a directory for the select bundles' spill files (the crawldb update's scratch,
        on the crawl directory's filesystem: every worker reads it); None: each bundle's
        candidates travel through Beam as one pickled element.
      parts: the fetch lists' parts (FetchListParts, byHost or byDomain): the output is then
        PCollection[((segment index, part index), [(url, the marked record's bytes in
        CRAWL_DATUM_SCHEMA)])], for WriteFetchLists(grouped=True): one element per part that
        gets URLs (without a topN or a cap, when every due URL is selected at once, one per
        URL).
    """

    def __init__(self, *, settings: GenerateSettings, policy: UrlPolicy, now: int,
                 top_n: Optional[int], max_count: int, count_mode: str, max_segments: int,
                 filter_urls: bool = True, crawldb: Optional[DbLayout] = None,
                 hosts: Optional[HostPlan] = None, scratch: Optional[str] = None,
                 parts: Optional['FetchListParts'] = None):
        super().__init__()
        self.hosts, self.scratch, self.parts = hosts, scratch, parts
        if count_mode not in ('host', 'domain'):
            raise ValueError(f'count mode {count_mode!r}')
        self.settings, self.policy, self.now = settings, policy, now
        self.top_n, self.max_count, self.max_segments = top_n, max_count, max_segments
        self.count_mode, self.filter_urls = count_mode, filter_urls
        self.units = None if crawldb is None else avro_units(
            [('crawldb', f) for f in crawldb.part_files()], schema=CRAWL_DATUM_SCHEMA,
            per_unit=RECORDS_PER_UNIT)
        self.weight = sum(u.records for u in self.units or ())

    def expand(self, crawldb) -> beam.PCollection:   # per record or per part: see `parts`
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
                           delays=delays, scratch=self.scratch)
        if keep is None:
            selected = crawldb | 'Select' >> beam.ParDo(select)
            if self.parts is None:
                return selected
            return selected | 'PartOf' >> beam.ParDo(_OnePartEntryFn(self.parts))
        parts = self.parts
        if parts is not None and self.count_mode == 'host' and parts.mode == 'byHost':
            parts = parts.keyed_by_host()       # the count key is the queue: the host
        # One element per select bundle (a spill file's path); with nothing due, none, and
        # ToList without its default gives no list: nothing is assigned.
        return (crawldb
                | 'Select' >> beam.ParDo(select).with_output_types(typing.Any)
                | 'AllCandidates' >> ToList().without_defaults()
                | 'Assign' >> beam.ParDo(_AssignFn(
                    keep=keep, per_host=per_host, top_n=self.top_n,
                    max_count=self.max_count, max_segments=self.max_segments, host_max=host_max,
                    trimmed_by_cap=(per_host and host_max is None
                                    and keep == self.max_count * self.max_segments),
                    marker=str(self.now), delays=delays, parts=parts)))


def _unresolved(host: str) -> str:
    raise AssertionError(f'{host}: no address is looked up for a part by host or by domain')


class FetchListParts:
    """Which fetch-list part a selected URL goes to (partition.url.mode byHost or byDomain, no
    address looked up): partition(url_queue(url), num_parts), as KeyByQueue and _PartOfFn give
    it (a URL without a queue: the part of '')."""

    def __init__(self, num_parts: int, mode: str, policy: UrlPolicy, by_key: bool = False):
        if mode not in ('byHost', 'byDomain'):
            raise ValueError(f'fetch-list parts by {mode!r}: only byHost or byDomain')
        self.num_parts, self.mode, self.policy, self.by_key = num_parts, mode, policy, by_key

    def keyed_by_host(self) -> 'FetchListParts':
        """The same parts, taken from a candidate's count key, which is its host
        (generate.count.mode host, byHost: url_queue gives the same host)."""
        return FetchListParts(self.num_parts, self.mode, self.policy, by_key=True)

    def part_of(self, url: str, key: str) -> int:
        queue = key if self.by_key else url_queue(
            url, self.mode, domain_of=self.policy.domains.domain, resolve=_unresolved)
        return partition(queue or '', self.num_parts)


class _OnePartEntryFn(beam.DoFn):
    """(segment, marked record) → ((segment, part), [(url, encoded record)]): SelectForFetch's
    grouped output, one URL at a time."""

    def __init__(self, parts: FetchListParts):
        self.parts = parts
        self.selected = metrics.counter(metrics.GENERATE_SELECTED)

    def process(self, item):
        segment, record = item
        url = record['url']
        self.selected.inc()
        yield (segment, self.parts.part_of(url, None)), [(url, _encoded(record))]


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


class _WriteEncodedPartFn(beam.DoFn):
    """((segment, part), [[(url, encoded record)]]) → the part's Avro file, in scatter order
    (the order _WritePartFn gives), the records written as their bytes; yields its path."""

    def __init__(self, part_dirs: Dict[int, str]):
        self.part_dirs = part_dirs

    def process(self, item):
        (segment, part), lists = item
        entries = [(scatter_key(url), url, raw) for entries in lists for url, raw in entries]
        entries.sort(key=itemgetter(0, 1))
        path = fs.part_file(self.part_dirs[segment], part)
        with PartWriter(path, CRAWL_DATUM_SCHEMA) as out:
            for _, _, raw in entries:
                out.write_raw(raw)
        yield path


class WriteFetchLists(beam.PTransform):
    """PCollection[(segment index, CrawlDatum)] → one Avro file per (segment, part) under
    part_dirs[segment]; all URLs of a host (or domain, or IP) go to the same part.

    Args:
      part_dirs: {segment index: directory to write crawl_generate parts into}.
      num_parts: parts per segment (--num-fetchers).
      mode: partition.url.mode, one of QUEUE_MODES.
      policy: for the domain helper (byDomain).
      grouped: the input is SelectForFetch's with `parts` (records already keyed by part and
        encoded, one element per part).
    """

    def __init__(self, *, part_dirs: Dict[int, str], num_parts: int, mode: str,
                 policy: UrlPolicy, grouped: bool = False):
        super().__init__()
        if mode not in QUEUE_MODES:
            raise ValueError(f'partition mode {mode!r}')
        self.part_dirs, self.num_parts, self.mode, self.policy = part_dirs, num_parts, mode, policy
        self.grouped = grouped

    def expand(self, assigned: beam.PCollection) -> beam.PCollection[str]:
        if self.grouped:
            return (assigned
                    | 'GroupParts' >> beam.GroupByKey()
                    | 'WritePart' >> beam.ParDo(_WriteEncodedPartFn(self.part_dirs)))
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
