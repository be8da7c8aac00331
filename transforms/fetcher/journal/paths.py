"""The files of a segment's fetch journal (see the package's docstring) and how to read them."""

import uuid
from typing import Iterator, List

import fastavro

from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.records import CONTENT_SCHEMA, CRAWL_DATUM_SCHEMA
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH, WARC

__all__ = ['SOURCE_KEY', 'WARC_JOURNAL_SCHEMA', 'SCHEMAS', 'QUEUES_SUFFIX', 'new_run_id',
           'run_dir', 'journal_files', 'tolerant_records', 'writer_of']

SOURCE_KEY = '_src_'                   # metadata: the generated URL a record stems from
# The WARC records of one exchange, as gzip members, with the URL they are of.
WARC_JOURNAL_SCHEMA = {
    'type': 'record', 'name': 'WarcExchange', 'namespace': 'beamcrawl.journal',
    'fields': [{'name': 'url', 'type': 'string'},
               {'name': 'metadata', 'type': {'type': 'map', 'values': 'string'}},
               {'name': 'warc', 'type': 'bytes'}],
}
SCHEMAS = {CRAWL_FETCH: CRAWL_DATUM_SCHEMA, CONTENT: CONTENT_SCHEMA, WARC: WARC_JOURNAL_SCHEMA}

QUEUES_SUFFIX = '.queues.json'     # a writer's queue times, beside its files


def new_run_id() -> str:
    """A fresh name for a fetch run (its directory in the journal)."""
    return uuid.uuid4().hex[:12]


def run_dir(journal_dir: str, run_id: str) -> str:
    return fs.join(journal_dir, f'run-{run_id}')


def tolerant_records(path: str) -> Iterator[dict]:
    """The records of a journal file up to its last whole block (a killed writer may have left
    a partial one)."""
    try:
        with fs.open_read(path) as f:
            for block in fastavro.block_reader(f):
                yield from block
    except Exception:  # pylint: disable=broad-except  (a cut block fails in many ways)
        return


def journal_files(journal_dir: str, part: str) -> List[str]:
    return fs.list_files(fs.join(journal_dir, 'run-*', f'*.{part}.avro'))


def writer_of(path: str, part: str) -> str:
    """The journal writer a file belongs to (its run directory and writer name)."""
    return path[:-len(f'.{part}.avro')]
