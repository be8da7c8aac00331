"""Mark pages with the same content as duplicates (Nutch's `dedup`).

beamcrawl dedup CRAWL_DIR [--conf FILE] [-D key=value] [beam options]
Of the fetched pages (db_fetched, db_notmodified) that share a signature, the one with the
highest score (then the shortest URL, then the earliest fetch time) stays; the others become
db_duplicate in the crawldb, and `index` removes them from the index. `index` runs this first.
"""

import sys
from typing import TYPE_CHECKING

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError

if TYPE_CHECKING:
    from beamcrawl.transforms.storage.layout import CrawlLayout


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')


def mark_duplicates(crawl: 'CrawlLayout', cfg, beam_args) -> int:
    """Runs the dedup pipeline on the crawldb; returns how many pages it marked."""
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.dedup import Dedup
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    with crawl.crawldb.update(keep_backup=cfg['db.preserve.backup'], command='dedup') as new:
        stage = Dedup(crawldb=crawl.crawldb, out=new)
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'Dedup' >> stage
        counters = run_pipeline(p, 'dedup')
        if not counters.get(metrics.DEDUP_DUPLICATES):
            new.discard()                 # nothing changed: keep the current version
    marked = counters.get(metrics.DEDUP_DUPLICATES, 0)
    print(f'dedup: {marked} pages marked db_duplicate')
    return marked


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.storage.layout import CrawlLayout
    mark_duplicates(CrawlLayout(args.crawl_dir), cfg, beam_args)
    return 0


if __name__ == '__main__':
    sys.exit(run_command('dedup', sys.argv[1:]))
