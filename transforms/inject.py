"""inject (Nutch's Injector): seed files and the crawldb → a new crawldb version.

`Inject` is the stage: a MapReduce (engine/mapreduce.py) whose map side reads seed lines
(normalized, filtered, checked against the address policy: `SeedReader`) and crawldb records,
and whose reduce side merges them per URL by Nutch's Injector rules (policy/inject.py) and
writes each partition sorted by URL; crawldb records that no seed names are copied as their
bytes (docs/performance.md).
"""

import logging
import os
from typing import Dict, List, Optional, Sequence

import apache_beam as beam

from beamcrawl.transforms.base import compression, metrics
from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.engine import partitions
from beamcrawl.transforms.engine.items import OLD, OLD_RAW, SEED, SEED_RAW
from beamcrawl.transforms.engine.mapreduce import MapReduce
from beamcrawl.transforms.engine.reducers import JoinReducer, Mapper
from beamcrawl.transforms.engine.units import (BYTES_PER_TEXT_UNIT, RECORDS_PER_UNIT, Unit,
                                               avro_units, read_unit_lines, text_units)
from beamcrawl.transforms.policy.inject import (InjectRules, SeedError, injected_datum,
                                                merge_injected, parse_seed_line, pick_last)
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.runners.runtime import workers_of
from beamcrawl.transforms.storage import container, fs
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.datumcodec import encode_datum
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, complete_datum

__all__ = ['seed_files', 'Inject', 'SeedReader', 'merge_seeds', 'InjectMapper', 'InjectReducer',
           'SEED_INPUT', 'OLD_INPUT']

log = logging.getLogger('beamcrawl')

_MAX_WARNINGS = 50   # per worker; the counters hold the full numbers
_REJECTED = {'malformed': metrics.INJECT_MALFORMED, 'filtered': metrics.INJECT_FILTERED,
             'denied': metrics.INJECT_DENIED}


def seed_files(path: str) -> List[str]:
    """The seed files of SEEDS (a file, or the plain files directly inside a directory).

    Raises InputError (one line naming the path) when there is nothing readable.
    """
    if not fs.exists(path):
        raise InputError(f'{path}: seeds file or directory not found')
    if fs.is_local(path):
        directory = os.path.isdir(path)
        inside = [p for p in fs.children(path) if os.path.isfile(p)] if directory else []
    else:                       # a file on HDFS or S3 has no children, a directory does
        kids = fs.children(path)
        directory = bool(kids)
        inside = [p for p in kids if not fs.children(p)]
    if directory:
        files = [p for p in inside if not fs.basename(p).startswith(('.', '_'))]
        if not files:
            raise InputError(f'{path}: no seed files in this directory')
    else:
        files = [path]
    for name in files:
        how = compression.kind(name)
        try:
            with fs.open_read(name) as f:
                # a compressed file's later bytes are checked as it is copied (text_units)
                head = compression.head(f, how) if how else f.read(8192)
        except (IOError, OSError) as e:
            raise InputError(f'{name}: cannot read seeds ({e})') from None
        except compression.CompressionError as e:
            raise InputError(f'{name}: {e}') from None
        if b'\x00' in head:
            raise InputError(f'{name}: not a text file of seed URLs')
    return files


class SeedReader:
    """Seed lines → (url, (file index, line number), db_unfetched datum), with the Injector's
    checks; every drop is counted and the first ones are logged with file:line."""

    def __init__(self, *, paths, policy, rules, now, normalize, filter_urls):
        self.paths = list(paths)
        self.policy = policy
        self.rules = rules
        self.now = now
        self.normalize = normalize
        self.filter_urls = filter_urls
        self._warned = 0

    def _warn(self, where, message):
        if self._warned < _MAX_WARNINGS:
            log.warning('%s: %s', where, message)
        self._warned += 1

    def seeds(self, index: int, lines, counts):
        """(url, (file index, line number), db_unfetched datum) of each seed of the raw lines
        [(line number, bytes)] of file `index`; the others counted and the first ones logged.
        The lines and seeds injected are counted once at the end, not per line."""
        lines_read = injected = 0
        clean, normalize, filter_urls = self.policy.clean, self.normalize, self.filter_urls
        rules, now = self.rules, self.now
        try:
            for lineno, raw in lines:
                try:
                    seed = parse_seed_line(raw.decode('utf-8'))
                except (UnicodeDecodeError, SeedError) as e:
                    lines_read += 1
                    counts.inc(metrics.INJECT_MALFORMED)
                    self._warn(f'{self.paths[index]}:{lineno}', f'malformed seed line: {e}')
                    continue
                if seed is None:
                    continue
                lines_read += 1
                for problem in seed.problems:
                    counts.inc(metrics.INJECT_BAD_METADATA)
                    self._warn(f'{self.paths[index]}:{lineno}', problem)
                url, reason = clean(seed.url, normalize=normalize, filter=filter_urls)
                if url is None:
                    self._rejected(index, lineno, seed.url, reason, counts)
                    continue
                injected += 1
                yield url, (index, lineno), injected_datum(url, seed, rules, now)
        finally:
            counts.inc(metrics.INJECT_LINES, lines_read)
            counts.inc(metrics.INJECT_INJECTED, injected)

    def _rejected(self, index, lineno, url, reason, counts):
        counts.inc(_REJECTED[reason])
        where = f'{self.paths[index]}:{lineno}'
        if reason == 'malformed':
            self._warn(where, f'malformed URL {url!r}')
        elif reason == 'denied':
            self._warn(where, f'{url!r}: refused by the address policy '
                              f'({self.policy.denied(url)}; see http.address.allow)')


_OUTCOMES = {'new': metrics.INJECT_NEW, 'already_known': metrics.INJECT_ALREADY_KNOWN,
             'merged': metrics.INJECT_MERGED, 'purged': metrics.INJECT_PURGED}


def merge_seeds(seeds: list, olds: list, rules: InjectRules, counts):
    """The crawldb record of one URL from its seeds [(key, datum)] and old records, by Nutch's
    Injector rules (merge_injected); counted. None: nothing to write."""
    if len(seeds) > 1:
        counts.inc(metrics.INJECT_DUPLICATE, len(seeds) - 1)
    injected = pick_last(seeds) if seeds else None
    # Several old records per URL only arise when --filter-normalize-all maps two URLs onto
    # one: keep the highest score, then the latest fetch time, then the smallest URL.
    old = min(olds, key=lambda r: (-r['score'], -r['fetch_time'], r['url'])) if olds else None
    record, outcome = merge_injected(injected, old, rules)
    if outcome in _OUTCOMES:
        counts.inc(_OUTCOMES[outcome])
    if record is not None:
        counts.inc(metrics.CRAWLDB_RECORDS)
    return record


SEED_INPUT, OLD_INPUT = 'seeds', 'old'     # the tags of units.Unit


class InjectMapper(Mapper):
    """The map side of inject (items: engine/items.py): seed-file units → (url, (SEED_RAW,
    key, encoded datum, status)), or (SEED, key, datum) for a datum the hand encoder leaves
    to fastavro; crawldb units → (url, (OLD_RAW, bytes, status)), or (url, (OLD, record)) when
    --filter-normalize-all changed it or its file has another schema."""

    def __init__(self, reader: SeedReader, clean_old: bool):
        self.reader, self.clean_old = reader, clean_old

    def map(self, unit: Unit, counts):
        if unit.tag == SEED_INPUT:
            index = self.reader.paths.index(unit.path)
            statuses = {}                     # one object per status: pickled once per spill
            for url, key, datum in self.reader.seeds(index, read_unit_lines(unit), counts):
                encoded = encode_datum(datum)
                if encoded is None:
                    yield url, (SEED, key, datum)
                else:
                    status = statuses.setdefault(datum['status'], datum['status'])
                    yield url, (SEED_RAW, key, encoded, status)
            return
        for record, raw in container.read_records(unit.path, unit.blocks):
            if not unit.raw_ok:
                record = complete_datum(record)
            yield from self.old_item(record, raw if unit.raw_ok else None, counts)

    def old_item(self, record, raw, counts):
        if self.clean_old:
            url, _ = self.reader.policy.clean(record['url'])
            if url is None:
                counts.inc(metrics.INJECT_OLD_FILTERED)
                return
            if url != record['url']:
                yield url, (OLD, {**record, 'url': url})
                return
        if raw is not None:
            yield record['url'], (OLD_RAW, raw, record['status'])
        else:
            yield record['url'], (OLD, record)


class InjectReducer(JoinReducer):
    """reducers.Reducer of inject: merges the seeds of each URL with its crawldb record (Nutch's
    Injector reducer, merge_seeds) and writes the partition sorted by URL; crawldb records
    that no seed names are copied as their bytes (purged when db.update.purge.404 says so)."""

    schema = CRAWL_DATUM_SCHEMA

    def __init__(self, rules: InjectRules, mapper: InjectMapper,
                 old_parts: Optional[Dict[int, str]] = None):
        super().__init__(old_parts)
        self.rules, self.mapper = rules, mapper

    def complete(self, record):
        return complete_datum(record)

    def old_items(self, record, raw, counts):
        return self.mapper.old_item(record, raw, counts)

    def _kept(self, status, counts) -> bool:
        """Whether an old record that no seed names stays (merge_injected without a seed)."""
        if self.rules.purge_gone and status == 'db_gone':
            counts.inc(metrics.INJECT_PURGED)
            return False
        counts.inc(metrics.CRAWLDB_RECORDS)
        return True

    def _write(self, url, seeds, olds, out, counts):
        if len(seeds) == 1 and not olds and seeds[0][0] == SEED_RAW:
            # a new URL with one seed: merge_seeds would write the injected record as it is
            counts.inc(metrics.INJECT_NEW)
            counts.inc(metrics.CRAWLDB_RECORDS)
            out.write_raw(seeds[0][2], url, seeds[0][3])
            return
        record = merge_seeds([(value[1], self.decode(value[2]) if value[0] == SEED_RAW
                               else value[2]) for value in seeds], olds, self.rules, counts)
        if record is not None:
            out.write(record)

    def copies_unchanged(self, statuses):
        return not (self.rules.purge_gone and 'db_gone' in statuses)

    def count_copied(self, copied, counts):
        if copied:
            counts.inc(metrics.CRAWLDB_RECORDS, sum(copied.values()))

    def write_joined(self, joined, out, counts):
        for url, status, raw, record, values in joined:
            if values is None:
                if self._kept(status, counts):
                    if raw is not None:
                        out.write_raw(raw, url, status)
                    else:
                        out.write(record)
                continue
            if record is None and raw is not None:
                record = self.decode(raw)
            self._write(url, values, [record] if record is not None else [], out, counts)

    def write_grouped(self, groups, out, counts):
        new = 0             # new URLs with one seed (_write's first case), counted at the end
        write_raw = out.write_raw
        for url in sorted(groups):
            values = groups[url]
            if len(values) == 1:
                value = values[0]
                if value[0] == SEED_RAW:
                    new += 1
                    write_raw(value[2], url, value[3])
                    continue
                if value[0] == OLD_RAW:
                    if self._kept(value[2], counts):
                        write_raw(value[1], url, value[2])
                    continue
            seeds, olds = [], []
            for value in values:
                if value[0] == SEED or value[0] == SEED_RAW:
                    seeds.append(value)
                elif value[0] == OLD_RAW:
                    olds.append(self.decode(value[1]))
                else:
                    olds.append(value[1])
            self._write(url, seeds, olds, out, counts)
        counts.inc(metrics.INJECT_NEW, new)
        counts.inc(metrics.CRAWLDB_RECORDS, new)


# A seed line costs about as much as this many crawldb records (it is normalized and filtered),
# and seed files hold about this many bytes per line: for sizing the work only.
_SEED_WEIGHT = 4
_BYTES_PER_SEED = 60


class Inject(beam.PTransform):
    """PBegin → PCollection[part file]: merges seed files into the crawldb `crawldb`, writing
    its new version `out`.

    Args (keyword-only):
      crawldb: the crawldb (its readable version is read).
      out: the version being written (DbLayout.update()).
      seed_paths: seed files (see `seed_files`), read by the workers.
      policy: the URL normalizers and filters, and the address policy.
      rules: the Injector's merge settings.
      now: injection time, epoch ms: the fetch time of new records (due at once).
      partitions: crawldb.partitions (0: chosen from the records and the workers).
      normalize, filter_urls: normalize / filter seed URLs (Nutch's -noNormalize / -noFilter).
      filter_normalize_all: normalize and filter the existing records too.

    `weight` is the size of the work in crawldb records, for sizing the run (make_pipeline).
    """

    def __init__(self, *, crawldb: DbLayout, out: DbUpdate, seed_paths: Sequence[str],
                 policy: UrlPolicy, rules: InjectRules, now: int, partitions: int = 0,
                 normalize: bool = True, filter_urls: bool = True,
                 filter_normalize_all: bool = False):
        super().__init__()
        self.crawldb, self.out, self.rules = crawldb, out, rules
        self.partitions, self.clean_old = partitions, filter_normalize_all
        self.reader = SeedReader(paths=seed_paths, policy=policy, rules=rules, now=now,
                                 normalize=normalize, filter_urls=filter_urls)
        self.seed_units = text_units([(SEED_INPUT, f) for f in seed_paths],
                                     per_unit=BYTES_PER_TEXT_UNIT, scratch=out.scratch)
        self.old_units = avro_units([(OLD_INPUT, f) for f in crawldb.part_files()],
                                    schema=CRAWL_DATUM_SCHEMA, per_unit=RECORDS_PER_UNIT,
                                    first_index=len(self.seed_units))
        seeds = sum(u.text_bytes for u in self.seed_units) // _BYTES_PER_SEED
        self.records = sum(u.records for u in self.old_units) + seeds
        self.weight = self.records + (_SEED_WEIGHT - 1) * seeds

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        # A crawldb partitioned the same way is merged part by part, unless URLs may change.
        plan = partitions.plan(self.crawldb, setting=self.partitions, records=self.records,
                               workers=workers_of(pbegin.pipeline), remap=self.clean_old)
        mapper = InjectMapper(self.reader, clean_old=self.clean_old)
        return pbegin | 'MapReduce' >> MapReduce(
            units=self.seed_units + ([] if plan.old_parts else self.old_units), mapper=mapper,
            reducer=InjectReducer(self.rules, mapper, plan.old_parts),
            partitions=plan.count, out=self.out)
