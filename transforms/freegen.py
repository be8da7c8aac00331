"""freegen (Nutch's FreeGenerator): a segment's fetch list straight from files of URLs, without
the crawldb.

`FreeGenerate` reads the URL files in units of lines (engine/units.py) as inject reads seed
files (`SeedReader`: the same line format, checks and counters; normalizing and filtering only
when asked, as Nutch's -normalize and -filter), keeps one record per URL (the last line naming
it: policy/inject.py `pick_last`), marks it generated (`_ngt_` = now) and writes the fetch list
as generate does (`WriteFetchLists`: the URLs of a host in one part).
"""

from typing import Any, Sequence, Tuple

import apache_beam as beam

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.engine.units import BYTES_PER_TEXT_UNIT, read_unit_lines, text_units
from beamcrawl.transforms.generate import WriteFetchLists
from beamcrawl.transforms.inject import SeedReader
from beamcrawl.transforms.policy.inject import InjectRules, pick_last
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage.records import METADATA_GENERATE_TIME

__all__ = ['FreeGenerate']


class _ReadUrlsFn(beam.DoFn):
    """A unit of lines → (url, ((file, line), db_unfetched datum)) per accepted line."""

    def __init__(self, reader: SeedReader):
        self.reader = reader

    def process(self, unit):
        counts = metrics.BundleCounts()
        index = self.reader.paths.index(unit.path)
        for url, key, datum in self.reader.seeds(index, read_unit_lines(unit), counts):
            yield url, (key, datum)
        counts.flush()


class _PickFn(beam.DoFn):
    def __init__(self, now: int):
        self.marker = str(now)

    def process(self, item):
        url, seeds = item
        seeds = list(seeds)
        if len(seeds) > 1:
            metrics.counter(metrics.INJECT_DUPLICATE).inc(len(seeds) - 1)
        datum = pick_last(seeds)
        metrics.counter(metrics.MERGE_WRITTEN).inc()
        yield 1, dict(datum, metadata={**datum['metadata'], METADATA_GENERATE_TIME: self.marker})


class FreeGenerate(beam.PTransform):
    """PBegin → PCollection[part file]: the fetch list of the URLs in `url_paths`, written as
    crawl_generate parts into `part_dir`.

    Args (keyword-only):
      url_paths: text files of URLs, one a line (inject's seed line format).
      part_dir: the crawl_generate directory being written (SegmentUpdate.tmp).
      num_parts: fetch-list parts (--num-fetchers).
      mode: partition.url.mode.
      policy: the URL normalizers and filters, and the address policy.
      rules: how a record is made from a line (db.score.injected, db.fetch.interval.default).
      now: the generate time, epoch ms.
      normalize, filter_urls: normalize / filter the URLs.
    """

    def __init__(self, *, url_paths: Sequence[str], part_dir: str, num_parts: int, mode: str,
                 policy: UrlPolicy, rules: InjectRules, now: int, normalize: bool = False,
                 filter_urls: bool = False):
        super().__init__()
        self.reader = SeedReader(paths=url_paths, policy=policy, rules=rules, now=now,
                                 normalize=normalize, filter_urls=filter_urls)
        self.units = text_units([('urls', f) for f in url_paths], per_unit=BYTES_PER_TEXT_UNIT)
        self.write = WriteFetchLists(part_dirs={1: part_dir}, num_parts=num_parts, mode=mode,
                                     policy=policy)
        self.now = now

    def expand(self, pbegin) -> beam.PCollection[str]:
        return (pbegin
                | 'Units' >> beam.Create(self.units)
                | 'Read' >> beam.ParDo(_ReadUrlsFn(self.reader)).with_output_types(
                    Tuple[str, Any])
                | 'ByUrl' >> beam.GroupByKey()
                | 'Pick' >> beam.ParDo(_PickFn(self.now))
                | 'WriteFetchList' >> self.write)
