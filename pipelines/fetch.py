"""Fetch a generated segment (Nutch's `fetch`); resume one that was interrupted.

beamcrawl fetch CRAWL_DIR [SEGMENT] [--threads N] [--conf FILE] [-D key=value] [--now T]
                [beam options]
SEGMENT: a segment name or path; default: the newest segment not fetched yet. Results are
journaled as they complete: after Ctrl-C, SIGTERM, kill -9 or a full disk, running the command
again fetches only what is left. With fetcher.parse, the segment is parsed right after.
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import Interrupted, UserError, refused_locally

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segment', metavar='SEGMENT', nargs='?',
                        help='segment name or path (default: newest not fetched)')
    parser.add_argument('--threads', type=int, metavar='N',
                        help='fetcher threads (fetcher.threads.fetch)')
    parser.add_argument('--streaming', action='store_true',
                        help='fetch as a streaming job (Flink): per-queue politeness with '
                             'processing-time timers, restarted by Flink from its checkpoints '
                             '(docs/streaming-fetch.md)')


def run(args, cfg, now, beam_args):
    import apache_beam as beam
    from beamcrawl.pipelines.parse import parse_segment
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.runners import interrupts
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.parts import ReadParts, count_records
    from beamcrawl.transforms.fetch import FetchSegment
    from beamcrawl.transforms.runners.portable import flink_rest
    from beamcrawl.transforms.fetcher.streaming.fetch import (FetchListStayingOpen, StreamingFetchSegment,
                                                  run_until_drained)
    from beamcrawl.transforms.fetcher import journal
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_GENERATE, FETCH_PARTS, WARC
    from beamcrawl.transforms.storage.records import complete_datum
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    if not cfg['http.agent.name'].strip():
        raise UserError('http.agent.name is empty: name your crawler with '
                        '-D http.agent.name=NAME or in --conf before fetching')
    if args.threads is not None and args.threads < 1:
        raise UserError(f'--threads {args.threads}: expected at least 1')
    if args.streaming:
        beam_args = _streaming_args(beam_args)
    crawl = CrawlLayout(args.crawl_dir)
    segment = crawl.pick_segment(args.segment, CRAWL_FETCH, CRAWL_GENERATE)
    fetcher = settings.fetcher_settings(cfg, args.threads)
    parts = (FETCH_PARTS if fetcher.store_content else (CRAWL_FETCH,))
    if fetcher.store_warc:                     # crawl_fetch stays last: it marks the fetch done
        parts = parts[:-1] + (WARC,) + parts[-1:]
    generate_files = crawl.part_files(segment, CRAWL_GENERATE)
    journal_dir = crawl.fetch_journal(segment)
    with crawl.segment_update(segment, parts, 'fetch') as update:
        before = journal.read_journals(journal_dir)
        generated = count_records(generate_files)
        if before.fetched:
            log.info('fetch: resuming %s: %d of %d URLs were fetched before, %d left', segment,
                     before.fetched, generated, generated - before.fetched)
        run_id = journal.new_run_id()
        p = make_pipeline(beam_args, cfg)
        common = dict(settings=fetcher, http=settings.http_settings(cfg, fetcher.threads),
                      policy=settings.url_policy(cfg), now=now, journal_dir=journal_dir,
                      run_id=run_id, done=frozenset(before.done),
                      queue_times=_queue_times(crawl, segment, before))
        if args.streaming:
            read = FetchListStayingOpen(generate_files)
            fetch = StreamingFetchSegment(poll_s=cfg['fetcher.streaming.poll.seconds'], **common)
        else:
            read = ReadParts(generate_files, whole_files=True)
            fetch = FetchSegment(slots=len(generate_files), **common)
        _ = (p
             | 'ReadFetchList' >> read
             | 'Complete' >> beam.Map(complete_datum)
             | 'Fetch' >> fetch)
        with interrupts.graceful():
            if args.streaming:
                run_until_drained(p, journal_dir, generated, check_s=0.5,
                                  progress_s=cfg['fetcher.progress.seconds'],
                                  what=f'fetch {segment} (streaming)',
                                  flink_rest=flink_rest(beam_args, cfg['runner.flink.rest']))
                counters = {}
            else:
                counters = run_pipeline(p, f'fetch {segment}')
        if args.streaming:
            after = journal.read_journals(journal_dir)
            left, queue_times = generated - after.fetched, after.queue_times
        else:
            left = counters.get(metrics.FETCH_LEFT, 0)
            queue_times = journal.run_queue_times(journal_dir, run_id, before.queue_times)
        if interrupts.INTERRUPTED.is_set() or left:
            raise Interrupted(f'interrupted: {generated - left} fetched, {left} left; rerun to '
                              f'resume', interrupts.exit_code())
        journal.write_queue_times(crawl.fetch_times(segment), queue_times)
        tmp = {part: update.tmp[part] for part in parts}
        info = _warc_info(segment, now, common['http'].user_agent)
        if args.streaming:
            journal.publish_attempts(journal_dir, tmp, after.done, info)
        else:
            journal.publish_journals(journal_dir, run_id, tmp, before.done, info)
    fs.delete(journal_dir)
    statuses = {k.split('.', 2)[2]: v for k, v in counters.items()
                if k.startswith('fetch.status.')}
    protocols = {k[len(metrics.FETCH_PROTOCOL):]: v for k, v in counters.items()
                 if k.startswith(metrics.FETCH_PROTOCOL)}
    if args.streaming:            # the job was cancelled once drained: count the journal
        statuses, protocols = {}, {}
        for url, record in after.done.items():
            if url not in before.done:
                statuses[record['status']] = statuses.get(record['status'], 0) + 1
                protocol = record.get('protocol_status') or ''
                protocols[protocol] = protocols.get(protocol, 0) + 1
    resumed = f' (and {before.fetched} fetched by an earlier run)' if before.fetched else ''
    print(f'fetched {crawl.segment(segment)}: ' +
          ', '.join(f'{v} {k}' for k, v in sorted(statuses.items())) + resumed)
    _refused_everything(protocols, cfg)
    if cfg['fetcher.parse']:
        parse_segment(crawl, segment, cfg, now, beam_args)
    return 0


def _refused_everything(protocols, cfg) -> None:
    """Fails the command (exit 2) when every URL it tried was refused by our own address
    policy: a configuration mistake (a crawl dir's settings overridden, an intranet crawl
    without http.address.allow), not what the servers said. The URLs are not lost: updatedb
    keeps their records as they were, and generate selects them again once the policy allows
    them."""
    total = sum(protocols.values())
    if total and protocols.get('blocked', 0) == total:
        raise refused_locally('URL of the segment', total, 0, 'none was requested, and updatedb '
                              'keeps them due (http.address.allow is now '
                              f'{",".join(cfg["http.address.allow"]) or "empty"})')


def _warc_info(segment, now, agent):
    """What the warcinfo record of the segment's WARC files says (dated --now)."""
    from beamcrawl.transforms.fetcher.journal import WarcInfo
    from beamcrawl.transforms.storage.warc import warcinfo_fields
    return WarcInfo(warcinfo_fields(segment, agent), now)


def _streaming_args(beam_args):
    """Beam options of a streaming fetch: --streaming, on a runner that fires processing-time
    timers on the wall clock (a Flink job; the local runner does not)."""
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    from beamcrawl.transforms.base.errors import UserError
    if PipelineOptions(list(beam_args)).view_as(StandardOptions).runner is None:
        raise UserError('fetch --streaming runs on Flink: add the options `beamcrawl flink '
                        'start` prints (the local runner does not fire processing-time timers '
                        'on the wall clock); without --streaming, fetch runs in batch here')
    # Timers an SDK worker sets take effect when its bundle ends: short bundles, so that a
    # queue's next request is not late by a bundle's length (Flink's default: 1 s).
    extra = [] if any(a.startswith('--max_bundle_time_mills') for a in beam_args) \
        else ['--max_bundle_time_mills=20']
    return list(beam_args) + ['--streaming'] + extra


def _queue_times(crawl, segment, before):
    """When each queue may be requested first: after its last request in the previous fetched
    segment of the crawl dir, and in the earlier runs of this fetch (the later of the two)."""
    from beamcrawl.transforms.fetcher import journal
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH
    times = {}
    for name in reversed(crawl.segment_names()):
        if name != segment and crawl.has_part(name, CRAWL_FETCH):
            times = journal.read_queue_times(crawl.fetch_times(name))
            break
    for queue, allowed in before.queue_times.items():
        times[queue] = max(times.get(queue, 0.0), allowed)
    return times


if __name__ == '__main__':
    sys.exit(run_command('fetch', sys.argv[1:]))
