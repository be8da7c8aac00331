"""Queue times: when each politeness queue may be requested next, from what the journal holds
(the end of a queue's last request plus its delay)."""

import json
from typing import Dict, Optional

from beamcrawl.transforms.fetcher.journal.paths import (QUEUES_SUFFIX, journal_files, run_dir,
                                                        tolerant_records, writer_of)
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.segments import CRAWL_FETCH

__all__ = ['queue_times_of', 'note_queue_time', 'run_queue_times', 'write_queue_times',
           'read_queue_times']


def queue_times_of(records) -> Dict[str, float]:
    """queue → the time (epoch s) its next request may start: the end of its last request plus
    its delay, from the fetch.* metadata of crawl_fetch records."""
    times: Dict[str, float] = {}
    for record in records:
        note_queue_time(times, record)
    return times


def note_queue_time(times: Dict[str, float], record: dict) -> None:
    meta = record.get('metadata') or {}
    if 'fetch.end' in meta and 'fetch.queue' in meta:
        try:
            allowed = int(meta['fetch.end']) / 1000.0 + float(meta.get('fetch.delay', 0))
        except ValueError:
            return
        queue = meta['fetch.queue']
        times[queue] = max(times.get(queue, 0.0), allowed)


def run_queue_times(journal_dir: str, run_id: str, before: Dict[str, float]
                    ) -> Dict[str, float]:
    """`before` (the queue times of earlier runs) updated with run `run_id`'s requests: from
    each of its writers' queue file, or from the writer's crawl_fetch journal when it has none
    (a bundle that did not finish)."""
    times = dict(before)
    prefix = run_dir(journal_dir, run_id) + '/'
    for path in journal_files(journal_dir, CRAWL_FETCH):
        if not path.startswith(prefix):
            continue
        written = _load_queue_times(writer_of(path, CRAWL_FETCH) + QUEUES_SUFFIX)
        if written is None:
            written = queue_times_of(tolerant_records(path))
        for queue, allowed in written.items():
            times[queue] = max(times.get(queue, 0.0), allowed)
    return times


def write_queue_times(path: str, times: Dict[str, float]) -> None:
    fs.write_file(path, json.dumps(times, sort_keys=True).encode('utf-8'), replace=True)


def read_queue_times(path: str) -> Dict[str, float]:
    """The queue times of a file write_queue_times wrote ({} when it is missing or unreadable)."""
    times = _load_queue_times(path)
    return {} if times is None else times


def _load_queue_times(path: str) -> Optional[Dict[str, float]]:
    try:
        data = fs.read_file(path)
        if data is None:
            return None
        return {k: float(v) for k, v in json.loads(data.decode('utf-8')).items()}
    except (ValueError, AttributeError, OSError):
        return None
