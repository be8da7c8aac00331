"""import-nutch: a Nutch 1.x crawl written in beamcrawl's layout, record for record
(docs/import-nutch.md).

`find_nutch_crawl` lists what a Nutch crawl directory holds (in the driver); `ImportNutch` is
the stage. Its three branches run in one pipeline:

* the crawldb and the linkdb go through the batch engine (engine/mapreduce.py), as inject and
  invertlinks write them: part i holds the URLs u with crc32(u) mod N == i, sorted, with their
  keys files and `_partitions` note, so the next update merges part by part;
* each segment part file of Nutch (a MapFile's `data` or a SequenceFile) becomes one Avro part
  of the same segment part, in the same order (a fetch list's parts stay its fetch slots).

The Nutch files are only read (storage/hadoopseq.py, storage/nutchwritables.py) and their
records mapped by policy/nutchrecords.py. The caller installs the outputs (DbLayout.update,
SegmentLayout.segment_update): nothing is visible in the crawl directory before it is whole.
"""

import re
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam

from beamcrawl.transforms.base import metrics
from beamcrawl.transforms.base.counting import CountingDoFn
from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.engine import partitions as partitions_mod
from beamcrawl.transforms.engine.mapreduce import MapReduce
from beamcrawl.transforms.engine.reducers import Mapper, Reducer
from beamcrawl.transforms.engine.units import Unit
from beamcrawl.transforms.policy import nutchrecords
from beamcrawl.transforms.runners.runtime import workers_of
from beamcrawl.transforms.storage import fs, hadoopseq, nutchwritables
from beamcrawl.transforms.storage.databases import DbUpdate
from beamcrawl.transforms.storage.partwriter import PartWriter
from beamcrawl.transforms.storage.records import SCHEMAS
from beamcrawl.transforms.storage.segments import (CONTENT, CRAWL_FETCH, CRAWL_GENERATE,
                                                   CRAWL_PARSE, PARSE_DATA, PARSE_TEXT)

__all__ = ['ImportNutch', 'NutchCrawl', 'find_nutch_crawl', 'nutch_records', 'SEGMENT_ORDER']

# A part of a Hadoop job's output: part-r-00000 (reduce), part-m-00000 (map), part-00000 (old).
_NUTCH_PART = re.compile(r'part-(?:[rm]-)?\d{5}')
_SEGMENT_NAME = re.compile(r'\d{14}')
# The parts of a segment in beamcrawl's publishing order (docs/crawl-dir.md): each step's
# marker after the parts it completes.
SEGMENT_ORDER = (CRAWL_GENERATE, CONTENT, CRAWL_FETCH, PARSE_TEXT, PARSE_DATA, CRAWL_PARSE)

_DATUM = 'org.apache.nutch.crawl.CrawlDatum'
# The value class Nutch writes in each kind of file.
_VALUE_CLASS = {
    'crawldb': _DATUM, CRAWL_GENERATE: _DATUM, CRAWL_FETCH: _DATUM, CRAWL_PARSE: _DATUM,
    'linkdb': 'org.apache.nutch.crawl.Inlinks', CONTENT: 'org.apache.nutch.protocol.Content',
    PARSE_DATA: 'org.apache.nutch.parse.ParseData', PARSE_TEXT: 'org.apache.nutch.parse.ParseText',
}
_TEXT = 'org.apache.hadoop.io.Text'
# About the bytes of a Nutch database record (a crawldb's CrawlDatum with its metadata; an
# Inlinks entry), to guess the records of a database from its files' sizes without reading
# them: for sizing the work and the partitions only.
_BYTES_PER_RECORD = 150


class NutchCrawl(NamedTuple):
    """What a Nutch crawl directory holds: the SequenceFiles of each database and segment
    part, in part order."""
    root: str
    crawldb: List[str]
    linkdb: List[str]
    segments: Dict[str, Dict[str, List[str]]]     # name -> {part: files}


def _part_files(directory: str) -> List[str]:
    """The SequenceFiles of a Hadoop output directory, in part order."""
    names = sorted(n for n in fs.entries(directory) if _NUTCH_PART.fullmatch(n))
    return [hadoopseq.map_file_data(fs.join(directory, n)) for n in names]


def find_nutch_crawl(root: str) -> NutchCrawl:
    """The parts of the Nutch crawl directory `root` (crawldb/current/ needed; linkdb/current/
    and segments/ if there). InputError when it has no Nutch crawldb."""
    crawldb = fs.join(root, 'crawldb', 'current')
    if not fs.exists(root):
        raise InputError(f'{root}: no such directory')
    crawldb_files = _part_files(crawldb) if fs.exists(crawldb) else []
    if not crawldb_files:
        raise InputError(f'{root}: not a Nutch crawl directory (no crawldb/current/part-* '
                         f'in it; name the directory that holds crawldb/, linkdb/ and '
                         f'segments/)')
    linkdb = fs.join(root, 'linkdb', 'current')
    segments: Dict[str, Dict[str, List[str]]] = {}
    segments_dir = fs.join(root, 'segments')
    if fs.exists(segments_dir):
        for name in sorted(fs.entries(segments_dir)):
            if not _SEGMENT_NAME.fullmatch(name):
                continue
            here = fs.entries(fs.join(segments_dir, name))
            parts = {part: _part_files(fs.join(segments_dir, name, part))
                     for part in SEGMENT_ORDER if part in here}
            if parts:
                segments[name] = parts
    return NutchCrawl(root, crawldb_files, _part_files(linkdb) if fs.exists(linkdb) else [],
                      segments)


def nutch_records(path: str, kind: str, fetch_file: Optional[str] = None
                  ) -> Iterator[Tuple[str, dict]]:
    """(url, beamcrawl record) of every record of the Nutch file `path` holding `kind`
    (crawldb, linkdb or a segment part); content records get the fetch time and HTTP code of
    their URL's record in `fetch_file` (the same segment's crawl_fetch part). InputError, naming
    the file and the record's offset, for anything malformed."""
    header = hadoopseq.read_header(path)
    wanted = _VALUE_CLASS[kind]
    if header.key_class != _TEXT or header.value_class != wanted:
        raise InputError(f'{path}: holds {header.key_class} -> {header.value_class}, not the '
                         f'Text -> {wanted} of a Nutch {kind}')
    decode = nutchwritables.VALUE_DECODERS[wanted]
    fetched = _FetchInfo(fetch_file) if kind == CONTENT else None
    for key, value, offset in hadoopseq.read_pairs(path):
        try:
            url = nutchwritables.decode(hadoopseq.Cursor.text, key)
            yield url, _convert(kind, url, nutchwritables.decode(decode, value), fetched)
        except (hadoopseq.FormatError, ValueError) as e:
            raise InputError(f'{path}: corrupt record at byte {offset}: {e}') from None
        except RecursionError:      # maps nested in maps, thousands deep: not Nutch's
            raise InputError(f'{path}: corrupt record at byte {offset}: metadata nested too '
                             f'deep') from None


def _convert(kind: str, url: str, value, fetched: Optional['_FetchInfo']) -> dict:
    if kind == 'linkdb':
        return nutchrecords.inlinks_record(url, value)
    if kind == CONTENT:
        fetch_time, code = fetched.lookup(url)
        return nutchrecords.content_record(url, value, fetch_time=fetch_time, http_code=code)
    if kind == PARSE_DATA:
        return nutchrecords.parse_data(url, value)
    if kind == PARSE_TEXT:
        return nutchrecords.parse_text_record(url, value)
    return nutchrecords.datum(url, value, fetch_part=kind == CRAWL_FETCH)


class _FetchInfo:
    """(fetch time, HTTP code) of URLs of a crawl_fetch part, looked up in URL order: Nutch
    writes a segment's content and crawl_fetch parts with the same partitioning, each sorted
    by URL, so one pass over both matches them. Looked up out of order, the part is read
    whole once."""

    def __init__(self, path: Optional[str]):
        self.path = path
        self._stream = nutch_records(path, CRAWL_FETCH) if path else iter(())
        self._current: Optional[Tuple[str, dict]] = None
        self._last = ''
        self._table: Optional[Dict[str, Tuple[int, Optional[int]]]] = None

    @staticmethod
    def _info(record: dict) -> Tuple[int, Optional[int]]:
        return record['fetch_time'], record['http_code']

    def lookup(self, url: str) -> Tuple[int, Optional[int]]:
        if self._table is None and url < self._last:
            self._table = {}
            if self.path:
                for u, r in nutch_records(self.path, CRAWL_FETCH):
                    if r['status'] != 'linked' or u not in self._table:
                        self._table[u] = self._info(r)
        if self._table is not None:
            return self._table.get(url, (0, None))
        self._last = url
        found = None
        while True:
            if self._current is None:
                self._current = next(self._stream, None)
                if self._current is None:
                    break
            u, record = self._current
            if u > url:
                break
            if u == url and (found is None or record['status'] != 'linked'):
                found = self._info(record)
            self._current = None
        return found if found is not None else (0, None)


class _NutchDbMapper(Mapper):
    """Mapper of a database: each record of a Nutch part (a unit is one file) by its URL."""

    def __init__(self, kind: str):
        self.kind = kind

    def map(self, unit: Unit, counts):
        n = 0
        for url, record in nutch_records(unit.path, self.kind):
            n += 1
            yield url, record
        counts.inc(metrics.IMPORT_RECORDS + self.kind, n)


class _SortedReducer(Reducer):
    """Reducer of a database: its partition's records sorted by URL, with the keys file; a URL
    met twice (not in a sound Nutch database) keeps its last record."""

    def __init__(self, schema: dict):
        self.schema = schema

    def reduce(self, index, groups, path, counts):
        with PartWriter(path, self.schema, keys=True) as out:
            for url in sorted(groups):
                values = groups[url]
                if len(values) > 1:
                    counts.inc(metrics.IMPORT_DUPLICATES, len(values) - 1)
                out.write(values[-1])


class _SegmentTask(NamedTuple):
    part: str                   # crawl_generate, content, ...
    source: str                 # the Nutch file
    target: str                 # the Avro part it becomes
    fetch_file: Optional[str]   # content: the segment's crawl_fetch file of the same part


class _WriteSegmentPartFn(CountingDoFn):
    def process(self, task: _SegmentTask):
        n = unmatched = 0
        with PartWriter(task.target, SCHEMAS[task.part]) as out:
            for _, record in nutch_records(task.source, task.part, task.fetch_file):
                if task.part == CONTENT and record['http_code'] is None and \
                        not record['fetch_time']:
                    unmatched += 1
                out.write(record)
                n += 1
        self.counts.inc(metrics.IMPORT_RECORDS + task.part, n)
        self.counts.inc(metrics.IMPORT_CONTENT_UNMATCHED, unmatched)
        yield task.target


def segment_tasks(files: Dict[str, List[str]], tmp: Dict[str, str]) -> List[_SegmentTask]:
    """The files of one segment to write: each Nutch part file into the Avro part of the same
    number in `tmp[part]` (SegmentUpdate.tmp)."""
    fetch = files.get(CRAWL_FETCH, [])
    tasks = []
    for part, sources in files.items():
        for index, source in enumerate(sources):
            pair = fetch[index] if part == CONTENT and index < len(fetch) else None
            tasks.append(_SegmentTask(part, source, fs.part_file(tmp[part], index), pair))
    return tasks


class ImportNutch(beam.PTransform):
    """PBegin → PCollection[part file]: writes the Nutch crawl `nutch` in beamcrawl's layout.

    Args (keyword-only):
      nutch: what find_nutch_crawl found.
      crawldb: the crawldb version being written (DbLayout.update()).
      linkdb: the linkdb version being written, or None (the Nutch crawl has no linkdb).
      segments: {segment name: {part: directory its Avro parts are written into}}
        (SegmentUpdate.tmp of each segment).
      crawldb_partitions, linkdb_partitions: crawldb.partitions and linkdb.partitions (0:
        chosen from the records and the workers, as inject and invertlinks choose them).

    `weight` is the guessed size of the work in crawldb records, for sizing the run
    (make_pipeline).
    """

    def __init__(self, *, nutch: NutchCrawl, crawldb: DbUpdate, linkdb: Optional[DbUpdate],
                 segments: Dict[str, Dict[str, str]], crawldb_partitions: int,
                 linkdb_partitions: int):
        super().__init__()
        self.nutch, self.crawldb, self.linkdb = nutch, crawldb, linkdb
        self.partitions = crawldb_partitions, linkdb_partitions
        self.tasks = [task for name, files in nutch.segments.items()
                      for task in segment_tasks(files, segments[name])]
        self.records = [sum(hadoopseq.file_size(f) for f in files) // _BYTES_PER_RECORD
                        for files in (nutch.crawldb, nutch.linkdb)]
        self.weight = sum(self.records)

    @staticmethod
    def _units(kind: str, files: Sequence[str]) -> List[Unit]:
        return [Unit(i, kind, path) for i, path in enumerate(files)]

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[str]:
        workers = workers_of(pbegin.pipeline)
        count = [partitions_mod.partitions_for(setting, records, workers)
                 for setting, records in zip(self.partitions, self.records)]
        outputs = [pbegin | 'CrawlDb' >> MapReduce(
            units=self._units('crawldb', self.nutch.crawldb),
            mapper=_NutchDbMapper('crawldb'), reducer=_SortedReducer(SCHEMAS['crawldb']),
            partitions=count[0], out=self.crawldb)]
        if self.linkdb is not None:
            outputs.append(pbegin | 'LinkDb' >> MapReduce(
                units=self._units('linkdb', self.nutch.linkdb),
                mapper=_NutchDbMapper('linkdb'), reducer=_SortedReducer(SCHEMAS['linkdb']),
                partitions=count[1], out=self.linkdb))
        if self.tasks:
            outputs.append(pbegin
                           | 'SegmentParts' >> beam.Create(self.tasks)
                           | 'Spread' >> beam.Reshuffle()
                           | 'WriteSegmentParts' >> beam.ParDo(_WriteSegmentPartFn()))
        return outputs | 'Written' >> beam.Flatten()
