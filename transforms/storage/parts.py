"""Parts in and out of pipelines: Beam transforms that read and write crawl-dir parts, and the
driver's small reads (iter_records, count_records: storage/partfiles.py, without Beam). Files are
written by storage/partwriter.py."""

import uuid
from typing import List

import apache_beam as beam
from apache_beam.io.avroio import ReadFromAvro
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from beamcrawl.transforms.base import progress
from beamcrawl.transforms.storage import databases, fs
from beamcrawl.transforms.storage.partfiles import (Record, check_avro_files, count_records,
                                                    iter_records)
from beamcrawl.transforms.storage.partwriter import PartWriter, write_avro_file
from beamcrawl.transforms.storage.records import complete_datum

__all__ = ['check_avro_files', 'ReadParts', 'ReadCounted', 'ReadCrawlDb', 'WriteParts',
           'iter_records', 'count_records', 'Record']

_BUNDLE = '.bundle.avro'        # a bundle's file, renamed to part-NNNNN.avro once committed


class ReadParts(beam.PTransform):
    """Records of a list of Avro part files (empty PCollection for an empty list).

    The files are checked in the driver first, so a corrupt input fails fast with its name.
    With `whole_files`, each file is read whole by one task, in one bundle, instead of through
    Beam's splittable Avro source: for a small input whose next step regroups its records
    anyway (the fetch list), that costs about 0.12 s less to build and run on the local runner
    (docs/performance.md).
    """

    def __init__(self, paths: List[str], whole_files: bool = False):
        super().__init__()
        self.paths = list(paths)
        self.whole_files = whole_files
        check_avro_files(self.paths)

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[Record]:
        if not self.paths:
            return pbegin | 'Empty' >> beam.Create([])
        if self.whole_files:
            return (pbegin | 'Paths' >> beam.Create(self.paths, reshuffle=False)
                    | 'Read' >> beam.FlatMap(lambda path: iter_records([path])))
        if len(self.paths) == 1:
            return pbegin | 'Read' >> ReadFromAvro(self.paths[0])
        return (pbegin | 'Paths' >> beam.Create(self.paths)
                | 'Read' >> beam.io.avroio.ReadAllFromAvro())


class _CountFn(beam.DoFn):
    """Passes records on, counting them for the progress line."""

    def __init__(self, done: progress.Reporter):
        self.done = done

    def start_bundle(self):
        self._ticker = progress.Ticker(self.done)

    def process(self, record):
        self._ticker.tick()
        yield record

    def finish_bundle(self):
        self._ticker.flush()


class _CompleteFn(_CountFn):
    """A record with every field present; counts the records read for the progress line."""

    def process(self, record):
        self._ticker.tick()
        yield complete_datum(record)


class ReadCounted(beam.PTransform):
    """ReadParts whose records the pipeline's progress counts as stage `name` (for readers
    whose read is their whole work: readlinkdb --dump)."""

    def __init__(self, paths: List[str], name: str):
        super().__init__()
        self.read, self.name = ReadParts(paths), name

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[Record]:
        done = progress.stage(pbegin.pipeline, self.name, count_records(self.read.paths),
                              'records')
        return pbegin | 'Read' >> self.read | 'Count' >> beam.ParDo(_CountFn(done))


class ReadCrawlDb(beam.PTransform):
    """CrawlDatum records of the readable crawldb version, with every field present; the
    pipeline's progress counts them (base/progress.py: the `crawldb` stage)."""

    def __init__(self, db: databases.DbLayout):
        super().__init__()
        self.read = ReadParts(db.part_files())

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[Record]:
        done = progress.stage(pbegin.pipeline, 'crawldb', count_records(self.read.paths),
                              'records')
        return pbegin | 'ReadDb' >> self.read | 'Complete' >> beam.ParDo(_CompleteFn(done))


class _WriteBundleFn(beam.DoFn):
    """Writes each bundle's records to its own hidden file (a PartWriter, published as
    `.<id>.bundle.avro` when the bundle ends); yields the file's path then. Records are written
    one by one, so nothing is buffered."""

    def __init__(self, directory: str, schema: dict):
        self.directory = directory
        self.schema = schema

    def start_bundle(self):
        self._writer = None

    def process(self, record):
        if self._writer is None:
            self._writer = PartWriter(FileSystems.join(
                self.directory, f'.{uuid.uuid4().hex}{_BUNDLE}'), self.schema)
            self._writer.open()
        self._writer.write(record)

    def finish_bundle(self):
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.commit()
            yield GlobalWindows.windowed_value(writer.path)

    def teardown(self):
        if self._writer is not None:        # a bundle that failed: its file is removed
            self._writer.abort()


class _FinalizePartsFn(beam.DoFn):
    """[temporary files of committed bundles] → part-NNNNN.avro; files of failed bundle
    attempts are not in the list and are removed. An empty input gives one empty part."""

    def __init__(self, directory: str, schema: dict):
        self.directory = directory
        self.schema = schema

    def process(self, paths):
        paths = sorted(paths)
        for pattern in (f'.*{_BUNDLE}', '.*.inprogress'):      # failed bundles' files
            for leftover in fs.list_files(FileSystems.join(self.directory, pattern)):
                if leftover not in paths:
                    fs.delete(leftover)
        if not paths:
            write_avro_file(self._part(0), self.schema, [])
            return
        for index, path in enumerate(paths):
            target = self._part(index)
            if fs.exists(path):      # already renamed by an earlier attempt otherwise
                fs.rename(path, target)
            yield target

    def _part(self, index: int) -> str:
        return fs.part_file(self.directory, index)


class WriteParts(beam.PTransform):
    """Writes records as `<directory>/part-NNNNN.avro` (deflate), one part per bundle.

    The directory is a temporary one: the caller publishes or installs it after the pipeline.
    """

    def __init__(self, directory: str, schema: dict):
        super().__init__()
        self.directory = directory
        self.schema = schema

    def expand(self, pcoll: beam.PCollection[Record]) -> beam.PCollection[str]:
        return (pcoll
                | 'WriteBundles' >> beam.ParDo(_WriteBundleFn(self.directory, self.schema))
                | 'AllFiles' >> beam.combiners.ToList()
                | 'Finalize' >> beam.ParDo(_FinalizePartsFn(self.directory, self.schema)))

