"""Count the crawldb's pages by their last protocol outcome (Nutch's `protocolstats`).

beamcrawl protocolstats CRAWL_DIR [--by code|status] [beam options]
Prints `count<TAB>value`, the largest first: by the last HTTP code of each page (Nutch's
ProtocolStatusStatistics, which counts `nutch.protocol.code`), or with `--by status` by its last
protocol status (success, notfound, gone, moved, exception, robots_denied, ...). A page whose
last attempt got no HTTP answer counts by its status name in both; a page never attempted
counts as UNFETCHED. Exit 0; 2 without a crawldb.
"""

import functools
import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('--by', choices=('code', 'status'), default='code',
                        help='count by HTTP code (default) or by protocol status')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.crawlstats import count_crawldb
    from beamcrawl.transforms.policy.crawlstats import ordered, protocol_keys
    keys_of = functools.partial(protocol_keys, by=args.by)
    for n, key in ordered(count_crawldb(args.crawl_dir, cfg, beam_args, keys_of,
                                        'protocolstats')):
        print(f'{n}\t{key}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('protocolstats', sys.argv[1:]))
