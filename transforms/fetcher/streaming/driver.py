"""The command's side of a streaming fetch: run the job until the journal holds every URL,
cancel it, count and publish what the journal holds (StreamingFetch: the fetch modes' interface
of transforms/fetch.py)."""

import logging
import time
from typing import Dict, Optional

import apache_beam as beam

from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.fetcher.journal.publishing import publish_attempts
from beamcrawl.transforms.fetcher.journal.reading import read_journals
from beamcrawl.transforms.fetcher.result import FetchResult
from beamcrawl.transforms.fetcher.streaming.segment import StreamingFetchSegment
from beamcrawl.transforms.runners.interrupts import INTERRUPTED
from beamcrawl.transforms.runners.portable import cancel_job, flink_rest

__all__ = ['StreamingFetch', 'run_until_drained']

log = logging.getLogger('beamcrawl')


def run_until_drained(pipeline: beam.Pipeline, journal_dir: str, expected: int, *,
                      check_s: float, progress_s: float, what: str,
                      flink_rest: Optional[str]) -> int:
    """Runs a streaming fetch job until its journal holds `expected` generated URLs, logging
    progress; then cancels it, on the cluster itself (`flink_rest`: Flink's REST host:port).
    Returns how many are done (fewer after an interrupt); a job that ends by itself (failed, or
    cancelled from outside) is a UserError saying how many are done."""
    started = last_log = time.time()
    result = pipeline.run()
    done = first = None
    try:
        while True:
            read_start = time.time()
            done = read_journals(journal_dir).fetched
            # reading the journal takes longer as it grows: look at most 10% of the time
            wait_s = max(check_s, 9 * (time.time() - read_start))
            first = done if first is None else first
            if done >= expected or INTERRUPTED.is_set():
                break
            now = time.time()
            if now - last_log >= progress_s:
                log.info('%s: %d of %d URLs done, %.1f pages/s', what, done, expected,
                         (done - first) / max(now - started, 1e-9))
                last_log = now
            state = str(result.state).rsplit('.', 1)[-1]
            if state in _ENDED:
                done = read_journals(journal_dir).fetched
                raise UserError(f'{what}: the Flink job ended ({state}) with {done} of '
                                f'{expected} URLs done; rerun to fetch the rest (the journal '
                                f'keeps what was fetched)')
            INTERRUPTED.wait(wait_s)
    finally:
        cancel_job(result, flink_rest, 'streaming fetch job')
    log.info('%s finished in %.1f s: %d URLs', what, time.time() - started, done)
    return done


_ENDED = ('DONE', 'FAILED', 'CANCELLED', 'STOPPED')


class StreamingFetch:
    """The streaming fetch (Flink, --streaming), in the fetch modes' interface of
    transforms/fetch.py (FetchRun runs it): the job runs until the journal holds every URL, then
    it is cancelled, and the journal is counted and published, each URL's first complete
    attempt.

    Args (keyword-only): poll_s (fetcher.streaming.poll.seconds), progress_s
    (fetcher.progress.seconds), flink_rest (runner.flink.rest: Flink's REST host:port, unless
    the Beam options name the cluster)."""

    def __init__(self, *, poll_s: float, progress_s: float, flink_rest: str):
        self.poll_s, self.progress_s, self.default_rest = poll_s, progress_s, flink_rest
        self.flink_rest: Optional[str] = None

    def beam_args(self, beam_args):
        """Beam options of a streaming fetch: --streaming, on a runner that fires
        processing-time timers on the wall clock (a Flink job; the local runner does not)."""
        from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
        if PipelineOptions(list(beam_args)).view_as(StandardOptions).runner is None:
            raise UserError('fetch --streaming runs on Flink: add the options `beamcrawl flink '
                            'start` prints (the local runner does not fire processing-time '
                            'timers on the wall clock); without --streaming, fetch runs in '
                            'batch here')
        self.flink_rest = flink_rest(beam_args, self.default_rest)
        # Timers an SDK worker sets take effect when its bundle ends: short bundles, so that a
        # queue's next request is not late by a bundle's length (Flink's default: 1 s).
        extra = [] if any(a.startswith('--max_bundle_time_mills') for a in beam_args) \
            else ['--max_bundle_time_mills=20']
        return list(beam_args) + ['--streaming'] + extra

    def pipeline_args(self, beam_args):
        """The options of the fetch's own pipeline: beam_args' (BatchFetch.pipeline_args)."""
        return list(beam_args)

    def transform(self, **kwargs):
        return StreamingFetchSegment(poll_s=self.poll_s, **kwargs)

    def run(self, pipeline: beam.Pipeline, run):
        run_until_drained(pipeline, run.journal_dir, run.generated, check_s=0.5,
                          progress_s=self.progress_s, what=f'{run.what} (streaming)',
                          flink_rest=self.flink_rest)
        after = read_journals(run.journal_dir)      # the job was cancelled: count the journal
        statuses: Dict[str, int] = {}
        protocols: Dict[str, int] = {}
        for url, record in after.done.items():
            if url not in run.before.done:
                statuses[record['status']] = statuses.get(record['status'], 0) + 1
                protocol = record.get('protocol_status') or ''
                protocols[protocol] = protocols.get(protocol, 0) + 1
        return FetchResult(left=run.generated - after.fetched, queue_times=after.queue_times,
                           statuses=statuses, protocols=protocols, done=after.done)

    def publish(self, run, result, tmp, info) -> None:
        publish_attempts(run.journal_dir, tmp, result.done, info)
