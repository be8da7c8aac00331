"""A Beam worker pool for EXTERNAL environments, listening on loopback only by default.

`python -m beamcrawl.transforms.runners.workerpool PORT [HOST [BOOT]]` is Beam's worker_pool_main
with two changes. Beam's binds every interface ([::]), and anyone who can reach a worker pool can
make it run code: this one listens on HOST (default localhost). Beam's starts each worker
without the pipeline's options (a worker's FileSystems then reach no HDFS or S3): this one
starts each by the executable BOOT (runners/sdkboot.py boot_script), which asks the runner for
them; without BOOT, by one it writes into a temporary folder of its own (removed when it
stops), running this Python.
"""

import os
import shutil
import signal
import sys
import tempfile
import threading

import grpc
from apache_beam.portability.api import beam_fn_api_pb2_grpc
from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer
from apache_beam.utils import thread_pool_executor

from beamcrawl.transforms.runners.sdkboot import boot_script


def serve(port: int, host: str = 'localhost', boot: str = '') -> None:
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
    pool = BeamFnExternalWorkerPoolServicer(use_process=True, container_executable=boot)
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(pool, server)
    server.start()
    print(f'worker pool listening on {address}', flush=True)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    server.stop(0)
    for worker in list(pool._worker_processes.values()):  # pylint: disable=protected-access
        worker.terminate()
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    serve(int(sys.argv[1]), *sys.argv[2:4])


if __name__ == '__main__':
    main()
