"""Versioned databases (crawldb, linkdb): a new version is written aside and installed under
the database's lock (docs/crawl-dir.md, "How things change").

A database is updated by writing a complete new version beside `current/`, then, under the lock:
`old/` is removed, `current/` becomes `old/`, the new version becomes `current/`. A process
killed at any point leaves a readable database: before the renames the old `current/` is
untouched; between them `old/` holds the previous version, which readers fall back to and the
next updater moves back into place. On an object store, where nothing renames, the version is
written in place and one conditional replace of the small object `CURRENT`, which names the
current version, installs it; versions it does not name are removed by the next updater. An
install that publishes other outputs with it (generate's segments) notes its intent first, and
the next updater completes it.
"""

import contextlib
import json
import logging
import os
import time
import uuid
from typing import Iterator, List, Optional, Sequence, Tuple

from beamcrawl.transforms.base.errors import InputError, LockedError
from beamcrawl.transforms.storage.fs import (PART_GLOB, TMP_PREFIX, basename, children, delete,
                                             exists, join, list_files, publish_dir, read_file,
                                             rename, renames, store, write_file)
from beamcrawl.transforms.storage.locks import LOCK_NAME, Lock

log = logging.getLogger('beamcrawl')

__all__ = ['DbLayout', 'DbUpdate', 'APPLIED', 'PARTITIONS_NOTE', 'HOLD_POINTS', 'POINTER',
           'VERSION_PREFIX']

APPLIED = '_applied_segments'      # inside a db version: segments already merged into it
# A database version's partitioning: part i holds the keys k with crc32(k) mod N == i, each part
# sorted by key (written by inject, updatedb and invertlinks; docs/crawl-dir.md).
PARTITIONS_NOTE = '_partitions'
# On an object store: the object naming the current version, and the versions' directory names.
POINTER = 'CURRENT'
VERSION_PREFIX = 'version-'

# A test seam: a kill test names one of the points below in BEAMCRAWL_HOLD_AT, and the command
# creates the file BEAMCRAWL_HOLD_FILE and waits there to be killed, so that the test kills at
# exactly that point, whatever the machine's speed: an install noted (install.pending), its
# other outputs published (install.renamed), a version about to be installed (install.begin),
# the previous version moved aside or, on an object store, CURRENT replaced (install.swapped).
HOLD_POINTS = ('install.pending', 'install.renamed', 'install.begin', 'install.swapped')


def _hold(point: str) -> None:
    if os.environ.get('BEAMCRAWL_HOLD_AT') == point:
        with open(os.environ['BEAMCRAWL_HOLD_FILE'], 'w', encoding='ascii') as f:
            f.write(point)
        while True:
            time.sleep(3600)


class DbLayout:
    """A versioned database directory: crawldb/ or linkdb/.

    Where directories rename atomically (local, HDFS) the readable version is `current/` (or
    `old/` while an install is cut between its two renames). On an object store, where nothing
    renames, each version is written in place as `version-<id>/` and the small object
    `CURRENT` names the current version (and the one before it, kept with keep_backup): an
    install is one conditional replace of `CURRENT` (docs/crawl-dir.md, "Stores")."""

    def __init__(self, path: str, kind: str):
        self.path = path
        self.kind = kind
        self.current = join(path, 'current')
        self.old = join(path, 'old')
        self.pointer = join(path, POINTER)
        self.lock_path = join(path, LOCK_NAME)
        self.pending = join(path, '.pending-install.json')    # see _install_together
        self._locked_version: Optional[str] = None    # CURRENT's, read under the lock

    @property
    def renames(self) -> bool:
        """Whether versions are installed by renames (else by the CURRENT object)."""
        return renames(self.path)

    def lock(self, command: str = '') -> Lock:
        return Lock(self.lock_path, command, f'another update of the {self.kind}')

    @contextlib.contextmanager
    def update(self, *, keep_backup: bool, command: str, parts_in: str = ''
               ) -> Iterator['DbUpdate']:
        """Holds the lock, recovers a cut-off install, and yields a DbUpdate whose `dir` the new
        version is written into. When the block ends without error the version is installed
        (unless discarded); otherwise it is removed and the current version stays. `parts_in`:
        the directory of the version that must hold part files (the webgraphdb's nodes/)."""
        with self.lock(command):
            self.recover()
            new = DbUpdate(self.new_version_dir())
            try:
                yield new
            except BaseException:
                delete(new.dir)
                raise
            finally:
                delete(new.scratch)
            if new.discarded:
                delete(new.dir)
                return
            if not list_files(join(new.dir, parts_in, PART_GLOB) if parts_in
                              else join(new.dir, PART_GLOB)):
                delete(new.dir)
                raise RuntimeError(f'{new.dir}: the pipeline wrote no part file; not installed')
            if new.renames:
                self._install_together(new.dir, new.renames, keep_backup)
            else:
                self.install(new.dir, keep_backup=keep_backup)
            log.info('installed %s', self.readable_dir())

    # -- the object store's pointer -----------------------------------------------------------

    def _pointer(self) -> Tuple[dict, Optional[str]]:
        """(what CURRENT says, its version for a conditional replace); ({}, None) without one.
        Read each time: another command may have installed a version since."""
        found = store(self.pointer).read(self.pointer)
        if found is None:
            return {}, None
        try:
            return json.loads(found[0].decode('utf-8')), found[1]
        except ValueError as e:
            raise InputError(f'{self.pointer}: not a version pointer ({e})') from None

    def _set_pointer(self, content: dict) -> None:
        """Replaces CURRENT, only if it is still what this run read when it took the lock
        (recover); else a run that took the lock over from this one changed it, and nothing is
        installed."""
        data = json.dumps(content, sort_keys=True).encode('utf-8')
        target = store(self.pointer)
        version = self._locked_version
        done = (target.create_exclusive(self.pointer, data) if version is None
                else target.replace_if(self.pointer, data, version))
        if not done:
            raise LockedError(f'{self.pointer}: changed by another run while this one held the '
                              f'lock (its lease ran out?); this run\'s {self.kind} version is not '
                              f'installed')
        self._locked_version = self._pointer()[1]

    def version_dirs(self) -> List[str]:
        """The installed versions: current (or old) and the backup."""
        if self.renames:
            return [self.current, self.old]
        pointed, _ = self._pointer()
        return [join(self.path, pointed[k]) for k in ('current', 'old') if pointed.get(k)]

    # -- reading ------------------------------------------------------------------------------

    def readable_dir(self) -> Optional[str]:
        """The version to read: current/, or old/ if an install was cut off; None if empty."""
        if not self.renames:
            pointed, _ = self._pointer()
            return join(self.path, pointed['current']) if pointed.get('current') else None
        for candidate in (self.current, self.old):
            if exists(candidate):
                return candidate
        return None

    def part_files(self, under: str = '') -> List[str]:
        """The part files of the readable version (empty list for a new database); `under`: of
        that directory of the version (the webgraphdb's outlinks/, inlinks/, nodes/)."""
        directory = self.readable_dir()
        if not directory:
            return []
        return list_files(join(directory, under, PART_GLOB) if under
                          else join(directory, PART_GLOB))

    def new_version_dir(self) -> str:
        """A fresh directory name beside the versions for a version being written."""
        if self.renames:
            return join(self.path, f'{TMP_PREFIX}{self.kind}-{uuid.uuid4().hex[:12]}')
        return join(self.path, f'{VERSION_PREFIX}{uuid.uuid4().hex[:12]}')

    def applied_segments(self) -> List[str]:
        """Names of the segments already applied to the readable version (updatedb for the
        crawldb, invertlinks for the linkdb)."""
        text = self.read_note(APPLIED)
        return [n for n in text.split() if n] if text else []

    def read_note(self, name: str) -> Optional[str]:
        """A small text note stored in the readable version (e.g. its partitioning)."""
        directory = self.readable_dir()
        data = read_file(join(directory, name)) if directory else None
        return data.decode('utf-8').strip() if data is not None else None

    # -- installing ---------------------------------------------------------------------------

    def _install_together(self, new_dir: str, renames_: Sequence[Tuple[str, str]],
                          keep_backup: bool) -> None:
        """Under the lock: installs new_dir and publishes `renames_` ((written, final)
        directories: other outputs of the same step, such as generate's segments;
        fs.publish_dir) as one step. The intent is written first (`.pending-install.json`); a
        run killed after it is completed by the next one (recover), so the outputs become
        visible together or not at all."""
        note = {'version': new_dir, 'renames': [list(r) for r in renames_],
                'keep_backup': keep_backup}
        write_file(self.pending, json.dumps(note).encode('utf-8'), replace=True)
        _hold('install.pending')
        self._roll_forward(note)

    def _roll_forward(self, note: dict) -> None:
        for src, dst in note['renames']:
            publish_dir(src, dst)
            _hold('install.renamed')
        if self.renames:
            if exists(note['version']):
                self.install(note['version'], keep_backup=note['keep_backup'])
        elif self._pointer()[0].get('current') != basename(note['version']) and \
                exists(note['version']):
            self.install(note['version'], keep_backup=note['keep_backup'])
        delete(self.pending)

    def recover(self) -> None:
        """Under the lock: finish an install that was cut off and remove abandoned versions."""
        if not self.renames:
            self._locked_version = self._pointer()[1]
        pending = read_file(self.pending)
        if pending is not None:
            log.warning('%s: completing the install that a killed run began', self.path)
            self._roll_forward(json.loads(pending))
        if self.renames:
            if not exists(self.current) and exists(self.old):
                rename(self.old, self.current)
            abandoned = lambda name: name.startswith(TMP_PREFIX)  # noqa: E731
        else:
            kept = {basename(d) for d in self.version_dirs()}
            abandoned = lambda name: (name.startswith((TMP_PREFIX, VERSION_PREFIX))  # noqa: E731
                                      and name not in kept)
        for path in children(self.path):
            if abandoned(basename(path)):
                delete(path)

    def install(self, new_dir: str, keep_backup: bool) -> None:
        """Under the lock: new_dir becomes the current version, the previous current one the
        backup (kept with keep_backup). A version written without its own applied-segments list
        inherits the current one."""
        if not exists(join(new_dir, APPLIED)) and self.applied_segments():
            DbUpdate(new_dir).write_applied(self.applied_segments())
        _hold('install.begin')
        if not self.renames:
            pointed, _ = self._pointer()
            previous = [pointed.get('current'), pointed.get('old')]
            current = {'current': basename(new_dir)}
            if keep_backup and previous[0]:
                current['old'] = previous[0]
            self._set_pointer(current)
            _hold('install.swapped')
            for name in previous:
                if name and name not in current.values():
                    delete(join(self.path, name))
            return
        if exists(self.current):
            delete(self.old)
            rename(self.current, self.old)
        _hold('install.swapped')
        rename(new_dir, self.current)
        if not keep_backup:
            delete(self.old)


class DbUpdate:
    """A database version being written (see DbLayout.update)."""

    def __init__(self, directory: str):
        self.dir = directory
        # Working files of the update (engine MapReduce's spills): beside the version, removed
        # when the update ends; a cut-off run's are removed by the next (recover()).
        self.scratch = directory + '-scratch'
        self.discarded = False
        self.renames: List[Tuple[str, str]] = []

    def discard(self) -> None:
        """Do not install this version (nothing changed)."""
        self.discarded = True

    def write_applied(self, names: List[str]) -> None:
        """Records the segments applied to this version (installed with it)."""
        self.write_note(APPLIED, ''.join(f'{n}\n' for n in sorted(set(names))))

    def write_note(self, name: str, text: str) -> None:
        """A small text note stored in this version (e.g. its partitioning: engine/partitions.py);
        DbLayout.read_note reads it back."""
        write_file(join(self.dir, name), text.encode('utf-8'), replace=True)

    def publish_with(self, renames_: Sequence[Tuple[str, str]]) -> None:
        """Installs this version and publishes these (written, final) directories
        (fs.publish_dir) as one step: both become visible together, or a killed run's next run
        completes them."""
        self.renames = list(renames_)
