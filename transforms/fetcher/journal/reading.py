"""What the journals of earlier fetch runs of a segment hold: the URLs done, the queue times."""

import json
from typing import Dict, List, Optional

from beamcrawl.transforms.fetcher.journal.paths import SOURCE_KEY, journal_files, tolerant_records
from beamcrawl.transforms.fetcher.journal.queuetimes import queue_times_of
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.segments import CRAWL_FETCH

__all__ = ['JournalState', 'read_journals', 'committed']


class JournalState:
    """What the journals of earlier fetch runs of a segment hold."""

    def __init__(self):
        self.done: Dict[str, dict] = {}            # generated URL → its crawl_fetch record
        self.queue_times: Dict[str, float] = {}    # queue → earliest next request (epoch s)

    @property
    def fetched(self) -> int:
        return len(self.done)


def read_journals(journal_dir: str) -> JournalState:
    """The done URLs and queue times of every journal in a segment's journal directory."""
    state = JournalState()
    if not fs.exists(journal_dir):
        return state
    records = []
    for path in sorted(journal_files(journal_dir, CRAWL_FETCH)):
        for record in tolerant_records(path):
            records.append(record)
            meta = record.get('metadata') or {}
            if meta.get(SOURCE_KEY) == record['url'] and record['status'] != 'linked':
                state.done.setdefault(record['url'], record)
    state.queue_times = queue_times_of(records)
    return state


def committed(journal_dir: str, run_id: str) -> Optional[List[str]]:
    data = fs.read_file(fs.join(journal_dir, f'run-{run_id}.committed'))
    return None if data is None else json.loads(data.decode('utf-8'))
