"""The indexer as Beam transforms (Nutch's IndexerMapReduce and DeduplicationJob).

  JoinByUrl          crawldb, linkdb, parse_data, parse_text → per URL, everything known of it
  BuildDocuments     → per URL a document or a deletion, keyed by index shard
  WriteIndexShards   → each shard's Tantivy index updated in a new directory (one writer per
                       shard, as Nutch writes one index per reducer); yields (shard, directory)
  MarkDuplicates     crawldb → crawldb with all but one page of each signature db_duplicate
"""

from typing import Dict, Optional, Tuple

import apache_beam as beam

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.storage.parts import Record
from beamcrawl.transforms.policy.indexing import (INDEXABLE, IndexRules, build_document,
                                                  deletion, original_key)
from beamcrawl.transforms.policy.partition import partition
from beamcrawl.transforms.storage.shards import update_shard

__all__ = ['JoinByUrl', 'BuildDocuments', 'WriteIndexShards', 'MarkDuplicates', 'DOC', 'DELETE']

DOC, DELETE = 'doc', 'delete'


class JoinByUrl(beam.PTransform):
    """{'crawldb': PCollection[CrawlDatum], 'linkdb': PCollection[Inlinks],
    'parse_data': PCollection[(segment, ParseData)], 'parse_text': PCollection[(segment,
    ParseText)]} → PCollection[(url, {name: [values]})]: a CoGroupByKey by URL."""

    def expand(self, inputs: Dict[str, beam.PCollection]) -> beam.PCollection:
        keyed = {
            'crawldb': inputs['crawldb'] | 'KeyDb' >> beam.Map(lambda r: (r['url'], r)),
            'linkdb': inputs['linkdb'] | 'KeyLinks' >> beam.Map(
                lambda r: (r['url'], [(i['from_url'], i['anchor']) for i in r['inlinks']])),
            'parse_data': inputs['parse_data'] | 'KeyData' >> beam.Map(
                lambda item: (item[1]['url'], item)),
            'parse_text': inputs['parse_text'] | 'KeyText' >> beam.Map(
                lambda item: (item[1]['url'], item)),
        }
        return keyed | 'CoGroupByUrl' >> beam.CoGroupByKey()


class _BuildFn(beam.DoFn):
    def __init__(self, rules: IndexRules, shards: int):
        self.rules, self.shards = rules, shards

    def start_bundle(self):
        self._counts = metrics.BundleCounts()

    def finish_bundle(self):
        self._counts.flush()

    def process(self, item):
        url, groups = item
        dbs = list(groups['crawldb'])
        if not dbs:
            return                       # parsed, but not in the crawldb (updatedb not run)
        db = dbs[0]
        shard = partition(url, self.shards)
        reason = deletion(db)
        if reason:
            self._counts.inc(metrics.INDEX_DELETED + reason)
            yield shard, (DELETE, url)
            return
        parses = list(groups['parse_data'])
        if not parses:
            return                       # not in the segments being indexed
        segment, data = max(parses, key=lambda p: p[0])
        text = next((t for s, t in groups['parse_text'] if s == segment), None)
        inlinks = [pair for pairs in groups['linkdb'] for pair in pairs]
        doc = build_document(db, inlinks, data, text, self.rules)
        if doc is None:
            self._counts.inc(metrics.INDEX_SKIPPED)
            return
        self._counts.inc(metrics.INDEX_DOCUMENTS)
        yield shard, (DOC, doc)


class BuildDocuments(beam.PTransform):
    """PCollection[(url, joined)] → PCollection[(shard, ('doc', document) | ('delete', url))].

    Args:
      rules: the indexing rules (boost power, text and anchor limits).
      shards: how many index shards; a URL belongs to shard crc32(url) mod shards.
    """

    def __init__(self, *, rules: IndexRules, shards: int):
        super().__init__()
        self.rules, self.shards = rules, shards

    def expand(self, joined):
        return joined | 'Build' >> beam.ParDo(_BuildFn(self.rules, self.shards))


class _WriteShardFn(beam.DoFn):
    """(shard, [('doc', d) | ('delete', url)]) → (shard, new directory), written aside."""

    def __init__(self, *, old_shards: Dict[int, str], new_dir):
        self.old_shards, self.new_dir = old_shards, new_dir

    def start_bundle(self):
        self._counts = metrics.BundleCounts()

    def finish_bundle(self):
        self._counts.flush()

    def process(self, item):
        shard, values = item
        docs, deletions = [], []
        for kind, value in values:
            (docs if kind == DOC else deletions).append(value)
        docs.sort(key=lambda d: d['url'])
        new_dir = self.new_dir(shard)
        update_shard(self.old_shards.get(shard), new_dir, sorted(set(deletions)), docs)
        self._counts.inc(metrics.INDEX_SHARDS_WRITTEN)
        yield shard, new_dir


class WriteIndexShards(beam.PTransform):
    """PCollection[(shard, entry)] → PCollection[(shard, directory of its updated version)],
    for each shard that has entries.

    Args:
      old_shards: {shard: directory} of the current shards (the new versions start from them).
      new_dir: shard → a fresh directory for its new version (beside the shards, for a cheap
        install; layout.CrawlLayout.new_shard_dir).
    """

    def __init__(self, *, old_shards: Dict[int, str], new_dir):
        super().__init__()
        self.old_shards, self.new_dir = dict(old_shards), new_dir

    def expand(self, entries) -> beam.PCollection[Tuple[int, str]]:
        return (entries
                | 'ByShard' >> beam.GroupByKey()
                | 'WriteShard' >> beam.ParDo(_WriteShardFn(old_shards=self.old_shards,
                                                           new_dir=self.new_dir)))


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
