"""index (Nutch's IndexerMapReduce): the crawl's documents into Tantivy shards, or JSON lines.

  IndexEntries       the stage's input: reads the crawldb, the linkdb and the parse parts of the
                     segments, joins them (JoinByUrl) and builds the entries (BuildDocuments),
                     with the deletions of the whole crawldb (Deletions)
  JoinByUrl          crawldb, linkdb, parse_data, parse_text → per URL, everything known of it
  BuildDocuments     → per URL a document, keyed by index shard
  Deletions          crawldb → a deletion for every gone, redirected or duplicate page (Nutch's
                     CleaningJob: what `clean` runs alone)
  WriteIndexShards   → each shard's Tantivy index updated in a new directory (one writer per
                       shard, as Nutch writes one index per reducer); yields (shard, directory)
  WriteJsonLines     → documents and deletions as JSON lines (for Solr, OpenSearch, ...)
Deduplication, which runs before, is transforms/dedup.py.
"""

import json
from typing import Dict, List, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.base import metrics, progress
from beamcrawl.transforms.base.counting import CountingDoFn
from beamcrawl.transforms.policy.indexing import IndexRules, build_document, deletion
from beamcrawl.transforms.policy.partition import partition
from beamcrawl.transforms.storage.indexdir import write_shard
from beamcrawl.transforms.storage.parts import ReadCrawlDb, ReadParts, count_records
from beamcrawl.transforms.storage.segments import PARSE_DATA, PARSE_TEXT
from beamcrawl.transforms.storage.shards import update_shard

__all__ = ['IndexEntries', 'JoinByUrl', 'BuildDocuments', 'Deletions', 'WriteIndexShards',
           'WriteJsonLines', 'DOC', 'DELETE']

DOC, DELETE = 'doc', 'delete'


class JoinByUrl(beam.PTransform):
    """{'crawldb': PCollection[CrawlDatum], 'linkdb': PCollection[Inlinks],
    'parse_data': PCollection[(segment, ParseData)], 'parse_text': PCollection[(segment,
    ParseText)]} → PCollection[(url, {name: [values]})]: a CoGroupByKey by URL."""

    def expand(self, inputs):
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


class _BuildFn(CountingDoFn):
    def __init__(self, rules: IndexRules, shards: int,
                 done: Optional[progress.Reporter] = None):
        self.rules, self.shards = rules, shards
        self.done = done or progress.Reporter(None, 'join')

    def start_bundle(self):
        super().start_bundle()
        self._ticker = progress.Ticker(self.done)

    def finish_bundle(self):
        self._ticker.flush()
        super().finish_bundle()


    def process(self, item):
        self._ticker.tick()
        entry = self._entry(*item)
        if entry is not None:
            yield entry

    def _entry(self, url, groups):
        """(shard, (DOC, document)) for a URL, or None (a page to delete is Deletions')."""
        dbs = list(groups['crawldb'])
        if not dbs:
            return None                  # parsed, but not in the crawldb (updatedb not run)
        db = dbs[0]
        if deletion(db):
            return None
        shard = partition(url, self.shards)
        parses = list(groups['parse_data'])
        if not parses:
            return None                  # not in the segments being indexed
        segment, data = max(parses, key=lambda p: p[0])
        text = next((t for s, t in groups['parse_text'] if s == segment), None)
        inlinks = [pair for pairs in groups['linkdb'] for pair in pairs]
        doc = build_document(db, inlinks, data, text, self.rules)
        if doc is None:
            self.counts.inc(metrics.INDEX_SKIPPED)
            return None
        self.counts.inc(metrics.INDEX_DOCUMENTS)
        return shard, (DOC, doc)


class BuildDocuments(beam.PTransform):
    """PCollection[(url, joined)] → PCollection[(shard, ('doc', document))].

    Args:
      rules: the indexing rules (boost power, text and anchor limits).
      shards: how many index shards; a URL belongs to shard crc32(url) mod shards.
    """

    def __init__(self, *, rules: IndexRules, shards: int, urls: int = 0):
        super().__init__()
        self.rules, self.shards, self.urls = rules, shards, urls

    def expand(self, joined):
        # progress: the URLs joined (at least the crawldb's: `urls`), built into entries
        done = progress.stage(joined.pipeline, 'join', self.urls, 'URLs')
        return joined | 'Build' >> beam.ParDo(_BuildFn(self.rules, self.shards, done))


class _DeletionFn(CountingDoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, db):
        reason = deletion(db)
        if reason:
            self.counts.inc(metrics.INDEX_DELETED + reason)
            yield partition(db['url'], self.shards), (DELETE, db['url'])


class Deletions(beam.PTransform):
    """PCollection[CrawlDatum] → PCollection[(shard, ('delete', url))]: every page of the
    crawldb that must leave the index, gone, redirected or duplicate (policy/indexing.py
    `deletion`), as Nutch's CleaningJob deletes them. `index` runs it over the whole crawldb
    with the documents of its segments; `clean` runs it alone."""

    def __init__(self, *, shards: int):
        super().__init__()
        self.shards = shards

    def expand(self, crawldb):
        return crawldb | 'Deletion' >> beam.ParDo(_DeletionFn(self.shards))


class _WriteShardFn(CountingDoFn):
    """(shard, [('doc', d) | ('delete', url)]) → (shard, new directory), written aside."""

    def __init__(self, *, old_shards: Dict[int, str], new_dir):
        self.old_shards, self.new_dir = old_shards, new_dir


    def process(self, item):
        shard, values = item
        docs, deletions = [], []
        for kind, value in values:
            (docs if kind == DOC else deletions).append(value)
        docs.sort(key=lambda d: d['url'])
        new_dir = self.new_dir(shard)
        write_shard(update_shard, self.old_shards.get(shard), new_dir, sorted(set(deletions)),
                    docs)
        self.counts.inc(metrics.INDEX_SHARDS_WRITTEN)
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


class IndexEntries(beam.PTransform):
    """PBegin → PCollection[(shard, (DOC, document) | (DELETE, url))]: a document for every URL
    of the crawldb that the parse parts of `segments` (names) bring one for, and a deletion for
    every page of the crawldb that must leave the index (Deletions).

    Args (keyword-only):
      crawl: the crawl directory (a CrawlLayout).
      segments: the names of the segments indexed.
      rules: what a document holds (IndexRules).
      shards: indexer.shards.
    """

    def __init__(self, *, crawl, segments: List[str], rules: IndexRules, shards: int):
        super().__init__()
        self.crawl, self.segments, self.rules, self.shards = crawl, list(segments), rules, shards

    def expand(self, pbegin: beam.pvalue.PBegin):
        crawl = self.crawl

        def parts(part):
            streams = [pbegin | f'Read_{part}_{n}' >> ReadParts(crawl.part_files(n, part))
                       | f'Tag_{part}_{n}' >> beam.Map(lambda r, n=n: (n, r))
                       for n in self.segments]
            return streams | f'All_{part}' >> beam.Flatten()
        crawldb = pbegin | 'ReadCrawlDb' >> ReadCrawlDb(crawl.crawldb)
        inputs = {
            'crawldb': crawldb,
            'linkdb': pbegin | 'ReadLinkDb' >> ReadParts(crawl.linkdb.part_files()),
            'parse_data': parts(PARSE_DATA),
            'parse_text': parts(PARSE_TEXT),
        }
        docs = (inputs
                | 'JoinByUrl' >> JoinByUrl()
                | 'BuildDocuments' >> BuildDocuments(
                    rules=self.rules, shards=self.shards,
                    urls=count_records(crawl.crawldb.part_files())))
        deletions = crawldb | 'Deletions' >> Deletions(shards=self.shards)
        return (docs, deletions) | 'Entries' >> beam.Flatten()


class WriteJsonLines(beam.PTransform):
    """Entries (IndexEntries) → `output`/part-*.jsonl (one document per line, with "id" = its
    URL) and `output`/deletions-*.jsonl ({"id": URL} per line)."""

    def __init__(self, output: str):
        super().__init__()
        self.output = output

    def expand(self, entries) -> beam.pvalue.PDone:
        _ = (entries
             | 'Docs' >> beam.FlatMap(lambda e: [e[1][1]] if e[1][0] == DOC else [])
             | 'DocJson' >> beam.Map(lambda d: json.dumps({'id': d['url'], **d}, sort_keys=True,
                                                          ensure_ascii=False))
             | 'WriteDocs' >> beam.io.WriteToText(FileSystems.join(self.output, 'part'),
                                                  file_name_suffix='.jsonl'))
        _ = (entries
             | 'Deletions' >> beam.FlatMap(lambda e: [e[1][1]] if e[1][0] == DELETE else [])
             | 'DeleteJson' >> beam.Map(lambda url: json.dumps({'id': url}))
             | 'WriteDeletions' >> beam.io.WriteToText(FileSystems.join(self.output, 'deletions'),
                                                       file_name_suffix='.jsonl'))
        return beam.pvalue.PDone(entries.pipeline)
