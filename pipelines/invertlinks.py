"""Invert the links of parsed segments into the linkdb (Nutch's `invertlinks`; alias `linkdb`).

beamcrawl invertlinks CRAWL_DIR [SEGMENT ...] [--normalize] [--filter] [--conf FILE]
                      [-D key=value] [beam options]
Default SEGMENTs: every parsed segment not inverted yet (the linkdb remembers which were).
"""

import logging
import sys

from beamcrawl.pipelines.cli import run_command

log = logging.getLogger('beamcrawl')

# A parsed page (its outlinks inverted) costs about as much as this many crawldb records: for
# sizing the work only (runner.local.parallel.records).
_PAGE_WEIGHT = 4


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='segment names or paths (default: parsed, not inverted yet)')
    parser.add_argument('--normalize', action='store_true', help='normalize sources and targets')
    parser.add_argument('--filter', action='store_true', help='filter sources and targets')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.engine import bulk
    from beamcrawl.transforms.storage import segments
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.databases import PARTITIONS_NOTE
    from beamcrawl.transforms.invertlinks import InlinksReducer, InvertMapper, OLD_INPUT, PARSE_INPUT
    from beamcrawl.transforms.storage.records import INLINKS_SCHEMA, PARSE_DATA_SCHEMA
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    rules = settings.link_rules(cfg)
    crawl = CrawlLayout(args.crawl_dir)
    names, _ = crawl.segments_to_apply(crawl.linkdb, args.segments, segments.CRAWL_PARSE)
    if not names:
        print('invertlinks: nothing to do (every parsed segment is inverted already)',
              file=sys.stderr)
        return 1
    normalize = cfg['linkdb.url.normalizers'] or args.normalize
    filter_urls = cfg['linkdb.url.filters'] or args.filter
    with crawl.linkdb.update(keep_backup=cfg['db.preserve.backup'], command='invertlinks') as new:
        inverted = crawl.linkdb.applied_segments()
        partitions = cfg['linkdb.partitions']
        files = [f for n in names for f in crawl.part_files(n, segments.PARSE_DATA)]
        new_units = bulk.avro_units([(PARSE_INPUT, f) for f in files], schema=PARSE_DATA_SCHEMA,
                                    per_unit=bulk.RECORDS_PER_UNIT // _PAGE_WEIGHT)
        # A linkdb partitioned the same way is merged part by part; another is mapped whole.
        old_parts = bulk.aligned_parts(crawl.linkdb, partitions)
        old_units = [] if old_parts else bulk.avro_units(
            [(OLD_INPUT, f) for f in crawl.linkdb.part_files()], schema=INLINKS_SCHEMA,
            per_unit=bulk.RECORDS_PER_UNIT, first_index=len(new_units))
        p = make_pipeline(beam_args, cfg, _PAGE_WEIGHT * sum(u.records for u in new_units)
                          + sum(u.records for u in old_units))
        _ = p | 'UpdateLinkDb' >> bulk.MapReduce(
            units=new_units + old_units,
            mapper=InvertMapper(rules, settings.url_policy(cfg), normalize, filter_urls),
            reducer=InlinksReducer(rules.max_inlinks, old_parts), partitions=partitions,
            scratch=new.scratch, out_dir=new.dir)
        counters = run_pipeline(p, 'invertlinks')
        crawl.linkdb.write_applied(new.dir, inverted + names)
        crawl.linkdb.write_note(new.dir, PARTITIONS_NOTE, str(partitions))
    print(f'invertlinks: inverted {", ".join(names)}; '
          f'{counters.get("linkdb.inverted_links", 0)} links')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('invertlinks', sys.argv[1:]))
