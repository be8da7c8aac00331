"""What the local services beamcrawl starts itself have in common (a Flink cluster, an HDFS, an
S3-compatible store: runners/localflink.py, ...): a home folder found from any directory, ports
checked before anything starts, processes stopped by their recorded pids.

A service's home: `BEAMCRAWL_<NAME>_HOME`; else the home its last `start` used, recorded per
user (so that `status` and `stop` find a running service from any directory); else `.<name>`
beside the source tree (or the user's cache folder for an installed copy).
"""

import contextlib
import errno
import fcntl
import hashlib
import ipaddress
import logging
import os
import signal
import shutil
import socket
import subprocess
import time
from typing import Iterator

from beamcrawl.transforms.base.config import source_tree
from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.storage.locks import process_alive

__all__ = ['default_home', 'remember_home', 'host_port', 'port_open', 'port_taken',
           'connect_host', 'terminate', 'is_loopback', 'EVERY_INTERFACE', 'read_text',
           'building']

log = logging.getLogger('beamcrawl')

EVERY_INTERFACE = ('0.0.0.0', '::', '*')


def default_home(name: str) -> str:
    """The home of service `name` (see the module's docstring). Never relative to the working
    directory: `status` run from elsewhere said "stopped" of a running cluster."""
    variable = f'BEAMCRAWL_{name.upper()}_HOME'
    if os.environ.get(variable):
        return os.path.abspath(os.environ[variable])
    recorded = read_text(_state_file(name))
    if recorded and os.path.isdir(recorded):
        return recorded
    return _source_home(name)


def remember_home(name: str, home: str) -> None:
    """Records `home` as the one the next `default_home(name)` finds (best effort: a read-only
    home directory only loses the convenience)."""
    path = _state_file(name)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + '.partial', 'w', encoding='utf-8') as f:
            f.write(os.path.abspath(home) + '\n')
        os.replace(path + '.partial', path)
    except OSError as e:
        log.debug('%s: cannot record the home in %s: %s', name, path, e)


def _state_file(name: str) -> str:
    """The per-user file that names the home of the last `start` of service `name`."""
    state = os.environ.get('XDG_STATE_HOME') or os.path.join(os.path.expanduser('~'), '.local',
                                                              'state')
    return os.path.join(state, 'beamcrawl', f'{name}-home')


def _source_home(name: str) -> str:
    """.<name> beside the source tree of a checkout; the user's cache folder for an installed
    copy (site-packages is no place for hundreds of MB)."""
    tree = source_tree()
    if tree is not None:
        return os.path.join(tree, f'.{name}')
    cache = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return os.path.join(cache, 'beamcrawl', name)


def read_text(path: str):
    """A small text file's content, stripped; None when it cannot be read."""
    try:
        with open(path, encoding='ascii') as f:
            return f.read().strip()
    except OSError:
        return None


def host_port(host: str, port: int) -> str:
    return f'[{host}]:{port}' if ':' in host else f'{host}:{port}'


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def port_taken(bind: str, port: int) -> bool:
    """Whether a program answers on the port, or it cannot be bound on `bind` (a listener on
    another address of this host holds it)."""
    if port_open(connect_host(bind), port):
        return True
    try:
        addresses = socket.getaddrinfo(None if bind in EVERY_INTERFACE else bind, port,
                                       type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError:
        raise UserError(f'--bind {bind}: not an address of this machine') from None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # TIME_WAIT does not count
            try:
                s.bind(address)
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    return True
                raise UserError(f'--bind {bind}: cannot listen there ({e.strerror})') from None
    return False


def connect_host(bind: str) -> str:
    """Where clients on this machine reach a process listening on `bind`."""
    return 'localhost' if bind in EVERY_INTERFACE else bind


def terminate(pid: int, grace_s: float = 20.0) -> None:
    """SIGTERM, then SIGKILL after a grace period; to the whole process group when the process
    leads one of its own (the job server, the worker pool and its SDK workers)."""
    def send(sig):
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except ProcessLookupError:
            pass
    send(signal.SIGTERM)
    deadline = time.time() + grace_s
    while process_alive(pid) and time.time() < deadline:
        time.sleep(0.2)
    if process_alive(pid):
        send(signal.SIGKILL)
        while process_alive(pid):
            time.sleep(0.1)


def is_loopback(host: str) -> bool:
    try:
        addresses = {a[4][0] for a in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return all(ipaddress.ip_address(a.split('%')[0]).is_loopback for a in addresses)


@contextlib.contextmanager
def building(folder: str) -> Iterator[None]:
    """Held while a service's build in `folder` is checked or made: a second process that
    prepares the same build (two commands, two test workers) waits, then finds it built."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, '.build.lock'), 'a', encoding='ascii') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def folder_digest(root: str) -> str:
    """A digest of a folder's files (names and contents): a build made from another version of
    a bundled project (a Maven project in conf/) is made again."""
    digest = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, root).encode('utf-8') + b'\0')
            with open(path, 'rb') as f:
                digest.update(f.read() + b'\0')
    return digest.hexdigest()


def need_java(minimum: int, what: str) -> int:
    """The major version of the `java` on PATH; UserError naming `what` needs it when there is
    none or it is older than `minimum`."""
    java = shutil.which('java')
    if java is None:
        raise UserError(f'Java {minimum} or newer is needed to run {what}: `java` is not on PATH '
                        f'(Debian: apt-get install openjdk-17-jre-headless)')
    proc = subprocess.run([java, '-version'], capture_output=True, text=True)
    text = proc.stderr + proc.stdout
    try:
        quoted = text.split('"')[1]
        major = int(quoted.split('.')[1] if quoted.startswith('1.') else quoted.split('.')[0])
    except (IndexError, ValueError):
        raise UserError(f'cannot tell the Java version from `java -version`: {text[:80]!r}') \
            from None
    if major < minimum:
        raise UserError(f'{what} needs Java {minimum} or newer; `java` is Java {major}')
    return major
