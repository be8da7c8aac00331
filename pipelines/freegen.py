"""A segment straight from files of URLs, without the crawldb (Nutch's `freegen`).

beamcrawl freegen CRAWL_DIR URLS [--filter] [--normalize] [--num-fetchers K]
                  [--conf FILE] [-D key=value] [--now T] [beam options]
URLS: a text file of URLs (one a line, inject's seed format) or a directory of such files.
Prints the new segment's path; `fetch` and `parse` then work on it, and `updatedb` adds its
URLs to the crawldb. Exits 1 when no URL is left (no segment is made).
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError

log = logging.getLogger('beamcrawl')


def _positive(text):
    if not text.isdigit() or int(text) < 1:
        raise UserError(f'--num-fetchers: expected a positive integer, got {text!r}')
    return int(text)


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('urls', metavar='URLS', help='file of URLs, or directory of such files')
    parser.add_argument('--filter', action='store_true', help='filter the URLs')
    parser.add_argument('--normalize', action='store_true', help='normalize the URLs')
    parser.add_argument('--num-fetchers', metavar='K', default='1',
                        help='fetch-list parts (default 1)')


def run(args, cfg, now, beam_args):
    from beamcrawl.pipelines.inject import refused_all_seeds
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.freegen import FreeGenerate
    from beamcrawl.transforms.generate import complete_fetch_lists
    from beamcrawl.transforms.inject import seed_files
    from beamcrawl.transforms.policy.generate import segment_names
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_GENERATE
    num_parts = _positive(args.num_fetchers)
    paths = seed_files(args.urls)
    policy = settings.url_policy(cfg)          # config errors first
    rules = settings.inject_rules(cfg)
    crawl = CrawlLayout(args.crawl_dir)
    name = segment_names(crawl.segment_names(), now, 1)[0]
    with crawl.segment_update(name, (CRAWL_GENERATE,), 'freegen') as update:
        stage = FreeGenerate(url_paths=paths, part_dir=update.tmp[CRAWL_GENERATE],
                             num_parts=num_parts, mode=cfg['partition.url.mode'],
                             policy=policy, rules=rules, now=now, normalize=args.normalize,
                             filter_urls=args.filter)
        p = make_pipeline(beam_args, cfg)
        _ = p | 'FreeGenerate' >> stage
        counters = run_pipeline(p, 'freegen')
        complete_fetch_lists([update], num_parts)
    c = lambda name: counters.get(name, 0)  # noqa: E731
    log.info('freegen: %d URLs (%d lines: %d malformed, %d filtered, %d refused by the address '
             'policy, %d duplicate)', c(metrics.MERGE_WRITTEN), c(metrics.INJECT_LINES),
             c(metrics.INJECT_MALFORMED), c(metrics.INJECT_FILTERED), c(metrics.INJECT_DENIED),
             c(metrics.INJECT_DUPLICATE))
    if update.abandoned:
        refused_all_seeds(counters)
        print('freegen: no URL to fetch; no segment made', file=sys.stderr)
        return 1
    print(crawl.segment(name))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('freegen', sys.argv[1:]))
