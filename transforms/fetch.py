"""The Fetcher as Beam transforms: crawl_generate records → crawl_fetch and content records.

Records are keyed by fetch slot (a stable hash of their queue id over as many slots as the
segment has fetch-list parts) and grouped, so that every URL of a queue reaches the same DoFn
instance: politeness holds on a cluster runner too. The DoFn feeds groups into one `Fetcher`
per bundle; results leave `process()` as they complete, with back-pressure (at most
threads × fetcher.queue.depth.multiplier URLs waiting), and the rest at `finish_bundle`.
"""

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from beamcrawl.transforms import metrics
from beamcrawl.transforms.dbio import Record
from beamcrawl.transforms.dns import Resolver
from beamcrawl.transforms.fetcher import Fetcher, FetcherSettings, HttpSettings
from beamcrawl.transforms.layout import CONTENT, CRAWL_FETCH
from beamcrawl.transforms.policy.partition import partition, queue_key
from beamcrawl.transforms.policy.urls import UrlPolicy, scheme_host

__all__ = ['FetchSegment']


class _KeyBySlotFn(beam.DoFn):
    """record → (slot, (queue id or None when its host does not resolve, record))."""

    def __init__(self, *, mode, slots, policy):
        self.mode, self.slots, self.policy = mode, slots, policy

    def setup(self):
        self._resolve = Resolver()

    def process(self, record):
        host = scheme_host(record['url'])[1]
        qid = queue_key(host, self.mode, domain_of=self.policy.domains.domain,
                        resolve=self._resolve) if host else None
        yield partition(qid or record['url'], self.slots), (qid, record)


class _FetchFn(beam.DoFn):
    """(slot, [(queue id, record)]) → tagged crawl_fetch / content records."""

    def __init__(self, *, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now: int):
        self.settings, self.http, self.policy, self.now = settings, http, policy, now

    def start_bundle(self):
        self._fetcher = None

    def _tagged(self, outputs):
        for part, record in outputs:
            yield record if part == CRAWL_FETCH else beam.pvalue.TaggedOutput(part, record)

    def process(self, group):
        if self._fetcher is None:
            self._fetcher = Fetcher(self.settings, self.http, self.policy, self.now)
        for qid, record in group[1]:
            self._fetcher.add(qid, record)
        limit = self.settings.threads * self.settings.queue_depth
        while self._fetcher.outstanding() > limit:
            yield from self._tagged(self._fetcher.take(wait=0.5))
        yield from self._tagged(self._fetcher.take())

    def finish_bundle(self):
        if self._fetcher is None:
            return
        fetcher, self._fetcher = self._fetcher, None
        rest = fetcher.close()
        for name, count in fetcher.counts.items():
            metrics.counter(name).inc(count)
        for part, record in rest:
            value = GlobalWindows.windowed_value(record)
            yield value if part == CRAWL_FETCH else beam.pvalue.TaggedOutput(part, value)


class FetchSegment(beam.PTransform):
    """PCollection[CrawlDatum] (crawl_generate) → {'crawl_fetch': PCollection[CrawlDatum],
    'content': PCollection[Content]}.

    Args (keyword-only):
      settings: fetcher settings (threads, politeness, limits, redirects).
      http: HTTP client settings.
      policy: URL normalizers and filters (redirect targets) and domains (byDomain queues).
      now: the fetch time written into crawl_fetch records, epoch ms.
      slots: how many groups the URLs are spread over (by queue id); each group is fetched by
        one DoFn instance, so at most this many fetch tasks run in parallel on a cluster.
    """

    def __init__(self, *, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now: int, slots: int = 1):
        super().__init__()
        self.settings, self.http, self.policy, self.now = settings, http, policy, now
        self.slots = max(1, slots)

    def expand(self, generated: beam.PCollection[Record]):   # → {part: PCollection[Record]}
        results = (generated
                   | 'KeyBySlot' >> beam.ParDo(_KeyBySlotFn(
                       mode=self.settings.queue_mode, slots=self.slots, policy=self.policy))
                   | 'GroupSlots' >> beam.GroupByKey()
                   | 'Fetch' >> beam.ParDo(_FetchFn(
                       settings=self.settings, http=self.http, policy=self.policy,
                       now=self.now)).with_outputs(CONTENT, main=CRAWL_FETCH))
        return {CRAWL_FETCH: results[CRAWL_FETCH], CONTENT: results[CONTENT]}
