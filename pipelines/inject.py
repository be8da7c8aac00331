"""Inject seed URLs into the crawldb (Nutch's `inject`).

beamcrawl inject CRAWL_DIR SEEDS [--overwrite | --update] [--no-filter] [--no-normalize]
                 [--filter-normalize-all] [--conf FILE] [-D key=value] [--now T] [beam options]
"""

import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import refused_locally


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
    from beamcrawl.transforms.inject import seed_files
    from beamcrawl.transforms.storage.layout import CrawlLayout
    counters = inject_files(CrawlLayout(args.crawl_dir), seed_files(args.seeds), cfg, now,
                            beam_args, overwrite=args.overwrite, update=args.update,
                            normalize=not args.no_normalize, filter_urls=not args.no_filter,
                            clean_old=args.filter_normalize_all)
    print_summary('inject', counters)
    refused_all_seeds(counters)
    return 0


def refused_all_seeds(counters) -> None:
    """Exit 2 when seeds were read and every one was refused by local settings."""
    from beamcrawl.transforms.base import metrics
    denied = counters.get(metrics.INJECT_DENIED, 0)
    filtered = counters.get(metrics.INJECT_FILTERED, 0)
    if counters.get(metrics.INJECT_INJECTED, 0) == 0 and denied + filtered > 0:
        raise refused_locally('seed', denied, filtered, 'none was injected')


def inject_files(crawl, paths, cfg, now, beam_args, *, overwrite=False, update=False,
                 normalize=True, filter_urls=True, clean_old=False, command='inject'):
    """Injects seed files into the crawl's crawldb (one update, under its lock); returns the
    counters."""
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.inject import Inject
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    policy = settings.url_policy(cfg)          # config errors before the crawldb is locked
    rules = settings.inject_rules(cfg, overwrite=overwrite, update=update)
    with crawl.crawldb.update(keep_backup=cfg['db.preserve.backup'], command=command) as new:
        stage = Inject(crawldb=crawl.crawldb, out=new, seed_paths=paths, policy=policy,
                       rules=rules, now=now, partitions=cfg['crawldb.partitions'],
                       normalize=normalize,
                       filter_urls=filter_urls, filter_normalize_all=clean_old)
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'Inject' >> stage
        return run_pipeline(p, command)


def print_summary(what, counters):
    from beamcrawl.transforms.base import metrics
    c = lambda name: counters.get(name, 0)  # noqa: E731
    print(f'{what}: {c(metrics.INJECT_INJECTED)} injected, {c(metrics.INJECT_NEW)} new, '
          f'{c(metrics.INJECT_ALREADY_KNOWN)} already known, {c(metrics.INJECT_MERGED)} merged, '
          f'{c(metrics.INJECT_FILTERED)} filtered, {c(metrics.INJECT_DENIED)} refused by the '
          f'address policy, {c(metrics.INJECT_MALFORMED)} malformed, '
          f'{c(metrics.INJECT_DUPLICATE)} duplicate; crawldb has {c(metrics.CRAWLDB_RECORDS)} '
          f'records')


if __name__ == '__main__':
    sys.exit(run_command('inject', sys.argv[1:]))
