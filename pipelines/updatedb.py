"""Merge fetch and parse results into the crawldb (Nutch's `updatedb`).

beamcrawl updatedb CRAWL_DIR [SEGMENT ...] [--no-additions] [--normalize] [--filter]
                   [--conf FILE] [-D key=value] [--now T] [beam options]
Default SEGMENTs: every fetched segment not applied yet (the crawldb remembers which were).
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='segment names or paths (default: fetched, not applied yet)')
    parser.add_argument('--no-additions', action='store_true',
                        help='do not add new URLs (db.update.additions.allowed=false)')
    parser.add_argument('--normalize', action='store_true', help='normalize every URL')
    parser.add_argument('--filter', action='store_true', help='filter every URL')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_PARSE
    from beamcrawl.transforms.updatedb import MapRules, UpdateCrawlDb
    rules = settings.update_rules(cfg, no_additions=args.no_additions)    # config errors first
    policy = settings.url_policy(cfg)
    crawl = CrawlLayout(args.crawl_dir)
    names, again = crawl.segments_to_apply(crawl.crawldb.applied_segments(),
                                         args.segments, CRAWL_FETCH)
    for name in again:
        log.warning('%s was applied before; applying it again', name)
    if not names:
        print('updatedb: nothing to do (every fetched segment is applied already)',
              file=sys.stderr)
        return 1
    rates = None
    if rules.schedule.kind == 'optimal':
        rules, rates = _with_multiplier(rules, crawl, cfg, beam_args)
    with crawl.crawldb.update(keep_backup=cfg['db.preserve.backup'], command='updatedb') as new:
        applied = crawl.crawldb.applied_segments()
        stage = UpdateCrawlDb(
            crawldb=crawl.crawldb, out=new, now=now, partitions=cfg['crawldb.partitions'],
            segment_files=[f for n in names for part in (CRAWL_FETCH, CRAWL_PARSE)
                           if crawl.has_part(n, part) for f in crawl.part_files(n, part)],
            rules=rules,
            map_rules=MapRules(policy=policy,
                               purge_gone=cfg['db.update.purge.404'],
                               normalize=cfg['crawldb.url.normalizers'] or args.normalize,
                               filter_urls=cfg['crawldb.url.filters'] or args.filter,
                               track_rates=rates is not None))
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'UpdateCrawlDb' >> stage
        counters = run_pipeline(p, 'updatedb')
        new.write_applied(applied + names)
        if rates is not None:
            new.write_note(RATE_HISTOGRAM, _updated_histogram(rates, counters))
    statuses = {k.split('.', 2)[2]: v for k, v in counters.items()
                if k.startswith('updatedb.status.')}
    print(f'updatedb: applied {", ".join(names)}; {counters.get("updatedb.added", 0)} added, '
          f'{counters.get("updatedb.updated", 0)} updated; crawldb: ' +
          ', '.join(f'{v} {k}' for k, v in sorted(statuses.items())))
    return 0


# The optimal schedule's histogram of the crawldb's change rates (policy/optimal.py), kept in
# each crawldb version that updatedb writes: {"records": N, "bins": {bin: pages}}.
RATE_HISTOGRAM = '_rate_histogram.json'


def _with_multiplier(rules, crawl, cfg, beam_args):
    """(the rules with the optimal schedule's multiplier solved on the crawldb's histogram of
    change rates, that histogram). The histogram is the one the last updatedb left in the
    crawldb; when it is missing or does not count the crawldb's records (another command wrote
    the version: inject, dedup, ...), it is counted again in a pass over the crawldb."""
    import dataclasses
    import json

    from beamcrawl.transforms.policy.optimal import DAY_S, NOT_PLANNED_BIN, record_bin
    from beamcrawl.transforms.storage.parts import count_records
    records = count_records(crawl.crawldb.part_files())
    histogram = None
    note = crawl.crawldb.read_note(RATE_HISTOGRAM)
    if note:
        try:
            saved = json.loads(note)
            if saved['records'] == records:
                histogram = {int(k): int(v) for k, v in saved['bins'].items()}
        except (ValueError, KeyError, TypeError):
            histogram = None
    if histogram is None and records:
        from beamcrawl.transforms.crawlstats import count_crawldb
        log.info('counting the change rates of the crawldb (optimal schedule)')
        histogram = {int(k): n for k, n in count_crawldb(
            crawl.root, cfg, beam_args, lambda r: [record_bin(r)], 'rate-histogram')}
    histogram = histogram or {}
    schedule = rules.schedule
    planned = sum(n for k, n in histogram.items() if k != NOT_PLANNED_BIN)
    budget = cfg['db.fetch.schedule.optimal.budget'] or \
        planned * DAY_S / schedule.default_interval
    multiplier = schedule.solve(histogram, budget)
    log.info('optimal schedule: %d pages planned, %d with a change rate, budget %.0f fetches '
             'a day, multiplier %s', planned,
             sum(n for k, n in histogram.items() if k >= 0), budget,
             f'{multiplier:.4g}' if multiplier is not None else 'none yet (default intervals)')
    return dataclasses.replace(rules, schedule=schedule.with_multiplier(multiplier)), histogram


def _updated_histogram(histogram, counters) -> str:
    """The histogram after the update: the old one plus the bins' counts (updatedb.py)."""
    import json

    from beamcrawl.transforms.base import metrics
    new = dict(histogram)
    for name, n in counters.items():
        if name.startswith(metrics.UPDATEDB_RATE_BIN):
            k = int(name[len(metrics.UPDATEDB_RATE_BIN):])
            new[k] = new.get(k, 0) + n
    new = {k: n for k, n in new.items() if n}
    records = sum(n for name, n in counters.items() if name.startswith('updatedb.status.'))
    return json.dumps({'records': records, 'bins': {str(k): n for k, n in sorted(new.items())}})


if __name__ == '__main__':
    sys.exit(run_command('updatedb', sys.argv[1:]))
