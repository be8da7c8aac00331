"""dedup (Nutch's DeduplicationJob): of each group of fetched pages sharing a content signature,
all but one become db_duplicate (the one kept: policy/indexing.py `original_key`: the highest
score, then the shortest URL, then the earliest fetch).

  MarkDuplicates   PCollection[CrawlDatum] → the same, duplicates marked
  Dedup            the stage: the crawldb read, marked, written as a new version
"""

from typing import Optional, Tuple

import apache_beam as beam

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.policy.indexing import INDEXABLE, original_key
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.parts import ReadCrawlDb, Record, WriteParts
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA

__all__ = ['MarkDuplicates', 'Dedup']


class _MarkFn(beam.DoFn):
    def __init__(self):
        self.duplicates = metrics.counter(metrics.DEDUP_DUPLICATES)

    def process(self, item):
        key, records = item
        records = list(records)
        if key is None or len(records) == 1:
            yield from records
            return
        records.sort(key=original_key)
        yield records[0]
        for record in records[1:]:
            self.duplicates.inc()
            yield dict(record, status='db_duplicate')


def _signature_key(record: dict) -> Tuple[Optional[bytes], dict]:
    if record['status'] in INDEXABLE and record.get('signature'):
        return record['signature'], record
    return None, record


class MarkDuplicates(beam.PTransform):
    """PCollection[CrawlDatum] (crawldb) → the crawldb with, of each group of fetched pages
    sharing a signature, all but one marked db_duplicate (policy.indexing.original_key)."""

    def expand(self, crawldb: beam.PCollection[Record]) -> beam.PCollection[Record]:
        keyed = crawldb | 'KeyBySignature' >> beam.Map(_signature_key)
        single = (keyed | 'NoSignature' >> beam.Filter(lambda kv: kv[0] is None)
                  | 'Records' >> beam.Map(lambda kv: kv[1]))
        grouped = (keyed | 'Signed' >> beam.Filter(lambda kv: kv[0] is not None)
                   | 'GroupBySignature' >> beam.GroupByKey()
                   | 'Mark' >> beam.ParDo(_MarkFn()))
        return (single, grouped) | 'Merge' >> beam.Flatten()


class Dedup(beam.PTransform):
    """PBegin → PCollection[part file]: the crawldb `crawldb` with its duplicates marked,
    written as its new version `out`."""

    def __init__(self, *, crawldb: DbLayout, out: DbUpdate):
        super().__init__()
        self.crawldb, self.out = crawldb, out

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        return (pbegin
                | 'ReadCrawlDb' >> ReadCrawlDb(self.crawldb)
                | 'MarkDuplicates' >> MarkDuplicates()
                | 'WriteCrawlDb' >> WriteParts(self.out.dir, CRAWL_DATUM_SCHEMA))
