"""The CrawlDb update as Beam transforms: crawldb + crawl_fetch + crawl_parse → new crawldb.

Every input record is tagged by kind (old, fetch, link, signature), optionally purged,
normalized and filtered (Nutch's map phase), grouped by URL and merged by the pure
`policy.updatedb.merge_url`.
"""

import apache_beam as beam

from beamcrawl.transforms import metrics
from beamcrawl.transforms.dbio import Record
from beamcrawl.transforms.policy.updatedb import UpdateRules, merge_url
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.records import DB_STATUSES, FETCH_STATUSES, pack_datum, unpack_datum

__all__ = ['UpdateCrawlDb', 'tag_segment_record']

OLD, FETCH, LINK, SIGNATURE = 'o', 'f', 'l', 's'


def tag_segment_record(record: dict):
    """(kind, record) for a crawl_fetch / crawl_parse record; None for kinds not used."""
    status = record['status']
    if status in FETCH_STATUSES:
        return FETCH, record
    if status == 'linked':
        return LINK, record
    if status == 'signature':
        return SIGNATURE, record
    return None


class _MapFn(beam.DoFn):
    """(kind, record) → (url, (kind, record)), after the purge / normalize / filter rules."""

    def __init__(self, *, policy, purge_gone, normalize, filter_urls):
        self.policy, self.purge_gone = policy, purge_gone
        self.normalize, self.filter_urls = normalize, filter_urls

    def start_bundle(self):
        self._counts = metrics.BundleCounts()

    def finish_bundle(self):
        self._counts.flush()

    def process(self, item):
        kind, record = item
        if self.purge_gone and record['status'] == 'db_gone':
            self._counts.inc(metrics.UPDATEDB_PURGED_GONE)
            return
        url = record['url']
        if kind == LINK and self.policy.denied(url):     # never added, whatever the filters
            self._counts.inc(metrics.UPDATEDB_DENIED)
            return
        if self.normalize or self.filter_urls:
            url, reason = self.policy.clean(url, normalize=self.normalize,
                                            filter=self.filter_urls)
            if url is None:
                self._counts.inc(metrics.UPDATEDB_DROPPED + reason)
                return
            if url != record['url']:
                record = dict(record, url=url)
        yield url, (kind, pack_datum(record))


class _MergeFn(beam.DoFn):
    def __init__(self, rules: UpdateRules, now: int):
        self.rules, self.now = rules, now

    def start_bundle(self):
        self._counts = metrics.BundleCounts()

    def finish_bundle(self):
        self._counts.flush()

    def process(self, group):
        _, values = group
        buckets = {OLD: [], FETCH: [], LINK: [], SIGNATURE: []}
        for kind, packed in values:
            buckets[kind].append(unpack_datum(packed))
        record, outcome = merge_url(buckets[OLD], buckets[FETCH], buckets[LINK],
                                    buckets[SIGNATURE], self.now, self.rules)
        self._counts.inc(metrics.UPDATEDB_OUTCOME + outcome)
        if record is not None:
            self._counts.inc(metrics.UPDATEDB_STATUS + record['status'])
            yield record


class UpdateCrawlDb(beam.PTransform):
    """(PCollection[CrawlDatum] crawldb, PCollection[CrawlDatum] segment records) → the new
    crawldb. Apply to a pair: `(old, segment) | UpdateCrawlDb(...)`.

    Args (keyword-only):
      rules: the merge rules (schedule, scoring, retries, additions, inlink bound).
      policy: URL normalizers and filters (used when normalize / filter_urls).
      now: the current time, epoch ms (schedule of new URLs).
      purge_gone: drop db_gone records (db.update.purge.404).
      normalize, filter_urls: normalize / filter every URL (crawldb.url.normalizers/filters).
    """

    def __init__(self, *, rules: UpdateRules, policy: UrlPolicy, now: int,
                 purge_gone: bool = False, normalize: bool = False, filter_urls: bool = False):
        super().__init__()
        self.rules, self.policy, self.now = rules, policy, now
        self.purge_gone, self.normalize, self.filter_urls = purge_gone, normalize, filter_urls

    def expand(self, inputs) -> beam.PCollection[Record]:     # inputs: (crawldb, segment records)
        crawldb, segment_records = inputs
        old = crawldb | 'TagOld' >> beam.Map(
            lambda r: (OLD, r) if r['status'] in DB_STATUSES else None) \
            | 'KnownOld' >> beam.Filter(lambda item: item is not None)
        news = (segment_records
                | 'TagSegment' >> beam.Map(tag_segment_record)
                | 'KnownNews' >> beam.Filter(lambda item: item is not None))
        return ((old, news)
                | 'All' >> beam.Flatten()
                | 'MapPhase' >> beam.ParDo(_MapFn(policy=self.policy, purge_gone=self.purge_gone,
                                                  normalize=self.normalize,
                                                  filter_urls=self.filter_urls))
                | 'GroupByUrl' >> beam.GroupByKey()
                | 'Merge' >> beam.ParDo(_MergeFn(self.rules, self.now)))
