"""Pipelines on portable runners (Flink): one job server per process, and a worker probe.

* `--runner FlinkRunner` makes Beam start a Java job server for every pipeline, and a crawl runs
  five pipelines a round. beamcrawl starts one job server (quietly, its log in a temporary file)
  the first time a process needs it, submits every later pipeline to it through PortableRunner,
  and stops it when the process exits.
* A --job_endpoint where no job server answers made Beam wait five minutes and then fail in
  a way that blamed the workers. Before anything else, beamcrawl checks that a gRPC server
  answers there within seconds, and names the endpoint in one line if none does.
* With `--environment_type EXTERNAL` (a worker pool), a pool whose Python cannot import
  apache_beam or beamcrawl makes every job wait forever or fail deep inside Flink. Before the
  first real pipeline, beamcrawl runs a one-element probe job and turns what goes wrong into one
  clear line (the probe runs once per process and endpoint: runners/workerprobe.py).
"""

import atexit
import json
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from typing import Dict, Optional, Tuple

import grpc
from apache_beam.options import pipeline_options as po

from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.runners import workerprobe
from beamcrawl.transforms.runners.workerprobe import (cancel_job, skip_submission_environment,
                                                      telling_line)

__all__ = ['prepare_options', 'skip_submission_environment', 'check_job_endpoint',
           'probe_workers', 'cancel_job', 'flink_rest', 'telling_line']

log = logging.getLogger('beamcrawl')

_MAGIC_MASTERS = ('[local]', '[auto]', '[collection]')
_lock = threading.Lock()
_job_servers: Dict[Tuple[str, str], Tuple[subprocess.Popen, str]] = {}
_answered = set()
# How long a job endpoint may take to answer. A job server on this machine answers in
# milliseconds, one across a network in well under a second.
_ENDPOINT_TIMEOUT_S = 10.0


def prepare_options(options: po.PipelineOptions) -> po.PipelineOptions:
    """Rewrites FlinkRunner options to PortableRunner on this process's shared job server; other
    options are returned as they are."""
    standard = options.view_as(po.StandardOptions)
    flink = options.view_as(po.FlinkRunnerOptions)
    if str(standard.runner or '').split('.')[-1] != 'FlinkRunner' or flink.flink_submit_uber_jar:
        return options
    portable = options.view_as(po.PortableOptions)
    if portable.job_endpoint:
        standard.runner = 'PortableRunner'
        return options
    master = (flink.flink_master or '[auto]').strip()
    portable.job_endpoint = _job_server(_job_server_jar(flink.flink_job_server_jar), master)
    if master in _MAGIC_MASTERS and not portable.environment_type:
        portable.environment_type = 'LOOPBACK'      # what FlinkRunner does for an embedded Flink
    standard.runner = 'PortableRunner'
    return options


def _job_server_jar(given) -> str:
    if given:
        if not os.path.isfile(given):
            raise UserError(f'--flink_job_server_jar {given}: no such file')
        return os.path.abspath(given)
    from beamcrawl.transforms.runners.localflink import LocalFlink  # the jar `flink start` builds
    built = LocalFlink().jar
    if os.path.isfile(built):
        return built
    raise UserError('FlinkRunner needs a job server jar: build one with ./run_local.sh --flink '
                    'start (or `beamcrawl flink start`), or pass --flink_job_server_jar JAR')


def cleanups_pending() -> bool:
    """Whether this process started job servers that its exit handlers stop."""
    return bool(_job_servers)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _job_server(jar: str, master: str) -> str:
    with _lock:
        known = _job_servers.get((jar, master))
        if known is not None and known[0].poll() is None:
            return known[1]
        java = shutil.which('java')
        if java is None:
            raise UserError('FlinkRunner needs Java: `java` is not on PATH')
        port = _free_port()
        log_file = tempfile.NamedTemporaryFile(prefix='beamcrawl-jobserver-', suffix='.log',
                                               delete=False)
        flink_master = master if master in _MAGIC_MASTERS else master.split('://')[-1]
        proc = subprocess.Popen(
            [java, '-jar', jar, '--flink-master', flink_master, '--job-host', 'localhost',
             '--job-port', str(port), '--artifact-port', '0', '--expansion-port', '0'],
            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log_file.close()
        endpoint = f'localhost:{port}'
        atexit.register(_stop, proc, log_file.name)
        deadline = time.time() + 120
        while True:
            if proc.poll() is not None:
                raise UserError(f'the Flink job server exited at start (code {proc.returncode});'
                                f' see {log_file.name}')
            try:
                with socket.create_connection(('127.0.0.1', port), timeout=1):
                    break
            except OSError:
                if time.time() > deadline:
                    raise UserError(f'the Flink job server did not start in 120 s; see '
                                    f'{log_file.name}') from None
                time.sleep(0.2)
        log.info('Flink job server for %s on %s (shared by this run; log %s)', master, endpoint,
                 log_file.name)
        _job_servers[(jar, master)] = (proc, endpoint)
        return endpoint


def _stop(proc: subprocess.Popen, log_path: str) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    try:
        os.remove(log_path)
    except OSError:
        pass


def flink_rest(beam_args, default: str) -> Optional[str]:
    """Flink's REST address: --flink_master HOST:PORT when given, else `default`
    (runner.flink.rest); None for a FlinkRunner on an embedded Flink ([local], [auto])."""
    options = po.PipelineOptions(list(beam_args))
    runner = str(options.view_as(po.StandardOptions).runner or '').split('.')[-1]
    master = options.view_as(po.FlinkRunnerOptions).flink_master
    given = any(a == '--flink_master' or a.startswith('--flink_master=') for a in beam_args)
    if runner == 'FlinkRunner' and (master or '[auto]').startswith('['):
        return None
    if given and master and not master.startswith('['):
        return master.split('://', 1)[-1].rstrip('/')
    return default


def flink_slots(rest: str) -> int:
    """The task slots of the Flink cluster whose REST API is at `rest` (0 when it does not
    answer)."""
    try:
        with urllib.request.urlopen(f'http://{rest}/overview', timeout=5) as response:
            return int(json.load(response).get('slots-total', 0))
    except (OSError, ValueError, TypeError):
        return 0


def check_job_endpoint(options: po.PipelineOptions) -> None:
    """With a portable runner, checks once per process that a gRPC server answers at
    --job_endpoint; raises UserError naming the endpoint otherwise."""
    runner = str(options.view_as(po.StandardOptions).runner or '').split('.')[-1]
    endpoint = options.view_as(po.PortableOptions).job_endpoint
    if runner != 'PortableRunner' or not endpoint or endpoint == 'embed' or \
            endpoint in _answered:
        return
    host, _, port = endpoint.rpartition(':')
    if not host or not port.isdigit():
        raise UserError(f'--job_endpoint {endpoint}: expected HOST:PORT')
    hint = ('is the job server running? (`beamcrawl flink start` starts the local cluster and '
            'prints its options)')
    try:            # a refused connection is told at once (gRPC would retry until the bound)
        with socket.create_connection((host.strip('[]'), int(port)),
                                      timeout=_ENDPOINT_TIMEOUT_S):
            pass
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise UserError(f'the job endpoint {endpoint} does not answer ({reason}): '
                        f'{hint}') from None
    channel = grpc.insecure_channel(endpoint)
    try:
        grpc.channel_ready_future(channel).result(timeout=_ENDPOINT_TIMEOUT_S)
    except grpc.FutureTimeoutError:
        raise UserError(f'the job endpoint {endpoint} does not answer as a gRPC server within '
                        f'{_ENDPOINT_TIMEOUT_S:.0f} s (another program holds the port?): '
                        f'{hint}') from None
    finally:
        channel.close()
    _answered.add(endpoint)


def probe_workers(options: po.PipelineOptions, timeout_s: float,
                  rest: Optional[str] = None, trust_start: bool = True) -> None:
    """workerprobe.probe_workers for a command. With `trust_start`, the workers of a local
    cluster whose `beamcrawl flink start` probed them are not probed again while every process
    it probed with runs (runners/localflink.py probed_by_start)."""
    trusted = None
    if trust_start:
        from beamcrawl.transforms.runners.localflink import probed_by_start
        trusted = probed_by_start
    workerprobe.probe_workers(options, timeout_s, rest, trusted)
