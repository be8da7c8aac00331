"""Fetch, parse and index one URL with the crawl's settings and show the document the indexer
would write (Nutch's `indexchecker`).

beamcrawl indexchecker [CRAWL_DIR] URL [--normalize] [--follow-redirects] [--json]
                       [--conf FILE] [-D key=value]
Fetches and parses URL as parsechecker does, merges the fetch into the URL's crawldb record as
updatedb would (CRAWL_DIR's record when it has one, so its score and signature count; else a
new one), takes its inlinks from CRAWL_DIR's linkdb (for the anchors), and prints the fields
of the document `index` would write, one `name :<TAB>value` line each (Nutch's form), or the
reason there is none (a deletion: gone, redirect, duplicate; no usable parse). Nothing is
written. Exit 0 when there is a document; 2 otherwise, with one line saying why.
"""

import json
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.pipelines.parsechecker import add_arguments as _checker_arguments
from beamcrawl.pipelines.parsechecker import checked_url, fetch_failure
from beamcrawl.transforms.base.errors import UserError


def add_arguments(parser):
    _checker_arguments(parser, what='document')


def _known(s, crawl_dir, url):
    """(the URL's crawldb record or None, its inlinks as (from_url, anchor) pairs)."""
    if not crawl_dir:
        return None, []
    from beamcrawl.transforms.readdb import find_url
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import iter_records
    from beamcrawl.transforms.storage.records import complete_datum
    crawl, policy = CrawlLayout(crawl_dir), s.policy
    old = links = None
    if crawl.crawldb.readable_dir() is not None:
        old = find_url(iter_records(crawl.crawldb.part_files()), url, policy)
    if crawl.linkdb.readable_dir() is not None:
        links = find_url(iter_records(crawl.linkdb.part_files()), url, policy)
    inlinks = [(i['from_url'], i['anchor']) for i in links['inlinks']] if links else []
    return (complete_datum(old) if old else None), inlinks


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.checkers import index_entry
    from beamcrawl.transforms.settings import check_settings
    s = check_settings(cfg, follow_redirects=args.follow_redirects)
    checked = checked_url(args, s, now)
    old, inlinks = _known(s, args.crawl_dir, checked.url)
    failure = fetch_failure(checked)
    doc, db, why = index_entry(checked, s, now, old, inlinks)
    if args.json:
        print(json.dumps({'document': doc, 'crawldb_status': db['status'], 'reason': why},
                         indent=1, ensure_ascii=False, sort_keys=True))
    elif doc is not None:
        for name, value in doc.items():
            if isinstance(value, list):
                for item in value:
                    print(f'{name} :\t{item}')
            else:
                print(f'{name} :\t{value}')
    if doc is None:
        raise UserError(f'{checked.url}: {why}' + (f' ({failure})' if failure else ''))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('indexchecker', sys.argv[1:]))
