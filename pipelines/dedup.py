"""Mark pages with the same content as duplicates (Nutch's `dedup`).

beamcrawl dedup CRAWL_DIR [--near [--distance BITS]] [--conf FILE] [-D key=value] [beam options]
Of the fetched pages (db_fetched, db_notmodified) that share a signature, the one with the
highest score (then the latest fetch time, then the shortest URL: Nutch's order) stays; the
others become db_duplicate in the crawldb, and `index` removes them from the index. `index`
runs this first.
With --near, pages whose text fingerprints (SimHash) differ in at most --distance bits
(dedup.near.distance, default 3) are duplicates too, transitively.
"""

import sys
from typing import TYPE_CHECKING, Optional

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError

if TYPE_CHECKING:
    from beamcrawl.transforms.storage.layout import CrawlLayout


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('--near', action='store_true',
                        help='also mark near-duplicates: pages whose text fingerprints (SimHash) '
                             'are at most --distance bits apart')
    parser.add_argument('--distance', type=int, metavar='BITS',
                        help='with --near: the largest distance, 0 to 15 (dedup.near.distance)')


def mark_duplicates(crawl: 'CrawlLayout', cfg, beam_args, near: Optional[int] = None) -> int:
    """Runs the dedup pipeline on the crawldb (with `near`, near-duplicates within that many
    bits too); returns how many pages it marked."""
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.dedup import Dedup
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    with crawl.crawldb.update(keep_backup=cfg['db.preserve.backup'], command='dedup') as new:
        stage = Dedup(crawldb=crawl.crawldb, out=new, near=near)
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
    if args.distance is not None and not args.near:
        raise UserError('--distance goes with --near')
    near = None
    if args.near:
        near = cfg['dedup.near.distance'] if args.distance is None else args.distance
        if not 0 <= near <= 15:
            raise UserError(f'--distance {near}: expected 0 to 15 bits')
    mark_duplicates(CrawlLayout(args.crawl_dir), cfg, beam_args, near)
    return 0


if __name__ == '__main__':
    sys.exit(run_command('dedup', sys.argv[1:]))
