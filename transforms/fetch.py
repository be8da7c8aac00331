"""The Fetcher as a Beam transform: crawl_generate records → the fetch journal of a segment.

Records are keyed by fetch slot (a stable hash of their queue id over as many slots as the
segment has fetch-list parts) and grouped, so that every URL of a queue reaches the same DoFn
instance: politeness holds on a cluster runner too. The DoFn feeds groups into one `Fetcher`
per bundle and appends its results to journal files as they complete (fetcher/journal.py), so
memory stays bounded and an interrupted fetch can resume; the driver turns the journals into
the segment's crawl_fetch and content parts (pipelines/fetch.py).
"""

from typing import Dict, FrozenSet, Optional

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.storage.parts import Record
from beamcrawl.transforms.fetcher.dns import Resolver
from beamcrawl.transforms.fetcher import Fetcher, FetcherSettings, HttpSettings
from beamcrawl.transforms.fetcher.journal import JournalWriter, commit_run
from beamcrawl.transforms.policy.partition import partition, url_queue
from beamcrawl.transforms.policy.urls import UrlPolicy

__all__ = ['FetchSegment']


class _KeyBySlotFn(beam.DoFn):
    """record → (slot, (queue id or None when its host does not resolve, record))."""

    def __init__(self, *, mode, slots, policy):
        self.mode, self.slots, self.policy = mode, slots, policy

    def setup(self):
        self._resolve = Resolver()

    def process(self, record):
        qid = url_queue(record['url'], self.mode, domain_of=self.policy.domains.domain,
                        resolve=self._resolve)
        yield partition(qid or record['url'], self.slots), (qid, record)


class _FetchFn(beam.DoFn):
    """(slot, [(queue id, record)]) → the journal files its bundle wrote (at finish_bundle)."""

    def __init__(self, *, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now: int, journal_dir: str, run_id: str, queue_times: Dict[str, float]):
        self.settings, self.http, self.policy, self.now = settings, http, policy, now
        self.journal_dir, self.run_id, self.queue_times = journal_dir, run_id, queue_times

    def start_bundle(self):
        self._fetcher = self._journal = None

    @staticmethod
    def _drain(fetcher: Fetcher, journal: JournalWriter, wait: float) -> None:
        results = fetcher.take(wait=wait)
        try:
            journal.write(results)
        except OSError:           # a full disk...: no new request; what was written stays
            fetcher.stop('interrupted')
            raise

    def process(self, group):
        if self._fetcher is None:
            self._fetcher = Fetcher(self.settings, self.http, self.policy, self.now,
                                    queue_times=self.queue_times)
            self._journal = JournalWriter(self.journal_dir, self.run_id)
        for qid, record in group[1]:
            self._fetcher.add(qid, record)
        limit = self.settings.threads * self.settings.queue_depth
        while self._fetcher.outstanding() > limit:
            self._drain(self._fetcher, self._journal, 0.5)
        self._drain(self._fetcher, self._journal, 0)

    def finish_bundle(self):
        if self._fetcher is None:
            return
        fetcher, journal = self._fetcher, self._journal
        self._fetcher = self._journal = None
        fetcher.finish()
        while not fetcher.done():
            self._drain(fetcher, journal, 0.5)
        journal.write(fetcher.close())   # nothing: every result was taken above
        for name, count in fetcher.counts.items():
            metrics.counter(name).inc(count)
        metrics.counter(metrics.FETCH_LEFT).inc(fetcher.left)
        for path in journal.close():
            yield GlobalWindows.windowed_value(path)


class FetchSegment(beam.PTransform):
    """PCollection[CrawlDatum] (crawl_generate) → the segment's fetch journal; returns a
    PCollection holding the path of the run's commit file (fetcher/journal.py).

    Args (keyword-only):
      settings: fetcher settings (threads, politeness, limits, redirects).
      http: HTTP client settings.
      policy: URL normalizers, filters and address policy; domains (byDomain queues).
      now: the fetch time written into crawl_fetch records, epoch ms.
      journal_dir: the segment's journal directory; run_id: this run's name in it.
      slots: how many groups the URLs are spread over (by queue id); each group is fetched by
        one DoFn instance, so at most this many fetch tasks run in parallel on a cluster.
      done: generated URLs an earlier run fetched already (they are skipped).
      queue_times: {queue id: epoch s} the earliest first request per queue.
    """

    def __init__(self, *, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now: int, journal_dir: str, run_id: str, slots: int = 1,
                 done: FrozenSet[str] = frozenset(),
                 queue_times: Optional[Dict[str, float]] = None):
        super().__init__()
        self.settings, self.http, self.policy, self.now = settings, http, policy, now
        self.journal_dir, self.run_id = journal_dir, run_id
        self.slots = max(1, slots)
        self.done = frozenset(done)
        self.queue_times = dict(queue_times or {})

    def expand(self, generated: beam.PCollection[Record]) -> beam.PCollection[str]:
        done, journal_dir, run_id = self.done, self.journal_dir, self.run_id
        return (generated
                | 'SkipDone' >> beam.Filter(lambda record: record['url'] not in done)
                | 'KeyBySlot' >> beam.ParDo(_KeyBySlotFn(
                    mode=self.settings.queue_mode, slots=self.slots, policy=self.policy))
                | 'GroupSlots' >> beam.GroupByKey()
                | 'Fetch' >> beam.ParDo(_FetchFn(
                    settings=self.settings, http=self.http, policy=self.policy, now=self.now,
                    journal_dir=journal_dir, run_id=run_id, queue_times=self.queue_times))
                | 'Journals' >> beam.combiners.ToList()
                | 'Commit' >> beam.Map(lambda paths: commit_run(journal_dir, run_id, paths)))
