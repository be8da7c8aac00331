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
    from beamcrawl.transforms.engine import bulk
    from beamcrawl.transforms.storage import databases, segments
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA
    from beamcrawl.transforms.runners.runtime import local_workers, make_pipeline, run_pipeline
    from beamcrawl.transforms.updatedb import (
        MapRules, OLD_INPUT, SEGMENT_INPUT, UpdateMapper, UpdateReducer)
    crawl = CrawlLayout(args.crawl_dir)
    rules = settings.update_rules(cfg, no_additions=args.no_additions)
    names, again = crawl.segments_to_apply(crawl.crawldb, args.segments, segments.CRAWL_FETCH)
    for name in again:
        log.warning('%s was applied before; applying it again', name)
    if not names:
        print('updatedb: nothing to do (every fetched segment is applied already)',
              file=sys.stderr)
        return 1
    with crawl.crawldb.update(keep_backup=cfg['db.preserve.backup'], command='updatedb') as new:
        applied = crawl.crawldb.applied_segments()
        files = [f for n in names for part in (segments.CRAWL_FETCH, segments.CRAWL_PARSE)
                 if crawl.has_part(n, part) for f in crawl.part_files(n, part)]
        map_rules = MapRules(policy=settings.url_policy(cfg),
                             purge_gone=cfg['db.update.purge.404'],
                             normalize=cfg['crawldb.url.normalizers'] or args.normalize,
                             filter_urls=cfg['crawldb.url.filters'] or args.filter)
        old_units = bulk.avro_units([(OLD_INPUT, f) for f in crawl.crawldb.part_files()],
                                    schema=CRAWL_DATUM_SCHEMA, per_unit=bulk.RECORDS_PER_UNIT)
        new_units = bulk.avro_units([(SEGMENT_INPUT, f) for f in files],
                                    schema=CRAWL_DATUM_SCHEMA, per_unit=bulk.RECORDS_PER_UNIT,
                                    first_index=len(old_units))
        records = sum(u.records for u in old_units + new_units)
        workers = local_workers(beam_args, cfg, records)
        partitions = bulk.choose_partitions(cfg['crawldb.partitions'], records, workers,
                                            crawl.crawldb)
        # A crawldb partitioned the same way is merged part by part, unless URLs may change.
        old_parts = None if map_rules.normalize else bulk.aligned_parts(crawl.crawldb,
                                                                        partitions)
        p = make_pipeline(beam_args, cfg, records)
        _ = p | 'UpdateCrawlDb' >> bulk.MapReduce(
            units=new_units if old_parts else old_units + new_units,
            mapper=UpdateMapper(map_rules),
            reducer=UpdateReducer(rules, now, map_rules, old_parts),
            partitions=partitions, scratch=new.scratch, out_dir=new.dir)
        counters = run_pipeline(p, 'updatedb')
        crawl.crawldb.write_applied(new.dir, applied + names)
        crawl.crawldb.write_note(new.dir, databases.PARTITIONS_NOTE, str(partitions))
    statuses = {k.split('.', 2)[2]: v for k, v in counters.items()
                if k.startswith('updatedb.status.')}
    print(f'updatedb: applied {", ".join(names)}; {counters.get("updatedb.added", 0)} added, '
          f'{counters.get("updatedb.updated", 0)} updated; crawldb: ' +
          ', '.join(f'{v} {k}' for k, v in sorted(statuses.items())))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('updatedb', sys.argv[1:]))
