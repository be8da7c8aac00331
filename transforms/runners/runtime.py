"""Running pipelines: the injected clock, Beam options, the pinned local runner, counters.

The local runner: with no `--runner`, beamcrawl runs on Beam's FnApiRunner: in this process for
small work, and with one worker process per core (`runner.local.workers`) when a stage has at
least `runner.local.parallel.records` input records — Beam's lossless multi-process mode, with
beamcrawl's worker entry point (transforms/runners/localworker.py). `--direct_num_workers` and
`--direct_running_mode` on the command line win over both settings. Beam's `DirectRunner`
would first try to download and start the Prism runner, then fall back; `--runner DirectRunner` is still accepted and gives the same
results. The direct runner's multi-threading mode is refused: in Beam 2.77 it loses records in
GroupByKey (measured; docs/architecture.md, "Beam facts").
"""

import argparse
import logging
import os
import time
from typing import Dict, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options import pipeline_options as po

from beamcrawl.transforms.base import progress
from beamcrawl.transforms.base.clock import format_time, parse_now  # noqa: F401 (re-exported)
from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.base.metrics import NAMESPACE
from beamcrawl.transforms.runners import portable
from beamcrawl.transforms.runners.dofnspecs import remember_dofn_specs
from beamcrawl.transforms.runners.sampler import prompt_state_sampler

__all__ = ['parse_now', 'format_time', 'split_beam_args', 'local_workers', 'make_pipeline',
           'run_pipeline', 'counters_of']

log = logging.getLogger('beamcrawl')

prompt_state_sampler()      # every bundle of this process's pipelines ends at once (sampler.py)
remember_dofn_specs()       # a DoFn's state and timer specs are read once (dofnspecs.py)

# Fork servers of the local runner's workers for the pipeline being built (localworker.py).
_fork_servers: List = []

# The direct runner's thread mode that drops GroupByKey records (docs/architecture.md).
_LOSSY_DIRECT_MODE = 'multi' + '_threading'


class FlinkStreamingOptions(po.PipelineOptions):
    """Options of Beam's Java Flink runner that its Python SDK does not declare (so a command
    line could not pass them): checkpointing and the ends of a streaming job. Declared here,
    they reach the job server under their own names (docs/streaming-fetch.md)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument('--checkpointing_interval', type=int,
                            help='Flink: checkpoint every this many ms (default: no checkpoints)')
        parser.add_argument('--checkpointing_mode', choices=('EXACTLY_ONCE', 'AT_LEAST_ONCE'))
        parser.add_argument('--checkpoint_timeout_millis', type=int)
        parser.add_argument('--min_pause_between_checkpoints', type=int)
        parser.add_argument('--number_of_execution_retries', type=int,
                            help='Flink: restarts of a failed job (-1: the cluster default)')
        parser.add_argument('--execution_retry_delay', type=int,
                            help='Flink: ms between restarts of a failed job')
        parser.add_argument('--shutdown_sources_after_idle_ms', type=int,
                            help='Flink: stop sources idle this long (streaming)')
        parser.add_argument('--max_bundle_size', type=int)
        parser.add_argument('--max_bundle_time_mills', type=int)


def _beam_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    seen = {}
    for cls in po.PipelineOptions.__subclasses__():
        seen.setdefault(str(cls), cls)
    for cls in seen.values():
        try:
            cls._add_argparse_args(parser)  # pylint: disable=protected-access
        except argparse.ArgumentError:
            pass
    return parser


def split_beam_args(argv: Sequence[str], ours: argparse.ArgumentParser
                    ) -> Tuple[List[str], List[str]]:
    """Separates Beam pipeline options from the command's own arguments.

    A `--flag` that the command does not define but a Beam PipelineOptions class does goes to
    Beam, with its value when it takes one (`--runner FlinkRunner` or `--runner=FlinkRunner`).
    """
    beam_actions = _beam_parser()._option_string_actions  # pylint: disable=protected-access
    our_actions = ours._option_string_actions  # pylint: disable=protected-access
    mine: List[str] = []
    beam_args: List[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        name = token.split('=', 1)[0]
        if token.startswith('--') and name not in our_actions and name in beam_actions:
            beam_args.append(token)
            takes_value = beam_actions[name].nargs != 0
            if takes_value and '=' not in token and i + 1 < len(argv):
                beam_args.append(argv[i + 1])
                i += 1
        else:
            mine.append(token)
        i += 1
    return mine, beam_args


def use_filesystem_options(beam_args: Sequence[str]) -> None:
    """Gives Beam's FileSystems the filesystem options of the command line (--hdfs_host ...,
    --s3_endpoint_url ...), so that the driver reads and writes a crawl directory on HDFS or S3
    as the workers do (they get them with the pipeline's options)."""
    from apache_beam.io.filesystems import FileSystems
    FileSystems.set_options(po.PipelineOptions(list(beam_args)))


def _explicit(beam_args: Sequence[str], *names: str) -> bool:
    return any(a.split('=', 1)[0] in names for a in beam_args)


def local_workers(beam_args: Sequence[str], cfg, records: int) -> int:
    """How many processes the local runner uses for a stage reading `records` input records:
    1 (this process) below runner.local.parallel.records, else runner.local.workers (0: one
    per core). Beam's --direct_num_workers, when given, decides instead."""
    if _explicit(beam_args, '--runner'):
        return 1
    if _explicit(beam_args, '--direct_num_workers'):
        options = po.PipelineOptions(list(beam_args)).view_as(po.DirectOptions)
        return options.direct_num_workers or os.cpu_count() or 1
    if records < cfg['runner.local.parallel.records']:
        return 1
    return cfg['runner.local.workers'] or os.cpu_count() or 1


def workers_of(pipeline: beam.Pipeline) -> int:
    """How many processes run a pipeline made by make_pipeline: on the local runner, the
    local_workers it chose (or Beam's --direct_num_workers, 0 meaning one per core); on Flink,
    its parallelism (--parallelism, else the cluster's task slots: cluster_parallelism). Stages
    size their partitions and work units with it (docs/scaling.md)."""
    options = pipeline.options
    if options.view_as(po.StandardOptions).runner is not None:
        return max(1, options.view_as(po.FlinkRunnerOptions).parallelism or 1)
    return options.view_as(po.DirectOptions).direct_num_workers or os.cpu_count() or 1


class _LocalOptions(po.PipelineOptions):
    """PipelineOptions whose views are made once per class. Beam asks the options of a
    pipeline for a view about a hundred times while it builds and starts a small pipeline, and
    each view parses the flags again (0.03 s of a command's start on the local runner). Views
    share the options' values, so one view per class is the same as a new one each time."""

    def view_as(self, cls):
        views = self.__dict__.get('_views')
        if views is None:
            views = {}
            object.__setattr__(self, '_views', views)    # not an option: past __setattr__
        view = views.get(cls)
        if view is None:
            view = views[cls] = super().view_as(cls)
        return view

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop('_views', None)
        return state


def _provision(options: po.PipelineOptions):
    """What the local runner tells its worker processes, with the pipeline's options: Beam's
    own leaves them out, and a worker without them would not know the filesystem options of a
    crawl directory on HDFS or S3 (docs/crawl-dir.md, Stores)."""
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo
    from apache_beam.runners.portability.portable_runner import JobServiceHandle
    values = options.get_all_options(drop_default=True, retain_unknown_options=True)
    return ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(
        retrieval_token='unused-retrieval-token',
        pipeline_options=JobServiceHandle.encode_pipeline_options(values)))


def make_pipeline(beam_args: Sequence[str], cfg, records: int = 0) -> beam.Pipeline:
    """A Pipeline made by _make_pipeline, with a progress Tracker for its stages (progress.py:
    every runner.progress.seconds while run_pipeline runs it)."""
    pipeline = _make_pipeline(beam_args, cfg, records)
    progress.attach(pipeline, cfg['runner.progress.seconds'])
    return pipeline


def _make_pipeline(beam_args: Sequence[str], cfg, records: int = 0) -> beam.Pipeline:
    """A Pipeline on the requested runner, or the local runner when none is given (in this
    process, or with worker processes for a stage of `records` ≥ runner.local.parallel.records
    input records). On a portable runner (Flink) the job server is shared by the whole process
    and the workers are probed once before the first pipeline (transforms/runners/portable.py)."""
    options = po.PipelineOptions(list(beam_args))
    mode = options.view_as(po.DirectOptions).direct_running_mode
    if mode == _LOSSY_DIRECT_MODE:
        raise UserError(f'the direct running mode {mode} is refused: in Beam 2.77 it loses '
                        'records in GroupByKey; use in_memory (default) or multi_processing')
    if options.view_as(po.StandardOptions).runner is None:
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner
        options = _LocalOptions(list(beam_args))
        if _explicit(beam_args, '--direct_num_workers', '--direct_running_mode'):
            return beam.Pipeline(runner=FnApiRunner(), options=options)
        workers = local_workers(beam_args, cfg, records)
        if workers <= 1:
            return beam.Pipeline(runner=FnApiRunner(), options=options)
        from apache_beam.transforms.environments import SubprocessSDKEnvironment

        from beamcrawl.transforms.runners import localworker
        options.view_as(po.DirectOptions).direct_num_workers = workers
        options.view_as(po.WorkerOptions).default_sdk_harness_log_level = 'WARNING'
        server = localworker.ForkServer() if localworker.ForkServer.usable() else None
        if server is not None:
            _fork_servers.append(server)        # ended by run_pipeline
        environment = SubprocessSDKEnvironment.from_command_string(
            command_string=localworker.worker_command(server))
        log.info('local runner: %d worker processes%s', workers,
                 ' (forked)' if server is not None else '')
        return beam.Pipeline(runner=FnApiRunner(default_environment=environment,
                                                provision_info=_provision(options)),
                             options=options)
    options = portable.prepare_options(options)
    portable.skip_submission_environment(options)
    portable.check_job_endpoint(options)        # before anything waits on a job or workers
    rest = portable.flink_rest(beam_args, cfg['runner.flink.rest'])
    portable.probe_workers(options, cfg['runner.probe.timeout'], rest)
    cluster_parallelism(options, rest)
    return beam.Pipeline(options=options)


def cluster_parallelism(options: po.PipelineOptions, rest: Optional[str]) -> int:
    """A Flink pipeline's parallelism: --parallelism when given, else every task slot of the
    cluster (its REST API's slots-total), set into `options`; 1 (Flink's default) when neither
    is known."""
    flink = options.view_as(po.FlinkRunnerOptions)
    if flink.parallelism and flink.parallelism > 0:
        return flink.parallelism
    slots = portable.flink_slots(rest) if rest else 0
    if slots > 0:
        flink.parallelism = slots
        log.info('flink: parallelism %d (the cluster\'s task slots; --parallelism N to choose)',
                 slots)
        return slots
    return 1


def counters_of(result) -> Dict[str, int]:
    """The beamcrawl counters of a finished pipeline, summed over steps."""
    totals: Dict[str, int] = {}
    try:
        query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    except (NotImplementedError, AttributeError):
        return totals
    for counter in query.get('counters', []):
        value = counter.committed if counter.committed is not None else counter.attempted
        name = counter.key.metric.name
        totals[name] = totals.get(name, 0) + int(value or 0)
    return totals


def run_pipeline(pipeline: beam.Pipeline, what: str) -> Dict[str, int]:
    """Runs a pipeline to the end, logs its duration and counters, returns the counters."""
    started = time.time()
    tracker = getattr(pipeline, '_beamcrawl_progress', None)
    if tracker is not None:
        tracker.start(what)
    completed = False
    try:
        result = pipeline.run()
        state = result.wait_until_finish()
        completed = state is None or str(state) in ('DONE', 'PipelineState.DONE')
    finally:
        if tracker is not None:
            tracker.stop(completed)
        while _fork_servers:
            _fork_servers.pop().close()
    if state is not None and str(state) not in ('DONE', 'PipelineState.DONE'):
        raise RuntimeError(f'{what}: pipeline ended in state {state}')
    counters = counters_of(result)
    log.info('%s finished in %.1f s', what, time.time() - started)
    for name in sorted(counters):
        log.info('  %-40s %d', name, counters[name])
    return counters
