"""Check URLs against the URL filters (Nutch's `filterchecker`), with the rule that decided.

beamcrawl filterchecker [CRAWL_DIR] [--normalize] [--conf FILE] [-D key=value] < URLS
Reads one URL per line from stdin (or --urls FILE) and prints, as Nutch does, `+URL` when the
filters accept it and `-URL` when they reject it, then a tab and what decided: the scheme list
(urlfilter.scheme.allowed), the regex rule with its file and line (urlfilter.regex.file), or the
address policy (http.address.deny), which refuses a URL before any filter is asked. With
CRAWL_DIR, the settings the crawl directory recorded apply. Exit 0; 2 when the rules cannot be
read.
"""

import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR', nargs='?',
                        help='a crawl directory: its recorded settings apply')
    parser.add_argument('--urls', metavar='FILE', help='read the URLs from FILE, not stdin')
    parser.add_argument('--normalize', action='store_true',
                        help='normalize each URL first (as inject and outlinks do)')


def url_lines(path):
    """The non-empty, stripped lines of `path` (stdin when None), one at a time; a file named
    .gz, .bz2, .xz, .zst ... is read decompressed (transforms/base/compression.py)."""
    from beamcrawl.transforms.base import compression
    how = compression.kind(path) if path else None
    if how:
        yield from _compressed_lines(path, how)
        return
    stream = open(path, encoding='utf-8', errors='replace') if path else sys.stdin
    try:
        for line in stream:
            line = line.strip()
            if line:
                yield line
    finally:
        if path:
            stream.close()


def _compressed_lines(path, how):
    from beamcrawl.transforms.base import compression
    from beamcrawl.transforms.base.errors import UserError
    try:
        with open(path, 'rb') as f:
            for raw in compression.lines(f, how):
                line = raw.decode('utf-8', errors='replace').strip()
                if line:
                    yield line
    except compression.CompressionError as e:
        raise UserError(f'{path}: {e}') from None


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.policy.urlparts import MalformedUrl
    policy = settings.url_policy(cfg)
    for url in url_lines(args.urls):
        checked = url
        if args.normalize:
            try:
                checked = policy.normalize(url)
            except MalformedUrl as e:
                print(f'-{url}\tmalformed: {e}', flush=True)
                continue
        accepted, why = policy.explain_filter(checked)
        print(f'{"+" if accepted else "-"}{checked}\t{why}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(run_command('filterchecker', sys.argv[1:]))
