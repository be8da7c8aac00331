"""The fetch journal: where fetch results are written as they complete, and how a fetch resumes.

A fetch writes into `segments/<seg>/.fetch/` (docs/crawl-dir.md, "Fetching"):

  run-<id>/<writer>.crawl_fetch.avro   CrawlDatum records, appended as results complete
  run-<id>/<writer>.content.avro       Content records, appended as results complete
  run-<id>/<writer>.warc.avro          WARC records of each exchange (fetcher.store.warc)
  run-<id>/<writer>.queues.json        when each queue may be requested next (written last)
  run-<id>.committed                   the journal files of bundles the runner committed

Every record carries `_src_` in its metadata: the generated URL it stems from. A generated URL
is *done* once its own crawl_fetch record is in the journal; the records it led to (its content,
a redirect target's records, `linked` records) are written before it, so a done URL has all of
them. Each write is flushed to the operating system, so a process killed with SIGKILL loses at
most what was being written; a file cut in the middle of a block is read up to its last whole
block. Records of a URL that is not done are dropped: the URL is fetched again.

A resumed fetch reads every journal first: done URLs are not requested again, and the last
request to each politeness queue sets when its next request may start. At the end, the journal
files become the segment's crawl_fetch and content parts, and the WARC journal records become
the segment's WARC files (transforms/storage/warc.py): the WARC records themselves (gzip members) are
made when the page arrives, the journal keeps them with the URL they belong to until the fetch
is published.
"""

import dataclasses
import json
import uuid
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import fastavro
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.parts import write_avro_file
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH, WARC
from beamcrawl.transforms.storage.records import CONTENT_SCHEMA, CRAWL_DATUM_SCHEMA
from beamcrawl.transforms.storage.warc import write_warc_file

__all__ = ['SOURCE_KEY', 'WarcInfo', 'WARC_JOURNAL_SCHEMA', 'JournalWriter', 'JournalState',
           'read_journals', 'commit_run', 'publish_journals', 'publish_attempts', 'queue_times_of',
           'new_run_id', 'write_queue_times', 'read_queue_times', 'run_queue_times']

SOURCE_KEY = '_src_'                   # metadata: the generated URL a record stems from
# The WARC records of one exchange, as gzip members, with the URL they are of.
WARC_JOURNAL_SCHEMA = {
    'type': 'record', 'name': 'WarcExchange', 'namespace': 'beamcrawl.journal',
    'fields': [{'name': 'url', 'type': 'string'},
               {'name': 'metadata', 'type': {'type': 'map', 'values': 'string'}},
               {'name': 'warc', 'type': 'bytes'}],
}
_SCHEMAS = {CRAWL_FETCH: CRAWL_DATUM_SCHEMA, CONTENT: CONTENT_SCHEMA, WARC: WARC_JOURNAL_SCHEMA}
_PARSED = {part: fastavro.parse_schema(schema) for part, schema in _SCHEMAS.items()}


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def _run_dir(journal_dir: str, run_id: str) -> str:
    return FileSystems.join(journal_dir, f'run-{run_id}')


class JournalWriter:
    """Appends one fetcher's results to its two journal files, flushing after each write."""

    def __init__(self, journal_dir: str, run_id: str):
        self.directory = _run_dir(journal_dir, run_id)
        self.name = uuid.uuid4().hex[:12]
        self._files: Dict[str, object] = {}
        self._writers: Dict[str, fastavro.write.Writer] = {}
        self.queue_times: Dict[str, float] = {}        # queue_times_of what was written

    def path(self, part: str) -> str:
        return FileSystems.join(self.directory, f'{self.name}.{part}.avro')

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
                fs.mkdirs(self.directory)
                handle = FileSystems.create(self.path(wanted),
                                            compression_type=CompressionTypes.UNCOMPRESSED)
                writer = fastavro.write.Writer(handle, _PARSED[wanted], codec='deflate')
                self._files[wanted], self._writers[wanted] = handle, writer
            if wanted == CRAWL_FETCH:
                for record in records:
                    _note_queue_time(self.queue_times, record)
            try:
                for record in records:
                    writer.write(record)
                writer.flush()
                self._files[wanted].flush()
            except OSError as e:        # e.g. a full disk: name the file
                raise OSError(e.errno, e.strerror, self.path(wanted)) from e

    def close(self) -> List[str]:
        """Closes the files, then writes the queue times of what they hold (so that the end of
        a fetch need not read the journals again: run_queue_times); returns their paths."""
        paths = []
        for part, writer in self._writers.items():
            writer.flush()
            self._files[part].close()
            paths.append(self.path(part))
        self._files, self._writers = {}, {}
        if paths:
            path = FileSystems.join(self.directory, f'{self.name}{_QUEUES_SUFFIX}')
            write_queue_times(path, self.queue_times)
            paths.append(path)
        return paths


def _tolerant_records(path: str) -> Iterator[dict]:
    """The records of a journal file up to its last whole block (a killed writer may have left
    a partial one)."""
    try:
        with FileSystems.open(path) as f:
            for block in fastavro.block_reader(f):
                yield from block
    except Exception:  # pylint: disable=broad-except  (a cut block fails in many ways)
        return


def _journal_files(journal_dir: str, part: str) -> List[str]:
    return fs.list_files(FileSystems.join(journal_dir, 'run-*', f'*.{part}.avro'))


class JournalState:
    """What the journals of earlier fetch runs of a segment hold."""

    def __init__(self):
        self.done: Dict[str, dict] = {}            # generated URL → its crawl_fetch record
        self.queue_times: Dict[str, float] = {}    # queue → earliest next request (epoch s)

    @property
    def fetched(self) -> int:
        return len(self.done)


def queue_times_of(records) -> Dict[str, float]:
    """queue → the time (epoch s) its next request may start: the end of its last request plus
    its delay, from the fetch.* metadata of crawl_fetch records."""
    times: Dict[str, float] = {}
    for record in records:
        _note_queue_time(times, record)
    return times


def _note_queue_time(times: Dict[str, float], record: dict) -> None:
    meta = record.get('metadata') or {}
    if 'fetch.end' in meta and 'fetch.queue' in meta:
        try:
            allowed = int(meta['fetch.end']) / 1000.0 + float(meta.get('fetch.delay', 0))
        except ValueError:
            return
        queue = meta['fetch.queue']
        times[queue] = max(times.get(queue, 0.0), allowed)


_QUEUES_SUFFIX = '.queues.json'


def run_queue_times(journal_dir: str, run_id: str, before: Dict[str, float]
                    ) -> Dict[str, float]:
    """`before` (the queue times of earlier runs) updated with run `run_id`'s requests: from
    each of its writers' queue file, or from the writer's crawl_fetch journal when it has none
    (a bundle that did not finish)."""
    times = dict(before)
    prefix = _run_dir(journal_dir, run_id) + '/'
    for path in _journal_files(journal_dir, CRAWL_FETCH):
        if not path.startswith(prefix):
            continue
        written = _load_queue_times(_writer_of(path, CRAWL_FETCH) + _QUEUES_SUFFIX)
        if written is None:
            written = queue_times_of(_tolerant_records(path))
        for queue, allowed in written.items():
            times[queue] = max(times.get(queue, 0.0), allowed)
    return times


def read_journals(journal_dir: str) -> JournalState:
    """The done URLs and queue times of every journal in a segment's journal directory."""
    state = JournalState()
    if not fs.exists(journal_dir):
        return state
    records = []
    for path in sorted(_journal_files(journal_dir, CRAWL_FETCH)):
        for record in _tolerant_records(path):
            records.append(record)
            meta = record.get('metadata') or {}
            if meta.get(SOURCE_KEY) == record['url'] and record['status'] != 'linked':
                state.done.setdefault(record['url'], record)
    state.queue_times = queue_times_of(records)
    return state


def commit_run(journal_dir: str, run_id: str, paths: List[str]) -> str:
    """Records the journal files of a run's committed bundles (the runner may have retried
    others; their files are not used); returns the commit file's path."""
    fs.mkdirs(journal_dir)
    path = FileSystems.join(journal_dir, f'run-{run_id}.committed')
    with FileSystems.create(path) as f:
        f.write(json.dumps(sorted(paths)).encode('utf-8'))
    return path


def _committed(journal_dir: str, run_id: str) -> Optional[List[str]]:
    path = FileSystems.join(journal_dir, f'run-{run_id}.committed')
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as f:
        return json.loads(f.read().decode('utf-8'))


@dataclasses.dataclass(frozen=True)
class WarcInfo:
    """What the warcinfo record opening each published WARC file says, and its date."""
    fields: Tuple[Tuple[str, str], ...]
    date_ms: int


def _write_part(part: str, directory: str, index: int, records: Iterable[dict],
                warc_info: Optional[WarcInfo]) -> None:
    if part != WARC:
        write_avro_file(fs.part_file(directory, index), _SCHEMAS[part], records)
        return
    if warc_info is None:
        raise ValueError('publishing WARC files needs their warcinfo')
    write_warc_file(fs.warc_file(directory, index), warc_info.fields, warc_info.date_ms,
                    (record['warc'] for record in records),
                    lambda path: FileSystems.create(
                        path, compression_type=CompressionTypes.UNCOMPRESSED))


def publish_journals(journal_dir: str, run_id: str, tmp: Dict[str, str],
                     done_before: Dict[str, dict], warc_info: Optional[WarcInfo] = None
                     ) -> Dict[str, int]:
    """Turns the journals into part files in the `tmp` part directories ({part: directory}):
    the committed files of run `run_id` are renamed as they are (WARC journals are written out
    as WARC files); the records of URLs done in earlier runs (`done_before`) are copied out of
    their runs' journals, each record once, other records dropped. Returns {part: number of
    part files}."""
    committed = _committed(journal_dir, run_id)
    if committed is None:
        raise RuntimeError(f'{journal_dir}: run {run_id} has no commit file; not published')
    committed = set(committed)
    counts = {}
    for part, directory in tmp.items():
        fs.mkdirs(directory)
        index = 0
        for path in sorted(p for p in _journal_files(journal_dir, part) if p in committed):
            if part == WARC:
                _write_part(part, directory, index, _tolerant_records(path), warc_info)
            else:
                fs.rename(path, fs.part_file(directory, index))
            index += 1
        if done_before:
            kept = _records_of(journal_dir, part, done_before, exclude_run=run_id)
            _write_part(part, directory, index, kept, warc_info)
            index += 1
        if index == 0:
            _write_part(part, directory, 0, [], warc_info)
            index = 1
        counts[part] = index
    return counts


def _writer_of(path: str, part: str) -> str:
    """The journal writer a file belongs to (its run directory and writer name)."""
    return path[:-len(f'.{part}.avro')]


def _attempts(journal_dir: str, done: Dict[str, dict], exclude_run: Optional[str]
              ) -> Dict[str, str]:
    """generated URL (of `done`) → the journal writer holding its first complete attempt: the
    first writer, in path order, whose crawl_fetch file has the URL's own record. A URL may have
    more than one attempt when a streaming job was restored from a checkpoint and fetched it
    again."""
    skip = _run_dir(journal_dir, exclude_run) + '/' if exclude_run else None
    chosen: Dict[str, str] = {}
    for path in sorted(_journal_files(journal_dir, CRAWL_FETCH)):
        if skip and path.startswith(skip):
            continue
        writer = _writer_of(path, CRAWL_FETCH)
        for record in _tolerant_records(path):
            url = record['url']
            if url in done and url not in chosen and record['status'] != 'linked' and \
                    (record.get('metadata') or {}).get(SOURCE_KEY) == url:
                chosen[url] = writer
    return chosen


def _records_of(journal_dir: str, part: str, done: Dict[str, dict],
                exclude_run: Optional[str] = None):
    """The records of done URLs in the journals (but run `exclude_run`'s), each generated URL's
    from its first complete attempt only: in its writer's crawl_fetch file, the records up to
    its own; in the content file, the first content record of each URL of the attempt."""
    chosen = _attempts(journal_dir, done, exclude_run)
    for path in sorted(_journal_files(journal_dir, part)):
        writer = _writer_of(path, part)
        complete, seen = set(), set()
        for record in _tolerant_records(path):
            source = (record.get('metadata') or {}).get(SOURCE_KEY)
            if chosen.get(source) != writer or source in complete:
                continue
            if part == CRAWL_FETCH:
                if record['url'] == source and record['status'] != 'linked':
                    complete.add(source)
            elif (source, record['url']) in seen:
                continue
            seen.add((source, record['url']))
            yield record


def publish_attempts(journal_dir: str, tmp: Dict[str, str], done: Dict[str, dict],
                     warc_info: Optional[WarcInfo] = None) -> Dict[str, int]:
    """The streaming fetch's publication: one part file per part in the `tmp` part directories
    ({part: directory}) with the records of every done URL, each from its first complete
    attempt. Returns {part: number of part files}."""
    for part, directory in tmp.items():
        fs.mkdirs(directory)
        _write_part(part, directory, 0, _records_of(journal_dir, part, done), warc_info)
    return {part: 1 for part in tmp}


def write_queue_times(path: str, times: Dict[str, float]) -> None:
    with FileSystems.create(path) as f:
        f.write(json.dumps(times, sort_keys=True).encode('utf-8'))


def read_queue_times(path: str) -> Dict[str, float]:
    """The queue times of a file write_queue_times wrote ({} when it is missing or unreadable)."""
    times = _load_queue_times(path)
    return {} if times is None else times


def _load_queue_times(path: str) -> Optional[Dict[str, float]]:
    if not FileSystems.exists(path):
        return None
    try:
        with FileSystems.open(path) as f:
            return {k: float(v) for k, v in json.loads(f.read().decode('utf-8')).items()}
    except (ValueError, AttributeError, OSError):
        return None
