"""A crawl report people look at: one self-contained HTML page built from the crawl dir alone.

beamcrawl report CRAWL_DIR [-o report.html] [--top N] [beam options]
The crawldb by status, score and fetch interval, its URLs by discovery round, the top hosts and
domains with their fetched share, per fetch segment its pages per second, bytes, statuses,
slowest and most failing hosts, politeness gaps against the delay, robots.txt denials and
address-policy refusals, the change of pages fetched again, and the linkdb's in-degrees
(docs/report.md). One Beam pipeline gathers the figures (transforms/report.py). Exit 0 when
the page is written; 2 with one line without a crawldb.
"""

import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('-o', '--output', default='report.html', metavar='FILE',
                        help='the HTML file to write (default report.html; replaced whole)')
    parser.add_argument('--top', type=int, metavar='N',
                        help='entries of each top list (default report.top)')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.base.errors import UserError
    from beamcrawl.transforms.policy.report_html import render
    from beamcrawl.transforms.report import collect_report
    from beamcrawl.transforms.settings import url_policy
    from beamcrawl.transforms.storage import fs
    top = cfg['report.top'] if args.top is None else args.top
    if top < 1:
        raise UserError(f'--top {top}: expected a positive integer')
    data = collect_report(args.crawl_dir, cfg, beam_args, domains=url_policy(cfg).domains, top=top,
                          tolerance_ms=cfg['report.politeness.tolerance.ms'])
    data['schedule'] = cfg['db.fetch.schedule.class']
    page = render(data, crawl_dir=args.crawl_dir, now=now)
    try:
        fs.write_file(args.output, page.encode('utf-8'), replace=True)
    except OSError as e:
        raise UserError(f'{args.output}: cannot write ({e.strerror or e})') from None
    stats = data['crawldb']['stats']
    print(f'report of {stats["total"]} URLs and {len(data["segment_reports"])} segments '
          f'written to {args.output}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('report', sys.argv[1:]))
