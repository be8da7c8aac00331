"""The Injector as Beam transforms: seed files → normalized, filtered seeds → merged crawldb."""

import logging
import os
from typing import List, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.localfilesystem import LocalFileSystem

from beamcrawl.transforms import metrics
from beamcrawl.transforms.dbio import Record
from beamcrawl.transforms.errors import InputError
from beamcrawl.transforms.policy.inject import (InjectRules, SeedError, injected_datum,
                                                merge_injected, parse_seed_line, pick_last)
from beamcrawl.transforms.policy.urls import UrlPolicy

__all__ = ['seed_files', 'Inject']

log = logging.getLogger('beamcrawl')

_MAX_WARNINGS = 50   # per worker; the counters hold the full numbers
_REJECTED = {'malformed': metrics.INJECT_MALFORMED, 'filtered': metrics.INJECT_FILTERED,
             'denied': metrics.INJECT_DENIED}


def seed_files(path: str) -> List[str]:
    """The seed files of SEEDS (a file, or the plain files directly inside a directory).

    Raises InputError (one line naming the path) when there is nothing readable.
    """
    if not FileSystems.exists(path):
        raise InputError(f'{path}: seeds file or directory not found')
    if isinstance(FileSystems.get_filesystem(path), LocalFileSystem) and os.path.isdir(path):
        files = sorted(os.path.join(path, n) for n in os.listdir(path)
                       if not n.startswith(('.', '_'))
                       and os.path.isfile(os.path.join(path, n)))
        if not files:
            raise InputError(f'{path}: no seed files in this directory')
    else:
        files = [path]
    for name in files:
        try:
            with FileSystems.open(name) as f:
                head = f.read(8192)
        except (IOError, OSError) as e:
            raise InputError(f'{name}: cannot read seeds ({e})') from None
        if b'\x00' in head:
            raise InputError(f'{name}: not a text file of seed URLs')
    return files


class _ReadLinesFn(beam.DoFn):
    """(file index, path) → (file index, line number, raw line bytes)."""

    def process(self, item):
        index, path = item
        with FileSystems.open(path) as f:
            for lineno, raw in enumerate(iter(f.readline, b''), 1):
                yield index, lineno, raw


class _ParseSeedFn(beam.DoFn):
    """Raw seed line → (url, ((file index, line), db_unfetched datum)); drops counted."""

    def __init__(self, *, paths, policy, rules, now, normalize, filter_urls):
        self.paths = paths
        self.policy = policy
        self.rules = rules
        self.now = now
        self.normalize = normalize
        self.filter_urls = filter_urls
        self.counters = {name: metrics.counter(name) for name in (
            metrics.INJECT_LINES, metrics.INJECT_MALFORMED, metrics.INJECT_FILTERED,
            metrics.INJECT_DENIED, metrics.INJECT_BAD_METADATA, metrics.INJECT_INJECTED)}

    def setup(self):
        self._warned = 0

    def _warn(self, where, message):
        if self._warned < _MAX_WARNINGS:
            log.warning('%s: %s', where, message)
        self._warned += 1

    def process(self, item):
        index, lineno, raw = item
        where = f'{self.paths[index]}:{lineno}'
        try:
            seed = parse_seed_line(raw.decode('utf-8'))
        except (UnicodeDecodeError, SeedError) as e:
            self.counters[metrics.INJECT_LINES].inc()
            self.counters[metrics.INJECT_MALFORMED].inc()
            self._warn(where, f'malformed seed line: {e}')
            return
        if seed is None:
            return
        self.counters[metrics.INJECT_LINES].inc()
        for problem in seed.problems:
            self.counters[metrics.INJECT_BAD_METADATA].inc()
            self._warn(where, problem)
        url, reason = self.policy.clean(seed.url, normalize=self.normalize,
                                        filter=self.filter_urls)
        if url is None:
            self.counters[_REJECTED[reason]].inc()
            if reason == 'malformed':
                self._warn(where, f'malformed URL {seed.url!r}')
            elif reason == 'denied':
                self._warn(where, f'{seed.url!r}: refused by the address policy '
                                  f'({self.policy.denied(seed.url)}; see http.address.allow)')
            return
        self.counters[metrics.INJECT_INJECTED].inc()
        yield url, ((index, lineno), injected_datum(url, seed, self.rules, self.now))


class _KeyOldFn(beam.DoFn):
    """Existing crawldb record → (url, record); with filter_normalize_all, cleaned first."""

    def __init__(self, policy, clean):
        self.policy = policy
        self.clean = clean
        self.rejected = metrics.counter(metrics.INJECT_OLD_FILTERED)

    def process(self, record):
        if not self.clean:
            yield record['url'], record
            return
        url, _ = self.policy.clean(record['url'])
        if url is None:
            self.rejected.inc()
            return
        yield url, (record if url == record['url'] else {**record, 'url': url})


class _MergeFn(beam.DoFn):
    """(url, {'seed': [...], 'old': [...]}) → the crawldb record, by Nutch's Injector rules."""

    def __init__(self, rules: InjectRules):
        self.rules = rules
        self.duplicates = metrics.counter(metrics.INJECT_DUPLICATE)
        self.records = metrics.counter(metrics.CRAWLDB_RECORDS)
        self.outcomes = {
            'new': metrics.counter(metrics.INJECT_NEW),
            'already_known': metrics.counter(metrics.INJECT_ALREADY_KNOWN),
            'merged': metrics.counter(metrics.INJECT_MERGED),
            'purged': metrics.counter(metrics.INJECT_PURGED),
        }

    def process(self, kv):
        _, groups = kv
        seeds = list(groups['seed'])
        olds = list(groups['old'])
        if len(seeds) > 1:
            self.duplicates.inc(len(seeds) - 1)
        injected = pick_last(seeds) if seeds else None
        # Several old records per URL only arise when --filter-normalize-all maps two URLs onto
        # one: keep the highest score, then the latest fetch time, then the smallest URL.
        old = min(olds, key=lambda r: (-r['score'], -r['fetch_time'], r['url'])) if olds else None
        record, outcome = merge_injected(injected, old, self.rules)
        if outcome in self.outcomes:
            self.outcomes[outcome].inc()
        if record is not None:
            self.records.inc()
            yield record


class Inject(beam.PTransform):
    """Merges seed files into a crawldb: PCollection[CrawlDatum] (the current crawldb) →
    PCollection[CrawlDatum] (the new one).

    Args (keyword-only):
      seed_paths: seed files (see `seed_files`), read by the workers.
      policy: the URL normalizers and filters.
      rules: the Injector's merge settings.
      now: injection time, epoch ms: the fetch time of new records (due at once).
      normalize, filter_urls: normalize / filter seed URLs (Nutch's -noNormalize / -noFilter).
      filter_normalize_all: normalize and filter the existing records too.
    """

    def __init__(self, *, seed_paths: Sequence[str], policy: UrlPolicy, rules: InjectRules,
                 now: int, normalize: bool = True, filter_urls: bool = True,
                 filter_normalize_all: bool = False):
        super().__init__()
        self.seed_paths = list(seed_paths)
        self.policy = policy
        self.rules = rules
        self.now = now
        self.normalize = normalize
        self.filter_urls = filter_urls
        self.filter_normalize_all = filter_normalize_all

    def expand(self, old_db: beam.PCollection[Record]) -> beam.PCollection[Record]:
        seeds = (old_db.pipeline
                 | 'SeedFiles' >> beam.Create(list(enumerate(self.seed_paths)))
                 | 'ReadLines' >> beam.ParDo(_ReadLinesFn())
                 | 'Reshuffle' >> beam.Reshuffle()
                 | 'ParseSeeds' >> beam.ParDo(_ParseSeedFn(
                     paths=self.seed_paths, policy=self.policy, rules=self.rules, now=self.now,
                     normalize=self.normalize, filter_urls=self.filter_urls)))
        old = old_db | 'KeyOld' >> beam.ParDo(_KeyOldFn(self.policy, self.filter_normalize_all))
        return ({'seed': seeds, 'old': old}
                | 'JoinByUrl' >> beam.CoGroupByKey()
                | 'Merge' >> beam.ParDo(_MergeFn(self.rules)))
