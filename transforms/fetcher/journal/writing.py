"""JournalWriter: one fetcher's results appended to its journal files as they complete."""

import json
import time
import uuid
from typing import Dict, List, Tuple

from beamcrawl.transforms.fetcher.journal.paths import QUEUES_SUFFIX, SCHEMAS, run_dir
from beamcrawl.transforms.fetcher.journal.queuetimes import note_queue_time, write_queue_times
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.partwriter import AppendWriter
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH, WARC

__all__ = ['JournalWriter', 'commit_run']

class JournalWriter:
    """Appends one fetcher's results to its journal files (storage/partwriter.py AppendWriter),
    flushing after each write.

    On a store where a file cannot be read while it is written (HDFS, S3: stores.py
    `appendable`), the files are closed and new ones started every `roll_s` seconds, each
    series under a new writer name: a killed fetcher loses at most the results of its open
    series. A write's records are never split between two series."""

    def __init__(self, journal_dir: str, run_id: str, roll_s: float = 0.0):
        self.directory = run_dir(journal_dir, run_id)
        self.name = uuid.uuid4().hex[:12]
        self._writers: Dict[str, AppendWriter] = {}
        self.queue_times: Dict[str, float] = {}        # queue_times_of what was written
        self._roll_s = 0.0 if fs.store(self.directory).appendable else roll_s
        self._opened = 0.0
        self._closed: List[str] = []

    def path(self, part: str) -> str:
        return fs.join(self.directory, f'{self.name}.{part}.avro')

    def write(self, results: List[Tuple[str, dict]]) -> None:
        """Writes (part, record) pairs and flushes them to the OS: all content and WARC records
        first, then the crawl_fetch records in their order, so that once a URL's own
        crawl_fetch record is written everything it led to is too."""
        for wanted in (CONTENT, WARC, CRAWL_FETCH):
            records = [record for part, record in results if part == wanted]
            if not records:
                continue
            writer = self._writers.get(wanted)
            if writer is None:
                if not self._writers:
                    self._opened = time.monotonic()
                fs.mkdirs(self.directory)
                writer = self._writers[wanted] = AppendWriter(self.path(wanted),
                                                              SCHEMAS[wanted])
                writer.open()
            if wanted == CRAWL_FETCH:
                for record in records:
                    note_queue_time(self.queue_times, record)
            for record in records:
                writer.write(record)
            writer.flush()
        if self._roll_s and self._writers and time.monotonic() - self._opened >= self._roll_s:
            self._closed += self._close_series()
            self.name = uuid.uuid4().hex[:12]
            self.queue_times = {}

    def _close_series(self) -> List[str]:
        paths = []
        for writer in self._writers.values():
            writer.close()
            paths.append(writer.path)
        self._writers = {}
        if paths:
            path = fs.join(self.directory, f'{self.name}{QUEUES_SUFFIX}')
            write_queue_times(path, self.queue_times)
            paths.append(path)
        return paths

    def close(self) -> List[str]:
        """Closes the files, then writes the queue times of what they hold (so that the end of
        a fetch need not read the journals again: run_queue_times); returns the paths of every
        file written."""
        paths, self._closed = self._closed + self._close_series(), []
        return paths


def commit_run(journal_dir: str, run_id: str, paths: List[str]) -> str:
    """Records the journal files of a run's committed bundles (the runner may have retried
    others; their files are not used); returns the commit file's path."""
    fs.mkdirs(journal_dir)
    path = fs.join(journal_dir, f'run-{run_id}.committed')
    fs.write_file(path, json.dumps(sorted(paths)).encode('utf-8'), replace=True)
    return path
