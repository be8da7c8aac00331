"""updatedb (Nutch's CrawlDb update): crawldb + crawl_fetch + crawl_parse → a new crawldb version.

`UpdateCrawlDb` is the stage: a MapReduce (engine/mapreduce.py). Every input record is tagged
by kind (old, fetch, link, signature), optionally purged, normalized and filtered (Nutch's map
phase, `MapRules`: `UpdateMapper`), grouped by URL and merged by the pure
`policy.updatedb.merge_url` (`merge_counted`: `UpdateReducer`). A crawldb record that nothing in
the segments touches is copied as its encoded bytes, and each new part is sorted by URL
(docs/performance.md).
"""

import collections
import functools
from typing import Dict, Optional, Sequence

import apache_beam as beam

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.engine import partitions
from beamcrawl.transforms.engine.items import FETCH, LINK, OLD, OLD_RAW, SIGNATURE
from beamcrawl.transforms.engine.mapreduce import MapReduce
from beamcrawl.transforms.engine.reducers import JoinReducer, Mapper
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, Unit, avro_units
from beamcrawl.transforms.policy.optimal import record_bin
from beamcrawl.transforms.policy.updatedb import UpdateRules, merge_links_only, merge_url
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.runners.runtime import workers_of
from beamcrawl.transforms.storage import container, datumruns
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.datumcodec import (datum_score_offset, decode_datum,
                                                     encode_datum, score_at, with_score)
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, DB_STATUSES, FETCH_STATUSES,
                                                  complete_datum)

__all__ = ['UpdateCrawlDb', 'tag_segment_record', 'MapRules', 'merge_counted', 'UpdateMapper',
           'UpdateReducer', 'OLD_INPUT', 'SEGMENT_INPUT']

OLD_INPUT, SEGMENT_INPUT = 'old', 'segment'       # the tags of units.Unit
_DB_KEPT = datumruns.keep_mask(DB_STATUSES)       # old records of other statuses are dropped
_OLD_KINDS = (OLD, OLD_RAW)
_OUTCOME_KEY = {o: metrics.UPDATEDB_OUTCOME + o for o in ('added', 'updated', 'unchanged',
                                                            'notfetching', 'blocked')}
_STATUS_KEY = {s: metrics.UPDATEDB_STATUS + s for s in DB_STATUSES}
_SEGMENT_KINDS = {**{s: FETCH for s in FETCH_STATUSES}, 'linked': LINK, 'signature': SIGNATURE}


def tag_segment_record(record: dict):
    """(kind, record) for a crawl_fetch / crawl_parse record; None for kinds not used."""
    kind = _SEGMENT_KINDS.get(record['status'])
    return None if kind is None else (kind, record)


class MapRules:
    """The map phase of one record: purge (db.update.purge.404), the address policy for new
    links, and normalize / filter when asked."""

    def __init__(self, *, policy: UrlPolicy, purge_gone: bool, normalize: bool,
                 filter_urls: bool, track_rates: bool = False):
        self.policy, self.purge_gone = policy, purge_gone
        self.normalize, self.filter_urls = normalize, filter_urls
        self.track_rates = track_rates      # count the rate bins of dropped crawldb records

    @property
    def keeps_urls(self) -> bool:
        """No URL is rewritten (records may be copied unchanged)."""
        return not self.normalize

    def old_kept(self, record: dict, counts) -> Optional[dict]:
        """`apply` for a crawldb record; records whose status is not a crawldb status are
        dropped silently, as ever."""
        if record['status'] not in DB_STATUSES:
            return None
        return self.apply(OLD, record, counts)

    def apply(self, kind: str, record: dict, counts) -> Optional[dict]:
        """The record to merge (its URL possibly normalized), or None when dropped (counted)."""
        kept = self._apply(kind, record, counts)
        if kept is None and kind == OLD and self.track_rates:
            counts.inc(metrics.UPDATEDB_RATE_BIN + str(record_bin(record)), -1)
        return kept

    def _apply(self, kind: str, record: dict, counts) -> Optional[dict]:
        if self.purge_gone and record['status'] == 'db_gone':
            counts.inc(metrics.UPDATEDB_PURGED_GONE)
            return None
        url = self.kept_url(kind, record['url'], counts)
        if url is None:
            return None
        if url != record['url']:
            record = dict(record, url=url)
        return record

    def kept_url(self, kind: int, url: str, counts) -> Optional[str]:
        """The URL a record of this kind goes on with (normalized when asked), or None when
        the address policy or the filters drop it (counted)."""
        if kind == LINK and self.policy.denied(url):     # never added, whatever the filters
            counts.inc(metrics.UPDATEDB_DENIED)
            return None
        if self.normalize or self.filter_urls:
            url, reason = self.policy.clean(url, normalize=self.normalize,
                                            filter=self.filter_urls)
            if url is None:
                counts.inc(metrics.UPDATEDB_DROPPED + reason)
                return None
        return url


def merge_counted(buckets: Dict[str, list], now: int, rules: UpdateRules, counts
                  ) -> Optional[dict]:
    """merge_url over {kind: [records]}, counting the outcome and the new record's status;
    with the optimal schedule, also how the crawldb's histogram of change rates changes
    (policy/optimal.py: updatedb keeps the histogram up to date from these counts)."""
    record, outcome = merge_url(buckets[OLD], buckets[FETCH], buckets[LINK], buckets[SIGNATURE],
                                now, rules)
    counts.inc(_OUTCOME_KEY.get(outcome) or metrics.UPDATEDB_OUTCOME + outcome)
    if record is not None:
        counts.inc(_STATUS_KEY.get(record['status']) or metrics.UPDATEDB_STATUS + record['status'])
    if rules.schedule.kind == 'optimal':
        for old in buckets[OLD]:
            counts.inc(metrics.UPDATEDB_RATE_BIN + str(record_bin(old)), -1)
        if record is not None:
            counts.inc(metrics.UPDATEDB_RATE_BIN + str(record_bin(record)))
    return record


class UpdateMapper(Mapper):
    """reducers.Mapper of updatedb: units tagged OLD_INPUT (crawldb parts) and SEGMENT_INPUT
    (crawl_fetch, crawl_parse parts) → (url, item). An old record that the rules keep as it is
    travels as (OLD_RAW, its bytes, its status): the bytes of its file when the file has the
    crawldb's own schema, else the record encoded in it here (one encode in the map is cheaper
    than a record pickled, unpickled and encoded in the reduce: a crawldb written elsewhere), or,
    when no rule looks past the status and the writer's schema is CrawlDatum-shaped, the
    writer's bytes made ours (datumcodec.datums_converter)."""

    def __init__(self, rules: MapRules):
        self.rules = rules
        self._statuses = {s: s for s in DB_STATUSES}    # one object per status: pickled once

    def map(self, unit: Unit, counts):
        rules = self.rules
        old = unit.tag == OLD_INPUT
        if old and unit.blocks and not (rules.purge_gone or rules.filter_urls or
                                        rules.normalize) and \
                (unit.raw_ok or container.splits_datums(unit.path)):
            # No rule looks past the status: the records are split out of their blocks, not
            # decoded (a crawldb without keys files, mapped whole: in our schema, or in another
            # CrawlDatum-shaped one, whose bytes are made ours as encoding them would).
            blocks = container.read_datum_blocks(unit.path, unit.blocks)
            if not datumruns.available():
                for _, _, keys in blocks:
                    yield from self._old_pairs(keys(), counts)
                return
            # In C: each block's records made ours and cut into the partitions as runs of
            # bytes, never Python objects (storage/datumruns.py)
            conv = datumruns.conversion(container.read_header(unit.path).schema)
            for count, data, keys in blocks:
                yield None, datumruns.RunSource(
                    data, count, conv, _DB_KEPT,
                    functools.partial(self._old_pairs, keys(), counts))
            return
        if not old and unit.blocks and rules.keeps_urls and container.splits_datums(unit.path):
            # The segment's records travel as their bytes in our schema, decoded in the reduce
            # only where a merge reads them (a dict pickled and unpickled costs more)
            kept = rules.kept_url
            for url, status, raw in container.read_datum_keys(unit.path, unit.blocks):
                kind = _SEGMENT_KINDS.get(status)
                if kind is not None and kept(kind, url, counts) is not None:
                    yield url, (kind, raw)          # raw: a dict where encode_datum left it
            return
        raw_ok = old and rules.keeps_urls
        encode = not unit.raw_ok
        for record, raw in container.read_records(unit.path, unit.blocks,
                                                  with_raw=old and unit.raw_ok,
                                                  complete=not unit.raw_ok):
            if old:
                yield from self.old_item(record, raw, raw_ok, counts, encode)
                continue
            tagged = tag_segment_record(record)
            if tagged is None:
                continue
            kept = rules.apply(tagged[0], record, counts)
            if kept is not None:
                yield kept['url'], (tagged[0], kept)

    def _old_pairs(self, keys, counts):
        """(url, item) of read_datum_keys' (url, status, bytes or dict) of crawldb records."""
        statuses = self._statuses
        for url, status, raw in keys:
            status = statuses.get(status)
            if status is None:                  # not a crawldb status: dropped, as old_kept does
                continue
            if raw.__class__ is bytes:
                yield url, (OLD_RAW, raw, status)
            else:                               # a record encode_datum leaves to fastavro
                yield from self.old_item(raw, None, False, counts)

    def old_item(self, record, raw, raw_ok, counts, encode=False):
        kept = self.rules.old_kept(record, counts)
        if kept is None:
            return
        if raw_ok and kept is record:
            if encode:
                raw = encode_datum(record)
            if raw is not None:
                yield record['url'], (OLD_RAW, raw, self._statuses[record['status']])
                return
        yield kept['url'], (OLD, kept)


class UpdateReducer(JoinReducer):
    """reducers.Reducer of updatedb: merges every URL of a partition and writes the part sorted by
    URL; a URL with nothing but its unchanged old record is copied as its bytes. With
    `old_parts`, a crawldb partitioned the same way is merged part by part
    (reducers.JoinReducer)."""

    schema = CRAWL_DATUM_SCHEMA

    def __init__(self, rules: UpdateRules, now: int, map_rules: MapRules,
                 old_parts: Optional[Dict[int, str]] = None):
        super().__init__(old_parts)
        self.rules, self.now, self.map_rules = rules, now, map_rules

    def complete(self, record):
        return complete_datum(record)

    def decode(self, raw):
        return decode_datum(raw)

    def old_items(self, record, raw, counts):
        return UpdateMapper(self.map_rules).old_item(record, raw, raw is not None, counts)

    def _merged(self, url, olds, values, counts) -> Optional[dict]:
        """merge_counted of a URL's old records and new items (those as bytes decoded)."""
        buckets = {OLD: olds, FETCH: [], LINK: [], SIGNATURE: []}
        for kind, record in values:
            buckets[kind].append(record if record.__class__ is dict else decode_datum(record))
        return merge_counted(buckets, self.now, self.rules, counts)

    def _plain(self) -> bool:
        """No map rule drops or rewrites an old record (beyond its status being a crawldb
        status)."""
        rules = self.map_rules
        return not (rules.purge_gone or rules.filter_urls or rules.normalize)

    def copies_unchanged(self, statuses):
        return self._plain() and all(status in DB_STATUSES for status in statuses)

    def count_copied(self, copied, counts):
        _count_unchanged(copied, counts)

    def write_joined(self, joined, out, counts):
        statuses = collections.Counter()
        decide = self.decide
        for url, status, raw, record, values in joined:
            written = decide(url, status, raw, record, values, counts, statuses)
            if written is not None:
                _put(out, url, written)
        _count_unchanged(statuses, counts)

    def decide_joined(self, joined, counts):
        statuses = collections.Counter()
        decide = self.decide
        decisions = [decide(url, status, raw, record, values, counts, statuses)
                     for url, status, raw, record, values in joined]
        _count_unchanged(statuses, counts)
        return decisions

    def decide(self, url, status, raw, record, values, counts, statuses):
        """What the partition holds for one URL of the join (reducers.Joined's fields): None,
        or (the record's bytes, its status) or (the record, its status); an unchanged old
        record is also counted in `statuses`."""
        if values is not None and values[0][0] in _OLD_KINDS:
            # old records among the new items: a crawldb block the map could not hand
            # over as bytes (storage/datumruns.py), merged with any the join found
            if raw is not None and status in DB_STATUSES:
                values = [(OLD_RAW, raw, status)] + values
            return self._group_decision(url, values, counts, statuses)
        if raw is not None and self._plain():
            if values is None:                                    # the usual case, inlined
                if status in DB_STATUSES:
                    statuses[status] += 1
                    return raw, status
                return None
            if status in DB_STATUSES:
                patched = self._links_only(status, raw, values, counts)
                if patched is not None:
                    return patched, status
        if record is None and raw is not None:
            record = self.decode(raw)
        kept = self.map_rules.old_kept(record, counts) if record is not None else None
        if values is not None:
            merged = self._merged(url, [kept] if kept is not None else [], values, counts)
            return None if merged is None else (merged, merged['status'])
        if kept is not None:
            statuses[kept['status']] += 1
            if kept is record and raw is not None:
                return raw, status
            return kept, kept['status']
        return None

    def _links_only(self, status, raw, values, counts) -> Optional[bytes]:
        """A kept crawldb record (as its bytes) whose update brings no fetch: its bytes with
        the score patched (policy.updatedb.merge_links_only), not decoded and encoded again.
        None when the values hold anything but links and signatures (a fetch, another old
        record) or the record's metadata is not empty."""
        links = []
        for kind, record in values:
            if kind == LINK:
                links.append(record if record.__class__ is dict else decode_datum(record))
            elif kind != SIGNATURE:
                return None
        offset = datum_score_offset(raw)
        if offset is None:
            return None
        score, outcome = merge_links_only(score_at(raw, offset), links, self.rules)
        counts.inc(_OUTCOME_KEY.get(outcome) or metrics.UPDATEDB_OUTCOME + outcome)
        counts.inc(_STATUS_KEY[status])
        return with_score(raw, offset, score)

    def write_grouped(self, groups, out, counts):
        statuses = collections.Counter()
        for url in sorted(groups):
            written = self._group_decision(url, groups[url], counts, statuses)
            if written is not None:
                _put(out, url, written)
        _count_unchanged(statuses, counts)

    def _group_decision(self, url, values, counts, statuses):
        """`decide` for one URL from its items, old records first (old units precede the
        segment's)."""
        if len(values) == 1 and values[0][0] == OLD_RAW:
            statuses[values[0][2]] += 1
            return values[0][1], values[0][2]
        first = values[0]
        # The map kept the old record as it is, so an update of links alone patches its
        # score, as decide does.
        if first[0] == OLD_RAW and len(values) > 1:
            patched = self._links_only(first[2], first[1], values[1:], counts)
            if patched is not None:
                return patched, first[2]
        olds, news = [], []
        for value in values:
            if value[0] == OLD_RAW:
                olds.append(self.decode(value[1]))
            elif value[0] == OLD:
                olds.append(value[1])
            else:
                news.append(value)
        merged = self._merged(url, olds, news, counts)
        return None if merged is None else (merged, merged['status'])


def _put(out, url, written):
    """Writes a decision of UpdateReducer.decide: a record's bytes, or a record."""
    if written[0].__class__ is dict:
        out.write(written[0])
    else:
        out.write_raw(written[0], url, written[1])


def _count_unchanged(statuses, counts):
    counts.inc(metrics.UPDATEDB_OUTCOME + 'unchanged', sum(statuses.values()))
    for status, n in statuses.items():
        counts.inc(metrics.UPDATEDB_STATUS + status, n)


class UpdateCrawlDb(beam.PTransform):
    """PBegin → PCollection[part file]: merges segment records into the crawldb `crawldb`,
    writing its new version `out`.

    Args (keyword-only):
      crawldb: the crawldb (its readable version is read).
      out: the version being written (DbLayout.update()).
      segment_files: crawl_fetch and crawl_parse part files of the segments applied.
      rules: the merge rules (schedule, scoring, retries, additions, inlink bound).
      map_rules: the map phase (purge, address policy, normalize / filter).
      now: the current time, epoch ms (schedule of new URLs).
      partitions: crawldb.partitions (0: chosen from the records and the workers).

    `weight` is the size of the work in crawldb records, for sizing the run (make_pipeline).
    """

    def __init__(self, *, crawldb: DbLayout, out: DbUpdate, segment_files: Sequence[str],
                 rules: UpdateRules, map_rules: MapRules, now: int, partitions: int = 0):
        super().__init__()
        self.crawldb, self.out, self.rules, self.map_rules = crawldb, out, rules, map_rules
        self.now, self.partitions = now, partitions
        self.old_units = avro_units([(OLD_INPUT, f) for f in crawldb.part_files()],
                                    schema=CRAWL_DATUM_SCHEMA, per_unit=RECORDS_PER_UNIT)
        self.new_units = avro_units([(SEGMENT_INPUT, f) for f in segment_files],
                                    schema=CRAWL_DATUM_SCHEMA, per_unit=RECORDS_PER_UNIT,
                                    first_index=len(self.old_units))
        self.weight = sum(u.records for u in self.old_units + self.new_units)

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        # A crawldb partitioned the same way is merged part by part, unless URLs may change.
        plan = partitions.plan(self.crawldb, setting=self.partitions, records=self.weight,
                               workers=workers_of(pbegin.pipeline),
                               remap=self.map_rules.normalize)
        return pbegin | 'MapReduce' >> MapReduce(
            units=self.new_units if plan.old_parts else self.old_units + self.new_units,
            mapper=UpdateMapper(self.map_rules),
            reducer=UpdateReducer(self.rules, self.now, self.map_rules, plan.old_parts),
            partitions=plan.count, out=self.out)
