"""Merge segments into one new segment, or slices of N URLs each (Nutch's `mergesegs`).

beamcrawl mergesegs CRAWL_DIR [SEGMENT ...] [--slice N] [--out OTHER_CRAWL_DIR] [--normalize]
                    [--filter] [--conf FILE] [-D key=value] [--now T] [beam options]
Default SEGMENTs: every segment of CRAWL_DIR. The parts every input has are merged, keeping per
URL and part the newest segment's record (docs/merging.md); the result is published as new
segments of CRAWL_DIR (or of --out), named as generate names them. The inputs are only read.
"""

import logging
import sys
import uuid

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError

log = logging.getLogger('beamcrawl')


def _count(text):
    if not text.isdigit() or int(text) < 1:
        raise UserError(f'--slice: expected a positive number of URLs, got {text!r}')
    return int(text)


def written_crawl_dir(args):
    """The crawl directory this command writes into when it is not CRAWL_DIR (cli.py)."""
    return args.out


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='segment names or paths (default: every segment)')
    parser.add_argument('--slice', metavar='N', help='make segments of N URLs each')
    parser.add_argument('--out', metavar='OTHER_CRAWL_DIR',
                        help='publish the merged segments in this crawl directory instead')
    parser.add_argument('--normalize', action='store_true', help='normalize every URL')
    parser.add_argument('--filter', action='store_true', help='filter every URL')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.merge import CutSlices, MergeSegments, slice_dir
    from beamcrawl.transforms.policy.generate import segment_names
    from beamcrawl.transforms.policy.merging import SEGMENT_RECORD_PARTS
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.partwriter import write_avro_file
    from beamcrawl.transforms.storage.records import SCHEMAS
    slice_size = _count(args.slice) if args.slice is not None else 0
    policy = settings.url_policy(cfg)              # config errors first
    crawl = CrawlLayout(args.crawl_dir)
    names = ([crawl.resolve_segment(s) for s in args.segments] if args.segments
             else crawl.segment_names())
    if not names:
        print(f'mergesegs: nothing to do ({crawl.segments} has no segment)', file=sys.stderr)
        return 1
    # Nutch's rule: only the parts that every input segment has.
    parts = [p for p in SEGMENT_RECORD_PARTS if all(crawl.has_part(n, p) for n in names)]
    if not parts:
        raise UserError(f'mergesegs: {", ".join(names)} have no part in common')
    target = CrawlLayout(args.out) if args.out else crawl
    if args.out:
        target.refuse_foreign()
    files = [(n, p, f) for n in names for p in parts for f in crawl.part_files(n, p)]
    scratch = fs.join(target.segments, f'{fs.TMP_PREFIX}mergesegs-{uuid.uuid4().hex[:12]}')
    made = []
    try:
        stage = MergeSegments(files=files, scratch=scratch, policy=policy,
                              normalize=args.normalize, filter_urls=args.filter)
        p = make_pipeline(beam_args, cfg, stage.weight)
        _ = p | 'MergeSegments' >> stage
        counters = run_pipeline(p, 'mergesegs')
        urls = counters.get(metrics.MERGE_WRITTEN, 0)
        if urls == 0:
            print('mergesegs: nothing to do (no URL left to merge)', file=sys.stderr)
            return 1
        if slice_size:
            cut = CutSlices(stage, slice_size, stage.partition_urls())
            p = make_pipeline(beam_args, cfg, stage.weight)
            _ = p | 'CutSlices' >> cut
            run_pipeline(p, 'mergesegs --slice')
        else:
            stage.single_slice()
        slices = fs.join(scratch, 'slices')
        count = len(fs.children(slices))                                # slices written
        for number, name in enumerate(segment_names(target.segment_names(), now, count)):
            fs.mkdirs(target.segment(name))
            with target.segment_update(name, parts, 'mergesegs') as update:
                target.write_merged_from(name, names)
                for part in parts:
                    written = slice_dir(scratch, number, part)
                    if fs.exists(written):
                        fs.rename(written, update.tmp[part])
                    else:           # no URL of this slice has a record of this part
                        write_avro_file(fs.part_file(update.tmp[part], 0), SCHEMAS[part], [])
            made.append(target.segment(name))
    finally:
        fs.delete(scratch)
    for path in made:
        print(path)
    log.info('mergesegs: %d URLs of %s (%s) into %d segment(s)', urls, ', '.join(names),
             ', '.join(parts), len(made))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('mergesegs', sys.argv[1:]))
