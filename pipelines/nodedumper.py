"""Dump the web graph's nodes with the highest scores or degrees (Nutch's `nodedumper`).

beamcrawl nodedumper CRAWL_DIR (--scores | --inlinks | --outlinks) [--top-n N]
                     [--host sum|max | --domain sum|max] [--as-eff] OUT [beam options]
Writes OUT, a text file of `URL<TAB>value` lines (per host or domain with --host/--domain),
the highest values first.
"""

import os
import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument('--scores', dest='kind', action='store_const', const='scores',
                      help='the LinkRank scores')
    what.add_argument('--inlinks', dest='kind', action='store_const', const='inlinks',
                      help='the numbers of inlinks')
    what.add_argument('--outlinks', dest='kind', action='store_const', const='outlinks',
                      help='the numbers of outlinks')
    parser.add_argument('--top-n', type=int, metavar='N', help='only the N highest (default: all)')
    group = parser.add_mutually_exclusive_group()
    group.add_argument('--host', choices=('sum', 'max'),
                       help='one line per host: the sum or the maximum of its nodes\' values')
    group.add_argument('--domain', choices=('sum', 'max'),
                       help='one line per domain: the sum or the maximum')
    parser.add_argument('--as-eff', action='store_true',
                        help='URL=value lines (Solr\'s ExternalFileField format)')
    parser.add_argument('out', metavar='OUT', help='the text file to write')


def run(args, cfg, now, beam_args):
    import apache_beam as beam

    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base.errors import InputError, UserError
    from beamcrawl.transforms.linkrank import TopNodes
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import NODES, CrawlLayout
    from beamcrawl.transforms.storage.parts import count_records
    if args.top_n is not None and args.top_n < 1:
        raise UserError(f'--top-n {args.top_n}: expected a positive integer')
    crawl = CrawlLayout(args.crawl_dir)
    nodes_files = crawl.webgraphdb.part_files(NODES)
    if crawl.webgraphdb.readable_dir() is None:
        raise InputError(f'{crawl.webgraphdb.path}: no web graph (run webgraph first)')
    out = args.out if '://' in args.out else os.path.abspath(args.out)   # workers write it
    n = args.top_n or max(1, count_records(nodes_files))
    group_by = 'host' if args.host else 'domain' if args.domain else None
    p = make_pipeline(beam_args, cfg)
    _ = (p
         | 'TopNodes' >> TopNodes(nodes_files=nodes_files, kind=args.kind, n=n,
                                  group_by=group_by, how=args.host or args.domain or 'sum',
                                  domains=settings.domains(cfg),
                                  separator='=' if args.as_eff else '\t')
         | 'Write' >> beam.io.WriteToText(out, shard_name_template='', num_shards=1))
    run_pipeline(p, 'nodedumper')
    print(f'nodedumper: {args.kind} written to {out}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('nodedumper', sys.argv[1:]))
