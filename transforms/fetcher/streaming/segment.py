"""StreamingFetchSegment: the streaming fetch of a segment, wired: its fetch list, keyed by
queue, through PoliteFetch, into the fetch journal."""

from typing import Dict, FrozenSet, List, Optional

import apache_beam as beam

from beamcrawl.transforms.fetcher.http import HttpSettings
from beamcrawl.transforms.fetcher.journal.writing import JournalWriter
from beamcrawl.transforms.fetcher.queues import KeyByQueue
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.fetcher.streaming.polite import UNRESOLVED, PoliteFetch
from beamcrawl.transforms.fetcher.streaming.source import FetchListStayingOpen
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage.records import complete_datum

__all__ = ['StreamingFetchSegment']


class _JournalFn(beam.DoFn):
    """(generated URL, [(part, record)]) → appended to this worker's journal files (flushed per
    URL; the files stay open for the worker's life)."""

    def __init__(self, journal_dir: str, run_id: str, roll_s: float):
        self.journal_dir, self.run_id, self.roll_s = journal_dir, run_id, roll_s

    def setup(self):
        self._journal = None

    def process(self, element):
        if self._journal is None:
            self._journal = JournalWriter(self.journal_dir, self.run_id, roll_s=self.roll_s)
        self._journal.write(element[1])

    def teardown(self):
        if self._journal is not None:
            self._journal.close()


class StreamingFetchSegment(beam.PTransform):
    """PBegin → the segment's fetch journal: the fetch list `generate_files`, keyed by queue,
    through PoliteFetch (arguments as FetchSegment's in transforms/fetch.py, plus `poll_s`)."""

    def __init__(self, *, generate_files: List[str], settings: FetcherSettings,
                 http: HttpSettings, policy: UrlPolicy, now: int, journal_dir: str, run_id: str,
                 poll_s: float, done: FrozenSet[str] = frozenset(),
                 queue_times: Optional[Dict[str, float]] = None):
        super().__init__()
        self.generate_files = list(generate_files)
        self.settings, self.http, self.policy, self.now = settings, http, policy, now
        self.journal_dir, self.run_id, self.poll_s = journal_dir, run_id, poll_s
        self.done = frozenset(done)
        self.queue_times = dict(queue_times or {})

    def expand(self, pbegin: beam.pvalue.PBegin):
        done = self.done
        return (pbegin
                | 'ReadFetchList' >> FetchListStayingOpen(self.generate_files)
                | 'Complete' >> beam.Map(complete_datum)
                | 'SkipDone' >> beam.Filter(lambda record: record['url'] not in done)
                | 'KeyByQueue' >> KeyByQueue(mode=self.settings.queue_mode, policy=self.policy)
                | 'UnresolvedKey' >> beam.MapTuple(lambda queue, record: (queue or UNRESOLVED,
                                                                          record))
                | 'Fetch' >> PoliteFetch(settings=self.settings, http=self.http,
                                         policy=self.policy, now=self.now, poll_s=self.poll_s,
                                         queue_times=self.queue_times)
                | 'Journal' >> beam.ParDo(_JournalFn(self.journal_dir, self.run_id,
                                                      self.settings.journal_roll_s)))
