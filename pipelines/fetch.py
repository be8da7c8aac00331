"""Fetch a generated segment (Nutch's `fetch`).

beamcrawl fetch CRAWL_DIR [SEGMENT] [--threads N] [--conf FILE] [-D key=value] [--now T]
                [beam options]
SEGMENT: a segment name or path; default: the newest segment not fetched yet.
"""

import sys

import apache_beam as beam

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms import layout
from beamcrawl.transforms.dbio import ReadParts, WriteParts
from beamcrawl.transforms.errors import UserError
from beamcrawl.transforms.fetch import CONTENT, CRAWL_FETCH, FetchSegment
from beamcrawl.transforms.fetcher import FetcherSettings
from beamcrawl.transforms.http import HttpSettings
from beamcrawl.transforms.layout import CrawlLayout
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.parse import (ParseContent, parse_settings, publish_parse_outputs,
                              write_parse_outputs)
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
    segment = crawl.pick_segment(args.segment, CRAWL_FETCH, 'crawl_generate')
    settings = FetcherSettings.from_config(cfg, args.threads)
    parsing = cfg['fetcher.parse']
    parse = parse_settings(cfg) if parsing else None
    generate_files = crawl.part_files(segment, 'crawl_generate')
    tmp = {part: crawl.part_tmp_dir(segment, part) for part in (CRAWL_FETCH, CONTENT)}
    for path in tmp.values():
        layout.delete(path)                   # left by a killed run
    policy = UrlPolicy.from_config(cfg)
    p = make_pipeline(beam_args)
    out = (p
           | 'ReadFetchList' >> ReadParts(generate_files)
           | 'Complete' >> beam.Map(complete_datum)
           | 'Fetch' >> FetchSegment(settings=settings,
                                     http=HttpSettings.from_config(cfg, settings.threads),
                                     policy=policy, now=now,
                                     slots=len(generate_files)))
    _ = out[CRAWL_FETCH] | 'WriteCrawlFetch' >> WriteParts(tmp[CRAWL_FETCH], CRAWL_DATUM_SCHEMA)
    if settings.store_content:
        _ = out[CONTENT] | 'WriteContent' >> WriteParts(tmp[CONTENT], CONTENT_SCHEMA)
    if parsing:      # the parse stage's transform, on the content as it is fetched
        parsed = out[CONTENT] | 'ParseContent' >> ParseContent(settings=parse, policy=policy,
                                                               now=now)
        tmp.update(write_parse_outputs(crawl, segment, parsed))
    try:
        counters = run_pipeline(p, f'fetch {segment}')
        if settings.store_content:
            crawl.publish_part(segment, CONTENT)
        if parsing:
            publish_parse_outputs(crawl, segment)
        crawl.publish_part(segment, CRAWL_FETCH)     # last: marks the segment fetched
    finally:
        for path in tmp.values():
            layout.delete(path)
    statuses = {k.split('.', 2)[2]: v for k, v in counters.items()
                if k.startswith('fetch.status.')}
    print(f'fetched {crawl.segment(segment)}: ' +
          ', '.join(f'{v} {k}' for k, v in sorted(statuses.items())))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('fetch', sys.argv[1:]))
