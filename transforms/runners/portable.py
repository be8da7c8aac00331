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
  clear line (the probe runs once per process and endpoint).
"""

import atexit
import importlib
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
from typing import Dict, List, Optional, Tuple

import apache_beam as beam
import grpc
from apache_beam.options import pipeline_options as po

from beamcrawl.transforms.base.errors import UserError

__all__ = ['prepare_options', 'skip_submission_environment', 'check_job_endpoint',
           'probe_workers', 'cancel_job', 'flink_rest']

log = logging.getLogger('beamcrawl')

_MAGIC_MASTERS = ('[local]', '[auto]', '[collection]')
_lock = threading.Lock()
_job_servers: Dict[Tuple[str, str], Tuple[subprocess.Popen, str]] = {}
_probed = set()
_answered = set()
# How long a job endpoint may take to answer. A job server on this machine answers in
# milliseconds, one across a network in well under a second.
_ENDPOINT_TIMEOUT_S = 10.0


# Beam's stager runs `python -m pip freeze` for every pipeline on a non-local runner, to stage
# the list of the submitting environment's packages (for runners that compare it with their
# workers'; Flink's do not read it): 0.8 s of CPU and 1-4 s of wall in a child process of every
# command, twice for a one-stage command (the worker probe's job and the stage's).
_NO_SUBMISSION_ENVIRONMENT = 'disable_logging_submission_environment'


def skip_submission_environment(options: po.PipelineOptions) -> None:
    """Sets the Beam experiment that leaves out the `pip freeze` of every portable pipeline."""
    debug = options.view_as(po.DebugOptions)
    if not debug.lookup_experiment(_NO_SUBMISSION_ENVIRONMENT):
        debug.add_experiment(_NO_SUBMISSION_ENVIRONMENT)


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


def cancel_job(result, flink_rest: Optional[str], what: str = 'job') -> None:
    """Cancels a job through Beam's job service and on the Flink cluster at `flink_rest`
    (host:port; None: no REST address, as for an embedded Flink): the job service only stops
    waiting for it, and the job would go on holding the cluster's slots. The Flink job is the
    one named as the Beam job (its id less the invocation's suffix). `what` names the job in
    the log."""
    job_name = str(getattr(result, '_job_id', '')).rsplit('_', 1)[0]
    try:
        result.cancel()
    except Exception as e:  # pylint: disable=broad-except  (the job may be gone already)
        log.debug('cancelling the %s through Beam: %s', what, e)
    if not job_name or not flink_rest:
        return
    base = f'http://{flink_rest}'
    try:
        with urllib.request.urlopen(f'{base}/jobs/overview', timeout=10) as response:
            jobs = json.loads(response.read().decode('utf-8')).get('jobs', [])
        for job in jobs:
            if job.get('name') == job_name and job.get('state') not in _FLINK_ENDED:
                request = urllib.request.Request(f'{base}/jobs/{job["jid"]}?mode=cancel',
                                                 method='PATCH')
                with urllib.request.urlopen(request, timeout=10):
                    pass
                _wait_cancelled(f'{base}/jobs/{job["jid"]}')
                log.info('cancelled the %s %s on %s', what, job['jid'], flink_rest)
    except (OSError, ValueError) as e:
        log.warning('could not cancel the %s %s on Flink at %s (%s): cancel it in Flink\'s '
                    'web UI or with `flink cancel`', what, job_name, flink_rest, e)


_FLINK_ENDED = ('FINISHED', 'CANCELED', 'FAILED', 'CANCELLING')


def _wait_cancelled(url: str, attempts: int = 120) -> None:
    """Waits (up to `attempts` half-seconds) until the Flink job at `url` has ended, so that
    the next command finds its slots free."""
    for _ in range(attempts):
        with urllib.request.urlopen(url, timeout=10) as response:
            if json.loads(response.read().decode('utf-8')).get('state') in \
                    ('CANCELED', 'FINISHED', 'FAILED'):
                return
        time.sleep(0.5)


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


def _probe(_):
    # the workers must have beamcrawl
    importlib.import_module('beamcrawl.transforms.storage.records')
    return 'ok'


class _JobMessagesOff(logging.Filter):
    """Drops the job messages a portable runner logs on the root logger."""

    def filter(self, record):
        return record.name != 'root'


def _batch_copy(options: po.PipelineOptions) -> po.PipelineOptions:
    """The options as a batch job's: a streaming job with checkpoints keeps its sources, and so
    itself, running for ever (a streaming fetch ends by being cancelled)."""
    values = options.get_all_options(drop_default=True, retain_unknown_options=True)
    values.pop('checkpointing_interval', None)
    values['streaming'] = False
    return po.PipelineOptions.from_dictionary(values)


def telling_line(lines: List[str]) -> str:
    """The line of a failure's text that says most: the deepest Java cause (`Caused by: ...`),
    else the last line naming an error or exception, else the last line. (The last line of a
    Flink REST error is often a lone `]`.)"""
    stripped = [line.strip() for line in lines if line.strip()]
    for pick in (lambda line: line.startswith('Caused by:'),
                 lambda line: 'Error' in line or 'Exception' in line, lambda line: True):
        found = [line for line in stripped if pick(line)]
        if found:
            return found[-1]
    return ''


def probe_workers(options: po.PipelineOptions, timeout_s: float,
                  rest: Optional[str] = None, trust_start: bool = True) -> None:
    """With an EXTERNAL or PROCESS environment, checks once per process and endpoint that the
    runner's workers start and can import beamcrawl; raises UserError in one line otherwise.
    A probe job that did not finish in time is cancelled, on the Flink cluster at `rest` too
    (left running, it would hold the slots every later job waits for).

    With `trust_start`, the workers of a local cluster whose `beamcrawl flink start` probed them
    are not probed again while every process it probed with runs (runners/localflink.py
    probed_by_start): a one-stage command then runs one Flink job, not two."""
    portable = options.view_as(po.PortableOptions)
    kind = (portable.environment_type or '').upper()
    if kind not in ('EXTERNAL', 'PROCESS'):
        return
    key = (portable.job_endpoint, portable.environment_config)
    if key in _probed:
        return
    if trust_start:
        from beamcrawl.transforms.runners.localflink import probed_by_start
        given = portable.environment_config or ','.join(portable.environment_options or [])
        if probed_by_start(portable.job_endpoint, [kind, given]):
            log.debug('the workers of %s were probed by `beamcrawl flink start`', key)
            _probed.add(key)
            return
    where = f'{kind} environment {portable.environment_config or ""}'.strip()
    p = beam.Pipeline(options=_batch_copy(options))
    _ = p | 'Probe' >> beam.Create([0]) | 'ImportBeamcrawl' >> beam.Map(_probe)
    quiet = _JobMessagesOff()          # the probe's failure is reported below, in one line
    root = logging.getLogger()
    root.addFilter(quiet)
    try:
        result = p.run()
        state = result.wait_until_finish(duration=int(timeout_s * 1000))
    except Exception as e:  # pylint: disable=broad-except  (any failure of the probe job)
        lines = [line for line in str(e).strip().splitlines() if line.strip()] or [repr(e)]
        if any('beamcrawl' in line and 'No module' in line for line in lines):
            raise UserError(f'the workers of the {where} cannot import beamcrawl: install '
                            f'beamcrawl in the Python environment the worker pool starts '
                            f'workers with') from None
        raise UserError(f'a one-element probe job failed on the {where}: '
                        f'{telling_line(lines)[:300]} (the worker pool starts workers as '
                        f'`python` from its PATH)') from None
    finally:
        root.removeFilter(quiet)
    if str(state).split('.')[-1] != 'DONE':
        cancel_job(result, rest, 'worker probe job')
        raise UserError(f'the workers of the {where} did not run a one-element job within '
                        f'{timeout_s:.0f} s: they did not start, or cannot import beamcrawl (a '
                        f'worker pool starts workers as `python` from its PATH, which must have '
                        f'apache_beam and beamcrawl; runner.probe.timeout sets the wait)')
    _probed.add(key)
