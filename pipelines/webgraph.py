"""Build or update the web graph from parsed segments (Nutch's `webgraph`).

beamcrawl webgraph CRAWL_DIR [SEGMENT ...] [--normalize] [--filter] [--conf FILE]
                   [-D key=value] [beam options]
Default SEGMENTs: every parsed segment not in the web graph yet (the webgraphdb remembers which
were). Writes a new webgraphdb version: outlinks/, inlinks/, nodes/ (docs/crawl-dir.md).
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='segment names or paths (default: parsed, not in the graph yet)')
    parser.add_argument('--normalize', action='store_true', help='normalize sources and targets')
    parser.add_argument('--filter', action='store_true', help='filter sources and targets')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import NODES, OUTLINKS, CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_PARSE, PARSE_DATA
    from beamcrawl.transforms.webgraph import WebGraph
    rules = settings.graph_rules(cfg)
    policy = settings.url_policy(cfg) if args.normalize or args.filter else None
    crawl = CrawlLayout(args.crawl_dir)
    db = crawl.webgraphdb
    names, _ = crawl.segments_to_apply(db.applied_segments(), args.segments, CRAWL_PARSE)
    if not names:
        print('webgraph: nothing to do (every parsed segment is in the web graph already)',
              file=sys.stderr)
        return 1
    with db.update(keep_backup=cfg['db.preserve.backup'], command='webgraph',
                   parts_in=NODES) as new:
        applied = db.applied_segments()
        stage = WebGraph(
            out=new, rules=rules, domains=settings.domains(cfg), policy=policy,
            parse_data_files=[f for n in names for f in crawl.part_files(n, PARSE_DATA)],
            crawl_fetch_files=([f for n in names if crawl.has_part(n, CRAWL_FETCH)
                                for f in crawl.part_files(n, CRAWL_FETCH)]
                               if rules.delete_gone else []),
            old_outlinks_files=db.part_files(OUTLINKS), normalize=args.normalize,
            filter_urls=args.filter, partitions=cfg['webgraph.partitions'], now=now)
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'WebGraph' >> stage
        counters = run_pipeline(p, 'webgraph')
        new.write_applied(applied + names)
    print(f'webgraph: added {", ".join(names)}; {counters.get("webgraph.nodes", 0)} nodes, '
          f'{counters.get("webgraph.outlinks", 0)} links')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('webgraph', sys.argv[1:]))
