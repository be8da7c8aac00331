"""Build or update the host database from the crawldb and new segments (Nutch's `updatehostdb`).

beamcrawl updatehostdb CRAWL_DIR [SEGMENT ...] [--check-all | --check-new --check-known
                       --check-failed] [--force] [--filter] [--normalize] [--conf FILE]
                       [-D key=value] [--now T] [beam options]
Per host: URL counts by crawldb status, fetch failures in a row (from the fetch attempts of the
segments not applied yet, or those named), last success and failure, response times, robots
facts; with --check-*, DNS lookups (docs/hostdb.md). Writes CRAWL_DIR/hostdb.
"""

import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='fetched segments to fold in (default: those not applied yet)')
    parser.add_argument('--check-all', action='store_true',
                        help='look up new, known and failed hosts (due for a recheck)')
    parser.add_argument('--check-new', action='store_true', help='look up hosts never looked up')
    parser.add_argument('--check-known', action='store_true',
                        help='look up hosts that resolved, when their recheck is due')
    parser.add_argument('--check-failed', action='store_true',
                        help='look up hosts that failed to resolve, when their recheck is due')
    parser.add_argument('--force', action='store_true',
                        help='with --check-*: whatever the recheck interval')
    parser.add_argument('--filter', action='store_true', help='count only URLs the filters accept')
    parser.add_argument('--normalize', action='store_true', help='normalize URLs first')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base.errors import UserError
    from beamcrawl.transforms.base.metrics import (HOSTDB_FAILING, HOSTDB_FETCHES, HOSTDB_HOSTS,
                                                   HOSTDB_RESOLVE)
    from beamcrawl.transforms.hostdb import UpdateHostDb
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH
    check_all = args.check_all
    host_settings = settings.hostdb_settings(
        cfg, check_new=check_all or args.check_new, check_known=check_all or args.check_known,
        check_failed=check_all or args.check_failed, force=args.force)
    normalize = cfg['hostdb.url.normalize'] or args.normalize
    filter_urls = cfg['hostdb.url.filter'] or args.filter
    policy = settings.url_policy(cfg) if normalize or filter_urls else None
    crawl = CrawlLayout(args.crawl_dir)
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    with crawl.hostdb.update(keep_backup=cfg['db.preserve.backup'],
                             command='updatehostdb') as new:
        applied = crawl.hostdb.applied_segments()
        names, _ = crawl.segments_to_apply(applied, args.segments, CRAWL_FETCH)
        stage = UpdateHostDb(
            crawldb_files=crawl.crawldb.part_files(),
            fetch_files=[(n, f) for n in names for f in crawl.part_files(n, CRAWL_FETCH)],
            old_files=crawl.hostdb.part_files(), out_dir=new.dir, settings=host_settings,
            now=now, policy=policy, normalize=normalize, filter_urls=filter_urls,
            resolve_threads=cfg['hostdb.num.resolvers.threads'],
            resolve_timeout=cfg['hostdb.resolve.timeout'])
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'UpdateHostDb' >> stage
        counters = run_pipeline(p, 'updatehostdb')
        if not counters.get(HOSTDB_HOSTS):
            new.discard()
            print('updatehostdb: the crawldb has no host; no hostdb written', file=sys.stderr)
            return 1
        new.write_applied(applied + names)
    looked_up = {k[len(HOSTDB_RESOLVE):]: v for k, v in counters.items()
                 if k.startswith(HOSTDB_RESOLVE)}
    print(f'updatehostdb: {counters[HOSTDB_HOSTS]} hosts, '
          f'{counters.get(HOSTDB_FAILING, 0)} failing; '
          f'{len(names)} segment(s) folded in ({counters.get(HOSTDB_FETCHES, 0)} fetch '
          f'attempts)' + ('; lookups: ' + ', '.join(f'{v} {k}' for k, v in
                                                     sorted(looked_up.items()))
                          if looked_up else ''))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('updatehostdb', sys.argv[1:]))
