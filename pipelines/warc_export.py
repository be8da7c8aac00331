"""Build WARC files from the stored content of segments fetched without fetcher.store.warc.

beamcrawl warc-export CRAWL_DIR [SEGMENT ...] OUT
Writes OUT/<segment>.warc.gz per segment (default: every segment with content): a warcinfo
record, then one response record per content record, marked as reconstructed
(WARC-Beamcrawl-Reconstructed): the headers and body are those stored, not the bytes that were
on the wire. OUT must not exist yet. docs/warc.md.
"""

import os
import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('paths', nargs='+', metavar='SEGMENT ... OUT',
                        help='segments (names or paths; default: all with content), then the '
                             'output directory')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.base.errors import UserError
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import iter_records
    from beamcrawl.transforms.storage.segments import CONTENT
    from beamcrawl.transforms.storage.warc import (reconstructed_records, warcinfo_fields,
                                                   write_warc_file)
    *requested, out = args.paths
    out = os.path.abspath(out)
    if os.path.exists(out):
        raise UserError(f'{out}: exists; name a new directory for the WARC files')
    crawl = CrawlLayout(args.crawl_dir)
    segments = crawl.segments_having(CONTENT, requested)
    from beamcrawl.transforms.base.progress import Loop
    from beamcrawl.transforms.storage.parts import count_records
    os.makedirs(out)
    agent = cfg['http.agent.name'] or 'unknown'
    total = 0
    shown = Loop('warc-export', sum(count_records(crawl.part_files(n, CONTENT))
                                    for n in segments), 'records', cfg['runner.progress.seconds'])

    def counted(records):
        for record in records:
            shown.add()
            yield record
    for name in segments:
        path = os.path.join(out, f'{name}.warc.gz')
        partial = os.path.join(out, f'.{name}.warc.gz.partial')   # renamed once complete
        info = warcinfo_fields(name, agent, description=(
            'reconstructed by beamcrawl warc-export from the stored content records: HTTP '
            'headers and bodies as stored, not as they were on the wire'))
        records = iter_records(crawl.part_files(name, CONTENT))
        total += write_warc_file(partial, info, now,
                                 (reconstructed_records(r) for r in counted(records)),
                                 lambda p: open(p, 'wb'))
        os.replace(partial, path)
    shown.end()
    print(f'exported {total} response records from {len(segments)} segments to {out}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('warc-export', sys.argv[1:]))
