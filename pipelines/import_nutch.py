"""Bring a Nutch 1.x crawl over: its crawldb, linkdb and segments, in beamcrawl's layout.

beamcrawl import-nutch NUTCH_CRAWL_DIR CRAWL_DIR [--conf FILE] [-D key=value] [beam options]
NUTCH_CRAWL_DIR holds Nutch's crawldb/, linkdb/ and segments/ (only read); CRAWL_DIR must be
empty or absent. docs/import-nutch.md.
"""

import contextlib
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError

_EMPTY_DIRS = ('crawldb', 'linkdb', 'segments')


def add_arguments(parser):
    parser.add_argument('nutch_dir', metavar='NUTCH_CRAWL_DIR',
                        help="Nutch's crawl directory (crawldb/, linkdb/, segments/)")
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR', help='the new crawl (empty or absent)')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.importnutch import SEGMENT_ORDER, ImportNutch, find_nutch_crawl
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import SITE_CONF, CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH, PARSE_DATA
    crawl = CrawlLayout(args.crawl_dir)
    source = args.nutch_dir.rstrip('/')
    if crawl.root == source or crawl.root.startswith(source + '/'):
        raise UserError(f'{crawl.root}: inside the Nutch crawl {source}, which is only read: '
                        f'name a CRAWL_DIR outside it')
    # What a failed import leaves is not data: the three directories, empty, and the site
    # settings it was given (crawl-dir.md, "Site settings").
    left = [n for n in fs.entries(crawl.root) if n != SITE_CONF]
    if any(n not in _EMPTY_DIRS or fs.entries(fs.join(crawl.root, n)) for n in left):
        raise UserError(f'{crawl.root}: not empty; import-nutch writes a new crawl directory '
                        f'(name an empty or absent one; after an import killed midway, delete it)')
    nutch = find_nutch_crawl(source)
    keep = cfg['db.preserve.backup']
    with contextlib.ExitStack() as stack:      # exits last-in first: segments, linkdb, crawldb
        crawldb = stack.enter_context(crawl.crawldb.update(keep_backup=keep,
                                                           command='import-nutch'))
        crawldb.write_applied([n for n, p in nutch.segments.items() if CRAWL_FETCH in p])
        linkdb = None
        if nutch.linkdb:
            linkdb = stack.enter_context(crawl.linkdb.update(keep_backup=keep,
                                                             command='import-nutch'))
            linkdb.write_applied([n for n, p in nutch.segments.items() if PARSE_DATA in p])
        segments = {}
        for name, parts in nutch.segments.items():
            update = stack.enter_context(crawl.segment_update(
                name, [p for p in SEGMENT_ORDER if p in parts], 'import-nutch'))
            segments[name] = update.tmp
        stage = ImportNutch(nutch=nutch, crawldb=crawldb, linkdb=linkdb, segments=segments,
                            crawldb_partitions=cfg['crawldb.partitions'],
                            linkdb_partitions=cfg['linkdb.partitions'])
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'ImportNutch' >> stage
        counters = run_pipeline(p, 'import-nutch')
    c = lambda part: counters.get(metrics.IMPORT_RECORDS + part, 0)  # noqa: E731
    parts = ', '.join(f'{part} {c(part)}' for part in SEGMENT_ORDER)
    print(f'import-nutch: {source} -> {crawl.root}: crawldb {c("crawldb")} URLs, linkdb '
          f'{c("linkdb")} URLs, {len(nutch.segments)} segments ({parts} records); '
          f'{counters.get(metrics.IMPORT_DUPLICATES, 0)} duplicate URLs, '
          f'{counters.get(metrics.IMPORT_CONTENT_UNMATCHED, 0)} content records without '
          f'crawl_fetch')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('import-nutch', sys.argv[1:]))
