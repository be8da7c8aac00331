"""Select due URLs from the crawldb into new segments (Nutch's `generate`).

beamcrawl generate CRAWL_DIR [--top-n N] [--num-fetchers K] [--max-num-segments M] [--no-filter]
                   [--hostdb] [--conf FILE] [-D key=value] [--now T] [beam options]
--hostdb (or generate.hostdb): skip failing hosts and take per-host max counts and fetch delays
from the host database (docs/hostdb.md).
Prints each new segment's path; exits 1 when nothing is due (no segment is made).
"""

import contextlib
import logging
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError, refused_locally

log = logging.getLogger('beamcrawl')

def _positive(text):
    if not text.isdigit() or int(text) < 1:
        raise UserError(f'expected a positive integer, got {text!r}')
    return int(text)


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('--top-n', metavar='N', help='at most N URLs per segment (exact)')
    parser.add_argument('--num-fetchers', metavar='K', default='1',
                        help='fetch-list parts per segment (default 1)')
    parser.add_argument('--max-num-segments', metavar='M', default='1',
                        help='segments to fill; overflow goes to the next (default 1)')
    parser.add_argument('--no-filter', action='store_true', help='do not apply URL filters')
    parser.add_argument('--hostdb', action='store_true',
                        help="use the crawl's hostdb (updatehostdb): skip failing hosts, "
                             'per-host max count and fetch delay')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.generate import (FetchListParts, MarkGenerated, SelectForFetch,
                                               WriteFetchLists, complete_fetch_lists)
    from beamcrawl.transforms.policy.generate import segment_names
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_GENERATE
    top_n = _positive(args.top_n) if args.top_n is not None else None
    num_parts, max_segments = _positive(args.num_fetchers), _positive(args.max_num_segments)
    crawl = CrawlLayout(args.crawl_dir)
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    policy = settings.url_policy(cfg)          # config errors before the crawldb is locked
    select_settings = settings.generate_settings(cfg)
    hosts = _host_plan(args, cfg, crawl, now)
    update = cfg['generate.update.crawldb']
    mode = cfg['partition.url.mode']
    # The crawldb lock is held throughout (no updatedb may change it meanwhile); a new version
    # marking the selected URLs is installed only with generate.update.crawldb, and then it and
    # the segments are published as one step (docs/crawl-dir.md): a kill between the two must
    # not leave a segment whose URLs are not marked (the next generate would select them again).
    with crawl.crawldb.update(keep_backup=cfg['db.preserve.backup'], command='generate') as db, \
            contextlib.ExitStack() as stack:
        names = segment_names(crawl.segment_names(), now, max_segments)
        segments = [stack.enter_context(crawl.segment_update(n, (CRAWL_GENERATE,), 'generate',
                                                             publish=not update))
                    for n in names]
        # The selection hands the fetch lists their parts' records, already keyed and encoded,
        # unless each selected URL is needed on its own (to mark it in the crawldb) or its part
        # needs its host's address (byIP).
        grouped = not update and mode != 'byIP'
        select = SelectForFetch(
            crawldb=crawl.crawldb, settings=select_settings, policy=policy,
            now=now, top_n=top_n, max_count=cfg['generate.max.count'],
            count_mode=cfg['generate.count.mode'], max_segments=max_segments,
            filter_urls=cfg['generate.filter'] and not args.no_filter, hosts=hosts,
            scratch=db.scratch,
            parts=FetchListParts(num_parts, mode, policy) if grouped else None)
        p = make_pipeline(beam_args, cfg, select.weight)
        selected = p | 'SelectForFetch' >> select
        _ = selected | 'WriteFetchLists' >> WriteFetchLists(
            part_dirs={i + 1: s.tmp[CRAWL_GENERATE] for i, s in enumerate(segments)},
            num_parts=num_parts, mode=mode, policy=policy, grouped=grouped)
        if update:
            _ = p | 'MarkGenerated' >> MarkGenerated(crawldb=crawl.crawldb, out=db,
                                                      selected=selected, now=now)
        counters = run_pipeline(p, 'generate')
        complete_fetch_lists(segments, num_parts)
        made = [crawl.segment(s.segment) for s in segments if not s.abandoned]
        if update and made:
            db.publish_with([r for s in segments if not s.abandoned for r in s.publishing()])
        else:
            db.discard()
    for path in made:
        print(path)
    log.info('generate: %d selected of %d due into %d segment(s)',
             counters.get('generate.selected', 0), counters.get('generate.due', 0), len(made))
    if not made:
        _refused_everything(counters)
        log.info('generate: 0 records selected, no segment made')
        return 1
    return 0


def _host_plan(args, cfg, crawl, now):
    """The hostdb's per-host decisions (policy/hostdb.py host_plan), read in the driver: one
    record per host. None without a hostdb."""
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.policy.hostdb import host_plan
    from beamcrawl.transforms.storage.databases import DbLayout
    from beamcrawl.transforms.storage.parts import iter_records
    from beamcrawl.transforms.storage.records import complete_host_datum
    path = cfg['generate.hostdb'].strip()
    if not args.hostdb and not path:
        return None
    rules = settings.host_rules(cfg)
    hostdb = crawl.hostdb if args.hostdb else DbLayout(path, 'hostdb')
    if hostdb.readable_dir() is None:
        raise UserError(f'{hostdb.current}: no hostdb (run updatehostdb first)')
    plan = host_plan(map(complete_host_datum, iter_records(hostdb.part_files())), rules, now)
    skipped = {}
    for why in plan.skip.values():
        skipped[why] = skipped.get(why, 0) + 1
    for name, n in [*((metrics.GENERATE_HOSTS_SKIPPED + k, v) for k, v in sorted(skipped.items())),
                    (metrics.GENERATE_HOSTS_LIMITED, len(plan.max_count)),
                    (metrics.GENERATE_HOSTS_DELAYED, len(plan.delay_ms)),
                    (metrics.GENERATE_HOSTS_UNDEFINED, plan.undefined)]:
        if n:
            log.info('  %-40s %d', name, n)
    return plan


def _refused_everything(counters) -> None:
    """Exit 2 (not 1, "nothing to do") when every record of the crawldb was refused by local
    settings: the URL filters or the address policy, not the schedule."""
    from beamcrawl.transforms.base import metrics
    filtered = counters.get(metrics.GENERATE_REJECTED + 'filtered', 0)
    denied = counters.get(metrics.GENERATE_REJECTED + 'denied_address', 0)
    seen = sum(v for k, v in counters.items() if k.startswith(metrics.GENERATE_REJECTED)) + \
        counters.get(metrics.GENERATE_DUE, 0) + counters.get(metrics.GENERATE_MALFORMED, 0)
    if seen and filtered + denied == seen:
        raise refused_locally('URL of the crawldb', denied, filtered, 'no segment made')


if __name__ == '__main__':
    sys.exit(run_command('generate', sys.argv[1:]))
