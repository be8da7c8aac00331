"""The fetch's head start: the first request of each politeness queue, made while Beam is
imported and the fetch's pipeline built (docs/performance.md, "The fetch's head start").

A batch fetch on the local runner in this process (pipelines/fetch.py says when) starts a
`Fetcher` on the first URL of each queue of its fetch list before it imports Beam: those 0.3-0.5 s
pass with the first requests in flight rather than before them. The fetch's DoFn
(transforms/fetch.py) then `adopt`s that Fetcher: it adds the other URLs, skipping the ones the
head start added, and journals every result. So the fetch is the one it would be without: one
Fetcher, one politeness state per queue (the head start's request counts for the delay before
the next), every URL requested once. Nothing here imports Beam.

When the pipeline fails before its fetch step takes the fetcher over, `abandon` stops it as an
interrupt does: requests in flight finish and are journaled, the URLs not requested stay for a
later run (the journal's resume, fetcher/journal/).
"""

import os
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from beamcrawl.transforms.fetcher.dns import Resolver
from beamcrawl.transforms.fetcher.engine import Fetcher
from beamcrawl.transforms.fetcher.http import HttpSettings
from beamcrawl.transforms.fetcher.journal.writing import JournalWriter
from beamcrawl.transforms.fetcher.settings import FetcherSettings
from beamcrawl.transforms.policy.partition import url_queue
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage.partfiles import iter_records
from beamcrawl.transforms.storage.records import complete_datum
from beamcrawl.transforms.storage.segments import CRAWL_FETCH

__all__ = ['HeadStart', 'start', 'adopt', 'abandon', 'READ_LIMIT']

# The fetch-list records read to find the first URL of each queue, at most: the head start must
# stay short beside the import it overlaps (10,000 records: about 0.03 s).
READ_LIMIT = 10000


class HeadStart:
    """A Fetcher started on the first URL of some queues; `added`: those URLs (one a queue)."""

    def __init__(self, fetcher: Fetcher, added: Set[str], key: Tuple[str, str]):
        self.fetcher, self.added, self.key = fetcher, added, key
        self.pid = os.getpid()

    def skips(self, url: str) -> bool:
        """Whether the head start added `url` already: true once (a URL listed twice is added
        again by the caller, as without a head start)."""
        if url in self.added:
            self.added.discard(url)
            return True
        return False


_STARTED: Dict[Tuple[str, str], HeadStart] = {}


def start(*, generate_files: List[str], settings: FetcherSettings, http: HttpSettings,
          policy: UrlPolicy, now: int, journal_dir: str, run_id: str,
          done: FrozenSet[str] = frozenset(),
          queue_times: Optional[Dict[str, float]] = None) -> Optional[HeadStart]:
    """Starts the fetch of run `run_id` (the arguments are FetchSegment's) on the first URL of
    each queue, in fetch-list order, for at most threads × fetcher.queue.depth.multiplier
    queues and READ_LIMIT records read; None when there is nothing to start (no URL left, or
    byIP queues: their hosts would be resolved twice, here and in the pipeline). Each queue id
    is the one KeyByQueue gives the URL (policy/partition.py url_queue)."""
    if settings.queue_mode == 'byIP':
        return None
    limit = settings.threads * settings.queue_depth
    resolve = Resolver()
    first: Dict[str, dict] = {}                 # queue id → its first URL's record
    for read, record in enumerate(iter_records(generate_files), 1):
        record = complete_datum(record)
        if record['url'] not in done:
            qid = url_queue(record['url'], settings.queue_mode,
                            domain_of=policy.domains.domain, resolve=resolve)
            if qid is not None and qid not in first:
                first[qid] = record
        if len(first) >= limit or read >= READ_LIMIT:
            break
    if not first:
        return None
    fetcher = Fetcher(settings, http, policy, now, queue_times=queue_times)
    for qid, record in first.items():
        fetcher.add(qid, record)
    head = HeadStart(fetcher, {record['url'] for record in first.values()}, (journal_dir, run_id))
    _STARTED[head.key] = head
    return head


def adopt(journal_dir: str, run_id: str) -> Optional[HeadStart]:
    """The head start of run `run_id`, taken over by its caller (once; in the process that
    started it only), or None."""
    head = _STARTED.get((journal_dir, run_id))
    if head is None or head.pid != os.getpid():
        return None
    del _STARTED[head.key]
    return head


def abandon(head: Optional[HeadStart], roll_s: float = 0.0) -> int:
    """Ends a head start that nothing took over (the pipeline failed before its fetch step):
    no new request; the requests in flight finish and their results are journaled under the
    run, so that a later run does not request them again. Nothing when it was adopted.
    Returns how many of the head start's URLs it journaled."""
    if head is None or _STARTED.get(head.key) is not head:
        return 0
    del _STARTED[head.key]
    head.fetcher.stop('interrupted')
    results = head.fetcher.close()
    journal = JournalWriter(head.key[0], head.key[1], roll_s=roll_s)
    journal.write(results)
    journal.close()
    return len({record['url'] for part, record in results
                if part == CRAWL_FETCH and record['status'] != 'linked'
                and record['url'] in head.added})
