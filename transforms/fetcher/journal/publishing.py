"""Publishing a fetch: the journal turned into the segment's parts (crawl_fetch, content, WARC)."""

import dataclasses
from typing import Dict, Iterable, Optional, Tuple

from beamcrawl.transforms.fetcher.journal.paths import (SCHEMAS, SOURCE_KEY, journal_files, run_dir,
                                                        tolerant_records, writer_of)
from beamcrawl.transforms.fetcher.journal.reading import committed
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.segments import CRAWL_FETCH, WARC
from beamcrawl.transforms.storage.warc import write_warc_file

__all__ = ['WarcInfo', 'publish_journals', 'publish_attempts']


@dataclasses.dataclass(frozen=True)
class WarcInfo:
    """What the warcinfo record opening each published WARC file says, and its date."""
    fields: Tuple[Tuple[str, str], ...]
    date_ms: int


def _write_part(part: str, directory: str, index: int, records: Iterable[dict],
                warc_info: Optional[WarcInfo]) -> None:
    if part != WARC:
        write_avro_file(fs.part_file(directory, index), SCHEMAS[part], records)
        return
    if warc_info is None:
        raise ValueError('publishing WARC files needs their warcinfo')
    write_warc_file(fs.warc_file(directory, index), warc_info.fields, warc_info.date_ms,
                    (record['warc'] for record in records),
                    fs.create)


def publish_journals(journal_dir: str, run_id: str, tmp: Dict[str, str],
                     done_before: Dict[str, dict], warc_info: Optional[WarcInfo] = None
                     ) -> Dict[str, int]:
    """Turns the journals into part files in the `tmp` part directories ({part: directory}):
    the committed files of run `run_id` are renamed as they are (WARC journals are written out
    as WARC files); the records of URLs done in earlier runs (`done_before`) are copied out of
    their runs' journals, each record once, other records dropped. Returns {part: number of
    part files}."""
    run_files = committed(journal_dir, run_id)
    if run_files is None:
        raise RuntimeError(f'{journal_dir}: run {run_id} has no commit file; not published')
    run_files = set(run_files)
    counts = {}
    for part, directory in tmp.items():
        fs.mkdirs(directory)
        index = 0
        for path in sorted(p for p in journal_files(journal_dir, part) if p in run_files):
            if part == WARC:
                _write_part(part, directory, index, tolerant_records(path), warc_info)
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


def _attempts(journal_dir: str, done: Dict[str, dict], exclude_run: Optional[str]
              ) -> Dict[str, str]:
    """generated URL (of `done`) → the journal writer holding its first complete attempt: the
    first writer, in path order, whose crawl_fetch file has the URL's own record. A URL may have
    more than one attempt when a streaming job was restored from a checkpoint and fetched it
    again."""
    skip = run_dir(journal_dir, exclude_run) + '/' if exclude_run else None
    chosen: Dict[str, str] = {}
    for path in sorted(journal_files(journal_dir, CRAWL_FETCH)):
        if skip and path.startswith(skip):
            continue
        writer = writer_of(path, CRAWL_FETCH)
        for record in tolerant_records(path):
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
    for path in sorted(journal_files(journal_dir, part)):
        writer = writer_of(path, part)
        complete, seen = set(), set()
        for record in tolerant_records(path):
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
