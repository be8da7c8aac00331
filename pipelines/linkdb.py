"""Invert the links of parsed segments into the linkdb (Nutch's `invertlinks`; alias `linkdb`).

beamcrawl invertlinks CRAWL_DIR [SEGMENT ...] [--normalize] [--filter] [--conf FILE]
                      [-D key=value] [beam options]
Default SEGMENTs: every parsed segment not inverted yet (the linkdb remembers which were).
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms import layout, settings
from beamcrawl.transforms.dbio import ReadParts
from beamcrawl.transforms.layout import CrawlLayout
from beamcrawl.transforms.linkdb import PARTITIONS_NOTE, UpdateLinkDb
from beamcrawl.transforms.runtime import make_pipeline, run_pipeline

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='segment names or paths (default: parsed, not inverted yet)')
    parser.add_argument('--normalize', action='store_true', help='normalize sources and targets')
    parser.add_argument('--filter', action='store_true', help='filter sources and targets')


def run(args, cfg, now, beam_args):
    rules = settings.link_rules(cfg)
    crawl = CrawlLayout(args.crawl_dir)
    names, _ = crawl.segments_to_apply(crawl.linkdb, args.segments, layout.CRAWL_PARSE)
    if not names:
        print('invertlinks: nothing to do (every parsed segment is inverted already)',
              file=sys.stderr)
        return 1
    normalize = cfg['linkdb.url.normalizers'] or args.normalize
    filter_urls = cfg['linkdb.url.filters'] or args.filter
    with crawl.linkdb.update(keep_backup=cfg['db.preserve.backup'], command='invertlinks') as new:
        inverted = crawl.linkdb.applied_segments()
        partitions = cfg['linkdb.partitions']
        old_files = crawl.linkdb.part_files()
        same_layout = crawl.linkdb.read_note(PARTITIONS_NOTE) == str(partitions)
        p = make_pipeline(beam_args, cfg)
        _ = (p
             | 'ReadParseData' >> ReadParts(
                 [f for n in names for f in crawl.part_files(n, layout.PARSE_DATA)])
             | 'UpdateLinkDb' >> UpdateLinkDb(
                 rules=rules, policy=settings.url_policy(cfg), normalize=normalize,
                 filter_urls=filter_urls, partitions=partitions,
                 old_parts={i: f for i, f in enumerate(old_files)} if same_layout else {},
                 old_records=(None if same_layout or not old_files else
                              p | 'ReadOldLinkDb' >> ReadParts(old_files)),
                 out_dir=new.dir))
        counters = run_pipeline(p, 'invertlinks')
        crawl.linkdb.write_applied(new.dir, inverted + names)
        crawl.linkdb.write_note(new.dir, PARTITIONS_NOTE, str(partitions))
    print(f'invertlinks: inverted {", ".join(names)}; '
          f'{counters.get("linkdb.inverted_links", 0)} links')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('invertlinks', sys.argv[1:]))
