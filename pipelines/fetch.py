"""Fetch a generated segment (Nutch's `fetch`).

beamcrawl fetch CRAWL_DIR [SEGMENT] [--threads N] [--conf FILE] [-D key=value] [--now T]
                [beam options]
SEGMENT: a segment name or path; default: the newest segment not fetched yet.
"""

import sys

import apache_beam as beam

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms import settings
from beamcrawl.transforms.dbio import ReadParts, WriteParts
from beamcrawl.transforms.errors import UserError
from beamcrawl.transforms.fetch import FetchSegment
from beamcrawl.transforms.layout import (CONTENT, CRAWL_FETCH, CRAWL_GENERATE, FETCH_PARTS,
                                         PARSE_PARTS, CrawlLayout)
from beamcrawl.transforms.parse import ParseContent, write_parse_outputs
from beamcrawl.transforms.records import CONTENT_SCHEMA, CRAWL_DATUM_SCHEMA, complete_datum
from beamcrawl.transforms.runtime import make_pipeline, run_pipeline


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segment', metavar='SEGMENT', nargs='?',
                        help='segment name or path (default: newest not fetched)')
    parser.add_argument('--threads', type=int, metavar='N',
                        help='fetcher threads (fetcher.threads.fetch)')


def run(args, cfg, now, beam_args):
    if not cfg['http.agent.name'].strip():
        raise UserError('http.agent.name is empty: name your crawler with '
                        '-D http.agent.name=NAME or in --conf before fetching')
    if args.threads is not None and args.threads < 1:
        raise UserError(f'--threads {args.threads}: expected at least 1')
    crawl = CrawlLayout(args.crawl_dir)
    segment = crawl.pick_segment(args.segment, CRAWL_FETCH, CRAWL_GENERATE)
    fetcher = settings.fetcher_settings(cfg, args.threads)
    policy = settings.url_policy(cfg)
    parsing = cfg['fetcher.parse']
    parse = settings.parse_settings(cfg) if parsing else None
    generate_files = crawl.part_files(segment, CRAWL_GENERATE)
    parts = FETCH_PARTS if fetcher.store_content else (CRAWL_FETCH,)
    if parsing:      # parse parts before crawl_fetch, the marker of "fetched"
        parts = parts[:-1] + PARSE_PARTS + parts[-1:]
    with crawl.segment_update(segment, parts, 'fetch') as update:
        p = make_pipeline(beam_args, cfg)
        out = (p
               | 'ReadFetchList' >> ReadParts(generate_files)
               | 'Complete' >> beam.Map(complete_datum)
               | 'Fetch' >> FetchSegment(settings=fetcher,
                                         http=settings.http_settings(cfg, fetcher.threads),
                                         policy=policy, now=now, slots=len(generate_files)))
        _ = out[CRAWL_FETCH] | 'WriteCrawlFetch' >> WriteParts(update.tmp[CRAWL_FETCH],
                                                               CRAWL_DATUM_SCHEMA)
        if fetcher.store_content:
            _ = out[CONTENT] | 'WriteContent' >> WriteParts(update.tmp[CONTENT], CONTENT_SCHEMA)
        if parsing:      # the parse stage's transform, on the content as it is fetched
            parsed = out[CONTENT] | 'ParseContent' >> ParseContent(settings=parse, policy=policy,
                                                                   now=now)
            write_parse_outputs(parsed, update)
        counters = run_pipeline(p, f'fetch {segment}')
    statuses = {k.split('.', 2)[2]: v for k, v in counters.items()
                if k.startswith('fetch.status.')}
    print(f'fetched {crawl.segment(segment)}: ' +
          ', '.join(f'{v} {k}' for k, v in sorted(statuses.items())))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('fetch', sys.argv[1:]))
