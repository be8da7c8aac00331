"""Normalize URLs as the crawl does (Nutch's `normalizerchecker`), with the rules that changed
them.

beamcrawl normalizerchecker [CRAWL_DIR] [--urls FILE] [--conf FILE] [-D key=value] < URLS
Reads one URL per line from stdin (or --urls FILE) and prints its normalized form, then a tab
and what changed it: `basic` (the basic normalizer: case, default port, dot segments, percent
escapes, IDN) and each regex rule of urlnormalizer.regex.file that changed it, or `unchanged`.
A URL that cannot be normalized prints `!URL` and why. With CRAWL_DIR, the settings the crawl
directory recorded apply. Exit 0; 2 when the rules cannot be read.
"""

import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.pipelines.filterchecker import url_lines


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR', nargs='?',
                        help='a crawl directory: its recorded settings apply')
    parser.add_argument('--urls', metavar='FILE', help='read the URLs from FILE, not stdin')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.policy.urlparts import MalformedUrl
    policy = settings.url_policy(cfg)
    for url in url_lines(args.urls):
        try:
            normalized, steps = policy.explain_normalize(url)
        except MalformedUrl as e:
            print(f'!{url}\tmalformed: {e}', flush=True)
            continue
        if not normalized:
            print(f'!{url}\tnormalized to nothing (dropped)', flush=True)
            continue
        print(f'{normalized}\t{", ".join(steps) or "unchanged"}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(run_command('normalizerchecker', sys.argv[1:]))
