"""Benchmark: link analysis on a generated graph of 1M links (200k pages × 5 outlinks, every page
on its own domain, so that Nutch's link rules keep every link): webgraph, linkrank (all
iterations in one pipeline, as the command runs them), scoreupdater, nodedumper, and then each
LinkRank iteration alone (the same stage, one iteration per pipeline, each in its own process).
Prints wall, CPU seconds and peak RSS of each (bench/measure.py).

    python bench/bench_linkrank.py [--pages 200000] [--links 5] [--iterations 10]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'bench'))

from measure import measure  # noqa: E402

from tests.linkgraphs import page, random_graph, write_segment  # noqa: E402

CLI = [sys.executable, '-m', 'beamcrawl.pipelines.cli']


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pages', type=int, default=200_000)
    parser.add_argument('--links', type=int, default=5)
    parser.add_argument('--iterations', type=int, default=10)
    parser.add_argument('--one-iteration', nargs=3, metavar=('CRAWL', 'K', 'OUT'),
                        help=argparse.SUPPRESS)   # internal: one iteration, for the measure
    args = parser.parse_args()
    if args.one_iteration:
        one_iteration(*args.one_iteration)
        return
    work = tempfile.mkdtemp(prefix='bench-linkrank-')
    crawl = os.path.join(work, 'crawl')
    start = time.time()
    build(crawl, args.pages, args.links)
    print(f'built: {args.pages} pages × {args.links} outlinks = {args.pages * args.links} links '
          f'and a crawldb of {args.pages} URLs ({time.time() - start:.0f} s)')
    iterations = ['-D', f'link.analyze.num.iterations={args.iterations}']
    edges = args.pages * args.links
    for label, argv, records in (
            ('webgraph', ['webgraph', crawl], edges),
            (f'linkrank ({args.iterations} iterations)', ['linkrank', crawl, *iterations], edges),
            ('scoreupdater', ['scoreupdater', crawl], args.pages),
            ('nodedumper --scores', ['nodedumper', crawl, '--scores', '--top-n', '100',
                                     os.path.join(work, 'top.txt')], args.pages)):
        result = measure(label, CLI + argv, records=records)
        print(result.line())
        if label.startswith('linkrank'):
            for line in result.stderr.splitlines():
                if 'linkrank: iteration' in line:
                    print('    ' + line.split('INFO ', 1)[-1])
    print('each iteration alone (a pipeline and a process of its own; includes the ~2 s start '
          'of a command):')
    for k in range(1, args.iterations + 1):
        out = os.path.join(work, f'iteration-{k}')
        result = measure(f'  iteration {k}', [sys.executable, __file__, '--one-iteration', crawl,
                                               str(k), out], records=edges)
        print(result.line())
    shutil.rmtree(work)


def build(crawl, pages, links):
    """One parsed segment of the graph, and a crawldb of its pages (for scoreupdater)."""
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.partwriter import write_avro_file
    from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
    write_segment(crawl, random_graph(pages, links, seed=1, skew=1.5), parts=8)
    db = CrawlLayout(crawl).crawldb
    write_avro_file(f'{db.current}/part-00000.avro', CRAWL_DATUM_SCHEMA,
                    [crawl_datum(page(i), 'db_fetched', fetch_time=0, fetch_interval=86400,
                                 score=1.0) for i in range(pages)])


def one_iteration(crawl, k, out):
    """Iteration k of LinkRank alone: from the nodes of iteration k-1 (the web graph's for k = 1,
    the directory of the previous call otherwise) into `out`."""
    from beamcrawl.pipelines.cli import site_config
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.linkrank import LinkRank, read_convergence
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import NODES, OUTLINKS, CrawlLayout
    from beamcrawl.transforms.storage.parts import count_records
    k = int(k)
    layout = CrawlLayout(crawl)
    cfg = site_config(argparse.Namespace(conf=None, defines=[]), layout)
    db = layout.webgraphdb
    previous = (db.part_files(NODES) if k == 1 else
                fs.list_files(fs.join(os.path.dirname(out), f'iteration-{k - 1}', 'part-*.avro')))
    count = count_records(previous)
    stage = LinkRank(nodes_files=previous, outlinks_dir=fs.join(db.readable_dir(), OUTLINKS),
                     out_dir=out, scratch=out + '-scratch', params=settings.rank_params(cfg, count),
                     domains=settings.domains(cfg), iterations=1, first=k)
    p = make_pipeline([], cfg, 4 * count)
    _ = p | 'LinkRank' >> stage
    run_pipeline(p, 'linkrank')
    print(read_convergence(stage.stats_dir(k)).line(k, k), file=sys.stderr)
    fs.delete(out + '-scratch')


if __name__ == '__main__':
    main()
