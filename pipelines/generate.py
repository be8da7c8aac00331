"""Select due URLs from the crawldb into new segments (Nutch's `generate`).

beamcrawl generate CRAWL_DIR [--top-n N] [--num-fetchers K] [--max-num-segments M] [--no-filter]
                   [--conf FILE] [-D key=value] [--now T] [beam options]
Prints each new segment's path; exits 1 when nothing is due (no segment is made).
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms import layout
from beamcrawl.transforms.dbio import ReadCrawlDb, WriteParts
from beamcrawl.transforms.errors import UserError
from beamcrawl.transforms.generate import MarkGenerated, SelectForFetch, WriteFetchLists, publish_fetch_lists
from beamcrawl.transforms.layout import CrawlLayout
from beamcrawl.transforms.policy.generate import GenerateSettings, segment_names
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.records import CRAWL_DATUM_SCHEMA
from beamcrawl.transforms.runtime import make_pipeline, run_pipeline

log = logging.getLogger('beamcrawl')


def _positive(text):
    if not text.isdigit() or int(text) < 1:
        raise UserError(f'expected a positive integer, got {text!r}')
    return int(text)


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('--top-n', metavar='N', help='at most N URLs per segment (exact)')
    parser.add_argument('--num-fetchers', metavar='K', default='1',
                        help='fetch-list parts per segment (default 1)')
    parser.add_argument('--max-num-segments', metavar='M', default='1',
                        help='segments to fill; overflow goes to the next (default 1)')
    parser.add_argument('--no-filter', action='store_true', help='do not apply URL filters')


def run(args, cfg, now, beam_args):
    top_n = _positive(args.top_n) if args.top_n is not None else None
    num_parts, max_segments = _positive(args.num_fetchers), _positive(args.max_num_segments)
    crawl = CrawlLayout(args.crawl_dir)
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    policy = UrlPolicy.from_config(cfg)
    try:
        settings = GenerateSettings.from_config(cfg)
    except ValueError as e:
        raise UserError(str(e)) from None
    update = cfg['generate.update.crawldb']
    with crawl.crawldb.lock('generate'):
        crawl.crawldb.recover()
        names = segment_names(crawl.segment_names(), now, max_segments)
        part_dirs = {i + 1: crawl.part_tmp_dir(n, 'crawl_generate') for i, n in enumerate(names)}
        new_db = crawl.crawldb.new_version_dir() if update else None
        p = make_pipeline(beam_args)
        db = p | 'ReadCrawlDb' >> ReadCrawlDb(crawl.crawldb)
        selected = db | 'SelectForFetch' >> SelectForFetch(
            settings=settings, policy=policy, now=now, top_n=top_n,
            max_count=cfg['generate.max.count'], count_mode=cfg['generate.count.mode'],
            max_segments=max_segments, filter_urls=cfg['generate.filter'] and not args.no_filter)
        _ = selected | 'WriteFetchLists' >> WriteFetchLists(
            part_dirs=part_dirs, num_parts=num_parts, mode=cfg['partition.url.mode'],
            policy=policy)
        if update:
            _ = (db | 'MarkGenerated' >> MarkGenerated(selected=selected, now=now)
                 | 'WriteCrawlDb' >> WriteParts(new_db, CRAWL_DATUM_SCHEMA))
        try:
            counters = run_pipeline(p, 'generate')
            made = publish_fetch_lists(crawl, names, num_parts)
            if update and made:
                crawl.crawldb.install(new_db, keep_backup=cfg['db.preserve.backup'])
        except BaseException:
            for name in names:
                if not crawl.has_part(name, 'crawl_generate'):
                    layout.delete(crawl.segment(name))
            raise
        finally:
            if new_db:
                layout.delete(new_db)     # gone already when installed
    for path in made:
        print(path)
    log.info('generate: %d selected of %d due into %d segment(s)',
             counters.get('generate.selected', 0), counters.get('generate.due', 0), len(made))
    if not made:
        log.info('generate: 0 records selected, no segment made')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(run_command('generate', sys.argv[1:]))
