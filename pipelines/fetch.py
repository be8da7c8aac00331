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
from beamcrawl.transforms.errors import Interrupted, UserError

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segment', metavar='SEGMENT', nargs='?',
                        help='segment name or path (default: newest not fetched)')
    parser.add_argument('--threads', type=int, metavar='N',
                        help='fetcher threads (fetcher.threads.fetch)')


def run(args, cfg, now, beam_args):
    import apache_beam as beam
    from beamcrawl.pipelines.parse import parse_segment
    from beamcrawl.transforms import interrupts, layout, metrics, settings
    from beamcrawl.transforms.dbio import ReadParts, count_records
    from beamcrawl.transforms.fetch import FetchSegment
    from beamcrawl.transforms.fetcher import journal
    from beamcrawl.transforms.layout import CRAWL_FETCH, CRAWL_GENERATE, CrawlLayout, FETCH_PARTS
    from beamcrawl.transforms.records import complete_datum
    from beamcrawl.transforms.runtime import make_pipeline, run_pipeline
    if not cfg['http.agent.name'].strip():
        raise UserError('http.agent.name is empty: name your crawler with '
                        '-D http.agent.name=NAME or in --conf before fetching')
    if args.threads is not None and args.threads < 1:
        raise UserError(f'--threads {args.threads}: expected at least 1')
    crawl = CrawlLayout(args.crawl_dir)
    segment = crawl.pick_segment(args.segment, CRAWL_FETCH, CRAWL_GENERATE)
    fetcher = settings.fetcher_settings(cfg, args.threads)
    parts = FETCH_PARTS if fetcher.store_content else (CRAWL_FETCH,)
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
        _ = (p
             | 'ReadFetchList' >> ReadParts(generate_files)
             | 'Complete' >> beam.Map(complete_datum)
             | 'Fetch' >> FetchSegment(
                 settings=fetcher, http=settings.http_settings(cfg, fetcher.threads),
                 policy=settings.url_policy(cfg), now=now, slots=len(generate_files),
                 journal_dir=journal_dir, run_id=run_id, done=frozenset(before.done),
                 queue_times=_queue_times(crawl, segment, before)))
        with interrupts.graceful():
            counters = run_pipeline(p, f'fetch {segment}')
        left = counters.get(metrics.FETCH_LEFT, 0)
        if interrupts.INTERRUPTED.is_set() or left:
            raise Interrupted(f'interrupted: {generated - left} fetched, {left} left; rerun to '
                              f'resume', interrupts.exit_code())
        after = journal.read_journals(journal_dir)
        journal.write_queue_times(crawl.fetch_times(segment), after.queue_times)
        journal.publish_journals(journal_dir, run_id, {part: update.tmp[part] for part in parts},
                                 before.done)
    layout.delete(journal_dir)
    statuses = {k.split('.', 2)[2]: v for k, v in counters.items()
                if k.startswith('fetch.status.')}
    resumed = f' (and {before.fetched} fetched by an earlier run)' if before.fetched else ''
    print(f'fetched {crawl.segment(segment)}: ' +
          ', '.join(f'{v} {k}' for k, v in sorted(statuses.items())) + resumed)
    if cfg['fetcher.parse']:
        parse_segment(crawl, segment, cfg, now, beam_args)
    return 0


def _queue_times(crawl, segment, before):
    """When each queue may be requested first: after its last request in the previous fetched
    segment of the crawl dir, and in the earlier runs of this fetch (the later of the two)."""
    from beamcrawl.transforms.fetcher import journal
    from beamcrawl.transforms.layout import CRAWL_FETCH
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
