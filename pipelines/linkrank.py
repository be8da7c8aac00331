"""Score the web graph's nodes with LinkRank (Nutch's `linkrank`).

beamcrawl linkrank CRAWL_DIR [--conf FILE] [-D key=value] [beam options]
Runs link.analyze.num.iterations iterations as one pipeline, logs how much the scores changed
in each (docs/link-analysis.md) and installs a webgraphdb version with the new node scores.
"""

import json
import logging
import sys

from beamcrawl.pipelines.cli import run_command

log = logging.getLogger('beamcrawl')

LINKRANK_NOTE = '_linkrank.json'     # in a webgraphdb version: how its scores were computed


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base.errors import InputError
    from beamcrawl.transforms.linkrank import LinkRank, read_convergence
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import INLINKS, NODES, OUTLINKS, CrawlLayout
    from beamcrawl.transforms.storage.parts import count_records
    crawl = CrawlLayout(args.crawl_dir)
    db = crawl.webgraphdb
    iterations = cfg['link.analyze.num.iterations']
    with db.update(keep_backup=cfg['db.preserve.backup'], command='linkrank',
                   parts_in=NODES) as new:
        current = db.readable_dir()
        if current is None:
            raise InputError(f'{db.path}: no web graph (run webgraph first)')
        nodes_files = db.part_files(NODES)
        count = count_records(nodes_files)
        if count == 0:
            new.discard()
            print('linkrank: the web graph has no node; nothing to do', file=sys.stderr)
            return 1
        params = settings.rank_params(cfg, count)
        for name in (OUTLINKS, INLINKS):       # the links stay as they are
            for path in fs.list_files(fs.join(current, name, '*')):
                fs.copy_file(path, fs.join(new.dir, name, fs.basename(path)))
        log.info('linkrank: %d nodes, rank one %.6g, damping %g, %d iterations', count,
                 params.rank_one, params.damping, iterations)
        stage = LinkRank(nodes_files=nodes_files, outlinks_dir=fs.join(current, OUTLINKS),
                         out_dir=fs.join(new.dir, NODES), scratch=new.scratch, params=params,
                         domains=settings.domains(cfg), iterations=iterations)
        p = make_pipeline(beam_args, cfg, 4 * count)
        _ = p | 'LinkRank' >> stage
        run_pipeline(p, 'linkrank')
        log_lines = []
        for k in range(1, iterations + 1):
            change = read_convergence(stage.stats_dir(k))
            log.info('linkrank: %s', change.line(k, iterations))
            log_lines.append(dict(change.as_dict(), iteration=k))
        new.write_note(LINKRANK_NOTE, json.dumps(
            {'nodes': count, 'damping': params.damping, 'initial': params.initial,
             'rank_one': params.rank_one, 'iterations': log_lines}, indent=1))
    last = log_lines[-1]
    print(f'linkrank: {iterations} iterations over {count} nodes; last iteration changed the '
          f'scores by {last["l1"]:.6g} in all (L1), {last["max"]:.6g} at most')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('linkrank', sys.argv[1:]))
