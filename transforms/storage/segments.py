"""Segments: `segments/<yyyyMMddHHmmss>/` and their parts (docs/crawl-dir.md).

A part directory is there only once complete: a stage writes it aside and publishes it by a rename
(on an object store: writes it in place and publishes it by its `_published` marker; fs.py), the
part that marks its step done last. `SegmentLayout` (a part of CrawlLayout) names every path
of the segments and picks the segment a stage works on.
"""

import contextlib
import os
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage.fs import (PART_GLOB, TMP_PREFIX, WARC_GLOB, basename, children,
                                             delete, exists, is_published, join, list_files,
                                             publish_dir, read_file, write_file, written_dir)
from beamcrawl.transforms.storage.locks import LOCK_NAME, Lock

__all__ = ['SegmentLayout', 'SegmentUpdate', 'CRAWL_GENERATE', 'CRAWL_FETCH', 'CONTENT',
           'PARSE_TEXT', 'PARSE_DATA', 'CRAWL_PARSE', 'WARC', 'SEGMENT_PARTS', 'FETCH_PARTS',
           'PARSE_PARTS', 'MERGED_FROM']

# The parts of a segment, by directory name.
CRAWL_GENERATE, CRAWL_FETCH, CONTENT = 'crawl_generate', 'crawl_fetch', 'content'
PARSE_TEXT, PARSE_DATA, CRAWL_PARSE = 'parse_text', 'parse_data', 'crawl_parse'
WARC = 'warc'              # WARC files (part-NNNNN.warc.gz), not Avro: fetcher.store.warc
SEGMENT_PARTS = (CRAWL_GENERATE, CRAWL_FETCH, CONTENT, PARSE_TEXT, PARSE_DATA, CRAWL_PARSE,
                 WARC)
# What fetch and parse publish, in publishing order: the last one marks the step done.
FETCH_PARTS = (CONTENT, CRAWL_FETCH)
PARSE_PARTS = (PARSE_TEXT, PARSE_DATA, CRAWL_PARSE)
# A segment made by mergesegs names the segments it was merged from in this note.
MERGED_FROM = '_merged_from'



class SegmentUpdate:
    """Parts of one segment being written (see CrawlLayout.segment_update). `tmp[part]` is the
    directory to write a part into."""

    def __init__(self, crawl: 'SegmentLayout', segment: str, parts: Sequence[str]):
        self.crawl = crawl
        self.segment = segment
        self.parts = tuple(parts)
        self.tmp: Dict[str, str] = {p: crawl.part_tmp_dir(segment, p) for p in self.parts}
        self.abandoned = False

    def part_files(self, part: str) -> List[str]:
        """The part files written so far into a part's temporary directory."""
        return list_files(join(self.tmp[part], PART_GLOB))

    def abandon(self) -> None:
        """Publish nothing and remove the segment (generate: a segment that got no URL)."""
        self.abandoned = True

    def publishing(self) -> List[Tuple[str, str]]:
        """The (written, published) directory of each part, in publishing order."""
        return [(self.tmp[part], self.crawl.segment_part(self.segment, part))
                for part in self.parts]

    def _publish(self) -> None:
        for written, final in self.publishing():
            if is_published(final):
                raise RuntimeError(f'{final} exists already')
            publish_dir(written, final)

    def _clean(self) -> None:
        """Removes what is being written (on an object store the part's own directory: not
        once it is published)."""
        for part, path in self.tmp.items():
            if path != self.crawl.segment_part(self.segment, part) or \
                    not self.crawl.has_part(self.segment, part):
                delete(path)


class SegmentLayout:
    """The segments of a crawl directory (a part of CrawlLayout: `self.segments` is the
    segments directory)."""

    segments: str
    SEGMENT_PARTS = SEGMENT_PARTS

    def segment(self, name: str) -> str:
        return join(self.segments, name)

    def segment_part(self, segment: str, part: str) -> str:
        if part not in self.SEGMENT_PARTS:
            raise ValueError(part)
        return join(self.segment(segment), part)

    def segment_names(self) -> List[str]:
        """Names of the segments (yyyyMMddHHmmss directories), oldest first."""
        names = (basename(p) for p in children(self.segments))
        return sorted(n for n in names if len(n) == 14 and n.isdigit())

    def has_part(self, segment: str, part: str) -> bool:
        """Whether a segment's part is complete (it exists only once complete)."""
        return is_published(self.segment_part(segment, part))

    def segments_having(self, part: str, requested: Sequence[str] = ()) -> List[str]:
        """The names of the segments `requested` (names or paths), each of which must have
        `part`; without any, every segment that has it (at least one). InputError else."""
        if requested:
            names = [self.resolve_segment(s) for s in requested]
            for name in names:
                if not self.has_part(name, part):
                    raise InputError(f'{self.segment(name)}: has no {part}')
            return names
        names = [s for s in self.segment_names() if self.has_part(s, part)]
        if not names:
            raise InputError(f'{self.segments}: no segment with {part}')
        return names

    def resolve_segment(self, name_or_path: str) -> str:
        """A segment's name from its name or path; the segment must exist."""
        name = os.path.basename(name_or_path.rstrip('/'))
        if not exists(self.segment(name)):
            raise InputError(f'{self.segment(name)}: no such segment')
        return name

    def pick_segment(self, requested: Optional[str], done_part: str, *needed: str) -> str:
        """The requested segment, checked; or the newest that has every `needed` part but not
        `done_part`. InputError when there is none."""
        if requested:
            name = self.resolve_segment(requested)
            for part in needed:
                if not self.has_part(name, part):
                    raise InputError(f'{self.segment(name)}: has no {part}')
            if self.has_part(name, done_part):
                raise InputError(f'{self.segment(name)}: already has {done_part}')
            return name
        for name in reversed(self.segment_names()):
            if all(self.has_part(name, p) for p in needed) and not self.has_part(name, done_part):
                return name
        raise InputError(f'{self.segments}: no segment with {" and ".join(needed)} and without '
                         f'{done_part}')

    def segments_to_apply(self, applied: List[str], requested: List[str], needed_part: str
                          ) -> Tuple[List[str], List[str]]:
        """(segments to apply, those of them applied before), for a step that remembers the
        segments it `applied` (updatedb and invertlinks: DbLayout.applied_segments; index: its
        note). Requested segments must have `needed_part`; with none requested: every segment
        that has it and is not applied."""
        if requested:
            names = [self.resolve_segment(s) for s in requested]
            for name in names:
                if not self.has_part(name, needed_part):
                    raise InputError(f'{self.segment(name)}: has no {needed_part}')
            return names, [n for n in names if n in applied]
        having = [n for n in self.segment_names() if self.has_part(n, needed_part)]
        # A merged segment holds what its inputs hold: it is left out while every input is
        # applied or still here to be applied (applying both would count the same fetches twice).
        def superseded(name):
            inputs = self.merged_from(name)
            return bool(inputs) and all(i in applied or i in having for i in inputs)

        return [n for n in having if n not in applied and not superseded(n)], []

    def merged_from(self, segment: str) -> List[str]:
        """The segments a segment was merged from (mergesegs' note); [] for any other."""
        data = read_file(join(self.segment(segment), MERGED_FROM))
        return data.decode('utf-8').split() if data is not None else []

    def write_merged_from(self, segment: str, names: Sequence[str]) -> None:
        """Notes the segments a merged segment was made from (written before its parts)."""
        write_file(join(self.segment(segment), MERGED_FROM),
                   ''.join(f'{n}\n' for n in names).encode('utf-8'), replace=True)

    def part_files(self, segment: str, part: str) -> List[str]:
        return list_files(join(self.segment_part(segment, part),
                                WARC_GLOB if part == WARC else PART_GLOB))

    def part_tmp_dir(self, segment: str, part: str) -> str:
        """Where a part is written before it is published (fs.written_dir)."""
        return written_dir(self.segment_part(segment, part),
                           join(self.segment(segment), f'{TMP_PREFIX}{part}'))

    def fetch_journal(self, segment: str) -> str:
        """Where a fetch of the segment journals its results (fetcher/journal/)."""
        return join(self.segment(segment), '.fetch')

    def fetch_times(self, segment: str) -> str:
        """A fetched segment's note of when each politeness queue may be requested again."""
        return join(self.segment(segment), '_fetch_times.json')

    def segment_lock(self, segment: str, command: str = '') -> Lock:
        """The lock a stage holds while it writes parts of a segment: one writer per segment."""
        return Lock(join(self.segment(segment), LOCK_NAME), command,
                    f'another {command or "run"} of segment {segment}')

    @contextlib.contextmanager
    def segment_update(self, segment: str, parts: Sequence[str], command: str,
                       publish: bool = True) -> Iterator[SegmentUpdate]:
        """Holds the segment's lock and yields a SegmentUpdate whose `tmp[part]` directories the
        parts are written into (cleared first: left by a killed run). When the block ends
        without error the parts are published in the given order (the marker part last), or,
        with publish=False, left for the caller to publish with a database version
        (`SegmentUpdate.publishing()`, DbUpdate.publish_with); otherwise they are removed, and
        so is a segment left with no part at all."""
        with self.segment_lock(segment, command):
            marker = parts[-1]
            if self.has_part(segment, marker):      # another run finished it meanwhile
                raise InputError(f'{self.segment(segment)}: already has {marker}')
            update = SegmentUpdate(self, segment, parts)
            update._clean()
            try:
                yield update
                if update.abandoned:
                    delete(self.segment(segment))
                elif publish:
                    update._publish()
            except BaseException:
                update._clean()
                if not any(self.has_part(segment, p) for p in self.SEGMENT_PARTS):
                    delete(self.segment(segment))
                raise
