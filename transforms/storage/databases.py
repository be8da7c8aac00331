"""Versioned databases (crawldb, linkdb): a new version is written aside and installed under
the database's lock (docs/crawl-dir.md, "How things change").

A database is updated by writing a complete new version beside `current/`, then, under the lock:
`old/` is removed, `current/` becomes `old/`, the new version becomes `current/`. A process
killed at any point leaves a readable database: before the renames the old `current/` is
untouched; between them `old/` holds the previous version, which readers fall back to and the
next updater moves back into place. An install that publishes other outputs with it (generate's
segments) notes its intent first, and the next updater completes it.
"""

import contextlib
import json
import logging
import os
import time
import uuid
from typing import Iterator, List, Optional, Sequence, Tuple

from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.storage.fs import (PART_GLOB, TMP_PREFIX, children, delete, join,
                                             list_files, read_file, rename, write_file)
from beamcrawl.transforms.storage.locks import LOCK_NAME, Lock

log = logging.getLogger('beamcrawl')

__all__ = ['DbLayout', 'DbUpdate', 'APPLIED', 'PARTITIONS_NOTE', 'HOLD_POINTS']

APPLIED = '_applied_segments'      # inside a db version: segments already merged into it
# A database version's partitioning: part i holds the keys k with crc32(k) mod N == i, each part
# sorted by key (written by inject, updatedb and invertlinks; docs/crawl-dir.md).
PARTITIONS_NOTE = '_partitions'

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


class DbLayout:
    """A versioned database directory: crawldb/ or linkdb/."""

    def __init__(self, path: str, kind: str):
        self.path = path
        self.kind = kind
        self.current = join(path, 'current')
        self.old = join(path, 'old')
        self.lock_path = join(path, LOCK_NAME)
        self.pending = join(path, '.pending-install.json')    # see _install_together

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
            if not list_files(join(new.dir, PART_GLOB)):
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
        return list_files(join(directory, PART_GLOB)) if directory else []

    def new_version_dir(self) -> str:
        """A fresh directory name beside current/ for a version being written."""
        return join(self.path, f'{TMP_PREFIX}{self.kind}-{uuid.uuid4().hex[:12]}')

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
            for path in children(self.path):
                if os.path.basename(path.rstrip('/')).startswith(TMP_PREFIX):
                    delete(path)

    def applied_segments(self) -> List[str]:
        """Names of the segments already applied to the readable version (updatedb for the
        crawldb, invertlinks for the linkdb)."""
        directory = self.readable_dir()
        path = join(directory, APPLIED) if directory else None
        if not path or not FileSystems.exists(path):
            return []
        with FileSystems.open(path) as f:
            return [n for n in f.read().decode('utf-8').split() if n]

    def read_note(self, name: str) -> Optional[str]:
        """A small text note stored in the readable version (e.g. its partitioning)."""
        directory = self.readable_dir()
        path = join(directory, name) if directory else None
        if not path or not FileSystems.exists(path):
            return None
        with FileSystems.open(path) as f:
            return f.read().decode('utf-8').strip()

    def install(self, new_dir: str, keep_backup: bool) -> None:
        """Under the lock: new_dir becomes current/, the previous current/ becomes old/.
        A version written without its own applied-segments list inherits the current one."""
        if not FileSystems.exists(join(new_dir, APPLIED)) and self.applied_segments():
            DbUpdate(new_dir).write_applied(self.applied_segments())
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
        with FileSystems.create(join(self.dir, name)) as f:
            f.write(text.encode('utf-8'))

    def publish_with(self, renames: Sequence[Tuple[str, str]]) -> None:
        """Installs this version and does these (source, target) renames as one step: both
        become visible together, or a killed run's next run completes them."""
        self.renames = list(renames)
