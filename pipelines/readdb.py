"""Read the crawldb (Nutch's `readdb`): statistics, dumps, one URL, top scores.

beamcrawl readdb CRAWL_DIR (--stats [--json] | --dump OUT [--format jsonl|csv] [--status S]
                 [--regex RE] | --url URL | --top-n N OUT [--min-score X]) [beam options]
"""

import json
import os
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument('--stats', action='store_true', help='counts and statistics')
    what.add_argument('--dump', metavar='OUT', help='write records to directory OUT')
    what.add_argument('--url', metavar='URL', help='print one record (exit 1 if absent)')
    what.add_argument('--top-n', nargs=2, metavar=('N', 'OUT'),
                      help='write the N highest-scoring URLs to file OUT')
    parser.add_argument('--json', action='store_true', help='--stats as JSON')
    parser.add_argument('--format', choices=('jsonl', 'csv'), default='jsonl',
                        help='--dump format (default jsonl)')
    parser.add_argument('--status', help='--dump: only this status (e.g. db_fetched)')
    parser.add_argument('--regex', help='--dump: only URLs fully matching this regex')
    parser.add_argument('--min-score', type=float, default=0.0,
                        help='--top-n: skip scores below this (default 0)')


def run(args, cfg, now, beam_args):
    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems

    from beamcrawl.transforms.readdb import CSV_HEADER, DumpLines, FilterRecords, TopScores
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import ReadCrawlDb
    from beamcrawl.transforms.storage.records import STATUS_CODES
    crawl = CrawlLayout(args.crawl_dir)
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    if args.status and args.status.lower() not in STATUS_CODES:
        raise UserError(f'--status {args.status}: unknown (one of {", ".join(STATUS_CODES)})')
    if args.url:
        return _print_url(crawl, cfg, args.url)
    p = make_pipeline(beam_args, cfg)
    records = p | 'ReadCrawlDb' >> ReadCrawlDb(crawl.crawldb)
    if args.stats:
        return _stats(crawl, cfg, p, records, args.json)
    if args.dump:
        if fs.exists(args.dump):
            raise UserError(f'--dump {args.dump}: already exists')
        _ = (records
             | 'Select' >> FilterRecords(args.status, args.regex)
             | 'Format' >> DumpLines(args.format)
             | 'Write' >> beam.io.WriteToText(
                 FileSystems.join(args.dump, 'part'), file_name_suffix=f'.{args.format}',
                 shard_name_template='-SSSSS',
                 header=CSV_HEADER if args.format == 'csv' else None))
        run_pipeline(p, 'readdb --dump')
        print(f'dumped to {args.dump}')
        return 0
    n, out = args.top_n
    out = out if '://' in out else os.path.abspath(out)   # workers write it
    if not n.isdigit() or int(n) < 1:
        raise UserError(f'--top-n {n}: expected a positive integer')
    _ = (records
         | 'Top' >> TopScores(int(n), args.min_score)
         | 'Write' >> beam.io.WriteToText(out, shard_name_template='', num_shards=1))
    run_pipeline(p, 'readdb --top-n')
    print(f'top {n} written to {out}')
    return 0


def _stats(crawl, cfg, p, records, as_json):
    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems

    from beamcrawl.transforms.readdb import CrawlDbStats, format_stats
    from beamcrawl.transforms.runners.runtime import run_pipeline
    from beamcrawl.transforms.storage import fs
    scratch = crawl.scratch_dir('readdb-stats')
    _ = (records
         | 'Stats' >> CrawlDbStats(cfg['db.stats.score.quantiles'])
         | 'Json' >> beam.Map(json.dumps)
         | 'Write' >> beam.io.WriteToText(FileSystems.join(scratch, 'stats'), num_shards=1))
    try:
        run_pipeline(p, 'readdb --stats')
        lines = []
        for path in fs.list_files(FileSystems.join(scratch, 'stats*')):
            with FileSystems.open(path) as f:
                lines += f.read().decode('utf-8').splitlines()
    finally:
        fs.delete(scratch)
    stats = json.loads(lines[0])
    print(json.dumps(stats, indent=1) if as_json else '\n'.join(format_stats(stats)))
    return 0


def _print_url(crawl, cfg, url):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.readdb import find_url, format_datum
    from beamcrawl.transforms.storage.parts import iter_records
    from beamcrawl.transforms.storage.records import complete_datum
    record = find_url(iter_records(crawl.crawldb.part_files()), url, settings.url_policy(cfg))
    if record is None:
        print(f'URL: {url}\nnot found')
        return 1
    print('\n'.join(format_datum(complete_datum(record))))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('readdb', sys.argv[1:]))
