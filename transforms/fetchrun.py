"""FetchRun: the command's side of one fetch of a segment, without Beam (pipelines/fetch.py
reads what earlier runs fetched and starts the head start, fetcher/headstart.py, before Beam
is imported). Its modes, BatchFetch and StreamingFetch, are in transforms/fetch.py."""

from typing import Dict, Optional

from beamcrawl.transforms.fetcher import headstart
from beamcrawl.transforms.fetcher.http import HttpSettings
from beamcrawl.transforms.fetcher.journal.paths import new_run_id
from beamcrawl.transforms.fetcher.journal.publishing import WarcInfo
from beamcrawl.transforms.fetcher.journal.queuetimes import read_queue_times, write_queue_times
from beamcrawl.transforms.fetcher.journal.reading import JournalState, read_journals
from beamcrawl.transforms.fetcher.result import FetchResult
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.partfiles import count_records
from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_GENERATE
from beamcrawl.transforms.storage.warc import warcinfo_fields

__all__ = ['FetchRun']


class FetchRun:
    """The command's side of one fetch of a segment (crawl: a CrawlLayout), in `mode`
    (BatchFetch or StreamingFetch; it may be set later, before `transform`): what earlier runs
    fetched (the journal), the queue times to start from, the head start, the run, and
    publishing the journal into the segment's parts."""

    def __init__(self, crawl, segment: str, mode=None):
        self.crawl, self.segment, self.mode = crawl, segment, mode
        self.what = f'fetch {segment}'
        self.journal_dir = crawl.fetch_journal(segment)
        self.generate_files = crawl.part_files(segment, CRAWL_GENERATE)
        self.generated = count_records(self.generate_files)
        self.before: JournalState = read_journals(self.journal_dir)
        self.run_id = new_run_id()
        self.head: Optional[headstart.HeadStart] = None
        self._times: Optional[Dict[str, float]] = None

    def start_head(self, *, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                   now: int) -> None:
        """Starts the run's fetch on the first URL of each queue (fetcher/headstart.py), for
        the batch fetch's DoFn to take over."""
        self.head = headstart.start(
            generate_files=self.generate_files, settings=settings, http=http, policy=policy,
            now=now, journal_dir=self.journal_dir, run_id=self.run_id,
            done=frozenset(self.before.done), queue_times=self.queue_times())

    def abandon_head(self, roll_s: float) -> int:
        """Ends the head start if nothing took it over (headstart.abandon): how many URLs of
        the fetch list it journaled."""
        return headstart.abandon(self.head, roll_s)

    def transform(self, *, settings: FetcherSettings, http: HttpSettings, policy: UrlPolicy,
                  now: int):
        """The fetch of what is left of the segment, in this run's mode (a PTransform). With a
        head start, its URLs go to one DoFn instance: the one that takes the head start's
        fetcher over."""
        extra = {'slots': 1} if self.head is not None else {}
        return self.mode.transform(
            generate_files=self.generate_files, settings=settings, http=http, policy=policy,
            now=now, journal_dir=self.journal_dir, run_id=self.run_id,
            done=frozenset(self.before.done), queue_times=self.queue_times(), **extra)

    def run(self, pipeline) -> FetchResult:
        return self.mode.run(pipeline, self)

    def publish(self, result: FetchResult, tmp: Dict[str, str], info: WarcInfo) -> None:
        """Writes the segment's queue times and its parts into the `tmp` part directories
        ({part: directory}); the segment update publishes them."""
        write_queue_times(self.crawl.fetch_times(self.segment), result.queue_times)
        self.mode.publish(self, result, tmp, info)

    def warc_info(self, now: int, agent: str) -> WarcInfo:
        """What the warcinfo record of the segment's WARC files says (dated --now)."""
        return WarcInfo(warcinfo_fields(self.segment, agent), now)

    def remove_journal(self) -> None:
        fs.delete(self.journal_dir)

    def queue_times(self) -> Dict[str, float]:
        """When each queue may be requested first: after its last request in the previous
        fetched segment of the crawl dir, and in the earlier runs of this fetch (the later of
        the two)."""
        if self._times is None:
            self._times = self._read_queue_times()
        return dict(self._times)

    def _read_queue_times(self) -> Dict[str, float]:
        times = {}
        for name in reversed(self.crawl.segment_names()):
            if name != self.segment and self.crawl.has_part(name, CRAWL_FETCH):
                times = read_queue_times(self.crawl.fetch_times(name))
                break
        for queue, allowed in self.before.queue_times.items():
            times[queue] = max(times.get(queue, 0.0), allowed)
        return times
