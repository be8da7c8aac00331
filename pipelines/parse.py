"""Parse fetched content (Nutch's `parse`).

beamcrawl parse CRAWL_DIR [SEGMENT] [--conf FILE] [-D key=value] [--now T] [beam options]
SEGMENT: a segment name or path; default: the newest fetched segment not parsed yet.
"""

import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segment', metavar='SEGMENT', nargs='?',
                        help='segment name or path (default: newest fetched, not parsed)')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH, CRAWL_PARSE
    crawl = CrawlLayout(args.crawl_dir)
    segment = crawl.pick_segment(args.segment, CRAWL_PARSE, CRAWL_FETCH, CONTENT)
    parse_segment(crawl, segment, cfg, now, beam_args)
    return 0


def parse_segment(crawl, segment, cfg, now, beam_args) -> None:
    """Parses a fetched segment's content into its parse parts (also run by fetch when
    fetcher.parse is true)."""
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.base.errors import refused_locally
    from beamcrawl.transforms.parse import ParseSegment
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.segments import CONTENT, PARSE_PARTS
    with crawl.segment_update(segment, PARSE_PARTS, 'parse') as update:
        stage = ParseSegment(
            content_files=crawl.part_files(segment, CONTENT), update=update,
            settings=settings.parse_settings(cfg), policy=settings.url_policy(cfg), now=now)
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'ParseSegment' >> stage
        counters = run_pipeline(p, f'parse {segment}')
        denied = counters.get(metrics.PARSE_DENIED, 0)
        if denied and not counters.get(metrics.PARSE_OUTLINKS, 0):
            # Outlinks dropped by our own policy would be lost for good: nothing is published,
            # and parse can run again once the settings are right.
            raise refused_locally(f'outlink of segment {segment}', denied, 0,
                                  'nothing was published: run parse again with the settings '
                                  'of this crawl (beamcrawl config CRAWL_DIR)')
    statuses = {k.split('.', 2)[2]: v for k, v in counters.items()
                if k.startswith('parse.status.')}
    skipped = sum(v for k, v in counters.items() if k.startswith('parse.skipped.'))
    refused = (f'; {denied} outlinks refused by the address policy (http.address.allow)'
               if denied else '')
    print(f'parsed {crawl.segment(segment)}: ' + ', '.join(
        f'{v} {k}' for k, v in sorted(statuses.items())) + f'; {skipped} skipped' + refused)


if __name__ == '__main__':
    sys.exit(run_command('parse', sys.argv[1:]))
