"""Test URLs against a robots.txt (Nutch's `robotsparser`), with the crawl's robots rules.

beamcrawl robotsparser ROBOTS_FILE URLS_FILE [AGENT] [--conf FILE] [-D key=value]
ROBOTS_FILE is a local robots.txt or an http(s) URL; a URL is fetched as the fetcher fetches
robots.txt (redirects, http.robots.403.allow, the address policy; a server error means nothing
may be fetched, docs/nutch-differences.md D16). URLS_FILE holds one URL or path per line
(`-`: stdin). AGENT is a comma-separated list of agent names (default: http.agent.name, then
http.robots.agents; none: the `*` group). Prints, as Nutch does, `allowed:<TAB>URL` or
`not allowed:<TAB>URL` per line, after the agent names, the Crawl-delay and the Sitemap lines.
Exit 0; 2 when a file cannot be read.
"""

import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError


def add_arguments(parser):
    parser.add_argument('robots', metavar='ROBOTS_FILE', help='a robots.txt file or URL')
    parser.add_argument('urls', metavar='URLS_FILE', help='URLs or paths, one per line (- stdin)')
    parser.add_argument('agents', metavar='AGENT', nargs='?',
                        help='agent names, comma-separated (default: http.agent.name, '
                             'http.robots.agents)')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.checkers import robots_rules
    from beamcrawl.transforms.policy.robots import agent_names
    from beamcrawl.transforms.settings import check_settings
    if args.agents:
        names = agent_names('', args.agents.split(','))
    else:
        names = agent_names(cfg['http.agent.name'], cfg['http.robots.agents'])
    rules = robots_rules(args.robots, check_settings(cfg))
    if args.urls == '-':
        lines = sys.stdin.read().splitlines()
    else:
        from beamcrawl.transforms.base import compression
        try:
            with open(args.urls, 'rb') as f:
                raw = compression.read(f, compression.kind(args.urls))
            lines = raw.decode('utf-8', errors='replace').splitlines()
        except OSError as e:
            raise UserError(f'{args.urls}: cannot read ({e.strerror})') from None
        except compression.CompressionError as e:
            raise UserError(f'{args.urls}: {e}') from None
    print(f'Testing robots.txt for agent names: {",".join(names) or "* (any other agent)"}')
    names = names or ('*',)
    if rules.kind != 'parsed':
        print(f'robots.txt: {rules.kind.replace("_", " ")}'
              + (f' ({rules.reason})' if rules.reason else ''))
    delay = rules.crawl_delay(names)
    if delay is not None:
        print(f'Crawl-delay: {delay:g}')
    for sitemap in rules.sitemaps():
        print(f'Sitemap: {sitemap}')
    for line in lines:
        line = line.strip()
        if not line:
            continue
        url = line if '://' in line else 'http://robots.invalid/' + line.lstrip('/')
        verdict = 'allowed' if rules.allowed(url, names) else 'not allowed'
        print(f'{verdict}:\t{line}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('robotsparser', sys.argv[1:]))
