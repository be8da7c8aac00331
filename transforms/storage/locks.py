"""Locks: a `.locked` file held while one process changes what it guards (docs/crawl-dir.md,
"Stale locks"). Locks are taken in the driver program, never in a DoFn."""

import datetime
import getpass
import logging
import os
import socket
import threading
import time
import uuid
from typing import Optional

from beamcrawl.transforms.base.errors import LockedError
from beamcrawl.transforms.storage.fs import delete, is_local, mkdirs
from beamcrawl.transforms.storage.stores import LocalStore, store_for

log = logging.getLogger('beamcrawl')

__all__ = ['Lock', 'LOCK_NAME', 'LEASE_S', 'process_alive']

LOCK_NAME = '.locked'
# How long a lock on a shared store (HDFS, S3) holds without renewal; its holder renews it every
# third of that. A lock whose holder is gone is taken over once it has run out.
LEASE_S = 300


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

    Used as a context manager. It is created exclusively, with its holder already in it
    (storage/stores.py: a hard link on a local disk, CREATE without overwrite on HDFS, a PUT with
    If-None-Match on an object store). A second process finds it and gets a LockedError that
    names it and its holder. A lock is taken over when its holder was a process of this host that
    no longer runs (a killed run), or, on a store other processes share (HDFS, S3), when its
    lease has run out: the holder renews it every LEASE_S / 3 seconds while it holds the lock, so
    only a lock whose holder is gone runs out. `what` names the guarded work in the messages.
    """

    def __init__(self, path: str, command: str = '', what: str = 'another update'):
        self.path = path
        self.command = command
        self.what = what
        self._held = False
        self._token = uuid.uuid4().hex
        self._version: Optional[str] = None
        self._renewer: Optional[threading.Thread] = None
        self._stop = threading.Event()

    def _describe(self) -> bytes:
        expires = time.time() + LEASE_S
        return (f'pid={os.getpid()} host={socket.gethostname()} user={getpass.getuser()} '
                f'since={datetime.datetime.now(datetime.timezone.utc).isoformat()} '
                f'command={self.command} expires={expires:.0f} token={self._token}\n'
                ).encode('utf-8')

    def acquire(self) -> None:
        store = store_for(self.path)
        if is_local(self.path):
            mkdirs(os.path.dirname(self.path))
        if not store.create_exclusive(self.path, self._describe()) and \
                not self._take_over(store):
            raise self._locked()
        self._held = True
        if not isinstance(store, LocalStore):
            found = store.read(self.path)
            self._version = found[1] if found else None
            self._stop.clear()
            self._renewer = threading.Thread(target=self._renew, args=(store,), daemon=True,
                                             name='lock-lease')
            self._renewer.start()

    def _take_over(self, store) -> bool:
        """Takes the lock over from a dead holder (see the class); True when it is ours now."""
        found = store.read(self.path)
        if found is None:                    # released meanwhile: a plain create again
            return store.create_exclusive(self.path, self._describe())
        data, version = found
        fields = dict(part.split('=', 1) for part in data[:500].decode('utf-8', 'replace').split()
                      if '=' in part)
        try:
            pid = int(fields.get('pid', ''))
        except ValueError:
            pid = None
        dead = (fields.get('host') == socket.gethostname() and pid is not None
                and not process_alive(pid))
        try:
            expired = not isinstance(store, LocalStore) and float(fields['expires']) < time.time()
        except (KeyError, ValueError):
            expired = False
        if not (dead or expired):
            return False
        if not store.replace_if(self.path, self._describe(), version):
            return False                     # of two takers, one wins
        log.warning('%s: taking over the lock left by a run that no longer runs (pid %s on %s, '
                    '%s)', self.path, fields.get('pid', '?'), fields.get('host', '?'),
                    fields.get('command', ''))
        return True

    def _renew(self, store) -> None:
        """Renews the lease while the lock is held (shared stores)."""
        while not self._stop.wait(LEASE_S / 3):
            try:
                found = store.read(self.path)
                if found is None or self._token.encode() not in found[0]:
                    log.warning('%s: the lock is no longer held by this run', self.path)
                    return
                store.replace_if(self.path, self._describe(), found[1])
            except Exception as e:  # pylint: disable=broad-except  (tried again next time)
                log.warning('%s: renewing the lock failed: %s', self.path, e)

    def _locked(self) -> LockedError:
        holder = ''
        try:
            found = store_for(self.path).read(self.path)
            holder = found[0][:300].decode('utf-8', 'replace').strip() if found else ''
        except OSError:                 # Beam's BeamIOError too
            pass
        holder = ' '.join(p for p in holder.split() if not p.startswith(('token=', 'expires=')))
        return LockedError(
            f'lock {self.path} is held: {self.what} is running'
            f'{" (" + holder + ")" if holder else ""}; if it is not, a killed run left the lock '
            f'behind: delete {self.path} and run again')

    def release(self) -> None:
        if self._held:
            self._stop.set()
            if self._renewer is not None:
                self._renewer.join()
                self._renewer = None
            delete(self.path)
            self._held = False

    def __enter__(self) -> 'Lock':
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
