"""Write the web graph's LinkRank scores into the crawldb (Nutch's `scoreupdater`).

beamcrawl scoreupdater CRAWL_DIR [--conf FILE] [-D key=value] [beam options]
Every crawldb URL gets its node's score, or link.score.updater.clear.score when the graph has
no node for it; installs a new crawldb version (generate sorts by score, index boosts by it).
"""

import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')


def run(args, cfg, now, beam_args):
    from beamcrawl.pipelines.linkrank import LINKRANK_NOTE
    from beamcrawl.transforms.base.errors import InputError
    from beamcrawl.transforms.linkrank import ScoreUpdater
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import NODES, CrawlLayout
    crawl = CrawlLayout(args.crawl_dir)
    if crawl.crawldb.readable_dir() is None:
        raise InputError(f'{crawl.crawldb.path}: no crawldb (run inject first)')
    with crawl.webgraphdb.lock('scoreupdater'):
        crawl.webgraphdb.recover()
        if crawl.webgraphdb.read_note(LINKRANK_NOTE) is None:
            raise InputError(f'{crawl.webgraphdb.path}: no LinkRank scores (run webgraph, then '
                             f'linkrank first)')
        nodes_files = crawl.webgraphdb.part_files(NODES)
        with crawl.crawldb.update(keep_backup=cfg['db.preserve.backup'],
                                  command='scoreupdater') as new:
            stage = ScoreUpdater(crawldb=crawl.crawldb, nodes_files=nodes_files, out=new,
                                 clear_score=cfg['link.score.updater.clear.score'],
                                 partitions=cfg['crawldb.partitions'])
            p = make_pipeline(beam_args, cfg, stage.weight)
            _ = p | 'ScoreUpdater' >> stage
            counters = run_pipeline(p, 'scoreupdater')
    print(f'scoreupdater: {counters.get("scoreupdater.scored", 0)} URLs scored, '
          f'{counters.get("scoreupdater.cleared", 0)} not in the web graph')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('scoreupdater', sys.argv[1:]))
