"""Count fetched pages per host, domain, public suffix or top-level domain (Nutch's
`domainstats`).

beamcrawl domainstats CRAWL_DIR [--mode host|domain|suffix|tld] [--all] [beam options]
Prints `count<TAB>group` for each group, the largest first, then the totals `count<TAB>FETCHED`
and `count<TAB>NOT_FETCHED`, as Nutch's DomainStatistics writes them (a page is fetched when its
crawldb status is db_fetched or db_notmodified). With --all each line is
`fetched<TAB>all<TAB>group`: the group's fetched pages and all its pages. Exit 0; 2 without a
crawldb.
"""

import functools
import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('--mode', choices=('host', 'domain', 'suffix', 'tld'), default='host',
                        help='what to count by (default host)')
    parser.add_argument('--all', action='store_true',
                        help='also count every page of each group, fetched or not')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.crawlstats import count_crawldb
    from beamcrawl.transforms.policy.crawlstats import domain_keys, ordered
    from beamcrawl.transforms.settings import url_policy
    keys_of = functools.partial(domain_keys, mode=args.mode, domains=url_policy(cfg).domains,
                                every=args.all)
    counts = count_crawldb(args.crawl_dir, cfg, beam_args, keys_of, 'domainstats')
    totals = {key: n for (kind, key), n in counts if kind == 'total'}
    fetched = {key: n for (kind, key), n in counts if kind == 'fetched'}
    if args.all:
        every = {key: n for (kind, key), n in counts if kind == 'all'}
        for n, group in sorted(((fetched.get(g, 0), g) for g in every),
                               key=lambda item: (-item[0], -every[item[1]], item[1])):
            print(f'{n}\t{every[group]}\t{group}')
    else:
        for n, group in ordered(fetched.items()):
            print(f'{n}\t{group}')
    for name in ('FETCHED', 'NOT_FETCHED'):
        print(f'{totals.get(name, 0)}\t{name}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('domainstats', sys.argv[1:]))
