"""Read the host database (Nutch's `readhostdb`): one host, a dump, or host names.

beamcrawl readhostdb CRAWL_DIR (--get HOST | --dump OUT [--format jsonl|csv] | --hostnames)
                     [--expr EXPR] [--now T]
--expr keeps the hosts for which EXPR holds, e.g. `fetch_failures > 3 or dnsFailures > 0`
(beamcrawl's expression language, not JEXL: docs/hostdb.md).
"""

import csv
import io
import json
import sys

from beamcrawl.pipelines.cli import run_command

# The CSV columns, in order (the metadata map and the sitemaps list are JSON columns; columns
# added later come last).
CSV_COLUMNS = ('host', 'unfetched', 'fetched', 'gone', 'redir_temp', 'redir_perm',
               'not_modified', 'duplicate', 'orphan', 'num_records', 'dns_failures',
               'connection_failures', 'fetch_failures', 'last_check', 'last_success',
               'last_failure', 'robots_denied', 'crawl_delay', 'homepage_url', 'metadata',
               'sitemap_urls', 'sitemap_count', 'sitemaps')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument('--get', metavar='HOST', help='print the HostDatum of HOST (exit 1 if none)')
    what.add_argument('--dump', metavar='OUT', help='write every HostDatum to directory OUT')
    what.add_argument('--hostnames', action='store_true', help='print the host names')
    parser.add_argument('--format', choices=('jsonl', 'csv'), default='jsonl',
                        help='--dump format (default jsonl)')
    parser.add_argument('--expr', metavar='EXPR', help='only hosts for which EXPR holds')


def csv_line(datum: dict) -> str:
    out = io.StringIO()
    row = dict(datum, num_records=_num_records(datum),
               metadata=json.dumps(datum['metadata'], sort_keys=True),
               sitemaps=json.dumps(datum['sitemaps'], ensure_ascii=False))
    csv.writer(out, lineterminator='').writerow([row[c] for c in CSV_COLUMNS])
    return out.getvalue()


def _num_records(datum: dict) -> int:
    from beamcrawl.transforms.policy.hostdb import COUNT_FIELDS
    return sum(datum[f] for f in COUNT_FIELDS)


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.base.errors import UserError
    from beamcrawl.transforms.policy.expressions import ExpressionError, compile_expression
    from beamcrawl.transforms.policy.hostdb import expression_env, is_field_name
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import iter_records
    from beamcrawl.transforms.storage.records import complete_host_datum
    crawl = CrawlLayout(args.crawl_dir)
    expr = None
    if args.expr is not None:
        try:
            expr = compile_expression(args.expr, is_field_name, '--expr')
        except ExpressionError as e:
            raise UserError(str(e)) from None
    if crawl.hostdb.readable_dir() is None:
        raise UserError(f'{crawl.hostdb.current}: no hostdb (run updatehostdb first)')
    host = args.get.strip().lower() if args.get else None
    if args.dump and fs.exists(args.dump):
        raise UserError(f'--dump {args.dump}: already exists')
    kept = (d for d in map(complete_host_datum, iter_records(crawl.hostdb.part_files()))
            if (host is None or d['host'] == host)
            and (expr is None or expr.test(expression_env(d, now))))
    if host is not None:
        for datum in kept:
            print(json.dumps(datum, ensure_ascii=False, sort_keys=True))
            return 0
        print(f'{args.get}: not in the hostdb', file=sys.stderr)
        return 1
    if args.hostnames:
        for datum in sorted(kept, key=lambda d: d['host']):
            print(datum['host'])
        return 0
    lines = sorted(kept, key=lambda d: d['host'])
    text = ('\n'.join([','.join(CSV_COLUMNS)] + [csv_line(d) for d in lines])
            if args.format == 'csv' else
            '\n'.join(json.dumps(d, ensure_ascii=False, sort_keys=True) for d in lines))
    fs.mkdirs(args.dump)
    name = f'part-00000.{args.format}'
    fs.write_file(fs.join(args.dump, name), (text + '\n').encode('utf-8') if text else b'',
                  replace=False)
    print(f'dumped {len(lines)} hosts to {fs.join(args.dump, name)}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('readhostdb', sys.argv[1:]))
