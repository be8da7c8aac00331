"""Delete gone, redirected and duplicate pages from the index (Nutch's `clean`, CleaningJob).

beamcrawl clean CRAWL_DIR [--format tantivy|jsonl] [--output DIR] [beam options]
Reads the crawldb and deletes from the index every page whose status is db_gone, db_redir_temp,
db_redir_perm or db_duplicate (run `dedup` first to mark duplicates). tantivy (default): the
shards of CRAWL_DIR/index/ are updated, each written aside and installed under the index lock;
jsonl: the deletions are written as OUT/deletions-*.jsonl ({"id": URL} per line) for Solr,
OpenSearch or Elasticsearch. `index` applies the same deletions (transforms/index.py
`Deletions`) each time it runs, so `crawl --index` cleans in every round. Exit 0; 1 when there
is no index to clean; 2 on failure.
"""

import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('--format', choices=('tantivy', 'jsonl'), default='tantivy')
    parser.add_argument('--output', metavar='DIR', help='jsonl: the output directory')


def run(args, cfg, now, beam_args):
    from beamcrawl.pipelines.index import write_shards
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.index import Deletions, WriteJsonLines
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import ReadCrawlDb
    crawl = CrawlLayout(args.crawl_dir)
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    shards = cfg['indexer.shards']

    def entries(p):
        return (p
                | 'ReadCrawlDb' >> ReadCrawlDb(crawl.crawldb)
                | 'Deletions' >> Deletions(shards=shards))
    if args.format == 'jsonl':
        if not args.output:
            raise UserError('--format jsonl needs --output DIR')
        if fs.exists(args.output):
            raise UserError(f'--output {args.output}: already exists')
        p = make_pipeline(beam_args, cfg)
        _ = entries(p) | 'WriteJsonLines' >> WriteJsonLines(args.output)
        counters = run_pipeline(p, 'clean --format jsonl')
        where = args.output
    else:
        if args.output:
            raise UserError('--output is for --format jsonl')
        if not crawl.index_shard_dirs():
            print(f'clean: nothing to do (no index in {crawl.index})', file=sys.stderr)
            return 1
        counters = write_shards(crawl, cfg, beam_args, shards, 'clean', entries, {})
        where = crawl.index
    by_reason = {k[len(metrics.INDEX_DELETED):]: v for k, v in sorted(counters.items())
                 if k.startswith(metrics.INDEX_DELETED) and v}
    print(f'clean: {sum(by_reason.values())} deletions in {where}'
          + (f' ({", ".join(f"{n} {r}" for r, n in by_reason.items())})' if by_reason else ''))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('clean', sys.argv[1:]))
