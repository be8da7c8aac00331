"""The statistics tools as one Beam transform: every crawldb record gives its keys
(policy/crawlstats.py) and CountKeys sums them (domainstats, crawlcomplete, protocolstats)."""

import json
from typing import Callable, Hashable, Iterable

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import ReadCrawlDb, Record

__all__ = ['CountKeys', 'count_crawldb']


class CountKeys(beam.PTransform):
    """PCollection[CrawlDatum] → PCollection[(key, count)]: how many records gave each key.

    Args:
      keys_of: record → the keys it adds 1 to (a pure function of policy/crawlstats.py, with
        its settings bound).
    """

    def __init__(self, keys_of: Callable[[Record], Iterable[Hashable]]):
        super().__init__()
        self.keys_of = keys_of

    def expand(self, records):
        return (records
                | 'Keys' >> beam.FlatMap(lambda r, keys_of=self.keys_of: keys_of(r))
                | 'Count' >> beam.combiners.Count.PerElement())


def count_crawldb(crawl_dir, cfg, beam_args, keys_of, what: str):
    """[(key, count)] of CountKeys(keys_of) over the crawl's crawldb, run as one pipeline;
    the counts come back to the driver through a scratch directory (as readdb --stats).
    Keys are JSON values (a list key comes back as a tuple)."""
    crawl = CrawlLayout(crawl_dir)
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    scratch = crawl.scratch_dir(what)
    p = make_pipeline(beam_args, cfg)
    _ = (p
         | 'ReadCrawlDb' >> ReadCrawlDb(crawl.crawldb)
         | 'CountKeys' >> CountKeys(keys_of)
         | 'Json' >> beam.Map(lambda kv: json.dumps([kv[0], kv[1]]))
         | 'Write' >> beam.io.WriteToText(FileSystems.join(scratch, 'counts')))
    try:
        run_pipeline(p, what)
        counts = []
        for path in fs.list_files(FileSystems.join(scratch, 'counts*')):
            with FileSystems.open(path) as f:
                for line in f.read().decode('utf-8').splitlines():
                    key, n = json.loads(line)
                    counts.append((tuple(key) if isinstance(key, list) else key, n))
    finally:
        fs.delete(scratch)
    return counts
