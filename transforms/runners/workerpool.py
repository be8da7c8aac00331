"""A Beam worker pool for EXTERNAL environments, listening on loopback only by default.

`python -m beamcrawl.transforms.runners.workerpool PORT [HOST [BOOT]] [--fork]` is Beam's
worker_pool_main with three changes. Beam's binds every interface ([::]), and anyone who can
reach a worker pool can make it run code: this one listens on HOST (default localhost). Beam's
starts each worker without the pipeline's options (a worker's FileSystems then reach no HDFS or
S3): this one starts each by the executable BOOT (runners/sdkboot.py boot_script), which asks
the runner for them; without BOOT, by one it writes into a temporary folder of its own (removed
when it stops), running this Python. And Beam's starts every worker as a new interpreter, which
imports Beam's SDK harness and then beamcrawl's transforms again (about 1 s of CPU per worker,
every job): with `--fork` this one forks each worker from a process of its own that has them
imported already and runs what BOOT would run, runners/sdkboot.py in this Python (`_Forker`;
docs/performance.md "Flink's fixed cost"). `beamcrawl flink start` passes it: its BOOT runs
sdkboot with the pool's Python. A BOOT that runs anything else must be started without it.
"""

import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from typing import Callable, List, Optional

import grpc
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc
from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer
from apache_beam.utils import thread_pool_executor

from beamcrawl.transforms.runners.localworker import serve_forks
from beamcrawl.transforms.runners.sdkboot import boot_script

# What a worker imports anyway, imported once by the process the workers are forked from: Beam's
# SDK harness (most of a new worker's start) and the modules of beamcrawl's batch stages.
_WARM_MODULES = ('apache_beam.runners.worker.sdk_worker_main',
                 'beamcrawl.transforms.runners.sdkboot', 'beamcrawl.transforms.inject',
                 'beamcrawl.transforms.generate', 'beamcrawl.transforms.updatedb',
                 'beamcrawl.transforms.invertlinks')


class _Forker:
    """A process forked from the pool before the pool serves (so with no thread and no gRPC
    channel or server), with _WARM_MODULES imported: for each connection to its socket it forks
    a worker, which reads its arguments (BOOT's, as JSON) from the connection, sends back its
    pid, and runs sdkboot.main with them. A worker ends when its connection closes (the pool
    stopping it, or the pool gone); the forker when the pool is gone."""

    def __init__(self, run: Optional[Callable[[List[str]], int]] = None):
        """`run(argv)` is what a worker runs (default: sdkboot.main), its exit code."""
        for name in _WARM_MODULES:
            importlib.import_module(name)
        self.dir = tempfile.mkdtemp(prefix='beamcrawl-pool-fork-')
        self.path = os.path.join(self.dir, 'socket')
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        listener.listen(64)
        alive_r, alive_w = os.pipe()
        pid = os.fork()
        if pid == 0:                                     # the forker
            try:
                os.close(alive_w)
                _serve(listener, alive_r, run)
            finally:
                os._exit(0)
        os.close(alive_r)
        listener.close()
        self.pid, self._alive = pid, alive_w

    def start(self, argv: List[str]) -> '_ForkedWorker':
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(self.path)
        conn.sendall(json.dumps(argv).encode('utf-8') + b'\n')
        reply = b''
        while not reply.endswith(b'\n'):
            chunk = conn.recv(64)
            if not chunk:
                conn.close()
                raise RuntimeError('the worker pool\'s forker did not start a worker')
            reply += chunk
        return _ForkedWorker(int(reply), conn)

    def close(self) -> None:
        os.close(self._alive)                           # the forker sees EOF and ends
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


class _ForkedWorker:
    """A forked worker as the pool handles a worker process (Popen's terminate, kill, wait)."""

    def __init__(self, pid: int, conn: socket.socket):
        self.pid, self._conn = pid, conn
        self.returncode = None

    def _signal(self, sig) -> None:
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def wait(self, timeout: Optional[float] = None) -> int:
        """Waits until the worker has ended (its end of the connection closed)."""
        self._conn.settimeout(timeout)
        try:
            while self._conn.recv(64):
                pass
        except socket.timeout:
            raise subprocess.TimeoutExpired(f'worker {self.pid}', timeout) from None
        except OSError:
            pass
        self._conn.close()
        self.returncode = 0
        return 0


def _serve(listener: socket.socket, alive_fd: int, run) -> None:
    """The forker: forks a worker per connection until the pool closes its pipe."""
    import gc
    gc.freeze()             # what the workers share: not walked by their collections
    serve_forks(listener, alive_fd, lambda conn: _worker(conn, run))


def _worker(conn: socket.socket, run) -> None:
    """A forked worker: its arguments from the connection, then the SDK harness until the
    runner stops it or the connection closes."""
    code = 1
    try:
        data = b''
        while not data.endswith(b'\n'):
            chunk = conn.recv(65536)
            if not chunk:
                os._exit(1)
            data += chunk
        argv = json.loads(data)
        conn.sendall(f'{os.getpid()}\n'.encode('ascii'))

        def watch():
            try:
                conn.recv(1)                             # returns when the pool lets go
            finally:
                os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
        if run is None:
            from beamcrawl.transforms.runners import sdkboot
            run = sdkboot.main
        code = run(argv)
    except BaseException:  # pylint: disable=broad-except  (the harness logged it)
        import traceback
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class _Pool(BeamFnExternalWorkerPoolServicer):
    """Beam's pool servicer, starting workers through a _Forker."""

    def __init__(self, forker: _Forker, boot: str):
        super().__init__(use_process=True, container_executable=boot)
        self._forker = forker

    def StartWorker(self, start_worker_request, unused_context):
        request = start_worker_request
        argv = [f'--id={request.worker_id}',
                f'--logging_endpoint={request.logging_endpoint.url}',
                f'--artifact_endpoint={request.artifact_endpoint.url}',
                f'--provision_endpoint={request.provision_endpoint.url}',
                f'--control_endpoint={request.control_endpoint.url}']
        try:
            self._worker_processes[request.worker_id] = self._forker.start(argv)
            return beam_fn_api_pb2.StartWorkerResponse()
        except Exception:  # pylint: disable=broad-except  (told to the runner)
            import traceback
            return beam_fn_api_pb2.StartWorkerResponse(error=traceback.format_exc())


def serve(port: int, host: str = 'localhost', boot: str = '', fork: bool = False) -> None:
    forker = None
    if fork and hasattr(os, 'fork') and threading.active_count() == 1:
        forker = _Forker()          # before any gRPC server of this process (and no thread)
    server = grpc.server(thread_pool_executor.shared_unbounded_instance(),
                         options=[('grpc.http2.max_pings_without_data', 0),
                                  ('grpc.http2.max_ping_strikes', 0)])
    address = f'[{host}]:{port}' if ':' in host else f'{host}:{port}'
    if server.add_insecure_port(address) != port:
        sys.exit(f'worker pool: cannot listen on {address}')
    work = None
    if not boot:
        work = tempfile.mkdtemp(prefix='beamcrawl-pool-')
        boot = boot_script(os.path.join(work, 'sdk-worker'))
    pool = (_Pool(forker, boot) if forker is not None else
            BeamFnExternalWorkerPoolServicer(use_process=True, container_executable=boot))
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(pool, server)
    server.start()
    print(f'worker pool listening on {address}'
          + (' (workers forked from a warm process)' if forker is not None else ''), flush=True)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    server.stop(0)
    for worker in list(pool._worker_processes.values()):  # pylint: disable=protected-access
        worker.terminate()
    if forker is not None:
        forker.close()
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    args = [a for a in sys.argv[1:] if a != '--fork']
    serve(int(args[0]), *args[1:3], fork='--fork' in sys.argv[1:])


if __name__ == '__main__':
    main()
