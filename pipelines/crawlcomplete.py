"""Count fetched and unfetched pages per host or domain: how complete the crawl of each is
(Nutch's `crawlcomplete`).

beamcrawl crawlcomplete CRAWL_DIR [--mode host|domain] [beam options]
Prints `count<TAB>group FETCHED` and `count<TAB>group UNFETCHED` lines, the largest first, as
Nutch's CrawlCompletionStats writes them (fetched: crawldb status db_fetched or
db_notmodified; every other status is unfetched). Exit 0; 2 without a crawldb.
"""

import functools
import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('--mode', choices=('host', 'domain'), default='host',
                        help='what to count by (default host)')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.crawlstats import count_crawldb
    from beamcrawl.transforms.policy.crawlstats import completion_keys, ordered
    from beamcrawl.transforms.settings import url_policy
    keys_of = functools.partial(completion_keys, mode=args.mode, domains=url_policy(cfg).domains)
    for n, key in ordered(count_crawldb(args.crawl_dir, cfg, beam_args, keys_of,
                                        'crawlcomplete')):
        print(f'{n}\t{key}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('crawlcomplete', sys.argv[1:]))
