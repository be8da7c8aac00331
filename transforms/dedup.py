"""dedup (Nutch's DeduplicationJob): of each group of fetched pages sharing a content signature,
all but one become db_duplicate (the one kept: policy/indexing.py `original_key`: the highest
score, then the latest fetch time, then the shortest URL, as Nutch). With `near` (a distance in bits), a
group is also made of pages whose SimHash fingerprints are that close, transitively
(`dedup --near`; below).

`Dedup` is the stage, a bulk join that reads the crawldb twice (docs/performance.md, "dedup"):

    crawldb units ──Signatures──▶ (bucket, [(signature, key, part)]) ──GroupByKey──▶ Groups
        ──▶ (part, [duplicate URLs]) ──joined with every part──▶ Rewrite ──▶ the new version

* Signatures reads only what a group needs of the fetched pages (db_fetched, db_notmodified):
  with a part's keys file (storage/keysfile.py) only those records are decoded at all.
* Groups finds, per bucket of signatures, the groups of more than one page, and names the
  pages to mark by the part that holds them.
* Rewrite writes each part of the new version: a part with no page to mark is copied as it is
  (with its keys file); a part with some is written again in the same order, every other record
  as its bytes. Parts keep their names and order and the version keeps its `_partitions` note,
  so the update after dedup still merges the crawldb part by part (engine/partitions.py).

With `near`, Signatures and Groups are replaced by three steps (policy/simhash.py):

    crawldb units ──NearKeys──▶ (bucket, [(signature or band, page, fingerprint)]) ──GroupByKey──▶
        Pairs ──▶ pairs of pages ──one GroupByKey──▶ NearGroups ──▶ (part, [duplicate URLs])

* NearKeys gives each fetched page its candidate keys: its signature and the bands of its
  fingerprint (crawldb metadata `_simhash_`, from its parse).
* Pairs compares, per key, only the pages that share it: a signature's pages are chained, a
  band's are compared two by two (within the distance or not).
* NearGroups joins the pairs into groups in one process (only pages that have a near-duplicate
  reach it) and names all but the one kept of each group.
"""

import collections
import io
import typing
import zlib
from typing import Dict, Iterable, List, Optional

import apache_beam as beam
import fastavro

from beamcrawl.transforms.base import metrics, progress
from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, Unit, avro_units, spread
from beamcrawl.transforms.policy.indexing import INDEXABLE, duplicates_of, original_key
from beamcrawl.transforms.policy.simhash import (SIMHASH_KEY, band_widths, bands, from_hex,
                                                 groups_of_pairs, near_pairs)
from beamcrawl.transforms.runners.runtime import workers_of
from beamcrawl.transforms.storage import container, deflate, fs, keysfile, partwriter
from beamcrawl.transforms.storage.databases import PARTITIONS_NOTE, DbLayout, DbUpdate
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, complete_datum

__all__ = ['Dedup']

DUPLICATE = 'db_duplicate'
# Signatures are spread over this many buckets per worker for the grouping (each bucket a dict
# in one process; a 1M-URL crawldb with 667k fetched pages: 1.17 GB peak RSS for the command and
# its workers, bench/README.md).
_BUCKETS_PER_WORKER = 4
# `dedup --near`: a band value shared by more pages than this is not searched for pairs.
_MAX_BAND_PAGES = 2000


def _parsed_schema():
    return fastavro.parse_schema(CRAWL_DATUM_SCHEMA)


def _fetched_records(unit: Unit) -> Iterable[dict]:
    """The records of a unit that dedup looks at (status db_fetched or db_notmodified). From a
    part with its keys file, only those records are decoded."""
    if unit.raw_ok and unit.blocks:
        part = keysfile.open_keyed(unit.path)
        if part is not None:
            yield from _keyed_fetched(part, set(unit.blocks))
            return
    for record, _ in container.read_records(unit.path, list(unit.blocks) if unit.blocks else None,
                                            with_raw=False):
        if record.get('status') in INDEXABLE:
            yield complete_datum(record)


def _keyed_fetched(part: keysfile.KeyedPart, offsets) -> Iterable[dict]:
    _, index, statuses, lengths = part.keys[:4]
    wanted = bytes(1 if s in INDEXABLE else 0 for s in statuses)
    if not any(wanted):
        return
    schema, decode = _parsed_schema(), fastavro.schemaless_reader
    header, blocks = container.scan_blocks(part.path)
    if [b.count for b in blocks] != part.keys.blocks:
        raise container.unreadable(part.path, ValueError('the part does not match its keys file'))
    with container.open_part(part.path) as f:
        first = 0
        for block in blocks:
            count = block.count
            if block.offset in offsets and any(wanted[index[j]]
                                               for j in range(first, first + count)):
                _, data = container.read_block(f, block.offset)
                if header.codec == 'deflate':
                    data = deflate.inflate_raw(data)
                pos = 0
                for j in range(first, first + count):
                    end = pos + lengths[j]
                    if wanted[index[j]]:
                        yield decode(io.BytesIO(data[pos:end]), schema)
                    pos = end
            first += count


class _SignaturesFn(beam.DoFn):
    """A unit → (bucket, [(signature, original_key, part)]) for its fetched pages with a
    signature, one list per bucket."""

    def __init__(self, buckets: int, done: progress.Reporter):
        self.buckets, self.done = buckets, done

    def process(self, unit: Unit):
        n = self.buckets
        lists: Dict[int, list] = collections.defaultdict(list)
        for record in _fetched_records(unit):
            signature = record.get('signature')
            if signature:
                lists[zlib.crc32(signature) % n].append(
                    (signature, original_key(record), unit.path))
        self.done.add(unit.records)
        yield from lists.items()


class _GroupsFn(beam.DoFn):
    """(bucket, lists) → (part, [URLs to mark]) for the pages that are not the one kept of
    their group."""

    def __init__(self):
        self.duplicates = metrics.counter(metrics.DEDUP_DUPLICATES)

    def process(self, item):
        yield from _marks_by_part(_grouped(item[1]).values(), self.duplicates)


def _grouped(lists) -> Dict[object, list]:
    """A bucket's lists of (key, a, b) entries → {key: [(a, b), ...]}."""
    groups: Dict[object, list] = collections.defaultdict(list)
    for entries in lists:
        for key, a, b in entries:
            groups[key].append((a, b))
    return groups


def _marks_by_part(groups, counter) -> Iterable[tuple]:
    """(part, [URLs to mark]) for the groups of pages (each page (original_key, part)): all
    but the one kept of each group, counted."""
    marked: Dict[str, List[str]] = collections.defaultdict(list)
    for group in groups:
        for key, path in duplicates_of(group):
            marked[path].append(key[-1])
    for path, urls in marked.items():
        counter.inc(len(urls))
        yield path, urls


class _NearKeysFn(beam.DoFn):
    """`dedup --near`: a unit → (bucket, [(candidate key, page, fingerprint)]) for its fetched
    pages, where a page is (original_key, part) and its candidate keys are its signature (exact
    duplicates) and the `distance + 1` bands of its SimHash fingerprint (policy/simhash.py):
    two pages within the distance share a band."""

    def __init__(self, buckets: int, distance: int, done: progress.Reporter):
        self.buckets, self.distance, self.done = buckets, distance, done

    def process(self, unit: Unit):
        n, distance = self.buckets, self.distance
        lists: Dict[int, list] = collections.defaultdict(list)
        for record in _fetched_records(unit):
            page = (original_key(record), unit.path)
            signature = record.get('signature')
            if signature:
                lists[zlib.crc32(signature) % n].append((signature, page, None))
            fingerprint = from_hex((record.get('metadata') or {}).get(SIMHASH_KEY, ''))
            if fingerprint is not None:
                for band in bands(fingerprint, distance):
                    lists[zlib.crc32(repr(band).encode()) % n].append((band, page, fingerprint))
        self.done.add(unit.records)
        yield from lists.items()


class _NearPairsFn(beam.DoFn):
    """(bucket, lists) → (None, [pairs of pages]): the pages sharing a signature, chained, and
    those sharing a band value whose fingerprints are within the distance. A band value shared
    by more than _MAX_BAND_PAGES pages is left out (counted): its pairs would be too many to
    compare, and such pages (boilerplate only, near-empty) are rarely what dedup is for."""

    def __init__(self, distance: int):
        self.distance = distance
        self.crowded = metrics.counter(metrics.DEDUP_NEAR_CROWDED)

    def process(self, item):
        pairs = []
        for key, members in _grouped(item[1]).items():
            if len(members) < 2:
                continue
            if isinstance(key, bytes):                     # one signature: all one group
                pages = sorted(page for page, _ in members)
                pairs.extend(zip(pages, pages[1:]))
            elif len(members) > _MAX_BAND_PAGES:
                self.crowded.inc()
            else:
                pairs.extend(near_pairs(members, self.distance))
        if pairs:
            yield None, pairs


class _NearGroupsFn(beam.DoFn):
    """(None, [pairs]) → (part, [URLs to mark]): the groups the pairs join (transitively, in
    one process: only pages with a near-duplicate get here), all but the one kept of each."""

    def __init__(self):
        self.duplicates = metrics.counter(metrics.DEDUP_DUPLICATES)

    def process(self, item):
        _, lists = item
        yield from _marks_by_part(groups_of_pairs(pair for pairs in lists for pair in pairs),
                                  self.duplicates)


class _RewriteFn(beam.DoFn):
    """(old part, [[URLs to mark], ...]) → the part of the new version in `out_dir`, same name."""

    def __init__(self, out_dir: str, done: progress.Reporter):
        self.out_dir, self.done = out_dir, done

    def process(self, item):
        path, lists = item
        urls = {url for urls in lists if urls for url in urls}
        target = fs.join(self.out_dir, fs.basename(path))
        if not urls:
            _copy_part(path, target)
        else:
            _rewrite_part(path, target, urls)
        self.done.add(1)
        yield target


def _copy_part(path: str, target: str) -> None:
    """A part (and its keys file) copied unchanged."""
    keys = keysfile.keys_path(path)
    try:
        fs.copy_file(path, target)
        if fs.exists(keys):
            fs.copy_file(keys, keysfile.keys_path(target))
    except OSError as e:
        raise partwriter.named(e, target) from e
    metrics.counter(metrics.STORE_PARTS).inc()


def _rewrite_part(path: str, target: str, urls) -> None:
    """The part written again in its order, the pages named in `urls` marked db_duplicate."""
    schema = _parsed_schema()
    raw_ok = container.read_header(path).schema == schema
    keyed = keysfile.read_keyed(path) if raw_ok else None
    with partwriter.PartWriter(target, CRAWL_DATUM_SCHEMA, keys=True) as out:
        if keyed is not None:
            for url, status, raw in keyed:
                if url in urls and status in INDEXABLE:
                    record = fastavro.schemaless_reader(io.BytesIO(raw), schema)
                    out.write(dict(record, status=DUPLICATE))
                else:
                    out.write_raw(raw, url, status)
            return
        for record, raw in container.read_records(path, with_raw=raw_ok):
            if record['url'] in urls and record['status'] in INDEXABLE:
                out.write(dict(complete_datum(record), status=DUPLICATE))
            elif raw is not None:
                out.write_raw(raw, record['url'], record['status'])
            else:
                out.write(complete_datum(record))


class Dedup(beam.PTransform):
    """PBegin → PCollection[part file]: the crawldb `crawldb` with its duplicates marked,
    written as its new version `out` (parts named and ordered as the current version's)."""

    def __init__(self, *, crawldb: DbLayout, out: DbUpdate, near: Optional[int] = None):
        super().__init__()
        self.crawldb, self.out, self.near = crawldb, out, near
        if near is not None:
            band_widths(near)                   # ValueError for a distance out of range
        self.parts = crawldb.part_files()
        self.units = avro_units([('old', p) for p in self.parts], schema=CRAWL_DATUM_SCHEMA,
                                per_unit=RECORDS_PER_UNIT)
        self.weight = sum(u.records for u in self.units)

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        partitioned: Optional[str] = self.crawldb.read_note(PARTITIONS_NOTE)
        if partitioned is not None:
            self.out.write_note(PARTITIONS_NOTE, partitioned)
        workers = workers_of(pbegin.pipeline)
        units = (pbegin
                 | 'Units' >> beam.Create(spread(self.units, workers))
                 .with_output_types(typing.Any))
        buckets = _BUCKETS_PER_WORKER * workers
        read = progress.stage(pbegin.pipeline, 'read', self.weight, 'records')
        rewritten = progress.stage(pbegin.pipeline, 'rewrite', len(self.parts), 'parts')
        if self.near is None:
            marked = (units
                      | 'Signatures' >> beam.ParDo(_SignaturesFn(buckets, read))
                      | 'BySignature' >> beam.GroupByKey()
                      | 'Groups' >> beam.ParDo(_GroupsFn()))
        else:
            marked = (units
                      | 'NearKeys' >> beam.ParDo(_NearKeysFn(buckets, self.near, read))
                      | 'ByKey' >> beam.GroupByKey()
                      | 'Pairs' >> beam.ParDo(_NearPairsFn(self.near))
                      | 'AllPairs' >> beam.GroupByKey()
                      | 'NearGroups' >> beam.ParDo(_NearGroupsFn()))
        every = pbegin | 'EveryPart' >> beam.Create([(p, None) for p in self.parts])
        return ((marked, every)
                | 'All' >> beam.Flatten()
                | 'ByPart' >> beam.GroupByKey()
                | 'Rewrite' >> beam.ParDo(_RewriteFn(self.out.dir, rewritten)))
