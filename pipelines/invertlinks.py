"""Invert the links of parsed segments into the linkdb (Nutch's `invertlinks`; alias `linkdb`).

beamcrawl invertlinks CRAWL_DIR [SEGMENT ...] [--normalize] [--filter] [--conf FILE]
                      [-D key=value] [beam options]
Default SEGMENTs: every parsed segment not inverted yet (the linkdb remembers which were).
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='segment names or paths (default: parsed, not inverted yet)')
    parser.add_argument('--normalize', action='store_true', help='normalize sources and targets')
    parser.add_argument('--filter', action='store_true', help='filter sources and targets')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.invertlinks import InvertLinks
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_PARSE, PARSE_DATA
    rules = settings.link_rules(cfg)          # a config error comes before "nothing to do"
    crawl = CrawlLayout(args.crawl_dir)
    names, _ = crawl.segments_to_apply(crawl.linkdb.applied_segments(), args.segments,
                                     CRAWL_PARSE)
    if not names:
        print('invertlinks: nothing to do (every parsed segment is inverted already)',
              file=sys.stderr)
        return 1
    with crawl.linkdb.update(keep_backup=cfg['db.preserve.backup'], command='invertlinks') as new:
        inverted = crawl.linkdb.applied_segments()
        stage = InvertLinks(
            linkdb=crawl.linkdb, out=new, rules=rules,
            parse_data_files=[f for n in names for f in crawl.part_files(n, PARSE_DATA)],
            policy=settings.url_policy(cfg), partitions=cfg['linkdb.partitions'],
            normalize=cfg['linkdb.url.normalizers'] or args.normalize,
            filter_urls=cfg['linkdb.url.filters'] or args.filter)
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'InvertLinks' >> stage
        counters = run_pipeline(p, 'invertlinks')
        new.write_applied(inverted + names)
    print(f'invertlinks: inverted {", ".join(names)}; '
          f'{counters.get("linkdb.inverted_links", 0)} links')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('invertlinks', sys.argv[1:]))
