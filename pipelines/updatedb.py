"""Merge fetch and parse results into the crawldb (Nutch's `updatedb`).

beamcrawl updatedb CRAWL_DIR [SEGMENT ...] [--no-additions] [--normalize] [--filter]
                   [--conf FILE] [-D key=value] [--now T] [beam options]
Default SEGMENTs: every fetched segment not applied yet (the crawldb remembers which were).
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='segment names or paths (default: fetched, not applied yet)')
    parser.add_argument('--no-additions', action='store_true',
                        help='do not add new URLs (db.update.additions.allowed=false)')
    parser.add_argument('--normalize', action='store_true', help='normalize every URL')
    parser.add_argument('--filter', action='store_true', help='filter every URL')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_PARSE
    from beamcrawl.transforms.updatedb import MapRules, UpdateCrawlDb
    rules = settings.update_rules(cfg, no_additions=args.no_additions)    # config errors first
    policy = settings.url_policy(cfg)
    crawl = CrawlLayout(args.crawl_dir)
    names, again = crawl.segments_to_apply(crawl.crawldb.applied_segments(),
                                         args.segments, CRAWL_FETCH)
    for name in again:
        log.warning('%s was applied before; applying it again', name)
    if not names:
        print('updatedb: nothing to do (every fetched segment is applied already)',
              file=sys.stderr)
        return 1
    with crawl.crawldb.update(keep_backup=cfg['db.preserve.backup'], command='updatedb') as new:
        applied = crawl.crawldb.applied_segments()
        stage = UpdateCrawlDb(
            crawldb=crawl.crawldb, out=new, now=now, partitions=cfg['crawldb.partitions'],
            segment_files=[f for n in names for part in (CRAWL_FETCH, CRAWL_PARSE)
                           if crawl.has_part(n, part) for f in crawl.part_files(n, part)],
            rules=rules,
            map_rules=MapRules(policy=policy,
                               purge_gone=cfg['db.update.purge.404'],
                               normalize=cfg['crawldb.url.normalizers'] or args.normalize,
                               filter_urls=cfg['crawldb.url.filters'] or args.filter))
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'UpdateCrawlDb' >> stage
        counters = run_pipeline(p, 'updatedb')
        new.write_applied(applied + names)
    statuses = {k.split('.', 2)[2]: v for k, v in counters.items()
                if k.startswith('updatedb.status.')}
    print(f'updatedb: applied {", ".join(names)}; {counters.get("updatedb.added", 0)} added, '
          f'{counters.get("updatedb.updated", 0)} updated; crawldb: ' +
          ', '.join(f'{v} {k}' for k, v in sorted(statuses.items())))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('updatedb', sys.argv[1:]))
