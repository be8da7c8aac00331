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


# The command imports Beam only once its head start runs (pipelines/cli.py, beam_setup).
BEAM_LATE = True


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.fetchrun import FetchRun
    from beamcrawl.transforms.runners import interrupts
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_GENERATE, FETCH_PARTS, WARC
    if not cfg['http.agent.name'].strip():
        raise UserError('http.agent.name is empty: name your crawler with '
                        '-D http.agent.name=NAME or in --conf before fetching')
    if args.threads is not None and args.threads < 1:
        raise UserError(f'--threads {args.threads}: expected at least 1')
    mode = None
    if args.streaming or beam_args:             # no head start: the mode's checks come first
        mode, beam_args = _mode(args, cfg, beam_args)
    crawl = CrawlLayout(args.crawl_dir)
    segment = crawl.pick_segment(args.segment, CRAWL_FETCH, CRAWL_GENERATE)
    fetcher = settings.fetcher_settings(cfg, args.threads)
    parts = (FETCH_PARTS if fetcher.store_content else (CRAWL_FETCH,))
    if fetcher.store_warc:                     # crawl_fetch stays last: it marks the fetch done
        parts = parts[:-1] + (WARC,) + parts[-1:]
    with crawl.segment_update(segment, parts, 'fetch') as update:
        run = FetchRun(crawl, segment, mode)
        if run.before.fetched:
            log.info('fetch: resuming %s: %d of %d URLs were fetched before, %d left', segment,
                     run.before.fetched, run.generated, run.generated - run.before.fetched)
        http = settings.http_settings(cfg, fetcher.threads)
        policy = settings.url_policy(cfg)
        # The head start (fetcher/headstart.py): on the local runner in this process only,
        # where the pipeline's DoFn can take its fetcher over.
        if mode is None and cfg['fetcher.head.start'] and \
                cfg['runner.local.parallel.records'] > 0 and fs.is_local(crawl.root):
            run.start_head(settings=fetcher, http=http, policy=policy, now=now)
        try:
            result, beam_args = _run(run, args, cfg, now, beam_args, fetcher, http, policy,
                                     interrupts)
        except KeyboardInterrupt:       # before the pipeline's fetch: the head start is kept
            kept = run.abandon_head(fetcher.journal_roll_s)
            if not kept:
                raise
            raise Interrupted(f'interrupted: {run.before.fetched + kept} fetched, '
                              f'{run.generated - run.before.fetched - kept} left; rerun to '
                              'resume', interrupts.exit_code()) from None
        finally:
            run.abandon_head(fetcher.journal_roll_s)
        run.publish(result, {part: update.tmp[part] for part in parts},
                    run.warc_info(now, http.user_agent))
    run.remove_journal()
    resumed = f' (and {run.before.fetched} fetched by an earlier run)' if run.before.fetched \
        else ''
    print(f'fetched {crawl.segment(segment)}: ' +
          ', '.join(f'{v} {k}' for k, v in sorted(result.statuses.items())) + resumed)
    _refused_everything(result.protocols, cfg)
    if cfg['fetcher.parse']:
        from beamcrawl.pipelines.parse import parse_segment
        parse_segment(crawl, segment, cfg, now, beam_args)
    return 0


def _mode(args, cfg, beam_args):
    """Imports Beam (pipelines/cli.py beam_setup): the fetch's mode (transforms/fetch.py) and
    the Beam options it runs with."""
    from beamcrawl.pipelines.cli import beam_setup
    beam_setup()
    from beamcrawl.transforms.fetch import fetch_mode
    mode = fetch_mode(cfg, streaming=args.streaming)
    return mode, mode.beam_args(beam_args)


def _run(run, args, cfg, now, beam_args, fetcher, http, policy, interrupts):
    """Builds the fetch's pipeline and runs it (importing Beam now, after the head start, if
    it was not imported before): (the FetchResult, the Beam options of the fetch's mode, which
    the parse after it takes too)."""
    if run.mode is None:
        run.mode, beam_args = _mode(args, cfg, beam_args)
    from beamcrawl.transforms.runners.runtime import make_pipeline
    mode = run.mode
    p = make_pipeline(mode.pipeline_args(beam_args), cfg)
    _ = p | 'Fetch' >> run.transform(settings=fetcher, http=http, policy=policy, now=now)
    with interrupts.graceful():
        result = run.run(p)
    if interrupts.INTERRUPTED.is_set() or result.left:
        raise Interrupted(f'interrupted: {run.generated - result.left} fetched, '
                          f'{result.left} left; rerun to resume', interrupts.exit_code())
    return result, beam_args


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


if __name__ == '__main__':
    sys.exit(run_command('fetch', sys.argv[1:]))
