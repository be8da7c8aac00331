"""Worker processes of the local runner in parallel mode (see runtime.make_pipeline).

Beam's own `multi_processing` mode starts `python -m apache_beam.runners.worker.sdk_worker_main`
for each worker: a new interpreter that imports Beam and then beamcrawl's transforms (0.7 s
before the first bundle, on every large stage). beamcrawl starts its workers differently:

* `ForkServer`: just before a pipeline runs, the command forks a small server process. It is a
  copy of the command with everything imported (and no thread, no gRPC channel yet). The runner
  starts `python -m beamcrawl.transforms.runners.localworker --attach SOCKET` for each worker:
  a tiny client that hands its environment (the runner's control address) to the server, which
  forks a worker from itself at once, and then waits for that worker to end, with its exit code.
  When the client is killed (the runner stopping), the worker stops too; when the command ends,
  the server does.
* When the command has threads running (forking would copy their locks in whatever state they
  are), the runner starts `python -m beamcrawl.transforms.runners.localworker` instead: a new
  interpreter, as Beam's mode does.

Either way the worker runs Beam's SDK harness with these settings:
* SIGINT is ignored: Ctrl-C reaches the whole process group, and the driver (the beamcrawl
  command) is the one that stops the run and reports it; the workers end with it.
* Logging as the command line's, on the same stderr, warnings only (Beam's harness logs every
  start and stop at INFO). The driver drops the copies Beam also sends it ("Worker: ...").
* The harness prints the traceback of every failed bundle on stderr; the same text goes to the
  driver, which reports it once (one line for a user's error), so it is not printed here.
"""

import json
import logging
import os
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import threading
from typing import Optional

__all__ = ['ForkServer', 'serve_forks', 'worker_command']


class _QuietStderr:
    """stderr without the tracebacks the harness prints (a whole traceback is one write, then a
    newline)."""

    def __init__(self, stream):
        self.stream = stream
        self._dropped = False

    def write(self, text):
        dropped, self._dropped = self._dropped, False
        if text.startswith('Traceback (most recent call last):'):
            self._dropped = True
            return len(text)
        if dropped and text == '\n':
            return len(text)
        return self.stream.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _prepare() -> None:
    """The worker's settings (module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not isinstance(sys.stderr, _QuietStderr):
        sys.stderr = _QuietStderr(sys.stderr)
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.WARNING)


def _harness() -> int:
    """Runs Beam's SDK harness in this process (its environment names the runner); the exit
    code."""
    from apache_beam.runners.worker import sdk_worker_main

    from beamcrawl.transforms.runners.dofnspecs import remember_dofn_specs
    from beamcrawl.transforms.runners.sampler import prompt_state_sampler
    prompt_state_sampler()
    remember_dofn_specs()
    try:
        sdk_worker_main.main([])
        return 0
    except BaseException:  # pylint: disable=broad-except  (the driver reports the error)
        return 1


def _leave(code: int) -> None:
    """Leaves without the interpreter's teardown, which frees every object one by one (0.3 s
    after a large stage, which the command would wait for)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def worker_command(server: Optional['ForkServer']) -> str:
    """The shell command the runner starts per worker."""
    import shlex
    command = f'{shlex.quote(sys.executable)} -m beamcrawl.transforms.runners.localworker'
    return command + (f' --attach {shlex.quote(server.path)}' if server else '')


class ForkServer:
    """A server forked from the command; `close()` ends it (and its workers)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix='beamcrawl-workers-')
        self.path = os.path.join(self.dir, 'socket')
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        listener.listen(64)
        alive_r, alive_w = os.pipe()
        pid = os.fork()
        if pid == 0:                                     # the server
            try:
                os.close(alive_w)
                serve_forks(listener, alive_r, _worker)
            finally:
                os._exit(0)
        os.close(alive_r)
        listener.close()
        self.pid, self._alive = pid, alive_w

    @staticmethod
    def usable() -> bool:
        """Forking is safe only with no other thread running."""
        return hasattr(os, 'fork') and threading.active_count() == 1

    def close(self) -> None:
        if self._alive is None:
            return
        os.close(self._alive)                           # the server sees EOF and ends
        self._alive = None
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def serve_forks(listener: socket.socket, alive_fd: int, child) -> None:
    """A fork server's loop: forks a process per connection to `listener`, which runs
    `child(conn)` (and never returns), until the pipe `alive_fd` reaches its end (the process
    that forked the server has closed it, or ended); then kills any child left. The children
    are reaped as they end. Also the loop of the Flink worker pool's forker (workerpool.py)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    workers = set()
    with selectors.DefaultSelector() as selector:
        selector.register(listener, selectors.EVENT_READ)
        selector.register(alive_fd, selectors.EVENT_READ)
        while True:
            events = selector.select(timeout=1.0)
            for pid in list(workers):                    # reap ended workers
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        workers.discard(pid)
                except ChildProcessError:
                    workers.discard(pid)
            if any(key.fd == alive_fd for key, _ in events):
                break                                    # the forking process has ended
            if not events:
                continue
            conn, _ = listener.accept()
            pid = os.fork()
            if pid == 0:                                 # a worker
                selector.close()
                listener.close()
                os.close(alive_fd)
                child(conn)
            conn.close()
            workers.add(pid)
    for pid in workers:                                  # a worker left behind: stop it
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _worker(conn: socket.socket) -> None:
    """A forked worker: takes the runner's environment from its client, runs the harness; its
    exit code goes back to the client. Ends when the client goes away."""
    data = b''
    while not data.endswith(b'\n'):
        chunk = conn.recv(65536)
        if not chunk:
            os._exit(1)
        data += chunk
    os.environ.update(json.loads(data))

    def watch():
        try:
            conn.recv(1)                                 # returns when the client is gone
        finally:
            os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
    _prepare()
    code = _harness()
    try:
        conn.sendall(bytes([code]))
    except OSError:
        pass
    _leave(code)


def _attach(path: str) -> None:
    """The client the runner starts: hands this process's environment to the fork server and
    mirrors the worker's exit code."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    conn.sendall(json.dumps(dict(os.environ)).encode('utf-8') + b'\n')
    code = conn.recv(1)
    os._exit(code[0] if code else 1)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == '--attach':
        _attach(sys.argv[2])
    from beamcrawl.transforms.runners.logs import setup_logging
    setup_logging()
    _prepare()
    _leave(_harness())


if __name__ == '__main__':
    main()
