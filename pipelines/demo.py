"""A complete demo crawl against the bundled demo web, served on loopback by this process.

beamcrawl demo CRAWL_DIR [--rounds N] [beam options]
Serves www.demo.test, blog.demo.test and shop.demo.test through one loopback port (as an HTTP
proxy), injects the demo seeds, crawls N rounds (one simulated day apart, adaptive schedule,
indexing each round), prints `readdb --stats` and searches the index for one query.
"""

import sys
import time

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.testing.demosite import DEMO_SEEDS, demo_sites
from beamcrawl.transforms.testing.web import TestWeb

DEMO_QUERY = 'products'


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('--rounds', type=int, default=3, help='rounds to crawl (default 3)')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.storage import fs
    seeds = fs.join(args.crawl_dir, 'seeds.txt')     # the crawl directory may be on HDFS, S3
    fs.mkdirs(args.crawl_dir)
    fs.write_file(seeds, DEMO_SEEDS.encode('utf-8'), replace=True)
    with TestWeb(demo_sites()) as web:
        settings = {'http.agent.name': 'beamcrawl-demo', 'http.proxy.host': '127.0.0.1',
                    'http.proxy.port': web.port, 'fetcher.server.delay': 0.5,
                    'domain.extra.suffixes': 'test', 'db.fetch.schedule.class': 'adaptive',
                    'db.fetch.interval.default': 86400}
        defines = [arg for key, value in settings.items() for arg in ('-D', f'{key}={value}')]
        for define in args.defines:
            defines += ['-D', define]
        conf = ['--conf', args.conf] if args.conf else []
        started = time.time()
        code = run_command('crawl', [args.crawl_dir, '--seeds', seeds, '--rounds',
                                     str(args.rounds), '--now', str(now), '--round-interval',
                                     '86400', '--index', *defines, *conf, *beam_args])
    if code != 0:
        return code
    print(f'demo: {args.rounds} rounds in {time.time() - started:.0f} s; the crawl is in '
          f'{args.crawl_dir}')
    code = run_command('readdb', [args.crawl_dir, '--stats', *conf, *beam_args])
    if code == 0:
        print(f'\n$ beamcrawl search {args.crawl_dir} {DEMO_QUERY}')
        code = run_command('search', [args.crawl_dir, DEMO_QUERY, '--top', '3', *conf,
                                      *beam_args])
    return code


if __name__ == '__main__':
    sys.exit(run_command('demo', sys.argv[1:]))
