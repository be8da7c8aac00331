"""Invert the links of parsed segments into the linkdb (Nutch's `invertlinks`; alias `linkdb`).

beamcrawl invertlinks CRAWL_DIR [SEGMENT ...] [--normalize] [--filter] [--conf FILE]
                      [-D key=value] [beam options]
Default SEGMENTs: every parsed segment not inverted yet (the linkdb remembers which were).
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.dbio import ReadParts, db_update
from beamcrawl.transforms.errors import UserError
from beamcrawl.transforms.layout import CrawlLayout
from beamcrawl.transforms.linkdb import PARTITIONS_NOTE, UpdateLinkDb
from beamcrawl.transforms.policy.linkdb import LinkRules
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.runtime import make_pipeline, run_pipeline

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='segment names or paths (default: parsed, not inverted yet)')
    parser.add_argument('--normalize', action='store_true', help='normalize sources and targets')
    parser.add_argument('--filter', action='store_true', help='filter sources and targets')


def run(args, cfg, now, beam_args):
    try:
        rules = LinkRules.from_config(cfg)
    except ValueError as e:
        raise UserError(str(e)) from None
    crawl = CrawlLayout(args.crawl_dir)
    names, _ = crawl.segments_to_apply(crawl.linkdb, args.segments, 'crawl_parse')
    if not names:
        print('invertlinks: nothing to do (every parsed segment is inverted already)',
              file=sys.stderr)
        return 1
    normalize = cfg['linkdb.url.normalizers'] or args.normalize
    filter_urls = cfg['linkdb.url.filters'] or args.filter
    with db_update(crawl.linkdb, keep_backup=cfg['db.preserve.backup'],
                   command='invertlinks') as new_dir:
        inverted = crawl.linkdb.applied_segments()
        partitions = cfg['linkdb.partitions']
        old_files = crawl.linkdb.part_files()
        same_layout = crawl.linkdb.read_note(PARTITIONS_NOTE) == str(partitions)
        p = make_pipeline(beam_args)
        _ = (p
             | 'ReadParseData' >> ReadParts(
                 [f for n in names for f in crawl.part_files(n, 'parse_data')])
             | 'UpdateLinkDb' >> UpdateLinkDb(
                 rules=rules, policy=UrlPolicy.from_config(cfg), normalize=normalize,
                 filter_urls=filter_urls, partitions=partitions,
                 old_parts={i: f for i, f in enumerate(old_files)} if same_layout else {},
                 old_records=(None if same_layout or not old_files else
                              p | 'ReadOldLinkDb' >> ReadParts(old_files)),
                 out_dir=new_dir))
        counters = run_pipeline(p, 'invertlinks')
        crawl.linkdb.write_applied(new_dir, inverted + names)
        crawl.linkdb.write_note(new_dir, PARTITIONS_NOTE, str(partitions))
    print(f'invertlinks: inverted {", ".join(names)}; '
          f'{counters.get("linkdb.inverted_links", 0)} links')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('invertlinks', sys.argv[1:]))
