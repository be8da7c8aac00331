"""Merge other linkdbs into a crawl's linkdb (Nutch's `mergelinkdb`).

beamcrawl mergelinkdb CRAWL_DIR INPUT ... [--out NEW_CRAWL_DIR] [--normalize] [--filter]
                      [--conf FILE] [-D key=value] [beam options]
INPUT: a crawl directory, or a linkdb directory. The inlinks of a URL are the union of its
inlinks in every linkdb, capped at linkdb.max.inlinks as invertlinks caps them
(docs/merging.md). The inputs are only read; the merge is installed as CRAWL_DIR's new linkdb
version, or, with --out, as the linkdb of a crawl directory that has none yet.
"""

import sys

from beamcrawl.pipelines import mergedb
from beamcrawl.pipelines.cli import run_command

written_crawl_dir = mergedb.written_crawl_dir


def add_arguments(parser):
    mergedb.add_arguments(parser, kind='linkdb')


def run(args, cfg, now, beam_args):
    return mergedb.merge_databases('linkdb', args, cfg, beam_args)


if __name__ == '__main__':
    sys.exit(run_command('mergelinkdb', sys.argv[1:]))
