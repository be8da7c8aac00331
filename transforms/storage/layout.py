"""The crawl directory (docs/crawl-dir.md): every path, the locks, and every publish.

Nothing else in the project builds a crawl-dir path, names a part or publishes output:
`DbLayout.update()` writes a database version aside and installs it;
`CrawlLayout.segment_update()` writes segment parts aside and publishes them, its marker part
last. Every file operation goes through `apache_beam.io.filesystems.FileSystems`, so a crawl dir
on a shared filesystem works on a cluster runner; a lock file is created exclusively (O_EXCL)
where the filesystem is local. Locks and installs run in the driver program, never in a DoFn.

A database (crawldb, linkdb) is updated by writing a complete new version beside `current/`,
then, under the lock: `old/` is removed, `current/` becomes `old/`, the new version becomes
`current/`. A process killed at any point leaves a readable database: before the renames the
old `current/` is untouched; between them `old/` holds the previous version, which readers fall
back to and the next updater moves back into place.
"""

import contextlib
import datetime
import getpass
import json
import logging
import os
import re
import socket
import time
import uuid
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.localfilesystem import LocalFileSystem

from beamcrawl.transforms.base.errors import InputError, LockedError

log = logging.getLogger('beamcrawl')

__all__ = ['CrawlLayout', 'DbLayout', 'DbUpdate', 'SegmentUpdate', 'Lock', 'PART_GLOB',
           'part_file', 'exists', 'list_files', 'delete', 'mkdirs', 'rename', 'write_file',
           'read_file', 'SITE_CONF',
           'CRAWL_GENERATE', 'CRAWL_FETCH', 'CONTENT', 'PARSE_TEXT', 'PARSE_DATA', 'CRAWL_PARSE',
           'WARC', 'WARC_GLOB', 'warc_file', 'SEGMENT_PARTS', 'FETCH_PARTS', 'PARSE_PARTS']

# The parts of a segment, by directory name.
CRAWL_GENERATE, CRAWL_FETCH, CONTENT = 'crawl_generate', 'crawl_fetch', 'content'
PARSE_TEXT, PARSE_DATA, CRAWL_PARSE = 'parse_text', 'parse_data', 'crawl_parse'
WARC = 'warc'              # WARC files (part-NNNNN.warc.gz), not Avro: fetcher.store.warc
SEGMENT_PARTS = (CRAWL_GENERATE, CRAWL_FETCH, CONTENT, PARSE_TEXT, PARSE_DATA, CRAWL_PARSE,
                 WARC)
# What fetch and parse publish, in publishing order: the last one marks the step done.
FETCH_PARTS = (CONTENT, CRAWL_FETCH)
PARSE_PARTS = (PARSE_TEXT, PARSE_DATA, CRAWL_PARSE)

PART_GLOB = 'part-*.avro'
WARC_GLOB = 'part-*.warc.gz'
APPLIED = '_applied_segments'      # inside a db version: segments already merged into it
# A database version's partitioning: part i holds the keys k with crc32(k) mod N == i, each part
# sorted by key (written by inject, updatedb and invertlinks; docs/crawl-dir.md).
PARTITIONS_NOTE = '_partitions'
_TMP_PREFIX = '.tmp-'
_LOCK_NAME = '.locked'
SITE_CONF = 'crawl-conf.yaml'


def write_file(path: str, data: bytes, *, replace: bool) -> bool:
    """Publishes a small file whole: written aside, then moved into place, so a reader finds the
    old file or the new one, never a part. With replace=False the file is created only if it
    does not exist yet (False when it did: another run made it first)."""
    aside = f'{path}{_TMP_PREFIX}{uuid.uuid4().hex[:8]}'
    if is_local(path):
        os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
        with open(aside, 'wb') as f:
            f.write(data)
        try:
            if replace:
                os.replace(aside, path)
                return True
            try:
                os.link(aside, path)            # fails when the file exists
                return True
            except FileExistsError:
                return False
        finally:
            if os.path.exists(aside):
                os.remove(aside)
    if not replace and FileSystems.exists(path):
        return False
    with FileSystems.create(aside) as f:
        f.write(data)
    if replace and FileSystems.exists(path):
        delete(path)
    rename(aside, path)
    return True


def read_file(path: str) -> Optional[bytes]:
    """A small file's bytes, or None when it does not exist."""
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as f:
        return f.read()


# A test seam: a kill test names one of the points below in BEAMCRAWL_HOLD_AT, and the command
# creates the file BEAMCRAWL_HOLD_FILE and waits there to be killed, so that the test kills at
# exactly that point, whatever the machine's speed.
HOLD_POINTS = ('install.pending', 'install.renamed')


def _hold(point: str) -> None:
    if os.environ.get('BEAMCRAWL_HOLD_AT') == point:
        with open(os.environ['BEAMCRAWL_HOLD_FILE'], 'w', encoding='ascii') as f:
            f.write(point)
        while True:
            time.sleep(3600)


def part_file(directory: str, index: int) -> str:
    """The path of part number `index` in a part directory: part-NNNNN.avro."""
    return FileSystems.join(directory, f'part-{index:05d}.avro')


def warc_file(directory: str, index: int) -> str:
    """The path of WARC file number `index` in a segment's warc/ part: part-NNNNN.warc.gz."""
    return FileSystems.join(directory, f'part-{index:05d}.warc.gz')


def _join(*parts: str) -> str:
    return FileSystems.join(*parts)


def exists(path: str) -> bool:
    return FileSystems.exists(path)


def mkdirs(path: str) -> None:
    """Creates a directory (and parents); no error if it exists."""
    if FileSystems.exists(path):
        return
    try:
        FileSystems.mkdirs(path)
    except (IOError, BeamIOError):
        if not FileSystems.exists(path):
            raise


def delete(path: str) -> None:
    """Deletes a file or a directory tree; no error if it is absent."""
    if FileSystems.exists(path):
        FileSystems.delete([path])


def rename(src: str, dst: str) -> None:
    FileSystems.rename([src], [dst])


def list_files(pattern: str) -> List[str]:
    """Paths matching a glob pattern, sorted; empty when nothing matches."""
    result = FileSystems.match([pattern])[0]
    return sorted(m.path for m in result.metadata_list)


def is_local(path: str) -> bool:
    """Whether a path is on the local filesystem (where os functions apply)."""
    return isinstance(FileSystems.get_filesystem(path), LocalFileSystem)


def process_alive(pid: int) -> bool:
    """Whether a process of this host runs (a zombie, exited but not reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f'/proc/{pid}/stat', encoding='ascii') as f:
            return f.read().split(') ', 1)[1][:1] != 'Z'
    except (OSError, IndexError):
        return True


class Lock:
    """A `.locked` file, held while one process changes what it guards (a database, a segment).

    Used as a context manager. A second process finds the file and gets a LockedError that names
    it and its holder. The file records who holds it: a lock whose holder was a process of this
    host that no longer runs (a killed run) is taken over, with a warning; any other is
    explained. `what` names the guarded work in the messages.
    """

    def __init__(self, path: str, command: str = '', what: str = 'another update'):
        self.path = path
        self.command = command
        self.what = what
        self._held = False

    def _describe(self) -> bytes:
        return (f'pid={os.getpid()} host={socket.gethostname()} user={getpass.getuser()} '
                f'since={datetime.datetime.now(datetime.timezone.utc).isoformat()} '
                f'command={self.command}\n').encode('utf-8')

    def acquire(self) -> None:
        mkdirs(os.path.dirname(self.path) if is_local(self.path)
               else FileSystems.split(self.path)[0])
        if is_local(self.path):
            if not self._create_local():
                if not self._take_over() or not self._create_local():
                    raise self._locked()       # of two takers, one wins the second create
        else:
            if FileSystems.exists(self.path):
                raise self._locked()
            with FileSystems.create(self.path) as f:
                f.write(self._describe())
        self._held = True

    def _create_local(self) -> bool:
        """Creates the lock file with its holder already written (a file written aside, then
        hard-linked into place, which fails when the lock exists); False when it exists."""
        aside = f'{self.path}.{os.getpid()}.{uuid.uuid4().hex[:8]}'
        with open(aside, 'wb') as f:
            f.write(self._describe())
        try:
            os.link(aside, self.path)
            return True
        except FileExistsError:
            return False
        finally:
            os.remove(aside)

    def _take_over(self) -> bool:
        """Removes a lock left by a dead process of this host; True when it did."""
        try:
            with open(self.path, encoding='utf-8', errors='replace') as f:
                fields = dict(part.split('=', 1) for part in f.read(300).split()
                              if '=' in part)
            pid = int(fields.get('pid', ''))
        except (OSError, ValueError):
            return False
        if fields.get('host') != socket.gethostname() or process_alive(pid):
            return False
        log.warning('%s: taking over the lock left by a run that no longer runs (pid %d, %s)',
                    self.path, pid, fields.get('command', ''))
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
        return True

    def _locked(self) -> LockedError:
        holder = ''
        try:
            with FileSystems.open(self.path) as f:
                holder = f.read(300).decode('utf-8', 'replace').strip()
        except (IOError, BeamIOError):
            pass
        return LockedError(
            f'lock {self.path} is held: {self.what} is running'
            f'{" (" + holder + ")" if holder else ""}; if it is not, a killed run left the lock '
            f'behind: delete {self.path} and run again')

    def release(self) -> None:
        if self._held:
            delete(self.path)
            self._held = False

    def __enter__(self) -> 'Lock':
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class DbLayout:
    """A versioned database directory: crawldb/ or linkdb/."""

    def __init__(self, path: str, kind: str):
        self.path = path
        self.kind = kind
        self.current = _join(path, 'current')
        self.old = _join(path, 'old')
        self.lock_path = _join(path, _LOCK_NAME)
        self.pending = _join(path, '.pending-install.json')    # see _install_together

    def lock(self, command: str = '') -> Lock:
        return Lock(self.lock_path, command, f'another update of the {self.kind}')

    @contextlib.contextmanager
    def update(self, *, keep_backup: bool, command: str) -> Iterator['DbUpdate']:
        """Holds the lock, recovers a cut-off install, and yields a DbUpdate whose `dir` the new
        version is written into. When the block ends without error the version is installed
        (unless discarded); otherwise it is removed and the current version stays."""
        with self.lock(command):
            self.recover()
            new = DbUpdate(self.new_version_dir())
            try:
                yield new
            except BaseException:
                delete(new.dir)
                raise
            finally:
                if FileSystems.exists(new.scratch):
                    delete(new.scratch)
            if new.discarded:
                delete(new.dir)
                return
            if not list_files(_join(new.dir, PART_GLOB)):
                delete(new.dir)
                raise RuntimeError(f'{new.dir}: the pipeline wrote no part file; not installed')
            if new.renames:
                self._install_together(new.dir, new.renames, keep_backup)
            else:
                self.install(new.dir, keep_backup=keep_backup)
            log.info('installed %s', self.current)

    def readable_dir(self) -> Optional[str]:
        """The version to read: current/, or old/ if an install was cut off; None if empty."""
        for candidate in (self.current, self.old):
            if FileSystems.exists(candidate):
                return candidate
        return None

    def part_files(self) -> List[str]:
        """The part files of the readable version (empty list for a new database)."""
        directory = self.readable_dir()
        return list_files(_join(directory, PART_GLOB)) if directory else []

    def new_version_dir(self) -> str:
        """A fresh directory name beside current/ for a version being written."""
        return _join(self.path, f'{_TMP_PREFIX}{self.kind}-{uuid.uuid4().hex[:12]}')

    def _install_together(self, new_dir: str, renames: Sequence[Tuple[str, str]],
                          keep_backup: bool) -> None:
        """Under the lock: installs new_dir and does `renames` (publishing other outputs of the
        same step, such as generate's segments) as one step. The intent is written first
        (`.pending-install.json`); a run killed after it is completed by the next one
        (recover), so the outputs become visible together or not at all."""
        note = {'version': new_dir, 'renames': [list(r) for r in renames],
                'keep_backup': keep_backup}
        write_file(self.pending, json.dumps(note).encode('utf-8'), replace=True)
        _hold('install.pending')
        self._roll_forward(note)

    def _roll_forward(self, note: dict) -> None:
        for src, dst in note['renames']:
            if FileSystems.exists(src) and not FileSystems.exists(dst):
                rename(src, dst)
            _hold('install.renamed')
        if FileSystems.exists(note['version']):
            self.install(note['version'], keep_backup=note['keep_backup'])
        delete(self.pending)

    def recover(self) -> None:
        """Under the lock: finish an install that was cut off and remove abandoned versions."""
        pending = read_file(self.pending)
        if pending is not None:
            log.warning('%s: completing the install that a killed run began', self.path)
            self._roll_forward(json.loads(pending))
        if not FileSystems.exists(self.current) and FileSystems.exists(self.old):
            rename(self.old, self.current)
        if FileSystems.exists(self.path):
            for path in _children(self.path):
                if os.path.basename(path.rstrip('/')).startswith(_TMP_PREFIX):
                    delete(path)

    def applied_segments(self) -> List[str]:
        """Names of the segments already applied to the readable version (updatedb for the
        crawldb, invertlinks for the linkdb)."""
        directory = self.readable_dir()
        path = _join(directory, APPLIED) if directory else None
        if not path or not FileSystems.exists(path):
            return []
        with FileSystems.open(path) as f:
            return [n for n in f.read().decode('utf-8').split() if n]

    def write_applied(self, new_dir: str, names: List[str]) -> None:
        """Records the applied segments inside a version being written (installed with it)."""
        with FileSystems.create(_join(new_dir, APPLIED)) as f:
            f.write(''.join(f'{n}\n' for n in sorted(set(names))).encode('utf-8'))

    def read_note(self, name: str) -> Optional[str]:
        """A small text note stored in the readable version (e.g. its partitioning)."""
        directory = self.readable_dir()
        path = _join(directory, name) if directory else None
        if not path or not FileSystems.exists(path):
            return None
        with FileSystems.open(path) as f:
            return f.read().decode('utf-8').strip()

    def write_note(self, new_dir: str, name: str, text: str) -> None:
        with FileSystems.create(_join(new_dir, name)) as f:
            f.write(text.encode('utf-8'))

    def install(self, new_dir: str, keep_backup: bool) -> None:
        """Under the lock: new_dir becomes current/, the previous current/ becomes old/.
        A version written without its own applied-segments list inherits the current one."""
        if not FileSystems.exists(_join(new_dir, APPLIED)) and self.applied_segments():
            self.write_applied(new_dir, self.applied_segments())
        if FileSystems.exists(self.current):
            delete(self.old)
            rename(self.current, self.old)
        rename(new_dir, self.current)
        if not keep_backup:
            delete(self.old)


class DbUpdate:
    """A database version being written (see DbLayout.update)."""

    def __init__(self, directory: str):
        self.dir = directory
        # Working files of the update (bulk.MapReduce's spills): beside the version, removed
        # when the update ends; a cut-off run's are removed by the next (recover()).
        self.scratch = directory + '-scratch'
        self.discarded = False
        self.renames: List[Tuple[str, str]] = []

    def discard(self) -> None:
        """Do not install this version (nothing changed)."""
        self.discarded = True

    def publish_with(self, renames: Sequence[Tuple[str, str]]) -> None:
        """Installs this version and does these (source, target) renames as one step: both
        become visible together, or a killed run's next run completes them."""
        self.renames = list(renames)


class SegmentUpdate:
    """Parts of one segment being written (see CrawlLayout.segment_update). `tmp[part]` is the
    directory to write a part into."""

    def __init__(self, crawl: 'CrawlLayout', segment: str, parts: Sequence[str]):
        self.crawl = crawl
        self.segment = segment
        self.parts = tuple(parts)
        self.tmp: Dict[str, str] = {p: crawl.part_tmp_dir(segment, p) for p in self.parts}
        self.abandoned = False

    def part_files(self, part: str) -> List[str]:
        """The part files written so far into a part's temporary directory."""
        return list_files(_join(self.tmp[part], PART_GLOB))

    def abandon(self) -> None:
        """Publish nothing and remove the segment (generate: a segment that got no URL)."""
        self.abandoned = True

    def publishing(self) -> List[Tuple[str, str]]:
        """The (written, published) directory of each part, in publishing order."""
        return [(self.tmp[part], self.crawl.segment_part(self.segment, part))
                for part in self.parts]

    def _publish(self) -> None:
        for written, final in self.publishing():
            if FileSystems.exists(final):
                raise RuntimeError(f'{final} exists already')
            rename(written, final)

    def _clean(self) -> None:
        for path in self.tmp.values():
            delete(path)


def _children(directory: str) -> List[str]:
    """Immediate children (files and directories) of a directory."""
    if is_local(directory):
        return sorted(os.path.join(directory, n) for n in os.listdir(directory))
    prefix = directory.rstrip('/') + '/'
    names = set()
    for path in list_files(prefix + '*'):
        names.add(prefix + path[len(prefix):].split('/', 1)[0])
    return sorted(names)


# What beamcrawl itself writes into a database version and into a segment's part directory:
# parts and their keys files, notes (`_name`) and hidden working files (`.name`). Anything else
# there, such as Hadoop's `part-r-00000` MapFiles and SequenceFiles, is someone else's data.
_OURS_IN_VERSION = re.compile(r'part-\d{5}\.(avro|keys)|[_.].*')
_OURS_IN_PART = re.compile(r'part-\d{5}\.(avro|warc\.gz)|[_.].*')
# The parts of Nutch's own layout, by which a directory given as CRAWL_DIR is recognised.
_NUTCH_DB_SIGN = re.compile(r'part-([rm]-)?\d{5}')


def _entries(directory: str) -> List[str]:
    """Names in a directory (empty when it is absent)."""
    if not FileSystems.exists(directory):
        return []
    return [os.path.basename(p.rstrip('/')) for p in _children(directory)]


def _foreign_entry(directory: str, ours: 're.Pattern') -> Optional[str]:
    """The path of the first entry of `directory` that beamcrawl does not write, or None."""
    for name in _entries(directory):
        if not ours.fullmatch(name):
            return _join(directory, name)
    return None


class CrawlLayout:
    """Every path of a crawl directory."""

    SEGMENT_PARTS = SEGMENT_PARTS

    def __init__(self, crawl_dir: str):
        self.root = crawl_dir.rstrip('/') if len(crawl_dir) > 1 else crawl_dir
        self.crawldb = DbLayout(_join(self.root, 'crawldb'), 'crawldb')
        self.linkdb = DbLayout(_join(self.root, 'linkdb'), 'linkdb')
        self.segments = _join(self.root, 'segments')
        self.tmp = _join(self.root, '.tmp')
        self.index = _join(self.root, 'index')
        # The site settings this crawl directory was created with (transforms/base/config.py).
        self.site_conf = _join(self.root, SITE_CONF)

    def segment(self, name: str) -> str:
        return _join(self.segments, name)

    def refuse_foreign(self) -> None:
        """Raises InputError, naming what was found, when the crawl directory holds a crawldb,
        linkdb or segment that is not in beamcrawl's layout (a Nutch crawl, another program's
        files), or is not a directory at all. Every command calls it first, so that nothing in
        such data is read as empty or changed (docs/crawl-dir.md, "Data beamcrawl did not
        write")."""
        if is_local(self.root) and os.path.exists(self.root) and not os.path.isdir(self.root):
            raise InputError(f'{self.root}: is a file, not a crawl directory (name a directory; '
                             f'it is created if absent)')
        if not FileSystems.exists(self.root):
            return
        here = _entries(self.root)
        for name, what in (('current', 'a crawldb or linkdb'),
                           ('crawl_generate', 'a segment'), ('crawl_fetch', 'a segment')):
            if name in here and 'crawldb' not in here and 'segments' not in here:
                raise InputError(
                    f'{self.root}: looks like {what} itself ({_join(self.root, name)}), not a '
                    f'crawl directory: beamcrawl commands take the crawl directory that holds '
                    f'crawldb/, linkdb/ and segments/')
        for db in (self.crawldb, self.linkdb):
            for version in (db.current, db.old):
                found = _foreign_entry(version, _OURS_IN_VERSION)
                if found:
                    raise InputError(self._foreign(found, f'the {db.kind}'))
        for segment in self.segment_names():
            for part in _entries(self.segment(segment)):
                if part in SEGMENT_PARTS:
                    found = _foreign_entry(self.segment_part(segment, part), _OURS_IN_PART)
                    if found:
                        raise InputError(self._foreign(found, f'segment {segment}'))

    @staticmethod
    def _foreign(found: str, what: str) -> str:
        name = os.path.basename(found.rstrip('/'))
        kind = ("Nutch's (Hadoop) format" if _NUTCH_DB_SIGN.fullmatch(name) or name == '_SUCCESS'
                else "a layout beamcrawl does not write")
        return (f'{found}: {what} is in {kind}, not beamcrawl\'s; beamcrawl neither reads nor '
                f'changes it: use another crawl directory')

    def segment_part(self, segment: str, part: str) -> str:
        if part not in self.SEGMENT_PARTS:
            raise ValueError(part)
        return _join(self.segment(segment), part)

    def segment_names(self) -> List[str]:
        """Names of the segments (yyyyMMddHHmmss directories), oldest first."""
        if not FileSystems.exists(self.segments):
            return []
        names = (os.path.basename(p.rstrip('/')) for p in _children(self.segments))
        return sorted(n for n in names if len(n) == 14 and n.isdigit())

    def has_part(self, segment: str, part: str) -> bool:
        """Whether a segment's part is complete (it exists only once complete)."""
        return FileSystems.exists(self.segment_part(segment, part))

    def resolve_segment(self, name_or_path: str) -> str:
        """A segment's name from its name or path; the segment must exist."""
        name = os.path.basename(name_or_path.rstrip('/'))
        if not FileSystems.exists(self.segment(name)):
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

    def segments_to_apply(self, db: 'DbLayout', requested: List[str], needed_part: str
                          ) -> Tuple[List[str], List[str]]:
        """(segments to merge into `db`, those of them merged before). Requested segments must
        have `needed_part`; with none requested: every segment that has it and is not applied."""
        applied = db.applied_segments()
        if requested:
            names = [self.resolve_segment(s) for s in requested]
            for name in names:
                if not self.has_part(name, needed_part):
                    raise InputError(f'{self.segment(name)}: has no {needed_part}')
            return names, [n for n in names if n in applied]
        return [n for n in self.segment_names()
                if self.has_part(n, needed_part) and n not in applied], []

    def part_files(self, segment: str, part: str) -> List[str]:
        return list_files(_join(self.segment_part(segment, part),
                                WARC_GLOB if part == WARC else PART_GLOB))

    def part_tmp_dir(self, segment: str, part: str) -> str:
        """Where a part is written before it is published."""
        if part not in self.SEGMENT_PARTS:
            raise ValueError(part)
        return _join(self.segment(segment), f'{_TMP_PREFIX}{part}')

    def fetch_journal(self, segment: str) -> str:
        """Where a fetch of the segment journals its results (fetcher/journal.py)."""
        return _join(self.segment(segment), '.fetch')

    def fetch_times(self, segment: str) -> str:
        """A fetched segment's note of when each politeness queue may be requested again."""
        return _join(self.segment(segment), '_fetch_times.json')

    def segment_lock(self, segment: str, command: str = '') -> Lock:
        """The lock a stage holds while it writes parts of a segment: one writer per segment."""
        return Lock(_join(self.segment(segment), _LOCK_NAME), command,
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

    # -- the index: index/shard-NNNNN/, Tantivy indexes; notes beside them ------------------
    INDEXED = '_indexed_segments'
    SHARDS = '_shards'

    def index_shard(self, number: int) -> str:
        return _join(self.index, f'shard-{number:05d}')

    def index_shards(self) -> List[str]:
        """The shard directories of the index (sorted; empty when there is no index)."""
        if not FileSystems.exists(self.index):
            return []
        return [c for c in _children(self.index)
                if os.path.basename(c.rstrip('/')).startswith('shard-')]

    def index_lock(self, command: str = '') -> Lock:
        return Lock(_join(self.index, _LOCK_NAME), command, 'another update of the index')

    def new_shard_dir(self, number: int) -> str:
        """A fresh directory beside the shards for a shard's new version."""
        return _join(self.index, f'{_TMP_PREFIX}shard-{number:05d}-{uuid.uuid4().hex[:8]}')

    def index_note(self, name: str) -> Optional[str]:
        path = _join(self.index, name)
        if not FileSystems.exists(path):
            return None
        with FileSystems.open(path) as f:
            return f.read().decode('utf-8')

    def install_shards(self, new: Dict[int, str], notes: Dict[str, str]) -> None:
        """Under the index lock: each new shard version replaces its shard (renamed aside, the
        new one renamed into place, the old one removed), then the notes are written. A run
        killed in between leaves every shard whole: old or new, never half."""
        for number, directory in sorted(new.items()):
            final = self.index_shard(number)
            aside = _join(self.index, f'{_TMP_PREFIX}old-shard-{number:05d}-{uuid.uuid4().hex[:8]}')
            if FileSystems.exists(final):
                rename(final, aside)
            rename(directory, final)
            delete(aside)
        for name, text in notes.items():
            with FileSystems.create(_join(self.index, name)) as f:
                f.write(text.encode('utf-8'))

    def recover_index(self) -> None:
        """Under the index lock: a shard whose install was cut between its two renames is put
        back; abandoned new versions are removed."""
        if not FileSystems.exists(self.index):
            return
        for path in _children(self.index):
            name = os.path.basename(path.rstrip('/'))
            if name.startswith(f'{_TMP_PREFIX}old-shard-'):
                number = int(name.split('-')[3])
                if not FileSystems.exists(self.index_shard(number)):
                    rename(path, self.index_shard(number))
                    continue
            if name.startswith(_TMP_PREFIX):
                delete(path)

    def scratch_dir(self, what: str) -> str:
        """A fresh scratch directory for a reader's pipeline output (caller deletes it)."""
        return _join(self.tmp, f'{what}-{int(time.time())}-{uuid.uuid4().hex[:8]}')
