"""Merge other crawldbs into a crawl's crawldb (Nutch's `mergedb`).

beamcrawl mergedb CRAWL_DIR INPUT ... [--out NEW_CRAWL_DIR] [--normalize] [--filter]
                  [--conf FILE] [-D key=value] [beam options]
INPUT: a crawl directory, or a crawldb directory. For a URL in several, the newest record wins
and the metadata of all is merged (docs/merging.md). The inputs are only read; the merge is
installed as CRAWL_DIR's new crawldb version, or, with --out, as the crawldb of a crawl
directory that has none yet.
"""

import sys

from beamcrawl.pipelines.cli import run_command


def written_crawl_dir(args):
    """The crawl directory this command writes into when it is not CRAWL_DIR (cli.py)."""
    return args.out


def add_arguments(parser, kind='crawldb'):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('inputs', metavar='INPUT', nargs='+',
                        help=f'crawl directories or {kind} directories to merge in')
    parser.add_argument('--out', metavar='NEW_CRAWL_DIR',
                        help=f'write the merge as the {kind} of this crawl directory (it must '
                             f'have none) instead of replacing CRAWL_DIR\'s')
    parser.add_argument('--normalize', action='store_true', help='normalize every URL')
    parser.add_argument('--filter', action='store_true', help='filter every URL')


def merge_databases(kind: str, args, cfg, beam_args) -> int:
    """mergedb (kind 'crawldb') and mergelinkdb ('linkdb'): CRAWL_DIR's database and the
    INPUTs' merged into CRAWL_DIR's (or --out's) new version, installed under its lock."""
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.base.errors import UserError
    from beamcrawl.transforms.merge import MergeCrawlDbs, MergeLinkDbs
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import CrawlLayout, database_at
    command = 'mergedb' if kind == 'crawldb' else 'mergelinkdb'
    policy = settings.url_policy(cfg)          # config errors before anything is locked
    if kind == 'linkdb':
        max_inlinks = settings.link_rules(cfg).max_inlinks
    crawl = CrawlLayout(args.crawl_dir)
    own = crawl.crawldb if kind == 'crawldb' else crawl.linkdb
    inputs = [database_at(path, kind) for path in args.inputs]
    target = crawl
    if args.out:
        target = CrawlLayout(args.out)
        target.refuse_foreign()
        out_db = target.crawldb if kind == 'crawldb' else target.linkdb
        if out_db.readable_dir() is not None:
            raise UserError(f'--out {args.out}: already has a {kind} (name a new crawl '
                            f'directory, or merge into it as CRAWL_DIR)')
        if own.readable_dir() is None:
            raise UserError(f'{crawl.root}: has no {kind}')
    if own.readable_dir() is not None:
        inputs.insert(0, own)
    normalize = cfg[f'{kind}.url.normalizers'] or args.normalize
    filter_urls = cfg[f'{kind}.url.filters'] or args.filter
    target_db = target.crawldb if kind == 'crawldb' else target.linkdb
    with target_db.update(keep_backup=cfg['db.preserve.backup'], command=command) as new:
        files = [db.part_files() for db in inputs]
        if kind == 'crawldb':
            stage = MergeCrawlDbs(inputs=files, out=new, partitions=cfg['crawldb.partitions'],
                                  policy=policy, normalize=normalize, filter_urls=filter_urls,
                                  purge_gone=cfg['db.update.purge.404'])
        else:
            stage = MergeLinkDbs(inputs=files, out=new, partitions=cfg['linkdb.partitions'],
                                 max_inlinks=max_inlinks, policy=policy, normalize=normalize,
                                 filter_urls=filter_urls)
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'Merge' >> stage
        counters = run_pipeline(p, command)
    c = lambda name: counters.get(name, 0)  # noqa: E731
    statuses = {k[len(metrics.MERGE_STATUS):]: v for k, v in counters.items()
                if k.startswith(metrics.MERGE_STATUS)}
    print(f'{command}: merged {len(inputs)} {kind}s into {target_db.path}: '
          f'{c(metrics.MERGE_READ)} records read, {c(metrics.MERGE_FILTERED)} URLs filtered, '
          f'{c(metrics.MERGE_PURGED)} gone purged; {c(metrics.MERGE_WRITTEN)} written' +
          ''.join(f', {v} {k}' for k, v in sorted(statuses.items())))
    return 0


def run(args, cfg, now, beam_args):
    return merge_databases('crawldb', args, cfg, beam_args)


if __name__ == '__main__':
    sys.exit(run_command('mergedb', sys.argv[1:]))
