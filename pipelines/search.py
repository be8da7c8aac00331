"""Search the index of a crawl.

beamcrawl search CRAWL_DIR QUERY [--top N] [--json]
BM25 over title, text and anchor texts (title and anchors weigh more), times each page's boost
(from its score); prints rank, score, URL, title and a snippet with the query's words marked.
Exit 1 when nothing matches. QUERY uses Tantivy's syntax: words, "phrases", title:word, -word.
"""

import json
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('query', metavar='QUERY')
    parser.add_argument('--top', type=int, default=10, metavar='N', help='results (default 10)')
    parser.add_argument('--json', action='store_true', help='results as JSON lines')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.storage.indexdir import local_shards
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.shards import search  # Tantivy only for this command
    crawl = CrawlLayout(args.crawl_dir)
    shards = crawl.index_shards()
    if not shards:
        raise UserError(f'{crawl.index}: no index (run beamcrawl index first)')
    if args.top < 1:
        raise UserError(f'--top {args.top}: expected at least 1')
    bold = sys.stdout.isatty()
    try:
        with local_shards(shards) as local:
            hits = search(local, args.query, args.top,
                          ('\033[1m', '\033[0m') if bold else ('**', '**'))
    except ValueError as e:
        raise UserError(f'query {args.query!r}: {e}') from None
    if not hits:
        print(f'no match for {args.query!r}', file=sys.stderr)
        return 1
    for rank, hit in enumerate(hits, 1):
        if args.json:
            print(json.dumps(dict(rank=rank, **hit.as_json()), ensure_ascii=False))
        else:
            print(f'{rank}. {hit.score:.3f}  {hit.doc["url"]}\n   {hit.doc["title"]}\n'
                  f'   {hit.snippet}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('search', sys.argv[1:]))
