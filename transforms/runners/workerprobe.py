"""The worker probe of portable runners (Flink), and the cancel of a job that must not keep
the cluster's slots: with `--environment_type EXTERNAL` (a worker pool) or PROCESS, a pool
whose Python cannot import apache_beam or beamcrawl makes every job wait forever or fail deep
inside Flink; before the first real pipeline, beamcrawl runs a one-element probe job and turns
what goes wrong into one clear line (once per process and endpoint). runners/portable.py runs
it for a command, runners/localflink.py for `beamcrawl flink start`; this module imports
neither."""

import importlib
import json
import logging
import time
import urllib.request
from typing import Callable, List, Optional

import apache_beam as beam
from apache_beam.options import pipeline_options as po

from beamcrawl.transforms.base.errors import UserError

__all__ = ['skip_submission_environment', 'probe_workers', 'cancel_job', 'telling_line']

log = logging.getLogger('beamcrawl')

_probed = set()


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


def probe_workers(options: po.PipelineOptions, timeout_s: float, rest: Optional[str] = None,
                  trusted: Optional[Callable[[str, List[str]], bool]] = None) -> None:
    """With an EXTERNAL or PROCESS environment, checks once per process and endpoint that the
    runner's workers start and can import beamcrawl; raises UserError in one line otherwise.
    A probe job that did not finish in time is cancelled, on the Flink cluster at `rest` too
    (left running, it would hold the slots every later job waits for).

    `trusted(job_endpoint, [environment type, config])`, where given, says whether a probe of
    those workers already passed and still holds (runners/portable.py passes the local
    cluster's record of its `beamcrawl flink start`, localflink.probed_by_start): a one-stage
    command then runs one Flink job, not two."""
    portable = options.view_as(po.PortableOptions)
    kind = (portable.environment_type or '').upper()
    if kind not in ('EXTERNAL', 'PROCESS'):
        return
    key = (portable.job_endpoint, portable.environment_config)
    if key in _probed:
        return
    if trusted is not None:
        given = portable.environment_config or ','.join(portable.environment_options or [])
        if trusted(portable.job_endpoint, [kind, given]):
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
