"""Locks: a `.locked` file held while one process changes what it guards (docs/crawl-dir.md,
"Stale locks"). Locks are taken in the driver program, never in a DoFn."""

import datetime
import getpass
import logging
import os
import socket
import uuid

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.base.errors import LockedError
from beamcrawl.transforms.storage.fs import delete, is_local, mkdirs

log = logging.getLogger('beamcrawl')

__all__ = ['Lock', 'LOCK_NAME', 'process_alive']

LOCK_NAME = '.locked'


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
