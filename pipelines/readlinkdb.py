"""Read the linkdb (Nutch's `readlinkdb`): the inlinks of one URL, or a dump.

beamcrawl readlinkdb CRAWL_DIR (--url URL | --dump OUT [--format jsonl|text]) [beam options]
"""

import json
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument('--url', metavar='URL', help='print the inlinks of URL (exit 1 if none)')
    what.add_argument('--dump', metavar='OUT', help='write every entry to directory OUT')
    parser.add_argument('--format', choices=('jsonl', 'text'), default='jsonl',
                        help='--dump format (default jsonl)')


def text_lines(record) -> str:
    """Nutch's dump form: `url<TAB>Inlinks:` then one ` fromUrl: … anchor: …` line each."""
    return '\n'.join([f'{record["url"]}\tInlinks:'] + [
        f' fromUrl: {i["from_url"]} anchor: {i["anchor"]}' for i in record['inlinks']])


def run(args, cfg, now, beam_args):
    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems

    from beamcrawl.transforms import settings
    from beamcrawl.transforms.readdb import find_url
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import ReadCounted, iter_records
    crawl = CrawlLayout(args.crawl_dir)
    if crawl.linkdb.readable_dir() is None:
        raise UserError(f'{crawl.linkdb.current}: no linkdb (run invertlinks first)')
    if args.url:
        record = find_url(iter_records(crawl.linkdb.part_files()), args.url,
                          settings.url_policy(cfg))
        if record is not None:
            print(text_lines(record))
            return 0
        print(f'{args.url} - no link information.')
        return 1
    if fs.exists(args.dump):
        raise UserError(f'--dump {args.dump}: already exists')
    p = make_pipeline(beam_args, cfg)
    fmt = args.format
    _ = (p
         | 'ReadLinkDb' >> ReadCounted(crawl.linkdb.part_files(), 'linkdb')
         | 'Format' >> beam.Map(lambda r: text_lines(r) if fmt == 'text'
                                else json.dumps(r, ensure_ascii=False, sort_keys=True))
         | 'Write' >> beam.io.WriteToText(FileSystems.join(args.dump, 'part'),
                                          file_name_suffix=f'.{fmt if fmt == "jsonl" else "txt"}',
                                          shard_name_template='-SSSSS'))
    run_pipeline(p, 'readlinkdb --dump')
    print(f'dumped to {args.dump}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('readlinkdb', sys.argv[1:]))
