"""Inject seed URLs into the crawldb (Nutch's `inject`).

beamcrawl inject CRAWL_DIR SEEDS [--overwrite | --update] [--no-filter] [--no-normalize]
                 [--filter-normalize-all] [--conf FILE] [-D key=value] [--now T] [beam options]
"""

import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms import settings
from beamcrawl.transforms.dbio import ReadCrawlDb, WriteParts
from beamcrawl.transforms.inject import Inject, seed_files
from beamcrawl.transforms.layout import CrawlLayout
from beamcrawl.transforms.records import CRAWL_DATUM_SCHEMA
from beamcrawl.transforms.runtime import make_pipeline, run_pipeline
from beamcrawl.transforms import metrics


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('seeds', metavar='SEEDS', help='seed file, or directory of seed files')
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument('--overwrite', action='store_true',
                      help='seeds replace existing records (db.injector.overwrite)')
    mode.add_argument('--update', action='store_true',
                      help='seeds update existing records (db.injector.update)')
    parser.add_argument('--no-filter', action='store_true', help='do not filter seed URLs')
    parser.add_argument('--no-normalize', action='store_true', help='do not normalize seed URLs')
    parser.add_argument('--filter-normalize-all', action='store_true',
                        help='also normalize and filter the records already in the crawldb')


def run(args, cfg, now, beam_args):
    crawl = CrawlLayout(args.crawl_dir)
    paths = seed_files(args.seeds)
    policy = settings.url_policy(cfg)
    rules = settings.inject_rules(cfg, overwrite=args.overwrite, update=args.update)
    with crawl.crawldb.update(keep_backup=cfg['db.preserve.backup'], command='inject') as new:
        p = make_pipeline(beam_args, cfg)
        _ = (p
             | 'ReadCrawlDb' >> ReadCrawlDb(crawl.crawldb)
             | 'Inject' >> Inject(seed_paths=paths, policy=policy, rules=rules, now=now,
                                  normalize=not args.no_normalize, filter_urls=not args.no_filter,
                                  filter_normalize_all=args.filter_normalize_all)
             | 'WriteCrawlDb' >> WriteParts(new.dir, CRAWL_DATUM_SCHEMA))
        counters = run_pipeline(p, 'inject')
    c = lambda name: counters.get(name, 0)  # noqa: E731
    print(f'inject: {c(metrics.INJECT_INJECTED)} injected, {c(metrics.INJECT_NEW)} new, '
          f'{c(metrics.INJECT_ALREADY_KNOWN)} already known, {c(metrics.INJECT_MERGED)} merged, '
          f'{c(metrics.INJECT_FILTERED)} filtered, {c(metrics.INJECT_MALFORMED)} malformed, '
          f'{c(metrics.INJECT_DUPLICATE)} duplicate; crawldb has {c(metrics.CRAWLDB_RECORDS)} '
          f'records')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('inject', sys.argv[1:]))
