"""fetch (Nutch's Fetcher): a segment's fetch list → its fetch journal → its crawl_fetch,
content (and WARC) parts.

`FetchSegment` is the batch fetch, the default on any runner: records are keyed by fetch slot
(a stable hash of their queue id over as many slots as the segment has fetch-list parts) and
grouped, so that every URL of a queue reaches the same DoFn instance: politeness holds on a
cluster runner too. The DoFn feeds groups into one `Fetcher` per bundle and appends its results
to journal files as they complete (fetcher/journal/), so memory stays bounded and an
interrupted fetch can resume.

The command's side is `FetchRun` (fetchrun.py, without Beam): what earlier runs of the
segment fetched, the head start (fetcher/headstart.py), the run, and publishing the journal as
the segment's parts. It runs the fetch in one of two modes, with one
interface: `BatchFetch` (FetchSegment) and `StreamingFetch` (fetcher/streaming/driver.py: the
streaming fetch on Flink, docs/streaming-fetch.md).
"""

from typing import Dict, FrozenSet, List, Optional

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.fetcher import Fetcher, FetcherSettings, HttpSettings, headstart
from beamcrawl.transforms.fetchrun import FetchRun
from beamcrawl.transforms.fetcher.journal.publishing import WarcInfo, publish_journals
from beamcrawl.transforms.fetcher.journal.queuetimes import run_queue_times
from beamcrawl.transforms.fetcher.journal.reading import committed
from beamcrawl.transforms.fetcher.journal.writing import JournalWriter, commit_run
from beamcrawl.transforms.fetcher.queues import KeyByQueue
from beamcrawl.transforms.fetcher.result import FetchResult
from beamcrawl.transforms.fetcher.streaming.driver import StreamingFetch
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.runners.runtime import run_pipeline
from beamcrawl.transforms.storage.parts import ReadParts
from beamcrawl.transforms.storage.records import complete_datum

__all__ = ['FetchSegment', 'FetchRun', 'BatchFetch', 'fetch_mode']


class _FetchFn(beam.DoFn):
    """(slot, [(queue id, record)]) → the journal files its bundle wrote (at finish_bundle)."""

    def __init__(self, *, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                 now: int, journal_dir: str, run_id: str, queue_times: Dict[str, float]):
        self.settings, self.http, self.policy, self.now = settings, http, policy, now
        self.journal_dir, self.run_id, self.queue_times = journal_dir, run_id, queue_times

    def start_bundle(self):
        self._fetcher = self._journal = self._head = None

    def _drain(self, fetcher: Fetcher, journal: JournalWriter, wait: float) -> None:
        results = fetcher.take(wait=wait, batch=self.settings.journal_batch_s if wait else 0.0)
        try:
            journal.write(results)
        except OSError:           # a full disk...: no new request; what was written stays
            fetcher.stop('interrupted')
            raise

    def process(self, group):
        if self._fetcher is None:
            self._head = headstart.adopt(self.journal_dir, self.run_id)
            self._fetcher = self._head.fetcher if self._head is not None else \
                Fetcher(self.settings, self.http, self.policy, self.now,
                        queue_times=self.queue_times)
            self._journal = JournalWriter(self.journal_dir, self.run_id,
                                          roll_s=self.settings.journal_roll_s)
        head = self._head
        for qid, record in group[1]:
            if head is None or not head.skips(record['url']):
                self._fetcher.add(qid, record)
        limit = self.settings.threads * self.settings.queue_depth
        while self._fetcher.outstanding() > limit:
            self._drain(self._fetcher, self._journal, 0.5)
        self._drain(self._fetcher, self._journal, 0)

    def finish_bundle(self):
        if self._fetcher is None:
            return
        fetcher, journal = self._fetcher, self._journal
        self._fetcher = self._journal = self._head = None
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
    """PBegin → the segment's fetch journal, in batch; returns a PCollection holding the path of
    the run's commit file (fetcher/journal/writing.py), or nothing when no URL was left to
    fetch (then the caller commits the run empty: BatchFetch.run).

    Args (keyword-only):
      generate_files: the segment's fetch-list part files (read here, each whole by one task).
      settings: fetcher settings (threads, politeness, limits, redirects).
      http: HTTP client settings.
      policy: URL normalizers, filters and address policy; domains (byDomain queues).
      now: the fetch time written into crawl_fetch records, epoch ms.
      journal_dir: the segment's journal directory; run_id: this run's name in it.
      done: generated URLs an earlier run fetched already (they are skipped).
      queue_times: {queue id: epoch s} the earliest first request per queue.
      slots: how many groups the URLs are spread over (by queue id); default: as many as there
        are fetch-list parts. Each group is fetched by one DoFn instance, so at most this many
        fetch tasks run in parallel. A head start (fetcher/headstart.py) is taken over by the
        DoFn of run `run_id` in this process: its fetch has one slot (FetchRun.transform).
    """

    def __init__(self, *, generate_files: List[str], settings: FetcherSettings,
                 http: HttpSettings, policy: UrlPolicy, now: int, journal_dir: str, run_id: str,
                 done: FrozenSet[str] = frozenset(),
                 queue_times: Optional[Dict[str, float]] = None, slots: Optional[int] = None):
        super().__init__()
        self.generate_files = list(generate_files)
        self.settings, self.http, self.policy, self.now = settings, http, policy, now
        self.journal_dir, self.run_id = journal_dir, run_id
        self.slots = max(1, slots or len(self.generate_files))
        self.done = frozenset(done)
        self.queue_times = dict(queue_times or {})

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        done, journal_dir, run_id, slots = self.done, self.journal_dir, self.run_id, self.slots
        return (pbegin
                | 'ReadFetchList' >> ReadParts(self.generate_files, whole_files=True)
                | 'KeyBySlot' >> KeyByQueue(mode=self.settings.queue_mode, policy=self.policy,
                                            prepare=complete_datum, skip=done, slots=slots)
                | 'GroupSlots' >> beam.GroupByKey()
                | 'Fetch' >> beam.ParDo(_FetchFn(
                    settings=self.settings, http=self.http, policy=self.policy, now=self.now,
                    journal_dir=journal_dir, run_id=run_id, queue_times=self.queue_times))
                | 'Journals' >> beam.combiners.ToList().without_defaults()
                | 'Commit' >> beam.Map(lambda paths: commit_run(journal_dir, run_id, paths)))


# Options after which the fetch's pipeline keeps Beam's type inference (BatchFetch.pipeline_args).
_TYPED = ('--runner', '--no_pipeline_type_check', '--type_check_strictness',
          '--type_check_additional', '--runtime_type_check', '--performance_runtime_type_check')


class BatchFetch:
    """The batch fetch (any runner): FetchSegment, one pipeline run to its end."""

    def beam_args(self, beam_args: List[str]) -> List[str]:
        return list(beam_args)

    def pipeline_args(self, beam_args: List[str]) -> List[str]:
        """The options of the fetch's own pipeline. On the local runner it is built without
        Beam's inference of each step's output type from the bytecode of its function
        (`--no_pipeline_type_check`, unless a type-check option is given): 0.05 s of every
        fetch's start (docs/performance.md). No step of the fetch declares a type, and its
        data's coders stay the same: the grouped records go through the same pickling coder
        either way; only the few journal paths do too, rather than a string coder."""
        if any(a.split('=', 1)[0] in _TYPED for a in beam_args):
            return list(beam_args)
        return list(beam_args) + ['--no_pipeline_type_check']

    def transform(self, **kwargs) -> beam.PTransform:
        return FetchSegment(**kwargs)

    def run(self, pipeline: beam.Pipeline, run: 'FetchRun') -> FetchResult:
        counters = run_pipeline(pipeline, run.what)
        if committed(run.journal_dir, run.run_id) is None:
            # No bundle wrote a journal (nothing was left to fetch), so the pipeline's commit
            # step had no input: the run is committed empty here (FetchSegment).
            commit_run(run.journal_dir, run.run_id, [])
        return FetchResult(
            left=counters.get(metrics.FETCH_LEFT, 0),
            queue_times=run_queue_times(run.journal_dir, run.run_id, run.before.queue_times),
            statuses={k[len(metrics.FETCH_STATUS):]: v for k, v in counters.items()
                      if k.startswith(metrics.FETCH_STATUS)},
            protocols={k[len(metrics.FETCH_PROTOCOL):]: v for k, v in counters.items()
                       if k.startswith(metrics.FETCH_PROTOCOL)},
            done={})

    def publish(self, run: 'FetchRun', result: FetchResult, tmp: Dict[str, str],
                info: WarcInfo) -> None:
        publish_journals(run.journal_dir, run.run_id, tmp, run.before.done, info)


def fetch_mode(cfg, *, streaming: bool):
    """The mode a fetch runs in: BatchFetch, or with `streaming` the streaming fetch on Flink
    (fetcher/streaming/driver.py)."""
    if not streaming:
        return BatchFetch()
    return StreamingFetch(poll_s=cfg['fetcher.streaming.poll.seconds'],
                          progress_s=cfg['fetcher.progress.seconds'],
                          flink_rest=cfg['runner.flink.rest'])
